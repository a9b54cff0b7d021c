/* ar_pool.c - best-fit region allocator over the daemon's single pool mapping.
 *
 * The region list tiles the pool exactly, so the free list is simply the FREE entries of the
 * sorted list; coalescing is a look at the two neighbours. Pools hold tens of regions, so the
 * linear scans cost nothing next to a model load.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "daemon/ar_pool.h"

const char *ar_region_kind_name(ar_region_kind_t k) {
  switch (k) {
    case AR_REGION_FREE: return "free";
    case AR_REGION_PERSISTENT: return "persistent";
    case AR_REGION_ACTIVATION: return "activation";
    case AR_REGION_STATE: return "state";
  }
  return "unknown";
}

uint64_t ar_pool_round(uint64_t bytes) {
  if (bytes == 0) return AR_POOL_ALIGN;
  if (bytes > UINT64_MAX - AR_POOL_ALIGN) return UINT64_MAX & ~(uint64_t)(AR_POOL_ALIGN - 1);
  return ar_align_up(bytes, AR_POOL_ALIGN);
}

int ar_pool_init(ar_pool_t *pool, uint64_t bytes, bool map, char *msg, size_t msg_bytes) {
  memset(pool, 0, sizeof(*pool));
  bytes &= ~(uint64_t)(AR_POOL_ALIGN - 1);
  if (bytes == 0 || bytes > (uint64_t)SIZE_MAX / 2)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "pool_bytes %" PRIu64 " is not a usable pool size", bytes);
  pool->cap_regions = 16;
  pool->regions = calloc(pool->cap_regions, sizeof(ar_region_t));
  if (pool->regions == NULL) return ar_errf(msg, msg_bytes, AR_ENOMEM, "pool: no memory for the region list");
  if (map) {
    void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
      free(pool->regions);
      pool->regions = NULL;
      return ar_errf(msg, msg_bytes, AR_ENOMEM, "pool: mmap of %" PRIu64 " bytes failed", bytes);
    }
    pool->base = p;
  }
  pool->bytes = bytes;
  pool->n_regions = 1;
  pool->regions[0] = (ar_region_t){.offset = 0, .bytes = bytes, .kind = AR_REGION_FREE};
  return 0;
}

void ar_pool_close(ar_pool_t *pool) {
  if (pool->base) munmap(pool->base, (size_t)pool->bytes);
  free(pool->regions);
  memset(pool, 0, sizeof(*pool));
}

uint64_t ar_pool_used_bytes(const ar_pool_t *pool) {
  uint64_t used = 0;
  for (size_t i = 0; i < pool->n_regions; i++)
    if (pool->regions[i].kind != AR_REGION_FREE) used += pool->regions[i].bytes;
  return used;
}

uint64_t ar_pool_largest_free_bytes(const ar_pool_t *pool) {
  uint64_t best = 0;
  for (size_t i = 0; i < pool->n_regions; i++)
    if (pool->regions[i].kind == AR_REGION_FREE && pool->regions[i].bytes > best) best = pool->regions[i].bytes;
  return best;
}

int ar_pool_alloc(ar_pool_t *pool, uint64_t bytes, ar_region_kind_t kind, const char *owner,
                  uint64_t *offset, char *msg, size_t msg_bytes) {
  if (kind == AR_REGION_FREE) return ar_errf(msg, msg_bytes, AR_EINVAL, "pool: cannot allocate a free region");
  uint64_t need = ar_pool_round(bytes);
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < pool->n_regions; i++) {
    const ar_region_t *r = &pool->regions[i];
    if (r->kind != AR_REGION_FREE || r->bytes < need) continue;
    if (best == SIZE_MAX || r->bytes < pool->regions[best].bytes) best = i;
  }
  if (best == SIZE_MAX)
    return ar_errf(msg, msg_bytes, AR_ENOSPC,
                   "pool: %s region for '%s' needs %" PRIu64 " bytes, largest free block is %" PRIu64
                   " bytes (%" PRIu64 " of %" PRIu64 " bytes free)",
                   ar_region_kind_name(kind), owner ? owner : "", need, ar_pool_largest_free_bytes(pool),
                   pool->bytes - ar_pool_used_bytes(pool), pool->bytes);
  ar_region_t *r = &pool->regions[best];
  if (r->bytes > need) {
    /* Split: the tail stays free as a new entry right after this one. */
    if (pool->n_regions == pool->cap_regions) {
      size_t cap = pool->cap_regions * 2;
      ar_region_t *grown = realloc(pool->regions, cap * sizeof(ar_region_t));
      if (grown == NULL) return ar_errf(msg, msg_bytes, AR_ENOMEM, "pool: no memory for the region list");
      pool->regions = grown;
      pool->cap_regions = cap;
      r = &pool->regions[best];
    }
    memmove(&pool->regions[best + 2], &pool->regions[best + 1],
            (pool->n_regions - best - 1) * sizeof(ar_region_t));
    pool->regions[best + 1] = (ar_region_t){.offset = r->offset + need, .bytes = r->bytes - need,
                                            .kind = AR_REGION_FREE};
    pool->n_regions++;
    r->bytes = need;
  }
  r->kind = kind;
  snprintf(r->owner, sizeof(r->owner), "%s", owner ? owner : "");
  *offset = r->offset;
  return 0;
}

int ar_pool_free(ar_pool_t *pool, uint64_t offset) {
  size_t i = 0;
  while (i < pool->n_regions && pool->regions[i].offset != offset) i++;
  if (i == pool->n_regions || pool->regions[i].kind == AR_REGION_FREE) return AR_EINVAL;
  pool->regions[i].kind = AR_REGION_FREE;
  pool->regions[i].owner[0] = '\0';
  /* Merge with the next free region, then with the previous one. */
  if (i + 1 < pool->n_regions && pool->regions[i + 1].kind == AR_REGION_FREE) {
    pool->regions[i].bytes += pool->regions[i + 1].bytes;
    memmove(&pool->regions[i + 1], &pool->regions[i + 2], (pool->n_regions - i - 2) * sizeof(ar_region_t));
    pool->n_regions--;
  }
  if (i > 0 && pool->regions[i - 1].kind == AR_REGION_FREE) {
    pool->regions[i - 1].bytes += pool->regions[i].bytes;
    memmove(&pool->regions[i], &pool->regions[i + 1], (pool->n_regions - i - 1) * sizeof(ar_region_t));
    pool->n_regions--;
  }
  return 0;
}

int ar_pool_shrink(ar_pool_t *pool, uint64_t offset, uint64_t bytes) {
  size_t i = 0;
  while (i < pool->n_regions && pool->regions[i].offset != offset) i++;
  if (i == pool->n_regions || pool->regions[i].kind == AR_REGION_FREE) return AR_EINVAL;
  uint64_t need = ar_pool_round(bytes);
  ar_region_t *r = &pool->regions[i];
  if (need > r->bytes) return AR_EINVAL;
  if (need == r->bytes) return 0;
  uint64_t tail = r->bytes - need;
  if (i + 1 < pool->n_regions && pool->regions[i + 1].kind == AR_REGION_FREE) {
    /* The free neighbour grows backwards over the tail. */
    pool->regions[i + 1].offset -= tail;
    pool->regions[i + 1].bytes += tail;
    r->bytes = need;
    return 0;
  }
  if (pool->n_regions == pool->cap_regions) {
    size_t cap = pool->cap_regions * 2;
    ar_region_t *grown = realloc(pool->regions, cap * sizeof(ar_region_t));
    if (grown == NULL) return AR_ENOMEM;
    pool->regions = grown;
    pool->cap_regions = cap;
    r = &pool->regions[i];
  }
  memmove(&pool->regions[i + 2], &pool->regions[i + 1], (pool->n_regions - i - 1) * sizeof(ar_region_t));
  pool->regions[i + 1] = (ar_region_t){.offset = r->offset + need, .bytes = tail, .kind = AR_REGION_FREE};
  pool->n_regions++;
  r->bytes = need;
  return 0;
}

uint64_t ar_pool_hole_offset(const ar_pool_t *pool) {
  for (size_t i = 0; i + 1 < pool->n_regions; i++)
    if (pool->regions[i].kind == AR_REGION_FREE) return pool->regions[i].offset;
  return pool->bytes;   /* no free block, or only the last one: compact */
}

size_t ar_pool_free_blocks(const ar_pool_t *pool) {
  size_t n = 0;
  for (size_t i = 0; i < pool->n_regions; i++) n += pool->regions[i].kind == AR_REGION_FREE;
  return n;
}

size_t ar_pool_compact_plan(const ar_pool_t *pool, ar_pool_move_t *moves, size_t cap) {
  size_t n = 0;
  uint64_t at = 0;   /* where the next owned region goes */
  for (size_t i = 0; i < pool->n_regions; i++) {
    const ar_region_t *r = &pool->regions[i];
    if (r->kind == AR_REGION_FREE) continue;
    if (r->offset != at) {
      if (n < cap) {
        moves[n] = (ar_pool_move_t){.from = r->offset, .to = at, .bytes = r->bytes, .kind = r->kind};
        memcpy(moves[n].owner, r->owner, sizeof(moves[n].owner));
      }
      n++;
    }
    at += r->bytes;
  }
  return n;
}

uint64_t ar_pool_compact(ar_pool_t *pool) {
  uint64_t at = 0, moved = 0;
  size_t k = 0;
  for (size_t i = 0; i < pool->n_regions; i++) {
    ar_region_t r = pool->regions[i];
    if (r.kind == AR_REGION_FREE) continue;
    if (r.offset != at) moved += r.bytes;
    r.offset = at;
    at += r.bytes;
    pool->regions[k++] = r;
  }
  /* k <= n_regions and the list only shrinks or keeps its length (one free block replaces >= 1). */
  if (at < pool->bytes) pool->regions[k++] = (ar_region_t){.offset = at, .bytes = pool->bytes - at, .kind = AR_REGION_FREE};
  pool->n_regions = k;
  return moved;
}

uint64_t ar_pool_release_free(ar_pool_t *pool) {
  if (pool->base == NULL) return 0;
  long ps = sysconf(_SC_PAGESIZE);
  uint64_t page = ps > 0 ? (uint64_t)ps : 4096, released = 0;
  for (size_t i = 0; i < pool->n_regions; i++) {
    const ar_region_t *r = &pool->regions[i];
    if (r->kind != AR_REGION_FREE) continue;
    uintptr_t lo = (uintptr_t)(pool->base + r->offset), hi = lo + r->bytes;
    lo = (lo + page - 1) / page * page;
    hi = hi / page * page;
    if (hi > lo && madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0) released += hi - lo;
  }
  return released;
}
