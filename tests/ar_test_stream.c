/* ar_test_stream.c - the stream harness (tests/ar_test_stream.h): meta.json, the replay of a golden
 * stream on one interpreter, and the per-step comparison by golden_state/NOTES.md's rule.
 */
#include "tests/ar_test_stream.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "loader/ar_model.h"

const char *ar_ts_models_dir(void) {
  const char *d = getenv("AR_MODELS_STATE_DIR");
  return d && *d ? d : AR_SRCDIR "/../shared/models_state";
}

const char *ar_ts_golden_dir(void) {
  const char *d = getenv("AR_GOLDEN_STATE_DIR");
  return d && *d ? d : AR_SRCDIR "/../shared/golden_state";
}

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int ar_ts_have_state_models(const char *what) {
  const char *m = ar_ts_models_dir(), *g = ar_ts_golden_dir();
  if (is_dir(m) && is_dir(g)) return 1;
  printf("SKIP %s: %s is absent (../shared is not beside this checkout; set AR_MODELS_STATE_DIR and "
         "AR_GOLDEN_STATE_DIR)\n", what, is_dir(m) ? g : m);
  fflush(stdout);
  return 0;
}

int ar_ts_read_meta(const char *stream_dir, ar_ts_meta_t *meta, char *msg, size_t msg_bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/meta.json", stream_dir);
  memset(meta, 0, sizeof(*meta));
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  if (!root) {
    return ar_errf(msg, msg_bytes, is_dir(stream_dir) ? AR_EINVAL : AR_ENOENT, "%s: %s (line %d)", path, jerr.text,
                   jerr.line);
  }
  int rc = 0;
  json_t *steps = json_object_get(root, "steps"), *resets = json_object_get(root, "reset_at");
  if (!json_is_integer(steps) || json_integer_value(steps) < 1 || json_integer_value(steps) > 1000000) {
    rc = ar_errf(msg, msg_bytes, AR_EINVAL, "%s: \"steps\" is not a whole number from 1 to 1000000", path);
    goto out;
  }
  meta->steps = (int32_t)json_integer_value(steps);
  if (resets && !json_is_array(resets)) {
    rc = ar_errf(msg, msg_bytes, AR_EINVAL, "%s: \"reset_at\" is not a list", path);
    goto out;
  }
  for (size_t i = 0; resets && i < json_array_size(resets); i++) {
    json_t *k = json_array_get(resets, i);
    if (!json_is_integer(k) || json_integer_value(k) < 0 || json_integer_value(k) >= meta->steps ||
        meta->n_reset == AR_TS_MAX_RESETS) {
      rc = ar_errf(msg, msg_bytes, AR_EINVAL, "%s: \"reset_at\"[%zu] is not a step in [0, %d) (at most %d)", path, i,
                   meta->steps, AR_TS_MAX_RESETS);
      goto out;
    }
    meta->reset_at[meta->n_reset++] = (int32_t)json_integer_value(k);
  }
out:
  json_decref(root);
  return rc;
}

int ar_ts_reset_default(ar_interp_t *in, char *msg, size_t msg_bytes) {
  (void)msg, (void)msg_bytes;
  ar_interp_reset_state(in, NULL);   /* the default slot (a place keeps the state) */
  return 0;
}

int64_t ar_ts_compare(ar_dtype_t dtype, const void *got, const void *want, uint64_t bytes, double *ratio,
                      char *why, size_t why_bytes) {
  int64_t bad = 0;
  if (ratio) *ratio = 0;
  if (why && why_bytes) why[0] = '\0';
  if (dtype == AR_DTYPE_FLOAT32) {
    const float *g = got, *w = want;
    const uint64_t n = bytes / sizeof(float);
    double maxw = 0;
    for (uint64_t e = 0; e < n; e++) maxw = fmax(maxw, fabs((double)w[e]));
    const double tol = 1e-4 * maxw + 1e-5;
    double worst = 0;
    for (uint64_t e = 0; e < n; e++) {
      double d = fabs((double)g[e] - (double)w[e]);
      if (!(d <= tol)) {   /* NaN counts as a mismatch */
        if (bad == 0 && why)
          snprintf(why, why_bytes, "element %llu got %.9g want %.9g (tolerance %.3g)", (unsigned long long)e, g[e],
                   w[e], tol);
        bad++;
        d = isnan(d) ? INFINITY : d;
      }
      worst = fmax(worst, d / tol);
    }
    if (ratio) *ratio = worst;
    return bad;
  }
  const uint8_t *g = got, *w = want;
  for (uint64_t e = 0; e < bytes; e++) {
    if (g[e] == w[e]) continue;
    if (bad == 0 && why)
      snprintf(why, why_bytes, "byte %llu got 0x%02x want 0x%02x (%s, byte for byte)", (unsigned long long)e, g[e],
               w[e], ar_dtype_name(dtype));
    bad++;
  }
  return bad;
}

/* Read `path` into buf (exactly `bytes` bytes; the file must hold that many). */
static int read_exact(const char *path, void *buf, uint64_t bytes, char *msg, size_t msg_bytes) {
  FILE *f = fopen(path, "rb");
  if (!f) return ar_errf(msg, msg_bytes, AR_ENOENT, "%s: cannot open", path);
  int rc = 0;
  if (fseek(f, 0, SEEK_END) != 0) {
    rc = ar_errf(msg, msg_bytes, AR_EIO, "%s: cannot seek", path);
  } else {
    long size = ftell(f);
    rewind(f);
    if (size < 0 || (uint64_t)size != bytes)
      rc = ar_errf(msg, msg_bytes, AR_ESHAPE, "%s: has %ld bytes, the tensor %llu", path, size,
                   (unsigned long long)bytes);
    else if (bytes && fread(buf, 1, (size_t)bytes, f) != bytes)
      rc = ar_errf(msg, msg_bytes, AR_EIO, "%s: short read", path);
  }
  fclose(f);
  return rc;
}

int ar_ts_replay(ar_interp_t *in, const char *stream_dir, const ar_ts_meta_t *meta, const ar_ts_hooks_t *hooks,
                 ar_ts_report_t *rep, char *msg, size_t msg_bytes) {
  static const ar_ts_hooks_t none = {0};
  if (!hooks) hooks = &none;
  memset(rep, 0, sizeof(*rep));
  rep->first_bad_step = -1;
  const int32_t n_in = ar_interp_n_inputs(in), n_out = ar_interp_n_outputs(in);
  /* Golden outputs are read before the invoke into buffers allocated up front, so that nothing
   * allocates between the hooks. */
  uint64_t max_out = 1;
  for (int32_t j = 0; j < n_out; j++) max_out = AR_MAX(max_out, ar_interp_output(in, j)->bytes);
  uint8_t *want = malloc((size_t)(max_out * (uint64_t)(n_out > 0 ? n_out : 1)));
  if (!want) return ar_errf(msg, msg_bytes, AR_ENOMEM, "stream %s: cannot allocate the golden buffers", stream_dir);
  char path[4096], why[256];
  int rc = 0;
  for (int32_t k = 0; k < meta->steps; k++) {
    for (int32_t r = 0; r < meta->n_reset; r++) {
      if (meta->reset_at[r] != k) continue;
      rc = hooks->reset ? hooks->reset(hooks->ctx, in, k, msg, msg_bytes) : ar_ts_reset_default(in, msg, msg_bytes);
      if (rc != 0) goto out;
      break;
    }
    for (int32_t i = 0; i < n_in; i++) {
      ar_tview_t *v = ar_interp_input(in, i);
      snprintf(path, sizeof path, "%s/steps/%d/input_%d.bin", stream_dir, k, i);
      if ((rc = read_exact(path, v->data, v->bytes, msg, msg_bytes)) != 0) goto out;
    }
    for (int32_t j = 0; j < n_out; j++) {
      snprintf(path, sizeof path, "%s/steps/%d/output_%d.bin", stream_dir, k, j);
      if ((rc = read_exact(path, want + (uint64_t)j * max_out, ar_interp_output(in, j)->bytes, msg, msg_bytes)) != 0)
        goto out;
    }
    if (hooks->before_invoke) hooks->before_invoke(hooks->ctx, in, k);
    rc = ar_interp_invoke(in);
    if (hooks->after_invoke) hooks->after_invoke(hooks->ctx, in, k);
    if (rc != 0) {
      rc = ar_errf(msg, msg_bytes, rc, "stream %s: step %d: invoke failed (%s)", stream_dir, k, ar_err_name(rc));
      goto out;
    }
    rep->steps++;
    bool step_bad = false;
    for (int32_t j = 0; j < n_out; j++) {
      const ar_tview_t *v = ar_interp_output(in, j);
      double ratio = 0;
      int64_t bad = ar_ts_compare(v->dtype, v->data, want + (uint64_t)j * max_out, v->bytes, &ratio, why, sizeof why);
      rep->worst_ratio = fmax(rep->worst_ratio, ratio);
      if (v->dtype != AR_DTYPE_FLOAT32) rep->bytes_differing += bad;
      if (bad == 0) continue;
      if (rep->first_bad_step < 0) {
        rep->first_bad_step = k;
        snprintf(rep->first_bad, sizeof rep->first_bad, "step %d output %d (%s): %lld bad, first %s", k, j,
                 ar_interp_output_name(in, j), (long long)bad, why);
      }
      step_bad = true;
    }
    rep->bad_steps += step_bad;
  }
out:
  free(want);
  return rc;
}

#define TS_MAX_SLOTS 8

int ar_ts_replay_slots(ar_interp_t *in, const char *stream_dir, const ar_ts_meta_t *meta, const char *plan,
                       const ar_ts_hooks_t *hooks, ar_ts_report_t *rep, char *msg, size_t msg_bytes) {
  static const ar_ts_hooks_t none = {0};
  if (!hooks) hooks = &none;
  memset(rep, 0, sizeof(*rep));
  rep->first_bad_step = -1;
  const int32_t n_in = ar_interp_n_inputs(in), n_out = ar_interp_n_outputs(in);
  const uint64_t sb = ar_interp_state_bytes(in);
  void *slot[TS_MAX_SLOTS] = {NULL};
  int32_t step[TS_MAX_SLOTS] = {0};
  uint64_t max_out = 1;
  for (int32_t j = 0; j < n_out; j++) max_out = AR_MAX(max_out, ar_interp_output(in, j)->bytes);
  uint8_t *want = malloc((size_t)(max_out * (uint64_t)(n_out > 0 ? n_out : 1)));
  int rc = 0;
  if (!want) return ar_errf(msg, msg_bytes, AR_ENOMEM, "stream %s: cannot allocate the golden buffers", stream_dir);
  for (const char *c = plan; *c; c++) {   /* the slots the plan names, but the default (A) */
    const int s = *c >= 'a' && *c <= 'z' ? *c - 'a' : *c - 'A';
    if (*c == '*' || s < 1 || s >= TS_MAX_SLOTS || slot[s]) continue;
    if (!(slot[s] = aligned_alloc(64, (size_t)ar_align_up(sb ? sb : 1, 64)))) {
      rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "cannot allocate a state slot of %llu bytes", (unsigned long long)sb);
      goto out;
    }
    ar_interp_reset_state(in, slot[s]);
  }
  char path[4096], why[256];
  for (int32_t a = 0; plan[a]; a++) {
    const char c = plan[a];
    if (c == '*') {
      if ((rc = ar_interp_place_owned(in, msg, msg_bytes)) != 0) goto out;
      continue;
    }
    const bool reset = c >= 'a' && c <= 'z';
    const int s = reset ? c - 'a' : c - 'A';
    if (s < 0 || s >= TS_MAX_SLOTS) {
      rc = ar_errf(msg, msg_bytes, AR_EINVAL, "plan '%s': action %d ('%c') is not a slot", plan, a, c);
      goto out;
    }
    if (reset) {
      ar_interp_reset_state(in, slot[s]);
      step[s] = 0;
      continue;
    }
    const int32_t k = step[s]++;
    if (k >= meta->steps) {
      rc = ar_errf(msg, msg_bytes, AR_EINVAL, "plan '%s': action %d: slot %c is past the stream's %d steps", plan, a,
                   c, meta->steps);
      goto out;
    }
    for (int32_t r = 0; r < meta->n_reset; r++)
      if (meta->reset_at[r] == k) ar_interp_reset_state(in, slot[s]);
    for (int32_t i = 0; i < n_in; i++) {
      ar_tview_t *v = ar_interp_input(in, i);
      snprintf(path, sizeof path, "%s/steps/%d/input_%d.bin", stream_dir, k, i);
      if ((rc = read_exact(path, v->data, v->bytes, msg, msg_bytes)) != 0) goto out;
    }
    for (int32_t j = 0; j < n_out; j++) {
      snprintf(path, sizeof path, "%s/steps/%d/output_%d.bin", stream_dir, k, j);
      if ((rc = read_exact(path, want + (uint64_t)j * max_out, ar_interp_output(in, j)->bytes, msg, msg_bytes)) != 0)
        goto out;
    }
    if (hooks->before_invoke) hooks->before_invoke(hooks->ctx, in, k);
    rc = ar_interp_bind_state(in, slot[s]);
    if (rc == 0) rc = ar_interp_invoke(in);
    if (hooks->after_invoke) hooks->after_invoke(hooks->ctx, in, k);
    if (rc != 0) {
      rc = ar_errf(msg, msg_bytes, rc, "stream %s: action %d (slot %c, step %d): invoke failed (%s: %s)", stream_dir,
                   a, c, k, ar_err_name(rc), ar_interp_last_error(in));
      goto out;
    }
    rep->steps++;
    bool step_bad = false;
    for (int32_t j = 0; j < n_out; j++) {
      const ar_tview_t *v = ar_interp_output(in, j);
      double ratio = 0;
      int64_t bad = ar_ts_compare(v->dtype, v->data, want + (uint64_t)j * max_out, v->bytes, &ratio, why, sizeof why);
      rep->worst_ratio = fmax(rep->worst_ratio, ratio);
      if (v->dtype != AR_DTYPE_FLOAT32) rep->bytes_differing += bad;
      if (bad == 0) continue;
      if (rep->first_bad_step < 0) {
        rep->first_bad_step = a;
        snprintf(rep->first_bad, sizeof rep->first_bad, "action %d (slot %c, step %d) output %d (%s): %lld bad, first %s",
                 a, c, k, j, ar_interp_output_name(in, j), (long long)bad, why);
      }
      step_bad = true;
    }
    rep->bad_steps += step_bad;
  }
out:
  ar_interp_bind_state(in, NULL);
  for (int s = 0; s < TS_MAX_SLOTS; s++) free(slot[s]);
  free(want);
  return rc;
}

int ar_ts_run_model(const char *model_path, const char *stream_dir, const ar_interp_options_t *opt,
                    const ar_ts_hooks_t *hooks, ar_ts_report_t *rep, char *msg, size_t msg_bytes) {
  char m[AR_MSG_BYTES] = "";
  ar_model_t *model = NULL;
  ar_interp_t *in = NULL;
  ar_interp_options_t def;
  ar_ts_meta_t meta;
  memset(rep, 0, sizeof(*rep));
  rep->first_bad_step = -1;
  if (!opt) {
    ar_interp_options_default(&def);
    opt = &def;
  }
  int rc = ar_ts_read_meta(stream_dir, &meta, msg, msg_bytes);
  if (rc != 0) return rc;
  if ((rc = ar_model_load(model_path, &model, m, sizeof m)) != 0 ||
      (rc = ar_interp_new(model, opt, &in, m, sizeof m)) != 0 || (rc = ar_interp_place_owned(in, m, sizeof m)) != 0) {
    ar_errf(msg, msg_bytes, rc, "%s: %s", model_path, m);
  } else {
    rc = ar_ts_replay(in, stream_dir, &meta, hooks, rep, msg, msg_bytes);
  }
  ar_interp_free(in);
  ar_model_free(model);
  return rc;
}
