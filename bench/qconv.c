/* bench/qconv.c - micro-benchmark of the quantized CONV_2D (kernels/qconv.c) on int8 shapes of
 * MobileNet v2 and YOLOv8n, once per integer GEMM path the CPU supports (portable, AVX2,
 * AVX-512 VNNI; kernels/qgemm.h). Prints per case and path the median eval time in us and GOP/s
 * (2 x MACs / time), one thread. Not a test: figures only.
 *   usage: bench/qconv [runs]   (default 30)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ar_error.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/qgemm.h"

typedef struct {
  const char *label;
  int h, w, c, o, k, s;
} qcase_t;

static const qcase_t cases[] = {
  {"3x3 s2 224x224x3->32 (MobileNet v2 stem)", 224, 224, 3, 32, 3, 2},
  {"1x1 112x112x32->16", 112, 112, 32, 16, 1, 1},
  {"1x1 56x56x24->144", 56, 56, 24, 144, 1, 1},
  {"1x1 28x28x192->32", 28, 28, 192, 32, 1, 1},
  {"1x1 14x14x384->64", 14, 14, 384, 64, 1, 1},
  {"1x1 7x7x960->320", 7, 7, 960, 320, 1, 1},
  {"3x3 s1 104x104x32->32 (YOLOv8n C2f)", 104, 104, 32, 32, 3, 1},
  {"3x3 s2 52x52x64->128", 52, 52, 64, 128, 3, 2},
  {"3x3 s1 26x26x128->128", 26, 26, 128, 128, 3, 1},
};

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 30;
  if (runs < 1) runs = 1;
  const ar_qgemm_path_t paths[] = {AR_QGEMM_PORTABLE, AR_QGEMM_AVX2, AR_QGEMM_AVX512VNNI,
                                   AR_QGEMM_NEON, AR_QGEMM_NEONDOT};
  printf("%-42s %-11s %10s %8s\n", "int8 CONV_2D (per-channel, RELU6)", "path", "median us", "GOP/s");
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const qcase_t *c = &cases[ci];
    const int oh = (c->h + c->s - 1) / c->s, ow = (c->w + c->s - 1) / c->s;
    const size_t n_in = (size_t)c->h * c->w * c->c, n_w = (size_t)c->o * c->k * c->k * c->c;
    const size_t n_out = (size_t)oh * ow * c->o;
    int8_t *in = malloc(n_in), *w = malloc(n_w), *out = malloc(n_out);
    int32_t *bias = calloc((size_t)c->o, sizeof(int32_t));
    float *sw = malloc(sizeof(float) * (size_t)c->o);
    int64_t *zw = calloc((size_t)c->o, sizeof(int64_t));
    for (size_t i = 0; i < n_in; i++) in[i] = (int8_t)(i * 37u);
    for (size_t i = 0; i < n_w; i++) w[i] = (int8_t)(i * 11u);
    for (int i = 0; i < c->o; i++) sw[i] = 0.002f + 0.0001f * (float)(i % 7);
    const float s_in = 0.02f, s_out = 0.05f;
    const int64_t z_in = -3, z_out = -128;
    ar_quant_t qin = {1, 0, &s_in, &z_in}, qw = {c->o, 0, sw, zw}, qout = {1, 0, &s_out, &z_out};
    ar_tview_t tin = {.data = in, .dtype = AR_DTYPE_INT8, .rank = 4, .dims = {1, c->h, c->w, c->c},
                      .bytes = n_in, .quant = &qin};
    ar_tview_t tw = {.data = w, .dtype = AR_DTYPE_INT8, .rank = 4, .dims = {c->o, c->k, c->k, c->c},
                     .bytes = n_w, .is_constant = true, .quant = &qw};
    ar_tview_t tb = {.data = bias, .dtype = AR_DTYPE_INT32, .rank = 1, .dims = {c->o},
                     .bytes = (uint64_t)c->o * 4, .is_constant = true};
    ar_tview_t tout = {.data = out, .dtype = AR_DTYPE_INT8, .rank = 4, .dims = {1, oh, ow, c->o},
                       .bytes = n_out, .quant = &qout};
    ar_options_t opt;
    memset(&opt, 0, sizeof opt);
    opt.conv2d = (ar_conv2d_options_t){.padding = AR_PADDING_SAME, .stride_w = c->s,
                                       .stride_h = c->s, .activation = AR_ACT_RELU6,
                                       .dilation_w = 1, .dilation_h = 1};
    ar_tview_t *ins[3] = {&tin, &tw, &tb}, *outs[1] = {&tout};
    ar_node_t node = {.op = AR_OP_CONV_2D, .version = 3, .options = &opt, .n_inputs = 3,
                      .n_outputs = 1, .inputs = ins, .outputs = outs, .threads = 1};
    char msg[AR_MSG_BYTES];
    if (ar_kernel_conv_2d.prepare(&node, msg, sizeof msg) != 0) {
      fprintf(stderr, "%s: %s\n", c->label, msg);
      return 1;
    }
    node.scratch = node.scratch_bytes ? malloc(node.scratch_bytes) : NULL;
    node.state = aligned_alloc(64, (node.state_bytes + 63) / 64 * 64);
    ar_kernel_conv_2d.init(&node);
    const double macs = (double)n_out * c->k * c->k * c->c;
    double *t = malloc(sizeof(double) * (size_t)runs);
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
      if (!ar_qgemm_path_supported(paths[p])) continue;
      ar_qgemm_force_path(paths[p]);
      const int r_here = paths[p] == AR_QGEMM_PORTABLE ? (runs + 4) / 5 : runs;
      ar_kernel_conv_2d.eval(&node);   /* warm-up */
      for (int r = 0; r < r_here; r++) {
        double t0 = now_us();
        ar_kernel_conv_2d.eval(&node);
        t[r] = now_us() - t0;
      }
      qsort(t, (size_t)r_here, sizeof(double), cmp_d);
      const double med = t[r_here / 2];
      printf("%-42s %-11s %10.1f %8.1f\n", c->label, ar_qgemm_path_name(paths[p]), med,
             2.0 * macs / (med * 1e3));
    }
    ar_qgemm_force_path(AR_QGEMM_AUTO);
    free(t); free(node.scratch); free(node.state);
    free(in); free(w); free(out); free(bias); free(sw); free(zw);
  }
  return 0;
}
