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

#define AR_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define AR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define AR_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Symbol export for the client library (built with -fvisibility=hidden). */
#define AR_EXPORT __attribute__((visibility("default")))

#endif /* AR_UTIL_H */
