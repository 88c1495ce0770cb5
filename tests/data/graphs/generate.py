"""Regenerate the example graph files of this directory (the format: README "Graph JSON format").

    .venv/bin/python tests/data/graphs/generate.py

- tiny_cnn.json: a small conv net with seeded random weights and no expected outputs (the CPython core's
  outputs are the expectation); tagged as a model so the report charts its latency.
- digits_mlp.json: a real model: scikit-learn's MLPClassifier trained on the bundled 8x8 digits, weights as
  base64, 16 test digits as input and scikit-learn's float64 probabilities as expected outputs.
- dtypes.json: several cases in one file (float16 arithmetic, int64 beyond 2^53, casts) with exact expected
  values: the data types must survive the trip through every implementation.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def b64(a: np.ndarray) -> dict[str, str]:
    return {"base64": base64.b64encode(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()).decode()}


def desc(dtype: str, shape: list[int]) -> dict[str, object]:
    return {"dataType": dtype, "shape": shape}


def tiny_cnn() -> dict[str, object]:
    return {
        "name": "tiny-cnn",
        "model": "tiny-cnn",
        "description": "conv2d -> add -> relu -> maxPool2d -> conv2d -> relu -> averagePool2d -> reshape "
        "-> gemm -> softmax on a 1x3x32x32 image; seeded random weights",
        "inputs": {
            "image": {
                "descriptor": desc("float32", [1, 3, 32, 32]),
                "data": {"random": {"seed": 1, "low": 0, "high": 1}},
            },
            "w1": {
                "descriptor": desc("float32", [16, 3, 3, 3]),
                "data": {"random": {"seed": 2, "low": -0.3, "high": 0.3}},
                "constant": True,
            },
            "b1": {
                "descriptor": desc("float32", [1, 16, 1, 1]),
                "data": {"random": {"seed": 3, "low": -0.1, "high": 0.1}},
                "constant": True,
            },
            "w2": {
                "descriptor": desc("float32", [32, 16, 3, 3]),
                "data": {"random": {"seed": 4, "low": -0.1, "high": 0.1}},
                "constant": True,
            },
            "fc": {
                "descriptor": desc("float32", [32, 10]),
                "data": {"random": {"seed": 5, "low": -0.5, "high": 0.5}},
                "constant": True,
            },
            "fcBias": {"descriptor": desc("float32", [10]), "data": 0.01, "constant": True},
        },
        "operators": [
            {
                "name": "conv2d",
                "arguments": [{"input": "image"}, {"filter": "w1"}, {"options": {"padding": [1, 1, 1, 1]}}],
                "outputs": "c1",
            },
            {"name": "add", "arguments": [{"a": "c1"}, {"b": "b1"}], "outputs": "a1"},
            {"name": "relu", "arguments": [{"input": "a1"}], "outputs": "r1"},
            {
                "name": "maxPool2d",
                "arguments": [{"input": "r1"}, {"options": {"windowDimensions": [2, 2], "strides": [2, 2]}}],
                "outputs": "p1",
            },
            {
                "name": "conv2d",
                "arguments": [
                    {"input": "p1"},
                    {"filter": "w2"},
                    {"options": {"padding": [1, 1, 1, 1], "strides": [2, 2]}},
                ],
                "outputs": "c2",
            },
            {"name": "relu", "arguments": [{"input": "c2"}], "outputs": "r2"},
            {"name": "averagePool2d", "arguments": [{"input": "r2"}], "outputs": "p2"},
            {"name": "reshape", "arguments": [{"input": "p2"}, {"newShape": [1, 32]}], "outputs": "flat"},
            {
                "name": "gemm",
                "arguments": [{"a": "flat"}, {"b": "fc"}, {"options": {"c": "fcBias"}}],
                "outputs": "logits",
            },
            {"name": "softmax", "arguments": [{"input": "logits"}, {"axis": 1}], "outputs": "probs"},
        ],
        "outputs": ["probs"],
    }


def digits_mlp() -> dict[str, object]:
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPClassifier

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target
    clf = MLPClassifier(hidden_layer_sizes=(32,), max_iter=400, random_state=0).fit(x[:1500], y[:1500])
    test = x[1500:1516]
    w1, w2 = (w.astype(np.float32) for w in clf.coefs_)
    b1, b2 = (b.astype(np.float32) for b in clf.intercepts_)
    expected = clf.predict_proba(test.astype(np.float64))  # float64 oracle
    return {
        "name": "digits-mlp",
        "model": "digits-mlp",
        "description": "scikit-learn MLPClassifier (64-32-10, relu, softmax) trained on sklearn's 8x8 "
        "digits; 16 held-out digits; expected: sklearn's float64 predict_proba",
        "inputs": {
            "digits": {"descriptor": desc("float32", [16, 64]), "data": b64(test)},
            "w1": {"descriptor": desc("float32", [64, 32]), "data": b64(w1), "constant": True},
            "b1": {"descriptor": desc("float32", [32]), "data": b64(b1), "constant": True},
            "w2": {"descriptor": desc("float32", [32, 10]), "data": b64(w2), "constant": True},
            "b2": {"descriptor": desc("float32", [10]), "data": b64(b2), "constant": True},
        },
        "operators": [
            {
                "name": "gemm",
                "arguments": [{"a": "digits"}, {"b": "w1"}, {"options": {"c": "b1"}}],
                "outputs": "h",
            },
            {"name": "relu", "arguments": [{"input": "h"}], "outputs": "hr"},
            {
                "name": "gemm",
                "arguments": [{"a": "hr"}, {"b": "w2"}, {"options": {"c": "b2"}}],
                "outputs": "logits",
            },
            {"name": "softmax", "arguments": [{"input": "logits"}, {"axis": 1}], "outputs": "probs"},
        ],
        "expectedOutputs": {"probs": {"descriptor": desc("float32", [16, 10]), "data": expected.ravel().tolist()}},
    }


def dtypes() -> dict[str, object]:
    a16 = np.array([0.5, -1.25, 3.0, 1000.0], np.float16)
    b16 = np.array([2.0, 0.1, -0.333, 0.5], np.float16)
    big = ["9007199254740993n", "-9007199254740993n", "4611686018427387904n", "1n"]
    return {
        "description": "data types that must survive every implementation exactly",
        "tests": [
            {
                "name": "float16 mul then add",
                "graph": {
                    "inputs": {
                        "a": {"descriptor": desc("float16", [4]), "data": a16.tolist()},
                        "b": {"descriptor": desc("float16", [4]), "data": b16.tolist()},
                    },
                    "operators": [
                        {"name": "mul", "arguments": [{"a": "a"}, {"b": "b"}], "outputs": "ab"},
                        {"name": "add", "arguments": [{"a": "ab"}, {"b": "a"}], "outputs": "y"},
                    ],
                    "expectedOutputs": {
                        "y": {
                            "descriptor": desc("float16", [4]),
                            "data": (a16.astype(np.float64) * b16 + a16).tolist(),
                        }
                    },
                },
            },
            {
                "name": "int64 add beyond 2^53",
                "graph": {
                    "inputs": {
                        "a": {"descriptor": desc("int64", [4]), "data": big},
                        "b": {
                            "descriptor": desc("int64", [4]),
                            "data": ["1n", "-1n", "1n", "9007199254740992n"],
                            "constant": True,
                        },
                    },
                    "operators": [{"name": "add", "arguments": [{"a": "a"}, {"b": "b"}], "outputs": "y"}],
                    "expectedOutputs": {
                        "y": {
                            "descriptor": desc("int64", [4]),
                            "data": [
                                "9007199254740994n",
                                "-9007199254740994n",
                                "4611686018427387905n",
                                "9007199254740993n",
                            ],
                        }
                    },
                },
            },
            {
                "name": "cast float32 to int32 and float16",
                "graph": {
                    "inputs": {"x": {"descriptor": desc("float32", [5]), "data": [1.75, -2.5, 60000.0, 0.1, -0.0]}},
                    "operators": [
                        {"name": "cast", "arguments": [{"input": "x"}, {"type": "int32"}], "outputs": "i"},
                        {"name": "cast", "arguments": [{"input": "x"}, {"type": "float16"}], "outputs": "h"},
                    ],
                    "expectedOutputs": {
                        "i": {"descriptor": desc("int32", [5]), "data": [1, -2, 60000, 0, 0]},
                        "h": {
                            "descriptor": desc("float16", [5]),
                            "data": np.array([1.75, -2.5, 60000.0, 0.1, -0.0], np.float32)
                            .astype(np.float16)
                            .astype(np.float64)
                            .tolist(),
                        },
                    },
                },
            },
        ],
    }


def main() -> None:
    for name, make in (("tiny_cnn", tiny_cnn), ("digits_mlp", digits_mlp), ("dtypes", dtypes)):
        data = make()
        text = json.dumps(data, indent=1, allow_nan=False)
        (HERE / f"{name}.json").write_text(text + "\n", encoding="utf-8")
        print(f"{name}.json: {len(text)} bytes")


if __name__ == "__main__":
    main()
