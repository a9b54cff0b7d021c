/* ar_flexbuf.c - the FlexBuffers map reader of ar_flexbuf.h. */
#include "loader/ar_flexbuf.h"

#include <string.h>

enum { FBT_NULL = 0, FBT_INT = 1, FBT_UINT = 2, FBT_FLOAT = 3, FBT_KEY = 4, FBT_INDIRECT_INT = 6,
       FBT_INDIRECT_UINT = 7, FBT_INDIRECT_FLOAT = 8, FBT_MAP = 9, FBT_BOOL = 26 };

static int valid_width(uint32_t w) { return w == 1 || w == 2 || w == 4 || w == 8; }

/* Little-endian unsigned of width w at off; -1 if out of bounds. */
static int rd_u(const uint8_t *b, size_t len, size_t off, uint32_t w, uint64_t *out) {
  if (!valid_width(w) || off > len || len - off < w) return -1;
  uint64_t v = 0;
  for (uint32_t i = 0; i < w; i++) v |= (uint64_t)b[off + i] << (8 * i);
  *out = v;
  return 0;
}

static int rd_i(const uint8_t *b, size_t len, size_t off, uint32_t w, int64_t *out) {
  uint64_t u;
  if (rd_u(b, len, off, w, &u)) return -1;
  if (w < 8 && (u >> (8 * w - 1)) & 1) u |= ~(uint64_t)0 << (8 * w);   /* sign-extend */
  memcpy(out, &u, sizeof *out);
  return 0;
}

static int rd_f(const uint8_t *b, size_t len, size_t off, uint32_t w, double *out) {
  uint64_t u;
  if ((w != 4 && w != 8) || rd_u(b, len, off, w, &u)) return -1;
  if (w == 4) { uint32_t x = (uint32_t)u; float f; memcpy(&f, &x, 4); *out = f; }
  else { double d; memcpy(&d, &u, 8); *out = d; }
  return 0;
}

/* Target of the offset stored at `at` (width w): at - offset, which must lie inside the buffer. */
static int follow(const uint8_t *b, size_t len, size_t at, uint32_t w, size_t *out) {
  uint64_t off;
  if (rd_u(b, len, at, w, &off) || off > at) return -1;
  *out = at - (size_t)off;
  return 0;
}

int ar_flexmap_open(const uint8_t *buf, size_t len, ar_flexmap_t *m) {
  memset(m, 0, sizeof *m);
  if (!buf || len < 3) return -1;
  const uint32_t root_w = buf[len - 1];
  const uint8_t packed = buf[len - 2];
  if (!valid_width(root_w) || len < 2 + (size_t)root_w) return -1;
  if ((packed >> 2) != FBT_MAP) return -1;
  const uint32_t w = 1u << (packed & 3);
  size_t vals;
  if (follow(buf, len, len - 2 - root_w, root_w, &vals)) return -1;
  /* [keys offset][keys width][count] precede the values, each `w` bytes. */
  if (vals < 3 * (size_t)w) return -1;
  uint64_t kw, n;
  size_t keys;
  if (follow(buf, len, vals - 3 * (size_t)w, w, &keys) || rd_u(buf, len, vals - 2 * (size_t)w, w, &kw) ||
      rd_u(buf, len, vals - (size_t)w, w, &n))
    return -1;
  if (!valid_width((uint32_t)kw) || kw > 8) return -1;
  /* Values, then one type byte per value; keys: count slots after their own count. */
  if (n > len || vals + n * w + n > len) return -1;
  uint64_t kn;
  if (keys < kw || rd_u(buf, len, keys - (size_t)kw, (uint32_t)kw, &kn) || kn != n ||
      keys + n * kw > len)
    return -1;
  m->buf = buf; m->len = len; m->vals = vals; m->width = w; m->count = (uint32_t)n;
  m->keys = keys; m->key_width = (uint32_t)kw;
  return 0;
}

/* Key i as a NUL-terminated string inside the buffer, or NULL. */
static const char *key_at(const ar_flexmap_t *m, uint32_t i) {
  size_t k;
  if (follow(m->buf, m->len, m->keys + (size_t)i * m->key_width, m->key_width, &k)) return NULL;
  if (!memchr(m->buf + k, '\0', m->len - k)) return NULL;
  return (const char *)m->buf + k;
}

int ar_flexmap_number(const ar_flexmap_t *m, const char *key, double *out) {
  for (uint32_t i = 0; i < m->count; i++) {
    const char *k = key_at(m, i);
    if (!k) return -1;
    if (strcmp(k, key) != 0) continue;
    const size_t at = m->vals + (size_t)i * m->width;
    const uint8_t packed = m->buf[m->vals + (size_t)m->count * m->width + i];
    const int type = packed >> 2;
    const uint32_t cw = 1u << (packed & 3);
    size_t tgt;
    int64_t iv;
    uint64_t uv;
    switch (type) {
    case FBT_INT:
      if (rd_i(m->buf, m->len, at, m->width, &iv)) return -1;
      *out = (double)iv;
      return 1;
    case FBT_UINT: case FBT_BOOL:
      if (rd_u(m->buf, m->len, at, m->width, &uv)) return -1;
      *out = (double)uv;
      return 1;
    case FBT_FLOAT:
      return rd_f(m->buf, m->len, at, m->width, out) ? -1 : 1;
    case FBT_INDIRECT_INT:
      if (follow(m->buf, m->len, at, m->width, &tgt) || rd_i(m->buf, m->len, tgt, cw, &iv)) return -1;
      *out = (double)iv;
      return 1;
    case FBT_INDIRECT_UINT:
      if (follow(m->buf, m->len, at, m->width, &tgt) || rd_u(m->buf, m->len, tgt, cw, &uv)) return -1;
      *out = (double)uv;
      return 1;
    case FBT_INDIRECT_FLOAT:
      if (follow(m->buf, m->len, at, m->width, &tgt)) return -1;
      return rd_f(m->buf, m->len, tgt, cw, out) ? -1 : 1;
    default:
      return -1;
    }
  }
  return 0;
}
