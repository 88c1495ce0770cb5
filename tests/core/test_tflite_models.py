"""Five real MediaPipe models through the TFLite loader vs native LiteRT, on a real photo.

Inputs: `skimage.data.astronaut()` (512x512 RGB), preprocessed as each model's MediaPipe graph does
(web/mediapipe_reference.py, beside the tolerances below): resized to the model's input (the photo is square,
so letterboxing adds no border), scaled to its value range.  face_landmark gets the face rectangle face
detection finds (expanded 1.5x, as MediaPipe's FaceDetectionFrontDetectionToRoi does); hand_landmark_lite the
lower-left crop with her glove.

Reference: `ai_edge_litert` 2.3.0, 1 thread, default op resolver (XNNPACK delegate).  It runs all five models,
including selfie_segmentation's custom `Convolution2DTransposeBias`: the XNNPACK delegate implements that
MediaPipe op itself (test_tflite_loader.py checks LiteRT's implementation against MediaPipe's definition).
MediaPipe's own runtime (its Python SelfieSegmentation solution) is a second, independent reference for the
mask.

Tolerances (max absolute error per output, ~10x the error measured on this machine; the errors come from
float32 accumulation order, about 1e-6 of each output's magnitude):

| model | output | magnitude | measured | tolerance |
| --- | --- | --- | --- | --- |
| selfie_segmentation | activation_10 (mask probability) | 1 | 5.7e-5 | 5e-4, and mask IoU > 0.99 |
| face_detection_short_range | regressors | 155 | 9.2e-5 | 1e-3 |
| face_detection_short_range | classificators | 103 | 7.6e-5 | 1e-3 |
| face_landmark | conv2d_21 (landmarks) | 158 | 9.2e-5 | 1e-3 |
| face_landmark | conv2d_31 (presence logit) | 26 | 9.5e-6 | 1e-4 |
| hand_landmark_lite | Identity (landmarks) | 155 | 9.2e-5 | 1e-3 |
| hand_landmark_lite | Identity_1, Identity_2 (scores) | 0.9 | 1.2e-7 | 1e-5 |
| hand_landmark_lite | Identity_3 (world landmarks) | 0.04 | 2.3e-7 | 1e-5 |
| pose_detection | Identity (boxes) | 741 | 8.9e-4 | 5e-3 |
| pose_detection | Identity_1 (score logits) | 418 | 3.7e-4 | 5e-3 |
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("tflite")
pytest.importorskip("ai_edge_litert.interpreter")
skimage_data = pytest.importorskip("skimage.data")
skimage_transform = pytest.importorskip("skimage.transform")

from py_core.loaders import run_model  # noqa: E402
from web import mediapipe_models as models  # noqa: E402
from web.mediapipe_reference import TOLERANCE, litert_outputs, model_input  # noqa: E402


@pytest.fixture(scope="module")
def results() -> dict[str, tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]:
    """Per model: (ours, LiteRT's) outputs by name, computed once for the module."""
    out = {}
    for name in models.MODELS:
        x = model_input(name)
        ref = litert_outputs(name, x)
        ours = run_model(models.model_path(name), x)  # run_model caches the built graph per file
        out[name] = (dict(zip(ref, ours, strict=True)), ref)
    return out


@pytest.mark.parametrize("name", list(models.MODELS))
def test_outputs_match_litert(name: str, results: Any) -> None:
    ours, ref = results[name]
    assert set(ours) == set(TOLERANCE[name])
    for output, r in ref.items():
        o = ours[output]
        assert o.shape == r.shape and o.dtype == r.dtype == np.float32
        err = float(np.abs(o.astype(np.float64) - r).max())
        print(f"{name} {output}: max abs error {err:.3g} (|ref| max {np.abs(r).max():.3g})")
        assert err <= TOLERANCE[name][output], f"{name} {output}: max abs error {err:.3g}"


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(x.astype(np.float64), -50, 50)))


def iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / (a | b).sum())


def test_selfie_mask(results: Any) -> None:
    ours, ref = results["selfie_segmentation"]
    mask, ref_mask = ours["activation_10"][0, :, :, 0] > 0.5, ref["activation_10"][0, :, :, 0] > 0.5
    assert iou(mask, ref_mask) > 0.99
    assert 0.3 < mask.mean() < 0.8 and mask[64, 128]  # the person covers the middle; her face is in
    assert not mask[10, 10]  # the flag in the corner is background


def test_selfie_mask_matches_mediapipe_runtime(results: Any) -> None:
    """MediaPipe's own graph (its ImageToTensor, XNNPACK inference, mask upscaling) on the 512x512 photo."""
    ss = pytest.importorskip("mediapipe.python.solutions.selfie_segmentation")
    with ss.SelfieSegmentation(model_selection=0) as seg:
        theirs = seg.process(skimage_data.astronaut()).segmentation_mask > 0.5
    ours = results["selfie_segmentation"][0]["activation_10"][0, :, :, 0]
    upscaled = skimage_transform.resize(ours, theirs.shape, order=1) > 0.5
    assert iou(upscaled, theirs) > 0.97


def face_anchors() -> np.ndarray:
    """SSD anchor centres of face_detection_short_range: 16x16 cells x 2 and 8x8 cells x 6 (fixed size)."""
    centres = []
    for grid, per_cell in ((16, 2), (8, 6)):
        ys, xs = np.meshgrid((np.arange(grid) + 0.5) / grid, (np.arange(grid) + 0.5) / grid, indexing="ij")
        centres.append(np.repeat(np.stack([xs.ravel(), ys.ravel()], axis=1), per_cell, axis=0))
    return np.concatenate(centres)


def test_face_detection_finds_the_face(results: Any) -> None:
    ours, _ = results["face_detection_short_range"]
    scores = _sigmoid(ours["classificators"][0, :, 0])
    best = int(np.argmax(scores))
    reg = ours["regressors"][0, best]
    cx, cy = (face_anchors()[best] + reg[:2] / 128) * 512
    assert scores[best] > 0.8
    assert 200 < cx < 250 and 100 < cy < 160 and 70 < reg[2] / 128 * 512 < 120  # her face, in pixels


def test_landmark_models_see_what_they_should(results: Any) -> None:
    face, _ = results["face_landmark"]
    assert _sigmoid(face["conv2d_31"]).item() > 0.9  # a face is present in the face crop
    points = face["conv2d_21"].reshape(468, 3)
    assert (points[:, :2] > 0).all() and (points[:, :2] < 192).all()
    hand, _ = results["hand_landmark_lite"]
    assert hand["Identity_1"].item() < 0.5  # a glove at the border is not a hand with visible landmarks


def test_pose_detection_finds_the_person(results: Any) -> None:
    ours, _ = results["pose_detection"]
    assert _sigmoid(ours["Identity_1"][0, :, 0]).max() > 0.5
