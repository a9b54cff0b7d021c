/* check_stream.c - the stream harness (tests/ar_test_stream.h) and `arenactl run --steps`
 * (clients/cmd_run_steps.c), on the synthetic streams of tests/golden/streams/ (goldens of native
 * TFLite, tools/mk_stream_goldens.py): the comparison rule of golden_state/NOTES.md, meta.json,
 * a replay that matches and one whose outputs are spoiled (the harness must see it), and arenactl's
 * files against the goldens byte for byte. The recurrent kernels' streams are in
 * tests/check_recurrent.c.
 */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "kernels/ar_quant.h"
#include "loader/ar_model.h"
#include "loader/ar_ops.h"
#include "tests/ar_test_rnn_models.h"
#include "tests/ar_test_stream.h"
#include "tests/ar_test_util.h"

static const char *streams_dir(void) { return AR_SRCDIR "/tests/golden/streams"; }

/* Write synthetic model `name` (tests/ar_test_rnn_models.h) to a temporary file; path into buf. */
static void write_model(const char *name, char *buf, size_t n) {
  const ar_trm_model_t *m = NULL;
  for (int i = 0; i < ar_trm_n_models; i++)
    if (strcmp(ar_trm_models[i].name, name) == 0) m = &ar_trm_models[i];
  ck_assert_msg(m != NULL, "no synthetic model %s", name);
  snprintf(buf, n, "/tmp/check_stream_%s_%d.tflite", name, (int)getpid());
  size_t bytes = 0;
  uint8_t *b = m->build(&bytes);
  FILE *f = fopen(buf, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, bytes, f), bytes);
  ck_assert_int_eq(fclose(f), 0);
  free(b);
}

START_TEST(compare_follows_the_golden_rule) {
  /* max|golden| = 2: tolerance 1e-4 * 2 + 1e-5 = 2.1e-4. */
  const float want[3] = {2.0f, -1.0f, 0.5f};
  float got[3] = {2.0f, -1.0f + 2.0e-4f, 0.5f};
  double ratio = 0;
  char why[256];
  ck_assert_int_eq(ar_ts_compare(AR_DTYPE_FLOAT32, got, want, sizeof got, &ratio, why, sizeof why), 0);
  ck_assert(ratio > 0.9 && ratio <= 1.0);
  got[1] = -1.0f + 2.2e-4f;
  ck_assert_int_eq(ar_ts_compare(AR_DTYPE_FLOAT32, got, want, sizeof got, &ratio, why, sizeof why), 1);
  ck_assert_msg(strstr(why, "element 1 got") != NULL, "%s", why);
  got[1] = NAN;
  ck_assert_int_eq(ar_ts_compare(AR_DTYPE_FLOAT32, got, want, sizeof got, &ratio, why, sizeof why), 1);
  ck_assert(isinf(ratio));
  /* Integers: byte for byte, one off is a mismatch. */
  const int8_t wi[4] = {-128, 0, 5, 127};
  int8_t gi[4] = {-128, 0, 6, 127};
  ck_assert_int_eq(ar_ts_compare(AR_DTYPE_INT8, gi, wi, 4, &ratio, why, sizeof why), 1);
  ck_assert_str_eq(why, "byte 2 got 0x06 want 0x05 (INT8, byte for byte)");
  gi[2] = 5;
  ck_assert_int_eq(ar_ts_compare(AR_DTYPE_INT8, gi, wi, 4, NULL, NULL, 0), 0);
}
END_TEST

START_TEST(meta_is_read_and_checked) {
  char dir[256], msg[AR_MSG_BYTES];
  snprintf(dir, sizeof dir, "%s/relu", streams_dir());
  ar_ts_meta_t meta;
  ck_assert_int_eq(ar_ts_read_meta(dir, &meta, msg, sizeof msg), 0);
  ck_assert_int_eq(meta.steps, 6);
  ck_assert_int_eq(meta.n_reset, 1);
  ck_assert_int_eq(meta.reset_at[0], 3);
  char tmp[] = "/tmp/check_stream_meta_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(tmp));
  char path[300];
  snprintf(path, sizeof path, "%s/meta.json", tmp);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("{\"steps\": 4, \"reset_at\": [4]}", f);
  fclose(f);
  ck_assert_int_eq(ar_ts_read_meta(tmp, &meta, msg, sizeof msg), AR_EINVAL);
  ck_assert_msg(strstr(msg, "\"reset_at\"[0] is not a step in [0, 4)") != NULL, "%s", msg);
  unlink(path);
  rmdir(tmp);
  ck_assert_int_eq(ar_ts_read_meta("/nonexistent/stream", &meta, msg, sizeof msg), AR_ENOENT);
}
END_TEST

/* Every synthetic stream (relu: stateless; svdf_float: SVDF's state in a variable tensor, reset
 * before step 3) step by step against native TFLite. */
START_TEST(replay_matches_native_tflite) {
  for (int m = 0; m < ar_trm_n_models; m++) {
    char model[256], dir[256], msg[AR_MSG_BYTES] = "";
    write_model(ar_trm_models[m].name, model, sizeof model);
    snprintf(dir, sizeof dir, "%s/%s", streams_dir(), ar_trm_models[m].name);
    ar_ts_report_t rep;
    int rc = ar_ts_run_model(model, dir, NULL, NULL, &rep, msg, sizeof msg);
    unlink(model);
    ck_assert_msg(rc == 0, "%s: %s", ar_trm_models[m].name, msg);
    ck_assert_int_eq(rep.steps, 6);
    ck_assert_msg(rep.bad_steps == 0, "%s: %s", ar_trm_models[m].name, rep.first_bad);
    ck_assert_int_eq(rep.first_bad_step, -1);
    printf("stream %s: 6 steps match native TFLite (worst float error %.3g of the tolerance)\n",
           ar_trm_models[m].name, rep.worst_ratio);
  }
}
END_TEST

/* Without the reset before step 3 the SVDF stream must differ from the golden from step 3 on:
 * the state really carries over (a kernel that ignored its state would pass the test above). */
static int no_reset(void *ctx, ar_interp_t *in, int32_t step, char *msg, size_t msg_bytes) {
  (void)ctx, (void)in, (void)step, (void)msg, (void)msg_bytes;
  return 0;
}

START_TEST(svdf_state_carries_over) {
  char model[256], dir[256], msg[AR_MSG_BYTES] = "";
  write_model("svdf_float", model, sizeof model);
  snprintf(dir, sizeof dir, "%s/svdf_float", streams_dir());
  ar_ts_hooks_t hooks = {.reset = no_reset};
  ar_ts_report_t rep;
  int rc = ar_ts_run_model(model, dir, NULL, &hooks, &rep, msg, sizeof msg);
  unlink(model);
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_int_eq(rep.first_bad_step, 3);
}
END_TEST

/* A hook that spoils output 0 after invokes 2 and 4: the report must name step 2 first. */
static void spoil(void *ctx, ar_interp_t *in, int32_t step) {
  int *calls = ctx;
  (*calls)++;
  if (step == 2 || step == 4) ((float *)ar_interp_output(in, 0)->data)[1] += 0.5f;
}

static int resets_seen;
static int count_reset(void *ctx, ar_interp_t *in, int32_t step, char *msg, size_t msg_bytes) {
  (void)ctx;
  ck_assert_int_eq(step, 3);
  resets_seen++;
  return ar_ts_reset_default(in, msg, msg_bytes);
}

START_TEST(replay_sees_a_wrong_step) {
  char model[256], dir[256], msg[AR_MSG_BYTES] = "";
  write_model("relu", model, sizeof model);
  snprintf(dir, sizeof dir, "%s/relu", streams_dir());
  int calls = 0;
  resets_seen = 0;
  ar_ts_hooks_t hooks = {.ctx = &calls, .after_invoke = spoil, .reset = count_reset};
  ar_ts_report_t rep;
  int rc = ar_ts_run_model(model, dir, NULL, &hooks, &rep, msg, sizeof msg);
  unlink(model);
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_int_eq(calls, 6);
  ck_assert_int_eq(resets_seen, 1);
  ck_assert_int_eq(rep.bad_steps, 2);
  ck_assert_int_eq(rep.first_bad_step, 2);
  ck_assert_msg(strncmp(rep.first_bad, "step 2 output 0 (y): 1 bad, first element 1 got", 47) == 0, "%s", rep.first_bad);
}
END_TEST

/* TFLite Micro's int8-state SVDF (no native golden: TFLite's builtin reads such a state as int16
 * and crashes) against a plain reference written here: a state array per filter shifted row by row,
 * the newest column clamp_int8(mbqm(dot(wf, x - zp_x)) + zp_state), the time product over
 * (state - zp_state), bias, the output rescale. 10 steps on one interpreter, the state starting at
 * its zero point (TFLite's reset of an int8 variable). */
static int8_t sat8(int32_t v) { return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v); }

START_TEST(svdf_int8_state_matches_a_plain_reference) {
  size_t bytes = 0;
  uint8_t *b = ar_trm_svdf_int8_state(&bytes);
  const int8_t *wf, *wt;
  const int32_t *bias;
  ar_trm_svdf_int8_state_weights(&wf, &wt, &bias);
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_model_load_buffer(b, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
  int8_t *state = ar_interp_node(in, 0)->inputs[4]->data;
  memset(state, -50, 20);
  int32_t m1, m2;
  int s1, s2;
  /* The effective scales from the float scales widened to double, as TFLite computes them. */
  ar_quantize_multiplier((double)0.06f * (double)0.009f / (double)0.8f, &m1, &s1);
  ar_quantize_multiplier((double)0.8f * (double)0.015f / 1.0, &m2, &s2);
  int8_t ref_state[4][5];
  memset(ref_state, -50, sizeof ref_state);
  uint32_t lcg = 7;
  int below_zp = 0, distinct = 0, last = 1000;
  for (int step = 0; step < 10; step++) {
    int8_t x[6];
    for (int i = 0; i < 6; i++) {
      lcg = lcg * 1664525u + 1013904223u;
      x[i] = (int8_t)(lcg >> 24);
    }
    memcpy(ar_interp_input(in, 0)->data, x, sizeof x);
    ck_assert_int_eq(ar_interp_invoke(in), 0);
    const int8_t *got = ar_interp_output(in, 0)->data;
    for (int f = 0; f < 4; f++) {
      for (int t = 0; t < 4; t++) ref_state[f][t] = ref_state[f][t + 1];
      int32_t dot = 0;
      for (int i = 0; i < 6; i++) dot += wf[f * 6 + i] * (x[i] + 128);
      ref_state[f][4] = sat8(ar_mbqm(dot, m1, s1) - 50);
    }
    for (int u = 0; u < 4; u++) {
      int32_t acc = bias[u];
      for (int t = 0; t < 5; t++) acc += wt[u * 5 + t] * (ref_state[u][t] + 50);
      int8_t want = sat8(ar_mbqm(acc, m2, s2) - 10);
      ck_assert_msg(got[u] == want, "step %d unit %d: got %d, the reference %d", step, u, got[u], want);
      below_zp += want < -10;
      distinct += want != last;
      last = want;
    }
  }
  /* The stream is not degenerate: values move, and some lie below the output zero point (the
   * integer kernel applies RELU as no clamp at all, as TFLite's does). */
  printf("svdf int8 state: 10 steps match the plain reference (%d outputs below the zero point, %d changes)\n",
         below_zp, distinct);
  ck_assert_int_gt(distinct, 10);
  ar_interp_free(in);
  ar_model_free(m);
  free(b);
}
END_TEST

static char out_text[1 << 14];
#define sh(...) ar_test_sh(out_text, sizeof out_text, __VA_ARGS__)
#define builddir ar_test_builddir

START_TEST(arenactl_run_steps_writes_the_stream) {
  char model[256], dir[256], out[] = "/tmp/check_stream_out_XXXXXX";
  write_model("relu", model, sizeof model);
  snprintf(dir, sizeof dir, "%s/relu/steps", streams_dir());
  ck_assert_ptr_nonnull(mkdtemp(out));
  int rc = sh("%s'%s/arenactl' run '%s' --steps '%s' --output '%s' --reset-at 3 2>&1", ar_test_exec_prefix(),
              builddir(), model, dir, out);
  ck_assert_msg(rc == 0, "%s", out_text);
  ck_assert_msg(strstr(out_text, "stream ") && strstr(out_text, ": 6 steps, 1 reset(s), 1 input(s), 1 output(s)"),
                "%s", out_text);
  for (int k = 0; k < 6; k++) {
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/%d/output_0.bin", out, k);
    snprintf(b, sizeof b, "%s/%d/output_0.bin", dir, k);
    size_t na = 0, nb = 0;
    void *da = ar_test_read_file(a, &na), *db = ar_test_read_file(b, &nb);
    ck_assert_msg(da && db && na == nb && memcmp(da, db, na) == 0, "step %d: %s differs from %s", k, a, b);
    free(da);
    free(db);
    unlink(a);
    snprintf(a, sizeof a, "%s/%d", out, k);
    rmdir(a);
  }
  rmdir(out);
  /* Bad requests: a reset beyond the stream, --steps with --input, a folder without step 0. */
  rc = sh("%s'%s/arenactl' run '%s' --steps '%s' --reset-at 2,6 2>&1", ar_test_exec_prefix(), builddir(), model, dir);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(out_text, "--reset-at 6: the stream has 6 steps (0 to 5)") != NULL, "%s", out_text);
  rc = sh("%s'%s/arenactl' run '%s' --steps '%s' --input /dev/zero 2>&1", ar_test_exec_prefix(), builddir(), model, dir);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(out_text, "--steps reads every input from DIR/<k>/") != NULL, "%s", out_text);
  rc = sh("%s'%s/arenactl' run '%s' --steps /tmp 2>&1", ar_test_exec_prefix(), builddir(), model);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(out_text, "no step directory /tmp/0") != NULL, "%s", out_text);
  rc = sh("%s'%s/arenactl' run '%s' --reset-at x 2>&1", ar_test_exec_prefix(), builddir(), model);
  ck_assert_int_eq(rc, 2);
  unlink(model);
}
END_TEST

/* ---- Integer LSTM (kernels/lstm_int.c): the streams of ../shared/golden_state, native TFLite's
 * builtin 8x8_16 kernel, byte for byte. ---- */
static const char *const lstm_int_streams[] = {"tflm_mnist_lstm_int8", "coral_keras_lstm_mnist_ptq"};
#define N_LSTM_INT_STREAMS ((int)(sizeof lstm_int_streams / sizeof lstm_int_streams[0]))

START_TEST(integer_lstm_streams_in_process) {
  if (!ar_ts_have_state_models("integer LSTM streams in process")) return;
  char model[512], dir[512], msg[AR_MSG_BYTES] = "";
  snprintf(model, sizeof model, "%s/%s.tflite", ar_ts_models_dir(), lstm_int_streams[_i]);
  snprintf(dir, sizeof dir, "%s/%s", ar_ts_golden_dir(), lstm_int_streams[_i]);
  /* No hooks: the interpreter resets coral's int8 output state to its zero point (-1) itself, as
   * TFLite's ResetVariableTensors does. */
  ar_ts_report_t rep;
  int rc = ar_ts_run_model(model, dir, NULL, NULL, &rep, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", lstm_int_streams[_i], msg);
  printf("%-28s %d steps in process: %d bad (integer outputs byte for byte)\n", lstm_int_streams[_i], rep.steps,
         rep.bad_steps);
  ck_assert_msg(rep.bad_steps == 0, "%s: %s", lstm_int_streams[_i], rep.first_bad);
  ck_assert_int_gt(rep.steps, 1);
}
END_TEST

START_TEST(integer_lstm_streams_through_arenactl) {
  if (!ar_ts_have_state_models("integer LSTM streams through arenactl run --steps")) return;
  char model[512], dir[512], out[] = "/tmp/check_stream_lstmq_XXXXXX", msg[AR_MSG_BYTES] = "";
  snprintf(model, sizeof model, "%s/%s.tflite", ar_ts_models_dir(), lstm_int_streams[_i]);
  snprintf(dir, sizeof dir, "%s/%s", ar_ts_golden_dir(), lstm_int_streams[_i]);
  ar_ts_meta_t meta;
  ck_assert_int_eq(ar_ts_read_meta(dir, &meta, msg, sizeof msg), 0);
  char resets[256] = "";
  for (int32_t r = 0; r < meta.n_reset; r++) {
    size_t n = strlen(resets);
    snprintf(resets + n, sizeof resets - n, " --reset-at %d", (int)meta.reset_at[r]);
  }
  ck_assert_ptr_nonnull(mkdtemp(out));
  int rc = sh("%s'%s/arenactl' run '%s' --steps '%s/steps' --output '%s'%s 2>&1", ar_test_exec_prefix(), builddir(),
              model, dir, out, resets);
  ck_assert_msg(rc == 0, "%s", out_text);
  for (int32_t k = 0; k < meta.steps; k++) {
    char a[1024], g[1024], d[1024];
    snprintf(a, sizeof a, "%s/%d/output_0.bin", out, (int)k);
    snprintf(g, sizeof g, "%s/steps/%d/output_0.bin", dir, (int)k);
    size_t na = 0, ng = 0;
    void *da = ar_test_read_file(a, &na), *dg = ar_test_read_file(g, &ng);
    ck_assert_msg(da && dg && na == ng && memcmp(da, dg, na) == 0, "%s step %d: %s differs from %s",
                  lstm_int_streams[_i], (int)k, a, g);
    free(da);
    free(dg);
    unlink(a);
    snprintf(d, sizeof d, "%s/%d", out, (int)k);
    rmdir(d);
  }
  rmdir(out);
  printf("%-28s %d steps through arenactl run --steps: byte for byte\n", lstm_int_streams[_i], meta.steps);
}
END_TEST

int main(void) {
  Suite *s = suite_create("stream");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, compare_follows_the_golden_rule);
  tcase_add_test(tc, meta_is_read_and_checked);
  tcase_add_test(tc, replay_matches_native_tflite);
  tcase_add_test(tc, replay_sees_a_wrong_step);
  tcase_add_test(tc, svdf_state_carries_over);
  tcase_add_test(tc, svdf_int8_state_matches_a_plain_reference);
  tcase_add_test(tc, arenactl_run_steps_writes_the_stream);
  tcase_add_loop_test(tc, integer_lstm_streams_in_process, 0, N_LSTM_INT_STREAMS);
  tcase_add_loop_test(tc, integer_lstm_streams_through_arenactl, 0, N_LSTM_INT_STREAMS);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
