/* check_lifetimes.c - lifetimes, classes and in-place on the 11 real models, the planned arena of
 * each (pinned), and the plan figures against TFLite ArenaPlanner's.
 *
 * TFLite's figures below are external reference numbers (TFLite ArenaPlanner's arena for the same
 * model files, from the issue that specifies the planner); they are ceilings for `best` and, with
 * the `tflite` convention, the exact result expected from `greedy-by-size` (TFLite's own rule).
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "interp/ar_budget.h"
#include "interp/ar_interp.h"
#include "interp/ar_lifetimes.h"
#include "loader/ar_model.h"
#include "planner/ar_planner.h"
#include "tests/ar_test_util.h"

typedef struct model_pin {
  const char *stem;
  uint64_t tflite_arena;     /* TFLite ArenaPlanner (external reference) */
  uint64_t tflite_bound;     /* bound under TFLite's lifetimes (= our `tflite` tensor bound) */
  uint64_t arenad_bound;     /* pinned: tensor bound under the `arenad` convention */
} model_pin_t;

/* Regression pins: best reaches the bound on every model, so the bound is the pinned arena. A
 * planner or lifetimes change that costs memory fails here. */
static const model_pin_t pins[] = {
  {"face_detection_full_range",        3096576, 3096576, 2654208},
  {"face_detection_full_range_sparse", 4030976, 4030976, 3588608},
  {"face_detection_short_range",       1769472, 1507328, 1310720},
  {"hand_landmark_full",               4917248, 4616192, 4014080},
  {"hand_landmark_lite",               4816896, 4816896, 4214784},
  {"object_detection_3d_camera",       4917248, 4616192, 4014080},
  {"object_detection_3d_cup",          4917248, 4616192, 4014080},
  {"palm_detection_full",              3981312, 3981312, 3538944},
  {"palm_detection_lite",              3981312, 3981312, 3538944},
  {"selfie_segmentation",              4456448, 4456448, 3145792},
  {"selfie_segmentation_landscape",    2506752, 2506752, 1769536},
};

static ar_model_t *load(const char *stem) {
  char path[1024], msg[AR_MSG_BYTES];
  ar_model_t *m = NULL;
  int rc = ar_model_load(ar_test_model_path(path, sizeof path, stem), &m, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", path, msg);
  return m;
}

typedef struct built {
  ar_planner_t *p;
  ar_tensor_plan_t *tp;
  int32_t *scratch;
  bool *folded;
} built_t;

static built_t build(const ar_model_t *m, ar_lifetimes_t conv, bool inplace,
                     const uint64_t *scratch) {
  const ar_subgraph_t *sg = &m->subgraphs[0];
  built_t b;
  b.p = ar_planner_new(64);
  b.tp = calloc(sg->n_tensors, sizeof *b.tp);
  b.scratch = calloc(sg->n_operators, sizeof *b.scratch);
  b.folded = calloc(sg->n_operators, sizeof *b.folded);
  ar_lifetime_options_t o = {conv, inplace, scratch, NULL, false, NULL, NULL, 0, NULL};
  char msg[AR_MSG_BYTES];
  int rc = ar_lifetimes_build(m, &o, b.p, b.tp, b.scratch, b.folded, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s", msg);
  return b;
}

static void built_free(built_t *b) {
  ar_planner_free(b->p);
  free(b->tp);
  free(b->scratch);
  free(b->folded);
}

static void plan_verified(ar_planner_t *p, ar_strategy_t s, ar_plan_figures_t *f) {
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_planner_plan(p, s), 0);
  ck_assert_msg(ar_planner_verify(p, msg, sizeof msg) == 0, "%s", msg);
  ar_planner_figures(p, f);
}

static bool in_list(const int32_t *v, uint32_t n, int32_t t) {
  for (uint32_t i = 0; i < n; i++)
    if (v[i] == t) return true;
  return false;
}

START_TEST(test_names) {
  ar_lifetimes_t l;
  ck_assert_int_eq(ar_lifetimes_parse("tflite", &l), 0);
  ck_assert_int_eq(l, AR_LIFETIMES_TFLITE);
  ck_assert_int_eq(ar_lifetimes_parse("arenad", &l), 0);
  ck_assert_int_eq(l, AR_LIFETIMES_ARENAD);
  ck_assert_int_eq(ar_lifetimes_parse("micro", &l), AR_EINVAL);
  ck_assert_str_eq(ar_lifetimes_name(AR_LIFETIMES_TFLITE), "tflite");
}
END_TEST

/* Lifetimes and homes as the conventions define them, checked against readers and producers
 * recomputed here from the operator lists. */
START_TEST(test_lifetimes_real_model) {
  const char *stem = pins[_i].stem;
  ar_model_t *m = load(stem);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  const int32_t nt = (int32_t)sg->n_tensors, no = (int32_t)sg->n_operators;
  int32_t *last_read = malloc(nt * sizeof *last_read), *producer = malloc(nt * sizeof *producer);
  for (int conv = 0; conv < 2; conv++) {
    built_t b = build(m, (ar_lifetimes_t)conv, true, NULL);
    for (int32_t t = 0; t < nt; t++) last_read[t] = producer[t] = -1;
    int n_folded = 0;
    for (int32_t k = 0; k < no; k++) {
      const ar_operator_t *op = &sg->operators[k];
      if (b.folded[k]) {
        /* folded: a DEQUANTIZE/DENSIFY of constants or of folded tensors; output persistent */
        n_folded++;
        ck_assert(op->op == AR_OP_DEQUANTIZE || op->op == AR_OP_DENSIFY);
        for (int32_t i = 0; i < op->n_inputs; i++) {
          int32_t t = op->inputs[i];
          ck_assert(t < 0 || ar_tensor_is_constant(&sg->tensors[t]) || b.tp[t].folded);
        }
        ck_assert_int_eq(b.tp[op->outputs[0]].home, AR_HOME_PERSISTENT);
        ck_assert(b.tp[op->outputs[0]].folded);
        continue;
      }
      for (int32_t i = 0; i < op->n_inputs; i++)
        if (op->inputs[i] >= 0) last_read[op->inputs[i]] = k;
      for (int32_t o = 0; o < op->n_outputs; o++)
        if (op->outputs[o] >= 0) producer[op->outputs[o]] = k;
    }
    /* every DEQUANTIZE/DENSIFY in these models reads weights: all are folded */
    int n_fold_ops = 0;
    for (int32_t k = 0; k < no; k++)
      n_fold_ops += sg->operators[k].op == AR_OP_DEQUANTIZE || sg->operators[k].op == AR_OP_DENSIFY;
    ck_assert_int_eq(n_folded, n_fold_ops);
    for (int32_t t = 0; t < nt; t++) {
      const ar_tensor_plan_t *tp = &b.tp[t];
      const ar_tensor_t *ten = &sg->tensors[t];
      bool gin = in_list(sg->inputs, sg->n_inputs, t), gout = in_list(sg->outputs, sg->n_outputs, t);
      if (ar_tensor_is_constant(ten)) {
        ck_assert_int_eq(tp->home, AR_HOME_CONSTANT);
        ck_assert_int_eq(tp->buffer, -1);
        continue;
      }
      if (tp->home != AR_HOME_ARENA) continue;
      ar_plan_buffer_t pb;
      ck_assert_int_eq(ar_planner_buffer(b.p, tp->buffer, &pb), 0);
      ck_assert_int_eq(pb.id, t);
      ck_assert_int_eq(pb.cls, AR_BUF_ARENA);
      ck_assert_uint_ge(pb.size_bytes, ten->bytes);   /* every buffer holds its tensor */
      ck_assert_int_eq(pb.first_use, tp->first_use);
      ck_assert_int_eq(pb.last_use, tp->last_use);
      if (gin) {
        ck_assert_int_eq(tp->first_use, 0);
        /* tflite: alive the whole invoke; arenad: dies after its last reader */
        ck_assert_int_eq(tp->last_use, conv == AR_LIFETIMES_TFLITE ? no - 1 : last_read[t]);
      } else {
        ck_assert_int_eq(tp->first_use, producer[t]);
      }
      if (gout) {
        ck_assert_int_eq(tp->last_use, no - 1);
        ck_assert_int_eq(tp->inplace_of, -1);        /* never in-place for graph outputs */
      } else if (!gin && last_read[t] >= 0) {
        ck_assert_int_eq(tp->last_use, last_read[t]);
      }
    }
    built_free(&b);
  }
  free(last_read);
  free(producer);
  ar_model_free(m);
}
END_TEST

/* The DENSIFY -> DEQUANTIZE chains of the sparse model fold transitively. */
START_TEST(test_sparse_chain_folded) {
  ar_model_t *m = load("face_detection_full_range_sparse");
  const ar_subgraph_t *sg = &m->subgraphs[0];
  built_t b = build(m, AR_LIFETIMES_ARENAD, true, NULL);
  int chains = 0, densify = 0;
  for (uint32_t k = 0; k < sg->n_operators; k++) {
    const ar_operator_t *op = &sg->operators[k];
    if (op->op == AR_OP_DENSIFY) {
      densify++;
      ck_assert(b.folded[k]);
    }
    if (op->op == AR_OP_DEQUANTIZE && !ar_tensor_is_constant(&sg->tensors[op->inputs[0]])) {
      ck_assert(b.tp[op->inputs[0]].folded);   /* its input is a DENSIFY output */
      ck_assert(b.folded[k]);
      chains++;
    }
  }
  ck_assert_int_eq(densify, 46);
  ck_assert_int_gt(chains, 0);
  ar_plan_figures_t f;
  plan_verified(b.p, AR_STRATEGY_BEST, &f);
  ck_assert_uint_gt(f.persistent_bytes, 0);
  built_free(&b);
  ar_model_free(m);
}
END_TEST

/* In-place only where the convention allows it, and only when safe: the reused input's whole alias
 * group is read by nobody after the operator, the output is no graph output, shapes match. */
static int count_inplace_ops[AR_OP_COUNT][2];

START_TEST(test_inplace_rules) {
  const char *stem = pins[_i].stem;
  ar_model_t *m = load(stem);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  const int32_t nt = (int32_t)sg->n_tensors, no = (int32_t)sg->n_operators;
  int32_t *last_read = malloc(nt * sizeof *last_read), *reads = malloc(nt * sizeof *reads);
  int32_t *producer = malloc(nt * sizeof *producer), *root = malloc(nt * sizeof *root);
  for (int conv = 0; conv < 2; conv++) {
    built_t off = build(m, (ar_lifetimes_t)conv, false, NULL);
    for (int32_t t = 0; t < nt; t++) ck_assert_int_eq(off.tp[t].inplace_of, -1);
    for (int i = 0; i < ar_planner_count(off.p); i++) {
      ar_plan_buffer_t pb;
      ar_planner_buffer(off.p, i, &pb);
      ck_assert_int_eq(pb.alias_of, -1);
    }
    built_free(&off);

    built_t b = build(m, (ar_lifetimes_t)conv, true, NULL);
    for (int32_t t = 0; t < nt; t++) {
      last_read[t] = producer[t] = -1;
      reads[t] = 0;
    }
    for (int32_t k = 0; k < no; k++) {
      if (b.folded[k]) continue;
      const ar_operator_t *op = &sg->operators[k];
      for (int32_t i = 0; i < op->n_inputs; i++)
        if (op->inputs[i] >= 0) { last_read[op->inputs[i]] = k; reads[op->inputs[i]]++; }
      for (int32_t o = 0; o < op->n_outputs; o++)
        if (op->outputs[o] >= 0) producer[op->outputs[o]] = k;
    }
    /* alias group roots, in execution order */
    for (int32_t t = 0; t < nt; t++) root[t] = t;
    for (int32_t k = 0; k < no; k++) {
      const ar_operator_t *op = &sg->operators[k];
      for (int32_t o = 0; o < op->n_outputs; o++) {
        int32_t t = op->outputs[o];
        if (t >= 0 && b.tp[t].inplace_of >= 0) root[t] = root[b.tp[t].inplace_of];
      }
    }
    for (int32_t t = 0; t < nt; t++) {
      int32_t x = b.tp[t].inplace_of;
      if (x < 0) continue;
      int32_t k = producer[t];
      ck_assert_int_ge(k, 0);
      const ar_operator_t *op = &sg->operators[k];
      ck_assert_int_eq(op->outputs[0], t);
      bool is_input = false;
      for (int32_t i = 0; i < op->n_inputs; i++) is_input = is_input || op->inputs[i] == x;
      ck_assert(is_input);
      ck_assert(!in_list(sg->outputs, sg->n_outputs, t));
      ck_assert_int_eq(b.tp[x].home, AR_HOME_ARENA);
      /* planner side: the output's buffer is an alias of the input's */
      ar_plan_buffer_t pb;
      ar_planner_buffer(b.p, b.tp[t].buffer, &pb);
      ck_assert_int_eq(pb.alias_of, b.tp[x].buffer);
      count_inplace_ops[op->op][conv]++;
      if (op->op == AR_OP_RESHAPE) {
        ck_assert_uint_eq(sg->tensors[x].bytes, sg->tensors[t].bytes);
        if (conv == AR_LIFETIMES_TFLITE) ck_assert(!in_list(sg->inputs, sg->n_inputs, x));
        continue;
      }
      if (conv == AR_LIFETIMES_TFLITE) {
        ck_assert(op->op == AR_OP_ADD || op->op == AR_OP_MUL);
        ck_assert_int_eq(reads[x], 1);       /* TFLite: this operator is its only consumer */
        ck_assert_uint_gt(sg->tensors[x].bytes, 4);
        ck_assert(!in_list(sg->inputs, sg->n_inputs, x));
      } else {
        ck_assert(op->op == AR_OP_ADD || op->op == AR_OP_MUL || op->op == AR_OP_PRELU ||
                  op->op == AR_OP_RELU || op->op == AR_OP_RELU6 || op->op == AR_OP_LOGISTIC ||
                  op->op == AR_OP_HARD_SWISH);
      }
      /* elementwise over the output's index: the input has the output's shape */
      ck_assert_int_eq(sg->tensors[x].rank, sg->tensors[t].rank);
      for (int32_t d = 0; d < sg->tensors[t].rank; d++)
        ck_assert_int_eq(sg->tensors[x].dims[d], sg->tensors[t].dims[d]);
      /* nobody reads the overwritten values later: no member of x's group that holds them (born
       * before k) is read after k */
      for (int32_t u = 0; u < nt; u++) {
        if (root[u] != root[x] || u == t || producer[u] >= k) continue;
        ck_assert_msg(last_read[u] <= k, "%s: operator %d writes tensor %d over %d, but tensor "
                      "%d of the same bytes is read at %d", stem, k, t, x, u, last_read[u]);
        ck_assert(!in_list(sg->outputs, sg->n_outputs, u));
      }
    }
    built_free(&b);
  }
  free(last_read);
  free(reads);
  free(producer);
  free(root);
  ar_model_free(m);
}
END_TEST

/* Run after test_inplace_rules has seen every model: every rule the models can exercise is
 * exercised (so check_interp's in-place on/off identical-output test covers each of them). */
START_TEST(test_inplace_rules_exercised) {
  static const ar_op_t arenad_ops[] = {AR_OP_ADD, AR_OP_MUL, AR_OP_RESHAPE, AR_OP_RELU,
                                       AR_OP_LOGISTIC, AR_OP_HARD_SWISH, AR_OP_PRELU};
  for (size_t i = 0; i < sizeof arenad_ops / sizeof arenad_ops[0]; i++)
    ck_assert_msg(count_inplace_ops[arenad_ops[i]][AR_LIFETIMES_ARENAD] > 0, "%s never in-place",
                  ar_op_name(arenad_ops[i]));
  ck_assert_int_gt(count_inplace_ops[AR_OP_ADD][AR_LIFETIMES_TFLITE], 0);
  ck_assert_int_gt(count_inplace_ops[AR_OP_RESHAPE][AR_LIFETIMES_TFLITE], 0);
  ck_assert_int_eq(count_inplace_ops[AR_OP_RELU][AR_LIFETIMES_TFLITE], 0);
  ck_assert_int_eq(count_inplace_ops[AR_OP_PRELU][AR_LIFETIMES_TFLITE], 0);
}
END_TEST

/* The figures the issue asks for, and the regression pins. */
START_TEST(test_plan_figures) {
  const model_pin_t *pin = &pins[_i];
  ar_model_t *m = load(pin->stem);
  ar_plan_figures_t f, g;

  built_t t = build(m, AR_LIFETIMES_TFLITE, true, NULL);
  /* TFLite's own rule on TFLite's lifetimes gives TFLite's arena, to the byte */
  plan_verified(t.p, AR_STRATEGY_GREEDY_BY_SIZE, &g);
  ck_assert_uint_eq(g.tensor_arena_bytes, pin->tflite_arena);
  plan_verified(t.p, AR_STRATEGY_BEST, &f);
  ck_assert_uint_eq(f.tensor_lower_bound_bytes, pin->tflite_bound);
  ck_assert_uint_eq(f.tensor_arena_bytes, f.tensor_lower_bound_bytes);
  ck_assert_uint_le(f.tensor_arena_bytes, pin->tflite_arena);
  uint64_t tflite_best = f.tensor_arena_bytes;
  built_free(&t);

  built_t a = build(m, AR_LIFETIMES_ARENAD, true, NULL);
  plan_verified(a.p, AR_STRATEGY_BEST, &f);
  ck_assert_uint_eq(f.tensor_lower_bound_bytes, pin->arenad_bound);
  ck_assert_uint_le(f.tensor_arena_bytes, pin->arenad_bound);
  ck_assert_uint_le(f.tensor_arena_bytes, tflite_best);
  for (int s = 0; s < 3; s++) {
    plan_verified(a.p, (ar_strategy_t)s, &g);
    ck_assert_uint_ge(g.arena_bytes, f.arena_bytes);
  }
  built_free(&a);
  printf("plan %-34s tflite %8llu (TFLite %8llu)  arenad %8llu  (bytes, best = bound)\n", pin->stem,
         (unsigned long long)tflite_best, (unsigned long long)pin->tflite_arena,
         (unsigned long long)pin->arenad_bound);
  ar_model_free(m);
}
END_TEST

/* Stored weights: every fp16 DEQUANTIZE of a constant is at use, runs at the step of its first
 * reader (the lowest reading operator), and its output is an arena tensor living exactly from
 * that step to its last reader; nothing else changes mode; the plan verifies. */
START_TEST(test_weights_stored_at_use) {
  const model_pin_t *pin = &pins[_i];
  ar_model_t *m = load(pin->stem);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  const int32_t no = (int32_t)sg->n_operators;
  ar_op_mode_t *mf = calloc((size_t)no, sizeof *mf), *ms = calloc((size_t)no, sizeof *ms);
  int32_t *sf = calloc((size_t)no, sizeof *sf), *ss = calloc((size_t)no, sizeof *ss);
  ck_assert_int_eq(ar_lifetimes_op_modes(m, NULL, false, NULL, mf, sf), 0);
  ck_assert_int_eq(ar_lifetimes_op_modes(m, NULL, true, NULL, ms, ss), 0);
  ar_planner_t *p = ar_planner_new(64);
  ar_tensor_plan_t *tp = calloc(sg->n_tensors, sizeof *tp);
  int32_t *scratch = calloc((size_t)no, sizeof *scratch);
  bool *folded = calloc((size_t)no, sizeof *folded);
  ar_lifetime_options_t o = {AR_LIFETIMES_ARENAD, true, NULL, NULL, true, NULL, NULL, 0, NULL};
  char msg[AR_MSG_BYTES];
  ck_assert_msg(ar_lifetimes_build(m, &o, p, tp, scratch, folded, msg, sizeof msg) == 0, "%s", msg);
  int at_use = 0;
  for (int32_t k = 0; k < no; k++) {
    const ar_operator_t *op = &sg->operators[k];
    ck_assert_int_ne(mf[k], AR_OPMODE_AT_USE);
    ck_assert_int_eq(folded[k], ms[k] == AR_OPMODE_FOLDED);
    if (ms[k] != AR_OPMODE_AT_USE) {
      ck_assert_int_eq(ms[k], mf[k]);
      ck_assert_int_eq(ss[k], k);
      continue;
    }
    at_use++;
    ck_assert_int_eq(mf[k], AR_OPMODE_FOLDED);
    ck_assert_int_eq(op->op, AR_OP_DEQUANTIZE);
    ck_assert_int_eq(sg->tensors[op->inputs[0]].dtype, AR_DTYPE_FLOAT16);
    int32_t t = op->outputs[0], first = -1, last = -1;
    for (int32_t r = 0; r < no; r++)
      for (int32_t i = 0; i < sg->operators[r].n_inputs; i++)
        if (sg->operators[r].inputs[i] == t) {
          if (first < 0) first = r;
          last = r;
        }
    ck_assert_int_eq(ss[k], first);
    ck_assert_int_eq(tp[t].home, AR_HOME_ARENA);
    ck_assert(tp[t].at_use);
    ck_assert_int_eq(tp[t].first_use, first);
    ck_assert_int_eq(tp[t].last_use, last);
  }
  ck_assert_int_gt(at_use, 0);
  ck_assert_int_eq(ar_planner_plan(p, AR_STRATEGY_BEST), 0);
  ck_assert_msg(ar_planner_verify(p, msg, sizeof msg) == 0, "%s", msg);
  printf("stored %-34s %d fp16 DEQUANTIZE at use\n", pin->stem, at_use);
  free(mf);
  free(ms);
  free(sf);
  free(ss);
  free(tp);
  free(scratch);
  free(folded);
  ar_planner_free(p);
  ar_model_free(m);
}
END_TEST

/* With the interpreter's scratch sizes (kernel prepare), scratch fits around the tensors: the
 * whole activation arena still stays at its bound, and the tensors alone at theirs. */
START_TEST(test_plan_with_scratch) {
  const model_pin_t *pin = &pins[_i];
  ar_model_t *m = load(pin->stem);
  for (int conv = 0; conv < 2; conv++) {
    /* fp32 weights fold as TFLite does, so the pinned bounds hold; stored weights add the widened
     * weights of one operator at a time, and the plan stays at its (higher) bound. */
    /* Inverted-residual fusion off: the pins; on: expansion-conv outputs without a buffer, so the
     * tensors' bound is at most the unfused one (fp32), and the plan still sits at its bound. */
    for (int w = 0; w < 2; w++)
      for (int fz = 0; fz < 2; fz++) {
        ar_interp_options_t opt;
        ar_interp_options_default(&opt);
        opt.lifetimes = (ar_lifetimes_t)conv;
        opt.weights = w ? AR_WEIGHTS_STORED : AR_WEIGHTS_FP32;
        opt.fuse = fz;
        ar_interp_t *in = NULL;
        char msg[AR_MSG_BYTES];
        ck_assert_msg(ar_interp_new(m, &opt, &in, msg, sizeof msg) == 0, "%s: %s", pin->stem, msg);
        const ar_planner_t *p = ar_interp_planner(in);
        ck_assert_msg(ar_planner_verify(p, msg, sizeof msg) == 0, "%s", msg);
        ar_plan_figures_t f;
        ar_planner_figures(p, &f);
        uint64_t pinned = conv == AR_LIFETIMES_TFLITE ? pin->tflite_bound : pin->arenad_bound;
        if (fz && !w) ck_assert_uint_le(f.tensor_lower_bound_bytes, pinned);
        else if (!fz && w) ck_assert_uint_ge(f.tensor_lower_bound_bytes, pinned);
        else if (!fz) ck_assert_uint_eq(f.tensor_lower_bound_bytes, pinned);
        if (fz) {
          /* Folded PADs (ar_interp_op_pad_folded) make the depthwise read the PAD's input, which
           * then lives one operator longer: on face_detection_full_range_sparse the whole arena
           * (tensors and scratch) is at its bound, but its tensor part sits 4,000 B (0.15 %) above
           * the tensors-only bound, 930 KB below the unfused plan. */
          ck_assert_uint_le(f.tensor_arena_bytes, f.tensor_lower_bound_bytes + f.tensor_lower_bound_bytes / 100);
          ck_assert_uint_eq(f.arena_bytes, f.lower_bound_bytes);
        } else {
          ck_assert_uint_eq(f.tensor_arena_bytes, f.tensor_lower_bound_bytes);
          ck_assert_uint_eq(f.arena_bytes, f.lower_bound_bytes);
        }
        ar_interp_free(in);
      }
  }
  ar_model_free(m);
}
END_TEST

/* In-place on and off give bit-identical outputs for each convention (pseudo-random input). */
/* Scratch as TFLite's im2col would ask for it (out_h*out_w*kh*kw*ci floats at every CONV_2D that
 * is not 1x1, and the whole output at every transpose conv): each scratch buffer lives [k, k] only,
 * the plan verifies, best still reaches the bound, and the arena grows by less than the scratch sum. */
START_TEST(test_plan_with_im2col_scratch) {
  const model_pin_t *pin = &pins[_i];
  ar_model_t *m = load(pin->stem);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  uint64_t *scratch = calloc(sg->n_operators, sizeof *scratch);
  uint64_t sum = 0;
  int n_scratch = 0;
  for (uint32_t k = 0; k < sg->n_operators; k++) {
    const ar_operator_t *op = &sg->operators[k];
    const ar_tensor_t *out = &sg->tensors[op->outputs[0]];
    if (op->op == AR_OP_CONV_2D) {
      const ar_tensor_t *w = &sg->tensors[op->inputs[1]];
      if (w->dims[1] * w->dims[2] == 1) continue;
      scratch[k] = (uint64_t)out->dims[1] * out->dims[2] * w->dims[1] * w->dims[2] * w->dims[3] * 4;
    } else if (op->op == AR_OP_CONVOLUTION_2D_TRANSPOSE_BIAS) {
      scratch[k] = out->bytes;
    } else {
      continue;
    }
    sum += scratch[k];
    n_scratch++;
  }
  ck_assert_int_gt(n_scratch, 0);
  for (int conv = 0; conv < 2; conv++) {
    built_t b = build(m, (ar_lifetimes_t)conv, true, scratch);
    ck_assert_int_eq(ar_planner_plan(b.p, AR_STRATEGY_BEST), 0);
    char msg[AR_MSG_BYTES];
    ck_assert_msg(ar_planner_verify(b.p, msg, sizeof msg) == 0, "%s: %s", pin->stem, msg);
    int seen = 0;
    for (uint32_t k = 0; k < sg->n_operators; k++) {
      if (scratch[k] == 0) { ck_assert_int_eq(b.scratch[k], -1); continue; }
      ar_plan_buffer_t rec;
      ck_assert_int_eq(ar_planner_buffer(b.p, b.scratch[k], &rec), 0);
      ck_assert_int_eq(rec.cls, AR_BUF_SCRATCH);
      ck_assert_int_eq(rec.first_use, (int32_t)k);
      ck_assert_int_eq(rec.last_use, (int32_t)k);
      ck_assert_uint_eq(rec.size_bytes, scratch[k]);
      seen++;
    }
    ck_assert_int_eq(seen, n_scratch);
    ar_plan_figures_t f;
    ar_planner_figures(b.p, &f);
    ck_assert_uint_eq(f.scratch_bytes, sum);
    ck_assert_uint_eq(f.arena_bytes, f.lower_bound_bytes);
    ck_assert_uint_ge(f.arena_bytes, f.tensor_arena_bytes);
    ck_assert_uint_le(f.arena_bytes, f.tensor_arena_bytes + sum + 64 * (uint64_t)n_scratch);
    built_free(&b);
  }
  free(scratch);
  ar_model_free(m);
}
END_TEST

START_TEST(test_inplace_identical_outputs) {
  const char *stem = pins[_i].stem;
  ar_model_t *m = load(stem);
  float *ref[8] = {0};
  uint64_t ref_bytes[8] = {0};
  for (int conv = 0; conv < 2; conv++) {
    for (int ip = 1; ip >= 0; ip--) {
      ar_interp_options_t opt;
      ar_interp_options_default(&opt);
      opt.lifetimes = (ar_lifetimes_t)conv;
      opt.inplace = ip;
      ar_interp_t *in = NULL;
      char msg[AR_MSG_BYTES];
      ck_assert_msg(ar_interp_new(m, &opt, &in, msg, sizeof msg) == 0, "%s", msg);
      ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
      uint64_t s = 0x2545F4914F6CDD1Dull;
      for (int32_t i = 0; i < ar_interp_n_inputs(in); i++) {
        ar_tview_t *v = ar_interp_input(in, i);
        float *d = v->data;
        for (uint64_t e = 0; e < v->bytes / 4; e++) {
          s ^= s << 13; s ^= s >> 7; s ^= s << 17;
          d[e] = (float)((s >> 40) & 0xFFFF) / 32768.0f - 1.0f;
        }
      }
      ck_assert_int_eq(ar_interp_invoke(in), 0);
      int32_t no = ar_interp_n_outputs(in);
      ck_assert_int_le(no, 8);
      for (int32_t j = 0; j < no; j++) {
        const ar_tview_t *v = ar_interp_output(in, j);
        if (ref[j] == NULL) {
          ref[j] = malloc(v->bytes);
          memcpy(ref[j], v->data, v->bytes);
          ref_bytes[j] = v->bytes;
        } else {
          ck_assert_uint_eq(v->bytes, ref_bytes[j]);
          ck_assert_msg(memcmp(v->data, ref[j], v->bytes) == 0,
                        "%s: output %d differs (lifetimes %s, in-place %d)", stem, j,
                        ar_lifetimes_name(opt.lifetimes), ip);
        }
      }
      ar_interp_free(in);
    }
  }
  for (int j = 0; j < 8; j++) free(ref[j]);
  ar_model_free(m);
}
END_TEST

/* The budget table: JSON keys of ar_budget.h with the plan's values, text and SVG written. */
START_TEST(test_budget_table) {
  ar_model_t *m = load("face_detection_short_range");
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  opt.lifetimes = AR_LIFETIMES_TFLITE;
  ar_interp_t *in = NULL;
  char msg[AR_MSG_BYTES];
  ck_assert_msg(ar_interp_new(m, &opt, &in, msg, sizeof msg) == 0, "%s", msg);
  json_t *j = ar_budget_json(in);
  ck_assert_ptr_nonnull(j);
  static const char *const keys[] = {"arena_bytes", "tensor_arena_bytes", "lower_bound_bytes",
                                     "naive_bytes", "persistent_bytes", "scratch_bytes",
                                     "alignment", "strategy", "lifetimes", "ratio_to_bound",
                                     "operators", "buffers", "weights", "weights_bytes",
                                     "folded_bytes", "packed_bytes", "widened_bytes"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    ck_assert_msg(json_object_get(j, keys[i]) != NULL, "missing key %s", keys[i]);
  /* 1,507,328 B before the channel PADs of its residual shortcuts were folded into their ADDs. */
  ck_assert_int_eq(json_integer_value(json_object_get(j, "tensor_arena_bytes")), 1441792);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "lower_bound_bytes")),
                   json_integer_value(json_object_get(j, "arena_bytes")));
  ck_assert_str_eq(json_string_value(json_object_get(j, "lifetimes")), "tflite");
  ck_assert_str_eq(json_string_value(json_object_get(j, "strategy")), "best");
  /* Stored weights (the default): nothing folded, the persistent region is kernel state. */
  ck_assert_str_eq(json_string_value(json_object_get(j, "weights")), "stored");
  ck_assert_int_eq(json_integer_value(json_object_get(j, "folded_bytes")), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "packed_bytes")),
                   json_integer_value(json_object_get(j, "persistent_bytes")));
  ck_assert_int_eq(json_integer_value(json_object_get(j, "weights_bytes")), (json_int_t)m->constant_bytes);
  /* What is still widened at use (fp16 weights whose readers do not read them as stored) is at
   * most the weights twice over. */
  ck_assert_int_le(json_integer_value(json_object_get(j, "widened_bytes")),
                   2 * json_integer_value(json_object_get(j, "weights_bytes")));
  ck_assert_int_eq(json_integer_value(json_object_get(j, "alignment")), 64);
  json_t *bufs = json_object_get(j, "buffers");
  ck_assert_int_eq((int)json_array_size(bufs), ar_planner_count(ar_interp_planner(in)));
  static const char *const bkeys[] = {"tensor", "name", "class", "size", "offset", "first_use",
                                      "last_use", "alias_of"};
  int aliases = 0, scratch = 0;
  for (size_t b = 0; b < json_array_size(bufs); b++) {
    json_t *o = json_array_get(bufs, b);
    for (size_t i = 0; i < sizeof bkeys / sizeof bkeys[0]; i++)
      ck_assert_msg(json_object_get(o, bkeys[i]) != NULL, "buffer %zu: missing %s", b, bkeys[i]);
    aliases += json_integer_value(json_object_get(o, "alias_of")) >= 0;
    scratch += strcmp(json_string_value(json_object_get(o, "class")), "scratch") == 0;
    ck_assert_int_eq(json_integer_value(json_object_get(o, "offset")) % 64, 0);
  }
  ck_assert_int_gt(aliases, 0);
  /* One scratch row per operator whose kernel asked for scratch at prepare (the shipped models'
   * only non-1x1 convolutions are first layers, which run a direct loop without im2col). */
  int asked = 0;
  for (int32_t k = 0; k < ar_interp_n_operators(in); k++)
    asked += !ar_interp_op_folded(in, k) && ar_interp_node(in, k)->scratch_bytes > 0;
  ck_assert_int_eq(scratch, asked);
  json_decref(j);
  char *text = NULL, *svg = NULL;
  size_t tn = 0, sn = 0;
  FILE *f = open_memstream(&text, &tn);
  ck_assert_int_eq(ar_budget_print(f, in), 0);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(text, "lower bound 1441792"));
  f = open_memstream(&svg, &sn);
  ck_assert_int_eq(ar_budget_svg(f, in, "face_detection_short_range"), 0);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(svg, "<svg"));
  ck_assert_ptr_nonnull(strstr(svg, "</svg>"));
  ck_assert_ptr_nonnull(strstr(svg, "lower bound"));
  free(text);
  free(svg);
  ar_interp_free(in);
  ar_model_free(m);
}
END_TEST

/* The budget table accounts for every tensor of subgraph 0, once: a buffers row (scratch rows
 * aside) or a no_buffer entry saying why - constant, elided (with the rule and both operators),
 * unused - under stored weights with the fusions on (the default), fp32 weights, and no fusion.
 * The face detectors' channel_padding tensors are PAD outputs folded into the ADD that reads them
 * (before, plan --json listed nothing for them: 375 of face_detection_full_range's 544 tensors
 * were absent, no_buffer did not exist). */
START_TEST(test_budget_accounts_for_every_tensor) {
  const char *stem = pins[_i].stem;
  ar_model_t *m = load(stem);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  int *seen = calloc(sg->n_tensors, sizeof *seen);
  ck_assert_ptr_nonnull(seen);
  for (int variant = 0; variant < 3; variant++) {
    ar_interp_options_t opt;
    ar_interp_options_default(&opt);
    if (variant == 1) opt.weights = AR_WEIGHTS_FP32;
    if (variant == 2) opt.fuse = false;
    ar_interp_t *in = NULL;
    char msg[AR_MSG_BYTES];
    ck_assert_msg(ar_interp_new(m, &opt, &in, msg, sizeof msg) == 0, "%s: %s", stem, msg);
    json_t *j = ar_budget_json(in);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "tensors")), (json_int_t)sg->n_tensors);
    memset(seen, 0, sg->n_tensors * sizeof *seen);
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(j, "buffers"), i, o) {
      if (strcmp(json_string_value(json_object_get(o, "class")), "scratch") == 0) continue;
      json_int_t t = json_integer_value(json_object_get(o, "tensor"));
      ck_assert_msg(t >= 0 && t < (json_int_t)sg->n_tensors, "%s: buffer row of tensor %lld", stem, (long long)t);
      seen[t]++;
    }
    json_int_t counts[3] = {0, 0, 0}, pad_folds = 0;
    json_array_foreach(json_object_get(j, "no_buffer"), i, o) {
      json_int_t t = json_integer_value(json_object_get(o, "tensor"));
      ck_assert_msg(t >= 0 && t < (json_int_t)sg->n_tensors, "%s: no_buffer tensor %lld", stem, (long long)t);
      seen[t]++;
      const char *kind = json_string_value(json_object_get(o, "kind"));
      const char *fusion = json_string_value(json_object_get(o, "fusion"));
      const char *reason = json_string_value(json_object_get(o, "reason"));
      ck_assert_msg(kind && fusion && reason && reason[0], "%s: tensor %lld without kind/fusion/reason", stem,
                    (long long)t);
      json_int_t prod = json_integer_value(json_object_get(o, "operator"));
      json_int_t by = json_integer_value(json_object_get(o, "by_operator"));
      ck_assert_str_eq(json_string_value(json_object_get(o, "name")), sg->tensors[t].name);
      if (strcmp(kind, "constant") == 0) {
        counts[0]++;
        ck_assert_msg(sg->tensors[t].data != NULL && prod == -1, "%s: tensor %lld is no constant", stem, (long long)t);
      } else if (strcmp(kind, "elided") == 0) {
        counts[1]++;
        /* The producer writes t in the model and never runs; by_operator exists and follows it. */
        ck_assert_msg(prod >= 0 && prod < (json_int_t)sg->n_operators && by > prod && by < (json_int_t)sg->n_operators,
                      "%s: tensor %lld elided by op %lld for op %lld", stem, (long long)t, (long long)prod,
                      (long long)by);
        ck_assert(in_list(sg->operators[prod].outputs, (uint32_t)sg->operators[prod].n_outputs, (int32_t)t));
        ck_assert_str_eq(json_string_value(json_object_get(o, "op")), ar_op_name(sg->operators[prod].op));
        ck_assert_str_eq(json_string_value(json_object_get(o, "by_op")), ar_op_name(sg->operators[by].op));
        if (strcmp(fusion, "inverted-residual") == 0) {
          ck_assert_int_eq(ar_interp_op_fused(in, (int32_t)prod), (int32_t)by);
          ck_assert_int_eq(sg->operators[by].op, AR_OP_DEPTHWISE_CONV_2D);
        } else if (strcmp(fusion, "pad-fold") == 0) {
          pad_folds++;
          ck_assert_int_eq(ar_interp_op_pad_folded(in, (int32_t)prod), (int32_t)by);
          ck_assert_int_eq(sg->operators[prod].op, AR_OP_PAD);
          ck_assert(in_list(sg->operators[by].inputs, (uint32_t)sg->operators[by].n_inputs, (int32_t)t));
        } else {
          ck_assert_msg(strcmp(fusion, "fp16-as-stored") == 0 || strcmp(fusion, "sparse-as-stored") == 0, "%s: %s",
                        stem, fusion);
          ck_assert(ar_interp_op_elided(in, (int32_t)prod));
        }
        if (strncmp(sg->tensors[t].name, "channel_padding", 15) == 0) {
          ck_assert_str_eq(fusion, "pad-fold");
          ck_assert_str_eq(json_string_value(json_object_get(o, "by_op")), "ADD");
        }
      } else {
        ck_assert_str_eq(kind, "unused");
        counts[2]++;
      }
    }
    for (uint32_t t = 0; t < sg->n_tensors; t++)
      ck_assert_msg(seen[t] == 1, "%s (variant %d): tensor %u (%s) appears %d times in the budget table", stem,
                    variant, t, sg->tensors[t].name, seen[t]);
    json_t *cnt = json_object_get(j, "no_buffer_counts");
    ck_assert_int_eq(json_integer_value(json_object_get(cnt, "constant")), counts[0]);
    ck_assert_int_eq(json_integer_value(json_object_get(cnt, "elided")), counts[1]);
    ck_assert_int_eq(json_integer_value(json_object_get(cnt, "unused")), counts[2]);
    if (variant == 2) ck_assert_int_eq(pad_folds, 0);   /* no fusion, no PAD folding */
    if (variant == 0 && strcmp(stem, "face_detection_full_range") == 0) {
      ck_assert_int_eq(pad_folds, 8);   /* channel_padding .. channel_padding_7 */
      ck_assert_int_eq(counts[0], 189);
    }
    /* The text table says the same. */
    char *text = NULL;
    size_t tn = 0;
    FILE *f = open_memstream(&text, &tn);
    ck_assert_int_eq(ar_budget_print(f, in), 0);
    fclose(f);
    char want[160];
    snprintf(want, sizeof want, " tensor(s) elided%s %lld constant(s) (", counts[1] ? " (below)," : ",",
             (long long)counts[0]);
    ck_assert_msg(strstr(text, want) != NULL, "%s: text lacks \"%s\"", stem, want);
    if (variant == 0 && strcmp(stem, "face_detection_full_range") == 0)
      ck_assert_msg(strstr(text, "channel_padding_3                        elided        294912  PAD folding: PAD op "
                                 "112 does not run; ADD op 113 reads the PAD's input and supplies the zero channels "
                                 "itself\n") != NULL, "%s", text);
    free(text);
    json_decref(j);
    ar_interp_free(in);
  }
  free(seen);
  ar_model_free(m);
}
END_TEST

static Suite *lifetimes_suite(void) {
  Suite *s = suite_create("lifetimes");
  TCase *tc = tcase_create("models");
  tcase_add_test(tc, test_names);
  tcase_add_loop_test(tc, test_lifetimes_real_model, 0, 11);
  tcase_add_test(tc, test_sparse_chain_folded);
  tcase_add_loop_test(tc, test_inplace_rules, 0, 11);
  tcase_add_test(tc, test_inplace_rules_exercised);
  tcase_add_loop_test(tc, test_plan_figures, 0, 11);
  tcase_add_loop_test(tc, test_plan_with_scratch, 0, 11);
  tcase_add_loop_test(tc, test_weights_stored_at_use, 0, 11);
  tcase_add_loop_test(tc, test_plan_with_im2col_scratch, 0, 11);
  tcase_add_loop_test(tc, test_inplace_identical_outputs, 0, 11);
  tcase_add_test(tc, test_budget_table);
  tcase_add_loop_test(tc, test_budget_accounts_for_every_tensor, 0, 11);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  if ((int)(sizeof pins / sizeof pins[0]) != ar_test_n_models) return EXIT_FAILURE;
  for (int i = 0; i < ar_test_n_models; i++)
    if (strcmp(pins[i].stem, ar_test_models[i]) != 0) return EXIT_FAILURE;
  SRunner *sr = srunner_create(lifetimes_suite());
  /* test_inplace_rules_exercised reads counts gathered by the earlier tests: one process */
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
