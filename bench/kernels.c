/* bench/kernels.c - micro-benchmark of the convolution-family kernels on shapes taken from the
 * shipped MediaPipe models (MANIFEST.json), single-threaded OpenBLAS. Prints, per case, the median
 * eval time in us and the GFLOP/s achieved (2 x MACs / time). Not a test: figures only.
 *   usage: bench/kernels [runs]   (default 50)
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ar_error.h"
#include "kernels/ar_kernel_impl.h"

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
  {"fc 1152->63", AR_OP_FULLY_CONNECTED, 1, 1, 1152, 63, 1, 1, AR_PADDING_VALID},
};

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
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

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 50;
  if (runs < 1) runs = 1;
  openblas_set_num_threads(1);
  printf("%-44s %10s %9s\n", "case", "median_us", "GFLOP/s");
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const bcase_t *c = &cases[ci];
    ar_options_t opt;
    memset(&opt, 0, sizeof opt);
    ar_tview_t tin = {0}, tw = {0}, tb = {0}, tout = {0};
    ar_node_t node = {0};
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
    node.inputs[0] = &tin; node.inputs[1] = &tw; node.inputs[2] = &tb; node.outputs[0] = &tout;
    char msg[AR_MSG_BYTES];
    if (k->prepare(&node, msg, sizeof msg) != 0) { fprintf(stderr, "%s: %s\n", c->label, msg); return 1; }
    node.scratch = node.scratch_bytes ? malloc(node.scratch_bytes) : NULL;
    node.state = node.state_bytes ? malloc(node.state_bytes) : NULL;
    if (k->init) k->init(&node);
    double *t = malloc(sizeof(double) * (size_t)runs);
    for (int r = 0; r < 3; r++) k->eval(&node);
    for (int r = 0; r < runs; r++) {
      double t0 = now_us();
      k->eval(&node);
      t[r] = now_us() - t0;
    }
    qsort(t, (size_t)runs, sizeof(double), cmp_d);
    double med = t[runs / 2];
    printf("%-44s %10.1f %9.2f\n", c->label, med, 2.0 * macs / (med * 1e3));
    free(t); free(tin.data); free(tw.data); free(tb.data); free(tout.data);
    free(node.scratch); free(node.state);
  }
  return 0;
}
