/* ar_reload.c - configuration: the initial loads, a reload as one transaction (the new instances
 * load invisibly next to the running ones, then are swapped in all together or dropped), and
 * --check-config (plan every configured model into a pool without a daemon).
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
#include "daemon/ar_sessions.h"
#include "daemon/ar_service.h"
#include "interp/ar_budget.h"
#include "daemon/ar_models_int.h"

/* ------------------------------------------------------------------------------------------ */
/* Reload and shutdown                                                                         */

static const ar_config_model_t *config_entry(const ar_config_t *cfg, const char *name) {
  for (uint32_t i = 0; i < cfg->n_models; i++)
    if (strcmp(cfg->models[i].name, name) == 0) return &cfg->models[i];
  return NULL;
}

static bool same_as_entry(const ar_dmodel_t *m, const ar_config_model_t *e) {
  ar_strategy_t s = AR_STRATEGY_BEST;
  if (e->strategy[0]) ar_strategy_parse(e->strategy, &s);
  ar_interp_options_t dflt;
  ar_interp_options_default(&dflt);
  ar_weights_t w = dflt.weights;
  if (e->weights[0]) ar_weights_parse(e->weights, &w);
  return strcmp(e->path, m->path) == 0 && strcmp(e->group, m->group_name) == 0 && s == m->strategy &&
         w == m->weights;
}

void ar_models_load_initial(ar_server_t *srv) {
  for (uint32_t i = 0; i < srv->cfg.n_models; i++) {
    const ar_config_model_t *e = &srv->cfg.models[i];
    ar_reply_to_t to = {.conn = NULL, .internal_config = true};
    srv->config_loads_pending++;
    ar__load_model(srv, &to, e->name, e->path, e->group, e->strategy, e->weights, false, true, false, 0);
  }
}

/* A changed model for the Reload reply. */
typedef struct {
  char name[AR_NAME_MAX];
  char old_hex[65], new_hex[65];
} reload_change_t;

static void answer_reload(ar_server_t *srv, const ar_reply_to_t *to, const reload_change_t *ch, size_t n) {
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__ReloadResponse body = ARENAD__RELOAD_RESPONSE__INIT;
  Arenad__ReloadedModel *items = calloc(n + 1, sizeof(*items));
  Arenad__ReloadedModel **ptrs = calloc(n + 1, sizeof(*ptrs));
  if (items == NULL || ptrs == NULL) {
    free(items);
    free(ptrs);
    return srv->ops.reply_error(srv, to, AR_ENOMEM, "reload done; no memory for the list of changes");
  }
  for (size_t i = 0; i < n; i++) {
    arenad__reloaded_model__init(&items[i]);
    items[i].name = (char *)ch[i].name;
    items[i].old_sha256 = (char *)ch[i].old_hex;
    items[i].new_sha256 = (char *)ch[i].new_hex;
    ptrs[i] = &items[i];
  }
  body.n_changed = n;
  body.changed = ptrs;
  body.unchanged = srv->reload_unchanged;
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_RELOAD;
  resp.reload = &body;
  srv->ops.reply(srv, to, &resp);
  free(items);
  free(ptrs);
}

/* Every load of the transaction was answered: commit or roll back. */
static void reload_finish(ar_server_t *srv) {
  ar_config_t *cfg = srv->reload_cfg;
  srv->reload_cfg = NULL;
  bool ok = srv->reload_rc == 0 && !srv->draining;
  bool has_waiter = srv->reload_has_waiter;
  ar_reply_to_t waiter = srv->reload_to;
  srv->reload_has_waiter = false;
  size_t n_changes = 0, cap_changes = 0;
  for (ar_dmodel_t *m = srv->models; m; m = m->next) cap_changes++;
  reload_change_t *changes = calloc(cap_changes + 1, sizeof(*changes));
  if (!ok) {
    ar_log("reload failed, keeping the running configuration: %s (%s)",
           srv->reload_rc ? srv->reload_msg : "daemon is shutting down", ar_err_name(srv->reload_rc ? srv->reload_rc : AR_ESTATE));
    for (ar_dmodel_t *m = srv->models, *next; m; m = next) {
      next = m->next;
      if (m->shadow) ar__retire(srv, m);   /* placed and never visible: no invokes, goes at once */
    }
  } else {
    /* Swap in the new instances first, so no invoke ever finds the name missing. */
    for (ar_dmodel_t *m = srv->models, *next; m; m = next) {
      next = m->next;
      if (!m->shadow) continue;
      if (ar__rereads_gone(srv, m)) {
        ar_log("reload: model '%s' was unloaded during the reload: its re-read is dropped", m->name);
        ar__retire(srv, m);   /* placed and never visible: no invokes, goes at once */
        continue;
      }
      ar_dmodel_t *old = ar_models_find(srv, m->name);
      m->shadow = false;
      reload_change_t *c = changes && n_changes < cap_changes ? &changes[n_changes++] : NULL;
      if (c) {
        snprintf(c->name, sizeof(c->name), "%s", m->name);
        ar__sha_hex(m->cm->sha256, c->new_hex);
        if (old) ar__sha_hex(old->cm->sha256, c->old_hex);
      }
      if (old) {
        char oh[65], nh[65];
        ar__sha_hex(old->cm->sha256, oh);
        ar__sha_hex(m->cm->sha256, nh);
        ar_log("reload: model '%s' replaced (sha256 %.12s... -> %.12s..., group '%s' -> '%s'); the old instance "
               "finishes %" PRIu64 " accepted invoke(s)", m->name, oh, nh, old->group_name, m->group_name,
               old->inflight);
        ar_sessions_replaced(srv, old, m);
        ar__retire(srv, old);
      }
    }
    for (ar_dmodel_t *m = srv->models, *next; m; m = next) {
      next = m->next;
      if (m->retired || m->state != AR_MODEL_READY) continue;
      if (config_entry(cfg, m->name)) {
        m->from_config = true;   /* a run-time load the configuration now names */
      } else if (m->from_config) {
        ar_log("reload: model '%s' is no longer configured: unload", m->name);
        reload_change_t *c = changes && n_changes < cap_changes ? &changes[n_changes++] : NULL;
        if (c) {
          snprintf(c->name, sizeof(c->name), "%s", m->name);
          ar__sha_hex(m->cm->sha256, c->old_hex);
        }
        ar__retire(srv, m);
      }
    }
    srv->cfg.max_frame_bytes = cfg->max_frame_bytes;
    srv->cfg.max_pending_frame_bytes = cfg->max_pending_frame_bytes;   /* frames held keep their share */
    srv->cfg.max_pending_frame_bytes_per_uid = cfg->max_pending_frame_bytes_per_uid;
    srv->cfg.max_connections = cfg->max_connections;
    srv->cfg.admin_reserved_connections = cfg->admin_reserved_connections;
    /* Connection limits apply to what is read from now on. */
    srv->cfg.max_connections_per_uid = cfg->max_connections_per_uid;
    srv->cfg.max_inflight_per_connection = cfg->max_inflight_per_connection;
    srv->cfg.max_pending_reply_bytes = cfg->max_pending_reply_bytes;
    srv->cfg.max_unwritten_reply_bytes = cfg->max_unwritten_reply_bytes;
    srv->cfg.max_unwritten_reply_bytes_per_uid = cfg->max_unwritten_reply_bytes_per_uid;
    srv->cfg.max_decode_bytes = cfg->max_decode_bytes;
    srv->cfg.max_queue_per_model = cfg->max_queue_per_model;
    srv->cfg.max_buffers_per_connection = cfg->max_buffers_per_connection;
    srv->cfg.max_buffer_bytes_per_connection = cfg->max_buffer_bytes_per_connection;
    srv->cfg.max_buffer_bytes_per_uid = cfg->max_buffer_bytes_per_uid;
    srv->cfg.request_timeout_ms = cfg->request_timeout_ms;
    srv->cfg.idle_timeout_ms = cfg->idle_timeout_ms;
    srv->cfg.send_timeout_ms = cfg->send_timeout_ms;
    srv->cfg.drain_timeout_ms = cfg->drain_timeout_ms;
    srv->cfg.busy_poll_us = cfg->busy_poll_us;
    srv->cfg.inline_invoke_us = cfg->inline_invoke_us;
    srv->cfg.max_model_bytes = cfg->max_model_bytes;
    srv->cfg.max_resize_activation_bytes = cfg->max_resize_activation_bytes;
    srv->cfg.memory_limit_bytes = cfg->memory_limit_bytes;
    srv->cfg.compact_after_unload = cfg->compact_after_unload;
    srv->cfg.max_while_iterations = cfg->max_while_iterations;
    srv->cfg.max_while_ms = cfg->max_while_ms;
    srv->cfg.stats_refresh_ms = cfg->stats_refresh_ms;
    srv->cfg.stats_rate_per_s = cfg->stats_rate_per_s;
    srv->cfg.stats_burst = cfg->stats_burst;
    srv->cfg.n_admin_uids = cfg->n_admin_uids;
    memcpy(srv->cfg.admin_uids, cfg->admin_uids, sizeof(cfg->admin_uids));
    srv->cfg.n_admin_gids = cfg->n_admin_gids;
    memcpy(srv->cfg.admin_gids, cfg->admin_gids, sizeof(cfg->admin_gids));
    srv->cfg.n_model_dirs = cfg->n_model_dirs;
    srv->cfg.model_dirs_default = cfg->model_dirs_default;
    memcpy(srv->cfg.model_dirs, cfg->model_dirs, sizeof(cfg->model_dirs));
    srv->cfg.n_models = cfg->n_models;
    memcpy(srv->cfg.models, cfg->models, sizeof(cfg->models));
    ar_log("reload: done, %u configured model(s), %zu changed, %u unchanged", cfg->n_models, n_changes,
           srv->reload_unchanged);
  }
  free(cfg);
  if (has_waiter) {
    if (ok)
      answer_reload(srv, &waiter, changes, n_changes);
    else
      srv->ops.reply_error(srv, &waiter, srv->reload_rc ? srv->reload_rc : AR_ESTATE,
                            srv->reload_rc ? srv->reload_msg : "daemon is shutting down");
  }
  free(changes);
  char status[256];
  ar_models_status(srv, status, sizeof(status));
  ar_service_ready(status);
  if (srv->ops.reload_done) srv->ops.reload_done(srv);   /* last: it may start the next reload */
}

void ar_models_reload_answered(ar_server_t *srv, const ar_reply_to_t *to, int code, const char *message) {
  if (code != 0 && srv->reload_rc == 0) {
    srv->reload_rc = code;
    const char *name = to->reload_index < srv->reload_cfg->n_models ? srv->reload_cfg->models[to->reload_index].name
                                                                    : "(loaded at run time)";
    if (to->reload_index < srv->reload_cfg->n_models)
      snprintf(srv->reload_msg, sizeof(srv->reload_msg), "models[%u] '%s': %s", to->reload_index, name,
               message ? message : "");
    else   /* the code travels in the reply's Status.code (clients name it), not in the text */
      snprintf(srv->reload_msg, sizeof(srv->reload_msg), "%s", message ? message : "");
  }
  if (--srv->reload_pending == 0) reload_finish(srv);
}

bool ar_models_apply_config(ar_server_t *srv, ar_config_t *cfg, const ar_reply_to_t *waiter) {
  if (srv->reload_cfg) {
    free(cfg);
    return false;
  }
  srv->reload_cfg = cfg;
  srv->reload_rc = 0;
  srv->reload_msg[0] = '\0';
  srv->reload_unchanged = 0;
  srv->reload_has_waiter = waiter != NULL;
  if (waiter) srv->reload_to = *waiter;
  srv->reload_pending = 1;   /* held until every load below is started */
  for (uint32_t i = 0; i < cfg->n_models; i++) {
    const ar_config_model_t *e = &cfg->models[i];
    const ar_dmodel_t *m = ar_models_find(srv, e->name);
    if (m && m->state != AR_MODEL_READY) {
      /* A client's load or unload of that name is in progress: try again later. */
      srv->reload_rc = AR_ESTATE;
      snprintf(srv->reload_msg, sizeof(srv->reload_msg), "models[%u] '%s': %s; reload again", i, e->name,
               m->state == AR_MODEL_LOADING ? "a load of that name is in progress" : "it is being unloaded");
      break;
    }
    /* An unchanged entry is re-read too: its file may have been rewritten since it was loaded. */
    bool same = m && same_as_entry(m, e);
    if (!same)
      ar_log(m ? "reload: model '%s' changed (path, group, strategy or weights): loading the new instance next to the "
                 "running one"
               : "reload: model '%s' is new: loading",
             e->name);
    ar_reply_to_t to = {.conn = NULL, .reload = true, .reload_index = i};
    srv->reload_pending++;
    ar__load_model(srv, &to, e->name, e->path, e->group, e->strategy, e->weights, true, true, same, 0);
  }
  /* Models loaded at run time that the configuration does not name: re-read their files too. */
  for (ar_dmodel_t *m = srv->models; m && srv->reload_rc == 0; m = m->next) {
    if (m->shadow || m->retired || m->from_config || m->state != AR_MODEL_READY) continue;
    if (config_entry(cfg, m->name)) continue;
    ar_reply_to_t to = {.conn = NULL, .reload = true, .reload_index = UINT32_MAX};
    srv->reload_pending++;
    ar__load_model(srv, &to, m->name, m->path, m->group_name, ar_strategy_name(m->strategy), ar_weights_name(m->weights),
               true, false, true, m->serial);
  }
  ar_reply_to_t self = {.conn = NULL};
  ar_models_reload_answered(srv, &self, 0, NULL);
  return true;
}

/* ------------------------------------------------------------------------------------------ */
/* --check-config                                                                              */

int ar_models_check_config(const ar_config_t *cfg, FILE *out, char *msg, size_t msg_bytes) {
  ar_pool_t pool;
  int rc = ar_pool_init(&pool, cfg->pool_bytes, false, msg, msg_bytes);
  if (rc) return rc;
  typedef struct { char name[AR_NAME_MAX]; uint64_t offset, bytes; } grp_t;
  grp_t groups[AR_CONFIG_MAX_MODELS];
  int n_groups = 0;
  uint64_t separate = 0;
  if (out) fprintf(out, "pool: %" PRIu64 " bytes\n\n%-28s %-12s %-15s %12s %12s %12s %12s\n", pool.bytes, "model", "group", "strategy",
         "arena", "lower_bound", "persistent", "weights");
  for (uint32_t i = 0; i < cfg->n_models && rc == 0; i++) {
    const ar_config_model_t *e = &cfg->models[i];
    ar_strategy_t s = AR_STRATEGY_BEST;
    if (e->strategy[0] && ar_strategy_parse(e->strategy, &s) != 0) {
      rc = ar_errf(msg, msg_bytes, AR_ECONFIG, "models[%u].strategy: unknown strategy '%s'", i, e->strategy);
      break;
    }
    ar_interp_options_t dflt;
    ar_interp_options_default(&dflt);
    ar_weights_t w = dflt.weights;
    if (e->weights[0] && ar_weights_parse(e->weights, &w) != 0) {
      rc = ar_errf(msg, msg_bytes, AR_ECONFIG, "models[%u].weights: unknown weights mode '%s'", i, e->weights);
      break;
    }
    ar_cached_model_t *cm = NULL;
    ar_model_t *model = NULL;
    ar_interp_t *in = NULL;
    char pmsg[AR_MSG_BYTES];
    rc = ar__prepare_model(NULL, e->path, cfg->max_model_bytes, 0, NULL, s, w, ar_config_threads(cfg), NULL, &cm, &model,
                       &in, pmsg, sizeof(pmsg));
    if (rc) {
      ar_errf(msg, msg_bytes, rc, "models[%u] '%s': %s", i, e->name, pmsg);
      break;
    }
    ar_plan_figures_t fig;
    ar_planner_figures(ar_interp_planner(in), &fig);
    uint64_t arena = ar_interp_arena_bytes(in), pers = ar_interp_persistent_bytes(in);
    if (out) fprintf(out, "%-28s %-12s %-15s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n", e->name,
           e->group[0] ? e->group : "-", ar_strategy_name(s), arena, fig.lower_bound_bytes, pers,
           model->constant_bytes);
    ar_interp_free(in);
    ar_model_free(model);
    uint64_t off;
    if (pers) rc = ar_pool_alloc(&pool, pers, AR_REGION_PERSISTENT, e->name, &off, pmsg, sizeof(pmsg));
    separate += e->group[0] ? ar_pool_round(arena) : 0;
    /* Same growth rule as the daemon: a larger member gets a new region, the old one is freed. */
    int gi = -1;
    for (int k = 0; k < n_groups && e->group[0]; k++)
      if (strcmp(groups[k].name, e->group) == 0) gi = k;
    if (rc == 0 && (gi < 0 || groups[gi].bytes < ar_pool_round(arena))) {
      char owner[AR_POOL_OWNER_MAX];
      snprintf(owner, sizeof(owner), e->group[0] ? "group:%s" : "%s", e->group[0] ? e->group : e->name);
      rc = ar_pool_alloc(&pool, arena, AR_REGION_ACTIVATION, owner, &off, pmsg, sizeof(pmsg));
      if (rc == 0 && gi >= 0) {
        ar_pool_free(&pool, groups[gi].offset);
        groups[gi].offset = off;
        groups[gi].bytes = ar_pool_round(arena);
        if (cfg->compact_after_unload && ar_pool_hole_offset(&pool) < pool.bytes) {
          /* The daemon compacts after a group's growth (compact_after_unload): the regions slide
           * down in order; the groups' regions are found again by owner. */
          ar_pool_compact(&pool);
          for (int k = 0; k < n_groups; k++)
            for (size_t r = 0; r < pool.n_regions; r++)
              if (pool.regions[r].kind == AR_REGION_ACTIVATION && strncmp(pool.regions[r].owner, "group:", 6) == 0 &&
                  strcmp(pool.regions[r].owner + 6, groups[k].name) == 0)
                groups[k].offset = pool.regions[r].offset;
        }
      } else if (rc == 0 && e->group[0]) {
        snprintf(groups[n_groups].name, AR_NAME_MAX, "%s", e->group);
        groups[n_groups].offset = off;
        groups[n_groups++].bytes = ar_pool_round(arena);
      }
    }
    if (rc) ar_errf(msg, msg_bytes, rc, "models[%u] '%s' does not fit the pool: %s", i, e->name, pmsg);
  }
  if (rc == 0) {
    if (out) fprintf(out, "\n%12s %12s  %-11s %s\n", "offset", "bytes", "kind", "owner");
    for (size_t i = 0; i < pool.n_regions; i++)
      if (out) fprintf(out, "%12" PRIu64 " %12" PRIu64 "  %-11s %s\n", pool.regions[i].offset, pool.regions[i].bytes,
             ar_region_kind_name(pool.regions[i].kind), pool.regions[i].owner);
    uint64_t shared = 0;
    for (int k = 0; k < n_groups; k++) shared += groups[k].bytes;
    if (out) fprintf(out, "\nused %" PRIu64 " of %" PRIu64 " bytes, largest free block %" PRIu64 " bytes; share groups save %" PRIu64
           " bytes\n",
           ar_pool_used_bytes(&pool), pool.bytes, ar_pool_largest_free_bytes(&pool),
           separate > shared ? separate - shared : 0);
  }
  ar_pool_close(&pool);
  return rc;
}
