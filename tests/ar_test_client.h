/* ar_test_client.h - helpers for the suites that talk to a real arenad through libarenaclient
 * (tests/check_daemon.c, tests/check_compact.c): golden cases of the float models (input and
 * every output, from $AR_GOLDEN_DIR/<stem>/<case>/), comparing an Invoke reply with them (client
 * result or raw protobuf response, tolerance of ar_test_golden_mismatches), model paths, the
 * stats document as JSON, waiting for the configured models. Header-only (static functions); failures are Check assertions.
 */
#ifndef AR_TEST_CLIENT_H
#define AR_TEST_CLIENT_H

#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/ar_client.h"
#include "common/ar_error.h"
#include "proto/arenad.pb-c.h"
#include "tests/ar_test_util.h"

#define AR_TC_MAX_OUTPUTS 8

/* One golden case: the float32 input and up to AR_TC_MAX_OUTPUTS float32 outputs. */
typedef struct ar_tc_golden {
  const char *stem;   /* model name, e.g. "palm_detection_lite" */
  const char *cas;    /* "photo" or "random" */
  float *input;
  size_t input_bytes;
  int n_outputs;
  float *outputs[AR_TC_MAX_OUTPUTS];
  size_t output_bytes[AR_TC_MAX_OUTPUTS];
} ar_tc_golden_t;

/* Read case `cas` of model `stem` (input_0.bin, output_<j>.bin); asserts the input and at least
 * one output exist. Free with ar_tc_golden_free. */
static inline void ar_tc_golden_load(ar_tc_golden_t *g, const char *stem, const char *cas) {
  memset(g, 0, sizeof(*g));
  g->stem = stem;
  g->cas = cas;
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s/%s/input_0.bin", ar_test_golden_dir(), stem, cas);
  g->input = ar_test_read_file(path, &g->input_bytes);
  ck_assert_msg(g->input != NULL, "cannot read %s", path);
  for (int j = 0; j < AR_TC_MAX_OUTPUTS; j++) {
    snprintf(path, sizeof(path), "%s/%s/%s/output_%d.bin", ar_test_golden_dir(), stem, cas, j);
    g->outputs[j] = ar_test_read_file(path, &g->output_bytes[j]);
    if (g->outputs[j] == NULL) break;
    g->n_outputs = j + 1;
  }
  ck_assert_int_gt(g->n_outputs, 0);
}

static inline void ar_tc_golden_free(ar_tc_golden_t *g) {
  free(g->input);
  for (int j = 0; j < g->n_outputs; j++) free(g->outputs[j]);
}

/* Output elements of a client result out of tolerance: 0 = the reply equals the golden,
 * (size_t)-1 when the output count or a byte size differs. */
static inline size_t ar_tc_golden_check(const ar_tc_golden_t *g, const ar_client_result_t *res) {
  if (res->n_outputs != g->n_outputs) return (size_t)-1;
  size_t bad = 0;
  for (int j = 0; j < g->n_outputs; j++) {
    if (res->outputs[j].bytes != g->output_bytes[j]) return (size_t)-1;
    bad += ar_test_golden_mismatches(res->outputs[j].data, g->outputs[j], g->output_bytes[j] / 4, NULL);
  }
  return bad;
}

/* The same for a raw protobuf InvokeResponse. */
static inline size_t ar_tc_golden_check_pb(const ar_tc_golden_t *g, const Arenad__InvokeResponse *r) {
  if ((int)r->n_outputs != g->n_outputs) return (size_t)-1;
  size_t bad = 0;
  for (int j = 0; j < g->n_outputs; j++) {
    if (r->outputs[j]->data.len != g->output_bytes[j]) return (size_t)-1;
    bad += ar_test_golden_mismatches((const float *)r->outputs[j]->data.data, g->outputs[j],
                                     g->output_bytes[j] / 4, NULL);
  }
  return bad;
}

/* Path of model `stem` ($AR_MODELS_DIR/<stem>.tflite) in one of 8 per-thread buffers, so that a
 * call's result stays valid across the next 7 calls of the same thread. */
static inline char *ar_tc_model_path(const char *stem) {
  static __thread char buf[8][1024];
  static __thread int k;
  k = (k + 1) % 8;
  return ar_test_model_path(buf[k], sizeof(buf[k]), stem);
}

/* The daemon's stats document (GetStats), parsed; the caller json_decref()s it. */
static inline json_t *ar_tc_stats(ar_client_t *c) {
  char *s = NULL, msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_client_stats_json(c, &s, msg, sizeof(msg)), 0);
  json_error_t err;
  json_t *j = json_loads(s, 0, &err);
  free(s);
  ck_assert_ptr_nonnull(j);
  return j;
}

/* The entry of model `name` in the stats' "models" array, or NULL. */
static inline json_t *ar_tc_stats_model(json_t *st, const char *name) {
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(st, "models"), i, m) {
    if (strcmp(json_string_value(json_object_get(m, "name")), name) == 0) return m;
  }
  return NULL;
}

/* Integer member `k` of object `o` (0 when missing). */
static inline uint64_t ar_tc_ji(json_t *o, const char *k) {
  return (uint64_t)json_integer_value(json_object_get(o, k));
}

/* The daemon on `socket` accepts before its configured models are loaded: wait until it lists
 * `n_models` (up to 60 s, 10 minutes under an emulator; a Check failure past that). */
static inline void ar_tc_wait_models(const char *socket, size_t n_models) {
  int max_tries = ar_test_emulated() ? 60000 : 6000;
  for (int tries = 0;; tries++) {
    ar_client_t *c = NULL;
    ar_client_model_t *ms = NULL;
    size_t n = 0;
    char msg[AR_MSG_BYTES];
    ck_assert_msg(ar_client_connect(socket, &c, msg, sizeof(msg)) == 0, "connect: %s", msg);
    int rc = ar_client_list(c, &ms, &n, msg, sizeof(msg));
    free(ms);
    ar_client_close(c);
    if (rc == 0 && n == n_models) return;
    ck_assert_msg(tries < max_tries, "the %zu configured models did not load", n_models);
    usleep(10000);
  }
}

#endif
