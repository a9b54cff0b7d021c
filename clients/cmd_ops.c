/* cmd_ops.c - arenactl ops [--json] [--markdown TFLITE_TSV] (offline): the op table.
 *
 * Generated from the kernel registry: every operator arenad knows (loader/ar_ops.h), the highest
 * version the loader takes, and the (versions, dtypes) forms its kernel declares
 * (ar_kernel_t.support, kernels/ar_kernels.h), or "interpreter" for the control-flow ops the
 * interpreter runs itself (any dtype). --json prints the same as {"ops": [{op, builtin_code,
 * custom, max_version, runs_by, forms: [{versions: [a, b], dtypes, in, weights, out}]}]}.
 *
 * --markdown TSV writes docs/ops.md from data/tflite_ops.tsv (TensorFlow Lite 2.19's builtin
 * operators: code, name, registered versions, the dtype forms its kernels take): one row per
 * TFLite operator with TFLite's versions and dtypes and arenad's column beside them - the forms
 * arenad runs (with the versions it takes when they are fewer than TFLite's) and the ones it
 * refuses - then arenad's operators TFLite has no builtin kernel for. `./dev ops-doc` regenerates
 * docs/ops.md; tests/check_cli.c holds the committed file to this output.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/arenactl.h"
#include "common/ar_error.h"
#include "kernels/ar_kernels.h"
#include "loader/ar_ops.h"

#define OPS_USAGE "usage: arenactl ops [--json] [--markdown TFLITE_TSV]\n"

static bool runs_in_interpreter(ar_op_t op) {
  return op == AR_OP_WHILE || op == AR_OP_IF || op == AR_OP_CALL_ONCE;
}

/* TFLite's builtin code of `op`, or -1 for a custom op. */
static int builtin_code_of(ar_op_t op) {
  for (int c = 0; c < 512; c++)
    if (c != AR_TFLITE_BUILTIN_CUSTOM && ar_op_from_builtin(c) == op) return c;
  return -1;
}

static const char *vrange(int a, int b, char *buf, size_t n) {
  if (a == b) snprintf(buf, n, "%d", a);
  else snprintf(buf, n, "%d-%d", a, b);
  return buf;
}

/* ---- the registry ---- */

static json_t *registry_json(void) {
  json_t *ops = json_array();
  for (int o = AR_OP_INVALID + 1; o < AR_OP_COUNT; o++) {
    const ar_op_t op = (ar_op_t)o;
    const ar_kernel_t *k = ar_kernel_for(op);
    json_t *e = json_object(), *forms = json_array();
    const int code = builtin_code_of(op);
    json_object_set_new(e, "op", json_string(ar_op_name(op)));
    json_object_set_new(e, "builtin_code", code >= 0 ? json_integer(code) : json_null());
    json_object_set_new(e, "custom", json_boolean(code < 0));
    json_object_set_new(e, "max_version", json_integer(ar_op_max_version(op)));
    json_object_set_new(e, "runs_by", json_string(k ? "kernel" : runs_in_interpreter(op) ? "interpreter" : "none"));
    for (int32_t i = 0; k && i < k->support.n_forms; i++) {
      const ar_kernel_form_t *f = &k->support.forms[i];
      char lab[48];
      json_t *fj = json_object(), *v = json_array();
      json_array_append_new(v, json_integer(f->vmin));
      json_array_append_new(v, json_integer(f->vmax));
      json_object_set_new(fj, "versions", v);
      json_object_set_new(fj, "dtypes", json_string(ar_kernel_form_label(f, lab, sizeof lab)));
      json_object_set_new(fj, "in", f->in == AR_KF_SAME ? json_null() : json_string(ar_dtype_name((ar_dtype_t)f->in)));
      json_object_set_new(fj, "weights", f->w == AR_KF_SAME ? json_null() : json_string(ar_dtype_name((ar_dtype_t)f->w)));
      json_object_set_new(fj, "out", f->out == AR_KF_SAME ? json_null() : json_string(ar_dtype_name((ar_dtype_t)f->out)));
      json_array_append_new(forms, fj);
    }
    json_object_set_new(e, "forms", forms);
    json_array_append_new(ops, e);
  }
  json_t *doc = json_object();
  json_object_set_new(doc, "ops", ops);
  return doc;
}

/* "float32 1-4, int8 1-4" into buf: the kernel's forms (merged when one label has several
 * version ranges, each listed). */
static void forms_text(const ar_kernel_t *k, char *buf, size_t n) {
  size_t at = 0;
  buf[0] = '\0';
  for (int32_t i = 0; k && i < k->support.n_forms && at < n; i++) {
    char lab[48], vr[16];
    const ar_kernel_form_t *f = &k->support.forms[i];
    at += (size_t)snprintf(buf + at, n - at, "%s%s v%s", i ? ", " : "", ar_kernel_form_label(f, lab, sizeof lab),
                           vrange(f->vmin, f->vmax, vr, sizeof vr));
  }
}

static void print_registry(void) {
  printf("%-30s %5s  %s\n", "operator", "max v", "forms (dtypes and versions its kernel runs)");
  for (int o = AR_OP_INVALID + 1; o < AR_OP_COUNT; o++) {
    const ar_op_t op = (ar_op_t)o;
    const ar_kernel_t *k = ar_kernel_for(op);
    static char forms[8192];
    if (k) forms_text(k, forms, sizeof forms);
    else snprintf(forms, sizeof forms, "%s", runs_in_interpreter(op) ? "any (run by the interpreter)" : "no kernel");
    printf("%-30s %5d  %s\n", ar_op_name(op), ar_op_max_version(op), forms);
  }
}

/* ---- docs/ops.md ---- */

/* Expand one dtype token of the TSV ("int8", "a->b", "{a,b}->{c,d}", "float32+int8w") into
 * labels as ar_kernel_form_label writes them; calls fn for each. */
typedef void (*label_fn)(void *ctx, const char *label);
static int split_set(const char *s, size_t len, char out[16][24]) {
  int n = 0;
  if (len >= 2 && s[0] == '{' && s[len - 1] == '}') {
    s++;
    len -= 2;
  }
  size_t i = 0;
  while (i <= len && n < 16) {
    size_t j = i;
    while (j < len && s[j] != ',') j++;
    snprintf(out[n++], 24, "%.*s", (int)(j - i), s + i);
    i = j + 1;
  }
  return n;
}
static void expand_token(const char *tok, label_fn fn, void *ctx) {
  const char *arrow = strstr(tok, "->");
  char l[16][24], r[16][24], lab[800];
  const int nl = split_set(tok, arrow ? (size_t)(arrow - tok) : strlen(tok), l);
  const int nr = arrow ? split_set(arrow + 2, strlen(arrow + 2), r) : 0;
  for (int a = 0; a < nl; a++) {
    if (!arrow) {
      fn(ctx, l[a]);
      continue;
    }
    for (int b = 0; b < nr; b++) {
      if (strcmp(l[a], r[b]) == 0) snprintf(lab, sizeof lab, "%s", l[a]);
      else snprintf(lab, sizeof lab, "%s->%s", l[a], r[b]);
      fn(ctx, lab);
    }
  }
}

typedef struct {
  const ar_kernel_t *k;
  int tv0, tv1;               /* TFLite's versions */
  char runs[4096], refused[4096];
  size_t nr, nf;
  int n_tflite, n_runs;
} row_t;

static void append(char *buf, size_t *at, size_t n, const char *s) {
  if (*at < n) *at += (size_t)snprintf(buf + *at, n - *at, "%s%s", *at ? ", " : "", s);
}

/* One TFLite form: which of its versions arenad's kernel runs. */
static void judge(void *ctx, const char *label) {
  row_t *r = ctx;
  r->n_tflite++;
  int lo = 0, hi = -1;   /* the versions of tv0..tv1 arenad declares for this label (one range) */
  char lab[48], item[96], vr[16];
  for (int32_t i = 0; r->k && i < r->k->support.n_forms; i++) {
    const ar_kernel_form_t *f = &r->k->support.forms[i];
    if (strcmp(ar_kernel_form_label(f, lab, sizeof lab), label) != 0) continue;
    const int a = f->vmin > r->tv0 ? f->vmin : r->tv0, b = f->vmax < r->tv1 ? f->vmax : r->tv1;
    if (a > b) continue;
    if (hi < lo) lo = a, hi = b;
    else {
      if (a < lo) lo = a;
      if (b > hi) hi = b;
    }
  }
  if (hi < lo) {
    append(r->refused, &r->nf, sizeof r->refused, label);
    return;
  }
  r->n_runs++;
  if (lo == r->tv0 && hi == r->tv1) snprintf(item, sizeof item, "%s", label);
  else snprintf(item, sizeof item, "%s (v%s)", label, vrange(lo, hi, vr, sizeof vr));
  append(r->runs, &r->nr, sizeof r->runs, item);
}

static void collect(void *ctx, const char *label) {
  char *buf = ctx;
  size_t at = strlen(buf);
  append(buf, &at, 4096, label);
}

static int print_markdown(const char *tsv) {
  FILE *f = fopen(tsv, "r");
  if (!f) {
    fprintf(stderr, "arenactl ops: %s: cannot open\n", tsv);
    return 1;
  }
  bool seen[AR_OP_COUNT] = {false};
  static char line[8192];
  int rows = 0, tf_kernels = 0, ar_all = 0, ar_some = 0, forms_tf = 0, forms_ar = 0;
  /* the table into memory first: the summary goes above it */
  size_t cap = 1 << 20, len = 0;
  char *body = malloc(cap);
  if (!body) {
    fclose(f);
    return 1;
  }
  body[0] = '\0';
#define OUT(...)                                                                 \
  do {                                                                           \
    int w_ = snprintf(body + len, cap - len, __VA_ARGS__);                       \
    if (w_ > 0) len = len + (size_t)w_ < cap ? len + (size_t)w_ : cap - 1;       \
  } while (0)
  OUT("| code | operator | TFLite versions | TFLite dtypes | arenad runs | arenad refuses |\n");
  OUT("|-----:|----------|-----------------|---------------|-------------|----------------|\n");
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    line[strcspn(line, "\n")] = '\0';
    char *save = NULL, *code = strtok_r(line, "\t", &save), *name = strtok_r(NULL, "\t", &save);
    char *vers = strtok_r(NULL, "\t", &save), *dts = strtok_r(NULL, "\t", &save);
    if (!code || !name || !vers || !dts) continue;
    rows++;
    ar_op_t op = strcmp(code, "custom") == 0 ? ar_op_from_custom(name, strlen(name)) : ar_op_from_builtin(atoi(code));
    if (op != AR_OP_INVALID) seen[op] = true;
    const ar_kernel_t *k = op == AR_OP_INVALID ? NULL : ar_kernel_for(op);
    static row_t r;
    memset(&r, 0, sizeof r);
    r.k = k;
    if (strcmp(vers, "-") == 0) {
      OUT("| %s | %s | - | no builtin kernel | %s | |\n", code, name,
          op != AR_OP_INVALID ? "(arenad has it: below)" : "");
      continue;
    }
    tf_kernels++;
    r.tv0 = atoi(vers);
    const char *dash = strchr(vers, '-');
    r.tv1 = dash ? atoi(dash + 1) : r.tv0;
    static char tfl[4096];
    tfl[0] = '\0';
    char *s2 = NULL;
    for (char *tok = strtok_r(dts, " ", &s2); tok; tok = strtok_r(NULL, " ", &s2)) {
      expand_token(tok, collect, tfl);
      if (op != AR_OP_INVALID && runs_in_interpreter(op)) continue;
      expand_token(tok, judge, &r);   /* no kernel: every form refused */
    }
    if (op != AR_OP_INVALID && runs_in_interpreter(op)) {
      snprintf(r.runs, sizeof r.runs, "any (the interpreter runs it)");
      r.n_runs = r.n_tflite = 1;
    }
    forms_tf += r.n_tflite;
    forms_ar += r.n_runs;
    if (r.n_runs > 0 && r.n_runs == r.n_tflite && r.nf == 0) ar_all++;
    else if (r.n_runs > 0) ar_some++;
    char vr[16];
    OUT("| %s | %s | %s | %s | %s | %s |\n", code, name, vrange(r.tv0, r.tv1, vr, sizeof vr), tfl,
        r.n_runs ? r.runs : "-", r.nf ? r.refused : "");
  }
  fclose(f);
  OUT("\n## arenad's operators without a row above\n\n");
  OUT("| operator | versions | arenad runs |\n|----------|----------|-------------|\n");
  for (int o = AR_OP_INVALID + 1; o < AR_OP_COUNT; o++) {
    if (seen[o]) continue;
    static char forms[8192];
    forms_text(ar_kernel_for((ar_op_t)o), forms, sizeof forms);
    char vr[16];
    OUT("| %s | %s | %s |\n", ar_op_name((ar_op_t)o), vrange(1, ar_op_max_version((ar_op_t)o), vr, sizeof vr), forms);
  }
#undef OUT
  printf("# Operators: TensorFlow Lite's builtin kernels and arenad\n\n");
  printf("Generated by `arenactl ops --markdown data/tflite_ops.tsv` (`./dev ops-doc`) from arenad's kernel\n"
         "registry (each kernel's declared forms, kernels/ar_kernels.h) and data/tflite_ops.tsv (TensorFlow\n"
         "Lite 2.19: the versions its BuiltinOpResolver registers, measured on the native runner, and the\n"
         "dtype forms its kernels take). Do not edit by hand: tests/check_cli.c compares this file with\n"
         "the command's output.\n\n");
  printf("Dtype forms: `int8` = data input and output of that type; `a->b` = input a, output b;\n"
         "`float32+int8w` = float32 activations with int8 weights (dynamic-range, \"hybrid\");\n"
         "`int16+int8w` = int16 activations with int8 weights (int16x8). arenad runs a form at the\n"
         "versions shown in brackets when it takes fewer than TFLite registers, at all of them otherwise.\n\n");
  printf("%d TFLite operators, %d with a builtin kernel: arenad runs every form of %d of them and some\n"
         "forms of %d more; %d of TFLite's %d (operator, dtype) forms.\n\n",
         rows, tf_kernels, ar_all, ar_some, forms_ar, forms_tf);
  fputs(body, stdout);
  free(body);
  return 0;
}

int ar_cmd_ops(int argc, char **argv) {
  static const struct option longopts[] = {
    {"json", no_argument, NULL, 'j'},
    {"markdown", required_argument, NULL, 'm'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  int json = 0, c;
  const char *tsv = NULL;
  optind = 1;
  while ((c = getopt_long(argc, argv, "jm:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'j': json = 1; break;
    case 'm': tsv = optarg; break;
    case 'h': printf(OPS_USAGE); return 0;
    default: fprintf(stderr, OPS_USAGE); return 2;
    }
  }
  if (optind != argc || (json && tsv)) {
    fprintf(stderr, OPS_USAGE);
    return 2;
  }
  int ret = 0;
  if (tsv) {
    ret = print_markdown(tsv);
  } else if (json) {
    json_t *doc = registry_json();
    if (json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0) ret = 1;
    printf("\n");
    json_decref(doc);
  } else {
    print_registry();
  }
  if (fflush(stdout) != 0) ret = 1;
  return ret;
}
