"""TFLite loader: every operator mapping against native LiteRT on tiny synthetic models.

The `tflite` package carries the flatbuffer builder functions, so each case writes a one- or two-operator
.tflite file (`Writer` below), runs it in `ai_edge_litert` (1 thread, default XNNPACK delegate) and through
the loader + py_core executor, and compares.  LiteRT is the oracle: TFLite's own semantics (SAME padding,
align_corners, strided-slice masks, sparse formats, MediaPipe's custom transposed convolution) are never
re-derived here.  Intermediate tensor shapes come from LiteRT too (a first pass with its reference kernels).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest

tflite = pytest.importorskip("tflite")
litert = pytest.importorskip("ai_edge_litert.interpreter")
flatbuffers = pytest.importorskip("flatbuffers")

from py_core.errors import NotSupportedError, TFLiteModelError, TFLiteUnsupportedError  # noqa: E402
from py_core.loaders import GraphBuilderAdapter, load_graph, read_tflite  # noqa: E402
from py_core.loaders.tflite_ops import same_padding  # noqa: E402
from py_core.loaders.tflite_sparse import Level, densify  # noqa: E402

TYPES = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int32): 2, np.dtype(np.int8): 9,
         np.dtype(np.int64): 4}
RNG = np.random.default_rng(1234)


# --------------------------------------------------------------------------------------------- model writer


class Writer:
    """A tiny .tflite writer: tensors, constant buffers (optionally sparse or quantized), operators."""

    def __init__(self) -> None:
        self.tensors: list[dict[str, Any]] = []
        self.ops: list[dict[str, Any]] = []
        self.inputs: list[int] = []

    def input(self, shape: list[int], dtype: Any = np.float32) -> int:
        self.inputs.append(self._tensor(shape, dtype))
        return self.inputs[-1]

    def const(self, data: np.ndarray, sparse: tuple[list[int], list[int], list[int]] | None = None,
              quant: tuple[np.ndarray, np.ndarray, int] | None = None) -> int:
        """A constant; `sparse` = (traversal order, block map, per-level formats) stores it sparse."""
        return self._tensor(list(data.shape), data.dtype, data=np.ascontiguousarray(data), sparse=sparse,
                            quant=quant)

    def tensor(self, shape: list[int] | None = None, dtype: Any = np.float32) -> int:
        return self._tensor(shape, dtype)

    def _tensor(self, shape: list[int] | None, dtype: Any, **kw: Any) -> int:
        self.tensors.append({"shape": shape, "dtype": np.dtype(dtype), "name": f"t{len(self.tensors)}", **kw})
        return len(self.tensors) - 1

    def op(self, name: str, ins: list[int], options: tuple[str, dict[str, Any]] | None = None,
           custom: bytes | None = None, out_shape: list[int] | None = None,
           out_dtype: Any = np.float32) -> int:
        out = self.tensor(out_shape, out_dtype)
        self.ops.append({"name": name, "ins": ins, "outs": [out], "options": options, "custom": custom})
        return out

    def finish(self, outputs: list[int]) -> bytes:
        """The model bytes; unknown shapes are filled in from LiteRT's own shape inference first."""
        if any(t["shape"] is None for t in self.tensors):
            for t in self.tensors:
                t.setdefault("guess", t["shape"] is None)
                if t["shape"] is None:
                    t["shape"] = [1]
            it = litert.Interpreter(model_content=self._serialize(outputs), num_threads=1,
                                    experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
            it.allocate_tensors()
            for d in it.get_tensor_details():
                if d["index"] < len(self.tensors) and self.tensors[d["index"]].get("guess"):
                    self.tensors[d["index"]]["shape"] = [int(x) for x in d["shape"]]
        return self._serialize(outputs)

    def _serialize(self, outputs: list[int]) -> bytes:
        b = flatbuffers.Builder(1024)
        vec = b.CreateNumpyVector
        buffers = [self._buffer(b, None)]
        tensor_offsets = []
        for t in self.tensors:
            buf_index = 0
            if "data" in t:
                buffers.append(self._buffer(b, t["data"] if t.get("sparse") is None
                                            else _sparse_values(t["data"], *t["sparse"])))
                buf_index = len(buffers) - 1
            sparsity = _sparsity(b, t["data"], *t["sparse"]) if t.get("sparse") is not None else None
            quant = None
            if t.get("quant") is not None:
                scale, zp, axis = t["quant"]
                s_vec, z_vec = vec(scale.astype(np.float32)), vec(zp.astype(np.int64))
                tflite.QuantizationParametersStart(b)
                tflite.QuantizationParametersAddScale(b, s_vec)
                tflite.QuantizationParametersAddZeroPoint(b, z_vec)
                tflite.QuantizationParametersAddQuantizedDimension(b, axis)
                quant = tflite.QuantizationParametersEnd(b)
            name, shape = b.CreateString(t["name"]), vec(np.array(t["shape"], dtype=np.int32))
            tflite.TensorStart(b)
            tflite.TensorAddShape(b, shape)
            tflite.TensorAddType(b, TYPES[t["dtype"]])
            tflite.TensorAddBuffer(b, buf_index)
            tflite.TensorAddName(b, name)
            if sparsity is not None:
                tflite.TensorAddSparsity(b, sparsity)
            if quant is not None:
                tflite.TensorAddQuantization(b, quant)
            tensor_offsets.append(tflite.TensorEnd(b))
        codes: list[tuple[str, bool]] = []
        op_offsets = []
        for op in self.ops:
            key = (op["name"], op["custom"] is not None)
            if key not in codes:
                codes.append(key)
            opts = _options(b, *op["options"]) if op["options"] else None
            ins, outs = vec(np.array(op["ins"], dtype=np.int32)), vec(np.array(op["outs"], dtype=np.int32))
            custom = vec(np.frombuffer(op["custom"], dtype=np.uint8)) if op["custom"] else None
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(b, codes.index(key))
            tflite.OperatorAddInputs(b, ins)
            tflite.OperatorAddOutputs(b, outs)
            if opts is not None:
                tflite.OperatorAddBuiltinOptionsType(b, getattr(tflite.BuiltinOptions, op["options"][0]))
                tflite.OperatorAddBuiltinOptions(b, opts)
            if custom is not None:
                tflite.OperatorAddCustomOptions(b, custom)
            op_offsets.append(tflite.OperatorEnd(b))
        code_offsets = []
        for name, is_custom in codes:
            custom_name = b.CreateString(name) if is_custom else None
            code = 32 if is_custom else getattr(tflite.BuiltinOperator, name)
            tflite.OperatorCodeStart(b)
            tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            tflite.OperatorCodeAddBuiltinCode(b, code)
            tflite.OperatorCodeAddVersion(b, 1)
            if custom_name is not None:
                tflite.OperatorCodeAddCustomCode(b, custom_name)
            code_offsets.append(tflite.OperatorCodeEnd(b))
        tensors_vec, ops_vec = _table_vector(b, tensor_offsets), _table_vector(b, op_offsets)
        in_vec, out_vec = vec(np.array(self.inputs, dtype=np.int32)), vec(np.array(outputs, dtype=np.int32))
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors_vec)
        tflite.SubGraphAddInputs(b, in_vec)
        tflite.SubGraphAddOutputs(b, out_vec)
        tflite.SubGraphAddOperators(b, ops_vec)
        subgraph = tflite.SubGraphEnd(b)
        codes_vec, subgraphs_vec = _table_vector(b, code_offsets), _table_vector(b, [subgraph])
        buffers_vec = _table_vector(b, buffers)
        tflite.ModelStart(b)
        tflite.ModelAddVersion(b, 3)
        tflite.ModelAddOperatorCodes(b, codes_vec)
        tflite.ModelAddSubgraphs(b, subgraphs_vec)
        tflite.ModelAddBuffers(b, buffers_vec)
        b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    @staticmethod
    def _buffer(b: Any, data: np.ndarray | None) -> int:
        raw = None
        if data is not None:
            payload = np.frombuffer(np.ascontiguousarray(data).tobytes(), dtype=np.uint8)
            b.StartVector(1, payload.size, 16)  # 16-byte aligned weights, as the converter writes them
            b.head = b.head - payload.size
            b.Bytes[b.head:b.head + payload.size] = payload.tobytes()
            raw = b.EndVector()
        tflite.BufferStart(b)
        if raw is not None:
            tflite.BufferAddData(b, raw)
        return tflite.BufferEnd(b)


def _table_vector(b: Any, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _options(b: Any, cls: str, fields: dict[str, Any]) -> int:
    vectors = {k: b.CreateNumpyVector(np.array(v, dtype=np.int32)) for k, v in fields.items()
               if isinstance(v, list)}
    getattr(tflite, f"{cls}Start")(b)
    for k, v in fields.items():
        getattr(tflite, f"{cls}Add{k}")(b, vectors.get(k, v))
    return getattr(tflite, f"{cls}End")(b)


def _expanded(dense: np.ndarray, traversal: list[int], block_map: list[int],
              block_sizes: list[int]) -> np.ndarray:
    """The dense array with blocked dimensions split (block index, position in block), in traversal order."""
    rank = dense.ndim
    shape, axes = [], []
    for d in range(rank):
        if d in block_map:
            bs = block_sizes[block_map.index(d)]
            shape += [dense.shape[d] // bs, bs]
            axes.append(len(shape) - 2)
        else:
            shape.append(dense.shape[d])
            axes.append(len(shape) - 1)
    inner = {block_map[j]: axes[block_map[j]] + 1 for j in range(len(block_map))}
    order = [axes[t] if t < rank else inner[block_map[t - rank]] for t in traversal]
    return dense.reshape(shape).transpose(order)


def _walk(x: np.ndarray, formats: list[int]) -> tuple[list[Any], np.ndarray]:
    """Per level (dense size) or (segments, indices), and the stored values: a test-side sparse encoder."""
    paths = np.zeros((1, 0), dtype=np.int64)
    levels: list[Any] = []
    for lvl, fmt in enumerate(formats):
        size = x.shape[lvl]
        if fmt == 0:
            parent = np.repeat(np.arange(len(paths)), size)
            child = np.tile(np.arange(size), len(paths))
            levels.append(size)
        else:
            nonzero = (x != 0).reshape(x.shape[:lvl + 1] + (-1,)).any(axis=-1)
            mask = nonzero[tuple(paths.T)] if lvl else nonzero[None]
            parent, child = np.nonzero(mask)
            segments = np.concatenate([[0], np.cumsum(mask.sum(axis=1))]).astype(np.int32)
            levels.append((segments, child.astype(np.int32)))
        paths = np.concatenate([paths[parent], child[:, None]], axis=1)
    return levels, x[tuple(paths.T)]


def _sparse_values(dense: np.ndarray, traversal: list[int], block_map: list[int], formats: list[int],
                   block_sizes: list[int] | None = None) -> np.ndarray:
    return _walk(_expanded(dense, traversal, block_map, block_sizes or []), formats)[1]


def _sparsity(b: Any, dense: np.ndarray, traversal: list[int], block_map: list[int], formats: list[int],
              block_sizes: list[int] | None = None) -> int:
    levels, _ = _walk(_expanded(dense, traversal, block_map, block_sizes or []), formats)
    dims = []
    for lvl in levels:
        if isinstance(lvl, tuple):
            unions = []
            for arr in lvl:
                values = b.CreateNumpyVector(arr.astype(np.int32))
                tflite.Int32VectorStart(b)
                tflite.Int32VectorAddValues(b, values)
                unions.append(tflite.Int32VectorEnd(b))
        tflite.DimensionMetadataStart(b)
        if isinstance(lvl, tuple):
            tflite.DimensionMetadataAddFormat(b, 1)
            tflite.DimensionMetadataAddArraySegmentsType(b, 1)
            tflite.DimensionMetadataAddArraySegments(b, unions[0])
            tflite.DimensionMetadataAddArrayIndicesType(b, 1)
            tflite.DimensionMetadataAddArrayIndices(b, unions[1])
        else:
            tflite.DimensionMetadataAddFormat(b, 0)
            tflite.DimensionMetadataAddDenseSize(b, lvl)
        dims.append(tflite.DimensionMetadataEnd(b))
    dims_vec = _table_vector(b, dims)
    trav = b.CreateNumpyVector(np.array(traversal, dtype=np.int32))
    bmap = b.CreateNumpyVector(np.array(block_map, dtype=np.int32)) if block_map else None
    tflite.SparsityParametersStart(b)
    tflite.SparsityParametersAddTraversalOrder(b, trav)
    if bmap is not None:
        tflite.SparsityParametersAddBlockMap(b, bmap)
    tflite.SparsityParametersAddDimMetadata(b, dims_vec)
    return tflite.SparsityParametersEnd(b)


# --------------------------------------------------------------------------------------------- harness


def check(w: Writer, outputs: list[int], feeds: list[np.ndarray], rtol: float = 1e-5, atol: float = 1e-5,
          delegate: bool = True, fix_ref: Any = None) -> list[np.ndarray]:
    """Run the model in LiteRT and through the loader; assert every output matches (after `fix_ref`)."""
    content = w.finish(outputs)
    kw: dict[str, Any] = {} if delegate else \
        {"experimental_op_resolver_type": litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}
    it = litert.Interpreter(model_content=content, num_threads=1, **kw)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feeds, strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    ref = [it.get_tensor(d["index"]) for d in it.get_output_details()]
    if fix_ref is not None:
        ref = [fix_ref(r) for r in ref]
    ours = load_graph(content).run(*feeds)
    for r, o in zip(ref, ours, strict=True):
        assert o.shape == r.shape and o.dtype == r.dtype
        np.testing.assert_allclose(o, r, rtol=rtol, atol=atol)
    return ours


def rand(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def unary_model(op: str, shape: list[int], options: tuple[str, dict[str, Any]] | None = None) -> Writer:
    w = Writer()
    x = w.input(shape)
    w.op(op, [x], options)
    return w


ACTS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4}


def conv_options(**fields: Any) -> tuple[str, dict[str, Any]]:
    """Conv2DOptions with TFLite's defaults for what is not given (flatbuffer scalars default to 0)."""
    return "Conv2DOptions", {"StrideH": 1, "StrideW": 1, "DilationHFactor": 1, "DilationWFactor": 1, **fields}


# --------------------------------------------------------------------------------------------- convolutions


@pytest.mark.parametrize("padding", [0, 1], ids=["SAME", "VALID"])
@pytest.mark.parametrize("stride,dilation", [(1, 1), (2, 1), (1, 2), (3, 1)])
@pytest.mark.parametrize("act", list(ACTS))
def test_conv_2d(padding: int, stride: int, dilation: int, act: str) -> None:
    w = Writer()
    x = w.input([1, 9, 8, 3])  # odd height: SAME pads unevenly
    y = w.op("CONV_2D", [x, w.const(rand(4, 3, 2, 3)), w.const(rand(4))],
             ("Conv2DOptions", {"Padding": padding, "StrideH": stride, "StrideW": max(stride - 1, 1),
                                "DilationHFactor": dilation, "DilationWFactor": 1,
                                "FusedActivationFunction": ACTS[act]}))
    # TFLite's CPU kernels turn fused activations into a clamp range (kernel_util.h CalculateActivationRange),
    # which silently drops TANH; the schema (and the GPU delegate) apply it, and so does the loader
    check(w, [y], [rand(1, 9, 8, 3, lo=-3, hi=3)], fix_ref=np.tanh if act == "TANH" else None)


def test_conv_2d_grouped() -> None:
    """Fewer filter input channels than input channels: a grouped convolution (LiteRT reference kernel)."""
    w = Writer()
    x = w.input([1, 6, 6, 4])
    y = w.op("CONV_2D", [x, w.const(rand(6, 3, 3, 4)), w.const(rand(6))], conv_options(Padding=0))
    z = w.op("CONV_2D", [x, w.const(rand(6, 1, 1, 2)), w.const(rand(6))], conv_options(Padding=1))
    check(w, [y, z], [rand(1, 6, 6, 4)], delegate=False)


@pytest.mark.parametrize("multiplier", [1, 2])
@pytest.mark.parametrize("padding,stride,dilation", [(0, 1, 1), (0, 2, 1), (1, 2, 1), (0, 1, 2), (1, 1, 2)])
def test_depthwise_conv_2d(multiplier: int, padding: int, stride: int, dilation: int) -> None:
    w = Writer()
    x = w.input([1, 11, 10, 3])
    y = w.op("DEPTHWISE_CONV_2D", [x, w.const(rand(1, 3, 3, 3 * multiplier)), w.const(rand(3 * multiplier))],
             ("DepthwiseConv2DOptions", {"Padding": padding, "StrideH": stride, "StrideW": stride,
                                         "DepthMultiplier": multiplier, "DilationHFactor": dilation,
                                         "DilationWFactor": dilation, "FusedActivationFunction": 3}))
    check(w, [y], [rand(1, 11, 10, 3, lo=-4, hi=4)])


@pytest.mark.parametrize("padding,kernel,stride,size", [
    (0, 3, 2, 8), (0, 3, 2, 7), (0, 2, 2, 8), (0, 3, 1, 4), (1, 3, 2, 9), (1, 3, 2, 10), (1, 4, 2, 10),
    (1, 5, 3, 14)], ids=str)
def test_transpose_conv(padding: int, kernel: int, stride: int, size: int) -> None:
    w = Writer()
    x = w.input([1, 4, 4, 3])
    out_shape = w.const(np.array([1, size, size, 2], np.int32))
    y = w.op("TRANSPOSE_CONV", [out_shape, w.const(rand(2, kernel, kernel, 3)), x, w.const(rand(2))],
             ("TransposeConvOptions", {"Padding": padding, "StrideH": stride, "StrideW": stride}))
    check(w, [y], [rand(1, 4, 4, 3)])


def _torch_transpose_conv_bias(x: np.ndarray, f: np.ndarray, b: np.ndarray, padding: int,
                               s: int) -> np.ndarray:
    """MediaPipe's Convolution2DTransposeBias as transpose_conv_bias.cc defines it, computed with torch."""
    torch = pytest.importorskip("torch")
    _, h, wd, _ = x.shape
    k = f.shape[1]
    p = max(0, k - (h - 1) % s - 1) if padding == 1 else 0
    full = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x.transpose(0, 3, 1, 2)).double(),
        torch.from_numpy(f.transpose(3, 0, 1, 2)).double(), torch.from_numpy(b).double(), stride=s)
    out = s * (h - 1) + k - p
    return full[:, :, p // 2:p // 2 + out, p // 2:p // 2 + out].numpy().transpose(0, 2, 3, 1)


@pytest.mark.parametrize("padding,kernel,stride", [(1, 2, 2), (1, 3, 2), (2, 3, 2), (1, 4, 2), (1, 5, 3),
                                                   (2, 2, 2)], ids=str)
def test_convolution_2d_transpose_bias(padding: int, kernel: int, stride: int) -> None:
    """MediaPipe's custom op: LiteRT's XNNPACK delegate runs it natively; torch checks the definition too."""
    x, f, bias = rand(1, 5, 5, 4), rand(3, kernel, kernel, 4), rand(3)
    expected = _torch_transpose_conv_bias(x, f, bias, padding, stride)
    w = Writer()
    xi = w.input([1, 5, 5, 4])
    y = w.op("Convolution2DTransposeBias", [xi, w.const(f), w.const(bias)],
             custom=struct.pack("<iii", padding, stride, stride), out_shape=list(expected.shape))
    ours = check(w, [y], [x])
    np.testing.assert_allclose(ours[0], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("in_shape,keep", [([3, 7], False), ([2, 3, 7], False), ([2, 3, 7], True)])
@pytest.mark.parametrize("bias", [True, False])
def test_fully_connected(in_shape: list[int], keep: bool, bias: bool) -> None:
    w = Writer()
    x = w.input(in_shape)
    y = w.op("FULLY_CONNECTED", [x, w.const(rand(5, 7)), w.const(rand(5)) if bias else -1],
             ("FullyConnectedOptions", {"KeepNumDims": keep, "FusedActivationFunction": 1}))
    check(w, [y], [rand(*in_shape)])


# --------------------------------------------------------------------------------------------- element-wise


@pytest.mark.parametrize("op,opts", [("ADD", "AddOptions"), ("SUB", "SubOptions"), ("MUL", "MulOptions"),
                                     ("DIV", "DivOptions"), ("MAXIMUM", None), ("MINIMUM", None),
                                     ("SQUARED_DIFFERENCE", None)])
def test_binary(op: str, opts: str | None) -> None:
    w = Writer()
    a, b = w.input([2, 4, 5, 3]), w.input([1, 1, 5, 3])
    options = (opts, {"FusedActivationFunction": 3}) if opts else None
    y = w.op(op, [a, b], options)
    z = w.op(op, [a, w.const(rand(3, lo=0.5, hi=2))], (opts, {}) if opts else None)
    check(w, [y, z], [rand(2, 4, 5, 3, lo=-4, hi=4), rand(1, 1, 5, 3, lo=0.5, hi=2)])


@pytest.mark.parametrize("op,options,lo", [
    ("RELU", None, -3), ("RELU6", None, -3), ("RELU_N1_TO_1", None, -3), ("LOGISTIC", None, -6),
    ("HARD_SWISH", None, -5), ("TANH", None, -3), ("ELU", None, -3), ("EXP", None, -3), ("ABS", None, -3),
    ("NEG", None, -3), ("SQRT", None, 0.1), ("RSQRT", None, 0.1), ("LOG", None, 0.1), ("FLOOR", None, -3),
    ("LEAKY_RELU", ("LeakyReluOptions", {"Alpha": 0.3}), -3),
    ("GELU", ("GeluOptions", {"Approximate": False}), -3),
    ("SOFTMAX", ("SoftmaxOptions", {"Beta": 1.0}), -5), ("SOFTMAX", ("SoftmaxOptions", {"Beta": 0.4}), -5),
])
def test_unary(op: str, options: tuple[str, dict[str, Any]] | None, lo: float) -> None:
    w = unary_model(op, [2, 3, 4, 7], options)
    check(w, [1], [rand(2, 3, 4, 7, lo=lo, hi=6)])


def test_prelu() -> None:
    w = Writer()
    x = w.input([1, 5, 6, 4])
    y = w.op("PRELU", [x, w.const(rand(1, 1, 4))])
    check(w, [y], [rand(1, 5, 6, 4)])


# ------------------------------------------------------------------------------------------ pooling, reduce


@pytest.mark.parametrize("op", ["AVERAGE_POOL_2D", "MAX_POOL_2D"])
@pytest.mark.parametrize("padding,window,stride", [(0, 3, 2), (1, 3, 2), (0, 2, 2), (1, 2, 2), (0, 3, 1),
                                                   (1, 9, 9)])
def test_pool(op: str, padding: int, window: int, stride: int) -> None:
    w = unary_model(op, [1, 9, 8, 3], ("Pool2DOptions", {
        "Padding": padding, "FilterHeight": window, "FilterWidth": min(window, 8), "StrideH": stride,
        "StrideW": stride, "FusedActivationFunction": 1}))
    check(w, [1], [rand(1, 9, 8, 3)])


@pytest.mark.parametrize("op", ["MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"])
@pytest.mark.parametrize("axes,keep", [([1, 2], False), ([-1], True), ([2, -3, 2], False),
                                       ([0, 1, 2, 3], True)])
def test_reduce(op: str, axes: list[int], keep: bool) -> None:
    w = Writer()
    x = w.input([2, 3, 4, 5])
    y = w.op(op, [x, w.const(np.array(axes, np.int32))], ("ReducerOptions", {"KeepDims": keep}))
    check(w, [y], [rand(2, 3, 4, 5, lo=0.5, hi=1.5)])


# --------------------------------------------------------------------------------------------- shape


def test_pad_reshape_transpose_concat() -> None:
    w = Writer()
    x = w.input([1, 4, 5, 3])
    p = w.op("PAD", [x, w.const(np.array([[0, 0], [1, 2], [0, 3], [2, 0]], np.int32))])
    p2 = w.op("PADV2", [x, w.const(np.array([[0, 0], [1, 1], [2, 0], [0, 1]], np.int32)),
                        w.const(np.array([-0.5], np.float32))])
    m = w.op("MIRROR_PAD", [x, w.const(np.array([[0, 0], [2, 1], [1, 2], [0, 0]], np.int32))],
             ("MirrorPadOptions", {"Mode": 0}))
    r = w.op("RESHAPE", [x, w.const(np.array([4, -1], np.int32))])
    t = w.op("TRANSPOSE", [x, w.const(np.array([0, 3, 1, 2], np.int32))])
    c = w.op("CONCATENATION", [x, w.input([1, 4, 5, 2]), x],
             ("ConcatenationOptions", {"Axis": -1}))  # LiteRT rejects fused activations on concatenation
    s = w.op("SQUEEZE", [w.op("EXPAND_DIMS", [x, w.const(np.array([2], np.int32))])],
             ("SqueezeOptions", {"SqueezeDims": [2]}))
    check(w, [p, p2, m, r, t, c, s], [rand(1, 4, 5, 3), rand(1, 4, 5, 2)])


@pytest.mark.parametrize("op", ["DEPTH_TO_SPACE", "SPACE_TO_DEPTH"])
@pytest.mark.parametrize("block", [2, 3])
def test_depth_space(op: str, block: int) -> None:
    shape = [2, 3, 4, 5 * block * block] if op == "DEPTH_TO_SPACE" else [2, 3 * block, 4 * block, 5]
    opts = "DepthToSpaceOptions" if op == "DEPTH_TO_SPACE" else "SpaceToDepthOptions"
    w = unary_model(op, shape, (opts, {"BlockSize": block}))
    check(w, [1], [rand(*shape)])


# (begin, end, strides, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask, offset)
STRIDED = [
    ([0, 1, 0, 0], [1, 4, 5, 3], [1, 1, 2, 1], 0, 0, 0, 0, 0, False),
    ([0, -3, 1, 0], [0, -1, 5, 2], [1, 1, 1, 1], 1, 1, 0, 0, 0, False),
    ([0, 4, -1, 0], [1, 0, 0, 3], [1, -1, -2, 1], 0, 0b0100, 0, 0, 0, False),
    ([0, 2, 0, 1], [1, 3, 5, 2], [1, 1, 1, 1], 0, 0, 0, 0, 0b1010, False),
    ([1, 0], [3, 2], [1, 1], 0, 0, 0b01, 0, 0, False),
    ([0, 1], [0, 3], [1, 2], 0, 0, 0b01, 0, 0b10, False),
    ([0, 0, 1], [1, 0, 4], [1, 1, 1], 0, 0, 0, 0b010, 0, False),
    ([0, 1, 1, 0], [1, 2, 3, 3], [1, 1, 1, 1], 0, 0, 0, 0, 0, True),
    ([-1, -1, -1, -1], [-100, -100, -100, -100], [-1, -1, -1, -1], 0, 0, 0, 0, 0, False),
]


@pytest.mark.parametrize("case", STRIDED, ids=[str(i) for i in range(len(STRIDED))])
def test_strided_slice(case: tuple[Any, ...]) -> None:
    begin, end, strides, bm, em, el, na, sh, offset = case
    w = Writer()
    x = w.input([2, 4, 5, 3])
    y = w.op("STRIDED_SLICE", [x, w.const(np.array(begin, np.int32)), w.const(np.array(end, np.int32)),
                               w.const(np.array(strides, np.int32))],
             ("StridedSliceOptions", {"BeginMask": bm, "EndMask": em, "EllipsisMask": el, "NewAxisMask": na,
                                      "ShrinkAxisMask": sh, "Offset": offset}))
    check(w, [y], [rand(2, 4, 5, 3)])


def test_slice() -> None:
    w = Writer()
    x = w.input([2, 4, 5, 3])
    begin, size = w.const(np.array([1, 0, 2, 1], np.int32)), w.const(np.array([1, -1, 2, 2], np.int32))
    y = w.op("SLICE", [x, begin, size], out_shape=[1, 4, 2, 2])
    check(w, [y], [rand(2, 4, 5, 3)])


# --------------------------------------------------------------------------------------------- resize


RESIZE_SIZES = [((5, 7), (9, 13)), ((8, 8), (16, 16)), ((8, 6), (3, 5)), ((4, 4), (4, 4)), ((1, 3), (4, 1))]


@pytest.mark.parametrize("align,half", [(False, True), (True, False), (False, False)],
                         ids=["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("sizes", RESIZE_SIZES, ids=str)
@pytest.mark.parametrize("op", ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"])
def test_resize(op: str, align: bool, half: bool, sizes: tuple[tuple[int, int], tuple[int, int]]) -> None:
    (h, wd), out = sizes
    w = Writer()
    x = w.input([2, h, wd, 3])
    opts = "ResizeBilinearOptions" if op == "RESIZE_BILINEAR" else "ResizeNearestNeighborOptions"
    y = w.op(op, [x, w.const(np.array(out, np.int32))],
             (opts, {"AlignCorners": align, "HalfPixelCenters": half}))
    check(w, [y], [rand(2, h, wd, 3, lo=-10, hi=10)], atol=2e-5)


# --------------------------------------------------------------------------------------------- weights


def test_dequantize_float16_and_int8() -> None:
    w = Writer()
    x = w.input([1, 3, 4, 6])
    f16 = w.op("DEQUANTIZE", [w.const(rand(6, 1, 1, 6).astype(np.float16))], out_shape=[6, 1, 1, 6])
    q = w.const(RNG.integers(-127, 128, size=(6, 3, 3, 6)).astype(np.int8),
                quant=(rand(6, lo=0.01, hi=0.05), np.zeros(6, np.int64), 0))
    i8 = w.op("DEQUANTIZE", [q], out_shape=[6, 3, 3, 6])
    y = w.op("CONV_2D", [x, f16, w.const(rand(6))], conv_options(Padding=1))
    z = w.op("CONV_2D", [x, i8, w.const(rand(6))], conv_options(Padding=0))
    check(w, [y, z], [rand(1, 3, 4, 6)])
    graph = load_graph(w.finish([y, z])).graph
    assert {op.op for op in graph.operations} == {"conv2d"}  # weights folded, no dequantize at run time


# (dense shape, traversal order, block map, formats per level, block sizes)
SPARSE = [
    ((6, 8), [0, 1], [], [0, 1], None),
    ((6, 8), [1, 0], [], [0, 1], None),
    ((6, 8), [0, 1], [], [1, 1], None),
    ((4, 8), [0, 1, 2], [1], [0, 1, 0], [4]),
    ((4, 8), [0, 1, 2, 3], [0, 1], [0, 1, 0, 0], [2, 2]),
    ((16, 1, 1, 24), [0, 1, 2, 3], [], [0, 0, 0, 1], None),  # pose_detection's layout
]


@pytest.mark.parametrize("case", SPARSE, ids=[str(i) for i in range(len(SPARSE))])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_densify(case: tuple[Any, ...], dtype: Any) -> None:
    shape, traversal, block_map, formats, block_sizes = case
    dense = rand(*shape) * (RNG.random(shape) < 0.35)
    dense[0] = 0  # an all-zero row: an empty CSR segment
    dense = dense.astype(dtype)
    w = Writer()
    x = w.input(list(shape))
    c = w.const(dense, sparse=(traversal, block_map, formats, block_sizes))
    d = w.op("DENSIFY", [c], out_shape=list(shape), out_dtype=dtype)
    if dtype == np.float16:
        d = w.op("DEQUANTIZE", [d], out_shape=list(shape))
    y = w.op("ADD", [x, d], ("AddOptions", {}))
    check(w, [y], [rand(*shape)], rtol=0, atol=0)
    t = read_tflite(w.finish([y])).tensors[c]
    np.testing.assert_array_equal(densify(np.asarray(_sparse_values(dense, traversal, block_map, formats,
                                                                    block_sizes)), shape, *t.sparsity), dense)


def test_densify_by_hand() -> None:
    """The schema's own example: a 4x4 matrix with 2x2 blocks, one CSR level over block columns."""
    values = np.arange(1, 9, dtype=np.float32)
    levels = [Level(0, 2), Level(1, 0, np.array([0, 1, 2]), np.array([0, 1])), Level(0, 2), Level(0, 2)]
    out = densify(values, (4, 4), [0, 1, 2, 3], [0, 1], levels)
    np.testing.assert_array_equal(out, [[1, 2, 0, 0], [3, 4, 0, 0], [0, 0, 5, 6], [0, 0, 7, 8]])


# --------------------------------------------------------------------------------------------- misc, errors


@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True)])
def test_batch_matmul(adj_x: bool, adj_y: bool) -> None:
    w = Writer()
    a_shape, b_shape = ([2, 5, 3] if adj_x else [2, 3, 5]), ([1, 4, 5] if adj_y else [1, 5, 4])
    a, b = w.input(a_shape), w.input(b_shape)
    y = w.op("BATCH_MATMUL", [a, b], ("BatchMatMulOptions", {"AdjX": adj_x, "AdjY": adj_y}))
    check(w, [y], [rand(*a_shape), rand(*b_shape)])


def test_same_padding_matches_tflite_formula() -> None:
    assert same_padding(9, 3, 2, 1) == (1, 1)
    assert same_padding(8, 3, 2, 1) == (0, 1)  # the odd pixel goes at the end
    assert same_padding(8, 3, 1, 2) == (2, 2)
    assert same_padding(5, 1, 2, 1) == (0, 0)


def test_unsupported_operators_are_listed_in_one_error() -> None:
    w = Writer()
    x = w.input([1, 4, 4, 3])
    shape = [1, 4, 4, 3]
    a = w.op("RELU", [x], out_shape=shape)
    b = w.op("MyCustomOp", [a], custom=b"\x00", out_shape=shape)
    c = w.op("RELU", [b], out_shape=shape)  # depends on an unsupported op: not listed again
    d = w.op("ADD", [x, a], ("AddOptions", {"FusedActivationFunction": 5}), out_shape=shape)  # SIGN_BIT
    e = w.op("MIRROR_PAD", [x, w.const(np.array([[0, 0], [1, 1], [1, 1], [0, 0]], np.int32))],
             ("MirrorPadOptions", {"Mode": 1}), out_shape=[1, 6, 6, 3])
    model = read_tflite(w._serialize([c, d, e]))
    with pytest.raises(NotSupportedError, match=r"3 TFLite operator\(s\) cannot be mapped") as info:
        model.emit(GraphBuilderAdapter())
    message = str(info.value)
    assert "3 TFLite operator(s) cannot be mapped" in message
    assert "#1 MyCustomOp -> 't2'" in message and "no WebNN mapping" in message
    assert "#3 ADD -> 't4'" in message and "fused activation 5" in message
    assert "#4 MIRROR_PAD" in message and "SYMMETRIC" in message
    assert "#2 " not in message


def test_builder_calls_go_through_the_interface() -> None:
    """The loader only calls input/constant/op/build, with spec names and camelCase options."""
    calls: list[tuple[str, Any, dict[str, Any]]] = []

    class Recorder:
        def input(self, name: str, desc: dict[str, Any]) -> str:
            calls.append(("input", name, desc))
            return name

        def constant(self, desc: dict[str, Any], data: np.ndarray) -> str:
            assert data.flags.c_contiguous and str(data.dtype) == desc["dataType"]
            calls.append(("constant", desc, {}))
            return f"c{len(calls)}"

        def op(self, name: str, *args: Any, **options: Any) -> str:
            calls.append((name, args, options))
            return f"{name}{len(calls)}"

        def build(self, outputs: dict[str, Any]) -> dict[str, Any]:
            return outputs

    w = Writer()
    x = w.input([1, 5, 5, 2])
    y = w.op("CONV_2D", [x, w.const(rand(3, 3, 3, 2)), w.const(rand(3))],
             ("Conv2DOptions", {"Padding": 0, "StrideH": 2, "StrideW": 2, "FusedActivationFunction": 3}))
    out = read_tflite(w.finish([y])).emit(Recorder())
    conv = next(c for c in calls if c[0] == "conv2d")
    assert conv[2]["inputLayout"] == "nhwc" and conv[2]["filterLayout"] == "ohwi"
    assert conv[2]["padding"] == [1, 1, 1, 1] and conv[2]["strides"] == [2, 2] and conv[2]["label"] == "t3"
    relu6 = {"label": "t3", "minValue": 0.0, "maxValue": 6.0}
    assert calls[-1] == ("clamp", (f"conv2d{len(calls) - 1}",), relu6)
    assert list(out) == ["t3"]


def test_malformed_models_raise_one_error_type_naming_where() -> None:
    """Every malformed model is a TFLiteModelError (a DataError) naming the model and what is wrong."""
    w = Writer()
    x = w.input([1, 4])
    c = w.const(rand(1, 3))
    w.tensors[c]["shape"] = [1, 4]  # 3 stored values for a [1, 4] constant
    bad_data = w.op("ADD", [x, c], ("AddOptions", {}), out_shape=[1, 4])
    with pytest.raises(TFLiteModelError, match=r"constant tensor 1 't1': shape \[1, 4\] needs 4 float32 values, "
                                               r"its buffer holds 3 \(12 bytes\)"):
        load_graph(w._serialize([bad_data]))

    w = Writer()
    x, y = w.input([1, 4]), w.input([1, 3])
    out = w.op("ADD", [x, y], ("AddOptions", {}), out_shape=[1, 4])  # shapes that do not broadcast
    with pytest.raises(TFLiteModelError, match=r"<bytes>: operator #0 ADD -> 't2': .*add") as info:
        load_graph(w._serialize([out]))
    assert info.value.to_json()["name"] == "DataError"

    with pytest.raises(TFLiteModelError, match=r"not a TFLite model \(5 bytes"):
        read_tflite(b"hello")


def test_unmappable_operators_are_the_same_error_type() -> None:
    w = Writer()
    x = w.input([1, 4, 4, 3])
    y = w.op("MyCustomOp", [x], custom=b"\x00", out_shape=[1, 4, 4, 3])
    with pytest.raises(TFLiteUnsupportedError, match=r"^<bytes>: 1 TFLite operator\(s\) cannot be mapped to "
                       r"WebNN:\n  #0 MyCustomOp -> 't1': no WebNN mapping for this operator$") as info:
        load_graph(w._serialize([y]))
    assert isinstance(info.value, TFLiteModelError) and isinstance(info.value, NotSupportedError)
    assert info.value.to_json()["name"] == "NotSupportedError"


def test_densify_refuses_metadata_the_stored_values_cannot_justify() -> None:
    """Checked before allocating: a huge extent, a dense size that disagrees with the shape, bad segments."""
    one = np.ones(1, np.float32)
    csr = Level(1, 0, np.array([0, 1]), np.array([5]))
    with pytest.raises(ValueError, match=r"1 stored values cannot justify a dense shape \[1, 1073741824\]"):
        densify(one, (1, 1 << 30), [0, 1], [], [Level(0, 1), csr])
    with pytest.raises(ValueError, match="level 0 is dense with size 268435457, its dimension has 1"):
        densify(one, (1, 8), [0, 1], [], [Level(0, (1 << 28) + 1), csr])
    with pytest.raises(ValueError, match="level 1's 2 segments do not delimit 1 indices for 3 parents"):
        densify(one, (3, 8), [0, 1], [], [Level(0, 3), csr])
    with pytest.raises(ValueError, match=r"indices outside 0..3"):
        densify(one, (1, 4), [0, 1], [], [Level(0, 1), csr])


def test_recording_names_the_model_in_errors() -> None:
    from py_core.loaders.recording import record_tflite

    with pytest.raises(TFLiteModelError, match=r"^selfie\.tflite: not a TFLite model"):
        record_tflite(b"\x00" * 16, "selfie.tflite")
