/* ar_test_rnn_models.h - synthetic stream models for the recurrent kernels' tests (issue 27), built
 * with tests/ar_test_model.h from fixed pseudo-random weights (the same bytes on every build), so
 * that native TFLite's goldens of them (tests/golden/streams/<name>/, made by
 * tools/mk_stream_goldens.py with ../shared/ref/native/tflite_run --steps) stay valid. */
#ifndef AR_TEST_RNN_MODELS_H
#define AR_TEST_RNN_MODELS_H

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

#endif
