/* ar_stats.h - the timing and summary statistics every benchmark program shares: bench/invoke's
 * side-by-side tables, `arenactl bench` and `arenactl run --runs` read one clock and summarise
 * their samples the same way, so a median printed by one means what it means in the others.
 *
 * Percentiles interpolate linearly between the two closest ranks of the sorted sample (Hyndman
 * and Fan's definition 7, numpy's default): with n sorted values x[0..n-1], percentile p sits at
 * rank h = (n - 1) * p / 100 and is x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h]).
 * So p50 is the usual median (the mean of the two middle values for even n), p0 the minimum and
 * p100 the maximum, and min <= median <= p90 <= p99 <= max always holds.
 */
#ifndef AR_STATS_H
#define AR_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Now on `clock` (CLOCK_MONOTONIC for wall time, CLOCK_THREAD_CPUTIME_ID for the calling
 * thread's CPU time), in nanoseconds / milliseconds. */
uint64_t ar_clock_ns(clockid_t clock);
double ar_clock_ms(clockid_t clock);
/* ar_clock_ms(CLOCK_MONOTONIC). */
double ar_now_ms(void);

/* qsort comparator for doubles, ascending. */
int ar_cmp_double(const void *a, const void *b);

/* Median of x[0..n-1] (sorts x in place); 0 when n <= 0. */
double ar_stats_median(double *x, int n);

/* Percentile p (0..100) of the ascending sorted x[0..n-1], as above; 0 when n is 0. */
double ar_stats_percentile(const double *x, size_t n, double p);

/* A sample's summary, in the sample's unit. std is the population standard deviation (divided
 * by n, as TFLite's benchmark_model reports it). */
typedef struct ar_stats {
  size_t n;
  double mean, std, min, median, p90, p99, max;
} ar_stats_t;

/* Summarise x[0..n-1] into *out (sorts x in place). n 0 gives all zeros. */
void ar_stats_summarize(double *x, size_t n, ar_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* AR_STATS_H */
