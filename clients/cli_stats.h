/* cli_stats.h - `arenactl stats --watch`: rates between two stats documents (the daemon's
 * `stats --json`), so that a refreshing screen shows what is happening now and not only totals.
 */
#ifndef AR_CLI_STATS_H
#define AR_CLI_STATS_H

#include <stdio.h>

#include <jansson.h>

/* Print the rates from `prev` to `cur`, two stats documents taken dt_s seconds apart (> 0):
 *   "rates over the last 2.0 s: 12.5 requests/s"
 * then one row per model of `cur`: invokes/s, errors/s, dropped/s and the mean invoke latency (µs)
 * of the interval's invokes (latency_us.sum and .count differences; "-" with no invoke). A model
 * absent from `prev` is "new"; one whose counters went down (unloaded and loaded again under its
 * name) is "reloaded"; neither has rates yet. prev NULL: one line saying the rates start at the
 * next refresh. */
void ar_cli_print_rates(FILE *f, const json_t *prev, const json_t *cur, double dt_s);

#endif /* AR_CLI_STATS_H */
