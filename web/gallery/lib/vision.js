// Image in, tensors out, detections back: the MediaPipe pre- and post-processing the gallery's models need.
// Mirrors tests/browser/gallery_reference.py (NumPy + LiteRT), which the browser tests compare against.
// Geometry is in image pixels, with pixel i covering [i, i + 1).

// ------------------------------------------------------------------------------------------------ tensors

let scratch = null;

function scratchContext(w, h) {
  scratch ??= document.createElement('canvas');
  if (scratch.width !== w || scratch.height !== h) {
    scratch.width = w;
    scratch.height = h;
  }
  return scratch.getContext('2d', {willReadFrequently: true});
}

/** Width and height of an image, video or canvas source. */
export function sourceSize(src) {
  return {width: src.videoWidth || src.naturalWidth || src.width, height: src.videoHeight || src.naturalHeight || src.height};
}

/** RGBA pixels of a source at its own size: {data: Uint8ClampedArray, width, height}. */
export function pixels(src) {
  const {width, height} = sourceSize(src);
  const ctx = scratchContext(width, height);
  ctx.clearRect(0, 0, width, height);
  ctx.drawImage(src, 0, 0, width, height);
  return ctx.getImageData(0, 0, width, height);
}

/** RGBA -> NHWC float32 RGB, value = lo + p / 255 * (hi - lo). */
export function toTensor(img, lo, hi) {
  const n = img.width * img.height;
  const out = new Float32Array(n * 3);
  const k = (hi - lo) / 255;
  const d = img.data;
  for (let i = 0; i < n; i++) {
    out[3 * i] = lo + d[4 * i] * k;
    out[3 * i + 1] = lo + d[4 * i + 1] * k;
    out[3 * i + 2] = lo + d[4 * i + 2] * k;
  }
  return out;
}

/**
 * The whole source scaled into size x size (canvas resampling, smoothed): stretched, or letterboxed with a zero
 * border when keepAspect.  {tensor, scale, dx, dy}: an input pixel p maps to image pixel (p - d) / scale.
 */
export function resizeToTensor(src, size, {lo = 0, hi = 1, keepAspect = true} = {}) {
  const {width, height} = sourceSize(src);
  const ctx = scratchContext(size, size);
  ctx.fillStyle = '#000';
  ctx.fillRect(0, 0, size, size);
  ctx.imageSmoothingEnabled = true;
  ctx.imageSmoothingQuality = 'high';
  let scale = size / Math.max(width, height);
  let dx = 0;
  let dy = 0;
  if (keepAspect) {
    const w = Math.round(width * scale);
    const h = Math.round(height * scale);
    dx = Math.floor((size - w) / 2);
    dy = Math.floor((size - h) / 2);
    ctx.drawImage(src, 0, 0, width, height, dx, dy, w, h);
  } else {
    ctx.drawImage(src, 0, 0, width, height, 0, 0, size, size);
    scale = null;
  }
  // the border is pixel value 0, mapped to `lo` like every pixel (MediaPipe's BORDER_ZERO)
  const tensor = toTensor(ctx.getImageData(0, 0, size, size), lo, hi);
  return {tensor, scale, dx, dy};
}

/**
 * A rotated ROI of `img` (RGBA ImageData) resampled to size x size, bilinear, edges replicated (MediaPipe's
 * default border for landmark crops).  Output pixel centre (u + 0.5) / size is ROI point u - 0.5 in [-0.5, 0.5].
 */
export function cropToTensor(img, roi, size, {lo = 0, hi = 1} = {}) {
  const {width: W, height: H, data} = img;
  const out = new Float32Array(size * size * 3);
  const c = Math.cos(roi.angle);
  const s = Math.sin(roi.angle);
  const k = (hi - lo) / 255;
  for (let v = 0; v < size; v++) {
    const rv = ((v + 0.5) / size - 0.5) * roi.height;
    for (let u = 0; u < size; u++) {
      const ru = ((u + 0.5) / size - 0.5) * roi.width;
      // image point, then -0.5 to sample between pixel centres
      const x = Math.min(Math.max(roi.cx + c * ru - s * rv - 0.5, 0), W - 1);
      const y = Math.min(Math.max(roi.cy + s * ru + c * rv - 0.5, 0), H - 1);
      const x0 = Math.floor(x);
      const y0 = Math.floor(y);
      const x1 = Math.min(x0 + 1, W - 1);
      const y1 = Math.min(y0 + 1, H - 1);
      const fx = x - x0;
      const fy = y - y0;
      const o = 3 * (v * size + u);
      for (let ch = 0; ch < 3; ch++) {
        const a = data[4 * (y0 * W + x0) + ch] * (1 - fx) + data[4 * (y0 * W + x1) + ch] * fx;
        const b = data[4 * (y1 * W + x0) + ch] * (1 - fx) + data[4 * (y1 * W + x1) + ch] * fx;
        out[o + ch] = lo + (a * (1 - fy) + b * fy) * k;
      }
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ detection

export const FACE_SSD = {size: 128, strides: [8, 16, 16, 16], numKeypoints: 6};
export const POSE_SSD = {size: 224, strides: [8, 16, 32, 32, 32], numKeypoints: 4};

const anchorCache = new Map();

/** SSD anchor centres (x, y) in [0, 1], fixed size: 2 per layer and cell (SsdAnchorsCalculator). */
export function anchors(opt) {
  const key = `${opt.size}/${opt.strides}`;
  if (anchorCache.has(key)) return anchorCache.get(key);
  const out = [];
  let i = 0;
  while (i < opt.strides.length) {
    let j = i;
    while (j < opt.strides.length && opt.strides[j] === opt.strides[i]) j++;
    const perCell = 2 * (j - i);  // aspect ratio 1 plus the interpolated scale, per layer of this stride
    const grid = Math.ceil(opt.size / opt.strides[i]);
    for (let y = 0; y < grid; y++) {
      for (let x = 0; x < grid; x++) {
        for (let a = 0; a < perCell; a++) out.push([(x + 0.5) / grid, (y + 0.5) / grid]);
      }
    }
    i = j;
  }
  anchorCache.set(key, out);
  return out;
}

export function iou(a, b) {
  const w = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]));
  const h = Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
  const inter = w * h;
  const union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return union > 0 ? inter / union : 0;
}

/** MediaPipe's WEIGHTED non-max suppression: overlapping boxes (IoU > threshold) averaged by score. */
export function weightedNms(dets, threshold = 0.3) {
  let remaining = [...dets].sort((a, b) => b.score - a.score);
  const out = [];
  while (remaining.length) {
    const top = remaining[0];
    const group = remaining.filter((d) => iou(top.box, d.box) > threshold);
    remaining = remaining.filter((d) => iou(top.box, d.box) <= threshold);
    const total = group.reduce((t, d) => t + d.score, 0);
    const box = [0, 1, 2, 3].map((k) => group.reduce((t, d) => t + d.box[k] * d.score, 0) / total);
    const keypoints = top.keypoints.map((_, k) => [0, 1].map(
      (c) => group.reduce((t, d) => t + d.keypoints[k][c] * d.score, 0) / total));
    out.push({score: top.score, box, keypoints});
  }
  return out;
}

/**
 * SSD outputs -> detections (TensorsToDetectionsCalculator + weighted NMS), in model-input [0, 1] coordinates:
 * [{score, box: [xmin, ymin, xmax, ymax], keypoints: [[x, y], ...]}], best first.
 */
export function decodeDetections(regressors, logits, opt, threshold = 0.5) {
  const a = anchors(opt);
  const stride = 4 + 2 * opt.numKeypoints;
  const dets = [];
  for (let i = 0; i < a.length; i++) {
    const score = 1 / (1 + Math.exp(-Math.min(Math.max(logits[i], -100), 100)));
    if (score < threshold) continue;
    const r = i * stride;
    const cx = regressors[r] / opt.size + a[i][0];
    const cy = regressors[r + 1] / opt.size + a[i][1];
    const hw = regressors[r + 2] / opt.size / 2;
    const hh = regressors[r + 3] / opt.size / 2;
    const keypoints = [];
    for (let k = 0; k < opt.numKeypoints; k++) {
      keypoints.push([regressors[r + 4 + 2 * k] / opt.size + a[i][0], regressors[r + 5 + 2 * k] / opt.size + a[i][1]]);
    }
    dets.push({score, box: [cx - hw, cy - hh, cx + hw, cy + hh], keypoints});
  }
  return weightedNms(dets);
}

/** A detection from letterboxed model-input coordinates to image pixels. */
export function detectionToPixels(det, {scale, dx, dy}, size) {
  return {
    score: det.score,
    box: det.box.map((v, k) => (v * size - (k % 2 ? dy : dx)) / scale),
    keypoints: det.keypoints.map(([x, y]) => [(x * size - dx) / scale, (y * size - dy) / scale]),
  };
}

// ------------------------------------------------------------------------------------------------ ROIs

const normAngle = (a) => a - 2 * Math.PI * Math.floor((a + Math.PI) / (2 * Math.PI));

/** FaceDetectionFrontDetectionToRoi: eyes (keypoints 0 -> 1) level, square on the long side, x1.5. */
export function faceRoi(det) {
  const [x0, y0, x1, y1] = det.box;
  const [[ax, ay], [bx, by]] = det.keypoints;
  const side = Math.max(x1 - x0, y1 - y0) * 1.5;
  return {cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, width: side, height: side,
    angle: normAngle(0 - Math.atan2(-(by - ay), bx - ax))};
}

/** PoseDetectionToRoi: centred on the hips (keypoint 0), side 2 |hips -> keypoint 1| x1.25, that vector up. */
export function poseRoi(keypoints) {
  const [[x0, y0], [x1, y1]] = keypoints;
  const side = 2 * Math.hypot(x1 - x0, y1 - y0) * 1.25;
  return {cx: x0, cy: y0, width: side, height: side, angle: normAngle(Math.PI / 2 - Math.atan2(-(y1 - y0), x1 - x0))};
}

/** A ROI-normalized point (0..1) to image pixels. */
export function roiToImage(roi, u, v) {
  const ru = (u - 0.5) * roi.width;
  const rv = (v - 0.5) * roi.height;
  const c = Math.cos(roi.angle);
  const s = Math.sin(roi.angle);
  return [roi.cx + c * ru - s * rv, roi.cy + s * ru + c * rv];
}

/** The four corners of a ROI in image pixels, for drawing. */
export function roiCorners(roi) {
  return [[0, 0], [1, 0], [1, 1], [0, 1]].map(([u, v]) => roiToImage(roi, u, v));
}

export const sigmoid = (x) => 1 / (1 + Math.exp(-x));
