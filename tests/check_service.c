/* check_service.c - arenad under a (simulated) service manager, as systemd would run it:
 *   - notify: $NOTIFY_SOCKET is a datagram socket the test owns; the daemon must send READY=1 with
 *     a STATUS= line once its configured model is loaded, WATCHDOG=1 pings when WATCHDOG_USEC asks
 *     for them, and STOPPING=1 on SIGTERM, then exit 0.
 *   - socket activation: the test binds and listens on a socket, passes it as fd 3 with
 *     LISTEN_FDS=1/LISTEN_PID=<daemon pid>; the daemon must serve a Ping on that socket and must not
 *     create its configured socket path.
 *   - readiness: an Invoke of a configured model still loading is EAGAIN "is loading" and READY=1
 *     waits for the load; SIGTERM is not held up by a load in progress beyond drain_timeout_ms.
 * The daemon binary is the build's arenad ($AR_BUILDDIR/arenad). Without --with-systemd the service
 * calls are no-ops by design, so the suite is skipped (exit 77).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/arenad.pb-c.h"
#include "tests/ar_test_util.h"

#ifdef HAVE_SYSTEMD

/* Liveness bound for waits (not a speed assertion): long enough for a loaded CI machine. */
#define WAIT_MS 60000

static char tmpdir[128];
static char cfg_path[256], sock_path[256], notify_path[256], act_path[256];

static void setup(void) {
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_service.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
  snprintf(cfg_path, sizeof(cfg_path), "%s/arenad.json", tmpdir);
  snprintf(sock_path, sizeof(sock_path), "%s/arenad.sock", tmpdir);
  snprintf(notify_path, sizeof(notify_path), "%s/notify.sock", tmpdir);
  snprintf(act_path, sizeof(act_path), "%s/activated.sock", tmpdir);
  char model[1024];
  ar_test_model_path(model, sizeof(model), "face_detection_short_range");
  FILE *f = fopen(cfg_path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f,
          "{\"socket\": \"%s\", \"pool_bytes\": \"16M\", \"workers\": 1,\n"
          " \"models\": [{\"name\": \"face\", \"path\": \"%s\", \"group\": \"people\"}]}\n",
          sock_path, model);
  fclose(f);
}

static void teardown(void) {
  unlink(cfg_path);
  unlink(sock_path);
  unlink(notify_path);
  unlink(act_path);
  rmdir(tmpdir);
}

static const char *arenad_path(void) {
  static char path[1024];
  const char *b = getenv("AR_BUILDDIR");
  snprintf(path, sizeof(path), "%s/arenad", b && *b ? b : AR_BUILDDIR);
  return path;
}

static void fill_sun(struct sockaddr_un *sa, const char *path) {
  memset(sa, 0, sizeof(*sa));
  sa->sun_family = AF_UNIX;
  size_t n = strlen(path);
  ck_assert_uint_lt(n, sizeof(sa->sun_path));
  memcpy(sa->sun_path, path, n + 1);
}

/* Start arenad. listen_fd >= 0: pass it as fd 3 (socket activation). notify: set NOTIFY_SOCKET and
 * ask for a watchdog every watchdog_usec. */
static pid_t spawn_arenad(int listen_fd, const char *notify, uint64_t watchdog_usec) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    char buf[32];
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_PID");
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    if (listen_fd >= 0) {
      if (listen_fd != 3) {
        if (dup2(listen_fd, 3) < 0) _exit(126);
        close(listen_fd);
      } else {
        fcntl(3, F_SETFD, 0);  /* dup2 clears CLOEXEC; same-fd case needs it explicitly */
      }
      snprintf(buf, sizeof(buf), "%d", (int)getpid());
      setenv("LISTEN_PID", buf, 1);
      setenv("LISTEN_FDS", "1", 1);
    }
    if (notify != NULL) setenv("NOTIFY_SOCKET", notify, 1);
    if (watchdog_usec > 0) {
      snprintf(buf, sizeof(buf), "%llu", (unsigned long long)watchdog_usec);
      setenv("WATCHDOG_USEC", buf, 1);
      snprintf(buf, sizeof(buf), "%d", (int)getpid());
      setenv("WATCHDOG_PID", buf, 1);
    }
    char *const av[] = {"arenad", "--config", cfg_path, "--foreground", NULL};
    ar_test_execv(arenad_path(), av);
    _exit(127);
  }
  return pid;
}

/* Wait for the child; returns its exit status, or -signal. */
static int wait_exit(pid_t pid) {
  int st = 0;
  for (int waited = 0; waited < WAIT_MS; waited += 10) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  ck_abort_msg("arenad did not exit within %d ms of SIGTERM", WAIT_MS);
  return -1;
}

/* Receive notify datagrams until one contains `want` (as a line); returns 1 if seen. All messages
 * received are appended to log (for failure messages). */
static int notify_wait_for(int fd, const char *want, char *log, size_t log_n) {
  char buf[4096];
  for (int waited = 0; waited < WAIT_MS;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, 100);
    waited += 100;
    if (r <= 0) continue;
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) continue;
    buf[n] = '\0';
    size_t used = strlen(log);
    snprintf(log + used, log_n - used, "[%s]", buf);
    for (char *line = strtok(buf, "\n"); line != NULL; line = strtok(NULL, "\n"))
      if (strncmp(line, want, strlen(want)) == 0) return 1;
  }
  return 0;
}

START_TEST(notify_ready_status_watchdog_stopping) {
  int nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(nfd, 0);
  struct sockaddr_un sa;
  fill_sun(&sa, notify_path);
  ck_assert_int_eq(bind(nfd, (struct sockaddr *)&sa, sizeof(sa)), 0);

  pid_t pid = spawn_arenad(-1, notify_path, 200000 /* 200 ms: pings expected every ~100 ms */);
  static char log[65536];
  log[0] = '\0';
  ck_assert_msg(notify_wait_for(nfd, "READY=1", log, sizeof(log)), "no READY=1; got %s", log);
  /* The READY datagram (or one before it) carries a STATUS= line naming the loaded model count. */
  ck_assert_msg(strstr(log, "STATUS=") != NULL, "no STATUS= line; got %s", log);
  ck_assert_msg(notify_wait_for(nfd, "WATCHDOG=1", log, sizeof(log)), "no WATCHDOG=1; got %s", log);
  ck_assert_msg(notify_wait_for(nfd, "WATCHDOG=1", log, sizeof(log)), "only one WATCHDOG=1; got %s", log);
  /* The daemon is serving on its configured socket (no activation here). */
  struct stat st;
  ck_assert_int_eq(stat(sock_path, &st), 0);
  ck_assert(S_ISSOCK(st.st_mode));

  ck_assert_int_eq(kill(pid, SIGTERM), 0);
  ck_assert_msg(notify_wait_for(nfd, "STOPPING=1", log, sizeof(log)), "no STOPPING=1; got %s", log);
  ck_assert_int_eq(wait_exit(pid), 0);
  close(nfd);
}
END_TEST

static int write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, uint8_t *p, size_t n) {
  while (n > 0) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, WAIT_MS) <= 0) return -1;
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* One Ping round trip on a connected socket; returns 0 when a successful PingResponse with id 7
 * and a version string came back. */
static int ping(int fd, char *version, size_t vn) {
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__PingRequest pr = ARENAD__PING_REQUEST__INIT;
  req.id = 7;
  req.body_case = ARENAD__REQUEST__BODY_PING;
  req.ping = &pr;
  uint8_t frame[256];
  size_t len = arenad__request__get_packed_size(&req);
  ck_assert_uint_lt(len + 4, sizeof(frame));
  arenad__request__pack(&req, frame + 4);
  frame[0] = (uint8_t)len;
  frame[1] = (uint8_t)(len >> 8);
  frame[2] = (uint8_t)(len >> 16);
  frame[3] = (uint8_t)(len >> 24);
  if (write_all(fd, frame, len + 4) != 0) return -1;
  uint8_t hdr[4];
  if (read_all(fd, hdr, 4) != 0) return -2;
  uint32_t rlen = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
  if (rlen > 65536) return -3;
  uint8_t *body = malloc(rlen ? rlen : 1);
  if (read_all(fd, body, rlen) != 0) {
    free(body);
    return -4;
  }
  Arenad__Response *resp = arenad__response__unpack(NULL, rlen, body);
  free(body);
  if (resp == NULL) return -5;
  int rc = 0;
  if (resp->id != 7 || (resp->status && resp->status->code != 0) ||
      resp->body_case != ARENAD__RESPONSE__BODY_PING || resp->ping->version == NULL)
    rc = -6;
  else
    snprintf(version, vn, "%s", resp->ping->version);
  arenad__response__free_unpacked(resp, NULL);
  return rc;
}

START_TEST(socket_activation_adopts_passed_listener) {
  int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_ge(lfd, 0);
  struct sockaddr_un sa;
  fill_sun(&sa, act_path);
  ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  ck_assert_int_eq(listen(lfd, 16), 0);

  int nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(nfd, 0);
  struct sockaddr_un na;
  fill_sun(&na, notify_path);
  ck_assert_int_eq(bind(nfd, (struct sockaddr *)&na, sizeof(na)), 0);

  pid_t pid = spawn_arenad(lfd, notify_path, 0);
  close(lfd);  /* the daemon holds the only listening copy now */
  static char log[65536];
  log[0] = '\0';
  ck_assert_msg(notify_wait_for(nfd, "READY=1", log, sizeof(log)), "no READY=1; got %s", log);

  /* Connect through the activated path: systemd's socket, not one the daemon bound. */
  int cfd = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_ge(cfd, 0);
  ck_assert_int_eq(connect(cfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  char version[64] = "";
  int rc = ping(cfd, version, sizeof(version));
  ck_assert_msg(rc == 0, "ping over the activated socket failed (%d)", rc);
  ck_assert_str_eq(version, PACKAGE_VERSION);
  close(cfd);
  /* It adopted the socket instead of binding its configured path. */
  struct stat st;
  ck_assert_msg(stat(sock_path, &st) != 0, "arenad created %s although a socket was passed", sock_path);

  ck_assert_int_eq(kill(pid, SIGTERM), 0);
  ck_assert_int_eq(wait_exit(pid), 0);
  close(nfd);
}
END_TEST

/* Send one Invoke of model "face" (one float32 input [1,128,128,3] of zeros) with id 9 and return the
 * reply's status code (0 = OK, -1 = no reply); `msg` gets its message. */
static int invoke_face(int fd, char *msg, size_t msg_bytes) {
  enum { N = 128 * 128 * 3 };
  static float zeros[N];
  int64_t shape[4] = {1, 128, 128, 3};
  Arenad__Tensor t = ARENAD__TENSOR__INIT;
  t.dtype = 0;
  t.n_shape = 4;
  t.shape = shape;
  t.data.data = (uint8_t *)zeros;
  t.data.len = sizeof(zeros);
  Arenad__Tensor *ts[1] = {&t};
  Arenad__InvokeRequest ir = ARENAD__INVOKE_REQUEST__INIT;
  ir.model = (char *)"face";
  ir.n_inputs = 1;
  ir.inputs = ts;
  Arenad__Request req = ARENAD__REQUEST__INIT;
  req.id = 9;
  req.body_case = ARENAD__REQUEST__BODY_INVOKE;
  req.invoke = &ir;
  size_t len = arenad__request__get_packed_size(&req);
  uint8_t *frame = malloc(len + 4);
  ck_assert_ptr_nonnull(frame);
  arenad__request__pack(&req, frame + 4);
  for (int i = 0; i < 4; i++) frame[i] = (uint8_t)(len >> (8 * i));
  int w = write_all(fd, frame, len + 4);
  free(frame);
  if (w != 0) return -1;
  uint8_t hdr[4];
  if (read_all(fd, hdr, 4) != 0) return -1;
  uint32_t rlen = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
  uint8_t *body = malloc(rlen ? rlen : 1);
  ck_assert_ptr_nonnull(body);
  if (read_all(fd, body, rlen) != 0) {
    free(body);
    return -1;
  }
  Arenad__Response *resp = arenad__response__unpack(NULL, rlen, body);
  free(body);
  if (resp == NULL) return -1;
  int code = resp->status ? (int)resp->status->code : 0;
  snprintf(msg, msg_bytes, "%s", resp->status && resp->status->message ? resp->status->message : "");
  ck_assert_uint_eq(resp->id, 9);
  arenad__response__free_unpacked(resp, NULL);
  return code;
}

static int connect_when_listening(void) {
  struct sockaddr_un sa;
  fill_sun(&sa, sock_path);
  for (int waited = 0; waited < WAIT_MS; waited += 10) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) return fd;
    close(fd);
    usleep(10000);
  }
  ck_abort_msg("arenad did not listen on %s", sock_path);
  return -1;
}

/* Until the configured models are loaded the daemon listens but is not ready: an Invoke of a
 * configured model is answered EAGAIN (21) "model 'face' is loading", retryable, and no READY=1 is
 * sent; once the load is let through (the test gate ARENAD_TEST_LOAD_GATE holds it, so the order is
 * fixed, not timed) READY=1 follows and the same Invoke is served. Failed before: ESTATE (17)
 * "model 'face' is still loading". */
START_TEST(configured_model_loading_is_eagain_until_ready) {
  char gate[300];
  snprintf(gate, sizeof(gate), "%s/gate", tmpdir);
  ck_assert_int_eq(mkfifo(gate, 0600), 0);
  int nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(nfd, 0);
  struct sockaddr_un sa;
  fill_sun(&sa, notify_path);
  ck_assert_int_eq(bind(nfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  ck_assert_int_eq(setenv("ARENAD_TEST_LOAD_GATE", gate, 1), 0);
  pid_t pid = spawn_arenad(-1, notify_path, 0);
  unsetenv("ARENAD_TEST_LOAD_GATE");
  int fd = connect_when_listening();
  char msg[512];
  int code = invoke_face(fd, msg, sizeof(msg));
  ck_assert_msg(code == 21, "invoke while loading: code %d (%s), expected 21 (EAGAIN)", code, msg);
  ck_assert_msg(strstr(msg, "model 'face' is loading") != NULL, "%s", msg);
  /* Not ready while the load is held: nothing with READY=1 has come (the datagrams so far). */
  static char log[65536];
  log[0] = '\0';
  char buf[4096];
  ssize_t n;
  while ((n = recv(nfd, buf, sizeof(buf) - 1, MSG_DONTWAIT)) > 0) {
    buf[n] = '\0';
    ck_assert_msg(strstr(buf, "READY=1") == NULL, "READY=1 before the configured model loaded: %s", buf);
  }
  int gfd = open(gate, O_WRONLY | O_CLOEXEC);
  ck_assert_int_ge(gfd, 0);
  ck_assert_int_eq(write(gfd, "x", 1), 1);
  close(gfd);
  ck_assert_msg(notify_wait_for(nfd, "READY=1", log, sizeof(log)), "no READY=1; got %s", log);
  code = invoke_face(fd, msg, sizeof(msg));
  ck_assert_msg(code == 0, "invoke once ready: code %d (%s)", code, msg);
  close(fd);
  ck_assert_int_eq(kill(pid, SIGTERM), 0);
  ck_assert_int_eq(wait_exit(pid), 0);
  close(nfd);
  unlink(gate);
}
END_TEST

/* SIGTERM while a load is in progress: the drain deadline (drain_timeout_ms 300 here) bounds it.
 * A SIGHUP reload's re-read of the configured model is held at the reload test gate, which nobody
 * opens; the daemon must still exit 0 (the load gives up at the deadline, the reload rolls back).
 * Failed before: the drain waited for the load, so the daemon never exited. */
START_TEST(sigterm_bounds_a_load_in_progress) {
  FILE *f = fopen(cfg_path, "w");
  ck_assert_ptr_nonnull(f);
  char model[1024];
  ar_test_model_path(model, sizeof(model), "face_detection_short_range");
  fprintf(f, "{\"socket\": \"%s\", \"pool_bytes\": \"16M\", \"workers\": 1, \"drain_timeout_ms\": 300,\n"
             " \"models\": [{\"name\": \"face\", \"path\": \"%s\"}]}\n", sock_path, model);
  fclose(f);
  char gate[300];
  snprintf(gate, sizeof(gate), "%s/gate", tmpdir);
  ck_assert_int_eq(mkfifo(gate, 0600), 0);
  int nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(nfd, 0);
  struct sockaddr_un sa;
  fill_sun(&sa, notify_path);
  ck_assert_int_eq(bind(nfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  ck_assert_int_eq(setenv("ARENAD_TEST_RELOAD_GATE", gate, 1), 0);
  pid_t pid = spawn_arenad(-1, notify_path, 0);
  unsetenv("ARENAD_TEST_RELOAD_GATE");
  static char log[65536];
  log[0] = '\0';
  ck_assert_msg(notify_wait_for(nfd, "READY=1", log, sizeof(log)), "no READY=1; got %s", log);
  ck_assert_int_eq(kill(pid, SIGHUP), 0);
  ck_assert_msg(notify_wait_for(nfd, "RELOADING=1", log, sizeof(log)), "no RELOADING=1; got %s", log);
  ck_assert_int_eq(kill(pid, SIGTERM), 0);
  ck_assert_msg(notify_wait_for(nfd, "STOPPING=1", log, sizeof(log)), "no STOPPING=1; got %s", log);
  ck_assert_int_eq(wait_exit(pid), 0);
  close(nfd);
  unlink(gate);
}
END_TEST

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  Suite *s = suite_create("service");
  TCase *tc = tcase_create("systemd");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, notify_ready_status_watchdog_stopping);
  tcase_add_test(tc, socket_activation_adopts_passed_listener);
  tcase_add_test(tc, configured_model_loading_is_eagain_until_ready);
  tcase_add_test(tc, sigterm_bounds_a_load_in_progress);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#else /* !HAVE_SYSTEMD */

int main(void) {
  printf("built without --with-systemd: service calls are no-ops, skipping\n");
  return 77;
}

#endif
