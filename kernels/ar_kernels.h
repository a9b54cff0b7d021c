/* ar_kernels.h - CPU float32 kernels and the interface the interpreter drives them through.
 *
 * Kernels know nothing of the pool, the planner or the model file: they see ar_node_t, a view of
 * one operator with its input/output tensors already pointing at their bytes. Each op has:
 *   prepare(node): validate shapes/dtypes/options against TFLite's rules, check that the stored
 *                  output shape equals the inferred one (or, with node->infer_shapes, write the
 *                  inferred shape into the output view: ar_k_check_output_shape does both), and state how many scratch bytes (e.g.
 *                  im2col) and persistent state bytes the node needs. Fails with a message naming
 *                  the operator. Never touches tensor data (it is not placed yet), except that
 *                  constant inputs (is_constant) may be read.
 *   init(node):    optional; runs once after placement with node->state valid (e.g. pack weights).
 *   eval(node):    computes outputs. Runs blindly: no checks, no heap allocation, no locks.
 * All shapes are TFLite's: NHWC activations, OHWI conv filters, 1HW(I*M) depthwise filters.
 * Activations are float32, except where TFLite's float models carry other types through an op:
 * int32/int64 arithmetic, bool comparison outputs and SELECT_V2 conditions, CAST, ARG_MAX/MIN
 * indices (kernels/binary.c, unary.c, reduce.c), and the quantized (uint8 / int8) models, whose
 * kernels follow TFLite's builtin integer arithmetic (kernels/ar_quant.h; the elementwise, shape
 * and activation ops read per-tensor parameters through kernels/ar_qparams.h and keep their
 * lookup tables in node state). DEQUANTIZE (float16 -> float32) and DENSIFY are
 * evaluated by the interpreter at prepare time into persistent memory (constant folding), except
 * where the interpreter keeps weights as stored: a 1x1 CONV_2D then reads a sparse filter in its
 * stored form (ar_kernel_sparse_filter_check), and kernels that say so (ar_kernel_reads_f16) read
 * fp16 weights as stored.
 */
#ifndef AR_KERNELS_H
#define AR_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loader/ar_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The thread pool kernels split their work over (kernels/ar_parallel.h). */
typedef struct ar_threadpool ar_threadpool_t;

/* A tensor as the kernels see it at run time. */
typedef struct ar_tview {
  void *data;                  /* float32 (etc.) elements; NULL until placed */
  ar_dtype_t dtype;
  int32_t rank;
  int32_t dims[AR_MAX_RANK];
  uint64_t bytes;              /* product(dims) * dtype size */
  bool is_constant;            /* data is read-only constant (weights / folded) and valid at prepare */
  bool value_known;            /* not constant, but data holds the value prepare must use (a graph
                                * input that sets a shape: PAD paddings, RESHAPE shape) */
  const ar_sparsity_t *sparsity; /* for DENSIFY inputs */
  const ar_quant_t *quant;     /* the tensor's quantization (loader/ar_model.h), NULL when none;
                                * integer kernels read scales and zero points from here */
  const char *name;            /* the tensor's name (set by the interpreter; NULL in hand-built
                                * views), for prepare messages: "input 0 (tensor x) has dtype INT8" */
} ar_tview_t;

/* One operator ready to run. */
typedef struct ar_node {
  ar_op_t op;
  int32_t index;               /* operator index in the execution plan (for messages) */
  int32_t version;
  const ar_options_t *options;
  const uint8_t *custom_options; uint32_t custom_options_bytes;
  int32_t n_inputs, n_outputs;
  ar_tview_t **inputs;         /* n_inputs entries, NULL for an omitted optional input */
  ar_tview_t **outputs;        /* n_outputs entries. Both arrays belong to whoever built the node:
                                * the interpreter sizes them from the operator at ar_interp_new
                                * (any count the model file holds, no fixed limit); a kernel never
                                * assumes a largest count (per-input data goes in node state or
                                * scratch sized at prepare) */
  int32_t n_intermediates;     /* the operator's intermediate tensors (TFLite's integer LSTM keeps
                                * its gates' scales there): views with their quantization and name;
                                * no bytes (nothing writes or reads them), data NULL */
  ar_tview_t **intermediates;
  uint64_t scratch_bytes;      /* set by prepare; 0 = none */
  void *scratch;               /* valid during eval: planned scratch, lifetime [index, index] */
  uint64_t state_bytes;        /* set by prepare; persistent per-node state */
  void *state;                 /* valid from init on */
  int32_t threads;             /* threads an eval may use at once (ar_parallel_threads; 0 = 1):
                                * set before prepare, which sizes per-thread scratch with it */
  ar_threadpool_t *pool;       /* the pool ar_parallel_for splits eval's work over (NULL: all
                                * inline); it has at most `threads` threads. OpenBLAS itself
                                * always runs single-threaded inside a kernel. */
  bool infer_shapes;           /* prepare writes the inferred output shapes (dims, rank, bytes) into
                                * the output views instead of checking the stored ones: set by the
                                * interpreter when it re-prepares after an input resize */
  struct ar_node *fused;       /* DEPTHWISE_CONV_2D only, NULL otherwise: the expansion 1x1
                                * CONV_2D node whose output (this node's input 0) has no bytes;
                                * this node's prepare prepares it too and its eval computes it
                                * band by band into scratch (kernels/fused_ir.c; the interpreter
                                * decides which pairs, interp/ar_interp.c) */
  int32_t folded_pad[4];       /* DEPTHWISE_CONV_2D only, all 0 otherwise: zero rows above, below,
                                * zero columns left, right of a float PAD the interpreter folded
                                * into this node (interp/ar_interp.c); input 0 is then the PAD's
                                * input and the node's VALID padding applies to the padded size */
  int32_t folded_pad_channels; /* ADD only, 0 otherwise: input folded_pad_slot holds the PAD's input
                                * whose channels a folded PAD (interp/ar_interp.c) extended by this
                                * many zeros at the end; the other input and the output have them */
  int32_t folded_pad_slot;
  bool input_activated;        /* RELU / RELU6 only: the producer of input 0 applies this clamp as
                                * its fused activation (the interpreter set it, find_act_folds), so
                                * when the output shares the input's bytes nothing is left to do */
  void *sub;                   /* WHILE / IF / CALL_ONCE only, NULL otherwise: the interpreter's
                                * children running the subgraphs (opaque to kernels) */
  bool split_rows;             /* CONV_2D only: split the product by runs of output rows even when
                                * it has more columns than rows, because the DEPTHWISE_CONV_2D that
                                * alone reads the output splits rows (ar_kernel_dw_splits_rows; set
                                * by the interpreter): each thread's depthwise rows then read what
                                * its own core wrote. Only the split changes, never a value. */
  uint64_t stream_bytes;       /* set by prepare; 0 = none: bytes of per-stream state the kernel
                               * keeps from one invoke to the next where no tensor holds it (TFLM's
                               * spectral subtraction noise estimate). The interpreter makes it a
                               * piece of the state slot (interp/ar_state.c: "operator K (OP)
                               * state"), zero at a reset, bound per session like a variable tensor */
  void *stream;                /* valid at eval: the bound slot's bytes for it; kernels read the
                               * pointer at eval, never keep it from init (a bind moves it) */
} ar_node_t;

/* The kernels' declarative support list (the op table, `arenactl ops`, docs/ops.md): each kernel
 * states the (op versions, dtypes) combinations its prepare accepts, one ar_kernel_form_t each.
 * `in` is the dtype of the kernel's data input (input slot ar_kernel_support_t.in_slot: 0 for
 * most ops), `out` that of output 0, `w` that of the weights (slot w_slot: the filter of a
 * convolution, FULLY_CONNECTED's weights, PRELU's alpha) where it differs from `in` - float32
 * with int8 weights is the dynamic-range ("hybrid") form, int16 with int8 weights the int16x8 form
 * - and AR_KF_SAME otherwise (the weights, where the op has them, have in's dtype; ops without
 * weights always say AR_KF_SAME). Dtypes are ar_dtype_t values kept in int8_t. A form says what
 * prepare accepts; prepare may still refuse a node of that form for its shapes or options (a
 * MEAN over axes it lacks), and names what it refuses. Keep each list true: tests check it
 * against prepare (tests/check_kernels.c kernel_forms_*) and against the golden models. */
#define AR_KF_SAME ((int8_t)-1)
typedef struct ar_kernel_form {
  int8_t vmin, vmax;           /* op versions, inclusive */
  int8_t in, w, out;           /* ar_dtype_t of the data input, the weights (AR_KF_SAME), output 0 */
} ar_kernel_form_t;

typedef struct ar_kernel_support {
  const ar_kernel_form_t *forms;
  int32_t n_forms;
  int8_t in_slot;              /* input slot whose dtype is a form's `in` (SELECT_V2: 1, the values;
                                * TRANSPOSE_CONV: 2); -1 when the op has no data input (VAR_HANDLE:
                                * `in` is then AR_KF_SAME) */
  int8_t w_slot;               /* input slot of the weights, -1 when the op has none */
} ar_kernel_support_t;

/* ar_kernel_t.support from a static array of forms: AR_KSUPPORT(conv_forms, 0, 1). */
#define AR_KSUPPORT(forms_, in_slot_, w_slot_) \
  { (forms_), (int32_t)(sizeof(forms_) / sizeof((forms_)[0])), (in_slot_), (w_slot_) }
/* One form: versions v0..v1, dtypes as AR_DTYPE_ suffixes, e.g. AR_KF(1, 3, FLOAT32, FLOAT32);
 * with weights of another dtype AR_KFW(2, 2, FLOAT32, INT8, FLOAT32). */
#define AR_KF(v0, v1, in_, out_) { (v0), (v1), (int8_t)AR_DTYPE_##in_, AR_KF_SAME, (int8_t)AR_DTYPE_##out_ }
#define AR_KFW(v0, v1, in_, w_, out_) \
  { (v0), (v1), (int8_t)AR_DTYPE_##in_, (int8_t)AR_DTYPE_##w_, (int8_t)AR_DTYPE_##out_ }
/* The dtypes a kernel that only moves elements takes (any element size: it never reads a value),
 * as forms for versions v0..v1: the ones TFLite's data-movement kernels are declared for. */
#define AR_KF_DATA(v0, v1)                                                                     \
  AR_KF(v0, v1, FLOAT32, FLOAT32), AR_KF(v0, v1, FLOAT16, FLOAT16), AR_KF(v0, v1, INT32, INT32), \
  AR_KF(v0, v1, INT64, INT64), AR_KF(v0, v1, UINT8, UINT8), AR_KF(v0, v1, INT8, INT8),         \
  AR_KF(v0, v1, INT16, INT16), AR_KF(v0, v1, BOOL, BOOL)

typedef struct ar_kernel {
  const char *name;
  /* Returns 0 or AR_EUNSUPPORTED / AR_ESHAPE / AR_EINVAL with `msg` naming the operator, e.g.
   * "operator 7 (CONV_2D): filter shape [32,3,3,4] does not match input channels 3". */
  int (*prepare)(ar_node_t *node, char *msg, size_t msg_bytes);
  void (*init)(ar_node_t *node);   /* may be NULL */
  void (*eval)(const ar_node_t *node);
  ar_kernel_support_t support;     /* what prepare accepts (ar_kernel_form_t) */
} ar_kernel_t;

/* The kernel for `op`, or NULL when there is none. */
const ar_kernel_t *ar_kernel_for(ar_op_t op);

/* A form's dtypes as the op table writes them: "float32", "int8", "uint8->float32" (input ->
 * output where they differ), "float32+int8w" (weights of another dtype: hybrid), "int16+int8w"
 * (int16x8); in buf (32 bytes are enough), returned. */
const char *ar_kernel_form_label(const ar_kernel_form_t *f, char *buf, size_t n);

/* The form of `op`'s kernel that covers `version` with these dtypes (in, w, out as ar_dtype_t
 * values; w = AR_KF_SAME or in's dtype when the weights are like the input, or the op has none),
 * or NULL when the kernel declares none (or there is no kernel). */
const ar_kernel_form_t *ar_kernel_form_find(ar_op_t op, int version, int in, int w, int out);

/* The same for a node as the model stores it (the dtypes of its support slots and output 0):
 * whether the kernel declares what this node is. NULL when not (or a slot is missing). */
const ar_kernel_form_t *ar_kernel_node_form(const ar_node_t *node);

/* Stored weights (the interpreter's AR_WEIGHTS_STORED): whether input slot `input` of `node`, a
 * float32 tensor that the model widens from a float16 constant with a DEQUANTIZE, may be handed to
 * node's kernel as that float16 constant instead (dtype FLOAT16, the same dims, is_constant,
 * bytes = 2 per element, data in the model's mapping at any alignment). When every reader of such
 * a DEQUANTIZE answers yes, the interpreter elides it (it never runs and its output has no bytes)
 * and the readers' prepare, init and eval see the float16 view in that slot.
 * A kernel says yes by a case in this function (kernels/registry.c) calling its own predicate;
 * it must then give the same outputs bit for bit as with the widened float32 tensor (widening is
 * exact, so: the same fp32 values in the same order of operations), must not allocate at eval (a
 * widened copy, where a path needs one, goes in its scratch or state), and must keep working when
 * the float ISA level changes between prepare and eval (ar__f32_set_isa). Called before prepare,
 * with the node as the model stores it (float32 views, nothing placed); answers false for a
 * malformed node (prepare reports it). Today: CONV_2D filter and bias, FULLY_CONNECTED weights
 * and bias. */
bool ar_kernel_reads_f16(const ar_node_t *node, int32_t input);

/* Inverted-residual fusion: whether CONV_2D `conv` and DEPTHWISE_CONV_2D `dw`, whose input 0 is
 * conv's output 0 (read by nothing else: the interpreter checks that), can run as one node (dw with
 * dw->fused = conv, kernels/fused_ir.c): the conv computed in bands of rows into dw's scratch, each
 * band's depthwise rows right after, so conv's output tensor needs no bytes. Asked before prepare
 * with the nodes as the model stores them (nothing placed). Covered: float32 input and output, a
 * dense [O,1,1,I] filter (float32, or float16 read as stored) and float32/float16 bias, stride 1,
 * any fused activation; a float32 depthwise; where arenad's own GEMM runs at the float level in
 * force (kernels/sgemm.h: AVX-512F, or AVX2 + FMA + F16C; each conv output is the same FMA chain
 * in k order whatever band holds it, so the outputs are bit-identical to the unfused run). False
 * for anything else, including malformed nodes (prepare reports those). */
bool ar_kernel_fuse_ir_check(const ar_node_t *conv, const ar_node_t *dw);

/* Whether float DEPTHWISE_CONV_2D `dw` (prepared, not fused) splits its work over the pool by
 * runs of output rows, as opposed to runs of 16-channel blocks: the AVX-512F path splits channel
 * blocks on a map of fewer pixels than channels (a 1x1 expansion conv before it splits columns
 * there, kernels/gemm.c), except 3x3 filters on maps of AR_DW_ROWS_MIN_PIXELS pixels or more,
 * whose one-row halo costs less than reading channel-interleaved lines both cores wrote. The
 * interpreter then has the conv that feeds it split rows too (ar_node_t.split_rows). False for a
 * malformed or non-float node. */
bool ar_kernel_dw_splits_rows(const ar_node_t *dw);
#define AR_DW_ROWS_MIN_PIXELS 100

/* PAD folding: whether PAD `pad`, whose output 0 is input `slot` of `reader` and read by nothing
 * else (the interpreter checks that), can be left out, the reader reading the PAD's input. Asked
 * before prepare, with the nodes as the model stores them; the PAD must have float32 input and
 * output of rank 4 and constant int32 paddings [4,2]. Covered (TFLite's PAD fills a float tensor
 * with 0):
 * - a float32 DEPTHWISE_CONV_2D with VALID padding reading it as input 0, the PAD padding only H
 *   and W, by at most the filter's dilated extent minus 1 on each side (as SAME would): pads_out =
 *   rows above, below, columns left, right (dw->folded_pad). The depthwise's loops skip the taps
 *   outside the input, where the padded map held zeros (a multiply-add by 0 adds nothing to a
 *   finite sum).
 * - a float32 ADD of two operands of the same shape, the PAD appending zero channels only (the
 *   face detectors' residual shortcuts, [.., C] -> [.., C + k]): pads_out[0] = k (the ADD's
 *   folded_pad_channels, folded_pad_slot = slot); the ADD adds 0.0f to those channels itself.
 * False for anything else, including malformed nodes (prepare reports those). */
bool ar_kernel_pad_fold_check(const ar_node_t *pad, const ar_node_t *reader, int32_t slot, int32_t pads_out[4]);

/* Apply a TFLite fused activation to n floats in place (NONE, RELU, RELU_N1_TO_1, RELU6, TANH,
 * SIGN_BIT). */
void ar_apply_activation(float *x, size_t n, ar_activation_t act);

/* TFLite padding computation (kernels/padding.h semantics): for SAME, total padding
 * max((out-1)*stride + (filter-1)*dilation + 1 - in, 0), split with the odd one at the
 * bottom/right; for VALID 0. Returns the output size and writes the leading padding. */
int32_t ar_compute_padding(ar_padding_t padding, int32_t in, int32_t filter, int32_t stride,
                           int32_t dilation, int32_t *pad_before);

/* Whether CONV_2D or FULLY_CONNECTED `node` can run with input 1 being a sparse constant as the
 * model stores it (TFLite SparsityParameters, DENSIFY's input: dtype FLOAT16 or FLOAT32, dims the
 * dense [O,1,1,I] / [O,I], data = the stored values, bytes = their size, sparsity set), without
 * densifying it (kernels/sparse_conv.c). Covered: a 1x1 filter (any stride) or FC weights,
 * float32 input/bias/output, identity traversal order, input channels SPARSE_CSR with strictly
 * increasing indices (uint8/uint16/int32), at most one block dim (1..16 output or input channels,
 * stored innermost); the op's own shape rules run too (its prepare, on a copy of the node). Every
 * segment and index is checked against the shapes and the stored value count. Returns 0 when covered, else
 * AR_EUNSUPPORTED (AR_ESHAPE / AR_EINVAL for a malformed node) with `msg` saying why, e.g.
 * "operator 14 (CONV_2D): sparse filter: traversal_order is not the identity". The interpreter
 * densifies the filter (DENSIFY folding) when this refuses. */
int ar_kernel_sparse_filter_check(const ar_node_t *node, char *msg, size_t msg_bytes);

/* Element i of a TFLite sparsity index vector (segments or indices of a SPARSE_CSR dimension:
 * uint8, uint16 or int32, read unaligned from the model mapping); -1 for an unknown type. */
int64_t ar_index_vector_at(const ar_index_vector_t *v, int64_t i);

/* float16 (IEEE binary16) bits -> float32, exact including subnormals, inf, NaN. */
float ar_fp16_to_fp32(uint16_t h);

/* Widen n float16 values at `src` (little-endian binary16, any alignment: weights sit unaligned
 * in the model's mapping) into dst[0..n-1] float32. Same values as ar_fp16_to_fp32 (F16C's
 * vcvtph2ps on x86 when the CPU has it, picked at run time; the portable loop elsewhere); the
 * one difference is a signalling NaN, which F16C returns quiet. No allocation. Used by
 * DEQUANTIZE, and for any kernel that reads fp16 weights as stored. */
void ar_fp16_to_fp32_n(const void *src, float *dst, size_t n);

/* For tests: 1 forces the portable loop in ar_fp16_to_fp32_n, 0 restores the run-time choice.
 * Returns whether the F16C path exists on this CPU. */
bool ar_fp16_force_portable(int on);

#ifdef __cplusplus
}
#endif
#endif /* AR_KERNELS_H */
