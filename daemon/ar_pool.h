/* ar_pool.h - the daemon's one process-wide arena pool, partitioned by offsets.
 *
 * One anonymous mapping of `bytes` is made at start; models never get memory anywhere else.
 * The pool is a sorted list of regions that tile [0, bytes) exactly: every byte belongs to one
 * region, either free or owned (a model's persistent region, or the activation region of a
 * share group / ungrouped model):
 *
 *   offset 0                                                              bytes
 *   +-----------+----------------------+------+---------------+-----------------+
 *   | persist A | activation group "h" | free | persist B     | free            |
 *   +-----------+----------------------+------+---------------+-----------------+
 *
 * Allocation is best fit (the smallest free region that holds the request, lowest offset on a
 * tie), which keeps large blocks whole for large models; the chosen block is split and the tail
 * stays free. Freeing merges the region with free neighbours (coalescing), so a pool returns to
 * one free block when everything is unloaded. Sizes and offsets are multiples of AR_POOL_ALIGN
 * (64 bytes, TFLite's tensor alignment, what ar_interp_place requires).
 *
 * Compaction (ar_pool_compact) slides every owned region that lies above a free block down, in
 * offset order, so that the free bytes become one block at the end of the pool:
 *
 *   before  | A | free | B | free | C | free |        after  | A | B | C | free            |
 *
 * The pool only rewrites its list; moving what lives in a region is the owner's job (the daemon
 * re-places the models whose regions moved, ar_compact.c).
 *
 * Not thread-safe: the daemon touches the region list from its event loop thread only.
 * A pool may be made without a mapping (map = false) to lay out a configuration without serving
 * (arenad --check-config).
 */
#ifndef AR_POOL_H
#define AR_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AR_POOL_ALIGN 64
#define AR_POOL_OWNER_MAX 80

typedef enum ar_region_kind {
  AR_REGION_FREE = 0,
  AR_REGION_PERSISTENT = 1,  /* one model's persistent region (folded constants, kernel state) */
  AR_REGION_ACTIVATION = 2,  /* non-persistent tensors + scratch of a group or ungrouped model */
  AR_REGION_STATE = 3,       /* a chunk of a model's session state slots (daemon/ar_sessions.h); its
                                bytes move with it at a compaction */
} ar_region_kind_t;

typedef struct ar_region {
  uint64_t offset, bytes;
  ar_region_kind_t kind;
  char owner[AR_POOL_OWNER_MAX];   /* model name, or "group:<name>"; "" when free */
} ar_region_t;

typedef struct ar_pool {
  uint8_t *base;             /* the mapping, or NULL for a layout-only pool */
  uint64_t bytes;            /* pool size (a multiple of AR_POOL_ALIGN) */
  ar_region_t *regions;      /* sorted by offset, tiling [0, bytes) */
  size_t n_regions, cap_regions;
} ar_pool_t;

/* "free", "persistent", "activation". */
const char *ar_region_kind_name(ar_region_kind_t k);

/* Make a pool of `bytes` (rounded down to AR_POOL_ALIGN; at least one alignment unit). With `map`
 * the bytes are one private anonymous mapping (MAP_NORESERVE: pages are committed on first touch).
 * Errors: AR_EINVAL (size), AR_ENOMEM (mmap or list), with `msg`. */
int ar_pool_init(ar_pool_t *pool, uint64_t bytes, bool map, char *msg, size_t msg_bytes);
/* Unmap and free the region list. */
void ar_pool_close(ar_pool_t *pool);

/* Take a region of `bytes` (rounded up to AR_POOL_ALIGN; 0 becomes one unit) of kind `kind`
 * for `owner`. Writes its offset. Errors: AR_ENOSPC with `msg` naming the bytes needed and the
 * largest free block (nothing changed), AR_ENOMEM, AR_EINVAL (kind FREE). */
int ar_pool_alloc(ar_pool_t *pool, uint64_t bytes, ar_region_kind_t kind, const char *owner,
                  uint64_t *offset, char *msg, size_t msg_bytes);

/* Return the region starting at `offset` and coalesce it with free neighbours. Returns 0, or
 * AR_EINVAL when no owned region starts there. */
int ar_pool_free(ar_pool_t *pool, uint64_t offset);

/* Shrink the used region at `offset` to `bytes` (rounded like ar_pool_alloc, not larger than it
 * is): the tail becomes free (merged with a free neighbour). Returns 0, AR_EINVAL (no such used
 * region, or bytes larger), AR_ENOMEM (region list). */
int ar_pool_shrink(ar_pool_t *pool, uint64_t offset, uint64_t bytes);

/* One region that compaction moves: from `from` to `to` (< from), `bytes` long. */
typedef struct ar_pool_move {
  uint64_t from, to, bytes;
  ar_region_kind_t kind;
  char owner[AR_POOL_OWNER_MAX];
} ar_pool_move_t;

/* Offset of the first free block that has an owned region above it: the lowest byte compaction
 * would change. pool->bytes when the pool is compact (no free bytes, or all of them one block at
 * the end). */
uint64_t ar_pool_hole_offset(const ar_pool_t *pool);

/* Number of free blocks (0 when full, 1 when compact and not full). */
size_t ar_pool_free_blocks(const ar_pool_t *pool);

/* The moves compaction would make, lowest offset first, into `moves` (up to `cap`; pool->n_regions
 * always suffices). Returns how many regions move (may exceed cap: then only cap are written).
 * Nothing changes. */
size_t ar_pool_compact_plan(const ar_pool_t *pool, ar_pool_move_t *moves, size_t cap);

/* Apply the plan ar_pool_compact_plan gives: owned regions keep their order and sizes, each at the
 * end of the one below it, and one free block ends the pool. Returns the bytes of the regions that
 * moved (0 when the pool was compact). Never allocates, never fails; after it,
 * ar_pool_largest_free_bytes == pool->bytes - ar_pool_used_bytes. */
uint64_t ar_pool_compact(ar_pool_t *pool);

/* Give the pages inside free regions back to the system (madvise MADV_DONTNEED on the whole pages
 * each free region contains; they read as zeros when touched again). Only for free regions nobody
 * still reads (the daemon calls it when a compaction has ended). Returns the bytes released (0 for
 * a layout-only pool). */
uint64_t ar_pool_release_free(ar_pool_t *pool);

/* Bytes of a region rounded like ar_pool_alloc does. */
uint64_t ar_pool_round(uint64_t bytes);

/* Totals (bytes). */
uint64_t ar_pool_used_bytes(const ar_pool_t *pool);
uint64_t ar_pool_largest_free_bytes(const ar_pool_t *pool);

/* Address of `offset` inside the mapping (NULL for a layout-only pool). */
static inline void *ar_pool_ptr(const ar_pool_t *pool, uint64_t offset) {
  return pool->base ? pool->base + offset : NULL;
}

#endif /* AR_POOL_H */
