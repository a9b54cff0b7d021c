/* batch_matmul.c - TFLite BATCH_MATMUL, float32: one cblas_sgemm per output matrix; int8 and int16:
 * plain integer loops (qbmm_eval); hybrid (float32 lhs, int8 rhs): plain loops (hbmm_eval).
 *
 * Hybrid, as TFLite 2.19's builtin kernel (EvalHybrid + optimized_ops::BatchMatMul): each row of
 * K lhs values (per lhs batch and row) is quantized to int8 at every invoke, symmetric, or
 * asymmetric when BatchMatMulOptions.asymmetric_quantize_inputs says so (kernels/qwide.h: TFLite's
 * tensor_utils quantizers), its scale multiplied by the rhs's (per-tensor) scale in float; per
 * output acc = sum q * w in int32, then acc -= rowsum(w) * float(zp) in float (truncated back to
 * int32, as TFLite's int32 -= float), out = scale * float(acc).
 *
 * TFLite batch_matmul.cc: lhs [..., M, K] (adj_x: [..., K, M]), rhs [..., K, N] (adj_y:
 * [..., N, K]), ranks 2..5; the batch dims (all but the last two) broadcast NumPy-style, aligned at
 * the right; output [broadcast batch..., M, N]. adj_x / adj_y become the GEMM's transpose flags,
 * so nothing is copied. Prepare stores, per output batch dim, the element stride of each operand
 * (0 where it broadcasts). Eval splits the work into chunks of (output batch, band of M rows),
 * fixed by the shapes alone, that run on the node's pool: the same result for every thread count.
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_parallel.h"
#include "kernels/ar_qparams.h"
#include "kernels/qwide.h"

/* Multiply-adds below which rows of one output matrix are not split into bands. */
#define AR_BMM_MIN_BAND_MACS (256 * 1024)
#define AR_BMM_BAND_ALIGN 16

#define AR_BMM_MAX_RANK 5

typedef struct {
  int32_t nb;                          /* output batch dims */
  int64_t bdims[AR_BMM_MAX_RANK];
  int64_t lstride[AR_BMM_MAX_RANK], rstride[AR_BMM_MAX_RANK];
  int64_t batches;
  int32_t m, n, k;
  bool adj_x, adj_y;
  /* int8 (issue 28): acc = sum (l - zl)(r - zr) in int32, rescaled by QuantizeMultiplier(
   * GetQuantizedConvolutionMultipler: float32(s_l * s_r) / s_out) with the builtin kernel's GEMM
   * rounding (ar_mbqm_up, as the int8 FULLY_CONNECTED), + zo, clamped to int8. int16 (TFLite's
   * reference BatchMatMul<int16, int64>, zero points 0): acc = sum l * r in int64, rescaled by the
   * same multiplier with the 64-bit MultiplyByQuantizedMultiplier (ar_mbqm64), clamped to int16. */
  bool q8, q16;
  bool hybrid, asym;                   /* float32 lhs, int8 rhs; asymmetric input quantization */
  float s_rhs;                         /* hybrid: the rhs's scale */
  int32_t zl, zr, zo, qmult;
  int qshift;
} bmm_state_t;

/* Element offsets into the left (*oa) and right (*ob) operands of output batch t (row-major over
 * the output batch dims, broadcast dims stride 0). */
static inline void bmm_offsets(const bmm_state_t *st, int64_t t, int64_t *oa, int64_t *ob) {
  int64_t a = 0, b = 0, rem = t;
  for (int32_t d = st->nb - 1; d >= 0; d--) {
    const int64_t idx = rem % st->bdims[d];
    rem /= st->bdims[d];
    a += idx * st->lstride[d];
    b += idx * st->rstride[d];
  }
  *oa = a;
  *ob = b;
}

static int bmm_plan(const ar_node_t *node, bmm_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *a = node->inputs[0], *b = node->inputs[1], *o = node->outputs[0];
  memset(st, 0, sizeof *st);
  const ar_dtype_t dt = a->dtype == AR_DTYPE_INT8 || a->dtype == AR_DTYPE_INT16 ? a->dtype : AR_DTYPE_FLOAT32;
  st->hybrid = dt == AR_DTYPE_FLOAT32 && b->dtype == AR_DTYPE_INT8;
  if ((rc = ar_k_check_dtype(node, a, "lhs (input 0)", dt, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, b, "rhs (input 1)", st->hybrid ? AR_DTYPE_INT8 : dt, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, o, "output 0", dt, msg, msg_bytes)))
    return rc;
  if (st->hybrid) {
    int32_t zr = 0;
    if ((rc = ar_k_qparams(node, b, "rhs (input 1)", &st->s_rhs, &zr, msg, msg_bytes))) return rc;
    if (zr != 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "hybrid (float32 lhs) int8 rhs needs zero point 0 "
                      "(it has %d)", (int)zr);
    st->asym = node->options && node->options->batch_matmul.asymmetric_quantize_inputs;
  }
  if (dt == AR_DTYPE_INT8 || dt == AR_DTYPE_INT16) {
    float sl = 0, sr = 0, so = 0;
    if ((rc = ar_k_qparams(node, a, "lhs (input 0)", &sl, &st->zl, msg, msg_bytes)) ||
        (rc = ar_k_qparams(node, b, "rhs (input 1)", &sr, &st->zr, msg, msg_bytes)) ||
        (rc = ar_k_qparams(node, o, "output 0", &so, &st->zo, msg, msg_bytes)))
      return rc;
    if (dt == AR_DTYPE_INT16 && (st->zl || st->zr || st->zo))
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "int16 lhs, rhs and output need zero point 0 "
                      "(%d, %d, %d), as TFLite requires", (int)st->zl, (int)st->zr, (int)st->zo);
    st->q8 = dt == AR_DTYPE_INT8;
    st->q16 = dt == AR_DTYPE_INT16;
    ar_quantize_multiplier(ar_quant_conv_multiplier(sl, sr, so, true), &st->qmult, &st->qshift);
  }
  if (a->rank < 2 || b->rank < 2 || a->rank > AR_BMM_MAX_RANK || b->rank > AR_BMM_MAX_RANK)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "operand ranks %d and %d (supported 2..%d)",
                    (int)a->rank, (int)b->rank, AR_BMM_MAX_RANK);
  st->adj_x = node->options && node->options->batch_matmul.adj_x;
  st->adj_y = node->options && node->options->batch_matmul.adj_y;
  const int32_t ar = a->rank, br = b->rank;
  st->m = st->adj_x ? a->dims[ar - 1] : a->dims[ar - 2];
  st->k = st->adj_x ? a->dims[ar - 2] : a->dims[ar - 1];
  const int32_t kb = st->adj_y ? b->dims[br - 1] : b->dims[br - 2];
  st->n = st->adj_y ? b->dims[br - 2] : b->dims[br - 1];
  if (kb != st->k) {
    char s1[96], s2[96];
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "lhs %s and rhs %s (adj_x %d, adj_y %d) disagree "
                    "on the contracted dim (%d vs %d)", ar_k_dims_str(s1, sizeof s1, ar, a->dims),
                    ar_k_dims_str(s2, sizeof s2, br, b->dims), (int)st->adj_x, (int)st->adj_y,
                    (int)st->k, (int)kb);
  }
  const int32_t nb = AR_MAX(ar, br) - 2;
  int64_t la = (int64_t)st->m * st->k, lb = (int64_t)st->k * st->n;   /* matrix sizes */
  int32_t od[AR_BMM_MAX_RANK];
  st->nb = nb;
  st->batches = 1;
  /* Walk batch dims from the innermost out, so strides accumulate. */
  int64_t sa = la, sb = lb;
  for (int32_t d = nb - 1; d >= 0; d--) {
    const int32_t ia = d - (nb - (ar - 2)), ib = d - (nb - (br - 2));
    const int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "batch dims %lld and %lld do not broadcast",
                      (long long)da, (long long)db);
    const int64_t dim = da == 1 ? db : da;
    st->bdims[d] = dim;
    st->lstride[d] = da == 1 ? 0 : sa;
    st->rstride[d] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
    od[d] = (int32_t)dim;
    st->batches *= dim;
  }
  od[nb] = st->m;
  od[nb + 1] = st->n;
  return ar_k_check_output_shape(node, nb + 2, od, msg, msg_bytes);
}

static int bmm_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  bmm_state_t st;
  node->state_bytes = sizeof st;
  int rc = bmm_plan(node, &st, msg, msg_bytes);
  /* hybrid: one lhs row gathered (K floats) and quantized (K int8) */
  node->scratch_bytes = rc == 0 && st.hybrid ? (uint64_t)st.k * (sizeof(float) + 1) + 8 : 0;
  return rc;
}

static void bmm_init(ar_node_t *node) {
  bmm_state_t st;
  if (bmm_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

typedef struct bmm_job {
  const bmm_state_t *st;
  const float *a, *b;
  float *c;
  int64_t band, n_bands;
} bmm_job_t;

/* Chunks [c0, c1): chunk i is output batch i / n_bands, rows band * (i % n_bands) onwards. */
static void bmm_range(void *ctx, int64_t c0, int64_t c1) {
  const bmm_job_t *j = ctx;
  const bmm_state_t *st = j->st;
  const int lda = st->adj_x ? st->m : st->k, ldb = st->adj_y ? st->k : st->n;
  const int64_t mn = (int64_t)st->m * st->n;
  for (int64_t ci = c0; ci < c1; ci++) {
    const int64_t t = ci / j->n_bands, r0 = ci % j->n_bands * j->band;
    const int64_t rows = AR_MIN(j->band, (int64_t)st->m - r0);
    int64_t oa, ob;
    bmm_offsets(st, t, &oa, &ob);
    const float *a = j->a + oa + (st->adj_x ? r0 : r0 * lda);
    cblas_sgemm(CblasRowMajor, st->adj_x ? CblasTrans : CblasNoTrans,
                st->adj_y ? CblasTrans : CblasNoTrans, (int)rows, st->n, st->k, 1.0f, a, lda,
                j->b + ob, ldb, 0.0f, j->c + t * mn + r0 * st->n, st->n);
  }
}

/* The int8 product, plain loops (batch by batch; each output its own sum, so any order is exact). */
static void qbmm_eval(const ar_node_t *node) {
  const bmm_state_t *st = node->state;
  const int8_t *A = node->inputs[0]->data, *B = node->inputs[1]->data;
  int8_t *C = node->outputs[0]->data;
  const int64_t mn = (int64_t)st->m * st->n;
  for (int64_t t = 0; t < st->batches; t++) {
    int64_t oa, ob;
    bmm_offsets(st, t, &oa, &ob);
    const int8_t *a = A + oa, *b = B + ob;
    for (int32_t i = 0; i < st->m; i++)
      for (int32_t j = 0; j < st->n; j++) {
        int32_t acc = 0;
        for (int32_t p = 0; p < st->k; p++) {
          const int32_t l = st->adj_x ? a[(int64_t)p * st->m + i] : a[(int64_t)i * st->k + p];
          const int32_t r = st->adj_y ? b[(int64_t)j * st->k + p] : b[(int64_t)p * st->n + j];
          acc += (l - st->zl) * (r - st->zr);
        }
        int32_t v = ar_mbqm_up(acc, st->qmult, st->qshift) + st->zo;
        C[t * mn + (int64_t)i * st->n + j] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
      }
  }
}

/* The int16 product (zero points 0), int64 sums as TFLite's reference kernel. */
static void qbmm16_eval(const ar_node_t *node) {
  const bmm_state_t *st = node->state;
  const int16_t *A = node->inputs[0]->data, *B = node->inputs[1]->data;
  int16_t *C = node->outputs[0]->data;
  const int64_t mn = (int64_t)st->m * st->n;
  for (int64_t t = 0; t < st->batches; t++) {
    int64_t oa, ob;
    bmm_offsets(st, t, &oa, &ob);
    const int16_t *a = A + oa, *b = B + ob;
    for (int32_t i = 0; i < st->m; i++)
      for (int32_t j = 0; j < st->n; j++) {
        int64_t acc = 0;
        for (int32_t p = 0; p < st->k; p++) {
          const int64_t l = st->adj_x ? a[(int64_t)p * st->m + i] : a[(int64_t)i * st->k + p];
          const int64_t r = st->adj_y ? b[(int64_t)j * st->k + p] : b[(int64_t)p * st->n + j];
          acc += l * r;
        }
        const int32_t v = ar_mbqm64(acc, st->qmult, st->qshift);
        C[t * mn + (int64_t)i * st->n + j] = (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v);
      }
  }
}

/* TFLite's asymmetric row quantization as the hybrid BATCH_MATMUL gets it on x86-64: as
 * ar__qw_quantize_asymmetric, but the range rmax - rmin is subtracted in float before the division
 * by 255 in double (ar__qw_quantize_asymmetric subtracts in double, which FULLY_CONNECTED's
 * goldens want): bmmh_asym's third row, [-0.3, 2.5], has scale 0.009759892 natively, 0.009759891
 * with the double range. The zero point and the rounding of the codes as there. */
static float hbmm_quantize_asym(const float *x, int64_t n, int8_t *q, int32_t *zp) {
  float mn = 0.0f, mx = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
  }
  if (mn == mx) {
    memset(q, 0, (size_t)n);
    *zp = 0;
    return 1.0f;
  }
  const float s = (float)((double)(mx - mn) / 255.0);
  const double ds = (double)s;
  const double zp_from_min = -128.0 - (double)mn / ds, zp_from_max = 127.0 - (double)mx / ds;
  const double err_min = 128.0 + fabs((double)mn / ds), err_max = 127.0 + fabs((double)mx / ds);
  const double zpd = err_min < err_max ? zp_from_min : zp_from_max;
  const int32_t z = zpd <= -128.0 ? -128 : zpd >= 127.0 ? 127 : (int32_t)(int8_t)round(zpd);
  const float inv = (float)(1.0 / ds);
  for (int64_t i = 0; i < n; i++) {
    const int32_t v = (int32_t)roundf(x[i] * inv) + z;
    q[i] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
  }
  *zp = z;
  return s;
}

/* The hybrid product: each lhs row quantized as TFLite's EvalHybrid does, then the int8 sums. */
static void hbmm_eval(const ar_node_t *node) {
  const bmm_state_t *st = node->state;
  const float *A = node->inputs[0]->data;
  const int8_t *B = node->inputs[1]->data;
  float *C = node->outputs[0]->data;
  float *row = node->scratch;
  int8_t *q = (int8_t *)(row + st->k);
  const int64_t mn = (int64_t)st->m * st->n;
  for (int64_t t = 0; t < st->batches; t++) {
    int64_t oa, ob;
    bmm_offsets(st, t, &oa, &ob);
    const float *a = A + oa;
    const int8_t *b = B + ob;
    for (int32_t i = 0; i < st->m; i++) {
      const float *x = a + (int64_t)i * st->k;
      if (st->adj_x) {
        for (int32_t p = 0; p < st->k; p++) row[p] = a[(int64_t)p * st->m + i];
        x = row;
      }
      int32_t zp = 0;
      const float s_in = st->asym ? hbmm_quantize_asym(x, st->k, q, &zp)
                                  : ar__qw_quantize_symmetric(x, st->k, q);
      const float scale = s_in * st->s_rhs;
      const float off = (float)zp;
      for (int32_t j = 0; j < st->n; j++) {
        int32_t acc = 0, wsum = 0;
        for (int32_t p = 0; p < st->k; p++) {
          const int32_t w = st->adj_y ? b[(int64_t)j * st->k + p] : b[(int64_t)p * st->n + j];
          acc += (int32_t)q[p] * w;
          wsum += w;
        }
        if (zp != 0) acc = (int32_t)((float)acc - (float)wsum * off);
        C[t * mn + (int64_t)i * st->n + j] = scale * (float)acc;
      }
    }
  }
}

static void bmm_eval(const ar_node_t *node) {
  const bmm_state_t *st = node->state;
  if (st->hybrid) { hbmm_eval(node); return; }
  if (st->q8) { qbmm_eval(node); return; }
  if (st->q16) { qbmm16_eval(node); return; }
  float *c = node->outputs[0]->data;
  const int64_t mn = (int64_t)st->m * st->n;
  if (mn == 0) return;
  if (st->k == 0) { memset(c, 0, (size_t)(mn * st->batches) * sizeof(float)); return; }
  bmm_job_t j = {.st = st, .a = node->inputs[0]->data, .b = node->inputs[1]->data, .c = c};
  j.band = ar_parallel_grain(st->m, (int64_t)st->n * st->k, AR_BMM_MIN_BAND_MACS, AR_BMM_BAND_ALIGN);
  if (j.band > st->m) j.band = st->m;
  j.n_bands = (st->m + j.band - 1) / j.band;
  ar_parallel_for(node, st->batches * j.n_bands, 1, bmm_range, &j);
}

/* TFLite BATCH_MATMUL (builtin 126): float32, adj_x/adj_y, broadcast batch dims, ranks 2..5. */
static const ar_kernel_form_t batch_matmul_forms[] = {
  AR_KF(1, 4, FLOAT32, FLOAT32),
  AR_KF(1, 4, INT8, INT8),
  AR_KF(1, 4, INT16, INT16),
  AR_KFW(1, 4, FLOAT32, INT8, FLOAT32),   /* hybrid; asymmetric inputs from v4 */
};
const ar_kernel_t ar_kernel_batch_matmul = { "BATCH_MATMUL", bmm_prepare, bmm_init, bmm_eval,
  AR_KSUPPORT(batch_matmul_forms, 0, -1) };
