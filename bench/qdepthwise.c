/* bench/qdepthwise.c - micro-benchmark of the quantized DEPTHWISE_CONV_2D (kernels/qdepthwise.c) on
 * the 13 depthwise layers of MobileNet v1 1.0 224 (3x3, SAME, RELU6), uint8 (legacy asymmetric
 * weights) and int8 (per-channel), once per loop the CPU has (0 portable C, 1 AVX2, 2 AVX-512
 * VNNI). Prints the median time of the 13 layers together and GOP/s (2 x MACs / time), one thread.
 * Not a test: figures only.
 *   usage: bench/qdepthwise [runs] [-v]   (default 21 runs; -v prints every layer)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ar_error.h"
#include "kernels/ar_kernel_impl.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static const struct { int h, w, c, s; } layers[] = {
  {112, 112, 32, 1}, {112, 112, 64, 2}, {56, 56, 128, 1}, {56, 56, 128, 2}, {28, 28, 256, 1},
  {28, 28, 256, 2}, {14, 14, 512, 1}, {14, 14, 512, 1}, {14, 14, 512, 1}, {14, 14, 512, 1},
  {14, 14, 512, 1}, {14, 14, 512, 2}, {7, 7, 1024, 1},
};
#define N_LAYERS ((int)(sizeof layers / sizeof layers[0]))

int main(int argc, char **argv) {
  int runs = 21;
  bool verbose = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-v") == 0) verbose = true;
    else runs = atoi(argv[i]) > 0 ? atoi(argv[i]) : runs;
  }
  unsigned seed = 12345;
  const char *isa_name[3] = {"portable", "avx2", "avx512-vnni"};
  const int best = ar__qdw_set_isa(-1);
  for (int s8 = 0; s8 < 2; s8++)
    for (int isa = 0; isa <= best; isa++) {
      ar__qdw_set_isa(isa);
      double total = 0.0, macs = 0.0;
      for (int l = 0; l < N_LAYERS; l++) {
        const int H = layers[l].h, W = layers[l].w, C = layers[l].c, S = layers[l].s;
        const int OH = (H + S - 1) / S, OW = (W + S - 1) / S;
        float si = 0.0235f, sw = s8 ? 0.0041f : 0.0113f, so = 0.0235f, sb = si * sw;
        int64_t zi = s8 ? -128 : 0, zw = s8 ? 0 : 121, zo = s8 ? -128 : 0, zb = 0;
        ar_quant_t qi = {1, 0, &si, &zi}, qw = {1, 3, &sw, &zw}, qb = {1, 0, &sb, &zb}, qo = {1, 0, &so, &zo};
        uint8_t *x = malloc((size_t)H * W * C), *w = malloc((size_t)9 * C), *y = malloc((size_t)OH * OW * C);
        int32_t *b = malloc((size_t)C * sizeof(int32_t));
        for (size_t i = 0; i < (size_t)H * W * C; i++) x[i] = (uint8_t)rand_r(&seed);
        for (int i = 0; i < 9 * C; i++) w[i] = (uint8_t)rand_r(&seed);
        for (int i = 0; i < C; i++) b[i] = (int32_t)(rand_r(&seed) % 4001) - 2000;
        const ar_dtype_t dt = s8 ? AR_DTYPE_INT8 : AR_DTYPE_UINT8;
        ar_tview_t t[4];
        memset(t, 0, sizeof t);
        t[0] = (ar_tview_t){.data = x, .dtype = dt, .rank = 4, .dims = {1, H, W, C}, .quant = &qi};
        t[1] = (ar_tview_t){.data = w, .dtype = dt, .rank = 4, .dims = {1, 3, 3, C}, .is_constant = true, .quant = &qw};
        t[2] = (ar_tview_t){.data = b, .dtype = AR_DTYPE_INT32, .rank = 1, .dims = {C}, .is_constant = true, .quant = &qb};
        t[3] = (ar_tview_t){.data = y, .dtype = dt, .rank = 4, .dims = {1, OH, OW, C}, .quant = &qo};
        for (int i = 0; i < 4; i++) t[i].bytes = (uint64_t)t[i].dims[0] * t[i].dims[1] * t[i].dims[2] * t[i].dims[3];
        t[2].bytes = (uint64_t)C * 4;
        ar_options_t o;
        memset(&o, 0, sizeof o);
        o.depthwise = (ar_depthwise_options_t){AR_PADDING_SAME, S, S, 1, AR_ACT_RELU6, 1, 1};
        ar_node_t n;
        ar_tview_t *io[4];   /* n.inputs (3), n.outputs (1) */
        memset(&n, 0, sizeof n);
        n.inputs = io;
        n.outputs = io + 3;
        n.op = AR_OP_DEPTHWISE_CONV_2D;
        n.options = &o;
        n.n_inputs = 3;
        n.n_outputs = 1;
        for (int i = 0; i < 3; i++) n.inputs[i] = &t[i];
        n.outputs[0] = &t[3];
        char msg[AR_MSG_BYTES];
        if (ar_kernel_depthwise_conv_2d.prepare(&n, msg, sizeof msg) != 0) {
          fprintf(stderr, "prepare: %s\n", msg);
          return 1;
        }
        n.scratch = malloc(n.scratch_bytes);
        n.state = malloc(n.state_bytes);
        ar_kernel_depthwise_conv_2d.init(&n);
        double *tm = malloc((size_t)runs * sizeof(double));
        ar_kernel_depthwise_conv_2d.eval(&n);   /* warm-up */
        for (int r = 0; r < runs; r++) {
          double t0 = now_s();
          ar_kernel_depthwise_conv_2d.eval(&n);
          tm[r] = now_s() - t0;
        }
        qsort(tm, (size_t)runs, sizeof(double), cmp_d);
        const double med = tm[runs / 2], m = 9.0 * OH * OW * C;
        total += med;
        macs += m;
        if (verbose)
          printf("  %s %-11s dw 3x3 s%d %dx%dx%d: %8.1f us  %6.2f GOP/s\n", s8 ? "int8 " : "uint8",
                 isa_name[isa], S, H, W, C, med * 1e6, 2.0 * m / med * 1e-9);
        free(tm); free(x); free(w); free(y); free(b); free(n.scratch); free(n.state);
      }
      printf("%s %-11s MobileNet v1 224 depthwise layers: %7.3f ms  %6.2f GOP/s (%.1f MMAC)\n",
             s8 ? "int8 " : "uint8", isa_name[isa], total * 1e3, 2.0 * macs / total * 1e-9, macs * 1e-6);
    }
  ar__qdw_set_isa(-1);
  return 0;
}
