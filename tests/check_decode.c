/* check_decode.c - daemon/ar_decode.c: the allocation-free wire scan (ids, counts, NUL bytes,
 * the field cap, malformed wire), the budgeted unpack (E2BIG past the budget) and the invoke frame
 * stripped of its input bytes (the bytes path's one copy).
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "daemon/ar_decode.h"

/* An Invoke of `model` with `n` FLOAT32 inputs of shape [1,2,2,1] and `data_bytes` each. */
static uint8_t *pack_invoke(const char *model, size_t n, size_t data_bytes, uint64_t id, size_t *len) {
  Arenad__Tensor t = ARENAD__TENSOR__INIT, *tp[8];
  int64_t shape[4] = {1, 2, 2, 1};
  uint8_t *data = calloc(1, data_bytes + 1);
  t.dtype = ARENAD__DTYPE__FLOAT32;
  t.n_shape = 4;
  t.shape = shape;
  t.data.data = data;
  t.data.len = data_bytes;
  for (size_t i = 0; i < n; i++) tp[i] = &t;
  Arenad__InvokeRequest inv = ARENAD__INVOKE_REQUEST__INIT;
  inv.model = (char *)model;
  inv.n_inputs = n;
  inv.inputs = tp;
  Arenad__Request req = ARENAD__REQUEST__INIT;
  req.id = id;
  req.body_case = ARENAD__REQUEST__BODY_INVOKE;
  req.invoke = &inv;
  *len = arenad__request__get_packed_size(&req);
  uint8_t *buf = malloc(*len);
  arenad__request__pack(&req, buf);
  free(data);
  return buf;
}

START_TEST(scan_counts_an_invoke) {
  size_t len;
  uint8_t *f = pack_invoke("face", 2, 16, 77, &len);
  ar_decode_scan_t s;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_decode_scan(f, len, &s, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(s.id, 77);
  ck_assert_uint_eq(s.body_field, ARENAD__REQUEST__BODY_INVOKE);
  ck_assert_uint_eq(s.n_inputs, 2);
  ck_assert_uint_eq(s.max_shape, 4);   /* packed [1,2,2,1] */
  ck_assert_uint_eq(s.model_len, 4);
  ck_assert_int_eq(memcmp(s.model, "face", 4), 0);
  ck_assert_ptr_null(s.nul_field);
  ck_assert_uint_eq(s.n_unknown, 0);
  /* id, invoke, model, 2 x (inputs, shape, data); dtype FLOAT32 = 0 is not on the wire */
  ck_assert_uint_eq(s.n_fields, 9);
  free(f);
}
END_TEST

START_TEST(scan_finds_nul_in_strings) {
  /* UnloadModel { name: "a\0b" }: id 5 */
  static const uint8_t f[] = {0x08, 0x05, 0x22, 0x05, 0x0a, 0x03, 'a', 0x00, 'b'};
  ar_decode_scan_t s;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_decode_scan(f, sizeof(f), &s, msg, sizeof(msg)), 0);
  ck_assert_str_eq(s.nul_field, "name");
  ck_assert_uint_eq(s.id, 5);
}
END_TEST

START_TEST(scan_caps_fields_without_allocating) {
  /* A Ping padded with unknown fields: one past the cap is refused. */
  size_t n = 2 + 2 + 3 * (size_t)AR_DECODE_MAX_FIELDS;
  uint8_t *f = malloc(n), *p = f;
  *p++ = 0x08, *p++ = 0x01, *p++ = 0x12, *p++ = 0x00;
  for (int i = 0; i < AR_DECODE_MAX_FIELDS; i++) *p++ = 0xf8, *p++ = 0x07, *p++ = 0x00;
  ar_decode_scan_t s;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_decode_scan(f, n, &s, msg, sizeof(msg)), AR_EPROTO);
  ck_assert_msg(strstr(msg, "more than 16384 fields") != NULL, "%s", msg);
  /* 16382 unknown fields + id + ping = 16384: accepted, counted. */
  ck_assert_int_eq(ar_decode_scan(f, n - 6, &s, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(s.n_fields, AR_DECODE_MAX_FIELDS);
  ck_assert_uint_eq(s.n_unknown, AR_DECODE_MAX_FIELDS - 2);
  free(f);
}
END_TEST

START_TEST(scan_counts_packed_shape_and_refuses_bad_wire) {
  /* invoke { inputs { shape: packed 10 x 1 } } */
  static const uint8_t shape10[] = {0x32, 0x0e, 0x12, 0x0c, 0x1a, 0x0a, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  ar_decode_scan_t s;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_decode_scan(shape10, sizeof(shape10), &s, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(s.n_inputs, 1);
  ck_assert_uint_eq(s.max_shape, 10);
  /* A length running past the end. */
  static const uint8_t past[] = {0x32, 0x10, 0x12};
  ck_assert_int_eq(ar_decode_scan(past, sizeof(past), &s, msg, sizeof(msg)), AR_EPROTO);
  ck_assert_msg(strstr(msg, "field 6: length 16 runs past the end") != NULL, "%s", msg);
  /* Group wire types are not accepted; field number 0 neither. */
  static const uint8_t group[] = {0x0b};
  ck_assert_int_eq(ar_decode_scan(group, sizeof(group), &s, msg, sizeof(msg)), AR_EPROTO);
  ck_assert_msg(strstr(msg, "wire type 3") != NULL, "%s", msg);
  static const uint8_t zero[] = {0x00, 0x00};
  ck_assert_int_eq(ar_decode_scan(zero, sizeof(zero), &s, msg, sizeof(msg)), AR_EPROTO);
}
END_TEST

START_TEST(unpack_charges_a_budget) {
  size_t len;
  uint8_t *f = pack_invoke("face", 1, 1 << 20, 9, &len);
  Arenad__Request *req = NULL;
  char msg[AR_MSG_BYTES];
  /* The 1 MiB data field alone exceeds a 512 KiB budget. */
  ck_assert_int_eq(ar_decode_unpack(f, len, 512 * 1024, &req, msg, sizeof(msg)), AR_E2BIG);
  ck_assert_ptr_null(req);
  ck_assert_msg(strstr(msg, "needs more than 524288 bytes") != NULL, "%s", msg);
  /* The daemon's budget for this frame: 2 x frame + 4 MiB. */
  uint64_t b = ar_decode_budget_bytes(len, 132u << 20);
  ck_assert_uint_eq(b, 2 * (uint64_t)len + (4u << 20));
  ck_assert_uint_eq(ar_decode_budget_bytes(100u << 20, 132u << 20), 132u << 20);   /* the hard cap */
  ck_assert_int_eq(ar_decode_unpack(f, len, b, &req, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(req->id, 9);
  ck_assert_uint_eq(req->invoke->inputs[0]->data.len, 1 << 20);
  arenad__request__free_unpacked(req, NULL);
  /* Bytes that scan but do not decode (a string field sent as a varint). */
  static const uint8_t bad[] = {0x32, 0x02, 0x08, 0x01};
  ck_assert_int_eq(ar_decode_unpack(bad, sizeof(bad), 1 << 20, &req, msg, sizeof(msg)), AR_EPROTO);
  ck_assert_ptr_null(req);
  free(f);
}
END_TEST

/* The bytes path's one copy: an invoke stripped of its inputs' data decodes to the same request
 * with empty data, and the refs point at the bytes in the frame (values distinct per input). */
START_TEST(strip_inputs_leaves_the_data_in_the_frame) {
  enum { N = 3, BYTES = 20000 };
  uint8_t *data[N];
  Arenad__Tensor t[N], *tp[N];
  Arenad__BufferRange out0 = ARENAD__BUFFER_RANGE__INIT, *outs[1] = {&out0};
  int64_t shape[4] = {1, 50, 100, 1};
  for (int i = 0; i < N; i++) {
    arenad__tensor__init(&t[i]);
    data[i] = malloc(BYTES);
    for (int k = 0; k < BYTES; k++) data[i][k] = (uint8_t)(k * 7 + i * 13);
    t[i].name = (char *)(i == 1 ? "second" : "");
    t[i].dtype = ARENAD__DTYPE__UINT8;
    t[i].n_shape = 4;
    t[i].shape = shape;
    t[i].data.data = data[i];
    t[i].data.len = i == 2 ? 0 : BYTES;   /* the third carries no data (a shm input, say) */
    tp[i] = &t[i];
  }
  Arenad__BufferRange shm = ARENAD__BUFFER_RANGE__INIT;
  shm.buffer = 3;
  shm.bytes = BYTES;
  t[2].shm = &shm;
  out0.buffer = 3;
  out0.offset = 4096;
  Arenad__InvokeRequest inv = ARENAD__INVOKE_REQUEST__INIT;
  inv.model = (char *)"face";
  inv.n_inputs = N;
  inv.inputs = tp;
  inv.n_outputs = 1;
  inv.outputs = outs;
  Arenad__Request req = ARENAD__REQUEST__INIT;
  req.id = 99;
  req.body_case = ARENAD__REQUEST__BODY_INVOKE;
  req.invoke = &inv;
  size_t len = arenad__request__get_packed_size(&req);
  uint8_t *f = malloc(len), *small = malloc(len);
  arenad__request__pack(&req, f);
  ar_decode_input_ref_t refs[8];
  size_t n_refs = 0;
  /* Too little room for the stripped frame: not this path. */
  ck_assert_uint_eq(ar_decode_strip_inputs(f, len, small, 20, refs, 8, &n_refs), 0);
  size_t n = ar_decode_strip_inputs(f, len, small, len, refs, 8, &n_refs);
  ck_assert_uint_eq(ar_decode_strip_inputs(f, len, small, n, refs, 8, &n_refs), n);   /* exactly enough */
  ck_assert_uint_gt(n, 0);
  ck_assert_uint_lt(n, 200);   /* the 40000 data bytes stayed behind */
  ck_assert_uint_eq(n_refs, N);
  for (int i = 0; i < 2; i++) {
    ck_assert_uint_eq(refs[i].len, BYTES);
    ck_assert(refs[i].data > f && refs[i].data + BYTES <= f + len);
    ck_assert_int_eq(memcmp(refs[i].data, data[i], BYTES), 0);
  }
  ck_assert_ptr_null(refs[2].data);
  ck_assert_uint_eq(refs[2].len, 0);
  Arenad__Request *r = NULL;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_decode_unpack(small, n, 1 << 20, &r, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(r->id, 99);
  ck_assert_str_eq(r->invoke->model, "face");
  ck_assert_uint_eq(r->invoke->n_inputs, N);
  ck_assert_str_eq(r->invoke->inputs[1]->name, "second");
  ck_assert_uint_eq(r->invoke->inputs[0]->n_shape, 4);
  ck_assert_int_eq(r->invoke->inputs[0]->shape[2], 100);
  ck_assert_int_eq(r->invoke->inputs[0]->dtype, ARENAD__DTYPE__UINT8);
  for (int i = 0; i < N; i++) ck_assert_uint_eq(r->invoke->inputs[i]->data.len, 0);
  ck_assert_ptr_nonnull(r->invoke->inputs[2]->shm);
  ck_assert_uint_eq(r->invoke->inputs[2]->shm->bytes, BYTES);
  ck_assert_uint_eq(r->invoke->n_outputs, 1);
  ck_assert_uint_eq(r->invoke->outputs[0]->offset, 4096);
  /* Borrowed data is not freed with the request; the frame is (ASan/valgrind see the rest). */
  r->invoke->inputs[0]->data.data = (uint8_t *)refs[0].data;
  r->invoke->inputs[0]->data.len = refs[0].len;
  ar_decode_request_free(r, f);
  /* Not this path: an input's data repeated (Request{invoke{inputs{data 0xaa, data 0xbb}}}), a
   * non-invoke, more inputs than refs. */
  const uint8_t twice[] = {0x32, 0x08, 0x12, 0x06, 0x22, 0x01, 0xaa, 0x22, 0x01, 0xbb};
  ck_assert_uint_eq(ar_decode_strip_inputs(twice, sizeof(twice), small, len, refs, 8, &n_refs), 0);
  const uint8_t ping[] = {0x08, 0x05, 0x12, 0x00};
  ck_assert_uint_eq(ar_decode_strip_inputs(ping, sizeof(ping), small, len, refs, 8, &n_refs), 0);
  f = malloc(len);
  arenad__request__pack(&req, f);
  ck_assert_uint_eq(ar_decode_strip_inputs(f, len, small, len, refs, 1, &n_refs), 0);
  free(f);
  free(small);
  for (int i = 0; i < N; i++) free(data[i]);
}
END_TEST

int main(void) {
  Suite *s = suite_create("decode");
  TCase *tc = tcase_create("decode");
  tcase_add_test(tc, scan_counts_an_invoke);
  tcase_add_test(tc, scan_finds_nul_in_strings);
  tcase_add_test(tc, scan_caps_fields_without_allocating);
  tcase_add_test(tc, scan_counts_packed_shape_and_refuses_bad_wire);
  tcase_add_test(tc, unpack_charges_a_budget);
  tcase_add_test(tc, strip_inputs_leaves_the_data_in_the_frame);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
