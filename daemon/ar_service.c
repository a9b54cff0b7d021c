/* ar_service.c - the daemon's side of the service manager protocol (see ar_service.h).
 *
 * With --with-systemd (HAVE_SYSTEMD) this uses libsystemd: sd_notify for READY/STATUS/RELOADING/
 * STOPPING/WATCHDOG, sd_listen_fds + sd_is_socket_unix for socket activation, sd_watchdog_enabled for
 * the ping interval. Without it every call is a no-op (no socket passed, no watchdog), so the daemon's
 * code has no #ifdefs. Notifications go to $NOTIFY_SOCKET; when it is unset they are dropped.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "daemon/ar_service.h"

#ifdef HAVE_SYSTEMD

int ar_service_listen_fd(void) {
  /* unset_environment = 1: children (none today) must not think the fds are theirs. */
  int n = sd_listen_fds(1);
  if (n < 1) return -1;
  int fd = SD_LISTEN_FDS_START;
  /* Only a listening AF_UNIX stream socket is usable; anything else is a unit misconfiguration,
   * and the daemon falls back to binding its configured path. */
  if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) return -1;
  return fd;
}

/* STATUS= values are single lines: cut at the first newline. */
static void notify_with_status(const char *head, const char *status) {
  if (status == NULL) {
    if (head != NULL) sd_notify(0, head);
    return;
  }
  int len = (int)strcspn(status, "\n");
  if (head != NULL)
    sd_notifyf(0, "%s\nSTATUS=%.*s", head, len, status);
  else
    sd_notifyf(0, "STATUS=%.*s", len, status);
}

void ar_service_ready(const char *status) { notify_with_status("READY=1", status); }

void ar_service_status(const char *status) {
  if (status != NULL) notify_with_status(NULL, status);
}

void ar_service_stopping(void) { sd_notify(0, "STOPPING=1"); }

void ar_service_reloading(void) {
  /* systemd >= 253 pairs RELOADING=1 with the CLOCK_MONOTONIC time of the request; older managers
   * ignore the extra field. */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
             (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000ull);
}

void ar_service_watchdog(void) { sd_notify(0, "WATCHDOG=1"); }

uint64_t ar_service_watchdog_usec(void) {
  uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0) return 0;
  return usec;
}

#else /* !HAVE_SYSTEMD */

int ar_service_listen_fd(void) { return -1; }
void ar_service_ready(const char *status) { (void)status; }
void ar_service_status(const char *status) { (void)status; }
void ar_service_stopping(void) {}
void ar_service_reloading(void) {}
void ar_service_watchdog(void) {}
uint64_t ar_service_watchdog_usec(void) { return 0; }

#endif /* HAVE_SYSTEMD */
