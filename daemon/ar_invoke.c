/* ar_invoke.c - invokes and the share groups' job queues: an Invoke or ResizeInput request is
 * validated once here (loop thread), queued on its model's share group, run on a worker (or the
 * loop, see run_on_loop) one job of a group at a time, and answered; PLACE jobs of loads and MOVE
 * jobs of compactions run through the same queue. A job whose new input shapes need a larger
 * activation region grows it here (grow_region), and shapes going down shrink it. Read top to
 * bottom: groups and the queue, the request check, the worker (group_work), the answers and
 * group_after on the loop thread.
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
/* Groups                                                                                      */

ar_group_t *ar__group_attach(ar_server_t *srv, ar_dmodel_t *m) {
  ar_group_t *g = NULL;
  if (m->group_name[0])
    for (g = srv->groups; g; g = g->next)
      if (strcmp(g->name, m->group_name) == 0) break;
  if (g == NULL) {
    g = calloc(1, sizeof(*g));
    if (g == NULL) return NULL;
    snprintf(g->name, sizeof(g->name), "%s", m->group_name);
    if (m->group_name[0])
      snprintf(g->owner, sizeof(g->owner), "group:%s", m->group_name);
    else
      snprintf(g->owner, sizeof(g->owner), "%s", m->name);
    pthread_mutex_init(&g->lock, NULL);
    g->next = srv->groups;
    srv->groups = g;
  }
  g->refs++;
  return g;
}

void ar__group_detach(ar_server_t *srv, ar_group_t *g) {
  if (--g->refs > 0) return;
  if (g->has_region) ar_pool_free(&srv->pool, g->act_offset);
  for (ar_group_t **pp = &srv->groups; *pp; pp = &(*pp)->next)
    if (*pp == g) {
      *pp = g->next;
      break;
    }
  pthread_mutex_destroy(&g->lock);
  free(g);
}

static void group_work(uv_work_t *w);

/* Regions were freed (an unload, or a share group's region that grew and left its old place):
 * with compact_after_unload, compact when that left a hole below used bytes, so the free bytes stay
 * one block; else see whether a compaction waiting for its groups needs fewer of them now. */
void ar__compact_after_free(ar_server_t *srv) {
  /* What the freed models held on the heap (file copies, plans, kernels' tables) goes back to the
   * system at the next sweep (malloc_trim: glibc keeps freed pages of its arenas otherwise). */
  srv->trim_pending = true;
  if (srv->cfg.compact_after_unload && !srv->draining && ar_pool_hole_offset(&srv->pool) < srv->pool.bytes) {
    ar__compact_start(srv, NULL);   /* its end releases the free pages (ar__compact_finish) */
    return;
  }
  /* No compaction follows (the freed regions were the pool's last, or compaction is off): give
   * their pages back now, else they stay resident until some later compaction. Not while one is
   * in progress: its end releases them. */
  if (!srv->compacting) {
    ar_pool_release_free(&srv->pool);
    srv->pool_releases++;
  }
  ar__compact_check(srv);
}

void ar__group_push(ar_group_t *g, ar_job_t *job) {
  job->next = NULL;
  if (g->tail)
    g->tail->next = job;
  else
    g->head = job;
  g->tail = job;
}

/* Hand a group job to the threadpool. */
int ar__queue_work(ar_server_t *srv, ar_job_t *job) {
  int rc = uv_queue_work(srv->loop, &job->work, group_work, ar__group_after);
  if (rc == 0) {
    job->on_worker = true;
    srv->jobs_on_workers++;
  }
  return rc;
}

/* inline_invoke_us: a lone invoke (the only job the daemon has: none queued, none on a worker, no
 * frame decoding) of a model whose previous invoke took at most that long runs on the loop thread,
 * so it never competes with another job for the cores, and requests that arrive meanwhile wait
 * for about one such invoke at most. It saves the two thread hand-offs of a worker (loop ->
 * worker -> loop), each a wake-up of a sleeping thread; with other jobs around, invokes go to
 * the workers and run side by side. */
static bool run_on_loop(const ar_server_t *srv, const ar_job_t *job) {
  const ar_dmodel_t *m = job->model;
  return srv->cfg.inline_invoke_us > 0 && srv->inline_init && !srv->draining && job->kind == AR_JOB_INVOKE &&
         !job->regrow && !job->resize_only && srv->jobs_on_workers == 0 && srv->jobs_outstanding == 1 &&
         srv->inline_head == NULL && m->last_invoke_us > 0 && m->last_invoke_us <= srv->cfg.inline_invoke_us;
}

/* Loop thread, idle phase: run the invokes queued for the loop, each exactly as a worker would
 * (group_work), then answer it (ar__group_after); ar__group_after may queue the group's next job here. */
static void on_inline_run(uv_idle_t *h) {
  ar_server_t *srv = h->data;
  while (srv->inline_head) {
    ar_job_t *job = srv->inline_head;
    srv->inline_head = job->next;
    if (srv->inline_head == NULL) srv->inline_tail = NULL;
    job->next = NULL;
    group_work(&job->work);
    ar__group_after(&job->work, 0);
  }
  uv_idle_stop(h);
}

/* Hand the group's next job to the threadpool (or the loop, see run_on_loop) when the group is
 * idle. */
void ar__group_kick(ar_server_t *srv, ar_group_t *g) {
  if (g->busy || g->head == NULL) return;
  ar_job_t *job = g->head;
  g->head = job->next;
  if (g->head == NULL) g->tail = NULL;
  g->busy = true;
  if (job->kind == AR_JOB_MOVE) {
    /* Every job the group accepted before it is done: park until the compaction's layout is
     * applied. A MOVE left over from a compaction that no longer needed this group runs empty. */
    if (srv->compacting && !srv->compact_committed) {
      g->parked = job;
      return;
    }
    int rc = ar__queue_work(srv, job);
    if (rc != 0) {
      job->rc = AR_EINTERNAL;
      ar__group_after(&job->work, 0);
    }
    return;
  }
  if (job->kind == AR_JOB_INVOKE && job->to.conn &&
      ar_conn_is_gone(job->to.conn)) {
    /* The client hung up: nobody can read the reply, so do not run it (the worker returns at
     * once on a set rc; ar__group_after counts it as dropped, not as an error). */
    job->rc = AR_ECONN;
    snprintf(job->msg, sizeof(job->msg), "client disconnected; invoke not run");
  }
  if (job->kind == AR_JOB_PLACE || job->regrow) {
    /* Snapshot, on the loop thread, which members must move into the group's current region. */
    int n = 0;
    for (ar_dmodel_t *m = srv->models; m; m = m->next)
      if (m->group == g && m->placed && m->placed_act_offset != g->act_offset) n++;
    job->moves = calloc((size_t)n + 1, sizeof(ar_dmodel_t *));
    if (job->moves) {
      for (ar_dmodel_t *m = srv->models; m; m = m->next)
        if (m->group == g && m->placed && m->placed_act_offset != g->act_offset) {
          job->moves[job->n_moves++] = m;
          m->inflight++;   /* keeps an unload from freeing it while it moves */
        }
    } else {
      job->rc = AR_ENOMEM;
    }
  }
  /* Invokes re-place their model here when new input shapes re-plan it. */
  job->act_base = g->has_region ? ar_pool_ptr(&srv->pool, g->act_offset) : NULL;
  job->act_bytes = g->has_region ? g->act_bytes : 0;
  job->t_start_us = 0;
  if (run_on_loop(srv, job)) {
    job->on_loop = true;
    job->next = NULL;
    if (srv->inline_tail)
      srv->inline_tail->next = job;
    else
      srv->inline_head = job;
    srv->inline_tail = job;
    uv_idle_start(&srv->inline_run, on_inline_run);
    return;
  }
  job->on_loop = false;
  int rc = ar__queue_work(srv, job);
  if (rc != 0) {
    /* Cannot happen with valid arguments; answer instead of hanging the group. */
    job->rc = AR_EINTERNAL;
    snprintf(job->msg, sizeof(job->msg), "uv_queue_work: %s", uv_strerror(rc));
    ar__group_after(&job->work, 0);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Invoke                                                                                      */

static void format_shape(char *buf, size_t n, const int64_t *dims, size_t rank) {
  size_t o = 0;
  o += (size_t)snprintf(buf + o, n - o, "[");
  for (size_t i = 0; i < rank && o < n; i++) o += (size_t)snprintf(buf + o, n - o, "%s%" PRId64, i ? "," : "", dims[i]);
  if (o < n) snprintf(buf + o, n - o, "]");
}

/* ResizeInput: validated here (the model's stored shapes and signature, never the interpreter's
 * current views, which a worker may be changing), then queued like an invoke. */
static int check_resize_request(ar_dmodel_t *m, const Arenad__ResizeInputRequest *rr, char *msg, size_t n) {
  const ar_model_t *model = ar_interp_model(m->interp);
  if (rr->input >= model->subgraphs[0].n_inputs)
    return ar_errf(msg, n, AR_EINVAL, "model '%s' has %u input(s), no input %u", m->name,
                   model->subgraphs[0].n_inputs, rr->input);
  if (rr->n_shape > AR_MAX_RANK)
    return ar_errf(msg, n, AR_ESHAPE, "input %u: rank %zu", rr->input, rr->n_shape);
  int32_t dims[AR_MAX_RANK];
  for (size_t d = 0; d < rr->n_shape; d++) {
    if (rr->shape[d] < 1 || rr->shape[d] > INT32_MAX)   /* named as sent, before any narrowing */
      return ar_errf(msg, n, AR_ESHAPE, "input %u (%s): dim %zu is %" PRId64 " (a dim must be 1 to %d)", rr->input,
                     ar_interp_input_name(m->interp, (int32_t)rr->input), d, rr->shape[d], INT32_MAX);
    dims[d] = (int32_t)rr->shape[d];
  }
  return ar_interp_check_input_shape(model, (int32_t)rr->input, (int32_t)rr->n_shape, dims, msg, n);
}

/* True when the model's shapes can change between invokes (resizable or shape-setting inputs). */
static bool shapes_can_change(ar_dmodel_t *m) {
  for (int32_t i = 0; i < ar_interp_n_inputs(m->interp); i++)
    if (ar_interp_input_resizable(m->interp, i) || ar_interp_input_sets_shape(m->interp, i)) return true;
  return false;
}

/* Drop an invoke job's references on registered buffers and its io arrays (NULL is a no-op). */
void ar__job_free_io(ar_job_t *job) {
  if (job == NULL) return;
  for (uint32_t i = 0; i < job->n_shm; i++) ar_shm_unref(job->shm[i]);
  job->n_shm = 0;
  free(job->io);
  job->io = NULL;
}

/* An upper bound of the frame answering an invoke of `in` at its current output shapes (4-byte
 * length included), the outputs with out_dst[j] set going to registered buffers: what the reply
 * reserves of the daemon-wide budget of unwritten replies (ar_conn_reserve_reply). Each field is
 * counted at its largest encoding: a tag of 2 bytes, a length or number of 10, pads of 18. */
static uint64_t invoke_reply_bound(ar_interp_t *in, uint8_t *const *out_dst) {
  /* frame length, Response.id, .status (with its pad), .invoke, InvokeResponse.invoke_us/queue_us */
  uint64_t bytes = 4 + 12 + (12 + 20) + 12 + 2 * 12;
  for (int32_t j = 0; j < ar_interp_n_outputs(in); j++) {
    const ar_tview_t *v = ar_interp_output(in, j);
    const char *name = ar_interp_output_name(in, j);
    bytes += 12 + (name ? 12 + strlen(name) : 0) + 12 + 12 + 12 * (uint64_t)v->rank + 20;   /* Tensor, name, dtype, shape, pad */
    if (v->quant) bytes += 12 + 12 + 12 + 4 * (uint64_t)v->quant->n + 12 + 12 * (uint64_t)v->quant->n;   /* quantization */
    bytes += out_dst[j] ? 12 + 3 * 12 : 12 + v->bytes;   /* shm range, or the data */
  }
  return bytes;
}

/* A re-plan at the stored input shapes, queued on the model's group like a ResizeInput (behind the
 * jobs it accepted), answered to nobody. */
static void queue_restore(ar_server_t *srv, ar_dmodel_t *m) {
  ar_job_t *job = calloc(1, sizeof(*job));
  if (job == NULL) {
    ar_log("model '%s': no memory to restore its stored input shapes", m->name);
    return;
  }
  job->kind = AR_JOB_INVOKE;
  job->resize_only = true;
  job->restore = true;
  job->may_restate = true;
  job->srv = srv;
  job->to = (ar_reply_to_t){.conn = NULL, .fd = -1};
  job->model = m;
  job->work.data = job;
  job->t_accept_us = ar_now_us();
  m->inflight++;
  srv->jobs_outstanding++;
  ar__group_push(m->group, job);
  ar__group_kick(srv, m->group);
}

void ar_models_conn_gone(ar_server_t *srv, const void *conn) {
  if (conn == NULL || srv->draining) return;   /* draining: the models go with the daemon */
  for (ar_dmodel_t *m = srv->models; m; m = m->next) {
    if (m->shaped_by != conn) continue;
    m->shaped_by = NULL;
    if (m->state != AR_MODEL_READY || m->group == NULL) continue;
    ar_log("model '%s': the peer whose input shapes it was planned for disconnected: back to its stored shapes",
           m->name);
    queue_restore(srv, m);
  }
}

void ar_models_invoke(ar_server_t *srv, const ar_reply_to_t *to, Arenad__Request *req) {
  bool resize_only = req->body_case == ARENAD__REQUEST__BODY_RESIZE_INPUT;
  static Arenad__InvokeRequest no_inputs = ARENAD__INVOKE_REQUEST__INIT;
  const Arenad__InvokeRequest *ir = resize_only ? &no_inputs : req->invoke;
  ar_dmodel_t *m = ar_models_find(srv, resize_only ? req->resize_input->model : ir->model);
  char msg[AR_MSG_BYTES];
  int rc = 0;
  /* Draining: nothing more is read, so this frame arrived before SIGTERM; it is served. */
  if (resize_only && m == NULL) {
    rc = ar_errf(msg, sizeof(msg), AR_ENOENT, "no model named '%.80s'", req->resize_input->model);
  } else if (m != NULL && m->state == AR_MODEL_LOADING) {
    /* Retryable: e.g. a configured model while the daemon starts (READY=1 follows the loads). */
    rc = ar_errf(msg, sizeof(msg), AR_EAGAIN, "model '%s' is loading: retry, it is served once loaded", m->name);
  } else if (resize_only && m->state != AR_MODEL_READY) {
    rc = ar_errf(msg, sizeof(msg), AR_ESTATE, "model '%s' is not ready", m->name);
  } else if (resize_only) {
    rc = check_resize_request(m, req->resize_input, msg, sizeof(msg));
  } else if (m == NULL) {
    rc = ar_errf(msg, sizeof(msg), AR_ENOENT, "no model named '%.80s'", ir->model);
  } else if (m->state == AR_MODEL_UNLOADING) {
    rc = ar_errf(msg, sizeof(msg), AR_ENOENT, "model '%s' is being unloaded", m->name);
  } else if (m->inflight >= srv->cfg.max_queue_per_model) {
    rc = ar_errf(msg, sizeof(msg), AR_EBUSY, "model '%s' has %" PRIu64 " invokes queued or running (max_queue_per_model %u)",
                 m->name, m->inflight, srv->cfg.max_queue_per_model);
  } else if (!resize_only && (int64_t)ir->n_inputs != ar_interp_n_inputs(m->interp)) {
    rc = ar_errf(msg, sizeof(msg), AR_ESHAPE, "model '%s' takes %d input(s), the request has %zu", m->name,
                 ar_interp_n_inputs(m->interp), ir->n_inputs);
  } else if (!resize_only && ir->n_outputs != 0 && (int64_t)ir->n_outputs != ar_interp_n_outputs(m->interp)) {
    rc = ar_errf(msg, sizeof(msg), AR_EINVAL, "model '%s' has %d output(s), the request names %zu output ranges "
                 "(name none, or one per output: buffer 0 for an output sent in the reply)", m->name,
                 ar_interp_n_outputs(m->interp), ir->n_outputs);
  }
  ar_job_t *job = NULL;
  if (rc == 0) {
    size_t n_in = ir->n_inputs, n_out = (size_t)ar_interp_n_outputs(m->interp);
    job = calloc(1, sizeof(*job));
    if (job) job->io = calloc(1, n_in * (sizeof(uint8_t *) + sizeof(uint64_t)) +
                                   n_out * (sizeof(uint8_t *) + sizeof(uint64_t)) + (n_in + n_out + 1) * sizeof(void *));
    if (job == NULL || job->io == NULL) {
      rc = ar_errf(msg, sizeof(msg), AR_ENOMEM, "no memory for an invoke of '%s'", m->name);
    } else {
      char *p = job->io;
      job->in_src = (const uint8_t **)(void *)p, p += n_in * sizeof(uint8_t *);
      job->out_dst = (uint8_t **)(void *)p, p += n_out * sizeof(uint8_t *);
      job->shm = (ar_shm_buf_t **)(void *)p, p += (n_in + n_out + 1) * sizeof(void *);
      job->in_len = (uint64_t *)(void *)p, p += n_in * sizeof(uint64_t);
      job->out_cap = (uint64_t *)(void *)p;
    }
  }
  /* The boundary check: every input exactly matches the model's input tensor; a range of a
   * registered buffer lies inside it (ar_shm_range) and holds exactly the input's bytes. */
  for (size_t i = 0; rc == 0 && i < ir->n_inputs; i++) {
    const Arenad__Tensor *t = ir->inputs[i];
    const ar_tview_t *v = ar_interp_input(m->interp, (int32_t)i);
    const char *tn = ar_interp_input_name(m->interp, (int32_t)i);
    const uint8_t *src = t->data.data;
    uint64_t len = t->data.len;
    if (t->shm != NULL && t->shm->buffer != 0) {
      ar_shm_buf_t *b = to->conn ? ar_conn_buffer(to->conn, t->shm->buffer) : NULL;
      uint8_t *at = NULL;
      char why[AR_MSG_BYTES / 2];
      if (t->data.len != 0)
        rc = ar_errf(msg, sizeof(msg), AR_EINVAL, "input %zu (%s): both data and shm are set (send one)", i, tn);
      else if (ar_interp_input_sets_shape(m->interp, (int32_t)i))
        rc = ar_errf(msg, sizeof(msg), AR_EINVAL, "input %zu (%s): its value sets shapes; send it in data, not shm",
                     i, tn);
      else if (b == NULL)
        rc = ar_errf(msg, sizeof(msg), AR_EINVAL, "input %zu (%s): no buffer %" PRIu32
                     " is registered on this connection", i, tn, t->shm->buffer);
      else if (ar_shm_range(b, t->shm->offset, t->shm->bytes, false, &at, why, sizeof(why)) != 0)
        rc = ar_errf(msg, sizeof(msg), AR_EINVAL, "input %zu (%s): %s", i, tn, why);
      if (rc) break;
      ar_shm_ref(b);
      job->shm[job->n_shm++] = b;
      src = at;
      len = t->shm->bytes;
    }
    job->in_src[i] = src;
    job->in_len[i] = len;
    int64_t want[AR_MAX_RANK];
    for (int32_t d = 0; d < v->rank; d++) want[d] = v->dims[d];
    char got_s[160], want_s[160];
    if ((int)t->dtype != (int)v->dtype) {
      rc = ar_errf(msg, sizeof(msg), AR_ESHAPE, "input %zu (%s): dtype %s (%d), the model wants %s", i, tn,
                   ar_dtype_name((ar_dtype_t)t->dtype), (int)t->dtype, ar_dtype_name(v->dtype));
      break;
    }
    for (size_t d = 0; d < t->n_shape; d++)
      if (t->shape[d] < 0) {
        rc = ar_errf(msg, sizeof(msg), AR_ESHAPE, "input %zu (%s): dim %zu is %" PRId64 " (negative)", i, tn, d,
                     t->shape[d]);
        break;
      }
    if (rc) break;
    if (ar_interp_input_resizable(m->interp, (int32_t)i)) {
      /* Any shape the signature allows; the worker re-plans when it differs from the current. */
      int32_t dims[AR_MAX_RANK];
      uint64_t elems = 1;
      if (t->n_shape > AR_MAX_RANK) {
        rc = ar_errf(msg, sizeof(msg), AR_ESHAPE, "input %zu (%s): rank %zu", i, tn, t->n_shape);
        break;
      }
      for (size_t d = 0; d < t->n_shape; d++) {
        dims[d] = t->shape[d] > INT32_MAX ? -1 : (int32_t)t->shape[d];
        elems *= (uint64_t)(t->shape[d] > INT32_MAX ? 0 : t->shape[d]);
      }
      rc = ar_interp_check_input_shape(ar_interp_model(m->interp), (int32_t)i, (int32_t)t->n_shape, dims, msg,
                                       sizeof(msg));
      if (rc == 0 && len != elems * ar_dtype_size(v->dtype))
        rc = ar_errf(msg, sizeof(msg), AR_ESHAPE, "input %zu (%s): %" PRIu64 " data bytes, its shape needs %" PRIu64,
                     i, tn, len, elems * ar_dtype_size(v->dtype));
      if (rc) break;
      continue;
    }
    bool same = t->n_shape == (size_t)v->rank;
    for (size_t d = 0; same && d < t->n_shape; d++) same = t->shape[d] == want[d];
    if (!same) {
      format_shape(got_s, sizeof(got_s), t->shape, AR_MIN(t->n_shape, (size_t)16));
      format_shape(want_s, sizeof(want_s), want, (size_t)v->rank);
      rc = ar_errf(msg, sizeof(msg), AR_ESHAPE, "input %zu (%s): shape %s%s does not match the model's %s", i, tn,
                   got_s, t->n_shape > 16 ? "..." : "", want_s);
      break;
    }
    if (len != v->bytes) {
      rc = ar_errf(msg, sizeof(msg), AR_ESHAPE, "input %zu (%s): %" PRIu64 " data bytes, shape %s of %s needs %" PRIu64,
                   i, tn, len, (format_shape(want_s, sizeof(want_s), want, (size_t)v->rank), want_s),
                   ar_dtype_name(v->dtype), v->bytes);
      break;
    }
  }
  bool sized_later = rc == 0 && (resize_only || shapes_can_change(m));
  /* Outputs into registered buffers: each range inside its (writable) buffer and, when the output
   * sizes are known now, large enough (else the worker checks it after applying the shapes). */
  for (size_t j = 0; rc == 0 && !resize_only && j < ir->n_outputs; j++) {
    const Arenad__BufferRange *r = ir->outputs[j];
    if (r->buffer == 0) continue;
    const char *tn = ar_interp_output_name(m->interp, (int32_t)j);
    ar_shm_buf_t *b = to->conn ? ar_conn_buffer(to->conn, r->buffer) : NULL;
    uint8_t *at = NULL;
    char why[AR_MSG_BYTES / 2];
    if (b == NULL)
      rc = ar_errf(msg, sizeof(msg), AR_EINVAL, "output %zu (%s): no buffer %" PRIu32 " is registered on this connection",
                   j, tn, r->buffer);
    else if (ar_shm_range(b, r->offset, r->bytes, true, &at, why, sizeof(why)) != 0)
      rc = ar_errf(msg, sizeof(msg), AR_EINVAL, "output %zu (%s): %s", j, tn, why);
    else if (!sized_later && r->bytes < ar_interp_output(m->interp, (int32_t)j)->bytes)
      rc = ar_errf(msg, sizeof(msg), AR_ESHAPE, "output %zu (%s): the range of buffer %" PRIu32 " holds %" PRIu64
                   " bytes, the output needs %" PRIu64, j, tn, r->buffer, r->bytes,
                   ar_interp_output(m->interp, (int32_t)j)->bytes);
    if (rc) break;
    ar_shm_ref(b);
    job->shm[job->n_shm++] = b;
    job->out_dst[j] = at;
    job->out_cap[j] = r->bytes;
    /* An output range shares no byte with an earlier output's or any input's range: the kernels
     * would overwrite one result with another (or an input still being read) and answer OK. */
    for (size_t k = 0; rc == 0 && k < j; k++) {
      const Arenad__BufferRange *q = ir->outputs[k];
      if (q->buffer != 0 && ar_shm_overlap(b, r->offset, r->bytes, ar_conn_buffer(to->conn, q->buffer), q->offset,
                                           q->bytes))
        rc = ar_errf(msg, sizeof(msg), AR_EINVAL, "output %zu (%s): range [%" PRIu64 ", +%" PRIu64 ") of buffer %"
                     PRIu32 " overlaps output %zu (%s), range [%" PRIu64 ", +%" PRIu64 ") of buffer %" PRIu32
                     " (output ranges may not share bytes with each other or with an input's)", j, tn, r->offset,
                     r->bytes, r->buffer, k, ar_interp_output_name(m->interp, (int32_t)k), q->offset, q->bytes,
                     q->buffer);
    }
    for (size_t i = 0; rc == 0 && i < ir->n_inputs; i++) {
      const Arenad__BufferRange *q = ir->inputs[i]->shm;
      if (q != NULL && q->buffer != 0 &&
          ar_shm_overlap(b, r->offset, r->bytes, ar_conn_buffer(to->conn, q->buffer), q->offset, q->bytes))
        rc = ar_errf(msg, sizeof(msg), AR_EINVAL, "output %zu (%s): range [%" PRIu64 ", +%" PRIu64 ") of buffer %"
                     PRIu32 " overlaps input %zu (%s), range [%" PRIu64 ", +%" PRIu64 ") of buffer %" PRIu32
                     " (output ranges may not share bytes with each other or with an input's)", j, tn, r->offset,
                     r->bytes, r->buffer, i, ar_interp_input_name(m->interp, (int32_t)i), q->offset, q->bytes,
                     q->buffer);
    }
  }
  /* Output ranges the client has not populated: the daemon's writes would fault the pages in and
   * charge them to the daemon (its RSS, its memory cgroup), not to the buffer's owner. */
  for (size_t j = 0; rc == 0 && !resize_only && j < ir->n_outputs; j++) {
    const Arenad__BufferRange *r = ir->outputs[j];
    if (r->buffer == 0 || job->out_dst[j] == NULL) continue;
    uint64_t pages = 0, missing = ar_shm_unpopulated_pages(ar_conn_buffer(to->conn, r->buffer), r->offset, r->bytes,
                                                          &pages);
    if (missing)
      rc = ar_errf(msg, sizeof(msg), AR_EINVAL, "output %zu (%s): range [%" PRIu64 ", +%" PRIu64 ") of buffer %" PRIu32
                   " has %" PRIu64 " of its %" PRIu64 " pages not populated by the client: write or mmap "
                   "MAP_POPULATE the buffer before naming it for outputs (the daemon does not fault a client's "
                   "pages into its own memory)", j, ar_interp_output_name(m->interp, (int32_t)j), r->offset, r->bytes,
                   r->buffer, missing, pages);
  }
  if (rc != 0) {
    if (m && m->state == AR_MODEL_READY && rc == AR_ESHAPE) m->errors++;
    ar_decode_request_free(req, to->frame);
    ar__job_free_io(job);
    free(job);
    srv->ops.reply_error(srv, to, rc, msg);
    return;
  }
  /* Output bytes the reply carries: known now, unless the shapes can change (then the worker
   * sizes the buffer after it has applied this request's shapes). */
  uint64_t out_bytes = 0;
  for (int32_t j = 0; !sized_later && j < ar_interp_n_outputs(m->interp); j++)
    if (job->out_dst[j] == NULL) out_bytes += ar_interp_output(m->interp, j)->bytes;
  /* The block the reply is written from: the connection's previous one when it is large enough
   * (it comes back when that reply is written), so a steady client causes no new mapping. */
  size_t out_cap = 0;
  uint8_t *out = out_bytes <= SIZE_MAX ? ar_conn_block_get(to->conn, (size_t)out_bytes, &out_cap) : NULL;
  if (out == NULL) {
    ar__job_free_io(job);
    free(job);
    ar_decode_request_free(req, to->frame);
    return ar__answer_error(srv, to, AR_ENOMEM, "no memory for %" PRIu64 " output bytes", out_bytes);
  }
  /* Its session (stateful models): start / reset / end applied now, in acceptance order. */
  job->sess.entry = -1;
  if (!resize_only && (rc = ar_sessions_accept(srv, m, to, ir->session, &job->sess, msg, sizeof(msg))) != 0) {
    free(out);
    ar__job_free_io(job);
    free(job);
    ar_decode_request_free(req, to->frame);
    srv->ops.reply_error(srv, to, rc, msg);
    return;
  }
  job->kind = AR_JOB_INVOKE;
  job->resize_only = resize_only;
  job->may_restate = ar_models_peer_is_admin(srv, to);
  job->srv = srv;
  job->to = *to;
  if (!resize_only) ar_conn_reserve_reply(&job->to, invoke_reply_bound(m->interp, job->out_dst));
  job->model = m;
  job->req = req;
  job->out = out;
  job->out_bytes = out_cap;
  job->work.data = job;
  job->t_accept_us = ar_now_us();
  m->inflight++;
  srv->jobs_outstanding++;
  ar__group_push(m->group, job);
  ar__group_kick(srv, m->group);
}

/* ------------------------------------------------------------------------------------------ */
/* Group jobs: place and invoke (worker thread)                                                */

/* Worker, group lock held: give the interpreter this request's input shapes (and the values of
 * inputs that set shapes), and when they changed re-plan and place the new plan in the group's
 * region. A plan that does not fit leaves the model as it was (previous shapes restored, placed)
 * and sets job->grow_to: the loop thread grows the region and runs the job again (regrow). */
static int apply_shapes(ar_job_t *job) {
  ar_dmodel_t *m = job->model;
  ar_interp_t *in = m->interp;
  int32_t n = ar_interp_n_inputs(in);
  int32_t (*saved)[1 + AR_MAX_RANK] = m->saved_shapes;   /* n entries, allocated at load */
  for (int32_t i = 0; i < n; i++) {   /* every input's, before any changes (a failure restores all) */
    const ar_tview_t *v = ar_interp_input(in, i);
    saved[i][0] = v->rank;
    memcpy(&saved[i][1], v->dims, sizeof(int32_t) * AR_MAX_RANK);
  }
  int rc = 0;
  for (int32_t i = 0; i < n && rc == 0; i++) {
    const int64_t *shape = NULL;
    size_t rank = 0;
    int64_t stored[AR_MAX_RANK];
    if (job->restore) {
      /* The graph input's shape as the model file stores it. */
      const ar_subgraph_t *sg = &ar_interp_model(in)->subgraphs[0];
      const ar_tensor_t *t = &sg->tensors[sg->inputs[i]];
      if (ar_interp_input_resizable(in, i)) {
        for (int32_t d = 0; d < t->rank && d < AR_MAX_RANK; d++) stored[d] = t->dims[d];
        shape = stored, rank = (size_t)t->rank;
      }
    } else if (job->resize_only) {
      if ((uint32_t)i == job->req->resize_input->input) shape = job->req->resize_input->shape, rank = job->req->resize_input->n_shape;
    } else {
      const Arenad__Tensor *t = job->req->invoke->inputs[i];
      if (ar_interp_input_resizable(in, i)) shape = t->shape, rank = t->n_shape;
      if (ar_interp_input_sets_shape(in, i))
        rc = ar_interp_set_shape_input(in, i, t->data.data, t->data.len, job->msg, sizeof(job->msg));
    }
    if (shape && rc == 0) {
      int32_t dims[AR_MAX_RANK];
      for (size_t d = 0; d < rank && d < AR_MAX_RANK; d++) dims[d] = (int32_t)shape[d];
      rc = ar_interp_resize_input(in, i, (int32_t)rank, dims, job->msg, sizeof(job->msg));
    }
  }
  if (rc != 0 || !ar_interp_needs_prepare(in)) return rc;
  uint8_t *pers = m->has_persistent ? job->srv->pool.base + m->persistent_offset : NULL;
  const uint32_t gen = ar_interp_state_generation(in);
  rc = ar_interp_prepare(in, job->msg, sizeof(job->msg));
  if (rc == 0 && !job->may_restate && ar_interp_state_layout_pending(in))
    /* The state is one layout for every session of the model (and the default state): new shapes
     * that change it would reset or move every user's streams. */
    rc = ar_errf(job->msg, sizeof(job->msg), AR_EPERM, "model '%s': these input shapes change its state's layout "
                 "(%" PRIu64 " -> %" PRIu64 " state bytes), which every session of the model shares: only an admin "
                 "(admin_uids / admin_gids) may", m->name, m->state_bytes, ar_interp_state_bytes(in));
  uint64_t arena = ar_interp_arena_bytes(in), persistent = ar_interp_persistent_bytes(in);
  /* A larger persistent region first (the state grew with the batch): the loop allocates it and
   * runs the job again; the default state's bytes go along (the prepare copied them aside). */
  if (rc == 0 && persistent > m->persistent_region_bytes) job->grow_pers_to = persistent;
  else if (rc == 0 && arena > job->act_bytes) job->grow_to = arena;
  if (rc == 0 && job->grow_to == 0 && job->grow_pers_to == 0) {
    rc = ar_interp_place(in, job->act_base, job->act_bytes, pers, m->persistent_region_bytes, job->msg,
                         sizeof(job->msg));
    if (rc == 0) {
      job->replanned = true;
      job->new_arena = arena;
      job->new_persistent = persistent;
      if (ar_interp_state_generation(in) != gen)
        snprintf(job->state_note, sizeof(job->state_note), "%s", ar_interp_state_note(in));
      return 0;
    }
  }
  /* Back to the shapes the model had, placed where it was (a shape value stays new: the next
   * invoke re-plans for its own value anyway). */
  char m2[AR_MSG_BYTES];
  for (int32_t i = 0; i < n; i++) ar_interp_resize_input(in, i, saved[i][0], &saved[i][1], m2, sizeof(m2));
  if (ar_interp_prepare(in, m2, sizeof(m2)) == 0)
    ar_interp_place(in, job->act_base, job->act_bytes, pers, m->persistent_region_bytes, m2, sizeof(m2));
  return rc;
}

/* Worker, group lock held: a MOVE job re-places the members whose regions the compaction moved.
 * Each is placed from scratch at its new addresses; its old places are never read. */
static void move_work(ar_job_t *job) {
  uint8_t *base = job->srv->pool.base;
  for (int i = 0; i < job->n_moves; i++) {
    ar_dmodel_t *mv = job->moves[i];
    char msg[AR_MSG_BYTES / 2];
    int rc = ar_interp_place(mv->interp, job->act_base, job->act_bytes,
                             mv->has_persistent ? base + mv->persistent_offset : NULL, mv->persistent_region_bytes,
                             msg, sizeof(msg));
    if (rc != 0 && job->rc == 0) {
      job->rc = rc;
      snprintf(job->msg, sizeof(job->msg), "model '%.63s': re-placing after compaction: %.250s", mv->name, msg);
    }
  }
}

static void group_work(uv_work_t *w) {
  ar_job_t *job = w->data;
  if (job->kind == AR_JOB_MOVE) {
    if (job->rc != 0 || job->n_moves == 0) return;
    pthread_mutex_lock(&job->group->lock);
    move_work(job);
    pthread_mutex_unlock(&job->group->lock);
    return;
  }
  ar_dmodel_t *m = job->model;
  ar_group_t *g = m->group;
  if (job->rc != 0) return;
  pthread_mutex_lock(&g->lock);
  if (job->kind == AR_JOB_PLACE) {
    uint8_t *base = job->srv->pool.base;
    for (int i = 0; i < job->n_moves && job->rc == 0; i++) {
      ar_dmodel_t *mv = job->moves[i];
      job->rc = ar_interp_place(mv->interp, job->act_base, job->act_bytes,
                                mv->has_persistent ? base + mv->persistent_offset : NULL,
                                mv->persistent_region_bytes, job->msg, sizeof(job->msg));
    }
    if (job->rc == 0)
      job->rc = ar_interp_place(m->interp, job->act_base, job->act_bytes,
                                m->has_persistent ? base + m->persistent_offset : NULL, m->persistent_region_bytes,
                                job->msg, sizeof(job->msg));
  } else {
    ar_interp_t *in = m->interp;
    job->t_start_us = ar_now_us();
    uint8_t *base = job->srv->pool.base;
    for (int i = 0; job->regrow && i < job->n_moves && job->rc == 0; i++) {
      ar_dmodel_t *mv = job->moves[i];
      job->rc = ar_interp_place(mv->interp, job->act_base, job->act_bytes,
                                mv->has_persistent ? base + mv->persistent_offset : NULL,
                                mv->persistent_region_bytes, job->msg, sizeof(job->msg));
    }
    if (job->rc == 0) job->rc = apply_shapes(job);
    if (job->rc == 0 && !job->resize_only && !job->restated && ar_sessions_stale(&job->sess, in)) {
      /* The re-plan changed the state's layout: the loop carries the session slots into it, then
       * this job runs again. */
      job->restate = true;
    }
    if (job->rc != 0 || job->grow_to != 0 || job->grow_pers_to != 0 || job->restate || job->resize_only) {
      job->t_end_us = ar_now_us();
      pthread_mutex_unlock(&g->lock);
      return;
    }
    uint64_t need = 0;
    for (int32_t j = 0; j < ar_interp_n_outputs(in); j++) {
      const ar_tview_t *v = ar_interp_output(in, j);
      if (job->out_dst[j] == NULL) {
        need += v->bytes;
      } else if (v->bytes > job->out_cap[j]) {
        job->rc = ar_errf(job->msg, sizeof(job->msg), AR_ESHAPE, "output %d (%s): the range of buffer %" PRIu32
                          " holds %" PRIu64 " bytes, the output needs %" PRIu64, (int)j, ar_interp_output_name(in, j),
                          job->req->invoke->outputs[j]->buffer, job->out_cap[j], v->bytes);
        job->t_end_us = ar_now_us();
        pthread_mutex_unlock(&g->lock);
        return;
      }
    }
    if (need > job->out_bytes) {
      uint8_t *grown = realloc(job->out, need);
      if (grown == NULL) {
        job->rc = ar_errf(job->msg, sizeof(job->msg), AR_ENOMEM, "no memory for %" PRIu64 " output bytes", need);
        pthread_mutex_unlock(&g->lock);
        return;
      }
      job->out = grown;
      job->out_bytes = need;
    }
    /* The session's state slot: pointers rebound, no byte copied (a stateless model: one test). */
    char why[AR_MSG_BYTES / 2];
    if ((job->rc = ar_sessions_bind(job->srv, in, &job->sess, why, sizeof(why))) != 0) {
      snprintf(job->msg, sizeof(job->msg), "model '%s': %s", m->name, why);
      job->t_end_us = ar_now_us();
      pthread_mutex_unlock(&g->lock);
      return;
    }
    const Arenad__InvokeRequest *ir = job->req->invoke;
    /* The one copy of each input: from the request or the client's buffer into the arena (the
     * client may keep writing its buffer; the invoke only reads the arena's copy). */
    for (size_t i = 0; i < ir->n_inputs; i++)
      ar_copy_bytes(ar_interp_input(in, (int32_t)i)->data, job->in_src[i], job->in_len[i]);
    ar_alloc_count_begin();
    job->rc = ar_interp_invoke(in);
    job->heap_allocs = ar_alloc_count_end();
    if (job->rc == 0) {
      uint64_t off = 0;
      for (int32_t j = 0; j < ar_interp_n_outputs(in); j++) {
        const ar_tview_t *v = ar_interp_output(in, j);
        if (job->out_dst[j]) {
          ar_copy_bytes(job->out_dst[j], v->data, v->bytes);   /* inside its range: checked above */
          continue;
        }
        ar_copy_bytes(job->out + off, v->data, v->bytes);
        off += v->bytes;
      }
    } else {
      /* The interpreter's reason (e.g. a WHILE past max_while_iterations), else the code's. */
      const char *reason = ar_interp_last_error(in);
      snprintf(job->msg, sizeof(job->msg), "model '%s': invoke failed: %s", m->name,
               reason && reason[0] ? reason : ar_strerror(job->rc));
    }
    ar_sessions_unbind(in, &job->sess);   /* after the copy out: an output may view the state */
    job->t_end_us = ar_now_us();
  }
  pthread_mutex_unlock(&g->lock);
}

static void answer_invoke(ar_server_t *srv, ar_job_t *job) {
  ar_dmodel_t *m = job->model;
  ar_interp_t *in = m->interp;
  size_t n = (size_t)ar_interp_n_outputs(in);
  Arenad__Tensor **outs = ar__tensor_descs(in, true, &n);
  if (outs == NULL && n > 0) {
    srv->ops.reply_error(srv, &job->to, AR_ENOMEM, "no memory for the reply");
    return;
  }
  uint64_t off = 0;
  Arenad__BufferRange *ranges = job->req->invoke->n_outputs ? calloc(n + 1, sizeof(*ranges)) : NULL;
  if (job->req->invoke->n_outputs && ranges == NULL) {
    free(outs);
    srv->ops.reply_error(srv, &job->to, AR_ENOMEM, "no memory for the reply");
    return;
  }
  for (size_t j = 0; j < n; j++) {
    uint64_t bytes = ar_interp_output(in, (int32_t)j)->bytes;
    if (job->out_dst[j]) {
      const Arenad__BufferRange *r = job->req->invoke->outputs[j];
      arenad__buffer_range__init(&ranges[j]);
      ranges[j].buffer = r->buffer;
      ranges[j].offset = r->offset;
      ranges[j].bytes = bytes;
      outs[j]->shm = &ranges[j];
      continue;
    }
    outs[j]->data.data = job->out + off;
    outs[j]->data.len = (size_t)bytes;
    off += bytes;
  }
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__InvokeResponse body = ARENAD__INVOKE_RESPONSE__INIT;
  body.n_outputs = n;
  body.outputs = outs;
  body.invoke_us = job->t_end_us - job->t_start_us;
  body.queue_us = job->t_start_us - job->t_accept_us;
  body.state_reset = job->state_note;
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_INVOKE;
  resp.invoke = &body;
  /* The outputs' block goes with the reply: written from where the worker put them, not copied
   * again into the frame. */
  ar_reply_to_t to = job->to;
  to.keep = job->out;
  to.keep_bytes = job->out_bytes;
  job->out = NULL;
  srv->ops.reply(srv, &to, &resp);
  free(outs);
  free(ranges);
}

/* Loop thread, no job of m's group on a worker: take a re-plan's state figures. When the layout
 * changed, every session slot of the model is carried into it (ar_sessions_restate: pieces whose
 * bytes are unchanged keep their state, the others start again). */
static void state_changed(ar_server_t *srv, ar_dmodel_t *m) {
  const uint32_t gen = ar_interp_state_generation(m->interp);
  m->state_bytes = ar_interp_state_bytes(m->interp);
  if (gen == m->state_generation) return;
  snprintf(m->state_note, sizeof(m->state_note), "%s", ar_interp_state_note(m->interp));
  ar_log("model '%s': new input shapes changed its state's layout: %s", m->name,
         m->state_note[0] ? m->state_note : "no piece reset (offsets moved)");
  ar_sessions_restate(srv, m);
  m->state_generation = gen;
}

/* Loop thread: `job` first in its group's line again (its client is waiting already). */
static void requeue_first(ar_server_t *srv, ar_job_t *job) {
  ar_group_t *g = job->model->group;
  srv->jobs_outstanding++;
  job->next = g->head;
  g->head = job;
  if (g->tail == NULL) g->tail = job;
  ar__group_kick(srv, g);
}

/* The model's persistent region, grown for a job whose new shapes need job->grow_pers_to bytes
 * (its state grew with the batch): a new region now, the old one freed once the job has run again
 * and placed the model in the new one (the default state's bytes are carried by the interpreter
 * from the copy its prepare took). ENOSPC names the bytes. Returns true when re-queued. */
static bool grow_persistent(ar_server_t *srv, ar_job_t *job) {
  ar_dmodel_t *m = job->model;
  uint64_t need = ar_pool_round(job->grow_pers_to), off = 0;
  char msg[AR_MSG_BYTES];
  job->grow_pers_to = 0;
  if (need > srv->cfg.max_resize_activation_bytes && !ar_models_peer_is_admin(srv, &job->to)) {
    /* The same bound as an activation region's growth (the state grows with the batch). */
    job->rc = AR_EPERM;
    snprintf(job->msg, sizeof(job->msg), "model '%s': the new input shapes need a persistent region of %" PRIu64
             " bytes (now %" PRIu64 "), above max_resize_activation_bytes %" PRIu64 " for peers that are not admins",
             m->name, need, m->persistent_region_bytes, srv->cfg.max_resize_activation_bytes);
    return false;
  }
  if (job->n_free_after >= 2) {
    job->rc = AR_EINTERNAL;
    snprintf(job->msg, sizeof(job->msg), "model '%s': persistent region growth without a free slot", m->name);
    return false;
  }
  int rc = ar_pool_alloc(&srv->pool, need, AR_REGION_PERSISTENT, m->name, &off, msg, sizeof(msg));
  if (rc != 0) {
    job->rc = rc;
    snprintf(job->msg, sizeof(job->msg), "model '%s': the new input shapes need a persistent region of %" PRIu64
             " bytes (now %" PRIu64 "): %.300s", m->name, need, m->persistent_region_bytes, msg);
    return false;
  }
  if (m->has_persistent) job->free_after[job->n_free_after++] = m->persistent_offset;
  m->persistent_offset = off;
  m->persistent_region_bytes = need;
  m->has_persistent = true;
  job->regrow = true;   /* the old region is freed after the run (the regrow branch) */
  requeue_first(srv, job);
  return true;
}

/* The group's activation region, grown for a job whose new shapes need job->grow_to bytes: a new
 * region now (ENOSPC answered with the bytes needed when the pool has none), the job re-queued at
 * the head of the group to move every member there and run; the old region is freed after. Returns
 * true when the job was re-queued. */
static bool grow_region(ar_server_t *srv, ar_job_t *job) {
  ar_dmodel_t *m = job->model;
  ar_group_t *g = m->group;
  uint64_t need = ar_pool_round(job->grow_to), off = 0;
  char msg[AR_MSG_BYTES];
  if (need > srv->cfg.max_resize_activation_bytes && !ar_models_peer_is_admin(srv, &job->to)) {
    /* Pool bytes are shared by every model: a peer that is not an admin grows a region only so far. */
    job->rc = AR_EPERM;
    snprintf(job->msg, sizeof(job->msg), "model '%s': the new input shapes need an activation region of %" PRIu64
             " bytes (now %" PRIu64 "), above max_resize_activation_bytes %" PRIu64 " for peers that are not admins",
             m->name, need, g->act_bytes, srv->cfg.max_resize_activation_bytes);
    return false;
  }
  int rc = ar_pool_alloc(&srv->pool, need, AR_REGION_ACTIVATION, g->owner, &off, msg, sizeof(msg));
  if (rc == AR_ENOSPC && !job->after_compact && !srv->draining &&
      srv->pool.bytes - ar_pool_used_bytes(&srv->pool) >= need) {
    /* Enough bytes are free, only not in one place: compact, as a load does, then run the job
     * again (it re-plans, finds the region small and grows it from the one free block). The model
     * kept its previous shapes (apply_shapes), so the group serves its other jobs meanwhile. */
    ar_log("model '%s': the new input shapes need an activation region of %" PRIu64 " bytes, largest free block "
           "is %" PRIu64 " bytes of %" PRIu64 " free: compacting the pool first", m->name, need,
           ar_pool_largest_free_bytes(&srv->pool), srv->pool.bytes - ar_pool_used_bytes(&srv->pool));
    job->after_compact = true;
    job->grow_to = 0;
    srv->jobs_outstanding++;   /* still outstanding: compact_apply queues it on its group again */
    ar__compact_defer(srv, job);
    ar__compact_start(srv, NULL);
    ar__group_kick(srv, g);
    return true;
  }
  if (rc != 0) {
    job->rc = rc;
    if (rc == AR_ENOSPC)
      snprintf(job->msg, sizeof(job->msg), "model '%s': the new input shapes need an activation region of %" PRIu64
               " bytes (now %" PRIu64 "), largest free block is %" PRIu64 " bytes (%" PRIu64 " of %" PRIu64
               " bytes free); %s", m->name, need, g->act_bytes, ar_pool_largest_free_bytes(&srv->pool),
               srv->pool.bytes - ar_pool_used_bytes(&srv->pool), srv->pool.bytes,
               srv->pool.bytes - ar_pool_used_bytes(&srv->pool) < need
                   ? "smaller shapes, a larger pool (pool_bytes in arenad's config, or -p) or unloading a model "
                     "(arenactl unload NAME) makes room"
                   : "the free bytes are not in one block: arenactl compact moves them together");
    else
      snprintf(job->msg, sizeof(job->msg), "%s", msg);
    return false;
  }
  job->free_after[0] = g->act_offset;
  job->n_free_after = 1;
  g->act_offset = off;
  g->act_bytes = need;
  job->grow_to = 0;
  job->regrow = true;
  srv->jobs_outstanding++;
  job->next = g->head;   /* first in line: its client is waiting already */
  g->head = job;
  if (g->tail == NULL) g->tail = job;
  ar__group_kick(srv, g);
  return true;
}

/* After a re-plan: the group's region back to what its members need now (never more than the
 * largest current plan), so that shapes going down return the pool's bytes. Runs on the loop
 * thread between jobs of the group (none is on a worker). */
static void shrink_region(ar_server_t *srv, ar_group_t *g) {
  uint64_t need = 0;
  for (ar_dmodel_t *x = srv->models; x; x = x->next)
    if (x->group == g && ar_pool_round(x->arena_bytes) > need) need = ar_pool_round(x->arena_bytes);
  if (g->has_region && need > 0 && need < g->act_bytes && ar_pool_shrink(&srv->pool, g->act_offset, need) == 0)
    g->act_bytes = need;
}

static void answer_resized(ar_server_t *srv, const ar_reply_to_t *to, ar_dmodel_t *m, char *state_note) {
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__ResizeInputResponse body = ARENAD__RESIZE_INPUT_RESPONSE__INIT;
  Arenad__ModelInfo info;
  ar_models_info(srv, m, &info);
  body.model = &info;
  body.state_reset = state_note;
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_RESIZE_INPUT;
  resp.resize_input = &body;
  srv->ops.reply(srv, to, &resp);
  ar_models_info_clear(&info);
}

/* Loop thread: a MOVE job ended (its group was parked until now). */
static void move_after(ar_server_t *srv, ar_job_t *job) {
  ar_group_t *g = job->group;
  g->busy = false;
  g->move_queued = false;
  srv->jobs_outstanding--;
  if (job->rc != 0) {
    /* Cannot happen with the sizes unchanged; the model answers invokes with an error then. */
    ar_log("compaction: %s", job->msg);
    if (srv->compact_rc == 0 && job->move_counted) {
      srv->compact_rc = job->rc;
      snprintf(srv->compact_msg, sizeof(srv->compact_msg), "%s", job->msg);
    }
  }
  for (int i = 0; i < job->n_moves; i++) {
    ar_dmodel_t *mv = job->moves[i];
    if (job->rc == 0) mv->placed_act_offset = job->move_act_offset;
    mv->inflight--;
  }
  ar__group_kick(srv, g);
  /* Members unloaded while they moved go now (the job's reference keeps g alive meanwhile). */
  for (int i = 0; i < job->n_moves; i++) {
    ar_dmodel_t *mv = job->moves[i];
    for (ar_dmodel_t *x = srv->models; x; x = x->next)
      if (x == mv && x->inflight == 0 && x->state == AR_MODEL_UNLOADING) {
        ar__finalize_unload(srv, x);
        break;
      }
  }
  bool counted = job->move_counted;
  free(job->moves);
  free(job);
  ar__group_detach(srv, g);
  if (counted && --srv->compact_moving == 0) ar__compact_finish(srv);
  ar__compact_check(srv);
  srv->ops.job_done(srv);
}

/* The activation offset a group job placed its models at: the region snapshotted when the job was
 * kicked. The group may have grown (a new region) while the job ran; recording that job's own
 * offset makes the next job's snapshot move those models to the new region before the old one
 * is freed (recording g->act_offset instead left them writing into the freed region). */
static uint64_t job_act_offset(const ar_server_t *srv, const ar_job_t *job, const ar_group_t *g) {
  if (job->act_base == NULL) return g->act_offset;
  return (uint64_t)((const uint8_t *)job->act_base - srv->pool.base);
}

void ar__group_after(uv_work_t *w, int status) {
  ar_job_t *job = w->data;
  ar_server_t *srv = job->srv;
  if (job->on_loop) srv->invokes_inline++;
  if (job->on_worker) srv->jobs_on_workers--;
  job->on_loop = job->on_worker = false;
  ar_server_activity(srv);
  if (job->kind == AR_JOB_MOVE) {
    if (status != 0 && job->rc == 0) job->rc = AR_EINTERNAL;
    return move_after(srv, job);
  }
  ar_dmodel_t *m = job->model;
  ar_group_t *g = m->group;
  const uint64_t placed_at = job_act_offset(srv, job, g);
  const bool frees_regions = job->n_free_after > 0;   /* a grown region's old place */
  g->busy = false;
  srv->jobs_outstanding--;
  if (status != 0 && job->rc == 0) job->rc = AR_EINTERNAL;
  ar_dmodel_t *finalize = NULL;
  if (job->kind == AR_JOB_PLACE) {
    for (int i = 0; i < job->n_moves; i++) {
      ar_dmodel_t *mv = job->moves[i];
      if (job->rc == 0) mv->placed_act_offset = placed_at;
      if (--mv->inflight == 0 && mv->state == AR_MODEL_UNLOADING) {
        /* Rare: unloaded while being moved. Finalized below, after the group is kicked. */
        if (finalize == NULL) finalize = mv;
      }
    }
    free(job->moves);
    if (job->rc == 0) {
      m->placed = true;
      m->placed_act_offset = placed_at;
      for (int i = 0; i < job->n_free_after; i++) ar_pool_free(&srv->pool, job->free_after[i]);
      m->state = AR_MODEL_READY;
      ar_log("loaded model '%s' (%s): arena %" PRIu64 " B, persistent %" PRIu64 " B, group '%s' region %" PRIu64
             " B at %" PRIu64 "%s",
             m->name, m->realpath, m->arena_bytes, m->persistent_bytes, g->name, g->act_bytes, g->act_offset,
             m->shadow ? " (reload, not visible yet)" : "");
      ar__group_kick(srv, g);
      if (!m->shadow) srv->ops.status_changed(srv);
      /* Last: answering a reload's load may commit or roll back the reload, which can free m and g. */
      ar__answer_loaded(srv, &job->to, m);
    } else {
      /* The new member could not be placed: undo its load; the group keeps its members. */
      for (int i = 0; i < job->n_free_after; i++) ar_pool_free(&srv->pool, job->free_after[i]);
      ar__group_kick(srv, g);
      ar__registry_remove(srv, m);
      ar__model_destroy(srv, m);
      srv->ops.reply_error(srv, &job->to, job->rc, job->msg);
    }
  } else {
    if (job->regrow) {
      for (int i = 0; i < job->n_moves; i++) {
        ar_dmodel_t *mv = job->moves[i];
        if (job->rc == 0) mv->placed_act_offset = placed_at;
        if (--mv->inflight == 0 && mv->state == AR_MODEL_UNLOADING && mv != m && finalize == NULL) finalize = mv;
      }
      free(job->moves);
      job->moves = NULL;
      job->n_moves = 0;
      for (int i = 0; i < job->n_free_after; i++) ar_pool_free(&srv->pool, job->free_after[i]);
      job->n_free_after = 0;
      job->regrow = false;
    }
    if (job->restore) job->grow_to = 0;   /* the stored plan no longer fits: it keeps its shapes */
    if (job->rc == 0 && job->grow_to != 0 && grow_region(srv, job)) {
      if (finalize) ar__finalize_unload(srv, finalize);
      return;   /* re-queued at the head of its group */
    }
    if (job->rc == 0 && job->grow_pers_to != 0 && grow_persistent(srv, job)) {
      if (finalize) ar__finalize_unload(srv, finalize);
      return;
    }
    if (job->rc == 0 && job->restate) {
      state_changed(srv, m);
      job->restate = false;
      job->restated = true;
      requeue_first(srv, job);
      if (finalize) ar__finalize_unload(srv, finalize);
      return;
    }
    /* The inputs were copied into the arena: the bytes-path frame goes back to the connection for
     * its next frame (the job still holds the connection's reference here). */
    ar_conn_frame_release(&job->to, job->req);
    ar_sessions_done(srv, m, &job->sess);
    bool restore_now = false;
    if (job->replanned) {
      m->arena_bytes = job->new_arena;
      m->persistent_bytes = job->new_persistent;
      ar_planner_figures(ar_interp_planner(m->interp), &m->plan_fig);   /* the group runs nothing now */
      ar__io_snapshot(m);
      state_changed(srv, m);
      shrink_region(srv, g);
      /* Whose shapes the plan is for now: a peer that is not an admin holds them (and the region
       * they may have grown) only while it is connected. */
      bool peer = !job->restore && job->to.conn && !ar_models_peer_is_admin(srv, &job->to);
      m->shaped_by = peer ? (const void *)job->to.conn : NULL;
      restore_now = peer && ar_conn_is_gone(job->to.conn);   /* it left while this job ran */
    }
    uint64_t latency = job->t_end_us - job->t_accept_us;
    m->inflight--;
    if (job->rc == 0 && job->resize_only) {
      answer_resized(srv, &job->to, m, job->state_note);
    } else if (job->rc == 0) {
      m->invokes++;
      m->last_invoke_us = job->t_end_us - job->t_start_us;
      ar_latency_record(&m->latency, latency);
      m->heap_allocs_in_invoke += job->heap_allocs;
      answer_invoke(srv, job);
    } else {
      if (job->rc == AR_ECONN) m->dropped++;
      else m->errors++;
      srv->ops.reply_error(srv, &job->to, job->rc, job->msg);
    }
    ar__job_free_io(job);   /* buffers released or closed meanwhile are unmapped here */
    ar_decode_request_free(job->req, job->to.frame);
    free(job->out);
    ar__group_kick(srv, g);
    if (m->inflight == 0 && m->state == AR_MODEL_UNLOADING) finalize = m;
    if (restore_now) ar_models_conn_gone(srv, m->shaped_by);
  }
  free(job);
  if (finalize) ar__finalize_unload(srv, finalize);
  if (frees_regions) ar__compact_after_free(srv);
  else ar__compact_check(srv);   /* this group may have just parked */
  srv->ops.job_done(srv);
}
