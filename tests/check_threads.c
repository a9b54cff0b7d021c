/* check_threads.c - the thread pool (kernels/ar_parallel.h) and intra-operator parallelism.
 *
 * Pool: every index of [0, n) covered exactly once, in the chunks n and grain fix (whatever the
 * thread count, with or without a pool), n < grain (one chunk), n = 0 (no call), concurrent
 * callers on one pool, nested calls, slots never shared by two running chunks, the scheduling
 * rule (a saturated pool still finishes every call, inline), run_all reaching every thread, and
 * the thread-count limits.
 */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_parallel.h"

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
  _Atomic int32_t in_use[8];
  _Atomic int32_t clashes, out_of_range, calls;
  _Atomic int64_t covered;
} slots_t;

static void slot_fn(void *ctx, int32_t slot, int64_t b, int64_t e) {
  slots_t *s = ctx;
  atomic_fetch_add(&s->calls, 1);
  if (slot < 0 || slot >= s->max_slots) {
    atomic_fetch_add(&s->out_of_range, 1);
    return;
  }
  if (atomic_fetch_add(&s->in_use[slot], 1) != 0) atomic_fetch_add(&s->clashes, 1);
  volatile double x = 0;
  for (int i = 0; i < 20000; i++) x += i;   /* long enough for chunks to overlap */
  atomic_fetch_add(&s->covered, e - b);
  atomic_fetch_sub(&s->in_use[slot], 1);
}

START_TEST(test_pool_slots_never_shared) {
  ar_threadpool_t *pool = NULL;
  ck_assert_int_eq(ar_threadpool_new(4, &pool, NULL, 0), 0);
  ar_node_t node;
  memset(&node, 0, sizeof node);
  node.pool = pool;
  node.threads = 4;
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

static Suite *threads_suite(void) {
  Suite *s = suite_create("threads");
  TCase *tc = tcase_create("pool");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_pool_covers_every_index_once);
  tcase_add_test(tc, test_pool_small_and_empty_ranges);
  tcase_add_test(tc, test_pool_concurrent_callers);
  tcase_add_test(tc, test_pool_nested_calls);
  tcase_add_test(tc, test_pool_slots_never_shared);
  tcase_add_test(tc, test_pool_saturated_runs_inline);
  tcase_add_test(tc, test_pool_run_all_reaches_every_thread);
  tcase_add_test(tc, test_pool_limits_and_grain);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(threads_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
