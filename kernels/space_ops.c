/* space_ops.c - TFLite's SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND and MIRROR_PAD (issue 28): element
 * moves of any dtype of 1, 2, 4 or 8 bytes, their shape operands (block_shape, paddings, crops)
 * constant int32 (MIRROR_PAD's paddings int32 or int64).
 *
 * SPACE_TO_BATCH_ND: input [B, S_1..S_M, rest...], block_shape [M], paddings [M, 2]; each padded
 * S_i + before_i + after_i must divide by block_i. Output [B * prod(block), (padded S_i) / block_i,
 * rest...]: output batch t * B + b holds, at spatial o, the input of batch b at o_i * block_i + s_i -
 * before_i, with s the row-major position t in the block grid; positions in the padding hold 0 (the
 * output zero point for quantized tensors, as TFLite's output_offset). BATCH_TO_SPACE_ND is its
 * inverse with crops [M, 2] taken off the front and back of each spatial dimension. TFLite's kernels
 * take 3-D and 4-D inputs; these take any rank >= 2 with 1 <= M < rank.
 * MIRROR_PAD: paddings [rank, 2]; REFLECT mirrors without repeating the edge (pad <= dim - 1),
 * SYMMETRIC with it (pad <= dim), as TFLite's mirror_pad.cc requires.
 */
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_qparams.h"

typedef struct {
  int32_t rank, m;                       /* input rank, spatial dims */
  int32_t block[AR_MAX_RANK];
  int32_t before[AR_MAX_RANK], after[AR_MAX_RANK];   /* paddings (S2B) or crops (B2S), MIRROR_PAD */
  int32_t in_dims[AR_MAX_RANK], out_dims[AR_MAX_RANK];
  size_t es;
  uint8_t fill[8];                       /* S2B: the padding element's bytes */
  bool symmetric;                        /* MIRROR_PAD */
} space_state_t;

static bool movable(ar_dtype_t t) {
  const size_t es = ar_dtype_size(t);
  return t != AR_DTYPE_STRING && (es == 1 || es == 2 || es == 4 || es == 8);
}

/* A constant int32 [m] or [m, 2] operand into out (2m values for pairs). */
static int read_const(const ar_node_t *node, const ar_tview_t *t, const char *what, int32_t m, bool pairs,
                      int64_t *out, char *msg, size_t msg_bytes) {
  int rc;
  if ((rc = ar_k_check_index_dtype(node, t, what, msg, msg_bytes))) return rc;
  if ((rc = ar_k_require_constant(node, t, what, msg, msg_bytes))) return rc;
  const bool ok = pairs ? (t->rank == 2 && t->dims[0] == m && t->dims[1] == 2) : (t->rank == 1 && t->dims[0] == m);
  if (!ok) {
    char d[64];
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "%s has shape %s, expected [%d%s]", what,
                    ar_k_dims_str(d, sizeof d, t->rank, t->dims), (int)m, pairs ? ",2" : "");
  }
  for (int64_t i = 0; i < (pairs ? 2 * m : m); i++) out[i] = ar_k_index_at(t, i);
  return 0;
}

/* ---- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND ---- */

static int s2b_plan(const ar_node_t *node, space_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 3, 3, 3, 1, msg, msg_bytes);
  if (rc) return rc;
  const bool to_batch = node->op == AR_OP_SPACE_TO_BATCH_ND;
  const ar_tview_t *in = node->inputs[0], *bs = node->inputs[1], *pc = node->inputs[2], *o = node->outputs[0];
  char tn[96];
  memset(st, 0, sizeof *st);
  if (!movable(in->dtype))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0%s has dtype %s",
                    ar_k_tname(in, tn, sizeof tn), ar_dtype_name(in->dtype));
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes))) return rc;
  if (bs->rank != 1 || bs->dims[0] < 1 || bs->dims[0] >= in->rank)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "block_shape has %d values for an input of rank %d "
                    "(1 .. rank - 1)", bs->rank == 1 ? (int)bs->dims[0] : -1, (int)in->rank);
  const int32_t m = bs->dims[0];
  int64_t b[AR_MAX_RANK], p[2 * AR_MAX_RANK];
  if ((rc = read_const(node, bs, "input 1 (block_shape)", m, false, b, msg, msg_bytes)) ||
      (rc = read_const(node, pc, to_batch ? "input 2 (paddings)" : "input 2 (crops)", m, true, p, msg, msg_bytes)))
    return rc;
  st->rank = in->rank;
  st->m = m;
  st->es = ar_dtype_size(in->dtype);
  int64_t prod = 1;
  for (int32_t i = 0; i < m; i++) {
    if (b[i] < 1 || b[i] > INT32_MAX)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "block_shape[%d] is %lld", (int)i, (long long)b[i]);
    if (p[2 * i] < 0 || p[2 * i + 1] < 0 || p[2 * i] > INT32_MAX || p[2 * i + 1] > INT32_MAX)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "%s[%d] is [%lld, %lld]", to_batch ? "paddings" : "crops",
                      (int)i, (long long)p[2 * i], (long long)p[2 * i + 1]);
    st->block[i] = (int32_t)b[i];
    st->before[i] = (int32_t)p[2 * i];
    st->after[i] = (int32_t)p[2 * i + 1];
    prod *= b[i];
  }
  for (int32_t d = 0; d < in->rank; d++) st->in_dims[d] = st->out_dims[d] = in->dims[d];
  if (to_batch) {
    if ((int64_t)in->dims[0] * prod > INT32_MAX)
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "output batch too large");
    st->out_dims[0] = (int32_t)(in->dims[0] * prod);
    for (int32_t i = 0; i < m; i++) {
      const int64_t padded = (int64_t)in->dims[i + 1] + st->before[i] + st->after[i];
      if (padded % st->block[i] != 0)
        return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "padded dimension %d (%lld) is not a multiple of "
                        "block_shape[%d] = %d", (int)(i + 1), (long long)padded, (int)i, (int)st->block[i]);
      st->out_dims[i + 1] = (int32_t)(padded / st->block[i]);
    }
  } else {
    if (in->dims[0] % prod != 0)
      return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input batch %d is not a multiple of the block "
                      "size %lld", (int)in->dims[0], (long long)prod);
    st->out_dims[0] = (int32_t)(in->dims[0] / prod);
    for (int32_t i = 0; i < m; i++) {
      const int64_t full = (int64_t)in->dims[i + 1] * st->block[i] - st->before[i] - st->after[i];
      if (full < 0 || full > INT32_MAX)
        return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "crops of dimension %d leave %lld elements",
                        (int)(i + 1), (long long)full);
      st->out_dims[i + 1] = (int32_t)full;
    }
  }
  /* The padding value: 0, or the output's zero point for a quantized tensor. */
  int64_t zp = 0;
  if (o->quant && o->quant->n >= 1 && (o->dtype == AR_DTYPE_UINT8 || o->dtype == AR_DTYPE_INT8 ||
                                       o->dtype == AR_DTYPE_INT16))
    zp = o->quant->zero_point[0];
  memcpy(st->fill, &zp, st->es <= 8 ? st->es : 8);   /* little endian: the low bytes */
  return 0;
}

static int s2b_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  space_state_t st;
  int rc = s2b_plan(node, &st, msg, msg_bytes);
  if (rc) return rc;
  node->state_bytes = sizeof st;
  return ar_k_check_output_shape(node, st.rank, st.out_dims, msg, msg_bytes);
}

static void s2b_init(ar_node_t *node) {
  space_state_t st;
  char msg[8];
  if (s2b_plan(node, &st, msg, sizeof msg) == 0) ar_k_store_state(node, &st, sizeof st);
}

/* One walk for both directions: over the batch-side tensor (S2B's output, B2S's input) of dims
 * bdims, each rest-block maps to a space-side position (S2B's input, B2S's output) or to padding. */
static void s2b_eval(const ar_node_t *node) {
  const space_state_t *st = node->state;
  const bool to_batch = node->op == AR_OP_SPACE_TO_BATCH_ND;
  const int32_t *bdims = to_batch ? st->out_dims : st->in_dims;   /* batch side */
  const int32_t *sdims = to_batch ? st->in_dims : st->out_dims;   /* space side */
  const char *src = node->inputs[0]->data;
  char *dst = node->outputs[0]->data;
  const int32_t m = st->m;
  int64_t inner = 1;
  for (int32_t d = m + 1; d < st->rank; d++) inner *= st->in_dims[d];
  const size_t row = (size_t)inner * st->es;
  int64_t sstride[AR_MAX_RANK], bcount = 1;
  {
    int64_t s = inner;
    for (int32_t d = m; d >= 1; d--) { sstride[d] = s; s *= sdims[d]; }
    sstride[0] = s;
  }
  for (int32_t d = 0; d <= m; d++) bcount *= bdims[d];
  if (bcount == 0 || row == 0) return;
  const int32_t sb = sdims[0];   /* space-side batch */
  int32_t idx[AR_MAX_RANK] = {0};   /* batch-side position over dims 0..m */
  for (int64_t k = 0; k < bcount; k++) {
    const int32_t bb = idx[0];
    int64_t t = bb / sb;
    const int32_t b = bb % sb;
    int64_t off = (int64_t)b * sstride[0];
    bool pad = false;
    for (int32_t i = m - 1; i >= 0; i--) {   /* t's row-major digits over the block grid */
      const int32_t s = (int32_t)(t % st->block[i]);
      t /= st->block[i];
      const int64_t c = (int64_t)idx[i + 1] * st->block[i] + s - st->before[i];
      if (c < 0 || c >= sdims[i + 1]) { pad = true; break; }
      off += c * sstride[i + 1];
    }
    char *bside = to_batch ? dst + (size_t)k * row : NULL;
    if (to_batch) {
      if (pad) {
        if (st->es == 1) memset(bside, st->fill[0], row);
        else for (int64_t e = 0; e < inner; e++) memcpy(bside + (size_t)e * st->es, st->fill, st->es);
      } else {
        memcpy(bside, src + (size_t)off * st->es, row);
      }
    } else if (!pad) {
      memcpy(dst + (size_t)off * st->es, src + (size_t)k * row, row);
    }
    for (int32_t d = m; d >= 0; d--) {
      if (++idx[d] < bdims[d]) break;
      idx[d] = 0;
    }
  }
}

/* ---- MIRROR_PAD ---- */

static int mirror_plan(const ar_node_t *node, space_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 2, 2, 2, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  char tn[96];
  memset(st, 0, sizeof *st);
  if (!movable(in->dtype))
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input 0%s has dtype %s",
                    ar_k_tname(in, tn, sizeof tn), ar_dtype_name(in->dtype));
  if ((rc = ar_k_check_same_dtype(node, in, 0, msg, msg_bytes))) return rc;
  if (in->rank < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 is a scalar");
  int64_t p[2 * AR_MAX_RANK];
  if ((rc = read_const(node, node->inputs[1], "input 1 (paddings)", in->rank, true, p, msg, msg_bytes))) return rc;
  st->symmetric = node->options && node->options->mirror_pad.symmetric;
  st->rank = in->rank;
  st->es = ar_dtype_size(in->dtype);
  for (int32_t d = 0; d < in->rank; d++) {
    const int64_t lim = st->symmetric ? in->dims[d] : in->dims[d] - 1;
    if (p[2 * d] < 0 || p[2 * d + 1] < 0 || p[2 * d] > lim || p[2 * d + 1] > lim)
      return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "paddings[%d] = [%lld, %lld]: %s mode pads at most "
                      "%lld of a dimension of %d", (int)d, (long long)p[2 * d], (long long)p[2 * d + 1],
                      st->symmetric ? "SYMMETRIC" : "REFLECT", (long long)(lim < 0 ? 0 : lim), (int)in->dims[d]);
    st->before[d] = (int32_t)p[2 * d];
    st->after[d] = (int32_t)p[2 * d + 1];
    st->in_dims[d] = in->dims[d];
    st->out_dims[d] = in->dims[d] + st->before[d] + st->after[d];
  }
  return 0;
}

static int mirror_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  space_state_t st;
  int rc = mirror_plan(node, &st, msg, msg_bytes);
  if (rc) return rc;
  node->state_bytes = sizeof st;
  return ar_k_check_output_shape(node, st.rank, st.out_dims, msg, msg_bytes);
}

static void mirror_init(ar_node_t *node) {
  space_state_t st;
  char msg[8];
  if (mirror_plan(node, &st, msg, sizeof msg) == 0) ar_k_store_state(node, &st, sizeof st);
}

static void mirror_eval(const ar_node_t *node) {
  const space_state_t *st = node->state;
  const char *src = node->inputs[0]->data;
  char *dst = node->outputs[0]->data;
  int64_t n = 1, istride[AR_MAX_RANK];
  for (int32_t d = 0; d < st->rank; d++) n *= st->out_dims[d];
  {
    int64_t s = 1;
    for (int32_t d = st->rank - 1; d >= 0; d--) { istride[d] = s; s *= st->in_dims[d]; }
  }
  if (n == 0) return;
  const int32_t k = st->symmetric ? 1 : 0;   /* REFLECT skips the edge, SYMMETRIC repeats it */
  int32_t idx[AR_MAX_RANK] = {0};
  for (int64_t e = 0; e < n; e++) {
    int64_t off = 0;
    for (int32_t d = 0; d < st->rank; d++) {
      int64_t c = (int64_t)idx[d] - st->before[d];
      const int64_t len = st->in_dims[d];
      if (c < 0) c = -c - k;
      else if (c >= len) c = 2 * len - 2 + k - c;
      off += c * istride[d];
    }
    memcpy(dst + (size_t)e * st->es, src + (size_t)off * st->es, st->es);
    for (int32_t d = st->rank - 1; d >= 0; d--) {
      if (++idx[d] < st->out_dims[d]) break;
      idx[d] = 0;
    }
  }
}

/* Versions: SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND 2 = int8, 3 = not rank 4, 4 = int16; MIRROR_PAD
 * 2 = int8, 3 = int16. Every dtype runs at every version. */
static const ar_kernel_form_t s2b_forms[] = { AR_KF_DATA(1, 4) };
static const ar_kernel_form_t mirror_forms[] = { AR_KF_DATA(1, 3) };

/* TFLite SPACE_TO_BATCH_ND (builtin 38), BATCH_TO_SPACE_ND (37), MIRROR_PAD (100). */
const ar_kernel_t ar_kernel_space_to_batch_nd = { "SPACE_TO_BATCH_ND", s2b_prepare, s2b_init, s2b_eval,
                                                  AR_KSUPPORT(s2b_forms, 0, -1) };
const ar_kernel_t ar_kernel_batch_to_space_nd = { "BATCH_TO_SPACE_ND", s2b_prepare, s2b_init, s2b_eval,
                                                  AR_KSUPPORT(s2b_forms, 0, -1) };
const ar_kernel_t ar_kernel_mirror_pad = { "MIRROR_PAD", mirror_prepare, mirror_init, mirror_eval,
                                           AR_KSUPPORT(mirror_forms, 0, -1) };
