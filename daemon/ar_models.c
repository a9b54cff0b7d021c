/* ar_models.c - the daemon's model registry: the models by name, the load thread, loads (prepare
 * on the load thread, regions from the pool, place as a group job), unloads (after the model's
 * in-flight invokes), model info for replies, and shutdown. Model files are opened and verified
 * in ar_model_file.c; invokes and the share groups' job queues are in ar_invoke.c, compaction in
 * ar_compact.c, stats in ar_stats.c, reload and --check-config in ar_reload.c. Everything here
 * runs on the loop thread except the load thread's prepare_work. The threading and memory rules
 * are drawn in ar_daemon.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
/* Names, hex, small helpers                                                                   */

static bool valid_name(const char *s, bool allow_empty) {
  size_t n = strlen(s);
  if (n == 0) return allow_empty;
  if (n >= AR_NAME_MAX) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '-'))
      return false;
  }
  return true;
}

void ar__sha_hex(const uint8_t sha[32], char out[65]) {
  static const char hx[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    out[2 * i] = hx[sha[i] >> 4];
    out[2 * i + 1] = hx[sha[i] & 15];
  }
  out[64] = '\0';
}

void ar__answer_error(ar_server_t *srv, const ar_reply_to_t *to, int err, const char *fmt, ...) {
  char msg[AR_MSG_BYTES];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  srv->ops.reply_error(srv, to, err, msg);
}

/* The model clients see under `name`: not a reload's invisible new instance (shadow), not an
 * instance a reload replaced (retired). */
ar_dmodel_t *ar_models_find(ar_server_t *srv, const char *name) {
  for (ar_dmodel_t *m = srv->models; m; m = m->next)
    if (!m->shadow && !m->retired && strcmp(m->name, name) == 0) return m;
  return NULL;
}

/* A reload's re-read of a run-time load whose instance a client unloaded (or is unloading) since the
 * reload began: the reload must not bring the model back. */
bool ar__rereads_gone(ar_server_t *srv, const ar_dmodel_t *m) {
  if (m->rereads == 0) return false;
  const ar_dmodel_t *running = ar_models_find(srv, m->name);
  return running == NULL || running->serial != m->rereads || running->state == AR_MODEL_UNLOADING;
}

/* Any instance holding `name` (a load must not reuse it while one is still there). */
static ar_dmodel_t *find_any(ar_server_t *srv, const char *name, bool include_shadows) {
  for (ar_dmodel_t *m = srv->models; m; m = m->next)
    if ((include_shadows || !m->shadow) && strcmp(m->name, name) == 0) return m;
  return NULL;
}

static void registry_add(ar_server_t *srv, ar_dmodel_t *m) {
  ar_dmodel_t **pp = &srv->models;
  while (*pp) pp = &(*pp)->next;
  *pp = m;
}

void ar__registry_remove(ar_server_t *srv, ar_dmodel_t *m) {
  for (ar_dmodel_t **pp = &srv->models; *pp; pp = &(*pp)->next)
    if (*pp == m) {
      *pp = m->next;
      return;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The load thread                                                                             */

static void prepare_work(ar_job_t *job);

/* Test hook: block until a test writes one byte into the FIFO at `path` (a test acts while a
 * reload's load waits here), or until the drain deadline aborts the loads; a missing or unreadable
 * gate does not block. The FIFO is opened without blocking and polled, so that an abort is seen. */
static void test_gate_wait(ar_server_t *srv, const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  while (!srv->load_abort) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    /* A FIFO with no writer yet polls as nothing to read (no POLLHUP before a first writer). */
    if (poll(&p, 1, 20) < 0 && errno != EINTR) break;
    if (p.revents & POLLIN) {
      char b;
      if (read(fd, &b, 1) == 1) break;
    }
    if (p.revents & (POLLHUP | POLLERR)) break;   /* the writer came and went without a byte */
  }
  close(fd);
}

void ar_models_abort_loads(ar_server_t *srv) { srv->load_abort = true; }

/* One thread prepares models, one at a time, at a lower CPU priority than the invoke workers: a
 * load (reading and hashing a file of up to max_model_bytes, verifying, planning) never occupies
 * a worker and yields the CPU to invokes when both want it. Nice 19 alone is not enough for
 * that since Linux 6.6's EEVDF scheduler: a waking invoke thread may wait for the load thread's
 * slice (~3 ms) to end; a SCHED_IDLE thread is preempted by any other waking thread at once. */
static void *load_thread_main(void *arg) {
  ar_server_t *srv = arg;
#ifdef __linux__
  setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);   /* best effort: nice only this thread */
#ifdef SCHED_IDLE
  const struct sched_param idle_param = {.sched_priority = 0};
  sched_setscheduler(0, SCHED_IDLE, &idle_param);   /* best effort; 0: this thread (Linux) */
#endif
#endif
  pthread_mutex_lock(&srv->load_lock);
  for (;;) {
    while (srv->load_head == NULL && !srv->load_quit) pthread_cond_wait(&srv->load_cond, &srv->load_lock);
    if (srv->load_head == NULL) break;   /* quit with nothing queued */
    ar_job_t *job = srv->load_head;
    srv->load_head = job->next;
    if (srv->load_head == NULL) srv->load_tail = NULL;
    pthread_mutex_unlock(&srv->load_lock);
    if (job->to.reload && srv->test_reload_gate) test_gate_wait(srv, srv->test_reload_gate);
    if (job->to.internal_config && srv->test_load_gate) test_gate_wait(srv, srv->test_load_gate);
    if (srv->load_abort)
      job->rc = ar_errf(job->msg, sizeof(job->msg), AR_ESTATE, "model '%s': load abandoned, the daemon is "
                        "shutting down (drain_timeout_ms passed)", job->model->name);
    else
      prepare_work(job);
    pthread_mutex_lock(&srv->load_lock);
    job->next = srv->load_done;
    srv->load_done = job;
    uv_async_send(&srv->load_async);
  }
  pthread_mutex_unlock(&srv->load_lock);
  return NULL;
}

/* Loop thread: answer the loads the thread finished, oldest first. */
static void on_load_done(uv_async_t *a) {
  ar_server_t *srv = a->data;
  pthread_mutex_lock(&srv->load_lock);
  ar_job_t *done = srv->load_done;
  srv->load_done = NULL;
  pthread_mutex_unlock(&srv->load_lock);
  ar_job_t *rev = NULL;
  while (done) {
    ar_job_t *next = done->next;
    done->next = rev;
    rev = done;
    done = next;
  }
  while (rev) {
    ar_job_t *next = rev->next;
    rev->next = NULL;
    ar__prepare_after(rev);
    rev = next;
  }
}

static void load_thread_push(ar_server_t *srv, ar_job_t *job) {
  job->next = NULL;
  pthread_mutex_lock(&srv->load_lock);
  if (srv->load_tail)
    srv->load_tail->next = job;
  else
    srv->load_head = job;
  srv->load_tail = job;
  pthread_cond_signal(&srv->load_cond);
  pthread_mutex_unlock(&srv->load_lock);
}

int ar_models_init(ar_server_t *srv) {
  const char *gate = getenv("ARENAD_TEST_RELOAD_GATE");
  srv->test_reload_gate = gate && *gate ? gate : NULL;
  const char *lgate = getenv("ARENAD_TEST_LOAD_GATE");
  srv->test_load_gate = lgate && *lgate ? lgate : NULL;
  if (uv_idle_init(srv->loop, &srv->inline_run) != 0) return AR_EINTERNAL;
  srv->inline_run.data = srv;
  srv->inline_init = true;
  pthread_mutex_init(&srv->cache_lock, NULL);
  pthread_mutex_init(&srv->load_lock, NULL);
  pthread_cond_init(&srv->load_cond, NULL);
  if (uv_async_init(srv->loop, &srv->load_async, on_load_done) != 0) return AR_EINTERNAL;
  srv->load_async.data = srv;
  if (pthread_create(&srv->load_thread, NULL, load_thread_main, srv) != 0) {
    uv_close((uv_handle_t *)&srv->load_async, NULL);
    return AR_EINTERNAL;
  }
  srv->load_started = true;
  return ar_stats_init(srv);
}

void ar_models_close_handles(ar_server_t *srv) {
  if (srv->inline_init && !uv_is_closing((uv_handle_t *)&srv->inline_run))
    uv_close((uv_handle_t *)&srv->inline_run, NULL);
  if (srv->load_started && !uv_is_closing((uv_handle_t *)&srv->load_async))
    uv_close((uv_handle_t *)&srv->load_async, NULL);
  ar_stats_close_handles(srv);
}

/* ------------------------------------------------------------------------------------------ */
/* Model info and load replies                                                                 */

/* One allocation holds the Tensor structs, their pointers, shapes and quantization messages. */
typedef struct { Arenad__Tensor t; Arenad__Quantization q; int64_t shape[AR_MAX_RANK]; } tensor_slot_t;

/* Describe a tensor: name, dtype, shape and its quantization (the scale and zero point arrays are
 * the model's own, which outlives the reply: the message points at them). */
static void fill_tensor_desc(tensor_slot_t *slot, const char *name, const ar_tview_t *v, const int32_t *shape) {
  Arenad__Tensor *t = &slot->t;
  arenad__tensor__init(t);
  t->name = (char *)(name ? name : "");
  t->dtype = (Arenad__DType)v->dtype;
  const int32_t rank = shape ? shape[0] : v->rank, *dims = shape ? shape + 1 : v->dims;
  for (int32_t d = 0; d < rank; d++) slot->shape[d] = dims[d];
  t->n_shape = (size_t)rank;
  t->shape = slot->shape;
  if (v->quant != NULL && v->quant->n > 0) {
    arenad__quantization__init(&slot->q);
    slot->q.n_scale = (size_t)v->quant->n;
    slot->q.scale = (float *)v->quant->scale;
    slot->q.n_zero_point = (size_t)v->quant->n;
    slot->q.zero_point = (int64_t *)v->quant->zero_point;
    slot->q.quantized_dimension = v->quant->quantized_dimension;
    t->quantization = &slot->q;
  }
}

void ar__io_snapshot(ar_dmodel_t *m) {
  if (m->io_shapes == NULL || m->interp == NULL) return;
  const int32_t n_in = ar_interp_n_inputs(m->interp), n_out = ar_interp_n_outputs(m->interp);
  for (int32_t i = 0; i < n_in + n_out; i++) {
    const ar_tview_t *v = i < n_in ? ar_interp_input(m->interp, i) : ar_interp_output(m->interp, i - n_in);
    m->io_shapes[i][0] = v->rank;
    memcpy(&m->io_shapes[i][1], v->dims, sizeof(int32_t) * AR_MAX_RANK);
  }
}

/* ar__tensor_descs with the shapes of `snap` (n_inputs + n_outputs entries, ar__io_snapshot), or
 * the interpreter's own when NULL. */
static Arenad__Tensor **tensor_descs(ar_interp_t *in, bool outputs, const int32_t (*snap)[1 + AR_MAX_RANK],
                                     size_t *n_out);

Arenad__Tensor **ar__tensor_descs(ar_interp_t *in, bool outputs, size_t *n_out) {
  return tensor_descs(in, outputs, NULL, n_out);
}

static Arenad__Tensor **tensor_descs(ar_interp_t *in, bool outputs, const int32_t (*snap)[1 + AR_MAX_RANK],
                                     size_t *n_out) {
  int32_t n = outputs ? ar_interp_n_outputs(in) : ar_interp_n_inputs(in);
  Arenad__Tensor **ptrs = calloc((size_t)n + 1, sizeof(*ptrs) + sizeof(tensor_slot_t));
  if (ptrs == NULL) {
    *n_out = 0;
    return NULL;
  }
  tensor_slot_t *slots = (tensor_slot_t *)(ptrs + n + 1);
  for (int32_t i = 0; i < n; i++) {
    const ar_tview_t *v = outputs ? ar_interp_output(in, i) : ar_interp_input(in, i);
    const char *name = outputs ? ar_interp_output_name(in, i) : ar_interp_input_name(in, i);
    const int32_t at = outputs ? ar_interp_n_inputs(in) + i : i;
    fill_tensor_desc(&slots[i], name, v, snap ? snap[at] : NULL);
    ptrs[i] = &slots[i].t;
  }
  *n_out = (size_t)n;
  return ptrs;
}

void ar_models_info(ar_server_t *srv, const ar_dmodel_t *m, Arenad__ModelInfo *info) {
  static __thread char hex[65];
  arenad__model_info__init(info);
  info->name = (char *)m->name;
  info->path = (char *)(m->realpath[0] ? m->realpath : m->path);
  if (m->cm) ar__sha_hex(m->cm->sha256, hex); else hex[0] = '\0';
  info->sha256 = hex;
  info->group = (char *)m->group_name;
  info->strategy = (char *)ar_strategy_name(m->strategy);
  info->arena_bytes = m->arena_bytes;
  info->persistent_bytes = m->persistent_bytes;
  info->weights_bytes = m->cm ? m->cm->model->constant_bytes : 0;
  if (m->group && m->group->has_region) {
    info->activation_offset = m->group->act_offset;
    info->activation_bytes = m->group->act_bytes;
  }
  info->persistent_offset = m->has_persistent ? m->persistent_offset : 0;
  info->invokes = m->invokes;
  if (m->interp && m->state != AR_MODEL_LOADING) {
    info->inputs = tensor_descs(m->interp, false, (const int32_t (*)[1 + AR_MAX_RANK])m->io_shapes, &info->n_inputs);
    info->outputs = tensor_descs(m->interp, true, (const int32_t (*)[1 + AR_MAX_RANK])m->io_shapes, &info->n_outputs);
  }
  (void)srv;
}

void ar_models_info_clear(Arenad__ModelInfo *info) {
  free(info->inputs);
  free(info->outputs);
  info->inputs = info->outputs = NULL;
  info->n_inputs = info->n_outputs = 0;
}

void ar__answer_loaded(ar_server_t *srv, const ar_reply_to_t *to, ar_dmodel_t *m) {
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__LoadModelResponse body = ARENAD__LOAD_MODEL_RESPONSE__INIT;
  Arenad__ModelInfo info;
  ar_models_info(srv, m, &info);
  body.model = &info;
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_LOAD_MODEL;
  resp.load_model = &body;
  srv->ops.reply(srv, to, &resp);
  ar_models_info_clear(&info);
}

/* Free a model that never became visible (failed load) or was finalized. */
void ar__model_destroy(ar_server_t *srv, ar_dmodel_t *m) {
  ar_sessions_free(srv, m);   /* its sessions' slot chunks go back to the pool */
  ar_interp_free(m->interp);
  m->interp = NULL;
  free(m->saved_shapes);
  free(m->io_shapes);
  m->saved_shapes = NULL;
  m->io_shapes = NULL;
  if (m->has_persistent) ar_pool_free(&srv->pool, m->persistent_offset);
  m->has_persistent = false;
  if (m->group) ar__group_detach(srv, m->group);
  m->group = NULL;
  ar__cache_release(srv, m->cm);
  m->cm = NULL;
  free(m->stats_text);
  free(m);
}

/* ------------------------------------------------------------------------------------------ */
/* Load                                                                                        */

/* Load thread. */
static void prepare_work(ar_job_t *job) {
  ar_dmodel_t *m = job->model;
  job->rc = ar__prepare_model(job->srv, m->path, job->max_model_bytes, job->n_dirs,
                          (const char (*)[AR_CONFIG_DIR_MAX])job->dirs, m->strategy, m->weights, 1, job->realpath, &m->cm, NULL,
                          &m->interp, job->msg, sizeof(job->msg));
  if (job->rc == 0) {
    const size_t n_in = (size_t)ar_interp_n_inputs(m->interp), n_out = (size_t)ar_interp_n_outputs(m->interp);
    m->saved_shapes = calloc(n_in + 1, sizeof *m->saved_shapes);
    m->io_shapes = calloc(n_in + n_out + 1, sizeof *m->io_shapes);
    if (!m->saved_shapes || !m->io_shapes)
      job->rc = ar_errf(job->msg, sizeof(job->msg), AR_ENOMEM, "model '%s': out of memory for its input shapes", m->name);
  }
}

/* Loop thread, after prepare_work. */
void ar__prepare_after(ar_job_t *job) {
  ar_server_t *srv = job->srv;
  ar_dmodel_t *m = job->model;
  ar_reply_to_t to = job->to;
  if (srv->compacting && !srv->compact_committed) {
    /* The pool's layout is about to change: take regions once it has. */
    ar__compact_defer(srv, job);
    return;
  }
  srv->jobs_outstanding--;
  free(job->dirs);
  job->dirs = NULL;
  if (job->rc != 0) {
    ar__registry_remove(srv, m);
    ar__model_destroy(srv, m);
    srv->ops.reply_error(srv, &to, job->rc, job->msg);
    free(job);
    srv->ops.job_done(srv);
    return;
  }
  snprintf(m->realpath, sizeof(m->realpath), "%s", job->realpath);
  if (m->only_if_changed) {
    /* A reload re-read the file of an unchanged entry: keep the running instance when the bytes
     * are the same. */
    ar_dmodel_t *running = ar_models_find(srv, m->name);
    if ((running && running->state == AR_MODEL_READY && running->cm == m->cm) || ar__rereads_gone(srv, m)) {
      if (ar__rereads_gone(srv, m))
        ar_log("reload: model '%s' was unloaded during the reload: its re-read is dropped", m->name);
      else
        srv->reload_unchanged++;
      ar__registry_remove(srv, m);
      ar__model_destroy(srv, m);
      free(job);
      Arenad__Response resp = ARENAD__RESPONSE__INIT;
      Arenad__Status st = ARENAD__STATUS__INIT;
      resp.status = &st;
      srv->ops.reply(srv, &to, &resp);   /* the reload's bookkeeping: one load answered, OK */
      srv->ops.job_done(srv);
      return;
    }
  }
  m->arena_bytes = ar_interp_arena_bytes(m->interp);
  m->persistent_bytes = ar_interp_persistent_bytes(m->interp);
  ar_planner_figures(ar_interp_planner(m->interp), &m->plan_fig);
  ar__io_snapshot(m);
  ar_interp_weight_figures(m->interp, &m->wfig);
  m->state_bytes = ar_interp_state_bytes(m->interp);
  m->state_generation = ar_interp_state_generation(m->interp);

  /* Regions: everything this load needs is allocated now, or nothing is. */
  char msg[AR_MSG_BYTES] = "";
  ar_group_t *g = ar__group_attach(srv, m);
  if (g == NULL) {
    ar__registry_remove(srv, m);
    ar__model_destroy(srv, m);
    srv->ops.reply_error(srv, &to, AR_ENOMEM, "no memory for the share group");
    free(job);
    return;
  }
  m->group = g;
  uint64_t need_pers = m->persistent_bytes ? ar_pool_round(m->persistent_bytes) : 0;
  uint64_t need_act = ar_pool_round(m->arena_bytes);
  bool new_region = !g->has_region || g->act_bytes < need_act;
  int rc = 0;
  if (need_pers) {
    rc = ar_pool_alloc(&srv->pool, need_pers, AR_REGION_PERSISTENT, m->name, &m->persistent_offset, msg,
                       sizeof(msg));
    if (rc == 0) {
      m->has_persistent = true;
      m->persistent_region_bytes = need_pers;
    }
  }
  uint64_t act_offset = 0;
  if (rc == 0 && new_region)
    rc = ar_pool_alloc(&srv->pool, need_act, AR_REGION_ACTIVATION, g->owner, &act_offset, msg, sizeof(msg));
  uint64_t total = need_pers + (new_region ? need_act : 0);
  if (rc == AR_ENOSPC && !job->after_compact && srv->pool.bytes - ar_pool_used_bytes(&srv->pool) +
                                                       (m->has_persistent ? need_pers : 0) >= total) {
    /* Enough bytes are free, only not in one place: compact, then take the regions again. */
    if (m->has_persistent) ar_pool_free(&srv->pool, m->persistent_offset);
    m->has_persistent = false;
    m->group = NULL;
    ar__group_detach(srv, g);
    job->after_compact = true;
    srv->jobs_outstanding++;   /* still outstanding: it comes back through ar__prepare_after */
    ar_log("load of '%s' needs %" PRIu64 " bytes of pool, largest free block is %" PRIu64 " bytes of %" PRIu64
           " free: compacting the pool first", m->name, total, ar_pool_largest_free_bytes(&srv->pool),
           srv->pool.bytes - ar_pool_used_bytes(&srv->pool));
    ar__compact_defer(srv, job);
    ar__compact_start(srv, NULL);
    return;
  }
  if (rc != 0) {
    if (m->has_persistent) ar_pool_free(&srv->pool, m->persistent_offset);
    m->has_persistent = false;
    ar__registry_remove(srv, m);
    char name[AR_NAME_MAX];
    snprintf(name, sizeof(name), "%s", m->name);
    ar__model_destroy(srv, m);
    if (rc == AR_ENOSPC) {
      /* Say what makes room: too few bytes free -> a larger pool or fewer models; enough bytes,
       * only not in one block (a compaction already ran, or another load took them meanwhile) ->
       * a compaction. */
      uint64_t free_bytes = srv->pool.bytes - ar_pool_used_bytes(&srv->pool);
      char remedy[200];
      if (free_bytes < total)
        snprintf(remedy, sizeof(remedy), "it lacks %" PRIu64 " bytes: give arenad a larger pool (pool_bytes in its "
                 "config, or -p) or unload a model (arenactl unload NAME)", total - free_bytes);
      else
        snprintf(remedy, sizeof(remedy), "the free bytes are not in one block: arenactl compact moves them together");
      ar__answer_error(srv, &to, rc,
                   "load of '%s' needs %" PRIu64 " bytes of pool (persistent %" PRIu64 " + activation %" PRIu64
                   "), largest free block is %" PRIu64 " bytes (%" PRIu64 " of %" PRIu64 " bytes free); %s",
                   name, total, need_pers, new_region ? need_act : 0, ar_pool_largest_free_bytes(&srv->pool),
                   free_bytes, srv->pool.bytes, remedy);
    } else
      srv->ops.reply_error(srv, &to, rc, msg);
    free(job);
    return;
  }
  if (srv->cfg.memory_limit_bytes) {
    ar_memory_region_t regs[2];
    int n_regs = 0;
    if (m->has_persistent) regs[n_regs++] = (ar_memory_region_t){m->persistent_offset, need_pers, AR_REGION_PERSISTENT};
    if (new_region) regs[n_regs++] = (ar_memory_region_t){act_offset, need_act, AR_REGION_ACTIVATION};
    rc = ar_memory_admit_load(srv, m->name, regs, n_regs, msg, sizeof(msg));
    if (rc != 0) {
      if (m->has_persistent) ar_pool_free(&srv->pool, m->persistent_offset);
      m->has_persistent = false;
      if (new_region) ar_pool_free(&srv->pool, act_offset);
      ar__registry_remove(srv, m);
      ar__model_destroy(srv, m);
      srv->ops.reply_error(srv, &to, rc, msg);
      free(job);
      srv->ops.job_done(srv);
      return;
    }
  }
  if (new_region) {
    if (g->has_region) {
      /* Growth: the old region stays until the PLACE job has moved every member out of it. */
      job->free_after[job->n_free_after++] = g->act_offset;
    }
    g->has_region = true;
    g->act_offset = act_offset;
    g->act_bytes = need_act;
  }
  job->kind = AR_JOB_PLACE;
  srv->jobs_outstanding++;
  ar__group_push(g, job);
  ar__group_kick(srv, g);
}

void ar_models_load(ar_server_t *srv, const ar_reply_to_t *to, const char *name, const char *path,
                    const char *group, const char *strategy, const char *weights) {
  ar__load_model(srv, to, name, path, group, strategy, weights, false, false, false, 0);
}

bool ar_models_peer_is_admin(const ar_server_t *srv, const ar_reply_to_t *to) {
  if (to->conn == NULL) return true;   /* internal: configuration, SIGHUP */
  if (!to->peer.known) return false;
  for (uint32_t i = 0; i < srv->cfg.n_admin_uids; i++)
    if (srv->cfg.admin_uids[i] == to->peer.uid) return true;
  for (uint32_t i = 0; i < srv->cfg.n_admin_gids; i++) {
    if (srv->cfg.admin_gids[i] == to->peer.gid) return true;
    /* A member of the group by its supplementary groups (`adduser USER arenad`). */
    for (uint32_t k = 0; k < to->peer.n_groups; k++)
      if (srv->cfg.admin_gids[i] == to->peer.groups[k]) return true;
  }
  return false;
}

/* The directories a client's load is confined to: the configuration's model_dirs and --model-dir.
 * A malloc'd copy for the load thread (srv->cfg changes on reload), or NULL on no memory. */
static char (*model_dirs_copy(ar_server_t *srv, uint32_t *n_out))[AR_CONFIG_DIR_MAX] {
  uint32_t n = srv->cfg.n_model_dirs + srv->n_cmdline_dirs;
  char (*d)[AR_CONFIG_DIR_MAX] = calloc(n ? n : 1, AR_CONFIG_DIR_MAX);
  if (d == NULL) return NULL;
  for (uint32_t i = 0; i < srv->cfg.n_model_dirs; i++) snprintf(d[i], AR_CONFIG_DIR_MAX, "%s", srv->cfg.model_dirs[i]);
  for (uint32_t i = 0; i < srv->n_cmdline_dirs; i++)
    snprintf(d[srv->cfg.n_model_dirs + i], AR_CONFIG_DIR_MAX, "%s", srv->cmdline_dirs[i]);
  *n_out = n;
  return d;
}

/* `shadow`: a reload's load, invisible until the reload commits; it may coexist with the running
 * instance of the same name. `from_config`: the configuration names it (its path is trusted as the
 * configuration is; a client's path is confined to model_dirs). `only_if_changed`: a reload's
 * re-read, dropped when the file's sha256 is the one the running instance serves. `rereads`: the
 * serial of the run-time instance a reload re-reads (0 = none); the re-read never outlives it. */
void ar__load_model(ar_server_t *srv, const ar_reply_to_t *to, const char *name, const char *path,
                       const char *group, const char *strategy, const char *weights, bool shadow,
                       bool from_config, bool only_if_changed, uint64_t rereads) {
  /* Every failed load is an audit line (ar_server.c), a configuration's at start and reload too. */
  ar_reply_to_t audited = *to;
  audited.request = "load_model";
  audited.audit = true;
  snprintf(audited.model, sizeof(audited.model), "%s", name);
  to = &audited;
  ar_strategy_t strat = AR_STRATEGY_BEST;
  ar_interp_options_t dflt;
  ar_interp_options_default(&dflt);
  ar_weights_t wmode = dflt.weights;
  if (srv->draining) return ar__answer_error(srv, to, AR_ESTATE, "daemon is shutting down");
  if (!valid_name(name, false))
    return ar__answer_error(srv, to, AR_EINVAL, "model name '%.80s': must be 1-%d bytes of [A-Za-z0-9_.-]", name,
                        AR_NAME_MAX - 1);
  if (!valid_name(group, true))
    return ar__answer_error(srv, to, AR_EINVAL, "group '%.80s': must be at most %d bytes of [A-Za-z0-9_.-]", group,
                        AR_NAME_MAX - 1);
  if (path[0] == '\0') return ar__answer_error(srv, to, AR_EINVAL, "model '%s': empty path", name);
  if (strlen(path) >= sizeof(((ar_dmodel_t *)0)->path))
    return ar__answer_error(srv, to, AR_EINVAL, "model '%s': path longer than %zu bytes", name,
                        sizeof(((ar_dmodel_t *)0)->path) - 1);
  size_t path_len = strlen(path), utf8_ok = ar_utf8_valid_prefix(path, path_len);
  if (utf8_ok != path_len) {
    char esc[1024];
    return ar__answer_error(srv, to, AR_EINVAL,
                        "model '%s': path '%s' is not UTF-8 (byte %zu; model paths are reported in protobuf "
                        "strings): rename the file or link to it under a UTF-8 name",
                        name, ar_escape_text(path, esc, sizeof(esc)), utf8_ok);
  }
  if (strategy[0] && ar_strategy_parse(strategy, &strat) != 0)
    return ar__answer_error(srv, to, AR_EINVAL,
                        "model '%s': unknown planner strategy '%.40s' (linear, first-fit, greedy-by-size, best)",
                        name, strategy);
  if (weights == NULL || weights[0] == '\0') weights = srv->cfg.weights;
  if (weights[0] && ar_weights_parse(weights, &wmode) != 0)
    return ar__answer_error(srv, to, AR_EINVAL, "model '%s': unknown weights mode '%.40s' (stored, fp32)", name,
                        weights);
  ar_dmodel_t *old = shadow ? NULL : find_any(srv, name, true);
  if (old)
    return ar__answer_error(srv, to, AR_EEXIST, "model '%s' is %s", name,
                        old->shadow                        ? "being loaded by a configuration reload"
                        : old->state == AR_MODEL_LOADING   ? "already loading"
                        : old->state == AR_MODEL_UNLOADING ? "being unloaded"
                                                           : "already loaded");
  ar_dmodel_t *m = calloc(1, sizeof(*m));
  ar_job_t *job = calloc(1, sizeof(*job));
  if (m == NULL || job == NULL) {
    free(m);
    free(job);
    return ar__answer_error(srv, to, AR_ENOMEM, "no memory for model '%s'", name);
  }
  snprintf(m->name, sizeof(m->name), "%s", name);
  snprintf(m->path, sizeof(m->path), "%s", path);
  snprintf(m->group_name, sizeof(m->group_name), "%s", group);
  m->strategy = strat;
  m->weights = wmode;
  m->state = AR_MODEL_LOADING;
  m->shadow = shadow;
  m->from_config = from_config;
  m->only_if_changed = only_if_changed;
  m->serial = ++srv->model_serial;
  m->rereads = rereads;
  job->kind = AR_JOB_PREPARE;
  job->srv = srv;
  job->to = *to;
  job->model = m;
  job->work.data = job;   /* the same job becomes the PLACE group job */
  job->max_model_bytes = srv->cfg.max_model_bytes;
  if (!from_config && (job->dirs = model_dirs_copy(srv, &job->n_dirs)) == NULL) {
    free(m);
    free(job);
    return ar__answer_error(srv, to, AR_ENOMEM, "no memory for model '%s'", name);
  }
  if (!from_config && job->n_dirs == 0) {
    free(job->dirs);
    free(m);
    free(job);
    return ar__answer_error(srv, to, AR_EPERM, "model file '%s': the daemon has no model_dirs", path);
  }
  registry_add(srv, m);
  srv->jobs_outstanding++;
  load_thread_push(srv, job);
}

/* ------------------------------------------------------------------------------------------ */
/* Unload                                                                                      */

void ar__finalize_unload(ar_server_t *srv, ar_dmodel_t *m) {
  ar__registry_remove(srv, m);
  ar_waiter_t *w = m->unload_waiters;
  m->unload_waiters = NULL;
  ar_log("unloaded model '%s' (%" PRIu64 " invokes)", m->name, m->invokes);
  ar__model_destroy(srv, m);
  srv->ops.status_changed(srv);
  while (w) {
    ar_waiter_t *next = w->next;
    Arenad__Response resp = ARENAD__RESPONSE__INIT;
    Arenad__Status st = ARENAD__STATUS__INIT;
    Arenad__UnloadModelResponse body = ARENAD__UNLOAD_MODEL_RESPONSE__INIT;
    resp.status = &st;
    resp.body_case = ARENAD__RESPONSE__BODY_UNLOAD_MODEL;
    resp.unload_model = &body;
    srv->ops.reply(srv, &w->to, &resp);
    free(w);
    w = next;
  }
  ar__compact_after_free(srv);
}

/* Unload without a waiter (reload): new invokes no longer find it; accepted ones finish first. */
void ar__retire(ar_server_t *srv, ar_dmodel_t *m) {
  m->retired = true;
  if (m->state == AR_MODEL_UNLOADING) return;   /* its unload is already under way */
  m->state = AR_MODEL_UNLOADING;
  if (m->inflight == 0) ar__finalize_unload(srv, m);
}

void ar_models_unload(ar_server_t *srv, const ar_reply_to_t *to, const char *name) {
  ar_dmodel_t *m = ar_models_find(srv, name);
  if (m == NULL) return ar__answer_error(srv, to, AR_ENOENT, "no model named '%.80s'", name);
  if (m->state == AR_MODEL_LOADING)
    return ar__answer_error(srv, to, AR_ESTATE, "model '%s' is still loading; unload it when the load is answered",
                        name);
  ar_waiter_t *w = calloc(1, sizeof(*w));
  if (w == NULL) return ar__answer_error(srv, to, AR_ENOMEM, "no memory");
  w->to = *to;
  w->next = m->unload_waiters;
  m->unload_waiters = w;
  m->state = AR_MODEL_UNLOADING;
  if (m->inflight == 0) ar__finalize_unload(srv, m);
}

void ar_models_shutdown(ar_server_t *srv) {
  ar_stats_shutdown(srv);
  if (srv->load_started) {
    pthread_mutex_lock(&srv->load_lock);
    srv->load_quit = true;
    pthread_cond_signal(&srv->load_cond);
    pthread_mutex_unlock(&srv->load_lock);
    pthread_join(srv->load_thread, NULL);
    srv->load_started = false;
  }
  /* A compaction cannot be in progress once the loop has stopped (its jobs count as outstanding);
   * free what an aborted start may have left. */
  for (ar_waiter_t *lists[2] = {srv->compact_waiters, srv->compact_next_waiters}, **l = lists; l < lists + 2; l++)
    for (ar_waiter_t *w = *l, *n; w; w = n) {
      n = w->next;
      free(w);
    }
  srv->compact_waiters = srv->compact_next_waiters = NULL;
  for (ar_job_t *j = srv->compact_deferred, *n; j; j = n) {
    n = j->next;
    if (j->kind == AR_JOB_INVOKE) {
      ar__job_free_io(j);
      ar_decode_request_free(j->req, j->to.frame);
      free(j->out);
    }
    free(j->dirs);
    free(j);
  }
  srv->compact_deferred = srv->compact_deferred_tail = NULL;
  while (srv->models) {
    ar_dmodel_t *m = srv->models;
    srv->models = m->next;
    for (ar_waiter_t *w = m->unload_waiters, *n; w; w = n) {
      n = w->next;
      free(w);
    }
    ar__model_destroy(srv, m);
  }
  pthread_mutex_destroy(&srv->cache_lock);
}
