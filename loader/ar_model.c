/* ar_model.c - load a TFLite model: copy the file into memory of its own, verify the FlatBuffer, decode it into the plain
 * structs of ar_model.h and check what the planner and interpreter rely on.
 *
 * Order of work (each step fails with a message naming the index and what is wrong):
 *   1. buffers: inline data vectors or the 64-bit offset/size form (data after the FlatBuffer);
 *   2. operator codes: builtin code = max(deprecated_builtin_code, builtin_code), custom codes;
 *   3. per subgraph: tensors (shape, dtype, byte size with overflow checks, constant data size,
 *      quantization, sparsity, shape_signature), graph inputs/outputs, then operators in stored
 *      order (known op and version, tensor indices, builtin/custom options) and the dataflow check
 *      (every input exists when its operator runs);
 *   4. description, metadata, signature defs; constant_bytes and sha256.
 * Decoded data lives in a chunked arena owned by the model (freed in one call); constant tensor
 * data and sparse index vectors point into the model's read-only copy of the file.
 */
#include "loader/ar_model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "loader/ar_flatbuf.h"
#include "loader/ar_flexbuf.h"
#include "loader/ar_schema.h"
#include "loader/ar_sha256.h"

/* Counts accepted per model; larger files are rejected as implausible before allocating. */
#define AR_MAX_SUBGRAPHS 256u
#define AR_MAX_TENSORS (1u << 20)       /* per subgraph */
#define AR_MAX_OPERATORS (1u << 20)     /* per subgraph */
#define AR_MAX_BUFFERS (1u << 24)
#define AR_MAX_OPCODES (1u << 16)
#define AR_MAX_METADATA (1u << 16)
#define AR_MAX_SIGNATURE_DEFS (1u << 12)
/* Largest dense tensor accepted (1 TiB): keeps the planner's offset arithmetic far from 2^64. */
#define AR_MAX_TENSOR_BYTES (1ull << 40)

/* ---- Arena: a list of malloc'd chunks, all freed by ar_model_free. ---- */
typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} chunk_t;

typedef struct model_priv {
  chunk_t *chunks;
  void *map;            /* the loader's private copy of the file, or NULL for ar_model_load_buffer */
  size_t map_bytes;
} model_priv_t;

static void *arena_alloc(model_priv_t *p, size_t bytes) {
  bytes = (bytes + 15) & ~(size_t)15;
  if (bytes == 0) bytes = 16;
  chunk_t *c = p->chunks;
  if (!c || c->cap - c->used < bytes) {
    size_t cap = bytes > (256u << 10) ? bytes : (256u << 10);
    c = malloc(sizeof(chunk_t) + cap);
    if (!c) return NULL;
    c->cap = cap;
    c->used = 0;
    c->next = p->chunks;
    p->chunks = c;
  }
  void *r = c->data + c->used;
  c->used += bytes;
  memset(r, 0, bytes);
  return r;
}

/* ---- Loader state. ---- */
typedef struct buffer_info {
  const uint8_t *data;  /* NULL when empty */
  uint64_t bytes;
} buffer_info_t;

typedef struct loader {
  ar_fb_t fb;
  ar_model_t *m;
  model_priv_t *priv;
  char *msg;
  size_t msg_bytes;
  buffer_info_t *bufs;  /* n_buffers entries, temporary */
  bool describe;        /* ar_model_load_describe: keep operators arenad cannot run */
  uint32_t n_unsupported;   /* operators kept as AR_OP_INVALID (unknown op or version) */
  uint64_t index_entries;   /* operator input/output/intermediate indices decoded so far */
} loader_t;

static int oom(loader_t *L, const char *what) {
  return ar_errf(L->msg, L->msg_bytes, AR_ENOMEM, "out of memory decoding %s", what);
}

static void *alloc_array(loader_t *L, uint64_t n, size_t elem, const char *what) {
  if (n > SIZE_MAX / (elem ? elem : 1)) return NULL;
  void *r = arena_alloc(L->priv, (size_t)n * elem);
  if (!r) oom(L, what);
  return r;
}

static const char *copy_string(loader_t *L, const char *s, uint32_t len) {
  char *r = arena_alloc(L->priv, (size_t)len + 1);
  if (!r) return NULL;
  if (len) memcpy(r, s, len);
  r[len] = 0;
  return r;
}

/* Read a verified string field and copy it; absent strings become "" (or NULL when
 * `null_if_absent`). */
static int get_string_copy(loader_t *L, const ar_fb_table_t *t, unsigned id, const char *what,
                           bool null_if_absent, const char **out) {
  const char *s;
  uint32_t len;
  int rc = ar_fb_get_string(&L->fb, t, id, what, &s, &len);
  if (rc) return rc;
  if (!s && null_if_absent) {
    *out = NULL;
    return 0;
  }
  *out = copy_string(L, s ? s : "", len);
  return *out ? 0 : oom(L, what);
}

static int32_t vec_i32(const ar_fb_t *fb, const ar_fb_vec_t *v, uint32_t i) {
  return (int32_t)ar_fb_load_u32(fb, v->pos + 4 * (uint64_t)i);
}

/* "CONV_2D v1", "CUSTOM:Foo v1", "SOFTMAX v1" or "BUILTIN_300 v1" for messages. */
static void op_label(const ar_opcode_t *oc, char *buf, size_t n) {
  if (oc->op != AR_OP_INVALID && oc->builtin_code != AR_TFLITE_BUILTIN_CUSTOM)
    snprintf(buf, n, "%s", ar_op_name(oc->op));
  else if (oc->builtin_code == AR_TFLITE_BUILTIN_CUSTOM)
    snprintf(buf, n, "CUSTOM:%s", oc->custom_code ? oc->custom_code : "(no custom_code)");
  else if (ar_tflite_builtin_name(oc->builtin_code))
    snprintf(buf, n, "%s", ar_tflite_builtin_name(oc->builtin_code));
  else
    snprintf(buf, n, "BUILTIN_%d", oc->builtin_code);
}

static void format_shape(const ar_tensor_t *t, char *buf, size_t n) {
  size_t used = 0;
  used += (size_t)snprintf(buf + used, n - used, "[");
  for (int32_t i = 0; i < t->rank && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, i ? ",%d" : "%d", t->dims[i]);
  if (used < n) snprintf(buf + used, n - used, "]");
}

/* ---- 1. Buffers. ---- */
static int decode_buffers(loader_t *L, const ar_fb_table_t *model) {
  ar_fb_t *fb = &L->fb;
  ar_fb_vec_t v;
  snprintf(fb->ctx, sizeof(fb->ctx), "model");
  int rc = ar_fb_get_vector(fb, model, AR_FB_MODEL_BUFFERS, 4, "Model.buffers", &v);
  if (rc) return rc;
  if (v.count > AR_MAX_BUFFERS)
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "model has %u buffers, more than the %u accepted",
                   v.count, AR_MAX_BUFFERS);
  L->m->n_buffers = v.count;
  L->bufs = calloc(v.count ? v.count : 1, sizeof(*L->bufs));
  if (!L->bufs) return oom(L, "buffers");
  for (uint32_t i = 0; i < v.count; i++) {
    ar_fb_table_t b;
    snprintf(fb->ctx, sizeof(fb->ctx), "buffer %u", i);
    if ((rc = ar_fb_vec_table(fb, &v, i, "Model.buffers", &b))) return rc;
    ar_fb_vec_t data;
    uint64_t off, size;
    if ((rc = ar_fb_get_vector(fb, &b, AR_FB_BUFFER_DATA, 1, "Buffer.data", &data))) return rc;
    if ((rc = ar_fb_get_u64(fb, &b, AR_FB_BUFFER_OFFSET, 0, "Buffer.offset", &off))) return rc;
    if ((rc = ar_fb_get_u64(fb, &b, AR_FB_BUFFER_SIZE, 0, "Buffer.size", &size))) return rc;
    /* schema.fbs: offset/size locate data stored after the FlatBuffer (files > 2 GB), relative
     * to the start of the file, and are "only valid if > 1". */
    if (off > 1) {
      uint64_t end;
      if (data.count > 0)
        return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "buffer %u has both %u bytes of inline data "
                       "and an external offset %llu", i, data.count, (unsigned long long)off);
      if (__builtin_add_overflow(off, size, &end))
        return ar_errf(L->msg, L->msg_bytes, AR_EOVERFLOW, "buffer %u: offset %llu + size %llu wraps "
                       "past 2^64", i, (unsigned long long)off, (unsigned long long)size);
      if (end > fb->len)
        return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "buffer %u: data at offset %llu, size %llu "
                       "runs past the end of the file (%llu bytes)", i, (unsigned long long)off,
                       (unsigned long long)size, (unsigned long long)fb->len);
      L->bufs[i].data = size ? fb->buf + off : NULL;
      L->bufs[i].bytes = size;
    } else if (data.count > 0) {
      L->bufs[i].data = fb->buf + data.pos;
      L->bufs[i].bytes = data.count;
    }
  }
  return 0;
}

/* ---- 2. Operator codes. ---- */
static int decode_opcodes(loader_t *L, const ar_fb_table_t *model) {
  ar_fb_t *fb = &L->fb;
  ar_fb_vec_t v;
  snprintf(fb->ctx, sizeof(fb->ctx), "model");
  int rc = ar_fb_get_vector(fb, model, AR_FB_MODEL_OPERATOR_CODES, 4, "Model.operator_codes", &v);
  if (rc) return rc;
  if (v.count > AR_MAX_OPCODES)
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "model has %u operator codes, more than the %u "
                   "accepted", v.count, AR_MAX_OPCODES);
  L->m->n_opcodes = v.count;
  L->m->opcodes = alloc_array(L, v.count, sizeof(ar_opcode_t), "operator codes");
  if (!L->m->opcodes) return AR_ENOMEM;
  for (uint32_t i = 0; i < v.count; i++) {
    ar_opcode_t *oc = &L->m->opcodes[i];
    ar_fb_table_t t;
    int8_t deprecated;
    int32_t code;
    snprintf(fb->ctx, sizeof(fb->ctx), "operator code %u", i);
    if ((rc = ar_fb_vec_table(fb, &v, i, "Model.operator_codes", &t))) return rc;
    if ((rc = ar_fb_get_i8(fb, &t, AR_FB_OPCODE_DEPRECATED_BUILTIN_CODE, 0,
                           "OperatorCode.deprecated_builtin_code", &deprecated))) return rc;
    if ((rc = ar_fb_get_i32(fb, &t, AR_FB_OPCODE_BUILTIN_CODE, 0, "OperatorCode.builtin_code", &code)))
      return rc;
    if ((rc = ar_fb_get_i32(fb, &t, AR_FB_OPCODE_VERSION, 1, "OperatorCode.version", &oc->version)))
      return rc;
    if ((rc = get_string_copy(L, &t, AR_FB_OPCODE_CUSTOM_CODE, "OperatorCode.custom_code", true,
                              &oc->custom_code))) return rc;
    /* TFLite GetBuiltinCode: old writers fill only the byte field, new ones both (the byte
     * saturated at 127 = PLACEHOLDER_FOR_GREATER_OP_CODES); the larger value is the code. */
    oc->builtin_code = code > deprecated ? code : deprecated;
    if (oc->builtin_code < 0)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator code %u: builtin code %d is negative",
                     i, oc->builtin_code);
    if (oc->version < 1)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator code %u: version %d is below 1", i,
                     oc->version);
    if (oc->builtin_code == AR_TFLITE_BUILTIN_CUSTOM)
      oc->op = oc->custom_code ? ar_op_from_custom(oc->custom_code, strlen(oc->custom_code))
                               : AR_OP_INVALID;
    else
      oc->op = ar_op_from_builtin(oc->builtin_code);
  }
  return 0;
}

/* ---- 3a. Tensors. ---- */
static int decode_index_vector(loader_t *L, const ar_fb_table_t *dm, unsigned type_id, unsigned id,
                               const char *what, ar_index_vector_t *out) {
  ar_fb_t *fb = &L->fb;
  uint8_t type;
  ar_fb_table_t t;
  bool present;
  ar_fb_vec_t v;
  int rc;
  memset(out, 0, sizeof(*out));
  if ((rc = ar_fb_get_u8(fb, dm, type_id, 0, what, &type))) return rc;
  if ((rc = ar_fb_get_table(fb, dm, id, what, &t, &present))) return rc;
  if (type == AR_IDX_NONE || !present) return 0;
  unsigned elem = type == AR_IDX_INT32 ? 4 : type == AR_IDX_UINT16 ? 2 : type == AR_IDX_UINT8 ? 1 : 0;
  if (elem == 0) return ar_fb_fail(fb, what, "index vector union type %u is not 1, 2 or 3", type);
  if ((rc = ar_fb_get_vector(fb, &t, AR_FB_INDEX_VECTOR_VALUES, elem, what, &v))) return rc;
  out->type = (ar_index_type_t)type;
  out->length = v.count;
  out->data = fb->buf + v.pos;
  if ((uintptr_t)out->data % elem != 0)
    return ar_fb_fail(fb, what, "index vector data at offset %llu is not aligned to %u bytes",
                      (unsigned long long)v.pos, elem);
  return 0;
}

static uint32_t index_at(const ar_index_vector_t *v, uint32_t i) {
  const uint8_t *p = v->data;
  switch (v->type) {
  case AR_IDX_INT32: { int32_t x; memcpy(&x, p + 4 * (size_t)i, 4); return x < 0 ? UINT32_MAX : (uint32_t)x; }
  case AR_IDX_UINT16: { uint16_t x; memcpy(&x, p + 2 * (size_t)i, 2); return x; }
  case AR_IDX_UINT8: return p[i];
  default: return UINT32_MAX;
  }
}

static int decode_sparsity(loader_t *L, const ar_fb_table_t *st, ar_sparsity_t *sp) {
  ar_fb_t *fb = &L->fb;
  ar_fb_vec_t trav, bmap, dims;
  int rc;
  if ((rc = ar_fb_get_vector(fb, st, AR_FB_SPARSITY_TRAVERSAL_ORDER, 4, "SparsityParameters.traversal_order", &trav))) return rc;
  if ((rc = ar_fb_get_vector(fb, st, AR_FB_SPARSITY_BLOCK_MAP, 4, "SparsityParameters.block_map", &bmap))) return rc;
  if ((rc = ar_fb_get_vector(fb, st, AR_FB_SPARSITY_DIM_METADATA, 4, "SparsityParameters.dim_metadata", &dims))) return rc;
  if (trav.count > 2 * AR_MAX_RANK || bmap.count > AR_MAX_RANK || dims.count > 2 * AR_MAX_RANK)
    return ar_fb_fail(fb, "SparsityParameters", "traversal_order %u, block_map %u, dim_metadata %u "
                      "entries (at most %d, %d, %d)", trav.count, bmap.count, dims.count,
                      2 * AR_MAX_RANK, AR_MAX_RANK, 2 * AR_MAX_RANK);
  sp->n_traversal_order = (int32_t)trav.count;
  sp->n_block_map = (int32_t)bmap.count;
  sp->n_dim_metadata = (int32_t)dims.count;
  for (uint32_t i = 0; i < trav.count; i++) sp->traversal_order[i] = vec_i32(fb, &trav, i);
  for (uint32_t i = 0; i < bmap.count; i++) sp->block_map[i] = vec_i32(fb, &bmap, i);
  for (uint32_t i = 0; i < dims.count; i++) {
    ar_fb_table_t dm;
    int8_t format;
    ar_dim_metadata_t *d = &sp->dim_metadata[i];
    if ((rc = ar_fb_vec_table(fb, &dims, i, "SparsityParameters.dim_metadata", &dm))) return rc;
    if ((rc = ar_fb_get_i8(fb, &dm, AR_FB_DIM_FORMAT, 0, "DimensionMetadata.format", &format))) return rc;
    if (format != AR_DIM_DENSE && format != AR_DIM_SPARSE_CSR)
      return ar_fb_fail(fb, "DimensionMetadata.format", "dim_metadata %u format is %d", i, format);
    d->format = (ar_dim_format_t)format;
    if ((rc = ar_fb_get_i32(fb, &dm, AR_FB_DIM_DENSE_SIZE, 0, "DimensionMetadata.dense_size", &d->dense_size)))
      return rc;
    if ((rc = decode_index_vector(L, &dm, AR_FB_DIM_ARRAY_SEGMENTS_TYPE, AR_FB_DIM_ARRAY_SEGMENTS,
                                  "DimensionMetadata.array_segments", &d->array_segments))) return rc;
    if ((rc = decode_index_vector(L, &dm, AR_FB_DIM_ARRAY_INDICES_TYPE, AR_FB_DIM_ARRAY_INDICES,
                                  "DimensionMetadata.array_indices", &d->array_indices))) return rc;
  }
  return 0;
}

/* Number of values a sparse tensor stores, checking the metadata against its dense shape
 * (TFLite SparsityParameters: traversal_order is a permutation of the n dims then of the k block
 * dims; block_map maps block dims to tensor dims; dim_metadata walks the traversal order, a DENSE
 * dim multiplying the count, a SPARSE_CSR dim replacing it by its segment total). */
static int sparse_stored_values(loader_t *L, uint32_t ti, const ar_tensor_t *t, uint64_t *out) {
  const ar_sparsity_t *sp = t->sparsity;
  int32_t r = t->rank, n = sp->n_traversal_order, k = sp->n_block_map;
  int64_t expect[2 * AR_MAX_RANK];
  bool seen[2 * AR_MAX_RANK] = {false};
#define SPERR(...) ar_errf(L->msg, L->msg_bytes, AR_EMODEL, __VA_ARGS__)
  if (n != r + k || sp->n_dim_metadata != n || k > r)
    return SPERR("tensor %u (%s): sparsity has %d traversal dims, %d block dims and %d dim_metadata "
                 "for a rank %d tensor", ti, t->name, n, k, sp->n_dim_metadata, r);
  for (int32_t i = 0; i < n; i++) {
    int32_t d = sp->traversal_order[i];
    bool ok = i < r ? (d >= 0 && d < r) : (d >= r && d < n);
    if (!ok || seen[d])
      return SPERR("tensor %u (%s): sparsity traversal_order[%d] = %d is not a valid permutation",
                   ti, t->name, i, d);
    seen[d] = true;
  }
  for (int32_t d = 0; d < r; d++) expect[d] = t->dims[d];
  for (int32_t b = 0; b < k; b++) {
    int32_t orig = sp->block_map[b], pos = -1;
    if (orig < 0 || orig >= r)
      return SPERR("tensor %u (%s): sparsity block_map[%d] = %d, rank is %d", ti, t->name, b, orig, r);
    for (int32_t i = 0; i < n; i++)
      if (sp->traversal_order[i] == r + b) pos = i;
    const ar_dim_metadata_t *dm = &sp->dim_metadata[pos];
    if (dm->format != AR_DIM_DENSE || dm->dense_size <= 0 || t->dims[orig] % dm->dense_size != 0)
      return SPERR("tensor %u (%s): sparsity block dim %d must be dense with a size dividing dim %d",
                   ti, t->name, b, orig);
    expect[r + b] = dm->dense_size;
    expect[orig] = t->dims[orig] / dm->dense_size;
  }
  uint64_t count = 1;
  for (int32_t i = 0; i < n; i++) {
    const ar_dim_metadata_t *dm = &sp->dim_metadata[i];
    int64_t size = expect[sp->traversal_order[i]];
    if (dm->format == AR_DIM_DENSE) {
      if (dm->dense_size != size)
        return SPERR("tensor %u (%s): sparsity dim_metadata %d is dense with size %d, expected %lld",
                     ti, t->name, i, dm->dense_size, (long long)size);
      if (__builtin_mul_overflow(count, (uint64_t)size, &count))
        return ar_errf(L->msg, L->msg_bytes, AR_EOVERFLOW, "tensor %u (%s): sparse value count overflows",
                       ti, t->name);
      continue;
    }
    const ar_index_vector_t *seg = &dm->array_segments, *idx = &dm->array_indices;
    if (seg->type == AR_IDX_NONE || idx->type == AR_IDX_NONE || (uint64_t)seg->length != count + 1)
      return SPERR("tensor %u (%s): sparsity dim_metadata %d is SPARSE_CSR with %u array_segments, "
                   "expected %llu", ti, t->name, i, seg->length, (unsigned long long)count + 1);
    uint32_t prev = 0;
    for (uint32_t s = 0; s < seg->length; s++) {
      uint32_t x = index_at(seg, s);
      if ((s == 0 && x != 0) || x < prev || x > idx->length)
        return SPERR("tensor %u (%s): sparsity dim_metadata %d array_segments[%u] = %u is not a "
                     "non-decreasing offset into %u indices starting at 0", ti, t->name, i, s, x,
                     idx->length);
      prev = x;
    }
    if (prev != idx->length)
      return SPERR("tensor %u (%s): sparsity dim_metadata %d array_segments end at %u, but there are "
                   "%u array_indices", ti, t->name, i, prev, idx->length);
    for (uint32_t j = 0; j < idx->length; j++)
      if ((int64_t)index_at(idx, j) >= size)
        return SPERR("tensor %u (%s): sparsity dim_metadata %d array_indices[%u] = %u is outside "
                     "the dimension of size %lld", ti, t->name, i, j, index_at(idx, j), (long long)size);
    count = idx->length;
  }
#undef SPERR
  *out = count;
  return 0;
}

static int decode_tensor(loader_t *L, uint32_t sgi, uint32_t ti, const ar_fb_table_t *tt, ar_tensor_t *t) {
  ar_fb_t *fb = &L->fb;
  ar_fb_vec_t shape, sig;
  int8_t type;
  int rc;
  snprintf(fb->ctx, sizeof(fb->ctx), "subgraph %u, tensor %u", sgi, ti);
  if ((rc = get_string_copy(L, tt, AR_FB_TENSOR_NAME, "Tensor.name", false, &t->name))) return rc;
  if ((rc = ar_fb_get_vector(fb, tt, AR_FB_TENSOR_SHAPE, 4, "Tensor.shape", &shape))) return rc;
  if ((rc = ar_fb_get_i8(fb, tt, AR_FB_TENSOR_TYPE, 0, "Tensor.type", &type))) return rc;
  if ((rc = ar_fb_get_u32(fb, tt, AR_FB_TENSOR_BUFFER, 0, "Tensor.buffer", &t->buffer))) return rc;
  if ((rc = ar_fb_get_bool(fb, tt, AR_FB_TENSOR_IS_VARIABLE, false, "Tensor.is_variable", &t->is_variable)))
    return rc;
  if ((rc = ar_fb_get_vector(fb, tt, AR_FB_TENSOR_SHAPE_SIGNATURE, 4, "Tensor.shape_signature", &sig)))
    return rc;

  if (shape.count > AR_MAX_RANK)
    return ar_errf(L->msg, L->msg_bytes, AR_EUNSUPPORTED, "tensor %u (%s): rank %u exceeds the "
                   "maximum %d", ti, t->name, shape.count, AR_MAX_RANK);
  t->rank = (int32_t)shape.count;
  for (uint32_t d = 0; d < shape.count; d++) {
    t->dims[d] = vec_i32(fb, &shape, d);
    if (t->dims[d] < 0)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): shape dim %u is %d", ti,
                     t->name, d, t->dims[d]);
  }
  if (type < 0 || type > AR_DTYPE_INT4)
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): type %d is not a TFLite TensorType",
                   ti, t->name, type);
  t->dtype = (ar_dtype_t)type;
  size_t esize = ar_dtype_size(t->dtype);
  /* A RESOURCE tensor (VAR_HANDLE's output) names a resource variable: it has no bytes of its
   * own (the variable's bytes are sized from the ASSIGN_VARIABLE writing it, interp/ar_interp.c). */
  const bool resource = t->dtype == AR_DTYPE_RESOURCE;
  if (esize == 0 && !resource)
    return ar_errf(L->msg, L->msg_bytes, AR_EUNSUPPORTED, "tensor %u (%s): dtype %s is not supported",
                   ti, t->name, ar_dtype_name(t->dtype));
  if (resource) esize = 1;
  uint64_t bytes = esize;
  for (int32_t d = 0; d < t->rank; d++) {
    if (__builtin_mul_overflow(bytes, (uint64_t)t->dims[d], &bytes)) {
      char sh[128];
      format_shape(t, sh, sizeof(sh));
      return ar_errf(L->msg, L->msg_bytes, AR_EOVERFLOW, "tensor %u (%s): byte size of shape %s x %zu "
                     "bytes overflows 64 bits", ti, t->name, sh, esize);
    }
  }
  if (bytes > AR_MAX_TENSOR_BYTES) {
    char sh[128];
    format_shape(t, sh, sizeof(sh));
    return ar_errf(L->msg, L->msg_bytes, AR_EOVERFLOW, "tensor %u (%s): shape %s needs %llu bytes, "
                   "more than the %llu accepted", ti, t->name, sh, (unsigned long long)bytes,
                   (unsigned long long)AR_MAX_TENSOR_BYTES);
  }
  /* TFLite counts elements in an int (NumElements feeds int flat sizes in every kernel), so a
   * tensor of 2^31 elements or more is refused, whatever its byte size. */
  if (bytes / esize > (uint64_t)INT32_MAX) {
    char sh[128];
    format_shape(t, sh, sizeof(sh));
    return ar_errf(L->msg, L->msg_bytes, AR_EOVERFLOW, "tensor %u (%s): shape %s has %llu elements, "
                   "more than 2^31 - 1", ti, t->name, sh, (unsigned long long)(bytes / esize));
  }
  t->bytes = resource ? 0 : bytes;

  if (sig.present) {
    if (sig.count != shape.count)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): shape_signature has %u dims, "
                     "shape has %u", ti, t->name, sig.count, shape.count);
    t->has_shape_signature = true;
    for (uint32_t d = 0; d < sig.count; d++) {
      t->shape_signature[d] = vec_i32(fb, &sig, d);
      if (t->shape_signature[d] < -1)
        return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): shape_signature dim %u is %d",
                       ti, t->name, d, t->shape_signature[d]);
    }
  }

  /* Quantization (TFLite QuantizationParameters): every scale / zero point, per-tensor or per-axis;
   * t->scale / t->zero_point keep the first pair. Integer tensors are held to what TFLite's kernels
   * need (finite positive scales, zero points in the type's range, per-axis arrays as long as the
   * quantized dimension); float tensors may carry parameters the kernels never read. */
  ar_fb_table_t qt;
  bool has_q;
  if ((rc = ar_fb_get_table(fb, tt, AR_FB_TENSOR_QUANTIZATION, "Tensor.quantization", &qt, &has_q)))
    return rc;
  if (has_q) {
    ar_fb_vec_t scale, zp;
    int32_t qdim = 0;
    if ((rc = ar_fb_get_vector(fb, &qt, AR_FB_QUANT_SCALE, 4, "QuantizationParameters.scale", &scale))) return rc;
    if ((rc = ar_fb_get_vector(fb, &qt, AR_FB_QUANT_ZERO_POINT, 8, "QuantizationParameters.zero_point", &zp)))
      return rc;
    if ((rc = ar_fb_get_i32(fb, &qt, AR_FB_QUANT_QUANTIZED_DIMENSION, 0,
                            "QuantizationParameters.quantized_dimension", &qdim)))
      return rc;
    if (scale.count > 0) {
      bool integer = t->dtype == AR_DTYPE_UINT8 || t->dtype == AR_DTYPE_INT8 ||
                     t->dtype == AR_DTYPE_INT16 || t->dtype == AR_DTYPE_INT32 ||
                     t->dtype == AR_DTYPE_INT64;
      if (zp.count != 0 && zp.count != scale.count)
        return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): quantization has %u scales "
                       "and %u zero points", ti, t->name, scale.count, zp.count);
      /* A 1-D tensor with one pair per element (a per-channel bias) is indexed along its only axis
       * whatever dimension it claims: TFLite Micro accepts the person detector's biases that say 3. */
      bool one_d = t->rank == 1 && (uint32_t)t->dims[0] == scale.count;
      if (integer && scale.count > 1 && !one_d) {
        if (qdim < 0 || qdim >= t->rank)
          return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): quantized_dimension %d "
                         "is outside its rank %d", ti, t->name, qdim, t->rank);
        if ((uint32_t)t->dims[qdim] != scale.count)
          return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): %u per-axis scales, but "
                         "dimension %d has %d entries", ti, t->name, scale.count, qdim, t->dims[qdim]);
      }
      ar_quant_t *q = arena_alloc(L->priv, sizeof(*q));
      float *sc = arena_alloc(L->priv, (size_t)scale.count * sizeof(float));
      int64_t *zs = arena_alloc(L->priv, (size_t)scale.count * sizeof(int64_t));
      if (!q || !sc || !zs) return oom(L, "quantization");
      int64_t zlo = INT32_MIN, zhi = INT32_MAX;
      if (t->dtype == AR_DTYPE_UINT8) zlo = 0, zhi = UINT8_MAX;
      else if (t->dtype == AR_DTYPE_INT8) zlo = INT8_MIN, zhi = INT8_MAX;
      else if (t->dtype == AR_DTYPE_INT16) zlo = INT16_MIN, zhi = INT16_MAX;
      for (uint32_t i = 0; i < scale.count; i++) {
        uint32_t bits = ar_fb_load_u32(fb, scale.pos + 4ull * i);
        memcpy(&sc[i], &bits, sizeof(float));
        zs[i] = zp.count ? (int64_t)ar_fb_load_u64(fb, zp.pos + 8ull * i) : 0;
        if (!integer) continue;
        if (!(sc[i] > 0.0f) || !isfinite(sc[i]))
          return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): quantization scale[%u] is "
                         "%g, must be finite and > 0", ti, t->name, i, (double)sc[i]);
        if (zs[i] < zlo || zs[i] > zhi)
          return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): zero point[%u] %lld is "
                         "outside %s's range [%lld, %lld]", ti, t->name, i, (long long)zs[i],
                         ar_dtype_name(t->dtype), (long long)zlo, (long long)zhi);
      }
      q->n = (int32_t)scale.count;
      q->quantized_dimension = qdim;
      q->scale = sc;
      q->zero_point = zs;
      t->quant = q;
      t->scale = sc[0];
      t->zero_point = zs[0];
      t->has_quantization = true;
    }
  }

  ar_fb_table_t st;
  bool has_sparsity;
  if ((rc = ar_fb_get_table(fb, tt, AR_FB_TENSOR_SPARSITY, "Tensor.sparsity", &st, &has_sparsity))) return rc;
  if (has_sparsity) {
    ar_sparsity_t *sp = arena_alloc(L->priv, sizeof(*sp));
    if (!sp) return oom(L, "sparsity");
    if ((rc = decode_sparsity(L, &st, sp))) return rc;
    t->sparsity = sp;
  }

  if (t->buffer >= L->m->n_buffers)
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): buffer %u, but the model has %u "
                   "buffers", ti, t->name, t->buffer, L->m->n_buffers);
  /* Buffer 0 is the schema's always-empty sentinel: "no data". */
  const buffer_info_t *b = &L->bufs[t->buffer];
  if (t->buffer != 0 && b->bytes > 0) {
    uint64_t want = t->bytes;
    if (t->sparsity) {
      uint64_t values = 0;
      if ((rc = sparse_stored_values(L, ti, t, &values))) return rc;
      if (__builtin_mul_overflow(values, (uint64_t)esize, &want))
        return ar_errf(L->msg, L->msg_bytes, AR_EOVERFLOW, "tensor %u (%s): sparse size overflows", ti, t->name);
    }
    if (b->bytes != want) {
      char sh[128];
      format_shape(t, sh, sizeof(sh));
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): constant buffer %u holds %llu "
                     "bytes, but %s%s %s needs %llu", ti, t->name, t->buffer, (unsigned long long)b->bytes,
                     t->sparsity ? "sparse " : "", sh, ar_dtype_name(t->dtype), (unsigned long long)want);
    }
    if ((uintptr_t)b->data % esize != 0)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): constant data at file offset "
                     "%llu is not aligned to %zu bytes", ti, t->name,
                     (unsigned long long)(b->data - fb->buf), esize);
    t->data = b->data;
    t->data_bytes = b->bytes;
  } else if (t->sparsity) {
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %u (%s): sparsity parameters on a tensor "
                   "without constant data", ti, t->name);
  }
  return 0;
}

/* ---- 3b. Operators and options. ---- */
static int expected_options_type(ar_op_t op) {
  switch (op) {
  case AR_OP_CONV_2D: return AR_FB_OPTIONS_CONV2D;
  case AR_OP_DEPTHWISE_CONV_2D: return AR_FB_OPTIONS_DEPTHWISE_CONV2D;
  case AR_OP_AVERAGE_POOL_2D: case AR_OP_MAX_POOL_2D: return AR_FB_OPTIONS_POOL2D;
  case AR_OP_FULLY_CONNECTED: return AR_FB_OPTIONS_FULLY_CONNECTED;
  case AR_OP_CONCATENATION: return AR_FB_OPTIONS_CONCATENATION;
  case AR_OP_ADD: return AR_FB_OPTIONS_ADD;
  case AR_OP_MUL: return AR_FB_OPTIONS_MUL;
  case AR_OP_RESIZE_BILINEAR: return AR_FB_OPTIONS_RESIZE_BILINEAR;
  case AR_OP_RESHAPE: return AR_FB_OPTIONS_RESHAPE;
  case AR_OP_PAD: return AR_FB_OPTIONS_PAD;
  case AR_OP_MEAN: return AR_FB_OPTIONS_REDUCER;
  case AR_OP_DEQUANTIZE: return AR_FB_OPTIONS_DEQUANTIZE;
  case AR_OP_HARD_SWISH: return AR_FB_OPTIONS_HARD_SWISH;
  case AR_OP_DEPTH_TO_SPACE: return AR_FB_OPTIONS_DEPTH_TO_SPACE;
  case AR_OP_DENSIFY: return AR_FB_OPTIONS_DENSIFY;
  case AR_OP_SPACE_TO_DEPTH: return AR_FB_OPTIONS_SPACE_TO_DEPTH;
  case AR_OP_TRANSPOSE: return AR_FB_OPTIONS_TRANSPOSE;
  case AR_OP_SQUEEZE: return AR_FB_OPTIONS_SQUEEZE;
  case AR_OP_STRIDED_SLICE: return AR_FB_OPTIONS_STRIDED_SLICE;
  case AR_OP_SPLIT: return AR_FB_OPTIONS_SPLIT;
  case AR_OP_SLICE: return AR_FB_OPTIONS_SLICE;
  case AR_OP_TILE: return AR_FB_OPTIONS_TILE;
  case AR_OP_EXPAND_DIMS: return AR_FB_OPTIONS_EXPAND_DIMS;
  case AR_OP_PACK: return AR_FB_OPTIONS_PACK;
  case AR_OP_UNPACK: return AR_FB_OPTIONS_UNPACK;
  case AR_OP_SPLIT_V: return AR_FB_OPTIONS_SPLIT_V;
  case AR_OP_BROADCAST_TO: return AR_FB_OPTIONS_BROADCAST_TO;
  case AR_OP_GATHER: return AR_FB_OPTIONS_GATHER;
  case AR_OP_TRANSPOSE_CONV: return AR_FB_OPTIONS_TRANSPOSE_CONV;
  case AR_OP_BATCH_MATMUL: return AR_FB_OPTIONS_BATCH_MATMUL;
  case AR_OP_GATHER_ND: return AR_FB_OPTIONS_GATHER_ND;
  case AR_OP_RESIZE_NEAREST_NEIGHBOR: return AR_FB_OPTIONS_RESIZE_NEAREST_NEIGHBOR;
  case AR_OP_SOFTMAX: return AR_FB_OPTIONS_SOFTMAX;
  case AR_OP_L2_NORMALIZATION: return AR_FB_OPTIONS_L2NORM;
  case AR_OP_SUM: case AR_OP_REDUCE_MAX: case AR_OP_REDUCE_MIN: case AR_OP_REDUCE_PROD:
    return AR_FB_OPTIONS_REDUCER;
  case AR_OP_SUB: return AR_FB_OPTIONS_SUB;
  case AR_OP_DIV: return AR_FB_OPTIONS_DIV;
  case AR_OP_EXP: return AR_FB_OPTIONS_EXP;
  case AR_OP_LOG_SOFTMAX: return AR_FB_OPTIONS_LOG_SOFTMAX;
  case AR_OP_CAST: return AR_FB_OPTIONS_CAST;
  case AR_OP_MAXIMUM: case AR_OP_MINIMUM: return AR_FB_OPTIONS_MAXIMUM_MINIMUM;
  case AR_OP_ARG_MAX: return AR_FB_OPTIONS_ARG_MAX;
  case AR_OP_ARG_MIN: return AR_FB_OPTIONS_ARG_MIN;
  case AR_OP_LESS: return AR_FB_OPTIONS_LESS;
  case AR_OP_NEG: return AR_FB_OPTIONS_NEG;
  case AR_OP_GREATER: return AR_FB_OPTIONS_GREATER;
  case AR_OP_GREATER_EQUAL: return AR_FB_OPTIONS_GREATER_EQUAL;
  case AR_OP_LESS_EQUAL: return AR_FB_OPTIONS_LESS_EQUAL;
  case AR_OP_EQUAL: return AR_FB_OPTIONS_EQUAL;
  case AR_OP_NOT_EQUAL: return AR_FB_OPTIONS_NOT_EQUAL;
  case AR_OP_POW: return AR_FB_OPTIONS_POW;
  case AR_OP_FLOOR_DIV: return AR_FB_OPTIONS_FLOOR_DIV;
  case AR_OP_LEAKY_RELU: return AR_FB_OPTIONS_LEAKY_RELU;
  case AR_OP_SQUARED_DIFFERENCE: return AR_FB_OPTIONS_SQUARED_DIFFERENCE;
  case AR_OP_ABS: return AR_FB_OPTIONS_ABS;
  case AR_OP_SELECT_V2: return AR_FB_OPTIONS_SELECT_V2;
  case AR_OP_GELU: return AR_FB_OPTIONS_GELU;
  case AR_OP_SVDF: return AR_FB_OPTIONS_SVDF;
  case AR_OP_LSTM: return AR_FB_OPTIONS_LSTM;
  case AR_OP_RNN: return AR_FB_OPTIONS_RNN;
  case AR_OP_UNIDIRECTIONAL_SEQUENCE_RNN: return AR_FB_OPTIONS_SEQUENCE_RNN;
  case AR_OP_UNIDIRECTIONAL_SEQUENCE_LSTM: return AR_FB_OPTIONS_UNIDIRECTIONAL_SEQUENCE_LSTM;
  case AR_OP_WHILE: return AR_FB_OPTIONS_WHILE;
  case AR_OP_IF: return AR_FB_OPTIONS_IF;
  case AR_OP_CALL_ONCE: return AR_FB_OPTIONS_CALL_ONCE;
  case AR_OP_VAR_HANDLE: return AR_FB_OPTIONS_VAR_HANDLE;
  case AR_OP_READ_VARIABLE: return AR_FB_OPTIONS_READ_VARIABLE;
  case AR_OP_ASSIGN_VARIABLE: return AR_FB_OPTIONS_ASSIGN_VARIABLE;
  /* issue 28 */
  case AR_OP_TOPK_V2: return AR_FB_OPTIONS_TOPK_V2;
  case AR_OP_SELECT: return AR_FB_OPTIONS_SELECT;
  case AR_OP_SHAPE: return AR_FB_OPTIONS_SHAPE;
  case AR_OP_LOGICAL_OR: return AR_FB_OPTIONS_LOGICAL_OR;
  case AR_OP_ONE_HOT: return AR_FB_OPTIONS_ONE_HOT;
  case AR_OP_LOGICAL_AND: return AR_FB_OPTIONS_LOGICAL_AND;
  case AR_OP_LOGICAL_NOT: return AR_FB_OPTIONS_LOGICAL_NOT;
  case AR_OP_SQUARE: return AR_FB_OPTIONS_SQUARE;
  case AR_OP_ZEROS_LIKE: return AR_FB_OPTIONS_ZEROS_LIKE;
  case AR_OP_FILL: return AR_FB_OPTIONS_FILL;
  case AR_OP_RANGE: return AR_FB_OPTIONS_RANGE;
  case AR_OP_REVERSE_V2: return AR_FB_OPTIONS_REVERSE_V2;
  case AR_OP_COS: return AR_FB_OPTIONS_COS;
  case AR_OP_CUMSUM: return AR_FB_OPTIONS_CUMSUM;
  case AR_OP_BATCH_TO_SPACE_ND: return AR_FB_OPTIONS_BATCH_TO_SPACE_ND;
  case AR_OP_SPACE_TO_BATCH_ND: return AR_FB_OPTIONS_SPACE_TO_BATCH_ND;
  case AR_OP_MIRROR_PAD: return AR_FB_OPTIONS_MIRROR_PAD;
  case AR_OP_SEGMENT_SUM: return AR_FB_OPTIONS_SEGMENT_SUM;
  /* LOGISTIC, RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, PRELU, TANH, ELU, SQRT, RSQRT, LOG, SIN,
   * FLOOR, CEIL, ROUND, custom ops: no options table in schema.fbs */
  default: return AR_FB_OPTIONS_NONE;
  }
}

typedef struct opctx {
  loader_t *L;
  uint32_t index;
  const char *label;
  const ar_fb_table_t *t;   /* options table; when absent every getter yields the default */
  bool present;
  unsigned wrong_type;      /* the union type stored when it is not the op's own (present is then
                             * false), 0 otherwise: see opt_wrong */
  int want;                 /* the op's own union type */
} opctx_t;

/* A builtin_options table of another union type than the op's (a QUANTIZE carrying the empty
 * QuantizeOptions, a SELECT_V2 with SelectOptions): TFLite ignores a table it does not read (its
 * builtin_options_as_X() is NULL), so an op that reads no field takes it as absent; an op that
 * does read fields refuses it here, at its first read, rather than run on defaults the file did not
 * mean. Every read of an options field goes through this. */
static int opt_wrong(opctx_t *c) {
  if (!c->wrong_type) return 0;
  return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): builtin_options has union type "
                 "%u, expected %d (the table the operator reads)", c->index, c->label, c->wrong_type, c->want);
}

static int opt_i32(opctx_t *c, unsigned id, int32_t dflt, const char *what, int32_t *out) {
  if (opt_wrong(c)) return AR_EMODEL;
  if (!c->present) { *out = dflt; return 0; }
  return ar_fb_get_i32(&c->L->fb, c->t, id, dflt, what, out);
}
static int opt_bool(opctx_t *c, unsigned id, const char *what, bool *out) {
  if (opt_wrong(c)) return AR_EMODEL;
  if (!c->present) { *out = false; return 0; }
  return ar_fb_get_bool(&c->L->fb, c->t, id, false, what, out);
}
static int opt_padding(opctx_t *c, unsigned id, ar_padding_t *out) {
  int8_t v = 0;
  int rc;
  if (opt_wrong(c)) return AR_EMODEL;
  if (c->present && (rc = ar_fb_get_i8(&c->L->fb, c->t, id, 0, "padding", &v))) return rc;
  if (v != AR_PADDING_SAME && v != AR_PADDING_VALID)
    return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): padding is %d (SAME 0 "
                   "or VALID 1)", c->index, c->label, v);
  *out = (ar_padding_t)v;
  return 0;
}
static int opt_act(opctx_t *c, unsigned id, ar_activation_t *out) {
  int8_t v = 0;
  int rc;
  if (opt_wrong(c)) return AR_EMODEL;
  if (c->present && (rc = ar_fb_get_i8(&c->L->fb, c->t, id, 0, "fused_activation_function", &v))) return rc;
  if (v < AR_ACT_NONE || v > AR_ACT_SIGN_BIT)
    return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): fused_activation_function "
                   "is %d", c->index, c->label, v);
  *out = (ar_activation_t)v;
  return 0;
}
/* float32 field (read as its bits; the flatbuffer stores it little-endian like a uint32). */
static int opt_f32(opctx_t *c, unsigned id, float dflt, const char *what, float *out) {
  if (opt_wrong(c)) return AR_EMODEL;
  if (!c->present) { *out = dflt; return 0; }
  uint32_t bits, dbits;
  memcpy(&dbits, &dflt, sizeof dbits);
  int rc = ar_fb_get_u32(&c->L->fb, c->t, id, dbits, what, &bits);
  if (rc) return rc;
  memcpy(out, &bits, sizeof *out);
  return 0;
}
/* TensorType field (int8 in the schema). */
static int opt_dtype(opctx_t *c, unsigned id, ar_dtype_t dflt, const char *what, ar_dtype_t *out) {
  int8_t v = (int8_t)dflt;
  int rc;
  if (opt_wrong(c)) return AR_EMODEL;
  if (c->present && (rc = ar_fb_get_i8(&c->L->fb, c->t, id, (int8_t)dflt, what, &v))) return rc;
  if (v < 0 || ar_dtype_size((ar_dtype_t)v) == 0)
    return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): %s is %d, not a sized "
                   "TensorType", c->index, c->label, what, v);
  *out = (ar_dtype_t)v;
  return 0;
}
static int need_positive(opctx_t *c, const char *field, int32_t v) {
  if (v >= 1) return 0;
  return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): %s is %d (must be >= 1)",
                 c->index, c->label, field, v);
}

static int decode_builtin_options(opctx_t *c, ar_op_t op, ar_options_t *o) {
  ar_fb_t *fb = &c->L->fb;
  int rc = 0;
  switch (op) {
  case AR_OP_CONV_2D: {
    ar_conv2d_options_t *x = &o->conv2d;
    if ((rc = opt_padding(c, AR_FB_CONV_PADDING, &x->padding)) ||
        (rc = opt_i32(c, AR_FB_CONV_STRIDE_W, 0, "Conv2DOptions.stride_w", &x->stride_w)) ||
        (rc = opt_i32(c, AR_FB_CONV_STRIDE_H, 0, "Conv2DOptions.stride_h", &x->stride_h)) ||
        (rc = opt_act(c, AR_FB_CONV_ACTIVATION, &x->activation)) ||
        (rc = opt_i32(c, AR_FB_CONV_DILATION_W, 1, "Conv2DOptions.dilation_w_factor", &x->dilation_w)) ||
        (rc = opt_i32(c, AR_FB_CONV_DILATION_H, 1, "Conv2DOptions.dilation_h_factor", &x->dilation_h)))
      return rc;
    if ((rc = need_positive(c, "stride_w", x->stride_w)) || (rc = need_positive(c, "stride_h", x->stride_h)) ||
        (rc = need_positive(c, "dilation_w_factor", x->dilation_w)) ||
        (rc = need_positive(c, "dilation_h_factor", x->dilation_h)))
      return rc;
    break;
  }
  case AR_OP_DEPTHWISE_CONV_2D: {
    ar_depthwise_options_t *x = &o->depthwise;
    if ((rc = opt_padding(c, AR_FB_DW_PADDING, &x->padding)) ||
        (rc = opt_i32(c, AR_FB_DW_STRIDE_W, 0, "DepthwiseConv2DOptions.stride_w", &x->stride_w)) ||
        (rc = opt_i32(c, AR_FB_DW_STRIDE_H, 0, "DepthwiseConv2DOptions.stride_h", &x->stride_h)) ||
        (rc = opt_i32(c, AR_FB_DW_DEPTH_MULTIPLIER, 0, "DepthwiseConv2DOptions.depth_multiplier",
                      &x->depth_multiplier)) ||
        (rc = opt_act(c, AR_FB_DW_ACTIVATION, &x->activation)) ||
        (rc = opt_i32(c, AR_FB_DW_DILATION_W, 1, "DepthwiseConv2DOptions.dilation_w_factor", &x->dilation_w)) ||
        (rc = opt_i32(c, AR_FB_DW_DILATION_H, 1, "DepthwiseConv2DOptions.dilation_h_factor", &x->dilation_h)))
      return rc;
    if ((rc = need_positive(c, "stride_w", x->stride_w)) || (rc = need_positive(c, "stride_h", x->stride_h)) ||
        (rc = need_positive(c, "dilation_w_factor", x->dilation_w)) ||
        (rc = need_positive(c, "dilation_h_factor", x->dilation_h)))
      return rc;
    if (x->depth_multiplier < 0)
      return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): depth_multiplier is %d",
                     c->index, c->label, x->depth_multiplier);
    break;
  }
  case AR_OP_AVERAGE_POOL_2D:
  case AR_OP_MAX_POOL_2D: {
    ar_pool2d_options_t *x = &o->pool2d;
    if ((rc = opt_padding(c, AR_FB_POOL_PADDING, &x->padding)) ||
        (rc = opt_i32(c, AR_FB_POOL_STRIDE_W, 0, "Pool2DOptions.stride_w", &x->stride_w)) ||
        (rc = opt_i32(c, AR_FB_POOL_STRIDE_H, 0, "Pool2DOptions.stride_h", &x->stride_h)) ||
        (rc = opt_i32(c, AR_FB_POOL_FILTER_W, 0, "Pool2DOptions.filter_width", &x->filter_w)) ||
        (rc = opt_i32(c, AR_FB_POOL_FILTER_H, 0, "Pool2DOptions.filter_height", &x->filter_h)) ||
        (rc = opt_act(c, AR_FB_POOL_ACTIVATION, &x->activation)))
      return rc;
    if ((rc = need_positive(c, "stride_w", x->stride_w)) || (rc = need_positive(c, "stride_h", x->stride_h)) ||
        (rc = need_positive(c, "filter_width", x->filter_w)) ||
        (rc = need_positive(c, "filter_height", x->filter_h)))
      return rc;
    break;
  }
  case AR_OP_SVDF: {
    ar_svdf_options_t *x = &o->svdf;
    if ((rc = opt_i32(c, AR_FB_SVDF_RANK, 0, "SVDFOptions.rank", &x->rank)) ||
        (rc = opt_act(c, AR_FB_SVDF_ACTIVATION, &x->activation)) ||
        (rc = opt_bool(c, AR_FB_SVDF_ASYMMETRIC_QUANTIZE_INPUTS, "SVDFOptions.asymmetric_quantize_inputs",
                       &x->asymmetric_quantize_inputs)) ||
        (rc = need_positive(c, "rank", x->rank)))
      return rc;
    break;
  }
  case AR_OP_RNN: {
    ar_rnn_options_t *x = &o->rnn;
    if ((rc = opt_act(c, AR_FB_RNN_ACTIVATION, &x->activation)) ||
        (rc = opt_bool(c, AR_FB_RNN_ASYMMETRIC_QUANTIZE_INPUTS, "asymmetric_quantize_inputs",
                       &x->asymmetric_quantize_inputs)))
      return rc;
    break;
  }
  case AR_OP_UNIDIRECTIONAL_SEQUENCE_RNN: {
    ar_rnn_options_t *x = &o->rnn;
    if ((rc = opt_bool(c, AR_FB_SEQ_RNN_TIME_MAJOR, "time_major", &x->time_major)) ||
        (rc = opt_act(c, AR_FB_SEQ_RNN_ACTIVATION, &x->activation)) ||
        (rc = opt_bool(c, AR_FB_SEQ_RNN_ASYMMETRIC_QUANTIZE_INPUTS, "asymmetric_quantize_inputs",
                       &x->asymmetric_quantize_inputs)))
      return rc;
    break;
  }
  case AR_OP_LSTM:
  case AR_OP_UNIDIRECTIONAL_SEQUENCE_LSTM: {
    ar_lstm_options_t *x = &o->lstm;
    const bool seq = op == AR_OP_UNIDIRECTIONAL_SEQUENCE_LSTM;
    int8_t kt = 0;
    if ((rc = opt_act(c, AR_FB_LSTM_ACTIVATION, &x->activation)) ||
        (rc = opt_f32(c, AR_FB_LSTM_CELL_CLIP, 0.0f, "cell_clip", &x->cell_clip)) ||
        (rc = opt_f32(c, AR_FB_LSTM_PROJ_CLIP, 0.0f, "proj_clip", &x->proj_clip)))
      return rc;
    if (seq) {
      if ((rc = opt_bool(c, AR_FB_USLSTM_TIME_MAJOR, "time_major", &x->time_major)) ||
          (rc = opt_bool(c, AR_FB_USLSTM_ASYMMETRIC_QUANTIZE_INPUTS, "asymmetric_quantize_inputs",
                         &x->asymmetric_quantize_inputs)) ||
          (rc = opt_bool(c, AR_FB_USLSTM_DIAGONAL_RECURRENT_TENSORS, "diagonal_recurrent_tensors",
                         &x->diagonal_recurrent_tensors)))
        return rc;
    } else {
      if ((c->present && (rc = ar_fb_get_i8(fb, c->t, AR_FB_LSTM_KERNEL_TYPE, 0, "LSTMOptions.kernel_type", &kt))) ||
          (rc = opt_bool(c, AR_FB_LSTM_ASYMMETRIC_QUANTIZE_INPUTS, "asymmetric_quantize_inputs",
                         &x->asymmetric_quantize_inputs)))
        return rc;
    }
    x->kernel_type = kt;
    if (!(x->cell_clip >= 0.0f && x->cell_clip <= 3.4e38f) || !(x->proj_clip >= 0.0f && x->proj_clip <= 3.4e38f))
      return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): cell_clip %g, proj_clip %g "
                     "(each must be finite and >= 0; 0 = no clipping)", c->index, c->label,
                     (double)x->cell_clip, (double)x->proj_clip);
    break;
  }
  case AR_OP_FULLY_CONNECTED: {
    ar_fully_connected_options_t *x = &o->fully_connected;
    int8_t wf = 0;
    if ((rc = opt_act(c, AR_FB_FC_ACTIVATION, &x->activation))) return rc;
    if (c->present && (rc = ar_fb_get_i8(fb, c->t, AR_FB_FC_WEIGHTS_FORMAT, 0,
                                         "FullyConnectedOptions.weights_format", &wf))) return rc;
    if ((rc = opt_bool(c, AR_FB_FC_KEEP_NUM_DIMS, "FullyConnectedOptions.keep_num_dims", &x->keep_num_dims)) ||
        (rc = opt_bool(c, AR_FB_FC_ASYMMETRIC_QUANTIZE_INPUTS,
                       "FullyConnectedOptions.asymmetric_quantize_inputs", &x->asymmetric_quantize_inputs)))
      return rc;
    x->weights_format = wf;
    if (wf != 0)
      return ar_errf(c->L->msg, c->L->msg_bytes, AR_EUNSUPPORTED, "operator %u (%s): weights_format %d "
                     "(only DEFAULT 0 is supported)", c->index, c->label, wf);
    break;
  }
  case AR_OP_ADD:
  case AR_OP_SUB: {
    /* pot_scale_int16 (schema default true; TFLite's params are false without the table) */
    const unsigned pot = op == AR_OP_ADD ? AR_FB_ADD_POT_SCALE_INT16 : AR_FB_SUB_POT_SCALE_INT16;
    o->elementwise.pot_scale_int16 = false;
    if (c->present && (rc = ar_fb_get_bool(&c->L->fb, c->t, pot, true, "pot_scale_int16",
                                           &o->elementwise.pot_scale_int16)))
      return rc;
    return opt_act(c, op == AR_OP_ADD ? AR_FB_ADD_ACTIVATION : AR_FB_SUB_ACTIVATION,
                   &o->elementwise.activation);
  }
  case AR_OP_MUL:
    return opt_act(c, AR_FB_ADD_ACTIVATION, &o->elementwise.activation);
  case AR_OP_DIV:
    return opt_act(c, AR_FB_SUB_ACTIVATION, &o->elementwise.activation);
  case AR_OP_L2_NORMALIZATION:
    return opt_act(c, AR_FB_L2NORM_ACTIVATION, &o->elementwise.activation);
  case AR_OP_SUM:
  case AR_OP_REDUCE_MAX:
  case AR_OP_REDUCE_MIN:
  case AR_OP_REDUCE_PROD:
    return opt_bool(c, AR_FB_REDUCER_KEEP_DIMS, "ReducerOptions.keep_dims", &o->reducer.keep_dims);
  case AR_OP_SOFTMAX:
    /* An absent table or field means beta 0 (schema default), as TFLite reads it. */
    return opt_f32(c, AR_FB_SOFTMAX_BETA, 0.0f, "SoftmaxOptions.beta", &o->softmax.beta);
  case AR_OP_LEAKY_RELU:
    return opt_f32(c, AR_FB_LEAKY_RELU_ALPHA, 0.0f, "LeakyReluOptions.alpha", &o->leaky_relu.alpha);
  case AR_OP_GELU:
    return opt_bool(c, AR_FB_GELU_APPROXIMATE, "GeluOptions.approximate", &o->gelu.approximate);
  /* issue 28 */
  case AR_OP_SHAPE:
    o->shape.present = c->present;
    return opt_dtype(c, AR_FB_SHAPE_OUT_TYPE, AR_DTYPE_INT32, "ShapeOptions.out_type", &o->shape.out_type);
  case AR_OP_CUMSUM:
    if ((rc = opt_bool(c, AR_FB_CUMSUM_EXCLUSIVE, "CumsumOptions.exclusive", &o->cumsum.exclusive))) return rc;
    return opt_bool(c, AR_FB_CUMSUM_REVERSE, "CumsumOptions.reverse", &o->cumsum.reverse);
  case AR_OP_ONE_HOT:
    return opt_i32(c, AR_FB_ONE_HOT_AXIS, -1, "OneHotOptions.axis", &o->one_hot.axis);
  case AR_OP_MIRROR_PAD: {
    int8_t mode = 0;
    if (c->present && (rc = ar_fb_get_i8(fb, c->t, AR_FB_MIRROR_PAD_MODE, 0, "MirrorPadOptions.mode", &mode)))
      return rc;
    if (mode != 0 && mode != 1)
      return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): MirrorPadOptions.mode is %d "
                     "(REFLECT 0 or SYMMETRIC 1)", c->index, c->label, mode);
    o->mirror_pad.symmetric = mode == 1;
    return 0;
  }
  case AR_OP_ARG_MAX:
  case AR_OP_ARG_MIN:
    return opt_dtype(c, AR_FB_ARG_OUTPUT_TYPE, AR_DTYPE_FLOAT32, "ArgMaxOptions.output_type",
                     &o->arg.output_type);
  case AR_OP_CAST:
    o->cast.present = c->present;
    if ((rc = opt_dtype(c, AR_FB_CAST_IN_DATA_TYPE, AR_DTYPE_FLOAT32, "CastOptions.in_data_type",
                        &o->cast.in_type)))
      return rc;
    return opt_dtype(c, AR_FB_CAST_OUT_DATA_TYPE, AR_DTYPE_FLOAT32, "CastOptions.out_data_type",
                     &o->cast.out_type);
  case AR_OP_CONCATENATION:
    if ((rc = opt_i32(c, AR_FB_CONCAT_AXIS, 0, "ConcatenationOptions.axis", &o->concatenation.axis)))
      return rc;
    return opt_act(c, AR_FB_CONCAT_ACTIVATION, &o->concatenation.activation);
  case AR_OP_RESHAPE: {
    ar_fb_vec_t v = {0};
    if (opt_wrong(c)) return AR_EMODEL;
    if (c->present &&
        (rc = ar_fb_get_vector(fb, c->t, AR_FB_RESHAPE_NEW_SHAPE, 4, "ReshapeOptions.new_shape", &v)))
      return rc;
    if (v.count > AR_MAX_RANK)
      return ar_errf(c->L->msg, c->L->msg_bytes, AR_EUNSUPPORTED, "operator %u (%s): new_shape has %u "
                     "dims (at most %d)", c->index, c->label, v.count, AR_MAX_RANK);
    o->reshape.has_new_shape = v.present;
    o->reshape.rank = (int32_t)v.count;
    for (uint32_t i = 0; i < v.count; i++) {
      o->reshape.new_shape[i] = vec_i32(fb, &v, i);
      if (o->reshape.new_shape[i] < -1)
        return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): new_shape dim %u is %d",
                       c->index, c->label, i, o->reshape.new_shape[i]);
    }
    break;
  }
  case AR_OP_RESIZE_BILINEAR:
    if ((rc = opt_bool(c, AR_FB_RESIZE_BILINEAR_ALIGN_CORNERS, "ResizeBilinearOptions.align_corners",
                       &o->resize_bilinear.align_corners)))
      return rc;
    return opt_bool(c, AR_FB_RESIZE_BILINEAR_HALF_PIXEL_CENTERS, "ResizeBilinearOptions.half_pixel_centers",
                    &o->resize_bilinear.half_pixel_centers);
  case AR_OP_MEAN:
    return opt_bool(c, AR_FB_REDUCER_KEEP_DIMS, "ReducerOptions.keep_dims", &o->reducer.keep_dims);
  case AR_OP_DEPTH_TO_SPACE:
    if ((rc = opt_i32(c, AR_FB_DEPTH_TO_SPACE_BLOCK_SIZE, 0, "DepthToSpaceOptions.block_size",
                      &o->depth_to_space.block_size)))
      return rc;
    return need_positive(c, "block_size", o->depth_to_space.block_size);
  case AR_OP_SPACE_TO_DEPTH:
    if ((rc = opt_i32(c, AR_FB_DEPTH_TO_SPACE_BLOCK_SIZE, 0, "SpaceToDepthOptions.block_size",
                      &o->space_to_depth.block_size)))
      return rc;
    return need_positive(c, "block_size", o->space_to_depth.block_size);
  case AR_OP_STRIDED_SLICE: {
    ar_strided_slice_options_t *x = &o->strided_slice;
    if ((rc = opt_i32(c, AR_FB_STRIDED_SLICE_BEGIN_MASK, 0, "StridedSliceOptions.begin_mask", &x->begin_mask)) ||
        (rc = opt_i32(c, AR_FB_STRIDED_SLICE_END_MASK, 0, "StridedSliceOptions.end_mask", &x->end_mask)) ||
        (rc = opt_i32(c, AR_FB_STRIDED_SLICE_ELLIPSIS_MASK, 0, "StridedSliceOptions.ellipsis_mask",
                      &x->ellipsis_mask)) ||
        (rc = opt_i32(c, AR_FB_STRIDED_SLICE_NEW_AXIS_MASK, 0, "StridedSliceOptions.new_axis_mask",
                      &x->new_axis_mask)) ||
        (rc = opt_i32(c, AR_FB_STRIDED_SLICE_SHRINK_AXIS_MASK, 0, "StridedSliceOptions.shrink_axis_mask",
                      &x->shrink_axis_mask)) ||
        (rc = opt_bool(c, AR_FB_STRIDED_SLICE_OFFSET, "StridedSliceOptions.offset", &x->offset)))
      return rc;
    break;
  }
  case AR_OP_TRANSPOSE_CONV: {
    ar_transpose_conv_options_t *x = &o->transpose_conv;
    if ((rc = opt_padding(c, AR_FB_TCONV_PADDING, &x->padding)) ||
        (rc = opt_i32(c, AR_FB_TCONV_STRIDE_W, 0, "TransposeConvOptions.stride_w", &x->stride_w)) ||
        (rc = opt_i32(c, AR_FB_TCONV_STRIDE_H, 0, "TransposeConvOptions.stride_h", &x->stride_h)) ||
        (rc = opt_act(c, AR_FB_TCONV_ACTIVATION, &x->activation)))
      return rc;
    if ((rc = need_positive(c, "stride_w", x->stride_w)) || (rc = need_positive(c, "stride_h", x->stride_h)))
      return rc;
    break;
  }
  case AR_OP_BATCH_MATMUL:
    if ((rc = opt_bool(c, AR_FB_BATCH_MATMUL_ADJ_X, "BatchMatMulOptions.adj_x", &o->batch_matmul.adj_x)))
      return rc;
    if ((rc = opt_bool(c, AR_FB_BATCH_MATMUL_ADJ_Y, "BatchMatMulOptions.adj_y", &o->batch_matmul.adj_y)))
      return rc;
    return opt_bool(c, AR_FB_BATCH_MATMUL_ASYMMETRIC_QUANTIZE_INPUTS,
                    "BatchMatMulOptions.asymmetric_quantize_inputs", &o->batch_matmul.asymmetric_quantize_inputs);
  case AR_OP_GATHER:
    if ((rc = opt_i32(c, AR_FB_GATHER_AXIS, 0, "GatherOptions.axis", &o->gather.axis)))
      return rc;
    return opt_i32(c, AR_FB_GATHER_BATCH_DIMS, 0, "GatherOptions.batch_dims", &o->gather.batch_dims);
  case AR_OP_RESIZE_NEAREST_NEIGHBOR:
    if ((rc = opt_bool(c, AR_FB_RESIZE_NEAREST_ALIGN_CORNERS, "ResizeNearestNeighborOptions.align_corners",
                       &o->resize_nearest.align_corners)))
      return rc;
    return opt_bool(c, AR_FB_RESIZE_NEAREST_HALF_PIXEL_CENTERS,
                    "ResizeNearestNeighborOptions.half_pixel_centers", &o->resize_nearest.half_pixel_centers);
  case AR_OP_SPLIT:
  case AR_OP_SPLIT_V:
    return opt_i32(c, AR_FB_SPLIT_NUM_SPLITS, 0, "SplitOptions.num_splits", &o->split.num_splits);
  case AR_OP_PACK:
  case AR_OP_UNPACK:
    if ((rc = opt_i32(c, AR_FB_PACK_COUNT, 0, "PackOptions.values_count", &o->pack.count)))
      return rc;
    return opt_i32(c, AR_FB_PACK_AXIS, 0, "PackOptions.axis", &o->pack.axis);
  case AR_OP_SQUEEZE: {
    ar_fb_vec_t v = {0};
    if (opt_wrong(c)) return AR_EMODEL;
    if (c->present &&
        (rc = ar_fb_get_vector(fb, c->t, AR_FB_SQUEEZE_DIMS, 4, "SqueezeOptions.squeeze_dims", &v)))
      return rc;
    if (v.count > AR_MAX_RANK)
      return ar_errf(c->L->msg, c->L->msg_bytes, AR_EUNSUPPORTED, "operator %u (%s): squeeze_dims has "
                     "%u entries (at most %d)", c->index, c->label, v.count, AR_MAX_RANK);
    o->squeeze.n_dims = (int32_t)v.count;
    for (uint32_t i = 0; i < v.count; i++) o->squeeze.dims[i] = vec_i32(fb, &v, i);
    break;
  }
  case AR_OP_WHILE:
    if ((rc = opt_i32(c, AR_FB_WHILE_COND_SUBGRAPH, 0, "WhileOptions.cond_subgraph_index",
                      &o->while_.cond_subgraph)))
      return rc;
    return opt_i32(c, AR_FB_WHILE_BODY_SUBGRAPH, 0, "WhileOptions.body_subgraph_index", &o->while_.body_subgraph);
  case AR_OP_IF:
    if ((rc = opt_i32(c, AR_FB_IF_THEN_SUBGRAPH, 0, "IfOptions.then_subgraph_index", &o->if_.then_subgraph)))
      return rc;
    return opt_i32(c, AR_FB_IF_ELSE_SUBGRAPH, 0, "IfOptions.else_subgraph_index", &o->if_.else_subgraph);
  case AR_OP_CALL_ONCE:
    return opt_i32(c, AR_FB_CALL_ONCE_INIT_SUBGRAPH, 0, "CallOnceOptions.init_subgraph_index",
                   &o->call_once.init_subgraph);
  case AR_OP_VAR_HANDLE:
    if (opt_wrong(c)) return AR_EMODEL;
    if (!c->present) {
      o->var_handle.container = o->var_handle.shared_name = "";
      break;
    }
    if ((rc = get_string_copy(c->L, c->t, AR_FB_VAR_HANDLE_CONTAINER, "VarHandleOptions.container", false,
                              &o->var_handle.container)))
      return rc;
    return get_string_copy(c->L, c->t, AR_FB_VAR_HANDLE_SHARED_NAME, "VarHandleOptions.shared_name", false,
                           &o->var_handle.shared_name);
  default:
    break;   /* PAD, DEQUANTIZE, HARD_SWISH, DENSIFY, TRANSPOSE, SLICE, TILE, EXPAND_DIMS,
              * BROADCAST_TO, GATHER_ND: empty option tables; others have none */
  }
  return 0;
}

/* MediaPipe Convolution2DTransposeBias: custom_options are TfLiteTransposeConvParams, three
 * little-endian int32: padding (TfLitePadding: 1 SAME, 2 VALID), stride_width, stride_height. */
static int decode_transpose_conv(opctx_t *c, const ar_operator_t *op, ar_transpose_conv_options_t *x) {
  if (!op->custom_options || op->custom_options_bytes != 12)
    return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): custom_options has %u "
                   "bytes, expected 12 (padding, stride_width, stride_height as int32)", c->index,
                   c->label, op->custom_options_bytes);
  int32_t v[3];
  memcpy(v, op->custom_options, sizeof(v));
  if (v[0] != 1 && v[0] != 2)
    return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): custom_options padding is "
                   "%d (TfLitePadding SAME 1 or VALID 2)", c->index, c->label, v[0]);
  x->padding = v[0] == 1 ? AR_PADDING_SAME : AR_PADDING_VALID;
  x->activation = AR_ACT_NONE;
  x->stride_w = v[1];
  x->stride_h = v[2];
  int rc;
  if ((rc = need_positive(c, "stride_width", v[1])) || (rc = need_positive(c, "stride_height", v[2])))
    return rc;
  return 0;
}

/* TFLite_Detection_PostProcess: a FlexBuffers map (detection_postprocess.cc Init). Keys TFLite
 * requires are required here too; detections_per_class and use_regular_nms have defaults. */
static int decode_detection_postprocess(opctx_t *c, const ar_operator_t *op,
                                        ar_detection_postprocess_options_t *x) {
  ar_flexmap_t m;
  if (!op->custom_options || ar_flexmap_open(op->custom_options, op->custom_options_bytes, &m) != 0)
    return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): custom_options (%u bytes) "
                   "are not a FlexBuffers map", c->index, c->label, op->custom_options_bytes);
  static const struct { const char *key; bool required; double dflt; } keys[] = {
    {"max_detections", true, 0}, {"max_classes_per_detection", true, 0},
    {"detections_per_class", false, 100}, {"num_classes", true, 0}, {"use_regular_nms", false, 0},
    {"nms_score_threshold", true, 0}, {"nms_iou_threshold", true, 0}, {"y_scale", true, 0},
    {"x_scale", true, 0}, {"h_scale", true, 0}, {"w_scale", true, 0},
  };
  double v[sizeof keys / sizeof keys[0]];
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    int rc = ar_flexmap_number(&m, keys[i].key, &v[i]);
    if (rc < 0)
      return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): custom option %s is "
                     "malformed or not a number", c->index, c->label, keys[i].key);
    if (rc == 0) {
      if (keys[i].required)
        return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): custom option %s is "
                       "missing", c->index, c->label, keys[i].key);
      v[i] = keys[i].dflt;
    }
  }
  for (int i = 0; i < 4; i++)   /* the four counts */
    if (!(v[i] >= 1 && v[i] <= 1e6))
      return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): %s is %g (must be "
                     "1..1000000)", c->index, c->label, keys[i].key, v[i]);
  x->max_detections = (int32_t)v[0];
  x->max_classes_per_detection = (int32_t)v[1];
  x->detections_per_class = (int32_t)v[2];
  x->num_classes = (int32_t)v[3];
  x->use_regular_nms = v[4] != 0;
  x->nms_score_threshold = (float)v[5];
  x->nms_iou_threshold = (float)v[6];
  x->y_scale = (float)v[7]; x->x_scale = (float)v[8]; x->h_scale = (float)v[9]; x->w_scale = (float)v[10];
  if (!(x->nms_iou_threshold > 0.0f && x->nms_iou_threshold <= 1.0f))
    return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): nms_iou_threshold %g is "
                   "not in (0, 1]", c->index, c->label, v[6]);
  for (int i = 7; i < 11; i++)
    if (!(v[i] > 0))
      return ar_errf(c->L->msg, c->L->msg_bytes, AR_EMODEL, "operator %u (%s): %s is %g (must be > 0)",
                     c->index, c->label, keys[i].key, v[i]);
  return 0;
}

static int copy_index_list(loader_t *L, const ar_fb_vec_t *v, const int32_t **out) {
  int32_t *a = alloc_array(L, v->count, sizeof(int32_t), "index list");
  if (!a) return AR_ENOMEM;
  for (uint32_t i = 0; i < v->count; i++) a[i] = vec_i32(&L->fb, v, i);
  *out = a;
  return 0;
}

static int decode_operator(loader_t *L, uint32_t sgi, uint32_t oi, const ar_fb_table_t *t,
                           ar_subgraph_t *sg, ar_operator_t *op) {
  ar_fb_t *fb = &L->fb;
  int rc;
  snprintf(fb->ctx, sizeof(fb->ctx), "subgraph %u, operator %u", sgi, oi);
  if ((rc = ar_fb_get_u32(fb, t, AR_FB_OP_OPCODE_INDEX, 0, "Operator.opcode_index", &op->opcode_index)))
    return rc;
  if (op->opcode_index >= L->m->n_opcodes)
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator %u: opcode index %u, but the model has "
                   "%u operator codes", oi, op->opcode_index, L->m->n_opcodes);
  const ar_opcode_t *oc = &L->m->opcodes[op->opcode_index];
  char label[96];
  op_label(oc, label, sizeof(label));
  op->op = oc->op;
  op->version = oc->version;
  /* An unknown op or version is not an error yet: the operator is decoded (tensors, custom options)
   * with op = AR_OP_INVALID and no builtin options, so that the load can refuse the model once
   * with every such operator listed (ar_model_unsupported), or describe it (ar_model_load_describe). */
  bool unsupported = oc->op == AR_OP_INVALID || oc->version > ar_op_max_version(oc->op);
  if (unsupported) {
    op->op = AR_OP_INVALID;
    L->n_unsupported++;
  }

  ar_fb_vec_t in, out, inter, copts;
  if ((rc = ar_fb_get_vector(fb, t, AR_FB_OP_INPUTS, 4, "Operator.inputs", &in)) ||
      (rc = ar_fb_get_vector(fb, t, AR_FB_OP_OUTPUTS, 4, "Operator.outputs", &out)) ||
      (rc = ar_fb_get_vector(fb, t, AR_FB_OP_INTERMEDIATES, 4, "Operator.intermediates", &inter)) ||
      (rc = ar_fb_get_vector(fb, t, AR_FB_OP_CUSTOM_OPTIONS, 1, "Operator.custom_options", &copts)))
    return rc;
  /* No fixed limit on the counts: each vector lies inside the file (verified), and all operators'
   * index entries together must fit in it too (4 bytes each), so that operators pointing at one
   * shared vector cannot make the copies below larger than the file could describe. */
  const uint64_t entries = (uint64_t)in.count + out.count + inter.count;
  L->index_entries += entries;
  if (L->index_entries > fb->len / 4)
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator %u (%s): %u input%s, %u output%s, %u "
                   "intermediates bring the model's operator tensor indices to %llu, more than its %llu "
                   "bytes can hold (index vectors shared between operators?)", oi, label, in.count,
                   in.count == 1 ? "" : "s", out.count, out.count == 1 ? "" : "s", inter.count,
                   (unsigned long long)L->index_entries, (unsigned long long)fb->len);
  /* ASSIGN_VARIABLE and CALL_ONCE write no tensor (a variable; the state CALL_ONCE's subgraph
   * sets up). */
  if (out.count == 0 && !unsupported && oc->op != AR_OP_ASSIGN_VARIABLE && oc->op != AR_OP_CALL_ONCE)
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator %u (%s): no outputs", oi, label);
  op->n_inputs = (int32_t)in.count;
  op->n_outputs = (int32_t)out.count;
  op->n_intermediates = (int32_t)inter.count;
  if ((rc = copy_index_list(L, &in, &op->inputs)) || (rc = copy_index_list(L, &out, &op->outputs)) ||
      (rc = copy_index_list(L, &inter, &op->intermediates)))
    return rc;
  for (int32_t i = 0; i < op->n_inputs; i++)
    if (op->inputs[i] < -1 || op->inputs[i] >= (int64_t)sg->n_tensors)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator %u (%s): input %d is tensor %d, but "
                     "subgraph %u has %u tensors", oi, label, i, op->inputs[i], sgi, sg->n_tensors);
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (op->outputs[i] < 0 || op->outputs[i] >= (int64_t)sg->n_tensors)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator %u (%s): output %d is tensor %d, but "
                     "subgraph %u has %u tensors", oi, label, i, op->outputs[i], sgi, sg->n_tensors);
  for (int32_t i = 0; i < op->n_intermediates; i++)
    if (op->intermediates[i] < 0 || op->intermediates[i] >= (int64_t)sg->n_tensors)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator %u (%s): intermediate %d is tensor %d, "
                     "but subgraph %u has %u tensors", oi, label, i, op->intermediates[i], sgi, sg->n_tensors);

  /* Custom options: inline bytes, or the 64-bit form for files > 2 GB. */
  uint64_t loff, lsize;
  if ((rc = ar_fb_get_u64(fb, t, AR_FB_OP_LARGE_CUSTOM_OPTIONS_OFFSET, 0,
                          "Operator.large_custom_options_offset", &loff)) ||
      (rc = ar_fb_get_u64(fb, t, AR_FB_OP_LARGE_CUSTOM_OPTIONS_SIZE, 0,
                          "Operator.large_custom_options_size", &lsize)))
    return rc;
  if (loff > 1) {
    uint64_t end;
    if (__builtin_add_overflow(loff, lsize, &end))
      return ar_errf(L->msg, L->msg_bytes, AR_EOVERFLOW, "operator %u (%s): custom options offset %llu "
                     "+ size %llu wraps past 2^64", oi, label, (unsigned long long)loff,
                     (unsigned long long)lsize);
    if (end > fb->len || lsize > UINT32_MAX)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator %u (%s): custom options at offset %llu, "
                     "size %llu run past the end of the file (%llu bytes)", oi, label,
                     (unsigned long long)loff, (unsigned long long)lsize, (unsigned long long)fb->len);
    op->custom_options = lsize ? fb->buf + loff : NULL;
    op->custom_options_bytes = (uint32_t)lsize;
  } else if (copts.count > 0) {
    op->custom_options = fb->buf + copts.pos;
    op->custom_options_bytes = copts.count;
  }

  if (unsupported) return 0;
  opctx_t c = {.L = L, .index = oi, .label = label};
  if (oc->builtin_code == AR_TFLITE_BUILTIN_CUSTOM) {
    if (oc->op == AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS)
      return decode_transpose_conv(&c, op, &op->options.transpose_conv);
    if (oc->op == AR_OP_DETECTION_POSTPROCESS)
      return decode_detection_postprocess(&c, op, &op->options.detection_postprocess);
    return 0;
  }
  uint8_t type;
  ar_fb_table_t ot;
  if ((rc = ar_fb_get_u8(fb, t, AR_FB_OP_BUILTIN_OPTIONS_TYPE, 0, "Operator.builtin_options_type", &type)) ||
      (rc = ar_fb_get_table(fb, t, AR_FB_OP_BUILTIN_OPTIONS, "Operator.builtin_options", &ot, &c.present)))
    return rc;
  c.want = expected_options_type(oc->op);
  if (type != AR_FB_OPTIONS_NONE && (int)type != c.want) {   /* another op's table: opt_wrong */
    c.wrong_type = type;
    c.present = false;
  }
  if (type == AR_FB_OPTIONS_NONE) c.present = false;   /* schema defaults */
  c.t = &ot;
  return decode_builtin_options(&c, oc->op, &op->options);
}

/* Dataflow in stored order: every input must exist when its operator runs (TFLite executes
 * operators in the order stored; arenad plans lifetimes on that order). */
static int check_dataflow(loader_t *L, uint32_t sgi, ar_subgraph_t *sg) {
  enum { AVAILABLE = 1 };
  int rc = 0;
  /* producer[t] = operator index + 1 that writes t, 0 if none; ready[t] = available from start. */
  uint32_t *producer = calloc(sg->n_tensors ? sg->n_tensors : 1, sizeof(uint32_t));
  uint8_t *ready = calloc(sg->n_tensors ? sg->n_tensors : 1, 1);
  if (!producer || !ready) {
    rc = oom(L, "dataflow check");
    goto done;
  }
  for (uint32_t t = 0; t < sg->n_tensors; t++)
    if (ar_tensor_is_constant(&sg->tensors[t]) || sg->tensors[t].is_variable) ready[t] = AVAILABLE;
  for (uint32_t i = 0; i < sg->n_inputs; i++) ready[sg->inputs[i]] = AVAILABLE;
  for (uint32_t oi = 0; oi < sg->n_operators; oi++) {
    const ar_operator_t *op = &sg->operators[oi];
    char label[96];
    op_label(&L->m->opcodes[op->opcode_index], label, sizeof(label));
    for (int32_t o = 0; o < op->n_outputs; o++) {
      int32_t t = op->outputs[o];
      const ar_tensor_t *tt = &sg->tensors[t];
      if (ar_tensor_is_constant(tt) && !tt->is_variable) {   /* variables may hold an initial value */
        rc = ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator %u (%s): output %d is tensor %d (%s), "
                     "which is a constant", oi, label, o, t, tt->name);
        goto done;
      }
      if (producer[t]) {
        rc = ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator %u (%s): output %d is tensor %d (%s), "
                     "already written by operator %u", oi, label, o, t, tt->name, producer[t] - 1);
        goto done;
      }
      producer[t] = oi + 1;
    }
  }
  for (uint32_t oi = 0; oi < sg->n_operators; oi++) {
    const ar_operator_t *op = &sg->operators[oi];
    char label[96];
    op_label(&L->m->opcodes[op->opcode_index], label, sizeof(label));
    for (int32_t i = 0; i < op->n_inputs; i++) {
      int32_t t = op->inputs[i];
      if (t < 0 || ready[t] || (producer[t] && producer[t] - 1 < oi)) continue;
      if (producer[t])
        rc = ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator %u (%s): input %d is tensor %d (%s), "
                     "which is produced later, by operator %u", oi, label, i, t, sg->tensors[t].name,
                     producer[t] - 1);
      else
        rc = ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "operator %u (%s): input %d is tensor %d (%s), "
                     "which is not a constant, graph input or variable and no operator produces it",
                     oi, label, i, t, sg->tensors[t].name);
      goto done;
    }
  }
  for (uint32_t i = 0; i < sg->n_outputs; i++) {
    int32_t t = sg->outputs[i];
    if (!ready[t] && !producer[t]) {
      rc = ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "subgraph %u: output %u is tensor %d (%s), which "
                   "no operator produces", sgi, i, t, sg->tensors[t].name);
      goto done;
    }
  }
done:
  free(producer);
  free(ready);
  return rc;
}

/* The integer bias of a quantized CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED (input 2, int32 or
 * int64, with an 8/16-bit quantized input 0) is added to the accumulator as stored, so its scale
 * must be input scale x filter scale (per channel where the filter is per-axis): TFLite's
 * GetQuantizedConvolutionMultipler check, |s_in s_w - s_b| <= 1e-6 min(s_in s_w, s_b), here for
 * every channel and both weight schemes. A bias without scales fails it too. */
static int check_quantized_bias(loader_t *L, const ar_subgraph_t *sg) {
  for (uint32_t oi = 0; oi < sg->n_operators; oi++) {
    const ar_operator_t *op = &sg->operators[oi];
    /* By builtin code: also operators kept unrun (describe) for their version. */
    ar_op_t kind = ar_op_from_builtin(L->m->opcodes[op->opcode_index].builtin_code);
    if (kind != AR_OP_CONV_2D && kind != AR_OP_DEPTHWISE_CONV_2D && kind != AR_OP_FULLY_CONNECTED) continue;
    if (op->n_inputs < 3 || op->inputs[0] < 0 || op->inputs[1] < 0 || op->inputs[2] < 0) continue;
    const ar_tensor_t *in = &sg->tensors[op->inputs[0]], *w = &sg->tensors[op->inputs[1]];
    const ar_tensor_t *b = &sg->tensors[op->inputs[2]];
    bool qin = (in->dtype == AR_DTYPE_UINT8 || in->dtype == AR_DTYPE_INT8 || in->dtype == AR_DTYPE_INT16) &&
               in->quant != NULL;
    if (!qin || w->quant == NULL || (b->dtype != AR_DTYPE_INT32 && b->dtype != AR_DTYPE_INT64)) continue;
    const char *label = ar_op_name(kind);
    int32_t nb = b->quant ? b->quant->n : 0, nw = w->quant->n;
    if (nb == 0)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %d (%s): the bias of operator %u (%s) has no "
                     "quantization scale (input scale x filter scale expected)", op->inputs[2], b->name, oi, label);
    if (nb != nw && nb != 1 && nw != 1)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %d (%s): the bias of operator %u (%s) has %d "
                     "scales, its filter tensor %d (%s) %d", op->inputs[2], b->name, oi, label, nb, op->inputs[1],
                     w->name, nw);
    int32_t n = nb > nw ? nb : nw;
    for (int32_t c = 0; c < n; c++) {
      double want = (double)in->quant->scale[0] * (double)w->quant->scale[nw == 1 ? 0 : c];
      double got = (double)b->quant->scale[nb == 1 ? 0 : c];
      if (!(fabs(want - got) <= 1e-6 * fmin(want, got)))
        return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "tensor %d (%s): bias scale[%d] %g of operator %u (%s) "
                       "is not input scale %g x filter scale %g = %g", op->inputs[2], b->name, c, got, oi, label,
                       (double)in->quant->scale[0], (double)w->quant->scale[nw == 1 ? 0 : c], want);
    }
  }
  return 0;
}

static int decode_graph_io(loader_t *L, uint32_t sgi, const ar_fb_table_t *t, unsigned id,
                           const char *what, const char *kind, const int32_t **list, uint32_t *n,
                           uint32_t n_tensors) {
  ar_fb_vec_t v;
  int rc = ar_fb_get_vector(&L->fb, t, id, 4, what, &v);
  if (rc) return rc;
  if ((rc = copy_index_list(L, &v, list))) return rc;
  *n = v.count;
  for (uint32_t i = 0; i < v.count; i++)
    if ((*list)[i] < 0 || (*list)[i] >= (int64_t)n_tensors)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "subgraph %u: %s %u is tensor %d, but the subgraph "
                     "has %u tensors", sgi, kind, i, (*list)[i], n_tensors);
  return 0;
}

static int decode_subgraph(loader_t *L, uint32_t sgi, const ar_fb_table_t *t, ar_subgraph_t *sg) {
  ar_fb_t *fb = &L->fb;
  ar_fb_vec_t tensors, ops;
  int rc;
  snprintf(fb->ctx, sizeof(fb->ctx), "subgraph %u", sgi);
  if ((rc = get_string_copy(L, t, AR_FB_SUBGRAPH_NAME, "SubGraph.name", false, &sg->name))) return rc;
  if ((rc = ar_fb_get_vector(fb, t, AR_FB_SUBGRAPH_TENSORS, 4, "SubGraph.tensors", &tensors)) ||
      (rc = ar_fb_get_vector(fb, t, AR_FB_SUBGRAPH_OPERATORS, 4, "SubGraph.operators", &ops)))
    return rc;
  if (tensors.count > AR_MAX_TENSORS || ops.count > AR_MAX_OPERATORS)
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "subgraph %u has %u tensors and %u operators (at most "
                   "%u each)", sgi, tensors.count, ops.count, AR_MAX_TENSORS);
  sg->n_tensors = tensors.count;
  sg->n_operators = ops.count;
  sg->tensors = alloc_array(L, tensors.count, sizeof(ar_tensor_t), "tensors");
  sg->operators = alloc_array(L, ops.count, sizeof(ar_operator_t), "operators");
  if (!sg->tensors || !sg->operators) return AR_ENOMEM;
  for (uint32_t i = 0; i < tensors.count; i++) {
    ar_fb_table_t tt;
    snprintf(fb->ctx, sizeof(fb->ctx), "subgraph %u, tensor %u", sgi, i);
    if ((rc = ar_fb_vec_table(fb, &tensors, i, "SubGraph.tensors", &tt))) return rc;
    if ((rc = decode_tensor(L, sgi, i, &tt, &sg->tensors[i]))) return rc;
  }
  snprintf(fb->ctx, sizeof(fb->ctx), "subgraph %u", sgi);
  if ((rc = decode_graph_io(L, sgi, t, AR_FB_SUBGRAPH_INPUTS, "SubGraph.inputs", "input", &sg->inputs,
                            &sg->n_inputs, sg->n_tensors)) ||
      (rc = decode_graph_io(L, sgi, t, AR_FB_SUBGRAPH_OUTPUTS, "SubGraph.outputs", "output", &sg->outputs,
                            &sg->n_outputs, sg->n_tensors)))
    return rc;
  for (uint32_t i = 0; i < ops.count; i++) {
    ar_fb_table_t ot;
    snprintf(fb->ctx, sizeof(fb->ctx), "subgraph %u, operator %u", sgi, i);
    if ((rc = ar_fb_vec_table(fb, &ops, i, "SubGraph.operators", &ot))) return rc;
    if ((rc = decode_operator(L, sgi, i, &ot, sg, &sg->operators[i]))) return rc;
  }
  if ((rc = check_dataflow(L, sgi, sg))) return rc;
  return check_quantized_bias(L, sg);
}

/* ---- 4. Metadata and signature defs. ---- */
static int decode_metadata(loader_t *L, const ar_fb_table_t *model) {
  ar_fb_t *fb = &L->fb;
  ar_fb_vec_t v, old;
  int rc;
  snprintf(fb->ctx, sizeof(fb->ctx), "model");
  if ((rc = ar_fb_get_vector(fb, model, AR_FB_MODEL_METADATA_BUFFER, 4, "Model.metadata_buffer", &old)))
    return rc;
  for (uint32_t i = 0; i < old.count; i++) {
    int32_t b = vec_i32(fb, &old, i);
    if (b < 0 || (uint32_t)b >= L->m->n_buffers)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "metadata_buffer %u is buffer %d, but the model has "
                     "%u buffers", i, b, L->m->n_buffers);
  }
  if ((rc = ar_fb_get_vector(fb, model, AR_FB_MODEL_METADATA, 4, "Model.metadata", &v))) return rc;
  if (v.count > AR_MAX_METADATA)
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "model has %u metadata entries (at most %u)", v.count,
                   AR_MAX_METADATA);
  L->m->n_metadata = v.count;
  L->m->metadata = alloc_array(L, v.count, sizeof(ar_metadata_t), "metadata");
  if (!L->m->metadata) return AR_ENOMEM;
  for (uint32_t i = 0; i < v.count; i++) {
    ar_fb_table_t t;
    ar_metadata_t *md = &L->m->metadata[i];
    snprintf(fb->ctx, sizeof(fb->ctx), "metadata %u", i);
    if ((rc = ar_fb_vec_table(fb, &v, i, "Model.metadata", &t)) ||
        (rc = get_string_copy(L, &t, AR_FB_METADATA_NAME, "Metadata.name", false, &md->name)) ||
        (rc = ar_fb_get_u32(fb, &t, AR_FB_METADATA_BUFFER, 0, "Metadata.buffer", &md->buffer)))
      return rc;
    if (md->buffer >= L->m->n_buffers)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "metadata %u (%s): buffer %u, but the model has %u "
                     "buffers", i, md->name, md->buffer, L->m->n_buffers);
  }
  return 0;
}

static int check_tensor_maps(loader_t *L, uint32_t si, const ar_fb_table_t *t, unsigned id, const char *what,
                             const ar_subgraph_t *sg) {
  ar_fb_vec_t v;
  int rc = ar_fb_get_vector(&L->fb, t, id, 4, what, &v);
  if (rc) return rc;
  for (uint32_t i = 0; i < v.count; i++) {
    ar_fb_table_t m;
    const char *name;
    uint32_t len, ti;
    if ((rc = ar_fb_vec_table(&L->fb, &v, i, what, &m)) ||
        (rc = ar_fb_get_string(&L->fb, &m, AR_FB_TENSORMAP_NAME, "TensorMap.name", &name, &len)) ||
        (rc = ar_fb_get_u32(&L->fb, &m, AR_FB_TENSORMAP_TENSOR_INDEX, 0, "TensorMap.tensor_index", &ti)))
      return rc;
    if (ti >= sg->n_tensors)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "signature def %u: %s %u is tensor %u, but its "
                     "subgraph has %u tensors", si, what, i, ti, sg->n_tensors);
  }
  return 0;
}

static int decode_signature_defs(loader_t *L, const ar_fb_table_t *model) {
  ar_fb_t *fb = &L->fb;
  ar_fb_vec_t v;
  int rc;
  snprintf(fb->ctx, sizeof(fb->ctx), "model");
  if ((rc = ar_fb_get_vector(fb, model, AR_FB_MODEL_SIGNATURE_DEFS, 4, "Model.signature_defs", &v))) return rc;
  if (v.count > AR_MAX_SIGNATURE_DEFS)
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "model has %u signature defs (at most %u)", v.count,
                   AR_MAX_SIGNATURE_DEFS);
  L->m->n_signature_defs = v.count;
  for (uint32_t i = 0; i < v.count; i++) {
    ar_fb_table_t t;
    const char *key;
    uint32_t len, sgi;
    snprintf(fb->ctx, sizeof(fb->ctx), "signature def %u", i);
    if ((rc = ar_fb_vec_table(fb, &v, i, "Model.signature_defs", &t)) ||
        (rc = ar_fb_get_string(fb, &t, AR_FB_SIGDEF_SIGNATURE_KEY, "SignatureDef.signature_key", &key, &len)) ||
        (rc = ar_fb_get_u32(fb, &t, AR_FB_SIGDEF_SUBGRAPH_INDEX, 0, "SignatureDef.subgraph_index", &sgi)))
      return rc;
    if (sgi >= L->m->n_subgraphs)
      return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "signature def %u: subgraph %u, but the model has %u "
                     "subgraphs", i, sgi, L->m->n_subgraphs);
    if ((rc = check_tensor_maps(L, i, &t, AR_FB_SIGDEF_INPUTS, "input", &L->m->subgraphs[sgi])) ||
        (rc = check_tensor_maps(L, i, &t, AR_FB_SIGDEF_OUTPUTS, "output", &L->m->subgraphs[sgi])))
      return rc;
  }
  return 0;
}

/* ---- Control flow across subgraphs. ---- */

/* The subgraphs operator `op` runs (WHILE cond and body, IF then and else, CALL_ONCE init): fills
 * sub[0..n) and names each ("cond", "body", ...); returns n (0 for other operators). */
static int op_subgraphs(const ar_operator_t *op, int32_t sub[2], const char *what[2]) {
  switch (op->op) {
  case AR_OP_WHILE:
    sub[0] = op->options.while_.cond_subgraph, what[0] = "cond";
    sub[1] = op->options.while_.body_subgraph, what[1] = "body";
    return 2;
  case AR_OP_IF:
    sub[0] = op->options.if_.then_subgraph, what[0] = "then";
    sub[1] = op->options.if_.else_subgraph, what[1] = "else";
    return 2;
  case AR_OP_CALL_ONCE:
    sub[0] = op->options.call_once.init_subgraph, what[0] = "init";
    return 1;
  default:
    return 0;
  }
}

/* Depth-first walk from subgraph s: state 1 = on the current path, 2 = done. A subgraph reached
 * again while on the path is recursion: refused naming the operator that closes the cycle and the
 * path of subgraphs. path[0..depth) holds the subgraphs being walked. */
static int walk_calls(loader_t *L, uint32_t s, uint8_t *state, uint32_t *path, uint32_t depth) {
  const ar_model_t *m = L->m;
  state[s] = 1;
  path[depth++] = s;
  const ar_subgraph_t *sg = &m->subgraphs[s];
  for (uint32_t k = 0; k < sg->n_operators; k++) {
    int32_t sub[2];
    const char *what[2];
    const int n = op_subgraphs(&sg->operators[k], sub, what);
    for (int j = 0; j < n; j++) {
      const uint32_t c = (uint32_t)sub[j];
      if (state[c] == 2) continue;
      if (state[c] == 1) {
        char chain[256];
        size_t at = 0;
        uint32_t from = 0;
        while (from < depth && path[from] != c) from++;
        for (uint32_t i = from; i < depth && at < sizeof chain; i++)
          at += (size_t)snprintf(chain + at, sizeof chain - at, "%u -> ", path[i]);
        if (at < sizeof chain) snprintf(chain + at, sizeof chain - at, "%u", c);
        return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "subgraph %u, operator %u (%s): %s subgraph %u "
                       "is recursive (subgraphs %s): refused", s, k, ar_op_name(sg->operators[k].op),
                       what[j], c, chain);
      }
      int rc = walk_calls(L, c, state, path, depth);
      if (rc) return rc;
    }
  }
  state[s] = 2;
  return 0;
}

/* Every WHILE, IF and CALL_ONCE: its subgraph indices in range and not subgraph 0 (the main
 * graph, which only the caller runs), the counts of inputs and outputs the operator passes
 * matching the subgraphs' (WHILE: n in = n out = cond's inputs = body's inputs = body's outputs,
 * cond one output; IF: input 0 the condition, the rest each branch's inputs, the outputs each
 * branch's outputs; CALL_ONCE: no inputs nor outputs, nor has its init subgraph), and no
 * recursion. Each failure names the subgraph and operator. */
static int check_control_flow(loader_t *L) {
  const ar_model_t *m = L->m;
  bool any = false;
  for (uint32_t s = 0; s < m->n_subgraphs; s++) {
    const ar_subgraph_t *sg = &m->subgraphs[s];
    for (uint32_t k = 0; k < sg->n_operators; k++) {
      const ar_operator_t *op = &sg->operators[k];
      int32_t sub[2];
      const char *what[2];
      const int n = op_subgraphs(op, sub, what);
      const char *name = ar_op_name(op->op);
      for (int j = 0; j < n; j++) {
        any = true;
        if (sub[j] < 0 || (uint32_t)sub[j] >= m->n_subgraphs)
          return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "subgraph %u, operator %u (%s): %s subgraph "
                         "index %d, but the model has %u subgraphs", s, k, name, what[j], sub[j], m->n_subgraphs);
        if (sub[j] == 0)
          return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "subgraph %u, operator %u (%s): %s subgraph is "
                         "0, the main graph (recursion): refused", s, k, name, what[j]);
      }
      const int32_t nin = op->n_inputs, nout = op->n_outputs;
      if (op->op == AR_OP_WHILE) {
        const ar_subgraph_t *c = &m->subgraphs[sub[0]], *b = &m->subgraphs[sub[1]];
        if (nin != nout || (int32_t)c->n_inputs != nin || (int32_t)b->n_inputs != nin ||
            (int32_t)b->n_outputs != nin || c->n_outputs != 1)
          return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "subgraph %u, operator %u (WHILE): %d inputs, %d "
                         "outputs; cond subgraph %d has %u inputs, %u outputs (1 expected); body subgraph %d "
                         "has %u inputs, %u outputs (all counts must equal the loop's %d values)", s, k, nin,
                         nout, sub[0], c->n_inputs, c->n_outputs, sub[1], b->n_inputs, b->n_outputs, nin);
      } else if (op->op == AR_OP_IF) {
        for (int j = 0; j < 2; j++) {
          const ar_subgraph_t *b = &m->subgraphs[sub[j]];
          if (nin < 1 || (int32_t)b->n_inputs != nin - 1 || (int32_t)b->n_outputs != nout)
            return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "subgraph %u, operator %u (IF): %d inputs "
                           "(the condition and %d values), %d outputs; %s subgraph %d has %u inputs, %u "
                           "outputs", s, k, nin, nin > 0 ? nin - 1 : 0, nout, what[j], sub[j], b->n_inputs,
                           b->n_outputs);
        }
      } else if (op->op == AR_OP_CALL_ONCE) {
        const ar_subgraph_t *b = &m->subgraphs[sub[0]];
        if (nin != 0 || nout != 0 || b->n_inputs != 0 || b->n_outputs != 0)
          return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "subgraph %u, operator %u (CALL_ONCE): %d inputs, "
                         "%d outputs; init subgraph %d has %u inputs, %u outputs (none expected)", s, k, nin,
                         nout, sub[0], b->n_inputs, b->n_outputs);
      }
    }
  }
  if (!any) return 0;
  uint8_t *state = calloc(m->n_subgraphs, 1);
  uint32_t *path = calloc(m->n_subgraphs + 1, sizeof *path);
  int rc = state && path ? 0 : oom(L, "control-flow check");
  for (uint32_t s = 0; s < m->n_subgraphs && rc == 0; s++)
    if (state[s] == 0) rc = walk_calls(L, s, state, path, 0);
  free(state);
  free(path);
  return rc;
}

/* ---- Whole model. ---- */
static int decode_model(loader_t *L) {
  ar_fb_t *fb = &L->fb;
  ar_fb_table_t model;
  ar_fb_vec_t sgs;
  int rc;
  if ((rc = ar_fb_root(fb, "TFL3", &model))) return rc;
  snprintf(fb->ctx, sizeof(fb->ctx), "model");
  if ((rc = ar_fb_get_u32(fb, &model, AR_FB_MODEL_VERSION, 0, "Model.version", &L->m->schema_version)))
    return rc;
  if (L->m->schema_version != 3)
    return ar_errf(L->msg, L->msg_bytes, AR_EUNSUPPORTED, "model schema version %u (arenad reads "
                   "version 3)", L->m->schema_version);
  if ((rc = get_string_copy(L, &model, AR_FB_MODEL_DESCRIPTION, "Model.description", false,
                            &L->m->description)))
    return rc;
  if ((rc = decode_buffers(L, &model)) || (rc = decode_opcodes(L, &model))) return rc;
  snprintf(fb->ctx, sizeof(fb->ctx), "model");
  if ((rc = ar_fb_get_vector(fb, &model, AR_FB_MODEL_SUBGRAPHS, 4, "Model.subgraphs", &sgs))) return rc;
  if (sgs.count == 0 || sgs.count > AR_MAX_SUBGRAPHS)
    return ar_errf(L->msg, L->msg_bytes, AR_EMODEL, "model has %u subgraphs (1 to %u accepted)", sgs.count,
                   AR_MAX_SUBGRAPHS);
  L->m->n_subgraphs = sgs.count;
  L->m->subgraphs = alloc_array(L, sgs.count, sizeof(ar_subgraph_t), "subgraphs");
  if (!L->m->subgraphs) return AR_ENOMEM;
  for (uint32_t i = 0; i < sgs.count; i++) {
    ar_fb_table_t t;
    snprintf(fb->ctx, sizeof(fb->ctx), "subgraph %u", i);
    if ((rc = ar_fb_vec_table(fb, &sgs, i, "Model.subgraphs", &t))) return rc;
    if ((rc = decode_subgraph(L, i, &t, &L->m->subgraphs[i]))) return rc;
  }
  snprintf(fb->ctx, sizeof(fb->ctx), "model");
  if ((rc = check_control_flow(L))) return rc;
  if ((rc = decode_metadata(L, &model)) || (rc = decode_signature_defs(L, &model))) return rc;

  /* constant_bytes: distinct non-empty buffers referenced by tensors of any subgraph. */
  uint8_t *seen = calloc(L->m->n_buffers ? L->m->n_buffers : 1, 1);
  if (!seen) return oom(L, "buffer census");
  uint64_t total = 0;
  for (uint32_t s = 0; s < L->m->n_subgraphs; s++) {
    const ar_subgraph_t *sg = &L->m->subgraphs[s];
    for (uint32_t t = 0; t < sg->n_tensors; t++) {
      const ar_tensor_t *tt = &sg->tensors[t];
      if (tt->data && !seen[tt->buffer]) {
        seen[tt->buffer] = 1;
        total += tt->data_bytes;   /* each <= file size, count <= 2^24: no overflow */
      }
    }
  }
  free(seen);
  L->m->constant_bytes = total;
  ar_sha256(fb->buf, (size_t)fb->len, L->m->sha256);
  return 0;
}

static int load_common_flags(const void *data, size_t bytes, void *map, bool describe,
                             ar_model_t **out, char *msg, size_t msg_bytes) {
  if (msg && msg_bytes) msg[0] = 0;
  if (!out || (!data && bytes)) return ar_errf(msg, msg_bytes, AR_EINVAL, "ar_model_load: NULL argument");
  *out = NULL;
  model_priv_t *priv = calloc(1, sizeof(*priv));
  if (!priv) return ar_errf(msg, msg_bytes, AR_ENOMEM, "out of memory");
  loader_t L = {.priv = priv, .msg = msg, .msg_bytes = msg_bytes, .describe = describe};
  L.m = arena_alloc(priv, sizeof(ar_model_t));
  if (!L.m) {
    free(priv);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "out of memory");
  }
  L.m->file = data;
  L.m->file_bytes = bytes;
  L.m->priv = priv;
  ar_fb_init(&L.fb, data, bytes, msg, msg_bytes);
  int rc = decode_model(&L);
  free(L.bufs);
  if (rc == 0 && L.n_unsupported > 0 && !describe) {
    /* One refusal naming every operator that cannot run, grouped by (op, version). */
    ar_unsupported_t *list = calloc(L.n_unsupported, sizeof(*list));
    int32_t n = 0;
    if (!list) {
      rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "out of memory listing unsupported operators");
    } else {
      ar_model_unsupported(L.m, list, (int32_t)L.n_unsupported, &n);
      ar_unsupported_format(list, n, msg, msg_bytes);
      rc = AR_EUNSUPPORTED;
    }
    free(list);
  }
  if (rc) {
    ar_model_free(L.m);   /* map stays with the caller on failure */
    return rc;
  }
  priv->map = map;
  priv->map_bytes = map ? bytes : 0;
  *out = L.m;
  return 0;
}

static int load_common(const void *data, size_t bytes, void *map, ar_model_t **out, char *msg,
                       size_t msg_bytes) {
  return load_common_flags(data, bytes, map, false, out, msg, msg_bytes);
}

static int load_fd_flags(int fd, uint64_t max_bytes, bool describe, ar_model_t **out, char *msg,
                         size_t msg_bytes);

int ar_model_load_describe(const char *path, ar_model_t **out, char *msg, size_t msg_bytes) {
  if (!path || !out) return ar_errf(msg, msg_bytes, AR_EINVAL, "ar_model_load_describe: NULL argument");
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    return ar_errf(msg, msg_bytes, e == ENOENT ? AR_ENOENT : AR_EIO, "%s: %s", path, strerror(e));
  }
  char lmsg[AR_MSG_BYTES];
  int rc = load_fd_flags(fd, 0, true, out, lmsg, sizeof(lmsg));
  close(fd);
  /* File-level errors name the path; a decode error reads as before (the caller knows the file). */
  if (rc == AR_EIO || rc == AR_E2BIG)
    ar_errf(msg, msg_bytes, rc, "%s: %s", path, lmsg);
  else if (rc && msg && msg_bytes)
    snprintf(msg, msg_bytes, "%s", lmsg);
  return rc;
}

int ar_model_load_buffer_describe(const void *data, size_t bytes, ar_model_t **out, char *msg,
                                  size_t msg_bytes) {
  return load_common_flags(data, bytes, NULL, true, out, msg, msg_bytes);
}

int32_t ar_model_unsupported(const ar_model_t *m, ar_unsupported_t *list, int32_t max, int32_t *n_out) {
  int32_t n = 0;
  for (uint32_t s = 0; m && s < m->n_subgraphs; s++) {
    const ar_subgraph_t *sg = &m->subgraphs[s];
    for (uint32_t k = 0; k < sg->n_operators; k++) {
      const ar_operator_t *op = &sg->operators[k];
      if (op->op != AR_OP_INVALID) continue;
      if (n < max && list) {
        const ar_opcode_t *oc = &m->opcodes[op->opcode_index];
        ar_unsupported_t *u = &list[n];
        memset(u, 0, sizeof(*u));
        u->op_index = (int32_t)k;
        u->subgraph = (int32_t)s;
        u->version = oc->version;
        if (oc->builtin_code == AR_TFLITE_BUILTIN_CUSTOM)
          snprintf(u->op, sizeof(u->op), "%s", oc->custom_code ? oc->custom_code : "(no custom_code)");
        else
          op_label(oc, u->op, sizeof(u->op));
        if (oc->op == AR_OP_INVALID || oc->version <= ar_op_max_version(oc->op))
          snprintf(u->option, sizeof(u->option), "%s", oc->builtin_code == AR_TFLITE_BUILTIN_CUSTOM
                   ? "unknown custom op" : "no kernel for this op");
        else
          snprintf(u->option, sizeof(u->option), "version %d is above the highest supported version %d",
                   oc->version, ar_op_max_version(oc->op));
      }
      n++;
    }
  }
  if (n_out) *n_out = n < max ? n : max;
  return n;
}

/* Same (op, version, option)? */
static bool same_group(const ar_unsupported_t *a, const ar_unsupported_t *b) {
  return a->version == b->version && a->subgraph == b->subgraph && strcmp(a->op, b->op) == 0 &&
         strcmp(a->option, b->option) == 0;
}

int ar_unsupported_format(const ar_unsupported_t *list, int32_t n, char *msg, size_t msg_bytes) {
  if (!msg || msg_bytes == 0) return AR_EUNSUPPORTED;
  /* Group by group, each written whole or not at all: when the next one would not fit with room
   * for the tail, the text ends with "; ... and N more" (N operators not named) rather than stop
   * mid-word at the buffer's end. The full list is the caller's (ar_interp_unsupported, --json). */
  enum { TAIL = 40 };
  size_t at = (size_t)snprintf(msg, msg_bytes, "%d operator%s unsupported: ", (int)n, n == 1 ? "" : "s");
  if (at >= msg_bytes) return AR_EUNSUPPORTED;
  bool first_group = true;
  int32_t listed = 0;
  for (int32_t i = 0; i < n; i++) {
    bool seen = false;
    for (int32_t j = 0; j < i && !seen; j++) seen = same_group(&list[j], &list[i]);
    if (seen) continue;
    int32_t count = 0;
    for (int32_t j = i; j < n; j++) count += same_group(&list[j], &list[i]);
    char g[512];
    size_t gl = 0;
#define AR__PUT(...)                                                              \
  do {                                                                            \
    if (gl < sizeof g) gl += (size_t)snprintf(g + gl, sizeof g - gl, __VA_ARGS__); \
  } while (0)
    AR__PUT("%s%s v%d", first_group ? "" : "; ", list[i].op, (int)list[i].version);
    if (list[i].option[0] && strcmp(list[i].option, "unknown custom op") != 0 &&
        strcmp(list[i].option, "no kernel for this op") != 0)
      AR__PUT(" [%s]", list[i].option);
    AR__PUT(" (op%s", count == 1 ? "" : "s");
    int32_t shown = 0;
    for (int32_t j = i; j < n; j++) {
      if (!same_group(&list[j], &list[i])) continue;
      if (shown == 16) {
        AR__PUT(", ... %d in all", (int)count);
        break;
      }
      AR__PUT("%s%d", shown ? ", " : " ", (int)list[j].op_index);
      shown++;
    }
    if (list[i].subgraph > 0) AR__PUT(" of subgraph %d", (int)list[i].subgraph);
    AR__PUT(")");
#undef AR__PUT
    if (gl >= sizeof g || at + gl + TAIL >= msg_bytes) {
      /* the last group may take the tail's room too */
      if (listed + count == n && gl < sizeof g && at + gl < msg_bytes) {
        memcpy(msg + at, g, gl + 1);
        return AR_EUNSUPPORTED;
      }
      snprintf(msg + at, msg_bytes - at, "%s... and %d more", first_group ? "" : "; ", (int)(n - listed));
      return AR_EUNSUPPORTED;
    }
    memcpy(msg + at, g, gl + 1);
    at += gl;
    listed += count;
    first_group = false;
  }
  return AR_EUNSUPPORTED;
}

int ar_model_load_buffer(const void *data, size_t bytes, ar_model_t **out, char *msg, size_t msg_bytes) {
  return load_common(data, bytes, NULL, out, msg, msg_bytes);
}

/* Bytes read per read(2) call: a large file is copied in steps (no single multi-GB read). */
#define AR_READ_STEP (8u << 20)

/* The FlatBuffer header of a TensorFlow Lite file: a root offset that leaves room for a table inside
 * the file and the "TFL3" identifier at byte 4 (the decode checks them again, with the whole file). */
static int check_header(const uint8_t *h, size_t bytes, char *msg, size_t msg_bytes) {
  if (memcmp(h + 4, "TFL3", 4) != 0)
    return ar_errf(msg, msg_bytes, AR_EMODEL, "file: no \"TFL3\" file identifier at byte 4 (not a "
                   "TensorFlow Lite file)");
  uint32_t root = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
  if ((uint64_t)root + 4 > bytes)
    return ar_errf(msg, msg_bytes, AR_EMODEL, "file: root table offset %u lies outside the file (%zu bytes)",
                   root, bytes);
  return 0;
}

int ar_model_load_fd(int fd, uint64_t max_bytes, ar_model_t **out, char *msg, size_t msg_bytes) {
  return load_fd_flags(fd, max_bytes, false, out, msg, msg_bytes);
}

static int load_fd_flags(int fd, uint64_t max_bytes, bool describe, ar_model_t **out, char *msg,
                         size_t msg_bytes) {
  if (msg && msg_bytes) msg[0] = 0;
  if (fd < 0 || !out) return ar_errf(msg, msg_bytes, AR_EINVAL, "ar_model_load_fd: bad argument");
  *out = NULL;
  struct stat st;
  if (fstat(fd, &st) != 0) return ar_errf(msg, msg_bytes, AR_EIO, "stat: %s", strerror(errno));
  if (!S_ISREG(st.st_mode)) return ar_errf(msg, msg_bytes, AR_EIO, "not a regular file");
  if (st.st_size <= 0) return ar_errf(msg, msg_bytes, AR_EMODEL, "file is empty");
  /* The size is checked before a byte is read: a file with a huge (sparse) tail costs nothing. */
  if (max_bytes && (uint64_t)st.st_size > max_bytes)
    return ar_errf(msg, msg_bytes, AR_E2BIG, "file is %llu bytes, more than the %llu bytes accepted",
                   (unsigned long long)st.st_size, (unsigned long long)max_bytes);
  if ((uint64_t)st.st_size > SIZE_MAX / 2) return ar_errf(msg, msg_bytes, AR_EOVERFLOW, "file too large");
  size_t bytes = (size_t)st.st_size;
  /* Anonymous pages the loader owns (page-aligned, so every constant is aligned as in the file;
   * returned to the system at once by munmap). */
  uint8_t *copy = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (copy == MAP_FAILED) return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory for a %zu-byte copy", bytes);
  size_t got = 0;
  int rc = 0;
  bool header_checked = false;
  while (got < bytes) {
    /* The 8-byte header comes first and is checked alone: a file that is not a model is refused
     * before the rest of it is read (a big junk file costs one small read, not its size in RSS). */
    if (!header_checked && got >= 8) {
      if ((rc = check_header(copy, bytes, msg, msg_bytes))) break;
      header_checked = true;
    }
    size_t step = bytes - got < AR_READ_STEP ? bytes - got : AR_READ_STEP;
    if (!header_checked && step > 8 - got) step = 8 - got;
    ssize_t r = read(fd, copy + got, step);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      rc = ar_errf(msg, msg_bytes, AR_EIO, "read: %s", strerror(errno));
      break;
    }
    if (r == 0) {
      rc = ar_errf(msg, msg_bytes, AR_EIO, "the file shrank while it was read (%zu of %zu bytes)", got, bytes);
      break;
    }
    got += (size_t)r;
  }
  if (rc == 0) {
    uint8_t extra;
    ssize_t r;
    while ((r = read(fd, &extra, 1)) < 0 && errno == EINTR) {}
    if (r > 0) rc = ar_errf(msg, msg_bytes, AR_EIO, "the file grew while it was read (more than %zu bytes)", bytes);
  }
  /* From here on the copy is immutable: verification, the sha256 and every later reader (placement,
   * DENSIFY) see the same bytes, whatever happens to the file. */
  if (rc == 0 && mprotect(copy, bytes, PROT_READ) != 0)
    rc = ar_errf(msg, msg_bytes, AR_EIO, "mprotect: %s", strerror(errno));
  if (rc == 0) rc = load_common_flags(copy, bytes, copy, describe, out, msg, msg_bytes);
  if (rc) munmap(copy, bytes);
  return rc;
}

int ar_model_load(const char *path, ar_model_t **out, char *msg, size_t msg_bytes) {
  if (!path || !out) return ar_errf(msg, msg_bytes, AR_EINVAL, "ar_model_load: NULL argument");
  *out = NULL;
  /* O_NONBLOCK: opening a FIFO (or a device) must not block a daemon worker waiting for a writer;
   * the S_ISREG check then rejects it. It has no effect on regular files. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    return ar_errf(msg, msg_bytes, e == ENOENT ? AR_ENOENT : AR_EIO, "%s: %s", path, strerror(e));
  }
  char lmsg[AR_MSG_BYTES];
  int rc = ar_model_load_fd(fd, 0, out, lmsg, sizeof(lmsg));
  close(fd);
  /* File-level errors name the path; a decode error reads as before (the caller knows the file). */
  if (rc == AR_EIO || rc == AR_E2BIG)
    ar_errf(msg, msg_bytes, rc, "%s: %s", path, lmsg);
  else if (rc && msg && msg_bytes)
    snprintf(msg, msg_bytes, "%s", lmsg);
  return rc;
}

void ar_model_free(ar_model_t *model) {
  if (!model) return;
  model_priv_t *priv = model->priv;
  void *map = priv->map;
  size_t map_bytes = priv->map_bytes;
  chunk_t *c = priv->chunks;   /* the model itself lives in the arena */
  while (c) {
    chunk_t *next = c->next;
    free(c);
    c = next;
  }
  free(priv);
  if (map) munmap(map, map_bytes);
}
