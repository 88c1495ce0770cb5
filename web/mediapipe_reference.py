"""The MediaPipe models' reference runs: the photo each model is fed, LiteRT's outputs on it, and how close ours
must come.  Shared by tests/core/test_tflite_models.py (the CPython core), tests/browser/test_models_litert.py
(the polyfill and native WebNN in a page) and tests/browser/test_clients.py (LiteRT.js).

The input is `skimage.data.astronaut()` (512x512 RGB), preprocessed as each model's MediaPipe graph does
(web/mediapipe_models.py): cropped where MediaPipe crops, resized to the model's input (the photo is square, so
letterboxing adds no border), scaled to its value range.  The reference is `ai_edge_litert` with one thread.
NumPy, scikit-image and LiteRT are imported when first used, so importing this module needs neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from web.mediapipe_models import MODELS, model_path

if TYPE_CHECKING:
    import numpy as np

# Max absolute error per output against LiteRT: ~10x the error measured here (float32 accumulation order, about
# 1e-6 of each output's magnitude); the measured values are in tests/core/test_tflite_models.py.
TOLERANCE: dict[str, dict[str, float]] = {
    "selfie_segmentation": {"activation_10": 5e-4},
    "face_detection_short_range": {"regressors": 1e-3, "classificators": 1e-3},
    "face_landmark": {"conv2d_21": 1e-3, "conv2d_31": 1e-4},
    "hand_landmark_lite": {"Identity": 1e-3, "Identity_1": 1e-5, "Identity_2": 1e-5, "Identity_3": 1e-5},
    "pose_detection": {"Identity": 5e-3, "Identity_1": 5e-3},
}

# (rows, columns) of the 512x512 photo each model sees; absent: the whole photo
CROPS: dict[str, tuple[slice, slice]] = {
    # face detection's box on this photo: centre (226, 129), side 94 px; x1.5 as MediaPipe's face ROI
    "face_landmark": (slice(58, 200), slice(155, 297)),
    # the lower-left crop with her glove
    "hand_landmark_lite": (slice(400, 512), slice(100, 212)),
}


def model_input(name: str) -> np.ndarray:
    """The astronaut photo as model `name` expects it: NHWC float32 in its value range."""
    import numpy as np
    from skimage import data, transform

    info = MODELS[name]
    image = data.astronaut()  # type: ignore[no-untyped-call]
    crop = CROPS.get(name)
    if crop is not None:
        image = image[crop]
    lo, hi = info.value_range
    # anti-aliased resize to [0, 1] (float64), then one affine map and one rounding to float32
    resized = transform.resize(image, info.size, anti_aliasing=True)  # type: ignore[no-untyped-call]
    out: np.ndarray = (resized * (hi - lo) + lo).astype(np.float32)[None]
    return out


def litert_outputs(name: str, x: np.ndarray) -> dict[str, np.ndarray]:
    """LiteRT's outputs of model `name` on input x, by output name (one thread, default op resolver)."""
    from ai_edge_litert.interpreter import Interpreter  # type: ignore[import-untyped]

    it: Any = Interpreter(model_path=str(model_path(name)), num_threads=1)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return {d["name"]: it.get_tensor(d["index"]).copy() for d in it.get_output_details()}
