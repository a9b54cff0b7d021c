/* check_control_flow.c - several subgraphs (issue 27): WHILE, IF, CALL_ONCE and resource
 * variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE), loader checks and runs.
 *
 * Synthetic models (tests/ar_test_model.h, several subgraphs) give the malformed cases the loader
 * must refuse naming the operator (subgraph index out of range, the main graph as a child,
 * recursion, counts that do not match), the values a loop, a branch and a CALL_ONCE-initialised
 * variable must compute (by hand), max_while_iterations, the plan of an IF (the parent plus one
 * branch) and a variable whose shape cannot be known. With ../shared/models_state present, the
 * four LiteRT control-flow streams of ../shared/golden_state and the two microWakeWord ones
 * (resource-variable ring buffers) replay step by step in process (the stream harness) and
 * through `arenactl run --steps`; tflm_keyword_scrambled_8bit is refused cleanly.
 */
#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "loader/ar_model.h"
#include "tests/ar_test_model.h"
#include "tests/ar_test_stream.h"
#include "tests/ar_test_util.h"

enum { OP_ADD = 0, OP_MUL = 18, OP_LESS = 58, OP_IF = 118, OP_WHILE = 119, OP_CALL_ONCE = 129,
       OP_VAR_HANDLE = 142, OP_READ_VARIABLE = 143, OP_ASSIGN_VARIABLE = 144 };
enum { OPT_IF = 92, OPT_WHILE = 93, OPT_CALL_ONCE = 103, OPT_VAR_HANDLE = 111 };

static const int32_t five = 5, one_i = 1, zero_i = 0;
static const float two_f = 2.0f;

/* A counting loop: main (i INT32 [], x FLOAT32 []) -> WHILE(cond, body) -> (i', x'); cond: i < 5;
 * body: i + step, x * 2. `body_outputs` 1 drops body's second output (a count mismatch). With
 * body_has_while, the body's first operator is another WHILE(cond, body) (recursion). */
typedef struct loop_spec {
  int32_t cond, body;       /* WHILE's subgraph indices */
  int body_outputs;
  bool body_has_while;
  const int32_t *step;      /* &one_i, or &zero_i: a loop that never ends */
  int32_t body_add;         /* the body's first operator: OP_ADD, or another builtin code */
} loop_spec_t;

static uint8_t *loop_model(const loop_spec_t *ls, size_t *bytes) {
  static const ar_tm_tensor_t mt[] = {{"i", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"x", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"i_out", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"x_out", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL}};
  ar_tm_op_t mops[1] = {{.builtin = OP_WHILE, .n_in = 2, .n_out = 2, .in = {0, 1}, .out = {2, 3},
                         .options_type = OPT_WHILE, .n_fields = 2,
                         .fields = {{0, 4, ls->cond}, {1, 4, ls->body}}}};
  static const int32_t io_in[] = {0, 1}, io_out[] = {2, 3};
  static const ar_tm_tensor_t ct[] = {{"i", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"x", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"limit", AR_DTYPE_INT32, 0, {0}, false, {0}, &five},
                                      {"go_on", AR_DTYPE_BOOL, 0, {0}, false, {0}, NULL}};
  static const ar_tm_op_t cops[] = {{.builtin = OP_LESS, .n_in = 2, .n_out = 1, .in = {0, 2}, .out = {3}}};
  static const int32_t c_out[] = {3};
  ar_tm_tensor_t bt[] = {{"i", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                         {"x", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                         {"step", AR_DTYPE_INT32, 0, {0}, false, {0}, ls->step},
                         {"two", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, &two_f},
                         {"i2", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                         {"x2", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                         {"i3", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                         {"x3", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL}};
  ar_tm_op_t bops[3] = {{.builtin = ls->body_add ? ls->body_add : OP_ADD, .n_in = 2, .n_out = 1, .in = {0, 2}, .out = {4}},
                        {.builtin = OP_MUL, .n_in = 2, .n_out = 1, .in = {1, 3}, .out = {5}}};
  int n_bops = 2;
  int32_t b_out[2] = {4, 5};
  if (ls->body_has_while) {
    bops[2] = (ar_tm_op_t){.builtin = OP_WHILE, .n_in = 2, .n_out = 2, .in = {4, 5}, .out = {6, 7},
                           .options_type = OPT_WHILE, .n_fields = 2, .fields = {{0, 4, 1}, {1, 4, 2}}};
    n_bops = 3;
    b_out[0] = 6, b_out[1] = 7;
  }
  ar_tm_args_t sub[2] = {
      {.tensors = ct, .n_tensors = 4, .ops = cops, .n_ops = 1, .inputs = io_in, .n_inputs = 2, .outputs = c_out,
       .n_outputs = 1},
      {.tensors = bt, .n_tensors = 8, .ops = bops, .n_ops = n_bops, .inputs = io_in, .n_inputs = 2,
       .outputs = b_out, .n_outputs = ls->body_outputs}};
  ar_tm_args_t a = {.tensors = mt, .n_tensors = 4, .ops = mops, .n_ops = 1, .inputs = io_in, .n_inputs = 2,
                    .outputs = io_out, .n_outputs = 2, .subgraphs = sub, .n_subgraphs = 2};
  return ar_tm_build_args(&a, bytes);
}

static int load_loop(const loop_spec_t *ls, ar_model_t **m, char *msg, size_t n) {
  size_t bytes = 0;
  uint8_t *b = loop_model(ls, &bytes);
  int rc = ar_model_load_buffer(b, bytes, m, msg, n);
  if (rc != 0) free(b);
  return rc;   /* on success the caller frees the model, then ar_model_file(m) */
}

static void free_loaded(ar_model_t *m) {
  const void *file = m ? m->file : NULL;
  ar_model_free(m);
  free((void *)file);
}

START_TEST(malformed_control_flow_is_refused_naming_the_operator) {
  char msg[1024];
  ar_model_t *m = NULL;
  loop_spec_t ls = {1, 7, 2, false, &one_i, OP_ADD};
  ck_assert_int_eq(load_loop(&ls, &m, msg, sizeof msg), AR_EMODEL);
  ck_assert_str_eq(msg, "subgraph 0, operator 0 (WHILE): body subgraph index 7, but the model has 3 subgraphs");
  ls = (loop_spec_t){-1, 2, 2, false, &one_i, OP_ADD};
  ck_assert_int_eq(load_loop(&ls, &m, msg, sizeof msg), AR_EMODEL);
  ck_assert_str_eq(msg, "subgraph 0, operator 0 (WHILE): cond subgraph index -1, but the model has 3 subgraphs");
  ls = (loop_spec_t){0, 2, 2, false, &one_i, OP_ADD};
  ck_assert_int_eq(load_loop(&ls, &m, msg, sizeof msg), AR_EMODEL);
  ck_assert_str_eq(msg, "subgraph 0, operator 0 (WHILE): cond subgraph is 0, the main graph (recursion): refused");
  ls = (loop_spec_t){1, 2, 2, true, &one_i, OP_ADD};
  ck_assert_int_eq(load_loop(&ls, &m, msg, sizeof msg), AR_EMODEL);
  ck_assert_str_eq(msg, "subgraph 2, operator 2 (WHILE): body subgraph 2 is recursive (subgraphs 2 -> 2): refused");
  ls = (loop_spec_t){1, 2, 1, false, &one_i, OP_ADD};
  ck_assert_int_eq(load_loop(&ls, &m, msg, sizeof msg), AR_EMODEL);
  ck_assert_msg(strstr(msg, "subgraph 0, operator 0 (WHILE): 2 inputs, 2 outputs; cond subgraph 1 has 2 inputs, 1 "
                            "outputs (1 expected); body subgraph 2 has 2 inputs, 1 outputs") == msg, "%s", msg);
  /* An operator arenad has no kernel for, in the body: named with its subgraph. */
  ls = (loop_spec_t){1, 2, 2, false, &one_i, 200};
  ck_assert_int_eq(load_loop(&ls, &m, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(msg, "1 operator unsupported: ") == msg && strstr(msg, "(op 0 of subgraph 2)") != NULL, "%s",
                msg);
  /* cond and body swapped: cond would have two outputs. */
  ls = (loop_spec_t){2, 1, 2, false, &one_i, OP_ADD};
  ck_assert_int_eq(load_loop(&ls, &m, msg, sizeof msg), AR_EMODEL);
  ck_assert_msg(strstr(msg, "(WHILE): 2 inputs, 2 outputs; cond subgraph 2 has 2 inputs, 2 outputs") != NULL, "%s",
                msg);
}
END_TEST

static void set_scalars(ar_interp_t *in, int32_t i, float x) {
  memcpy(ar_interp_input(in, 0)->data, &i, 4);
  memcpy(ar_interp_input(in, 1)->data, &x, 4);
}

START_TEST(while_loop_counts_and_is_bounded) {
  char msg[1024];
  ar_model_t *m = NULL;
  loop_spec_t ls = {1, 2, 2, false, &one_i, OP_ADD};
  ck_assert_msg(load_loop(&ls, &m, msg, sizeof msg) == 0, "%s", msg);
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
  const int32_t starts[] = {0, 3, 5, 9};
  for (int s = 0; s < 4; s++) {
    set_scalars(in, starts[s], 1.5f);
    ck_assert_int_eq(ar_interp_invoke(in), 0);
    const int32_t n = starts[s] < 5 ? 5 - starts[s] : 0;
    int32_t io;
    float xo;
    memcpy(&io, ar_interp_output(in, 0)->data, 4);
    memcpy(&xo, ar_interp_output(in, 1)->data, 4);
    ck_assert_int_eq(io, starts[s] < 5 ? 5 : starts[s]);
    ck_assert_float_eq(xo, 1.5f * (float)(1 << n));
    ar_cf_info_t info;
    ck_assert_int_eq(ar_interp_control_flow(in, 0, &info), 0);
    ck_assert_int_eq(info.last_iterations, n);
  }
  ar_cf_info_t info;
  ck_assert_int_eq(ar_interp_control_flow(in, 0, &info), 0);
  ck_assert_int_eq(info.op, AR_OP_WHILE);
  ck_assert_int_eq(info.subgraph[0], 1);
  ck_assert_int_eq(info.subgraph[1], 2);
  /* No copy per iteration: i + step and x * 2 are written into the other loop buffer and swapped
   * (before: 8 bytes, the body's outputs copied back into the WHILE's). The values above after 5
   * and 2 iterations (ending in A and in B) and none. */
  ck_assert_uint_eq(info.copy_bytes_per_iteration, 0);
  ck_assert_uint_eq(info.loop_bytes, 2 * 64);
  ck_assert_uint_eq(info.arena_bytes, info.child_arena_bytes[0] > info.child_arena_bytes[1]
                                          ? info.child_arena_bytes[0] : info.child_arena_bytes[1]);
  ck_assert_int_eq(ar_interp_control_flow(in, 1, &info), AR_EINVAL);
  ar_interp_free(in);
  free_loaded(m);

  /* A loop whose body never moves the counter: stopped at max_while_iterations, named. */
  ls.step = &zero_i;
  ck_assert_msg(load_loop(&ls, &m, msg, sizeof msg) == 0, "%s", msg);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ck_assert_int_eq(opt.max_while_iterations, 1 << 20);
  opt.max_while_iterations = 100;
  ck_assert_msg(ar_interp_new(m, &opt, &in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
  set_scalars(in, 2, 1.0f);
  ck_assert_int_eq(ar_interp_invoke(in), AR_ESTATE);
  ck_assert_str_eq(ar_interp_last_error(in), "subgraph 0, operator 0 (WHILE): the condition (subgraph 1) still "
                                             "holds after 100 iterations (max_while_iterations)");
  set_scalars(in, 7, 1.0f);   /* a start past the limit: no iteration, served */
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  ck_assert_str_eq(ar_interp_last_error(in), "");
  ar_interp_free(in);

  /* The same endless loop bounded by time (max_while_us 30 ms, iterations unbounded in practice):
   * ETIMEDOUT naming max_while_ms; with the cancel flag set it stops before its first iteration. */
  ar_interp_options_default(&opt);
  opt.max_while_iterations = INT64_MAX;
  opt.max_while_us = 30000;
  int cancel = 0;
  opt.cancel = &cancel;
  ck_assert_msg(ar_interp_new(m, &opt, &in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
  set_scalars(in, 2, 1.0f);
  ck_assert_int_eq(ar_interp_invoke(in), AR_ETIMEDOUT);
  ck_assert_msg(strstr(ar_interp_last_error(in), "subgraph 0, operator 0 (WHILE): the condition (subgraph 1) still "
                                                 "holds after ") &&
                strstr(ar_interp_last_error(in), " ms (max_while_ms)"), "%s", ar_interp_last_error(in));
  ar_cf_info_t tinfo;
  ck_assert_int_eq(ar_interp_control_flow(in, 0, &tinfo), 0);
  ck_assert_int_gt(tinfo.last_iterations, 0);
  cancel = 1;
  ck_assert_int_eq(ar_interp_invoke(in), AR_ETIMEDOUT);
  ck_assert_str_eq(ar_interp_last_error(in), "subgraph 0, operator 0 (WHILE): stopped after 0 iterations: the invoke "
                                             "was cancelled");
  cancel = 0;
  set_scalars(in, 7, 1.0f);   /* a loop that ends is served as before */
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  ar_interp_free(in);
  free_loaded(m);
}
END_TEST

/* IF(c, x): then x + x + x... (two ADDs), else x * x; n floats each. */
static uint8_t *if_model(int32_t n, int32_t then_sg, bool resizable, size_t *bytes) {
  ar_tm_tensor_t mt[] = {{"c", AR_DTYPE_BOOL, 0, {0}, false, {0}, NULL},
                         {"x", AR_DTYPE_FLOAT32, 1, {n}, resizable, {-1}, NULL},
                         {"y", AR_DTYPE_FLOAT32, 1, {n}, false, {0}, NULL}};
  ar_tm_op_t mops[] = {{.builtin = OP_IF, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}, .options_type = OPT_IF,
                        .n_fields = 2, .fields = {{0, 4, then_sg}, {1, 4, 2}}}};
  static const int32_t m_in[] = {0, 1}, m_out[] = {2}, b_in[] = {0}, t_out[] = {2}, e_out[] = {1};
  ar_tm_tensor_t tt[] = {{"x", AR_DTYPE_FLOAT32, 1, {n}, false, {0}, NULL},
                         {"x2", AR_DTYPE_FLOAT32, 1, {n}, false, {0}, NULL},
                         {"x4", AR_DTYPE_FLOAT32, 1, {n}, false, {0}, NULL}};
  static const ar_tm_op_t tops[] = {{.builtin = OP_ADD, .n_in = 2, .n_out = 1, .in = {0, 0}, .out = {1}},
                                    {.builtin = OP_ADD, .n_in = 2, .n_out = 1, .in = {1, 1}, .out = {2}}};
  ar_tm_tensor_t et[] = {{"x", AR_DTYPE_FLOAT32, 1, {n}, false, {0}, NULL},
                         {"xx", AR_DTYPE_FLOAT32, 1, {n}, false, {0}, NULL}};
  static const ar_tm_op_t eops[] = {{.builtin = OP_MUL, .n_in = 2, .n_out = 1, .in = {0, 0}, .out = {1}}};
  ar_tm_args_t sub[2] = {{.tensors = tt, .n_tensors = 3, .ops = tops, .n_ops = 2, .inputs = b_in, .n_inputs = 1,
                          .outputs = t_out, .n_outputs = 1},
                         {.tensors = et, .n_tensors = 2, .ops = eops, .n_ops = 1, .inputs = b_in, .n_inputs = 1,
                          .outputs = e_out, .n_outputs = 1}};
  ar_tm_args_t a = {.tensors = mt, .n_tensors = 3, .ops = mops, .n_ops = 1, .inputs = m_in, .n_inputs = 2,
                    .outputs = m_out, .n_outputs = 1, .subgraphs = sub, .n_subgraphs = 2};
  return ar_tm_build_args(&a, bytes);
}

START_TEST(if_takes_one_branch_and_plans_parent_plus_one_branch) {
  /* Two branches of 2 MB tensors: the plan holds the parent's x and y plus ONE branch's arena. */
  const int32_t n = 512 * 1024;
  size_t bytes = 0;
  uint8_t *b = if_model(n, 1, false, &bytes);
  char msg[1024];
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(b, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  ar_cf_info_t info;
  ck_assert_int_eq(ar_interp_control_flow(in, 0, &info), 0);
  ck_assert_int_eq(info.op, AR_OP_IF);
  const uint64_t mb2 = 4ull * (uint64_t)n;
  ck_assert_uint_ge(info.child_arena_bytes[0], mb2);
  ck_assert_uint_ge(info.child_arena_bytes[1], mb2);
  ck_assert_uint_eq(info.arena_bytes, info.child_arena_bytes[0] > info.child_arena_bytes[1]
                                          ? info.child_arena_bytes[0] : info.child_arena_bytes[1]);
  const uint64_t arena = ar_interp_arena_bytes(in);
  printf("IF with two 2 MB branches: arena %llu bytes = parent x, y %llu + one branch %llu (then %llu, else %llu)\n",
         (unsigned long long)arena, (unsigned long long)(2 * mb2), (unsigned long long)info.arena_bytes,
         (unsigned long long)info.child_arena_bytes[0], (unsigned long long)info.child_arena_bytes[1]);
  ck_assert_uint_le(arena, 2 * mb2 + info.arena_bytes + 3 * AR_ARENA_ALIGNMENT);
  ck_assert_uint_lt(arena, 2 * mb2 + info.child_arena_bytes[0] + info.child_arena_bytes[1]);
  ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
  float *x = ar_interp_input(in, 1)->data;
  for (int32_t i = 0; i < n; i++) x[i] = (float)(i % 7) - 3.0f;
  for (int c = 0; c < 2; c++) {
    *(uint8_t *)ar_interp_input(in, 0)->data = (uint8_t)c;
    for (int32_t i = 0; i < n; i++) x[i] = (float)(i % 7) - 3.0f;
    ck_assert_int_eq(ar_interp_invoke(in), 0);
    const float *y = ar_interp_output(in, 0)->data;
    for (int32_t i = 0; i < n; i += 4099) {
      const float v = (float)(i % 7) - 3.0f;
      ck_assert_float_eq(y[i], c ? 4.0f * v : v * v);
    }
  }
  ar_interp_free(in);
  ar_model_free(m);
  free(b);
  /* then subgraph 5 of 3. */
  b = if_model(4, 5, false, &bytes);
  ck_assert_int_eq(ar_model_load_buffer(b, bytes, &m, msg, sizeof msg), AR_EMODEL);
  ck_assert_str_eq(msg, "subgraph 0, operator 0 (IF): then subgraph index 5, but the model has 3 subgraphs");
  free(b);
  /* A resize that would change a value passed into a branch is refused at prepare, naming it (the
   * branches keep their plans). */
  b = if_model(4, 1, true, &bytes);
  ck_assert_msg(ar_model_load_buffer(b, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  const int32_t eight = 8;
  ck_assert_int_eq(ar_interp_resize_input(in, 1, 1, &eight, msg, sizeof msg), 0);
  ck_assert_int_eq(ar_interp_prepare(in, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_str_eq(msg, "subgraph 0, operator 0 (IF): input 1 is FLOAT32 [8], but then subgraph 1's input 0 is "
                        "FLOAT32 [4] (values whose dtype or shape changes across subgraphs are not supported)");
  ck_assert_int_eq(ar_interp_invoke(in), AR_ESTATE);
  ar_interp_free(in);
  ar_model_free(m);
  free(b);
}
END_TEST

/* A WHILE of three loop values: main (c INT32, a, b FLOAT32) -> WHILE(cond 1: c < 5, body 2) ->
 * (c', a', b'). The body computes c2 = c + 1 and s = a + b; it returns c2 and the body tensors
 * `b_out` names (1 a, 2 b, 5 s, 6 the constant 0.5) as its outputs 1 and 2 - e.g. {2, 1}: a and b
 * swapped, each the body's input of the other value. */
static const float half_f = 0.5f;
static uint8_t *loop3_model(const int32_t b_out12[2], size_t *bytes) {
  static const ar_tm_tensor_t mt[] = {{"c", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"a", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"b", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"c_out", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"a_out", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"b_out", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL}};
  static const ar_tm_op_t mops[] = {{.builtin = OP_WHILE, .n_in = 3, .n_out = 3, .in = {0, 1, 2}, .out = {3, 4, 5},
                                     .options_type = OPT_WHILE, .n_fields = 2, .fields = {{0, 4, 1}, {1, 4, 2}}}};
  static const int32_t in3[] = {0, 1, 2}, out3[] = {3, 4, 5};
  static const ar_tm_tensor_t ct[] = {{"c", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"a", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"b", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"limit", AR_DTYPE_INT32, 0, {0}, false, {0}, &five},
                                      {"go_on", AR_DTYPE_BOOL, 0, {0}, false, {0}, NULL}};
  static const ar_tm_op_t cops[] = {{.builtin = OP_LESS, .n_in = 2, .n_out = 1, .in = {0, 3}, .out = {4}}};
  static const int32_t c_out[] = {4};
  static const ar_tm_tensor_t bt[] = {{"c", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"a", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"b", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"one", AR_DTYPE_INT32, 0, {0}, false, {0}, &one_i},
                                      {"c2", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"s", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"half", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, &half_f}};
  static const ar_tm_op_t bops[] = {{.builtin = OP_ADD, .n_in = 2, .n_out = 1, .in = {0, 3}, .out = {4}},
                                    {.builtin = OP_ADD, .n_in = 2, .n_out = 1, .in = {1, 2}, .out = {5}}};
  const int32_t b_out[] = {4, b_out12[0], b_out12[1]};
  const ar_tm_args_t sub[2] = {{.tensors = ct, .n_tensors = 5, .ops = cops, .n_ops = 1, .inputs = in3, .n_inputs = 3,
                                .outputs = c_out, .n_outputs = 1},
                               {.tensors = bt, .n_tensors = 7, .ops = bops, .n_ops = 2, .inputs = in3, .n_inputs = 3,
                                .outputs = b_out, .n_outputs = 3}};
  const ar_tm_args_t a = {.tensors = mt, .n_tensors = 6, .ops = mops, .n_ops = 1, .inputs = in3, .n_inputs = 3,
                          .outputs = out3, .n_outputs = 3, .subgraphs = sub, .n_subgraphs = 2};
  return ar_tm_build_args(&a, bytes);
}

/* Each loop value moves by a pointer swap unless its body output cannot be pointed at the other
 * buffer: then it alone is copied, and counted. Per case: body outputs 1 and 2, the bytes copied
 * per iteration, the second buffers (one per value not passed through, 64 bytes each). The
 * values after 5, 4, 3, 0 iterations (odd, even, odd, none) are those of the same loop run by
 * hand. */
START_TEST(while_values_swap_and_only_unswappable_ones_are_copied) {
  static const struct {
    int32_t out[2];
    uint64_t copy_bytes, loop_bytes;
    const char *what;
  } cases[] = {
      {{1, 5}, 0, 2 * 64, "a passed through, b = a + b swapped"},
      {{5, 1}, 4, 3 * 64, "a = a + b swapped, b = the body's input a: copied"},
      {{2, 1}, 4 + 4, 3 * 64, "a and b each the body's input of the other value: copied"},
      {{5, 5}, 4, 3 * 64, "one tensor for two values: the second copied"},
      {{5, 6}, 4, 3 * 64, "a constant output: copied"},
  };
  for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
    size_t bytes = 0;
    uint8_t *b = loop3_model(cases[k].out, &bytes);
    char msg[1024];
    ar_model_t *m = NULL;
    ck_assert_msg(ar_model_load_buffer(b, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
    ar_interp_t *in = NULL;
    ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
    ar_cf_info_t info;
    ck_assert_int_eq(ar_interp_control_flow(in, 0, &info), 0);
    ck_assert_msg(info.copy_bytes_per_iteration == cases[k].copy_bytes, "%s: %llu bytes copied per iteration",
                  cases[k].what, (unsigned long long)info.copy_bytes_per_iteration);
    ck_assert_msg(info.loop_bytes == cases[k].loop_bytes, "%s: %llu loop bytes", cases[k].what,
                  (unsigned long long)info.loop_bytes);
    ck_assert_uint_eq(ar_interp_node(in, 0)->scratch_bytes, info.arena_bytes + info.loop_bytes);
    ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
    static const int32_t starts[] = {0, 1, 2, 5};
    for (int s = 0; s < 4; s++) {
      float va[2] = {1.5f, -7.0f};   /* a, b */
      int32_t c = starts[s];
      *(int32_t *)ar_interp_input(in, 0)->data = c;
      *(float *)ar_interp_input(in, 1)->data = va[0];
      *(float *)ar_interp_input(in, 2)->data = va[1];
      ck_assert_int_eq(ar_interp_invoke(in), 0);
      for (; c < 5; c++) {   /* the loop by hand */
        const float a = va[0], bv = va[1], sum = a + bv, pick[7] = {0, a, bv, 0, 0, sum, 0.5f};
        va[0] = pick[cases[k].out[0]];
        va[1] = pick[cases[k].out[1]];
      }
      ck_assert_int_eq(ar_interp_control_flow(in, 0, &info), 0);
      ck_assert_int_eq(info.last_iterations, 5 - starts[s]);
      ck_assert_int_eq(*(const int32_t *)ar_interp_output(in, 0)->data, c);
      ck_assert_msg(*(const float *)ar_interp_output(in, 1)->data == va[0] &&
                        *(const float *)ar_interp_output(in, 2)->data == va[1],
                    "%s, %d iterations: (%g, %g), by hand (%g, %g)", cases[k].what, (int)info.last_iterations,
                    (double)*(const float *)ar_interp_output(in, 1)->data,
                    (double)*(const float *)ar_interp_output(in, 2)->data, (double)va[0], (double)va[1]);
    }
    ar_interp_free(in);
    ar_model_free(m);
    free(b);
  }
}
END_TEST

/* An IF inside a WHILE's body: main (c INT32, x FLOAT32) -> WHILE(cond 1: c < 5, body 2:
 * c + 1, IF(c, x) with then 3: x + x, else 4: x * x). The IF's branches must read x where the
 * loop keeps it this iteration (the WHILE's input, then one loop buffer or the other), so their
 * input views are pointed at every run, not once at place. */
static uint8_t *if_in_while_model(size_t *bytes) {
  static const ar_tm_tensor_t mt[] = {{"c", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"x", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"c_out", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"x_out", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL}};
  static const ar_tm_op_t mops[] = {{.builtin = OP_WHILE, .n_in = 2, .n_out = 2, .in = {0, 1}, .out = {2, 3},
                                     .options_type = OPT_WHILE, .n_fields = 2, .fields = {{0, 4, 1}, {1, 4, 2}}}};
  static const int32_t in2[] = {0, 1}, out2[] = {2, 3}, in1[] = {0}, out1[] = {1};
  static const ar_tm_tensor_t ct[] = {{"c", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"x", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"limit", AR_DTYPE_INT32, 0, {0}, false, {0}, &five},
                                      {"go_on", AR_DTYPE_BOOL, 0, {0}, false, {0}, NULL}};
  static const ar_tm_op_t cops[] = {{.builtin = OP_LESS, .n_in = 2, .n_out = 1, .in = {0, 2}, .out = {3}}};
  static const int32_t c_out[] = {3};
  static const ar_tm_tensor_t bt[] = {{"c", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"x", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"one", AR_DTYPE_INT32, 0, {0}, false, {0}, &one_i},
                                      {"c2", AR_DTYPE_INT32, 0, {0}, false, {0}, NULL},
                                      {"x2", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL}};
  static const ar_tm_op_t bops[] = {{.builtin = OP_ADD, .n_in = 2, .n_out = 1, .in = {0, 2}, .out = {3}},
                                    {.builtin = OP_IF, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {4},
                                     .options_type = OPT_IF, .n_fields = 2, .fields = {{0, 4, 3}, {1, 4, 4}}}};
  static const int32_t b_out[] = {3, 4};
  static const ar_tm_tensor_t xt[] = {{"x", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL},
                                      {"y", AR_DTYPE_FLOAT32, 0, {0}, false, {0}, NULL}};
  static const ar_tm_op_t tops[] = {{.builtin = OP_ADD, .n_in = 2, .n_out = 1, .in = {0, 0}, .out = {1}}};
  static const ar_tm_op_t eops[] = {{.builtin = OP_MUL, .n_in = 2, .n_out = 1, .in = {0, 0}, .out = {1}}};
  const ar_tm_args_t sub[4] = {{.tensors = ct, .n_tensors = 4, .ops = cops, .n_ops = 1, .inputs = in2, .n_inputs = 2,
                                .outputs = c_out, .n_outputs = 1},
                               {.tensors = bt, .n_tensors = 5, .ops = bops, .n_ops = 2, .inputs = in2, .n_inputs = 2,
                                .outputs = b_out, .n_outputs = 2},
                               {.tensors = xt, .n_tensors = 2, .ops = tops, .n_ops = 1, .inputs = in1, .n_inputs = 1,
                                .outputs = out1, .n_outputs = 1},
                               {.tensors = xt, .n_tensors = 2, .ops = eops, .n_ops = 1, .inputs = in1, .n_inputs = 1,
                                .outputs = out1, .n_outputs = 1}};
  const ar_tm_args_t a = {.tensors = mt, .n_tensors = 4, .ops = mops, .n_ops = 1, .inputs = in2, .n_inputs = 2,
                          .outputs = out2, .n_outputs = 2, .subgraphs = sub, .n_subgraphs = 4};
  return ar_tm_build_args(&a, bytes);
}

START_TEST(if_in_a_while_body_reads_the_current_loop_value) {
  size_t bytes = 0;
  uint8_t *b = if_in_while_model(&bytes);
  char msg[1024];
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(b, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  ar_cf_info_t info;
  ck_assert_int_eq(ar_interp_control_flow(in, 0, &info), 0);
  ck_assert_uint_eq(info.copy_bytes_per_iteration, 0);   /* the IF's output is written into the loop buffer */
  for (int round = 0; round < 2; round++) {   /* placed again: the same values */
    ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
    for (int32_t c0 = 0; c0 < 3; c0++) {   /* 5, 4, 3 iterations */
      float x = 3.0f + (float)c0;
      *(int32_t *)ar_interp_input(in, 0)->data = c0;
      *(float *)ar_interp_input(in, 1)->data = x;
      ck_assert_int_eq(ar_interp_invoke(in), 0);
      for (int32_t c = c0; c < 5; c++) x = c ? x + x : x * x;   /* the loop by hand */
      ck_assert_int_eq(*(const int32_t *)ar_interp_output(in, 0)->data, 5);
      ck_assert_msg(*(const float *)ar_interp_output(in, 1)->data == x, "from c = %d: %g, by hand %g", (int)c0,
                    (double)*(const float *)ar_interp_output(in, 1)->data, (double)x);
    }
  }
  ar_interp_free(in);
  ar_model_free(m);
  free(b);
}
END_TEST

static const float init_acc[2] = {10.0f, 20.0f};

/* acc (a resource variable, shared_name "acc") set to init_acc by CALL_ONCE's subgraph 1 (unless
 * `no_init`: then nothing assigns it), main: s = acc + x; acc = s; output s. `call_once_sg` is the
 * CALL_ONCE's init subgraph. */
static uint8_t *acc_model_ex(bool no_init, int32_t call_once_sg, bool assign_first, size_t *bytes);
static uint8_t *acc_model(bool no_init, int32_t call_once_sg, size_t *bytes) {
  return acc_model_ex(no_init, call_once_sg, false, bytes);
}
/* With `assign_first`, main assigns acc = x right after the read and before the ADD reads the
 * read's output: s = (acc before the assignment) + x; acc = x. */
static uint8_t *acc_model_ex(bool no_init, int32_t call_once_sg, bool assign_first, size_t *bytes) {
  static const ar_tm_tensor_t mt[] = {{"x", AR_DTYPE_FLOAT32, 1, {2}, false, {0}, NULL},
                                      {"acc_handle", AR_DTYPE_RESOURCE, 0, {0}, false, {0}, NULL},
                                      {"acc_value", AR_DTYPE_FLOAT32, 1, {2}, false, {0}, NULL},
                                      {"s", AR_DTYPE_FLOAT32, 1, {2}, false, {0}, NULL}};
  ar_tm_op_t mops[5] = {
      {.builtin = OP_CALL_ONCE, .n_in = 0, .n_out = 0, .options_type = OPT_CALL_ONCE, .n_fields = 1,
       .fields = {{0, 4, call_once_sg}}},
      {.builtin = OP_VAR_HANDLE, .n_in = 0, .n_out = 1, .out = {1}, .options_type = OPT_VAR_HANDLE, .n_fields = 2,
       .fields = {{0, 0, (int64_t)(intptr_t)""}, {1, 0, (int64_t)(intptr_t)"acc"}}},
      {.builtin = OP_READ_VARIABLE, .n_in = 1, .n_out = 1, .in = {1}, .out = {2}},
      {.builtin = OP_ADD, .n_in = 2, .n_out = 1, .in = {2, 0}, .out = {3}},
      {.builtin = OP_ASSIGN_VARIABLE, .n_in = 2, .n_out = 0, .in = {1, 3}}};
  if (assign_first) {
    const ar_tm_op_t add = mops[3];
    mops[3] = (ar_tm_op_t){.builtin = OP_ASSIGN_VARIABLE, .n_in = 2, .n_out = 0, .in = {1, 0}};
    mops[4] = add;
  }
  static const int32_t m_in[] = {0}, m_out[] = {3};
  static const ar_tm_tensor_t it[] = {{"acc_handle", AR_DTYPE_RESOURCE, 0, {0}, false, {0}, NULL},
                                      {"acc_init", AR_DTYPE_FLOAT32, 1, {2}, false, {0}, init_acc}};
  ar_tm_op_t iops[2] = {
      {.builtin = OP_VAR_HANDLE, .n_in = 0, .n_out = 1, .out = {0}, .options_type = OPT_VAR_HANDLE, .n_fields = 1,
       .fields = {{1, 0, (int64_t)(intptr_t)"acc"}}},
      {.builtin = OP_ASSIGN_VARIABLE, .n_in = 2, .n_out = 0, .in = {0, 1}}};
  ar_tm_args_t sub[1] = {{.tensors = it, .n_tensors = 2, .ops = iops, .n_ops = 2}};
  ar_tm_args_t a = {.tensors = mt, .n_tensors = 4, .ops = no_init ? mops + 1 : mops, .n_ops = no_init ? 3 : 5,
                    .inputs = m_in, .n_inputs = 1, .outputs = m_out, .n_outputs = 1, .subgraphs = sub,
                    .n_subgraphs = no_init ? 0 : 1};
  if (no_init) {   /* READ only: nothing gives the variable a shape */
    static ar_tm_op_t ro[3];
    memcpy(ro, mops + 1, sizeof ro);
    a.ops = ro;
  }
  return ar_tm_build_args(&a, bytes);
}

/* READ_VARIABLE reads in place when nothing assigns the variable before its output's last reader
 * (acc_model: READ, ADD reads it, then ASSIGN): no buffer, no copy, same values. With the
 * assignment between the read and the ADD it copies (it must: s = the old acc + x), and the
 * values show which acc the ADD saw. */
START_TEST(read_variable_aliases_unless_an_assignment_comes_first) {
  for (int assign_first = 0; assign_first < 2; assign_first++) {
    size_t bytes = 0;
    uint8_t *b = acc_model_ex(false, 1, assign_first, &bytes);
    char msg[1024];
    ar_model_t *m = NULL;
    ck_assert_msg(ar_model_load_buffer(b, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
    ar_interp_t *in = NULL;
    ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
    ck_assert(ar_interp_reads_in_place(in, 2) == !assign_first);   /* tensor 2: acc_value */
    ck_assert_int_eq(ar_interp_tensor_plan(in)[2].home, assign_first ? AR_HOME_ARENA : AR_HOME_STATE);
    ck_assert_int_eq(ar_interp_tensor_plan(in)[2].buffer >= 0, assign_first);
    ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
    for (int step = 0; step < 3; step++) {
      float *x = ar_interp_input(in, 0)->data;
      x[0] = 1.0f, x[1] = -2.0f;
      ck_assert_int_eq(ar_interp_invoke(in), 0);
      const float *s = ar_interp_output(in, 0)->data;
      if (assign_first) {   /* acc: 10,20 then x: s = acc + x */
        ck_assert_float_eq(s[0], step == 0 ? 11.0f : 2.0f);
        ck_assert_float_eq(s[1], step == 0 ? 18.0f : -4.0f);
      } else {
        ck_assert_float_eq(s[0], 10.0f + 1.0f * (float)(step + 1));
        ck_assert_float_eq(s[1], 20.0f - 2.0f * (float)(step + 1));
      }
    }
    ar_interp_free(in);
    ar_model_free(m);
    free(b);
  }
}
END_TEST

START_TEST(call_once_initialises_a_resource_variable_once_per_state) {
  size_t bytes = 0;
  uint8_t *b = acc_model(false, 1, &bytes);
  char msg[1024];
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(b, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(ar_interp_n_resource_vars(in), 1);
  const char *container = NULL, *name = NULL;
  uint64_t vb = 0, voff = 0;
  ck_assert_int_eq(ar_interp_resource_var(in, 0, &container, &name, &vb, &voff), 0);
  ck_assert_str_eq(container, "");
  ck_assert_str_eq(name, "acc");
  ck_assert_uint_eq(vb, 8);
  ck_assert_uint_le(voff + vb, ar_interp_persistent_bytes(in));
  /* round 1: placed again in new regions, the state carries on (the default slot moves with the
   * region); round 2: after ar_interp_reset_state, CALL_ONCE runs again. */
  for (int round = 0; round < 3; round++) {
    if (round < 2) ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
    else ar_interp_reset_state(in, NULL);
    float *x = ar_interp_input(in, 0)->data;
    const int base = round == 1 ? 3 : 0;
    for (int step = 0; step < 3; step++) {
      x[0] = 1.0f, x[1] = -2.0f;
      ck_assert_int_eq(ar_interp_invoke(in), 0);
      const float *s = ar_interp_output(in, 0)->data;
      ck_assert_float_eq(s[0], 10.0f + 1.0f * (float)(base + step + 1));
      ck_assert_float_eq(s[1], 20.0f - 2.0f * (float)(base + step + 1));
    }
  }
  ar_interp_free(in);
  ar_model_free(m);
  free(b);

  b = acc_model(true, 1, &bytes);
  ck_assert_msg(ar_model_load_buffer(b, bytes, &m, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(ar_interp_new(m, NULL, &in, msg, sizeof msg), AR_EUNSUPPORTED);
  ck_assert_str_eq(msg, "resource variable 'acc' (VAR_HANDLE, subgraph 0, operator 0): no ASSIGN_VARIABLE writes "
                        "it, so its shape cannot be known at load: refused");
  ck_assert_ptr_null(in);
  ar_model_free(m);
  free(b);

  b = acc_model(false, 0, &bytes);
  ck_assert_int_eq(ar_model_load_buffer(b, bytes, &m, msg, sizeof msg), AR_EMODEL);
  ck_assert_str_eq(msg, "subgraph 0, operator 0 (CALL_ONCE): init subgraph is 0, the main graph (recursion): refused");
  free(b);
}
END_TEST

/* ---- The LiteRT control-flow streams of ../shared/golden_state. ---- */

static const char *const cf_streams[] = {"litert_call_once_mul", "litert_resource_vars_calibrated",
                                         "litert_multi_subgraphs_while", "litert_nested_while",
                                         /* microWakeWord: int8, ring buffers in resource variables
                                          * initialised by CALL_ONCE, 24 steps */
                                         "mww_v1_alexa", "mww_v2_hey_jarvis"};
#define N_CF_STREAMS ((int)(sizeof cf_streams / sizeof cf_streams[0]))

START_TEST(golden_streams_replay_in_process) {
  if (!ar_ts_have_state_models("control-flow streams in process")) return;
  char model[512], dir[512], msg[1024];
  snprintf(model, sizeof model, "%s/%s.tflite", ar_ts_models_dir(), cf_streams[_i]);
  snprintf(dir, sizeof dir, "%s/%s", ar_ts_golden_dir(), cf_streams[_i]);
  ar_ts_report_t rep;
  int rc = ar_ts_run_model(model, dir, NULL, NULL, &rep, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", cf_streams[_i], msg);
  printf("%-32s %d steps in process: %d bad, worst %.4f of the tolerance\n", cf_streams[_i], rep.steps,
         rep.bad_steps, rep.worst_ratio);
  ck_assert_msg(rep.bad_steps == 0, "%s: %s", cf_streams[_i], rep.first_bad);
  ck_assert_int_eq(rep.steps, _i < 4 ? 6 : 24);
}
END_TEST

static char out_text[1 << 14];
#define sh(...) ar_test_sh(out_text, sizeof out_text, __VA_ARGS__)
#define builddir ar_test_builddir

/* Output j's dtype and bytes from meta.json's "outputs" (by reading the interpreter instead). */
START_TEST(golden_streams_replay_through_arenactl) {
  if (!ar_ts_have_state_models("control-flow streams through arenactl run --steps")) return;
  char model[512], dir[512], out[] = "/tmp/check_control_flow_XXXXXX", msg[1024];
  snprintf(model, sizeof model, "%s/%s.tflite", ar_ts_models_dir(), cf_streams[_i]);
  snprintf(dir, sizeof dir, "%s/%s", ar_ts_golden_dir(), cf_streams[_i]);
  ck_assert_ptr_nonnull(mkdtemp(out));
  int rc = sh("%s'%s/arenactl' run '%s' --steps '%s/steps' --output '%s' 2>&1", ar_test_exec_prefix(), builddir(),
              model, dir, out);
  ck_assert_msg(rc == 0, "%s", out_text);
  ar_ts_meta_t meta;
  ck_assert_int_eq(ar_ts_read_meta(dir, &meta, msg, sizeof msg), 0);
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load(model, &m, msg, sizeof msg) == 0, "%s", msg);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  double worst = 0;
  for (int32_t k = 0; k < meta.steps; k++) {
    for (uint32_t j = 0; j < sg->n_outputs; j++) {
      char a[1024], g[1024], why[256] = "";
      snprintf(a, sizeof a, "%s/%d/output_%u.bin", out, (int)k, j);
      snprintf(g, sizeof g, "%s/steps/%d/output_%u.bin", dir, (int)k, j);
      size_t na = 0, ng = 0;
      void *da = ar_test_read_file(a, &na), *dg = ar_test_read_file(g, &ng);
      ck_assert_msg(da && dg && na == ng, "step %d output %u: %s (%zu bytes) vs %s (%zu bytes)", (int)k, j, a, na, g,
                    ng);
      double ratio = 0;
      int64_t bad = ar_ts_compare(sg->tensors[sg->outputs[j]].dtype, da, dg, na, &ratio, why, sizeof why);
      ck_assert_msg(bad == 0, "%s step %d output %u: %s", cf_streams[_i], (int)k, j, why);
      if (ratio > worst) worst = ratio;
      free(da);
      free(dg);
      unlink(a);
    }
    char d[1024];
    snprintf(d, sizeof d, "%s/%d", out, (int)k);
    rmdir(d);
  }
  rmdir(out);
  printf("%-32s %d steps through arenactl run --steps: worst %.4f of the tolerance\n", cf_streams[_i], meta.steps,
         worst);
  ar_model_free(m);
}
END_TEST

START_TEST(arenactl_plan_shows_the_children) {
  if (!ar_ts_have_state_models("arenactl plan on the control-flow models")) return;
  char model[512];
  snprintf(model, sizeof model, "%s/litert_nested_while.tflite", ar_ts_models_dir());
  int rc = sh("%s'%s/arenactl' plan '%s' 2>&1", ar_test_exec_prefix(), builddir(), model);
  ck_assert_msg(rc == 0, "%s", out_text);
  ck_assert_msg(strstr(out_text, "control flow") != NULL, "%s", out_text);
  ck_assert_msg(strstr(out_text, "op 0 WHILE: cond subgraph 1") != NULL, "%s", out_text);
  ck_assert_msg(strstr(out_text, "  subgraph 2 op 0 WHILE: cond subgraph 3") != NULL, "%s", out_text);
  /* was 12, then 4: the outer body's output (the inner WHILE's) and the inner body's ADD are
   * written into the other loop buffer, swapped */
  ck_assert_msg(strstr(out_text, "loop values swapped with 64 bytes of it; copied per iteration 0 bytes") != NULL, "%s",
                out_text);
  /* x and the result (4 bytes each) + body 2's (4 + 4 + its inner loop's largest child: cond 3's
   * 4 + 4 + 1), unaligned. */
  ck_assert_msg(strstr(out_text, "hierarchical               25 bytes lower bound") != NULL, "%s", out_text);
  ck_assert_msg(strstr(out_text, "separate arenas") != NULL, "%s", out_text);
  rc = sh("%s'%s/arenactl' plan '%s' --json 2>&1", ar_test_exec_prefix(), builddir(), model);
  ck_assert_msg(rc == 0, "%s", out_text);
  ck_assert_msg(strstr(out_text, "\"hierarchical_lower_bound_bytes\": 25") != NULL, "%s", out_text);
  ck_assert_msg(strstr(out_text, "\"copy_bytes_per_iteration\": 0") != NULL, "%s", out_text);
  ck_assert_msg(strstr(out_text, "\"loop_value_bytes\": 64") != NULL, "%s", out_text);
  ck_assert_msg(strstr(out_text, "\"role\": \"body\"") != NULL, "%s", out_text);
}
END_TEST

START_TEST(keyword_scrambled_is_refused_cleanly) {
  if (!ar_ts_have_state_models("tflm_keyword_scrambled_8bit")) return;
  char model[512], msg[1024];
  snprintf(model, sizeof model, "%s/tflm_keyword_scrambled_8bit.tflite", ar_ts_models_dir());
  ar_model_t *m = NULL;
  int rc = ar_model_load(model, &m, msg, sizeof msg);
  ck_assert_msg(rc == 0, "the loader takes its SVDF v3: %s", msg);
  ar_interp_t *in = NULL;
  rc = ar_interp_new(m, NULL, &in, msg, sizeof msg);
  if (rc == 0) rc = ar_interp_place_owned(in, msg, sizeof msg);
  if (rc == 0) {
    /* It runs (its int16 QUANTIZE and SOFTMAX have kernels): a stream of invokes, no crash. */
    for (int k = 0; k < 8 && rc == 0; k++) {
      int16_t *x = ar_interp_input(in, 0)->data;
      for (int i = 0; i < 96; i++) x[i] = (int16_t)((i * 97 + k * 31) % 2001 - 1000);
      rc = ar_interp_invoke(in);
    }
    ck_assert_msg(rc == 0, "invoke: %s", ar_interp_last_error(in));
  }
  ar_interp_free(in);
  ar_model_free(m);
  printf("tflm_keyword_scrambled_8bit: %s (%s)\n", rc ? msg : "runs", ar_err_name(rc));
  /* Its seven SVDFs (int8 state, TFLite Micro's form) have a kernel: a refusal names another op. */
  ck_assert_msg(rc == 0 || (rc == AR_EUNSUPPORTED && strstr(msg, "SVDF") == NULL), "%d %s", rc, msg);
  /* arenactl: runs or is refused with the message, never a signal. */
  rc = sh("%s'%s/arenactl' run '%s' --input /dev/null 2>&1", ar_test_exec_prefix(), builddir(), model);
  ck_assert_msg(rc >= 0 && rc < 128, "rc %d: %s", rc, out_text);
}
END_TEST

int main(void) {
  Suite *s = suite_create("control_flow");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, malformed_control_flow_is_refused_naming_the_operator);
  tcase_add_test(tc, while_loop_counts_and_is_bounded);
  tcase_add_test(tc, if_takes_one_branch_and_plans_parent_plus_one_branch);
  tcase_add_test(tc, call_once_initialises_a_resource_variable_once_per_state);
  tcase_add_test(tc, read_variable_aliases_unless_an_assignment_comes_first);
  tcase_add_test(tc, while_values_swap_and_only_unswappable_ones_are_copied);
  tcase_add_test(tc, if_in_a_while_body_reads_the_current_loop_value);
  tcase_add_loop_test(tc, golden_streams_replay_in_process, 0, N_CF_STREAMS);
  tcase_add_loop_test(tc, golden_streams_replay_through_arenactl, 0, N_CF_STREAMS);
  tcase_add_test(tc, arenactl_plan_shows_the_children);
  tcase_add_test(tc, keyword_scrambled_is_refused_cleanly);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
