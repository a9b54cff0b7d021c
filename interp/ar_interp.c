/* ar_interp.c - the interpreter: tensor views, kernel prepare, lifetimes + plan, placement,
 * constant folding and invoke.
 *
 * ar_interp_new builds one ar_tview_t per tensor of subgraph 0 from the loader's stored shapes,
 * decides which operators are folded (DEQUANTIZE/DENSIFY of constants, the rule ar_lifetimes_build
 * also applies; both are checked to agree), runs every kernel's prepare in stored order, hands the
 * scratch sizes to ar_lifetimes_build and plans. Nothing is placed yet: views of folded tensors are
 * marked constant (so consumers' prepare sees weights) but their data appear only at place, so
 * kernels read only the shapes of weights at prepare.
 *
 * ar_interp_place points every view at its bytes (mapping, activation region, persistent region),
 * evaluates the folded operators once in stored order into persistent memory, then runs each
 * kernel's init. ar_interp_invoke is a loop over the remaining operators' eval: no checks, no
 * allocation.
 *
 * Persistent region layout:
 *   [ planner persistent area (folded constants, variables) | node state, 64-byte aligned each |
 *     resource variables (main graph only) ]
 * A control-flow operator's node state holds its children's persistent regions; its scratch
 * their activation plans, then a WHILE's second loop-value buffers (see cf_run).
 */
#include "interp/ar_interp.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "kernels/ar_parallel.h"
#include "interp/ar_interp_int.h"

void ar_interp_options_default(ar_interp_options_t *opt) {
  memset(opt, 0, sizeof(*opt));
  opt->strategy = AR_STRATEGY_BEST;
  opt->lifetimes = AR_LIFETIMES_ARENAD;
  opt->inplace = true;
  opt->threads = 1;
  /* Stored weights: bench/invoke --weights shows them no slower than fp32 ones (issue 12). */
  opt->weights = AR_WEIGHTS_STORED;
  opt->fuse = true;
  opt->max_while_iterations = AR_INTERP_MAX_WHILE_ITERATIONS;
}

const char *ar_weights_name(ar_weights_t w) {
  switch (w) {
  case AR_WEIGHTS_FP32: return "fp32";
  case AR_WEIGHTS_STORED: return "stored";
  }
  return "unknown";
}

int ar_weights_parse(const char *name, ar_weights_t *out) {
  if (name == NULL || out == NULL) return AR_EINVAL;
  if (strcmp(name, "fp32") == 0) { *out = AR_WEIGHTS_FP32; return 0; }
  if (strcmp(name, "stored") == 0) { *out = AR_WEIGHTS_STORED; return 0; }
  return AR_EINVAL;
}


/* Operand `j` of operator `op` is read by value to derive an output shape (TFLite's "dynamic
 * tensor" operands): PAD paddings, RESHAPE shape, STRIDED_SLICE begin/end/strides, SLICE
 * begin/size, the multiples/shape/perm/axis/size of TILE, BROADCAST_TO, TRANSPOSE, EXPAND_DIMS and
 * RESIZE_NEAREST_NEIGHBOR, SPLIT's axis, SPLIT_V's size_splits and axis, TRANSPOSE_CONV's
 * output_shape. */
static bool operand_sets_shape(ar_op_t op, int32_t j) {
  switch (op) {
    case AR_OP_PAD:
    case AR_OP_RESHAPE:
    case AR_OP_TILE:
    case AR_OP_BROADCAST_TO:
    case AR_OP_TRANSPOSE:
    case AR_OP_EXPAND_DIMS:
    case AR_OP_RESIZE_NEAREST_NEIGHBOR: return j == 1;
    case AR_OP_STRIDED_SLICE: return j >= 1 && j <= 3;
    case AR_OP_SLICE:
    case AR_OP_SPLIT_V: return j == 1 || j == 2;
    case AR_OP_SPLIT:
    case AR_OP_TRANSPOSE_CONV: return j == 0;
    default: return false;
  }
}

/* Tensor t is a graph input whose value the interpreter snapshots (it sets a shape). */
static bool snapshotted(const ar_interp_t *in, int32_t t) {
  for (uint32_t i = 0; i < in->sg->n_inputs; i++)
    if (in->sg->inputs[i] == t && in->snap[i]) return true;
  return false;
}

static uint64_t elems_of(const ar_tview_t *v) {
  uint64_t n = 1;
  for (int32_t d = 0; d < v->rank; d++) n *= (uint64_t)v->dims[d];
  return n;
}

/* Multiply-accumulates of one operator, from its (already validated) shapes. */
static uint64_t node_macs(const ar_node_t *nd) {
  if (nd->n_inputs < 2 || nd->n_outputs < 1 || !nd->inputs[0] || !nd->inputs[1] || !nd->outputs[0])
    return 0;
  const ar_tview_t *in = nd->inputs[0], *w = nd->inputs[1], *out = nd->outputs[0];
  uint64_t wn = elems_of(w);
  switch (nd->op) {
    case AR_OP_CONV_2D:   /* filter OHWI: each output element takes KH*KW*I products */
      return w->rank == 4 && w->dims[0] > 0 ? elems_of(out) * (wn / (uint64_t)w->dims[0]) : 0;
    case AR_OP_DEPTHWISE_CONV_2D:   /* filter 1HW(I*M): KH*KW products per output element */
      return w->rank == 4 && w->dims[3] > 0 ? elems_of(out) * (wn / (uint64_t)w->dims[3]) : 0;
    case AR_OP_FULLY_CONNECTED:     /* weights [O, I] */
      return w->rank == 2 ? elems_of(out) * (uint64_t)w->dims[1] : 0;
    case AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS:   /* filter OHWI: each input element feeds O*KH*KW */
      return w->rank == 4 && w->dims[3] > 0 ? elems_of(in) * (wn / (uint64_t)w->dims[3]) : 0;
    default:
      return 0;
  }
}

static void view_from_tensor(ar_tview_t *v, const ar_tensor_t *t) {
  memset(v, 0, sizeof(*v));
  v->dtype = t->dtype;
  v->rank = t->rank;
  memcpy(v->dims, t->dims, sizeof(v->dims));
  v->bytes = t->sparsity ? t->data_bytes : t->bytes;   /* a sparse constant: its stored values */
  v->is_constant = ar_tensor_is_constant(t);
  v->data = v->is_constant ? (void *)t->data : NULL;
  v->sparsity = t->sparsity;
  v->quant = t->quant;
  v->name = t->name;
}

/* Record operator k as unsupported: the loader's entry for an AR_OP_INVALID operator, else `why`
 * (a kernel's message, whose "operator K (OP): " prefix is dropped). */
static void note_unsupported(const ar_model_t *model, int32_t sgi, const ar_unsupported_t *loader_list,
                             int32_t n_loader, int32_t k, const char *why, ar_unsupported_t *list,
                             int32_t max, int32_t *n) {
  const ar_operator_t *op = &model->subgraphs[sgi].operators[k];
  ar_unsupported_t u;
  memset(&u, 0, sizeof u);
  bool found = false;
  for (int32_t i = 0; i < n_loader && !found; i++)
    if (loader_list[i].op_index == k && loader_list[i].subgraph == sgi) u = loader_list[i], found = true;
  if (!found) {
    u.op_index = k;
    u.subgraph = sgi;
    u.version = op->version;
    const ar_opcode_t *oc = &model->opcodes[op->opcode_index];
    snprintf(u.op, sizeof u.op, "%s", oc->custom_code ? oc->custom_code : ar_op_name(op->op));
    const char *p = why ? strstr(why, "): ") : NULL;
    snprintf(u.option, sizeof u.option, "%s", p ? p + 3 : why ? why : "no kernel for this op");
  }
  if (*n < max) list[*n] = u;
  (*n)++;
}

/* The fields of operator k's node that come from the operator itself (and the thread count). */
static void node_of_op(ar_node_t *nd, const ar_operator_t *op, int32_t k, int32_t threads) {
  nd->op = op->op;
  nd->index = k;
  nd->version = op->version;
  nd->options = &op->options;
  nd->custom_options = op->custom_options;
  nd->custom_options_bytes = op->custom_options_bytes;
  nd->threads = threads;
}

/* A node for asking a kernel about operator k before prepare (ar_kernel_reads_f16, the sparse
 * filter check, the fusion and PAD folding checks): its options and the model's views of its tensors
 * (NULL for an absent optional input), the view pointers in `io` (PROBE_IO entries). False when
 * the operator names a tensor out of range or has more inputs and outputs than that: the operators
 * asked about (CONV_2D, FULLY_CONNECTED, DEPTHWISE_CONV_2D, PAD, ADD) have at most 4, any other
 * is left as it is anyway. */
#define PROBE_IO 16
static bool probe_node(const ar_interp_t *in, int32_t k, ar_node_t *nd, ar_tview_t **io) {
  const ar_operator_t *op = &in->sg->operators[k];
  const int32_t nt = in->n_tensors;
  memset(nd, 0, sizeof *nd);
  if ((int64_t)op->n_inputs + op->n_outputs > PROBE_IO) return false;
  nd->inputs = io;
  nd->outputs = io + op->n_inputs;
  node_of_op(nd, op, k, in->opt.threads);
  nd->n_inputs = op->n_inputs;
  nd->n_outputs = op->n_outputs;
  for (int32_t j = 0; j < op->n_inputs; j++) {
    if (op->inputs[j] >= nt) return false;
    nd->inputs[j] = op->inputs[j] >= 0 ? (ar_tview_t *)&in->views[op->inputs[j]] : NULL;
  }
  for (int32_t o = 0; o < op->n_outputs; o++) {
    if (op->outputs[o] >= nt) return false;
    nd->outputs[o] = op->outputs[o] >= 0 ? (ar_tview_t *)&in->views[op->outputs[o]] : NULL;
  }
  return true;
}
/* Stored weights, sparse filters: a CONV_2D / FULLY_CONNECTED whose filter is DEQUANTIZE(DENSIFY(sparse float16
 * constant)) or DENSIFY(sparse float32 constant), each link read by nothing else, and which the
 * sparse kernel covers (ar_kernel_sparse_filter_check), reads the sparse constant as stored:
 * elided[] marks the chain (never run, outputs without bytes) and sparse_of[k] names the constant
 * for operator k's input 1 (-1 elsewhere). Anything else keeps the dense path (DENSIFY folded).
 * Errors: AR_ENOMEM. */
static int find_sparse_filters(const ar_interp_t *in, bool *elided, int32_t *sparse_of) {
  const ar_subgraph_t *sg = in->sg;
  const int32_t nt = in->n_tensors, no = in->n_ops;
  int32_t *producer = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *producer);
  int32_t *readers = calloc((size_t)(nt > 0 ? nt : 1), sizeof *readers);
  if (!producer || !readers) {
    free(producer);
    free(readers);
    return AR_ENOMEM;
  }
  for (int32_t t = 0; t < nt; t++) producer[t] = -1;
  for (int32_t k = 0; k < no; k++) {
    const ar_operator_t *op = &sg->operators[k];
    sparse_of[k] = -1;
    for (int32_t i = 0; i < op->n_inputs; i++)
      if (op->inputs[i] >= 0 && op->inputs[i] < nt) readers[op->inputs[i]]++;
    for (int32_t o = 0; o < op->n_outputs; o++)
      if (op->outputs[o] >= 0 && op->outputs[o] < nt) producer[op->outputs[o]] = k;
  }
  for (uint32_t i = 0; i < sg->n_outputs; i++)
    if (sg->outputs[i] >= 0 && sg->outputs[i] < nt) readers[sg->outputs[i]]++;
  for (int32_t k = 0; k < no; k++) {
    const ar_operator_t *op = &sg->operators[k];
    if ((op->op != AR_OP_CONV_2D && op->op != AR_OP_FULLY_CONNECTED) || op->n_inputs < 2 ||
        op->n_outputs != 1 || op->inputs[1] < 0 || op->inputs[1] >= nt)
      continue;
    int32_t t = op->inputs[1], deq = -1, den = -1;
    int32_t p = producer[t];
    if (p >= 0 && p < k && readers[t] == 1 && sg->operators[p].op == AR_OP_DEQUANTIZE &&
        sg->operators[p].n_inputs == 1 && sg->operators[p].n_outputs == 1 &&
        sg->tensors[t].dtype == AR_DTYPE_FLOAT32) {
      deq = p;
      t = sg->operators[p].inputs[0];
      if (t < 0 || t >= nt || sg->tensors[t].dtype != AR_DTYPE_FLOAT16) continue;
      p = producer[t];
    }
    if (p < 0 || p >= k || readers[t] != 1 || sg->operators[p].op != AR_OP_DENSIFY ||
        sg->operators[p].n_inputs != 1 || sg->operators[p].n_outputs != 1)
      continue;
    den = p;
    const int32_t ts = sg->operators[den].inputs[0];
    if (ts < 0 || ts >= nt || !in->views[ts].sparsity || !in->views[ts].is_constant ||
        (deq < 0 && sg->tensors[ts].dtype != AR_DTYPE_FLOAT32))
      continue;
    ar_node_t nd;
    ar_tview_t *io[PROBE_IO];
    if (!probe_node(in, k, &nd, io) || nd.outputs[0] == NULL) continue;
    nd.inputs[1] = (ar_tview_t *)&in->views[ts];
    if (ar_kernel_sparse_filter_check(&nd, NULL, 0) != 0) continue;
    elided[den] = true;
    if (deq >= 0) elided[deq] = true;
    sparse_of[k] = ts;
  }
  free(producer);
  free(readers);
  return 0;
}

/* Stored weights, fp16 read as stored: an at-use DEQUANTIZE (mode[d] == AR_OPMODE_AT_USE, a
 * float16 constant widened into a float32 activation tensor) whose readers all take the float16
 * constant itself (ar_kernel_reads_f16 for the slot they read it in) is elided: elided[d] is
 * set and f16_of[its output] names the float16 constant, which the readers' nodes then show in
 * that slot (-1 elsewhere); readers are asked with a sparse filter shown as stored (sparse_of). Only a plain model constant (not a folded DENSIFY output) is handed
 * over. Returns how many were elided, or -AR_ENOMEM. */
static int32_t find_f16_weights(const ar_interp_t *in, const ar_op_mode_t *mode, const int32_t *sparse_of,
                                bool *elided, int32_t *f16_of) {
  const ar_subgraph_t *sg = in->sg;
  const int32_t nt = in->n_tensors, no = in->n_ops;
  int32_t *deq_of = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *deq_of);   /* candidate's DEQUANTIZE */
  bool *ok = malloc((size_t)(no > 0 ? no : 1) * sizeof *ok);              /* per DEQUANTIZE */
  if (!deq_of || !ok) {
    free(deq_of);
    free(ok);
    return -AR_ENOMEM;
  }
  for (int32_t t = 0; t < nt; t++) f16_of[t] = deq_of[t] = -1;
  for (int32_t d = 0; d < no; d++) {
    const ar_operator_t *op = &sg->operators[d];
    ok[d] = false;
    if (mode[d] != AR_OPMODE_AT_USE || elided[d] || op->op != AR_OP_DEQUANTIZE || op->n_inputs != 1 ||
        op->n_outputs != 1)
      continue;
    const int32_t ti = op->inputs[0], to = op->outputs[0];
    if (ti < 0 || ti >= nt || to < 0 || to >= nt || sg->tensors[ti].dtype != AR_DTYPE_FLOAT16 ||
        !ar_tensor_is_constant(&sg->tensors[ti]) || sg->tensors[ti].sparsity || deq_of[to] >= 0)
      continue;
    deq_of[to] = d;
    ok[d] = true;
  }
  /* Every reader must say yes; a DEQUANTIZE nothing reads keeps its mode. */
  bool *read = calloc((size_t)(no > 0 ? no : 1), sizeof *read);
  if (!read) {
    free(deq_of);
    free(ok);
    return -AR_ENOMEM;
  }
  for (int32_t k = 0; k < no; k++) {
    const ar_operator_t *op = &sg->operators[k];
    for (int32_t i = 0; i < op->n_inputs; i++) {
      const int32_t t = op->inputs[i];
      if (t < 0 || t >= nt || deq_of[t] < 0) continue;
      const int32_t d = deq_of[t];
      read[d] = true;
      if (!ok[d]) continue;
      const ar_kernel_t *kern = op->op == AR_OP_INVALID ? NULL : ar_kernel_for(op->op);
      bool yes = kern && !elided[k] && mode[k] == AR_OPMODE_INVOKE;
      if (yes) {
        ar_node_t nd;
        ar_tview_t *io[PROBE_IO];
        yes = probe_node(in, k, &nd, io);
        if (yes && sparse_of[k] >= 0) nd.inputs[1] = (ar_tview_t *)&in->views[sparse_of[k]];
        yes = yes && ar_kernel_reads_f16(&nd, i);
      }
      if (!yes) ok[d] = false;
    }
  }
  for (uint32_t i = 0; i < sg->n_outputs; i++)
    if (sg->outputs[i] >= 0 && sg->outputs[i] < nt && deq_of[sg->outputs[i]] >= 0)
      ok[deq_of[sg->outputs[i]]] = false;
  int32_t n = 0;
  for (int32_t d = 0; d < no; d++) {
    if (!ok[d] || !read[d]) continue;
    elided[d] = true;
    f16_of[sg->operators[d].outputs[0]] = sg->operators[d].inputs[0];
    n++;
  }
  free(deq_of);
  free(ok);
  free(read);
  return n;
}

/* Who reads and who writes each tensor, from the graph alone (elisions do not change it), for the
 * fusion and folding passes below: reader[t] the one operator reading t (-1: none; -2: several
 * reads, or t is a graph output), slot[t] the input slot of its last read, producer[t] the
 * operator writing t (-1: none). */
typedef struct readers {
  int32_t *reader, *slot, *producer;
} readers_t;

static void readers_free(readers_t *rd) {
  free(rd->reader);
  free(rd->slot);
  free(rd->producer);
}

/* Fill *rd for in's subgraph. Errors: AR_ENOMEM (rd left empty). */
static int readers_build(const ar_interp_t *in, readers_t *rd) {
  const ar_subgraph_t *sg = in->sg;
  const int32_t nt = in->n_tensors, no = in->n_ops;
  const size_t n = (size_t)(nt > 0 ? nt : 1);
  rd->reader = malloc(n * sizeof *rd->reader);
  rd->slot = malloc(n * sizeof *rd->slot);
  rd->producer = malloc(n * sizeof *rd->producer);
  if (!rd->reader || !rd->slot || !rd->producer) {
    readers_free(rd);
    *rd = (readers_t){0};
    return AR_ENOMEM;
  }
  for (int32_t t = 0; t < nt; t++) rd->reader[t] = rd->slot[t] = rd->producer[t] = -1;
  for (int32_t k = 0; k < no; k++) {
    const ar_operator_t *op = &sg->operators[k];
    for (int32_t i = 0; i < op->n_inputs; i++) {
      const int32_t t = op->inputs[i];
      if (t < 0 || t >= nt) continue;
      rd->reader[t] = rd->reader[t] == -1 ? k : -2;
      rd->slot[t] = i;
    }
    for (int32_t o = 0; o < op->n_outputs; o++)
      if (op->outputs[o] >= 0 && op->outputs[o] < nt) rd->producer[op->outputs[o]] = k;
  }
  for (uint32_t i = 0; i < sg->n_outputs; i++)
    if (sg->outputs[i] >= 0 && sg->outputs[i] < nt) rd->reader[sg->outputs[i]] = -2;
  return 0;
}

/* Inverted-residual fusion (ar_interp_options_t.fuse): a CONV_2D k that runs at invoke and whose
 * one output t (not a graph output nor a variable, at least AR_INTERP_FUSE_MIN_BYTES per thread)
 * is read by exactly one input slot, input 0 of a later DEPTHWISE_CONV_2D d that runs at invoke, with the
 * conv's filter and bias constants of the model (or folded; not widened at use: an at-use
 * DEQUANTIZE runs at its reader's step, which the elided conv no longer has) and the kernels'
 * ar_kernel_fuse_ir_check: k is elided (mode ELIDED, step -1), fused_into[k] = d and
 * extra_input[d] = the conv's input 0, which d then reads for the lifetimes. Called after the op
 * modes and at-use map are set. */
static void find_fusions(ar_interp_t *in, const readers_t *rd, const int32_t *sparse_of, const int32_t *f16_of) {
  const ar_subgraph_t *sg = in->sg;
  const int32_t nt = in->n_tensors, no = in->n_ops;
  const int32_t *reader = rd->reader, *slot = rd->slot;
  for (int32_t k = 0; k < no; k++) {
    const ar_operator_t *op = &sg->operators[k];
    if (op->op != AR_OP_CONV_2D || in->op_mode[k] != AR_OPMODE_INVOKE || in->elided[k] ||
        sparse_of[k] >= 0 || op->n_outputs != 1 || op->n_inputs < 2 || op->n_inputs > 3)
      continue;
    const int32_t t = op->outputs[0];
    if (t < 0 || t >= nt || reader[t] < 0 || slot[t] != 0 || sg->tensors[t].is_variable ||
        sg->tensors[t].bytes < (uint64_t)AR_INTERP_FUSE_MIN_BYTES * (uint64_t)in->opt.threads)
      continue;
    const int32_t d = reader[t];
    if (d <= k || sg->operators[d].op != AR_OP_DEPTHWISE_CONV_2D || in->op_mode[d] != AR_OPMODE_INVOKE ||
        in->elided[d])
      continue;
    bool weights_ok = op->inputs[0] >= 0;
    for (int32_t i = 1; i < op->n_inputs; i++)
      if (op->inputs[i] >= 0 && in->at_use_op[op->inputs[i]] >= 0) weights_ok = false;
    if (!weights_ok) continue;
    ar_node_t cn, dn;
    ar_tview_t *cio[PROBE_IO], *dio[PROBE_IO];
    if (!probe_node(in, k, &cn, cio) || !probe_node(in, d, &dn, dio)) continue;
    for (int32_t i = 0; i < op->n_inputs; i++)   /* fp16 weights as stored, as the nodes will show */
      if (op->inputs[i] >= 0 && f16_of[op->inputs[i]] >= 0) cn.inputs[i] = &in->views[f16_of[op->inputs[i]]];
    const ar_operator_t *dop = &sg->operators[d];
    for (int32_t i = 0; i < dop->n_inputs; i++)
      if (dop->inputs[i] >= 0 && f16_of[dop->inputs[i]] >= 0) dn.inputs[i] = &in->views[f16_of[dop->inputs[i]]];
    if (!ar_kernel_fuse_ir_check(&cn, &dn)) continue;
    in->elided[k] = true;
    in->op_mode[k] = AR_OPMODE_ELIDED;
    in->op_step[k] = -1;
    in->fused_into[k] = d;
    in->extra_input[d] = op->inputs[0];
  }
}

/* Split hints: a CONV_2D (prepared, run) whose one output is read only by a DEPTHWISE_CONV_2D, as
 * its input 0, that splits its output rows over the pool (ar_kernel_dw_splits_rows) splits its
 * own product by rows too (ar_node_t.split_rows), so that each thread's depthwise rows read the
 * conv rows its own core wrote. Only which thread computes what changes, never a value. Errors:
 * AR_ENOMEM. */
static int find_split_hints(ar_interp_t *in) {
  readers_t rd;
  const int rc = readers_build(in, &rd);
  if (rc != 0) return rc;
  const ar_subgraph_t *sg = in->sg;
  for (int32_t k = 0; k < in->n_ops; k++) {
    const ar_operator_t *op = &sg->operators[k];
    in->nodes[k].split_rows = false;
    if (op->op != AR_OP_CONV_2D || in->elided[k] || !in->kernels[k] || op->n_outputs != 1) continue;
    const int32_t t = op->outputs[0];
    if (t < 0 || t >= in->n_tensors || rd.reader[t] < 0 || rd.slot[t] != 0) continue;
    const int32_t d = rd.reader[t];
    if (sg->operators[d].op != AR_OP_DEPTHWISE_CONV_2D || in->elided[d] || !in->kernels[d]) continue;
    in->nodes[k].split_rows = ar_kernel_dw_splits_rows(&in->nodes[d]);
  }
  readers_free(&rd);
  return 0;
}

/* PAD folding (with ar_interp_options_t.fuse): a PAD k that runs at invoke and whose one output t
 * (not a graph output nor a variable) is read by exactly one input slot, input 0 of a later
 * DEPTHWISE_CONV_2D d that runs at invoke and has no fused conv, when the kernels'
 * ar_kernel_pad_fold_check covers the pair: k is elided (mode ELIDED, step -1), extra_input[d] =
 * the PAD's input 0, which d reads instead (node set-up), and nodes[d].folded_pad = the zero rows
 * and columns. The face detectors pad before most of their depthwise convs (43 PADs in
 * face_detection_full_range_sparse). Called after find_fusions. */
static void find_pad_folds(ar_interp_t *in, const readers_t *rd) {
  const ar_subgraph_t *sg = in->sg;
  const int32_t nt = in->n_tensors, no = in->n_ops;
  const int32_t *reader = rd->reader, *slot = rd->slot;
  for (int32_t k = 0; k < no; k++) {
    const ar_operator_t *op = &sg->operators[k];
    if (op->op != AR_OP_PAD || in->op_mode[k] != AR_OPMODE_INVOKE || in->elided[k] || op->n_outputs != 1 ||
        op->n_inputs != 2 || op->inputs[0] < 0 || op->inputs[0] >= nt)
      continue;
    const int32_t t = op->outputs[0];
    if (t < 0 || t >= nt || reader[t] < 0 || sg->tensors[t].is_variable) continue;
    const int32_t d = reader[t];
    const ar_op_t dop = d > k ? sg->operators[d].op : AR_OP_INVALID;
    if ((dop != AR_OP_DEPTHWISE_CONV_2D && dop != AR_OP_ADD) || in->op_mode[d] != AR_OPMODE_INVOKE ||
        in->elided[d] || in->extra_input[d] >= 0)
      continue;
    ar_node_t pn, dn;
    ar_tview_t *pio[PROBE_IO], *dio[PROBE_IO];
    int32_t pads[4];
    if (!probe_node(in, k, &pn, pio) || !probe_node(in, d, &dn, dio) || !ar_kernel_pad_fold_check(&pn, &dn, slot[t], pads))
      continue;
    in->elided[k] = true;
    in->op_mode[k] = AR_OPMODE_ELIDED;
    in->op_step[k] = -1;
    in->extra_input[d] = op->inputs[0];
    in->pad_into[k] = d;
    if (dop == AR_OP_ADD) {
      in->nodes[d].folded_pad_channels = pads[0];
      in->nodes[d].folded_pad_slot = slot[t];
    } else {
      memcpy(in->nodes[d].folded_pad, pads, sizeof pads);
    }
  }
}

/* Activation folding (with ar_interp_options_t.fuse): a float RELU / RELU6 r that runs at invoke,
 * whose input t is the one output of a CONV_2D, DEPTHWISE_CONV_2D or ADD p with no fused
 * activation that runs at invoke, t read by r alone and not a graph output nor a variable: p's node
 * gets its own copy of the options with r's activation (p clamps as it stores) and r's node
 * input_activated, so r does nothing when its output shares t's bytes (the in-place plan gives it
 * them: an elementwise op over an input nobody reads after it). The face detectors follow 44 of
 * their convs and residual ADDs with a RELU. Called after find_pad_folds. Errors: AR_ENOMEM. */
static int find_act_folds(ar_interp_t *in, const readers_t *rd) {
  const ar_subgraph_t *sg = in->sg;
  const int32_t nt = in->n_tensors, no = in->n_ops;
  const int32_t *reader = rd->reader, *producer = rd->producer;
  int rc = 0;
  for (int32_t r = 0; r < no && rc == 0; r++) {
    const ar_operator_t *op = &sg->operators[r];
    if ((op->op != AR_OP_RELU && op->op != AR_OP_RELU6) || in->op_mode[r] != AR_OPMODE_INVOKE ||
        in->elided[r] || op->n_inputs != 1 || op->n_outputs != 1)
      continue;
    const int32_t t = op->inputs[0];
    if (t < 0 || t >= nt || reader[t] != r || producer[t] < 0 || sg->tensors[t].is_variable ||
        in->views[t].dtype != AR_DTYPE_FLOAT32)
      continue;
    const int32_t p = producer[t];
    const ar_operator_t *pop = &sg->operators[p];
    if (p >= r || in->op_mode[p] != AR_OPMODE_INVOKE || in->elided[p] || pop->n_outputs != 1) continue;
    ar_options_t o = pop->options;
    ar_activation_t *act = pop->op == AR_OP_CONV_2D             ? &o.conv2d.activation
                           : pop->op == AR_OP_DEPTHWISE_CONV_2D ? &o.depthwise.activation
                           : pop->op == AR_OP_ADD               ? &o.elementwise.activation
                                                                : NULL;
    if (!act || *act != AR_ACT_NONE) continue;
    *act = op->op == AR_OP_RELU ? AR_ACT_RELU : AR_ACT_RELU6;
    if (!in->own_options && !(in->own_options = calloc((size_t)no, sizeof *in->own_options))) rc = AR_ENOMEM;
    if (!in->has_own_options && !(in->has_own_options = calloc((size_t)no, sizeof *in->has_own_options)))
      rc = AR_ENOMEM;
    if (rc != 0) break;
    in->own_options[p] = o;
    in->has_own_options[p] = true;
    in->nodes[r].input_activated = true;
  }
  return rc;
}

/* ar_interp_new, optionally collecting every unsupported operator into `ulist` (umax entries). */
static int interp_new(const ar_model_t *model, const ar_interp_options_t *opt_in, ar_interp_t **out,
                      char *msg, size_t msg_bytes, ar_unsupported_t *ulist, int32_t umax,
                      int32_t *un_out, int32_t sgi, ar_interp_t *root);
static int build_vars(ar_interp_t *root, char *msg, size_t msg_bytes);
static int bind_resources(ar_interp_t *in, char *msg, size_t msg_bytes);
static void find_read_aliases(ar_interp_t *in);
static int cf_new(ar_interp_t *in, int32_t k, char *msg, size_t msg_bytes);
static void cf_free(cf_op_t *cf);
static void cf_node_sizes(ar_interp_t *in, int32_t k);
static int cf_check(ar_interp_t *in, int32_t k, char *msg, size_t msg_bytes);
static int cf_place(ar_interp_t *in, char *msg, size_t msg_bytes);
static int cf_run(ar_interp_t *in, int32_t k);

/* CLOCK_MONOTONIC in microseconds (the vDSO: no system call, no allocation). */
static int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
static const ar_kernel_t cf_kernel;

int ar_interp_new(const ar_model_t *model, const ar_interp_options_t *opt_in, ar_interp_t **out,
                  char *msg, size_t msg_bytes) {
  int rc = interp_new(model, opt_in, out, msg, msg_bytes, NULL, 0, NULL, 0, NULL);
  if (rc == 0 && (rc = ar__state_layout(*out, msg, msg_bytes)) != 0) {
    ar_interp_free(*out);
    *out = NULL;
  }
  return rc;
}

int ar_interp_unsupported(const ar_model_t *model, const ar_interp_options_t *opt,
                          ar_unsupported_t *list, int32_t max, int32_t *n_out, char *msg,
                          size_t msg_bytes) {
  ar_interp_t *in = NULL;
  int32_t n = 0;
  int rc = interp_new(model, opt, &in, msg, msg_bytes, list, max, &n, 0, NULL);
  ar_interp_free(in);
  if (n_out) *n_out = n < max ? n : max;
  return rc;
}

static int interp_new(const ar_model_t *model, const ar_interp_options_t *opt_in, ar_interp_t **out,
                      char *msg, size_t msg_bytes, ar_unsupported_t *ulist, int32_t umax,
                      int32_t *un_out, int32_t sgi, ar_interp_t *root) {
  if (out) *out = NULL;
  if (!model || !out || model->n_subgraphs < 1 || sgi < 0 || (uint32_t)sgi >= model->n_subgraphs)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "interp: no model or no subgraph");
  ar_interp_options_t opt;
  if (opt_in) opt = *opt_in; else ar_interp_options_default(&opt);
  if (opt.pool) opt.threads = ar_threadpool_threads(opt.pool);
  if (opt.threads < 1) opt.threads = 1;
  if (opt.threads > AR_POOL_THREADS_MAX) opt.threads = AR_POOL_THREADS_MAX;
  if (opt.max_while_iterations <= 0) opt.max_while_iterations = AR_INTERP_MAX_WHILE_ITERATIONS;

  const ar_subgraph_t *sg = &model->subgraphs[sgi];
  /* ar_interp_unsupported (a caller's list): every operator that cannot run is listed with why,
   * whatever its prepare's error, and the walk goes on (arenactl inspect describes them all). */
  const bool describe = ulist != NULL;
  /* Unsupported operators: the loader's list (describe loads) and the one collected here. */
  ar_unsupported_t *loader_list = NULL, *unsup_owned = NULL, *unsup = NULL;
  int32_t n_loader = 0, n_unsup = 0, unsup_max = 0;
  ar_interp_t *in = calloc(1, sizeof(*in));
  if (!in) return ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
  in->model = model;
  in->sg = sg;
  in->subgraph = sgi;
  in->root = root ? root : in;
  in->opt = opt;
  in->n_tensors = (int32_t)sg->n_tensors;
  in->n_ops = (int32_t)sg->n_operators;
  size_t nt = sg->n_tensors ? sg->n_tensors : 1, no = sg->n_operators ? sg->n_operators : 1;
  in->views = calloc(nt, sizeof(*in->views));
  in->nodes = calloc(no, sizeof(*in->nodes));
  uint64_t n_io = 0;   /* each count is bounded by the file (the loader checks their sum) */
  for (uint32_t k = 0; k < sg->n_operators; k++)
    n_io += (uint64_t)sg->operators[k].n_inputs + (uint64_t)sg->operators[k].n_outputs +
            (uint64_t)sg->operators[k].n_intermediates;
  in->node_io = calloc(n_io ? n_io : 1, sizeof(*in->node_io));
  if (in->nodes && in->node_io) {
    ar_tview_t **io = in->node_io;
    for (uint32_t k = 0; k < sg->n_operators; k++) {
      in->nodes[k].inputs = io;
      io += sg->operators[k].n_inputs;
      in->nodes[k].outputs = io;
      io += sg->operators[k].n_outputs;
      in->nodes[k].intermediates = io;
      io += sg->operators[k].n_intermediates;
    }
  }
  in->kernels = calloc(no, sizeof(*in->kernels));
  in->op_folded = calloc(no, sizeof(*in->op_folded));
  in->op_mode = calloc(no, sizeof(*in->op_mode));
  in->op_step = calloc(no, sizeof(*in->op_step));
  in->at_use_op = calloc(nt, sizeof(*in->at_use_op));
  in->elided = calloc(no, sizeof(*in->elided));
  in->fused_into = calloc(no, sizeof(*in->fused_into));
  in->extra_input = calloc(no, sizeof(*in->extra_input));
  in->pad_into = calloc(no, sizeof(*in->pad_into));
  int32_t *sparse_of = calloc(no, sizeof(*sparse_of));
  int32_t *f16_of = calloc(nt, sizeof(*f16_of));
  in->scratch_bytes = calloc(no, sizeof(*in->scratch_bytes));
  in->scratch_buf = calloc(no, sizeof(*in->scratch_buf));
  in->state_offset = calloc(no, sizeof(*in->state_offset));
  in->run_ops = calloc(no, sizeof(*in->run_ops));
  in->tensor_plan = calloc(nt, sizeof(*in->tensor_plan));
  in->planner = ar_planner_new(AR_ARENA_ALIGNMENT);
  in->cf = calloc(no, sizeof(*in->cf));
  in->res_var = calloc(nt, sizeof(*in->res_var));
  in->alias_var = calloc(nt, sizeof(*in->alias_var));
  in->state_alias = calloc(nt, sizeof(*in->state_alias));
  int rc = 0;
  if (!in->cf || !in->res_var || !in->alias_var || !in->state_alias || !in->views || !in->nodes || !in->node_io || !in->kernels || !in->op_folded || !in->op_mode || !in->op_step ||
      !in->at_use_op || !in->elided || !in->fused_into || !in->extra_input || !in->pad_into || !sparse_of || !f16_of || !in->scratch_bytes ||
      !in->scratch_buf || !in->state_offset || !in->run_ops || !in->tensor_plan || !in->planner) {
    rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
    goto fail;
  }

  for (int32_t t = 0; t < in->n_tensors; t++) view_from_tensor(&in->views[t], &sg->tensors[t]);
  /* Resource variables: the main graph's interpreter sizes every variable of the model; each
   * interpreter maps its VAR_HANDLE outputs to them. */
  if (!root && (rc = build_vars(in, msg, msg_bytes)) != 0) goto fail;
  if ((rc = bind_resources(in, msg, msg_bytes)) != 0) goto fail;
  find_read_aliases(in);
  if (ar__prepval_init(in) != 0) {
    rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
    goto fail;
  }

  /* Graph inputs whose values set shapes (PAD paddings, RESHAPE shape): a snapshot each, so that
   * prepare can read the value the caller gives before the invoke that needs it. */
  size_t ni = sg->n_inputs ? sg->n_inputs : 1;
  in->snap = calloc(ni, sizeof(*in->snap));
  in->snap_valid = calloc(ni, sizeof(*in->snap_valid));
  in->cur = malloc(nt * sizeof(*in->cur));
  if (!in->snap || !in->snap_valid || !in->cur) {
    rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
    goto fail;
  }
  if (sg->n_tensors) memcpy(in->cur, sg->tensors, sg->n_tensors * sizeof(*in->cur));
  for (uint32_t i = 0; i < sg->n_inputs; i++) {
    int32_t ti = sg->inputs[i];
    bool sets_shape = false;
    for (uint32_t k = 0; k < sg->n_operators && !sets_shape; k++) {
      const ar_operator_t *op = &sg->operators[k];
      for (int32_t j = 0; j < op->n_inputs && !sets_shape; j++)
        sets_shape = op->inputs[j] == ti && operand_sets_shape(op->op, j);
    }
    if (!sets_shape || ar_tensor_is_constant(&sg->tensors[ti]) || sg->tensors[ti].bytes > 4096) continue;
    in->snap[i] = calloc(1, sg->tensors[ti].bytes ? sg->tensors[ti].bytes : 1);
    if (!in->snap[i]) {
      rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
      goto fail;
    }
    in->dirty = true;   /* no invoke before the caller gives the value */
  }

  /* Which operators are folded (DEQUANTIZE/DENSIFY whose every input is a constant or the output
   * of an earlier folded operator) and, with stored weights, which fp16 DEQUANTIZE runs at use
   * (ar_lifetimes_op_modes, the rule ar_lifetimes_build applies; folding is cross-checked
   * below). Both outputs hold constant values: consumers' prepare sees them as constants. */
  for (int32_t k = 0; k < in->n_ops; k++) sparse_of[k] = -1;
  if (opt.weights == AR_WEIGHTS_STORED && (rc = find_sparse_filters(in, in->elided, sparse_of)) != 0) {
    rc = ar_errf(msg, msg_bytes, rc, "interp: out of memory");
    goto fail;
  }
  for (int32_t t = 0; t < in->n_tensors; t++) f16_of[t] = -1;
  rc = ar_lifetimes_op_modes_sg(model, sgi, in->cur, opt.weights == AR_WEIGHTS_STORED, in->elided, in->op_mode,
                             in->op_step);
  /* fp16 weights their readers take as stored: those DEQUANTIZE are elided too, then the modes
   * again with them. */
  if (rc == 0 && opt.weights == AR_WEIGHTS_STORED) {
    const int32_t n16 = find_f16_weights(in, in->op_mode, sparse_of, in->elided, f16_of);
    if (n16 < 0) {
      rc = ar_errf(msg, msg_bytes, -n16, "interp: out of memory");
      goto fail;
    }
    if (n16 > 0)
      rc = ar_lifetimes_op_modes_sg(model, sgi, in->cur, true, in->elided, in->op_mode, in->op_step);
  }
  if (rc != 0) {
    rc = ar_errf(msg, msg_bytes, rc, "interp: %s", rc == AR_EMODEL ? "an operator names a tensor out of range"
                                                                   : ar_strerror(rc));
    goto fail;
  }
  for (int32_t t = 0; t < in->n_tensors; t++) in->at_use_op[t] = -1;
  for (int32_t k = 0; k < in->n_ops; k++) {
    const ar_operator_t *op = &sg->operators[k];
    if (in->op_mode[k] == AR_OPMODE_INVOKE) continue;
    in->op_folded[k] = in->op_mode[k] == AR_OPMODE_FOLDED;
    for (int32_t o = 0; o < op->n_outputs; o++)
      if (op->outputs[o] >= 0) {
        in->views[op->outputs[o]].is_constant = true;
        if (in->op_mode[k] == AR_OPMODE_AT_USE) in->at_use_op[op->outputs[o]] = k;
      }
  }
  /* Inverted-residual fusion: expansion convs run inside the depthwise reading their output. */
  for (int32_t k = 0; k < in->n_ops; k++) in->fused_into[k] = in->extra_input[k] = in->pad_into[k] = -1;
  if (opt.fuse) {
    readers_t rd;
    if ((rc = readers_build(in, &rd)) == 0) {
      find_fusions(in, &rd, sparse_of, f16_of);
      find_pad_folds(in, &rd);
      rc = find_act_folds(in, &rd);
    }
    readers_free(&rd);
    if (rc != 0) {
      rc = ar_errf(msg, msg_bytes, rc, "interp: out of memory");
      goto fail;
    }
  }

  /* Operators the loader kept unrun (ar_model_load_describe) and those without a kernel or with an
   * option their kernel refuses are all collected, so the refusal names every one of them. */
  n_loader = ar_model_unsupported(model, NULL, 0, NULL);
  if (n_loader > 0) {
    loader_list = calloc((size_t)n_loader, sizeof(*loader_list));
    if (!loader_list) {
      rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
      goto fail;
    }
    ar_model_unsupported(model, loader_list, n_loader, NULL);
  }
  unsup_max = ulist ? umax : 64;
  unsup = ulist ? ulist : (unsup_owned = calloc(64, sizeof(*unsup)));
  if (!unsup) {
    rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
    goto fail;
  }

  /* Nodes and kernel prepare, in stored order. */
  uint64_t state_total = 0;
  bool sized_at_prepare = false;
  for (int32_t k = 0; k < in->n_ops; k++) {
    const ar_operator_t *op = &sg->operators[k];
    ar_node_t *nd = &in->nodes[k];
    node_of_op(nd, op, k, opt.threads);
    nd->pool = NULL;   /* set at place */
    if (in->has_own_options && in->has_own_options[k]) nd->options = &in->own_options[k];   /* find_act_folds */
    nd->n_inputs = op->n_inputs;
    nd->n_outputs = op->n_outputs;
    for (int32_t i = 0; i < op->n_inputs; i++)
      nd->inputs[i] = op->inputs[i] >= 0 ? &in->views[op->inputs[i]] : NULL;
    for (int32_t o = 0; o < op->n_outputs; o++)
      nd->outputs[o] = op->outputs[o] >= 0 ? &in->views[op->outputs[o]] : NULL;
    nd->n_intermediates = op->n_intermediates;
    for (int32_t j = 0; j < op->n_intermediates; j++)
      nd->intermediates[j] = &in->views[op->intermediates[j]];   /* in range: the loader checks */
    for (int32_t i = 0; i < op->n_inputs; i++)   /* fp16 weights read as stored */
      if (op->inputs[i] >= 0 && f16_of[op->inputs[i]] >= 0) nd->inputs[i] = &in->views[f16_of[op->inputs[i]]];
    if (sparse_of[k] >= 0) nd->inputs[1] = &in->views[sparse_of[k]];   /* the filter as stored */
    if (in->fused_into[k] >= 0) in->nodes[in->fused_into[k]].fused = nd;   /* k < fused_into[k] */
    if (nd->folded_pad[0] | nd->folded_pad[1] | nd->folded_pad[2] | nd->folded_pad[3])
      nd->inputs[0] = &in->views[in->extra_input[k]];   /* a folded PAD's input (find_pad_folds) */
    if (nd->folded_pad_channels > 0) nd->inputs[nd->folded_pad_slot] = &in->views[in->extra_input[k]];
    if (in->elided[k]) continue;   /* never prepared nor run (a fused conv: by its depthwise) */
    if (op->op == AR_OP_WHILE || op->op == AR_OP_IF || op->op == AR_OP_CALL_ONCE) {
      /* The interpreter runs the subgraphs itself: one child interpreter per subgraph, its plan
       * placed in this operator's scratch (live only at this step), its persistent region in this
       * operator's state. */
      if ((rc = cf_new(in, k, msg, msg_bytes)) != 0) {
        if (describe && rc != AR_ENOMEM) {
          note_unsupported(model, in->subgraph, loader_list, n_loader, k, msg, unsup, unsup_max, &n_unsup);
          rc = 0;
          continue;
        }
        if (un_out) *un_out = n_unsup;
        goto fail;
      }
      nd->sub = in->cf[k];
      in->kernels[k] = &cf_kernel;
      if ((rc = cf_check(in, k, msg, msg_bytes)) != 0) {
        if (describe && rc != AR_ENOMEM) {
          note_unsupported(model, in->subgraph, loader_list, n_loader, k, msg, unsup, unsup_max, &n_unsup);
          in->kernels[k] = NULL;
          rc = 0;
          continue;
        }
        if (un_out) *un_out = n_unsup;
        goto fail;
      }
      cf_node_sizes(in, k);   /* after cf_check: it sizes a WHILE's loop-value buffers */
      in->scratch_bytes[k] = nd->scratch_bytes;
      in->run_ops[in->n_run++] = k;
      in->state_offset[k] = state_total;
      uint64_t a = ar_align_up(nd->state_bytes, AR_ARENA_ALIGNMENT);
      if (ar_add_overflow_u64(state_total, a, &state_total)) {
        rc = ar_errf(msg, msg_bytes, AR_EOVERFLOW, "operator %d (%s): state bytes overflow", k, ar_op_name(op->op));
        goto fail;
      }
      continue;
    }
    const ar_kernel_t *kern = op->op == AR_OP_INVALID ? NULL : ar_kernel_for(op->op);
    if (!kern || !kern->prepare || !kern->eval) {
      note_unsupported(model, in->subgraph, loader_list, n_loader, k, NULL, unsup, unsup_max, &n_unsup);
      continue;
    }
    in->kernels[k] = kern;
    /* A shape operand fed by a graph input whose value comes later (ar_interp_set_shape_input):
     * the kernel is prepared by the first ar_interp_prepare, which the interpreter requires before
     * any invoke (dirty); until then the stored shapes stand. PAD and RESHAPE handle a pending
     * value in their own prepare. */
    bool pending = false;
    if (op->op != AR_OP_PAD && op->op != AR_OP_RESHAPE)
      for (int32_t j = 0; j < op->n_inputs && !pending; j++)
        pending = op->inputs[j] >= 0 && operand_sets_shape(op->op, j) && snapshotted(in, op->inputs[j]);
    if (pending) {
      in->scratch_bytes[k] = 0;
      in->run_ops[in->n_run++] = k;
      continue;
    }
    /* Outputs stored without a shape (rank 0, e.g. TFLite_Detection_PostProcess as converters
     * write it) are sized by their kernel's prepare, as TFLite does; a true scalar output gets the
     * same rank-0 shape back. */
    bool shapeless = false;
    for (int32_t o = 0; o < op->n_outputs; o++)
      if (nd->outputs[o] && nd->outputs[o]->rank == 0 && !nd->outputs[o]->is_constant) shapeless = true;
    nd->infer_shapes = shapeless;
    rc = kern->prepare(nd, msg, msg_bytes);
    nd->infer_shapes = false;
    if (shapeless && rc == 0) sized_at_prepare = true;
    if (rc == AR_EUNSUPPORTED || (describe && rc != 0 && rc != AR_ENOMEM)) {
      note_unsupported(model, in->subgraph, loader_list, n_loader, k, msg, unsup, unsup_max, &n_unsup);
      in->kernels[k] = NULL;
      rc = 0;
      continue;
    }
    if (rc != 0) {
      if (un_out) *un_out = n_unsup;
      goto fail;
    }
    if (ar__prepval_eval(in, k) != 0) {   /* a value a later operator's output shape needs */
      rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
      goto fail;
    }
    if (in->op_folded[k]) {
      /* Folding runs at place, when the activation region may be in use by another model, so a
       * folded operator cannot have scratch. */
      if (nd->scratch_bytes != 0) {
        rc = ar_errf(msg, msg_bytes, AR_EUNSUPPORTED,
                     "operator %d (%s): folded constant operator asks for %llu scratch bytes", k,
                     ar_op_name(op->op), (unsigned long long)nd->scratch_bytes);
        goto fail;
      }
    } else {
      in->scratch_bytes[k] = nd->scratch_bytes;
      in->run_ops[in->n_run++] = k;
      in->macs += node_macs(nd);
      if (nd->fused) in->macs += node_macs(nd->fused);
    }
    if (nd->state_bytes > 0) {
      in->state_offset[k] = state_total;
      uint64_t a = ar_align_up(nd->state_bytes, AR_ARENA_ALIGNMENT);
      if (a < nd->state_bytes || ar_add_overflow_u64(state_total, a, &state_total)) {
        rc = ar_errf(msg, msg_bytes, AR_EOVERFLOW, "operator %d (%s): state bytes overflow", k,
                     ar_op_name(op->op));
        goto fail;
      }
    }
  }

  if (n_unsup == 0 && find_split_hints(in) != 0) {
    rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
    goto fail;
  }

  if (un_out) *un_out = n_unsup;
  if (n_unsup > 0) {
    ar_unsupported_format(unsup, n_unsup < unsup_max ? n_unsup : unsup_max, msg, msg_bytes);
    if (n_unsup > unsup_max && msg && msg_bytes) {
      /* The list is copied out first: snprintf must not read the buffer it writes. */
      char list_text[1024];
      const char *colon = strchr(msg, ':');
      snprintf(list_text, sizeof list_text, "%s", colon ? colon + 2 : msg);
      ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "%d operators unsupported (first %d listed): %s",
              (int)n_unsup, (int)unsup_max, list_text);
    }
    rc = AR_EUNSUPPORTED;
    goto fail;
  }
  free(loader_list);
  free(unsup_owned);
  loader_list = unsup_owned = NULL;

  /* Execution order: an at-use DEQUANTIZE runs right before its first reader (at that reader's
   * step, as the lifetimes place it); one nothing reads never runs. */
  if (opt.weights == AR_WEIGHTS_STORED) {
    int32_t *order = malloc(no * sizeof(*order)), *head = malloc(no * sizeof(*head)),
            *next = malloc(no * sizeof(*next));
    if (!order || !head || !next) {
      free(order);
      free(head);
      free(next);
      rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
      goto fail;
    }
    for (int32_t k = 0; k < in->n_ops; k++) head[k] = next[k] = -1;
    for (int32_t i = in->n_run - 1; i >= 0; i--) {
      int32_t d = in->run_ops[i];
      if (in->op_mode[d] != AR_OPMODE_AT_USE || in->op_step[d] < 0) continue;
      next[d] = head[in->op_step[d]];
      head[in->op_step[d]] = d;
    }
    int32_t n = 0;
    for (int32_t i = 0; i < in->n_run; i++) {
      int32_t k = in->run_ops[i];
      if (in->op_mode[k] == AR_OPMODE_AT_USE) continue;
      for (int32_t d = head[k]; d >= 0; d = next[d]) order[n++] = d;
      order[n++] = k;
    }
    memcpy(in->run_ops, order, (size_t)n * sizeof(*order));
    in->n_run = n;
    free(order);
    free(head);
    free(next);
  }

  /* Lifetimes, classes, in-place -> planner buffers; then the plan (measure only). Outputs sized
   * at prepare are planned with the sizes prepare gave them. */
  if (sized_at_prepare) {
    for (int32_t t = 0; t < in->n_tensors; t++) {
      const ar_tview_t *v = &in->views[t];
      if (elems_of(v) > (uint64_t)INT32_MAX) {
        rc = ar_errf(msg, msg_bytes, AR_EOVERFLOW, "tensor %d (%s): %llu elements, more than 2^31 - 1",
                     (int)t, sg->tensors[t].name, (unsigned long long)elems_of(v));
        goto fail;
      }
      in->cur[t].rank = v->rank;
      memcpy(in->cur[t].dims, v->dims, sizeof(in->cur[t].dims));
      in->cur[t].bytes = v->bytes;
    }
  }
  ar_lifetime_options_t lo = {opt.lifetimes, opt.inplace, in->scratch_bytes,
                              sized_at_prepare ? in->cur : NULL, opt.weights == AR_WEIGHTS_STORED,
                              in->elided, in->extra_input, sgi, in->state_alias};
  bool *lt_folded = calloc(no, sizeof(*lt_folded));
  if (!lt_folded) {
    rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
    goto fail;
  }
  rc = ar_lifetimes_build(model, &lo, in->planner, in->tensor_plan, in->scratch_buf, lt_folded,
                          msg, msg_bytes);
  if (rc == 0) {
    for (int32_t k = 0; k < in->n_ops; k++) {
      if (lt_folded[k] != in->op_folded[k]) {
        rc = ar_errf(msg, msg_bytes, AR_EINTERNAL,
                     "operator %d (%s): lifetimes and interpreter disagree on folding", k,
                     ar_op_name(sg->operators[k].op));
        break;
      }
    }
  }
  free(lt_folded);
  if (rc != 0) goto fail;
  rc = ar_planner_plan(in->planner, opt.strategy);
  if (rc != 0) {
    if (msg && msg_bytes && !msg[0])
      ar_errf(msg, msg_bytes, rc, "planner (%s): %s", ar_strategy_name(opt.strategy), ar_strerror(rc));
    goto fail;
  }
  ar_plan_figures_t fig;
  ar_planner_figures(in->planner, &fig);
  in->arena_bytes = ar_align_up(fig.arena_bytes, AR_ARENA_ALIGNMENT);
  in->planner_persistent_bytes = ar_align_up(fig.persistent_bytes, AR_ARENA_ALIGNMENT);
  /* The main graph's default state slot follows (ar__state_layout adds its bytes). */
  if (ar_add_overflow_u64(in->planner_persistent_bytes, state_total, &in->persistent_bytes)) {
    rc = ar_errf(msg, msg_bytes, AR_EOVERFLOW, "interp: persistent bytes overflow");
    goto fail;
  }
  in->slot_offset = in->persistent_bytes;
  /* A subgraph input whose value sets a shape cannot be given by the caller. */
  if (root && in->dirty) {
    rc = ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "subgraph %d: an input sets a tensor shape by its value "
                 "(not supported inside a control-flow subgraph)", (int)sgi);
    goto fail;
  }
  free(sparse_of);
  free(f16_of);
  *out = in;
  return 0;

fail:
  free(sparse_of);
  free(f16_of);
  free(loader_list);
  free(unsup_owned);
  if (rc == 0) rc = AR_EINTERNAL;
  ar_interp_free(in);
  return rc;
}

void ar_interp_free(ar_interp_t *in) {
  if (!in) return;
  if (in->cf)
    for (int32_t k = 0; k < in->n_ops; k++) cf_free(in->cf[k]);
  free(in->cf);
  free(in->res_var);
  free(in->alias_var);
  free(in->state_alias);
  free(in->vars);
  ar__state_free(in);
  ar_planner_free(in->old_planner);
  if (in->snap)
    for (uint32_t i = 0; i < in->sg->n_inputs; i++) free(in->snap[i]);
  free(in->snap);
  free(in->snap_valid);
  free(in->cur);
  ar__prepval_free(in);
  ar_planner_free(in->planner);
  free(in->views);
  free(in->nodes);
  free(in->node_io);
  free(in->kernels);
  free(in->op_folded);
  free(in->op_mode);
  free(in->op_step);
  free(in->at_use_op);
  free(in->elided);
  free(in->fused_into);
  free(in->extra_input);
  free(in->pad_into);
  free(in->own_options);
  free(in->has_own_options);
  free(in->scratch_bytes);
  free(in->scratch_buf);
  free(in->state_offset);
  free(in->run_ops);
  free(in->tensor_plan);
  free(in->owned_activation);
  free(in->owned_persistent);
  ar_threadpool_free(in->own_pool);
  free(in);
}

void ar_interp_weight_figures(const ar_interp_t *in, ar_weight_figures_t *out) {
  memset(out, 0, sizeof(*out));
  out->weights_bytes = in->model->constant_bytes;
  out->packed_bytes = in->persistent_bytes - in->planner_persistent_bytes - (in->root == in ? in->state_bytes : 0);
  for (int32_t t = 0; t < in->n_tensors; t++) {
    const ar_tensor_plan_t *tp = &in->tensor_plan[t];
    if (tp->home == AR_HOME_PERSISTENT && tp->folded) out->folded_bytes += in->views[t].bytes;
    if (tp->home == AR_HOME_ARENA && tp->at_use) out->widened_bytes += in->views[t].bytes;
  }
}

uint64_t ar_interp_arena_bytes(const ar_interp_t *in) { return in->arena_bytes; }
uint64_t ar_interp_persistent_bytes(const ar_interp_t *in) { return in->persistent_bytes; }
const ar_planner_t *ar_interp_planner(const ar_interp_t *in) { return in->planner; }
const ar_tensor_plan_t *ar_interp_tensor_plan(const ar_interp_t *in) { return in->tensor_plan; }
const ar_model_t *ar_interp_model(const ar_interp_t *in) { return in->model; }
const ar_interp_options_t *ar_interp_options(const ar_interp_t *in) { return &in->opt; }
int32_t ar_interp_runtime_operators(const ar_interp_t *in) { return in->n_run; }
uint64_t ar_interp_macs(const ar_interp_t *in) { return in->macs; }

uint64_t ar_interp_op_macs(const ar_interp_t *in, int32_t k) {
  if (k < 0 || k >= in->n_ops || in->op_folded[k] || in->elided[k]) return 0;
  const ar_node_t *nd = &in->nodes[k];
  return node_macs(nd) + (nd->fused ? node_macs(nd->fused) : 0);
}

/* Touch OpenBLAS once on this thread so that its lazily mmapped GEMM work buffer exists before the
 * first invoke. The product must be past OpenBLAS's small-matrix path (which takes no buffer and
 * covers up to about 100^3 multiply-adds on AVX-512 builds), hence 160^3 on heap scratch. */
static void blas_warm_up(void) {
  enum { N = 160 };
  float *a = malloc(3 * sizeof(float) * N * N);
  if (!a) return;   /* best effort: the first invoke then sizes the buffer itself */
  float *b = a + N * N, *c = b + N * N;
  for (int i = 0; i < N * N; i++) a[i] = b[i] = (float)(i % 7), c[i] = 0;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
  cblas_sgemv(CblasRowMajor, CblasNoTrans, N, N, 1.0f, a, N, b, 1, 0.0f, c, 1);
  free(a);
}

/* Every thread of a pool at once: OpenBLAS hands each concurrent product one buffer of its table
 * and maps a buffer the first time it hands it out, so the products must overlap for it to map as
 * many as the pool's threads will hold at the same time. All participants fill their operands
 * first, wait for each other, then multiply back to back until each has done two products. */
typedef struct blas_warm {
  int32_t threads;
  _Atomic int32_t ready, done;
} blas_warm_t;

static void blas_warm_up_on(void *ctx, int32_t i) {
  (void)i;
  blas_warm_t *w = ctx;
  enum { N = 160 };
  float *a = malloc(3 * sizeof(float) * N * N);
  if (!a) return;
  float *b = a + N * N, *c = b + N * N;
  for (int k = 0; k < N * N; k++) a[k] = b[k] = (float)(k % 7), c[k] = 0;
  atomic_fetch_add(&w->ready, 1);
  while (atomic_load(&w->ready) < w->threads) sched_yield();
  for (int r = 0;; r++) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
    cblas_sgemv(CblasRowMajor, CblasNoTrans, N, N, 1.0f, a, N, b, 1, 0.0f, c, 1);
    if (r == 1) atomic_fetch_add(&w->done, 1);
    if (r >= 1 && atomic_load(&w->done) >= w->threads) break;
  }
  free(a);
}

static void *blas_warm_spare(void *ctx) {
  blas_warm_up_on(ctx, -1);
  return NULL;
}

void ar_interp_warm_threads(ar_threadpool_t *pool) {
  openblas_set_num_threads(1);
  /* One participant more than the pool has threads, on a short-lived thread: OpenBLAS was seen
   * (check_noalloc, threads = 2) to map one buffer more than the pool's concurrent products in an
   * invoke; a spare buffer mapped here keeps that out of invokes. */
  const int32_t threads = ar_threadpool_threads(pool);
  blas_warm_t w = {.threads = threads + 1};
  atomic_init(&w.ready, 0);
  atomic_init(&w.done, 0);
  pthread_t spare;
  if (pthread_create(&spare, NULL, blas_warm_spare, &w) != 0) {
    w.threads = threads;   /* best effort */
    ar_threadpool_run_all(pool, blas_warm_up_on, &w);
    return;
  }
  ar_threadpool_run_all(pool, blas_warm_up_on, &w);
  pthread_join(spare, NULL);
}

/* Run operator k's kernel init. Init may read a weight's values (conv packs a filter of few input
 * channels, transpose conv repacks its filter): an input widened at use (stored weights) has no
 * values outside invoke - its bytes are activation bytes, which another model of the group may be
 * using while this one is placed - so for the init it is widened into a heap copy that lives only
 * as long as the init (at most one operator's weights at a time). Errors: AR_ENOMEM. */
static int init_node(ar_interp_t *in, int32_t k, char *msg, size_t msg_bytes) {
  ar_node_t *nd = &in->nodes[k];
  void **saved = NULL, **tmp = NULL;   /* n_inputs each, allocated on the first input widened */
  int rc = 0;
  for (int32_t j = 0; j < nd->n_inputs; j++) {
    ar_tview_t *v = nd->inputs[j];
    const int32_t t = in->sg->operators[k].inputs[j];
    if (!v || t < 0 || in->at_use_op[t] < 0 || !in->tensor_plan[t].at_use) continue;
    bool done = false;   /* the same tensor in an earlier slot */
    for (int32_t i = 0; i < j; i++) done = done || nd->inputs[i] == v;
    if (done) continue;
    if (!tmp) {
      saved = calloc((size_t)nd->n_inputs, sizeof *saved);
      tmp = calloc((size_t)nd->n_inputs, sizeof *tmp);
    }
    void *w = saved && tmp ? malloc(v->bytes ? v->bytes : 1) : NULL;
    if (!w) {
      rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "place: operator %d (%s): no memory to widen %llu bytes of "
                   "weights for its init", k, ar_op_name(nd->op), (unsigned long long)v->bytes);
      break;
    }
    tmp[j] = w;
    saved[j] = v->data;
    v->data = tmp[j];
    const int32_t d = in->at_use_op[t];
    in->kernels[d]->eval(&in->nodes[d]);
  }
  if (rc == 0) in->kernels[k]->init(nd);
  for (int32_t i = nd->n_inputs - 1; tmp && i >= 0; i--) {
    if (!tmp[i]) continue;
    nd->inputs[i]->data = saved[i];
    free(tmp[i]);
  }
  free(saved);
  free(tmp);
  return rc;
}

int ar_interp_place(ar_interp_t *in, void *activation, uint64_t activation_bytes,
                    void *persistent, uint64_t persistent_bytes, char *msg, size_t msg_bytes) {
  if (in->arena_bytes > 0 && (!activation || activation_bytes < in->arena_bytes))
    return ar_errf(msg, msg_bytes, AR_EINVAL, "place: activation region of %llu bytes, plan needs %llu",
                   (unsigned long long)activation_bytes, (unsigned long long)in->arena_bytes);
  if (in->persistent_bytes > 0 && (!persistent || persistent_bytes < in->persistent_bytes))
    return ar_errf(msg, msg_bytes, AR_EINVAL, "place: persistent region of %llu bytes, plan needs %llu",
                   (unsigned long long)persistent_bytes, (unsigned long long)in->persistent_bytes);
  if (((uintptr_t)activation % AR_ARENA_ALIGNMENT) != 0)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "place: activation region is not %d-byte aligned",
                   AR_ARENA_ALIGNMENT);
  if (((uintptr_t)persistent % AR_ARENA_ALIGNMENT) != 0)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "place: persistent region is not %d-byte aligned",
                   AR_ARENA_ALIGNMENT);
  in->placed = false;
  uint8_t *act = activation, *pers = persistent;

  for (int32_t t = 0; t < in->n_tensors; t++) {
    const ar_tensor_plan_t *tp = &in->tensor_plan[t];
    ar_tview_t *v = &in->views[t];
    if (in->res_var[t] >= 0) continue;   /* a RESOURCE tensor: its variable's bytes (ar__state_place) */
    switch (tp->home) {
      case AR_HOME_ARENA:
        v->data = act + ar_planner_offset(in->planner, tp->buffer);
        break;
      case AR_HOME_PERSISTENT:
        v->data = pers + ar_planner_offset(in->planner, tp->buffer);
        break;
      case AR_HOME_STATE:   /* bound to the state slot (ar__state_place) */
        break;
      case AR_HOME_CONSTANT:
        v->data = (void *)in->sg->tensors[t].data;
        break;
      case AR_HOME_NONE:
      default:
        v->data = in->sg->tensors[t].data ? (void *)in->sg->tensors[t].data : NULL;
        break;
    }
  }
  /* The state (variable tensors, resource variables and the RESOURCE tensors naming them,
   * CALL_ONCE flags, of every subgraph): the bound slot, or the default one at the end of this
   * region, reset only at the first place (ar_state.c). Bound before any kernel init. */
  if (in->root == in) ar__state_place(in, pers);
  for (int32_t k = 0; k < in->n_ops; k++) {
    ar_node_t *nd = &in->nodes[k];
    nd->scratch = in->scratch_buf[k] >= 0 ? act + ar_planner_offset(in->planner, in->scratch_buf[k])
                                          : NULL;
    nd->state = nd->state_bytes > 0 ? pers + in->planner_persistent_bytes + in->state_offset[k] : NULL;
  }
  /* Constant folding, once, in stored order (a DENSIFY feeding a DEQUANTIZE comes first). */
  for (int32_t k = 0; k < in->n_ops; k++) {
    if (!in->op_folded[k]) continue;
    if (in->kernels[k]->init) in->kernels[k]->init(&in->nodes[k]);
    in->kernels[k]->eval(&in->nodes[k]);
  }
  /* Inputs that set shapes: kernel init reads the value prepare used, not the arena bytes. */
  for (uint32_t i = 0; i < in->sg->n_inputs; i++)
    if (in->snap_valid[i]) in->views[in->sg->inputs[i]].data = in->snap[i];
  ar__prepval_point(in, true);   /* and values computed at prepare (ar_prepval.c) */
  int rc = 0;
  for (int32_t i = 0; i < in->n_run && rc == 0; i++) {
    int32_t k = in->run_ops[i];
    if (in->kernels[k]->init) rc = init_node(in, k, msg, msg_bytes);
  }
  ar__prepval_point(in, false);
  for (uint32_t i = 0; i < in->sg->n_inputs; i++)
    if (in->snap_valid[i]) {
      int32_t t = in->sg->inputs[i];
      in->views[t].data = act + ar_planner_offset(in->planner, in->tensor_plan[t].buffer);
    }
  if (rc != 0) return rc;
  openblas_set_num_threads(1);
  if (!in->pool) {
    if (in->opt.pool) in->pool = in->opt.pool;
    else if (in->opt.threads > 1) {
      rc = ar_threadpool_new(in->opt.threads, &in->own_pool, msg, msg_bytes);
      if (rc != 0) return rc;
      in->pool = in->own_pool;
    }
    for (int32_t k = 0; k < in->n_ops; k++) in->nodes[k].pool = in->pool;
  }
  /* A shared pool is warmed by its owner (ar_threadpool_run_all is one caller at a time). */
  if (in->own_pool) ar_interp_warm_threads(in->own_pool);
  else blas_warm_up();
  /* Control-flow children: placed in their operator's scratch and state. */
  if ((rc = cf_place(in, msg, msg_bytes)) != 0) return rc;
  in->placed = true;
  return 0;
}

int ar_interp_place_owned(ar_interp_t *in, char *msg, size_t msg_bytes) {
  uint64_t ab = ar_align_up(in->arena_bytes ? in->arena_bytes : 1, AR_ARENA_ALIGNMENT);
  uint64_t pb = ar_align_up(in->persistent_bytes ? in->persistent_bytes : 1, AR_ARENA_ALIGNMENT);
  if (ab > SIZE_MAX || pb > SIZE_MAX)
    return ar_errf(msg, msg_bytes, AR_EOVERFLOW, "place: regions too large");
  void *a = aligned_alloc(AR_ARENA_ALIGNMENT, (size_t)ab);
  void *p = aligned_alloc(AR_ARENA_ALIGNMENT, (size_t)pb);
  if (!a || !p) {
    free(a);
    free(p);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "place: cannot allocate %llu + %llu bytes",
                   (unsigned long long)ab, (unsigned long long)pb);
  }
  /* The default state slot moves with the region: copied, then kept by the place. */
  if (in->root == in && in->default_slot && !in->state_fresh && !in->carry && in->state_bytes > 0)
    memcpy((uint8_t *)p + in->slot_offset, in->default_slot, (size_t)in->state_bytes);
  uint8_t *old_slot = in->default_slot;
  int rc = ar_interp_place(in, a, ab, p, pb, msg, msg_bytes);
  if (rc != 0) {
    in->default_slot = old_slot;
    free(a);
    free(p);
    return rc;
  }
  free(in->owned_activation);
  free(in->owned_persistent);
  in->owned_activation = a;
  in->owned_persistent = p;
  return 0;
}

int32_t ar_interp_n_inputs(const ar_interp_t *in) { return (int32_t)in->sg->n_inputs; }
int32_t ar_interp_n_outputs(const ar_interp_t *in) { return (int32_t)in->sg->n_outputs; }

ar_tview_t *ar_interp_input(ar_interp_t *in, int32_t i) {
  if (i < 0 || (uint32_t)i >= in->sg->n_inputs) return NULL;
  return &in->views[in->sg->inputs[i]];
}
const ar_tview_t *ar_interp_output(const ar_interp_t *in, int32_t i) {
  if (i < 0 || (uint32_t)i >= in->sg->n_outputs) return NULL;
  return &in->views[in->sg->outputs[i]];
}
const char *ar_interp_input_name(const ar_interp_t *in, int32_t i) {
  if (i < 0 || (uint32_t)i >= in->sg->n_inputs) return NULL;
  return in->sg->tensors[in->sg->inputs[i]].name;
}
const char *ar_interp_output_name(const ar_interp_t *in, int32_t i) {
  if (i < 0 || (uint32_t)i >= in->sg->n_outputs) return NULL;
  return in->sg->tensors[in->sg->outputs[i]].name;
}

/* Run the operators of `in` (placed), control flow included. */
static int run_ops(ar_interp_t *in) {
  const int32_t *run = in->run_ops;
  cf_op_t *const *cf = in->cf;
  for (int32_t i = 0, n = in->n_run; i < n; i++) {
    int32_t k = run[i];
    if (cf[k]) {
      int rc = cf_run(in, k);
      if (rc != 0) return rc;
    } else {
      in->kernels[k]->eval(&in->nodes[k]);
    }
  }
  return 0;
}

int ar_interp_invoke(ar_interp_t *in) {
  if (!in->placed || in->dirty) return AR_ESTATE;
  in->err[0] = '\0';
  /* Sleeping helpers are woken as the invoke starts only for a model that has split work on the
   * pool before (or on its first invoke): a small model whose every operator runs as one chunk
   * would pay the wake-up and keep a core spinning for nothing. One that starts splitting later
   * (new input shapes) wakes them at its first split and from its next invoke on. */
  const bool wake = in->pool_split_seen || !in->invoked;
  const uint64_t splits = ar_threadpool_splits(in->pool);
  ar_threadpool_enter_ex(in->pool, wake);
  int rc = run_ops(in);
  if (ar_threadpool_splits(in->pool) != splits) in->pool_split_seen = true;
  in->invoked = true;
  ar_threadpool_leave(in->pool);
  return rc;
}

const char *ar_interp_last_error(const ar_interp_t *in) { return in->root->err; }

int ar_interp_invoke_profiled(ar_interp_t *in, uint64_t *op_ns) {
  if (!in->placed || in->dirty) return AR_ESTATE;
  in->err[0] = '\0';
  ar_threadpool_enter(in->pool);
  for (int32_t i = 0; i < in->n_run; i++) {
    int32_t k = in->run_ops[i];
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (in->cf[k]) {
      int rc = cf_run(in, k);
      if (rc != 0) {
        ar_threadpool_leave(in->pool);
        return rc;
      }
    } else {
      in->kernels[k]->eval(&in->nodes[k]);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    op_ns[k] += (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
  }
  ar_threadpool_leave(in->pool);
  return 0;
}

const ar_node_t *ar_interp_node(const ar_interp_t *in, int32_t k) {
  if (k < 0 || k >= in->n_ops) return NULL;
  return &in->nodes[k];
}

int32_t ar_interp_n_operators(const ar_interp_t *in) { return in->n_ops; }

bool ar_interp_op_folded(const ar_interp_t *in, int32_t k) {
  return k >= 0 && k < in->n_ops && in->op_folded[k];
}

bool ar_interp_op_at_use(const ar_interp_t *in, int32_t k) {
  return k >= 0 && k < in->n_ops && in->op_mode[k] == AR_OPMODE_AT_USE;
}

bool ar_interp_op_elided(const ar_interp_t *in, int32_t k) {
  return k >= 0 && k < in->n_ops && in->elided[k] && in->fused_into[k] < 0 && in->pad_into[k] < 0;
}

int32_t ar_interp_op_pad_folded(const ar_interp_t *in, int32_t k) {
  return k >= 0 && k < in->n_ops ? in->pad_into[k] : -1;
}

int32_t ar_interp_op_fused(const ar_interp_t *in, int32_t k) {
  return k >= 0 && k < in->n_ops ? in->fused_into[k] : -1;
}


/* ------------------------------------------------------------------------------------------ */
/* Resource variables and control flow (ar_interp.h).                                          */

/* The VAR_HANDLE operator of subgraph s writing tensor t, or -1. */
static int32_t var_handle_of(const ar_subgraph_t *sg, int32_t t) {
  for (uint32_t k = 0; k < sg->n_operators; k++) {
    const ar_operator_t *op = &sg->operators[k];
    if (op->op == AR_OP_VAR_HANDLE && op->n_outputs == 1 && op->outputs[0] == t) return (int32_t)k;
  }
  return -1;
}

static int32_t find_var(const ar_interp_t *root, const ar_var_handle_options_t *o) {
  for (int32_t i = 0; i < root->n_vars; i++)
    if (strcmp(root->vars[i].container, o->container) == 0 && strcmp(root->vars[i].shared_name, o->shared_name) == 0)
      return i;
  return -1;
}

static bool same_shape(const ar_tensor_t *a, const ar_tensor_t *b) {
  return a->dtype == b->dtype && a->rank == b->rank && a->bytes == b->bytes &&
         memcmp(a->dims, b->dims, (size_t)a->rank * sizeof(int32_t)) == 0;
}

static void shape_text(const ar_tensor_t *t, char *buf, size_t n) {
  size_t at = (size_t)snprintf(buf, n, "%s [", ar_dtype_name(t->dtype));
  for (int32_t d = 0; d < t->rank && at < n; d++) at += (size_t)snprintf(buf + at, n - at, d ? ",%d" : "%d", t->dims[d]);
  if (at < n) snprintf(buf + at, n - at, "]");
}

/* Every resource variable of the model, sized from the ASSIGN_VARIABLE values writing it; every
 * READ_VARIABLE output and ASSIGN_VARIABLE value of the same dtype and shape. */
static int build_vars(ar_interp_t *root, char *msg, size_t msg_bytes) {
  const ar_model_t *m = root->model;
  int32_t n = 0;
  for (uint32_t s = 0; s < m->n_subgraphs; s++)
    for (uint32_t k = 0; k < m->subgraphs[s].n_operators; k++) n += m->subgraphs[s].operators[k].op == AR_OP_VAR_HANDLE;
  if (n == 0) return 0;
  root->vars = calloc((size_t)n, sizeof *root->vars);
  if (!root->vars) return ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
  for (uint32_t s = 0; s < m->n_subgraphs; s++)
    for (uint32_t k = 0; k < m->subgraphs[s].n_operators; k++) {
      const ar_operator_t *op = &m->subgraphs[s].operators[k];
      if (op->op != AR_OP_VAR_HANDLE || find_var(root, &op->options.var_handle) >= 0) continue;
      rvar_t *v = &root->vars[root->n_vars++];
      v->container = op->options.var_handle.container;
      v->shared_name = op->options.var_handle.shared_name;
      v->sg = (int32_t)s;
      v->op = (int32_t)k;
    }
  /* Sizes from the assignments, then every read and assignment checked against them. */
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t s = 0; s < m->n_subgraphs; s++) {
      const ar_subgraph_t *sg = &m->subgraphs[s];
      for (uint32_t k = 0; k < sg->n_operators; k++) {
        const ar_operator_t *op = &sg->operators[k];
        if (op->op != AR_OP_ASSIGN_VARIABLE && op->op != AR_OP_READ_VARIABLE) continue;
        const bool assign = op->op == AR_OP_ASSIGN_VARIABLE;
        if (op->n_inputs != (assign ? 2 : 1) || op->n_outputs != (assign ? 0 : 1) || op->inputs[0] < 0 ||
            (assign && op->inputs[1] < 0))
          return ar_errf(msg, msg_bytes, AR_EMODEL, "subgraph %u, operator %u (%s): %d inputs, %d outputs", s, k,
                         ar_op_name(op->op), op->n_inputs, op->n_outputs);
        const int32_t h = var_handle_of(sg, op->inputs[0]);
        if (h < 0)
          return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "subgraph %u, operator %u (%s): input 0 is tensor %d "
                         "(%s), which no VAR_HANDLE of this subgraph writes", s, k, ar_op_name(op->op),
                         op->inputs[0], sg->tensors[op->inputs[0]].name);
        rvar_t *v = &root->vars[find_var(root, &sg->operators[h].options.var_handle)];
        const ar_tensor_t *val = &sg->tensors[assign ? op->inputs[1] : op->outputs[0]];
        if (val->dtype == AR_DTYPE_RESOURCE)
          return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "subgraph %u, operator %u (%s): a variable holding a "
                         "resource", s, k, ar_op_name(op->op));
        if (pass == 0) {
          if (assign && !v->value) v->value = val, v->value_sg = (int32_t)s, v->value_op = (int32_t)k;
          continue;
        }
        if (!v->value)
          return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "resource variable '%s%s%s' (VAR_HANDLE, subgraph %d, "
                         "operator %d): no ASSIGN_VARIABLE writes it, so its shape cannot be known at load: "
                         "refused", v->container, v->container[0] ? "/" : "", v->shared_name, v->sg, v->op);
        if (!same_shape(val, v->value)) {
          char a[96], b[96];
          shape_text(val, a, sizeof a);
          shape_text(v->value, b, sizeof b);
          return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "resource variable '%s%s%s': subgraph %u, operator %u "
                         "(%s) %s it as %s (tensor %s), but subgraph %d, operator %d assigns %s: a variable "
                         "whose shape changes is not supported", v->container, v->container[0] ? "/" : "",
                         v->shared_name, s, k, ar_op_name(op->op), assign ? "assigns" : "reads", a, val->name,
                         v->value_sg, v->value_op, b);
        }
      }
    }
  for (int32_t i = 0; i < root->n_vars; i++) {
    rvar_t *v = &root->vars[i];
    if (!v->value)
      return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "resource variable '%s%s%s' (VAR_HANDLE, subgraph %d, "
                     "operator %d): no ASSIGN_VARIABLE writes it, so its shape cannot be known at load: "
                     "refused", v->container, v->container[0] ? "/" : "", v->shared_name, v->sg, v->op);
    v->bytes = v->value->bytes;   /* its offset: in the state slot (ar__state_layout) */
  }
  return 0;
}

/* res_var for this interpreter's tensors; a RESOURCE tensor anywhere but VAR_HANDLE -> READ /
 * ASSIGN_VARIABLE input 0 (a subgraph input or output, another operator's operand) is refused. */
static int bind_resources(ar_interp_t *in, char *msg, size_t msg_bytes) {
  const ar_subgraph_t *sg = in->sg;
  for (int32_t t = 0; t < in->n_tensors; t++) in->res_var[t] = -1;
  for (int32_t k = 0; k < in->n_ops; k++) {
    const ar_operator_t *op = &sg->operators[k];
    if (op->op == AR_OP_VAR_HANDLE && op->n_outputs == 1 && op->outputs[0] >= 0)
      in->res_var[op->outputs[0]] = find_var(in->root, &op->options.var_handle);
  }
  for (int32_t k = 0; k < in->n_ops; k++) {
    const ar_operator_t *op = &sg->operators[k];
    for (int32_t i = 0; i < op->n_inputs; i++) {
      const int32_t t = op->inputs[i];
      if (t < 0 || sg->tensors[t].dtype != AR_DTYPE_RESOURCE) continue;
      if (i != 0 || (op->op != AR_OP_READ_VARIABLE && op->op != AR_OP_ASSIGN_VARIABLE) || in->res_var[t] < 0)
        return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "subgraph %d, operator %d (%s): input %d is the resource "
                       "tensor %d (%s): a resource is only supported from a VAR_HANDLE into READ_VARIABLE or "
                       "ASSIGN_VARIABLE of the same subgraph", in->subgraph, k, ar_op_name(op->op), i, t,
                       sg->tensors[t].name);
    }
  }
  for (uint32_t i = 0; i < sg->n_inputs + sg->n_outputs; i++) {
    const int32_t t = i < sg->n_inputs ? sg->inputs[i] : sg->outputs[i - sg->n_inputs];
    if (sg->tensors[t].dtype == AR_DTYPE_RESOURCE)
      return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "subgraph %d: %s is the resource tensor %d (%s): resources "
                     "passed between subgraphs are not supported", in->subgraph,
                     i < sg->n_inputs ? "an input" : "an output", t, sg->tensors[t].name);
  }
  return 0;
}

/* READ_VARIABLE without a copy: its output t reads the variable's bytes in place (a view into the
 * state slot, no buffer) when nothing can write the variable while t is read - no ASSIGN_VARIABLE
 * of that variable and no control-flow operator (whose subgraphs might assign it) after the read
 * up to t's last reader - and t is not a graph output (valid after the invoke). Else it copies. */
static void find_read_aliases(ar_interp_t *in) {
  const ar_subgraph_t *sg = in->sg;
  for (int32_t t = 0; t < in->n_tensors; t++) in->alias_var[t] = -1, in->state_alias[t] = false;
  for (int32_t k = 0; k < in->n_ops; k++) {
    const ar_operator_t *op = &sg->operators[k];
    if (op->op != AR_OP_READ_VARIABLE || op->n_inputs != 1 || op->n_outputs != 1 || op->inputs[0] < 0 ||
        op->outputs[0] < 0 || in->res_var[op->inputs[0]] < 0)
      continue;
    const int32_t t = op->outputs[0], v = in->res_var[op->inputs[0]];
    bool ok = !sg->tensors[t].is_variable;
    for (uint32_t o = 0; o < sg->n_outputs && ok; o++) ok = sg->outputs[o] != t;
    int32_t last = -1;
    for (int32_t j = k + 1; j < in->n_ops && ok; j++) {
      const ar_operator_t *r = &sg->operators[j];
      for (int32_t i = 0; i < r->n_inputs; i++)
        if (r->inputs[i] == t) last = j;
    }
    if (last < 0) continue;   /* nothing reads it */
    for (int32_t j = k + 1; j <= last && ok; j++) {
      const ar_operator_t *r = &sg->operators[j];
      if (r->op == AR_OP_WHILE || r->op == AR_OP_IF || r->op == AR_OP_CALL_ONCE) ok = false;
      if (r->op == AR_OP_ASSIGN_VARIABLE && r->n_inputs >= 1 && r->inputs[0] >= 0 && in->res_var[r->inputs[0]] == v)
        ok = false;
    }
    if (!ok) continue;
    in->alias_var[t] = v;
    in->state_alias[t] = true;
  }
}

/* Whether tensor t of `in` is a READ_VARIABLE output reading its variable in place. */
bool ar_interp_reads_in_place(const ar_interp_t *in, int32_t t) {
  return t >= 0 && t < in->n_tensors && in->alias_var[t] >= 0;
}

static void cf_free(cf_op_t *cf) {
  if (!cf) return;
  for (int32_t j = 0; j < cf->n_child; j++) ar_interp_free(cf->child[j]);
  free(cf->loop_kind);
  free(cf->loop_off);
  free(cf->cur);
  free(cf->next);
  free(cf);
}

/* How a WHILE's loop value i moves from one iteration to the next (cf_loop_kind). */
typedef enum cf_loop_kind {
  CF_LOOP_SWAP = 0,   /* the body's output view points at the other buffer: swapped, no copy */
  CF_LOOP_PASS = 1,   /* the body's output is its input i: the value stays in A */
  CF_LOOP_COPY = 2,   /* copied into the other buffer after the body (counted in copy_bytes) */
} cf_loop_kind_t;

static const char *const cf_child_name[3][2] = {{"cond", "body"}, {"then", "else"}, {"init", ""}};
static int cf_kind(ar_op_t op) { return op == AR_OP_WHILE ? 0 : op == AR_OP_IF ? 1 : 2; }

/* Children of control-flow operator k (the loader checked the indices, counts and recursion). */
static int cf_new(ar_interp_t *in, int32_t k, char *msg, size_t msg_bytes) {
  const ar_operator_t *op = &in->sg->operators[k];
  cf_op_t *cf = calloc(1, sizeof *cf);
  if (!cf) return ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
  in->cf[k] = cf;
  cf->parent = in;
  cf->op = op->op;
  cf->k = k;
  if (op->op == AR_OP_WHILE) {
    cf->n_child = 2, cf->sub[0] = op->options.while_.cond_subgraph, cf->sub[1] = op->options.while_.body_subgraph;
    const size_t n = op->n_inputs > 0 ? (size_t)op->n_inputs : 1;
    cf->n_loop = op->n_inputs;
    cf->loop_kind = calloc(n, sizeof *cf->loop_kind);
    cf->loop_off = calloc(n, sizeof *cf->loop_off);
    cf->cur = calloc(n, sizeof *cf->cur);
    cf->next = calloc(n, sizeof *cf->next);
    if (!cf->loop_kind || !cf->loop_off || !cf->cur || !cf->next)
      return ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
  } else if (op->op == AR_OP_IF) {
    cf->n_child = 2, cf->sub[0] = op->options.if_.then_subgraph, cf->sub[1] = op->options.if_.else_subgraph;
  } else {
    cf->n_child = 1, cf->sub[0] = op->options.call_once.init_subgraph;
  }
  uint64_t state = 0;   /* the children's persistent regions (CALL_ONCE's flag: in the state slot) */
  for (int32_t j = 0; j < cf->n_child; j++) {
    ar_interp_options_t o = in->opt;
    o.pool = NULL;   /* the parent's pool is handed over at place */
    int rc = interp_new(in->model, &o, &cf->child[j], msg, msg_bytes, NULL, 0, NULL, cf->sub[j], in->root);
    if (rc != 0) {
      char inner[768];
      snprintf(inner, sizeof inner, "%s", msg && msg_bytes ? msg : "");
      return ar_errf(msg, msg_bytes, rc, "subgraph %d, operator %d (%s): %s subgraph %d: %s", in->subgraph, k,
                     ar_op_name(op->op), cf_child_name[cf_kind(op->op)][j], cf->sub[j], inner);
    }
    const uint64_t a = ar_interp_arena_bytes(cf->child[j]), p = ar_interp_persistent_bytes(cf->child[j]);
    if (a > cf->arena_bytes) cf->arena_bytes = a;
    cf->child_state_off[j] = state;
    state += ar_align_up(p, AR_ARENA_ALIGNMENT);
  }
  cf->state_bytes = state;
  return 0;
}

/* The operator's scratch: the children's arena (64-byte aligned), then a WHILE's second loop-value
 * buffers (cf_check sizes them). */
static void cf_node_sizes(ar_interp_t *in, int32_t k) {
  const cf_op_t *cf = in->cf[k];
  in->nodes[k].scratch_bytes = cf->arena_bytes + cf->loop_bytes;
  in->nodes[k].state_bytes = cf->state_bytes;
}

static bool same_view(const ar_tview_t *a, const ar_tview_t *b) {
  return a->dtype == b->dtype && a->rank == b->rank && a->bytes == b->bytes &&
         memcmp(a->dims, b->dims, (size_t)a->rank * sizeof(int32_t)) == 0;
}

static void view_text(const ar_tview_t *v, char *buf, size_t n) {
  size_t at = (size_t)snprintf(buf, n, "%s [", ar_dtype_name(v->dtype));
  for (int32_t d = 0; d < v->rank && at < n; d++) at += (size_t)snprintf(buf + at, n - at, d ? ",%d" : "%d", v->dims[d]);
  if (at < n) snprintf(buf + at, n - at, "]");
}

/* One value passed into or out of a subgraph must keep its dtype and shape. */
static int cf_same(const ar_interp_t *in, int32_t k, const char *what, int32_t i, const ar_tview_t *a,
                   const char *bwhat, const ar_tview_t *b, char *msg, size_t msg_bytes) {
  if (same_view(a, b)) return 0;
  char x[96], y[96];
  view_text(a, x, sizeof x);
  view_text(b, y, sizeof y);
  return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "subgraph %d, operator %d (%s): %s %d is %s, but %s is %s (values "
                 "whose dtype or shape changes across subgraphs are not supported)", in->subgraph, k,
                 ar_op_name(in->sg->operators[k].op), what, i, x, bwhat, y);
}

/* How WHILE's loop value i moves, from its body `b`'s output i (tensor t). The body's producer
 * writes the next value straight into the other buffer when t's view can point there: t is an
 * activation of its own (not a constant, a variable or other state, a resource, a weight widened
 * at use), written by an operator that runs, that no other tensor shares bytes with (neither in
 * place over another nor another in place or aliased over it: the planner's in-place groups keep
 * the planned address) and that is no other loop value's output nor a body input. The body's own
 * input i passed through stays where it is; everything else is copied. */
static cf_loop_kind_t cf_loop_kind(const ar_interp_t *b, int32_t i) {
  const ar_subgraph_t *sg = b->sg;
  const int32_t t = sg->outputs[i];
  for (int32_t o = 0; o < i; o++)
    if (sg->outputs[o] == t) return CF_LOOP_COPY;   /* copied from the first value's buffer */
  bool input_i = false, other_input = false;
  for (uint32_t j = 0; j < sg->n_inputs; j++)
    if (sg->inputs[j] == t) {
      if ((int32_t)j == i) input_i = true;
      else other_input = true;
    }
  if (input_i || other_input) return input_i && !other_input ? CF_LOOP_PASS : CF_LOOP_COPY;
  const ar_tensor_plan_t *tp = &b->tensor_plan[t];
  if (b->views[t].is_constant || tp->home != AR_HOME_ARENA || tp->at_use || tp->inplace_of >= 0 ||
      b->res_var[t] >= 0 || b->state_alias[t])
    return CF_LOOP_COPY;
  for (int32_t u = 0; u < b->n_tensors; u++)
    if (b->tensor_plan[u].inplace_of == t) return CF_LOOP_COPY;
  for (int32_t r = 0; r < b->n_run; r++) {
    const ar_operator_t *op = &sg->operators[b->run_ops[r]];
    for (int32_t o = 0; o < op->n_outputs; o++)
      if (op->outputs[o] == t) return CF_LOOP_SWAP;
  }
  return CF_LOOP_COPY;   /* nothing writes it: its planned bytes are the value */
}

/* Inputs and outputs of operator k against its children's; copy bytes. */
static int cf_check(ar_interp_t *in, int32_t k, char *msg, size_t msg_bytes) {
  cf_op_t *cf = in->cf[k];
  const ar_node_t *nd = &in->nodes[k];
  int rc = 0;
  char who[64];
  cf->copy_bytes = 0;
  if (cf->op == AR_OP_WHILE) {
    ar_interp_t *c = cf->child[0], *b = cf->child[1];
    cf->loop_bytes = 0;
    for (int32_t i = 0; i < nd->n_inputs && rc == 0; i++) {
      const ar_tview_t *v = nd->inputs[i];
      if (!v || !nd->outputs[i])
        return ar_errf(msg, msg_bytes, AR_EMODEL, "subgraph %d, operator %d (WHILE): loop value %d is omitted",
                       in->subgraph, k, i);
      snprintf(who, sizeof who, "cond subgraph %d's input %d", cf->sub[0], i);
      if ((rc = cf_same(in, k, "input", i, v, "its output", nd->outputs[i], msg, msg_bytes)) ||
          (rc = cf_same(in, k, "input", i, v, who, ar_interp_input(c, i), msg, msg_bytes)))
        return rc;
      snprintf(who, sizeof who, "body subgraph %d's input %d", cf->sub[1], i);
      if ((rc = cf_same(in, k, "input", i, v, who, ar_interp_input(b, i), msg, msg_bytes))) return rc;
      snprintf(who, sizeof who, "body subgraph %d's output %d", cf->sub[1], i);
      if ((rc = cf_same(in, k, "input", i, v, who, ar_interp_output(b, i), msg, msg_bytes))) return rc;
      cf->loop_kind[i] = (uint8_t)cf_loop_kind(b, i);
      cf->loop_off[i] = cf->loop_bytes;
      if (cf->loop_kind[i] != CF_LOOP_PASS) cf->loop_bytes += ar_align_up(v->bytes ? v->bytes : 1, AR_ARENA_ALIGNMENT);
      if (cf->loop_kind[i] == CF_LOOP_COPY) cf->copy_bytes += v->bytes;
    }
    const ar_tview_t *cond = ar_interp_output(c, 0);
    if (cond->dtype != AR_DTYPE_BOOL || elems_of(cond) != 1)
      return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "subgraph %d, operator %d (WHILE): cond subgraph %d's output "
                     "has dtype %s and %llu elements (one BOOL expected)", in->subgraph, k, cf->sub[0],
                     ar_dtype_name(cond->dtype), (unsigned long long)elems_of(cond));
  } else if (cf->op == AR_OP_IF) {
    const ar_tview_t *cond = nd->inputs[0];
    if (!cond || elems_of(cond) != 1 || ar_dtype_size(cond->dtype) == 0)
      return ar_errf(msg, msg_bytes, AR_EUNSUPPORTED, "subgraph %d, operator %d (IF): the condition (input 0) must "
                     "be one value", in->subgraph, k);
    for (int32_t j = 0; j < 2; j++) {
      const ar_interp_t *br = cf->child[j];
      for (int32_t i = 1; i < nd->n_inputs; i++) {
        if (!nd->inputs[i])
          return ar_errf(msg, msg_bytes, AR_EMODEL, "subgraph %d, operator %d (IF): input %d is omitted",
                         in->subgraph, k, i);
        snprintf(who, sizeof who, "%s subgraph %d's input %d", cf_child_name[1][j], cf->sub[j], i - 1);
        if ((rc = cf_same(in, k, "input", i, nd->inputs[i], who, ar_interp_input((ar_interp_t *)br, i - 1), msg,
                          msg_bytes)))
          return rc;
      }
      for (int32_t o = 0; o < nd->n_outputs; o++) {
        if (!nd->outputs[o])
          return ar_errf(msg, msg_bytes, AR_EMODEL, "subgraph %d, operator %d (IF): output %d is omitted",
                         in->subgraph, k, o);
        snprintf(who, sizeof who, "%s subgraph %d's output %d", cf_child_name[1][j], cf->sub[j], o);
        if ((rc = cf_same(in, k, "output", o, nd->outputs[o], who, ar_interp_output(br, o), msg, msg_bytes)))
          return rc;
      }
    }
    for (int32_t o = 0; o < nd->n_outputs; o++) cf->copy_bytes += nd->outputs[o]->bytes;   /* inputs: read in place */
  }
  return 0;
}

static void set_pool(ar_interp_t *in, ar_threadpool_t *pool) {
  in->pool = pool;
  for (int32_t k = 0; k < in->n_ops; k++) in->nodes[k].pool = pool;
}

/* Place every child in its operator's scratch and state (called at the end of place, the
 * parent's scratch and state pointers set). */
static int cf_place(ar_interp_t *in, char *msg, size_t msg_bytes) {
  for (int32_t k = 0; k < in->n_ops; k++) {
    cf_op_t *cf = in->cf[k];
    if (!cf) continue;
    ar_node_t *nd = &in->nodes[k];
    uint8_t *state = nd->state;
    cf->last_iterations = 0;
    for (int32_t j = 0; j < cf->n_child; j++) {
      ar_interp_t *c = cf->child[j];
      set_pool(c, in->pool);
      int rc = ar_interp_place(c, nd->scratch, cf->arena_bytes, state ? state + cf->child_state_off[j] : NULL,
                               ar_interp_persistent_bytes(c), msg, msg_bytes);
      if (rc != 0) return rc;
    }
  }
  return 0;
}

static inline void copy_view(ar_tview_t *dst, const ar_tview_t *src) {
  if (dst->data && src->data && dst->data != src->data) memcpy(dst->data, src->data, (size_t)src->bytes);
}

/* Run control-flow operator k. Children run with the caller's pool already entered.
 *
 * The children read the parent's values where they are, instead of copies: the views of their
 * inputs are pointed there at every run (not once at place: the parent's own views move - a
 * WHILE's body output pointed at a loop buffer, a state slot bound - between runs, and a pointer
 * costs nothing to set). Kernels never write their inputs; a child operator in place on an input
 * writes the input's planned buffer, which the input then no longer uses. (A READ_VARIABLE output
 * read in place, whose view a state bind moves, never reaches a control-flow operator:
 * find_read_aliases.)
 *
 * WHILE: loop value i is first read in the WHILE's input i itself; each iteration's body writes
 * the next values into the other buffer (A, the WHILE's output, or B in the scratch past the
 * children's arena: cond and body share that arena, so what the body leaves there does not survive
 * the next cond), then the buffers swap: an iteration moves pointers, not bytes, except the
 * values cf_loop_kind copies. A value ending in B (or still in the input: no iteration) is copied
 * into A once, after the loop. A WHILE also ends on max_while_us and on the cancel flag. */
static int cf_run(ar_interp_t *in, int32_t k) {
  cf_op_t *cf = in->cf[k];
  const ar_node_t *nd = &in->nodes[k];
  int rc;
  if (cf->op == AR_OP_CALL_ONCE) {
    if (cf->armed[0]) return 0;
    if ((rc = run_ops(cf->child[0])) != 0) return rc;
    cf->armed[0] = 1;
    return 0;
  }
  if (cf->op == AR_OP_IF) {
    const ar_tview_t *cv = nd->inputs[0];
    bool cond;
    switch (cv->dtype) {
      case AR_DTYPE_FLOAT32: cond = *(const float *)cv->data != 0.0f; break;
      case AR_DTYPE_INT32: cond = *(const int32_t *)cv->data != 0; break;
      case AR_DTYPE_INT64: cond = *(const int64_t *)cv->data != 0; break;
      default: {
        bool any = false;
        for (size_t b = 0; b < ar_dtype_size(cv->dtype); b++) any = any || ((const uint8_t *)cv->data)[b] != 0;
        cond = any;
      }
    }
    ar_interp_t *br = cf->child[cond ? 0 : 1];
    for (int32_t i = 1; i < nd->n_inputs; i++) ar_interp_input(br, i - 1)->data = nd->inputs[i]->data;
    if ((rc = run_ops(br)) != 0) return rc;
    for (int32_t o = 0; o < nd->n_outputs; o++) copy_view(nd->outputs[o], ar_interp_output(br, o));
    return 0;
  }
  ar_interp_t *c = cf->child[0], *b = cf->child[1];
  const int32_t n = cf->n_loop;
  const uint8_t *kind = cf->loop_kind;
  uint8_t **cur = cf->cur, **next = cf->next;
  uint8_t *const second = (uint8_t *)nd->scratch + cf->arena_bytes;
  for (int32_t i = 0; i < n; i++) {
    if (kind[i] == CF_LOOP_PASS) {   /* never moves: in A from the start */
      copy_view(nd->outputs[i], nd->inputs[i]);
      cur[i] = nd->outputs[i]->data;
    } else {
      cur[i] = nd->inputs[i]->data;
    }
  }
  int64_t it = 0;
  const int64_t t0 = in->opt.max_while_us > 0 ? mono_us() : 0;
  for (;;) {
    for (int32_t i = 0; i < n; i++) ar_interp_input(c, i)->data = cur[i];
    if ((rc = run_ops(c)) != 0) return rc;
    if (!*(const uint8_t *)ar_interp_output(c, 0)->data) break;   /* it may be an input: read after the run */
    if (it >= in->opt.max_while_iterations) {
      cf->last_iterations = it;
      ar_errf(in->root->err, sizeof in->root->err, AR_ESTATE, "subgraph %d, operator %d (WHILE): the condition "
              "(subgraph %d) still holds after %lld iterations (max_while_iterations)", in->subgraph, k,
              cf->sub[0], (long long)it);
      return AR_ESTATE;
    }
    if (in->opt.cancel && __atomic_load_n(in->opt.cancel, __ATOMIC_RELAXED)) {
      cf->last_iterations = it;
      ar_errf(in->root->err, sizeof in->root->err, AR_ETIMEDOUT, "subgraph %d, operator %d (WHILE): stopped after "
              "%lld iterations: the invoke was cancelled", in->subgraph, k, (long long)it);
      return AR_ETIMEDOUT;
    }
    if (t0) {
      const int64_t spent = mono_us() - t0;
      if (spent >= in->opt.max_while_us) {
        cf->last_iterations = it;
        ar_errf(in->root->err, sizeof in->root->err, AR_ETIMEDOUT, "subgraph %d, operator %d (WHILE): the "
                "condition (subgraph %d) still holds after %lld iterations and %lld ms (max_while_ms)", in->subgraph,
                k, cf->sub[0], (long long)it, (long long)(spent / 1000));
        return AR_ETIMEDOUT;
      }
    }
    for (int32_t i = 0; i < n; i++) {
      ar_interp_input(b, i)->data = cur[i];
      if (kind[i] == CF_LOOP_PASS) continue;
      uint8_t *a = nd->outputs[i]->data;
      next[i] = cur[i] == a ? second + cf->loop_off[i] : a;
      if (kind[i] == CF_LOOP_SWAP) b->views[b->sg->outputs[i]].data = next[i];
    }
    if ((rc = run_ops(b)) != 0) return rc;
    for (int32_t i = 0; i < n; i++) {
      if (kind[i] == CF_LOOP_PASS) continue;
      if (kind[i] == CF_LOOP_COPY) {
        const ar_tview_t *o = ar_interp_output(b, i);
        if (o->data != next[i]) memcpy(next[i], o->data, (size_t)o->bytes);
      }
      cur[i] = next[i];
    }
    it++;
  }
  for (int32_t i = 0; i < n; i++)
    if (cur[i] != nd->outputs[i]->data) memcpy(nd->outputs[i]->data, cur[i], (size_t)nd->outputs[i]->bytes);
  cf->last_iterations = it;
  return 0;
}

/* Again after a resize (ar_interp_prepare): the children keep their plans, so the values passed
 * must keep their shapes (cf_check refuses any other, naming the operator). */
static int cf_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  cf_op_t *cf = node->sub;
  int rc = cf_check(cf->parent, cf->k, msg, msg_bytes);
  node->scratch_bytes = cf->arena_bytes + cf->loop_bytes;
  node->state_bytes = cf->state_bytes;
  return rc;
}
static void cf_eval_none(const ar_node_t *node) { (void)node; }   /* run by cf_run */
/* No forms: the op table lists WHILE, IF and CALL_ONCE as the interpreter's (any dtype). */
static const ar_kernel_t cf_kernel = {"control flow", cf_prepare, NULL, cf_eval_none, {NULL, 0, -1, -1}};

int ar_interp_control_flow(const ar_interp_t *in, int32_t k, ar_cf_info_t *out) {
  if (k < 0 || k >= in->n_ops || !in->cf[k] || !out) return AR_EINVAL;
  const cf_op_t *cf = in->cf[k];
  memset(out, 0, sizeof *out);
  out->op = cf->op;
  out->n_children = cf->n_child;
  for (int32_t j = 0; j < cf->n_child; j++) {
    out->subgraph[j] = cf->sub[j];
    out->child_arena_bytes[j] = ar_interp_arena_bytes(cf->child[j]);
    out->child_persistent_bytes[j] = ar_interp_persistent_bytes(cf->child[j]);
    out->child[j] = cf->child[j];
  }
  out->arena_bytes = cf->arena_bytes;
  out->loop_bytes = cf->loop_bytes;
  out->state_bytes = cf->state_bytes;
  out->copy_bytes_per_iteration = cf->copy_bytes;
  out->last_iterations = cf->last_iterations;
  return 0;
}

int32_t ar_interp_subgraph(const ar_interp_t *in) { return in->subgraph; }
int32_t ar_interp_n_resource_vars(const ar_interp_t *in) { return in->root->n_vars; }
int ar_interp_resource_var(const ar_interp_t *in, int32_t i, const char **container, const char **shared_name,
                           uint64_t *bytes, uint64_t *offset) {
  const ar_interp_t *r = in->root;
  if (i < 0 || i >= r->n_vars) return AR_EINVAL;
  if (container) *container = r->vars[i].container;
  if (shared_name) *shared_name = r->vars[i].shared_name;
  if (bytes) *bytes = r->vars[i].bytes;
  if (offset) *offset = r->slot_offset + r->vars[i].offset;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Resizing: TFLite's ResizeInputTensor + AllocateTensors, and its dynamic tensors.            */

int ar_interp_check_input_shape(const ar_model_t *model, int32_t i, int32_t rank, const int32_t *dims,
                                char *msg, size_t msg_bytes) {
  const ar_subgraph_t *sg = &model->subgraphs[0];
  if (i < 0 || (uint32_t)i >= sg->n_inputs)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "input %d: the model has %u input(s)", (int)i, sg->n_inputs);
  const ar_tensor_t *t = &sg->tensors[sg->inputs[i]];
  if (rank != t->rank)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, "input %d (%s): rank %d, the model's input has rank %d", (int)i,
                   t->name, (int)rank, (int)t->rank);
  uint64_t n = 1;
  for (int32_t d = 0; d < rank; d++) {
    bool free_dim = t->has_shape_signature && t->shape_signature[d] == -1;
    if (dims[d] < 1)
      return ar_errf(msg, msg_bytes, AR_ESHAPE, "input %d (%s): dim %d is %d", (int)i, t->name, (int)d,
                     (int)dims[d]);
    if (dims[d] != t->dims[d] && !free_dim)
      return ar_errf(msg, msg_bytes, AR_ESHAPE, "input %d (%s): dim %d is %d, but the model fixes it at %d "
                     "(only dims that are -1 in the shape_signature can change)", (int)i, t->name, (int)d,
                     (int)dims[d], (int)t->dims[d]);
    n *= (uint64_t)dims[d];
    if (n > (uint64_t)INT32_MAX)
      return ar_errf(msg, msg_bytes, AR_EOVERFLOW, "input %d (%s): more than 2^31 - 1 elements", (int)i,
                     t->name);
  }
  return 0;
}

bool ar_interp_input_resizable(const ar_interp_t *in, int32_t i) {
  if (i < 0 || (uint32_t)i >= in->sg->n_inputs) return false;
  const ar_tensor_t *t = &in->sg->tensors[in->sg->inputs[i]];
  for (int32_t d = 0; t->has_shape_signature && d < t->rank; d++)
    if (t->shape_signature[d] == -1) return true;
  return false;
}

int ar_interp_resize_input(ar_interp_t *in, int32_t i, int32_t rank, const int32_t *dims, char *msg,
                           size_t msg_bytes) {
  int rc = ar_interp_check_input_shape(in->model, i, rank, dims, msg, msg_bytes);
  if (rc != 0) return rc;
  ar_tview_t *v = &in->views[in->sg->inputs[i]];
  if (v->rank == rank && memcmp(v->dims, dims, (size_t)rank * sizeof(int32_t)) == 0) return 0;
  uint64_t n = 1;
  for (int32_t d = 0; d < rank; d++) v->dims[d] = dims[d], n *= (uint64_t)dims[d];
  v->bytes = n * ar_dtype_size(v->dtype);
  in->dirty = true;
  return 0;
}

bool ar_interp_input_sets_shape(const ar_interp_t *in, int32_t i) {
  return i >= 0 && (uint32_t)i < in->sg->n_inputs && in->snap[i] != NULL;
}

int ar_interp_set_shape_input(ar_interp_t *in, int32_t i, const void *data, uint64_t bytes, char *msg,
                              size_t msg_bytes) {
  if (!ar_interp_input_sets_shape(in, i))
    return ar_errf(msg, msg_bytes, AR_EINVAL, "input %d does not set a shape", (int)i);
  ar_tview_t *v = &in->views[in->sg->inputs[i]];
  if (bytes != v->bytes)
    return ar_errf(msg, msg_bytes, AR_ESHAPE, "input %d (%s): %llu bytes, the tensor has %llu", (int)i,
                   ar_interp_input_name(in, i), (unsigned long long)bytes, (unsigned long long)v->bytes);
  if (in->snap_valid[i] && ar_same_bytes(in->snap[i], data, bytes)) return 0;
  ar_copy_bytes(in->snap[i], data, bytes);
  in->snap_valid[i] = true;
  v->value_known = true;
  in->dirty = true;
  return 0;
}

bool ar_interp_needs_prepare(const ar_interp_t *in) { return in->dirty; }

int ar_interp_prepare(ar_interp_t *in, char *msg, size_t msg_bytes) {
  if (!in->dirty) return 0;
  in->placed = false;
  const ar_subgraph_t *sg = in->sg;
  for (uint32_t i = 0; i < sg->n_inputs; i++)
    if (in->snap_valid[i]) in->views[sg->inputs[i]].data = in->snap[i];
  uint64_t state_total = 0, macs = 0;
  int rc = 0;
  for (int32_t k = 0; k < in->n_ops; k++) {
    ar_node_t *nd = &in->nodes[k];
    nd->scratch_bytes = 0;
    nd->state_bytes = 0;
    if (in->elided[k]) continue;
    nd->infer_shapes = true;
    rc = in->kernels[k]->prepare(nd, msg, msg_bytes);
    nd->infer_shapes = false;
    if (rc != 0) return rc;
    if (ar__prepval_eval(in, k) != 0) return ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
    in->scratch_bytes[k] = in->op_folded[k] ? 0 : nd->scratch_bytes;
    if (!in->op_folded[k]) macs += node_macs(nd);
    if (nd->fused) macs += node_macs(nd->fused);
    in->state_offset[k] = state_total;
    if (nd->state_bytes > 0) state_total += ar_align_up(nd->state_bytes, AR_ARENA_ALIGNMENT);
  }
  if (find_split_hints(in) != 0) return ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
  for (int32_t t = 0; t < in->n_tensors; t++) {
    const ar_tview_t *v = &in->views[t];
    if (elems_of(v) > (uint64_t)INT32_MAX)
      return ar_errf(msg, msg_bytes, AR_EOVERFLOW, "tensor %d (%s): %llu elements after the resize, more "
                     "than 2^31 - 1", (int)t, sg->tensors[t].name, (unsigned long long)elems_of(v));
    in->cur[t].rank = v->rank;
    memcpy(in->cur[t].dims, v->dims, sizeof(in->cur[t].dims));
    in->cur[t].bytes = v->bytes;
  }
  /* Re-plan from scratch: lifetimes do not change, sizes do. */
  ar_planner_t *p = ar_planner_new(AR_ARENA_ALIGNMENT);
  if (!p) return ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
  ar_lifetime_options_t lo = {in->opt.lifetimes, in->opt.inplace, in->scratch_bytes, in->cur,
                              in->opt.weights == AR_WEIGHTS_STORED, in->elided, in->extra_input,
                              in->subgraph, in->state_alias};
  rc = ar_lifetimes_build(in->model, &lo, p, in->tensor_plan, in->scratch_buf, NULL, msg, msg_bytes);
  if (rc == 0) {
    rc = ar_planner_plan(p, in->opt.strategy);
    if (rc != 0 && msg && msg_bytes)
      ar_errf(msg, msg_bytes, rc, "planner (%s): %s", ar_strategy_name(in->opt.strategy), ar_strerror(rc));
  }
  if (rc != 0) {
    ar_planner_free(p);
    return rc;
  }
  ar_planner_free(in->old_planner);
  in->old_planner = in->planner;
  in->planner = p;
  ar_plan_figures_t fig;
  ar_planner_figures(p, &fig);
  in->arena_bytes = ar_align_up(fig.arena_bytes, AR_ARENA_ALIGNMENT);
  in->planner_persistent_bytes = ar_align_up(fig.persistent_bytes, AR_ARENA_ALIGNMENT);
  in->persistent_bytes = in->slot_offset = in->planner_persistent_bytes + state_total;
  in->macs = macs;
  in->dirty = false;
  /* The state slot again: unchanged pieces keep their state (ar_interp_state_note says what
   * a changed layout reset). */
  if (in->root == in && (rc = ar__state_layout(in, msg, msg_bytes)) != 0) {
    in->dirty = true;
    return rc;
  }
  return 0;
}
