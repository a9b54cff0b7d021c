/* cli_stats.c - the rates of `arenactl stats --watch` (see cli_stats.h): differences of the
 * daemon's counters between two refreshes, divided by the client's clock between them. */
#include "clients/cli_stats.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "clients/cli_io.h"

static json_int_t counter(const json_t *o, const char *key) {
  return json_integer_value(json_object_get(o, key));
}

static const json_t *model_named(const json_t *doc, const char *name) {
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(doc, "models"), i, m) {
    const char *n = json_string_value(json_object_get(m, "name"));
    if (n != NULL && strcmp(n, name) == 0) return m;
  }
  return NULL;
}

void ar_cli_print_rates(FILE *f, const json_t *prev, const json_t *cur, double dt_s) {
  if (prev == NULL || !(dt_s > 0)) {
    fprintf(f, "\nrates: from the next refresh on\n");
    return;
  }
  const json_t *dp = json_object_get(prev, "daemon"), *dc = json_object_get(cur, "daemon");
  json_int_t req = counter(dc, "requests") - counter(dp, "requests");
  fprintf(f, "\nrates over the last %.1f s: ", dt_s);
  if (req >= 0) fprintf(f, "%.1f requests/s\n", (double)req / dt_s);
  else fprintf(f, "- requests/s (the daemon restarted)\n");
  fprintf(f, "%-24s %10s %10s %10s %10s\n", "model", "invokes/s", "errors/s", "dropped/s", "mean_us");
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(cur, "models"), i, m) {
    const char *name = json_string_value(json_object_get(m, "name"));
    if (name == NULL) continue;
    const json_t *pm = model_named(prev, name);
    const json_t *lc = json_object_get(m, "latency_us"), *lp = pm ? json_object_get(pm, "latency_us") : NULL;
    json_int_t inv = pm ? counter(m, "invokes") - counter(pm, "invokes") : -1;
    json_int_t err = pm ? counter(m, "errors") - counter(pm, "errors") : -1;
    json_int_t drop = pm ? counter(m, "dropped") - counter(pm, "dropped") : -1;
    json_int_t n = pm ? counter(lc, "count") - counter(lp, "count") : -1;
    json_int_t sum = pm ? counter(lc, "sum") - counter(lp, "sum") : -1;
    if (pm == NULL || inv < 0 || err < 0 || drop < 0 || n < 0 || sum < 0) {
      fprintf(f, "%-24s %10s %10s %10s %10s  %s\n", ar_cli_esc(name), "-", "-", "-", "-",
              pm == NULL ? "new" : "reloaded");
      continue;
    }
    char mean[32] = "-";
    if (n > 0) snprintf(mean, sizeof mean, "%.0f", (double)sum / (double)n);
    fprintf(f, "%-24s %10.1f %10.1f %10.1f %10s\n", ar_cli_esc(name), (double)inv / dt_s, (double)err / dt_s,
            (double)drop / dt_s, mean);
  }
}
