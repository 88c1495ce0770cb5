"""Fuzz the TFLite loader with truncated and corrupted real models: only a load or a TFLiteModelError may come out.

Each case takes one of the MediaPipe models of web/mediapipe_models.py (round robin) and damages it one way:

- `truncate`: cut at a random byte;
- `flip`: flip 1-4 random bits;
- `word`: overwrite one aligned 32-bit word with 0, 1, 0x7fffffff, 0x80000000 or 0xffffffff, which is what
  hits offsets, vector lengths, indices and sizes;

Flips and words land in the model's structure (everything outside the weight buffers: tables, vtables,
shapes, sparsity metadata) 9 times in 10, since damage to weights only changes values and loads fine.

then reads it (`read_tflite`), emits it through py_core's GraphBuilder and builds the graph.  Anything other
than success or `py_core.errors.TFLiteModelError` is a finding, and so is a case whose traced allocation peak
(tracemalloc, which NumPy reports to) exceeds MEMORY_FACTOR times the peak of loading the same model intact
(plus 1 MiB): the loader must allocate no more than the file can justify.  Cases are reproducible from (seed, index).

    .venv/bin/python scripts/fuzz_tflite.py --cases 2000            # the deep run (about 10 cases/s here)
    .venv/bin/python scripts/fuzz_tflite.py --seconds 600 --seed 7 --model pose_detection
    tests/core/test_tflite_fuzz.py runs a fixed 15 cases of seed 0 on three of the models in make test.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's py_core and web

from py_core.errors import TFLiteModelError  # noqa: E402
from py_core.loaders import GraphBuilderAdapter, build_tflite, read_tflite  # noqa: E402
from web import mediapipe_models as models  # noqa: E402

WORDS = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF)
KINDS = ("truncate", "flip", "word")
# an intact model's load peaks at 3-8 times its file size (float16 weights become float32, the builder keeps
# its own copies, densify's index arrays); a damaged one may not go beyond twice that
MEMORY_FACTOR = 2.0
MEMORY_SLACK = 1 << 20


@dataclass
class Report:
    """Outcome counts per (kind, outcome), the worst traced peak, findings with their (seed, index)."""

    seed: int
    counts: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    peak: int = 0
    peak_case: str = ""
    findings: list[str] = field(default_factory=list)
    cases: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        by_outcome = collections.Counter[str]()
        for (_, outcome), n in self.counts.items():
            by_outcome[outcome] += n
        lines = [f"{self.cases} cases (seed {self.seed}) in {self.seconds:.1f} s: "
                 + ", ".join(f"{k} {v}" for k, v in sorted(by_outcome.items())),
                 "  per kind: " + ", ".join(f"{k}/{o} {n}" for (k, o), n in sorted(self.counts.items())),
                 f"  largest traced allocation peak {self.peak / 2**20:.1f} MiB ({self.peak_case})",
                 f"  findings: {len(self.findings)}"]
        return "\n".join(lines + [f"    {f}" for f in self.findings[:20]])


def load_models(names: list[str] | None = None) -> dict[str, bytes]:
    """The model files by name (all of web/mediapipe_models.py's by default)."""
    return {n: Path(models.model_path(n)).read_bytes() for n in (names or list(models.MODELS))}


def weight_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) byte ranges of the intact model's weight buffers."""
    import numpy as np
    import tflite

    model = tflite.Model.GetRootAsModel(data, 0)
    base = np.frombuffer(data, np.uint8).__array_interface__["data"][0]
    spans = []
    for i in range(model.BuffersLength()):
        b = model.Buffers(i)
        if b.DataLength():
            start = b.DataAsNumpy().__array_interface__["data"][0] - base
            spans.append((start, start + b.DataLength()))
    return spans


def structure_position(data: bytes, spans: list[tuple[int, int]], rng: random.Random) -> int:
    """A byte position outside the weights 9 times in 10, else anywhere."""
    if rng.random() < 0.9:
        for _ in range(100):
            p = rng.randrange(len(data))
            if not any(a <= p < b for a, b in spans):
                return p
    return rng.randrange(len(data))


def mutate(data: bytes, rng: random.Random, spans: list[tuple[int, int]] | None = None) -> tuple[str, bytes, str]:
    """(kind, damaged bytes, what was done) for one case."""
    spans = spans or []
    kind = rng.choice(KINDS)
    if kind == "truncate":
        # half the cuts in the first 4 KiB, where the root tables and vtables of these models start
        cut = rng.randrange(min(4096, len(data))) if rng.random() < 0.5 else rng.randrange(len(data))
        return kind, data[:cut], f"cut at {cut}"
    out = bytearray(data)
    if kind == "flip":
        spots = [(structure_position(data, spans, rng), rng.randrange(8)) for _ in range(rng.choice((1, 1, 2, 4)))]
        for pos, bit in spots:
            out[pos] ^= 1 << bit
        return kind, bytes(out), "bits " + ", ".join(f"{p}.{b}" for p, b in spots)
    pos = structure_position(data, spans, rng) // 4 * 4
    word = rng.choice(WORDS)
    out[pos:pos + 4] = word.to_bytes(4, "little")
    return kind, bytes(out), f"word at {pos} = {word:#x}"


def load(data: bytes, label: str) -> None:
    """What the fuzzer drives: parse, emit through py_core's GraphBuilder, build."""
    build_tflite(read_tflite(data, name=label), GraphBuilderAdapter())


def cases(models_: dict[str, bytes], seed: int) -> Iterator[tuple[int, str, str, bytes, str]]:
    """(index, model, kind, damaged bytes, what) forever, reproducible from the seed."""
    rng = random.Random(seed)
    names = sorted(models_)
    spans = {n: weight_spans(d) for n, d in models_.items()}
    i = 0
    while True:
        name = names[i % len(names)]
        kind, data, what = mutate(models_[name], rng, spans[name])
        yield i, name, kind, data, what
        i += 1


def intact_peaks(models_: dict[str, bytes]) -> dict[str, int]:
    """The traced allocation peak of loading each intact model (the memory baselines)."""
    peaks = {}
    for name, data in models_.items():
        tracemalloc.start()
        try:
            load(data, name)
            peaks[name] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    return peaks


def run(models_: dict[str, bytes], *, seed: int = 0, max_cases: int | None = None,
        seconds: float | None = None) -> Report:
    """Fuzz until max_cases or seconds run out; every case is checked as the module docstring says."""
    report = Report(seed)
    limits = {n: MEMORY_FACTOR * p + MEMORY_SLACK for n, p in intact_peaks(models_).items()}
    t0 = time.perf_counter()
    for i, name, kind, data, what in cases(models_, seed):
        if (max_cases is not None and i >= max_cases) or (seconds is not None and time.perf_counter() - t0 > seconds):
            break
        label = f"{name}.tflite ({what})"
        tracemalloc.start()
        try:
            load(data, label)
            outcome = "ok"
        except TFLiteModelError as e:
            outcome = type(e).__name__
            if not str(e).startswith(f"{label}: "):
                report.findings.append(f"#{i} {label}: message names no model: {e}")
        except Exception as e:  # noqa: BLE001 - every other exception is what this looks for
            outcome = f"{type(e).__name__} (finding)"
            report.findings.append(f"#{i} {label}: {type(e).__name__}: {e}")
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        if peak > report.peak:
            report.peak, report.peak_case = peak, f"#{i} {label}"
        if peak > limits[name]:
            report.findings.append(f"#{i} {label}: allocated {peak / 2**20:.1f} MiB, over "
                                   f"{limits[name] / 2**20:.1f}")
        report.counts[kind, outcome] += 1
        report.cases = i + 1
    report.seconds = time.perf_counter() - t0
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--cases", type=int, help="stop after this many cases")
    ap.add_argument("--seconds", type=float, help="stop after this long (default 60 s without --cases)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", action="append", help="a model of web/mediapipe_models.py (repeatable; default all)")
    args = ap.parse_args(argv)
    seconds = args.seconds if args.seconds is not None or args.cases is not None else 60.0
    found = load_models(args.model)
    print(f"models: {', '.join(f'{n} ({len(d)} bytes)' for n, d in sorted(found.items()))}")
    report = run(found, seed=args.seed, max_cases=args.cases, seconds=seconds)
    print(report.summary())
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
