/* check_interp.c - the interpreter on the real models: golden outputs from LiteRT, plan-independence
 * (every planner strategy, in-place on/off, both lifetime conventions give bit-identical outputs),
 * stored vs fp32 weights (bit-identical outputs, persistent bytes), two interpreters sharing one
 * activation region, repeatability, and the place/invoke contract.
 *
 * Goldens: tests/golden/<model>/{photo,random}/input_0.bin, output_<j>.bin (raw float32, the
 * model's output order). The byte size of each golden output must equal the interpreter's output
 * view; each element must satisfy |got - want| <= 1e-4 max|want| + 1e-5.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "kernels/sgemm512.h"
#include "loader/ar_model.h"
#include "tests/ar_test_model.h"
#include "tests/ar_test_util.h"
#include "tests/ar_test_util.h"

static const char *const cases[] = {"photo", "random"};

/* Under valgrind (50x slower) the per-model loops keep three models: the smallest detector, the
 * smallest segmenter and the DENSIFY one; the kernels exercised are the same. $AR_TEST_MODELS
 * narrows the loops the same way (the cross-check's CI subset under qemu). Others report a skip. */
static int skip_model(const char *stem) {
  if (!ar_test_model_selected(stem)) {
    printf("%s: skipped (not in AR_TEST_MODELS)\n", stem);
    return 1;
  }
  if (!ar_test_under_valgrind()) return 0;
  if (strcmp(stem, "face_detection_short_range") == 0 || strcmp(stem, "selfie_segmentation_landscape") == 0 ||
      strcmp(stem, "face_detection_full_range_sparse") == 0)
    return 0;
  printf("%s: skipped under valgrind\n", stem);
  return 1;
}

enum { MAX_GRAPH_INPUTS = 16 };   /* of the test models */

typedef struct {
  size_t n;
  void *data[MAX_GRAPH_INPUTS];
  size_t bytes[MAX_GRAPH_INPUTS];
} blobs_t;

static void blobs_free(blobs_t *b) {
  for (size_t i = 0; i < b->n; i++) free(b->data[i]);
  b->n = 0;
}

static ar_model_t *load_model(const char *stem) {
  char path[1024], msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  int rc = ar_model_load(ar_test_model_path(path, sizeof path, stem), &m, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: load: %s (%s)", stem, ar_err_name(rc), msg);
  return m;
}

static ar_interp_t *new_placed(const ar_model_t *m, const ar_interp_options_t *opt, const char *stem) {
  char msg[AR_MSG_BYTES] = "";
  ar_interp_t *in = NULL;
  int rc = ar_interp_new(m, opt, &in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: interp_new (%s, %s, inplace %d): %s (%s)", stem,
                ar_strategy_name(opt->strategy), ar_lifetimes_name(opt->lifetimes), opt->inplace,
                ar_err_name(rc), msg);
  rc = ar_interp_place_owned(in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: place: %s (%s)", stem, ar_err_name(rc), msg);
  return in;
}

/* Golden inputs of one case (input_<i>.bin for every graph input). */
static void read_inputs(const char *stem, const char *cs, int32_t n, blobs_t *b) {
  char path[1024];
  b->n = 0;
  ck_assert_int_le(n, MAX_GRAPH_INPUTS);
  for (int32_t i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s/%s/input_%d.bin", ar_test_golden_dir(), stem, cs, i);
    b->data[i] = ar_test_read_file(path, &b->bytes[i]);
    ck_assert_msg(b->data[i] != NULL, "cannot read %s", path);
    b->n++;
  }
}

/* Write the inputs (the arenad convention may reuse their bytes, so before every invoke). */
static void set_inputs(ar_interp_t *in, const blobs_t *b, const char *stem) {
  ck_assert_int_eq((int)b->n, ar_interp_n_inputs(in));
  for (size_t i = 0; i < b->n; i++) {
    ar_tview_t *v = ar_interp_input(in, (int32_t)i);
    ck_assert_msg(v->bytes == b->bytes[i], "%s: input %zu is %llu bytes, file has %zu", stem, i,
                  (unsigned long long)v->bytes, b->bytes[i]);
    memcpy(v->data, b->data[i], b->bytes[i]);
  }
}

/* Copy all outputs (after an invoke) into *out. */
static void get_outputs(const ar_interp_t *in, blobs_t *out) {
  out->n = 0;
  for (int32_t j = 0; j < ar_interp_n_outputs(in); j++) {
    const ar_tview_t *v = ar_interp_output(in, j);
    out->data[j] = malloc(v->bytes ? v->bytes : 1);
    ck_assert_ptr_nonnull(out->data[j]);
    memcpy(out->data[j], v->data, v->bytes);
    out->bytes[j] = v->bytes;
    out->n++;
  }
}

/* Compare the current outputs with the golden files of one case; returns the worst |err| over
 * all outputs. */
static double check_golden(const ar_interp_t *in, const char *stem, const char *cs) {
  char path[1024];
  double model_worst = 0;
  for (int32_t j = 0; j < ar_interp_n_outputs(in); j++) {
    const ar_tview_t *v = ar_interp_output(in, j);
    snprintf(path, sizeof path, "%s/%s/%s/output_%d.bin", ar_test_golden_dir(), stem, cs, j);
    size_t bytes = 0;
    float *want = ar_test_read_file(path, &bytes);
    ck_assert_msg(want != NULL, "cannot read %s", path);
    ck_assert_msg(v->dtype == AR_DTYPE_FLOAT32, "%s output %d is not float32", stem, j);
    ck_assert_msg(bytes == v->bytes, "%s/%s output %d (%s): golden %zu bytes, interpreter %llu", stem,
                  cs, j, ar_interp_output_name(in, j), bytes, (unsigned long long)v->bytes);
    double worst = 0;
    size_t n = bytes / sizeof(float);
    size_t bad = ar_test_golden_mismatches(v->data, want, n, &worst);
    printf("golden %-34s %-6s output %d %-28s %7zu floats  worst |err| %.3g  %s\n", stem, cs, j,
           ar_interp_output_name(in, j), n, worst, bad ? "FAIL" : "ok");
    free(want);
    ck_assert_msg(bad == 0, "%s/%s output %d (%s): %zu of %zu elements out of tolerance, worst %g",
                  stem, cs, j, ar_interp_output_name(in, j), bad, n, worst);
    if (worst > model_worst) model_worst = worst;
  }
  return model_worst;
}

/* Every model, both cases, defaults (best plan, arenad lifetimes, in-place). Invoking twice per
 * case also shows that nothing an invoke writes (in-place, scratch) corrupts weights or state. */
START_TEST(test_golden) {
  const char *stem = ar_test_models[_i];
  if (skip_model(stem)) return;
  ar_model_t *m = load_model(stem);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ar_interp_t *in = new_placed(m, &opt, stem);
  ck_assert_uint_gt(ar_interp_macs(in), 0);
  ck_assert_int_le(ar_interp_runtime_operators(in), ar_interp_n_operators(in));
  for (size_t c = 0; c < 2; c++) {
    blobs_t inputs, first;
    read_inputs(stem, cases[c], ar_interp_n_inputs(in), &inputs);
    for (int rep = 0; rep < 2; rep++) {
      set_inputs(in, &inputs, stem);
      ck_assert_int_eq(ar_interp_invoke(in), 0);
      if (rep == 0) {
        /* One line per model and case, the same on every architecture: ./dev cross-check puts
         * the x86_64 and aarch64 figures side by side. */
        printf("golden max |err| %s %s %.3g\n", stem, cases[c], check_golden(in, stem, cases[c]));
        get_outputs(in, &first);
      } else {
        for (size_t j = 0; j < first.n; j++)
          ck_assert_msg(memcmp(first.data[j], ar_interp_output(in, (int32_t)j)->data, first.bytes[j]) == 0,
                        "%s/%s: output %zu differs on the second invoke", stem, cases[c], j);
      }
    }
    blobs_free(&first);
    blobs_free(&inputs);
  }
  printf("model %-34s operators %d (run %d)  arena %llu B  persistent %llu B  MACs %llu\n", stem,
         ar_interp_n_operators(in), ar_interp_runtime_operators(in),
         (unsigned long long)ar_interp_arena_bytes(in), (unsigned long long)ar_interp_persistent_bytes(in),
         (unsigned long long)ar_interp_macs(in));
  ar_interp_free(in);
  ar_model_free(m);
}
END_TEST

/* Weights kept as stored (the default: fp16 read as stored by the kernels that take it - their
 * DEQUANTIZE elided - or widened at use) and fp32 weights (folded at place) give the same outputs
 * bit for bit on both cases - on the DENSIFY model both meet the golden instead (its sparse 1x1
 * filters are multiplied as stored, kernels/sparse_conv.c, summing in another order); stored
 * weights leave kernel state alone in the persistent region (at most a tenth of the fp32 figure,
 * below the file's size), every at-use DEQUANTIZE writes into the activation region, and every
 * CONV_2D filter of these models is read as fp16 (ar_kernel_reads_f16). */
START_TEST(test_weights_stored_same_as_fp32) {
  const char *stem = ar_test_models[_i];
  if (skip_model(stem)) return;
  ar_model_t *m = load_model(stem);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ck_assert_int_eq(opt.weights, AR_WEIGHTS_STORED);
  ar_interp_t *s = new_placed(m, &opt, stem);
  opt.weights = AR_WEIGHTS_FP32;
  ar_interp_t *f = new_placed(m, &opt, stem);
  int32_t at_use = 0, folded_s = 0, folded_f = 0, elided = 0, elided16 = 0, conv16 = 0;
  bool densify = false;
  const ar_subgraph_t *sg = &m->subgraphs[0];
  for (int32_t k = 0; k < ar_interp_n_operators(s); k++) {
    at_use += ar_interp_op_at_use(s, k);
    /* fp16 read as stored: an elided DEQUANTIZE of a plain constant; the rest is a sparse chain */
    const ar_operator_t *op = &sg->operators[k];
    const bool e16 = ar_interp_op_elided(s, k) && op->op == AR_OP_DEQUANTIZE &&
                     ar_tensor_is_constant(&sg->tensors[op->inputs[0]]) &&
                     !sg->tensors[op->inputs[0]].sparsity;
    elided16 += e16;
    elided += ar_interp_op_elided(s, k) && !e16;
    const ar_node_t *nd = ar_interp_node(s, k);
    if (nd->op == AR_OP_CONV_2D && !nd->inputs[1]->sparsity) {
      ck_assert_int_eq(nd->inputs[1]->dtype, AR_DTYPE_FLOAT16);   /* every filter of these models */
      conv16++;
    }
    ck_assert(!ar_interp_op_elided(f, k));
    folded_s += ar_interp_op_folded(s, k);
    folded_f += ar_interp_op_folded(f, k);
    ck_assert(!ar_interp_op_at_use(f, k));
    densify = densify || ar_interp_node(s, k)->op == AR_OP_DENSIFY;
  }
  ck_assert_int_gt(at_use + elided16, 0);
  ck_assert_int_gt(elided16, 0);
  ck_assert_int_eq(folded_s + at_use + elided + elided16, folded_f);
  ck_assert_int_eq(elided > 0, densify);   /* every sparse filter of the DENSIFY model as stored */
  if (densify) ck_assert_int_eq(folded_s, 0);
  ck_assert_int_eq(ar_interp_runtime_operators(s), ar_interp_runtime_operators(f) + at_use);
  const ar_tensor_plan_t *tp = ar_interp_tensor_plan(s);
  for (int32_t k = 0; k < ar_interp_n_operators(s); k++) {
    if (!ar_interp_op_at_use(s, k)) continue;
    const ar_node_t *nd = ar_interp_node(s, k);
    ck_assert_int_eq(nd->inputs[0]->dtype, AR_DTYPE_FLOAT16);
    ck_assert_int_eq(tp[m->subgraphs[0].operators[k].outputs[0]].home, AR_HOME_ARENA);
    ck_assert(tp[m->subgraphs[0].operators[k].outputs[0]].at_use);
  }
  uint64_t ps = ar_interp_persistent_bytes(s), pf = ar_interp_persistent_bytes(f);
  ck_assert_msg(ps * 10 <= pf && ps < m->file_bytes, "%s: persistent %llu B stored, %llu B fp32, file "
                "%llu B", stem, (unsigned long long)ps, (unsigned long long)pf,
                (unsigned long long)m->file_bytes);
  for (size_t c = 0; c < 2; c++) {
    blobs_t inputs;
    read_inputs(stem, cases[c], ar_interp_n_inputs(s), &inputs);
    set_inputs(s, &inputs, stem);
    set_inputs(f, &inputs, stem);
    ck_assert_int_eq(ar_interp_invoke(s), 0);
    ck_assert_int_eq(ar_interp_invoke(f), 0);
    if (elided) {
      check_golden(s, stem, cases[c]);
      check_golden(f, stem, cases[c]);
    }
    for (int32_t j = 0; j < ar_interp_n_outputs(s) && !elided; j++)
      ck_assert_msg(memcmp(ar_interp_output(s, j)->data, ar_interp_output(f, j)->data,
                           ar_interp_output(s, j)->bytes) == 0,
                    "%s/%s: output %d differs between stored and fp32 weights", stem, cases[c], j);
    blobs_free(&inputs);
  }
  printf("weights %-34s persistent stored %9llu B  fp32 %9llu B  x%.4f  arena %llu / %llu B  at-use "
         "DEQUANTIZE %d  fp16 read as stored %d (CONV_2D %d)  sparse elided %d  outputs %s\n", stem,
         (unsigned long long)ps, (unsigned long long)pf, (double)ps / (double)pf,
         (unsigned long long)ar_interp_arena_bytes(s), (unsigned long long)ar_interp_arena_bytes(f),
         at_use, elided16, conv16, elided,
         elided ? "within the golden tolerance" : "identical");
  ar_interp_free(s);
  ar_interp_free(f);
  ar_model_free(m);
}
END_TEST

/* The random case under every strategy x in-place x lifetime convention: outputs bit-identical to
 * the default plan's. A wrong in-place or overlapping plan shows up here as a difference. */
START_TEST(test_plan_independence) {
  const char *stem = ar_test_models[_i];
  if (skip_model(stem)) return;
  ar_model_t *m = load_model(stem);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ar_interp_t *in = new_placed(m, &opt, stem);
  blobs_t inputs, ref;
  read_inputs(stem, "random", ar_interp_n_inputs(in), &inputs);
  set_inputs(in, &inputs, stem);
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  check_golden(in, stem, "random");
  get_outputs(in, &ref);
  ar_interp_free(in);

  static const ar_strategy_t strategies[] = {AR_STRATEGY_LINEAR, AR_STRATEGY_FIRST_FIT,
                                             AR_STRATEGY_GREEDY_BY_SIZE, AR_STRATEGY_BEST};
  static const ar_lifetimes_t conventions[] = {AR_LIFETIMES_TFLITE, AR_LIFETIMES_ARENAD};
  for (size_t s = 0; s < 4; s++) {
    for (int ip = 0; ip < 2; ip++) {
      for (size_t c = 0; c < 2; c++) {
        opt.strategy = strategies[s];
        opt.inplace = ip != 0;
        opt.lifetimes = conventions[c];
        in = new_placed(m, &opt, stem);
        set_inputs(in, &inputs, stem);
        ck_assert_int_eq(ar_interp_invoke(in), 0);
        for (size_t j = 0; j < ref.n; j++) {
          const ar_tview_t *v = ar_interp_output(in, (int32_t)j);
          ck_assert_uint_eq(v->bytes, ref.bytes[j]);
          ck_assert_msg(memcmp(v->data, ref.data[j], ref.bytes[j]) == 0,
                        "%s: output %zu differs with strategy %s, in-place %d, lifetimes %s", stem, j,
                        ar_strategy_name(opt.strategy), opt.inplace, ar_lifetimes_name(opt.lifetimes));
        }
        printf("plan %-34s %-15s inplace %d %-6s arena %10llu B  identical\n", stem,
               ar_strategy_name(opt.strategy), opt.inplace, ar_lifetimes_name(opt.lifetimes),
               (unsigned long long)ar_interp_arena_bytes(in));
        ar_interp_free(in);
      }
    }
  }
  blobs_free(&ref);
  blobs_free(&inputs);
  ar_model_free(m);
}
END_TEST

/* Two models placed in ONE activation region (as the daemon's pool does for models that never run
 * at the same time), each with its own persistent region: running B between two runs of A must
 * not disturb A (folded constants and state live outside the shared region). */
START_TEST(test_shared_activation_region) {
  const char *sa = "face_detection_short_range", *sb = "selfie_segmentation";
  ar_model_t *ma = load_model(sa), *mb = load_model(sb);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  char msg[AR_MSG_BYTES] = "";
  ar_interp_t *a = NULL, *b = NULL;
  ck_assert_int_eq(ar_interp_new(ma, &opt, &a, msg, sizeof msg), 0);
  ck_assert_int_eq(ar_interp_new(mb, &opt, &b, msg, sizeof msg), 0);
  uint64_t act_bytes = ar_interp_arena_bytes(a) > ar_interp_arena_bytes(b) ? ar_interp_arena_bytes(a)
                                                                            : ar_interp_arena_bytes(b);
  void *act = aligned_alloc(AR_ARENA_ALIGNMENT, act_bytes);
  void *pa = aligned_alloc(AR_ARENA_ALIGNMENT, ar_interp_persistent_bytes(a) + AR_ARENA_ALIGNMENT);
  void *pb = aligned_alloc(AR_ARENA_ALIGNMENT, ar_interp_persistent_bytes(b) + AR_ARENA_ALIGNMENT);
  ck_assert(act && pa && pb);
  ck_assert_int_eq(ar_interp_place(a, act, act_bytes, pa, ar_interp_persistent_bytes(a), msg, sizeof msg), 0);
  ck_assert_int_eq(ar_interp_place(b, act, act_bytes, pb, ar_interp_persistent_bytes(b), msg, sizeof msg), 0);
  blobs_t ia, ib;
  read_inputs(sa, "photo", ar_interp_n_inputs(a), &ia);
  read_inputs(sb, "photo", ar_interp_n_inputs(b), &ib);
  set_inputs(a, &ia, sa);
  ck_assert_int_eq(ar_interp_invoke(a), 0);
  check_golden(a, sa, "photo");
  set_inputs(b, &ib, sb);
  ck_assert_int_eq(ar_interp_invoke(b), 0);
  check_golden(b, sb, "photo");
  set_inputs(a, &ia, sa);
  ck_assert_int_eq(ar_interp_invoke(a), 0);
  check_golden(a, sa, "photo");
  blobs_free(&ia);
  blobs_free(&ib);
  ar_interp_free(a);
  ar_interp_free(b);
  free(act);
  free(pa);
  free(pb);
  ar_model_free(ma);
  ar_model_free(mb);
}
END_TEST

/* Split hints (find_split_hints): a CONV_2D splits its product by rows only when the depthwise
 * that alone reads its output splits rows (ar_kernel_dw_splits_rows). On hand_landmark_full at 2
 * threads with AVX-512F: the expansion convs before the 3x3 depthwises of the 14x14x480 map (ops
 * 58, 68) have the hint; those before the 5x5 ones (78, 87) and on the 7x7 map (116) do not (those
 * depthwises split channel blocks, as the convs split columns); nor do the projection convs read by
 * an ADD or a conv (64, 93). The outputs are the golden ones (check_threads holds every model's
 * bytes equal at 1, 2 and 3 threads). */
START_TEST(test_split_rows_hint) {
  const char *stem = "hand_landmark_full";
  ar_model_t *m = load_model(stem);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  opt.threads = 2;
  char msg[AR_MSG_BYTES] = "";
  ar_interp_t *in = NULL;
  ck_assert_int_eq(ar_interp_new(m, &opt, &in, msg, sizeof msg), 0);
  const int32_t n = ar_interp_n_operators(in);
  int hinted = 0;
  for (int32_t k = 0; k < n; k++) {
    const ar_node_t *nd = ar_interp_node(in, k);
    if (!nd->split_rows) continue;
    hinted++;
    ck_assert_int_eq(nd->op, AR_OP_CONV_2D);
    int readers = 0;
    for (int32_t j = 0; j < n; j++) {
      const ar_node_t *d = ar_interp_node(in, j);
      for (int32_t i = 0; i < d->n_inputs; i++)
        if (d->inputs[i] == nd->outputs[0]) {
          readers++;
          ck_assert_int_eq(i, 0);
          ck_assert_int_eq(d->op, AR_OP_DEPTHWISE_CONV_2D);
          ck_assert(ar_kernel_dw_splits_rows(d));
        }
    }
    ck_assert_int_eq(readers, 1);
  }
  ck_assert_int_gt(hinted, 0);
  if (ar_sgemm512_available()) {
    ck_assert(ar_interp_node(in, 58)->split_rows && ar_interp_node(in, 68)->split_rows);
    ck_assert(!ar_interp_node(in, 78)->split_rows && !ar_interp_node(in, 87)->split_rows);
    ck_assert(!ar_interp_node(in, 116)->split_rows);
    ck_assert(ar_kernel_dw_splits_rows(ar_interp_node(in, 61)));
    ck_assert(!ar_kernel_dw_splits_rows(ar_interp_node(in, 81)));
  }
  ck_assert(!ar_interp_node(in, 64)->split_rows && !ar_interp_node(in, 93)->split_rows);
  ar_interp_free(in);
  ar_model_free(m);
}
END_TEST

/* The place/invoke contract: invoke before place is AR_ESTATE; a region that is too small or
 * misaligned is AR_EINVAL with a message saying which. */
START_TEST(test_place_contract) {
  const char *stem = "face_detection_short_range";
  ar_model_t *m = load_model(stem);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  opt.weights = AR_WEIGHTS_FP32;   /* folding at place is what this pins */
  char msg[AR_MSG_BYTES] = "";
  ar_interp_t *in = NULL;
  ck_assert_int_eq(ar_interp_new(m, &opt, &in, msg, sizeof msg), 0);
  ck_assert_int_eq(ar_interp_invoke(in), AR_ESTATE);
  uint64_t ab = ar_interp_arena_bytes(in), pb = ar_interp_persistent_bytes(in);
  ck_assert_uint_gt(ab, 0);
  ck_assert_uint_gt(pb, 0);   /* fp16 weights are folded into persistent memory */
  ck_assert_uint_eq(ab % AR_ARENA_ALIGNMENT, 0);
  ck_assert_uint_eq(pb % AR_ARENA_ALIGNMENT, 0);
  uint8_t *act = aligned_alloc(AR_ARENA_ALIGNMENT, ab + AR_ARENA_ALIGNMENT);
  uint8_t *pers = aligned_alloc(AR_ARENA_ALIGNMENT, pb + AR_ARENA_ALIGNMENT);
  msg[0] = 0;
  ck_assert_int_eq(ar_interp_place(in, act, ab - 1, pers, pb, msg, sizeof msg), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(msg, "activation"));
  msg[0] = 0;
  ck_assert_int_eq(ar_interp_place(in, act, ab, pers, pb - 1, msg, sizeof msg), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(msg, "persistent"));
  msg[0] = 0;
  ck_assert_int_eq(ar_interp_place(in, act + 16, ab, pers, pb, msg, sizeof msg), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(msg, "aligned"));
  ck_assert_int_eq(ar_interp_invoke(in), AR_ESTATE);
  ck_assert_int_eq(ar_interp_place(in, act, ab, pers, pb, msg, sizeof msg), 0);
  /* Folded constants are in the persistent region, arena tensors in the activation region. */
  const ar_tensor_plan_t *tp = ar_interp_tensor_plan(in);
  int folded = 0;
  for (int32_t k = 0; k < ar_interp_n_operators(in); k++) {
    if (!ar_interp_op_folded(in, k)) continue;
    const ar_node_t *nd = ar_interp_node(in, k);
    const uint8_t *d = nd->outputs[0]->data;
    ck_assert(d >= pers && d + nd->outputs[0]->bytes <= pers + pb);
    folded++;
  }
  ck_assert_int_gt(folded, 0);
  /* Nor do elided operators run: PADs folded into their reader, convs fused into a depthwise. */
  int elided = 0;
  for (int32_t k = 0; k < ar_interp_n_operators(in); k++)
    elided += ar_interp_op_pad_folded(in, k) >= 0 || ar_interp_op_fused(in, k) >= 0 || ar_interp_op_elided(in, k);
  ck_assert_int_eq(ar_interp_runtime_operators(in), ar_interp_n_operators(in) - folded - elided);
  const ar_tview_t *out0 = ar_interp_output(in, 0);
  ck_assert((uint8_t *)out0->data >= act && (uint8_t *)out0->data + out0->bytes <= act + ab);
  (void)tp;
  blobs_t inputs;
  read_inputs(stem, "photo", 1, &inputs);
  set_inputs(in, &inputs, stem);
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  check_golden(in, stem, "photo");
  /* Moving the activation region (persistent stays) keeps results. */
  uint8_t *act2 = aligned_alloc(AR_ARENA_ALIGNMENT, ab);
  ck_assert_int_eq(ar_interp_place(in, act2, ab, pers, pb, msg, sizeof msg), 0);
  memset(act, 0xff, ab);
  set_inputs(in, &inputs, stem);
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  check_golden(in, stem, "photo");
  blobs_free(&inputs);
  ar_interp_free(in);
  free(act);
  free(act2);
  free(pers);
  ar_model_free(m);
}
END_TEST

/* MACs of the smallest model, from its operator shapes: every conv-family operator counted once. */
START_TEST(test_macs_by_hand) {
  ar_model_t *m = load_model("face_detection_short_range");
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  char msg[AR_MSG_BYTES] = "";
  ar_interp_t *in = NULL;
  ck_assert_int_eq(ar_interp_new(m, &opt, &in, msg, sizeof msg), 0);
  uint64_t macs = 0;
  for (int32_t k = 0; k < ar_interp_n_operators(in); k++) {
    const ar_node_t *nd = ar_interp_node(in, k);
    const ar_tview_t *o = nd->outputs[0], *w = nd->n_inputs > 1 ? nd->inputs[1] : NULL;
    if (nd->op == AR_OP_CONV_2D)   /* N*OH*OW*O * KH*KW*I */
      macs += (uint64_t)o->dims[0] * o->dims[1] * o->dims[2] * o->dims[3] * w->dims[1] * w->dims[2] * w->dims[3];
    else if (nd->op == AR_OP_DEPTHWISE_CONV_2D)   /* N*OH*OW*C * KH*KW */
      macs += (uint64_t)o->dims[0] * o->dims[1] * o->dims[2] * o->dims[3] * w->dims[1] * w->dims[2];
  }
  ck_assert_uint_gt(macs, 10000000);
  ck_assert_uint_eq(ar_interp_macs(in), macs);
  ar_interp_free(in);
  ar_model_free(m);
}
END_TEST

/* Prepare failures name the operator: an option combination TFLite rejects (RESIZE_BILINEAR with
 * both align_corners and half_pixel_centers), a stored output shape that disagrees with the
 * inferred one, and an op without a kernel. The decoded model is edited in memory, then restored
 * (after which the interpreter builds again). */
START_TEST(test_prepare_errors) {
  ar_model_t *m = load_model("selfie_segmentation");
  ar_subgraph_t *sg = &m->subgraphs[0];
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  char msg[AR_MSG_BYTES], want[64];
  ar_interp_t *in = NULL;
  int32_t k_resize = -1, k_conv = -1;
  for (uint32_t k = 0; k < sg->n_operators; k++) {
    if (k_resize < 0 && sg->operators[k].op == AR_OP_RESIZE_BILINEAR) k_resize = (int32_t)k;
    if (k_conv < 0 && sg->operators[k].op == AR_OP_CONV_2D) k_conv = (int32_t)k;
  }
  ck_assert_int_ge(k_resize, 0);
  ck_assert_int_ge(k_conv, 0);

  ar_resize_bilinear_options_t saved_rb = sg->operators[k_resize].options.resize_bilinear;
  sg->operators[k_resize].options.resize_bilinear.align_corners = true;
  sg->operators[k_resize].options.resize_bilinear.half_pixel_centers = true;
  msg[0] = 0;
  int rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
  ck_assert_int_lt(rc, 0);
  ck_assert_ptr_null(in);
  snprintf(want, sizeof want, "operator %d (RESIZE_BILINEAR)", k_resize);
  ck_assert_msg(strstr(msg, want) != NULL, "message '%s' does not name '%s'", msg, want);
  sg->operators[k_resize].options.resize_bilinear = saved_rb;

  ar_tensor_t *t = &sg->tensors[sg->operators[k_conv].outputs[0]];
  int32_t saved_dim = t->dims[t->rank - 1];
  uint64_t saved_bytes = t->bytes;
  t->dims[t->rank - 1] += 1;
  t->bytes = saved_bytes / (uint64_t)saved_dim * (uint64_t)t->dims[t->rank - 1];
  msg[0] = 0;
  rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
  ck_assert_int_lt(rc, 0);
  snprintf(want, sizeof want, "operator %d (CONV_2D)", k_conv);
  ck_assert_msg(strstr(msg, want) != NULL, "message '%s' does not name '%s'", msg, want);
  t->dims[t->rank - 1] = saved_dim;
  t->bytes = saved_bytes;

  ar_op_t saved_op = sg->operators[k_conv].op;
  sg->operators[k_conv].op = AR_OP_INVALID;
  msg[0] = 0;
  rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
  ck_assert_int_eq(rc, AR_EUNSUPPORTED);
  snprintf(want, sizeof want, "1 operator unsupported: CONV_2D v%d (op %d)", sg->operators[k_conv].version, k_conv);
  ck_assert_msg(strcmp(msg, want) == 0, "message '%s', expected '%s'", msg, want);
  sg->operators[k_conv].op = saved_op;

  rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "restored model: %s", msg);
  ar_interp_free(in);
  ar_model_free(m);
}
END_TEST

/* A TFLite_Detection_PostProcess whose 4 outputs are stored with shape [] (as real SSD files store
 * them; tests/golden/ops/detection_postprocess_fast_5x1_shapeless, made by tools/ops): the
 * interpreter sizes them at load ([1,5,4], [1,5], [1,5], [1]), plans them and runs. Hand-made
 * inputs: 12 constant anchors (yc = 0.15 + 0.2 (i % 4), xc = 0.2 + 0.3 (i / 4), h 0.4, w 0.5),
 * scales y/x 10, h/w 5, fast NMS, score threshold 0.3, IoU 0.5, 3 classes + background.
 * Anchor 5 scores 0.9 for class 2, anchor 0 0.6 for class 0; anchor 1 scores 0.5 for class 1 and
 * its encoding (-5, 0, 0, 0) moves it onto anchor 0's box (yc 0.35 - 5/10 * 0.4 = 0.15), so NMS
 * suppresses it (IoU 1). Anchors 0 and 5 overlap by IoU 0.04/0.36 = 0.11: both kept. */
START_TEST(test_shapeless_detection_outputs) {
  char path[1024], msg[AR_MSG_BYTES] = "";
  snprintf(path, sizeof path, "%s/ops/detection_postprocess_fast_5x1_shapeless/model.tflite",
           ar_test_golden_dir());
  ar_model_t *m = NULL;
  int rc = ar_model_load(path, &m, msg, sizeof msg);
  ck_assert_msg(rc == 0, "load: %s (%s)", ar_err_name(rc), msg);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  for (uint32_t j = 0; j < sg->n_outputs; j++) ck_assert_int_eq(sg->tensors[sg->outputs[j]].rank, 0);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ar_interp_t *in = NULL;
  rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "interp_new: %s (%s)", ar_err_name(rc), msg);
  const int32_t want_rank[4] = {3, 2, 2, 1}, want_dims[4][3] = {{1, 5, 4}, {1, 5}, {1, 5}, {1}};
  const uint64_t want_bytes[4] = {80, 20, 20, 4};
  for (int j = 0; j < 4; j++) {
    const ar_tview_t *v = ar_interp_output(in, j);
    ck_assert_int_eq(v->rank, want_rank[j]);
    for (int d = 0; d < want_rank[j]; d++) ck_assert_int_eq(v->dims[d], want_dims[j][d]);
    ck_assert_uint_eq(v->bytes, want_bytes[j]);
    ar_plan_buffer_t pb;   /* its planner buffer holds the sized output */
    ck_assert_int_eq(ar_planner_buffer(ar_interp_planner(in),
                                       ar_interp_tensor_plan(in)[sg->outputs[j]].buffer, &pb), 0);
    ck_assert_uint_ge(pb.size_bytes, want_bytes[j]);
  }
  rc = ar_interp_place_owned(in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "place: %s (%s)", ar_err_name(rc), msg);
  ck_assert_int_eq(ar_interp_n_inputs(in), 2);
  float *enc = ar_interp_input(in, 0)->data, *cls = ar_interp_input(in, 1)->data;
  memset(enc, 0, 12 * 4 * sizeof(float));
  memset(cls, 0, 12 * 4 * sizeof(float));
  enc[1 * 4 + 0] = -5.0f;
  cls[5 * 4 + 3] = 0.9f;   /* column 0 is the background */
  cls[0 * 4 + 1] = 0.6f;
  cls[1 * 4 + 2] = 0.5f;
  for (int pass = 0; pass < 2; pass++) {
    ck_assert_int_eq(ar_interp_invoke(in), 0);
    const float *boxes = ar_interp_output(in, 0)->data, *classes = ar_interp_output(in, 1)->data;
    const float *scores = ar_interp_output(in, 2)->data, *num = ar_interp_output(in, 3)->data;
    const float want_boxes[20] = {0.15f, 0.25f, 0.55f, 0.75f, -0.05f, -0.05f, 0.35f, 0.45f};
    const float want_cls[5] = {2, 0}, want_sc[5] = {0.9f, 0.6f};
    for (int i = 0; i < 20; i++)
      ck_assert_msg(fabsf(boxes[i] - want_boxes[i]) < 1e-6f, "box value %d: %g, want %g", i, boxes[i],
                    want_boxes[i]);
    for (int i = 0; i < 5; i++) {
      ck_assert_float_eq(classes[i], want_cls[i]);
      ck_assert_float_eq(scores[i], want_sc[i]);
    }
    ck_assert_float_eq(num[0], 2.0f);
  }
  ar_interp_free(in);
  ar_model_free(m);
}
END_TEST

/* fp16 weights read as stored, on a generated model: x -> CONV_2D(x, DEQUANTIZE(w16),
 * DEQUANTIZE(b16)) -> y, then ADD(y, DEQUANTIZE(b16)) -> z. The filter's DEQUANTIZE is elided (its
 * one reader, CONV_2D, takes fp16: the node shows the fp16 constant); the bias's stays at use
 * (ADD does not take fp16, so its readers do not all agree) and both readers see the fp32 tensor;
 * the outputs are the bytes of fp32 weights, and a hand computation. */
START_TEST(test_fp16_read_as_stored_generated) {
  enum { H = 3, W = 5, C = 8, O = 12 };
  uint16_t w16[O * C], b16[O];
  float w[O * C], b[O];
  for (int i = 0; i < O * C; i++) {   /* exact fp16 values: k/64 in [-1.5, 1.5) */
    const int q = (i * 37) % 193 - 96;
    const float v = (float)q / 64.0f;
    w[i] = v;
    const uint32_t sign = v < 0 ? 0x8000u : 0;
    float a = fabsf(v);
    uint16_t h = 0;
    if (a > 0) {
      int e = 0;
      const float mant = frexpf(a, &e);   /* a = mant * 2^e, mant in [0.5, 1) */
      h = (uint16_t)(((uint32_t)(e - 1 + 15) << 10) | (uint32_t)((mant * 2.0f - 1.0f) * 1024.0f));
    }
    w16[i] = (uint16_t)(sign | h);
    ck_assert(ar_fp16_to_fp32(w16[i]) == w[i]);
  }
  for (int o = 0; o < O; o++) {
    b16[o] = (uint16_t)(0x3800 + o * 64);   /* 0.5 and up, exact */
    b[o] = ar_fp16_to_fp32(b16[o]);
  }
  const ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_FLOAT32, 4, {1, H, W, C}, false, {0}, NULL},
    {"w16", AR_DTYPE_FLOAT16, 4, {O, 1, 1, C}, false, {0}, w16},
    {"w", AR_DTYPE_FLOAT32, 4, {O, 1, 1, C}, false, {0}, NULL},
    {"b16", AR_DTYPE_FLOAT16, 1, {O}, false, {0}, b16},
    {"b", AR_DTYPE_FLOAT32, 1, {O}, false, {0}, NULL},
    {"y", AR_DTYPE_FLOAT32, 4, {1, H, W, O}, false, {0}, NULL},
    {"z", AR_DTYPE_FLOAT32, 4, {1, H, W, O}, false, {0}, NULL},
  };
  /* CONV_2D (Conv2DOptions = union type 1): padding VALID, strides 1, RELU; ADD: no options. */
  const ar_tm_op_t ops[] = {
    {6, 1, 1, {1}, {2}, 0, 0, {{0}}},
    {6, 1, 1, {3}, {4}, 0, 0, {{0}}},
    {3, 3, 1, {0, 2, 4}, {5}, 1, 4, {{0, 1, 1}, {1, 4, 1}, {2, 4, 1}, {3, 1, AR_ACT_RELU}}},
    {0, 2, 1, {5, 4}, {6}, 0, 0, {{0}}},
  };
  const int32_t ins[] = {0}, outs[] = {6};
  size_t bytes = 0;
  uint8_t *file = ar_tm_build(t, 7, ops, 4, ins, 1, outs, 1, &bytes);
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(file, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
  float x[H * W * C], want[H * W * O];
  for (int i = 0; i < H * W * C; i++) x[i] = (float)((i * 11) % 17 - 8) / 8.0f;
  for (int p = 0; p < H * W; p++)
    for (int o = 0; o < O; o++) {
      double acc = b[o];
      for (int c = 0; c < C; c++) acc += (double)x[p * C + c] * w[o * C + c];
      want[p * O + o] = (float)(acc > 0 ? acc : 0) + b[o];
    }
  float got[2][H * W * O];
  for (int mode = 0; mode < 2; mode++) {
    ar_interp_options_t opt;
    ar_interp_options_default(&opt);
    opt.weights = mode == 0 ? AR_WEIGHTS_STORED : AR_WEIGHTS_FP32;
    ar_interp_t *in = NULL;
    ck_assert_msg(ar_interp_new(m, &opt, &in, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
    const bool stored = mode == 0;
    ck_assert_int_eq(ar_interp_op_elided(in, 0), stored);   /* the filter's DEQUANTIZE */
    ck_assert(!ar_interp_op_elided(in, 1));
    ck_assert_int_eq(ar_interp_op_at_use(in, 1), stored);   /* the bias's: ADD reads it too */
    ck_assert_int_eq(ar_interp_op_folded(in, 1), !stored);
    ck_assert_int_eq(ar_interp_runtime_operators(in), stored ? 3 : 2);
    const ar_node_t *conv = ar_interp_node(in, 2);
    ck_assert_int_eq(conv->inputs[1]->dtype, stored ? AR_DTYPE_FLOAT16 : AR_DTYPE_FLOAT32);
    ck_assert_int_eq(conv->inputs[2]->dtype, AR_DTYPE_FLOAT32);
    ck_assert_int_eq(ar_interp_node(in, 3)->inputs[1]->dtype, AR_DTYPE_FLOAT32);
    memcpy(ar_interp_input(in, 0)->data, x, sizeof x);
    ck_assert_int_eq(ar_interp_invoke(in), 0);
    memcpy(got[mode], ar_interp_output(in, 0)->data, sizeof got[mode]);
    for (int i = 0; i < H * W * O; i++)
      ck_assert_msg(fabsf(got[mode][i] - want[i]) <= 1e-5f * (1 + fabsf(want[i])),
                    "mode %d z[%d] %g, by hand %g", mode, i, (double)got[mode][i], (double)want[i]);
    ar_interp_free(in);
  }
  ck_assert(memcmp(got[0], got[1], sizeof got[0]) == 0);
  ar_model_free(m);
  free(file);
}
END_TEST

/* An interpreter of `m` at `threads` threads, fusion and folding on or off, placed in its own
 * arena (the folding tests below run each model both ways at 1 and 2 threads). */
static ar_interp_t *fold_interp(const ar_model_t *m, int threads, bool fuse) {
  char msg[AR_MSG_BYTES] = "";
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  opt.threads = threads;
  opt.fuse = fuse;
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_interp_new(m, &opt, &in, msg, sizeof msg) == 0, "%d thread(s), fuse %d: %s", threads, fuse, msg);
  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "place: %s", msg);
  return in;
}

/* PAD folding: x [1,H,W,C] -> PAD (constant paddings on H and W) -> DEPTHWISE_CONV_2D 3x3 VALID
 * (stride 1 or 2, with bias) -> y. With fusion on the PAD is folded into the depthwise (elided, the
 * depthwise reads x): the outputs are byte for byte those with fusion off (the PAD run), at 1 and
 * 2 threads, and match a by-hand computation over the zero-padded map. A PAD of channels is not
 * folded. */
START_TEST(test_pad_folded_into_depthwise) {
  enum { C = 24, H = 37, W = 30 };
  static const struct { int32_t pads[8], stride; bool folds; } pcases[] = {
      {{0, 0, 1, 1, 1, 1, 0, 0}, 1, true},    /* SAME-like, stride 1 */
      {{0, 0, 1, 1, 1, 1, 0, 0}, 2, true},    /* the face detectors' stride-2 form (SAME would pad 0 above) */
      {{0, 0, 2, 0, 0, 2, 0, 0}, 2, true},    /* all above / all right */
      {{0, 0, 0, 1, 2, 1, 0, 0}, 1, true},
      {{0, 0, 3, 0, 0, 0, 0, 0}, 1, false},   /* more than the filter's extent - 1: the PAD runs */
      {{0, 0, 1, 1, 1, 1, 0, 8}, 1, false},   /* channels too */
  };
  static float x[H * W * C], wd[9 * C], bd[C], want[(H + 3) * (W + 3) * (C + 8)], got[2][2][(H + 3) * (W + 3) * (C + 8)];
  uint64_t seed = 0x9e3779b97f4a7c15ull;
#define PF_RND() (seed = seed * 6364136223846793005ull + 1442695040888963407ull, (float)((int)(seed >> 40) % 2001 - 1000) / 1000.0f)
  for (int i = 0; i < H * W * C; i++) x[i] = PF_RND();
  for (int i = 0; i < 9 * C; i++) wd[i] = PF_RND();
  for (int i = 0; i < C; i++) bd[i] = PF_RND();
  for (size_t ci = 0; ci < sizeof pcases / sizeof pcases[0]; ci++) {
    const int32_t *p = pcases[ci].pads, s = pcases[ci].stride;
    const int32_t ph = H + p[2] + p[3], pw = W + p[4] + p[5], pc = C + p[6] + p[7];
    const int32_t oh = (ph - 3) / s + 1, ow = (pw - 3) / s + 1;
    static float wdc[9 * (C + 8)], bdc[C + 8];
    for (int32_t k = 0; k < 9; k++)
      for (int32_t c = 0; c < pc; c++) wdc[k * pc + c] = wd[k * C + c % C];
    for (int32_t c = 0; c < pc; c++) bdc[c] = bd[c % C];
    ar_tm_tensor_t t[] = {
      {"x", AR_DTYPE_FLOAT32, 4, {1, H, W, C}, false, {0}, NULL},
      {"paddings", AR_DTYPE_INT32, 2, {4, 2}, false, {0}, p},
      {"xp", AR_DTYPE_FLOAT32, 4, {1, ph, pw, pc}, false, {0}, NULL},
      {"wd", AR_DTYPE_FLOAT32, 4, {1, 3, 3, pc}, false, {0}, wdc},
      {"bd", AR_DTYPE_FLOAT32, 1, {pc}, false, {0}, bdc},
      {"y", AR_DTYPE_FLOAT32, 4, {1, oh, ow, pc}, false, {0}, NULL},
    };
    ar_tm_op_t ops[] = {
      {34, 2, 1, {0, 1}, {2}, 0, 0, {{0, 0, 0}}},   /* PAD */
      /* DEPTHWISE_CONV_2D 3x3 VALID, multiplier 1 */
      {4, 3, 1, {2, 3, 4}, {5}, 2, 6, {{0, 1, 1}, {1, 4, s}, {2, 4, s}, {3, 4, 1}, {5, 4, 1}, {6, 4, 1}}},
    };
    const int32_t gin[] = {0}, gout[] = {5};
    size_t bytes = 0;
    uint8_t *file = ar_tm_build(t, 6, ops, 2, gin, 1, gout, 1, &bytes);
    char msg[AR_MSG_BYTES] = "";
    ar_model_t *m = NULL;
    ck_assert_msg(ar_model_load_buffer(file, bytes, &m, msg, sizeof msg) == 0, "built model: %s", msg);
    for (int32_t oy = 0; oy < oh; oy++)
      for (int32_t ox = 0; ox < ow; ox++)
        for (int32_t c = 0; c < pc; c++) {
          double acc = bdc[c];
          for (int32_t ky = 0; ky < 3; ky++)
            for (int32_t kx = 0; kx < 3; kx++) {
              const int32_t iy = oy * s + ky - p[2], ix = ox * s + kx - p[4], ic = c - p[6];
              if (iy < 0 || iy >= H || ix < 0 || ix >= W || ic < 0 || ic >= C) continue;
              acc += (double)x[(iy * W + ix) * C + ic] * wdc[(ky * 3 + kx) * pc + c];
            }
          want[(oy * ow + ox) * pc + c] = (float)acc;
        }
    const size_t ny = (size_t)oh * ow * pc;
    for (int th = 0; th < 2; th++)
      for (int f = 0; f < 2; f++) {
        ar_interp_t *in = fold_interp(m, th + 1, f == 1);
        ck_assert_int_eq(ar_interp_op_pad_folded(in, 0), f && pcases[ci].folds ? 1 : -1);
        ck_assert_int_eq(ar_interp_op_pad_folded(in, 1), -1);
        ck_assert(!ar_interp_op_elided(in, 0));
        memcpy(ar_interp_input(in, 0)->data, x, sizeof x);
        ck_assert_int_eq(ar_interp_invoke(in), 0);
        ck_assert_uint_eq(ar_interp_output(in, 0)->bytes, ny * sizeof(float));
        memcpy(got[th][f], ar_interp_output(in, 0)->data, ny * sizeof(float));
        for (size_t i = 0; i < ny; i++)
          ck_assert_msg(fabsf(got[th][f][i] - want[i]) <= 1e-5f * (1 + fabsf(want[i])),
                        "case %zu, %d thread(s), fuse %d: y[%zu] %g, by hand %g", ci, th + 1, f, i,
                        (double)got[th][f][i], (double)want[i]);
        ar_interp_free(in);
      }
    for (int i = 1; i < 4; i++)
      ck_assert_msg(memcmp(got[0][0], got[i / 2][i % 2], ny * sizeof(float)) == 0,
                    "case %zu: outputs differ (threads %d, fuse %d)", ci, i / 2 + 1, i % 2);
    ar_model_free(m);
    free(file);
  }
#undef PF_RND
}
END_TEST

/* Activation folding: x [1,8,8,4] -> CONV_2D 1x1 (no activation) -> RELU -> ADD z (no activation)
 * -> RELU6 -> y. With fusion on the conv and the ADD clamp as they store (their nodes' options say
 * RELU / RELU6); the RELU runs in place over the conv's output and does nothing, the RELU6 (whose
 * output is a graph output, so not in place) clamps again, to the same values. Outputs are byte
 * for byte those with fusion off, at 1 and 2 threads, and match a by-hand computation. */
START_TEST(test_relu_folded_into_producer) {
  enum { HW = 8, C = 4, O = 6 };
  static float x[HW * HW * C], z[HW * HW * O], w[O * C], b[O], want[HW * HW * O], got[4][HW * HW * O];
  uint64_t seed = 0x5851f42d4c957f2dull;
#define AF_RND() (seed = seed * 6364136223846793005ull + 1442695040888963407ull, (float)((int)(seed >> 40) % 2001 - 1000) / 250.0f)
  for (int i = 0; i < HW * HW * C; i++) x[i] = AF_RND();
  for (int i = 0; i < HW * HW * O; i++) z[i] = AF_RND();
  for (int i = 0; i < O * C; i++) w[i] = AF_RND() / 4.0f;
  for (int i = 0; i < O; i++) b[i] = AF_RND();
  for (int p = 0; p < HW * HW; p++)
    for (int o = 0; o < O; o++) {
      double c = b[o];
      for (int i = 0; i < C; i++) c += (double)x[p * C + i] * w[o * C + i];
      c = c > 0 ? c : 0;
      c += z[p * O + o];
      want[p * O + o] = (float)(c < 0 ? 0 : c > 6 ? 6 : c);
    }
  ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_FLOAT32, 4, {1, HW, HW, C}, false, {0}, NULL},
    {"w", AR_DTYPE_FLOAT32, 4, {O, 1, 1, C}, false, {0}, w},
    {"b", AR_DTYPE_FLOAT32, 1, {O}, false, {0}, b},
    {"c", AR_DTYPE_FLOAT32, 4, {1, HW, HW, O}, false, {0}, NULL},
    {"r", AR_DTYPE_FLOAT32, 4, {1, HW, HW, O}, false, {0}, NULL},
    {"z", AR_DTYPE_FLOAT32, 4, {1, HW, HW, O}, false, {0}, NULL},
    {"a", AR_DTYPE_FLOAT32, 4, {1, HW, HW, O}, false, {0}, NULL},
    {"y", AR_DTYPE_FLOAT32, 4, {1, HW, HW, O}, false, {0}, NULL},
  };
  ar_tm_op_t ops[] = {
    {3, 3, 1, {0, 1, 2}, {3}, 1, 4, {{0, 1, 1}, {1, 4, 1}, {2, 4, 1}, {3, 1, AR_ACT_NONE}}},   /* CONV_2D VALID */
    {19, 1, 1, {3}, {4}, 0, 0, {{0}}},                                                         /* RELU */
    {0, 2, 1, {4, 5}, {6}, 0, 0, {{0}}},                                                       /* ADD */
    {21, 1, 1, {6}, {7}, 0, 0, {{0}}},                                                         /* RELU6 */
  };
  const int32_t gin[] = {0, 5}, gout[] = {7};
  size_t bytes = 0;
  uint8_t *file = ar_tm_build(t, 8, ops, 4, gin, 2, gout, 1, &bytes);
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(file, bytes, &m, msg, sizeof msg) == 0, "built model: %s", msg);
  for (int th = 0; th < 2; th++)
    for (int f = 0; f < 2; f++) {
      ar_interp_t *in = fold_interp(m, th + 1, f == 1);
      ck_assert_int_eq(ar_interp_node(in, 0)->options->conv2d.activation, f ? AR_ACT_RELU : AR_ACT_NONE);
      ck_assert_int_eq(ar_interp_node(in, 2)->options->elementwise.activation, f ? AR_ACT_RELU6 : AR_ACT_NONE);
      ck_assert_int_eq(ar_interp_node(in, 1)->input_activated, f == 1);
      ck_assert_int_eq(ar_interp_node(in, 3)->input_activated, f == 1);
      ck_assert(ar_interp_node(in, 1)->inputs[0]->data == ar_interp_node(in, 1)->outputs[0]->data);
      ck_assert(ar_interp_node(in, 3)->inputs[0]->data != ar_interp_node(in, 3)->outputs[0]->data);
      memcpy(ar_interp_input(in, 0)->data, x, sizeof x);
      memcpy(ar_interp_input(in, 1)->data, z, sizeof z);
      ck_assert_int_eq(ar_interp_invoke(in), 0);
      memcpy(got[th * 2 + f], ar_interp_output(in, 0)->data, sizeof got[0]);
      for (int i = 0; i < HW * HW * O; i++)
        ck_assert_msg(fabsf(got[th * 2 + f][i] - want[i]) <= 1e-5f * (1 + fabsf(want[i])),
                      "%d thread(s), fuse %d: y[%d] %g, by hand %g", th + 1, f, i,
                      (double)got[th * 2 + f][i], (double)want[i]);
      ar_interp_free(in);
    }
  for (int i = 1; i < 4; i++) ck_assert(memcmp(got[0], got[i], sizeof got[0]) == 0);
#undef AF_RND
  ar_model_free(m);
  free(file);
}
END_TEST

/* A channel PAD folded into the ADD that reads it (a residual shortcut: x [1,6,5,5] padded to 8
 * channels, added to z [1,6,5,8], fused RELU), with the padded operand as input 1 and as input 0:
 * with fusion on the PAD is elided and the ADD reads x; outputs are byte for byte those with fusion
 * off, at 1 and 2 threads, and match a by-hand computation. */
/* Options tables TFLite ignores (issue 28): QUANTIZE carrying the schema's empty QuantizeOptions
 * (union type 89; a Raspberry Pi person detector has it), DEQUANTIZE a SelectV2Options (98),
 * SELECT_V2 the SELECT's SelectOptions (47), RELU an AddOptions (11) whose RELU6 activation RELU
 * never reads: the model loads and runs with each op's own semantics (refused before: "builtin_options
 * has union type 89, expected 0"). x -> QUANTIZE (int8, scale 0.5, zero point 1) -> DEQUANTIZE
 * -> y; z = SELECT_V2(c, y, x); out = RELU(z). An op that reads its table still refuses another
 * union type (ADD with SelectOptions: check_loader test_ignored_and_read_options). */
START_TEST(test_ignored_options_tables_run) {
  const ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_FLOAT32, 2, {1, 6}, false, {0}, NULL},
    {"q", AR_DTYPE_INT8, 2, {1, 6}, false, {0}, NULL},
    {"y", AR_DTYPE_FLOAT32, 2, {1, 6}, false, {0}, NULL},
    {"c", AR_DTYPE_BOOL, 2, {1, 6}, false, {0}, NULL},
    {"z", AR_DTYPE_FLOAT32, 2, {1, 6}, false, {0}, NULL},
    {"out", AR_DTYPE_FLOAT32, 2, {1, 6}, false, {0}, NULL},
  };
  const ar_tm_op_t ops[] = {
    {114, 1, 1, {0}, {1}, 89, 0, {{0}}},                       /* QUANTIZE, QuantizeOptions */
    {6, 1, 1, {1}, {2}, 98, 0, {{0}}},                         /* DEQUANTIZE, SelectV2Options */
    {123, 3, 1, {3, 2, 0}, {4}, 47, 0, {{0}}},                 /* SELECT_V2, SelectOptions */
    {19, 1, 1, {4}, {5}, 11, 1, {{0, 1, AR_ACT_RELU6}}},       /* RELU, AddOptions (RELU6) */
  };
  static const float qs[] = {0.5f};
  static const int64_t qz[] = {1};
  const ar_tm_quant_t quant[] = {{1, 1, qs, qz, 0}};
  const int32_t ins[] = {0, 3}, outs[] = {5};
  size_t bytes = 0;
  uint8_t *file = ar_tm_build_quant(t, 6, ops, 4, ins, 2, outs, 1, quant, 1, &bytes);
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(file, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_interp_new(m, &opt, &in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
  const float x[6] = {-3.2f, -0.7f, 0.26f, 1.24f, 9.0f, 100.0f};
  const bool c[6] = {true, true, true, false, true, true};
  memcpy(ar_interp_input(in, 0)->data, x, sizeof x);
  memcpy(ar_interp_input(in, 1)->data, c, sizeof c);
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  /* q = clamp(round(x / 0.5) + 1): -5, 0, 2, (3), 19, 127 -> y = (q - 1) * 0.5: -3, -0.5, 0.5, .,
   * 9, 63; z takes x where c is false; RELU (not RELU6: AddOptions is not RELU's) */
  const float want[6] = {0.0f, 0.0f, 0.5f, 1.24f, 9.0f, 63.0f};
  const float *got = ar_interp_output(in, 0)->data;
  for (int i = 0; i < 6; i++)
    ck_assert_msg(got[i] == want[i], "out[%d] = %g, want %g", i, (double)got[i], (double)want[i]);
  ar_interp_free(in);
  ar_model_free(m);
  free(file);
}
END_TEST

/* Issue 28: a TFLite_Detection_PostProcess model whose constant anchors hold a negative height is
 * refused when the interpreter prepares it (at load), naming the operator and the anchor: the
 * golden model detection_postprocess_fast_5x1 with anchor 7's height made negative (it ran before
 * and returned inverted boxes, which TFLite refuses at every invoke). */
START_TEST(test_negative_anchor_refused_at_load) {
  char path[1024], msg[AR_MSG_BYTES] = "";
  snprintf(path, sizeof path, "%s/ops/detection_postprocess_fast_5x1/model.tflite", ar_test_golden_dir());
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "%s", path);
  static uint8_t buf[1 << 16];
  const size_t len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  ck_assert(len > 0 && len < sizeof buf);
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(buf, len, &m, msg, sizeof msg) == 0, "%s", msg);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  const ar_tensor_t *anc = &sg->tensors[sg->operators[0].inputs[2]];
  ck_assert_ptr_nonnull(anc->data);
  float a7[4];
  memcpy(a7, (const uint8_t *)anc->data + 7 * 16, sizeof a7);
  /* the anchors as stored in the file: find anchor 7's bytes there */
  uint8_t *at = NULL;
  for (size_t i = 0; i + 16 <= len && !at; i += 4)
    if (memcmp(buf + i, a7, 16) == 0) at = buf + i;
  ck_assert_ptr_nonnull(at);
  ar_model_free(m);
  const float h = -a7[2];
  memcpy(at + 8, &h, 4);
  ck_assert_msg(ar_model_load_buffer(buf, len, &m, msg, sizeof msg) == 0, "%s", msg);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ar_interp_t *in = NULL;
  ck_assert_int_eq(ar_interp_new(m, &opt, &in, msg, sizeof msg), AR_EINVAL);
  ck_assert_ptr_null(in);
  char want[160];
  snprintf(want, sizeof want, "operator 0 (TFLite_Detection_PostProcess): anchor 7 (y %g, x %g, h %g, w %g) has a "
           "negative height", (double)a7[0], (double)a7[1], (double)h, (double)a7[3]);
  ck_assert_msg(strstr(msg, want) != NULL, "%s lacks %s", msg, want);
  ar_model_free(m);
}
END_TEST

START_TEST(test_channel_pad_folded_into_add) {
  enum { H = 6, W = 5, C = 5, P = 3, CO = C + P };
  static float x[H * W * C], z[H * W * CO], want[H * W * CO], got[4][H * W * CO];
  static const int32_t pads[8] = {0, 0, 0, 0, 0, 0, 0, P};
  uint64_t seed = 0x2545f4914f6cdd1dull;
#define CP_RND() (seed = seed * 6364136223846793005ull + 1442695040888963407ull, (float)((int)(seed >> 40) % 2001 - 1000) / 100.0f)
  for (int i = 0; i < H * W * C; i++) x[i] = CP_RND();
  for (int i = 0; i < H * W * CO; i++) z[i] = CP_RND();
  for (int p = 0; p < H * W; p++)
    for (int c = 0; c < CO; c++) {
      const float s = z[p * CO + c] + (c < C ? x[p * C + c] : 0.0f);
      want[p * CO + c] = s > 0 ? s : 0;
    }
  for (int slot = 0; slot < 2; slot++) {
    ar_tm_tensor_t t[] = {
      {"x", AR_DTYPE_FLOAT32, 4, {1, H, W, C}, false, {0}, NULL},
      {"paddings", AR_DTYPE_INT32, 2, {4, 2}, false, {0}, pads},
      {"xp", AR_DTYPE_FLOAT32, 4, {1, H, W, CO}, false, {0}, NULL},
      {"z", AR_DTYPE_FLOAT32, 4, {1, H, W, CO}, false, {0}, NULL},
      {"y", AR_DTYPE_FLOAT32, 4, {1, H, W, CO}, false, {0}, NULL},
    };
    ar_tm_op_t ops[] = {
      {34, 2, 1, {0, 1}, {2}, 0, 0, {{0, 0, 0}}},                                       /* PAD */
      {0, 2, 1, {slot ? 3 : 2, slot ? 2 : 3}, {4}, 11, 1, {{0, 1, AR_ACT_RELU}}},       /* ADD, RELU */
    };
    const int32_t gin[] = {0, 3}, gout[] = {4};
    size_t bytes = 0;
    uint8_t *file = ar_tm_build(t, 5, ops, 2, gin, 2, gout, 1, &bytes);
    char msg[AR_MSG_BYTES] = "";
    ar_model_t *m = NULL;
    ck_assert_msg(ar_model_load_buffer(file, bytes, &m, msg, sizeof msg) == 0, "built model: %s", msg);
    for (int th = 0; th < 2; th++)
      for (int f = 0; f < 2; f++) {
        ar_interp_t *in = fold_interp(m, th + 1, f == 1);
        ck_assert_int_eq(ar_interp_op_pad_folded(in, 0), f ? 1 : -1);
        ck_assert_int_eq(ar_interp_node(in, 1)->folded_pad_channels, f ? P : 0);
        memcpy(ar_interp_input(in, 0)->data, x, sizeof x);
        memcpy(ar_interp_input(in, 1)->data, z, sizeof z);
        ck_assert_int_eq(ar_interp_invoke(in), 0);
        memcpy(got[th * 2 + f], ar_interp_output(in, 0)->data, sizeof got[0]);
        for (int i = 0; i < H * W * CO; i++)
          ck_assert_msg(got[th * 2 + f][i] == want[i], "slot %d, %d thread(s), fuse %d: y[%d] %g, by hand %g", slot,
                        th + 1, f, i, (double)got[th * 2 + f][i], (double)want[i]);
        ar_interp_free(in);
      }
    for (int i = 1; i < 4; i++) ck_assert(memcmp(got[0], got[i], sizeof got[0]) == 0);
    ar_model_free(m);
    free(file);
  }
#undef CP_RND
}
END_TEST

/* Operands whose values decide an output shape, computed at prepare (interp/ar_prepval.c): x
 * [b,3] (shape_signature [-1,3]); s = SHAPE(x); bp1 = GATHER(s, 0) + 1; y = FILL(s, 2.5) [b,3];
 * r = RANGE(0, bp1, 1) [b+1]; TOPK_V2(z [1,6], bp1) -> the b+1 largest of z and their indices.
 * Batch 1 then 4 (resize, prepare, place): every output has the shape the values say and the
 * values by hand. */
START_TEST(test_shape_operands_computed_at_prepare) {
  static const int32_t zero = 0, one = 1;
  static const float fv = 2.5f;
  const ar_tm_tensor_t t[] = {
    {.name = "x", .dtype = AR_DTYPE_FLOAT32, .rank = 2, .dims = {1, 3}, .has_sig = true, .sig = {-1, 3}},
    {.name = "s", .dtype = AR_DTYPE_INT32, .rank = 1, .dims = {2}},
    {.name = "zero", .dtype = AR_DTYPE_INT32, .rank = 0, .data = &zero},
    {.name = "b", .dtype = AR_DTYPE_INT32, .rank = 0},
    {.name = "one", .dtype = AR_DTYPE_INT32, .rank = 0, .data = &one},
    {.name = "bp1", .dtype = AR_DTYPE_INT32, .rank = 0},
    {.name = "v", .dtype = AR_DTYPE_FLOAT32, .rank = 0, .data = &fv},
    {.name = "y", .dtype = AR_DTYPE_FLOAT32, .rank = 2, .dims = {1, 3}, .has_sig = true, .sig = {-1, 3}},
    {.name = "r", .dtype = AR_DTYPE_INT32, .rank = 1, .dims = {2}, .has_sig = true, .sig = {-1}},
    {.name = "z", .dtype = AR_DTYPE_FLOAT32, .rank = 2, .dims = {1, 6}},
    {.name = "topv", .dtype = AR_DTYPE_FLOAT32, .rank = 2, .dims = {1, 2}, .has_sig = true, .sig = {1, -1}},
    {.name = "topi", .dtype = AR_DTYPE_INT32, .rank = 2, .dims = {1, 2}, .has_sig = true, .sig = {1, -1}},
  };
  const ar_tm_op_t ops[] = {
    {.builtin = 77 /* SHAPE */, .n_in = 1, .n_out = 1, .in = {0}, .out = {1}},
    {.builtin = 36 /* GATHER */, .n_in = 2, .n_out = 1, .in = {1, 2}, .out = {3}},
    {.builtin = 0 /* ADD */, .n_in = 2, .n_out = 1, .in = {3, 4}, .out = {5}},
    {.builtin = 94 /* FILL */, .n_in = 2, .n_out = 1, .in = {1, 6}, .out = {7}},
    {.builtin = 96 /* RANGE */, .n_in = 3, .n_out = 1, .in = {2, 5, 4}, .out = {8}},
    {.builtin = 48 /* TOPK_V2 */, .n_in = 2, .n_out = 2, .in = {9, 5}, .out = {10, 11}},
  };
  const int32_t ins[] = {0, 9}, outs[] = {7, 8, 10, 11};
  size_t bytes = 0;
  uint8_t *file = ar_tm_build(t, 12, ops, 6, ins, 2, outs, 4, &bytes);
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(file, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_interp_new(m, &opt, &in, msg, sizeof msg) == 0, "%s", msg);
  const float z[6] = {0.5f, -1.0f, 3.0f, 2.0f, 3.5f, -0.25f};   /* sorted: 4, 2, 3, 0, 5, 1 */
  const int32_t order[6] = {4, 2, 3, 0, 5, 1};
  for (int b = 1; b <= 4; b += 3) {
    if (b > 1) {
      const int32_t dims[2] = {b, 3};
      ck_assert_msg(ar_interp_resize_input(in, 0, 2, dims, msg, sizeof msg) == 0, "%s", msg);
      ck_assert(ar_interp_needs_prepare(in));
      ck_assert_msg(ar_interp_prepare(in, msg, sizeof msg) == 0, "batch %d: %s", b, msg);
    }
    ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
    float *x = ar_interp_input(in, 0)->data;
    for (int i = 0; i < 3 * b; i++) x[i] = (float)i;
    memcpy(ar_interp_input(in, 1)->data, z, sizeof z);
    ck_assert_int_eq(ar_interp_invoke(in), 0);
    const ar_tview_t *y = ar_interp_output(in, 0), *r = ar_interp_output(in, 1), *tv = ar_interp_output(in, 2),
                     *ti = ar_interp_output(in, 3);
    ck_assert_msg(y->rank == 2 && y->dims[0] == b && y->dims[1] == 3, "batch %d: FILL gave rank %d [%d,...]", b,
                  y->rank, y->dims[0]);
    for (int i = 0; i < 3 * b; i++) ck_assert_float_eq(((const float *)y->data)[i], 2.5f);
    ck_assert_msg(r->rank == 1 && r->dims[0] == b + 1, "batch %d: RANGE gave %d elements", b, r->dims[0]);
    for (int i = 0; i <= b; i++) ck_assert_int_eq(((const int32_t *)r->data)[i], i);
    ck_assert_msg(tv->rank == 2 && tv->dims[0] == 1 && tv->dims[1] == b + 1 && ti->dims[1] == b + 1,
                  "batch %d: TOPK_V2 gave [%d,%d]", b, tv->dims[0], tv->dims[1]);
    for (int i = 0; i <= b; i++) {
      ck_assert_int_eq(((const int32_t *)ti->data)[i], order[i]);
      ck_assert_float_eq(((const float *)tv->data)[i], z[order[i]]);
    }
  }
  ar_interp_free(in);
  ar_model_free(m);
  free(file);
}
END_TEST

/* FILL dims computed from a graph input's VALUES (n + 1) is known only at invoke: TFLite makes
 * the output dynamic; arenad refuses at load, naming the operator and the operand. */
START_TEST(test_shape_operand_from_input_values_refused) {
  static const int32_t one[1] = {1};
  static const float fv = 1.0f;
  const ar_tm_tensor_t t[] = {
    {.name = "n", .dtype = AR_DTYPE_INT32, .rank = 1, .dims = {1}},
    {.name = "one", .dtype = AR_DTYPE_INT32, .rank = 1, .dims = {1}, .data = one},
    {.name = "d", .dtype = AR_DTYPE_INT32, .rank = 1, .dims = {1}},
    {.name = "v", .dtype = AR_DTYPE_FLOAT32, .rank = 0, .data = &fv},
    {.name = "y", .dtype = AR_DTYPE_FLOAT32, .rank = 1, .dims = {2}, .has_sig = true, .sig = {-1}},
  };
  const ar_tm_op_t ops[] = {
    {.builtin = 0 /* ADD */, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}},
    {.builtin = 94 /* FILL */, .n_in = 2, .n_out = 1, .in = {2, 3}, .out = {4}},
  };
  const int32_t ins[] = {0}, outs[] = {4};
  size_t bytes = 0;
  uint8_t *file = ar_tm_build(t, 5, ops, 2, ins, 1, outs, 1, &bytes);
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(file, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ar_interp_t *in = NULL;
  ck_assert_int_eq(ar_interp_new(m, &opt, &in, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(msg, "FILL v1 [input 0 (dims) is not a constant (its values decide the output shape and are "
                       "known only at invoke") && strstr(msg, "(op 1)"), "%s", msg);
  ar_model_free(m);
  free(file);
}
END_TEST

static Suite *interp_suite(void) {
  Suite *s = suite_create("interp");
  TCase *tc = tcase_create("golden");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_golden, 0, ar_test_n_models);
  suite_add_tcase(s, tc);
  tc = tcase_create("plan_independence");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_plan_independence, 0, ar_test_n_models);
  suite_add_tcase(s, tc);
  tc = tcase_create("weights");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_weights_stored_same_as_fp32, 0, ar_test_n_models);
  suite_add_tcase(s, tc);
  tc = tcase_create("contract");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_shared_activation_region);
  tcase_add_test(tc, test_place_contract);
  tcase_add_test(tc, test_split_rows_hint);
  tcase_add_test(tc, test_macs_by_hand);
  tcase_add_test(tc, test_fp16_read_as_stored_generated);
  tcase_add_test(tc, test_prepare_errors);
  tcase_add_test(tc, test_shapeless_detection_outputs);
  tcase_add_test(tc, test_pad_folded_into_depthwise);
  tcase_add_test(tc, test_relu_folded_into_producer);
  tcase_add_test(tc, test_channel_pad_folded_into_add);
  tcase_add_test(tc, test_ignored_options_tables_run);
  tcase_add_test(tc, test_negative_anchor_refused_at_load);
  tcase_add_test(tc, test_shape_operands_computed_at_prepare);
  tcase_add_test(tc, test_shape_operand_from_input_values_refused);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(interp_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
