/* check_decode.c - daemon/ar_decode.c: the allocation-free wire scan (ids, counts, NUL bytes,
 * the field cap, malformed wire) and the budgeted unpack (E2BIG past the budget).
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

int main(void) {
  Suite *s = suite_create("decode");
  TCase *tc = tcase_create("decode");
  tcase_add_test(tc, scan_counts_an_invoke);
  tcase_add_test(tc, scan_finds_nul_in_strings);
  tcase_add_test(tc, scan_caps_fields_without_allocating);
  tcase_add_test(tc, scan_counts_packed_shape_and_refuses_bad_wire);
  tcase_add_test(tc, unpack_charges_a_budget);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
