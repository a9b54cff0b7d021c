/* ar_test_rnn_models.c - the synthetic stream models (tests/ar_test_rnn_models.h). */
#include "tests/ar_test_rnn_models.h"

#include <stdbool.h>
#include <stdlib.h>

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

uint8_t *ar_trm_svdf_sized(int32_t batch, int32_t input, int32_t filters, int32_t memory, int32_t rank,
                           bool resizable, size_t *bytes) {
  if (batch < 1 || input < 1 || filters < 1 || memory < 1 || rank < 1 || filters % rank) return NULL;
  float *wf = malloc((size_t)filters * (size_t)input * sizeof(float));
  float *wt = malloc((size_t)filters * (size_t)memory * sizeof(float));
  float *bias = malloc((size_t)(filters / rank) * sizeof(float));
  uint8_t *b = NULL;
  if (wf && wt && bias) {
    fill(wf, filters * input, 11, 0.5f);
    fill(wt, filters * memory, 12, 0.5f);
    fill(bias, filters / rank, 13, 0.2f);
    const ar_tm_tensor_t t[] = {
      {"x", AR_DTYPE_FLOAT32, 2, {batch, input}, resizable, {-1, input}, NULL},
      {"weights_feature", AR_DTYPE_FLOAT32, 2, {filters, input}, false, {0}, wf},
      {"weights_time", AR_DTYPE_FLOAT32, 2, {filters, memory}, false, {0}, wt},
      {"bias", AR_DTYPE_FLOAT32, 1, {filters / rank}, false, {0}, bias},
      {"state", AR_DTYPE_FLOAT32, 2, {batch, memory * filters}, false, {0}, NULL},
      {"y", AR_DTYPE_FLOAT32, 2, {batch, filters / rank}, false, {0}, NULL},
    };
    const ar_tm_op_t ops[] = {{.builtin = 27 /* SVDF */, .n_in = 5, .n_out = 1, .in = {0, 1, 2, 3, 4}, .out = {5},
                               .options_type = 6 /* SVDFOptions */, .n_fields = 2,
                               .fields = {{0, 4, rank}, {1, 1, 1 /* RELU */}}}};
    const int32_t ins[] = {0}, outs[] = {5}, vars[] = {4};
    const ar_tm_args_t a = {.tensors = t, .n_tensors = 6, .ops = ops, .n_ops = 1, .inputs = ins, .n_inputs = 1,
                            .outputs = outs, .n_outputs = 1, .variables = vars, .n_variables = 1};
    b = ar_tm_build_args(&a, bytes);
  }
  free(wf);
  free(wt);
  free(bias);
  return b;
}

uint8_t *ar_trm_svdf_two_states(size_t *bytes) {
  fill(sv_wf, SV_F * SV_I, 1, 0.8f);
  fill(sv_wt, SV_F * SV_M, 2, 0.8f);
  fill(sv_bias, SV_F / SV_R, 3, 0.2f);
  const ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_FLOAT32, 2, {1, SV_I}, true, {-1, SV_I}, NULL},
    {"weights_feature", AR_DTYPE_FLOAT32, 2, {SV_F, SV_I}, false, {0}, sv_wf},
    {"weights_time", AR_DTYPE_FLOAT32, 2, {SV_F, SV_M}, false, {0}, sv_wt},
    {"bias", AR_DTYPE_FLOAT32, 1, {SV_F / SV_R}, false, {0}, sv_bias},
    {"state_x", AR_DTYPE_FLOAT32, 2, {1, SV_M * SV_F}, false, {0}, NULL},
    {"y", AR_DTYPE_FLOAT32, 2, {1, SV_F / SV_R}, false, {0}, NULL},
    {"z", AR_DTYPE_FLOAT32, 2, {1, SV_I}, false, {0}, NULL},
    {"state_z", AR_DTYPE_FLOAT32, 2, {1, SV_M * SV_F}, false, {0}, NULL},
    {"w", AR_DTYPE_FLOAT32, 2, {1, SV_F / SV_R}, false, {0}, NULL},
  };
  const ar_tm_op_t ops[] = {{.builtin = 27, .n_in = 5, .n_out = 1, .in = {0, 1, 2, 3, 4}, .out = {5},
                             .options_type = 6, .n_fields = 2, .fields = {{0, 4, SV_R}, {1, 1, 1}}},
                            {.builtin = 27, .n_in = 5, .n_out = 1, .in = {6, 1, 2, 3, 7}, .out = {8},
                             .options_type = 6, .n_fields = 2, .fields = {{0, 4, SV_R}, {1, 1, 1}}}};
  const int32_t ins[] = {0, 6}, outs[] = {5, 8}, vars[] = {4, 7};
  const ar_tm_args_t a = {.tensors = t, .n_tensors = 9, .ops = ops, .n_ops = 2, .inputs = ins, .n_inputs = 2,
                          .outputs = outs, .n_outputs = 2, .variables = vars, .n_variables = 2};
  return ar_tm_build_args(&a, bytes);
}

/* Fixed pseudo-random integers in [lo, hi] (the same LCG as fill). */
static void ifill(int32_t *v, int n, uint32_t seed, int32_t lo, int32_t hi) {
  uint32_t x = seed * 2654435761u + 1u;
  for (int i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    v[i] = lo + (int32_t)((x >> 8) % (uint32_t)(hi - lo + 1));
  }
}

/* Integer SVDF (TFLite's builtin EvalIntegerSVDF): x int8 [2,5] (scale .05, zp 3) -> SVDF (8
 * filters, rank 2, memory 3, RELU) -> y int8 [2,4] (scale .2, zp -20: TFLite's integer kernel
 * does not clamp at the zero point, the stream shows it); weights_feature int8 (.01), weights_time
 * int16 (1/8192), bias int32 (s_x * s_wf), state int16 [2,24] (.001, zp 0). */
static int8_t svq_wf[SV_F * SV_I];
static int16_t svq_wt[SV_F * SV_M];
static int32_t svq_bias[SV_F / SV_R];
uint8_t *ar_trm_svdf_int8(size_t *bytes) {
  int32_t v[SV_F * SV_I];
  ifill(v, SV_F * SV_I, 11, -127, 127);
  for (int i = 0; i < SV_F * SV_I; i++) svq_wf[i] = (int8_t)v[i];
  ifill(v, SV_F * SV_M, 12, -8192, 8192);
  for (int i = 0; i < SV_F * SV_M; i++) svq_wt[i] = (int16_t)v[i];
  ifill(svq_bias, SV_F / SV_R, 13, -20000, 20000);
  const ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_INT8, 2, {SV_B, SV_I}, false, {0}, NULL},
    {"weights_feature", AR_DTYPE_INT8, 2, {SV_F, SV_I}, false, {0}, svq_wf},
    {"weights_time", AR_DTYPE_INT16, 2, {SV_F, SV_M}, false, {0}, svq_wt},
    {"bias", AR_DTYPE_INT32, 1, {SV_F / SV_R}, false, {0}, svq_bias},
    {"state", AR_DTYPE_INT16, 2, {SV_B, SV_M * SV_F}, false, {0}, NULL},
    {"y", AR_DTYPE_INT8, 2, {SV_B, SV_F / SV_R}, false, {0}, NULL},
  };
  static const float sc[6] = {0.05f, 0.01f, 1.0f / 8192.0f, 0.0005f, 0.001f, 0.2f};
  static const int64_t zp[6] = {3, 0, 0, 0, 0, -20};
  const ar_tm_quant_t q[] = {{0, 1, &sc[0], &zp[0], 0}, {1, 1, &sc[1], &zp[1], 0}, {2, 1, &sc[2], &zp[2], 0},
                             {3, 1, &sc[3], &zp[3], 0}, {4, 1, &sc[4], &zp[4], 0}, {5, 1, &sc[5], &zp[5], 0}};
  const ar_tm_op_t ops[] = {{.builtin = 27 /* SVDF */, .n_in = 5, .n_out = 1, .in = {0, 1, 2, 3, 4}, .out = {5},
                             .options_type = 6 /* SVDFOptions */, .n_fields = 2,
                             .fields = {{0, 4, SV_R}, {1, 1, 1 /* RELU */}}}};
  const int32_t ins[] = {0}, outs[] = {5}, vars[] = {4};
  const ar_tm_args_t a = {.tensors = t, .n_tensors = 6, .ops = ops, .n_ops = 1, .inputs = ins, .n_inputs = 1,
                          .outputs = outs, .n_outputs = 1, .quant = q, .n_quant = 6, .variables = vars,
                          .n_variables = 1};
  return ar_tm_build_args(&a, bytes);
}

/* Hybrid SVDF (TFLite's EvalHybridSVDF): x float [2,5] -> SVDF with int8 weights_feature (.01)
 * and weights_time (.006), float bias and state [2,24], RELU -> y float [2,4]; the input rows are
 * quantized symmetrically (svdf_hybrid) or asymmetrically (svdf_hybrid_asym,
 * asymmetric_quantize_inputs). */
static int8_t svh_wf[SV_F * SV_I], svh_wt[SV_F * SV_M];
static float svh_bias[SV_F / SV_R];
static uint8_t *svdf_hybrid(bool asym, size_t *bytes) {
  int32_t v[SV_F * SV_I];
  ifill(v, SV_F * SV_I, 21, -127, 127);
  for (int i = 0; i < SV_F * SV_I; i++) svh_wf[i] = (int8_t)v[i];
  ifill(v, SV_F * SV_M, 22, -127, 127);
  for (int i = 0; i < SV_F * SV_M; i++) svh_wt[i] = (int8_t)v[i];
  fill(svh_bias, SV_F / SV_R, 23, 0.2f);
  const ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_FLOAT32, 2, {SV_B, SV_I}, false, {0}, NULL},
    {"weights_feature", AR_DTYPE_INT8, 2, {SV_F, SV_I}, false, {0}, svh_wf},
    {"weights_time", AR_DTYPE_INT8, 2, {SV_F, SV_M}, false, {0}, svh_wt},
    {"bias", AR_DTYPE_FLOAT32, 1, {SV_F / SV_R}, false, {0}, svh_bias},
    {"state", AR_DTYPE_FLOAT32, 2, {SV_B, SV_M * SV_F}, false, {0}, NULL},
    {"y", AR_DTYPE_FLOAT32, 2, {SV_B, SV_F / SV_R}, false, {0}, NULL},
  };
  static const float sc[2] = {0.01f, 0.006f};
  static const int64_t zp[2] = {0, 0};
  const ar_tm_quant_t q[] = {{1, 1, &sc[0], &zp[0], 0}, {2, 1, &sc[1], &zp[1], 0}};
  const ar_tm_op_t ops[] = {{.builtin = 27 /* SVDF */, .n_in = 5, .n_out = 1, .in = {0, 1, 2, 3, 4}, .out = {5},
                             .options_type = 6 /* SVDFOptions */, .n_fields = 3,
                             .fields = {{0, 4, SV_R}, {1, 1, 1 /* RELU */}, {2, 1, asym ? 1 : 0}}}};
  const int32_t ins[] = {0}, outs[] = {5}, vars[] = {4};
  const ar_tm_args_t a = {.tensors = t, .n_tensors = 6, .ops = ops, .n_ops = 1, .inputs = ins, .n_inputs = 1,
                          .outputs = outs, .n_outputs = 1, .quant = q, .n_quant = 2, .variables = vars,
                          .n_variables = 1};
  return ar_tm_build_args(&a, bytes);
}
uint8_t *ar_trm_svdf_hybrid(size_t *bytes) { return svdf_hybrid(false, bytes); }
uint8_t *ar_trm_svdf_hybrid_asym(size_t *bytes) { return svdf_hybrid(true, bytes); }

/* TFLite Micro's integer SVDF with an int8 state (the form of models_state/tflm_keyword_scrambled_8bit,
 * on which native TFLite crashes): x int8 [1,6] (scale .06, zp -128) -> SVDF (4 filters, rank 1,
 * memory 5, RELU) -> y int8 [1,4] (scale 1, zp -10); weights_feature int8 (.009), weights_time
 * int8 (.015), bias int32 (s_x * s_wf), state int8 [1,20] (scale .8, zp -50). */
static int8_t sv8_wf[4 * 6], sv8_wt[4 * 5];
static int32_t sv8_bias[4];
static uint8_t *svdf_int8_state(bool resizable, size_t *bytes) {
  int32_t v[24];
  ifill(v, 24, 31, -127, 127);
  for (int i = 0; i < 24; i++) sv8_wf[i] = (int8_t)v[i];
  ifill(v, 20, 32, -127, 127);
  for (int i = 0; i < 20; i++) sv8_wt[i] = (int8_t)v[i];
  ifill(sv8_bias, 4, 33, -2000, 2000);
  const ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_INT8, 2, {1, 6}, resizable, {-1, 6}, NULL},
    {"weights_feature", AR_DTYPE_INT8, 2, {4, 6}, false, {0}, sv8_wf},
    {"weights_time", AR_DTYPE_INT8, 2, {4, 5}, false, {0}, sv8_wt},
    {"bias", AR_DTYPE_INT32, 1, {4}, false, {0}, sv8_bias},
    {"state", AR_DTYPE_INT8, 2, {1, 20}, false, {0}, NULL},
    {"y", AR_DTYPE_INT8, 2, {1, 4}, false, {0}, NULL},
  };
  static const float sc[6] = {0.06f, 0.009f, 0.015f, 0.00054f, 0.8f, 1.0f};
  static const int64_t zp[6] = {-128, 0, 0, 0, -50, -10};
  const ar_tm_quant_t q[] = {{0, 1, &sc[0], &zp[0], 0}, {1, 1, &sc[1], &zp[1], 0}, {2, 1, &sc[2], &zp[2], 0},
                             {3, 1, &sc[3], &zp[3], 0}, {4, 1, &sc[4], &zp[4], 0}, {5, 1, &sc[5], &zp[5], 0}};
  const ar_tm_op_t ops[] = {{.builtin = 27 /* SVDF */, .n_in = 5, .n_out = 1, .in = {0, 1, 2, 3, 4}, .out = {5},
                             .options_type = 6 /* SVDFOptions */, .n_fields = 2,
                             .fields = {{0, 4, 1}, {1, 1, 1 /* RELU */}}}};
  const int32_t ins[] = {0}, outs[] = {5}, vars[] = {4};
  const ar_tm_args_t a = {.tensors = t, .n_tensors = 6, .ops = ops, .n_ops = 1, .inputs = ins, .n_inputs = 1,
                          .outputs = outs, .n_outputs = 1, .quant = q, .n_quant = 6, .variables = vars,
                          .n_variables = 1};
  return ar_tm_build_args(&a, bytes);
}
uint8_t *ar_trm_svdf_int8_state(size_t *bytes) { return svdf_int8_state(false, bytes); }
uint8_t *ar_trm_svdf_int8_state_resizable(size_t *bytes) { return svdf_int8_state(true, bytes); }
void ar_trm_svdf_int8_state_weights(const int8_t **wf, const int8_t **wt, const int32_t **bias) {
  *wf = sv8_wf;
  *wt = sv8_wt;
  *bias = sv8_bias;
}

const ar_trm_model_t ar_trm_models[] = {
  {"relu", ar_trm_relu},
  {"svdf_float", ar_trm_svdf},
  /* integer recurrent kernels (h-lstmq) */
  {"svdf_int8", ar_trm_svdf_int8},
  {"svdf_hybrid", ar_trm_svdf_hybrid},
  {"svdf_hybrid_asym", ar_trm_svdf_hybrid_asym},
};
const int ar_trm_n_models = (int)(sizeof ar_trm_models / sizeof ar_trm_models[0]);
