#!/usr/bin/env python3
"""Train the gallery's handwritten-digit network on scikit-learn's digits and save it as a graph file.

    python scripts/train_digits.py            # writes web/gallery/models/digits.{json,bin}

Data: `sklearn.datasets.load_digits()` (1797 8x8 images, values 0..16, UCI optdigits), split 80/20 with
`train_test_split(test_size=0.2, random_state=0, stratify=y)`; the test split is never trained on.

Preprocessing (the page does the same in web/gallery/lib/digits.js): a drawing is an ink image in [0, 1];
its ink bounding box is scaled so the long side is 32 px and centred in a 32x32 box (area-averaged), then
4x4 blocks are summed into 8x8 values 0..16, like the optdigits 32x32 bitmaps.  The network is trained on
the dataset's digits as they are and as they come out of that preprocessing (each digit painted as 8x8
blocks), so drawn digits and dataset digits meet it in the same form.

Network: 64 -> 64 (ReLU) -> 10 (softmax), inputs divided by 16; full-batch Adam in float64 from a fixed seed
(deterministic on a given machine), weights stored as float32.  The graph is recorded through
py_core.graphfile.Recorder (input "pixels" [1, 64], output "probabilities" [1, 10]) with gemm, relu and
softmax, as a graph file (docs/graph-file.md) the page replays like the converted TFLite models.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "web" / "gallery" / "models" / "digits"
SEED = 0
HIDDEN = 64
EPOCHS = 600
LR = 0.01
L2 = 1e-4
INK_THRESHOLD = 0.05  # a pixel with less ink is background when finding the bounding box
CELL = 28  # pixels per 8x8 cell when a dataset digit is painted (the browser tests paint it the same way)


def load_split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, x_test, y_train, y_test): 8x8 values 0..16 as [N, 64] float64, labels 0..9."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x, y = digits.data.astype(np.float64), digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    return x_train, x_test, y_train, y_test


def paint(values: np.ndarray, cell: int = CELL) -> np.ndarray:
    """An 8x8 digit (0..16) as an ink image: each value a cell x cell block of ink value / 16."""
    return np.kron(values.reshape(8, 8) / 16.0, np.ones((cell, cell)))


def ink_to_8x8(ink: np.ndarray) -> np.ndarray | None:
    """The page's preprocessing (lib/digits.js inkTo8x8): ink image [H, W] in [0, 1] -> 64 values 0..16."""
    ys, xs = np.nonzero(ink > INK_THRESHOLD)
    if len(xs) == 0:
        return None
    x0, x1, y0, y1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
    bw, bh = x1 - x0, y1 - y0
    s = 32 / max(bw, bh)
    ox, oy = (32 - bw * s) / 2, (32 - bh * s) / 2
    box = np.zeros((32, 32))
    if s <= 1:
        # area average: every source pixel adds its ink x its area (s^2) to the target pixel holding its centre
        yy, xx = np.mgrid[y0:y1, x0:x1]
        tx = np.floor((xx - x0 + 0.5) * s + ox).astype(int).clip(0, 31)
        ty = np.floor((yy - y0 + 0.5) * s + oy).astype(int).clip(0, 31)
        np.add.at(box, (ty, tx), ink[y0:y1, x0:x1] * s * s)
    else:
        # upscaling a tiny drawing: nearest source pixel for every target pixel inside the box
        ty, tx = np.mgrid[0:32, 0:32]
        sx = np.floor((tx + 0.5 - ox) / s).astype(int)
        sy = np.floor((ty + 0.5 - oy) / s).astype(int)
        inside = (sx >= 0) & (sx < bw) & (sy >= 0) & (sy < bh)
        box[inside] = ink[y0 + sy[inside], x0 + sx[inside]]
    box = np.minimum(box, 1.0)
    return box.reshape(8, 4, 8, 4).sum(axis=(1, 3)).reshape(64)


def through_page(x: np.ndarray) -> np.ndarray:
    """Dataset digits as the page sees them after painting and preprocessing."""
    return np.stack([ink_to_8x8(paint(v)) for v in x])


def train(x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Full-batch Adam on softmax cross-entropy with L2; float64."""
    rng = np.random.default_rng(SEED)
    params = {
        "w1": rng.standard_normal((64, HIDDEN)) * np.sqrt(2 / 64), "b1": np.zeros(HIDDEN),
        "w2": rng.standard_normal((HIDDEN, 10)) * np.sqrt(1 / HIDDEN), "b2": np.zeros(10),
    }
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    onehot = np.eye(10)[y]
    x = x / 16
    for step in range(1, EPOCHS + 1):
        h = np.maximum(x @ params["w1"] + params["b1"], 0)
        logits = h @ params["w2"] + params["b2"]
        p = np.exp(logits - logits.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        d_logits = (p - onehot) / len(x)
        d_h = (d_logits @ params["w2"].T) * (h > 0)
        grads = {"w2": h.T @ d_logits + L2 * params["w2"], "b2": d_logits.sum(0),
                 "w1": x.T @ d_h + L2 * params["w1"], "b1": d_h.sum(0)}
        for k, g in grads.items():
            m[k] = 0.9 * m[k] + 0.1 * g
            v[k] = 0.999 * v[k] + 0.001 * g * g
            params[k] -= LR * (m[k] / (1 - 0.9 ** step)) / (np.sqrt(v[k] / (1 - 0.999 ** step)) + 1e-8)
    return params


def predict(params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """Class indices in float32, as the page computes them."""
    f = {k: v.astype(np.float32) for k, v in params.items()}
    h = np.maximum((x / 16).astype(np.float32) @ f["w1"] + f["b1"], 0)
    return np.argmax(h @ f["w2"] + f["b2"], axis=1)


def record(params: dict[str, np.ndarray], meta: dict[str, object]) -> object:
    """The network as a graph file: pixels [1, 64] (values / 16) -> probabilities [1, 10]."""
    from py_core.graphfile import Recorder

    rb = Recorder("digits", "scripts/train_digits.py")

    def const(a: np.ndarray) -> object:
        a = np.ascontiguousarray(a, dtype=np.float32)
        return rb.constant({"dataType": "float32", "shape": list(a.shape)}, a)

    x = rb.input("pixels", {"dataType": "float32", "shape": [1, 64]})
    h = rb.op("relu", rb.op("gemm", x, const(params["w1"]), c=const(params["b1"]), label="dense1"), label="relu1")
    logits = rb.op("gemm", h, const(params["w2"]), c=const(params["b2"]), label="dense2")
    graph = rb.build({"probabilities": rb.op("softmax", logits, 1, label="probabilities")})
    graph.meta = meta
    return graph


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output stem (default: %(default)s)")
    args = parser.parse_args(argv)
    x_train, x_test, y_train, y_test = load_split()
    params = train(np.concatenate([x_train, through_page(x_train)]), np.concatenate([y_train, y_train]))
    acc = {
        "train": float((predict(params, x_train) == y_train).mean()),
        "test": float((predict(params, x_test) == y_test).mean()),
        "test_through_page": float((predict(params, through_page(x_test)) == y_test).mean()),
    }
    examples = {str(d): x_test[np.nonzero(y_test == d)[0][0]].astype(int).tolist() for d in range(10)}
    meta = {"dataset": "sklearn.datasets.load_digits, 80/20 stratified split, random_state=0",
            "accuracy": acc, "hidden": HIDDEN, "epochs": EPOCHS, "seed": SEED,
            "preprocess": {"inkThreshold": INK_THRESHOLD, "box": 32, "scale": 1 / 16},
            "examples": examples}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    js, bin_ = record(params, meta).save(args.out)  # type: ignore[attr-defined]
    print(f"train_digits: accuracy train {acc['train']:.4f}, test {acc['test']:.4f}, "
          f"test through the page's preprocessing {acc['test_through_page']:.4f}")
    print(f"train_digits: wrote {js} and {bin_} ({bin_.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
