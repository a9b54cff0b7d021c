/* ar_lifetimes.h - from an execution plan to planner buffers: lifetimes, classes, in-place.
 *
 * Walks subgraph 0 in stored order (operator k = step k) and adds one planner buffer per
 * non-constant tensor, plus one scratch buffer per operator that asked for one. Two conventions:
 *
 *  AR_LIFETIMES_TFLITE  TFLite's ArenaPlanner: graph inputs and outputs live for the whole invoke;
 *     an operator's inputs and outputs overlap at that operator; in-place only where TFLite allows
 *     it (ADD/SUB/MUL/DIV output over an input of equal byte size > 4 B whose only consumer is this
 *     operator; RESHAPE/SQUEEZE/EXPAND_DIMS outputs alias their input); never graph inputs/outputs.
 *  AR_LIFETIMES_ARENAD  the daemon's default: inputs are copied in before each invoke, so a graph
 *     input dies after its last reader; in-place widened to every elementwise op where safe (unary
 *     RELU/RELU6/LOGISTIC/HARD_SWISH, PRELU, broadcasting binary ops whose output has the
 *     input's shape), never for graph outputs.
 *
 * Both: DEQUANTIZE/DENSIFY whose inputs are constants (or folded) produce AR_BUF_PERSISTENT
 * tensors, folded once at place time and not run at invoke. Variables live in the state slot
 * (AR_HOME_STATE, no planner buffer).
 *
 * Weights kept as stored (weights_stored, the interpreter's AR_WEIGHTS_STORED): a DEQUANTIZE from
 * FLOAT16 of a constant (or of a folded tensor, e.g. a DENSIFY output) is not folded. It runs at
 * invoke "at use": just before the first operator that reads its output, at that operator's step,
 * so its fp32 output is an ordinary arena tensor living from that step to its last reader (a
 * short-lived widened copy, in cache when the reader runs) instead of a persistent one; the fp16
 * bytes stay in the model's mapping. Execution order = step order, ties broken as "at-use
 * operators first, in stored order, then the reader", so lifetimes and the run agree.
 * A sparse 1x1 filter's DENSIFY (-> DEQUANTIZE) chain whose CONV_2D reads the sparse constant as
 * stored, and an fp16 DEQUANTIZE whose readers all read the fp16 constant as stored
 * (ar_kernel_reads_f16), are "elided" by the interpreter (ar_lifetime_options_t.elided): they
 * never run and their outputs get no buffer at all. So is an expansion 1x1 CONV_2D that runs fused
 * inside the DEPTHWISE_CONV_2D reading its output (ar_interp_options_t.fuse): that operator reads
 * the conv's input instead (ar_lifetime_options_t.extra_input), which then lives until it runs.
 */
#ifndef AR_LIFETIMES_H
#define AR_LIFETIMES_H

#include <stdbool.h>
#include <stdint.h>

#include "loader/ar_model.h"
#include "planner/ar_planner.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ar_lifetimes { AR_LIFETIMES_TFLITE = 0, AR_LIFETIMES_ARENAD = 1 } ar_lifetimes_t;

/* "tflite" / "arenad"; parse returns 0 or AR_EINVAL. */
const char *ar_lifetimes_name(ar_lifetimes_t l);
int ar_lifetimes_parse(const char *name, ar_lifetimes_t *out);

/* How one tensor of the subgraph is held. */
typedef enum ar_tensor_home {
  AR_HOME_NONE = 0,       /* not used by any operator nor a graph input/output */
  AR_HOME_CONSTANT = 1,   /* read-only data in the model mapping */
  AR_HOME_ARENA = 2,      /* planner buffer (AR_BUF_ARENA), possibly an alias */
  AR_HOME_PERSISTENT = 3, /* planner buffer (AR_BUF_PERSISTENT): folded constant */
  AR_HOME_STATE = 4,      /* a variable tensor: a piece of the state slot (ar_interp_state_piece),
                           * no planner buffer */
} ar_tensor_home_t;

typedef struct ar_tensor_plan {
  ar_tensor_home_t home;
  int32_t buffer;          /* planner buffer index, -1 unless ARENA/PERSISTENT */
  int32_t first_use, last_use;
  bool folded;             /* produced at place time by a folded DEQUANTIZE/DENSIFY */
  int32_t inplace_of;      /* tensor whose bytes this one reuses, -1 if none */
  bool at_use;             /* ARENA tensor written by an at-use DEQUANTIZE (weights_stored) */
} ar_tensor_plan_t;

/* How operator k of subgraph 0 runs (ar_lifetimes_op_modes; the interpreter and
 * ar_lifetimes_build share the rule). */
typedef enum ar_op_mode {
  AR_OPMODE_INVOKE = 0,   /* at invoke, at its own step k */
  AR_OPMODE_FOLDED = 1,   /* once at place (DEQUANTIZE/DENSIFY of constants or folded tensors) */
  AR_OPMODE_AT_USE = 2,   /* weights_stored: at invoke, right before its first reader, at that
                           * reader's step (never run if nothing reads its output) */
  AR_OPMODE_ELIDED = 3,   /* never runs and its outputs have no bytes: the DENSIFY (-> DEQUANTIZE)
                           * of a sparse filter that its one reader, a CONV_2D, takes as stored
                           * (the interpreter decides, ar_kernel_sparse_filter_check), or an fp16
                           * DEQUANTIZE whose readers all take the fp16 constant as stored
                           * (ar_kernel_reads_f16), or an expansion CONV_2D fused into the
                           * DEPTHWISE_CONV_2D that reads its output */
} ar_op_mode_t;

typedef struct ar_lifetime_options {
  ar_lifetimes_t convention;
  bool inplace;                      /* false: no in-place at all (every tensor its own buffer) */
  const uint64_t *scratch_bytes;     /* per operator (n_operators entries), or NULL for none */
  const ar_tensor_t *tensors;        /* n_tensors entries replacing the subgraph's tensors (dims,
                                      * bytes after ar_interp_resize_input), or NULL: stored ones */
  bool weights_stored;               /* fp16 DEQUANTIZE of constants runs at use (see above) */
  const bool *elided;                /* per operator (n_operators entries): AR_OPMODE_ELIDED, or NULL
                                      * for none */
  const int32_t *extra_input;        /* per operator (n_operators entries): a tensor it also reads at
                                      * its step (-1: none), or NULL for none: a DEPTHWISE_CONV_2D
                                      * running an elided expansion conv reads that conv's input */
  int32_t subgraph;                  /* the subgraph to walk (0, the main graph, by default; a
                                      * control-flow child's own plan otherwise) */
  const bool *state_alias;           /* per tensor (n_tensors entries), or NULL for none: a
                                      * READ_VARIABLE output that reads its variable's bytes in place
                                      * (AR_HOME_STATE, no buffer, never an in-place target) */
} ar_lifetime_options_t;

/* The mode of every operator of subgraph 0 (n_operators entries of `mode` and `step`): FOLDED
 * for DEQUANTIZE/DENSIFY whose inputs are all constants or folded outputs; with weights_stored,
 * AT_USE for a DEQUANTIZE whose one input is a FLOAT16 constant or folded tensor and whose output
 * (FLOAT32) is not a graph output; INVOKE otherwise. step[k] is the step operator k runs at: k,
 * or for AT_USE the lowest index of the operators reading its output (-1: nobody does). ELIDED
 * (step -1) where `elided` (n_operators entries, may be NULL) says so: their outputs count as
 * constants without bytes (AR_HOME_CONSTANT, no data). `tensors` as in ar_lifetime_options_t
 * (NULL: the stored ones). Errors: AR_EINVAL, AR_ENOMEM, AR_EMODEL (a tensor index out of range). */
int ar_lifetimes_op_modes(const ar_model_t *model, const ar_tensor_t *tensors, bool weights_stored,
                          const bool *elided, ar_op_mode_t *mode, int32_t *step);
/* Same for subgraph `subgraph` of the model. */
int ar_lifetimes_op_modes_sg(const ar_model_t *model, int32_t subgraph, const ar_tensor_t *tensors,
                             bool weights_stored, const bool *elided, ar_op_mode_t *mode, int32_t *step);

/* Fill `p` (empty planner) with the buffers of subgraph 0 of `model`; `tensor_plan` has
 * n_tensors entries and `scratch_buf` n_operators entries (-1 where no scratch), both caller-owned.
 * Operators that are folded (constant DEQUANTIZE/DENSIFY) are marked in `op_folded` (n_operators
 * entries, may be NULL). Errors: AR_EINVAL, AR_ENOMEM, AR_EMODEL (message names the tensor). */
int ar_lifetimes_build(const ar_model_t *model, const ar_lifetime_options_t *opt, ar_planner_t *p,
                       ar_tensor_plan_t *tensor_plan, int32_t *scratch_buf, bool *op_folded,
                       char *msg, size_t msg_bytes);

#ifdef __cplusplus
}
#endif
#endif /* AR_LIFETIMES_H */
