/* arenad.c - the daemon's main: options, configuration, --check-config, then the event loop.
 *
 *   arenad [--config F] [--socket P] [--pool-bytes N] [--foreground] [--pidfile F] [--log-file F]
 *   arenad --check-config F       validate F, load and plan its models, print the pool layout
 *   arenad --memory-dropin --config F   print the systemd drop-in that bounds the service's memory
 *                                 from F's memory_limit (systemd/arenad-generator runs it)
 *   arenad --version
 *
 * Command-line values override the configuration file. Without --foreground (and when not
 * started by systemd, i.e. no NOTIFY_SOCKET / LISTEN_FDS), arenad detaches after its socket is
 * listening, so that a client started right after the parent exits finds it. --pidfile holds an
 * flock for the daemon's life (a second daemon with the same file is refused) and the pid once it
 * listens; --log-file keeps the log where no syslog runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "common/ar_error.h"
#include "daemon/ar_config.h"
#include "daemon/ar_server.h"
#include "kernels/ar_isa.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: arenad [--config FILE] [--socket PATH] [--pool-bytes N] [--threads N] [--model-dir DIR]...\n"
          "              [--foreground] [--pidfile FILE] [--log-file FILE]\n"
          "       arenad --check-config FILE\n"
          "       arenad --memory-dropin [--config FILE]\n"
          "       arenad --version\n\n"
          "  -c, --config FILE        JSON configuration (socket, pool, workers, models)\n"
          "  -C, --check-config FILE  validate FILE, load and plan its models, print the pool layout\n"
          "  -s, --socket PATH        Unix socket to listen on (overrides the config)\n"
          "  -p, --pool-bytes N       arena pool size, bytes with optional K/M/G (overrides the config)\n"
          "  -t, --threads N          threads one invoke may use, 1..256 (overrides the config's threads;\n"
          "                           default: the online CPUs)\n"
          "  -m, --model-dir DIR      also accept LoadModel paths inside DIR (added to model_dirs)\n"
          "  -f, --foreground         do not detach\n"
          "      --pidfile FILE       write the daemon's pid to FILE once it listens (removed at exit);\n"
          "                           refused while another live arenad holds FILE\n"
          "      --log-file FILE      append the log to FILE (reopened at SIGHUP), not to stderr or\n"
          "                           syslog: a detached daemon's log where no syslog runs\n"
          "      --memory-dropin      print the systemd drop-in (MemoryHigh=, MemoryMax=) for the\n"
          "                           config's memory_limit, then exit\n"
          "  -V, --version            print the version\n");
}

/* Detach, before anything starts a thread (the load thread, the invoke thread pool: a fork keeps
 * only the calling thread, so forking after them left a daemon whose loads never ran). The parent
 * waits on a pipe and exits 0 once the child reports its socket listening (detach_ready), or 1
 * when the child exits without doing so (its error went to stderr). Returns the pipe's write end
 * in the child, -1 on failure. */
static int detach(void) {
  int p[2];
  if (pipe(p) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid > 0) {
    close(p[1]);
    char ok = 0;
    ssize_t n;
    while ((n = read(p[0], &ok, 1)) < 0 && errno == EINTR) {
    }
    _exit(n == 1 && ok == 'R' ? 0 : 1);
  }
  close(p[0]);
  if (setsid() < 0 || chdir("/") != 0) {
    close(p[1]);
    return -1;
  }
  return p[1];
}

static void detach_ready(int fd) {
  if (fd < 0) return;
  ssize_t n;
  while ((n = write(fd, "R", 1)) < 0 && errno == EINTR) {
  }
  close(fd);
}

/* --pidfile: the open, flock'ed file (-1 without one) and its absolute path (the daemon changes
 * to "/" when it detaches). The lock, not the pid written in the file, says whether a daemon holds
 * it: a daemon killed with SIGKILL leaves a file whose lock died with it. The lock belongs to the
 * open file description, which the detached child shares with the parent that exits. */
static int pidfile_fd = -1;
static char pidfile_abs[PATH_MAX];

/* Take `path` for this daemon, or refuse naming the live holder's pid. Returns 0 or -1 (msg). */
static int pidfile_take(const char *path, char *msg, size_t n) {
  if (path[0] == '/') {
    snprintf(pidfile_abs, sizeof(pidfile_abs), "%s", path);
  } else {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == NULL ||
        snprintf(pidfile_abs, sizeof(pidfile_abs), "%s/%s", cwd, path) >= (int)sizeof(pidfile_abs)) {
      (void)ar_errf(msg, n, AR_EIO, "--pidfile %s: path too long", path);
      return -1;
    }
  }
  /* The daemon runs as root: never follow a symlink someone planted there (the pid would be
   * written over its target), and write only into a regular file. */
  int fd = open(pidfile_abs, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW, 0644);
  if (fd < 0) {
    int e = errno;
    (void)ar_errf(msg, n, AR_EIO, "--pidfile %s: %s", pidfile_abs,
                  e == ELOOP ? "is a symbolic link: refused (give the file's own path)" : strerror(e));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    (void)ar_errf(msg, n, AR_EIO, "--pidfile %s: not a regular file: refused", pidfile_abs);
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    char text[32] = "";
    ssize_t got = pread(fd, text, sizeof(text) - 1, 0);
    text[got > 0 ? got : 0] = '\0';
    long pid = strtol(text, NULL, 10);
    close(fd);
    if (e == EWOULDBLOCK && pid > 0)
      (void)ar_errf(msg, n, AR_EIO, "--pidfile %s: held by a running arenad (pid %ld): stop it first, or give this one another "
               "--pidfile and --socket", pidfile_abs, pid);
    else if (e == EWOULDBLOCK)
      (void)ar_errf(msg, n, AR_EIO, "--pidfile %s: held by another arenad that is starting", pidfile_abs);
    else
      (void)ar_errf(msg, n, AR_EIO, "--pidfile %s: flock: %s", pidfile_abs, strerror(e));
    return -1;
  }
  pidfile_fd = fd;
  return 0;
}

/* Write this process's pid (after detaching: the daemon's, not the parent's). */
static int pidfile_write(char *msg, size_t n) {
  if (pidfile_fd < 0) return 0;
  char text[32];
  int len = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
  if (ftruncate(pidfile_fd, 0) != 0 || pwrite(pidfile_fd, text, (size_t)len, 0) != len) {
    (void)ar_errf(msg, n, AR_EIO, "--pidfile %s: %s", pidfile_abs, strerror(errno));
    return -1;
  }
  return 0;
}

/* Remove the file while still holding its lock (a daemon starting meanwhile either fails on the
 * lock or creates a new file), then release it. */
static void pidfile_remove(void) {
  if (pidfile_fd < 0) return;
  unlink(pidfile_abs);
  close(pidfile_fd);
  pidfile_fd = -1;
}

/* Is there a syslog to receive a detached daemon's lines? (Containers and minimal systems often
 * have no /dev/log: syslog(3) then drops every line silently.) */
static bool syslog_available(void) {
  struct stat st;
  return stat("/dev/log", &st) == 0 && S_ISSOCK(st.st_mode);
}

static ar_server_t server;   /* large (the config holds up to 64 model entries) */

static void close_handle(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"config", required_argument, NULL, 'c'},     {"check-config", required_argument, NULL, 'C'},
      {"socket", required_argument, NULL, 's'},     {"pool-bytes", required_argument, NULL, 'p'},
      {"foreground", no_argument, NULL, 'f'},       {"version", no_argument, NULL, 'V'},
      {"help", no_argument, NULL, 'h'},             {"model-dir", required_argument, NULL, 'm'},
      {"memory-dropin", no_argument, NULL, 'M'},    {"threads", required_argument, NULL, 't'},
      {"pidfile", required_argument, NULL, 'P'},    {"log-file", required_argument, NULL, 'L'},
      {NULL, 0, NULL, 0}};
  static char model_dir_abs[AR_CONFIG_MAX_DIRS][PATH_MAX];
  static const char *model_dirs[AR_CONFIG_MAX_DIRS];
  uint32_t n_model_dirs = 0;
  const char *config_path = NULL, *check_path = NULL, *socket_path = NULL, *pidfile = NULL, *log_file = NULL;
  uint64_t pool_bytes = 0;
  uint32_t threads = 0;
  bool foreground = false, memory_dropin = false;
  int c;
  while ((c = getopt_long(argc, argv, "c:C:s:p:t:m:fVh", opts, NULL)) != -1) {
    switch (c) {
      case 'c': config_path = optarg; break;
      case 'C': check_path = optarg; break;
      case 's': socket_path = optarg; break;
      case 'p': {
        /* The same parser and range as the configuration's pool_bytes. */
        char pmsg[AR_MSG_BYTES];
        if (ar_config_parse_size("--pool-bytes", optarg, AR_CONFIG_POOL_MIN, AR_CONFIG_POOL_MAX, &pool_bytes, pmsg,
                                 sizeof(pmsg)) != 0) {
          fprintf(stderr, "arenad: %s\n", pmsg);
          return 2;
        }
        break;
      }
      case 'm':
        /* Absolute now: the daemon changes to "/" when it detaches. */
        if (n_model_dirs >= AR_CONFIG_MAX_DIRS) {
          fprintf(stderr, "arenad: --model-dir: at most %d\n", AR_CONFIG_MAX_DIRS);
          return 2;
        }
        errno = 0;
        if (realpath(optarg, model_dir_abs[n_model_dirs]) == NULL ||
            strlen(model_dir_abs[n_model_dirs]) >= AR_CONFIG_DIR_MAX) {
          fprintf(stderr, "arenad: --model-dir %s: %s\n", optarg,
                  errno ? strerror(errno) : "path too long");
          return 2;
        }
        model_dirs[n_model_dirs] = model_dir_abs[n_model_dirs];
        n_model_dirs++;
        break;
      case 't': {
        char *end = NULL;
        long v = strtol(optarg, &end, 10);
        if (end == optarg || *end || v < 1 || v > AR_CONFIG_THREADS_MAX) {
          fprintf(stderr, "arenad: --threads '%s': a whole number from 1 to %d\n", optarg, AR_CONFIG_THREADS_MAX);
          return 2;
        }
        threads = (uint32_t)v;
        break;
      }
      case 'f': foreground = true; break;
      case 'P': pidfile = optarg; break;
      case 'L': log_file = optarg; break;
      case 'M': memory_dropin = true; break;
      case 'V': {
        char isa[1024];
        ar_isa_report(isa, sizeof isa);
        printf("arenad %s\n%s", PACKAGE_VERSION, isa);
        return 0;
      }
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "arenad: unexpected argument '%s'\n", argv[optind]);
    usage(stderr);
    return 2;
  }

  ar_server_t *srv = &server;
  char msg[AR_MSG_BYTES];
  ar_config_defaults(&srv->cfg);
  const char *cfg_file = check_path ? check_path : config_path;
  if (cfg_file) {
    int rc = ar_config_load(cfg_file, &srv->cfg, msg, sizeof(msg));
    if (rc != 0) {
      fprintf(stderr, "arenad: %s\n", msg);   /* msg begins with the file's name */
      return 1;
    }
  }
  if (memory_dropin) {
    /* The service's cgroup bounds from the same number the daemon holds loads to: the kernel
     * reclaims (page cache first) above MemoryHigh=, and stops the service at MemoryMax=. */
    uint64_t lim = srv->cfg.memory_limit_bytes, max = ar_config_memory_max(&srv->cfg);
    printf("# Generated by arenad --memory-dropin from memory_limit in %s.\n", cfg_file ? cfg_file : "(defaults)");
    if (lim == 0) {
      printf("# memory_limit is 0 (none): no bound.\n");
    } else {
      printf("# arenad refuses a load that would bring its accounted memory over %" PRIu64 " bytes.\n", lim);
      printf("[Service]\nMemoryAccounting=yes\nMemoryHigh=%" PRIu64 "\nMemoryMax=%" PRIu64 "\n", lim, max);
    }
    return ferror(stdout) ? 1 : 0;
  }
  if (socket_path) {
    if (strlen(socket_path) >= sizeof(srv->cfg.socket_path)) {
      fprintf(stderr, "arenad: --socket: path longer than %zu bytes\n", sizeof(srv->cfg.socket_path) - 1);
      return 2;
    }
    snprintf(srv->cfg.socket_path, sizeof(srv->cfg.socket_path), "%s", socket_path);
  }
  if (pool_bytes) srv->cfg.pool_bytes = pool_bytes;
  if (threads) srv->cfg.threads = threads;
  /* Absolute paths: the daemon changes to "/" when it detaches, and reloads/unlinks later. */
  static char config_abs[PATH_MAX];
  if (config_path && realpath(config_path, config_abs) != NULL) config_path = config_abs;
  if (srv->cfg.socket_path[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == NULL) cwd[0] = '\0';
    size_t nc = strlen(cwd), ns = strlen(srv->cfg.socket_path);
    if (nc + 1 + ns >= sizeof(srv->cfg.socket_path)) {
      fprintf(stderr, "arenad: socket path %s/%s is longer than %zu bytes\n", cwd, srv->cfg.socket_path,
              sizeof(srv->cfg.socket_path) - 1);
      return 2;
    }
    memmove(srv->cfg.socket_path + nc + 1, srv->cfg.socket_path, ns + 1);
    memcpy(srv->cfg.socket_path, cwd, nc);
    srv->cfg.socket_path[nc] = '/';
  }

  if (check_path) {
    int rc = ar_models_check_config(&srv->cfg, stdout, msg, sizeof(msg));
    if (rc != 0) {
      fprintf(stderr, "arenad: %s: %s\n", check_path, msg);
      return 1;
    }
    printf("%s: ok\n", check_path);
    return 0;
  }

  /* The pid file first: a second daemon is refused before it spends time on the models. */
  if (pidfile && pidfile_take(pidfile, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "arenad: %s\n", msg);
    return 1;
  }
  /* The log file is opened here, from the caller's directory and with its errors on its terminal. */
  if (log_file && ar_log_open_file(log_file, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "arenad: %s\n", msg);
    pidfile_remove();
    return 1;
  }

  /* Start-up runs the same checks as --check-config (load, plan, fit the pool): a configured model
   * that cannot be served is a start-up error, reported before the service is declared ready. */
  if (srv->cfg.n_models > 0) {
    int crc = ar_models_check_config(&srv->cfg, NULL, msg, sizeof(msg));
    if (crc != 0) {
      fprintf(stderr, "arenad: %s: %s\n", config_path, msg);
      pidfile_remove();
      return 1;
    }
  }

  /* Invokes run on the libuv threadpool; its size is read once, at the first queued work. */
  char workers[16];
  snprintf(workers, sizeof(workers), "%u", srv->cfg.workers ? srv->cfg.workers : 1);
  setenv("UV_THREADPOOL_SIZE", workers, 1);
  signal(SIGPIPE, SIG_IGN);
  /* Frames, decoded tensors and replies of 256 KiB and more get their own mappings, returned to
   * the system when freed: glibc's default threshold grows with the largest block freed (up to 32
   * MiB), after which such buffers stay resident in the heap once a client has gone. */
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  /* Fixing the mmap threshold also fixes glibc's trim threshold at 128 KiB: every free of a
   * bytes-path frame or reply at the top of the heap then gave its pages back, and the next request
   * faulted them in again (about 50 us per 200 KiB on a virtual machine). Keep up to 2 MiB of free
   * heap for the next request instead; the sweep's malloc_trim still returns it after large frames. */
  mallopt(M_TRIM_THRESHOLD, 2 << 20);

  bool managed = getenv("NOTIFY_SOCKET") != NULL || getenv("LISTEN_FDS") != NULL;
  int ready_fd = -1;
  if (!foreground && !managed && !log_file && !syslog_available())
    fprintf(stderr, "arenad: warning: no syslog here (/dev/log is no socket): once detached, the daemon's log is "
                    "lost; --log-file FILE keeps it, --foreground writes it to standard error\n");
  if (!foreground && !managed && (ready_fd = detach()) < 0) {
    fprintf(stderr, "arenad: detach: %s\n", strerror(errno));
    pidfile_remove();
    return 1;
  }
  srv->config_path = config_path;
  srv->cmdline_dirs = model_dirs;
  srv->n_cmdline_dirs = n_model_dirs;
  uv_loop_t loop;
  uv_loop_init(&loop);
  int rc = ar_server_start(srv, &loop, msg, sizeof(msg));
  if (rc != 0) {
    fprintf(stderr, "arenad: %s\n", msg);
    /* Release what the partial start made (handles, pool), so the exit is clean. */
    uv_walk(&loop, close_handle, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    ar_server_stop(srv);
    pidfile_remove();
    return 1;
  }
  /* Listening: the pid is the one to signal from now on (written before the parent returns). */
  if (pidfile_write(msg, sizeof(msg)) != 0) ar_log("%s (the daemon runs on)", msg);
  if (ready_fd >= 0) {
    /* Detached and listening: the terminal that started it is no longer ours (a shell's, maybe
     * closed already). Standard streams go to /dev/null, the log to syslog. */
    detach_ready(ready_fd);
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd >= 0) {
      dup2(null_fd, 0);
      dup2(null_fd, 1);
      dup2(null_fd, 2);
      if (null_fd > 2) close(null_fd);
    }
    if (!log_file) ar_log_use_syslog();
  }
  char where[160];
  if (srv->socket_activated)
    snprintf(where, sizeof(where), "adopted listening socket fd %d", srv->listen_fd);
  else
    snprintf(where, sizeof(where), "listening on %.120s", srv->cfg.socket_path);
  ar_log("arenad %s %s, pool %" PRIu64 " bytes, %s worker thread(s), %d thread(s) per invoke", PACKAGE_VERSION,
         where, srv->pool.bytes, workers, (int)ar_threadpool_threads(srv->tpool));
  ar_log("float kernels %s, OpenBLAS core %s%s%s", ar_isa_name(ar_isa_float_level()), ar_blas_corename(),
         ar_blas_replaced_core() ? " instead of " : "", ar_blas_replaced_core() ? ar_blas_replaced_core() : "");
  ar_server_load_configured(srv);
  uv_run(&loop, UV_RUN_DEFAULT);
  ar_server_stop(srv);
  rc = uv_loop_close(&loop);
  if (rc != 0) ar_log("loop closed with handles still open: %s", uv_strerror(rc));
  ar_log("stopped");
  pidfile_remove();
  ar_log_close_file();
  return 0;
}
