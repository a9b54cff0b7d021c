/* ar_test_rnn_models.h - synthetic stream models for the recurrent kernels' tests (issue 27), built
 * with tests/ar_test_model.h from fixed pseudo-random weights (the same bytes on every build), so
 * that native TFLite's goldens of them (tests/golden/streams/<name>/, made by
 * tools/mk_stream_goldens.py with ../shared/ref/native/tflite_run --steps) stay valid. */
#ifndef AR_TEST_RNN_MODELS_H
#define AR_TEST_RNN_MODELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ar_trm_model {
  const char *name;                       /* golden directory and file stem */
  uint8_t *(*build)(size_t *bytes);       /* malloc'd model bytes, as ar_tm_build */
} ar_trm_model_t;

extern const ar_trm_model_t ar_trm_models[];
extern const int ar_trm_n_models;

/* x [1,4] float32 -> RELU -> y: a stateless stream, the harness's own test. */
uint8_t *ar_trm_relu(size_t *bytes);

/* x [2,5] float32 -> SVDF (8 filters, rank 2, memory 3, bias, fused RELU) -> y [2,4]; the state
 * [2,24] a variable tensor. */
uint8_t *ar_trm_svdf(size_t *bytes);

/* The integer forms of SVDF: x int8 [2,5] -> SVDF with int16 weights_time and state (TFLite's
 * builtin integer kernel) -> y int8 [2,4]; and the hybrid form (float input, int8 weights), with
 * symmetric and asymmetric input quantization. */
uint8_t *ar_trm_svdf_int8(size_t *bytes);
uint8_t *ar_trm_svdf_hybrid(size_t *bytes);
uint8_t *ar_trm_svdf_hybrid_asym(size_t *bytes);

/* TFLite Micro's integer SVDF with an int8 state and int8 weights_time (zero point -50): x int8
 * [1,6] -> SVDF (4 filters, rank 1, memory 5) -> y int8 [1,4]. Not in ar_trm_models: native TFLite
 * has no such form (it reads the state as int16), so there is no native golden; tests compare it
 * with a plain reference. Weights: ar_trm_svdf_int8_state_weights after a build. */
uint8_t *ar_trm_svdf_int8_state(size_t *bytes);
/* The same with x's shape_signature [-1, 6]: its state [batch, 20] (zero point -50) follows x's
 * batch. */
uint8_t *ar_trm_svdf_int8_state_resizable(size_t *bytes);
void ar_trm_svdf_int8_state_weights(const int8_t **wf, const int8_t **wt, const int32_t **bias);

/* A float SVDF of any size (the same weights on every build, seed 11): x [batch, input] ->
 * SVDF (filters, rank, memory, bias, RELU) -> y [batch, filters / rank]; its state [batch,
 * memory * filters] a variable tensor: batch * memory * filters * 4 state bytes (bench/sessions:
 * 1 x 12 x 16 x 4 = 768). With `resizable` x's shape_signature is [-1, input] (the state then
 * follows its batch: ar_k_state_follows_batch). */
uint8_t *ar_trm_svdf_sized(int32_t batch, int32_t input, int32_t filters, int32_t memory, int32_t rank,
                           bool resizable, size_t *bytes);

/* Two float SVDFs side by side, one state each (issue 27's resize of a state piece): x [1,5]
 * (shape_signature [-1,5]) -> SVDF A (state "state_x" [batch, 24], before z's) -> y [batch,4]; z
 * [1,5] (fixed) -> SVDF B (state "state_z" [1, 24]) -> w [1,4]. Same weights as ar_trm_svdf (8
 * filters, rank 2, memory 3, RELU). A resize of x's batch changes state_x and moves state_z. */
uint8_t *ar_trm_svdf_two_states(size_t *bytes);

#endif
