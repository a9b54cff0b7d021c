/* check_ops_golden.c - every single-operator model in tests/golden/ops against its golden.
 *
 * tests/golden/ops/INDEX.tsv lists the cases (tools/ops/golden.py writes them from the tables in
 * tools/ops/cases/; see tools/ops/README.md): each folder holds model.tflite (one TFLite operator),
 * input_<i>.bin (raw little-endian, the model's input order and dtypes) and output_<j>.bin (the
 * golden in the output's dtype, from LiteRT.js, from native TFLite's builtin kernels where the
 * INDEX says "native" (tools/ops/golden.py runs ../shared/ref/native/tflite_run: the reference of
 * every integer kernel), or, where it says "hand", from the case table). Each case is loaded, planned and placed with the defaults, invoked twice (the second
 * invoke shows nothing the first wrote, in place or scratch, changes the result; a case with a
 * variable tensor is stateful and checked at its first invoke only) and compared:
 * float32 outputs with |got - want| <= 1e-4 max|want| + 1e-5 elementwise (NaN matches NaN, an
 * infinity the same infinity), every other dtype bit-exactly.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "loader/ar_model.h"
#include "tests/ar_test_util.h"

#define MAX_CASES 4096

static char *case_names[MAX_CASES];
static char *case_golden[MAX_CASES];
static int n_cases;

/* Read INDEX.tsv: "case<TAB>op<TAB>version<TAB>golden<TAB>..." rows, '#' lines are comments. */
static int read_index(void) {
  char path[1024], line[4096];
  snprintf(path, sizeof path, "%s/ops/INDEX.tsv", ar_test_golden_dir());
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f) && n_cases < MAX_CASES) {
    if (line[0] == '#' || line[0] == '\n') continue;
    char *save = NULL, *name = strtok_r(line, "\t\n", &save);
    strtok_r(NULL, "\t\n", &save);                 /* op */
    strtok_r(NULL, "\t\n", &save);                 /* version */
    char *golden = strtok_r(NULL, "\t\n", &save);
    if (!name || !golden) continue;
    case_names[n_cases] = strdup(name);
    case_golden[n_cases] = strdup(golden);
    n_cases++;
  }
  fclose(f);
  return 0;
}

/* Float comparison with the golden rule; NaN == NaN and equal infinities count as matches. */
static size_t float_mismatches(const float *got, const float *want, size_t n, double *worst) {
  double maxabs = 0, w = 0;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++)
    if (isfinite(want[i])) maxabs = fmax(maxabs, fabs((double)want[i]));
  double tol = 1e-4 * maxabs + 1e-5;
  for (size_t i = 0; i < n; i++) {
    if (isnan(want[i]) && isnan(got[i])) continue;
    if (isinf(want[i]) && got[i] == want[i]) continue;
    double d = fabs((double)got[i] - (double)want[i]);
    if (!(d <= tol)) bad++;
    if (d > w || d != d) w = d;
  }
  *worst = w;
  return bad;
}

static void run_case(const char *name, int pass, ar_interp_t *in) {
  char path[1024];
  for (int32_t i = 0; i < ar_interp_n_inputs(in); i++) {
    snprintf(path, sizeof path, "%s/ops/%s/input_%d.bin", ar_test_golden_dir(), name, i);
    size_t bytes = 0;
    void *data = ar_test_read_file(path, &bytes);
    ck_assert_msg(data != NULL, "cannot read %s", path);
    ar_tview_t *v = ar_interp_input(in, i);
    ck_assert_msg(v->bytes == bytes, "%s: input %d is %llu bytes, %s has %zu", name, i,
                  (unsigned long long)v->bytes, path, bytes);
    if (bytes) memcpy(v->data, data, bytes);
    free(data);
  }
  int rc = ar_interp_invoke(in);
  ck_assert_msg(rc == 0, "%s: invoke: %s", name, ar_err_name(rc));
  for (int32_t j = 0; j < ar_interp_n_outputs(in); j++) {
    const ar_tview_t *v = ar_interp_output(in, j);
    snprintf(path, sizeof path, "%s/ops/%s/output_%d.bin", ar_test_golden_dir(), name, j);
    size_t bytes = 0;
    void *want = ar_test_read_file(path, &bytes);
    ck_assert_msg(want != NULL, "cannot read %s", path);
    ck_assert_msg(bytes == v->bytes, "%s output %d (%s): golden %zu bytes, interpreter %llu", name, j,
                  ar_dtype_name(v->dtype), bytes, (unsigned long long)v->bytes);
    size_t n = bytes / (ar_dtype_size(v->dtype) ? ar_dtype_size(v->dtype) : 1), bad = 0;
    double worst = 0;
    if (v->dtype == AR_DTYPE_FLOAT32) {
      bad = float_mismatches(v->data, want, n, &worst);
    } else {
      size_t es = ar_dtype_size(v->dtype);
      for (size_t k = 0; k < n; k++)
        if (memcmp((const char *)v->data + k * es, (const char *)want + k * es, es) != 0) bad++;
    }
    if (pass == 0)
      printf("ops %-40s output %d %-7s %6zu elements  worst |err| %-9.3g %s\n", name, j,
             ar_dtype_name(v->dtype), n, worst, bad ? "FAIL" : "ok");
    free(want);
    ck_assert_msg(bad == 0, "%s output %d (%s): %zu of %zu elements differ from the golden (worst %g)",
                  name, j, ar_dtype_name(v->dtype), bad, n, worst);
  }
}

START_TEST(test_case) {
  const char *name = case_names[_i];
  char path[1024], msg[AR_MSG_BYTES] = "";
  snprintf(path, sizeof path, "%s/ops/%s/model.tflite", ar_test_golden_dir(), name);
  ar_model_t *m = NULL;
  int rc = ar_model_load(path, &m, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: load: %s (%s)", name, ar_err_name(rc), msg);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ar_interp_t *in = NULL;
  rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: interp_new: %s (%s)", name, ar_err_name(rc), msg);
  rc = ar_interp_place_owned(in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: place: %s (%s)", name, ar_err_name(rc), msg);
  /* A case with a variable tensor (a stateful operator's state) gives another output at its second
   * invoke, as TFLite does; such a case is checked at its first invoke only. */
  bool stateful = false;
  for (uint32_t t = 0; t < m->subgraphs[0].n_tensors; t++) stateful |= m->subgraphs[0].tensors[t].is_variable;
  run_case(name, 0, in);
  if (!stateful) run_case(name, 1, in);
  ar_interp_free(in);
  ar_model_free(m);
}
END_TEST

/* The INDEX names folders that exist, and golden sources are ones the generator writes. */
START_TEST(test_index) {
  ck_assert_int_gt(n_cases, 0);
  for (int i = 0; i < n_cases; i++)
    ck_assert_msg(strcmp(case_golden[i], "litert") == 0 || strcmp(case_golden[i], "native") == 0 ||
                      strcmp(case_golden[i], "hand") == 0,
                  "%s: golden source '%s'", case_names[i], case_golden[i]);
}
END_TEST

int main(void) {
  if (read_index() != 0) {
    fprintf(stderr, "check_ops_golden: cannot read %s/ops/INDEX.tsv\n", ar_test_golden_dir());
    return 1;
  }
  Suite *s = suite_create("ops_golden");
  TCase *tc = tcase_create("index");
  tcase_add_test(tc, test_index);
  suite_add_tcase(s, tc);
  tc = tcase_create("cases");
  tcase_add_loop_test(tc, test_case, 0, n_cases);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  for (int i = 0; i < n_cases; i++) { free(case_names[i]); free(case_golden[i]); }
  return failed ? 1 : 0;
}
