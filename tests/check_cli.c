/* check_cli.c - clients/cli_tensor.c, arenactl's result printing: dequantized values, labels
 * files, the top K classes of a classifier (ties, quantized codes), detection rows (score
 * threshold, count, label offset, boxes mapped back to photo pixels through stretch and
 * letterbox), and an integer image input from a photograph. Values are hand-computed.
 * clients/cli_io.c: raw inputs from files, /dev/zero and pipes (read up to the tensor's size), the
 * --output directory (created one level). The arenactl program: --help lists every option of
 * every command (taken from the commands' option tables) as docs/arenactl.1 and README do, and,
 * against a real arenad, `invoke --input /dev/zero` / a short pipe / `--output NEW_DIR`, `run` the
 * same, and `load` of a path relative to the current directory; `bench` on real models (every
 * figure printed, --json parsed with ordered percentiles, a profile row per operator with
 * inspect's types) and its refusals of bad requests.
 */
#include "config.h"   /* PACKAGE_VERSION */

#include <check.h>
#include <jansson.h>
#include <limits.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jansson.h>

#include "clients/cli_io.h"
#include "clients/cli_stats.h"
#include "clients/cli_tensor.h"
#include "common/ar_error.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_model.h"
#include "tests/ar_test_util.h"

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

/* Which output --top ranks: a detector's four outputs are refused pointing at --detections (before,
 * --top silently ranked output 0, the boxes); among several outputs the one of a classifier's [1,C]
 * shape; none or several such: refused listing the outputs and --output-index; --output-index
 * chooses, in range. */
START_TEST(top_reads_the_scores_output_or_says_which) {
  char msg[AR_MSG_BYTES];
  ar_cli_tensor_t o[4];
  det_outputs(o);
  o[0].name = "boxes", o[1].name = "classes", o[2].name = "scores", o[3].name = "count";
  ck_assert_int_eq(ar_cli_top_output(o, 4, -1, msg, sizeof msg), AR_EINVAL);
  ck_assert_str_eq(msg, "--top reads a classifier's class scores, and these 4 outputs are a detector's "
                        "(TFLite_Detection_PostProcess: boxes, classes, scores, count): use --detections, or "
                        "--output-index J to rank output J's values");
  ck_assert_int_eq(ar_cli_top_output(o, 4, 2, msg, sizeof msg), 2);
  ck_assert_int_eq(ar_cli_top_output(o, 4, 4, msg, sizeof msg), AR_EINVAL);
  ck_assert_str_eq(msg, "--output-index 4: the model has 4 output(s), 0..3");
  /* Raw SSD heads, [1,3,4] and [1,3,1]: neither is a classifier's. */
  ar_cli_tensor_t raw[2] = {o[0], o[0]};
  raw[0].name = "regressors";
  raw[1] = (ar_cli_tensor_t){.name = "classificators", .dtype = 0, .rank = 3, .dims = {1, 3, 1}, .data = d_classes,
                             .bytes = sizeof(d_classes)};
  ck_assert_int_eq(ar_cli_top_output(raw, 2, -1, msg, sizeof msg), AR_EINVAL);
  ck_assert_str_eq(msg, "--top: the model has 2 outputs and none of them is a classifier's scores ([C], [1,C]) "
                        "(0 'regressors' [1,3,4], 1 'classificators' [1,3,1]): --output-index J says which output "
                        "--top ranks");
  /* A classifier with an extra output: its [1,3] scores are output 1. */
  ar_cli_tensor_t cls[2] = {raw[0], o[2]};
  ck_assert_int_eq(ar_cli_top_output(cls, 2, -1, msg, sizeof msg), 1);
  /* Two of classifier shape: ambiguous. */
  ar_cli_tensor_t two[2] = {o[1], o[2]};
  ck_assert_int_eq(ar_cli_top_output(two, 2, -1, msg, sizeof msg), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(msg, "more than one of them is a classifier's scores ([C], [1,C]) (0 'classes' [1,3], "
                                    "1 'scores' [1,3])"));
  /* One output: that one, whatever its shape. */
  ck_assert_int_eq(ar_cli_top_output(raw, 1, -1, msg, sizeof msg), 0);
}
END_TEST

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


/* ---- clients/cli_io.c ------------------------------------------------------------------------ */

START_TEST(stream_inputs_are_read_up_to_the_tensor_size) {
  char msg[AR_MSG_BYTES];
  void *d = NULL;
  uint64_t n = 0;
  /* /dev/zero: st_size 0, yet exactly the tensor's 1000 bytes, all zero. */
  ck_assert_int_eq(ar_cli_read_input("/dev/zero", "x", 1000, &d, &n, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(n, 1000);
  for (int i = 0; i < 1000; i++) ck_assert_uint_eq(((uint8_t *)d)[i], 0);
  free(d);
  /* A pipe holding 20 bytes for a 16-byte tensor: 16 read, 4 left in the pipe. */
  int fds[2];
  char path[64];
  ck_assert_int_eq(pipe(fds), 0);
  ck_assert_int_eq(write(fds[1], "abcdefghijklmnopqrst", 20), 20);
  close(fds[1]);
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
  ck_assert_int_eq(ar_cli_read_input(path, "x", 16, &d, &n, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(n, 16);
  ck_assert_int_eq(memcmp(d, "abcdefghijklmnop", 16), 0);
  free(d);
  char rest[8];
  ck_assert_int_eq(read(fds[0], rest, sizeof(rest)), 4);
  ck_assert_int_eq(memcmp(rest, "qrst", 4), 0);
  close(fds[0]);
  /* A pipe that ends early: refused, naming both sizes and the input. */
  ck_assert_int_eq(pipe(fds), 0);
  ck_assert_int_eq(write(fds[1], "0123456789", 10), 10);
  close(fds[1]);
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
  ck_assert_int_eq(ar_cli_read_input(path, "image", 16, &d, &n, msg, sizeof(msg)), AR_ESHAPE);
  ck_assert_ptr_null(d);
  char want[160];
  snprintf(want, sizeof(want), "%s ended after 10 bytes; input 'image' needs 16 bytes", path);
  ck_assert_str_eq(msg, want);
  close(fds[0]);
  /* A stream for a tensor of unknown size is refused rather than read forever. */
  ck_assert_int_eq(ar_cli_read_input("/dev/zero", "y", 0, &d, &n, msg, sizeof(msg)), AR_EINVAL);
  ck_assert_ptr_nonnull(strstr(msg, "/dev/zero is not a regular file and the size of input 'y' is not known"));
  /* A regular file must hold the tensor's size: another size is refused naming both sizes, before
   * any of it is read; with the size not known (0) it is read whole. */
  char file[] = "/tmp/check_cli_input_XXXXXX";
  int fd = mkstemp(file);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, "12345", 5), 5);
  ck_assert_int_eq(ar_cli_read_input(file, "x", 5, &d, &n, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(n, 5);
  ck_assert_int_eq(memcmp(d, "12345", 5), 0);
  free(d);
  ck_assert_int_eq(ar_cli_read_input(file, "x", 0, &d, &n, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(n, 5);
  free(d);
  ck_assert_int_eq(ar_cli_read_input(file, "x", 16, &d, &n, msg, sizeof(msg)), AR_ESHAPE);
  ck_assert_ptr_null(d);
  snprintf(want, sizeof(want), "%s holds 5 bytes; input 'x' needs 16 bytes", file);
  ck_assert_str_eq(msg, want);
  /* 8 GiB (sparse): refused from its size; reading it would have needed 8 GiB of memory. */
  ck_assert_int_eq(ftruncate(fd, (off_t)8 << 30), 0);
  close(fd);
  ck_assert_int_eq(ar_cli_read_input(file, "x", 16, &d, &n, msg, sizeof(msg)), AR_ESHAPE);
  ck_assert_ptr_null(d);
  snprintf(want, sizeof(want), "%s holds 8589934592 bytes; input 'x' needs 16 bytes", file);
  ck_assert_str_eq(msg, want);
  unlink(file);
  ck_assert_int_eq(ar_cli_read_input(file, "x", 16, &d, &n, msg, sizeof(msg)), AR_ENOENT);
  ck_assert_ptr_nonnull(strstr(msg, file));
  ck_assert_int_eq(ar_cli_read_input("/tmp", "x", 16, &d, &n, msg, sizeof(msg)), AR_EIO);
  ck_assert_str_eq(msg, "cannot read /tmp: Is a directory");
}
END_TEST

START_TEST(output_dir_is_created_one_level) {
  char base[] = "/tmp/check_cli_out_XXXXXX", dir[128], deep[160], msg[AR_MSG_BYTES];
  ck_assert_ptr_nonnull(mkdtemp(base));
  snprintf(dir, sizeof(dir), "%s/new", base);
  mode_t um = umask(022);
  ck_assert_int_eq(ar_cli_output_dir(dir, msg, sizeof(msg)), 0);
  umask(um);
  struct stat st;
  ck_assert_int_eq(stat(dir, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
  ck_assert_uint_eq(st.st_mode & 07777, 0755);
  ck_assert_int_eq(ar_cli_output_dir(dir, msg, sizeof(msg)), 0);   /* existing: used as it is */
  /* Two missing levels: refused, naming the directory. */
  snprintf(deep, sizeof(deep), "%s/a/b", base);
  ck_assert_int_eq(ar_cli_output_dir(deep, msg, sizeof(msg)), AR_ENOENT);
  char want[320];
  snprintf(want, sizeof(want), "cannot create output directory %s: its parent directory does not exist (one level "
           "is created)", deep);
  ck_assert_str_eq(msg, want);
  /* A file in the way. */
  snprintf(deep, sizeof(deep), "%s/file", base);
  FILE *f = fopen(deep, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  ck_assert_int_eq(ar_cli_output_dir(deep, msg, sizeof(msg)), AR_EEXIST);
  snprintf(want, sizeof(want), "output directory %s: exists and is not a directory", deep);
  ck_assert_str_eq(msg, want);
  unlink(deep);
  /* An empty name; a parent that exists but takes no directories (/proc: mkdir says ENOENT) is
   * not reported as missing. */
  ck_assert_int_eq(ar_cli_output_dir("", msg, sizeof(msg)), AR_EINVAL);
  ck_assert_str_eq(msg, "the output directory name is empty");
  ck_assert_int_eq(ar_cli_output_dir("/proc/arenactl_check_cli", msg, sizeof(msg)), AR_EIO);
  ck_assert_str_eq(msg, "cannot create output directory /proc/arenactl_check_cli: No such file or directory");
  rmdir(dir);
  rmdir(base);
}
END_TEST

/* stats --watch's rates: counter differences over the client's interval. face: 150 invokes (3 of
 * them errors, 30 dropped) in 2 s, latency sum +120000 us over 150 -> mean 800; mnv2 idle (no
 * invoke: mean "-"); yolo new since the last refresh; ssd's counters went down (reloaded). */
START_TEST(watch_rates_between_two_documents) {
  json_error_t e;
  json_t *prev = json_loads(
      "{\"daemon\": {\"requests\": 1000}, \"models\": ["
      "{\"name\": \"face\", \"invokes\": 50, \"errors\": 1, \"dropped\": 0, \"latency_us\": {\"count\": 50, \"sum\": 40000}},"
      "{\"name\": \"mnv2\", \"invokes\": 7, \"errors\": 0, \"dropped\": 0, \"latency_us\": {\"count\": 7, \"sum\": 700}},"
      "{\"name\": \"ssd\", \"invokes\": 90, \"errors\": 0, \"dropped\": 0, \"latency_us\": {\"count\": 90, \"sum\": 900}}]}",
      0, &e);
  ck_assert_msg(prev != NULL, "%s", e.text);
  json_t *cur = json_loads(
      "{\"daemon\": {\"requests\": 1205}, \"models\": ["
      "{\"name\": \"face\", \"invokes\": 200, \"errors\": 4, \"dropped\": 30, \"latency_us\": {\"count\": 200, \"sum\": 160000}},"
      "{\"name\": \"mnv2\", \"invokes\": 7, \"errors\": 0, \"dropped\": 0, \"latency_us\": {\"count\": 7, \"sum\": 700}},"
      "{\"name\": \"yolo\", \"invokes\": 3, \"errors\": 0, \"dropped\": 0, \"latency_us\": {\"count\": 3, \"sum\": 30}},"
      "{\"name\": \"ssd\", \"invokes\": 2, \"errors\": 0, \"dropped\": 0, \"latency_us\": {\"count\": 2, \"sum\": 20}}]}",
      0, &e);
  ck_assert_msg(cur != NULL, "%s", e.text);
  FILE *f = mem();
  ar_cli_print_rates(f, prev, cur, 2.0);
  fclose(f);
  ck_assert_str_eq(out_buf,
                   "\nrates over the last 2.0 s: 102.5 requests/s\n"
                   "model                     invokes/s   errors/s  dropped/s    mean_us\n"
                   "face                           75.0        1.5       15.0        800\n"
                   "mnv2                            0.0        0.0        0.0          -\n"
                   "yolo                              -          -          -          -  new\n"
                   "ssd                               -          -          -          -  reloaded\n");
  f = mem();
  ar_cli_print_rates(f, NULL, cur, 0);
  fclose(f);
  ck_assert_str_eq(out_buf, "\nrates: from the next refresh on\n");
  json_decref(prev);
  json_decref(cur);
}
END_TEST

/* ---- the arenactl program -------------------------------------------------------------------- */

static char big[1 << 20];   /* a plan --json of a large model is ~200 KB */

/* Run `cmdline` through sh; captures up to sizeof(big)-1 bytes of stdout+stderr in big. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof(cmd), fmt, ap);
  va_end(ap);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t got = fread(big, 1, sizeof(big) - 1, p);
  big[got] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *builddir(void) {
  const char *b = getenv("AR_BUILDDIR");
  return b && *b ? b : AR_BUILDDIR;
}

static char *slurp(const char *path) {
  size_t n = 0;
  char *t = ar_test_read_file(path, &n);
  ck_assert_msg(t != NULL, "cannot read %s", path);
  char *z = realloc(t, n + 1);
  ck_assert_ptr_nonnull(z);
  z[n] = '\0';
  return z;
}

/* Does `text` hold the option `opt` ("--shm") as a whole word (not a prefix of --shm-x)? The man
 * page writes it as "\-\-shm". */
static bool has_option(const char *text, const char *opt, bool man) {
  char pat[96];
  if (man) {
    size_t o = 0;
    for (const char *c = opt; *c && o + 3 < sizeof(pat); c++) {
      if (*c == '-') pat[o++] = '\\';
      pat[o++] = *c;
    }
    pat[o] = '\0';
  } else {
    snprintf(pat, sizeof(pat), "%s", opt);
  }
  size_t n = strlen(pat);
  for (const char *p = strstr(text, pat); p; p = strstr(p + 1, pat)) {
    char after = p[n];
    if (man && after == '\\' && p[n + 1] == '-') continue;
    if (!(isalnum((unsigned char)after) || after == '-' || after == '_')) return true;
  }
  return false;
}

/* Every long option in the commands' getopt tables ({"name", no_argument|required_argument, ...}),
 * as "--name", into opts (returns the count). */
static int source_options(char opts[][40], int max) {
  static const char *const files[] = {"clients/cmd_inspect.c", "clients/cmd_ops.c", "clients/cmd_plan.c", "clients/cmd_run.c", "clients/cmd_bench.c",
                                      "clients/cmd_online.c", "clients/cli_tensor.h", "clients/arenactl.c"};
  int n = 0;
  for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", AR_SRCDIR, files[f]);
    char *src = slurp(path);
    for (char *p = strstr(src, "{\""); p; p = strstr(p + 2, "{\"")) {
      char name[32];
      int len = 0;
      if (sscanf(p + 2, "%31[a-z0-9-]\",%n", name, &len) != 1 || len == 0) continue;
      const char *q = p + 2 + len;
      while (*q == ' ') q++;
      if (strncmp(q, "no_argument", 11) != 0 && strncmp(q, "required_argument", 17) != 0) continue;
      bool seen = false;
      for (int i = 0; i < n; i++) seen |= strcmp(opts[i] + 2, name) == 0;
      if (!seen && n < max) snprintf(opts[n++], 40, "--%s", name);
    }
    free(src);
  }
  return n;
}

START_TEST(help_lists_every_command_and_option) {
  char opts[128][40];
  int n = source_options(opts, 128);
  ck_assert_int_ge(n, 29);   /* the tables were found: 29 distinct long options today */
  ck_assert_int_eq(sh("%s'%s/arenactl' --help 2>&1", ar_test_exec_prefix(), builddir()), 0);
  char *help = strdup(big);
  char path[1024];
  snprintf(path, sizeof(path), "%s/docs/arenactl.1", AR_SRCDIR);
  char *man = slurp(path);
  snprintf(path, sizeof(path), "%s/README.md", AR_SRCDIR);
  char *readme = slurp(path);
  for (int i = 0; i < n; i++) {
    ck_assert_msg(has_option(help, opts[i], false), "arenactl --help lacks %s:\n%s", opts[i], help);
    ck_assert_msg(has_option(man, opts[i], true), "docs/arenactl.1 lacks %s", opts[i]);
    if (strcmp(opts[i], "--help") != 0 && strcmp(opts[i], "--socket") != 0)
      ck_assert_msg(has_option(readme, opts[i], false), "README's arenactl section lacks %s", opts[i]);
  }
  /* The ones session 8 found missing, on their command's line. */
  ck_assert_ptr_nonnull(strstr(help, "inspect MODEL [--json] [--tensors]"));
  ck_assert_ptr_nonnull(strstr(help, "[--input-shape D,D,...]..."));
  ck_assert_ptr_nonnull(strstr(help, "invoke NAME --input F... | --image FILE [IMAGE] [--output DIR] [--shm]"));
  /* Every command, in the help, the man page and README; each answers --help with exit 0. */
  static const char *const cmds[] = {"inspect", "ops", "plan", "run", "bench", "ping", "stats", "models", "load",
                                     "unload", "compact", "reload", "invoke"};
  for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++) {
    char line[64];
    snprintf(line, sizeof(line), "\n  %s ", cmds[c]);
    bool in_help = strstr(help, line) != NULL;
    snprintf(line, sizeof(line), "\n  %s\n", cmds[c]);
    ck_assert_msg(in_help || strstr(help, line), "--help lacks command %s", cmds[c]);
    snprintf(line, sizeof(line), "arenactl %s", cmds[c]);
    ck_assert_msg(strstr(readme, line), "README lacks %s", line);
    snprintf(line, sizeof(line), ".B%s \"%s", "I", cmds[c]);
    bool in_man = strstr(man, line) != NULL;
    snprintf(line, sizeof(line), ".B %s\n", cmds[c]);
    in_man |= strstr(man, line) != NULL;
    snprintf(line, sizeof(line), "\\fB%s\\fR", cmds[c]);
    in_man |= strstr(man, line) != NULL;
    snprintf(line, sizeof(line), ".BR %s ", cmds[c]);
    in_man |= strstr(man, line) != NULL;
    ck_assert_msg(in_man, "docs/arenactl.1 lacks command %s", cmds[c]);
    int rc = sh("%s'%s/arenactl' %s --help 2>/dev/null", ar_test_exec_prefix(), builddir(), cmds[c]);
    ck_assert_msg(rc == 0 && strstr(big, "usage: arenactl"), "arenactl %s --help: exit %d, %s", cmds[c], rc, big);
  }
  free(help);
  free(man);
  free(readme);
}
END_TEST

/* A Unix socket bound at path, listening or not; returns its fd. */
static int bound_socket(const char *path, bool listening) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  if (listening) ck_assert_int_eq(listen(fd, 4), 0);
  return fd;
}

/* No daemon to talk to: the message says what to check, not just the errno. No socket file -> is
 * arenad running and how to name another socket (as the socket was chosen: -s, $ARENAD_SOCKET, the
 * default); a socket file nobody listens on -> that, too; a socket the user may not open -> the
 * socket's group to be in. The same hint in --json's message. Before: only "connect PATH: No such
 * file or directory (ECONN)". */
START_TEST(no_daemon_says_what_to_check) {
  char dir[] = "/tmp/check_cli_conn_XXXXXX", sock[128], want[512];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(sock, sizeof sock, "%s/arenad.sock", dir);
  const char *pre = ar_test_exec_prefix(), *bd = builddir();
  int rc = sh("%s'%s/arenactl' -s '%s' ping 2>&1", pre, bd, sock);
  ck_assert_int_eq(rc, 1);
  snprintf(want, sizeof want, "arenactl ping: connect %s: No such file or directory (ECONN): is arenad running? "
           "(systemctl status arenad; -s PATH names the socket)\n", sock);
  ck_assert_str_eq(big, want);
  rc = sh("ARENAD_SOCKET='%s' %s'%s/arenactl' models 2>&1", sock, pre, bd);
  ck_assert_int_eq(rc, 1);
  snprintf(want, sizeof want, "arenactl models: connect %s: No such file or directory (ECONN): is arenad running? "
           "(systemctl status arenad; the socket is $ARENAD_SOCKET's, -s PATH for another)\n", sock);
  ck_assert_str_eq(big, want);
  rc = sh("ARENAD_SOCKET='%s' %s'%s/arenactl' stats --json 2>&1", sock, pre, bd);
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(strstr(big, "\"code\": \"ECONN\"") && strstr(big, "No such file or directory: is arenad running?"),
                "%s", big);
  /* The default socket is named as such (it does not exist on a test machine: skip if it does). */
  if (access("/run/arenad/arenad.sock", F_OK) != 0) {
    rc = sh("env -u ARENAD_SOCKET %s'%s/arenactl' ping 2>&1", pre, bd);
    ck_assert_int_eq(rc, 1);
    ck_assert_msg(strstr(big, "(ECONN): is arenad running? (systemctl status arenad; -s PATH or $ARENAD_SOCKET for "
                              "another socket)\n"), "%s", big);
  }
  /* A socket file with no listener (a daemon killed without cleaning up). */
  int fd = bound_socket(sock, false);
  rc = sh("%s'%s/arenactl' -s '%s' ping 2>&1", pre, bd, sock);
  ck_assert_int_eq(rc, 1);
  snprintf(want, sizeof want, "arenactl ping: connect %s: Connection refused (ECONN): no daemon listens on this socket "
           "file (left by a daemon that stopped?): is arenad running? (systemctl status arenad; -s PATH names the "
           "socket)\n", sock);
  ck_assert_str_eq(big, want);
  close(fd);
  unlink(sock);
  /* Permission denied: a listening socket of mode 0660 in group "daemon" (gid 1 on Debian), and
   * arenactl run as nobody (root opens any socket: only as root can the test switch user). */
  /* nobody must reach arenactl: a build under a 0700 folder (mktemp -d) is not theirs to run. */
  bool nobody_runs = getuid() == 0 && access("/usr/bin/setpriv", X_OK) == 0 && getgrnam("daemon") != NULL &&
                     getpwnam("nobody") != NULL &&
                     sh("/usr/bin/setpriv --reuid=nobody --regid=nogroup --clear-groups /bin/sh -c "
                        "'test -x \"$0\"' '%s/arenactl' 2>&1", bd) == 0;
  if (!nobody_runs && getuid() == 0)
    printf("check_cli: %s/arenactl is not executable by nobody (a 0700 folder above it?): the EACCES hint is not "
           "checked\n", bd);
  if (nobody_runs) {
    fd = bound_socket(sock, true);
    ck_assert_int_eq(chmod(dir, 0755), 0);
    ck_assert_int_eq(chown(sock, 0, getgrnam("daemon")->gr_gid), 0);
    ck_assert_int_eq(chmod(sock, 0660), 0);
    rc = sh("/usr/bin/setpriv --reuid=nobody --regid=nogroup --clear-groups %s'%s/arenactl' -s '%s' ping 2>&1", pre,
            bd, sock);
    ck_assert_int_eq(rc, 1);
    snprintf(want, sizeof want, "arenactl ping: connect %s: Permission denied (ECONN): are you in the daemon group? "
             "(id -nG lists yours; `adduser $USER daemon` adds you, from your next login)\n", sock);
    ck_assert_str_eq(big, want);
    close(fd);
    unlink(sock);
  } else if (getuid() != 0) {
    printf("check_cli: not root: the permission-denied hint is not tried\n");
  }
  rmdir(dir);
}
END_TEST

/* The man pages' .TH lines carry the package's version and a full date (YYYY-MM-DD, not a bare
 * year: they said "2025" for a package of 2026). */
START_TEST(man_pages_are_dated_and_versioned) {
  static const char *const pages[] = {"docs/arenactl.1", "docs/arenad.8", "docs/arenad.json.5"};
  for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", AR_SRCDIR, pages[i]);
    char *text = slurp(path);
    char title[64], sect[8], date[32], ver[64];
    ck_assert_msg(sscanf(text, ".TH %63s %7s \"%31[^\"]\" \"%63[^\"]\"", title, sect, date, ver) == 4, "%s: %.80s",
                  pages[i], text);
    int y = 0, mo = 0, d = 0, n = 0;
    ck_assert_msg(sscanf(date, "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && n == 10 && date[10] == '\0', "%s: date \"%s\"",
                  pages[i], date);
    ck_assert_msg(y >= 2026 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31, "%s: date \"%s\"", pages[i], date);
    ck_assert_str_eq(ver, "arenad " PACKAGE_VERSION);
    free(text);
  }
}
END_TEST

/* face_detection_short_range: one float32 [1,128,128,3] input (196608 bytes), two outputs. */
#define FACE_IN_BYTES 196608

START_TEST(invoke_and_run_read_streams_and_create_the_output_dir) {
  char model[1024], dir[] = "/tmp/check_cli_e2e_XXXXXX", zeros[128], msg[AR_MSG_BYTES];
  ar_test_model_path(model, sizeof(model), "face_detection_short_range");
  if (access(model, R_OK) != 0) {
    printf("check_cli: %s absent: skipped\n", model);
    return;
  }
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ar_test_daemon_t dmn;
  ck_assert_msg(ar_td_start(&dmn, "64M", NULL) == 0, "arenad did not start (log %s)", dmn.log);
  const char *pre = ar_test_exec_prefix(), *bd = builddir();
  /* load with a path relative to the current directory: arenactl sends getcwd() + the path. */
  char mdir[PATH_MAX];   /* canonical: arenactl sends getcwd(), e.g. /src/models for build/../models */
  ck_assert_ptr_nonnull(realpath(model, mdir));
  *strrchr(mdir, '/') = '\0';
  int rc = sh("cd '%s' && %s'%s/arenactl' -s '%s' load face ./face_detection_short_range.tflite 2>&1", mdir, pre, bd,
              dmn.socket);
  ck_assert_msg(rc == 0, "load: %d %s", rc, big);
  char want[PATH_MAX + 64];
  snprintf(want, sizeof(want), "loaded face (%s/face_detection_short_range.tflite, ", mdir);
  ck_assert_msg(strstr(big, want) != NULL, "%s", big);
  /* The reference: a regular file of zeros. */
  snprintf(zeros, sizeof(zeros), "%s/zeros.bin", dir);
  FILE *f = fopen(zeros, "wb");
  ck_assert_ptr_nonnull(f);
  static const uint8_t zero[FACE_IN_BYTES];
  ck_assert_uint_eq(fwrite(zero, 1, sizeof(zero), f), sizeof(zero));
  fclose(f);
  rc = sh("%s'%s/arenactl' -s '%s' invoke face --input '%s' --output '%s/ref' 2>&1", pre, bd, dmn.socket, zeros, dir);
  ck_assert_msg(rc == 0, "invoke zeros.bin: %d %s", rc, big);
  /* /dev/zero, into an output directory that does not exist yet. */
  rc = sh("%s'%s/arenactl' -s '%s' invoke face --input /dev/zero --output '%s/new' 2>&1", pre, bd, dmn.socket, dir);
  ck_assert_msg(rc == 0, "invoke /dev/zero: %d %s", rc, big);
  snprintf(want, sizeof(want), "wrote output_<j>.bin to %s/new", dir);
  ck_assert_msg(strstr(big, want) != NULL, "%s", big);
  for (int j = 0; j < 2; j++) {
    char a[256], b[256];
    snprintf(a, sizeof(a), "%s/ref/output_%d.bin", dir, j);
    snprintf(b, sizeof(b), "%s/new/output_%d.bin", dir, j);
    size_t na = 0, nb = 0;
    void *da = ar_test_read_file(a, &na), *db = ar_test_read_file(b, &nb);
    ck_assert_ptr_nonnull(da);
    ck_assert_ptr_nonnull(db);
    ck_assert_uint_gt(na, 0);
    ck_assert_uint_eq(na, nb);
    ck_assert_int_eq(memcmp(da, db, na), 0);
    free(da);
    free(db);
    unlink(a);
    unlink(b);
  }
  struct stat st;
  snprintf(want, sizeof(want), "%s/new", dir);
  ck_assert_int_eq(stat(want, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
  rmdir(want);
  /* A pipe with fewer bytes than the input needs. */
  rc = sh("head -c 1000 /dev/zero | %s'%s/arenactl' -s '%s' invoke face --input /dev/stdin 2>&1", pre, bd, dmn.socket);
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(strstr(big, "/dev/stdin ended after 1000 bytes; input 'input' needs 196608 bytes (ESHAPE)") != NULL,
                "%s", big);
  /* A regular file must have the input's size exactly (refused from its size, before it is read,
   * by invoke and run alike); a directory is no input. */
  f = fopen(zeros, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(zero, 1, 5, f), 5);
  fclose(f);
  rc = sh("%s'%s/arenactl' -s '%s' invoke face --input '%s' 2>&1", pre, bd, dmn.socket, zeros);
  ck_assert_int_eq(rc, 1);
  snprintf(want, sizeof(want), "arenactl invoke: %s holds 5 bytes; input 'input' needs 196608 bytes (ESHAPE)", zeros);
  ck_assert_msg(strstr(big, want) != NULL, "%s", big);
  rc = sh("%s'%s/arenactl' run '%s' --input '%s' 2>&1", pre, bd, model, zeros);
  ck_assert_int_eq(rc, 1);
  snprintf(want, sizeof(want), "arenactl run: %s holds 5 bytes; input 'input' needs 196608 bytes (ESHAPE)", zeros);
  ck_assert_msg(strstr(big, want) != NULL, "%s", big);
  /* An empty load PATH is a usage error (it would have become this directory). */
  rc = sh("%s'%s/arenactl' -s '%s' load face2 '' 2>&1", pre, bd, dmn.socket);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl load: PATH is empty") != NULL, "%s", big);
  rc = sh("%s'%s/arenactl' -s '%s' invoke face --input '%s' 2>&1", pre, bd, dmn.socket, dir);
  ck_assert_int_eq(rc, 1);
  snprintf(want, sizeof(want), "arenactl invoke: cannot read %s: Is a directory (EIO)", dir);
  ck_assert_msg(strstr(big, want) != NULL, "%s", big);
  /* As many files as the model has inputs (the daemon would refuse it too, less clearly). */
  rc = sh("%s'%s/arenactl' -s '%s' invoke face --input /dev/zero /dev/zero 2>&1", pre, bd, dmn.socket);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl invoke: model 'face' has 1 input(s), 2 given") != NULL, "%s", big);
  /* An output directory two levels down: refused before the invoke, naming it. */
  rc = sh("%s'%s/arenactl' -s '%s' invoke face --input /dev/zero --output '%s/x/y' 2>&1", pre, bd, dmn.socket, dir);
  ck_assert_int_eq(rc, 1);
  snprintf(want, sizeof(want), "arenactl invoke: cannot create output directory %s/x/y: its parent directory does not "
           "exist (one level is created) (ENOENT)", dir);
  ck_assert_msg(strstr(big, want) != NULL, "%s", big);
  /* run (offline) reads /dev/zero the same way and creates its directory too. */
  rc = sh("%s'%s/arenactl' run '%s' --input /dev/zero --output '%s/run' 2>&1", pre, bd, model, dir);
  ck_assert_msg(rc == 0, "run /dev/zero: %d %s", rc, big);
  for (int j = 0; j < 2; j++) {
    snprintf(want, sizeof(want), "%s/run/output_%d.bin", dir, j);
    ck_assert_int_eq(stat(want, &st), 0);
    ck_assert_uint_gt(st.st_size, 0);
    unlink(want);
  }
  snprintf(want, sizeof(want), "%s/run", dir);
  rmdir(want);
  rc = sh("head -c 7 /dev/zero | %s'%s/arenactl' run '%s' --input /dev/stdin 2>&1", pre, bd, model);
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(strstr(big, "/dev/stdin ended after 7 bytes; input 'input' needs 196608 bytes (ESHAPE)") != NULL,
                "%s", big);
  (void)msg;
  snprintf(want, sizeof(want), "%s/ref", dir);
  rmdir(want);
  unlink(zeros);
  rmdir(dir);
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
}
END_TEST

/* What a command line lacks is said before the usage: invoke without NAME, without --input or
 * --image, with both; run without MODEL. --top on face_detection_short_range (raw SSD heads
 * regressors [1,896,16], classificators [1,896,1]) is refused naming them, --output-index 1 ranks
 * the second. Before: the bare usage, and --top ranked output 0 (box regressors) as class scores. */
START_TEST(command_lines_say_what_is_missing) {
  const char *pre = ar_test_exec_prefix(), *bd = builddir();
  int rc = sh("%s'%s/arenactl' -s /nonexistent.sock invoke face 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strncmp(big, "arenactl invoke: no input given: --input F (one raw file per model input, in order) or "
                             "--image FILE (a photograph for a one-input image model)\nusage: arenactl invoke NAME",
                        strlen("arenactl invoke: no input given: --input F (one raw file per model input, in order) "
                               "or --image FILE (a photograph for a one-input image model)\nusage: arenactl invoke "
                               "NAME")) == 0, "%s", big);
  rc = sh("%s'%s/arenactl' -s /nonexistent.sock invoke --input /dev/zero 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl invoke: the model's NAME is missing") == big, "%s", big);
  rc = sh("%s'%s/arenactl' -s /nonexistent.sock invoke face --input /dev/zero --image x.png 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl invoke: --input and --image exclude each other") == big, "%s", big);
  rc = sh("%s'%s/arenactl' -s /nonexistent.sock invoke face extra 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl invoke: unexpected argument 'extra' (the model's NAME is 'face'") == big, "%s",
                big);
  rc = sh("%s'%s/arenactl' run --input /dev/zero 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl run: the MODEL file is missing\n") == big, "%s", big);

  char model[1024];
  ar_test_model_path(model, sizeof(model), "face_detection_short_range");
  if (access(model, R_OK) != 0) {
    printf("check_cli: %s absent: --top part skipped\n", model);
    return;
  }
  rc = sh("%s'%s/arenactl' run '%s' --input /dev/zero --top 3 2>&1", pre, bd, model);
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(strstr(big, "arenactl run: --top: the model has 2 outputs and none of them is a classifier's scores "
                            "([C], [1,C]) (0 'regressors' [1,896,16], 1 'classificators' [1,896,1]): --output-index J says "
                            "which output --top ranks\n"), "%s", big);
  rc = sh("%s'%s/arenactl' run '%s' --input /dev/zero --top 3 --output-index 1 2>&1", pre, bd, model);
  ck_assert_msg(rc == 0, "%d %s", rc, big);
  ck_assert_msg(strstr(big, "  --top ranks output 1 'classificators'\n  top 1: class "), "%s", big);
  rc = sh("%s'%s/arenactl' run '%s' --input /dev/zero --top 3 --output-index 2 2>&1", pre, bd, model);
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(strstr(big, "arenactl run: --output-index 2: the model has 2 output(s), 0..1\n"), "%s", big);
}
END_TEST

/* Each tensor index 0..tensors-1 once in a plan --json document: in buffers (scratch rows aside)
 * or in no_buffer with a kind and a reason. Returns the number of elided entries. */
static int plan_accounts_for_every_tensor(const char *doc, const char *what) {
  json_error_t e;
  json_t *j = json_loads(doc, 0, &e);
  ck_assert_msg(j != NULL, "%s: not JSON (%s): %.300s", what, e.text, doc);
  json_int_t n = json_integer_value(json_object_get(j, "tensors"));
  ck_assert_msg(n > 0, "%s: no \"tensors\" count", what);
  int *seen = calloc((size_t)n, sizeof *seen), elided = 0;
  ck_assert_ptr_nonnull(seen);
  size_t i;
  json_t *o;
  json_array_foreach(json_object_get(j, "buffers"), i, o) {
    if (strcmp(json_string_value(json_object_get(o, "class")), "scratch") == 0) continue;
    json_int_t t = json_integer_value(json_object_get(o, "tensor"));
    ck_assert(t >= 0 && t < n);
    seen[t]++;
  }
  json_array_foreach(json_object_get(j, "no_buffer"), i, o) {
    json_int_t t = json_integer_value(json_object_get(o, "tensor"));
    ck_assert(t >= 0 && t < n);
    seen[t]++;
    const char *reason = json_string_value(json_object_get(o, "reason"));
    ck_assert_msg(reason && reason[0], "%s: tensor %lld has no reason", what, (long long)t);
    elided += strcmp(json_string_value(json_object_get(o, "kind")), "elided") == 0;
  }
  for (json_int_t t = 0; t < n; t++) ck_assert_msg(seen[t] == 1, "%s: tensor %lld appears %d times", what, (long long)t, seen[t]);
  free(seen);
  json_decref(j);
  return elided;
}

/* arenactl plan --json accounts for every tensor, offline (face_detection_full_range: its 8
 * channel_padding PADs folded into their ADDs among the elided) and from the daemon (a loaded
 * model's budget table). Before, no_buffer did not exist: 375 of the 544 tensors were missing. */
START_TEST(plan_json_lists_every_tensor_once) {
  char model[1024];
  ar_test_model_path(model, sizeof(model), "face_detection_full_range");
  if (access(model, R_OK) != 0) {
    printf("check_cli: %s absent: skipped\n", model);
    return;
  }
  const char *pre = ar_test_exec_prefix(), *bd = builddir();
  int rc = sh("%s'%s/arenactl' plan '%s' --json 2>&1", pre, bd, model);
  ck_assert_msg(rc == 0, "%d %.400s", rc, big);
  ck_assert_msg(strstr(big, "\"name\": \"channel_padding_7\"") != NULL, "%.400s", big);
  ck_assert_int_ge(plan_accounts_for_every_tensor(big, "offline plan"), 8);
  ar_test_daemon_t dmn;
  ck_assert_msg(ar_td_start(&dmn, "64M", NULL) == 0, "arenad did not start (log %s)", dmn.log);
  rc = sh("%s'%s/arenactl' -s '%s' load fdr '%s' 2>&1", pre, bd, dmn.socket, model);
  ck_assert_msg(rc == 0, "load: %d %.400s", rc, big);
  rc = sh("%s'%s/arenactl' -s '%s' plan fdr --json 2>&1", pre, bd, dmn.socket);
  ck_assert_msg(rc == 0, "remote plan: %d %.400s", rc, big);
  ck_assert_int_ge(plan_accounts_for_every_tensor(big, "remote plan"), 8);
  rc = sh("%s'%s/arenactl' -s '%s' plan fdr 2>&1", pre, bd, dmn.socket);
  ck_assert_msg(rc == 0, "remote plan: %d %.400s", rc, big);
  ck_assert_msg(strstr(big, "channel_padding_7                        elided          55296  PAD folding: PAD op "
                            "193 does not run; ADD op 194 reads the PAD's input and supplies the zero channels itself\n"),
                "%s", big);
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
}
END_TEST

/* No byte below 0x20 but newlines in text meant for a terminal. */
static void assert_no_control_bytes(const char *text, const char *what) {
  for (const unsigned char *p = (const unsigned char *)text; *p; p++)
    ck_assert_msg(*p >= 0x20 || *p == '\n', "%s: raw byte 0x%02x at %td: %s", what, *p,
                  (const char *)p - text, text);
}

/* Parse an SVG file with Python's XML parser (a malformed document fails) and print the text of
 * every <title> and <text> element, one per line, into big. Returns the parser's exit status. */
static int svg_texts(const char *path) {
  return sh("/usr/bin/python3 -c 'import sys, xml.etree.ElementTree as E; "
            "r = E.parse(sys.argv[1]).getroot(); "
            "print(\"\\n\".join(\"\".join(e.itertext()) for e in r.iter() "
            "if e.tag.split(\"}\")[-1] in (\"title\", \"text\")))' '%s' 2>&1", path);
}

/* Model strings and paths holding XML specials and control characters: the plan SVGs (offline
 * from the file, remote from the daemon's budget table) are well-formed XML whose text reads the
 * names back with the specials intact and the control bytes as \xNN; the admin's load and models
 * lines print the path with \xNN instead of the raw bytes. Generated model: tensor
 * "in<&\"'<SOH>x" -> RELU -> "out>]]<DEL>", in a file named m<&"<SOH>.tflite. */
START_TEST(names_are_escaped_in_svg_and_admin_lines) {
  char dir[] = "/tmp/check_cli_names_XXXXXX", model[PATH_MAX], svg[PATH_MAX + 16], want[PATH_MAX + 64];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  size_t len;
  uint8_t *bytes = ar_tm_build_relu("in<&\"'\x01x", "out>]]\x7f", &len);
  ar_test_daemon_t dmn;
  ck_assert_msg(ar_td_start(&dmn, "16M", NULL) == 0, "arenad did not start (log %s)", dmn.log);
  snprintf(model, sizeof model, "%s/m<&\"\x01.tflite", dmn.dir);   /* in the daemon's model_dirs */
  FILE *f = fopen(model, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
  free(bytes);
  const char *pre = ar_test_exec_prefix(), *bd = builddir();
  char esc_path[PATH_MAX + 16];
  snprintf(esc_path, sizeof esc_path, "%s/m<&\"\\x01.tflite", dmn.dir);

  int rc = sh("%s'%s/arenactl' -s '%s' load tm '%s' 2>&1", pre, bd, dmn.socket, model);
  ck_assert_msg(rc == 0, "load: %d %s", rc, big);
  snprintf(want, sizeof want, "loaded tm (%s, sha256 ", esc_path);
  ck_assert_msg(strstr(big, want) != NULL, "%s", big);
  assert_no_control_bytes(big, "load");
  rc = sh("%s'%s/arenactl' -s '%s' models 2>&1", pre, bd, dmn.socket);
  ck_assert_msg(rc == 0, "models: %d %s", rc, big);
  ck_assert_msg(strstr(big, esc_path) != NULL, "%s", big);
  assert_no_control_bytes(big, "models");

  /* Remote plan: the names come from the daemon's budget table. */
  snprintf(svg, sizeof svg, "%s/remote.svg", dir);
  rc = sh("%s'%s/arenactl' -s '%s' plan tm --svg '%s' 2>&1", pre, bd, dmn.socket, svg);
  ck_assert_msg(rc == 0, "plan --svg: %d %s", rc, big);
  rc = svg_texts(svg);
  ck_assert_msg(rc == 0, "remote SVG is not XML: %s", big);
  ck_assert_msg(strstr(big, "tensor 0 in<&\"'\\x01x: 16 B at ") != NULL, "%s", big);
  ck_assert_msg(strstr(big, "tensor 1 out>]]\\x7f: 16 B at ") != NULL, "%s", big);
  char *doc = slurp(svg);
  ck_assert_msg(strstr(doc, "in&lt;&amp;&quot;&apos;\\x01x") != NULL, "%s", doc);
  assert_no_control_bytes(doc, "remote SVG");
  free(doc);
  unlink(svg);

  /* Offline plan: names from the file, the title is the file's name. */
  snprintf(svg, sizeof svg, "%s/offline.svg", dir);
  rc = sh("%s'%s/arenactl' plan '%s' --svg '%s' 2>&1", pre, bd, model, svg);
  ck_assert_msg(rc == 0, "offline plan --svg: %d %s", rc, big);
  assert_no_control_bytes(big, "offline plan table");
  rc = svg_texts(svg);
  ck_assert_msg(rc == 0, "offline SVG is not XML: %s", big);
  ck_assert_msg(strstr(big, "m<&\"\\x01.tflite\n") != NULL, "%s", big);
  ck_assert_msg(strstr(big, "tensor 0 in<&\"'\\x01x: 16 bytes at ") != NULL, "%s", big);
  ck_assert_msg(strstr(big, "tensor 1 out>]]\\x7f: 16 bytes at ") != NULL, "%s", big);
  doc = slurp(svg);
  assert_no_control_bytes(doc, "offline SVG");
  free(doc);
  unlink(svg);

  unlink(model);   /* the daemon keeps its own copy; ar_td_stop removes its directory */
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
  rmdir(dir);
}
END_TEST


/* ---- arenactl inspect: every operator, what cannot run and why (issue 28) ----------------- */

/* Write `bytes` to a new file under /tmp; the path into `path`. */
static void write_tmp_model(char *path, size_t n, const char *tag, const uint8_t *bytes, size_t len) {
  snprintf(path, n, "/tmp/check_cli_%s_%d.tflite", tag, (int)getpid());
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

/* x float32 -> op 0 RELU with 2 inputs (an arity error, EINVAL at prepare: inspect stopped there
 * before and showed no operator list) -> op 1 ABS on uint8 (a dtype it does not take) -> op 2
 * CONCATENATION of 17 inputs (refused by the loader while a node held at most 16 operands; any
 * count the file holds runs now) -> op 3 RELU (runs). inspect lists all four, marks 0-1 "cannot
 * run: <why>" and 2-3 "runs",
 * in text and --json (with the operator's dtypes), and exits 0. */
START_TEST(inspect_lists_every_operator_and_why) {
  ar_tm_tensor_t t[8] = {
    {"x", AR_DTYPE_FLOAT32, 2, {1, 4}, false, {0}, NULL},
    {"a", AR_DTYPE_FLOAT32, 2, {1, 4}, false, {0}, NULL},
    {"q", AR_DTYPE_UINT8, 2, {1, 4}, false, {0}, NULL},
    {"qa", AR_DTYPE_UINT8, 2, {1, 4}, false, {0}, NULL},
    {"c", AR_DTYPE_FLOAT32, 2, {17, 4}, false, {0}, NULL},
    {"y", AR_DTYPE_FLOAT32, 2, {17, 4}, false, {0}, NULL},
  };
  ar_tm_op_t ops[4] = {
    {19, 2, 1, {0, 0}, {1}, 0, 0, {{0}}},            /* RELU, two inputs */
    {101, 1, 1, {2}, {3}, 0, 0, {{0}}},              /* ABS uint8 (TFLite's ABS has no uint8) */
    {2, 17, 1, {0}, {4}, 10, 1, {{0, 4, 0}}},        /* CONCATENATION of 17 */
    {19, 1, 1, {4}, {5}, 0, 0, {{0}}},               /* RELU: runs */
  };
  for (int i = 0; i < 17; i++) ops[2].in[i] = 1;
  const int32_t ins[] = {0, 2}, outs[] = {3, 5};
  size_t len = 0;
  uint8_t *bytes = ar_tm_build(t, 6, ops, 4, ins, 2, outs, 2, &len);
  char model[256];
  write_tmp_model(model, sizeof model, "inspect_ops", bytes, len);
  free(bytes);
  const char *pre = ar_test_exec_prefix(), *bd = builddir();
  int rc = sh("%s'%s/arenactl' inspect '%s' 2>&1", pre, bd, model);
  ck_assert_msg(rc == 0, "inspect: %d %.1500s", rc, big);
  static const char *const want[] = {
    "    0     RELU                                     1  float32                cannot run: has 2 inputs, expected 1..1\n",
    "    1     ABS                                      1  uint8                  cannot run: input 0 (tensor q) has dtype UINT8, which this operator does not take\n",
    "    2     CONCATENATION                            1  float32                runs\n",
    "    3     RELU                                     1  float32                runs\n",
    "cannot run    2 operators unsupported: RELU v1 [has 2 inputs, expected 1..1] (op 0); ABS v1 [input 0 (tensor q) has dtype UINT8",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    ck_assert_msg(strstr(big, want[i]) != NULL, "inspect lacks \"%s\":\n%.1500s", want[i], big);
  rc = sh("%s'%s/arenactl' inspect '%s' --json 2>/dev/null", pre, bd, model);
  ck_assert_msg(rc == 0, "inspect --json: %d %.1500s", rc, big);
  json_error_t err;
  json_t *doc = json_loads(big, 0, &err);
  ck_assert_msg(doc != NULL, "inspect --json does not parse: %s", err.text);
  ck_assert(json_is_false(json_object_get(doc, "runnable")));
  json_t *un = json_object_get(doc, "unsupported_operators");
  ck_assert_int_eq(json_array_size(un), 2);
  static const char *const dts[] = {"float32", "uint8"};
  for (size_t i = 0; i < 2; i++) {
    json_t *e = json_array_get(un, i);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "index")), (json_int_t)i);
    ck_assert_str_eq(json_string_value(json_object_get(e, "dtypes")), dts[i]);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "version")), 1);
  }
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(un, 1), "op")), "ABS");
  json_t *ol = json_object_get(json_array_get(json_object_get(doc, "subgraphs"), 0), "operators");
  ck_assert_int_eq(json_array_size(ol), 4);
  for (size_t i = 0; i < 4; i++) {
    json_t *e = json_array_get(ol, i);
    ck_assert_int_eq(json_is_true(json_object_get(e, "runs")), i >= 2);
    ck_assert_int_eq(json_is_string(json_object_get(e, "why")), i < 2);
  }
  json_decref(doc);
  unlink(model);
}
END_TEST

/* 40 operators of 40 distinct unknown builtin codes: the one refusal would be ~1000 bytes. The
 * text ends at a whole group with "... and N more" (it was cut mid-word at the buffer's end);
 * --json lists all 40, and the operators list names each. */
START_TEST(inspect_long_refusal_ends_with_and_n_more) {
  enum { N = 40 };
  ar_tm_tensor_t t[N + 1];
  ar_tm_op_t ops[N];
  char names[N + 1][8];
  memset(ops, 0, sizeof ops);
  for (int i = 0; i <= N; i++) {
    snprintf(names[i], sizeof names[i], "t%d", i);
    t[i] = (ar_tm_tensor_t){names[i], AR_DTYPE_FLOAT32, 2, {1, 4}, false, {0}, NULL};
  }
  for (int i = 0; i < N; i++) {
    ops[i].builtin = 300 + i;
    ops[i].n_in = 1; ops[i].in[0] = i;
    ops[i].n_out = 1; ops[i].out[0] = i + 1;
  }
  const int32_t ins[] = {0}, outs[] = {N};
  size_t len = 0;
  uint8_t *bytes = ar_tm_build(t, N + 1, ops, N, ins, 1, outs, 1, &len);
  char model[256];
  write_tmp_model(model, sizeof model, "inspect_long", bytes, len);
  free(bytes);
  const char *pre = ar_test_exec_prefix(), *bd = builddir();
  int rc = sh("%s'%s/arenactl' inspect '%s' 2>&1", pre, bd, model);
  ck_assert_msg(rc == 0, "inspect: %d %.1500s", rc, big);
  const char *line = strstr(big, "cannot run    40 operators unsupported: BUILTIN_300 v1 (op 0); BUILTIN_301 v1 (op 1)");
  ck_assert_msg(line != NULL, "%.1500s", big);
  const char *eol = strchr(line, '\n');
  ck_assert_ptr_nonnull(eol);
  /* "...; BUILTIN_3kk v1 (op k); ... and M more" with k + 1 + M = 40 */
  const char *tail = strstr(line, "; ... and ");
  ck_assert_msg(tail != NULL && tail < eol, "%.*s", (int)(eol - line), line);
  int more = -1, last = -1;
  ck_assert_int_eq(sscanf(tail, "; ... and %d more", &more), 1);
  ck_assert_msg(strncmp(tail + strlen("; ... and ") + (more >= 10 ? 2 : 1), " more\n", 6) == 0, "%.*s",
                (int)(eol - line), line);
  const char *p = tail;
  while (p > line && p[-1] != '(') p--;
  ck_assert_int_eq(sscanf(p, "op %d)", &last), 1);
  ck_assert_int_eq(last + 1 + more, N);
  ck_assert_int_gt(more, 0);
  ck_assert_msg(strstr(big, "    39    BUILTIN_339                              1  float32                cannot run: no kernel for this op\n") != NULL,
                "%.1500s", big);
  rc = sh("%s'%s/arenactl' inspect '%s' --json 2>/dev/null", pre, bd, model);
  ck_assert_msg(rc == 0, "inspect --json: %d %.1500s", rc, big);
  json_error_t err;
  json_t *doc = json_loads(big, 0, &err);
  ck_assert_msg(doc != NULL, "inspect --json does not parse: %s", err.text);
  json_t *un = json_object_get(doc, "unsupported_operators");
  ck_assert_int_eq(json_array_size(un), N);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(un, N - 1), "op")), "BUILTIN_339");
  json_decref(doc);
  unlink(model);
}
END_TEST

/* docs/ops.md is the op table as `arenactl ops --markdown data/tflite_ops.tsv` writes it from
 * the kernel registry: a kernel that gains a form (or TFLite's table a row) without
 * `./dev ops-doc` fails here, naming the first line that differs. (tests/check_kernel_forms.c
 * checks every registry op is in it with the registry's forms.) */
START_TEST(ops_doc_is_current) {
  int rc = sh("%s'%s/arenactl' ops --markdown '%s/data/tflite_ops.tsv' 2>&1", ar_test_exec_prefix(), builddir(),
              AR_SRCDIR);
  ck_assert_msg(rc == 0, "arenactl ops --markdown: %d %.1000s", rc, big);
  char path[1024];
  snprintf(path, sizeof path, "%s/docs/ops.md", AR_SRCDIR);
  char *doc = slurp(path);
  if (strcmp(doc, big) != 0) {
    const char *a = doc, *b = big;
    int line = 1;
    while (*a && *a == *b) {
      if (*a == '\n') line++;
      a++, b++;
    }
    ck_abort_msg("docs/ops.md is not what arenactl ops --markdown writes (run ./dev ops-doc): line %d is \"%.120s\", "
                 "generated \"%.120s\"", line, a, b);
  }
  ck_assert_ptr_nonnull(strstr(doc, "| 0 | ADD | 1-6 | "));
  free(doc);
  /* the text and --json forms, and the usage */
  rc = sh("%s'%s/arenactl' ops 2>&1", ar_test_exec_prefix(), builddir());
  ck_assert_msg(rc == 0 && strstr(big, "\nWHILE ") && strstr(big, "any (run by the interpreter)"), "%.1000s", big);
  ck_assert_int_eq(sh("%s'%s/arenactl' ops --json --markdown x 2>&1", ar_test_exec_prefix(), builddir()), 2);
  ck_assert_msg(strstr(big, "usage: arenactl ops [--json] [--markdown TFLITE_TSV]") != NULL, "%s", big);
  ck_assert_int_eq(sh("%s'%s/arenactl' ops --markdown /nonexistent.tsv 2>&1", ar_test_exec_prefix(), builddir()), 1);
  ck_assert_msg(strstr(big, "arenactl ops: /nonexistent.tsv: cannot open") != NULL, "%s", big);
}
END_TEST

/* ---- arenactl bench ------------------------------------------------------------------------ */

/* The model's operator count and its op types with their counts, from `arenactl inspect --json`
 * (builtin_ops and custom_ops of subgraph 0). Returns the parsed document (caller decrefs). */
static json_t *inspect_ops(const char *model, json_int_t *n_ops) {
  int rc = sh("%s'%s/arenactl' inspect '%s' --json 2>/dev/null", ar_test_exec_prefix(), builddir(), model);
  ck_assert_msg(rc == 0, "inspect --json: %d %s", rc, big);
  json_error_t err;
  json_t *doc = json_loads(big, 0, &err);
  ck_assert_msg(doc != NULL, "inspect --json does not parse: %s", err.text);
  json_t *sg = json_array_get(json_object_get(doc, "subgraphs"), 0);
  ck_assert_ptr_nonnull(sg);
  *n_ops = json_integer_value(json_object_get(sg, "num_operators"));
  ck_assert_int_gt(*n_ops, 0);
  return doc;
}

/* How many of the model's operators have type `type` according to inspect (builtin or custom). */
static json_int_t inspect_count(json_t *doc, const char *type) {
  json_t *sg = json_array_get(json_object_get(doc, "subgraphs"), 0);
  json_t *v = json_object_get(json_object_get(sg, "builtin_ops"), type);
  if (!v) v = json_object_get(json_object_get(sg, "custom_ops"), type);
  return v ? json_integer_value(v) : 0;
}

/* The text report of a real model holds every figure the issue lists; --profile has one row per
 * operator of the model (index 0..n-1 in order, each with inspect's type) and the sum line. */
START_TEST(bench_prints_every_figure_and_a_row_per_operator) {
  char model[1024];
  ar_test_model_path(model, sizeof(model), "face_detection_short_range");
  if (access(model, R_OK) != 0) {
    printf("check_cli: %s absent: skipped\n", model);
    return;
  }
  json_int_t n_ops = 0;
  json_t *doc = inspect_ops(model, &n_ops);
  int rc = sh("%s'%s/arenactl' bench '%s' --runs 3 --warmup 2 --profile 2>&1", ar_test_exec_prefix(), builddir(), model);
  ck_assert_msg(rc == 0, "bench: %d %s", rc, big);
  static const char *const want[] = {
    "model ", " operators (", "input 0 input FLOAT32 [1,128,128,3]: random uniform [-1, 1)",
    "\ninit: ", " ms (load ", " ms, plan ", " ms, place ", "\nfirst invoke: ", "\nwarm-up: 2 run(s), mean ",
    "\ninvoke: 3 runs in ", ": mean ", " ms, std ", " ms, min ", " ms, median ", " ms, p90 ", " ms, p99 ",
    " ms, max ", "GFLOP/s at the mean", "\nmemory: arena ", " bytes (", " MB), persistent ",
    "weights in the file mapping ", "\npeak RSS: after init ", " MB), overall ",
    "\nprofile: 3 profiled invoke(s)", "\nby type:\n", "\noperators' sum ", " ms per invoke = ", "% of the same profiled invokes' mean ",
    "\nagainst plain invokes (", "per pair, median of operators' sum / plain invoke ", "timed runs' mean ",
  };
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    ck_assert_msg(strstr(big, want[i]) != NULL, "bench lacks '%s':\n%s", want[i], big);
  /* The table: after its header, rows "    k  TYPE  [shape] ..." for k = 0 .. n-1. */
  char *p = strstr(big, "\n    op  type");
  ck_assert_msg(p != NULL, "no profile header:\n%s", big);
  p = strchr(p + 1, '\n') + 1;
  json_int_t rows = 0;
  json_t *seen = json_object();
  for (;;) {
    int k = -1, len = 0;
    char type[64];
    if (sscanf(p, "%d %63s %n", &k, type, &len) != 2) break;
    ck_assert_int_eq(k, rows);
    json_t *c = json_object_get(seen, type);
    json_object_set_new(seen, type, json_integer(c ? json_integer_value(c) + 1 : 1));
    rows++;
    p = strchr(p, '\n');
    ck_assert_ptr_nonnull(p);
    p++;
  }
  ck_assert_int_eq(rows, n_ops);
  /* Honest about what does not run by itself: op 18, a channel PAD, runs inside the ADD 19; the
   * RELU 3 is clamped by the CONV_2D 2 as it stores; op 0 (an fp16 DEQUANTIZE) is read as stored. */
  ck_assert_msg(strstr(big, "PAD folded into op 19\n") != NULL, "%s", big);
  ck_assert_msg(strstr(big, "activation folded into op 2\n") != NULL, "%s", big);
  ck_assert_msg(strstr(big, "elided (weights read as stored)\n") != NULL, "%s", big);
  const char *type;
  json_t *v;
  json_int_t total = 0;
  json_object_foreach(seen, type, v) {
    ck_assert_msg(json_integer_value(v) == inspect_count(doc, type), "%s: %lld rows, inspect counts %lld", type,
                  (long long)json_integer_value(v), (long long)inspect_count(doc, type));
    total += json_integer_value(v);
  }
  ck_assert_int_eq(total, n_ops);
  json_decref(seen);
  json_decref(doc);
}
END_TEST

/* --json parses: runs = N, percentiles ordered, the mean inside [min, max], memory figures set,
 * one profile row per operator with inspect's type, every operator that does not run naming why
 * (and a fused one the operator it runs in, which does run), the operators' sum > 0; hand-built
 * models' inputs of other dtypes get random values of their own ranges. */
START_TEST(bench_json_parses_with_ordered_percentiles) {
  static const char *const models[] = {"face_detection_short_range", "selfie_segmentation"};
  for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++) {
    char model[1024];
    ar_test_model_path(model, sizeof(model), models[m]);
    if (access(model, R_OK) != 0) {
      printf("check_cli: %s absent: skipped\n", model);
      continue;
    }
    json_int_t n_ops = 0;
    json_t *idoc = inspect_ops(model, &n_ops);
    int rc = sh("%s'%s/arenactl' bench '%s' --runs 7 --warmup 0 --seed 9 --profile --json 2>/dev/null",
                ar_test_exec_prefix(), builddir(), model);
    ck_assert_msg(rc == 0, "bench --json: %d %s", rc, big);
    json_error_t err;
    json_t *doc = json_loads(big, 0, &err);
    ck_assert_msg(doc != NULL, "bench --json does not parse (%s): %s", err.text, big);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "seed")), 9);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "operators")), n_ops);
    json_t *inv = json_object_get(doc, "invoke_us");
    ck_assert_int_eq(json_integer_value(json_object_get(inv, "runs")), 7);
    const double mn = json_number_value(json_object_get(inv, "min")), md = json_number_value(json_object_get(inv, "median")),
                 p90 = json_number_value(json_object_get(inv, "p90")), p99 = json_number_value(json_object_get(inv, "p99")),
                 mx = json_number_value(json_object_get(inv, "max")), mean = json_number_value(json_object_get(inv, "mean"));
    ck_assert_msg(mn > 0 && mn <= md && md <= p90 && p90 <= p99 && p99 <= mx, "%g %g %g %g %g", mn, md, p90, p99, mx);
    ck_assert(mean >= mn && mean <= mx);
    ck_assert(json_number_value(json_object_get(inv, "std")) >= 0);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "warmup"), "runs")), 0);
    ck_assert(json_is_null(json_object_get(json_object_get(doc, "warmup"), "mean_us")));
    ck_assert(json_number_value(json_object_get(doc, "first_invoke_us")) > 0);
    json_t *init = json_object_get(doc, "init");
    ck_assert(json_number_value(json_object_get(init, "total_us")) >= json_number_value(json_object_get(init, "load_us")));
    json_t *mem = json_object_get(doc, "memory");
    ck_assert_int_gt(json_integer_value(json_object_get(mem, "arena_bytes")), 0);
    ck_assert_int_gt(json_integer_value(json_object_get(mem, "weights_bytes")), 0);
    ck_assert_int_ge(json_integer_value(json_object_get(mem, "peak_rss_bytes")),
                     json_integer_value(json_object_get(mem, "peak_rss_init_bytes")));
    ck_assert_int_gt(json_integer_value(json_object_get(mem, "peak_rss_init_bytes")), 0);
    ck_assert_int_gt(json_integer_value(json_object_get(doc, "macs")), 0);
    json_t *in0 = json_array_get(json_object_get(doc, "inputs"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(in0, "source")), "random uniform [-1, 1)");
    json_t *prof = json_object_get(doc, "profile");
    ck_assert_int_eq(json_integer_value(json_object_get(prof, "runs")), 7);
    json_t *ops = json_object_get(prof, "operators");
    ck_assert_int_eq((json_int_t)json_array_size(ops), n_ops);
    json_t *count = json_object();
    json_int_t running = 0;
    for (size_t k = 0; k < json_array_size(ops); k++) {
      json_t *e = json_array_get(ops, k);
      ck_assert_int_eq(json_integer_value(json_object_get(e, "index")), (json_int_t)k);
      const char *type = json_string_value(json_object_get(e, "type"));
      json_t *c = json_object_get(count, type);
      json_object_set_new(count, type, json_integer(c ? json_integer_value(c) + 1 : 1));
      if (json_is_true(json_object_get(e, "runs"))) {
        running++;
        ck_assert(json_number_value(json_object_get(e, "us")) >= 0);
      } else {
        ck_assert_msg(json_string_value(json_object_get(e, "note")) != NULL, "op %zu runs not and says not why", k);
      }
      json_t *into = json_object_get(e, "fused_into");
      if (into) {
        json_t *host = json_array_get(ops, (size_t)json_integer_value(into));
        ck_assert(json_is_true(json_object_get(host, "runs")));
        ck_assert_str_eq(json_string_value(json_object_get(host, "type")), "DEPTHWISE_CONV_2D");
      }
    }
    ck_assert_int_eq(running, json_integer_value(json_object_get(doc, "operators_at_invoke")));
    const char *type;
    json_t *v;
    json_object_foreach(count, type, v) ck_assert_int_eq(json_integer_value(v), inspect_count(idoc, type));
    json_decref(count);
    ck_assert(json_number_value(json_object_get(prof, "sum_us")) > 0);
    ck_assert(json_number_value(json_object_get(prof, "invoke_mean_us")) > 0);
    ck_assert(json_number_value(json_object_get(prof, "profiled_invoke_mean_us")) > 0);
    ck_assert(json_number_value(json_object_get(prof, "pair_sum_over_plain_median")) > 0);
    ck_assert(json_number_value(json_object_get(prof, "pair_profiled_over_plain_median")) > 0);
    json_decref(doc);
    json_decref(idoc);
  }
  /* A generated RELU model (float32 [1,4] in): its input is drawn in [-1, 1); same seed, same
   * figures but the times. */
  char dir[] = "/tmp/check_cli_bench_XXXXXX", path[PATH_MAX];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  size_t len;
  uint8_t *bytes = ar_tm_build_relu("x", "y", &len);
  snprintf(path, sizeof path, "%s/relu.tflite", dir);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
  free(bytes);
  int rc = sh("%s'%s/arenactl' bench '%s' --runs 1 --min-secs 0 --profile 2>&1", ar_test_exec_prefix(), builddir(), path);
  ck_assert_msg(rc == 0, "bench relu: %d %s", rc, big);
  ck_assert_msg(strstr(big, "invoke: 1 runs in ") && strstr(big, ": random uniform [-1, 1)"), "%s", big);
  ck_assert_msg(strstr(big, "\n     0  RELU ") != NULL, "%s", big);
  unlink(path);
  /* The integer I/O model: quantized and 8-bit inputs over their type's full range, other
   * integers in [0, 16), bool 0 or 1. */
  bytes = ar_tm_int_io_model(&len);
  snprintf(path, sizeof path, "%s/int_io.tflite", dir);
  f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
  free(bytes);
  rc = sh("%s'%s/arenactl' bench '%s' --runs 2 2>&1", ar_test_exec_prefix(), builddir(), path);
  ck_assert_msg(rc == 0, "bench int_io: %d %s", rc, big);
  static const char *const sources[] = {" UINT8 [1,4]: random full range [0, 255]\n",
                                        " INT8 [1,6]: random full range [-128, 127]\n", " INT32 [3]: random [0, 15]\n",
                                        " INT64 [2]: random [0, 15]\n", " BOOL [4]: random 0 or 1\n"};
  for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
    ck_assert_msg(strstr(big, sources[i]) != NULL, "lacks '%s': %s", sources[i], big);
  unlink(path);
  rmdir(dir);
}
END_TEST

/* Bad requests: each refused with a message naming what is wrong, exit 2 for usage, 1 otherwise;
 * with --json a failure is the error object on stdout. */
START_TEST(bench_refuses_bad_requests_clearly) {
  const char *pre = ar_test_exec_prefix(), *bd = builddir();
  int rc = sh("%s'%s/arenactl' bench /nonexistent/m.tflite 2>&1", pre, bd);
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(strstr(big, "arenactl bench: /nonexistent/m.tflite: ") && strstr(big, "(ENOENT)"), "%s", big);
  rc = sh("%s'%s/arenactl' bench /nonexistent/m.tflite --json 2>/dev/null", pre, bd);
  ck_assert_int_eq(rc, 1);
  json_error_t err;
  json_t *doc = json_loads(big, 0, &err);
  ck_assert_msg(doc != NULL, "%s", big);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, "error"), "code")), "ENOENT");
  json_decref(doc);
  rc = sh("%s'%s/arenactl' bench m.tflite --runs 0 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl bench: --runs '0': must be a whole number from 1 to 10000000") != NULL, "%s", big);
  rc = sh("%s'%s/arenactl' bench m.tflite --warmup -1 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl bench: --warmup '-1': must be a whole number from 0 to 10000000") != NULL, "%s", big);
  rc = sh("%s'%s/arenactl' bench m.tflite --min-secs soon 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl bench: --min-secs 'soon': must be a number of seconds") != NULL, "%s", big);
  rc = sh("%s'%s/arenactl' bench m.tflite --threads 0 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl bench: --threads '0': must be a whole number from 1 to 256") != NULL, "%s", big);
  rc = sh("%s'%s/arenactl' bench m.tflite --bogus 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl bench: unknown option '--bogus'") != NULL, "%s", big);
  rc = sh("%s'%s/arenactl' bench m.tflite --runs 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl bench: option '--runs' needs a value") != NULL, "%s", big);
  rc = sh("%s'%s/arenactl' bench 2>&1", pre, bd);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "arenactl bench: no MODEL given") != NULL, "%s", big);
  char model[1024];
  ar_test_model_path(model, sizeof(model), "face_detection_short_range");
  if (access(model, R_OK) != 0) return;
  /* Input files: as many as the model has inputs, each of the input's size. */
  rc = sh("%s'%s/arenactl' bench '%s' --input /dev/zero --input /dev/zero 2>&1", pre, bd, model);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(big, "the model has 1 input(s), 2 --input given (EINVAL)") != NULL, "%s", big);
  char small[] = "/tmp/check_cli_bench_in_XXXXXX";
  int fd = mkstemp(small);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, "12345", 5), 5);
  close(fd);
  rc = sh("%s'%s/arenactl' bench '%s' --input '%s' 2>&1", pre, bd, model, small);
  ck_assert_int_eq(rc, 1);
  char want[256];
  snprintf(want, sizeof want, "arenactl bench: %s holds 5 bytes; input 'input' needs 196608 bytes (ESHAPE)", small);
  ck_assert_msg(strstr(big, want) != NULL, "%s", big);
  unlink(small);
  /* A stream input is read once, up to the input's size, and benchmarked. */
  rc = sh("%s'%s/arenactl' bench '%s' --input /dev/zero --runs 1 --warmup 0 2>&1", pre, bd, model);
  ck_assert_msg(rc == 0, "%s", big);
  ck_assert_msg(strstr(big, "input 0 input FLOAT32 [1,128,128,3]: file /dev/zero") != NULL, "%s", big);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("cli_tensor");
  tcase_add_test(tc, values_are_dequantized);
  tcase_add_test(tc, labels_lines_crlf_and_last_line);
  tcase_add_test(tc, top_k_quantized_with_ties);
  tcase_add_test(tc, detection_rows_threshold_and_pixels);
  tcase_add_test(tc, top_reads_the_scores_output_or_says_which);
  tcase_add_test(tc, image_input_uint8_and_int8);
  tcase_add_test(tc, shared_options);
  tcase_add_loop_test(tc, yolo_letterbox_border_equals_golden_input, 0, 2);
  suite_add_tcase(s, tc);
  TCase *io = tcase_create("cli_io");
  tcase_add_test(io, stream_inputs_are_read_up_to_the_tensor_size);
  tcase_add_test(io, output_dir_is_created_one_level);
  tcase_add_test(io, watch_rates_between_two_documents);
  suite_add_tcase(s, io);
  TCase *prog = tcase_create("arenactl");
  tcase_set_timeout(prog, 120);
  tcase_add_test(prog, help_lists_every_command_and_option);
  tcase_add_test(prog, no_daemon_says_what_to_check);
  tcase_add_test(prog, man_pages_are_dated_and_versioned);
  tcase_add_test(prog, command_lines_say_what_is_missing);
  tcase_add_test(prog, plan_json_lists_every_tensor_once);
  tcase_add_test(prog, invoke_and_run_read_streams_and_create_the_output_dir);
  tcase_add_test(prog, names_are_escaped_in_svg_and_admin_lines);
  tcase_add_test(prog, bench_prints_every_figure_and_a_row_per_operator);
  tcase_add_test(prog, bench_json_parses_with_ordered_percentiles);
  tcase_add_test(prog, bench_refuses_bad_requests_clearly);
  tcase_add_test(prog, inspect_lists_every_operator_and_why);
  tcase_add_test(prog, inspect_long_refusal_ends_with_and_n_more);
  tcase_add_test(prog, ops_doc_is_current);
  suite_add_tcase(s, prog);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
