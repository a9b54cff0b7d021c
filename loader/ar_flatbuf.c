/* ar_flatbuf.c - the verifying FlatBuffers reader described in ar_flatbuf.h.
 *
 * Every function checks before it loads: positions are 64-bit file offsets compared against the
 * file length with subtraction (never `pos + size`, which could wrap), and a failure names the
 * decoder's context, the schema field and the offset so a broken file can be located with a hex
 * dump.
 */
#include "loader/ar_flatbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/ar_error.h"
#include "common/ar_text.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ar_flatbuf.c assumes a little-endian host (FlatBuffers are little-endian)"
#endif

void ar_fb_init(ar_fb_t *fb, const void *buf, uint64_t len, char *msg, size_t msg_bytes) {
  memset(fb, 0, sizeof(*fb));
  fb->buf = buf;
  fb->len = len;
  /* A well-formed file visits each table and element about once; 4 per byte leaves room for
   * legitimately shared vectors while bounding a file of offsets that all point at one table. */
  fb->budget = len * 4 + 65536;
  fb->msg = msg;
  fb->msg_bytes = msg_bytes;
}

int ar_fb_fail(ar_fb_t *fb, const char *what, const char *fmt, ...) {
  if (fb->msg && fb->msg_bytes > 0) {
    char detail[AR_MSG_BYTES];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    if (fb->ctx[0])
      snprintf(fb->msg, fb->msg_bytes, "%s: %s: %s", fb->ctx, what, detail);
    else
      snprintf(fb->msg, fb->msg_bytes, "%s: %s", what, detail);
  }
  return AR_EMODEL;
}

uint8_t ar_fb_load_u8(const ar_fb_t *fb, uint64_t pos) { return fb->buf[pos]; }
uint16_t ar_fb_load_u16(const ar_fb_t *fb, uint64_t pos) {
  uint16_t v;
  memcpy(&v, fb->buf + pos, sizeof(v));
  return v;
}
uint32_t ar_fb_load_u32(const ar_fb_t *fb, uint64_t pos) {
  uint32_t v;
  memcpy(&v, fb->buf + pos, sizeof(v));
  return v;
}
uint64_t ar_fb_load_u64(const ar_fb_t *fb, uint64_t pos) {
  uint64_t v;
  memcpy(&v, fb->buf + pos, sizeof(v));
  return v;
}

static int charge(ar_fb_t *fb, uint64_t n, const char *what) {
  if (n > fb->budget)
    return ar_fb_fail(fb, what, "visit budget exhausted (the file references more tables and "
                      "elements than %llu bytes can hold without heavy sharing)",
                      (unsigned long long)fb->len);
  fb->budget -= n;
  return 0;
}

int ar_fb_root(ar_fb_t *fb, const char *ident, ar_fb_table_t *root) {
  if (!ar_fb_in_file(fb, 0, 8))
    return ar_fb_fail(fb, "file", "the file (%llu bytes) is too short for a FlatBuffer (root "
                      "offset and file identifier need 8)", (unsigned long long)fb->len);
  if (ident && memcmp(fb->buf + 4, ident, 4) != 0) {
    /* The bytes found are not echoed: the file may be anything (a daemon must not leak a line of
     * a file that is not a model through its error message). */
    return ar_fb_fail(fb, "file", "no \"%s\" file identifier at byte 4 (not a TensorFlow Lite file)", ident);
  }
  uint32_t off = ar_fb_load_u32(fb, 0);
  return ar_fb_table_at(fb, off, "root table", root);
}

int ar_fb_table_at(ar_fb_t *fb, uint64_t pos, const char *what, ar_fb_table_t *out) {
  memset(out, 0, sizeof(*out));
  if (!ar_fb_in_file(fb, pos, 4))
    return ar_fb_fail(fb, what, "table at offset %llu lies outside the file (%llu bytes)",
                      (unsigned long long)pos, (unsigned long long)fb->len);
  if (pos % 4 != 0)
    return ar_fb_fail(fb, what, "table at offset %llu is not 4-byte aligned", (unsigned long long)pos);
  int rc = charge(fb, 1, what);
  if (rc) return rc;
  int32_t soff = (int32_t)ar_fb_load_u32(fb, pos);
  int64_t vt = (int64_t)pos - (int64_t)soff;   /* |soff| < 2^31 and pos < 2^63: no overflow */
  if (vt < 0 || !ar_fb_in_file(fb, (uint64_t)vt, 4))
    return ar_fb_fail(fb, what, "vtable of the table at offset %llu is at %lld, outside the file "
                      "(%llu bytes)", (unsigned long long)pos, (long long)vt, (unsigned long long)fb->len);
  if (vt % 2 != 0)
    return ar_fb_fail(fb, what, "vtable at offset %lld is not 2-byte aligned", (long long)vt);
  uint32_t vt_bytes = ar_fb_load_u16(fb, (uint64_t)vt);
  uint32_t obj_bytes = ar_fb_load_u16(fb, (uint64_t)vt + 2);
  if (vt_bytes < 4 || vt_bytes % 2 != 0 || !ar_fb_in_file(fb, (uint64_t)vt, vt_bytes))
    return ar_fb_fail(fb, what, "vtable at offset %lld has size %u (must be even, >= 4 and inside "
                      "the file (%llu bytes))", (long long)vt, vt_bytes, (unsigned long long)fb->len);
  if (obj_bytes < 4 || !ar_fb_in_file(fb, pos, obj_bytes))
    return ar_fb_fail(fb, what, "table at offset %llu declares %u object bytes (must be >= 4 and "
                      "inside the file (%llu bytes))", (unsigned long long)pos, obj_bytes,
                      (unsigned long long)fb->len);
  out->pos = pos;
  out->vtable = (uint64_t)vt;
  out->vtable_bytes = vt_bytes;
  out->object_bytes = obj_bytes;
  return 0;
}

uint64_t ar_fb_vtable_entry_pos(const ar_fb_table_t *t, unsigned id) {
  uint64_t entry = 4 + 2 * (uint64_t)id;
  if (entry + 2 > t->vtable_bytes) return 0;
  return t->vtable + entry;
}

int ar_fb_field_pos(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, unsigned size,
                    const char *what, uint64_t *pos) {
  *pos = 0;
  uint64_t entry = ar_fb_vtable_entry_pos(t, id);
  if (entry == 0) return 0;                     /* vtable shorter: field absent (older writer) */
  uint32_t off = ar_fb_load_u16(fb, entry);
  if (off == 0) return 0;
  if (off < 4 || (uint64_t)off + size > t->object_bytes)
    return ar_fb_fail(fb, what, "field %u of the table at offset %llu is at object offset %u, "
                      "size %u, but the object has %u bytes", id, (unsigned long long)t->pos, off,
                      size, t->object_bytes);
  *pos = t->pos + off;                          /* inside the object, which is inside the file */
  return 0;
}

#define AR__FB_GETTER(fn, type, size, load)                                                  \
  int fn(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, type dflt, const char *what,    \
         type *out) {                                                                        \
    uint64_t pos;                                                                            \
    int rc = ar_fb_field_pos(fb, t, id, size, what, &pos);                                   \
    if (rc) return rc;                                                                       \
    *out = pos ? (type)load(fb, pos) : dflt;                                                 \
    return 0;                                                                                \
  }
AR__FB_GETTER(ar_fb_get_u8, uint8_t, 1, ar_fb_load_u8)
AR__FB_GETTER(ar_fb_get_i8, int8_t, 1, ar_fb_load_u8)
AR__FB_GETTER(ar_fb_get_i32, int32_t, 4, ar_fb_load_u32)
AR__FB_GETTER(ar_fb_get_u32, uint32_t, 4, ar_fb_load_u32)
AR__FB_GETTER(ar_fb_get_u64, uint64_t, 8, ar_fb_load_u64)
#undef AR__FB_GETTER

int ar_fb_get_bool(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, bool dflt, const char *what,
                   bool *out) {
  uint8_t v;
  int rc = ar_fb_get_u8(fb, t, id, dflt ? 1 : 0, what, &v);
  if (rc) return rc;
  *out = v != 0;
  return 0;
}

int ar_fb_get_ref(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, const char *what, uint64_t *target) {
  uint64_t pos;
  *target = 0;
  int rc = ar_fb_field_pos(fb, t, id, 4, what, &pos);
  if (rc || pos == 0) return rc;
  uint64_t dst = pos + ar_fb_load_u32(fb, pos);  /* pos < 2^63, value < 2^32: no wrap */
  if (dst >= fb->len)
    return ar_fb_fail(fb, what, "offset at %llu points to %llu, past the end of the file (%llu bytes)",
                      (unsigned long long)pos, (unsigned long long)dst, (unsigned long long)fb->len);
  *target = dst;
  return 0;
}

int ar_fb_get_table(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, const char *what,
                    ar_fb_table_t *out, bool *present) {
  uint64_t dst;
  memset(out, 0, sizeof(*out));
  *present = false;
  int rc = ar_fb_get_ref(fb, t, id, what, &dst);
  if (rc || dst == 0) return rc;
  rc = ar_fb_table_at(fb, dst, what, out);
  if (rc == 0) *present = true;
  return rc;
}

int ar_fb_vector_at(ar_fb_t *fb, uint64_t pos, unsigned elem_bytes, const char *what, ar_fb_vec_t *out) {
  memset(out, 0, sizeof(*out));
  if (!ar_fb_in_file(fb, pos, 4))
    return ar_fb_fail(fb, what, "vector at offset %llu lies outside the file (%llu bytes)",
                      (unsigned long long)pos, (unsigned long long)fb->len);
  if (pos % 4 != 0)
    return ar_fb_fail(fb, what, "vector at offset %llu is not 4-byte aligned", (unsigned long long)pos);
  uint32_t n = ar_fb_load_u32(fb, pos);
  uint64_t bytes = (uint64_t)n * elem_bytes;     /* < 2^32 * 2^16: no overflow */
  if (!ar_fb_in_file(fb, pos + 4, bytes))
    return ar_fb_fail(fb, what, "vector at offset %llu has %u elements of %u bytes, which run past "
                      "the end of the file (%llu bytes)", (unsigned long long)pos, n, elem_bytes,
                      (unsigned long long)fb->len);
  int rc = charge(fb, n, what);
  if (rc) return rc;
  out->pos = pos + 4;
  out->count = n;
  out->present = true;
  return 0;
}

int ar_fb_get_vector(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, unsigned elem_bytes,
                     const char *what, ar_fb_vec_t *out) {
  uint64_t dst;
  memset(out, 0, sizeof(*out));
  int rc = ar_fb_get_ref(fb, t, id, what, &dst);
  if (rc || dst == 0) return rc;
  return ar_fb_vector_at(fb, dst, elem_bytes, what, out);
}

int ar_fb_vec_table(ar_fb_t *fb, const ar_fb_vec_t *v, uint32_t i, const char *what, ar_fb_table_t *out) {
  if (i >= v->count)
    return ar_fb_fail(fb, what, "element %u of a vector of %u", i, v->count);
  uint64_t pos = v->pos + 4 * (uint64_t)i;       /* inside the verified vector */
  uint64_t dst = pos + ar_fb_load_u32(fb, pos);
  if (dst >= fb->len)
    return ar_fb_fail(fb, what, "element %u: offset at %llu points to %llu, past the end of the "
                      "file (%llu bytes)", i, (unsigned long long)pos, (unsigned long long)dst,
                      (unsigned long long)fb->len);
  return ar_fb_table_at(fb, dst, what, out);
}

int ar_fb_get_string(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, const char *what,
                     const char **s, uint32_t *len) {
  ar_fb_vec_t v;
  *s = NULL;
  *len = 0;
  int rc = ar_fb_get_vector(fb, t, id, 1, what, &v);
  if (rc || !v.present) return rc;
  uint64_t nul = v.pos + v.count;
  if (!ar_fb_in_file(fb, nul, 1) || fb->buf[nul] != 0)
    return ar_fb_fail(fb, what, "string at offset %llu (%u bytes) is not NUL-terminated inside "
                      "the file (%llu bytes)", (unsigned long long)(v.pos - 4), v.count,
                      (unsigned long long)fb->len);
  /* A NUL inside the string is well-formed UTF-8, but every C reader (messages, the protocol's
   * strings, jansson, the budget table) would see only the bytes before it: refused like a
   * malformed byte, whichever comes first. */
  const char *str = (const char *)fb->buf + v.pos;
  const char *nul_in = memchr(str, 0, v.count);
  uint32_t end = nul_in ? (uint32_t)(nul_in - str) : v.count;
  uint32_t ok = (uint32_t)ar_utf8_valid_prefix(str, end);
  if (ok != end)
    return ar_fb_fail(fb, what, "string at offset %llu (%u bytes) is not valid UTF-8: the "
                      "sequence at byte %u (file offset %llu, 0x%02x) is malformed", (unsigned long long)(v.pos - 4), v.count,
                      ok, (unsigned long long)(v.pos + ok), fb->buf[v.pos + ok]);
  if (nul_in)
    return ar_fb_fail(fb, what, "string at offset %llu (%u bytes) holds a NUL byte at byte %u (file "
                      "offset %llu): C readers would see only its first %u bytes", (unsigned long long)(v.pos - 4),
                      v.count, end, (unsigned long long)(v.pos + end), end);
  *s = str;
  *len = v.count;
  return 0;
}
