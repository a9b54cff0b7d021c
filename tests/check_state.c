/* check_state.c - state slots (issue 27): one block per stream, bound without a copy.
 *
 * A generated model with two variable tensors gives the layout by hand (ar_interp_state_bytes,
 * the pieces' offsets, reset to 0 / an int8 zero point, what a bind changes, what a re-place
 * keeps). With ../shared/models_state present, the microWakeWord alexa stream (resource-variable
 * ring buffers, CALL_ONCE init) and LiteRT's CALL_ONCE stream run on several slots of one
 * interpreter, interleaved A, B, A, A, B, ...: each slot reproduces its own golden stream; a
 * third slot started mid-way reproduces it from its start; a reset slot restarts from step 0's
 * output; a re-place mid-stream keeps every slot's state.
 */
#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "interp/ar_budget.h"
#include "interp/ar_interp.h"
#include "loader/ar_model.h"
#include "tests/ar_test_model.h"
#include "tests/ar_test_rnn_models.h"
#include "tests/ar_test_stream.h"

enum { OP_ADD = 0 };

/* x FLOAT32 [20] + acc FLOAT32 [20] (a variable) -> y; q INT8 [5] (a variable, zero point 3,
 * read by nothing). Slot by hand: acc at 0 (80 bytes, 4-aligned), q at 80 (5 bytes, 1-aligned):
 * 85 bytes, 128 rounded to 64. */
static uint8_t *two_vars_model(size_t *bytes) {
  static const ar_tm_tensor_t t[] = {{"x", AR_DTYPE_FLOAT32, 1, {20}, false, {0}, NULL},
                                     {"acc", AR_DTYPE_FLOAT32, 1, {20}, false, {0}, NULL},
                                     {"y", AR_DTYPE_FLOAT32, 1, {20}, false, {0}, NULL},
                                     {"q", AR_DTYPE_INT8, 1, {5}, false, {0}, NULL}};
  static const ar_tm_op_t ops[] = {{.builtin = OP_ADD, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}}};
  static const int32_t in[] = {0}, out[] = {2}, vars[] = {1, 3};
  static const float qs = 0.5f;
  static const int64_t qz = 3;
  static const ar_tm_quant_t quant[] = {{3, 1, &qs, &qz, 0}};
  ar_tm_args_t a = {.tensors = t, .n_tensors = 4, .ops = ops, .n_ops = 1, .inputs = in, .n_inputs = 1,
                    .outputs = out, .n_outputs = 1, .quant = quant, .n_quant = 1, .variables = vars, .n_variables = 2};
  return ar_tm_build_args(&a, bytes);
}

START_TEST(state_bytes_of_two_variables_by_hand) {
  size_t n = 0;
  uint8_t *b = two_vars_model(&n);
  char msg[1024] = "";
  ar_model_t *m = NULL;
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_model_load_buffer(b, n, &m, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_uint_eq(ar_interp_state_bytes(in), 128);
  ck_assert_int_eq(ar_interp_n_state_pieces(in), 2);
  const char *name = NULL;
  int32_t sg = -1;
  uint64_t off = 1, bytes = 0;
  ck_assert_int_eq(ar_interp_state_piece(in, 0, &name, &sg, &off, &bytes), 0);
  ck_assert_str_eq(name, "acc");
  ck_assert_int_eq(sg, 0);
  ck_assert_uint_eq(off, 0);
  ck_assert_uint_eq(bytes, 80);
  ck_assert_int_eq(ar_interp_state_piece(in, 1, &name, &sg, &off, &bytes), 0);
  ck_assert_str_eq(name, "q");
  ck_assert_uint_eq(off, 80);
  ck_assert_uint_eq(bytes, 5);
  ck_assert_int_eq(ar_interp_state_piece(in, 2, &name, &sg, &off, &bytes), AR_EINVAL);
  /* The default slot ends the persistent region. */
  ck_assert_uint_eq(ar_interp_default_state_offset(in) + 128, ar_interp_persistent_bytes(in));

  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
  const uint8_t *def = ar_interp_default_state(in);
  ck_assert_ptr_nonnull(def);
  for (int i = 0; i < 80; i++) ck_assert_uint_eq(def[i], 0);
  for (int i = 80; i < 85; i++) ck_assert_uint_eq(def[i], 3);   /* q's zero point (TFLite's reset) */

  /* An external slot: acc = 1.5 there; a bind makes the ADD read it, the default stays 0. */
  uint8_t *slot = aligned_alloc(64, 128);
  ck_assert_ptr_nonnull(slot);
  memset(slot, 0xee, 128);
  ar_interp_reset_state(in, slot);
  for (int i = 80; i < 85; i++) ck_assert_uint_eq(slot[i], 3);
  for (int i = 0; i < 20; i++) ((float *)slot)[i] = 1.5f;
  ck_assert_int_eq(ar_interp_bind_state(in, slot + 8), AR_EINVAL);   /* misaligned: refused, unchanged */
  ck_assert_int_eq(ar_interp_bind_state(in, slot), 0);
  float *x = ar_interp_input(in, 0)->data;
  for (int i = 0; i < 20; i++) x[i] = (float)i;
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  const float *y = ar_interp_output(in, 0)->data;
  for (int i = 0; i < 20; i++) ck_assert_float_eq(y[i], (float)i + 1.5f);
  /* A re-place never writes a bound slot and keeps the binding. */
  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
  for (int i = 0; i < 20; i++) ck_assert_float_eq(((float *)slot)[i], 1.5f);
  x = ar_interp_input(in, 0)->data;
  for (int i = 0; i < 20; i++) x[i] = (float)i;
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  y = ar_interp_output(in, 0)->data;
  for (int i = 0; i < 20; i++) ck_assert_float_eq(y[i], (float)i + 1.5f);
  /* Back to the default slot (moved with the region, still its initial state). */
  ck_assert_int_eq(ar_interp_bind_state(in, NULL), 0);
  for (int i = 0; i < 20; i++) x[i] = (float)i;
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  for (int i = 0; i < 20; i++) ck_assert_float_eq(y[i], (float)i);
  ar_interp_free(in);
  ar_model_free(m);
  free(slot);
  free(b);
}
END_TEST

/* arenactl plan's figures (the budget table, text and JSON): bytes per slot and the pieces. */
START_TEST(plan_shows_state_bytes_and_pieces) {
  size_t n = 0;
  uint8_t *b = two_vars_model(&n);
  char msg[1024] = "";
  ar_model_t *m = NULL;
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_model_load_buffer(b, n, &m, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  json_t *j = ar_budget_json(in);
  ck_assert_ptr_nonnull(j);
  json_t *st = json_object_get(j, "state");
  ck_assert_ptr_nonnull(st);
  ck_assert_int_eq(json_integer_value(json_object_get(st, "bytes_per_slot")), 128);
  json_t *pc = json_object_get(st, "pieces");
  ck_assert_int_eq((int)json_array_size(pc), 2);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(pc, 1), "name")), "q");
  ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(pc, 1), "offset")), 80);
  /* The variables have no planner buffer: the table lists them as state. */
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "no_buffer_counts"), "state")), 2);
  json_decref(j);
  char *text = NULL;
  size_t tn = 0;
  FILE *f = open_memstream(&text, &tn);
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(ar_budget_print(f, in), 0);
  fclose(f);
  ck_assert_msg(strstr(text, "state slot                128 bytes per slot") != NULL, "%s", text);
  ck_assert_msg(strstr(text, "80 bytes at        0  subgraph 0  acc") != NULL, "%s", text);
  free(text);
  ar_interp_free(in);
  ar_model_free(m);
  free(b);
}
END_TEST

/* x [1,20] (shape_signature [-1,20]) + acc [20] (a variable) -> y. */
static uint8_t *resizable_model(size_t *bytes) {
  static const ar_tm_tensor_t t[] = {{"x", AR_DTYPE_FLOAT32, 2, {1, 20}, true, {-1, 20}, NULL},
                                     {"acc", AR_DTYPE_FLOAT32, 1, {20}, false, {0}, NULL},
                                     {"y", AR_DTYPE_FLOAT32, 2, {1, 20}, false, {0}, NULL}};
  static const ar_tm_op_t ops[] = {{.builtin = OP_ADD, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}}};
  static const int32_t in[] = {0}, out[] = {2}, vars[] = {1};
  ar_tm_args_t a = {.tensors = t, .n_tensors = 3, .ops = ops, .n_ops = 1, .inputs = in, .n_inputs = 1,
                    .outputs = out, .n_outputs = 1, .variables = vars, .n_variables = 1};
  return ar_tm_build_args(&a, bytes);
}

/* A resize that leaves the state's shapes alone keeps the state: the default slot (moved with the
 * new place) and a bound slot (still bound) hold what they held, the generation and the note say
 * nothing was reset. (Before the slot, the re-place after ar_interp_prepare zeroed acc.) */
START_TEST(resize_keeps_state_of_unchanged_shape) {
  size_t n = 0;
  uint8_t *b = resizable_model(&n);
  char msg[1024] = "";
  ar_model_t *m = NULL;
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_model_load_buffer(b, n, &m, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_uint_eq(ar_interp_state_bytes(in), 128);
  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
  for (int i = 0; i < 20; i++) ((float *)ar_interp_default_state(in))[i] = 1.5f;
  float *slot = aligned_alloc(64, 128);
  ck_assert_ptr_nonnull(slot);
  ar_interp_reset_state(in, slot);
  for (int i = 0; i < 20; i++) slot[i] = 2.5f;
  const uint32_t gen = ar_interp_state_generation(in);
  for (int bound = 0; bound < 2; bound++) {
    ck_assert_int_eq(ar_interp_bind_state(in, bound ? slot : NULL), 0);
    const int32_t rows = 2 + bound, dims[2] = {rows, 20};
    ck_assert_msg(ar_interp_resize_input(in, 0, 2, dims, msg, sizeof msg) == 0, "%s", msg);
    ck_assert(ar_interp_needs_prepare(in));
    ck_assert_msg(ar_interp_prepare(in, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_uint_eq(ar_interp_state_generation(in), gen);
    ck_assert_str_eq(ar_interp_state_note(in), "");
    float *x = ar_interp_input(in, 0)->data;
    for (int i = 0; i < rows * 20; i++) x[i] = (float)i;
    ck_assert_int_eq(ar_interp_invoke(in), 0);
    const ar_tview_t *y = ar_interp_output(in, 0);
    ck_assert_uint_eq(y->bytes, (uint64_t)rows * 20 * sizeof(float));
    for (int i = 0; i < rows * 20; i++) ck_assert_float_eq(((const float *)y->data)[i], (float)i + (bound ? 2.5f : 1.5f));
  }
  ar_interp_free(in);
  ar_model_free(m);
  free(slot);
  free(b);
}
END_TEST

/* ---- A resize that changes a state piece (issue 27): ar_trm_svdf_two_states, x's SVDF state
 * follows x's batch, z's does not. */

static ar_interp_t *new_interp(const ar_model_t *m) {
  char msg[1024] = "";
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
  return in;
}

static void resize_x(ar_interp_t *in, int32_t batch) {
  char msg[1024] = "";
  const int32_t dims[2] = {batch, 5};
  ck_assert_msg(ar_interp_resize_input(in, 0, 2, dims, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_prepare(in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
}

/* Input k of the stream: x rows (5 floats each) and z, fixed values. */
static void step_inputs(int k, int rows, float *x, float *z) {
  for (int i = 0; i < rows * 5; i++) x[i] = (float)((k * 7 + i * 3) % 11) / 5.0f - 1.0f;
  for (int i = 0; i < 5; i++) z[i] = (float)((k * 5 + i * 2) % 9) / 4.0f - 1.0f;
}

/* One invoke with step k's inputs (x with `rows` rows); y, w copied out. */
static void run_step(ar_interp_t *in, int k, int rows, float *y, float *w) {
  step_inputs(k, rows, ar_interp_input(in, 0)->data, ar_interp_input(in, 1)->data);
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  ck_assert_uint_eq(ar_interp_output(in, 0)->bytes, (uint64_t)rows * 4 * sizeof(float));
  memcpy(y, ar_interp_output(in, 0)->data, (size_t)rows * 4 * sizeof(float));
  memcpy(w, ar_interp_output(in, 1)->data, 4 * sizeof(float));
}

static void expect_piece(const ar_interp_t *in, int32_t i, const char *name, uint64_t offset, uint64_t bytes) {
  const char *n = NULL;
  uint64_t off = 0, b = 0;
  ck_assert_int_eq(ar_interp_state_piece(in, i, &n, NULL, &off, &b), 0);
  ck_assert_str_eq(n, name);
  ck_assert_uint_eq(off, offset);
  ck_assert_uint_eq(b, bytes);
}

/* Batch 1 -> 2 -> 1: state_x (96 -> 192 -> 96 bytes) starts again at each resize, state_z keeps
 * its bytes though its offset moves (96 -> 192 -> 96); the note names state_x alone. Values: y
 * after each resize equals a fresh interpreter's stream at that batch (state 0), w equals an
 * interpreter never resized fed the same z (its state went on), and the slot's bytes are the
 * zeros and the saved bytes. An external slot written before the resize carries the same way
 * (ar_interp_carry_state); a slot of an unknown generation gets the initial state (AR_ESTATE). */
START_TEST(resize_resets_only_the_state_piece_it_changes) {
  size_t n = 0;
  uint8_t *b = ar_trm_svdf_two_states(&n);
  char msg[1024] = "";
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(b, n, &m, msg, sizeof msg) == 0, "%s", msg);
  ar_interp_t *in = new_interp(m), *zref = new_interp(m);
  ck_assert_uint_eq(ar_interp_state_bytes(in), 192);
  expect_piece(in, 0, "state_x", 0, 96);
  expect_piece(in, 1, "state_z", 96, 96);
  float y[8], w[4], ry[8], rw[4];
  /* An external slot: steps 0..1 from its initial state, then back to the default slot. */
  uint8_t *ext = aligned_alloc(64, 192), *ext2 = aligned_alloc(64, 384);
  ck_assert_ptr_nonnull(ext);
  ck_assert_ptr_nonnull(ext2);
  ar_interp_reset_state(in, ext);
  ck_assert_int_eq(ar_interp_bind_state(in, ext), 0);
  for (int k = 0; k < 2; k++) run_step(in, k, 1, y, w);
  ck_assert_int_eq(ar_interp_bind_state(in, NULL), 0);
  for (int k = 0; k < 3; k++) {
    run_step(in, k, 1, y, w);
    run_step(zref, k, 1, ry, rw);
    ck_assert_mem_eq(y, ry, sizeof(float) * 4);
    ck_assert_mem_eq(w, rw, sizeof w);
  }
  uint8_t saved_z[96], zero[384] = {0};
  memcpy(saved_z, (uint8_t *)ar_interp_default_state(in) + 96, 96);
  ck_assert_mem_ne(saved_z, zero, 96);   /* three steps wrote it: keeping it means something */
  const uint32_t gen0 = ar_interp_state_generation(in);

  for (int pass = 0; pass < 2; pass++) {
    const int rows = pass == 0 ? 2 : 1;
    resize_x(in, rows);
    const uint64_t xb = (uint64_t)rows * 96;
    ck_assert_uint_eq(ar_interp_state_bytes(in), pass == 0 ? 320 : 192);
    expect_piece(in, 0, "state_x", 0, xb);
    expect_piece(in, 1, "state_z", xb, 96);
    ck_assert_uint_eq(ar_interp_state_generation(in), gen0 + 1 + (uint32_t)pass);
    char want[128];
    snprintf(want, sizeof want, "state reset: state_x (%d -> %d bytes)", pass == 0 ? 96 : 192, (int)xb);
    ck_assert_str_eq(ar_interp_state_note(in), want);
    const uint8_t *slot = ar_interp_default_state(in);
    ck_assert_mem_eq(slot, zero, (size_t)xb);                 /* state_x starts again: 0 */
    ck_assert_mem_eq(slot + xb, saved_z, 96);                 /* state_z kept, at its new offset */
    if (pass == 0) {
      /* The external slot written before: carried from the generation before. */
      memset(ext2, 0xee, 384);
      ck_assert_int_eq(ar_interp_carry_state(in, ext2, ext, gen0), 0);
      ck_assert_mem_eq(ext2, zero, 192);
      ck_assert_mem_eq(ext2 + 192, ext + 96, 96);
      ck_assert_mem_ne(ext + 96, saved_z, 96);               /* its own stream (2 steps), not the default's */
      memset(ext2, 0xee, 384);
      ck_assert_int_eq(ar_interp_carry_state(in, ext2, ext, gen0 + 7), AR_ESTATE);
      ck_assert_mem_eq(ext2, zero, 320);                      /* unknown layout: the initial state */
    }
    /* Three steps on: y as a fresh interpreter at this batch, w as the never-resized one. */
    ar_interp_t *fresh = new_interp(m);
    if (rows != 1) resize_x(fresh, rows);
    for (int k = 3 + 3 * pass; k < 6 + 3 * pass; k++) {
      run_step(in, k, rows, y, w);
      run_step(fresh, k, rows, ry, rw);
      ck_assert_mem_eq(y, ry, (size_t)rows * 4 * sizeof(float));
      run_step(zref, k, 1, ry, rw);
      ck_assert_mem_eq(w, rw, sizeof w);
    }
    memcpy(saved_z, (uint8_t *)ar_interp_default_state(in) + xb, 96);
    ar_interp_free(fresh);
  }
  /* A resize to the shapes it has changes nothing (no re-plan: same generation, same bytes). */
  resize_x(in, 1);
  ck_assert_uint_eq(ar_interp_state_generation(in), gen0 + 2);
  ck_assert_mem_eq((uint8_t *)ar_interp_default_state(in) + 96, saved_z, 96);
  ar_interp_free(in);
  ar_interp_free(zref);
  ar_model_free(m);
  free(ext);
  free(ext2);
  free(b);
}
END_TEST

/* An int8 state piece a resize changes starts again at its zero point (-50: TFLite's
 * ResetVariableTensor), not 0: ar_trm_svdf_int8_state_resizable, batch 1 -> 2 after two steps; the
 * next step's two rows equal a fresh interpreter's at batch 2. */
START_TEST(resized_int8_state_starts_at_its_zero_point) {
  size_t n = 0;
  uint8_t *b = ar_trm_svdf_int8_state_resizable(&n);
  char msg[1024] = "";
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(b, n, &m, msg, sizeof msg) == 0, "%s", msg);
  ar_interp_t *in = new_interp(m), *fresh = new_interp(m);
  ck_assert_uint_eq(ar_interp_state_bytes(in), 64);
  int8_t *x = ar_interp_input(in, 0)->data;
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < 6; i++) x[i] = (int8_t)(k * 40 + i * 17 - 60);
    ck_assert_int_eq(ar_interp_invoke(in), 0);
  }
  const int8_t *st = ar_interp_default_state(in);
  bool moved = false;
  for (int i = 0; i < 20; i++) moved |= st[i] != -50;
  ck_assert(moved);   /* two steps wrote it */
  const int32_t two[2] = {2, 6};
  ck_assert_msg(ar_interp_resize_input(in, 0, 2, two, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_prepare(in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_str_eq(ar_interp_state_note(in), "state reset: state (20 -> 40 bytes)");
  st = ar_interp_default_state(in);
  for (int i = 0; i < 40; i++) ck_assert_int_eq(st[i], -50);
  ck_assert_msg(ar_interp_resize_input(fresh, 0, 2, two, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_prepare(fresh, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_place_owned(fresh, msg, sizeof msg) == 0, "%s", msg);
  int8_t *xs[2] = {ar_interp_input(in, 0)->data, ar_interp_input(fresh, 0)->data};
  for (int j = 0; j < 2; j++)
    for (int i = 0; i < 12; i++) xs[j][i] = (int8_t)(i * 13 - 70);
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  ck_assert_int_eq(ar_interp_invoke(fresh), 0);
  ck_assert_uint_eq(ar_interp_output(in, 0)->bytes, 8);
  ck_assert_mem_eq(ar_interp_output(in, 0)->data, ar_interp_output(fresh, 0)->data, 8);
  ar_interp_free(in);
  ar_interp_free(fresh);
  ar_model_free(m);
  free(b);
}
END_TEST

/* A stateless model: no slot, binds and resets are no-ops. */
START_TEST(stateless_model_has_no_slot) {
  size_t n = 0;
  uint8_t *b = ar_tm_build_relu("x", "y", &n);
  char msg[1024] = "";
  ar_model_t *m = NULL;
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_model_load_buffer(b, n, &m, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_uint_eq(ar_interp_state_bytes(in), 0);
  ck_assert_int_eq(ar_interp_n_state_pieces(in), 0);
  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_int_eq(ar_interp_bind_state(in, NULL), 0);
  ar_interp_reset_state(in, NULL);
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  ar_interp_free(in);
  ar_model_free(m);
  free(b);
}
END_TEST

/* The streams, each with its own plans. */
static const char *const stream_models[] = {"mww_v1_alexa", "litert_call_once_mul"};

/* An A,B,A,A,B,... interleave of `n_slots` slots, each running `steps` invokes; a slot whose
 * stream is done is skipped. */
static void interleave(char *plan, size_t cap, int steps, int n_slots, int c_from) {
  static const char pattern[] = "ABAAB";
  int done[3] = {0, 0, 0};
  size_t at = 0;
  for (int i = 0; at + 1 < cap && i < 10000; i++) {
    bool all = true;
    for (int t = 0; t < n_slots; t++) all = all && done[t] == steps;
    if (all) break;
    int s = pattern[i % 5] - 'A';
    if (n_slots == 3 && (int)at >= c_from && i % 2 == 1) s = 2;   /* C joins mid-way */
    if (done[s] == steps) {
      s = -1;
      for (int t = 0; t < n_slots && s < 0; t++)
        if (done[t] < steps && (t < 2 || (int)at >= c_from)) s = t;
      if (s < 0) continue;
    }
    plan[at++] = (char)('A' + s);
    done[s]++;
  }
  plan[at] = '\0';
}

static void run_plan(const char *stem, const char *plan, const char *what) {
  char model[1024], dir[1024], msg[1024] = "";
  snprintf(model, sizeof model, "%s/%s.tflite", ar_ts_models_dir(), stem);
  snprintf(dir, sizeof dir, "%s/%s", ar_ts_golden_dir(), stem);
  ar_ts_meta_t meta;
  ck_assert_msg(ar_ts_read_meta(dir, &meta, msg, sizeof msg) == 0, "%s", msg);
  ar_model_t *m = NULL;
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_model_load(model, &m, msg, sizeof msg) == 0, "%s: %s", stem, msg);
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s: %s", stem, msg);
  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s: %s", stem, msg);
  ck_assert_uint_gt(ar_interp_state_bytes(in), 0);
  ar_ts_report_t rep;
  int rc = ar_ts_replay_slots(in, dir, &meta, plan, NULL, &rep, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s (%s): %s", stem, what, msg);
  printf("state %-22s %-34s %3d invokes on %llu-byte slots: %d bad, worst %.3f of the tolerance\n", stem, what,
         rep.steps, (unsigned long long)ar_interp_state_bytes(in), rep.bad_steps, rep.worst_ratio);
  ck_assert_msg(rep.bad_steps == 0, "%s (%s, plan %s): %s", stem, what, plan, rep.first_bad);
  ar_interp_free(in);
  ar_model_free(m);
}

static int stream_steps(const char *stem) {
  char dir[1024], msg[1024] = "";
  snprintf(dir, sizeof dir, "%s/%s", ar_ts_golden_dir(), stem);
  ar_ts_meta_t meta;
  ck_assert_msg(ar_ts_read_meta(dir, &meta, msg, sizeof msg) == 0, "%s", msg);
  return meta.steps;
}

START_TEST(two_slots_interleaved_each_reproduce_their_stream) {
  if (!ar_ts_have_state_models("check_state two_slots_interleaved")) return;
  const char *stem = stream_models[_i];
  char plan[256];
  interleave(plan, sizeof plan, stream_steps(stem), 2, 0);
  ck_assert_ptr_null(strchr(plan, 'C'));
  run_plan(stem, plan, "A,B interleaved");
}
END_TEST

START_TEST(third_slot_started_mid_way_starts_at_step_0) {
  if (!ar_ts_have_state_models("check_state third_slot")) return;
  const char *stem = stream_models[_i];
  const int steps = stream_steps(stem);
  char plan[256];
  interleave(plan, sizeof plan, steps, 3, steps / 2);
  ck_assert_ptr_nonnull(strchr(plan, 'C'));
  ck_assert_int_ne(plan[0], 'C');
  run_plan(stem, plan, "A,B + C from mid-way");
}
END_TEST

START_TEST(reset_slot_restarts_from_step_0) {
  if (!ar_ts_have_state_models("check_state reset_slot")) return;
  const char *stem = stream_models[_i];
  const int steps = stream_steps(stem);
  /* A and B run 4 steps each, B is reset and runs its whole stream from step 0; A goes on. */
  char plan[256];
  size_t at = 0;
  for (int i = 0; i < 4; i++) plan[at++] = 'A', plan[at++] = 'B';
  plan[at++] = 'b';
  for (int i = 0; i < steps; i++) {
    plan[at++] = 'B';
    if (4 + i < steps) plan[at++] = 'A';
  }
  plan[at] = '\0';
  run_plan(stem, plan, "B reset after 4 steps");
}
END_TEST

START_TEST(re_place_mid_stream_keeps_every_slot) {
  if (!ar_ts_have_state_models("check_state re_place")) return;
  const char *stem = stream_models[_i];
  const int steps = stream_steps(stem);
  /* A (the default slot, in the persistent region) and B, a re-place into new regions after
   * every third action: before the state slot, every place zeroed the state. */
  char plan[256], base[256];
  interleave(base, sizeof base, steps, 2, 0);
  size_t at = 0;
  for (size_t i = 0; base[i] && at + 2 < sizeof plan; i++) {
    plan[at++] = base[i];
    if (i % 3 == 2) plan[at++] = '*';
  }
  plan[at] = '\0';
  run_plan(stem, plan, "re-placed every 3 invokes");
}
END_TEST

int main(void) {
  Suite *s = suite_create("state");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, state_bytes_of_two_variables_by_hand);
  tcase_add_test(tc, stateless_model_has_no_slot);
  tcase_add_test(tc, plan_shows_state_bytes_and_pieces);
  tcase_add_test(tc, resize_keeps_state_of_unchanged_shape);
  tcase_add_test(tc, resize_resets_only_the_state_piece_it_changes);
  tcase_add_test(tc, resized_int8_state_starts_at_its_zero_point);
  const int n = (int)(sizeof stream_models / sizeof stream_models[0]);
  tcase_add_loop_test(tc, two_slots_interleaved_each_reproduce_their_stream, 0, n);
  tcase_add_loop_test(tc, third_slot_started_mid_way_starts_at_step_0, 0, n);
  tcase_add_loop_test(tc, reset_slot_restarts_from_step_0, 0, n);
  tcase_add_loop_test(tc, re_place_mid_stream_keeps_every_slot, 0, n);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
