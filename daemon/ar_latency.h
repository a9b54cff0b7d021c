/* ar_latency.h - fixed-size latency histogram (µs) for p50/p99/max without allocation per invoke.
 *
 * Log-linear buckets, HdrHistogram style: values below 32 µs get exact buckets; above, each power
 * of two is split into 16 linear sub-buckets, so a reported percentile is within 1/16 (6.25 %) of
 * the true value. 16 + 16 * 38 buckets cover up to 2^42 µs (about 50 days). Recording is two
 * shifts and an increment; the struct is embedded in each model and updated on the loop thread.
 *
 * Next to it, exact counts for a fixed 1-2.5-5 series of upper bounds (AR_LAT_LE_US, 50 µs to
 * 60 s): the log-linear edges do not fall on round numbers, so a Prometheus histogram built from
 * them would be approximate. le_counts[i] counts values <= AR_LAT_LE_US[i] and above the previous
 * bound (not cumulative); values above the last bound are count - sum(le_counts).
 */
#ifndef AR_LATENCY_H
#define AR_LATENCY_H

#include <stdint.h>

#define AR_LAT_SUB 16
#define AR_LAT_BUCKETS (2 * AR_LAT_SUB + AR_LAT_SUB * 38)

#define AR_LAT_LE_N 19
static const uint64_t AR_LAT_LE_US[AR_LAT_LE_N] = {50,     100,    250,    500,     1000,    2500,   5000,
                                                   10000,  25000,  50000,  100000,  250000,  500000, 1000000,
                                                   2500000, 5000000, 10000000, 25000000, 60000000};

typedef struct ar_latency {
  uint64_t count, max_us, sum_us;
  uint32_t buckets[AR_LAT_BUCKETS];
  uint64_t le_counts[AR_LAT_LE_N];
} ar_latency_t;

static inline int ar_latency_bucket(uint64_t us) {
  if (us < 2 * AR_LAT_SUB) return (int)us;
  int k = 63 - __builtin_clzll(us);              /* 2^k <= us < 2^(k+1), k >= 5 */
  int sub = (int)((us >> (k - 4)) & (AR_LAT_SUB - 1));
  int idx = 2 * AR_LAT_SUB + (k - 5) * AR_LAT_SUB + sub;
  return idx < AR_LAT_BUCKETS ? idx : AR_LAT_BUCKETS - 1;
}

/* Upper edge (µs) of bucket idx: the value reported for a percentile falling in it. */
static inline uint64_t ar_latency_bucket_upper(int idx) {
  if (idx < 2 * AR_LAT_SUB) return (uint64_t)idx;
  int k = (idx - 2 * AR_LAT_SUB) / AR_LAT_SUB + 5;
  int sub = (idx - 2 * AR_LAT_SUB) % AR_LAT_SUB;
  return ((uint64_t)(AR_LAT_SUB + sub + 1) << (k - 4)) - 1;
}

static inline void ar_latency_record(ar_latency_t *h, uint64_t us) {
  h->count++;
  h->sum_us += us;
  if (us > h->max_us) h->max_us = us;
  h->buckets[ar_latency_bucket(us)]++;
  for (int i = 0; i < AR_LAT_LE_N; i++)
    if (us <= AR_LAT_LE_US[i]) {
      h->le_counts[i]++;
      break;
    }
}

/* Value at percentile p (0 < p <= 100), clamped to the observed max; 0 when empty. */
static inline uint64_t ar_latency_percentile(const ar_latency_t *h, double p) {
  if (h->count == 0) return 0;
  uint64_t rank = (uint64_t)(p / 100.0 * (double)h->count + 0.999999);
  if (rank < 1) rank = 1;
  uint64_t seen = 0;
  for (int i = 0; i < AR_LAT_BUCKETS; i++) {
    seen += h->buckets[i];
    if (seen >= rank) {
      uint64_t v = ar_latency_bucket_upper(i);
      return v < h->max_us ? v : h->max_us;
    }
  }
  return h->max_us;
}

#endif /* AR_LATENCY_H */
