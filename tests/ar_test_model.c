/* ar_test_model.c - see ar_test_model.h. A forward-patching FlatBuffer writer: objects are
 * appended front to back, parents before children, and each uoffset is patched once its target's
 * position is known (uoffsets point forward, as the format requires). */
#include "tests/ar_test_model.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint8_t *b; size_t n, cap; } wb_t;

/* Element bytes of the dtypes tests build (kept here: libartest links before the loader). */
static size_t dtype_bytes(ar_dtype_t t) {
  switch (t) {
  case AR_DTYPE_FLOAT16: case AR_DTYPE_INT16: return 2;
  case AR_DTYPE_UINT8: case AR_DTYPE_INT8: case AR_DTYPE_BOOL: return 1;
  case AR_DTYPE_INT64: case AR_DTYPE_FLOAT64: return 8;
  default: return 4;
  }
}

static void wb_reserve(wb_t *w, size_t k) {
  if (w->n + k <= w->cap) return;
  w->cap = (w->n + k) * 2 + 256;
  w->b = realloc(w->b, w->cap);
  assert(w->b != NULL);
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
static void wb_link(wb_t *w, size_t slot, size_t target) {
  uint32_t v = (uint32_t)(target - slot);
  memcpy(w->b + slot, &v, 4);
}

typedef struct { int id, size; int64_t val; bool ref; size_t slot; } wf_t;

/* A table with fields f (scalars written, refs left for wb_link via f[i].slot). */
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
/* A vector of n elements of esz bytes; `align` aligns its first element. */
static size_t wb_vec_aligned(wb_t *w, const void *e, uint32_t n, size_t esz, size_t align) {
  wb_align(w, 4);
  while ((w->n + 4) % align) wb_put(w, NULL, 1);
  size_t pos = wb_put(w, &n, 4);
  wb_put(w, e, n * esz);
  return pos;
}
static size_t wb_vec(wb_t *w, const void *e, uint32_t n, size_t esz) { return wb_vec_aligned(w, e, n, esz, 4); }
static size_t wb_string(wb_t *w, const char *s) {
  size_t pos = wb_vec(w, s, (uint32_t)strlen(s), 1);
  wb_put(w, NULL, 1);
  return pos;
}
/* A vector of n uoffsets; returns the slot of element 0 (slot i = +4i); the vector at slot - 4. */
static size_t wb_refs(wb_t *w, uint32_t n) { return wb_vec(w, NULL, n, 4) + 4; }

uint8_t *ar_tm_build(const ar_tm_tensor_t *tensors, int n_tensors, const ar_tm_op_t *ops, int n_ops,
                     const int32_t *inputs, int n_inputs, const int32_t *outputs, int n_outputs,
                     size_t *bytes) {
  return ar_tm_build_quant(tensors, n_tensors, ops, n_ops, inputs, n_inputs, outputs, n_outputs, NULL, 0, bytes);
}

uint8_t *ar_tm_build_quant(const ar_tm_tensor_t *tensors, int n_tensors, const ar_tm_op_t *ops, int n_ops,
                           const int32_t *inputs, int n_inputs, const int32_t *outputs, int n_outputs,
                           const ar_tm_quant_t *quant, int n_quant, size_t *bytes) {
  return ar_tm_build_sparse(tensors, n_tensors, ops, n_ops, inputs, n_inputs, outputs, n_outputs, quant,
                            n_quant, NULL, 0, bytes);
}

/* An index vector as the SparseIndexVector union's table (Int32Vector / Uint16Vector /
 * Uint8Vector: values 0). */
static size_t wb_index_vector(wb_t *w, const ar_index_vector_t *v) {
  wf_t f[] = {{0, 4, 0, true, 0}};
  size_t t = wb_table(w, f, 1);
  size_t esz = v->type == AR_IDX_UINT8 ? 1 : v->type == AR_IDX_UINT16 ? 2 : 4;
  wb_link(w, f[0].slot, wb_vec(w, v->data, v->length, esz));
  return t;
}

/* SparsityParameters: traversal_order 0, block_map 1, dim_metadata 2 (DimensionMetadata: format 0,
 * dense_size 1, array_segments_type 2, array_segments 3, array_indices_type 4, array_indices 5). */
static size_t wb_sparsity(wb_t *w, const ar_sparsity_t *sp) {
  wf_t f[] = {{0, 4, 0, true, 0}, {1, 4, 0, true, 0}, {2, 4, 0, true, 0}};
  size_t t = wb_table(w, f, 3);
  wb_link(w, f[0].slot, wb_vec(w, sp->traversal_order, (uint32_t)sp->n_traversal_order, 4));
  wb_link(w, f[1].slot, wb_vec(w, sp->block_map, (uint32_t)sp->n_block_map, 4));
  size_t s = wb_refs(w, (uint32_t)sp->n_dim_metadata);
  wb_link(w, f[2].slot, s - 4);
  for (int32_t l = 0; l < sp->n_dim_metadata; l++) {
    const ar_dim_metadata_t *m = &sp->dim_metadata[l];
    if (m->format == AR_DIM_DENSE) {
      wf_t d[] = {{0, 1, 0, false, 0}, {1, 4, m->dense_size, false, 0}};
      wb_link(w, s + 4 * (size_t)l, wb_table(w, d, 2));
    } else {
      wf_t d[] = {{0, 1, 1, false, 0}, {2, 1, m->array_segments.type, false, 0}, {3, 4, 0, true, 0},
                  {4, 1, m->array_indices.type, false, 0}, {5, 4, 0, true, 0}};
      wb_link(w, s + 4 * (size_t)l, wb_table(w, d, 5));
      wb_link(w, d[2].slot, wb_index_vector(w, &m->array_segments));
      wb_link(w, d[4].slot, wb_index_vector(w, &m->array_indices));
    }
  }
  return t;
}

uint8_t *ar_tm_build_sparse(const ar_tm_tensor_t *tensors, int n_tensors, const ar_tm_op_t *ops,
                            int n_ops, const int32_t *inputs, int n_inputs, const int32_t *outputs,
                            int n_outputs, const ar_tm_quant_t *quant, int n_quant,
                            const ar_tm_sparse_t *sparse, int n_sparse, size_t *bytes) {
  const ar_tm_args_t a = {tensors, n_tensors, ops, n_ops, inputs, n_inputs, outputs, n_outputs, quant, n_quant,
                          sparse, n_sparse, NULL, 0, NULL, 0};
  return ar_tm_build_args(&a, bytes);
}

/* One subgraph's table at slot `slot`; constants numbered from *next_buffer. */
static void wb_subgraph(wb_t *w, size_t slot, const ar_tm_args_t *a, const int32_t *codes, int n_codes,
                        uint32_t *next_buffer) {
  const ar_tm_tensor_t *tensors = a->tensors;
  const ar_tm_quant_t *quant = a->quant;
  const ar_tm_sparse_t *sparse = a->sparse;
  const int n_tensors = a->n_tensors, n_ops = a->n_ops;
  wf_t sg[] = {{0, 4, 0, true, 0}, {1, 4, 0, true, 0}, {2, 4, 0, true, 0}, {3, 4, 0, true, 0},
               {4, 4, 0, true, 0}};
  wb_link(w, slot, wb_table(w, sg, 5));
  size_t ts = wb_refs(w, (uint32_t)n_tensors);
  wb_link(w, sg[0].slot, ts - 4);
  for (int i = 0; i < n_tensors; i++) {
    const ar_tm_tensor_t *t = &tensors[i];
    const ar_tm_quant_t *tq = NULL;
    for (int k = 0; k < a->n_quant; k++)
      if (quant[k].tensor == i) tq = &quant[k];
    const ar_tm_sparse_t *tsp = NULL;
    for (int k = 0; k < a->n_sparse; k++)
      if (sparse[k].tensor == i) tsp = &sparse[k];
    /* Tensor fields: shape 0, type 1, buffer 2, name 3, quantization 4, sparsity 6,
     * shape_signature 7. */
    wf_t tf[8] = {{0, 4, 0, true, 0}, {1, 1, t->dtype, false, 0},
                  {2, 4, t->data ? *next_buffer : 0, false, 0}, {3, 4, 0, true, 0}};
    int ntf = 4, sig_at = -1, q_at = -1, sp_at = -1;
    for (int k = 0; k < a->n_variables; k++)
      if (a->variables[k] == i) tf[ntf++] = (wf_t){5, 1, 1, false, 0};
    if (tq && tq->n > 0) { q_at = ntf; tf[ntf++] = (wf_t){4, 4, 0, true, 0}; }
    if (tsp) { sp_at = ntf; tf[ntf++] = (wf_t){6, 4, 0, true, 0}; }
    if (t->has_sig) { sig_at = ntf; tf[ntf++] = (wf_t){7, 4, 0, true, 0}; }
    if (t->data) (*next_buffer)++;
    wb_link(w, ts + 4 * (size_t)i, wb_table(w, tf, ntf));
    wb_link(w, tf[0].slot, wb_vec(w, t->dims, (uint32_t)t->rank, 4));
    wb_link(w, tf[3].slot, wb_string(w, t->name));
    if (sig_at >= 0) wb_link(w, tf[sig_at].slot, wb_vec(w, t->sig, (uint32_t)t->rank, 4));
    if (sp_at >= 0) wb_link(w, tf[sp_at].slot, wb_sparsity(w, tsp->sp));
    if (q_at >= 0) {
      /* QuantizationParameters: scale 2 (float vector), zero_point 3 (long vector),
       * quantized_dimension 6. */
      wf_t qf[] = {{2, 4, 0, true, 0}, {3, 4, 0, true, 0}, {6, 4, tq->qdim, false, 0}};
      wb_link(w, tf[q_at].slot, wb_table(w, qf, 3));
      wb_link(w, qf[0].slot, wb_vec(w, tq->scale, (uint32_t)tq->n, 4));
      wb_link(w, qf[1].slot, wb_vec_aligned(w, tq->zero_point, (uint32_t)tq->n, 8, 8));
    }
  }
  wb_link(w, sg[1].slot, wb_vec(w, a->inputs, (uint32_t)a->n_inputs, 4));
  wb_link(w, sg[2].slot, wb_vec(w, a->outputs, (uint32_t)a->n_outputs, 4));
  size_t s = wb_refs(w, (uint32_t)n_ops);
  wb_link(w, sg[3].slot, s - 4);
  for (int k = 0; k < n_ops; k++) {
    const ar_tm_op_t *o = &a->ops[k];
    int c = 0;
    while (c < n_codes && codes[c] != o->builtin) c++;
    wf_t of[] = {{0, 4, c, false, 0}, {1, 4, 0, true, 0}, {2, 4, 0, true, 0},
                 {3, 1, o->options_type, false, 0}, {4, 4, 0, true, 0}};
    wb_link(w, s + 4 * (size_t)k, wb_table(w, of, o->options_type ? 5 : 3));
    wb_link(w, of[1].slot, wb_vec(w, o->in, (uint32_t)o->n_in, 4));
    wb_link(w, of[2].slot, wb_vec(w, o->out, (uint32_t)o->n_out, 4));
    if (o->options_type) {
      wf_t f[8];
      for (int j = 0; j < o->n_fields; j++)
        f[j] = (wf_t){o->fields[j].id, o->fields[j].size ? o->fields[j].size : 4, o->fields[j].val,
                      o->fields[j].size == 0, 0};
      wb_link(w, of[4].slot, wb_table(w, f, o->n_fields));
      for (int j = 0; j < o->n_fields; j++)
        if (o->fields[j].size == 0) {
          const char *str = (const char *)(intptr_t)o->fields[j].val;
          wb_link(w, f[j].slot, wb_string(w, str ? str : ""));
        }
    }
  }
  wb_link(w, sg[4].slot, wb_string(w, "main"));
}

/* The constants' buffers of one subgraph, from buffer *b on. */
static void wb_buffers(wb_t *w, size_t s, const ar_tm_args_t *a, uint32_t *b) {
  for (int i = 0; i < a->n_tensors; i++) {
    const ar_tm_tensor_t *t = &a->tensors[i];
    if (!t->data) continue;
    uint64_t n = 1;
    for (int32_t d = 0; d < t->rank; d++) n *= (uint64_t)t->dims[d];
    size_t nb = (size_t)n * dtype_bytes(t->dtype);
    for (int k = 0; k < a->n_sparse; k++)
      if (a->sparse[k].tensor == i) nb = (size_t)a->sparse[k].data_bytes;   /* the stored values */
    wf_t bf[] = {{0, 4, 0, true, 0}};
    wb_link(w, s + 4 * (size_t)*b, wb_table(w, bf, 1));
    wb_link(w, bf[0].slot, wb_vec_aligned(w, t->data, (uint32_t)nb, 1, 16));
    (*b)++;
  }
}

uint8_t *ar_tm_build_args(const ar_tm_args_t *a, size_t *bytes) {
  const int n_sg = 1 + a->n_subgraphs;
  wb_t w0 = {0}, *w = &w0;
  size_t root = wb_put(w, NULL, 4);
  wb_put(w, "TFL3", 4);
  wf_t mf[] = {{0, 4, 3, false, 0}, {1, 4, 0, true, 0}, {2, 4, 0, true, 0}, {3, 4, 0, true, 0},
               {4, 4, 0, true, 0}};
  wb_link(w, root, wb_table(w, mf, 5));
  /* Operator codes: one per distinct builtin, in order of first use over the subgraphs. */
  int32_t codes[64];
  int n_codes = 0;
  uint32_t n_buffers = 1;
  for (int g = 0; g < n_sg; g++) {
    const ar_tm_args_t *sa = g == 0 ? a : &a->subgraphs[g - 1];
    assert(sa->n_ops <= 256);
    for (int k = 0; k < sa->n_ops; k++) {
      int c = 0;
      while (c < n_codes && codes[c] != sa->ops[k].builtin) c++;
      if (c == n_codes) {
        assert(n_codes < 64);
        codes[n_codes++] = sa->ops[k].builtin;
      }
    }
    for (int i = 0; i < sa->n_tensors; i++) n_buffers += sa->tensors[i].data != NULL;
  }
  size_t s = wb_refs(w, (uint32_t)n_codes);
  wb_link(w, mf[1].slot, s - 4);
  for (int c = 0; c < n_codes; c++) {
    wf_t oc[] = {{0, 1, codes[c] < 127 ? codes[c] : 127, false, 0}, {2, 4, 1, false, 0},
                 {3, 4, codes[c], false, 0}};
    wb_link(w, s + 4 * (size_t)c, wb_table(w, oc, 3));
  }
  s = wb_refs(w, (uint32_t)n_sg);
  wb_link(w, mf[2].slot, s - 4);
  uint32_t next_buffer = 1;
  for (int g = 0; g < n_sg; g++)
    wb_subgraph(w, s + 4 * (size_t)g, g == 0 ? a : &a->subgraphs[g - 1], codes, n_codes, &next_buffer);
  /* Buffers: 0 empty, then each constant's data (16-byte aligned), subgraph by subgraph. */
  s = wb_refs(w, n_buffers);
  wb_link(w, mf[4].slot, s - 4);
  wb_link(w, s, wb_table(w, NULL, 0));
  uint32_t b = 1;
  for (int g = 0; g < n_sg; g++) wb_buffers(w, s, g == 0 ? a : &a->subgraphs[g - 1], &b);
  wb_link(w, mf[3].slot, wb_string(w, "ar_tm_build"));
  /* A 16-byte aligned copy, so constants are aligned in memory as in a mapped file. */
  uint8_t *out = aligned_alloc(16, (w->n + 15) / 16 * 16);
  assert(out != NULL);
  memcpy(out, w->b, w->n);
  *bytes = w->n;
  free(w->b);
  return out;
}

int64_t ar_tm_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (int64_t)u;
}

/* ---- the integer I/O model ---- */

uint8_t *ar_tm_int_io_model(size_t *bytes) {
  static const float s_u8[1] = {0.5f}, s_i8[1] = {0.25f}, s_pa[3] = {0.5f, 1.0f, 2.0f};
  static const int64_t z_u8[1] = {10}, z_i8[1] = {-3}, z_pa[3] = {0, 1, -1};
  static const int32_t sh_u8[1] = {4}, sh_i8[2] = {2, 3}, sh_3[1] = {3}, sh_2[1] = {2}, sh_4[1] = {4};
  const ar_tm_tensor_t t[] = {
    {"u8_in", AR_DTYPE_UINT8, 2, {1, 4}, false, {0}, NULL},      {"u8_out", AR_DTYPE_UINT8, 1, {4}, false, {0}, NULL},
    {"i8_in", AR_DTYPE_INT8, 2, {1, 6}, false, {0}, NULL},       {"i8_out", AR_DTYPE_INT8, 2, {2, 3}, false, {0}, NULL},
    {"i32_in", AR_DTYPE_INT32, 1, {3}, false, {0}, NULL},        {"i32_out", AR_DTYPE_INT32, 1, {3}, false, {0}, NULL},
    {"i64_in", AR_DTYPE_INT64, 1, {2}, false, {0}, NULL},        {"i64_out", AR_DTYPE_INT64, 1, {2}, false, {0}, NULL},
    {"b_in", AR_DTYPE_BOOL, 1, {4}, false, {0}, NULL},           {"b_out", AR_DTYPE_BOOL, 1, {4}, false, {0}, NULL},
    {"s_u8", AR_DTYPE_INT32, 1, {1}, false, {0}, sh_u8},         {"s_i8", AR_DTYPE_INT32, 1, {2}, false, {0}, sh_i8},
    {"s_3", AR_DTYPE_INT32, 1, {1}, false, {0}, sh_3},           {"s_2", AR_DTYPE_INT32, 1, {1}, false, {0}, sh_2},
    {"s_4", AR_DTYPE_INT32, 1, {1}, false, {0}, sh_4},
  };
  const ar_tm_quant_t q[] = {{0, 1, s_u8, z_u8, 0}, {1, 1, s_u8, z_u8, 0}, {2, 1, s_i8, z_i8, 0},
                             {3, 3, s_pa, z_pa, 1}};
  ar_tm_op_t ops[5];
  for (int k = 0; k < 5; k++)
    ops[k] = (ar_tm_op_t){.builtin = 22 /* RESHAPE */, .n_in = 2, .n_out = 1, .in = {2 * k, 10 + k}, .out = {2 * k + 1}};
  const int32_t ins[5] = {0, 2, 4, 6, 8}, outs[5] = {1, 3, 5, 7, 9};
  return ar_tm_build_quant(t, 15, ops, 5, ins, 5, outs, 5, q, 4, bytes);
}

/* ---- the resize test model ---- */

static float rb_w[AR_TM_BATCH_O * 3 * 3 * AR_TM_BATCH_C], rb_b[AR_TM_BATCH_O], rb_k[AR_TM_BATCH_O];
static const int32_t rb_shape[2] = {-1, AR_TM_BATCH_OUT};

/* x[-1,4,4,3] -> CONV_2D 3x3 SAME (w, b) -> ADD k (broadcast [2]) -> RELU fused in ADD ->
 * MAX_POOL_2D 2x2/2 -> RESHAPE [-1, 8] -> y. */
uint8_t *ar_tm_batch_model(size_t *bytes) {
  for (size_t i = 0; i < sizeof rb_w / sizeof rb_w[0]; i++) rb_w[i] = (float)((int)(i * 7 % 13) - 6) / 8.0f;
  rb_b[0] = 0.25f, rb_b[1] = -0.5f;
  rb_k[0] = -0.125f, rb_k[1] = 0.375f;
  ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_FLOAT32, 4, {1, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C}, true, {-1, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C}, NULL},
    {"w", AR_DTYPE_FLOAT32, 4, {AR_TM_BATCH_O, 3, 3, AR_TM_BATCH_C}, false, {0}, rb_w},
    {"b", AR_DTYPE_FLOAT32, 1, {AR_TM_BATCH_O}, false, {0}, rb_b},
    {"c", AR_DTYPE_FLOAT32, 4, {1, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_O}, false, {0}, NULL},
    {"k", AR_DTYPE_FLOAT32, 1, {AR_TM_BATCH_O}, false, {0}, rb_k},
    {"a", AR_DTYPE_FLOAT32, 4, {1, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_O}, false, {0}, NULL},
    {"p", AR_DTYPE_FLOAT32, 4, {1, AR_TM_BATCH_H / 2, AR_TM_BATCH_W / 2, AR_TM_BATCH_O}, false, {0}, NULL},
    {"s", AR_DTYPE_INT32, 1, {2}, false, {0}, rb_shape},
    {"y", AR_DTYPE_FLOAT32, 2, {1, AR_TM_BATCH_OUT}, false, {0}, NULL},
  };
  ar_tm_op_t ops[] = {
    {3, 3, 1, {0, 1, 2}, {3}, 1, 5, {{0, 1, 0}, {1, 4, 1}, {2, 4, 1}, {4, 4, 1}, {5, 4, 1}}},  /* CONV_2D SAME */
    {0, 2, 1, {3, 4}, {5}, 11, 1, {{0, 1, 1}}},                                           /* ADD, RELU */
    {17, 1, 1, {5}, {6}, 5, 5, {{0, 1, 1}, {1, 4, 2}, {2, 4, 2}, {3, 4, 2}, {4, 4, 2}}},  /* MAX_POOL VALID */
    {22, 2, 1, {6, 7}, {8}, 0, 0, {{0}}},                                                 /* RESHAPE */
  };
  const int32_t gin[] = {0}, gout[] = {8};
  return ar_tm_build(t, 9, ops, 4, gin, 1, gout, 1, bytes);
}

/* The model by hand for one item x[4][4][3] -> y[8] (order [py][px][o]). */
void ar_tm_batch_by_hand(const float *x, float *y) {
  float a[AR_TM_BATCH_H][AR_TM_BATCH_W][AR_TM_BATCH_O];
  for (int oy = 0; oy < AR_TM_BATCH_H; oy++)
    for (int ox = 0; ox < AR_TM_BATCH_W; ox++)
      for (int o = 0; o < AR_TM_BATCH_O; o++) {
        double acc = rb_b[o];
        for (int ky = 0; ky < 3; ky++)
          for (int kx = 0; kx < 3; kx++) {
            int iy = oy + ky - 1, ix = ox + kx - 1;   /* SAME 3x3 stride 1: one row/col each side */
            if (iy < 0 || iy >= AR_TM_BATCH_H || ix < 0 || ix >= AR_TM_BATCH_W) continue;
            for (int c = 0; c < AR_TM_BATCH_C; c++)
              acc += (double)x[(iy * AR_TM_BATCH_W + ix) * AR_TM_BATCH_C + c] * rb_w[((o * 3 + ky) * 3 + kx) * AR_TM_BATCH_C + c];
          }
        double v = acc + rb_k[o];
        a[oy][ox][o] = (float)(v > 0 ? v : 0);
      }
  for (int py = 0; py < AR_TM_BATCH_H / 2; py++)
    for (int px = 0; px < AR_TM_BATCH_W / 2; px++)
      for (int o = 0; o < AR_TM_BATCH_O; o++) {
        float m = a[2 * py][2 * px][o];
        if (a[2 * py][2 * px + 1][o] > m) m = a[2 * py][2 * px + 1][o];
        if (a[2 * py + 1][2 * px][o] > m) m = a[2 * py + 1][2 * px][o];
        if (a[2 * py + 1][2 * px + 1][o] > m) m = a[2 * py + 1][2 * px + 1][o];
        y[(py * (AR_TM_BATCH_W / 2) + px) * AR_TM_BATCH_O + o] = m;
      }
}


uint8_t *ar_tm_build_relu(const char *in_name, const char *out_name, size_t *bytes) {
  const ar_tm_tensor_t t[2] = {{in_name, AR_DTYPE_FLOAT32, 2, {1, 4}, false, {0}, NULL},
                               {out_name, AR_DTYPE_FLOAT32, 2, {1, 4}, false, {0}, NULL}};
  const ar_tm_op_t relu = {19 /* BuiltinOperator RELU */, 1, 1, {0}, {1}, 0, 0, {{0, 0, 0}}};
  const int32_t gin[1] = {0}, gout[1] = {1};
  return ar_tm_build(t, 2, &relu, 1, gin, 1, gout, 1, bytes);
}
