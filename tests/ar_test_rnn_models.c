/* ar_test_rnn_models.c - the synthetic stream models (tests/ar_test_rnn_models.h). */
#include "tests/ar_test_rnn_models.h"

#include "tests/ar_test_model.h"

uint8_t *ar_trm_relu(size_t *bytes) { return ar_tm_build_relu("x", "y", bytes); }

/* Fixed pseudo-random floats in [-scale, scale) (a 32-bit LCG, the same on every build). */
static void fill(float *v, int n, uint32_t seed, float scale) {
  uint32_t x = seed * 2654435761u + 1u;
  for (int i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    v[i] = scale * ((float)(x >> 8) / 8388608.0f - 1.0f);
  }
}

/* SVDF float: x [2,5] -> SVDF (8 filters, rank 2 -> 4 units, memory 3, bias, RELU) -> y [2,4];
 * state [2, 24] is a variable tensor. */
#define SV_B 2
#define SV_I 5
#define SV_F 8
#define SV_M 3
#define SV_R 2
static float sv_wf[SV_F * SV_I], sv_wt[SV_F * SV_M], sv_bias[SV_F / SV_R];
uint8_t *ar_trm_svdf(size_t *bytes) {
  fill(sv_wf, SV_F * SV_I, 1, 0.8f);
  fill(sv_wt, SV_F * SV_M, 2, 0.8f);
  fill(sv_bias, SV_F / SV_R, 3, 0.2f);
  const ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_FLOAT32, 2, {SV_B, SV_I}, false, {0}, NULL},
    {"weights_feature", AR_DTYPE_FLOAT32, 2, {SV_F, SV_I}, false, {0}, sv_wf},
    {"weights_time", AR_DTYPE_FLOAT32, 2, {SV_F, SV_M}, false, {0}, sv_wt},
    {"bias", AR_DTYPE_FLOAT32, 1, {SV_F / SV_R}, false, {0}, sv_bias},
    {"state", AR_DTYPE_FLOAT32, 2, {SV_B, SV_M * SV_F}, false, {0}, NULL},
    {"y", AR_DTYPE_FLOAT32, 2, {SV_B, SV_F / SV_R}, false, {0}, NULL},
  };
  const ar_tm_op_t ops[] = {{.builtin = 27 /* SVDF */, .n_in = 5, .n_out = 1, .in = {0, 1, 2, 3, 4}, .out = {5},
                             .options_type = 6 /* SVDFOptions */, .n_fields = 2,
                             .fields = {{0, 4, SV_R}, {1, 1, 1 /* RELU */}}}};
  const int32_t ins[] = {0}, outs[] = {5}, vars[] = {4};
  const ar_tm_args_t a = {.tensors = t, .n_tensors = 6, .ops = ops, .n_ops = 1, .inputs = ins, .n_inputs = 1,
                          .outputs = outs, .n_outputs = 1, .variables = vars, .n_variables = 1};
  return ar_tm_build_args(&a, bytes);
}

const ar_trm_model_t ar_trm_models[] = {
  {"relu", ar_trm_relu},
  {"svdf_float", ar_trm_svdf},
};
const int ar_trm_n_models = (int)(sizeof ar_trm_models / sizeof ar_trm_models[0]);
