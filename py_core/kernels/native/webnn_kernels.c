/* The hot float32 kernels of the compiled graph, in C with 128-bit vectors.
 *
 * Built twice from this one file (Makefile, `make build`):
 *   - for the browser: clang --target=wasm32-unknown-emscripten -msimd128 as a Pyodide side module
 *     (_webnn_kernels.wasm32.so, shipped in the core wheel; Pyodide loads it, Python calls it with ctypes);
 *   - for CPython: gcc -shared (_webnn_kernels.host.so), so the core test suite runs the same code.
 * GCC vector extensions lower to wasm SIMD128 with clang and to SSE with gcc: no intrinsics, one source.
 *
 * Why: Pyodide's NumPy has no BLAS and no SIMD; its einsum product reaches 2-7 GFLOP/s and SciPy's wasm
 * OpenBLAS 5-8, while a 4x8 register-tiled SIMD product is measured in docs/performance.md.
 *
 * Rules: no libc (freestanding, nothing allocated here: every buffer comes from NumPy), float32 only,
 * plain multiply then add (wasm SIMD128 has no fused multiply-add, so results do not depend on contraction),
 * and the same post-op arithmetic as py_core/compiler/kernels.py so fused and unfused graphs round alike.
 *
 * Indices: every count, stride, geometry value and offset is an i64 (64 bits in both builds; `long` is 32 bits
 * in wasm32), so padding or dilations near 2^32 give exact coordinates, and a coordinate is compared with the
 * input's bounds before it becomes an address.  py_core/kernels/native/__init__.py checks once, where the C
 * kernel is chosen, that every value and every coordinate formed here stays below 2^62 (no i64 overflow); the
 * build adds -fwrapv anyway, so no overflow is undefined behaviour the optimiser could use to drop a check.
 */

typedef long long i64;
_Static_assert(sizeof(i64) == 8, "i64 must be 64 bits");

#define EXPORT __attribute__((visibility("default")))

typedef float v4 __attribute__((vector_size(16), aligned(4))); /* unaligned loads and stores are fine */
typedef int v4i __attribute__((vector_size(16), aligned(4)));

/* post-op codes (act), shared with py_core/kernels/native/__init__.py */
enum { ACT_NONE = 0, ACT_CLAMP = 1, ACT_HARD_SWISH = 2 };
/* bias codes */
enum { BIAS_NONE = 0, BIAS_PER_ROW = 1, BIAS_PER_COL = 2 };

static inline v4 ld(const float *p) { return *(const v4 *)p; }
static inline void st(float *p, v4 v) { *(v4 *)p = v; }
static inline v4 splat(float a) { return (v4){a, a, a, a}; }
static inline v4 zero4(void) { return (v4){0.0f, 0.0f, 0.0f, 0.0f}; }

/* where mask lanes are set take b, else a (mask from a vector comparison: all ones or zero) */
static inline v4 blend(v4 a, v4 b, v4i mask) { return (v4)(((v4i)a & ~mask) | ((v4i)b & mask)); }

/* NaN compares false, so NaN passes through clamp unchanged, as np.copyto(y, lo, where=y < lo) does */
static inline v4 act4(v4 v, int act, float lo, float hi) {
  if (act == ACT_CLAMP) {
    v = blend(v, splat(lo), v < splat(lo));
    v = blend(v, splat(hi), v > splat(hi));
  } else if (act == ACT_HARD_SWISH) {
    /* x * min(max(x + 3, 0), 6) / 6 in the reference's order */
    v4 t = v + splat(3.0f);
    t = blend(t, zero4(), t < zero4());
    t = blend(t, splat(6.0f), t > splat(6.0f));
    v = v * t;
    v = v / splat(6.0f);
  }
  return v;
}

static inline float act1(float v, int act, float lo, float hi) {
  if (act == ACT_CLAMP) {
    if (v < lo) v = lo;
    if (v > hi) v = hi;
  } else if (act == ACT_HARD_SWISH) {
    float t = v + 3.0f;
    if (t < 0.0f) t = 0.0f;
    if (t > 6.0f) t = 6.0f;
    v = v * t;
    v = v / 6.0f;
  }
  return v;
}

/* ------------------------------------------------------------------------------------------------ GEMM
 * C[M, N] = act(A[M, K] B[K, N] + bias).  A is read through two strides (row ar, column ak: row-major,
 * transposed or pre-packed alike), B row by row (row stride ldb, unit column stride), C row-major (ldc).
 * Register tile 4 rows x 8 columns: 8 accumulators, 2 B vectors and 1 broadcast fit the 16 vector
 * registers of x86-64 (what a browser's wasm JIT maps SIMD128 to) without spills.  Sums run in k order.
 */

typedef struct {
  const float *bias;
  int bias_mode, act;
  float lo, hi;
} epilogue;

static inline v4 bias4(const epilogue *e, i64 i, i64 j) {
  if (e->bias_mode == BIAS_PER_ROW) return splat(e->bias[i]);
  if (e->bias_mode == BIAS_PER_COL) return ld(e->bias + j);
  return zero4();
}

static inline float bias1(const epilogue *e, i64 i, i64 j) {
  if (e->bias_mode == BIAS_PER_ROW) return e->bias[i];
  if (e->bias_mode == BIAS_PER_COL) return e->bias[j];
  return 0.0f;
}

static inline void out4(const epilogue *e, float *c, i64 i, i64 j, v4 acc) {
  st(c, act4(acc + bias4(e, i, j), e->act, e->lo, e->hi));
}

static void tile_4x8(i64 K, const float *a, i64 ar, i64 ak, const float *b, i64 ldb, float *c, i64 ldc,
                     const epilogue *e, i64 i, i64 j) {
  v4 c00 = zero4(), c01 = zero4(), c10 = zero4(), c11 = zero4();
  v4 c20 = zero4(), c21 = zero4(), c30 = zero4(), c31 = zero4();
  const float *a0 = a, *a1 = a + ar, *a2 = a + 2 * ar, *a3 = a + 3 * ar;
  for (i64 k = 0; k < K; k++) {
    v4 b0 = ld(b), b1 = ld(b + 4);
    v4 x;
    x = splat(a0[0]); c00 += x * b0; c01 += x * b1;
    x = splat(a1[0]); c10 += x * b0; c11 += x * b1;
    x = splat(a2[0]); c20 += x * b0; c21 += x * b1;
    x = splat(a3[0]); c30 += x * b0; c31 += x * b1;
    a0 += ak; a1 += ak; a2 += ak; a3 += ak;
    b += ldb;
  }
  out4(e, c, i, j, c00); out4(e, c + 4, i, j + 4, c01);
  out4(e, c + ldc, i + 1, j, c10); out4(e, c + ldc + 4, i + 1, j + 4, c11);
  out4(e, c + 2 * ldc, i + 2, j, c20); out4(e, c + 2 * ldc + 4, i + 2, j + 4, c21);
  out4(e, c + 3 * ldc, i + 3, j, c30); out4(e, c + 3 * ldc + 4, i + 3, j + 4, c31);
}

static void tile_1x8(i64 K, const float *a, i64 ak, const float *b, i64 ldb, float *c, const epilogue *e,
                     i64 i, i64 j) {
  v4 c0 = zero4(), c1 = zero4();
  for (i64 k = 0; k < K; k++) {
    v4 x = splat(a[0]);
    c0 += x * ld(b);
    c1 += x * ld(b + 4);
    a += ak;
    b += ldb;
  }
  out4(e, c, i, j, c0);
  out4(e, c + 4, i, j + 4, c1);
}

static void tile_4x4(i64 K, const float *a, i64 ar, i64 ak, const float *b, i64 ldb, float *c, i64 ldc,
                     const epilogue *e, i64 i, i64 j) {
  v4 c0 = zero4(), c1 = zero4(), c2 = zero4(), c3 = zero4();
  const float *a0 = a, *a1 = a + ar, *a2 = a + 2 * ar, *a3 = a + 3 * ar;
  for (i64 k = 0; k < K; k++) {
    v4 b0 = ld(b);
    c0 += splat(a0[0]) * b0; c1 += splat(a1[0]) * b0; c2 += splat(a2[0]) * b0; c3 += splat(a3[0]) * b0;
    a0 += ak; a1 += ak; a2 += ak; a3 += ak;
    b += ldb;
  }
  out4(e, c, i, j, c0); out4(e, c + ldc, i + 1, j, c1);
  out4(e, c + 2 * ldc, i + 2, j, c2); out4(e, c + 3 * ldc, i + 3, j, c3);
}

static void tile_1x4(i64 K, const float *a, i64 ak, const float *b, i64 ldb, float *c, const epilogue *e,
                     i64 i, i64 j) {
  v4 c0 = zero4();
  for (i64 k = 0; k < K; k++) {
    c0 += splat(a[0]) * ld(b);
    a += ak;
    b += ldb;
  }
  out4(e, c, i, j, c0);
}

static void tile_1x1(i64 K, const float *a, i64 ak, const float *b, i64 ldb, float *c, const epilogue *e,
                     i64 i, i64 j) {
  float s = 0.0f;
  for (i64 k = 0; k < K; k++) {
    s += a[0] * b[0];
    a += ak;
    b += ldb;
  }
  *c = act1(s + bias1(e, i, j), e->act, e->lo, e->hi);
}

/* one column strip [j, j + width) for the rows [i0, i1) */
static void strip(i64 i0, i64 i1, i64 j, i64 width, i64 K, const float *A, i64 ar, i64 ak, const float *B,
                  i64 ldb, float *C, i64 ldc, const epilogue *e) {
  i64 i = i0;
  const float *b = B + j;
  if (width == 8) {
    for (; i + 4 <= i1; i += 4) tile_4x8(K, A + i * ar, ar, ak, b, ldb, C + i * ldc + j, ldc, e, i, j);
    for (; i < i1; i++) tile_1x8(K, A + i * ar, ak, b, ldb, C + i * ldc + j, e, i, j);
  } else if (width == 4) {
    for (; i + 4 <= i1; i += 4) tile_4x4(K, A + i * ar, ar, ak, b, ldb, C + i * ldc + j, ldc, e, i, j);
    for (; i < i1; i++) tile_1x4(K, A + i * ar, ak, b, ldb, C + i * ldc + j, e, i, j);
  } else {
    for (; i < i1; i++) tile_1x1(K, A + i * ar, ak, b, ldb, C + i * ldc + j, e, i, j);
  }
}

static i64 strip_width(i64 N, i64 j) { return N - j >= 8 ? 8 : N - j >= 4 ? 4 : 1; }

/* Rows in blocks of 64 so a block of A (64 x K) stays in cache while every column strip of B passes by;
 * when B is the small operand (K x N under 64 K floats), each strip of B stays in cache instead. */
#define ROW_BLOCK 64

EXPORT void wk_sgemm(i64 M, i64 N, i64 K, const float *A, i64 ar, i64 ak, const float *B, i64 ldb, float *C,
                     i64 ldc, const float *bias, int bias_mode, int act, float lo, float hi) {
  epilogue e = {bias, bias_mode, act, lo, hi};
  for (i64 i0 = 0; i0 < M; i0 += ROW_BLOCK) {
    i64 i1 = i0 + ROW_BLOCK < M ? i0 + ROW_BLOCK : M;
    for (i64 j = 0; j < N;) {
      i64 w = strip_width(N, j);
      strip(i0, i1, j, w, K, A, ar, ak, B, ldb, C, ldc, &e);
      j += w;
    }
  }
}

/* --------------------------------------------------------------------------------------------- im2col
 * The column matrix of a groups-1 convolution, zeros where a tap falls in the padding.
 * NHWC: cols[n, oh, ow, i, j, c] (one row per output pixel: [pixels, KH*KW*C] x [KH*KW*C, O]).
 * NCHW: cols[c, i, j, oh, ow] for image n (one row per tap: [O, C*KH*KW] x [C*KH*KW, OH*OW]).
 */

EXPORT void wk_im2col_nhwc(i64 N, i64 H, i64 W, i64 C, const float *x, i64 KH, i64 KW, i64 sh, i64 sw, i64 dh,
                           i64 dw, i64 pt, i64 pl, i64 OH, i64 OW, float *cols) {
  for (i64 n = 0; n < N; n++)
    for (i64 oh = 0; oh < OH; oh++)
      for (i64 ow = 0; ow < OW; ow++)
        for (i64 i = 0; i < KH; i++) {
          i64 ih = oh * sh - pt + i * dh;
          for (i64 j = 0; j < KW; j++) {
            i64 iw = ow * sw - pl + j * dw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
              for (i64 c = 0; c < C; c++) cols[c] = 0.0f;
            } else {
              const float *src = x + ((n * H + ih) * W + iw) * C;
              i64 c = 0;
              for (; c + 4 <= C; c += 4) st(cols + c, ld(src + c));
              for (; c < C; c++) cols[c] = src[c];
            }
            cols += C;
          }
        }
}

EXPORT void wk_im2col_nchw(i64 C, i64 H, i64 W, const float *x, i64 KH, i64 KW, i64 sh, i64 sw, i64 dh,
                           i64 dw, i64 pt, i64 pl, i64 OH, i64 OW, float *cols) {
  for (i64 c = 0; c < C; c++)
    for (i64 i = 0; i < KH; i++)
      for (i64 j = 0; j < KW; j++)
        for (i64 oh = 0; oh < OH; oh++) {
          i64 ih = oh * sh - pt + i * dh;
          float *row = cols + (((c * KH + i) * KW + j) * OH + oh) * OW;
          if (ih < 0 || ih >= H) {
            for (i64 ow = 0; ow < OW; ow++) row[ow] = 0.0f;
            continue;
          }
          const float *src = x + (c * H + ih) * W;
          for (i64 ow = 0; ow < OW; ow++) {
            i64 iw = ow * sw - pl + j * dw;
            row[ow] = (iw >= 0 && iw < W) ? src[iw] : 0.0f;
          }
        }
}

/* ------------------------------------------------------------------------------------------- depthwise
 * One filter tap set per channel (groups == channels, one input channel per group).
 */

/* NHWC: per output pixel, the channels in vectors; taps outside the input are skipped (zero padding). */
EXPORT void wk_depthwise_nhwc(i64 N, i64 H, i64 W, i64 C, const float *x, i64 KH, i64 KW, const float *w,
                              i64 sh, i64 sw, i64 dh, i64 dw, i64 pt, i64 pl, i64 OH, i64 OW, float *y,
                              const float *bias, int act, float lo, float hi) {
  for (i64 n = 0; n < N; n++)
    for (i64 oh = 0; oh < OH; oh++)
      for (i64 ow = 0; ow < OW; ow++) {
        float *out = y + ((n * OH + oh) * OW + ow) * C;
        i64 c = 0;
        for (; c + 8 <= C; c += 8) {
          v4 s0 = zero4(), s1 = zero4();
          for (i64 i = 0; i < KH; i++) {
            i64 ih = oh * sh - pt + i * dh;
            if (ih < 0 || ih >= H) continue;
            for (i64 j = 0; j < KW; j++) {
              i64 iw = ow * sw - pl + j * dw;
              if (iw < 0 || iw >= W) continue;
              const float *src = x + ((n * H + ih) * W + iw) * C + c;
              const float *tap = w + (i * KW + j) * C + c;
              s0 += ld(src) * ld(tap);
              s1 += ld(src + 4) * ld(tap + 4);
            }
          }
          if (bias) {
            s0 += ld(bias + c);
            s1 += ld(bias + c + 4);
          }
          st(out + c, act4(s0, act, lo, hi));
          st(out + c + 4, act4(s1, act, lo, hi));
        }
        for (; c < C; c++) {
          float s = 0.0f;
          for (i64 i = 0; i < KH; i++) {
            i64 ih = oh * sh - pt + i * dh;
            if (ih < 0 || ih >= H) continue;
            for (i64 j = 0; j < KW; j++) {
              i64 iw = ow * sw - pl + j * dw;
              if (iw < 0 || iw >= W) continue;
              s += x[((n * H + ih) * W + iw) * C + c] * w[(i * KW + j) * C + c];
            }
          }
          out[c] = act1(s + (bias ? bias[c] : 0.0f), act, lo, hi);
        }
      }
}

#if defined(__clang__)
#define EVEN_LANES(a, b) __builtin_shufflevector((a), (b), 0, 2, 4, 6)
#else
#define EVEN_LANES(a, b) __builtin_shuffle((a), (b), (v4i){0, 2, 4, 6})
#endif

/* four outputs' inputs along a row: p[0], p[s], p[2s], p[3s] (stride 2 reads p[0..7]) */
static inline v4 ld_strided(const float *p, i64 s) {
  if (s == 1) return ld(p);
  if (s == 2) return EVEN_LANES(ld(p), ld(p + 4));
  return (v4){p[0], p[s], p[2 * s], p[3 * s]};
}

/* one output of a channel plane with every tap checked against the borders (zero padding) */
static inline float dw_point(const float *plane, i64 H, i64 W, const float *taps, i64 KH, i64 KW, i64 ih0, i64 iw0,
                             i64 dh, i64 dw) {
  float s = 0.0f;
  for (i64 i = 0; i < KH; i++) {
    i64 ih = ih0 + i * dh;
    if (ih < 0 || ih >= H) continue;
    for (i64 j = 0; j < KW; j++) {
      i64 iw = iw0 + j * dw;
      if (iw < 0 || iw >= W) continue;
      s += plane[ih * W + iw] * taps[i * KW + j];
    }
  }
  return s;
}

/* NCHW: per channel plane and output row, four outputs at a time in a register, the taps of the rows inside
 * the input summed in (i, j) order (as the NHWC kernel); the columns near the borders one at a time. */
EXPORT void wk_depthwise_nchw(i64 N, i64 C, i64 H, i64 W, const float *x, i64 KH, i64 KW, const float *w,
                              i64 sh, i64 sw, i64 dh, i64 dw, i64 pt, i64 pl, i64 OH, i64 OW, float *y,
                              const float *bias, int act, float lo, float hi) {
  /* vector columns: ow * sw - pl >= 0 for the first tap, and the last tap's last read inside the row */
  i64 v_lo = (pl + sw - 1) / sw;
  i64 last_read = (KW - 1) * dw - pl + (sw == 2 ? 1 : 0); /* + (ow + 3) * sw <= W - 1 */
  i64 v_hi = (W - 1 - last_read) >= 0 ? (W - 1 - last_read) / sw - 3 : -1; /* last vector start, inclusive */
  for (i64 n = 0; n < N; n++)
    for (i64 c = 0; c < C; c++) {
      const float *plane = x + (n * C + c) * H * W;
      const float *taps = w + c * KH * KW;
      float b = bias ? bias[c] : 0.0f;
      for (i64 oh = 0; oh < OH; oh++) {
        float *row = y + ((n * C + c) * OH + oh) * OW;
        i64 ih0 = oh * sh - pt;
        i64 ow = 0;
        for (; ow < OW && ow < v_lo; ow++)
          row[ow] = act1(dw_point(plane, H, W, taps, KH, KW, ih0, ow * sw - pl, dh, dw) + b, act, lo, hi);
        for (; ow <= v_hi && ow + 4 <= OW; ow += 4) {
          v4 acc = zero4();
          for (i64 i = 0; i < KH; i++) {
            i64 ih = ih0 + i * dh;
            if (ih < 0 || ih >= H) continue;
            const float *src = plane + (ih * W + ow * sw - pl); /* one offset: every partial sum is in bounds */
            for (i64 j = 0; j < KW; j++) acc += ld_strided(src + j * dw, sw) * splat(taps[i * KW + j]);
          }
          st(row + ow, act4(acc + splat(b), act, lo, hi));
        }
        for (; ow < OW; ow++)
          row[ow] = act1(dw_point(plane, H, W, taps, KH, KW, ih0, ow * sw - pl, dh, dw) + b, act, lo, hi);
      }
    }
}

/* ----------------------------------------------------------------------------------------- resample2d
 * Bilinear resampling of two adjacent axes of [outer, H, W, inner] (NHWC: outer N, inner C; NCHW: outer N*C,
 * inner 1).  Source rows/columns and their weights come from py_core/kernels/pooling.py, so the arithmetic is
 * the reference's separable blend, in its order: along H first (v = a*(1-ty) + b*ty), then along W.
 */
EXPORT void wk_resample_linear(i64 outer, i64 H, i64 W, i64 inner, const float *x, i64 OH, i64 OW,
                               const int *y0, const int *y1, const float *wy0, const float *wy1, const int *x0,
                               const int *x1, const float *wx0, const float *wx1, float *y) {
  for (i64 o = 0; o < outer; o++) {
    const float *plane = x + o * H * W * inner;
    for (i64 oy = 0; oy < OH; oy++) {
      const float *r0 = plane + y0[oy] * W * inner, *r1 = plane + y1[oy] * W * inner;
      float a = wy0[oy], b = wy1[oy];
      for (i64 ox = 0; ox < OW; ox++) {
        const float *p00 = r0 + x0[ox] * inner, *p10 = r1 + x0[ox] * inner;
        const float *p01 = r0 + x1[ox] * inner, *p11 = r1 + x1[ox] * inner;
        float c = wx0[ox], d = wx1[ox];
        i64 k = 0;
        if (inner >= 4) {
          v4 va = splat(a), vb = splat(b), vc = splat(c), vd = splat(d);
          for (; k + 4 <= inner; k += 4) {
            v4 left = ld(p00 + k) * va + ld(p10 + k) * vb;
            v4 right = ld(p01 + k) * va + ld(p11 + k) * vb;
            st(y + k, left * vc + right * vd);
          }
        }
        for (; k < inner; k++) {
          float left = p00[k] * a + p10[k] * b;
          float right = p01[k] * a + p11[k] * b;
          y[k] = left * c + right * d;
        }
        y += inner;
      }
    }
  }
}

/* ------------------------------------------------------------------------------------------------ sigmoid
 * y = 1 / (1 + exp(-x)) in place, with exp from Cody-Waite range reduction and Cephes' degree-6 polynomial
 * (within 2.3 ulp of the float64 sigmoid, measured).  Below x = -87 exp(-x) overflows float32; there
 * sigmoid(x) = exp(x) to within rounding and is subnormal, so it is formed as (p * 2^(n + 64)) * 2^-64: one
 * rounding into the subnormal range.  NaN stays NaN.
 */
static inline v4 exp_poly(v4 x, v4 *n_out, v4 *t_out) {
  const v4 magic = splat(12582912.0f); /* 1.5 * 2^23: adding it rounds to an integer in the low mantissa bits */
  v4 t = x * splat(1.44269504088896341f) + magic;
  v4 n = t - magic;
  v4 r = x - n * splat(0.693359375f) - n * splat(-2.12194440e-4f);
  v4 p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  *n_out = n;
  *t_out = t;
  return p * r * r + r + splat(1.0f);
}

/* exp(x) for x in [-87.3, 88.3]: 2^n from the integer in t's low bits, (n + 127) << 23 */
static inline v4 exp4(v4 x) {
  v4 n, t;
  x = blend(x, splat(88.3f), x > splat(88.3f));
  x = blend(x, splat(-87.3f), x < splat(-87.3f));
  v4 p = exp_poly(x, &n, &t);
  v4i e = ((v4i)t - (v4i)splat(12582912.0f) + 127) << 23;
  return p * (v4)e;
}

/* exp(x) for x in [-104, -87] (subnormal results; below -104 it rounds to 0) */
static inline v4 exp4_tiny(v4 x) {
  v4 n, t;
  x = blend(x, splat(-104.0f), x < splat(-104.0f));
  v4 p = exp_poly(x, &n, &t);
  v4i e = ((v4i)t - (v4i)splat(12582912.0f) + 127 + 64) << 23;
  return (p * (v4)e) * splat(5.42101086e-20f); /* 2^-64 */
}

static inline int any4(v4i m) { return m[0] | m[1] | m[2] | m[3]; }

/* Subnormal operands and results cost a microcode assist per operation on x86 (measured 3 ms instead of 0.2
 * for 65536 inputs mostly below -87): lanes that would make them get a harmless stand-in, then their value. */
static inline v4 sigmoid4(v4 x) {
  v4i tiny = x < splat(-87.0f);
  if (!any4(tiny)) return splat(1.0f) / (splat(1.0f) + exp4(-x));
  v4 y = splat(1.0f) / (splat(1.0f) + exp4(-blend(x, zero4(), tiny)));
  v4i band = tiny & (x >= splat(-104.0f)); /* subnormal results; below -104 the result rounds to 0 */
  if (any4(band)) y = blend(y, exp4_tiny(blend(splat(-87.0f), x, band)), band);
  return blend(y, zero4(), tiny & ~band);
}

EXPORT void wk_sigmoid(float *y, i64 count) {
  i64 i = 0;
  for (; i + 4 <= count; i += 4) st(y + i, sigmoid4(ld(y + i)));
  if (i < count) {
    float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (i64 k = i; k < count; k++) tail[k - i] = y[k];
    v4 v = sigmoid4(ld(tail));
    for (i64 k = i; k < count; k++) y[k] = v[k - i];
  }
}

/* --------------------------------------------------------------------------------------------- activations
 * y = act(x) element-wise (relu and clamp as ACT_CLAMP, hardSwish): the standalone operators, same arithmetic
 * as the fused store above.
 */
EXPORT void wk_activation(const float *x, float *y, i64 count, int act, float lo, float hi) {
  i64 i = 0;
  for (; i + 4 <= count; i += 4) st(y + i, act4(ld(x + i), act, lo, hi));
  for (; i < count; i++) y[i] = act1(x[i], act, lo, hi);
}

/* ======================================================================================= small-op kernels
 * The per-operator kernels of transformer-sized graphs (#16 line 2: a BERT-like encoder's erf, layer norm and
 * softmax on [32, 128]-sized tensors), where NumPy's temporaries cost more than the arithmetic.
 */

/* ------------------------------------------------------------------------------------------------ erf
 * |x| < 0.5: the Taylor series of erf(x) / x in x^2 to x^14 (truncation below 2e-8 relative: no cancellation
 * near 0, where a 1 - erfc form loses every digit); above: Abramowitz & Stegun 7.1.26,
 * 1 - t (a1 + t (a2 + ... a5 t)) exp(-x^2) with t = 1 / (1 + p |x|), absolute error below 1.5e-7 (WPT's erf
 * tolerance is 1/1024 absolute), and the sign copied from x.  erf(+-inf) = +-1, NaN stays NaN.
 */
static inline v4 erf4(v4 x) {
  const v4i sign = (v4i)x & (v4i)splat(-0.0f);
  v4 a = (v4)((v4i)x & ~(v4i)splat(-0.0f));
  v4 s = x * x;
  v4 small = splat(-1.4925650358406252e-05f);
  small = small * s + splat(1.2055332981789665e-04f);
  small = small * s + splat(-8.548327023450853e-04f);
  small = small * s + splat(5.223977625442188e-03f);
  small = small * s + splat(-2.6866170645131252e-02f);
  small = small * s + splat(1.1283791670955128e-01f);
  small = small * s + splat(-3.7612638903183754e-01f);
  small = small * s + splat(1.1283791670955126f);
  small = small * x;
  v4 t = splat(1.0f) / (splat(1.0f) + splat(0.3275911f) * a);
  v4 p = splat(1.061405429f);
  p = p * t + splat(-1.453152027f);
  p = p * t + splat(1.421413741f);
  p = p * t + splat(-0.284496736f);
  p = p * t + splat(0.254829592f);
  v4 big = splat(1.0f) - p * t * exp4(-s);
  big = (v4)((v4i)big | sign);
  return blend(big, small, a < splat(0.5f));
}

EXPORT void wk_erf(const float *x, float *y, i64 count) {
  i64 i = 0;
  for (; i + 4 <= count; i += 4) st(y + i, erf4(ld(x + i)));
  if (i < count) {
    float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (i64 k = i; k < count; k++) tail[k - i] = x[k];
    v4 v = erf4(ld(tail));
    for (i64 k = i; k < count; k++) y[k] = v[k - i];
  }
}

/* ---------------------------------------------------------------------------------- layerNormalization
 * Each of `rows` rows of n contiguous floats: y = (x - mean) / sqrt(var + eps) * scale + bias, scale and bias
 * of n floats (either may be NULL).  Mean, variance (two passes: no cancellation) and the affine step in
 * float64, rounded once to float32, as the float64 reference does; sqrt is the correctly rounded instruction.
 */
EXPORT void wk_layer_norm(const float *x, float *y, i64 rows, i64 n, const float *scale, const float *bias,
                          float eps) {
  for (i64 r = 0; r < rows; r++) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    double sum = 0.0;
    for (i64 k = 0; k < n; k++) sum += (double)xr[k];
    double mean = sum / (double)n;
    double sq = 0.0;
    for (i64 k = 0; k < n; k++) {
      double d = (double)xr[k] - mean;
      sq += d * d;
    }
    double inv = 1.0 / __builtin_sqrt(sq / (double)n + (double)eps);
    for (i64 k = 0; k < n; k++) {
      double v = ((double)xr[k] - mean) * inv;
      if (scale) v *= (double)scale[k];
      if (bias) v += (double)bias[k];
      yr[k] = (float)v;
    }
  }
}

/* ---------------------------------------------------------------------------------------------- softmax
 * Along the last axis, rows of n contiguous floats: exp(x - max) with the SIMD exp above (the largest term is
 * exactly 1, nothing overflows; the subnormal tail below -87 as sigmoid4 forms it, 0 below -104 and at -inf),
 * summed in float64, each term divided by the sum rounded to float32.  NaN anywhere in a row gives NaN for that
 * row, as the reference does.
 */
static inline v4 exp4_full(v4 x) {
  v4i tiny = x < splat(-87.0f);
  if (!any4(tiny)) return exp4(x);
  v4 y = exp4(blend(x, zero4(), tiny));
  v4i band = tiny & (x >= splat(-104.0f));
  if (any4(band)) y = blend(y, exp4_tiny(blend(splat(-87.0f), x, band)), band);
  return blend(y, zero4(), tiny & ~band);
}

EXPORT void wk_softmax(const float *x, float *y, i64 rows, i64 n) {
  for (i64 r = 0; r < rows; r++) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    float m = xr[0];
    int nan = 0;
    for (i64 k = 0; k < n; k++) {
      nan |= xr[k] != xr[k];
      m = xr[k] > m ? xr[k] : m;
    }
    if (nan) {
      for (i64 k = 0; k < n; k++) yr[k] = __builtin_nanf("");
      continue;
    }
    double sum = 0.0;
    i64 k = 0;
    for (; k + 4 <= n; k += 4) {
      v4 e = exp4_full(ld(xr + k) - splat(m));
      st(yr + k, e);
      sum += (double)e[0] + (double)e[1] + (double)e[2] + (double)e[3];
    }
    if (k < n) {
      float tail[4] = {-200.0f, -200.0f, -200.0f, -200.0f}; /* a stand-in (exp gives 0), unused */
      for (i64 j = k; j < n; j++) tail[j - k] = xr[j] - m;
      v4 e = exp4_full(ld(tail));
      for (i64 j = k; j < n; j++) {
        yr[j] = e[j - k];
        sum += (double)e[j - k];
      }
    }
    float total = (float)sum;
    for (k = 0; k < n; k++) yr[k] /= total;
  }
}
