/* check_quant_models.c - the 12 quantized models of ../shared/models_q against the native TFLite
 * builtin-kernel goldens of ../shared/golden_q (issue 9), offline and through a real daemon.
 *
 *   - offline (ar_interp, default plan): every case of <model>/meta.json, every output's dtype and
 *     shape as meta.json says; integer outputs (uint8, int8, int32, int64) byte-equal to the golden;
 *     float32 outputs within |got - want| <= 1e-5 max|want| + 1e-6 per output; the SSD's detection
 *     count and classes identical; a second invoke gives the same bytes;
 *   - threads = 2 and 3 (the interpreter's own pool): the golden, and every output byte-equal to
 *     threads = 1 (float outputs included);
 *   - every planner strategy x in-place on/off x both lifetime conventions (one case; the large
 *     models YOLOv8n and DeepLab take the strategies with the arenad convention only): the same
 *     golden bytes;
 *   - a share group with a float model (face_detection_short_range from models/): both placed in
 *     one activation region, interleaved, both on their goldens;
 *   - through arenad: all listed models loaded into one share group with a float model, each case
 *     invoked with its raw bytes and dtype, replies equal to the goldens (same rules).
 *
 * The models must be held to their goldens one by one as their kernels land: `required` below lists
 * those that are (the suite prints "N of 12 models"). A model not yet listed is still run and its
 * result printed (the first operator that cannot run, or the outputs that differ) without failing the
 * suite; one that passes is reported as ready to be listed. AR_QUANT_ALL=1 requires all 12.
 *
 * Data: $AR_MODELS_Q_DIR (default <srcdir>/../shared/models_q) and $AR_GOLDEN_Q_DIR (default
 * <srcdir>/../shared/golden_q). They come from public repositories and are never committed: when the
 * folder is absent (a fresh clone without ../shared) every test prints a skip line and passes.
 */
#include "config.h"

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clients/ar_client.h"
#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "loader/ar_model.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_model.h"
#include "tests/ar_test_util.h"

/* The 12 models (golden_q/INDEX.json). `required`: held to the goldens (fails the suite); `large`:
 * the plan-independence loop takes the 4 strategies x in-place on/off with the arenad convention. */
typedef struct qmodel {
  const char *stem;
  int required;
  int large;
} qmodel_t;

static const qmodel_t qmodels[] = {
  {"tflm_hello_world_int8", 1, 0},
  {"tflm_micro_speech_quantized", 1, 0},
  {"tflm_person_detect", 1, 0},
  {"coral_mobilenet_v1_0.25_128_quant", 1, 0},
  {"coral_mobilenet_v1_1.0_224_quant_embedding_extractor", 1, 0},
  {"coral_mobilenet_v1_1.0_224_quant_head_layers", 1, 0},
  {"coral_mobilenet_v2_1.0_224_quant", 1, 0},
  {"coral_tf2_mobilenet_v2_1.0_224_ptq", 1, 0},
  {"ssd_mobilenet_v1_coco_quant_postprocess", 1, 0},
  {"coral_movenet_single_pose_lightning_ptq", 1, 0},
  {"yolov8n_coco_416_full_integer_quant", 1, 1},
  {"coral_deeplabv3_mnv2_dm05_pascal_quant", 1, 1},
};
#define N_QMODELS ((int)(sizeof qmodels / sizeof qmodels[0]))

/* The float model of the share groups (models/, golden in tests/golden). */
static const char *const float_stem = "face_detection_short_range";

static const char *q_models_dir(void) { return ar_test_models_q_dir(); }
static const char *q_golden_dir(void) { return ar_test_golden_q_dir(); }

static int is_required(const qmodel_t *q) {
  const char *all = getenv("AR_QUANT_ALL");
  return q->required || (all && strcmp(all, "1") == 0);
}

/* True (after printing why) when the quantized data is absent: a clean skip. */
static int data_absent(void) {
  if (ar_test_have_qmodels()) return 0;
  printf("SKIP quantized models: %s or %s/INDEX.json is absent (../shared is not beside this "
         "checkout; the models come from public repositories and are not committed)\n",
         q_models_dir(), q_golden_dir());
  return 1;
}

/* ---- meta.json -------------------------------------------------------------------------------- */

#define MAX_IO 8
#define MAX_CASES 4

typedef struct qio {
  ar_dtype_t dtype;
  int32_t rank;
  int32_t dims[AR_MAX_RANK];
} qio_t;

typedef struct qmeta {
  int n_inputs, n_outputs, n_cases;
  qio_t in[MAX_IO], out[MAX_IO];
  char cases[MAX_CASES][32];
} qmeta_t;

static ar_dtype_t dtype_of(const char *s) {
  if (strcmp(s, "uint8") == 0) return AR_DTYPE_UINT8;
  if (strcmp(s, "int8") == 0) return AR_DTYPE_INT8;
  if (strcmp(s, "int32") == 0) return AR_DTYPE_INT32;
  if (strcmp(s, "int64") == 0) return AR_DTYPE_INT64;
  if (strcmp(s, "float32") == 0) return AR_DTYPE_FLOAT32;
  if (strcmp(s, "bool") == 0) return AR_DTYPE_BOOL;
  return (ar_dtype_t)-1;
}

static void meta_io(json_t *arr, qio_t *io, int *n, const char *what, const char *stem) {
  size_t i;
  json_t *e;
  *n = 0;
  json_array_foreach(arr, i, e) {
    ck_assert_msg(i < MAX_IO, "%s: too many %s", stem, what);
    const char *dt = json_string_value(json_object_get(e, "dtype"));
    ck_assert_msg(dt != NULL, "%s: %s %zu has no dtype", stem, what, i);
    io[i].dtype = dtype_of(dt);
    ck_assert_msg((int)io[i].dtype >= 0, "%s: %s %zu dtype %s", stem, what, i, dt);
    json_t *sh = json_object_get(e, "shape");
    io[i].rank = (int32_t)json_array_size(sh);
    ck_assert_int_le(io[i].rank, AR_MAX_RANK);
    for (int32_t d = 0; d < io[i].rank; d++) io[i].dims[d] = (int32_t)json_integer_value(json_array_get(sh, d));
    (*n)++;
  }
}

static void meta_load(const char *stem, qmeta_t *m) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s/meta.json", q_golden_dir(), stem);
  json_error_t err;
  json_t *j = json_load_file(path, 0, &err);
  ck_assert_msg(j != NULL, "%s: %s", path, err.text);
  memset(m, 0, sizeof *m);
  meta_io(json_object_get(j, "inputs"), m->in, &m->n_inputs, "input", stem);
  meta_io(json_object_get(j, "outputs"), m->out, &m->n_outputs, "output", stem);
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(j, "cases"), i, c) {
    ck_assert_int_lt(i, MAX_CASES);
    snprintf(m->cases[i], sizeof m->cases[i], "%s", json_string_value(json_object_get(c, "dir")));
    m->n_cases++;
  }
  ck_assert_int_gt(m->n_cases, 0);
  json_decref(j);
}

/* ---- golden files of one case ----------------------------------------------------------------- */

typedef struct qcase {
  int n_in, n_out;
  void *in[MAX_IO], *out[MAX_IO];
  size_t in_bytes[MAX_IO], out_bytes[MAX_IO];
} qcase_t;

static void case_load(const char *stem, const char *cs, const qmeta_t *m, qcase_t *c) {
  char path[1024];
  memset(c, 0, sizeof *c);
  for (int i = 0; i < m->n_inputs; i++) {
    snprintf(path, sizeof path, "%s/%s/%s/input_%d.bin", q_golden_dir(), stem, cs, i);
    c->in[i] = ar_test_read_file(path, &c->in_bytes[i]);
    ck_assert_msg(c->in[i] != NULL, "cannot read %s", path);
    c->n_in++;
  }
  for (int j = 0; j < m->n_outputs; j++) {
    snprintf(path, sizeof path, "%s/%s/%s/output_%d.bin", q_golden_dir(), stem, cs, j);
    c->out[j] = ar_test_read_file(path, &c->out_bytes[j]);
    ck_assert_msg(c->out[j] != NULL, "cannot read %s", path);
    c->n_out++;
  }
}

static void case_free(qcase_t *c) {
  for (int i = 0; i < c->n_in; i++) free(c->in[i]);
  for (int j = 0; j < c->n_out; j++) free(c->out[j]);
  memset(c, 0, sizeof *c);
}

/* Append to a bounded message (keeps the first failure's text when several occur). */
static void why_add(char *why, size_t n, const char *fmt, ...) {
  size_t used = strlen(why);
  if (used + 2 >= n) return;
  if (used) {
    why[used++] = ';';
    why[used++] = ' ';
    why[used] = 0;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why + used, n - used, fmt, ap);
  va_end(ap);
}

/* Compare one output (dtype, shape, bytes) with the golden; 0 when it matches, else 1 with the
 * reason appended to `why`. `detect`: the SSD (TFLite_Detection_PostProcess outputs: 1 = classes,
 * 3 = count, compared exactly). Prints one line per output when `verbose`. */
static int compare_output(const char *stem, const char *cs, int j, ar_dtype_t dtype, int32_t rank,
                          const int32_t *dims, const void *got, uint64_t got_bytes, const qio_t *want_io,
                          const void *want, size_t want_bytes, int detect, int verbose, char *why,
                          size_t why_n) {
  if (dtype != want_io->dtype) {
    why_add(why, why_n, "%s/%s output %d: dtype %s, golden %s", stem, cs, j, ar_dtype_name(dtype),
            ar_dtype_name(want_io->dtype));
    return 1;
  }
  int shape_ok = rank == want_io->rank;
  for (int32_t d = 0; shape_ok && d < rank; d++) shape_ok = dims[d] == want_io->dims[d];
  if (!shape_ok || got_bytes != want_bytes) {
    why_add(why, why_n, "%s/%s output %d: rank %d, %llu bytes; golden rank %d, %zu bytes", stem, cs, j,
            rank, (unsigned long long)got_bytes, want_io->rank, want_bytes);
    return 1;
  }
  if (dtype != AR_DTYPE_FLOAT32) {
    size_t es = ar_dtype_size(dtype), n = want_bytes / es, bad = 0, first = 0;
    long long worst = 0;
    for (size_t i = 0; i < n; i++) {
      long long a = 0, b = 0;
      const uint8_t *pa = (const uint8_t *)got + i * es, *pb = (const uint8_t *)want + i * es;
      switch (dtype) {
      case AR_DTYPE_UINT8: a = *pa; b = *pb; break;
      case AR_DTYPE_INT8: a = (int8_t)*pa; b = (int8_t)*pb; break;
      case AR_DTYPE_INT32: { int32_t x, y; memcpy(&x, pa, 4); memcpy(&y, pb, 4); a = x; b = y; } break;
      case AR_DTYPE_INT64: { int64_t x, y; memcpy(&x, pa, 8); memcpy(&y, pb, 8); a = x; b = y; } break;
      default: a = memcmp(pa, pb, es); b = 0; break;
      }
      if (a != b) {
        if (bad == 0) first = i;
        bad++;
        long long d = a > b ? a - b : b - a;
        if (d > worst) worst = d;
      }
    }
    if (verbose)
      printf("golden_q %-52s %-6s output %d %-5s %8zu values  %s", stem, cs, j, ar_dtype_name(dtype), n,
             bad ? "DIFFER" : "byte-equal\n");
    if (verbose && bad) printf(": %zu differ (first at %zu), worst %lld LSB\n", bad, first, worst);
    if (bad) {
      why_add(why, why_n, "%s/%s output %d (%s): %zu of %zu values differ, first at %zu, worst %lld LSB",
              stem, cs, j, ar_dtype_name(dtype), bad, n, first, worst);
      return 1;
    }
    return 0;
  }
  const float *g = got, *w = want;
  size_t n = want_bytes / 4, bad = 0;
  double wmax = 0, worst = 0;
  for (size_t i = 0; i < n; i++)
    if (fabs((double)w[i]) > wmax) wmax = fabs((double)w[i]);
  double tol = 1e-5 * wmax + 1e-6;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)g[i] - (double)w[i]);
    if (!(d <= tol)) bad++;
    if (d > worst || isnan(d)) worst = isnan(d) ? INFINITY : d;
  }
  /* The detection post-process: classes and count are exact (they are small integers in float). */
  size_t exact_bad = 0;
  if (detect && (j == 1 || j == 3))
    for (size_t i = 0; i < n; i++) exact_bad += g[i] != w[i];
  if (verbose)
    printf("golden_q %-52s %-6s output %d FLOAT32 %6zu values  worst |err| %.3g (tol %.3g)%s  %s\n", stem,
           cs, j, n, worst, tol, detect && (j == 1 || j == 3) ? (j == 1 ? " classes exact" : " count exact") : "",
           bad || exact_bad ? "FAIL" : "ok");
  if (bad || exact_bad) {
    why_add(why, why_n, "%s/%s output %d (float32): %zu of %zu out of tolerance %.3g (worst %.3g)%s", stem,
            cs, j, bad, n, tol, worst, exact_bad ? ", detection classes/count differ" : "");
    return 1;
  }
  return 0;
}

/* ---- offline ---------------------------------------------------------------------------------- */

static int is_detector(const char *stem) { return strncmp(stem, "ssd_", 4) == 0; }

/* A placed interpreter for the model, or NULL with the reason in `why` (load or prepare error:
 * the list of operators that cannot run). */
static ar_interp_t *q_interp(const ar_model_t *m, const ar_interp_options_t *opt, const char *stem, char *why,
                             size_t why_n) {
  char msg[AR_MSG_BYTES] = "";
  ar_interp_t *in = NULL;
  int rc = ar_interp_new(m, opt, &in, msg, sizeof msg);
  if (rc != 0) {
    why_add(why, why_n, "%s: interp_new (%s, inplace %d, %s): %s: %s", stem, ar_strategy_name(opt->strategy),
            opt->inplace, ar_lifetimes_name(opt->lifetimes), ar_err_name(rc), msg);
    return NULL;
  }
  rc = ar_interp_place_owned(in, msg, sizeof msg);
  if (rc != 0) {
    why_add(why, why_n, "%s: place: %s: %s", stem, ar_err_name(rc), msg);
    ar_interp_free(in);
    return NULL;
  }
  return in;
}

/* Write a case's inputs, invoke, compare every output. Returns the number of failing outputs (or 1
 * for an input/invoke problem). */
static int q_run_case(ar_interp_t *in, const char *stem, const char *cs, const qmeta_t *meta, const qcase_t *c,
                      int verbose, char *why, size_t why_n) {
  if (ar_interp_n_inputs(in) != meta->n_inputs || ar_interp_n_outputs(in) != meta->n_outputs) {
    why_add(why, why_n, "%s: %d inputs / %d outputs, meta.json %d / %d", stem, ar_interp_n_inputs(in),
            ar_interp_n_outputs(in), meta->n_inputs, meta->n_outputs);
    return 1;
  }
  for (int i = 0; i < c->n_in; i++) {
    ar_tview_t *v = ar_interp_input(in, i);
    if (v->dtype != meta->in[i].dtype || v->bytes != c->in_bytes[i]) {
      why_add(why, why_n, "%s: input %d is %s, %llu bytes; golden %s, %zu bytes", stem, i, ar_dtype_name(v->dtype),
              (unsigned long long)v->bytes, ar_dtype_name(meta->in[i].dtype), c->in_bytes[i]);
      return 1;
    }
    memcpy(v->data, c->in[i], c->in_bytes[i]);
  }
  int rc = ar_interp_invoke(in);
  if (rc != 0) {
    why_add(why, why_n, "%s/%s: invoke: %s", stem, cs, ar_err_name(rc));
    return 1;
  }
  int bad = 0;
  for (int j = 0; j < c->n_out; j++) {
    const ar_tview_t *v = ar_interp_output(in, j);
    bad += compare_output(stem, cs, j, v->dtype, v->rank, v->dims, v->data, v->bytes, &meta->out[j], c->out[j],
                          c->out_bytes[j], is_detector(stem), verbose, why, why_n);
  }
  return bad;
}

static ar_model_t *q_load(const char *stem, char *why, size_t why_n) {
  char path[1024], msg[AR_MSG_BYTES] = "";
  snprintf(path, sizeof path, "%s/%s.tflite", q_models_dir(), stem);
  ar_model_t *m = NULL;
  int rc = ar_model_load(path, &m, msg, sizeof msg);
  if (rc != 0) {
    why_add(why, why_n, "%s: load: %s: %s", stem, ar_err_name(rc), msg);
    return NULL;
  }
  return m;
}

/* The verdict of one model's test: fail when required, else print and pass. */
static void verdict(const qmodel_t *q, const char *what, int ok, const char *why) {
  if (ok) {
    printf("PASS %s %s%s\n", what, q->stem, is_required(q) ? "" : " (not yet listed as required: list it)");
    return;
  }
  if (is_required(q)) ck_abort_msg("%s %s: %s", what, q->stem, why);
  printf("NOT YET %s %s: %s\n", what, q->stem, why);
}

/* Every case, default plan, invoked twice (the second must give the same bytes). */
START_TEST(test_offline_goldens) {
  const qmodel_t *q = &qmodels[_i];
  if (data_absent()) return;
  char why[2048] = "";
  qmeta_t meta;
  meta_load(q->stem, &meta);
  int ok = 0;
  ar_model_t *m = q_load(q->stem, why, sizeof why);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ar_interp_t *in = m ? q_interp(m, &opt, q->stem, why, sizeof why) : NULL;
  if (in) {
    ok = 1;
    for (int k = 0; k < meta.n_cases; k++) {
      qcase_t c;
      case_load(q->stem, meta.cases[k], &meta, &c);
      if (q_run_case(in, q->stem, meta.cases[k], &meta, &c, 1, why, sizeof why)) ok = 0;
      else if (q_run_case(in, q->stem, meta.cases[k], &meta, &c, 0, why, sizeof why)) {
        why_add(why, sizeof why, "second invoke differs");
        ok = 0;
      }
      case_free(&c);
    }
    printf("model %-52s operators %d  arena %llu B  persistent %llu B  MACs %llu\n", q->stem,
           ar_interp_n_operators(in), (unsigned long long)ar_interp_arena_bytes(in),
           (unsigned long long)ar_interp_persistent_bytes(in), (unsigned long long)ar_interp_macs(in));
    ar_interp_free(in);
  }
  if (m) ar_model_free(m);
  verdict(q, "offline", ok, why);
}
END_TEST

/* Intra-operator threads (kernels/ar_parallel.h): every case with threads = 2 and 3 (a pool of the
 * interpreter's own) gives the golden and exactly the bytes of every output at threads = 1, float
 * outputs included. */
START_TEST(test_threads_same_bytes) {
  const qmodel_t *q = &qmodels[_i];
  if (data_absent()) return;
  char why[2048] = "";
  qmeta_t meta;
  meta_load(q->stem, &meta);
  ar_model_t *m = q_load(q->stem, why, sizeof why);
  int ok = m != NULL;
  ar_interp_t *in[3] = {NULL, NULL, NULL};
  for (int t = 0; ok && t < 3; t++) {
    ar_interp_options_t opt;
    ar_interp_options_default(&opt);
    opt.threads = t + 1;
    in[t] = q_interp(m, &opt, q->stem, why, sizeof why);
    if (!in[t]) ok = 0;
  }
  for (int k = 0; ok && k < meta.n_cases; k++) {
    qcase_t c;
    case_load(q->stem, meta.cases[k], &meta, &c);
    for (int t = 0; ok && t < 3; t++)
      if (q_run_case(in[t], q->stem, meta.cases[k], &meta, &c, 0, why, sizeof why)) {
        why_add(why, sizeof why, "with threads = %d", t + 1);
        ok = 0;
      }
    for (int t = 1; ok && t < 3; t++)
      for (int j = 0; j < c.n_out; j++) {
        const ar_tview_t *a = ar_interp_output(in[0], j), *b = ar_interp_output(in[t], j);
        if (a->bytes != b->bytes || memcmp(a->data, b->data, a->bytes) != 0) {
          why_add(why, sizeof why, "%s/%s: output %d with threads = %d differs from threads = 1", q->stem,
                  meta.cases[k], j, t + 1);
          ok = 0;
        }
      }
    case_free(&c);
  }
  for (int t = 0; t < 3; t++) ar_interp_free(in[t]);
  if (m) ar_model_free(m);
  if (ok) printf("threads %s: %d cases, threads 1 = 2 = 3, golden bytes\n", q->stem, meta.n_cases);
  verdict(q, "threads", ok, why);
}
END_TEST

/* One case (the last in meta.json: `random`) under every strategy x in-place x lifetime convention,
 * each plan checked against the golden itself. */
START_TEST(test_plan_independence) {
  const qmodel_t *q = &qmodels[_i];
  if (data_absent()) return;
  char why[2048] = "";
  qmeta_t meta;
  meta_load(q->stem, &meta);
  const char *cs = meta.cases[meta.n_cases - 1];
  ar_model_t *m = q_load(q->stem, why, sizeof why);
  int ok = m != NULL, plans = 0;
  qcase_t c;
  case_load(q->stem, cs, &meta, &c);
  static const ar_strategy_t strategies[] = {AR_STRATEGY_LINEAR, AR_STRATEGY_FIRST_FIT,
                                             AR_STRATEGY_GREEDY_BY_SIZE, AR_STRATEGY_BEST};
  static const ar_lifetimes_t conventions[] = {AR_LIFETIMES_ARENAD, AR_LIFETIMES_TFLITE};
  for (size_t s = 0; ok && s < 4; s++)
    for (int ip = 0; ok && ip < 2; ip++)
      for (size_t l = 0; ok && l < (q->large ? 1u : 2u); l++) {
        ar_interp_options_t opt;
        ar_interp_options_default(&opt);
        opt.strategy = strategies[s];
        opt.inplace = ip == 0;
        opt.lifetimes = conventions[l];
        ar_interp_t *in = q_interp(m, &opt, q->stem, why, sizeof why);
        if (!in) {
          ok = 0;
          break;
        }
        if (q_run_case(in, q->stem, cs, &meta, &c, 0, why, sizeof why)) {
          why_add(why, sizeof why, "with strategy %s, in-place %d, lifetimes %s", ar_strategy_name(opt.strategy),
                  opt.inplace, ar_lifetimes_name(opt.lifetimes));
          ok = 0;
        } else {
          printf("plan %-52s %-15s inplace %d %-6s arena %10llu B  golden bytes\n", q->stem,
                 ar_strategy_name(opt.strategy), opt.inplace, ar_lifetimes_name(opt.lifetimes),
                 (unsigned long long)ar_interp_arena_bytes(in));
          plans++;
        }
        ar_interp_free(in);
      }
  case_free(&c);
  if (m) ar_model_free(m);
  if (ok) printf("plans %s: %d plans on the %s golden\n", q->stem, plans, cs);
  verdict(q, "plans", ok, why);
}
END_TEST

/* The quantized model and a float model placed in ONE activation region (each with its own
 * persistent region), run alternately: both stay on their goldens. */
START_TEST(test_share_with_float_model) {
  const qmodel_t *q = &qmodels[_i];
  if (data_absent()) return;
  char why[2048] = "", msg[AR_MSG_BYTES] = "", path[1024];
  qmeta_t meta;
  meta_load(q->stem, &meta);
  ar_model_t *m = q_load(q->stem, why, sizeof why);
  ar_model_t *mf = NULL;
  ck_assert_int_eq(ar_model_load(ar_test_model_path(path, sizeof path, float_stem), &mf, msg, sizeof msg), 0);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ar_interp_t *a = NULL, *b = NULL;
  int ok = 0;
  if (m) {
    int rc = ar_interp_new(m, &opt, &a, msg, sizeof msg);
    if (rc) why_add(why, sizeof why, "%s: interp_new: %s: %s", q->stem, ar_err_name(rc), msg);
  }
  if (a) {
    ck_assert_int_eq(ar_interp_new(mf, &opt, &b, msg, sizeof msg), 0);
    uint64_t act_bytes = ar_interp_arena_bytes(a) > ar_interp_arena_bytes(b) ? ar_interp_arena_bytes(a)
                                                                              : ar_interp_arena_bytes(b);
    void *act = aligned_alloc(AR_ARENA_ALIGNMENT, act_bytes);
    void *pa = aligned_alloc(AR_ARENA_ALIGNMENT, ar_interp_persistent_bytes(a) + AR_ARENA_ALIGNMENT);
    void *pb = aligned_alloc(AR_ARENA_ALIGNMENT, ar_interp_persistent_bytes(b) + AR_ARENA_ALIGNMENT);
    ck_assert(act && pa && pb);
    ck_assert_int_eq(ar_interp_place(a, act, act_bytes, pa, ar_interp_persistent_bytes(a), msg, sizeof msg), 0);
    ck_assert_int_eq(ar_interp_place(b, act, act_bytes, pb, ar_interp_persistent_bytes(b), msg, sizeof msg), 0);
    /* The float model's golden input/output (tests/golden, photo). */
    size_t fib = 0, fob = 0;
    snprintf(path, sizeof path, "%s/%s/photo/input_0.bin", ar_test_golden_dir(), float_stem);
    float *fin = ar_test_read_file(path, &fib);
    snprintf(path, sizeof path, "%s/%s/photo/output_0.bin", ar_test_golden_dir(), float_stem);
    float *fout = ar_test_read_file(path, &fob);
    ck_assert(fin && fout);
    qcase_t c;
    case_load(q->stem, meta.cases[0], &meta, &c);
    ok = 1;
    for (int round = 0; round < 2 && ok; round++) {
      if (q_run_case(a, q->stem, meta.cases[0], &meta, &c, 0, why, sizeof why)) ok = 0;
      ar_tview_t *fv = ar_interp_input(b, 0);
      ck_assert_uint_eq(fv->bytes, fib);
      memcpy(fv->data, fin, fib);
      ck_assert_int_eq(ar_interp_invoke(b), 0);
      const ar_tview_t *fo = ar_interp_output(b, 0);
      ck_assert_uint_eq(fo->bytes, fob);
      ck_assert_uint_eq(ar_test_golden_mismatches(fo->data, fout, fob / 4, NULL), 0);
    }
    if (ok) printf("share %s + %s: one activation region of %llu B, both on their goldens twice\n", q->stem,
                   float_stem, (unsigned long long)act_bytes);
    case_free(&c);
    free(fin);
    free(fout);
    ar_interp_free(a);
    ar_interp_free(b);
    free(act);
    free(pa);
    free(pb);
  }
  ar_model_free(mf);
  if (m) ar_model_free(m);
  verdict(q, "share", ok, why);
}
END_TEST

/* ---- through the daemon ----------------------------------------------------------------------- */

/* Every model (required ones must load; the others are tried) in one share group "q" with the float
 * model; every case invoked with its raw bytes; replies on the goldens. */
START_TEST(test_daemon_goldens) {
  if (data_absent()) return;
  ar_test_daemon_t d;
  const char *extra[] = {"--model-dir", q_models_dir(), NULL};
  ck_assert_msg(ar_td_start(&d, "512M", extra) == 0, "arenad did not start (log %s)", d.log);
  char msg[AR_MSG_BYTES], path[1024];
  ar_client_t *cl = NULL;
  ck_assert_msg(ar_client_connect(d.socket, &cl, msg, sizeof msg) == 0, "connect: %s", msg);
  ar_client_model_t fm;
  int rc = ar_client_load(cl, "float", ar_test_model_path(path, sizeof path, float_stem), "q", NULL, &fm, msg,
                          sizeof msg);
  ck_assert_msg(rc == 0, "load %s: %s", float_stem, msg);
  size_t fib = 0, fob = 0;
  snprintf(path, sizeof path, "%s/%s/photo/input_0.bin", ar_test_golden_dir(), float_stem);
  float *fin = ar_test_read_file(path, &fib);
  snprintf(path, sizeof path, "%s/%s/photo/output_0.bin", ar_test_golden_dir(), float_stem);
  float *fout = ar_test_read_file(path, &fob);
  ck_assert(fin && fout);
  int n_required = 0, n_ok = 0;
  char failures[4096] = "";
  for (int k = 0; k < N_QMODELS; k++) {
    const qmodel_t *q = &qmodels[k];
    char why[2048] = "";
    qmeta_t meta;
    meta_load(q->stem, &meta);
    ar_client_model_t info;
    snprintf(path, sizeof path, "%s/%s.tflite", q_models_dir(), q->stem);
    n_required += is_required(q);
    rc = ar_client_load(cl, q->stem, path, "q", NULL, &info, msg, sizeof msg);
    int ok = rc == 0, loaded = rc == 0;
    if (!ok) why_add(why, sizeof why, "load: %s: %s", ar_client_strerror(rc), msg);
    for (int cidx = 0; ok && cidx < meta.n_cases; cidx++) {
      const char *cs = meta.cases[cidx];
      qcase_t c;
      case_load(q->stem, cs, &meta, &c);
      ar_client_tensor_t ins[MAX_IO];
      for (int i = 0; i < c.n_in; i++) {
        ins[i] = info.inputs[i];
        ins[i].data = c.in[i];
        ins[i].bytes = c.in_bytes[i];
      }
      ar_client_result_t r;
      rc = ar_client_invoke(cl, q->stem, ins, (size_t)c.n_in, &r, msg, sizeof msg);
      if (rc != 0) {
        why_add(why, sizeof why, "%s invoke: %s: %s", cs, ar_client_strerror(rc), msg);
        ok = 0;
      } else {
        if (r.n_outputs != c.n_out) {
          why_add(why, sizeof why, "%s: %d outputs, golden %d", cs, r.n_outputs, c.n_out);
          ok = 0;
        }
        for (int j = 0; ok && j < c.n_out; j++) {
          const ar_client_tensor_t *t = &r.outputs[j];
          int32_t dims[AR_MAX_RANK] = {0};
          for (int32_t dd = 0; dd < t->rank && dd < AR_MAX_RANK; dd++) dims[dd] = (int32_t)t->dims[dd];
          if (compare_output(q->stem, cs, j, (ar_dtype_t)t->dtype, t->rank, dims, t->data, t->bytes, &meta.out[j],
                             c.out[j], c.out_bytes[j], is_detector(q->stem), 0, why, sizeof why))
            ok = 0;
        }
        ar_client_result_free(&r);
      }
      /* The float model in the same group, between the quantized model's cases. */
      ar_client_tensor_t ft = fm.inputs[0];
      ft.data = fin;
      ft.bytes = fib;
      ck_assert_msg(ar_client_invoke(cl, "float", &ft, 1, &r, msg, sizeof msg) == 0, "float invoke: %s", msg);
      ck_assert_int_eq(r.n_outputs >= 1, 1);
      ck_assert_uint_eq(r.outputs[0].bytes, fob);
      ck_assert_uint_eq(ar_test_golden_mismatches(r.outputs[0].data, fout, fob / 4, NULL), 0);
      ar_client_result_free(&r);
      case_free(&c);
    }
    if (ok) {
      printf("daemon %-52s %d cases on the goldens (group q with %s)\n", q->stem, meta.n_cases, float_stem);
      n_ok++;
    }
    /* Unload: the pool need not hold all twelve at once. */
    if (loaded) ck_assert_msg(ar_client_unload(cl, q->stem, msg, sizeof msg) == 0, "unload %s: %s", q->stem, msg);
    if (!ok && is_required(q)) why_add(failures, sizeof failures, "%s: %s", q->stem, why);
    if (!ok) printf("%s daemon %s: %s\n", is_required(q) ? "FAIL" : "NOT YET", q->stem, why);
    else if (!is_required(q)) printf("PASS daemon %s (not yet listed as required: list it)\n", q->stem);
  }
  ck_assert_msg(ar_td_ping(d.socket) == 0, "the daemon stopped answering");
  ar_client_close(cl);
  ck_assert_int_eq(ar_td_stop(&d), 0);
  free(fin);
  free(fout);
  printf("daemon: %d of %d quantized models on their goldens (%d required)\n", n_ok, N_QMODELS, n_required);
  ck_assert_msg(failures[0] == 0, "%s", failures);
}
END_TEST

/* INDEX.json lists exactly the 12 models above (a new model must be added here and to
 * ar_test_qmodels, which lists them in the same order). */
START_TEST(test_index_lists_the_models) {
  if (data_absent()) return;
  char path[1024];
  snprintf(path, sizeof path, "%s/INDEX.json", q_golden_dir());
  json_error_t err;
  json_t *j = json_load_file(path, 0, &err);
  ck_assert_msg(j != NULL, "%s: %s", path, err.text);
  json_t *ms = json_object_get(j, "models");
  ck_assert_int_eq((int)json_array_size(ms), N_QMODELS);
  ck_assert_int_eq(ar_test_n_qmodels, N_QMODELS);
  for (int k = 0; k < N_QMODELS; k++) ck_assert_str_eq(ar_test_qmodels[k], qmodels[k].stem);
  size_t i;
  json_t *e;
  json_array_foreach(ms, i, e) {
    const char *dir = json_string_value(json_object_get(e, "dir"));
    int found = 0;
    for (int k = 0; k < N_QMODELS; k++) found |= strcmp(qmodels[k].stem, dir) == 0;
    ck_assert_msg(found, "INDEX.json model %s is not in check_quant_models.c", dir);
  }
  json_decref(j);
}
END_TEST


/* ---- int8 tensors fed to float-only kernels (generated models; run without ../shared too) ----- */

/* x int8 [1,4] (0.5, -1) -> OP -> y int8 [1,4]: FLOOR and CEIL take float32 only (TFLite's too), so
 * the model loads (the file is well formed) but the interpreter - and so a daemon load - refuses it,
 * the message naming the operator and the tensor. */
START_TEST(test_int8_into_float_only_kernels) {
  static const struct { int32_t builtin; const char *name; } ops[] = {{8, "FLOOR"}, {104, "CEIL"}};
  static const float sx[1] = {0.5f}, sy[1] = {0.25f};
  static const int64_t zx[1] = {-1}, zy[1] = {3};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    const ar_tm_tensor_t t[2] = {{"x", AR_DTYPE_INT8, 2, {1, 4}, false, {0}, NULL},
                                 {"y", AR_DTYPE_INT8, 2, {1, 4}, false, {0}, NULL}};
    const ar_tm_quant_t q[2] = {{0, 1, sx, zx, 0}, {1, 1, sy, zy, 0}};
    const ar_tm_op_t op = {ops[k].builtin, 1, 1, {0}, {1}, 0, 0, {{0}}};
    const int32_t gin[] = {0}, gout[] = {1};
    size_t len = 0;
    uint8_t *buf = ar_tm_build_quant(t, 2, &op, 1, gin, 1, gout, 1, q, 2, &len);
    char msg[AR_MSG_BYTES] = "", want[160];
    ar_model_t *m = NULL;
    ck_assert_msg(ar_model_load_buffer(buf, len, &m, msg, sizeof msg) == 0, "%s: load: %s", ops[k].name, msg);
    ar_interp_options_t opt;
    ar_interp_options_default(&opt);
    ar_interp_t *in = NULL;
    int rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
    ck_assert_int_eq(rc, AR_EUNSUPPORTED);
    ck_assert_ptr_null(in);
    snprintf(want, sizeof want, "1 operator unsupported: %s v1 [input 0 (tensor x) has dtype INT8", ops[k].name);
    ck_assert_msg(strncmp(msg, want, strlen(want)) == 0 && strstr(msg, "] (op 0)"), "message '%s', expected '%s...'",
                  msg, want);
    printf("refused: %s\n", msg);
    ar_model_free(m);
    free(buf);
  }
}
END_TEST

static Suite *quant_suite(void) {
  Suite *s = suite_create("quant_models");
  TCase *tc = tcase_create("offline");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, test_index_lists_the_models);
  tcase_add_test(tc, test_int8_into_float_only_kernels);
  tcase_add_loop_test(tc, test_offline_goldens, 0, N_QMODELS);
  tcase_add_loop_test(tc, test_threads_same_bytes, 0, N_QMODELS);
  suite_add_tcase(s, tc);
  tc = tcase_create("plans");
  tcase_set_timeout(tc, 1200);
  tcase_add_loop_test(tc, test_plan_independence, 0, N_QMODELS);
  tcase_add_loop_test(tc, test_share_with_float_model, 0, N_QMODELS);
  suite_add_tcase(s, tc);
  tc = tcase_create("daemon");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, test_daemon_goldens);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);   /* a failing (forked) test still shows its lines */
  int n_req = 0;
  for (int k = 0; k < N_QMODELS; k++) n_req += is_required(&qmodels[k]);
  SRunner *sr = srunner_create(quant_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  printf("quantized models: %d of %d models held to their goldens\n", n_req, N_QMODELS);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
