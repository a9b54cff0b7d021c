/* qpar.h - TEMPORARY: the API of kernels/ar_parallel.h (h-pool's thread pool), run inline, so the
 * integer kernels can be written against it before it lands. Removed once it is on main. */
#ifndef AR_QPAR_H
#define AR_QPAR_H

#include <stdint.h>

#include "kernels/ar_kernels.h"

#if __has_include("kernels/ar_parallel.h")
#include "kernels/ar_parallel.h"
#else
typedef void (*ar_range_fn)(void *ctx, int64_t begin, int64_t end);
typedef void (*ar_slot_range_fn)(void *ctx, int32_t slot, int64_t begin, int64_t end);
static inline void ar_parallel_for(const ar_node_t *node, int64_t n, int64_t grain, ar_range_fn fn,
                                   void *ctx) {
  (void)node;
  if (grain < 1) grain = 1;
  for (int64_t b = 0; b < n; b += grain) fn(ctx, b, n - b < grain ? n : b + grain);
}
static inline void ar_parallel_for_slots(const ar_node_t *node, int64_t n, int64_t grain,
                                         int32_t max_slots, ar_slot_range_fn fn, void *ctx) {
  (void)node; (void)max_slots;
  if (grain < 1) grain = 1;
  for (int64_t b = 0; b < n; b += grain) fn(ctx, 0, b, n - b < grain ? n : b + grain);
}
static inline int32_t ar_parallel_threads(const ar_node_t *node) {
  return node->blas_threads > 0 ? node->blas_threads : 1;
}
static inline int64_t ar_parallel_grain(int64_t n, int64_t cost, int64_t min_cost, int64_t align) {
  if (align < 1) align = 1;
  if (cost < 1) cost = 1;
  int64_t g = (min_cost + cost - 1) / cost;
  g = (g + align - 1) / align * align;
  if (g < align) g = align;
  return n > 0 && g > n ? n : g;
}
#endif

#endif /* AR_QPAR_H */
