/* fixed.c - bench/fixed: the fixed costs of an invoke - per invoke and per operator - on models so
 * small that nothing but those costs is left, arenad beside native TensorFlow Lite in one run.
 *
 * The models are generated at run time (tests/ar_test_model.c's builder, written to a temporary
 * file that both engines load): a chain of N operators, N = 1, 10, 100 (--ops), each reading the
 * previous one's [1, 16] output:
 *   add_f32   float32 ADD with a constant [16]
 *   add_i8    int8 ADD with a constant [16] (scale 0.05, zero point 0 everywhere)
 *   fc_i8     int8 FULLY_CONNECTED 16 -> 16 with an int32 bias (per-tensor weights)
 * Per chain and N, rounds alternate the engines on the same machine state (--rounds R, --runs N):
 *   arenad 1 thr   in-process ar_interp_invoke, one thread: a round's invokes timed in batches of
 *                  10, the median of the batch means per round, then the median over the rounds
 *                  and the least batch mean (as tflite_run takes its median over single invokes);
 *   arenad 2 thr   the same on an interpreter of two threads (a pool with one helper): what the
 *                  pool costs when no operator is worth splitting (enter/leave of the invoke, the
 *                  helper's spin) - it should match one thread;
 *   copy in / out  the input bytes copied into the input tensor and the output bytes out of the
 *                  output tensor, timed apart (what `arenactl bench` leaves out; the daemon's
 *                  bytes path does both);
 *   TFLite, XNNPACK   ../shared/ref/native/tflite_run MODEL --zero --runs N --warmup W (its builtin
 *                  kernels, then --xnnpack), its median and minimum per Invoke, one thread, as a
 *                  child process in the same round.
 * Then per chain and engine the cost per operator, (t(100) - t(1)) / 99, and the fixed cost per
 * invoke, t(1) - that (from the medians), which is what a small model invoked every few
 * milliseconds pays on every call.
 *
 *   bench/fixed [--runs N] [--rounds R] [--ops 1,10,100] [--native PATH | --no-native] [CHAIN ...]
 * Environment: AR_NATIVE_RUNNER (default <srcdir>/../shared/ref/native/tflite_run).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ar_stats.h"
#include "interp/ar_interp.h"
#include "loader/ar_model.h"
#include "tests/ar_test_model.h"

#define FX_MAX_OPS 200
#define FX_MAX_NS 8
#define FX_MAX_ROUNDS 64
#define FX_WIDTH 16

enum { FX_ADD_F32, FX_ADD_I8, FX_FC_I8, FX_N_CHAINS };
static const char *const fx_names[FX_N_CHAINS] = {"add_f32", "add_i8", "fc_i8"};

/* The chain `kind` of n operators as TFLite flatbuffer bytes (malloc'd), *bytes set. Tensor i
 * (0..n) is the activation after i operators; the constants follow. */
static uint8_t *fx_model(int kind, int n, size_t *bytes) {
  static ar_tm_tensor_t t[2 * FX_MAX_OPS + 8];
  static ar_tm_op_t ops[FX_MAX_OPS];
  static ar_tm_quant_t q[2 * FX_MAX_OPS + 8];
  static float cf[FX_WIDTH];
  static int8_t ci[FX_WIDTH], w[FX_WIDTH * FX_WIDTH];
  static int32_t bias[FX_WIDTH];
  static const float s_act = 0.05f, s_w = 0.01f, s_b = 0.05f * 0.01f;
  static const int64_t z0 = 0;
  const bool i8 = kind != FX_ADD_F32;
  for (int i = 0; i < FX_WIDTH; i++) { cf[i] = 0.001f * (float)i; ci[i] = (int8_t)(i % 3 - 1); bias[i] = i - 8; }
  for (int i = 0; i < FX_WIDTH * FX_WIDTH; i++) w[i] = (int8_t)((i * 7) % 5 - 2);
  memset(t, 0, sizeof t);
  memset(ops, 0, sizeof ops);
  int nt = 0, nq = 0;
  for (int i = 0; i <= n; i++) {
    t[nt] = (ar_tm_tensor_t){.name = i == 0 ? "x" : i == n ? "y" : "h", .dtype = i8 ? AR_DTYPE_INT8 : AR_DTYPE_FLOAT32,
                             .rank = 2, .dims = {1, FX_WIDTH}};
    if (i8) q[nq++] = (ar_tm_quant_t){nt, 1, &s_act, &z0, 0};
    nt++;
  }
  const int c0 = nt;   /* ADD: the constant; FC: weights, then bias */
  if (kind == FX_FC_I8) {
    t[nt] = (ar_tm_tensor_t){.name = "w", .dtype = AR_DTYPE_INT8, .rank = 2, .dims = {FX_WIDTH, FX_WIDTH}, .data = w};
    q[nq++] = (ar_tm_quant_t){nt++, 1, &s_w, &z0, 0};
    t[nt] = (ar_tm_tensor_t){.name = "b", .dtype = AR_DTYPE_INT32, .rank = 1, .dims = {FX_WIDTH}, .data = bias};
    q[nq++] = (ar_tm_quant_t){nt++, 1, &s_b, &z0, 0};
  } else {
    t[nt] = (ar_tm_tensor_t){.name = "c", .dtype = i8 ? AR_DTYPE_INT8 : AR_DTYPE_FLOAT32, .rank = 1, .dims = {FX_WIDTH},
                             .data = i8 ? (const void *)ci : (const void *)cf};
    if (i8) q[nq++] = (ar_tm_quant_t){nt, 1, &s_act, &z0, 0};
    nt++;
  }
  for (int k = 0; k < n; k++) {
    ar_tm_op_t *o = &ops[k];
    if (kind == FX_FC_I8) {
      *o = (ar_tm_op_t){.builtin = 9 /* FULLY_CONNECTED */, .n_in = 3, .n_out = 1, .in = {k, c0, c0 + 1},
                        .out = {k + 1}, .options_type = 8 /* FullyConnectedOptions */};
    } else {
      *o = (ar_tm_op_t){.builtin = 0 /* ADD */, .n_in = 2, .n_out = 1, .in = {k, c0}, .out = {k + 1},
                        .options_type = 11 /* AddOptions */};
    }
  }
  const int32_t gin[1] = {0}, gout[1] = {n};
  return ar_tm_build_quant(t, nt, ops, n, gin, 1, gout, 1, q, nq, bytes);
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

typedef struct {
  ar_model_t *model;
  ar_interp_t *in1, *in2;      /* one thread, two threads */
} fx_arenad_t;

static int fx_open(const char *path, fx_arenad_t *a) {
  char msg[512];
  memset(a, 0, sizeof *a);
  int rc = ar_model_load(path, &a->model, msg, sizeof msg);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  if (rc == 0) rc = ar_interp_new(a->model, &opt, &a->in1, msg, sizeof msg);
  if (rc == 0) rc = ar_interp_place_owned(a->in1, msg, sizeof msg);
  opt.threads = 2;
  if (rc == 0) rc = ar_interp_new(a->model, &opt, &a->in2, msg, sizeof msg);
  if (rc == 0) rc = ar_interp_place_owned(a->in2, msg, sizeof msg);
  if (rc != 0) fprintf(stderr, "bench/fixed: %s: %s\n", path, msg);
  return rc;
}

static void fx_close(fx_arenad_t *a) {
  ar_interp_free(a->in1);
  ar_interp_free(a->in2);
  ar_model_free(a->model);
}

/* `runs` invokes of `in` in batches of FX_BATCH, each batch timed: the median of the batches' mean
 * ns per invoke, and the least in *min_ns. On a loaded machine a batch that lost the core to
 * another process is an outlier the median ignores, where one long batch's mean would carry it. */
#define FX_BATCH 10
#define FX_MAX_BATCHES 4096
static double fx_time_invokes(ar_interp_t *in, int runs, double *min_ns) {
  static double b[FX_MAX_BATCHES];
  int nb = (runs + FX_BATCH - 1) / FX_BATCH;
  if (nb > FX_MAX_BATCHES) nb = FX_MAX_BATCHES;
  for (int i = 0; i < 3; i++) (void)ar_interp_invoke(in);
  for (int k = 0; k < nb; k++) {
    const double t0 = now_ns();
    for (int i = 0; i < FX_BATCH; i++) (void)ar_interp_invoke(in);
    b[k] = (now_ns() - t0) / FX_BATCH;
  }
  double mn = b[0];
  for (int k = 1; k < nb; k++) mn = b[k] < mn ? b[k] : mn;
  *min_ns = mn;
  return ar_stats_median(b, nb);
}

/* Mean ns of `runs` copies of `bytes` bytes from src to dst; the compiler may not drop them. */
static double fx_time_copy(void *dst, const void *src, size_t bytes, int runs) {
  const double t0 = now_ns();
  for (int i = 0; i < runs; i++) {
    memcpy(dst, src, bytes);
    __asm__ volatile("" : : "r"(dst) : "memory");
  }
  return (now_ns() - t0) / runs;
}

/* tflite_run's median and minimum (ms) for `model`, or -1 when it cannot run it. */
static int fx_native(const char *runner, const char *model, bool xnnpack, int runs, double *median_ms,
                     double *min_ms) {
  char cmd[2048];
  *median_ms = *min_ms = -1;
  if (snprintf(cmd, sizeof cmd, "'%s' '%s' --zero --runs %d --warmup %d%s 2>/dev/null", runner, model, runs,
               runs / 10 + 1, xnnpack ? " --xnnpack" : "") >= (int)sizeof cmd)
    return -1;
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char line[512];
  while (fgets(line, sizeof line, p)) {
    const char *mn = strstr(line, "min="), *md = strstr(line, "median=");
    if (mn && md) { *min_ms = atof(mn + 4); *median_ms = atof(md + 7); }
  }
  return pclose(p) == 0 && *median_ms >= 0 ? 0 : -1;
}

enum { E_AR1, E_AR2, E_IN, E_OUT, E_TFL, E_XNN, E_N };
static const char *const e_names[E_N] = {"arenad 1 thr", "arenad 2 thr", "copy in", "copy out",
                                         "TFLite builtin", "TFLite XNNPACK"};

int main(int argc, char **argv) {
  int runs = 2000, rounds = 5, ns[FX_MAX_NS] = {1, 10, 100}, n_ns = 3;
  bool native = true;
  const char *runner = getenv("AR_NATIVE_RUNNER");
  static char runner_default[1024];
  snprintf(runner_default, sizeof runner_default, "%s/../shared/ref/native/tflite_run", AR_SRCDIR);
  if (!runner || !*runner) runner = runner_default;
  static const struct option lo[] = {{"runs", 1, 0, 'n'}, {"rounds", 1, 0, 'r'}, {"ops", 1, 0, 'o'},
                                     {"native", 1, 0, 'N'}, {"no-native", 0, 0, 'X'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (c) {
      case 'n': runs = atoi(optarg); break;
      case 'r': rounds = atoi(optarg); break;
      case 'o': {
        n_ns = 0;
        for (char *s = optarg; *s && n_ns < FX_MAX_NS;) {
          ns[n_ns++] = (int)strtol(s, &s, 10);
          if (*s == ',') s++;
          else break;
        }
        break;
      }
      case 'N': runner = optarg; break;
      case 'X': native = false; break;
      default:
        fprintf(c == 'h' ? stdout : stderr, "usage: bench/fixed [--runs N] [--rounds R] [--ops 1,10,100] "
                "[--native PATH | --no-native] [add_f32|add_i8|fc_i8 ...]\n");
        return c == 'h' ? 0 : 2;
    }
  }
  if (runs < 1 || rounds < 1 || rounds > FX_MAX_ROUNDS) { fprintf(stderr, "bench/fixed: bad --runs/--rounds\n"); return 2; }
  for (int i = 0; i < n_ns; i++)
    if (ns[i] < 1 || ns[i] > FX_MAX_OPS) { fprintf(stderr, "bench/fixed: --ops values must be 1..%d\n", FX_MAX_OPS); return 2; }
  if (native && access(runner, X_OK) != 0) {
    printf("bench/fixed: no native runner at %s (--native PATH): arenad only\n", runner);
    native = false;
  }
  bool want[FX_N_CHAINS] = {optind >= argc, optind >= argc, optind >= argc};
  for (int i = optind; i < argc; i++) {
    int k = 0;
    while (k < FX_N_CHAINS && strcmp(argv[i], fx_names[k]) != 0) k++;
    if (k == FX_N_CHAINS) { fprintf(stderr, "bench/fixed: unknown chain '%s'\n", argv[i]); return 2; }
    want[k] = true;
  }
  printf("bench/fixed: chains of N tiny operators on [1,%d] tensors, %d round(s) x %d invokes per engine, "
         "engines alternating; us per invoke, median (min)\n", FX_WIDTH, rounds, runs);
  printf("%-8s %4s", "chain", "N");
  for (int e = 0; e < E_N; e++) printf(" %19s", e_names[e]);
  printf("\n");
  double med[FX_N_CHAINS][FX_MAX_NS][E_N];
  for (int k = 0; k < FX_N_CHAINS; k++) {
    if (!want[k]) continue;
    for (int ni = 0; ni < n_ns; ni++) {
      size_t bytes = 0;
      uint8_t *mb = fx_model(k, ns[ni], &bytes);
      char path[] = "/tmp/arenad-bench-fixed-XXXXXX";
      int fd = mkstemp(path);
      if (fd < 0 || write(fd, mb, bytes) != (ssize_t)bytes) { fprintf(stderr, "bench/fixed: %s: %s\n", path, strerror(errno)); return 1; }
      close(fd);
      free(mb);
      fx_arenad_t a;
      if (fx_open(path, &a) != 0) { unlink(path); return 1; }
      ar_tview_t *x = ar_interp_input(a.in1, 0);
      const ar_tview_t *y = ar_interp_output(a.in1, 0);
      static uint8_t host_in[4096], host_out[4096];
      memset(host_in, 1, sizeof host_in);
      double v[E_N][FX_MAX_ROUNDS], vmin[E_N];
      for (int e = 0; e < E_N; e++) vmin[e] = -1;
      for (int r = 0; r < rounds; r++) {
        double m1, m2;
        v[E_AR1][r] = fx_time_invokes(a.in1, runs, &m1) / 1e3;
        v[E_AR2][r] = fx_time_invokes(a.in2, runs, &m2) / 1e3;
        if (vmin[E_AR1] < 0 || m1 / 1e3 < vmin[E_AR1]) vmin[E_AR1] = m1 / 1e3;
        if (vmin[E_AR2] < 0 || m2 / 1e3 < vmin[E_AR2]) vmin[E_AR2] = m2 / 1e3;
        v[E_IN][r] = fx_time_copy(x->data, host_in, (size_t)x->bytes, runs) / 1e3;
        v[E_OUT][r] = fx_time_copy(host_out, y->data, (size_t)y->bytes, runs) / 1e3;
        double md, mn;
        for (int e = E_TFL; e <= E_XNN; e++) {
          v[e][r] = -1;
          if (native && fx_native(runner, path, e == E_XNN, runs, &md, &mn) == 0) {
            v[e][r] = md * 1e3;
            if (vmin[e] < 0 || mn * 1e3 < vmin[e]) vmin[e] = mn * 1e3;
          }
        }
        for (int e = E_IN; e <= E_OUT; e++)
          if (vmin[e] < 0 || v[e][r] < vmin[e]) vmin[e] = v[e][r];
      }
      printf("%-8s %4d", fx_names[k], ns[ni]);
      for (int e = 0; e < E_N; e++) {
        med[k][ni][e] = v[e][0] < 0 ? -1 : ar_stats_median(v[e], rounds);
        if (med[k][ni][e] < 0) printf(" %19s", "-");
        else printf(" %10.3f (%6.3f)", med[k][ni][e], vmin[e]);
      }
      printf("\n");
      fflush(stdout);
      fx_close(&a);
      unlink(path);
    }
  }
  /* the slope between the smallest and the largest N */
  if (n_ns >= 2) {
    const int lo_i = 0, hi_i = n_ns - 1, dn = ns[hi_i] - ns[lo_i];
    printf("\nper operator = (t(N=%d) - t(N=%d)) / %d, fixed per invoke = t(N=%d) - N x per operator (medians, us)\n",
           ns[hi_i], ns[lo_i], dn, ns[lo_i]);
    printf("%-8s %-16s %12s %12s\n", "chain", "engine", "per op", "per invoke");
    static const int shown[] = {E_AR1, E_AR2, E_TFL, E_XNN};
    for (int k = 0; k < FX_N_CHAINS; k++) {
      if (!want[k] || dn <= 0) continue;
      for (size_t s = 0; s < sizeof shown / sizeof shown[0]; s++) {
        const int e = shown[s];
        if (med[k][lo_i][e] < 0 || med[k][hi_i][e] < 0) continue;
        const double per_op = (med[k][hi_i][e] - med[k][lo_i][e]) / dn;
        printf("%-8s %-16s %12.4f %12.4f\n", fx_names[k], e_names[e], per_op, med[k][lo_i][e] - ns[lo_i] * per_op);
      }
    }
  }
  return 0;
}
