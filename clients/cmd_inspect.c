/* cmd_inspect.c - arenactl inspect MODEL [--json] (offline).
 *
 * Loads the model with the verifying loader (so a malformed file fails here with the loader's
 * message) and reports what it holds: operator counts per op, tensors, graph inputs and outputs
 * (name, dtype, shape), constant buffers and bytes, fp16 and sparse weights, subgraphs, schema
 * version, description and the file's sha256. --json prints the same facts with the key names of
 * the model MANIFEST.json (builtin_ops, custom_ops, inputs/outputs {name, dtype, shape}, num_tensors,
 * num_operators, tensor_dtypes, sparse_tensors, constant_buffers) so the two can be compared.
 *
 * Quantization: every graph input and output shows its scale and zero point (per-axis: the axis,
 * count and range); --tensors lists every tensor with its dtype, shape and quantization, and with
 * --json adds "tensors" [{index, name, dtype, shape, constant, quantization}] to each subgraph
 * (quantization {scale: [...], zero_point: [...], quantized_dimension} or null, the form of
 * golden_q's meta.json).
 *
 * A model with operators arenad cannot run is still described (ar_model_load_describe): the
 * operator table marks each op code that cannot run, a "cannot run" line gives the one message
 * `arenactl plan`/`run` and the daemon refuse it with (cut at a whole group: "... and N more"),
 * and --json adds "runnable" and "unsupported_operators" [{index, op, version, dtypes, option}]
 * (ar_interp_unsupported: every operator, whatever its prepare's error, e.g. an arity or dtype
 * error, not only the first). Every operator is listed in order (text "operators", --json
 * subgraphs[].operators [{index, op, version, dtypes, runs, why}]) with its dtypes in the op
 * table's form (ar_kernel_form_label: "int8", "int16->int8", "float32+int8w") and, in the main
 * graph, whether it runs and why not.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/arenactl.h"
#include "clients/cli_io.h"
#include "common/ar_error.h"
#include "common/ar_path.h"
#include "interp/ar_interp.h"
#include "kernels/ar_isa.h"
#include "kernels/ar_kernels.h"
#include "loader/ar_model.h"
#include "loader/ar_sha256.h"

/* "CONV_2D" for builtins, "CUSTOM:<code>" for custom ops (the manifest's operator_codes form). */
static void opcode_name(const ar_opcode_t *oc, char *buf, size_t n) {
  if (oc->builtin_code == AR_TFLITE_BUILTIN_CUSTOM)
    snprintf(buf, n, "CUSTOM:%s", ar_cli_esc(oc->custom_code));
  else if (oc->op != AR_OP_INVALID)
    snprintf(buf, n, "%s", ar_op_name(oc->op));
  else if (ar_tflite_builtin_name(oc->builtin_code))
    snprintf(buf, n, "%s", ar_tflite_builtin_name(oc->builtin_code));
  else   /* a code newer than the schema arenad knows: the loader's refusal names it the same way */
    snprintf(buf, n, "BUILTIN_%d", (int)oc->builtin_code);
}

/* Operator k's dtypes as the op table writes them: the kernel's data input, weights and output 0
 * (ar_kernel_t.support), or input 0 -> output 0 for an op without a kernel. */
static const char *op_dtypes(const ar_subgraph_t *sg, const ar_operator_t *op, char *buf, size_t n) {
  const ar_kernel_t *k = op->op == AR_OP_INVALID ? NULL : ar_kernel_for(op->op);
  const int8_t is = k ? k->support.in_slot : 0, ws = k ? k->support.w_slot : -1;
  ar_kernel_form_t f = {(int8_t)op->version, (int8_t)op->version, AR_KF_SAME, AR_KF_SAME, AR_KF_SAME};
  if (is >= 0 && is < op->n_inputs && op->inputs[is] >= 0) f.in = (int8_t)sg->tensors[op->inputs[is]].dtype;
  if (ws >= 0 && ws < op->n_inputs && op->inputs[ws] >= 0 && (int8_t)sg->tensors[op->inputs[ws]].dtype != f.in)
    f.w = (int8_t)sg->tensors[op->inputs[ws]].dtype;
  if (op->n_outputs > 0 && op->outputs[0] >= 0) f.out = (int8_t)sg->tensors[op->outputs[0]].dtype;
  return ar_kernel_form_label(&f, buf, n);
}

static json_t *shape_json(const int32_t *dims, int32_t rank) {
  json_t *a = json_array();
  for (int32_t i = 0; i < rank; i++) json_array_append_new(a, json_integer(dims[i]));
  return a;
}

/* {"scale": [...], "zero_point": [...], "quantized_dimension": d} (golden_q meta.json's form), or
 * null when the tensor has no quantization. */
static json_t *quant_json(const ar_tensor_t *t) {
  if (t->quant == NULL || t->quant->n <= 0) return json_null();
  json_t *o = json_object(), *sc = json_array(), *zp = json_array();
  for (int32_t i = 0; i < t->quant->n; i++) {
    json_array_append_new(sc, json_real(t->quant->scale[i]));
    json_array_append_new(zp, json_integer((json_int_t)t->quant->zero_point[i]));
  }
  json_object_set_new(o, "scale", sc);
  json_object_set_new(o, "zero_point", zp);
  json_object_set_new(o, "quantized_dimension", json_integer(t->quant->quantized_dimension));
  return o;
}

/* "scale 0.0078125 zp 128", or for per-axis "per-axis dim 3 (32): scale 0.00122..0.0411 zp 0";
 * "-" without quantization. */
static void quant_text(const ar_tensor_t *t, char *buf, size_t n) {
  const ar_quant_t *q = t->quant;
  if (q == NULL || q->n <= 0) {
    snprintf(buf, n, "-");
    return;
  }
  if (q->n == 1) {
    snprintf(buf, n, "scale %.9g zp %lld", q->scale[0], (long long)q->zero_point[0]);
    return;
  }
  float lo = q->scale[0], hi = q->scale[0];
  int64_t zlo = q->zero_point[0], zhi = q->zero_point[0];
  for (int32_t i = 1; i < q->n; i++) {
    lo = q->scale[i] < lo ? q->scale[i] : lo;
    hi = q->scale[i] > hi ? q->scale[i] : hi;
    zlo = q->zero_point[i] < zlo ? q->zero_point[i] : zlo;
    zhi = q->zero_point[i] > zhi ? q->zero_point[i] : zhi;
  }
  if (zlo == zhi)
    snprintf(buf, n, "per-axis dim %d (%d): scale %.6g..%.6g zp %lld", q->quantized_dimension, q->n, lo, hi,
             (long long)zlo);
  else
    snprintf(buf, n, "per-axis dim %d (%d): scale %.6g..%.6g zp %lld..%lld", q->quantized_dimension, q->n, lo, hi,
             (long long)zlo, (long long)zhi);
}

static json_t *io_json(const ar_subgraph_t *sg, const int32_t *list, uint32_t n) {
  json_t *a = json_array();
  for (uint32_t i = 0; i < n; i++) {
    const ar_tensor_t *t = &sg->tensors[list[i]];
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(t->name));
    json_object_set_new(o, "dtype", json_string(ar_dtype_name(t->dtype)));
    json_object_set_new(o, "shape", shape_json(t->dims, t->rank));
    if (t->has_shape_signature)
      json_object_set_new(o, "shape_signature", shape_json(t->shape_signature, t->rank));
    json_object_set_new(o, "index", json_integer(list[i]));
    json_object_set_new(o, "quantization", quant_json(t));
    json_array_append_new(a, o);
  }
  return a;
}

static void count_key(json_t *obj, const char *key) {
  json_t *v = json_object_get(obj, key);
  json_object_set_new(obj, key, json_integer(v ? json_integer_value(v) + 1 : 1));
}

static json_t *subgraph_json(const ar_model_t *m, uint32_t s) {
  const ar_subgraph_t *sg = &m->subgraphs[s];
  json_t *o = json_object(), *builtin = json_object(), *custom = json_object();
  json_t *dtypes = json_object(), *cdtypes = json_object();
  uint64_t sparse = 0, variable = 0, quantized = 0, fp16 = 0, fp16_bytes = 0, sparse_bytes = 0;
  for (uint32_t i = 0; i < sg->n_operators; i++) {
    const ar_opcode_t *oc = &m->opcodes[sg->operators[i].opcode_index];
    if (oc->builtin_code == AR_TFLITE_BUILTIN_CUSTOM)
      count_key(custom, oc->custom_code ? oc->custom_code : "");
    else
      count_key(builtin, ar_op_name(oc->op));
  }
  for (uint32_t i = 0; i < sg->n_tensors; i++) {
    const ar_tensor_t *t = &sg->tensors[i];
    count_key(dtypes, ar_dtype_name(t->dtype));
    if (ar_tensor_is_constant(t)) {
      count_key(cdtypes, ar_dtype_name(t->dtype));
      if (t->dtype == AR_DTYPE_FLOAT16) { fp16++; fp16_bytes += t->data_bytes; }
    }
    if (t->sparsity) { sparse++; sparse_bytes += t->data_bytes; }
    if (t->is_variable) variable++;
    if (t->has_quantization) quantized++;
  }
  json_object_set_new(o, "index", json_integer(s));
  json_object_set_new(o, "name", json_string(sg->name));
  json_object_set_new(o, "num_tensors", json_integer(sg->n_tensors));
  json_object_set_new(o, "num_operators", json_integer(sg->n_operators));
  json_object_set_new(o, "builtin_ops", builtin);
  json_object_set_new(o, "custom_ops", custom);
  json_object_set_new(o, "inputs", io_json(sg, sg->inputs, sg->n_inputs));
  json_object_set_new(o, "outputs", io_json(sg, sg->outputs, sg->n_outputs));
  json_object_set_new(o, "tensor_dtypes", dtypes);
  json_object_set_new(o, "constant_tensor_dtypes", cdtypes);
  json_object_set_new(o, "quantized_tensors", json_integer((json_int_t)quantized));
  json_object_set_new(o, "sparse_tensors", json_integer((json_int_t)sparse));
  json_object_set_new(o, "variable_tensors", json_integer((json_int_t)variable));
  json_t *w = json_object();
  json_object_set_new(w, "float16_constants", json_integer((json_int_t)fp16));
  json_object_set_new(w, "float16_bytes", json_integer((json_int_t)fp16_bytes));
  json_object_set_new(w, "sparse_constants", json_integer((json_int_t)sparse));
  json_object_set_new(w, "sparse_bytes", json_integer((json_int_t)sparse_bytes));
  json_object_set_new(o, "weights", w);
  return o;
}

static uint32_t constant_buffer_count(const ar_model_t *m) {
  uint8_t *seen = calloc(m->n_buffers ? m->n_buffers : 1, 1);
  uint32_t n = 0;
  if (!seen) return 0;
  for (uint32_t s = 0; s < m->n_subgraphs; s++)
    for (uint32_t t = 0; t < m->subgraphs[s].n_tensors; t++) {
      const ar_tensor_t *tt = &m->subgraphs[s].tensors[t];
      if (tt->data && !seen[tt->buffer]) {
        seen[tt->buffer] = 1;
        n++;
      }
    }
  free(seen);
  return n;
}

static json_t *unsupported_json(const ar_unsupported_t *ops, int32_t n) {
  json_t *a = json_array();
  for (int32_t i = 0; i < n; i++) {
    json_t *e = json_object();
    json_object_set_new(e, "index", json_integer(ops[i].op_index));
    json_object_set_new(e, "op", json_string(ops[i].op));
    json_object_set_new(e, "version", json_integer(ops[i].version));
    json_object_set_new(e, "option", json_string(ops[i].option));
    json_array_append_new(a, e);
  }
  return a;
}

int ar_cli_json_error(int rc, const char *message, const ar_unsupported_t *ops, int32_t n) {
  json_t *e = json_object(), *o = json_object();
  json_object_set_new(e, "code", json_string(ar_err_name(rc)));
  json_object_set_new(e, "message", json_string(message ? message : ar_strerror(rc)));
  if (rc == AR_EUNSUPPORTED) json_object_set_new(e, "operators", unsupported_json(ops, n));
  json_object_set_new(o, "error", e);
  json_dumpf(o, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  printf("\n");
  fflush(stdout);
  json_decref(o);
  return 1;
}

/* What cannot run (at most AR_CLI_MAX_UNSUPPORTED entries). */
#define AR_CLI_MAX_UNSUPPORTED 256
typedef struct {
  ar_unsupported_t ops[AR_CLI_MAX_UNSUPPORTED];
  int32_t n;
  int rc;                      /* ar_interp_unsupported's result */
  char msg[AR_MSG_BYTES];
} unsupported_t;

static bool opcode_cannot_run(const ar_model_t *m, const unsupported_t *u, uint32_t code) {
  for (int32_t i = 0; i < u->n; i++)
    if (m->subgraphs[0].operators[u->ops[i].op_index].opcode_index == code) return true;
  return false;
}

/* The entry of operator k of subgraph 0 among what cannot run, or NULL (it runs). */
static const ar_unsupported_t *op_refusal(const unsupported_t *u, uint32_t k) {
  for (int32_t i = 0; i < u->n; i++)
    if (u->ops[i].op_index == (int32_t)k && u->ops[i].subgraph == 0) return &u->ops[i];
  return NULL;
}

/* subgraphs[s].operators: every operator in order with its dtypes; in the main graph whether it
 * runs and why not (null elsewhere: a subgraph runs as part of the operator that calls it). */
static json_t *operators_json(const ar_model_t *m, uint32_t s, const unsupported_t *u) {
  const ar_subgraph_t *sg = &m->subgraphs[s];
  json_t *a = json_array();
  for (uint32_t k = 0; k < sg->n_operators; k++) {
    const ar_operator_t *op = &sg->operators[k];
    char name[128], dt[64];
    opcode_name(&m->opcodes[op->opcode_index], name, sizeof name);
    json_t *e = json_object();
    json_object_set_new(e, "index", json_integer(k));
    json_object_set_new(e, "op", json_string(name));
    json_object_set_new(e, "version", json_integer(op->version));
    json_object_set_new(e, "dtypes", json_string(op_dtypes(sg, op, dt, sizeof dt)));
    const ar_unsupported_t *r = s == 0 ? op_refusal(u, k) : NULL;
    json_object_set_new(e, "runs", s == 0 ? json_boolean(r == NULL) : json_null());
    json_object_set_new(e, "why", r ? json_string(r->option[0] ? r->option : "no kernel for this op") : json_null());
    json_array_append_new(a, e);
  }
  return a;
}

/* unsupported_operators entries get the operator's dtypes (the refusal names op, version, dtypes). */
static void add_refusal_dtypes(json_t *list, const ar_model_t *m) {
  size_t i;
  json_t *e;
  json_array_foreach(list, i, e) {
    const json_int_t k = json_integer_value(json_object_get(e, "index"));
    if (k < 0 || (uint64_t)k >= m->subgraphs[0].n_operators) continue;
    char dt[64];
    json_object_set_new(e, "dtypes", json_string(op_dtypes(&m->subgraphs[0], &m->subgraphs[0].operators[k], dt,
                                                           sizeof dt)));
  }
}

/* The text list of operators (main graph: runs / cannot run and why). */
static void print_operators(const ar_model_t *m, uint32_t s, const unsupported_t *u) {
  const ar_subgraph_t *sg = &m->subgraphs[s];
  printf("  operators\n    %-5s %-34s %7s  %-22s %s\n", "#", "op", "version", "dtypes", s == 0 ? "status" : "");
  for (uint32_t k = 0; k < sg->n_operators; k++) {
    const ar_operator_t *op = &sg->operators[k];
    char name[128], dt[64];
    opcode_name(&m->opcodes[op->opcode_index], name, sizeof name);
    const ar_unsupported_t *r = s == 0 ? op_refusal(u, k) : NULL;
    printf("    %-5u %-34s %7d  %-22s %s%s\n", k, name, op->version, op_dtypes(sg, op, dt, sizeof dt),
           s != 0 ? "" : r ? "cannot run: " : "runs",
           r ? ar_cli_esc(r->option[0] ? r->option : "no kernel for this op") : "");
  }
}

/* The --json document (caller owns the reference). */
static json_t *inspect_json(const ar_model_t *m, const char *path) {
  json_t *o = json_object();
  char hex[65];
  ar_sha256_hex(m->sha256, hex);
  json_object_set_new(o, "file", json_string(ar_path_base(path)));
  json_object_set_new(o, "bytes", json_integer((json_int_t)m->file_bytes));
  json_object_set_new(o, "sha256", json_string(hex));
  json_object_set_new(o, "schema_version", json_integer(m->schema_version));
  json_object_set_new(o, "description", json_string(m->description));
  json_object_set_new(o, "num_subgraphs", json_integer(m->n_subgraphs));
  json_object_set_new(o, "signature_defs", json_integer(m->n_signature_defs));
  json_t *md = json_array();
  for (uint32_t i = 0; i < m->n_metadata; i++) {
    json_t *e = json_object();
    json_object_set_new(e, "name", json_string(m->metadata[i].name));
    json_object_set_new(e, "buffer", json_integer(m->metadata[i].buffer));
    json_array_append_new(md, e);
  }
  json_object_set_new(o, "metadata", md);
  json_t *codes = json_array();
  for (uint32_t i = 0; i < m->n_opcodes; i++) {
    char name[128];
    json_t *e = json_object();
    opcode_name(&m->opcodes[i], name, sizeof(name));
    json_object_set_new(e, "op", json_string(name));
    json_object_set_new(e, "version", json_integer(m->opcodes[i].version));
    json_array_append_new(codes, e);
  }
  json_object_set_new(o, "operator_codes", codes);
  json_t *cb = json_object();
  json_object_set_new(cb, "count", json_integer(constant_buffer_count(m)));
  json_object_set_new(cb, "total_bytes", json_integer((json_int_t)m->constant_bytes));
  json_object_set_new(cb, "buffers_in_table", json_integer(m->n_buffers));
  json_object_set_new(o, "constant_buffers", cb);
  json_t *sgs = json_array();
  for (uint32_t s = 0; s < m->n_subgraphs; s++) json_array_append_new(sgs, subgraph_json(m, s));
  json_object_set_new(o, "subgraphs", sgs);
  return o;
}

static void add_unsupported_json(json_t *o, const unsupported_t *u) {
  json_object_set_new(o, "runnable", json_boolean(u->rc == 0));
  json_object_set_new(o, "unsupported_operators", unsupported_json(u->ops, u->n));
  if (u->rc != 0) json_object_set_new(o, "cannot_run", json_string(u->msg));
}

static void print_shape(const ar_tensor_t *t) {
  char buf[128];
  size_t used = (size_t)snprintf(buf, sizeof(buf), "[");
  for (int32_t i = 0; i < t->rank && used < sizeof(buf); i++)
    used += (size_t)snprintf(buf + used, sizeof(buf) - used, i ? ",%d" : "%d", t->dims[i]);
  if (used < sizeof(buf)) snprintf(buf + used, sizeof(buf) - used, "]");
  printf("%-18s", buf);
}

static void print_io(const ar_subgraph_t *sg, const char *title, const int32_t *list, uint32_t n) {
  printf("  %s\n    %-3s %-7s %-9s %-18s %-28s %s\n", title, "#", "tensor", "dtype", "shape", "quantization", "name");
  for (uint32_t i = 0; i < n; i++) {
    const ar_tensor_t *t = &sg->tensors[list[i]];
    char q[160];
    quant_text(t, q, sizeof(q));
    printf("    %-3u %-7d %-9s ", i, list[i], ar_dtype_name(t->dtype));
    print_shape(t);
    printf(" %-28s %s\n", q, ar_cli_esc(t->name));
  }
}

/* Every tensor of subgraph sg (--tensors): index, dtype, shape, constant or not, quantization. */
static void print_tensors(const ar_subgraph_t *sg) {
  printf("  tensors\n    %-7s %-9s %-18s %-5s %-40s %s\n", "tensor", "dtype", "shape", "const", "quantization", "name");
  for (uint32_t i = 0; i < sg->n_tensors; i++) {
    const ar_tensor_t *t = &sg->tensors[i];
    char q[160];
    quant_text(t, q, sizeof(q));
    printf("    %-7u %-9s ", i, ar_dtype_name(t->dtype));
    print_shape(t);
    printf(" %-5s %-40s %s\n", t->data ? "yes" : "", q, ar_cli_esc(t->name));
  }
}

static json_t *tensors_json(const ar_subgraph_t *sg) {
  json_t *a = json_array();
  for (uint32_t i = 0; i < sg->n_tensors; i++) {
    const ar_tensor_t *t = &sg->tensors[i];
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer(i));
    json_object_set_new(o, "name", json_string(t->name));
    json_object_set_new(o, "dtype", json_string(ar_dtype_name(t->dtype)));
    json_object_set_new(o, "shape", shape_json(t->dims, t->rank));
    json_object_set_new(o, "constant", json_boolean(t->data != NULL));
    json_object_set_new(o, "quantization", quant_json(t));
    json_array_append_new(a, o);
  }
  return a;
}

static void print_human(const ar_model_t *m, const char *path, json_t *doc, const unsupported_t *u, bool tensors) {
  char hex[65];
  ar_sha256_hex(m->sha256, hex);
  json_t *cb = json_object_get(doc, "constant_buffers");
  printf("model          %s (%llu bytes)\n", path, (unsigned long long)m->file_bytes);
  printf("sha256         %s\n", hex);
  printf("schema         version %u\n", m->schema_version);
  printf("description    %s\n", ar_cli_esc(m->description));
  printf("contents       %u subgraph%s, %u operator codes, %u buffers, %u metadata, %u signature defs\n",
         m->n_subgraphs, m->n_subgraphs == 1 ? "" : "s", m->n_opcodes, m->n_buffers, m->n_metadata,
         m->n_signature_defs);
  printf("constants      %lld buffers, %llu bytes (mapped read-only, not copied)\n",
         (long long)json_integer_value(json_object_get(cb, "count")), (unsigned long long)m->constant_bytes);
  for (uint32_t i = 0; i < m->n_metadata; i++)
    printf("metadata %-5u %s (buffer %u)\n", i, ar_cli_esc(m->metadata[i].name), m->metadata[i].buffer);

  json_t *sgs = json_object_get(doc, "subgraphs");
  for (uint32_t s = 0; s < m->n_subgraphs; s++) {
    const ar_subgraph_t *sg = &m->subgraphs[s];
    json_t *sj = json_array_get(sgs, s);
    json_t *w = json_object_get(sj, "weights");
    printf("\nsubgraph %u \"%s\": %u tensors, %u operators\n", s, ar_cli_esc(sg->name), sg->n_tensors, sg->n_operators);
    printf("  %-34s %7s %8s\n", "operator", "count", "version");
    bool main_graph = s == 0;
    for (uint32_t c = 0; c < m->n_opcodes; c++) {
      uint32_t n = 0;
      for (uint32_t i = 0; i < sg->n_operators; i++) n += sg->operators[i].opcode_index == c;
      if (n == 0) continue;
      char name[128];
      opcode_name(&m->opcodes[c], name, sizeof(name));
      printf("  %-34s %7u %8d%s\n", name, n, m->opcodes[c].version,
             main_graph && opcode_cannot_run(m, u, c) ? "   cannot run" : "");
    }
    if (main_graph)
      printf("  %s %s\n", u->rc == 0 ? "runs         " : "cannot run   ", u->rc == 0 ? "every operator has a kernel" : ar_cli_esc(u->msg));
    print_operators(m, s, u);
    print_io(sg, "inputs", sg->inputs, sg->n_inputs);
    print_io(sg, "outputs", sg->outputs, sg->n_outputs);
    if (tensors) print_tensors(sg);
    printf("  tensor dtypes ");
    const char *key;
    json_t *val;
    int first = 1;
    json_object_foreach(json_object_get(sj, "tensor_dtypes"), key, val) {
      printf("%s%s %lld", first ? "" : ", ", key, (long long)json_integer_value(val));
      first = 0;
    }
    printf("\n  fp16 weights  %lld tensors, %lld bytes\n",
           (long long)json_integer_value(json_object_get(w, "float16_constants")),
           (long long)json_integer_value(json_object_get(w, "float16_bytes")));
    printf("  sparse        %lld tensors, %lld bytes stored\n",
           (long long)json_integer_value(json_object_get(w, "sparse_constants")),
           (long long)json_integer_value(json_object_get(w, "sparse_bytes")));
    printf("  variables     %lld   quantized %lld\n",
           (long long)json_integer_value(json_object_get(sj, "variable_tensors")),
           (long long)json_integer_value(json_object_get(sj, "quantized_tensors")));
  }
  /* The paths this machine runs the model's kernels on (the same report as arenactl --version). */
  char isa[1024], *line = isa, *nl;
  ar_isa_report(isa, sizeof isa);
  printf("\nkernel paths on this machine\n");
  for (; (nl = strchr(line, '\n')) != NULL; line = nl + 1) printf("  %.*s\n", (int)(nl - line), line);
}

/* {"float_level": "avx512f", "blas_core": "SkylakeX", "blas_replaced_core": "Prescott"|null,
 *  "report": "<the lines of ar_isa_report>"} */
static json_t *kernel_paths_json(void) {
  char isa[1024];
  ar_isa_report(isa, sizeof isa);
  json_t *o = json_object();
  const char *rep = ar_blas_replaced_core();
  json_object_set_new(o, "float_level", json_string(ar_isa_name(ar_isa_float_level())));
  json_object_set_new(o, "blas_core", json_string(ar_blas_corename()));
  json_object_set_new(o, "blas_replaced_core", rep ? json_string(rep) : json_null());
  json_object_set_new(o, "report", json_string(isa));
  return o;
}

int ar_cmd_inspect(int argc, char **argv) {
  static const struct option longopts[] = {
    {"json", no_argument, NULL, 'j'},
    {"tensors", no_argument, NULL, 't'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  int json = 0, c;
  bool tensors = false;
  optind = 1;
  while ((c = getopt_long(argc, argv, "jth", longopts, NULL)) != -1) {
    switch (c) {
    case 'j': json = 1; break;
    case 't': tensors = true; break;
    case 'h':
      printf("usage: arenactl inspect MODEL [--json] [--tensors]\n");
      return 0;
    default:
      fprintf(stderr, "usage: arenactl inspect MODEL [--json] [--tensors]\n");
      return 2;
    }
  }
  if (optind != argc - 1) {
    fprintf(stderr, "usage: arenactl inspect MODEL [--json] [--tensors]\n");
    return 2;
  }
  const char *path = argv[optind];
  char msg[AR_MSG_BYTES];
  ar_model_t *m = NULL;
  int rc = ar_model_load_describe(path, &m, msg, sizeof(msg));
  if (rc) {
    if (json) return ar_cli_json_error(rc, msg, NULL, 0);
    /* File-level errors already name the path ("PATH: ..."); decode errors do not. */
    size_t pl = strlen(path);
    bool named = strncmp(msg, path, pl) == 0 && msg[pl] == ':';
    fprintf(stderr, "arenactl inspect: %s%s%s (%s)\n", named ? "" : path, named ? "" : ": ", ar_cli_esc(msg), ar_err_name(rc));
    return 1;
  }
  unsupported_t *u = calloc(1, sizeof(*u));
  if (!u) {
    ar_model_free(m);
    return json ? ar_cli_json_error(AR_ENOMEM, "out of memory", NULL, 0) : 1;
  }
  u->rc = ar_interp_unsupported(m, NULL, u->ops, AR_CLI_MAX_UNSUPPORTED, &u->n, u->msg, sizeof(u->msg));
  json_t *doc = inspect_json(m, path);
  add_unsupported_json(doc, u);
  add_refusal_dtypes(json_object_get(doc, "unsupported_operators"), m);
  for (uint32_t s = 0; s < m->n_subgraphs; s++)
    json_object_set_new(json_array_get(json_object_get(doc, "subgraphs"), s), "operators", operators_json(m, s, u));
  json_object_set_new(doc, "kernel_paths", kernel_paths_json());
  if (tensors && json) {
    json_t *sgs = json_object_get(doc, "subgraphs");
    for (uint32_t s = 0; s < m->n_subgraphs; s++)
      json_object_set_new(json_array_get(sgs, s), "tensors", tensors_json(&m->subgraphs[s]));
  }
  int ret = 0;
  if (json) {
    if (json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0) ret = 1;
    printf("\n");
  } else {
    print_human(m, path, doc, u, tensors);
  }
  free(u);
  json_decref(doc);
  ar_model_free(m);
  if (fflush(stdout) != 0) ret = 1;
  return ret;
}
