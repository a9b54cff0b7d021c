/* ar_test_util.c - see ar_test_util.h. */
#include "tests/ar_test_util.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

const char *const ar_test_models[] = {
  "face_detection_full_range", "face_detection_full_range_sparse", "face_detection_short_range",
  "hand_landmark_full", "hand_landmark_lite", "object_detection_3d_camera",
  "object_detection_3d_cup", "palm_detection_full", "palm_detection_lite",
  "selfie_segmentation", "selfie_segmentation_landscape",
};
const int ar_test_n_models = (int)(sizeof(ar_test_models) / sizeof(ar_test_models[0]));

const char *const ar_test_qmodels[] = {
  "tflm_hello_world_int8", "tflm_micro_speech_quantized", "tflm_person_detect",
  "coral_mobilenet_v1_0.25_128_quant", "coral_mobilenet_v1_1.0_224_quant_embedding_extractor",
  "coral_mobilenet_v1_1.0_224_quant_head_layers", "coral_mobilenet_v2_1.0_224_quant",
  "coral_tf2_mobilenet_v2_1.0_224_ptq", "ssd_mobilenet_v1_coco_quant_postprocess",
  "coral_movenet_single_pose_lightning_ptq", "yolov8n_coco_416_full_integer_quant",
  "coral_deeplabv3_mnv2_dm05_pascal_quant",
};
const int ar_test_n_qmodels = (int)(sizeof(ar_test_qmodels) / sizeof(ar_test_qmodels[0]));

const char *ar_test_models_q_dir(void) {
  const char *d = getenv("AR_MODELS_Q_DIR");
  if (d && *d) return d;
  /* ../shared/models_q where it exists, else models/quant/ (`./dev models --quant`, data/models_q.tsv). */
  if (access(AR_SRCDIR "/../shared/models_q", R_OK | X_OK) != 0 && access(AR_SRCDIR "/models/quant", R_OK | X_OK) == 0)
    return AR_SRCDIR "/models/quant";
  return AR_SRCDIR "/../shared/models_q";
}

const char *ar_test_golden_q_dir(void) {
  const char *d = getenv("AR_GOLDEN_Q_DIR");
  return d && *d ? d : AR_SRCDIR "/../shared/golden_q";
}

int ar_test_have_qmodels(void) {
  char p[1024];
  snprintf(p, sizeof p, "%s/INDEX.json", ar_test_golden_q_dir());
  return access(ar_test_models_q_dir(), R_OK | X_OK) == 0 && access(p, R_OK) == 0;
}

const char *ar_test_models_dir(void) {
  const char *d = getenv("AR_MODELS_DIR");
  return d && *d ? d : AR_SRCDIR "/models";
}

const char *ar_test_golden_dir(void) {
  const char *d = getenv("AR_GOLDEN_DIR");
  return d && *d ? d : AR_SRCDIR "/tests/golden";
}

const char *ar_test_golden_extra_dir(void) {
  const char *d = getenv("AR_GOLDEN_EXTRA_DIR");
  return d && *d ? d : AR_SRCDIR "/tests/golden_extra";
}

int ar_test_model_selected(const char *stem) {
  const char *list = getenv("AR_TEST_MODELS");
  if (!list || !*list) return 1;
  size_t n = strlen(stem);
  for (const char *p = list; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, stem, n) == 0) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

int ar_test_execv(const char *path, char *const argv[]) {
  const char *wrap = getenv("AR_EXEC_WRAPPER");
  if (!wrap || !*wrap) return execv(path, argv);
  /* wrapper path args... (a fixed array: this runs in a forked child of a threaded suite) */
  char *wargv[64];
  int n = 0;
  wargv[n++] = (char *)wrap;
  wargv[n++] = (char *)path;
  for (int i = 1; argv[0] && argv[i] && n < 63; i++) wargv[n++] = argv[i];
  wargv[n] = NULL;
  return execv(wrap, wargv);
}

int ar_test_emulated(void) {
  const char *wrap = getenv("AR_EXEC_WRAPPER");
  return wrap && *wrap;
}

int ar_test_under_valgrind(void) {
  const char *pre = getenv("LD_PRELOAD");
  return pre && strstr(pre, "vgpreload") != NULL;
}

const char *ar_test_exec_prefix(void) {
  static char buf[1100];
  const char *wrap = getenv("AR_EXEC_WRAPPER");
  if (!wrap || !*wrap) return "";
  snprintf(buf, sizeof buf, "'%s' ", wrap);
  return buf;
}

char *ar_test_model_path(char *buf, size_t n, const char *stem) {
  snprintf(buf, n, "%s/%s.tflite", ar_test_models_dir(), stem);
  return buf;
}

void *ar_test_read_file(const char *path, size_t *bytes) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return NULL; }
  long len = ftell(f);
  if (len < 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return NULL; }
  void *buf = malloc(len > 0 ? (size_t)len : 1);
  if (buf && len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len) { free(buf); buf = NULL; }
  fclose(f);
  if (buf && bytes) *bytes = (size_t)len;
  return buf;
}

size_t ar_test_golden_mismatches(const float *got, const float *want, size_t n, double *worst) {
  double maxabs = 0, w = 0;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) maxabs = fmax(maxabs, fabs((double)want[i]));
  double tol = 1e-4 * maxabs + 1e-5;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - (double)want[i]);
    if (!(d <= tol)) bad++;        /* NaN counts as a mismatch */
    if (d > w || d != d) w = d;
  }
  if (worst) *worst = w;
  return bad;
}

size_t ar_test_sigmoid_mismatches(const float *got, const float *want, size_t n, double tol,
                                  double *worst) {
  double w = 0;
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs(1.0 / (1.0 + exp(-(double)got[i])) - 1.0 / (1.0 + exp(-(double)want[i])));
    if (!(d <= tol)) bad++;
    if (d > w || d != d) w = d;
  }
  if (worst) *worst = w;
  return bad;
}

int ar_test_proc_fds(pid_t pid, void (*fn)(void *ctx, const char *target), void *ctx) {
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char link[64 + 256], target[PATH_MAX];
    if (e->d_name[0] == '.') continue;
    snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
    const ssize_t k = readlink(link, target, sizeof target - 1);
    if (k <= 0) continue;   /* closed meanwhile */
    target[k] = '\0';
    n++;
    if (fn) fn(ctx, target);
  }
  closedir(d);
  return n;
}

int ar_test_popen(const char *cmd, char *out, size_t out_bytes) {
  FILE *p = popen(cmd, "r");
  if (p == NULL) return -1;
  size_t got = fread(out, 1, out_bytes - 1, p);
  out[got] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int ar_test_sh(char *out, size_t out_bytes, const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  return ar_test_popen(cmd, out, out_bytes);
}

const char *ar_test_builddir(void) {
  const char *b = getenv("AR_BUILDDIR");
  return b && *b ? b : AR_BUILDDIR;
}
