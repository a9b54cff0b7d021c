/* ar_prom.c - the stats JSON document as Prometheus text exposition (format 0.0.4), see ar_prom.h.
 *
 * The stats JSON is the one document the daemon produces; this turns it into metric families, for
 * arenactl (which asks the daemon for the JSON) and for the daemon's own scrape endpoint
 * (metrics_listen, daemon/ar_metrics.c, which renders its JSON here), so both serve the same text.
 * Every family is written whole (HELP, TYPE, then all its samples) as the format requires.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ar_prom.h"
#include "common/ar_error.h"
#include "common/ar_path.h"

void ar_prom_label_value(FILE *out, const char *value) {
  for (const char *p = value; *p; p++) {
    if (*p == '\\') fputs("\\\\", out);
    else if (*p == '"') fputs("\\\"", out);
    else if (*p == '\n') fputs("\\n", out);
    else fputc(*p, out);
  }
}

static void family(FILE *out, const char *name, const char *type, const char *help) {
  fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_int(FILE *out, const char *name, const json_t *v) {
  fprintf(out, "%s %" JSON_INTEGER_FORMAT "\n", name, json_integer_value(v));
}

/* `name{label="value"} v` for one JSON integer. */
static void sample_label(FILE *out, const char *name, const char *label, const char *value, json_int_t v) {
  fprintf(out, "%s{%s=\"", name, label);
  ar_prom_label_value(out, value);
  fprintf(out, "\"} %" JSON_INTEGER_FORMAT "\n", v);
}

static const char *str_or_empty(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

/* A gauge/counter with one sample per element of `arr` labelled `label` = elem[name_key], value
 * elem[key]; the family is left out when no element has the key. */
static void per_item(FILE *out, const json_t *arr, const char *label, const char *name_key, const char *key,
                     const char *metric, const char *type, const char *help) {
  size_t i;
  const json_t *e;
  bool any = false;
  json_array_foreach(arr, i, e) any = any || json_is_integer(json_object_get(e, key));
  if (!any) return;
  family(out, metric, type, help);
  json_array_foreach(arr, i, e) {
    const json_t *v = json_object_get(e, key);
    if (json_is_integer(v)) sample_label(out, metric, label, str_or_empty(e, name_key), json_integer_value(v));
  }
}

/* per_item for a key of each model's "sessions" object (stateful models only: a stateless model's
 * is null and it has no sample); the family is left out when no model has sessions. */
static void per_session(FILE *out, const json_t *models, const char *key, const char *metric, const char *type,
                        const char *help) {
  size_t i;
  const json_t *e;
  bool any = false;
  json_array_foreach(models, i, e) any = any || json_is_integer(json_object_get(json_object_get(e, "sessions"), key));
  if (!any) return;
  family(out, metric, type, help);
  json_array_foreach(models, i, e) {
    const json_t *v = json_object_get(json_object_get(e, "sessions"), key);
    if (json_is_integer(v)) sample_label(out, metric, "model", str_or_empty(e, "name"), json_integer_value(v));
  }
}

/* `us` microseconds as exact decimal seconds ("0.0001", "2.5", "3"): the exposition format's base
 * unit for time is the second, and an exact decimal keeps bucket bounds and sums free of
 * binary-float noise. */
static void seconds_from_us(FILE *out, json_int_t us) {
  if (us < 0) {
    fputc('-', out);
    us = -us;
  }
  char frac[8];
  snprintf(frac, sizeof frac, "%06" JSON_INTEGER_FORMAT, us % 1000000);
  size_t n = strlen(frac);
  while (n > 0 && frac[n - 1] == '0') frac[--n] = '\0';
  fprintf(out, "%" JSON_INTEGER_FORMAT "%s%s", us / 1000000, n ? "." : "", frac);
}

/* Histograms in seconds (Prometheus naming: base units, `_seconds` suffix, `le` in seconds); the
 * stats JSON keeps its integer microseconds (`latency_us`). */
static void latency_histograms(FILE *out, const json_t *models) {
  static const char *const h = "arenad_model_invoke_latency_seconds";
  size_t i;
  const json_t *m;
  bool any = false;
  json_array_foreach(models, i, m) {
    any = any || json_is_array(json_object_get(json_object_get(m, "latency_us"), "buckets"));
  }
  if (!any) return;
  family(out, h, "histogram",
         "Invoke latency from acceptance to the end of the output copy, seconds (successful invokes)");
  json_array_foreach(models, i, m) {
    const json_t *lat = json_object_get(m, "latency_us");
    const json_t *buckets = json_object_get(lat, "buckets");
    if (!json_is_array(buckets)) continue;
    const char *name = str_or_empty(m, "name");
    size_t k;
    const json_t *b;
    json_array_foreach(buckets, k, b) {
      fprintf(out, "%s_bucket{model=\"", h);
      ar_prom_label_value(out, name);
      fputs("\",le=\"", out);
      seconds_from_us(out, json_integer_value(json_object_get(b, "le")));
      fprintf(out, "\"} %" JSON_INTEGER_FORMAT "\n", json_integer_value(json_object_get(b, "count")));
    }
    fprintf(out, "%s_bucket{model=\"", h);
    ar_prom_label_value(out, name);
    fprintf(out, "\",le=\"+Inf\"} %" JSON_INTEGER_FORMAT "\n", json_integer_value(json_object_get(lat, "count")));
    fprintf(out, "%s_sum{model=\"", h);
    ar_prom_label_value(out, name);
    fputs("\"} ", out);
    seconds_from_us(out, json_integer_value(json_object_get(lat, "sum")));
    fputc('\n', out);
    sample_label(out, "arenad_model_invoke_latency_seconds_count", "model", name,
                 json_integer_value(json_object_get(lat, "count")));
  }
}

int ar_prom_write_down(FILE *out) {
  family(out, "arenad_up", "gauge", "1 if the daemon's stats could be read, else 0");
  fputs("arenad_up 0\n", out);
  return ferror(out) ? AR_EIO : 0;
}

int ar_prom_write(const json_t *stats, FILE *out, char *msg, size_t msg_bytes) {
  const json_t *pool = json_object_get(stats, "pool");
  if (!json_is_object(pool)) return ar_errf(msg, msg_bytes, AR_EPROTO, "stats JSON has no \"pool\" object");
  const json_t *models = json_object_get(stats, "models");
  const json_t *groups = json_object_get(stats, "groups");
  const json_t *d = json_object_get(stats, "daemon");

  family(out, "arenad_up", "gauge", "1 if the daemon's stats could be read, else 0");
  fputs("arenad_up 1\n", out);
  if (json_is_string(json_object_get(d, "version"))) {
    family(out, "arenad_build_info", "gauge", "Always 1; the label holds the daemon's version");
    sample_label(out, "arenad_build_info", "version", str_or_empty(d, "version"), 1);
  }

  static const struct {
    const char *key, *metric, *help;
  } pool_keys[] = {
      {"bytes", "arenad_pool_bytes", "Size of the arena pool, bytes"},
      {"used_bytes", "arenad_pool_used_bytes", "Pool bytes held by model regions"},
      {"free_bytes", "arenad_pool_free_bytes", "Pool bytes not held by any region"},
      {"largest_free_bytes", "arenad_pool_largest_free_bytes", "Largest free block of the pool, bytes (the largest load that fits)"},
      {"free_blocks", "arenad_pool_free_blocks", "Free blocks of the pool (1 after a compaction, 0 when full)"},
      {"compactions", "arenad_pool_compactions_total", "Pool compactions since the daemon started"},
      {"compacted_bytes", "arenad_pool_compacted_bytes_total", "Bytes of the pool regions compactions moved"},
  };
  for (size_t i = 0; i < sizeof(pool_keys) / sizeof(pool_keys[0]); i++) {
    const json_t *v = json_object_get(pool, pool_keys[i].key);
    if (!json_is_integer(v)) continue;
    size_t n = strlen(pool_keys[i].metric);
    bool counter = n > 6 && strcmp(pool_keys[i].metric + n - 6, "_total") == 0;
    family(out, pool_keys[i].metric, counter ? "counter" : "gauge", pool_keys[i].help);
    sample_int(out, pool_keys[i].metric, v);
  }

  if (json_array_size(models) > 0) {
    family(out, "arenad_model_info", "gauge", "Always 1 per loaded model; labels describe it");
    size_t i;
    const json_t *m;
    json_array_foreach(models, i, m) {
      fputs("arenad_model_info{model=\"", out);
      ar_prom_label_value(out, str_or_empty(m, "name"));
      fputs("\",group=\"", out);
      ar_prom_label_value(out, str_or_empty(m, "group"));
      fputs("\",strategy=\"", out);
      ar_prom_label_value(out, str_or_empty(m, "strategy"));
      fputs("\",sha256=\"", out);
      ar_prom_label_value(out, str_or_empty(m, "sha256"));
      fputs("\",path=\"", out);
      ar_prom_label_value(out, str_or_empty(m, "path"));
      fputs("\"} 1\n", out);
    }
  }
  per_item(out, models, "model", "name", "invokes", "arenad_model_invokes_total", "counter",
           "Successful invokes of the model");
  per_item(out, models, "model", "name", "errors", "arenad_model_errors_total", "counter",
           "Invokes of the model answered with an error (bad input, failed invoke)");
  per_item(out, models, "model", "name", "dropped", "arenad_model_dropped_total", "counter",
           "Accepted invokes not run because their client had gone");
  per_item(out, models, "model", "name", "inflight", "arenad_model_inflight", "gauge",
           "Invokes of the model accepted and not yet answered");
  per_item(out, models, "model", "name", "arena_bytes", "arenad_model_arena_bytes", "gauge",
           "Activation bytes the model's memory plan needs (tensors + scratch)");
  per_item(out, models, "model", "name", "persistent_bytes", "arenad_model_persistent_bytes", "gauge",
           "Bytes of the model's persistent region (folded constants, kernel state)");
  per_item(out, models, "model", "name", "weights_bytes", "arenad_model_weights_bytes", "gauge",
           "Constant bytes read in place from the model file mapping");
  latency_histograms(out, models);
  static const struct {
    const char *key, *metric, *type, *help;
  } session_keys[] = {
      {"open", "arenad_model_sessions_open", "gauge", "Sessions of the stateful model open now"},
      {"state_bytes_per_slot", "arenad_model_session_state_bytes", "gauge",
       "Bytes of one session's state slot (the model's state, rounded up to 64)"},
      {"slot_bytes", "arenad_model_session_slot_bytes", "gauge", "Pool bytes of the chunks holding the sessions' slots"},
      {"started", "arenad_model_sessions_started_total", "counter", "Sessions started (or started again)"},
      {"ended", "arenad_model_sessions_ended_total", "counter", "Sessions ended by their client"},
      {"expired", "arenad_model_sessions_expired_total", "counter",
       "Sessions expired after session_idle_timeout_ms idle"},
      {"evicted", "arenad_model_sessions_evicted_total", "counter",
       "Expired session ids forgotten to make room (they then answer ENOENT)"},
      {"ended_by_reload", "arenad_model_sessions_ended_by_reload_total", "counter",
       "Sessions of a replaced instance that this one answers as ended by the reload"},
  };
  for (size_t i = 0; i < sizeof(session_keys) / sizeof(session_keys[0]); i++)
    per_session(out, models, session_keys[i].key, session_keys[i].metric, session_keys[i].type, session_keys[i].help);

  per_item(out, groups, "group", "name", "activation_bytes", "arenad_group_activation_bytes", "gauge",
           "Bytes of the share group's one activation region");
  per_item(out, groups, "group", "name", "saved_bytes", "arenad_group_saved_bytes", "gauge",
           "Bytes the share group saves over separate regions for its members");

  static const struct {
    const char *key, *metric, *type, *help;
  } daemon_keys[] = {
      {"uptime_s", "arenad_uptime_seconds", "gauge", "Seconds since the daemon started"},
      {"connections", "arenad_connections", "gauge", "Client connections open now"},
      {"requests", "arenad_requests_total", "counter", "Requests decoded since the daemon started"},
      {"workers", "arenad_workers", "gauge", "Worker threads"},
      {"pending_frame_bytes", "arenad_pending_frame_bytes", "gauge",
       "Bytes held by frames being received now: what arrived plus a step each (daemon-wide budget, daemon/ar_conn.h)"},
      {"max_pending_frame_bytes", "arenad_max_pending_frame_bytes", "gauge",
       "The daemon-wide budget of pending frame bytes (max_pending_frame_bytes)"},
      {"frames_over_budget", "arenad_frames_over_budget_total", "counter",
       "Frames refused because they did not fit in max_pending_frame_bytes (connection closed)"},
      {"spare_block_bytes", "arenad_spare_block_bytes", "gauge",
       "Bytes of the blocks connections keep for their next frames and replies"},
      {"max_spare_block_bytes", "arenad_max_spare_block_bytes", "gauge",
       "Cap on the blocks kept for reuse over all connections, bytes"},
      {"unwritten_reply_bytes", "arenad_unwritten_reply_bytes", "gauge",
       "Reply bytes queued on all connections and not yet written"},
      {"reserved_reply_bytes", "arenad_reserved_reply_bytes", "gauge",
       "Reply bytes reserved for invokes accepted and not yet answered (counted in the same budget)"},
      {"max_unwritten_reply_bytes", "arenad_max_unwritten_reply_bytes", "gauge",
       "The daemon-wide budget of unwritten reply bytes (max_unwritten_reply_bytes)"},
      {"connections_refused", "arenad_connections_refused_total", "counter",
       "Connections refused at accept (max_connections, max_connections_per_uid, draining)"},
  };
  for (size_t i = 0; i < sizeof(daemon_keys) / sizeof(daemon_keys[0]); i++) {
    const json_t *v = json_object_get(d, daemon_keys[i].key);
    if (!json_is_integer(v)) continue;
    family(out, daemon_keys[i].metric, daemon_keys[i].type, daemon_keys[i].help);
    sample_int(out, daemon_keys[i].metric, v);
  }

  /* Resident memory by part (daemon/ar_rss.h); a daemon that could not measure it sends an error. */
  const json_t *mem = json_object_get(stats, "memory");
  static const struct {
    const char *key, *metric, *help;
  } mem_keys[] = {
      {"rss_bytes", "arenad_memory_rss_bytes", "Resident set size of the daemon (VmRSS), bytes"},
      {"peak_rss_bytes", "arenad_memory_peak_rss_bytes", "Largest resident set size since start (VmHWM), bytes"},
      {"pool_resident_bytes", "arenad_memory_pool_resident_bytes", "Resident pages of the arena pool (mincore), bytes"},
      {"models_resident_bytes", "arenad_memory_models_resident_bytes", "Resident pages of the model file copies (mincore), bytes"},
      {"blas_resident_bytes", "arenad_memory_blas_resident_bytes", "Resident pages of OpenBLAS's buffers, bytes"},
      {"heap_bytes", "arenad_memory_heap_bytes", "Bytes in malloc's allocated blocks (mallinfo2 uordblks + hblkhd)"},
      {"rest_bytes", "arenad_memory_rest_bytes", "Resident code, library data and thread stacks (smaps), bytes"},
      {"accounted_bytes", "arenad_memory_accounted_bytes", "Sum of the accounted parts, bytes (memory_limit applies to it)"},
      {"memory_limit_bytes", "arenad_memory_limit_bytes", "Configured memory_limit, bytes (0 = none)"},
  };
  for (size_t i = 0; json_is_object(mem) && i < sizeof(mem_keys) / sizeof(mem_keys[0]); i++) {
    const json_t *v = json_object_get(mem, mem_keys[i].key);
    if (!json_is_integer(v)) continue;
    family(out, mem_keys[i].metric, "gauge", mem_keys[i].help);
    sample_int(out, mem_keys[i].metric, v);
  }
  per_item(out, models, "model", "name", "mapping_resident_bytes", "arenad_model_mapping_resident_bytes", "gauge",
           "Resident pages of the model's file copy (mincore; shared copies count for each model), bytes");
  if (ferror(out)) return ar_errf(msg, msg_bytes, AR_EIO, "write: %s", strerror(errno));
  return 0;
}

int ar_prom_write_file(const char *path, int (*write)(FILE *out, void *arg), void *arg, char *msg,
                       size_t msg_bytes) {
  const char *base = ar_path_base(path);
  size_t dir_len = (size_t)(base - path);   /* the directory with its slash, kept as written */
  if (*base == '\0') return ar_errf(msg, msg_bytes, AR_EINVAL, "%s: names a directory, not a file", path);
  size_t n = dir_len + 1 + strlen(base) + 8;
  char *tmp = malloc(n);
  if (tmp == NULL) return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory");
  snprintf(tmp, n, "%.*s.%s.XXXXXX", (int)dir_len, path, base);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int rc = ar_errf(msg, msg_bytes, AR_EIO, "create %s: %s", tmp, strerror(errno));
    free(tmp);
    return rc;
  }
  FILE *f = fdopen(fd, "w");
  if (f == NULL) {
    int rc = ar_errf(msg, msg_bytes, AR_EIO, "fdopen %s: %s", tmp, strerror(errno));
    close(fd);
    unlink(tmp);
    free(tmp);
    return rc;
  }
  int rc = write(f, arg);
  if (rc != 0) ar_errf(msg, msg_bytes, rc, "write %s failed", tmp);
  else if (fchmod(fd, 0644) != 0) rc = ar_errf(msg, msg_bytes, AR_EIO, "chmod %s: %s", tmp, strerror(errno));
  else if (fflush(f) != 0 || fsync(fd) != 0) rc = ar_errf(msg, msg_bytes, AR_EIO, "write %s: %s", tmp, strerror(errno));
  if (fclose(f) != 0 && rc == 0) rc = ar_errf(msg, msg_bytes, AR_EIO, "close %s: %s", tmp, strerror(errno));
  if (rc == 0 && rename(tmp, path) != 0) rc = ar_errf(msg, msg_bytes, AR_EIO, "rename %s to %s: %s", tmp, path, strerror(errno));
  if (rc != 0) unlink(tmp);
  free(tmp);
  return rc;
}
