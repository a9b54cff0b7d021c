/* ar_models.c - the daemon's model registry: load (prepare on a worker, regions from the pool,
 * place as a group job), invoke (validated once here, run as a group job), unload (after the
 * model's in-flight invokes), share groups, the refcounted model-file cache, stats JSON, reload
 * and --check-config. Everything here runs on the loop thread except the *_work functions.
 * The threading and memory rules are drawn in ar_daemon.h.
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

static void sha_hex(const uint8_t sha[32], char out[65]) {
  static const char hx[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    out[2 * i] = hx[sha[i] >> 4];
    out[2 * i + 1] = hx[sha[i] & 15];
  }
  out[64] = '\0';
}

static void answer_error(ar_server_t *srv, const ar_reply_to_t *to, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void answer_error(ar_server_t *srv, const ar_reply_to_t *to, int err, const char *fmt, ...) {
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
static bool rereads_gone(ar_server_t *srv, const ar_dmodel_t *m) {
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

static void registry_remove(ar_server_t *srv, ar_dmodel_t *m) {
  for (ar_dmodel_t **pp = &srv->models; *pp; pp = &(*pp)->next)
    if (*pp == m) {
      *pp = m->next;
      return;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* The load thread                                                                             */

static void prepare_work(ar_job_t *job);
static void prepare_after(ar_job_t *job);

/* Test hook: block until a test writes one byte into the FIFO at `path` (a test acts while a
 * reload's load waits here); a missing or unreadable gate does not block. */
static void test_gate_wait(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char b;
  while (read(fd, &b, 1) < 0 && errno == EINTR) {}
  close(fd);
}

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
    if (job->to.reload && srv->test_reload_gate) test_gate_wait(srv->test_reload_gate);
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
    prepare_after(rev);
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

static void on_inline_run(uv_idle_t *h);

int ar_models_init(ar_server_t *srv) {
  const char *gate = getenv("ARENAD_TEST_RELOAD_GATE");
  srv->test_reload_gate = gate && *gate ? gate : NULL;
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
  return 0;
}

void ar_models_close_handles(ar_server_t *srv) {
  if (srv->inline_init && !uv_is_closing((uv_handle_t *)&srv->inline_run))
    uv_close((uv_handle_t *)&srv->inline_run, NULL);
  if (srv->load_started && !uv_is_closing((uv_handle_t *)&srv->load_async))
    uv_close((uv_handle_t *)&srv->load_async, NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* Verified models, shared by sha256                                                            */

/* Load thread: put a freshly loaded model in the cache, or drop it for an entry with the same
 * sha256 (same bytes: the copies are interchangeable, whatever path they came from). */
static ar_cached_model_t *cache_insert(ar_server_t *srv, ar_model_t *model) {
  ar_cached_model_t *hit = NULL;
  pthread_mutex_lock(&srv->cache_lock);
  for (ar_cached_model_t *c = srv->cache; c; c = c->next)
    if (memcmp(c->sha256, model->sha256, 32) == 0) {
      hit = c;
      hit->refs++;
      break;
    }
  if (hit == NULL && (hit = calloc(1, sizeof(*hit))) != NULL) {
    memcpy(hit->sha256, model->sha256, 32);
    hit->model = model;
    hit->refs = 1;
    hit->next = srv->cache;
    srv->cache = hit;
    model = NULL;
  }
  pthread_mutex_unlock(&srv->cache_lock);
  ar_model_free(model);   /* the duplicate copy, if those bytes were already cached */
  return hit;
}

/* Models sharing `cm` (read under the lock: the load thread changes it). */
static int cache_refs(ar_server_t *srv, ar_cached_model_t *cm) {
  pthread_mutex_lock(&srv->cache_lock);
  int r = cm->refs;
  pthread_mutex_unlock(&srv->cache_lock);
  return r;
}

/* Is `rp` (a resolved path) `dir` itself or below it? Both are realpath() results. */
static bool path_inside(const char *rp, const char *dir) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/') return true;
  return strncmp(rp, dir, n) == 0 && (rp[n] == '/' || rp[n] == '\0');
}

static bool inside_dirs(const char *rp, uint32_t n_dirs, const char (*dirs)[AR_CONFIG_DIR_MAX]) {
  for (uint32_t i = 0; i < n_dirs; i++) {
    char d[PATH_MAX];
    if (realpath(dirs[i], d) != NULL && path_inside(rp, d)) return true;
  }
  return false;
}

/* The EPERM of a path outside model_dirs. A model_dirs entry that cannot be resolved because it is
 * a symlink loop is named (the entries are the administrator's, not secrets): otherwise the admin
 * would only see that the path is "not inside" a directory that looks right. */
static int outside_dirs(const char *path, uint32_t n_dirs, const char (*dirs)[AR_CONFIG_DIR_MAX], char *msg,
                        size_t msg_bytes) {
  for (uint32_t i = 0; i < n_dirs; i++) {
    char d[PATH_MAX];
    if (realpath(dirs[i], d) == NULL && errno == ELOOP)
      return ar_errf(msg, msg_bytes, AR_EPERM, "model file '%s': not inside the daemon's model_dirs (model_dirs "
                     "entry '%s' is a symlink loop, ELOOP)", path, dirs[i]);
  }
  return ar_errf(msg, msg_bytes, AR_EPERM, "model file '%s': not inside the daemon's model_dirs", path);
}

/* `path` (whose realpath failed with ELOOP) and the symlinks it leads through, followed one link at
 * a time: true when every link met lies in a directory inside `dirs` and the chain does not end
 * within 41 links (the kernel's limit is 40), i.e. the loop is in model_dirs and the client may be
 * told so. A chain that leaves model_dirs is not followed (where a link outside points is not for
 * the client to learn). `depth` bounds the recursion into a looping directory component. */
static bool loop_inside_dirs(const char *path, uint32_t n_dirs, const char (*dirs)[AR_CONFIG_DIR_MAX], int depth) {
  char cur[PATH_MAX];
  snprintf(cur, sizeof(cur), "%s", path);
  for (int hop = 0; hop < 41; hop++) {
    char parent[PATH_MAX], prp[PATH_MAX], canon[2 * PATH_MAX + 2], link[PATH_MAX];
    const char *base = ar_path_base(cur);
    if (ar_path_dir(cur, parent, sizeof(parent)) != 0) return false;   /* cannot: cur is shorter */
    if (realpath(parent, prp) == NULL)
      return errno == ELOOP && depth < 4 && loop_inside_dirs(parent, n_dirs, dirs, depth + 1);
    if (!inside_dirs(prp, n_dirs, dirs)) return false;
    snprintf(canon, sizeof(canon), "%s/%s", strcmp(prp, "/") == 0 ? "" : prp, base);
    ssize_t k = readlink(canon, link, sizeof(link) - 1);
    if (k <= 0) return false;   /* not a symlink: whatever loops is elsewhere */
    link[k] = '\0';
    if (link[0] == '/') snprintf(cur, sizeof(cur), "%s", link);
    else if ((size_t)snprintf(cur, sizeof(cur), "%s/%s", strcmp(prp, "/") == 0 ? "" : prp, link) >= sizeof(cur))
      return false;
  }
  return true;
}

#define AR_ELOOP_TEXT "symlink loop (ELOOP: too many levels of symbolic links)"

/* Open an absolute path, or a configured model's path as it is (see open_model_file). */
static int open_model_path(const char *path, uint32_t n_dirs, const char (*dirs)[AR_CONFIG_DIR_MAX],
                           char rp[PATH_MAX], int *fd_out, char *msg, size_t msg_bytes) {
  *fd_out = -1;
  if (realpath(path, rp) == NULL) {
    int e = errno;
    if (n_dirs > 0) {
      /* A loop among symlinks inside model_dirs is said to be one (the admin put it there). */
      if (e == ELOOP && loop_inside_dirs(path, n_dirs, dirs, 0))
        return ar_errf(msg, msg_bytes, AR_EIO, "model file '%s': " AR_ELOOP_TEXT, path);
      /* Missing file: ENOENT only when its directory is inside model_dirs. */
      char parent[PATH_MAX], prp[PATH_MAX];
      struct stat lst;
      /* A dangling symlink: where it points is not for the client to learn. */
      bool dangling = lstat(path, &lst) == 0;
      if (dangling || ar_path_dir(path, parent, sizeof(parent)) != 0 || realpath(parent, prp) == NULL ||
          !inside_dirs(prp, n_dirs, dirs))
        return outside_dirs(path, n_dirs, dirs, msg, msg_bytes);
    }
    return ar_errf(msg, msg_bytes, e == ENOENT ? AR_ENOENT : AR_EIO, "model file '%s': %s", path,
                   e == ENOENT ? "no such file" : e == ELOOP ? AR_ELOOP_TEXT : "cannot be resolved");
  }
  if (n_dirs > 0 && !inside_dirs(rp, n_dirs, dirs)) return outside_dirs(path, n_dirs, dirs, msg, msg_bytes);
  /* O_NONBLOCK: a FIFO must not block the load thread waiting for a writer (S_ISREG rejects it).
   * O_NOFOLLOW: the resolved path has no symlink left; one swapped in since is refused. */
  int fd = open(rp, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
  if (fd < 0) {
    int e = errno;
    return ar_errf(msg, msg_bytes, e == ENOENT ? AR_ENOENT : AR_EIO, "model file '%s': %s", path,
                   e == ENOENT ? "no such file" : "cannot be opened for reading");
  }
  if (n_dirs > 0) {
    char link[64], now[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, now, sizeof(now) - 1);
    if (k > 0) {
      now[k] = '\0';
      if (!inside_dirs(now, n_dirs, dirs)) {
        close(fd);
        return outside_dirs(path, n_dirs, dirs, msg, msg_bytes);
      }
    }
  }
  *fd_out = fd;
  return 0;
}

/* Open a model file for reading. With `n_dirs` > 0 (a client's LoadModel), the path must resolve
 * (realpath: every symlink followed) inside one of `dirs`, else AR_EPERM; the file opened is checked
 * again through /proc/self/fd, so a symlink swapped in between cannot lead out either. A client's
 * relative path is looked up in `dirs` in order (the first that holds it wins; never against the
 * daemon's working directory, which is / under systemd): AR_ENOENT when none holds it. Messages
 * name only the requested path: never the resolved target, never why a path outside could not be
 * resolved (which would tell a client what exists where it may not look). A symlink loop whose
 * links all lie inside `dirs` (or a configured model's loop) is AR_EIO "symlink loop (ELOOP...)". */
static int open_model_file(const char *path, uint32_t n_dirs, const char (*dirs)[AR_CONFIG_DIR_MAX],
                           char rp[PATH_MAX], int *fd_out, char *msg, size_t msg_bytes) {
  if (n_dirs == 0 || path[0] == '/') return open_model_path(path, n_dirs, dirs, rp, fd_out, msg, msg_bytes);
  *fd_out = -1;
  for (uint32_t i = 0; i < n_dirs; i++) {
    char d[PATH_MAX], cand[2 * PATH_MAX + 2];
    if (realpath(dirs[i], d) == NULL) continue;   /* a model_dirs entry that is not there (yet) */
    if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", strcmp(d, "/") == 0 ? "" : d, path) >= PATH_MAX)
      return ar_errf(msg, msg_bytes, AR_EINVAL, "model file '%s': longer than %d bytes in model_dirs entry '%s'", path,
                     PATH_MAX - 1, dirs[i]);
    int rc = open_model_path(cand, n_dirs, dirs, rp, fd_out, msg, msg_bytes);
    if (rc != AR_ENOENT) return rc;   /* found, or refused: the first directory that has a say */
  }
  return ar_errf(msg, msg_bytes, AR_ENOENT, "model file '%s': a relative path is looked up in the daemon's "
                 "model_dirs (%u entries), and none holds it", path, n_dirs);
}

static void cache_release(ar_server_t *srv, ar_cached_model_t *cm) {
  if (cm == NULL) return;
  ar_model_t *drop = NULL;
  pthread_mutex_lock(&srv->cache_lock);
  if (--cm->refs == 0) {
    for (ar_cached_model_t **pp = &srv->cache; *pp; pp = &(*pp)->next)
      if (*pp == cm) {
        *pp = cm->next;
        break;
      }
    drop = cm->model;
  } else {
    cm = NULL;
  }
  pthread_mutex_unlock(&srv->cache_lock);
  ar_model_free(drop);
  free(cm);
}

/* Open, copy, verify and plan one model file: shared by the PREPARE job (load thread) and
 * --check-config. `n_dirs`/`dirs` confine the path (see open_model_file); `max_bytes` refuses
 * larger files before reading them. */
static int prepare_model(ar_server_t *srv, const char *path, uint64_t max_bytes, uint32_t n_dirs,
                         const char (*dirs)[AR_CONFIG_DIR_MAX], ar_strategy_t strategy, ar_weights_t weights,
                         uint32_t threads,
                         char *realpath_out,
                         ar_cached_model_t **cm_out, ar_model_t **model_out, ar_interp_t **interp_out,
                         char *msg, size_t msg_bytes) {
  char rp[PATH_MAX];
  int fd = -1;
  int rc = open_model_file(path, n_dirs, dirs, rp, &fd, msg, msg_bytes);
  if (rc != 0) return rc;
  size_t rp_len = strlen(rp), rp_ok = ar_utf8_valid_prefix(rp, rp_len);
  if (rp_ok != rp_len) {
    /* The resolved path is what ListModels, LoadModel and stats report: a conformant client
     * (proto3 string) could not decode any reply holding it. */
    close(fd);
    char esc_path[512], esc_rp[1024];
    return ar_errf(msg, msg_bytes, AR_EINVAL,
                   "model file '%s': resolves to '%s', which is not UTF-8 (byte %zu; model paths are reported "
                   "in protobuf strings): rename the file",
                   ar_escape_text(path, esc_path, sizeof(esc_path)), ar_escape_text(rp, esc_rp, sizeof(esc_rp)),
                   rp_ok);
  }
  if (realpath_out) snprintf(realpath_out, PATH_MAX, "%s", rp);
  ar_model_t *model = NULL;
  char lmsg[AR_MSG_BYTES] = "";
  rc = ar_model_load_fd(fd, max_bytes, &model, lmsg, sizeof(lmsg));
  close(fd);
  if (rc == AR_E2BIG)
    return ar_errf(msg, msg_bytes, rc, "model file '%s': %s (max_model_bytes)", path, lmsg);
  if (rc != 0) return ar_errf(msg, msg_bytes, rc, "model file '%s': %s", path, lmsg[0] ? lmsg : ar_strerror(rc));
  const ar_model_t *use = model;
  ar_cached_model_t *cm = NULL;
  if (srv) {
    cm = cache_insert(srv, model);
    if (cm == NULL) {
      ar_model_free(model);
      return ar_errf(msg, msg_bytes, AR_ENOMEM, "model file '%s': no memory for the cache entry", path);
    }
    use = cm->model;
    model = NULL;
  }
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  opt.strategy = strategy;
  opt.weights = weights;
  /* The server's pool (its thread count sizes per-thread scratch); --check-config plans for
   * the configured count without one. */
  opt.pool = srv ? srv->tpool : NULL;
  opt.threads = (int32_t)threads;
  ar_interp_t *in = NULL;
  rc = ar_interp_new(use, &opt, &in, lmsg, sizeof(lmsg));
  /* A kernel's prepare rejects the operator's stored tensors (input count, a stored output shape
   * that disagrees with the inferred one): the file is malformed, whatever the kernel's code. */
  if (rc == AR_EINVAL || rc == AR_ESHAPE) rc = AR_EMODEL;
  if (rc != 0) {
    cache_release(srv, cm);
    ar_model_free(model);
    return ar_errf(msg, msg_bytes, rc, "model file '%s': %s", path, lmsg[0] ? lmsg : ar_strerror(rc));
  }
  *cm_out = cm;
  if (model_out) *model_out = model;
  *interp_out = in;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Groups                                                                                      */

static ar_group_t *group_attach(ar_server_t *srv, ar_dmodel_t *m) {
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

static void group_detach(ar_server_t *srv, ar_group_t *g) {
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
static void group_after(uv_work_t *w, int status);
static void compact_start(ar_server_t *srv, const ar_reply_to_t *to);
static void compact_check(ar_server_t *srv);
static void compact_defer(ar_server_t *srv, ar_job_t *job);

/* Regions were freed (an unload, or a share group's region that grew and left its old place):
 * with compact_after_unload, compact when that left a hole below used bytes, so the free bytes stay
 * one block; else see whether a compaction waiting for its groups needs fewer of them now. */
static void compact_after_free(ar_server_t *srv) {
  if (srv->cfg.compact_after_unload && !srv->draining && ar_pool_hole_offset(&srv->pool) < srv->pool.bytes)
    compact_start(srv, NULL);
  else
    compact_check(srv);
}

static void group_push(ar_group_t *g, ar_job_t *job) {
  job->next = NULL;
  if (g->tail)
    g->tail->next = job;
  else
    g->head = job;
  g->tail = job;
}

/* Hand a group job to the threadpool. */
static int queue_work(ar_server_t *srv, ar_job_t *job) {
  int rc = uv_queue_work(srv->loop, &job->work, group_work, group_after);
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
 * (group_work), then answer it (group_after); group_after may queue the group's next job here. */
static void on_inline_run(uv_idle_t *h) {
  ar_server_t *srv = h->data;
  while (srv->inline_head) {
    ar_job_t *job = srv->inline_head;
    srv->inline_head = job->next;
    if (srv->inline_head == NULL) srv->inline_tail = NULL;
    job->next = NULL;
    group_work(&job->work);
    group_after(&job->work, 0);
  }
  uv_idle_stop(h);
}

/* Hand the group's next job to the threadpool (or the loop, see run_on_loop) when the group is
 * idle. */
static void group_kick(ar_server_t *srv, ar_group_t *g) {
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
    int rc = queue_work(srv, job);
    if (rc != 0) {
      job->rc = AR_EINTERNAL;
      group_after(&job->work, 0);
    }
    return;
  }
  if (job->kind == AR_JOB_INVOKE && job->to.conn &&
      ar_conn_is_gone(job->to.conn)) {
    /* The client hung up: nobody can read the reply, so do not run it (the worker returns at
     * once on a set rc; group_after counts it as dropped, not as an error). */
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
  int rc = queue_work(srv, job);
  if (rc != 0) {
    /* Cannot happen with valid arguments; answer instead of hanging the group. */
    job->rc = AR_EINTERNAL;
    snprintf(job->msg, sizeof(job->msg), "uv_queue_work: %s", uv_strerror(rc));
    group_after(&job->work, 0);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Model info and load replies                                                                 */

/* One allocation holds the Tensor structs, their pointers, shapes and quantization messages. */
typedef struct { Arenad__Tensor t; Arenad__Quantization q; int64_t shape[AR_MAX_RANK]; } tensor_slot_t;

/* Describe a tensor: name, dtype, shape and its quantization (the scale and zero point arrays are
 * the model's own, which outlives the reply: the message points at them). */
static void fill_tensor_desc(tensor_slot_t *slot, const char *name, const ar_tview_t *v) {
  Arenad__Tensor *t = &slot->t;
  arenad__tensor__init(t);
  t->name = (char *)(name ? name : "");
  t->dtype = (Arenad__DType)v->dtype;
  for (int32_t d = 0; d < v->rank; d++) slot->shape[d] = v->dims[d];
  t->n_shape = (size_t)v->rank;
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

static Arenad__Tensor **tensor_descs(ar_interp_t *in, bool outputs, size_t *n_out) {
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
    fill_tensor_desc(&slots[i], name, v);
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
  if (m->cm) sha_hex(m->cm->sha256, hex); else hex[0] = '\0';
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
    info->inputs = tensor_descs(m->interp, false, &info->n_inputs);
    info->outputs = tensor_descs(m->interp, true, &info->n_outputs);
  }
  (void)srv;
}

void ar_models_info_clear(Arenad__ModelInfo *info) {
  free(info->inputs);
  free(info->outputs);
  info->inputs = info->outputs = NULL;
  info->n_inputs = info->n_outputs = 0;
}

static void answer_loaded(ar_server_t *srv, const ar_reply_to_t *to, ar_dmodel_t *m) {
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
static void model_destroy(ar_server_t *srv, ar_dmodel_t *m) {
  ar_interp_free(m->interp);
  m->interp = NULL;
  if (m->has_persistent) ar_pool_free(&srv->pool, m->persistent_offset);
  m->has_persistent = false;
  if (m->group) group_detach(srv, m->group);
  m->group = NULL;
  cache_release(srv, m->cm);
  m->cm = NULL;
  free(m);
}

/* ------------------------------------------------------------------------------------------ */
/* Load                                                                                        */

/* Load thread. */
static void prepare_work(ar_job_t *job) {
  ar_dmodel_t *m = job->model;
  job->rc = prepare_model(job->srv, m->path, job->max_model_bytes, job->n_dirs,
                          (const char (*)[AR_CONFIG_DIR_MAX])job->dirs, m->strategy, m->weights, 1, job->realpath, &m->cm, NULL,
                          &m->interp, job->msg, sizeof(job->msg));
}

/* Loop thread, after prepare_work. */
static void prepare_after(ar_job_t *job) {
  ar_server_t *srv = job->srv;
  ar_dmodel_t *m = job->model;
  ar_reply_to_t to = job->to;
  if (srv->compacting && !srv->compact_committed) {
    /* The pool's layout is about to change: take regions once it has. */
    compact_defer(srv, job);
    return;
  }
  srv->jobs_outstanding--;
  free(job->dirs);
  job->dirs = NULL;
  if (job->rc != 0) {
    registry_remove(srv, m);
    model_destroy(srv, m);
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
    if ((running && running->state == AR_MODEL_READY && running->cm == m->cm) || rereads_gone(srv, m)) {
      if (rereads_gone(srv, m))
        ar_log("reload: model '%s' was unloaded during the reload: its re-read is dropped", m->name);
      else
        srv->reload_unchanged++;
      registry_remove(srv, m);
      model_destroy(srv, m);
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
  ar_interp_weight_figures(m->interp, &m->wfig);

  /* Regions: everything this load needs is allocated now, or nothing is. */
  char msg[AR_MSG_BYTES] = "";
  ar_group_t *g = group_attach(srv, m);
  if (g == NULL) {
    registry_remove(srv, m);
    model_destroy(srv, m);
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
    group_detach(srv, g);
    job->after_compact = true;
    srv->jobs_outstanding++;   /* still outstanding: it comes back through prepare_after */
    ar_log("load of '%s' needs %" PRIu64 " bytes of pool, largest free block is %" PRIu64 " bytes of %" PRIu64
           " free: compacting the pool first", m->name, total, ar_pool_largest_free_bytes(&srv->pool),
           srv->pool.bytes - ar_pool_used_bytes(&srv->pool));
    compact_defer(srv, job);
    compact_start(srv, NULL);
    return;
  }
  if (rc != 0) {
    if (m->has_persistent) ar_pool_free(&srv->pool, m->persistent_offset);
    m->has_persistent = false;
    registry_remove(srv, m);
    char name[AR_NAME_MAX];
    snprintf(name, sizeof(name), "%s", m->name);
    model_destroy(srv, m);
    if (rc == AR_ENOSPC)
      answer_error(srv, &to, rc,
                   "load of '%s' needs %" PRIu64 " bytes of pool (persistent %" PRIu64 " + activation %" PRIu64
                   "), largest free block is %" PRIu64 " bytes (%" PRIu64 " of %" PRIu64 " bytes free)",
                   name, total, need_pers, new_region ? need_act : 0, ar_pool_largest_free_bytes(&srv->pool),
                   srv->pool.bytes - ar_pool_used_bytes(&srv->pool), srv->pool.bytes);
    else
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
      registry_remove(srv, m);
      model_destroy(srv, m);
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
  group_push(g, job);
  group_kick(srv, g);
}

static void load_model(ar_server_t *srv, const ar_reply_to_t *to, const char *name, const char *path,
                       const char *group, const char *strategy, const char *weights, bool shadow,
                       bool from_config, bool only_if_changed, uint64_t rereads);

void ar_models_load(ar_server_t *srv, const ar_reply_to_t *to, const char *name, const char *path,
                    const char *group, const char *strategy, const char *weights) {
  load_model(srv, to, name, path, group, strategy, weights, false, false, false, 0);
}

bool ar_models_peer_is_admin(const ar_server_t *srv, const ar_reply_to_t *to) {
  if (to->conn == NULL) return true;   /* internal: configuration, SIGHUP */
  if (!to->peer.known) return false;
  for (uint32_t i = 0; i < srv->cfg.n_admin_uids; i++)
    if (srv->cfg.admin_uids[i] == to->peer.uid) return true;
  for (uint32_t i = 0; i < srv->cfg.n_admin_gids; i++)
    if (srv->cfg.admin_gids[i] == to->peer.gid) return true;
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
static void load_model(ar_server_t *srv, const ar_reply_to_t *to, const char *name, const char *path,
                       const char *group, const char *strategy, const char *weights, bool shadow,
                       bool from_config, bool only_if_changed, uint64_t rereads) {
  ar_strategy_t strat = AR_STRATEGY_BEST;
  ar_interp_options_t dflt;
  ar_interp_options_default(&dflt);
  ar_weights_t wmode = dflt.weights;
  if (srv->draining) return answer_error(srv, to, AR_ESTATE, "daemon is shutting down");
  if (!valid_name(name, false))
    return answer_error(srv, to, AR_EINVAL, "model name '%.80s': must be 1-%d bytes of [A-Za-z0-9_.-]", name,
                        AR_NAME_MAX - 1);
  if (!valid_name(group, true))
    return answer_error(srv, to, AR_EINVAL, "group '%.80s': must be at most %d bytes of [A-Za-z0-9_.-]", group,
                        AR_NAME_MAX - 1);
  if (path[0] == '\0') return answer_error(srv, to, AR_EINVAL, "model '%s': empty path", name);
  if (strlen(path) >= sizeof(((ar_dmodel_t *)0)->path))
    return answer_error(srv, to, AR_EINVAL, "model '%s': path longer than %zu bytes", name,
                        sizeof(((ar_dmodel_t *)0)->path) - 1);
  size_t path_len = strlen(path), utf8_ok = ar_utf8_valid_prefix(path, path_len);
  if (utf8_ok != path_len) {
    char esc[1024];
    return answer_error(srv, to, AR_EINVAL,
                        "model '%s': path '%s' is not UTF-8 (byte %zu; model paths are reported in protobuf "
                        "strings): rename the file or link to it under a UTF-8 name",
                        name, ar_escape_text(path, esc, sizeof(esc)), utf8_ok);
  }
  if (strategy[0] && ar_strategy_parse(strategy, &strat) != 0)
    return answer_error(srv, to, AR_EINVAL,
                        "model '%s': unknown planner strategy '%.40s' (linear, first-fit, greedy-by-size, best)",
                        name, strategy);
  if (weights == NULL || weights[0] == '\0') weights = srv->cfg.weights;
  if (weights[0] && ar_weights_parse(weights, &wmode) != 0)
    return answer_error(srv, to, AR_EINVAL, "model '%s': unknown weights mode '%.40s' (stored, fp32)", name,
                        weights);
  ar_dmodel_t *old = shadow ? NULL : find_any(srv, name, true);
  if (old)
    return answer_error(srv, to, AR_EEXIST, "model '%s' is %s", name,
                        old->shadow                        ? "being loaded by a configuration reload"
                        : old->state == AR_MODEL_LOADING   ? "already loading"
                        : old->state == AR_MODEL_UNLOADING ? "being unloaded"
                                                           : "already loaded");
  ar_dmodel_t *m = calloc(1, sizeof(*m));
  ar_job_t *job = calloc(1, sizeof(*job));
  if (m == NULL || job == NULL) {
    free(m);
    free(job);
    return answer_error(srv, to, AR_ENOMEM, "no memory for model '%s'", name);
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
    return answer_error(srv, to, AR_ENOMEM, "no memory for model '%s'", name);
  }
  if (!from_config && job->n_dirs == 0) {
    free(job->dirs);
    free(m);
    free(job);
    return answer_error(srv, to, AR_EPERM, "model file '%s': the daemon has no model_dirs", path);
  }
  registry_add(srv, m);
  srv->jobs_outstanding++;
  load_thread_push(srv, job);
}

/* ------------------------------------------------------------------------------------------ */
/* Unload                                                                                      */

static void finalize_unload(ar_server_t *srv, ar_dmodel_t *m) {
  registry_remove(srv, m);
  ar_waiter_t *w = m->unload_waiters;
  m->unload_waiters = NULL;
  ar_log("unloaded model '%s' (%" PRIu64 " invokes)", m->name, m->invokes);
  model_destroy(srv, m);
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
  compact_after_free(srv);
}

/* Unload without a waiter (reload): new invokes no longer find it; accepted ones finish first. */
static void retire(ar_server_t *srv, ar_dmodel_t *m) {
  m->retired = true;
  if (m->state == AR_MODEL_UNLOADING) return;   /* its unload is already under way */
  m->state = AR_MODEL_UNLOADING;
  if (m->inflight == 0) finalize_unload(srv, m);
}

void ar_models_unload(ar_server_t *srv, const ar_reply_to_t *to, const char *name) {
  ar_dmodel_t *m = ar_models_find(srv, name);
  if (m == NULL) return answer_error(srv, to, AR_ENOENT, "no model named '%.80s'", name);
  if (m->state == AR_MODEL_LOADING)
    return answer_error(srv, to, AR_ESTATE, "model '%s' is still loading; unload it when the load is answered",
                        name);
  ar_waiter_t *w = calloc(1, sizeof(*w));
  if (w == NULL) return answer_error(srv, to, AR_ENOMEM, "no memory");
  w->to = *to;
  w->next = m->unload_waiters;
  m->unload_waiters = w;
  m->state = AR_MODEL_UNLOADING;
  if (m->inflight == 0) finalize_unload(srv, m);
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
static void job_free_io(ar_job_t *job) {
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
  } else if (resize_only && m->state != AR_MODEL_READY) {
    rc = ar_errf(msg, sizeof(msg), AR_ESTATE, "model '%s' is not ready", m->name);
  } else if (resize_only) {
    rc = check_resize_request(m, req->resize_input, msg, sizeof(msg));
  } else if (m == NULL) {
    rc = ar_errf(msg, sizeof(msg), AR_ENOENT, "no model named '%.80s'", ir->model);
  } else if (m->state == AR_MODEL_LOADING) {
    rc = ar_errf(msg, sizeof(msg), AR_ESTATE, "model '%s' is still loading", m->name);
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
  if (rc != 0) {
    if (m && m->state == AR_MODEL_READY && rc == AR_ESHAPE) m->errors++;
    ar_decode_request_free(req, to->frame);
    job_free_io(job);
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
    job_free_io(job);
    free(job);
    ar_decode_request_free(req, to->frame);
    return answer_error(srv, to, AR_ENOMEM, "no memory for %" PRIu64 " output bytes", out_bytes);
  }
  job->kind = AR_JOB_INVOKE;
  job->resize_only = resize_only;
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
  group_push(m->group, job);
  group_kick(srv, m->group);
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
  enum { MAXI = AR_MAX_OP_INPUTS };
  int32_t old_rank[MAXI], old_dims[MAXI][AR_MAX_RANK];
  if (n > MAXI) return 0;   /* more inputs than a request can resize: shapes stay as stored */
  int rc = 0;
  for (int32_t i = 0; i < n && rc == 0; i++) {
    ar_tview_t *v = ar_interp_input(in, i);
    old_rank[i] = v->rank;
    memcpy(old_dims[i], v->dims, sizeof(old_dims[i]));
    const int64_t *shape = NULL;
    size_t rank = 0;
    if (job->resize_only) {
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
  rc = ar_interp_prepare(in, job->msg, sizeof(job->msg));
  uint64_t arena = ar_interp_arena_bytes(in), persistent = ar_interp_persistent_bytes(in);
  if (rc == 0 && persistent > m->persistent_region_bytes)
    rc = ar_errf(job->msg, sizeof(job->msg), AR_EUNSUPPORTED, "model '%s': the new input shapes need %" PRIu64
                 " persistent bytes, its region has %" PRIu64, m->name, persistent, m->persistent_region_bytes);
  if (rc == 0 && arena > job->act_bytes) job->grow_to = arena;
  if (rc == 0 && job->grow_to == 0) {
    rc = ar_interp_place(in, job->act_base, job->act_bytes, pers, m->persistent_region_bytes, job->msg,
                         sizeof(job->msg));
    if (rc == 0) {
      job->replanned = true;
      job->new_arena = arena;
      job->new_persistent = persistent;
      return 0;
    }
  }
  /* Back to the shapes the model had, placed where it was (a shape value stays new: the next
   * invoke re-plans for its own value anyway). */
  char m2[AR_MSG_BYTES];
  for (int32_t i = 0; i < n; i++) ar_interp_resize_input(in, i, old_rank[i], old_dims[i], m2, sizeof(m2));
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
    if (job->rc != 0 || job->grow_to != 0 || job->resize_only) {
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
      snprintf(job->msg, sizeof(job->msg), "model '%s': invoke failed: %s", m->name, ar_strerror(job->rc));
    }
    job->t_end_us = ar_now_us();
  }
  pthread_mutex_unlock(&g->lock);
}

static void answer_invoke(ar_server_t *srv, ar_job_t *job) {
  ar_dmodel_t *m = job->model;
  ar_interp_t *in = m->interp;
  size_t n = (size_t)ar_interp_n_outputs(in);
  Arenad__Tensor **outs = tensor_descs(in, true, &n);
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
    compact_defer(srv, job);
    compact_start(srv, NULL);
    group_kick(srv, g);
    return true;
  }
  if (rc != 0) {
    job->rc = rc;
    if (rc == AR_ENOSPC)
      snprintf(job->msg, sizeof(job->msg), "model '%s': the new input shapes need an activation region of %" PRIu64
               " bytes (now %" PRIu64 "), largest free block is %" PRIu64 " bytes (%" PRIu64 " of %" PRIu64
               " bytes free)", m->name, need, g->act_bytes, ar_pool_largest_free_bytes(&srv->pool),
               srv->pool.bytes - ar_pool_used_bytes(&srv->pool), srv->pool.bytes);
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
  group_kick(srv, g);
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

static void answer_resized(ar_server_t *srv, const ar_reply_to_t *to, ar_dmodel_t *m) {
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__ResizeInputResponse body = ARENAD__RESIZE_INPUT_RESPONSE__INIT;
  Arenad__ModelInfo info;
  ar_models_info(srv, m, &info);
  body.model = &info;
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_RESIZE_INPUT;
  resp.resize_input = &body;
  srv->ops.reply(srv, to, &resp);
  ar_models_info_clear(&info);
}

static void compact_finish(ar_server_t *srv);

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
  group_kick(srv, g);
  /* Members unloaded while they moved go now (the job's reference keeps g alive meanwhile). */
  for (int i = 0; i < job->n_moves; i++) {
    ar_dmodel_t *mv = job->moves[i];
    for (ar_dmodel_t *x = srv->models; x; x = x->next)
      if (x == mv && x->inflight == 0 && x->state == AR_MODEL_UNLOADING) {
        finalize_unload(srv, x);
        break;
      }
  }
  bool counted = job->move_counted;
  free(job->moves);
  free(job);
  group_detach(srv, g);
  if (counted && --srv->compact_moving == 0) compact_finish(srv);
  compact_check(srv);
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

static void group_after(uv_work_t *w, int status) {
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
      group_kick(srv, g);
      if (!m->shadow) srv->ops.status_changed(srv);
      /* Last: answering a reload's load may commit or roll back the reload, which can free m and g. */
      answer_loaded(srv, &job->to, m);
    } else {
      /* The new member could not be placed: undo its load; the group keeps its members. */
      for (int i = 0; i < job->n_free_after; i++) ar_pool_free(&srv->pool, job->free_after[i]);
      group_kick(srv, g);
      registry_remove(srv, m);
      model_destroy(srv, m);
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
    if (job->rc == 0 && job->grow_to != 0 && grow_region(srv, job)) {
      if (finalize) finalize_unload(srv, finalize);
      return;   /* re-queued at the head of its group */
    }
    /* The inputs were copied into the arena: the bytes-path frame goes back to the connection for
     * its next frame (the job still holds the connection's reference here). */
    ar_conn_frame_release(&job->to, job->req);
    if (job->replanned) {
      m->arena_bytes = job->new_arena;
      m->persistent_bytes = job->new_persistent;
      shrink_region(srv, g);
    }
    uint64_t latency = job->t_end_us - job->t_accept_us;
    m->inflight--;
    if (job->rc == 0 && job->resize_only) {
      answer_resized(srv, &job->to, m);
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
    job_free_io(job);   /* buffers released or closed meanwhile are unmapped here */
    ar_decode_request_free(job->req, job->to.frame);
    free(job->out);
    group_kick(srv, g);
    if (m->inflight == 0 && m->state == AR_MODEL_UNLOADING) finalize = m;
  }
  free(job);
  if (finalize) finalize_unload(srv, finalize);
  if (frees_regions) compact_after_free(srv);
  else compact_check(srv);   /* this group may have just parked */
  srv->ops.job_done(srv);
}

/* ------------------------------------------------------------------------------------------ */
/* Pool compaction (the protocol is drawn in ar_daemon.h)                                      */

static void compact_defer(ar_server_t *srv, ar_job_t *job) {
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
  group_push(g, job);
  group_kick(srv, g);
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
    if (queue_work(srv, job) != 0) {
      job->rc = AR_EINTERNAL;
      snprintf(job->msg, sizeof(job->msg), "uv_queue_work failed");
      group_after(&job->work, 0);
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
      group_push(d->model->group, d);
      group_kick(srv, d->model->group);
    } else {
      prepare_after(d);
    }
    d = next;
  }
  if (srv->compacting && srv->compact_committed && srv->compact_moving == 0) compact_finish(srv);
}

/* Loop thread, whenever a group may have parked or the pool changed: queue MOVE jobs for the groups
 * owning regions above the first free block, and apply the layout once all of them are parked. */
static void compact_check(ar_server_t *srv) {
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
static void compact_finish(ar_server_t *srv) {
  ar_compact_figures_t *f = &srv->compact_fig;
  f->t_end_us = ar_now_us();
  srv->compacting = false;
  srv->compact_committed = false;
  if (srv->compact_rc == 0) {
    /* Every place the moved models left is unused now: give its pages back. */
    f->released = ar_pool_release_free(&srv->pool);
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
    compact_check(srv);
  }
}

/* Start a compaction, or join the one in progress (`to` NULL: no reply wanted). */
static void compact_start(ar_server_t *srv, const ar_reply_to_t *to) {
  ar_waiter_t *w = NULL;
  if (to) {
    w = calloc(1, sizeof(*w));
    if (w == NULL) return answer_error(srv, to, AR_ENOMEM, "no memory");
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
  compact_check(srv);
}

void ar_models_compact(ar_server_t *srv, const ar_reply_to_t *to) { compact_start(srv, to); }

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
  json_object_set_new(pool, "regions", regions);
  json_object_set_new(root, "pool", pool);

  json_t *models = json_array();
  for (ar_dmodel_t *m = srv->models; m; m = m->next) {
    if (m->state == AR_MODEL_LOADING) continue;   /* its interpreter belongs to a worker until placed */
    if (m->shadow) continue;                      /* a reload's instance, not committed yet */
    ar_plan_figures_t fig;
    ar_planner_figures(ar_interp_planner(m->interp), &fig);
    char hex[65];
    sha_hex(m->cm->sha256, hex);
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
    json_object_set_new(jm, "mapping_refs", json_integer(cache_refs(srv, m->cm)));
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
    load_model(srv, &to, e->name, e->path, e->group, e->strategy, e->weights, false, true, false, 0);
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
      if (m->shadow) retire(srv, m);   /* placed and never visible: no invokes, goes at once */
    }
  } else {
    /* Swap in the new instances first, so no invoke ever finds the name missing. */
    for (ar_dmodel_t *m = srv->models, *next; m; m = next) {
      next = m->next;
      if (!m->shadow) continue;
      if (rereads_gone(srv, m)) {
        ar_log("reload: model '%s' was unloaded during the reload: its re-read is dropped", m->name);
        retire(srv, m);   /* placed and never visible: no invokes, goes at once */
        continue;
      }
      ar_dmodel_t *old = ar_models_find(srv, m->name);
      m->shadow = false;
      reload_change_t *c = changes && n_changes < cap_changes ? &changes[n_changes++] : NULL;
      if (c) {
        snprintf(c->name, sizeof(c->name), "%s", m->name);
        sha_hex(m->cm->sha256, c->new_hex);
        if (old) sha_hex(old->cm->sha256, c->old_hex);
      }
      if (old) {
        char oh[65], nh[65];
        sha_hex(old->cm->sha256, oh);
        sha_hex(m->cm->sha256, nh);
        ar_log("reload: model '%s' replaced (sha256 %.12s... -> %.12s..., group '%s' -> '%s'); the old instance "
               "finishes %" PRIu64 " accepted invoke(s)", m->name, oh, nh, old->group_name, m->group_name,
               old->inflight);
        retire(srv, old);
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
          sha_hex(m->cm->sha256, c->old_hex);
        }
        retire(srv, m);
      }
    }
    srv->cfg.max_frame_bytes = cfg->max_frame_bytes;
    srv->cfg.max_pending_frame_bytes = cfg->max_pending_frame_bytes;   /* frames held keep their share */
    srv->cfg.max_connections = cfg->max_connections;
    /* Connection limits apply to what is read from now on. */
    srv->cfg.max_connections_per_uid = cfg->max_connections_per_uid;
    srv->cfg.max_inflight_per_connection = cfg->max_inflight_per_connection;
    srv->cfg.max_pending_reply_bytes = cfg->max_pending_reply_bytes;
    srv->cfg.max_unwritten_reply_bytes = cfg->max_unwritten_reply_bytes;
    srv->cfg.max_decode_bytes = cfg->max_decode_bytes;
    srv->cfg.max_queue_per_model = cfg->max_queue_per_model;
    srv->cfg.max_buffers_per_connection = cfg->max_buffers_per_connection;
    srv->cfg.max_buffer_bytes_per_connection = cfg->max_buffer_bytes_per_connection;
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
    load_model(srv, &to, e->name, e->path, e->group, e->strategy, e->weights, true, true, same, 0);
  }
  /* Models loaded at run time that the configuration does not name: re-read their files too. */
  for (ar_dmodel_t *m = srv->models; m && srv->reload_rc == 0; m = m->next) {
    if (m->shadow || m->retired || m->from_config || m->state != AR_MODEL_READY) continue;
    if (config_entry(cfg, m->name)) continue;
    ar_reply_to_t to = {.conn = NULL, .reload = true, .reload_index = UINT32_MAX};
    srv->reload_pending++;
    load_model(srv, &to, m->name, m->path, m->group_name, ar_strategy_name(m->strategy), ar_weights_name(m->weights),
               true, false, true, m->serial);
  }
  ar_reply_to_t self = {.conn = NULL};
  ar_models_reload_answered(srv, &self, 0, NULL);
  return true;
}

void ar_models_shutdown(ar_server_t *srv) {
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
      job_free_io(j);
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
    model_destroy(srv, m);
  }
  pthread_mutex_destroy(&srv->cache_lock);
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
    rc = prepare_model(NULL, e->path, cfg->max_model_bytes, 0, NULL, s, w, ar_config_threads(cfg), NULL, &cm, &model,
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
