/* ar_flatbuf.h - a verifying FlatBuffers reader (internal to the loader, also used by its tests).
 *
 * Written for arenad; it follows the FlatBuffers binary format (little-endian):
 *
 *   file:    [u32 root uoffset][4-byte file identifier]...
 *   table:   [i32 soffset: vtable = table - soffset][inline fields ...]
 *   vtable:  [u16 vtable bytes][u16 object bytes][u16 field offset] x N   (0 = field absent)
 *   uoffset: u32, target = position of the uoffset + its value (always forward)
 *   vector:  [u32 count][count elements]; a string is a byte vector followed by a NUL byte.
 *
 * Nothing is read before it is checked: every position is a uint64_t file offset, every access
 * first checks `pos <= len && size <= len - pos` (no pointer arithmetic beyond the file, no
 * wrap-around), tables and vectors must be 4-byte aligned, vtables 2-byte aligned, and a field's
 * inline value must lie inside its table's object. A visit budget (tables + vector elements,
 * proportional to the file size) bounds the work a file full of shared offsets can cause. There is
 * no recursion: the decoder follows the schema, so nesting is bounded by it (Model > SubGraph >
 * Tensor > SparsityParameters > DimensionMetadata > index vector, 6 levels). Errors return AR_EMODEL and fill the message with the caller's
 * context (`ar_fb_t.ctx`, e.g. "subgraph 0, tensor 17"), the schema field and the offending offset.
 *
 * The schema-specific decoding (TFLite Model, SubGraph, Tensor, ...) lives in ar_model.c; field
 * ids are in ar_schema.h. Tests use these helpers to find the bytes of a field they corrupt.
 */
#ifndef AR_FLATBUF_H
#define AR_FLATBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ar_fb {
  const uint8_t *buf;
  uint64_t len;
  uint64_t budget;           /* tables + vector elements still allowed to be visited */
  char *msg;
  size_t msg_bytes;
  char ctx[96];              /* where the decoder is, prefixed to every message */
} ar_fb_t;

typedef struct ar_fb_table {
  uint64_t pos;              /* file offset of the table (its soffset) */
  uint64_t vtable;           /* file offset of its vtable */
  uint32_t vtable_bytes;
  uint32_t object_bytes;
} ar_fb_table_t;

typedef struct ar_fb_vec {
  uint64_t pos;              /* file offset of the first element (after the count) */
  uint32_t count;            /* 0 when the field is absent */
  bool present;
} ar_fb_vec_t;

/* Start reading `len` bytes at `buf`. The budget is 4 visits per file byte plus a constant. */
void ar_fb_init(ar_fb_t *fb, const void *buf, uint64_t len, char *msg, size_t msg_bytes);

/* Fail with AR_EMODEL: "<ctx>: <what>: <formatted text>". Returns AR_EMODEL. */
int ar_fb_fail(ar_fb_t *fb, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* True when [pos, pos+size) lies inside the file (overflow-safe). */
static inline bool ar_fb_in_file(const ar_fb_t *fb, uint64_t pos, uint64_t size) {
  return pos <= fb->len && size <= fb->len - pos;
}

/* Unchecked little-endian loads; callers check bounds first. */
uint8_t ar_fb_load_u8(const ar_fb_t *fb, uint64_t pos);
uint16_t ar_fb_load_u16(const ar_fb_t *fb, uint64_t pos);
uint32_t ar_fb_load_u32(const ar_fb_t *fb, uint64_t pos);
uint64_t ar_fb_load_u64(const ar_fb_t *fb, uint64_t pos);

/* The root table (checks the file holds the root uoffset and, when `ident` is not NULL, that
 * bytes 4..7 equal it). */
int ar_fb_root(ar_fb_t *fb, const char *ident, ar_fb_table_t *root);

/* Verify the table at `pos` (alignment, soffset, vtable and object inside the file). */
int ar_fb_table_at(ar_fb_t *fb, uint64_t pos, const char *what, ar_fb_table_t *out);

/* File offset of field `id`'s inline value of `size` bytes, or 0 when the field is absent.
 * Fails when the vtable entry puts the value outside the table's object. */
int ar_fb_field_pos(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, unsigned size,
                    const char *what, uint64_t *pos);

/* File offset of the vtable entry (u16) for field `id`, or 0 when the vtable is too short. For
 * tests that corrupt vtables. */
uint64_t ar_fb_vtable_entry_pos(const ar_fb_table_t *t, unsigned id);

/* Scalar fields with their schema default when absent. */
int ar_fb_get_u8(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, uint8_t dflt, const char *what, uint8_t *out);
int ar_fb_get_i8(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, int8_t dflt, const char *what, int8_t *out);
int ar_fb_get_i32(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, int32_t dflt, const char *what, int32_t *out);
int ar_fb_get_u32(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, uint32_t dflt, const char *what, uint32_t *out);
int ar_fb_get_u64(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, uint64_t dflt, const char *what, uint64_t *out);
int ar_fb_get_bool(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, bool dflt, const char *what, bool *out);

/* Follow the uoffset in field `id`: *target = its destination (inside the file), 0 if absent. */
int ar_fb_get_ref(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, const char *what, uint64_t *target);

/* Sub-table in field `id`; *present = false (and *out zeroed) when absent. */
int ar_fb_get_table(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, const char *what,
                    ar_fb_table_t *out, bool *present);

/* Vector of `elem_bytes`-byte elements in field `id` (count 0, present false when absent). The
 * whole vector must lie inside the file; its elements are charged to the budget. */
int ar_fb_get_vector(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, unsigned elem_bytes,
                     const char *what, ar_fb_vec_t *out);
int ar_fb_vector_at(ar_fb_t *fb, uint64_t pos, unsigned elem_bytes, const char *what, ar_fb_vec_t *out);

/* Element `i` of a vector of tables (a vector of uoffsets). */
int ar_fb_vec_table(ar_fb_t *fb, const ar_fb_vec_t *v, uint32_t i, const char *what, ar_fb_table_t *out);

/* String in field `id`: *s points into the file at `*len` bytes followed by a verified NUL byte;
 * *s = NULL, *len = 0 when absent. The bytes must be well-formed UTF-8 (FlatBuffers strings are
 * UTF-8; RFC 3629: no overlong forms, surrogates or code points above U+10FFFF; checked with
 * common's ar_utf8_valid_prefix, the decoder the escapes use) and hold no NUL byte (so
 * strlen(*s) == *len), else AR_EMODEL naming the field and the file offset of the first malformed
 * or NUL byte: the daemon hands these strings to C code, to protobuf-c `string` fields and to
 * jansson, which all take NUL-terminated UTF-8. */
int ar_fb_get_string(ar_fb_t *fb, const ar_fb_table_t *t, unsigned id, const char *what,
                     const char **s, uint32_t *len);

#endif /* AR_FLATBUF_H */
