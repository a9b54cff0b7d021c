/* ar_config.c - reads and validates the daemon's JSON configuration (see ar_config.h).
 *
 * The file is parsed with jansson, then every key is checked by hand so that an error names the key
 * (with its array index, e.g. "models[1].group") and what is wrong with it. Unknown keys are errors:
 * a typo in a service config should fail at `arenad --check-config`, not be silently ignored.
 * Nothing here touches the pool or the loader; the daemon acts on the validated struct.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "common/ar_path.h"
#include "daemon/ar_config.h"

/* Limits (inclusive). Sizes are bytes. */
#define AR_CFG_POOL_MIN AR_CONFIG_POOL_MIN
#define AR_CFG_POOL_MAX AR_CONFIG_POOL_MAX
#define AR_CFG_FRAME_MIN 1024ull
#define AR_CFG_FRAME_MAX 0xffffffffull        /* frames carry a 32-bit length */
#define AR_CFG_PENDING_FRAMES_MAX (1ull << 40)   /* max_pending_frame_bytes; its floor is max_frame_bytes */
#define AR_CFG_PENDING_FRAMES_PER_FRAME 4        /* its default, in max_frame_bytes */
#define AR_CFG_WORKERS_MAX 256u
#define AR_CFG_CONN_MAX 65536u
#define AR_CFG_INFLIGHT_MAX 65536u
#define AR_CFG_PENDING_MIN (64ull * 1024)
#define AR_CFG_PENDING_MAX (1ull << 40)
#define AR_CFG_DECODE_MIN (1ull << 20)
#define AR_CFG_DECODE_MAX (1ull << 40)
#define AR_CFG_BUFFERS_MAX 1024u
#define AR_CFG_BUFFER_BYTES_MAX (1ull << 40)
#define AR_CFG_TIMEOUT_MAX 86400000u           /* one day, in ms */
#define AR_CFG_MODEL_MIN 1024ull
#define AR_CFG_MODEL_MAX (1ull << 40)
#define AR_CFG_MEMORY_MIN (16ull << 20)          /* memory_limit: below this nothing loads */
#define AR_CFG_MEMORY_MAX (1ull << 40)

/* Planner strategy names accepted in models[i].strategy (the names ar_strategy_name() prints). */
static const char *const strategy_names[] = {"linear", "first-fit", "greedy-by-size", "best"};
/* Weight modes accepted in "weights" (the names ar_weights_name() prints). */
static const char *const weights_names[] = {"stored", "fp32"};

/* The keys load_root and load_model accept, in the order an unknown-key message lists them (the
 * common ones first: when the message must be bounded, the tail is what is left out). */
static const char *const root_keys[] = {
  "models", "model_dirs", "pool_bytes", "socket", "socket_mode", "socket_group", "metrics_listen", "workers",
  "threads",
  "weights", "admin_uids", "admin_gids", "memory_limit", "compact_after_unload", "max_model_bytes",
  "max_resize_activation_bytes", "max_frame_bytes", "max_pending_frame_bytes", "max_connections",
  "max_connections_per_uid", "max_inflight_per_connection", "max_pending_reply_bytes",
  "max_unwritten_reply_bytes", "max_decode_bytes", "max_queue_per_model", "max_buffers_per_connection",
  "max_buffer_bytes_per_connection", "request_timeout_ms", "idle_timeout_ms", "send_timeout_ms",
  "drain_timeout_ms", "busy_poll_us", "inline_invoke_us", "admin_reserved_connections",
  "max_pending_frame_bytes_per_uid", "max_unwritten_reply_bytes_per_uid", "max_buffer_bytes_per_uid",
  "stats_refresh_ms", "stats_rate_per_s", "stats_burst",
  "max_while_iterations", "max_while_ms",
  "max_sessions_per_model", "max_sessions_per_uid", "session_idle_timeout_ms"};
size_t ar_config_root_keys(const char *const **keys) {
  *keys = root_keys;
  return AR_ARRAY_LEN(root_keys);
}
static const char *const model_keys[] = {"name", "path", "group", "strategy", "weights"};

/* Keys longer than this get no "did you mean" (the distance table lives on the stack). */
#define AR_CFG_SUGGEST_MAX 64

static int key_lower(char c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

/* Edit distance between a and b (insert, delete, substitute, swap two neighbours: "pool_bytse" is
 * 1 from "pool_bytes"), counting ASCII case as no difference; both at most AR_CFG_SUGGEST_MAX. */
static size_t key_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  size_t d[3][AR_CFG_SUGGEST_MAX + 1];   /* rows i-2, i-1, i (mod 3) */
  for (size_t j = 0; j <= lb; j++) d[0][j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t *cur = d[i % 3], *prev = d[(i - 1) % 3], *prev2 = d[(i + 1) % 3];
    cur[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      int ca = key_lower(a[i - 1]), cb = key_lower(b[j - 1]);
      size_t best = prev[j - 1] + (ca != cb);
      if (prev[j] + 1 < best) best = prev[j] + 1;
      if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
      if (i > 1 && j > 1 && ca == key_lower(b[j - 2]) && key_lower(a[i - 2]) == cb && prev2[j - 2] + 1 < best)
        best = prev2[j - 2] + 1;
      cur[j] = best;
    }
  }
  return d[la % 3][lb];
}

/* The key of `keys` closest to k, when close enough to be a likely typo (at most a third of the
 * longer name differs, and at least one character is right), else NULL; a key k is a prefix of
 * (pool -> pool_bytes, max_frame -> max_frame_bytes) counts as close. */
static const char *key_suggest(const char *k, const char *const *keys, size_t n_keys) {
  size_t lk = strlen(k);
  if (lk == 0 || lk > AR_CFG_SUGGEST_MAX) return NULL;
  const char *best = NULL;
  size_t best_d = SIZE_MAX;
  for (size_t i = 0; i < n_keys; i++) {
    size_t lc = strlen(keys[i]), longer = lc > lk ? lc : lk;
    size_t dist = key_distance(k, keys[i]);
    if (dist * 3 > longer && !(lk >= 4 && lk < lc && strncasecmp(k, keys[i], lk) == 0)) continue;
    if (dist < best_d) {
      best = keys[i];
      best_d = dist;
    }
  }
  return best;
}

/* AR_ECONFIG "LABEL: unknown key; did you mean "X"? (allowed: a, b, ... and N more, see
 * arenad.json(5))" into msg[n]: the suggestion from `keys`, or else a note when k is a key of the
 * other level (`other`, named by other_where); the list cut between names, never inside one, so
 * that the whole message fits n bytes. */
static int unknown_key(char *msg, size_t n, const char *label, const char *k, const char *const *keys,
                       size_t n_keys, const char *const *other, size_t n_other, const char *other_where) {
  size_t o = 0;
  /* Appends while there is room (a huge key truncates the message, never writes past it). */
#define AR__PUT(...)                                                          \
  do {                                                                       \
    if (o < n) {                                                             \
      int w_ = snprintf(msg + o, n - o, __VA_ARGS__);                        \
      if (w_ > 0) o += (size_t)w_;                                           \
    }                                                                        \
  } while (0)
  if (msg == NULL || n == 0) return AR_ECONFIG;
  AR__PUT("%s: unknown key", label);
  const char *hint = key_suggest(k, keys, n_keys);
  bool elsewhere = false;
  for (size_t i = 0; i < n_other && hint == NULL; i++) elsewhere |= strcmp(k, other[i]) == 0;
  if (hint != NULL) AR__PUT("; did you mean \"%s\"?", hint);
  else if (elsewhere) AR__PUT(" here (\"%s\" is a key %s)", k, other_where);
  /* The names that fit, leaving room for ", ... and NN more, see arenad.json(5))". */
  static const char tail_fmt[] = " and %zu more, see arenad.json(5))";
  size_t reserve = sizeof(tail_fmt) + 8;
  AR__PUT(" (allowed: ");
  size_t listed = 0;
  for (; listed < n_keys; listed++) {
    size_t need = strlen(keys[listed]) + 2 + (listed + 1 < n_keys ? reserve : 1);
    if (o + need >= n) break;
    AR__PUT("%s%s", listed ? ", " : "", keys[listed]);
  }
  if (listed == n_keys) AR__PUT(")");
  else AR__PUT("%s" " and %zu more, see arenad.json(5))", listed ? "," : "", n_keys - listed);
#undef AR__PUT
  return AR_ECONFIG;
}

void ar_config_defaults(ar_config_t *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  snprintf(cfg->socket_path, sizeof(cfg->socket_path), "%s", "/run/arenad/arenad.sock");
  cfg->socket_mode = 0660;
  cfg->pool_bytes = 64ull << 20;
  cfg->workers = 2;
  cfg->max_frame_bytes = 64ull << 20;
  cfg->max_pending_frame_bytes = AR_CFG_PENDING_FRAMES_PER_FRAME * cfg->max_frame_bytes;
  cfg->max_pending_frame_bytes_per_uid = AR_MAX(cfg->max_frame_bytes, cfg->max_pending_frame_bytes / 4);
  cfg->max_connections = 256;
  cfg->admin_reserved_connections = 4;
  cfg->max_connections_per_uid = 64;
  cfg->max_inflight_per_connection = 64;
  cfg->max_pending_reply_bytes = 16ull << 20;
  cfg->max_unwritten_reply_bytes = 64ull << 20;
  cfg->max_unwritten_reply_bytes_per_uid = cfg->max_unwritten_reply_bytes;
  cfg->max_decode_bytes = 132ull << 20;
  cfg->max_queue_per_model = 256;
  cfg->max_buffers_per_connection = 16;
  cfg->max_buffer_bytes_per_connection = 256ull << 20;
  cfg->max_buffer_bytes_per_uid = 1ull << 30;
  cfg->request_timeout_ms = 10000;
  cfg->idle_timeout_ms = 300000;
  cfg->send_timeout_ms = 30000;
  cfg->drain_timeout_ms = 5000;
  cfg->busy_poll_us = AR_CONFIG_BUSY_POLL_DEFAULT;
  cfg->inline_invoke_us = AR_CONFIG_INLINE_INVOKE_DEFAULT;
  cfg->max_model_bytes = 256ull << 20;
  cfg->max_resize_activation_bytes = 32ull << 20;
  cfg->stats_refresh_ms = 1000;
  cfg->stats_rate_per_s = 10;
  cfg->stats_burst = 20;
  cfg->max_sessions_per_model = 1024;
  cfg->max_sessions_per_uid = 256;
  cfg->session_idle_timeout_ms = 600000;
  cfg->compact_after_unload = true;
  cfg->max_while_iterations = AR_CONFIG_WHILE_DEFAULT;
  cfg->max_while_ms = 10000;
  cfg->admin_uids[cfg->n_admin_uids++] = 0;
  if (geteuid() != 0) cfg->admin_uids[cfg->n_admin_uids++] = geteuid();
  cfg->n_model_dirs = 1;
  cfg->model_dirs_default = true;
  snprintf(cfg->model_dirs[0], sizeof(cfg->model_dirs[0]), "%s", AR_CONFIG_DEFAULT_MODEL_DIR);
}

int ar_config_add_model_dir(ar_config_t *cfg, const char *dir, char *msg, size_t msg_bytes) {
  size_t len = strlen(dir);
  if (len == 0 || len >= AR_CONFIG_DIR_MAX)
    return ar_errf(msg, msg_bytes, AR_ECONFIG, "model directory: must be 1 to %d bytes", AR_CONFIG_DIR_MAX - 1);
  for (uint32_t i = 0; i < cfg->n_model_dirs; i++)
    if (strcmp(cfg->model_dirs[i], dir) == 0) return 0;
  if (cfg->n_model_dirs >= AR_CONFIG_MAX_DIRS)
    return ar_errf(msg, msg_bytes, AR_ECONFIG, "model directory '%s': at most %d", dir, AR_CONFIG_MAX_DIRS);
  memcpy(cfg->model_dirs[cfg->n_model_dirs++], dir, len + 1);
  return 0;
}

static int get_string(json_t *v, const char *key, char *dst, size_t cap, bool allow_empty,
                      bool name_chars, char *msg, size_t n);

/* admin_uids / admin_gids: an array of at most AR_CONFIG_MAX_IDS integers in [0, 2^32-2]. */
static int get_ids(json_t *v, const char *key, uint32_t *ids, uint32_t *n_out, char *msg, size_t n) {
  if (!json_is_array(v) || json_array_size(v) > AR_CONFIG_MAX_IDS)
    return ar_errf(msg, n, AR_ECONFIG, "%s: must be an array of at most %d numeric ids", key, AR_CONFIG_MAX_IDS);
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) >= 0xffffffffll)
      return ar_errf(msg, n, AR_ECONFIG, "%s[%zu]: must be a numeric id in [0, 4294967294]", key, i);
    ids[i] = (uint32_t)json_integer_value(e);
  }
  *n_out = (uint32_t)json_array_size(v);
  return 0;
}

/* model_dirs: an array of 1..AR_CONFIG_MAX_DIRS absolute paths. */
static int get_dirs(json_t *v, ar_config_t *cfg, char *msg, size_t n) {
  if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > AR_CONFIG_MAX_DIRS)
    return ar_errf(msg, n, AR_ECONFIG, "model_dirs: must be an array of 1 to %d absolute directory paths",
                   AR_CONFIG_MAX_DIRS);
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    char key[48];
    snprintf(key, sizeof(key), "model_dirs[%zu]", i);
    int rc = get_string(e, key, cfg->model_dirs[i], sizeof(cfg->model_dirs[i]), false, false, msg, n);
    if (rc != 0) return rc;
    if (cfg->model_dirs[i][0] != '/') return ar_errf(msg, n, AR_ECONFIG, "%s: must be an absolute path", key);
  }
  cfg->n_model_dirs = (uint32_t)json_array_size(v);
  cfg->model_dirs_default = false;
  return 0;
}

/* Parse "123", "64K", "64M", "1G" (powers of 1024; suffix case-insensitive) into *out. */
static int parse_size_string(const char *s, uint64_t *out) {
  uint64_t v = 0;
  const char *p = s;
  if (*p < '0' || *p > '9') return -1;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (ar_mul_overflow_u64(v, 10, &v) || ar_add_overflow_u64(v, (uint64_t)(*p - '0'), &v)) return -1;
  }
  uint64_t mult = 1;
  switch (*p) {
    case '\0': break;
    case 'k': case 'K': mult = 1ull << 10; p++; break;
    case 'm': case 'M': mult = 1ull << 20; p++; break;
    case 'g': case 'G': mult = 1ull << 30; p++; break;
    default: return -1;
  }
  if (*p != '\0') return -1;
  if (ar_mul_overflow_u64(v, mult, &v)) return -1;
  *out = v;
  return 0;
}

int ar_config_parse_size(const char *key, const char *s, uint64_t lo, uint64_t hi, uint64_t *out, char *msg,
                         size_t n) {
  uint64_t x = 0;
  if (parse_size_string(s, &x) != 0)
    return ar_errf(msg, n, AR_ECONFIG,
                   "%s: \"%s\" is not a size (bytes, or a number with a K, M or G suffix such as \"64M\")", key, s);
  if (x < lo || x > hi)
    return ar_errf(msg, n, AR_ECONFIG, "%s: %" PRIu64 " bytes is out of range [%" PRIu64 ", %" PRIu64 "]", key, x,
                   lo, hi);
  *out = x;
  return 0;
}

/* A size in bytes: a non-negative integer or a size string, within [lo, hi]. */
static int get_size(json_t *v, const char *key, uint64_t lo, uint64_t hi, uint64_t *out, char *msg,
                    size_t n) {
  uint64_t x = 0;
  if (json_is_integer(v)) {
    json_int_t i = json_integer_value(v);
    if (i < 0) return ar_errf(msg, n, AR_ECONFIG, "%s: must not be negative (got %" JSON_INTEGER_FORMAT ")", key, i);
    x = (uint64_t)i;
  } else if (json_is_string(v)) {
    if (parse_size_string(json_string_value(v), &x) != 0)
      return ar_errf(msg, n, AR_ECONFIG,
                     "%s: \"%s\" is not a size (bytes, or a number with a K, M or G suffix such as \"64M\")",
                     key, json_string_value(v));
  } else {
    return ar_errf(msg, n, AR_ECONFIG, "%s: must be a size in bytes (integer or string such as \"64M\")", key);
  }
  if (x < lo || x > hi)
    return ar_errf(msg, n, AR_ECONFIG, "%s: %" PRIu64 " bytes is out of range [%" PRIu64 ", %" PRIu64 "]",
                   key, x, lo, hi);
  *out = x;
  return 0;
}

/* An integer within [lo, hi]. */
static int get_uint(json_t *v, const char *key, uint32_t lo, uint32_t hi, uint32_t *out, char *msg,
                    size_t n) {
  if (!json_is_integer(v)) return ar_errf(msg, n, AR_ECONFIG, "%s: must be an integer", key);
  json_int_t i = json_integer_value(v);
  if (i < (json_int_t)lo || i > (json_int_t)hi)
    return ar_errf(msg, n, AR_ECONFIG, "%s: %" JSON_INTEGER_FORMAT " is out of range [%u, %u]", key, i,
                   lo, hi);
  *out = (uint32_t)i;
  return 0;
}

static int get_bool(json_t *v, const char *key, bool *out, char *msg, size_t n) {
  if (!json_is_boolean(v)) return ar_errf(msg, n, AR_ECONFIG, "%s: must be true or false", key);
  *out = json_is_true(v);
  return 0;
}

/* A string of at most cap-1 bytes; `name_chars` restricts it to [A-Za-z0-9_.-]. */
static int get_string(json_t *v, const char *key, char *dst, size_t cap, bool allow_empty,
                      bool name_chars, char *msg, size_t n) {
  const char *what = name_chars ? "a string of [A-Za-z0-9_.-]" : "a string";
  if (!json_is_string(v))
    return ar_errf(msg, n, AR_ECONFIG, "%s: must be %s, at most %zu bytes", key, what, cap - 1);
  const char *s = json_string_value(v);
  size_t len = json_string_length(v);
  if (len == 0 && !allow_empty) return ar_errf(msg, n, AR_ECONFIG, "%s: must not be empty", key);
  if (len >= cap || strlen(s) != len)  /* an embedded NUL would silently shorten the value */
    return ar_errf(msg, n, AR_ECONFIG, "%s: must be %s, at most %zu bytes", key, what, cap - 1);
  if (name_chars) {
    for (size_t i = 0; i < len; i++) {
      char c = s[i];
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                c == '.' || c == '-';
      if (!ok)
        return ar_errf(msg, n, AR_ECONFIG, "%s: must be %s, at most %zu bytes (bad character at %zu)", key,
                       what, cap - 1, i);
    }
  }
  memcpy(dst, s, len + 1);
  return 0;
}

int ar_config_parse_listen(const char *key, const char *s, ar_listen_addr_t *out, char *msg, size_t n) {
  memset(out, 0, sizeof(*out));
  if (s[0] == '/') {
    if (strlen(s) >= sizeof(out->path))
      return ar_errf(msg, n, AR_ECONFIG, "%s: a Unix socket path must be at most %zu bytes", key, sizeof(out->path) - 1);
    out->is_unix = true;
    snprintf(out->path, sizeof(out->path), "%s", s);
    return 0;
  }
  char host[64];
  const char *port;
  bool v6 = s[0] == '[';
  if (v6) {
    const char *end = strchr(s, ']');
    if (end == NULL || end[1] != ':' || (size_t)(end - s - 1) >= sizeof(host))
      return ar_errf(msg, n, AR_ECONFIG, "%s: \"%.80s\": an IPv6 address is written in brackets, then the port "
                     "(\"[::1]:9464\")", key, s);
    memcpy(host, s + 1, (size_t)(end - s - 1));
    host[end - s - 1] = '\0';
    port = end + 2;
  } else {
    const char *colon = strrchr(s, ':');
    if (colon == NULL || (size_t)(colon - s) >= sizeof(host))
      return ar_errf(msg, n, AR_ECONFIG, "%s: \"%.80s\": must be ADDRESS:PORT (\"127.0.0.1:9464\", \"[::1]:9464\") "
                     "or an absolute Unix socket path", key, s);
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    port = colon + 1;
  }
  unsigned long p = 0;
  size_t digits = strspn(port, "0123456789");
  if (digits > 0 && digits <= 5 && port[digits] == '\0') p = strtoul(port, NULL, 10);
  if (p < 1 || p > 65535)
    return ar_errf(msg, n, AR_ECONFIG, "%s: \"%.80s\": the port must be a number in [1, 65535]", key, s);
  if (v6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&out->sa;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)p);
    if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
      return ar_errf(msg, n, AR_ECONFIG, "%s: \"%.80s\": '%s' is not an IPv6 address", key, s, host);
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&out->sa;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)p);
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
      return ar_errf(msg, n, AR_ECONFIG, "%s: \"%.80s\": the host must be an IPv4 address (127.0.0.1) or an IPv6 "
                     "address in brackets ([::1]); names are not resolved", key, s);
  }
  return 0;
}

/* socket_mode: "0660" (octal string) or an integer, permission bits only. */
static int get_mode(json_t *v, const char *key, uint32_t *out, char *msg, size_t n) {
  long long m = -1;
  if (json_is_integer(v)) {
    m = json_integer_value(v);
  } else if (json_is_string(v)) {
    const char *s = json_string_value(v);
    size_t len = strlen(s);
    if (len >= 1 && len <= 4 && strspn(s, "01234567") == len) m = strtoll(s, NULL, 8);
  } else {
    return ar_errf(msg, n, AR_ECONFIG, "%s: must be an octal string such as \"0660\"", key);
  }
  if (m < 0 || m > 0777)
    return ar_errf(msg, n, AR_ECONFIG, "%s: must be permission bits between \"0000\" and \"0777\"", key);
  *out = (uint32_t)m;
  return 0;
}

static int get_weights(json_t *v, const char *key, char *out, size_t out_bytes, char *msg, size_t n) {
  int rc = get_string(v, key, out, out_bytes, false, false, msg, n);
  if (rc != 0) return rc;
  for (size_t i = 0; i < AR_ARRAY_LEN(weights_names); i++)
    if (strcmp(out, weights_names[i]) == 0) return 0;
  return ar_errf(msg, n, AR_ECONFIG, "%s: unknown weights mode \"%s\" (stored, fp32)", key, out);
}

static int load_model(json_t *obj, uint32_t idx, ar_config_model_t *m, char *msg, size_t n) {
  char key[96];
  if (!json_is_object(obj))
    return ar_errf(msg, n, AR_ECONFIG, "models[%u]: must be an object with name and path", idx);
  memset(m, 0, sizeof(*m));
  snprintf(m->strategy, sizeof(m->strategy), "%s", "best");
  bool have_name = false, have_path = false;
  const char *k;
  json_t *v;
  json_object_foreach(obj, k, v) {
    int rc;
    snprintf(key, sizeof(key), "models[%u].%s", idx, k);
    if (strcmp(k, "name") == 0) {
      rc = get_string(v, key, m->name, sizeof(m->name), false, true, msg, n);
      have_name = true;
    } else if (strcmp(k, "path") == 0) {
      rc = get_string(v, key, m->path, sizeof(m->path), false, false, msg, n);
      have_path = true;
    } else if (strcmp(k, "group") == 0) {
      rc = get_string(v, key, m->group, sizeof(m->group), true, true, msg, n);
    } else if (strcmp(k, "strategy") == 0) {
      rc = get_string(v, key, m->strategy, sizeof(m->strategy), false, false, msg, n);
      if (rc == 0) {
        bool known = false;
        for (size_t i = 0; i < AR_ARRAY_LEN(strategy_names); i++)
          if (strcmp(m->strategy, strategy_names[i]) == 0) known = true;
        if (!known)
          rc = ar_errf(msg, n, AR_ECONFIG,
                       "%s: unknown planner strategy \"%s\" (linear, first-fit, greedy-by-size, best)", key,
                       m->strategy);
      }
    } else if (strcmp(k, "weights") == 0) {
      rc = get_weights(v, key, m->weights, sizeof(m->weights), msg, n);
    } else {
      rc = unknown_key(msg, n, key, k, model_keys, AR_ARRAY_LEN(model_keys), root_keys, AR_ARRAY_LEN(root_keys),
                       "of the top level, not of a models[] entry");
    }
    if (rc != 0) return rc;
  }
  if (!have_name) return ar_errf(msg, n, AR_ECONFIG, "models[%u].name: missing (required)", idx);
  if (!have_path) return ar_errf(msg, n, AR_ECONFIG, "models[%u].path: missing (required)", idx);
  return 0;
}

/* A relative models[i].path names a file beside the config file: prefix `base` (the file's
 * directory, absolute), so that start-up, a reload after the daemon changed to "/" and
 * --check-config all read the same file whatever the working directory. */
static int resolve_model_paths(ar_config_t *cfg, const char *base, char *msg, size_t n) {
  for (uint32_t i = 0; i < cfg->n_models; i++) {
    char *p = cfg->models[i].path;
    if (p[0] == '/') continue;
    /* base is "/" for a config file in the root directory: no second slash after it. */
    size_t nb = strlen(base), np = strlen(p), sep = base[nb - 1] != '/';
    if (nb + sep + np >= sizeof(cfg->models[i].path))
      return ar_errf(msg, n, AR_ECONFIG, "models[%u].path: longer than %zu bytes once put after the config "
                     "file's directory %s", i, sizeof(cfg->models[i].path) - 1, base);
    memmove(p + nb + sep, p, np + 1);
    memcpy(p, base, nb);
    if (sep) p[nb] = '/';
  }
  return 0;
}

static int load_root(json_t *root, ar_config_t *cfg, const char *base, char *msg, size_t n) {
  if (!json_is_object(root)) return ar_errf(msg, n, AR_ECONFIG, "(top level): must be a JSON object");
  bool have_models = false, have_pending_frames = false, have_frames_per_uid = false, have_replies_per_uid = false;
  bool have_reserved = false;
  const char *k;
  json_t *v;
  json_object_foreach(root, k, v) {
    int rc;
    if (strcmp(k, "socket") == 0) {
      rc = get_string(v, k, cfg->socket_path, sizeof(cfg->socket_path), false, false, msg, n);
    } else if (strcmp(k, "socket_mode") == 0) {
      rc = get_mode(v, k, &cfg->socket_mode, msg, n);
    } else if (strcmp(k, "socket_group") == 0) {
      rc = get_string(v, k, cfg->socket_group, sizeof(cfg->socket_group), true, true, msg, n);
    } else if (strcmp(k, "metrics_listen") == 0) {
      ar_listen_addr_t la;
      rc = get_string(v, k, cfg->metrics_listen, sizeof(cfg->metrics_listen), true, false, msg, n);
      if (rc == 0 && cfg->metrics_listen[0]) rc = ar_config_parse_listen(k, cfg->metrics_listen, &la, msg, n);
    } else if (strcmp(k, "pool_bytes") == 0) {
      rc = get_size(v, k, AR_CFG_POOL_MIN, AR_CFG_POOL_MAX, &cfg->pool_bytes, msg, n);
    } else if (strcmp(k, "workers") == 0) {
      rc = get_uint(v, k, 1, AR_CFG_WORKERS_MAX, &cfg->workers, msg, n);
    } else if (strcmp(k, "threads") == 0) {
      rc = get_uint(v, k, 1, AR_CONFIG_THREADS_MAX, &cfg->threads, msg, n);
    } else if (strcmp(k, "max_frame_bytes") == 0) {
      rc = get_size(v, k, AR_CFG_FRAME_MIN, AR_CFG_FRAME_MAX, &cfg->max_frame_bytes, msg, n);
    } else if (strcmp(k, "max_pending_frame_bytes") == 0) {
      /* Checked against max_frame_bytes below, once every key is read (JSON keys have no order). */
      rc = get_size(v, k, AR_CFG_FRAME_MIN, AR_CFG_PENDING_FRAMES_MAX, &cfg->max_pending_frame_bytes, msg, n);
      have_pending_frames = true;
    } else if (strcmp(k, "max_pending_frame_bytes_per_uid") == 0) {
      /* Checked against max_frame_bytes and max_pending_frame_bytes below. */
      rc = get_size(v, k, AR_CFG_FRAME_MIN, AR_CFG_PENDING_FRAMES_MAX, &cfg->max_pending_frame_bytes_per_uid, msg, n);
      have_frames_per_uid = true;
    } else if (strcmp(k, "admin_reserved_connections") == 0) {
      rc = get_uint(v, k, 0, AR_CFG_CONN_MAX - 1, &cfg->admin_reserved_connections, msg, n);
      have_reserved = true;
    } else if (strcmp(k, "max_connections") == 0) {
      rc = get_uint(v, k, 1, AR_CFG_CONN_MAX, &cfg->max_connections, msg, n);
    } else if (strcmp(k, "max_connections_per_uid") == 0) {
      rc = get_uint(v, k, 1, AR_CFG_CONN_MAX, &cfg->max_connections_per_uid, msg, n);
    } else if (strcmp(k, "max_inflight_per_connection") == 0) {
      rc = get_uint(v, k, 1, AR_CFG_INFLIGHT_MAX, &cfg->max_inflight_per_connection, msg, n);
    } else if (strcmp(k, "max_pending_reply_bytes") == 0) {
      rc = get_size(v, k, AR_CFG_PENDING_MIN, AR_CFG_PENDING_MAX, &cfg->max_pending_reply_bytes, msg, n);
    } else if (strcmp(k, "max_unwritten_reply_bytes") == 0) {
      rc = get_size(v, k, AR_CFG_PENDING_MIN, AR_CFG_PENDING_MAX, &cfg->max_unwritten_reply_bytes, msg, n);
    } else if (strcmp(k, "max_unwritten_reply_bytes_per_uid") == 0) {
      rc = get_size(v, k, AR_CFG_PENDING_MIN, AR_CFG_PENDING_MAX, &cfg->max_unwritten_reply_bytes_per_uid, msg, n);
      have_replies_per_uid = true;
    } else if (strcmp(k, "max_decode_bytes") == 0) {
      rc = get_size(v, k, AR_CFG_DECODE_MIN, AR_CFG_DECODE_MAX, &cfg->max_decode_bytes, msg, n);
    } else if (strcmp(k, "max_queue_per_model") == 0) {
      rc = get_uint(v, k, 1, AR_CFG_INFLIGHT_MAX, &cfg->max_queue_per_model, msg, n);
    } else if (strcmp(k, "max_buffers_per_connection") == 0) {
      rc = get_uint(v, k, 0, AR_CFG_BUFFERS_MAX, &cfg->max_buffers_per_connection, msg, n);
    } else if (strcmp(k, "max_buffer_bytes_per_connection") == 0) {
      rc = get_size(v, k, 0, AR_CFG_BUFFER_BYTES_MAX, &cfg->max_buffer_bytes_per_connection, msg, n);
    } else if (strcmp(k, "max_buffer_bytes_per_uid") == 0) {
      rc = get_size(v, k, 0, AR_CFG_BUFFER_BYTES_MAX, &cfg->max_buffer_bytes_per_uid, msg, n);
    } else if (strcmp(k, "request_timeout_ms") == 0) {
      rc = get_uint(v, k, 0, AR_CFG_TIMEOUT_MAX, &cfg->request_timeout_ms, msg, n);
    } else if (strcmp(k, "idle_timeout_ms") == 0) {
      rc = get_uint(v, k, 0, AR_CFG_TIMEOUT_MAX, &cfg->idle_timeout_ms, msg, n);
    } else if (strcmp(k, "send_timeout_ms") == 0) {
      rc = get_uint(v, k, 0, AR_CFG_TIMEOUT_MAX, &cfg->send_timeout_ms, msg, n);
    } else if (strcmp(k, "drain_timeout_ms") == 0) {
      rc = get_uint(v, k, 0, AR_CFG_TIMEOUT_MAX, &cfg->drain_timeout_ms, msg, n);
    } else if (strcmp(k, "busy_poll_us") == 0) {
      rc = get_uint(v, k, 0, AR_CONFIG_BUSY_POLL_MAX, &cfg->busy_poll_us, msg, n);
    } else if (strcmp(k, "inline_invoke_us") == 0) {
      rc = get_uint(v, k, 0, AR_CONFIG_BUSY_POLL_MAX, &cfg->inline_invoke_us, msg, n);
    } else if (strcmp(k, "max_model_bytes") == 0) {
      rc = get_size(v, k, AR_CFG_MODEL_MIN, AR_CFG_MODEL_MAX, &cfg->max_model_bytes, msg, n);
    } else if (strcmp(k, "max_resize_activation_bytes") == 0) {
      rc = get_size(v, k, 0, AR_CFG_POOL_MAX, &cfg->max_resize_activation_bytes, msg, n);
    } else if (strcmp(k, "memory_limit") == 0) {
      /* 0 = no bound; else at least AR_CFG_MEMORY_MIN (the daemon's code alone is ~10 MiB). */
      rc = get_size(v, k, 0, AR_CFG_MEMORY_MAX, &cfg->memory_limit_bytes, msg, n);
      if (rc == 0 && cfg->memory_limit_bytes != 0 && cfg->memory_limit_bytes < AR_CFG_MEMORY_MIN)
        rc = ar_errf(msg, n, AR_ECONFIG, "%s: %" PRIu64 " bytes is out of range: 0 (no limit) or [%llu, %llu]", k,
                     cfg->memory_limit_bytes, AR_CFG_MEMORY_MIN, AR_CFG_MEMORY_MAX);
    } else if (strcmp(k, "stats_refresh_ms") == 0) {
      rc = get_uint(v, k, 0, AR_CONFIG_STATS_REFRESH_MAX, &cfg->stats_refresh_ms, msg, n);
    } else if (strcmp(k, "stats_rate_per_s") == 0) {
      rc = get_uint(v, k, 0, AR_CONFIG_STATS_RATE_MAX, &cfg->stats_rate_per_s, msg, n);
    } else if (strcmp(k, "stats_burst") == 0) {
      rc = get_uint(v, k, 1, AR_CONFIG_STATS_RATE_MAX, &cfg->stats_burst, msg, n);
    } else if (strcmp(k, "max_sessions_per_model") == 0) {
      rc = get_uint(v, k, 0, AR_CONFIG_SESSIONS_MAX, &cfg->max_sessions_per_model, msg, n);
    } else if (strcmp(k, "max_sessions_per_uid") == 0) {
      rc = get_uint(v, k, 1, AR_CONFIG_SESSIONS_MAX, &cfg->max_sessions_per_uid, msg, n);
    } else if (strcmp(k, "session_idle_timeout_ms") == 0) {
      rc = get_uint(v, k, 0, AR_CONFIG_SESSION_IDLE_MAX, &cfg->session_idle_timeout_ms, msg, n);
    } else if (strcmp(k, "compact_after_unload") == 0) {
      rc = get_bool(v, k, &cfg->compact_after_unload, msg, n);
    } else if (strcmp(k, "max_while_iterations") == 0) {
      rc = get_uint(v, k, 1, AR_CONFIG_WHILE_MAX, &cfg->max_while_iterations, msg, n);
    } else if (strcmp(k, "max_while_ms") == 0) {
      rc = get_uint(v, k, 0, AR_CFG_TIMEOUT_MAX, &cfg->max_while_ms, msg, n);
    } else if (strcmp(k, "admin_uids") == 0) {
      rc = get_ids(v, k, (uint32_t *)cfg->admin_uids, &cfg->n_admin_uids, msg, n);
    } else if (strcmp(k, "admin_gids") == 0) {
      rc = get_ids(v, k, (uint32_t *)cfg->admin_gids, &cfg->n_admin_gids, msg, n);
    } else if (strcmp(k, "model_dirs") == 0) {
      rc = get_dirs(v, cfg, msg, n);
    } else if (strcmp(k, "weights") == 0) {
      rc = get_weights(v, k, cfg->weights, sizeof(cfg->weights), msg, n);
    } else if (strcmp(k, "models") == 0) {
      have_models = true;
      if (!json_is_array(v)) {
        rc = ar_errf(msg, n, AR_ECONFIG, "models: must be an array of {name, path, group, strategy, weights}");
      } else if (json_array_size(v) > AR_CONFIG_MAX_MODELS) {
        rc = ar_errf(msg, n, AR_ECONFIG, "models: %zu entries, at most %d", json_array_size(v),
                     AR_CONFIG_MAX_MODELS);
      } else {
        rc = 0;
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m) {
          rc = load_model(m, (uint32_t)i, &cfg->models[i], msg, n);
          if (rc != 0) break;
          for (size_t j = 0; j < i; j++)
            if (strcmp(cfg->models[j].name, cfg->models[i].name) == 0) {
              rc = ar_errf(msg, n, AR_ECONFIG, "models[%zu].name: \"%s\" is already used by models[%zu]", i,
                           cfg->models[i].name, j);
              break;
            }
          if (rc != 0) break;
        }
        if (rc == 0) cfg->n_models = (uint32_t)json_array_size(v);
      }
    } else {
      rc = unknown_key(msg, n, k, k, root_keys, AR_ARRAY_LEN(root_keys), model_keys, AR_ARRAY_LEN(model_keys),
                       "of a models[] entry, not of the top level");
    }
    if (rc != 0) return rc;
  }
  if (!have_models) return ar_errf(msg, n, AR_ECONFIG, "models: missing (required; [] for none)");
  if (!have_pending_frames) {
    cfg->max_pending_frame_bytes = AR_CFG_PENDING_FRAMES_PER_FRAME * cfg->max_frame_bytes;
  } else if (cfg->max_pending_frame_bytes < cfg->max_frame_bytes) {
    /* A frame max_frame_bytes allows could then never be received. */
    return ar_errf(msg, n, AR_ECONFIG, "max_pending_frame_bytes: %" PRIu64 " bytes is below max_frame_bytes %" PRIu64
                   " (the budget must hold at least one frame of the largest size)",
                   cfg->max_pending_frame_bytes, cfg->max_frame_bytes);
  }
  if (!have_frames_per_uid) {
    cfg->max_pending_frame_bytes_per_uid = AR_MAX(cfg->max_frame_bytes, cfg->max_pending_frame_bytes / 4);
  } else if (cfg->max_pending_frame_bytes_per_uid < cfg->max_frame_bytes ||
             cfg->max_pending_frame_bytes_per_uid > cfg->max_pending_frame_bytes) {
    /* Below max_frame_bytes a uid could never send a frame of the largest size. */
    return ar_errf(msg, n, AR_ECONFIG, "max_pending_frame_bytes_per_uid: %" PRIu64 " bytes is out of range [%" PRIu64
                   " (max_frame_bytes), %" PRIu64 " (max_pending_frame_bytes)]", cfg->max_pending_frame_bytes_per_uid,
                   cfg->max_frame_bytes, cfg->max_pending_frame_bytes);
  }
  if (!have_replies_per_uid) {
    cfg->max_unwritten_reply_bytes_per_uid = cfg->max_unwritten_reply_bytes;
  } else if (cfg->max_unwritten_reply_bytes_per_uid > cfg->max_unwritten_reply_bytes) {
    return ar_errf(msg, n, AR_ECONFIG, "max_unwritten_reply_bytes_per_uid: %" PRIu64 " bytes is above "
                   "max_unwritten_reply_bytes %" PRIu64, cfg->max_unwritten_reply_bytes_per_uid,
                   cfg->max_unwritten_reply_bytes);
  }
  if (cfg->admin_reserved_connections >= cfg->max_connections) {
    /* Non-admins would have no slot at all. */
    if (have_reserved)
      return ar_errf(msg, n, AR_ECONFIG, "admin_reserved_connections: %" PRIu32 " is not below max_connections %" PRIu32
                     " (non-admin peers need at least one slot)", cfg->admin_reserved_connections,
                     cfg->max_connections);
    cfg->admin_reserved_connections = cfg->max_connections / 2;   /* a small max_connections: half */
  }
  /* A model that does not say takes the file's default, so a reload that changes the default
   * reloads those models. */
  for (uint32_t i = 0; i < cfg->n_models; i++)
    if (cfg->models[i].weights[0] == '\0')
      snprintf(cfg->models[i].weights, sizeof(cfg->models[i].weights), "%s", cfg->weights);
  if (base != NULL) {
    int rc = resolve_model_paths(cfg, base, msg, n);
    if (rc != 0) return rc;
  }
  if (cfg->model_dirs_default && cfg->n_models > 0) {
    /* Default: where the configured models live (the operator already trusts those places). */
    cfg->n_model_dirs = 0;
    for (uint32_t i = 0; i < cfg->n_models; i++) {
      char dir[AR_CONFIG_DIR_MAX];
      if (ar_path_dir(cfg->models[i].path, dir, sizeof(dir)) != 0)
        return ar_errf(msg, n, AR_ECONFIG, "models[%u].path: directory longer than %d bytes", i,
                       AR_CONFIG_DIR_MAX - 1);
      int rc = ar_config_add_model_dir(cfg, dir, msg, n);
      if (rc != 0) return ar_errf(msg, n, AR_ECONFIG, "models[%u].path: its directory would be model_dirs "
                                  "entry %u; set model_dirs explicitly (at most %d)", i, cfg->n_model_dirs + 1,
                                  AR_CONFIG_MAX_DIRS);
    }
  }
  return 0;
}

uint64_t ar_config_memory_max(const ar_config_t *cfg) {
  uint64_t lim = cfg->memory_limit_bytes;
  if (lim == 0) return 0;
  uint64_t max = lim + lim / 4, mib = 1ull << 20;
  return (max + mib - 1) / mib * mib;
}

int ar_config_load(const char *path, ar_config_t *cfg, char *msg, size_t msg_bytes) {
  ar_config_defaults(cfg);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    int e = errno;
    return ar_errf(msg, msg_bytes, e == ENOENT ? AR_ENOENT : AR_EIO, "%s: %s", path, strerror(e));
  }
  json_error_t jerr;
  /* Duplicate keys would let a later line silently override an earlier one: reject them. */
  json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
  int read_failed = ferror(f);
  fclose(f);
  if (read_failed) {
    json_decref(root);
    return ar_errf(msg, msg_bytes, AR_EIO, "%s: read error", path);
  }
  if (root == NULL)
    return ar_errf(msg, msg_bytes, AR_ECONFIG, "%s: line %d column %d: %s", path, jerr.line, jerr.column,
                   jerr.text);
  /* The config file's directory, for relative model paths (NULL when it cannot be resolved: the
   * paths are then kept as written, relative to the working directory). */
  char abs[PATH_MAX], dir[PATH_MAX], *base = NULL;
  if (realpath(path, abs) != NULL && ar_path_dir(abs, dir, sizeof(dir)) == 0) base = dir;
  char key_msg[AR_MSG_BYTES];
  key_msg[0] = '\0';
  /* The key's message gets "PATH: " in front: leave room for it, so that a bounded list (an
   * unknown key's allowed keys) is cut where unknown_key chooses, not by the final snprintf. */
  size_t key_bytes = sizeof(key_msg), prefix = strlen(path) + 2;
  if (msg_bytes > prefix && msg_bytes - prefix < key_bytes) key_bytes = msg_bytes - prefix;
  if (key_bytes < 160) key_bytes = 160;
  int rc = load_root(root, cfg, base, key_msg, key_bytes);
  json_decref(root);
  if (rc != 0) {
    /* Keep the caller's view consistent: a failed load leaves defaults with no models. */
    ar_config_defaults(cfg);
    /* Named like the file-level errors above, so every message says which file it is about (a
     * reload's reply too: the admin who sent it may not know which file the daemon reads). */
    return ar_errf(msg, msg_bytes, rc, "%s: %s", path, key_msg);
  }
  return rc;
}

uint32_t ar_config_threads(const ar_config_t *cfg) {
  if (cfg->threads >= 1) return cfg->threads < AR_CONFIG_THREADS_MAX ? cfg->threads : AR_CONFIG_THREADS_MAX;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) return 1;
  return n < AR_CONFIG_THREADS_MAX ? (uint32_t)n : AR_CONFIG_THREADS_MAX;
}
