#!/usr/bin/env python3
"""Write the gallery's sample photos (and with --y4m the fake-camera video): web/samples.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's web/, whatever the current directory

from web.samples import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
