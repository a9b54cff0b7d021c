/* ar_stats.c - the daemon's figures: stats JSON (pool, models, groups, daemon, memory) for
 * GetStats / arenactl stats, the stats thread that measures the expensive ones off the loop, the
 * per-uid rate limit of GetStats and GetPlan, and the one-line status for systemd.
 *
 * What costs a walk - mincore over every pool region and model copy, /proc/self/status and smaps,
 * milliseconds with many models - is measured by one stats thread into a snapshot (ar_snapshot_t);
 * a GetStats is answered from the last snapshot plus the counters the loop keeps anyway (pool
 * layout, invokes, latencies, connection figures: no system call). A snapshot serves while it is
 * younger than stats_refresh_ms and the pool's layout and the models are those it was taken for
 * (stats_key); otherwise the GetStats waits for the walk it starts, and every GetStats arriving
 * meanwhile waits for the same walk: however many GetStats come, at most one walk per
 * stats_refresh_ms while nothing changes (stats "daemon.stats_walks" counts them).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "common/ar_path.h"
#include "common/ar_text.h"
#include "common/ar_util.h"
#include "daemon/ar_alloc_count.h"
#include "daemon/ar_daemon.h"
#include "daemon/ar_metrics.h"
#include "daemon/ar_service.h"
#include "interp/ar_budget.h"
#include "daemon/ar_models_int.h"
#include "daemon/ar_sessions.h"

/* ------------------------------------------------------------------------------------------ */
/* Stats                                                                                       */

static json_t *region_json(uint64_t offset, uint64_t bytes) {
  return json_pack("{s:I,s:I}", "offset", (json_int_t)offset, "bytes", (json_int_t)bytes);
}

/* A region's resident bytes as the snapshot saw it: matched by offset and bytes (the snapshot is
 * taken for this layout, see stats_key; a region it did not see has null). */
static json_t *snap_region_resident(const ar_snapshot_t *snap, size_t i, const ar_region_t *r) {
  if (i < snap->n_regions && snap->regions[i].offset == r->offset && snap->regions[i].bytes == r->bytes)
    return json_integer((json_int_t)snap->regions[i].resident_bytes);
  for (size_t k = 0; k < snap->n_regions; k++)
    if (snap->regions[k].offset == r->offset && snap->regions[k].bytes == r->bytes)
      return json_integer((json_int_t)snap->regions[k].resident_bytes);
  return json_null();
}

static json_t *snap_copy_resident(const ar_snapshot_t *snap, const ar_cached_model_t *cm) {
  for (size_t k = 0; k < snap->n_copies; k++)
    if (snap->copies[k].cm == cm) return json_integer((json_int_t)snap->copies[k].resident_bytes);
  return json_null();
}

static uint64_t mix(uint64_t h, uint64_t v);

/* The text of one model's entry, from its cache when nothing it shows changed (the key below): a
 * GetStats with many models loaded rebuilds only the entries of the models that served since the
 * last one (building and printing every entry was most of a GetStats: ~2 ms with 50 models). */
static const char *model_fragment(ar_server_t *srv, ar_dmodel_t *m, const ar_snapshot_t *snap) {
  const ar_plan_figures_t fig = m->plan_fig;   /* not the interpreter's: a worker may be re-planning it */
  int refs = ar__cache_refs(srv, m->cm);
  json_t *resident = snap_copy_resident(snap, m->cm);
  const ar_group_t *g = m->group;
  uint64_t vals[] = {(uint64_t)m->state, m->arena_bytes, m->persistent_bytes, fig.lower_bound_bytes,
                     fig.scratch_bytes, (uint64_t)refs,
                     json_is_integer(resident) ? (uint64_t)json_integer_value(resident) : UINT64_MAX,
                     g && g->has_region, g ? g->act_offset : 0, g ? g->act_bytes : 0, m->has_persistent,
                     m->persistent_offset, m->persistent_region_bytes, m->invokes, m->errors, m->dropped, m->inflight,
                     m->latency.count, m->latency.sum_us, m->latency.max_us, m->heap_allocs_in_invoke, 0};
  uint64_t sess_key = 0;
  json_t *sess = ar_sessions_stats_json(srv, m, &sess_key);
  vals[sizeof(vals) / sizeof(vals[0]) - 1] = sess_key;
  uint64_t key = 14695981039346656037ull;
  for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) key = mix(key, vals[i]);
  if (m->stats_text && m->stats_text_key == key) {
    json_decref(resident);
    json_decref(sess);
    return m->stats_text;
  }
  char hex[65];
  ar__sha_hex(m->cm->sha256, hex);
  json_t *jm = json_object();
  json_object_set_new(jm, "name", json_string(m->name));
  json_object_set_new(jm, "path", json_string(m->realpath));
  json_object_set_new(jm, "sha256", json_string(hex));
  json_object_set_new(jm, "group", json_string(m->group_name));
  json_object_set_new(jm, "strategy", json_string(ar_strategy_name(m->strategy)));
  json_object_set_new(jm, "weights", json_string(ar_weights_name(m->weights)));
  json_object_set_new(jm, "state", json_string(m->state == AR_MODEL_READY ? "ready" : "unloading"));
  json_object_set_new(jm, "arena_bytes", json_integer((json_int_t)m->arena_bytes));
  json_object_set_new(jm, "lower_bound_bytes", json_integer((json_int_t)fig.lower_bound_bytes));
  json_object_set_new(jm, "persistent_bytes", json_integer((json_int_t)m->persistent_bytes));
  json_object_set_new(jm, "scratch_bytes", json_integer((json_int_t)fig.scratch_bytes));
  json_object_set_new(jm, "weights_bytes", json_integer((json_int_t)m->cm->model->constant_bytes));
  json_object_set_new(jm, "folded_bytes", json_integer((json_int_t)m->wfig.folded_bytes));
  json_object_set_new(jm, "packed_bytes", json_integer((json_int_t)m->wfig.packed_bytes));
  json_object_set_new(jm, "widened_bytes", json_integer((json_int_t)m->wfig.widened_bytes));
  json_object_set_new(jm, "file_bytes", json_integer((json_int_t)m->cm->model->file_bytes));
  json_object_set_new(jm, "mapping_refs", json_integer(refs));
  json_object_set_new(jm, "mapping_resident_bytes", resident);
  json_object_set_new(jm, "activation_region",
                      g && g->has_region ? region_json(g->act_offset, g->act_bytes) : json_null());
  json_object_set_new(jm, "persistent_region",
                      m->has_persistent ? region_json(m->persistent_offset, m->persistent_region_bytes) : json_null());
  json_object_set_new(jm, "invokes", json_integer((json_int_t)m->invokes));
  json_object_set_new(jm, "errors", json_integer((json_int_t)m->errors));
  json_object_set_new(jm, "dropped", json_integer((json_int_t)m->dropped));
  json_object_set_new(jm, "inflight", json_integer((json_int_t)m->inflight));
  json_t *lat = json_pack("{s:I,s:I,s:I,s:I,s:I}", "p50", (json_int_t)ar_latency_percentile(&m->latency, 50),
                          "p99", (json_int_t)ar_latency_percentile(&m->latency, 99), "max",
                          (json_int_t)m->latency.max_us, "count", (json_int_t)m->latency.count, "sum",
                          (json_int_t)m->latency.sum_us);
  json_t *le = json_array();   /* cumulative, Prometheus style; +Inf is "count" */
  uint64_t cum = 0;
  for (int i = 0; i < AR_LAT_LE_N; i++) {
    cum += m->latency.le_counts[i];
    json_array_append_new(le, json_pack("{s:I,s:I}", "le", (json_int_t)AR_LAT_LE_US[i], "count", (json_int_t)cum));
  }
  json_object_set_new(lat, "buckets", le);
  json_object_set_new(jm, "latency_us", lat);
  json_object_set_new(jm, "heap_allocs_in_invoke",
                      ar_alloc_count_available() ? json_integer((json_int_t)m->heap_allocs_in_invoke)
                                                 : json_integer(-1));
  json_object_set_new(jm, "sessions", sess ? sess : json_null());   /* null: a stateless model */
  char *text = json_dumps(jm, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  json_decref(jm);
  if (text == NULL) return NULL;
  free(m->stats_text);
  m->stats_text = text;
  m->stats_text_key = key;
  return text;
}

/* A growable text (the stats document is assembled from parts printed separately). */
typedef struct {
  char *p;
  size_t len, cap;
  bool failed;
} text_t;

static void text_add(text_t *t, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (s == NULL) t->failed = true;
  if (t->failed) return;
  if (t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + n + 1) cap *= 2;
    char *q = realloc(t->p, cap);
    if (q == NULL) {
      t->failed = true;
      return;
    }
    t->p = q;
    t->cap = cap;
  }
  memcpy(t->p + t->len, s, n + 1);
  t->len += n;
}

/* Print `j` (taking it) into `t`. */
static void text_add_json(text_t *t, json_t *j) {
  char *s = j ? json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
  json_decref(j);
  text_add(t, s);
  free(s);
}

char *ar_models_stats_json(ar_server_t *srv, const ar_snapshot_t *snap) {
  uint64_t now = ar_now_us();
  json_t *pool = json_object();
  json_t *regions = json_array();
  const ar_pool_t *p = &srv->pool;
  uint64_t used = ar_pool_used_bytes(p);
  for (size_t i = 0; i < p->n_regions; i++) {
    const ar_region_t *r = &p->regions[i];
    json_array_append_new(regions, json_pack("{s:I,s:I,s:s,s:s,s:o}", "offset", (json_int_t)r->offset, "bytes",
                                             (json_int_t)r->bytes, "kind", ar_region_kind_name(r->kind),
                                             "owner", r->owner, "resident_bytes", snap_region_resident(snap, i, r)));
  }
  json_object_set_new(pool, "bytes", json_integer((json_int_t)p->bytes));
  json_object_set_new(pool, "used_bytes", json_integer((json_int_t)used));
  json_object_set_new(pool, "free_bytes", json_integer((json_int_t)(p->bytes - used)));
  json_object_set_new(pool, "largest_free_bytes", json_integer((json_int_t)ar_pool_largest_free_bytes(p)));
  json_object_set_new(pool, "free_blocks", json_integer((json_int_t)ar_pool_free_blocks(p)));
  json_object_set_new(pool, "compacting", json_boolean(srv->compacting));
  json_object_set_new(pool, "compactions", json_integer((json_int_t)srv->compactions));
  json_object_set_new(pool, "compacted_bytes", json_integer((json_int_t)srv->compact_bytes_moved));
  json_object_set_new(pool, "page_releases", json_integer((json_int_t)srv->pool_releases));
  json_object_set_new(pool, "regions", regions);
  text_t t = {0};
  text_add(&t, "{\n \"pool\": ");
  text_add_json(&t, pool);
  text_add(&t, ",\n \"models\": [");
  bool first = true;
  for (ar_dmodel_t *m = srv->models; m; m = m->next) {
    if (m->state == AR_MODEL_LOADING) continue;   /* its interpreter belongs to a worker until placed */
    if (m->shadow) continue;                      /* a reload's instance, not committed yet */
    text_add(&t, first ? "\n" : ",\n");
    text_add(&t, model_fragment(srv, m, snap));
    first = false;
  }
  text_add(&t, "],\n \"groups\": ");

  /* Share groups: the bytes a group saves = sum of members' regions had they been separate. */
  json_t *groups = json_array();
  for (ar_group_t *g = srv->groups; g; g = g->next) {
    if (g->name[0] == '\0') continue;
    json_t *members = json_array();
    uint64_t separate = 0;
    for (ar_dmodel_t *m = srv->models; m; m = m->next)
      if (m->group == g && m->state != AR_MODEL_LOADING && !m->shadow) {
        json_array_append_new(members, json_string(m->name));
        separate += ar_pool_round(m->arena_bytes);
      }
    json_array_append_new(groups, json_pack("{s:s,s:I,s:I,s:o,s:I}", "name", g->name, "activation_offset",
                                            (json_int_t)g->act_offset, "activation_bytes", (json_int_t)g->act_bytes,
                                            "members", members, "saved_bytes",
                                            (json_int_t)(separate > g->act_bytes ? separate - g->act_bytes : 0)));
  }
  text_add_json(&t, groups);

  json_t *d = json_object();
  json_object_set_new(d, "version", json_string(PACKAGE_VERSION));
  json_object_set_new(d, "uptime_s", json_integer((json_int_t)((ar_now_us() - srv->start_us) / 1000000)));
  json_object_set_new(d, "connections", json_integer((json_int_t)srv->n_conns));
  json_object_set_new(d, "requests", json_integer((json_int_t)srv->requests));
  json_object_set_new(d, "workers", json_integer(srv->cfg.workers));
  json_object_set_new(d, "threads", json_integer(ar_threadpool_threads(srv->tpool)));
  json_object_set_new(d, "max_frame_bytes", json_integer((json_int_t)srv->cfg.max_frame_bytes));
  /* The daemon-wide budget of frames being received (daemon/ar_conn.h, "pending"). */
  json_object_set_new(d, "pending_frame_bytes", json_integer((json_int_t)srv->pending_frame_bytes));
  json_object_set_new(d, "max_pending_frame_bytes", json_integer((json_int_t)srv->cfg.max_pending_frame_bytes));
  json_object_set_new(d, "frames_over_budget", json_integer((json_int_t)srv->frames_over_budget));
  json_object_set_new(d, "read_buffer_grows", json_integer((json_int_t)srv->read_buffer_grows));
  /* Blocks connections keep for their next frames (daemon/ar_conn.h, "blocks"). */
  /* Replies queued and not yet written, over all connections, and their budget (ar_conn.h, "read"). */
  json_object_set_new(d, "unwritten_reply_bytes", json_integer((json_int_t)srv->unwritten_reply_bytes));
  json_object_set_new(d, "max_unwritten_reply_bytes", json_integer((json_int_t)srv->cfg.max_unwritten_reply_bytes));
  json_object_set_new(d, "reserved_reply_bytes", json_integer((json_int_t)srv->reserved_reply_bytes));
  json_object_set_new(d, "spare_block_bytes", json_integer((json_int_t)srv->spare_block_bytes));
  json_object_set_new(d, "max_spare_block_bytes", json_integer((json_int_t)AR_CONN_SPARE_DAEMON_BYTES));
  json_object_set_new(d, "busy_poll_us", json_integer(srv->cfg.busy_poll_us));
  json_object_set_new(d, "inline_invoke_us", json_integer(srv->cfg.inline_invoke_us));
  json_object_set_new(d, "invokes_inline", json_integer((json_int_t)srv->invokes_inline));
  json_object_set_new(d, "connections_refused", json_integer((json_int_t)srv->conns_refused));
  json_object_set_new(d, "frames_refused", json_integer((json_int_t)srv->frames_refused));
  json_object_set_new(d, "frames_timed_out", json_integer((json_int_t)srv->frames_timed_out));
  json_object_set_new(d, "closed_send_timeout", json_integer((json_int_t)srv->closed_send_timeout));
  json_object_set_new(d, "closed_idle", json_integer((json_int_t)srv->closed_idle));
  ar_conn_stats_json(srv, d);   /* per-uid shares, admin slots, per-connection reply bytes */
  json_object_set_new(d, "stats_refresh_ms", json_integer(srv->cfg.stats_refresh_ms));
  json_object_set_new(d, "stats_walks", json_integer((json_int_t)srv->stats_walks));
  json_object_set_new(d, "stats_rate_per_s", json_integer(srv->cfg.stats_rate_per_s));
  json_object_set_new(d, "stats_burst", json_integer(srv->cfg.stats_burst));
  json_object_set_new(d, "stats_refused", json_integer((json_int_t)srv->stats_refused));
  json_object_set_new(d, "stats_paced", json_integer((json_int_t)srv->stats_paced));
  text_add(&t, ",\n \"daemon\": ");
  text_add_json(&t, d);
  text_add(&t, ",\n \"memory\": ");
  text_add_json(&t, ar_memory_json(srv, snap, now));
  text_add(&t, "\n}");
  if (t.failed) {
    free(t.p);
    return NULL;
  }
  return t.p;
}


/* ------------------------------------------------------------------------------------------ */
/* The stats thread and its snapshots                                                          */

static uint64_t mix(uint64_t h, uint64_t v) {   /* FNV-1a over the 8 bytes of v */
  for (int i = 0; i < 8; i++) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
  return h;
}

/* What a snapshot was taken for: the pool's layout, every model instance and its state, and the
 * counters of loads, compactions and page releases, the clients' shared-memory buffers. Another
 * value = the resident figures may have moved (a load, an unload, a placement, a compaction, a
 * region grown or shrunk, a buffer registered or released), so the next
 * GetStats walks again whatever the snapshot's age. O(regions + models), no system call. */
static uint64_t stats_key(const ar_server_t *srv) {
  uint64_t h = 14695981039346656037ull;
  const ar_pool_t *p = &srv->pool;
  h = mix(h, p->n_regions);
  for (size_t i = 0; i < p->n_regions; i++) {
    h = mix(h, p->regions[i].offset);
    h = mix(h, p->regions[i].bytes);
    h = mix(h, (uint64_t)p->regions[i].kind);
  }
  for (const ar_dmodel_t *m = srv->models; m; m = m->next) {
    h = mix(h, m->serial);
    h = mix(h, (uint64_t)m->state);
    h = mix(h, (uint64_t)(uintptr_t)m->cm);
  }
  h = mix(h, srv->model_serial);
  h = mix(h, srv->compactions);
  h = mix(h, srv->pool_releases);
  uint64_t shm_bytes = 0;   /* a shared-memory buffer registered or released */
  h = mix(h, ar_conn_shm_mappings(srv, NULL, 0, &shm_bytes));
  h = mix(h, shm_bytes);
  return h;
}

#define AR_STATS_MAX_COPIES 1024   /* model copies a snapshot records (more: null in the JSON) */

static void snapshot_free(ar_snapshot_t *s) {
  if (s == NULL) return;
  free(s->regions);
  free(s->copies);
  ar_memory_shm_free(&s->shm);
  free(s);
}

/* Stats thread: the walk. Reads the pool's mapping (fixed for the daemon's life) at the offsets the
 * loop copied, the cache under its lock and the shm ranges the loop listed (ar_memory_measure);
 * nothing else of the server. */
static void snapshot_walk(ar_server_t *srv, ar_snapshot_t *s) {
  uint64_t t0 = ar_now_us();
  for (size_t i = 0; i < s->n_regions; i++)
    s->regions[i].resident_bytes = ar_rss_resident_bytes(srv->pool.base + s->regions[i].offset, s->regions[i].bytes);
  s->copies = calloc(AR_STATS_MAX_COPIES, sizeof(*s->copies));
  s->rc = ar_memory_measure(srv, &s->shm, &s->mem, s->copies, s->copies ? AR_STATS_MAX_COPIES : 0, &s->n_copies, s->msg,
                            sizeof(s->msg));
  s->walk_us = ar_now_us() - t0;
}

static void *stats_thread_main(void *arg) {
  ar_server_t *srv = arg;
  pthread_mutex_lock(&srv->stats_lock);
  for (;;) {
    while (srv->stats_todo == NULL && !srv->stats_quit) pthread_cond_wait(&srv->stats_cond, &srv->stats_lock);
    if (srv->stats_todo == NULL) break;
    ar_snapshot_t *s = srv->stats_todo;
    srv->stats_todo = NULL;
    pthread_mutex_unlock(&srv->stats_lock);
    snapshot_walk(srv, s);
    pthread_mutex_lock(&srv->stats_lock);
    s->next = srv->stats_done;
    srv->stats_done = s;
    uv_async_send(&srv->stats_async);
  }
  pthread_mutex_unlock(&srv->stats_lock);
  return NULL;
}

static void answer_stats(ar_server_t *srv, const ar_reply_to_t *to, const ar_snapshot_t *snap) {
  char *s = ar_models_stats_json(srv, snap);
  if (s == NULL) return srv->ops.reply_error(srv, to, AR_ENOMEM, "no memory for the stats");
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__GetStatsResponse body = ARENAD__GET_STATS_RESPONSE__INIT;
  body.json = s;
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_GET_STATS;
  resp.get_stats = &body;
  srv->ops.reply(srv, to, &resp);
  free(s);
}

/* Loop thread: a walk is done. It becomes the snapshot, and every GetStats waiting is answered from
 * it (also when the layout changed meanwhile: the next GetStats walks again). */
static void on_stats_done(uv_async_t *a) {
  ar_server_t *srv = a->data;
  pthread_mutex_lock(&srv->stats_lock);
  ar_snapshot_t *done = srv->stats_done;
  srv->stats_done = NULL;
  pthread_mutex_unlock(&srv->stats_lock);
  if (done == NULL) return;
  snapshot_free(srv->stats_snap);
  srv->stats_snap = done;
  srv->stats_walking = false;
  srv->jobs_outstanding--;
  ar_waiter_t *w = srv->stats_waiters;
  srv->stats_waiters = srv->stats_waiters_tail = NULL;
  while (w) {
    ar_waiter_t *next = w->next;
    answer_stats(srv, &w->to, done);
    free(w);
    w = next;
  }
  ar_metrics_snapshot_ready(srv);
  srv->ops.job_done(srv);
}

static int start_walk(ar_server_t *srv, uint64_t key) {
  ar_snapshot_t *s = calloc(1, sizeof(*s));
  const ar_pool_t *p = &srv->pool;
  if (s == NULL) return AR_ENOMEM;
  if (p->n_regions && (s->regions = calloc(p->n_regions, sizeof(*s->regions))) == NULL) {
    free(s);
    return AR_ENOMEM;
  }
  for (size_t i = 0; i < p->n_regions; i++) {
    s->regions[i].offset = p->regions[i].offset;
    s->regions[i].bytes = p->regions[i].bytes;
  }
  s->n_regions = p->n_regions;
  if (ar_memory_shm_list(srv, &s->shm) != 0) {   /* the connections: only the loop reads them */
    snapshot_free(s);
    return AR_ENOMEM;
  }
  s->key = key;
  s->taken_us = ar_now_us();
  srv->stats_walking = true;
  srv->stats_walks++;
  srv->jobs_outstanding++;   /* its waiters are answered when it is done: a drain waits for it */
  pthread_mutex_lock(&srv->stats_lock);
  srv->stats_todo = s;
  pthread_cond_signal(&srv->stats_cond);
  pthread_mutex_unlock(&srv->stats_lock);
  return 0;
}

int ar_stats_fresh_snapshot(ar_server_t *srv, const ar_snapshot_t **snap) {
  uint64_t key = stats_key(srv), now = ar_now_us();
  const ar_snapshot_t *s = srv->stats_snap;
  *snap = NULL;
  if (!srv->stats_walking && s && s->key == key && now - s->taken_us < (uint64_t)srv->cfg.stats_refresh_ms * 1000) {
    *snap = s;
    return 0;
  }
  return srv->stats_walking ? 0 : start_walk(srv, key);
}

void ar_models_get_stats(ar_server_t *srv, const ar_reply_to_t *to) {
  uint64_t key = stats_key(srv), now = ar_now_us();
  const ar_snapshot_t *snap = srv->stats_snap;
  if (!srv->stats_walking && snap && snap->key == key &&
      now - snap->taken_us < (uint64_t)srv->cfg.stats_refresh_ms * 1000)
    return answer_stats(srv, to, snap);
  ar_waiter_t *w = calloc(1, sizeof(*w));
  if (w == NULL) return srv->ops.reply_error(srv, to, AR_ENOMEM, "no memory for the stats");
  if (!srv->stats_walking && start_walk(srv, key) != 0) {
    free(w);
    return srv->ops.reply_error(srv, to, AR_ENOMEM, "no memory for the stats");
  }
  w->to = *to;
  if (srv->stats_waiters_tail) srv->stats_waiters_tail->next = w;
  else srv->stats_waiters = w;
  srv->stats_waiters_tail = w;
}

int ar_stats_init(ar_server_t *srv) {
  pthread_mutex_init(&srv->stats_lock, NULL);
  pthread_cond_init(&srv->stats_cond, NULL);
  if (uv_async_init(srv->loop, &srv->stats_async, on_stats_done) != 0) return AR_EINTERNAL;
  srv->stats_async.data = srv;
  if (uv_timer_init(srv->loop, &srv->stats_pace) != 0) return AR_EINTERNAL;
  srv->stats_pace.data = srv;
  srv->stats_pace_init = true;
  if (pthread_create(&srv->stats_thread, NULL, stats_thread_main, srv) != 0) {
    uv_close((uv_handle_t *)&srv->stats_async, NULL);
    return AR_EINTERNAL;
  }
  srv->stats_started = true;
  return 0;
}

void ar_stats_close_handles(ar_server_t *srv) {
  if (srv->stats_pace_init && !uv_is_closing((uv_handle_t *)&srv->stats_pace))
    uv_close((uv_handle_t *)&srv->stats_pace, NULL);
  if (srv->stats_started && !uv_is_closing((uv_handle_t *)&srv->stats_async))
    uv_close((uv_handle_t *)&srv->stats_async, NULL);
}

void ar_stats_shutdown(ar_server_t *srv) {
  if (!srv->stats_started) return;
  pthread_mutex_lock(&srv->stats_lock);
  srv->stats_quit = true;
  pthread_cond_signal(&srv->stats_cond);
  pthread_mutex_unlock(&srv->stats_lock);
  pthread_join(srv->stats_thread, NULL);
  srv->stats_started = false;
  /* The loop has stopped: a walk still handed over (an aborted start) and its waiters go. */
  snapshot_free(srv->stats_todo);
  for (ar_snapshot_t *s = srv->stats_done, *n; s; s = n) {
    n = s->next;
    snapshot_free(s);
  }
  srv->stats_todo = srv->stats_done = NULL;
  snapshot_free(srv->stats_snap);
  srv->stats_snap = NULL;
  for (ar_waiter_t *w = srv->stats_waiters, *n; w; w = n) {
    n = w->next;
    free(w);
  }
  srv->stats_waiters = srv->stats_waiters_tail = NULL;
  for (ar_waiter_t *w = srv->paced_head, *n; w; w = n) {
    n = w->next;
    free(w);
  }
  srv->paced_head = srv->paced_tail = NULL;
  pthread_mutex_destroy(&srv->stats_lock);
  pthread_cond_destroy(&srv->stats_cond);
}

/* ------------------------------------------------------------------------------------------ */
/* Rate limit of GetStats and GetPlan                                                          */

/* A token bucket per peer uid: stats_burst requests at once, refilled at stats_rate_per_s. A uid,
 * not a connection: a peer may open up to max_connections_per_uid connections. The table holds
 * AR_RATE_BUCKETS uids; a new one takes the slot unused longest (a full bucket by then, unless
 * more than AR_RATE_BUCKETS uids are sending at once). */
/* Take one request's token from `uid`'s bucket: 0 when taken, else the µs until one is there. */
static uint64_t rate_take(ar_server_t *srv, uid_t uid) {
  uint64_t rate = srv->cfg.stats_rate_per_s, cap = (uint64_t)srv->cfg.stats_burst * 1000000u;
  if (rate == 0) return 0;
  uint64_t now = ar_now_us();
  ar_rate_bucket_t *b = NULL, *oldest = &srv->rate_buckets[0];
  for (int i = 0; i < AR_RATE_BUCKETS && b == NULL; i++) {
    ar_rate_bucket_t *x = &srv->rate_buckets[i];
    if (x->used && x->uid == uid) b = x;
    else if (!x->used || (oldest->used && x->last_us < oldest->last_us)) oldest = x;
  }
  if (b == NULL) {
    b = oldest;
    *b = (ar_rate_bucket_t){.used = true, .uid = uid, .tokens = cap, .last_us = now};
  }
  uint64_t refill = (now - b->last_us) * rate;   /* millionths of a request per µs = per second */
  b->tokens = b->tokens + refill > cap ? cap : b->tokens + refill;
  b->last_us = now;
  if (b->tokens >= 1000000u) {
    b->tokens -= 1000000u;
    return 0;
  }
  return (1000000u - b->tokens + rate - 1) / rate;
}

static uid_t peer_uid(const ar_reply_to_t *to) { return to->peer.known ? to->peer.uid : (uid_t)-1; }

/* Loop thread: answer the admins' GetStats waiting for tokens, in order, as far as there are. */
static void on_pace(uv_timer_t *t) {
  ar_server_t *srv = t->data;
  bool answered = false;
  while (srv->paced_head) {
    ar_waiter_t *w = srv->paced_head;
    uint64_t wait = srv->draining ? 0 : rate_take(srv, peer_uid(&w->to));
    if (wait) {
      uv_timer_start(&srv->stats_pace, on_pace, (wait + 999) / 1000, 0);
      break;
    }
    srv->paced_head = w->next;
    if (srv->paced_head == NULL) srv->paced_tail = NULL;
    srv->jobs_outstanding--;
    ar_models_get_stats(srv, &w->to);
    free(w);
    answered = true;
  }
  if (answered) srv->ops.job_done(srv);
}

bool ar_models_rate_limited(ar_server_t *srv, const ar_reply_to_t *to, const char *what) {
  if (srv->cfg.stats_rate_per_s == 0 || to->conn == NULL) return false;
  bool admin = ar_models_peer_is_admin(srv, to), stats = strcmp(what, "get_stats") == 0;
  if (admin && !stats) return false;
  uid_t uid = peer_uid(to);
  if (admin) {
    /* An admin is not refused: its GetStats waits its turn behind the ones already waiting. */
    uint64_t wait = srv->paced_head ? 1 : rate_take(srv, uid);
    if (wait == 0) return false;
    ar_waiter_t *w = calloc(1, sizeof(*w));
    if (w == NULL) return false;   /* answered at once rather than lost */
    w->to = *to;
    if (srv->paced_tail) srv->paced_tail->next = w;
    else srv->paced_head = w;
    srv->paced_tail = w;
    srv->jobs_outstanding++;   /* answered by the timer: a drain waits for it */
    srv->stats_paced++;
    if (!uv_is_active((uv_handle_t *)&srv->stats_pace))
      uv_timer_start(&srv->stats_pace, on_pace, (wait + 999) / 1000, 0);
    return true;
  }
  uint64_t wait = rate_take(srv, uid);
  if (wait == 0) return false;
  srv->stats_refused++;
  uint64_t retry_ms = (wait + 999) / 1000;
  char msg[AR_MSG_BYTES];
  snprintf(msg, sizeof(msg), "%s: uid %u is over the rate limit of GetStats and GetPlan for peers that are not "
           "admins (stats_rate_per_s %u, stats_burst %u): retry in %" PRIu64 " ms", what, (unsigned)uid,
           srv->cfg.stats_rate_per_s, srv->cfg.stats_burst, retry_ms ? retry_ms : 1);
  srv->ops.reply_error(srv, to, AR_EBUSY, msg);
  return true;
}

void ar_models_status(ar_server_t *srv, char *buf, size_t n) {
  int count = 0;
  for (ar_dmodel_t *m = srv->models; m; m = m->next)
    if (m->state == AR_MODEL_READY && !m->shadow) count++;
  snprintf(buf, n, "%d model%s, %" PRIu64 " of %" PRIu64 " pool bytes used", count, count == 1 ? "" : "s",
           ar_pool_used_bytes(&srv->pool), srv->pool.bytes);
}
