/* ar_stats.c - clock and sample statistics for the benchmark programs (common/ar_stats.h). */
#include "common/ar_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t ar_clock_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double ar_clock_ms(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double ar_now_ms(void) { return ar_clock_ms(CLOCK_MONOTONIC); }

int ar_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double ar_stats_median(double *x, int n) {
  if (n <= 0) return 0;
  qsort(x, (size_t)n, sizeof(*x), ar_cmp_double);
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

double ar_stats_percentile(const double *x, size_t n, double p) {
  if (n == 0) return 0;
  if (p <= 0) return x[0];
  if (p >= 100) return x[n - 1];
  double h = (double)(n - 1) * p / 100.0;
  size_t lo = (size_t)h;
  if (lo + 1 >= n) return x[n - 1];
  double v = x[lo] + (h - (double)lo) * (x[lo + 1] - x[lo]);
  /* Rounding must not take an interpolated value outside its two neighbours. */
  return v < x[lo] ? x[lo] : v > x[lo + 1] ? x[lo + 1] : v;
}

void ar_stats_summarize(double *x, size_t n, ar_stats_t *out) {
  memset(out, 0, sizeof(*out));
  if (n == 0) return;
  qsort(x, n, sizeof(*x), ar_cmp_double);
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += x[i];
  double mean = sum / (double)n, sq = 0;
  for (size_t i = 0; i < n; i++) sq += (x[i] - mean) * (x[i] - mean);
  out->n = n;
  out->mean = mean;
  out->std = sqrt(sq / (double)n);
  out->min = x[0];
  out->max = x[n - 1];
  out->median = ar_stats_percentile(x, n, 50);
  out->p90 = ar_stats_percentile(x, n, 90);
  out->p99 = ar_stats_percentile(x, n, 99);
}
