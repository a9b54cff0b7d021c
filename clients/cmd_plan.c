/* cmd_plan.c - arenactl plan MODEL [--strategy S] [--lifetimes tflite|arenad] [--no-inplace]
 *             [--weights stored|fp32] [--no-fuse] [--json] [--svg F]  (offline).
 *
 * Prepares the model with the interpreter (kernel prepare gives the scratch sizes), plans it with
 * the strategy and lifetime convention asked for, verifies the plan, and prints the budget table
 * (text, or JSON with the keys of ar_budget.h); --svg also writes the swim-lane chart. Nothing is
 * placed or run: this is the memory contract of the model before any daemon loads it.
 */
#include <getopt.h>
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clients/arenactl.h"
#include "clients/cli_io.h"
#include "common/ar_error.h"
#include "common/ar_path.h"
#include "interp/ar_budget.h"
#include "interp/ar_interp.h"
#include "loader/ar_model.h"

static void plan_usage(FILE *out) {
  fprintf(out,
          "usage: arenactl plan MODEL [--strategy linear|first-fit|greedy-by-size|best]\n"
          "                           [--lifetimes tflite|arenad] [--no-inplace] [--weights stored|fp32]\n"
          "                           [--no-fuse] [--json] [--svg FILE]\n"
          "  Plans MODEL's memory offline and prints its budget table (default: best, arenad).\n");
}

int ar_cmd_plan_file(int argc, char **argv) {
  static const struct option longopts[] = {
    {"strategy", required_argument, NULL, 'S'},
    {"lifetimes", required_argument, NULL, 'l'},
    {"no-inplace", no_argument, NULL, 'n'},
    {"weights", required_argument, NULL, 'W'},
    {"no-fuse", no_argument, NULL, 'F'},
    {"json", no_argument, NULL, 'j'},
    {"svg", required_argument, NULL, 'g'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  bool json = false;
  const char *svg = NULL;
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "S:l:nW:Fjg:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'S':
      if (ar_strategy_parse(optarg, &opt.strategy) != 0) {
        fprintf(stderr, "arenactl plan: unknown strategy '%s'\n", optarg);
        return 2;
      }
      break;
    case 'l':
      if (ar_lifetimes_parse(optarg, &opt.lifetimes) != 0) {
        fprintf(stderr, "arenactl plan: unknown lifetimes '%s' (tflite or arenad)\n", optarg);
        return 2;
      }
      break;
    case 'n': opt.inplace = false; break;
    case 'W':
      if (ar_weights_parse(optarg, &opt.weights) != 0) {
        fprintf(stderr, "arenactl plan: unknown weights mode '%s' (stored or fp32)\n", optarg);
        return 2;
      }
      break;
    case 'F': opt.fuse = false; break;
    case 'j': json = true; break;
    case 'g': svg = optarg; break;
    case 'h': plan_usage(stdout); return 0;
    default: plan_usage(stderr); return 2;
    }
  }
  if (optind != argc - 1) {
    plan_usage(stderr);
    return 2;
  }
  const char *path = argv[optind];
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *model = NULL;
  /* Described, not refused, at load: the interpreter's refusal then lists every operator that
   * cannot run, whether the loader or a kernel is the one that does not know it. */
  int rc = ar_model_load_describe(path, &model, msg, sizeof msg);
  if (rc != 0) {
    if (json) return ar_cli_json_error(rc, msg, NULL, 0);
    fprintf(stderr, "arenactl plan: %s: %s: %s\n", path, ar_strerror(rc), ar_cli_esc(msg));
    return 1;
  }
  ar_interp_t *in = NULL;
  rc = ar_interp_new(model, &opt, &in, msg, sizeof msg);
  if (rc != 0) {
    if (json) {
      static ar_unsupported_t ops[256];
      int32_t n = 0;
      char m2[AR_MSG_BYTES];
      if (rc == AR_EUNSUPPORTED) ar_interp_unsupported(model, &opt, ops, 256, &n, m2, sizeof m2);
      ar_cli_json_error(rc, msg, ops, n);
    } else {
      fprintf(stderr, "arenactl plan: %s: %s: %s\n", path, ar_strerror(rc), ar_cli_esc(msg));
    }
    ar_model_free(model);
    return 1;
  }
  int status = 0;
  /* Open the SVG first: a bad path fails before anything is printed. */
  FILE *svg_file = NULL;
  if (svg != NULL && (svg_file = fopen(svg, "w")) == NULL) {
    fprintf(stderr, "arenactl plan: cannot write %s: %s\n", svg, strerror(errno));
    ar_interp_free(in);
    ar_model_free(model);
    return 1;
  }
  rc = ar_planner_verify(ar_interp_planner(in), msg, sizeof msg);
  if (rc != 0) {
    fprintf(stderr, "arenactl plan: %s: plan fails verification: %s\n", path, ar_cli_esc(msg));
    status = 1;
  }
  if (json) {
    json_t *j = ar_budget_json(in);
    if (j == NULL || json_dumpf(j, stdout, JSON_INDENT(2)) != 0) {
      fprintf(stderr, "arenactl plan: cannot write JSON\n");
      status = 1;
    } else {
      fputc('\n', stdout);
    }
    json_decref(j);
  } else if (ar_budget_print(stdout, in) != 0) {
    fprintf(stderr, "arenactl plan: cannot write the budget table\n");
    status = 1;
  }
  if (svg_file != NULL) {
    if (ar_budget_svg(svg_file, in, ar_path_base(path)) != 0 || ferror(svg_file)) {
      fprintf(stderr, "arenactl plan: cannot write %s\n", svg);
      status = 1;
    }
    if (fclose(svg_file) != 0) {
      fprintf(stderr, "arenactl plan: cannot write %s: %s\n", svg, strerror(errno));
      status = 1;
    }
  }
  ar_interp_free(in);
  ar_model_free(model);
  return status;
}
