/* check_protocol.c - the wire protocol and the daemon's own data structures, without models:
 *   - the pool allocator (best fit, split, coalescing, ENOSPC naming bytes and largest block),
 *   - the latency histogram (exact small values, bounded relative error, percentiles),
 *   - framing against a live arenad: ping, pipelining, length 0, length above the maximum,
 *     garbage bytes, truncated frame then half-close, a request without a body; after each the
 *     daemon still answers a Ping.
 */
#include "config.h"

#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "common/ar_error.h"
#include "daemon/ar_alloc_count.h"
#include "daemon/ar_latency.h"
#include "daemon/ar_pool.h"
#include "tests/ar_test_daemon.h"

/* ---- pool ---------------------------------------------------------------------------------- */

/* The regions always tile [0, bytes) exactly and no two free regions are adjacent. */
static void assert_tiling(const ar_pool_t *p) {
  uint64_t at = 0;
  for (size_t i = 0; i < p->n_regions; i++) {
    ck_assert_uint_eq(p->regions[i].offset, at);
    ck_assert_uint_eq(p->regions[i].bytes % AR_POOL_ALIGN, 0);
    ck_assert_uint_gt(p->regions[i].bytes, 0);
    if (i > 0) ck_assert(!(p->regions[i].kind == AR_REGION_FREE && p->regions[i - 1].kind == AR_REGION_FREE));
    at += p->regions[i].bytes;
  }
  ck_assert_uint_eq(at, p->bytes);
}

START_TEST(pool_best_fit_split_and_coalesce) {
  ar_pool_t p;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_pool_init(&p, 1 << 20, true, msg, sizeof(msg)), 0);
  ck_assert_ptr_nonnull(p.base);
  ck_assert_uint_eq((uintptr_t)p.base % AR_POOL_ALIGN, 0);
  uint64_t a, b, c, d;
  ck_assert_int_eq(ar_pool_alloc(&p, 100, AR_REGION_PERSISTENT, "a", &a, msg, sizeof(msg)), 0);
  ck_assert_int_eq(ar_pool_alloc(&p, 64 * 1024, AR_REGION_ACTIVATION, "b", &b, msg, sizeof(msg)), 0);
  ck_assert_int_eq(ar_pool_alloc(&p, 1000, AR_REGION_PERSISTENT, "c", &c, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(a, 0);
  ck_assert_uint_eq(b, 128);              /* 100 rounded up to 128 */
  ck_assert_uint_eq(c, 128 + 65536);
  ck_assert_uint_eq(ar_pool_used_bytes(&p), 128 + 65536 + 1024);
  assert_tiling(&p);
  /* Free b: a 64 KiB hole. A 10 KiB request goes there (best fit), not to the big tail. */
  ck_assert_int_eq(ar_pool_free(&p, b), 0);
  ck_assert_int_eq(ar_pool_alloc(&p, 10 * 1024, AR_REGION_ACTIVATION, "d", &d, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(d, 128);
  assert_tiling(&p);
  /* Free everything: the pool is one free block again. */
  ck_assert_int_eq(ar_pool_free(&p, a), 0);
  ck_assert_int_eq(ar_pool_free(&p, c), 0);
  ck_assert_int_eq(ar_pool_free(&p, d), 0);
  ck_assert_uint_eq(p.n_regions, 1);
  ck_assert_uint_eq(ar_pool_largest_free_bytes(&p), 1 << 20);
  /* Freeing a non-region is refused. */
  ck_assert_int_eq(ar_pool_free(&p, 64), AR_EINVAL);
  ar_pool_close(&p);
}
END_TEST

/* Compaction slides the owned regions down in order: one free block at the end, sizes, kinds and
 * owners kept; the plan lists exactly the regions that move, from and to. */
START_TEST(pool_compact_makes_one_free_block) {
  ar_pool_t p;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_pool_init(&p, 1 << 20, false, msg, sizeof(msg)), 0);
  uint64_t off[6];
  const uint64_t sz[6] = {1024, 4096, 2048, 8192, 640, 64};
  const char *own[6] = {"a", "b", "c", "d", "e", "f"};
  for (int i = 0; i < 6; i++)
    ck_assert_int_eq(ar_pool_alloc(&p, sz[i], i % 2 ? AR_REGION_ACTIVATION : AR_REGION_PERSISTENT, own[i], &off[i],
                                   msg, sizeof(msg)), 0);
  ck_assert_uint_eq(ar_pool_hole_offset(&p), p.bytes);   /* compact already: free tail only */
  ck_assert_uint_eq(ar_pool_free_blocks(&p), 1);
  ar_pool_move_t mv[16];
  ck_assert_uint_eq(ar_pool_compact_plan(&p, mv, 16), 0);
  ck_assert_uint_eq(ar_pool_compact(&p), 0);
  /* Free b and d: holes at 1024 (4096 B) and 7168 (8192 B) plus the tail. */
  ck_assert_int_eq(ar_pool_free(&p, off[1]), 0);
  ck_assert_int_eq(ar_pool_free(&p, off[3]), 0);
  ck_assert_uint_eq(ar_pool_hole_offset(&p), 1024);
  ck_assert_uint_eq(ar_pool_free_blocks(&p), 3);
  uint64_t free_bytes = p.bytes - ar_pool_used_bytes(&p);
  ck_assert_uint_lt(ar_pool_largest_free_bytes(&p), free_bytes);
  size_t n = ar_pool_compact_plan(&p, mv, 16);
  ck_assert_uint_eq(n, 3);   /* c, e, f move; a stays */
  ck_assert_uint_eq(mv[0].from, off[2]);
  ck_assert_uint_eq(mv[0].to, 1024);
  ck_assert_str_eq(mv[0].owner, "c");
  ck_assert_uint_eq(mv[1].from, off[4]);
  ck_assert_uint_eq(mv[1].to, 1024 + 2048);
  ck_assert_int_eq(mv[1].kind, AR_REGION_PERSISTENT);
  ck_assert_uint_eq(mv[2].from, off[5]);
  ck_assert_uint_eq(mv[2].to, 1024 + 2048 + 640);
  ck_assert_uint_eq(mv[2].bytes, 64);
  ck_assert_uint_eq(ar_pool_compact_plan(&p, mv, 1), 3);   /* a short array still counts them all */
  ck_assert_uint_eq(ar_pool_compact(&p), 2048 + 640 + 64);
  assert_tiling(&p);
  ck_assert_uint_eq(p.n_regions, 5);
  ck_assert_uint_eq(ar_pool_free_blocks(&p), 1);
  ck_assert_uint_eq(ar_pool_hole_offset(&p), p.bytes);
  ck_assert_uint_eq(ar_pool_largest_free_bytes(&p), free_bytes);
  ck_assert_str_eq(p.regions[1].owner, "c");
  ck_assert_str_eq(p.regions[3].owner, "f");
  ck_assert_int_eq(p.regions[3].kind, AR_REGION_ACTIVATION);
  /* The moved regions are freed by their new offsets. */
  ck_assert_int_eq(ar_pool_free(&p, 1024), 0);
  ck_assert_int_eq(ar_pool_free(&p, 1024 + 2048), 0);
  assert_tiling(&p);
  /* A full pool: nothing free, nothing moves. */
  ar_pool_close(&p);
  ck_assert_int_eq(ar_pool_init(&p, 4096, false, msg, sizeof(msg)), 0);
  ck_assert_int_eq(ar_pool_alloc(&p, 4096, AR_REGION_PERSISTENT, "x", &off[0], msg, sizeof(msg)), 0);
  ck_assert_uint_eq(ar_pool_free_blocks(&p), 0);
  ck_assert_uint_eq(ar_pool_hole_offset(&p), p.bytes);
  ck_assert_uint_eq(ar_pool_compact(&p), 0);
  ck_assert_uint_eq(p.n_regions, 1);
  ar_pool_close(&p);
}
END_TEST

START_TEST(pool_enospc_names_bytes_and_largest_block) {
  ar_pool_t p;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_pool_init(&p, 4096, false, msg, sizeof(msg)), 0);
  uint64_t o1, o2, o3;
  ck_assert_int_eq(ar_pool_alloc(&p, 1024, AR_REGION_PERSISTENT, "x", &o1, msg, sizeof(msg)), 0);
  ck_assert_int_eq(ar_pool_alloc(&p, 1024, AR_REGION_PERSISTENT, "y", &o2, msg, sizeof(msg)), 0);
  ck_assert_int_eq(ar_pool_alloc(&p, 1024, AR_REGION_PERSISTENT, "z", &o3, msg, sizeof(msg)), 0);
  ck_assert_int_eq(ar_pool_free(&p, o2), 0);
  /* 2048 bytes are free in total, but in two blocks of 1024: a 2048 request does not fit. */
  size_t before = p.n_regions;
  ck_assert_int_eq(ar_pool_alloc(&p, 2048, AR_REGION_ACTIVATION, "big", &o2, msg, sizeof(msg)), AR_ENOSPC);
  ck_assert_ptr_nonnull(strstr(msg, "needs 2048 bytes"));
  ck_assert_ptr_nonnull(strstr(msg, "largest free block is 1024 bytes"));
  ck_assert_uint_eq(p.n_regions, before);   /* nothing disturbed */
  assert_tiling(&p);
  ar_pool_close(&p);
}
END_TEST

/* ---- latency histogram --------------------------------------------------------------------- */

START_TEST(latency_percentiles) {
  static ar_latency_t h;
  memset(&h, 0, sizeof(h));
  ck_assert_uint_eq(ar_latency_percentile(&h, 50), 0);
  /* Values 1..1000 µs: p50 ~ 500, p99 ~ 990, within one bucket (6.25 %). */
  for (uint64_t v = 1; v <= 1000; v++) ar_latency_record(&h, v);
  uint64_t p50 = ar_latency_percentile(&h, 50), p99 = ar_latency_percentile(&h, 99);
  ck_assert_uint_ge(p50, 500);
  ck_assert_uint_le(p50, 532);
  ck_assert_uint_ge(p99, 990);
  ck_assert_uint_le(p99, 1000);   /* clamped to the max seen */
  ck_assert_uint_eq(h.max_us, 1000);
  ck_assert_uint_eq(ar_latency_percentile(&h, 100), 1000);
  /* Small values are exact; every value lies at or below its bucket's upper edge. */
  for (uint64_t v = 0; v < 32; v++) ck_assert_uint_eq(ar_latency_bucket_upper(ar_latency_bucket(v)), v);
  for (uint64_t v = 32; v < (1u << 24); v = v * 3 / 2 + 7) {
    uint64_t up = ar_latency_bucket_upper(ar_latency_bucket(v));
    ck_assert_uint_ge(up, v);
    ck_assert_uint_le(up - v, v / 16 + 1);
  }
}
END_TEST

/* ---- heap allocation counter (heap_allocs_in_invoke) ---------------------------------------- */

static void *volatile sink;

static volatile int other_go, other_done;

static void *alloc_elsewhere(void *arg) {
  while (!other_go) { /* wait for the main thread's counting window */ }
  for (int i = 0; i < 100; i++) {
    sink = malloc(64);
    free(sink);
  }
  other_done = 1;
  return arg;
}

START_TEST(alloc_counter_counts_this_thread_only) {
  if (!ar_alloc_count_available()) {   /* sanitizer builds and valgrind: the daemon reports -1 */
    printf("alloc counter: not available in this build/run (stats report -1); nothing to count\n");
    return;
  }
  ar_alloc_count_begin();
  sink = malloc(100);
  free(sink);
  sink = calloc(3, 8);
  sink = realloc(sink, 4096);
  free(sink);
  void *p = NULL;
  int rc = posix_memalign(&p, 64, 128);   /* Check's asserts allocate: assert after the window */
  free(p);
  uint64_t n = ar_alloc_count_end();
  ck_assert_int_eq(rc, 0);
  ck_assert_uint_eq(n, 4);
  /* Another thread's allocations during the window are not counted. */
  pthread_t th;
  pthread_create(&th, NULL, alloc_elsewhere, NULL);
  ar_alloc_count_begin();
  other_go = 1;
  while (!other_done) { /* the other thread allocates 100 times */ }
  n = ar_alloc_count_end();
  ck_assert_uint_eq(n, 0);
  pthread_join(th, NULL);
  /* Disarmed: nothing is counted. */
  sink = malloc(10);
  free(sink);
  ar_alloc_count_begin();
  n = ar_alloc_count_end();
  ck_assert_uint_eq(n, 0);
}
END_TEST

/* ---- framing against a live daemon --------------------------------------------------------- */

static ar_test_daemon_t dmn;

static void start_daemon(void) {
  static const char *const extra[] = {NULL};
  ck_assert_msg(ar_td_start(&dmn, "16M", extra) == 0, "arenad did not start (log %s)", dmn.log);
}
static void stop_daemon(void) { ck_assert_int_eq(ar_td_stop(&dmn), 0); }

static Arenad__Response *ping_on(int fd, uint64_t id) {
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__PingRequest ping = ARENAD__PING_REQUEST__INIT;
  req.id = id;
  req.body_case = ARENAD__REQUEST__BODY_PING;
  req.ping = &ping;
  if (ar_td_send_request(fd, &req) != 0) return NULL;
  return ar_td_read_response(fd);
}

START_TEST(ping_and_pipelining) {
  start_daemon();
  int fd = ar_td_connect_raw(dmn.socket);
  ck_assert_int_ge(fd, 0);
  Arenad__Response *r = ping_on(fd, 7);
  ck_assert_ptr_nonnull(r);
  ck_assert_uint_eq(r->id, 7);
  ck_assert_int_eq(r->status->code, ARENAD__CODE__OK);
  ck_assert_int_eq(r->body_case, ARENAD__RESPONSE__BODY_PING);
  ck_assert_str_eq(r->ping->version, PACKAGE_VERSION);
  arenad__response__free_unpacked(r, NULL);
  /* 20 requests in one write (stats and pings mixed), then 20 answers, each with its id. */
  uint8_t batch[4096];
  size_t n = 0;
  for (uint64_t id = 100; id < 120; id++) {
    Arenad__Request req = ARENAD__REQUEST__INIT;
    Arenad__PingRequest ping = ARENAD__PING_REQUEST__INIT;
    Arenad__GetStatsRequest stats = ARENAD__GET_STATS_REQUEST__INIT;
    req.id = id;
    if (id % 2) {
      req.body_case = ARENAD__REQUEST__BODY_GET_STATS;
      req.get_stats = &stats;
    } else {
      req.body_case = ARENAD__REQUEST__BODY_PING;
      req.ping = &ping;
    }
    size_t k = arenad__request__get_packed_size(&req);
    batch[n] = (uint8_t)k, batch[n + 1] = 0, batch[n + 2] = 0, batch[n + 3] = 0;
    arenad__request__pack(&req, batch + n + 4);
    n += 4 + k;
  }
  ck_assert_int_eq(ar_td_write_all(fd, batch, n), 0);
  uint32_t seen = 0;
  for (int i = 0; i < 20; i++) {
    r = ar_td_read_response(fd);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_ge(r->id, 100);
    ck_assert_uint_lt(r->id, 120);
    ck_assert_int_eq(r->status->code, 0);
    ck_assert_int_eq(r->body_case, r->id % 2 ? ARENAD__RESPONSE__BODY_GET_STATS : ARENAD__RESPONSE__BODY_PING);
    seen |= 1u << (r->id - 100);
    arenad__response__free_unpacked(r, NULL);
  }
  ck_assert_uint_eq(seen, 0xfffff);
  close(fd);
  stop_daemon();
}
END_TEST

/* An error response (id `id`, code `code`) whose message contains `needle`. */
static void expect_error(int fd, uint64_t id, int code, const char *needle) {
  Arenad__Response *r = ar_td_read_response(fd);
  ck_assert_msg(r != NULL, "no error response (expected code %d)", code);
  ck_assert_uint_eq(r->id, id);
  ck_assert_int_eq(r->status->code, code);
  ck_assert_int_eq(r->body_case, ARENAD__RESPONSE__BODY__NOT_SET);
  ck_assert_msg(strstr(r->status->message, needle) != NULL, "message '%s' lacks '%s'", r->status->message, needle);
  arenad__response__free_unpacked(r, NULL);
}

START_TEST(zero_length_frame_keeps_connection) {
  start_daemon();
  int fd = ar_td_connect_raw(dmn.socket);
  ck_assert_int_eq(ar_td_send_frame(fd, NULL, 0), 0);
  expect_error(fd, 0, ARENAD__CODE__EPROTO, "empty frame");
  /* The framing is intact: the same connection keeps working. */
  Arenad__Response *r = ping_on(fd, 9);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(r->status->code, 0);
  arenad__response__free_unpacked(r, NULL);
  close(fd);
  ck_assert_int_eq(ar_td_ping(dmn.socket), 0);
  stop_daemon();
}
END_TEST

START_TEST(oversized_frame_error_then_close) {
  start_daemon();
  int fd = ar_td_connect_raw(dmn.socket);
  /* 64 MiB + 1 announced: above the default max_frame_bytes. Only the header is sent. */
  uint32_t n = (64u << 20) + 1;
  uint8_t h[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
  ck_assert_int_eq(ar_td_write_all(fd, h, 4), 0);
  expect_error(fd, 0, ARENAD__CODE__E2BIG, "exceeds max_frame_bytes 67108864");
  ck_assert(ar_td_at_eof(fd));
  close(fd);
  ck_assert_int_eq(ar_td_ping(dmn.socket), 0);
  stop_daemon();
}
END_TEST

START_TEST(garbage_bytes) {
  start_daemon();
  /* A frame whose body is not a protobuf Request. */
  int fd = ar_td_connect_raw(dmn.socket);
  const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x13, 0x37, 0x00, 0x01};
  ck_assert_int_eq(ar_td_send_frame(fd, junk, sizeof(junk)), 0);
  expect_error(fd, 0, ARENAD__CODE__EPROTO, "does not decode");
  close(fd);
  /* Raw text where a length should be: "GET / HTTP/1.1" reads as a huge length. */
  fd = ar_td_connect_raw(dmn.socket);
  const char *http = "GET / HTTP/1.1\r\n\r\n";
  ck_assert_int_eq(ar_td_write_all(fd, http, strlen(http)), 0);
  expect_error(fd, 0, ARENAD__CODE__E2BIG, "exceeds");
  ck_assert(ar_td_at_eof(fd));
  close(fd);
  /* A valid protobuf with no body set. */
  fd = ar_td_connect_raw(dmn.socket);
  Arenad__Request req = ARENAD__REQUEST__INIT;
  req.id = 77;
  ck_assert_int_eq(ar_td_send_request(fd, &req), 0);
  expect_error(fd, 77, ARENAD__CODE__EPROTO, "no body");
  close(fd);
  ck_assert_int_eq(ar_td_ping(dmn.socket), 0);
  stop_daemon();
}
END_TEST

START_TEST(truncated_frame_then_close) {
  start_daemon();
  int fd = ar_td_connect_raw(dmn.socket);
  /* Announce 100 bytes, send 10, half-close. */
  uint8_t buf[14] = {100, 0, 0, 0};
  ck_assert_int_eq(ar_td_write_all(fd, buf, sizeof(buf)), 0);
  ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
  expect_error(fd, 0, ARENAD__CODE__EPROTO, "truncated frame: header announces 100 bytes, the stream ended after 10");
  ck_assert(ar_td_at_eof(fd));
  close(fd);
  /* A client that vanishes inside a frame (full close) must not disturb the daemon either. */
  fd = ar_td_connect_raw(dmn.socket);
  ck_assert_int_eq(ar_td_write_all(fd, buf, 6), 0);
  close(fd);
  ck_assert_int_eq(ar_td_ping(dmn.socket), 0);
  stop_daemon();
}
END_TEST

START_TEST(unknown_model_and_bad_load_names) {
  start_daemon();
  int fd = ar_td_connect_raw(dmn.socket);
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__GetPlanRequest plan = ARENAD__GET_PLAN_REQUEST__INIT;
  plan.model = "nosuch";
  req.id = 5;
  req.body_case = ARENAD__REQUEST__BODY_GET_PLAN;
  req.get_plan = &plan;
  ck_assert_int_eq(ar_td_send_request(fd, &req), 0);
  expect_error(fd, 5, ARENAD__CODE__ENOENT, "no model named 'nosuch'");
  Arenad__LoadModelRequest load = ARENAD__LOAD_MODEL_REQUEST__INIT;
  load.name = "bad name!";
  load.path = "/nonexistent.tflite";
  req.id = 6;
  req.body_case = ARENAD__REQUEST__BODY_LOAD_MODEL;
  req.load_model = &load;
  ck_assert_int_eq(ar_td_send_request(fd, &req), 0);
  expect_error(fd, 6, ARENAD__CODE__EINVAL, "model name 'bad name!'");
  load.name = "m";
  ck_assert_int_eq(ar_td_send_request(fd, &req), 0);
  /* Outside the daemon's model_dirs (whether or not it exists): refused before any file access. */
  expect_error(fd, 6, ARENAD__CODE__EPERM, "/nonexistent.tflite");
  load.strategy = "magic";
  ck_assert_int_eq(ar_td_send_request(fd, &req), 0);
  expect_error(fd, 6, ARENAD__CODE__EINVAL, "unknown planner strategy 'magic'");
  load.strategy = "";
  load.weights = "fp16";
  ck_assert_int_eq(ar_td_send_request(fd, &req), 0);
  expect_error(fd, 6, ARENAD__CODE__EINVAL, "unknown weights mode 'fp16' (stored, fp32)");
  close(fd);
  ck_assert_int_eq(ar_td_ping(dmn.socket), 0);
  stop_daemon();
}
END_TEST


/* A protobuf string carries a length; "a\0b" must not reach the daemon as "a". Hand-built frames:
 * Request{id=21, load_model{name="a\0b", path="/x"}} and Request{id=22, invoke{model="face\0x"}}. */
START_TEST(string_with_nul_is_rejected) {
  start_daemon();
  int fd = ar_td_connect_raw(dmn.socket);
  const uint8_t load[] = {0x08, 21,                                   /* id = 21 */
                          0x1a, 9,                                    /* load_model, 9 bytes */
                          0x0a, 3, 'a', 0, 'b',                       /* name */
                          0x12, 2, '/', 'x'};                         /* path */
  ck_assert_int_eq(ar_td_send_frame(fd, load, sizeof(load)), 0);
  expect_error(fd, 21, ARENAD__CODE__EPROTO, "string field 'name' contains a NUL byte");
  const uint8_t inv[] = {0x08, 22, 0x32, 8, 0x0a, 6, 'f', 'a', 'c', 'e', 0, 'x'};
  ck_assert_int_eq(ar_td_send_frame(fd, inv, sizeof(inv)), 0);
  expect_error(fd, 22, ARENAD__CODE__EPROTO, "string field 'model' contains a NUL byte");
  /* Without the NUL the same load is an ordinary request (refused: "/x" is outside model_dirs). */
  const uint8_t ok[] = {0x08, 23, 0x1a, 8, 0x0a, 2, 'a', 'b', 0x12, 2, '/', 'x'};
  ck_assert_int_eq(ar_td_send_frame(fd, ok, sizeof(ok)), 0);
  expect_error(fd, 23, ARENAD__CODE__EPERM, "'/x'");
  close(fd);
  ck_assert_int_eq(ar_td_ping(dmn.socket), 0);
  stop_daemon();
}
END_TEST

static Suite *protocol_suite(void) {
  Suite *s = suite_create("protocol");
  TCase *pool = tcase_create("pool");
  tcase_add_test(pool, pool_best_fit_split_and_coalesce);
  tcase_add_test(pool, pool_enospc_names_bytes_and_largest_block);
  tcase_add_test(pool, pool_compact_makes_one_free_block);
  tcase_add_test(pool, latency_percentiles);
  tcase_add_test(pool, alloc_counter_counts_this_thread_only);
  suite_add_tcase(s, pool);
  TCase *wire = tcase_create("wire");
  tcase_set_timeout(wire, 120);
  tcase_add_test(wire, ping_and_pipelining);
  tcase_add_test(wire, zero_length_frame_keeps_connection);
  tcase_add_test(wire, oversized_frame_error_then_close);
  tcase_add_test(wire, garbage_bytes);
  tcase_add_test(wire, truncated_frame_then_close);
  tcase_add_test(wire, unknown_model_and_bad_load_names);
  tcase_add_test(wire, string_with_nul_is_rejected);
  suite_add_tcase(s, wire);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(protocol_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
