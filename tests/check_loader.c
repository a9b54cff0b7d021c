/* check_loader.c - the loader against the 11 real models and a malformed-model corpus.
 *
 * Acceptance: every shipped model loads and its facts (`arenactl inspect --json`) equal
 * data/MANIFEST.json; builtin options decode to the option kinds the manifest lists. Rejection:
 * copies of the real models are mutated in memory (truncated, root/vtable/field offsets
 * corrupted, indices out of range, dims negative or overflowing, constants of the wrong size,
 * unknown ops and versions, forward references, options out of range, sparse metadata broken)
 * and a synthetic model exercises the 64-bit Buffer offset/size form; each case must fail with
 * a specific error code and message substring. Random byte flips must never crash (run this
 * suite under ASan/UBSan and valgrind).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "loader/ar_flatbuf.h"
#include "loader/ar_model.h"
#include "loader/ar_schema.h"
#include "loader/ar_sha256.h"
#include "tests/ar_test_model.h"
#include "tests/ar_test_util.h"

/* ---------------------------------------------------------------- helpers */

static json_t *manifest_doc;

static json_t *manifest(void) {
  json_t *doc = manifest_doc;
  if (doc) return doc;
  char path[4096];
  const char *src = getenv("AR_SRCDIR");
  snprintf(path, sizeof(path), "%s/data/MANIFEST.json", src && *src ? src : AR_SRCDIR);
  json_error_t err;
  doc = json_load_file(path, 0, &err);
  if (!doc) doc = json_load_file("/work/shared/models/MANIFEST.json", 0, &err);
  ck_assert_msg(doc != NULL, "cannot read MANIFEST.json: %s", err.text);
  manifest_doc = doc;
  return doc;
}

static json_t *manifest_model(const char *stem) {
  char file[256];
  snprintf(file, sizeof(file), "%s.tflite", stem);
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(manifest(), "models"), i, m) {
    if (strcmp(json_string_value(json_object_get(m, "file")), file) == 0) return m;
  }
  ck_abort_msg("%s not in MANIFEST.json", file);
  return NULL;
}

static uint8_t *read_model(const char *stem, size_t *len) {
  char path[4096];
  ar_test_model_path(path, sizeof(path), stem);
  uint8_t *buf = ar_test_read_file(path, len);
  ck_assert_msg(buf != NULL, "cannot read %s", path);
  return buf;
}

/* A private copy of a model plus a reader over it, to find the bytes a case corrupts. */
typedef struct mfile {
  uint8_t *buf;
  size_t len;
  ar_fb_t fb;
  ar_fb_table_t model;
  uint8_t *clean;        /* unmodified copy that `decoded` points into */
  ar_model_t *decoded;   /* the unmodified model, to name tensors and ops in expectations */
} mfile_t;

static void mf_open(mfile_t *f, const char *stem) {
  char msg[AR_MSG_BYTES];
  f->buf = read_model(stem, &f->len);
  f->clean = malloc(f->len);
  ck_assert(f->clean != NULL);
  memcpy(f->clean, f->buf, f->len);
  ck_assert_int_eq(ar_model_load_buffer(f->clean, f->len, &f->decoded, msg, sizeof(msg)), 0);
  ar_fb_init(&f->fb, f->buf, f->len, NULL, 0);
  f->fb.budget = UINT64_MAX;
  ck_assert_int_eq(ar_fb_root(&f->fb, "TFL3", &f->model), 0);
}

static void mf_close(mfile_t *f) {
  ar_model_free(f->decoded);
  free(f->clean);
  free(f->buf);
}

static ar_fb_table_t tab_elem(mfile_t *f, const ar_fb_table_t *t, unsigned vec_id, uint32_t i) {
  ar_fb_vec_t v;
  ar_fb_table_t r;
  ck_assert_int_eq(ar_fb_get_vector(&f->fb, t, vec_id, 4, "test", &v), 0);
  ck_assert_msg(i < v.count, "element %u of %u", i, v.count);
  ck_assert_int_eq(ar_fb_vec_table(&f->fb, &v, i, "test", &r), 0);
  return r;
}

static ar_fb_vec_t vec_of(mfile_t *f, const ar_fb_table_t *t, unsigned id, unsigned elem) {
  ar_fb_vec_t v;
  ck_assert_int_eq(ar_fb_get_vector(&f->fb, t, id, elem, "test", &v), 0);
  ck_assert_msg(v.present, "vector field %u absent", id);
  return v;
}

/* File offset of a present scalar field. */
static uint64_t field_at(mfile_t *f, const ar_fb_table_t *t, unsigned id, unsigned size) {
  uint64_t pos;
  ck_assert_int_eq(ar_fb_field_pos(&f->fb, t, id, size, "test", &pos), 0);
  ck_assert_msg(pos != 0, "field %u absent", id);
  return pos;
}

static ar_fb_table_t subgraph0(mfile_t *f) { return tab_elem(f, &f->model, AR_FB_MODEL_SUBGRAPHS, 0); }
static ar_fb_table_t tensor_tab(mfile_t *f, uint32_t i) {
  ar_fb_table_t sg = subgraph0(f);
  return tab_elem(f, &sg, AR_FB_SUBGRAPH_TENSORS, i);
}
static ar_fb_table_t operator_tab(mfile_t *f, uint32_t i) {
  ar_fb_table_t sg = subgraph0(f);
  return tab_elem(f, &sg, AR_FB_SUBGRAPH_OPERATORS, i);
}

static void put_u8(mfile_t *f, uint64_t pos, uint8_t v) { f->buf[pos] = v; }
static void put_u16(mfile_t *f, uint64_t pos, uint16_t v) { memcpy(f->buf + pos, &v, 2); }
static void put_u32(mfile_t *f, uint64_t pos, uint32_t v) { memcpy(f->buf + pos, &v, 4); }
static void put_i32(mfile_t *f, uint64_t pos, int32_t v) { memcpy(f->buf + pos, &v, 4); }

/* Load `len` bytes of `buf` and require error `code` with `substr` in the message. */
static void expect_reject_buf(const uint8_t *buf, size_t len, int code, const char *substr, const char *label) {
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  int rc = ar_model_load_buffer(buf, len, &m, msg, sizeof(msg));
  ck_assert_msg(rc == code, "%s: expected %s, got %s (%s)", label, ar_err_name(code), ar_err_name(rc), msg);
  ck_assert_msg(m == NULL, "%s: model returned on failure", label);
  ck_assert_msg(strstr(msg, substr) != NULL, "%s: message \"%s\" lacks \"%s\"", label, msg, substr);
}

static void expect_reject(mfile_t *f, int code, const char *substr, const char *label) {
  expect_reject_buf(f->buf, f->len, code, substr, label);
}

static const char *op_name_at(mfile_t *f, uint32_t oi) {
  return ar_op_name(f->decoded->subgraphs[0].operators[oi].op);
}

/* xorshift64*: deterministic per seed, independent of libc rand. */
static uint64_t rng_next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ull;
}

/* ---------------------------------------------------------------- real models */

START_TEST(test_all_models_load_mapped) {
  const char *stem = ar_test_models[_i];
  char path[4096], msg[AR_MSG_BYTES], hex[65];
  ar_model_t *m = NULL;
  ar_test_model_path(path, sizeof(path), stem);
  int rc = ar_model_load(path, &m, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "%s: %s", stem, msg);
  json_t *mm = manifest_model(stem);
  ck_assert_uint_eq(m->file_bytes, json_integer_value(json_object_get(mm, "bytes")));
  ar_sha256_hex(m->sha256, hex);
  ck_assert_str_eq(hex, json_string_value(json_object_get(mm, "sha256")));
  ck_assert_uint_eq(m->schema_version, 3);
  json_t *cb = json_object_get(mm, "constant_buffers");
  ck_assert_uint_eq(m->constant_bytes, json_integer_value(json_object_get(cb, "total_bytes")));
  ck_assert_uint_eq(m->n_buffers, json_integer_value(json_object_get(cb, "buffers_in_table")));
  ck_assert_uint_eq(m->n_subgraphs, 1);
  /* Constants point into the read-only mapping (no copy) and hold exactly their bytes. */
  const ar_subgraph_t *sg = &m->subgraphs[0];
  uint32_t constants = 0;
  for (uint32_t t = 0; t < sg->n_tensors; t++) {
    const ar_tensor_t *tt = &sg->tensors[t];
    if (!tt->data) continue;
    constants++;
    ck_assert(tt->data >= m->file && tt->data + tt->data_bytes <= m->file + m->file_bytes);
    if (!tt->sparsity) ck_assert_uint_eq(tt->data_bytes, tt->bytes);
    else ck_assert_uint_lt(tt->data_bytes, tt->bytes);
  }
  ck_assert_uint_gt(constants, 0);
  /* Graph I/O in range, operators resolved. */
  for (uint32_t o = 0; o < sg->n_operators; o++) {
    ck_assert_int_ne(sg->operators[o].op, AR_OP_INVALID);
    ck_assert_int_le(sg->operators[o].version, ar_op_max_version(sg->operators[o].op));
  }
  ar_model_free(m);
}
END_TEST

START_TEST(test_load_buffer_matches_load) {
  const char *stem = ar_test_models[_i];
  char path[4096], msg[AR_MSG_BYTES];
  size_t len;
  uint8_t *buf = read_model(stem, &len);
  ar_model_t *a = NULL, *b = NULL;
  ck_assert_int_eq(ar_model_load_buffer(buf, len, &a, msg, sizeof(msg)), 0);
  ck_assert_int_eq(ar_model_load(ar_test_model_path(path, sizeof(path), stem), &b, msg, sizeof(msg)), 0);
  ck_assert(a->file == buf);
  ck_assert_mem_eq(a->sha256, b->sha256, 32);
  const ar_subgraph_t *x = &a->subgraphs[0], *y = &b->subgraphs[0];
  ck_assert_uint_eq(x->n_tensors, y->n_tensors);
  for (uint32_t t = 0; t < x->n_tensors; t++) {
    ck_assert_str_eq(x->tensors[t].name, y->tensors[t].name);
    ck_assert_uint_eq(x->tensors[t].bytes, y->tensors[t].bytes);
    ck_assert_int_eq(x->tensors[t].data == NULL, y->tensors[t].data == NULL);
    if (x->tensors[t].data)
      ck_assert_int_eq(x->tensors[t].data - a->file, y->tensors[t].data - b->file);
  }
  ar_model_free(a);
  ar_model_free(b);
  free(buf);
}
END_TEST

/* arenactl inspect --json reports the manifest's facts. */
START_TEST(test_inspect_json_matches_manifest) {
  const char *stem = ar_test_models[_i];
  const char *bdir = getenv("AR_BUILDDIR");
  char path[4096], cmd[8192];
  ar_test_model_path(path, sizeof(path), stem);
  snprintf(cmd, sizeof(cmd), "%s'%s/arenactl' inspect --json '%s'", ar_test_exec_prefix(),
           bdir && *bdir ? bdir : AR_BUILDDIR, path);
  FILE *p = popen(cmd, "r");
  ck_assert(p != NULL);
  json_error_t err;
  json_t *got = json_loadf(p, 0, &err);
  int status = pclose(p);
  ck_assert_msg(got != NULL && status == 0, "%s: no JSON (%s), exit status %d", cmd, err.text, status);
  json_t *want = manifest_model(stem);
  static const char *const top[] = {"file", "bytes", "sha256", "schema_version", "description",
                                    "num_subgraphs", "signature_defs", "operator_codes", "constant_buffers"};
  for (size_t k = 0; k < AR_ARRAY_LEN(top); k++)
    ck_assert_msg(json_equal(json_object_get(got, top[k]), json_object_get(want, top[k])), "%s: %s differs",
                  stem, top[k]);
  size_t i;
  json_t *md;
  ck_assert_uint_eq(json_array_size(json_object_get(got, "metadata")), json_array_size(json_object_get(want, "metadata")));
  json_array_foreach(json_object_get(want, "metadata"), i, md) {
    json_t *g = json_array_get(json_object_get(got, "metadata"), i);
    ck_assert(json_equal(json_object_get(g, "name"), json_object_get(md, "name")));
    ck_assert(json_equal(json_object_get(g, "buffer"), json_object_get(md, "buffer")));
  }
  json_t *gs = json_array_get(json_object_get(got, "subgraphs"), 0);
  json_t *ws = json_array_get(json_object_get(want, "subgraphs"), 0);
  static const char *const sgkeys[] = {"name", "num_tensors", "num_operators", "builtin_ops", "custom_ops",
                                       "tensor_dtypes", "constant_tensor_dtypes", "quantized_tensors",
                                       "variable_tensors"};
  for (size_t k = 0; k < AR_ARRAY_LEN(sgkeys); k++)
    ck_assert_msg(json_equal(json_object_get(gs, sgkeys[k]), json_object_get(ws, sgkeys[k])),
                  "%s: subgraph %s differs", stem, sgkeys[k]);
  ck_assert_int_eq(json_integer_value(json_object_get(gs, "sparse_tensors")),
                   json_array_size(json_object_get(ws, "sparse_tensors")));
  static const char *const io[] = {"inputs", "outputs"};
  for (size_t k = 0; k < 2; k++) {
    json_t *ga = json_object_get(gs, io[k]), *wa = json_object_get(ws, io[k]), *w;
    ck_assert_uint_eq(json_array_size(ga), json_array_size(wa));
    json_array_foreach(wa, i, w) {
      json_t *g = json_array_get(ga, i);
      static const char *const f[] = {"name", "dtype", "shape", "index", "shape_signature"};
      for (size_t q = 0; q < AR_ARRAY_LEN(f); q++)
        ck_assert_msg(json_equal(json_object_get(g, f[q]), json_object_get(w, f[q])) ||
                      (!json_object_get(g, f[q]) && !json_object_get(w, f[q])),
                      "%s: %s %zu %s differs", stem, io[k], i, f[q]);
    }
  }
  json_decref(got);
}
END_TEST

/* Run arenactl with `args`; returns its exit status and captures up to n-1 bytes of stdout+stderr. */
static int run_arenactl(const char *args, char *out, size_t n) {
  const char *bdir = getenv("AR_BUILDDIR");
  char cmd[8192];
  snprintf(cmd, sizeof(cmd), "%s'%s/arenactl' %s 2>&1", ar_test_exec_prefix(),
           bdir && *bdir ? bdir : AR_BUILDDIR, args);
  FILE *p = popen(cmd, "r");
  ck_assert(p != NULL);
  size_t got = fread(out, 1, n - 1, p);
  out[got] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The human table names the ops with counts and versions, the I/O, constants and the sha256;
 * a malformed file fails with the loader's message (exit 1), a bad command line with exit 2. */
START_TEST(test_inspect_human_and_errors) {
  static char out[1 << 16];
  char path[4096], args[8192];
  ar_test_model_path(path, sizeof(path), "selfie_segmentation");
  snprintf(args, sizeof(args), "inspect '%s'", path);
  ck_assert_int_eq(run_arenactl(args, out, sizeof(out)), 0);
  static const char *const want[] = {
    "sha256         8d13b7fae74af625c641226813616a2117bd6bca19eb3b75574621fc08557f27",
    "constants      113 buffers, 212826 bytes",
    "subgraph 0 \"keras2tflite_selfiesegmentation_mlkit-256x256-2021_01_19-v1215.tflite.generated\": 360 tensors, 246 operators",
    "CUSTOM:Convolution2DTransposeBias        1        1",
    "DEQUANTIZE                             110        2",
    "0   0       FLOAT32   [1,256,256,3]      -                            input_1",
    "0   249     FLOAT32   [1,256,256,1]      -                            activation_10",
    "fp16 weights  110 tensors",
  };
  for (size_t i = 0; i < AR_ARRAY_LEN(want); i++)
    ck_assert_msg(strstr(out, want[i]) != NULL, "inspect output lacks \"%s\":\n%s", want[i], out);

  size_t len;
  uint8_t *buf = read_model("face_detection_short_range", &len);
  char tmp[] = "/tmp/check_loader_trunc_XXXXXX";
  int fd = mkstemp(tmp);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, buf, 1000), 1000);
  close(fd);
  free(buf);
  snprintf(args, sizeof(args), "inspect --json '%s'", tmp);
  ck_assert_int_eq(run_arenactl(args, out, sizeof(out)), 1);
  ck_assert_msg(strstr(out, "the file (1000 bytes)") && strstr(out, "EMODEL"), "%s", out);
  unlink(tmp);
  /* A directory: the path is said once. */
  ck_assert_int_eq(run_arenactl("inspect /tmp", out, sizeof(out)), 1);
  ck_assert_msg(strstr(out, "arenactl inspect: /tmp: not a regular file (EIO)") != NULL, "%s", out);
  ck_assert_msg(strstr(out, "/tmp: /tmp:") == NULL, "%s", out);
  ck_assert_int_eq(run_arenactl("inspect", out, sizeof(out)), 2);
  ck_assert_ptr_nonnull(strstr(out, "usage: arenactl inspect MODEL [--json]"));
  ck_assert_int_eq(run_arenactl("inspect --bogus x", out, sizeof(out)), 2);
}
END_TEST

static const char *act_name(ar_activation_t a) {
  static const char *const n[] = {"NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH", "SIGN_BIT"};
  return n[a];
}
static const char *pad_name(ar_padding_t p) { return p == AR_PADDING_SAME ? "SAME" : "VALID"; }

/* The manifest's op_options "kinds" string of an operator, for the ops whose kinds are made of
 * builtin options (and the filter shape); NULL for the others. */
static bool option_kind(const ar_subgraph_t *sg, const ar_operator_t *op, char *buf, size_t n) {
  const ar_options_t *o = &op->options;
  const ar_tensor_t *filter = op->n_inputs > 1 && op->inputs[1] >= 0 ? &sg->tensors[op->inputs[1]] : NULL;
  switch (op->op) {
  case AR_OP_CONV_2D:
    snprintf(buf, n, "kernel=%dx%d padding=%s stride=%dx%d dilation=%dx%d act=%s", filter->dims[1],
             filter->dims[2], pad_name(o->conv2d.padding), o->conv2d.stride_h, o->conv2d.stride_w,
             o->conv2d.dilation_h, o->conv2d.dilation_w, act_name(o->conv2d.activation));
    return true;
  case AR_OP_DEPTHWISE_CONV_2D:
    snprintf(buf, n, "kernel=%dx%d padding=%s stride=%dx%d dilation=%dx%d depth_multiplier=%d act=%s",
             filter->dims[1], filter->dims[2], pad_name(o->depthwise.padding), o->depthwise.stride_h,
             o->depthwise.stride_w, o->depthwise.dilation_h, o->depthwise.dilation_w,
             o->depthwise.depth_multiplier, act_name(o->depthwise.activation));
    return true;
  case AR_OP_MAX_POOL_2D:
  case AR_OP_AVERAGE_POOL_2D:
    snprintf(buf, n, "padding=%s stride=%dx%d pool=%dx%d act=%s", pad_name(o->pool2d.padding),
             o->pool2d.stride_h, o->pool2d.stride_w, o->pool2d.filter_h, o->pool2d.filter_w,
             act_name(o->pool2d.activation));
    return true;
  case AR_OP_CONCATENATION:
    snprintf(buf, n, "axis=%d act=%s", o->concatenation.axis, act_name(o->concatenation.activation));
    return true;
  case AR_OP_FULLY_CONNECTED:
    snprintf(buf, n, "keep_num_dims=%s act=%s", o->fully_connected.keep_num_dims ? "True" : "False",
             act_name(o->fully_connected.activation));
    return true;
  case AR_OP_RESIZE_BILINEAR:
    snprintf(buf, n, "align_corners=%s half_pixel_centers=%s",
             o->resize_bilinear.align_corners ? "True" : "False",
             o->resize_bilinear.half_pixel_centers ? "True" : "False");
    return true;
  case AR_OP_DEPTH_TO_SPACE:
    snprintf(buf, n, "block_size=%d", o->depth_to_space.block_size);
    return true;
  case AR_OP_MEAN: {
    const ar_tensor_t *axes = filter;
    size_t used = (size_t)snprintf(buf, n, "keep_dims=%s axes=[", o->reducer.keep_dims ? "True" : "False");
    for (uint64_t i = 0; axes->data && i < axes->data_bytes / 4; i++) {
      int32_t a;
      memcpy(&a, axes->data + 4 * i, 4);
      used += (size_t)snprintf(buf + used, n - used, i ? ", %d" : "%d", a);
    }
    snprintf(buf + used, n - used, "]");
    return true;
  }
  case AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS:
    snprintf(buf, n, "kernel=%dx%d padding=%s stride=%dx%d", filter->dims[1], filter->dims[2],
             pad_name(o->transpose_conv.padding), o->transpose_conv.stride_h, o->transpose_conv.stride_w);
    return true;
  default:
    return false;
  }
}

/* Builtin and custom options decode to the manifest's per-op option kinds, with the same counts. */
START_TEST(test_options_match_manifest) {
  const char *stem = ar_test_models[_i];
  char path[4096], msg[AR_MSG_BYTES], kind[256], name[128];
  ar_model_t *m = NULL;
  ck_assert_int_eq(ar_model_load(ar_test_model_path(path, sizeof(path), stem), &m, msg, sizeof(msg)), 0);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  json_t *opts = json_object_get(json_array_get(json_object_get(manifest_model(stem), "subgraphs"), 0), "op_options");
  json_t *counts = json_object();
  int checked = 0;
  for (uint32_t i = 0; i < sg->n_operators; i++) {
    const ar_operator_t *op = &sg->operators[i];
    if (!option_kind(sg, op, kind, sizeof(kind))) continue;
    snprintf(name, sizeof(name), "%s%s", op->op == AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS ? "CUSTOM:" : "",
             ar_op_name(op->op));
    json_t *per = json_object_get(counts, name);
    if (!per) json_object_set_new(counts, name, per = json_object());
    json_t *c = json_object_get(per, kind);
    json_object_set_new(per, kind, json_integer(c ? json_integer_value(c) + 1 : 1));
    checked++;
  }
  const char *opname;
  json_t *per;
  json_object_foreach(counts, opname, per) {
    json_t *want = json_object_get(json_object_get(opts, opname), "kinds");
    ck_assert_msg(json_equal(per, want), "%s: %s option kinds differ: got %s", stem, opname,
                  json_dumps(per, JSON_COMPACT));
  }
  ck_assert_int_gt(checked, 0);
  json_decref(counts);
  ar_model_free(m);
}
END_TEST

/* A file that is not a model is refused after its 8-byte header: the rest of it (here a 1 GiB
 * sparse tail) is never read - the file offset stays at 8. */
START_TEST(test_junk_file_refused_after_header) {
  char tmp[] = "/tmp/check_loader_junk_XXXXXX";
  int fd = mkstemp(tmp);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, "\x10\0\0\0JUNKjunkjunk", 16), 16);
  ck_assert_int_eq(ftruncate(fd, 1ll << 30), 0);
  ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
  char msg[AR_MSG_BYTES];
  ar_model_t *m = NULL;
  ck_assert_int_eq(ar_model_load_fd(fd, 0, &m, msg, sizeof(msg)), AR_EMODEL);
  ck_assert_str_eq(msg, "file: no \"TFL3\" file identifier at byte 4 (not a TensorFlow Lite file)");
  ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 8);
  /* The identifier is right but the root offset points past the end. */
  ck_assert_int_eq(pwrite(fd, "\xf0\xff\xff\x7fTFL3", 8, 0), 8);
  ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
  ck_assert_int_eq(ar_model_load_fd(fd, 0, &m, msg, sizeof(msg)), AR_EMODEL);
  ck_assert_str_eq(msg, "file: root table offset 2147483632 lies outside the file (1073741824 bytes)");
  ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 8);
  ck_assert_ptr_null(m);
  close(fd);
  unlink(tmp);
}
END_TEST

START_TEST(test_load_file_errors) {
  char msg[AR_MSG_BYTES];
  ar_model_t *m = NULL;
  ck_assert_int_eq(ar_model_load("/nonexistent/x.tflite", &m, msg, sizeof(msg)), AR_ENOENT);
  ck_assert_ptr_null(m);
  ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/x.tflite"));
  ck_assert_int_eq(ar_model_load("/", &m, msg, sizeof(msg)), AR_EIO);
  ck_assert_ptr_nonnull(strstr(msg, "not a regular file"));
  char tmp[] = "/tmp/check_loader_XXXXXX";
  int fd = mkstemp(tmp);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_int_eq(ar_model_load(tmp, &m, msg, sizeof(msg)), AR_EMODEL);
  ck_assert_ptr_nonnull(strstr(msg, "file is empty"));
  unlink(tmp);
  /* A FIFO with no writer: rejected at once, never blocking the caller (a daemon worker). */
  char dir[] = "/tmp/check_loader_fifo_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char fifo[sizeof dir + 16];
  snprintf(fifo, sizeof fifo, "%s/model", dir);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  alarm(20);   /* a blocking open would hang here: fail loudly instead */
  ck_assert_int_eq(ar_model_load(fifo, &m, msg, sizeof(msg)), AR_EIO);
  alarm(0);
  ck_assert_ptr_nonnull(strstr(msg, "not a regular file"));
  unlink(fifo);
  rmdir(dir);
  ck_assert_int_eq(ar_model_load("/dev/null", &m, msg, sizeof(msg)), AR_EIO);
  ck_assert_ptr_nonnull(strstr(msg, "not a regular file"));
  ck_assert_int_eq(ar_model_load_buffer(NULL, 0, &m, NULL, 0), AR_EMODEL);   /* msg may be NULL */
  ar_model_free(NULL);
}
END_TEST

/* ---------------------------------------------------------------- malformed corpus */

/* Every truncation of a real model is rejected as running past the (shorter) file. */
START_TEST(test_truncations) {
  static const char *const stems[] = {"face_detection_short_range", "selfie_segmentation"};
  const char *stem = stems[_i];
  size_t len;
  uint8_t *full = read_model(stem, &len);
  uint64_t seed = 0x5eed0001 + (uint64_t)_i;
  int cases = 0;
  for (size_t k = 0; k < 700; k++) {
    size_t cut;
    if (k < 80) cut = k;                                   /* header and root table */
    else if (k < 500) cut = 80 + (k - 80) * (len - 81) / 420;   /* a sweep over the whole file */
    else cut = (size_t)(rng_next(&seed) % len);            /* 200 random lengths */
    uint8_t *buf = malloc(cut ? cut : 1);
    memcpy(buf, full, cut);
    char label[64], want[64];
    snprintf(label, sizeof(label), "%s truncated to %zu", stem, cut);
    snprintf(want, sizeof(want), "the file (%zu bytes)", cut);
    expect_reject_buf(buf, cut, AR_EMODEL, want, label);
    free(buf);
    cases++;
  }
  ck_assert_int_eq(cases, 700);
  free(full);
}
END_TEST

START_TEST(test_corrupt_root_and_identifier) {
  mfile_t f;
  mf_open(&f, "face_detection_short_range");
  put_u32(&f, 0, 0xfffffff0u);
  expect_reject(&f, AR_EMODEL, "root table: table at offset 4294967280 lies outside the file", "root far");
  put_u32(&f, 0, (uint32_t)f.model.pos + 2);
  expect_reject(&f, AR_EMODEL, "is not 4-byte aligned", "root unaligned");
  put_u32(&f, 0, (uint32_t)f.model.pos);
  memcpy(f.buf + 4, "XYZW", 4);
  expect_reject(&f, AR_EMODEL, "no \"TFL3\" file identifier at byte 4", "identifier");
  mf_close(&f);
}
END_TEST

START_TEST(test_corrupt_vtables) {
  mfile_t f;
  char want[160];
  mf_open(&f, "face_detection_short_range");
  /* Model table's soffset sends its vtable past the end, then before the start. */
  int32_t old;
  memcpy(&old, f.buf + f.model.pos, 4);
  put_i32(&f, f.model.pos, (int32_t)((int64_t)f.model.pos - (int64_t)f.len - 64));
  snprintf(want, sizeof(want), "vtable of the table at offset %llu is at %llu, outside the file",
           (unsigned long long)f.model.pos, (unsigned long long)f.len + 64);
  expect_reject(&f, AR_EMODEL, want, "vtable past end");
  put_i32(&f, f.model.pos, (int32_t)f.model.pos + 8);
  expect_reject(&f, AR_EMODEL, "is at -8, outside the file", "vtable before start");
  put_i32(&f, f.model.pos, old);

  ar_fb_table_t t = tensor_tab(&f, 0);
  uint16_t vt_bytes, obj_bytes;
  memcpy(&vt_bytes, f.buf + t.vtable, 2);
  memcpy(&obj_bytes, f.buf + t.vtable + 2, 2);
  put_u16(&f, t.vtable, 65535);
  snprintf(want, sizeof(want), "vtable at offset %llu has size 65535", (unsigned long long)t.vtable);
  expect_reject(&f, AR_EMODEL, want, "odd vtable size");
  put_u16(&f, t.vtable, 2);
  snprintf(want, sizeof(want), "vtable at offset %llu has size 2", (unsigned long long)t.vtable);
  expect_reject(&f, AR_EMODEL, want, "short vtable");
  put_u16(&f, t.vtable, vt_bytes);
  put_u16(&f, t.vtable + 2, 2);
  expect_reject(&f, AR_EMODEL, "declares 2 object bytes", "object size below 4");
  put_u16(&f, t.vtable + 2, obj_bytes);
  /* A field entry pointing outside the object. */
  uint64_t entry = ar_fb_vtable_entry_pos(&t, AR_FB_TENSOR_SHAPE);
  ck_assert_uint_ne(entry, 0);
  put_u16(&f, entry, 0xfff0);
  snprintf(want, sizeof(want), "is at object offset 65520, size 4, but the object has %u bytes", obj_bytes);
  expect_reject(&f, AR_EMODEL, want, "field outside object");
  mf_close(&f);
}
END_TEST

START_TEST(test_corrupt_vectors_and_strings) {
  mfile_t f;
  mf_open(&f, "face_detection_short_range");
  ar_fb_table_t t = tensor_tab(&f, 0);
  ar_fb_vec_t shape = vec_of(&f, &t, AR_FB_TENSOR_SHAPE, 4);
  put_u32(&f, shape.pos - 4, 0x40000000u);
  expect_reject(&f, AR_EMODEL, "has 1073741824 elements of 4 bytes, which run past the end of the file",
                "huge vector");
  put_u32(&f, shape.pos - 4, shape.count);
  const char *name;
  uint32_t nlen;
  ck_assert_int_eq(ar_fb_get_string(&f.fb, &t, AR_FB_TENSOR_NAME, "test", &name, &nlen), 0);
  uint64_t nul = (uint64_t)((const uint8_t *)name - f.buf) + nlen;
  put_u8(&f, nul, 'A');
  expect_reject(&f, AR_EMODEL, "subgraph 0, tensor 0: Tensor.name: string at offset", "unterminated name");
  expect_reject(&f, AR_EMODEL, "is not NUL-terminated inside the file", "unterminated name");
  put_u8(&f, nul, 0);
  /* A name that is not UTF-8 (protobuf and jansson would refuse it later): refused at load, naming
   * the tensor, the field and the file offset of the first bad byte. */
  if (nlen >= 2) {
    uint64_t at = (uint64_t)((const uint8_t *)name - f.buf) + 1;
    uint8_t was = f.buf[at];
    char want[160];
    snprintf(want, sizeof(want), "subgraph 0, tensor 0: Tensor.name: string at offset %llu (%u bytes) is not "
             "valid UTF-8: the sequence at byte 1 (file offset %llu, 0xff) is malformed",
             (unsigned long long)((const uint8_t *)name - f.buf) - 4, nlen, (unsigned long long)at);
    put_u8(&f, at, 0xff);
    expect_reject(&f, AR_EMODEL, want, "name not UTF-8");
    put_u8(&f, at, 0x1b);   /* a control byte is valid UTF-8: escaped where printed, not refused */
    char msg[AR_MSG_BYTES];
    ar_model_t *m = NULL;
    ck_assert_int_eq(ar_model_load_buffer(f.buf, f.len, &m, msg, sizeof(msg)), 0);
    ar_model_free(m);
    put_u8(&f, at, was);
  }
  /* No subgraphs. */
  ar_fb_vec_t sgs = vec_of(&f, &f.model, AR_FB_MODEL_SUBGRAPHS, 4);
  put_u32(&f, sgs.pos - 4, 0);
  expect_reject(&f, AR_EMODEL, "model has 0 subgraphs", "no subgraphs");
  mf_close(&f);
}
END_TEST

/* Index of the first operator whose input `slot` is a non-constant tensor, and of a constant. */
static uint32_t first_op_with_activation_input(const ar_subgraph_t *sg, int slot) {
  for (uint32_t i = 0; i < sg->n_operators; i++) {
    const ar_operator_t *op = &sg->operators[i];
    if (op->n_inputs > slot && op->inputs[slot] >= 0 && !sg->tensors[op->inputs[slot]].data) return i;
  }
  ck_abort_msg("no operator with an activation input %d", slot);
  return 0;
}

START_TEST(test_indices_out_of_range) {
  mfile_t f;
  char want[256];
  mf_open(&f, "face_detection_short_range");
  const ar_subgraph_t *sg = &f.decoded->subgraphs[0];
  /* The exact example of the spec: an operator input past the tensor table. */
  uint32_t conv = 0;
  while (sg->operators[conv].op != AR_OP_CONV_2D || conv < 12) conv++;
  ar_fb_table_t ot = operator_tab(&f, conv);
  ar_fb_vec_t in = vec_of(&f, &ot, AR_FB_OP_INPUTS, 4);
  int32_t saved = sg->operators[conv].inputs[1];
  put_i32(&f, in.pos + 4, 900);
  snprintf(want, sizeof(want), "operator %u (CONV_2D): input 1 is tensor 900, but subgraph 0 has %u tensors",
           conv, sg->n_tensors);
  expect_reject(&f, AR_EMODEL, want, "input index");
  put_i32(&f, in.pos + 4, -5);
  snprintf(want, sizeof(want), "operator %u (CONV_2D): input 1 is tensor -5", conv);
  expect_reject(&f, AR_EMODEL, want, "negative input index");
  put_i32(&f, in.pos + 4, saved);
  ar_fb_vec_t out = vec_of(&f, &ot, AR_FB_OP_OUTPUTS, 4);
  put_i32(&f, out.pos, (int32_t)sg->n_tensors);
  snprintf(want, sizeof(want), "operator %u (CONV_2D): output 0 is tensor %u, but subgraph 0 has", conv,
           sg->n_tensors);
  expect_reject(&f, AR_EMODEL, want, "output index");
  put_i32(&f, out.pos, sg->operators[conv].outputs[0]);

  /* Graph input and output indices. */
  ar_fb_table_t sgt = subgraph0(&f);
  ar_fb_vec_t gin = vec_of(&f, &sgt, AR_FB_SUBGRAPH_INPUTS, 4);
  put_i32(&f, gin.pos, 5000);
  snprintf(want, sizeof(want), "subgraph 0: input 0 is tensor 5000, but the subgraph has %u tensors", sg->n_tensors);
  expect_reject(&f, AR_EMODEL, want, "graph input index");
  put_i32(&f, gin.pos, sg->inputs[0]);
  ar_fb_vec_t gout = vec_of(&f, &sgt, AR_FB_SUBGRAPH_OUTPUTS, 4);
  put_i32(&f, gout.pos + 4, -1);
  expect_reject(&f, AR_EMODEL, "subgraph 0: output 1 is tensor -1", "graph output index");
  put_i32(&f, gout.pos + 4, sg->outputs[1]);

  /* Buffer index of a constant tensor. */
  uint32_t ct = 0;
  while (!sg->tensors[ct].data) ct++;
  ar_fb_table_t tt = tensor_tab(&f, ct);
  uint64_t bpos = field_at(&f, &tt, AR_FB_TENSOR_BUFFER, 4);
  put_u32(&f, bpos, 100000);
  snprintf(want, sizeof(want), "tensor %u (%s): buffer 100000, but the model has %u buffers", ct,
           sg->tensors[ct].name, f.decoded->n_buffers);
  expect_reject(&f, AR_EMODEL, want, "buffer index");
  put_u32(&f, bpos, sg->tensors[ct].buffer);

  /* Opcode index (an operator whose opcode_index field is stored, i.e. not 0). */
  uint32_t oi = 0;
  while (sg->operators[oi].opcode_index == 0) oi++;
  ot = operator_tab(&f, oi);
  uint64_t opos = field_at(&f, &ot, AR_FB_OP_OPCODE_INDEX, 4);
  put_u32(&f, opos, 5000);
  snprintf(want, sizeof(want), "operator %u: opcode index 5000, but the model has %u operator codes", oi,
           f.decoded->n_opcodes);
  expect_reject(&f, AR_EMODEL, want, "opcode index");
  put_u32(&f, opos, sg->operators[oi].opcode_index);

  /* Metadata-free model: the unchanged copy loads again after all the restores. */
  char msg[AR_MSG_BYTES];
  ar_model_t *m = NULL;
  ck_assert_int_eq(ar_model_load_buffer(f.buf, f.len, &m, msg, sizeof(msg)), 0);
  ar_model_free(m);
  mf_close(&f);
}
END_TEST

START_TEST(test_bad_dims_and_sizes) {
  mfile_t f;
  char want[256];
  mf_open(&f, "face_detection_short_range");
  const ar_subgraph_t *sg = &f.decoded->subgraphs[0];
  /* Graph input 0 is an activation of rank 4. */
  uint32_t ti = (uint32_t)sg->inputs[0];
  ck_assert_int_eq(sg->tensors[ti].rank, 4);
  ar_fb_table_t t = tensor_tab(&f, ti);
  ar_fb_vec_t shape = vec_of(&f, &t, AR_FB_TENSOR_SHAPE, 4);
  uint8_t saved[16];
  memcpy(saved, f.buf + shape.pos, 16);
  put_i32(&f, shape.pos + 4, -1);
  snprintf(want, sizeof(want), "tensor %u (%s): shape dim 1 is -1", ti, sg->tensors[ti].name);
  expect_reject(&f, AR_EMODEL, want, "negative dim");
  for (int d = 0; d < 4; d++) put_i32(&f, shape.pos + 4 * d, 2147483647);
  expect_reject(&f, AR_EOVERFLOW, "byte size of shape [2147483647,2147483647,2147483647,2147483647] x 4 "
                "bytes overflows 64 bits", "int32 max dims");
  for (int d = 0; d < 4; d++) put_i32(&f, shape.pos + 4 * d, 65536);
  expect_reject(&f, AR_EOVERFLOW, "[65536,65536,65536,65536] x 4 bytes overflows 64 bits", "2^64 elements");
  put_i32(&f, shape.pos + 12, 1);
  expect_reject(&f, AR_EOVERFLOW, "shape [65536,65536,65536,1] needs 1125899906842624 bytes, more than the",
                "tensor beyond the size cap");
  /* 2^31 elements (a 65536x32768 float map, 8 GiB, under the byte cap) is refused like TFLite;
   * 2^31 - 1 elements (a prime, so one dim) still loads. */
  put_i32(&f, shape.pos, 1);
  put_i32(&f, shape.pos + 4, 1);
  put_i32(&f, shape.pos + 8, 65536);
  put_i32(&f, shape.pos + 12, 65536);
  expect_reject(&f, AR_EOVERFLOW, "shape [1,1,65536,65536] has 4294967296 elements, more than 2^31 - 1",
                "2^32 elements");
  put_i32(&f, shape.pos + 12, 32768);
  expect_reject(&f, AR_EOVERFLOW, "shape [1,1,65536,32768] has 2147483648 elements, more than 2^31 - 1",
                "2^31 elements");
  put_i32(&f, shape.pos + 8, 1);
  put_i32(&f, shape.pos + 12, 2147483647);
  {
    char m2[AR_MSG_BYTES];
    ar_model_t *big = NULL;
    ck_assert_msg(ar_model_load_buffer(f.buf, f.len, &big, m2, sizeof(m2)) == 0, "2^31 - 1 elements: %s", m2);
    ck_assert_uint_eq(big->subgraphs[0].tensors[ti].bytes, 4ull * 2147483647ull);
    ar_model_free(big);
  }
  memcpy(f.buf + shape.pos, saved, 16);

  /* A constant whose buffer no longer matches its shape. */
  uint32_t ct = 0;
  while (!sg->tensors[ct].data || sg->tensors[ct].rank < 1) ct++;
  t = tensor_tab(&f, ct);
  shape = vec_of(&f, &t, AR_FB_TENSOR_SHAPE, 4);
  int32_t d0 = sg->tensors[ct].dims[0];
  put_i32(&f, shape.pos, d0 + 1);
  snprintf(want, sizeof(want), "tensor %u (%s): constant buffer %u holds %llu bytes, but", ct,
           sg->tensors[ct].name, sg->tensors[ct].buffer, (unsigned long long)sg->tensors[ct].data_bytes);
  expect_reject(&f, AR_EMODEL, want, "constant size");
  put_i32(&f, shape.pos, d0);
  /* Unknown tensor type. */
  uint64_t typ = field_at(&f, &t, AR_FB_TENSOR_TYPE, 1);
  uint8_t old = f.buf[typ];
  put_u8(&f, typ, 42);
  snprintf(want, sizeof(want), "tensor %u (%s): type 42 is not a TFLite TensorType", ct, sg->tensors[ct].name);
  expect_reject(&f, AR_EMODEL, want, "tensor type");
  put_u8(&f, typ, 5);
  expect_reject(&f, AR_EUNSUPPORTED, "dtype STRING is not supported", "string tensor");
  put_u8(&f, typ, old);
  mf_close(&f);
}
END_TEST

/* Index of the operator code used by operator `oi`, and its table. */
static ar_fb_table_t opcode_tab(mfile_t *f, uint32_t ci) {
  return tab_elem(f, &f->model, AR_FB_MODEL_OPERATOR_CODES, ci);
}

static uint32_t first_op_using(const ar_subgraph_t *sg, uint32_t ci) {
  for (uint32_t i = 0; i < sg->n_operators; i++)
    if (sg->operators[i].opcode_index == ci) return i;
  ck_abort_msg("opcode %u unused", ci);
  return 0;
}

static uint32_t n_using(const ar_subgraph_t *sg, uint32_t ci) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < sg->n_operators; i++) n += sg->operators[i].opcode_index == ci;
  return n;
}

START_TEST(test_unknown_ops_and_versions) {
  mfile_t f;
  char want[256];
  mf_open(&f, "face_detection_short_range");
  const ar_model_t *dm = f.decoded;
  const ar_subgraph_t *sg = &dm->subgraphs[0];
  /* Unknown builtin: turn the RELU operator code into CONCAT_EMBEDDINGS (29), which no kernel
   * implements. */
  uint32_t ci = 0;
  while (dm->opcodes[ci].op != AR_OP_RELU) ci++;
  ar_fb_table_t oc = opcode_tab(&f, ci);
  uint64_t dep = 0, code = 0;
  ck_assert_int_eq(ar_fb_field_pos(&f.fb, &oc, AR_FB_OPCODE_DEPRECATED_BUILTIN_CODE, 1, "t", &dep), 0);
  ck_assert_int_eq(ar_fb_field_pos(&f.fb, &oc, AR_FB_OPCODE_BUILTIN_CODE, 4, "t", &code), 0);
  ck_assert(dep || code);
  if (dep) put_u8(&f, dep, 29);
  if (code) put_i32(&f, code, 29);
  snprintf(want, sizeof(want), "unsupported: CONCAT_EMBEDDINGS v1 (op%s %u", n_using(sg, ci) > 1 ? "s" : "", first_op_using(sg, ci));
  expect_reject(&f, AR_EUNSUPPORTED, want, "unknown builtin");
  /* A code past TFLite's table gets a numeric name. */
  if (code) {
    put_i32(&f, code, 400);
    snprintf(want, sizeof(want), "unsupported: BUILTIN_400 v1 (op%s %u", n_using(sg, ci) > 1 ? "s" : "", first_op_using(sg, ci));
    expect_reject(&f, AR_EUNSUPPORTED, want, "builtin beyond the schema");
  }
  if (dep) put_u8(&f, dep, 19);
  if (code) put_i32(&f, code, 19);
  /* Too-high version: DEQUANTIZE is stored as version 2 (so the field is present). */
  ci = 0;
  while (dm->opcodes[ci].op != AR_OP_DEQUANTIZE) ci++;
  oc = opcode_tab(&f, ci);
  uint64_t ver = field_at(&f, &oc, AR_FB_OPCODE_VERSION, 4);
  put_i32(&f, ver, 99);
  snprintf(want, sizeof(want), "unsupported: DEQUANTIZE v99 [version 99 is above the highest supported version %d] "
           "(op%s %u", ar_op_max_version(AR_OP_DEQUANTIZE), n_using(sg, ci) > 1 ? "s" : "", first_op_using(sg, ci));
  expect_reject(&f, AR_EUNSUPPORTED, want, "version too high");
  put_i32(&f, ver, 0);
  snprintf(want, sizeof(want), "operator code %u: version 0 is below 1", ci);
  expect_reject(&f, AR_EMODEL, want, "version 0");
  put_i32(&f, ver, 2);
  mf_close(&f);

  /* Unknown custom op: rename MediaPipe's transposed convolution. */
  mf_open(&f, "selfie_segmentation");
  dm = f.decoded;
  ci = 0;
  while (dm->opcodes[ci].op != AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS) ci++;
  oc = opcode_tab(&f, ci);
  const char *cc;
  uint32_t cclen;
  ck_assert_int_eq(ar_fb_get_string(&f.fb, &oc, AR_FB_OPCODE_CUSTOM_CODE, "t", &cc, &cclen), 0);
  f.buf[(const uint8_t *)cc - f.buf + cclen - 1] = 'X';
  snprintf(want, sizeof(want), "unsupported: Convolution2DTransposeBiaX v1 (op%s %u",
           n_using(&dm->subgraphs[0], ci) > 1 ? "s" : "", first_op_using(&dm->subgraphs[0], ci));
  expect_reject(&f, AR_EUNSUPPORTED, want, "unknown custom op");
  f.buf[(const uint8_t *)cc - f.buf + cclen - 1] = 's';
  /* Its custom options must be exactly 12 bytes and valid. */
  uint32_t oi = first_op_using(&dm->subgraphs[0], ci);
  ar_fb_table_t ot = operator_tab(&f, oi);
  ar_fb_vec_t co = vec_of(&f, &ot, AR_FB_OP_CUSTOM_OPTIONS, 1);
  ck_assert_uint_eq(co.count, 12);
  put_u32(&f, co.pos - 4, 8);
  snprintf(want, sizeof(want), "operator %u (CUSTOM:Convolution2DTransposeBias): custom_options has 8 bytes, "
           "expected 12", oi);
  expect_reject(&f, AR_EMODEL, want, "custom options length");
  put_u32(&f, co.pos - 4, 12);
  put_i32(&f, co.pos, 7);
  expect_reject(&f, AR_EMODEL, "custom_options padding is 7", "custom options padding");
  put_i32(&f, co.pos, 1);
  put_i32(&f, co.pos + 4, 0);
  expect_reject(&f, AR_EMODEL, "stride_width is 0 (must be >= 1)", "custom options stride");
  put_i32(&f, co.pos + 4, 2);
  mf_close(&f);
}
END_TEST

START_TEST(test_dataflow_errors) {
  mfile_t f;
  char want[256];
  mf_open(&f, "face_detection_short_range");
  const ar_subgraph_t *sg = &f.decoded->subgraphs[0];
  /* Forward reference: an operator reads the output of the last operator. */
  uint32_t j = first_op_with_activation_input(sg, 0);
  uint32_t last = sg->n_operators - 1;
  int32_t later = sg->operators[last].outputs[0];
  ar_fb_table_t ot = operator_tab(&f, j);
  ar_fb_vec_t in = vec_of(&f, &ot, AR_FB_OP_INPUTS, 4);
  put_i32(&f, in.pos, later);
  snprintf(want, sizeof(want), "operator %u (%s): input 0 is tensor %d (%s), which is produced later, by operator %u",
           j, op_name_at(&f, j), later, sg->tensors[later].name, last);
  expect_reject(&f, AR_EMODEL, want, "forward reference");
  put_i32(&f, in.pos, sg->operators[j].inputs[0]);
  /* An operator writing a constant. */
  uint32_t ct = 0;
  while (!sg->tensors[ct].data) ct++;
  ar_fb_vec_t out = vec_of(&f, &ot, AR_FB_OP_OUTPUTS, 4);
  put_i32(&f, out.pos, (int32_t)ct);
  snprintf(want, sizeof(want), "operator %u (%s): output 0 is tensor %u (%s), which is a constant", j,
           op_name_at(&f, j), ct, sg->tensors[ct].name);
  expect_reject(&f, AR_EMODEL, want, "constant output");
  /* Two operators writing the same tensor. */
  uint32_t k = j + 1;
  put_i32(&f, out.pos, sg->operators[k].outputs[0]);
  snprintf(want, sizeof(want), "already written by operator %u", j);
  expect_reject(&f, AR_EMODEL, want, "double write");
  put_i32(&f, out.pos, sg->operators[j].outputs[0]);
  mf_close(&f);
}
END_TEST

START_TEST(test_bad_builtin_options) {
  mfile_t f;
  char want[256];
  mf_open(&f, "face_detection_short_range");
  const ar_subgraph_t *sg = &f.decoded->subgraphs[0];
  uint32_t conv = 0;
  while (sg->operators[conv].op != AR_OP_CONV_2D) conv++;
  ar_fb_table_t ot = operator_tab(&f, conv);
  uint64_t type = field_at(&f, &ot, AR_FB_OP_BUILTIN_OPTIONS_TYPE, 1);
  put_u8(&f, type, AR_FB_OPTIONS_POOL2D);
  snprintf(want, sizeof(want), "operator %u (CONV_2D v1): builtin_options has union type 5, expected 1", conv);
  /* the label in option messages has no version */
  snprintf(want, sizeof(want), "operator %u (CONV_2D): builtin_options has union type 5, expected 1", conv);
  expect_reject(&f, AR_EMODEL, want, "options union type");
  put_u8(&f, type, AR_FB_OPTIONS_CONV2D);
  ar_fb_table_t opt;
  bool present;
  ck_assert_int_eq(ar_fb_get_table(&f.fb, &ot, AR_FB_OP_BUILTIN_OPTIONS, "t", &opt, &present), 0);
  ck_assert(present);
  uint64_t sw = field_at(&f, &opt, AR_FB_CONV_STRIDE_W, 4);
  put_i32(&f, sw, 0);
  snprintf(want, sizeof(want), "operator %u (CONV_2D): stride_w is 0 (must be >= 1)", conv);
  expect_reject(&f, AR_EMODEL, want, "zero stride");
  put_i32(&f, sw, sg->operators[conv].options.conv2d.stride_w);
  uint64_t pentry = ar_fb_vtable_entry_pos(&opt, AR_FB_CONV_PADDING);
  uint64_t ppos = 0;
  ck_assert_int_eq(ar_fb_field_pos(&f.fb, &opt, AR_FB_CONV_PADDING, 1, "t", &ppos), 0);
  if (ppos) {   /* padding VALID stored; SAME is the default and may be absent */
    uint8_t old = f.buf[ppos];
    put_u8(&f, ppos, 7);
    snprintf(want, sizeof(want), "operator %u (CONV_2D): padding is 7", conv);
    expect_reject(&f, AR_EMODEL, want, "padding value");
    put_u8(&f, ppos, old);
  }
  (void)pentry;
  uint64_t apos = 0;
  ck_assert_int_eq(ar_fb_field_pos(&f.fb, &opt, AR_FB_CONV_ACTIVATION, 1, "t", &apos), 0);
  if (apos) {
    uint8_t old = f.buf[apos];
    put_u8(&f, apos, 9);
    expect_reject(&f, AR_EMODEL, "fused_activation_function is 9", "activation value");
    put_u8(&f, apos, old);
  }
  mf_close(&f);
}
END_TEST

START_TEST(test_bad_sparsity) {
  mfile_t f;
  char want[256];
  mf_open(&f, "face_detection_full_range_sparse");
  const ar_subgraph_t *sg = &f.decoded->subgraphs[0];
  uint32_t ti = 0;
  while (!sg->tensors[ti].sparsity) ti++;
  const ar_sparsity_t *sp = sg->tensors[ti].sparsity;
  int32_t d = sp->n_dim_metadata - 1;
  ck_assert_int_eq(sp->dim_metadata[d].format, AR_DIM_SPARSE_CSR);
  ck_assert_int_eq(sp->dim_metadata[d].array_indices.type, AR_IDX_UINT8);
  uint64_t seg = (uint64_t)((const uint8_t *)sp->dim_metadata[d].array_segments.data - f.decoded->file);
  uint64_t idx = (uint64_t)((const uint8_t *)sp->dim_metadata[d].array_indices.data - f.decoded->file);
  uint32_t nseg = sp->dim_metadata[d].array_segments.length;
  /* The last segment offset no longer equals the number of indices. */
  uint8_t old = f.buf[seg + nseg - 1];
  put_u8(&f, seg + nseg - 1, (uint8_t)(old - 1));
  snprintf(want, sizeof(want), "tensor %u (%s): sparsity dim_metadata %d array_segments end at %u, but there are %u",
           ti, sg->tensors[ti].name, d, old - 1, sp->dim_metadata[d].array_indices.length);
  expect_reject(&f, AR_EMODEL, want, "segments total");
  put_u8(&f, seg + nseg - 1, old);
  /* Segments must not decrease. */
  uint8_t s1 = f.buf[seg + 1];
  put_u8(&f, seg + 1, 250);
  expect_reject(&f, AR_EMODEL, "array_segments[1] = 250 is not a non-decreasing offset", "segments order");
  put_u8(&f, seg + 1, s1);
  /* An index outside its dimension. */
  uint8_t i0 = f.buf[idx];
  put_u8(&f, idx, 200);
  snprintf(want, sizeof(want), "array_indices[0] = 200 is outside the dimension of size %d",
           sg->tensors[ti].dims[sp->traversal_order[d]]);
  expect_reject(&f, AR_EMODEL, want, "index range");
  put_u8(&f, idx, i0);
  /* The constant no longer holds the stored values the metadata describes. */
  ar_fb_table_t tt = tensor_tab(&f, ti);
  ar_fb_vec_t shape = vec_of(&f, &tt, AR_FB_TENSOR_SHAPE, 4);
  put_i32(&f, shape.pos, sg->tensors[ti].dims[0] * 2);
  snprintf(want, sizeof(want), "tensor %u (%s): sparsity dim_metadata 0 is dense with size %d, expected %d", ti,
           sg->tensors[ti].name, sg->tensors[ti].dims[0], sg->tensors[ti].dims[0] * 2);
  expect_reject(&f, AR_EMODEL, want, "dense size");
  put_i32(&f, shape.pos, sg->tensors[ti].dims[0]);
  mf_close(&f);
}
END_TEST

/* ---------------------------------------------------------------- synthetic model, 64-bit buffers */

/* A small FlatBuffer writer for tests: objects are appended front to back, parents before
 * children, and uoffsets are patched once the child's position is known (they point forward). */
typedef struct wb { uint8_t *b; size_t n, cap; } wb_t;

static void wb_reserve(wb_t *w, size_t k) {
  if (w->n + k <= w->cap) return;
  w->cap = (w->n + k) * 2 + 256;
  w->b = realloc(w->b, w->cap);
  ck_assert(w->b != NULL);
}
static size_t wb_put(wb_t *w, const void *p, size_t k) {
  wb_reserve(w, k);
  size_t pos = w->n;
  if (p) memcpy(w->b + pos, p, k);
  else memset(w->b + pos, 0, k);
  w->n += k;
  return pos;
}
static void wb_align(wb_t *w, size_t a) { while (w->n % a) wb_put(w, NULL, 1); }
static void wb_set32(wb_t *w, size_t pos, uint32_t v) { memcpy(w->b + pos, &v, 4); }
static void wb_link(wb_t *w, size_t slot, size_t target) { wb_set32(w, slot, (uint32_t)(target - slot)); }

typedef struct wf { int id, size; uint64_t val; bool ref; size_t slot; } wf_t;

static size_t wb_table(wb_t *w, wf_t *f, int nf) {
  int maxid = -1;
  uint16_t offs[32];
  size_t obj = 4;
  for (int i = 0; i < nf; i++) {
    if (f[i].id > maxid) maxid = f[i].id;
    obj = (obj + (size_t)f[i].size - 1) / (size_t)f[i].size * (size_t)f[i].size;
    offs[i] = (uint16_t)obj;
    obj += (size_t)f[i].size;
  }
  wb_align(w, 2);
  size_t vt = w->n;
  uint16_t vtb = (uint16_t)(4 + 2 * (maxid + 1)), objb = (uint16_t)obj;
  wb_put(w, &vtb, 2);
  wb_put(w, &objb, 2);
  size_t entries = wb_put(w, NULL, 2 * (size_t)(maxid + 1));
  for (int i = 0; i < nf; i++) memcpy(w->b + entries + 2 * f[i].id, &offs[i], 2);
  wb_align(w, 8);
  size_t t = wb_put(w, NULL, obj);
  int32_t soff = (int32_t)(t - vt);
  memcpy(w->b + t, &soff, 4);
  for (int i = 0; i < nf; i++) {
    if (f[i].ref) f[i].slot = t + offs[i];
    else memcpy(w->b + t + offs[i], &f[i].val, (size_t)f[i].size);   /* little-endian low bytes */
  }
  return t;
}
static size_t wb_vec(wb_t *w, const void *e, uint32_t n, size_t esz) {
  wb_align(w, 4);
  size_t pos = wb_put(w, &n, 4);
  wb_put(w, e, n * esz);
  return pos;
}
static size_t wb_string(wb_t *w, const char *s) {
  uint32_t n = (uint32_t)strlen(s);
  size_t pos = wb_vec(w, s, n, 1);
  wb_put(w, NULL, 1);
  return pos;
}
/* Vector of n uoffsets; returns the slot of element 0 (slot i = +4i). */
static size_t wb_refs(wb_t *w, uint32_t n, size_t *vecpos) {
  size_t pos = wb_vec(w, NULL, n, 4);
  if (vecpos) *vecpos = pos;
  return pos + 4;
}

/* ADD(input [1,2,2,1], constant [1,2,2,1]) -> output, the constant in a Buffer using the 64-bit
 * offset/size form with its 16 bytes appended after the FlatBuffer. Returns where the data is. */
static size_t build_synthetic(wb_t *w, bool override, uint64_t off, uint64_t size, size_t *off_field) {
  memset(w, 0, sizeof(*w));
  size_t root = wb_put(w, NULL, 4);
  wb_put(w, "TFL3", 4);
  wf_t mf[] = {{0, 4, 3, false, 0}, {1, 4, 0, true, 0}, {2, 4, 0, true, 0}, {3, 4, 0, true, 0}, {4, 4, 0, true, 0}};
  size_t model = wb_table(w, mf, 5);
  wb_link(w, root, model);
  /* operator_codes: [ADD v1] */
  size_t s = wb_refs(w, 1, NULL);
  wb_link(w, mf[1].slot, s - 4);
  wf_t oc[] = {{0, 1, 0, false, 0}, {2, 4, 1, false, 0}, {3, 4, 0, false, 0}};
  wb_link(w, s, wb_table(w, oc, 3));
  /* subgraphs */
  s = wb_refs(w, 1, NULL);
  wb_link(w, mf[2].slot, s - 4);
  wf_t sg[] = {{0, 4, 0, true, 0}, {1, 4, 0, true, 0}, {2, 4, 0, true, 0}, {3, 4, 0, true, 0}, {4, 4, 0, true, 0}};
  wb_link(w, s, wb_table(w, sg, 5));
  size_t ts = wb_refs(w, 3, NULL);
  wb_link(w, sg[0].slot, ts - 4);
  static const char *const names[] = {"x", "bias", "y"};
  const int32_t shape[] = {1, 2, 2, 1};
  for (int i = 0; i < 3; i++) {
    wf_t tf[] = {{0, 4, 0, true, 0}, {1, 1, 0, false, 0}, {2, 4, i == 1 ? 1 : 0, false, 0}, {3, 4, 0, true, 0}};
    wb_link(w, ts + 4 * (size_t)i, wb_table(w, tf, 4));
    wb_link(w, tf[0].slot, wb_vec(w, shape, 4, 4));
    wb_link(w, tf[3].slot, wb_string(w, names[i]));
  }
  const int32_t gin[] = {0}, gout[] = {2}, oin[] = {0, 1};
  wb_link(w, sg[1].slot, wb_vec(w, gin, 1, 4));
  wb_link(w, sg[2].slot, wb_vec(w, gout, 1, 4));
  s = wb_refs(w, 1, NULL);
  wb_link(w, sg[3].slot, s - 4);
  wf_t of[] = {{0, 4, 0, false, 0}, {1, 4, 0, true, 0}, {2, 4, 0, true, 0}, {3, 1, AR_FB_OPTIONS_ADD, false, 0},
               {4, 4, 0, true, 0}};
  wb_link(w, s, wb_table(w, of, 5));
  wb_link(w, of[1].slot, wb_vec(w, oin, 2, 4));
  wb_link(w, of[2].slot, wb_vec(w, gout, 1, 4));
  wf_t add[] = {{0, 1, AR_ACT_RELU, false, 0}};
  wb_link(w, of[4].slot, wb_table(w, add, 1));
  wb_link(w, sg[4].slot, wb_string(w, "main"));
  /* buffers: [empty, {offset, size}] */
  s = wb_refs(w, 2, NULL);
  wb_link(w, mf[4].slot, s - 4);
  wf_t b0[] = {{0, 4, 0, true, 0}};
  size_t empty = wb_table(w, b0, 0);
  wb_link(w, s, empty);
  wf_t b1[] = {{1, 8, 0, false, 0}, {2, 8, 16, false, 0}};
  size_t b1t = wb_table(w, b1, 2);
  wb_link(w, s + 4, b1t);
  wb_link(w, mf[3].slot, wb_string(w, "synthetic"));
  /* Data after the FlatBuffer, 16-byte aligned as TFLite writes it. */
  wb_align(w, 16);
  const float bias[4] = {0.5f, -1.0f, 2.0f, 4.0f};
  size_t data = wb_put(w, bias, sizeof(bias));
  uint64_t offset_pos, size_pos;
  ar_fb_t fb;
  ar_fb_table_t bt;
  ar_fb_init(&fb, w->b, w->n, NULL, 0);
  ck_assert_int_eq(ar_fb_table_at(&fb, b1t, "t", &bt), 0);
  ck_assert_int_eq(ar_fb_field_pos(&fb, &bt, AR_FB_BUFFER_OFFSET, 8, "t", &offset_pos), 0);
  ck_assert_int_eq(ar_fb_field_pos(&fb, &bt, AR_FB_BUFFER_SIZE, 8, "t", &size_pos), 0);
  uint64_t o = override ? off : data, z = override ? size : 16;
  memcpy(w->b + offset_pos, &o, 8);
  memcpy(w->b + size_pos, &z, 8);
  if (off_field) *off_field = (size_t)offset_pos;
  return data;
}

/* Offset of the only occurrence of the string `needle` in buf[0..len) (asserts one exists). */
static uint64_t find_text(const uint8_t *buf, size_t len, const char *needle) {
  size_t n = strlen(needle), at = len;
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(buf + i, needle, n) == 0) {
      ck_assert_msg(at == len, "'%s' occurs twice in the model", needle);
      at = i;
    }
  ck_assert_msg(at < len, "'%s' not in the model", needle);
  return at;
}

/* A NUL byte inside a model string is refused at load like a malformed byte, naming the field and
 * the file offset: C readers (messages, protobuf-c, jansson) would see only the bytes before it,
 * so "in_x" and "in_x\0secret" would be the same name. Generated model: in_tensor_x -> RELU ->
 * out_tensor_y, subgraph "main", description "ar_tm_build". */
START_TEST(test_nul_in_strings_refused) {
  size_t len;
  uint8_t *buf = ar_tm_build_relu("in_tensor_x", "out_tensor_y", &len);
  char msg[AR_MSG_BYTES], want[256];
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(buf, len, &m, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_str_eq(m->subgraphs[0].tensors[0].name, "in_tensor_x");
  ar_model_free(m);
  static const struct { const char *text, *field; uint32_t at; } c[] = {
      {"in_tensor_x", "subgraph 0, tensor 0: Tensor.name", 2},
      {"out_tensor_y", "subgraph 0, tensor 1: Tensor.name", 11},   /* the last byte */
      {"main", "SubGraph.name", 0},                                  /* the first byte */
      {"ar_tm_build", "Model.description", 5},
  };
  for (size_t i = 0; i < AR_ARRAY_LEN(c); i++) {
    uint64_t pos = find_text(buf, len, c[i].text), bad = pos + c[i].at;
    uint8_t was = buf[bad];
    buf[bad] = 0;
    snprintf(want, sizeof want, "%s: string at offset %llu (%zu bytes) holds a NUL byte at byte %u (file offset "
             "%llu): C readers would see only its first %u bytes", c[i].field, (unsigned long long)pos - 4,
             strlen(c[i].text), c[i].at, (unsigned long long)bad, c[i].at);
    expect_reject_buf(buf, len, AR_EMODEL, want, c[i].text);
    buf[bad] = was;
  }
  /* Whichever comes first is reported: a malformed byte before a NUL, a NUL before a malformed byte. */
  uint64_t pos = find_text(buf, len, "in_tensor_x");
  buf[pos + 1] = 0xff;
  buf[pos + 4] = 0;
  snprintf(want, sizeof want, "Tensor.name: string at offset %llu (11 bytes) is not valid UTF-8: the sequence at "
           "byte 1 (file offset %llu, 0xff) is malformed", (unsigned long long)pos - 4, (unsigned long long)pos + 1);
  expect_reject_buf(buf, len, AR_EMODEL, want, "0xff then NUL");
  buf[pos + 1] = 0;
  buf[pos + 4] = 0xff;
  snprintf(want, sizeof want, "Tensor.name: string at offset %llu (11 bytes) holds a NUL byte at byte 1 (file "
           "offset %llu)", (unsigned long long)pos - 4, (unsigned long long)pos + 1);
  expect_reject_buf(buf, len, AR_EMODEL, want, "NUL then 0xff");
  free(buf);
}
END_TEST

START_TEST(test_buffer_64bit_form) {
  wb_t w;
  char msg[AR_MSG_BYTES];
  ar_model_t *m = NULL;
  size_t data = build_synthetic(&w, false, 0, 0, NULL);
  const char *seed_dir = getenv("AR_LOADER_SEED_DIR");   /* fuzzer seed: a small valid model */
  if (seed_dir && *seed_dir) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/synthetic_add.tflite", seed_dir);
    FILE *sf = fopen(path, "wb");
    ck_assert_msg(sf != NULL, "cannot write %s", path);
    ck_assert_uint_eq(fwrite(w.b, 1, w.n, sf), w.n);
    fclose(sf);
  }
  int rc = ar_model_load_buffer(w.b, w.n, &m, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "synthetic model: %s", msg);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  ck_assert_str_eq(m->description, "synthetic");
  ck_assert_str_eq(sg->name, "main");
  ck_assert_uint_eq(sg->n_tensors, 3);
  ck_assert_ptr_eq(sg->tensors[1].data, w.b + data);       /* points into the file, not copied */
  ck_assert_uint_eq(sg->tensors[1].data_bytes, 16);
  float v;
  memcpy(&v, sg->tensors[1].data + 12, 4);
  ck_assert_float_eq(v, 4.0f);
  ck_assert_uint_eq(m->constant_bytes, 16);
  ck_assert_int_eq(sg->operators[0].op, AR_OP_ADD);
  ck_assert_int_eq(sg->operators[0].options.elementwise.activation, AR_ACT_RELU);
  ck_assert_ptr_null(sg->tensors[0].data);
  ar_model_free(m);
  size_t len = w.n;
  free(w.b);

  char want[200];
  build_synthetic(&w, true, len - 8, 16, NULL);            /* runs 8 bytes past the end */
  snprintf(want, sizeof(want), "buffer 1: data at offset %zu, size 16 runs past the end of the file (%zu bytes)",
           len - 8, len);
  expect_reject_buf(w.b, w.n, AR_EMODEL, want, "64-bit buffer past end");
  free(w.b);
  build_synthetic(&w, true, UINT64_MAX - 7, 16, NULL);     /* offset + size wraps past 2^64 */
  expect_reject_buf(w.b, w.n, AR_EOVERFLOW, "buffer 1: offset 18446744073709551608 + size 16 wraps past 2^64",
                    "64-bit buffer wraps");
  free(w.b);
  build_synthetic(&w, true, 1ull << 40, 16, NULL);         /* far beyond a small file */
  expect_reject_buf(w.b, w.n, AR_EMODEL, "buffer 1: data at offset 1099511627776", "64-bit buffer far");
  free(w.b);
  build_synthetic(&w, true, len - 16, 12, NULL);           /* wrong size for the tensor */
  expect_reject_buf(w.b, w.n, AR_EMODEL, "tensor 1 (bias): constant buffer 1 holds 12 bytes, but [1,2,2,1] "
                    "FLOAT32 needs 16", "64-bit buffer size");
  free(w.b);
}
END_TEST

/* ---------------------------------------------------------------- operator input counts */

/* n_ops ADD operators, each reading tensor 0 (the graph input) n_in times and writing tensor 1 + k.
 * With `shared`, every operator's inputs field points at operator 0's one vector (FlatBuffers
 * allows it; no converter writes it): the file is then about n_ops times smaller than the index
 * entries it makes a loader copy. */
static void build_many_inputs(wb_t *w, int n_ops, uint32_t n_in, bool shared) {
  memset(w, 0, sizeof(*w));
  size_t root = wb_put(w, NULL, 4);
  wb_put(w, "TFL3", 4);
  wf_t mf[] = {{0, 4, 3, false, 0}, {1, 4, 0, true, 0}, {2, 4, 0, true, 0}, {4, 4, 0, true, 0}};
  size_t model = wb_table(w, mf, 4);
  wb_link(w, root, model);
  size_t s = wb_refs(w, 1, NULL);   /* buffers: [empty] */
  wb_link(w, mf[3].slot, s - 4);
  wb_link(w, s, wb_table(w, NULL, 0));
  s = wb_refs(w, 1, NULL);
  wb_link(w, mf[1].slot, s - 4);
  wf_t oc[] = {{0, 1, 0, false, 0}, {2, 4, 1, false, 0}, {3, 4, 0, false, 0}};
  wb_link(w, s, wb_table(w, oc, 3));
  s = wb_refs(w, 1, NULL);
  wb_link(w, mf[2].slot, s - 4);
  wf_t sg[] = {{0, 4, 0, true, 0}, {1, 4, 0, true, 0}, {2, 4, 0, true, 0}, {3, 4, 0, true, 0}};
  wb_link(w, s, wb_table(w, sg, 4));
  const int n_t = n_ops + 1;
  size_t ts = wb_refs(w, (uint32_t)n_t, NULL);
  wb_link(w, sg[0].slot, ts - 4);
  const int32_t shape[] = {1, 4};
  for (int i = 0; i < n_t; i++) {
    wf_t tf[] = {{0, 4, 0, true, 0}};
    wb_link(w, ts + 4 * (size_t)i, wb_table(w, tf, 1));
    wb_link(w, tf[0].slot, wb_vec(w, shape, 2, 4));
  }
  const int32_t gin[] = {0}, gout[] = {n_ops};
  wb_link(w, sg[1].slot, wb_vec(w, gin, 1, 4));
  wb_link(w, sg[2].slot, wb_vec(w, gout, 1, 4));
  size_t ops = wb_refs(w, (uint32_t)n_ops, NULL);
  wb_link(w, sg[3].slot, ops - 4);
  int32_t *zeros = calloc(n_in, sizeof(int32_t));
  ck_assert_ptr_nonnull(zeros);
  for (int k = 0; k < n_ops; k++) {
    wf_t of[] = {{0, 4, 0, false, 0}, {1, 4, 0, true, 0}, {2, 4, 0, true, 0}};
    wb_link(w, ops + 4 * (size_t)k, wb_table(w, of, 3));
    if (!shared) {
      wb_link(w, of[1].slot, wb_vec(w, zeros, n_in, 4));
    } else {
      wb_set32(w, of[1].slot, 0);   /* patched below */
    }
    const int32_t out[] = {k + 1};
    wb_link(w, of[2].slot, wb_vec(w, out, 1, 4));
  }
  if (shared) {
    /* uoffsets point forward: the one vector goes after every operator table */
    size_t v = wb_vec(w, zeros, n_in, 4);
    ar_fb_t fb;
    ar_fb_init(&fb, w->b, w->n, NULL, 0);
    for (int k = 0; k < n_ops; k++) {
      uint32_t rel;
      memcpy(&rel, w->b + ops + 4 * (size_t)k, 4);
      ar_fb_table_t ot;
      ck_assert_int_eq(ar_fb_table_at(&fb, ops + 4 * (size_t)k + rel, "op", &ot), 0);
      uint64_t pos;
      ck_assert_int_eq(ar_fb_field_pos(&fb, &ot, AR_FB_OP_INPUTS, 4, "op", &pos), 0);
      wb_link(w, (size_t)pos, v);
    }
  }
  free(zeros);
}

/* No fixed limit on an operator's input count, but the index entries of all operators must fit in
 * the file: a hostile file sharing one long vector between operators is refused, naming the
 * operator and its counts, before the loader copies more than the file could describe. */
START_TEST(test_operator_counts_checked_against_file) {
  wb_t w;
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  build_many_inputs(&w, 4, 600, false);   /* 600 inputs each, every vector in the file */
  int rc = ar_model_load_buffer(w.b, w.n, &m, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "600 inputs per operator: %s", msg);
  ck_assert_int_eq(m->subgraphs[0].n_operators, 4);
  for (int k = 0; k < 4; k++) ck_assert_int_eq(m->subgraphs[0].operators[k].n_inputs, 600);
  ar_model_free(m);
  free(w.b);
  build_many_inputs(&w, 4, 600, true);    /* one vector of 600 shared by 4 operators */
  char want[200];
  snprintf(want, sizeof want, "operator 1 (ADD): 600 inputs, 1 output, 0 intermediates bring the model's "
           "operator tensor indices to 1202, more than its %zu bytes can hold", w.n);
  expect_reject_buf(w.b, w.n, AR_EMODEL, want, "shared inputs vector");
  free(w.b);
}
END_TEST

/* ---------------------------------------------------------------- random flips */

static int fuzz_iters(void) {
  const char *e = getenv("AR_LOADER_FLIP_ITERS");
  return e && atoi(e) > 0 ? atoi(e) : 1500;
}


/* ---------------------------------------------------------------- quantization faults */

/* Issue 28: an options table of another union type is taken as absent by an op that reads none
 * (TFLite ignores it; QUANTIZE with QuantizeOptions 89, SELECT_V2 with SelectOptions 47, DEQUANTIZE
 * with AddOptions 11: they load, refused before), and refused by an op that reads its own (ADD
 * with SelectOptions: AddOptions' activation would silently become NONE; SQUEEZE with AddOptions;
 * CAST with SelectOptions), naming the operator and both union types. */
START_TEST(test_ignored_and_read_options) {
  const ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_FLOAT32, 2, {1, 4}, false, {0}, NULL},
    {"y", AR_DTYPE_FLOAT32, 2, {1, 4}, false, {0}, NULL},
    {"z", AR_DTYPE_FLOAT32, 2, {1, 4}, false, {0}, NULL},
    {"c", AR_DTYPE_BOOL, 2, {1, 4}, false, {0}, NULL},
  };
  static const struct { ar_tm_op_t op; const char *refusal; } cases[] = {
    {{114, 1, 1, {0}, {1}, 89, 0, {{0}}}, NULL},                    /* QUANTIZE, QuantizeOptions */
    {{123, 3, 1, {3, 0, 1}, {2}, 47, 0, {{0}}}, NULL},              /* SELECT_V2, SelectOptions */
    {{6, 1, 1, {0}, {1}, 11, 1, {{0, 1, AR_ACT_RELU}}}, NULL},      /* DEQUANTIZE, AddOptions */
    {{14, 1, 1, {0}, {1}, 89, 0, {{0}}}, NULL},                     /* LOGISTIC (no table), QuantizeOptions */
    {{0, 2, 1, {0, 1}, {2}, 47, 0, {{0}}},
     "operator 0 (ADD): builtin_options has union type 47, expected 11 (the table the operator reads)"},
    {{43, 1, 1, {0}, {1}, 11, 0, {{0}}}, "operator 0 (SQUEEZE): builtin_options has union type 11, expected 30"},
    {{53, 1, 1, {0}, {1}, 47, 0, {{0}}}, "operator 0 (CAST): builtin_options has union type 47, expected 37"},
  };
  const int32_t ins[] = {0, 1, 3}, outs[] = {2};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const ar_tm_op_t *op = &cases[i].op;
    const int32_t o1[] = {op->out[0]};
    size_t len = 0;
    uint8_t *buf = ar_tm_build(t, 4, op, 1, ins, 3, op->out[0] == 2 ? outs : o1, 1, &len);
    char msg[AR_MSG_BYTES] = "", label[64];
    snprintf(label, sizeof label, "case %zu (builtin %d, options type %u)", i, (int)op->builtin,
             (unsigned)op->options_type);
    if (cases[i].refusal) {
      expect_reject_buf(buf, len, AR_EMODEL, cases[i].refusal, label);
    } else {
      ar_model_t *m = NULL;
      ck_assert_msg(ar_model_load_buffer(buf, len, &m, msg, sizeof msg) == 0, "%s: %s", label, msg);
      ar_model_free(m);
    }
    free(buf);
  }
}
END_TEST

/* A generated int8 model (the project's writer, tests/ar_test_model.h): x int8 [1,2,2,2] (0.5, -3)
 * -> CONV_2D 1x1 (w int8 [2,1,1,2] per-channel 0.25 / 0.125 on axis 0, b int32 [2] 0.125 / 0.0625)
 * -> y int8 [1,2,2,2] (1.0, 5). It loads; each fault below is refused by the loader with AR_EMODEL
 * and a message naming the tensor. */
static const int8_t qf_w[4] = {1, -2, 3, 4};
static const int32_t qf_b[2] = {10, -20};
static const float qf_sx[1] = {0.5f}, qf_sw[2] = {0.25f, 0.125f}, qf_sb[2] = {0.125f, 0.0625f}, qf_sy[1] = {1.0f};
static const int64_t qf_zx[1] = {-3}, qf_zw[3] = {0, 0, 0}, qf_zb[2] = {0, 0}, qf_zy[1] = {5};

typedef struct qf { ar_tm_tensor_t t[4]; ar_tm_quant_t q[4]; int n_q; } qf_t;

static void qf_reset(qf_t *f) {
  const ar_tm_tensor_t base[4] = {
    {"x", AR_DTYPE_INT8, 4, {1, 2, 2, 2}, false, {0}, NULL},
    {"w", AR_DTYPE_INT8, 4, {2, 1, 1, 2}, false, {0}, qf_w},
    {"b", AR_DTYPE_INT32, 1, {2}, false, {0}, qf_b},
    {"y", AR_DTYPE_INT8, 4, {1, 2, 2, 2}, false, {0}, NULL},
  };
  const ar_tm_quant_t q[4] = {{0, 1, qf_sx, qf_zx, 0}, {1, 2, qf_sw, qf_zw, 0}, {2, 2, qf_sb, qf_zb, 0},
                              {3, 1, qf_sy, qf_zy, 0}};
  memcpy(f->t, base, sizeof base);
  memcpy(f->q, q, sizeof q);
  f->n_q = 4;
}

static uint8_t *qf_build(const qf_t *f, size_t *len) {
  const ar_tm_op_t op = {3, 3, 1, {0, 1, 2}, {3}, 1, 5, {{0, 1, 1}, {1, 4, 1}, {2, 4, 1}, {4, 4, 1}, {5, 4, 1}}};
  const int32_t gin[] = {0}, gout[] = {3};
  return ar_tm_build_quant(f->t, 4, &op, 1, gin, 1, gout, 1, f->q, f->n_q, len);
}

static void qf_expect(const qf_t *f, const char *want, const char *label) {
  size_t len = 0;
  uint8_t *buf = qf_build(f, &len);
  expect_reject_buf(buf, len, AR_EMODEL, want, label);
  free(buf);
}

START_TEST(test_quantization_faults) {
  qf_t f;
  qf_reset(&f);
  size_t len = 0;
  uint8_t *buf = qf_build(&f, &len);
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(buf, len, &m, msg, sizeof msg) == 0, "base model: %s", msg);
  const ar_tensor_t *w = &m->subgraphs[0].tensors[1];
  ck_assert_ptr_nonnull(w->quant);
  ck_assert_int_eq(w->quant->n, 2);
  ck_assert_float_eq(w->quant->scale[1], 0.125f);
  ck_assert_int_eq((int)m->subgraphs[0].tensors[0].zero_point, -3);
  ar_model_free(m);
  free(buf);

  /* Scale 0, negative, NaN, infinite (input and a per-channel filter entry). */
  const float zero[1] = {0.0f}, neg[1] = {-0.5f}, nan1[1] = {NAN}, wbad[2] = {0.25f, INFINITY};
  qf_reset(&f);
  f.q[0].scale = zero;
  qf_expect(&f, "tensor 0 (x): quantization scale[0] is 0, must be finite and > 0", "scale 0");
  f.q[0].scale = neg;
  qf_expect(&f, "tensor 0 (x): quantization scale[0] is -0.5, must be finite and > 0", "negative scale");
  f.q[0].scale = nan1;
  qf_expect(&f, "tensor 0 (x): quantization scale[0] is nan, must be finite and > 0", "NaN scale");
  qf_reset(&f);
  f.q[1].scale = wbad;
  qf_expect(&f, "tensor 1 (w): quantization scale[1] is inf, must be finite and > 0", "infinite filter scale");

  /* Zero points outside the type's range: int8 200, int8 -129, uint8 -1 (the output made uint8),
   * int32 bias beyond int32. */
  const int64_t z200[1] = {200}, zm129[1] = {-129}, zm1[1] = {-1}, zbig[2] = {0, 1ll << 40};
  qf_reset(&f);
  f.q[0].zero_point = z200;
  qf_expect(&f, "tensor 0 (x): zero point[0] 200 is outside INT8's range [-128, 127]", "int8 zero point 200");
  f.q[0].zero_point = zm129;
  qf_expect(&f, "tensor 0 (x): zero point[0] -129 is outside INT8's range [-128, 127]", "int8 zero point -129");
  qf_reset(&f);
  f.t[3].dtype = AR_DTYPE_UINT8;
  f.q[3].zero_point = zm1;
  qf_expect(&f, "tensor 3 (y): zero point[0] -1 is outside UINT8's range [0, 255]", "uint8 zero point -1");
  qf_reset(&f);
  f.q[2].zero_point = zbig;
  qf_expect(&f, "tensor 2 (b): zero point[1] 1099511627776 is outside INT32's range", "int32 zero point");

  /* Per-axis arrays of the wrong length: 3 filter scales for 2 output channels; a
   * quantized_dimension outside the rank. */
  const float w3[3] = {0.25f, 0.125f, 0.5f};
  qf_reset(&f);
  f.q[1].scale = w3;
  f.q[1].n = 3;
  qf_expect(&f, "tensor 1 (w): 3 per-axis scales, but dimension 0 has 2 entries", "3 scales for 2 channels");
  qf_reset(&f);
  f.q[1].qdim = 4;
  qf_expect(&f, "tensor 1 (w): quantized_dimension 4 is outside its rank 4", "quantized_dimension 4");
  qf_reset(&f);
  f.q[1].qdim = 3;   /* dims[3] = 2 as well: length fits, so this one loads */
  buf = qf_build(&f, &len);
  ck_assert_int_eq(ar_model_load_buffer(buf, len, &m, msg, sizeof msg), 0);
  ar_model_free(m);
  free(buf);

  /* Bias scale != input scale x filter scale (per channel), and a bias without scales. */
  const float sb_bad[2] = {0.125f, 0.07f}, sb_one[1] = {0.125f};
  qf_reset(&f);
  f.q[2].scale = sb_bad;
  qf_expect(&f, "tensor 2 (b): bias scale[1] 0.07 of operator 0 (CONV_2D) is not input scale 0.5 x filter "
            "scale 0.125 = 0.0625", "bias scale");
  qf_reset(&f);
  f.n_q = 3;
  f.q[2] = f.q[3];   /* the bias's entry dropped */
  qf_expect(&f, "tensor 2 (b): the bias of operator 0 (CONV_2D) has no quantization scale", "bias without scale");
  qf_reset(&f);
  f.q[2].scale = sb_one;   /* one bias scale for a 2-channel filter: channel 1 does not match */
  f.q[2].n = 1;
  qf_expect(&f, "tensor 2 (b): bias scale[1] 0.125 of operator 0 (CONV_2D) is not input scale 0.5 x filter "
            "scale 0.125 = 0.0625", "per-tensor bias for per-channel filter");
  /* Within TFLite's 1e-6 relative tolerance: loads. */
  const float sb_near[2] = {0.125f, 0.0625f * (1.0f + 1e-7f)};
  qf_reset(&f);
  f.q[2].scale = sb_near;
  buf = qf_build(&f, &len);
  ck_assert_msg(ar_model_load_buffer(buf, len, &m, msg, sizeof msg) == 0, "bias within 1e-6: %s", msg);
  ar_model_free(m);
  free(buf);
  printf("check_loader: quantization faults: %d generated models refused, each naming its tensor\n", 13);
}
END_TEST

START_TEST(test_random_byte_flips_never_crash) {
  static const char *const stems[] = {"face_detection_short_range", "selfie_segmentation",
                                      "face_detection_full_range_sparse"};
  const char *stem = stems[_i];
  size_t len;
  uint8_t *orig = read_model(stem, &len);
  uint8_t *buf = malloc(len);
  ck_assert(buf != NULL);
  uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(_i + 1);
  int iters = fuzz_iters(), accepted = 0, rejected = 0;
  int by_code[32] = {0};
  /* Most flips go to the FlatBuffer structure (outside constant data, where any byte is valid);
   * every fourth copy flips anywhere. */
  char lmsg[AR_MSG_BYTES];
  ar_model_t *clean = NULL;
  ck_assert_int_eq(ar_model_load_buffer(orig, len, &clean, lmsg, sizeof(lmsg)), 0);
  uint8_t *is_data = calloc(len, 1);
  ck_assert(is_data != NULL);
  const ar_subgraph_t *csg = &clean->subgraphs[0];
  for (uint32_t t = 0; t < csg->n_tensors; t++)
    if (csg->tensors[t].data)
      memset(is_data + (csg->tensors[t].data - orig), 1, csg->tensors[t].data_bytes);
  ar_model_free(clean);
  for (int it = 0; it < iters; it++) {
    memcpy(buf, orig, len);
    int flips = 1 + (int)(rng_next(&seed) % 8);
    for (int k = 0; k < flips; k++) {
      uint64_t r = rng_next(&seed);
      size_t pos = (size_t)(r % len);
      for (int tries = 0; it % 4 != 3 && is_data[pos] && tries < 64; tries++)
        pos = (size_t)(rng_next(&seed) % len);
      buf[pos] ^= (uint8_t)(1u << ((r >> 32) % 8));
      if ((r >> 40) % 4 == 0) buf[pos] = (uint8_t)(r >> 48);   /* sometimes a whole new byte */
    }
    char msg[AR_MSG_BYTES];
    ar_model_t *m = NULL;
    int rc = ar_model_load_buffer(buf, len, &m, msg, sizeof(msg));
    if (rc == 0) {
      /* Whatever was accepted must be internally consistent. */
      for (uint32_t s = 0; s < m->n_subgraphs; s++) {
        const ar_subgraph_t *sg = &m->subgraphs[s];
        for (uint32_t t = 0; t < sg->n_tensors; t++) {
          const ar_tensor_t *tt = &sg->tensors[t];
          ck_assert(!tt->data || (tt->data >= buf && tt->data + tt->data_bytes <= buf + len));
          ck_assert_int_le(tt->rank, AR_MAX_RANK);
        }
        for (uint32_t o = 0; o < sg->n_operators; o++)
          for (int32_t i = 0; i < sg->operators[o].n_inputs; i++)
            ck_assert_int_lt(sg->operators[o].inputs[i], (int32_t)sg->n_tensors);
      }
      ar_model_free(m);
      accepted++;
    } else {
      ck_assert_ptr_null(m);
      ck_assert_msg(msg[0] != 0, "error %s without a message", ar_err_name(rc));
      by_code[-rc < 32 ? -rc : 0]++;
      rejected++;
    }
  }
  printf("check_loader: %s: %d flipped copies, %d accepted, %d rejected (EMODEL %d, EUNSUPPORTED %d, "
         "EOVERFLOW %d)\n", stem, iters, accepted, rejected, by_code[-AR_EMODEL], by_code[-AR_EUNSUPPORTED],
         by_code[-AR_EOVERFLOW]);
  free(is_data);
  free(buf);
  free(orig);
}
END_TEST

static Suite *loader_suite(void) {
  Suite *s = suite_create("loader");
  TCase *real = tcase_create("real_models");
  tcase_add_loop_test(real, test_all_models_load_mapped, 0, ar_test_n_models);
  tcase_add_loop_test(real, test_load_buffer_matches_load, 0, ar_test_n_models);
  tcase_add_loop_test(real, test_inspect_json_matches_manifest, 0, ar_test_n_models);
  tcase_add_loop_test(real, test_options_match_manifest, 0, ar_test_n_models);
  tcase_add_test(real, test_load_file_errors);
  tcase_add_test(real, test_junk_file_refused_after_header);
  tcase_add_test(real, test_inspect_human_and_errors);
  suite_add_tcase(s, real);
  TCase *bad = tcase_create("malformed");
  tcase_add_loop_test(bad, test_truncations, 0, 2);
  tcase_add_test(bad, test_corrupt_root_and_identifier);
  tcase_add_test(bad, test_corrupt_vtables);
  tcase_add_test(bad, test_corrupt_vectors_and_strings);
  tcase_add_test(bad, test_indices_out_of_range);
  tcase_add_test(bad, test_bad_dims_and_sizes);
  tcase_add_test(bad, test_unknown_ops_and_versions);
  tcase_add_test(bad, test_dataflow_errors);
  tcase_add_test(bad, test_bad_builtin_options);
  tcase_add_test(bad, test_ignored_and_read_options);
  tcase_add_test(bad, test_bad_sparsity);
  tcase_add_test(bad, test_nul_in_strings_refused);
  tcase_add_test(bad, test_buffer_64bit_form);
  tcase_add_test(bad, test_operator_counts_checked_against_file);
  tcase_add_test(bad, test_quantization_faults);
  tcase_add_loop_test(bad, test_random_byte_flips_never_crash, 0, 3);
  suite_add_tcase(s, bad);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(loader_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  json_decref(manifest_doc);   /* loaded once per process (per test when forking) */
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
