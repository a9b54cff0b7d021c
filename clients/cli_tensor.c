/* cli_tensor.c - arenactl's tensor helpers: image inputs in float32/uint8/int8, labels, top-K
 * classes and detection rows (see cli_tensor.h). Used by cmd_online.c (invoke) and cmd_run.c.
 */
#include "clients/cli_tensor.h"
#include "clients/cli_io.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"

#include <getopt.h>

/* TFLite TensorType values (the same numbers as loader/ar_model.h and arenad.proto). */
enum { DT_FLOAT32 = 0, DT_INT32 = 2, DT_UINT8 = 3, DT_INT64 = 4, DT_BOOL = 6, DT_INT8 = 9 };

static size_t elem_size(int32_t dtype) {
  switch (dtype) {
    case DT_FLOAT32: case DT_INT32: return 4;
    case DT_UINT8: case DT_BOOL: case DT_INT8: return 1;
    case DT_INT64: return 8;
    default: return 0;
  }
}

uint64_t ar_cli_elements(const ar_cli_tensor_t *t) {
  size_t es = elem_size(t->dtype);
  return es ? t->bytes / es : 0;
}

float ar_cli_value(const ar_cli_tensor_t *t, uint64_t i) {
  if (t->data == NULL || i >= ar_cli_elements(t)) return NAN;
  const uint8_t *p = (const uint8_t *)t->data + i * elem_size(t->dtype);
  int64_t q;
  switch (t->dtype) {
    case DT_FLOAT32: { float f; memcpy(&f, p, 4); return f; }
    case DT_UINT8: q = *p; break;
    case DT_INT8: q = (int8_t)*p; break;
    case DT_BOOL: return *p ? 1.0f : 0.0f;
    case DT_INT32: { int32_t v; memcpy(&v, p, 4); q = v; break; }
    case DT_INT64: { int64_t v; memcpy(&v, p, 8); q = v; break; }
    default: return NAN;
  }
  /* TFLite's Dequantize: (float(q) - zero_point) * scale, in float32. */
  return t->has_quant ? ((float)q - (float)t->zero_point) * t->scale : (float)q;
}

int ar_cli_image_input(const ar_cli_image_opts_t *o, const ar_cli_tensor_t *desc, void **data, uint64_t *bytes,
                       ar_cli_image_geom_t *geom, char *msg, size_t msg_bytes) {
  *data = NULL;
  *bytes = 0;
  const bool is_float = desc->dtype == DT_FLOAT32;
  if (desc->rank != 4 || desc->dims[0] != 1 || (desc->dims[3] != 3 && desc->dims[3] != 1) || desc->dims[1] < 1 ||
      desc->dims[2] < 1 ||
      desc->dims[1] > 16384 || desc->dims[2] > 16384 ||
      !(is_float || desc->dtype == DT_UINT8 || desc->dtype == DT_INT8))
    return ar_errf(msg, msg_bytes, AR_EINVAL, "--image needs an input of shape [1,H,W,3] or [1,H,W,1] and dtype "
                   "float32, uint8 or int8 (input '%s' is not)", desc->name ? desc->name : "");
  const uint32_t h = (uint32_t)desc->dims[1], w = (uint32_t)desc->dims[2];
  const bool gray = desc->dims[3] == 1;
  const size_t n = (size_t)h * w * 3;   /* RGB while filling; a gray input keeps one channel of 3 */
  float *vals = malloc(n * sizeof(float));
  void *out = is_float ? (void *)vals : malloc(n);
  if (vals == NULL || out == NULL) {
    free(vals);
    if (out != vals) free(out);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory for a %ux%u image tensor", w, h);
  }
  ar_image_t img = {0};
  ar_image_rect_t placed;
  int rc = ar_image_load(o->path, &img, msg, msg_bytes);
  if (rc == 0 && gray) ar_image_to_gray(&img);
  /* Integer inputs take the 8-bit pixels (0..255 exactly) and code them below. */
  float lo = 0.0f, hi = is_float ? 1.0f : 255.0f;
  if (is_float && o->has_range) lo = o->lo, hi = o->hi;
  if (rc == 0)
    rc = ar_image_fill_tensor(&img, o->has_crop ? &o->crop : NULL, h, w, o->fit, lo, hi, vals, &placed, msg,
                              msg_bytes);
  if (rc == 0 && geom) {
    geom->img_w = img.width;
    geom->img_h = img.height;
    geom->crop = o->has_crop ? o->crop : (ar_image_rect_t){0, 0, img.width, img.height};
    geom->placed = placed;
    geom->tensor_w = w;
    geom->tensor_h = h;
  }
  ar_image_free(&img);
  if (rc != 0) {
    free(vals);
    if (out != vals) free(out);
    return rc;
  }
  if (o->border != 0 && o->fit == AR_IMAGE_FIT_LETTERBOX) {
    /* The border as a pixel of value `border`, scaled the way ar_image_fill_tensor scales pixels. */
    volatile float prod = (float)o->border * (float)(((double)hi - (double)lo) / 255.0);
    const float bv = prod + lo;
    for (uint32_t y = 0; y < h; y++)
      for (uint32_t x = 0; x < w; x++)
        if (y < placed.top || y >= placed.bottom || x < placed.left || x >= placed.right)
          for (int ch = 0; ch < 3; ch++) vals[((size_t)y * w + x) * 3 + ch] = bv;
  }
  size_t count = n;
  if (gray) {
    count = n / 3;
    for (size_t i = 0; i < count; i++) vals[i] = vals[3 * i];
  }
  if (!is_float) {
    const ar_image_coding_t c = {.is_signed = desc->dtype == DT_INT8, .has_range = o->has_range, .lo = o->lo,
                                 .hi = o->hi, .has_quant = desc->has_quant, .scale = desc->scale,
                                 .zero_point = desc->zero_point};
    ar_image_code_pixels(vals, count, &c, out);
    free(vals);
  }
  *data = out;
  *bytes = is_float ? count * sizeof(float) : count;
  return 0;
}

int ar_cli_labels_load(const char *path, ar_cli_labels_t *l, char *msg, size_t msg_bytes) {
  memset(l, 0, sizeof(*l));
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return ar_errf(msg, msg_bytes, errno == ENOENT ? AR_ENOENT : AR_EIO, "labels %s: %s", path, strerror(errno));
  enum { MAX = 16 << 20 };
  char *text = malloc(MAX + 1);
  size_t len = text ? fread(text, 1, MAX + 1, f) : 0;
  int err = ferror(f);
  fclose(f);
  if (text == NULL) return ar_errf(msg, msg_bytes, AR_ENOMEM, "labels %s: no memory", path);
  if (err || len == 0 || len > MAX) {
    free(text);
    return ar_errf(msg, msg_bytes, err ? AR_EIO : AR_EINVAL, "labels %s: %s", path,
                   err ? "read error" : len == 0 ? "empty file" : "larger than 16 MiB");
  }
  text[len] = '\0';
  size_t lines = 1;
  for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
  l->line = calloc(lines, sizeof(*l->line));
  if (l->line == NULL) {
    free(text);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "labels %s: no memory", path);
  }
  l->text = text;
  char *p = text;
  while (*p) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = '\0';
    size_t k = strlen(p);
    if (k > 0 && p[k - 1] == '\r') p[k - 1] = '\0';
    l->line[l->n++] = p;
    if (!nl) break;
    p = nl + 1;
  }
  return 0;
}

void ar_cli_labels_free(ar_cli_labels_t *l) {
  if (l == NULL) return;
  free(l->line);
  free(l->text);
  memset(l, 0, sizeof(*l));
}

const char *ar_cli_label(const ar_cli_labels_t *l, int64_t c, int offset) {
  if (l == NULL || l->line == NULL) return "";
  int64_t i = c + offset;
  return i >= 0 && (uint64_t)i < l->n ? l->line[i] : "";
}

int ar_cli_print_top(FILE *f, const ar_cli_tensor_t *t, int k, const ar_cli_labels_t *l, int offset) {
  const uint64_t n = ar_cli_elements(t);
  if (n == 0 || t->dtype == DT_BOOL || isnan(ar_cli_value(t, 0))) return AR_EINVAL;
  const uint64_t classes = t->rank > 0 && t->dims[t->rank - 1] > 0 ? (uint64_t)t->dims[t->rank - 1] : n;
  if (k < 1) k = 1;
  if ((uint64_t)k > classes) k = (int)classes;
  /* k passes over the scores: k is small, and this keeps the tie rule obvious. */
  int64_t prev = -1;
  float prev_v = INFINITY;
  for (int r = 0; r < k; r++) {
    int64_t best = -1;
    float bv = -INFINITY;
    for (uint64_t c = 0; c < classes; c++) {
      float v = ar_cli_value(t, c);
      /* Below the previous pick, or equal to it at a higher index. */
      bool after = v < prev_v || (v == prev_v && (int64_t)c > prev);
      if (after && (best < 0 || v > bv)) best = (int64_t)c, bv = v;
    }
    if (best < 0) break;
    fprintf(f, "  top %d: class %" PRId64, r + 1, best);
    if (t->has_quant && (t->dtype == DT_UINT8 || t->dtype == DT_INT8)) {
      const uint8_t *p = (const uint8_t *)t->data + best;
      fprintf(f, " (q %d)", t->dtype == DT_INT8 ? (int)(int8_t)*p : (int)*p);
    }
    fprintf(f, " %.4f %s\n", bv, ar_cli_label(l, best, offset));
    prev = best;
    prev_v = bv;
  }
  return 0;
}

/* Photo pixel of a normalised tensor coordinate v along one axis (geometry of ar_cli_image_input). */
static double to_photo(double v, uint32_t tensor, uint32_t placed0, uint32_t placed1, uint32_t crop0, uint32_t crop1) {
  double tp = v * tensor;                                     /* tensor pixels */
  double frac = (tp - placed0) / (double)(placed1 - placed0); /* across the placed photo */
  return crop0 + frac * (double)(crop1 - crop0);
}

int ar_cli_print_detections(FILE *f, const ar_cli_tensor_t outs[4], float min_score, const ar_cli_labels_t *l,
                            int offset, const ar_cli_image_geom_t *geom) {
  const ar_cli_tensor_t *bx = &outs[0], *cl = &outs[1], *sc = &outs[2], *ct = &outs[3];
  const uint64_t rows = ar_cli_elements(sc);
  if (rows == 0 || ar_cli_elements(bx) != 4 * rows || ar_cli_elements(cl) != rows || ar_cli_elements(ct) < 1)
    return AR_EINVAL;
  float cnt = ar_cli_value(ct, 0);
  uint64_t count = isfinite(cnt) && cnt > 0 ? (uint64_t)cnt : 0;
  if (count > rows) count = rows;
  fprintf(f, "  %" PRIu64 " detection(s); rows with score >= %.2f:\n", count, min_score);
  for (uint64_t r = 0; r < count; r++) {
    const float s = ar_cli_value(sc, r);
    if (!(s >= min_score)) continue;
    const float c = ar_cli_value(cl, r);
    const double y0 = ar_cli_value(bx, 4 * r), x0 = ar_cli_value(bx, 4 * r + 1);
    const double y1 = ar_cli_value(bx, 4 * r + 2), x1 = ar_cli_value(bx, 4 * r + 3);
    fprintf(f, "  det %" PRIu64 ": class %.0f score %.3f box y %.3f..%.3f x %.3f..%.3f", r, c, s, y0, y1, x0, x1);
    if (geom) {
      const ar_cli_image_geom_t *g = geom;
      double L = to_photo(x0, g->tensor_w, g->placed.left, g->placed.right, g->crop.left, g->crop.right);
      double R = to_photo(x1, g->tensor_w, g->placed.left, g->placed.right, g->crop.left, g->crop.right);
      double T = to_photo(y0, g->tensor_h, g->placed.top, g->placed.bottom, g->crop.top, g->crop.bottom);
      double B = to_photo(y1, g->tensor_h, g->placed.top, g->placed.bottom, g->crop.top, g->crop.bottom);
      long li = lround(fmax(0, fmin(L, g->img_w))), ri = lround(fmax(0, fmin(R, g->img_w)));
      long ti = lround(fmax(0, fmin(T, g->img_h))), bi = lround(fmax(0, fmin(B, g->img_h)));
      if (ri <= li) ri = li + 1 <= (long)g->img_w ? li + 1 : li, li = ri - 1;
      if (bi <= ti) bi = ti + 1 <= (long)g->img_h ? ti + 1 : ti, ti = bi - 1;
      fprintf(f, " crop %ld,%ld,%ld,%ld", li, ti, ri, bi);
    }
    fprintf(f, " %s\n", ar_cli_label(l, (int64_t)lrintf(c), offset));
  }
  return 0;
}

/* Do the n outputs have the shapes of TFLite_Detection_PostProcess (boxes [1,N,4], classes [1,N],
 * scores [1,N], count [1])? */
static bool is_detection_outputs(const ar_cli_tensor_t *outs, int n) {
  if (n != 4) return false;
  const uint64_t rows = ar_cli_elements(&outs[2]);
  return rows > 0 && ar_cli_elements(&outs[0]) == 4 * rows && ar_cli_elements(&outs[1]) == rows &&
         ar_cli_elements(&outs[3]) == 1;
}

/* A classifier's scores: real values, at least two, every dimension but the last 1 ([C], [1,C],
 * [1,1,1,C]). */
static bool is_class_scores(const ar_cli_tensor_t *t) {
  if (t->dtype == DT_BOOL || ar_cli_elements(t) < 2 || isnan(ar_cli_value(t, 0))) return false;
  for (int32_t d = 0; d + 1 < t->rank; d++)
    if (t->dims[d] != 1) return false;
  return true;
}

static size_t put_shape(char *buf, size_t n, const ar_cli_tensor_t *t) {
  size_t o = (size_t)snprintf(buf, n, "[");
  for (int32_t d = 0; d < t->rank && o < n; d++) o += (size_t)snprintf(buf + o, n - o, "%s%" PRId64, d ? "," : "", t->dims[d]);
  if (o < n) o += (size_t)snprintf(buf + o, n - o, "]");
  return o;
}

int ar_cli_top_output(const ar_cli_tensor_t *outs, int n, int index, char *msg, size_t msg_bytes) {
  if (n < 1) return ar_errf(msg, msg_bytes, AR_EINVAL, "--top: the model has no output");
  if (index >= 0) {
    if (index >= n)
      return ar_errf(msg, msg_bytes, AR_EINVAL, "--output-index %d: the model has %d output(s), 0..%d", index, n,
                     n - 1);
    return index;
  }
  if (n == 1) return 0;
  if (is_detection_outputs(outs, n))
    return ar_errf(msg, msg_bytes, AR_EINVAL,
                   "--top reads a classifier's class scores, and these 4 outputs are a detector's "
                   "(TFLite_Detection_PostProcess: boxes, classes, scores, count): use --detections, or "
                   "--output-index J to rank output J's values");
  int found = -1, n_found = 0;
  for (int j = 0; j < n; j++)
    if (is_class_scores(&outs[j])) found = j, n_found++;
  if (n_found == 1) return found;
  /* None or several: list them, so that --output-index can be chosen. */
  size_t o = (size_t)snprintf(msg, msg_bytes, "--top: the model has %d outputs and %s of them is a classifier's "
                              "scores ([C], [1,C]) (",
                              n, n_found == 0 ? "none" : "more than one");
  for (int j = 0; j < n && o + 1 < msg_bytes; j++) {
    o += (size_t)snprintf(msg + o, msg_bytes - o, "%s%d '%s' ", j ? ", " : "", j, ar_cli_esc(outs[j].name));
    if (o < msg_bytes) o += put_shape(msg + o, msg_bytes - o, &outs[j]);
  }
  if (o < msg_bytes) snprintf(msg + o, msg_bytes - o, "): --output-index J says which output --top ranks");
  return AR_EINVAL;
}

void ar_cli_opts_init(ar_cli_image_opts_t *io, ar_cli_result_opts_t *ro) {
  *io = (ar_cli_image_opts_t){.fit = AR_IMAGE_FIT_LETTERBOX, .lo = 0.0f, .hi = 1.0f};
  *ro = (ar_cli_result_opts_t){.min_score = 0.5f, .label_offset = -1, .output_index = -1};
}

int ar_cli_parse_opt(const char *cmd, int o, const char *arg, ar_cli_image_opts_t *io, ar_cli_result_opts_t *ro) {
  char *end = NULL;
  switch (o) {
    case 'I': io->path = arg; return 1;
    case 'r':
      if (ar_image_parse_range(arg, &io->lo, &io->hi) != 0) {
        fprintf(stderr, "arenactl %s: --range wants LO,HI such as 0,1 or -1,1\n", cmd);
        return -1;
      }
      io->has_range = true;
      return 1;
    case 'f':
      if (ar_image_parse_fit(arg, &io->fit) != 0) {
        fprintf(stderr, "arenactl %s: --fit is stretch or letterbox\n", cmd);
        return -1;
      }
      return 1;
    case 'c':
      if (ar_image_parse_rect(arg, &io->crop) != 0) {
        fprintf(stderr, "arenactl %s: --crop wants L,T,R,B pixels\n", cmd);
        return -1;
      }
      io->has_crop = true;
      return 1;
    case 'B': {
      long v = strtol(arg, &end, 10);
      if (end == arg || *end || v < 0 || v > 255) {
        fprintf(stderr, "arenactl %s: --border wants a pixel value from 0 to 255\n", cmd);
        return -1;
      }
      io->border = (int)v;
      return 1;
    }
    case 'L': ro->labels_path = arg; return 1;
    case 'k': {
      long v = strtol(arg, &end, 10);
      if (end == arg || *end || v < 1 || v > 1000) {
        fprintf(stderr, "arenactl %s: --top wants a count from 1 to 1000\n", cmd);
        return -1;
      }
      ro->top = (int)v;
      return 1;
    }
    case 'D': ro->detections = true; return 1;
    case 'X': {
      long v = strtol(arg, &end, 10);
      if (end == arg || *end || v < 0 || v > 1000000) {
        fprintf(stderr, "arenactl %s: --output-index wants an output index from 0\n", cmd);
        return -1;
      }
      ro->output_index = (int)v;
      return 1;
    }
    case 'm':
      ro->min_score = strtof(arg, &end);
      if (end == arg || *end || !isfinite(ro->min_score)) {
        fprintf(stderr, "arenactl %s: --min-score wants a number\n", cmd);
        return -1;
      }
      return 1;
    case 'O': {
      long v = strtol(arg, &end, 10);
      if (end == arg || *end || v < 0 || v > 1000000) {
        fprintf(stderr, "arenactl %s: --label-offset wants a line count from 0\n", cmd);
        return -1;
      }
      ro->label_offset = (int)v;
      return 1;
    }
    default: return 0;
  }
}

int ar_cli_opts_finish(const char *cmd, ar_cli_result_opts_t *ro) {
  if (ro->detections && ro->top > 0) {
    fprintf(stderr, "arenactl %s: --top (a classifier's classes) and --detections do not go together\n", cmd);
    return -1;
  }
  if (ro->output_index >= 0 && ro->detections) {
    fprintf(stderr, "arenactl %s: --output-index chooses the output --top ranks; --detections reads outputs 0..3\n",
            cmd);
    return -1;
  }
  if (ro->labels_path && !ro->detections && ro->top == 0) ro->top = 5;
  if (ro->output_index >= 0 && ro->top == 0) ro->top = 5;
  /* SSD label maps start with "???": TFLite's detection classes count from 0 = line 1. */
  if (ro->label_offset < 0) ro->label_offset = ro->detections ? 1 : 0;
  return 0;
}

int ar_cli_print_results(const char *cmd, const ar_cli_result_opts_t *ro, const ar_cli_tensor_t *outs, int n,
                         const ar_cli_image_geom_t *geom) {
  if (ro->top == 0 && !ro->detections) return 0;
  ar_cli_labels_t labels = {0};
  char msg[AR_MSG_BYTES];
  if (ro->labels_path && ar_cli_labels_load(ro->labels_path, &labels, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "arenactl %s: %s\n", cmd, ar_cli_esc(msg));
    return 1;
  }
  const ar_cli_labels_t *l = ro->labels_path ? &labels : NULL;
  int ret = 0;
  if (ro->top > 0) {
    /* Which output holds the scores: the only one, the one --output-index names, or the one of
     * classifier shape; a detector's or an ambiguous set is refused, naming the outputs. */
    int j = ar_cli_top_output(outs, n, ro->output_index, msg, sizeof(msg));
    if (j < 0) {
      fprintf(stderr, "arenactl %s: %s\n", cmd, msg);
      ret = 1;
    } else {
      if (n > 1) printf("  --top ranks output %d '%s'\n", j, ar_cli_esc(outs[j].name));
      if (ar_cli_print_top(stdout, &outs[j], ro->top, l, ro->label_offset) != 0) {
        fprintf(stderr, "arenactl %s: --top: output %d '%s' holds no scores (not real-valued)\n", cmd, j,
                ar_cli_esc(outs[j].name));
        ret = 1;
      }
    }
  }
  if (ro->detections && (n != 4 || ar_cli_print_detections(stdout, outs, ro->min_score, l, ro->label_offset, geom) != 0)) {
    fprintf(stderr, "arenactl %s: --detections: the outputs are not those of TFLite_Detection_PostProcess (boxes "
                    "[1,N,4], classes [1,N], scores [1,N], count [1])\n", cmd);
    ret = 1;
  }
  ar_cli_labels_free(&labels);
  return ret;
}
