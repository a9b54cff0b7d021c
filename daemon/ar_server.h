/* ar_server.h - what arenad's main() drives: start the server on a loop, load the configured
 * models, run, stop. The server's internals are in ar_daemon.h.
 */
#ifndef AR_SERVER_H
#define AR_SERVER_H

#include <stddef.h>
#include <uv.h>

#include "daemon/ar_daemon.h"

/* With srv->cfg (and srv->config_path) filled: map the pool (cfg.pool_bytes), adopt the socket
 * passed by socket activation or bind cfg.socket_path (mode cfg.socket_mode, group
 * cfg.socket_group; a stale socket file is replaced, a live daemon's is not), listen, and install
 * SIGTERM/SIGINT (drain and exit 0), SIGHUP (reload) and the watchdog timer. Errors: AR_ENOMEM
 * (pool), AR_EIO / AR_EEXIST / AR_ECONFIG (socket), with `msg`. */
int ar_server_start(ar_server_t *srv, uv_loop_t *loop, char *msg, size_t msg_bytes);

/* Start loading cfg.models; READY=1 is sent when the last one is answered (at once if none). */
void ar_server_load_configured(ar_server_t *srv);

/* SIGHUP: re-read config_path; on success unload models that disappeared or changed, load new
 * ones (in-flight requests finish first); on error log it and keep running as before. */
void ar_server_reload(ar_server_t *srv);

/* After uv_run returned: unload every model, unmap the pool, remove the socket file we made. */
void ar_server_stop(ar_server_t *srv);

#endif /* AR_SERVER_H */
