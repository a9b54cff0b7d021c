/* fuzz_loader.c - libFuzzer target for the model loader.
 *
 * Feeds arbitrary bytes to ar_model_load_buffer and, when a model is accepted, walks everything
 * the loader promises (tensor data inside the input, indices in range, ranks bounded, option
 * structs readable) so ASan/UBSan see any lie. Build: `make fuzz_loader` (needs clang); run e.g.
 *   ./fuzz_loader -max_total_time=600 -max_len=700000 CORPUS_DIR
 * seeded with the real models (and truncations of them) and the synthetic model check_loader
 * writes when AR_LOADER_SEED_DIR is set.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/ar_error.h"
#include "loader/ar_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char msg[AR_MSG_BYTES];
  ar_model_t *m = NULL;
  int rc = ar_model_load_buffer(data, size, &m, msg, sizeof(msg));
  if (rc != 0) {
    if (m != NULL || msg[0] == 0) __builtin_trap();   /* failures return no model and a message */
    return 0;
  }
  uint64_t acc = m->constant_bytes + strlen(m->description);
  for (uint32_t s = 0; s < m->n_subgraphs; s++) {
    const ar_subgraph_t *sg = &m->subgraphs[s];
    for (uint32_t t = 0; t < sg->n_tensors; t++) {
      const ar_tensor_t *tt = &sg->tensors[t];
      if (tt->rank < 0 || tt->rank > AR_MAX_RANK) __builtin_trap();
      if (tt->data) {
        if (tt->data < data || tt->data_bytes > size || tt->data - data > (ptrdiff_t)(size - tt->data_bytes))
          __builtin_trap();
        acc += tt->data[0] + tt->data[tt->data_bytes - 1];
      }
      acc += strlen(tt->name) + ar_tensor_elements(tt);
      if (tt->sparsity)
        for (int32_t d = 0; d < tt->sparsity->n_dim_metadata; d++) {
          const ar_index_vector_t *iv = &tt->sparsity->dim_metadata[d].array_indices;
          if (iv->length) acc += ((const uint8_t *)iv->data)[0];
        }
    }
    for (uint32_t o = 0; o < sg->n_operators; o++) {
      const ar_operator_t *op = &sg->operators[o];
      for (int32_t i = 0; i < op->n_inputs; i++)
        if (op->inputs[i] < -1 || op->inputs[i] >= (int32_t)sg->n_tensors) __builtin_trap();
      for (int32_t i = 0; i < op->n_outputs; i++)
        if (op->outputs[i] < 0 || op->outputs[i] >= (int32_t)sg->n_tensors) __builtin_trap();
      if (op->op == AR_OP_INVALID || op->version > ar_op_max_version(op->op)) __builtin_trap();
      if (op->custom_options_bytes) acc += op->custom_options[op->custom_options_bytes - 1];
    }
  }
  sink = acc;
  ar_model_free(m);
  return 0;
}
