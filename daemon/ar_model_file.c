/* ar_model_file.c - model files: opened only inside model_dirs (a client's path is confined;
 * symlinks are followed and checked), read, verified and planned (prepare_model, on the load thread
 * and for --check-config), and the refcounted cache of verified models shared by sha256.
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
int ar__cache_refs(ar_server_t *srv, ar_cached_model_t *cm) {
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
  /* Which folders those are, and how to add one (loads are an admin's, who may see them). */
  char list[512];
  size_t at = 0;
  list[0] = '\0';
  for (uint32_t i = 0; i < n_dirs && at < sizeof(list); i++)
    at += (size_t)snprintf(list + at, sizeof(list) - at, "%s'%s'", i ? ", " : "", dirs[i]);
  return ar_errf(msg, msg_bytes, AR_EPERM, "model file '%s': not inside the daemon's model_dirs (%s): add its folder "
                 "to model_dirs and reload, or start arenad with -m DIR", path, n_dirs ? list : "none");
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

void ar__cache_release(ar_server_t *srv, ar_cached_model_t *cm) {
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
int ar__prepare_model(ar_server_t *srv, const char *path, uint64_t max_bytes, uint32_t n_dirs,
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
  if (srv && srv->load_abort) {
    /* SIGTERM's drain deadline passed while the file was read: do not plan it too. */
    ar_model_free(model);
    return ar_errf(msg, msg_bytes, AR_ESTATE, "model file '%s': load abandoned, the daemon is shutting down "
                   "(drain_timeout_ms passed)", path);
  }
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
  if (srv) {
    opt.max_while_iterations = srv->cfg.max_while_iterations;   /* 0: the interpreter's default */
    opt.max_while_us = (int64_t)srv->cfg.max_while_ms * 1000;   /* 0: no time bound */
    opt.cancel = &srv->cancel_invokes;                          /* set at the drain deadline */
  }
  ar_interp_t *in = NULL;
  rc = ar_interp_new(use, &opt, &in, lmsg, sizeof(lmsg));
  /* A kernel's prepare rejects the operator's stored tensors (input count, a stored output shape
   * that disagrees with the inferred one): the file is malformed, whatever the kernel's code. */
  if (rc == AR_EINVAL || rc == AR_ESHAPE) rc = AR_EMODEL;
  if (rc != 0) {
    ar__cache_release(srv, cm);
    ar_model_free(model);
    return ar_errf(msg, msg_bytes, rc, "model file '%s': %s", path, lmsg[0] ? lmsg : ar_strerror(rc));
  }
  *cm_out = cm;
  if (model_out) *model_out = model;
  *interp_out = in;
  return 0;
}
