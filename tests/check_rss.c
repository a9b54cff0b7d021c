/* check_rss.c - the daemon's resident-memory accounting (daemon/ar_rss.h, stats "memory") and
 * memory_limit, against a real arenad:
 *   - with the four demo models loaded and run once, the parts (pool, model file copies, OpenBLAS
 *     buffers, heap, code and stacks) add up to within 5 % of the kernel's RSS; each model's copy is
 *     resident to the page (file bytes rounded up to pages) and the copies add up to the total;
 *     each persistent region is resident (written when constants are folded); OpenBLAS's buffers
 *     are found after a convolution ran;
 *   - memory_limit (set by a reload to the accounted total + 4 MiB) refuses a model that needs
 *     more (ENOSPC naming memory_limit and the figures) while the loaded models keep serving, and
 *     admits one that fits (a second name for a loaded file: only its persistent region is new).
 *   - memory is given back: RSS after 200 load/unload cycles (a second name for face's file, and
 *     hand_landmark_full in a group of its own) is within 8 MB of the RSS before them, the four
 *     models still loaded (malloc_trim after unloads and compactions);
 * Under an emulator (qemu-user: its own RSS) or a sanitizer build (blas_measured false: ASan's
 * allocator and shadow memory) the figures are printed, not held.
 */
#include "config.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/ar_client.h"
#include "common/ar_error.h"
#include "tests/ar_test_client.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_util.h"

static ar_test_daemon_t dmn;
static char cfg_path[400];

static const struct {
  const char *name, *stem, *group;
} demo[] = {
    {"face", "face_detection_short_range", "people"},
    {"selfie", "selfie_segmentation", "people"},
    {"palm", "palm_detection_lite", "hands"},
    {"hand", "hand_landmark_lite", "hands"},
};

static char *model_path(const char *stem) {
  static char buf[4][1024];
  static int k;
  k = (k + 1) % 4;
  return ar_test_model_path(buf[k], sizeof(buf[k]), stem);
}

/* Write the config: the first `n_models` demo models, memory_limit (0 = key left out). */
static void write_config(size_t n_models, uint64_t memory_limit) {
  FILE *f = fopen(cfg_path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\n");
  if (memory_limit) fprintf(f, "  \"memory_limit\": %llu,\n", (unsigned long long)memory_limit);
  fprintf(f, "  \"models\": [\n");
  for (size_t i = 0; i < n_models; i++)
    fprintf(f, "    {\"name\": \"%s\", \"path\": \"%s\", \"group\": \"%s\"}%s\n", demo[i].name,
            model_path(demo[i].stem), demo[i].group, i + 1 < n_models ? "," : "");
  fprintf(f, "  ]\n}\n");
  ck_assert_int_eq(fclose(f), 0);
}

static void start(size_t n_models, uint64_t memory_limit) {
  char dir[] = "/tmp/check_rss.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg_path, sizeof(cfg_path), "%s/arenad.json", dir);
  write_config(n_models, memory_limit);
  const char *extra[] = {"--config", cfg_path, NULL};
  ck_assert_msg(ar_td_start(&dmn, "96M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  ar_tc_wait_models(dmn.socket, n_models);
}

/* The daemon's VmRSS from /proc/<pid>/status, bytes (-1 when unreadable). */
static long long daemon_rss(void) {
  char path[64], line[256];
  snprintf(path, sizeof(path), "/proc/%d/status", (int)dmn.pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) return -1;
  long long kb = -1;
  while (fgets(line, sizeof(line), f))
    if (strncmp(line, "VmRSS:", 6) == 0) kb = atoll(line + 6);
  fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

static void stop(void) {
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
  char *slash = strrchr(cfg_path, '/');
  unlink(cfg_path);
  *slash = '\0';
  rmdir(cfg_path);
}

static ar_client_t *client(void) {
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  ck_assert_msg(ar_client_connect(dmn.socket, &c, msg, sizeof(msg)) == 0, "connect: %s", msg);
  return c;
}

/* One invoke of `name` on zeros of its (float32) input shape; ok or the error code. */
static int invoke_zeros(ar_client_t *c, const char *name, char *msg, size_t n) {
  ar_client_model_t *ms = NULL;
  size_t count = 0;
  ck_assert_msg(ar_client_list(c, &ms, &count, msg, n) == 0, "list: %s", msg);
  const ar_client_model_t *m = NULL;
  for (size_t i = 0; i < count; i++)
    if (strcmp(ms[i].name, name) == 0) m = &ms[i];
  ck_assert_msg(m != NULL, "model %s not loaded", name);
  ar_client_tensor_t t = m->inputs[0];
  uint64_t elems = 1;
  for (int d = 0; d < t.rank; d++) elems *= (uint64_t)t.dims[d];
  t.bytes = elems * ar_client_dtype_size(t.dtype);
  void *zeros = calloc(1, t.bytes);
  t.data = zeros;
  ar_client_result_t r;
  int rc = ar_client_invoke(c, name, &t, 1, &r, msg, n);
  if (rc == 0) ar_client_result_free(&r);
  free(zeros);
  free(ms);
  return rc;
}

static json_t *stats(ar_client_t *c) {
  char *js = NULL, msg[AR_MSG_BYTES];
  ck_assert_msg(ar_client_stats_json(c, &js, msg, sizeof(msg)) == 0, "stats: %s", msg);
  json_t *root = json_loads(js, 0, NULL);
  free(js);
  ck_assert_ptr_nonnull(root);
  return root;
}

static long long jint(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  ck_assert_msg(json_is_integer(v), "stats key %s missing", key);
  return (long long)json_integer_value(v);
}

/* Whether the figures can be held here (not emulated, not a sanitizer build). */
static int measurable(const json_t *mem) {
  return !ar_test_emulated() && json_is_true(json_object_get(mem, "blas_measured"));
}

START_TEST(parts_add_up_to_rss) {
  start(4, 0);
  ar_client_t *c = client();
  char msg[AR_MSG_BYTES];
  for (size_t i = 0; i < 4; i++)
    ck_assert_msg(invoke_zeros(c, demo[i].name, msg, sizeof(msg)) == 0, "invoke %s: %s", demo[i].name, msg);
  json_t *root = stats(c);
  json_t *mem = json_object_get(root, "memory");
  ck_assert_msg(json_is_object(mem) && json_object_get(mem, "error") == NULL, "no memory figures");
  long long rss = jint(mem, "rss_bytes"), acc = jint(mem, "accounted_bytes");
  long long parts = jint(mem, "pool_resident_bytes") + jint(mem, "models_resident_bytes") +
                    jint(mem, "blas_resident_bytes") + jint(mem, "heap_bytes") + jint(mem, "rest_bytes");
  printf("RSS %lld (peak %lld) = pool %lld + models %lld + OpenBLAS %lld + heap %lld + code/stacks %lld = %lld "
         "(%.1f%%)\n", rss, jint(mem, "peak_rss_bytes"), jint(mem, "pool_resident_bytes"),
         jint(mem, "models_resident_bytes"), jint(mem, "blas_resident_bytes"), jint(mem, "heap_bytes"),
         jint(mem, "rest_bytes"), acc, 100.0 * (double)acc / (double)rss);
  ck_assert_int_eq(parts, acc);
  ck_assert_int_eq(rss - acc, jint(mem, "unaccounted_bytes"));
  ck_assert_int_ge(jint(mem, "peak_rss_bytes"), rss);
  ck_assert_int_eq(jint(mem, "memory_limit_bytes"), 0);

  /* Model copies: read whole into anonymous pages, so resident to the last page. */
  long long page = sysconf(_SC_PAGESIZE), copies = 0;
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(root, "models"), i, m) {
    long long file = jint(m, "file_bytes"), want = (file + page - 1) / page * page;
    if (!ar_test_emulated())
      ck_assert_msg(jint(m, "mapping_resident_bytes") == want, "%s: copy resident %lld, file %lld", 
                    json_string_value(json_object_get(m, "name")), jint(m, "mapping_resident_bytes"), want);
    copies += jint(m, "mapping_resident_bytes");
  }
  ck_assert_int_eq(jint(mem, "model_mappings"), 4);
  ck_assert_int_eq(jint(mem, "models_resident_bytes"), copies);
  /* Persistent regions are written at placement (folded constants): resident but for the pages at
   * their two ends, which may be shared with a neighbour and are counted anyway. */
  json_array_foreach(json_object_get(json_object_get(root, "pool"), "regions"), i, m) {
    if (strcmp(json_string_value(json_object_get(m, "kind")), "persistent") != 0 || ar_test_emulated()) continue;
    ck_assert_msg(jint(m, "resident_bytes") >= jint(m, "bytes") - page, "persistent region at %lld: %lld of %lld",
                  jint(m, "offset"), jint(m, "resident_bytes"), jint(m, "bytes"));
  }
  ck_assert_int_le(jint(mem, "pool_resident_bytes"), jint(json_object_get(root, "pool"), "bytes"));
  if (measurable(mem)) {
    /* The convolutions ran through OpenBLAS's sgemm: its buffer mapping(s) exist and are touched. */
    ck_assert_int_ge(jint(mem, "blas_mappings"), 1);
    ck_assert_int_gt(jint(mem, "blas_resident_bytes"), 0);
    ck_assert_int_gt(jint(mem, "heap_bytes"), 0);
    ck_assert_int_gt(jint(mem, "code_bytes"), 0);
    ck_assert_int_gt(jint(mem, "stack_bytes"), 0);
    long long diff = rss > acc ? rss - acc : acc - rss;
    ck_assert_msg(diff * 20 <= rss, "the parts add up to %lld bytes, RSS is %lld: more than 5%% apart", acc, rss);
  } else {
    printf("figures printed, not held (%s)\n", ar_test_emulated() ? "emulator" : "sanitizer build");
  }
  json_decref(root);
  ar_client_close(c);
  stop();
}
END_TEST

START_TEST(memory_limit_refuses_a_load) {
  start(2, 0);
  ar_client_t *c = client();
  char msg[AR_MSG_BYTES];
  for (size_t i = 0; i < 2; i++)
    ck_assert_msg(invoke_zeros(c, demo[i].name, msg, sizeof(msg)) == 0, "invoke %s: %s", demo[i].name, msg);
  json_t *root = stats(c);
  long long acc = jint(json_object_get(root, "memory"), "accounted_bytes");
  json_decref(root);
  /* The bound, applied by a reload: what the daemon holds now + 4 MiB. */
  uint64_t limit = (uint64_t)acc + (4u << 20);
  if (limit < (16u << 20)) limit = 16u << 20;
  write_config(2, limit);
  ar_client_reloaded_t *changed = NULL;
  size_t n_changed = 0;
  ck_assert_msg(ar_client_reload(c, &changed, &n_changed, NULL, msg, sizeof(msg)) == 0, "reload: %s", msg);
  free(changed);
  root = stats(c);
  ck_assert_int_eq(jint(json_object_get(root, "memory"), "memory_limit_bytes"), (long long)limit);
  json_decref(root);

  /* hand_landmark_full: a 5.5 MB file copy and a 4 MB activation region of its own (and ~11 MB
   * of folded constants with fp32 weights): more than 4 MiB in any weights mode. */
  int rc = ar_client_load(c, "big", model_path("hand_landmark_full"), NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_ENOSPC, "load over memory_limit: rc %d (%s)", rc, msg);
  printf("refused: %s\n", msg);
  ck_assert_ptr_nonnull(strstr(msg, "load of 'big' would bring the accounted memory to "));
  char want[160];
  snprintf(want, sizeof(want), "over memory_limit %llu bytes (raise memory_limit in arenad's config, or unload a "
           "model): now ", (unsigned long long)limit);
  ck_assert_msg(strstr(msg, want) != NULL, "message lacks \"%s\": %s", want, msg);
  ck_assert_ptr_nonnull(strstr(msg, "OpenBLAS"));
  ck_assert_ptr_nonnull(strstr(msg, "its pool regions"));

  /* Nothing changed: the two models serve, the refused one is gone with its copy. */
  for (size_t i = 0; i < 2; i++)
    ck_assert_msg(invoke_zeros(c, demo[i].name, msg, sizeof(msg)) == 0, "invoke %s after the refusal: %s",
                  demo[i].name, msg);
  root = stats(c);
  ck_assert_uint_eq(json_array_size(json_object_get(root, "models")), 2);
  ck_assert_int_eq(jint(json_object_get(root, "memory"), "model_mappings"), 2);
  ck_assert_int_le(jint(json_object_get(root, "memory"), "accounted_bytes"), (long long)limit);
  json_decref(root);

  /* A second name for face's file shares its copy and its group's region: only a ~0.4 MB
   * persistent region is new, within the bound. */
  rc = ar_client_load(c, "face2", model_path(demo[0].stem), "people", NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "load within memory_limit: %s", msg);
  ck_assert_msg(invoke_zeros(c, "face2", msg, sizeof(msg)) == 0, "invoke face2: %s", msg);
  ar_client_close(c);
  stop();
}
END_TEST

/* Load/unload churn gives its memory back: the four demo models stay loaded while a fifth model
 * is loaded, run and unloaded 200 times, in turn each of eight model files, with stored and fp32
 * weights and in a group of its own or in face's (so file copies, plans, folded and widened
 * constants, persistent and activation regions of every size come and go, and the pool is
 * compacted after each unload); afterwards the daemon's RSS is within 8 MB of what it was before
 * the cycles. */
static const char *const churn_stems[] = {
    "hand_landmark_full", "face_detection_full_range", "pose_detection", "palm_detection_full",
    "selfie_segmentation_landscape", "pose_landmark_lite", "face_landmark", "object_detection_3d_cup",
};
#define N_CHURN (sizeof(churn_stems) / sizeof(churn_stems[0]))

static void churn_cycle(ar_client_t *c, int i) {
  char msg[AR_MSG_BYTES];
  const char *stem = churn_stems[i % N_CHURN];
  const char *weights = (i / N_CHURN) % 2 ? "fp32" : "stored";
  const char *group = (i / (2 * N_CHURN)) % 2 ? "people" : "churn";
  int rc = ar_client_load_weights(c, "churn", model_path(stem), group, NULL, weights, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "cycle %d: load %s (%s, group %s): %s", i, stem, weights, group, msg);
  ck_assert_msg(invoke_zeros(c, "churn", msg, sizeof(msg)) == 0, "cycle %d: invoke %s: %s", i, stem, msg);
  ck_assert_msg(ar_client_unload(c, "churn", msg, sizeof(msg)) == 0, "cycle %d: unload %s: %s", i, stem, msg);
}

START_TEST(rss_returns_after_load_unload_churn) {
  start(4, 0);
  ar_client_t *c = client();
  char msg[AR_MSG_BYTES];
  for (size_t i = 0; i < 4; i++)
    ck_assert_msg(invoke_zeros(c, demo[i].name, msg, sizeof(msg)) == 0, "invoke %s: %s", demo[i].name, msg);
  long long before = daemon_rss();
  json_t *root = stats(c);
  long long pool_before = jint(json_object_get(root, "memory"), "pool_resident_bytes");
  long long heap_before = jint(json_object_get(root, "memory"), "heap_bytes");
  json_decref(root);
  ck_assert_int_gt(before, 0);
  long long peak = before;
  for (int i = 0; i < 200; i++) {
    churn_cycle(c, i);
    long long r = daemon_rss();
    if (r > peak) peak = r;
  }
  for (size_t i = 0; i < 4; i++)
    ck_assert_msg(invoke_zeros(c, demo[i].name, msg, sizeof(msg)) == 0, "invoke %s: %s", demo[i].name, msg);
  /* The trim runs at the loop's next sweep (at most a second after the last unload): wait up to
   * 10 s for it rather than assume when it came. */
  long long after = daemon_rss();
  for (int tries = 0; tries < 100 && after > before + (8ll << 20); tries++) {
    usleep(100 * 1000);
    after = daemon_rss();
  }
  printf("churn: RSS %.1f MB before 200 load/unload cycles, peak %.1f MB during, %.1f MB after (%+.1f MB)\n",
         before / 1e6, peak / 1e6, after / 1e6, (after - before) / 1e6);
  root = stats(c);
  const json_t *mem = json_object_get(root, "memory");
  printf("churn: pool resident %.1f -> %.1f MB, heap %.1f -> %.1f MB, %lld page releases\n",
         pool_before / 1e6, jint(mem, "pool_resident_bytes") / 1e6, heap_before / 1e6, jint(mem, "heap_bytes") / 1e6,
         jint(json_object_get(root, "pool"), "page_releases"));
  if (measurable(mem))
    ck_assert_msg(after <= before + (8ll << 20), "RSS %lld bytes after the cycles, %lld before (+%lld, over 8 MB)",
                  after, before, after - before);
  json_decref(root);
  ar_client_close(c);
  stop();
}
END_TEST

static Suite *rss_suite(void) {
  Suite *s = suite_create("rss");
  TCase *tc = tcase_create("daemon");
  tcase_set_timeout(tc, ar_test_emulated() ? 1200 : 120);
  tcase_add_test(tc, parts_add_up_to_rss);
  tcase_add_test(tc, memory_limit_refuses_a_load);
  tcase_add_test(tc, rss_returns_after_load_unload_churn);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(rss_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
