// Face landmark mesh: face detection, then MediaPipe's face ROI (the box squared, x1.5, rotated to level the
// eyes) cropped to 192x192, then the face_landmark model: 468 points and a face-presence score.

import {cropToTensor, faceRoi, pixels, roiCorners, roiToImage, sigmoid} from '../vision.js';
import {dot, drawFrame, polygon, segments, table} from '../draw.js';
import * as C from '../connections.js';
import {detectFaces} from './faces.js';

const SIZE = 192;
const ZOOM = 384;

/** What the landmark model saw (the ROI, upright) with its 468 points, drawn ZOOM px wide. */
function zoomed(frame, roi, raw) {
  const c = Object.assign(document.createElement('canvas'), {width: ZOOM, height: ZOOM, className: 'zoom'});
  const g = c.getContext('2d');
  g.fillStyle = '#000';
  g.fillRect(0, 0, ZOOM, ZOOM);
  g.translate(ZOOM / 2, ZOOM / 2);
  g.scale(ZOOM / roi.width, ZOOM / roi.height);
  g.rotate(-roi.angle);
  g.translate(-roi.cx, -roi.cy);
  g.drawImage(frame.source, 0, 0, frame.width, frame.height);
  g.setTransform(1, 0, 0, 1, 0, 0);
  const pts = Array.from({length: 468}, (_, i) => [raw[3 * i] / SIZE * ZOOM, raw[3 * i + 1] / SIZE * ZOOM]);
  segments(g, pts, C.TESSELATION, {stroke: '#ffffff', width: 0.7, alpha: 0.5});
  segments(g, pts, C.FACE_OVAL, {stroke: '#e8ecf5', width: 1.5});
  segments(g, pts, [...C.LEFT_EYE, ...C.LEFT_EYEBROW], {stroke: '#3ddc97', width: 1.5});
  segments(g, pts, [...C.RIGHT_EYE, ...C.RIGHT_EYEBROW], {stroke: '#ff5c8a', width: 1.5});
  segments(g, pts, C.LIPS, {stroke: '#ffd23f', width: 1.5});
  for (const [x, y] of pts) dot(g, x, y, 1.2, '#fff');
  return c;
}

export default {
  id: 'mesh',
  title: 'Face mesh',
  models: ['face_detection_short_range', 'face_landmark'],
  input: 'image',
  detailsTitle: 'Face mesh',
  intro: 'Two models in a row: <b>BlazeFace</b> finds the face, the page crops a rotated square around it, and ' +
    "MediaPipe's <b>face landmark</b> model places 468 points of the face mesh (drawn with MediaPipe's " +
    'tesselation and contours).',

  async process(frame, ctx) {
    const faces = await detectFaces(frame, ctx);
    const {g, unit} = drawFrame(ctx.canvas, frame);
    if (!faces.length) {
      ctx.details(Object.assign(document.createElement('p'), {textContent: 'No face found.'}));
      return {faces, presence: 0, landmarks: []};
    }
    const roi = faceRoi(faces[0]);
    const tensor = cropToTensor(pixels(frame.source), roi, SIZE);
    const out = await ctx.run('face_landmark', tensor);
    const presence = sigmoid(out.conv2d_31[0]);
    const raw = out.conv2d_21;
    const landmarks = [];
    for (let i = 0; i < 468; i++) {
      const [x, y] = roiToImage(roi, raw[3 * i] / SIZE, raw[3 * i + 1] / SIZE);
      landmarks.push([x, y, raw[3 * i + 2] / SIZE * roi.width]);
    }
    polygon(g, roiCorners(roi), {stroke: 'rgba(255,255,255,.8)', width: 1.5 * unit, dash: [6 * unit, 4 * unit]});
    if (presence > 0.5) {
      segments(g, landmarks, C.TESSELATION, {stroke: '#c0c8d8', width: 0.6 * unit, alpha: 0.55});
      segments(g, landmarks, C.FACE_OVAL, {stroke: '#e8ecf5', width: 1.6 * unit});
      segments(g, landmarks, [...C.LEFT_EYE, ...C.LEFT_EYEBROW], {stroke: '#3ddc97', width: 1.6 * unit});
      segments(g, landmarks, [...C.RIGHT_EYE, ...C.RIGHT_EYEBROW], {stroke: '#ff5c8a', width: 1.6 * unit});
      segments(g, landmarks, C.LIPS, {stroke: '#ffd23f', width: 1.6 * unit});
      for (const [x, y] of landmarks) dot(g, x, y, 0.9 * unit, '#ffffff');
    }
    const zoom = presence > 0.5 ? zoomed(frame, roi, raw) : document.createElement('div');
    ctx.details(zoom, table(['', ''], [
      ['face presence', presence.toFixed(3)],
      ['landmarks', presence > 0.5 ? '468' : 'none (no face in the crop)'],
      ['ROI centre', `${roi.cx.toFixed(0)}, ${roi.cy.toFixed(0)}`],
      ['ROI side', `${roi.width.toFixed(0)} px`],
      ['ROI rotation', `${(roi.angle * 180 / Math.PI).toFixed(1)}°`],
    ]));
    return {faces, roi, presence, landmarks};
  },
};
