/* parallel.c - the thread pool behind ar_parallel_for (kernels/ar_parallel.h).
 *
 * A caller publishes its job (on its own stack) in one of AR_POOL_SLOTS slots, bumps the pool's
 * generation word and wakes sleeping helpers; then it takes chunks itself from the job's atomic
 * counter. A helper that sees a new generation scans the slots, joins a job with chunks left (if
 * the pool's count of threads at work is below `threads`), takes chunks until none is left, and
 * leaves. The caller waits until every chunk is done, empties the slot, and waits until no helper
 * still holds a reference to the slot before its job goes out of scope.
 *
 * Memory order: everything a helper reads of a job is published by the slot pointer (seq_cst);
 * chunk completion is an acq_rel counter, so the caller sees every output a helper wrote. Sleeping
 * is a futex on the generation word (helpers) or on the done counter (caller), each guarded by a
 * "sleepers" / "waiting" flag read after the word changed (Dekker-style, all seq_cst), so no wakeup
 * is lost and a futex system call is made only when someone sleeps.
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

typedef struct pool_job {
  ar_range_fn fn;
  ar_slot_range_fn slot_fn;
  void *ctx;
  int64_t n, grain, n_chunks;
  int32_t max_slots;
  _Atomic int64_t next;          /* next chunk to take */
  _Atomic int32_t next_slot;     /* next participant slot (the caller has 0) */
  _Atomic uint32_t done;         /* chunks finished (futex word of the waiting caller) */
  _Atomic uint32_t waiting;      /* the caller sleeps on `done` */
} pool_job_t;

typedef struct pool_slot {
  _Atomic(pool_job_t *) job;     /* published job, NULL when none */
  _Atomic int32_t refs;          /* helpers that may be reading `job` */
  _Atomic int32_t owned;         /* a caller holds the slot */
  char pad[64 - sizeof(void *) - 2 * sizeof(int32_t)];
} pool_slot_t;

struct ar_threadpool {
  int32_t threads;               /* helpers + 1 */
  int32_t n_helpers;
  pthread_t *helpers;
  _Atomic uint32_t gen;          /* bumped on every publish (futex word of sleeping helpers) */
  _Atomic int32_t sleepers;      /* helpers in futex wait */
  _Atomic int32_t busy;          /* invokes in progress + helpers inside a job */
  _Atomic int32_t stop;
  /* ar_threadpool_run_all */
  void (*all_fn)(void *ctx, int32_t i);
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

void ar_threadpool_enter(ar_threadpool_t *pool) {
  if (pool) atomic_fetch_add(&pool->busy, 1);
}

void ar_threadpool_leave(ar_threadpool_t *pool) {
  if (pool) atomic_fetch_sub(&pool->busy, 1);
}

/* Take chunks of `j` until none is left, as participant `slot`; returns how many it ran. */
static int64_t run_chunks(pool_job_t *j, int32_t slot) {
  for (int64_t ran = 0;; ran++) {
    int64_t c = atomic_fetch_add(&j->next, 1);
    if (c >= j->n_chunks) return ran;
    int64_t b = c * j->grain;
    int64_t e = b + j->grain < j->n ? b + j->grain : j->n;
    if (j->slot_fn) j->slot_fn(j->ctx, slot, b, e);
    else j->fn(j->ctx, b, e);
    uint32_t d = atomic_fetch_add(&j->done, 1) + 1;
    if (d == (uint32_t)j->n_chunks && atomic_load(&j->waiting)) futex(&j->done, FUTEX_WAKE, 1);
  }
}

/* One chance for a helper to join a job: true when it ran at least one chunk. */
static bool helper_try_slot(ar_threadpool_t *p, pool_slot_t *s) {
  if (atomic_load_explicit(&s->job, memory_order_relaxed) == NULL) return false;
  /* Claim a core: only while fewer than `threads` threads are at work. */
  int32_t b = atomic_load(&p->busy);
  do {
    if (b >= p->threads) return false;
  } while (!atomic_compare_exchange_weak(&p->busy, &b, b + 1));
  bool worked = false;
  atomic_fetch_add(&s->refs, 1);
  pool_job_t *j = atomic_load(&s->job);
  if (j && atomic_load(&j->next) < j->n_chunks) {
    int32_t slot = atomic_fetch_add(&j->next_slot, 1);
    if (slot < j->max_slots) worked = run_chunks(j, slot) > 0;
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
    for (int s = 0; s < AR_POOL_SLOTS; s++) worked |= helper_try_slot(p, &p->slots[s]);
    if (worked) {
      seen = atomic_load(&p->gen);
      continue;
    }
    /* Spin a while for the next job of this invoke, then sleep until a publish. */
    uint64_t t0 = now_us();
    uint32_t g = atomic_load(&p->gen);
    for (int k = 1; g == seen && !atomic_load(&p->stop); k++) {
      cpu_relax();
      if ((k & 63) == 0 && now_us() - t0 >= AR_POOL_SPIN_US) break;
      g = atomic_load(&p->gen);
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

static void publish(ar_threadpool_t *p, int wake) {
  atomic_fetch_add(&p->gen, 1);
  if (atomic_load(&p->sleepers) > 0) futex(&p->gen, FUTEX_WAKE, wake);
}

static void run_inline(int64_t n, int64_t grain, ar_range_fn fn, ar_slot_range_fn slot_fn,
                       void *ctx) {
  for (int64_t b = 0; b < n; b += grain) {
    int64_t e = b + grain < n ? b + grain : n;
    if (slot_fn) slot_fn(ctx, 0, b, e);
    else fn(ctx, b, e);
  }
}

static void parallel_run(const ar_node_t *node, int64_t n, int64_t grain, int32_t max_slots,
                         ar_range_fn fn, ar_slot_range_fn slot_fn, void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  if (max_slots < 1) max_slots = 1;
  ar_threadpool_t *p = node ? node->pool : NULL;
  const int64_t n_chunks = (n - 1) / grain + 1;
  if (!p || p->n_helpers == 0 || n_chunks == 1 || max_slots == 1 ||
      atomic_load_explicit(&p->busy, memory_order_relaxed) >= p->threads) {
    run_inline(n, grain, fn, slot_fn, ctx);
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
    run_inline(n, grain, fn, slot_fn, ctx);
    return;
  }
  pool_job_t j = {.fn = fn, .slot_fn = slot_fn, .ctx = ctx, .n = n, .grain = grain,
                  .n_chunks = n_chunks, .max_slots = max_slots};
  atomic_init(&j.next, 0);
  atomic_init(&j.next_slot, 1);
  atomic_init(&j.done, 0);
  atomic_init(&j.waiting, 0);
  atomic_store(&s->job, &j);
  if (atomic_load(&p->busy) < p->threads) {
    int64_t want = n_chunks - 1 < max_slots - 1 ? n_chunks - 1 : max_slots - 1;
    publish(p, (int)(want < p->n_helpers ? want : p->n_helpers));
  }
  run_chunks(&j, 0);
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

void ar_parallel_for(const ar_node_t *node, int64_t n, int64_t grain, ar_range_fn fn, void *ctx) {
  parallel_run(node, n, grain, AR_POOL_THREADS_MAX, fn, NULL, ctx);
}

void ar_parallel_for_slots(const ar_node_t *node, int64_t n, int64_t grain, int32_t max_slots,
                           ar_slot_range_fn fn, void *ctx) {
  parallel_run(node, n, grain, max_slots, NULL, fn, ctx);
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
