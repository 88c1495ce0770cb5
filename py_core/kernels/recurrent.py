"""Recurrent network kernels (NumPy): gru, gruCell, lstm, lstmCell.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gru

Every kernel computes in float64 and rounds once to the input's type at the end: the recurrence feeds each
step's rounding error into the next, and WPT allows only 3-6 ULP against a double-precision reference.
Weights are first permuted to one canonical gate order (gru: z, r, n; lstm: i, o, f, g); the input
projections of all time steps are one product, and only the recurrent part loops, over time steps.  With the C
kernels loaded both run in C (native.project; native.gru_loop, native.lstm_loop: a whole direction per call, the
NumPy steps' float64 operations in their order); the NumPy code below stays the reference.  A gru or lstm node with
constant weights is packed at build (`PackedRecurrent`, the `pack` trait): its weights prepared once, held as
float64 in place of the float32 constants.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from py_core.kernels import native
from py_core.kernels.traits import KernelTraits, Packed, PackSite

Act = Callable[[np.ndarray], np.ndarray]
Opt = np.ndarray | None  # an optional operand: absent from the graph -> None
WIDE = np.float64


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp of -|x| never overflows, and the small tail keeps full relative precision
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _relu(x: np.ndarray) -> np.ndarray:
    # NaN stays NaN (np.maximum propagates it)
    return np.maximum(x, 0.0)


_ACTS: dict[str, Act] = {"sigmoid": _sigmoid, "tanh": np.tanh, "relu": _relu}

# Position of each canonical gate's block in the given layout.
_GRU_ORDER = {"zrn": (0, 1, 2), "rzn": (1, 0, 2)}  # canonical z, r, n
_LSTM_ORDER = {"iofg": (0, 1, 2, 3), "ifgo": (0, 3, 1, 2)}  # canonical i, o, f, g


def _canonical(a: np.ndarray, order: Sequence[int]) -> np.ndarray:
    """Reorder the gate blocks along the first axis into canonical order, widened to float64 (C-contiguous)."""
    if list(order) == sorted(order):  # the canonical layout itself: one widening copy
        return np.ascontiguousarray(a, dtype=WIDE)
    blocks = np.split(a.astype(WIDE), len(order), axis=0)
    return np.concatenate([blocks[i] for i in order], axis=0)


def _maybe(a: np.ndarray | None, order: Sequence[int]) -> np.ndarray | None:
    """_canonical for an optional operand."""
    return None if a is None else _canonical(a, order)


def _wide(a: np.ndarray | None) -> np.ndarray | None:
    return None if a is None else np.ascontiguousarray(a, dtype=WIDE)


Weights = dict[str, list[np.ndarray | None]]  # a loop operand's name -> each direction's float64 array
# weight operand -> (its name in the steps and loops, whether its gate blocks are reordered)
_GRU_WEIGHTS = {"weight": ("weight", True), "recurrentWeight": ("r_w", True), "bias": ("bias", True),
                "recurrentBias": ("r_b", True)}
_LSTM_WEIGHTS = {**_GRU_WEIGHTS, "peepholeWeight": ("peep", False)}  # peepholes (i, o, f): in no layout


def _weights(table: Mapping[str, tuple[str, bool]], order: Sequence[int], dirs: int,
             operands: Mapping[str, np.ndarray | None]) -> Weights:
    """The weight operands of `table` present in `operands` (None: absent), each direction canonical float64."""
    out: Weights = {}
    for name, a in operands.items():
        key, reorder = table[name]
        out[key] = [None if a is None else _maybe(a[d], order) if reorder else _wide(a[d]) for d in range(dirs)]
    return out


def _state(a: np.ndarray) -> np.ndarray:
    """A state as a new C-contiguous float64 array (the C loops update it in place)."""
    return np.array(a, WIDE, order="C")


def _gru_step(xw: np.ndarray, h: np.ndarray, r_w: np.ndarray, r_b: np.ndarray | None, hidden: int,
              reset_after: bool, f: Act, g: Act) -> np.ndarray:
    """One GRU step.  `xw` = input @ W^T + bias, canonical (z, r, n) along the last axis."""
    hh = h @ r_w.T if reset_after else h @ r_w[: 2 * hidden].T
    if r_b is not None:
        hh = hh + r_b[: hh.shape[-1]]
    z = f(xw[:, :hidden] + hh[:, :hidden])
    r = f(xw[:, hidden:2 * hidden] + hh[:, hidden:2 * hidden])
    if reset_after:
        n = g(xw[:, 2 * hidden:] + r * hh[:, 2 * hidden:])
    else:
        rb_n = 0.0 if r_b is None else r_b[2 * hidden:]
        n = g(xw[:, 2 * hidden:] + rb_n + (r * h) @ r_w[2 * hidden:].T)
    return z * h + (1.0 - z) * n


def _lstm_step(xw: np.ndarray, h: np.ndarray, c: np.ndarray, r_w: np.ndarray, r_b: np.ndarray | None,
               peep: np.ndarray | None, hidden: int, acts: Sequence[Act]) -> tuple[np.ndarray, np.ndarray]:
    """One LSTM step.  `xw` = input @ W^T + bias, canonical (i, o, f, g) along the last axis."""
    pre = xw + h @ r_w.T
    if r_b is not None:
        pre = pre + r_b
    i_pre, o_pre, f_pre, g_pre = (pre[:, k * hidden:(k + 1) * hidden] for k in range(4))
    if peep is not None:
        # peepholes (i, o, f) look at the previous cell state, as in the spec's emulation and webnn-baseline
        i_pre = i_pre + c * peep[:hidden]
        o_pre = o_pre + c * peep[hidden:2 * hidden]
        f_pre = f_pre + c * peep[2 * hidden:]
    gate, cell, out = acts
    c_next = gate(f_pre) * c + gate(i_pre) * cell(g_pre)
    return gate(o_pre) * out(c_next), c_next


def _gru_native(xw: np.ndarray, h: np.ndarray, r_w: np.ndarray, r_b: np.ndarray | None, reset_after: bool,
                acts: Sequence[str], seq: np.ndarray | None = None, d: int = 0, backward: bool = False) -> bool:
    """Run every step of `xw` [steps, batch, 3 hidden] in C, updating h in place, if the C kernels are loaded and
    take these operands; False: the caller runs the NumPy steps."""
    if not native.recurrent_ok(3, xw, r_w, r_b, None, [h], seq, d, acts):
        return False
    native.gru_loop(xw, r_w, r_b, h, seq, d, backward, reset_after, acts)
    return True


def _lstm_native(xw: np.ndarray, h: np.ndarray, c: np.ndarray, r_w: np.ndarray, r_b: np.ndarray | None,
                 peep: np.ndarray | None, acts: Sequence[str], seq: np.ndarray | None = None, d: int = 0,
                 backward: bool = False) -> bool:
    """_gru_native for lstm: h and c updated in place."""
    if not native.recurrent_ok(4, xw, r_w, r_b, peep, [h, c], seq, d, acts):
        return False
    native.lstm_loop(xw, r_w, r_b, peep, h, c, seq, d, backward, acts)
    return True


def _project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """input @ W^T (+ bias) for every leading index at once (in C when loaded)."""
    if native.project_ok(x, w, b):
        return native.project(x, w, b)
    xw = x @ w.T
    return xw if b is None else xw + b


Loop = Callable[..., bool]  # (xw, states, seq, d, backward, **per-direction operands) -> ran every step in C


def _sequence(cell_step: Callable[..., tuple[np.ndarray, ...]], loop: Loop, x: np.ndarray, n_states: int,
              backward_only: bool, initial: Sequence[np.ndarray | None], weights: Weights, hidden: int,
              return_sequence: bool) -> list[np.ndarray]:
    """Run each direction's time steps, all in one `loop` call or `cell_step` by step; states in,
    [states..., sequence?] out."""
    steps, batch, dirs = x.shape[0], x.shape[1], len(weights["weight"])
    finals = [np.zeros((dirs, batch, hidden), WIDE) for _ in range(n_states)]
    seq = np.zeros((steps, dirs, batch, hidden), WIDE) if return_sequence else None
    for d in range(dirs):
        p = {key: per_dir[d] for key, per_dir in weights.items()}
        xw = _project(x, p.pop("weight"), p.pop("bias"))  # type: ignore[arg-type]  # weight is never None
        states = tuple(np.zeros((batch, hidden), WIDE) if s is None else _state(s[d]) for s in initial)
        backward = backward_only or d == 1
        if not loop(xw, states, seq, d, backward, **p):
            for t in (range(steps - 1, -1, -1) if backward else range(steps)):
                states = cell_step(xw[t], *states, **p)
                if seq is not None:
                    seq[t, d] = states[0]
        for k in range(n_states):
            finals[k][d] = states[k]
    return finals + ([seq] if seq is not None else [])


def _gru(input: np.ndarray, weights: Weights, hiddenSize: int, *, resetAfter: bool, returnSequence: bool,
         direction: str, activations: Sequence[str], initialHiddenState: Opt = None) -> list[np.ndarray]:
    """gru over weights already canonical and float64 (`_weights`)."""
    hidden = hiddenSize
    f, g = (_ACTS[a] for a in activations)

    def step(xw: np.ndarray, h: np.ndarray, r_w: np.ndarray, r_b: np.ndarray | None) -> tuple[np.ndarray]:
        return (_gru_step(xw, h, r_w, r_b, hidden, resetAfter, f, g),)

    def loop(xw: np.ndarray, states: Sequence[np.ndarray], seq: np.ndarray | None, d: int, backward: bool,
             r_w: np.ndarray, r_b: np.ndarray | None) -> bool:
        return _gru_native(xw, states[0], r_w, r_b, resetAfter, activations, seq, d, backward)

    outs = _sequence(step, loop, input.astype(WIDE), 1, direction == "backward", [initialHiddenState], weights,
                     hidden, returnSequence)
    return [o.astype(input.dtype) for o in outs]


def gru(input: np.ndarray, weight: np.ndarray, recurrentWeight: np.ndarray, steps: int, hiddenSize: int, *,
        resetAfter: bool, returnSequence: bool, direction: str, layout: str, activations: Sequence[str],
        bias: Opt = None, recurrentBias: Opt = None, initialHiddenState: Opt = None) -> list[np.ndarray]:
    """gru over all time steps.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gru"""
    weights = _weights(_GRU_WEIGHTS, _GRU_ORDER[layout], weight.shape[0], {
        "weight": weight, "recurrentWeight": recurrentWeight, "bias": bias, "recurrentBias": recurrentBias})
    return _gru(input, weights, hiddenSize, resetAfter=resetAfter, returnSequence=returnSequence,
                direction=direction, activations=activations, initialHiddenState=initialHiddenState)


def gru_cell(input: np.ndarray, weight: np.ndarray, recurrentWeight: np.ndarray, hiddenState: np.ndarray,
             hiddenSize: int, *, resetAfter: bool, layout: str, activations: Sequence[str],
             bias: Opt = None, recurrentBias: Opt = None) -> np.ndarray:
    """gruCell: one time step.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-grucell"""
    order, hidden = _GRU_ORDER[layout], hiddenSize
    f, g = (_ACTS[a] for a in activations)
    xw = _project(input.astype(WIDE), _canonical(weight, order), _maybe(bias, order))
    r_w, r_b, h = _canonical(recurrentWeight, order), _maybe(recurrentBias, order), _state(hiddenState)
    if not _gru_native(xw[None], h, r_w, r_b, resetAfter, activations):
        h = _gru_step(xw, h, r_w, r_b, hidden, resetAfter, f, g)
    return h.astype(input.dtype)


def _lstm(input: np.ndarray, weights: Weights, hiddenSize: int, *, returnSequence: bool, direction: str,
          activations: Sequence[str], initialHiddenState: Opt = None, initialCellState: Opt = None) -> list[np.ndarray]:
    """lstm over weights already canonical and float64 (`_weights`)."""
    hidden = hiddenSize
    acts = [_ACTS[a] for a in activations]

    def step(xw: np.ndarray, h: np.ndarray, c: np.ndarray, r_w: np.ndarray, r_b: np.ndarray | None,
             peep: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        return _lstm_step(xw, h, c, r_w, r_b, peep, hidden, acts)

    def loop(xw: np.ndarray, states: Sequence[np.ndarray], seq: np.ndarray | None, d: int, backward: bool,
             r_w: np.ndarray, r_b: np.ndarray | None, peep: np.ndarray | None) -> bool:
        return _lstm_native(xw, *states, r_w, r_b, peep, activations, seq, d, backward)

    outs = _sequence(step, loop, input.astype(WIDE), 2, direction == "backward",
                     [initialHiddenState, initialCellState], weights, hidden, returnSequence)
    return [o.astype(input.dtype) for o in outs]


def lstm(input: np.ndarray, weight: np.ndarray, recurrentWeight: np.ndarray, steps: int, hiddenSize: int, *,
         returnSequence: bool, direction: str, layout: str, activations: Sequence[str], bias: Opt = None,
         recurrentBias: Opt = None, peepholeWeight: Opt = None, initialHiddenState: Opt = None,
         initialCellState: Opt = None) -> list[np.ndarray]:
    """lstm over all time steps.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-lstm"""
    weights = _weights(_LSTM_WEIGHTS, _LSTM_ORDER[layout], weight.shape[0], {
        "weight": weight, "recurrentWeight": recurrentWeight, "bias": bias, "recurrentBias": recurrentBias,
        "peepholeWeight": peepholeWeight})
    return _lstm(input, weights, hiddenSize, returnSequence=returnSequence, direction=direction,
                 activations=activations, initialHiddenState=initialHiddenState, initialCellState=initialCellState)


def lstm_cell(input: np.ndarray, weight: np.ndarray, recurrentWeight: np.ndarray, hiddenState: np.ndarray,
              cellState: np.ndarray, hiddenSize: int, *, layout: str, activations: Sequence[str],
              bias: Opt = None, recurrentBias: Opt = None, peepholeWeight: Opt = None) -> list[np.ndarray]:
    """lstmCell: one time step, [hidden, cell].  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-lstmcell"""
    order, hidden = _LSTM_ORDER[layout], hiddenSize
    xw = _project(input.astype(WIDE), _canonical(weight, order), _maybe(bias, order))
    r_w, r_b, peep = _canonical(recurrentWeight, order), _maybe(recurrentBias, order), _wide(peepholeWeight)
    h, c = _state(hiddenState), _state(cellState)
    if not _lstm_native(xw[None], h, c, r_w, r_b, peep, activations):
        h, c = _lstm_step(xw, h, c, r_w, r_b, peep, hidden, [_ACTS[a] for a in activations])
    return [h.astype(input.dtype), c.astype(input.dtype)]


@dataclass(frozen=True)
class _Family:
    """What a packed kernel needs of gru or lstm."""

    run: Callable[..., list[np.ndarray]]  # _gru or _lstm: the kernel over prepared weights
    table: Mapping[str, tuple[str, bool]]  # its weight operands (_GRU_WEIGHTS, _LSTM_WEIGHTS)
    orders: Mapping[str, Sequence[int]]  # layout -> canonical gate order
    states: tuple[str, ...]  # its initial state operands, in the loop's order
    gates: int
    # one direction's C time loop over fixed buffers: (xw, that direction's weights, states, seq, d, backward,
    # options)
    bind: Callable[..., native.Bound]


def _bind_gru(xw: np.ndarray, w: Mapping[str, np.ndarray | None], states: Sequence[np.ndarray], seq: Opt, d: int,
              backward: bool, o: Mapping[str, Any]) -> native.Bound:
    return native.bind_gru_loop(xw, w["r_w"], w["r_b"], states[0], seq, d, backward,  # type: ignore[arg-type]
                                o["resetAfter"], o["activations"])


def _bind_lstm(xw: np.ndarray, w: Mapping[str, np.ndarray | None], states: Sequence[np.ndarray], seq: Opt, d: int,
               backward: bool, o: Mapping[str, Any]) -> native.Bound:
    return native.bind_lstm_loop(xw, w["r_w"], w["r_b"], w["peep"], states[0], states[1],  # type: ignore[arg-type]
                                 seq, d, backward, o["activations"])


class _BoundRun:
    """A packed gru or lstm whose every weight is held, bound to float64 buffers of the node's shapes: a run widens
    the input into `x`, sets the states and makes two C calls per direction (projection, time loop), checked once
    at binding; the results are the buffers rounded to the input's type, new arrays."""

    def __init__(self, family: _Family, weights: Weights, options: Mapping[str, Any], shape: tuple[int, ...],
                 dirs: int):
        steps, batch, _ = shape
        hidden = int(options["hiddenSize"])
        self.x = np.empty(shape, WIDE)
        self.finals = [np.empty((dirs, batch, hidden), WIDE) for _ in family.states]
        seq = np.empty((steps, dirs, batch, hidden), WIDE) if options["returnSequence"] else None
        xw = np.empty((steps, batch, family.gates * hidden), WIDE)
        self.outs = self.finals + ([seq] if seq is not None else [])
        self.calls: list[native.Bound] = []
        for d in range(dirs):  # one xw serves every direction: each projection is read by its loop before the next
            w = {key: per_dir[d] for key, per_dir in weights.items()}
            self.calls.append(native.bind_project(self.x, w["weight"], w["bias"], xw))  # type: ignore[arg-type]
            backward = options["direction"] == "backward" or d == 1
            self.calls.append(family.bind(xw, w, [f[d] for f in self.finals], seq, d, backward, options))

    def __call__(self, input: np.ndarray, initial: Sequence[np.ndarray | None]) -> list[np.ndarray]:
        np.copyto(self.x, input)
        for buf, state in zip(self.finals, initial, strict=True):
            if state is None:
                buf.fill(0.0)
            else:
                np.copyto(buf, state)
        for call in self.calls:
            call()
        return [o.astype(input.dtype) for o in self.outs]


class PackedRecurrent:
    """gru or lstm with its constant weight operands made canonical float64 once, at build.  With every weight held
    and the C kernels loaded a run is a `_BoundRun`; otherwise it prepares the weights computed at run time
    (`_weights`) and runs the kernel as the reference does."""

    def __init__(self, family: _Family, order: Sequence[int], dirs: int, held: Weights, options: Mapping[str, Any],
                 shape: tuple[int, ...], bindable: bool):
        self.family, self.order, self.dirs, self.held, self.options = family, order, dirs, held, dict(options)
        self.shape, self.bindable = shape, bindable
        # the held weights as one tuple: what Executable.memory() counts of a kernel
        self.arrays = tuple(a for per_dir in held.values() for a in per_dir if a is not None)
        self.bound: _BoundRun | None = None

    def _bound(self) -> _BoundRun | None:
        """The bound run for the C kernels loaded now (bound again after they were switched off and on)."""
        if self.bound is not None and self.bound.calls[0].live():
            return self.bound
        self.bound = None
        if self.bindable and native.available():
            try:
                self.bound = _BoundRun(self.family, self.held, self.options, self.shape, self.dirs)
            except native.NativeRangeError:  # the C loops refuse these operands: the NumPy steps, as unpacked
                self.bindable = False
        return self.bound

    def __call__(self, input: np.ndarray, **operands: np.ndarray) -> list[np.ndarray]:
        bound = self._bound()
        if bound is not None:
            return bound(input, [operands.get(n) for n in self.family.states])
        table = self.family.table
        weights = {**self.held, **_weights(table, self.order, self.dirs,
                                           {n: a for n, a in operands.items() if n in table})}
        states = {n: a for n, a in operands.items() if n not in table}
        return self.family.run(input, weights, **states, **self.options)


def _packer(family: _Family) -> Callable[[PackSite], Packed | None]:
    """The `pack` trait of gru or lstm: its constant and absent weight operands held prepared; None when every
    weight is computed at run time (the reference kernel then)."""

    def pack(site: PackSite) -> Packed | None:
        table = family.table
        held = {n: site.constants.get(n) for n in table if site.constants.get(n) is not None or n not in site.shapes}
        if all(held[n] is None for n in held):
            return None
        options = {k: v for k, v in site.options.items() if k not in ("steps", "layout")}
        order, dirs = family.orders[site.options["layout"]], site.shapes["weight"][0]
        kernel = PackedRecurrent(family, order, dirs, _weights(table, order, dirs, held), options,
                                 site.shapes["input"], bindable=len(held) == len(table))
        return Packed(kernel, tuple(n for n in site.shapes if n not in held), "prepacked")

    return pack


KERNELS: dict[str, Callable[..., object]] = {
    "gru": gru,
    "gruCell": gru_cell,
    "lstm": lstm,
    "lstmCell": lstm_cell,
}

TRAITS: dict[str, KernelTraits] = {
    "gru": KernelTraits(fresh=True, pack=_packer(_Family(_gru, _GRU_WEIGHTS, _GRU_ORDER, ("initialHiddenState",), 3,
                                                         _bind_gru))),
    "lstm": KernelTraits(fresh=True, pack=_packer(_Family(_lstm, _LSTM_WEIGHTS, _LSTM_ORDER,
                                                          ("initialHiddenState", "initialCellState"), 4,
                                                          _bind_lstm))),
}
