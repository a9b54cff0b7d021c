/* cmd_bench.c - arenactl bench (offline, in-process): the figures TFLite's benchmark_model gives
 * for any model file, measured on arenad's interpreter in this process.
 *
 *   arenactl bench MODEL [--input F ...] [--seed N] [--runs N] [--warmup N] [--min-secs S]
 *                  [--threads N] [--profile] [--json] [plan options as `arenactl run`]
 *
 * Phases, each timed on CLOCK_MONOTONIC (common/ar_stats.h, the clock bench/invoke reads):
 *   init     load (ar_model_load_describe) + plan (ar_interp_new, and ar_interp_prepare when an
 *            input's value sets shapes) + place (ar_interp_place_owned: folding, kernel init,
 *            thread pool, OpenBLAS warm-up); reading the input files is not counted;
 *   first    the first invoke, alone (cold caches, first touch of the arena);
 *   warm-up  --warmup invokes (default 1), their mean;
 *   timed    at least --runs invokes (default 50), more until --min-secs seconds have passed
 *            (default 0): mean, std, min, median, p90, p99, max (ar_stats_summarize);
 *   profile  with --profile, as many invokes again through ar_interp_invoke_profiled (one clock
 *            pair around each operator, the profile buffer ours): per operator its mean time,
 *            share of the operators' sum and GFLOP/s where its multiply-adds are known.
 *            Operators that do not run at invoke are listed with the reason (folded at place,
 *            elided, fused into op K, PAD folded into op K), so the table has a row for every
 *            operator of the model; a RELU whose producer clamps as it stores (activation
 *            folding) runs as a no-op and says so. The operators' sum is set against the same invokes' wall
 *            time, and against plain invokes: each profiled invoke is paired with a plain one
 *            (which goes first alternates), and the median over the pairs of (that invoke's
 *            operators' sum / the plain invoke) is printed beside the ratio of the means - on
 *            a loaded machine the means carry other processes' time slices, the median does not.
 * Inputs are copied in before every invoke, outside the timed region (with the arenad lifetime
 * convention an input's bytes may be reused during the invoke).
 *
 * Random inputs (no --input): seeded (splitmix64, --seed, default 1) so two runs see the same
 * bytes; float32/float16/float64 uniform in [-1, 1); a quantized input (scale and zero point) and
 * any int8/uint8/int16/uint16 input over its type's full range; other integer inputs in [0, 16)
 * (often indices or lengths: give real ones with --input); bool 0 or 1. An input whose value sets
 * shapes (PAD paddings, RESHAPE shape...) must be given with --input.
 *
 * Memory: the plan's arena and persistent bytes, the weights read in place from the file
 * mapping, and the process's peak resident set (VmHWM of /proc/self/status) after init and at the
 * end, in bytes and MB (10^6 bytes).
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clients/arenactl.h"
#include "clients/cli_io.h"
#include "common/ar_error.h"
#include "common/ar_stats.h"
#include "common/ar_util.h"
#include "interp/ar_interp.h"
#include "kernels/ar_parallel.h"
#include "loader/ar_model.h"

#define BENCH_MAX_INPUTS 16
#define BENCH_MAX_RUNS 10000000

static void bench_usage(FILE *f) {
  fprintf(f,
          "usage: arenactl bench MODEL [--input F ...] [--seed N] [--runs N] [--warmup N] [--min-secs S]\n"
          "                      [--threads N] [--profile] [--json]\n"
          "                      [--strategy linear|first-fit|greedy-by-size|best]\n"
          "                      [--lifetimes tflite|arenad] [--no-inplace] [--weights stored|fp32] [--no-fuse]\n"
          "Benchmarks a model file in this process (no daemon), as TFLite's benchmark_model does:\n"
          "init time (load + plan + place), the first invoke, the warm-up mean, then mean, std, min,\n"
          "median, p90, p99 and max of the timed invokes (at least --runs N, default 50, and more until\n"
          "--min-secs S seconds have passed, default 0), after --warmup N (default 1); the arena,\n"
          "persistent and weights bytes and the peak RSS. Inputs: raw little-endian files in input\n"
          "order (--input, as `arenactl run` takes them), else random (seeded by --seed, default 1):\n"
          "floats uniform in [-1, 1), quantized and 8/16-bit integer inputs over their full range,\n"
          "other integers in [0, 16). --profile adds a per-operator table (index, type, output shape,\n"
          "us per invoke, %% of the operators' sum, GFLOP/s) and the operators' sum against the invoke\n"
          "mean; --json prints all of it as one JSON object.\n");
}

/* A whole number in [lo, hi] from `arg`, or -1. */
static long parse_long(const char *arg, long lo, long hi) {
  char *end = NULL;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (errno != 0 || end == arg || *end != '\0' || v < lo || v > hi) return -1;
  return v;
}

/* ---- random inputs ------------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double unit(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1.0p-53; }

/* float32 -> IEEE half for |f| < 1: values below half's normal range become (signed) zero,
 * the mantissa is truncated (random data needs no rounding). */
static uint16_t half_of(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
  int32_t e = (int32_t)((b >> 23) & 0xffu) - 127 + 15;
  if (e <= 0) return sign;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  return (uint16_t)(sign | (uint32_t)e << 10 | ((b >> 13) & 0x3ffu));
}

/* Fill `data` (the input's bytes) with seeded random values of its dtype; `range` gets what was
 * drawn ("uniform [-1, 1)"). AR_EUNSUPPORTED for a dtype without a random form. */
static int fill_random(const ar_tview_t *v, void *data, uint64_t *seed, char *range, size_t range_bytes) {
  const uint64_t n = ar_dtype_size(v->dtype) ? v->bytes / ar_dtype_size(v->dtype) : 0;
  const bool quant = v->quant && v->quant->n > 0;
  int64_t lo = 0, hi = 15;   /* integers: inclusive range */
  switch (v->dtype) {
    case AR_DTYPE_FLOAT32:
      for (uint64_t i = 0; i < n; i++) ((float *)data)[i] = (float)(2 * unit(seed) - 1);
      snprintf(range, range_bytes, "uniform [-1, 1)");
      return 0;
    case AR_DTYPE_FLOAT64:
      for (uint64_t i = 0; i < n; i++) ((double *)data)[i] = 2 * unit(seed) - 1;
      snprintf(range, range_bytes, "uniform [-1, 1)");
      return 0;
    case AR_DTYPE_FLOAT16:
      for (uint64_t i = 0; i < n; i++) ((uint16_t *)data)[i] = half_of((float)(2 * unit(seed) - 1));
      snprintf(range, range_bytes, "uniform [-1, 1)");
      return 0;
    case AR_DTYPE_BOOL:
      for (uint64_t i = 0; i < n; i++) ((uint8_t *)data)[i] = (uint8_t)(splitmix64(seed) & 1);
      snprintf(range, range_bytes, "0 or 1");
      return 0;
    case AR_DTYPE_UINT8: lo = 0, hi = UINT8_MAX; break;
    case AR_DTYPE_INT8: lo = INT8_MIN, hi = INT8_MAX; break;
    case AR_DTYPE_INT16: lo = INT16_MIN, hi = INT16_MAX; break;
    case AR_DTYPE_UINT16: lo = 0, hi = UINT16_MAX; break;
    case AR_DTYPE_INT32: if (quant) lo = INT32_MIN, hi = INT32_MAX; break;
    case AR_DTYPE_UINT32: if (quant) lo = 0, hi = UINT32_MAX; break;
    case AR_DTYPE_INT64: if (quant) lo = INT32_MIN, hi = INT32_MAX; break;
    default: return AR_EUNSUPPORTED;
  }
  const uint64_t span = (uint64_t)(hi - lo) + 1;
  for (uint64_t i = 0; i < n; i++) {
    int64_t x = lo + (int64_t)(splitmix64(seed) % span);
    switch (v->dtype) {
      case AR_DTYPE_UINT8: ((uint8_t *)data)[i] = (uint8_t)x; break;
      case AR_DTYPE_INT8: ((int8_t *)data)[i] = (int8_t)x; break;
      case AR_DTYPE_INT16: ((int16_t *)data)[i] = (int16_t)x; break;
      case AR_DTYPE_UINT16: ((uint16_t *)data)[i] = (uint16_t)x; break;
      case AR_DTYPE_INT32: ((int32_t *)data)[i] = (int32_t)x; break;
      case AR_DTYPE_UINT32: ((uint32_t *)data)[i] = (uint32_t)x; break;
      default: ((int64_t *)data)[i] = x; break;
    }
  }
  snprintf(range, range_bytes, "%s[%lld, %lld]", quant || span > 16 ? "full range " : "",
           (long long)lo, (long long)hi);
  return 0;
}

/* ---- memory ------------------------------------------------------------------------------- */

/* A "Key:   123 kB" line of /proc/self/status, in bytes; 0 when it cannot be read. */
static uint64_t proc_status_bytes(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t v = 0;
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') {
      unsigned long long kb = 0;
      if (sscanf(line + n + 1, "%llu", &kb) == 1) v = (uint64_t)kb * 1024u;
      break;
    }
  fclose(f);
  return v;
}

/* ---- the report --------------------------------------------------------------------------- */

typedef struct {
  const char *model_path;
  int32_t threads;
  uint64_t seed;
  double load_ms, plan_ms, place_ms, first_ms, warm_mean_ms, timed_secs;
  int warmup;
  ar_stats_t inv;               /* timed invokes, ms */
  uint64_t macs, arena, persistent, weights, rss_init, rss_peak, rss_now;
  /* --profile */
  bool profile;
  int prof_runs;
  const uint64_t *op_ns;        /* summed over prof_runs */
  double prof_wall_mean_ms;     /* the profiled invokes' own mean */
  double prof_plain_mean_ms;    /* the plain invokes alternating with them */
  double prof_pair_ratio;       /* median over the pairs of profiled / plain wall time */
  double prof_pair_ops_ratio;   /* median over the pairs of (the profiled invoke's operators' sum) / plain */
  char in_source[BENCH_MAX_INPUTS][96];
} bench_report_t;

static double mb(uint64_t b) { return (double)b / 1e6; }

/* How operator k runs: "" when it runs by itself, else why it has no time of its own. */
static const char *op_note(const ar_interp_t *in, int32_t k, char *buf, size_t n) {
  if (ar_interp_op_folded(in, k)) return "folded at place (constant)";
  if (ar_interp_op_fused(in, k) >= 0) {
    snprintf(buf, n, "fused into op %d", ar_interp_op_fused(in, k));
    return buf;
  }
  if (ar_interp_op_pad_folded(in, k) >= 0) {
    snprintf(buf, n, "PAD folded into op %d", ar_interp_op_pad_folded(in, k));
    return buf;
  }
  if (ar_interp_op_elided(in, k)) return "elided (weights read as stored)";
  if (ar_interp_op_at_use(in, k)) return "runs at use";
  const ar_node_t *nd = ar_interp_node(in, k);
  if (nd && nd->fused) {
    snprintf(buf, n, "includes op %d", nd->fused->index);
    return buf;
  }
  if (nd && nd->input_activated && nd->n_inputs > 0) {
    /* Activation folding: the producer of this RELU's input clamps as it stores. */
    for (int32_t p = k - 1; p >= 0; p--) {
      const ar_node_t *pn = ar_interp_node(in, p);
      if (pn->n_outputs > 0 && pn->outputs[0] == nd->inputs[0]) {
        snprintf(buf, n, "activation folded into op %d", p);
        return buf;
      }
    }
    return "activation folded into its producer";
  }
  return "";
}

static bool op_runs(const ar_interp_t *in, int32_t k) {
  return !ar_interp_op_folded(in, k) && !ar_interp_op_elided(in, k) && ar_interp_op_fused(in, k) < 0 &&
         ar_interp_op_pad_folded(in, k) < 0;
}

static void shape_text(const ar_tview_t *v, char *buf, size_t n) {
  size_t o = (size_t)snprintf(buf, n, "[");
  for (int32_t d = 0; v && d < v->rank && o < n; d++) o += (size_t)snprintf(buf + o, n - o, "%s%d", d ? "," : "", v->dims[d]);
  if (o < n) snprintf(buf + o, n - o, "]");
}

static json_t *shape_json(const ar_tview_t *v) {
  json_t *a = json_array();
  for (int32_t d = 0; v && d < v->rank; d++) json_array_append_new(a, json_integer(v->dims[d]));
  return a;
}

/* Operator k's mean time per profiled invoke, us. */
static double us_of(const bench_report_t *r, int32_t k) { return (double)r->op_ns[k] / 1e3 / r->prof_runs; }

static double op_sum_ms(const ar_interp_t *in, const bench_report_t *r) {
  double s = 0;
  for (int32_t k = 0; k < ar_interp_n_operators(in); k++) s += (double)r->op_ns[k] / 1e6 / r->prof_runs;
  return s;
}

static void print_text(const ar_interp_t *in, const bench_report_t *r) {
  const ar_interp_options_t *opt = ar_interp_options(in);
  printf("model %s: %d operators (%d at invoke), %d input(s), %d output(s), %d thread(s), strategy %s, "
         "lifetimes %s, weights %s%s%s\n",
         ar_cli_esc(r->model_path), ar_interp_n_operators(in), ar_interp_runtime_operators(in), ar_interp_n_inputs(in),
         ar_interp_n_outputs(in), r->threads, ar_strategy_name(opt->strategy), ar_lifetimes_name(opt->lifetimes),
         ar_weights_name(opt->weights), opt->inplace ? "" : ", no in-place", opt->fuse ? "" : ", no fusion");
  for (int32_t i = 0; i < ar_interp_n_inputs(in); i++) {
    const ar_tview_t *v = ar_interp_input((ar_interp_t *)in, i);
    char sh[128];
    shape_text(v, sh, sizeof sh);
    printf("input %d %s %s %s: %s\n", i, ar_cli_esc(ar_interp_input_name(in, i)), ar_dtype_name(v->dtype), sh,
           r->in_source[i]);
  }
  printf("init: %.3f ms (load %.3f ms, plan %.3f ms, place %.3f ms)\n", r->load_ms + r->plan_ms + r->place_ms,
         r->load_ms, r->plan_ms, r->place_ms);
  printf("first invoke: %.3f ms\n", r->first_ms);
  if (r->warmup > 0) printf("warm-up: %d run(s), mean %.3f ms\n", r->warmup, r->warm_mean_ms);
  else printf("warm-up: none\n");
  printf("invoke: %zu runs in %.2f s: mean %.3f ms, std %.3f ms, min %.3f ms, median %.3f ms, p90 %.3f ms, "
         "p99 %.3f ms, max %.3f ms\n",
         r->inv.n, r->timed_secs, r->inv.mean, r->inv.std, r->inv.min, r->inv.median, r->inv.p90, r->inv.p99,
         r->inv.max);
  printf("throughput: %.1f invokes/s; %llu multiply-adds per invoke, %.2f GFLOP/s at the mean\n",
         r->inv.mean > 0 ? 1e3 / r->inv.mean : 0.0, (unsigned long long)r->macs,
         r->inv.mean > 0 ? 2.0 * (double)r->macs / (r->inv.mean * 1e6) : 0.0);
  printf("memory: arena %llu bytes (%.2f MB), persistent %llu bytes (%.2f MB), weights in the file mapping %llu "
         "bytes (%.2f MB)\n",
         (unsigned long long)r->arena, mb(r->arena), (unsigned long long)r->persistent, mb(r->persistent),
         (unsigned long long)r->weights, mb(r->weights));
  printf("peak RSS: after init %llu bytes (%.2f MB), overall %llu bytes (%.2f MB); RSS now %llu bytes (%.2f MB)\n",
         (unsigned long long)r->rss_init, mb(r->rss_init), (unsigned long long)r->rss_peak, mb(r->rss_peak),
         (unsigned long long)r->rss_now, mb(r->rss_now));
  if (!r->profile) return;

  const int32_t n_ops = ar_interp_n_operators(in);
  const double sum = op_sum_ms(in, r);
  printf("\nprofile: %d profiled invoke(s), time per operator per invoke\n", r->prof_runs);
  printf("%6s  %-28s %-20s %10s %7s %9s  %s\n", "op", "type", "output shape", "us mean", "%", "GFLOP/s", "note");
  for (int32_t k = 0; k < n_ops; k++) {
    const ar_node_t *nd = ar_interp_node(in, k);
    char sh[128], note[64];
    shape_text(nd->n_outputs > 0 ? nd->outputs[0] : NULL, sh, sizeof sh);
    const char *why = op_note(in, k, note, sizeof note);
    printf("%6d  %-28s %-20s ", k, ar_op_name(nd->op), sh);
    if (!op_runs(in, k)) {
      printf("%10s %7s %9s  %s\n", "-", "-", "-", why);
      continue;
    }
    printf("%10.1f %6.2f%% ", us_of(r, k), sum > 0 ? 100.0 * us_of(r, k) / 1e3 / sum : 0.0);
    const double us = us_of(r, k);
    uint64_t macs = ar_interp_op_macs(in, k);
    if (macs > 0 && us > 0) printf("%9.2f", 2.0 * (double)macs / (us * 1e3));
    else printf("%9s", "-");
    printf("%s%s\n", *why ? "  " : "", why);
  }
  /* By type, largest share first. */
  double t_us[AR_OP_COUNT] = {0};
  int t_n[AR_OP_COUNT] = {0};
  for (int32_t k = 0; k < n_ops; k++) {
    const ar_node_t *nd = ar_interp_node(in, k);
    if (!op_runs(in, k) || nd->op < 0 || nd->op >= AR_OP_COUNT) continue;
    t_us[nd->op] += (double)r->op_ns[k] / 1e3 / r->prof_runs;
    t_n[nd->op]++;
  }
  printf("by type:\n");
  for (;;) {
    int best = -1;
    for (int t = 0; t < AR_OP_COUNT; t++)
      if (t_n[t] > 0 && (best < 0 || t_us[t] > t_us[best])) best = t;
    if (best < 0) break;
    printf("  %-28s %4d op(s) %10.1f us %6.2f%%\n", ar_op_name((ar_op_t)best), t_n[best], t_us[best],
           sum > 0 ? 100.0 * t_us[best] / 1e3 / sum : 0.0);
    t_n[best] = 0;
  }
  printf("operators' sum %.3f ms per invoke = %.1f %% of the same profiled invokes' mean %.3f ms\n", sum,
         r->prof_wall_mean_ms > 0 ? 100.0 * sum / r->prof_wall_mean_ms : 0.0, r->prof_wall_mean_ms);
  printf("against plain invokes (each profiled invoke paired with one, order alternating): operators' sum = %.1f %% "
         "of their mean %.3f ms; per pair, median of operators' sum / plain invoke %.1f %%, of profiled / plain "
         "invoke %.1f %% (timed runs' mean %.3f ms)\n",
         r->prof_plain_mean_ms > 0 ? 100.0 * sum / r->prof_plain_mean_ms : 0.0, r->prof_plain_mean_ms,
         100.0 * r->prof_pair_ops_ratio, 100.0 * r->prof_pair_ratio, r->inv.mean);
}

static json_t *stats_json(const ar_stats_t *s) {
  json_t *o = json_object();
  json_object_set_new(o, "runs", json_integer((json_int_t)s->n));
  json_object_set_new(o, "mean", json_real(s->mean * 1e3));
  json_object_set_new(o, "std", json_real(s->std * 1e3));
  json_object_set_new(o, "min", json_real(s->min * 1e3));
  json_object_set_new(o, "median", json_real(s->median * 1e3));
  json_object_set_new(o, "p90", json_real(s->p90 * 1e3));
  json_object_set_new(o, "p99", json_real(s->p99 * 1e3));
  json_object_set_new(o, "max", json_real(s->max * 1e3));
  return o;
}

/* Every figure, times in microseconds (keys end in _us), bytes as integers. */
static void print_json(const ar_interp_t *in, const bench_report_t *r) {
  const ar_interp_options_t *opt = ar_interp_options(in);
  json_t *o = json_object();
  json_object_set_new(o, "model", json_string(r->model_path));
  json_object_set_new(o, "operators", json_integer(ar_interp_n_operators(in)));
  json_object_set_new(o, "operators_at_invoke", json_integer(ar_interp_runtime_operators(in)));
  json_object_set_new(o, "threads", json_integer(r->threads));
  json_object_set_new(o, "strategy", json_string(ar_strategy_name(opt->strategy)));
  json_object_set_new(o, "lifetimes", json_string(ar_lifetimes_name(opt->lifetimes)));
  json_object_set_new(o, "weights", json_string(ar_weights_name(opt->weights)));
  json_object_set_new(o, "inplace", json_boolean(opt->inplace));
  json_object_set_new(o, "fuse", json_boolean(opt->fuse));
  json_object_set_new(o, "seed", json_integer((json_int_t)r->seed));
  json_t *ins = json_array();
  for (int32_t i = 0; i < ar_interp_n_inputs(in); i++) {
    const ar_tview_t *v = ar_interp_input((ar_interp_t *)in, i);
    json_t *e = json_object();
    json_object_set_new(e, "index", json_integer(i));
    json_object_set_new(e, "name", json_string(ar_interp_input_name(in, i)));
    json_object_set_new(e, "dtype", json_string(ar_dtype_name(v->dtype)));
    json_object_set_new(e, "shape", shape_json(v));
    json_object_set_new(e, "source", json_string(r->in_source[i]));
    json_array_append_new(ins, e);
  }
  json_object_set_new(o, "inputs", ins);
  json_t *init = json_object();
  json_object_set_new(init, "load_us", json_real(r->load_ms * 1e3));
  json_object_set_new(init, "plan_us", json_real(r->plan_ms * 1e3));
  json_object_set_new(init, "place_us", json_real(r->place_ms * 1e3));
  json_object_set_new(init, "total_us", json_real((r->load_ms + r->plan_ms + r->place_ms) * 1e3));
  json_object_set_new(o, "init", init);
  json_object_set_new(o, "first_invoke_us", json_real(r->first_ms * 1e3));
  json_t *warm = json_object();
  json_object_set_new(warm, "runs", json_integer(r->warmup));
  json_object_set_new(warm, "mean_us", r->warmup > 0 ? json_real(r->warm_mean_ms * 1e3) : json_null());
  json_object_set_new(o, "warmup", warm);
  json_t *inv = stats_json(&r->inv);
  json_object_set_new(inv, "seconds", json_real(r->timed_secs));
  json_object_set_new(o, "invoke_us", inv);
  json_object_set_new(o, "macs", json_integer((json_int_t)r->macs));
  json_object_set_new(o, "gflops", json_real(r->inv.mean > 0 ? 2.0 * (double)r->macs / (r->inv.mean * 1e6) : 0.0));
  json_t *mem = json_object();
  json_object_set_new(mem, "arena_bytes", json_integer((json_int_t)r->arena));
  json_object_set_new(mem, "persistent_bytes", json_integer((json_int_t)r->persistent));
  json_object_set_new(mem, "weights_bytes", json_integer((json_int_t)r->weights));
  json_object_set_new(mem, "peak_rss_init_bytes", json_integer((json_int_t)r->rss_init));
  json_object_set_new(mem, "peak_rss_bytes", json_integer((json_int_t)r->rss_peak));
  json_object_set_new(mem, "rss_bytes", json_integer((json_int_t)r->rss_now));
  json_object_set_new(o, "memory", mem);
  if (r->profile) {
    const double sum = op_sum_ms(in, r);
    json_t *p = json_object(), *ops = json_array();
    json_object_set_new(p, "runs", json_integer(r->prof_runs));
    for (int32_t k = 0; k < ar_interp_n_operators(in); k++) {
      const ar_node_t *nd = ar_interp_node(in, k);
      json_t *e = json_object();
      char note[64];
      json_object_set_new(e, "index", json_integer(k));
      json_object_set_new(e, "type", json_string(ar_op_name(nd->op)));
      json_object_set_new(e, "shape", shape_json(nd->n_outputs > 0 ? nd->outputs[0] : NULL));
      bool runs = op_runs(in, k);
      json_object_set_new(e, "runs", json_boolean(runs));
      const char *why = op_note(in, k, note, sizeof note);
      if (*why) json_object_set_new(e, "note", json_string(why));
      if (ar_interp_op_fused(in, k) >= 0) json_object_set_new(e, "fused_into", json_integer(ar_interp_op_fused(in, k)));
      if (ar_interp_op_pad_folded(in, k) >= 0)
        json_object_set_new(e, "pad_folded_into", json_integer(ar_interp_op_pad_folded(in, k)));
      if (runs) {
        double us = (double)r->op_ns[k] / 1e3 / r->prof_runs;
        uint64_t macs = ar_interp_op_macs(in, k);
        json_object_set_new(e, "us", json_real(us));
        json_object_set_new(e, "percent", json_real(sum > 0 ? 100.0 * us / 1e3 / sum : 0.0));
        json_object_set_new(e, "macs", json_integer((json_int_t)macs));
        json_object_set_new(e, "gflops", macs > 0 && us > 0 ? json_real(2.0 * (double)macs / (us * 1e3)) : json_null());
      }
      json_array_append_new(ops, e);
    }
    json_object_set_new(p, "operators", ops);
    json_object_set_new(p, "sum_us", json_real(sum * 1e3));
    json_object_set_new(p, "invoke_mean_us", json_real(r->prof_plain_mean_ms * 1e3));
    json_object_set_new(p, "sum_over_mean", json_real(r->prof_plain_mean_ms > 0 ? sum / r->prof_plain_mean_ms : 0.0));
    json_object_set_new(p, "profiled_invoke_mean_us", json_real(r->prof_wall_mean_ms * 1e3));
    json_object_set_new(p, "pair_sum_over_plain_median", json_real(r->prof_pair_ops_ratio));
    json_object_set_new(p, "pair_profiled_over_plain_median", json_real(r->prof_pair_ratio));
    json_object_set_new(o, "profile", p);
  }
  json_dumpf(o, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  printf("\n");
  json_decref(o);
}

/* ---- the command -------------------------------------------------------------------------- */

/* A failure after the options were read: the message on stderr, or the JSON error object. */
static int fail(bool json, int rc, const char *model, const char *msg) {
  char full[AR_MSG_BYTES + 1200];
  size_t pl = strlen(model);
  if (strncmp(msg, model, pl) == 0 && msg[pl] == ':') snprintf(full, sizeof full, "%s", msg);   /* named */
  else snprintf(full, sizeof full, "%s: %s", model, msg);
  if (json) return ar_cli_json_error(rc, full, NULL, 0);
  fprintf(stderr, "arenactl bench: %s (%s)\n", ar_cli_esc(full), ar_err_name(rc));
  return 1;
}

static void copy_inputs(ar_interp_t *in, void *const *data, int n) {
  for (int i = 0; i < n; i++) ar_copy_bytes(ar_interp_input(in, i)->data, data[i], ar_interp_input(in, i)->bytes);
}

int ar_cmd_bench(int argc, char **argv) {
  static const struct option longopts[] = {
    {"input", required_argument, NULL, 'i'},     {"runs", required_argument, NULL, 'n'},
    {"warmup", required_argument, NULL, 'w'},    {"min-secs", required_argument, NULL, 'm'},
    {"threads", required_argument, NULL, 't'},   {"seed", required_argument, NULL, 'r'},
    {"profile", no_argument, NULL, 'p'},         {"json", no_argument, NULL, 'j'},
    {"strategy", required_argument, NULL, 's'},  {"lifetimes", required_argument, NULL, 'l'},
    {"no-inplace", no_argument, NULL, 'P'},      {"weights", required_argument, NULL, 'W'},
    {"no-fuse", no_argument, NULL, 'F'},         {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  const char *inputs[BENCH_MAX_INPUTS];
  int n_inputs = 0, runs = 50, warmup = 1;
  double min_secs = 0;
  bool profile = false, json = false;
  const char *model_path = NULL;
  bench_report_t r;
  memset(&r, 0, sizeof r);
  r.seed = 1;
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  optind = 1;
  opterr = 0;   /* our own messages, naming the option */
  int c;
  while ((c = getopt_long(argc, argv, ":i:n:w:m:t:r:pjs:l:PW:Fh", longopts, NULL)) != -1) {
    long v;
    switch (c) {
      case 'i':
        if (n_inputs >= BENCH_MAX_INPUTS) {
          fprintf(stderr, "arenactl bench: at most %d inputs\n", BENCH_MAX_INPUTS);
          return 2;
        }
        inputs[n_inputs++] = optarg;
        break;
      case 'n':
        if ((v = parse_long(optarg, 1, BENCH_MAX_RUNS)) < 0) {
          fprintf(stderr, "arenactl bench: --runs '%s': must be a whole number from 1 to %d\n", optarg, BENCH_MAX_RUNS);
          return 2;
        }
        runs = (int)v;
        break;
      case 'w':
        if ((v = parse_long(optarg, 0, BENCH_MAX_RUNS)) < 0) {
          fprintf(stderr, "arenactl bench: --warmup '%s': must be a whole number from 0 to %d\n", optarg,
                  BENCH_MAX_RUNS);
          return 2;
        }
        warmup = (int)v;
        break;
      case 'm': {
        char *end = NULL;
        errno = 0;
        min_secs = strtod(optarg, &end);
        if (errno != 0 || end == optarg || *end != '\0' || !(min_secs >= 0 && min_secs <= 86400)) {
          fprintf(stderr, "arenactl bench: --min-secs '%s': must be a number of seconds from 0 to 86400\n", optarg);
          return 2;
        }
        break;
      }
      case 't':
        if ((v = parse_long(optarg, 1, AR_POOL_THREADS_MAX)) < 0) {
          fprintf(stderr, "arenactl bench: --threads '%s': must be a whole number from 1 to %d\n", optarg,
                  AR_POOL_THREADS_MAX);
          return 2;
        }
        opt.threads = (int32_t)v;
        break;
      case 'r': {
        char *end = NULL;
        errno = 0;
        unsigned long long s = strtoull(optarg, &end, 10);
        if (errno != 0 || end == optarg || *end != '\0' || optarg[0] == '-') {
          fprintf(stderr, "arenactl bench: --seed '%s': must be a whole number >= 0\n", optarg);
          return 2;
        }
        r.seed = (uint64_t)s;
        break;
      }
      case 'p': profile = true; break;
      case 'j': json = true; break;
      case 's':
        if (ar_strategy_parse(optarg, &opt.strategy) != 0) {
          fprintf(stderr, "arenactl bench: unknown strategy '%s'\n", optarg);
          return 2;
        }
        break;
      case 'l':
        if (ar_lifetimes_parse(optarg, &opt.lifetimes) != 0) {
          fprintf(stderr, "arenactl bench: unknown lifetime convention '%s'\n", optarg);
          return 2;
        }
        break;
      case 'P': opt.inplace = false; break;
      case 'W':
        if (ar_weights_parse(optarg, &opt.weights) != 0) {
          fprintf(stderr, "arenactl bench: unknown weights mode '%s' (stored or fp32)\n", optarg);
          return 2;
        }
        break;
      case 'F': opt.fuse = false; break;
      case 'h': bench_usage(stdout); return 0;
      case ':':
        fprintf(stderr, "arenactl bench: option '%s' needs a value\n", argv[optind - 1]);
        return 2;
      default:
        /* A short option inside a cluster (-px) is named by its letter, a long one by its word. */
        if (optopt) fprintf(stderr, "arenactl bench: unknown option '-%c'", optopt);
        else fprintf(stderr, "arenactl bench: unknown option '%s'", argv[optind - 1]);
        fprintf(stderr, " (arenactl bench --help lists the options)\n");
        return 2;
    }
  }
  for (int i = optind; i < argc; i++) {
    if (model_path) {
      fprintf(stderr, "arenactl bench: one MODEL only ('%s' is extra; inputs are given with --input)\n", argv[i]);
      return 2;
    }
    model_path = argv[i];
  }
  if (!model_path) {
    fprintf(stderr, "arenactl bench: no MODEL given (arenactl bench MODEL [OPTIONS]; --help lists them)\n");
    return 2;
  }
  r.model_path = model_path;
  r.warmup = warmup;
  r.profile = profile;

  char msg[AR_MSG_BYTES] = "";
  ar_model_t *model = NULL;
  ar_interp_t *in = NULL;
  void *data[BENCH_MAX_INPUTS] = {0};
  uint64_t in_bytes[BENCH_MAX_INPUTS] = {0};
  double *times = NULL, *pair_ops = NULL;
  uint64_t *op_ns = NULL;
  int status = 1, rc;

  double t0 = ar_now_ms();
  rc = ar_model_load_describe(model_path, &model, msg, sizeof msg);
  double t1 = ar_now_ms();
  if (rc != 0) {
    status = fail(json, rc, model_path, msg);
    goto out;
  }
  rc = ar_interp_new(model, &opt, &in, msg, sizeof msg);
  double t2 = ar_now_ms();
  if (rc != 0) {
    status = fail(json, rc, model_path, msg);
    goto out;
  }
  const int n_in = ar_interp_n_inputs(in);
  if (n_in > BENCH_MAX_INPUTS) {
    status = fail(json, AR_EUNSUPPORTED, model_path, "more inputs than arenactl bench takes (16)");
    goto out;
  }
  if (n_inputs > 0 && n_inputs != n_in) {
    snprintf(msg, sizeof msg, "the model has %d input(s), %d --input given", n_in, n_inputs);
    status = fail(json, AR_EINVAL, model_path, msg);
    if (status == 1) status = 2;
    goto out;
  }
  /* Inputs whose values set shapes come from their files before the (re-)plan. */
  double t_prep = 0;
  for (int i = 0; i < n_in; i++) {
    if (!ar_interp_input_sets_shape(in, i)) continue;
    if (n_inputs == 0) {
      snprintf(msg, sizeof msg, "input %d (%s) sets shapes by its value: give every input with --input", i,
               ar_interp_input_name(in, i));
      status = fail(json, AR_EINVAL, model_path, msg);
      goto out;
    }
    rc = ar_cli_read_input(inputs[i], ar_interp_input_name(in, i), ar_interp_input(in, i)->bytes, &data[i],
                           &in_bytes[i], msg, sizeof msg);
    if (rc == 0) rc = ar_interp_set_shape_input(in, i, data[i], in_bytes[i], msg, sizeof msg);
    if (rc != 0) {
      status = fail(json, rc, inputs[i], msg);
      goto out;
    }
  }
  if (ar_interp_needs_prepare(in)) {
    double p0 = ar_now_ms();
    rc = ar_interp_prepare(in, msg, sizeof msg);
    t_prep = ar_now_ms() - p0;
    if (rc != 0) {
      status = fail(json, rc, model_path, msg);
      goto out;
    }
  }
  uint64_t rng = r.seed;   /* the inputs in order draw from one stream */
  for (int i = 0; i < n_in; i++) {
    const ar_tview_t *v = ar_interp_input(in, i);
    if (n_inputs > 0) {
      snprintf(r.in_source[i], sizeof r.in_source[i], "file %s", inputs[i]);
      if (data[i]) continue;
      uint64_t bytes = 0;
      rc = ar_cli_read_input(inputs[i], ar_interp_input_name(in, i), v->bytes, &data[i], &bytes, msg, sizeof msg);
      if (rc == 0 && bytes != v->bytes) {
        snprintf(msg, sizeof msg, "%s holds %llu bytes; input '%s' needs %llu bytes", inputs[i],
                 (unsigned long long)bytes, ar_interp_input_name(in, i), (unsigned long long)v->bytes);
        rc = AR_ESHAPE;
      }
      if (rc != 0) {
        if (json) {
          status = ar_cli_json_error(rc, msg, NULL, 0);
        } else {
          fprintf(stderr, "arenactl bench: %s (%s)\n", ar_cli_esc(msg), ar_err_name(rc));
        }
        goto out;
      }
      continue;
    }
    data[i] = malloc(v->bytes ? (size_t)v->bytes : 1);
    if (!data[i]) {
      status = fail(json, AR_ENOMEM, model_path, "out of memory for the inputs");
      goto out;
    }
    char range[64];
    if (fill_random(v, data[i], &rng, range, sizeof range) != 0) {
      snprintf(msg, sizeof msg, "input %d (%s) has dtype %s, which has no random form: give every input with --input",
               i, ar_interp_input_name(in, i), ar_dtype_name(v->dtype));
      status = fail(json, AR_EUNSUPPORTED, model_path, msg);
      goto out;
    }
    snprintf(r.in_source[i], sizeof r.in_source[i], "random %s", range);
  }
  double t3 = ar_now_ms();
  rc = ar_interp_place_owned(in, msg, sizeof msg);
  double t4 = ar_now_ms();
  if (rc != 0) {
    status = fail(json, rc, model_path, msg);
    goto out;
  }
  r.load_ms = t1 - t0;
  r.plan_ms = (t2 - t1) + t_prep;
  r.place_ms = t4 - t3;
  r.rss_init = proc_status_bytes("VmHWM");
  r.threads = opt.threads;

  /* The profile buffer and room for the timed runs, before any invoke. */
  size_t cap = (size_t)runs;
  times = malloc(cap * sizeof(*times));
  op_ns = profile ? calloc((size_t)ar_interp_n_operators(in) + 1, sizeof(*op_ns)) : NULL;
  if (!times || (profile && !op_ns)) {
    status = fail(json, AR_ENOMEM, model_path, "out of memory");
    goto out;
  }

  copy_inputs(in, data, n_in);
  double f0 = ar_now_ms();
  rc = ar_interp_invoke(in);
  r.first_ms = ar_now_ms() - f0;
  if (rc != 0) {
    status = fail(json, rc, model_path, "invoke failed");
    goto out;
  }
  double wsum = 0;
  for (int w = 0; w < warmup; w++) {
    copy_inputs(in, data, n_in);
    double a = ar_now_ms();
    ar_interp_invoke(in);
    wsum += ar_now_ms() - a;
  }
  r.warm_mean_ms = warmup > 0 ? wsum / warmup : 0;

  size_t n = 0;
  const double start = ar_now_ms();
  while (n < (size_t)runs || (ar_now_ms() - start < min_secs * 1e3 && n < BENCH_MAX_RUNS)) {
    if (n == cap) {   /* --min-secs: more room, between invokes */
      double *more = realloc(times, 2 * cap * sizeof(*times));
      if (!more) break;
      times = more;
      cap *= 2;
    }
    copy_inputs(in, data, n_in);
    double a = ar_now_ms();
    ar_interp_invoke(in);
    times[n++] = ar_now_ms() - a;
  }
  r.timed_secs = (ar_now_ms() - start) / 1e3;
  ar_stats_summarize(times, n, &r.inv);

  if (profile) {
    /* Plain and profiled invokes alternate, so that both see the same machine state: the sum of
     * the operators' times is compared with plain invokes of the same moments (a loaded machine's
     * drift between the timed runs and this phase would otherwise show as a gap). */
    r.prof_runs = (int)n;
    double psum = 0, plain = 0;
    const int32_t n_ops = ar_interp_n_operators(in);
    pair_ops = malloc(n * sizeof(*pair_ops));
    if (!pair_ops) {
      status = fail(json, AR_ENOMEM, model_path, "out of memory");
      goto out;
    }
    uint64_t ops_before = 0;
    for (size_t i = 0; i < n; i++) {   /* times[] is free again: each pair's profiled / plain */
      double pl = 0, pr = 0;
      for (int half = 0; half < 2; half++) {   /* which goes first alternates pair by pair */
        const bool prof = (half == 0) == (i % 2 == 1);
        copy_inputs(in, data, n_in);
        double a = ar_now_ms();
        if (prof) ar_interp_invoke_profiled(in, op_ns);
        else ar_interp_invoke(in);
        *(prof ? &pr : &pl) = ar_now_ms() - a;
      }
      uint64_t ops_after = 0;
      for (int32_t k = 0; k < n_ops; k++) ops_after += op_ns[k];
      plain += pl;
      psum += pr;
      times[i] = pl > 0 ? pr / pl : 1;
      pair_ops[i] = pl > 0 ? (double)(ops_after - ops_before) / 1e6 / pl : 1;   /* this invoke's operators */
      ops_before = ops_after;
    }
    r.prof_wall_mean_ms = psum / (double)n;
    r.prof_plain_mean_ms = plain / (double)n;
    r.prof_pair_ratio = ar_stats_median(times, (int)n);
    r.prof_pair_ops_ratio = ar_stats_median(pair_ops, (int)n);
    r.op_ns = op_ns;
  }

  ar_weight_figures_t wf;
  ar_interp_weight_figures(in, &wf);
  r.macs = ar_interp_macs(in);
  r.arena = ar_interp_arena_bytes(in);
  r.persistent = ar_interp_persistent_bytes(in);
  r.weights = wf.weights_bytes;
  r.rss_peak = proc_status_bytes("VmHWM");
  r.rss_now = proc_status_bytes("VmRSS");
  if (json) print_json(in, &r);
  else print_text(in, &r);
  status = 0;

out:
  free(times);
  free(pair_ops);
  free(op_ns);
  for (int i = 0; i < BENCH_MAX_INPUTS; i++) free(data[i]);
  ar_interp_free(in);
  ar_model_free(model);
  return status;
}
