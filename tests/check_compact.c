/* check_compact.c - pool compaction in a real arenad over its socket (daemon/ar_compact.c, the
 * protocol's `compact` request, libarenaclient's ar_client_compact).
 *
 *   - six models loaded one after the other, every other one unloaded: a seventh model larger
 *     than the largest hole but smaller than the free total loads (the daemon compacts because the
 *     load would fail with ENOSPC), the remaining models and the new one match their goldens, and
 *     the pool shows one free block;
 *   - an explicit compaction while invokes are in flight on the models it moves (pipelined on one
 *     connection ahead of the compact request, and streamed from other threads) and a load sent
 *     right after it: every invoke answers its golden, the compact reply comes after the invokes
 *     accepted before it, the load succeeds, and the figures add up (regions and bytes moved, free
 *     bytes unchanged, largest block = free bytes, the free block's pages released);
 *   - the automatic compaction after an unload, moving a share group's region with both members;
 *   - the automatic compaction after a share group's region grew (a larger member joined) and left
 *     its old place free; with compact_after_unload off the hole stays.
 *
 * Model sizes depend on the interpreter's options (weights as stored or widened), so the first
 * test measures them in a daemon of its own and picks the roles from the figures.
 */
#include "config.h"

#include <check.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/ar_client.h"
#include "common/ar_error.h"
#include "tests/ar_test_client.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_util.h"

/* ---- daemon and client helpers ------------------------------------------------------------- */

static ar_test_daemon_t dmn;
static char cfg_dir[64];
static char cfg_path[128];

/* Start arenad with `pool` bytes; `auto_compact` false writes a configuration that turns the
 * compaction after unload off (so that holes stay until a load or a request compacts). */
static void start(const char *pool, bool auto_compact) {
  const char *extra[3] = {NULL, NULL, NULL};
  if (!auto_compact) {
    snprintf(cfg_dir, sizeof(cfg_dir), "/tmp/arenad-compact-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(cfg_dir));
    snprintf(cfg_path, sizeof(cfg_path), "%s/arenad.json", cfg_dir);
    FILE *f = fopen(cfg_path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"compact_after_unload\": false, \"models\": []}\n");
    fclose(f);
    extra[0] = "--config";
    extra[1] = cfg_path;
  }
  ck_assert_msg(ar_td_start(&dmn, pool, extra) == 0, "arenad did not start (log %s)", dmn.log);
}

static void stop(void) {
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
  if (cfg_path[0]) {
    unlink(cfg_path);
    rmdir(cfg_dir);
    cfg_path[0] = '\0';
  }
}

static ar_client_t *client(void) {
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  int rc = ar_client_connect(dmn.socket, &c, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "connect: %s", msg);
  return c;
}

static void load_ok(ar_client_t *c, const char *name, const char *stem, ar_client_model_t *info) {
  char msg[AR_MSG_BYTES];
  int rc = ar_client_load(c, name, ar_tc_model_path(stem), NULL, NULL, info, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "load %s: %s", name, msg);
}

static void unload_ok(ar_client_t *c, const char *name) {
  char msg[AR_MSG_BYTES];
  int rc = ar_client_unload(c, name, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "unload %s: %s", name, msg);
}

static uint64_t persistent_offset_of(json_t *st, const char *name) {
  json_t *m = ar_tc_stats_model(st, name);
  ck_assert_ptr_nonnull(m);
  return ar_tc_ji(json_object_get(m, "persistent_region"), "offset");
}

/* The stats once `n` compactions have ended and none is running (polled every 10 ms, at most
 * 30 s, 300 s under an emulator; NULL if that never happens). */
static json_t *wait_compactions(ar_client_t *c, uint64_t n) {
  int tries = ar_test_emulated() ? 30000 : 3000;
  for (int i = 0; i < tries; i++) {
    json_t *st = ar_tc_stats(c);
    json_t *p = json_object_get(st, "pool");
    if (ar_tc_ji(p, "compactions") >= n && !json_is_true(json_object_get(p, "compacting"))) return st;
    json_decref(st);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

/* Pool bytes a model takes: its persistent and activation regions (64-byte units, as the pool
 * rounds them). */
static uint64_t pool_need(const ar_client_model_t *m) {
  uint64_t p = m->persistent_bytes ? (m->persistent_bytes + 63) / 64 * 64 : 0;
  uint64_t a = m->arena_bytes ? (m->arena_bytes + 63) / 64 * 64 : 64;
  return p + a;
}

/* Invoke `name` on both golden cases of `stem`: every output within tolerance. */
static void invoke_goldens(ar_client_t *c, const char *name, const ar_client_model_t *info, const char *stem) {
  static const char *cases[] = {"photo", "random"};
  for (int k = 0; k < 2; k++) {
    ar_tc_golden_t g;
    ar_tc_golden_load(&g, stem, cases[k]);
    ar_client_tensor_t t = info->inputs[0];
    t.data = g.input;
    t.bytes = g.input_bytes;
    ar_client_result_t r;
    char msg[AR_MSG_BYTES];
    int rc = ar_client_invoke(c, name, &t, 1, &r, msg, sizeof(msg));
    ck_assert_msg(rc == 0, "invoke %s: %s", name, msg);
    size_t bad = ar_tc_golden_check(&g, &r);
    ck_assert_msg(bad == 0, "%s (%s) on %s: %zu outputs off the golden after compaction", name, stem, cases[k], bad);
    ar_client_result_free(&r);
    ar_tc_golden_free(&g);
  }
}

/* ---- six models, every other unloaded, a larger one loads after compaction ---------------- */

static const char *const candidates[] = {
  "face_detection_short_range", "selfie_segmentation", "selfie_segmentation_landscape",
  "face_detection_full_range", "palm_detection_lite", "palm_detection_full",
  "hand_landmark_lite", "hand_landmark_full",
};
#define N_CAND (sizeof(candidates) / sizeof(candidates[0]))
#define SLACK ((uint64_t)64 * 1024)

START_TEST(larger_model_loads_after_compaction) {
  /* 1. Each candidate's pool bytes, from a daemon of its own (same options as the real run). */
  ar_client_model_t *info = calloc(N_CAND, sizeof(*info));
  uint64_t need[N_CAND];
  start("512M", true);
  ar_client_t *c = client();
  for (size_t i = 0; i < N_CAND; i++) {
    load_ok(c, candidates[i], candidates[i], &info[i]);
    need[i] = pool_need(&info[i]);
  }
  ar_client_close(c);
  stop();
  /* 2. Roles: X the largest; U (unloaded) the next three that are each smaller than X by more than
   * the slack, with X no larger than their sum; K (kept) three of the rest. */
  size_t order[N_CAND];
  for (size_t i = 0; i < N_CAND; i++) order[i] = i;
  for (size_t i = 0; i < N_CAND; i++)
    for (size_t j = i + 1; j < N_CAND; j++)
      if (need[order[j]] > need[order[i]]) {
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
  size_t x = order[0], u[3], k[3];
  int nu = 0, nk = 0;
  for (size_t i = 1; i < N_CAND; i++) {
    size_t m = order[i];
    if (nu < 3 && need[m] + SLACK < need[x]) u[nu++] = m;
    else if (nu == 3 && nk < 3) k[nk++] = m;
  }
  ck_assert_msg(nu == 3 && nk == 3, "not enough candidate models of distinct sizes");
  uint64_t sum_u = need[u[0]] + need[u[1]] + need[u[2]];
  ck_assert_msg(sum_u + SLACK >= need[x], "%s needs %" PRIu64 " bytes, more than the three holes together (%" PRIu64 ")",
                candidates[x], need[x], sum_u + SLACK);
  /* 3. Pool for exactly the six plus the slack; load K0 U0 K1 U1 K2 U2 in that order. */
  uint64_t pool = SLACK;
  for (int i = 0; i < 3; i++) pool += need[u[i]] + need[k[i]];
  char pool_s[32];
  snprintf(pool_s, sizeof(pool_s), "%" PRIu64, pool);
  start(pool_s, false);
  c = client();
  ar_client_model_t got[N_CAND];
  for (int i = 0; i < 3; i++) {
    load_ok(c, candidates[k[i]], candidates[k[i]], &got[k[i]]);
    load_ok(c, candidates[u[i]], candidates[u[i]], &got[u[i]]);
  }
  json_t *st = ar_tc_stats(c);
  json_t *p = json_object_get(st, "pool");
  ck_assert_uint_eq(ar_tc_ji(p, "free_bytes"), SLACK);
  uint64_t k1_before = persistent_offset_of(st, candidates[k[1]]), k2_before = persistent_offset_of(st, candidates[k[2]]);
  json_decref(st);
  for (int i = 0; i < 3; i++) unload_ok(c, candidates[u[i]]);
  st = ar_tc_stats(c);
  p = json_object_get(st, "pool");
  uint64_t free_b = ar_tc_ji(p, "free_bytes"), largest = ar_tc_ji(p, "largest_free_bytes");
  printf("compact: pool %" PRIu64 " B; holes after unloading %s, %s, %s: free %" PRIu64 " B in %" PRIu64
         " blocks, largest %" PRIu64 " B; %s needs %" PRIu64 " B\n",
         pool, candidates[u[0]], candidates[u[1]], candidates[u[2]], free_b, ar_tc_ji(p, "free_blocks"), largest,
         candidates[x], need[x]);
  ck_assert_uint_eq(free_b, sum_u + SLACK);
  ck_assert_uint_eq(ar_tc_ji(p, "free_blocks"), 3);
  ck_assert_uint_lt(largest, need[x]);   /* does not fit any hole ... */
  ck_assert_uint_le(need[x], free_b);    /* ... but fits the free total */
  ck_assert_uint_eq(ar_tc_ji(p, "compactions"), 0);
  json_decref(st);
  /* 4. The load compacts the pool first, then fits. */
  ar_client_model_t xi;
  load_ok(c, "big", candidates[x], &xi);
  /* The load goes on as soon as the new layout is applied; the compaction counts as done when its
   * last move ends, which may be just after the load's reply. */
  st = wait_compactions(c, 1);
  ck_assert_msg(st != NULL, "the compaction of the load did not end");
  p = json_object_get(st, "pool");
  ck_assert_uint_eq(ar_tc_ji(p, "compactions"), 1);
  ck_assert_uint_eq(ar_tc_ji(p, "free_bytes"), free_b - need[x]);
  ck_assert_uint_eq(ar_tc_ji(p, "largest_free_bytes"), ar_tc_ji(p, "free_bytes"));
  ck_assert_uint_le(ar_tc_ji(p, "free_blocks"), 1);
  ck_assert_uint_eq(json_array_size(json_object_get(st, "models")), 4);
  /* K1 and K2 moved down; the new model sits at the top of the used bytes. */
  ck_assert_uint_lt(persistent_offset_of(st, candidates[k[1]]), k1_before);
  ck_assert_uint_lt(persistent_offset_of(st, candidates[k[2]]), k2_before);
  printf("compact: %s loaded after compaction (%" PRIu64 " bytes moved); free %" PRIu64 " B in one block\n",
         candidates[x], ar_tc_ji(p, "compacted_bytes"), ar_tc_ji(p, "free_bytes"));
  json_decref(st);
  /* 5. Every model on its goldens. */
  for (int i = 0; i < 3; i++) invoke_goldens(c, candidates[k[i]], &got[k[i]], candidates[k[i]]);
  invoke_goldens(c, "big", &xi, candidates[x]);
  ar_client_close(c);
  stop();
  free(info);
}
END_TEST

/* ---- compaction with invokes in flight ----------------------------------------------------- */

typedef struct {
  const char *model;
  const ar_client_model_t *info;
  const ar_tc_golden_t *g;
  volatile int *stop;
  int ok, other;
} streamer_t;

static void *stream_invokes(void *arg) {
  streamer_t *s = arg;
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  if (ar_client_connect(dmn.socket, &c, msg, sizeof(msg)) != 0) {
    s->other++;
    return NULL;
  }
  ar_client_tensor_t t = s->info->inputs[0];
  t.data = s->g->input;
  t.bytes = s->g->input_bytes;
  while (!__atomic_load_n(s->stop, __ATOMIC_ACQUIRE)) {
    ar_client_result_t r;
    if (ar_client_invoke(c, s->model, &t, 1, &r, msg, sizeof(msg)) == 0) {
      if (ar_tc_golden_check(s->g, &r) == 0) __atomic_add_fetch(&s->ok, 1, __ATOMIC_RELAXED);
      else s->other++;
      ar_client_result_free(&r);
    } else {
      s->other++;
      break;
    }
  }
  ar_client_close(c);
  return NULL;
}

typedef struct {
  int fd;
  uint8_t *buf;
  size_t len;
  int rc;
} writer_arg_t;

static void *writer_main(void *arg) {
  writer_arg_t *w = arg;
  w->rc = ar_td_write_all(w->fd, w->buf, w->len);
  return NULL;
}

/* Append one framed request to buf (grown with realloc). */
static void append_frame(uint8_t **buf, size_t *len, const Arenad__Request *req) {
  size_t n = arenad__request__get_packed_size(req);
  *buf = realloc(*buf, *len + 4 + n);
  ck_assert_ptr_nonnull(*buf);
  uint8_t *p = *buf + *len;
  p[0] = (uint8_t)n;
  p[1] = (uint8_t)(n >> 8);
  p[2] = (uint8_t)(n >> 16);
  p[3] = (uint8_t)(n >> 24);
  arenad__request__pack(req, p + 4);
  *len += 4 + n;
}

static void append_invoke(uint8_t **buf, size_t *len, uint64_t id, const char *model, const ar_client_model_t *info,
                          const ar_tc_golden_t *g) {
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__InvokeRequest inv = ARENAD__INVOKE_REQUEST__INIT;
  Arenad__Tensor t = ARENAD__TENSOR__INIT;
  Arenad__Tensor *tp = &t;
  int64_t shape[AR_CLIENT_MAX_RANK];
  for (int d = 0; d < info->inputs[0].rank; d++) shape[d] = info->inputs[0].dims[d];
  t.dtype = ARENAD__DTYPE__FLOAT32;
  t.n_shape = (size_t)info->inputs[0].rank;
  t.shape = shape;
  t.data.data = (uint8_t *)g->input;
  t.data.len = g->input_bytes;
  inv.model = (char *)model;
  inv.n_inputs = 1;
  inv.inputs = &tp;
  req.id = id;
  req.body_case = ARENAD__REQUEST__BODY_INVOKE;
  req.invoke = &inv;
  append_frame(buf, len, &req);
}

START_TEST(compaction_with_invokes_in_flight) {
  start("64M", false);
  ar_client_t *c = client();
  ar_client_model_t face, palm, selfie, hand;
  load_ok(c, "face", "face_detection_short_range", &face);
  load_ok(c, "palm", "palm_detection_lite", &palm);
  load_ok(c, "selfie", "selfie_segmentation", &selfie);
  load_ok(c, "hand", "hand_landmark_lite", &hand);
  unload_ok(c, "palm");   /* a hole below selfie and hand: both move, face stays */
  json_t *st = ar_tc_stats(c);
  json_t *p = json_object_get(st, "pool");
  ck_assert_uint_eq(ar_tc_ji(p, "free_blocks"), 2);
  uint64_t free_before = ar_tc_ji(p, "free_bytes");
  uint64_t selfie_before = persistent_offset_of(st, "selfie"), hand_before = persistent_offset_of(st, "hand");
  json_decref(st);
  ar_tc_golden_t gf, gs, gh;
  ar_tc_golden_load(&gf, "face_detection_short_range", "photo");
  ar_tc_golden_load(&gs, "selfie_segmentation", "photo");
  ar_tc_golden_load(&gh, "hand_landmark_lite", "random");
  /* Streams on a model that moves and on one that does not, from other connections. */
  volatile int stop_flag = 0;
  streamer_t s[3] = {
    {.model = "selfie", .info = &selfie, .g = &gs, .stop = &stop_flag},
    {.model = "selfie", .info = &selfie, .g = &gs, .stop = &stop_flag},
    {.model = "face", .info = &face, .g = &gf, .stop = &stop_flag},
  };
  pthread_t th[3];
  for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, stream_invokes, &s[i]);
  for (;;) {   /* until the streams are flowing (progress, not time) */
    st = ar_tc_stats(c);
    uint64_t n = ar_tc_ji(ar_tc_stats_model(st, "selfie"), "invokes") + ar_tc_ji(ar_tc_stats_model(st, "face"), "invokes");
    json_decref(st);
    if (n >= 4) break;
  }
  /* One connection: 8 invokes of hand, the compact request, a load, 4 more invokes, written in one
   * go. The daemon takes frames in order, so the 8 are accepted before the compaction queues hand's
   * move; the load may finish preparing while the compaction waits (it then waits too). */
  enum { BEFORE = 8, AFTER = 4, COMPACT_ID = 100, LOAD_ID = 200 };
  uint8_t *buf = NULL;
  size_t len = 0;
  for (int i = 0; i < BEFORE; i++) append_invoke(&buf, &len, (uint64_t)(1 + i), "hand", &hand, &gh);
  Arenad__Request creq = ARENAD__REQUEST__INIT;
  Arenad__CompactRequest cbody = ARENAD__COMPACT_REQUEST__INIT;
  creq.id = COMPACT_ID;
  creq.body_case = ARENAD__REQUEST__BODY_COMPACT;
  creq.compact = &cbody;
  append_frame(&buf, &len, &creq);
  Arenad__Request lreq = ARENAD__REQUEST__INIT;
  Arenad__LoadModelRequest lbody = ARENAD__LOAD_MODEL_REQUEST__INIT;
  lbody.name = (char *)"late";
  lbody.path = ar_tc_model_path("face_detection_short_range");
  lbody.group = (char *)"";
  lbody.strategy = (char *)"";
  lreq.id = LOAD_ID;
  lreq.body_case = ARENAD__REQUEST__BODY_LOAD_MODEL;
  lreq.load_model = &lbody;
  append_frame(&buf, &len, &lreq);
  for (int i = 0; i < AFTER; i++) append_invoke(&buf, &len, (uint64_t)(COMPACT_ID + 1 + i), "hand", &hand, &gh);
  int fd = ar_td_connect_raw(dmn.socket);
  ck_assert_int_ge(fd, 0);
  writer_arg_t w = {.fd = fd, .buf = buf, .len = len};
  pthread_t wt;
  pthread_create(&wt, NULL, writer_main, &w);
  int before_seen = 0, after_seen = 0, before_at_compact = -1, loaded = 0;
  uint64_t late_need = 0;
  Arenad__CompactResponse fig = ARENAD__COMPACT_RESPONSE__INIT;
  for (int i = 0; i < BEFORE + AFTER + 2; i++) {
    Arenad__Response *r = ar_td_read_response(fd);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->status && r->status->code == 0, "request %" PRIu64 ": %s", r->id,
                  r->status ? r->status->message : "no status");
    if (r->id == COMPACT_ID) {
      ck_assert_int_eq(r->body_case, ARENAD__RESPONSE__BODY_COMPACT);
      fig = *r->compact;   /* scalars only */
      before_at_compact = before_seen;
    } else if (r->id == LOAD_ID) {
      ck_assert_int_eq(r->body_case, ARENAD__RESPONSE__BODY_LOAD_MODEL);
      const Arenad__ModelInfo *mi = r->load_model->model;
      ar_client_model_t li = {.arena_bytes = mi->arena_bytes, .persistent_bytes = mi->persistent_bytes};
      late_need = pool_need(&li);
      loaded++;
    } else {
      ck_assert_int_eq(r->body_case, ARENAD__RESPONSE__BODY_INVOKE);
      ck_assert_uint_eq(ar_tc_golden_check_pb(&gh, r->invoke), 0);
      if (r->id < COMPACT_ID) before_seen++;
      else after_seen++;
    }
    arenad__response__free_unpacked(r, NULL);
  }
  pthread_join(wt, NULL);
  ck_assert_int_eq(w.rc, 0);
  close(fd);
  free(buf);
  __atomic_store_n(&stop_flag, 1, __ATOMIC_RELEASE);
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(s[i].other, 0);
    ck_assert_int_gt(s[i].ok, 0);
  }
  printf("compact: %u regions (%" PRIu64 " B) moved, %u models re-placed in %" PRIu64 " us; free %" PRIu64
         " B, largest %" PRIu64 " -> %" PRIu64 " B, blocks %u -> %u, %" PRIu64 " B of free pages released; streams "
         "answered %d + %d + %d invokes\n",
         fig.regions_moved, fig.bytes_moved, fig.models_replaced, fig.duration_us, fig.free_bytes_after,
         fig.largest_free_bytes_before, fig.largest_free_bytes_after, fig.free_blocks_before, fig.free_blocks_after,
         fig.released_bytes, s[0].ok, s[1].ok, s[2].ok);
  /* The invokes of hand accepted before the compaction were all answered before it (its move was
   * queued behind them), correctly; the later ones too. */
  ck_assert_int_eq(before_at_compact, BEFORE);
  ck_assert_int_eq(before_seen, BEFORE);
  ck_assert_int_eq(after_seen, AFTER);
  ck_assert_int_eq(loaded, 1);
  /* Figures: selfie's and hand's persistent + activation regions moved down by palm's bytes. */
  ck_assert_uint_eq(fig.regions_moved, 4);
  ck_assert_uint_eq(fig.models_replaced, 2);
  ck_assert_uint_eq(fig.bytes_moved, pool_need(&selfie) + pool_need(&hand));
  ck_assert_uint_eq(fig.free_bytes_before, free_before);
  ck_assert_uint_eq(fig.free_bytes_after, free_before);
  ck_assert_uint_eq(fig.largest_free_bytes_after, free_before);
  ck_assert_uint_lt(fig.largest_free_bytes_before, free_before);
  ck_assert_uint_eq(fig.free_blocks_before, 2);
  ck_assert_uint_eq(fig.free_blocks_after, 1);
  /* The free block's pages went back to the system: at most the partial page at its start is
   * still resident. */
  long page = sysconf(_SC_PAGESIZE);
  ck_assert_uint_gt(fig.released_bytes, 0);
  ck_assert_uint_le(fig.released_bytes, fig.free_bytes_after);
  st = ar_tc_stats(c);
  p = json_object_get(st, "pool");
  ck_assert_uint_eq(ar_tc_ji(p, "largest_free_bytes"), ar_tc_ji(p, "free_bytes"));
  ck_assert_uint_eq(ar_tc_ji(p, "free_bytes"), free_before - late_need);
  size_t ri;
  json_t *reg;
  json_array_foreach(json_object_get(p, "regions"), ri, reg) {
    if (strcmp(json_string_value(json_object_get(reg, "kind")), "free") == 0)
      ck_assert_uint_le(ar_tc_ji(reg, "resident_bytes"), (uint64_t)page);
  }
  ck_assert_uint_eq(ar_tc_ji(p, "free_blocks"), 1);
  ck_assert_uint_eq(ar_tc_ji(p, "compactions"), 1);
  ck_assert_uint_eq(persistent_offset_of(st, "selfie"), selfie_before - pool_need(&palm));
  ck_assert_uint_eq(persistent_offset_of(st, "hand"), hand_before - pool_need(&palm));
  ck_assert_uint_eq(ar_tc_ji(ar_tc_stats_model(st, "hand"), "errors"), 0);
  json_decref(st);
  /* Nothing left to move: a second request answers at once with nothing moved. */
  ar_client_compact_t f2;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_client_compact(c, &f2, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(f2.regions_moved, 0);
  ck_assert_uint_eq(f2.largest_free_bytes_after, free_before - late_need);
  invoke_goldens(c, "selfie", &selfie, "selfie_segmentation");
  invoke_goldens(c, "hand", &hand, "hand_landmark_lite");
  invoke_goldens(c, "face", &face, "face_detection_short_range");
  invoke_goldens(c, "late", &face, "face_detection_short_range");
  ar_tc_golden_free(&gf);
  ar_tc_golden_free(&gs);
  ar_tc_golden_free(&gh);
  ar_client_close(c);
  stop();
}
END_TEST

/* ---- after an unload ----------------------------------------------------------------------- */

START_TEST(unload_compacts_the_pool) {
  start("64M", true);
  ar_client_t *c = client();
  ar_client_model_t face, palm, hand, selfie;
  char msg[AR_MSG_BYTES];
  load_ok(c, "face", "face_detection_short_range", &face);
  /* A share group above the hole: its one activation region moves, both members are re-placed. */
  ck_assert_int_eq(ar_client_load(c, "palm", ar_tc_model_path("palm_detection_lite"), "hands", NULL, &palm, msg, sizeof(msg)), 0);
  ck_assert_int_eq(ar_client_load(c, "hand", ar_tc_model_path("hand_landmark_lite"), "hands", NULL, &hand, msg, sizeof(msg)), 0);
  load_ok(c, "selfie", "selfie_segmentation", &selfie);
  /* Where hand's arena is larger than palm's (CPUs without AVX-512F, where the inverted-residual
   * fusion that shrinks it does not run), the hands region grew when hand joined, and that growth
   * was compacted already: count from what the loads left, not from 0. */
  json_t *st = wait_compactions(c, 0);
  ck_assert_msg(st != NULL, "a compaction after the loads never ended");
  uint64_t act_before = ar_tc_ji(json_object_get(ar_tc_stats_model(st, "palm"), "activation_region"), "offset");
  uint64_t used_before = ar_tc_ji(json_object_get(st, "pool"), "used_bytes");
  uint64_t compactions_before = ar_tc_ji(json_object_get(st, "pool"), "compactions");
  uint64_t compacted_before = ar_tc_ji(json_object_get(st, "pool"), "compacted_bytes");
  json_decref(st);
  unload_ok(c, "face");   /* the hole at offset 0: everything above it moves down */
  /* The compaction runs after the unload's reply: wait for it (bounded, progress-based). */
  st = wait_compactions(c, compactions_before + 1);
  ck_assert_msg(st != NULL, "no compaction after the unload");
  json_t *p = json_object_get(st, "pool");
  ck_assert_uint_eq(ar_tc_ji(p, "compactions"), compactions_before + 1);
  ck_assert_uint_eq(ar_tc_ji(p, "free_blocks"), 1);
  ck_assert_uint_eq(ar_tc_ji(p, "largest_free_bytes"), ar_tc_ji(p, "free_bytes"));
  uint64_t face_need = pool_need(&face);
  ck_assert_uint_eq(ar_tc_ji(p, "used_bytes"), used_before - face_need);
  ck_assert_uint_eq(ar_tc_ji(p, "compacted_bytes") - compacted_before, used_before - face_need);   /* all of it moved */
  ck_assert_uint_eq(persistent_offset_of(st, "palm"), 0);
  uint64_t act_after = ar_tc_ji(json_object_get(ar_tc_stats_model(st, "palm"), "activation_region"), "offset");
  ck_assert_uint_lt(act_after, act_before);   /* (the group's growth left a hole too: more than face's bytes) */
  ck_assert_uint_eq(ar_tc_ji(json_object_get(ar_tc_stats_model(st, "hand"), "activation_region"), "offset"), act_after);
  json_decref(st);
  invoke_goldens(c, "palm", &palm, "palm_detection_lite");
  invoke_goldens(c, "hand", &hand, "hand_landmark_lite");
  invoke_goldens(c, "selfie", &selfie, "selfie_segmentation");
  ar_client_close(c);
  stop();
}
END_TEST

/* ---- a share group's region that grows leaves its old place: compacted like an unload -------- */

/* face then selfie in one share group: selfie's arena is the larger, so the group's region grows
 * into a new place and the old one (face's activation bytes)
 * is freed. With compact_after_unload (the default) the daemon compacts: one free block, both
 * models answer their goldens; with it off the hole stays (the pool shows two free blocks). */
START_TEST(grown_group_region_compacts_the_pool) {
  for (int auto_compact = 1; auto_compact >= 0; auto_compact--) {
    start("64M", auto_compact);
    ar_client_t *c = client();
    ar_client_model_t face, selfie;
    char msg[AR_MSG_BYTES];
    ck_assert_int_eq(ar_client_load(c, "face", ar_tc_model_path("face_detection_short_range"), "people", NULL, &face, msg,
                                    sizeof(msg)), 0);
    ck_assert_int_eq(ar_client_load(c, "selfie", ar_tc_model_path("selfie_segmentation"), "people", NULL, &selfie, msg,
                                    sizeof(msg)), 0);
    ck_assert_uint_gt(selfie.arena_bytes, face.arena_bytes);   /* the premise: the region grew */
    json_t *st = auto_compact ? wait_compactions(c, 1) : ar_tc_stats(c);
    ck_assert_msg(st != NULL, "no compaction after the share group's region grew");
    json_t *p = json_object_get(st, "pool");
    ck_assert_uint_eq(ar_tc_ji(p, "used_bytes"), pool_need(&face) + pool_need(&selfie) -
                                                  (face.arena_bytes ? (face.arena_bytes + 63) / 64 * 64 : 64));
    if (auto_compact) {
      ck_assert_uint_eq(ar_tc_ji(p, "free_blocks"), 1);
      ck_assert_uint_eq(ar_tc_ji(p, "largest_free_bytes"), ar_tc_ji(p, "free_bytes"));
    } else {
      ck_assert_uint_eq(ar_tc_ji(p, "compactions"), 0);
      ck_assert_uint_eq(ar_tc_ji(p, "free_blocks"), 2);
    }
    json_decref(st);
    invoke_goldens(c, "face", &face, "face_detection_short_range");
    invoke_goldens(c, "selfie", &selfie, "selfie_segmentation");
    ar_client_close(c);
    stop();
  }
}
END_TEST

/* ---- a stateful model's stream goes on across a compaction (issue 27) ------------------------- */

static const char *state_dir(const char *env, const char *leaf, char *buf, size_t n) {
  const char *d = getenv(env);
  snprintf(buf, n, "%s", d && *d ? d : leaf);
  return buf;
}

/* Steps [from, to) of mww_v1_alexa's golden stream through the daemon: the output of each
 * (UINT8, byte for byte) must be the golden one. */
static void alexa_steps(ar_client_t *c, const ar_client_model_t *info, const char *golden, int from, int to) {
  for (int k = from; k < to; k++) {
    char path[1024], msg[AR_MSG_BYTES];
    uint8_t in[40], want[1];
    snprintf(path, sizeof path, "%s/steps/%d/input_0.bin", golden, k);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    ck_assert_uint_eq(fread(in, 1, sizeof in, f), sizeof in);
    fclose(f);
    snprintf(path, sizeof path, "%s/steps/%d/output_0.bin", golden, k);
    f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    ck_assert_uint_eq(fread(want, 1, 1, f), 1);
    fclose(f);
    ar_client_tensor_t t = info->inputs[0];
    t.data = in;
    t.bytes = sizeof in;
    ar_client_result_t r;
    int rc = ar_client_invoke(c, "alexa", &t, 1, &r, msg, sizeof msg);
    ck_assert_msg(rc == 0, "invoke alexa step %d: %s", k, msg);
    ck_assert_uint_eq(r.outputs[0].bytes, 1);
    ck_assert_msg(((const uint8_t *)r.outputs[0].data)[0] == want[0], "alexa step %d: got %u, golden %u", k,
                  ((const uint8_t *)r.outputs[0].data)[0], want[0]);
    ar_client_result_free(&r);
  }
}

/* mww_v1_alexa (its ring buffers in resource variables, initialised by CALL_ONCE) runs 10 steps of
 * its golden stream, a model loaded before it is unloaded and the pool compacted (alexa's
 * persistent region, holding its default state slot, slides down), then the 14 other steps: each
 * is its golden. Before the state slot a re-place zeroed the variables and re-ran CALL_ONCE, so
 * the stream started over at step 10. Skips when ../shared/models_state is absent. */
START_TEST(stateful_stream_goes_on_across_compaction) {
  char mdir[1024], gdir[1024], model[1200], golden[1200];
  state_dir("AR_MODELS_STATE_DIR", AR_SRCDIR "/../shared/models_state", mdir, sizeof mdir);
  state_dir("AR_GOLDEN_STATE_DIR", AR_SRCDIR "/../shared/golden_state", gdir, sizeof gdir);
  snprintf(model, sizeof model, "%s/mww_v1_alexa.tflite", mdir);
  snprintf(golden, sizeof golden, "%s/mww_v1_alexa", gdir);
  if (access(model, R_OK) != 0 || access(golden, R_OK) != 0) {
    printf("SKIP stateful_stream_goes_on_across_compaction: %s or %s is absent\n", model, golden);
    return;
  }
  snprintf(cfg_dir, sizeof(cfg_dir), "/tmp/arenad-compact-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(cfg_dir));
  snprintf(cfg_path, sizeof(cfg_path), "%s/arenad.json", cfg_dir);
  FILE *f = fopen(cfg_path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\"compact_after_unload\": false, \"models\": []}\n");
  fclose(f);
  const char *extra[] = {"--config", cfg_path, "--model-dir", mdir, NULL};
  ck_assert_msg(ar_td_start(&dmn, "64M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  ar_client_t *c = client();
  ar_client_model_t filler, info;
  load_ok(c, "filler", candidates[0], &filler);
  char msg[AR_MSG_BYTES];
  ck_assert_msg(ar_client_load(c, "alexa", model, NULL, NULL, &info, msg, sizeof msg) == 0, "load alexa: %s", msg);
  alexa_steps(c, &info, golden, 0, 10);
  json_t *st = ar_tc_stats(c);
  const uint64_t before = persistent_offset_of(st, "alexa");
  json_decref(st);
  unload_ok(c, "filler");
  ar_client_compact_t fig;
  ck_assert_msg(ar_client_compact(c, &fig, msg, sizeof msg) == 0, "compact: %s", msg);
  st = ar_tc_stats(c);
  const uint64_t after = persistent_offset_of(st, "alexa");
  json_decref(st);
  ck_assert_uint_lt(after, before);   /* the region (and its state) moved */
  printf("compact: alexa's persistent region %" PRIu64 " -> %" PRIu64 ", its stream goes on\n", before, after);
  alexa_steps(c, &info, golden, 10, 24);
  ar_client_close(c);
  stop();
}
END_TEST

static Suite *compact_suite(void) {
  Suite *s = suite_create("compact");
  TCase *tc = tcase_create("daemon");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, larger_model_loads_after_compaction);
  tcase_add_test(tc, compaction_with_invokes_in_flight);
  tcase_add_test(tc, unload_compacts_the_pool);
  tcase_add_test(tc, grown_group_region_compacts_the_pool);
  tcase_add_test(tc, stateful_stream_goes_on_across_compaction);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(compact_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
