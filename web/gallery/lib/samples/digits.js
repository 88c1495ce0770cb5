// Handwritten digits: a 64-64-10 network trained in this repo on scikit-learn's 8x8 digits
// (scripts/train_digits.py, which also holds the Python twin of inkTo8x8 below).  Draw with the mouse, a pen or a
// finger; the drawing is reduced to 8x8 like the dataset's bitmaps and classified at every stroke.

const SIZE = 280;  // drawing canvas, CSS and bitmap pixels
const LINE = 36;  // stroke width: about 6 px of the 32x32 box for a digit drawn 200 px tall, like the dataset's strokes
const CELL = 28;  // pixels per cell when an 8x8 digit is painted (8 x 28 = 224, centred)
const INK = 0.05;  // less ink than this is background when finding the digit's box

/**
 * The page's preprocessing: ink image (Float32Array, w x h, 0..1) -> 64 values 0..16, or null if empty.
 * The ink's bounding box is scaled so its long side is 32 px, centred in 32x32 (area-averaged), and 4x4 blocks
 * are summed, as optdigits made its 8x8 images from 32x32 bitmaps.
 */
export function inkTo8x8(ink, w, h) {
  let x0 = w;
  let y0 = h;
  let x1 = -1;
  let y1 = -1;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      if (ink[y * w + x] > INK) {
        x0 = Math.min(x0, x); x1 = Math.max(x1, x);
        y0 = Math.min(y0, y); y1 = Math.max(y1, y);
      }
    }
  }
  if (x1 < 0) return null;
  x1 += 1;
  y1 += 1;
  const bw = x1 - x0;
  const bh = y1 - y0;
  const s = 32 / Math.max(bw, bh);
  const ox = (32 - bw * s) / 2;
  const oy = (32 - bh * s) / 2;
  const box = new Float64Array(32 * 32);
  const clamp = (v) => Math.min(Math.max(v, 0), 31);
  if (s <= 1) {
    // area average: each source pixel adds ink x its area (s^2) to the target pixel holding its centre
    for (let y = y0; y < y1; y++) {
      const ty = clamp(Math.floor((y - y0 + 0.5) * s + oy));
      for (let x = x0; x < x1; x++) {
        const tx = clamp(Math.floor((x - x0 + 0.5) * s + ox));
        box[ty * 32 + tx] += ink[y * w + x] * s * s;
      }
    }
  } else {
    for (let ty = 0; ty < 32; ty++) {
      for (let tx = 0; tx < 32; tx++) {
        const sx = Math.floor((tx + 0.5 - ox) / s);
        const sy = Math.floor((ty + 0.5 - oy) / s);
        if (sx >= 0 && sx < bw && sy >= 0 && sy < bh) box[ty * 32 + tx] = ink[(y0 + sy) * w + x0 + sx];
      }
    }
  }
  const out = new Float32Array(64);
  for (let i = 0; i < 32 * 32; i++) out[(Math.floor(i / 128)) * 8 + Math.floor((i % 32) / 4)] += Math.min(box[i], 1);
  return out;
}

let ui = null;  // the mounted page: {canvas, g, factory, preview, ...}

function inkOf(canvas) {
  const {data} = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
  const ink = new Float32Array(canvas.width * canvas.height);
  for (let i = 0; i < ink.length; i++) {
    ink[i] = 1 - (0.299 * data[4 * i] + 0.587 * data[4 * i + 1] + 0.114 * data[4 * i + 2]) / 255;
  }
  return ink;
}

function clear() {
  ui.g.fillStyle = '#fff';
  ui.g.fillRect(0, 0, SIZE, SIZE);
}

/** Paint 64 values 0..16 as 8x8 blocks of ink (the browser tests feed held-out digits this way). */
function paint(values) {
  clear();
  const off = (SIZE - 8 * CELL) / 2;
  for (let i = 0; i < 64; i++) {
    const v = Math.round(255 * (1 - values[i] / 16));
    ui.g.fillStyle = `rgb(${v},${v},${v})`;
    ui.g.fillRect(off + (i % 8) * CELL, off + Math.floor(i / 8) * CELL, CELL, CELL);
  }
}

function showPreview(values) {
  const g = ui.preview.getContext('2d');
  const img = g.createImageData(8, 8);
  for (let i = 0; i < 64; i++) {
    const v = values ? Math.round(255 * (1 - Math.min(values[i], 16) / 16)) : 255;
    img.data.set([v, v, v, 255], 4 * i);
  }
  g.putImageData(img, 0, 0);
}

function showResult(probs) {
  const best = probs ? probs.indexOf(Math.max(...probs)) : -1;
  ui.answer.textContent = probs ? String(best) : '?';
  ui.bars.replaceChildren(...Array.from({length: 10}, (_, d) => {
    const p = probs ? probs[d] : 0;
    const name = Object.assign(document.createElement('span'), {textContent: d, className: d === best ? 'top1' : ''});
    const bar = Object.assign(document.createElement('div'), {className: 'bar'});
    const fill = document.createElement('span');
    fill.style.width = `${(100 * p).toFixed(1)}%`;
    bar.append(fill);
    const val = Object.assign(document.createElement('span'), {textContent: `${(100 * p).toFixed(1)}%`});
    return [name, bar, val];
  }).flat());
}

/** Classify what the drawing canvas shows, through the page's preprocessing: {digit, probabilities, input}. */
async function classify() {
  const values = inkTo8x8(inkOf(ui.canvas), SIZE, SIZE);
  showPreview(values);
  if (!values) {
    showResult(null);
    return {digit: null, probabilities: null, input: null};
  }
  return ui.factory.run(async (ctx) => {
    const out = await ctx.run('digits', values.map((v) => v / 16));
    const probs = Array.from(out.probabilities);
    showResult(probs);
    return {digit: probs.indexOf(Math.max(...probs)), probabilities: probs, input: Array.from(values)};
  });
}

export default {
  id: 'digits',
  title: 'Handwritten digits',
  models: ['digits'],
  input: 'draw',
  detailsTitle: 'Prediction',
  intro: 'Draw a digit (0&ndash;9) in the box. A small network trained in this repository on scikit-learn\'s ' +
    '8&times;8 digits (<code>scripts/train_digits.py</code>) classifies it after every stroke: the drawing is ' +
    'cropped to its ink, scaled into 32&times;32 and summed into 8&times;8 blocks, like the dataset.',

  async mount(view, factory) {
    const canvas = Object.assign(document.createElement('canvas'), {width: SIZE, height: SIZE, className: 'draw'});
    canvas.setAttribute('aria-label', 'Drawing area: draw a digit');
    const g = canvas.getContext('2d', {willReadFrequently: true});
    const preview = Object.assign(document.createElement('canvas'), {width: 8, height: 8, className: 'preview'});
    preview.style.width = preview.style.height = '64px';
    const answer = Object.assign(document.createElement('div'), {className: 'big', textContent: '?'});
    const bars = Object.assign(document.createElement('div'), {className: 'bars'});
    ui = {canvas, g, factory, preview, answer, bars};
    clear();

    const program = (await factory.program('digits')).program;
    const examples = program.meta?.examples ?? {};
    const clearBtn = Object.assign(document.createElement('button'), {className: 'btn', textContent: 'Clear'});
    clearBtn.addEventListener('click', () => { clear(); classify(); });
    const exampleBtn = Object.assign(document.createElement('button'), {className: 'btn',
      textContent: 'Example from the test set'});
    let next = 0;
    exampleBtn.addEventListener('click', () => {
      const ex = examples[String(next++ % 10)];
      if (ex) { paint(ex); classify(); }
    });
    const acc = program.meta?.accuracy;
    const note = Object.assign(document.createElement('div'), {className: 'caption', textContent: acc
      ? `Held-out accuracy (360 digits, in CPython): ${(100 * acc.test_through_page).toFixed(1)} %` : ''});
    const wrap = Object.assign(document.createElement('div'), {className: 'draw-wrap'});
    const row = Object.assign(document.createElement('div'), {className: 'row'});
    row.append(clearBtn, exampleBtn);
    wrap.append(canvas, row, note);
    view.replaceChildren(wrap);

    const details = document.createElement('div');
    const head = Object.assign(document.createElement('div'), {className: 'row'});
    head.style.justifyContent = 'space-between';
    const pv = document.createElement('div');
    pv.append(preview, Object.assign(document.createElement('div'), {className: 'caption', textContent: '8×8 input'}));
    head.append(answer, pv);
    details.append(head, bars);
    factory.details(details);
    showResult(null);
    showPreview(null);

    let drawing = false;
    let last = null;
    let pending = null;
    const pos = (e) => {
      const r = canvas.getBoundingClientRect();
      return [(e.clientX - r.left) * SIZE / r.width, (e.clientY - r.top) * SIZE / r.height];
    };
    const stroke = (to) => {
      g.strokeStyle = '#000';
      g.lineWidth = LINE;
      g.lineCap = 'round';
      g.lineJoin = 'round';
      g.beginPath();
      g.moveTo(...(last || to));
      g.lineTo(...to);
      g.stroke();
      last = to;
    };
    canvas.addEventListener('pointerdown', (e) => {
      drawing = true;
      last = null;
      canvas.setPointerCapture(e.pointerId);
      stroke(pos(e));
    });
    canvas.addEventListener('pointermove', (e) => { if (drawing) stroke(pos(e)); });
    const end = () => {
      if (!drawing) return;
      drawing = false;
      pending = (pending || Promise.resolve()).then(classify);
    };
    canvas.addEventListener('pointerup', end);
    canvas.addEventListener('pointercancel', end);
  },

  /** Test hook: paint 8x8 values 0..16 into the drawing area and classify it like a drawing. */
  async classifyPainted(values) {
    paint(values);
    return classify();
  },
  clear: () => { clear(); return classify(); },
  classify: () => classify(),
};
