/* mk_int_io_model.c - write a generated test model (tests/ar_test_model.h) to the file named by
 * argv[1], for the Python client's tests: the integer-I/O model (ar_tm_int_io_model), or with
 * argv[2] "batch" the resize model (ar_tm_batch_model: input shape_signature [-1,4,4,3]).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ar_test_model.h"

int main(int argc, char **argv) {
  const int batch = argc == 3 && strcmp(argv[2], "batch") == 0;
  if (argc != 2 && !batch) {
    fprintf(stderr, "usage: mk_int_io_model FILE.tflite [batch]\n");
    return 2;
  }
  size_t n = 0;
  uint8_t *bytes = batch ? ar_tm_batch_model(&n) : ar_tm_int_io_model(&n);
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
