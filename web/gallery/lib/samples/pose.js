// Pose landmarks: MediaPipe's BlazePose detector (224x224, [-1, 1], letterboxed; 2254 anchors) finds the
// person, the ROI (centred on the hips, rotated upright, x1.25) is cropped to 256x256, and
// pose_landmark_full places 33 body landmarks with a visibility each.

import {POSE_SSD, cropToTensor, decodeDetections, detectionToPixels, pixels, poseRoi, resizeToTensor, roiCorners,
  roiToImage, sigmoid} from '../vision.js';
import {dot, drawFrame, polygon, segments, table} from '../draw.js';
import {POSE} from '../connections.js';

const SIZE = 256;
const VISIBLE = 0.5;
// landmark index -> side, for colours: odd indices past the face are the left side
const side = (i) => (i === 0 ? 'mid' : (i <= 10 ? (i <= 3 || i === 7 || i === 9 ? 'left' : 'right') : (i % 2 ? 'left' : 'right')));
const COLORS = {left: '#3ddc97', right: '#ff8c42', mid: '#ffd23f'};

export default {
  id: 'pose',
  title: 'Pose landmarks',
  models: ['pose_detection', 'pose_landmark_full'],
  input: 'image',
  detailsTitle: 'Pose',
  intro: "MediaPipe's <b>BlazePose</b>: a detector finds the person and the line from the hips to the top of the " +
    'body; the page crops an upright square there, and the landmark model places 33 body points (face, ' +
    'shoulders, elbows, wrists, hips, knees, ankles), each with a visibility. Two larger models: expect about a second ' +
    'per frame or more.',

  async process(frame, ctx) {
    const lb = resizeToTensor(frame.source, POSE_SSD.size, {lo: -1, hi: 1, keepAspect: true});
    const det = await ctx.run('pose_detection', lb.tensor);
    const people = decodeDetections(det.Identity, det.Identity_1, POSE_SSD)
      .map((d) => detectionToPixels(d, lb, POSE_SSD.size));
    const {g, unit} = drawFrame(ctx.canvas, frame);
    if (!people.length) {
      ctx.details(Object.assign(document.createElement('p'), {textContent: 'No person found.'}));
      return {people, presence: 0, landmarks: []};
    }
    const roi = poseRoi(people[0].keypoints);
    const out = await ctx.run('pose_landmark_full', cropToTensor(pixels(frame.source), roi, SIZE));
    const presence = out.Identity_1[0];
    const raw = out.Identity;
    const landmarks = [];
    for (let i = 0; i < 33; i++) {
      const [x, y] = roiToImage(roi, raw[5 * i] / SIZE, raw[5 * i + 1] / SIZE);
      landmarks.push([x, y, raw[5 * i + 2] / SIZE * roi.width, sigmoid(raw[5 * i + 3])]);
    }
    polygon(g, roiCorners(roi), {stroke: 'rgba(255,255,255,.8)', width: 1.5 * unit, dash: [6 * unit, 4 * unit]});
    if (presence > 0.5) {
      const seen = (a, b) => landmarks[a][3] > VISIBLE && landmarks[b][3] > VISIBLE;
      segments(g, landmarks, POSE, {stroke: '#ffffff', width: 4 * unit, when: seen});
      landmarks.forEach(([x, y, , v], i) => {
        if (v <= VISIBLE) return;
        dot(g, x, y, 5 * unit, '#1d2330');
        dot(g, x, y, 3.6 * unit, COLORS[side(i)]);
      });
    }
    const visible = landmarks.filter((l) => l[3] > VISIBLE).length;
    ctx.details(table(['', ''], [
      ['person score', people[0].score.toFixed(3)],
      ['pose presence', presence.toFixed(3)],
      ['visible landmarks', `${visible} of 33`],
      ['ROI side', `${roi.width.toFixed(0)} px`],
      ['ROI rotation', `${(roi.angle * 180 / Math.PI).toFixed(1)}°`],
    ]));
    return {people, roi, presence, landmarks};
  },
};
