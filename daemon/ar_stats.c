/* ar_stats.c - the daemon's figures: stats JSON (pool, models, groups, daemon, memory) for
 * GetStats / arenactl stats, and the one-line status for systemd.
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
#include "daemon/ar_service.h"
#include "interp/ar_budget.h"
#include "daemon/ar_models_int.h"

/* ------------------------------------------------------------------------------------------ */
/* Stats                                                                                       */

static json_t *region_json(uint64_t offset, uint64_t bytes) {
  return json_pack("{s:I,s:I}", "offset", (json_int_t)offset, "bytes", (json_int_t)bytes);
}

char *ar_models_stats_json(ar_server_t *srv) {
  json_t *root = json_object();
  json_t *pool = json_object();
  json_t *regions = json_array();
  const ar_pool_t *p = &srv->pool;
  uint64_t used = ar_pool_used_bytes(p);
  for (size_t i = 0; i < p->n_regions; i++) {
    const ar_region_t *r = &p->regions[i];
    json_array_append_new(regions, json_pack("{s:I,s:I,s:s,s:s,s:I}", "offset", (json_int_t)r->offset, "bytes",
                                             (json_int_t)r->bytes, "kind", ar_region_kind_name(r->kind),
                                             "owner", r->owner, "resident_bytes",
                                             (json_int_t)ar_rss_resident_bytes(ar_pool_ptr(p, r->offset), r->bytes)));
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
  json_object_set_new(root, "pool", pool);

  json_t *models = json_array();
  for (ar_dmodel_t *m = srv->models; m; m = m->next) {
    if (m->state == AR_MODEL_LOADING) continue;   /* its interpreter belongs to a worker until placed */
    if (m->shadow) continue;                      /* a reload's instance, not committed yet */
    ar_plan_figures_t fig;
    ar_planner_figures(ar_interp_planner(m->interp), &fig);
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
    json_object_set_new(jm, "mapping_refs", json_integer(ar__cache_refs(srv, m->cm)));
    json_object_set_new(jm, "mapping_resident_bytes", json_integer((json_int_t)ar_memory_mapping_resident(m->cm)));
    json_object_set_new(jm, "activation_region",
                        m->group && m->group->has_region ? region_json(m->group->act_offset, m->group->act_bytes)
                                                         : json_null());
    json_object_set_new(jm, "persistent_region",
                        m->has_persistent ? region_json(m->persistent_offset, m->persistent_region_bytes)
                                          : json_null());
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
    json_array_append_new(models, jm);
  }
  json_object_set_new(root, "models", models);

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
  json_object_set_new(root, "groups", groups);

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
  json_object_set_new(root, "daemon", d);
  json_object_set_new(root, "memory", ar_memory_json(srv));
  char *s = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
  json_decref(root);
  return s;
}

void ar_models_status(ar_server_t *srv, char *buf, size_t n) {
  int count = 0;
  for (ar_dmodel_t *m = srv->models; m; m = m->next)
    if (m->state == AR_MODEL_READY && !m->shadow) count++;
  snprintf(buf, n, "%d model%s, %" PRIu64 " of %" PRIu64 " pool bytes used", count, count == 1 ? "" : "s",
           ar_pool_used_bytes(&srv->pool), srv->pool.bytes);
}
