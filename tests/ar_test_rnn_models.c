/* ar_test_rnn_models.c - the synthetic stream models (tests/ar_test_rnn_models.h). */
#include "tests/ar_test_rnn_models.h"

#include "tests/ar_test_model.h"

uint8_t *ar_trm_relu(size_t *bytes) { return ar_tm_build_relu("x", "y", bytes); }

const ar_trm_model_t ar_trm_models[] = {
  {"relu", ar_trm_relu},
};
const int ar_trm_n_models = (int)(sizeof ar_trm_models / sizeof ar_trm_models[0]);
