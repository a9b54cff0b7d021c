/* parallel.c - the thread pool behind ar_parallel_for (kernels/ar_parallel.h).
 *
 * A caller claims one of AR_POOL_SLOTS slots and writes its job into it - what to call, the
 * chunks, and per participant a run of chunks to take - then bumps the pool's generation word,
 * wakes sleeping helpers, and runs chunks itself. A helper that sees a new generation (or a new
 * job in slot 0, which a lone caller always uses and hot helpers watch directly) joins a job with
 * chunks left and a participant slot free (a job has at most max_slots) if the pool's count of
 * threads at work is below `threads`, runs chunks until none is left, and goes back to watching. The caller waits until every chunk is done and frees the
 * slot.
 *
 * Which participant runs which chunk: the chunks are cut into `parts` contiguous runs, one per
 * thread that may take part; the caller starts on run 0 and helper h on run h, each taking the
 * chunks of its own run from the front and then those left in the others from the back. So when
 * every participant is there in time, consecutive operators give a thread the same part of their
 * tensors (the part it wrote last stays in its core's cache), and a late or absent helper costs
 * nothing but its share of the work. The chunks themselves, and so the results, do not depend on
 * this.
 *
 * The hand-off is what a small operator pays for a split, so it is kept to a few cache-line
 * transfers (each about 0.2 us between the cores of the VMs this runs on): the job's description,
 * the first two runs and the done counter share one 64-byte line, which a hot helper reads once
 * and then owns while it runs its chunks; the caller takes its first chunk when it writes the job,
 * without touching that line again until it looks for more. A job lives in its slot, not on the
 * caller's stack: a helper that read a slot late can only act through a compare-and-swap on a run
 * word tagged with the job's sequence number, which fails once the job is over, so nothing waits
 * for helpers to let go of a slot.
 *
 * Helpers stay hot through an invoke: between ar_threadpool_enter and _leave (and while a core
 * is free for them) they spin for up to AR_POOL_HOT_SPIN_US between jobs, otherwise
 * AR_POOL_SPIN_US, before they sleep; enter wakes sleeping helpers, so that their wake-up
 * overlaps the invoke's first operators instead of delaying a split one. When the cores are
 * shared with other busy processes, a spinning helper spends its scheduler share and is then
 * preempted inside a chunk its caller waits for (a 2-thread invoke took twice the 1-thread time
 * in such a run); so a helper that finds itself preempted while spinning, or a caller that waited
 * AR_POOL_PREEMPTED_WAIT_US for a chunk, turns hot spinning off for AR_POOL_COLD_US (helpers then
 * sleep between jobs and are woken per job, as a futex wake-up favours them).
 *
 * Memory order: a run word is stored with release after the job's fields, and a helper reads it
 * with acquire before it reads them; chunk completion is an acq_rel counter, so the caller sees
 * every output a helper wrote. Sleeping is a futex on the generation word (helpers) or on the done
 * counter (caller), each guarded by a "sleepers" / waiting flag read after the word changed
 * (Dekker-style, seq_cst), so no wakeup is lost and a futex call is made only when someone sleeps.
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
#define AR_POOL_PARTS_MAX 8
/* A run word: the job's tag (its sequence number, low 24 bits), then the run's front and back
 * (20 bits each, chunk indices within the run). Jobs of more chunks run inline. */
#define RUN_BITS 20
#define RUN_MASK ((UINT64_C(1) << RUN_BITS) - 1)
#define TAG_MASK ((UINT64_C(1) << 24) - 1)
#define AR_POOL_CHUNKS_MAX ((int64_t)RUN_MASK)
/* done's top bit: the caller sleeps on it (futex) and wants a wake-up at the last chunk. */
#define DONE_WAITING 0x80000000u

static inline uint64_t run_word(uint64_t tag, uint64_t front, uint64_t back) {
  return (tag << (2 * RUN_BITS)) | (front << RUN_BITS) | back;
}
static inline uint64_t run_tag(uint64_t w) { return w >> (2 * RUN_BITS); }
static inline uint64_t run_front(uint64_t w) { return (w >> RUN_BITS) & RUN_MASK; }
static inline uint64_t run_back(uint64_t w) { return w & RUN_MASK; }

/* A join word (32 bits, so that it fits the job's first line): the low 12 bits of the job's tag,
 * then its participant limit (max_slots, at most the pool's threads) and the next participant
 * slot (10 bits each; the caller is slot 0). A helper takes a slot by a compare-and-swap that
 * checks the tag and next < limit, so the count never passes the limit, and a helper that read an
 * older job takes no slot of the next one (unless their tags agree in 12 bits: it then only
 * wastes a slot, as its chunk takes fail on the run words' full tag). A plain counter bumped on
 * every look wrapped: helpers refused by a job whose participants were all there looked again
 * and again while its chunks ran, and after 32768 looks one ran chunks with a negative slot. */
#define JOIN_BITS 10
#define JOIN_MASK ((UINT32_C(1) << JOIN_BITS) - 1)
#define JOIN_TAG_MASK ((UINT32_C(1) << (32 - 2 * JOIN_BITS)) - 1)
_Static_assert(AR_POOL_THREADS_MAX <= JOIN_MASK, "a join word counts up to the pool's threads");
static inline uint32_t join_word(uint64_t tag, uint32_t max_slots, uint32_t next) {
  return ((uint32_t)(tag & JOIN_TAG_MASK) << (2 * JOIN_BITS)) | (max_slots << JOIN_BITS) | next;
}
static inline uint32_t join_tag(uint32_t w) { return w >> (2 * JOIN_BITS); }
static inline uint32_t join_max(uint32_t w) { return (w >> JOIN_BITS) & JOIN_MASK; }
static inline uint32_t join_next(uint32_t w) { return w & JOIN_MASK; }

typedef struct pool_slot {
  /* Line 1: the job (fields written by its caller before it stores the run words), runs 0 and 1,
   * the done counter and the participant counter. */
  _Alignas(64) _Atomic(void *) fn;       /* ar_range_fn or (is_slot) ar_slot_range_fn */
  _Atomic(void *) ctx;
  _Atomic int64_t n;
  _Atomic int64_t grain;                 /* > 0: fixed chunks of grain; < 0: even, align -grain */
  _Atomic int32_t n_chunks;
  _Atomic uint8_t n_parts;
  _Atomic uint8_t is_slot;
  _Atomic uint64_t run01[2];             /* run words 0 and 1 */
  _Atomic uint32_t done;                 /* chunks finished, | DONE_WAITING */
  _Atomic uint32_t joins;                /* join word: tag, max_slots, next participant slot */
  /* Line 2: runs 2 .. AR_POOL_PARTS_MAX - 1 (pools of more than two threads). */
  _Alignas(64) _Atomic uint64_t run_more[AR_POOL_PARTS_MAX - 2];
  /* Line 3: the callers' own: who holds the slot, and the job sequence number. */
  _Alignas(64) _Atomic int32_t owned;
  uint32_t seq;                          /* only the owner touches it */
} pool_slot_t;

_Static_assert(offsetof(pool_slot_t, joins) + sizeof(uint32_t) <= 64, "a job's first line holds its hot words");

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
  _Atomic uint64_t splits;       /* parallel_run calls that shared their chunks (ar_threadpool_splits) */
  _Atomic int32_t next_home;     /* helper start-up: the run of chunks each helper starts on */
  _Atomic uint64_t cold_until_us;/* no hot spinning before this time (now_us; see helper_main) */
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
  if (wake > 0 && atomic_load(&p->sleepers) > 0 && atomic_load(&p->busy) < p->threads)
    futex(&p->gen, FUTEX_WAKE, wake);
}

void ar_threadpool_enter(ar_threadpool_t *pool) { ar_threadpool_enter_ex(pool, true); }

void ar_threadpool_enter_ex(ar_threadpool_t *pool, bool wake) {
  if (!pool) return;
  atomic_fetch_add(&pool->invokes, 1);
  const int32_t b = atomic_fetch_add(&pool->busy, 1) + 1;
  /* Helpers asleep and a core free for them: wake them now, so that they are spinning by the
   * time the first split operator publishes (a wake-up costs tens of us on an idle VM). */
  if (wake && b < pool->threads && atomic_load(&pool->sleepers) > 0) {
    const int32_t free_cores = pool->threads - b;
    publish(pool, free_cores < pool->n_helpers ? free_cores : pool->n_helpers);
  }
}

uint64_t ar_threadpool_splits(const ar_threadpool_t *pool) {
  return pool ? atomic_load_explicit(&pool->splits, memory_order_relaxed) : 0;
}

void ar_threadpool_leave(ar_threadpool_t *pool) {
  if (!pool) return;
  atomic_fetch_sub(&pool->busy, 1);
  atomic_fetch_sub(&pool->invokes, 1);
}

/* ---- Jobs ------------------------------------------------------------------------------------ */

/* What a participant needs of a job, read once (a copy on its own stack). */
typedef struct job_view {
  void *fn, *ctx;
  int64_t n, grain, n_chunks;
  int32_t n_parts;
  bool is_slot;
} job_view_t;

static inline _Atomic uint64_t *run_at(pool_slot_t *s, int32_t i) {
  return i < 2 ? &s->run01[i] : &s->run_more[i - 2];
}

/* First chunk of run i of n_chunks cut into n_parts runs. */
static inline int64_t run_base(const job_view_t *j, int32_t i) {
  return j->n_chunks * i / j->n_parts;
}

/* Start of even chunk c of n_chunks over [0, n): floor(n * c / n_chunks) down to a multiple of
 * align (n itself for c = n_chunks), without overflowing. */
static inline int64_t even_start(int64_t n, int64_t n_chunks, int64_t align, int64_t c) {
  if (c >= n_chunks) return n;
  const int64_t q = n / n_chunks, r = n % n_chunks;
  const int64_t x = q * c + r * c / n_chunks;
  return x / align * align;
}

/* Call the job's function on chunk c as participant `slot`. */
static inline void call_chunk(const job_view_t *j, int32_t slot, int64_t c) {
  int64_t b, e;
  if (j->grain > 0) {
    b = c * j->grain;
    e = b + j->grain < j->n ? b + j->grain : j->n;
  } else {
    b = even_start(j->n, j->n_chunks, -j->grain, c);
    e = even_start(j->n, j->n_chunks, -j->grain, c + 1);
  }
  if (b >= e) return;
  if (j->is_slot) ((ar_slot_range_fn)j->fn)(j->ctx, slot, b, e);
  else ((ar_range_fn)j->fn)(j->ctx, b, e);
}

/* Count one chunk of the job in `s` done; wake its caller at the last one if it sleeps. */
static inline void chunk_done(pool_slot_t *s, int64_t n_chunks) {
  const uint32_t d = atomic_fetch_add_explicit(&s->done, 1, memory_order_acq_rel) + 1;
  if ((d & ~DONE_WAITING) == (uint32_t)n_chunks && (d & DONE_WAITING)) futex(&s->done, FUTEX_WAKE, 1);
}

/* Take the first (front) or last chunk left of run word `w` if it still belongs to job `tag`;
 * false when it is empty or the job is over. *c: the chunk's index within the run. */
static bool run_take(_Atomic uint64_t *w, uint64_t tag, bool front, int64_t *c) {
  uint64_t r = atomic_load_explicit(w, memory_order_relaxed);
  for (;;) {
    const uint64_t f = run_front(r), b = run_back(r);
    if (run_tag(r) != tag || f >= b) return false;
    const uint64_t taken = front ? run_word(tag, f + 1, b) : run_word(tag, f, b - 1);
    if (atomic_compare_exchange_weak_explicit(w, &r, taken, memory_order_relaxed,
                                              memory_order_relaxed)) {
      *c = (int64_t)(front ? f : b - 1);
      return true;
    }
  }
}

/* Run chunks of job `tag` in `s` until none is left, as participant `slot`: its own run `home`
 * from the front, then the others' from the back. Returns how many it ran. */
static int64_t run_chunks(pool_slot_t *s, const job_view_t *j, uint64_t tag, int32_t slot,
                          int32_t home) {
  int64_t ran = 0, c;
  for (int32_t i = 0; i < j->n_parts; i++) {
    const int32_t part = (home + i) % j->n_parts;
    _Atomic uint64_t *w = run_at(s, part);
    const int64_t base = run_base(j, part);
    while (run_take(w, tag, i == 0, &c)) {
      call_chunk(j, slot, base + c);
      chunk_done(s, j->n_chunks);
      ran++;
    }
  }
  return ran;
}

/* The tag of a job in `s` with chunks left to take and a participant slot left, or false. */
static bool slot_has_work(pool_slot_t *s, uint64_t *tag) {
  for (int32_t i = 0; i < AR_POOL_PARTS_MAX; i++) {
    const uint64_t w = atomic_load_explicit(run_at(s, i), memory_order_acquire);
    if (run_front(w) < run_back(w)) {
      const uint32_t jw = atomic_load_explicit(&s->joins, memory_order_relaxed);
      if (join_tag(jw) != (run_tag(w) & JOIN_TAG_MASK) || join_next(jw) >= join_max(jw)) return false;
      *tag = run_tag(w);
      return true;
    }
  }
  return false;
}

/* Take the next participant slot of job `tag` in `s`: false when the job is over or has all its
 * participants. */
static bool join_take(pool_slot_t *s, uint64_t tag, int32_t *slot) {
  uint32_t jw = atomic_load_explicit(&s->joins, memory_order_relaxed);
  for (;;) {
    if (join_tag(jw) != (tag & JOIN_TAG_MASK) || join_next(jw) >= join_max(jw)) return false;
    if (atomic_compare_exchange_weak_explicit(&s->joins, &jw, jw + 1, memory_order_relaxed,
                                              memory_order_relaxed)) {
      *slot = (int32_t)join_next(jw);
      return true;
    }
  }
}

/* One chance for helper `home` to join the job in `s`: true when it ran at least one chunk. */
static bool helper_try_slot(ar_threadpool_t *p, pool_slot_t *s, int32_t home) {
  uint64_t tag;
  if (!slot_has_work(s, &tag)) return false;
  /* Claim a core: only while fewer than `threads` threads are at work. */
  int32_t b = atomic_load_explicit(&p->busy, memory_order_relaxed);
  do {
    if (b >= p->threads) return false;
  } while (!atomic_compare_exchange_weak(&p->busy, &b, b + 1));
  /* The job's fields: those of job `tag` (a later job cannot be written before every chunk of
   * this one is taken, and then every take below fails on the tag). */
  job_view_t j = {
    .fn = atomic_load_explicit(&s->fn, memory_order_relaxed),
    .ctx = atomic_load_explicit(&s->ctx, memory_order_relaxed),
    .n = atomic_load_explicit(&s->n, memory_order_relaxed),
    .grain = atomic_load_explicit(&s->grain, memory_order_relaxed),
    .n_chunks = atomic_load_explicit(&s->n_chunks, memory_order_relaxed),
    .n_parts = atomic_load_explicit(&s->n_parts, memory_order_relaxed),
    .is_slot = atomic_load_explicit(&s->is_slot, memory_order_relaxed),
  };
  bool worked = false;
  int32_t slot;
  if (j.n_parts >= 1 && j.n_parts <= AR_POOL_PARTS_MAX && join_take(s, tag, &slot))
    worked = run_chunks(s, &j, tag, slot, home % j.n_parts) > 0;
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
  pool_slot_t *const s0 = &p->slots[0];
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
    /* Watch for the next job - slot 0's runs (where a lone caller publishes: reading that line
     * when it changes brings the job with it) and the generation word - through the whole invoke
     * while one runs and a core is free for this helper, else a short while; then sleep until a
     * publish. */
    uint64_t t0 = now_us(), last = t0, tag;
    bool found = false;
    uint32_t g = atomic_load_explicit(&p->gen, memory_order_relaxed);
    for (int k = 1; g == seen; k++) {
      /* Only work it may join: with every core taken (busy == threads: as many invokes as
       * threads, each running its operators alone), a job in slot 0 would be found again at
       * once and refused again - a loop without a yield that kept a core from the invokes for
       * as long as the job ran. */
      if (slot_has_work(s0, &tag) && atomic_load_explicit(&p->busy, memory_order_relaxed) < p->threads) {
        found = true;
        break;
      }
      cpu_relax();
      if ((k & 63) == 0) {
        if (atomic_load_explicit(&p->stop, memory_order_relaxed)) break;
        const uint64_t now = now_us();
        /* A gap between two looks: this thread was preempted - the core is shared with other
         * work, where a spinning helper loses its priority and is then preempted inside a
         * chunk its caller waits for. Go cold for a while (sleep between jobs, wake per job). */
        if (now - last >= AR_POOL_PREEMPTED_US) {
          atomic_store_explicit(&p->cold_until_us, now + AR_POOL_COLD_US, memory_order_relaxed);
          break;
        }
        last = now;
        const bool hot = atomic_load_explicit(&p->invokes, memory_order_relaxed) > 0 &&
                         atomic_load_explicit(&p->busy, memory_order_relaxed) < p->threads &&
                         now >= atomic_load_explicit(&p->cold_until_us, memory_order_relaxed);
        if (now - t0 >= (hot ? AR_POOL_HOT_SPIN_US : AR_POOL_SPIN_US)) break;
        /* Not hot (no invoke in progress, every core taken, or cold): look on, but let a thread
         * that waits for this core run first - e.g. the daemon's loop or a client, which an
         * invoke's reply has just woken. A yield that ran someone is not a preemption. */
        if (!hot) {
          sched_yield();
          last = now_us();
        }
      }
      g = atomic_load_explicit(&p->gen, memory_order_relaxed);
    }
    if (found) continue;   /* `seen` stays: the publish's generation is still to come */
    if (g == seen && !atomic_load(&p->stop)) {
      atomic_fetch_add(&p->sleepers, 1);
      futex(&p->gen, FUTEX_WAIT, seen);
      atomic_fetch_sub(&p->sleepers, 1);
    }
    seen = atomic_load(&p->gen);
  }
  return NULL;
}

/* Run fn over [0, n) in n_chunks chunks: of `grain` indices (grain > 0), or even ones aligned to
 * `align` (grain 0); with the pool's helpers when there are some, else inline and in order. */
static void parallel_run(const ar_node_t *node, int64_t n, int64_t grain, int64_t n_chunks,
                         int64_t align, int32_t max_slots, void *fn, bool is_slot, void *ctx) {
  if (n <= 0) return;
  if (max_slots < 1) max_slots = 1;
  job_view_t j = {.fn = fn, .ctx = ctx, .n = n, .grain = grain > 0 ? grain : -align,
                  .n_chunks = n_chunks, .n_parts = 1, .is_slot = is_slot};
  ar_threadpool_t *p = node ? node->pool : NULL;
  pool_slot_t *s = NULL;
  if (p && p->n_helpers > 0 && n_chunks > 1 && max_slots > 1 && n_chunks <= AR_POOL_CHUNKS_MAX) {
    for (int i = 0; i < AR_POOL_SLOTS && !s; i++) {
      int32_t zero = 0;
      if (atomic_load_explicit(&p->slots[i].owned, memory_order_relaxed) == 0 &&
          atomic_compare_exchange_strong(&p->slots[i].owned, &zero, 1))
        s = &p->slots[i];
    }
  }
  if (!s) {
    for (int64_t c = 0; c < n_chunks; c++) call_chunk(&j, 0, c);
    return;
  }
  atomic_fetch_add_explicit(&p->splits, 1, memory_order_relaxed);
  int64_t parts = p->threads < max_slots ? p->threads : max_slots;
  if (parts > AR_POOL_PARTS_MAX) parts = AR_POOL_PARTS_MAX;
  if (parts > n_chunks) parts = n_chunks;
  j.n_parts = (int32_t)parts;
  const uint64_t tag = (uint64_t)(++s->seq) & TAG_MASK;
  atomic_store_explicit(&s->fn, fn, memory_order_relaxed);
  atomic_store_explicit(&s->ctx, ctx, memory_order_relaxed);
  atomic_store_explicit(&s->n, n, memory_order_relaxed);
  atomic_store_explicit(&s->grain, j.grain, memory_order_relaxed);
  atomic_store_explicit(&s->n_chunks, (int32_t)n_chunks, memory_order_relaxed);
  atomic_store_explicit(&s->n_parts, (uint8_t)parts, memory_order_relaxed);
  atomic_store_explicit(&s->is_slot, (uint8_t)is_slot, memory_order_relaxed);
  atomic_store_explicit(&s->joins,
                        join_word(tag, (uint32_t)(max_slots < p->threads ? max_slots : p->threads), 1),
                        memory_order_relaxed);
  atomic_store_explicit(&s->done, 0, memory_order_relaxed);
  /* The caller's first chunk is taken as its run is written (front 1). */
  for (int32_t i = (int32_t)parts - 1; i >= 0; i--) {
    const uint64_t len = (uint64_t)(run_base(&j, i + 1) - run_base(&j, i));
    atomic_store_explicit(run_at(s, i), run_word(tag, i == 0 ? 1 : 0, len), memory_order_release);
  }
  /* Hot helpers watch slot 0 itself; the generation word is for the other slots and sleepers
   * (a helper that went to sleep just now misses this job, which its caller then runs alone). */
  if (s != &p->slots[0] || atomic_load(&p->sleepers) > 0) {
    const int64_t want = n_chunks - 1 < max_slots - 1 ? n_chunks - 1 : max_slots - 1;
    publish(p, (int)(want < p->n_helpers ? want : p->n_helpers));
  }
  call_chunk(&j, 0, 0);
  chunk_done(s, n_chunks);
  run_chunks(s, &j, tag, 0, 0);
  /* Wait for the chunks helpers are still running: spin briefly, then sleep on `done`. */
  uint32_t d = atomic_load_explicit(&s->done, memory_order_acquire);
  uint64_t t0 = d != (uint32_t)n_chunks ? now_us() : 0;
  for (int k = 1; d != (uint32_t)n_chunks; k++) {
    cpu_relax();
    if ((k & 63) == 0 && now_us() - t0 >= AR_POOL_SPIN_US) break;
    d = atomic_load_explicit(&s->done, memory_order_acquire);
  }
  if (d != (uint32_t)n_chunks) {
    d = atomic_fetch_or(&s->done, DONE_WAITING) | DONE_WAITING;
    while (d != ((uint32_t)n_chunks | DONE_WAITING)) {
      futex(&s->done, FUTEX_WAIT, d);
      d = atomic_load(&s->done);
    }
    /* A helper held a chunk a scheduler time slice longer than the caller's work: it was most
     * likely preempted (the core is shared with other work). Helpers go cold for a while, as
     * when they see it themselves. */
    const uint64_t t1 = now_us();
    if (t1 - t0 >= AR_POOL_PREEMPTED_WAIT_US)
      atomic_store_explicit(&p->cold_until_us, t1 + AR_POOL_COLD_US, memory_order_relaxed);
  }
  /* Every chunk is taken and done: a helper that read this job late fails on the empty runs (or,
   * once the slot is reused, on the tag), so the slot is free at once. */
  atomic_store_explicit(&s->owned, 0, memory_order_release);
}

static void fixed_run(const ar_node_t *node, int64_t n, int64_t grain, int32_t max_slots,
                      void *fn, bool is_slot, void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  parallel_run(node, n, grain, (n - 1) / grain + 1, 1, max_slots, fn, is_slot, ctx);
}

void ar_parallel_for(const ar_node_t *node, int64_t n, int64_t grain, ar_range_fn fn, void *ctx) {
  fixed_run(node, n, grain, AR_POOL_THREADS_MAX, (void *)fn, false, ctx);
}

void ar_parallel_for_slots(const ar_node_t *node, int64_t n, int64_t grain, int32_t max_slots,
                           ar_slot_range_fn fn, void *ctx) {
  fixed_run(node, n, grain, max_slots, (void *)fn, true, ctx);
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
               AR_POOL_THREADS_MAX, (void *)fn, false, ctx);
}

void ar_parallel_for_runs(const ar_node_t *node, int64_t n, int64_t align, int64_t min_part,
                          ar_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (align < 1) align = 1;
  parallel_run(node, n, 0, split_chunks(node, n, align, min_part, 1), align, AR_POOL_THREADS_MAX,
               (void *)fn, false, ctx);
}

void ar_parallel_for_split_slots(const ar_node_t *node, int64_t n, int64_t align, int64_t min_part,
                                 int32_t max_slots, ar_slot_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (align < 1) align = 1;
  parallel_run(node, n, 0, ar_parallel_split_chunks(node, n, align, min_part), align, max_slots,
               (void *)fn, true, ctx);
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
  atomic_init(&p->cold_until_us, 0);
  atomic_init(&p->stop, 0);
  atomic_init(&p->all_epoch, 0);
  for (int i = 0; i < AR_POOL_SLOTS; i++) {
    pool_slot_t *sl = &p->slots[i];
    atomic_init(&sl->fn, NULL);
    atomic_init(&sl->ctx, NULL);
    atomic_init(&sl->n, 0);
    atomic_init(&sl->grain, 1);
    atomic_init(&sl->n_chunks, 0);
    atomic_init(&sl->n_parts, 0);
    atomic_init(&sl->is_slot, 0);
    for (int32_t r = 0; r < AR_POOL_PARTS_MAX; r++) atomic_init(run_at(sl, r), 0);
    atomic_init(&sl->done, 0);
    atomic_init(&sl->joins, 0);
    atomic_init(&sl->owned, 0);
    sl->seq = 0;
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
