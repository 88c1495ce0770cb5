"""python -m web.bench: see web/bench/cli.py."""

import sys

from web.bench.cli import main

sys.exit(main())
