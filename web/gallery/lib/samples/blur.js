// Background blur: MediaPipe selfie segmentation (256x256, [0, 1], whole frame stretched) gives a person
// probability per pixel; the frame is blurred where it is background, as a video call does.

import {resizeToTensor} from '../vision.js';

const SIZE = 256;
let maskCanvas = null;
let personCanvas = null;

function maskToCanvas(mask) {
  maskCanvas ??= Object.assign(document.createElement('canvas'), {width: SIZE, height: SIZE});
  const g = maskCanvas.getContext('2d');
  const img = g.createImageData(SIZE, SIZE);
  for (let i = 0; i < SIZE * SIZE; i++) {
    img.data[4 * i] = 255;
    img.data[4 * i + 1] = 255;
    img.data[4 * i + 2] = 255;
    img.data[4 * i + 3] = Math.round(mask[i] * 255);
  }
  g.putImageData(img, 0, 0);
  return maskCanvas;
}

export default {
  id: 'blur',
  title: 'Background blur',
  models: ['selfie_segmentation'],
  input: 'image',
  detailsTitle: 'Segmentation mask',
  intro: 'MediaPipe <b>selfie segmentation</b> finds the person in every pixel (a 256&times;256 probability ' +
    'mask); everything else is blurred, as in a video call. The model is a .tflite file converted to WebNN ' +
    'builder calls in this page, by the Python TFLite loader running in Pyodide.',

  async process(frame, ctx) {
    const {tensor} = resizeToTensor(frame.source, SIZE, {keepAspect: false});
    const out = await ctx.run('selfie_segmentation', tensor);
    const mask = out.activation_10;
    const {width: W, height: H} = frame;
    const canvas = ctx.canvas;
    canvas.width = W;
    canvas.height = H;
    const g = canvas.getContext('2d');
    const m = maskToCanvas(mask);
    // background: the whole frame blurred (drawn a little larger so the blur has no dark rim)
    const r = Math.max(4, Math.round(Math.max(W, H) / 32));
    g.filter = `blur(${r}px)`;
    g.drawImage(frame.source, -2 * r, -2 * r, W + 4 * r, H + 4 * r);
    g.filter = 'none';
    // the person: the sharp frame, kept where the (smoothly upscaled) mask says person
    personCanvas ??= document.createElement('canvas');
    personCanvas.width = W;
    personCanvas.height = H;
    const p = personCanvas.getContext('2d');
    p.drawImage(frame.source, 0, 0, W, H);
    p.globalCompositeOperation = 'destination-in';
    p.imageSmoothingEnabled = true;
    p.drawImage(m, 0, 0, W, H);
    p.globalCompositeOperation = 'source-over';
    g.drawImage(personCanvas, 0, 0);

    let person = 0;
    for (let i = 0; i < mask.length; i++) person += mask[i] > 0.5;
    const preview = Object.assign(document.createElement('canvas'), {width: SIZE, height: SIZE, className: 'preview'});
    const pg = preview.getContext('2d');
    pg.fillStyle = '#000';
    pg.fillRect(0, 0, SIZE, SIZE);
    pg.drawImage(m, 0, 0);
    preview.style.width = '100%';
    const text = Object.assign(document.createElement('p'), {
      textContent: `Person: ${(100 * person / mask.length).toFixed(1)} % of the frame (probability > 0.5).`});
    const wrap = document.createElement('div');
    wrap.append(preview, text);
    ctx.details(wrap);
    return {personFraction: person / mask.length, blurRadius: r};
  },
};
