"""The MediaPipe model registry, for `python scripts/models.py` and whatever loads this file by path.

The registry lives in web/mediapipe_models.py: import it from there (`from web import mediapipe_models`).
This module only re-exports it, so a script run from scripts/ reaches the same objects.

    python scripts/models.py            # list the models and their paths
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)  # run as a script: this checkout's web/, not another install's

from web.mediapipe_models import MODELS, ModelInfo, main, mediapipe_dir, model_path  # noqa: E402

__all__ = ["MODELS", "ModelInfo", "mediapipe_dir", "model_path"]

if __name__ == "__main__":
    main()
