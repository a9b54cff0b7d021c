/* ar_test_daemon.h - helpers for the daemon integration suites: start arenad ($AR_BUILDDIR/arenad)
 * on a socket in a fresh temp directory, wait until it accepts, stop it with SIGTERM and collect
 * its exit status; raw framed I/O for protocol tests. Header-only (static functions), included by
 * tests/check_daemon.c and tests/check_protocol.c.
 */
#ifndef AR_TEST_DAEMON_H
#define AR_TEST_DAEMON_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto/arenad.pb-c.h"
#include "tests/ar_test_util.h"

typedef struct ar_test_daemon {
  pid_t pid;
  char dir[256];
  char socket[300];
  char log[300];
} ar_test_daemon_t;

static inline int ar_td_connect_raw(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  size_t n = strlen(path);
  if (n >= sizeof(sa.sun_path)) n = sizeof(sa.sun_path) - 1;
  memcpy(sa.sun_path, path, n);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) return fd;
  if (fd >= 0) close(fd);
  return -1;
}

/* Start arenad with --foreground on a temp socket plus `extra` arguments (NULL-terminated list,
 * may be NULL). Returns 0 when the socket accepts connections, -1 otherwise (the log is kept). */
static inline int ar_td_start(ar_test_daemon_t *d, const char *pool_bytes, const char *const *extra) {
  memset(d, 0, sizeof(*d));
  snprintf(d->dir, sizeof(d->dir), "/tmp/arenad-test-XXXXXX");
  if (mkdtemp(d->dir) == NULL) return -1;
  snprintf(d->socket, sizeof(d->socket), "%s/arenad.sock", d->dir);
  snprintf(d->log, sizeof(d->log), "%s/arenad.log", d->dir);
  const char *bd = getenv("AR_BUILDDIR");
  char bin[512];
  snprintf(bin, sizeof(bin), "%s/arenad", bd ? bd : AR_BUILDDIR);
  /* LoadModel paths must lie in the daemon's model_dirs: the test models and the temp dir. */
  const char *md = getenv("AR_MODELS_DIR");
  char models_dir[512];
  snprintf(models_dir, sizeof(models_dir), "%s", md && *md ? md : AR_SRCDIR "/models");
  const char *argv[40] = {bin, "--foreground", "--socket", d->socket, "--pool-bytes", pool_bytes,
                          "--model-dir", models_dir, "--model-dir", d->dir};
  int argc = 10;
  for (int i = 0; extra && extra[i] && argc < 38; i++) argv[argc++] = extra[i];
  argv[argc] = NULL;
  d->pid = fork();
  if (d->pid < 0) return -1;
  if (d->pid == 0) {
    FILE *log = fopen(d->log, "w");
    if (log) {
      dup2(fileno(log), 1);
      dup2(fileno(log), 2);
    }
    unsetenv("NOTIFY_SOCKET");
    unsetenv("LISTEN_FDS");
    ar_test_execv(bin, (char *const *)argv);
    _exit(127);
  }
  /* Wait (up to 20 s) for the socket: readiness, not timing, is what the tests depend on. */
  for (int i = 0; i < 2000; i++) {
    int fd = ar_td_connect_raw(d->socket);
    if (fd >= 0) {
      close(fd);
      return 0;
    }
    int st;
    if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
      d->pid = 0;
      return -1;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

/* SIGTERM, wait, remove the temp dir. Returns the exit status (0 = clean drain), or -1 when it
 * died from a signal. */
static inline int ar_td_stop(ar_test_daemon_t *d) {
  int status = -1;
  if (d->pid > 0) {
    kill(d->pid, SIGTERM);
    int st = 0;
    if (waitpid(d->pid, &st, 0) == d->pid) status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (status != 0) {
      /* Show why, for the test log. */
      char cmd[400];
      snprintf(cmd, sizeof(cmd), "cat %s >&2", d->log);
      if (system(cmd) != 0) { /* the log is best effort */ }
    }
  }
  unlink(d->log);
  unlink(d->socket);
  rmdir(d->dir);
  d->pid = 0;
  return status;
}

static inline int ar_td_write_all(int fd, const void *buf, size_t n) {
  const uint8_t *p = buf;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static inline int ar_td_read_all(int fd, void *buf, size_t n) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

/* Send a 4-byte length header and `n` bytes. */
static inline int ar_td_send_frame(int fd, const void *body, uint32_t n) {
  uint8_t h[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
  if (ar_td_write_all(fd, h, 4) != 0) return -1;
  return n ? ar_td_write_all(fd, body, n) : 0;
}

static inline int ar_td_send_request(int fd, const Arenad__Request *req) {
  size_t n = arenad__request__get_packed_size(req);
  uint8_t *buf = malloc(n + 1);
  arenad__request__pack(req, buf);
  int rc = ar_td_send_frame(fd, buf, (uint32_t)n);
  free(buf);
  return rc;
}

/* Read one response frame; NULL on EOF or a bad frame. */
static inline Arenad__Response *ar_td_read_response(int fd) {
  uint8_t h[4];
  if (ar_td_read_all(fd, h, 4) != 0) return NULL;
  uint32_t n = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
  uint8_t *buf = malloc(n ? n : 1);
  if (buf == NULL || ar_td_read_all(fd, buf, n) != 0) {
    free(buf);
    return NULL;
  }
  Arenad__Response *r = arenad__response__unpack(NULL, n, buf);
  free(buf);
  return r;
}

/* True when the peer closed the connection (read returns 0). */
static inline int ar_td_at_eof(int fd) {
  uint8_t b;
  ssize_t r;
  do r = read(fd, &b, 1); while (r < 0 && errno == EINTR);
  return r == 0;
}

/* Ping on a fresh connection; returns 0 when the daemon answered OK. */
static inline int ar_td_ping(const char *socket_path) {
  int fd = ar_td_connect_raw(socket_path);
  if (fd < 0) return -1;
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__PingRequest ping = ARENAD__PING_REQUEST__INIT;
  req.id = 4242;
  req.body_case = ARENAD__REQUEST__BODY_PING;
  req.ping = &ping;
  int rc = ar_td_send_request(fd, &req);
  Arenad__Response *r = rc == 0 ? ar_td_read_response(fd) : NULL;
  rc = (r && r->id == 4242 && r->status && r->status->code == 0 && r->body_case == ARENAD__RESPONSE__BODY_PING) ? 0 : -1;
  if (r) arenad__response__free_unpacked(r, NULL);
  close(fd);
  return rc;
}

#endif /* AR_TEST_DAEMON_H */
