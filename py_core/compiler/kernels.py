"""Kernels the compiler binds at build time: pre-packed convolutions and products with fused epilogues.

Float32 only (float16 graphs keep the reference kernels, which round once at the end).  Every kernel here
returns a new array and applies its epilogue (py_core.kernels.traits.Epilogue: the in-place versions registered
with each fusable operator's kernel) in place on it, so a fused chain allocates one output.  Which operator packs
into which class is each product's `pack` trait (py_core/kernels/convolution.py, matrix.py), which also hands the
class the reference functions it falls back to (`conv2d_nhwc`, `matmul2d`): this module imports no operator
family, so the families' pack functions can import it without an import cycle (tests/core/test_import_cycles.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from py_core.kernels import native
from py_core.kernels.traits import Epilogue, NativeAct
from py_core.kernels.window import MAX_IM2COL_BYTES

F32 = np.dtype(np.float32)
# The 2-D product every packed kernel falls back to: py_core.kernels.matrix.matmul2d, handed in by the pack trait
Product = Callable[[np.ndarray, np.ndarray], np.ndarray]

# ----------------------------------------------------------------------------------------- epilogues


def _fits_c(b: np.ndarray) -> bool:
    """Whether the C product can take this 2-D float32 constant as its packed right-hand side."""
    return b.ndim == 2 and native.gemm_ok(np.empty((1, b.shape[0]), F32), b)


def native_epilogue(epilogue: Sequence[Epilogue]) -> tuple[NativeAct, int]:
    """The C kernels' fused activation for an epilogue chain: ((act, lo, hi), epilogue steps consumed).

    Only the first step can fuse (it must follow the bias add directly), and only if its operator registered a
    `native_act`; the rest stay NumPy in-place steps on the result."""
    if epilogue and epilogue[0].native is not None:
        return epilogue[0].native, 1
    return (native.ACT_NONE, 0.0, 0.0), 0


def with_epilogue(kernel: Callable[..., np.ndarray], epilogue: Sequence[Epilogue]) -> Callable[..., np.ndarray]:
    """Wrap a kernel whose result is a new float32 array: the epilogue runs on it in place, in order."""
    if not epilogue:
        return kernel
    steps = [e.apply for e in epilogue]

    def fused(**operands: np.ndarray) -> np.ndarray:
        y = kernel(**operands)
        for p in steps:
            p(y)
        return y

    return fused


# ----------------------------------------------------------------------------------------- convolution


def _pad(x: np.ndarray, layout: str, padding: Sequence[int]) -> np.ndarray:
    top, bottom, left, right = padding
    if not (top or bottom or left or right):
        return x
    if layout == "nhwc":
        n, h, w, c = x.shape
        out = np.zeros((n, h + top + bottom, w + left + right, c), dtype=x.dtype)
        out[:, top:top + h, left:left + w, :] = x
    else:
        n, c, h, w = x.shape
        out = np.zeros((n, c, h + top + bottom, w + left + right), dtype=x.dtype)
        out[:, :, top:top + h, left:left + w] = x
    return out


def _pad_nhwc(x: np.ndarray, padding: Sequence[int]) -> np.ndarray:
    """A contiguous padded copy of a channels-last view (also when nothing needs padding)."""
    top, bottom, left, right = padding
    n, h, w, c = x.shape
    out = np.empty((n, h + top + bottom, w + left + right, c), dtype=F32)
    if top or bottom or left or right:
        out[:, :top], out[:, top + h:], out[:, :, :left], out[:, :, left + w:] = 0, 0, 0, 0
    out[:, top:top + h, left:left + w, :] = x
    return out


class PackedConv2d:
    """conv2d with a constant filter re-laid out once for the kernel that runs it, bias and epilogue fused.

    modes (chosen from the shape): "gemm1x1" (a 1x1, stride 1, unpadded conv is one matrix product in either
    layout), "im2col" (groups 1: shifted slices side by side, one product), "depthwise" (one input channel
    per group: per-tap multiply-adds into a preallocated accumulator, no product).
    """

    def __init__(self, filter_hwio: np.ndarray, bias: np.ndarray | None, *, padding: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int], groups: int, layout: str,
                 in_shape: Sequence[int], out_shape: Sequence[int], epilogue: Sequence[Epilogue] = (),
                 reference: Callable[..., np.ndarray], product: Product):
        # reference: py_core.kernels.convolution.conv2d_nhwc, product: matmul2d (handed in by the pack trait)
        self.conv2d_nhwc, self.matmul2d = reference, product
        kh, kw, cg, o = filter_hwio.shape
        self.kh, self.kw, self.o = kh, kw, o
        self.padding, self.strides, self.dilations = tuple(padding), tuple(strides), tuple(dilations)
        self.layout, self.out_shape = layout, tuple(out_shape)
        self.epilogue = tuple(epilogue)
        self.posts = [e.apply for e in self.epilogue]
        self.groups = groups
        w = filter_hwio.astype(F32)
        # the NumPy paths below copy the input into a padded buffer: fine for the padding real models use, but
        # padding far beyond the input and the window takes the reference kernel, which reads only
        # the taps landing inside the input; an im2col matrix past MAX_IM2COL_BYTES takes it on C too (it
        # builds the matrix tile by tile)
        oh, ow = out_shape[1:3] if layout == "nhwc" else out_shape[2:4]
        cols_bytes = (out_shape[0] if layout == "nhwc" else 1) * oh * ow * kh * kw * cg * F32.itemsize
        numpy_only = not self._padding_is_small(in_shape[1:3] if layout == "nhwc" else in_shape[2:4])
        simple = kh == kw == 1 and self.strides == (1, 1) and not any(self.padding)  # no im2col at all
        whole_too_big = groups == 1 and not simple and cols_bytes > MAX_IM2COL_BYTES
        self.reference = "always" if whole_too_big else "numpy" if numpy_only else ""
        if groups == 1:
            self.mode = "gemm1x1" if simple else "im2col"
            if layout == "nhwc":  # [M, KH*KW*C] x [KH*KW*C, O]
                self._w: np.ndarray | None = np.ascontiguousarray(w.reshape(kh * kw * cg, o))
            else:  # [O, C*KH*KW] x [C*KH*KW, OH*OW] per image
                self._w = np.ascontiguousarray(w.transpose(3, 2, 0, 1).reshape(o, cg * kh * kw))
        else:
            self.mode = "depthwise"
            # taps [KH, KW, C] broadcast along a channels-last accumulator in both layouts: an NCHW tap
            # multiply-add loops over rows as short as 7 (measured 4x slower at 7x7x960 than channels-last)
            self._w = np.ascontiguousarray(w.reshape(kh, kw, o))
        # channels-last groups-1 weights are the product's right-hand side: with the C kernels, held once,
        # packed into the panels it reads (native.PackedB); `w` unpacks them for the NumPy paths.  A conv that
        # always takes the reference kernel never reads the packed form: it keeps the plain weights rather than
        # unpacking them on every run
        self.w_packed: native.PackedB | None = None
        if (groups == 1 and layout == "nhwc" and self.reference != "always" and native.available()
                and _fits_c(self.w)):
            self.w_packed, self._w = native.PackedB(self.w), None
        self.w_rows: np.ndarray | None = None
        self.w_planes: np.ndarray | None = None
        if bias is None:
            self.bias = None
        else:
            b = bias.astype(F32)
            self.bias = b if layout == "nhwc" else np.ascontiguousarray(b.reshape(o, 1, 1))
        # for the C kernels (py_core.kernels.native): bias as a vector, the first epilogue step fused, depthwise taps
        # of a channels-first graph as [C, KH, KW]
        self.bias_vec = None if bias is None else np.ascontiguousarray(bias.astype(F32).reshape(o))
        self.native_act, used = native_epilogue(self.epilogue)
        self.native_posts = self.posts[used:]
        self.taps_chw = (np.ascontiguousarray(self.w.transpose(2, 0, 1))
                         if self.mode == "depthwise" and layout == "nchw" else None)
        # The one range check of the C kernels' geometry (int64 coordinates far from overflow), made here where
        # the kernel is chosen: valid WebNN options always pass it today, so this only guards future limits.
        in_hw = in_shape[1:3] if layout == "nhwc" else in_shape[2:4]
        out_hw = out_shape[1:3] if layout == "nhwc" else out_shape[2:4]
        self.native_fits = native.conv_fits(in_hw, (kh, kw), self.strides, self.dilations,
                                            (self.padding[0], self.padding[2]), out_hw)

    @property
    def w(self) -> np.ndarray:
        """The filter in the layout of its mode (see __init__), a plain array."""
        return self._w if self._w is not None else self.w_packed.unpack()  # type: ignore[union-attr]

    def _padding_is_small(self, in_hw: Sequence[int]) -> bool:
        """Whether a padded copy of one input plane costs no more than the input plus the im2col columns."""
        (h, w), (top, bottom, left, right) = in_hw, self.padding
        oh, ow = self.out_shape[1:3] if self.layout == "nhwc" else self.out_shape[2:4]
        padded = (h + top + bottom) * (w + left + right)
        return padded <= 2 * (h * w + oh * ow * self.kh * self.kw) + 4096

    def _reference(self, x: np.ndarray) -> np.ndarray:
        """The bounded reference convolution (py_core.kernels.convolution), bias and epilogue on its result."""
        nhwc = self.layout == "nhwc"
        out_hw = self.out_shape[1:3] if nhwc else self.out_shape[2:4]
        # the packed weights seen as [KH, KW, C/groups, O] again (a view: weights stay held once)
        if self.mode == "depthwise":
            hwio = self.w.reshape(self.kh, self.kw, 1, self.o)
        elif nhwc:
            hwio = self.w.reshape(self.kh, self.kw, -1, self.o)
        else:
            hwio = self.w.reshape(self.o, -1, self.kh, self.kw).transpose(2, 3, 1, 0)
        y = self.conv2d_nhwc(x if nhwc else x.transpose(0, 2, 3, 1), hwio, padding=self.padding,
                        strides=self.strides, dilations=self.dilations, groups=self.groups, out_hw=out_hw, wide=F32)
        if not nhwc:
            y = np.ascontiguousarray(y.transpose(0, 3, 1, 2))
        if self.bias is not None:
            np.add(y, self.bias, out=y)
        for p in self.posts:
            p(y)
        return y

    def _taps(self, xp: np.ndarray, oh: int, ow: int, layout: str = "") -> list[tuple[int, int, np.ndarray]]:
        (sh, sw), (dh, dw) = self.strides, self.dilations
        nhwc = (layout or self.layout) == "nhwc"
        taps = []
        for i in range(self.kh):
            for j in range(self.kw):
                rs = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
                cs = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
                taps.append((i, j, xp[:, rs, cs, :] if nhwc else xp[:, :, rs, cs]))
        return taps

    def _depthwise_rows(self, xp: np.ndarray, y: np.ndarray, tmp: np.ndarray, oh: int, ow: int) -> None:
        n, hp, wp, c = xp.shape
        (sh, _), (dh, dw) = self.strides, self.dilations
        if self.w_rows is None or self.w_rows.shape[2] != ow * c:
            # taps tiled along the output row once: [KH, KW, OW*C]
            self.w_rows = np.ascontiguousarray(np.tile(self.w, (1, 1, ow)))
        rows = xp.reshape(n, hp, wp * c)
        y2, t2 = y.reshape(n, oh, ow * c), tmp.reshape(n, oh, ow * c)
        for i in range(self.kh):
            r = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
            for j in range(self.kw):
                view = rows[:, r, j * dw * c:j * dw * c + ow * c]
                if i == 0 and j == 0:
                    np.multiply(view, self.w_rows[i, j], out=y2)
                else:
                    np.multiply(view, self.w_rows[i, j], out=t2)
                    np.add(y2, t2, out=y2)

    def _depthwise_planes(self, x: np.ndarray, n: int, c: int, oh: int, ow: int) -> np.ndarray:
        """Channels-first, stride-1 depthwise without transposes: each padded channel plane is one flat vector,
        and output (oh, ow) of tap (i, j) reads flat index (oh * Wp + ow) + dh * i * Wp + dw * j.  So a tap is
        one contiguous slice of length OH * Wp per channel (the Wp - OW extra columns per row are computed and
        dropped): loops run over whole planes, not over rows of OW (4.5 vs 13 ms at 112x112x32 in Pyodide)."""
        (dh, dw), (top, bottom, left, right) = self.dilations, self.padding
        _, _, h, w = x.shape
        wp = w + left + right
        span = oh * wp
        last = (self.kh - 1) * dh * wp + (self.kw - 1) * dw
        hp = max(h + top + bottom, -(-(last + span) // wp))  # rows enough for the last tap's slice
        xp = np.zeros((n, c, hp, wp), F32)
        xp[:, :, top:top + h, left:left + w] = x
        flat = xp.reshape(n, c, hp * wp)
        if self.w_planes is None:
            self.w_planes = np.ascontiguousarray(self.w[..., None])  # [KH, KW, C, 1]
        wide = np.empty((n, c, span), F32)
        tmp = np.empty_like(wide)
        for i in range(self.kh):
            for j in range(self.kw):
                off = i * dh * wp + j * dw
                view = flat[:, :, off:off + span]
                if i == 0 and j == 0:
                    np.multiply(view, self.w_planes[i, j], out=wide)
                else:
                    np.multiply(view, self.w_planes[i, j], out=tmp)
                    np.add(wide, tmp, out=wide)
        # the copy that drops the extra columns; bias and epilogue follow on it in __call__
        return np.ascontiguousarray(wide.reshape(n, c, oh, wp)[:, :, :, :ow])

    def _native(self, x: np.ndarray) -> np.ndarray:
        """The same convolution through the C kernels: bias and the first activation in the kernel's store."""
        nhwc = self.layout == "nhwc"
        act, lo, hi = self.native_act
        top, left = self.padding[0], self.padding[2]
        geometry = (self.strides, self.dilations, (top, left))
        if self.mode == "depthwise":
            taps = self.w if nhwc else self.taps_chw
            y = native.depthwise(x, taps, self.layout, *geometry, self.out_shape, self.bias_vec, act, lo, hi)
        elif nhwc:
            n, oh, ow, o = self.out_shape
            a = (x.reshape(-1, x.shape[-1]) if self.mode == "gemm1x1"
                 else native.im2col_nhwc(x, self.kh, self.kw, *geometry, oh, ow))
            if self.w_packed is not None:
                y = native.sgemm_packed(a, self.w_packed, bias=self.bias_vec, bias_mode=native.BIAS_PER_COL,
                                        act=act, lo=lo, hi=hi)
            else:
                y = native.sgemm(a, self.w, bias=self.bias_vec, bias_mode=native.BIAS_PER_COL, act=act, lo=lo,
                                 hi=hi)
            y = y.reshape(self.out_shape)
        else:
            n, o, oh, ow = self.out_shape
            c = x.shape[1]
            y = np.empty(self.out_shape, F32)
            for b in range(n):
                if self.mode == "gemm1x1":
                    native.sgemm(self.w, x[b].reshape(c, -1), out=y[b].reshape(o, oh * ow), bias=self.bias_vec,
                                 bias_mode=native.BIAS_PER_ROW, act=act, lo=lo, hi=hi)
                else:  # im2col gathered block by block into the product's panels
                    native.conv_nchw(x[b], self.w, self.kh, self.kw, *geometry, oh, ow, y[b].reshape(o, oh * ow),
                                     self.bias_vec, act, lo, hi)
        for p in self.native_posts:
            p(y)
        return y

    def __call__(self, input: np.ndarray) -> np.ndarray:
        if self.native_fits and native.available() and self.reference != "always":
            return self._native(np.ascontiguousarray(input, dtype=F32))
        x = input if input.dtype == F32 else input.astype(F32)
        if self.reference:
            return self._reference(x)
        nhwc = self.layout == "nhwc"
        if nhwc:
            n, oh, ow, o = self.out_shape
        else:
            n, o, oh, ow = self.out_shape
        if self.mode == "gemm1x1":
            if nhwc:
                y = self.matmul2d(x.reshape(-1, x.shape[-1]), self.w).reshape(self.out_shape)
            elif n == 1:
                y = self.matmul2d(self.w, x.reshape(x.shape[1], -1)).reshape(self.out_shape)
            else:
                y = np.empty(self.out_shape, F32)
                for b in range(n):
                    y[b] = self.matmul2d(self.w, x[b].reshape(x.shape[1], -1)).reshape(o, oh, ow)
        elif self.mode == "im2col":
            xp = _pad(x, self.layout, self.padding)
            taps = self._taps(xp, oh, ow)
            k = self.kh * self.kw
            if nhwc and x.shape[3] < 8:
                # few channels (an RGB input layer): copying [.., C] slabs loops over 3 elements at a time;
                # gather each (tap, channel) plane instead, as rows of the transposed column matrix
                c = x.shape[3]
                cols_t = np.empty((k, c, n, oh, ow), F32)
                for t, (_, _, view) in enumerate(taps):
                    for ch in range(c):
                        cols_t[t, ch] = view[..., ch]
                y = self.matmul2d(cols_t.reshape(k * c, n * oh * ow).T, self.w).reshape(self.out_shape)
            elif nhwc:
                c = x.shape[3]
                cols = np.empty((n, oh, ow, k, c), F32)
                for t, (_, _, view) in enumerate(taps):
                    cols[:, :, :, t, :] = view
                y = self.matmul2d(cols.reshape(n * oh * ow, k * c), self.w).reshape(self.out_shape)
            else:
                c = x.shape[1]
                y = np.empty(self.out_shape, F32)
                cols = np.empty((c, k, oh, ow), F32)
                for b in range(n):
                    for t, (_, _, view) in enumerate(taps):
                        cols[:, t] = view[b]
                    y[b] = self.matmul2d(self.w, cols.reshape(c * k, oh * ow)).reshape(o, oh, ow)
        elif not nhwc and self.strides == (1, 1) and o < 64:
            # measured in Pyodide: planes win with few channels on large maps (9.6 vs 16.8 ms at 112x112x32),
            # the channels-last rows win from 144 channels on (14.2 vs 16.7 ms at 56x56x144)
            y = self._depthwise_planes(x, n, o, oh, ow)
        else:
            # NCHW input: the padding copy also transposes to channels-last (one pass either way)
            if nhwc and not any(self.padding):
                xp = x
            else:
                xp = _pad_nhwc(x if nhwc else x.transpose(0, 2, 3, 1), self.padding)
            acc_shape = (n, oh, ow, o)
            y = np.empty(acc_shape, F32)
            tmp = np.empty(acc_shape, F32)
            if self.strides[1] == 1:
                # stride 1 along W: a tap's [OW, C] block of every row is one contiguous run of the padded
                # row, so the multiply-adds loop over OW*C elements (not C: 8.6 -> ms at 128x128x16)
                self._depthwise_rows(xp, y, tmp, oh, ow)
            else:
                for t, (i, j, view) in enumerate(self._taps(xp, oh, ow, "nhwc")):
                    if t == 0:
                        np.multiply(view, self.w[i, j], out=y)
                    else:  # two passes per tap into preallocated buffers: no temporaries
                        np.multiply(view, self.w[i, j], out=tmp)
                        np.add(y, tmp, out=y)
            if not nhwc:
                # bias and epilogue on the channels-last accumulator, then one transposing copy
                if self.bias is not None:
                    np.add(y, self.bias.reshape(o), out=y)
                for p in self.posts:
                    p(y)
                return np.ascontiguousarray(y.transpose(0, 3, 1, 2))
        if self.bias is not None:
            np.add(y, self.bias, out=y)
        for p in self.posts:
            p(y)
        return y


class PackedMatmul:
    """matmul / gemm with a constant 2-D right-hand side stored as the [K, N] the product wants; alpha,
    beta * C and epilogue applied in place."""

    def __init__(self, b: np.ndarray, *, product: Product, a_transpose: bool = False, alpha: float = 1.0,
                 c: np.ndarray | None = None, epilogue: Sequence[Epilogue] = (), out_shape: Sequence[int] = ()):
        self.matmul2d = product  # py_core.kernels.matrix.matmul2d, handed in by the pack trait
        plain = np.ascontiguousarray(b.astype(F32))
        # with the C kernels, B is held once, packed into the panels the product reads (native.PackedB); the
        # NumPy path (C kernels switched off) unpacks it per call
        self.packed = native.PackedB(plain) if native.available() and plain.size and _fits_c(plain) else None
        self._b = None if self.packed is not None else plain
        self.n = plain.shape[1]
        self.a_transpose, self.alpha = a_transpose, np.float32(alpha)
        self.c = None if c is None else c.astype(F32)
        self.epilogue, self.out_shape = tuple(epilogue), tuple(out_shape)
        self.posts = [e.apply for e in self.epilogue]
        # the C product takes C as a bias when it is one row (or a scalar) added after an unscaled product;
        # the first epilogue step fuses only right after that add (or right after the product, without C)
        n = self.n
        self.bias_vec: np.ndarray | None = None
        one_row = self.c is None or self.c.size == 1 or (self.c.ndim >= 1 and self.c.shape[-1] == self.c.size == n)
        fusable = self.alpha == 1 and one_row
        if self.c is not None and fusable:
            self.bias_vec = np.ascontiguousarray(np.broadcast_to(self.c.reshape(-1), (n,)), dtype=F32)
        self.native_act, used = native_epilogue(self.epilogue) if fusable else ((native.ACT_NONE, 0.0, 0.0), 0)
        self.native_fused = fusable
        self.native_posts = self.posts[used:]

    @property
    def b(self) -> np.ndarray:
        """B as a plain [K, N] array."""
        return self._b if self._b is not None else self.packed.unpack()  # type: ignore[union-attr]

    def __call__(self, a: np.ndarray) -> np.ndarray:
        x = a if a.dtype == F32 else a.astype(F32)
        if self.a_transpose:
            x = x.T
        act, lo, hi = self.native_act
        if self.packed is not None and native.available() and (x.ndim != 2 or native.sgemm_packed_ok(x)):
            rows = (np.ascontiguousarray(x) if x.ndim != 2 else x).reshape(-1, x.shape[-1])
            y = native.sgemm_packed(rows, self.packed, bias=self.bias_vec, bias_mode=native.BIAS_PER_COL, act=act,
                                    lo=lo, hi=hi).reshape(self.out_shape)
            fused, posts = self.native_fused, self.native_posts
        elif self._b is not None and native.available() and (x.ndim != 2 or native.gemm_ok(x, self._b)):
            rows = (np.ascontiguousarray(x) if x.ndim != 2 else x).reshape(-1, x.shape[-1])
            y = native.sgemm(rows, self._b, bias=self.bias_vec, bias_mode=native.BIAS_PER_COL, act=act, lo=lo,
                             hi=hi).reshape(self.out_shape)
            fused, posts = self.native_fused, self.native_posts
        else:
            y = self.matmul2d(x.reshape(-1, x.shape[-1]), self.b).reshape(self.out_shape)
            fused, posts = False, self.posts
        if not fused:  # alpha and C after the product
            if self.alpha != 1:
                np.multiply(y, self.alpha, out=y)
            if self.c is not None:
                np.add(y, self.c, out=y)
        for p in posts:
            p(y)
        return y
