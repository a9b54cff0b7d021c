/* sessions.c - bench/sessions: what sessions of stateful models cost (issue 27).
 *
 * For each model of ../shared/models_state ($AR_MODELS_STATE_DIR) that loads and has state
 * (ar_interp_state_bytes > 0):
 *   in process   the bind cost alone: ar_interp_bind_state between two slots, alternating (ns per
 *                bind, median of blocks of 1000), and ar_interp_invoke's median / p99 with the same
 *                slot every invoke and with a switch of slot before every invoke;
 *   daemon       for N = 1, 100, 10,000 open sessions (--sessions changes the list): state bytes
 *                per slot, pool bytes the slots' chunks hold (stats sessions.slot_bytes) and the
 *                pool's used bytes, then --invokes (default 2000) invokes with the same session
 *                every invoke and as many with a switch to another session before every invoke
 *                (round robin over the N sessions; none with N = 1): round trip median / p99 and
 *                the daemon's invoke_us median / p99 (the worker's bind + copy in + invoke + copy
 *                out: what a switch adds shows there).
 * First, the same for gen_svdf_768: a float SVDF (32 inputs, 16 filters, rank 1, memory 12)
 * written at run time by tests/ar_test_rnn_models.c's generator into a temp folder the daemon
 * also loads from; its state is exactly 768 bytes (1 x 12 x 16 x 4), issue 27's target figure
 * (10,000 sessions in <= 8 MiB of pool), and it runs with or without ../shared.
 * Inputs are zeros (the figures do not depend on values). Starts its own arenad (pool 512 MiB,
 * max_sessions_per_model 10000, sessions never expire) on a temp socket. Prints figures; not a
 * test.
 *
 *   bench/sessions [--invokes N] [--sessions 1,100,10000] [--model STEM]
 */
#include "config.h"

#include <dirent.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clients/ar_client.h"
#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "loader/ar_model.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_rnn_models.h"

static int n_invokes = 2000;
static int sessions_list[8] = {1, 100, 10000};
static int n_sessions_list = 3;
static const char *only_model;

#define GEN_NAME "gen_svdf_768"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Quantile q of n values (sorts them; nearest rank). */
static double quantile(double *v, int n, double q) {
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  int k = (int)(q * (double)n + 0.999999) - 1;
  if (k < 0) k = 0;
  if (k >= n) k = n - 1;
  return v[k];
}

static const char *models_dir(void) {
  const char *d = getenv("AR_MODELS_STATE_DIR");
  return d && *d ? d : AR_SRCDIR "/../shared/models_state";
}

/* ---- in process ---------------------------------------------------------------------------------- */

/* Returns the model's state bytes (0: stateless or not loadable here: then `why` says so). */
static uint64_t in_process(const char *path, char *why, size_t why_bytes) {
  ar_model_t *model = NULL;
  ar_interp_t *in = NULL;
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  char msg[AR_MSG_BYTES];
  if (ar_model_load(path, &model, msg, sizeof(msg)) != 0 || ar_interp_new(model, &opt, &in, msg, sizeof(msg)) != 0 ||
      ar_interp_place_owned(in, msg, sizeof(msg)) != 0) {
    snprintf(why, why_bytes, "does not load: %s", msg);
    if (in) ar_interp_free(in);
    if (model) ar_model_free(model);
    return 0;
  }
  uint64_t sb = ar_interp_state_bytes(in);
  if (sb == 0) {
    snprintf(why, why_bytes, "stateless");
    ar_interp_free(in);
    ar_model_free(model);
    return 0;
  }
  void *slot[2] = {aligned_alloc(64, sb), aligned_alloc(64, sb)};
  for (int i = 0; i < 2; i++) ar_interp_reset_state(in, slot[i]);
  for (int32_t i = 0; i < ar_interp_n_inputs(in); i++) {
    const ar_tview_t *v = ar_interp_input(in, i);
    memset(v->data, 0, v->bytes);
  }
  enum { BLOCKS = 50, PER = 1000 };
  double bind_ns[BLOCKS];
  for (int b = 0; b < BLOCKS; b++) {
    double t0 = now_us();
    for (int i = 0; i < PER; i++) ar_interp_bind_state(in, slot[i & 1]);
    bind_ns[b] = (now_us() - t0) * 1000.0 / PER;
  }
  int n = n_invokes;
  double *same = calloc((size_t)n, sizeof(double)), *sw = calloc((size_t)n, sizeof(double));
  ar_interp_bind_state(in, slot[0]);
  int n_same = 0, n_sw = 0;
  for (int i = 0; i < 2 * n; i++) {   /* alternating blocks of 10: both see the same machine state */
    bool do_switch = (i / 10) % 2 == 1;
    double t0 = now_us();
    if (do_switch) ar_interp_bind_state(in, slot[i & 1]);
    ar_interp_invoke(in);
    double t = now_us() - t0;
    if (do_switch && n_sw < n) sw[n_sw++] = t;
    else if (!do_switch && n_same < n) same[n_same++] = t;
    if (!do_switch && i % 10 == 9) ar_interp_bind_state(in, slot[0]);   /* same-slot blocks: slot 0 */
  }
  printf("  in process: state %" PRIu64 " B in %d piece(s); bind %.0f ns (median of %d x %d, p99 block %.0f ns); "
         "invoke same slot median %.1f us p99 %.1f us, switching median %.1f us p99 %.1f us\n",
         sb, (int)ar_interp_n_state_pieces(in), quantile(bind_ns, BLOCKS, 0.5), BLOCKS, PER,
         quantile(bind_ns, BLOCKS, 0.99), quantile(same, n_same, 0.5), quantile(same, n_same, 0.99),
         quantile(sw, n_sw, 0.5), quantile(sw, n_sw, 0.99));
  ar_interp_bind_state(in, NULL);
  free(same);
  free(sw);
  free(slot[0]);
  free(slot[1]);
  ar_interp_free(in);
  ar_model_free(model);
  return sb;
}

/* ---- through the daemon -------------------------------------------------------------------------- */

static json_t *get_stats(ar_client_t *c) {
  char *text = NULL, msg[AR_MSG_BYTES];
  if (ar_client_stats_json(c, &text, msg, sizeof(msg)) != 0) return NULL;
  json_t *j = json_loads(text, 0, NULL);
  free(text);
  return j;
}

static json_t *sessions_of(json_t *st, const char *name) {
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(st, "models"), i, m) {
    if (strcmp(json_string_value(json_object_get(m, "name")), name) == 0) return json_object_get(m, "sessions");
  }
  return NULL;
}

static int64_t jint(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

static int invoke(ar_client_t *c, const char *name, ar_client_tensor_t *in, int n_in, const char *id, bool start,
                  double *rt_us, uint64_t *daemon_us) {
  ar_client_session_t s = {.id = id, .start = start};
  ar_client_result_t res;
  char msg[AR_MSG_BYTES];
  double t0 = now_us();
  int rc = ar_client_invoke_session(c, name, &s, in, (size_t)n_in, &res, msg, sizeof(msg));
  if (rt_us) *rt_us = now_us() - t0;
  if (rc != 0) {
    fprintf(stderr, "bench/sessions: %s session %s: %s\n", name, id, msg);
    return rc;
  }
  if (daemon_us) *daemon_us = res.invoke_us;
  ar_client_result_free(&res);
  return 0;
}

static void through_daemon(ar_client_t *c, const char *name, const char *path) {
  char msg[AR_MSG_BYTES];
  for (int si = 0; si < n_sessions_list; si++) {
    int N = sessions_list[si];
    ar_client_model_t *info = calloc(1, sizeof(*info));
    if (ar_client_load(c, name, path, NULL, NULL, info, msg, sizeof(msg)) != 0) {
      printf("  daemon: does not load: %s\n", msg);
      free(info);
      return;
    }
    ar_client_tensor_t in[AR_CLIENT_MAX_IO];
    void *bufs[AR_CLIENT_MAX_IO];
    int n_in = info->n_inputs < AR_CLIENT_MAX_IO ? info->n_inputs : AR_CLIENT_MAX_IO;
    for (int i = 0; i < n_in; i++) {
      in[i] = info->inputs[i];
      uint64_t e = 1;
      for (int d = 0; d < in[i].rank; d++) e *= (uint64_t)in[i].dims[d];
      static const int sz[] = {4, 2, 4, 1, 8, 0, 1, 2, 8, 1, 8};
      in[i].bytes = e * (uint64_t)(in[i].dtype >= 0 && in[i].dtype < 11 ? sz[in[i].dtype] : 1);
      bufs[i] = calloc(1, in[i].bytes + 1);
      in[i].data = bufs[i];
    }
    json_t *st = get_stats(c);
    int64_t used0 = st ? jint(json_object_get(st, "pool"), "used_bytes") : 0;
    json_decref(st);
    char id[32];
    double t0 = now_us();
    bool ok = true;
    for (int k = 0; k < N && ok; k++) {
      snprintf(id, sizeof(id), "s%d", k);
      ok = invoke(c, name, in, n_in, id, true, NULL, NULL) == 0;
    }
    double open_s = (now_us() - t0) / 1e6;
    st = get_stats(c);
    json_t *ss = st ? sessions_of(st, name) : NULL;
    int64_t used1 = st ? jint(json_object_get(st, "pool"), "used_bytes") : 0;
    if (ok && ss) {
      int64_t per = jint(ss, "state_bytes_per_slot"), chunks = jint(ss, "slot_bytes");
      printf("  daemon N=%-5d open %" PRId64 " (opened in %.2f s); state bytes per slot %" PRId64
             "; slot chunks %" PRId64 " B in %" PRId64 " chunk(s) = %.3f x N x slot (%.2f MiB%s); pool used +%"
             PRId64 " B\n", N, jint(ss, "open"), open_s, per, chunks, jint(ss, "slot_chunks"),
             per ? (double)chunks / ((double)N * (double)per) : 0.0, (double)chunks / 1048576.0,
             N == 10000 && per == 768 ? (chunks <= 8 * 1048576 ? ", <= 8 MiB" : ", ABOVE 8 MiB") : "",
             used1 - used0);
    }
    json_decref(st);
    int n = n_invokes;
    double *rt_same = calloc((size_t)n, sizeof(double)), *rt_sw = calloc((size_t)n, sizeof(double));
    double *d_same = calloc((size_t)n, sizeof(double)), *d_sw = calloc((size_t)n, sizeof(double));
    int n_same = 0, n_sw = 0;
    for (int i = 0; ok && i < 2 * n; i++) {
      bool do_switch = N > 1 && (i / 10) % 2 == 1;   /* alternating blocks of 10 */
      double rt;
      uint64_t du = 0;
      if (do_switch) {
        snprintf(id, sizeof(id), "s%d", (i % (N - 1)) + 1);
        ok = invoke(c, name, in, n_in, id, false, &rt, &du) == 0;
        if (n_sw < n) rt_sw[n_sw] = rt, d_sw[n_sw++] = (double)du;
      } else {
        ok = invoke(c, name, in, n_in, "s0", false, &rt, &du) == 0;
        if (n_same < n) rt_same[n_same] = rt, d_same[n_same++] = (double)du;
      }
      if (N == 1 && n_same >= n) break;
    }
    if (ok) {
      printf("  daemon N=%-5d same session: round trip median %.1f us p99 %.1f us, daemon invoke_us median %.0f "
             "p99 %.0f", N, quantile(rt_same, n_same, 0.5), quantile(rt_same, n_same, 0.99),
             quantile(d_same, n_same, 0.5), quantile(d_same, n_same, 0.99));
      if (n_sw > 0)
        printf("\n  daemon N=%-5d switch every invoke: round trip median %.1f us p99 %.1f us, daemon invoke_us "
               "median %.0f p99 %.0f", N, quantile(rt_sw, n_sw, 0.5), quantile(rt_sw, n_sw, 0.99),
               quantile(d_sw, n_sw, 0.5), quantile(d_sw, n_sw, 0.99));
      printf("\n");
    }
    free(rt_same);
    free(rt_sw);
    free(d_same);
    free(d_sw);
    for (int i = 0; i < n_in; i++) free(bufs[i]);
    free(info);
    if (ar_client_unload(c, name, msg, sizeof(msg)) != 0) fprintf(stderr, "bench/sessions: unload: %s\n", msg);
  }
}

int main(int argc, char **argv) {
  static const struct option opts[] = {{"invokes", required_argument, NULL, 'n'},
                                       {"sessions", required_argument, NULL, 's'},
                                       {"model", required_argument, NULL, 'm'},
                                       {NULL, 0, NULL, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (o == 'n') {
      n_invokes = atoi(optarg);
    } else if (o == 's') {
      n_sessions_list = 0;
      for (char *p = strtok(optarg, ","); p && n_sessions_list < 8; p = strtok(NULL, ","))
        sessions_list[n_sessions_list++] = atoi(p);
    } else if (o == 'm') {
      only_model = optarg;
    } else {
      fprintf(stderr, "usage: bench/sessions [--invokes N] [--sessions 1,100,10000] [--model STEM]\n");
      return 2;
    }
  }
  if (n_invokes < 10) n_invokes = 10;
  /* The generated model first, in a folder of its own. */
  char gen_dir[64] = "/tmp/arenad-bench-gen-XXXXXX", gen_path[128];
  size_t gen_bytes = 0;
  uint8_t *gen = ar_trm_svdf_sized(1, 32, 16, 12, 1, false, &gen_bytes);
  if (gen == NULL || mkdtemp(gen_dir) == NULL) return 1;
  snprintf(gen_path, sizeof(gen_path), "%s/%s.tflite", gen_dir, GEN_NAME);
  FILE *gf = fopen(gen_path, "wb");
  if (gf == NULL || fwrite(gen, 1, gen_bytes, gf) != gen_bytes || fclose(gf) != 0) {
    fprintf(stderr, "bench/sessions: cannot write %s\n", gen_path);
    return 1;
  }
  free(gen);
  char names[64][256];
  int n_names = 0;
  DIR *d = opendir(models_dir());
  if (d == NULL) printf("bench/sessions: %s is absent: only %s\n", models_dir(), GEN_NAME);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL && n_names < 64) {
    size_t l = strlen(e->d_name);
    if (l > 7 && strcmp(e->d_name + l - 7, ".tflite") == 0) {
      snprintf(names[n_names], sizeof(names[n_names]), "%.*s", (int)(l - 7), e->d_name);
      n_names++;
    }
  }
  if (d) closedir(d);
  qsort(names, (size_t)n_names, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
  if (n_names == 64) n_names--;
  memmove(names[1], names[0], (size_t)n_names * sizeof(names[0]));
  snprintf(names[0], sizeof(names[0]), "%s", GEN_NAME);
  n_names++;
  char cfg[256];
  snprintf(cfg, sizeof(cfg), "/tmp/arenad-bench-sessions-XXXXXX");
  int fd = mkstemp(cfg);
  const char *json = "{\"models\": [], \"max_sessions_per_model\": 10000, \"session_idle_timeout_ms\": 0, "
                     "\"threads\": 1}";
  if (fd < 0 || write(fd, json, strlen(json)) != (ssize_t)strlen(json)) return 1;
  close(fd);
  ar_test_daemon_t dmn;
  const char *extra[] = {"--config", cfg, "--model-dir", gen_dir, d ? "--model-dir" : NULL, models_dir(), NULL};
  if (ar_td_start(&dmn, "512M", extra) != 0) {
    fprintf(stderr, "bench/sessions: arenad did not start (%s)\n", dmn.log);
    return 1;
  }
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  if (ar_client_connect(dmn.socket, &c, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "bench/sessions: %s\n", msg);
    ar_td_stop(&dmn);
    return 1;
  }
  printf("bench/sessions: %d invokes per figure, arenad threads 1, models of %s\n", n_invokes, models_dir());
  for (int i = 0; i < n_names; i++) {
    if (only_model && strcmp(only_model, names[i]) != 0) continue;
    char path[1024], why[AR_MSG_BYTES + 32] = "";
    if (snprintf(path, sizeof(path), "%s/%s.tflite", i == 0 ? gen_dir : models_dir(), names[i]) >= (int)sizeof(path)) {
      printf("%s: skipped (path longer than %zu bytes)\n", names[i], sizeof(path));
      continue;
    }
    printf("%s\n", names[i]);
    fflush(stdout);
    if (in_process(path, why, sizeof(why)) == 0) {
      printf("  %s: skipped\n", why);
      continue;
    }
    through_daemon(c, names[i], path);
    fflush(stdout);
  }
  ar_client_close(c);
  ar_td_stop(&dmn);
  unlink(cfg);
  unlink(gen_path);
  rmdir(gen_dir);
  return 0;
}
