/* check_kernel_forms.c - the kernels' declarative support lists (ar_kernel_t.support, the op table
 * of `arenactl ops` and docs/ops.md) against the kernels themselves:
 * - every kernel declares at least one form, versions within 1..the loader's highest version;
 * - for the ops whose node is easy to generate (same-shape unary and binary ops, SELECT_V2,
 *   the conversions and a few data-movement ops), prepare on a generated node ACCEPTS every
 *   declared form at its lowest and highest version, and REFUSES every candidate dtype combination
 *   the kernel does not declare: the table can neither claim what prepare refuses nor hide what it
 *   runs;
 * - every operator of the single-operator golden models (tests/golden/ops: what runs and matches
 *   LiteRT) and of the shipped and quantized real models is of a declared form;
 * - the labels the table prints ("float32", "uint8->float32", "float32+int8w").
 */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_kernels.h"
#include "loader/ar_model.h"
#include "loader/ar_ops.h"
#include "tests/ar_test_util.h"

/* The candidate dtypes a generated node is tried with. */
static const ar_dtype_t cand[] = {AR_DTYPE_FLOAT32, AR_DTYPE_FLOAT16, AR_DTYPE_INT32, AR_DTYPE_INT64,
                                  AR_DTYPE_UINT8,   AR_DTYPE_INT8,    AR_DTYPE_INT16, AR_DTYPE_BOOL};
#define N_CAND ((int)(sizeof cand / sizeof cand[0]))

/* Per-tensor quantization every 8/16-bit tensor gets: scale 1/256 and the type's lowest code as
 * zero point for 8 bits, scale 2^-15 and zero point 0 for int16 (what LOGISTIC, TANH and SOFTMAX
 * require of their outputs, valid for any input); int32 gets 1/256 and 0 (QUANTIZE int16 -> int32
 * reads it). */
static const float q_scale[1] = {1.0f / 256.0f}, q_scale16[1] = {1.0f / 32768.0f};
static const int64_t zp_u8[1] = {0}, zp_i8[1] = {-128}, zp_i16[1] = {0};
static const ar_quant_t q_u8 = {1, 0, q_scale, zp_u8}, q_i8 = {1, 0, q_scale, zp_i8},
                        q_i16 = {1, 0, q_scale16, zp_i16}, q_i32 = {1, 0, q_scale, zp_i16};

/* Room for the views' data: prepare reads only constants, but give every view real bytes. */
static uint8_t pool_bytes[16][256];

static ar_tview_t view(ar_dtype_t dt, int k) {
  ar_tview_t t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = 2;
  t.dims[0] = 2;
  t.dims[1] = 3;
  t.bytes = 6 * ar_dtype_size(dt);
  t.data = pool_bytes[k];
  t.quant = dt == AR_DTYPE_UINT8 ? &q_u8 : dt == AR_DTYPE_INT8 ? &q_i8 : dt == AR_DTYPE_INT16 ? &q_i16
          : dt == AR_DTYPE_INT32 ? &q_i32 : NULL;
  return t;
}

typedef enum { G_UNARY, G_BINARY, G_SELECT } gen_kind_t;

/* prepare on a generated node of `op`: inputs of dtype `in` (SELECT_V2: a bool condition first),
 * output of dtype `out`; returns prepare's code, the message in msg. */
static int try_prepare(ar_op_t op, gen_kind_t kind, int version, ar_dtype_t in, ar_dtype_t out,
                       char *msg, size_t msg_bytes) {
  ar_tview_t v[4], *ins[4], *outs[1];
  ar_node_t n;
  ar_options_t opt;
  memset(&n, 0, sizeof n);
  n.inputs = ins;   /* the node's operand arrays are the caller's (sized from the file in the interpreter) */
  n.outputs = outs;
  memset(&opt, 0, sizeof opt);
  if (op == AR_OP_SOFTMAX) opt.softmax.beta = 1.0f;
  if (op == AR_OP_LEAKY_RELU) opt.leaky_relu.alpha = 0.2f;
  if (op == AR_OP_CAST) opt.cast = (ar_cast_options_t){.in_type = in, .out_type = out, .present = true};
  n.op = op;
  n.index = 3;
  n.version = version;
  n.options = &opt;
  n.threads = 1;
  int k = 0;
  if (kind == G_SELECT) {
    v[k] = view(AR_DTYPE_BOOL, k);
    n.inputs[n.n_inputs++] = &v[k];
    k++;
  }
  int data_inputs = kind == G_UNARY ? 1 : 2;
  for (int i = 0; i < data_inputs; i++, k++) {
    v[k] = view(in, k);
    n.inputs[n.n_inputs++] = &v[k];
  }
  v[k] = view(out, k);
  n.outputs[0] = &v[k];
  n.n_outputs = 1;
  msg[0] = '\0';
  return ar_kernel_for(op)->prepare(&n, msg, msg_bytes);
}

static bool declared(const ar_kernel_t *k, int version, ar_dtype_t in, ar_dtype_t out) {
  for (int32_t i = 0; i < k->support.n_forms; i++) {
    const ar_kernel_form_t *f = &k->support.forms[i];
    if (version >= f->vmin && version <= f->vmax && f->in == (int8_t)in && f->out == (int8_t)out &&
        f->w == AR_KF_SAME)
      return true;
  }
  return false;
}

/* Both ways for one op: every (in, out) of the candidates with out == in (or every pair when
 * `pairs`, for conversions and comparisons) is accepted iff declared, at vmin and vmax of the
 * op's loader range. */
static void check_op(ar_op_t op, gen_kind_t kind, bool pairs) {
  const ar_kernel_t *k = ar_kernel_for(op);
  ck_assert_ptr_nonnull(k);
  char msg[AR_MSG_BYTES], lab[32];
  const int versions[2] = {1, ar_op_max_version(op)};
  int accepted = 0;
  for (int vi = 0; vi < 2; vi++)
    for (int a = 0; a < N_CAND; a++)
      for (int b = 0; b < N_CAND; b++) {
        if (!pairs && a != b) continue;
        const bool want = declared(k, versions[vi], cand[a], cand[b]);
        const int rc = try_prepare(op, kind, versions[vi], cand[a], cand[b], msg, sizeof msg);
        ar_kernel_form_t f = {(int8_t)versions[vi], (int8_t)versions[vi], (int8_t)cand[a], AR_KF_SAME,
                              (int8_t)cand[b]};
        ck_assert_msg((rc == 0) == want, "%s v%d %s: declared %s, prepare says %d (%s)", ar_op_name(op),
                      versions[vi], ar_kernel_form_label(&f, lab, sizeof lab), want ? "yes" : "no", rc, msg);
        accepted += rc == 0;
      }
  ck_assert_msg(accepted > 0, "%s: no form accepted", ar_op_name(op));
}

START_TEST(every_kernel_declares_forms_within_its_versions) {
  for (int op = AR_OP_INVALID + 1; op < AR_OP_COUNT; op++) {
    const ar_kernel_t *k = ar_kernel_for((ar_op_t)op);
    if (!k) continue;
    ck_assert_msg(k->support.n_forms > 0 && k->support.forms, "%s declares no form", ar_op_name((ar_op_t)op));
    for (int32_t i = 0; i < k->support.n_forms; i++) {
      const ar_kernel_form_t *f = &k->support.forms[i];
      ck_assert_msg(f->vmin >= 1 && f->vmin <= f->vmax && f->vmax <= ar_op_max_version((ar_op_t)op),
                    "%s form %d: versions %d..%d, the loader takes 1..%d", ar_op_name((ar_op_t)op), (int)i,
                    f->vmin, f->vmax, ar_op_max_version((ar_op_t)op));
    }
  }
}
END_TEST

START_TEST(unary_ops_accept_exactly_what_they_declare) {
  static const ar_op_t ops[] = {AR_OP_RELU,     AR_OP_RELU6,       AR_OP_LOGISTIC,    AR_OP_HARD_SWISH,
                                AR_OP_ABS,      AR_OP_NEG,         AR_OP_SQRT,        AR_OP_RSQRT,
                                AR_OP_EXP,      AR_OP_LOG,         AR_OP_TANH,        AR_OP_GELU,
                                AR_OP_ELU,      AR_OP_LEAKY_RELU,  AR_OP_RELU_N1_TO_1, AR_OP_RELU_0_TO_1,
                                AR_OP_SOFTMAX,  AR_OP_LOG_SOFTMAX, AR_OP_L2_NORMALIZATION,
                                /* issue 28: kernels/math_ops.c, logical.c */
                                AR_OP_SQUARE,   AR_OP_SIN,         AR_OP_COS,         AR_OP_FLOOR,
                                AR_OP_CEIL,     AR_OP_ROUND,       AR_OP_ZEROS_LIKE,  AR_OP_LOGICAL_NOT};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) check_op(ops[i], G_UNARY, false);
}
END_TEST

START_TEST(conversions_accept_exactly_what_they_declare) {
  check_op(AR_OP_CAST, G_UNARY, true);
  check_op(AR_OP_QUANTIZE, G_UNARY, true);
  check_op(AR_OP_DEQUANTIZE, G_UNARY, true);
}
END_TEST

START_TEST(binary_ops_accept_exactly_what_they_declare) {
  static const ar_op_t ops[] = {AR_OP_ADD,     AR_OP_MUL,     AR_OP_SUB,     AR_OP_DIV,
                                AR_OP_FLOOR_DIV, AR_OP_SQUARED_DIFFERENCE, AR_OP_POW, AR_OP_MAXIMUM,
                                AR_OP_MINIMUM, AR_OP_PRELU};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) check_op(ops[i], G_BINARY, false);
  static const ar_op_t cmp[] = {AR_OP_EQUAL, AR_OP_NOT_EQUAL, AR_OP_LESS, AR_OP_LESS_EQUAL,
                                AR_OP_GREATER, AR_OP_GREATER_EQUAL};
  for (size_t i = 0; i < sizeof cmp / sizeof cmp[0]; i++) check_op(cmp[i], G_BINARY, true);
  check_op(AR_OP_SELECT_V2, G_SELECT, false);
  check_op(AR_OP_LOGICAL_AND, G_BINARY, false);   /* issue 28 */
  check_op(AR_OP_LOGICAL_OR, G_BINARY, false);
  check_op(AR_OP_SELECT, G_SELECT, false);
}
END_TEST

/* Every operator of a model that loads is of a declared form (control flow aside); returns the
 * number of operators checked. */
static int model_ops_declared(const char *path) {
  ar_model_t *m = NULL;
  char msg[AR_MSG_BYTES];
  if (ar_model_load(path, &m, msg, sizeof msg) != 0) return 0;   /* not ours to judge here */
  int n = 0;
  for (uint32_t g = 0; g < m->n_subgraphs; g++) {
    const ar_subgraph_t *sg = &m->subgraphs[g];
    for (uint32_t i = 0; i < sg->n_operators; i++) {
      const ar_operator_t *o = &sg->operators[i];
      const ar_kernel_t *k = ar_kernel_for(o->op);
      if (!k) continue;   /* WHILE / IF / CALL_ONCE: the interpreter's */
      const int8_t is = k->support.in_slot, ws = k->support.w_slot;
      int in = AR_KF_SAME, w = AR_KF_SAME, out = AR_KF_SAME;
      if (is >= 0 && is < o->n_inputs && o->inputs[is] >= 0) in = (int)sg->tensors[o->inputs[is]].dtype;
      if (ws >= 0 && ws < o->n_inputs && o->inputs[ws] >= 0) w = (int)sg->tensors[o->inputs[ws]].dtype;
      if (o->n_outputs > 0 && o->outputs[0] >= 0) out = (int)sg->tensors[o->outputs[0]].dtype;
      char lab[32];
      ar_kernel_form_t f = {(int8_t)o->version, (int8_t)o->version, (int8_t)in, (int8_t)(w == in ? AR_KF_SAME : w),
                            (int8_t)out};
      ck_assert_msg(ar_kernel_form_find(o->op, o->version, in, w, out) != NULL,
                    "%s: operator %u (%s v%d) is %s, which its kernel does not declare", path, i,
                    ar_op_name(o->op), (int)o->version, ar_kernel_form_label(&f, lab, sizeof lab));
      n++;
    }
  }
  ar_model_free(m);
  return n;
}

START_TEST(golden_and_real_models_are_declared_forms) {
  char path[2048];
  int n = 0;
  snprintf(path, sizeof path, "%s/ops", ar_test_golden_dir());
  DIR *d = opendir(path);
  ck_assert_msg(d != NULL, "no %s", path);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/ops/%s/model.tflite", ar_test_golden_dir(), e->d_name);
    n += model_ops_declared(path);
  }
  closedir(d);
  ck_assert_int_gt(n, 400);
  for (int i = 0; i < ar_test_n_models; i++)
    n += model_ops_declared(ar_test_model_path(path, sizeof path, ar_test_models[i]));
  if (ar_test_have_qmodels())
    for (int i = 0; i < ar_test_n_qmodels; i++) {
      snprintf(path, sizeof path, "%s/%s.tflite", ar_test_models_q_dir(), ar_test_qmodels[i]);
      n += model_ops_declared(path);
    }
  printf("kernel_forms: %d operators of loadable models checked\n", n);
}
END_TEST

/* The op table (`arenactl ops --json`, docs/ops.md) is the registry: every operator arenad has
 * is listed with exactly its kernel's forms (labels and versions) or as the interpreter's, and has
 * its row in docs/ops.md. */
START_TEST(op_table_lists_every_registry_op) {
  static char out[1 << 20];
  const char *bd = getenv("AR_BUILDDIR"), *src = getenv("AR_SRCDIR");
  ck_assert_msg(bd && src, "AR_BUILDDIR / AR_SRCDIR unset (run through make check)");
  char cmd[2048], path[1024];
  snprintf(cmd, sizeof cmd, "%s'%s/arenactl' ops --json", ar_test_exec_prefix(), bd);
  ck_assert_int_eq(ar_test_popen(cmd, out, sizeof out), 0);
  json_error_t err;
  json_t *doc = json_loads(out, 0, &err);
  ck_assert_msg(doc != NULL, "ops --json: %s", err.text);
  json_t *ops = json_object_get(doc, "ops");
  ck_assert_int_eq((int)json_array_size(ops), AR_OP_COUNT - 1);
  snprintf(path, sizeof path, "%s/docs/ops.md", src);
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "%s", path);
  static char md[1 << 20];
  size_t n = fread(md, 1, sizeof md - 1, f);
  md[n] = '\0';
  fclose(f);
  for (int o = AR_OP_INVALID + 1; o < AR_OP_COUNT; o++) {
    const ar_op_t op = (ar_op_t)o;
    json_t *e = json_array_get(ops, (size_t)(o - 1));
    ck_assert_str_eq(json_string_value(json_object_get(e, "op")), ar_op_name(op));
    ck_assert_int_eq(json_integer_value(json_object_get(e, "max_version")), ar_op_max_version(op));
    const ar_kernel_t *k = ar_kernel_for(op);
    json_t *forms = json_object_get(e, "forms");
    ck_assert_str_eq(json_string_value(json_object_get(e, "runs_by")), k ? "kernel" : "interpreter");
    ck_assert_int_eq((int)json_array_size(forms), k ? k->support.n_forms : 0);
    for (int32_t i = 0; k && i < k->support.n_forms; i++) {
      char lab[48];
      json_t *fj = json_array_get(forms, (size_t)i), *v = json_object_get(fj, "versions");
      ck_assert_str_eq(json_string_value(json_object_get(fj, "dtypes")),
                       ar_kernel_form_label(&k->support.forms[i], lab, sizeof lab));
      ck_assert_int_eq(json_integer_value(json_array_get(v, 0)), k->support.forms[i].vmin);
      ck_assert_int_eq(json_integer_value(json_array_get(v, 1)), k->support.forms[i].vmax);
    }
    char row[96];
    snprintf(row, sizeof row, "| %s | ", ar_op_name(op));
    ck_assert_msg(strstr(md, row) != NULL, "docs/ops.md has no row for %s", ar_op_name(op));
  }
  json_decref(doc);
}
END_TEST

START_TEST(form_labels) {
  char b[32];
  const ar_kernel_form_t f32 = AR_KF(1, 3, FLOAT32, FLOAT32), deq = AR_KF(1, 4, INT8, FLOAT32),
                         hyb = AR_KFW(2, 2, FLOAT32, INT8, FLOAT32), i16x8 = AR_KFW(4, 4, INT16, INT8, INT16),
                         cmp = AR_KF(1, 1, INT64, BOOL);
  ck_assert_str_eq(ar_kernel_form_label(&f32, b, sizeof b), "float32");
  ck_assert_str_eq(ar_kernel_form_label(&deq, b, sizeof b), "int8->float32");
  ck_assert_str_eq(ar_kernel_form_label(&hyb, b, sizeof b), "float32+int8w");
  ck_assert_str_eq(ar_kernel_form_label(&i16x8, b, sizeof b), "int16+int8w");
  ck_assert_str_eq(ar_kernel_form_label(&cmp, b, sizeof b), "int64->bool");
  /* the lookups the table and inspect use */
  ck_assert_ptr_nonnull(ar_kernel_form_find(AR_OP_CONV_2D, 3, AR_DTYPE_INT8, AR_DTYPE_INT8, AR_DTYPE_INT8));
  ck_assert_ptr_nonnull(ar_kernel_form_find(AR_OP_CONV_2D, 1, AR_DTYPE_FLOAT32, AR_KF_SAME, AR_DTYPE_FLOAT32));
  ck_assert_ptr_nonnull(ar_kernel_form_find(AR_OP_CONV_2D, 2, AR_DTYPE_FLOAT32, AR_DTYPE_INT8, AR_DTYPE_FLOAT32));
  ck_assert_ptr_null(ar_kernel_form_find(AR_OP_CONV_2D, 3, AR_DTYPE_FLOAT32, AR_DTYPE_INT8, AR_DTYPE_FLOAT32));
  ck_assert_ptr_null(ar_kernel_form_find(AR_OP_CONV_2D, 3, AR_DTYPE_UINT8, AR_DTYPE_INT8, AR_DTYPE_UINT8));
  ck_assert_ptr_null(ar_kernel_form_find(AR_OP_CONV_2D, ar_op_max_version(AR_OP_CONV_2D) + 1, AR_DTYPE_FLOAT32,
                                         AR_KF_SAME, AR_DTYPE_FLOAT32));
  ck_assert_ptr_null(ar_kernel_form_find(AR_OP_WHILE, 1, AR_DTYPE_FLOAT32, AR_KF_SAME, AR_DTYPE_FLOAT32));
}
END_TEST

int main(void) {
  Suite *s = suite_create("kernel_forms");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, every_kernel_declares_forms_within_its_versions);
  tcase_add_test(tc, unary_ops_accept_exactly_what_they_declare);
  tcase_add_test(tc, conversions_accept_exactly_what_they_declare);
  tcase_add_test(tc, binary_ops_accept_exactly_what_they_declare);
  tcase_add_test(tc, golden_and_real_models_are_declared_forms);
  tcase_add_test(tc, op_table_lists_every_registry_op);
  tcase_add_test(tc, form_labels);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
