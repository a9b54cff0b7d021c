/* cmd_run.c - arenactl run (offline, in-process): load a model, plan and place it in memory owned
 * by this process, run it on raw little-endian input files, write output_<j>.bin, and print each
 * output's shape and min/max/mean plus the median invoke time.
 *
 *   arenactl run MODEL --input F [--input F2 ...] [--output DIR] [--runs N] [--strategy S]
 *                [--lifetimes tflite|arenad] [--no-inplace] [--weights stored|fp32] [--threads N]
 *                [--input-shape D,D,...]...
 *   arenactl run MODEL --image FILE [--range LO,HI] [--fit F] [--crop L,T,R,B] [same options]
 *   ... [--labels FILE] [--top K] | [--detections [--labels FILE] [--min-score S]]
 *   arenactl run MODEL --steps DIR [--output OUT] [--reset-at K[,K...]]... [same plan options]
 *
 * --image fills a one-image model's input as `arenactl invoke --image` does (float32 scaled,
 * uint8/int8 coded per clients/image.h); --top/--detections print classes or detection rows
 * (clients/cli_tensor.h). Quantized outputs are summarised by their real (dequantized) values.
 *
 * --input-shape (once per input, in input order) resizes an input whose shape_signature has -1
 * dims (TFLite ResizeInputTensor); inputs whose values set shapes (PAD paddings, RESHAPE shape
 * fed by a graph input) are given their file's value. Either re-plans the model before the runs.
 *
 * --steps replays a stream on one interpreter (clients/cmd_run_steps.c: DIR/<k>/input_<i>.bin in,
 * OUT/<k>/output_<j>.bin out, the state reset before each --reset-at step).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "clients/arenactl.h"
#include "clients/cli_io.h"
#include "clients/cli_tensor.h"
#include "clients/cmd_run_steps.h"
#include "common/ar_error.h"
#include "common/ar_stats.h"
#include "common/ar_util.h"
#include "interp/ar_interp.h"
#include "kernels/ar_parallel.h"
#include "loader/ar_model.h"

#define RUN_MAX_INPUTS 16

static void run_usage(FILE *f) {
  fprintf(f,
          "usage: arenactl run MODEL --input F [--input F ...] [--output DIR] [--runs N]\n"
          "                    [--strategy linear|first-fit|greedy-by-size|best]\n"
          "                    [--lifetimes tflite|arenad] [--no-inplace] [--threads N]\n"
          "                    [--weights stored|fp32]\n"
          "                    [--input-shape D,D,... (once per input, in order)]\n"
          "       arenactl run MODEL --image FILE [IMAGE] [same options]   (instead of --input)\n"
          "       arenactl run MODEL --steps DIR [--output OUT] [--reset-at K[,K...]]...\n"
          AR_CLI_USAGE
          "Inputs are raw little-endian tensors in the model's input order; outputs are written\n"
          "as DIR/output_<j>.bin. Prints each output's shape, min/max/mean and the median invoke\n"
          "time over N runs (default 1). --threads N splits each invoke over N threads (default\n"
          "1; outputs are bit-identical for every N).\n"
          "--steps replays a stream on ONE interpreter (state carries over): invoke k reads\n"
          "DIR/<k>/input_<i>.bin and writes OUT/<k>/output_<j>.bin; the state is reset to its\n"
          "initial value before each step K of --reset-at (TFLite ResetVariableTensors).\n");
}

static void print_shape(const ar_tview_t *v) {
  printf("[");
  for (int32_t d = 0; d < v->rank; d++) printf("%s%d", d ? "," : "", v->dims[d]);
  printf("]");
}

/* Output j of the interpreter as arenactl's tensor view (per-tensor quantization: first pair). */
static ar_cli_tensor_t cli_view(ar_interp_t *in, int32_t j) {
  const ar_tview_t *v = ar_interp_output(in, j);
  ar_cli_tensor_t t = {.name = ar_interp_output_name(in, j), .dtype = v->dtype, .rank = v->rank, .data = v->data,
                       .bytes = v->bytes, .has_quant = v->quant && v->quant->n > 0};
  for (int32_t d = 0; d < v->rank && d < AR_CLI_MAX_RANK; d++) t.dims[d] = v->dims[d];
  if (t.has_quant) t.scale = v->quant->scale[0], t.zero_point = v->quant->zero_point[0];
  return t;
}

/* A whole number in [1, 1000000] from `arg`, or -1 (garbage, sign, overflow). */
static int parse_count(const char *arg) {
  char *end = NULL;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (errno != 0 || end == arg || *end != '\0' || v < 1 || v > 1000000) return -1;
  return (int)v;
}

int ar_cmd_run(int argc, char **argv) {
  static const struct option longopts[] = {
    {"input", required_argument, NULL, 'i'},   {"output", required_argument, NULL, 'o'},
    {"runs", required_argument, NULL, 'n'},    {"strategy", required_argument, NULL, 's'},
    {"lifetimes", required_argument, NULL, 'l'}, {"no-inplace", no_argument, NULL, 'P'},
    {"threads", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'},
    {"input-shape", required_argument, NULL, 'S'}, {"weights", required_argument, NULL, 'W'},
    {"steps", required_argument, NULL, 'T'},   {"reset-at", required_argument, NULL, 'R'},
    AR_CLI_LONGOPTS,
    {NULL, 0, NULL, 0},
  };
  ar_cli_image_opts_t io;
  ar_cli_result_opts_t ro;
  ar_cli_opts_init(&io, &ro);
  ar_cli_image_geom_t geom;
  const char *inputs[RUN_MAX_INPUTS];
  int n_inputs = 0, runs = 1, n_shapes = 0;
  int32_t shape_rank[RUN_MAX_INPUTS], shapes[RUN_MAX_INPUTS][AR_MAX_RANK];
  const char *outdir = NULL, *model_path = NULL, *steps_dir = NULL;
  int32_t reset_at[AR_CLI_MAX_RESETS];
  int n_reset = 0;
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, "i:o:n:s:l:t:hS:W:" AR_CLI_SHORTOPTS, longopts, NULL)) != -1) {
    int taken = ar_cli_parse_opt("run", c, optarg, &io, &ro);
    if (taken < 0) return 2;
    if (taken > 0) continue;
    switch (c) {
      case 'S': {
        if (n_shapes >= RUN_MAX_INPUTS) {
          fprintf(stderr, "arenactl run: at most %d --input-shape\n", RUN_MAX_INPUTS);
          return 2;
        }
        int32_t r = 0;
        const char *p = optarg;
        while (*p) {
          char *end = NULL;
          errno = 0;
          long v = strtol(p, &end, 10);
          if (errno != 0 || end == p || v < 1 || v > INT32_MAX || r == AR_MAX_RANK || (*end && *end != ',')) {
            fprintf(stderr, "arenactl run: --input-shape '%s': want dims >= 1 separated by commas (at most %d)\n",
                    optarg, AR_MAX_RANK);
            return 2;
          }
          shapes[n_shapes][r++] = (int32_t)v;
          p = *end ? end + 1 : end;
        }
        shape_rank[n_shapes++] = r;
        break;
      }
      case 'i':
        if (n_inputs >= RUN_MAX_INPUTS) {
          fprintf(stderr, "arenactl run: at most %d inputs\n", RUN_MAX_INPUTS);
          return 2;
        }
        inputs[n_inputs++] = optarg;
        break;
      case 'o': outdir = optarg; break;
      case 'T': steps_dir = optarg; break;
      case 'R':
        if (ar_cli_parse_reset_list(optarg, reset_at, &n_reset, AR_CLI_MAX_RESETS) != 0) {
          fprintf(stderr, "arenactl run: --reset-at '%s': want step numbers >= 0 separated by commas (at most %d in all)\n",
                  optarg, AR_CLI_MAX_RESETS);
          return 2;
        }
        break;
      case 'n':
        runs = parse_count(optarg);
        if (runs < 1) {
          fprintf(stderr, "arenactl run: --runs '%s': must be a whole number from 1 to 1000000\n", optarg);
          return 2;
        }
        break;
      case 's':
        if (ar_strategy_parse(optarg, &opt.strategy) != 0) {
          fprintf(stderr, "arenactl run: unknown strategy '%s'\n", optarg);
          return 2;
        }
        break;
      case 'l':
        if (ar_lifetimes_parse(optarg, &opt.lifetimes) != 0) {
          fprintf(stderr, "arenactl run: unknown lifetime convention '%s'\n", optarg);
          return 2;
        }
        break;
      case 'P': opt.inplace = false; break;
      case 'W':
        if (ar_weights_parse(optarg, &opt.weights) != 0) {
          fprintf(stderr, "arenactl run: unknown weights mode '%s' (stored or fp32)\n", optarg);
          return 2;
        }
        break;
      case 't':
        opt.threads = parse_count(optarg);
        if (opt.threads < 1 || opt.threads > AR_POOL_THREADS_MAX) {
          fprintf(stderr, "arenactl run: --threads '%s': must be a whole number from 1 to 256\n", optarg);
          return 2;
        }
        break;
      case 'h': run_usage(stdout); return 0;
      default: run_usage(stderr); return 2;
    }
  }
  /* MODEL first, then further positional arguments are taken as inputs too. */
  for (int i = optind; i < argc; i++) {
    if (!model_path) {
      model_path = argv[i];
    } else if (n_inputs < RUN_MAX_INPUTS) {
      inputs[n_inputs++] = argv[i];
    } else {
      fprintf(stderr, "arenactl run: at most %d inputs\n", RUN_MAX_INPUTS);
      return 2;
    }
  }
  if (!model_path || (io.path && n_inputs > 0)) {
    fprintf(stderr, "arenactl run: %s\n", !model_path ? "the MODEL file is missing"
                                                      : "--input and --image exclude each other: give one of them");
    run_usage(stderr);
    return 2;
  }
  if (ar_cli_opts_finish("run", &ro) != 0) {
    run_usage(stderr);
    return 2;
  }
  if (steps_dir && (io.path || n_inputs > 0 || n_shapes > 0 || runs != 1)) {
    fprintf(stderr, "arenactl run: --steps reads every input from DIR/<k>/; it takes no --input, --image, "
                    "--input-shape or --runs\n");
    return 2;
  }
  if (n_reset > 0 && !steps_dir) {
    fprintf(stderr, "arenactl run: --reset-at needs --steps\n");
    return 2;
  }

  char msg[AR_MSG_BYTES] = "";
  ar_model_t *model = NULL;
  ar_interp_t *in = NULL;
  void *data[RUN_MAX_INPUTS] = {0};
  double *times = NULL;
  int status = 1;
  int rc = outdir ? ar_cli_output_dir(outdir, msg, sizeof msg) : 0;
  if (rc != 0) {
    fprintf(stderr, "arenactl run: %s (%s)\n", ar_cli_esc(msg), ar_err_name(rc));
    return 1;
  }
  rc = ar_model_load_describe(model_path, &model, msg, sizeof msg);
  if (rc != 0) {
    fprintf(stderr, "arenactl run: %s: %s: %s\n", model_path, ar_strerror(rc), ar_cli_esc(msg));
    goto out;
  }
  rc = ar_interp_new(model, &opt, &in, msg, sizeof msg);
  if (rc != 0) {
    fprintf(stderr, "arenactl run: %s: %s: %s\n", model_path, ar_strerror(rc), ar_cli_esc(msg));
    goto out;
  }
  if (io.path && ar_interp_n_inputs(in) != 1) {
    fprintf(stderr, "arenactl run: --image needs a model with one input (it has %d)\n", ar_interp_n_inputs(in));
    status = 2;
    goto out;
  }
  if (steps_dir) {
    rc = ar_interp_needs_prepare(in) ? ar_interp_prepare(in, msg, sizeof msg) : 0;
    if (rc == 0) rc = ar_interp_place_owned(in, msg, sizeof msg);
    if (rc != 0) {
      fprintf(stderr, "arenactl run: %s: %s: %s\n", model_path, ar_strerror(rc), ar_cli_esc(msg));
      goto out;
    }
    printf("model %s: %d operators (%d at invoke), arena %llu bytes, persistent %llu bytes\n", model_path,
           ar_interp_n_operators(in), ar_interp_runtime_operators(in),
           (unsigned long long)ar_interp_arena_bytes(in), (unsigned long long)ar_interp_persistent_bytes(in));
    status = ar_cli_run_steps(in, steps_dir, outdir, reset_at, n_reset);
    goto out;
  }
  if (!io.path && n_inputs != ar_interp_n_inputs(in)) {
    fprintf(stderr, "arenactl run: the model has %d input(s), %d given\n", ar_interp_n_inputs(in), n_inputs);
    status = 2;
    goto out;
  }
  if (n_shapes > n_inputs) {
    fprintf(stderr, "arenactl run: %d --input-shape for %d input(s)\n", n_shapes, n_inputs);
    status = 2;
    goto out;
  }
  for (int i = 0; i < n_shapes; i++) {
    rc = ar_interp_resize_input(in, i, shape_rank[i], shapes[i], msg, sizeof msg);
    if (rc != 0) {
      fprintf(stderr, "arenactl run: --input-shape: %s\n", msg);
      goto out;
    }
  }
  /* Inputs whose values set shapes are read before the re-plan, the others after it (when their
   * sizes are known); each is read once, so that a pipe or /dev/urandom gives one tensor. */
  uint64_t in_bytes[RUN_MAX_INPUTS] = {0};
  for (int i = 0; i < n_inputs && !io.path; i++) {
    if (!ar_interp_input_sets_shape(in, i)) continue;
    rc = ar_cli_read_input(inputs[i], ar_interp_input_name(in, i), ar_interp_input(in, i)->bytes, &data[i],
                           &in_bytes[i], msg, sizeof msg);
    if (rc == 0) rc = ar_interp_set_shape_input(in, i, data[i], in_bytes[i], msg, sizeof msg);
    if (rc != 0) {
      fprintf(stderr, "arenactl run: %s: %s\n", inputs[i], msg);
      goto out;
    }
  }
  if (ar_interp_needs_prepare(in) && (rc = ar_interp_prepare(in, msg, sizeof msg)) != 0) {
    fprintf(stderr, "arenactl run: %s: %s: %s\n", model_path, ar_strerror(rc), ar_cli_esc(msg));
    goto out;
  }
  if (io.path) {
    const ar_tview_t *v = ar_interp_input(in, 0);
    ar_cli_tensor_t desc = {.name = ar_interp_input_name(in, 0), .dtype = v->dtype, .rank = v->rank,
                            .has_quant = v->quant && v->quant->n > 0};
    for (int32_t d = 0; d < v->rank && d < AR_CLI_MAX_RANK; d++) desc.dims[d] = v->dims[d];
    if (desc.has_quant) desc.scale = v->quant->scale[0], desc.zero_point = v->quant->zero_point[0];
    uint64_t bytes = 0;
    rc = ar_cli_image_input(&io, &desc, &data[0], &bytes, &geom, msg, sizeof msg);
    if (rc != 0) {
      fprintf(stderr, "arenactl run: %s (%s)\n", ar_cli_esc(msg), ar_err_name(rc));
      goto out;
    }
    n_inputs = 1;
  }
  for (int i = 0; i < n_inputs && !io.path; i++) {
    const ar_tview_t *v = ar_interp_input(in, i);
    uint64_t bytes = in_bytes[i];
    if (data[i] == NULL &&
        (rc = ar_cli_read_input(inputs[i], ar_interp_input_name(in, i), v->bytes, &data[i], &bytes, msg,
                                sizeof msg)) != 0) {
      fprintf(stderr, "arenactl run: %s (%s)\n", ar_cli_esc(msg), ar_err_name(rc));
      goto out;
    }
    if (bytes != v->bytes) {
      fprintf(stderr, "arenactl run: input %d (%s, %s ", i, ar_cli_esc(ar_interp_input_name(in, i)), ar_dtype_name(v->dtype));
      for (int32_t d = 0; d < v->rank; d++) fprintf(stderr, "%s%d", d ? "x" : "", v->dims[d]);
      fprintf(stderr, ") needs %llu bytes, %s has %llu\n", (unsigned long long)v->bytes, inputs[i],
              (unsigned long long)bytes);
      goto out;
    }
  }
  rc = ar_interp_place_owned(in, msg, sizeof msg);
  if (rc != 0) {
    fprintf(stderr, "arenactl run: %s: %s\n", ar_strerror(rc), ar_cli_esc(msg));
    goto out;
  }
  times = calloc((size_t)runs, sizeof(*times));
  if (!times) {
    fprintf(stderr, "arenactl run: out of memory\n");
    goto out;
  }
  for (int r = 0; r < runs; r++) {
    /* Inputs are copied before each invoke: the arenad convention may reuse their bytes. */
    for (int i = 0; i < n_inputs; i++) ar_copy_bytes(ar_interp_input(in, i)->data, data[i], ar_interp_input(in, i)->bytes);
    double t0 = ar_now_ms();
    ar_interp_invoke(in);
    times[r] = ar_now_ms() - t0;
  }
  double median = ar_stats_median(times, runs);   /* sorts: times[0] is the min */

  printf("model %s: %d operators (%d at invoke), arena %llu bytes, persistent %llu bytes, strategy %s, lifetimes %s, weights %s%s\n",
         model_path, ar_interp_n_operators(in), ar_interp_runtime_operators(in),
         (unsigned long long)ar_interp_arena_bytes(in), (unsigned long long)ar_interp_persistent_bytes(in),
         ar_strategy_name(opt.strategy), ar_lifetimes_name(opt.lifetimes), ar_weights_name(opt.weights),
         opt.inplace ? "" : ", no in-place");
  for (int32_t j = 0; j < ar_interp_n_outputs(in); j++) {
    const ar_tview_t *v = ar_interp_output(in, j);
    printf("output %d %s %s ", j, ar_cli_esc(ar_interp_output_name(in, j)), ar_dtype_name(v->dtype));
    print_shape(v);
    const ar_cli_tensor_t cv = cli_view(in, j);
    const uint64_t n = ar_cli_elements(&cv);
    if (n > 0 && !isnan(ar_cli_value(&cv, 0))) {
      /* Real values: quantized outputs dequantized with their (first) scale and zero point. */
      double lo = INFINITY, hi = -INFINITY, sum = 0;
      for (uint64_t e = 0; e < n; e++) {
        double x = ar_cli_value(&cv, e);
        lo = fmin(lo, x);
        hi = fmax(hi, x);
        sum += x;
      }
      printf(" min %.6g max %.6g mean %.6g", lo, hi, sum / (double)n);
      if (cv.has_quant) printf(" (scale %.9g zero point %lld)", cv.scale, (long long)cv.zero_point);
    }
    printf("\n");
    if (outdir) {
      char path[4096];
      snprintf(path, sizeof path, "%s/output_%d.bin", outdir, j);
      FILE *f = fopen(path, "wb");
      if (!f || fwrite(v->data, 1, v->bytes, f) != v->bytes) {
        fprintf(stderr, "arenactl run: cannot write %s: %s\n", path, strerror(errno));
        if (f) fclose(f);
        goto out;
      }
      if (fclose(f) != 0) {
        fprintf(stderr, "arenactl run: cannot write %s: %s\n", path, strerror(errno));
        goto out;
      }
    }
  }
  {
    ar_cli_tensor_t outs[RUN_MAX_INPUTS];
    int n_outs = ar_interp_n_outputs(in) < RUN_MAX_INPUTS ? ar_interp_n_outputs(in) : RUN_MAX_INPUTS;
    for (int j = 0; j < n_outs; j++) outs[j] = cli_view(in, j);
    if (ar_cli_print_results("run", &ro, outs, n_outs, io.path ? &geom : NULL) != 0) goto out;
  }
  uint64_t macs = ar_interp_macs(in);
  printf("invoke: median %.3f ms over %d run(s) (min %.3f, max %.3f), %.2f GFLOP/s, %d thread(s)\n",
         median, runs, times[0], times[runs - 1], median > 0 ? 2.0 * (double)macs / (median * 1e6) : 0.0,
         opt.threads);
  status = 0;

out:
  free(times);
  for (int i = 0; i < RUN_MAX_INPUTS; i++) free(data[i]);
  ar_interp_free(in);
  ar_model_free(model);
  return status;
}
