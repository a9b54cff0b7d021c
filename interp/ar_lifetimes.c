/* ar_lifetimes.c - from subgraph 0's execution plan to planner buffers (see ar_lifetimes.h).
 *
 * One pass finds the folded operators (DEQUANTIZE/DENSIFY of constants, transitively), the
 * producer and the readers of every tensor; a second pass decides in-place aliases operator by
 * operator; a third adds planner buffers in execution order (graph inputs first, then each
 * operator's outputs and its scratch), so an alias always follows the buffer it reuses and ties
 * in the planner fall to the earlier-born buffer, as in TFLite.
 *
 * In-place safety, both conventions: an operator k may write its output over an input x only if
 * no member of x's alias group (x, what x aliases, what aliases x) is read after k, no other input
 * slot of k reads that group, and the group holds no graph output. The `tflite` convention then
 * adds TFLite ArenaPlanner's own conditions (IdentifyInPlaceTensors / InputTensorCanBeShared);
 * the `arenad` one asks for the output's shape only, which is what the elementwise kernels need
 * (out[i] depends on in[i] alone, so out == in gives the same result).
 */
#include "interp/ar_lifetimes.h"

#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "common/ar_util.h"

const char *ar_lifetimes_name(ar_lifetimes_t l) {
  switch (l) {
  case AR_LIFETIMES_TFLITE: return "tflite";
  case AR_LIFETIMES_ARENAD: return "arenad";
  }
  return "unknown";
}

int ar_lifetimes_parse(const char *name, ar_lifetimes_t *out) {
  if (name == NULL || out == NULL) return AR_EINVAL;
  if (strcmp(name, "tflite") == 0) { *out = AR_LIFETIMES_TFLITE; return 0; }
  if (strcmp(name, "arenad") == 0) { *out = AR_LIFETIMES_ARENAD; return 0; }
  return AR_EINVAL;
}

/* How operator `op` may share an input's bytes with its output 0. */
typedef enum share_kind {
  SHARE_NONE = 0,
  SHARE_MODIFY,      /* writes new values over the input (elementwise, same index) */
  SHARE_UNMODIFIED,  /* output is the input's bytes unchanged (RESHAPE) */
} share_kind_t;

static share_kind_t share_kind(ar_lifetimes_t conv, ar_op_t op, int *n_candidates) {
  *n_candidates = 1;
  switch (op) {
  case AR_OP_RESHAPE:
    return SHARE_UNMODIFIED;            /* TFLite: kTfLiteInplaceOpDataUnmodified, input 0 */
  case AR_OP_ADD:
  case AR_OP_MUL:
    *n_candidates = 2;                  /* TFLite: input 0 or input 1 shared */
    return SHARE_MODIFY;
  case AR_OP_PRELU:
    if (conv != AR_LIFETIMES_ARENAD) return SHARE_NONE;
    *n_candidates = 2;                  /* the input of the output's shape (usually x) */
    return SHARE_MODIFY;
  case AR_OP_RELU:
  case AR_OP_RELU6:
  case AR_OP_LOGISTIC:
  case AR_OP_HARD_SWISH:
    return conv == AR_LIFETIMES_ARENAD ? SHARE_MODIFY : SHARE_NONE;
  default:
    return SHARE_NONE;
  }
}

static bool same_shape(const ar_tensor_t *a, const ar_tensor_t *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return false;
  for (int32_t d = 0; d < a->rank; d++)
    if (a->dims[d] != b->dims[d]) return false;
  return true;
}

typedef struct lt_work {
  int32_t *producer;    /* operator writing the tensor, -1 */
  int32_t *last_read;   /* last operator reading it, -1 */
  int32_t *first_read;
  int32_t *n_reads;     /* reads counted per input slot, as TFLite's refcounts */
  int32_t *root;        /* alias group root (tensor), itself when not an alias */
  int32_t *group_last;  /* per root: last read of any member */
  uint8_t *flags;       /* per tensor, LT_* */
} lt_work_t;

enum { LT_GIN = 1, LT_GOUT = 2, LT_CONST = 4, LT_FOLDED = 8, LT_GROUP_GOUT = 16 };

int ar_lifetimes_op_modes(const ar_model_t *model, const ar_tensor_t *tensors, bool weights_stored,
                          const bool *elided, ar_op_mode_t *mode, int32_t *step) {
  return ar_lifetimes_op_modes_sg(model, 0, tensors, weights_stored, elided, mode, step);
}

int ar_lifetimes_op_modes_sg(const ar_model_t *model, int32_t subgraph, const ar_tensor_t *tensors,
                             bool weights_stored, const bool *elided, ar_op_mode_t *mode, int32_t *step) {
  if (model == NULL || mode == NULL || step == NULL || subgraph < 0 || (uint32_t)subgraph >= model->n_subgraphs)
    return AR_EINVAL;
  const ar_subgraph_t *sg = &model->subgraphs[subgraph];
  const int32_t nt = (int32_t)sg->n_tensors, no = (int32_t)sg->n_operators;
  const ar_tensor_t *tens = tensors ? tensors : sg->tensors;
  enum { M_CONST = 1, M_FOLDED = 2, M_GOUT = 4 };
  uint8_t *f = calloc((size_t)(nt > 0 ? nt : 1), sizeof *f);
  int32_t *at_use_of = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *at_use_of);   /* per tensor */
  if (f == NULL || at_use_of == NULL) {
    free(f);
    free(at_use_of);
    return AR_ENOMEM;
  }
  int rc = 0;
  for (int32_t t = 0; t < nt; t++) {
    at_use_of[t] = -1;
    if (ar_tensor_is_constant(&tens[t])) f[t] |= M_CONST;
  }
  for (uint32_t i = 0; i < sg->n_outputs; i++)
    if (sg->outputs[i] >= 0 && sg->outputs[i] < nt) f[sg->outputs[i]] |= M_GOUT;
  /* Stored order is execution order, so one pass sees DENSIFY -> DEQUANTIZE chains. */
  for (int32_t k = 0; k < no && rc == 0; k++) {
    const ar_operator_t *op = &sg->operators[k];
    mode[k] = AR_OPMODE_INVOKE;
    step[k] = k;
    for (int32_t i = 0; i < op->n_inputs; i++)
      if (op->inputs[i] >= nt) rc = AR_EMODEL;
    for (int32_t o = 0; o < op->n_outputs; o++)
      if (op->outputs[o] >= nt) rc = AR_EMODEL;
    if (rc == 0 && elided && elided[k]) {
      mode[k] = AR_OPMODE_ELIDED;
      step[k] = -1;
      for (int32_t o = 0; o < op->n_outputs; o++)
        if (op->outputs[o] >= 0) f[op->outputs[o]] |= M_CONST;
      continue;
    }
    if (rc != 0 || (op->op != AR_OP_DEQUANTIZE && op->op != AR_OP_DENSIFY) || op->n_inputs < 1) continue;
    bool all_const = true;
    for (int32_t i = 0; i < op->n_inputs; i++) {
      int32_t t = op->inputs[i];
      if (t >= 0 && !(f[t] & (M_CONST | M_FOLDED))) all_const = false;
    }
    if (!all_const) continue;
    int32_t in0 = op->inputs[0], out0 = op->n_outputs == 1 ? op->outputs[0] : -1;
    if (weights_stored && op->op == AR_OP_DEQUANTIZE && op->n_inputs == 1 && in0 >= 0 && out0 >= 0 &&
        tens[in0].dtype == AR_DTYPE_FLOAT16 && tens[out0].dtype == AR_DTYPE_FLOAT32 &&
        !(f[out0] & (M_GOUT | M_CONST))) {
      mode[k] = AR_OPMODE_AT_USE;
      step[k] = -1;
      at_use_of[out0] = k;
      continue;
    }
    mode[k] = AR_OPMODE_FOLDED;
    for (int32_t o = 0; o < op->n_outputs; o++)
      if (op->outputs[o] >= 0) f[op->outputs[o]] |= M_FOLDED;
  }
  /* An at-use operator runs at its first reader's step (readers are INVOKE operators: an at-use
   * output is neither constant nor folded, so nothing reading it is folded or at use). */
  for (int32_t k = 0; k < no && rc == 0; k++) {
    if (mode[k] != AR_OPMODE_INVOKE) continue;
    const ar_operator_t *op = &sg->operators[k];
    for (int32_t i = 0; i < op->n_inputs; i++) {
      int32_t t = op->inputs[i];
      if (t < 0 || at_use_of[t] < 0) continue;
      int32_t d = at_use_of[t];
      if (step[d] < 0 || k < step[d]) step[d] = k;
    }
  }
  free(f);
  free(at_use_of);
  return rc;
}

int ar_lifetimes_build(const ar_model_t *model, const ar_lifetime_options_t *opt, ar_planner_t *p,
                       ar_tensor_plan_t *tensor_plan, int32_t *scratch_buf, bool *op_folded,
                       char *msg, size_t msg_bytes) {
  if (model == NULL || opt == NULL || p == NULL || tensor_plan == NULL || scratch_buf == NULL ||
      opt->subgraph < 0 || (uint32_t)opt->subgraph >= model->n_subgraphs)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "lifetimes: missing model, options or outputs");
  if (opt->convention != AR_LIFETIMES_TFLITE && opt->convention != AR_LIFETIMES_ARENAD)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "lifetimes: unknown convention %d", opt->convention);
  const ar_subgraph_t *sg = &model->subgraphs[opt->subgraph];
  const int32_t nt = (int32_t)sg->n_tensors, no = (int32_t)sg->n_operators;
  const int32_t last_step = no > 0 ? no - 1 : 0;
  const bool tfl = opt->convention == AR_LIFETIMES_TFLITE;
  /* Shapes and byte sizes: the stored ones, or the caller's after an input resize. */
  const ar_tensor_t *tens = opt->tensors ? opt->tensors : sg->tensors;

  for (int32_t t = 0; t < nt; t++)
    tensor_plan[t] = (ar_tensor_plan_t){AR_HOME_NONE, -1, -1, -1, false, -1, false};
  for (int32_t k = 0; k < no; k++) {
    scratch_buf[k] = -1;
    if (op_folded) op_folded[k] = false;
  }

  size_t n = (size_t)(nt > 0 ? nt : 1);
  lt_work_t w;
  w.producer = malloc(n * sizeof *w.producer);
  w.last_read = malloc(n * sizeof *w.last_read);
  w.first_read = malloc(n * sizeof *w.first_read);
  w.n_reads = calloc(n, sizeof *w.n_reads);
  w.root = malloc(n * sizeof *w.root);
  w.group_last = malloc(n * sizeof *w.group_last);
  w.flags = calloc(n, sizeof *w.flags);
  bool *folded = calloc((size_t)(no > 0 ? no : 1), sizeof *folded);
  ar_op_mode_t *mode = calloc((size_t)(no > 0 ? no : 1), sizeof *mode);
  int32_t *step = calloc((size_t)(no > 0 ? no : 1), sizeof *step);
  int32_t *at_use_next = calloc((size_t)(no > 0 ? no : 1), sizeof *at_use_next);
  int32_t *at_use_head = calloc((size_t)(no > 0 ? no : 1), sizeof *at_use_head);
  int rc = 0;
  if (!w.producer || !w.last_read || !w.first_read || !w.n_reads || !w.root || !w.group_last ||
      !w.flags || !folded || !mode || !step || !at_use_next || !at_use_head) {
    rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "lifetimes: out of memory");
    goto out;
  }
  for (int32_t t = 0; t < nt; t++) {
    w.producer[t] = w.last_read[t] = w.first_read[t] = -1;
    w.root[t] = t;
    if (ar_tensor_is_constant(&tens[t])) w.flags[t] |= LT_CONST;
  }
  for (uint32_t i = 0; i < sg->n_inputs; i++)
    if (sg->inputs[i] >= 0 && sg->inputs[i] < nt) w.flags[sg->inputs[i]] |= LT_GIN;
  for (uint32_t i = 0; i < sg->n_outputs; i++)
    if (sg->outputs[i] >= 0 && sg->outputs[i] < nt) w.flags[sg->outputs[i]] |= LT_GOUT;

  /* Folded operators: DEQUANTIZE/DENSIFY whose inputs are all constants or folded tensors
   * (TFLite makes such outputs kTfLiteArenaRwPersistent and computes them once); with
   * weights_stored, fp16 DEQUANTIZE of those runs at use instead (ar_lifetimes_op_modes). */
  rc = ar_lifetimes_op_modes_sg(model, opt->subgraph, tens, opt->weights_stored, opt->elided, mode, step);
  if (rc != 0) {
    rc = ar_errf(msg, msg_bytes, rc, "lifetimes: %s", rc == AR_EMODEL ? "an operator names a tensor out of "
                 "range" : ar_strerror(rc));
    goto out;
  }
  /* At-use operators chained per step, in stored order (they run before that step's operator). */
  for (int32_t k = 0; k < no; k++) at_use_head[k] = at_use_next[k] = -1;
  for (int32_t k = no - 1; k >= 0; k--) {
    if (mode[k] != AR_OPMODE_AT_USE || step[k] < 0) continue;
    at_use_next[k] = at_use_head[step[k]];
    at_use_head[step[k]] = k;
  }
  for (int32_t k = 0; k < no; k++) {
    const ar_operator_t *op = &sg->operators[k];
    if (mode[k] == AR_OPMODE_ELIDED)   /* outputs without bytes: nothing reads them at invoke */
      for (int32_t o = 0; o < op->n_outputs; o++)
        if (op->outputs[o] >= 0) w.flags[op->outputs[o]] |= LT_CONST;
    if (mode[k] != AR_OPMODE_FOLDED) continue;
    folded[k] = true;
    for (int32_t o = 0; o < op->n_outputs; o++)
      if (op->outputs[o] >= 0) w.flags[op->outputs[o]] |= LT_FOLDED;
  }

  /* Producers and readers of the operators that run at invoke, each at the step it runs at. */
  for (int32_t k0 = 0; k0 < no; k0++) {
    if (folded[k0] || step[k0] < 0) continue;
    const int32_t k = step[k0];
    const ar_operator_t *op = &sg->operators[k0];
    for (int32_t i = 0; i < op->n_inputs; i++) {
      int32_t t = op->inputs[i];
      if (t < 0) continue;
      if (t >= nt) {
        rc = ar_errf(msg, msg_bytes, AR_EMODEL, "operator %d (%s): input %d is tensor %d of %d",
                     k, ar_op_name(op->op), i, t, nt);
        goto out;
      }
      w.n_reads[t]++;
      if (k > w.last_read[t]) w.last_read[t] = k;
      if (w.first_read[t] < 0 || k < w.first_read[t]) w.first_read[t] = k;
    }
    const int32_t xt = opt->extra_input ? opt->extra_input[k0] : -1;   /* a fused conv's input */
    if (xt >= nt) {
      rc = ar_errf(msg, msg_bytes, AR_EMODEL, "operator %d (%s): fused input is tensor %d of %d", k,
                   ar_op_name(op->op), xt, nt);
      goto out;
    }
    if (xt >= 0) {
      w.n_reads[xt]++;
      if (k > w.last_read[xt]) w.last_read[xt] = k;
      if (w.first_read[xt] < 0 || k < w.first_read[xt]) w.first_read[xt] = k;
    }
    for (int32_t o = 0; o < op->n_outputs; o++) {
      int32_t t = op->outputs[o];
      if (t < 0) continue;
      if (t >= nt) {
        rc = ar_errf(msg, msg_bytes, AR_EMODEL, "operator %d (%s): output %d is tensor %d of %d",
                     k, ar_op_name(op->op), o, t, nt);
        goto out;
      }
      if (w.producer[t] >= 0 && w.producer[t] != k) {
        rc = ar_errf(msg, msg_bytes, AR_EMODEL,
                     "tensor %d (%s): written by operators %d and %d", t, tens[t].name,
                     w.producer[t], k);
        goto out;
      }
      if (w.flags[t] & (LT_CONST | LT_GIN)) {
        rc = ar_errf(msg, msg_bytes, AR_EMODEL,
                     "tensor %d (%s): operator %d (%s) writes a %s", t, tens[t].name, k,
                     ar_op_name(op->op), (w.flags[t] & LT_CONST) ? "constant" : "graph input");
        goto out;
      }
      w.producer[t] = k;
    }
  }

  /* Homes and own lifetimes. */
  for (int32_t t = 0; t < nt; t++) {
    const ar_tensor_t *ten = &tens[t];
    ar_tensor_plan_t *tp = &tensor_plan[t];
    uint8_t f = w.flags[t];
    if (f & LT_FOLDED) {
      tp->home = AR_HOME_PERSISTENT;
      tp->folded = true;
      continue;
    }
    if (f & LT_CONST) {
      tp->home = AR_HOME_CONSTANT;
      continue;
    }
    if (ten->is_variable || (opt->state_alias && opt->state_alias[t])) {
      tp->home = AR_HOME_STATE;
      tp->first_use = 0;
      tp->last_use = last_step;
      continue;
    }
    bool used = w.producer[t] >= 0 || w.n_reads[t] > 0 || (f & (LT_GIN | LT_GOUT));
    if (!used) continue;
    if (w.n_reads[t] > 0 && w.producer[t] < 0 && !(f & LT_GIN)) {
      rc = ar_errf(msg, msg_bytes, AR_EMODEL,
                   "tensor %d (%s): read by operator %d but neither written nor a graph input", t,
                   ten->name, w.first_read[t]);
      goto out;
    }
    tp->home = AR_HOME_ARENA;
    int32_t first = (f & LT_GIN) ? 0 : (w.producer[t] >= 0 ? w.producer[t] : 0);
    int32_t last;
    if (f & LT_GOUT) {
      last = last_step;                       /* read by the caller after invoke */
    } else if (tfl && (f & LT_GIN)) {
      last = last_step;                       /* TFLite: inputs are never deallocated */
    } else if (w.n_reads[t] > 0) {
      last = w.last_read[t];
    } else {
      /* Nobody reads it. TFLite never frees such a tensor (its refcount never reaches 0);
       * arenad frees it right after its producer. */
      last = tfl ? last_step : first;
    }
    tp->first_use = first;
    tp->last_use = AR_MAX(first, last);
    if (f & LT_GOUT) w.flags[t] |= LT_GROUP_GOUT;
    w.group_last[t] = w.last_read[t];
  }

  for (int32_t k = 0; k < no; k++) {
    const ar_operator_t *op = &sg->operators[k];
    if (mode[k] == AR_OPMODE_AT_USE && step[k] >= 0 && tensor_plan[op->outputs[0]].home == AR_HOME_ARENA)
      tensor_plan[op->outputs[0]].at_use = true;
  }

  /* In-place, operator by operator (stored order), each output 0 over at most one input. */
  if (opt->inplace) {
    for (int32_t k = 0; k < no; k++) {
      if (folded[k]) continue;
      const ar_operator_t *op = &sg->operators[k];
      int n_cand = 0;
      share_kind_t kind = share_kind(opt->convention, op->op, &n_cand);
      if (kind == SHARE_NONE || op->n_outputs < 1 || op->outputs[0] < 0) continue;
      int32_t o = op->outputs[0];
      const ar_tensor_t *to = &tens[o];
      if (tensor_plan[o].home != AR_HOME_ARENA || (w.flags[o] & LT_GOUT)) continue;
      for (int c = 0; c < n_cand && c < op->n_inputs; c++) {
        int32_t x = op->inputs[c];
        if (x < 0 || tensor_plan[x].home != AR_HOME_ARENA) continue;
        const ar_tensor_t *tx = &tens[x];
        int32_t r = w.root[x];
        if (tfl && (w.flags[x] & LT_GIN)) continue;     /* TFLite: never a graph input */
        if (kind == SHARE_MODIFY) {
          if (tfl) {
            /* InputTensorCanBeShared: equal bytes, more than a scalar, one reference (graph
             * outputs hold one more); then the group root must have at most one as well. */
            int32_t refs_x = w.n_reads[x] + ((w.flags[x] & LT_GOUT) ? 1 : 0);
            int32_t refs_r = w.n_reads[r] + ((w.flags[r] & (LT_GOUT | LT_GIN)) ? 1 : 0);
            if (tx->bytes != to->bytes || tx->bytes <= 4 || refs_x > 1 || refs_r > 1) continue;
          }
          /* The kernels are elementwise over the output's index: the input must have the
           * output's shape (broadcast inputs are read at other indices). */
          if (!same_shape(tx, to) || tx->bytes == 0) continue;
          /* Nobody may read the group's old values after this operator... */
          if (w.group_last[r] != k || (w.flags[r] & LT_GROUP_GOUT)) continue;
          /* ...nor through another input slot of this operator. */
          bool other = false;
          for (int32_t i = 0; i < op->n_inputs; i++)
            if (i != c && op->inputs[i] >= 0 && w.root[op->inputs[i]] == r) other = true;
          if (other) continue;
        } else {
          /* Data unmodified: the output is the input's bytes; sizes must agree. */
          if (tx->bytes != to->bytes) continue;
          if (tens[r].bytes < to->bytes) continue;
        }
        w.root[o] = r;
        tensor_plan[o].inplace_of = x;
        w.group_last[r] = AR_MAX(w.group_last[r], w.last_read[o]);
        if (w.flags[o] & LT_GOUT) w.flags[r] |= LT_GROUP_GOUT;
        /* TFLite: an aliased output is never allocated itself, so being unread does not pin
         * the group to the end of the invoke. */
        if (tfl && w.n_reads[o] == 0) tensor_plan[o].last_use = tensor_plan[o].first_use;
        break;
      }
    }
  }

  /* Planner buffers in execution order: graph inputs, variables and never-written outputs
   * before operator 0, then each operator's outputs and scratch. */
#define ADD_BUF(t_, cls_, alias_)                                                               \
  do {                                                                                          \
    ar_tensor_plan_t *tp_ = &tensor_plan[t_];                                                   \
    int b_ = ar_planner_add(p, tens[t_].bytes, tp_->first_use, tp_->last_use, (cls_),    \
                            (alias_), (t_));                                                    \
    if (b_ < 0) {                                                                               \
      rc = ar_errf(msg, msg_bytes, b_, "tensor %d (%s): planner refused the buffer: %s", t_,    \
                   tens[t_].name, ar_strerror(b_));                                      \
      goto out;                                                                                 \
    }                                                                                           \
    tp_->buffer = b_;                                                                           \
  } while (0)

  for (uint32_t i = 0; i < sg->n_inputs; i++) {
    int32_t t = sg->inputs[i];
    if (t >= 0 && t < nt && tensor_plan[t].home == AR_HOME_ARENA && tensor_plan[t].buffer < 0)
      ADD_BUF(t, AR_BUF_ARENA, -1);
  }
  for (int32_t t = 0; t < nt; t++) {
    ar_tensor_plan_t *tp = &tensor_plan[t];
    if (tp->buffer >= 0) continue;
    if (tp->home == AR_HOME_PERSISTENT && !tp->folded) ADD_BUF(t, AR_BUF_PERSISTENT, -1);
    else if (tp->home == AR_HOME_ARENA && w.producer[t] < 0) ADD_BUF(t, AR_BUF_ARENA, -1);
  }
  for (int32_t k = 0; k < no; k++) {
    /* At-use operators of this step first: they run right before operator k. */
    for (int32_t d = at_use_head[k]; d >= 0; d = at_use_next[d]) {
      int32_t t = sg->operators[d].outputs[0];
      if (tensor_plan[t].home == AR_HOME_ARENA && tensor_plan[t].buffer < 0) ADD_BUF(t, AR_BUF_ARENA, -1);
      if (opt->scratch_bytes != NULL && opt->scratch_bytes[d] > 0) {
        int b = ar_planner_add(p, opt->scratch_bytes[d], k, k, AR_BUF_SCRATCH, -1, d);
        if (b < 0) {
          rc = ar_errf(msg, msg_bytes, b, "operator %d (%s): scratch of %llu bytes refused: %s", d,
                       ar_op_name(sg->operators[d].op), (unsigned long long)opt->scratch_bytes[d],
                       ar_strerror(b));
          goto out;
        }
        scratch_buf[d] = b;
      }
    }
    if (mode[k] == AR_OPMODE_AT_USE || mode[k] == AR_OPMODE_ELIDED) continue;
    const ar_operator_t *op = &sg->operators[k];
    for (int32_t j = 0; j < op->n_outputs; j++) {
      int32_t t = op->outputs[j];
      if (t < 0 || tensor_plan[t].buffer >= 0) continue;
      ar_tensor_plan_t *tp = &tensor_plan[t];
      if (tp->home == AR_HOME_PERSISTENT && tp->folded) {
        tp->first_use = k;
        tp->last_use = last_step;
        ADD_BUF(t, AR_BUF_PERSISTENT, -1);
      } else if (tp->home == AR_HOME_ARENA) {
        int32_t alias = tp->inplace_of >= 0 ? tensor_plan[tp->inplace_of].buffer : -1;
        ADD_BUF(t, AR_BUF_ARENA, alias);
      }
    }
    if (!folded[k] && opt->scratch_bytes != NULL && opt->scratch_bytes[k] > 0) {
      int b = ar_planner_add(p, opt->scratch_bytes[k], k, k, AR_BUF_SCRATCH, -1, k);
      if (b < 0) {
        rc = ar_errf(msg, msg_bytes, b, "operator %d (%s): scratch of %llu bytes refused: %s", k,
                     ar_op_name(op->op), (unsigned long long)opt->scratch_bytes[k],
                     ar_strerror(b));
        goto out;
      }
      scratch_buf[k] = b;
    }
  }
#undef ADD_BUF
  if (op_folded)
    for (int32_t k = 0; k < no; k++) op_folded[k] = folded[k];

out:
  free(w.producer);
  free(w.last_read);
  free(w.first_read);
  free(w.n_reads);
  free(w.root);
  free(w.group_last);
  free(w.flags);
  free(folded);
  free(mode);
  free(step);
  free(at_use_next);
  free(at_use_head);
  return rc;
}
