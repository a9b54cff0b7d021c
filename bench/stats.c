/* stats.c - bench/stats: what stats pollers cost the other clients of a daemon with many models.
 *
 * Starts arenad with --models models configured (default 50: the four demo models cycled under
 * distinct names, face_detection_short_range first), then measures one client's Ping round trip
 * (p50, p99 over --pings) and Invoke of face_detection_short_range (p50, p99 over --invokes, zero
 * input) twice: quiet, and while --pollers threads (default 16) send GetStats back to back, each
 * on a connection of its own. Two daemons, one after the other:
 *   admin      the pollers' uid is an admin (the daemon's own): past the burst their GetStats wait
 *              for their tokens (stats_rate_per_s, stats_burst: the daemon's defaults), each answered
 *              from the stats thread's snapshot (the cost left on the loop: the JSON);
 *   non-admin  admin_uids names someone else: the per-uid rate limit (the daemon's defaults)
 *              refuses most GetStats with EBUSY; a poller waits the "retry in N ms" the refusal
 *              names (--greedy: it does not, and sends again at once).
 * Prints the figures side by side with the ratio loaded / quiet, the pollers' answered and refused
 * GetStats, and the daemon's stats_walks over the run.
 *
 * Starts its own arenad ($AR_BUILDDIR/arenad, else the build dir it was compiled in); with
 * AR_BUILDDIR pointing at an older build it measures that daemon the same way (the config holds no
 * key an older daemon would refuse).
 *
 *   bench/stats [--models N] [--pollers N] [--pings N] [--invokes N] [--seconds S] [--greedy]
 *               [--rounds N] [--only admin|non-admin]
 *
 * --rounds (default 3): quiet and polled blocks alternate that many times (pollers started and
 * stopped each round, --seconds of settling after the start), so that both see the same machine;
 * the figures are over all rounds' samples. The load average before and after is printed.
 */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clients/ar_client.h"
#include "common/ar_error.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_util.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double quantile(double *v, int n, double q) {
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  int k = (int)(q * (double)n + 0.999999) - 1;
  if (k < 0) k = 0;
  if (k >= n) k = n - 1;
  return v[k];
}

static const char *stems[] = {"face_detection_short_range", "palm_detection_lite", "hand_landmark_lite",
                              "selfie_segmentation"};
static int n_models = 50, n_pollers = 16, n_pings = 4000, n_invokes = 400;
static double settle_s = 1.0;
static int rounds = 3;
static bool greedy;
static const char *socket_path;

typedef struct {
  double ping_p50, ping_p99, invoke_p50, invoke_p99;
} figures_t;

/* ---- pollers -------------------------------------------------------------------------------- */

static volatile int pollers_stop;

typedef struct {
  long answered, refused, failed;
} poller_t;

static void *poller(void *arg) {
  poller_t *p = arg;
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  if (ar_client_connect(socket_path, &c, msg, sizeof(msg)) != 0) {
    p->failed++;
    return NULL;
  }
  while (!pollers_stop) {
    char *s = NULL;
    int rc = ar_client_stats_json(c, &s, msg, sizeof(msg));
    free(s);
    if (rc == 0) {
      p->answered++;
    } else if (rc == AR_EBUSY) {
      p->refused++;
      const char *r = strstr(msg, "retry in ");
      long ms = r ? atol(r + 9) : 0;
      if (!greedy && ms > 0) usleep((useconds_t)(ms > 1000 ? 1000 : ms) * 1000);
    } else {
      p->failed++;
      break;
    }
  }
  ar_client_close(c);
  return NULL;
}

/* ---- the other client ------------------------------------------------------------------------ */

/* Samples of one condition (quiet or under pollers), over every round, ms. */
typedef struct {
  double *ping, *invoke;
  int n_ping, n_invoke;
} samples_t;

static int measure(ar_client_t *c, const ar_client_tensor_t *in, samples_t *sm) {
  char msg[AR_MSG_BYTES];
  for (int i = 0; i < n_pings; i++) {
    double t0 = now_s();
    if (ar_client_ping(c, NULL, 0, msg, sizeof(msg)) != 0) {
      fprintf(stderr, "bench/stats: ping: %s\n", msg);
      return 1;
    }
    sm->ping[sm->n_ping++] = (now_s() - t0) * 1e3;
  }
  for (int i = 0; i < n_invokes; i++) {
    ar_client_result_t res;
    double t0 = now_s();
    if (ar_client_invoke(c, "m0", in, 1, &res, msg, sizeof(msg)) != 0) {
      fprintf(stderr, "bench/stats: invoke: %s\n", msg);
      return 1;
    }
    sm->invoke[sm->n_invoke++] = (now_s() - t0) * 1e3;
    ar_client_result_free(&res);
  }
  return 0;
}

static void figures_of(samples_t *sm, figures_t *f) {
  f->ping_p50 = quantile(sm->ping, sm->n_ping, 0.5);
  f->ping_p99 = quantile(sm->ping, sm->n_ping, 0.99);
  f->invoke_p50 = quantile(sm->invoke, sm->n_invoke, 0.5);
  f->invoke_p99 = quantile(sm->invoke, sm->n_invoke, 0.99);
}

static void loadavg(char *out, size_t n) {
  FILE *f = fopen("/proc/loadavg", "r");
  out[0] = '\0';
  if (f) {
    if (fgets(out, (int)n, f)) out[strcspn(out, " ")] = '\0';
    fclose(f);
  }
}

static long stats_walks(ar_client_t *c) {
  char *s = NULL, msg[AR_MSG_BYTES];
  if (ar_client_stats_json(c, &s, msg, sizeof(msg)) != 0) return -1;
  json_t *j = json_loads(s, 0, NULL);
  free(s);
  json_t *w = json_object_get(json_object_get(j, "daemon"), "stats_walks");
  long v = json_is_integer(w) ? (long)json_integer_value(w) : -1;
  json_decref(j);
  return v;
}

static int run(const char *name, bool admin) {
  char dir[] = "/tmp/bench_stats.XXXXXX", cfg[128], path[1024];
  if (mkdtemp(dir) == NULL) return 1;
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  FILE *f = fopen(cfg, "w");
  if (f == NULL) return 1;
  fprintf(f, "{\"threads\": 1, \"workers\": 2,");
  if (!admin) fprintf(f, " \"admin_uids\": [%u], \"admin_gids\": [%u],", (unsigned)geteuid() + 4242u,
                      (unsigned)getegid() + 4242u);
  fprintf(f, " \"models\": [");
  for (int i = 0; i < n_models; i++)
    fprintf(f, "%s{\"name\": \"m%d\", \"path\": \"%s\"}", i ? ", " : "", i,
            ar_test_model_path(path, sizeof(path), stems[i % 4]));
  fprintf(f, "]}\n");
  fclose(f);
  ar_test_daemon_t d;
  const char *extra[] = {"--config", cfg, NULL};
  int rc = ar_td_start(&d, "1G", extra);
  unlink(cfg);
  rmdir(dir);
  if (rc != 0) {
    fprintf(stderr, "bench/stats: could not start arenad (log %s)\n", d.log);
    return 1;
  }
  socket_path = d.socket;
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  ar_client_model_t *ms = NULL;
  size_t n = 0;
  rc = ar_client_connect(socket_path, &c, msg, sizeof(msg));
  for (int tries = 0; rc == 0 && tries < 12000; tries++) {   /* the configured loads, up to 2 minutes */
    free(ms);
    ms = NULL;
    if ((rc = ar_client_list(c, &ms, &n, msg, sizeof(msg))) != 0 || n == (size_t)n_models) break;
    usleep(10000);
  }
  if (rc != 0 || n != (size_t)n_models) {
    fprintf(stderr, "bench/stats: %zu of %d models loaded: %s (log %s)\n", n, n_models, rc ? msg : "", d.log);
    free(ms);
    if (c) ar_client_close(c);
    ar_td_stop(&d);
    return 1;
  }
  ar_client_tensor_t in = {0};
  for (size_t i = 0; i < n; i++)
    if (strcmp(ms[i].name, "m0") == 0) in = ms[i].inputs[0];
  free(ms);
  in.bytes = ar_client_dtype_size(in.dtype);
  for (int k = 0; k < in.rank; k++) in.bytes *= (uint64_t)in.dims[k];
  void *zeros = calloc(1, (size_t)in.bytes);
  in.data = zeros;
  figures_t quiet, loaded;
  samples_t sq = {0}, sl = {0};
  sq.ping = malloc(sizeof(double) * (size_t)(n_pings * rounds));
  sq.invoke = malloc(sizeof(double) * (size_t)(n_invokes * rounds));
  sl.ping = malloc(sizeof(double) * (size_t)(n_pings * rounds));
  sl.invoke = malloc(sizeof(double) * (size_t)(n_invokes * rounds));
  long walks0 = stats_walks(c);
  char load0[32], load1[32];
  loadavg(load0, sizeof(load0));
  long answered = 0, refused = 0, failed = 0;
  double secs = 0;
  /* Quiet and polled blocks alternate, so both see the same machine over the run. */
  for (int round = 0; rc == 0 && round < rounds; round++) {
    rc = measure(c, &in, &sq);
    pthread_t th[256];
    poller_t pl[256];
    memset(pl, 0, sizeof(pl));
    pollers_stop = 0;
    int np = rc == 0 ? (n_pollers > 256 ? 256 : n_pollers) : 0;
    for (int i = 0; i < np; i++) pthread_create(&th[i], NULL, poller, &pl[i]);
    if (rc == 0) usleep((useconds_t)(settle_s * 1e6));
    double t0 = now_s();
    if (rc == 0) rc = measure(c, &in, &sl);
    secs += now_s() - t0;
    pollers_stop = 1;
    for (int i = 0; i < np; i++) {
      pthread_join(th[i], NULL);
      answered += pl[i].answered;
      refused += pl[i].refused;
      failed += pl[i].failed;
    }
  }
  loadavg(load1, sizeof(load1));
  if (rc == 0) {
    figures_of(&sq, &quiet);
    figures_of(&sl, &loaded);
  }
  free(sq.ping);
  free(sq.invoke);
  free(sl.ping);
  free(sl.invoke);
  int np = n_pollers > 256 ? 256 : n_pollers;
  long walks1 = stats_walks(c);
  free(zeros);
  ar_client_close(c);
  ar_td_stop(&d);
  if (rc != 0) return rc;
  printf("\n== %s: %d models, %d pollers%s ==\n", name, n_models, np,
         admin ? " (admin uid: paced, never refused)" : greedy ? " (non-admin, greedy: no wait after EBUSY)"
                                                        : " (non-admin: wait the 'retry in' after EBUSY)");
  printf("                       quiet      under pollers   ratio\n");
  printf("ping   p50 (ms)   %9.3f   %12.3f   %6.2fx\n", quiet.ping_p50, loaded.ping_p50, loaded.ping_p50 / quiet.ping_p50);
  printf("ping   p99 (ms)   %9.3f   %12.3f   %6.2fx\n", quiet.ping_p99, loaded.ping_p99, loaded.ping_p99 / quiet.ping_p99);
  printf("invoke p50 (ms)   %9.3f   %12.3f   %6.2fx\n", quiet.invoke_p50, loaded.invoke_p50,
         loaded.invoke_p50 / quiet.invoke_p50);
  printf("invoke p99 (ms)   %9.3f   %12.3f   %6.2fx\n", quiet.invoke_p99, loaded.invoke_p99,
         loaded.invoke_p99 / quiet.invoke_p99);
  printf("pollers: %ld GetStats answered, %ld refused (EBUSY), %ld failed, over %d rounds of %.1f s polled (+ %.1f s "
         "settling each); stats_walks %ld -> %ld; load average %s -> %s\n", answered, refused, failed, rounds,
         secs / rounds, settle_s, walks0, walks1, load0, load1);
  return failed ? 1 : 0;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {{"models", required_argument, NULL, 'm'},
                                       {"pollers", required_argument, NULL, 'p'},
                                       {"pings", required_argument, NULL, 'n'},
                                       {"invokes", required_argument, NULL, 'i'},
                                       {"seconds", required_argument, NULL, 's'},
                                       {"greedy", no_argument, NULL, 'g'},
                                       {"rounds", required_argument, NULL, 'r'},
                                       {"only", required_argument, NULL, 'o'},
                                       {NULL, 0, NULL, 0}};
  const char *only = NULL;
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
      case 'm': n_models = atoi(optarg); break;
      case 'p': n_pollers = atoi(optarg); break;
      case 'n': n_pings = atoi(optarg); break;
      case 'i': n_invokes = atoi(optarg); break;
      case 's': settle_s = atof(optarg); break;
      case 'g': greedy = true; break;
      case 'r': rounds = atoi(optarg); break;
      case 'o': only = optarg; break;
      default:
        fprintf(stderr, "usage: bench/stats [--models N] [--pollers N] [--pings N] [--invokes N] [--seconds S] "
                        "[--greedy] [--rounds N] [--only admin|non-admin]\n");
        return 2;
    }
  }
  if (n_models < 1 || n_models > 64 || n_pings < 1 || n_invokes < 1 || rounds < 1) {
    fprintf(stderr, "bench/stats: --models 1..64, --pings and --invokes >= 1\n");
    return 2;
  }
  printf("bench/stats: arenad %s\n", PACKAGE_VERSION);
  int rc = 0;
  if (only == NULL || strcmp(only, "admin") == 0) rc |= run("admin", true);
  if (only == NULL || strcmp(only, "non-admin") == 0) rc |= run("non-admin", false);
  return rc;
}
