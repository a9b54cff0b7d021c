/* check_daemon.c - arenad end to end with the real MediaPipe models: each test starts its own
 * daemon on a temp socket and talks to it through libarenaclient (and raw frames where the
 * client library would refuse to send something malformed).
 *
 *   - palm_detection_lite + hand_landmark_lite in one share group: outputs equal the goldens,
 *     stats show one pool, both models, disjoint regions except the shared activation region,
 *     which is sized to the larger model's arena;
 *   - 16 concurrent clients x 200 invokes across 3 models on both golden cases: every reply
 *     equals the golden of its own input, no error, no heap allocation inside invoke;
 *   - bad requests (unknown model, input count, dtype, shape, byte size, negative dims,
 *     malformed model file, a load that does not fit, unload during a stream of invokes):
 *     each gets an error response and a following Ping succeeds;
 *   - two loads of one file share the mapping; GetPlan returns the budget table.
 */
#include "config.h"

#include <check.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "clients/ar_client.h"
#include "common/ar_util.h"
#include "common/ar_error.h"
#include "daemon/ar_config.h"
#include "loader/ar_model.h"
#include "loader/ar_schema.h"
#include "proto/arenad.pb-c.h"
#include "tests/ar_test_client.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_model.h"
#include "tests/ar_test_model.h"
#include "tests/ar_test_util.h"

/* ---- daemon and client helpers ------------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AR_TEST_SANITIZED 1   /* the daemon under test is built the same way */
#else
#define AR_TEST_SANITIZED 0
#endif

static ar_test_daemon_t dmn;

static void start(const char *pool) {
  ck_assert_msg(ar_td_start(&dmn, pool, NULL) == 0, "arenad did not start (log %s)", dmn.log);
}
static void stop(void) { ck_assert_int_eq(ar_td_stop(&dmn), 0); }

static ar_client_t *client(void) {
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  int rc = ar_client_connect(dmn.socket, &c, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "connect: %s", msg);
  return c;
}

static void load_ok(ar_client_t *c, const char *name, const char *stem, const char *group, ar_client_model_t *info) {
  char msg[AR_MSG_BYTES];
  int rc = ar_client_load(c, name, ar_tc_model_path(stem), group, NULL, info, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "load %s: %s", name, msg);
}

static void ping_ok(void) { ck_assert_msg(ar_td_ping(dmn.socket) == 0, "the daemon stopped answering Ping"); }

static ar_client_tensor_t input_of(const ar_client_model_t *m, const ar_tc_golden_t *g) {
  ar_client_tensor_t t = m->inputs[0];
  t.data = g->input;
  t.bytes = g->input_bytes;
  return t;
}

/* ---- share group on the goldens ------------------------------------------------------------ */

START_TEST(share_group_goldens_and_pool_layout) {
  start("64M");
  ar_client_t *c = client();
  ar_client_model_t palm, hand;
  load_ok(c, "palm", "palm_detection_lite", "hands", &palm);
  load_ok(c, "hand", "hand_landmark_lite", "hands", &hand);
  ar_tc_golden_t gp, gh;
  ar_tc_golden_load(&gp, "palm_detection_lite", "photo");
  ar_tc_golden_load(&gh, "hand_landmark_lite", "photo");
  char msg[AR_MSG_BYTES];
  /* Twice each, interleaved: the shared activation region is reused by both models. */
  for (int round = 0; round < 2; round++) {
    ar_client_result_t r;
    ar_client_tensor_t t = input_of(&palm, &gp);
    ck_assert_msg(ar_client_invoke(c, "palm", &t, 1, &r, msg, sizeof(msg)) == 0, "%s", msg);
    ck_assert_uint_eq(ar_tc_golden_check(&gp, &r), 0);
    ar_client_result_free(&r);
    t = input_of(&hand, &gh);
    ck_assert_msg(ar_client_invoke(c, "hand", &t, 1, &r, msg, sizeof(msg)) == 0, "%s", msg);
    ck_assert_uint_eq(ar_tc_golden_check(&gh, &r), 0);
    ar_client_result_free(&r);
  }

  json_t *st = ar_tc_stats(c);
  json_t *pool = json_object_get(st, "pool");
  ck_assert_uint_eq(ar_tc_ji(pool, "bytes"), 64u << 20);
  ck_assert_uint_eq(json_array_size(json_object_get(st, "models")), 2);
  json_t *mp = ar_tc_stats_model(st, "palm"), *mh = ar_tc_stats_model(st, "hand");
  ck_assert_ptr_nonnull(mp);
  ck_assert_ptr_nonnull(mh);
  /* One activation region for the group, sized to the larger arena. */
  json_t *ap = json_object_get(mp, "activation_region"), *ah = json_object_get(mh, "activation_region");
  ck_assert_uint_eq(ar_tc_ji(ap, "offset"), ar_tc_ji(ah, "offset"));
  ck_assert_uint_eq(ar_tc_ji(ap, "bytes"), ar_tc_ji(ah, "bytes"));
  uint64_t larger = AR_MAX(ar_tc_ji(mp, "arena_bytes"), ar_tc_ji(mh, "arena_bytes"));
  ck_assert_uint_eq(ar_tc_ji(ap, "bytes"), (larger + 63) / 64 * 64);
  ck_assert_uint_ne(ar_tc_ji(mp, "arena_bytes"), ar_tc_ji(mh, "arena_bytes"));
  /* The pool's owned regions: two persistent + one activation, pairwise disjoint, and they are
   * exactly the regions the models report. */
  size_t i;
  json_t *r;
  int n_act = 0, n_pers = 0;
  uint64_t used = 0, at = 0;
  json_array_foreach(json_object_get(pool, "regions"), i, r) {
    ck_assert_uint_eq(ar_tc_ji(r, "offset"), at);   /* sorted, tiling: hence disjoint */
    at += ar_tc_ji(r, "bytes");
    const char *kind = json_string_value(json_object_get(r, "kind"));
    if (strcmp(kind, "activation") == 0) {
      n_act++;
      ck_assert_uint_eq(ar_tc_ji(r, "offset"), ar_tc_ji(ap, "offset"));
      ck_assert_str_eq(json_string_value(json_object_get(r, "owner")), "group:hands");
    }
    if (strcmp(kind, "persistent") == 0) {
      n_pers++;
      const char *owner = json_string_value(json_object_get(r, "owner"));
      json_t *pr = json_object_get(ar_tc_stats_model(st, owner), "persistent_region");
      ck_assert_uint_eq(ar_tc_ji(r, "offset"), ar_tc_ji(pr, "offset"));
    }
    if (strcmp(kind, "free") != 0) used += ar_tc_ji(r, "bytes");
  }
  ck_assert_uint_eq(at, 64u << 20);
  ck_assert_int_eq(n_act, 1);
  ck_assert_int_eq(n_pers, 2);
  ck_assert_uint_eq(used, ar_tc_ji(pool, "used_bytes"));
  ck_assert_uint_eq(ar_tc_ji(mp, "invokes"), 2);
  ck_assert_uint_eq(ar_tc_ji(mh, "invokes"), 2);
  json_t *g0 = json_array_get(json_object_get(st, "groups"), 0);
  ck_assert_uint_eq(ar_tc_ji(g0, "saved_bytes"), (AR_MIN(ar_tc_ji(mp, "arena_bytes"), ar_tc_ji(mh, "arena_bytes")) + 63) / 64 * 64);
  json_decref(st);

  /* GetPlan: the budget table of the loaded model. */
  char *plan = NULL;
  ck_assert_int_eq(ar_client_plan_json(c, "hand", &plan, msg, sizeof(msg)), 0);
  json_error_t err;
  json_t *pj = json_loads(plan, 0, &err);
  ck_assert_ptr_nonnull(pj);
  ck_assert_uint_eq(ar_tc_ji(pj, "arena_bytes"), hand.arena_bytes);
  ck_assert_uint_gt(json_array_size(json_object_get(pj, "buffers")), 10);
  json_decref(pj);
  free(plan);

  ar_tc_golden_free(&gp);
  ar_tc_golden_free(&gh);
  ar_client_close(c);
  stop();
}
END_TEST

START_TEST(same_file_twice_shares_mapping) {
  start("64M");
  ar_client_t *c = client();
  ar_client_model_t a, b;
  load_ok(c, "face_a", "face_detection_short_range", "", &a);
  load_ok(c, "face_b", "face_detection_short_range", "", &b);
  ck_assert_str_eq(a.sha256, b.sha256);
  ck_assert_uint_ne(a.activation_offset, b.activation_offset);   /* no group: separate regions */
  json_t *st = ar_tc_stats(c);
  ck_assert_uint_eq(ar_tc_ji(ar_tc_stats_model(st, "face_a"), "mapping_refs"), 2);
  json_decref(st);
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_client_unload(c, "face_a", msg, sizeof(msg)), 0);
  st = ar_tc_stats(c);
  ck_assert_uint_eq(ar_tc_ji(ar_tc_stats_model(st, "face_b"), "mapping_refs"), 1);
  json_decref(st);
  /* Unloading everything returns the pool to one free block. */
  ck_assert_int_eq(ar_client_unload(c, "face_b", msg, sizeof(msg)), 0);
  st = ar_tc_stats(c);
  ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(st, "pool"), "regions")), 1);
  json_decref(st);
  ar_client_close(c);
  stop();
}
END_TEST

/* ---- 16 clients x 200 invokes ------------------------------------------------------------- */

#define N_CLIENTS 16
/* Invokes per client: 200 natively. ThreadSanitizer runs the daemon 5-15x slower and qemu-aarch64
 * (ar_test_emulated) about 20 invokes a minute with 16 clients, so there 16 x 20 and 16 x 6: still
 * every client on every model with both golden cases. */
static int n_invokes(void) {
#if defined(__SANITIZE_THREAD__)
  return 20;
#else
  return ar_test_emulated() ? 6 : 200;
#endif
}

static const char *const conc_models[3] = {"palm", "hand", "face"};
static ar_tc_golden_t conc_golden[3][2];   /* [model][photo, random] */
static ar_client_model_t conc_info[3];

typedef struct {
  int id;
  int ok, bad, errors;
  char first_error[AR_MSG_BYTES];
} worker_t;

static void *conc_worker(void *arg) {
  worker_t *w = arg;
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  if (ar_client_connect(dmn.socket, &c, msg, sizeof(msg)) != 0) {
    w->errors = n_invokes();
    snprintf(w->first_error, sizeof(w->first_error), "%s", msg);
    return NULL;
  }
  for (int i = 0; i < n_invokes(); i++) {
    int m = (w->id + i) % 3;
    int cas = (w->id + i / 3) % 2;   /* each client alternates photo / random inputs */
    const ar_tc_golden_t *g = &conc_golden[m][cas];
    ar_client_tensor_t t = input_of(&conc_info[m], g);
    ar_client_result_t r;
    int rc = ar_client_invoke(c, conc_models[m], &t, 1, &r, msg, sizeof(msg));
    if (rc != 0) {
      if (w->errors++ == 0) snprintf(w->first_error, sizeof(w->first_error), "%s", msg);
      continue;
    }
    if (ar_tc_golden_check(g, &r) == 0) w->ok++;
    else w->bad++;
    ar_client_result_free(&r);
  }
  ar_client_close(c);
  return NULL;
}

START_TEST(concurrent_clients_match_goldens) {
  start("64M");
  ar_client_t *c = client();
  load_ok(c, "palm", "palm_detection_lite", "hands", &conc_info[0]);
  load_ok(c, "hand", "hand_landmark_lite", "hands", &conc_info[1]);
  load_ok(c, "face", "face_detection_short_range", "", &conc_info[2]);
  const char *stems[3] = {"palm_detection_lite", "hand_landmark_lite", "face_detection_short_range"};
  for (int m = 0; m < 3; m++) {
    ar_tc_golden_load(&conc_golden[m][0], stems[m], "photo");
    ar_tc_golden_load(&conc_golden[m][1], stems[m], "random");
  }
  pthread_t th[N_CLIENTS];
  worker_t w[N_CLIENTS];
  for (int i = 0; i < N_CLIENTS; i++) {
    memset(&w[i], 0, sizeof(w[i]));
    w[i].id = i;
    ck_assert_int_eq(pthread_create(&th[i], NULL, conc_worker, &w[i]), 0);
  }
  int ok = 0;
  for (int i = 0; i < N_CLIENTS; i++) {
    pthread_join(th[i], NULL);
    ck_assert_msg(w[i].errors == 0, "client %d: %d errors, first: %s", i, w[i].errors, w[i].first_error);
    ck_assert_msg(w[i].bad == 0, "client %d: %d replies differ from their golden", i, w[i].bad);
    ok += w[i].ok;
  }
  ck_assert_int_eq(ok, N_CLIENTS * n_invokes());
  /* c sat idle through the run; on a loaded machine that can pass idle_timeout_ms (the daemon then
   * closes it, as it should), so read the stats on a fresh connection. */
  ar_client_close(c);
  c = client();
  json_t *st = ar_tc_stats(c);
  uint64_t invokes = 0;
  for (int m = 0; m < 3; m++) {
    json_t *jm = ar_tc_stats_model(st, conc_models[m]);
    invokes += ar_tc_ji(jm, "invokes");
    ck_assert_uint_eq(ar_tc_ji(jm, "errors"), 0);
    /* Invoke never allocates: counted per worker thread around ar_interp_invoke (-1 = not
     * measured, in sanitizer builds whose own malloc replaces the daemon's counter). */
    json_int_t allocs = json_integer_value(json_object_get(jm, "heap_allocs_in_invoke"));
    ck_assert_msg(allocs == 0 || allocs == -1, "%s: %lld heap allocations inside invoke", conc_models[m],
                  (long long)allocs);
    json_t *lat = json_object_get(jm, "latency_us");
    ck_assert_uint_le(ar_tc_ji(lat, "p50"), ar_tc_ji(lat, "p99"));
    ck_assert_uint_le(ar_tc_ji(lat, "p99"), ar_tc_ji(lat, "max"));
    ck_assert_uint_gt(ar_tc_ji(lat, "p50"), 0);
  }
  ck_assert_uint_eq(invokes, N_CLIENTS * n_invokes());
  json_decref(st);
  for (int m = 0; m < 3; m++) {
    ar_tc_golden_free(&conc_golden[m][0]);
    ar_tc_golden_free(&conc_golden[m][1]);
  }
  ar_client_close(c);
  stop();
}
END_TEST

/* ---- bad requests -------------------------------------------------------------------------- */

/* Invoke `model` with a hand-made tensor through the client library; expect error `code`. */
static void invoke_expect(ar_client_t *c, const char *model, const ar_client_tensor_t *t, size_t n, int code,
                          const char *needle) {
  ar_client_result_t r;
  char msg[AR_MSG_BYTES];
  int rc = ar_client_invoke(c, model, t, n, &r, msg, sizeof(msg));
  ck_assert_msg(rc == code, "expected %d, got %d (%s)", code, rc, msg);
  ck_assert_msg(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
  ping_ok();
}

START_TEST(bad_invoke_inputs) {
  start("64M");
  ar_client_t *c = client();
  ar_client_model_t face;
  load_ok(c, "face", "face_detection_short_range", "", &face);
  ar_tc_golden_t g;
  ar_tc_golden_load(&g, "face_detection_short_range", "photo");
  ar_client_tensor_t good = input_of(&face, &g);
  ar_client_tensor_t t[2] = {good, good};

  invoke_expect(c, "nosuch", t, 1, AR_ENOENT, "no model named 'nosuch'");
  invoke_expect(c, "face", t, 0, AR_ESHAPE, "takes 1 input(s), the request has 0");
  invoke_expect(c, "face", t, 2, AR_ESHAPE, "takes 1 input(s), the request has 2");
  t[0] = good;
  t[0].dtype = 9;   /* INT8 */
  invoke_expect(c, "face", t, 1, AR_ESHAPE, "dtype INT8");
  t[0] = good;
  t[0].dims[1] = 64;
  invoke_expect(c, "face", t, 1, AR_ESHAPE, "shape [1,64,128,3] does not match the model's [1,128,128,3]");
  t[0] = good;
  t[0].rank = 3;
  invoke_expect(c, "face", t, 1, AR_ESHAPE, "does not match");
  t[0] = good;
  t[0].bytes = good.bytes - 4;
  invoke_expect(c, "face", t, 1, AR_ESHAPE, "196604 data bytes");
  t[0] = good;
  t[0].dims[2] = -128;
  invoke_expect(c, "face", t, 1, AR_ESHAPE, "dim 2 is -128 (negative)");

  /* The model still works and counted the rejected requests as errors, not invokes. */
  ar_client_result_t r;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_client_invoke(c, "face", &good, 1, &r, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(ar_tc_golden_check(&g, &r), 0);
  ar_client_result_free(&r);
  json_t *st = ar_tc_stats(c);
  ck_assert_uint_eq(ar_tc_ji(ar_tc_stats_model(st, "face"), "invokes"), 1);
  ck_assert_uint_eq(ar_tc_ji(ar_tc_stats_model(st, "face"), "errors"), 7);   /* the 7 rejected inputs above */
  json_decref(st);
  ar_tc_golden_free(&g);
  ar_client_close(c);
  stop();
}
END_TEST

/* The generated integer-I/O model (ar_tm_int_io_model) written to `path`. */
static void write_int_io_model(const char *path) {
  size_t n = 0;
  uint8_t *bytes = ar_tm_int_io_model(&n);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
  free(bytes);
}

START_TEST(integer_tensors_and_quantization_round_trip) {
  start("16M");
  ar_client_t *c = client();
  char path[512], msg[AR_MSG_BYTES];
  snprintf(path, sizeof(path), "%s/int_io.tflite", dmn.dir);
  write_int_io_model(path);
  ar_client_model_t m;
  int rc = ar_client_load(c, "ints", path, NULL, NULL, &m, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "load: %s", msg);
  /* Descriptions: dtypes and quantization as the file has them; per-axis arrays only in results. */
  ck_assert_int_eq(m.n_inputs, 5);
  const int32_t dt[5] = {AR_CLIENT_UINT8, AR_CLIENT_INT8, AR_CLIENT_INT32, AR_CLIENT_INT64, AR_CLIENT_BOOL};
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(m.inputs[i].dtype, dt[i]);
    ck_assert_int_eq(m.outputs[i].dtype, dt[i]);
  }
  ck_assert_int_eq(m.inputs[0].quant.n, 1);
  ck_assert_float_eq(m.inputs[0].quant.scale, 0.5f);
  ck_assert_int_eq(m.inputs[0].quant.zero_point, 10);
  ck_assert_int_eq(m.inputs[1].quant.n, 1);
  ck_assert_int_eq(m.inputs[1].quant.zero_point, -3);
  ck_assert_int_eq(m.outputs[1].quant.n, 3);
  ck_assert_int_eq(m.outputs[1].quant.quantized_dimension, 1);
  ck_assert_float_eq(m.outputs[1].quant.scale, 0.5f);
  ck_assert_ptr_null(m.outputs[1].quant.scales);
  for (int i = 2; i < 5; i++) ck_assert_int_eq(m.inputs[i].quant.n, 0);

  const uint8_t u8[4] = {0, 10, 11, 255}, b[4] = {1, 0, 0, 1};
  const int8_t i8[6] = {-128, -3, 0, 1, 2, 127};
  const int32_t i32[3] = {-7, 0, 2147483647};
  const int64_t i64[2] = {-5000000000LL, 6000000000LL};
  ar_client_tensor_t in[5];
  const void *data[5] = {u8, i8, i32, i64, b};
  const uint64_t nb[5] = {4, 6, 12, 16, 4};
  for (int i = 0; i < 5; i++) {
    in[i] = m.inputs[i];
    in[i].data = data[i];
    in[i].bytes = nb[i];
  }
  ar_client_result_t r;
  rc = ar_client_invoke(c, "ints", in, 5, &r, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "invoke: %s", msg);
  ck_assert_int_eq(r.n_outputs, 5);
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(r.outputs[i].dtype, dt[i]);
    ck_assert_uint_eq(r.outputs[i].bytes, nb[i]);
    ck_assert_int_eq(memcmp(r.outputs[i].data, data[i], nb[i]), 0);
  }
  /* Dequantized: u8 (q - 10) * .5; per-axis i8 [2,3]: column k has (scale, zp) k. */
  ck_assert_float_eq(ar_client_tensor_value(&r.outputs[0], 0), -5.0f);
  ck_assert_float_eq(ar_client_tensor_value(&r.outputs[0], 3), 122.5f);
  ck_assert_int_eq(r.outputs[1].quant.n, 3);
  ck_assert_ptr_nonnull(r.outputs[1].quant.scales);
  const float want_i8[6] = {-64.0f, -4.0f, 2.0f, 0.5f, 1.0f, 256.0f};
  for (int k = 0; k < 6; k++) ck_assert_float_eq(ar_client_tensor_value(&r.outputs[1], (uint64_t)k), want_i8[k]);
  ck_assert_float_eq(ar_client_tensor_value(&r.outputs[2], 0), -7.0f);
  ck_assert_float_eq(ar_client_tensor_value(&r.outputs[3], 1), 6e9f);
  ck_assert_float_eq(ar_client_tensor_value(&r.outputs[4], 0), 1.0f);
  ck_assert(isnan(ar_client_tensor_value(&r.outputs[4], 4)));
  ar_client_result_free(&r);

  /* Checked against the model: a float32 tensor for the uint8 input, int8 bytes for an int64. */
  ar_client_tensor_t bad[5];
  memcpy(bad, in, sizeof(bad));
  bad[0].dtype = AR_CLIENT_FLOAT32;
  invoke_expect(c, "ints", bad, 5, AR_ESHAPE, "input 0 (u8_in): dtype FLOAT32 (0), the model wants UINT8");
  memcpy(bad, in, sizeof(bad));
  bad[3].bytes = 8;
  invoke_expect(c, "ints", bad, 5, AR_ESHAPE, "input 3 (i64_in): 8 data bytes, shape [2] of INT64 needs 16");
  memcpy(bad, in, sizeof(bad));
  bad[4].dtype = AR_CLIENT_UINT8;
  invoke_expect(c, "ints", bad, 5, AR_ESHAPE, "input 4 (b_in): dtype UINT8 (3), the model wants BOOL");
  unlink(path);
  ar_client_close(c);
  stop();
}
END_TEST

/* A model whose input and output have no elements ([1,0]) loads and invokes: its tensors have no
 * data pointer, and the daemon's copies of tensor bytes skip them (memcpy with NULL is undefined even
 * for 0 bytes: the UBSan build of this suite flags it). */
START_TEST(zero_element_tensors_invoke) {
  start("16M");
  ar_client_t *c = client();
  char path[512], msg[AR_MSG_BYTES];
  snprintf(path, sizeof(path), "%s/zero.tflite", dmn.dir);
  const ar_tm_tensor_t t[3] = {
      {.name = "a", .dtype = AR_DTYPE_FLOAT32, .rank = 2, .dims = {1, 0}},
      {.name = "b", .dtype = AR_DTYPE_FLOAT32, .rank = 2, .dims = {1, 0}},
      {.name = "sum", .dtype = AR_DTYPE_FLOAT32, .rank = 2, .dims = {1, 0}},
  };
  const ar_tm_op_t op = {0 /* ADD */, 2, 1, {0, 1}, {2}, AR_FB_OPTIONS_ADD, 0, {{0}}};
  const int32_t gin[2] = {0, 1}, gout[1] = {2};
  size_t n;
  uint8_t *bytes = ar_tm_build(t, 3, &op, 1, gin, 2, gout, 1, &n);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
  free(bytes);
  ar_client_model_t m;
  int rc = ar_client_load(c, "zero", path, NULL, NULL, &m, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "load: %s", msg);
  ck_assert_int_eq(m.n_inputs, 2);
  ar_client_tensor_t in[2] = {m.inputs[0], m.inputs[1]};
  for (int i = 0; i < 2; i++) {
    in[i].data = NULL;
    in[i].bytes = 0;
  }
  for (int k = 0; k < 2; k++) {   /* twice: the second finds the inputs unchanged */
    ar_client_result_t r;
    rc = ar_client_invoke(c, "zero", in, 2, &r, msg, sizeof(msg));
    ck_assert_msg(rc == 0, "invoke: %s", msg);
    ck_assert_int_eq(r.n_outputs, 1);
    ck_assert_uint_eq(r.outputs[0].bytes, 0);
    ck_assert_int_eq(r.outputs[0].rank, 2);
    ck_assert_int_eq(r.outputs[0].dims[1], 0);
    ar_client_result_free(&r);
  }
  unlink(path);
  ar_client_close(c);
  stop();
}
END_TEST

START_TEST(load_malformed_model_files) {
  start("64M");
  ar_client_t *c = client();
  char msg[AR_MSG_BYTES], path[512];
  /* Garbage bytes. */
  snprintf(path, sizeof(path), "%s/garbage.tflite", dmn.dir);
  FILE *f = fopen(path, "wb");
  for (int i = 0; i < 4096; i++) fputc((i * 7919) & 0xff, f);
  fclose(f);
  int rc = ar_client_load(c, "g", path, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EMODEL, "garbage: %d %s", rc, msg);
  ck_assert_ptr_nonnull(strstr(msg, "garbage.tflite"));
  ping_ok();
  /* A real model cut in half. */
  size_t n = 0;
  void *bytes = ar_test_read_file(ar_tc_model_path("face_detection_short_range"), &n);
  ck_assert_ptr_nonnull(bytes);
  snprintf(path, sizeof(path), "%s/half.tflite", dmn.dir);
  f = fopen(path, "wb");
  fwrite(bytes, 1, n / 2, f);
  fclose(f);
  free(bytes);
  rc = ar_client_load(c, "h", path, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EMODEL, "truncated: %d %s", rc, msg);
  ping_ok();
  /* Empty file, directory, missing file. */
  snprintf(path, sizeof(path), "%s/empty.tflite", dmn.dir);
  fclose(fopen(path, "wb"));
  rc = ar_client_load(c, "e", path, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc < 0, "empty file loaded");
  ping_ok();
  rc = ar_client_load(c, "d", dmn.dir, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc < 0, "directory loaded");
  ping_ok();
  rc = ar_client_load(c, "m", "/nonexistent/x.tflite", NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_int_eq(rc, AR_EPERM);   /* not inside model_dirs */
  snprintf(path, sizeof(path), "%s/missing.tflite", dmn.dir);
  rc = ar_client_load(c, "m", path, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_ENOENT, "missing file in model_dirs: %d %s", rc, msg);
  /* Nothing of the failed loads is left in the pool. */
  json_t *st = ar_tc_stats(c);
  ck_assert_uint_eq(json_array_size(json_object_get(st, "models")), 0);
  ck_assert_uint_eq(ar_tc_ji(json_object_get(st, "pool"), "used_bytes"), 0);
  json_decref(st);
  unlink(dmn.dir[0] ? path : "");
  snprintf(path, sizeof(path), "%s/garbage.tflite", dmn.dir);
  unlink(path);
  snprintf(path, sizeof(path), "%s/half.tflite", dmn.dir);
  unlink(path);
  ar_client_close(c);
  stop();
}
END_TEST

/* hand_landmark_lite takes about 4.2 MB (arena; stored weights keep its persistent region at 5 KB),
 * palm_detection_lite 3.5 MB: 6 MB holds one of them, not both. */
START_TEST(load_that_does_not_fit) {
  start("6M");
  ar_client_t *c = client();
  ar_client_model_t hand;
  load_ok(c, "hand", "hand_landmark_lite", "", &hand);
  json_t *before = ar_tc_stats(c);
  char *before_pool = json_dumps(json_object_get(before, "pool"), JSON_SORT_KEYS);
  char msg[AR_MSG_BYTES];
  int rc = ar_client_load(c, "palm", ar_tc_model_path("palm_detection_lite"), NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_ENOSPC, "expected ENOSPC, got %d: %s", rc, msg);
  ck_assert_ptr_nonnull(strstr(msg, "load of 'palm' needs"));
  ck_assert_ptr_nonnull(strstr(msg, "largest free block is"));
  /* ... and what makes room: the pool lacks bytes, so a larger pool or one model fewer (the bytes
   * it lacks are what it needs less what is free). */
  unsigned long long need = 0, free_bytes = 0, lacks = 0;
  const char *p = strstr(msg, " needs ");
  ck_assert_msg(p && sscanf(p, " needs %llu bytes", &need) == 1, "%s", msg);
  p = strstr(msg, " bytes (");
  ck_assert_msg(p && sscanf(p, " bytes (%llu of", &free_bytes) == 1, "%s", msg);
  p = strstr(msg, "; it lacks ");
  ck_assert_msg(p && sscanf(p, "; it lacks %llu bytes", &lacks) == 1, "%s", msg);
  ck_assert_uint_eq(lacks, need - free_bytes);
  ck_assert_msg(strstr(msg, " bytes: give arenad a larger pool (pool_bytes in its config, or -p) or unload a model "
                            "(arenactl unload NAME)"), "%s", msg);
  ping_ok();
  /* Nothing already loaded was disturbed: same pool map, and the model still answers. */
  json_t *after = ar_tc_stats(c);
  char *after_pool = json_dumps(json_object_get(after, "pool"), JSON_SORT_KEYS);
  ck_assert_str_eq(before_pool, after_pool);
  ck_assert_uint_eq(json_array_size(json_object_get(after, "models")), 1);
  free(before_pool);
  free(after_pool);
  json_decref(before);
  json_decref(after);
  ar_tc_golden_t g;
  ar_tc_golden_load(&g, "hand_landmark_lite", "photo");
  ar_client_tensor_t t = input_of(&hand, &g);
  ar_client_result_t r;
  ck_assert_int_eq(ar_client_invoke(c, "hand", &t, 1, &r, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(ar_tc_golden_check(&g, &r), 0);
  ar_client_result_free(&r);
  ar_tc_golden_free(&g);
  /* The name is free again after the failed load. */
  ck_assert_int_eq(ar_client_unload(c, "hand", msg, sizeof(msg)), 0);
  load_ok(c, "palm", "palm_detection_lite", "", NULL);
  ar_client_close(c);
  stop();
}
END_TEST

/* The same model loaded with fp32 weights and with stored ones (the configured default, "" in the
 * request): both answer the golden; stats name each mode, and the bytes say where the weights
 * are - folded copies in the persistent region for fp32, nothing but kernel state for stored. */
START_TEST(weights_modes_in_stats) {
  start("64M");
  ar_client_t *c = client();
  ar_client_model_t f, s;
  char msg[AR_MSG_BYTES];
  int rc = ar_client_load_weights(c, "f", ar_tc_model_path("hand_landmark_lite"), NULL, NULL, "fp32", &f, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "load f: %s", msg);
  load_ok(c, "s", "hand_landmark_lite", "", &s);
  rc = ar_client_load_weights(c, "x", ar_tc_model_path("hand_landmark_lite"), NULL, NULL, "int4", NULL, msg, sizeof(msg));
  ck_assert_int_eq(rc, AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(msg, "unknown weights mode 'int4'"));
  json_t *st = ar_tc_stats(c);
  json_t *jf = ar_tc_stats_model(st, "f"), *js = ar_tc_stats_model(st, "s");
  ck_assert_ptr_nonnull(jf);
  ck_assert_ptr_nonnull(js);
  ck_assert_str_eq(json_string_value(json_object_get(jf, "weights")), "fp32");
  ck_assert_str_eq(json_string_value(json_object_get(js, "weights")), "stored");
  ck_assert_uint_eq(ar_tc_ji(jf, "weights_bytes"), ar_tc_ji(js, "weights_bytes"));
  ck_assert_uint_gt(ar_tc_ji(jf, "folded_bytes"), ar_tc_ji(jf, "weights_bytes"));   /* widened: twice the fp16 */
  ck_assert_uint_eq(ar_tc_ji(js, "folded_bytes"), 0);
  ck_assert_uint_eq(ar_tc_ji(js, "packed_bytes"), ar_tc_ji(js, "persistent_bytes"));
  /* Every reader of its fp16 weights (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED) takes them as
   * stored: no DEQUANTIZE widens at use, so no activation bytes hold widened weights. */
  ck_assert_uint_eq(ar_tc_ji(js, "widened_bytes"), 0);
  ck_assert_uint_le(ar_tc_ji(js, "persistent_bytes") * 10, ar_tc_ji(jf, "persistent_bytes"));
  ck_assert_uint_eq(f.persistent_bytes, ar_tc_ji(jf, "persistent_bytes"));
  ck_assert_uint_eq(s.persistent_bytes, ar_tc_ji(js, "persistent_bytes"));
  printf("hand_landmark_lite in the daemon: persistent %llu B (fp32 weights) vs %llu B (stored)\n",
         (unsigned long long)ar_tc_ji(jf, "persistent_bytes"), (unsigned long long)ar_tc_ji(js, "persistent_bytes"));
  json_decref(st);
  ar_tc_golden_t g;
  ar_tc_golden_load(&g, "hand_landmark_lite", "photo");
  const char *names[] = {"f", "s"};
  const ar_client_model_t *infos[] = {&f, &s};
  for (int i = 0; i < 2; i++) {
    ar_client_tensor_t t = input_of(infos[i], &g);
    ar_client_result_t r;
    ck_assert_int_eq(ar_client_invoke(c, names[i], &t, 1, &r, msg, sizeof(msg)), 0);
    ck_assert_uint_eq(ar_tc_golden_check(&g, &r), 0);
    ar_client_result_free(&r);
  }
  ar_tc_golden_free(&g);
  ar_client_close(c);
  stop();
}
END_TEST

typedef struct {
  ar_tc_golden_t *g;
  ar_client_model_t *info;
  const char *model;
  int max_invokes;
  int ok, gone, other;
} streamer_t;

/* Invokes per streaming client: `native` natively, a tenth (at least 6) under an emulator, where
 * palm_detection_lite takes seconds an invoke; the streams still overlap the loads, unloads and
 * reloads they are there to race with, which start once the first invokes are answered. */
static int stream_invokes_per_client(int native) {
  if (!ar_test_emulated()) return native;
  return native / 10 > 6 ? native / 10 : 6;
}

static void *stream_invokes(void *arg) {
  streamer_t *s = arg;
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  if (ar_client_connect(dmn.socket, &c, msg, sizeof(msg)) != 0) return NULL;
  ar_client_tensor_t t = input_of(s->info, s->g);
  /* Invoke until the model is gone; every success must be a correct result. */
  for (int i = 0; i < s->max_invokes; i++) {
    ar_client_result_t r;
    int rc = ar_client_invoke(c, s->model, &t, 1, &r, msg, sizeof(msg));
    if (rc == 0) {
      if (ar_tc_golden_check(s->g, &r) == 0) s->ok++;
      else s->other++;
      ar_client_result_free(&r);
    } else if (rc == AR_ENOENT) {
      s->gone++;
      break;
    } else {
      s->other++;
      break;
    }
  }
  ar_client_close(c);
  return NULL;
}

START_TEST(unload_during_stream_of_invokes) {
  start("64M");
  ar_client_t *c = client();
  ar_client_model_t face;
  load_ok(c, "face", "face_detection_short_range", "", &face);
  ar_tc_golden_t g;
  ar_tc_golden_load(&g, "face_detection_short_range", "photo");
  streamer_t s[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    memset(&s[i], 0, sizeof(s[i]));
    s[i].g = &g;
    s[i].info = &face;
    s[i].model = "face";
    s[i].max_invokes = 100000;
    pthread_create(&th[i], NULL, stream_invokes, &s[i]);
  }
  /* Let the stream run until each client had a few answers (progress, not time). */
  for (;;) {
    json_t *st = ar_tc_stats(c);
    uint64_t n = ar_tc_ji(ar_tc_stats_model(st, "face"), "invokes");
    json_decref(st);
    if (n >= 20) break;
  }
  char msg[AR_MSG_BYTES];
  ck_assert_msg(ar_client_unload(c, "face", msg, sizeof(msg)) == 0, "unload: %s", msg);
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(s[i].other, 0);
    ck_assert_int_eq(s[i].gone, 1);
  }
  ping_ok();
  json_t *st = ar_tc_stats(c);
  ck_assert_uint_eq(json_array_size(json_object_get(st, "models")), 0);
  ck_assert_uint_eq(ar_tc_ji(json_object_get(st, "pool"), "used_bytes"), 0);
  json_decref(st);
  /* Unload of a model that is not there. */
  ck_assert_int_eq(ar_client_unload(c, "face", msg, sizeof(msg)), AR_ENOENT);
  ar_tc_golden_free(&g);
  ar_client_close(c);
  stop();
}
END_TEST

START_TEST(group_region_grows_when_a_larger_member_joins) {
  start("64M");
  ar_client_t *c = client();
  ar_client_model_t palm, hand;
  /* "palm" (face_detection_short_range: hand_landmark_lite's arena is smaller than
   * palm_detection_lite's since its expansion convs run fused) has the smaller arena: hand's join
   * moves it into a new, larger region. */
  load_ok(c, "palm", "face_detection_short_range", "hands", &palm);
  load_ok(c, "hand", "hand_landmark_lite", "hands", &hand);
  ck_assert_uint_lt(palm.arena_bytes, hand.arena_bytes);
  ck_assert_uint_eq(hand.activation_bytes, (hand.arena_bytes + 63) / 64 * 64);
  ar_tc_golden_t g;
  ar_tc_golden_load(&g, "face_detection_short_range", "random");
  ar_client_tensor_t t = input_of(&palm, &g);
  ar_client_result_t r;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_client_invoke(c, "palm", &t, 1, &r, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(ar_tc_golden_check(&g, &r), 0);
  ar_client_result_free(&r);
  /* The old, smaller region was returned to the pool: exactly one activation region remains. */
  json_t *st = ar_tc_stats(c);
  size_t i;
  json_t *reg;
  int n_act = 0;
  json_array_foreach(json_object_get(json_object_get(st, "pool"), "regions"), i, reg) {
    if (strcmp(json_string_value(json_object_get(reg, "kind")), "activation") == 0) n_act++;
  }
  ck_assert_int_eq(n_act, 1);
  json_decref(st);
  ar_tc_golden_free(&g);
  ar_client_close(c);
  stop();
}
END_TEST

START_TEST(group_grows_while_invokes_are_in_flight) {
  start("64M");
  ar_client_t *c = client();
  ar_client_model_t palm;
  load_ok(c, "palm", "face_detection_short_range", "hands", &palm);
  ar_tc_golden_t g;
  ar_tc_golden_load(&g, "face_detection_short_range", "photo");
  streamer_t s[3];
  pthread_t th[3];
  for (int i = 0; i < 3; i++) {
    memset(&s[i], 0, sizeof(s[i]));
    s[i].g = &g;
    s[i].info = &palm;
    s[i].model = "palm";
    s[i].max_invokes = stream_invokes_per_client(30);
    pthread_create(&th[i], NULL, stream_invokes, &s[i]);
  }
  for (;;) {   /* wait until palm's invokes are flowing */
    json_t *st = ar_tc_stats(c);
    uint64_t n = ar_tc_ji(ar_tc_stats_model(st, "palm"), "invokes");
    json_decref(st);
    if (n >= 3) break;
  }
  /* hand needs a larger activation region: palm moves into it behind the queued invokes. */
  ar_client_model_t hand;
  load_ok(c, "hand", "hand_landmark_lite", "hands", &hand);
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(s[i].other, 0);
    ck_assert_int_eq(s[i].ok, stream_invokes_per_client(30));
  }
  /* A new connection: `c` sat idle while the streams ran, which under ThreadSanitizer can outlast
   * idle_timeout_ms (300 s), and the daemon rightly closes it (ECONN). */
  ar_client_close(c);
  c = client();
  /* The growth left the old region free, and the daemon compacts after it (compact_after_unload):
   * once that is done, palm and hand share the one region, at or below where hand was placed. */
  json_t *st = NULL;
  for (int tries = 0;; tries++) {
    st = ar_tc_stats(c);
    if (!json_is_true(json_object_get(json_object_get(st, "pool"), "compacting")) &&
        ar_tc_ji(json_object_get(st, "pool"), "free_blocks") == 1)
      break;
    ck_assert_msg(tries < 3000, "the pool was not compacted after the group grew");
    json_decref(st);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  json_t *ap = json_object_get(ar_tc_stats_model(st, "palm"), "activation_region");
  json_t *ah = json_object_get(ar_tc_stats_model(st, "hand"), "activation_region");
  ck_assert_uint_eq(ar_tc_ji(ap, "offset"), ar_tc_ji(ah, "offset"));
  ck_assert_uint_le(ar_tc_ji(ap, "offset"), hand.activation_offset);
  ck_assert_uint_eq(ar_tc_ji(ap, "bytes"), (hand.arena_bytes + 63) / 64 * 64);
  json_decref(st);
  ar_tc_golden_t gh;
  ar_tc_golden_load(&gh, "hand_landmark_lite", "photo");
  ar_client_tensor_t t = input_of(&hand, &gh);
  ar_client_result_t r;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_client_invoke(c, "hand", &t, 1, &r, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(ar_tc_golden_check(&gh, &r), 0);
  ar_client_result_free(&r);
  ar_tc_golden_free(&gh);
  ar_tc_golden_free(&g);
  ar_client_close(c);
  stop();
}
END_TEST

/* 150 invokes (photo and random inputs) with a ping after every 5th, written in one go before any
 * reply is read: the daemon pauses reading at 64 unanswered requests and resumes as invokes
 * finish; every reply carries its id and the golden output of its own input. */
typedef struct {
  int fd;
  const uint8_t *buf;
  size_t len;
  int rc;
} writer_arg_t;

static void *writer_main(void *arg) {
  writer_arg_t *w = arg;
  w->rc = ar_td_write_all(w->fd, w->buf, w->len);
  return NULL;
}

START_TEST(pipelined_invokes_with_backpressure) {
  start("64M");
  ar_client_t *c = client();
  ar_client_model_t face;
  load_ok(c, "face", "face_detection_short_range", "", &face);
  ar_tc_golden_t g[2];
  ar_tc_golden_load(&g[0], "face_detection_short_range", "photo");
  ar_tc_golden_load(&g[1], "face_detection_short_range", "random");
  enum { N = 150 };
  size_t cap = (size_t)N * (g[0].input_bytes + 256) + 64 * N, len = 0;
  uint8_t *batch = malloc(cap);
  int n_requests = 0;
  for (int i = 0; i < N; i++) {
    Arenad__Request req = ARENAD__REQUEST__INIT;
    Arenad__InvokeRequest inv = ARENAD__INVOKE_REQUEST__INIT;
    Arenad__Tensor t = ARENAD__TENSOR__INIT;
    Arenad__Tensor *tp = &t;
    int64_t shape[4] = {1, 128, 128, 3};
    t.dtype = ARENAD__DTYPE__FLOAT32;
    t.n_shape = 4;
    t.shape = shape;
    t.data.data = (uint8_t *)g[i % 2].input;
    t.data.len = g[i % 2].input_bytes;
    inv.model = "face";
    inv.n_inputs = 1;
    inv.inputs = &tp;
    req.id = (uint64_t)i;
    req.body_case = ARENAD__REQUEST__BODY_INVOKE;
    req.invoke = &inv;
    size_t k = arenad__request__get_packed_size(&req);
    batch[len] = (uint8_t)k, batch[len + 1] = (uint8_t)(k >> 8), batch[len + 2] = (uint8_t)(k >> 16),
    batch[len + 3] = (uint8_t)(k >> 24);
    arenad__request__pack(&req, batch + len + 4);
    len += 4 + k;
    n_requests++;
    if (i % 5 == 4) {
      Arenad__Request p = ARENAD__REQUEST__INIT;
      Arenad__PingRequest ping = ARENAD__PING_REQUEST__INIT;
      p.id = 100000 + (uint64_t)i;
      p.body_case = ARENAD__REQUEST__BODY_PING;
      p.ping = &ping;
      k = arenad__request__get_packed_size(&p);
      batch[len] = (uint8_t)k, batch[len + 1] = 0, batch[len + 2] = 0, batch[len + 3] = 0;
      arenad__request__pack(&p, batch + len + 4);
      len += 4 + k;
      n_requests++;
    }
  }
  int fd = ar_td_connect_raw(dmn.socket);
  ck_assert_int_ge(fd, 0);
  /* A pipelining client writes while it reads: the daemon stops reading a connection whose
   * replies are not read (max_inflight_per_connection, max_pending_reply_bytes). */
  writer_arg_t wa = {.fd = fd, .buf = batch, .len = len};
  pthread_t wt;
  ck_assert_int_eq(pthread_create(&wt, NULL, writer_main, &wa), 0);
  int invokes_ok = 0, pings_ok = 0;
  static uint8_t seen[N];
  memset(seen, 0, sizeof(seen));
  for (int i = 0; i < n_requests; i++) {
    Arenad__Response *r = ar_td_read_response(fd);
    ck_assert_ptr_nonnull(r);
    ck_assert_msg(r->status->code == 0, "id %" PRIu64 ": %s", r->id, r->status->message);
    if (r->id >= 100000) {
      ck_assert_int_eq(r->body_case, ARENAD__RESPONSE__BODY_PING);
      pings_ok++;
    } else {
      ck_assert_uint_lt(r->id, N);
      ck_assert_int_eq(seen[r->id], 0);
      seen[r->id] = 1;
      const ar_tc_golden_t *gg = &g[r->id % 2];
      ck_assert_int_eq(r->body_case, ARENAD__RESPONSE__BODY_INVOKE);
      ck_assert_uint_eq(r->invoke->n_outputs, (size_t)gg->n_outputs);
      for (int j = 0; j < gg->n_outputs; j++) {
        ck_assert_uint_eq(r->invoke->outputs[j]->data.len, gg->output_bytes[j]);
        ck_assert_uint_eq(ar_test_golden_mismatches((const float *)r->invoke->outputs[j]->data.data, gg->outputs[j],
                                                    gg->output_bytes[j] / 4, NULL),
                          0);
      }
      invokes_ok++;
    }
    arenad__response__free_unpacked(r, NULL);
  }
  pthread_join(wt, NULL);
  ck_assert_int_eq(wa.rc, 0);
  free(batch);
  ck_assert_int_eq(invokes_ok, N);
  ck_assert_int_eq(pings_ok, N / 5);
  close(fd);
  ar_tc_golden_free(&g[0]);
  ar_tc_golden_free(&g[1]);
  ar_client_close(c);
  stop();
}
END_TEST


/* ---- QA regressions: load error codes, reload transactions, --pool-bytes, dropped invokes ---- */

static uint32_t rd32(const uint8_t *b, size_t at) {
  return (uint32_t)b[at] | (uint32_t)b[at + 1] << 8 | (uint32_t)b[at + 2] << 16 | (uint32_t)b[at + 3] << 24;
}

/* Position of field `k` of the flatbuffer table at `t` (0 when absent). */
static size_t fb_field(const uint8_t *b, size_t t, int k) {
  size_t vt = t - (size_t)(int32_t)rd32(b, t);
  uint16_t vt_len = (uint16_t)(b[vt] | b[vt + 1] << 8);
  if ((size_t)(4 + 2 * k) >= vt_len) return 0;
  uint16_t off = (uint16_t)(b[vt + 4 + 2 * k] | b[vt + 5 + 2 * k] << 8);
  return off ? t + off : 0;
}

/* Element i of the vector of tables referenced by field `f` (a uoffset). */
static size_t fb_vec_table(const uint8_t *b, size_t f, uint32_t i) {
  size_t v = f + rd32(b, f);
  size_t e = v + 4 + 4 * (size_t)i;
  return e + rd32(b, e);
}

/* Write a copy of face_detection_short_range whose first ADD has a wrong stored output dim, so
 * the loader accepts it but ADD's prepare rejects it; returns the ADD's operator index. */
static int write_bad_add_model(const char *path) {
  size_t n = 0;
  uint8_t *bytes = ar_test_read_file(ar_tc_model_path("face_detection_short_range"), &n);
  ck_assert_ptr_nonnull(bytes);
  ar_model_t *model = NULL;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_model_load_buffer(bytes, n, &model, msg, sizeof(msg)), 0);
  const ar_subgraph_t *sg = &model->subgraphs[0];
  int op = -1;
  for (uint32_t i = 0; i < sg->n_operators && op < 0; i++)
    if (sg->operators[i].op == AR_OP_ADD) op = (int)i;
  ck_assert_int_ge(op, 0);
  int32_t t = sg->operators[op].outputs[0];
  int32_t rank = sg->tensors[t].rank;
  ck_assert_int_ge(rank, 1);
  ar_model_free(model);
  /* Model.subgraphs (field 2)[0].tensors (field 0)[t].shape (field 0): bump the last dim. */
  size_t root = rd32(bytes, 0);
  size_t sub = fb_vec_table(bytes, fb_field(bytes, root, 2), 0);
  size_t ten = fb_vec_table(bytes, fb_field(bytes, sub, 0), (uint32_t)t);
  size_t sf = fb_field(bytes, ten, 0);
  size_t shape = sf + rd32(bytes, sf);
  ck_assert_uint_eq(rd32(bytes, shape), (uint32_t)rank);
  size_t last = shape + 4 + 4 * (size_t)(rank - 1);
  uint32_t d = rd32(bytes, last) + 1;
  bytes[last] = (uint8_t)d;
  bytes[last + 1] = (uint8_t)(d >> 8);
  bytes[last + 2] = (uint8_t)(d >> 16);
  bytes[last + 3] = (uint8_t)(d >> 24);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
  fclose(f);
  free(bytes);
  return op;
}

START_TEST(prepare_failure_is_emodel) {
  start("64M");
  ar_client_t *c = client();
  char path[512], msg[AR_MSG_BYTES], want[64];
  snprintf(path, sizeof(path), "%s/bad_add.tflite", dmn.dir);
  int op = write_bad_add_model(path);
  int rc = ar_client_load(c, "bad", path, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EMODEL, "expected EMODEL, got %d: %s", rc, msg);
  snprintf(want, sizeof(want), "operator %d (ADD)", op);
  ck_assert_msg(strstr(msg, want) != NULL, "message does not name %s: %s", want, msg);
  ping_ok();
  unlink(path);
  ar_client_close(c);
  stop();
}
END_TEST

/* Run arenad with `args` (NULL-terminated) to completion; its stderr goes to `err`. */
static int run_arenad(const char *const *args, char *err, size_t err_bytes) {
  char bin[512], log[] = "/tmp/arenad-run-XXXXXX";
  const char *bd = getenv("AR_BUILDDIR");
  snprintf(bin, sizeof(bin), "%s/arenad", bd ? bd : AR_BUILDDIR);
  int lfd = mkstemp(log);
  ck_assert_int_ge(lfd, 0);
  const char *argv[16] = {bin};
  int argc = 1;
  for (int i = 0; args[i] && argc < 15; i++) argv[argc++] = args[i];
  argv[argc] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(lfd, 1);
    dup2(lfd, 2);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("LISTEN_FDS");
    ar_test_execv(bin, (char *const *)argv);
    _exit(127);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ssize_t r = pread(lfd, err, err_bytes - 1, 0);
  err[r > 0 ? r : 0] = '\0';
  close(lfd);
  unlink(log);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

START_TEST(pool_bytes_option_range) {
  char err[2048];
  const char *small[] = {"--foreground", "--socket", "/tmp/arenad-never.sock", "--pool-bytes", "1K", NULL};
  ck_assert_int_eq(run_arenad(small, err, sizeof(err)), 2);
  ck_assert_msg(strstr(err, "--pool-bytes: 1024 bytes is out of range [65536, 1099511627776]"), "%s", err);
  const char *big[] = {"--foreground", "--socket", "/tmp/arenad-never.sock", "--pool-bytes", "2048G", NULL};
  ck_assert_int_eq(run_arenad(big, err, sizeof(err)), 2);
  ck_assert_msg(strstr(err, "--pool-bytes") && strstr(err, "out of range"), "%s", err);
  const char *junk[] = {"--foreground", "--socket", "/tmp/arenad-never.sock", "--pool-bytes", "64MB", NULL};
  ck_assert_int_eq(run_arenad(junk, err, sizeof(err)), 2);
  ck_assert_msg(strstr(err, "--pool-bytes: \"64MB\" is not a size"), "%s", err);
}
END_TEST

static void write_config(const char *path, const char *models_json) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\"models\": [%s]}\n", models_json);
  ck_assert_int_eq(fclose(f), 0);
}

START_TEST(startup_with_a_failing_model_exits_1) {
  char dir[] = "/tmp/check_daemon_XXXXXX", cfg[300], bad[300], models[1024], err[2048], sock[300];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  snprintf(bad, sizeof(bad), "%s/bad_add.tflite", dir);
  snprintf(sock, sizeof(sock), "%s/s.sock", dir);
  write_bad_add_model(bad);
  snprintf(models, sizeof(models), "{\"name\": \"face\", \"path\": \"%s\"}, {\"name\": \"broken\", \"path\": \"%s\"}",
           ar_tc_model_path("face_detection_short_range"), bad);
  write_config(cfg, models);
  const char *args[] = {"--foreground", "--socket", sock, "--config", cfg, NULL};
  ck_assert_int_eq(run_arenad(args, err, sizeof(err)), 1);
  ck_assert_msg(strstr(err, "models[1] 'broken'") && strstr(err, "(ADD)"), "%s", err);
  /* --check-config says the same. */
  const char *check[] = {"--check-config", cfg, NULL};
  ck_assert_int_eq(run_arenad(check, err, sizeof(err)), 1);
  ck_assert_msg(strstr(err, "models[1] 'broken'"), "%s", err);
  unlink(cfg);
  unlink(bad);
  rmdir(dir);
}
END_TEST

/* A config file that does not parse or has a bad key: arenad (start-up and --check-config) names
 * the file once, before the line/column or the key (it printed "arenad: F: F: line 1 column 15: ..."
 * for a syntax error, a missing file or a read error). */
START_TEST(config_errors_name_the_file_once) {
  char dir[] = "/tmp/check_daemon_XXXXXX", cfg[300], sock[300], err[2048], want[400];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  snprintf(sock, sizeof(sock), "%s/s.sock", dir);
  static const struct { const char *json, *after; } cases[] = {
    {"{\"workers\": 2,\n", "line 2 column 0: "},
    {"{\"workers\": 0}\n", "workers: 0 is out of range [1, 256]"},
    {NULL, "No such file or directory"},   /* no file */
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    if (cases[i].json) {
      FILE *f = fopen(cfg, "w");
      ck_assert_ptr_nonnull(f);
      fputs(cases[i].json, f);
      ck_assert_int_eq(fclose(f), 0);
    } else {
      unlink(cfg);
    }
    snprintf(want, sizeof(want), "arenad: %s: %s", cfg, cases[i].after);
    const char *start[] = {"--foreground", "--socket", sock, "--config", cfg, NULL};
    const char *check[] = {"--check-config", cfg, NULL};
    const char *const *runs[] = {start, check};
    for (int r = 0; r < 2; r++) {
      ck_assert_int_eq(run_arenad(runs[r], err, sizeof(err)), 1);
      const char *at = strstr(err, want);
      ck_assert_msg(at != NULL, "case %zu run %d: \"%s\" lacks \"%s\"", i, r, err, want);
      ck_assert_msg(strstr(at + strlen("arenad: ") + strlen(cfg), cfg) == NULL, "case %zu run %d: file named twice: %s",
                    i, r, err);
    }
  }
  unlink(cfg);
  rmdir(dir);
}
END_TEST

/* --check-config lays the pool out as the daemon does: face then selfie in one share group grows
 * the group's region, and with compact_after_unload (default) the pool is compacted after it, so
 * the layout ends in one free block (used + largest free = the pool's bytes); with it off the old
 * region stays a hole. */
START_TEST(check_config_compacts_after_group_growth) {
  char dir[] = "/tmp/check_daemon_XXXXXX", cfg[300], out[8192];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  for (int compact = 1; compact >= 0; compact--) {
    FILE *f = fopen(cfg, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"pool_bytes\": 67108864, \"compact_after_unload\": %s, \"models\": ["
               "{\"name\": \"face\", \"path\": \"%s\", \"group\": \"people\"}, "
               "{\"name\": \"selfie\", \"path\": \"%s\", \"group\": \"people\"}]}\n",
            compact ? "true" : "false", ar_tc_model_path("face_detection_short_range"),
            ar_tc_model_path("selfie_segmentation"));
    ck_assert_int_eq(fclose(f), 0);
    const char *check[] = {"--check-config", cfg, NULL};
    ck_assert_int_eq(run_arenad(check, out, sizeof(out)), 0);
    unsigned long long used = 0, total = 0, largest = 0;
    const char *line = strstr(out, "\nused ");
    ck_assert_msg(line && sscanf(line, "\nused %llu of %llu bytes, largest free block %llu", &used, &total, &largest) == 3,
                  "%s", out);
    ck_assert_uint_eq(total, 67108864);
    if (compact) ck_assert_msg(used + largest == total, "compacted layout has a hole:\n%s", out);
    else ck_assert_msg(used + largest < total, "without compaction the old region stays a hole:\n%s", out);
  }
  unlink(cfg);
  rmdir(dir);
}
END_TEST

/* Names of the listed models, with their group, as "name:group," in list order. */
static void listed(ar_client_t *c, char *out, size_t n) {
  ar_client_model_t *models = NULL;
  size_t k = 0;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_client_list(c, &models, &k, msg, sizeof(msg)), 0);
  out[0] = '\0';
  for (size_t i = 0; i < k; i++)
    snprintf(out + strlen(out), n - strlen(out), "%s:%s,", models[i].name, models[i].group);
  free(models);
}

/* Wait until the daemon log contains `what` the `nth` time (reload outcomes are logged). */
static void wait_log(const char *what, int nth) {
  for (int tries = 0;; tries++) {
    ck_assert_msg(tries < 3000, "no '%s' (x%d) in the daemon log after 60 s", what, nth);
    size_t n = 0;
    char *log = ar_test_read_file(dmn.log, &n);
    int seen = 0;
    if (log) {
      char *z = realloc(log, n + 1);
      ck_assert_ptr_nonnull(z);
      z[n] = '\0';
      for (char *p = z; (p = strstr(p, what)) != NULL; p++) seen++;
      free(z);
    }
    if (seen >= nth) return;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

START_TEST(reload_is_a_transaction_and_keeps_runtime_loads) {
  char cfg[400], bad[400], models[4096], got[1024], msg[AR_MSG_BYTES];
  char dir[] = "/tmp/check_daemon_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  snprintf(bad, sizeof(bad), "%s/bad_add.tflite", dir);
  write_bad_add_model(bad);
  snprintf(models, sizeof(models), "{\"name\": \"face\", \"path\": \"%s\"}", ar_tc_model_path("face_detection_short_range"));
  write_config(cfg, models);
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&dmn, "64M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  wait_log("loaded model 'face'", 1);
  ar_client_t *c = client();
  load_ok(c, "hand", "hand_landmark_lite", "", NULL);   /* a run-time load */

  /* 1. A new model that fails to load: nothing changes, not even the valid part (selfie). */
  snprintf(models, sizeof(models),
           "{\"name\": \"face\", \"path\": \"%s\", \"group\": \"g\"}, {\"name\": \"selfie\", \"path\": \"%s\"}, "
           "{\"name\": \"broken\", \"path\": \"%s\"}",
           ar_tc_model_path("face_detection_short_range"), ar_tc_model_path("selfie_segmentation"), bad);
  write_config(cfg, models);
  ck_assert_int_eq(kill(dmn.pid, SIGHUP), 0);
  wait_log("reload failed, keeping the running configuration: models[2] 'broken'", 1);
  listed(c, got, sizeof(got));
  ck_assert_str_eq(got, "face:,hand:,");
  json_t *st = ar_tc_stats(c);
  ck_assert_uint_eq(json_array_size(json_object_get(st, "models")), 2);
  json_decref(st);

  /* 2. Valid: face moves to group g, selfie appears; the run-time load stays. */
  snprintf(models, sizeof(models),
           "{\"name\": \"face\", \"path\": \"%s\", \"group\": \"g\"}, {\"name\": \"selfie\", \"path\": \"%s\"}",
           ar_tc_model_path("face_detection_short_range"), ar_tc_model_path("selfie_segmentation"));
  write_config(cfg, models);
  ck_assert_int_eq(kill(dmn.pid, SIGHUP), 0);
  wait_log("reload: done", 1);   /* the replaced face (no invokes in flight) is unloaded before */
  listed(c, got, sizeof(got));
  ck_assert_str_eq(got, "hand:,face:g,selfie:,");

  /* 3. Empty config: the configured models go, the run-time one stays. */
  write_config(cfg, "");
  ck_assert_int_eq(kill(dmn.pid, SIGHUP), 0);
  wait_log("reload: done", 2);
  listed(c, got, sizeof(got));
  ck_assert_str_eq(got, "hand:,");
  ck_assert_int_eq(ar_client_unload(c, "hand", msg, sizeof(msg)), 0);
  ar_client_close(c);
  stop();
  unlink(cfg);
  unlink(bad);
  rmdir(dir);
}
END_TEST

/* One byte through the test gate: returns once the daemon's load thread waited there and was let go. */
static void open_gate(const char *gate) {
  int fd = open(gate, O_WRONLY | O_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, "x", 1), 1);
  close(fd);
}

/* Start arenad (64M pool) with its reload test gate: a FIFO `gate` made in the new temporary
 * directory `dir` (a mkdtemp template), which the daemon's load thread reads one byte from before
 * each reload load (open_gate lets one go). */
static void start_with_reload_gate(char *dir, char *gate, size_t gate_bytes) {
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(gate, gate_bytes, "%s/gate", dir);
  ck_assert_int_eq(mkfifo(gate, 0600), 0);
  ck_assert_int_eq(setenv("ARENAD_TEST_RELOAD_GATE", gate, 1), 0);
  int started = ar_td_start(&dmn, "64M", NULL);
  unsetenv("ARENAD_TEST_RELOAD_GATE");
  ck_assert_msg(started == 0, "arenad did not start (log %s)", dmn.log);
}

/* A run-time model a client unloads while a reload re-reads its file stays unloaded (the reload used
 * to install its re-read as if the model were new). The daemon's test gate holds the reload's load
 * until the unload is answered, so the order is fixed, not timed. */
START_TEST(reload_does_not_bring_back_a_model_unloaded_during_it) {
  char dir[] = "/tmp/check_daemon_XXXXXX", gate[300], got[1024], msg[AR_MSG_BYTES];
  start_with_reload_gate(dir, gate, sizeof(gate));
  ar_client_t *c = client();
  load_ok(c, "tmp", "palm_detection_lite", "", NULL);
  ck_assert_int_eq(kill(dmn.pid, SIGHUP), 0);
  wait_log("reload: (no configuration file)", 1);   /* logged right before the re-reads are queued */
  ck_assert_int_eq(ar_client_unload(c, "tmp", msg, sizeof(msg)), 0);
  open_gate(gate);
  wait_log("reload: done", 1);
  listed(c, got, sizeof(got));
  ck_assert_str_eq(got, "");
  wait_log("reload: model 'tmp' was unloaded during the reload: its re-read is dropped", 1);
  json_t *st = ar_tc_stats(c);
  ck_assert_uint_eq(json_array_size(json_object_get(st, "models")), 0);
  json_decref(st);
  ar_client_close(c);
  stop();
  unlink(gate);
  rmdir(dir);
}
END_TEST

/* A SIGHUP during a reload is not dropped: one more reload runs when the current one is done. */
START_TEST(sighup_during_a_reload_runs_after_it) {
  char dir[] = "/tmp/check_daemon_XXXXXX", gate[300], got[1024];
  start_with_reload_gate(dir, gate, sizeof(gate));
  ar_client_t *c = client();
  load_ok(c, "tmp", "palm_detection_lite", "", NULL);
  ck_assert_int_eq(kill(dmn.pid, SIGHUP), 0);
  wait_log("reload: (no configuration file)", 1);
  ck_assert_int_eq(kill(dmn.pid, SIGHUP), 0);   /* the first reload waits at the gate */
  wait_log("SIGHUP during a reload: one more reload runs when this one is done", 1);
  open_gate(gate);                               /* the first reload's re-read of tmp */
  wait_log("reload: (no configuration file)", 2);
  open_gate(gate);                               /* the second's */
  wait_log("reload: done", 2);
  listed(c, got, sizeof(got));
  ck_assert_str_eq(got, "tmp:,");
  ar_client_close(c);
  stop();
  unlink(gate);
  rmdir(dir);
}
END_TEST

/* Model paths are reported in protobuf strings (ModelInfo.path, stats): a path that is not UTF-8,
 * as given (LoadModel) or as resolved (LoadModel or the configuration naming a symlink to such a
 * file), is refused with the path escaped, and the replies after it still decode. */
START_TEST(non_utf8_model_paths_are_refused) {
  char dir[] = "/tmp/check_daemon_XXXXXX", cfg[300], real[300], link[300], bad_link[300], err[4096],
       models[1024], msg[AR_MSG_BYTES], got[1024];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ck_assert_msg(ar_td_start(&dmn, "64M", NULL) == 0, "arenad did not start (log %s)", dmn.log);
  /* A real file named with byte 0xfe, a UTF-8 symlink to it, and a symlink named with 0xff to a
   * UTF-8-named model. */
  size_t n = 0;
  void *bytes = ar_test_read_file(ar_tc_model_path("palm_detection_lite"), &n);
  ck_assert_ptr_nonnull(bytes);
  snprintf(real, sizeof(real), "%s/real\xfe.tflite", dmn.dir);
  FILE *f = fopen(real, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
  free(bytes);
  snprintf(link, sizeof(link), "%s/palm.tflite", dmn.dir);
  ck_assert_int_eq(symlink(real, link), 0);
  snprintf(bad_link, sizeof(bad_link), "%s/link\xff.tflite", dmn.dir);
  ck_assert_int_eq(symlink(ar_tc_model_path("palm_detection_lite"), bad_link), 0);
  ar_client_t *c = client();

  int rc = ar_client_load(c, "p1", bad_link, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_int_eq(rc, AR_EINVAL);
  ck_assert_msg(strstr(msg, "link\\xff.tflite' is not UTF-8"), "%s", msg);
  rc = ar_client_load(c, "p2", link, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_int_eq(rc, AR_EINVAL);
  ck_assert_msg(strstr(msg, "palm.tflite': resolves to '") && strstr(msg, "real\\xfe.tflite', which is not UTF-8"),
                "%s", msg);
  listed(c, got, sizeof(got));
  ck_assert_str_eq(got, "");

  /* The configuration: start-up and --check-config refuse it, naming the model. */
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  snprintf(models, sizeof(models), "{\"name\": \"palm\", \"path\": \"%s\"}", link);
  write_config(cfg, models);
  const char *check[] = {"--check-config", cfg, NULL};
  ck_assert_int_eq(run_arenad(check, err, sizeof(err)), 1);
  ck_assert_msg(strstr(err, "models[0] 'palm'") && strstr(err, "real\\xfe.tflite', which is not UTF-8"), "%s", err);
  char sock[300];
  snprintf(sock, sizeof(sock), "%s/s.sock", dir);
  const char *args[] = {"--foreground", "--socket", sock, "--config", cfg, NULL};
  ck_assert_int_eq(run_arenad(args, err, sizeof(err)), 1);
  ck_assert_msg(strstr(err, "real\\xfe.tflite', which is not UTF-8"), "%s", err);

  ar_client_close(c);
  unlink(link);
  unlink(bad_link);
  unlink(real);
  stop();
  unlink(cfg);
  rmdir(dir);
}
END_TEST

/* Stats' weights mode of model `name`, "" if it is not listed. */
static const char *weights_of(json_t *st, const char *name) {
  json_t *m = ar_tc_stats_model(st, name);
  return m ? json_string_value(json_object_get(m, "weights")) : "";
}

static void write_weights_config(const char *path, const char *dflt) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\"weights\": \"%s\", \"models\": [{\"name\": \"face\", \"path\": \"%s\"}, "
          "{\"name\": \"selfie\", \"path\": \"%s\", \"weights\": \"stored\"}]}\n", dflt,
          ar_tc_model_path("face_detection_short_range"), ar_tc_model_path("selfie_segmentation"));
  ck_assert_int_eq(fclose(f), 0);
}

/* The configuration's top-level "weights" is the mode of the models that name none and of client
 * loads that send none; a model's own key wins. A reload that changes the default replaces the
 * models that follow it (face) and keeps the one naming its mode (selfie) and run-time loads,
 * which keep the mode they were loaded with. */
START_TEST(config_weights_default_and_reload) {
  char cfg[400], msg[AR_MSG_BYTES];
  char dir[] = "/tmp/check_daemon_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  write_weights_config(cfg, "fp32");
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&dmn, "64M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  wait_log("loaded model 'face'", 1);
  wait_log("loaded model 'selfie'", 1);
  ar_client_t *c = client();
  load_ok(c, "hand", "hand_landmark_lite", "", NULL);
  json_t *st = ar_tc_stats(c);
  ck_assert_str_eq(weights_of(st, "face"), "fp32");
  ck_assert_str_eq(weights_of(st, "selfie"), "stored");
  ck_assert_str_eq(weights_of(st, "hand"), "fp32");
  uint64_t face_fp32 = ar_tc_ji(ar_tc_stats_model(st, "face"), "persistent_bytes");
  json_decref(st);
  write_weights_config(cfg, "stored");
  ar_client_reloaded_t *changed = NULL;
  size_t n_changed = 0;
  uint32_t unchanged = 0;
  ck_assert_msg(ar_client_reload(c, &changed, &n_changed, &unchanged, msg, sizeof(msg)) == 0, "reload: %s", msg);
  free(changed);
  st = ar_tc_stats(c);
  ck_assert_str_eq(weights_of(st, "face"), "stored");
  ck_assert_str_eq(weights_of(st, "selfie"), "stored");
  ck_assert_str_eq(weights_of(st, "hand"), "fp32");
  ck_assert_uint_le(ar_tc_ji(ar_tc_stats_model(st, "face"), "persistent_bytes") * 10, face_fp32);
  json_decref(st);
  ar_client_close(c);
  stop();
  unlink(cfg);
  rmdir(dir);
}
END_TEST

/* ---- busy polling and invokes on the loop thread -------------------------------------------- */

/* CPU time (user + system, seconds) the process has used, from /proc/<pid>/stat. */
/* CPU seconds used by process `pid` and its minor page faults so far (/proc/PID/stat). */
static double proc_stat(pid_t pid, unsigned long *minflt) {
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');   /* fields after the command name */
  ck_assert_ptr_nonnull(p);
  unsigned long ut = 0, st = 0, mf = 0;
  /* ") S ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime" */
  ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %lu %*u %*u %*u %lu %lu", &mf, &ut, &st), 3);
  if (minflt) *minflt = mf;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double proc_cpu_s(pid_t pid) { return proc_stat(pid, NULL); }

/* `warm` then `n` bytes-path invokes of `name` (a model loaded from `stem`) on c, each reply equal
 * to its golden (photo and random in turns): the daemon's minor page faults during the last n. */
static unsigned long bytes_path_faults(ar_client_t *c, const char *name, const char *stem, int warm, int n) {
  ar_client_model_t info;
  load_ok(c, name, stem, "", &info);
  ar_tc_golden_t g[2];
  ar_tc_golden_load(&g[0], stem, "photo");
  ar_tc_golden_load(&g[1], stem, "random");
  char msg[AR_MSG_BYTES];
  unsigned long f0 = 0, f1 = 0;
  for (int i = 0; i < warm + n; i++) {
    if (i == warm) proc_stat(dmn.pid, &f0);
    ar_client_tensor_t t = input_of(&info, &g[i % 2]);
    ar_client_result_t r;
    int rc = ar_client_invoke(c, name, &t, 1, &r, msg, sizeof(msg));
    ck_assert_msg(rc == 0, "%s invoke %d: %s", name, i, msg);
    ck_assert_msg(ar_tc_golden_check(&g[i % 2], &r) == 0, "%s invoke %d differs from its golden", name, i);
    ar_client_result_free(&r);
  }
  proc_stat(dmn.pid, &f1);
  ar_tc_golden_free(&g[0]);
  ar_tc_golden_free(&g[1]);
  return f1 - f0;
}

/* The bytes path reuses its blocks: selfie_segmentation's 786 KB request frames and 262 KB output
 * blocks lie above glibc's mmap threshold, so before the connection kept them each invoke mapped
 * about 1 MB anew and faulted in ~260 pages. After a warm-up a stream of invokes faults in next to
 * nothing (the daemon's minor faults counted by the kernel), and every reply equals the golden.
 * The same holds after the connection ran another model with smaller frames first
 * (face_detection_short_range's 197 KB frames and 61 KB outputs, as bench/ipc runs them): its
 * blocks make room for the larger ones instead of keeping the connection's spare slots, where they
 * had made every selfie invoke map, fault in and unmap its blocks (3.5 ms over in-process). */
START_TEST(bytes_path_reuses_its_blocks) {
  start("64M");
  ar_client_t *c = client();
  const int warm = 4, n = 16;
  unsigned long alone = bytes_path_faults(c, "selfie", "selfie_segmentation", warm, n);
  printf("bytes path: %lu minor faults in %d selfie_segmentation invokes\n", alone, n);
  ar_client_close(c);
  c = client();
  bytes_path_faults(c, "face", "face_detection_short_range", 0, 12);
  unsigned long after = bytes_path_faults(c, "selfie2", "selfie_segmentation", warm, n);
  printf("bytes path: %lu minor faults in %d selfie_segmentation invokes after face_detection_short_range's\n",
         after, n);
  /* The count is glibc's allocator at work: sanitizers and valgrind bring their own (and shadow
   * memory faults of its own), emulation its own memory; only the plain build counts it. */
  bool own_allocator = AR_TEST_SANITIZED || ar_test_under_valgrind() || ar_test_emulated();
  /* Unkept blocks would fault ~260 pages per invoke (~4,200 here). A kept frame is back among the
   * connection's spares only once its reply is written, so on a loaded machine the next request
   * is now and then read into a fresh 786 KB block (193 faults each: 0, 193 and 387 seen), hence
   * the bound of about three such blocks. */
  if (!own_allocator) {
    ck_assert_msg(alone < (unsigned long)n * 40, "%lu page faults in %d invokes", alone, n);
    ck_assert_msg(after < (unsigned long)n * 40, "%lu page faults in %d invokes after face's", after, n);
  }
  ar_client_close(c);
  stop();
}
END_TEST

/* busy_poll_us and inline_invoke_us change where and how fast requests are served, never what
 * they answer: with both on (and the client busy-polling too) invokes by two clients, in turns and
 * between pings, equal the goldens; invokes after the first (which measures the model) run on the
 * loop thread; the stats report the settings; and once requests stop the loop goes back to sleep
 * (an idle half second costs the daemon far less than half a second of CPU). */
START_TEST(busy_poll_and_inline_invokes_match_goldens) {
  char cfg[400];
  char dir[] = "/tmp/check_daemon_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  FILE *f = fopen(cfg, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\"models\": [], \"busy_poll_us\": 2000, \"inline_invoke_us\": %u}\n", AR_CONFIG_BUSY_POLL_MAX);
  fclose(f);
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&dmn, "64M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  ar_client_t *c[2] = {client(), client()};
  ck_assert_uint_eq(ar_client_busy_poll(c[0]), AR_CLIENT_BUSY_POLL_DEFAULT);
  ar_client_set_busy_poll(c[0], 3000);
  ck_assert_uint_eq(ar_client_busy_poll(c[0]), 3000);
  ar_client_set_busy_poll(c[1], AR_CLIENT_BUSY_POLL_MAX + 1);   /* clamped */
  ck_assert_uint_eq(ar_client_busy_poll(c[1]), AR_CLIENT_BUSY_POLL_MAX);
  ar_client_set_busy_poll(c[1], 0);
  ar_client_model_t info;
  load_ok(c[0], "face", "face_detection_short_range", "", &info);
  ar_tc_golden_t g[2];
  ar_tc_golden_load(&g[0], "face_detection_short_range", "photo");
  ar_tc_golden_load(&g[1], "face_detection_short_range", "random");
  char msg[AR_MSG_BYTES];
  const int n = 12;
  for (int i = 0; i < n; i++) {
    ar_client_tensor_t t = input_of(&info, &g[i % 2]);
    ar_client_result_t r;
    int rc = ar_client_invoke(c[i % 2], "face", &t, 1, &r, msg, sizeof(msg));
    ck_assert_msg(rc == 0, "invoke %d: %s", i, msg);
    ck_assert_msg(ar_tc_golden_check(&g[i % 2], &r) == 0, "invoke %d differs from its golden", i);
    ar_client_result_free(&r);
    if (i % 3 == 0) ck_assert_int_eq(ar_client_ping(c[(i + 1) % 2], NULL, 0, msg, sizeof(msg)), 0);
  }
  /* A short busy poll: the client sleeps until shortly before each reply is due, without the
   * thread's timer slack, which it gives back afterwards. */
  int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  ar_client_set_busy_poll(c[1], 100);
  for (int i = 0; i < 6; i++) {
    ar_client_tensor_t t = input_of(&info, &g[i % 2]);
    ar_client_result_t r;
    ck_assert_msg(ar_client_invoke(c[1], "face", &t, 1, &r, msg, sizeof(msg)) == 0, "invoke %d: %s", i, msg);
    ck_assert_msg(ar_tc_golden_check(&g[i % 2], &r) == 0, "invoke %d differs from its golden", i);
    ar_client_result_free(&r);
    ck_assert_int_eq(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), slack);
  }
  /* A result stays valid through the connection's next invokes (a large reply's outputs are left
   * in the buffer it was read into, which goes with the result). */
  ar_client_result_t kept[2];
  for (int i = 0; i < 2; i++) {
    ar_client_tensor_t t = input_of(&info, &g[i]);
    ck_assert_msg(ar_client_invoke(c[1], "face", &t, 1, &kept[i], msg, sizeof(msg)) == 0, "invoke: %s", msg);
  }
  ck_assert_msg(ar_tc_golden_check(&g[0], &kept[0]) == 0, "the first result changed under the second invoke");
  ck_assert_msg(ar_tc_golden_check(&g[1], &kept[1]) == 0, "the second result differs from its golden");
  ar_client_result_free(&kept[0]);
  ar_client_result_free(&kept[1]);
  json_t *st = ar_tc_stats(c[0]);
  json_t *d = json_object_get(st, "daemon");
  ck_assert_uint_eq(ar_tc_ji(d, "busy_poll_us"), 2000);
  ck_assert_uint_eq(ar_tc_ji(d, "inline_invoke_us"), AR_CONFIG_BUSY_POLL_MAX);
  /* The first invoke of a model runs on a worker (its time is not known yet); later ones whose
   * previous invoke took at most 100 ms on the loop (under emulation they may all be slower). */
  /* Under ThreadSanitizer a face invoke can take longer than the 100 ms bound too. */
  if (!ar_test_emulated() && !AR_TEST_SANITIZED) ck_assert_uint_ge(ar_tc_ji(d, "invokes_inline"), 1);
  ck_assert_uint_le(ar_tc_ji(d, "invokes_inline"), n + 8 - 1);
  json_t *jm = ar_tc_stats_model(st, "face");
  ck_assert_uint_eq(ar_tc_ji(jm, "invokes"), n + 8);
  ck_assert_uint_eq(ar_tc_ji(jm, "errors"), 0);
  json_int_t allocs = json_integer_value(json_object_get(jm, "heap_allocs_in_invoke"));
  ck_assert_msg(allocs == 0 || allocs == -1, "%lld heap allocations inside invoke", (long long)allocs);
  json_decref(st);
  /* Quiet: busy polling stops busy_poll_us (2 ms) after the last request. A load only lowers what
   * the daemon gets, so the bound holds on a busy machine too. */
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
  double cpu0 = proc_cpu_s(dmn.pid);
  ts.tv_nsec = 500 * 1000 * 1000;
  nanosleep(&ts, NULL);
  double used = proc_cpu_s(dmn.pid) - cpu0;
  ck_assert_msg(used < 0.25, "the idle daemon used %.2f s of CPU in 0.5 s", used);
  ping_ok();
  ar_tc_golden_free(&g[0]);
  ar_tc_golden_free(&g[1]);
  ar_client_close(c[0]);
  ar_client_close(c[1]);
  stop();
  unlink(cfg);
  rmdir(dir);
}
END_TEST

START_TEST(reload_changing_group_never_fails_an_invoke) {
  char cfg[400], models[4096], got[1024];
  char dir[] = "/tmp/check_daemon_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  snprintf(models, sizeof(models), "{\"name\": \"face\", \"path\": \"%s\"}", ar_tc_model_path("face_detection_short_range"));
  write_config(cfg, models);
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&dmn, "64M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  wait_log("loaded model 'face'", 1);
  ar_client_t *c = client();
  ar_client_model_t *ms = NULL;
  size_t nm = 0;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_client_list(c, &ms, &nm, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(nm, 1);
  ar_client_model_t face = ms[0];
  free(ms);
  ar_tc_golden_t g;
  ar_tc_golden_load(&g, "face_detection_short_range", "photo");
  streamer_t s[3];
  pthread_t th[3];
  for (int i = 0; i < 3; i++) {
    memset(&s[i], 0, sizeof(s[i]));
    s[i].g = &g;
    s[i].info = &face;
    s[i].model = "face";
    s[i].max_invokes = stream_invokes_per_client(400);
    pthread_create(&th[i], NULL, stream_invokes, &s[i]);
  }
  /* Three reloads, each moving face to another group, while the invokes stream. */
  const char *groups[3] = {"g1", "g2", ""};
  for (int r = 0; r < 3; r++) {
    snprintf(models, sizeof(models), "{\"name\": \"face\", \"path\": \"%s\", \"group\": \"%s\"}",
             ar_tc_model_path("face_detection_short_range"), groups[r]);
    write_config(cfg, models);
    ck_assert_int_eq(kill(dmn.pid, SIGHUP), 0);
    wait_log("reload: done", r + 1);
  }
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    ck_assert_msg(s[i].other == 0 && s[i].gone == 0, "streamer %d: %d failed, %d gone", i, s[i].other, s[i].gone);
    ck_assert_int_eq(s[i].ok, stream_invokes_per_client(400));
  }
  /* A new connection: `c` sat idle while 1,200 invokes streamed (natively), which under ThreadSanitizer
   * outlasts idle_timeout_ms (300 s), and the daemon rightly closed it (ECONN). */
  ar_client_close(c);
  c = client();
  listed(c, got, sizeof(got));
  ck_assert_str_eq(got, "face:,");
  ar_tc_golden_free(&g);
  ar_client_close(c);
  stop();
  unlink(cfg);
  rmdir(dir);
}
END_TEST

START_TEST(invokes_of_a_vanished_client_are_dropped) {
  /* Invokes on workers (not on the loop thread: a lone invoke would run there, and the loop would
   * read each frame only after running the one before, so that all had run when the hang-up came). */
  char cfg[300], dir[] = "/tmp/check_daemon_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", dir);
  FILE *f = fopen(cfg, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\"models\": [], \"inline_invoke_us\": 0}\n");
  fclose(f);
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&dmn, "64M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  unlink(cfg);
  rmdir(dir);
  ar_client_t *c = client();
  ar_client_model_t face;
  load_ok(c, "face", "face_detection_short_range", "", &face);
  ar_tc_golden_t g;
  ar_tc_golden_load(&g, "face_detection_short_range", "photo");
  /* Pipeline 60 invokes on a raw connection and close it without reading a reply. */
  Arenad__Tensor t = ARENAD__TENSOR__INIT;
  int64_t shape[4] = {1, 128, 128, 3};
  t.dtype = ARENAD__DTYPE__FLOAT32;
  t.n_shape = 4;
  t.shape = shape;
  t.data.data = (uint8_t *)g.input;
  t.data.len = g.input_bytes;
  Arenad__Tensor *tp = &t;
  Arenad__InvokeRequest ir = ARENAD__INVOKE_REQUEST__INIT;
  ir.model = (char *)"face";
  ir.n_inputs = 1;
  ir.inputs = &tp;
  Arenad__Request req = ARENAD__REQUEST__INIT;
  req.body_case = ARENAD__REQUEST__BODY_INVOKE;
  req.invoke = &ir;
  /* When the daemon happens to meet the hang-up only once every accepted invoke has started
   * (timing: it reads a connection's frames in bounded batches), nothing is left to drop; so the
   * pipeline is sent up to 3 times, each accounted for exactly, and some invoke must be dropped. */
  uint64_t total_dropped = 0;
  for (int attempt = 0; attempt < 3 && total_dropped == 0; attempt++) {
    /* The daemon's request total before the raw connection; every stats poll below adds one. */
    json_t *st0 = ar_tc_stats(c);
    uint64_t requests0 = ar_tc_ji(json_object_get(st0, "daemon"), "requests");
    uint64_t dropped0 = ar_tc_ji(ar_tc_stats_model(st0, "face"), "dropped");
    uint64_t invokes0 = ar_tc_ji(ar_tc_stats_model(st0, "face"), "invokes");
    json_decref(st0);
    int fd = ar_td_connect_raw(dmn.socket);
    ck_assert_int_ge(fd, 0);
    for (int i = 0; i < 60; i++) {
      req.id = (uint64_t)i + 1;
      ck_assert_int_eq(ar_td_send_request(fd, &req), 0);
    }
    close(fd);
    /* Every accepted invoke is either run or dropped; the ones behind the hang-up are dropped. The
     * daemon may meet the hang-up (EPIPE on a reply) before it has read the last frames from the
     * socket: those were never accepted, so the accepted count comes from the request total once
     * the raw connection is gone. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const double limit_s = ar_test_emulated() ? 1800 : 180;   /* a bound that names the figures */
    for (uint64_t polls = 1;; polls++) {
      json_t *st = ar_tc_stats(c);
      json_t *m = ar_tc_stats_model(st, "face"), *d = json_object_get(st, "daemon");
      uint64_t dropped = ar_tc_ji(m, "dropped") - dropped0, errors = ar_tc_ji(m, "errors");
      uint64_t done = ar_tc_ji(m, "invokes") - invokes0 + dropped + errors, inflight = ar_tc_ji(m, "inflight");
      uint64_t accepted = ar_tc_ji(d, "requests") - requests0 - polls, conns = ar_tc_ji(d, "connections");
      json_decref(st);
      ck_assert_uint_le(accepted, 60);
      ck_assert_uint_le(done, accepted);
      if (conns == 1 && inflight == 0 && done == accepted) {
        ck_assert_uint_eq(errors, 0);
        printf("vanished client, attempt %d: %" PRIu64 " of 60 invokes accepted, %" PRIu64 " run, %" PRIu64
               " dropped\n", attempt + 1, accepted, done - dropped - errors, dropped);
        total_dropped += dropped;
        break;
      }
      clock_gettime(CLOCK_MONOTONIC, &t1);
      ck_assert_msg((double)(t1.tv_sec - t0.tv_sec) < limit_s,
                    "after %.0f s: %" PRIu64 " accepted, %" PRIu64 " answered (run, dropped or failed), %" PRIu64 " in flight, %" PRIu64 " connections",
                    limit_s, accepted, done, inflight, conns);
    }
  }
  ck_assert_msg(total_dropped > 0, "no invoke dropped in 3 pipelines of 60 from vanished clients");
  ping_ok();
  ar_tc_golden_free(&g);
  ar_client_close(c);
  stop();
}
END_TEST


/* A fake daemon for the client's reading: it answers the pings of one connection with frames cut
 * and joined in awkward ways (see client_reads_replies_however_they_arrive). */
typedef struct {
  int listen_fd;
  char path[108];
} fake_daemon_t;

static size_t fake_reply(uint64_t id, const char *version, uint8_t *out) {
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__PingResponse body = ARENAD__PING_RESPONSE__INIT;
  body.version = (char *)version;
  resp.id = id;
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_PING;
  resp.ping = &body;
  size_t n = arenad__response__pack(&resp, out + 4);
  out[0] = (uint8_t)n, out[1] = (uint8_t)(n >> 8), out[2] = (uint8_t)(n >> 16), out[3] = (uint8_t)(n >> 24);
  return 4 + n;
}

/* Read one request frame; returns its id (0 on end of stream). */
static uint64_t fake_request(int fd) {
  uint8_t hdr[4], body[4096];
  if (recv(fd, hdr, 4, MSG_WAITALL) != 4) return 0;
  uint32_t len = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
  if (len > sizeof(body) || recv(fd, body, len, MSG_WAITALL) != (ssize_t)len) return 0;
  Arenad__Request *req = arenad__request__unpack(NULL, len, body);
  uint64_t id = req ? req->id : 0;
  arenad__request__free_unpacked(req, NULL);
  return id;
}

static void *fake_daemon_main(void *arg) {
  fake_daemon_t *f = arg;
  int fd = accept(f->listen_fd, NULL, NULL);
  if (fd < 0) return NULL;
  size_t big = 3u << 20;   /* a reply larger than the client keeps its buffer for */
  char *version = malloc(big);
  uint8_t *out = malloc(2 * big);
  struct timespec pause = {0, 2 * 1000 * 1000};
  /* 1: the replies to requests 1 and 2 in one write, before request 2 was sent. */
  uint64_t id = fake_request(fd);
  size_t n = fake_reply(id, "one", out);
  n += fake_reply(id + 1, "two", out + n);
  ck_assert_int_eq(write(fd, out, n), (ssize_t)n);
  ck_assert_uint_eq(fake_request(fd), id + 1);
  /* 3: a byte at a time (the header too). */
  id = fake_request(fd);
  n = fake_reply(id, "three", out);
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(write(fd, out + i, 1), 1);
    if (i < 6) nanosleep(&pause, NULL);
  }
  /* 4: a 3 MiB version string, then 5: a short one again, each with half the next frame's
   * header stuck to it. */
  id = fake_request(fd);
  memset(version, 'v', big - 1);
  version[big - 1] = '\0';
  n = fake_reply(id, version, out);
  size_t m = fake_reply(id + 1, "five", out + n);
  ck_assert_int_eq(write(fd, out, n + 2), (ssize_t)(n + 2));
  ck_assert_uint_eq(fake_request(fd), id + 1);
  nanosleep(&pause, NULL);
  ck_assert_int_eq(write(fd, out + n + 2, m - 2), (ssize_t)(m - 2));
  fake_request(fd);   /* until the client closes */
  free(version);
  free(out);
  close(fd);
  return NULL;
}

START_TEST(client_reads_replies_however_they_arrive) {
  fake_daemon_t f;
  snprintf(f.path, sizeof(f.path), "/tmp/check_daemon_fake_%d.sock", (int)getpid());
  unlink(f.path);
  f.listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f.path);
  ck_assert_int_eq(bind(f.listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  ck_assert_int_eq(listen(f.listen_fd, 1), 0);
  pthread_t th;
  pthread_create(&th, NULL, fake_daemon_main, &f);
  char msg[AR_MSG_BYTES], *version = malloc(4u << 20);
  const size_t vbytes = 4u << 20;
  ar_client_t *c = NULL;
  ck_assert_int_eq(ar_client_connect(f.path, &c, msg, sizeof(msg)), 0);
  const char *want[] = {"one", "two", "three", NULL, "five"};
  for (int i = 0; i < 5; i++) {
    ck_assert_msg(ar_client_ping(c, version, vbytes, msg, sizeof(msg)) == 0, "ping %d: %s", i + 1, msg);
    if (want[i]) ck_assert_str_eq(version, want[i]);
    else ck_assert_uint_eq(strlen(version), (3u << 20) - 1);
  }
  ar_client_close(c);
  pthread_join(th, NULL);
  free(version);
  close(f.listen_fd);
  unlink(f.path);
}
END_TEST

/* ---- max_while_iterations and the interpreter's reason in the invoke error (issue 27) -------- */

/* i INT32 [] -> WHILE(cond 1: i < 5, body 2: i + 0) -> i_out: a loop that never ends. */
static uint8_t *endless_loop_model(size_t *bytes) {
  static const int32_t five = 5, zero = 0;
  enum { OP_ADD = 0, OP_LESS = 58, OP_WHILE = 119, OPT_WHILE = 93 };
  static const ar_tm_tensor_t mt[] = {{"i", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"i_out", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL}};
  static const ar_tm_op_t mops[] = {{.builtin = OP_WHILE, .n_in = 1, .n_out = 1, .in = {0}, .out = {1},
                                     .options_type = OPT_WHILE, .n_fields = 2, .fields = {{0, 4, 1}, {1, 4, 2}}}};
  static const ar_tm_tensor_t ct[] = {{"i", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"limit", AR_DTYPE_INT32, 0, {0}, false, {0}, &five},
                                      {"go_on", AR_DTYPE_BOOL, 0, {0}, false, {0}, NULL}};
  static const ar_tm_op_t cops[] = {{.builtin = OP_LESS, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}}};
  static const ar_tm_tensor_t bt[] = {{"i", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"step", AR_DTYPE_INT32, 0, {0}, false, {0}, &zero},
                                      {"i2", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL}};
  static const ar_tm_op_t bops[] = {{.builtin = OP_ADD, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}}};
  static const int32_t in0[] = {0}, out1[] = {1}, out2[] = {2};
  const ar_tm_args_t sub[2] = {{.tensors = ct, .n_tensors = 3, .ops = cops, .n_ops = 1, .inputs = in0, .n_inputs = 1,
                                .outputs = out2, .n_outputs = 1},
                               {.tensors = bt, .n_tensors = 3, .ops = bops, .n_ops = 1, .inputs = in0, .n_inputs = 1,
                                .outputs = out2, .n_outputs = 1}};
  const ar_tm_args_t a = {.tensors = mt, .n_tensors = 2, .ops = mops, .n_ops = 1, .inputs = in0, .n_inputs = 1,
                          .outputs = out1, .n_outputs = 1, .subgraphs = sub, .n_subgraphs = 2};
  return ar_tm_build_args(&a, bytes);
}

/* A daemon configured with max_while_iterations 100 stops the endless WHILE after 100 iterations
 * and the client's error says so (before: "invoke failed: " and the code's text only, and the
 * bound was the interpreter's 2^20, not configurable); the daemon serves the next request. */
START_TEST(while_bound_from_config_and_its_reason_reach_the_client) {
  char dir[64] = "/tmp/arenad-while-XXXXXX", cfg[128], model[128], msg[AR_MSG_BYTES];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof cfg, "%s/arenad.json", dir);
  snprintf(model, sizeof model, "%s/endless.tflite", dir);
  FILE *f = fopen(cfg, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\"models\": [], \"max_while_iterations\": 100}\n");
  ck_assert_int_eq(fclose(f), 0);
  size_t n = 0;
  uint8_t *b = endless_loop_model(&n);
  f = fopen(model, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  ck_assert_int_eq(fclose(f), 0);
  free(b);
  const char *extra[] = {"--config", cfg, "--model-dir", dir, NULL};
  ck_assert_msg(ar_td_start(&dmn, "16M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  ar_client_t *c = client();
  ar_client_model_t info;
  ck_assert_msg(ar_client_load(c, "endless", model, NULL, NULL, &info, msg, sizeof msg) == 0, "load: %s", msg);
  const int32_t i0 = 0;
  ar_client_tensor_t t = info.inputs[0];
  t.data = &i0;
  t.bytes = sizeof i0;
  ar_client_result_t r;
  int rc = ar_client_invoke(c, "endless", &t, 1, &r, msg, sizeof msg);
  ck_assert_int_ne(rc, 0);
  ck_assert_msg(strstr(msg, "model 'endless': invoke failed: subgraph 0, operator 0 (WHILE): the condition "
                            "(subgraph 1) still holds after 100 iterations (max_while_iterations)") != NULL,
                "%s", msg);
  printf("while bound: %s\n", msg);
  ping_ok();
  ar_client_close(c);
  stop();
  unlink(model);
  unlink(cfg);
  rmdir(dir);
}
END_TEST

static Suite *daemon_suite(void) {
  Suite *s = suite_create("daemon");
  TCase *ti = tcase_create("integer_io");
  tcase_set_timeout(ti, 120);
  tcase_add_test(ti, integer_tensors_and_quantization_round_trip);
  tcase_add_test(ti, zero_element_tensors_invoke);
  tcase_add_test(ti, client_reads_replies_however_they_arrive);
  suite_add_tcase(s, ti);
  TCase *tr = tcase_create("reload_and_paths");   /* reload orders fixed by the test gate; model paths */
  tcase_set_timeout(tr, 120);
  tcase_add_test(tr, reload_does_not_bring_back_a_model_unloaded_during_it);
  tcase_add_test(tr, sighup_during_a_reload_runs_after_it);
  tcase_add_test(tr, non_utf8_model_paths_are_refused);
  tcase_add_test(tr, config_errors_name_the_file_once);
  suite_add_tcase(s, tr);
  TCase *tc = tcase_create("models");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, share_group_goldens_and_pool_layout);
  tcase_add_test(tc, same_file_twice_shares_mapping);
  tcase_add_test(tc, group_region_grows_when_a_larger_member_joins);
  tcase_add_test(tc, group_grows_while_invokes_are_in_flight);
  tcase_add_test(tc, pipelined_invokes_with_backpressure);
  tcase_add_test(tc, bad_invoke_inputs);
  tcase_add_test(tc, load_malformed_model_files);
  tcase_add_test(tc, load_that_does_not_fit);
  tcase_add_test(tc, weights_modes_in_stats);
  tcase_add_test(tc, unload_during_stream_of_invokes);
  tcase_add_test(tc, concurrent_clients_match_goldens);
  tcase_add_test(tc, prepare_failure_is_emodel);
  tcase_add_test(tc, pool_bytes_option_range);
  tcase_add_test(tc, startup_with_a_failing_model_exits_1);
  tcase_add_test(tc, check_config_compacts_after_group_growth);
  tcase_add_test(tc, reload_is_a_transaction_and_keeps_runtime_loads);
  tcase_add_test(tc, reload_changing_group_never_fails_an_invoke);
  tcase_add_test(tc, config_weights_default_and_reload);
  tcase_add_test(tc, busy_poll_and_inline_invokes_match_goldens);
  tcase_add_test(tc, bytes_path_reuses_its_blocks);
  tcase_add_test(tc, invokes_of_a_vanished_client_are_dropped);
  tcase_add_test(tc, while_bound_from_config_and_its_reason_reach_the_client);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(daemon_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
