/* check_resize.c - resizable inputs through the daemon: a model whose input shape_signature is
 * [-1,4,4,3] (tests/ar_test_model.h) loaded in a 64 KiB pool and invoked with batch 1, 4, 2, 8, 1
 * by simply sending those shapes: outputs equal the hand-computed ones per item, the model's
 * region follows the batch and the pool's used bytes return to the first figure, no heap
 * allocation in the invokes (the daemon's counter); a batch the pool cannot hold is ENOSPC with
 * the bytes needed and leaves the model working; ResizeInput does the same explicitly. A peer that
 * is not an admin grows a region only up to max_resize_activation_bytes (EPERM past it). A growth
 * that needs more than the largest free block but no more than the free bytes compacts the pool first.
 * A model with 20 resizable graph inputs takes a request's shapes for every one of them.
 */
#include "config.h"

#include <check.h>
#include <stdbool.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/ar_client.h"
#include "common/ar_error.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_model.h"
#include "tests/ar_test_util.h"

#define ITEM (AR_TM_BATCH_H * AR_TM_BATCH_W * AR_TM_BATCH_C)

static json_t *stats(ar_client_t *c) {
  char *s = NULL, msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_client_stats_json(c, &s, msg, sizeof(msg)), 0);
  json_error_t err;
  json_t *j = json_loads(s, 0, &err);
  free(s);
  ck_assert_ptr_nonnull(j);
  return j;
}

static uint64_t pool_used(ar_client_t *c) {
  json_t *st = stats(c);
  uint64_t u = (uint64_t)json_integer_value(json_object_get(json_object_get(st, "pool"), "used_bytes"));
  json_decref(st);
  return u;
}

static json_t *model_stats(json_t *st, const char *name) {
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(st, "models"), i, m)
    if (strcmp(json_string_value(json_object_get(m, "name")), name) == 0) return m;
  return NULL;
}

/* Invoke "b" with `nb` items (item k = items[(k + rot) % 8]) and check every output row. */
static int invoke_batch(ar_client_t *c, int nb, int rot, float (*items)[ITEM], float (*want)[AR_TM_BATCH_OUT],
                        char *msg, size_t msg_bytes) {
  float *x = malloc((size_t)nb * ITEM * sizeof(float));
  ck_assert_ptr_nonnull(x);
  for (int b = 0; b < nb; b++) memcpy(x + (size_t)b * ITEM, items[(b + rot) % 8], sizeof(float) * ITEM);
  ar_client_tensor_t t;
  memset(&t, 0, sizeof t);
  t.dtype = AR_CLIENT_FLOAT32;
  t.rank = 4;
  t.dims[0] = nb, t.dims[1] = AR_TM_BATCH_H, t.dims[2] = AR_TM_BATCH_W, t.dims[3] = AR_TM_BATCH_C;
  t.data = x;
  t.bytes = (uint64_t)nb * ITEM * sizeof(float);
  ar_client_result_t r;
  int rc = ar_client_invoke(c, "b", &t, 1, &r, msg, msg_bytes);
  free(x);
  if (rc != 0) return rc;
  ck_assert_int_eq(r.n_outputs, 1);
  ck_assert_int_eq(r.outputs[0].rank, 2);
  ck_assert_int_eq(r.outputs[0].dims[0], nb);
  ck_assert_int_eq(r.outputs[0].dims[1], AR_TM_BATCH_OUT);
  ck_assert_uint_eq(r.outputs[0].bytes, (uint64_t)nb * AR_TM_BATCH_OUT * sizeof(float));
  const float *y = r.outputs[0].data;
  for (int b = 0; b < nb; b++)
    for (int j = 0; j < AR_TM_BATCH_OUT; j++) {
      float w = want[(b + rot) % 8][j];
      ck_assert_msg(fabsf(y[b * AR_TM_BATCH_OUT + j] - w) <= 1e-5f * (1.0f + fabsf(w)),
                    "batch %d item %d y[%d] = %g, by hand %g", nb, b, j, y[b * AR_TM_BATCH_OUT + j], w);
    }
  ar_client_result_free(&r);
  return 0;
}

/* Write the resize model (ar_tm_batch_model) to DIR/batch.tflite; its path into path[0..n). */
static void write_batch_model(const char *dir, char *path, size_t n) {
  size_t bytes = 0;
  uint8_t *file = ar_tm_batch_model(&bytes);
  snprintf(path, n, "%s/batch.tflite", dir);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(file, 1, bytes, f), bytes);
  ck_assert_int_eq(fclose(f), 0);
  free(file);
}

/* A new temporary directory (`dir`, a mkdtemp template) holding the resize model (its path into
 * path[0..np)), and its configuration file DIR/arenad.json (path into cfg[0..nc)) opened for the
 * caller to write and close. */
static FILE *batch_dir_config(char *dir, char *path, size_t np, char *cfg, size_t nc) {
  ck_assert_ptr_nonnull(mkdtemp(dir));
  write_batch_model(dir, path, np);
  snprintf(cfg, nc, "%s/arenad.json", dir);
  FILE *f = fopen(cfg, "w");
  ck_assert_ptr_nonnull(f);
  return f;
}

/* The end of a test that began with batch_dir_config: close client `c`, stop daemon `d` (asserting
 * it exits cleanly) and remove the configuration, the model and the directory. */
static void batch_dir_close(ar_client_t *c, ar_test_daemon_t *d, const char *dir, const char *path,
                            const char *cfg) {
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(d), 0);
  unlink(cfg);
  unlink(path);
  rmdir(dir);
}

START_TEST(batch_follows_the_request_and_pool_returns) {
  ar_test_daemon_t d;
  ck_assert_msg(ar_td_start(&d, "64K", NULL) == 0, "arenad did not start (log %s)", d.log);
  char path[600], msg[AR_MSG_BYTES];
  write_batch_model(d.dir, path, sizeof path);

  static float items[8][ITEM], want[8][AR_TM_BATCH_OUT];
  uint64_t seed = 12345;
  for (int b = 0; b < 8; b++) {
    for (int i = 0; i < ITEM; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      items[b][i] = (float)((int)(seed >> 40) % 2001 - 1000) / 500.0f;
    }
    ar_tm_batch_by_hand(items[b], want[b]);
  }
  ar_client_t *c = NULL;
  ck_assert_int_eq(ar_client_connect(d.socket, &c, msg, sizeof msg), 0);
  ar_client_model_t info;
  int rc = ar_client_load(c, "b", path, NULL, NULL, &info, msg, sizeof msg);
  ck_assert_msg(rc == 0, "load: %s", msg);
  uint64_t used0 = pool_used(c), arena1 = info.arena_bytes;

  static const int batches[] = {1, 4, 2, 8, 1};
  uint64_t used_at[5], arena_at[5];
  for (int s = 0; s < 5; s++) {
    for (int rep = 0; rep < 3; rep++) {
      rc = invoke_batch(c, batches[s], rep + s, items, want, msg, sizeof msg);
      ck_assert_msg(rc == 0, "batch %d: %s", batches[s], msg);
    }
    json_t *st = stats(c);
    json_t *m = model_stats(st, "b");
    used_at[s] = (uint64_t)json_integer_value(json_object_get(json_object_get(st, "pool"), "used_bytes"));
    arena_at[s] = (uint64_t)json_integer_value(json_object_get(m, "arena_bytes"));
    json_t *allocs = json_object_get(m, "heap_allocs_in_invoke");
    printf("daemon batch %d: model arena %llu B, pool used %llu B, heap allocations in invokes so far %s\n",
           batches[s], (unsigned long long)arena_at[s], (unsigned long long)used_at[s],
           json_is_integer(allocs) ? (json_integer_value(allocs) == 0 ? "0" : "NOT 0") : "not measured");
    /* -1: not measured (sanitizer builds replace the allocator the daemon counts). */
    if (json_is_integer(allocs) && json_integer_value(allocs) != -1) ck_assert_int_eq(json_integer_value(allocs), 0);
    json_decref(st);
  }
  ck_assert_uint_eq(arena_at[0], arena1);
  ck_assert_uint_gt(arena_at[1], arena_at[0]);
  ck_assert_uint_gt(arena_at[3], arena_at[1]);
  ck_assert_uint_gt(used_at[3], used_at[0]);
  ck_assert_uint_eq(arena_at[4], arena1);
  ck_assert_uint_eq(used_at[0], used0);
  ck_assert_uint_eq(used_at[4], used0);   /* back to the first figure */

  /* A batch the 64 KiB pool cannot hold (its input alone is 96 KiB): ENOSPC naming the bytes; the
   * model keeps working. */
  rc = invoke_batch(c, 512, 0, items, want, msg, sizeof msg);
  ck_assert_int_eq(rc, AR_ENOSPC);
  ck_assert_msg(strstr(msg, "the new input shapes need an activation region of") != NULL, "%s", msg);
  ck_assert_msg(strstr(msg, "; smaller shapes, a larger pool (pool_bytes in arenad's config, or -p) or unloading a "
                            "model (arenactl unload NAME) makes room") != NULL, "%s", msg);
  printf("batch 512: %s\n", msg);
  ck_assert_int_eq(invoke_batch(c, 2, 1, items, want, msg, sizeof msg), 0);
  ck_assert_int_eq(invoke_batch(c, 1, 3, items, want, msg, sizeof msg), 0);
  ck_assert_uint_eq(pool_used(c), used0);

  /* ResizeInput: the explicit form; the plan and region are ready before the invoke. */
  const int64_t b4[4] = {4, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C};
  rc = ar_client_resize_input(c, "b", 0, b4, 4, &info, msg, sizeof msg);
  ck_assert_msg(rc == 0, "resize: %s", msg);
  ck_assert_uint_eq(info.arena_bytes, arena_at[1]);
  ck_assert_int_eq(info.inputs[0].dims[0], 4);
  ck_assert_int_eq(info.outputs[0].dims[0], 4);
  ck_assert_uint_ge(info.activation_bytes, info.arena_bytes);
  ck_assert_int_eq(invoke_batch(c, 4, 2, items, want, msg, sizeof msg), 0);
  const int64_t fixed[4] = {4, 5, AR_TM_BATCH_W, AR_TM_BATCH_C}, b64[4] = {512, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C};
  ck_assert_int_eq(ar_client_resize_input(c, "b", 0, fixed, 4, NULL, msg, sizeof msg), AR_ESHAPE);
  ck_assert_msg(strstr(msg, "dim 1 is 5, but the model fixes it at 4") != NULL, "%s", msg);
  ck_assert_int_eq(ar_client_resize_input(c, "b", 0, b64, 4, NULL, msg, sizeof msg), AR_ENOSPC);
  /* Out-of-range dims are named as sent, with the allowed range (not narrowed to -1 first). */
  const int64_t bad_dims[3] = {(int64_t)1 << 40, (int64_t)1 << 32, -5};
  const char *bad_text[3] = {"dim 0 is 1099511627776 (a dim must be 1 to 2147483647)",
                             "dim 0 is 4294967296 (a dim must be 1 to 2147483647)",
                             "dim 0 is -5 (a dim must be 1 to 2147483647)"};
  for (int k = 0; k < 3; k++) {
    const int64_t bad[4] = {bad_dims[k], AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C};
    ck_assert_int_eq(ar_client_resize_input(c, "b", 0, bad, 4, NULL, msg, sizeof msg), AR_ESHAPE);
    ck_assert_msg(strstr(msg, bad_text[k]) != NULL, "%s", msg);
  }
  ck_assert_int_eq(ar_client_resize_input(c, "b", 1, b4, 4, NULL, msg, sizeof msg), AR_EINVAL);
  ck_assert_int_eq(ar_client_resize_input(c, "nope", 0, b4, 4, NULL, msg, sizeof msg), AR_ENOENT);
  /* A name that is not UTF-8 comes back escaped, so Status.message stays a valid proto3 string. */
  ck_assert_int_eq(ar_client_resize_input(c, "\xff\xfe", 0, b4, 4, NULL, msg, sizeof msg), AR_ENOENT);
  ck_assert_msg(strstr(msg, "no model named '\\xff\\xfe'") != NULL, "%s", msg);
  const int64_t b1[4] = {1, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C};
  ck_assert_int_eq(ar_client_resize_input(c, "b", 0, b1, 4, &info, msg, sizeof msg), 0);
  ck_assert_uint_eq(info.arena_bytes, arena1);
  ck_assert_uint_eq(pool_used(c), used0);

  ck_assert_int_eq(ar_client_unload(c, "b", msg, sizeof msg), 0);
  ar_client_close(c);
  unlink(path);
  ck_assert_int_eq(ar_td_stop(&d), 0);
}
END_TEST

/* A peer that is not an admin (admin_uids / admin_gids name others; the model comes from the
 * configuration) may grow the model's region up to max_resize_activation_bytes (64K here) and no
 * further: batch 8 runs, batch 512 (its input alone is 96 KiB; the 1 MiB pool could hold it) is
 * EPERM naming the key, and the model keeps serving at its first size with the pool's used bytes
 * back where they were. */
START_TEST(peer_not_admin_grows_a_region_only_so_far) {
  char dir[] = "/tmp/check_resize_XXXXXX", path[600], cfg[600], msg[AR_MSG_BYTES];
  FILE *f = batch_dir_config(dir, path, sizeof path, cfg, sizeof cfg);
  const unsigned other = (unsigned)geteuid() + 4242u;   /* nobody this test runs as */
  fprintf(f, "{\"admin_uids\": [%u], \"admin_gids\": [%u], \"model_dirs\": [\"%s\"], "
             "\"max_resize_activation_bytes\": \"64K\", \"models\": [{\"name\": \"b\", \"path\": \"%s\"}]}\n",
          other, (unsigned)getegid() + 4242u, dir, path);
  ck_assert_int_eq(fclose(f), 0);
  static float items[8][ITEM], want[8][AR_TM_BATCH_OUT];
  uint64_t seed = 777;
  for (int b = 0; b < 8; b++) {
    for (int i = 0; i < ITEM; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      items[b][i] = (float)((int)(seed >> 40) % 2001 - 1000) / 500.0f;
    }
    ar_tm_batch_by_hand(items[b], want[b]);
  }
  ar_test_daemon_t d;
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&d, "1M", extra) == 0, "arenad did not start (log %s)", d.log);
  ar_client_t *c = NULL;
  ck_assert_int_eq(ar_client_connect(d.socket, &c, msg, sizeof msg), 0);
  /* the premise: this peer is not an admin */
  ck_assert_int_eq(ar_client_unload(c, "nope", msg, sizeof msg), AR_EPERM);
  /* the configured model loads after the socket listens: EAGAIN (retry) until it is ready */
  int rc = AR_EAGAIN;
  for (int tries = 0; rc == AR_EAGAIN && tries < 3000; tries++) {
    rc = invoke_batch(c, 1, 0, items, want, msg, sizeof msg);
    if (rc == AR_EAGAIN) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  ck_assert_msg(rc == 0, "batch 1: %s", msg);
  const uint64_t used0 = pool_used(c);
  rc = invoke_batch(c, 8, 1, items, want, msg, sizeof msg);
  ck_assert_msg(rc == 0, "batch 8 (within 64K): %s", msg);
  rc = invoke_batch(c, 512, 0, items, want, msg, sizeof msg);
  ck_assert_int_eq(rc, AR_EPERM);
  ck_assert_msg(strstr(msg, "above max_resize_activation_bytes 65536 for peers that are not admins") != NULL, "%s", msg);
  const int64_t b512[4] = {512, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C};
  ck_assert_int_eq(ar_client_resize_input(c, "b", 0, b512, 4, NULL, msg, sizeof msg), AR_EPERM);
  ck_assert_int_eq(invoke_batch(c, 1, 2, items, want, msg, sizeof msg), 0);
  ck_assert_uint_eq(pool_used(c), used0);
  batch_dir_close(c, &d, dir, path, cfg);
}
END_TEST

/* A region a peer that is not an admin grew with its input shapes (ResizeInput to batch 8, within
 * max_resize_activation_bytes) is given back when that peer disconnects: the model goes back to
 * its stored shapes and the group's region shrinks, so the pool's used bytes return to what they
 * were at batch 1 (polled from another connection, until they do, at most 30 s); the model then
 * serves batch 1 and batch 8 again. Failed before: the region stayed grown after the peer left. */
START_TEST(peer_not_admin_region_is_released_when_it_leaves) {
  char dir[] = "/tmp/check_resize_XXXXXX", path[600], cfg[600], msg[AR_MSG_BYTES];
  FILE *f = batch_dir_config(dir, path, sizeof path, cfg, sizeof cfg);
  fprintf(f, "{\"admin_uids\": [%u], \"admin_gids\": [%u], \"model_dirs\": [\"%s\"], \"stats_rate_per_s\": 0, "
             "\"max_resize_activation_bytes\": \"64K\", \"models\": [{\"name\": \"b\", \"path\": \"%s\"}]}\n",
          (unsigned)geteuid() + 4242u, (unsigned)getegid() + 4242u, dir, path);
  ck_assert_int_eq(fclose(f), 0);
  static float items[8][ITEM], want[8][AR_TM_BATCH_OUT];
  uint64_t seed = 4242;
  for (int b = 0; b < 8; b++) {
    for (int i = 0; i < ITEM; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      items[b][i] = (float)((int)(seed >> 40) % 2001 - 1000) / 500.0f;
    }
    ar_tm_batch_by_hand(items[b], want[b]);
  }
  ar_test_daemon_t d;
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&d, "1M", extra) == 0, "arenad did not start (log %s)", d.log);
  ar_client_t *c = NULL, *other = NULL;
  ck_assert_int_eq(ar_client_connect(d.socket, &c, msg, sizeof msg), 0);
  ck_assert_int_eq(ar_client_unload(c, "nope", msg, sizeof msg), AR_EPERM);   /* not an admin */
  int rc = AR_EAGAIN;
  for (int tries = 0; rc == AR_EAGAIN && tries < 3000; tries++) {
    rc = invoke_batch(c, 1, 0, items, want, msg, sizeof msg);
    if (rc == AR_EAGAIN) nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  ck_assert_msg(rc == 0, "batch 1: %s", msg);
  const uint64_t used1 = pool_used(c);
  const int64_t b8[4] = {8, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C};
  ck_assert_msg(ar_client_resize_input(c, "b", 0, b8, 4, NULL, msg, sizeof msg) == 0, "resize to 8: %s", msg);
  const uint64_t used8 = pool_used(c);
  ck_assert_uint_gt(used8, used1);   /* the premise: batch 8 grew the region */
  ck_assert_int_eq(ar_client_connect(d.socket, &other, msg, sizeof msg), 0);
  ar_client_close(c);
  uint64_t used = used8;
  for (int tries = 0; used != used1 && tries < 3000; tries++) {
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    used = pool_used(other);
  }
  ck_assert_msg(used == used1, "pool used %" PRIu64 " after the peer left, %" PRIu64 " before it grew the region "
                "(%" PRIu64 " grown)", used, used1, used8);
  ck_assert_msg(invoke_batch(other, 1, 3, items, want, msg, sizeof msg) == 0, "batch 1 after: %s", msg);
  ck_assert_msg(invoke_batch(other, 8, 5, items, want, msg, sizeof msg) == 0, "batch 8 after: %s", msg);
  batch_dir_close(other, &d, dir, path, cfg);
}
END_TEST

static uint64_t pool_figure(ar_client_t *c, const char *key) {
  json_t *st = stats(c);
  uint64_t v = (uint64_t)json_integer_value(json_object_get(json_object_get(st, "pool"), key));
  json_decref(st);
  return v;
}

/* A region growth that fails only because the free bytes are in more than one block compacts the
 * pool first, as a load does: the batch model's region for batch n needs more than either free
 * block (a hole left by unloaded models below it, the tail above) but no more than both; before,
 * that was ENOSPC "largest free block is ..." with enough bytes free. */
START_TEST(growth_compacts_a_fragmented_pool) {
  char dir[] = "/tmp/check_resize_XXXXXX", path[600], cfg[600], msg[AR_MSG_BYTES];
  FILE *f = batch_dir_config(dir, path, sizeof path, cfg, sizeof cfg);
  fprintf(f, "{\"compact_after_unload\": false, \"model_dirs\": [\"%s\"], \"models\": []}\n", dir);
  ck_assert_int_eq(fclose(f), 0);
  const char *extra[] = {"--config", cfg, NULL};
  /* The region each batch needs, measured in a pool with room for all. */
  enum { NB = 160 };
  uint64_t region[NB + 1];
  ar_test_daemon_t d;
  ar_client_t *c = NULL;
  ar_client_model_t info;
  ck_assert_msg(ar_td_start(&d, "1M", extra) == 0, "arenad did not start (log %s)", d.log);
  ck_assert_int_eq(ar_client_connect(d.socket, &c, msg, sizeof msg), 0);
  ck_assert_msg(ar_client_load(c, "b", path, NULL, NULL, &info, msg, sizeof msg) == 0, "load: %s", msg);
  for (int n = 1; n <= NB; n++) {
    const int64_t dims[4] = {n, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C};
    ck_assert_msg(ar_client_resize_input(c, "b", 0, dims, 4, &info, msg, sizeof msg) == 0, "batch %d: %s", n, msg);
    region[n] = info.activation_bytes;
  }
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&d), 0);
  /* 64 KiB: three fillers, b, one more filler; the three first unloaded leave a hole below b. */
  ck_assert_msg(ar_td_start(&d, "64K", extra) == 0, "arenad did not start (log %s)", d.log);
  ck_assert_int_eq(ar_client_connect(d.socket, &c, msg, sizeof msg), 0);
  const char *order[] = {"f1", "f2", "f3", "b", "f4"};
  for (int i = 0; i < 5; i++)
    ck_assert_msg(ar_client_load(c, order[i], path, NULL, NULL, NULL, msg, sizeof msg) == 0, "load %s: %s", order[i],
                  msg);
  for (int i = 0; i < 3; i++) ck_assert_int_eq(ar_client_unload(c, order[i], msg, sizeof msg), 0);
  const uint64_t free_bytes = pool_figure(c, "free_bytes"), largest = pool_figure(c, "largest_free_bytes");
  ck_assert_uint_eq(pool_figure(c, "free_blocks"), 2);
  ck_assert_uint_eq(pool_figure(c, "compactions"), 0);
  int n = 0;
  for (int k = 1; k <= NB && n == 0; k++)
    if (region[k] > largest && region[k] <= free_bytes) n = k;
  ck_assert_msg(n > 0, "no batch up to %d needs between %llu and %llu bytes (batch 1 %llu, %d %llu)", NB,
                (unsigned long long)largest, (unsigned long long)free_bytes, (unsigned long long)region[1], NB,
                (unsigned long long)region[NB]);
  printf("fragmented pool: %llu bytes free, largest block %llu; batch %d needs %llu\n",
         (unsigned long long)free_bytes, (unsigned long long)largest, n, (unsigned long long)region[n]);
  const int64_t dims[4] = {n, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C};
  int rc = ar_client_resize_input(c, "b", 0, dims, 4, &info, msg, sizeof msg);
  ck_assert_msg(rc == 0, "resize to batch %d: %s", n, msg);
  ck_assert_uint_eq(info.activation_bytes, region[n]);
  ck_assert_int_eq(info.inputs[0].dims[0], n);
  /* One compaction ran (b and f4 slid down over the hole); b's previous region, freed after the
   * growth, is the only free space below the new one (compact_after_unload is off). */
  ck_assert_uint_eq(pool_figure(c, "compactions"), 1);
  ck_assert_uint_gt(pool_figure(c, "compacted_bytes"), 0);
  ck_assert_uint_eq(pool_figure(c, "free_bytes"), free_bytes + region[1] - region[n]);
  /* The model and the one that moved with the compaction compute right after it. */
  static float items[8][ITEM], want[8][AR_TM_BATCH_OUT];
  for (int b = 0; b < 8; b++) {
    for (int i = 0; i < ITEM; i++) items[b][i] = (float)((b * 7 + i * 3) % 17 - 8) / 4.0f;
    ar_tm_batch_by_hand(items[b], want[b]);
  }
  rc = invoke_batch(c, n, 1, items, want, msg, sizeof msg);
  ck_assert_msg(rc == 0, "batch %d after the compaction: %s", n, msg);
  batch_dir_close(c, &d, dir, path, cfg);
}
END_TEST

/* A model with more graph inputs than the 16 the daemon once kept shapes for: NIN inputs
 * x_i [1,2] (shape_signature [-1,2]), each -> RELU -> y_i; the graph outputs are y_0 and
 * y_15..y_19 (the C client describes AR_CLIENT_MAX_IO outputs). One invoke sends every input with
 * its own batch (1 + i % 3): every output has its input's batch and RELU's values. */
#define NIN 20
#define NOUT 6
static int out_of(int j) { return j == 0 ? 0 : NIN - NOUT + j; }
START_TEST(every_graph_input_resizes_past_sixteen) {
  ar_tm_tensor_t t[2 * NIN];
  ar_tm_op_t ops[NIN];
  int32_t ins[NIN], outs[NOUT];
  static char names[2 * NIN][16];
  for (int i = 0; i < NIN; i++) {
    snprintf(names[2 * i], sizeof names[0], "x%d", i);
    snprintf(names[2 * i + 1], sizeof names[0], "y%d", i);
    for (int k = 0; k < 2; k++)
      t[2 * i + k] = (ar_tm_tensor_t){.name = names[2 * i + k], .dtype = AR_DTYPE_FLOAT32, .rank = 2, .dims = {1, 2},
                                      .has_sig = true, .sig = {-1, 2}};
    ops[i] = (ar_tm_op_t){.builtin = 19 /* RELU */, .n_in = 1, .n_out = 1, .in = {2 * i}, .out = {2 * i + 1}};
    ins[i] = 2 * i;
  }
  for (int j = 0; j < NOUT; j++) outs[j] = 2 * out_of(j) + 1;
  size_t bytes = 0;
  uint8_t *file = ar_tm_build(t, 2 * NIN, ops, NIN, ins, NIN, outs, NOUT, &bytes);
  ar_test_daemon_t d;
  ck_assert_msg(ar_td_start(&d, "1M", NULL) == 0, "arenad did not start (log %s)", d.log);
  char path[600], msg[AR_MSG_BYTES];
  snprintf(path, sizeof path, "%s/wide.tflite", d.dir);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(file, 1, bytes, f), bytes);
  ck_assert_int_eq(fclose(f), 0);
  free(file);
  ar_client_t *c = NULL;
  ck_assert_int_eq(ar_client_connect(d.socket, &c, msg, sizeof msg), 0);
  ck_assert_msg(ar_client_load(c, "wide", path, NULL, NULL, NULL, msg, sizeof msg) == 0, "load: %s", msg);
  static float x[NIN][6];
  ar_client_tensor_t in[NIN];
  memset(in, 0, sizeof in);
  for (int i = 0; i < NIN; i++) {
    const int nb = 1 + i % 3;
    for (int j = 0; j < 2 * nb; j++) x[i][j] = (float)((i * 5 + j * 3) % 7 - 3) * 0.5f;
    in[i].dtype = AR_CLIENT_FLOAT32;
    in[i].rank = 2, in[i].dims[0] = nb, in[i].dims[1] = 2;
    in[i].data = x[i];
    in[i].bytes = (uint64_t)nb * 2 * sizeof(float);
  }
  ar_client_result_t r;
  ck_assert_msg(ar_client_invoke(c, "wide", in, NIN, &r, msg, sizeof msg) == 0, "invoke: %s", msg);
  ck_assert_int_eq(r.n_outputs, NOUT);
  for (int j = 0; j < NOUT; j++) {
    const int i = out_of(j), nb = 1 + i % 3;
    ck_assert_msg(r.outputs[j].rank == 2 && r.outputs[j].dims[0] == nb && r.outputs[j].dims[1] == 2,
                  "output %d (y%d): rank %d, dims[0] %lld (batch %d sent)", j, i, r.outputs[j].rank,
                  (long long)r.outputs[j].dims[0], nb);
    const float *y = r.outputs[j].data;
    for (int e = 0; e < 2 * nb; e++) ck_assert_float_eq(y[e], x[i][e] > 0 ? x[i][e] : 0.0f);
  }
  ar_client_result_free(&r);
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&d), 0);
  unlink(path);
}
END_TEST

/* ListModels while another client's invokes re-plan the model (batch 1 <-> 4): every description
 * shows one whole plan's shapes (input batch 1 with output batch 1, or 4 with 4), never a mix, and
 * the daemon reads them from its own copy, not from the interpreter a worker is re-planning (the
 * ThreadSanitizer run of this suite, ./dev tsan check_resize, holds it to that). */
typedef struct { const char *socket; int rounds; int failed; char why[AR_MSG_BYTES + 64]; } resizer_t;

static void *resizer(void *arg) {
  resizer_t *r = arg;
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  if (ar_client_connect(r->socket, &c, msg, sizeof msg) != 0) {
    r->failed = 1;
    snprintf(r->why, sizeof r->why, "connect: %s", msg);
    return NULL;
  }
  static float items[8][ITEM], want[8][AR_TM_BATCH_OUT];
  for (int b = 0; b < 8; b++) {
    for (int i = 0; i < ITEM; i++) items[b][i] = (float)((b * 5 + i * 7) % 13 - 6) / 4.0f;
    ar_tm_batch_by_hand(items[b], want[b]);
  }
  for (int k = 0; k < r->rounds && !r->failed; k++)
    if (invoke_batch(c, k % 2 ? 4 : 1, k, items, want, msg, sizeof msg) != 0) {
      r->failed = 1;
      snprintf(r->why, sizeof r->why, "invoke %d: %s", k, msg);
    }
  ar_client_close(c);
  return NULL;
}

START_TEST(descriptions_are_whole_while_a_worker_replans) {
  ar_test_daemon_t d;
  ck_assert_msg(ar_td_start(&d, "1M", NULL) == 0, "arenad did not start (log %s)", d.log);
  char path[600], msg[AR_MSG_BYTES];
  write_batch_model(d.dir, path, sizeof path);
  ar_client_t *c = NULL;
  ck_assert_int_eq(ar_client_connect(d.socket, &c, msg, sizeof msg), 0);
  ck_assert_msg(ar_client_load(c, "b", path, NULL, NULL, NULL, msg, sizeof msg) == 0, "load: %s", msg);
  resizer_t r = {.socket = d.socket, .rounds = 200};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, resizer, &r), 0);
  int seen[2] = {0, 0}, lists = 0;
  bool joined = false;
  while (!joined && lists < 5000) {
    ar_client_model_t *ms = NULL;
    size_t n = 0;
    ck_assert_msg(ar_client_list(c, &ms, &n, msg, sizeof msg) == 0, "list: %s", msg);
    ck_assert_uint_eq(n, 1);
    const int64_t bin = ms[0].inputs[0].dims[0], bout = ms[0].outputs[0].dims[0];
    ck_assert_msg((bin == 1 || bin == 4) && bout == bin, "listed input batch %lld with output batch %lld",
                  (long long)bin, (long long)bout);
    seen[bin == 4]++;
    free(ms);
    lists++;
    joined = pthread_tryjoin_np(th, NULL) == 0;
  }
  if (!joined) pthread_join(th, NULL);
  ck_assert_msg(!r.failed, "%s", r.why);
  printf("descriptions during re-plans: %d lists, batch 1 seen %d times, batch 4 %d times\n", lists, seen[0],
         seen[1]);
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&d), 0);
  unlink(path);
}
END_TEST

int main(void) {
  Suite *s = suite_create("resize");
  TCase *tc = tcase_create("daemon");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, batch_follows_the_request_and_pool_returns);
  tcase_add_test(tc, peer_not_admin_grows_a_region_only_so_far);
  tcase_add_test(tc, peer_not_admin_region_is_released_when_it_leaves);
  tcase_add_test(tc, growth_compacts_a_fragmented_pool);
  tcase_add_test(tc, every_graph_input_resizes_past_sixteen);
  tcase_add_test(tc, descriptions_are_whole_while_a_worker_replans);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
