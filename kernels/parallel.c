/* parallel.c - the thread pool behind ar_parallel_for (kernels/ar_parallel.h).
 *
 * A caller publishes its job (on its own stack) in one of AR_POOL_SLOTS slots, bumps the pool's
 * generation word and wakes sleeping helpers; then it runs chunks itself. A helper that sees a new
 * generation scans the slots, joins a job with chunks left (if the pool's count of threads at work
 * is below `threads`), runs chunks until none is left, and leaves. The caller waits until every
 * chunk is done, empties the slot, and waits until no helper still holds a reference to the slot
 * before its job goes out of scope.
 *
 * Which participant runs which chunk: the chunks are cut into `parts` contiguous runs, one per
 * thread that may take part; the caller starts on run 0 and helper h on run h, each taking the
 * chunks of its own run in order and then those left in the others. So when every participant
 * is there in time, consecutive operators give a thread the same part of their tensors (the
 * part it wrote last stays in its core's cache), and a late or absent helper costs nothing but
 * its share of the work. The chunks themselves, and so the results, do not depend on this.
 *
 * Helpers stay hot through an invoke: between ar_threadpool_enter and _leave (and while a core
 * is free for them) they spin on the generation word for up to AR_POOL_HOT_SPIN_US, otherwise
 * AR_POOL_SPIN_US, before they sleep; enter wakes sleeping helpers, so that their wake-up overlaps
 * the invoke's first operators instead of delaying a split one.
 *
 * Memory order: everything a helper reads of a job is published by the slot pointer (seq_cst);
 * chunk completion is an acq_rel counter, so the caller sees every output a helper wrote. Sleeping
 * is a futex on the generation word (helpers) or on the done counter (caller), each guarded by a
 * "sleepers" / "waiting" flag read after the word changed (Dekker-style, all seq_cst), so no wakeup
 * is lost and a futex system call is made only when someone sleeps. Words written by different
 * threads sit on different cache lines.
 */
#define _GNU_SOURCE
#include "kernels/ar_parallel.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/ar_error.h"

/* Concurrent parallel_for calls that can be shared with helpers; more run inline. */
#define AR_POOL_SLOTS 32

/* Runs of chunks a job is cut into (one per participant, up to this many). */
#define AR_POOL_PARTS_MAX 16

/* One contiguous run of a job's chunks, base + [front, back): its owner takes chunks from the
 * front, other participants (once their own run is empty) from the back, so that an owner keeps
 * the start of its run and a thief takes the chunks the owner would have come to last. front and
 * back share one word (front in the high half) so that one compare-and-swap takes a chunk. */
typedef struct pool_part {
  _Alignas(64) _Atomic uint64_t range;
  int64_t base;
} pool_part_t;

typedef struct pool_job {
  ar_range_fn fn;
  ar_slot_range_fn slot_fn;
  void *ctx;
  int64_t n, grain, n_chunks;     /* grain 0: even chunks (chunk_range) */
  int64_t align;                   /* even chunks: boundaries are multiples of it */
  int32_t max_slots;
  int32_t n_parts;
  _Alignas(64) _Atomic int32_t next_slot;  /* next participant slot (the caller has 0) */
  _Alignas(64) _Atomic uint32_t done;      /* chunks finished (futex word of the waiting caller) */
  _Atomic uint32_t waiting;                /* the caller sleeps on `done` */
  pool_part_t parts[AR_POOL_PARTS_MAX];
} pool_job_t;

typedef struct pool_slot {
  _Alignas(64) _Atomic(pool_job_t *) job;     /* published job, NULL when none */
  _Atomic int32_t refs;          /* helpers that may be reading `job` */
  _Atomic int32_t owned;         /* a caller holds the slot */
} pool_slot_t;

struct ar_threadpool {
  int32_t threads;               /* helpers + 1 */
  int32_t n_helpers;
  pthread_t *helpers;
  _Atomic int32_t stop;
  /* Written on every publish, read by spinning helpers. */
  _Alignas(64) _Atomic uint32_t gen;   /* bumped on every publish (futex word of sleeping helpers) */
  _Atomic int32_t sleepers;      /* helpers in futex wait */
  /* Written when invokes and helpers start and stop work. */
  _Alignas(64) _Atomic int32_t busy;   /* invokes in progress + helpers inside a job */
  _Atomic int32_t invokes;       /* invokes in progress (enter .. leave) */
  _Atomic int32_t next_home;     /* helper start-up: the run of chunks each helper starts on */
  /* ar_threadpool_run_all */
  _Alignas(64) void (*all_fn)(void *ctx, int32_t i);
  void *all_ctx;
  _Atomic uint32_t all_epoch;    /* bumped per run_all; a helper that sees it change takes part */
  _Atomic int32_t all_next;      /* next helper index */
  _Atomic int32_t all_first_done;/* participants done with their first call */
  _Atomic int32_t all_left;      /* helpers not yet back from the run */
  pool_slot_t slots[AR_POOL_SLOTS];
};

static long futex(_Atomic uint32_t *word, int op, uint32_t val) {
  return syscall(SYS_futex, (uint32_t *)word, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int32_t ar_parallel_threads(const ar_node_t *node) {
  return node && node->threads > 1 ? node->threads : 1;
}

int64_t ar_parallel_grain(int64_t n, int64_t cost, int64_t min_cost, int64_t align) {
  if (align < 1) align = 1;
  if (n < 1) return align;
  if (cost < 1) cost = 1;
  int64_t g = (min_cost + cost - 1) / cost;
  if (g < 1) g = 1;
  g = (g + align - 1) / align * align;
  return g;
}

int32_t ar_threadpool_threads(const ar_threadpool_t *pool) { return pool ? pool->threads : 1; }

static void publish(ar_threadpool_t *p, int wake) {
  atomic_fetch_add(&p->gen, 1);
  if (wake > 0 && atomic_load(&p->sleepers) > 0) futex(&p->gen, FUTEX_WAKE, wake);
}

void ar_threadpool_enter(ar_threadpool_t *pool) {
  if (!pool) return;
  atomic_fetch_add(&pool->invokes, 1);
  const int32_t b = atomic_fetch_add(&pool->busy, 1) + 1;
  /* Helpers asleep and a core free for them: wake them now, so that they are spinning by the
   * time the first split operator publishes (a wake-up costs tens of us on an idle VM). */
  if (b < pool->threads && atomic_load(&pool->sleepers) > 0) {
    const int32_t free_cores = pool->threads - b;
    publish(pool, free_cores < pool->n_helpers ? free_cores : pool->n_helpers);
  }
}

void ar_threadpool_leave(ar_threadpool_t *pool) {
  if (!pool) return;
  atomic_fetch_sub(&pool->busy, 1);
  atomic_fetch_sub(&pool->invokes, 1);
}

/* Start of even chunk c of n_chunks over [0, n): floor(n * c / n_chunks) down to a multiple of
 * align (n itself for c = n_chunks), without overflowing. */
static inline int64_t even_start(int64_t n, int64_t n_chunks, int64_t align, int64_t c) {
  if (c >= n_chunks) return n;
  const int64_t q = n / n_chunks, r = n % n_chunks;
  const int64_t x = q * c + r * c / n_chunks;
  return x / align * align;
}

/* Run chunk c of `j` as participant `slot`, and count it done. */
static inline void run_chunk(pool_job_t *j, int32_t slot, int64_t c) {
  int64_t b, e;
  if (j->grain > 0) {
    b = c * j->grain;
    e = b + j->grain < j->n ? b + j->grain : j->n;
  } else {
    b = even_start(j->n, j->n_chunks, j->align, c);
    e = even_start(j->n, j->n_chunks, j->align, c + 1);
  }
  if (b < e) {
    if (j->slot_fn) j->slot_fn(j->ctx, slot, b, e);
    else j->fn(j->ctx, b, e);
  }
  uint32_t d = atomic_fetch_add_explicit(&j->done, 1, memory_order_acq_rel) + 1;
  if (d == (uint32_t)j->n_chunks && atomic_load(&j->waiting)) futex(&j->done, FUTEX_WAKE, 1);
}

/* Take the first (front) or last chunk left of run `pt`; false when it is empty. */
static bool part_take(pool_part_t *pt, bool front, int64_t *c) {
  uint64_t r = atomic_load_explicit(&pt->range, memory_order_relaxed);
  for (;;) {
    const uint32_t f = (uint32_t)(r >> 32), b = (uint32_t)r;
    if (f >= b) return false;
    const uint64_t taken = front ? r + ((uint64_t)1 << 32) : r - 1;
    if (atomic_compare_exchange_weak_explicit(&pt->range, &r, taken, memory_order_relaxed,
                                              memory_order_relaxed)) {
      *c = pt->base + (front ? f : b - 1);
      return true;
    }
  }
}

/* Run chunks of `j` until none is left, as participant `slot`: its own run `home` from the front,
 * then the others' from the back. Returns how many it ran. */
static int64_t run_chunks(pool_job_t *j, int32_t slot, int32_t home) {
  int64_t ran = 0, c;
  for (int32_t i = 0; i < j->n_parts; i++) {
    pool_part_t *pt = &j->parts[(home + i) % j->n_parts];
    while (part_take(pt, i == 0, &c)) {
      run_chunk(j, slot, c);
      ran++;
    }
  }
  return ran;
}

/* Whether `j` may still have a chunk nobody took. */
static bool job_has_chunks(pool_job_t *j) {
  for (int32_t i = 0; i < j->n_parts; i++) {
    const uint64_t r = atomic_load_explicit(&j->parts[i].range, memory_order_relaxed);
    if ((uint32_t)(r >> 32) < (uint32_t)r) return true;
  }
  return false;
}

/* One chance for helper `home` to join a job: true when it ran at least one chunk. */
static bool helper_try_slot(ar_threadpool_t *p, pool_slot_t *s, int32_t home) {
  if (atomic_load_explicit(&s->job, memory_order_relaxed) == NULL) return false;
  /* Claim a core: only while fewer than `threads` threads are at work. */
  int32_t b = atomic_load(&p->busy);
  do {
    if (b >= p->threads) return false;
  } while (!atomic_compare_exchange_weak(&p->busy, &b, b + 1));
  bool worked = false;
  atomic_fetch_add(&s->refs, 1);
  pool_job_t *j = atomic_load(&s->job);
  if (j && job_has_chunks(j)) {
    int32_t slot = atomic_fetch_add(&j->next_slot, 1);
    if (slot < j->max_slots) worked = run_chunks(j, slot, home) > 0;
  }
  atomic_fetch_sub(&s->refs, 1);
  atomic_fetch_sub(&p->busy, 1);
  return worked;
}

static void helper_run_all(ar_threadpool_t *p) {
  int32_t i = atomic_fetch_add(&p->all_next, 1);
  p->all_fn(p->all_ctx, i);
  atomic_fetch_add(&p->all_first_done, 1);
  while (atomic_load(&p->all_first_done) < p->threads) p->all_fn(p->all_ctx, i);
  atomic_fetch_sub(&p->all_left, 1);
}

static void *helper_main(void *arg) {
  ar_threadpool_t *p = arg;
  const int32_t home = atomic_fetch_add(&p->next_home, 1);   /* 1 .. n_helpers */
  uint32_t all_seen = 0;   /* the epoch at creation: a run_all before this thread got here counts */
  uint32_t seen = atomic_load(&p->gen);
  for (;;) {
    if (atomic_load(&p->stop)) break;
    uint32_t ae = atomic_load(&p->all_epoch);
    if (ae != all_seen) {
      all_seen = ae;
      helper_run_all(p);
    }
    bool worked = false;
    for (int s = 0; s < AR_POOL_SLOTS; s++) worked |= helper_try_slot(p, &p->slots[s], home);
    if (worked) {
      seen = atomic_load(&p->gen);
      continue;
    }
    /* Spin for the next job - through the whole invoke while one runs and a core is free for
     * this helper, else a short while - then sleep until a publish. */
    uint64_t t0 = now_us();
    uint32_t g = atomic_load_explicit(&p->gen, memory_order_relaxed);
    for (int k = 1; g == seen; k++) {
      cpu_relax();
      if ((k & 63) == 0) {
        if (atomic_load_explicit(&p->stop, memory_order_relaxed)) break;
        const bool hot = atomic_load_explicit(&p->invokes, memory_order_relaxed) > 0 &&
                         atomic_load_explicit(&p->busy, memory_order_relaxed) < p->threads;
        if (now_us() - t0 >= (hot ? AR_POOL_HOT_SPIN_US : AR_POOL_SPIN_US)) break;
      }
      g = atomic_load_explicit(&p->gen, memory_order_relaxed);
    }
    if (g == seen && !atomic_load(&p->stop)) {
      atomic_fetch_add(&p->sleepers, 1);
      futex(&p->gen, FUTEX_WAIT, seen);
      atomic_fetch_sub(&p->sleepers, 1);
    }
    seen = atomic_load(&p->gen);
  }
  return NULL;
}

/* Run fn over [0, n): in chunks of `grain`, or (grain 0) in n_chunks even chunks aligned to
 * `align`; with the pool's helpers when it has some free, else inline and in order. */
static void parallel_run(const ar_node_t *node, int64_t n, int64_t grain, int64_t n_chunks,
                         int64_t align, int32_t max_slots, ar_range_fn fn, ar_slot_range_fn slot_fn,
                         void *ctx) {
  if (n <= 0) return;
  if (max_slots < 1) max_slots = 1;
  pool_job_t j = {.fn = fn, .slot_fn = slot_fn, .ctx = ctx, .n = n, .grain = grain,
                  .n_chunks = n_chunks, .align = align, .max_slots = max_slots};
  ar_threadpool_t *p = node ? node->pool : NULL;
  if (!p || p->n_helpers == 0 || n_chunks == 1 || max_slots == 1 || n_chunks > INT32_MAX ||
      atomic_load_explicit(&p->busy, memory_order_relaxed) >= p->threads) {
    for (int64_t c = 0; c < n_chunks; c++) run_chunk(&j, 0, c);
    return;
  }
  pool_slot_t *s = NULL;
  for (int i = 0; i < AR_POOL_SLOTS && !s; i++) {
    int32_t zero = 0;
    if (atomic_load_explicit(&p->slots[i].owned, memory_order_relaxed) == 0 &&
        atomic_compare_exchange_strong(&p->slots[i].owned, &zero, 1))
      s = &p->slots[i];
  }
  if (!s) {
    for (int64_t c = 0; c < n_chunks; c++) run_chunk(&j, 0, c);
    return;
  }
  int64_t parts = p->threads < max_slots ? p->threads : max_slots;
  if (parts > AR_POOL_PARTS_MAX) parts = AR_POOL_PARTS_MAX;
  if (parts > n_chunks) parts = n_chunks;
  j.n_parts = (int32_t)parts;
  for (int32_t i = 0; i < j.n_parts; i++) {
    const int64_t b = n_chunks * i / parts, e = n_chunks * (i + 1) / parts;
    j.parts[i].base = b;
    atomic_init(&j.parts[i].range, (uint64_t)(e - b));   /* front 0, back e - b */
  }
  atomic_init(&j.next_slot, 1);
  atomic_init(&j.done, 0);
  atomic_init(&j.waiting, 0);
  atomic_store(&s->job, &j);
  if (atomic_load(&p->busy) < p->threads) {
    int64_t want = n_chunks - 1 < max_slots - 1 ? n_chunks - 1 : max_slots - 1;
    publish(p, (int)(want < p->n_helpers ? want : p->n_helpers));
  }
  run_chunks(&j, 0, 0);
  /* Wait for the chunks helpers are still running: spin briefly, then sleep on `done`. */
  uint32_t d = atomic_load(&j.done);
  uint64_t t0 = d != (uint32_t)n_chunks ? now_us() : 0;
  for (int k = 1; d != (uint32_t)n_chunks; k++) {
    cpu_relax();
    if ((k & 63) == 0 && now_us() - t0 >= AR_POOL_SPIN_US) break;
    d = atomic_load(&j.done);
  }
  if (d != (uint32_t)n_chunks) {
    atomic_store(&j.waiting, 1);
    while ((d = atomic_load(&j.done)) != (uint32_t)n_chunks) futex(&j.done, FUTEX_WAIT, d);
  }
  atomic_store(&s->job, NULL);
  while (atomic_load(&s->refs) != 0) cpu_relax();   /* a helper between its ref and its check */
  atomic_store(&s->owned, 0);
}

static void fixed_run(const ar_node_t *node, int64_t n, int64_t grain, int32_t max_slots,
                      ar_range_fn fn, ar_slot_range_fn slot_fn, void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  parallel_run(node, n, grain, (n - 1) / grain + 1, 1, max_slots, fn, slot_fn, ctx);
}

void ar_parallel_for(const ar_node_t *node, int64_t n, int64_t grain, ar_range_fn fn, void *ctx) {
  fixed_run(node, n, grain, AR_POOL_THREADS_MAX, fn, NULL, ctx);
}

void ar_parallel_for_slots(const ar_node_t *node, int64_t n, int64_t grain, int32_t max_slots,
                           ar_slot_range_fn fn, void *ctx) {
  fixed_run(node, n, grain, max_slots, NULL, fn, ctx);
}

static int64_t split_chunks(const ar_node_t *node, int64_t n, int64_t align, int64_t min_part,
                            int64_t max_pieces) {
  if (align < 1) align = 1;
  if (min_part < align) min_part = align;
  int64_t t = ar_parallel_threads(node);
  const int64_t pt = node ? ar_threadpool_threads(node->pool) : 1;
  if (pt < t) t = pt;
  if (t < 2 || n < 2 * min_part) return 1;
  int64_t parts = n / min_part;
  if (parts > t) parts = t;
  /* Large work: a few pieces per thread, so that a thread that finishes first can take over part
   * of a slower one's share. */
  int64_t pieces = n / (parts * AR_PARALLEL_SPLIT_PIECES * min_part);
  if (pieces < 1) pieces = 1;
  if (pieces > max_pieces) pieces = max_pieces;
  return parts * pieces;
}

int64_t ar_parallel_split_chunks(const ar_node_t *node, int64_t n, int64_t align, int64_t min_part) {
  return split_chunks(node, n, align, min_part, AR_PARALLEL_SPLIT_PIECES);
}

void ar_parallel_for_split(const ar_node_t *node, int64_t n, int64_t align, int64_t min_part,
                           ar_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (align < 1) align = 1;
  parallel_run(node, n, 0, ar_parallel_split_chunks(node, n, align, min_part), align,
               AR_POOL_THREADS_MAX, fn, NULL, ctx);
}

void ar_parallel_for_runs(const ar_node_t *node, int64_t n, int64_t align, int64_t min_part,
                          ar_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (align < 1) align = 1;
  parallel_run(node, n, 0, split_chunks(node, n, align, min_part, 1), align, AR_POOL_THREADS_MAX,
               fn, NULL, ctx);
}

void ar_parallel_for_split_slots(const ar_node_t *node, int64_t n, int64_t align, int64_t min_part,
                                 int32_t max_slots, ar_slot_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (align < 1) align = 1;
  parallel_run(node, n, 0, ar_parallel_split_chunks(node, n, align, min_part), align, max_slots,
               NULL, fn, ctx);
}

void ar_threadpool_run_all(ar_threadpool_t *p, void (*fn)(void *ctx, int32_t i), void *ctx) {
  if (!p || p->n_helpers == 0) {
    fn(ctx, 0);
    return;
  }
  p->all_fn = fn;
  p->all_ctx = ctx;
  atomic_store(&p->all_next, 1);
  atomic_store(&p->all_first_done, 0);
  atomic_store(&p->all_left, p->n_helpers);
  atomic_fetch_add(&p->all_epoch, 1);
  publish(p, p->n_helpers);
  fn(ctx, 0);
  atomic_fetch_add(&p->all_first_done, 1);
  while (atomic_load(&p->all_first_done) < p->threads) fn(ctx, 0);
  while (atomic_load(&p->all_left) > 0) sched_yield();
}

int ar_threadpool_new(int32_t threads, ar_threadpool_t **out, char *msg, size_t msg_bytes) {
  if (out) *out = NULL;
  if (!out || threads < 1 || threads > AR_POOL_THREADS_MAX)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "thread pool: %d threads (allowed 1..%d)",
                   (int)threads, AR_POOL_THREADS_MAX);
  ar_threadpool_t *p = aligned_alloc(64, sizeof(*p));
  if (!p) return ar_errf(msg, msg_bytes, AR_ENOMEM, "thread pool: out of memory");
  memset(p, 0, sizeof(*p));
  p->threads = threads;
  atomic_init(&p->gen, 0);
  atomic_init(&p->sleepers, 0);
  atomic_init(&p->busy, 0);
  atomic_init(&p->invokes, 0);
  atomic_init(&p->next_home, 1);
  atomic_init(&p->stop, 0);
  atomic_init(&p->all_epoch, 0);
  for (int i = 0; i < AR_POOL_SLOTS; i++) {
    atomic_init(&p->slots[i].job, NULL);
    atomic_init(&p->slots[i].refs, 0);
    atomic_init(&p->slots[i].owned, 0);
  }
  if (threads > 1) {
    p->helpers = calloc((size_t)threads - 1, sizeof(pthread_t));
    if (!p->helpers) {
      free(p);
      return ar_errf(msg, msg_bytes, AR_ENOMEM, "thread pool: out of memory");
    }
  }
  for (int32_t i = 0; i < threads - 1; i++) {
    int rc = pthread_create(&p->helpers[i], NULL, helper_main, p);
    if (rc != 0) {
      ar_threadpool_free(p);
      return ar_errf(msg, msg_bytes, AR_EIO, "thread pool: pthread_create of helper %d of %d: %s",
                     (int)i + 1, (int)threads - 1, strerror(rc));
    }
    p->n_helpers = i + 1;
  }
  *out = p;
  return 0;
}

void ar_threadpool_free(ar_threadpool_t *p) {
  if (!p) return;
  atomic_store(&p->stop, 1);
  atomic_fetch_add(&p->gen, 1);
  futex(&p->gen, FUTEX_WAKE, INT32_MAX);
  for (int32_t i = 0; i < p->n_helpers; i++) pthread_join(p->helpers[i], NULL);
  free(p->helpers);
  free(p);
}
