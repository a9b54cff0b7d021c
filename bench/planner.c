/* bench/planner.c - memory planner figures and planning time (not run by make check).
 *
 * For each real model (both lifetime conventions, scratch sizes from the kernels' prepare) and for
 * synthetic residual/branching graphs of 500, 2000 and 5000 operators generated here, prints the
 * arena of every strategy (naive = no reuse at all, linear, first-fit, greedy-by-size = TFLite's
 * rule, best), the lower bound, best / bound, and the planning time of greedy-by-size and best
 * (median of several runs, one thread, CPU microseconds). Targets: best <= 250 us per real model,
 * <= 2.8 ms at 2000 operators, <= 11 ms at 5000 (TFLite's own planning times on this machine).
 *
 *   bench/planner [MODELS_DIR]     (default $AR_MODELS_DIR, else <srcdir>/models)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "interp/ar_lifetimes.h"
#include "loader/ar_model.h"
#include "planner/ar_planner.h"

#define RUNS 21

static const char *const models[] = {
  "face_detection_full_range", "face_detection_full_range_sparse", "face_detection_short_range",
  "hand_landmark_full", "hand_landmark_lite", "object_detection_3d_camera",
  "object_detection_3d_cup", "palm_detection_full", "palm_detection_lite",
  "selfie_segmentation", "selfie_segmentation_landscape",
  /* models_extra (optional: skipped with a message when ./dev could not place them) */
  "face_landmark", "pose_detection", "pose_landmark_lite", "pose_landmark_full",
};
#define N_CORE_MODELS 11

/* Thread CPU time: the planner is single-threaded, and CPU time stays meaningful when the
 * machine is shared with builds (wall time then mostly measures the scheduler). */
static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median planning time of `s` over RUNS runs, in microseconds. */
static double time_plan(ar_planner_t *p, ar_strategy_t s) {
  double t[RUNS];
  for (int r = 0; r < RUNS; r++) {
    double t0 = now_us();
    if (ar_planner_plan(p, s) != 0) return -1;
    t[r] = now_us() - t0;
  }
  qsort(t, RUNS, sizeof t[0], cmp_double);
  return t[RUNS / 2];
}

static void header(void) {
  printf("%-42s %6s %10s %10s %10s %10s %10s %10s %7s %9s %9s\n", "graph", "bufs", "naive",
         "linear", "first-fit", "greedy", "best", "bound", "best/lb", "greedy us", "best us");
}

/* One row: every strategy's arena and the timings. Returns 0, or -1 when a plan fails its
 * verification. */
static int row(const char *name, ar_planner_t *p) {
  uint64_t arena[4];
  ar_plan_figures_t f;
  char msg[AR_MSG_BYTES];
  for (int s = 0; s < 4; s++) {
    if (ar_planner_plan(p, (ar_strategy_t)s) != 0 || ar_planner_verify(p, msg, sizeof msg) != 0) {
      fprintf(stderr, "%s: %s plan failed: %s\n", name, ar_strategy_name((ar_strategy_t)s), msg);
      return -1;
    }
    ar_planner_figures(p, &f);
    arena[s] = f.arena_bytes;
  }
  double tg = time_plan(p, AR_STRATEGY_GREEDY_BY_SIZE);
  double tb = time_plan(p, AR_STRATEGY_BEST);
  printf("%-42s %6d %10llu %10llu %10llu %10llu %10llu %10llu %7.4f %9.1f %9.1f\n", name,
         ar_planner_count(p), (unsigned long long)f.naive_bytes, (unsigned long long)arena[0],
         (unsigned long long)arena[1], (unsigned long long)arena[2], (unsigned long long)arena[3],
         (unsigned long long)f.lower_bound_bytes,
         f.lower_bound_bytes ? (double)arena[3] / (double)f.lower_bound_bytes : 1.0, tg, tb);
  return 0;
}

static int real_models(const char *dir) {
  int status = 0;
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    char path[1024], msg[AR_MSG_BYTES];
    snprintf(path, sizeof path, "%s/%s.tflite", dir, models[i]);
    ar_model_t *m = NULL;
    if (i >= N_CORE_MODELS && access(path, R_OK) != 0) {
      printf("%-42s (absent: the models_extra set is not in %s)\n", models[i], dir);
      continue;
    }
    if (ar_model_load(path, &m, msg, sizeof msg) != 0) {
      fprintf(stderr, "%s: %s\n", path, msg);
      status = 1;
      continue;
    }
    for (int conv = 0; conv < 2; conv++) {
      /* The interpreter's prepare gives each operator's scratch size; the row plans the same
       * buffers it plans. */
      ar_interp_options_t opt;
      ar_interp_options_default(&opt);
      opt.lifetimes = (ar_lifetimes_t)conv;
      ar_interp_t *in = NULL;
      if (ar_interp_new(m, &opt, &in, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s: %s\n", path, msg);
        status = 1;
        break;
      }
      const ar_subgraph_t *sg = &m->subgraphs[0];
      uint64_t *scratch = calloc(sg->n_operators + 1, sizeof *scratch);
      for (int32_t k = 0; k < ar_interp_n_operators(in); k++) {
        const ar_node_t *nd = ar_interp_node(in, k);
        scratch[k] = nd && !ar_interp_op_folded(in, k) ? nd->scratch_bytes : 0;
      }
      ar_interp_free(in);
      ar_planner_t *p = ar_planner_new(64);
      ar_tensor_plan_t *tp = calloc(sg->n_tensors + 1, sizeof *tp);
      int32_t *sb = calloc(sg->n_operators + 1, sizeof *sb);
      ar_lifetime_options_t lo = {(ar_lifetimes_t)conv, true, scratch, NULL, false, NULL, NULL, 0, NULL};
      char name[128];
      snprintf(name, sizeof name, "%s (%s)", models[i], ar_lifetimes_name((ar_lifetimes_t)conv));
      if (ar_lifetimes_build(m, &lo, p, tp, sb, NULL, msg, sizeof msg) != 0 || row(name, p) != 0)
        status = 1;
      ar_planner_free(p);
      free(tp);
      free(sb);
      free(scratch);
    }
    ar_model_free(m);
  }
  return status;
}

/* ---- synthetic graphs ---- */

static uint64_t rng = 0x853c49e6748fea9bull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

typedef struct syn {
  int n_ops, n_t, cap;
  uint64_t *size;
  int32_t *producer, *last_read;
  int32_t *alias;       /* tensor whose bytes an in-place ADD output reuses, -1 */
  uint64_t *scratch;    /* per operator */
} syn_t;

static int syn_tensor(syn_t *g, uint64_t size, int32_t producer) {
  if (g->n_t == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 1024;
    g->size = realloc(g->size, g->cap * sizeof *g->size);
    g->producer = realloc(g->producer, g->cap * sizeof *g->producer);
    g->last_read = realloc(g->last_read, g->cap * sizeof *g->last_read);
    g->alias = realloc(g->alias, g->cap * sizeof *g->alias);
  }
  g->size[g->n_t] = size;
  g->producer[g->n_t] = producer;
  g->last_read[g->n_t] = -1;
  g->alias[g->n_t] = -1;
  return g->n_t++;
}

/* One operator reading a and b (b may be -1) writing a new tensor of `size`. */
static int syn_op(syn_t *g, int a, int b, uint64_t size, bool conv) {
  int k = g->n_ops++;
  g->last_read[a] = k;
  if (b >= 0) g->last_read[b] = k;
  g->scratch[k] = conv && rnd() % 3 == 0 ? size * 2 : 0;   /* im2col-like temporaries */
  return syn_tensor(g, size, k);
}

/* A MobileNet/U-Net-like graph: inverted-residual blocks (expand, depthwise, project, ADD with
 * the skip), two-branch blocks joined by a concatenation, resolution changes, and a few feature
 * maps kept for a decoder far later (long lifetimes). */
static void syn_generate(syn_t *g, int n_ops) {
  memset(g, 0, sizeof *g);
  g->scratch = calloc(n_ops + 16, sizeof *g->scratch);
  uint64_t hw = 64 * 64, c = 16;
  int cur = syn_tensor(g, hw * c * 4, -1);
  int skips[64], n_skips = 0;
  while (g->n_ops < n_ops - 8) {
    uint64_t r = rnd() % 100;
    uint64_t s = hw * c * 4;
    if (r < 55) {
      uint64_t e = 2 + rnd() % 5;
      int t1 = syn_op(g, cur, -1, s * e, true);
      int t2 = syn_op(g, t1, -1, s * e, false);
      int t3 = syn_op(g, t2, -1, s, true);
      int t4 = syn_op(g, cur, t3, s, false);
      if (g->last_read[t3] == g->n_ops - 1) g->alias[t4] = t3;   /* in-place ADD */
      cur = t4;
    } else if (r < 80) {
      int b1 = syn_op(g, cur, -1, s / 2, true);
      int b2 = syn_op(g, cur, -1, s, true);
      int b3 = syn_op(g, b2, -1, s / 2, false);
      cur = syn_op(g, b1, b3, s, false);
    } else if (r < 90 && hw > 16 * 16) {
      if (n_skips < 64 && rnd() % 2) skips[n_skips++] = cur;
      hw /= 4;
      c *= 2;
      cur = syn_op(g, cur, -1, hw * c * 4, true);
    } else if (n_skips > 0) {
      int skip = skips[--n_skips];
      uint64_t up = g->size[skip];
      int u = syn_op(g, cur, -1, up, false);
      cur = syn_op(g, u, skip, up, true);
      hw *= 4;
      c /= 2;
      if (c < 8) c = 8;
    } else {
      cur = syn_op(g, cur, -1, s, true);
    }
  }
  while (g->n_ops < n_ops) cur = syn_op(g, cur, -1, g->size[cur], g->n_ops % 2 == 0);
  g->last_read[cur] = g->n_ops - 1;   /* the graph output */
}

static int synthetic(int n_ops) {
  syn_t g;
  syn_generate(&g, n_ops);
  ar_planner_t *p = ar_planner_new(64);
  int32_t *buf = malloc(g.n_t * sizeof *buf);
  for (int t = 0; t < g.n_t; t++) {
    int32_t first = g.producer[t] < 0 ? 0 : g.producer[t];
    int32_t last = g.last_read[t] < first ? first : g.last_read[t];
    buf[t] = ar_planner_add(p, g.size[t], first, last, AR_BUF_ARENA,
                            g.alias[t] >= 0 ? buf[g.alias[t]] : -1, t);
    /* scratch of the operator producing t, right after its output */
    if (g.producer[t] >= 0 && g.scratch[g.producer[t]] > 0)
      ar_planner_add(p, g.scratch[g.producer[t]], g.producer[t], g.producer[t], AR_BUF_SCRATCH,
                     -1, g.producer[t]);
  }
  char name[64];
  snprintf(name, sizeof name, "synthetic residual/branching, %d ops", g.n_ops);
  int rc = row(name, p);
  ar_planner_free(p);
  free(buf);
  free(g.size);
  free(g.producer);
  free(g.last_read);
  free(g.alias);
  free(g.scratch);
  return rc;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : getenv("AR_MODELS_DIR");
  if (dir == NULL || *dir == '\0') dir = AR_SRCDIR "/models";
  printf("memory planner: arenas in bytes (64-byte alignment), times = median of %d plans, thread CPU us\n",
         RUNS);
  header();
  int status = real_models(dir);
  static const int sizes[] = {500, 2000, 5000};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (synthetic(sizes[i]) != 0) status = 1;
  return status;
}
