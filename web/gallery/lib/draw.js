// Small canvas drawing helpers shared by the samples.

/** Size `canvas` to the frame and draw the frame; returns the 2D context and a line-width unit. */
export function drawFrame(canvas, frame) {
  if (canvas.width !== frame.width || canvas.height !== frame.height) {
    canvas.width = frame.width;
    canvas.height = frame.height;
  }
  const g = canvas.getContext('2d');
  g.drawImage(frame.source, 0, 0, frame.width, frame.height);
  return {g, unit: Math.max(1, Math.max(frame.width, frame.height) / 512)};
}

export function dot(g, x, y, r, fill) {
  g.beginPath();
  g.arc(x, y, r, 0, 2 * Math.PI);
  g.fillStyle = fill;
  g.fill();
}

export function polygon(g, points, {stroke, width = 2, dash = []} = {}) {
  g.beginPath();
  points.forEach(([x, y], i) => (i ? g.lineTo(x, y) : g.moveTo(x, y)));
  g.closePath();
  g.setLineDash(dash);
  g.lineWidth = width;
  g.strokeStyle = stroke;
  g.stroke();
  g.setLineDash([]);
}

export function segments(g, points, pairs, {stroke, width = 1, alpha = 1, when = () => true} = {}) {
  g.save();
  g.globalAlpha = alpha;
  g.beginPath();
  for (const [a, b] of pairs) {
    if (!when(a, b)) continue;
    g.moveTo(points[a][0], points[a][1]);
    g.lineTo(points[b][0], points[b][1]);
  }
  g.lineWidth = width;
  g.strokeStyle = stroke;
  g.lineCap = 'round';
  g.stroke();
  g.restore();
}

/** A label with a filled background at (x, y) (its bottom-left corner). */
export function label(g, text, x, y, {fill = '#3155d6', color = '#fff', size = 13} = {}) {
  g.font = `600 ${size}px system-ui, sans-serif`;
  const w = g.measureText(text).width + size * 0.8;
  const h = size * 1.5;
  g.fillStyle = fill;
  g.fillRect(x, y - h, w, h);
  g.fillStyle = color;
  g.textBaseline = 'middle';
  g.fillText(text, x + size * 0.4, y - h / 2);
}

/** A small <table> from a header row and rows of cells. */
export function table(head, rows) {
  const t = document.createElement('table');
  const tr = (cells, tag) => {
    const r = document.createElement('tr');
    for (const c of cells) r.append(Object.assign(document.createElement(tag), {textContent: c}));
    return r;
  };
  t.append(tr(head, 'th'), ...rows.map((r) => tr(r, 'td')));
  return t;
}
