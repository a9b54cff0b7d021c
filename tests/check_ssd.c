/* check_ssd.c - clients/ssd.c: MediaPipe SSD anchors and best-box decoding, pinned on the anchor
 * layout (hand-computed) and on the LiteRT golden outputs for the astronaut photo (expected values
 * computed independently with numpy from tests/golden/<model>/photo/output_*.bin). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "clients/ssd.h"
#include "tests/ar_test_util.h"

START_TEST(anchor_layout_128_and_192) {
  ar_ssd_anchor_t a[2016];
  ck_assert_int_eq(ar_ssd_anchors(128, 128, a, 2016), 896);
  /* stride 8: 16x16 cells, 2 anchors each, centres at (x + 0.5) / 16 */
  ck_assert_float_eq(a[0].x_center, 0.5f / 16);
  ck_assert_float_eq(a[1].x_center, 0.5f / 16);
  ck_assert_float_eq(a[2].x_center, 1.5f / 16);
  ck_assert_float_eq(a[511].x_center, 15.5f / 16);
  ck_assert_float_eq(a[511].y_center, 15.5f / 16);
  /* stride 16 (3 layers merged): 8x8 cells, 6 anchors each */
  ck_assert_float_eq(a[512].x_center, 0.5f / 8);
  ck_assert_float_eq(a[517].x_center, 0.5f / 8);
  ck_assert_float_eq(a[518].x_center, 1.5f / 8);
  ck_assert_float_eq(a[895].y_center, 7.5f / 8);
  ck_assert_int_eq(ar_ssd_anchors(192, 192, a, 2016), 2016);
  ck_assert_float_eq(a[1152].x_center, 0.5f / 12);
  ck_assert_int_eq(ar_ssd_anchors(192, 192, a, 2015), -1);
  ck_assert_int_eq(ar_ssd_anchors(100, 128, a, 2016), -1);
}
END_TEST

START_TEST(score_is_clamped_sigmoid) {
  ck_assert_float_eq(ar_ssd_score(0.f), 0.5f);
  ck_assert_float_eq_tol(ar_ssd_score(2.4547424f), 0.9209076f, 1e-6f);
  ck_assert_float_eq(ar_ssd_score(-1e30f), ar_ssd_score(-100.f));
}
END_TEST

static float *golden(const char *model, int j, size_t n) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s/photo/output_%d.bin", ar_test_golden_dir(), model, j);
  size_t bytes = 0;
  float *v = ar_test_read_file(path, &bytes);
  ck_assert_ptr_nonnull(v);
  ck_assert_uint_eq(bytes, n * sizeof(float));
  return v;
}

START_TEST(face_on_astronaut_golden) {
  ar_ssd_anchor_t a[896];
  ck_assert_int_eq(ar_ssd_anchors(128, 128, a, 896), 896);
  float *boxes = golden("face_detection_short_range", 0, 896 * 16);
  float *scores = golden("face_detection_short_range", 1, 896);
  ar_ssd_detection_t d;
  ck_assert_int_eq(ar_ssd_best(scores, boxes, 896, 16, a, 128, 128, &d), 0);
  ck_assert_int_eq(d.index, 141);
  ck_assert_float_eq_tol(d.score, 0.920908f, 1e-5f);   /* >= 0.8: the demo's acceptance figure */
  ck_assert_float_eq_tol(d.x_center, 0.442338f, 1e-5f);
  ck_assert_float_eq_tol(d.y_center, 0.252360f, 1e-5f);
  ck_assert_float_eq_tol(d.w, 0.184739f, 1e-5f);
  ck_assert_float_eq_tol(d.h, 0.184738f, 1e-5f);
  ck_assert_int_eq(d.n_keypoints, 6);
  /* The eyes lie inside the box, right eye (image left) left of the left eye. */
  ck_assert(d.keypoints[0] > d.x_center - d.w / 2 && d.keypoints[0] < d.keypoints[2]);
  free(boxes);
  free(scores);
}
END_TEST

START_TEST(palm_on_astronaut_golden) {
  ar_ssd_anchor_t a[2016];
  ck_assert_int_eq(ar_ssd_anchors(192, 192, a, 2016), 2016);
  float *boxes = golden("palm_detection_lite", 0, 2016 * 18);
  float *scores = golden("palm_detection_lite", 1, 2016);
  ar_ssd_detection_t d;
  ck_assert_int_eq(ar_ssd_best(scores, boxes, 2016, 18, a, 192, 192, &d), 0);
  ck_assert_int_eq(d.index, 606);
  ck_assert_float_eq_tol(d.score, 0.141665f, 1e-5f);
  ck_assert_float_eq_tol(d.x_center, 0.641397f, 1e-5f);
  ck_assert_float_eq_tol(d.y_center, 0.526404f, 1e-5f);
  ck_assert_int_eq(d.n_keypoints, 7);
  free(boxes);
  free(scores);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ssd");
  TCase *tc = tcase_create("ssd");
  tcase_add_test(tc, anchor_layout_128_and_192);
  tcase_add_test(tc, score_is_clamped_sigmoid);
  tcase_add_test(tc, face_on_astronaut_golden);
  tcase_add_test(tc, palm_on_astronaut_golden);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
