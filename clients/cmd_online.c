/* cmd_online.c - arenactl commands that talk to the daemon through libarenaclient:
 * ping, stats, models, load, unload, invoke, plan NAME. `stats --prometheus` formats through common/ar_prom.h.
 *
 * Every command connects to arenactl_socket, makes its calls and prints human tables (or JSON
 * with --json). On any error it prints the daemon's message on stderr and returns 1.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "clients/ar_client.h"
#include "clients/arenactl.h"
#include "clients/cli_io.h"
#include "clients/cli_stats.h"
#include "clients/cli_tensor.h"
#include "clients/image.h"
#include "common/ar_prom.h"
#include "common/ar_error.h"
#include "common/ar_text.h"
#include "common/ar_util.h"

static int fail(const char *cmd, int rc, const char *msg) {
  fprintf(stderr, "arenactl %s: %s (%s)\n", cmd, msg && msg[0] ? ar_cli_esc(msg) : ar_strerror(rc), ar_err_name(rc));
  return 1;
}

/* What to check when connect(2) failed with `err` on arenactl_socket, into hint[n] ("" when there
 * is nothing to say): no socket file or nobody listening -> is the daemon running, and how to name
 * another socket; permission denied -> the socket's group, which the user must be in. */
static void connect_hint(int err, char *hint, size_t n) {
  const char *other = strcmp(arenactl_socket_origin, "-s") == 0 ? "-s PATH names the socket"
                      : strcmp(arenactl_socket_origin, "$ARENAD_SOCKET") == 0
                          ? "the socket is $ARENAD_SOCKET's, -s PATH for another"
                          : "-s PATH or $ARENAD_SOCKET for another socket";
  if (err == ENOENT || err == ECONNREFUSED) {
    snprintf(hint, n, "%sis arenad running? (systemctl status arenad; %s)",
             err == ECONNREFUSED ? "no daemon listens on this socket file (left by a daemon that stopped?): " : "",
             other);
  } else if (err == EACCES || err == EPERM) {
    char group[96] = "arenad";
    struct stat st;
    if (stat(arenactl_socket, &st) == 0) {
      struct group *g = getgrgid(st.st_gid);
      if (g != NULL) snprintf(group, sizeof(group), "%s", g->gr_name);
      else snprintf(group, sizeof(group), "%u", (unsigned)st.st_gid);
    }
    snprintf(hint, n, "are you in the %s group? (id -nG lists yours; `adduser $USER %s` adds you, from your next "
             "login)", group, group);
  } else {
    hint[0] = '\0';
  }
}

static ar_client_t *connect_or_fail_json(const char *cmd, bool as_json) {
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  int rc = ar_client_connect(arenactl_socket, &c, msg, sizeof(msg));
  if (rc) {
    char hint[AR_MSG_BYTES];
    hint[0] = '\0';
    if (rc == AR_ECONN) connect_hint(errno, hint, sizeof(hint));
    if (as_json) {
      char full[2 * AR_MSG_BYTES];
      snprintf(full, sizeof(full), "%s%s%s", msg, hint[0] ? ": " : "", hint);
      ar_cli_json_error(rc, full, NULL, 0);
    } else {
      fprintf(stderr, "arenactl %s: %s (%s)%s%s\n", cmd, msg[0] ? ar_cli_esc(msg) : ar_strerror(rc),
              ar_err_name(rc), hint[0] ? ": " : "", ar_cli_esc(hint));
    }
    return NULL;
  }
  return c;
}

static ar_client_t *connect_or_fail(const char *cmd) { return connect_or_fail_json(cmd, false); }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void human_bytes(char *buf, size_t n, uint64_t b) {
  if (b >= (10ull << 20)) snprintf(buf, n, "%.1f MiB", (double)b / (1 << 20));
  else if (b >= (10ull << 10)) snprintf(buf, n, "%.1f KiB", (double)b / 1024);
  else snprintf(buf, n, "%" PRIu64 " B", b);
}

static void shape_str(char *buf, size_t n, const int64_t *dims, int32_t rank) {
  size_t o = (size_t)snprintf(buf, n, "[");
  for (int32_t d = 0; d < rank && o < n; d++) o += (size_t)snprintf(buf + o, n - o, "%s%" PRId64, d ? "," : "", dims[d]);
  if (o < n) snprintf(buf + o, n - o, "]");
}

static json_int_t jint(const json_t *o, const char *key) {
  return json_integer_value(json_object_get(o, key));
}
static const char *jstr(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

/* `arenactl CMD --help` (or -h) for the commands without options: usage on stdout, exit 0. */
static bool asks_help(int argc, char **argv) {
  return argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
}

/* ------------------------------------------------------------------------------------------ */

int ar_cmd_ping(int argc, char **argv) {
  if (argc > 1) {
    fprintf(asks_help(argc, argv) ? stdout : stderr, "usage: arenactl ping\n");
    return asks_help(argc, argv) ? 0 : 2;
  }
  ar_client_t *c = connect_or_fail("ping");
  if (c == NULL) return 1;
  char version[64], msg[AR_MSG_BYTES];
  double t0 = now_s();
  int rc = ar_client_ping(c, version, sizeof(version), msg, sizeof(msg));
  double t1 = now_s();
  ar_client_close(c);
  if (rc) return fail("ping", rc, msg);
  printf("arenad %s on %s: round trip %.0f us\n", version, arenactl_socket, (t1 - t0) * 1e6);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */

static void print_memory(json_t *root);

static void print_stats(json_t *root) {
  json_t *pool = json_object_get(root, "pool");
  char a[32], b[32], c[32], d[32];
  uint64_t total = (uint64_t)jint(pool, "bytes"), used = (uint64_t)jint(pool, "used_bytes");
  human_bytes(a, sizeof(a), total);
  human_bytes(b, sizeof(b), used);
  human_bytes(c, sizeof(c), (uint64_t)jint(pool, "free_bytes"));
  human_bytes(d, sizeof(d), (uint64_t)jint(pool, "largest_free_bytes"));
  printf("pool: %s, used %s (%.1f%%), free %s in %" JSON_INTEGER_FORMAT " block(s), largest free block %s\n", a, b,
         total ? 100.0 * (double)used / (double)total : 0.0, c, jint(pool, "free_blocks"), d);
  if (jint(pool, "compactions") > 0 || json_is_true(json_object_get(pool, "compacting"))) {
    char e[32];
    human_bytes(e, sizeof(e), (uint64_t)jint(pool, "compacted_bytes"));
    printf("  compactions %" JSON_INTEGER_FORMAT " (%s moved)%s\n", jint(pool, "compactions"), e,
           json_is_true(json_object_get(pool, "compacting")) ? ", one in progress" : "");
  }
  printf("  %12s %12s  %-10s  %s\n", "offset", "bytes", "kind", "owner");
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(pool, "regions"), i, r) {
    printf("  %12" JSON_INTEGER_FORMAT " %12" JSON_INTEGER_FORMAT "  %-10s  %s\n", jint(r, "offset"),
           jint(r, "bytes"), ar_cli_esc(jstr(r, "kind")), ar_cli_esc(jstr(r, "owner")));
  }
  /* A one-line map of the pool, 64 cells: P persistent, A activation, . free. */
  if (total) {
    char map[65];
    for (int k = 0; k < 64; k++) {
      uint64_t at = total / 64 * (uint64_t)k + total / 128;
      map[k] = '.';
      json_array_foreach(json_object_get(pool, "regions"), i, r) {
        uint64_t o = (uint64_t)jint(r, "offset"), n = (uint64_t)jint(r, "bytes");
        if (at >= o && at < o + n) map[k] = strcmp(jstr(r, "kind"), "persistent") == 0 ? 'P'
                                            : strcmp(jstr(r, "kind"), "activation") == 0 ? 'A'
                                            : strcmp(jstr(r, "kind"), "state") == 0      ? 'S' : '.';
      }
    }
    map[64] = '\0';
    printf("  map |%s|  (P persistent, A activation, S session state, . free)\n", map);
  }
  printf("\n%-24s %-10s %12s %12s %6s %11s %11s %8s %6s %9s %9s %9s %6s %10s %10s\n", "model", "group", "arena",
         "lower_bound", "ratio", "persistent", "weights", "invokes", "errors", "p50_us", "p99_us", "max_us", "allocs",
         "folded", "packed");
  json_array_foreach(json_object_get(root, "models"), i, r) {
    json_t *lat = json_object_get(r, "latency_us");
    double ar = (double)jint(r, "arena_bytes"), lb = (double)jint(r, "lower_bound_bytes");
    printf("%-24s %-10s %12" JSON_INTEGER_FORMAT " %12" JSON_INTEGER_FORMAT " %6.3f %11" JSON_INTEGER_FORMAT
           " %11" JSON_INTEGER_FORMAT " %8" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT " %9" JSON_INTEGER_FORMAT
           " %9" JSON_INTEGER_FORMAT " %9" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT " %10" JSON_INTEGER_FORMAT
           " %10" JSON_INTEGER_FORMAT "\n",
           ar_cli_esc(jstr(r, "name")), jstr(r, "group")[0] ? ar_cli_esc(jstr(r, "group")) : "-", jint(r, "arena_bytes"),
           jint(r, "lower_bound_bytes"), lb > 0 ? ar / lb : 0.0, jint(r, "persistent_bytes"), jint(r, "weights_bytes"),
           jint(r, "invokes"), jint(r, "errors"), jint(lat, "p50"), jint(lat, "p99"), jint(lat, "max"),
           jint(r, "heap_allocs_in_invoke"), jint(r, "folded_bytes"), jint(r, "packed_bytes"));
  }
  bool sess_head = false;
  json_array_foreach(json_object_get(root, "models"), i, r) {
    json_t *ss = json_object_get(r, "sessions");
    if (!json_is_object(ss)) continue;
    if (!sess_head)
      printf("\n%-24s %12s %8s %8s %8s %8s %8s %8s %12s\n", "sessions of model", "state/slot", "open", "expired",
             "evicted", "started", "ended", "reloaded", "slot_bytes");
    sess_head = true;
    printf("%-24s %12" JSON_INTEGER_FORMAT " %8" JSON_INTEGER_FORMAT " %8" JSON_INTEGER_FORMAT " %8" JSON_INTEGER_FORMAT
           " %8" JSON_INTEGER_FORMAT " %8" JSON_INTEGER_FORMAT " %8" JSON_INTEGER_FORMAT " %12" JSON_INTEGER_FORMAT "\n",
           ar_cli_esc(jstr(r, "name")), jint(ss, "state_bytes_per_slot"), jint(ss, "open"), jint(ss, "expired"),
           jint(ss, "evicted"), jint(ss, "started"), jint(ss, "ended"), jint(ss, "ended_by_reload"),
           jint(ss, "slot_bytes"));
    const char *note = jstr(ss, "state_reset");
    if (jint(ss, "state_generation") > 0)
      printf("%-24s state layout %" JSON_INTEGER_FORMAT " (new input shapes changed it); the last change: %s\n", "",
             jint(ss, "state_generation"), note && note[0] ? ar_cli_esc(note) : "no piece reset");
  }
  json_t *groups = json_object_get(root, "groups");
  if (json_array_size(groups) > 0) {
    printf("\n%-16s %16s %14s  %s\n", "share group", "activation_bytes", "saved_bytes", "members");
    json_array_foreach(groups, i, r) {
      char members[512] = "";
      size_t k, o = 0;
      json_t *m;
      json_array_foreach(json_object_get(r, "members"), k, m) {
        if (o < sizeof(members)) o += (size_t)snprintf(members + o, sizeof(members) - o, "%s%s", k ? ", " : "", ar_cli_esc(json_string_value(m)));
      }
      printf("%-16s %16" JSON_INTEGER_FORMAT " %14" JSON_INTEGER_FORMAT "  %s\n", ar_cli_esc(jstr(r, "name")),
             jint(r, "activation_bytes"), jint(r, "saved_bytes"), members);
    }
  }
  json_t *dm = json_object_get(root, "daemon");
  printf("\ndaemon %s: up %" JSON_INTEGER_FORMAT " s, %" JSON_INTEGER_FORMAT " connection(s), %" JSON_INTEGER_FORMAT
         " request(s)\n",
         ar_cli_esc(jstr(dm, "version")), jint(dm, "uptime_s"), jint(dm, "connections"), jint(dm, "requests"));
  print_memory(root);
}

/* The daemon's resident memory by part (stats "memory", daemon/ar_rss.h), bytes. */
static void print_memory(json_t *root) {
  json_t *mem = json_object_get(root, "memory");
  if (!json_is_object(mem)) return;
  if (json_is_string(json_object_get(mem, "error"))) {
    printf("\nmemory: not measured (%s)\n", ar_cli_esc(jstr(mem, "error")));
    return;
  }
  json_int_t rss = jint(mem, "rss_bytes"), acc = jint(mem, "accounted_bytes");
  printf("\n%-22s %12s\n", "memory", "bytes");
  printf("  %-20s %12" JSON_INTEGER_FORMAT "  peak %" JSON_INTEGER_FORMAT "\n", "RSS", rss, jint(mem, "peak_rss_bytes"));
  printf("  %-20s %12" JSON_INTEGER_FORMAT "  resident of the %" JSON_INTEGER_FORMAT "-byte pool (%" JSON_INTEGER_FORMAT
         " in regions)\n", "pool", jint(mem, "pool_resident_bytes"), jint(json_object_get(root, "pool"), "bytes"),
         jint(json_object_get(root, "pool"), "used_bytes"));
  printf("  %-20s %12" JSON_INTEGER_FORMAT " ", "model file copies", jint(mem, "models_resident_bytes"));
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(root, "models"), i, m)
    printf(" %s %" JSON_INTEGER_FORMAT, ar_cli_esc(jstr(m, "name")), jint(m, "mapping_resident_bytes"));
  printf("\n");
  if (json_is_true(json_object_get(mem, "blas_measured")))
    printf("  %-20s %12" JSON_INTEGER_FORMAT "  %" JSON_INTEGER_FORMAT " mapping(s), %" JSON_INTEGER_FORMAT
           " bytes of address space\n", "OpenBLAS buffers", jint(mem, "blas_resident_bytes"), jint(mem, "blas_mappings"),
           jint(mem, "blas_mapped_bytes"));
  else
    printf("  %-20s %12s  not measured in this build (counted as unaccounted)\n", "OpenBLAS buffers", "-");
  printf("  %-20s %12" JSON_INTEGER_FORMAT "  malloc's allocated blocks (it holds %" JSON_INTEGER_FORMAT " from the system)\n",
         "heap", jint(mem, "heap_bytes"), jint(mem, "heap_system_bytes"));
  printf("  %-20s %12" JSON_INTEGER_FORMAT "  code %" JSON_INTEGER_FORMAT ", stacks %" JSON_INTEGER_FORMAT "\n",
         "code and stacks", jint(mem, "rest_bytes"), jint(mem, "code_bytes"), jint(mem, "stack_bytes"));
  printf("  %-20s %12" JSON_INTEGER_FORMAT "  resident of the %" JSON_INTEGER_FORMAT
         " bytes of shared memory clients registered\n", "clients' buffers", jint(mem, "shm_resident_bytes"),
         jint(mem, "shm_bytes"));
  printf("  %-20s %12" JSON_INTEGER_FORMAT "  %.1f%% of RSS (unaccounted %" JSON_INTEGER_FORMAT ")\n", "sum of the parts",
         acc, rss > 0 ? 100.0 * (double)acc / (double)rss : 0.0, jint(mem, "unaccounted_bytes"));
  if (jint(mem, "memory_limit_bytes") > 0)
    printf("  %-20s %12" JSON_INTEGER_FORMAT "  loads that would pass it are refused\n", "memory_limit",
           jint(mem, "memory_limit_bytes"));
  else
    printf("  %-20s %12s\n", "memory_limit", "none");
}

/* Write the exposition of `arg` (a json_t stats document, or NULL for a daemon that is down). */
static int prom_writer(FILE *out, void *arg) {
  char msg[AR_MSG_BYTES];
  return arg ? ar_prom_write(arg, out, msg, sizeof(msg)) : ar_prom_write_down(out);
}

/* Print or store one stats document in the requested form; returns the exit code. */
static int stats_emit(const char *s, bool as_json, bool prom, const char *output) {
  if (as_json && !output) {
    printf("%s\n", s);
    return 0;
  }
  json_error_t err;
  json_t *root = json_loads(s, 0, &err);
  if (root == NULL) return fail("stats", AR_EPROTO, "the stats are not valid JSON");
  int ret = 0;
  char msg[AR_MSG_BYTES];
  if (output) {
    int rc = ar_prom_write_file(output, prom_writer, root, msg, sizeof(msg));
    if (rc) ret = fail("stats", rc, msg);
  } else if (prom) {
    int rc = ar_prom_write(root, stdout, msg, sizeof(msg));
    if (rc) ret = fail("stats", rc, msg);
  } else {
    print_stats(root);
  }
  json_decref(root);
  return ret;
}

int ar_cmd_stats(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, NULL, 'j'},       {"watch", required_argument, NULL, 'w'},
                                       {"prometheus", no_argument, NULL, 'p'}, {"output", required_argument, NULL, 'o'},
                                       {"from", required_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  static const char usage[] =
      "usage: arenactl stats [--json | --prometheus [--output FILE]] [--watch SECONDS] [--from STATS.json]\n";
  bool as_json = false, prom = false;
  const char *output = NULL, *from = NULL;
  double watch = 0;
  int o;
  optind = 1;
  while ((o = getopt_long(argc, argv, "jw:po:f:h", opts, NULL)) != -1) {
    if (o == 'j') as_json = true;
    else if (o == 'p') prom = true;
    else if (o == 'o') output = optarg;
    else if (o == 'f') from = optarg;
    else if (o == 'w') {
      char *end;
      watch = strtod(optarg, &end);
      if (*end || !(watch > 0)) {
        fprintf(stderr, "arenactl stats: --watch wants a positive number of seconds\n");
        return 2;
      }
    } else {
      fputs(usage, o == 'h' ? stdout : stderr);
      return o == 'h' ? 0 : 2;
    }
  }
  if (optind < argc || (as_json && prom) || (output && !prom) || (from && watch > 0)) {
    fputs(usage, stderr);
    return 2;
  }
  if (from) {   /* offline: format a saved `arenactl stats --json` document */
    json_error_t err;
    json_t *root = json_load_file(from, 0, &err);
    if (root == NULL) {
      fprintf(stderr, "arenactl stats: %s:%d: %s\n", from, err.line, err.text);
      return 1;
    }
    char *s = json_dumps(root, 0);
    json_decref(root);
    int ret = s ? stats_emit(s, as_json, prom, output) : fail("stats", AR_ENOMEM, "no memory");
    free(s);
    return ret;
  }
  ar_client_t *c = connect_or_fail_json("stats", as_json);
  if (c == NULL) {
    /* The textfile collector keeps serving the last file: replace it with arenad_up 0. */
    if (output) {
      char msg[AR_MSG_BYTES];
      int rc = ar_prom_write_file(output, prom_writer, NULL, msg, sizeof(msg));
      if (rc) fail("stats", rc, msg);
    }
    return 1;
  }
  int ret = 0;
  /* --watch on a terminal table: the previous document and when it was taken, for the rates. */
  const bool rates = watch > 0 && !output && !as_json && !prom;
  json_t *prev = NULL;
  double prev_t = 0;
  for (;;) {
    char *s = NULL, msg[AR_MSG_BYTES];
    int rc = ar_client_stats_json(c, &s, msg, sizeof(msg));
    double t = now_s();
    if (rc) {
      ret = as_json ? ar_cli_json_error(rc, msg, NULL, 0) : fail("stats", rc, msg);
      break;
    }
    if (watch > 0 && !output) printf("\033[H\033[2J");
    ret = stats_emit(s, as_json, prom, output);
    if (ret == 0 && rates) {
      json_t *cur = json_loads(s, 0, NULL);
      if (cur != NULL) ar_cli_print_rates(stdout, prev, cur, t - prev_t);
      json_decref(prev);
      prev = cur;
      prev_t = t;
    }
    free(s);
    fflush(stdout);
    if (ret != 0 || watch <= 0) break;
    struct timespec ts = {.tv_sec = (time_t)watch, .tv_nsec = (long)((watch - (double)(time_t)watch) * 1e9)};
    nanosleep(&ts, NULL);
  }
  json_decref(prev);
  ar_client_close(c);
  return ret;
}

/* ------------------------------------------------------------------------------------------ */

int ar_cmd_models(int argc, char **argv) {
  if (argc > 1 || asks_help(argc, argv)) {
    fprintf(asks_help(argc, argv) ? stdout : stderr, "usage: arenactl models\n");
    return asks_help(argc, argv) ? 0 : 2;
  }
  ar_client_t *c = connect_or_fail("models");
  if (c == NULL) return 1;
  ar_client_model_t *ms = NULL;
  size_t n = 0;
  char msg[AR_MSG_BYTES];
  int rc = ar_client_list(c, &ms, &n, msg, sizeof(msg));
  ar_client_close(c);
  if (rc) return fail("models", rc, msg);
  printf("%-24s %-10s %-15s %12s %11s %8s  %-24s %s\n", "name", "group", "strategy", "arena", "persistent", "invokes",
         "inputs", "path");
  for (size_t i = 0; i < n; i++) {
    char in[128] = "";
    size_t o = 0;
    for (int32_t k = 0; k < ms[i].n_inputs && k < AR_CLIENT_MAX_IO; k++) {
      char sh[96];
      shape_str(sh, sizeof(sh), ms[i].inputs[k].dims, ms[i].inputs[k].rank);
      if (o < sizeof(in)) o += (size_t)snprintf(in + o, sizeof(in) - o, "%s%s", k ? " " : "", sh);
    }
    printf("%-24s %-10s %-15s %12" PRIu64 " %11" PRIu64 " %8" PRIu64 "  %-24s %s\n", ar_cli_esc(ms[i].name),
           ms[i].group[0] ? ar_cli_esc(ms[i].group) : "-", ar_cli_esc(ms[i].strategy), ms[i].arena_bytes,
           ms[i].persistent_bytes, ms[i].invokes, in, ar_cli_esc(ms[i].path));
  }
  free(ms);
  return 0;
}

/* ------------------------------------------------------------------------------------------ */

int ar_cmd_load(int argc, char **argv) {
  static const struct option opts[] = {{"group", required_argument, NULL, 'g'},
                                       {"strategy", required_argument, NULL, 'S'},
                                       {"weights", required_argument, NULL, 'W'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *group = "", *strategy = "", *weights = "";
  int o;
  optind = 1;
  while ((o = getopt_long(argc, argv, "g:S:W:h", opts, NULL)) != -1) {
    if (o == 'g') group = optarg;
    else if (o == 'S') strategy = optarg;
    else if (o == 'W') weights = optarg;
    else {
      fprintf(o == 'h' ? stdout : stderr,
              "usage: arenactl load NAME PATH [--group G] [--strategy S] [--weights stored|fp32]\n");
      return o == 'h' ? 0 : 2;
    }
  }
  if (argc - optind != 2) {
    fprintf(stderr, "usage: arenactl load NAME PATH [--group G] [--strategy S] [--weights stored|fp32]\n");
    return 2;
  }
  const char *name = argv[optind], *path = argv[optind + 1];
  if (path[0] == '\0') {   /* else it would become this directory */
    fprintf(stderr, "arenactl load: PATH is empty\n");
    return 2;
  }
  /* PATH names a file as every command line does, from this directory; the daemon would look a
   * relative path up in its model_dirs instead, so it gets this directory + PATH (not resolved
   * here: symlinks are followed, and checked against model_dirs, by the daemon). */
  char abs[PATH_MAX + 1];
  if (path[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == NULL) {
      fprintf(stderr, "arenactl load: cannot make %s absolute: %s\n", path, strerror(errno));
      return 1;
    }
    const char *rel = path;
    while (rel[0] == '.' && rel[1] == '/') rel += 2;
    if ((size_t)snprintf(abs, sizeof(abs), "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", rel) >= sizeof(abs)) {
      fprintf(stderr, "arenactl load: %s/%s: path longer than %d bytes\n", cwd, rel, PATH_MAX);
      return 1;
    }
    path = abs;
  }
  ar_client_t *c = connect_or_fail("load");
  if (c == NULL) return 1;
  ar_client_model_t *info = malloc(sizeof(*info));
  char msg[AR_MSG_BYTES];
  int rc = info ? ar_client_load_weights(c, name, path, group, strategy, weights, info, msg, sizeof(msg)) : AR_ENOMEM;
  ar_client_close(c);
  if (rc) {
    free(info);
    return fail("load", rc, info ? msg : "no memory");
  }
  printf("loaded %s (%s, sha256 %.16s...): arena %" PRIu64 " B, persistent %" PRIu64 " B, weights %" PRIu64
         " B mapped\n  activation region %" PRIu64 " B at offset %" PRIu64 "%s%s%s, persistent at %" PRIu64 "\n",
         ar_cli_esc(info->name), ar_cli_esc(info->path), ar_cli_esc(info->sha256), info->arena_bytes,
         info->persistent_bytes, info->weights_bytes, info->activation_bytes, info->activation_offset,
         info->group[0] ? " (shared by group '" : "", ar_cli_esc(info->group),
         info->group[0] ? "')" : "", info->persistent_offset);
  free(info);
  return 0;
}

int ar_cmd_reload(int argc, char **argv) {
  if (argc != 1 || asks_help(argc, argv)) {
    fprintf(asks_help(argc, argv) ? stdout : stderr, "usage: arenactl reload\n");
    return asks_help(argc, argv) ? 0 : 2;
  }
  ar_client_t *c = connect_or_fail("reload");
  if (c == NULL) return 1;
  char msg[AR_MSG_BYTES];
  ar_client_reloaded_t *ch = NULL;
  size_t n = 0;
  uint32_t same = 0;
  int rc = ar_client_reload(c, &ch, &n, &same, msg, sizeof(msg));
  ar_client_close(c);
  if (rc) return fail("reload", rc, msg);
  for (size_t i = 0; i < n; i++) {
    if (ch[i].old_sha256[0] == '\0')
      printf("added    %-24s sha256 %s\n", ar_cli_esc(ch[i].name), ar_cli_esc(ch[i].new_sha256));
    else if (ch[i].new_sha256[0] == '\0')
      printf("removed  %-24s sha256 %s\n", ar_cli_esc(ch[i].name), ar_cli_esc(ch[i].old_sha256));
    else
      printf("replaced %-24s sha256 %s -> %s\n", ar_cli_esc(ch[i].name), ar_cli_esc(ch[i].old_sha256),
             ar_cli_esc(ch[i].new_sha256));
  }
  printf("reloaded: %zu changed, %u unchanged\n", n, same);
  free(ch);
  return 0;
}

int ar_cmd_reset_session(int argc, char **argv) {
  bool end = argc == 4 && strcmp(argv[3], "--end") == 0;
  if ((argc != 3 && !end) || asks_help(argc, argv)) {
    fprintf(asks_help(argc, argv) ? stdout : stderr,
            "usage: arenactl reset-session NAME SESSION [--end]\n"
            "  reset session SESSION of model NAME to its initial state (--end: close it); SESSION \"\" is the\n"
            "  model's default state\n");
    return asks_help(argc, argv) ? 0 : 2;
  }
  ar_client_t *c = connect_or_fail("reset-session");
  if (c == NULL) return 1;
  char msg[AR_MSG_BYTES];
  bool stateful = false;
  int rc = ar_client_reset_session(c, argv[1], argv[2], end, &stateful, msg, sizeof(msg));
  ar_client_close(c);
  if (rc) return fail("reset-session", rc, msg);
  if (!stateful)
    printf("%s: keeps no state (nothing to reset)\n", ar_cli_esc(argv[1]));
  else if (argv[2][0] == '\0')
    printf("%s: default state reset\n", ar_cli_esc(argv[1]));
  else
    printf("session '%s' %s\n", ar_cli_esc(argv[2]), end ? "ended" : "reset");
  return 0;
}

int ar_cmd_compact(int argc, char **argv) {
  bool as_json = argc == 2 && strcmp(argv[1], "--json") == 0;
  if ((argc != 1 && !as_json) || asks_help(argc, argv)) {
    fprintf(asks_help(argc, argv) ? stdout : stderr, "usage: arenactl compact [--json]\n");
    return asks_help(argc, argv) ? 0 : 2;
  }
  ar_client_t *c = connect_or_fail_json("compact", as_json);
  if (c == NULL) return 1;
  char msg[AR_MSG_BYTES];
  ar_client_compact_t f;
  int rc = ar_client_compact(c, &f, msg, sizeof(msg));
  ar_client_close(c);
  if (rc) return fail("compact", rc, msg);
  if (as_json) {
    printf("{\"regions_moved\": %u, \"bytes_moved\": %" PRIu64 ", \"models_replaced\": %u, "
           "\"free_bytes_before\": %" PRIu64 ", \"largest_free_bytes_before\": %" PRIu64 ", "
           "\"free_blocks_before\": %u, \"free_bytes_after\": %" PRIu64 ", \"largest_free_bytes_after\": %" PRIu64
           ", \"free_blocks_after\": %u, \"duration_us\": %" PRIu64 ", \"released_bytes\": %" PRIu64 "}\n",
           f.regions_moved, f.bytes_moved, f.models_replaced, f.free_bytes_before, f.largest_free_bytes_before,
           f.free_blocks_before, f.free_bytes_after, f.largest_free_bytes_after, f.free_blocks_after, f.duration_us,
           f.released_bytes);
    return 0;
  }
  char moved[32], fb[32], lb[32], la[32], rel[32];
  human_bytes(moved, sizeof(moved), f.bytes_moved);
  human_bytes(fb, sizeof(fb), f.free_bytes_after);
  human_bytes(lb, sizeof(lb), f.largest_free_bytes_before);
  human_bytes(la, sizeof(la), f.largest_free_bytes_after);
  human_bytes(rel, sizeof(rel), f.released_bytes);
  if (f.regions_moved == 0)
    printf("pool already compact: %s free in %u block(s)\n", fb, f.free_blocks_after);
  else
    printf("moved %u region(s), %s; re-placed %u model(s) in %.1f ms\n"
           "free %s: largest block %s -> %s, %u -> %u block(s); %s of free pages released\n",
           f.regions_moved, moved, f.models_replaced, (double)f.duration_us / 1000.0, fb, lb, la, f.free_blocks_before,
           f.free_blocks_after, rel);
  return 0;
}

int ar_cmd_unload(int argc, char **argv) {
  if (argc != 2 || asks_help(argc, argv)) {
    fprintf(asks_help(argc, argv) ? stdout : stderr, "usage: arenactl unload NAME\n");
    return asks_help(argc, argv) ? 0 : 2;
  }
  ar_client_t *c = connect_or_fail("unload");
  if (c == NULL) return 1;
  char msg[AR_MSG_BYTES];
  int rc = ar_client_unload(c, argv[1], msg, sizeof(msg));
  ar_client_close(c);
  if (rc) return fail("unload", rc, msg);
  printf("unloaded %s\n", ar_cli_esc(argv[1]));
  return 0;
}

/* ------------------------------------------------------------------------------------------ */

/* Byte size of a tensor the daemon described (its dtype and dims), or 0 when a dim is unknown. */
static uint64_t tensor_bytes(const ar_client_tensor_t *t) {
  uint64_t b = ar_client_dtype_size(t->dtype);
  for (int32_t d = 0; d < t->rank; d++) b *= t->dims[d] > 0 ? (uint64_t)t->dims[d] : 0;
  return b;
}

/* The daemon's description of a tensor as arenactl's view (per-tensor quantization: first pair). */
static ar_cli_tensor_t cli_view(const ar_client_tensor_t *t) {
  ar_cli_tensor_t v = {.name = t->name, .dtype = t->dtype, .rank = t->rank, .data = t->data, .bytes = t->bytes,
                       .has_quant = t->quant.n > 0, .scale = t->quant.scale, .zero_point = t->quant.zero_point};
  for (int32_t d = 0; d < t->rank && d < AR_CLI_MAX_RANK; d++) v.dims[d] = t->dims[d];
  return v;
}

int ar_cmd_invoke(int argc, char **argv) {
  static const struct option opts[] = {{"input", required_argument, NULL, 'i'},
                                       {"output", required_argument, NULL, 'o'},
                                       {"shm", no_argument, NULL, 'S'},
                                       {"session", required_argument, NULL, 0x300},
                                       {"start", no_argument, NULL, 0x301},
                                       {"end", no_argument, NULL, 0x302},
                                       {"reset", no_argument, NULL, 0x303},
                                       AR_CLI_LONGOPTS,
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  const char *usage = "usage: arenactl invoke NAME --input F... [--output DIR] [--shm] [RESULTS]\n"
                      "       arenactl invoke NAME --image FILE [IMAGE] [--output DIR] [--shm] [RESULTS]\n"
                      "       arenactl invoke NAME ... --session ID [--start] [--end] [--reset]\n"
                      "  --shm  inputs and outputs through a shared-memory buffer registered with the daemon\n"
                      "  --session ID  run in session ID of a stateful model (its own state): --start opens it\n"
                      "         (again) from the initial state, --reset resets it first, --end closes it after;\n"
                      "         --reset alone resets the model's default state\n"
                      AR_CLI_USAGE;
  bool shm = false;
  ar_client_session_t sess = {0};
  bool use_sess = false;
  const char *inputs[AR_CLIENT_MAX_IO];
  int n_in = 0;
  const char *outdir = NULL;
  ar_cli_image_opts_t io;
  ar_cli_result_opts_t ro;
  ar_cli_opts_init(&io, &ro);
  int o;
  optind = 1;
  /* "-" first: non-option arguments come back as 1 so that "--input a b c" works. */
  const char *name = NULL;
  bool after_input = false;
  while ((o = getopt_long(argc, argv, "-i:o:h" AR_CLI_SHORTOPTS, opts, NULL)) != -1) {
    int taken = ar_cli_parse_opt("invoke", o, optarg, &io, &ro);
    if (taken < 0) return 2;
    if (taken > 0) {
      after_input = false;
      continue;
    }
    switch (o) {
      case 1:
        if (name == NULL && !after_input) name = optarg;
        else if (after_input && n_in < AR_CLIENT_MAX_IO) inputs[n_in++] = optarg;
        else {
          fprintf(stderr, "arenactl invoke: unexpected argument '%s' (the model's NAME is '%s'; input files "
                  "follow --input)\n%s", ar_cli_esc(optarg), name ? ar_cli_esc(name) : "", usage);
          return 2;
        }
        break;
      case 'i':
        if (n_in == AR_CLIENT_MAX_IO) {
          fprintf(stderr, "arenactl invoke: at most %d inputs\n", AR_CLIENT_MAX_IO);
          return 2;
        }
        inputs[n_in++] = optarg;
        after_input = true;
        break;
      case 'o': outdir = optarg; after_input = false; break;
      case 'S': shm = true; after_input = false; break;
      case 0x300: sess.id = optarg; use_sess = true; after_input = false; break;
      case 0x301: sess.start = true; use_sess = true; after_input = false; break;
      case 0x302: sess.end = true; use_sess = true; after_input = false; break;
      case 0x303: sess.reset = true; use_sess = true; after_input = false; break;
      default:
        fputs(usage, o == 'h' ? stdout : stderr);
        return o == 'h' ? 0 : 2;
    }
  }
  /* Say what is missing before the usage: a bare usage leaves the user to diff it by eye. */
  const char *missing = name == NULL ? "the model's NAME is missing (arenactl models lists the loaded ones)"
                        : n_in == 0 && io.path == NULL
                          ? "no input given: --input F (one raw file per model input, in order) or --image FILE "
                            "(a photograph for a one-input image model)"
                        : n_in > 0 && io.path != NULL ? "--input and --image exclude each other: give one of them"
                        : use_sess && shm ? "--session and --shm exclude each other (a session's invoke sends its "
                                            "tensors in the request)"
                        : (sess.start || sess.end) && sess.id == NULL ? "--start and --end need --session ID"
                                                      : NULL;
  if (missing != NULL) {
    fprintf(stderr, "arenactl invoke: %s\n%s", missing, usage);
    return 2;
  }
  if (ar_cli_opts_finish("invoke", &ro) != 0) {
    fprintf(stderr, "%s", usage);
    return 2;
  }
  char msg[AR_MSG_BYTES];
  int rc;
  if (outdir && (rc = ar_cli_output_dir(outdir, msg, sizeof(msg))) != 0) return fail("invoke", rc, msg);
  ar_client_t *c = connect_or_fail("invoke");
  if (c == NULL) return 1;
  int ret = 1;
  ar_client_model_t *ms = NULL, *m = NULL;
  size_t n_models = 0;
  ar_client_tensor_t tin[AR_CLIENT_MAX_IO];
  void *bufs[AR_CLIENT_MAX_IO] = {0};
  ar_client_result_t res = {0};
  ar_client_buffer_t *sbuf = NULL;
  ar_cli_image_geom_t geom;
  /* The model's input description (shapes, dtypes, quantization) comes from the daemon. */
  rc = ar_client_list(c, &ms, &n_models, msg, sizeof(msg));
  if (rc) {
    fail("invoke", rc, msg);
    goto out;
  }
  for (size_t i = 0; i < n_models; i++)
    if (strcmp(ms[i].name, name) == 0) m = &ms[i];
  if (m == NULL) {
    fprintf(stderr, "arenactl invoke: no model named '%s' is loaded (arenactl models lists them)\n", name);
    goto out;
  }
  if (io.path) {
    if (m->n_inputs != 1) {
      fprintf(stderr, "arenactl invoke: --image needs a model with one input ('%s' has %d)\n", name, m->n_inputs);
      goto out;
    }
    ar_cli_tensor_t desc = cli_view(&m->inputs[0]);
    uint64_t bytes = 0;
    rc = ar_cli_image_input(&io, &desc, &bufs[0], &bytes, &geom, msg, sizeof(msg));
    if (rc) {
      fail("invoke", rc, msg);
      goto out;
    }
    tin[0] = m->inputs[0];
    tin[0].data = bufs[0];
    tin[0].bytes = bytes;
    n_in = 1;
  } else {
    if (n_in != m->n_inputs) {
      fprintf(stderr, "arenactl invoke: model '%s' has %d input(s), %d given\n", name, m->n_inputs, n_in);
      ret = 2;
      goto out;
    }
    for (int i = 0; i < n_in; i++) {
      /* Shape and dtype are the model's (raw files carry none); the daemon checks a file's size.
       * A stream (/dev/zero, a pipe) is read up to the input's byte size. */
      if (i < m->n_inputs && i < AR_CLIENT_MAX_IO) tin[i] = m->inputs[i];
      else memset(&tin[i], 0, sizeof(tin[i]));
      uint64_t nb = 0;
      rc = ar_cli_read_input(inputs[i], tin[i].name, tensor_bytes(&tin[i]), &bufs[i], &nb, msg,
                             sizeof(msg));
      if (rc) {
        fail("invoke", rc, msg);
        goto out;
      }
      tin[i].data = bufs[i];
      tin[i].bytes = nb;
    }
  }
  if (shm) {
    /* One buffer: the inputs back to back, then room for every output of a known size (an
     * output with an unknown dim comes back in the reply). */
    uint64_t total = 0, in_off[AR_CLIENT_MAX_IO], out_off[AR_CLIENT_MAX_IO], out_bytes[AR_CLIENT_MAX_IO];
    int n_out = m->n_outputs < AR_CLIENT_MAX_IO ? m->n_outputs : AR_CLIENT_MAX_IO;
    for (int i = 0; i < n_in; i++) {
      in_off[i] = total;
      total += (tin[i].bytes + 63) & ~(uint64_t)63;
    }
    for (int j = 0; j < n_out; j++) {
      uint64_t b = tensor_bytes(&m->outputs[j]);
      out_off[j] = total;
      out_bytes[j] = b;
      total += (b + 63) & ~(uint64_t)63;
    }
    rc = ar_client_buffer_register(c, total ? total : 1, &sbuf, msg, sizeof(msg));
    if (rc) {
      fail("invoke --shm", rc, msg);
      goto out;
    }
    void *outp[AR_CLIENT_MAX_IO];
    for (int i = 0; i < n_in; i++) {
      ar_copy_bytes((uint8_t *)sbuf->data + in_off[i], tin[i].data, tin[i].bytes);
      tin[i].data = (uint8_t *)sbuf->data + in_off[i];
    }
    for (int j = 0; j < n_out; j++) outp[j] = out_bytes[j] ? (uint8_t *)sbuf->data + out_off[j] : NULL;
    rc = ar_client_invoke_into(c, name, tin, (size_t)n_in, outp, out_bytes, m->n_outputs == n_out ? (size_t)n_out : 0,
                               &res, msg, sizeof(msg));
  } else if (use_sess) {
    rc = ar_client_invoke_session(c, name, &sess, tin, (size_t)n_in, &res, msg, sizeof(msg));
  } else {
    rc = ar_client_invoke(c, name, tin, (size_t)n_in, &res, msg, sizeof(msg));
  }
  if (rc) {
    fail("invoke", rc, msg);
    goto out;
  }
  printf("%s: %d output(s), invoke %" PRIu64 " us, queued %" PRIu64 " us", name, res.n_outputs, res.invoke_us,
         res.queue_us);
  if (sess.id) printf(", session '%s'%s", ar_cli_esc(sess.id), sess.end ? " (ended)" : "");
  if (sbuf) printf(", through shared-memory buffer %u (%" PRIu64 " bytes)", sbuf->id, sbuf->bytes);
  printf("\n");
  if (res.state_reset[0]) printf("%s: %s\n", name, ar_cli_esc(res.state_reset));
  for (int32_t j = 0; j < res.n_outputs && j < AR_CLIENT_MAX_IO; j++) {
    const ar_client_tensor_t *t = &res.outputs[j];
    char sh[96];
    shape_str(sh, sizeof(sh), t->dims, t->rank);
    ar_cli_tensor_t v = cli_view(t);
    const uint64_t n = ar_cli_elements(&v);
    if (n > 0 && !isnan(ar_cli_value(&v, 0))) {
      /* Real values: dequantized for quantized outputs. */
      double mn = INFINITY, mx = -INFINITY, sum = 0;
      for (uint64_t k = 0; k < n; k++) {
        double x = ar_cli_value(&v, k);
        mn = fmin(mn, x);
        mx = fmax(mx, x);
        sum += x;
      }
      printf("  output %d %-20s %-16s min %-12.6g max %-12.6g mean %.6g", j, ar_cli_esc(t->name), sh, mn, mx, sum / (double)n);
      if (t->quant.n > 0)
        printf("  (%s, scale %.9g zero point %" PRId64 "%s)", t->dtype == AR_CLIENT_UINT8 ? "uint8" : t->dtype == AR_CLIENT_INT8 ? "int8" : "quantized",
               t->quant.scale, t->quant.zero_point, t->quant.n > 1 ? ", per-axis" : "");
      printf("\n");
    } else {
      printf("  output %d %-20s %-16s %" PRIu64 " bytes\n", j, ar_cli_esc(t->name), sh, t->bytes);
    }
    if (outdir) {
      char path[PATH_MAX];
      snprintf(path, sizeof(path), "%s/output_%d.bin", outdir, j);
      FILE *f = fopen(path, "wb");
      bool ok = f != NULL && fwrite(t->data, 1, t->bytes, f) == t->bytes;
      if (f && fclose(f) != 0) ok = false;
      if (!ok) {
        fprintf(stderr, "arenactl invoke: cannot write %s: %s\n", path, strerror(errno));
        goto out;
      }
    }
  }
  if (outdir) printf("  wrote output_<j>.bin to %s\n", outdir);
  {
    ar_cli_tensor_t v[AR_CLIENT_MAX_IO];
    int nv = res.n_outputs < AR_CLIENT_MAX_IO ? res.n_outputs : AR_CLIENT_MAX_IO;
    for (int j = 0; j < nv; j++) v[j] = cli_view(&res.outputs[j]);
    if (ar_cli_print_results("invoke", &ro, v, nv, io.path ? &geom : NULL) != 0) goto out;
  }
  ret = 0;
out:
  ar_client_result_free(&res);
  if (sbuf) ar_client_buffer_release(c, sbuf, msg, sizeof(msg));
  for (int i = 0; i < AR_CLIENT_MAX_IO; i++) free(bufs[i]);
  free(ms);
  ar_client_close(c);
  return ret;
}

/* ------------------------------------------------------------------------------------------ */

/* Swim-lane chart from the budget JSON: x = operator index, y = offset; one bar per buffer. */
static int plan_svg(json_t *plan, const char *name, const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL) return -1;
  double arena = (double)jint(plan, "arena_bytes"), bound = (double)jint(plan, "lower_bound_bytes");
  double ops = (double)jint(plan, "operators");
  if (ops < 1) ops = 1;
  if (arena <= 0) arena = 1;
  const double W = 1000, H = 600, L = 70, T = 40;
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
             "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          W + L + 20, H + T + 50);
  /* Names come from the daemon and the model file: XML-escaped (ar_xml_write_text). */
  fprintf(f, "<text x=\"%.0f\" y=\"20\">", L);
  ar_xml_write_text(f, name);
  fprintf(f, ": arena %.0f B, lower bound %.0f B (x: operator, y: offset)</text>\n", arena, bound);
  size_t i;
  json_t *b;
  json_array_foreach(json_object_get(plan, "buffers"), i, b) {
    const char *cls = jstr(b, "class");
    if (strcmp(cls, "persistent") == 0) continue;
    double x0 = L + W * (double)jint(b, "first_use") / ops, x1 = L + W * ((double)jint(b, "last_use") + 1) / ops;
    double y0 = T + H - H * ((double)jint(b, "offset") + (double)jint(b, "size")) / arena;
    double h = H * (double)jint(b, "size") / arena;
    fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" fill-opacity=\"0.7\" "
               "stroke=\"black\" stroke-width=\"0.3\"><title>tensor %" JSON_INTEGER_FORMAT " ",
            x0, y0, x1 - x0, h, strcmp(cls, "scratch") == 0 ? "#e4572e" : "#4c78a8", jint(b, "tensor"));
    ar_xml_write_text(f, jstr(b, "name"));
    fprintf(f, ": %" JSON_INTEGER_FORMAT " B at %" JSON_INTEGER_FORMAT ", ops %" JSON_INTEGER_FORMAT "-%" JSON_INTEGER_FORMAT
               "</title></rect>\n",
            jint(b, "size"), jint(b, "offset"), jint(b, "first_use"), jint(b, "last_use"));
  }
  double yb = T + H - H * bound / arena;
  fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"green\" stroke-dasharray=\"4\"/>\n", L, L + W,
          yb, yb);
  fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"red\"/>\n", L, L + W, T, T);
  fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">blue: activations, orange: scratch, red line: arena, green dashes: lower "
             "bound</text>\n</svg>\n",
          L, T + H + 30);
  return fclose(f);
}

int ar_cmd_plan_remote(int argc, char **argv) {
  static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                       {"svg", required_argument, NULL, 's'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
  bool as_json = false;
  const char *svg = NULL;
  int o;
  optind = 1;
  while ((o = getopt_long(argc, argv, "js:h", opts, NULL)) != -1) {
    if (o == 'j') as_json = true;
    else if (o == 's') svg = optarg;
    else {
      fprintf(o == 'h' ? stdout : stderr, "usage: arenactl plan NAME [--json|--svg FILE]   (NAME of a loaded model)\n");
      return o == 'h' ? 0 : 2;
    }
  }
  if (argc - optind != 1) {
    fprintf(stderr, "usage: arenactl plan NAME [--json|--svg FILE]   (NAME of a loaded model)\n");
    return 2;
  }
  const char *name = argv[optind];
  ar_client_t *c = connect_or_fail_json("plan", as_json);
  if (c == NULL) return 1;
  char *s = NULL, msg[AR_MSG_BYTES];
  int rc = ar_client_plan_json(c, name, &s, msg, sizeof(msg));
  ar_client_close(c);
  if (rc) return as_json ? ar_cli_json_error(rc, msg, NULL, 0) : fail("plan", rc, msg);
  if (as_json) {
    printf("%s\n", s);
    free(s);
    return 0;
  }
  json_error_t err;
  json_t *plan = json_loads(s, 0, &err);
  free(s);
  if (plan == NULL) return fail("plan", AR_EPROTO, "the daemon's budget table is not valid JSON");
  int ret = 0;
  if (svg) {
    if (plan_svg(plan, name, svg) != 0) {
      fprintf(stderr, "arenactl plan: cannot write %s: %s\n", svg, strerror(errno));
      ret = 1;
    } else {
      printf("wrote %s\n", svg);
    }
  } else {
    printf("%6s %-40s %-10s %10s %10s %6s %6s %6s\n", "tensor", "name", "class", "size", "offset", "first", "last",
           "alias");
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(plan, "buffers"), i, b) {
      printf("%6" JSON_INTEGER_FORMAT " %-40.40s %-10s %10" JSON_INTEGER_FORMAT " %10" JSON_INTEGER_FORMAT
             " %6" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT " %6" JSON_INTEGER_FORMAT "\n",
             jint(b, "tensor"), ar_cli_esc(jstr(b, "name")), jstr(b, "class"), jint(b, "size"), jint(b, "offset"),
             jint(b, "first_use"), jint(b, "last_use"), jint(b, "alias_of"));
    }
    printf("\n%s (%s, lifetimes %s): arena %" JSON_INTEGER_FORMAT " B (tensors %" JSON_INTEGER_FORMAT
           " B), lower bound %" JSON_INTEGER_FORMAT " B, ratio %.3f, naive %" JSON_INTEGER_FORMAT
           " B, persistent %" JSON_INTEGER_FORMAT " B, scratch %" JSON_INTEGER_FORMAT " B, alignment %" JSON_INTEGER_FORMAT
           "\n",
           name, jstr(plan, "strategy"), jstr(plan, "lifetimes"), jint(plan, "arena_bytes"),
           jint(plan, "tensor_arena_bytes"), jint(plan, "lower_bound_bytes"),
           json_number_value(json_object_get(plan, "ratio_to_bound")), jint(plan, "naive_bytes"),
           jint(plan, "persistent_bytes"), jint(plan, "scratch_bytes"), jint(plan, "alignment"));
    printf("weights (%s): %" JSON_INTEGER_FORMAT " B in the model mapping, folded %" JSON_INTEGER_FORMAT
           " B + packed %" JSON_INTEGER_FORMAT " B persistent, widened at use %" JSON_INTEGER_FORMAT " B\n",
           jstr(plan, "weights"), jint(plan, "weights_bytes"), jint(plan, "folded_bytes"), jint(plan, "packed_bytes"),
           jint(plan, "widened_bytes"));
    json_t *fused = json_object_get(plan, "fused");
    printf("fused: %" JSON_INTEGER_FORMAT " B of expansion-conv outputs without a buffer (%zu CONV_2D run inside "
           "their DEPTHWISE_CONV_2D%s", jint(plan, "fused_bytes"), json_array_size(fused),
           json_array_size(fused) ? ":" : ")\n");
    json_t *fz;
    json_array_foreach(fused, i, fz)
      printf(" %" JSON_INTEGER_FORMAT "->%" JSON_INTEGER_FORMAT "%s", jint(fz, "conv"), jint(fz, "depthwise"),
             i + 1 == json_array_size(fused) ? ")\n" : ",");
    /* The tensors without a row, as the offline table shows them (interp/ar_budget.h). */
    json_t *nc = json_object_get(plan, "no_buffer_counts");
    if (json_is_object(nc)) {
      printf("no buffer: %" JSON_INTEGER_FORMAT " B never stored: %" JSON_INTEGER_FORMAT " tensor(s) elided%s %"
             JSON_INTEGER_FORMAT " constant(s) (%" JSON_INTEGER_FORMAT " B in the model mapping), %" JSON_INTEGER_FORMAT
             " unused, of %" JSON_INTEGER_FORMAT " tensors\n",
             jint(nc, "elided_bytes"), jint(nc, "elided"), jint(nc, "elided") ? " (below)," : ",", jint(nc, "constant"),
             jint(nc, "constant_bytes"), jint(nc, "unused"), jint(plan, "tensors"));
      json_array_foreach(json_object_get(plan, "no_buffer"), i, fz) {
        if (strcmp(jstr(fz, "kind"), "constant") == 0) continue;
        printf("%6" JSON_INTEGER_FORMAT " %-40.40s %-10s %10" JSON_INTEGER_FORMAT "  %s\n", jint(fz, "tensor"),
               ar_cli_esc(jstr(fz, "name")), jstr(fz, "kind"), jint(fz, "bytes"), ar_cli_esc(jstr(fz, "reason")));
      }
    }
  }
  json_decref(plan);
  return ret;
}
