/* ar_server.c - arenad's event loop side: the listening Unix socket, connections, framing,
 * request decoding and dispatch, replies, signals (drain, reload), the watchdog timer.
 *
 * Framing: each message is a 4-byte little-endian length and that many bytes of a protobuf
 * Request (proto/arenad.proto). A connection's bytes accumulate in its read buffer; complete
 * frames are decoded once here and handed to ar_models.c (which validates the body at the
 * boundary) or answered directly. Every request gets exactly one Response with its id; requests
 * answered later (load, unload, invoke) hold a reference on the connection so that a client that
 * hangs up early never leaves a dangling pointer in a job.
 */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "common/ar_util.h"
#include "daemon/ar_daemon.h"
#include "daemon/ar_server.h"
#include "daemon/ar_service.h"
#include "interp/ar_budget.h"

/* A connection stops being read while this many of its requests are unanswered (pipelining
 * backpressure); reading resumes below half of it. */
#define AR_CONN_MAX_INFLIGHT 64
#define AR_READ_CHUNK (64 * 1024)

uint64_t ar_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void ar_log(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  fprintf(stderr, "arenad: %s\n", line);
}

/* ------------------------------------------------------------------------------------------ */
/* Connections                                                                                 */

static void conn_unref(ar_conn_t *c) {
  if (--c->refs == 0) {
    free(c->rbuf);
    free(c);
  }
}

static void on_conn_closed(uv_handle_t *h) {
  ar_conn_t *c = h->data;
  ar_server_t *srv = c->srv;
  c->closed = true;
  if (c->prev)
    c->prev->next = c->next;
  else
    srv->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  srv->n_conns--;
  conn_unref(c);
  ar_server_maybe_finish_drain(srv);
}

static void conn_close(ar_conn_t *c) {
  if (c->closed || uv_is_closing((uv_handle_t *)&c->pipe)) return;
  c->closing = true;
  uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  ar_conn_t *c = req->data;
  free(req);
  conn_close(c);
}

/* Close after the queued writes are flushed. */
static void conn_shutdown(ar_conn_t *c) {
  if (c->closed || uv_is_closing((uv_handle_t *)&c->pipe)) return;
  bool was_closing = c->closing;
  c->closing = true;
  if (c->reading) uv_read_stop((uv_stream_t *)&c->pipe);
  c->reading = false;
  if (was_closing && c->eof) return;   /* a shutdown is already on its way */
  c->eof = true;
  uv_shutdown_t *req = malloc(sizeof(*req));
  if (req == NULL || uv_shutdown(req, (uv_stream_t *)&c->pipe, on_shutdown) != 0) {
    free(req);
    conn_close(c);
    return;
  }
  req->data = c;
}

typedef struct {
  uv_write_t req;
  ar_conn_t *conn;
  uint8_t *buf;
} write_req_t;

static void on_write(uv_write_t *req, int status) {
  write_req_t *w = (write_req_t *)req;
  ar_conn_t *c = w->conn;
  free(w->buf);
  free(w);
  if (status < 0 && !c->closed) conn_close(c);
  conn_unref(c);
}

static void conn_send(ar_conn_t *c, const Arenad__Response *resp) {
  if (c->closed || uv_is_closing((uv_handle_t *)&c->pipe)) return;
  size_t n = arenad__response__get_packed_size(resp);
  if (n > UINT32_MAX) return;
  write_req_t *w = malloc(sizeof(*w));
  uint8_t *buf = malloc(4 + n);
  if (w == NULL || buf == NULL) {
    free(w);
    free(buf);
    conn_close(c);
    return;
  }
  buf[0] = (uint8_t)n;
  buf[1] = (uint8_t)(n >> 8);
  buf[2] = (uint8_t)(n >> 16);
  buf[3] = (uint8_t)(n >> 24);
  arenad__response__pack(resp, buf + 4);
  w->conn = c;
  w->buf = buf;
  uv_buf_t b = uv_buf_init((char *)buf, (unsigned)(4 + n));
  c->refs++;
  if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1, on_write) != 0) {
    c->refs--;
    free(buf);
    free(w);
    conn_close(c);
  }
}

static void conn_parse(ar_conn_t *c);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void conn_resume(ar_conn_t *c) {
  if (c->reading || c->closing || c->eof || c->srv->draining) return;
  if (uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) == 0) c->reading = true;
}

/* ------------------------------------------------------------------------------------------ */
/* Replies                                                                                     */

void ar_server_status(ar_server_t *srv) {
  char status[256];
  ar_models_status(srv, status, sizeof(status));
  ar_service_status(status);
}

static void notify_ready(ar_server_t *srv) {
  char status[256];
  ar_models_status(srv, status, sizeof(status));
  ar_service_ready(status);
}

void ar_server_reply(ar_server_t *srv, const ar_reply_to_t *to, Arenad__Response *resp) {
  resp->id = to->id;
  ar_conn_t *c = to->conn;
  if (c == NULL) {
    /* An internal request (config at start, reload): the log is its reply. */
    int code = resp->status ? (int)resp->status->code : 0;
    if (code != ARENAD__CODE__OK) ar_log("%s", resp->status->message);
    if (to->reload) {
      ar_models_reload_answered(srv, to, -code, code ? resp->status->message : NULL);
      return;
    }
    if (to->internal_config && --srv->config_loads_pending == 0 && !srv->draining) notify_ready(srv);
    return;
  }
  conn_send(c, resp);
  c->jobs--;
  if (c->eof && c->jobs == 0 && !c->closed) conn_shutdown(c);
  if (!c->reading && !c->parsing && c->jobs <= AR_CONN_MAX_INFLIGHT / 2 && !c->closing && !c->eof) {
    conn_parse(c);   /* frames that arrived while paused; resumes reading below the limit */
  }
  conn_unref(c);
}

void ar_server_reply_error(ar_server_t *srv, const ar_reply_to_t *to, int err, const char *msg) {
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  st.code = (Arenad__Code)(err < 0 ? -err : err);
  char text[AR_MSG_BYTES + 32];
  snprintf(text, sizeof(text), "%s", msg && msg[0] ? msg : ar_strerror(err));
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

/* protobuf-c hands `string` fields over as NUL-terminated char*, so "a\0b" would silently arrive
 * as "a". Walk the frame's wire format (already known to decode) guided by the message
 * descriptors and report the first `string` field whose bytes contain a NUL. `bytes` fields (tensor
 * data) are skipped by their length, never scanned. Returns the field's name or NULL. */
static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *p < end; shift += 7) {
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

static const char *string_with_nul(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                                   int depth) {
  while (p < end) {
    uint64_t key, len;
    if (!read_varint(&p, end, &key)) return NULL;
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3));
    switch (key & 7) {
      case 0:
        if (!read_varint(&p, end, &len)) return NULL;
        break;
      case 1:
        if (end - p < 8) return NULL;
        p += 8;
        break;
      case 5:
        if (end - p < 4) return NULL;
        p += 4;
        break;
      case 2:
        if (!read_varint(&p, end, &len) || len > (uint64_t)(end - p)) return NULL;
        if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p, 0, (size_t)len)) return f->name;
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && depth < 8) {
          const char *bad = string_with_nul(f->descriptor, p, p + len, depth + 1);
          if (bad) return bad;
        }
        p += len;
        break;
      default:
        return NULL;   /* groups: not in arenad.proto, and unpack already accepted the frame */
    }
  }
  return NULL;
}

static void handle_frame(ar_conn_t *c, const uint8_t *data, size_t n) {
  ar_server_t *srv = c->srv;
  srv->requests++;
  ar_reply_to_t to = {.conn = c, .id = 0};
  c->refs++;
  c->jobs++;
  Arenad__Request *req = arenad__request__unpack(NULL, n, data);
  char msg[AR_MSG_BYTES];
  if (req == NULL) {
    snprintf(msg, sizeof(msg), "frame of %zu bytes does not decode as an arenad.Request", n);
    return ar_server_reply_error(srv, &to, AR_EPROTO, msg);
  }
  to.id = req->id;
  const char *nul_field = string_with_nul(&arenad__request__descriptor, data, data + n, 0);
  if (nul_field) {
    snprintf(msg, sizeof(msg), "request %" PRIu64 ": string field '%s' contains a NUL byte", req->id, nul_field);
    arenad__request__free_unpacked(req, NULL);
    return ar_server_reply_error(srv, &to, AR_EPROTO, msg);
  }
  switch (req->body_case) {
    case ARENAD__REQUEST__BODY_PING: {
      Arenad__Response resp = ARENAD__RESPONSE__INIT;
      Arenad__PingResponse body = ARENAD__PING_RESPONSE__INIT;
      body.version = (char *)PACKAGE_VERSION;
      body.uptime_us = ar_now_us() - srv->start_us;
      resp.body_case = ARENAD__RESPONSE__BODY_PING;
      resp.ping = &body;
      reply_ok_body(srv, &to, &resp);
      break;
    }
    case ARENAD__REQUEST__BODY_LOAD_MODEL: {
      const Arenad__LoadModelRequest *l = req->load_model;
      ar_models_load(srv, &to, l->name, l->path, l->group, l->strategy);
      break;
    }
    case ARENAD__REQUEST__BODY_UNLOAD_MODEL:
      ar_models_unload(srv, &to, req->unload_model->name);
      break;
    case ARENAD__REQUEST__BODY_LIST_MODELS:
      handle_list(srv, &to);
      break;
    case ARENAD__REQUEST__BODY_INVOKE:
      ar_models_invoke(srv, &to, req);
      req = NULL;   /* owned by the invoke job (or freed by it on a validation error) */
      break;
    case ARENAD__REQUEST__BODY_GET_STATS: {
      char *s = ar_models_stats_json(srv);
      if (s == NULL) {
        ar_server_reply_error(srv, &to, AR_ENOMEM, "no memory for the stats");
        break;
      }
      Arenad__Response resp = ARENAD__RESPONSE__INIT;
      Arenad__GetStatsResponse body = ARENAD__GET_STATS_RESPONSE__INIT;
      body.json = s;
      resp.body_case = ARENAD__RESPONSE__BODY_GET_STATS;
      resp.get_stats = &body;
      reply_ok_body(srv, &to, &resp);
      free(s);
      break;
    }
    case ARENAD__REQUEST__BODY_GET_PLAN:
      handle_plan(srv, &to, req->get_plan->model);
      break;
    default:
      snprintf(msg, sizeof(msg), "request %" PRIu64 " has no body (expected one of ping, load_model, unload_model, "
               "list_models, invoke, get_stats, get_plan)", req->id);
      ar_server_reply_error(srv, &to, AR_EPROTO, msg);
      break;
  }
  if (req) arenad__request__free_unpacked(req, NULL);
}

/* Decode every complete frame in the read buffer. */
static void conn_parse(ar_conn_t *c) {
  ar_server_t *srv = c->srv;
  size_t pos = 0;
  if (c->parsing) return;
  c->parsing = true;
  c->refs++;   /* a reply below may close the connection */
  while (!c->closing && !c->closed) {
    if (c->jobs >= AR_CONN_MAX_INFLIGHT) {
      if (c->reading) uv_read_stop((uv_stream_t *)&c->pipe);
      c->reading = false;
      break;
    }
    if (c->rlen - pos < 4) break;
    const uint8_t *p = c->rbuf + pos;
    uint32_t len = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    ar_reply_to_t to = {.conn = c, .id = 0};
    char msg[AR_MSG_BYTES];
    if (len == 0) {
      srv->requests++;
      c->refs++;
      c->jobs++;
      ar_server_reply_error(srv, &to, AR_EPROTO, "empty frame (length 0): a frame holds one arenad.Request");
      pos += 4;
      continue;
    }
    if (len > srv->cfg.max_frame_bytes) {
      srv->requests++;
      c->refs++;
      c->jobs++;
      snprintf(msg, sizeof(msg), "frame of %" PRIu32 " bytes exceeds max_frame_bytes %" PRIu64 "; closing", len,
               srv->cfg.max_frame_bytes);
      ar_server_reply_error(srv, &to, AR_E2BIG, msg);
      conn_shutdown(c);
      pos = c->rlen;
      break;
    }
    if (c->rlen - pos - 4 < len) break;
    handle_frame(c, p + 4, len);
    pos += 4 + (size_t)len;
  }
  if (pos > 0 && !c->closed) {
    memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
    c->rlen -= pos;
  }
  if (c->rlen == 0 && c->rcap > (1u << 20)) {
    /* Do not keep a large frame's buffer for an idle connection. */
    free(c->rbuf);
    c->rbuf = NULL;
    c->rcap = 0;
  }
  c->parsing = false;
  if (!c->reading && c->jobs < AR_CONN_MAX_INFLIGHT && !c->closed) conn_resume(c);
  conn_unref(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  ar_conn_t *c = h->data;
  size_t want = c->rlen + AR_READ_CHUNK;
  if (c->rlen >= 4) {
    /* Room for the whole pending frame at once when its length is acceptable. */
    const uint8_t *p = c->rbuf;
    uint64_t len = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
    if (len <= c->srv->cfg.max_frame_bytes && 4 + len > want) want = (size_t)(4 + len);
  }
  if (want > c->rcap) {
    uint8_t *nb = realloc(c->rbuf, want);
    if (nb == NULL) {
      *buf = uv_buf_init(NULL, 0);   /* libuv reports UV_ENOBUFS */
      return;
    }
    c->rbuf = nb;
    c->rcap = want;
  }
  *buf = uv_buf_init((char *)c->rbuf + c->rlen, (unsigned)AR_MIN(c->rcap - c->rlen, (size_t)UINT32_MAX));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  ar_conn_t *c = s->data;
  if (nread > 0) {
    c->rlen += (size_t)nread;
    conn_parse(c);
    return;
  }
  if (nread == 0) return;
  uv_read_stop(s);
  c->reading = false;
  if (nread != UV_EOF) {
    conn_close(c);
    return;
  }
  if (c->rlen > 0 && !c->closing) {
    /* The peer half-closed inside a frame: say so, then close. */
    char msg[AR_MSG_BYTES];
    uint64_t want = 0;
    if (c->rlen >= 4)
      want = (uint64_t)c->rbuf[0] | (uint64_t)c->rbuf[1] << 8 | (uint64_t)c->rbuf[2] << 16 |
             (uint64_t)c->rbuf[3] << 24;
    if (c->rlen >= 4)
      snprintf(msg, sizeof(msg), "truncated frame: header announces %" PRIu64 " bytes, the stream ended after %zu",
               want, c->rlen - 4);
    else
      snprintf(msg, sizeof(msg), "truncated frame: the stream ended inside the 4-byte length (%zu bytes)", c->rlen);
    ar_reply_to_t to = {.conn = c, .id = 0};
    c->srv->requests++;
    c->refs++;
    c->jobs++;
    ar_server_reply_error(c->srv, &to, AR_EPROTO, msg);
    c->rlen = 0;
  }
  c->eof = true;
  if (c->jobs == 0) {
    conn_shutdown(c);
  } else {
    /* EOF alone is a half-close: the client still reads its replies. POLLHUP means it closed
     * both directions: nobody will read them, so close now and let queued invokes be dropped. */
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0) {
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP)) conn_close(c);
    }
  }
}

static void on_connection(uv_stream_t *server, int status) {
  ar_server_t *srv = server->data;
  if (status < 0) {
    ar_log("accept: %s", uv_strerror(status));
    return;
  }
  ar_conn_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return;
  c->srv = srv;
  c->refs = 1;
  uv_pipe_init(srv->loop, &c->pipe, 0);
  c->pipe.data = c;
  c->next = srv->conns;
  if (srv->conns) srv->conns->prev = c;
  srv->conns = c;
  srv->n_conns++;
  if (uv_accept(server, (uv_stream_t *)&c->pipe) != 0) {
    conn_close(c);
    return;
  }
  if (srv->draining || srv->n_conns > srv->cfg.max_connections) {
    ar_reply_to_t to = {.conn = c};
    c->refs++;
    c->jobs++;
    char msg[AR_MSG_BYTES];
    snprintf(msg, sizeof(msg), srv->draining ? "daemon is shutting down" : "too many connections (max_connections %u)",
             srv->cfg.max_connections);
    ar_server_reply_error(srv, &to, srv->draining ? AR_ESTATE : AR_EBUSY, msg);
    conn_shutdown(c);
    return;
  }
  conn_resume(c);
}

/* ------------------------------------------------------------------------------------------ */
/* Drain, signals, watchdog                                                                    */

static void on_handle_closed(uv_handle_t *h) { (void)h; }

void ar_server_maybe_finish_drain(ar_server_t *srv) {
  if (!srv->draining) return;
  /* Connections idle now can go; the others go when their last reply is written. */
  for (ar_conn_t *c = srv->conns; c; c = c->next)
    if (c->jobs == 0 && !c->closing) conn_shutdown(c);
  if (srv->jobs_outstanding > 0 || srv->n_conns > 0) return;
  if (!uv_is_closing((uv_handle_t *)&srv->sig_term)) {
    uv_close((uv_handle_t *)&srv->sig_term, on_handle_closed);
    uv_close((uv_handle_t *)&srv->sig_int, on_handle_closed);
    uv_close((uv_handle_t *)&srv->sig_hup, on_handle_closed);
    if (srv->watchdog_on) uv_close((uv_handle_t *)&srv->watchdog, on_handle_closed);
  }
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
  for (ar_conn_t *c = srv->conns; c; c = c->next) {
    if (c->reading) uv_read_stop((uv_stream_t *)&c->pipe);
    c->reading = false;
    c->eof = true;   /* no new requests; the connection closes after its last reply */
  }
  ar_server_maybe_finish_drain(srv);
}

static void on_signal(uv_signal_t *h, int signum) {
  ar_server_t *srv = h->data;
  if (signum == SIGHUP) {
    ar_server_reload(srv);
    return;
  }
  start_drain(srv, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void on_watchdog(uv_timer_t *t) {
  (void)t;
  ar_service_watchdog();
}

void ar_server_reload(ar_server_t *srv) {
  if (srv->draining) return;
  if (srv->config_path == NULL) {
    ar_log("SIGHUP: started without --config, nothing to reload");
    return;
  }
  ar_config_t *cfg = malloc(sizeof(*cfg));
  char msg[AR_MSG_BYTES];
  if (cfg == NULL) return;
  int rc = ar_config_load(srv->config_path, cfg, msg, sizeof(msg));
  if (rc != 0) {
    ar_log("reload of %s failed, keeping the running configuration: %s", srv->config_path, msg);
    free(cfg);
    return;
  }
  if (srv->reload_cfg) {
    ar_log("SIGHUP: a reload is still in progress; send SIGHUP again after it is done");
    free(cfg);
    return;
  }
  ar_service_reloading();
  ar_log("reload: %s (%u models)", srv->config_path, cfg->n_models);
  if (cfg->pool_bytes != srv->cfg.pool_bytes || strcmp(cfg->socket_path, srv->cfg.socket_path) != 0 ||
      cfg->workers != srv->cfg.workers)
    ar_log("reload: socket, pool_bytes and workers changes take effect at the next restart");
  /* Loads the new and changed models next to the running ones; commits (and notifies READY)
   * only when all of them loaded, else keeps the running configuration. */
  ar_models_apply_config(srv, cfg);
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

int ar_server_start(ar_server_t *srv, uv_loop_t *loop, char *msg, size_t msg_bytes) {
  srv->loop = loop;
  srv->start_us = ar_now_us();
  ar_models_init(srv);
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
  ar_pool_close(&srv->pool);
  if (srv->unlink_socket) unlink(srv->cfg.socket_path);
}
