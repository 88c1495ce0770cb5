"""The gallery tests' CPython references (gallery_reference.py: NumPy + LiteRT) against MediaPipe's own
solutions on the same photos, and the known face box on the astronaut.  No browser: these pin down what the
browser tests compare the page with."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("ai_edge_litert.interpreter")
pytest.importorskip("cv2")
skimage_data = pytest.importorskip("skimage.data")

import gallery_reference as ref  # noqa: E402

ASTRONAUT_FACE = ref.ASTRONAUT_FACE


def _mediapipe(name: str) -> Any:
    try:
        import mediapipe.python.solutions as solutions
    except ImportError:
        pytest.skip("mediapipe is not installed")
    return getattr(solutions, name)


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return np.asarray(skimage_data.astronaut())


def test_face_detection_finds_the_known_box_like_mediapipe(astronaut: np.ndarray) -> None:
    faces = ref.detect_faces(astronaut)
    assert len(faces) == 1
    score, box, kps = faces[0]
    assert score > 0.9
    np.testing.assert_allclose(box, ASTRONAUT_FACE, atol=1.0)
    with _mediapipe("face_detection").FaceDetection(model_selection=0) as fd:
        (det,) = fd.process(astronaut).detections
    bb = det.location_data.relative_bounding_box
    theirs = np.array([bb.xmin, bb.ymin, bb.xmin + bb.width, bb.ymin + bb.height]) * 512
    np.testing.assert_allclose(box, theirs, atol=4.0)  # different resampling of the 128x128 input
    their_kps = np.array([[k.x, k.y] for k in det.location_data.relative_keypoints]) * 512
    assert np.abs(kps - their_kps).max() < 8.0


def test_face_mesh_matches_mediapipe(astronaut: np.ndarray) -> None:
    presence, landmarks, roi = ref.face_mesh(astronaut)
    assert presence > 0.99
    with _mediapipe("face_mesh").FaceMesh(static_image_mode=True, refine_landmarks=False) as fm:
        (face,) = fm.process(astronaut).multi_face_landmarks
    theirs = np.array([[p.x, p.y] for p in face.landmark]) * 512
    dist = np.linalg.norm(landmarks[:, :2] - theirs, axis=1)
    assert dist.mean() < 1.0 and dist.max() < 3.0, (dist.mean(), dist.max())


def test_pose_matches_mediapipe(astronaut: np.ndarray) -> None:
    """Looser: MediaPipe also refines the points from heatmaps, and her hips are outside the photo, so the ROI
    (1300 px for a 512 px photo) magnifies every difference of the detector's input about 5x."""
    presence, landmarks, roi = ref.pose(astronaut)
    assert presence > 0.9
    with _mediapipe("pose").Pose(static_image_mode=True, model_complexity=1) as pose:
        theirs = np.array([[p.x, p.y] for p in pose.process(astronaut).pose_landmarks.landmark]) * 512
    upper = list(range(13))  # face and shoulders: the points visible on this photo
    dist = np.linalg.norm(landmarks[upper, :2] - theirs[upper], axis=1)
    assert dist.mean() < 20.0, dist


def test_selfie_mask_covers_her(astronaut: np.ndarray) -> None:
    mask = ref.selfie_mask(astronaut) > 0.5
    assert 0.45 < mask.mean() < 0.65
    x0, y0, x1, y1 = (int(v / 2) for v in ASTRONAUT_FACE)  # the mask is 256x256
    assert mask[y0:y1, x0:x1].mean() > 0.95
    assert not mask[:40, :40].any()  # the flag in the corner is background
