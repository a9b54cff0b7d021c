/* check_config.c - the daemon's config file (daemon/ar_config.c): defaults, a full valid file,
 * size strings, and for each way a key can be wrong the exact key named in the message. */
#include <arpa/inet.h>
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "daemon/ar_config.h"

static char tmpdir[256];
static char cfg_path[300];

static void setup(void) {
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_config.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
  snprintf(cfg_path, sizeof(cfg_path), "%s/arenad.json", tmpdir);
}

static void teardown(void) {
  unlink(cfg_path);
  rmdir(tmpdir);
}

/* Write `json` to the config file and load it. */
static int load_text(const char *json, ar_config_t *cfg, char *msg, size_t n) {
  FILE *f = fopen(cfg_path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(json, f);
  fclose(f);
  msg[0] = '\0';
  return ar_config_load(cfg_path, cfg, msg, n);
}

START_TEST(defaults_are_documented_values) {
  ar_config_t cfg;
  ar_config_defaults(&cfg);
  ck_assert_str_eq(cfg.socket_path, "/run/arenad/arenad.sock");
  ck_assert_uint_eq(cfg.socket_mode, 0660);
  ck_assert_str_eq(cfg.socket_group, "");
  ck_assert_uint_eq(cfg.pool_bytes, 64u << 20);
  ck_assert_uint_eq(cfg.workers, 2);
  ck_assert_uint_eq(cfg.max_frame_bytes, 64u << 20);
  ck_assert_uint_eq(cfg.max_pending_frame_bytes, 256u << 20);
  ck_assert_uint_eq(cfg.max_connections, 256);
  ck_assert_uint_eq(cfg.admin_reserved_connections, 4);
  ck_assert_uint_eq(cfg.max_pending_frame_bytes_per_uid, 64u << 20);
  ck_assert_uint_eq(cfg.max_unwritten_reply_bytes_per_uid, 64u << 20);
  ck_assert_uint_eq(cfg.max_buffer_bytes_per_uid, 1u << 30);
  ck_assert_uint_eq(cfg.n_models, 0);
  ck_assert_uint_eq(cfg.max_model_bytes, 256u << 20);
  ck_assert_uint_eq(cfg.max_resize_activation_bytes, 32u << 20);
  ck_assert(cfg.compact_after_unload);
  ck_assert_uint_eq(cfg.max_while_iterations, 1u << 20);
  ck_assert_uint_eq(cfg.max_while_ms, 10000);
  ck_assert_uint_ge(cfg.n_admin_uids, 1);
  ck_assert_uint_eq(cfg.admin_uids[0], 0);
  if (geteuid() != 0) ck_assert_uint_eq(cfg.admin_uids[1], geteuid());
  ck_assert_uint_eq(cfg.n_admin_gids, 0);
  ck_assert_uint_eq(cfg.n_model_dirs, 1);
  ck_assert_str_eq(cfg.model_dirs[0], "/var/lib/arenad/models");
}
END_TEST

START_TEST(access_keys) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  /* model_dirs defaults to the configured models' directories (each once). */
  int rc = load_text("{\"models\": [{\"name\": \"a\", \"path\": \"/srv/m/a.tflite\"},"
                     " {\"name\": \"b\", \"path\": \"/srv/m/b.tflite\"},"
                     " {\"name\": \"c\", \"path\": \"/opt/c.tflite\"}]}", &cfg, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_uint_eq(cfg.n_model_dirs, 2);
  ck_assert_str_eq(cfg.model_dirs[0], "/srv/m");
  ck_assert_str_eq(cfg.model_dirs[1], "/opt");
  /* Explicit values replace the defaults. */
  rc = load_text("{\"admin_uids\": [1000, 1001], \"admin_gids\": [50], \"model_dirs\": [\"/a\", \"/b/c\"],"
                 " \"max_model_bytes\": \"16M\", \"max_resize_activation_bytes\": 0, \"models\": [{\"name\": \"a\", \"path\": \"/srv/m/a.tflite\"}]}",
                 &cfg, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_uint_eq(cfg.n_admin_uids, 2);
  ck_assert_uint_eq(cfg.admin_uids[1], 1001);
  ck_assert_uint_eq(cfg.n_admin_gids, 1);
  ck_assert_uint_eq(cfg.admin_gids[0], 50);
  ck_assert_uint_eq(cfg.n_model_dirs, 2);
  ck_assert_str_eq(cfg.model_dirs[1], "/b/c");
  ck_assert_uint_eq(cfg.max_model_bytes, 16u << 20);
  ck_assert_uint_eq(cfg.max_resize_activation_bytes, 0);
  /* --model-dir adds without duplicates. */
  ck_assert_int_eq(ar_config_add_model_dir(&cfg, "/a", msg, sizeof(msg)), 0);
  ck_assert_int_eq(ar_config_add_model_dir(&cfg, "/d", msg, sizeof(msg)), 0);
  ck_assert_uint_eq(cfg.n_model_dirs, 3);
}
END_TEST

START_TEST(full_valid_file) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  int rc = load_text(
      "{\"socket\": \"/tmp/a.sock\", \"socket_mode\": \"0600\", \"socket_group\": \"arenad\",\n"
      " \"pool_bytes\": \"48M\", \"workers\": 4, \"max_frame_bytes\": 1048576, \"max_connections\": 8,\n"
      " \"models\": [\n"
      "  {\"name\": \"face\", \"path\": \"/m/face.tflite\", \"group\": \"vision\", \"strategy\": \"greedy-by-size\"},\n"
      "  {\"name\": \"seg-1.v2\", \"path\": \"/m/seg.tflite\", \"group\": \"vision\", \"weights\": \"fp32\"},\n"
      "  {\"name\": \"palm_x\", \"path\": \"relative/palm.tflite\"}],\n"
      " \"weights\": \"stored\"}\n",
      &cfg, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "rc %d: %s", rc, msg);
  ck_assert_str_eq(cfg.socket_path, "/tmp/a.sock");
  ck_assert_uint_eq(cfg.socket_mode, 0600);
  ck_assert_str_eq(cfg.socket_group, "arenad");
  ck_assert_uint_eq(cfg.pool_bytes, 48ull << 20);
  ck_assert_uint_eq(cfg.workers, 4);
  ck_assert_uint_eq(cfg.max_frame_bytes, 1048576);
  ck_assert_uint_eq(cfg.max_connections, 8);
  ck_assert_uint_eq(cfg.n_models, 3);
  ck_assert_str_eq(cfg.models[0].name, "face");
  ck_assert_str_eq(cfg.models[0].path, "/m/face.tflite");
  ck_assert_str_eq(cfg.models[0].group, "vision");
  ck_assert_str_eq(cfg.models[0].strategy, "greedy-by-size");
  ck_assert_str_eq(cfg.models[1].name, "seg-1.v2");
  ck_assert_str_eq(cfg.models[1].strategy, "best");  /* default */
  ck_assert_str_eq(cfg.models[2].group, "");          /* own activation region */
  /* weights: a model's own, else the file's default (even when given after "models"). */
  ck_assert_str_eq(cfg.weights, "stored");
  ck_assert_str_eq(cfg.models[0].weights, "stored");
  ck_assert_str_eq(cfg.models[1].weights, "fp32");
  ck_assert_str_eq(cfg.models[2].weights, "stored");
  /* A relative path names a file beside the config file, whatever the working directory (the
   * daemon is in "/" once detached, when it reloads). */
  char dir[PATH_MAX], want[PATH_MAX + 32];
  ck_assert_ptr_nonnull(realpath(tmpdir, dir));
  snprintf(want, sizeof(want), "%s/relative/palm.tflite", dir);
  ck_assert_str_eq(cfg.models[2].path, want);
  char cwd[PATH_MAX];
  ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
  ck_assert_int_eq(chdir("/"), 0);
  rc = ar_config_load(cfg_path, &cfg, msg, sizeof(msg));
  ck_assert_int_eq(chdir(cwd), 0);
  ck_assert_msg(rc == 0, "rc %d: %s", rc, msg);
  ck_assert_str_eq(cfg.models[2].path, want);
  ck_assert_str_eq(cfg.models[0].path, "/m/face.tflite");
}
END_TEST

/* A relative path too long once the config file's directory is put before it is named. */
START_TEST(relative_model_path_too_long_is_named) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES], json[8192], rel[4090];
  memset(rel, 'a', sizeof(rel) - 1);
  rel[sizeof(rel) - 1] = '\0';
  snprintf(json, sizeof(json), "{\"models\": [{\"name\": \"m\", \"path\": \"%s\"}]}", rel);
  int rc = load_text(json, &cfg, msg, sizeof(msg));
  ck_assert_int_eq(rc, AR_ECONFIG);
  char dir[PATH_MAX], want[PATH_MAX + 512];
  ck_assert_ptr_nonnull(realpath(tmpdir, dir));
  snprintf(want, sizeof(want),
           "%s: models[0].path: longer than 4095 bytes once put after the config file's directory %s", cfg_path,
           dir);
  ck_assert_str_eq(msg, want);
  ck_assert_uint_eq(cfg.n_models, 0);
}
END_TEST

START_TEST(minimal_file_gets_defaults) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(load_text("{\"models\": []}", &cfg, msg, sizeof(msg)), 0);
  ck_assert_str_eq(cfg.socket_path, "/run/arenad/arenad.sock");
  ck_assert_uint_eq(cfg.pool_bytes, 64u << 20);
  ck_assert_uint_eq(cfg.n_models, 0);
}
END_TEST

/* Size strings: powers of 1024, suffix case-insensitive. */
START_TEST(size_strings) {
  static const struct { const char *text; uint64_t bytes; } cases[] = {
    {"65536", 65536}, {"64K", 65536}, {"64k", 65536}, {"3M", 3ull << 20}, {"1G", 1ull << 30},
    {"2g", 2ull << 30}, {"1024G", 1ull << 40},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char json[128], msg[AR_MSG_BYTES];
    ar_config_t cfg;
    snprintf(json, sizeof(json), "{\"pool_bytes\": \"%s\", \"models\": []}", cases[i].text);
    int rc = load_text(json, &cfg, msg, sizeof(msg));
    ck_assert_msg(rc == 0, "%s: %s", cases[i].text, msg);
    ck_assert_uint_eq(cfg.pool_bytes, cases[i].bytes);
  }
}
END_TEST

/* Each bad file: the error code and a fragment the message must contain (key + problem). */
static const struct {
  const char *json;
  const char *want;
} bad[] = {
  {"{\"models\": [], \"pool_byte\": 1}", "pool_byte: unknown key"},
  {"{}", "models: missing"},
  {"[]", "(top level): must be a JSON object"},
  {"{\"models\": {}}", "models: must be an array"},
  {"{\"models\": [], \"socket\": 5}", "socket: must be a string"},
  {"{\"models\": [], \"socket\": \"\"}", "socket: must not be empty"},
  {"{\"models\": [], \"socket\": \"/tmp/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.sock\"}",
   "socket: must be a string, at most 107 bytes"},
  {"{\"models\": [], \"socket_mode\": \"0980\"}", "socket_mode: must be permission bits"},
  {"{\"models\": [], \"socket_mode\": 4095}", "socket_mode: must be permission bits"},
  {"{\"models\": [], \"socket_mode\": true}", "socket_mode: must be an octal string"},
  {"{\"models\": [], \"socket_group\": \"wheel users\"}", "socket_group: must be a string of [A-Za-z0-9_.-]"},
  {"{\"models\": [], \"pool_bytes\": -5}", "pool_bytes: must not be negative"},
  {"{\"models\": [], \"pool_bytes\": \"64X\"}", "pool_bytes: \"64X\" is not a size"},
  {"{\"models\": [], \"pool_bytes\": \"M\"}", "pool_bytes: \"M\" is not a size"},
  {"{\"models\": [], \"pool_bytes\": \"99999999999999999999\"}", "pool_bytes: \"99999999999999999999\" is not a size"},
  {"{\"models\": [], \"pool_bytes\": \"99999999999G\"}", "pool_bytes: \"99999999999G\" is not a size"},
  {"{\"models\": [], \"pool_bytes\": 100}", "pool_bytes: 100 bytes is out of range"},
  {"{\"models\": [], \"pool_bytes\": \"2048G\"}", "pool_bytes: 2199023255552 bytes is out of range"},
  {"{\"models\": [], \"pool_bytes\": 1.5}", "pool_bytes: must be a size in bytes"},
  {"{\"models\": [], \"workers\": 0}", "workers: 0 is out of range [1, 256]"},
  {"{\"models\": [], \"workers\": \"2\"}", "workers: must be an integer"},
  {"{\"models\": [], \"max_frame_bytes\": \"8G\"}", "max_frame_bytes: 8589934592 bytes is out of range"},
  {"{\"models\": [], \"max_pending_frame_bytes\": \"32M\"}",
   "max_pending_frame_bytes: 33554432 bytes is below max_frame_bytes 67108864"},
  {"{\"max_pending_frame_bytes\": \"2M\", \"models\": [], \"max_frame_bytes\": \"4M\"}",
   "max_pending_frame_bytes: 2097152 bytes is below max_frame_bytes 4194304"},
  {"{\"models\": [], \"max_pending_frame_bytes\": 100}", "max_pending_frame_bytes: 100 bytes is out of range"},
  {"{\"models\": [], \"max_pending_frame_bytes\": \"2048G\"}",
   "max_pending_frame_bytes: 2199023255552 bytes is out of range"},
  {"{\"models\": [], \"max_pending_frame_bytes\": true}", "max_pending_frame_bytes: must be a size"},
  {"{\"models\": [], \"max_connections\": 100000}", "max_connections: 100000 is out of range [1, 65536]"},
  {"{\"models\": [], \"admin_reserved_connections\": 256}",
   "admin_reserved_connections: 256 is not below max_connections 256 (non-admin peers need at least one slot)"},
  {"{\"admin_reserved_connections\": 8, \"models\": [], \"max_connections\": 8}",
   "admin_reserved_connections: 8 is not below max_connections 8"},
  {"{\"models\": [], \"admin_reserved_connections\": -1}", "admin_reserved_connections: "},
  {"{\"models\": [], \"max_pending_frame_bytes_per_uid\": \"32M\"}",
   "max_pending_frame_bytes_per_uid: 33554432 bytes is out of range [67108864 (max_frame_bytes), 268435456 "
   "(max_pending_frame_bytes)]"},
  {"{\"models\": [], \"max_pending_frame_bytes_per_uid\": \"512M\"}",
   "max_pending_frame_bytes_per_uid: 536870912 bytes is out of range [67108864 (max_frame_bytes), 268435456 "
   "(max_pending_frame_bytes)]"},
  {"{\"models\": [], \"max_pending_frame_bytes_per_uid\": true}", "max_pending_frame_bytes_per_uid: must be a size"},
  {"{\"models\": [], \"max_unwritten_reply_bytes_per_uid\": \"128M\"}",
   "max_unwritten_reply_bytes_per_uid: 134217728 bytes is above max_unwritten_reply_bytes 67108864"},
  {"{\"models\": [], \"max_unwritten_reply_bytes_per_uid\": 100}",
   "max_unwritten_reply_bytes_per_uid: 100 bytes is out of range"},
  {"{\"models\": [], \"max_buffer_bytes_per_uid\": \"2048G\"}",
   "max_buffer_bytes_per_uid: 2199023255552 bytes is out of range"},
  {"{\"models\": [5]}", "models[0]: must be an object"},
  {"{\"models\": [{\"path\": \"/a\"}]}", "models[0].name: missing"},
  {"{\"models\": [{\"name\": \"a\"}]}", "models[0].path: missing"},
  {"{\"models\": [{\"name\": \"a\", \"path\": \"/a\"}, {\"name\": \"b/c\", \"path\": \"/b\"}]}",
   "models[1].name: must be a string of [A-Za-z0-9_.-]"},
  {"{\"models\": [{\"name\": \"\", \"path\": \"/a\"}]}", "models[0].name: must not be empty"},
  {"{\"models\": [{\"name\": \"a\", \"path\": \"/a\", \"group\": \"x y\"}]}",
   "models[0].group: must be a string of [A-Za-z0-9_.-], at most 63 bytes"},
  {"{\"models\": [{\"name\": \"a\", \"path\": \"/a\", \"group\": 3}]}", "models[0].group: must be a string"},
  {"{\"models\": [{\"name\": \"a\", \"path\": \"/a\", \"strategy\": \"fastest\"}]}",
   "models[0].strategy: unknown planner strategy \"fastest\""},
  {"{\"models\": [{\"name\": \"a\", \"path\": \"/a\", \"grop\": \"g\"}]}", "models[0].grop: unknown key"},
  {"{\"models\": [{\"name\": \"a\", \"path\": \"/a\", \"weights\": \"fp16\"}]}",
   "models[0].weights: unknown weights mode \"fp16\" (stored, fp32)"},
  {"{\"models\": [], \"weights\": \"int8\"}", "weights: unknown weights mode \"int8\""},
  {"{\"models\": [{\"name\": \"a\", \"path\": \"/a\"}, {\"name\": \"a\", \"path\": \"/b\"}]}",
   "models[1].name: \"a\" is already used by models[0]"},
  {"{\"models\": [], \"models\": []}", "duplicate object key"},
  {"{\"models\": [], \"max_model_bytes\": 100}", "max_model_bytes: 100 bytes is out of range"},
  {"{\"models\": [], \"memory_limit\": \"1M\"}",
   "memory_limit: 1048576 bytes is out of range: 0 (no limit) or [16777216, 1099511627776]"},
  {"{\"models\": [], \"memory_limit\": \"2048G\"}", "memory_limit: 2199023255552 bytes is out of range"},
  {"{\"models\": [], \"memory_limit\": \"448MB\"}", "memory_limit: \"448MB\" is not a size"},
  {"{\"models\": [], \"memory_limit\": -1}", "memory_limit: must not be negative"},
  {"{\"models\": [], \"compact_after_unload\": \"no\"}", "compact_after_unload: must be true or false"},
  {"{\"models\": [], \"compact_after_unload\": 0}", "compact_after_unload: must be true or false"},
  {"{\"models\": [], \"admin_uids\": 0}", "admin_uids: must be an array"},
  {"{\"models\": [], \"admin_uids\": [-1]}", "admin_uids[0]: must be a numeric id"},
  {"{\"models\": [], \"admin_gids\": [\"wheel\"]}", "admin_gids[0]: must be a numeric id"},
  {"{\"models\": [], \"model_dirs\": []}", "model_dirs: must be an array of 1 to 16"},
  {"{\"models\": [], \"model_dirs\": [\"models\"]}", "model_dirs[0]: must be an absolute path"},
  {"{\"models\": [], \"workers\": 2,}", "line 1 column"},
  {"{\"models\": [], \"metrics_listen\": \"localhost:9464\"}",
   "metrics_listen: \"localhost:9464\": the host must be an IPv4 address (127.0.0.1) or an IPv6 address in brackets"},
  {"{\"models\": [], \"metrics_listen\": \"127.0.0.1\"}", "metrics_listen: \"127.0.0.1\": must be ADDRESS:PORT"},
  {"{\"models\": [], \"metrics_listen\": \"127.0.0.1:0\"}", "the port must be a number in [1, 65535]"},
  {"{\"models\": [], \"metrics_listen\": \"127.0.0.1:65536\"}", "the port must be a number in [1, 65535]"},
  {"{\"models\": [], \"metrics_listen\": \"127.0.0.1:94x\"}", "the port must be a number in [1, 65535]"},
  {"{\"models\": [], \"metrics_listen\": \"::1:9464\"}", "the host must be an IPv4 address"},
  {"{\"models\": [], \"metrics_listen\": \"[::1]9464\"}", "an IPv6 address is written in brackets, then the port"},
  {"{\"models\": [], \"metrics_listen\": \"[::g]:9464\"}", "'::g' is not an IPv6 address"},
  {"{\"models\": [], \"metrics_listen\": \"metrics.sock\"}", "must be ADDRESS:PORT"},
  {"{\"models\": [], \"metrics_listen\": 9464}", "metrics_listen: must be a string"},
  {"{\"models\": [{\"name\": \"a\\u0000b\", \"path\": \"/a\"}]}", "is not allowed"},
};

START_TEST(metrics_listen_key) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(load_text("{\"models\": []}", &cfg, msg, sizeof(msg)), 0);
  ck_assert_str_eq(cfg.metrics_listen, "");   /* off by default */
  ck_assert_int_eq(load_text("{\"models\": [], \"metrics_listen\": \"\"}", &cfg, msg, sizeof(msg)), 0);
  ck_assert_str_eq(cfg.metrics_listen, "");
  ar_listen_addr_t a;
  ck_assert_int_eq(load_text("{\"models\": [], \"metrics_listen\": \"127.0.0.1:9464\"}", &cfg, msg, sizeof(msg)), 0);
  ck_assert_int_eq(ar_config_parse_listen("metrics_listen", cfg.metrics_listen, &a, msg, sizeof(msg)), 0);
  const struct sockaddr_in *v4 = (const struct sockaddr_in *)&a.sa;
  ck_assert(!a.is_unix);
  ck_assert_int_eq(v4->sin_family, AF_INET);
  ck_assert_uint_eq(ntohs(v4->sin_port), 9464);
  ck_assert_uint_eq(ntohl(v4->sin_addr.s_addr), 0x7f000001u);
  ck_assert_int_eq(ar_config_parse_listen("metrics_listen", "[::1]:80", &a, msg, sizeof(msg)), 0);
  const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)&a.sa;
  ck_assert_int_eq(v6->sin6_family, AF_INET6);
  ck_assert_uint_eq(ntohs(v6->sin6_port), 80);
  ck_assert(IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr));
  ck_assert_int_eq(ar_config_parse_listen("metrics_listen", "/run/arenad/metrics.sock", &a, msg, sizeof(msg)), 0);
  ck_assert(a.is_unix);
  ck_assert_str_eq(a.path, "/run/arenad/metrics.sock");
}
END_TEST

START_TEST(compact_after_unload_key) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(load_text("{\"models\": [], \"compact_after_unload\": false}", &cfg, msg, sizeof(msg)), 0);
  ck_assert(!cfg.compact_after_unload);
  ck_assert_int_eq(load_text("{\"models\": [], \"compact_after_unload\": true}", &cfg, msg, sizeof(msg)), 0);
  ck_assert(cfg.compact_after_unload);
}
END_TEST

/* max_while_iterations: 1..2^31 (the interpreter's bound on a WHILE, issue 27). */
START_TEST(max_while_iterations_key) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(load_text("{\"models\": [], \"max_while_iterations\": 100}", &cfg, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(cfg.max_while_iterations, 100);
  ck_assert_int_eq(load_text("{\"models\": [], \"max_while_iterations\": 2147483648}", &cfg, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(cfg.max_while_iterations, 2147483648u);
  ck_assert_int_eq(load_text("{\"models\": [], \"max_while_iterations\": 0}", &cfg, msg, sizeof(msg)), AR_ECONFIG);
  ck_assert_msg(strstr(msg, "max_while_iterations: 0 is out of range [1, 2147483648]") != NULL, "%s", msg);
  ck_assert_int_eq(load_text("{\"models\": [], \"max_while_iterations\": \"many\"}", &cfg, msg, sizeof(msg)),
                   AR_ECONFIG);
  ck_assert_msg(strstr(msg, "max_while_iterations: must be an integer") != NULL, "%s", msg);
  /* max_while_ms: 0 (no time bound) .. one day. */
  ck_assert_int_eq(load_text("{\"models\": [], \"max_while_ms\": 0}", &cfg, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(cfg.max_while_ms, 0);
  ck_assert_int_eq(load_text("{\"models\": [], \"max_while_ms\": 250}", &cfg, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(cfg.max_while_ms, 250);
  ck_assert_int_eq(load_text("{\"models\": [], \"max_while_ms\": 86400001}", &cfg, msg, sizeof(msg)), AR_ECONFIG);
  ck_assert_msg(strstr(msg, "max_while_ms: 86400001 is out of range [0, 86400000]") != NULL, "%s", msg);
}
END_TEST

/* busy_poll_us (default 200) and inline_invoke_us (default 5000): integers 0..AR_CONFIG_BUSY_POLL_MAX. */
START_TEST(busy_poll_keys) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ar_config_defaults(&cfg);
  ck_assert_uint_eq(cfg.busy_poll_us, 200);
  ck_assert_uint_eq(cfg.inline_invoke_us, 5000);
  ck_assert_msg(load_text("{\"models\": [], \"busy_poll_us\": 0, \"inline_invoke_us\": 2000}", &cfg, msg,
                          sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.busy_poll_us, 0);
  ck_assert_uint_eq(cfg.inline_invoke_us, 2000);
  ck_assert_msg(load_text("{\"models\": [], \"busy_poll_us\": 100000}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.busy_poll_us, AR_CONFIG_BUSY_POLL_MAX);
  ck_assert_int_eq(load_text("{\"models\": [], \"busy_poll_us\": 100001}", &cfg, msg, sizeof(msg)), AR_ECONFIG);
  ck_assert_msg(strstr(msg, "busy_poll_us") != NULL, "%s", msg);
  ck_assert_int_eq(load_text("{\"models\": [], \"inline_invoke_us\": -1}", &cfg, msg, sizeof(msg)), AR_ECONFIG);
  ck_assert_msg(strstr(msg, "inline_invoke_us") != NULL, "%s", msg);
  ck_assert_int_eq(load_text("{\"models\": [], \"busy_poll_us\": \"50\"}", &cfg, msg, sizeof(msg)), AR_ECONFIG);
  ck_assert_msg(strstr(msg, "busy_poll_us") != NULL, "%s", msg);
}
END_TEST

/* stats_refresh_ms (default 1000, 0..3600000), stats_rate_per_s (default 10, 0 = no limit, at most
 * 100000) and stats_burst (default 20, 1..100000): integers, refused out of range naming the key. */
START_TEST(stats_keys) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ck_assert_msg(load_text("{\"models\": []}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.stats_refresh_ms, 1000);
  ck_assert_uint_eq(cfg.stats_rate_per_s, 10);
  ck_assert_uint_eq(cfg.stats_burst, 20);
  ck_assert_msg(load_text("{\"models\": [], \"stats_refresh_ms\": 0, \"stats_rate_per_s\": 0, \"stats_burst\": 1}",
                          &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.stats_refresh_ms, 0);
  ck_assert_uint_eq(cfg.stats_rate_per_s, 0);
  ck_assert_uint_eq(cfg.stats_burst, 1);
  ck_assert_msg(load_text("{\"models\": [], \"stats_refresh_ms\": 3600000, \"stats_rate_per_s\": 100000, "
                          "\"stats_burst\": 100000}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.stats_refresh_ms, 3600000);
  ck_assert_uint_eq(cfg.stats_rate_per_s, 100000);
  ck_assert_uint_eq(cfg.stats_burst, 100000);
  static const struct { const char *text, *want; } bad_stats[] = {
      {"{\"models\": [], \"stats_refresh_ms\": 3600001}", "stats_refresh_ms: 3600001 is out of range [0, 3600000]"},
      {"{\"models\": [], \"stats_refresh_ms\": \"1s\"}", "stats_refresh_ms: must be an integer"},
      {"{\"models\": [], \"stats_rate_per_s\": -1}", "stats_rate_per_s: -1 is out of range [0, 100000]"},
      {"{\"models\": [], \"stats_rate_per_s\": 100001}", "stats_rate_per_s: 100001 is out of range"},
      {"{\"models\": [], \"stats_burst\": 0}", "stats_burst: 0 is out of range [1, 100000]"},
      {"{\"models\": [], \"stats_burst\": 2.5}", "stats_burst: must be an integer"},
  };
  for (size_t i = 0; i < sizeof(bad_stats) / sizeof(bad_stats[0]); i++) {
    ck_assert_int_eq(load_text(bad_stats[i].text, &cfg, msg, sizeof(msg)), AR_ECONFIG);
    ck_assert_msg(strstr(msg, bad_stats[i].want) != NULL, "%s: got '%s'", bad_stats[i].text, msg);
  }
}
END_TEST

/* Session keys (issue 27): max_sessions_per_model (default 1024, 0..1000000), max_sessions_per_uid
 * (default 256, 1..1000000), session_idle_timeout_ms (default 600000, 0..604800000): integers,
 * refused out of range naming the key. */
START_TEST(session_keys) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ck_assert_msg(load_text("{\"models\": []}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.max_sessions_per_model, 1024);
  ck_assert_uint_eq(cfg.max_sessions_per_uid, 256);
  ck_assert_uint_eq(cfg.session_idle_timeout_ms, 600000);
  ck_assert_msg(load_text("{\"models\": [], \"max_sessions_per_model\": 0, \"max_sessions_per_uid\": 1, "
                          "\"session_idle_timeout_ms\": 0}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.max_sessions_per_model, 0);
  ck_assert_uint_eq(cfg.max_sessions_per_uid, 1);
  ck_assert_uint_eq(cfg.session_idle_timeout_ms, 0);
  ck_assert_msg(load_text("{\"models\": [], \"max_sessions_per_model\": 1000000, \"max_sessions_per_uid\": 1000000, "
                          "\"session_idle_timeout_ms\": 604800000}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.max_sessions_per_model, 1000000);
  ck_assert_uint_eq(cfg.session_idle_timeout_ms, 604800000);
  static const struct { const char *text, *want; } bad_sess[] = {
      {"{\"models\": [], \"max_sessions_per_model\": 1000001}", "max_sessions_per_model: 1000001 is out of range [0, 1000000]"},
      {"{\"models\": [], \"max_sessions_per_uid\": 0}", "max_sessions_per_uid: 0 is out of range [1, 1000000]"},
      {"{\"models\": [], \"session_idle_timeout_ms\": -5}", "session_idle_timeout_ms: -5 is out of range"},
      {"{\"models\": [], \"session_idle_timeout_ms\": \"10s\"}", "session_idle_timeout_ms: must be an integer"},
  };
  for (size_t i = 0; i < sizeof(bad_sess) / sizeof(bad_sess[0]); i++) {
    ck_assert_int_eq(load_text(bad_sess[i].text, &cfg, msg, sizeof(msg)), AR_ECONFIG);
    ck_assert_msg(strstr(msg, bad_sess[i].want) != NULL, "%s: got '%s'", bad_sess[i].text, msg);
  }
}
END_TEST

/* max_pending_frame_bytes: a size of at least max_frame_bytes (whatever the keys' order), by
 * default 4 x max_frame_bytes. */
START_TEST(pending_frame_budget_key) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ck_assert_msg(load_text("{\"models\": []}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.max_pending_frame_bytes, 256u << 20);
  ck_assert_msg(load_text("{\"models\": [], \"max_frame_bytes\": \"8M\"}", &cfg, msg, sizeof(msg)) == 0, "%s",
                msg);
  ck_assert_uint_eq(cfg.max_pending_frame_bytes, 32u << 20);
  ck_assert_msg(load_text("{\"max_pending_frame_bytes\": \"1G\", \"models\": []}", &cfg, msg, sizeof(msg)) == 0,
                "%s", msg);
  ck_assert_uint_eq(cfg.max_pending_frame_bytes, 1u << 30);
  /* equal to max_frame_bytes: one frame of the largest size at a time */
  ck_assert_msg(load_text("{\"max_pending_frame_bytes\": 1048576, \"models\": [], \"max_frame_bytes\": \"1M\"}",
                          &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.max_pending_frame_bytes, 1u << 20);
  ck_assert_uint_eq(cfg.max_frame_bytes, 1u << 20);
}
END_TEST

/* The per-uid shares and the admin slots: defaults follow the budgets they share (a quarter of
 * max_pending_frame_bytes, at least max_frame_bytes; all of max_unwritten_reply_bytes), values in
 * range are taken whatever the keys' order, and a max_connections below the default reserve
 * keeps half of its slots for admins. */
START_TEST(per_uid_share_keys) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ck_assert_msg(load_text("{\"models\": [], \"max_frame_bytes\": \"8M\", \"max_pending_frame_bytes\": \"64M\", "
                          "\"max_unwritten_reply_bytes\": \"8M\"}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.max_pending_frame_bytes_per_uid, 16u << 20);
  ck_assert_uint_eq(cfg.max_unwritten_reply_bytes_per_uid, 8u << 20);
  ck_assert_msg(load_text("{\"models\": [], \"max_frame_bytes\": \"8M\", \"max_pending_frame_bytes\": \"16M\"}", &cfg,
                          msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.max_pending_frame_bytes_per_uid, 8u << 20);   /* at least one frame */
  ck_assert_msg(load_text("{\"max_pending_frame_bytes_per_uid\": \"16M\", \"admin_reserved_connections\": 10, "
                          "\"max_unwritten_reply_bytes_per_uid\": \"1M\", \"max_buffer_bytes_per_uid\": 0, "
                          "\"models\": [], \"max_frame_bytes\": \"8M\", \"max_connections\": 11}",
                          &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.max_pending_frame_bytes_per_uid, 16u << 20);
  ck_assert_uint_eq(cfg.admin_reserved_connections, 10);
  ck_assert_uint_eq(cfg.max_unwritten_reply_bytes_per_uid, 1u << 20);
  ck_assert_uint_eq(cfg.max_buffer_bytes_per_uid, 0);
  ck_assert_msg(load_text("{\"models\": [], \"max_connections\": 3}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.admin_reserved_connections, 1);
}
END_TEST

START_TEST(bad_key_named_in_message) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  int rc = load_text(bad[_i].json, &cfg, msg, sizeof(msg));
  ck_assert_msg(rc == AR_ECONFIG, "case %d (%s): rc %d (%s)", _i, bad[_i].json, rc, msg);
  ck_assert_msg(strstr(msg, bad[_i].want) != NULL, "case %d: message \"%s\" lacks \"%s\"", _i, msg,
                bad[_i].want);
  /* Every message names the file first, once (a JSON syntax error and a bad key alike: arenad
   * prints it as it is, and a reload's reply carries it to an admin who may not know the path). */
  char prefix[320];
  snprintf(prefix, sizeof(prefix), "%s: ", cfg_path);
  ck_assert_msg(strncmp(msg, prefix, strlen(prefix)) == 0, "case %d: message \"%s\" does not begin with \"%s\"", _i,
                msg, prefix);
  ck_assert_msg(strstr(msg + strlen(prefix), cfg_path) == NULL, "case %d: message \"%s\" names the file twice", _i,
                msg);
  /* A rejected file leaves defaults behind, never half a config. */
  ck_assert_uint_eq(cfg.n_models, 0);
  ck_assert_uint_eq(cfg.pool_bytes, 64u << 20);
}
END_TEST

/* memory_limit: a size (448M), 0 = none (the default); MemoryMax= for the unit is the limit plus a
 * quarter, rounded up to a MiB. */
START_TEST(memory_limit_key) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ar_config_defaults(&cfg);
  ck_assert_uint_eq(cfg.memory_limit_bytes, 0);
  ck_assert_uint_eq(ar_config_memory_max(&cfg), 0);
  ck_assert_msg(load_text("{\"memory_limit\": \"448M\", \"models\": []}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.memory_limit_bytes, 448ull << 20);          /* 469762048 */
  ck_assert_uint_eq(ar_config_memory_max(&cfg), 560ull << 20);      /* 448 + 112 MiB */
  ck_assert_msg(load_text("{\"memory_limit\": 100000000, \"models\": []}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.memory_limit_bytes, 100000000);
  ck_assert_uint_eq(ar_config_memory_max(&cfg), 120ull << 20);      /* 125000000 up to 120 MiB */
  ck_assert_msg(load_text("{\"memory_limit\": 0, \"models\": []}", &cfg, msg, sizeof(msg)) == 0, "%s", msg);
  ck_assert_uint_eq(cfg.memory_limit_bytes, 0);
}
END_TEST

START_TEST(too_many_models) {
  char *json = malloc(16384);
  size_t off = (size_t)snprintf(json, 16384, "{\"models\": [");
  for (int i = 0; i <= AR_CONFIG_MAX_MODELS; i++)
    off += (size_t)snprintf(json + off, 16384 - off, "%s{\"name\": \"m%d\", \"path\": \"/m\"}", i ? "," : "", i);
  snprintf(json + off, 16384 - off, "]}");
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(load_text(json, &cfg, msg, sizeof(msg)), AR_ECONFIG);
  char want[400];
  snprintf(want, sizeof(want), "%s: models: 65 entries, at most 64", cfg_path);
  ck_assert_str_eq(msg, want);
  free(json);
}
END_TEST

/* The allowed keys after "(allowed: " in msg: each a whole name of the man page's KEYS (".BR key "
 * or ".B key" at a line start), counted into *listed; returns the "and N more" count (0 when the
 * list is whole and ends the message with ")"). */
static const char *man_text(void) {
  static char man[65536];
  FILE *f = fopen(AR_SRCDIR "/docs/arenad.json.5", "r");
  ck_assert_ptr_nonnull(f);
  size_t got = fread(man, 1, sizeof(man) - 1, f);
  man[got] = '\0';
  fclose(f);
  return man;
}

static bool man_has(const char *s) { return strstr(man_text(), s) != NULL; }

static int allowed_list(const char *msg, int *listed) {
  const char *man = man_text();
  const char *p = strstr(msg, "(allowed: ");
  ck_assert_msg(p != NULL, "%s", msg);
  p += strlen("(allowed: ");
  *listed = 0;
  for (;;) {
    char name[64];
    int len = 0;
    ck_assert_msg(sscanf(p, "%63[a-z_]%n", name, &len) == 1, "no key name at \"%s\" in %s", p, msg);
    char a[80], b[80];
    snprintf(a, sizeof(a), "\n.BR %s ", name);
    snprintf(b, sizeof(b), "\n.B %s\n", name);
    ck_assert_msg(strstr(man, a) || strstr(man, b) || strcmp(name, "name") == 0 || strcmp(name, "path") == 0 ||
                  strcmp(name, "group") == 0 || strcmp(name, "strategy") == 0,
                  "\"%s\" (cut inside a name?) is no key of docs/arenad.json.5: %s", name, msg);
    (*listed)++;
    p += len;
    if (strcmp(p, ")") == 0) return 0;
    if (strncmp(p, ", ", 2) == 0 && strncmp(p, ", and ", 6) != 0) {
      p += 2;
      continue;
    }
    int more = 0;
    ck_assert_msg(sscanf(p, ", and %d more, see arenad.json(5))%n", &more, &len) == 1 && p[len] == '\0',
                  "list ends in \"%s\": %s", p, msg);
    return more;
  }
}

/* An unknown key: the closest allowed key when it is a likely typo (a letter off, two swapped, a
 * prefix, another case), a key of the other level named as such, and the allowed keys cut between
 * whole names with "and N more" so that the message fits the caller's buffer, whatever its size.
 * Before, the list was one literal cut by snprintf at 511 bytes inside a name ("drain_timeo"). */
START_TEST(unknown_key_suggests_and_lists_whole_names) {
  static const struct { const char *key, *want; } typos[] = {
    {"pool_byte", "pool_bytes"}, {"idle_timout_ms", "idle_timeout_ms"}, {"sokcet", "socket"},
    {"MAX_FRAME", "max_frame_bytes"}, {"memory-limit", "memory_limit"}, {"admin_gid", "admin_gids"},
  };
  ar_config_t cfg;
  char msg[AR_MSG_BYTES], json[256], want[800];
  const char *const *root;
  size_t n_root = ar_config_root_keys(&root);
  ck_assert_uint_gt(n_root, 30);
  for (size_t i = 0; i < n_root; i++) {   /* each accepted key is documented in arenad.json(5) */
    char a[80], b[80];
    snprintf(a, sizeof(a), "\n.BR %s ", root[i]);
    snprintf(b, sizeof(b), "\n.B %s\n", root[i]);
    ck_assert_msg(man_has(a) || man_has(b), "config key \"%s\" is not in docs/arenad.json.5", root[i]);
  }
  for (size_t i = 0; i < sizeof(typos) / sizeof(typos[0]); i++) {
    snprintf(json, sizeof(json), "{\"models\": [], \"%s\": 1}", typos[i].key);
    ck_assert_int_eq(load_text(json, &cfg, msg, sizeof(msg)), AR_ECONFIG);
    snprintf(want, sizeof(want), "%s: %s: unknown key; did you mean \"%s\"? (allowed: models, model_dirs, pool_bytes, ",
             cfg_path, typos[i].key, typos[i].want);
    ck_assert_msg(strncmp(msg, want, strlen(want)) == 0, "%s\nwant %s", msg, want);
    int listed = 0, more = allowed_list(msg, &listed);
    ck_assert_int_eq(listed + more, (int)n_root);   /* every key of load_root, listed or counted */
    ck_assert_int_gt(more, 0);             /* 30-odd names do not fit 512 bytes with the rest */
    ck_assert_uint_lt(strlen(msg), sizeof(msg) - 1);   /* not cut by the buffer */
  }
  /* Nothing close: no guess, the list alone. */
  ck_assert_int_eq(load_text("{\"models\": [], \"verbose\": true}", &cfg, msg, sizeof(msg)), AR_ECONFIG);
  snprintf(want, sizeof(want), "%s: verbose: unknown key (allowed: models, ", cfg_path);
  ck_assert_msg(strncmp(msg, want, strlen(want)) == 0, "%s", msg);
  /* A key of the other level. */
  ck_assert_int_eq(load_text("{\"models\": [], \"path\": \"/m\"}", &cfg, msg, sizeof(msg)), AR_ECONFIG);
  snprintf(want, sizeof(want), "%s: path: unknown key here (\"path\" is a key of a models[] entry, not of the top "
           "level) (allowed: models, ", cfg_path);
  ck_assert_msg(strncmp(msg, want, strlen(want)) == 0, "%s", msg);
  ck_assert_int_eq(load_text("{\"models\": [{\"name\": \"a\", \"path\": \"/a\", \"pool_bytes\": 1}]}", &cfg, msg,
                             sizeof(msg)), AR_ECONFIG);
  snprintf(want, sizeof(want), "%s: models[0].pool_bytes: unknown key here (\"pool_bytes\" is a key of the top level, "
           "not of a models[] entry) (allowed: name, path, group, strategy, weights)", cfg_path);
  ck_assert_str_eq(msg, want);
  /* A model key typo: the short list whole. */
  ck_assert_int_eq(load_text("{\"models\": [{\"name\": \"a\", \"path\": \"/a\", \"strategie\": \"best\"}]}", &cfg, msg,
                             sizeof(msg)), AR_ECONFIG);
  snprintf(want, sizeof(want), "%s: models[0].strategie: unknown key; did you mean \"strategy\"? (allowed: name, path, "
           "group, strategy, weights)", cfg_path);
  ck_assert_str_eq(msg, want);
  int listed = 0;
  ck_assert_int_eq(allowed_list(msg, &listed), 0);
  ck_assert_int_eq(listed, 5);
  /* A key longer than the message: cut, within the buffer. */
  char *huge = malloc(2100);
  ck_assert_ptr_nonnull(huge);
  int off = snprintf(huge, 2100, "{\"models\": [], \"");
  memset(huge + off, 'k', 2000);
  snprintf(huge + off + 2000, 2100 - (size_t)off - 2000, "\": 1}");
  ck_assert_int_eq(load_text(huge, &cfg, msg, sizeof(msg)), AR_ECONFIG);
  ck_assert_uint_eq(strlen(msg), sizeof(msg) - 1);
  free(huge);
  /* A smaller buffer: fewer names, still whole, the count still right. */
  char small[200];
  ck_assert_int_eq(load_text("{\"models\": [], \"pool_byte\": 1}", &cfg, small, sizeof(small)), AR_ECONFIG);
  ck_assert_uint_lt(strlen(small), sizeof(small) - 1);
  int more = allowed_list(small, &listed);
  ck_assert_int_ge(listed, 3);
  ck_assert_int_eq(listed + more, (int)n_root);
}
END_TEST

START_TEST(missing_file_is_enoent) {
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_config_load("/nonexistent/arenad.json", &cfg, msg, sizeof(msg)), AR_ENOENT);
  ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/arenad.json"));
}
END_TEST

START_TEST(example_config_is_valid) {
  /* The example shipped in systemd/ must pass its own validator. */
  ar_config_t cfg;
  char msg[AR_MSG_BYTES];
  int rc = ar_config_load(AR_SRCDIR "/systemd/arenad.json.example", &cfg, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_uint_ge(cfg.n_models, 1);
}
END_TEST

static Suite *config_suite(void) {
  Suite *s = suite_create("config");
  TCase *tc = tcase_create("load");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, defaults_are_documented_values);
  tcase_add_test(tc, full_valid_file);
  tcase_add_test(tc, relative_model_path_too_long_is_named);
  tcase_add_test(tc, access_keys);
  tcase_add_test(tc, minimal_file_gets_defaults);
  tcase_add_test(tc, size_strings);
  tcase_add_test(tc, compact_after_unload_key);
  tcase_add_test(tc, max_while_iterations_key);
  tcase_add_test(tc, metrics_listen_key);
  tcase_add_loop_test(tc, bad_key_named_in_message, 0, (int)(sizeof(bad) / sizeof(bad[0])));
  tcase_add_test(tc, memory_limit_key);
  tcase_add_test(tc, busy_poll_keys);
  tcase_add_test(tc, stats_keys);
  tcase_add_test(tc, session_keys);
  tcase_add_test(tc, pending_frame_budget_key);
  tcase_add_test(tc, per_uid_share_keys);
  tcase_add_test(tc, too_many_models);
  tcase_add_test(tc, unknown_key_suggests_and_lists_whole_names);
  tcase_add_test(tc, missing_file_is_enoent);
  tcase_add_test(tc, example_config_is_valid);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(config_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
