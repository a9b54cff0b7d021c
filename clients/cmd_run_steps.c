/* cmd_run_steps.c - `arenactl run MODEL --steps DIR`: replay a stream on ONE interpreter, so that
 * the model's state (variable tensors, resource variables) carries from invoke to invoke.
 *
 * Layout (the one ../shared/ref/native/tflite_run --steps and ../shared/golden_state use):
 *   DIR/<k>/input_<i>.bin      input i of invoke k, k = 0, 1, ... up to the first missing <k>
 *   OUT/<k>/output_<j>.bin     output j of invoke k (--output OUT; OUT/<k> is created)
 * --reset-at K (repeatable, or a comma list) puts the state back to its initial value (TFLite
 * ResetVariableTensors) right before invoke K. cmd_run.c parses the options and prepares the
 * interpreter; this file runs the steps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "clients/cli_io.h"
#include "clients/cmd_run_steps.h"
#include "common/ar_error.h"
#include "common/ar_util.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int32_t ar_cli_count_steps(const char *dir) {
  char path[4096];
  int32_t k = 0;
  for (;; k++) {
    if (snprintf(path, sizeof path, "%s/%d", dir, k) >= (int)sizeof path || !is_dir(path)) break;
  }
  return k;
}

int ar_cli_parse_reset_list(const char *arg, int32_t *reset_at, int *n_reset, int max) {
  const char *p = arg;
  if (!*p) return -1;
  while (*p) {
    char *end = NULL;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno != 0 || end == p || v < 0 || v > 100000000 || (*end && *end != ',') || *n_reset >= max) return -1;
    reset_at[(*n_reset)++] = (int32_t)v;
    p = *end ? end + 1 : end;
  }
  return 0;
}

/* Back to the initial state before a step (a place keeps the state: interp/ar_interp.h). */
static int reset_state(ar_interp_t *in, char *msg, size_t msg_bytes) {
  (void)msg, (void)msg_bytes;
  ar_interp_reset_state(in, NULL);
  return 0;
}

static int write_file(const char *path, const void *data, uint64_t bytes) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(data, 1, (size_t)bytes, f) == bytes;
  if (fclose(f) != 0) ok = 0;
  return ok ? 0 : -1;
}

int ar_cli_run_steps(ar_interp_t *in, const char *steps_dir, const char *outdir, const int32_t *reset_at,
                     int n_reset) {
  char msg[AR_MSG_BYTES] = "";
  char path[4096];
  const int32_t steps = ar_cli_count_steps(steps_dir);
  const int32_t n_in = ar_interp_n_inputs(in), n_out = ar_interp_n_outputs(in);
  if (steps == 0) {
    fprintf(stderr, "arenactl run: --steps %s: no step directory %s/0 (want DIR/<k>/input_<i>.bin)\n",
            ar_cli_esc(steps_dir), ar_cli_esc(steps_dir));
    return 2;
  }
  for (int r = 0; r < n_reset; r++) {
    if (reset_at[r] >= steps) {
      fprintf(stderr, "arenactl run: --reset-at %d: the stream has %d steps (0 to %d)\n", reset_at[r], steps,
              steps - 1);
      return 2;
    }
  }
  double total_ms = 0;
  int resets = 0;
  for (int32_t k = 0; k < steps; k++) {
    for (int r = 0; r < n_reset; r++) {
      if (reset_at[r] != k) continue;
      int rc = reset_state(in, msg, sizeof msg);
      if (rc != 0) {
        fprintf(stderr, "arenactl run: reset before step %d: %s (%s)\n", k, ar_cli_esc(msg), ar_err_name(rc));
        return 1;
      }
      resets++;
      break;
    }
    for (int32_t i = 0; i < n_in; i++) {
      ar_tview_t *v = ar_interp_input(in, i);
      void *data = NULL;
      uint64_t bytes = 0;
      snprintf(path, sizeof path, "%s/%d/input_%d.bin", steps_dir, k, i);
      int rc = ar_cli_read_input(path, ar_interp_input_name(in, i), v->bytes, &data, &bytes, msg, sizeof msg);
      if (rc != 0) {
        fprintf(stderr, "arenactl run: step %d: %s (%s)\n", k, ar_cli_esc(msg), ar_err_name(rc));
        free(data);
        return 1;
      }
      ar_copy_bytes(v->data, data, v->bytes);
      free(data);
    }
    double t0 = now_ms();
    int rc = ar_interp_invoke(in);
    total_ms += now_ms() - t0;
    if (rc != 0) {
      fprintf(stderr, "arenactl run: step %d: invoke failed (%s)\n", k, ar_err_name(rc));
      return 1;
    }
    if (!outdir) continue;
    snprintf(path, sizeof path, "%s/%d", outdir, k);
    if ((rc = ar_cli_output_dir(path, msg, sizeof msg)) != 0) {
      fprintf(stderr, "arenactl run: %s (%s)\n", ar_cli_esc(msg), ar_err_name(rc));
      return 1;
    }
    for (int32_t j = 0; j < n_out; j++) {
      const ar_tview_t *v = ar_interp_output(in, j);
      snprintf(path, sizeof path, "%s/%d/output_%d.bin", outdir, k, j);
      if (write_file(path, v->data, v->bytes) != 0) {
        fprintf(stderr, "arenactl run: cannot write %s: %s\n", ar_cli_esc(path), strerror(errno));
        return 1;
      }
    }
  }
  printf("stream %s: %d steps, %d reset(s), %d input(s), %d output(s)%s%s%s; invoke total %.3f ms, mean %.3f ms\n",
         ar_cli_esc(steps_dir), steps, resets, n_in, n_out, outdir ? ", outputs in " : "",
         outdir ? ar_cli_esc(outdir) : "", outdir ? "/<k>/" : "", total_ms, total_ms / steps);
  return 0;
}
