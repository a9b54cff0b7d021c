/* ar_util.h - checked size arithmetic and tiny helpers shared by every layer. Header-only. */
#ifndef AR_UTIL_H
#define AR_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* *out = a + b; returns false (and leaves *out unspecified) on overflow. */
static inline bool ar_add_overflow_u64(uint64_t a, uint64_t b, uint64_t *out) {
  return __builtin_add_overflow(a, b, out);
}
/* *out = a * b; returns false ... true on overflow. */
static inline bool ar_mul_overflow_u64(uint64_t a, uint64_t b, uint64_t *out) {
  return __builtin_mul_overflow(a, b, out);
}
/* Round x up to a multiple of `align` (a power of two). */
static inline uint64_t ar_align_up(uint64_t x, uint64_t align) {
  return (x + align - 1) & ~(align - 1);
}

/* memcpy of tensor bytes that may be empty: a zero-element tensor ([1,0]) has no data pointer
 * (NULL), and memcpy/memcmp with a NULL argument are undefined even for 0 bytes (C11 7.24.1). */
static inline void ar_copy_bytes(void *dst, const void *src, size_t bytes) {
  if (bytes) __builtin_memcpy(dst, src, bytes);
}
/* memcmp == 0 of possibly empty byte ranges (NULL allowed when `bytes` is 0). */
static inline bool ar_same_bytes(const void *a, const void *b, size_t bytes) {
  return bytes == 0 || __builtin_memcmp(a, b, bytes) == 0;
}

#define AR_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define AR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define AR_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Symbol export for the client library (built with -fvisibility=hidden). */
#define AR_EXPORT __attribute__((visibility("default")))

#endif /* AR_UTIL_H */
