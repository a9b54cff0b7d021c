/* ar_server.c - arenad's event loop side above the connection layer: the listening Unix socket,
 * request dispatch, replies, signals (drain with its deadline, reload), the watchdog timer.
 *
 * The connection layer (ar_conn.c) frames, scans and decodes requests within its budgets and
 * hands each decoded Request to server_dispatch, which answers it directly (ping, list, stats,
 * plan; stats from ar_stats.c's snapshot) or passes it to ar_models.c (which validates the body at the boundary). Every request
 * gets exactly one Response with its id, through srv->ops.reply: ar_models.c never calls this
 * file by name. Requests answered later (load, unload, invoke) hold a reference on the
 * connection so that a client that hangs up early never leaves a dangling pointer in a job.
 */
#include "config.h"   /* first: _GNU_SOURCE (struct ucred) */

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/ar_path.h"
#include "common/ar_text.h"
#include "common/ar_util.h"
#include "daemon/ar_conn.h"
#include "daemon/ar_daemon.h"
#include "daemon/ar_decode.h"
#include "daemon/ar_metrics.h"
#include "daemon/ar_server.h"
#include "daemon/ar_service.h"
#include "daemon/ar_sessions.h"
#include "interp/ar_budget.h"


uint64_t ar_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static _Atomic bool log_to_syslog;   /* set once (ar_log_use_syslog); worker threads read it */
/* --log-file: its descriptor (O_APPEND) once ar_log_use_file ran, else -1; the path for reopening.
 * A reopen replaces the descriptor in place (dup2), so a thread writing meanwhile writes whole
 * lines to the old file or the new one. */
static _Atomic int log_file_fd = -1;
static char log_file_path[PATH_MAX];

void ar_log_use_syslog(void) {
  openlog("arenad", LOG_PID | LOG_NDELAY, LOG_DAEMON);
  log_to_syslog = true;
}

int ar_log_open_file(const char *path, char *msg, size_t msg_bytes) {
  char abs[PATH_MAX];
  if (path[0] == '/') {
    snprintf(abs, sizeof(abs), "%s", path);
  } else {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == NULL || snprintf(abs, sizeof(abs), "%s/%s", cwd, path) >= (int)sizeof(abs))
      return ar_errf(msg, msg_bytes, AR_EINVAL, "--log-file %s: path too long", path);
  }
  /* Not through a symlink someone planted (the daemon runs as root and appends to it). */
  int fd = open(abs, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0640);
  if (fd < 0)
    return ar_errf(msg, msg_bytes, AR_EIO, "--log-file %s: %s", abs,
                   errno == ELOOP ? "is a symbolic link: refused (give the file's own path)" : strerror(errno));
  snprintf(log_file_path, sizeof(log_file_path), "%s", abs);
  int old = atomic_exchange(&log_file_fd, fd);
  if (old >= 0) close(old);
  return 0;
}

int ar_log_reopen(void) {
  int fd = log_file_fd;
  if (fd < 0) return 0;
  int nfd = open(log_file_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0640);
  if (nfd < 0) {
    int e = errno;
    ar_log("SIGHUP: cannot reopen the log file %s (%s): logging on to the old one", log_file_path, strerror(e));
    return AR_EIO;
  }
  if (dup3(nfd, fd, O_CLOEXEC) < 0) {
    close(nfd);
    return AR_EIO;
  }
  close(nfd);
  return 0;
}

void ar_log_close_file(void) {
  int fd = atomic_exchange(&log_file_fd, -1);
  if (fd >= 0) close(fd);
}

void ar_log(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  /* Lines quote model names, tensor names and client-sent names: one log line per call, with no
   * control byte that could forge another line or drive a terminal. */
  char esc[4 * sizeof(line)];
  ar_escape_text(line, esc, sizeof(esc));
  int fd = log_file_fd;
  if (fd >= 0) {
    /* One write per line (O_APPEND: lines of several threads never interleave), stamped in UTC. */
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    char out[sizeof(esc) + 64];
    int n = snprintf(out, sizeof(out), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ arenad[%ld]: %s\n", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000L,
                     (long)getpid(), esc);
    if (n > (int)sizeof(out) - 1) {
      n = (int)sizeof(out) - 1;
      out[n - 1] = '\n';
    }
    if (write(fd, out, (size_t)n) == n) return;
    /* A full disk or a removed mount: the line goes where it would have gone without the file. */
  }
  if (log_to_syslog) syslog(LOG_INFO, "%s", esc);
  else fprintf(stderr, "arenad: %s\n", esc);
}

static void ar_server_maybe_finish_drain(ar_server_t *srv);

/* ------------------------------------------------------------------------------------------ */
/* Busy polling                                                                                */

/* A sleeping thread costs a wake-up when work arrives (an IPI to an idle CPU, about 20 us on a
 * virtual machine whose idle vCPUs halt), paid twice per request on an idle machine. While the
 * busy_poll handle is active the loop's poll does not block (libuv polls with a zero timeout when
 * an idle handle is active): a request that follows within busy_poll_us of the last activity is
 * taken at once. The handle stops itself after busy_poll_us of quiet, so an idle daemon sleeps;
 * each pass yields the CPU, so a runnable worker or pool thread on the same CPU goes first. The
 * cost: up to busy_poll_us of one CPU after each burst of requests. */
static void on_busy_poll(uv_idle_t *h) {
  ar_server_t *srv = h->data;
  if (srv->draining || ar_now_us() - srv->last_activity_us >= srv->cfg.busy_poll_us) {
    uv_idle_stop(h);
    return;
  }
  sched_yield();
}

void ar_server_activity(ar_server_t *srv) {
  if (srv->cfg.busy_poll_us == 0 || !srv->busy_poll_init || srv->draining) return;
  srv->last_activity_us = ar_now_us();
  if (!uv_is_active((uv_handle_t *)&srv->busy_poll)) uv_idle_start(&srv->busy_poll, on_busy_poll);
}

/* ------------------------------------------------------------------------------------------ */
/* Replies                                                                                     */

static void ar_server_status(ar_server_t *srv) {
  char status[256];
  ar_models_status(srv, status, sizeof(status));
  ar_service_status(status);
}

static void notify_ready(ar_server_t *srv) {
  char status[256];
  ar_models_status(srv, status, sizeof(status));
  ar_service_ready(status);
}

/* The audit line of a refused or failed request: who asked (the peer's uid, gid and pid, or the
 * configuration for loads at start and reload), what (the request and the model it names), the
 * code and the message the peer was answered. One line, fields in a fixed order, the message last:
 *   audit: request=load_model model=face uid=1000 gid=1000 pid=4242 code=EPERM: load_model: not ...
 */
/* Audit lines are rate-limited per peer uid (a token bucket: AR_AUDIT_BURST lines, then
 * AR_AUDIT_PER_S a second), so that a local user's flood of refused requests cannot fill the
 * disk through the log; the lines held back are counted and said in one line before that uid's
 * next line. The daemon's own lines (configuration loads, reloads) are never held back. Loop
 * thread only (replies are sent from it). */
#define AR_AUDIT_BURST 20
#define AR_AUDIT_PER_S 5
#define AR_AUDIT_UIDS 64
typedef struct audit_bucket {
  bool used;
  uid_t uid;
  uint64_t tokens_e6;   /* millionths of a line */
  uint64_t last_us;
  uint64_t held_back;
} audit_bucket_t;
static audit_bucket_t audit_buckets[AR_AUDIT_UIDS];

/* May uid write an audit line now? Sets *held_back to the lines held back since its last one. */
static bool audit_take(uid_t uid, uint64_t *held_back) {
  const uint64_t now = ar_now_us(), full = (uint64_t)AR_AUDIT_BURST * 1000000u;
  audit_bucket_t *b = NULL, *oldest = &audit_buckets[0];
  for (int i = 0; i < AR_AUDIT_UIDS && b == NULL; i++) {
    audit_bucket_t *x = &audit_buckets[i];
    if (x->used && x->uid == uid) b = x;
    else if (!x->used || (oldest->used && x->last_us < oldest->last_us)) oldest = x;
  }
  if (b == NULL) {   /* a new uid takes a free entry or the longest unused one: a full bucket */
    b = oldest;
    *b = (audit_bucket_t){.used = true, .uid = uid, .tokens_e6 = full, .last_us = now};
  }
  b->tokens_e6 += (now - b->last_us) * AR_AUDIT_PER_S;   /* µs * lines/s = millionths of a line */
  if (b->tokens_e6 > full) b->tokens_e6 = full;
  b->last_us = now;
  *held_back = 0;
  if (b->tokens_e6 < 1000000u) {
    b->held_back++;
    return false;
  }
  b->tokens_e6 -= 1000000u;
  *held_back = b->held_back;
  b->held_back = 0;
  return true;
}

static void audit_failure(const ar_reply_to_t *to, int code, const char *message) {
  if (to->conn && to->peer.known) {
    uint64_t held_back = 0;
    if (!audit_take(to->peer.uid, &held_back)) return;
    if (held_back)
      ar_log("audit: %" PRIu64 " lines of uid %u held back (at most %d a second after a burst of %d)", held_back,
             (unsigned)to->peer.uid, AR_AUDIT_PER_S, AR_AUDIT_BURST);
  }
  char peer[96];
  if (to->conn && to->peer.known)
    snprintf(peer, sizeof(peer), "uid=%u gid=%u pid=%d", (unsigned)to->peer.uid, (unsigned)to->peer.gid,
             (int)to->peer.pid);
  else
    snprintf(peer, sizeof(peer), "peer=%s", to->conn ? "unknown" : to->reload ? "reload" : to->internal_config ? "config"
                                                                                                                : "daemon");
  /* The model name is the client's: any byte outside a valid name's [A-Za-z0-9_.-] is written
   * \xNN, so a name cannot forge the fields after it. */
  char model[4 * AR_NAME_MAX + 2] = "-";
  size_t k = 0;
  for (const char *p = to->model; *p && k + 5 < sizeof(model); p++) {
    unsigned char ch = (unsigned char)*p;
    if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
        ch == '-')
      model[k++] = (char)ch;
    else
      k += (size_t)snprintf(model + k, sizeof(model) - k, "\\x%02x", ch);
  }
  if (k) model[k] = '\0';
  ar_log("audit: request=%s model=%s %s code=%s: %s", to->request ? to->request : "-", model, peer,
         ar_err_name(-code), message && message[0] ? message : ar_strerror(-code));
}

static void ar_server_reply(ar_server_t *srv, const ar_reply_to_t *to, Arenad__Response *resp) {
  resp->id = to->id;
  ar_conn_t *c = to->conn;
  int code = resp->status ? (int)resp->status->code : 0;
  bool audited = code != ARENAD__CODE__OK && (to->audit || -code == AR_EPERM);
  if (audited) audit_failure(to, code, resp->status->message);
  if (c == NULL) free(to->keep);
  if (c == NULL) {
    /* An internal request (config at start, reload): the log is its reply. */
    if (code != ARENAD__CODE__OK && !audited) ar_log("%s", resp->status->message);
    if (to->reload) {
      ar_models_reload_answered(srv, to, -code, code ? resp->status->message : NULL);
      return;
    }
    if (to->internal_config && --srv->config_loads_pending == 0 && !srv->draining) notify_ready(srv);
    return;
  }
  ar_conn_reply_unreserve(c, to->reply_reserved);
  ar_conn_send_owned(c, resp, to->keep, (size_t)to->keep_bytes);
  ar_conn_request_done(c);
}

static void ar_server_reply_error(ar_server_t *srv, const ar_reply_to_t *to, int err, const char *msg) {
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  st.code = (Arenad__Code)(err < 0 ? -err : err);
  char text[4 * AR_MSG_BYTES + 32];
  /* Status.message is a proto3 string and messages quote names the client sent and strings of model
   * files: invalid UTF-8 and control characters are sent as \xNN. */
  ar_escape_text(msg && msg[0] ? msg : ar_strerror(err), text, sizeof(text));
  st.message = text;
  resp.status = &st;
  ar_server_reply(srv, to, &resp);
}

/* ------------------------------------------------------------------------------------------ */
/* Requests                                                                                    */

static void reply_ok_body(ar_server_t *srv, const ar_reply_to_t *to, Arenad__Response *resp) {
  Arenad__Status st = ARENAD__STATUS__INIT;
  resp->status = &st;
  ar_server_reply(srv, to, resp);
}

static void handle_list(ar_server_t *srv, const ar_reply_to_t *to) {
  size_t n = 0;
  for (ar_dmodel_t *m = srv->models; m; m = m->next)
    if (m->state == AR_MODEL_READY && !m->shadow) n++;
  Arenad__ModelInfo *infos = calloc(n + 1, sizeof(*infos));
  Arenad__ModelInfo **ptrs = calloc(n + 1, sizeof(*ptrs));
  if (infos == NULL || ptrs == NULL) {
    free(infos);
    free(ptrs);
    return ar_server_reply_error(srv, to, AR_ENOMEM, "no memory for the model list");
  }
  size_t i = 0;
  for (ar_dmodel_t *m = srv->models; m; m = m->next)
    if (m->state == AR_MODEL_READY && !m->shadow) {
      ar_models_info(srv, m, &infos[i]);
      /* ar_models_info's sha256 points to a per-thread buffer: keep a copy per entry. */
      infos[i].sha256 = strdup(infos[i].sha256);
      ptrs[i] = &infos[i];
      i++;
    }
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__ListModelsResponse body = ARENAD__LIST_MODELS_RESPONSE__INIT;
  body.n_models = n;
  body.models = ptrs;
  resp.body_case = ARENAD__RESPONSE__BODY_LIST_MODELS;
  resp.list_models = &body;
  reply_ok_body(srv, to, &resp);
  for (i = 0; i < n; i++) {
    free(infos[i].sha256);
    ar_models_info_clear(&infos[i]);
  }
  free(infos);
  free(ptrs);
}

static void handle_plan(ar_server_t *srv, const ar_reply_to_t *to, const char *name) {
  ar_dmodel_t *m = ar_models_find(srv, name);
  if (m == NULL || m->state == AR_MODEL_LOADING) {
    char msg[AR_MSG_BYTES];
    snprintf(msg, sizeof(msg), m ? "model '%.80s' is still loading" : "no model named '%.80s'", name);
    return ar_server_reply_error(srv, to, m ? AR_ESTATE : AR_ENOENT, msg);
  }
  json_t *j = ar_budget_json(m->interp);
  char *s = j ? json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
  json_decref(j);
  if (s == NULL) return ar_server_reply_error(srv, to, AR_ENOMEM, "no memory for the budget table");
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__GetPlanResponse body = ARENAD__GET_PLAN_RESPONSE__INIT;
  body.json = s;
  resp.body_case = ARENAD__RESPONSE__BODY_GET_PLAN;
  resp.get_plan = &body;
  reply_ok_body(srv, to, &resp);
  free(s);
}
/* The connection layer's check of a scanned frame before anything is allocated for it: an
 * Invoke must name a loaded model and carry as many inputs as it takes, each with at most
 * AR_MAX_RANK shape entries. */
static int server_admit(ar_server_t *srv, const ar_decode_scan_t *scan, char *msg, size_t msg_bytes) {
  if (scan->body_field != ARENAD__REQUEST__BODY_INVOKE) return 0;
  char name[AR_NAME_MAX + 1];
  size_t n = scan->model ? AR_MIN(scan->model_len, sizeof(name) - 1) : 0;
  if (n) memcpy(name, scan->model, n);
  name[n] = '\0';
  ar_dmodel_t *m = scan->model_len < sizeof(name) ? ar_models_find(srv, name) : NULL;
  if (m == NULL)
    return ar_errf(msg, msg_bytes, AR_ENOENT, "no model named '%.80s'", name);
  if (m->state == AR_MODEL_READY && scan->n_inputs != (uint64_t)ar_interp_n_inputs(m->interp)) {
    m->errors++;
    return ar_errf(msg, msg_bytes, AR_ESHAPE, "model '%s' takes %d input(s), the request has %" PRIu64, m->name,
                   ar_interp_n_inputs(m->interp), scan->n_inputs);
  }
  if (scan->max_shape > AR_MAX_RANK) {
    if (m->state == AR_MODEL_READY) m->errors++;
    return ar_errf(msg, msg_bytes, AR_ESHAPE, "an input's shape has %s%" PRIu64 " entries, at most %d (refused before decoding)",
                   scan->max_shape >= 4096 ? "at least " : "", scan->max_shape, AR_MAX_RANK);
  }
  return 0;
}

/* Load, unload and reload are for admin peers (config admin_uids / admin_gids). */
static void refuse_not_admin(ar_server_t *srv, const ar_reply_to_t *to, const char *what) {
  char msg[AR_MSG_BYTES];
  if (to->peer.known)
    snprintf(msg, sizeof(msg), "%s: not permitted for uid %u gid %u (not in the daemon's admin_uids/admin_gids)",
             what, (unsigned)to->peer.uid, (unsigned)to->peer.gid);
  else
    snprintf(msg, sizeof(msg), "%s: not permitted (the peer's credentials are unknown)", what);
  srv->ops.reply_error(srv, to, AR_EPERM, msg);
}

static void reload(ar_server_t *srv, const ar_reply_to_t *to);

/* Mark an admin request: its failures are audit lines (audit_failure). A model name longer than
 * AR_NAME_MAX is cut (the load refuses it, the reply quotes it). */
static void audit_as(ar_reply_to_t *to, const char *request, const char *model) {
  to->request = request;
  to->audit = true;
  snprintf(to->model, sizeof(to->model), "%s", model ? model : "");
}

/* A decoded request of a connection (`to` holds the connection's reference): answer it or hand
 * it to ar_models.c. Takes ownership of `req`. */
static void server_dispatch(ar_server_t *srv, const ar_reply_to_t *to_in, Arenad__Request *req) {
  ar_reply_to_t to = *to_in;
  char msg[AR_MSG_BYTES];
  switch (req->body_case) {
    case ARENAD__REQUEST__BODY_PING: {
      Arenad__Response resp = ARENAD__RESPONSE__INIT;
      Arenad__PingResponse body = ARENAD__PING_RESPONSE__INIT;
      body.version = (char *)PACKAGE_VERSION;
      body.uptime_us = ar_now_us() - srv->start_us;
      body.max_inflight_per_connection = srv->cfg.max_inflight_per_connection;
      resp.body_case = ARENAD__RESPONSE__BODY_PING;
      resp.ping = &body;
      reply_ok_body(srv, &to, &resp);
      break;
    }
    case ARENAD__REQUEST__BODY_LOAD_MODEL: {
      const Arenad__LoadModelRequest *l = req->load_model;
      audit_as(&to, "load_model", l->name);
      if (!ar_models_peer_is_admin(srv, &to)) {
        refuse_not_admin(srv, &to, "load_model");
        break;
      }
      ar_models_load(srv, &to, l->name, l->path, l->group, l->strategy, l->weights);
      break;
    }
    case ARENAD__REQUEST__BODY_UNLOAD_MODEL:
      audit_as(&to, "unload_model", req->unload_model->name);
      if (!ar_models_peer_is_admin(srv, &to)) {
        refuse_not_admin(srv, &to, "unload_model");
        break;
      }
      ar_models_unload(srv, &to, req->unload_model->name);
      break;
    case ARENAD__REQUEST__BODY_RELOAD:
      audit_as(&to, "reload", NULL);
      if (!ar_models_peer_is_admin(srv, &to)) {
        refuse_not_admin(srv, &to, "reload");
        break;
      }
      reload(srv, &to);
      break;
    case ARENAD__REQUEST__BODY_COMPACT:
      audit_as(&to, "compact", NULL);
      if (!ar_models_peer_is_admin(srv, &to)) {
        refuse_not_admin(srv, &to, "compact");
        break;
      }
      ar_models_compact(srv, &to);
      break;
    case ARENAD__REQUEST__BODY_LIST_MODELS:
      handle_list(srv, &to);
      break;
    case ARENAD__REQUEST__BODY_INVOKE:
      to.request = "invoke";   /* logged only when refused with EPERM (a growth above max_resize_activation_bytes) */
      snprintf(to.model, sizeof(to.model), "%s", req->invoke->model);
      ar_models_invoke(srv, &to, req);
      req = NULL;   /* owned by the invoke job (or freed by it on a validation error) */
      break;
    case ARENAD__REQUEST__BODY_GET_STATS:
      /* Answered from the stats thread's last snapshot, or when the walk it starts is done. */
      if (!ar_models_rate_limited(srv, &to, "get_stats")) ar_models_get_stats(srv, &to);
      break;
    case ARENAD__REQUEST__BODY_GET_PLAN:
      if (!ar_models_rate_limited(srv, &to, "get_plan")) handle_plan(srv, &to, req->get_plan->model);
      break;
    case ARENAD__REQUEST__BODY_REGISTER_BUFFER:
      if (to.conn == NULL) {
        ar_server_reply_error(srv, &to, AR_EINVAL, "register_buffer needs a connection");
        break;
      }
      ar_conn_register_buffer(to.conn, &to, req->register_buffer);
      break;
    case ARENAD__REQUEST__BODY_RESET_SESSION:
      to.request = "reset_session";
      snprintf(to.model, sizeof(to.model), "%s", req->reset_session->model);
      ar_sessions_reset_request(srv, &to, req->reset_session);
      break;
    case ARENAD__REQUEST__BODY_RESIZE_INPUT:
      audit_as(&to, "resize_input", req->resize_input->model);
      ar_models_invoke(srv, &to, req);   /* a re-plan without a run: same queue as invokes */
      req = NULL;
      break;
    default:
      snprintf(msg, sizeof(msg), "request %" PRIu64 " has no body (expected one of ping, load_model, unload_model, "
               "list_models, invoke, get_stats, get_plan, reload, resize_input, compact, register_buffer, reset_session)", req->id);
      ar_server_reply_error(srv, &to, AR_EPROTO, msg);
      break;
  }
  if (req) arenad__request__free_unpacked(req, NULL);
}

static void server_conn_closed(ar_server_t *srv) { ar_server_maybe_finish_drain(srv); }

static void server_job_done(ar_server_t *srv) { ar_server_maybe_finish_drain(srv); }

static void on_connection(uv_stream_t *server, int status) { ar_conn_accept(server->data, server, status); }

/* ------------------------------------------------------------------------------------------ */
/* Drain, signals, watchdog                                                                    */

static void on_handle_closed(uv_handle_t *h) { (void)h; }

static void ar_server_maybe_finish_drain(ar_server_t *srv) {
  if (!srv->draining) return;
  /* Connections idle now can go; the others go when their last reply is written. */
  ar_conn_drain(srv);
  if (srv->jobs_outstanding > 0 || srv->n_conns > 0) return;
  if (!uv_is_closing((uv_handle_t *)&srv->sig_term)) {
    ar_conn_timers_stop(srv);
    if (srv->drain_timer_on) {
      srv->drain_timer_on = false;
      uv_close((uv_handle_t *)&srv->drain_timer, on_handle_closed);
    }
    uv_close((uv_handle_t *)&srv->sig_term, on_handle_closed);
    uv_close((uv_handle_t *)&srv->sig_int, on_handle_closed);
    uv_close((uv_handle_t *)&srv->sig_hup, on_handle_closed);
    if (srv->watchdog_on) uv_close((uv_handle_t *)&srv->watchdog, on_handle_closed);
    if (srv->busy_poll_init) uv_close((uv_handle_t *)&srv->busy_poll, on_handle_closed);
    ar_models_close_handles(srv);
  }
}

/* drain_timeout_ms passed: replies not delivered by now are dropped with their connections;
 * jobs still on a worker finish (their replies are then dropped too; a WHILE loop in one stops at
 * its next iteration), then the loop ends. */
static void on_drain_deadline(uv_timer_t *t) {
  ar_server_t *srv = t->data;
  ar_log("drain_timeout_ms %u passed: closing %" PRIu64 " connection(s), dropping their unwritten replies; "
         "loads in progress give up", srv->cfg.drain_timeout_ms, srv->n_conns);
  ar_models_abort_loads(srv);
  __atomic_store_n(&srv->cancel_invokes, 1, __ATOMIC_RELAXED);   /* a WHILE still iterating stops */
  ar_conn_close_all(srv);
  ar_server_maybe_finish_drain(srv);
}

static void start_drain(ar_server_t *srv, const char *why) {
  if (srv->draining) return;
  srv->draining = true;
  ar_log("%s: stop accepting, finish %" PRIu64 " job(s) in flight, exit", why, srv->jobs_outstanding);
  ar_service_stopping();
  if (srv->listening) {
    uv_close((uv_handle_t *)&srv->listener, on_handle_closed);
    srv->listening = false;
  }
  ar_metrics_close(srv);   /* scrapes are read-only: nothing to finish */
  if (srv->cfg.drain_timeout_ms) {
    uv_timer_init(srv->loop, &srv->drain_timer);
    srv->drain_timer.data = srv;
    uv_timer_start(&srv->drain_timer, on_drain_deadline, srv->cfg.drain_timeout_ms, 0);
    srv->drain_timer_on = true;
  }
  ar_server_maybe_finish_drain(srv);
}

static void on_signal(uv_signal_t *h, int signum) {
  ar_server_t *srv = h->data;
  if (signum == SIGHUP) {
    ar_log_reopen();   /* --log-file: after logrotate moved it */
    ar_server_reload(srv);
    return;
  }
  start_drain(srv, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void on_watchdog(uv_timer_t *t) {
  (void)t;
  ar_service_watchdog();
}

/* SIGHUP (to == NULL) or a Reload request: re-read the configuration (when there is one) and the
 * loaded models' files as one transaction; a Reload request is answered when it commits or rolls
 * back. */
static void reload(ar_server_t *srv, const ar_reply_to_t *to) {
  char msg[AR_MSG_BYTES];
  if (srv->draining) {
    if (to) ar_server_reply_error(srv, to, AR_ESTATE, "daemon is shutting down");
    return;
  }
  if (srv->reload_cfg) {
    if (to) {
      ar_server_reply_error(srv, to, AR_ESTATE, "a reload is in progress; reload again after it is done");
    } else {
      /* Coalesced: however many come, one reload follows, so the files it reads are at least as new
       * as the last signal. */
      srv->reload_again = true;
      ar_log("SIGHUP during a reload: one more reload runs when this one is done");
    }
    return;
  }
  ar_config_t *cfg = malloc(sizeof(*cfg));
  if (cfg == NULL) {
    if (to) ar_server_reply_error(srv, to, AR_ENOMEM, "no memory for the configuration");
    return;
  }
  if (srv->config_path == NULL) {
    /* No file to re-read: the same configuration, every loaded model's file read again. */
    memcpy(cfg, &srv->cfg, sizeof(*cfg));
  } else {
    int rc = ar_config_load(srv->config_path, cfg, msg, sizeof(msg));
    if (rc != 0) {
      ar_log("reload failed, keeping the running configuration: %s", msg);   /* msg names the file */
      if (to) ar_server_reply_error(srv, to, rc, msg);
      free(cfg);
      return;
    }
  }
  ar_service_reloading();
  ar_log("reload: %s (%u models)", srv->config_path ? srv->config_path : "(no configuration file)", cfg->n_models);
  if (cfg->pool_bytes != srv->cfg.pool_bytes || strcmp(cfg->socket_path, srv->cfg.socket_path) != 0 ||
      cfg->workers != srv->cfg.workers || ar_config_threads(cfg) != ar_config_threads(&srv->cfg) ||
      strcmp(cfg->metrics_listen, srv->cfg.metrics_listen) != 0)
    ar_log("reload: socket, metrics_listen, pool_bytes, workers and threads changes take effect at the next restart");
  /* Loads the new and changed models next to the running ones; commits (and notifies READY)
   * only when all of them loaded, else keeps the running configuration. */
  ar_models_apply_config(srv, cfg, to);
}

void ar_server_reload(ar_server_t *srv) { reload(srv, NULL); }

static void server_reload_done(ar_server_t *srv) {
  if (!srv->reload_again) return;
  srv->reload_again = false;
  if (!srv->draining) reload(srv, NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* Listening socket                                                                            */

/* Refuse to steal the socket of a running daemon; remove a stale one. */
static int clear_stale_socket(const char *path, char *msg, size_t msg_bytes) {
  struct stat st;
  if (lstat(path, &st) != 0) return 0;
  if (!S_ISSOCK(st.st_mode))
    return ar_errf(msg, msg_bytes, AR_EEXIST, "socket path %s exists and is not a socket", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
    close(fd);
    return ar_errf(msg, msg_bytes, AR_EEXIST, "another daemon is listening on %s", path);
  }
  if (fd >= 0) close(fd);
  unlink(path);
  return 0;
}

/* bind(2) reports a missing directory as ENOENT, which libuv words "no such file or directory"
 * and some systems as EACCES: name the directory instead. */
static int check_socket_dir(const char *path, char *msg, size_t msg_bytes) {
  char dir[sizeof(((ar_config_t *)0)->socket_path)];
  if (ar_path_dir(path, dir, sizeof(dir)) != 0) return 0;   /* longer than a socket path: bind says */
  struct stat st;
  if (stat(dir, &st) != 0) {
    int e = errno;
    if (e == ENOENT)
      return ar_errf(msg, msg_bytes, AR_EIO, "bind %s: the socket's directory %s does not exist (create it, or "
                     "set RuntimeDirectory= in the unit)", path, dir);
    return ar_errf(msg, msg_bytes, AR_EIO, "bind %s: directory %s: %s", path, dir, strerror(e));
  }
  if (!S_ISDIR(st.st_mode))
    return ar_errf(msg, msg_bytes, AR_EIO, "bind %s: %s is not a directory", path, dir);
  return 0;
}

/* The callbacks the connection layer and ar_models.c answer through. */
static void server_reply(ar_server_t *srv, const ar_reply_to_t *to, Arenad__Response *resp) {
  ar_server_reply(srv, to, resp);
}

static void server_reply_error(ar_server_t *srv, const ar_reply_to_t *to, int err, const char *msg) {
  ar_server_reply_error(srv, to, err, msg);
}

void ar_server_init_ops(ar_server_t *srv) {
  srv->ops.admit = server_admit;
  srv->ops.dispatch = server_dispatch;
  srv->ops.reply = server_reply;
  srv->ops.reply_error = server_reply_error;
  srv->ops.job_done = server_job_done;
  srv->ops.status_changed = ar_server_status;
  srv->ops.reload_done = server_reload_done;
  srv->ops.conn_closed = server_conn_closed;
  srv->ops.conn_gone = ar_models_conn_gone;
}

int ar_server_start(ar_server_t *srv, uv_loop_t *loop, char *msg, size_t msg_bytes) {
  srv->loop = loop;
  ar_server_init_ops(srv);
  srv->start_us = ar_now_us();
  /* The intra-operator pool, before the load thread plans models for it; its threads map their
   * OpenBLAS buffers now rather than in an invoke. */
  int prc = ar_threadpool_new((int32_t)ar_config_threads(&srv->cfg), &srv->tpool, msg, msg_bytes);
  if (prc) return prc;
  ar_interp_warm_threads(srv->tpool);
  if (ar_models_init(srv) != 0) return ar_errf(msg, msg_bytes, AR_EINTERNAL, "cannot start the load thread");
  int rc = ar_pool_init(&srv->pool, srv->cfg.pool_bytes, true, msg, msg_bytes);
  if (rc) return rc;
  uv_pipe_init(loop, &srv->listener, 0);
  srv->listener.data = srv;
  int fd = ar_service_listen_fd();
  srv->listen_fd = fd;
  if (fd >= 0) {
    if ((rc = uv_pipe_open(&srv->listener, fd)) != 0)
      return ar_errf(msg, msg_bytes, AR_EIO, "adopting the passed socket (fd %d): %s", fd, uv_strerror(rc));
    srv->socket_activated = true;
  } else {
    if ((rc = check_socket_dir(srv->cfg.socket_path, msg, msg_bytes)) != 0) return rc;
    if ((rc = clear_stale_socket(srv->cfg.socket_path, msg, msg_bytes)) != 0) return rc;
    mode_t old = umask(0177);   /* no window where the socket is more open than configured */
    rc = uv_pipe_bind(&srv->listener, srv->cfg.socket_path);
    umask(old);
    if (rc != 0)
      return ar_errf(msg, msg_bytes, AR_EIO, "bind %s: %s", srv->cfg.socket_path, uv_strerror(rc));
    srv->unlink_socket = true;
    if (chmod(srv->cfg.socket_path, srv->cfg.socket_mode) != 0)
      return ar_errf(msg, msg_bytes, AR_EIO, "chmod %o %s: %s", srv->cfg.socket_mode, srv->cfg.socket_path,
                     strerror(errno));
    if (srv->cfg.socket_group[0]) {
      struct group *gr = getgrnam(srv->cfg.socket_group);
      if (gr == NULL)
        return ar_errf(msg, msg_bytes, AR_ECONFIG, "socket_group: no group named '%s'", srv->cfg.socket_group);
      if (chown(srv->cfg.socket_path, (uid_t)-1, gr->gr_gid) != 0)
        return ar_errf(msg, msg_bytes, AR_EIO, "chown :%s %s: %s", srv->cfg.socket_group, srv->cfg.socket_path,
                       strerror(errno));
    }
  }
  if ((rc = uv_listen((uv_stream_t *)&srv->listener, 128, on_connection)) != 0)
    return ar_errf(msg, msg_bytes, AR_EIO, "listen on %s: %s", srv->cfg.socket_path, uv_strerror(rc));
  srv->listening = true;
  if ((rc = ar_metrics_start(srv, msg, msg_bytes)) != 0) return rc;
  ar_conn_timers_start(srv);
  uv_idle_init(loop, &srv->busy_poll);
  srv->busy_poll.data = srv;
  srv->busy_poll_init = true;

  uv_signal_init(loop, &srv->sig_term);
  uv_signal_init(loop, &srv->sig_int);
  uv_signal_init(loop, &srv->sig_hup);
  srv->sig_term.data = srv->sig_int.data = srv->sig_hup.data = srv;
  uv_signal_start(&srv->sig_term, on_signal, SIGTERM);
  uv_signal_start(&srv->sig_int, on_signal, SIGINT);
  uv_signal_start(&srv->sig_hup, on_signal, SIGHUP);
  uint64_t wd = ar_service_watchdog_usec();
  if (wd > 0) {
    uv_timer_init(loop, &srv->watchdog);
    uint64_t every_ms = wd / 2000 ? wd / 2000 : 1;
    uv_timer_start(&srv->watchdog, on_watchdog, every_ms, every_ms);
    srv->watchdog_on = true;
  }
  return 0;
}

void ar_server_load_configured(ar_server_t *srv) {
  srv->config_loads_pending++;
  ar_models_load_initial(srv);
  if (--srv->config_loads_pending == 0) notify_ready(srv);
}

void ar_server_stop(ar_server_t *srv) {
  ar_models_shutdown(srv);
  ar_conn_free_uids(srv);
  ar_pool_close(&srv->pool);
  ar_threadpool_free(srv->tpool);
  srv->tpool = NULL;
  if (srv->unlink_socket) unlink(srv->cfg.socket_path);
  ar_metrics_free(srv);
}
