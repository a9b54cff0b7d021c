/* check_cli.c - clients/cli_tensor.c, arenactl's result printing: dequantized values, labels
 * files, the top K classes of a classifier (ties, quantized codes), detection rows (score
 * threshold, count, label offset, boxes mapped back to photo pixels through stretch and
 * letterbox), and an integer image input from a photograph. Values are hand-computed.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clients/cli_tensor.h"
#include "common/ar_error.h"

#define ASTRONAUT "/usr/lib/python3/dist-packages/imageio/resources/images/astronaut.png"

/* Everything `fn` printed to a memory stream, NUL-terminated (static buffer). */
static char out_buf[8192];
static FILE *mem(void) {
  memset(out_buf, 0, sizeof(out_buf));
  return fmemopen(out_buf, sizeof(out_buf) - 1, "w");
}

static ar_cli_tensor_t u8(const uint8_t *d, int64_t n, float scale, int64_t zp) {
  ar_cli_tensor_t t = {.name = "t", .dtype = 3, .rank = 2, .dims = {1, n}, .data = d, .bytes = (uint64_t)n,
                       .has_quant = scale > 0, .scale = scale, .zero_point = zp};
  return t;
}

START_TEST(values_are_dequantized) {
  const uint8_t q[3] = {0, 128, 255};
  ar_cli_tensor_t t = u8(q, 3, 1.0f / 128, 128);
  ck_assert_float_eq(ar_cli_value(&t, 0), -1.0f);
  ck_assert_float_eq(ar_cli_value(&t, 1), 0.0f);
  ck_assert_float_eq(ar_cli_value(&t, 2), 127.0f / 128);
  ck_assert(isnan(ar_cli_value(&t, 3)));
  const int8_t s[2] = {-128, 5};
  ar_cli_tensor_t i8 = {.dtype = 9, .rank = 1, .dims = {2}, .data = s, .bytes = 2, .has_quant = true,
                        .scale = 0.5f, .zero_point = -128};
  ck_assert_float_eq(ar_cli_value(&i8, 0), 0.0f);
  ck_assert_float_eq(ar_cli_value(&i8, 1), 66.5f);
  const int64_t big[1] = {-3};
  ar_cli_tensor_t i64 = {.dtype = 4, .rank = 1, .dims = {1}, .data = big, .bytes = 8};
  ck_assert_float_eq(ar_cli_value(&i64, 0), -3.0f);
}
END_TEST

START_TEST(labels_lines_crlf_and_last_line) {
  char path[] = "/tmp/check_cli_labels_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  const char text[] = "???\r\nperson\nbicycle";   /* CRLF, LF, no final newline */
  ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
  close(fd);
  ar_cli_labels_t l;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_cli_labels_load(path, &l, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(l.n, 3);
  ck_assert_str_eq(ar_cli_label(&l, 0, 0), "???");
  ck_assert_str_eq(ar_cli_label(&l, 0, 1), "person");
  ck_assert_str_eq(ar_cli_label(&l, 1, 1), "bicycle");
  ck_assert_str_eq(ar_cli_label(&l, 2, 1), "");
  ck_assert_str_eq(ar_cli_label(&l, -2, 1), "");
  ar_cli_labels_free(&l);
  unlink(path);
  ck_assert_int_eq(ar_cli_labels_load("/nonexistent/labels.txt", &l, msg, sizeof(msg)), AR_ENOENT);
  ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/labels.txt"));
}
END_TEST

START_TEST(top_k_quantized_with_ties) {
  /* Scores q = 10, 200, 50, 200, 7 with scale 1/256: classes 1 and 3 tie at .78125; the lower index
   * comes first. */
  const uint8_t q[5] = {10, 200, 50, 200, 7};
  ar_cli_tensor_t t = u8(q, 5, 1.0f / 256, 0);
  FILE *f = mem();
  ck_assert_int_eq(ar_cli_print_top(f, &t, 3, NULL, 0), 0);
  fclose(f);
  ck_assert_str_eq(out_buf, "  top 1: class 1 (q 200) 0.7812 \n"
                            "  top 2: class 3 (q 200) 0.7812 \n"
                            "  top 3: class 2 (q 50) 0.1953 \n");
  /* k above the class count prints every class once. */
  f = mem();
  ck_assert_int_eq(ar_cli_print_top(f, &t, 9, NULL, 0), 0);
  fclose(f);
  int lines = 0;
  for (char *p = out_buf; *p; p++) lines += *p == '\n';
  ck_assert_int_eq(lines, 5);
}
END_TEST

/* Detection outputs of 3 rows, count 2: (person .9 box y .1...5 x .2...6), (cat .4 ...). */
static float d_boxes[12] = {0.1f, 0.2f, 0.5f, 0.6f, 0.0f, 0.0f, 1.0f, 1.0f, 0, 0, 0, 0};
static float d_classes[3] = {0, 16, 0}, d_scores[3] = {0.9f, 0.4f, 0}, d_count[1] = {2};

static void det_outputs(ar_cli_tensor_t o[4]) {
  o[0] = (ar_cli_tensor_t){.dtype = 0, .rank = 3, .dims = {1, 3, 4}, .data = d_boxes, .bytes = sizeof(d_boxes)};
  o[1] = (ar_cli_tensor_t){.dtype = 0, .rank = 2, .dims = {1, 3}, .data = d_classes, .bytes = sizeof(d_classes)};
  o[2] = (ar_cli_tensor_t){.dtype = 0, .rank = 2, .dims = {1, 3}, .data = d_scores, .bytes = sizeof(d_scores)};
  o[3] = (ar_cli_tensor_t){.dtype = 0, .rank = 1, .dims = {1}, .data = d_count, .bytes = sizeof(d_count)};
}

START_TEST(detection_rows_threshold_and_pixels) {
  ar_cli_tensor_t o[4];
  det_outputs(o);
  /* Stretch of a 400x200 photo into a 100x100 tensor: x * 400, y * 200. */
  ar_cli_image_geom_t g = {.img_w = 400, .img_h = 200, .crop = {0, 0, 400, 200}, .placed = {0, 0, 100, 100},
                           .tensor_w = 100, .tensor_h = 100};
  FILE *f = mem();
  ck_assert_int_eq(ar_cli_print_detections(f, o, 0.3f, NULL, 1, &g), 0);
  fclose(f);
  ck_assert_str_eq(out_buf, "  2 detection(s); rows with score >= 0.30:\n"
                            "  det 0: class 0 score 0.900 box y 0.100..0.500 x 0.200..0.600 crop 80,20,240,100 \n"
                            "  det 1: class 16 score 0.400 box y 0.000..1.000 x 0.000..1.000 crop 0,0,400,200 \n");
  /* Threshold .5 drops the second row; no geometry, no crop. */
  f = mem();
  ck_assert_int_eq(ar_cli_print_detections(f, o, 0.5f, NULL, 1, NULL), 0);
  fclose(f);
  ck_assert_str_eq(out_buf, "  2 detection(s); rows with score >= 0.50:\n"
                            "  det 0: class 0 score 0.900 box y 0.100..0.500 x 0.200..0.600 \n");
  /* Letterbox of the 400x200 photo (crop x 100..500 of a 600-wide one) into 100x100: placed at
   * rows 25..75; box x .2..0.6 -> 100 + 400 * (.2, .6) = 180, 340; y .1 -> (10 - 25) / 50 < 0 -> 0,
   * y .5 -> (50 - 25) / 50 * 200 = 100. */
  g = (ar_cli_image_geom_t){.img_w = 600, .img_h = 200, .crop = {100, 0, 500, 200}, .placed = {0, 25, 100, 75},
                            .tensor_w = 100, .tensor_h = 100};
  f = mem();
  ck_assert_int_eq(ar_cli_print_detections(f, o, 0.5f, NULL, 1, &g), 0);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(out_buf, "crop 180,0,340,100"));
  /* Not detection outputs: scores of another length. */
  o[2].bytes = 8;
  ck_assert_int_eq(ar_cli_print_detections(stdout, o, 0.5f, NULL, 1, NULL), AR_EINVAL);
}
END_TEST

START_TEST(image_input_uint8_and_int8) {
  if (access(ASTRONAUT, R_OK) != 0) {
    printf("check_cli: %s absent: skipped\n", ASTRONAUT);
    return;
  }
  ar_cli_image_opts_t io;
  ar_cli_result_opts_t ro;
  ar_cli_opts_init(&io, &ro);
  io.path = ASTRONAUT;
  io.fit = AR_IMAGE_FIT_STRETCH;
  /* 512x512 -> 2x2 uint8, pixels as codes; the int8 input gets the same pixels minus 128. */
  ar_cli_tensor_t desc = {.name = "x", .dtype = 3, .rank = 4, .dims = {1, 2, 2, 3}, .has_quant = true,
                          .scale = 1.0f / 128, .zero_point = 128};
  void *d8 = NULL, *s8 = NULL;
  uint64_t n8 = 0, ns = 0;
  ar_cli_image_geom_t g;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_cli_image_input(&io, &desc, &d8, &n8, &g, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(n8, 12);
  ck_assert_uint_eq(g.img_w, 512);
  ck_assert_uint_eq(g.placed.right, 2);
  desc.dtype = 9;
  desc.zero_point = 0;
  ck_assert_int_eq(ar_cli_image_input(&io, &desc, &s8, &ns, NULL, msg, sizeof(msg)), 0);
  for (int i = 0; i < 12; i++) ck_assert_int_eq((int)((int8_t *)s8)[i], (int)((uint8_t *)d8)[i] - 128);
  free(d8);
  free(s8);
  /* A one-channel input gets the luma (one byte per pixel; its values: check_image). */
  desc.dims[3] = 1;
  ck_assert_int_eq(ar_cli_image_input(&io, &desc, &d8, &n8, NULL, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(n8, 4);
  free(d8);
  /* An input that is not one [1,H,W,3|1] image is refused with a message naming it. */
  desc.dims[3] = 4;
  ck_assert_int_eq(ar_cli_image_input(&io, &desc, &d8, &n8, NULL, msg, sizeof(msg)), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(msg, "input 'x'"));
}
END_TEST

/* YOLOv8n's golden inputs (../shared/golden_q, when present): Ultralytics letterbox to 416x416 on
 * grey 114, int8 q = pixel - 128 (the cat: 451x300 -> 416x277 at y 69; the astronaut: no border). */
START_TEST(yolo_letterbox_border_equals_golden_input) {
  static const struct { const char *cas, *image; } cases[] = {
    {"cat", "/usr/lib/python3/dist-packages/imageio/resources/images/chelsea.png"},
    {"photo", ASTRONAUT},
  };
  const char *dir = getenv("AR_GOLDEN_Q_DIR");
  char path[1024], msg[AR_MSG_BYTES];
  snprintf(path, sizeof(path), "%s/yolov8n_coco_416_full_integer_quant/%s/input_0.bin",
           dir && *dir ? dir : AR_SRCDIR "/../shared/golden_q", cases[_i].cas);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    printf("check_cli: %s absent: skipped\n", path);
    return;
  }
  static uint8_t want[416 * 416 * 3 + 1];
  size_t got = fread(want, 1, sizeof(want), f);
  fclose(f);
  ck_assert_uint_eq(got, 416 * 416 * 3);
  ar_cli_image_opts_t io;
  ar_cli_result_opts_t ro;
  ar_cli_opts_init(&io, &ro);
  io.path = cases[_i].image;
  ck_assert_int_eq(ar_cli_parse_opt("t", 'B', "114", &io, &ro), 1);
  ar_cli_tensor_t desc = {.name = "images", .dtype = 9, .rank = 4, .dims = {1, 416, 416, 3}, .has_quant = true,
                          .scale = 1.0f / 255, .zero_point = -128};
  void *d = NULL;
  uint64_t n = 0;
  ck_assert_int_eq(ar_cli_image_input(&io, &desc, &d, &n, NULL, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(n, got);
  size_t diff = 0;
  for (size_t i = 0; i < n; i++) diff += ((uint8_t *)d)[i] != want[i];
  ck_assert_msg(diff == 0, "yolo %s: %zu of %zu bytes differ", cases[_i].cas, diff, (size_t)n);
  free(d);
}
END_TEST

START_TEST(shared_options) {
  ar_cli_image_opts_t io;
  ar_cli_result_opts_t ro;
  ar_cli_opts_init(&io, &ro);
  ck_assert_int_eq(ar_cli_parse_opt("t", 'L', "labels.txt", &io, &ro), 1);
  ck_assert_int_eq(ar_cli_parse_opt("t", 'x', NULL, &io, &ro), 0);
  ck_assert_int_eq(ar_cli_parse_opt("t", 'k', "0", &io, &ro), -1);
  ck_assert_int_eq(ar_cli_opts_finish("t", &ro), 0);
  ck_assert_int_eq(ro.top, 5);            /* --labels alone: the top 5 */
  ck_assert_int_eq(ro.label_offset, 0);
  ar_cli_opts_init(&io, &ro);
  ck_assert_int_eq(ar_cli_parse_opt("t", 'D', NULL, &io, &ro), 1);
  ck_assert_int_eq(ar_cli_opts_finish("t", &ro), 0);
  ck_assert_int_eq(ro.label_offset, 1);   /* SSD label maps: class c is line c + 1 */
  ck_assert_int_eq(ar_cli_parse_opt("t", 'k', "3", &io, &ro), 1);
  ck_assert_int_eq(ar_cli_opts_finish("t", &ro), -1);   /* --top with --detections */
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("cli_tensor");
  tcase_add_test(tc, values_are_dequantized);
  tcase_add_test(tc, labels_lines_crlf_and_last_line);
  tcase_add_test(tc, top_k_quantized_with_ties);
  tcase_add_test(tc, detection_rows_threshold_and_pixels);
  tcase_add_test(tc, image_input_uint8_and_int8);
  tcase_add_test(tc, shared_options);
  tcase_add_loop_test(tc, yolo_letterbox_border_equals_golden_input, 0, 2);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
