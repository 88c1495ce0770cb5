"""The declarative operator table: one row per builder method.  https://www.w3.org/TR/webnn/#api-mlgraphbuilder

A row names the operator's positional arguments, the members of its options dictionary, the data types and
ranks each operand accepts, an `infer` function that maps operand descriptors and option values to output
descriptors, and, where the operator has any, a `normalize` function that gives the option values the graph
records (defaults that depend on the operands, computed output sizes, numbers cast to the input's type).
The same rows drive build-time validation (TypeError), worker-side re-validation, `opSupportLimits()` and the
list of builder methods the JavaScript side generates.  No NumPy here.

One call goes through three steps: `bind` converts its arguments (WebIDL conversion, static defaults) and
checks its operands' types and ranks; `infer_outputs` runs `infer`, a pure function of the bound call (its
options are read-only); `normalize` gives the canonical options of a call `infer` accepted.  Validating the
canonical options infers the same outputs, so the worker re-validates what the page recorded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NoReturn

from py_core.errors import WebNNTypeError
from py_core.spec.required import REQUIRED as DRAFT_REQUIRED
from py_core.types import (
    ALL_TYPES,
    MAX_DIMENSION,
    MAX_RANK,
    MAX_TENSOR_BYTE_LENGTH,
    MAX_UNSIGNED_LONG,
    DataType,
    OperandDescriptor,
)

SPEC_URL = "https://www.w3.org/TR/webnn/"

# Sentinels for Param.default
REQUIRED: Any = object()
ABSENT: Any = None  # an optional member with no default: absent -> None

# IDL kinds understood by both the Python and the JavaScript converters.
OPERAND = "MLOperand"
OPERANDS = "sequence<MLOperand>"
ULONG = "unsigned long"
ULONGS = "sequence<unsigned long>"
ULONG_OR_ULONGS = "(unsigned long or sequence<unsigned long>)"
LONG = "long"
LONGS = "sequence<long>"
DOUBLE = "double"
FLOAT = "float"
FLOATS_SEQ = "sequence<float>"
BOOLEAN = "boolean"
NUMBER = "MLNumber"
ENUM = "enum"
ENUMS = "sequence<enum>"
DATA_TYPE = "MLOperandDataType"

OPERAND_KINDS = (OPERAND, OPERANDS)

Descs = OperandDescriptor | list[OperandDescriptor] | None


@dataclass(frozen=True)
class Param:
    """One positional argument or options member.  `types`/`same_type_as`/`ranks` apply to operands only."""

    name: str
    kind: str
    default: Any = REQUIRED
    enum: tuple[str, ...] = ()
    enum_name: str = ""
    types: frozenset[DataType] = ALL_TYPES
    same_type_as: str = ""
    ranks: tuple[int, int] = (0, MAX_RANK)

    @property
    def is_operand(self) -> bool:
        return self.kind in OPERAND_KINDS

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "required": self.required}
        if self.enum:
            out["enum"] = list(self.enum)
            out["enumName"] = self.enum_name
        if not self.required and self.default is not None and not callable(self.default):
            out["default"] = self.default
        return out


def operand(name: str, types: frozenset[DataType] = ALL_TYPES, *, ranks: tuple[int, int] = (0, MAX_RANK),
            same_type_as: str = "", optional: bool = False) -> Param:
    """An MLOperand argument (or, with optional=True, an MLOperand options member)."""
    return Param(name, OPERAND, None if optional else REQUIRED, types=types, ranks=ranks,
                 same_type_as=same_type_as)


def operands(name: str, types: frozenset[DataType] = ALL_TYPES, *, ranks: tuple[int, int] = (0, MAX_RANK)) -> Param:
    """A sequence<MLOperand> argument."""
    return Param(name, OPERANDS, REQUIRED, types=types, ranks=ranks)


def value(name: str, kind: str, default: Any = REQUIRED) -> Param:
    """A non-operand argument or options member."""
    return Param(name, kind, default)


def enum(name: str, enum_name: str, values: Sequence[str], default: Any = REQUIRED, *, many: bool = False) -> Param:
    """An enum (or sequence of enum) argument or options member."""
    return Param(name, ENUMS if many else ENUM, default, enum=tuple(values), enum_name=enum_name)


InferResult = OperandDescriptor | list[OperandDescriptor]


@dataclass(frozen=True)
class OpSpec:
    """One builder operator: its IDL signature, operand constraints and shape inference."""

    name: str
    family: str
    params: tuple[Param, ...]
    options: tuple[Param, ...]
    infer: Callable[[OpCall], InferResult]
    # Data types the output may have (for opSupportLimits); None: those of the first operand.
    output_types: frozenset[DataType] | None = None
    output_ranks: tuple[int, int] | None = None
    # "operand" (one MLOperand) or "operands" (sequence<MLOperand>, e.g. split, gru, lstm)
    returns: str = "operand"
    # Names of the output members in opSupportLimits ("output" or "outputs")
    limits_output_name: str = "output"
    # The option values the operator canonicalizes, for a call `infer` accepted (merged over the bound options);
    # None: the bound options are canonical already.
    normalize: Callable[[OpCall], dict[str, Any]] | None = None

    @property
    def url(self) -> str:
        return f"{SPEC_URL}#api-mlgraphbuilder-{self.name.lower()}"

    @property
    def required(self) -> dict[str, tuple[frozenset[DataType], tuple[int, int]]]:
        """The draft's required data types and ranks, per operand and output (`limits_output_name`): what an
        implementation MUST support.  Parsed from the draft's tables into py_core/spec/required.py."""
        return {name: (frozenset(DataType(t) for t in types), ranks)
                for name, (types, ranks) in DRAFT_REQUIRED[self.name].items()}

    def param(self, name: str) -> Param:
        for p in self.params + self.options:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def operand_params(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params + self.options if p.is_operand)

    def to_json(self) -> dict[str, Any]:
        """The signature the JavaScript side generates its builder method from."""
        return {
            "name": self.name,
            "family": self.family,
            "params": [p.to_json() for p in self.params],
            "options": [p.to_json() for p in self.options],
            "returns": self.returns,
        }


class OpCall:
    """One bound call: operand descriptors, converted option values (read-only) and the user's label."""

    def __init__(self, spec: OpSpec, operands: Mapping[str, Descs], options: Mapping[str, Any], label: str):
        self.spec = spec
        self.operands = MappingProxyType(dict(operands))
        self.options = MappingProxyType(dict(options))
        self.label = label

    def prefix(self) -> str:
        return f"[{self.label}] {self.spec.name}" if self.label else self.spec.name

    def fail(self, message: str) -> NoReturn:
        """Raise the TypeError the spec requires, naming the operator, the label and the values."""
        raise WebNNTypeError(f"{self.prefix()}: {message}")

    def operand(self, name: str) -> OperandDescriptor:
        d = self.operands[name]
        assert isinstance(d, OperandDescriptor)
        return d

    def optional(self, name: str) -> OperandDescriptor | None:
        d = self.operands.get(name)
        assert d is None or isinstance(d, OperandDescriptor)
        return d

    def sequence(self, name: str) -> list[OperandDescriptor]:
        d = self.operands[name]
        assert isinstance(d, list)
        return d

    def __getitem__(self, name: str) -> Any:
        return self.options[name]


# --------------------------------------------------------------------------------------------- value checks

def _fail(prefix: str, message: str) -> NoReturn:
    raise WebNNTypeError(f"{prefix}: {message}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_ulong(prefix: str, name: str, v: Any) -> int:
    """[EnforceRange] unsigned long."""
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        v = int(v)
    if not _is_int(v) or not 0 <= v <= MAX_UNSIGNED_LONG:
        _fail(prefix, f"{name} must be an unsigned long, got {v!r}")
    return int(v)


def check_long(prefix: str, name: str, v: Any) -> int:
    """[EnforceRange] long."""
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        v = int(v)
    if not _is_int(v) or not -(2**31) <= v < 2**31:
        _fail(prefix, f"{name} must be a long, got {v!r}")
    return int(v)


def _check_value(prefix: str, p: Param, v: Any) -> Any:
    kind = p.kind
    if kind == ULONG:
        return check_ulong(prefix, p.name, v)
    if kind == LONG:
        return check_long(prefix, p.name, v)
    if kind in (ULONGS, LONGS):
        if not isinstance(v, (list, tuple)):
            _fail(prefix, f"{p.name} must be a sequence, got {v!r}")
        conv = check_ulong if kind == ULONGS else check_long
        return [conv(prefix, f"{p.name}[{i}]", x) for i, x in enumerate(v)]
    if kind == ULONG_OR_ULONGS:
        if isinstance(v, (list, tuple)):
            return [check_ulong(prefix, f"{p.name}[{i}]", x) for i, x in enumerate(v)]
        return check_ulong(prefix, p.name, v)
    if kind in (DOUBLE, FLOAT):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            _fail(prefix, f"{p.name} must be a finite number, got {v!r}")
        return float(v)
    if kind == FLOATS_SEQ:
        if not isinstance(v, (list, tuple)):
            _fail(prefix, f"{p.name} must be a sequence of numbers, got {v!r}")
        return [_check_value(prefix, Param(f"{p.name}[{i}]", FLOAT), x) for i, x in enumerate(v)]
    if kind == BOOLEAN:
        if not isinstance(v, bool):
            _fail(prefix, f"{p.name} must be a boolean, got {v!r}")
        return v
    if kind == NUMBER:
        # MLNumber: bigint or unrestricted double (NaN and infinities allowed)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            _fail(prefix, f"{p.name} must be a number or bigint, got {v!r}")
        return v
    if kind == ENUM:
        if v not in p.enum:
            _fail(prefix, f"'{v}' is not a valid value for {p.name} ({p.enum_name}: {', '.join(p.enum)})")
        return v
    if kind == ENUMS:
        if not isinstance(v, (list, tuple)):
            _fail(prefix, f"{p.name} must be a sequence of {p.enum_name}, got {v!r}")
        return [_check_value(prefix, Param(p.name, ENUM, enum=p.enum, enum_name=p.enum_name), x) for x in v]
    if kind == DATA_TYPE:
        try:
            return DataType.parse(v)
        except ValueError:
            _fail(prefix, f"'{v}' is not a valid MLOperandDataType")
    raise AssertionError(f"unknown IDL kind {kind}")


def check_dimensions(prefix: str, desc: OperandDescriptor) -> OperandDescriptor:
    """"Check dimensions" of an input's or a constant's descriptor, in the draft's order: each dimension valid,
    the rank supported (opSupportLimits' rankRange.max), the element count a valid dimension, the byte length
    supported.  https://www.w3.org/TR/webnn/#mloperanddescriptor-check-dimensions"""
    for d in desc.shape:
        if not 0 < d <= MAX_DIMENSION:
            _fail(prefix, f"dimension {d} of {desc} is not a valid dimension (1 .. {MAX_DIMENSION})")
    if len(desc.shape) > MAX_RANK:
        _fail(prefix, f"{desc} has rank {len(desc.shape)}, more than the supported {MAX_RANK}")
    if desc.element_count > MAX_DIMENSION:
        _fail(prefix, f"{desc} has {desc.element_count} elements, more than a valid dimension ({MAX_DIMENSION})")
    if desc.byte_length > MAX_TENSOR_BYTE_LENGTH:
        _fail(prefix, f"{desc} is {desc.byte_length} bytes, more than maxTensorByteLength ({MAX_TENSOR_BYTE_LENGTH})")
    return desc


def check_output_descriptor(prefix: str, desc: OperandDescriptor) -> OperandDescriptor:
    """Every operand must have valid dimensions and a byte length the implementation can hold."""
    for d in desc.shape:
        if not 0 < d <= MAX_DIMENSION:
            _fail(prefix, f"output dimension {d} of {desc} is not a valid dimension (1 .. {MAX_DIMENSION})")
    if desc.element_count > MAX_DIMENSION:
        _fail(prefix, f"output {desc} has {desc.element_count} elements, more than a valid dimension ({MAX_DIMENSION})")
    if desc.byte_length > MAX_TENSOR_BYTE_LENGTH:
        _fail(prefix, f"output {desc} is {desc.byte_length} bytes, more than maxTensorByteLength "
                      f"({MAX_TENSOR_BYTE_LENGTH})")
    return desc


def _check_operand(prefix: str, p: Param, d: OperandDescriptor, what: str) -> None:
    if d.data_type not in p.types:
        allowed = ", ".join(sorted(t.value for t in p.types))
        _fail(prefix, f"{what} data type {d.data_type.value} is not supported (allowed: {allowed})")
    lo, hi = p.ranks
    if not lo <= d.rank <= hi:
        _fail(prefix, f"{what} rank {d.rank} (shape {list(d.shape)}) must be between {lo} and {hi}")


def bind(spec: OpSpec, operands: Mapping[str, Descs], options: Mapping[str, Any], label: str = "") -> OpCall:
    """Convert one call's arguments (WebIDL conversion, static defaults) and check its operands' types and ranks."""
    prefix = OpCall(spec, {}, {}, label).prefix()
    bound_operands: dict[str, Descs] = {}
    bound_options: dict[str, Any] = {}
    for p in spec.params + spec.options:
        if p.is_operand:
            d = operands.get(p.name)
            if d is None:
                if p.required:
                    _fail(prefix, f"missing required operand '{p.name}'")
                bound_operands[p.name] = None
                continue
            if isinstance(d, list):
                if p.kind != OPERANDS:
                    _fail(prefix, f"'{p.name}' must be a single MLOperand")
                if not d:
                    _fail(prefix, f"'{p.name}' must not be empty")
                for i, item in enumerate(d):
                    _check_operand(prefix, p, item, f"{p.name}[{i}]")
            else:
                if p.kind == OPERANDS:
                    _fail(prefix, f"'{p.name}' must be a sequence of MLOperand")
                _check_operand(prefix, p, d, f"{p.name}")
            bound_operands[p.name] = d
        else:
            v = options.get(p.name)
            if v is None:
                if p.required:
                    _fail(prefix, f"missing required argument '{p.name}'")
                dflt = p.default
                bound_options[p.name] = list(dflt) if isinstance(dflt, (list, tuple)) else dflt
            else:
                bound_options[p.name] = _check_value(prefix, p, v)
    for p in spec.operand_params:
        d = bound_operands.get(p.name)
        if p.same_type_as and d is not None:
            ref = bound_operands.get(p.same_type_as)
            ref_type = ref[0].data_type if isinstance(ref, list) else (ref.data_type if ref else None)
            items = d if isinstance(d, list) else [d]
            for item in items:
                if ref_type is not None and item.data_type != ref_type:
                    _fail(prefix, f"{p.name} data type {item.data_type.value} must match "
                                  f"{p.same_type_as} data type {ref_type.value}")
    return OpCall(spec, bound_operands, bound_options, label)


def infer_outputs(call: OpCall) -> list[OperandDescriptor]:
    """The bound call's output descriptors, each checked against the implementation's limits."""
    result = call.spec.infer(call)
    outputs = result if isinstance(result, list) else [result]
    prefix = call.prefix()
    for out in outputs:
        check_output_descriptor(prefix, out)
        check_working_copy(prefix, out)
    return outputs


def normalize(call: OpCall) -> dict[str, Any]:
    """The canonical options of a call `infer_outputs` accepted: what the graph records and the kernels read."""
    return {**call.options, **(call.spec.normalize(call) if call.spec.normalize else {})}


def validate(spec: OpSpec, operands: Mapping[str, Descs], options: Mapping[str, Any],
             label: str = "") -> list[OperandDescriptor]:
    """Validate one call: its output descriptors, or the TypeError the spec requires.  A pure function."""
    return infer_outputs(bind(spec, operands, options, label))


# bytes of the float32 copy a float16 kernel works in (kernels/common.compute_dtype widens, rounds once at the end)
F16_WORKING_BYTES = 4


def check_working_copy(prefix: str, desc: OperandDescriptor) -> None:
    """An operator's float16 output is computed in float32: that copy must fit maxTensorByteLength as well."""
    if desc.data_type is DataType.FLOAT16 and desc.element_count * F16_WORKING_BYTES > MAX_TENSOR_BYTE_LENGTH:
        _fail(prefix, f"output {desc} is computed in float32, {desc.element_count * F16_WORKING_BYTES} bytes, "
                      f"more than maxTensorByteLength ({MAX_TENSOR_BYTE_LENGTH}): an implementation limit of "
                      f"float16 operators here")


def operand_types(spec: OpSpec, name: str) -> frozenset[DataType]:
    """The data types an operand accepts, resolving `same_type_as` chains (for opSupportLimits)."""
    p = spec.param(name)
    return operand_types(spec, p.same_type_as) & p.types if p.same_type_as else p.types


@dataclass
class Registry:
    """All operator rows, by name."""

    ops: dict[str, OpSpec] = field(default_factory=dict)

    def add(self, rows: Sequence[OpSpec]) -> None:
        for row in rows:
            if row.name in self.ops:
                raise AssertionError(f"duplicate operator row {row.name}")
            self.ops[row.name] = row
