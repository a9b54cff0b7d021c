/* ipc.c - bench/ipc: what the daemon's socket costs, and what the daemon serves under load.
 *
 * Default mode:
 *   1. Ping round trips per second over the Unix socket, with 1 client and with 8 concurrent
 *      clients (one connection and one thread each, blocking libarenaclient calls).
 *   2. Invoke of face_detection_short_range and of selfie_segmentation on their golden photo
 *      inputs, three ways in alternating rounds (so all see the same machine state): over the
 *      socket with the tensors' bytes in the request and reply (the bytes path), over the socket
 *      with the input and the outputs in a registered shared-memory buffer (the shm path: the
 *      client's input already lives in the buffer, the outputs land there), and in process
 *      (ar_interp_invoke after copying the input in, the outputs copied out, as the daemon's worker
 *      does). The overhead of one invoke is its round trip minus the daemon's invoke_us (the
 *      worker's copy in + invoke + copy out: what in-process costs), so it is measured per invoke:
 *      median and p99 of that; the difference of the medians against in-process is printed too.
 *
 * --throughput: 8 clients (one connection and thread each) invoking 4 models in two share groups
 *   ("people": face_detection_short_range + selfie_segmentation, "hands": palm_detection_lite +
 *   hand_landmark_lite; client i runs model i % 4) for --seconds (default 20) against a daemon
 *   started with each value of --threads (the config's "threads"; default "1,2"): invokes/s, p50
 *   and p99 latency of the round trips, failures, and the daemon's heap allocations inside invoke
 *   (stats heap_allocs_in_invoke, summed over the models).
 *
 * --json: one JSON object on stdout instead of the text (default mode: ping_per_s,
 *   ping_per_s_8_clients, overhead_us_median, overhead_us_p99, shm_overhead_us_median,
 *   shm_overhead_us_p99 for face_detection_short_range, and one object per model under "models";
 *   --throughput: "runs", one object per thread count).
 *
 * Starts its own arenad ($AR_BUILDDIR/arenad, else the build dir it was compiled in) on a temp
 * socket unless --socket PATH names a running one (default mode only).
 *
 *   bench/ipc [--socket PATH] [--seconds S] [--invokes N] [--json]
 *   bench/ipc --throughput [--seconds S] [--threads 1,2] [--json]
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

static void *pinger(void *arg) {
  pinger_t *p = arg;
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  if (ar_client_connect(socket_path, &c, msg, sizeof(msg)) != 0) {
    p->failed = 1;
    return NULL;
  }
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
  for (int i = -10; i < invokes; i++) {
    ar_client_result_t r;
    double t0 = now_s();
    rc = ar_client_invoke(c, stem, &tb, 1, &r, msg, sizeof(msg));
    double t1 = now_s();
    if (rc != 0) {
      fprintf(stderr, "bench/ipc: invoke %s: %s\n", stem, msg);
      return -1;
    }
    if (i >= 0) {
      rt_b[i] = (t1 - t0) * 1e6;
      ov_b[i] = rt_b[i] - (double)r.invoke_us;
    }
    ar_client_result_free(&r);
    t0 = now_s();
    rc = ar_client_invoke_into(c, stem, &ts, 1, out_ptr, out_sz, (size_t)n_out, &r, msg, sizeof(msg));
    t1 = now_s();
    if (rc != 0) {
      fprintf(stderr, "bench/ipc: invoke %s through shared memory: %s\n", stem, msg);
      return -1;
    }
    if (i >= 0) {
      rt_s[i] = (t1 - t0) * 1e6;
      ov_s[i] = rt_s[i] - (double)r.invoke_us;
    }
    ar_client_result_free(&r);
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
    if (i >= 0) ip[i] = (t1 - t0) * 1e6;
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
  say("\nInvoke %s (input %zu B, outputs %" PRIu64 " B), %d invokes each way, alternating:\n", stem, in_bytes,
      out_bytes, invokes);
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

static int run_overhead(int invokes) {
  ar_test_daemon_t d = {0};
  if (socket_path == NULL) {
    if (ar_td_start(&d, "64M", NULL) != 0) {
      fprintf(stderr, "bench/ipc: could not start arenad (log %s)\n", d.log);
      return 1;
    }
    socket_path = d.socket;
  }
  say("bench/ipc: arenad %s, socket %s\n\n", PACKAGE_VERSION, socket_path);
  double r1 = ping_rate(1), r8 = ping_rate(8);
  say("Ping round trips/s   1 client: %10.0f   (%.1f us per round trip; target >= 50000)\n", r1, r1 > 0 ? 1e6 / r1 : 0);
  say("Ping round trips/s   8 clients: %9.0f   (%.2fx the single client)\n", r8, r1 > 0 ? r8 / r1 : 0);
  char msg[AR_MSG_BYTES];
  ar_client_t *c = NULL;
  if (ar_client_connect(socket_path, &c, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "bench/ipc: %s\n", msg);
    return 1;
  }
  static const char *const stems[] = {"face_detection_short_range", "selfie_segmentation"};
  overhead_t o[2];
  json_t *models = json_object();
  for (int k = 0; k < 2; k++) {
    if (measure_model(c, stems[k], invokes, &o[k]) != 0) {
      if (d.pid) ar_td_stop(&d);
      return 1;
    }
    json_object_set_new(models, stems[k], overhead_json(&o[k]));
  }
  ar_client_close(c);
  say("\ntargets: overhead <= 30 us median with shared memory, <= 100 us on the bytes path\n");
  if (json_out) {
    json_t *j = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:o}", "ping_per_s", r1, "ping_per_s_8_clients", r8,
                          "overhead_us_median", o[0].bytes_med, "overhead_us_p99", o[0].bytes_p99,
                          "shm_overhead_us_median", o[0].shm_med, "shm_overhead_us_p99", o[0].shm_p99, "model",
                          stems[0], "models", models);
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    printf("%s\n", s);
    free(s);
    json_decref(j);
  } else {
    json_decref(models);
  }
  if (d.pid) ar_td_stop(&d);
  return 0;
}

/* ---- throughput ---------------------------------------------------------------------------- */

#define TP_CLIENTS 8
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
                                       {NULL, 0, NULL, 0}};
  int invokes = 300, o;
  bool throughput = false, seconds_set = false;
  const char *threads = "1,2";
  while ((o = getopt_long(argc, argv, "s:t:n:", opts, NULL)) != -1) {
    if (o == 's') socket_path = optarg;
    else if (o == 't') seconds = atof(optarg), seconds_set = true;
    else if (o == 'n') invokes = atoi(optarg);
    else if (o == 'j') json_out = true;
    else if (o == 'T') throughput = true;
    else if (o == 'p') threads = optarg;
    else {
      fprintf(stderr, "usage: bench/ipc [--socket PATH] [--seconds S] [--invokes N] [--json]\n"
                      "       bench/ipc --throughput [--seconds S] [--threads 1,2] [--json]\n");
      return 2;
    }
  }
  if (invokes < 10) invokes = 10;
  if (throughput) {
    if (!seconds_set) seconds = 20.0;
    return run_throughput(threads);
  }
  return run_overhead(invokes);
}
