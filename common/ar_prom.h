/* ar_prom.h - arenad's stats JSON as Prometheus text exposition format 0.0.4, for
 * `arenactl stats --prometheus` (and the arenad-metrics.service/.timer pair that feeds
 * node_exporter's textfile collector) and for arenad's built-in scrape endpoint (metrics_listen,
 * GET /metrics): one rendering, so both give the same text.
 *
 * Semantics: https://prometheus.io/docs/instrumenting/exposition_formats/ (text format 0.0.4):
 * one `# HELP name text` and one `# TYPE name counter|gauge|histogram` line per metric family,
 * before its samples; samples `name{label="value",...} number`; in label values backslash,
 * double quote and newline are written as \\, \" and \n; in HELP text backslash and newline
 * as \\ and \n. A histogram `h` has `h_bucket{le="B"}` samples with cumulative counts in
 * increasing `le`, ending with `le="+Inf"` equal to `h_count`, then `h_sum` and `h_count`.
 *
 * Metrics (the stats JSON keys of docs/protocol.md, units in the names):
 *   arenad_up                                  1 (0 is written by --output when the daemon is down)
 *   arenad_pool_{bytes,used_bytes,free_bytes,largest_free_bytes}
 *   arenad_model_info{model,group,strategy,sha256,path} 1
 *   arenad_model_{invokes,errors,dropped}_total{model}, arenad_model_inflight{model},
 *   arenad_model_{arena,persistent,weights}_bytes{model}
 *   arenad_model_invoke_latency_seconds{model} histogram (base unit seconds: le 0.00005 .. 60, sum in s)
 *   arenad_group_{activation,saved}_bytes{group}
 *   arenad_uptime_seconds, arenad_connections, arenad_requests_total, arenad_workers,
 *   arenad_connections_refused_total, arenad_{max_,}pending_frame_bytes,
 *   arenad_frames_over_budget_total, arenad_{max_,}spare_block_bytes,
 *   arenad_{max_,}unwritten_reply_bytes,
 *   arenad_build_info{version} 1
 */
#ifndef AR_PROM_H
#define AR_PROM_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* Write `stats` (the GetStats JSON document, parsed) to `out` as exposition text. Missing keys
 * (an older daemon) are skipped, never invented; a model without latency buckets gets no
 * histogram. Returns 0, or AR_EPROTO when `stats` is not an object with a "pool" object (message
 * in msg[msg_bytes]), AR_EIO when writing to `out` fails. */
int ar_prom_write(const json_t *stats, FILE *out, char *msg, size_t msg_bytes);

/* The exposition for a daemon that could not be asked: `arenad_up 0` with its HELP/TYPE. */
int ar_prom_write_down(FILE *out);

/* Write a label value with the format's escaping (\\, \", \n) to `out`. */
void ar_prom_label_value(FILE *out, const char *value);

/* Replace `path` atomically with the output of `write(out, arg)`: write a temporary file in the
 * same directory (".<name>.XXXXXX", so node_exporter, which reads only *.prom, never sees it),
 * mode 0644, fsync, then rename over `path`. A reader sees the old or the new file, never a part.
 * Returns 0, or AR_EIO with the failing step and errno text in msg; the temporary is removed on
 * failure. */
int ar_prom_write_file(const char *path, int (*write)(FILE *out, void *arg), void *arg, char *msg,
                       size_t msg_bytes);

#endif /* AR_PROM_H */
