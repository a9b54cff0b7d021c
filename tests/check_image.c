/* check_image.c - clients/image.c: decoding, Pillow-compatible resampling, fit and value range.
 *
 * Expected numbers were read independently with Debian's python3-imageio and Pillow 9.4:
 *   a = imageio.imread(".../imageio/resources/images/astronaut.png"); Image.fromarray(a).resize(...)
 * and the golden photo inputs in tests/golden/<model>/photo/input_0.bin were made from the same
 * photograph with Pillow 9.4 BILINEAR, so image -> tensor must reproduce them bit for bit.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <jpeglib.h> /* needs stdio.h first */
#include <png.h>
#include <string.h>
#include <unistd.h>

#include "clients/image.h"
#include "common/ar_error.h"
#include "tests/ar_test_util.h"

#define ASTRONAUT "/usr/lib/python3/dist-packages/imageio/resources/images/astronaut.png"
#define CHELSEA "/usr/lib/python3/dist-packages/imageio/resources/images/chelsea.png"

static char tmpdir[128];
static void setup(void) {
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_image.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}
static void teardown(void) {
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
  ck_assert_int_eq(system(cmd), 0);
}

static const uint8_t *px(const ar_image_t *img, uint32_t y, uint32_t x) {
  return img->rgb + ((size_t)y * img->width + x) * 3;
}

START_TEST(png_decodes_astronaut) {
  ar_image_t img;
  char msg[AR_MSG_BYTES];
  int rc = ar_image_load(ASTRONAUT, &img, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_uint_eq(img.width, 512);
  ck_assert_uint_eq(img.height, 512);
  static const struct { uint32_t y, x; uint8_t rgb[3]; } want[] = {
    {0, 0, {154, 147, 151}}, {100, 200, {81, 57, 17}}, {511, 511, {0, 0, 0}},
    {256, 10, {128, 15, 21}}, {300, 400, {0, 0, 0}},
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    ck_assert_msg(memcmp(px(&img, want[i].y, want[i].x), want[i].rgb, 3) == 0, "pixel (%u,%u)", want[i].y,
                  want[i].x);
  uint64_t sum = 0;
  for (size_t i = 0; i < (size_t)512 * 512 * 3; i++) sum += img.rgb[i];
  ck_assert_uint_eq(sum, 90124324);  /* imageio: a.sum() */
  ar_image_free(&img);
  ck_assert_ptr_null(img.rgb);
}
END_TEST

/* The goldens' photo inputs: model, tensor side, range, fit, crop (NULL = whole photo). */
static const struct {
  const char *model;
  uint32_t side;
  float lo, hi;
  ar_image_fit_t fit;
  int crop; /* 1: [40,312,240,512] as in hand_landmark_lite's meta.json */
} golden[] = {
  {"face_detection_short_range", 128, -1.f, 1.f, AR_IMAGE_FIT_LETTERBOX, 0},
  {"selfie_segmentation", 256, 0.f, 1.f, AR_IMAGE_FIT_STRETCH, 0},
  {"palm_detection_lite", 192, 0.f, 1.f, AR_IMAGE_FIT_LETTERBOX, 0},
  {"hand_landmark_lite", 224, 0.f, 1.f, AR_IMAGE_FIT_LETTERBOX, 1},
};

START_TEST(tensor_equals_golden_photo_input) {
  ar_image_t img;
  char msg[AR_MSG_BYTES], path[1024];
  ck_assert_int_eq(ar_image_load(ASTRONAUT, &img, msg, sizeof(msg)), 0);
  uint32_t s = golden[_i].side;
  size_t n = (size_t)s * s * 3;
  float *t = malloc(n * sizeof(float));
  ar_image_rect_t crop = {40, 312, 240, 512}, placed;
  int rc = ar_image_fill_tensor(&img, golden[_i].crop ? &crop : NULL, s, s, golden[_i].fit, golden[_i].lo,
                                golden[_i].hi, t, &placed, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_uint_eq(placed.left, 0);
  ck_assert_uint_eq(placed.right, s);
  snprintf(path, sizeof(path), "%s/%s/photo/input_0.bin", ar_test_golden_dir(), golden[_i].model);
  size_t bytes = 0;
  float *want = ar_test_read_file(path, &bytes);
  ck_assert_ptr_nonnull(want);
  ck_assert_uint_eq(bytes, n * sizeof(float));
  size_t diff = 0;
  for (size_t i = 0; i < n; i++) diff += t[i] != want[i];
  ck_assert_msg(diff == 0, "%s: %zu of %zu values differ from the golden input", golden[_i].model, diff, n);
  free(want);
  free(t);
  ar_image_free(&img);
}
END_TEST

/* What the tensor holds for an 8-bit pixel: float32 v * sc, rounded, then + lo, as the library
 * computes it. Written as one expression, GCC fuses it into a multiply-add where the target has
 * one (aarch64: fmadd), which rounds once and differs in the last bit. */
static float pixel_value(int v, float sc, float lo) {
  volatile float prod = (float)v * sc;
  return prod + lo;
}

START_TEST(integer_codes_of_pixels) {
  const float pix[6] = {0, 64, 127, 128, 200, 255};
  uint8_t out[6];
  /* No range: the pixels themselves (uint8), or shifted by -128 (int8). */
  ar_image_coding_t c = {.is_signed = false};
  ar_image_code_pixels(pix, 6, &c, out);
  const uint8_t u[6] = {0, 64, 127, 128, 200, 255};
  ck_assert_mem_eq(out, u, 6);
  c.is_signed = true;
  ar_image_code_pixels(pix, 6, &c, out);
  const int8_t s8[6] = {-128, -64, -1, 0, 72, 127};
  ck_assert_mem_eq(out, s8, 6);
  /* Range -1,1 into uint8 with scale 1/128, zero point 128: real = p * (2/255) - 1, then
   * round(real * 128) + 128: 0 -> -128+128 = 0; 64 -> -.49804 * 128 = -63.75 -> -64 -> 64;
   * 127 -> -.00392 * 128 = -.502 -> -1 -> 127; 128 -> .502 -> 1 -> 129; 200 -> .56863 * 128 =
   * 72.78 -> 73 -> 201; 255 -> 128 + 128 = 256, saturated to 255. */
  c = (ar_image_coding_t){.has_range = true, .lo = -1, .hi = 1, .has_quant = true, .scale = 1.0f / 128,
                          .zero_point = 128};
  ar_image_code_pixels(pix, 6, &c, out);
  const uint8_t r[6] = {0, 64, 127, 129, 201, 255};
  ck_assert_mem_eq(out, r, 6);
  /* Range 0,1 into int8 with scale 1/255, zero point -128: q = p - 128 again (ties cannot occur). */
  c = (ar_image_coding_t){.is_signed = true, .has_range = true, .lo = 0, .hi = 1, .has_quant = true,
                          .scale = 1.0f / 255, .zero_point = -128};
  ar_image_code_pixels(pix, 6, &c, out);
  ck_assert_mem_eq(out, s8, 6);
  /* No quantization, range 0,2: round(2p/255): 64 -> .50196 -> 1, 200 -> 1.5686 -> 2. */
  c = (ar_image_coding_t){.has_range = true, .lo = 0, .hi = 2};
  ar_image_code_pixels(pix, 6, &c, out);
  const uint8_t n2[6] = {0, 1, 1, 1, 2, 2};
  ck_assert_mem_eq(out, n2, 6);
}
END_TEST

/* The quantized goldens' image inputs (../shared/golden_q, when present): stretched RGB, q = pixel
 * (uint8); the person detector's gray int8, q = L - 128. */
static const struct {
  const char *model, *cas, *image;
  uint32_t side;
} golden_q[] = {
  {"coral_mobilenet_v2_1.0_224_quant", "photo", CHELSEA, 224},
  {"coral_mobilenet_v1_0.25_128_quant", "photo", CHELSEA, 128},
  {"ssd_mobilenet_v1_coco_quant_postprocess", "photo", ASTRONAUT, 300},
  {"ssd_mobilenet_v1_coco_quant_postprocess", "cat", CHELSEA, 300},
  {"tflm_person_detect", "photo", ASTRONAUT, 96},   /* gray: Pillow's "L", int8 q = L - 128 */
};

START_TEST(codes_equal_quantized_golden_inputs) {
  const char *dir = getenv("AR_GOLDEN_Q_DIR");
  char path[1024], msg[AR_MSG_BYTES];
  snprintf(path, sizeof(path), "%s/%s/%s/input_0.bin", dir && *dir ? dir : AR_SRCDIR "/../shared/golden_q",
           golden_q[_i].model, golden_q[_i].cas);
  size_t bytes = 0;
  uint8_t *want = ar_test_read_file(path, &bytes);
  if (want == NULL) {
    printf("check_image: %s absent: skipped\n", path);
    return;
  }
  ar_image_t img;
  ck_assert_int_eq(ar_image_load(golden_q[_i].image, &img, msg, sizeof(msg)), 0);
  const uint32_t s = golden_q[_i].side;
  const bool gray = s == 96;
  size_t n = (size_t)s * s * 3;
  ck_assert_uint_eq(bytes, gray ? n / 3 : n);
  if (gray) ar_image_to_gray(&img);
  float *t = malloc(n * sizeof(float));
  uint8_t *q = malloc(n);
  ck_assert_int_eq(ar_image_fill_tensor(&img, NULL, s, s, AR_IMAGE_FIT_STRETCH, 0, 255, t, NULL, msg, sizeof(msg)), 0);
  if (gray) {
    n /= 3;
    for (size_t i = 0; i < n; i++) t[i] = t[3 * i];
  }
  const ar_image_coding_t c = {.is_signed = gray};
  ar_image_code_pixels(t, n, &c, q);
  size_t diff = 0;
  for (size_t i = 0; i < n; i++) diff += q[i] != want[i];
  ck_assert_msg(diff == 0, "%s/%s: %zu of %zu bytes differ", golden_q[_i].model, golden_q[_i].cas, diff, n);
  free(q);
  free(t);
  free(want);
  ar_image_free(&img);
}
END_TEST

START_TEST(letterbox_centres_and_borders_are_black) {
  ar_image_t img;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_image_load(ASTRONAUT, &img, msg, sizeof(msg)), 0);
  ar_image_rect_t wide = {0, 0, 512, 256}, placed;  /* 2:1 crop into a square tensor */
  float *t = malloc(128 * 128 * 3 * sizeof(float));
  for (int r = 0; r < 2; r++) {
    float lo = r ? -1.f : 0.f;
    ck_assert_int_eq(ar_image_fill_tensor(&img, &wide, 128, 128, AR_IMAGE_FIT_LETTERBOX, lo, 1.f, t, &placed, msg,
                                          sizeof(msg)), 0);
    ck_assert_uint_eq(placed.left, 0);
    ck_assert_uint_eq(placed.right, 128);
    ck_assert_uint_eq(placed.top, 32);
    ck_assert_uint_eq(placed.bottom, 96);
    for (int y = 0; y < 128; y++)
      for (int x = 0; x < 128 * 3; x++)
        if (y < 32 || y >= 96) ck_assert_msg(t[y * 384 + x] == lo, "border (%d,%d) = %g", y, x / 3, t[y * 384 + x]);
    /* Content: Pillow crop((0,0,512,256)).resize((128,64)) at (y,x) = (0,0) and (40,100), and its sum. */
    float sc = (float)((1.0 - lo) / 255.0);
    ck_assert_float_eq(t[(32 * 128 + 0) * 3 + 0], pixel_value(163, sc, lo));
    ck_assert_float_eq(t[(32 * 128 + 0) * 3 + 2], pixel_value(164, sc, lo));
    ck_assert_float_eq(t[((32 + 40) * 128 + 100) * 3 + 1], pixel_value(154, sc, lo));
    ck_assert_float_eq(t[((32 + 63) * 128 + 127) * 3 + 0], pixel_value(143, sc, lo));
    if (r == 0) {
      double sum = 0;
      for (int i = 32 * 384; i < 96 * 384; i++) sum += lroundf(t[i] * 255.f);
      ck_assert_double_eq(sum, 3496066);
    }
  }
  free(t);
  ar_image_free(&img);
}
END_TEST

START_TEST(stretch_mixed_up_and_down_scaling_matches_pillow) {
  ar_image_t img;
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_image_load(ASTRONAUT, &img, msg, sizeof(msg)), 0);
  uint8_t *out = malloc(700 * 300 * 3);
  ck_assert_int_eq(ar_image_resize_rgb8(&img, NULL, 700, 300, out), 0);  /* wider, shorter */
  const uint8_t a[3] = {165, 158, 161}, b[3] = {23, 18, 11}, c[3] = {0, 0, 0};
  ck_assert_int_eq(memcmp(out, a, 3), 0);
  ck_assert_int_eq(memcmp(out + (150 * 700 + 350) * 3, b, 3), 0);
  ck_assert_int_eq(memcmp(out + (299 * 700 + 699) * 3, c, 3), 0);
  uint64_t sum = 0;
  for (size_t i = 0; i < (size_t)700 * 300 * 3; i++) sum += out[i];
  ck_assert_uint_eq(sum, 72199430);  /* Pillow: resize((700,300), BILINEAR) sum */
  free(out);
  ar_image_free(&img);
}
END_TEST

START_TEST(value_ranges) {
  /* A 1x2 image: black and white. 0 -> lo, 255 -> hi exactly, for both model conventions. */
  uint8_t rgb[6] = {0, 0, 0, 255, 255, 255};
  ar_image_t img = {2, 1, rgb};
  float t[6];
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_image_fill_tensor(&img, NULL, 1, 2, AR_IMAGE_FIT_STRETCH, 0.f, 1.f, t, NULL, msg, sizeof(msg)), 0);
  ck_assert_float_eq(t[0], 0.f);
  ck_assert_float_eq(t[3], 1.f);
  ck_assert_int_eq(ar_image_fill_tensor(&img, NULL, 1, 2, AR_IMAGE_FIT_STRETCH, -1.f, 1.f, t, NULL, msg, sizeof(msg)), 0);
  ck_assert_float_eq(t[0], -1.f);
  ck_assert_float_eq_tol(t[3], 1.f, 1e-6f);
  float lo, hi;
  ck_assert_int_eq(ar_image_parse_range("-1,1", &lo, &hi), 0);
  ck_assert(lo == -1.f && hi == 1.f);
  ck_assert_int_eq(ar_image_parse_range("0,255", &lo, &hi), 0);
  ck_assert(lo == 0.f && hi == 255.f);
  ck_assert_int_eq(ar_image_parse_range("1,0", &lo, &hi), AR_EINVAL);
  ck_assert_int_eq(ar_image_parse_range("0;1", &lo, &hi), AR_EINVAL);
  ck_assert_int_eq(ar_image_parse_range("0,1x", &lo, &hi), AR_EINVAL);
  ar_image_fit_t fit;
  ck_assert_int_eq(ar_image_parse_fit("letterbox", &fit), 0);
  ck_assert_int_eq(fit, AR_IMAGE_FIT_LETTERBOX);
  ck_assert_int_eq(ar_image_parse_fit("crop", &fit), AR_EINVAL);
  ar_image_rect_t r;
  ck_assert_int_eq(ar_image_parse_rect("40,312,240,512", &r), 0);
  ck_assert(r.left == 40 && r.top == 312 && r.right == 240 && r.bottom == 512);
  ck_assert_int_eq(ar_image_parse_rect("40,312,40,512", &r), AR_EINVAL);
  ck_assert_int_eq(ar_image_parse_rect("1,2,3", &r), AR_EINVAL);
  /* Bad requests are errors, not crashes. */
  ar_image_rect_t outside = {0, 0, 3, 1};
  ck_assert_int_eq(ar_image_fill_tensor(&img, &outside, 1, 1, AR_IMAGE_FIT_STRETCH, 0.f, 1.f, t, NULL, msg, sizeof(msg)),
                   AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(msg, "crop 0,0,3,1"));
  ck_assert_int_eq(ar_image_fill_tensor(&img, NULL, 0, 2, AR_IMAGE_FIT_STRETCH, 0.f, 1.f, t, NULL, msg, sizeof(msg)),
                   AR_EINVAL);
}
END_TEST

/* Write the astronaut as a JPEG with libjpeg (quality 95) and decode it back. */
START_TEST(jpeg_round_trip) {
  ar_image_t img, back;
  char msg[AR_MSG_BYTES], path[256];
  ck_assert_int_eq(ar_image_load(ASTRONAUT, &img, msg, sizeof(msg)), 0);
  snprintf(path, sizeof(path), "%s/astronaut.jpg", tmpdir);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr jerr;
  c.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = img.width;
  c.image_height = img.height;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 95, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = img.rgb + (size_t)c.next_scanline * img.width * 3;
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  fclose(f);
  int rc = ar_image_load(path, &back, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_uint_eq(back.width, 512);
  ck_assert_uint_eq(back.height, 512);
  double err = 0;
  for (size_t i = 0; i < (size_t)512 * 512 * 3; i++) err += fabs((double)back.rgb[i] - img.rgb[i]);
  err /= 512.0 * 512 * 3;
  ck_assert_msg(err < 3.0, "mean abs error %.2f after a quality-95 round trip", err);
  /* Truncated JPEG: an error naming the file, never a crash. */
  ck_assert_int_eq(truncate(path, 600), 0);
  ar_image_free(&back);
  rc = ar_image_load(path, &back, msg, sizeof(msg));
  if (rc == 0) {
    /* libjpeg-turbo pads a truncated scan with grey and warns: the size must still be right. */
    ck_assert_uint_eq(back.width, 512);
    ar_image_free(&back);
  } else {
    ck_assert_int_eq(rc, AR_EINVAL);
    ck_assert_ptr_nonnull(strstr(msg, "bad JPEG"));
  }
  ar_image_free(&img);
}
END_TEST

/* A 3x2 8-bit grayscale PNG with alpha, written with libpng: expanded to RGB, alpha dropped. */
START_TEST(gray_alpha_png_expands_to_rgb) {
  char path[256], msg[AR_MSG_BYTES];
  snprintf(path, sizeof(path), "%s/gray.png", tmpdir);
  png_image pi;
  memset(&pi, 0, sizeof(pi));
  pi.version = PNG_IMAGE_VERSION;
  pi.width = 3;
  pi.height = 2;
  pi.format = PNG_FORMAT_GA;
  const uint8_t ga[12] = {0, 255, 10, 0, 20, 128, 30, 255, 200, 7, 255, 255};
  ck_assert_int_ne(png_image_write_to_file(&pi, path, 0, ga, 0, NULL), 0);
  ar_image_t img;
  ck_assert_int_eq(ar_image_load(path, &img, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(img.width, 3);
  ck_assert_uint_eq(img.height, 2);
  for (int i = 0; i < 6; i++)
    for (int ch = 0; ch < 3; ch++) ck_assert_uint_eq(img.rgb[i * 3 + ch], ga[i * 2]);
  ar_image_free(&img);
}
END_TEST

START_TEST(bad_files_are_errors) {
  char path[256], msg[AR_MSG_BYTES];
  ar_image_t img;
  ck_assert_int_eq(ar_image_load("/nonexistent/x.png", &img, msg, sizeof(msg)), AR_ENOENT);
  snprintf(path, sizeof(path), "%s/text.png", tmpdir);
  FILE *f = fopen(path, "w");
  fputs("this is not an image\n", f);
  fclose(f);
  ck_assert_int_eq(ar_image_load(path, &img, msg, sizeof(msg)), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(msg, "not a PNG or JPEG"));
  /* The astronaut cut after 5000 bytes: libpng reports the truncation. */
  size_t n = 0;
  uint8_t *bytes = ar_test_read_file(ASTRONAUT, &n);
  ck_assert_ptr_nonnull(bytes);
  snprintf(path, sizeof(path), "%s/cut.png", tmpdir);
  f = fopen(path, "wb");
  fwrite(bytes, 1, 5000, f);
  fclose(f);
  free(bytes);
  ck_assert_int_eq(ar_image_load(path, &img, msg, sizeof(msg)), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(msg, "bad PNG"));
  ck_assert_ptr_null(img.rgb);
}
END_TEST

int main(void) {
  if (access(ASTRONAUT, R_OK) != 0) {
    printf("%s missing (apt-get install python3-imageio): skipping\n", ASTRONAUT);
    return 77;
  }
  Suite *s = suite_create("image");
  TCase *tc = tcase_create("image");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, png_decodes_astronaut);
  tcase_add_loop_test(tc, tensor_equals_golden_photo_input, 0, (int)(sizeof(golden) / sizeof(golden[0])));
  tcase_add_test(tc, letterbox_centres_and_borders_are_black);
  tcase_add_test(tc, stretch_mixed_up_and_down_scaling_matches_pillow);
  tcase_add_test(tc, value_ranges);
  tcase_add_test(tc, jpeg_round_trip);
  tcase_add_test(tc, gray_alpha_png_expands_to_rgb);
  tcase_add_test(tc, bad_files_are_errors);
  tcase_add_test(tc, integer_codes_of_pixels);
  tcase_add_loop_test(tc, codes_equal_quantized_golden_inputs, 0, (int)(sizeof(golden_q) / sizeof(golden_q[0])));
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
