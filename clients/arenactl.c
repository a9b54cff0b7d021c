/* arenactl.c - command-line front end: offline tools on model files and a client of arenad.
 *
 *   arenactl [-s SOCKET] COMMAND [ARGS]
 * `plan` goes offline when its argument names a model file, and asks the daemon otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clients/arenactl.h"
#include "clients/cli_tensor.h"
#include "config.h"
#include "kernels/ar_isa.h"

const char *arenactl_socket = NULL;
const char *arenactl_socket_origin = "default";

typedef struct {
  const char *name;
  int (*fn)(int, char **);
  const char *help;
} command_t;

/* One line per form of each command, with every option it takes (tests/check_cli.c holds this
 * list to the option tables of the commands, docs/arenactl.1 and README). */
static const command_t commands[] = {
  {"inspect", ar_cmd_inspect,
   "inspect MODEL [--json] [--tensors]\n"
   "      operators, tensors (--tensors: every one), I/O, quantization, weights (offline)"},
  {"ops", ar_cmd_ops,
   "ops [--json] [--markdown TFLITE_TSV]\n"
   "      the operators, versions and dtypes the kernels run; --markdown: docs/ops.md, beside\n"
   "      TensorFlow Lite's builtin kernels (data/tflite_ops.tsv) (offline)"},
  {"plan", NULL,
   "plan MODEL [--strategy linear|first-fit|greedy-by-size|best] [--lifetimes tflite|arenad]\n"
   "      [--no-inplace] [--weights stored|fp32] [--no-fuse] [--json] [--svg FILE]\n"
   "      the memory plan of a model file (offline)\n"
   "  plan NAME [--json] [--svg FILE]\n"
   "      the memory plan of a model loaded in the daemon"},
  {"run", ar_cmd_run,
   "run MODEL --input F... | --image FILE [IMAGE] [--output DIR] [--runs N] [--strategy S]\n"
   "      [--lifetimes tflite|arenad] [--no-inplace] [--weights stored|fp32] [--threads N]\n"
   "      [--input-shape D,D,...]... [RESULTS]\n"
   "      run a model file in this process (offline)\n"
   "  run MODEL --steps DIR [--output OUT] [--reset-at K[,K...]]... [plan options]\n"
   "      replay a stream on one interpreter: DIR/<k>/input_<i>.bin -> OUT/<k>/output_<j>.bin"},
  {"bench", ar_cmd_bench,
   "bench MODEL [--input F...] [--seed N] [--runs N] [--warmup N] [--min-secs S] [--threads N]\n"
   "      [--profile] [--json] [--strategy S] [--lifetimes L] [--no-inplace] [--weights W] [--no-fuse]\n"
   "      benchmark a model file in this process like TFLite's benchmark_model: init, first\n"
   "      invoke, warm-up, mean/std/min/median/p90/p99 of the runs, memory, per-op profile (offline)"},
  {"ping", ar_cmd_ping, "ping\n      round trip to the daemon"},
  {"stats", ar_cmd_stats,
   "stats [--json | --prometheus [--output FILE]] [--watch SECONDS] [--from STATS.json]\n"
   "      pool map, models, latency, memory"},
  {"models", ar_cmd_models, "models\n      loaded models"},
  {"load", ar_cmd_load,
   "load NAME PATH [--group G] [--strategy S] [--weights stored|fp32]\n"
   "      load a model file (admins; a relative PATH is from the current directory)"},
  {"unload", ar_cmd_unload, "unload NAME\n      unload a model (admins)"},
  {"compact", ar_cmd_compact,
   "compact [--json]\n      move regions so the pool's free bytes are one block (admins)"},
  {"reload", ar_cmd_reload, "reload\n      re-read the config and model files (admins)"},
  {"invoke", ar_cmd_invoke,
   "invoke NAME --input F... | --image FILE [IMAGE] [--output DIR] [--shm] [RESULTS]\n"
   "      run a loaded model; --shm: tensors through a shared-memory buffer registered with the\n"
   "      daemon; an --input that is not a regular file (/dev/zero, a pipe) is read up to the\n"
   "      input's byte size; --output DIR is created if missing (one level)\n"
   "  invoke NAME ... --session ID [--start] [--end] [--reset]\n"
   "      in a session of a stateful model (its own state; --start opens it, --end closes it)"},
  {"reset-session", ar_cmd_reset_session,
   "reset-session NAME SESSION [--end]\n      a session's state back to its initial value (--end: close it)"},
};

static void usage(FILE *out) {
  fprintf(out, "usage: arenactl [-s SOCKET] COMMAND [ARGS]\n"
               "       arenactl COMMAND --help\n"
               "       arenactl --version   (version, and the kernel ISA paths and OpenBLAS core in use)\n\n"
               "commands:\n");
  for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
    fprintf(out, "  %s\n", commands[i].help);
  fprintf(out, "\n" AR_CLI_USAGE);
  fprintf(out, "\noptions:\n"
               "  -s, --socket PATH   the daemon's socket: -s PATH, else $ARENAD_SOCKET, else %s\n"
               "  -h, --help          this text\n"
               "  -V, --version       version and kernel paths\n", AR_DEFAULT_SOCKET);
}

/* A plan argument is a model file when it exists as a regular file or looks like a path. */
static int is_model_file(const char *arg) {
  struct stat st;
  if (strchr(arg, '/') != NULL) return 1;
  size_t n = strlen(arg);
  if (n > 7 && strcmp(arg + n - 7, ".tflite") == 0) return 1;
  return stat(arg, &st) == 0 && S_ISREG(st.st_mode);
}

int main(int argc, char **argv) {
  int i = 1;
  arenactl_socket = getenv("ARENAD_SOCKET");
  if (arenactl_socket != NULL && *arenactl_socket != '\0') arenactl_socket_origin = "$ARENAD_SOCKET";
  while (i < argc && argv[i][0] == '-') {
    if ((strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--socket") == 0) && i + 1 < argc) {
      arenactl_socket = argv[i + 1];
      arenactl_socket_origin = "-s";
      i += 2;
    } else if (strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--socket") == 0) {
      fprintf(stderr, "arenactl: option '%s' requires a socket path\n", argv[i]);
      return 2;
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
      char isa[1024];
      ar_isa_report(isa, sizeof isa);
      printf("arenactl %s\n%s", PACKAGE_VERSION, isa);
      return 0;
    } else {
      fprintf(stderr, "arenactl: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (arenactl_socket == NULL || *arenactl_socket == '\0') {
    arenactl_socket = AR_DEFAULT_SOCKET;
    arenactl_socket_origin = "default";
  }
  if (i >= argc) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[i];
  if (strcmp(cmd, "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "plan") == 0) {
    if (i + 1 < argc && argv[i + 1][0] != '-' && is_model_file(argv[i + 1]))
      return ar_cmd_plan_file(argc - i, argv + i);
    return ar_cmd_plan_remote(argc - i, argv + i);
  }
  for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++)
    if (commands[c].fn && strcmp(cmd, commands[c].name) == 0) return commands[c].fn(argc - i, argv + i);
  fprintf(stderr, "arenactl: unknown command '%s'\n", cmd);
  usage(stderr);
  return 2;
}
