"""Where the real TFLite models live, and how each expects its input (stdlib only; never imports mediapipe).

The `mediapipe==0.10.14` wheel ships the models under `mediapipe/modules/`.  `model_path(name)` finds that
directory through `importlib.util.find_spec` (which locates a top-level package without running it), or by
scanning `sys.path`.  `MODELS` records each model's input as MediaPipe's own graphs feed it: the
`ImageToTensorCalculator` options read from the expanded CPU graphs (`CalculatorGraph(binary_graph_path=...)
.text_config` for `*_cpu.binarypb`), checked against each model's input tensor:

| model | input | range | how MediaPipe crops |
| --- | --- | --- | --- |
| selfie_segmentation | 256x256 | [0, 1] | whole frame, stretched (keep_aspect_ratio false) |
| face_detection_short_range | 128x128 | [-1, 1] | whole frame, letterboxed (zero border) |
| face_landmark | 192x192 | [0, 1] | the face rectangle from face detection |
| hand_landmark_lite | 224x224 | [0, 1] | the hand rectangle from palm detection, letterboxed |
| pose_detection | 224x224 | [-1, 1] | whole frame, letterboxed (zero border) |

A pixel p in 0..255 becomes `lo + p / 255 * (hi - lo)`; the tensors are NHWC float32 RGB.

The one home of this registry: the dev server, the benches, the scripts and the tests import it as
`web.mediapipe_models`.

    python -m web.mediapipe_models      # list the models and their paths
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelInfo:
    """One model: file under mediapipe/, input size (height, width), value range, crop, outputs."""

    name: str
    relpath: str
    size: tuple[int, int]
    value_range: tuple[float, float]
    keep_aspect_ratio: bool
    crop: str
    outputs: tuple[str, ...]

    def scale_offset(self) -> tuple[float, float]:
        """(scale, offset) such that value = pixel * scale + offset for 8-bit pixels."""
        lo, hi = self.value_range
        return (hi - lo) / 255.0, lo


MODELS: dict[str, ModelInfo] = {m.name: m for m in (
    ModelInfo("selfie_segmentation", "modules/selfie_segmentation/selfie_segmentation.tflite",
              (256, 256), (0.0, 1.0), False, "whole frame",
              ("activation_10: [1, 256, 256, 1] person probability (sigmoid)",)),
    ModelInfo("face_detection_short_range", "modules/face_detection/face_detection_short_range.tflite",
              (128, 128), (-1.0, 1.0), True, "whole frame",
              ("regressors: [1, 896, 16] box + 6 keypoints per anchor",
               "classificators: [1, 896, 1] score logits")),
    ModelInfo("face_landmark", "modules/face_landmark/face_landmark.tflite",
              (192, 192), (0.0, 1.0), False, "face rectangle",
              ("conv2d_21: [1, 1, 1, 1404] 468 landmarks (x, y, z) in input pixels",
               "conv2d_31: [1, 1, 1, 1] face presence logit")),
    ModelInfo("hand_landmark_lite", "modules/hand_landmark/hand_landmark_lite.tflite",
              (224, 224), (0.0, 1.0), True, "hand rectangle",
              ("Identity: [1, 63] 21 landmarks (x, y, z) in input pixels",
               "Identity_1: [1, 1] hand presence", "Identity_2: [1, 1] handedness",
               "Identity_3: [1, 63] world landmarks (metres)")),
    ModelInfo("pose_detection", "modules/pose_detection/pose_detection.tflite",
              (224, 224), (-1.0, 1.0), True, "whole frame",
              ("Identity: [1, 2254, 12] box + 4 keypoints per anchor",
               "Identity_1: [1, 2254, 1] score logits")),
)}


def mediapipe_dir() -> Path:
    """The installed mediapipe package directory, found without importing mediapipe."""
    spec = importlib.util.find_spec("mediapipe")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        if Path(loc, "modules").is_dir():
            return Path(loc)
    for entry in sys.path:
        candidate = Path(entry or os.getcwd(), "mediapipe")
        if (candidate / "modules").is_dir():
            return candidate
    raise FileNotFoundError("the mediapipe package (pip install mediapipe==0.10.14) is not installed: its "
                            "wheel carries the .tflite models under mediapipe/modules/")


def model_path(name: str) -> Path:
    """The .tflite file of a registered model (see MODELS)."""
    if name not in MODELS:
        raise KeyError(f"unknown model '{name}'; known: {', '.join(MODELS)}")
    path = mediapipe_dir() / MODELS[name].relpath
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing (mediapipe 0.10.14 ships it; newer wheels do not)")
    return path


def main() -> None:
    """Print each registered model with its input size, value range and path."""
    for m in MODELS.values():
        lo, hi = m.value_range
        print(f"{m.name:28} {m.size[0]}x{m.size[1]} [{lo:g}, {hi:g}]  {model_path(m.name)}")


if __name__ == "__main__":
    main()
