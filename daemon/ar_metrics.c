/* ar_metrics.c - the scrape endpoint (metrics_listen), see ar_metrics.h.
 *
 * Each connection is a stream handle (TCP or Unix) and one timer, both closed together; the
 * connection is freed when both close callbacks ran. Its request head is read into a fixed buffer
 * inside the connection; the answer (head and body) is one malloc'd block written once, after
 * which the connection closes. The body is the stats JSON the daemon answers GetStats with,
 * rendered by common/ar_prom.c.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "common/ar_prom.h"
#include "daemon/ar_metrics.h"

typedef struct mconn {
  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } h;
  uv_timer_t timer;
  uv_write_t wr;
  uv_shutdown_t sd;
  struct ar_metrics *m;
  int open_handles;              /* closed when 0: unlinked and freed */
  bool closing, answered;
  bool lingering;                /* answered and shut down for writing: reading what the client
                                  * still sends until its end, so the close does not reset it */
  bool waiting, head_only;       /* a /metrics request waiting for the stats snapshot */
  char *out;                     /* the answer being written */
  size_t len;
  char req[AR_METRICS_REQUEST_BYTES];
  struct mconn *prev, *next;
} mconn_t;

struct ar_metrics {
  ar_server_t *srv;
  ar_listen_addr_t addr;
  union {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } listener;
  bool listening, unlink_path;
  mconn_t *conns;
  uint32_t n_conns;
  /* The last body rendered, reused for stats_refresh_ms while the snapshot is the same one: a
   * scraper flooding the endpoint costs a copy per scrape, not a JSON document and its rendering. */
  char *body;
  size_t body_len;
  uint64_t body_us, body_snap_us;
  const ar_snapshot_t *body_snap;
};

static void conn_freed(uv_handle_t *h) {
  mconn_t *c = h->data;
  if (--c->open_handles > 0) return;
  if (c->prev) c->prev->next = c->next;
  else c->m->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  c->m->n_conns--;
  free(c->out);
  free(c);
}

static void conn_close(mconn_t *c) {
  if (c->closing) return;
  c->closing = true;
  uv_close(&c->h.handle, conn_freed);
  uv_close((uv_handle_t *)&c->timer, conn_freed);
}

static void on_timeout(uv_timer_t *t) { conn_close(t->data); }

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

/* The answer is out and the write side shut: read (and drop) what the client still sends until
 * its end or AR_METRICS_LINGER_MS, then close. Closing with unread bytes makes the kernel send a
 * reset, which can destroy the answer before the client reads it (a 431 to a client still
 * sending its head). */
static void on_shutdown(uv_shutdown_t *r, int status) {
  mconn_t *c = r->data;
  if (c->closing) return;
  if (status != 0) return conn_close(c);
  c->lingering = true;
  c->len = 0;
  uv_timer_start(&c->timer, on_timeout, AR_METRICS_LINGER_MS, 0);
  if (uv_read_start(&c->h.stream, on_alloc, on_read) != 0) conn_close(c);
}

static void on_written(uv_write_t *w, int status) {
  mconn_t *c = w->data;
  if (c->closing) return;
  if (status != 0) return conn_close(c);
  c->sd.data = c;
  if (uv_shutdown(&c->sd, &c->h.stream, on_shutdown) != 0) conn_close(c);
}

/* The body for 200: the stats JSON of `snap` rendered as exposition text; NULL on no memory. */
static char *render(ar_server_t *srv, const ar_snapshot_t *snap, size_t *len) {
  char *js = ar_models_stats_json(srv, snap);
  json_t *root = js ? json_loads(js, 0, NULL) : NULL;
  free(js);
  char *text = NULL;
  size_t n = 0;
  FILE *f = root ? open_memstream(&text, &n) : NULL;
  char msg[AR_MSG_BYTES];
  int rc = f ? ar_prom_write(root, f, msg, sizeof(msg)) : AR_ENOMEM;
  if (f && fclose(f) != 0) rc = AR_EIO;
  json_decref(root);
  if (rc != 0) {
    free(text);
    return NULL;
  }
  *len = n;
  return text;
}

static void answer(mconn_t *c, int status, const char *reason, const char *extra_header, const char *body,
                   size_t body_len, bool head_only) {
  static const char *const plain = "text/plain; charset=utf-8";
  const char *type = status == 200 ? "text/plain; version=0.0.4; charset=utf-8" : plain;
  char head[384];
  int hn = snprintf(head, sizeof(head),
                    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
                    status, reason, type, body_len, extra_header ? extra_header : "");
  size_t send_body = head_only ? 0 : body_len;
  c->out = malloc((size_t)hn + send_body + 1);
  c->answered = true;
  uv_read_stop(&c->h.stream);
  if (c->out == NULL) return conn_close(c);
  memcpy(c->out, head, (size_t)hn);
  if (send_body) memcpy(c->out + hn, body, send_body);
  c->len = (size_t)hn + send_body;
  uv_buf_t b = uv_buf_init(c->out, (unsigned)c->len);
  c->wr.data = c;
  if (uv_write(&c->wr, &c->h.stream, &b, 1, on_written) != 0) conn_close(c);
}

static void answer_text(mconn_t *c, int status, const char *reason, const char *extra_header, bool head_only) {
  char body[128];
  int n = snprintf(body, sizeof(body), "%d %s\n", status, reason);
  answer(c, status, reason, extra_header, body, (size_t)n, head_only);
}

static void answer_metrics(mconn_t *c, const ar_snapshot_t *snap) {
  struct ar_metrics *m = c->m;
  const uint64_t now = ar_now_us();
  if (m->body == NULL || m->body_snap != snap || m->body_snap_us != snap->taken_us ||
      now - m->body_us >= (uint64_t)m->srv->cfg.stats_refresh_ms * 1000) {
    size_t n = 0;
    char *text = render(m->srv, snap, &n);
    if (text == NULL) return answer_text(c, 500, "Internal Server Error", NULL, c->head_only);
    free(m->body);
    m->body = text;
    m->body_len = n;
    m->body_us = now;
    m->body_snap = snap;
    m->body_snap_us = snap->taken_us;
  }
  answer(c, 200, "OK", NULL, m->body, m->body_len, c->head_only);
}

/* The request head is complete (req[0..len) up to its empty line): answer it. */
static void handle(mconn_t *c) {
  char *eol = memchr(c->req, '\n', c->len);
  size_t line_len = (size_t)(eol - c->req);
  if (line_len > 0 && c->req[line_len - 1] == '\r') line_len--;
  char line[512];
  if (line_len >= sizeof(line)) return answer_text(c, 414, "URI Too Long", NULL, false);
  memcpy(line, c->req, line_len);
  line[line_len] = '\0';
  /* METHOD SP TARGET SP HTTP/1.x (RFC 9112 section 3) */
  char *sp1 = strchr(line, ' ');
  char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
  if (sp1 == NULL || sp2 == NULL || strchr(sp2 + 1, ' ') || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 ||
      strlen(sp2 + 1) != 8 || !isdigit((unsigned char)sp2[8]))
    return answer_text(c, 400, "Bad Request", NULL, false);
  *sp1 = *sp2 = '\0';
  const char *method = line, *target = sp1 + 1;
  bool head_only = strcmp(method, "HEAD") == 0;
  if (strcmp(method, "GET") != 0 && !head_only)
    return answer_text(c, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n", false);
  size_t path_len = strcspn(target, "?");
  if (path_len != 8 || strncmp(target, "/metrics", 8) != 0) return answer_text(c, 404, "Not Found", NULL, head_only);
  const ar_snapshot_t *snap = NULL;
  if (ar_stats_fresh_snapshot(c->m->srv, &snap) != 0)
    return answer_text(c, 500, "Internal Server Error", NULL, head_only);
  c->head_only = head_only;
  if (snap == NULL) {   /* a walk is under way: ar_metrics_snapshot_ready answers */
    c->waiting = true;
    uv_read_stop(&c->h.stream);   /* the scraper's half-close must not close it meanwhile */
    return;
  }
  answer_metrics(c, snap);
}

void ar_metrics_snapshot_ready(ar_server_t *srv) {
  struct ar_metrics *m = srv->metrics;
  if (m == NULL || srv->stats_snap == NULL) return;
  for (mconn_t *c = m->conns; c; c = c->next) {
    if (!c->waiting || c->closing) continue;
    c->waiting = false;
    answer_metrics(c, srv->stats_snap);
  }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  mconn_t *c = h->data;
  /* One byte short of the buffer: a head that fills it is too large. */
  *buf = uv_buf_init(c->req + c->len, (unsigned)(sizeof(c->req) - 1 - c->len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  mconn_t *c = s->data;
  if (c->closing) return;
  if (c->lingering) {   /* dropped: the answer is out */
    if (nread < 0) conn_close(c);
    c->len = 0;
    return;
  }
  if (c->answered || c->waiting) return;
  if (nread < 0) return conn_close(c);
  c->len += (size_t)nread;
  c->req[c->len] = '\0';
  /* A NUL byte has no place in a head (RFC 9112 section 2.2): refused now rather than left to
   * the timeout (the searches below would stop at it). */
  if (memchr(c->req, '\0', c->len)) return answer_text(c, 400, "Bad Request", NULL, false);
  /* The head ends with an empty line; a request without headers is "GET /metrics HTTP/1.0\r\n\r\n". */
  if (memchr(c->req, '\n', c->len) && (memmem(c->req, c->len, "\r\n\r\n", 4) || memmem(c->req, c->len, "\n\n", 2)))
    return handle(c);
  if (c->len >= sizeof(c->req) - 1) answer_text(c, 431, "Request Header Fields Too Large", NULL, false);
}

static void on_connection(uv_stream_t *listener, int status) {
  struct ar_metrics *m = listener->data;
  if (status != 0) {
    ar_log("metrics_listen: accept: %s", uv_strerror(status));
    return;
  }
  mconn_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return;   /* left in the backlog; the scraper times out */
  c->m = m;
  int rc = m->addr.is_unix ? uv_pipe_init(listener->loop, &c->h.pipe, 0) : uv_tcp_init(listener->loop, &c->h.tcp);
  if (rc != 0) {
    free(c);
    return;
  }
  c->h.handle.data = c;
  uv_timer_init(listener->loop, &c->timer);
  c->timer.data = c;
  c->open_handles = 2;
  c->next = m->conns;
  if (m->conns) m->conns->prev = c;
  m->conns = c;
  m->n_conns++;
  if (uv_accept(listener, &c->h.stream) != 0) return conn_close(c);
  if (m->srv->draining) return conn_close(c);
  if (m->n_conns > AR_METRICS_MAX_CONNS) {
    /* Full: the oldest connection still sending its head (the list is newest first) makes room, so
     * slow or idle connections cannot keep the scraper out; else this one is closed. */
    mconn_t *victim = NULL;
    for (mconn_t *o = m->conns; o; o = o->next)
      if (o != c && !o->closing && ((!o->answered && !o->waiting) || o->lingering)) victim = o;
    if (victim == NULL) return conn_close(c);
    conn_close(victim);
  }
  uv_timer_start(&c->timer, on_timeout, AR_METRICS_TIMEOUT_MS, 0);
  if (uv_read_start(&c->h.stream, on_alloc, on_read) != 0) conn_close(c);
}

/* Like the daemon's own socket: refuse a live one, replace a stale one. */
static int unix_bind(struct ar_metrics *m, char *msg, size_t msg_bytes) {
  const char *path = m->addr.path;
  const ar_config_t *cfg = &m->srv->cfg;
  struct stat st;
  if (lstat(path, &st) == 0) {
    if (!S_ISSOCK(st.st_mode))
      return ar_errf(msg, msg_bytes, AR_EEXIST, "metrics_listen: %s exists and is not a socket", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
      close(fd);
      return ar_errf(msg, msg_bytes, AR_EEXIST, "metrics_listen: another process is listening on %s", path);
    }
    if (fd >= 0) close(fd);
    unlink(path);
  }
  mode_t old = umask(0177);
  int rc = uv_pipe_bind(&m->listener.pipe, path);
  umask(old);
  if (rc != 0) return ar_errf(msg, msg_bytes, AR_EIO, "metrics_listen: bind %s: %s", path, uv_strerror(rc));
  m->unlink_path = true;
  if (chmod(path, cfg->socket_mode) != 0)
    return ar_errf(msg, msg_bytes, AR_EIO, "metrics_listen: chmod %o %s: %s", cfg->socket_mode, path, strerror(errno));
  if (cfg->socket_group[0]) {
    /* Only when the group differs: arenad.service forbids chown (SystemCallFilter ~@privileged),
     * and there the socket is made by the arenad user, already of group arenad. */
    struct group *gr = getgrnam(cfg->socket_group);
    if (gr && stat(path, &st) == 0 && st.st_gid == gr->gr_gid) return 0;
    if (gr == NULL || chown(path, (uid_t)-1, gr->gr_gid) != 0)
      return ar_errf(msg, msg_bytes, AR_EIO, "metrics_listen: chown :%s %s: %s", cfg->socket_group, path,
                     gr ? strerror(errno) : "no such group");
  }
  return 0;
}

static bool is_loopback(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
  if (ss->ss_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
  return false;
}

int ar_metrics_start(ar_server_t *srv, char *msg, size_t msg_bytes) {
  if (srv->cfg.metrics_listen[0] == '\0') return 0;
  struct ar_metrics *m = calloc(1, sizeof(*m));
  if (m == NULL) return ar_errf(msg, msg_bytes, AR_ENOMEM, "metrics_listen: no memory");
  m->srv = srv;
  srv->metrics = m;
  int rc = ar_config_parse_listen("metrics_listen", srv->cfg.metrics_listen, &m->addr, msg, msg_bytes);
  if (rc != 0) return rc;
  if (!m->addr.is_unix && !is_loopback(&m->addr.sa))
    ar_log("metrics_listen %s: not a loopback address: the stats (model names and paths, sha256, counters) are "
           "served without authentication to every host that reaches it", srv->cfg.metrics_listen);
  if (m->addr.is_unix) {
    uv_pipe_init(srv->loop, &m->listener.pipe, 0);
  } else {
    uv_tcp_init(srv->loop, &m->listener.tcp);
  }
  m->listener.handle.data = m;
  m->listening = true;   /* the handle is open from here: ar_metrics_close closes it */
  if (m->addr.is_unix) {
    if ((rc = unix_bind(m, msg, msg_bytes)) != 0) return rc;
  } else if ((rc = uv_tcp_bind(&m->listener.tcp, (const struct sockaddr *)&m->addr.sa,
                               m->addr.sa.ss_family == AF_INET6 ? UV_TCP_IPV6ONLY : 0)) != 0) {
    return ar_errf(msg, msg_bytes, AR_EIO, "metrics_listen: bind %s: %s", srv->cfg.metrics_listen, uv_strerror(rc));
  }
  if ((rc = uv_listen(&m->listener.stream, 16, on_connection)) != 0)
    return ar_errf(msg, msg_bytes, AR_EIO, "metrics_listen: listen on %s: %s", srv->cfg.metrics_listen,
                   uv_strerror(rc));
  if (m->addr.is_unix)
    ar_log("metrics: GET /metrics on Unix socket %s", m->addr.path);
  else
    ar_log("metrics: http://%s/metrics", srv->cfg.metrics_listen);
  return 0;
}

static void on_listener_closed(uv_handle_t *h) { (void)h; }

void ar_metrics_close(ar_server_t *srv) {
  struct ar_metrics *m = srv->metrics;
  if (m == NULL) return;
  if (m->listening) {
    uv_close(&m->listener.handle, on_listener_closed);
    m->listening = false;
  }
  for (mconn_t *c = m->conns; c; c = c->next) conn_close(c);
}

void ar_metrics_free(ar_server_t *srv) {
  struct ar_metrics *m = srv->metrics;
  if (m == NULL) return;
  if (m->unlink_path) unlink(m->addr.path);
  free(m->body);
  free(m);
  srv->metrics = NULL;
}
