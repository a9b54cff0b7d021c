/* ipc.c - bench/ipc: what the daemon's socket costs, and what the daemon serves under load.
 *
 * Default mode, three settings side by side, each against its own arenad (one run):
 *   off      daemon busy_poll_us 0, inline_invoke_us 0, client busy poll 0: every wait sleeps;
 *   default  arenad's and libarenaclient's defaults (busy_poll_us 200, inline_invoke_us 5000,
 *            client busy poll 300 us);
 *   on       the latency settings: daemon busy_poll_us 200 and inline_invoke_us 5000, client busy
 *            poll 1000 us (--busy-poll-us, --inline-invoke-us, --client-busy-poll-us change them).
 *   For each:
 *   1. Ping round trips per second over the Unix socket, with 1 client and with 8 concurrent
 *      clients (one connection and one thread each, blocking libarenaclient calls).
 *   2. Invoke of face_detection_short_range and of selfie_segmentation on their golden photo
 *      inputs, three ways in alternating blocks of 10 (so all see the same machine state, and the
 *      socket invokes of a block run back to back as a client's do): over the socket with the
 *      tensors' bytes in the request and reply (the bytes path), over the socket with the input and
 *      the outputs in a registered shared-memory buffer (the shm path: the client's input already
 *      lives in the buffer, the outputs land there), and in process (ar_interp_invoke after copying
 *      the input in, the outputs copied out, as the daemon does). The overhead of one invoke is its
 *      round trip minus the daemon's invoke_us (its copy in + invoke + copy out: what in-process
 *      costs), so it is measured per invoke: median and p99 of that; the difference of the medians
 *      against in-process is printed too. The daemon runs with "threads" 1 (--daemon-threads N
 *      changes it; 0 = its default, the online CPUs), as the in-process interpreter does.
 *
 * --throughput: 8 clients (one connection and thread each) invoking 4 models in two share groups
 *   ("people": face_detection_short_range + selfie_segmentation, "hands": palm_detection_lite +
 *   hand_landmark_lite; client i runs model i % 4) for --seconds (default 20) against a daemon
 *   started with each value of --threads (the config's "threads"; default "1,2"): invokes/s, p50
 *   and p99 latency of the round trips, failures, and the daemon's heap allocations inside invoke
 *   (stats heap_allocs_in_invoke, summed over the models). --busy-poll-us N sets the daemon's
 *   busy_poll_us for these runs (default: its default).
 *
 * --json: one JSON object on stdout instead of the text (default mode: ping_per_s,
 *   ping_per_s_8_clients, overhead_us_median, overhead_us_p99, shm_overhead_us_median,
 *   shm_overhead_us_p99 for face_detection_short_range, and one object per model under "models",
 *   all of the "on" setting; "settings": the same object for each setting, with its busy_poll_us,
 *   inline_invoke_us and client_busy_poll_us; --throughput: "runs", one object per thread count).
 *
 * Starts its own arenad ($AR_BUILDDIR/arenad, else the build dir it was compiled in) on a temp
 * socket unless --socket PATH names a running one (default mode only).
 *
 * --only off|default|on runs that setting alone; --model STEM measures only that model of the two.
 *
 *   bench/ipc [--socket PATH] [--seconds S] [--invokes N] [--json] [--busy-poll-us N]
 *             [--inline-invoke-us N] [--client-busy-poll-us N] [--daemon-threads N]
 *             [--only off|default|on] [--model STEM]
 *   bench/ipc --throughput [--seconds S] [--threads 1,2] [--busy-poll-us N] [--json]
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clients/ar_client.h"
#include "common/ar_error.h"
#include "daemon/ar_config.h"
#include "interp/ar_interp.h"
#include "loader/ar_model.h"
#include "tests/ar_test_daemon.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Quantile q of the n sorted values (nearest rank). */
static double quantile(const double *v, int n, double q) {
  int k = (int)(q * (double)n + 0.999999) - 1;
  if (k < 0) k = 0;
  if (k >= n) k = n - 1;
  return v[k];
}

static const char *socket_path;
static double seconds = 2.0;
static bool json_out;

#define say(...) do { if (!json_out) printf(__VA_ARGS__); } while (0)

/* ---- ping ---------------------------------------------------------------------------------- */

typedef struct {
  long pings;
  int failed;
  double t_end;
} pinger_t;

static volatile int go;
static unsigned client_busy_poll_us;
/* The daemon's "threads" in the overhead runs (0: its default, the online CPUs). 1 by default: the
 * in-process invoke it is compared with runs on one thread too (ar_interp_options_default), so the
 * difference is the socket path, not a second thread's gain or hand-off cost. */
static unsigned daemon_threads = 1;   /* ar_client_set_busy_poll of every connection the bench makes */

static void *pinger(void *arg) {
  pinger_t *p = arg;
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  if (ar_client_connect(socket_path, &c, msg, sizeof(msg)) != 0) {
    p->failed = 1;
    return NULL;
  }
  ar_client_set_busy_poll(c, client_busy_poll_us);
  while (!go) { /* start together */ }
  double end = now_s() + seconds;
  while (now_s() < end) {
    for (int k = 0; k < 64; k++) {
      if (ar_client_ping(c, NULL, 0, msg, sizeof(msg)) != 0) {
        p->failed = 1;
        break;
      }
      p->pings++;
    }
    if (p->failed) break;
  }
  p->t_end = now_s();
  ar_client_close(c);
  return NULL;
}

static double ping_rate(int clients) {
  pthread_t th[64];
  pinger_t p[64];
  memset(p, 0, sizeof(p));
  go = 0;
  for (int i = 0; i < clients; i++) pthread_create(&th[i], NULL, pinger, &p[i]);
  double t0 = now_s();
  go = 1;
  long total = 0;
  double t1 = t0;
  int failed = 0;
  for (int i = 0; i < clients; i++) {
    pthread_join(th[i], NULL);
    failed |= p[i].failed;
    total += p[i].pings;
    if (p[i].t_end > t1) t1 = p[i].t_end;
  }
  return failed ? -1 : (double)total / (t1 - t0);
}

static void *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *b = malloc((size_t)sz);
  if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *n = (size_t)sz;
  return b;
}

static const char *src_dir(void) { return getenv("AR_SRCDIR") ? getenv("AR_SRCDIR") : AR_SRCDIR; }

static void model_file(char *buf, size_t n, const char *stem) {
  const char *md = getenv("AR_MODELS_DIR");
  if (md && *md) snprintf(buf, n, "%s/%s.tflite", md, stem);
  else snprintf(buf, n, "%s/models/%s.tflite", src_dir(), stem);
}

static void *golden_input(const char *stem, size_t *n) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/tests/golden/%s/photo/input_0.bin", src_dir(), stem);
  void *p = read_file(path, n);
  if (p == NULL) fprintf(stderr, "bench/ipc: cannot read %s\n", path);
  return p;
}

/* ---- invoke overhead ----------------------------------------------------------------------- */

typedef struct {
  double bytes_med, bytes_p99, shm_med, shm_p99;     /* overhead per invoke, µs */
  double rt_bytes, rt_shm, inproc, inproc_p99;       /* medians, µs */
  size_t in_bytes;
  uint64_t out_bytes;
} overhead_t;

static int measure_model(ar_client_t *c, const char *stem, int invokes, overhead_t *o) {
  char msg[AR_MSG_BYTES], model_path[1024];
  model_file(model_path, sizeof(model_path), stem);
  size_t in_bytes = 0;
  void *input = golden_input(stem, &in_bytes);
  if (input == NULL) return -1;
  ar_client_model_t *info = calloc(1, sizeof(*info));
  int rc = ar_client_load(c, stem, model_path, NULL, NULL, info, msg, sizeof(msg));
  if (rc != 0) {
    fprintf(stderr, "bench/ipc: load %s: %s\n", stem, msg);
    return -1;
  }
  /* In process. */
  ar_model_t *model = NULL;
  ar_interp_t *in = NULL;
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  if (ar_model_load(model_path, &model, msg, sizeof(msg)) != 0 || ar_interp_new(model, &opt, &in, msg, sizeof(msg)) != 0 ||
      ar_interp_place_owned(in, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "bench/ipc: in-process %s: %s\n", stem, msg);
    return -1;
  }
  int n_out = ar_interp_n_outputs(in);
  uint64_t out_bytes = 0, out_sz[AR_CLIENT_MAX_IO];
  for (int j = 0; j < n_out && j < AR_CLIENT_MAX_IO; j++) out_bytes += out_sz[j] = ar_interp_output(in, j)->bytes;
  uint8_t *outs = malloc(out_bytes);
  /* The shm path's buffer: the input, then every output. */
  ar_client_buffer_t *buf = NULL;
  rc = ar_client_buffer_register(c, in_bytes + out_bytes, &buf, msg, sizeof(msg));
  if (rc != 0) {
    fprintf(stderr, "bench/ipc: register a buffer: %s\n", msg);
    return -1;
  }
  memcpy(buf->data, input, in_bytes);
  void *out_ptr[AR_CLIENT_MAX_IO];
  uint64_t off = in_bytes;
  for (int j = 0; j < n_out; j++) {
    out_ptr[j] = (uint8_t *)buf->data + off;
    off += out_sz[j];
  }
  ar_client_tensor_t tb = info->inputs[0], ts = info->inputs[0];
  tb.data = input;
  tb.bytes = in_bytes;
  ts.data = buf->data;
  ts.bytes = in_bytes;
  double *ov_b = malloc(sizeof(double) * (size_t)invokes), *ov_s = malloc(sizeof(double) * (size_t)invokes);
  double *rt_b = malloc(sizeof(double) * (size_t)invokes), *rt_s = malloc(sizeof(double) * (size_t)invokes);
  double *ip = malloc(sizeof(double) * (size_t)invokes);
  /* Blocks of OV_BLOCK invokes of each kind in turn (bytes, shm, in process): every kind sees the
   * same machine over the run, and the socket invokes of a block follow each other as a client's
   * back-to-back invokes do (a socket invoke right after a millisecond in process would find the
   * daemon asleep and measure that wake-up instead: bounded busy polling covers gaps up to its
   * busy_poll_us, not an arbitrary pause). 10 warm-up invokes of each kind first. */
  enum { OV_BLOCK = 10 };
  int nb = 0, ns = 0, np = 0;
  for (int blk = -1; nb < invokes || ns < invokes || np < invokes; blk++) {
    for (int kind = 0; kind < 3; kind++) {
      for (int k = 0; k < OV_BLOCK; k++) {
        ar_client_result_t r;
        double t0, t1;
        if (kind == 0) {
          t0 = now_s();
          rc = ar_client_invoke(c, stem, &tb, 1, &r, msg, sizeof(msg));
          t1 = now_s();
          if (rc != 0) {
            fprintf(stderr, "bench/ipc: invoke %s: %s\n", stem, msg);
            return -1;
          }
          if (blk >= 0 && nb < invokes) {
            rt_b[nb] = (t1 - t0) * 1e6;
            ov_b[nb++] = (t1 - t0) * 1e6 - (double)r.invoke_us;
          }
          ar_client_result_free(&r);
        } else if (kind == 1) {
          t0 = now_s();
          rc = ar_client_invoke_into(c, stem, &ts, 1, out_ptr, out_sz, (size_t)n_out, &r, msg, sizeof(msg));
          t1 = now_s();
          if (rc != 0) {
            fprintf(stderr, "bench/ipc: invoke %s through shared memory: %s\n", stem, msg);
            return -1;
          }
          if (blk >= 0 && ns < invokes) {
            rt_s[ns] = (t1 - t0) * 1e6;
            ov_s[ns++] = (t1 - t0) * 1e6 - (double)r.invoke_us;
          }
          ar_client_result_free(&r);
        } else {
          t0 = now_s();
          memcpy(ar_interp_input(in, 0)->data, input, in_bytes);
          ar_interp_invoke(in);
          off = 0;
          for (int j = 0; j < n_out; j++) {
            const ar_tview_t *v = ar_interp_output(in, j);
            memcpy(outs + off, v->data, v->bytes);
            off += v->bytes;
          }
          t1 = now_s();
          if (blk >= 0 && np < invokes) ip[np++] = (t1 - t0) * 1e6;
        }
      }
    }
  }
  double *all[] = {ov_b, ov_s, rt_b, rt_s, ip};
  for (int k = 0; k < 5; k++) qsort(all[k], (size_t)invokes, sizeof(double), cmp_double);
  o->bytes_med = quantile(ov_b, invokes, 0.5);
  o->bytes_p99 = quantile(ov_b, invokes, 0.99);
  o->shm_med = quantile(ov_s, invokes, 0.5);
  o->shm_p99 = quantile(ov_s, invokes, 0.99);
  o->rt_bytes = quantile(rt_b, invokes, 0.5);
  o->rt_shm = quantile(rt_s, invokes, 0.5);
  o->inproc = quantile(ip, invokes, 0.5);
  o->inproc_p99 = quantile(ip, invokes, 0.99);
  o->in_bytes = in_bytes;
  o->out_bytes = out_bytes;
  say("\nInvoke %s (input %zu B, outputs %" PRIu64 " B), %d invokes each way, in alternating blocks of %d:\n", stem,
      in_bytes, out_bytes, invokes, OV_BLOCK);
  say("  in process (copy in, invoke, copy out):   median %8.1f us   p99 %8.1f us\n", o->inproc, o->inproc_p99);
  say("  socket, bytes path: round trip median %8.1f us;  overhead per invoke median %6.1f us  p99 %6.1f us"
      "  (difference of medians %.1f us, %.1f%% of in-process)\n",
      o->rt_bytes, o->bytes_med, o->bytes_p99, o->rt_bytes - o->inproc, 100.0 * (o->rt_bytes - o->inproc) / o->inproc);
  say("  socket, shm path:   round trip median %8.1f us;  overhead per invoke median %6.1f us  p99 %6.1f us"
      "  (difference of medians %.1f us, %.1f%% of in-process)\n",
      o->rt_shm, o->shm_med, o->shm_p99, o->rt_shm - o->inproc, 100.0 * (o->rt_shm - o->inproc) / o->inproc);
  ar_client_buffer_release(c, buf, msg, sizeof(msg));
  ar_client_unload(c, stem, msg, sizeof(msg));
  for (int k = 0; k < 5; k++) free(all[k]);
  free(outs);
  ar_interp_free(in);
  ar_model_free(model);
  free(input);
  free(info);
  return 0;
}

static json_t *overhead_json(const overhead_t *o) {
  return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I}", "overhead_us_median", o->bytes_med,
                   "overhead_us_p99", o->bytes_p99, "shm_overhead_us_median", o->shm_med, "shm_overhead_us_p99",
                   o->shm_p99, "round_trip_us_median", o->rt_bytes, "shm_round_trip_us_median", o->rt_shm,
                   "in_process_us_median", o->inproc, "input_bytes", (json_int_t)o->in_bytes, "output_bytes",
                   (json_int_t)o->out_bytes);
}

/* One side of the comparison: the daemon's busy_poll_us and inline_invoke_us (arenad.json(5)) and
 * the client's busy-poll time (ar_client_set_busy_poll). */
typedef struct {
  const char *name;
  unsigned busy_poll_us, inline_invoke_us, client_busy_poll_us;
  double ping1, ping8;
  overhead_t o[2];
} setting_t;

static const char *const ov_stems[] = {"face_detection_short_range", "selfie_segmentation"};
/* --model STEM: measure only that one of ov_stems (the other's figures stay 0). */
static const char *only_model;

/* Start a daemon whose config sets the setting's keys; *d is started (0) or not (-1). */
static int start_daemon_with(ar_test_daemon_t *d, const setting_t *st) {
  char dir[] = "/tmp/arenad-ipc-XXXXXX", cfg[300];
  if (mkdtemp(dir) == NULL) return -1;
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  FILE *f = fopen(cfg, "w");
  if (f == NULL) return -1;
  fprintf(f, "{\"models\": [], \"busy_poll_us\": %u, \"inline_invoke_us\": %u", st->busy_poll_us,
          st->inline_invoke_us);
  if (daemon_threads) fprintf(f, ", \"threads\": %u", daemon_threads);
  fprintf(f, "}\n");
  fclose(f);
  const char *extra[] = {"--config", cfg, NULL};
  int rc = ar_td_start(d, "64M", extra);
  unlink(cfg);
  rmdir(dir);
  if (rc != 0) fprintf(stderr, "bench/ipc: could not start arenad (log %s)\n", d->log);
  return rc;
}

static int run_setting(setting_t *st, int invokes, const char *given_socket) {
  ar_test_daemon_t d = {0};
  if (given_socket == NULL) {
    if (start_daemon_with(&d, st) != 0) return 1;
    socket_path = d.socket;
  }
  say("\n== %s: daemon busy_poll_us %u, inline_invoke_us %u; client busy poll %u us ==\n", st->name,
      st->busy_poll_us, st->inline_invoke_us, st->client_busy_poll_us);
  client_busy_poll_us = st->client_busy_poll_us;
  st->ping1 = ping_rate(1);
  st->ping8 = ping_rate(8);
  say("Ping round trips/s   1 client: %10.0f   (%.1f us per round trip; target >= 50000)\n", st->ping1,
      st->ping1 > 0 ? 1e6 / st->ping1 : 0);
  say("Ping round trips/s   8 clients: %9.0f   (%.2fx the single client)\n", st->ping8,
      st->ping1 > 0 ? st->ping8 / st->ping1 : 0);
  char msg[AR_MSG_BYTES];
  ar_client_t *c = NULL;
  if (ar_client_connect(socket_path, &c, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "bench/ipc: %s\n", msg);
    if (d.pid) ar_td_stop(&d);
    return 1;
  }
  ar_client_set_busy_poll(c, st->client_busy_poll_us);
  for (int k = 0; k < 2; k++) {
    if (only_model && strcmp(only_model, ov_stems[k]) != 0) continue;
    if (measure_model(c, ov_stems[k], invokes, &st->o[k]) != 0) {
      ar_client_close(c);
      if (d.pid) ar_td_stop(&d);
      return 1;
    }
  }
  ar_client_close(c);
  if (d.pid) ar_td_stop(&d);
  return 0;
}

static json_t *setting_json(const setting_t *st) {
  json_t *models = json_object();
  for (int k = 0; k < 2; k++) json_object_set_new(models, ov_stems[k], overhead_json(&st->o[k]));
  return json_pack("{s:s, s:i, s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:o}", "setting", st->name, "busy_poll_us",
                   (int)st->busy_poll_us, "inline_invoke_us", (int)st->inline_invoke_us, "client_busy_poll_us",
                   (int)st->client_busy_poll_us, "ping_per_s", st->ping1, "ping_per_s_8_clients", st->ping8,
                   "overhead_us_median", st->o[0].bytes_med, "overhead_us_p99", st->o[0].bytes_p99,
                   "shm_overhead_us_median", st->o[0].shm_med, "shm_overhead_us_p99", st->o[0].shm_p99, "models",
                   models);
}

static int run_overhead(int invokes, setting_t *sets, int n_sets) {
  const char *given = socket_path;
  say("bench/ipc: arenad %s%s%s\n", PACKAGE_VERSION, given ? ", socket " : "", given ? given : "");
  if (given) say("(a running daemon: its own busy_poll_us / inline_invoke_us apply; only the client side varies)\n");
  for (int i = 0; i < n_sets; i++)
    if (run_setting(&sets[i], invokes, given) != 0) return 1;
  /* Side by side. */
  say("\n%-44s", "setting");
  for (int i = 0; i < n_sets; i++) say(" %14s", sets[i].name);
  say("\n%-44s", "  daemon busy_poll_us / inline_invoke_us");
  for (int i = 0; i < n_sets; i++) {
    char b[32];
    snprintf(b, sizeof(b), "%u / %u", sets[i].busy_poll_us, sets[i].inline_invoke_us);
    say(" %14s", b);
  }
  say("\n%-44s", "  client busy poll (us)");
  for (int i = 0; i < n_sets; i++) say(" %14u", sets[i].client_busy_poll_us);
  say("\n%-44s", "ping round trips/s, 1 client (>= 50000)");
  for (int i = 0; i < n_sets; i++) say(" %14.0f", sets[i].ping1);
  say("\n%-44s", "ping round trips/s, 8 clients");
  for (int i = 0; i < n_sets; i++) say(" %14.0f", sets[i].ping8);
  for (int k = 0; k < 2; k++) {
    say("\n%s", ov_stems[k]);
    const char *rows[] = {"  in process median (us)", "  bytes overhead median / p99 (us)",
                          "  shm overhead median / p99 (us)", "  bytes round trip - in process (us)",
                          "  shm round trip - in process (us)"};
    for (int r = 0; r < 5; r++) {
      say("\n%-44s", rows[r]);
      for (int i = 0; i < n_sets; i++) {
        const overhead_t *o = &sets[i].o[k];
        char b[40];
        if (r == 0) snprintf(b, sizeof(b), "%.0f", o->inproc);
        else if (r == 1) snprintf(b, sizeof(b), "%.1f / %.0f", o->bytes_med, o->bytes_p99);
        else if (r == 2) snprintf(b, sizeof(b), "%.1f / %.0f", o->shm_med, o->shm_p99);
        else if (r == 3) snprintf(b, sizeof(b), "%.1f", o->rt_bytes - o->inproc);
        else snprintf(b, sizeof(b), "%.1f", o->rt_shm - o->inproc);
        say(" %14s", b);
      }
    }
  }
  say("\n\ntargets (face_detection_short_range): overhead <= 30 us median with shared memory, <= 100 us on the "
      "bytes path; ping >= 50000/s with one client\n");
  if (json_out) {
    /* Top level: the last setting (busy polling on); every setting under "settings". */
    const setting_t *top = &sets[n_sets - 1];
    json_t *arr = json_array();
    for (int i = 0; i < n_sets; i++) json_array_append_new(arr, setting_json(&sets[i]));
    json_t *j = setting_json(top);
    json_object_set_new(j, "model", json_string(ov_stems[0]));
    json_object_set_new(j, "settings", arr);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    printf("%s\n", s);
    free(s);
    json_decref(j);
  }
  return 0;
}

/* ---- throughput ---------------------------------------------------------------------------- */

#define TP_CLIENTS 8
/* --throughput --busy-poll-us N: the daemon's busy_poll_us (-1: its default). */
static int tp_busy_poll_us = -1;
#define TP_MAX_SAMPLES (1 << 20)

static const char *const tp_models[4][2] = {{"face_detection_short_range", "people"},
                                            {"selfie_segmentation", "people"},
                                            {"palm_detection_lite", "hands"},
                                            {"hand_landmark_lite", "hands"}};

typedef struct {
  int model;
  void *input;
  size_t in_bytes;
  ar_client_tensor_t desc;
  long invokes, failures;
  double *lat_us;
  long n_lat;
  char err[AR_MSG_BYTES];
} tp_client_t;

static void *tp_main(void *arg) {
  tp_client_t *t = arg;
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  if (ar_client_connect(socket_path, &c, msg, sizeof(msg)) != 0) {
    t->failures++;
    snprintf(t->err, sizeof(t->err), "%s", msg);
    return NULL;
  }
  ar_client_tensor_t in = t->desc;
  in.data = t->input;
  in.bytes = t->in_bytes;
  while (!go) { /* start together */ }
  double end = now_s() + seconds;
  while (now_s() < end) {
    ar_client_result_t r;
    double t0 = now_s();
    int rc = ar_client_invoke(c, tp_models[t->model][0], &in, 1, &r, msg, sizeof(msg));
    double t1 = now_s();
    if (rc != 0) {
      t->failures++;
      snprintf(t->err, sizeof(t->err), "%s", msg);
      continue;
    }
    ar_client_result_free(&r);
    t->invokes++;
    if (t->n_lat < TP_MAX_SAMPLES) t->lat_us[t->n_lat++] = (t1 - t0) * 1e6;
  }
  ar_client_close(c);
  return NULL;
}

/* One run against a fresh daemon whose config sets "threads" (0: not set). */
static int throughput_run(unsigned threads, json_t *runs) {
  char dir[] = "/tmp/arenad-tp-XXXXXX", cfg[300];
  if (mkdtemp(dir) == NULL) return 1;
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  FILE *f = fopen(cfg, "w");
  if (f == NULL) return 1;
  fprintf(f, "{\"models\": []");
  if (threads) fprintf(f, ", \"threads\": %u", threads);
  if (tp_busy_poll_us >= 0) fprintf(f, ", \"busy_poll_us\": %d", tp_busy_poll_us);
  fprintf(f, "}\n");
  fclose(f);
  const char *extra[] = {"--config", cfg, NULL};
  ar_test_daemon_t d;
  int rc = ar_td_start(&d, "96M", extra);
  if (rc != 0 && threads) {
    /* A daemon without the config key "threads": say so and measure its default. */
    fprintf(stderr, "bench/ipc: arenad did not start with \"threads\": %u; running without the key\n", threads);
    ar_td_stop(&d);   /* removes its temp dir */
    threads = 0;
    f = fopen(cfg, "w");
    if (f) {
      fprintf(f, "{\"models\": []}\n");
      fclose(f);
    }
    rc = ar_td_start(&d, "96M", extra);
  }
  unlink(cfg);
  rmdir(dir);
  if (rc != 0) {
    fprintf(stderr, "bench/ipc: arenad did not start (log %s)\n", d.log);
    return 1;
  }
  socket_path = d.socket;
  char msg[AR_MSG_BYTES];
  ar_client_t *c = NULL;
  ar_client_model_t info[4];
  rc = ar_client_connect(socket_path, &c, msg, sizeof(msg));
  for (int k = 0; rc == 0 && k < 4; k++) {
    char path[1024];
    model_file(path, sizeof(path), tp_models[k][0]);
    rc = ar_client_load(c, tp_models[k][0], path, tp_models[k][1], NULL, &info[k], msg, sizeof(msg));
  }
  if (rc != 0) {
    fprintf(stderr, "bench/ipc: %s\n", msg);
    ar_td_stop(&d);
    return 1;
  }
  tp_client_t cl[TP_CLIENTS];
  pthread_t th[TP_CLIENTS];
  memset(cl, 0, sizeof(cl));
  go = 0;
  for (int i = 0; i < TP_CLIENTS; i++) {
    cl[i].model = i % 4;
    cl[i].input = golden_input(tp_models[cl[i].model][0], &cl[i].in_bytes);
    cl[i].desc = info[cl[i].model].inputs[0];
    cl[i].lat_us = malloc(sizeof(double) * TP_MAX_SAMPLES);
    if (cl[i].input == NULL || cl[i].lat_us == NULL) return 1;
    pthread_create(&th[i], NULL, tp_main, &cl[i]);
  }
  double t0 = now_s();
  go = 1;
  long invokes = 0, failures = 0, n = 0;
  long per_model[4] = {0};
  for (int i = 0; i < TP_CLIENTS; i++) {
    pthread_join(th[i], NULL);
    invokes += cl[i].invokes;
    failures += cl[i].failures;
    per_model[cl[i].model] += cl[i].invokes;
    n += cl[i].n_lat;
    if (cl[i].failures) fprintf(stderr, "bench/ipc: client %d: %ld failures, last: %s\n", i, cl[i].failures, cl[i].err);
  }
  double elapsed = now_s() - t0;
  double *all = malloc(sizeof(double) * (size_t)(n ? n : 1));
  long k = 0;
  for (int i = 0; i < TP_CLIENTS; i++) {
    memcpy(all + k, cl[i].lat_us, sizeof(double) * (size_t)cl[i].n_lat);
    k += cl[i].n_lat;
    free(cl[i].lat_us);
    free(cl[i].input);
  }
  qsort(all, (size_t)n, sizeof(double), cmp_double);
  double p50 = n ? quantile(all, (int)n, 0.5) : 0, p99 = n ? quantile(all, (int)n, 0.99) : 0;
  free(all);
  /* The daemon's own counters: heap allocations inside invoke, per model. */
  json_int_t allocs = -1;
  char *stats = NULL;
  if (ar_client_stats_json(c, &stats, msg, sizeof(msg)) == 0) {
    json_t *st = json_loads(stats, 0, NULL);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(st, "models"), i, m) {
      json_t *a = json_object_get(m, "heap_allocs_in_invoke");
      if (json_is_integer(a)) allocs = (allocs < 0 ? 0 : allocs) + json_integer_value(a);
    }
    json_decref(st);
    free(stats);
  }
  ar_client_close(c);
  ar_td_stop(&d);
  char tl[16];
  snprintf(tl, sizeof(tl), threads ? "%u" : "default", threads);
  say("threads %-7s  %7.1f invokes/s  (%ld in %.1f s; face %ld, selfie %ld, palm %ld, hand %ld)  p50 %.0f us  "
      "p99 %.0f us  failures %ld  heap allocations in invoke %" JSON_INTEGER_FORMAT "\n",
      tl, (double)invokes / elapsed, invokes, elapsed, per_model[0], per_model[1], per_model[2], per_model[3],
      p50, p99, failures, allocs);
  json_array_append_new(runs, json_pack("{s:i, s:f, s:I, s:f, s:f, s:I, s:I, s:{s:I, s:I, s:I, s:I}}", "threads",
                                        (int)threads, "invokes_per_s", (double)invokes / elapsed, "invokes",
                                        (json_int_t)invokes, "p50_us", p50, "p99_us", p99, "failures",
                                        (json_int_t)failures, "heap_allocs_in_invoke", allocs, "per_model",
                                        tp_models[0][0], (json_int_t)per_model[0], tp_models[1][0],
                                        (json_int_t)per_model[1], tp_models[2][0], (json_int_t)per_model[2],
                                        tp_models[3][0], (json_int_t)per_model[3]));
  return failures ? 1 : 0;
}

static int run_throughput(const char *threads_list) {
  say("bench/ipc --throughput: %d clients, 4 models in 2 share groups (people: face_detection_short_range + "
      "selfie_segmentation; hands: palm_detection_lite + hand_landmark_lite), %.0f s per run, bytes path\n",
      TP_CLIENTS, seconds);
  json_t *runs = json_array();
  int rc = 0;
  char list[256];
  snprintf(list, sizeof(list), "%s", threads_list);
  for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    rc |= throughput_run((unsigned)atoi(tok), runs);
  if (json_out) {
    json_t *j = json_pack("{s:i, s:f, s:o}", "clients", TP_CLIENTS, "seconds", seconds, "runs", runs);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    printf("%s\n", s);
    free(s);
    json_decref(j);
  } else {
    json_decref(runs);
  }
  return rc;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {{"socket", required_argument, NULL, 's'},
                                       {"seconds", required_argument, NULL, 't'},
                                       {"invokes", required_argument, NULL, 'n'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"throughput", no_argument, NULL, 'T'},
                                       {"threads", required_argument, NULL, 'p'},
                                       {"busy-poll-us", required_argument, NULL, 'B'},
                                       {"inline-invoke-us", required_argument, NULL, 'I'},
                                       {"client-busy-poll-us", required_argument, NULL, 'C'},
                                       {"daemon-threads", required_argument, NULL, 'D'},
                                       {"only", required_argument, NULL, 'O'},
                                       {"model", required_argument, NULL, 'M'},
                                       {NULL, 0, NULL, 0}};
  /* off: every wait sleeps; default: arenad's defaults (busy_poll_us, inline_invoke_us) and
   * libarenaclient's (its busy poll); on: the latency settings below (options). */
  setting_t sets[3] = {{.name = "off"},
                       {.name = "default", .busy_poll_us = AR_CONFIG_BUSY_POLL_DEFAULT,
                        .inline_invoke_us = AR_CONFIG_INLINE_INVOKE_DEFAULT,
                        .client_busy_poll_us = AR_CLIENT_BUSY_POLL_DEFAULT},
                       {.name = "on", .busy_poll_us = 200, .inline_invoke_us = 5000, .client_busy_poll_us = 1000}};
  int invokes = 300, o;
  bool throughput = false, seconds_set = false, busy_set = false;
  const char *threads = "1,2", *only = NULL;
  while ((o = getopt_long(argc, argv, "s:t:n:", opts, NULL)) != -1) {
    if (o == 's') socket_path = optarg;
    else if (o == 't') seconds = atof(optarg), seconds_set = true;
    else if (o == 'n') invokes = atoi(optarg);
    else if (o == 'j') json_out = true;
    else if (o == 'T') throughput = true;
    else if (o == 'p') threads = optarg;
    else if (o == 'B') sets[2].busy_poll_us = (unsigned)atoi(optarg), busy_set = true;
    else if (o == 'I') sets[2].inline_invoke_us = (unsigned)atoi(optarg);
    else if (o == 'C') sets[2].client_busy_poll_us = (unsigned)atoi(optarg);
    else if (o == 'D') daemon_threads = (unsigned)atoi(optarg);
    else if (o == 'O') only = optarg;
    else if (o == 'M') only_model = optarg;
    else {
      fprintf(stderr, "usage: bench/ipc [--socket PATH] [--seconds S] [--invokes N] [--json]\n"
                      "                 [--busy-poll-us N] [--inline-invoke-us N] [--client-busy-poll-us N]\n"
                      "                 [--daemon-threads N] [--only off|default|on] [--model STEM]\n"
                      "       bench/ipc --throughput [--seconds S] [--threads 1,2] [--busy-poll-us N] [--json]\n");
      return 2;
    }
  }
  if (invokes < 10) invokes = 10;
  if (throughput) {
    if (!seconds_set) seconds = 20.0;
    if (busy_set) tp_busy_poll_us = (int)sets[2].busy_poll_us;
    return run_throughput(threads);
  }
  if (only) {
    for (int i = 0; i < 3; i++)
      if (strcmp(only, sets[i].name) == 0) return run_overhead(invokes, &sets[i], 1);
    fprintf(stderr, "bench/ipc: --only takes off, default or on\n");
    return 2;
  }
  return run_overhead(invokes, sets, 3);
}
