/* The hot float32 kernels of the compiled graph, in C with 128-bit vectors.
 *
 * Built three times from this one file (scripts/build_native.sh, `make build`):
 *   - for the browser: clang --target=wasm32-unknown-emscripten -msimd128 as a Pyodide side module
 *     (_webnn_kernels.wasm32.wasm, shipped in the core wheel; Pyodide loads it, Python calls it with ctypes),
 *     and the same with -DWK_RELAXED (_webnn_kernels.relaxed.wasm32.wasm: the packed product's multiply-add
 *     as f32x4.relaxed_madd, loaded first where the engine compiles it);
 *   - for CPython: gcc -shared (_webnn_kernels.host.so), so the core test suite runs the same code.
 * GCC vector extensions lower to wasm SIMD128 with clang and to SSE with gcc: no intrinsics, one source.
 *
 * Why: Pyodide's NumPy has no BLAS and no SIMD; its einsum product reaches 2-7 GFLOP/s and SciPy's wasm
 * OpenBLAS 5-8, while the packed-panel SIMD product here runs at 30-50 (docs/performance.md).
 *
 * Rules: no libc (freestanding, nothing allocated here: every buffer comes from NumPy), float32 data except the
 * recurrent loops near the end (float64, with their own exp and tanh),
 * plain multiply then add (-ffp-contract=off: no contraction the compiler chooses; only the relaxed build's
 * MADD below may fuse, where the engine decides), and the same post-op arithmetic as py_core/compiler/kernels.py so fused and unfused graphs round alike.
 *
 * Indices: every count, stride, geometry value and offset is an i64 (64 bits in both builds; `long` is 32 bits
 * in wasm32), so padding or dilations near 2^32 give exact coordinates, and a coordinate is compared with the
 * input's bounds before it becomes an address.  py_core/kernels/native/__init__.py checks once, where the C
 * kernel is chosen, that every value and every coordinate formed here stays below 2^62 (no i64 overflow); the
 * build adds -fwrapv anyway, so no overflow is undefined behaviour the optimiser could use to drop a check.
 */

typedef long long i64;
typedef __PTRDIFF_TYPE__ ptrdiff; /* an offset within one buffer: 32 bits in wasm32, 64 on the host */
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

/* v < lo ? lo : v and v > hi ? hi : v, lane by lane: in wasm f32x4.pmax(v, lo) and f32x4.pmin(v, hi), whose
 * definitions are exactly these (one maxps / minps on x86, where a comparison and a bitselect took four) */
static inline v4 raise_to(v4 v, v4 lo) {
#if defined(__wasm_simd128__)
  return __builtin_wasm_pmax_f32x4(v, lo);
#else
  return blend(v, lo, v < lo);
#endif
}

static inline v4 lower_to(v4 v, v4 hi) {
#if defined(__wasm_simd128__)
  return __builtin_wasm_pmin_f32x4(v, hi);
#else
  return blend(v, hi, v > hi);
#endif
}

/* NaN compares false, so NaN passes through clamp unchanged, as np.copyto(y, lo, where=y < lo) does */
static inline v4 act4(v4 v, int act, float lo, float hi) {
  if (act == ACT_CLAMP) {
    v = raise_to(v, splat(lo));
    v = lower_to(v, splat(hi));
  } else if (act == ACT_HARD_SWISH) {
    /* x * min(max(x + 3, 0), 6) / 6 in the reference's order */
    v4 t = v + splat(3.0f);
    t = raise_to(t, zero4());
    t = lower_to(t, splat(6.0f));
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
 * The strip kernel (used for M = 1 or N < 16, and without a work buffer): register tile 4 rows x 8 columns,
 * 8 accumulators, 2 B vectors and 1 broadcast fit the 16 vector registers of x86-64 (what a browser's wasm
 * JIT maps SIMD128 to) without spills.  Sums run in k order.  Larger products take the packed one below.
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

static void sgemm_strips(i64 M, i64 N, i64 K, const float *A, i64 ar, i64 ak, const float *B, i64 ldb, float *C,
                         i64 ldc, const epilogue *ep) {
  const epilogue e = *ep;
  for (i64 i0 = 0; i0 < M; i0 += ROW_BLOCK) {
    i64 i1 = i0 + ROW_BLOCK < M ? i0 + ROW_BLOCK : M;
    for (i64 j = 0; j < N;) {
      i64 w = strip_width(N, j);
      strip(i0, i1, j, w, K, A, ar, ak, B, ldb, C, ldc, &e);
      j += w;
    }
  }
}

/* ----------------------------------------------------------------------------------------- packed GEMM
 * The product as a BLAS does it: B is copied, one block of KC rows x NC columns at a time, into panels of
 * PANEL columns stored k-major (panel p holds B[k0 + t, p .. p + 15] at [t * PANEL], zeros past N), so the
 * inner loop reads one contiguous 64-byte line of B per k and broadcasts one element from each of MRB rows
 * of A.  One panel of a K block (KC x PANEL floats, 16 KB) stays in L1 while the rows of A pass by (panel
 * outside, rows inside).  Accumulators start from the partial sums of the earlier K blocks (read back from
 * C), so every sum still runs in k order, as in the strip kernel above; bias and activation in the store
 * after the last K block.  A constant B (gemm/matmul weights, channels-last conv filters) is packed once
 * (wk_pack_b) and multiplied with wk_sgemm_packed.
 *
 * Measured in Chromium 156 and Firefox 153 (docs/performance.md): the strip kernel reads one new B row
 * (stride ldb) per k, half of each 64-byte line, and runs at 17-20 GFLOP/s in Firefox against 26-39 in
 * Chromium on the same wasm; packed, Firefox runs the same shapes at 30-34 GFLOP/s and Chromium at 34-40
 * (38-50 for both with relaxed_madd).  MRB x PANEL = 2 x 16 (8 accumulators, 4 B vectors, 2 broadcasts) against
 * 4 x 8: equal within the noise; 6 x 8 and 3 x 16 spill (12 accumulators) and lose 30-50%.
 */
/* The multiply-add of the packed product's inner loop.  The relaxed build (WK_RELAXED, a second wasm file, see
 * scripts/build_native.sh) uses f32x4.relaxed_madd, which an engine may run as one fused multiply-add: on
 * x86 with FMA both V8 and SpiderMonkey do, and the product gains 15-30% in Chromium 156 and Firefox 153 (the
 * accumulator must be the third operand, the one an x86 FMA overwrites: as the first, Firefox ran 5-10%
 * slower than without).  Fused or not, each sum still runs in k order; a fused step rounds once instead of
 * twice (well inside native_check's tolerance).  The worker loads this build where the engine compiles it. */
#ifdef WK_RELAXED
/* clang 14 spells it f32x4.fma (the proposal's first opcode); build_native.sh renumbers it to relaxed_madd */
#define MADD(a, b, c) __builtin_wasm_fma_f32x4((a), (b), (c))
#else
#define MADD(a, b, c) ((c) + (a) * (b))
#endif
#define PANEL 16
#define PV (PANEL / 4)
#define MRB 2
#define KC 256
#define MC 128
#define NC 256

/* the float count of a K block [kc, n] packed into panels */
static inline i64 packed_size(i64 kc, i64 n) { return kc * ((n + PANEL - 1) / PANEL) * PANEL; }

static void pack_b_block(i64 kc, i64 n, const float *b, i64 ldb, float *out) {
  for (i64 p = 0; p < n; p += PANEL) {
    i64 w = n - p < PANEL ? n - p : PANEL;
    const float *src = b + p;
    if (w == PANEL) {
      for (i64 t = 0; t < kc; t++) {
        for (int v = 0; v < PV; v++) st(out + 4 * v, ld(src + 4 * v));
        src += ldb;
        out += PANEL;
      }
    } else {
      for (i64 t = 0; t < kc; t++) {
        for (i64 q = 0; q < PANEL; q++) out[q] = q < w ? src[q] : 0.0f;
        src += ldb;
        out += PANEL;
      }
    }
  }
}

/* the micro-kernels' store of a full tile: acc + bias (BIAS, an expression of r and v), then the clamp or not */
#define CLAMP_V(x) lower_to(raise_to((x), lo), hi)
#define PLAIN_V(x) (x)
#define STORE_TILE(MR_, NV_, BIAS, ACT)                                                                     \
  do {                                                                                                      \
    for (int r = 0; r < MR_; r++)                                                                           \
      for (int v = 0; v < NV_; v++) st(c + r * ldc + 4 * v, ACT(acc[r][v] + (BIAS)));                        \
  } while (0)

/* MR rows x 4 NV columns of C from a K block: acc = (first ? 0 : C) + A[rows, k0:k0+kc] panel (the panel's
 * first 4 NV columns: NV < PV for a last panel of few columns, e.g. 49 = 3 x 16 + 1) */
#define DEF_MICRO_(MR, NV)                                                                                  \
  static void micro_##MR##_##NV(i64 kc, const float *a, i64 ar, i64 ak, const float *bp, float *c, i64 ldc, \
                         i64 ncols, int first, int last, const epilogue *e, i64 i, i64 j) {                 \
    v4 acc[MR][NV];                                                                                         \
    if (first) {                                                                                            \
      for (int r = 0; r < MR; r++)                                                                          \
        for (int v = 0; v < NV; v++) acc[r][v] = zero4();                                                   \
    } else if (ncols == 4 * NV) {                                                                           \
      for (int r = 0; r < MR; r++)                                                                          \
        for (int v = 0; v < NV; v++) acc[r][v] = ld(c + r * ldc + 4 * v);                                   \
    } else {                                                                                                \
      for (int r = 0; r < MR; r++)                                                                          \
        for (int v = 0; v < NV; v++)                                                                        \
          for (int q = 0; q < 4; q++) acc[r][v][q] = 4 * v + q < ncols ? c[r * ldc + 4 * v + q] : 0.0f;     \
    }                                                                                                       \
    const float *ap[MR];                                                                                    \
    for (int r = 0; r < MR; r++) ap[r] = a + r * ar;                                                        \
    for (i64 k = 0; k < kc; k++) {                                                                          \
      v4 bv[NV];                                                                                            \
      for (int v = 0; v < NV; v++) bv[v] = ld(bp + 4 * v);                                                  \
      for (int r = 0; r < MR; r++) {                                                                        \
        v4 x = splat(*ap[r]);                                                                               \
        for (int v = 0; v < NV; v++) acc[r][v] = MADD(x, bv[v], acc[r][v]);                                                \
        ap[r] += ak;                                                                                        \
      }                                                                                                     \
      bp += PANEL;                                                                                          \
    }                                                                                                       \
    if (ncols == 4 * NV && last && e->act != ACT_HARD_SWISH) {                                              \
      /* the full tile's store with its bias and clamp branches taken once, not per vector (small K: 10-15%) */ \
      const v4 lo = splat(e->lo), hi = splat(e->hi);                                                        \
      const int clamp = e->act == ACT_CLAMP;                                                                \
      if (e->bias_mode == BIAS_PER_ROW && clamp) STORE_TILE(MR, NV, splat(e->bias[i + r]), CLAMP_V);        \
      else if (e->bias_mode == BIAS_PER_ROW) STORE_TILE(MR, NV, splat(e->bias[i + r]), PLAIN_V);            \
      else if (e->bias_mode == BIAS_PER_COL && clamp) STORE_TILE(MR, NV, ld(e->bias + j + 4 * v), CLAMP_V); \
      else if (e->bias_mode == BIAS_PER_COL) STORE_TILE(MR, NV, ld(e->bias + j + 4 * v), PLAIN_V);          \
      else if (clamp) STORE_TILE(MR, NV, zero4(), CLAMP_V);                                                 \
      else STORE_TILE(MR, NV, zero4(), PLAIN_V);                                                            \
    } else if (ncols == 4 * NV) {                                                                           \
      for (int r = 0; r < MR; r++)                                                                          \
        for (int v = 0; v < NV; v++)                                                                        \
          if (last) out4(e, c + r * ldc + 4 * v, i + r, j + 4 * v, acc[r][v]);                              \
          else st(c + r * ldc + 4 * v, acc[r][v]);                                                          \
    } else {                                                                                                \
      for (int r = 0; r < MR; r++)                                                                          \
        for (i64 q = 0; q < ncols && q < 4 * NV; q++) {                                                     \
          float s = acc[r][q / 4][q % 4];                                                                   \
          c[r * ldc + q] = last ? act1(s + bias1(e, i + r, j + q), e->act, e->lo, e->hi) : s;               \
        }                                                                                                   \
    }                                                                                                       \
  }

DEF_MICRO_(2, 4)
DEF_MICRO_(2, 3)
DEF_MICRO_(2, 2)
DEF_MICRO_(2, 1)
DEF_MICRO_(4, 2)
DEF_MICRO_(8, 1)
DEF_MICRO_(1, 4)
DEF_MICRO_(1, 3)
DEF_MICRO_(1, 2)
DEF_MICRO_(1, 1)

/* one load per 64-byte line of A's rows [m0, m1) x columns [k0, k0 + kc) (row-major A): the micro-kernels'
 * first pass over a block of weights that come from memory (a network's run reads each layer's weights once)
 * read two rows at a time, 1-2 lines each per 16 steps, which the hardware prefetchers hardly follow; these
 * independent loads are in flight together.  The sum only keeps them from being optimised away.  Called from
 * sgemm_packing, outside gemm_block: a call inside it made SpiderMonkey's code for the tiles 7% slower, and
 * inlined into it V8's twice as slow. */
static __attribute__((noinline)) float touch_rows(const float *A, i64 ar, i64 m0, i64 m1, i64 k0, i64 kc) {
  float s = 0.0f;
  for (i64 i = m0; i < m1; i++) {
    const float *row = A + i * ar + k0;
    for (i64 k = 0; k < kc; k += 16) s += row[k];
    s += row[kc - 1];
  }
  return s;
}

static volatile float touch_sink;

/* C[i0:i1, n0:n0+n] from one packed K block (rows k0..k0+kc of B, columns n0..n0+n) */
static void gemm_block(i64 i0, i64 i1, i64 n0, i64 n, i64 k0, i64 kc, const float *A, i64 ar, i64 ak,
                       const float *packed, float *C, i64 ldc, int first, int last, const epilogue *e) {
  for (i64 m0 = i0; m0 < i1; m0 += MC) {
    i64 m1 = m0 + MC < i1 ? m0 + MC : i1;
    for (i64 p = 0; p < n; p += PANEL) {
      i64 w = n - p < PANEL ? n - p : PANEL;
      const float *bp = packed + (p / PANEL) * kc * PANEL;
      i64 j = n0 + p, i = m0;
#define MICRO_ROWS(MR, NV)                                                                                 \
  micro_##MR##_##NV(kc, A + i * ar + k0 * ak, ar, ak, bp, C + i * ldc + j, ldc, w, first, last, e, i, j)
#define MICRO_ALL_ROWS(NV)                                                                                 \
  do {                                                                                                     \
    for (; i + 2 <= m1; i += 2) MICRO_ROWS(2, NV);                                                         \
    for (; i < m1; i++) MICRO_ROWS(1, NV);                                                                 \
  } while (0)
      /* the vectors of the panel that hold columns; a last panel of one or two vectors (49 = 3 x 16 + 1,
       * 196 = 12 x 16 + 4) takes 8 or 4 rows at a time: with the 2 x 4 or 2 x 8 tile its 2-4 accumulators
       * were one dependent multiply-add chain each, bound by the instruction's latency, not its throughput */
      switch ((w + 3) / 4) {
        case 4: MICRO_ALL_ROWS(4); break;
        case 3: MICRO_ALL_ROWS(3); break;
        case 2:
          for (; i + 4 <= m1; i += 4) MICRO_ROWS(4, 2);
          MICRO_ALL_ROWS(2);
          break;
        default:
          for (; i + 8 <= m1; i += 8) MICRO_ROWS(8, 1);
          MICRO_ALL_ROWS(1);
          break;
      }
#undef MICRO_ALL_ROWS
#undef MICRO_ROWS
    }
  }
}

/* a shuffle of two vectors' lanes (0-3 from a, 4-7 from b) in clang's builtin (wasm) or gcc's (the host build) */
#if defined(__clang__)
#define SHUF(a, b, i, j, k, l) __builtin_shufflevector((a), (b), i, j, k, l)
#else
#define SHUF(a, b, i, j, k, l) __builtin_shuffle((a), (b), (v4i){i, j, k, l})
#endif

/* A last panel of 1 or 2 columns (49 = 3 x 16 + 1) with rows in the lanes instead: 32 rows of A
 * at a time transposed into at (k-major, at[t * LROWS + r]), then per column of the panel 8 accumulators of 4 rows
 * each and one broadcast of B per step.  The tiles above (2 or 8 rows x one vector) spent most of a full panel's
 * time on it (N = 49: 20% of the product's time for 2% of its work); every sum still runs in k order from the
 * same start, and the store is the partial panel's: the same values. */
#define LROWS 32

static __attribute__((noinline)) void rows_in_lanes(i64 i0, i64 k0, i64 kc, const float *A, i64 ar, i64 ak,
                                                    const float *B, i64 ldb, i64 j, i64 w, float *C, i64 ldc,
                                                    int first, int last, const epilogue *e, float *at) {
  for (i64 r = 0; r < LROWS; r += 4) {
    const float *a0 = A + (i0 + r) * ar + k0 * ak, *a1 = a0 + ar, *a2 = a1 + ar, *a3 = a2 + ar;
    i64 t = 0;
    if (ak == 1)
      for (; t + 4 <= kc; t += 4) { /* a 4 x 4 transpose */
        v4 x0 = ld(a0 + t), x1 = ld(a1 + t), x2 = ld(a2 + t), x3 = ld(a3 + t);
        v4 u0 = SHUF(x0, x1, 0, 4, 1, 5), u1 = SHUF(x0, x1, 2, 6, 3, 7);
        v4 u2 = SHUF(x2, x3, 0, 4, 1, 5), u3 = SHUF(x2, x3, 2, 6, 3, 7);
        st(at + t * LROWS + r, SHUF(u0, u2, 0, 1, 4, 5));
        st(at + (t + 1) * LROWS + r, SHUF(u0, u2, 2, 3, 6, 7));
        st(at + (t + 2) * LROWS + r, SHUF(u1, u3, 0, 1, 4, 5));
        st(at + (t + 3) * LROWS + r, SHUF(u1, u3, 2, 3, 6, 7));
      }
    for (; t < kc; t++) st(at + t * LROWS + r, (v4){a0[t * ak], a1[t * ak], a2[t * ak], a3[t * ak]});
  }
  for (i64 q = 0; q < w; q++) {
    float *c = C + i0 * ldc + j + q;
    v4 acc[LROWS / 4];
    for (int v = 0; v < LROWS / 4; v++)
      for (int l = 0; l < 4; l++) acc[v][l] = first ? 0.0f : c[(4 * v + l) * ldc];
    const float *b = B + k0 * ldb + j + q;
    for (i64 t = 0; t < kc; t++) {
      v4 x = splat(b[t * ldb]);
      for (int v = 0; v < LROWS / 4; v++) acc[v] = MADD(ld(at + t * LROWS + 4 * v), x, acc[v]);
    }
    for (int v = 0; v < LROWS / 4; v++)
      for (int l = 0; l < 4; l++) {
        i64 i = i0 + 4 * v + l;
        float s = acc[v][l];
        c[(4 * v + l) * ldc] = last ? act1(s + bias1(e, i, j + q), e->act, e->lo, e->hi) : s;
      }
  }
}

/* The full panels of a K block, for the epilogues products mostly have (any bias, clamp or none):
 * the same 2 x 16 tile as gemm_block's micro-kernels, in a function of its own.  There the tiles' accumulators
 * live in memory (the partial panel's store indexes them at run time; kept in registers inside gemm_block, V8's
 * code ran 3x slower) and every tile asks the epilogue's modes: a third of a tile's time at K = 16
 * (MobileNet's expand convs).  Here they stay in registers and the modes are constants of each copy of the loop
 * (PANELS_LAST).  The same sums in the same order from the same start, the same bias and clamp after them: the
 * same values. */
#define PANEL_TILE(MR, INIT, BIAS, ACT)                                                                     \
  do {                                                                                                      \
    float *c = C + i * ldc + j;                                                                             \
    v4 acc[MR][PV];                                                                                         \
    for (int r = 0; r < MR; r++)                                                                            \
      for (int v = 0; v < PV; v++) acc[r][v] = INIT;                                                        \
    const float *a = A + i * ar + k0 * ak, *b = bp;                                                         \
    for (i64 k = 0; k < kc; k++) {                                                                          \
      v4 bv[PV];                                                                                            \
      for (int v = 0; v < PV; v++) bv[v] = ld(b + 4 * v);                                                   \
      for (int r = 0; r < MR; r++) {                                                                        \
        v4 x = splat(a[r * ar]);                                                                            \
        for (int v = 0; v < PV; v++) acc[r][v] = MADD(x, bv[v], acc[r][v]);                                 \
      }                                                                                                     \
      a += ak;                                                                                              \
      b += PANEL;                                                                                           \
    }                                                                                                       \
    STORE_TILE(MR, PV, BIAS, ACT);                                                                          \
  } while (0)
#define PANELS(INIT, BIAS, ACT)                                                                             \
  for (i64 p = 0; p < n; p += PANEL) {                                                                      \
    const float *bp = packed + (p / PANEL) * kc * PANEL;                                                    \
    i64 j = n0 + p, i = i0;                                                                                 \
    for (; i + 2 <= i1; i += 2) PANEL_TILE(2, INIT, BIAS, ACT);                                             \
    for (; i < i1; i++) PANEL_TILE(1, INIT, BIAS, ACT);                                                     \
  }
#define ZERO_INIT zero4()
#define C_INIT ld(c + r * ldc + 4 * v)
#define PANELS_LAST(INIT)                                                                                   \
  if (e->bias_mode == BIAS_PER_ROW && e->act == ACT_CLAMP) PANELS(INIT, splat(bias[i + r]), CLAMP_V)        \
  else if (e->bias_mode == BIAS_PER_ROW) PANELS(INIT, splat(bias[i + r]), PLAIN_V)                          \
  else if (e->bias_mode == BIAS_PER_COL && e->act == ACT_CLAMP) PANELS(INIT, ld(bias + j + 4 * v), CLAMP_V) \
  else if (e->bias_mode == BIAS_PER_COL) PANELS(INIT, ld(bias + j + 4 * v), PLAIN_V)                        \
  else if (e->act == ACT_CLAMP) PANELS(INIT, zero4(), CLAMP_V)                                              \
  else PANELS(INIT, zero4(), PLAIN_V)

/* C[i0:i1, n0:n0+n] from one packed K block, n a multiple of PANEL, an epilogue full_panels_take */
static __attribute__((noinline)) void full_panels(i64 i0, i64 i1, i64 n0, i64 n, i64 k0, i64 kc, const float *A,
                                                  i64 ar, i64 ak, const float *packed, float *C, i64 ldc,
                                                  int first, int last, const epilogue *e) {
  const v4 lo = splat(e->lo), hi = splat(e->hi);
  const float *bias = e->bias;
  if (first && last) {
    PANELS_LAST(ZERO_INIT)
  } else if (last) {
    PANELS_LAST(C_INIT)
  } else if (first) {
    PANELS(ZERO_INIT, zero4(), PLAIN_V)
  } else {
    PANELS(C_INIT, zero4(), PLAIN_V)
  }
}
#undef PANELS_LAST
#undef C_INIT
#undef ZERO_INIT
#undef PANELS
#undef PANEL_TILE

static inline int full_panels_take(const epilogue *e) { return e->act == ACT_CLAMP || e->act == ACT_NONE; }

/* gemm_block's work (same arguments), its full panels by full_panels where that takes the epilogue, rows in
 * blocks of MC */
static void product_block(i64 i0, i64 i1, i64 n0, i64 n, i64 k0, i64 kc, const float *A, i64 ar, i64 ak,
                          const float *packed, float *C, i64 ldc, int first, int last, const epilogue *e) {
  i64 nfull = full_panels_take(e) ? n / PANEL * PANEL : 0;
  if (nfull)
    for (i64 m0 = i0; m0 < i1; m0 += MC)
      full_panels(m0, m0 + MC < i1 ? m0 + MC : i1, n0, nfull, k0, kc, A, ar, ak, packed, C, ldc, first, last, e);
  if (nfull < n)
    gemm_block(i0, i1, n0 + nfull, n - nfull, k0, kc, A, ar, ak, packed + nfull * kc, C, ldc, first, last, e);
}

/* C = act(A B + bias) with B packed block by block into work (wk_sgemm_work(N, K) floats); a last panel of 1-2
 * columns takes its rows in groups of LROWS with rows_in_lanes (work, at least 2 panels of kc rows, holds the
 * transposed rows once the block's panels are done) */
static void sgemm_packing(i64 M, i64 N, i64 K, const float *A, i64 ar, i64 ak, const float *B, i64 ldb,
                          float *C, i64 ldc, const epilogue *e, float *work) {
  for (i64 n0 = 0; n0 < N; n0 += NC) {
    i64 n = N - n0 < NC ? N - n0 : NC, w = n % PANEL, nfull = n - w;
    i64 lanes = w && w <= 2 && N > PANEL ? M / LROWS * LROWS : 0; /* the rows rows_in_lanes takes */
    for (i64 k0 = 0; k0 < K; k0 += KC) {
      i64 kc = K - k0 < KC ? K - k0 : KC;
      const int first = k0 == 0, last = k0 + kc >= K;
      pack_b_block(kc, n, B + k0 * ldb + n0, ldb, work);
      for (i64 m0 = 0; m0 < M; m0 += MC) { /* gemm_block's own blocks of rows, each touched first */
        i64 m1 = m0 + MC < M ? m0 + MC : M;
        if (ak == 1 && n0 == 0) touch_sink = touch_rows(A, ar, m0, m1, k0, kc);
        product_block(m0, m1, n0, nfull, k0, kc, A, ar, ak, work, C, ldc, first, last, e);
      }
      if (!w) continue;
      gemm_block(lanes, M, n0 + nfull, w, k0, kc, A, ar, ak, work + nfull * kc, C, ldc, first, last, e);
      for (i64 i0 = 0; i0 < lanes; i0 += LROWS)
        rows_in_lanes(i0, k0, kc, A, ar, ak, B, ldb, n0 + nfull, w, C, ldc, first, last, e, work);
    }
  }
}

/* the work buffer wk_sgemm needs for the packed product (floats) */
EXPORT i64 wk_sgemm_work(i64 N, i64 K) { return packed_size(K < KC ? K : KC, N < NC ? N : NC); }

/* C[M, N] = act(A[M, K] B[K, N] + bias).  A is read through two strides (row ar, column ak: row-major,
 * transposed or a strided view alike), B row by row (row stride ldb, unit column stride), C row-major (ldc).
 * With a work buffer (wk_sgemm_work floats) and at least one full tile, the packed product; else strips. */
EXPORT void wk_sgemm(i64 M, i64 N, i64 K, const float *A, i64 ar, i64 ak, const float *B, i64 ldb, float *C,
                     i64 ldc, const float *bias, int bias_mode, int act, float lo, float hi, float *work) {
  epilogue e = {bias, bias_mode, act, lo, hi};
  if (work && M >= MRB && N >= PANEL)
    sgemm_packing(M, N, K, A, ar, ak, B, ldb, C, ldc, &e, work);
  else
    sgemm_strips(M, N, K, A, ar, ak, B, ldb, C, ldc, &e);
}

/* ---------------------------------------------------------------------------------- conv2d as a packed GEMM
 * A groups-1 NCHW convolution of one image is [O, C*KH*KW] x cols[C*KH*KW, OH*OW]; here the panels of cols are
 * gathered straight from the image, one block at a time (row k = (c, i, j), column n = (oh, ow)), instead of
 * writing the whole column matrix first (7 MB for 64 channels at 56 x 56) and packing it again.
 */
typedef struct {
  i64 C, H, W, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW;
  const float *x;
} conv_geometry;

#define EVEN_LANES(a, b) SHUF(a, b, 0, 2, 4, 6)
#define ODD_LANES(a, b) SHUF(a, b, 1, 3, 5, 7)

/* dst[0, len) = row[iw0 + q * sw] where that column is inside [0, W), else 0 (row NULL: all zeros) */
static inline void gather_segment(float *dst, const float *row, i64 iw0, i64 sw, i64 len, i64 W) {
  if (!row) {
    for (i64 q = 0; q < len; q++) dst[q] = 0.0f;
    return;
  }
  if (sw == 2) {
    /* vectors where every column read (iw0 + 2q .. iw0 + 2q + 7) is inside the row, the rest one at a time */
    i64 v0 = iw0 >= 0 ? 0 : (1 - iw0) / 2, q = 0;
    for (; q < len && q < v0; q++) {
      i64 iw = iw0 + 2 * q;
      dst[q] = iw >= 0 && iw < W ? row[iw] : 0.0f;
    }
    for (; q + 4 <= len && iw0 + 2 * q + 8 <= W; q += 4) {
      const float *src = row + iw0 + 2 * q;
      st(dst + q, EVEN_LANES(ld(src), ld(src + 4)));
    }
    for (; q < len; q++) {
      i64 iw = iw0 + 2 * q;
      dst[q] = iw >= 0 && iw < W ? row[iw] : 0.0f;
    }
    return;
  }
  if (sw != 1) {
    for (i64 q = 0; q < len; q++) {
      i64 iw = iw0 + q * sw;
      dst[q] = iw >= 0 && iw < W ? row[iw] : 0.0f;
    }
    return;
  }
  /* stride 1: zeros before column 0, the run inside the row, zeros after column W - 1 */
  i64 lo = -iw0 < 0 ? 0 : -iw0 > len ? len : -iw0;
  i64 hi = W - iw0 < lo ? lo : W - iw0 > len ? len : W - iw0;
  i64 q = 0;
  for (; q < lo; q++) dst[q] = 0.0f;
  if (hi - lo >= 4) {
    const float *src = row + iw0;
    for (; q + 4 <= hi; q += 4) st(dst + q, ld(src + q));
    if (q < hi) st(dst + hi - 4, ld(src + hi - 4)); /* overlapping: the same values again */
    q = hi;
  }
  for (; q < hi; q++) dst[q] = row[iw0 + q];
  for (; q < len; q++) dst[q] = 0.0f;
}

#define FAST_TAPS 64 /* windows up to 8 x 8 get the per-tap fast path below */

static void pack_conv_block(const conv_geometry *g, i64 k0, i64 kc, i64 n0, i64 n, float *out) {
  const i64 ntaps = g->KH * g->KW;
  for (i64 p = 0; p < n; p += PANEL) {
    i64 w = n - p < PANEL ? n - p : PANEL;
    /* the panel's columns as runs along output rows: run s is columns [sq[s], sq[s] + sl[s]) = outputs
     * (soh[s], sow[s] ...); the columns past w are zeros */
    i64 sq[PANEL + 1], sl[PANEL + 1], soh[PANEL + 1], sow[PANEL + 1];
    int ns = 0;
    for (i64 q = 0, oh = (n0 + p) / g->OW, ow = (n0 + p) % g->OW; q < w; ns++) {
      i64 len = g->OW - ow < w - q ? g->OW - ow : w - q;
      sq[ns] = q; sl[ns] = len; soh[ns] = oh; sow[ns] = ow;
      q += len; ow = 0; oh++;
    }
    /* taps whose 16 columns are one run inside the input (every read in bounds, the extra column a stride-2
     * vector reads included): their offset in a channel plane, the same for every channel */
    i64 off[FAST_TAPS];
    unsigned char fast[FAST_TAPS];
    for (i64 tap = 0; tap < ntaps && tap < FAST_TAPS; tap++) {
      i64 ih = soh[0] * g->sh - g->pt + (tap / g->KW) * g->dh;
      i64 iw0 = sow[0] * g->sw - g->pl + (tap % g->KW) * g->dw;
      i64 span = g->sw == 1 ? PANEL : 2 * PANEL;
      fast[tap] = ns == 1 && w == PANEL && (g->sw == 1 || g->sw == 2) && ih >= 0 && ih < g->H && iw0 >= 0 &&
                  iw0 + span <= g->W;
      off[tap] = fast[tap] ? ih * g->W + iw0 : 0;
    }
    i64 c = k0 / ntaps, tap = k0 % ntaps;
    for (i64 t = 0; t < kc; t++) {
      float *dst = out + t * PANEL;
      const float *plane = g->x + c * g->H * g->W;
      if (tap < FAST_TAPS && fast[tap]) {
        const float *src = plane + off[tap];
        if (g->sw == 1) {
          for (int v = 0; v < PV; v++) st(dst + 4 * v, ld(src + 4 * v));
        } else {
          for (int v = 0; v < PV; v++) st(dst + 4 * v, EVEN_LANES(ld(src + 8 * v), ld(src + 8 * v + 4)));
        }
      } else {
        i64 i = tap / g->KW, j = tap % g->KW;
        for (int s = 0; s < ns; s++) {
          i64 ih = soh[s] * g->sh - g->pt + i * g->dh;
          const float *row = ih >= 0 && ih < g->H ? plane + ih * g->W : 0;
          gather_segment(dst + sq[s], row, sow[s] * g->sw - g->pl + j * g->dw, g->sw, sl[s], g->W);
        }
        for (i64 q = w; q < PANEL; q++) dst[q] = 0.0f;
      }
      if (++tap == ntaps) {
        tap = 0;
        c++;
      }
    }
    out += kc * PANEL;
  }
}

/* blocks of at most max rows, all of about the same size (576 = 3 x 192, not 256 + 256 + 64): a short last
 * block pays the accumulators' load and store for few steps */
static inline i64 even_block(i64 K, i64 max) {
  i64 blocks = (K + max - 1) / max;
  return (K + blocks - 1) / blocks;
}

/* ------------------------------------------------------------------------- strides 1 and 2: B read in place
 * At stride 1 the im2col row of tap (c, i, j) for the outputs (oh, ow .. ow + 7) is eight consecutive floats of
 * the input, once the input has its zero padding around it: padded plane c, row oh sh + i dh, columns ow + j dw
 * on; at stride 2 too once each padded row is stored as its even columns, then its odd ones.
 * So wk_conv_nchw copies the image once per call into a padded copy (Hp x Wp per channel: the rows and columns
 * the outputs read, nothing more) and its micro-kernel reads each k's B vectors straight from it (a table of
 * plane offsets per K block), in place of gathering 16-column panels (the gather was 0.77 of 5.3 ms at 64->64
 * 3x3 56x56).  A panel is two segments of 8 outputs along output rows (56 = 7 x 8: no partial panel where 16
 * columns straddled two rows); the sums are the packed product's, in the same k order: bit-identical. */
typedef struct {
  i64 sw, Hp, Wp, plane;
} conv_direct_geometry;

/* where padded column x of a row sits in its copy: at stride 2 the even columns come first, then the odd ones,
 * so that the inputs of eight consecutive outputs of one tap are eight consecutive floats again */
static inline i64 conv_direct_column(const conv_direct_geometry *d, i64 x) {
  return d->sw == 1 ? x : (x % 2) * (d->Wp / 2) + x / 2;
}

/* whether wk_conv_nchw takes the path above: strides of 1 or 2, rows of at least 8 outputs, and a padded copy no more
 * than about twice the input (small dilations; it never depends on the padding amounts) */
static inline int conv_direct(i64 C, i64 H, i64 W, i64 KH, i64 KW, i64 sh, i64 sw, i64 dh, i64 dw, i64 OH, i64 OW,
                              conv_direct_geometry *d) {
  if (sh < 1 || sh > 2 || sw < 1 || sw > 2 || OW < 8 || (KH - 1) * dh > 64 || (KW - 1) * dw > 64 ||
      OH > (1LL << 24) || OW > (1LL << 24))
    return 0;
  d->sw = sw;
  d->Hp = (OH - 1) * sh + (KH - 1) * dh + 1;
  d->Wp = (OW - 1) * sw + (KW - 1) * dw + 1;
  if (sw == 2) d->Wp += d->Wp % 2; /* even and odd columns apart: halves of Wp / 2 */
  d->plane = d->Hp * d->Wp;
  return C * d->plane <= 2 * C * H * W + (1LL << 16);
}

/* the padded copy (8 floats more: a last segment of fewer than 8 outputs reads a full vector pair past it) */
static inline i64 conv_direct_size(i64 C, const conv_direct_geometry *d) { return C * d->plane + 8; }

/* the work buffer wk_conv_nchw needs (floats): one packed block, or the padded copy at stride 1 */
EXPORT i64 wk_conv_nchw_work(i64 C, i64 H, i64 W, i64 KH, i64 KW, i64 sh, i64 sw, i64 dh, i64 dw, i64 OH, i64 OW) {
  conv_direct_geometry d;
  if (conv_direct(C, H, W, KH, KW, sh, sw, dh, dw, OH, OW, &d)) return conv_direct_size(C, &d);
  i64 K = C * KH * KW, OHW = OH * OW;
  return packed_size(K < KC ? K : KC, OHW < NC ? OHW : NC);
}

/* P[c][r][q] = x[c][r - pt][q - pl] inside the input, else 0 (r < Hp, q < Wp) */
static void conv_pad_copy(i64 C, i64 H, i64 W, const float *x, i64 pt, i64 pl, const conv_direct_geometry *d,
                          float *P) {
  const i64 Hp = d->Hp, Wp = d->Wp;
  i64 q0 = pl < 0 ? 0 : pl < Wp ? pl : Wp, q1 = pl + W < q0 ? q0 : pl + W < Wp ? pl + W : Wp; /* columns in x */
  for (i64 c = 0; c < C; c++) {
    const float *plane = x + c * H * W;
    for (i64 r = 0; r < Hp; r++) {
      float *dst = P + (c * Hp + r) * Wp;
      i64 ih = r - pt, q = 0;
      if (d->sw == 2) { /* even columns to dst[0, Wh), odd ones to dst[Wh, Wp) */
        const i64 Wh = Wp / 2;
        float *ev = dst, *od = dst + Wh;
        if (!(ih >= 0 && ih < H && q1 > q0)) {
          for (; q < Wp; q++) dst[q] = 0.0f;
          continue;
        }
        const float *src = plane + ih * W - pl; /* padded column q is src[q] */
        i64 h = 0;
        for (; h < Wh && 2 * h < q0; h++) {
          ev[h] = 0.0f;
          od[h] = 2 * h + 1 >= q0 && 2 * h + 1 < q1 ? src[2 * h + 1] : 0.0f;
        }
        for (; h + 4 <= Wh && 2 * h + 8 <= q1; h += 4) {
          v4 a = ld(src + 2 * h), b = ld(src + 2 * h + 4);
          st(ev + h, EVEN_LANES(a, b));
          st(od + h, ODD_LANES(a, b));
        }
        for (; h < Wh; h++) {
          ev[h] = 2 * h >= q0 && 2 * h < q1 ? src[2 * h] : 0.0f;
          od[h] = 2 * h + 1 >= q0 && 2 * h + 1 < q1 ? src[2 * h + 1] : 0.0f;
        }
        continue;
      }
      if (ih >= 0 && ih < H && q1 > q0) {
        const float *src = plane + ih * W - pl; /* padded column q is src[q] */
        for (; q < q0; q++) dst[q] = 0.0f;
        for (; q + 4 <= q1; q += 4) st(dst + q, ld(src + q));
        for (; q < q1; q++) dst[q] = src[q];
      }
      for (; q < Wp; q++) dst[q] = 0.0f;
    }
  }
  for (int q = 0; q < 8; q++) P[C * d->plane + q] = 0.0f;
}

/* eight floats as two vectors: a field's constant offset folds into the wasm load (`v128.load offset=16`), where
 * `p + 4` under -fwrapv is an add before the load (pointer arithmetic that may wrap); SpiderMonkey's code for the
 * direct conv's loop ran 13% faster with the offsets folded (Firefox 153, conv3x3_64), V8's 5% */
typedef struct {
  v4 lo, hi;
} v8;

/* MR rows x (segment a: la outputs at B column base a, C at ca; segment b: lb at b, cb) from a K block:
 * acc = (first ? 0 : C) + A[rows, k block] B, B row t at a + off[t] and b + off[t] */
#define DEF_DIRECT_(MR)                                                                                     \
  static void direct_##MR(i64 kc, const float *a, i64 ar, const float *ba, const float *bb, const ptrdiff *off, \
                          float *ca, float *cb, i64 la, i64 lb, i64 ldc, int first, int last, const epilogue *e, \
                          i64 i) {                                                                          \
    v4 acc[MR][4];                                                                                          \
    float *cv[4] = {ca, ca + 4, cb, cb + 4};                                                                \
    const i64 lanes[4] = {la, la - 4, lb, lb - 4};                                                          \
    const int full = la == 8 && lb == 8;                                                                    \
    for (int r = 0; r < MR; r++)                                                                            \
      for (int v = 0; v < 4; v++) {                                                                         \
        if (first) acc[r][v] = zero4();                                                                     \
        else if (full) acc[r][v] = ld(cv[v] + r * ldc);                                                     \
        else                                                                                                \
          for (int q = 0; q < 4; q++) acc[r][v][q] = q < lanes[v] ? cv[v][r * ldc + q] : 0.0f;             \
      }                                                                                                     \
    const float *ap[MR];                                                                                    \
    for (int r = 0; r < MR; r++) ap[r] = a + r * ar;                                                        \
    for (i64 k = 0; k < kc; k++) {                                                                          \
      const ptrdiff o = off[k];                                                                             \
      const v8 *pa = (const v8 *)(ba + o), *pb = (const v8 *)(bb + o);                                      \
      v4 bv[4] = {pa->lo, pa->hi, pb->lo, pb->hi};                                                          \
      for (int r = 0; r < MR; r++) {                                                                        \
        v4 x = splat(ap[r][k]);                                                                             \
        for (int v = 0; v < 4; v++) acc[r][v] = MADD(x, bv[v], acc[r][v]);                                  \
      }                                                                                                     \
    }                                                                                                       \
    if (full && last && e->act != ACT_HARD_SWISH) {                                                         \
      const v4 lo = splat(e->lo), hi = splat(e->hi);                                                        \
      const int clamp = e->act == ACT_CLAMP, bias = e->bias_mode == BIAS_PER_ROW;                           \
      for (int r = 0; r < MR; r++) {                                                                        \
        const v4 bv = bias ? splat(e->bias[i + r]) : zero4();                                               \
        for (int v = 0; v < 4; v++) {                                                                       \
          v4 s = acc[r][v] + bv;                                                                            \
          st(cv[v] + r * ldc, clamp ? CLAMP_V(s) : s);                                                      \
        }                                                                                                   \
      }                                                                                                     \
    } else if (full) {                                                                                      \
      for (int r = 0; r < MR; r++)                                                                          \
        for (int v = 0; v < 4; v++)                                                                         \
          if (last) out4(e, cv[v] + r * ldc, i + r, 0, acc[r][v]);                                          \
          else st(cv[v] + r * ldc, acc[r][v]);                                                              \
    } else {                                                                                                \
      for (int r = 0; r < MR; r++)                                                                          \
        for (int v = 0; v < 4; v++)                                                                         \
          for (i64 q = 0; q < lanes[v] && q < 4; q++) {                                                     \
            float s = acc[r][v][q];                                                                         \
            cv[v][r * ldc + q] = last ? act1(s + bias1(e, i + r, 0), e->act, e->lo, e->hi) : s;             \
          }                                                                                                 \
    }                                                                                                       \
  }

DEF_DIRECT_(2)
DEF_DIRECT_(1)

/* Rows [m0, m1) of two full segments (8 outputs each), for the epilogues full_panels takes: direct_2's tile in a
 * function of its own, accumulators in registers and the modes constant per loop (as full_panels, whose note
 * says why).  The same sums in the same order: the same values. */
#define DIRECT_TILE(MR, INIT, BIAS, ACT)                                                                    \
  do {                                                                                                      \
    float *cv[4] = {ca + i * ldc, ca + i * ldc + 4, cb + i * ldc, cb + i * ldc + 4};                        \
    v4 acc[MR][4];                                                                                          \
    for (int r = 0; r < MR; r++)                                                                            \
      for (int v = 0; v < 4; v++) acc[r][v] = INIT;                                                         \
    const float *ap = a + i * ar;                                                                           \
    for (i64 k = 0; k < kc; k++) {                                                                          \
      const ptrdiff o = off[k];                                                                             \
      const v8 *pa = (const v8 *)(ba + o), *pb = (const v8 *)(bb + o);                                      \
      v4 bv[4] = {pa->lo, pa->hi, pb->lo, pb->hi};                                                          \
      for (int r = 0; r < MR; r++) {                                                                        \
        v4 x = splat(ap[r * ar + k]);                                                                       \
        for (int v = 0; v < 4; v++) acc[r][v] = MADD(x, bv[v], acc[r][v]);                                  \
      }                                                                                                     \
    }                                                                                                       \
    for (int r = 0; r < MR; r++)                                                                            \
      for (int v = 0; v < 4; v++) st(cv[v] + r * ldc, ACT(acc[r][v] + (BIAS)));                             \
  } while (0)
#define DIRECT_ROWS(INIT, BIAS, ACT)                                                                        \
  do {                                                                                                      \
    i64 i = m0;                                                                                             \
    for (; i + 2 <= m1; i += 2) DIRECT_TILE(2, INIT, BIAS, ACT);                                            \
    for (; i < m1; i++) DIRECT_TILE(1, INIT, BIAS, ACT);                                                    \
  } while (0)
#define ZERO_INIT zero4()
#define C_INIT ld(cv[v] + r * ldc)
#define DIRECT_LAST(INIT)                                                                                   \
  if (e->bias_mode == BIAS_PER_ROW && e->act == ACT_CLAMP) DIRECT_ROWS(INIT, splat(bias[i + r]), CLAMP_V);  \
  else if (e->bias_mode == BIAS_PER_ROW) DIRECT_ROWS(INIT, splat(bias[i + r]), PLAIN_V);                    \
  else if (e->act == ACT_CLAMP) DIRECT_ROWS(INIT, zero4(), CLAMP_V);                                        \
  else DIRECT_ROWS(INIT, zero4(), PLAIN_V)

static __attribute__((noinline)) void direct_full(i64 m0, i64 m1, i64 kc, const float *a, i64 ar, const float *ba,
                                                  const float *bb, const ptrdiff *off, float *ca, float *cb,
                                                  i64 ldc, int first, int last, const epilogue *e) {
  const v4 lo = splat(e->lo), hi = splat(e->hi);
  const float *bias = e->bias;
  if (first && last) {
    DIRECT_LAST(ZERO_INIT);
  } else if (last) {
    DIRECT_LAST(C_INIT);
  } else if (first) {
    DIRECT_ROWS(ZERO_INIT, zero4(), PLAIN_V);
  } else {
    DIRECT_ROWS(C_INIT, zero4(), PLAIN_V);
  }
}
#undef DIRECT_LAST
#undef C_INIT
#undef ZERO_INIT
#undef DIRECT_ROWS
#undef DIRECT_TILE

#define SEG 8         /* outputs per segment, two per panel */
#define SEG_BLOCK 32  /* segments per N block (256 columns): the block of C stays in cache across K blocks */
/* K blocks of at most 384 rows (576 = 2 x 288): 2-4% faster than 256 in Chromium and V8, equal in Firefox; all of
 * K at once (576) 8% slower in V8.  Nothing is packed here, so no panel must fit in L1. */
#define DIRECT_KC 384

static void conv_nchw_direct(const conv_geometry *g, const conv_direct_geometry *d, const float *w, i64 O,
                             float *y, const epilogue *e, float *P) {
  const i64 K = g->C * g->KH * g->KW, N = g->OH * g->OW, ntaps = g->KH * g->KW;
  const i64 spr = (g->OW + SEG - 1) / SEG, nseg = g->OH * spr; /* segments per output row, in all */
  const i64 kb = even_block(K, DIRECT_KC);
  ptrdiff off[DIRECT_KC];
  conv_pad_copy(g->C, g->H, g->W, g->x, g->pt, g->pl, d, P);
  for (i64 s0 = 0; s0 < nseg; s0 += SEG_BLOCK) {
    i64 s1 = s0 + SEG_BLOCK < nseg ? s0 + SEG_BLOCK : nseg;
    for (i64 k0 = 0; k0 < K; k0 += kb) {
      i64 kc = K - k0 < kb ? K - k0 : kb;
      for (i64 t = 0; t < kc; t++) {
        i64 c = (k0 + t) / ntaps, tap = (k0 + t) % ntaps;
        i64 row = (tap / g->KW) * g->dh, column = conv_direct_column(d, (tap % g->KW) * g->dw);
        off[t] = (ptrdiff)(c * d->plane + row * d->Wp + column);
      }
      const int first = k0 == 0, last = k0 + kc >= K;
      for (i64 m0 = 0; m0 < O; m0 += MC) {
        i64 m1 = m0 + MC < O ? m0 + MC : O;
        for (i64 s = s0; s < s1; s += 2) {
          i64 oha = s / spr, owa = (s % spr) * SEG, la = g->OW - owa < SEG ? g->OW - owa : SEG;
          i64 ohb = oha, owb = owa, lb = 0;
          if (s + 1 < s1) {
            ohb = (s + 1) / spr;
            owb = ((s + 1) % spr) * SEG;
            lb = g->OW - owb < SEG ? g->OW - owb : SEG;
          }
          const float *ba = P + oha * g->sh * d->Wp + owa, *bb = P + ohb * g->sh * d->Wp + owb;
          float *ca = y + oha * g->OW + owa, *cb = y + ohb * g->OW + owb;
          if (la == SEG && lb == SEG && e->bias_mode != BIAS_PER_COL && full_panels_take(e)) {
            direct_full(m0, m1, kc, w + k0, K, ba, bb, off, ca, cb, N, first, last, e);
            continue;
          }
          i64 i = m0;
          for (; i + 2 <= m1; i += 2)
            direct_2(kc, w + i * K + k0, K, ba, bb, off, ca + i * N, cb + i * N, la, lb, N, first, last, e, i);
          for (; i < m1; i++)
            direct_1(kc, w + i * K + k0, K, ba, bb, off, ca + i * N, cb + i * N, la, lb, N, first, last, e, i);
        }
      }
    }
  }
}

/* y[O, OH*OW] = act(w[O, C*KH*KW] cols + bias per row) for one CHW image x; sums in (c, i, j) order, as
 * im2col followed by wk_sgemm forms them */
EXPORT void wk_conv_nchw(i64 C, i64 H, i64 W, const float *x, i64 KH, i64 KW, i64 sh, i64 sw, i64 dh, i64 dw,
                         i64 pt, i64 pl, i64 OH, i64 OW, const float *w, i64 O, float *y, const float *bias,
                         int act, float lo, float hi, float *work) {
  conv_geometry g = {C, H, W, KH, KW, sh, sw, dh, dw, pt, pl, OH, OW, x};
  epilogue e = {bias, bias ? BIAS_PER_ROW : BIAS_NONE, act, lo, hi};
  conv_direct_geometry d;
  if (conv_direct(C, H, W, KH, KW, sh, sw, dh, dw, OH, OW, &d)) {
    conv_nchw_direct(&g, &d, w, O, y, &e, work);
    return;
  }
  i64 K = C * KH * KW, N = OH * OW;
  i64 kb = even_block(K, KC);
  for (i64 n0 = 0; n0 < N; n0 += NC) {
    i64 n = N - n0 < NC ? N - n0 : NC;
    for (i64 k0 = 0; k0 < K; k0 += kb) {
      i64 kc = K - k0 < kb ? K - k0 : kb;
      pack_conv_block(&g, k0, kc, n0, n, work);
      product_block(0, O, n0, n, k0, kc, w, K, 1, work, y, N, k0 == 0, k0 + kc >= K, &e);
    }
  }
}

/* B [K, N] packed once (a constant operand): K blocks of KC rows one after the other, each as panels */
EXPORT i64 wk_packed_b_size(i64 N, i64 K) { return packed_size(K, N); }

EXPORT void wk_pack_b(i64 N, i64 K, const float *B, i64 ldb, float *out) {
  for (i64 k0 = 0; k0 < K; k0 += KC) {
    i64 kc = K - k0 < KC ? K - k0 : KC;
    pack_b_block(kc, N, B + k0 * ldb, ldb, out + packed_size(k0, N));
  }
}

/* C = act(A B + bias) with B from wk_pack_b */
EXPORT void wk_sgemm_packed(i64 M, i64 N, i64 K, const float *A, i64 ar, i64 ak, const float *packed,
                            float *C, i64 ldc, const float *bias, int bias_mode, int act, float lo, float hi) {
  epilogue e = {bias, bias_mode, act, lo, hi};
  for (i64 k0 = 0; k0 < K; k0 += KC) {
    i64 kc = K - k0 < KC ? K - k0 : KC;
    product_block(0, M, 0, N, k0, kc, A, ar, ak, packed + packed_size(k0, N), C, ldc, k0 == 0, k0 + kc >= K, &e);
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

/* 3x3 taps, dilation 1, at output column ow of a row whose three input rows r0..r2 are inside the input
 * (r[i] points at input column -pl): the sum in (i, j) order from zero, as the general loop below forms it */
static inline __attribute__((always_inline)) v4 dw3x3_vec(const float *r0, const float *r1, const float *r2,
                                                            i64 ow, i64 sw, i64 wh, const v4 *t) {
  /* stride 1: input column ow + j is r[ow + j]; stride 2 (rows split into even and odd columns, the odd
   * ones wh further on): column 2 ow + j is r[ow], r[wh + ow], r[ow + 1] for j = 0, 1, 2 */
  const i64 o1 = sw == 1 ? ow + 1 : wh + ow, o2 = ow + (sw == 1 ? 2 : 1);
  v4 acc = zero4();
  acc += ld(r0 + ow) * t[0];
  acc += ld(r0 + o1) * t[1];
  acc += ld(r0 + o2) * t[2];
  acc += ld(r1 + ow) * t[3];
  acc += ld(r1 + o1) * t[4];
  acc += ld(r1 + o2) * t[5];
  acc += ld(r2 + ow) * t[6];
  acc += ld(r2 + o1) * t[7];
  acc += ld(r2 + o2) * t[8];
  return acc;
}

/* one output row of a 3x3 depthwise conv from three zero-padded input rows (sw a constant once inlined):
 * eight columns per step, then four, then one vector ending at the last column, overlapping the previous
 * one (it writes the same values again); rows narrower than a vector one column at a time, same sums */
static inline __attribute__((always_inline)) void dw3x3_row(float *row, const float *r0, const float *r1,
                                                            const float *r2, i64 OW, i64 sw, i64 wh,
                                                            const v4 *t, const float *taps, float b, int act,
                                                            float lo, float hi) {
  v4 vb = splat(b);
  if (OW < 4) {
    for (i64 ow = 0; ow < OW; ow++) {
      const float *p[3] = {r0, r1, r2};
      float acc = 0.0f;
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
          acc += p[i][sw == 1 ? ow + j : j == 1 ? wh + ow : ow + j / 2] * taps[i * 3 + j];
      row[ow] = act1(acc + b, act, lo, hi);
    }
    return;
  }
  i64 ow = 0;
  for (; ow + 8 <= OW; ow += 8) {
    v4 a0 = dw3x3_vec(r0, r1, r2, ow, sw, wh, t);
    v4 a1 = dw3x3_vec(r0, r1, r2, ow + 4, sw, wh, t);
    st(row + ow, act4(a0 + vb, act, lo, hi));
    st(row + ow + 4, act4(a1 + vb, act, lo, hi));
  }
  for (; ow + 4 <= OW; ow += 4) st(row + ow, act4(dw3x3_vec(r0, r1, r2, ow, sw, wh, t) + vb, act, lo, hi));
  if (ow < OW) st(row + OW - 4, act4(dw3x3_vec(r0, r1, r2, OW - 4, sw, wh, t) + vb, act, lo, hi));
}

/* two output rows (the second from input rows s0..s2) of at least 8 columns: four independent sums per step,
 * each in the same (i, j) order as dw3x3_vec */
static inline __attribute__((always_inline)) void dw3x3_row2(float *row, const float *r0, const float *r1,
                                                             const float *r2, const float *s0, const float *s1,
                                                             const float *s2, i64 OW, i64 sw, i64 wh,
                                                             const v4 *t, float b, int act, float lo, float hi) {
  v4 vb = splat(b);
  for (i64 ow = 0;;) {
    if (ow + 8 > OW) ow = OW - 8; /* the last step overlaps the previous one: the same values again */
    v4 a0 = dw3x3_vec(r0, r1, r2, ow, sw, wh, t);
    v4 a1 = dw3x3_vec(r0, r1, r2, ow + 4, sw, wh, t);
    v4 c0 = dw3x3_vec(s0, s1, s2, ow, sw, wh, t);
    v4 c1 = dw3x3_vec(s0, s1, s2, ow + 4, sw, wh, t);
    st(row + ow, act4(a0 + vb, act, lo, hi));
    st(row + ow + 4, act4(a1 + vb, act, lo, hi));
    st(row + OW + ow, act4(c0 + vb, act, lo, hi));
    st(row + OW + ow + 4, act4(c1 + vb, act, lo, hi));
    if (ow + 8 >= OW) break;
    ow += 8;
  }
}

static inline int finite9(const float *t) {
  for (int k = 0; k < 9; k++)
    if (!(t[k] - t[k] == 0.0f)) return 0; /* inf - inf and NaN - NaN are NaN */
  return 1;
}

/* the zero-padded copy of the input a 3x3 depthwise plane reads: wk_depthwise_nchw_work floats */
EXPORT i64 wk_depthwise_nchw_work(i64 OH, i64 OW, i64 sh, i64 sw) { return ((OH - 1) * sh + 3) * ((OW - 1) * sw + 4); }

/* P: the padded plane (Hp x Wp); zeroed: P already holds the zeros of an earlier plane of the same call (stride 1
 * writes only the input's positions, the same for every plane, so its padding stays zero) */
static void dw3x3_plane(const float *plane, i64 H, i64 W, const float *taps, float b, i64 sh, i64 sw, i64 pt,
                        i64 pl, i64 OH, i64 OW, float *out, int act, float lo, float hi, float *P, int zeroed) {
  i64 Hp = (OH - 1) * sh + 3, Wp = (OW - 1) * sw + 4;
  i64 q0 = pl < Wp ? pl : Wp, q1 = pl + W < Wp ? pl + W : Wp; /* the columns inside the input: [q0, q1) */
  if (sw == 1) {
    if (!zeroed)
      for (i64 q = 0; q < Hp * Wp; q++) P[q] = 0.0f;
    i64 len = q1 - q0, r1 = pt + H < Hp ? pt + H : Hp;
    for (i64 r = pt; r < r1; r++) { /* input row r - pt into padded columns [q0, q1) */
      const float *src = plane + (r - pt) * W + (q0 - pl);
      float *dst = P + r * Wp + q0;
      if (len >= 4) {
        i64 q = 0;
        for (; q + 4 <= len; q += 4) st(dst + q, ld(src + q));
        if (q < len) st(dst + len - 4, ld(src + len - 4)); /* overlapping: the same values again */
      } else {
        for (i64 q = 0; q < len; q++) dst[q] = src[q];
      }
    }
  }
  for (i64 r = 0; r < Hp && sw != 1; r++) {
    float *dst = P + r * Wp;
    i64 ih = r - pt;
    if (ih < 0 || ih >= H) {
      for (i64 q = 0; q < Wp; q++) dst[q] = 0.0f;
      continue;
    }
    const float *src = plane + ih * W; /* padded column q is src[q - pl] */
    if (sw == 2) {
      /* stride 2: the even padded columns, then the odd ones (Wp is even), so that every tap of four
       * outputs is one contiguous load instead of two loads and a shuffle */
      i64 Wh = Wp / 2, h = 0;
      float *ev = dst, *od = dst + Wh;
      /* one at a time up to the first even column inside the input, then vectors of eight columns while all
       * are inside, then one at a time again */
      for (; h < Wh && 2 * h < q0; h++) {
        ev[h] = 0.0f;
        od[h] = 2 * h + 1 >= q0 && 2 * h + 1 < q1 ? src[2 * h + 1 - pl] : 0.0f;
      }
      for (; h + 4 <= Wh && 2 * h + 8 <= q1; h += 4) {
        v4 a = ld(src + (2 * h - pl)), c = ld(src + (2 * h - pl) + 4);
        st(ev + h, EVEN_LANES(a, c));
        st(od + h, ODD_LANES(a, c));
      }
      for (; h < Wh; h++) {
        i64 q = 2 * h;
        ev[h] = q >= q0 && q < q1 ? src[q - pl] : 0.0f;
        od[h] = q + 1 >= q0 && q + 1 < q1 ? src[q + 1 - pl] : 0.0f;
      }
      continue;
    }
    i64 q = 0;
    for (; q < q0; q++) dst[q] = 0.0f;
    for (; q + 4 <= q1; q += 4) st(dst + q, ld(src + (q - pl)));
    for (; q < q1; q++) dst[q] = src[q - pl];
    for (; q < Wp; q++) dst[q] = 0.0f;
  }
  v4 t[9];
  for (int k = 0; k < 9; k++) t[k] = splat(taps[k]);
  i64 oh = 0;
  if (OW >= 8)
    for (; oh + 2 <= OH; oh += 2) {
      const float *r0 = P + oh * sh * Wp, *r1 = r0 + Wp, *r2 = r1 + Wp;
      const float *s0 = r0 + sh * Wp, *s1 = s0 + Wp, *s2 = s1 + Wp;
      if (sw == 1 && sh == 1)
        dw3x3_row2(out + oh * OW, r0, r1, r2, r1, r2, r2 + Wp, OW, 1, Wp / 2, t, b, act, lo, hi);
      else if (sw == 1)
        dw3x3_row2(out + oh * OW, r0, r1, r2, s0, s1, s2, OW, 1, Wp / 2, t, b, act, lo, hi);
      else if (sh == 2)
        dw3x3_row2(out + oh * OW, r0, r1, r2, r2, r2 + Wp, r2 + 2 * Wp, OW, 2, Wp / 2, t, b, act, lo, hi);
      else
        dw3x3_row2(out + oh * OW, r0, r1, r2, s0, s1, s2, OW, 2, Wp / 2, t, b, act, lo, hi);
    }
  for (; oh < OH; oh++) {
    const float *r0 = P + oh * sh * Wp, *r1 = r0 + Wp, *r2 = r1 + Wp;
    if (sw == 1)
      dw3x3_row(out + oh * OW, r0, r1, r2, OW, 1, Wp / 2, t, taps, b, act, lo, hi);
    else
      dw3x3_row(out + oh * OW, r0, r1, r2, OW, 2, Wp / 2, t, taps, b, act, lo, hi);
  }
}

/* A stride-1 3x3 plane with one column and one row of zero padding on each side (the output the input's size,
 * MobileNet's "same" depthwise layers), read in place: no padded copy.  Rows above and below the input are
 * `zrow` (W zeros); the first and last four outputs of a row take their missing column from a lane shift
 * with zero, the others read columns ow - 1 .. ow + 4 of the three rows.  The same products, zeros included,
 * in the same (i, j) order as dw3x3_vec on the padded copy: the same values.  W >= 5 (the two vectors of a
 * 5-7 column row overlap), H >= 2. */
static inline __attribute__((always_inline)) v4 dw3x3_same_left(const float *r0, const float *r1, const float *r2,
                                                                  const v4 *t) {
  const v4 z = zero4();
  v4 c0 = ld(r0), c1 = ld(r1), c2 = ld(r2);
  v4 acc = z;
  acc += SHUF(z, c0, 3, 4, 5, 6) * t[0];
  acc += c0 * t[1];
  acc += ld(r0 + 1) * t[2];
  acc += SHUF(z, c1, 3, 4, 5, 6) * t[3];
  acc += c1 * t[4];
  acc += ld(r1 + 1) * t[5];
  acc += SHUF(z, c2, 3, 4, 5, 6) * t[6];
  acc += c2 * t[7];
  acc += ld(r2 + 1) * t[8];
  return acc;
}

static inline __attribute__((always_inline)) v4 dw3x3_same_right(const float *r0, const float *r1,
                                                                   const float *r2, i64 W, const v4 *t) {
  const v4 z = zero4();
  const i64 o = W - 4;
  v4 c0 = ld(r0 + o), c1 = ld(r1 + o), c2 = ld(r2 + o);
  v4 acc = z;
  acc += ld(r0 + o - 1) * t[0];
  acc += c0 * t[1];
  acc += SHUF(c0, z, 1, 2, 3, 4) * t[2];
  acc += ld(r1 + o - 1) * t[3];
  acc += c1 * t[4];
  acc += SHUF(c1, z, 1, 2, 3, 4) * t[5];
  acc += ld(r2 + o - 1) * t[6];
  acc += c2 * t[7];
  acc += SHUF(c2, z, 1, 2, 3, 4) * t[8];
  return acc;
}

static void dw3x3_same_plane(const float *plane, i64 H, i64 W, const float *taps, float b, float *out, int act,
                             float lo, float hi, const float *zrow) {
  v4 t[9];
  for (int k = 0; k < 9; k++) t[k] = splat(taps[k]);
  const v4 vb = splat(b);
#define DW_ROW_AT(i) ((i) < 0 || (i) >= H ? zrow : plane + (i) * W)
#define DW_OUT(row, o, v) st((row) + (o), act4((v) + vb, act, lo, hi))
  for (i64 oh = 0; oh < H; oh += 2) {
    if (oh + 1 >= H) oh = H - 2; /* an odd height: the last pair overlaps the previous one (same values) */
    const float *r0 = DW_ROW_AT(oh - 1), *r1 = plane + oh * W, *r2 = plane + (oh + 1) * W;
    const float *s3 = DW_ROW_AT(oh + 2);
    float *ra = out + oh * W, *rb = ra + W;
    DW_OUT(ra, 0, dw3x3_same_left(r0, r1, r2, t));
    DW_OUT(rb, 0, dw3x3_same_left(r1, r2, s3, t));
    i64 ow = 4;
    for (; ow + 4 < W - 4; ow += 8) { /* columns ow - 1 .. ow + 8 inside the row: ow + 8 <= W - 1 */
      v4 a0 = dw3x3_vec(r0, r1, r2, ow - 1, 1, 0, t), a1 = dw3x3_vec(r0, r1, r2, ow + 3, 1, 0, t);
      v4 c0 = dw3x3_vec(r1, r2, s3, ow - 1, 1, 0, t), c1 = dw3x3_vec(r1, r2, s3, ow + 3, 1, 0, t);
      DW_OUT(ra, ow, a0);
      DW_OUT(ra, ow + 4, a1);
      DW_OUT(rb, ow, c0);
      DW_OUT(rb, ow + 4, c1);
    }
    for (; ow < W - 4; ow += 4) { /* ow <= W - 5: columns up to ow + 4 <= W - 1 */
      DW_OUT(ra, ow, dw3x3_vec(r0, r1, r2, ow - 1, 1, 0, t));
      DW_OUT(rb, ow, dw3x3_vec(r1, r2, s3, ow - 1, 1, 0, t));
    }
    DW_OUT(ra, W - 4, dw3x3_same_right(r0, r1, r2, W, t));
    DW_OUT(rb, W - 4, dw3x3_same_right(r1, r2, s3, W, t));
  }
#undef DW_OUT
#undef DW_ROW_AT
}

/* Stride 2 with one row and column of padding before (MobileNet's stride-2 depthwise layers: H and W even, the
 * output half of each), read in place: output column ow reads input columns 2 ow - 1 .. 2 ow + 1, of which only
 * column -1 (ow = 0) and row -1 (`zrow`) are padding.  Four outputs from two loads of a row, split into even and
 * odd lanes, and the odd lanes moved up one with the column before (zero at the left edge); the same products in
 * the same order as dw3x3_vec on the padded copy, the same values.  W >= 8. */
static inline __attribute__((always_inline)) v4 dw3x3_s2_vec(const float *r0, const float *r1, const float *r2,
                                                               i64 ow, const v4 *t) {
  const i64 q = 2 * ow;
  v4 acc = zero4();
#define DW_S2_ROW(r, t0)                                                                                    \
  do {                                                                                                      \
    v4 a = ld((r) + q), c = ld((r) + q + 4);                                                                \
    v4 ev = EVEN_LANES(a, c), od = ODD_LANES(a, c);                                                         \
    v4 before = splat(q ? (r)[q - 1] : 0.0f); /* column q - 1 (a vector load could start before the row) */ \
    acc += SHUF(before, od, 3, 4, 5, 6) * t[t0];                                                            \
    acc += ev * t[(t0) + 1];                                                                                \
    acc += od * t[(t0) + 2];                                                                                \
  } while (0)
  DW_S2_ROW(r0, 0);
  DW_S2_ROW(r1, 3);
  DW_S2_ROW(r2, 6);
#undef DW_S2_ROW
  return acc;
}

static void dw3x3_s2_plane(const float *plane, i64 H, i64 W, const float *taps, float b, float *out, int act,
                           float lo, float hi, const float *zrow) {
  v4 t[9];
  for (int k = 0; k < 9; k++) t[k] = splat(taps[k]);
  const v4 vb = splat(b);
  const i64 OH = H / 2, OW = W / 2;
  for (i64 oh = 0; oh < OH; oh++) {
    const float *r0 = oh ? plane + (2 * oh - 1) * W : zrow, *r1 = plane + 2 * oh * W, *r2 = r1 + W;
    float *row = out + oh * OW;
    if (OW < 8) { /* 4-7 outputs: two vectors, overlapping */
      st(row, act4(dw3x3_s2_vec(r0, r1, r2, 0, t) + vb, act, lo, hi));
      st(row + OW - 4, act4(dw3x3_s2_vec(r0, r1, r2, OW - 4, t) + vb, act, lo, hi));
      continue;
    }
    for (i64 ow = 0;;) {
      if (ow + 8 > OW) ow = OW - 8; /* the last step overlaps the previous one (the same values) */
      v4 a0 = dw3x3_s2_vec(r0, r1, r2, ow, t), a1 = dw3x3_s2_vec(r0, r1, r2, ow + 4, t);
      st(row + ow, act4(a0 + vb, act, lo, hi));
      st(row + ow + 4, act4(a1 + vb, act, lo, hi));
      if (ow + 8 >= OW) break;
      ow += 8;
    }
  }
}

/* NCHW: per channel plane and output row, four outputs at a time in a register, the taps of the rows inside
 * the input summed in (i, j) order (as the NHWC kernel); the columns near the borders one at a time.
 * 3x3 taps with dilation 1 and a column stride of 1 or 2 (MobileNet's depthwise layers), given a work buffer
 * (wk_depthwise_nchw_work floats) and finite taps: each plane is first copied with its zero padding into
 * work, then every output row runs without a bounds check, the nine taps held in registers, eight outputs per
 * step.  The same sums in the same order, plus products of zero padding with the taps, which change nothing
 * but the sign of a zero (and would make NaN of an infinite tap: those planes keep the loop below). */
EXPORT void wk_depthwise_nchw(i64 N, i64 C, i64 H, i64 W, const float *x, i64 KH, i64 KW, const float *w,
                              i64 sh, i64 sw, i64 dh, i64 dw, i64 pt, i64 pl, i64 OH, i64 OW, float *y,
                              const float *bias, int act, float lo, float hi, float *work) {
  /* vector columns: ow * sw - pl >= 0 for the first tap, and the last tap's last read inside the row */
  i64 v_lo = (pl + sw - 1) / sw;
  i64 last_read = (KW - 1) * dw - pl + (sw == 2 ? 1 : 0); /* + (ow + 3) * sw <= W - 1 */
  i64 v_hi = (W - 1 - last_read) >= 0 ? (W - 1 - last_read) / sw - 3 : -1; /* last vector start, inclusive */
  int fast = work && KH == 3 && KW == 3 && dh == 1 && dw == 1 && sw <= 2, zeroed = 0;
  /* stride 1, one row and column of padding on each side, the output the input's size: read in place */
  int same = fast && sh == 1 && sw == 1 && pt == 1 && pl == 1 && OH == H && OW == W && W >= 5 && H >= 2;
  /* stride 2, one row and column of padding before, even H and W halved: read in place */
  int half = fast && sh == 2 && sw == 2 && pt == 1 && pl == 1 && H % 2 == 0 && W % 2 == 0 && OH == H / 2 &&
             OW == W / 2 && OW >= 4;
  for (i64 n = 0; n < N; n++)
    for (i64 c = 0; c < C; c++) {
      const float *plane = x + (n * C + c) * H * W;
      const float *taps = w + c * KH * KW;
      float b = bias ? bias[c] : 0.0f;
      if (half && finite9(taps)) {
        if (!zeroed)
          for (i64 q = 0; q < W; q++) work[q] = 0.0f;
        dw3x3_s2_plane(plane, H, W, taps, b, y + (n * C + c) * OH * OW, act, lo, hi, work);
        zeroed = 1;
        continue;
      }
      if (same && finite9(taps)) {
        if (!zeroed)
          for (i64 q = 0; q < W; q++) work[q] = 0.0f;
        dw3x3_same_plane(plane, H, W, taps, b, y + (n * C + c) * OH * OW, act, lo, hi, work);
        zeroed = 1;
        continue;
      }
      if (fast && finite9(taps)) {
        dw3x3_plane(plane, H, W, taps, b, sh, sw, pt, pl, OH, OW, y + (n * C + c) * OH * OW, act, lo, hi, work,
                    zeroed);
        zeroed = 1;
        continue;
      }
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

/* y[i] = f(x[i]) four lanes at a time, the last 1-3 elements through a zero-filled vector (x may be y);
 * f is a constant at every call, so the compiler inlines it. */
static inline void map4(v4 (*f)(v4), const float *x, float *y, i64 count) {
  i64 i = 0;
  for (; i + 4 <= count; i += 4) st(y + i, f(ld(x + i)));
  if (i < count) {
    float tail[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (i64 k = i; k < count; k++) tail[k - i] = x[k];
    v4 v = f(ld(tail));
    for (i64 k = i; k < count; k++) y[k] = v[k - i];
  }
}

EXPORT void wk_sigmoid(float *y, i64 count) { map4(sigmoid4, y, y, count); }

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
 * The per-operator kernels of transformer-sized graphs (a BERT-like encoder's erf, layer norm and
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

EXPORT void wk_erf(const float *x, float *y, i64 count) { map4(erf4, x, y, count); }

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

/* ======================================================================================= recurrent loops
 * The time loop of gru and lstm (py_core/kernels/recurrent.py): every step of one direction in one call, where
 * the NumPy loop makes about 15 calls per step.  The one double-precision section of this file: the recurrence
 * feeds each step's rounding into the next and WPT allows a few ULP against a float64 reference, so these loops
 * compute in float64 as the NumPy kernel does, with its operations in its order (only the recurrent products'
 * sums run in another order, two lanes at a time).  Python passes the gates in canonical order (gru: z, r, n;
 * lstm: i, o, f, g), the input projection xw [steps, batch, G * hidden] of every step, and a work buffer.
 */

typedef double v2d __attribute__((vector_size(16), aligned(8))); /* f64x2 in wasm, SSE2 on the host */

/* activation codes, shared with py_core/kernels/native/__init__.py (RNN_*); F64_EXP only for the checks */
enum { F64_EXP = 0, F64_SIGMOID = 1, F64_TANH = 2, F64_RELU = 3 };

typedef union { double d; unsigned long long u; } f64bits;

static inline double f64_abs(double x) {
  f64bits b = {x};
  b.u &= 0x7fffffffffffffffULL;
  return b.d;
}

static inline double f64_with_sign_of(double v, double s) { /* |v| with s's sign bit */
  f64bits a = {v}, b = {s};
  a.u = (a.u & 0x7fffffffffffffffULL) | (b.u & 0x8000000000000000ULL);
  return a.d;
}

static inline double pow2_f64(i64 n) { /* 2^n for n in [-1022, 1023], from the exponent bits */
  f64bits b;
  b.u = (unsigned long long)(n + 1023) << 52;
  return b.d;
}

/* expm1(r) for |r| <= ln2 / 2: r + r^2 P(r) with P the Taylor series 1/2! + r/3! + ... + r^12/14! (truncation
 * below 3e-19 relative), evaluated in Estrin's scheme (pairs, then powers r^2, r^4, r^8: a third of Horner's
 * dependent chain; the terms fall fast enough that the rounding stays within Horner's); the leading r is added
 * last, so a tiny r keeps its full relative precision */
static inline double expm1_reduced(double r) {
  double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  double p01 = 1.0 / 2.0 + r * (1.0 / 6.0), p23 = 1.0 / 24.0 + r * (1.0 / 120.0);
  double p45 = 1.0 / 720.0 + r * (1.0 / 5040.0), p67 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
  double p89 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0), p1011 = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
  double q0 = p01 + r2 * p23, q1 = p45 + r2 * p67, q2 = p89 + r2 * p1011;
  double p = (q0 + r4 * q1) + r8 * (q2 + r4 * (1.0 / 87178291200.0)); /* the last: 1 / 14! */
  return r + r2 * p;
}

/* x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite: ln2's high part has 32 significant bits, so n * LN2_HI is exact
 * for |n| < 2^21 and x - n * LN2_HI is exact); n rounded to nearest by the 1.5 * 2^52 shifter */
static inline double reduce_ln2(double x, i64 *n) {
  const double LN2_HI = 6.93147180369123816490e-01, LN2_LO = 1.90821492927058770002e-10;
  const double shifter = 6755399441055744.0;
  double k = (x * 1.44269504088896338700e+00 + shifter) - shifter;
  *n = (i64)k;
  return (x - k * LN2_HI) - k * LN2_LO;
}

/* exp(x) within about 1 ulp: 2^n (1 + expm1(r)), the scaling split in two halves so results that overflow give
 * inf and subnormal ones are rounded once.  NaN stays NaN, exp(-inf) = 0, exp(inf) = inf. */
static inline double exp_f64(double x) {
  if (x != x) return x;
  if (x > 709.79) return __builtin_inf(); /* past log(DBL_MAX) = 709.7827 */
  if (x < -745.2) return 0.0;            /* below half the smallest subnormal */
  i64 n;
  double r = reduce_ln2(x, &n);
  double p = 1.0 + expm1_reduced(r);
  i64 half = n / 2;
  return (p * pow2_f64(half)) * pow2_f64(n - half);
}

/* expm1(u) for 0 <= u <= 1.1 (n in 0..2): 2^n expm1(r) + (2^n - 1), both terms exact but the product's rounding */
static inline double expm1_small(double u) {
  i64 n;
  double r = reduce_ln2(u, &n);
  double e = expm1_reduced(r);
  return n == 0 ? e : pow2_f64(n) * e + (pow2_f64(n) - 1.0);
}

/* tanh(x) = sign(x) * t(|x|): below 0.55 from expm1(2|x|) / (expm1(2|x|) + 2) (no cancellation: tiny inputs keep
 * their relative precision), up to 22 from (1 - e) / (1 + e) with e = exp(-2|x|) <= 0.33, past 22 exactly 1
 * (tanh(22) = 1 - 1.6e-19).  tanh(+-inf) = +-1, NaN stays NaN, -0 stays -0. */
static inline double tanh_f64(double x) {
  double a = f64_abs(x), t;
  if (x != x) return x;
  if (a < 0.55) {
    double e = expm1_small(2.0 * a);
    t = e / (e + 2.0);
  } else if (a < 22.0) {
    double e = exp_f64(-2.0 * a);
    t = (1.0 - e) / (1.0 + e);
  } else {
    t = 1.0;
  }
  return f64_with_sign_of(t, x);
}

/* recurrent.py's _sigmoid: exp(-|x|) never overflows and the small tail keeps its relative precision.  NaN
 * compares false and gives e / (1 + e) = NaN; sigmoid(-inf) = 0, sigmoid(inf) = 1. */
static inline double sigmoid_f64(double x) {
  double e = exp_f64(-f64_abs(x));
  double num = x >= 0.0 ? 1.0 : e; /* a select, not a branch: the sign of a gate's input is not predictable */
  return num / (1.0 + e);
}

static inline double act_f64(double x, int code) {
  if (code == F64_SIGMOID) return sigmoid_f64(x);
  if (code == F64_TANH) return tanh_f64(x);
  if (code == F64_RELU) return x < 0.0 ? 0.0 : x; /* NaN stays NaN, as np.maximum(x, 0) */
  return exp_f64(x);
}

/* y[i] = f(x[i]) for one of the codes above: the functions the loops use, for the accuracy checks */
EXPORT void wk_map_f64(const double *x, double *y, i64 count, int code) {
  for (i64 i = 0; i < count; i++) y[i] = act_f64(x[i], code);
}

static inline v2d ld2(const double *p) { return *(const v2d *)p; }

/* sum over k of a[k] b[k]: four partial sums (two two-lane vectors), then the tail */
static inline double dot_f64(const double *a, const double *b, i64 n) {
  v2d s0 = {0.0, 0.0}, s1 = {0.0, 0.0};
  i64 k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += ld2(a + k) * ld2(b + k);
    s1 += ld2(a + k + 2) * ld2(b + k + 2);
  }
  v2d s = s0 + s1;
  double sum = s[0] + s[1];
  for (; k < n; k++) sum += a[k] * b[k];
  return sum;
}

/* dot_f64 of four rows of w with h at once (eight independent sums in flight instead of two), each row's sum
 * in dot_f64's order exactly */
static inline void dot4_f64(const double *w, i64 n, const double *h, double *out) {
  const double *w0 = w, *w1 = w + n, *w2 = w + 2 * n, *w3 = w + 3 * n;
  v2d a0 = {0.0, 0.0}, a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0, d1 = a0;
  i64 k = 0;
  for (; k + 4 <= n; k += 4) {
    v2d h0 = ld2(h + k), h1 = ld2(h + k + 2);
    a0 += ld2(w0 + k) * h0; a1 += ld2(w0 + k + 2) * h1;
    b0 += ld2(w1 + k) * h0; b1 += ld2(w1 + k + 2) * h1;
    c0 += ld2(w2 + k) * h0; c1 += ld2(w2 + k + 2) * h1;
    d0 += ld2(w3 + k) * h0; d1 += ld2(w3 + k + 2) * h1;
  }
  v2d a = a0 + a1, b = b0 + b1, c = c0 + c1, d = d0 + d1;
  double s[4] = {a[0] + a[1], b[0] + b[1], c[0] + c[1], d[0] + d[1]};
  for (; k < n; k++) {
    s[0] += w0[k] * h[k]; s[1] += w1[k] * h[k]; s[2] += w2[k] * h[k]; s[3] += w3[k] * h[k];
  }
  for (int r = 0; r < 4; r++) out[r] = s[r];
}

/* out[j] = w[j, :] . h + bias[j] (bias may be NULL) for `rows` rows of w [rows, hidden] */
static void matvec_f64(const double *w, i64 rows, i64 hidden, const double *h, const double *bias, double *out) {
  i64 j = 0;
  for (; j + 4 <= rows; j += 4) dot4_f64(w + j * hidden, hidden, h, out + j);
  for (; j < rows; j++) out[j] = dot_f64(w + j * hidden, h, hidden);
  if (bias)
    for (j = 0; j < rows; j++) out[j] = out[j] + bias[j];
}

/* out[m, :] = w a[m, :]^T + bias for the M rows of a [M, K], w [N, K], bias [N] or NULL: the input projection of
 * every time step at once, in float64 (Pyodide's NumPy has no BLAS: its float64 product is slower than this) */
EXPORT void wk_project_f64(i64 M, i64 N, i64 K, const double *a, const double *w, const double *bias, double *out) {
  for (i64 m = 0; m < M; m++) matvec_f64(w, N, K, a + m * K, bias, out + m * N);
}

/* GRU over `steps` steps of one direction (backward: t from last to first), recurrent.py's _gru_step at each:
 * h [batch, hidden] the initial state in, the last state out; rw [3 hidden, hidden], rb [3 hidden] or NULL;
 * seq (NULL: not wanted) gets step t's state at seq + t * seq_stride, [batch, hidden]; work: 4 hidden doubles. */
EXPORT void wk_gru_loop(i64 steps, i64 batch, i64 hidden, const double *xw, const double *rw, const double *rb,
                        double *h, double *seq, i64 seq_stride, int backward, int reset_after, int f, int g,
                        double *work) {
  const i64 H = hidden, G = 3 * hidden;
  double *hh = work, *rh = work + 2 * H, *nn = work + 3 * H;
  for (i64 s = 0; s < steps; s++) {
    i64 t = backward ? steps - 1 - s : s;
    for (i64 b = 0; b < batch; b++) {
      const double *x = xw + (t * batch + b) * G;
      double *hb = h + b * H;
      /* reset after: hh = h rw^T + rb, n = g(x_n + r hh_n); before: hh over z and r only,
       * n = g(x_n + rb_n + (r h) rw_n^T) */
      matvec_f64(rw, reset_after ? G : 2 * H, H, hb, rb, hh);
      if (!reset_after) {
        for (i64 j = 0; j < H; j++) rh[j] = act_f64(x[H + j] + hh[H + j], f) * hb[j];
        matvec_f64(rw + 2 * H * H, H, H, rh, 0, nn);
      }
      for (i64 j = 0; j < H; j++) {
        double z = act_f64(x[j] + hh[j], f);
        double n;
        if (reset_after) {
          double r = act_f64(x[H + j] + hh[H + j], f);
          n = act_f64(x[2 * H + j] + r * hh[2 * H + j], g);
        } else {
          n = act_f64((rb ? x[2 * H + j] + rb[2 * H + j] : x[2 * H + j]) + nn[j], g);
        }
        hb[j] = z * hb[j] + (1.0 - z) * n;
      }
      if (seq)
        for (i64 j = 0; j < H; j++) seq[t * seq_stride + b * H + j] = hb[j];
    }
  }
}

/* LSTM over `steps` steps of one direction, recurrent.py's _lstm_step at each: h and c [batch, hidden] in and
 * out; rw [4 hidden, hidden], rb [4 hidden] or NULL, peep [3 hidden] (i, o, f; they read the previous cell
 * state) or NULL; gate, cell, out: the three activations; seq as for wk_gru_loop; work: 4 hidden doubles. */
EXPORT void wk_lstm_loop(i64 steps, i64 batch, i64 hidden, const double *xw, const double *rw, const double *rb,
                         const double *peep, double *h, double *c, double *seq, i64 seq_stride, int backward,
                         int gate, int cell, int out, double *work) {
  const i64 H = hidden, G = 4 * hidden;
  for (i64 s = 0; s < steps; s++) {
    i64 t = backward ? steps - 1 - s : s;
    for (i64 b = 0; b < batch; b++) {
      const double *x = xw + (t * batch + b) * G;
      double *hb = h + b * H, *cb = c + b * H;
      matvec_f64(rw, G, H, hb, 0, work);
      for (i64 j = 0; j < H; j++) {
        /* pre = (xw + h rw^T) + rb, as NumPy adds them */
        double pre[4];
        for (int k = 0; k < 4; k++) {
          double v = x[k * H + j] + work[k * H + j];
          pre[k] = rb ? v + rb[k * H + j] : v;
        }
        double cj = cb[j];
        if (peep) {
          pre[0] = pre[0] + cj * peep[j];
          pre[1] = pre[1] + cj * peep[H + j];
          pre[2] = pre[2] + cj * peep[2 * H + j];
        }
        double c_next = act_f64(pre[2], gate) * cj + act_f64(pre[0], gate) * act_f64(pre[3], cell);
        cb[j] = c_next;
        hb[j] = act_f64(pre[1], gate) * act_f64(c_next, out);
      }
      if (seq)
        for (i64 j = 0; j < H; j++) seq[t * seq_stride + b * H + j] = hb[j];
    }
  }
}

/* the compiled plan: a run of steps in one call (py_core/compiler/plan.py) */
#include "webnn_plan.c"
