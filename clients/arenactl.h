/* arenactl.h - the commands of arenactl, one file each, dispatched by arenactl.c.
 *
 * Every command takes (argc, argv) with argv[0] the command name, parses its own options with
 * getopt_long, and returns the process exit code: 0 ok, 1 failure (message on stderr, the
 * server's message for daemon errors), 2 usage error.
 */
#ifndef ARENACTL_H
#define ARENACTL_H

#include <stdint.h>

#include "loader/ar_model.h"

/* The error object every --json command prints on stdout when it fails:
 *   {"error": {"code": "EUNSUPPORTED", "message": "...", "operators": [{"index": 192, "op":
 *    "Landmarks2TransformMatrix", "version": 2, "option": "unknown custom op"}, ...]}}
 * ("operators" only for AR_EUNSUPPORTED; `ops` may be NULL with n 0). Returns 1, the exit code.
 * clients/cmd_inspect.c. */
int ar_cli_json_error(int rc, const char *message, const ar_unsupported_t *ops, int32_t n);

/* Socket of the daemon: -s PATH, else $ARENAD_SOCKET, else AR_DEFAULT_SOCKET. */
extern const char *arenactl_socket;
/* Where arenactl_socket came from: "-s", "$ARENAD_SOCKET" or "default" (for hints). */
extern const char *arenactl_socket_origin;
#define AR_DEFAULT_SOCKET "/run/arenad/arenad.sock"

/* Offline (no daemon). */
int ar_cmd_inspect(int argc, char **argv);     /* clients/cmd_inspect.c */
int ar_cmd_ops(int argc, char **argv);         /* clients/cmd_ops.c     */
int ar_cmd_plan_file(int argc, char **argv);   /* clients/cmd_plan.c    */
int ar_cmd_run(int argc, char **argv);         /* clients/cmd_run.c     */
int ar_cmd_bench(int argc, char **argv);       /* clients/cmd_bench.c   */

/* Online (through libarenaclient), clients/cmd_online.c. */
int ar_cmd_ping(int argc, char **argv);
int ar_cmd_stats(int argc, char **argv);
int ar_cmd_models(int argc, char **argv);
int ar_cmd_load(int argc, char **argv);
int ar_cmd_unload(int argc, char **argv);
int ar_cmd_compact(int argc, char **argv);
int ar_cmd_reset_session(int argc, char **argv);
int ar_cmd_reload(int argc, char **argv);
int ar_cmd_invoke(int argc, char **argv);
int ar_cmd_plan_remote(int argc, char **argv);

#endif
