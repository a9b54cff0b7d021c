/* qpar.h - internal to the kernels layer: how the integer kernels (qconv, qdepthwise, the quantized
 * elementwise passes) and the other kernels of that family (resize, pooling, softmax, reduce,
 * sparse conv, fp16 widening) spread one eval over the thread pool (kernels/ar_parallel.h).
 *
 * Every such kernel writes each output element from its inputs alone, in integer arithmetic or in a
 * fixed per-element float order, so its bytes do not depend on how the work is cut: any partition
 * of the output rows gives the same result for every thread count (tests/check_threads.c and the
 * threads cases of the kernel suites pin it).
 *
 * Kernels with scratch (im2col tiles, depthwise accumulator rows) give each concurrent range call
 * its own piece: prepare plans ar_qpar_slots(node) equal slots (one per thread an eval may use),
 * and a range call takes a free slot for its whole range and gives it back at the end. At most that
 * many range calls of one parallel-for run at once, so a slot is always free when one is taken.
 */
#ifndef AR_QPAR_H
#define AR_QPAR_H

#include <stdatomic.h>
#include <stdint.h>

#include "kernels/ar_kernels.h"
#if __has_include("kernels/ar_parallel.h")
#include "kernels/ar_parallel.h"
#else
/* Until the pool lands: the same API, run inline. */
typedef void (*ar_range_fn)(void *ctx, int64_t begin, int64_t end);
static inline void ar_parallel_for(const ar_node_t *node, int64_t n, int64_t grain, ar_range_fn fn,
                                   void *ctx) {
  (void)node; (void)grain;
  if (n > 0) fn(ctx, 0, n);
}
static inline int ar_parallel_threads(const ar_node_t *node) { return node->blas_threads; }
#endif

/* Most scratch slots a node plans (more threads than this share the slots' count of range calls). */
#define AR_QPAR_MAX_SLOTS 32

/* Scratch slots to plan at prepare: the threads an eval of `node` may use, capped. */
static inline int ar_qpar_slots(const ar_node_t *node) {
  int t = ar_parallel_threads(node);
  return t < 1 ? 1 : t > AR_QPAR_MAX_SLOTS ? AR_QPAR_MAX_SLOTS : t;
}

/* Run fn(ctx, b, e) over [0, n) on the pool when there is enough work: `work` is the whole eval's
 * cost in rough element-operations, chunks hold at least `min_chunk_work` of it (and at least
 * `grain` items); little work runs inline. Chunking depends on n, work and grain only. */
static inline void ar_qpar_for(const ar_node_t *node, int64_t n, int64_t grain, int64_t work,
                               int64_t min_chunk_work, ar_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (work > 0 && min_chunk_work > 0) {
    const int64_t per = work / n > 0 ? work / n : 1;          /* work of one item */
    const int64_t g = (min_chunk_work + per - 1) / per;
    if (g > grain) grain = g;
  }
  if (grain >= n) { fn(ctx, 0, n); return; }
  ar_parallel_for(node, n, grain, fn, ctx);
}

/* The scratch slots of one eval: `n` pieces of `slot_bytes` from `base`. */
typedef struct {
  atomic_uint busy;            /* bit s set while slot s is in use */
  uint8_t *base;
  uint64_t slot_bytes;
  int n;
} ar_qslots_t;

static inline void ar_qslots_init(ar_qslots_t *s, void *base, uint64_t slot_bytes, int n) {
  atomic_init(&s->busy, 0u);
  s->base = base;
  s->slot_bytes = slot_bytes;
  s->n = n < 1 ? 1 : n > AR_QPAR_MAX_SLOTS ? AR_QPAR_MAX_SLOTS : n;
}

/* Take a free slot (its index in *idx, its memory returned). */
static inline uint8_t *ar_qslot_take(ar_qslots_t *s, int *idx) {
  for (;;) {
    unsigned b = atomic_load_explicit(&s->busy, memory_order_relaxed);
    for (int i = 0; i < s->n; i++) {
      if (b & (1u << i)) continue;
      if (atomic_compare_exchange_weak_explicit(&s->busy, &b, b | (1u << i), memory_order_acquire,
                                                memory_order_relaxed)) {
        *idx = i;
        return s->base + (uint64_t)i * s->slot_bytes;
      }
      break;   /* b changed under us: look again */
    }
  }
}

static inline void ar_qslot_give(ar_qslots_t *s, int idx) {
  atomic_fetch_and_explicit(&s->busy, ~(1u << idx), memory_order_release);
}

#endif /* AR_QPAR_H */
