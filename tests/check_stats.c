/* check_stats.c - GetStats that costs the event loop nothing it need not, against a real arenad
 * (daemon/ar_stats.c):
 *   - the expensive figures (mincore over the pool and the model copies, smaps) are one walk of the
 *     stats thread, shared by every GetStats while it is younger than stats_refresh_ms and the pool
 *     and the models are unchanged: 200 GetStats from 8 connections cause one walk (counted by
 *     daemon.stats_walks), an unload causes the next, and the snapshot's age is in the reply;
 *   - the per-uid rate limit of GetStats and GetPlan for peers that are not admins: past its burst
 *     a request is refused with EBUSY naming stats_rate_per_s and stats_burst, on every connection of
 *     that uid, while Ping and invokes are served; an admin's GetStats past it wait their turn.
 * No timing is asserted: the refresh period is an hour, and the rate-limit test allows for the
 * tokens the time it took may have refilled.
 */
#include "config.h"

#include <check.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clients/ar_client.h"
#include "common/ar_error.h"
#include "tests/ar_test_client.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_util.h"

static ar_test_daemon_t dmn;
static char cfg_dir[64], cfg_path[128];

/* Start arenad with the JSON object members `keys` (may be "") and the models `models` (a JSON
 * array text), then wait until the configured models are listed. */
static void start(const char *keys, const char *models, size_t n_models) {
  snprintf(cfg_dir, sizeof(cfg_dir), "/tmp/check_stats.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(cfg_dir));
  snprintf(cfg_path, sizeof(cfg_path), "%s/arenad.json", cfg_dir);
  FILE *f = fopen(cfg_path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{%s%s\"models\": %s}\n", keys, keys[0] ? ", " : "", models);
  ck_assert_int_eq(fclose(f), 0);
  const char *extra[] = {"--config", cfg_path, NULL};
  ck_assert_msg(ar_td_start(&dmn, "96M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  ar_tc_wait_models(dmn.socket, n_models);
}

static void stop(void) {
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
  unlink(cfg_path);
  rmdir(cfg_dir);
}

static ar_client_t *client(void) {
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  ck_assert_msg(ar_client_connect(dmn.socket, &c, msg, sizeof(msg)) == 0, "connect: %s", msg);
  return c;
}

enum { POLLERS = 8, POLLS = 25 };

static void *poll_stats(void *arg) {
  (void)arg;
  ar_client_t *c = client();
  long ok = 0;
  for (int i = 0; i < POLLS; i++) {
    char *s = NULL, msg[AR_MSG_BYTES];
    if (ar_client_stats_json(c, &s, msg, sizeof(msg)) == 0) ok++;
    free(s);
  }
  ar_client_close(c);
  return (void *)ok;
}

/* One walk serves every GetStats of a burst: stats_refresh_ms is an hour here, so after the first
 * GetStats (which waits for the walk it starts) the 200 that follow from 8 connections are answered
 * from that snapshot; an unload changes the pool, so the next GetStats walks again and sees it.
 * Failed before: the walk ran on the loop for every GetStats (no stats_walks, no snapshot age). */
START_TEST(a_burst_of_stats_costs_one_walk) {
  char models[1200];
  snprintf(models, sizeof(models),
           "[{\"name\": \"face\", \"path\": \"%s\"}, {\"name\": \"palm\", \"path\": \"%s\"}]",
           ar_tc_model_path("face_detection_short_range"), ar_tc_model_path("palm_detection_lite"));
  start("\"stats_refresh_ms\": 3600000, \"stats_rate_per_s\": 0", models, 2);
  ar_client_t *c = client();
  json_t *st = ar_tc_stats(c);
  json_t *d = json_object_get(st, "daemon"), *mem = json_object_get(st, "memory");
  ck_assert_msg(json_is_integer(json_object_get(d, "stats_walks")), "no daemon.stats_walks");
  ck_assert_uint_eq(ar_tc_ji(d, "stats_walks"), 1);
  ck_assert_uint_eq(ar_tc_ji(d, "stats_refresh_ms"), 3600000);
  ck_assert_msg(json_is_integer(json_object_get(mem, "snapshot_age_ms")), "no memory.snapshot_age_ms");
  ck_assert_uint_eq(ar_tc_ji(mem, "model_mappings"), 2);
  /* The figures of one walk add up, as they did when measured on the loop. */
  uint64_t parts = ar_tc_ji(mem, "pool_resident_bytes") + ar_tc_ji(mem, "models_resident_bytes") +
                   ar_tc_ji(mem, "blas_resident_bytes") + ar_tc_ji(mem, "heap_bytes") + ar_tc_ji(mem, "rest_bytes");
  ck_assert_uint_eq(ar_tc_ji(mem, "accounted_bytes"), parts);
  uint64_t copies = 0;
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(st, "models"), i, m) {
    ck_assert_msg(json_is_integer(json_object_get(m, "mapping_resident_bytes")), "model %zu: no copy figure", i);
    copies += ar_tc_ji(m, "mapping_resident_bytes");
  }
  ck_assert_uint_eq(copies, ar_tc_ji(mem, "models_resident_bytes"));
  json_array_foreach(json_object_get(json_object_get(st, "pool"), "regions"), i, m)
    ck_assert_msg(json_is_integer(json_object_get(m, "resident_bytes")), "region %zu: no resident figure", i);
  json_decref(st);

  pthread_t th[POLLERS];
  for (int k = 0; k < POLLERS; k++) ck_assert_int_eq(pthread_create(&th[k], NULL, poll_stats, NULL), 0);
  long answered = 0;
  for (int k = 0; k < POLLERS; k++) {
    void *ok = NULL;
    pthread_join(th[k], &ok);
    answered += (long)ok;
  }
  ck_assert_int_eq(answered, POLLERS * POLLS);   /* stats_rate_per_s 0: no rate limit */
  st = ar_tc_stats(c);
  ck_assert_uint_eq(ar_tc_ji(json_object_get(st, "daemon"), "stats_walks"), 1);
  ck_assert_uint_eq(ar_tc_ji(json_object_get(st, "daemon"), "stats_refused"), 0);
  json_decref(st);

  char msg[AR_MSG_BYTES];
  ck_assert_msg(ar_client_unload(c, "palm", msg, sizeof(msg)) == 0, "unload: %s", msg);
  st = ar_tc_stats(c);
  ck_assert_uint_eq(ar_tc_ji(json_object_get(st, "daemon"), "stats_walks"), 2);
  ck_assert_uint_eq(ar_tc_ji(json_object_get(st, "memory"), "model_mappings"), 1);
  ck_assert_uint_eq(json_array_size(json_object_get(st, "models")), 1);
  json_decref(st);
  ar_client_close(c);
  stop();
}
END_TEST

/* GetStats and GetPlan from a peer that is not an admin: stats_burst 5 at once, then EBUSY naming
 * the limit, on a second connection of the same uid too; Ping is served throughout. At most the
 * burst plus what stats_rate_per_s (1) refilled during the test may succeed. Failed before: every
 * request was served. */
START_TEST(rate_limit_refuses_past_the_burst) {
  const unsigned other = (unsigned)geteuid() + 4242u;   /* nobody this test runs as */
  char keys[200], models[600];
  snprintf(keys, sizeof(keys), "\"admin_uids\": [%u], \"admin_gids\": [%u], \"stats_rate_per_s\": 1, "
           "\"stats_burst\": 5", other, (unsigned)getegid() + 4242u);
  snprintf(models, sizeof(models), "[{\"name\": \"face\", \"path\": \"%s\"}]",
           ar_tc_model_path("face_detection_short_range"));
  start(keys, models, 1);
  ar_client_t *a = client(), *b = client();
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_client_unload(a, "nope", msg, sizeof(msg)), AR_EPERM);   /* the premise */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int ok = 0, refused = 0;
  char first_refusal[AR_MSG_BYTES] = "";
  for (int i = 0; i < 20; i++) {
    char *s = NULL;
    int rc = i % 4 == 3 ? ar_client_plan_json(i % 2 ? a : b, "face", &s, msg, sizeof(msg))
                        : ar_client_stats_json(i % 2 ? a : b, &s, msg, sizeof(msg));
    free(s);
    if (rc == 0) {
      ok++;
      continue;
    }
    ck_assert_msg(rc == AR_EBUSY, "request %d: rc %d (%s)", i, rc, msg);
    if (refused++ == 0) snprintf(first_refusal, sizeof(first_refusal), "%s", msg);
    ck_assert_msg(strstr(msg, "(stats_rate_per_s 1, stats_burst 5): retry in ") != NULL, "%s", msg);
    ck_assert_msg(strstr(msg, i % 4 == 3 ? "get_plan: uid " : "get_stats: uid ") == msg, "%s", msg);
    ck_assert_int_eq(ar_client_ping(i % 2 ? a : b, NULL, 0, msg, sizeof(msg)), 0);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long elapsed_s = (long)(t1.tv_sec - t0.tv_sec) + 1;
  printf("rate limit: %d of 20 served, %d refused in %ld s; first refusal: %s\n", ok, refused, elapsed_s,
         first_refusal);
  ck_assert_int_ge(ok, 5);
  ck_assert_int_le(ok, 5 + elapsed_s);
  ck_assert_int_gt(refused, 0);
  ar_client_close(a);
  ar_client_close(b);
  stop();
}
END_TEST

/* An admin's GetStats past the burst are not refused: they wait for their tokens (stats_burst 2,
 * stats_rate_per_s 20 here) and are all answered, in order, on one connection and on another;
 * daemon.stats_paced counts those that waited: at least the ones the time taken did not refill.
 * Failed before: no pacing (stats_paced missing). */
START_TEST(admin_stats_past_the_burst_wait_their_turn) {
  char models[600];
  snprintf(models, sizeof(models), "[{\"name\": \"face\", \"path\": \"%s\"}]",
           ar_tc_model_path("face_detection_short_range"));
  start("\"stats_rate_per_s\": 20, \"stats_burst\": 2", models, 1);
  ar_client_t *a = client(), *b = client();
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < 12; i++) {
    char *s = NULL, msg[AR_MSG_BYTES];
    ck_assert_msg(ar_client_stats_json(i % 2 ? a : b, &s, msg, sizeof(msg)) == 0, "stats %d: %s", i, msg);
    free(s);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double elapsed = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  json_t *st = ar_tc_stats(a);
  uint64_t paced = ar_tc_ji(json_object_get(st, "daemon"), "stats_paced");
  ck_assert_msg(json_is_integer(json_object_get(json_object_get(st, "daemon"), "stats_paced")), "no stats_paced");
  ck_assert_uint_eq(ar_tc_ji(json_object_get(st, "daemon"), "stats_refused"), 0);
  json_decref(st);
  long refilled = (long)(elapsed * 20) + 1;
  printf("admin pacing: 13 GetStats in %.2f s, %" PRIu64 " waited for a token\n", elapsed, paced);
  ck_assert_int_ge((long)paced, 13 - 2 - refilled);
  ar_client_close(a);
  ar_client_close(b);
  stop();
}
END_TEST

static Suite *stats_suite(void) {
  Suite *s = suite_create("stats");
  TCase *tc = tcase_create("snapshot");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, a_burst_of_stats_costs_one_walk);
  tcase_add_test(tc, rate_limit_refuses_past_the_burst);
  tcase_add_test(tc, admin_stats_past_the_burst_wait_their_turn);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(stats_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
