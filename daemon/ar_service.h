/* ar_service.h - integration with the service manager (systemd), compiled to no-ops without
 * --with-systemd. The daemon calls these from its event loop thread.
 */
#ifndef AR_SERVICE_H
#define AR_SERVICE_H

#include <stdint.h>

/* A listening socket passed by socket activation (LISTEN_FDS/LISTEN_PID, first fd, must be an
 * AF_UNIX SOCK_STREAM listener), or -1 when none was passed. */
int ar_service_listen_fd(void);

/* READY=1 plus STATUS=<status>. */
void ar_service_ready(const char *status);
/* STATUS=<status>. */
void ar_service_status(const char *status);
/* STOPPING=1. */
void ar_service_stopping(void);
/* RELOADING=1 / READY=1 around a config reload. */
void ar_service_reloading(void);
/* WATCHDOG=1. */
void ar_service_watchdog(void);
/* Watchdog interval the manager asked for in µs (WATCHDOG_USEC for this pid), 0 if none. The daemon
 * pings at half of it from a libuv timer. */
uint64_t ar_service_watchdog_usec(void);

#endif /* AR_SERVICE_H */
