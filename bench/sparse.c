/* bench/sparse.c - the sparse 1x1 CONV_2D (kernels/sparse_conv.c) against the dense CONV_2D kernel
 * on every sparse-filter convolution of a model (pose_detection, face_detection_full_range_sparse):
 * for each CONV_2D fed by DENSIFY (-> DEQUANTIZE) of a sparse constant, the dense kernel runs on the
 * densified float32 filter and the sparse one on the stored form, per loop the CPU has (portable,
 * AVX2+FMA+F16C), on the same random input. Prints per layer the median eval time in us of each and
 * the ratio, then the totals. Not a test: figures only.
 * --no-portable skips the portable loop (on x86 its fmaf is a libm call: slow, and only the oracle).
 * --min reports the fastest eval instead of the median.
 *   usage: bench/sparse [--runs N] [--layers] [--no-portable] [--min] MODEL.tflite ...
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ar_error.h"
#include "common/ar_path.h"
#include "kernels/ar_kernels.h"
#include "kernels/sparse_conv.h"
#include "loader/ar_model.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void view_of(ar_tview_t *v, const ar_tensor_t *t, void *data) {
  memset(v, 0, sizeof *v);
  v->data = data;
  v->dtype = t->dtype;
  v->rank = t->rank;
  memcpy(v->dims, t->dims, sizeof v->dims);
  v->bytes = t->bytes;
  v->is_constant = data != NULL;
  v->name = t->name;
}

static bool use_min;   /* --min: the fastest eval instead of the median (steadier on a loaded machine) */

/* Median (or fastest) of `runs` evals of `nd` (prepared, scratch allocated). */
static double time_node(const ar_kernel_t *k, ar_node_t *nd, int runs) {
  double *t = malloc((size_t)runs * sizeof *t);
  k->eval(nd);
  for (int r = 0; r < runs; r++) {
    double a = now_us();
    k->eval(nd);
    t[r] = now_us() - a;
  }
  qsort(t, (size_t)runs, sizeof *t, cmp_d);
  double m = use_min ? t[0] : t[runs / 2];
  free(t);
  return m;
}

static int prep(const ar_kernel_t *k, ar_node_t *nd) {
  char msg[AR_MSG_BYTES] = "";
  int rc = k->prepare(nd, msg, sizeof msg);
  if (rc) { fprintf(stderr, "bench/sparse: %s\n", msg); return rc; }
  nd->scratch = nd->scratch_bytes ? malloc(nd->scratch_bytes) : NULL;
  nd->state = nd->state_bytes ? calloc(1, nd->state_bytes) : NULL;
  if (k->init) k->init(nd);
  return 0;
}

static int bench_model(const char *path, int runs, bool layers, bool portable) {
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  if (ar_model_load(path, &m, msg, sizeof msg)) { fprintf(stderr, "bench/sparse: %s\n", msg); return 1; }
  const ar_subgraph_t *sg = &m->subgraphs[0];
  const ar_kernel_t *conv = ar_kernel_for(AR_OP_CONV_2D), *densify = ar_kernel_for(AR_OP_DENSIFY);
  const int best = ar__sparse_set_isa(-1);
  double tot_dense = 0, tot_sp[2] = {0, 0};
  uint64_t dense_macs = 0, stored = 0;
  int n = 0;
  printf("%s: dense CONV_2D (float32 filter) vs sparse as stored, %s of %d evals, us\n",
         ar_path_base(path), use_min ? "fastest" : "median", runs);
  if (layers) printf("  %-4s %-22s %9s %9s %9s %7s\n", "op", "shape", "dense", "portable", "avx2", "ratio");
  for (uint32_t k = 0; k < sg->n_operators; k++) {
    const ar_operator_t *op = &sg->operators[k];
    if (op->op != AR_OP_CONV_2D || op->n_inputs < 2) continue;
    /* Filter: DEQUANTIZE(DENSIFY(sparse)) or DENSIFY(sparse). */
    int32_t ft = op->inputs[1], st = -1;
    for (int hop = 0; hop < 2 && st < 0; hop++) {
      for (uint32_t j = 0; j < k; j++) {
        const ar_operator_t *p = &sg->operators[j];
        if (p->n_outputs < 1 || p->outputs[0] != ft) continue;
        if (p->op == AR_OP_DEQUANTIZE) ft = p->inputs[0];
        else if (p->op == AR_OP_DENSIFY && sg->tensors[p->inputs[0]].sparsity) st = p->inputs[0];
        break;
      }
    }
    if (st < 0) continue;
    const ar_tensor_t *ts = &sg->tensors[st], *tin = &sg->tensors[op->inputs[0]];
    const ar_tensor_t *tout = &sg->tensors[op->outputs[0]];
    const ar_tensor_t *tb = op->n_inputs > 2 && op->inputs[2] >= 0 ? &sg->tensors[op->inputs[2]] : NULL;
    /* Dense float32 filter through the DENSIFY kernel, then widened. */
    ar_tview_t vs, vd, vf;
    view_of(&vs, ts, (void *)ts->data);
    vs.bytes = ts->data_bytes;
    vs.sparsity = ts->sparsity;
    uint64_t elems = ar_tensor_elements(ts);
    void *dn = malloc(elems * ar_dtype_size(ts->dtype));
    float *df = malloc(elems * sizeof(float));
    view_of(&vd, ts, dn);
    ar_node_t dnode;
    ar_tview_t *dio[2];
    memset(&dnode, 0, sizeof dnode);
    dnode.inputs = dio;
    dnode.outputs = dio + 1;
    dnode.op = AR_OP_DENSIFY;
    dnode.n_inputs = dnode.n_outputs = 1;
    dnode.inputs[0] = &vs;
    dnode.outputs[0] = &vd;
    if (prep(densify, &dnode)) return 1;
    densify->eval(&dnode);
    for (uint64_t e = 0; e < elems; e++)
      df[e] = ts->dtype == AR_DTYPE_FLOAT16 ? ar_fp16_to_fp32(((uint16_t *)dn)[e]) : ((float *)dn)[e];
    view_of(&vf, ts, df);
    vf.dtype = AR_DTYPE_FLOAT32;
    vf.bytes = elems * 4;
    /* Input, bias, output. */
    ar_tview_t vi, vb, vo;
    float *xin = malloc(tin->bytes), *bias = NULL, *out = malloc(tout->bytes);
    for (uint64_t e = 0; e < tin->bytes / 4; e++) xin[e] = (float)((e * 2654435761u) % 1000) / 500.0f - 1.0f;
    view_of(&vi, tin, xin);
    vi.is_constant = false;
    view_of(&vo, tout, out);
    vo.is_constant = false;
    if (tb) {
      bias = calloc(1, (size_t)tb->bytes);
      view_of(&vb, tb, bias);
      vb.dtype = AR_DTYPE_FLOAT32;
    }
    ar_node_t nd;
    ar_tview_t *io[4], *sio[4];   /* nd's inputs (3) and output, then sn's */
    memset(&nd, 0, sizeof nd);
    nd.inputs = io;
    nd.outputs = io + 3;
    nd.op = AR_OP_CONV_2D;
    nd.index = (int32_t)k;
    nd.version = op->version;
    nd.options = &op->options;
    nd.n_inputs = tb ? 3 : 2;
    nd.n_outputs = 1;
    nd.inputs[0] = &vi;
    nd.inputs[1] = &vf;
    if (tb) nd.inputs[2] = &vb;
    nd.outputs[0] = &vo;
    nd.threads = 1;
    ar_node_t sn = nd;
    memcpy(sio, io, sizeof sio);
    sn.inputs = sio;
    sn.outputs = sio + 3;
    sn.inputs[1] = &vs;
    if (prep(conv, &nd) || prep(conv, &sn)) return 1;
    double td = time_node(conv, &nd, runs), tsp[2] = {0, 0};
    for (int isa = portable ? 0 : best; isa <= best; isa++) {
      ar__sparse_set_isa(isa);
      tsp[isa] = time_node(conv, &sn, runs);
    }
    ar__sparse_set_isa(-1);
    tot_dense += td;
    for (int isa = 0; isa <= best; isa++) tot_sp[isa] += tsp[isa];
    uint64_t macs = (uint64_t)ar_tensor_elements(tout) * (uint64_t)ts->dims[3];
    dense_macs += macs;
    stored += ts->data_bytes;
    n++;
    if (layers)
      printf("  %-4u [%d,%d,%d]->%-8d %9.1f %9.1f %9.1f %7.2f\n", k, tin->dims[1], tin->dims[2],
             tin->dims[3], ts->dims[0], td, tsp[0], tsp[best], tsp[best] / td);
    free(nd.scratch); free(nd.state); free(sn.scratch); free(sn.state);
    free(dnode.scratch);
    free(dn); free(df); free(xin); free(bias); free(out);
  }
  printf("  %d sparse 1x1 convolutions, %.1f dense MMAC, %llu stored bytes\n", n, dense_macs / 1e6,
         (unsigned long long)stored);
  printf("  total us: dense %.1f, sparse portable %.1f", tot_dense, tot_sp[0]);
  if (best >= 1) printf(", sparse avx2 %.1f", tot_sp[1]);
  printf("; sparse / dense %.2f\n", tot_sp[best] / tot_dense);
  ar_model_free(m);
  return 0;
}

int main(int argc, char **argv) {
  int runs = 20;
  bool layers = false, portable = true;
  int rc = 0;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--runs") == 0 && a + 1 < argc) runs = atoi(argv[++a]);
    else if (strcmp(argv[a], "--layers") == 0) layers = true;
    else if (strcmp(argv[a], "--no-portable") == 0) portable = false;
    else if (strcmp(argv[a], "--min") == 0) use_min = true;
    else rc |= bench_model(argv[a], runs > 0 ? runs : 1, layers, portable);
  }
  return rc;
}
