/* ar_interp.h - the interpreter: a loaded model plus its execution plan, run on the CPU.
 *
 * TFLite's phases, split so that the daemon can place memory itself:
 *   1. ar_interp_new      prepare: runtime tensor views from the stored shapes, each kernel's
 *                         prepare (checks, scratch sizes, state sizes), lifetimes, memory plan
 *                         (measure only). Unsupported shapes/options fail here, naming the operator.
 *   2. ar_interp_place    the caller hands an activation region (arena_bytes, non-persistent
 *                         tensors + scratch) and a persistent region (persistent_bytes: folded
 *                         constants such as DENSIFY outputs, and DEQUANTIZE(fp16) outputs with
 *                         fp32 weights; kernel state). Constant folding runs here, once. Regions
 *                         must be 64-byte aligned.
 *   3. ar_interp_invoke   runs the operators in stored order. No checks, no heap allocation.
 *
 * Memory (what the caller provides):
 *
 *   activation region (may be shared by models that never run at the same time)
 *   +--------------------------------------------------------------+
 *   | planned tensors + scratch at planner offsets                  |  ar_interp_arena_bytes()
 *   +--------------------------------------------------------------+
 *   persistent region (owned by this interpreter alone)
 *   +-------------------------------------------------------------------+
 *   | folded constants | per-node kernel state | default state slot      |  ar_interp_persistent_bytes()
 *   +-------------------------------------------------------------------+
 *   (the state slot: every variable tensor, resource variable and CALL_ONCE flag of the model,
 *   ar_interp_state_bytes; see "State slots" below)
 *   weights: read-only inside the model's file mapping (never copied). With stored weights (the
 *   default) fp16 weights stay there as fp16: a DEQUANTIZE of them whose readers all read fp16
 *   as stored (ar_kernel_reads_f16, e.g. CONV_2D's filter and bias) is elided and the readers
 *   get the fp16 constant; any other runs at invoke right before its reader, into an activation
 *   tensor that lives only until its last reader; a sparse 1x1 filter (TFLite sparsity +
 *   DENSIFY) stays sparse: its CONV_2D multiplies the stored form.
 *
 * Graph inputs: write them through ar_interp_input(i)->data after place and before each invoke
 * (with the `arenad` lifetime convention an input's bytes may be reused once it has been read, so
 * write inputs before every invoke). Graph outputs are valid after invoke until the next invoke of
 * any interpreter sharing the activation region.
 */
#ifndef AR_INTERP_H
#define AR_INTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ar_kernels.h"
#include "loader/ar_model.h"
#include "planner/ar_planner.h"
#include "interp/ar_lifetimes.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AR_ARENA_ALIGNMENT 64   /* bytes; TFLite's tensor alignment */

/* How constant weights stored in a narrower type than the kernels read are held (issue 12).
 *  AR_WEIGHTS_FP32    every DEQUANTIZE / DENSIFY of constants is folded at place into an fp32
 *                     (dense) copy in the persistent region (TFLite's behaviour).
 *  AR_WEIGHTS_STORED  weights stay as stored in the file mapping: fp16 constants feeding
 *                     DEQUANTIZE are widened when needed rather than kept widened (see
 *                     ar_lifetimes.h for how), and sparse 1x1 filters are read in their stored
 *                     form (DENSIFY elided, ar_interp_op_elided), so the persistent region holds
 *                     packed/state data. */
typedef enum ar_weights { AR_WEIGHTS_FP32 = 0, AR_WEIGHTS_STORED = 1 } ar_weights_t;

/* "fp32" / "stored"; parse returns 0 or AR_EINVAL (NULL or another name). */
const char *ar_weights_name(ar_weights_t w);
int ar_weights_parse(const char *name, ar_weights_t *out);

typedef struct ar_interp_options {
  ar_strategy_t strategy;      /* default AR_STRATEGY_BEST */
  ar_lifetimes_t lifetimes;    /* default AR_LIFETIMES_ARENAD */
  bool inplace;                /* default true: apply the convention's in-place rules */
  int32_t threads;             /* threads one invoke may use (kernels/ar_parallel.h), default 1;
                                * with more than 1 and no `pool`, the interpreter starts a pool of
                                * its own (threads - 1 helpers) at its first place. OpenBLAS is
                                * always kept single-threaded: the pool splits the GEMMs. */
  ar_threadpool_t *pool;       /* a pool to share (the daemon's), borrowed: it must outlive the
                                * interpreter; its thread count then replaces `threads`. NULL by
                                * default. */
  ar_weights_t weights;        /* default AR_WEIGHTS_STORED */
  bool fuse;                   /* default true: inverted-residual fusion. An expansion 1x1 CONV_2D
                                * (ar_kernel_fuse_ir_check) whose output of at least
                                * AR_INTERP_FUSE_MIN_BYTES per thread (`threads`) is read only by a
                                * DEPTHWISE_CONV_2D runs
                                * inside that depthwise's node, band by band (kernels/fused_ir.c):
                                * the conv is elided (ar_interp_op_fused) and its output gets no
                                * buffer; outputs are bit-identical to fuse = false. It also
                                * folds a PAD read only by a depthwise into that depthwise
                                * (ar_interp_op_pad_folded). */
  int64_t max_while_iterations;  /* default AR_INTERP_MAX_WHILE_ITERATIONS (0 or less: that): a
                                * WHILE whose condition still holds after this many iterations
                                * ends the invoke with AR_ESTATE, ar_interp_last_error naming it */
  int64_t max_while_us;        /* default 0 (none): a WHILE still iterating this many microseconds
                                * (CLOCK_MONOTONIC, checked before each iteration) ends the invoke
                                * with AR_ETIMEDOUT, ar_interp_last_error naming it - an iteration
                                * bound alone lets a heavy body hold a worker for minutes */
  const int *cancel;           /* default NULL; when set and *cancel is non-zero (read atomically,
                                * written by another thread) a WHILE stops before its next
                                * iteration: AR_ETIMEDOUT "... stopped: the invoke was cancelled"
                                * (arenad sets it when its drain deadline passes) */
} ar_interp_options_t;

#define AR_INTERP_MAX_WHILE_ITERATIONS (1 << 20)

/* Smallest expansion-conv output (bytes per thread of an invoke) worth fusing: below it each
 * thread's part of the map stays in its core's L2 between the two operators anyway (each thread
 * computes the same rows of both), and the fused form measured no faster (bench/invoke
 * --fuse-compare: 56x56x144 at 2 threads). */
#define AR_INTERP_FUSE_MIN_BYTES (1024u * 1024u)

typedef struct ar_interp ar_interp_t;

/* Fill *opt with the defaults above. */
void ar_interp_options_default(ar_interp_options_t *opt);

/* Prepare and plan subgraph 0 of `model` (which must outlive the interpreter), and every subgraph
 * its control-flow operators run (below). Errors:
 * AR_EUNSUPPORTED with every operator that cannot run listed in one message (see
 * ar_interp_unsupported), AR_ESHAPE / AR_EINVAL from a kernel's prepare (message names the operator),
 * AR_EOVERFLOW, AR_ENOMEM, AR_EPLAN. */
int ar_interp_new(const ar_model_t *model, const ar_interp_options_t *opt, ar_interp_t **out,
                  char *msg, size_t msg_bytes);
void ar_interp_free(ar_interp_t *in);

/* Every operator of subgraph 0 that cannot run: kept unrun by ar_model_load_describe (unknown op
 * or version, more operands than a node holds), without a kernel, or refused by its kernel's
 * prepare (with AR_EUNSUPPORTED: an option, dtype or shape form it does not implement - the ones
 * ar_interp_new lists in one refusal, ar_unsupported_format; here also any other prepare or
 * control-flow error, e.g. an arity or shape error, which ar_interp_new stops at: the walk goes
 * on, so every operator is judged). Each entry's option says why (the kernel's message). Fills
 * at most `max` entries of `list` in operator order and writes how many to *n_out (0: everything
 * can run). Returns 0 when the model prepares, AR_EUNSUPPORTED when the list is not empty, or
 * another error of ar_interp_new (out of memory, planning; the list then holds what was found).
 * `msg` gets the refusal listing them. */
int ar_interp_unsupported(const ar_model_t *model, const ar_interp_options_t *opt,
                          ar_unsupported_t *list, int32_t max, int32_t *n_out, char *msg,
                          size_t msg_bytes);

/* Where a model's weights are, in bytes (issue 12's figures; budget table, arenactl plan, stats):
 *   weights_bytes  constant bytes read in place from the model mapping (never copied)
 *   folded_bytes   persistent bytes of constants folded at place (fp32 widened copies of fp16
 *                  weights with AR_WEIGHTS_FP32; densified sparse weights in both modes)
 *   packed_bytes   persistent bytes of kernel state (packed weights, tables, plans; each 64-byte
 *                  aligned) - with AR_WEIGHTS_STORED, this and folded_bytes are the whole
 *                  persistent region (plus variables)
 *   widened_bytes  activation bytes of the fp16 weights widened at use (stored weights): the sum
 *                  of those tensors; they live one operator at a time inside arena_bytes */
typedef struct ar_weight_figures {
  uint64_t weights_bytes, folded_bytes, packed_bytes, widened_bytes;
} ar_weight_figures_t;
void ar_interp_weight_figures(const ar_interp_t *in, ar_weight_figures_t *out);

/* Bytes of the activation region this plan needs (tensors + scratch). */
uint64_t ar_interp_arena_bytes(const ar_interp_t *in);
/* Bytes of the persistent region (folded constants + kernel state, 64-byte aligned). */
uint64_t ar_interp_persistent_bytes(const ar_interp_t *in);
/* The planner holding the plan (buffers, offsets, figures) for reports; owned by `in`. */
const ar_planner_t *ar_interp_planner(const ar_interp_t *in);
/* The tensor -> buffer map (per tensor of subgraph 0), owned by `in`. */
const ar_tensor_plan_t *ar_interp_tensor_plan(const ar_interp_t *in);
const ar_model_t *ar_interp_model(const ar_interp_t *in);
/* The options the interpreter was prepared with (strategy, lifetime convention, in-place). */
const ar_interp_options_t *ar_interp_options(const ar_interp_t *in);

/* Place the plan: `activation` (>= arena_bytes) and `persistent` (>= persistent_bytes), both
 * 64-byte aligned, owned by the caller and kept alive until free. Folds constants and runs kernel
 * init. Can be called again with other regions, either or both moved: folding and init run again
 * from the model's constants, so nothing of the old places is read (they may overlap the new ones
 * or hold anything) and no pointer into them survives - except the state: a place never writes a
 * slot bound with ar_interp_bind_state, and keeps the default slot's bytes, which it resets only at
 * the first place (after a re-plan that changed pieces: those pieces only, "State slots"). A
 * caller moving the persistent region moves the default slot's ar_interp_state_bytes bytes at
 * ar_interp_default_state_offset with it
 * (the daemon's compaction slides them; ar_interp_place_owned copies them). The daemon's pool
 * compaction relies on this (tests/check_compact.c). Also sets OpenBLAS's (process-wide) thread count to
 * 1, starts the interpreter's own thread pool the first time (options `threads` > 1 without a
 * `pool`), and runs one small product on the calling thread - on every thread of its own pool at
 * once - so that OpenBLAS maps its lazily allocated work buffers here rather than in an invoke.
 * Errors: AR_EINVAL (too small / misaligned, message says which), those of ar_threadpool_new. */
int ar_interp_place(ar_interp_t *in, void *activation, uint64_t activation_bytes,
                    void *persistent, uint64_t persistent_bytes, char *msg, size_t msg_bytes);

/* Run one small OpenBLAS product on every thread of `pool` at once (ar_threadpool_run_all), so that
 * OpenBLAS maps the work buffers concurrent products need before any invoke. For a pool shared by
 * several interpreters (the daemon's): its owner calls this once; an interpreter warms only a pool
 * of its own at place. NULL: the calling thread only. Not for invoke time. */
void ar_interp_warm_threads(ar_threadpool_t *pool);

/* Convenience for offline tools and tests: allocate both regions with aligned_alloc, owned by
 * `in`, and place. */
int ar_interp_place_owned(ar_interp_t *in, char *msg, size_t msg_bytes);

/* Graph inputs/outputs (subgraph input/output order). Views stay valid for the interpreter's life;
 * data pointers change only on place. */
int32_t ar_interp_n_inputs(const ar_interp_t *in);
int32_t ar_interp_n_outputs(const ar_interp_t *in);
ar_tview_t *ar_interp_input(ar_interp_t *in, int32_t i);
const ar_tview_t *ar_interp_output(const ar_interp_t *in, int32_t i);
/* Name of graph input/output i (tensor name). */
const char *ar_interp_input_name(const ar_interp_t *in, int32_t i);
const char *ar_interp_output_name(const ar_interp_t *in, int32_t i);

/* Run every operator once, the heavy kernels split over the interpreter's thread pool (counted
 * as one thread at work from start to end: ar_threadpool_enter). Returns 0, or AR_ESTATE if not
 * placed or a resize / shape value is waiting for ar_interp_prepare. Never allocates heap memory. */
int ar_interp_invoke(ar_interp_t *in);

/* Why the last invoke failed ("" when it did not): e.g. "subgraph 0, operator 3 (WHILE): the
 * condition (subgraph 1) still holds after 1048576 iterations (max_while_iterations)". The buffer
 * belongs to the main graph's interpreter, written without allocating. */
const char *ar_interp_last_error(const ar_interp_t *in);

/* ---- Control flow (WHILE, IF, CALL_ONCE) and resource variables (issue 27).
 *
 * Every subgraph an operator runs gets a child interpreter of its own (a subgraph run by two
 * operators: two children), prepared and planned like the main graph; its whole activation plan
 * is this operator's scratch buffer (planned in the parent's arena, live only at the operator's
 * step: so it overlaps the parent's tensors dead at that step, and the children of one operator
 * share it: IF's branches, WHILE's cond and body), sized as the largest child's arena; its
 * persistent region is part of the operator's state. Children read their inputs where the parent
 * has them (their input views are pointed there at every run; never an allocation).
 * WHILE keeps each loop value in two buffers, its output (A) and a second one (B) in its scratch
 * past the children's arena, and swaps them: cond and body read the values where they are (the
 * WHILE's inputs in the first iteration), the body's output views point at the other buffer so
 * its operators write the next values there directly, then the two exchange roles - no copy per
 * iteration. A value the body passes through (its output i is its input i) stays in A. A body
 * output whose view cannot be pointed elsewhere (a constant, a variable or other state, a body
 * input j != i, the same tensor as an earlier output, in an in-place group, written by nothing)
 * is copied into the other buffer after the body: those bytes are copy_bytes_per_iteration. After
 * the loop, values left in B (an even number of iterations) or in the inputs (none) are copied
 * into A once. IF's branches read its inputs 1.. in place and the taken branch's outputs are
 * copied out. CALL_ONCE runs its
 * init subgraph at the first invoke of a state slot (its "ran" flag is in the slot; a reset
 * re-arms it).
 * Resource variables (VAR_HANDLE with the same container and shared_name, in any subgraph, are
 * one variable) live in the state slot, each sized from the ASSIGN_VARIABLE values writing it
 * (all of one dtype and shape; a variable nothing assigns is refused at ar_interp_new, naming
 * it). */
typedef struct ar_cf_info {
  ar_op_t op;                   /* AR_OP_WHILE, AR_OP_IF or AR_OP_CALL_ONCE */
  int32_t n_children;
  int32_t subgraph[2];          /* cond, body / then, else / init */
  uint64_t child_arena_bytes[2], child_persistent_bytes[2];
  uint64_t arena_bytes;         /* the largest child arena (the start of the operator's scratch) */
  uint64_t loop_bytes;          /* WHILE: the second loop-value buffers after it in the scratch
                                 * (64-byte aligned each; none for a value passed through) */
  uint64_t state_bytes;         /* the operator's state: the children's persistent regions */
  uint64_t copy_bytes_per_iteration;  /* WHILE: bytes copied per iteration (the loop values whose
                                       * body output cannot be pointed at the other buffer; 0 when
                                       * every value swaps or passes through);
                                       * IF: bytes copied per invoke (the outputs) */
  int64_t last_iterations;      /* WHILE: iterations of the last invoke */
  const ar_interp_t *child[2];
} ar_cf_info_t;
/* Operator k's control-flow figures: 0, or AR_EINVAL when k is not a control-flow operator. */
int ar_interp_control_flow(const ar_interp_t *in, int32_t k, ar_cf_info_t *out);
/* The subgraph this interpreter runs (0 for the main graph). */
int32_t ar_interp_subgraph(const ar_interp_t *in);
/* Resource variables of the model (main graph's interpreter): count, and variable i's key, size
 * and offset in the persistent region (inside the default state slot). */
int32_t ar_interp_n_resource_vars(const ar_interp_t *in);
int ar_interp_resource_var(const ar_interp_t *in, int32_t i, const char **container, const char **shared_name,
                           uint64_t *bytes, uint64_t *offset);

/* ---- State slots (issue 27): one block per stream.
 *
 * A model's state - every variable tensor of every subgraph (is_variable: LSTM, SVDF), every
 * resource variable, each CALL_ONCE's "ran" flag - is laid out in ONE block, each piece at its
 * natural alignment (its element size: a kernel must not assume more for state), the total
 * rounded up to 64. The interpreter owns a default slot (end of its persistent region); a caller may own
 * any number of others (sessions) and bind one before each invoke. Switching copies no state
 * byte: it rewrites the pointers of the views (and variables, flags) that live in the slot.
 * Kernels therefore read a variable tensor's data pointer at eval, never keep it from init.
 * All of these take the main graph's interpreter. */

/* Bytes of one state slot; 0 for a stateless model. */
uint64_t ar_interp_state_bytes(const ar_interp_t *in);
/* Make `slot` (ar_interp_state_bytes, 64-byte aligned, owned by the caller; NULL: the default
 * slot) the state the next invokes read and write, until another bind. Copies nothing, never
 * allocates, O(state pieces); a stateless model ignores it. Places keep the binding. Errors:
 * AR_EINVAL (misaligned; the binding is unchanged). */
int ar_interp_bind_state(ar_interp_t *in, void *slot);
/* Write a slot's initial state (NULL: the default slot): 0, or an int8 variable tensor's zero
 * point (TFLite's ResetVariableTensors), every CALL_ONCE re-armed (its init subgraph runs at this
 * slot's next invoke). Never allocates. A fresh caller-owned slot must be reset before its first
 * invoke. */
void ar_interp_reset_state(ar_interp_t *in, void *slot);
/* Pieces of the slot, for plan and stats reports: piece i's name (a tensor's name,
 * "container/shared_name" of a resource variable, "CALL_ONCE op K ran"), the subgraph it
 * belongs to, its offset in the slot and bytes. Errors: AR_EINVAL (no such piece). */
int32_t ar_interp_n_state_pieces(const ar_interp_t *in);
int ar_interp_state_piece(const ar_interp_t *in, int32_t i, const char **name, int32_t *subgraph, uint64_t *offset,
                          uint64_t *bytes);
/* The default slot: its offset in the persistent region, and where it is (NULL until placed). */
uint64_t ar_interp_default_state_offset(const ar_interp_t *in);
void *ar_interp_default_state(const ar_interp_t *in);
/* A resize whose prepare changes the size or place of a piece (a recurrent op's state follows its
 * input's batch: kernels/ar_kernel_check.h, ar_k_state_follows_batch) changes the layout at the
 * next place: the default slot gets the new layout's initial state, then every piece the old
 * layout held with the same bytes (same name, kind, subgraph; its offset may move) gets its old
 * bytes back - a resize keeps the state whose shape it leaves alone. An external slot is unbound
 * (the binding falls back to the default: a slot of the old layout cannot hold the new one; carry
 * it with ar_interp_carry_state). The generation counts such places; the note names the pieces
 * that place reset ("state reset: NAME (A -> B bytes), ..."; A is 0 for a piece the old layout
 * lacked), "" when the last prepare's place reset nothing (the note is cleared by each prepare). */
uint32_t ar_interp_state_generation(const ar_interp_t *in);
/* Between an ar_interp_prepare and the place that follows: whether that place will change the
 * state's layout (a piece's size or offset; the generation then counts it). false before the
 * first place and when the prepare kept the layout. Lets a caller refuse new shapes that would
 * change the state every session shares (arenad: only an admin may). */
bool ar_interp_state_layout_pending(const ar_interp_t *in);
const char *ar_interp_state_note(const ar_interp_t *in);
/* Write slot `dst` (ar_interp_state_bytes, the current layout) from slot `src` written in
 * generation `src_generation`: the current generation copies every byte; the one before it (the
 * layout before the last change) carries piece by piece as a place carries the default slot
 * (unchanged pieces copied, the others at their initial state); any other generation gives dst
 * the initial state and returns AR_ESTATE. dst and src must not overlap. Never allocates; O(state
 * bytes + pieces^2). Not while an invoke runs on the interpreter. */
int ar_interp_carry_state(ar_interp_t *in, void *dst, const void *src, uint32_t src_generation);

/* Whether tensor t (of this interpreter's subgraph) is a READ_VARIABLE output that reads its
 * variable's bytes in place (no buffer, no copy): nothing writes the variable (ASSIGN_VARIABLE,
 * or a control-flow operator whose subgraphs might) between the read and t's last reader, and t
 * is not a graph output. Otherwise READ_VARIABLE copies into a planned buffer. */
bool ar_interp_reads_in_place(const ar_interp_t *in, int32_t t);

/* Number of operators executed per invoke (folded constant operators excluded). */
int32_t ar_interp_runtime_operators(const ar_interp_t *in);

/* Multiply-accumulates of one invoke (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, transpose
 * conv), for GFLOP/s reports. */
uint64_t ar_interp_macs(const ar_interp_t *in);

/* Multiply-accumulates of operator k at invoke (as ar_interp_macs counts them): a depthwise with
 * an expansion conv fused into it counts the conv's too; 0 for an operator that does not run
 * (folded, elided, fused or PAD-folded into another), for one without a known count, and for a
 * bad index. Per-operator GFLOP/s in profiles (arenactl bench --profile). */
uint64_t ar_interp_op_macs(const ar_interp_t *in, int32_t k);

/* Same as ar_interp_invoke, but adds each executed operator's wall time (ns, CLOCK_MONOTONIC) to
 * op_ns[k] (n_operators entries, caller-owned and zeroed by the caller): two clock_gettime calls
 * around each operator's eval in the serial loop, nothing allocated. A separate function, so the
 * plain invoke pays nothing for it. Operators that do not run (folded at place, elided, fused or
 * PAD-folded into operator K: ar_interp_op_fused / ar_interp_op_pad_folded) get no time; K's time
 * includes theirs. An at-use DEQUANTIZE gets its own time. For profiles only. */
int ar_interp_invoke_profiled(ar_interp_t *in, uint64_t *op_ns);

/* Operators of subgraph 0 (folded ones included), operator k's node (shapes, scratch, state;
 * NULL for a bad index), and whether operator k is folded at place (not run at invoke). */
int32_t ar_interp_n_operators(const ar_interp_t *in);
const ar_node_t *ar_interp_node(const ar_interp_t *in, int32_t k);
bool ar_interp_op_folded(const ar_interp_t *in, int32_t k);
/* Whether operator k is a DEQUANTIZE of fp16 weights run at use (stored weights): at invoke,
 * right before the first operator that reads its output, into a short-lived activation tensor. */
bool ar_interp_op_at_use(const ar_interp_t *in, int32_t k);
/* Whether operator k is elided (stored weights): the DENSIFY (or the DEQUANTIZE after it) of a
 * sparse 1x1 filter that its CONV_2D reads as stored (kernels/sparse_conv.c; the conv's node
 * shows the sparse constant as input 1), or an fp16 DEQUANTIZE whose readers all read the fp16
 * constant as stored (ar_kernel_reads_f16; their nodes show it in that slot). It never runs and
 * its output has no bytes. */
bool ar_interp_op_elided(const ar_interp_t *in, int32_t k);
/* Inverted-residual fusion (ar_interp_options_t.fuse): for an expansion CONV_2D k that runs inside
 * a DEPTHWISE_CONV_2D, that operator's index (k never runs by itself and its output tensor has no
 * bytes: AR_HOME_CONSTANT without data in the tensor plan); -1 for every other operator. The
 * depthwise's node shows the conv's node in node->fused, and its scratch holds the bands. */
int32_t ar_interp_op_fused(const ar_interp_t *in, int32_t k);
/* PAD folding (with ar_interp_options_t.fuse): for a float PAD k of rows and columns whose only
 * reader is a VALID DEPTHWISE_CONV_2D (ar_kernel_pad_fold_check), that operator's index (k never
 * runs and its output tensor has no bytes; the depthwise's node reads the PAD's input, with
 * node->folded_pad the zero rows and columns); -1 for every other operator. Outputs are
 * bit-identical to fuse = false (tests/check_threads.c). */
int32_t ar_interp_op_pad_folded(const ar_interp_t *in, int32_t k);

/* ---- Resizable inputs and shapes that depend on values (TFLite ResizeInputTensor +
 * AllocateTensors, and its "dynamic tensors").
 *
 * A graph input whose shape_signature has -1 in some dims can take another size there:
 * ar_interp_resize_input records it, ar_interp_prepare re-runs every kernel's prepare in infer
 * mode (each writes its inferred output shapes), rebuilds lifetimes and re-plans; the caller then
 * places again (arena_bytes/persistent_bytes may have changed, in either direction: the plan is
 * always for the current shapes, never the largest seen) and writes the inputs. Invokes with
 * unchanged shapes do nothing of this and allocate nothing.
 *
 * A graph input read as a shape operand (PAD paddings, RESHAPE shape, STRIDED_SLICE begin/end/
 * strides, SLICE begin/size, TILE multiples, BROADCAST_TO shape, TRANSPOSE perm, EXPAND_DIMS axis,
 * RESIZE_NEAREST_NEIGHBOR size, SPLIT axis, SPLIT_V size_splits/axis, TRANSPOSE_CONV
 * output_shape) sets shapes by its value: give that value
 * with ar_interp_set_shape_input before the invoke (it is kept in a snapshot prepare reads); a
 * change marks the interpreter for ar_interp_prepare like a resize. A shape operand computed in
 * the graph (FILL dims, RANGE start/limit/delta, TOPK_V2 k and the operands above) is computed at
 * prepare when it follows from input shapes and constants alone (SHAPE of an input, then GATHER,
 * ADD, CONCATENATION, ... of that and of constants: interp/ar_prepval.c), so a resize re-plans
 * those outputs too; one that reads a graph input's values or anything computed at invoke is
 * refused at ar_interp_new (AR_EUNSUPPORTED naming the operator and operand: TFLite would make
 * its output a dynamic tensor). The flow before each invoke:
 *
 *   resize_input / set_shape_input as needed;
 *   if (ar_interp_needs_prepare(in)) { ar_interp_prepare(); ar_interp_place(); }
 *   write inputs; ar_interp_invoke();
 */

/* Whether `dims` (rank entries) is a valid shape for graph input i of `model`: same rank, every
 * dim >= 1, dims differing from the stored shape only where shape_signature is -1, at most
 * 2^31 - 1 elements. Reads only the model (safe from any thread). Errors: AR_EINVAL (no such
 * input), AR_ESHAPE, AR_EOVERFLOW, with a message naming the input and dim. */
int ar_interp_check_input_shape(const ar_model_t *model, int32_t i, int32_t rank, const int32_t *dims,
                                char *msg, size_t msg_bytes);
/* True when graph input i has a -1 in its shape_signature. */
bool ar_interp_input_resizable(const ar_interp_t *in, int32_t i);
/* Give graph input i the shape `dims` (checked as above); marks the interpreter for
 * ar_interp_prepare when it differs from the current one. */
int ar_interp_resize_input(ar_interp_t *in, int32_t i, int32_t rank, const int32_t *dims, char *msg,
                           size_t msg_bytes);
/* True when graph input i's value sets shapes (a shape operand as listed above, at most 4096
 * bytes). */
bool ar_interp_input_sets_shape(const ar_interp_t *in, int32_t i);
/* The value (bytes = the input's byte size) of such an input for the next invoke; a change (or
 * the first value) marks the interpreter for ar_interp_prepare. Errors: AR_EINVAL, AR_ESHAPE. */
int ar_interp_set_shape_input(ar_interp_t *in, int32_t i, const void *data, uint64_t bytes, char *msg,
                              size_t msg_bytes);
/* True when a resize or a shape value needs ar_interp_prepare before the next invoke. */
bool ar_interp_needs_prepare(const ar_interp_t *in);
/* Propagate the current input shapes (and shape values) through every kernel's prepare, rebuild
 * lifetimes, re-plan. Unplaces the interpreter (invoke answers AR_ESTATE until the next place).
 * Allocates (the new plan); not for the invoke path. Errors: a kernel's AR_ESHAPE / AR_EINVAL /
 * AR_EUNSUPPORTED (message names the operator), AR_EOVERFLOW (a tensor beyond 2^31 - 1
 * elements), AR_ENOMEM, AR_EPLAN; the interpreter then stays unplaced until a prepare succeeds. */
int ar_interp_prepare(ar_interp_t *in, char *msg, size_t msg_bytes);

#ifdef __cplusplus
}
#endif
#endif /* AR_INTERP_H */
