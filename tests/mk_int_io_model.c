/* mk_int_io_model.c - write a generated test model (tests/ar_test_model.h) to the file named by
 * argv[1], for the Python client's tests: the integer-I/O model (ar_tm_int_io_model), with argv[2]
 * "batch" the resize model (ar_tm_batch_model: input shape_signature [-1,4,4,3]), or with
 * "image DTYPE H W C [SCALE ZERO_POINT]" an identity image model: input `image` [1,H,W,C] of DTYPE
 * (float32, uint8 or int8; quantized with SCALE and ZERO_POINT when given) -> RESHAPE to
 * [H*W*C] `pixels`, so an invoke's output holds the input's bytes exactly (test_image.py compares
 * arenactl's --image tensors with arenad.image's through it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ar_test_model.h"

static uint8_t *image_model(int argc, char **argv, size_t *n) {
  ar_dtype_t dt;
  if (strcmp(argv[3], "float32") == 0) dt = AR_DTYPE_FLOAT32;
  else if (strcmp(argv[3], "uint8") == 0) dt = AR_DTYPE_UINT8;
  else if (strcmp(argv[3], "int8") == 0) dt = AR_DTYPE_INT8;
  else return NULL;
  const int h = atoi(argv[4]), w = atoi(argv[5]), c = atoi(argv[6]);
  if (h < 1 || w < 1 || (c != 1 && c != 3) || (argc != 7 && argc != 9)) return NULL;
  static int32_t shape[1];
  shape[0] = h * w * c;
  const ar_tm_tensor_t t[] = {
    {"image", dt, 4, {1, h, w, c}, false, {0}, NULL},
    {"pixels", dt, 1, {h * w * c}, false, {0}, NULL},
    {"shape", AR_DTYPE_INT32, 1, {1}, false, {0}, shape},
  };
  const ar_tm_op_t op = {.builtin = 22 /* RESHAPE */, .n_in = 2, .n_out = 1, .in = {0, 2}, .out = {1}};
  const int32_t ins[1] = {0}, outs[1] = {1};
  static float scale[1];
  static int64_t zp[1];
  if (argc == 9) {
    scale[0] = strtof(argv[7], NULL);
    zp[0] = strtoll(argv[8], NULL, 10);
    const ar_tm_quant_t q[] = {{0, 1, scale, zp, 0}, {1, 1, scale, zp, 0}};
    return ar_tm_build_quant(t, 3, &op, 1, ins, 1, outs, 1, q, 2, n);
  }
  return ar_tm_build(t, 3, &op, 1, ins, 1, outs, 1, n);
}

int main(int argc, char **argv) {
  const int batch = argc == 3 && strcmp(argv[2], "batch") == 0;
  const int image = argc >= 7 && strcmp(argv[2], "image") == 0;
  if (argc != 2 && !batch && !image) {
    fprintf(stderr, "usage: mk_int_io_model FILE.tflite [batch | image float32|uint8|int8 H W C [SCALE ZERO_POINT]]\n");
    return 2;
  }
  size_t n = 0;
  uint8_t *bytes = image ? image_model(argc, argv, &n) : batch ? ar_tm_batch_model(&n) : ar_tm_int_io_model(&n);
  if (bytes == NULL) {
    fprintf(stderr, "mk_int_io_model: bad image model arguments\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "wb");
  int ok = f && fwrite(bytes, 1, n, f) == n;
  if (f && fclose(f) != 0) ok = 0;
  free(bytes);
  if (!ok) {
    perror(argv[1]);
    return 1;
  }
  return 0;
}
