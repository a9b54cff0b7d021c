/* lstm.h - the LSTM operators' layout and options, shared by the float kernels (kernels/lstm.c)
 * and the integer ones (kernels/lstm_int.c).
 *
 * TFLite UNIDIRECTIONAL_SEQUENCE_LSTM (builtin 44) and LSTM (builtin 16, the full kernel; the basic
 * kernel, kernel_type 1, is refused) share one input layout (TFLite lstm_shared.h), 24 inputs, or
 * 20 without the layer-norm coefficients; an omitted optional input is tensor index -1 (a NULL view):
 *
 *   0  input                       USL: [max_time, batch, n_input] (time_major) or
 *                                       [batch, max_time, n_input]; LSTM: [batch, n_input]
 *   1  input_to_input_weights      [n_cell, n_input]    optional: absent = CIFG (coupled input and
 *   2  input_to_forget_weights     [n_cell, n_input]    forget gate, input gate = 1 - forget gate)
 *   3  input_to_cell_weights       [n_cell, n_input]
 *   4  input_to_output_weights     [n_cell, n_input]
 *   5  recurrent_to_input_weights  [n_cell, n_output]   optional (absent with CIFG)
 *   6  recurrent_to_forget_weights [n_cell, n_output]
 *   7  recurrent_to_cell_weights   [n_cell, n_output]
 *   8  recurrent_to_output_weights [n_cell, n_output]
 *   9  cell_to_input_weights       [n_cell]             optional peephole (absent with CIFG)
 *  10  cell_to_forget_weights      [n_cell]             optional peephole
 *  11  cell_to_output_weights      [n_cell]             optional peephole
 *  12  input_gate_bias             [n_cell]             optional (absent with CIFG)
 *  13  forget_gate_bias            [n_cell]
 *  14  cell_gate_bias              [n_cell]
 *  15  output_gate_bias            [n_cell]
 *  16  projection_weights          [n_output, n_cell]   optional: without it n_output == n_cell
 *  17  projection_bias             [n_output]           optional
 *  18  output_state                [batch, n_output]    VARIABLE tensor: the previous output,
 *                                                       updated in place at every step
 *  19  cell_state                  [batch, n_cell]      VARIABLE tensor, updated in place
 *  20  input_layer_norm_coefficients  [n_cell]          optional (absent with CIFG)
 *  21  forget_layer_norm_coefficients [n_cell]          layer norm: 21..23 all present or none
 *  22  cell_layer_norm_coefficients   [n_cell]
 *  23  output_layer_norm_coefficients [n_cell]
 *
 * Output 0: USL the input's leading dims with n_output last; LSTM [batch, n_output]. TFLite's
 * integer forms also carry intermediate tensors (node->intermediates) whose quantization gives the
 * gates' scales; the float forms have none.
 *
 * ar_lstm_parse checks what both forms share: the counts, which optional inputs go together
 * (CIFG: inputs 1, 5, 9, 12 and 20 all absent; peephole: 10 and 11 together, 9 with them unless
 * CIFG; projection bias only with projection weights; layer norm 21..23 together, 20 with them
 * unless CIFG), every present tensor's shape, the variable states, the output shape (checked, or
 * written with node->infer_shapes), and the options (kernel_type FULL). Dtypes are each form's
 * business (ar_lstm_parse only reads them to say which form a node is).
 */
#ifndef AR_LSTM_H
#define AR_LSTM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ar_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Input indices (TFLite lstm_shared.h). */
enum {
  AR_LSTM_INPUT = 0,
  AR_LSTM_INPUT_TO_INPUT_W = 1, AR_LSTM_INPUT_TO_FORGET_W = 2, AR_LSTM_INPUT_TO_CELL_W = 3,
  AR_LSTM_INPUT_TO_OUTPUT_W = 4,
  AR_LSTM_RECURRENT_TO_INPUT_W = 5, AR_LSTM_RECURRENT_TO_FORGET_W = 6, AR_LSTM_RECURRENT_TO_CELL_W = 7,
  AR_LSTM_RECURRENT_TO_OUTPUT_W = 8,
  AR_LSTM_CELL_TO_INPUT_W = 9, AR_LSTM_CELL_TO_FORGET_W = 10, AR_LSTM_CELL_TO_OUTPUT_W = 11,
  AR_LSTM_INPUT_GATE_BIAS = 12, AR_LSTM_FORGET_GATE_BIAS = 13, AR_LSTM_CELL_GATE_BIAS = 14,
  AR_LSTM_OUTPUT_GATE_BIAS = 15,
  AR_LSTM_PROJECTION_W = 16, AR_LSTM_PROJECTION_BIAS = 17,
  AR_LSTM_OUTPUT_STATE = 18, AR_LSTM_CELL_STATE = 19,
  AR_LSTM_INPUT_LN = 20, AR_LSTM_FORGET_LN = 21, AR_LSTM_CELL_LN = 22, AR_LSTM_OUTPUT_LN = 23,
  AR_LSTM_MAX_INPUTS = 24,        /* with layer norm */
  AR_LSTM_MIN_INPUTS = 20,        /* without */
};

/* Gate order used for per-gate arrays below (TFLite's: input, forget, cell, output). */
enum { AR_LSTM_GATE_INPUT = 0, AR_LSTM_GATE_FORGET = 1, AR_LSTM_GATE_CELL = 2, AR_LSTM_GATE_OUTPUT = 3 };

/* One LSTM node, parsed. The views are the node's own (valid as long as the node). */
typedef struct ar_lstm {
  const ar_tview_t *t[AR_LSTM_MAX_INPUTS];   /* by input index; NULL where omitted or beyond n_inputs */
  ar_tview_t *output;
  bool sequence;                  /* UNIDIRECTIONAL_SEQUENCE_LSTM (else LSTM: one step) */
  bool time_major;                /* sequence op: input [max_time, batch, ...]; LSTM: false */
  ar_activation_t activation;     /* the cell gate's activation and act(cell state) in the output
                                   * (TFLite ApplyActivationToVector: any fused activation; NONE
                                   * writes nothing, see kernels/lstm.c) */
  float cell_clip, proj_clip;     /* 0 = no clipping */
  bool cifg;                      /* no input gate: input gate = 1 - forget gate */
  bool peephole;                  /* cell_to_{input,}forget,output weights */
  bool projection;                /* projection_weights (projection_bias may be absent) */
  bool projection_bias;
  bool layer_norm;                /* layer-norm coefficients 20 (unless CIFG), 21, 22, 23 */
  int32_t n_batch, max_time, n_input, n_cell, n_output;
  ar_dtype_t dtype;               /* input 0's: FLOAT32 for the float form, INT8 / INT16 otherwise */
  int32_t n_intermediates;        /* node->intermediates (the integer forms' gate scales) */
  ar_tview_t *const *intermediates;
} ar_lstm_t;

/* Parse and check `node` (UNIDIRECTIONAL_SEQUENCE_LSTM or LSTM) into *l as described above. With
 * node->infer_shapes it writes the output's shape instead of checking it. Returns 0, or
 * AR_EINVAL / AR_ESHAPE / AR_EUNSUPPORTED with `msg` naming the operator and what is wrong, e.g.
 * "operator 0 (UNIDIRECTIONAL_SEQUENCE_LSTM): recurrent_to_cell_weights (input 7) is [20,12],
 * expected [20,16]". Reads no tensor data. */
int ar_lstm_parse(const ar_node_t *node, ar_lstm_t *l, char *msg, size_t msg_bytes);

/* The name of input `i` ("input_to_forget_weights", ...), for messages; "input" beyond 23. */
const char *ar_lstm_input_name(int32_t i);

/* ---- Integer LSTM hook (kernels/lstm_int.c) ----
 * The LSTM kernels (kernels/lstm.c) are one kernel per op; a node whose input 0 is not float32
 * goes to these three functions: prepare with the parsed node (it sets node->scratch_bytes and
 * node->state_bytes itself), init and eval as usual. lstm.c calls them only when AR_HAVE_LSTM_INT
 * is defined (the author of lstm_int.c defines it here when the file joins the build); until then
 * an integer LSTM is refused at prepare, naming its dtype. */
#define AR_HAVE_LSTM_INT 1
int ar_k_lstm_int_prepare(ar_node_t *node, const ar_lstm_t *l, char *msg, size_t msg_bytes);
void ar_k_lstm_int_init(ar_node_t *node);
void ar_k_lstm_int_eval(const ar_node_t *node);

#ifdef __cplusplus
}
#endif
#endif /* AR_LSTM_H */
