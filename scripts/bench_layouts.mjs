// Which input layout each layout-taking operator's kernels run fastest in, inside Pyodide under Node (the
// worker's engine without a page): MobileNetV2-shaped conv2d (packed, C kernels on, fused relu6) and pools, in
// nchw and nhwc, median ms per run.  The numbers beside KernelTraits.layouts (py_core/kernels/convolution.py,
// pooling.py) come from this, and the last lines time the compiler's layout pass (py_core/compiler/layout.py) on
// converter-style blocks with and without it.  Not part of `make bench`.
//   node scripts/bench_layouts.mjs [RUNS]
import {pyodideWithCore} from './pyodide_node.mjs';

const py = await pyodideWithCore();
py.globals.set('RUNS', Number(process.argv[2] || '30'));
console.log(await py.runPythonAsync(`
import time
import numpy as np
from py_core.compiler.kernels import PackedConv2d
from py_core.kernels import KERNELS, traits
from py_core.kernels.traits import Epilogue, PackSite

rng = np.random.default_rng(0)
relu6 = traits("clamp").epilogue_of("clamp", {"minValue": 0.0, "maxValue": 6.0})

def median_ms(fn, x):
    fn(x)
    ts = []
    for _ in range(RUNS):
        t = time.perf_counter(); fn(x); ts.append(time.perf_counter() - t)
    return 1000 * sorted(ts)[len(ts) // 2]

def nchw_shape(nhwc):
    n, h, w, c = nhwc
    return (n, c, h, w)

def out_hw(h, k, s, p):
    return (h + 2 * p - k) // s + 1

rows = []
# name, H(=W), C in, C out, kernel, stride, depthwise
convs = [("1x1 expand 56x56 24->144", 56, 24, 144, 1, 1, False),
         ("1x1 project 28x28 192->32", 28, 192, 32, 1, 1, False),
         ("1x1 7x7 320->1280", 7, 320, 1280, 1, 1, False),
         ("3x3 s2 stem 224x224 3->32", 224, 3, 32, 3, 2, False),
         ("3x3 28x28 64->64", 28, 64, 64, 3, 1, False),
         ("dw 3x3 s1 112x112x32", 112, 32, 32, 3, 1, True),
         ("dw 3x3 s2 112x112x96", 112, 96, 96, 3, 2, True),
         ("dw 3x3 s1 14x14x384", 14, 384, 384, 3, 1, True),
         ("dw 3x3 s2 14x14x576", 14, 576, 576, 3, 2, True)]
for name, h, ci, co, k, s, dw in convs:
    p = k // 2
    oh = out_hw(h, k, s, p)
    x_nhwc = rng.standard_normal((1, h, h, ci), dtype=np.float32)
    w = rng.standard_normal((co, 1 if dw else ci, k, k), dtype=np.float32)  # oihw
    b = rng.standard_normal(co, dtype=np.float32)
    t = {}
    for layout in ("nchw", "nhwc"):
        x = x_nhwc if layout == "nhwc" else np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))
        in_shape, out_shape = x.shape, (1, oh, oh, co) if layout == "nhwc" else (1, co, oh, oh)
        options = {"padding": [p] * 4, "strides": [s, s], "dilations": [1, 1], "groups": co if dw else 1,
                   "inputLayout": layout, "filterLayout": "oihw"}
        site = PackSite({"filter": w, "bias": b}, {"input": in_shape, "filter": w.shape, "bias": b.shape},
                        out_shape, options, (relu6,))
        packed = traits("conv2d").pack(site)
        t[layout] = median_ms(lambda v: packed.kernel(input=v), x)
    rows.append(f"conv2d {name:28s} nchw {t['nchw']:7.2f}  nhwc {t['nhwc']:7.2f}  ({packed.variant})")

pools = [("maxPool2d", "3x3 s2 112x112x64", 112, 64, 3, 2), ("averagePool2d", "3x3 s1 28x28x192", 28, 192, 3, 1),
         ("averagePool2d", "global 7x7x1280", 7, 1280, 7, 1)]
for op, name, h, c, k, s in pools:
    p = 0 if k == h else k // 2
    oh = out_hw(h, k, s, p)
    x_nhwc = rng.standard_normal((1, h, h, c), dtype=np.float32)
    t = {}
    for layout in ("nchw", "nhwc"):
        x = x_nhwc if layout == "nhwc" else np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))
        options = {"windowDimensions": [k, k], "padding": [p] * 4, "strides": [s, s], "dilations": [1, 1],
                   "layout": layout, "outputSizes": [oh, oh]}
        t[layout] = median_ms(lambda v: KERNELS[op](input=v, **options), x)
    rows.append(f"{op:13s} {name:22s} nchw {t['nchw']:7.2f}  nhwc {t['nhwc']:7.2f}")

# convTranspose2d (reference kernel: no packed variant), 2x upsampling as in segmentation decoders
for name, h, ci, co in [("4x4 s2 28x28 64->32", 28, 64, 32)]:
    x_nhwc = rng.standard_normal((1, h, h, ci), dtype=np.float32)
    w = rng.standard_normal((ci, co, 4, 4), dtype=np.float32)  # iohw
    t = {}
    for layout in ("nchw", "nhwc"):
        x = x_nhwc if layout == "nhwc" else np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))
        options = {"padding": [1] * 4, "strides": [2, 2], "dilations": [1, 1], "outputPadding": [0, 0],
                   "outputSizes": [2 * h, 2 * h], "groups": 1, "inputLayout": layout, "filterLayout": "iohw"}
        t[layout] = median_ms(lambda v: KERNELS["convTranspose2d"](input=v, filter=w, bias=None, **options), x)
    rows.append(f"convTranspose2d {name:20s} nchw {t['nchw']:7.2f}  nhwc {t['nhwc']:7.2f}")

# what a transpose around a kernel costs (the copy a layout switch removes)
for shape in [(1, 112, 112, 32), (1, 56, 56, 144), (1, 14, 14, 384)]:
    x = rng.standard_normal(shape, dtype=np.float32)
    ms = median_ms(lambda v: np.ascontiguousarray(v.transpose(0, 3, 1, 2)), x)
    rows.append(f"transpose nhwc->nchw {str(shape):22s} {ms:7.2f}")
# the layout pass on what a converter emits for a channels-last model on a channels-first backend: four blocks
# of transpose, conv 3x3 + relu6 (nchw), transpose back, residual add (nhwc), then a wrapped 3x3 average pool;
# interleaved, min and median ms per run
from py_core.builder import GraphBuilder
from py_core.compiler import CompileOptions
from py_core.runtime.executor import prepare
weights = [rng.standard_normal((64, 64, 3, 3), dtype=np.float32) * 0.05 for _ in range(4)]

def blocks(b):
    y = b.input("x", {"dataType": "float32", "shape": [1, 56, 56, 64]})
    for w in weights:
        f = b.constant({"dataType": "float32", "shape": list(w.shape)}, w)
        c = b.conv2d(b.transpose(y, permutation=[0, 3, 1, 2]), f, padding=[1, 1, 1, 1])
        y = b.add(b.transpose(b.clamp(c, minValue=0.0, maxValue=6.0), permutation=[0, 2, 3, 1]), y)
    p = b.averagePool2d(b.transpose(y, permutation=[0, 3, 1, 2]), windowDimensions=[3, 3], padding=[1, 1, 1, 1])
    return {"y": b.transpose(p, permutation=[0, 2, 3, 1])}

x = rng.standard_normal((1, 56, 56, 64), dtype=np.float32)
exes = {}
for name, opts in [("with the layout pass", CompileOptions()), ("without", CompileOptions(layout=False))]:
    b = GraphBuilder()
    exes[name] = prepare(b.build(blocks(b)), opts)
ts = {name: [] for name in exes}
for _ in range(RUNS):
    for name, exe in exes.items():
        exe.run({"x": x}) if not ts[name] else None  # warm
        t = time.perf_counter(); exe.run({"x": x}); ts[name].append(1000 * (time.perf_counter() - t))
for name, exe in exes.items():
    v = sorted(ts[name])
    rows.append(f"converter blocks {name:20s} min {v[0]:7.2f}  median {v[len(v) // 2]:7.2f}  ({len(exe.steps)} steps)")
"\\n".join(rows)
`));
