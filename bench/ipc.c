/* ipc.c - bench/ipc: what the daemon's socket costs.
 *
 *   1. Ping round trips per second over the Unix socket, with 1 client and with 8 concurrent
 *      clients (one connection and one thread each, blocking libarenaclient calls).
 *   2. Invoke of face_detection_short_range on its golden photo input: over the socket (request
 *      framing, protobuf encode/decode of the 192 KiB input and 60 KiB of outputs, the group
 *      queue, a worker thread) against in-process (ar_interp_invoke after copying the input in,
 *      the outputs copied out, as the daemon's worker does). The difference of the medians is the
 *      IPC overhead per invoke, in µs.
 *
 * Starts its own arenad ($AR_BUILDDIR/arenad, else the build dir it was compiled in) on a temp
 * socket unless --socket PATH names a running one.
 *
 *   bench/ipc [--socket PATH] [--seconds S] [--invokes N]
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
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

static const char *socket_path;
static double seconds = 2.0;

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
  for (int i = 0; i < clients; i++) {
    pthread_join(th[i], NULL);
    if (p[i].failed) return -1;
    total += p[i].pings;
    if (p[i].t_end > t1) t1 = p[i].t_end;
  }
  return (double)total / (t1 - t0);
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

int main(int argc, char **argv) {
  static const struct option opts[] = {{"socket", required_argument, NULL, 's'},
                                       {"seconds", required_argument, NULL, 't'},
                                       {"invokes", required_argument, NULL, 'n'},
                                       {NULL, 0, NULL, 0}};
  int invokes = 300, o;
  while ((o = getopt_long(argc, argv, "s:t:n:", opts, NULL)) != -1) {
    if (o == 's') socket_path = optarg;
    else if (o == 't') seconds = atof(optarg);
    else if (o == 'n') invokes = atoi(optarg);
    else {
      fprintf(stderr, "usage: bench/ipc [--socket PATH] [--seconds S] [--invokes N]\n");
      return 2;
    }
  }
  if (invokes < 10) invokes = 10;
  ar_test_daemon_t d = {0};
  if (socket_path == NULL) {
    if (ar_td_start(&d, "64M", NULL) != 0) {
      fprintf(stderr, "bench/ipc: could not start arenad (log %s)\n", d.log);
      return 1;
    }
    socket_path = d.socket;
  }
  const char *src = getenv("AR_SRCDIR") ? getenv("AR_SRCDIR") : AR_SRCDIR;
  char model_path[1024], input_path[1024];
  snprintf(model_path, sizeof(model_path), "%s/%s/face_detection_short_range.tflite",
           getenv("AR_MODELS_DIR") ? getenv("AR_MODELS_DIR") : src, getenv("AR_MODELS_DIR") ? "" : "models");
  snprintf(input_path, sizeof(input_path), "%s/tests/golden/face_detection_short_range/photo/input_0.bin", src);

  printf("bench/ipc: arenad %s, socket %s\n\n", PACKAGE_VERSION, socket_path);
  double r1 = ping_rate(1), r8 = ping_rate(8);
  printf("Ping round trips/s   1 client: %10.0f   (%.1f us per round trip)\n", r1, r1 > 0 ? 1e6 / r1 : 0);
  printf("Ping round trips/s   8 clients: %9.0f   (%.2fx the single client)\n", r8, r1 > 0 ? r8 / r1 : 0);

  /* Invoke over the socket. */
  char msg[AR_MSG_BYTES];
  ar_client_t *c = NULL;
  size_t in_bytes = 0;
  void *input = read_file(input_path, &in_bytes);
  int rc = input ? ar_client_connect(socket_path, &c, msg, sizeof(msg)) : AR_ENOENT;
  ar_client_model_t *info = calloc(1, sizeof(*info));
  if (rc == 0) rc = ar_client_load(c, "bench_face", model_path, NULL, NULL, info, msg, sizeof(msg));
  if (rc != 0) {
    fprintf(stderr, "bench/ipc: %s (%s)\n", msg, input ? "" : input_path);
    ar_td_stop(&d);
    return 1;
  }
  ar_client_tensor_t t = info->inputs[0];
  t.data = input;
  t.bytes = in_bytes;
  double *sock = malloc(sizeof(double) * (size_t)invokes), *inproc = malloc(sizeof(double) * (size_t)invokes);
  double *sock_interp = malloc(sizeof(double) * (size_t)invokes), *wire = malloc(sizeof(double) * (size_t)invokes);

  /* The same model in process. */
  ar_model_t *model = NULL;
  ar_interp_t *in = NULL;
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  if (ar_model_load(model_path, &model, msg, sizeof(msg)) != 0 || ar_interp_new(model, &opt, &in, msg, sizeof(msg)) != 0 ||
      ar_interp_place_owned(in, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "bench/ipc: in-process: %s\n", msg);
    return 1;
  }
  uint64_t out_bytes = 0;
  for (int j = 0; j < ar_interp_n_outputs(in); j++) out_bytes += ar_interp_output(in, j)->bytes;
  uint8_t *outs = malloc(out_bytes);

  /* Alternate the two so that both see the same machine state (other load, frequency). */
  for (int i = -10; i < invokes; i++) {
    ar_client_result_t r;
    double t0 = now_s();
    rc = ar_client_invoke(c, "bench_face", &t, 1, &r, msg, sizeof(msg));
    double t1 = now_s();
    if (rc != 0) {
      fprintf(stderr, "bench/ipc: invoke: %s\n", msg);
      return 1;
    }
    if (i >= 0) {
      sock[i] = (t1 - t0) * 1e6;
      sock_interp[i] = (double)r.invoke_us;
      wire[i] = sock[i] - (double)r.invoke_us;   /* everything but the interpreter, per invoke */
    }
    ar_client_result_free(&r);
    t0 = now_s();
    memcpy(ar_interp_input(in, 0)->data, input, in_bytes);
    ar_interp_invoke(in);
    uint64_t off = 0;
    for (int j = 0; j < ar_interp_n_outputs(in); j++) {
      const ar_tview_t *v = ar_interp_output(in, j);
      memcpy(outs + off, v->data, v->bytes);
      off += v->bytes;
    }
    t1 = now_s();
    if (i >= 0) inproc[i] = (t1 - t0) * 1e6;
  }
  ar_client_close(c);
  qsort(sock, (size_t)invokes, sizeof(double), cmp_double);
  qsort(inproc, (size_t)invokes, sizeof(double), cmp_double);
  qsort(sock_interp, (size_t)invokes, sizeof(double), cmp_double);
  qsort(wire, (size_t)invokes, sizeof(double), cmp_double);
  double ms = sock[invokes / 2], mi = inproc[invokes / 2], msi = sock_interp[invokes / 2];
  printf("\nInvoke face_detection_short_range (input %zu B, outputs %" PRIu64 " B), %d invokes each, medians:\n",
         in_bytes, out_bytes, invokes);
  printf("  over the socket (client round trip): %9.1f us   (p90 %.1f us)\n", ms, sock[invokes * 9 / 10]);
  printf("    of which in the daemon's interpreter: %6.1f us\n", msi);
  printf("  in process (copy in, invoke, copy out): %6.1f us   (p90 %.1f us)\n", mi, inproc[invokes * 9 / 10]);
  printf("  IPC overhead per invoke: %.1f us as the difference of the medians (%.1f%% of in-process);\n"
         "    %.1f us measured directly (round trip minus the daemon's invoke_us, median; p90 %.1f us)\n",
         ms - mi, 100.0 * (ms - mi) / mi, wire[invokes / 2], wire[invokes * 9 / 10]);
  free(outs);
  ar_interp_free(in);
  ar_model_free(model);
  free(sock);
  free(inproc);
  free(sock_interp);
  free(input);
  free(info);
  if (d.pid) ar_td_stop(&d);
  return 0;
}
