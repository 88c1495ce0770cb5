// Face detection: MediaPipe's short-range BlazeFace (128x128, [-1, 1], the frame letterboxed), 896 SSD
// anchors decoded like MediaPipe's TensorsToDetectionsCalculator, weighted non-max suppression.

import {FACE_SSD, decodeDetections, detectionToPixels, resizeToTensor} from '../vision.js';
import {dot, drawFrame, label, table} from '../draw.js';

export const KEYPOINTS = ['right eye', 'left eye', 'nose tip', 'mouth', 'right ear', 'left ear'];
const COLORS = ['#ff5c8a', '#ff5c8a', '#ffd23f', '#3ddc97', '#5cc8ff', '#5cc8ff'];

/** Faces in image pixels: [{score, box: [x0, y0, x1, y1], keypoints: [[x, y] x 6]}], best first. */
export async function detectFaces(frame, ctx) {
  const lb = resizeToTensor(frame.source, FACE_SSD.size, {lo: -1, hi: 1, keepAspect: true});
  const out = await ctx.run('face_detection_short_range', lb.tensor);
  return decodeDetections(out.regressors, out.classificators, FACE_SSD)
    .map((d) => detectionToPixels(d, lb, FACE_SSD.size));
}

export function drawFaces(g, faces, unit) {
  for (const f of faces) {
    const [x0, y0, x1, y1] = f.box;
    g.lineWidth = 3 * unit;
    g.strokeStyle = '#3155d6';
    g.strokeRect(x0, y0, x1 - x0, y1 - y0);
    label(g, `face ${(100 * f.score).toFixed(0)}%`, x0 - 1.5 * unit, y0, {size: 13 * unit});
    f.keypoints.forEach(([x, y], k) => {
      dot(g, x, y, 4.5 * unit, '#fff');
      dot(g, x, y, 3 * unit, COLORS[k]);
    });
  }
}

export default {
  id: 'faces',
  title: 'Face detection',
  models: ['face_detection_short_range'],
  input: 'image',
  detailsTitle: 'Faces',
  intro: 'MediaPipe <b>BlazeFace</b> (short range) scores 896 anchor boxes on a 128&times;128 view of the ' +
    'frame; the page decodes them like MediaPipe (box, six keypoints: eyes, nose tip, mouth, ears) and merges ' +
    'overlapping ones.',

  async process(frame, ctx) {
    const faces = await detectFaces(frame, ctx);
    const {g, unit} = drawFrame(ctx.canvas, frame);
    drawFaces(g, faces, unit);
    const r = (v) => v.toFixed(0);
    ctx.details(faces.length
      ? table(['', 'score', 'x', 'y', 'w', 'h'], faces.map((f, i) => [`#${i + 1}`, f.score.toFixed(3), r(f.box[0]),
        r(f.box[1]), r(f.box[2] - f.box[0]), r(f.box[3] - f.box[1])]))
      : Object.assign(document.createElement('p'), {textContent: 'No face found.'}));
    return {faces};
  },
};
