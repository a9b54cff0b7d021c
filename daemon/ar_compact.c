/* ar_compact.c - pool compaction: park every group owning a region above the first free block
 * (a MOVE job queued behind the jobs it accepted), slide the regions down, re-place the moved
 * models, answer the waiters. The protocol is drawn in ar_daemon.h.
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
#include "daemon/ar_sessions.h"

/* ------------------------------------------------------------------------------------------ */
/* Pool compaction (the protocol is drawn in ar_daemon.h)                                      */

void ar__compact_defer(ar_server_t *srv, ar_job_t *job) {
  job->next = NULL;
  if (srv->compact_deferred_tail)
    srv->compact_deferred_tail->next = job;
  else
    srv->compact_deferred = job;
  srv->compact_deferred_tail = job;
}

/* The group owning a region of the list: a model's persistent region or a group's current
 * activation region. NULL for a group's previous activation region, freed when the PLACE or
 * regrow job moving its members out of it ends. */
static ar_group_t *group_of_region(ar_server_t *srv, const ar_region_t *r) {
  if (r->kind == AR_REGION_PERSISTENT) {
    for (ar_dmodel_t *m = srv->models; m; m = m->next)
      if (m->has_persistent && m->persistent_offset == r->offset) return m->group;
  } else if (r->kind == AR_REGION_ACTIVATION) {
    for (ar_group_t *g = srv->groups; g; g = g->next)
      if (g->has_region && g->act_offset == r->offset) return g;
  } else if (r->kind == AR_REGION_STATE) {
    ar_dmodel_t *m = ar_sessions_chunk_owner(srv, r->offset, NULL);
    return m ? m->group : NULL;
  }
  return NULL;
}

/* Queue a MOVE job behind the jobs `g` has accepted. Returns false on no memory. */
static bool compact_queue_move(ar_server_t *srv, ar_group_t *g) {
  ar_job_t *job = calloc(1, sizeof(*job));
  if (job == NULL) return false;
  job->kind = AR_JOB_MOVE;
  job->srv = srv;
  job->group = g;
  job->work.data = job;
  g->refs++;   /* released when the job ends: a parked group outlives its last member */
  g->move_queued = true;
  srv->jobs_outstanding++;
  ar__group_push(g, job);
  ar__group_kick(srv, g);
  return true;
}

static void free_figures(const ar_pool_t *p, uint64_t *free_bytes, uint64_t *largest, uint32_t *blocks) {
  *free_bytes = p->bytes - ar_pool_used_bytes(p);
  *largest = ar_pool_largest_free_bytes(p);
  *blocks = (uint32_t)ar_pool_free_blocks(p);
}

/* Every group the layout moves is parked: apply the layout (or, with `rc`, give up and apply
 * nothing), then let each parked group's MOVE job run. */
static void compact_apply(ar_server_t *srv, int rc, const char *why) {
  ar_compact_figures_t *f = &srv->compact_fig;
  free_figures(&srv->pool, &f->free_before, &f->largest_before, &f->free_blocks_before);
  size_t cap = srv->pool.n_regions;
  ar_pool_move_t *moves = rc == 0 ? calloc(cap + 1, sizeof(*moves)) : NULL;
  uint64_t **slots = rc == 0 ? calloc(cap + 1, sizeof(*slots)) : NULL;
  if (rc == 0 && (moves == NULL || slots == NULL)) {
    rc = AR_ENOMEM;
    why = "no memory for the compaction plan";
  }
  size_t n = rc == 0 ? ar_pool_compact_plan(&srv->pool, moves, cap) : 0;
  for (ar_dmodel_t *m = srv->models; m; m = m->next) m->relocated = false;
  for (ar_group_t *g = srv->groups; g; g = g->next) g->relocated = false;
  /* Resolve every move to the offset field it changes before changing any. */
  for (size_t i = 0; i < n && rc == 0; i++) {
    slots[i] = NULL;
    if (moves[i].kind == AR_REGION_PERSISTENT) {
      for (ar_dmodel_t *m = srv->models; m && !slots[i]; m = m->next)
        if (m->has_persistent && m->persistent_offset == moves[i].from) {
          slots[i] = &m->persistent_offset;
          m->relocated = true;
        }
    } else if (moves[i].kind == AR_REGION_STATE) {
      ar_sessions_chunk_owner(srv, moves[i].from, &slots[i]);   /* its group is parked: no invoke reads it */
    } else {
      for (ar_group_t *g = srv->groups; g && !slots[i]; g = g->next)
        if (g->has_region && g->act_offset == moves[i].from) {
          slots[i] = &g->act_offset;
          g->relocated = true;
        }
    }
    if (slots[i] == NULL) {
      rc = AR_EINTERNAL;
      why = "a region above the first free block has no owner to move it";
    }
  }
  if (rc == 0) {
    f->bytes_moved = ar_pool_compact(&srv->pool);
    f->regions_moved = (uint32_t)n;
    for (size_t i = 0; i < n; i++) *slots[i] = moves[i].to;
    /* State is the one content a move keeps (everything else is re-placed from scratch; the MOVE
     * job's place keeps the bytes it finds in the default slot, ar_interp_place): session slot
     * chunks whole, and the default slot of a stateful model at ar_interp_default_state_offset in
     * its persistent region. ONE pass over the moves of every kind, down and in offset order, so
     * each slide reads bytes no earlier one overwrote (a region may move onto the old place of a
     * chunk below it); every group owning a moved region is parked, so nothing runs on them. */
    for (size_t i = 0; i < n; i++) {
      uint64_t off = 0, bytes = 0;
      if (moves[i].kind == AR_REGION_STATE) {
        bytes = moves[i].bytes;
      } else if (moves[i].kind == AR_REGION_PERSISTENT) {
        for (ar_dmodel_t *m = srv->models; m; m = m->next) {
          if (slots[i] != &m->persistent_offset || !m->interp) continue;
          const uint64_t sb = ar_interp_state_bytes(m->interp), so = ar_interp_default_state_offset(m->interp);
          if (sb > 0 && so + sb <= moves[i].bytes) off = so, bytes = sb;
        }
      }
      if (bytes)
        memmove(srv->pool.base + moves[i].to + off, srv->pool.base + moves[i].from + off, (size_t)bytes);
    }
  } else {
    srv->compact_rc = rc;
    snprintf(srv->compact_msg, sizeof(srv->compact_msg), "compaction gave up: %s", why);
    ar_log("%s", srv->compact_msg);
    for (ar_dmodel_t *m = srv->models; m; m = m->next) m->relocated = false;
    for (ar_group_t *g = srv->groups; g; g = g->next) g->relocated = false;
  }
  free(moves);
  free(slots);
  free_figures(&srv->pool, &f->free_after, &f->largest_after, &f->free_blocks_after);
  srv->compact_committed = true;
  /* Unpark: each MOVE job re-places the members whose regions moved. All are counted before any
   * is queued (a job that fails to queue ends at once). */
  ar_job_t *run = NULL;
  for (ar_group_t *g = srv->groups; g; g = g->next) {
    ar_job_t *job = g->parked;
    if (job == NULL) continue;
    g->parked = NULL;
    int k = 0;
    for (ar_dmodel_t *m = srv->models; m; m = m->next)
      if (m->group == g && m->placed && (g->relocated || m->relocated)) k++;
    job->moves = calloc((size_t)k + 1, sizeof(ar_dmodel_t *));
    if (job->moves == NULL) {
      job->rc = AR_ENOMEM;
      snprintf(job->msg, sizeof(job->msg), "no memory to re-place the members of group '%s'", g->owner);
    } else {
      for (ar_dmodel_t *m = srv->models; m; m = m->next)
        if (m->group == g && m->placed && (g->relocated || m->relocated)) {
          job->moves[job->n_moves++] = m;
          m->inflight++;   /* keeps an unload from freeing it while it moves */
        }
    }
    f->models_replaced += (uint32_t)job->n_moves;
    job->act_base = g->has_region ? ar_pool_ptr(&srv->pool, g->act_offset) : NULL;
    job->act_bytes = g->has_region ? g->act_bytes : 0;
    job->move_act_offset = g->act_offset;
    job->move_counted = true;
    srv->compact_moving++;
    job->next = run;
    run = job;
  }
  while (run) {
    ar_job_t *job = run;
    run = job->next;
    job->next = NULL;
    if (ar__queue_work(srv, job) != 0) {
      job->rc = AR_EINTERNAL;
      snprintf(job->msg, sizeof(job->msg), "uv_queue_work failed");
      ar__group_after(&job->work, 0);
    }
  }
  /* Loads that finished preparing meanwhile take their regions from the one free block now. */
  ar_job_t *d = srv->compact_deferred;
  srv->compact_deferred = srv->compact_deferred_tail = NULL;
  while (d) {
    ar_job_t *next = d->next;
    d->next = NULL;
    if (d->kind == AR_JOB_INVOKE) {
      /* An invoke or resize whose region growth waited for the layout: run it again. */
      ar__group_push(d->model->group, d);
      ar__group_kick(srv, d->model->group);
    } else {
      ar__prepare_after(d);
    }
    d = next;
  }
  if (srv->compacting && srv->compact_committed && srv->compact_moving == 0) ar__compact_finish(srv);
}

/* Loop thread, whenever a group may have parked or the pool changed: queue MOVE jobs for the groups
 * owning regions above the first free block, and apply the layout once all of them are parked. */
void ar__compact_check(ar_server_t *srv) {
  if (!srv->compacting || srv->compact_committed) return;
  for (;;) {
    uint64_t hole = ar_pool_hole_offset(&srv->pool);
    bool queued = false, waiting = false;
    for (size_t i = 0; i < srv->pool.n_regions; i++) {
      const ar_region_t *r = &srv->pool.regions[i];
      if (r->kind == AR_REGION_FREE || r->offset < hole) continue;
      ar_group_t *g = group_of_region(srv, r);
      if (g == NULL) {
        /* An old activation region: its group frees it when its current job ends. (One still
         * there when that group is parked has no owner: compact_apply gives up, naming it.) */
        for (ar_group_t *x = srv->groups; x; x = x->next) {
          if (strcmp(x->owner, r->owner) != 0 || x->parked) continue;
          waiting = true;
          if (!x->move_queued) {
            if (!compact_queue_move(srv, x)) return compact_apply(srv, AR_ENOMEM, "no memory for a move job");
            queued = true;
          }
        }
        continue;
      }
      if (g->parked) continue;
      waiting = true;
      if (!g->move_queued) {
        if (!compact_queue_move(srv, g)) return compact_apply(srv, AR_ENOMEM, "no memory for a move job");
        queued = true;
      }
    }
    if (queued) continue;   /* a kick may have parked a group at once: look again */
    if (waiting) return;
    return compact_apply(srv, 0, NULL);
  }
}

static void answer_compact(ar_server_t *srv, const ar_reply_to_t *to) {
  const ar_compact_figures_t *f = &srv->compact_fig;
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__CompactResponse body = ARENAD__COMPACT_RESPONSE__INIT;
  body.regions_moved = f->regions_moved;
  body.bytes_moved = f->bytes_moved;
  body.models_replaced = f->models_replaced;
  body.free_bytes_before = f->free_before;
  body.largest_free_bytes_before = f->largest_before;
  body.free_blocks_before = f->free_blocks_before;
  body.free_bytes_after = f->free_after;
  body.largest_free_bytes_after = f->largest_after;
  body.free_blocks_after = f->free_blocks_after;
  body.duration_us = f->t_end_us - f->t_start_us;
  body.released_bytes = f->released;
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_COMPACT;
  resp.compact = &body;
  srv->ops.reply(srv, to, &resp);
}

/* The last MOVE job ended: answer the waiters, start the next compaction if one was asked for. */
void ar__compact_finish(ar_server_t *srv) {
  ar_compact_figures_t *f = &srv->compact_fig;
  f->t_end_us = ar_now_us();
  srv->compacting = false;
  srv->compact_committed = false;
  if (srv->compact_rc == 0) {
    /* Every place the moved models left is unused now: give its pages back. */
    f->released = ar_pool_release_free(&srv->pool);
    srv->pool_releases++;
    srv->trim_pending = true;   /* the moves' freed heap (old kernel state) at the next sweep */
    srv->compactions++;
    srv->compact_bytes_moved += f->bytes_moved;
    if (f->regions_moved > 0)
      ar_log("compacted the pool: %u region(s), %" PRIu64 " bytes moved, %u model(s) re-placed; free %" PRIu64
             " bytes, largest block %" PRIu64 " -> %" PRIu64 " bytes (%u -> %u block(s)), %" PRIu64
             " bytes of free pages released, %" PRIu64 " us",
             f->regions_moved, f->bytes_moved, f->models_replaced, f->free_after, f->largest_before,
             f->largest_after, f->free_blocks_before, f->free_blocks_after, f->released, f->t_end_us - f->t_start_us);
  }
  int rc = srv->compact_rc;
  char msg[AR_MSG_BYTES];
  snprintf(msg, sizeof(msg), "%s", srv->compact_msg);
  ar_waiter_t *w = srv->compact_waiters;
  srv->compact_waiters = NULL;
  while (w) {
    ar_waiter_t *next = w->next;
    if (rc == 0)
      answer_compact(srv, &w->to);
    else
      srv->ops.reply_error(srv, &w->to, rc, msg);
    free(w);
    w = next;
  }
  if (srv->compact_again || srv->compact_next_waiters) {
    ar_waiter_t *nw = srv->compact_next_waiters;
    srv->compact_next_waiters = NULL;
    srv->compact_again = false;
    srv->compacting = true;
    srv->compact_rc = 0;
    srv->compact_msg[0] = '\0';
    memset(f, 0, sizeof(*f));
    f->t_start_us = ar_now_us();
    srv->compact_waiters = nw;
    ar__compact_check(srv);
  }
}

/* Start a compaction, or join the one in progress (`to` NULL: no reply wanted). */
void ar__compact_start(ar_server_t *srv, const ar_reply_to_t *to) {
  ar_waiter_t *w = NULL;
  if (to) {
    w = calloc(1, sizeof(*w));
    if (w == NULL) return ar__answer_error(srv, to, AR_ENOMEM, "no memory");
    w->to = *to;
  }
  if (srv->compacting && srv->compact_committed) {
    /* Its layout is already applied: what changed since needs the next one. */
    srv->compact_again = true;
    if (w) {
      w->next = srv->compact_next_waiters;
      srv->compact_next_waiters = w;
    }
    return;
  }
  if (w) {
    w->next = srv->compact_waiters;
    srv->compact_waiters = w;
  }
  if (!srv->compacting) {
    srv->compacting = true;
    srv->compact_rc = 0;
    srv->compact_msg[0] = '\0';
    memset(&srv->compact_fig, 0, sizeof(srv->compact_fig));
    srv->compact_fig.t_start_us = ar_now_us();
  }
  ar__compact_check(srv);
}

void ar_models_compact(ar_server_t *srv, const ar_reply_to_t *to) { ar__compact_start(srv, to); }
