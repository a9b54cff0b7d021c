/* softmax.c - TFLite SOFTMAX, LOG_SOFTMAX and L2_NORMALIZATION, float32, over the last axis.
 *
 * The input is read as [outer, depth] with depth = the last dim (any rank >= 1). Per row, as the
 * reference kernels: SOFTMAX exp(beta (x - max)) / sum; LOG_SOFTMAX (x - max) - log(sum exp(x -
 * max)); L2_NORMALIZATION x / max(sqrt(sum x^2), 1e-6), then the fused activation. Each row is
 * read completely before its outputs are written, so an output may share its input's bytes.
 */
#include <math.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

static int lastaxis_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 1, 1, 1, 1, msg, msg_bytes);
  if (rc) return rc;
  const ar_tview_t *in = node->inputs[0];
  if ((rc = ar_k_check_dtype(node, in, "input 0", AR_DTYPE_FLOAT32, msg, msg_bytes)) ||
      (rc = ar_k_check_dtype(node, node->outputs[0], "output 0", AR_DTYPE_FLOAT32, msg, msg_bytes)))
    return rc;
  if (in->rank < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 is a scalar (rank >= 1 needed)");
  if (node->op == AR_OP_L2_NORMALIZATION && node->options) {
    float lo, hi;
    bool post;
    if ((rc = ar_k_activation(node, node->options->elementwise.activation, &lo, &hi, &post, msg, msg_bytes)))
      return rc;
  }
  node->state_bytes = 0;
  return ar_k_check_output_shape(node, in->rank, in->dims, msg, msg_bytes);
}

static void rows(const ar_node_t *node, int64_t *outer, int64_t *depth) {
  const ar_tview_t *in = node->inputs[0];
  *depth = in->dims[in->rank - 1];
  *outer = *depth > 0 ? ar_k_elements(in) / *depth : 0;
}

static void softmax_eval(const ar_node_t *node) {
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  const float beta = node->options ? node->options->softmax.beta : 0.0f;
  int64_t outer, depth;
  rows(node, &outer, &depth);
  for (int64_t r = 0; r < outer; r++, in += depth, out += depth) {
    float mx = in[0];
    for (int64_t c = 1; c < depth; c++) mx = in[c] > mx ? in[c] : mx;
    float sum = 0.0f;
    for (int64_t c = 0; c < depth; c++) {
      const float e = expf((in[c] - mx) * beta);
      out[c] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;
    for (int64_t c = 0; c < depth; c++) out[c] *= inv;
  }
}

static void log_softmax_eval(const ar_node_t *node) {
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  int64_t outer, depth;
  rows(node, &outer, &depth);
  for (int64_t r = 0; r < outer; r++, in += depth, out += depth) {
    float mx = in[0];
    for (int64_t c = 1; c < depth; c++) mx = in[c] > mx ? in[c] : mx;
    float sum = 0.0f;
    for (int64_t c = 0; c < depth; c++) sum += expf(in[c] - mx);
    const float log_sum = logf(sum);
    for (int64_t c = 0; c < depth; c++) out[c] = in[c] - mx - log_sum;
  }
}

static void l2_normalization_eval(const ar_node_t *node) {
  const float *in = node->inputs[0]->data;
  float *out = node->outputs[0]->data;
  int64_t outer, depth;
  rows(node, &outer, &depth);
  const ar_activation_t act = node->options ? node->options->elementwise.activation : AR_ACT_NONE;
  for (int64_t r = 0; r < outer; r++, in += depth, out += depth) {
    float sq = 0.0f;
    for (int64_t c = 0; c < depth; c++) sq += in[c] * in[c];
    float norm = sqrtf(sq);
    norm = norm > 1e-6f ? norm : 1e-6f;
    for (int64_t c = 0; c < depth; c++) out[c] = in[c] / norm;
  }
  if (act != AR_ACT_NONE && outer > 0)
    ar_apply_activation(node->outputs[0]->data, (size_t)(outer * depth), act);
}

/* TFLite SOFTMAX (builtin 25): exp(beta (x - max)) / sum over the last axis. */
const ar_kernel_t ar_kernel_softmax = { "SOFTMAX", lastaxis_prepare, NULL, softmax_eval };
/* TFLite LOG_SOFTMAX (builtin 50): x - max - log(sum exp(x - max)) over the last axis. */
const ar_kernel_t ar_kernel_log_softmax = { "LOG_SOFTMAX", lastaxis_prepare, NULL, log_softmax_eval };
/* TFLite L2_NORMALIZATION (builtin 11): x / max(||x||_2, 1e-6) over the last axis. */
const ar_kernel_t ar_kernel_l2_normalization = { "L2_NORMALIZATION", lastaxis_prepare, NULL,
                                                 l2_normalization_eval };
