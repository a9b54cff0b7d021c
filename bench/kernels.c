/* bench/kernels.c - micro-benchmark of the convolution-family kernels on shapes taken from the
 * shipped MediaPipe models (MANIFEST.json), single-threaded OpenBLAS. Prints, per case and float
 * ISA level (kernels/ar_isa.h), the median over rounds of each round's median eval time in us, the
 * fastest eval, and the GFLOP/s of the median (2 x MACs / time). With several levels the levels
 * alternate round by round, so a loaded machine's drift hits them alike. Not a test: figures only.
 *
 * --sgemm: OpenBLAS sgemm 1024^3 (row-major, one thread) on OpenBLAS's own core choice, Haswell
 * and SkylakeX (those the CPU has), alternating round by round (ar__blas_set_core), printing the
 * core OpenBLAS reports (openblas_get_corename) and median / best GFLOP/s; then the core arenad
 * programs run with (kernels/ar_isa.h).
 * --gemm: the 1x1 convolutions' GEMM shapes of hand_landmark_full, OpenBLAS (as conv.c calls it)
 * against arenad's own GEMM at the float level in force (kernels/sgemm.h: sgemm512.c on AVX-512F,
 * sgemm256.c on AVX2, e.g. `--isa avx2 --gemm` on an AVX-512F CPU; float32 B, float16 B, and
 * through kernels/gemm.c's bands as CONV_2D runs it), alternating round by round; with
 * --threads T that last one on a pool of T
 * threads (kernels/gemm.c's split by thread count: runs of rows, or of columns when N > M).
 * --cold: each run reads a different copy of A and B and writes a different C (about 24 MB of
 * copies in all), so that none of them is in the core's caches: an upper bound on what an invoke
 * pays for weights, input and output that are not in L2 (1 thread, min: 196 x 672 x 112 190 us
 * warm, 260-340 cold; 3136 x 24 x 144 185 -> 200-330). --match TEXT: only the shapes whose
 * "M x N x K" label contains TEXT.
 *   usage: bench/kernels [--isa portable,avx2,avx512f] [--rounds R] [--sgemm] [--gemm [--threads T] [--cold]] [--match TEXT] [runs]
 *          (runs per round, default 50; default levels: the best one only)
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "kernels/ar_isa.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/conv_util.h"
#include "kernels/ar_parallel.h"
#include "kernels/gemm.h"
#include "kernels/sgemm.h"
#include "kernels/sgemm512.h"

typedef struct {
  const char *label;
  ar_op_t op;
  int h, w, c, o, k, s;       /* input HxWxC, output channels (or multiplier 1), square kernel, stride */
  ar_padding_t pad;
} bcase_t;

static const bcase_t cases[] = {
  {"conv 3x3 s2 256x256x3->16 (selfie first)", AR_OP_CONV_2D, 256, 256, 3, 16, 3, 2, AR_PADDING_SAME},
  {"conv 5x5 s2 128x128x3->24", AR_OP_CONV_2D, 128, 128, 3, 24, 5, 2, AR_PADDING_SAME},
  {"conv 3x3 s2 192x192x3->32", AR_OP_CONV_2D, 192, 192, 3, 32, 3, 2, AR_PADDING_SAME},
  {"conv 1x1 128x128x16->16", AR_OP_CONV_2D, 128, 128, 16, 16, 1, 1, AR_PADDING_VALID},
  {"conv 1x1 64x64x16->72", AR_OP_CONV_2D, 64, 64, 16, 72, 1, 1, AR_PADDING_SAME},
  {"conv 1x1 96x96x24->24", AR_OP_CONV_2D, 96, 96, 24, 24, 1, 1, AR_PADDING_VALID},
  {"conv 1x1 48x48x32->64", AR_OP_CONV_2D, 48, 48, 32, 64, 1, 1, AR_PADDING_VALID},
  {"conv 1x1 24x24x96->384", AR_OP_CONV_2D, 24, 24, 96, 384, 1, 1, AR_PADDING_VALID},
  {"conv 1x1 12x12x576->96", AR_OP_CONV_2D, 12, 12, 576, 96, 1, 1, AR_PADDING_VALID},
  {"conv 1x1 6x6x96->384", AR_OP_CONV_2D, 6, 6, 96, 384, 1, 1, AR_PADDING_VALID},
  {"conv 1x1 14x14x80->480", AR_OP_CONV_2D, 14, 14, 80, 480, 1, 1, AR_PADDING_VALID},
  {"conv 1x1 112x112x16->64", AR_OP_CONV_2D, 112, 112, 16, 64, 1, 1, AR_PADDING_VALID},
  {"conv 1x1 1x1x96->24 (SE)", AR_OP_CONV_2D, 1, 1, 96, 24, 1, 1, AR_PADDING_VALID},
  {"dw 3x3 s1 128x128x16", AR_OP_DEPTHWISE_CONV_2D, 128, 128, 16, 16, 3, 1, AR_PADDING_SAME},
  {"dw 3x3 s1 96x96x24", AR_OP_DEPTHWISE_CONV_2D, 96, 96, 24, 24, 3, 1, AR_PADDING_SAME},
  {"dw 3x3 s2 64x64x72", AR_OP_DEPTHWISE_CONV_2D, 64, 64, 72, 72, 3, 2, AR_PADDING_SAME},
  {"dw 5x5 s1 32x32x96", AR_OP_DEPTHWISE_CONV_2D, 32, 32, 96, 96, 5, 1, AR_PADDING_SAME},
  {"dw 5x5 s2 32x32x96", AR_OP_DEPTHWISE_CONV_2D, 32, 32, 96, 96, 5, 2, AR_PADDING_SAME},
  {"dw 3x3 s1 VALID 26x26x128", AR_OP_DEPTHWISE_CONV_2D, 26, 26, 128, 128, 3, 1, AR_PADDING_VALID},
  {"tconv 2x2 s2 128x128x16->1", AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS, 128, 128, 16, 1, 2, 2, AR_PADDING_SAME},
  {"conv 3x3 s2 224x224x3->24 (hand first)", AR_OP_CONV_2D, 224, 224, 3, 24, 3, 2, AR_PADDING_SAME},
  {"dw 3x3 s1 56x56x144 (hand)", AR_OP_DEPTHWISE_CONV_2D, 56, 56, 144, 144, 3, 1, AR_PADDING_SAME},
  {"dw 3x3 s2 112x112x64 (hand)", AR_OP_DEPTHWISE_CONV_2D, 112, 112, 64, 64, 3, 2, AR_PADDING_SAME},
  {"dw 5x5 s1 28x28x240 (hand)", AR_OP_DEPTHWISE_CONV_2D, 28, 28, 240, 240, 5, 1, AR_PADDING_SAME},
  {"dw 5x5 s1 14x14x672 (hand)", AR_OP_DEPTHWISE_CONV_2D, 14, 14, 672, 672, 5, 1, AR_PADDING_SAME},
  {"dw 3x3 s1 14x14x480 (hand)", AR_OP_DEPTHWISE_CONV_2D, 14, 14, 480, 480, 3, 1, AR_PADDING_SAME},
  {"fc 1152->63", AR_OP_FULLY_CONNECTED, 1, 1, 1152, 63, 1, 1, AR_PADDING_VALID},
};

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
static double cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static float *randv(size_t n) {
  float *p = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) p[i] = (float)rand() / RAND_MAX - 0.5f;
  return p;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* sgemm 1024^3 GFLOP/s per OpenBLAS core, alternating cores round by round. */
static int bench_sgemm(int rounds) {
  enum { N = 1024 };
  const char *cores[] = {NULL, "Haswell", "SkylakeX"};
  const int ncores = 3;
  float *a = randv((size_t)N * N), *b = randv((size_t)N * N), *c = randv((size_t)N * N);
  double gf[3][64], gfc[3][64];   /* wall clock, thread CPU clock */
  char names[3][32];
  bool ok[3];
  const char *mine = ar_blas_corename();
  char mine_s[32];
  snprintf(mine_s, sizeof mine_s, "%s", mine);
  if (rounds > 64) rounds = 64;
  for (int k = 0; k < ncores; k++) {
    ok[k] = ar__blas_set_core(cores[k]) == 0;
    snprintf(names[k], sizeof names[k], "%s", ar_blas_corename());
  }
  for (int r = 0; r < rounds; r++)
    for (int k = 0; k < ncores; k++) {
      if (!ok[k]) continue;
      ar__blas_set_core(cores[k]);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
      double t0 = now_us(), c0 = cpu_us();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
      gf[k][r] = 2.0 * N * N * N / ((now_us() - t0) * 1e3);
      gfc[k][r] = 2.0 * N * N * N / ((cpu_us() - c0) * 1e3);
    }
  printf("OpenBLAS sgemm %dx%dx%d, 1 thread, %d alternating rounds\n", N, N, N, rounds);
  printf("  %-28s %-16s %12s %12s %14s %14s\n", "OPENBLAS_CORETYPE", "active core", "median GF/s",
         "best GF/s", "cpu median", "cpu best");
  for (int k = 0; k < ncores; k++) {
    if (!ok[k]) { printf("  %-28s (CPU lacks it)\n", cores[k]); continue; }
    double best = 0, bestc = 0;
    for (int r = 0; r < rounds; r++) {
      best = gf[k][r] > best ? gf[k][r] : best;
      bestc = gfc[k][r] > bestc ? gfc[k][r] : bestc;
    }
    printf("  %-28s %-16s %12.1f %12.1f %14.1f %14.1f\n", cores[k] ? cores[k] : "(unset: OpenBLAS's pick)",
           names[k], median(gf[k], rounds), best, median(gfc[k], rounds), bestc);
  }
  printf("  (cpu: GFLOP/s over the thread's CPU time, comparable with bench/invoke --cpu-clock)\n");
  /* back to the core the program started with */
  ar__blas_set_core(ar_blas_replaced_core() || getenv("OPENBLAS_CORETYPE") ? mine_s : NULL);
  printf("  arenad programs run with core %s%s%s\n", ar_blas_corename(),
         ar_blas_replaced_core() ? ", chosen over OpenBLAS's pick " : "",
         ar_blas_replaced_core() ? ar_blas_replaced_core() : "");
  free(a); free(b); free(c);
  return 0;
}

/* The 1x1 convolutions' products (M = pixels, N = outputs, K = inputs) of hand_landmark_full /
 * the objectron models, one thread, variants alternating round by round: OpenBLAS (bias fill,
 * cblas_sgemm beta 1, clamp pass: conv.c's path at the portable level), the own GEMM
 * (ar_sgemm_nt: s512 = sgemm512, s256 = sgemm256, whichever the level in force runs) on the whole
 * product, ar_sgemm_nt_f16 on the same B stored as float16 (the weights as the model stores them),
 * and ar_gemm_nt as CONV_2D calls it with the fp16 B (kernels/gemm.c's bands, inline). */
enum { GV_BLAS, GV_OWN, GV_OWN_F16, GV_CONV_F16, GV_N };

static int bench_gemm(int runs, int rounds, int threads, bool cold, const char *match) {
  static const int shapes[][3] = {
    {12544, 64, 16}, {12544, 16, 24}, {3136, 144, 24}, {3136, 24, 144}, {784, 240, 40},
    {784, 40, 240}, {196, 480, 80}, {196, 80, 480}, {196, 672, 112}, {196, 112, 672},
    {49, 1152, 192}, {49, 192, 1152}, {12544, 24, 64}, {1, 1152, 192}, {1, 24, 96},
  };
  if (!ar_sgemm_own_available()) {
    printf("bench/kernels --gemm: no own GEMM at the float level in force (%s: it needs AVX-512F, or "
           "AVX2 + FMA + F16C)\n", ar_isa_name(ar_isa_float_level()));
    return 0;
  }
  const bool k512 = ar_sgemm512_available();
  const char *const gv_name[GV_N] = {"blas", k512 ? "s512" : "s256", k512 ? "s512_f16" : "s256_f16",
                                     "conv_f16"};
  /* conv_f16 with --threads T: ar_gemm_nt on a pool of T threads, as an invoke runs it (the runs
   * inside one ar_threadpool_enter / leave, so the helpers stay hot between calls). */
  ar_threadpool_t *pool = NULL;
  char msg[AR_MSG_BYTES] = "";
  if (threads > 1 && ar_threadpool_new(threads, &pool, msg, sizeof msg) != 0) {
    fprintf(stderr, "bench/kernels: %s\n", msg);
    return 1;
  }
  ar_node_t node = {.threads = threads, .pool = pool};
  printf("1x1-conv GEMMs, 1 thread (conv_f16: %d), OpenBLAS core %s, own GEMM %s (float level %s), %d rounds x "
         "%d runs, operands %s: median of round medians (us) and GFLOP/s of it, then the fastest run (us)\n",
         threads, ar_blas_corename(), k512 ? "sgemm512" : "sgemm256", ar_isa_name(ar_isa_float_level()),
         rounds, runs, cold ? "cold (copies of A, B, C cycled)" : "warm");
  printf("%-20s", "M x N x K");
  for (int v = 0; v < GV_N; v++) printf(" %9s_us %7s %8s", gv_name[v], "GFLOP/s", "min_us");
  printf("\n");
  double geo[GV_N] = {0};
  int shown = 0;
  const size_t n_shapes = sizeof shapes / sizeof shapes[0];
  for (size_t si = 0; si < n_shapes; si++) {
    const int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2];
    char lab[32];
    snprintf(lab, sizeof lab, "%d x %d x %d", M, N, K);
    if (match && !strstr(lab, match)) continue;
    /* --cold: copies of A, B (float32 and float16) and C cycled run by run, about 24 MB in all. */
    const size_t nb = (size_t)N * K, na = (size_t)M * K, nc = (size_t)M * N;
    const int copies = cold ? (int)AR_MAX((size_t)2, (size_t)(24u << 20) / (nb * 6 + (nc + na) * 4) + 1) : 1;
    float *a0 = randv(na), *bias = randv((size_t)N);
    float *aall = malloc(na * (size_t)copies * sizeof(float));
    for (int cp = 0; cp < copies; cp++) memcpy(aall + (size_t)cp * na, a0, na * sizeof(float));
    float *ball = malloc(nb * (size_t)copies * sizeof *ball);
    uint16_t *b16all = malloc(nb * (size_t)copies * sizeof *b16all);
    float *b = randv(nb);
    for (int cp = 0; cp < copies; cp++) memcpy(ball + (size_t)cp * nb, b, nb * sizeof *b);
    for (size_t i = 0; i < nb; i++) {   /* B rounded to fp16 (truncation is enough here) */
      union { float f; uint32_t u; } x = {.f = b[i]};
      const uint32_t e = (x.u >> 23) & 0xff;
      const uint16_t h = (uint16_t)(((x.u >> 16) & 0x8000) |
                                    (e < 113 ? 0 : ((e - 112) << 10) | ((x.u >> 13) & 0x3ff)));
      for (int cp = 0; cp < copies; cp++) b16all[(size_t)cp * nb + i] = h;
    }
    int cur = 0;
    float *call = malloc(nc * (size_t)copies * sizeof(float));
    double *t = malloc(sizeof(double) * (size_t)runs), med[GV_N][64], mn[GV_N];
    for (int v = 0; v < GV_N; v++) mn[v] = 1e30;
    for (int r = 0; r < rounds && r < 64; r++)
      for (int v = 0; v < GV_N; v++) {
        if (v == GV_CONV_F16) ar_threadpool_enter(pool);
        for (int e = 0; e < runs + 2; e++) {
          const float *bc = ball + (size_t)cur * nb;
          const uint16_t *b16 = b16all + (size_t)cur * nb;
          float *c = call + (size_t)cur * nc;
          const float *a = aall + (size_t)cur * na;
          cur = (cur + 1) % copies;
          const ar_gemm_nt_t g = {.a = a, .b16 = b16, .bias = bias, .c = c, .m = M, .n = N, .k = K,
                                  .lda = K, .ldb = K, .ldc = N, .act = AR_ACT_RELU6, .own = true};
          double t0 = now_us();
          switch (v) {
          case GV_BLAS:
            ar__fill_bias_rows(c, (size_t)M, (size_t)N, bias);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, bc, K, 1.0f, c, N);
            ar__activate(c, (size_t)M * N, AR_ACT_RELU6);
            break;
          case GV_OWN: ar_sgemm_nt(a, K, bc, K, bias, c, N, M, N, K, AR_ACT_RELU6); break;
          case GV_OWN_F16: ar_sgemm_nt_f16(a, K, b16, K, bias, c, N, M, N, K, AR_ACT_RELU6); break;
          default: ar_gemm_nt(&node, &g); break;
          }
          double dt = now_us() - t0;
          if (e >= 2) { t[e - 2] = dt; if (dt < mn[v]) mn[v] = dt; }
        }
        if (v == GV_CONV_F16) ar_threadpool_leave(pool);
        med[v][r] = median(t, runs);
      }
    const double flop = 2.0 * M * N * K;
    printf("%-20s", lab);
    for (int v = 0; v < GV_N; v++) {
      const double m = median(med[v], rounds < 64 ? rounds : 64);
      geo[v] += log(flop / (m * 1e3));
      shown += v == 0;
      printf(" %12.1f %7.1f %8.1f", m, flop / (m * 1e3), mn[v]);
    }
    printf("\n");
    free(a0); free(aall); free(b); free(ball); free(b16all); free(bias); free(call); free(t);
  }
  printf("%-20s", "geomean GFLOP/s");
  for (int v = 0; v < GV_N; v++) printf(" %12s %7.1f %8s", "", exp(geo[v] / AR_MAX(1, shown)), "");
  printf("\n");
  ar_threadpool_free(pool);
  return 0;
}

int main(int argc, char **argv) {
  int runs = 50, rounds = 5, levels[3], nlev = 0, threads = 1;
  bool sgemm = false, gemm = false, cold = false;
  const char *match = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--sgemm") == 0) sgemm = true;
    else if (strcmp(argv[i], "--gemm") == 0) gemm = true;
    else if (strcmp(argv[i], "--cold") == 0) cold = true;
    else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
    else if (strcmp(argv[i], "--match") == 0 && i + 1 < argc) match = argv[++i];
    else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) {
      char list[128];
      snprintf(list, sizeof list, "%s", argv[++i]);
      for (char *tok = strtok(list, ","); tok && nlev < 3; tok = strtok(NULL, ",")) {
        int l = strcmp(tok, "portable") == 0 ? AR_ISA_PORTABLE : strcmp(tok, "avx2") == 0 ? AR_ISA_AVX2
              : strcmp(tok, "avx512f") == 0 ? AR_ISA_AVX512 : -1;
        if (l < 0 || ar__f32_set_isa(l) != l) {
          fprintf(stderr, "bench/kernels: --isa %s: portable, avx2 or avx512f, and this CPU must have it\n", tok);
          return 2;
        }
        levels[nlev++] = l;
      }
    } else if (argv[i][0] != '-') runs = atoi(argv[i]);
    else {
      fprintf(stderr, "usage: bench/kernels [--isa portable,avx2,avx512f] [--rounds R] [--sgemm] [--gemm [--threads T] [--cold]] [--match TEXT] [runs]\n");
      return 2;
    }
  }
  if (runs < 1) runs = 1;
  if (rounds < 1) rounds = 1;
  if (rounds > 64) rounds = 64;
  openblas_set_num_threads(1);
  if (sgemm) return bench_sgemm(rounds);
  if (gemm) return bench_gemm(runs, rounds, threads, cold, match);
  if (nlev == 0) levels[nlev++] = ar__f32_set_isa(-1);
  printf("bench/kernels: %d round(s) x %d evals per level, OpenBLAS core %s\n", rounds, runs,
         ar_blas_corename());
  printf("%-44s %-9s %10s %10s %9s\n", "case", "isa", "median_us", "min_us", "GFLOP/s");
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const bcase_t *c = &cases[ci];
    if (match && !strstr(c->label, match)) continue;
    ar_options_t opt;
    memset(&opt, 0, sizeof opt);
    ar_tview_t tin = {0}, tw = {0}, tb = {0}, tout = {0};
    ar_node_t node = {0};
    ar_tview_t *io[4];   /* node.inputs, node.outputs */
    const ar_kernel_t *k;
    int oh, ow, pad;
    double macs;
    tin.dtype = tw.dtype = tb.dtype = tout.dtype = AR_DTYPE_FLOAT32;
    tw.is_constant = tb.is_constant = true;
    tin.rank = 4; tin.dims[0] = 1; tin.dims[1] = c->h; tin.dims[2] = c->w; tin.dims[3] = c->c;
    tb.rank = 1; tb.dims[0] = c->o;
    tw.rank = 4;
    if (c->op == AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS) {
      oh = c->h * c->s; ow = c->w * c->s;
      tw.dims[0] = c->o; tw.dims[1] = c->k; tw.dims[2] = c->k; tw.dims[3] = c->c;
      opt.transpose_conv = (ar_transpose_conv_options_t){c->pad, c->s, c->s, AR_ACT_NONE};
      macs = (double)c->h * c->w * c->c * c->o * c->k * c->k;
      k = &ar_kernel_transpose_conv_bias;
    } else if (c->op == AR_OP_FULLY_CONNECTED) {
      oh = ow = 1;
      tin.rank = 2; tin.dims[0] = 1; tin.dims[1] = c->c;
      tw.rank = 2; tw.dims[0] = c->o; tw.dims[1] = c->c;
      macs = (double)c->c * c->o;
      k = &ar_kernel_fully_connected;
    } else {
      oh = ar_compute_padding(c->pad, c->h, c->k, c->s, 1, &pad);
      ow = ar_compute_padding(c->pad, c->w, c->k, c->s, 1, &pad);
      if (c->op == AR_OP_CONV_2D) {
        tw.dims[0] = c->o; tw.dims[1] = c->k; tw.dims[2] = c->k; tw.dims[3] = c->c;
        opt.conv2d = (ar_conv2d_options_t){c->pad, c->s, c->s, AR_ACT_RELU6, 1, 1};
        macs = (double)oh * ow * c->o * c->k * c->k * c->c;
        k = &ar_kernel_conv_2d;
      } else {
        tw.dims[0] = 1; tw.dims[1] = c->k; tw.dims[2] = c->k; tw.dims[3] = c->o;
        opt.depthwise = (ar_depthwise_options_t){c->pad, c->s, c->s, 1, AR_ACT_RELU6, 1, 1};
        macs = (double)oh * ow * c->o * c->k * c->k;
        k = &ar_kernel_depthwise_conv_2d;
      }
    }
    if (c->op == AR_OP_FULLY_CONNECTED) {
      tout.rank = 2; tout.dims[0] = 1; tout.dims[1] = c->o;
    } else {
      tout.rank = 4; tout.dims[0] = 1; tout.dims[1] = oh; tout.dims[2] = ow; tout.dims[3] = c->o;
    }
    size_t nin = 1, nw = 1, nout = 1;
    for (int i = 0; i < tin.rank; i++) nin *= (size_t)tin.dims[i];
    for (int i = 0; i < tw.rank; i++) nw *= (size_t)tw.dims[i];
    for (int i = 0; i < tout.rank; i++) nout *= (size_t)tout.dims[i];
    tin.data = randv(nin); tw.data = randv(nw); tb.data = randv((size_t)c->o);
    tout.data = malloc(nout * sizeof(float));
    node.op = c->op; node.index = (int32_t)ci; node.options = &opt; node.threads = 1;
    node.n_inputs = 3; node.n_outputs = 1;
    node.inputs = io;
    node.outputs = io + 3;
    node.inputs[0] = &tin; node.inputs[1] = &tw; node.inputs[2] = &tb; node.outputs[0] = &tout;
    char msg[AR_MSG_BYTES];
    if (k->prepare(&node, msg, sizeof msg) != 0) { fprintf(stderr, "%s: %s\n", c->label, msg); return 1; }
    node.scratch = node.scratch_bytes ? malloc(node.scratch_bytes) : NULL;
    node.state = node.state_bytes ? malloc(node.state_bytes) : NULL;
    if (k->init) k->init(&node);
    double *t = malloc(sizeof(double) * (size_t)runs);
    double rmed[3][64], best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; r < rounds; r++)
      for (int li = 0; li < nlev; li++) {
        ar__f32_set_isa(levels[li]);
        for (int w = 0; w < 3; w++) k->eval(&node);
        for (int e = 0; e < runs; e++) {
          double t0 = now_us();
          k->eval(&node);
          t[e] = now_us() - t0;
          if (t[e] < best[li]) best[li] = t[e];
        }
        rmed[li][r] = median(t, runs);
      }
    for (int li = 0; li < nlev; li++) {
      double med = median(rmed[li], rounds);
      printf("%-44s %-9s %10.1f %10.1f %9.2f\n", li ? "" : c->label, ar_isa_name(levels[li]), med,
             best[li], 2.0 * macs / (med * 1e3));
    }
    ar__f32_set_isa(-1);
    free(t); free(tin.data); free(tw.data); free(tb.data); free(tout.data);
    free(node.scratch); free(node.state);
  }
  return 0;
}
