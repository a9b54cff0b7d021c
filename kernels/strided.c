/* strided.c - the strided-copy engine of strided.h: dim merging at prepare, copy at eval (alone,
 * or cut over the thread pool into pieces of runs: a copy is the same whatever the cut). */
#include "kernels/strided.h"

#include <string.h>

#include "kernels/ar_parallel.h"

/* Runs are cut into pieces of at most this many elements (so that one long run spreads too). */
#define STRIDED_PIECE (16 * 1024)
/* The least bytes worth a chunk of pieces of its own on the thread pool. */
#define STRIDED_CHUNK_BYTES (128 * 1024)

void ar__strided_init(ar__strided_t *s, int32_t rank, const int64_t *dims, const int64_t *stride,
                      int64_t base, size_t esize) {
  memset(s, 0, sizeof *s);
  s->esize = (uint32_t)esize;
  s->base = base;
  s->n = 1;
  for (int32_t d = 0; d < rank; d++) s->n *= dims[d];
  int32_t r = 0;
  for (int32_t d = 0; d < rank && s->n > 0; d++) {
    if (dims[d] == 1) continue;   /* contributes no offset */
    /* Merge into the previous kept dim when stepping it equals a full sweep of this one. */
    if (r > 0 && s->stride[r - 1] == stride[d] * dims[d]) {
      s->dims[r - 1] *= dims[d];
      s->stride[r - 1] = stride[d];
      continue;
    }
    s->dims[r] = dims[d];
    s->stride[r] = stride[d];
    r++;
  }
  if (r == 0) { s->dims[0] = 1; s->stride[0] = 1; r = 1; }
  s->rank = r;
}

/* Inner run of `len` elements read `st` elements apart. */
static void copy_run(char *o, const char *i, int64_t len, int64_t st, uint32_t es) {
  if (st == 1) { memcpy(o, i, (size_t)len * es); return; }
  switch (es) {
  case 4: {
    uint32_t *d = (uint32_t *)(void *)o;
    for (int64_t k = 0; k < len; k++) memcpy(d + k, i + k * st * 4, 4);
    return;
  }
  case 8: {
    uint64_t *d = (uint64_t *)(void *)o;
    for (int64_t k = 0; k < len; k++) memcpy(d + k, i + k * st * 8, 8);
    return;
  }
  case 1:
    for (int64_t k = 0; k < len; k++) o[k] = i[k * st];
    return;
  default:
    for (int64_t k = 0; k < len; k++) memcpy(o + k * es, i + k * st * es, es);
    return;
  }
}

void ar__strided_copy(const ar__strided_t *s, const void *in, void *out) {
  if (s->n <= 0) return;
  const uint32_t es = s->esize;
  const int32_t last = s->rank - 1;
  const int64_t len = s->dims[last], st = s->stride[last];
  const char *src = (const char *)in + s->base * es;
  char *dst = out;
  int64_t idx[AR_STRIDED_MAX_DIMS] = {0};
  int64_t off = 0;   /* input element offset of the current run */
  for (int64_t done = 0; done < s->n; done += len) {
    copy_run(dst, src + off * es, len, st, es);
    dst += len * es;
    for (int32_t d = last - 1; d >= 0; d--) {
      off += s->stride[d];
      if (++idx[d] < s->dims[d]) break;
      off -= s->stride[d] * s->dims[d];
      idx[d] = 0;
    }
  }
}

typedef struct {
  const ar__strided_t *s;
  const char *in;
  char *out;
  int64_t parts;               /* pieces per run */
} strided_ctx_t;

/* Pieces [u0, u1): piece u is part u % parts of run u / parts. */
static void strided_pieces(void *ctx, int64_t u0, int64_t u1) {
  const strided_ctx_t *c = ctx;
  const ar__strided_t *s = c->s;
  const uint32_t es = s->esize;
  const int32_t last = s->rank - 1;
  const int64_t len = s->dims[last], st = s->stride[last];
  const char *src = c->in + s->base * es;
  int64_t idx[AR_STRIDED_MAX_DIMS] = {0};
  int64_t off = 0, rest = u0 / c->parts;
  for (int32_t d = last - 1; d >= 0; d--) {
    idx[d] = rest % s->dims[d];
    rest /= s->dims[d];
    off += idx[d] * s->stride[d];
  }
  for (int64_t u = u0; u < u1;) {
    const int64_t run = u / c->parts, j = (u % c->parts) * STRIDED_PIECE;
    const int64_t n = len - j < STRIDED_PIECE ? len - j : STRIDED_PIECE;
    copy_run(c->out + (run * len + j) * es, src + (off + j * st) * es, n, st, es);
    if (++u % c->parts != 0) continue;
    for (int32_t d = last - 1; d >= 0; d--) {
      off += s->stride[d];
      if (++idx[d] < s->dims[d]) break;
      off -= s->stride[d] * s->dims[d];
      idx[d] = 0;
    }
  }
}

void ar__strided_copy_node(const ar_node_t *node, const ar__strided_t *s, const void *in, void *out) {
  if (s->n <= 0) return;
  const int64_t len = s->dims[s->rank - 1];
  const strided_ctx_t c = {s, in, out, (len + STRIDED_PIECE - 1) / STRIDED_PIECE};
  const int64_t units = s->n / len * c.parts;
  const int64_t piece_bytes = (len < STRIDED_PIECE ? len : STRIDED_PIECE) * (int64_t)s->esize;
  ar_parallel_for(node, units, ar_parallel_grain(units, piece_bytes, STRIDED_CHUNK_BYTES, 1), strided_pieces,
                  (void *)&c);
}
