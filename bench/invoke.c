/* invoke.c - bench/invoke: arenad's in-process invoke time against LiteRT on the same input.
 *
 * For each model: load, plan (best strategy), place, then R rounds; each round times N invokes of
 * arenad (after W warm-ups) and then, when --ref DIR is given, runs LiteRT's reference runner
 * (node DIR/run_ref.mjs MODEL --input F --runs N --warmup W --quiet, one thread) on the same input
 * file, so the two engines alternate on the same machine state. Reported per model: median of the
 * round medians for each engine, the ratio arenad / LiteRT (< 1 means arenad is faster), and
 * arenad's GFLOP/s = 2 * MACs / time; then the fastest single invoke of each engine and their
 * ratio, which is steadier than the medians on a loaded machine. The arenad time includes copying the input in (LiteRT's
 * includes its JS -> wasm copy). --profile adds a per-operator-type breakdown of arenad's time
 * and the slowest operators (--top N of them, default 10, with GFLOP/s for conv/depthwise/FC).
 * --cpu-clock (one thread): arenad's invokes timed with the thread's CPU clock instead of wall
 * time, which leaves out the time other processes held the core - for before/after comparisons on
 * a loaded machine (cache and memory-bandwidth contention still count).
 *
 * --quant: the quantized models of ../shared/models_q ($AR_MODELS_Q_DIR) on their golden_q inputs
 * ($AR_GOLDEN_Q_DIR; the case's input, or `random` for the models without a photo), GOP/s = 2 * MACs
 * / time (integer operations), printed beside native TFLite's one-thread figures that the issue's
 * author measured (builtin kernels, whose answers the goldens are, and its XNNPACK delegate, whose
 * answers differ by rounding) - not measured by this program. With --ref, LiteRT.js (XNNPACK, so
 * XNNPACK's rounding too) runs the same input where its runner can take the model's tensors.
 *
 * --weights: stored vs fp32 weights (ar_interp_options_t.weights) per model in the same run: the
 * two interpreters of one model alternate round by round on the same input; printed per model are
 * both medians (of round medians) and minima, the ratio stored / fp32 (the median over rounds of
 * the two modes' ratio in that round: a loaded machine's drift cancels), and the persistent and
 * activation bytes of each mode (with TensorFlow Lite's persistent arena where it is known). The
 * float models of models/ and the models_extra set (inputs from tests/golden, tests/golden_extra).
 *
 * --isa portable|avx2: every integer kernel family on that path (what a CPU without AVX-512 runs:
 * GEMM, depthwise, ADD/SUB/MUL, byte tables, QUANTIZE), instead of the best this CPU has.
 *
 * --threads T[,T...] (default 1): one interpreter per thread count (interp option `threads`, a pool
 * of its own), alternating round by round (the order rotates each round) so that a loaded
 * machine's drift falls on every count alike. Per model and count: median of the round medians,
 * the fastest invoke, the speedup over the first count (median and min), GFLOP/s = 2 * MACs /
 * median, and the sgemm peak measured in the same run right before the model's rounds: OpenBLAS
 * sgemm 1024^3 (one cblas_sgemm call with OpenBLAS's own threads at that count), best of 3, with the model's GFLOP/s as a fraction of it. --json prints
 * only a JSON array with one object per model and thread count: model, threads, median_ms,
 * min_ms, gflops, gmac, speedup, speedup_min, sgemm_peak_gflops, fraction, core_round_trip_ns (and
 * litert_ms with --ref).
 *
 * Beside the sgemm peak each model's rows carry the machine's core-to-core latency at that moment
 * ("rt ns"): the round trip of one cache line between two threads (each waits for the other's
 * store, 20000 times; median of 5), measured right before the model's rounds. On a VM its cores
 * can be near or far apart from minute to minute, and a split operator pays this latency for its
 * hand-off and for the lines of its input the other core wrote, so the two-thread speedups move
 * with it.
 *
 * --no-fuse: the main table (and --profile) with inverted-residual fusion off (interp option
 * `fuse`). --fuse-compare: per model and thread count of --threads, fusion off against on in the
 * same run, the two interpreters alternating round by round on the same input: both medians (of
 * round medians) and minima, the ratio on / off (median over rounds of that round's ratio), the
 * expansion convs fused and the activation bytes of each. --profile's GFLOP/s of a depthwise with a
 * fused conv counts the conv's multiply-adds too (the conv shows no time of its own).
 *
 * --op-scaling (with --threads T1,T2...): after the main table, per operator the fastest and the
 * median of runs x rounds profiled invokes at each count (rounds alternating), the speedup of the
 * first count over the last (of mins and of medians), where a fused conv runs at each count, and
 * "lost" = min at the last count - min at the first x T1 / Tlast (us): what a perfect split would
 * have saved over what it did; the --top N operators that lose most first, then the sums.
 *
 *   bench/invoke [--quant] [--weights] [--ref DIR] [--runs N] [--warmup W] [--rounds R]
 *                [--case photo|random] [--threads T[,T...]] [--json] [--profile [--top N]] [--cpu-clock]
 *                [--isa portable|avx2] [--no-fuse | --fuse-compare] [--op-scaling] [MODEL_STEM ...]
 */
#include <cblas.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ar_error.h"
#include "common/ar_stats.h"
#include "interp/ar_interp.h"
#include "kernels/ar_kernel_impl.h"
#include "kernels/ar_parallel.h"
#include "kernels/gemm.h"
#include "kernels/qgemm.h"
#include "loader/ar_model.h"

static const char *const default_models[] = {
  "face_detection_full_range", "face_detection_full_range_sparse", "face_detection_short_range",
  "hand_landmark_full", "hand_landmark_lite", "object_detection_3d_camera",
  "object_detection_3d_cup", "palm_detection_full", "palm_detection_lite",
  "selfie_segmentation", "selfie_segmentation_landscape",
};

/* --weights: the float models and the models_extra set (its inputs in tests/golden_extra). */
static const char *const weights_models[] = {
  "face_detection_full_range", "face_detection_full_range_sparse", "face_detection_short_range",
  "hand_landmark_full", "hand_landmark_lite", "object_detection_3d_camera",
  "object_detection_3d_cup", "palm_detection_full", "palm_detection_lite",
  "selfie_segmentation", "selfie_segmentation_landscape", "face_landmark", "pose_detection",
  "pose_landmark_lite", "pose_landmark_full",
};

/* TensorFlow Lite's persistent arena where issue 12's author measured it (not this program). */
static const struct { const char *stem; uint64_t bytes; } tflite_persistent[] = {
  {"hand_landmark_full", 10863044},
};

/* The quantized models (../shared/models_q, never committed), smallest first. */
static const char *const quant_models[] = {
  "tflm_hello_world_int8", "tflm_micro_speech_quantized", "tflm_person_detect",
  "coral_mobilenet_v1_0.25_128_quant", "coral_mobilenet_v1_1.0_224_quant_embedding_extractor",
  "coral_mobilenet_v1_1.0_224_quant_head_layers", "coral_mobilenet_v2_1.0_224_quant",
  "coral_tf2_mobilenet_v2_1.0_224_ptq", "ssd_mobilenet_v1_coco_quant_postprocess",
  "coral_movenet_single_pose_lightning_ptq", "yolov8n_coco_416_full_integer_quant",
  "coral_deeplabv3_mnv2_dm05_pascal_quant",
};

/* Native TFLite 2.19 at one thread, as measured by issue 9's author (not by this program): builtin
 * kernels (the goldens' engine) and the XNNPACK delegate, ms per invoke. */
static const struct { const char *stem; double builtin_ms, xnnpack_ms; } native_figures[] = {
  {"coral_tf2_mobilenet_v2_1.0_224_ptq", 47.5, 6.7},
  {"coral_mobilenet_v2_1.0_224_quant", 50.9, 13.7},
  {"ssd_mobilenet_v1_coco_quant_postprocess", 73.1, 26.1},
  {"yolov8n_coco_416_full_integer_quant", 108.0, 19.6},
  {"coral_movenet_single_pose_lightning_ptq", 47.4, 6.9},
};

static const char *env_or(const char *name, const char *dflt) {
  const char *v = getenv(name);
  return v && *v ? v : dflt;
}

static int g_cpu_clock;   /* --cpu-clock */

#define MAX_THREAD_COUNTS 8

/* The clock and the median are common/ar_stats.h's, which `arenactl bench` reads too. */
static double now_ms(void) { return ar_clock_ms(g_cpu_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC); }

static double median(double *x, int n) { return ar_stats_median(x, n); }

static void *read_all(const char *path, size_t *bytes) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  void *buf = NULL;
  long len = -1;
  if (fseek(f, 0, SEEK_END) == 0) len = ftell(f);
  if (len > 0 && fseek(f, 0, SEEK_SET) == 0) {
    buf = malloc((size_t)len);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  if (buf) *bytes = (size_t)len;
  return buf;
}

/* Run LiteRT's reference runner once; returns its median invoke ms (and its fastest in *min_ms),
 * or -1. */
static double litert_median(const char *ref, const char *model, const char *input, int runs, int warmup,
                            double *min_ms) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "node '%s/run_ref.mjs' '%s' --input '%s' --runs %d --warmup %d --quiet 2>/dev/null",
           ref, model, input, runs, warmup);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  buf[n] = 0;
  pclose(p);
  json_error_t err;
  json_t *j = json_loads(buf, JSON_DISABLE_EOF_CHECK, &err);
  if (!j) return -1;
  double ms = json_number_value(json_object_get(json_object_get(j, "invoke_ms"), "median"));
  *min_ms = json_number_value(json_object_get(json_object_get(j, "invoke_ms"), "min"));
  json_decref(j);
  return ms > 0 ? ms : -1;
}

typedef struct { ar_op_t op; double ms; int count; } op_time_t;

static int cmp_op_time(const void *a, const void *b) {
  double x = ((const op_time_t *)a)->ms, y = ((const op_time_t *)b)->ms;
  return x > y ? -1 : x < y;
}

/* Multiply-adds of a CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED node (0 for other ops); a
 * depthwise with an expansion conv fused into it (node->fused) counts the conv's as well. */
static double node_gmac(const ar_node_t *nd) {
  if (nd->n_inputs < 2 || !nd->inputs[1] || !nd->outputs[0]) return 0;
  if (nd->op == AR_OP_DEPTHWISE_CONV_2D && nd->fused) {
    ar_node_t alone = *nd;
    alone.fused = NULL;
    return node_gmac(&alone) + node_gmac(nd->fused);
  }
  const ar_tview_t *w = nd->inputs[1], *o = nd->outputs[0];
  double out = 1, wn = 1;
  for (int32_t d = 0; d < o->rank; d++) out *= o->dims[d];
  for (int32_t d = 0; d < w->rank; d++) wn *= w->dims[d];
  switch (nd->op) {
    case AR_OP_CONV_2D: return w->rank == 4 ? out * wn / w->dims[0] / 1e9 : 0;
    case AR_OP_DEPTHWISE_CONV_2D: return w->rank == 4 ? out * wn / w->dims[3] / 1e9 : 0;
    case AR_OP_FULLY_CONNECTED: return w->rank == 2 ? out * w->dims[1] / 1e9 : 0;
    default: return 0;
  }
}

/* Per-op-type and top-operator breakdown of `runs` profiled invokes (the `top` slowest operators,
 * with their GFLOP/s where the op's multiply-adds are known). */
static void profile(ar_interp_t *in, const void *input, size_t bytes, int runs, int top) {
  int32_t n_ops = ar_interp_n_operators(in);
  uint64_t *ns = calloc((size_t)n_ops, sizeof(*ns));
  op_time_t by_type[AR_OP_COUNT];
  memset(by_type, 0, sizeof by_type);
  for (int r = 0; r < runs; r++) {
    memcpy(ar_interp_input(in, 0)->data, input, bytes);
    ar_interp_invoke_profiled(in, ns);
  }
  double total = 0;
  for (int32_t k = 0; k < n_ops; k++) {
    const ar_node_t *nd = ar_interp_node(in, k);
    by_type[nd->op].op = nd->op;
    by_type[nd->op].ms += ns[k] / 1e6 / runs;
    if (!ar_interp_op_folded(in, k)) by_type[nd->op].count++;
    total += ns[k] / 1e6 / runs;
  }
  qsort(by_type, AR_OP_COUNT, sizeof(*by_type), cmp_op_time);
  printf("    profile (%.3f ms/invoke inside kernels):\n", total);
  for (int i = 0; i < AR_OP_COUNT && by_type[i].ms > 0; i++)
    printf("      %-28s %4d ops %8.3f ms %5.1f%%\n", ar_op_name(by_type[i].op), by_type[i].count,
           by_type[i].ms, 100.0 * by_type[i].ms / total);
  /* The slowest operators, with shapes and the input's dtype. */
  for (int t = 0; t < top; t++) {
    int32_t best = -1;
    for (int32_t k = 0; k < n_ops; k++)
      if (ns[k] > 0 && (best < 0 || ns[k] > ns[best])) best = k;
    if (best < 0) break;
    const ar_node_t *nd = ar_interp_node(in, best);
    const ar_tview_t *x = nd->inputs[0], *o = nd->outputs[0];
    printf("      op %4d %-22s %7.3f ms  in %s [%d,%d,%d,%d] out [%d,%d,%d,%d]", best, ar_op_name(nd->op),
           ns[best] / 1e6 / runs, x ? ar_dtype_name(x->dtype) : "-", x ? x->dims[0] : 0, x ? x->dims[1] : 0, x ? x->dims[2] : 0,
           x ? x->dims[3] : 0, o->dims[0], o->dims[1], o->dims[2], o->dims[3]);
    if (nd->n_inputs > 1 && nd->inputs[1])
      printf(" w [%d,%d,%d,%d]", nd->inputs[1]->dims[0], nd->inputs[1]->dims[1], nd->inputs[1]->dims[2],
             nd->inputs[1]->dims[3]);
    if (node_gmac(nd) > 0) printf("  %.1f GFLOP/s", 2 * node_gmac(nd) / (ns[best] / 1e9 / runs));
    printf("\n");
    ns[best] = 0;
  }
  free(ns);
}

/* --op-scaling: per operator, the fastest and the median of `runs` x `rounds` profiled invokes at
 * each thread count (the interpreters alternate round by round), the first count's time over the
 * others' (the operator's speedup, of mins and of medians) and what a perfect split would have
 * saved over what the split saved, "lost" = min(T) - min(first) * first / T in us; the `top`
 * operators that lose most first, then the sums. */
static void op_scaling(ar_interp_t **ins, const int *tcounts, int n_tc, const void *input, size_t bytes, int runs,
                       int rounds, int top) {
  const int32_t n_ops = ar_interp_n_operators(ins[0]);
  const int n = runs * rounds;
  uint64_t *ns = calloc((size_t)n_ops, sizeof(*ns));
  double *t = calloc((size_t)n_tc * n_ops * n, sizeof(double)), *tot = calloc((size_t)n_tc * n, sizeof(double));
  double *mn = calloc((size_t)n_tc * n_ops, sizeof(double)), *md = calloc((size_t)n_tc * n_ops, sizeof(double));
  double *lost = calloc((size_t)n_ops, sizeof(double));
  bool *shown = calloc((size_t)n_ops, sizeof(bool));
  if (!ns || !t || !tot || !mn || !md || !lost || !shown) goto out;
  for (int r = 0; r < rounds; r++)
    for (int kk = 0; kk < n_tc; kk++) {
      const int k = (kk + r) % n_tc;
      for (int i = 0; i < runs; i++) {
        memset(ns, 0, (size_t)n_ops * sizeof(*ns));
        memcpy(ar_interp_input(ins[k], 0)->data, input, bytes);
        ar_interp_invoke_profiled(ins[k], ns);
        const int s = r * runs + i;
        for (int32_t op = 0; op < n_ops; op++) {
          t[((size_t)k * n_ops + op) * n + s] = ns[op] / 1e3;
          tot[(size_t)k * n + s] += ns[op] / 1e3;
        }
      }
    }
  for (int k = 0; k < n_tc; k++)
    for (int32_t op = 0; op < n_ops; op++) {
      double *x = t + ((size_t)k * n_ops + op) * n;
      md[(size_t)k * n_ops + op] = median(x, n);   /* sorts: x[0] is the min */
      mn[(size_t)k * n_ops + op] = x[0];
    }
  const int last = n_tc - 1;
  double sum_lost = 0;
  for (int32_t op = 0; op < n_ops; op++) {
    lost[op] = mn[(size_t)last * n_ops + op] - mn[op] * tcounts[0] / tcounts[last];
    sum_lost += lost[op];
  }
  printf("    per operator, %d invokes per count (us; speedup of mins / of medians; lost: min at %d thr "
         "- min at %d thr x %d/%d):\n", n, tcounts[last], tcounts[0], tcounts[0], tcounts[last]);
  printf("      %4s %-22s %-19s %-18s %-7s", "op", "type", "out", "fused conv in", "fused@");
  for (int k = 0; k < n_tc; k++) printf(" %5s%-3d %8s", "min@", tcounts[k], "median");
  printf(" %6s %6s %7s\n", "sp min", "sp med", "lost");
  for (int i = 0; i < top; i++) {
    int32_t best = -1;
    for (int32_t op = 0; op < n_ops; op++)
      if (!shown[op] && (mn[op] > 0 || mn[(size_t)last * n_ops + op] > 0) && (best < 0 || lost[op] > lost[best]))
        best = op;
    if (best < 0) break;
    shown[best] = true;
    /* Fusion needs a conv output of AR_INTERP_FUSE_MIN_BYTES per thread: the counts may differ. */
    const ar_node_t *nd = ar_interp_node(ins[0], best);
    char fu[24] = "";
    for (int k = 0; k < n_tc; k++) {
      const ar_node_t *nk = ar_interp_node(ins[k], best);
      if (nk->fused || ar_interp_op_fused(ins[k], best) >= 0)
        snprintf(fu + strlen(fu), sizeof fu - strlen(fu), "%s%d", *fu ? "," : "", tcounts[k]);
      if (nk->fused) nd = nk;
    }
    const ar_tview_t *o = nd->outputs[0], *x = nd->fused ? nd->fused->inputs[0] : NULL;
    char os[32], xs[32] = "";
    snprintf(os, sizeof os, "[%d,%d,%d,%d]", o->rank > 0 ? o->dims[0] : 0, o->rank > 1 ? o->dims[1] : 0,
             o->rank > 2 ? o->dims[2] : 0, o->rank > 3 ? o->dims[3] : 0);
    if (x) snprintf(xs, sizeof xs, "[%d,%d,%d,%d]", x->dims[0], x->dims[1], x->dims[2], x->dims[3]);
    printf("      %4d %-22s %-19s %-18s %-7s", best, ar_op_name(nd->op), os, xs, *fu ? fu : "-");
    for (int k = 0; k < n_tc; k++) printf(" %8.1f %8.1f", mn[(size_t)k * n_ops + best], md[(size_t)k * n_ops + best]);
    printf(" %6.2f %6.2f %7.1f\n", mn[(size_t)last * n_ops + best] > 0 ? mn[best] / mn[(size_t)last * n_ops + best] : 0,
           md[(size_t)last * n_ops + best] > 0 ? md[best] / md[(size_t)last * n_ops + best] : 0, lost[best]);
  }
  double smin[MAX_THREAD_COUNTS] = {0}, smed[MAX_THREAD_COUNTS] = {0}, tmin[MAX_THREAD_COUNTS];
  for (int k = 0; k < n_tc; k++) {
    for (int32_t op = 0; op < n_ops; op++) {
      double *x = t + ((size_t)k * n_ops + op) * n;
      smin[k] += x[0];   /* sorted above */
      smed[k] += md[(size_t)k * n_ops + op];
    }
    tmin[k] = 1e30;
    for (int s = 0; s < n; s++) tmin[k] = tot[(size_t)k * n + s] < tmin[k] ? tot[(size_t)k * n + s] : tmin[k];
  }
  printf("      sums:");
  for (int k = 0; k < n_tc; k++)
    printf(" %d thr: ops' mins %.1f, medians %.1f, fastest invoke %.1f;", tcounts[k], smin[k], smed[k], tmin[k]);
  printf(" lost %.1f us\n", sum_lost);
out:
  free(ns);
  free(t);
  free(tot);
  free(mn);
  free(md);
  free(lost);
  free(shown);
}

/* One interpreter of `m` with weights mode `w`, placed in owned memory; NULL (message printed) on
 * failure. */
static ar_interp_t *weights_interp(const ar_model_t *m, ar_weights_t w, int threads, const char *stem) {
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  opt.threads = threads;
  opt.weights = w;
  ar_interp_t *in = NULL;
  char msg[AR_MSG_BYTES] = "";
  int rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
  if (rc == 0) rc = ar_interp_place_owned(in, msg, sizeof msg);
  if (rc != 0) {
    printf("%-34s error (%s weights): %s: %s\n", stem, ar_weights_name(w), ar_strerror(rc), msg);
    ar_interp_free(in);
    return NULL;
  }
  return in;
}

/* Median ms of `runs` invokes (input copied in each time, as the main table does); *min_ms lowered. */
static double timed_runs(ar_interp_t *in, const void *input, size_t bytes, int runs, int warmup, double *t,
                         double *min_ms) {
  ar_tview_t *iv = ar_interp_input(in, 0);
  for (int w = 0; w < warmup; w++) {
    memcpy(iv->data, input, bytes);
    ar_interp_invoke(in);
  }
  for (int i = 0; i < runs; i++) {
    double t0 = now_ms();
    memcpy(iv->data, input, bytes);
    ar_interp_invoke(in);
    t[i] = now_ms() - t0;
    if (t[i] < *min_ms) *min_ms = t[i];
  }
  return median(t, runs);
}

/* --fuse-compare, per fused pair: `n` profiled invokes of each interpreter, alternating; per pair
 * the median and minimum over invokes of conv + depthwise (off) and of the fused depthwise (on). */
/* `rounds` rounds of timed_runs on interpreters a and b, alternating which goes first so that
 * neither always runs on a cache the other warmed: ra[r], rb[r] the rounds' median ms, rr[r] = rb[r] /
 * ra[r]; *min_a, *min_b lowered to the fastest invoke seen. t: scratch of `runs` doubles. */
static void ab_rounds(ar_interp_t *a, ar_interp_t *b, const void *input, size_t bytes, int runs, int warmup,
                      int rounds, double *t, double *ra, double *rb, double *rr, double *min_a, double *min_b) {
  for (int r = 0; r < rounds; r++) {
    if (r % 2 == 0) {
      ra[r] = timed_runs(a, input, bytes, runs, warmup, t, min_a);
      rb[r] = timed_runs(b, input, bytes, runs, warmup, t, min_b);
    } else {
      rb[r] = timed_runs(b, input, bytes, runs, warmup, t, min_b);
      ra[r] = timed_runs(a, input, bytes, runs, warmup, t, min_a);
    }
    rr[r] = rb[r] / ra[r];
  }
}

static void fuse_pairs(ar_interp_t *ins[2], const void *input, size_t bytes, int n) {
  const int32_t n_ops = ar_interp_n_operators(ins[1]);
  uint64_t *ns = calloc((size_t)n_ops, sizeof(*ns));
  double *off = calloc((size_t)n_ops * (size_t)n, sizeof(double)), *on = calloc((size_t)n_ops * (size_t)n, sizeof(double));
  for (int r = 0; r < n; r++)
    for (int f = 0; f < 2; f++) {
      memset(ns, 0, (size_t)n_ops * sizeof(*ns));
      memcpy(ar_interp_input(ins[f], 0)->data, input, bytes);
      ar_interp_invoke_profiled(ins[f], ns);
      for (int32_t k = 0; k < n_ops; k++) {
        const int32_t d = ar_interp_op_fused(ins[1], k);
        if (d < 0) continue;
        if (f == 0) off[(size_t)k * n + r] = (ns[k] + ns[d]) / 1e6;
        else on[(size_t)k * n + r] = ns[d] / 1e6;
      }
    }
  double son = 0, soff = 0, mon = 0, moff = 0;
  for (int32_t k = 0; k < n_ops; k++) {
    const int32_t d = ar_interp_op_fused(ins[1], k);
    if (d < 0) continue;
    double *a = off + (size_t)k * n, *b = on + (size_t)k * n, amin = 1e30, bmin = 1e30;
    for (int r = 0; r < n; r++) amin = a[r] < amin ? a[r] : amin, bmin = b[r] < bmin ? b[r] : bmin;
    const double am = median(a, n), bm = median(b, n);
    const ar_tview_t *t = ar_interp_node(ins[1], k)->outputs[0];
    printf("    ops %3d+%-3d [%d,%d,%d,%d] k%dx%d s%d: off %.3f ms (min %.3f), fused %.3f ms (min %.3f)\n", k, d,
           t->dims[0], t->dims[1], t->dims[2], t->dims[3], ar_interp_node(ins[1], d)->inputs[1]->dims[1],
           ar_interp_node(ins[1], d)->inputs[1]->dims[2], ar_interp_node(ins[1], d)->options->depthwise.stride_h,
           am, amin, bm, bmin);
    soff += am, son += bm, moff += amin, mon += bmin;
  }
  printf("    fused pairs: off %.3f ms (sum of mins %.3f), fused %.3f ms (sum of mins %.3f)\n", soff, moff, son, mon);
  free(ns);
  free(off);
  free(on);
}

/* --fuse-compare: fusion off vs on, per model and thread count, alternating rounds. Returns the
 * number of models that could not run. */
/* An interpreter of `m` at `threads` threads, fusion on or off, placed in its own arena, whose one
 * input takes `bytes` bytes (the case file at ipath, read into `input`). Errors: those of
 * ar_interp_new / _place_owned, AR_EINVAL when the input is missing or of another size. */
static int open_interp(const ar_model_t *m, int threads, bool fuse, const void *input, size_t bytes,
                       const char *ipath, ar_interp_t **in, char *msg, size_t msg_bytes) {
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  opt.threads = threads;
  opt.fuse = fuse;
  int rc = ar_interp_new(m, &opt, in, msg, msg_bytes);
  if (rc == 0) rc = ar_interp_place_owned(*in, msg, msg_bytes);
  if (rc == 0 && (!input || ar_interp_n_inputs(*in) != 1 || ar_interp_input(*in, 0)->bytes != bytes))
    rc = ar_errf(msg, msg_bytes, AR_EINVAL, "input %s missing or of the wrong size", ipath);
  return rc;
}

static int fuse_compare(const char *const *models, int n_models, const char *cs, int runs, int warmup,
                        int rounds, const int *tcounts, int n_tc) {
  const char *mdir = env_or("AR_MODELS_DIR", AR_SRCDIR "/models");
  const char *gdir = env_or("AR_GOLDEN_DIR", AR_SRCDIR "/tests/golden");
  printf("bench/invoke --fuse-compare: case %s, %d round(s) x %d runs (+%d warm-up) per mode, alternating\n", cs,
         rounds, runs, warmup);
  printf("%-34s %3s %9s %9s %7s %9s %9s %7s %5s %11s %11s\n", "model", "thr", "off ms", "on ms", "on/off",
         "off min", "on min", "ratio", "fused", "arena off", "arena on");
  int failures = 0;
  double *t = calloc((size_t)runs, sizeof(*t));
  double *r0 = calloc((size_t)rounds, sizeof(double)), *r1 = calloc((size_t)rounds, sizeof(double));
  double *rr = calloc((size_t)rounds, sizeof(double));
  for (int mi = 0; mi < n_models; mi++) {
    char mpath[4096], ipath[4096], msg[AR_MSG_BYTES] = "";
    snprintf(mpath, sizeof mpath, "%s/%s.tflite", mdir, models[mi]);
    snprintf(ipath, sizeof ipath, "%s/%s/%s/input_0.bin", gdir, models[mi], cs);
    size_t bytes = 0;
    void *input = read_all(ipath, &bytes);
    ar_model_t *m = NULL;
    int rc = ar_model_load(mpath, &m, msg, sizeof msg);
    for (int k = 0; k < n_tc && rc == 0; k++) {
      ar_interp_t *ins[2] = {NULL, NULL};
      for (int f = 0; f < 2 && rc == 0; f++)
        rc = open_interp(m, tcounts[k], f == 1, input, bytes, ipath, &ins[f], msg, sizeof msg);
      if (rc != 0) {
        ar_interp_free(ins[0]);
        ar_interp_free(ins[1]);
        break;
      }
      double min0 = 1e30, min1 = 1e30;
      ab_rounds(ins[0], ins[1], input, bytes, runs, warmup, rounds, t, r0, r1, rr, &min0, &min1);
      int nf = 0;
      for (int32_t op = 0; op < ar_interp_n_operators(ins[1]); op++) nf += ar_interp_op_fused(ins[1], op) >= 0;
      printf("%-34s %3d %9.3f %9.3f %7.3f %9.3f %9.3f %7.3f %5d %11llu %11llu\n", models[mi], tcounts[k],
             median(r0, rounds), median(r1, rounds), median(rr, rounds), min0, min1, min1 / min0, nf,
             (unsigned long long)ar_interp_arena_bytes(ins[0]), (unsigned long long)ar_interp_arena_bytes(ins[1]));
      fuse_pairs(ins, input, bytes, runs * rounds);
      fflush(stdout);
      ar_interp_free(ins[0]);
      ar_interp_free(ins[1]);
    }
    if (rc != 0) {
      printf("%-34s error: %s: %s\n", models[mi], ar_strerror(rc), msg);
      failures++;
    }
    ar_model_free(m);
    free(input);
  }
  free(t);
  free(r0);
  free(r1);
  free(rr);
  return failures;
}

/* --weights: stored vs fp32, per model, alternating rounds. Returns the number of models that
 * could not run. */
static int weights_compare(const char *const *models, int n_models, const char *cs, int runs, int warmup,
                           int rounds, int threads) {
  const char *mdir = env_or("AR_MODELS_DIR", AR_SRCDIR "/models");
  const char *gdir = env_or("AR_GOLDEN_DIR", AR_SRCDIR "/tests/golden");
  const char *gxdir = env_or("AR_GOLDEN_EXTRA_DIR", AR_SRCDIR "/tests/golden_extra");
  printf("bench/invoke --weights: case %s, %d round(s) x %d runs (+%d warm-up) per mode, alternating, %d "
         "thread(s)%s\n", cs, rounds, runs, warmup, threads, g_cpu_clock ? ", timed by the thread's CPU clock" : "");
  printf("%-34s %9s %9s %7s %9s %9s %7s %12s %12s %7s %10s %10s %12s\n", "model", "fp32 ms", "stored ms", "ratio",
         "fp32 min", "st min", "ratio", "pers fp32 B", "pers stor B", "st/fp32", "arena fp32", "arena stor",
         "TFLite pers");
  int failures = 0;
  double *t = calloc((size_t)runs, sizeof(*t));
  double *rf = calloc((size_t)rounds, sizeof(double)), *rs = calloc((size_t)rounds, sizeof(double));
  double *rr = calloc((size_t)rounds, sizeof(double));
  double worst = 0, sum_f = 0, sum_s = 0;
  uint64_t tot_pf = 0, tot_ps = 0;
  for (int mi = 0; mi < n_models; mi++) {
    char mpath[4096], ipath[4096], msg[AR_MSG_BYTES] = "";
    snprintf(mpath, sizeof mpath, "%s/%s.tflite", mdir, models[mi]);
    snprintf(ipath, sizeof ipath, "%s/%s/%s/input_0.bin", gdir, models[mi], cs);
    size_t bytes = 0;
    void *input = read_all(ipath, &bytes);
    if (!input) {
      snprintf(ipath, sizeof ipath, "%s/%s/%s/input_0.bin", gxdir, models[mi], cs);
      input = read_all(ipath, &bytes);
    }
    ar_model_t *m = NULL;
    int rc = ar_model_load(mpath, &m, msg, sizeof msg);
    if (rc != 0) {
      printf("%-34s error: %s: %s\n", models[mi], ar_strerror(rc), msg);
      failures++;
      free(input);
      continue;
    }
    ar_interp_t *f = weights_interp(m, AR_WEIGHTS_FP32, threads, models[mi]);
    ar_interp_t *s = f ? weights_interp(m, AR_WEIGHTS_STORED, threads, models[mi]) : NULL;
    if (s && (!input || ar_interp_n_inputs(s) != 1 || ar_interp_input(s, 0)->bytes != bytes)) {
      printf("%-34s error: input %s missing or of the wrong size\n", models[mi], ipath);
      ar_interp_free(s);
      s = NULL;
    }
    if (!s) {
      failures++;
      ar_interp_free(f);
      ar_model_free(m);
      free(input);
      continue;
    }
    double fmin = 1e30, smin = 1e30;
    ab_rounds(f, s, input, bytes, runs, warmup, rounds, t, rf, rs, rr, &fmin, &smin);
    double fms = median(rf, rounds), sms = median(rs, rounds), ratio = median(rr, rounds);
    uint64_t pf = ar_interp_persistent_bytes(f), ps = ar_interp_persistent_bytes(s);
    char tfl[24] = "-";
    for (size_t k = 0; k < sizeof tflite_persistent / sizeof tflite_persistent[0]; k++)
      if (strcmp(tflite_persistent[k].stem, models[mi]) == 0)
        snprintf(tfl, sizeof tfl, "%llu", (unsigned long long)tflite_persistent[k].bytes);
    printf("%-34s %9.3f %9.3f %7.3f %9.3f %9.3f %7.3f %12llu %12llu %7.4f %10llu %10llu %12s\n", models[mi], fms,
           sms, ratio, fmin, smin, smin / fmin, (unsigned long long)pf, (unsigned long long)ps,
           pf ? (double)ps / (double)pf : 0.0, (unsigned long long)ar_interp_arena_bytes(f),
           (unsigned long long)ar_interp_arena_bytes(s), tfl);
    fflush(stdout);
    if (ratio > worst) worst = ratio;
    sum_f += fms;
    sum_s += sms;
    tot_pf += pf;
    tot_ps += ps;
    ar_interp_free(s);
    ar_interp_free(f);
    ar_model_free(m);
    free(input);
  }
  if (sum_f > 0)
    printf("all models: time stored / fp32 %.3f (sum of medians), worst model ratio %.3f; persistent %llu -> %llu B "
           "(%.4f)\n", sum_s / sum_f, worst, (unsigned long long)tot_pf, (unsigned long long)tot_ps,
           tot_pf ? (double)tot_ps / (double)tot_pf : 0.0);
  free(t);
  free(rf);
  free(rs);
  free(rr);
  return failures;
}

/* GFLOP/s of one OpenBLAS sgemm 1024^3 call with OpenBLAS's own `threads` threads (best of `reps`):
 * the machine's sgemm peak the issue measures the models against. OpenBLAS goes back to one
 * thread afterwards, as the kernels run it (their bands split over arenad's pool instead). */
static double sgemm_peak(int threads, int reps) {
  enum { N = 1024 };
  static float *a, *b, *c;
  if (!a) {
    a = aligned_alloc(64, sizeof(float) * N * N);
    b = aligned_alloc(64, sizeof(float) * N * N);
    c = aligned_alloc(64, sizeof(float) * N * N);
    if (!a || !b || !c) return 0;
    for (int i = 0; i < N * N; i++) a[i] = (float)(i % 13) * 0.01f, b[i] = (float)(i % 7) * 0.02f;
  }
  openblas_set_num_threads(threads);
  double best = 1e30;
  for (int r = 0; r < reps + 1; r++) {   /* the first one warms up */
    double t0 = ar_now_ms();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
    double ms = ar_now_ms() - t0;
    if (r > 0 && ms < best) best = ms;
  }
  openblas_set_num_threads(1);
  return 2.0 * N * N * (double)N / (best / 1e3) / 1e9;
}

/* The core-to-core round trip (ns) of one cache line: two threads, each spinning until the other's
 * store, median of 5 runs of 20000 round trips. 0 when the second thread cannot start. */
enum { RT_TRIPS = 20000, RT_RUNS = 5 };
static _Alignas(64) _Atomic int rt_ping;
static _Alignas(64) _Atomic int rt_pong;

static void *rt_echo(void *arg) {
  (void)arg;
  for (int i = 1; i <= RT_TRIPS; i++) {
    while (atomic_load_explicit(&rt_ping, memory_order_acquire) != i) {
    }
    atomic_store_explicit(&rt_pong, i, memory_order_release);
  }
  return NULL;
}

static double core_round_trip_ns(void) {
  double ns[RT_RUNS];
  for (int r = 0; r < RT_RUNS; r++) {
    atomic_store(&rt_ping, 0);
    atomic_store(&rt_pong, 0);
    pthread_t th;
    if (pthread_create(&th, NULL, rt_echo, NULL) != 0) return 0;
    uint64_t t0 = ar_clock_ns(CLOCK_MONOTONIC);
    for (int i = 1; i <= RT_TRIPS; i++) {
      atomic_store_explicit(&rt_ping, i, memory_order_release);
      while (atomic_load_explicit(&rt_pong, memory_order_acquire) != i) {
      }
    }
    uint64_t t1 = ar_clock_ns(CLOCK_MONOTONIC);
    pthread_join(th, NULL);
    ns[r] = (double)(t1 - t0) / RT_TRIPS;
  }
  return median(ns, RT_RUNS);
}

/* "1,2,4" -> counts; returns how many, or -1. */
static int parse_threads(const char *arg, int *out) {
  int n = 0;
  const char *p = arg;
  while (*p) {
    char *end = NULL;
    long v = strtol(p, &end, 10);
    if (end == p || v < 1 || v > AR_POOL_THREADS_MAX || n >= MAX_THREAD_COUNTS) return -1;
    out[n++] = (int)v;
    p = end;
    if (*p == ',') p++;
    else if (*p) return -1;
  }
  return n > 0 ? n : -1;
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {
    {"ref", required_argument, NULL, 'r'},    {"runs", required_argument, NULL, 'n'},
    {"warmup", required_argument, NULL, 'w'}, {"rounds", required_argument, NULL, 'R'},
    {"case", required_argument, NULL, 'c'},   {"threads", required_argument, NULL, 't'},
    {"profile", no_argument, NULL, 'p'},      {"quant", no_argument, NULL, 'q'},
    {"cpu-clock", no_argument, NULL, 'C'},    {"weights", no_argument, NULL, 'W'},
    {"isa", required_argument, NULL, 'I'},    {"json", no_argument, NULL, 'J'},
    {"top", required_argument, NULL, 'T'},    {"no-fuse", no_argument, NULL, 'F'},
    {"fuse-compare", no_argument, NULL, 'G'}, {"op-scaling", no_argument, NULL, 'O'},
    {NULL, 0, NULL, 0},
  };
  const char *ref = NULL, *cs = "photo", *isa = NULL;
  int runs = 30, warmup = 5, rounds = 3, threads = 1, do_profile = 0, quant = 0, weights = 0, c;
  int tcounts[MAX_THREAD_COUNTS] = {1}, n_tc = 1, json = 0, top = 10, no_fuse = 0, fuse_cmp = 0, op_scale = 0;
  while ((c = getopt_long(argc, argv, "r:n:w:R:c:t:pqCWI:JT:FGO", longopts, NULL)) != -1) {
    switch (c) {
      case 'r': ref = optarg; break;
      case 'n': runs = atoi(optarg); break;
      case 'w': warmup = atoi(optarg); break;
      case 'R': rounds = atoi(optarg); break;
      case 'c': cs = optarg; break;
      case 't':
        n_tc = parse_threads(optarg, tcounts);
        if (n_tc < 0) {
          fprintf(stderr, "bench/invoke: --threads '%s': a list like 1,2 (each 1..%d, at most %d)\n", optarg,
                  AR_POOL_THREADS_MAX, MAX_THREAD_COUNTS);
          return 2;
        }
        threads = tcounts[0];
        break;
      case 'J': json = 1; break;
      case 'p': do_profile = 1; break;
      case 'T': top = atoi(optarg); break;
      case 'q': quant = 1; break;
      case 'C': g_cpu_clock = 1; break;
      case 'W': weights = 1; break;
      case 'I': isa = optarg; break;
      case 'F': no_fuse = 1; break;
      case 'G': fuse_cmp = 1; break;
      case 'O': op_scale = 1; break;
      default:
        fprintf(stderr, "usage: bench/invoke [--quant] [--weights] [--ref DIR] [--runs N] [--warmup W] [--rounds R] "
                        "[--case photo|random] [--threads T[,T...]] [--json] [--profile [--top N]] [--cpu-clock] "
                        "[--isa portable|avx2] [--no-fuse | --fuse-compare] [--op-scaling] "
                        "[MODEL_STEM ...]\n");
        return 2;
    }
  }
  if (runs < 1 || rounds < 1 || warmup < 0 || threads < 1) {
    fprintf(stderr, "bench/invoke: --runs, --rounds, --threads must be >= 1\n");
    return 2;
  }
  if (isa) {   /* every integer kernel family on one path */
    const int level = strcmp(isa, "portable") == 0 ? 0 : strcmp(isa, "avx2") == 0 ? 1 : -1;
    if (level < 0 || ar__qdw_set_isa(level) != level || ar__q8_set_isa(level) != level ||
        ar__quantize_set_isa(level) != level ||
        !ar_qgemm_path_supported(level ? AR_QGEMM_AVX2 : AR_QGEMM_PORTABLE)) {
      fprintf(stderr, "bench/invoke: --isa %s: portable or avx2, and this CPU must have it\n", isa);
      return 2;
    }
    ar_qgemm_force_path(level ? AR_QGEMM_AVX2 : AR_QGEMM_PORTABLE);
    ar__lut8_set_isa(0);
    printf("bench/invoke: integer kernels forced to the %s path\n", isa);
  }
  if (g_cpu_clock && (threads != 1 || n_tc != 1)) {
    fprintf(stderr, "bench/invoke: --cpu-clock times one thread (--threads 1)\n");
    return 2;
  }
  const char *const *models = default_models;
  int n_models = (int)(sizeof default_models / sizeof default_models[0]);
  if (quant) {
    models = quant_models;
    n_models = (int)(sizeof quant_models / sizeof quant_models[0]);
  }
  if (weights) {
    models = weights_models;
    n_models = (int)(sizeof weights_models / sizeof weights_models[0]);
  }
  if (optind < argc) {
    models = (const char *const *)(argv + optind);
    n_models = argc - optind;
  }
  if (json && (do_profile || weights || op_scale)) {
    fprintf(stderr, "bench/invoke: --json goes with the main table only (not --profile / --weights / --op-scaling)\n");
    return 2;
  }
  if (weights && n_tc != 1) {
    fprintf(stderr, "bench/invoke: --weights takes one thread count\n");
    return 2;
  }
  if (weights) return weights_compare(models, n_models, cs, runs, warmup, rounds, threads) ? 1 : 0;
  if (fuse_cmp) {
    if (quant || json || do_profile) {
      fprintf(stderr, "bench/invoke: --fuse-compare goes with the float models alone (no --quant/--json/--profile)\n");
      return 2;
    }
    return fuse_compare(models, n_models, cs, runs, warmup, rounds, tcounts, n_tc) ? 1 : 0;
  }
  const char *mdir = quant ? env_or("AR_MODELS_Q_DIR", AR_SRCDIR "/../shared/models_q")
                         : env_or("AR_MODELS_DIR", AR_SRCDIR "/models");
  const char *gdir = quant ? env_or("AR_GOLDEN_Q_DIR", AR_SRCDIR "/../shared/golden_q")
                         : env_or("AR_GOLDEN_DIR", AR_SRCDIR "/tests/golden");

  /* With --json only the JSON document goes to stdout. */
  FILE *tab = json ? stderr : stdout;
  char tclist[64] = "";
  for (int k = 0; k < n_tc; k++)
    snprintf(tclist + strlen(tclist), sizeof tclist - strlen(tclist), "%s%d", k ? "," : "", tcounts[k]);
  fprintf(tab, "bench/invoke: case %s, %d round(s) x %d runs (+%d warm-up) per engine and thread count, "
          "threads %s (alternating)%s%s\n", cs, rounds, runs, warmup, tclist,
          ref ? ", LiteRT alternating" : ", no LiteRT (--ref not given)",
          g_cpu_clock ? ", arenad timed by its thread's CPU clock" : "");
  fprintf(tab, "sgemm peak: one OpenBLAS sgemm 1024^3 call at the same thread count (OpenBLAS's own "
          "threads), best of 3, measured before each model; rt ns: core-to-core cache-line round trip, "
          "measured before each model\n");
  if (quant) {
    fprintf(tab, "quantized models (%s); 'TFLite builtin' and 'TFLite XNNPACK' are native TFLite 2.19 at one "
            "thread as measured by issue 9's author, not here;%s\n", mdir,
            ref ? " 'LiteRT' is LiteRT.js with XNNPACK (XNNPACK's rounding, not the goldens')" : "");
    fprintf(tab, "%-52s %3s %9s %8s %7s %9s %7s %7s %9s %9s %8s %9s %6s\n", "model", "thr", "arenad ms", "GOP/s",
            "GMAC", "ar min", "speedup", "sp min", "TFLite", "TFLite", "arenad/", ref ? "LiteRT ms" : "", "rt ns");
    fprintf(tab, "%-52s %3s %9s %8s %7s %9s %7s %7s %9s %9s %8s %9s %6s\n", "", "", "(median)", "", "", "", "", "",
            "builtin", "XNNPACK", "XNNPACK", ref ? "(XNNPACK)" : "", "");
  } else {
    fprintf(tab, "%-34s %3s %10s %10s %7s %9s %9s %9s %9s %7s %7s %7s %9s %6s %6s\n", "model", "thr", "arenad ms",
            "LiteRT ms", "ratio", "GFLOP/s", "GMAC", "ar min", "LRT min", "ratio", "speedup", "sp min",
            "sgemm pk", "frac", "rt ns");
  }
  if (json) printf("[");
  int n_json = 0;
  int failures = 0, slower = 0;
  double *t = calloc((size_t)runs, sizeof(*t));
  double *ar_round = calloc((size_t)rounds * MAX_THREAD_COUNTS, sizeof(double));
  double *lt_round = calloc((size_t)rounds, sizeof(double));
  for (int mi = 0; mi < n_models; mi++) {
    char mpath[4096], ipath[4096], msg[AR_MSG_BYTES] = "";
    snprintf(mpath, sizeof mpath, "%s/%s.tflite", mdir, models[mi]);
    snprintf(ipath, sizeof ipath, "%s/%s/%s/input_0.bin", gdir, models[mi], cs);
    ar_model_t *m = NULL;
    ar_interp_t *ins[MAX_THREAD_COUNTS] = {NULL};
    size_t bytes = 0;
    void *input = read_all(ipath, &bytes);
    if (!input && quant) {   /* models without a photo case (micro speech) */
      snprintf(ipath, sizeof ipath, "%s/%s/random/input_0.bin", gdir, models[mi]);
      input = read_all(ipath, &bytes);
    }
    int rc = ar_model_load(mpath, &m, msg, sizeof msg);
    for (int k = 0; k < n_tc && rc == 0; k++) {
      rc = open_interp(m, tcounts[k], !no_fuse, input, bytes, ipath, &ins[k], msg, sizeof msg);
    }
    if (rc != 0) {
      if (quant) {   /* kernels still landing: say so, do not fail the run */
        fprintf(tab, "%-52s cannot run yet: %.160s\n", models[mi], msg);
      } else {
        fprintf(tab, "%-34s error: %s: %s\n", models[mi], ar_strerror(rc), msg);
        failures++;
      }
      for (int k = 0; k < n_tc; k++) ar_interp_free(ins[k]);
      ar_model_free(m);
      free(input);
      continue;
    }
    /* The sgemm peak at each thread count (OpenBLAS's own threads), right before its rounds. */
    double peak[MAX_THREAD_COUNTS] = {0};
    for (int k = 0; k < n_tc; k++) peak[k] = sgemm_peak(tcounts[k], 3);
    const double rt_ns = core_round_trip_ns();
    int n_lt = 0;
    double ar_min[MAX_THREAD_COUNTS], lt_min = 1e30;
    for (int k = 0; k < n_tc; k++) ar_min[k] = 1e30;
    for (int r = 0; r < rounds; r++) {
      for (int kk = 0; kk < n_tc; kk++) {
        const int k = (kk + r) % n_tc;   /* rotate which count goes first */
        ar_round[k * rounds + r] = timed_runs(ins[k], input, bytes, runs, warmup, t, &ar_min[k]);
      }
      if (ref) {
        double mn = 0, ms = litert_median(ref, mpath, ipath, runs, warmup, &mn);
        if (ms > 0) lt_round[n_lt++] = ms;
        if (ms > 0 && mn > 0 && mn < lt_min) lt_min = mn;
      }
    }
    double lt_ms = n_lt ? median(lt_round, n_lt) : 0;
    double gmac = ar_interp_macs(ins[0]) / 1e9;
    double base_ms = 0, base_min = 0;
    for (int k = 0; k < n_tc; k++) {
      double ar_ms = median(ar_round + k * rounds, rounds);
      if (k == 0) base_ms = ar_ms, base_min = ar_min[0];
      const double gflops = 2 * gmac / (ar_ms / 1e3);
      const double sp = ar_ms > 0 ? base_ms / ar_ms : 0, sp_min = ar_min[k] > 0 ? base_min / ar_min[k] : 0;
      const double frac = peak[k] > 0 ? gflops / peak[k] : 0;
      if (quant) {
        double bms = 0, xms = 0;
        for (size_t q = 0; q < sizeof native_figures / sizeof native_figures[0]; q++)
          if (strcmp(native_figures[q].stem, models[mi]) == 0) bms = native_figures[q].builtin_ms, xms = native_figures[q].xnnpack_ms;
        char b[16] = "-", x[16] = "-", rx[16] = "-", l[16] = "";
        if (bms > 0) snprintf(b, sizeof b, "%.1f", bms);
        if (xms > 0) snprintf(x, sizeof x, "%.1f", xms);
        if (xms > 0) snprintf(rx, sizeof rx, "%.2f", ar_ms / xms);
        if (ref) snprintf(l, sizeof l, "%s", lt_ms > 0 ? "" : "n/a");
        if (ref && lt_ms > 0) snprintf(l, sizeof l, "%.3f", lt_ms);
        fprintf(tab, "%-52s %3d %9.3f %8.2f %7.3f %9.3f %7.2f %7.2f %9s %9s %8s %9s %6.0f\n", models[mi], tcounts[k],
                ar_ms, gflops, gmac, ar_min[k], sp, sp_min, b, x, rx, l, rt_ns);
      } else if (lt_ms > 0) {
        fprintf(tab, "%-34s %3d %10.3f %10.3f %7.3f %9.2f %9.3f %9.3f %9.3f %7.3f %7.2f %7.2f %9.2f %6.3f %6.0f\n",
                models[mi], tcounts[k], ar_ms, lt_ms, ar_ms / lt_ms, gflops, gmac, ar_min[k], lt_min,
                ar_min[k] / lt_min, sp, sp_min, peak[k], frac, rt_ns);
        if (k == 0 && ar_ms >= lt_ms) slower++;
      } else {
        fprintf(tab, "%-34s %3d %10.3f %10s %7s %9.2f %9.3f %9.3f %9s %7s %7.2f %7.2f %9.2f %6.3f %6.0f\n", models[mi],
                tcounts[k], ar_ms, ref ? "error" : "-", "-", gflops, gmac, ar_min[k], "-", "-", sp, sp_min, peak[k],
                frac, rt_ns);
        if (ref && k == 0) failures++;
      }
      if (json) {
        printf("%s\n  {\"model\": \"%s\", \"threads\": %d, \"median_ms\": %.4f, \"min_ms\": %.4f, \"gflops\": %.3f, "
               "\"gmac\": %.4f, \"speedup\": %.4f, \"speedup_min\": %.4f, \"sgemm_peak_gflops\": %.3f, "
               "\"fraction\": %.4f, \"core_round_trip_ns\": %.0f", n_json++ ? "," : "", models[mi], tcounts[k], ar_ms,
               ar_min[k], gflops, gmac, sp, sp_min, peak[k], frac, rt_ns);
        if (ref && lt_ms > 0) printf(", \"litert_ms\": %.4f", lt_ms);
        printf("}");
      }
    }
    fflush(tab);
    if (do_profile)
      for (int k = 0; k < n_tc; k++) {
        fprintf(tab, "  %s, %d thread(s):\n", models[mi], tcounts[k]);
        profile(ins[k], input, bytes, runs, top);
      }
    if (op_scale && n_tc > 1) op_scaling(ins, tcounts, n_tc, input, bytes, runs, rounds, top);
    for (int k = 0; k < n_tc; k++) ar_interp_free(ins[k]);
    ar_model_free(m);
    free(input);
  }
  if (json) printf("\n]\n");
  if (ref && !quant) fprintf(tab, "models with ratio >= 1.0: %d of %d (first thread count)\n", slower, n_models);
  free(t);
  free(ar_round);
  free(lt_round);
  return failures ? 1 : 0;
}
