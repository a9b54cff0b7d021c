/* ar_varint.h - protobuf base-128 varints (protobuf encoding spec, "Base 128 Varints"): the
 * daemon's wire scan (daemon/ar_decode.c) and libarenaclient's reply stripping
 * (clients/ar_client.c) read and write them with these.
 */
#ifndef AR_VARINT_H
#define AR_VARINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Read the varint at *p (not past `end`) into *v and advance *p past it. False when it is
 * truncated (the input ends inside it) or longer than 10 bytes (*p is then left inside it).
 * Bits above 64 are dropped, as protobuf readers do. */
static inline bool ar_varint_read(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

/* Bytes of v's shortest encoding: 1 to 10. */
static inline size_t ar_varint_len(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

/* Write v's shortest encoding at o (room for ar_varint_len(v) bytes); returns the byte after it. */
static inline uint8_t *ar_varint_put(uint8_t *o, uint64_t v) {
  while (v >= 0x80) *o++ = (uint8_t)(v | 0x80), v >>= 7;
  *o++ = (uint8_t)v;
  return o;
}

#endif /* AR_VARINT_H */
