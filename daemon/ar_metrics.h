/* ar_metrics.h - arenad's built-in Prometheus scrape endpoint (config `metrics_listen`).
 *
 * A read-only HTTP/1.x server on the daemon's libuv loop, off unless metrics_listen is set: on a
 * TCP address ("127.0.0.1:9464", "[::1]:9464") or a Unix socket path (made with socket_mode and
 * socket_group, as the daemon's own socket). `GET /metrics` (a query string is ignored; HEAD too)
 * answers 200 with the text `arenactl stats --prometheus` prints (common/ar_prom.h renders the same
 * stats JSON), Content-Type "text/plain; version=0.0.4; charset=utf-8"; another path is 404,
 * another method 405 (Allow: GET, HEAD), a request line that is not HTTP/1.x 400. One request per
 * connection (Connection: close).
 *
 * Bounds: a request's head (request line and headers, up to the empty line) is at most
 * AR_METRICS_REQUEST_BYTES (else 431), it must arrive within AR_METRICS_TIMEOUT_MS of the accept
 * and the answer be written within the same time (else the connection is closed), and at most
 * AR_METRICS_MAX_CONNS connections are open at once (a new one past that closes the oldest one still
 * sending its head, else it is closed itself). The rendered text is reused for stats_refresh_ms. A body sent with
 * the request is never read: after the answer the write side is shut and what the client still
 * sends is read and dropped for at most AR_METRICS_LINGER_MS before the close, so the close does
 * not reset the answer away. A head holding a NUL byte is 400 at once. Nothing a scraper sends reaches the model registry: the body comes
 * from the stats snapshot GetStats answers from (ar_stats.c: taken off the loop at most once per
 * stats_refresh_ms); a scrape that finds no fresh snapshot waits for the walk it starts.
 */
#ifndef AR_METRICS_H
#define AR_METRICS_H

#include <stddef.h>

#include "daemon/ar_daemon.h"

#define AR_METRICS_REQUEST_BYTES 4096
#define AR_METRICS_TIMEOUT_MS 10000
#define AR_METRICS_LINGER_MS 1000   /* after the answer: reading what the client still sends, at most */
#define AR_METRICS_MAX_CONNS 8

/* Listen on srv->cfg.metrics_listen (nothing when it is ""). Errors: AR_ECONFIG (the address),
 * AR_EIO / AR_EEXIST (bind, listen; a live daemon's Unix socket is not taken over) with `msg`. */
int ar_metrics_start(ar_server_t *srv, char *msg, size_t msg_bytes);

/* The stats thread's walk is done (srv->stats_snap is new): answer the scrapes waiting for it. */
void ar_metrics_snapshot_ready(ar_server_t *srv);

/* Drain: stop listening and close every scrape connection (their handles close on the loop). */
void ar_metrics_close(ar_server_t *srv);

/* After the loop ended: free what ar_metrics_start allocated and remove the Unix socket it made. */
void ar_metrics_free(ar_server_t *srv);

#endif /* AR_METRICS_H */
