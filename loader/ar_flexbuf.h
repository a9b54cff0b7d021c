/* ar_flexbuf.h - a small, bounds-checked reader for the FlexBuffers maps TFLite custom operators
 * carry as custom_options (e.g. TFLite_Detection_PostProcess).
 *
 * Only what option maps need: open the root map, look a key up, read a scalar (int, uint, float,
 * bool, or their indirect forms) as a double. Every offset and width is checked against the
 * buffer before it is read, so a hostile buffer yields an error, never a read outside it.
 * Encoding (FlexBuffers, flatbuffers/flexbuffers.h): the last byte is the root's byte width, the
 * byte before it the root's packed type (type << 2 | log2 child width); an offset value points
 * back from its own position; a map's values are preceded by [keys offset, keys width, count] and
 * followed by one packed type byte per value; keys are offsets to NUL-terminated strings.
 */
#ifndef AR_FLEXBUF_H
#define AR_FLEXBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct ar_flexmap {
  const uint8_t *buf;
  size_t len;
  size_t vals;        /* offset of value 0 */
  uint32_t width;     /* bytes per value */
  uint32_t count;
  size_t keys;        /* offset of key slot 0 */
  uint32_t key_width;
} ar_flexmap_t;

/* Open the root of `len` bytes at `buf` as a map. Returns 0, or -1 when the buffer is not a
 * well-formed FlexBuffers map (any offset, width or count out of bounds). */
int ar_flexmap_open(const uint8_t *buf, size_t len, ar_flexmap_t *m);

/* Look up `key` and read its scalar value into *out (bools as 0/1). Returns 1 found, 0 absent,
 * -1 present but not a scalar or malformed. */
int ar_flexmap_number(const ar_flexmap_t *m, const char *key, double *out);

#endif /* AR_FLEXBUF_H */
