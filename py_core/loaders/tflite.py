"""TFLite importer: walk a .tflite flatbuffer and emit WebNN builder calls, weights as constants.
https://www.w3.org/TR/webnn/#api-mlgraphbuilder

The model is read with the `tflite` package (pure Python over `flatbuffers`, so it also runs inside
Pyodide).  Each TFLite operator is mapped by one function in `tflite_ops.py` or `tflite_shape_ops.py`,
which sees its operator through a `MappingContext` (`tflite_context.py`, below both); weight-only operators
(DEQUANTIZE of float16/int8 constants, DENSIFY of sparse constants) are folded here at load time, so the
emitted graph holds plain float32 constants.  Tensors stay NHWC: convolutions and pooling use WebNN's
`inputLayout: "nhwc"` with the filters in the layouts TFLite stores them in (`ohwi`, `ihwo`).

The builder interface
---------------------
The loader never imports a builder: it emits through any object with these four methods, so the same walk
drives `py_core.builder.GraphBuilder` (`py_core.loaders.GraphBuilderAdapter`), the page's `navigator.ml`
builder from Pyodide (a thin JS proxy adapter), or a native WebNN implementation.

- `input(name: str, desc: dict) -> operand`
- `constant(desc: dict, data: numpy.ndarray) -> operand`: `data` is C-contiguous, of `desc`'s type and
  shape, and may be a view of the model file's buffer (copy it if you keep it past the call).
- `op(name: str, *args, **options) -> operand | list[operand]`: one MLGraphBuilder method call.  `name` is the
  spec's method name (`"conv2d"`, `"resample2d"`); `args` are its positional arguments in IDL order: operands,
  sequences of operands, numbers or lists of numbers (`reshape(x, [1, 4])`, `concat([a, b], 3)`);
  `options` is the options dictionary with the spec's camelCase member names, whose values are operands,
  numbers, booleans, strings or lists of numbers.  Every call carries `label` (the TFLite output tensor's
  name), a member of MLOperatorOptions.
- `build(outputs: dict[str, operand]) -> graph`: whatever the builder returns (a JS adapter may return a
  promise: `build_tflite` hands it back unchanged).

`desc` is always `{"dataType": <MLOperandDataType>, "shape": [<int>, ...]}`.  Operand handles are opaque to
the loader: shapes come from the TFLite tensors, never from the builder.

Entry points: `read_tflite(path_or_bytes)` parses a model, `TFLiteModel.emit(builder)` walks it,
`build_tflite(source, builder)` does both and builds.  `py_core.loaders` adds the CPython side:
`GraphBuilderAdapter`, `load_graph(path)` and `run_model(path, *inputs)`.

Errors: every failure is a `TFLiteModelError` (a DataError) that names the model, where (the table and its
byte offset, the tensor or the operator) and what is wrong; operators or types without a WebNN mapping give
its subclass `TFLiteUnsupportedError` (a NotSupportedError).  Declared sizes are checked against the file
before anything is allocated from them.  `scripts/fuzz_tflite.py` fuzzes this with truncated and
byte-flipped real models.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tflite

from py_core.errors import LOG, NotSupportedError, TFLiteModelError, TFLiteUnsupportedError, WebNNError
from py_core.loaders.tflite_context import TENSOR_TYPES, MappingContext, Operator, Tensor, type_code
from py_core.loaders.tflite_ops import CONVERTERS, FOLDED
from py_core.loaders.tflite_sparse import Level, densify

CUSTOM = 32
# What reading a corrupt flatbuffer raises in the generated accessors (out-of-range offsets, bad vector
# lengths, a union table of the wrong type, a zero stride...): each becomes a TFLiteModelError saying where.
MALFORMED = (struct.error, ValueError, IndexError, KeyError, TypeError, AttributeError, ArithmeticError,
             UnicodeError)


def _malformed(e: Exception, size: int) -> str:
    """What a MALFORMED exception says about the file, in the model's terms (the Python text goes to the log)."""
    LOG.debug("malformed TFLite model", exc_info=e)
    offset = re.search(r"at offset (-?\d+)", str(e))
    if isinstance(e, struct.error) and offset:
        return f"a field at byte {offset.group(1)} lies outside the {size}-byte file"
    if isinstance(e, struct.error) or "buffer is smaller" in str(e):
        return f"an offset or vector length points outside the {size}-byte file"
    if isinstance(e, AttributeError):
        return "a table it needs is missing, or is of another type than its header says"
    if isinstance(e, ArithmeticError):
        return "an option that divides (a stride, a size) is zero or out of range"
    if isinstance(e, UnicodeError):
        return "a string is not UTF-8"
    if isinstance(e, (IndexError, KeyError)):
        return "it refers to an input, output, dimension or option entry that does not exist"
    return f"its tensors' shapes, types or options do not fit together ({type(e).__name__})"


def _enum_names(cls: type) -> dict[int, str]:
    return {v: k for k, v in vars(cls).items() if not k.startswith("_")}


BUILTIN_NAMES = _enum_names(tflite.BuiltinOperator)
OPTIONS_CLASSES = _enum_names(tflite.BuiltinOptions)


@dataclass
class TFLiteModel:
    """A parsed .tflite model (main subgraph): tensors, operators in execution order, inputs and outputs."""

    tensors: list[Tensor]
    operators: list[Operator]
    inputs: list[int]
    outputs: list[int]
    source: str = "<bytes>"
    size: int = 0  # of the file, in bytes

    def emit(self, builder: Any) -> dict[str, Any]:
        """Walk every operator through `builder`; the model's output operands by tensor name.

        Raises one NotSupportedError naming every operator that cannot be mapped (and where it sits)."""
        return Emitter(self, builder).run()

    @property
    def input_names(self) -> list[str]:
        return [self.tensors[i].name for i in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [self.tensors[i].name for i in self.outputs]


# --------------------------------------------------------------------------------------------------- reading


def _vector(union: Any, union_type: int) -> np.ndarray:
    """A SparseIndexVector union (Int32Vector=1, Uint16Vector=2, Uint8Vector=3) as an int64 array."""
    cls = {1: tflite.Int32Vector, 2: tflite.Uint16Vector, 3: tflite.Uint8Vector}.get(union_type)
    if cls is None or union is None:
        raise ValueError(f"sparsity: index vector type {union_type} is not known")
    v = cls()
    v.Init(union.Bytes, union.Pos)
    return v.ValuesAsNumpy().astype(np.int64) if v.ValuesLength() else np.zeros(0, np.int64)


def _sparsity(sp: Any) -> tuple[list[int], list[int], list[Level]]:
    traversal = [int(x) for x in sp.TraversalOrderAsNumpy()] if sp.TraversalOrderLength() else []
    block_map = [int(x) for x in sp.BlockMapAsNumpy()] if sp.BlockMapLength() else []
    levels = []
    for k in range(sp.DimMetadataLength()):
        d = sp.DimMetadata(k)
        if d.Format() == 0:
            levels.append(Level(0, d.DenseSize()))
        else:
            levels.append(Level(1, 0, _vector(d.ArraySegments(), d.ArraySegmentsType()),
                                _vector(d.ArrayIndices(), d.ArrayIndicesType())))
    return traversal, block_map, levels


def _options(op: Any, name: str) -> Any:
    """The operator's builtin options table, decoded into its generated class (None when absent)."""
    table = op.BuiltinOptions()
    cls_name = OPTIONS_CLASSES.get(op.BuiltinOptionsType())
    if table is None or not cls_name or cls_name == "NONE":
        return None
    opts = getattr(tflite, cls_name)()
    opts.Init(table.Bytes, table.Pos)
    return opts


def read_tflite(source: str | os.PathLike[str] | bytes | bytearray | memoryview,
                name: str | None = None) -> TFLiteModel:
    """Parse a .tflite file (a path or its bytes) into tensors and operators; weights stay encoded.

    `name` labels the model in errors (default: the path, or "<bytes>"); TFLiteModelError names it and the
    table (with its byte offset) that is malformed."""
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as f:
            buf = f.read()
        name = name or os.fspath(source)
    else:
        name, buf = name or "<bytes>", bytes(source)
    if len(buf) < 8 or buf[4:8] != b"TFL3":
        raise TFLiteModelError(f"{name}: not a TFLite model ({len(buf)} bytes, file identifier "
                               f"{buf[4:8]!r} at byte 4, expected b'TFL3')")
    reader = _Reader(name, buf)
    try:
        return reader.read()
    except MALFORMED as e:
        raise TFLiteModelError(f"{name}: malformed {reader.where}: {_malformed(e, len(buf))}") from e


class _Reader:
    """read_tflite's walk, remembering where it is (`where`) for the error a corrupt file raises."""

    def __init__(self, name: str, buf: bytes):
        self.name, self.buf, self.where = name, buf, "model table"

    def at(self, what: str, table: Any) -> None:
        self.where = f"{what} (table at byte {table._tab.Pos})"

    def count(self, n: int, what: str) -> int:
        """A vector length, which cannot exceed the file (each element is at least 4 bytes)."""
        if n < 0 or 4 * n > len(self.buf):
            raise TFLiteModelError(f"{self.name}: {self.where}: {what} vector declares {n} entries, more than "
                                   f"the {len(self.buf)}-byte file can hold")
        return n

    def index(self, i: int, n: int, what: str, optional: bool = False) -> int:
        if not (-1 if optional else 0) <= i < n:
            raise TFLiteModelError(f"{self.name}: {self.where}: {what} {i} is out of range (0..{n - 1})")
        return i

    def read(self) -> TFLiteModel:
        name, buf = self.name, self.buf
        model = tflite.Model.GetRootAsModel(buf, 0)
        self.at("model", model)
        if model.SubgraphsLength() < 1:
            raise TFLiteModelError(f"{name}: the model has no subgraph")
        n_buffers = self.count(model.BuffersLength(), "buffers")
        n_codes = self.count(model.OperatorCodesLength(), "operator codes")
        g = model.Subgraphs(0)
        self.at("subgraph 0", g)
        n_tensors = self.count(g.TensorsLength(), "tensors")
        raw = np.frombuffer(buf, dtype=np.uint8)
        tensors = []
        for i in range(n_tensors):
            t = g.Tensors(i)
            self.at(f"subgraph 0 tensor {i}", t)
            dtype, webnn_type = TENSOR_TYPES.get(t.Type(), (f"tensor type {t.Type()}", None))
            shape = tuple(int(d) for d in t.ShapeAsNumpy()) if self.count(t.ShapeLength(), "shape") else ()
            tensor = Tensor(i, t.Name().decode("utf-8", "replace"), shape, dtype, webnn_type)
            self.at(f"subgraph 0 tensor {i} '{tensor.name}'", t)
            k = self.index(t.Buffer(), n_buffers, "buffer index")
            b = model.Buffers(k)
            if b is not None and b.Offset() > 1:  # large models keep buffers after the flatbuffer
                if b.Offset() + b.Size() > len(buf):
                    raise TFLiteModelError(f"{name}: buffer {k} of tensor {i} '{tensor.name}' declares bytes "
                                           f"{b.Offset()}..{b.Offset() + b.Size()}, past the end of the "
                                           f"{len(buf)}-byte file")
                tensor.data = raw[b.Offset():b.Offset() + b.Size()]
            elif b is not None and b.DataLength():
                tensor.data = b.DataAsNumpy()
            q = t.Quantization()
            if q is not None and q.ScaleLength():
                zp = q.ZeroPointAsNumpy() if q.ZeroPointLength() else np.zeros(q.ScaleLength(), np.int64)
                tensor.quantization = (q.ScaleAsNumpy().astype(np.float32), zp.astype(np.int64),
                                       q.QuantizedDimension())
            if t.Sparsity() is not None:
                tensor.sparsity = _sparsity(t.Sparsity())
            tensors.append(tensor)
        operators = []
        for i in range(self.count(g.OperatorsLength(), "operators")):
            op = g.Operators(i)
            self.at(f"subgraph 0 operator {i}", op)
            code = model.OperatorCodes(self.index(op.OpcodeIndex(), n_codes, "opcode index"))
            builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            if builtin == CUSTOM:
                op_name = (code.CustomCode() or b"").decode("utf-8", "replace")
            else:
                op_name = BUILTIN_NAMES.get(builtin, f"BUILTIN_{builtin}")
            self.at(f"subgraph 0 operator {i} {op_name}", op)
            custom = op.CustomOptionsAsNumpy().tobytes() if op.CustomOptionsLength() else b""
            ins = [self.index(int(x), n_tensors, "input tensor", optional=True)
                   for x in (op.InputsAsNumpy() if self.count(op.InputsLength(), "inputs") else [])]
            outs = [self.index(int(x), n_tensors, "output tensor")
                    for x in (op.OutputsAsNumpy() if self.count(op.OutputsLength(), "outputs") else [])]
            operators.append(Operator(i, op_name, ins, outs, _options(op, op_name), custom))
        self.at("subgraph 0", g)
        ins = [self.index(int(x), n_tensors, "graph input tensor")
               for x in (g.InputsAsNumpy() if self.count(g.InputsLength(), "inputs") else [])]
        outs = [self.index(int(x), n_tensors, "graph output tensor")
                for x in (g.OutputsAsNumpy() if self.count(g.OutputsLength(), "outputs") else [])]
        return TFLiteModel(tensors, operators, ins, outs, name, len(buf))


def decode_constant(t: Tensor, source: str = "<bytes>") -> np.ndarray:
    """A constant tensor's stored data as an array of its own type and shape (dense, still quantized).

    TFLiteModelError when the stored bytes do not fit the tensor's type and shape (or its sparsity)."""
    assert t.data is not None
    where = f"{source}: constant tensor {t.index} '{t.name}'"
    if t.dtype not in {d for d, _ in TENSOR_TYPES.values()}:
        raise TFLiteUnsupportedError(f"{where} has {t.dtype}, which the loader cannot read")
    itemsize = np.dtype(t.dtype).itemsize
    if t.data.size % itemsize:
        raise TFLiteModelError(f"{where}: {t.data.size} stored bytes are not whole {t.dtype} values")
    values = np.frombuffer(t.data.tobytes() if not t.data.flags.c_contiguous else t.data, dtype=t.dtype)
    if t.sparsity is not None:
        try:
            return densify(values, t.shape, *t.sparsity)
        except ValueError as e:
            raise TFLiteModelError(f"{where}: {e}") from e
    if any(d < 0 for d in t.shape) or int(np.prod(t.shape, dtype=object)) != values.size:
        raise TFLiteModelError(f"{where}: shape {list(t.shape)} needs {np.prod(t.shape, dtype=object)} "
                               f"{t.dtype} values, its buffer holds {values.size} ({t.data.size} bytes)")
    return values.reshape(t.shape)


# --------------------------------------------------------------------------------------------------- emitting


@dataclass
class Emitter:
    """Walks a model's operators in order, keeping each tensor as a constant array or an emitted operand."""

    model: TFLiteModel
    builder: Any
    constants: dict[int, np.ndarray] = field(default_factory=dict)
    operands: dict[int, Any] = field(default_factory=dict)

    def run(self) -> dict[str, Any]:
        model = self.model
        for i in model.inputs:
            t = model.tensors[i]
            if t.webnn_type is None:
                raise TFLiteUnsupportedError(f"{model.source}: input '{t.name}' has type {t.dtype}, not a WebNN "
                                             "type")
            try:
                self.operands[i] = self.builder.input(t.name, t.desc)
            except WebNNError as e:
                raise TFLiteModelError(f"{model.source}: input tensor {i} '{t.name}': {e}") from e
        for t in model.tensors:
            if t.data is not None and t.index not in self.operands:
                self.constants[t.index] = decode_constant(t, model.source)
        failures: list[str] = []
        poisoned: set[int] = set()
        for op in model.operators:
            where = f"#{op.index} {op.name} -> '{model.tensors[op.outputs[0]].name}'" if op.outputs else \
                f"#{op.index} {op.name}"
            convert = CONVERTERS.get(op.name)
            folded = FOLDED.get(op.name)
            if convert is None and folded is None:
                failures.append(f"{where}: no WebNN mapping for this operator")
                poisoned.update(op.outputs)
                continue
            if any(i in poisoned for i in op.inputs):
                poisoned.update(op.outputs)  # its input is missing already: reported at the source
                continue
            ctx = MappingContext(self, op)
            try:
                if folded is not None and all(i < 0 or i in self.constants for i in op.inputs):
                    results = folded(ctx)
                elif convert is not None:
                    ctx.check_float()
                    results = convert(ctx)
                else:
                    raise NotSupportedError("only constant (weight) inputs can be folded at load time")
            except TFLiteModelError:
                raise
            except NotSupportedError as e:
                failures.append(f"{where}: {e}")
                poisoned.update(op.outputs)
                continue
            except MemoryError:
                raise
            except WebNNError as e:  # the builder refused what the model's tensors and options say
                raise TFLiteModelError(f"{model.source}: operator {where}: {e}") from e
            except Exception as e:  # a corrupt option table, shape or index the mapping cannot use
                raise TFLiteModelError(f"{model.source}: operator {where} is malformed: "
                                       f"{_malformed(e, model.size)}") from e
            results = results if isinstance(results, list) else [results]
            if len(results) != len(op.outputs):
                raise TFLiteModelError(f"{model.source}: operator {where} has {len(op.outputs)} output "
                                       f"tensor(s), its mapping gives {len(results)}")
            for out, value in zip(op.outputs, results, strict=True):
                if isinstance(value, np.ndarray):
                    self.constants[out] = value
                else:
                    self.operands[out] = value
        if failures:
            raise TFLiteUnsupportedError(
                f"{model.source}: {len(failures)} TFLite operator(s) cannot be mapped to WebNN:\n  "
                + "\n  ".join(failures))
        outputs = {}
        for i in model.outputs:
            name = model.tensors[i].name
            if i not in self.operands and i not in self.constants:
                raise TFLiteModelError(f"{model.source}: graph output tensor {i} '{name}' is neither an input, "
                                       "a constant nor any operator's output")
            if i not in self.operands or i in model.inputs:
                # a graph output must be an operation's result: pass constants and inputs through identity
                try:
                    outputs[name] = self.builder.op("identity", self.operand(i), label=name)
                except TFLiteModelError:
                    raise
                except NotSupportedError as e:
                    raise TFLiteUnsupportedError(f"{model.source}: graph output '{name}': {e}") from e
                except WebNNError as e:
                    raise TFLiteModelError(f"{model.source}: graph output '{name}': {e}") from e
            else:
                outputs[name] = self.operands[i]
        return outputs

    @property
    def tensors(self) -> list[Tensor]:
        return self.model.tensors

    def operand(self, i: int) -> Any:
        """Tensor i as a builder operand, creating the constant the first time a weight is used."""
        if i not in self.operands:
            t = self.model.tensors[i]
            if i not in self.constants:
                raise TFLiteModelError(f"{self.model.source}: tensor {i} '{t.name}' is used before any "
                                       "operator computes it (and it is no input or constant)")
            data = self.constants[i]
            webnn_type = TENSOR_TYPES.get(type_code(data.dtype), ("", None))[1]
            if webnn_type is None:
                raise NotSupportedError(f"constant '{t.name}' has type {data.dtype}, not a WebNN type")
            if data.dtype == np.bool_:
                data = data.astype(np.uint8)
            self.operands[i] = self.builder.constant({"dataType": webnn_type, "shape": list(data.shape)},
                                                     np.ascontiguousarray(data))
        return self.operands[i]


def build_tflite(source: str | os.PathLike[str] | bytes | TFLiteModel, builder: Any) -> Any:
    """Read (unless given a parsed model), emit and build: returns `builder.build(outputs)` unchanged."""
    model = source if isinstance(source, TFLiteModel) else read_tflite(source)
    outputs = model.emit(builder)
    try:
        return builder.build(outputs)
    except TFLiteModelError:
        raise
    except WebNNError as e:
        raise TFLiteModelError(f"{model.source}: build(): {e}") from e

