/* pool.c - TFLite MAX_POOL_2D and AVERAGE_POOL_2D, float32 NHWC.
 *
 * TFLite rules: output size and leading padding from kernels/padding.h (ar_compute_padding; SAME
 * puts the odd row/column at the bottom/right), taps falling outside the input are ignored (max over
 * the in-bounds taps; average divides by the number of in-bounds taps, not the filter area), then
 * the fused activation. The channel loop is innermost and contiguous; each output pixel's C values
 * serve as the accumulator, so there is no scratch.
 */
#include <float.h>
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

typedef struct {
  int32_t b, h, w, c, oh, ow;
  int32_t fh, fw, sh, sw, pad_t, pad_l;
  float lo, hi;
  bool post_act;
  ar_activation_t act;
} pool_state_t;

static int pool_plan(const ar_node_t *node, pool_state_t *st, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  if ((rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_FLOAT32, msg, msg_bytes)))
    return rc;
  if (in->rank != 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input rank %d, expected 4 (NHWC)", (int)in->rank);
  if (!node->options)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "missing Pool2DOptions");
  const ar_pool2d_options_t *p = &node->options->pool2d;
  if (p->stride_h <= 0 || p->stride_w <= 0 || p->filter_h <= 0 || p->filter_w <= 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "stride %dx%d, filter %dx%d must be positive",
                    (int)p->stride_h, (int)p->stride_w, (int)p->filter_h, (int)p->filter_w);
  if (p->padding != AR_PADDING_SAME && p->padding != AR_PADDING_VALID)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "padding %d", (int)p->padding);
  memset(st, 0, sizeof *st);
  st->act = p->activation;
  if ((rc = ar_k_activation(node, st->act, &st->lo, &st->hi, &st->post_act, msg, msg_bytes))) return rc;
  st->b = in->dims[0]; st->h = in->dims[1]; st->w = in->dims[2]; st->c = in->dims[3];
  st->fh = p->filter_h; st->fw = p->filter_w; st->sh = p->stride_h; st->sw = p->stride_w;
  st->oh = ar_compute_padding(p->padding, st->h, st->fh, st->sh, 1, &st->pad_t);
  st->ow = ar_compute_padding(p->padding, st->w, st->fw, st->sw, 1, &st->pad_l);
  if (st->oh <= 0 || st->ow <= 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "filter %dx%d with VALID padding leaves no output "
                    "for input %dx%d", (int)st->fh, (int)st->fw, (int)st->h, (int)st->w);
  int32_t od[4] = { st->b, st->oh, st->ow, st->c };
  return ar_k_check_output_shape(node, 4, od, msg, msg_bytes);
}

static int pool_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  pool_state_t st;
  node->state_bytes = sizeof st;
  return pool_plan(node, &st, msg, msg_bytes);
}

static void pool_init(ar_node_t *node) {
  pool_state_t st;
  if (pool_plan(node, &st, NULL, 0) == 0) ar_k_store_state(node, &st, sizeof st);
}

static void pool_eval(const ar_node_t *node, bool is_max) {
  const pool_state_t *st = node->state;
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  const int64_t C = st->c;
  const float lo = st->lo, hi = st->hi;
  for (int32_t b = 0; b < st->b; b++) {
    const float *inb = in + (int64_t)b * st->h * st->w * C;
    for (int32_t oy = 0; oy < st->oh; oy++) {
      int32_t y0 = oy * st->sh - st->pad_t;
      int32_t fy0 = AR_MAX(0, -y0), fy1 = AR_MIN(st->fh, st->h - y0);
      for (int32_t ox = 0; ox < st->ow; ox++, out += C) {
        int32_t x0 = ox * st->sw - st->pad_l;
        int32_t fx0 = AR_MAX(0, -x0), fx1 = AR_MIN(st->fw, st->w - x0);
        float init = is_max ? -FLT_MAX : 0.0f;
        for (int64_t c = 0; c < C; c++) out[c] = init;
        for (int32_t fy = fy0; fy < fy1; fy++) {
          const float *row = inb + ((int64_t)(y0 + fy) * st->w + x0) * C;
          for (int32_t fx = fx0; fx < fx1; fx++) {
            const float *px = row + (int64_t)fx * C;
            if (is_max)
              for (int64_t c = 0; c < C; c++) out[c] = px[c] > out[c] ? px[c] : out[c];
            else
              for (int64_t c = 0; c < C; c++) out[c] += px[c];
          }
        }
        if (is_max) {
          for (int64_t c = 0; c < C; c++) out[c] = ar_k_clamp(out[c], lo, hi);
        } else {
          int32_t count = (fy1 - fy0) * (fx1 - fx0);
          /* Divide (not multiply by a reciprocal) as TFLite's reference does. */
          float fc = count > 0 ? (float)count : 1.0f;
          for (int64_t c = 0; c < C; c++) out[c] = ar_k_clamp(out[c] / fc, lo, hi);
        }
      }
    }
  }
  if (st->post_act)
    ar_apply_activation(node->outputs[0]->data, (size_t)st->b * st->oh * st->ow * C, st->act);
}

static void max_pool_eval(const ar_node_t *node) { pool_eval(node, true); }
static void avg_pool_eval(const ar_node_t *node) { pool_eval(node, false); }

/* TFLite MAX_POOL_2D (builtin 17): max over in-bounds taps, then fused activation. */
const ar_kernel_t ar_kernel_max_pool_2d = { "MAX_POOL_2D", pool_prepare, pool_init, max_pool_eval };
/* TFLite AVERAGE_POOL_2D (builtin 1): mean over in-bounds taps, then fused activation. */
const ar_kernel_t ar_kernel_average_pool_2d = { "AVERAGE_POOL_2D", pool_prepare, pool_init, avg_pool_eval };
