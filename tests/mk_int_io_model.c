/* mk_int_io_model.c - write the generated integer-I/O test model (tests/ar_test_model.h,
 * ar_tm_int_io_model) to the file named by argv[1], for the Python client's tests.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tests/ar_test_model.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: mk_int_io_model FILE.tflite\n");
    return 2;
  }
  size_t n = 0;
  uint8_t *bytes = ar_tm_int_io_model(&n);
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
