"""The gallery's pipelines in NumPy with native LiteRT, as references for the browser tests.

Each pipeline follows MediaPipe's CPU graphs (options read from the `*_cpu.binarypb` files of
mediapipe 0.10.14) and is checked against MediaPipe's own solutions in test_gallery_reference.py:
  - SSD anchors (SsdAnchorsCalculator, fixed anchor size), box/keypoint decoding with sigmoid scores clipped
    at +-100 (TensorsToDetectionsCalculator), weighted non-max suppression at IoU 0.3;
  - face ROI: the detection box, rotated so the eyes (keypoints 0 -> 1) are level, square on its long side,
    x1.5 (FaceDetectionFrontDetectionToRoi);
  - pose ROI: centred on the hips (keypoint 0), side 2 x |hips -> keypoint 1|, rotated so that vector points
    up, x1.25 (PoseDetectionToRoi);
  - crops of a rotated ROI by an affine warp with bilinear sampling and a zero border.
Geometry is in pixels throughout (MediaPipe rotates normalized coordinates, which only differs on non-square
images).  web/gallery/lib/vision.js is the same code in JavaScript.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from web import mediapipe_models

ROOT = Path(__file__).resolve().parents[2]
# Her face on skimage.data.astronaut() (512x512), x0, y0, x1, y1 in pixels: face_detection_short_range under
# LiteRT on the letterboxed photo (detect_faces below), rounded; MediaPipe's own FaceDetection solution finds
# (177.6, 82.9, 272.9, 178.2).  test_gallery_reference.py keeps this honest.
ASTRONAUT_FACE = (178.0, 81.0, 272.0, 175.0)


def model_file(name: str) -> Path:
    if name in mediapipe_models.MODELS:
        return mediapipe_models.model_path(name)
    return next((mediapipe_models.mediapipe_dir() / "modules").glob(f"*/{name}.tflite"))


@cache
def _interpreter(name: str) -> Any:
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(model_file(name)), num_threads=1)
    it.allocate_tensors()
    return it


def litert(name: str, x: np.ndarray) -> dict[str, np.ndarray]:
    """Outputs of model `name` on NHWC float32 input `x`, by output tensor name."""
    it = _interpreter(name)
    it.set_tensor(it.get_input_details()[0]["index"], np.ascontiguousarray(x, dtype=np.float32))
    it.invoke()
    return {d["name"]: it.get_tensor(d["index"]).copy() for d in it.get_output_details()}


# ------------------------------------------------------------------------------------------------ detection


@dataclass(frozen=True)
class SsdOptions:
    size: int
    strides: tuple[int, ...]
    num_keypoints: int


FACE_SSD = SsdOptions(128, (8, 16, 16, 16), 6)
POSE_SSD = SsdOptions(224, (8, 16, 32, 32, 32), 4)


def anchors(opt: SsdOptions) -> np.ndarray:
    """[N, 2] anchor centres (x, y) in [0, 1]; fixed size 1x1; 2 anchors per layer and cell."""
    out = []
    i = 0
    while i < len(opt.strides):
        j = i
        while j < len(opt.strides) and opt.strides[j] == opt.strides[i]:
            j += 1
        per_cell = 2 * (j - i)  # aspect ratio 1 plus the interpolated scale, per layer of this stride
        grid = math.ceil(opt.size / opt.strides[i])
        ys, xs = np.meshgrid((np.arange(grid) + 0.5) / grid, (np.arange(grid) + 0.5) / grid, indexing="ij")
        out.append(np.repeat(np.stack([xs.ravel(), ys.ravel()], 1), per_cell, axis=0))
        i = j
    return np.concatenate(out)


@dataclass
class Detection:
    score: float
    box: np.ndarray  # xmin, ymin, xmax, ymax (normalized to the model input)
    keypoints: np.ndarray  # [K, 2] x, y (normalized to the model input)


def decode(regressors: np.ndarray, logits: np.ndarray, opt: SsdOptions, threshold: float = 0.5) -> list[Detection]:
    """TensorsToDetections + weighted NMS: detections sorted by score, in model-input coordinates."""
    reg = regressors.reshape(-1, 4 + 2 * opt.num_keypoints).astype(np.float64)
    scores = 1 / (1 + np.exp(-np.clip(logits.reshape(-1).astype(np.float64), -100, 100)))
    a = anchors(opt)
    centre = reg[:, :2] / opt.size + a
    half = reg[:, 2:4] / opt.size / 2
    boxes = np.concatenate([centre - half, centre + half], 1)
    kps = reg[:, 4:].reshape(-1, opt.num_keypoints, 2) / opt.size + a[:, None, :]
    keep = np.nonzero(scores >= threshold)[0]
    return weighted_nms([Detection(float(scores[i]), boxes[i], kps[i]) for i in keep])


def iou(a: np.ndarray, b: np.ndarray) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return float(inter / union) if union > 0 else 0.0


def weighted_nms(dets: list[Detection], threshold: float = 0.3) -> list[Detection]:
    """MediaPipe's WEIGHTED non-max suppression: overlapping boxes averaged by score."""
    remaining = sorted(dets, key=lambda d: -d.score)
    out = []
    while remaining:
        top = remaining[0]
        group = [d for d in remaining if iou(top.box, d.box) > threshold]
        remaining = [d for d in remaining if iou(top.box, d.box) <= threshold]
        w = np.array([d.score for d in group])[:, None]
        box = (np.stack([d.box for d in group]) * w).sum(0) / w.sum()
        kps = (np.stack([d.keypoints for d in group]) * w[:, :, None]).sum(0) / w.sum()
        out.append(Detection(top.score, box, kps))
    return out


# ------------------------------------------------------------------------------------------------ images


def letterbox(image: np.ndarray, size: int) -> tuple[np.ndarray, float, float, float]:
    """Scale to fit size x size keeping the aspect ratio, zero border: (rgb float [0, 1], scale, dx, dy)."""
    import cv2

    h, w = image.shape[:2]
    s = size / max(w, h)
    nw, nh = round(w * s), round(h * s)
    dx, dy = (size - nw) // 2, (size - nh) // 2
    out = np.zeros((size, size, 3), np.float32)
    out[dy:dy + nh, dx:dx + nw] = cv2.resize(image, (nw, nh), interpolation=cv2.INTER_AREA) / np.float32(255)
    return out, s, float(dx), float(dy)


@dataclass
class Roi:
    cx: float
    cy: float
    width: float
    height: float
    angle: float  # radians; a ROI point (u, v) in [-0.5, 0.5]^2 maps to c + R(angle) (u w, v h)

    def to_image(self, uv: np.ndarray) -> np.ndarray:
        """[N, 2] ROI-normalized points (0..1) to image pixels."""
        rel = (uv - 0.5) * [self.width, self.height]
        c, s = math.cos(self.angle), math.sin(self.angle)
        return np.stack([c * rel[:, 0] - s * rel[:, 1] + self.cx, s * rel[:, 0] + c * rel[:, 1] + self.cy], 1)


def crop(image: np.ndarray, roi: Roi, size: int) -> np.ndarray:
    """The ROI warped to size x size (rgb float [0, 1], bilinear, zero border)."""
    import cv2

    c, s = math.cos(roi.angle), math.sin(roi.angle)
    # output pixel centre (u + 0.5) / size is ROI point u/size - 0.5; invert c + R (rel * wh)
    a = np.array([[c * roi.width / size, -s * roi.height / size], [s * roi.width / size, c * roi.height / size]])
    # cv2 puts pixel i's centre at i, the ROI geometry at i + 0.5: hence the -0.5
    t = np.array([roi.cx, roi.cy]) - 0.5 - a @ np.array([size / 2 - 0.5, size / 2 - 0.5])
    m = np.concatenate([a, t[:, None]], 1)
    return cv2.warpAffine(image.astype(np.float32) / 255, m, (size, size), flags=cv2.INTER_LINEAR |
                          cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REPLICATE)


def _norm_angle(a: float) -> float:
    return a - 2 * math.pi * math.floor((a + math.pi) / (2 * math.pi))


def face_roi(det_px: tuple[np.ndarray, np.ndarray]) -> Roi:
    """FaceDetectionFrontDetectionToRoi: box and keypoints in image pixels -> the face_landmark ROI."""
    box, kps = det_px
    w, h = box[2] - box[0], box[3] - box[1]
    angle = _norm_angle(0 - math.atan2(-(kps[1, 1] - kps[0, 1]), kps[1, 0] - kps[0, 0]))
    side = max(w, h) * 1.5
    return Roi(box[0] + w / 2, box[1] + h / 2, side, side, angle)


def pose_roi(kps: np.ndarray) -> Roi:
    """PoseDetectionToRoi: keypoints in image pixels (0 hips centre, 1 full-body scale point) -> the ROI."""
    (x0, y0), (x1, y1) = kps[0], kps[1]
    side = 2 * math.hypot(x1 - x0, y1 - y0) * 1.25
    angle = _norm_angle(math.pi / 2 - math.atan2(-(y1 - y0), x1 - x0))
    return Roi(x0, y0, side, side, angle)


def to_pixels(det: Detection, scale: float, dx: float, dy: float, size: int) -> tuple[np.ndarray, np.ndarray]:
    """A detection from letterboxed model-input coordinates to image pixels."""
    box = (det.box * size - [dx, dy, dx, dy]) / scale
    kps = (det.keypoints * size - [dx, dy]) / scale
    return box, kps


# ------------------------------------------------------------------------------------------------ pipelines


def detect_faces(image: np.ndarray) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """[(score, box xyxy px, keypoints [6, 2] px)] on an RGB uint8 image."""
    x, s, dx, dy = letterbox(image, 128)
    out = litert("face_detection_short_range", (x * 2 - 1)[None])
    return [(d.score, *to_pixels(d, s, dx, dy, 128))
            for d in decode(out["regressors"], out["classificators"], FACE_SSD)]


def face_mesh(image: np.ndarray) -> tuple[float, np.ndarray, Roi]:
    """(presence, [468, 3] landmarks (x, y px; z in ROI pixels / 192 * width), roi) of the best face."""
    _, box, kps = detect_faces(image)[0]
    roi = face_roi((box, kps))
    out = litert("face_landmark", crop(image, roi, 192)[None])
    lm = out["conv2d_21"].reshape(468, 3)
    xy = roi.to_image(lm[:, :2] / 192)
    presence = 1 / (1 + math.exp(-float(out["conv2d_31"].ravel()[0])))
    return presence, np.concatenate([xy, lm[:, 2:] / 192 * roi.width], 1), roi


def pose(image: np.ndarray) -> tuple[float, np.ndarray, Roi]:
    """(presence, [33, 4] landmarks (x, y px, z, visibility), roi) of the best person."""
    x, s, dx, dy = letterbox(image, 224)
    out = litert("pose_detection", (x * 2 - 1)[None])
    det = decode(out["Identity"], out["Identity_1"], POSE_SSD)[0]
    roi = pose_roi(to_pixels(det, s, dx, dy, 224)[1])
    lm_out = litert("pose_landmark_full", crop(image, roi, 256)[None])
    lm = lm_out["Identity"].reshape(39, 5)[:33]
    xy = roi.to_image(lm[:, :2] / 256)
    vis = 1 / (1 + np.exp(-lm[:, 3]))
    return float(lm_out["Identity_1"].ravel()[0]), np.concatenate([xy, lm[:, 2:3], vis[:, None]], 1), roi


def iou_mask(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union of two boolean masks."""
    return float((a & b).sum() / (a | b).sum())


def selfie_mask(image: np.ndarray) -> np.ndarray:
    """[256, 256] person probability on the whole image stretched to 256x256 (anti-aliased resize)."""
    from skimage.transform import resize

    x = resize(image, (256, 256), anti_aliasing=True).astype(np.float32)
    return litert("selfie_segmentation", x[None])["activation_10"][0, :, :, 0]
