"""Recurrent networks (gru, gruCell, lstm, lstmCell): validation and shape inference.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gru"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from py_core.spec.table import (
    ABSENT,
    BOOLEAN,
    ULONG,
    OpCall,
    OpSpec,
    Param,
    enum,
    operand,
    value,
)
from py_core.types import FLOATS, MAX_DIMENSION, OperandDescriptor

FAMILY = "recurrent"

ACTIVATIONS = ("relu", "sigmoid", "tanh")
DIRECTIONS = ("forward", "backward", "both")
GRU_LAYOUTS = ("zrn", "rzn")
LSTM_LAYOUTS = ("iofg", "ifgo")
GRU_DEFAULT_ACTIVATIONS = ("sigmoid", "tanh")
LSTM_DEFAULT_ACTIVATIONS = ("sigmoid", "tanh", "tanh")


def _f(name: str, rank: int, optional: bool = False) -> Param:
    """A float32/float16 operand of one exact rank; all but `input` must match the input's type."""
    same = "" if name == "input" else "input"
    return operand(name, FLOATS, ranks=(rank, rank), same_type_as=same, optional=optional)


def _expect(call: OpCall, name: str, shape: Sequence[int]) -> None:
    """Fail unless operand `name` (if given) has exactly `shape`."""
    d = call.optional(name)
    if d is not None and list(d.shape) != list(shape):
        call.fail(f"{name} shape {list(d.shape)} must be {list(shape)}")


def _hidden_size(call: OpCall, gates: int) -> int:
    """hiddenSize must be positive and gates*2*hiddenSize a valid dimension (fused-bias backends)."""
    hidden = int(call["hiddenSize"])
    if hidden < 1:
        call.fail(f"hiddenSize ({hidden}) must be greater than 0")
    if hidden * 2 * gates > MAX_DIMENSION:
        call.fail(f"hiddenSize ({hidden}) x {2 * gates} is not a valid dimension")
    return hidden


def _activations(call: OpCall, defaults: tuple[str, ...]) -> list[str]:
    """The given activations, which must have the required length, or the defaults."""
    acts = call.options.get("activations")
    if acts is None:
        return list(defaults)
    if len(acts) != len(defaults):
        call.fail(f"activations {list(acts)} must have {len(defaults)} values")
    return list(acts)


def _activation_options(defaults: tuple[str, ...]) -> Callable[[OpCall], dict[str, Any]]:
    """The activations filled in with the defaults when absent."""
    return lambda call: {"activations": _activations(call, defaults)}


def _sequence_shape(call: OpCall, gates: int) -> tuple[int, int, int, int, int]:
    """Shared checks of gru and lstm: returns (steps, numDirections, batchSize, inputSize, hiddenSize)."""
    x = call.operand("input")
    steps = int(call["steps"])
    if steps < 1:
        call.fail(f"steps ({steps}) must be greater than 0")
    if x.shape[0] != steps:
        call.fail(f"input shape {list(x.shape)}: first dimension must equal steps ({steps})")
    hidden = _hidden_size(call, gates)
    dirs = 2 if call["direction"] == "both" else 1
    batch, size = x.shape[1], x.shape[2]
    _expect(call, "weight", (dirs, gates * hidden, size))
    _expect(call, "recurrentWeight", (dirs, gates * hidden, hidden))
    _expect(call, "bias", (dirs, gates * hidden))
    _expect(call, "recurrentBias", (dirs, gates * hidden))
    _expect(call, "initialHiddenState", (dirs, batch, hidden))
    return steps, dirs, batch, size, hidden


def _infer_gru(call: OpCall) -> list[OperandDescriptor]:
    """gru: [hidden] or [hidden, sequence].  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-gru"""
    steps, dirs, batch, _, hidden = _sequence_shape(call, 3)
    _activations(call, GRU_DEFAULT_ACTIVATIONS)
    x = call.operand("input")
    outs = [x.with_shape((dirs, batch, hidden))]
    if call["returnSequence"]:
        outs.append(x.with_shape((steps, dirs, batch, hidden)))
    return outs


def _infer_lstm(call: OpCall) -> list[OperandDescriptor]:
    """lstm: [hidden, cell] or [hidden, cell, sequence].  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-lstm"""
    steps, dirs, batch, _, hidden = _sequence_shape(call, 4)
    _expect(call, "peepholeWeight", (dirs, 3 * hidden))
    _expect(call, "initialCellState", (dirs, batch, hidden))
    _activations(call, LSTM_DEFAULT_ACTIVATIONS)
    x = call.operand("input")
    state = x.with_shape((dirs, batch, hidden))
    outs = [state, state]
    if call["returnSequence"]:
        outs.append(x.with_shape((steps, dirs, batch, hidden)))
    return outs


def _cell_shape(call: OpCall, gates: int) -> OperandDescriptor:
    """Shared checks of gruCell and lstmCell: returns the [batchSize, hiddenSize] state descriptor."""
    x = call.operand("input")
    hidden = _hidden_size(call, gates)
    batch, size = x.shape
    _expect(call, "weight", (gates * hidden, size))
    _expect(call, "recurrentWeight", (gates * hidden, hidden))
    _expect(call, "hiddenState", (batch, hidden))
    _expect(call, "bias", (gates * hidden,))
    _expect(call, "recurrentBias", (gates * hidden,))
    return x.with_shape((batch, hidden))


def _infer_gru_cell(call: OpCall) -> OperandDescriptor:
    """gruCell: the next hidden state.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-grucell"""
    out = _cell_shape(call, 3)
    _activations(call, GRU_DEFAULT_ACTIVATIONS)
    return out


def _infer_lstm_cell(call: OpCall) -> list[OperandDescriptor]:
    """lstmCell: [hidden, cell].  https://www.w3.org/TR/webnn/#api-mlgraphbuilder-lstmcell"""
    out = _cell_shape(call, 4)
    hidden = out.shape[1]
    _expect(call, "cellState", out.shape)
    _expect(call, "peepholeWeight", (3 * hidden,))
    _activations(call, LSTM_DEFAULT_ACTIVATIONS)
    return [out, out]


def _acts() -> Param:
    return enum("activations", "MLRecurrentNetworkActivation", ACTIVATIONS, ABSENT, many=True)


_SEQUENCE_PARAMS = (_f("input", 3), _f("weight", 3), _f("recurrentWeight", 3),
                    value("steps", ULONG), value("hiddenSize", ULONG))
_DIRECTION = enum("direction", "MLRecurrentNetworkDirection", DIRECTIONS, "forward")
_RETURN_SEQUENCE = value("returnSequence", BOOLEAN, False)

ROWS: list[OpSpec] = [
    OpSpec(
        "gru", FAMILY, _SEQUENCE_PARAMS,
        (_f("bias", 2, True), _f("recurrentBias", 2, True), _f("initialHiddenState", 3, True),
         value("resetAfter", BOOLEAN, True), _RETURN_SEQUENCE, _DIRECTION,
         enum("layout", "MLGruWeightLayout", GRU_LAYOUTS, "zrn"), _acts()),
        _infer_gru, output_ranks=(3, 4), returns="operands", limits_output_name="outputs",
        normalize=_activation_options(GRU_DEFAULT_ACTIVATIONS)),
    OpSpec(
        "gruCell", FAMILY,
        (_f("input", 2), _f("weight", 2), _f("recurrentWeight", 2), _f("hiddenState", 2),
         value("hiddenSize", ULONG)),
        (_f("bias", 1, True), _f("recurrentBias", 1, True), value("resetAfter", BOOLEAN, True),
         enum("layout", "MLGruWeightLayout", GRU_LAYOUTS, "zrn"), _acts()),
        _infer_gru_cell, output_ranks=(2, 2), normalize=_activation_options(GRU_DEFAULT_ACTIVATIONS)),
    OpSpec(
        "lstm", FAMILY, _SEQUENCE_PARAMS,
        (_f("bias", 2, True), _f("recurrentBias", 2, True), _f("peepholeWeight", 2, True),
         _f("initialHiddenState", 3, True), _f("initialCellState", 3, True), _RETURN_SEQUENCE,
         _DIRECTION, enum("layout", "MLLstmWeightLayout", LSTM_LAYOUTS, "iofg"), _acts()),
        _infer_lstm, output_ranks=(3, 4), returns="operands", limits_output_name="outputs",
        normalize=_activation_options(LSTM_DEFAULT_ACTIVATIONS)),
    OpSpec(
        "lstmCell", FAMILY,
        (_f("input", 2), _f("weight", 2), _f("recurrentWeight", 2), _f("hiddenState", 2),
         _f("cellState", 2), value("hiddenSize", ULONG)),
        (_f("bias", 1, True), _f("recurrentBias", 1, True), _f("peepholeWeight", 1, True),
         enum("layout", "MLLstmWeightLayout", LSTM_LAYOUTS, "iofg"), _acts()),
        _infer_lstm_cell, output_ranks=(2, 2), returns="operands", limits_output_name="outputs",
        normalize=_activation_options(LSTM_DEFAULT_ACTIVATIONS)),
]
