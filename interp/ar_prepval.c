/* ar_prepval.c - values the interpreter computes at prepare so that operators whose output SHAPE
 * is decided by an operand's VALUES can be planned ahead (TFLite makes such outputs dynamic).
 *
 * An operand like FILL's dims, RANGE's start / limit / delta or TOPK_V2's k is fine when it is a
 * constant. In converted models it is often computed instead: SHAPE of an input whose batch is -1,
 * then STRIDED_SLICE / GATHER / CONCATENATION / ADD / CAST of that and of constants. Every value on
 * such a chain is known at prepare: SHAPE's output depends only on its input's dims, and the rest
 * only on constants and earlier known values. So after each operator's prepare, in stored order,
 * an operator producing a tensor that feeds such an operand (directly or through the chain) is
 * evaluated once, on buffers of its own, when every input it reads is known (SHAPE reads no data);
 * its outputs get value_known with data on those buffers, and the consumer's prepare reads them
 * like constants (ar_k_require_constant). A resize re-prepares in the same order, so the values
 * follow the new input dims. At invoke the operators run as usual into the arena.
 *
 * The operator runs with its init and state / scratch on buffers of this call (prepare may
 * allocate; invoke never does). Not computed (the consumer then refuses, naming itself and the
 * operand): a chain that reads a graph input's values or any tensor computed at invoke, control
 * flow, an operator with per-stream state, an output above AR_PREPVAL_MAX_BYTES.
 */
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "interp/ar_interp_int.h"

#define AR_PREPVAL_MAX_BYTES 4096

/* Operand j of `op` is read by value to decide an output shape. */
static bool value_sets_shape(ar_op_t op, int32_t j) {
  switch (op) {
    case AR_OP_FILL: return j == 0;
    case AR_OP_RANGE: return j <= 2;
    case AR_OP_TOPK_V2:
    case AR_OP_ONE_HOT:
    case AR_OP_REVERSE_V2:
    case AR_OP_CUMSUM:
    case AR_OP_PAD:
    case AR_OP_MIRROR_PAD:
    case AR_OP_RESHAPE:
    case AR_OP_TILE:
    case AR_OP_BROADCAST_TO:
    case AR_OP_TRANSPOSE:
    case AR_OP_EXPAND_DIMS:
    case AR_OP_RESIZE_NEAREST_NEIGHBOR:
    case AR_OP_RESIZE_BILINEAR: return j == 1;
    case AR_OP_STRIDED_SLICE: return j >= 1 && j <= 3;
    case AR_OP_SLICE:
    case AR_OP_SPLIT_V: return j == 1 || j == 2;
    case AR_OP_SPLIT:
    case AR_OP_TRANSPOSE_CONV: return j == 0;
    default: return false;
  }
}

int ar__prepval_init(ar_interp_t *in) {
  const ar_subgraph_t *sg = in->sg;
  in->want_value = calloc((size_t)(in->n_tensors ? in->n_tensors : 1), sizeof(*in->want_value));
  in->prep_val = calloc((size_t)(in->n_tensors ? in->n_tensors : 1), sizeof(*in->prep_val));
  in->prep_placed = calloc((size_t)(in->n_tensors ? in->n_tensors : 1), sizeof(*in->prep_placed));
  if (!in->want_value || !in->prep_val || !in->prep_placed) return AR_ENOMEM;
  /* Backwards over the stored order (producers come before their readers): an operand that sets a
   * shape is wanted, and so is every input of an operator writing a wanted tensor. */
  for (int32_t k = (int32_t)sg->n_operators - 1; k >= 0; k--) {
    const ar_operator_t *op = &sg->operators[k];
    bool feeds = false;
    for (int32_t o = 0; o < op->n_outputs && !feeds; o++) feeds = op->outputs[o] >= 0 && in->want_value[op->outputs[o]];
    for (int32_t j = 0; j < op->n_inputs; j++)
      if (op->inputs[j] >= 0 && (feeds || value_sets_shape(op->op, j))) in->want_value[op->inputs[j]] = true;
  }
  return 0;
}

void ar__prepval_free(ar_interp_t *in) {
  if (in->prep_val)
    for (int32_t t = 0; t < in->n_tensors; t++) free(in->prep_val[t]);
  free(in->prep_val);
  free(in->prep_placed);
  free(in->want_value);
  in->prep_val = NULL;
  in->prep_placed = NULL;
  in->want_value = NULL;
}

static bool known(const ar_tview_t *v) { return v && (v->is_constant || v->value_known) && v->data; }

int ar__prepval_eval(ar_interp_t *in, int32_t k) {
  if (!in->want_value || k < 0 || k >= in->n_ops) return 0;
  const ar_operator_t *op = &in->sg->operators[k];
  ar_node_t *nd = &in->nodes[k];
  bool wanted = false;
  for (int32_t o = 0; o < op->n_outputs && !wanted; o++) wanted = op->outputs[o] >= 0 && in->want_value[op->outputs[o]];
  if (!wanted) return 0;
  const ar_kernel_t *kern = in->kernels[k];
  bool ok = kern && kern->eval && nd->stream_bytes == 0 && !in->elided[k] && nd->fused == NULL &&
            op->op != AR_OP_WHILE && op->op != AR_OP_IF && op->op != AR_OP_CALL_ONCE &&
            nd->state_bytes <= AR_PREPVAL_MAX_BYTES * 4 && nd->scratch_bytes <= AR_PREPVAL_MAX_BYTES * 4;
  for (int32_t j = 0; ok && j < nd->n_inputs; j++)
    ok = nd->inputs[j] == NULL || op->op == AR_OP_SHAPE || known(nd->inputs[j]);
  for (int32_t o = 0; ok && o < nd->n_outputs; o++)
    ok = nd->outputs[o] && nd->outputs[o]->bytes <= AR_PREPVAL_MAX_BYTES;
  for (int32_t o = 0; o < nd->n_outputs; o++)
    if (nd->outputs[o]) nd->outputs[o]->value_known = false;
  if (!ok) return 0;
  for (int32_t o = 0; o < nd->n_outputs; o++) {
    const int32_t t = op->outputs[o];
    /* a fresh buffer per prepare: the size can change with the input dims; prepare may allocate */
    free(in->prep_val[t]);
    in->prep_val[t] = calloc(1, nd->outputs[o]->bytes ? nd->outputs[o]->bytes : 1);
    if (!in->prep_val[t]) return AR_ENOMEM;
    nd->outputs[o]->data = in->prep_val[t];
  }
  /* The kernel's state and scratch on buffers of this call (the planned ones are not placed yet),
   * on the calling thread; the node's own pointers are put back after. */
  void *state = nd->state, *scratch = nd->scratch;
  ar_threadpool_t *pool = nd->pool;
  void *tstate = nd->state_bytes ? aligned_alloc(64, (size_t)ar_align_up(nd->state_bytes, 64)) : NULL;
  void *tscratch = nd->scratch_bytes ? aligned_alloc(64, (size_t)ar_align_up(nd->scratch_bytes, 64)) : NULL;
  if ((nd->state_bytes && !tstate) || (nd->scratch_bytes && !tscratch)) {
    free(tstate);
    free(tscratch);
    return AR_ENOMEM;
  }
  if (tstate) memset(tstate, 0, (size_t)nd->state_bytes);
  nd->state = tstate;
  nd->scratch = tscratch;
  nd->pool = NULL;
  if (kern->init) kern->init(nd);
  kern->eval(nd);
  nd->state = state;
  nd->scratch = scratch;
  nd->pool = pool;
  free(tstate);
  free(tscratch);
  for (int32_t o = 0; o < nd->n_outputs; o++) nd->outputs[o]->value_known = true;
  return 0;
}

void ar__prepval_point(ar_interp_t *in, bool at_values) {
  if (!in->prep_val) return;
  for (int32_t t = 0; t < in->n_tensors; t++) {
    ar_tview_t *v = &in->views[t];
    if (!in->prep_val[t] || !v->value_known) continue;
    if (at_values) {
      in->prep_placed[t] = v->data;
      v->data = in->prep_val[t];
    } else {
      v->data = in->prep_placed[t];
    }
  }
}
