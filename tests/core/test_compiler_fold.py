"""Compiler pass: constant folding (py_core/compiler/fold.py) against the unoptimized graph."""

from __future__ import annotations

from compiler_check import compare, const, only, ops_of

FOLD = only(fold=True)


def test_constant_chains_fold_away() -> None:
    def make(b):
        w = b.transpose(b.cast(const(b, (8, 4), dtype="float16"), "float32"))  # f16 weights, as TFLite ships
        scale = b.mul(const(b, (4, 8), seed=2), const(b, (1, 8), seed=3))
        x = b.input("x", {"dataType": "float32", "shape": [3, 4]})
        return {"y": b.add(b.matmul(x, b.add(w, scale)), const(b, (8,), seed=4))}

    exe = compare(make, FOLD)
    assert ops_of(exe) == ["matmul", "add"]


def test_graph_output_folded_to_a_constant_is_copied_out() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [2]})
        return {"c": b.neg(const(b, (2,))), "y": b.relu(x)}

    exe = compare(make, FOLD)
    first = exe.run({"x": const.__globals__["np"].zeros(2, "float32")})["c"]
    first[:] = 7  # a caller writing into a result must not change the next run
    assert (exe.run({"x": first * 0})["c"] != 7).all()


def test_huge_expansions_stay_at_run_time() -> None:
    def make(b):
        x = b.input("x", {"dataType": "float32", "shape": [1]})
        big = b.expand(const(b, (1,)), [1024, 1024])
        return {"y": b.add(big, x)}

    exe = compare(make, FOLD, runs=1)
    assert "expand" in ops_of(exe)
