/* check_threads.c - the thread pool (kernels/ar_parallel.h) and intra-operator parallelism.
 *
 * Pool: every index of [0, n) covered exactly once, in the chunks n and grain fix (whatever the
 * thread count, with or without a pool), n < grain (one chunk), n = 0 (no call), concurrent
 * callers on one pool, nested calls, slots never shared by two running chunks, the scheduling
 * rule (a saturated pool still finishes every call, inline), run_all reaching every thread, and
 * the thread-count limits.
 *
 * Models: every model in models/ (the 11 float models and models_extra) and, when ../shared is
 * there, the quantized models of models_q, run with threads 1, 2 and 3 on the same deterministic
 * input: every output byte-for-byte equal to the one-thread output, over two invokes each.
 *
 * Daemon: arenad --threads 2 (its stats say 2) serves every float model of models/ with the same
 * bytes as the offline one-thread run, one model at a time, then two models of different groups
 * invoked at the same time from two clients (the pool's scheduling with concurrent invokes).
 */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dirent.h>
#include <jansson.h>

#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "kernels/ar_parallel.h"
#include "loader/ar_model.h"
#include "tests/ar_test_client.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_util.h"

/* ---- Pool unit tests ------------------------------------------------------------------------ */

typedef struct cover {
  int64_t n, grain;
  _Atomic int32_t *hits;           /* per index */
  _Atomic int32_t calls;
  _Atomic int32_t bad_range;       /* a range that is not one of the fixed chunks */
} cover_t;

static void cover_fn(void *ctx, int64_t b, int64_t e) {
  cover_t *c = ctx;
  atomic_fetch_add(&c->calls, 1);
  int64_t want_e = b + c->grain < c->n ? b + c->grain : c->n;
  if (b % c->grain != 0 || e != want_e || b < 0 || e > c->n) atomic_fetch_add(&c->bad_range, 1);
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
}

/* fn over [0, n) in chunks of grain on `pool` (NULL: inline): every index once, chunks exact. */
static void check_cover(ar_threadpool_t *pool, int64_t n, int64_t grain) {
  cover_t c = {.n = n, .grain = grain < 1 ? 1 : grain};
  c.hits = calloc((size_t)(n > 0 ? n : 1), sizeof(*c.hits));
  ck_assert_ptr_nonnull(c.hits);
  ar_node_t node;
  memset(&node, 0, sizeof node);
  node.pool = pool;
  node.threads = ar_threadpool_threads(pool);
  ar_parallel_for(&node, n, grain, cover_fn, &c);
  int64_t want_calls = n <= 0 ? 0 : (n - 1) / c.grain + 1;
  ck_assert_int_eq(atomic_load(&c.calls), want_calls);
  ck_assert_int_eq(atomic_load(&c.bad_range), 0);
  for (int64_t i = 0; i < n; i++) ck_assert_msg(atomic_load(&c.hits[i]) == 1, "index %lld hit %d times",
                                                (long long)i, (int)atomic_load(&c.hits[i]));
  free(c.hits);
}

START_TEST(test_pool_covers_every_index_once) {
  static const int64_t ns[] = {1, 2, 7, 63, 64, 65, 1000, 4099};
  static const int64_t grains[] = {1, 3, 64, 100};
  for (int threads = 1; threads <= 4; threads++) {
    ar_threadpool_t *pool = NULL;
    char msg[AR_MSG_BYTES] = "";
    ck_assert_int_eq(ar_threadpool_new(threads, &pool, msg, sizeof msg), 0);
    ck_assert_int_eq(ar_threadpool_threads(pool), threads);
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++) check_cover(pool, ns[i], grains[g]);
    ar_threadpool_free(pool);
  }
  /* No pool: the same chunks, inline. */
  check_cover(NULL, 1000, 64);
}
END_TEST

typedef struct order {
  int64_t seen[16][2];
  int n;
} order_t;

static void order_fn(void *ctx, int64_t b, int64_t e) {
  order_t *o = ctx;
  if (o->n < 16) { o->seen[o->n][0] = b; o->seen[o->n][1] = e; }
  o->n++;
}

START_TEST(test_pool_small_and_empty_ranges) {
  ar_threadpool_t *pool = NULL;
  ck_assert_int_eq(ar_threadpool_new(3, &pool, NULL, 0), 0);
  ar_node_t node;
  memset(&node, 0, sizeof node);
  node.pool = pool;
  /* n < grain: one call with the whole range, on the caller. */
  order_t o = {.n = 0};
  ar_parallel_for(&node, 5, 64, order_fn, &o);
  ck_assert_int_eq(o.n, 1);
  ck_assert_int_eq(o.seen[0][0], 0);
  ck_assert_int_eq(o.seen[0][1], 5);
  /* n = 0 and n < 0: no call. */
  o.n = 0;
  ar_parallel_for(&node, 0, 8, order_fn, &o);
  ar_parallel_for(&node, -3, 8, order_fn, &o);
  ck_assert_int_eq(o.n, 0);
  /* grain 0 counts as 1. */
  check_cover(pool, 10, 0);
  /* Without a pool the chunks run in order on the caller. */
  node.pool = NULL;
  o.n = 0;
  ar_parallel_for(&node, 10, 4, order_fn, &o);
  ck_assert_int_eq(o.n, 3);
  ck_assert_int_eq(o.seen[0][0], 0); ck_assert_int_eq(o.seen[0][1], 4);
  ck_assert_int_eq(o.seen[1][0], 4); ck_assert_int_eq(o.seen[1][1], 8);
  ck_assert_int_eq(o.seen[2][0], 8); ck_assert_int_eq(o.seen[2][1], 10);
  /* A NULL node is a caller without a pool. */
  o.n = 0;
  ar_parallel_for(NULL, 10, 4, order_fn, &o);
  ck_assert_int_eq(o.n, 3);
  ar_threadpool_free(pool);
}
END_TEST

typedef struct caller_arg {
  ar_threadpool_t *pool;
  int rounds;
  int failures;
} caller_arg_t;

static void *caller_main(void *arg) {
  caller_arg_t *a = arg;
  ar_node_t node;
  memset(&node, 0, sizeof node);
  node.pool = a->pool;
  for (int r = 0; r < a->rounds; r++) {
    const int64_t n = 97 + r % 13 * 31, grain = 1 + r % 9;
    cover_t c = {.n = n, .grain = grain};
    c.hits = calloc((size_t)n, sizeof(*c.hits));
    if (r % 2) ar_threadpool_enter(a->pool);   /* as an invoke does */
    ar_parallel_for(&node, n, grain, cover_fn, &c);
    if (r % 2) ar_threadpool_leave(a->pool);
    for (int64_t i = 0; i < n; i++) a->failures += atomic_load(&c.hits[i]) != 1;
    a->failures += atomic_load(&c.bad_range) != 0;
    free(c.hits);
  }
  return NULL;
}

START_TEST(test_pool_concurrent_callers) {
  ar_threadpool_t *pool = NULL;
  ck_assert_int_eq(ar_threadpool_new(3, &pool, NULL, 0), 0);
  enum { CALLERS = 4 };
  pthread_t th[CALLERS];
  caller_arg_t args[CALLERS];
  for (int i = 0; i < CALLERS; i++) {
    args[i] = (caller_arg_t){.pool = pool, .rounds = 300, .failures = 0};
    ck_assert_int_eq(pthread_create(&th[i], NULL, caller_main, &args[i]), 0);
  }
  for (int i = 0; i < CALLERS; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(args[i].failures, 0);
  }
  ar_threadpool_free(pool);
}
END_TEST

typedef struct nest {
  const ar_node_t *node;
  _Atomic int32_t *hits;          /* [outer][inner] flattened */
  int64_t inner_n;
} nest_t;

typedef struct nest_inner {
  nest_t *outer;
  int64_t row;
} nest_inner_t;

static void nest_inner_fn(void *ctx, int64_t b, int64_t e) {
  nest_inner_t *in = ctx;
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&in->outer->hits[in->row * in->outer->inner_n + i], 1);
}

static void nest_outer_fn(void *ctx, int64_t b, int64_t e) {
  nest_t *n = ctx;
  for (int64_t r = b; r < e; r++) {
    nest_inner_t in = {.outer = n, .row = r};
    ar_parallel_for(n->node, n->inner_n, 5, nest_inner_fn, &in);
  }
}

START_TEST(test_pool_nested_calls) {
  ar_threadpool_t *pool = NULL;
  ck_assert_int_eq(ar_threadpool_new(3, &pool, NULL, 0), 0);
  ar_node_t node;
  memset(&node, 0, sizeof node);
  node.pool = pool;
  enum { OUTER = 40, INNER = 37 };
  nest_t n = {.node = &node, .inner_n = INNER};
  n.hits = calloc(OUTER * INNER, sizeof(*n.hits));
  ar_parallel_for(&node, OUTER, 3, nest_outer_fn, &n);
  for (int i = 0; i < OUTER * INNER; i++) ck_assert_int_eq(atomic_load(&n.hits[i]), 1);
  free(n.hits);
  ar_threadpool_free(pool);
}
END_TEST

typedef struct slots {
  int32_t max_slots;
  bool sleep;                  /* each chunk sleeps 200 us (a preempted participant) instead of computing */
  _Atomic int32_t in_use[8];
  _Atomic int32_t clashes, out_of_range, calls;
  _Atomic int64_t covered;
} slots_t;

/* A chunk on `slot`: counts the slots out of [0, max_slots) and two chunks on one slot at once. */
static void slot_fn(void *ctx, int32_t slot, int64_t b, int64_t e) {
  slots_t *s = ctx;
  atomic_fetch_add(&s->calls, 1);
  if (slot < 0 || slot >= s->max_slots) {
    atomic_fetch_add(&s->out_of_range, 1);
    return;
  }
  if (atomic_fetch_add(&s->in_use[slot], 1) != 0) atomic_fetch_add(&s->clashes, 1);
  if (s->sleep) {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  } else {
    volatile double x = 0;
    for (int i = 0; i < 20000; i++) x += i;   /* long enough for chunks to overlap */
  }
  atomic_fetch_add(&s->covered, e - b);
  atomic_fetch_sub(&s->in_use[slot], 1);
}

/* A node on a new pool of 4 threads (*pool, freed by the caller). */
static ar_node_t pool_node4(ar_threadpool_t **pool) {
  ck_assert_int_eq(ar_threadpool_new(4, pool, NULL, 0), 0);
  ar_node_t node;
  memset(&node, 0, sizeof node);
  node.pool = *pool;
  node.threads = 4;
  return node;
}

START_TEST(test_pool_slots_never_shared) {
  ar_threadpool_t *pool = NULL;
  ar_node_t node = pool_node4(&pool);
  ck_assert_int_eq(ar_parallel_threads(&node), 4);
  for (int32_t max_slots = 1; max_slots <= 4; max_slots++) {
    slots_t s;
    memset(&s, 0, sizeof s);
    s.max_slots = max_slots;
    ar_parallel_for_slots(&node, 200, 3, max_slots, slot_fn, &s);
    ck_assert_int_eq(atomic_load(&s.out_of_range), 0);
    ck_assert_int_eq(atomic_load(&s.clashes), 0);
    ck_assert_int_eq(atomic_load(&s.calls), 67);
    ck_assert_int_eq(atomic_load(&s.covered), 200);
  }
  node.threads = 0;
  ck_assert_int_eq(ar_parallel_threads(&node), 1);
  ck_assert_int_eq(ar_parallel_threads(NULL), 1);
  ar_threadpool_free(pool);
}
END_TEST

/* Helpers refused by a job whose max_slots participants are all there (here 2 of a 4-thread pool)
 * while its chunks take long (they sleep, as a preempted participant would): every chunk still
 * gets a slot in [0, max_slots). A refused helper used to bump the job's 16-bit participant
 * counter on every look until the chunks ran out; a few ms of looks wrapped it to -32768, and the
 * helper then ran chunks with a negative slot (check_threads once saw out_of_range == 33). */
START_TEST(test_pool_refused_helpers_keep_slots_in_range) {
  ar_threadpool_t *pool = NULL;
  ar_node_t node = pool_node4(&pool);
  for (int rep = 0; rep < 6; rep++) {
    slots_t s;
    memset(&s, 0, sizeof s);
    s.max_slots = 2 + rep % 2;
    s.sleep = true;
    ar_parallel_for_slots(&node, 120, 1, s.max_slots, slot_fn, &s);
    ck_assert_msg(atomic_load(&s.out_of_range) == 0, "max_slots %d: %d chunk(s) ran with a slot out of range",
                  (int)s.max_slots, (int)atomic_load(&s.out_of_range));
    ck_assert_int_eq(atomic_load(&s.clashes), 0);
    ck_assert_int_eq(atomic_load(&s.calls), 120);
    ck_assert_int_eq(atomic_load(&s.covered), 120);
  }
  ar_threadpool_free(pool);
}
END_TEST

START_TEST(test_pool_saturated_runs_inline) {
  /* Two invokes in progress on a pool of 2 threads: no helper may join, every call still ends. */
  ar_threadpool_t *pool = NULL;
  ck_assert_int_eq(ar_threadpool_new(2, &pool, NULL, 0), 0);
  ar_threadpool_enter(pool);
  ar_threadpool_enter(pool);
  check_cover(pool, 500, 7);
  ar_threadpool_leave(pool);
  ar_threadpool_leave(pool);
  check_cover(pool, 500, 7);
  ar_threadpool_enter(NULL);   /* NULL is fine */
  ar_threadpool_leave(NULL);
  ar_threadpool_free(pool);
}
END_TEST

typedef struct all {
  _Atomic int32_t seen[8];
  _Atomic int32_t bad;
} all_t;

static void all_fn(void *ctx, int32_t i) {
  all_t *a = ctx;
  if (i < 0 || i >= 8) atomic_fetch_add(&a->bad, 1);
  else atomic_fetch_add(&a->seen[i], 1);
}

START_TEST(test_pool_run_all_reaches_every_thread) {
  for (int threads = 1; threads <= 4; threads++) {
    ar_threadpool_t *pool = NULL;
    ck_assert_int_eq(ar_threadpool_new(threads, &pool, NULL, 0), 0);
    for (int rep = 0; rep < 3; rep++) {
      all_t a;
      memset(&a, 0, sizeof a);
      ar_threadpool_run_all(pool, all_fn, &a);
      ck_assert_int_eq(atomic_load(&a.bad), 0);
      for (int i = 0; i < 8; i++)
        ck_assert_msg((atomic_load(&a.seen[i]) >= 1) == (i < threads), "threads %d: index %d called %d times",
                      threads, i, (int)atomic_load(&a.seen[i]));
    }
    ar_threadpool_free(pool);
  }
  ar_threadpool_free(NULL);
}
END_TEST

/* ar_parallel_for_split / _runs: every index once, each call one of the even chunks (boundaries
 * multiples of align, none below min_part except that a lone chunk is everything), as many chunks
 * as ar_parallel_split_chunks says: 1 at one thread or for small n, one run per thread for _runs. */
typedef struct split_cover {
  int64_t n, align, min_part;
  _Atomic int32_t *hits;
  _Atomic int32_t calls, bad;
} split_cover_t;

static void split_cover_fn(void *ctx, int64_t b, int64_t e) {
  split_cover_t *c = ctx;
  atomic_fetch_add(&c->calls, 1);
  if (b < 0 || e > c->n || b >= e || b % c->align != 0 || (e != c->n && e % c->align != 0))
    atomic_fetch_add(&c->bad, 1);
  if (!(b == 0 && e == c->n) && e - b < c->min_part - c->align) atomic_fetch_add(&c->bad, 1);
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
}

START_TEST(test_pool_split_covers_every_index_once) {
  static const int64_t ns[] = {1, 5, 63, 64, 65, 1000, 4099, 100000};
  static const int64_t aligns[] = {1, 4, 64};
  static const int64_t mins[] = {1, 16, 1000};
  for (int threads = 1; threads <= 4; threads++) {
    ar_threadpool_t *pool = NULL;
    ck_assert_int_eq(ar_threadpool_new(threads, &pool, NULL, 0), 0);
    ar_node_t node;
    memset(&node, 0, sizeof node);
    node.pool = threads > 1 ? pool : NULL;
    node.threads = threads;
    ar_threadpool_enter(pool);
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
      for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++)
        for (size_t m = 0; m < sizeof mins / sizeof mins[0]; m++)
          for (int runs = 0; runs <= 1; runs++) {
            const int64_t n = ns[i], mp = mins[m] < aligns[a] ? aligns[a] : mins[m];
            split_cover_t c = {.n = n, .align = aligns[a], .min_part = mp};
            c.hits = calloc((size_t)n, sizeof(*c.hits));
            ck_assert_ptr_nonnull(c.hits);
            if (runs) ar_parallel_for_runs(&node, n, aligns[a], mins[m], split_cover_fn, &c);
            else ar_parallel_for_split(&node, n, aligns[a], mins[m], split_cover_fn, &c);
            const int64_t want = ar_parallel_split_chunks(&node, n, aligns[a], mins[m]);
            ck_assert_int_ge(want, 1);
            if (threads == 1 || n < 2 * mp) ck_assert_int_eq(want, 1);
            ck_assert_int_le(want, (int64_t)threads * AR_PARALLEL_SPLIT_PIECES);
            if (runs) ck_assert_int_le(atomic_load(&c.calls), threads);
            else ck_assert_int_le(atomic_load(&c.calls), want);
            ck_assert_msg(atomic_load(&c.bad) == 0, "threads %d n %lld align %lld min %lld: bad chunk",
                          threads, (long long)n, (long long)aligns[a], (long long)mins[m]);
            for (int64_t k = 0; k < n; k++)
              ck_assert_msg(atomic_load(&c.hits[k]) == 1, "threads %d n %lld: index %lld hit %d times",
                            threads, (long long)n, (long long)k, (int)atomic_load(&c.hits[k]));
            free(c.hits);
          }
    ar_threadpool_leave(pool);
    ar_threadpool_free(pool);
  }
}
END_TEST

START_TEST(test_pool_limits_and_grain) {
  ar_threadpool_t *pool = (ar_threadpool_t *)1;
  char msg[AR_MSG_BYTES] = "";
  ck_assert_int_eq(ar_threadpool_new(0, &pool, msg, sizeof msg), AR_EINVAL);
  ck_assert_ptr_null(pool);
  ck_assert_msg(strstr(msg, "0 threads") != NULL, "%s", msg);
  ck_assert_int_eq(ar_threadpool_new(AR_POOL_THREADS_MAX + 1, &pool, msg, sizeof msg), AR_EINVAL);
  ck_assert_int_eq(ar_threadpool_threads(NULL), 1);
  /* Grain: enough indices for min_cost, rounded up to align; never below align. */
  ck_assert_int_eq(ar_parallel_grain(1000, 10, 100, 1), 10);
  ck_assert_int_eq(ar_parallel_grain(1000, 10, 105, 1), 11);
  ck_assert_int_eq(ar_parallel_grain(1000, 10, 105, 8), 16);
  ck_assert_int_eq(ar_parallel_grain(1000, 1000, 10, 64), 64);
  ck_assert_int_eq(ar_parallel_grain(0, 10, 100, 4), 4);
  ck_assert_int_eq(ar_parallel_grain(1000, 0, 100, 1), 100);
}
END_TEST

/* ---- Models: bit-identical outputs across thread counts -------------------------------------- */

/* Deterministic input bytes (TFLite dtype): floats in [0, 1), 8-bit types random bytes, others 0. */
static void fill_bytes(void *data, uint64_t bytes, int dtype, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 12345u;
  if (dtype == AR_DTYPE_FLOAT32) {
    float *f = data;
    for (uint64_t i = 0; i < bytes / 4; i++) {
      x = x * 1664525u + 1013904223u;
      f[i] = (float)(x >> 8) / 16777216.0f;
    }
  } else if (dtype == AR_DTYPE_UINT8 || dtype == AR_DTYPE_INT8) {
    uint8_t *b = data;
    for (uint64_t i = 0; i < bytes; i++) {
      x = x * 1664525u + 1013904223u;
      b[i] = (uint8_t)(x >> 24);
    }
  } else {
    memset(data, 0, bytes);
  }
}

static void fill_input(ar_tview_t *v, uint32_t seed) { fill_bytes(v->data, v->bytes, v->dtype, seed); }

/* Outputs of two invokes of `m` with `threads` threads (inverted-residual fusion on or off),
 * concatenated into a malloc'd buffer (*bytes); NULL when the model cannot run here (message in
 * msg). *n_fused (may be NULL): the expansion convs that ran fused. */
static uint8_t *run_model_f(const ar_model_t *m, int32_t threads, bool fuse, size_t *bytes,
                            int32_t *n_fused, int *rc_out, char *msg, size_t msg_bytes) {
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  opt.threads = threads;
  opt.fuse = fuse;
  ar_interp_t *in = NULL;
  int rc = ar_interp_new(m, &opt, &in, msg, msg_bytes);
  if (rc == 0) rc = ar_interp_place_owned(in, msg, msg_bytes);
  *rc_out = rc;
  if (rc != 0) {
    ar_interp_free(in);
    return NULL;
  }
  if (n_fused) {
    *n_fused = 0;
    for (int32_t k = 0; k < ar_interp_n_operators(in); k++) *n_fused += ar_interp_op_fused(in, k) >= 0;
  }
  if (!fuse)
    for (int32_t k = 0; k < ar_interp_n_operators(in); k++) ck_assert_int_eq(ar_interp_op_fused(in, k), -1);
  size_t total = 0;
  for (int32_t o = 0; o < ar_interp_n_outputs(in); o++) total += ar_interp_output(in, o)->bytes;
  uint8_t *buf = malloc(2 * total + 1), *p = buf;
  ck_assert_ptr_nonnull(buf);
  for (int rep = 0; rep < 2; rep++) {
    for (int32_t i = 0; i < ar_interp_n_inputs(in); i++) fill_input(ar_interp_input(in, i), (uint32_t)(i + 7 * rep));
    ck_assert_int_eq(ar_interp_invoke(in), 0);
    for (int32_t o = 0; o < ar_interp_n_outputs(in); o++) {
      const ar_tview_t *v = ar_interp_output(in, o);
      memcpy(p, v->data, v->bytes);
      p += v->bytes;
    }
  }
  *bytes = 2 * total;
  ar_interp_free(in);
  return buf;
}

static uint8_t *run_model(const ar_model_t *m, int32_t threads, size_t *bytes, int *rc_out, char *msg,
                          size_t msg_bytes) {
  return run_model_f(m, threads, true, bytes, NULL, rc_out, msg, msg_bytes);
}

/* Every model file in `dir` (*.tflite, sorted): threads 2 and 3 give the one-thread bytes, and
 * inverted-residual fusion (ar_interp_options_t.fuse) on at 1, 2 and 3 threads gives the bytes of
 * fusion off (at 1 and 3 threads). Returns the number of models compared. */
static int check_dir_identical(const char *dir, int quant) {
  struct dirent **names = NULL;
  int n = scandir(dir, &names, NULL, alphasort);
  if (n < 0) return 0;
  int compared = 0;
  for (int i = 0; i < n; i++) {
    const char *f = names[i]->d_name;
    size_t len = strlen(f);
    char stem[256];
    if (len < 8 || len - 7 >= sizeof stem || strcmp(f + len - 7, ".tflite") != 0) continue;
    memcpy(stem, f, len - 7);
    stem[len - 7] = 0;
    if (!ar_test_model_selected(stem)) continue;
    char path[4096], msg[AR_MSG_BYTES] = "";
    snprintf(path, sizeof path, "%s/%s", dir, f);
    ar_model_t *m = NULL;
    int rc = ar_model_load(path, &m, msg, sizeof msg);
    if (rc == AR_EUNSUPPORTED) {
      printf("threads %s: skipped, cannot load: %.200s\n", stem, msg);
      continue;
    }
    ck_assert_msg(rc == 0, "%s: %s", path, msg);
    size_t b1 = 0;
    uint8_t *one = run_model_f(m, 1, false, &b1, NULL, &rc, msg, sizeof msg);
    if (!one) {
      /* A model with operators arenad does not implement (face_landmark_with_attention's MediaPipe
       * custom ops) or quantized kernels that have not landed yet: say so; others must run. */
      ck_assert_msg(quant || rc == AR_EUNSUPPORTED, "%s: %s", stem, msg);
      printf("threads %s: skipped, cannot run: %.200s\n", stem, msg);
      ar_model_free(m);
      continue;
    }
    int32_t n_fused = 0;
    for (int32_t run = 0; run < 4; run++) {   /* fused at 1, 2, 3 threads; unfused at 3 */
      const int32_t threads = run < 3 ? run + 1 : 3;
      const bool fuse = run < 3;
      size_t bn = 0;
      int32_t nf = 0;
      uint8_t *many = run_model_f(m, threads, fuse, &bn, &nf, &rc, msg, sizeof msg);
      ck_assert_msg(many != NULL, "%s with %d threads: %s", stem, (int)threads, msg);
      ck_assert_uint_eq(bn, b1);
      if (fuse) n_fused = nf;
      size_t first = 0;
      while (first < b1 && one[first] == many[first]) first++;
      ck_assert_msg(first == b1, "%s: threads %d fusion %s differ from threads 1 unfused at output byte %zu "
                    "of %zu", stem, (int)threads, fuse ? "on" : "off", first, b1);
      free(many);
    }
    printf("threads %s: outputs (%zu bytes x 2 invokes) identical for 1, 2, 3 threads, fusion on (%d "
           "expansion convs fused) and off\n", stem, b1 / 2, (int)n_fused);
    fflush(stdout);
    free(one);
    ar_model_free(m);
    compared++;
  }
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  return compared;
}

START_TEST(test_models_identical_across_threads) {
  int n = check_dir_identical(ar_test_models_dir(), 0);
  ck_assert_msg(n >= 1 || getenv("AR_TEST_MODELS"), "no model found in %s", ar_test_models_dir());
  printf("threads: %d models of %s bit-identical across 1, 2, 3 threads\n", n, ar_test_models_dir());
}
END_TEST

START_TEST(test_quant_models_identical_across_threads) {
  if (!ar_test_have_qmodels()) {
    printf("threads: quantized models skipped (%s absent)\n", ar_test_models_q_dir());
    return;
  }
  int n = check_dir_identical(ar_test_models_q_dir(), 1);
  printf("threads: %d models of %s bit-identical across 1, 2, 3 threads\n", n, ar_test_models_q_dir());
}
END_TEST

/* ---- Through the daemon ------------------------------------------------------------------------ */

/* Two invokes of loaded model `name` through `c` with run_model's inputs; the outputs
 * concatenated (malloc'd, *bytes). */
static uint8_t *daemon_run(ar_client_t *c, const char *name, const ar_client_model_t *info, size_t *bytes) {
  ar_client_tensor_t in[AR_CLIENT_MAX_IO];
  void *buf[AR_CLIENT_MAX_IO] = {NULL};
  ck_assert_int_le(info->n_inputs, AR_CLIENT_MAX_IO);
  uint8_t *all = NULL;
  size_t total = 0;
  for (int rep = 0; rep < 2; rep++) {
    for (int32_t i = 0; i < info->n_inputs; i++) {
      in[i] = info->inputs[i];
      uint64_t elems = 1;
      for (int32_t r = 0; r < in[i].rank; r++) elems *= (uint64_t)in[i].dims[r];
      const int dt = in[i].dtype;
      in[i].bytes = elems * (dt == AR_DTYPE_UINT8 || dt == AR_DTYPE_INT8 || dt == AR_DTYPE_BOOL ? 1
                             : dt == AR_DTYPE_INT64 || dt == AR_DTYPE_FLOAT64 ? 8
                             : dt == AR_DTYPE_FLOAT16 || dt == AR_DTYPE_INT16 ? 2 : 4);
      free(buf[i]);
      buf[i] = malloc(in[i].bytes ? in[i].bytes : 1);
      fill_bytes(buf[i], in[i].bytes, in[i].dtype, (uint32_t)(i + 7 * rep));
      in[i].data = buf[i];
    }
    ar_client_result_t res;
    char msg[AR_MSG_BYTES] = "";
    int rc = ar_client_invoke(c, name, in, (size_t)info->n_inputs, &res, msg, sizeof msg);
    ck_assert_msg(rc == 0, "%s: invoke: %s", name, msg);
    for (int32_t o = 0; o < res.n_outputs; o++) {
      all = realloc(all, total + res.outputs[o].bytes + 1);
      memcpy(all + total, res.outputs[o].data, res.outputs[o].bytes);
      total += res.outputs[o].bytes;
    }
    ar_client_result_free(&res);
  }
  for (int32_t i = 0; i < info->n_inputs; i++) free(buf[i]);
  *bytes = total;
  return all;
}

/* Offline one-thread outputs of the model at `path` (run_model); NULL when it cannot run. */
static uint8_t *offline_run(const char *path, size_t *bytes) {
  ar_model_t *m = NULL;
  char msg[AR_MSG_BYTES] = "";
  if (ar_model_load(path, &m, msg, sizeof msg) != 0) return NULL;
  int rc = 0;
  uint8_t *out = run_model(m, 1, bytes, &rc, msg, sizeof msg);
  ar_model_free(m);
  return out;
}

START_TEST(test_daemon_threads_identical) {
  ar_test_daemon_t d;
  const char *extra[] = {"--threads", "2", NULL};
  ck_assert_int_eq(ar_td_start(&d, "256M", extra), 0);
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES] = "";
  ck_assert_int_eq(ar_client_connect(d.socket, &c, msg, sizeof msg), 0);
  json_t *st = ar_tc_stats(c);
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(st, "daemon"), "threads")), 2);
  json_decref(st);
  struct dirent **names = NULL;
  int n = scandir(ar_test_models_dir(), &names, NULL, alphasort);
  int compared = 0;
  for (int i = 0; i < n; i++) {
    const char *f = names[i]->d_name;
    size_t len = strlen(f);
    char stem[256], path[4096];
    if (len < 8 || len - 7 >= sizeof stem || strcmp(f + len - 7, ".tflite") != 0) continue;
    memcpy(stem, f, len - 7);
    stem[len - 7] = 0;
    if (!ar_test_model_selected(stem)) continue;
    snprintf(path, sizeof path, "%s/%s", ar_test_models_dir(), f);
    size_t b1 = 0;
    uint8_t *want = offline_run(path, &b1);
    if (!want) continue;   /* not runnable here (custom ops): the offline test says so */
    ar_client_model_t info;
    int rc = ar_client_load(c, "m", path, NULL, NULL, &info, msg, sizeof msg);
    ck_assert_msg(rc == 0, "%s: load: %s", stem, msg);
    size_t bd = 0;
    uint8_t *got = daemon_run(c, "m", &info, &bd);
    ck_assert_uint_eq(bd, b1);
    size_t first = 0;
    while (first < b1 && got[first] == want[first]) first++;
    ck_assert_msg(first == b1, "%s: arenad --threads 2 differs from offline threads 1 at byte %zu of %zu", stem,
                  first, b1);
    ck_assert_int_eq(ar_client_unload(c, "m", msg, sizeof msg), 0);
    printf("threads daemon %s: --threads 2 outputs identical to offline threads 1\n", stem);
    fflush(stdout);
    compared++;
    free(got);
    free(want);
  }
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  ck_assert_msg(compared >= 1 || getenv("AR_TEST_MODELS"), "no model compared");
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&d), 0);
}
END_TEST

typedef struct daemon_client {
  const char *socket, *name;
  const ar_client_model_t *info;
  const uint8_t *want;
  size_t want_bytes;
  int rounds, failures;
} daemon_client_t;

static void *daemon_client_main(void *arg) {
  daemon_client_t *dc = arg;
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES] = "";
  if (ar_client_connect(dc->socket, &c, msg, sizeof msg) != 0) {
    dc->failures++;
    return NULL;
  }
  for (int r = 0; r < dc->rounds; r++) {
    size_t b = 0;
    uint8_t *got = daemon_run(c, dc->name, dc->info, &b);
    dc->failures += b != dc->want_bytes || memcmp(got, dc->want, b) != 0;
    free(got);
  }
  ar_client_close(c);
  return NULL;
}

START_TEST(test_daemon_threads_concurrent_groups) {
  static const char *const stems[2] = {"palm_detection_lite", "selfie_segmentation"};
  if (!ar_test_model_selected(stems[0]) || !ar_test_model_selected(stems[1])) return;
  ar_test_daemon_t d;
  const char *extra[] = {"--threads", "2", NULL};
  ck_assert_int_eq(ar_td_start(&d, "64M", extra), 0);
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES] = "";
  ck_assert_int_eq(ar_client_connect(d.socket, &c, msg, sizeof msg), 0);
  ar_client_model_t info[2];
  uint8_t *want[2];
  size_t wb[2];
  daemon_client_t dc[2];
  pthread_t th[2];
  for (int k = 0; k < 2; k++) {
    char path[4096];
    ar_test_model_path(path, sizeof path, stems[k]);
    want[k] = offline_run(path, &wb[k]);
    ck_assert_ptr_nonnull(want[k]);
    ck_assert_int_eq(ar_client_load(c, stems[k], path, NULL, NULL, &info[k], msg, sizeof msg), 0);
  }
  for (int k = 0; k < 2; k++) {
    dc[k] = (daemon_client_t){.socket = d.socket, .name = stems[k], .info = &info[k], .want = want[k],
                              .want_bytes = wb[k], .rounds = ar_test_emulated() ? 2 : 10};
    ck_assert_int_eq(pthread_create(&th[k], NULL, daemon_client_main, &dc[k]), 0);
  }
  for (int k = 0; k < 2; k++) {
    pthread_join(th[k], NULL);
    ck_assert_msg(dc[k].failures == 0, "%s: %d invokes differ from offline threads 1", stems[k], dc[k].failures);
    free(want[k]);
  }
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&d), 0);
}
END_TEST

static Suite *threads_suite(void) {
  Suite *s = suite_create("threads");
  TCase *tc = tcase_create("pool");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_pool_covers_every_index_once);
  tcase_add_test(tc, test_pool_small_and_empty_ranges);
  tcase_add_test(tc, test_pool_split_covers_every_index_once);
  tcase_add_test(tc, test_pool_concurrent_callers);
  tcase_add_test(tc, test_pool_nested_calls);
  tcase_add_test(tc, test_pool_slots_never_shared);
  tcase_add_test(tc, test_pool_refused_helpers_keep_slots_in_range);
  tcase_add_test(tc, test_pool_saturated_runs_inline);
  tcase_add_test(tc, test_pool_run_all_reaches_every_thread);
  tcase_add_test(tc, test_pool_limits_and_grain);
  suite_add_tcase(s, tc);
  TCase *tm = tcase_create("models");
  tcase_set_timeout(tm, 1800);
  tcase_add_test(tm, test_models_identical_across_threads);
  tcase_add_test(tm, test_quant_models_identical_across_threads);
  suite_add_tcase(s, tm);
  TCase *td = tcase_create("daemon");
  tcase_set_timeout(td, 1800);
  tcase_add_test(td, test_daemon_threads_identical);
  tcase_add_test(td, test_daemon_threads_concurrent_groups);
  suite_add_tcase(s, td);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(threads_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
