/* check_lstm.c - TFLite UNIDIRECTIONAL_SEQUENCE_LSTM and LSTM, float32 (issue 27, kernels/lstm.c),
 * and the RNNs (kernels/rnn.c):
 * the LSTM streams of ../shared/golden_state (native TFLite 2.19, one interpreter over the stream,
 * the variable-tensor state carried from invoke to invoke and reset where meta.json says) replayed
 * in process and through `arenactl run --steps`. Skipped when ../shared/models_state is absent.
 * The variants those models do not use (CIFG, peephole, projection + clips, layer norm,
 * batch-major, activations) are single-operator cases in tests/golden/ops (tools/ops/cases/lstm.py,
 * check_ops_golden). */
#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "loader/ar_model.h"
#include "tests/ar_test_stream.h"
#include "tests/ar_test_util.h"

static const char *const lstm_streams[] = {
    "tflm_mnist_lstm_float",                 /* UNIDIRECTIONAL_SEQUENCE_LSTM, batch-major, 16 steps */
    "litert_lstm",                           /* LSTM */
    "litert_unidirectional_sequence_lstm"};  /* UNIDIRECTIONAL_SEQUENCE_LSTM, LiteRT test model */
#define N_LSTM_STREAMS ((int)(sizeof lstm_streams / sizeof lstm_streams[0]))

START_TEST(lstm_streams_replay_in_process) {
  if (!ar_ts_have_state_models("LSTM streams in process")) return;
  char model[512], dir[512], msg[1024];
  snprintf(model, sizeof model, "%s/%s.tflite", ar_ts_models_dir(), lstm_streams[_i]);
  snprintf(dir, sizeof dir, "%s/%s", ar_ts_golden_dir(), lstm_streams[_i]);
  ar_ts_report_t rep;
  int rc = ar_ts_run_model(model, dir, NULL, NULL, &rep, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", lstm_streams[_i], msg);
  printf("%-36s %d steps in process: %d bad, worst %.4f of the tolerance\n", lstm_streams[_i], rep.steps,
         rep.bad_steps, rep.worst_ratio);
  ck_assert_msg(rep.bad_steps == 0, "%s: %s", lstm_streams[_i], rep.first_bad);
  ar_ts_meta_t meta;
  ck_assert_int_eq(ar_ts_read_meta(dir, &meta, msg, sizeof msg), 0);
  ck_assert_int_eq(rep.steps, meta.steps);
  ck_assert_int_ge(meta.n_reset, 1);   /* the streams reset their state once: a stale state fails */
}
END_TEST

static char out_text[1 << 14];
#define sh(...) ar_test_sh(out_text, sizeof out_text, __VA_ARGS__)
#define builddir ar_test_builddir

START_TEST(lstm_streams_replay_through_arenactl) {
  if (!ar_ts_have_state_models("LSTM streams through arenactl run --steps")) return;
  char model[512], dir[512], out[] = "/tmp/check_lstm_XXXXXX", msg[1024], resets[512] = "";
  snprintf(model, sizeof model, "%s/%s.tflite", ar_ts_models_dir(), lstm_streams[_i]);
  snprintf(dir, sizeof dir, "%s/%s", ar_ts_golden_dir(), lstm_streams[_i]);
  ar_ts_meta_t meta;
  ck_assert_int_eq(ar_ts_read_meta(dir, &meta, msg, sizeof msg), 0);
  for (int32_t r = 0; r < meta.n_reset; r++)
    snprintf(resets + strlen(resets), sizeof resets - strlen(resets), " --reset-at %d", (int)meta.reset_at[r]);
  ck_assert_ptr_nonnull(mkdtemp(out));
  int rc = sh("%s'%s/arenactl' run '%s' --steps '%s/steps' --output '%s'%s 2>&1", ar_test_exec_prefix(),
              builddir(), model, dir, out, resets);
  ck_assert_msg(rc == 0, "%s", out_text);
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load(model, &m, msg, sizeof msg) == 0, "%s", msg);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  double worst = 0;
  for (int32_t k = 0; k < meta.steps; k++) {
    for (uint32_t j = 0; j < sg->n_outputs; j++) {
      char a[1024], g[1024], why[256] = "";
      snprintf(a, sizeof a, "%s/%d/output_%u.bin", out, (int)k, j);
      snprintf(g, sizeof g, "%s/steps/%d/output_%u.bin", dir, (int)k, j);
      size_t na = 0, ng = 0;
      void *da = ar_test_read_file(a, &na), *dg = ar_test_read_file(g, &ng);
      ck_assert_msg(da && dg && na == ng, "step %d output %u: %s (%zu bytes) vs %s (%zu bytes)", (int)k, j, a, na,
                    g, ng);
      double ratio = 0;
      int64_t bad = ar_ts_compare(sg->tensors[sg->outputs[j]].dtype, da, dg, na, &ratio, why, sizeof why);
      ck_assert_msg(bad == 0, "%s step %d output %u: %s", lstm_streams[_i], (int)k, j, why);
      if (ratio > worst) worst = ratio;
      free(da);
      free(dg);
      unlink(a);
    }
    char d[1024];
    snprintf(d, sizeof d, "%s/%d", out, (int)k);
    rmdir(d);
  }
  rmdir(out);
  printf("%-36s %d steps through arenactl run --steps: worst %.4f of the tolerance\n", lstm_streams[_i],
         meta.steps, worst);
  ar_model_free(m);
}
END_TEST

/* State across invokes for the variants: streams of generated single-operator models
 * (tests/golden/ops/<case>/model.tflite) made by native TFLite's `tflite_run --steps`, kept in
 * tests/golden/streams/op_<case> (6 steps, a reset in the middle; the recipe in its meta.json's
 * "reference"). Each invoke starts from the state the previous one left. */
static const char *const op_streams[] = {"usrnn_batch_major_relu", "uslstm_layer_norm_cifg_peephole",
                                         "lstm_step_projection_peephole"};
#define N_OP_STREAMS ((int)(sizeof op_streams / sizeof op_streams[0]))

START_TEST(variant_streams_carry_the_state) {
  char model[512], dir[512], msg[1024];
  snprintf(model, sizeof model, "%s/tests/golden/ops/%s/model.tflite", AR_SRCDIR, op_streams[_i]);
  snprintf(dir, sizeof dir, "%s/tests/golden/streams/op_%s", AR_SRCDIR, op_streams[_i]);
  ar_ts_report_t rep;
  int rc = ar_ts_run_model(model, dir, NULL, NULL, &rep, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", op_streams[_i], msg);
  printf("%-36s %d steps in process: %d bad, worst %.4f of the tolerance\n", op_streams[_i], rep.steps,
         rep.bad_steps, rep.worst_ratio);
  ck_assert_msg(rep.bad_steps == 0, "%s: %s", op_streams[_i], rep.first_bad);
  ck_assert_int_eq(rep.steps, 6);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lstm");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, lstm_streams_replay_in_process, 0, N_LSTM_STREAMS);
  tcase_add_loop_test(tc, lstm_streams_replay_through_arenactl, 0, N_LSTM_STREAMS);
  tcase_add_loop_test(tc, variant_streams_carry_the_state, 0, N_OP_STREAMS);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
