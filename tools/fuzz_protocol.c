/* fuzz_protocol.c - libFuzzer target for arenad's protocol side: the connection layer (framing,
 * limits, wire scan, budgeted decode, worker decode), request dispatch (ar_server.c) and replies,
 * with a stub model registry whose invokes run on a stub worker (uv_queue_work).
 *
 * Each input is the byte stream one client sends: it is written to a real Unix socket connected
 * to the server's listener, the write side is closed, and the loop runs until the daemon has
 * answered and closed the connection (a hang traps). ASan/UBSan watch everything the daemon does
 * with the bytes. The stub registry knows one model, "face", taking one FLOAT32 input of shape
 * [1,2,2,1] (16 bytes) and answering one output of 16 bytes.
 *
 * Build: `make fuzz_protocol` (needs clang). Seeds, one per request type and a pipelined mix:
 *   AR_FUZZ_PROTOCOL_SEEDS=corpus ./fuzz_protocol -runs=0 corpus
 *   ./fuzz_protocol -max_total_time=600 -max_len=65536 corpus
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "common/ar_error.h"
#include "daemon/ar_conn.h"
#include "daemon/ar_daemon.h"
#include "daemon/ar_server.h"
#include "daemon/ar_service.h"
#include "interp/ar_budget.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* ---- stub registry, service, interpreter ---------------------------------------------------- */

static ar_dmodel_t face_model;

int ar_models_init(ar_server_t *srv) {
  (void)srv;
  return 0;
}
void ar_models_close_handles(ar_server_t *srv) { (void)srv; }
void ar_models_abort_loads(ar_server_t *srv) { (void)srv; }
void ar_models_conn_gone(ar_server_t *srv, const void *conn) { (void)srv, (void)conn; }
bool ar_models_peer_is_admin(const ar_server_t *srv, const ar_reply_to_t *to) {
  (void)srv;
  return to->conn == NULL || to->peer.known;
}
void ar_models_shutdown(ar_server_t *srv) { (void)srv; }
ar_dmodel_t *ar_models_find(ar_server_t *srv, const char *name) {
  (void)srv;
  return strcmp(name, "face") == 0 ? &face_model : NULL;
}
void ar_models_load(ar_server_t *srv, const ar_reply_to_t *to, const char *name, const char *path,
                    const char *group, const char *strategy, const char *weights) {
  (void)name, (void)path, (void)group, (void)strategy, (void)weights;
  srv->ops.reply_error(srv, to, AR_ENOENT, "stub: no model files here");
}
void ar_models_compact(ar_server_t *srv, const ar_reply_to_t *to) {
  srv->ops.reply_error(srv, to, AR_ENOENT, "stub: nothing to compact");
}
/* The intra-operator pool and its warm-up: no kernels here. */
int ar_threadpool_new(int32_t threads, ar_threadpool_t **out, char *msg, size_t msg_bytes) {
  (void)threads, (void)msg, (void)msg_bytes;
  *out = NULL;
  return 0;
}
void ar_threadpool_free(ar_threadpool_t *pool) { (void)pool; }
void ar_interp_warm_threads(ar_threadpool_t *pool) { (void)pool; }
void ar_models_unload(ar_server_t *srv, const ar_reply_to_t *to, const char *name) {
  srv->ops.reply_error(srv, to, AR_ENOENT, strcmp(name, "face") == 0 ? "stub: face stays" : "no such model");
}

typedef struct {
  uv_work_t work;
  ar_server_t *srv;
  ar_reply_to_t to;
  Arenad__Request *req;
  uint8_t out[16];
} stub_job_t;

static void stub_work(uv_work_t *w) {
  stub_job_t *j = w->data;
  const Arenad__Tensor *t = j->req->invoke->inputs[0];
  for (size_t i = 0; i < sizeof(j->out); i++) j->out[i] = (uint8_t)(t->data.data[i] ^ 0x5a);
}

static void stub_after(uv_work_t *w, int status) {
  (void)status;
  stub_job_t *j = w->data;
  ar_server_t *srv = j->srv;
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__InvokeResponse body = ARENAD__INVOKE_RESPONSE__INIT;
  Arenad__Tensor out = ARENAD__TENSOR__INIT;
  Arenad__Tensor *outs[1] = {&out};
  out.data.data = j->out;
  out.data.len = sizeof(j->out);
  body.n_outputs = 1;
  body.outputs = outs;
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_INVOKE;
  resp.invoke = &body;
  srv->jobs_outstanding--;
  srv->ops.reply(srv, &j->to, &resp);
  ar_decode_request_free(j->req, j->to.frame);
  free(j);
  srv->ops.job_done(srv);
}

void ar_models_invoke(ar_server_t *srv, const ar_reply_to_t *to, Arenad__Request *req) {
  const Arenad__InvokeRequest *ir = req->invoke;
  if (strcmp(ir->model, "face") != 0 || ir->n_inputs != 1 || ir->inputs[0]->data.len != 16) {
    ar_decode_request_free(req, to->frame);
    srv->ops.reply_error(srv, to, AR_ESHAPE, "stub: face takes one 16-byte input");
    return;
  }
  stub_job_t *j = calloc(1, sizeof(*j));
  if (j == NULL) __builtin_trap();
  j->srv = srv;
  j->to = *to;
  j->req = req;
  j->work.data = j;
  srv->jobs_outstanding++;
  if (uv_queue_work(srv->loop, &j->work, stub_work, stub_after) != 0) __builtin_trap();
}
void ar_models_get_stats(ar_server_t *srv, const ar_reply_to_t *to) {
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__GetStatsResponse body = ARENAD__GET_STATS_RESPONSE__INIT;
  body.json = (char *)"{}";
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_GET_STATS;
  resp.get_stats = &body;
  srv->ops.reply(srv, to, &resp);
}
bool ar_models_rate_limited(ar_server_t *srv, const ar_reply_to_t *to, const char *what) {
  (void)srv, (void)to, (void)what;
  return false;
}
void ar_models_info(ar_server_t *srv, const ar_dmodel_t *m, Arenad__ModelInfo *info) {
  (void)srv, (void)m, (void)info;
}
void ar_models_info_clear(Arenad__ModelInfo *info) { (void)info; }
void ar_models_status(ar_server_t *srv, char *buf, size_t n) {
  (void)srv;
  snprintf(buf, n, "stub");
}
void ar_models_load_initial(ar_server_t *srv) { (void)srv; }
bool ar_models_apply_config(ar_server_t *srv, ar_config_t *cfg, const ar_reply_to_t *waiter) {
  free(cfg);
  if (waiter) srv->ops.reply_error(srv, waiter, AR_ESTATE, "stub: no reload");
  return true;
}
void ar_models_reload_answered(ar_server_t *srv, const ar_reply_to_t *to, int code, const char *message) {
  (void)srv, (void)to, (void)code, (void)message;
}
int ar_models_check_config(const ar_config_t *cfg, FILE *out, char *msg, size_t msg_bytes) {
  (void)cfg, (void)out, (void)msg, (void)msg_bytes;
  return 0;
}
int ar_service_listen_fd(void) { return -1; }
void ar_service_ready(const char *status) { (void)status; }
void ar_service_status(const char *status) { (void)status; }
void ar_service_stopping(void) {}
void ar_service_reloading(void) {}
void ar_service_watchdog(void) {}
uint64_t ar_service_watchdog_usec(void) { return 0; }
json_t *ar_budget_json(const ar_interp_t *in) {
  (void)in;
  return json_object();
}
int32_t ar_interp_n_inputs(const ar_interp_t *in) {
  (void)in;
  return 1;
}

/* ---- harness -------------------------------------------------------------------------------- */

static uv_loop_t loop;
static ar_server_t *srv;

static void put_frame(FILE *f, const Arenad__Request *req) {
  size_t n = arenad__request__get_packed_size(req);
  uint8_t *buf = malloc(n + 4);
  buf[0] = (uint8_t)n, buf[1] = (uint8_t)(n >> 8), buf[2] = (uint8_t)(n >> 16), buf[3] = (uint8_t)(n >> 24);
  arenad__request__pack(req, buf + 4);
  fwrite(buf, 1, n + 4, f);
  free(buf);
}

/* One seed file per request type, and one with all of them pipelined. */
static void write_seeds(const char *dir) {
  mkdir(dir, 0755);
  Arenad__Request r[8];
  Arenad__PingRequest ping = ARENAD__PING_REQUEST__INIT;
  Arenad__LoadModelRequest load = ARENAD__LOAD_MODEL_REQUEST__INIT;
  Arenad__UnloadModelRequest unload = ARENAD__UNLOAD_MODEL_REQUEST__INIT;
  Arenad__ListModelsRequest list = ARENAD__LIST_MODELS_REQUEST__INIT;
  Arenad__InvokeRequest inv = ARENAD__INVOKE_REQUEST__INIT;
  Arenad__GetStatsRequest stats = ARENAD__GET_STATS_REQUEST__INIT;
  Arenad__GetPlanRequest plan = ARENAD__GET_PLAN_REQUEST__INIT;
  Arenad__Tensor t = ARENAD__TENSOR__INIT;
  Arenad__Tensor *tp = &t;
  int64_t shape[4] = {1, 2, 2, 1};
  static uint8_t zeros[16];
  t.dtype = ARENAD__DTYPE__FLOAT32;
  t.n_shape = 4;
  t.shape = shape;
  t.data.data = zeros;
  t.data.len = 16;
  inv.model = "face";
  inv.n_inputs = 1;
  inv.inputs = &tp;
  load.name = "m";
  load.path = "/nonexistent.tflite";
  unload.name = "face";
  plan.model = "face";
  for (int i = 0; i < 8; i++) {
    arenad__request__init(&r[i]);
    r[i].id = (uint64_t)i + 1;
  }
  r[0].body_case = ARENAD__REQUEST__BODY_PING, r[0].ping = &ping;
  r[1].body_case = ARENAD__REQUEST__BODY_LOAD_MODEL, r[1].load_model = &load;
  r[2].body_case = ARENAD__REQUEST__BODY_UNLOAD_MODEL, r[2].unload_model = &unload;
  r[3].body_case = ARENAD__REQUEST__BODY_LIST_MODELS, r[3].list_models = &list;
  r[4].body_case = ARENAD__REQUEST__BODY_INVOKE, r[4].invoke = &inv;
  r[5].body_case = ARENAD__REQUEST__BODY_GET_STATS, r[5].get_stats = &stats;
  r[6].body_case = ARENAD__REQUEST__BODY_GET_PLAN, r[6].get_plan = &plan;
  /* r[7]: no body */
  static const char *names[8] = {"ping", "load", "unload", "list", "invoke", "stats", "plan", "nobody"};
  char path[4096];
  for (int i = 0; i < 8; i++) {
    snprintf(path, sizeof(path), "%s/seed_%s", dir, names[i]);
    FILE *f = fopen(path, "wb");
    if (f == NULL) continue;
    put_frame(f, &r[i]);
    fclose(f);
  }
  snprintf(path, sizeof(path), "%s/seed_all", dir);
  FILE *f = fopen(path, "wb");
  if (f) {
    for (int i = 0; i < 8; i++) put_frame(f, &r[i]);
    /* A large invoke (decoded on the stub server's worker) and a truncated tail. */
    static uint8_t big[2048];
    t.data.data = big;
    t.data.len = sizeof(big);
    put_frame(f, &r[4]);
    fwrite("\x10\x00\x00\x00\x08", 1, 5, f);
    fclose(f);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *seeds = getenv("AR_FUZZ_PROTOCOL_SEEDS");
  if (seeds) write_seeds(seeds);
  signal(SIGPIPE, SIG_IGN);
  setenv("UV_THREADPOOL_SIZE", "2", 1);
  uv_loop_init(&loop);
  srv = calloc(1, sizeof(*srv));
  ar_config_defaults(&srv->cfg);
  srv->cfg.pool_bytes = 64 * 1024;
  srv->cfg.max_frame_bytes = 1u << 20;
  srv->cfg.max_inflight_per_connection = 4;     /* small, so backpressure paths run */
  srv->cfg.max_pending_reply_bytes = 64 * 1024;
  srv->cfg.max_decode_bytes = 4u << 20;
  srv->cfg.max_queue_per_model = 2;
  srv->decode_inline_bytes = 512;               /* frames above go to a decode worker */
  snprintf(srv->cfg.socket_path, sizeof(srv->cfg.socket_path), "/tmp/fuzz_protocol.%d.sock", (int)getpid());
  face_model.state = AR_MODEL_READY;
  snprintf(face_model.name, sizeof(face_model.name), "face");
  char msg[AR_MSG_BYTES];
  if (ar_server_start(srv, &loop, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "fuzz_protocol: %s\n", msg);
    abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", srv->cfg.socket_path);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) __builtin_trap();
  fcntl(fd, F_SETFL, O_NONBLOCK);
  size_t off = 0;
  bool wr_closed = false, eof = false;
  uint8_t sink[65536];
  /* Write the input, read (and drop) the replies, until the daemon closes the connection. */
  for (int iter = 0; !eof || srv->n_conns > 0; iter++) {
    if (iter > 200000) __builtin_trap();   /* the daemon never finished with this input */
    if (off < size) {
      ssize_t w = send(fd, data + off, size - off, MSG_NOSIGNAL);
      if (w > 0) off += (size_t)w;
      else if (w < 0 && errno != EAGAIN && errno != EINTR) off = size;   /* closed by the daemon */
    }
    if (off >= size && !wr_closed) {
      shutdown(fd, SHUT_WR);
      wr_closed = true;
    }
    for (;;) {
      ssize_t r = recv(fd, sink, sizeof(sink), 0);
      if (r > 0) continue;
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) eof = true;
      break;
    }
    uv_run(&loop, UV_RUN_NOWAIT);
    if (srv->jobs_outstanding > 0 || (eof && srv->n_conns > 0)) usleep(50);
  }
  close(fd);
  return 0;
}
