/* mk_stream_models.c - write the synthetic stream models of tests/check_stream.c and
 * tests/check_recurrent.c (built by tests/ar_test_rnn_models.h) into directory argv[1] as
 * <name>.tflite, so that ../shared/ref/native/tflite_run --steps can make their goldens
 * (tools/mk_stream_goldens.py; the goldens are committed under tests/golden/streams/).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tests/ar_test_rnn_models.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: mk_stream_models DIR\n");
    return 2;
  }
  for (int m = 0; m < ar_trm_n_models; m++) {
    char path[4096];
    size_t n = 0;
    uint8_t *bytes = ar_trm_models[m].build(&n);
    snprintf(path, sizeof path, "%s/%s.tflite", argv[1], ar_trm_models[m].name);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(bytes, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    free(bytes);
    if (!ok) {
      perror(path);
      return 1;
    }
    printf("%s\n", path);
  }
  return 0;
}
