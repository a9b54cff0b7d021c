/* check_signals.c - the daemon's signal contract with requests in flight, against a real arenad:
 *   - SIGHUP re-reads the config and adds, then removes, a model while a client streams invokes of
 *     another model: no request fails, every reply equals the golden, the added model serves.
 *   - SIGTERM with pipelined invokes already accepted: every one is answered OK (drain), then the
 *     daemon exits 0.
 *   - Without --foreground the daemon detaches with its threads: it loads and serves, then stops.
 *   - --pidfile and --log-file of a detached daemon: the pid once listening, a second daemon
 *     refused, the log stamped and reopened at SIGHUP, the pid file removed at exit.
 */
#include "config.h"   /* first: _GNU_SOURCE (struct ucred, SO_PEERCRED), PACKAGE_VERSION */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/ar_client.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_util.h"

/* Golden photo case of a model: input bytes and output 0 (float32). */
typedef struct golden {
  void *input, *output0;
  size_t input_bytes, output0_bytes;
} golden_t;

static void golden_load(golden_t *g, const char *stem) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s/photo/input_0.bin", ar_test_golden_dir(), stem);
  g->input = ar_test_read_file(path, &g->input_bytes);
  ck_assert_msg(g->input != NULL, "cannot read %s", path);
  snprintf(path, sizeof path, "%s/%s/photo/output_0.bin", ar_test_golden_dir(), stem);
  g->output0 = ar_test_read_file(path, &g->output0_bytes);
  ck_assert_msg(g->output0 != NULL, "cannot read %s", path);
}

static void golden_free(golden_t *g) {
  free(g->input);
  free(g->output0);
}

/* Invoke `model` ([1,H,W,3] float32 input) and compare output 0 with the golden. 0 = match. */
static int invoke_matches(ar_client_t *c, const char *model, const golden_t *g, const int64_t *shape,
                          char *msg, size_t msg_bytes) {
  ar_client_tensor_t in = {.dtype = 0, .rank = 4, .data = g->input, .bytes = g->input_bytes};
  for (int i = 0; i < 4; i++) in.dims[i] = shape[i];
  ar_client_result_t res;
  int rc = ar_client_invoke(c, model, &in, 1, &res, msg, msg_bytes);
  if (rc != 0) return rc;
  int bad = res.n_outputs < 1 || res.outputs[0].bytes != g->output0_bytes ||
            ar_test_golden_mismatches(res.outputs[0].data, g->output0, g->output0_bytes / 4, NULL) != 0;
  if (bad) snprintf(msg, msg_bytes, "%s: output 0 differs from the golden", model);
  ar_client_result_free(&res);
  return bad ? -1000 : 0;
}

static void write_config(const char *path, const char *models_json) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\"models\": [%s]}\n", models_json);
  ck_assert_int_eq(fclose(f), 0);
}

/* Wait (up to 60 s) until model `name` is listed (want = 1) or not listed (want = 0). */
static int wait_listed(const char *socket, const char *name, int want) {
  for (int i = 0; i < 600; i++) {
    ar_client_t *c = NULL;
    char msg[512];
    if (ar_client_connect(socket, &c, msg, sizeof msg) == 0) {
      ar_client_model_t *models = NULL;
      size_t n = 0;
      int found = 0;
      if (ar_client_list(c, &models, &n, msg, sizeof msg) == 0) {
        for (size_t k = 0; k < n; k++) found |= strcmp(models[k].name, name) == 0;
        free(models);
        ar_client_close(c);
        if (found == want) return 0;
      } else {
        ar_client_close(c);
      }
    }
    usleep(100 * 1000);
  }
  return -1;
}

typedef struct streamer {
  const char *socket;
  const golden_t *g;
  atomic_int stop;
  atomic_int ok, failed;
  char first_error[600];
} streamer_t;

static const int64_t face_shape[4] = {1, 128, 128, 3};
static const int64_t selfie_shape[4] = {1, 256, 256, 3};

static void *stream_face(void *arg) {
  streamer_t *s = arg;
  ar_client_t *c = NULL;
  char msg[512];
  if (ar_client_connect(s->socket, &c, msg, sizeof msg) != 0) {
    atomic_fetch_add(&s->failed, 1);
    snprintf(s->first_error, sizeof s->first_error, "connect: %s", msg);
    return NULL;
  }
  while (!atomic_load(&s->stop)) {
    int rc = invoke_matches(c, "face", s->g, face_shape, msg, sizeof msg);
    if (rc == 0) {
      atomic_fetch_add(&s->ok, 1);
    } else if (atomic_fetch_add(&s->failed, 1) == 0) {
      snprintf(s->first_error, sizeof s->first_error, "code %d: %s", rc, msg);
    }
  }
  ar_client_close(c);
  return NULL;
}

START_TEST(sighup_adds_and_removes_with_invokes_in_flight) {
  char face_path[1024], selfie_path[1024], models[4096], cfg[400];
  ar_test_model_path(face_path, sizeof face_path, "face_detection_short_range");
  ar_test_model_path(selfie_path, sizeof selfie_path, "selfie_segmentation");
  char dir[] = "/tmp/check_signals_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof cfg, "%s/arenad.json", dir);
  snprintf(models, sizeof models, "{\"name\": \"face\", \"path\": \"%s\"}", face_path);
  write_config(cfg, models);

  ar_test_daemon_t d;
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&d, "64M", extra) == 0, "arenad did not start (log %s)", d.log);
  ck_assert_int_eq(wait_listed(d.socket, "face", 1), 0);

  golden_t face, selfie;
  golden_load(&face, "face_detection_short_range");
  golden_load(&selfie, "selfie_segmentation");
  streamer_t s = {.socket = d.socket, .g = &face};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, stream_face, &s), 0);
  while (atomic_load(&s.ok) + atomic_load(&s.failed) < 20) usleep(10 * 1000);

  /* Add selfie (its own activation region) by config + SIGHUP while face invokes stream. */
  snprintf(models, sizeof models,
           "{\"name\": \"face\", \"path\": \"%s\"}, {\"name\": \"selfie\", \"path\": \"%s\"}",
           face_path, selfie_path);
  write_config(cfg, models);
  ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
  ck_assert_msg(wait_listed(d.socket, "selfie", 1) == 0, "selfie never appeared after SIGHUP");
  ar_client_t *c = NULL;
  char msg[512];
  ck_assert_int_eq(ar_client_connect(d.socket, &c, msg, sizeof msg), 0);
  int rc = invoke_matches(c, "selfie", &selfie, selfie_shape, msg, sizeof msg);
  ck_assert_msg(rc == 0, "selfie invoke after reload: %d %s", rc, msg);
  ar_client_close(c);
  int before_remove = atomic_load(&s.ok);

  /* Remove it again: face keeps serving. */
  snprintf(models, sizeof models, "{\"name\": \"face\", \"path\": \"%s\"}", face_path);
  write_config(cfg, models);
  ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
  ck_assert_msg(wait_listed(d.socket, "selfie", 0) == 0, "selfie still listed after SIGHUP");
  while (atomic_load(&s.ok) < before_remove + 20 && atomic_load(&s.failed) == 0) usleep(10 * 1000);

  atomic_store(&s.stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  ck_assert_msg(atomic_load(&s.failed) == 0, "%d of %d face invokes failed; first: %s",
                atomic_load(&s.failed), atomic_load(&s.ok) + atomic_load(&s.failed), s.first_error);
  ck_assert_int_ge(atomic_load(&s.ok), 40);   /* >= 20 before the first SIGHUP, >= 20 after the second */
  printf("sighup: %d face invokes streamed across two reloads, 0 failed\n", atomic_load(&s.ok));
  ck_assert_int_eq(ar_td_stop(&d), 0);
  golden_free(&face);
  golden_free(&selfie);
  unlink(cfg);
  rmdir(dir);
}
END_TEST

START_TEST(sigterm_drains_pipelined_invokes) {
  /* Every accepted invoke is answered within the drain deadline; the deadline itself (default 5 s,
   * which 40 invokes under ThreadSanitizer or valgrind can exceed) is check_conn's subject. */
  char dir[] = "/tmp/check_signals_XXXXXX", cfg[400];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cfg, sizeof cfg, "%s/arenad.json", dir);
  FILE *cf = fopen(cfg, "w");
  ck_assert_ptr_nonnull(cf);
  fputs("{\"models\": [], \"drain_timeout_ms\": 300000}\n", cf);
  fclose(cf);
  ar_test_daemon_t d;
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&d, "64M", extra) == 0, "arenad did not start (log %s)", d.log);
  char face_path[1024], msg[512];
  ar_test_model_path(face_path, sizeof face_path, "face_detection_short_range");
  ar_client_t *c = NULL;
  ck_assert_int_eq(ar_client_connect(d.socket, &c, msg, sizeof msg), 0);
  ck_assert_msg(ar_client_load(c, "face", face_path, NULL, NULL, NULL, msg, sizeof msg) == 0, "%s", msg);
  ar_client_close(c);

  golden_t face;
  golden_load(&face, "face_detection_short_range");
  int fd = ar_td_connect_raw(d.socket);
  ck_assert_int_ge(fd, 0);
  enum { N = 40 };
  Arenad__Tensor t = ARENAD__TENSOR__INIT;
  int64_t shape[4] = {1, 128, 128, 3};
  t.dtype = ARENAD__DTYPE__FLOAT32;
  t.n_shape = 4;
  t.shape = shape;
  t.data.len = face.input_bytes;
  t.data.data = face.input;
  Arenad__Tensor *inputs[1] = {&t};
  Arenad__InvokeRequest inv = ARENAD__INVOKE_REQUEST__INIT;
  inv.model = "face";
  inv.n_inputs = 1;
  inv.inputs = inputs;
  Arenad__Request req = ARENAD__REQUEST__INIT;
  req.body_case = ARENAD__REQUEST__BODY_INVOKE;
  req.invoke = &inv;
  for (int i = 0; i < N; i++) {
    req.id = 1000 + (uint64_t)i;
    ck_assert_int_eq(ar_td_send_request(fd, &req), 0);
  }
  /* The first reply proves the requests were accepted; then stop the daemon with the rest queued. */
  Arenad__Response *r = ar_td_read_response(fd);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
  int answered = 0, ok = 0;
  unsigned long long seen = 0;   /* ids 1000..1039 as bits */
  for (;;) {
    if (r == NULL) break;
    answered++;
    ck_assert(r->id >= 1000 && r->id < 1000 + N);
    seen |= 1ULL << (r->id - 1000);
    if (r->status && r->status->code == 0 && r->body_case == ARENAD__RESPONSE__BODY_INVOKE &&
        r->invoke->n_outputs >= 1 && r->invoke->outputs[0]->data.len == face.output0_bytes &&
        ar_test_golden_mismatches((const float *)r->invoke->outputs[0]->data.data, face.output0,
                                  face.output0_bytes / 4, NULL) == 0)
      ok++;
    else
      fprintf(stderr, "reply %llu: code %d %s\n", (unsigned long long)r->id,
              r->status ? (int)r->status->code : -1, r->status ? r->status->message : "");
    arenad__response__free_unpacked(r, NULL);
    if (answered == N) break;
    r = ar_td_read_response(fd);
  }
  ck_assert_int_eq(answered, N);
  ck_assert_int_eq(ok, N);
  ck_assert(seen == (1ULL << N) - 1);
  close(fd);
  int st = 0;
  ck_assert_int_eq(waitpid(d.pid, &st, 0), d.pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "arenad exit status %d", st);
  printf("sigterm: %d pipelined invokes answered OK during the drain, exit 0\n", ok);
  unlink(cfg);
  rmdir(dir);
  d.pid = 0;
  ar_td_stop(&d);
  golden_free(&face);
}
END_TEST

/* Started without --foreground (and not by systemd), arenad forks before it starts any thread:
 * the parent exits 0 once the socket listens, and the detached daemon has its load thread (a
 * configured model loads, a LoadModel completes: forking after the threads had started left a
 * daemon whose loads stayed "in progress" for ever) and answers invokes; SIGTERM stops it. */
START_TEST(detached_daemon_loads_and_serves) {
  char dir[] = "/tmp/check_signals_XXXXXX", cfg[400], sock[400], face_path[1024], mdir[1024], log[400], msg[512];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ar_test_model_path(face_path, sizeof face_path, "face_detection_short_range");
  snprintf(mdir, sizeof mdir, "%s", face_path);
  *strrchr(mdir, '/') = '\0';
  snprintf(cfg, sizeof cfg, "%s/arenad.json", dir);
  snprintf(sock, sizeof sock, "%s/arenad.sock", dir);
  snprintf(log, sizeof log, "%s/arenad.log", dir);
  FILE *cf = fopen(cfg, "w");
  ck_assert_ptr_nonnull(cf);
  fprintf(cf, "{\"socket\": \"%s\", \"pool_bytes\": 67108864, \"threads\": 2,\n"
              " \"models\": [{\"name\": \"face\", \"path\": \"%s\"}]}\n", sock, face_path);
  fclose(cf);
  const char *bd = getenv("AR_BUILDDIR");
  char bin[512];
  snprintf(bin, sizeof bin, "%s/arenad", bd ? bd : AR_BUILDDIR);
  char *const argv[] = {bin, "--config", cfg, "--model-dir", mdir, NULL};
  pid_t parent = fork();
  ck_assert_int_ge(parent, 0);
  if (parent == 0) {
    FILE *lf = fopen(log, "w");
    if (lf) {
      dup2(fileno(lf), 1);
      dup2(fileno(lf), 2);
    }
    unsetenv("NOTIFY_SOCKET");
    unsetenv("LISTEN_FDS");
    ar_test_execv(bin, argv);
    _exit(127);
  }
  int st = 0;
  ck_assert_int_eq(waitpid(parent, &st, 0), parent);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "arenad's parent exit status %d", st);
  /* Listening before the parent exited: the first connect succeeds. */
  int fd = ar_td_connect_raw(sock);
  ck_assert_int_ge(fd, 0);
  struct ucred cred;
  socklen_t cl = sizeof cred;
  ck_assert_int_eq(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl), 0);
  close(fd);
  pid_t daemon_pid = cred.pid;
  ck_assert_int_gt(daemon_pid, 0);
  ar_client_t *c = NULL;
  ck_assert_int_eq(ar_client_connect(sock, &c, msg, sizeof msg), 0);
  /* The configured model loads on the load thread (asynchronously after start): wait for it. */
  int listed = 0;
  for (int i = 0; i < 3000 && !listed; i++) {
    ar_client_model_t *ms = NULL;
    size_t n = 0;
    ck_assert_msg(ar_client_list(c, &ms, &n, msg, sizeof msg) == 0, "%s", msg);
    for (size_t j = 0; j < n; j++) listed |= strcmp(ms[j].name, "face") == 0;
    free(ms);
    if (!listed) {
      struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  ck_assert_msg(listed, "the configured model never loaded in the detached daemon (log %s)", log);
  ck_assert_msg(ar_client_load(c, "face2", face_path, NULL, NULL, NULL, msg, sizeof msg) == 0, "%s", msg);
  golden_t face;
  golden_load(&face, "face_detection_short_range");
  const int64_t shape[4] = {1, 128, 128, 3};
  ck_assert_msg(invoke_matches(c, "face", &face, shape, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(invoke_matches(c, "face2", &face, shape, msg, sizeof msg) == 0, "%s", msg);
  ar_client_close(c);
  golden_free(&face);
  ck_assert_int_ne(daemon_pid, parent);   /* the socket listens in the detached process */
  /* Detached, it no longer writes to the streams it was started with (a terminal, here the log
   * file): its standard streams are /dev/null, its log goes to syslog. */
  for (int k = 0; k < 3; k++) {
    char fdp[64], target[256];
    snprintf(fdp, sizeof fdp, "/proc/%d/fd/%d", (int)daemon_pid, k);
    ssize_t tn = readlink(fdp, target, sizeof target - 1);
    ck_assert_msg(tn > 0, "readlink %s: %s", fdp, strerror(errno));
    target[tn] = '\0';
    ck_assert_msg(strcmp(target, "/dev/null") == 0, "the detached daemon's fd %d is %s, not /dev/null", k, target);
  }
  ck_assert_int_eq(kill(daemon_pid, SIGTERM), 0);
  int gone = 0;
  for (int i = 0; i < 3000 && !gone; i++) {
    gone = kill(daemon_pid, 0) != 0 && errno == ESRCH;
    if (!gone) {   /* exited, and not reaped yet by whoever adopted it */
      char sp[64], stat[256] = "";
      snprintf(sp, sizeof sp, "/proc/%d/stat", (int)daemon_pid);
      FILE *sf = fopen(sp, "r");
      if (sf) {
        if (fgets(stat, sizeof stat, sf) == NULL) stat[0] = '\0';
        fclose(sf);
      }
      const char *rp = strrchr(stat, ')');
      gone = rp != NULL && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
    }
    if (!gone) {
      struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  ck_assert_msg(gone, "the detached arenad did not stop on SIGTERM");
  printf("detached: parent exited 0, daemon pid %d loaded face (config) and face2, both match the golden\n",
         (int)daemon_pid);
  unlink(log);
  unlink(cfg);
  rmdir(dir);
}
END_TEST

/* Run arenad with `args` (after the binary; NULL-terminated), its stdout/stderr into `out`; returns
 * the exit status of the process started (the parent that exits once a detached daemon listens). */
static int run_arenad(const char *const *args, const char *out) {
  const char *bd = getenv("AR_BUILDDIR");
  char bin[512];
  snprintf(bin, sizeof bin, "%s/arenad", bd ? bd : AR_BUILDDIR);
  const char *argv[24] = {bin};
  int n = 1;
  for (int i = 0; args[i] && n < 23; i++) argv[n++] = args[i];
  argv[n] = NULL;
  pid_t p = fork();
  ck_assert_int_ge(p, 0);
  if (p == 0) {
    FILE *lf = fopen(out, "w");
    if (lf) {
      dup2(fileno(lf), 1);
      dup2(fileno(lf), 2);
    }
    unsetenv("NOTIFY_SOCKET");
    unsetenv("LISTEN_FDS");
    ar_test_execv(bin, (char *const *)argv);
    _exit(127);
  }
  int st = 0;
  ck_assert_int_eq(waitpid(p, &st, 0), p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp_text(const char *path) {
  size_t n = 0;
  char *t = ar_test_read_file(path, &n);
  if (t == NULL) return NULL;
  char *z = realloc(t, n + 1);
  ck_assert_ptr_nonnull(z);
  z[n] = '\0';
  return z;
}

static long pid_in(const char *path) {
  char *t = slurp_text(path);
  ck_assert_msg(t != NULL, "no pid file %s", path);
  char *end = NULL;
  long pid = strtol(t, &end, 10);
  ck_assert_msg(end && *end == '\n' && end[1] == '\0', "pid file %s holds \"%s\"", path, t);
  free(t);
  return pid;
}

/* A detached daemon with --pidfile and --log-file: its pid (the detached process's, the socket's
 * peer) is in the file when the starting command returns 0; a second daemon with the same file is
 * refused naming that pid; the log lines are in the file, stamped, and after the file is renamed a
 * SIGHUP reopens it; SIGTERM stops the daemon, which removes the pid file. A file a killed daemon
 * left (a pid, no lock) is taken over. Before: neither option existed (exit 2, usage), and a
 * detached daemon wrote its log to syslog only, lost where none runs. */
START_TEST(pidfile_and_log_file_of_a_detached_daemon) {
  char dir[] = "/tmp/check_pidfile_XXXXXX", sock[128], sock2[128], pidf[128], logf[128], rotated[128], out[128],
       want[512];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(sock, sizeof sock, "%s/arenad.sock", dir);
  snprintf(sock2, sizeof sock2, "%s/arenad2.sock", dir);
  snprintf(pidf, sizeof pidf, "%s/arenad.pid", dir);
  snprintf(logf, sizeof logf, "%s/arenad.log", dir);
  snprintf(rotated, sizeof rotated, "%s/arenad.log.1", dir);
  snprintf(out, sizeof out, "%s/out.txt", dir);
  /* The detached daemon becomes this process's child when its parent exits: it can be waited for. */
  ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
  /* A symlink planted where the pid file or the log goes is refused, its target untouched (before:
   * the pid was written over the target). */
  char victim[128], link[128];
  snprintf(victim, sizeof victim, "%s/victim", dir);
  snprintf(link, sizeof link, "%s/planted", dir);
  FILE *vf = fopen(victim, "w");
  ck_assert_ptr_nonnull(vf);
  fputs("precious\n", vf);
  fclose(vf);
  ck_assert_int_eq(symlink(victim, link), 0);
  const char *via_pid[] = {"--socket", sock, "--pool-bytes", "16M", "--pidfile", link, NULL};
  ck_assert_int_ne(run_arenad(via_pid, out), 0);
  char *said = slurp_text(out);
  ck_assert_msg(said && strstr(said, "planted: is a symbolic link: refused"), "%s", said ? said : "(none)");
  free(said);
  const char *via_log[] = {"--socket", sock, "--pool-bytes", "16M", "--log-file", link, NULL};
  ck_assert_int_ne(run_arenad(via_log, out), 0);
  said = slurp_text(out);
  ck_assert_msg(said && strstr(said, "planted: is a symbolic link: refused"), "%s", said ? said : "(none)");
  free(said);
  said = slurp_text(victim);
  ck_assert_str_eq(said, "precious\n");
  free(said);
  unlink(link);
  unlink(victim);
  const char *args[] = {"--socket", sock, "--pool-bytes", "16M", "--pidfile", pidf, "--log-file", logf, NULL};
  ck_assert_int_eq(run_arenad(args, out), 0);
  long pid = pid_in(pidf);
  int fd = ar_td_connect_raw(sock);
  ck_assert_int_ge(fd, 0);
  struct ucred cred;
  socklen_t cl = sizeof cred;
  ck_assert_int_eq(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl), 0);
  close(fd);
  ck_assert_int_eq(cred.pid, pid);   /* the detached daemon's pid, not its parent's */
  /* The line is logged right after the parent is told the socket listens: wait for it. */
  snprintf(want, sizeof want, "Z arenad[%ld]: arenad " PACKAGE_VERSION " listening on %s, pool 16777216 bytes", pid,
           sock);
  char *log = NULL;
  for (int i = 0; i < 2000; i++) {
    free(log);
    log = slurp_text(logf);
    if (log != NULL && strstr(log, want) != NULL) break;
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  ck_assert_msg(log != NULL && strstr(log, want) != NULL, "%s lacks \"%s\": %s", logf, want, log ? log : "(none)");
  ck_assert_msg(log[4] == '-' && log[10] == 'T' && log[23] == 'Z', "no UTC time stamp: %s", log);
  free(log);

  /* The same pid file: refused, naming the holder; the file is left as it was. */
  const char *args2[] = {"--foreground", "--socket", sock2, "--pidfile", pidf, NULL};
  ck_assert_int_eq(run_arenad(args2, out), 1);
  char *text = slurp_text(out);
  snprintf(want, sizeof want, "arenad: --pidfile %s: held by a running arenad (pid %ld): stop it first, or give this "
           "one another --pidfile and --socket\n", pidf, pid);
  ck_assert_str_eq(text, want);
  free(text);
  ck_assert_int_eq(pid_in(pidf), pid);
  ck_assert_int_ne(access(sock2, F_OK), 0);

  /* Log rotation: rename, SIGHUP, the reload's line lands in a new file of the same name. */
  ck_assert_int_eq(rename(logf, rotated), 0);
  ck_assert_int_eq(kill((pid_t)pid, SIGHUP), 0);
  bool reopened = false;
  for (int i = 0; i < 2000 && !reopened; i++) {   /* readiness: the new file has a line */
    char *t = slurp_text(logf);
    reopened = t != NULL && strstr(t, "reload") != NULL;
    free(t);
    if (!reopened) {
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  ck_assert_msg(reopened, "no reload line in a reopened %s after SIGHUP", logf);

  ck_assert_int_eq(kill((pid_t)pid, SIGTERM), 0);
  int st = 0;
  ck_assert_int_eq(waitpid((pid_t)pid, &st, 0), (pid_t)pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "daemon exit status %d", st);
  ck_assert_int_ne(access(pidf, F_OK), 0);   /* removed */
  log = slurp_text(logf);
  snprintf(want, sizeof want, "arenad[%ld]: stopped\n", pid);
  ck_assert_msg(log && strstr(log, want), "%s", log ? log : "(none)");
  free(log);

  /* A stale file (a daemon killed with SIGKILL leaves its pid and no lock): taken over. */
  FILE *f = fopen(pidf, "w");
  ck_assert_ptr_nonnull(f);
  fputs("999999\n", f);
  fclose(f);
  ck_assert_int_eq(run_arenad(args, out), 0);
  long pid2 = pid_in(pidf);
  ck_assert_int_ne(pid2, 999999);
  ck_assert_int_eq(kill((pid_t)pid2, SIGTERM), 0);
  ck_assert_int_eq(waitpid((pid_t)pid2, &st, 0), (pid_t)pid2);
  ck_assert_int_ne(access(pidf, F_OK), 0);
  printf("pidfile: daemon pid %ld in %s, a second start refused, log reopened at SIGHUP, file removed at exit\n", pid,
         pidf);
  unlink(logf);
  unlink(rotated);
  unlink(out);
  unlink(sock);
  rmdir(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("signals");
  TCase *tc = tcase_create("signals");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, sighup_adds_and_removes_with_invokes_in_flight);
  tcase_add_test(tc, sigterm_drains_pipelined_invokes);
  tcase_add_test(tc, detached_daemon_loads_and_serves);
  tcase_add_test(tc, pidfile_and_log_file_of_a_detached_daemon);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
