"""The graph compiler run at build(): constant folding, no-op removal, layout switching, epilogue fusion, weight
pre-packing and a memory plan, in that order; then the executor lowers what it can into a compiled plan (plan.py).  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-build

Every pass decides from the traits registered with each operator's kernel (py_core/kernels/traits.py) and names
no operator (tests/core/test_compiler_traits.py checks it); what a pass decided is recorded in the node's typed
fields (ir.Node: kernel, variant, epilogue, fresh).

`compile_graph(graph, constants, options)` returns the rewritten program and its memory plan; the executor
(py_core.runtime.executor.prepare) runs it.  Every pass keeps results within the WPT tolerances of the
reference kernels (tests/core/test_compiler_*.py compare optimized and unoptimized graphs).  Set
PYODIDE_WEBNN_COMPILER=0 (or pass CompileOptions.none()) to run the reference kernels as built.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from py_core.compiler.fold import fold_constants
from py_core.compiler.fuse import fuse_epilogues
from py_core.compiler.ir import Node, Program
from py_core.compiler.layout import switch_layouts
from py_core.compiler.memory import MemoryPlan, plan_memory
from py_core.compiler.pack import bind_epilogues, pack_weights
from py_core.compiler.plan import CompiledPlan, Segment, build_plan, env_off, plan_wanted
from py_core.compiler.simplify import remove_noops
from py_core.graph import Graph

ENV_SWITCH = "PYODIDE_WEBNN_COMPILER"


@dataclass(frozen=True)
class CompileOptions:
    """Which passes run; all of them by default."""

    fold: bool = True
    simplify: bool = True
    layout: bool = True
    fuse: bool = True
    pack: bool = True
    in_place: bool = True
    # run each run of C-capable steps as one call into the C kernels (compiler/plan.py; PYODIDE_WEBNN_PLAN=0: off)
    plan: bool = True

    @classmethod
    def none(cls) -> CompileOptions:
        """No pass: the graph's own operators with the reference kernels."""
        return cls(**{f.name: False for f in fields(cls)})

    @classmethod
    def default(cls) -> CompileOptions:
        """All passes, unless PYODIDE_WEBNN_COMPILER is 0/off/false (then none)."""
        off = env_off(ENV_SWITCH)
        return cls.none() if off else cls(plan=plan_wanted())

    @property
    def enabled(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self))


def compile_graph(graph: Graph, constants: dict[int, np.ndarray],
                  options: CompileOptions | None = None, *, take: bool = False) -> tuple[Program, MemoryPlan]:
    """Rewrite a validated graph for the executor; `constants` are its constant arrays by operand id.  With
    `take` the program takes them (the dict is emptied): each is freed as soon as a pass no longer needs it."""
    opts = CompileOptions.default() if options is None else options
    prog = Program.from_graph(graph, constants)
    if take:
        constants.clear()
    if opts.fold:
        fold_constants(prog)
    if opts.simplify:
        remove_noops(prog)
        remove_noops(prog)  # merged chains may have become no-ops
    if opts.layout:
        switch_layouts(prog)
    if opts.fuse:
        fuse_epilogues(prog)
    if opts.pack:
        pack_weights(prog)
    bind_epilogues(prog)  # fused nodes no packed kernel took
    plan = plan_memory(prog, in_place=opts.in_place)
    if plan.in_place:
        prog.note(f"memory: {plan.in_place} node(s) write into a dying input's buffer")
    return prog, plan


__all__ = ["CompileOptions", "CompiledPlan", "MemoryPlan", "Node", "Program", "Segment", "build_plan",
           "compile_graph"]
