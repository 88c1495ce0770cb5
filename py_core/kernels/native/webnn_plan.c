/* A compiled plan: a run of a graph's steps as instruction words, run in one call.
 *
 * #include'd at the end of webnn_kernels.c (one translation unit: the kernels above are called directly, static
 * or not).  Python plans, C runs: py_core/compiler/plan.py lowers each step whose kernel has a C form into the
 * words below and checks every value as it writes them (the same checks the ctypes wrappers make: shapes,
 * contiguity, conv_fits, every count below 2^62); this file trusts only those words.
 *
 * words: instructions one after the other, each [opcode, length in words, arguments...].  A buffer argument is
 * an index into `tab`, the plan's address table (-1: no buffer), so the words never change between runs; Python
 * writes the addresses of the graph's inputs, of its fresh outputs and of values computed by Python steps
 * into the table before each call.  A float argument is a float32's bit pattern in the low 32 bits of a word.
 */

#define PLAN_SGEMM 1        /* batch M N K A sa ar ak B sb ldb C sc ldc bias bias_mode act lo hi work */
#define PLAN_SGEMM_PACKED 2 /* M N K A ar ak packed C ldc bias bias_mode act lo hi */
#define PLAN_CONV_NCHW 3    /* batch C H W x KH KW sh sw dh dw pt pl OH OW w O y bias act lo hi work */
#define PLAN_IM2COL_NHWC 4  /* N H W C x KH KW sh sw dh dw pt pl OH OW cols */
#define PLAN_DW_NHWC 5      /* N H W C x KH KW w sh sw dh dw pt pl OH OW y bias act lo hi */
#define PLAN_DW_NCHW 6      /* N C H W x KH KW w sh sw dh dw pt pl OH OW y bias act lo hi work */
#define PLAN_BINARY 7       /* kind y a b count a_period b_period */
#define PLAN_ACT 8          /* x y count act lo hi */
#define PLAN_SIGMOID 9      /* x y count */
#define PLAN_ERF 10         /* x y count */
#define PLAN_LAYER_NORM 11  /* x y rows n scale bias eps */
#define PLAN_SOFTMAX 12     /* x y rows n */
#define PLAN_COPY 13        /* x y count */
#define PLAN_TRANSPOSE 14   /* x y d0..d5 s0..s5: y in order, y[i0..i5] = x[sum ik * sk] (6 axes, leading ones) */
#define PLAN_GATHER 15      /* x y offset d0..d5 s0..s5: the same from x + offset (a slab of split) */
#define PLAN_SCATTER 16     /* x y offset d0..d5 s0..s5: y[offset + sum ik * sk] = x in order (concat, pad) */
#define PLAN_FILL 17        /* y count value */
#define PLAN_MAX_POOL 18    /* outer H W inner x KH KW sh sw dh dw pt pl OH OW y */
#define PLAN_RESAMPLE 19    /* outer H W inner x OH OW y0 y1 wy0 wy1 x0 x1 wx0 wx1 y (wk_resample_linear) */

#define BIN_ADD 0
#define BIN_SUB 1
#define BIN_MUL 2
#define BIN_DIV 3
#define BIN_PRELU 4 /* a < 0 ? a * b : a (prelu: a the input, b the slope) */

typedef __UINTPTR_TYPE__ uptr;

static inline float plan_f32(i64 word) {
  union { unsigned u; float f; } v;
  v.u = (unsigned)(word & 0xffffffff);
  return v.f;
}

static inline v4 bin4(int kind, v4 a, v4 b) {
  switch (kind) {
    case BIN_ADD: return a + b;
    case BIN_SUB: return a - b;
    case BIN_MUL: return a * b;
    case BIN_PRELU: return blend(a, a * b, a < zero4());
    default: return a / b;
  }
}

static inline float bin1(int kind, float a, float b) {
  switch (kind) {
    case BIN_ADD: return a + b;
    case BIN_SUB: return a - b;
    case BIN_MUL: return a * b;
    case BIN_PRELU: return a < 0.0f ? a * b : a;
    default: return a / b;
  }
}

/* y[i] = a[i % ap] op b[i % bp], count a multiple of both periods and one of them the count (same shapes, a
 * scalar, or an operand repeating along the leading axes: NumPy's broadcasting of a trailing suffix).  y may be
 * a or b (element i is read before it is written). */
static void plan_binary(int kind, float *y, const float *a, const float *b, i64 count, i64 ap, i64 bp) {
  if (ap == count && bp == count) {
    i64 i = 0;
    for (; i + 4 <= count; i += 4) st(y + i, bin4(kind, ld(a + i), ld(b + i)));
    for (; i < count; i++) y[i] = bin1(kind, a[i], b[i]);
  } else if (bp == 1 || ap == 1) {
    const float *full = bp == 1 ? a : b;
    float s = bp == 1 ? b[0] : a[0];
    v4 sv = splat(s);
    i64 i = 0;
    if (bp == 1) {
      for (; i + 4 <= count; i += 4) st(y + i, bin4(kind, ld(full + i), sv));
      for (; i < count; i++) y[i] = bin1(kind, full[i], s);
    } else {
      for (; i + 4 <= count; i += 4) st(y + i, bin4(kind, sv, ld(full + i)));
      for (; i < count; i++) y[i] = bin1(kind, s, full[i]);
    }
  } else {
    i64 p = ap == count ? bp : ap; /* the repeating operand's period */
    for (i64 r = 0; r < count; r += p) {
      const float *ar = ap == count ? a + r : a, *br = bp == count ? b + r : b;
      float *yr = y + r;
      i64 i = 0;
      for (; i + 4 <= p; i += 4) st(yr + i, bin4(kind, ld(ar + i), ld(br + i)));
      for (; i < p; i++) yr[i] = bin1(kind, ar[i], br[i]);
    }
  }
}

static inline void plan_copy(const float *x, float *y, i64 count) {
  if (x == y) return;
  i64 i = 0;
  for (; i + 4 <= count; i += 4) st(y + i, ld(x + i));
  for (; i < count; i++) y[i] = x[i];
}

static void plan_transpose(const float *x, float *y, const i64 *d, const i64 *s) {
  for (i64 a = 0; a < d[0]; a++)
    for (i64 b = 0; b < d[1]; b++)
      for (i64 c = 0; c < d[2]; c++)
        for (i64 e = 0; e < d[3]; e++) {
          const float *base = x + a * s[0] + b * s[1] + c * s[2] + e * s[3];
          for (i64 f = 0; f < d[4]; f++) {
            const float *row = base + f * s[4];
            if (s[5] == 1) {
              i64 g = 0;
              for (; g + 4 <= d[5]; g += 4) st(y + g, ld(row + g));
              for (; g < d[5]; g++) y[g] = row[g];
            } else {
              for (i64 g = 0; g < d[5]; g++) y[g] = row[g * s[5]];
            }
            y += d[5];
          }
        }
}

static void plan_scatter(const float *x, float *y, const i64 *d, const i64 *s) {
  for (i64 a = 0; a < d[0]; a++)
    for (i64 b = 0; b < d[1]; b++)
      for (i64 c = 0; c < d[2]; c++)
        for (i64 e = 0; e < d[3]; e++)
          for (i64 f = 0; f < d[4]; f++) {
            float *row = y + a * s[0] + b * s[1] + c * s[2] + e * s[3] + f * s[4];
            if (s[5] == 1) {
              i64 g = 0;
              for (; g + 4 <= d[5]; g += 4) st(row + g, ld(x + g));
              for (; g < d[5]; g++) row[g] = x[g];
            } else {
              for (i64 g = 0; g < d[5]; g++) row[g * s[5]] = x[g];
            }
            x += d[5];
          }
}

static void plan_fill(float *y, i64 count, float v) {
  v4 vv = splat(v);
  i64 i = 0;
  for (; i + 4 <= count; i += 4) st(y + i, vv);
  for (; i < count; i++) y[i] = v;
}

/* The taps [*lo, *hi) of a window along one axis that land inside [0, size) for output o: what the reference
 * (pooling.py's spans) reads; the rest is padding, which never wins a max.  plan.py checked window_fits, so
 * o * stride - pad + tap * dilation stays far from overflow. */
static inline void taps_inside(i64 o, i64 stride, i64 pad, i64 dilation, i64 window, i64 size, i64 *lo, i64 *hi) {
  i64 start = o * stride - pad;
  i64 a = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
  i64 b = start >= size ? 0 : (size - start + dilation - 1) / dilation;
  *lo = a;
  *hi = b < window ? b : window;
}

/* max pooling of [outer, H, W, inner] (NHWC: outer N, inner C; NCHW: outer N*C, inner 1); -inf where no tap
 * lands inside the input; NaN propagates and ties keep the earlier value, as np.maximum(acc, x) does. */
static void plan_max_pool(i64 outer, i64 H, i64 W, i64 inner, const float *x, i64 KH, i64 KW, i64 sh, i64 sw,
                          i64 dh, i64 dw, i64 pt, i64 pl, i64 OH, i64 OW, float *y) {
  for (i64 o = 0; o < outer; o++) {
    const float *plane = x + o * H * W * inner;
    for (i64 oy = 0; oy < OH; oy++) {
      i64 ky0, ky1;
      taps_inside(oy, sh, pt, dh, KH, H, &ky0, &ky1);
      for (i64 ox = 0; ox < OW; ox++) {
        i64 kx0, kx1;
        taps_inside(ox, sw, pl, dw, KW, W, &kx0, &kx1);
        i64 k = 0;
        for (; k + 4 <= inner; k += 4) {
          v4 m = splat(-__builtin_inff());
          for (i64 ky = ky0; ky < ky1; ky++) {
            const float *row = plane + (oy * sh - pt + ky * dh) * W * inner + k;
            for (i64 kx = kx0; kx < kx1; kx++) {
              v4 v = ld(row + (ox * sw - pl + kx * dw) * inner);
              m = blend(m, v, (v > m) | (v != v));
            }
          }
          st(y + k, m);
        }
        for (; k < inner; k++) {
          float m = -__builtin_inff();
          for (i64 ky = ky0; ky < ky1; ky++) {
            const float *row = plane + (oy * sh - pt + ky * dh) * W * inner + k;
            for (i64 kx = kx0; kx < kx1; kx++) {
              float v = row[(ox * sw - pl + kx * dw) * inner];
              m = (v > m || v != v) ? v : m;
            }
          }
          y[k] = m;
        }
        y += inner;
      }
    }
  }
}

/* Run `n` words of instructions with the address table `tab`.  Returns 0, or the word offset of an
 * instruction it does not know (Python never writes one: a guard, not a path). */
EXPORT i64 wk_run_plan(const i64 *words, i64 n, const i64 *tab) {
#define P(k) ((float *)(uptr)(w[k] < 0 ? 0 : tab[w[k]]))
#define I(k) (w[k])
#define F(k) (plan_f32(w[k]))
  i64 at = 0;
  while (at < n) {
    const i64 *w = words + at;
    i64 len = w[1];
    if (len < 2 || at + len > n) return at + 1;
    switch (w[0]) {
      case PLAN_SGEMM: {
        i64 batch = I(2), M = I(3), N = I(4), K = I(5);
        const float *A = P(6), *B = P(10);
        float *C = P(13);
        for (i64 b = 0; b < batch; b++)
          wk_sgemm(M, N, K, A + b * I(7), I(8), I(9), B + b * I(11), I(12), C + b * I(14), I(15), P(16),
                   (int)I(17), (int)I(18), F(19), F(20), P(21));
        break;
      }
      case PLAN_SGEMM_PACKED:
        wk_sgemm_packed(I(2), I(3), I(4), P(5), I(6), I(7), P(8), P(9), I(10), P(11), (int)I(12), (int)I(13),
                        F(14), F(15));
        break;
      case PLAN_CONV_NCHW: {
        i64 batch = I(2), C = I(3), H = I(4), W = I(5), O = I(18), OH = I(15), OW = I(16);
        const float *x = P(6);
        float *y = P(19);
        for (i64 b = 0; b < batch; b++)
          wk_conv_nchw(C, H, W, x + b * C * H * W, I(7), I(8), I(9), I(10), I(11), I(12), I(13), I(14), OH, OW,
                       P(17), O, y + b * O * OH * OW, P(20), (int)I(21), F(22), F(23), P(24));
        break;
      }
      case PLAN_IM2COL_NHWC:
        wk_im2col_nhwc(I(2), I(3), I(4), I(5), P(6), I(7), I(8), I(9), I(10), I(11), I(12), I(13), I(14), I(15),
                       I(16), P(17));
        break;
      case PLAN_DW_NHWC:
        wk_depthwise_nhwc(I(2), I(3), I(4), I(5), P(6), I(7), I(8), P(9), I(10), I(11), I(12), I(13), I(14), I(15),
                          I(16), I(17), P(18), P(19), (int)I(20), F(21), F(22));
        break;
      case PLAN_DW_NCHW:
        wk_depthwise_nchw(I(2), I(3), I(4), I(5), P(6), I(7), I(8), P(9), I(10), I(11), I(12), I(13), I(14), I(15),
                          I(16), I(17), P(18), P(19), (int)I(20), F(21), F(22), P(23));
        break;
      case PLAN_BINARY:
        plan_binary((int)I(2), P(3), P(4), P(5), I(6), I(7), I(8));
        break;
      case PLAN_ACT:
        wk_activation(P(2), P(3), I(4), (int)I(5), F(6), F(7));
        break;
      case PLAN_SIGMOID:
        map4(sigmoid4, P(2), P(3), I(4));  /* wk_sigmoid's map, from x to y in one pass */
        break;
      case PLAN_ERF:
        wk_erf(P(2), P(3), I(4));
        break;
      case PLAN_LAYER_NORM:
        wk_layer_norm(P(2), P(3), I(4), I(5), P(6), P(7), F(8));
        break;
      case PLAN_SOFTMAX:
        wk_softmax(P(2), P(3), I(4), I(5));
        break;
      case PLAN_COPY:
        plan_copy(P(2), P(3), I(4));
        break;
      case PLAN_TRANSPOSE:
        plan_transpose(P(2), P(3), w + 4, w + 10);
        break;
      case PLAN_GATHER:
        plan_transpose(P(2) + I(4), P(3), w + 5, w + 11);
        break;
      case PLAN_SCATTER:
        plan_scatter(P(2), P(3) + I(4), w + 5, w + 11);
        break;
      case PLAN_FILL:
        plan_fill(P(2), I(3), F(4));
        break;
      case PLAN_MAX_POOL:
        plan_max_pool(I(2), I(3), I(4), I(5), P(6), I(7), I(8), I(9), I(10), I(11), I(12), I(13), I(14), I(15),
                      I(16), P(17));
        break;
      case PLAN_RESAMPLE:
        wk_resample_linear(I(2), I(3), I(4), I(5), P(6), I(7), I(8), (const int *)P(9), (const int *)P(10), P(11),
                           P(12), (const int *)P(13), (const int *)P(14), P(15), P(16), P(17));
        break;
      default:
        return at + 1;
    }
    at += len;
  }
  return 0;
#undef P
#undef I
#undef F
}
