/* detection_postprocess.c - TFLite's custom operator TFLite_Detection_PostProcess (SSD).
 *
 * Inputs: box_encodings [1, B, >=4] (ycenter, xcenter, h, w per anchor), class_predictions
 * [1, B, C] (C = num_classes, or num_classes + 1 with a leading background class that is
 * skipped), anchors [B, 4] (ycenter, xcenter, h, w). Each input is float32, or uint8 / int8 with
 * per-tensor quantization: the kernel dequantizes it first, real = (float(q) - zero_point) * scale
 * in float32, as TFLite's Dequantizer and DequantizeClassPredictions do for its quantized SSDs
 * (TFLite itself takes uint8 only, and for uint8 box encodings dequantizes the anchors as uint8
 * too; here each input follows its own dtype, int8 the same way). Everything after runs in
 * float, so a quantized model's outputs are the float model's rules applied to those values.
 * Outputs (float32), sized at prepare with
 * N = max_detections * max_classes_per_detection: boxes [1, N, 4] (ymin, xmin, ymax, xmax),
 * classes [1, N], scores [1, N], num_detections [1]; rows past the detections are zero.
 *
 * Semantics follow TFLite's detection_postprocess.cc:
 *   decode  y = ey / y_scale * ah + ay, x = ex / x_scale * aw + ax,
 *           half_h = exp(eh / h_scale) * ah / 2, half_w = exp(ew / w_scale) * aw / 2,
 *           in double from the float inputs and rounded to float once (TFLite 2.19)
 *   single-class NMS: keep scores >= nms_score_threshold, stable sort by decreasing score, take
 *           each still-active box in order and drop later boxes whose IoU with it is
 *           > nms_iou_threshold, until the limit is reached (IoU 0 when either area is <= 0)
 *   fast    (use_regular_nms false): per anchor, its top min(max_classes_per_detection,
 *           num_classes) classes; NMS over the anchors' best scores (limit max_detections); each
 *           selected anchor fills max_classes_per_detection rows (box, class, score per class);
 *           num_detections = selected anchors
 *   regular (use_regular_nms true): NMS per class (limit min(detections_per_class,
 *           max_detections)), merged into the running top max_detections by decreasing score;
 *           num_detections = rows filled
 * Ties: where TFLite uses std::partial_sort (unspecified order among equal scores) the lower
 * index comes first here, the same choice as std::max_element for one class per anchor.
 *
 * Eval allocates nothing: every working array lives in the planned scratch buffer.
 */
#include <math.h>
#include <string.h>

#include "common/ar_util.h"
#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"

typedef struct {
  int32_t boxes, coords, classes_bg, label_offset, n_out, per_anchor;
  /* scratch layout, in 4-byte words from the start */
  int64_t o_decoded, o_scores, o_keep_scores, o_keep_idx, o_sorted, o_tmp, o_active, o_selected,
      o_cls, o_merged_idx, o_merged_score, o_sort2, o_vals2, o_ordidx, o_deq_scores;
  int64_t words;
} dpp_geom_t;

static const ar_detection_postprocess_options_t *dpp_opts(const ar_node_t *node) {
  return &node->options->detection_postprocess;
}

static void dpp_geometry(const ar_node_t *node, dpp_geom_t *g) {
  const ar_detection_postprocess_options_t *o = dpp_opts(node);
  const ar_tview_t *enc = node->inputs[0], *cls = node->inputs[1];
  memset(g, 0, sizeof *g);
  g->boxes = enc->dims[1];
  g->coords = enc->dims[2];
  g->classes_bg = cls->dims[2];
  g->label_offset = g->classes_bg - o->num_classes;
  g->n_out = o->max_detections * o->max_classes_per_detection;
  g->per_anchor = AR_MIN(o->max_classes_per_detection, o->num_classes);
  const int64_t b = g->boxes, md = o->max_detections;
  int64_t w = 0;
  g->o_decoded = w; w += 4 * b;
  g->o_scores = w; w += b;
  g->o_keep_scores = w; w += b;
  g->o_keep_idx = w; w += b;
  g->o_sorted = w; w += b;
  g->o_tmp = w; w += b + md;
  g->o_active = w; w += b;
  g->o_selected = w; w += b;
  g->o_cls = w; w += b * g->per_anchor;
  g->o_merged_idx = w; w += b + md;
  g->o_merged_score = w; w += b + md;
  g->o_sort2 = w; w += b + md;
  g->o_vals2 = w; w += b + md;
  g->o_ordidx = w; w += b + md;
  /* Dequantized class predictions, only when they are integers (float ones are read in place). */
  g->o_deq_scores = w;
  if (cls->dtype != AR_DTYPE_FLOAT32) w += b * g->classes_bg;
  g->words = w;
}

/* Element i of a float32, uint8 or int8 tensor as a float (integers dequantized, per tensor). */
static inline float dpp_value(const ar_tview_t *t, int64_t i) {
  switch (t->dtype) {
  case AR_DTYPE_UINT8:
    return ((float)((const uint8_t *)t->data)[i] - (float)t->quant->zero_point[0]) * t->quant->scale[0];
  case AR_DTYPE_INT8:
    return ((float)((const int8_t *)t->data)[i] - (float)t->quant->zero_point[0]) * t->quant->scale[0];
  default:
    return ((const float *)t->data)[i];
  }
}

static int dpp_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 3, 3, 3, 4, msg, msg_bytes);
  if (rc) return rc;
  if (!node->options)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "no options");
  const ar_detection_postprocess_options_t *o = dpp_opts(node);
  const ar_tview_t *enc = node->inputs[0], *cls = node->inputs[1], *anc = node->inputs[2];
  static const char *const what[] = {"box_encodings (input 0)", "class_predictions (input 1)",
                                     "anchors (input 2)"};
  for (int i = 0; i < 3; i++) {
    const ar_tview_t *t = node->inputs[i];
    if (t->dtype == AR_DTYPE_FLOAT32) continue;
    if (t->dtype != AR_DTYPE_UINT8 && t->dtype != AR_DTYPE_INT8)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s has dtype %s, expected float32, uint8 or int8",
                      what[i], ar_dtype_name(t->dtype));
    if (t->quant == NULL || t->quant->n != 1)
      return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "%s is %s without per-tensor quantization "
                      "(scale and zero point)", what[i], ar_dtype_name(t->dtype));
  }
  for (int i = 0; i < 4; i++) {
    char w[16];
    snprintf(w, sizeof w, "output %d", i);
    if ((rc = ar_k_check_dtype(node, node->outputs[i], w, AR_DTYPE_FLOAT32, msg, msg_bytes))) return rc;
  }
  if (enc->rank != 3 || enc->dims[0] != 1 || enc->dims[2] < 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "box_encodings must be [1, boxes, >=4]");
  const int32_t b = enc->dims[1];
  if (cls->rank != 3 || cls->dims[0] != 1 || cls->dims[1] != b)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "class_predictions must be [1, %d, classes]", (int)b);
  if (cls->dims[2] - o->num_classes < 0 || cls->dims[2] - o->num_classes > 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "class_predictions have %d classes, num_classes "
                    "is %d (expected it or one more for the background)", (int)cls->dims[2],
                    (int)o->num_classes);
  if (anc->rank != 2 || anc->dims[0] != b || anc->dims[1] != 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "anchors must be [%d, 4]", (int)b);
  /* Anchors are (y, x, h, w). A negative height or width decodes every box of that anchor inverted
   * (ymin > ymax: half the size is exp(.) * h / 2 < 0), which TFLite's ValidateBoxes refuses at
   * each invoke; the anchors are constants in the converters' models, so refuse the model here,
   * naming the anchor, rather than return inverted boxes with their scores. */
  if (anc->is_constant && anc->data)
    for (int32_t i = 0; i < b; i++) {
      const float ay = dpp_value(anc, 4 * (int64_t)i), ax = dpp_value(anc, 4 * (int64_t)i + 1);
      const float ah = dpp_value(anc, 4 * (int64_t)i + 2), aw = dpp_value(anc, 4 * (int64_t)i + 3);
      if (ah < 0 || aw < 0)
        return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "anchor %d (y %g, x %g, h %g, w %g) has a negative "
                        "%s: its boxes decode inverted (ymin > ymax or xmin > xmax), which TFLite refuses "
                        "at every invoke", (int)i, (double)ay, (double)ax, (double)ah, (double)aw,
                        ah < 0 && aw < 0 ? "height and width" : ah < 0 ? "height" : "width");
    }
  const int64_t n = (int64_t)o->max_detections * o->max_classes_per_detection;
  if (n > INT32_MAX / 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "max_detections * max_classes_per_detection too large");
  const int32_t d0[3] = {1, (int32_t)n, 4}, d1[2] = {1, (int32_t)n}, d3[1] = {1};
  const int32_t *want[4] = {d0, d1, d1, d3}, want_rank[4] = {3, 2, 2, 1};
  for (int i = 0; i < 4; i++) {
    /* Converters store these outputs without a shape (rank 0): the interpreter prepares such a
     * node with infer_shapes, which writes the shapes below, as TFLite sizes them at prepare. */
    if ((rc = ar_k_check_output_shape_at(node, i, want_rank[i], want[i], msg, msg_bytes))) return rc;
  }
  dpp_geom_t g;
  dpp_geometry(node, &g);
  node->scratch_bytes = (uint64_t)g.words * 4;
  node->state_bytes = 0;
  return 0;
}

static void decode_boxes(const ar_node_t *node, const dpp_geom_t *g, float *dec) {
  const ar_detection_postprocess_options_t *o = dpp_opts(node);
  const ar_tview_t *enc = node->inputs[0], *anc = node->inputs[2];
  for (int32_t i = 0; i < g->boxes; i++) {
    const int64_t ei = (int64_t)i * g->coords, ai = (int64_t)i * 4;
    const double ey = dpp_value(enc, ei), ex = dpp_value(enc, ei + 1);
    const double eh = dpp_value(enc, ei + 2), ew = dpp_value(enc, ei + 3);
    const double ay = dpp_value(anc, ai), ax = dpp_value(anc, ai + 1);
    const double ah = dpp_value(anc, ai + 2), aw = dpp_value(anc, ai + 3);
    const float yc = (float)(ey / (double)o->y_scale * ah + ay);
    const float xc = (float)(ex / (double)o->x_scale * aw + ax);
    const float hh = (float)(0.5 * exp(eh / (double)o->h_scale) * ah);
    const float hw = (float)(0.5 * exp(ew / (double)o->w_scale) * aw);
    float *d = dec + (int64_t)i * 4;
    d[0] = yc - hh; d[1] = xc - hw; d[2] = yc + hh; d[3] = xc + hw;
  }
}

static float iou(const float *dec, int32_t i, int32_t j) {
  const float *a = dec + (int64_t)i * 4, *b = dec + (int64_t)j * 4;
  const float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  if (area_a <= 0 || area_b <= 0) return 0.0f;
  const float ymin = fmaxf(a[0], b[0]), xmin = fmaxf(a[1], b[1]);
  const float ymax = fminf(a[2], b[2]), xmax = fminf(a[3], b[3]);
  const float inter = fmaxf(ymax - ymin, 0.0f) * fmaxf(xmax - xmin, 0.0f);
  return inter / (area_a + area_b - inter);
}

/* Stable sort of idx[0..n) by decreasing key[idx[i]] (bottom-up merge sort through tmp). */
static void sort_desc(int32_t *idx, int32_t *tmp, int32_t n, const float *key) {
  int32_t *src = idx, *dst = tmp;
  for (int32_t w = 1; w < n; w *= 2) {
    for (int32_t lo = 0; lo < n; lo += 2 * w) {
      int32_t mid = AR_MIN(lo + w, n), hi = AR_MIN(lo + 2 * w, n), a = lo, b = mid, k = lo;
      while (a < mid && b < hi) dst[k++] = key[src[b]] > key[src[a]] ? src[b++] : src[a++];
      while (a < mid) dst[k++] = src[a++];
      while (b < hi) dst[k++] = src[b++];
    }
    int32_t *t = src; src = dst; dst = t;
  }
  if (src != idx) memcpy(idx, src, (size_t)n * sizeof(int32_t));
}

/* TFLite NonMaxSuppressionSingleClassHelper over scores[0..boxes): the selected box indices in
 * selection order into sel; returns their count (<= limit). */
static int32_t nms_single(const dpp_geom_t *g, const ar_detection_postprocess_options_t *o,
                          const float *dec, const float *scores, int32_t limit, int32_t *sel,
                          float *ws) {
  float *keep_s = ws + g->o_keep_scores;
  int32_t *keep_i = (int32_t *)(void *)(ws + g->o_keep_idx);
  int32_t *sorted = (int32_t *)(void *)(ws + g->o_sorted), *tmp = (int32_t *)(void *)(ws + g->o_tmp);
  uint8_t *active = (uint8_t *)(void *)(ws + g->o_active);
  int32_t kept = 0;
  for (int32_t i = 0; i < g->boxes; i++)
    if (scores[i] >= o->nms_score_threshold) { keep_s[kept] = scores[i]; keep_i[kept] = i; kept++; }
  /* No candidate above the score threshold selects nothing; also tells the compiler kept > 0 for
   * the byte count below (kept counts at most g->boxes, an int32_t). */
  if (kept <= 0) return 0;
  for (int32_t i = 0; i < kept; i++) sorted[i] = i;
  sort_desc(sorted, tmp, kept, keep_s);
  const int32_t out_max = AR_MIN(kept, limit);
  memset(active, 1, (size_t)kept);
  int32_t n_active = kept, n_sel = 0;
  for (int32_t i = 0; i < kept; i++) {
    if (n_active == 0 || n_sel >= out_max) break;
    if (!active[i]) continue;
    const int32_t bi = keep_i[sorted[i]];
    sel[n_sel++] = bi;
    active[i] = 0;
    n_active--;
    for (int32_t j = i + 1; j < kept; j++)
      if (active[j] && iou(dec, bi, keep_i[sorted[j]]) > o->nms_iou_threshold) {
        active[j] = 0;
        n_active--;
      }
  }
  return n_sel;
}

/* The top k of v[0..n) by decreasing value, lower index first among equals. */
static void top_k(const float *v, int32_t n, int32_t k, int32_t *out) {
  for (int32_t r = 0; r < k; r++) {
    int32_t best = -1;
    for (int32_t i = 0; i < n; i++) {
      bool taken = false;
      for (int32_t q = 0; q < r && !taken; q++) taken = out[q] == i;
      if (!taken && (best < 0 || v[i] > v[best])) best = i;
    }
    out[r] = best;
  }
}

static void dpp_fast(const ar_node_t *node, const dpp_geom_t *g, const float *dec, const float *pred,
                     float *ws, float *boxes, float *classes, float *scores) {
  const ar_detection_postprocess_options_t *o = dpp_opts(node);
  float *maxs = ws + g->o_scores;
  int32_t *cls = (int32_t *)(void *)(ws + g->o_cls), *sel = (int32_t *)(void *)(ws + g->o_selected);
  const int32_t k = g->per_anchor, nc = o->num_classes;
  for (int32_t row = 0; row < g->boxes; row++) {
    const float *s = pred + (int64_t)row * g->classes_bg + g->label_offset;
    int32_t *ci = cls + (int64_t)row * k;
    top_k(s, nc, k, ci);
    maxs[row] = s[ci[0]];
  }
  const int32_t n_sel = nms_single(g, o, dec, maxs, o->max_detections, sel, ws);
  for (int32_t d = 0; d < n_sel; d++) {
    const int32_t a = sel[d];
    const float *s = pred + (int64_t)a * g->classes_bg + g->label_offset;
    const int32_t *ci = cls + (int64_t)a * k;
    for (int32_t col = 0; col < k; col++) {
      const int64_t r = (int64_t)o->max_classes_per_detection * d + col;
      memcpy(boxes + r * 4, dec + (int64_t)a * 4, 4 * sizeof(float));
      classes[r] = (float)ci[col];
      scores[r] = s[ci[col]];
    }
  }
  *(float *)node->outputs[3]->data = (float)n_sel;
}

static void dpp_regular(const ar_node_t *node, const dpp_geom_t *g, const float *dec, const float *pred,
                        float *ws, float *boxes, float *classes, float *scores) {
  const ar_detection_postprocess_options_t *o = dpp_opts(node);
  float *cs = ws + g->o_scores;
  int32_t *sel = (int32_t *)(void *)(ws + g->o_selected);
  int32_t *midx = (int32_t *)(void *)(ws + g->o_merged_idx);
  float *msc = ws + g->o_merged_score;
  int32_t *order = (int32_t *)(void *)(ws + g->o_sort2), *tmp = (int32_t *)(void *)(ws + g->o_tmp);
  float *vals = ws + g->o_vals2;
  int32_t *ord_idx = (int32_t *)(void *)(ws + g->o_ordidx);
  const int32_t per_class = AR_MIN(o->detections_per_class, o->max_detections);
  int32_t have = 0;   /* rows of the running top list in midx/msc */
  for (int32_t c = 0; c < o->num_classes; c++) {
    for (int32_t row = 0; row < g->boxes; row++)
      cs[row] = pred[(int64_t)row * g->classes_bg + c + g->label_offset];
    const int32_t n_sel = nms_single(g, o, dec, cs, per_class, sel, ws);
    int32_t n = have;
    for (int32_t d = 0; d < n_sel; d++, n++) {
      midx[n] = sel[d] * g->classes_bg + c + g->label_offset;
      msc[n] = cs[sel[d]];
    }
    /* Keep the top max_detections of previous list + this class, stable (earlier rows first). */
    for (int32_t i = 0; i < n; i++) order[i] = i;
    sort_desc(order, tmp, n, msc);   /* n <= max_detections + per_class: fits every array */
    const int32_t keep = AR_MIN(n, o->max_detections);
    for (int32_t i = 0; i < keep; i++) { ord_idx[i] = midx[order[i]]; vals[i] = msc[order[i]]; }
    for (int32_t i = 0; i < keep; i++) { midx[i] = ord_idx[i]; msc[i] = vals[i]; }
    have = keep;
  }
  for (int32_t r = 0; r < have; r++) {
    const int32_t anchor = midx[r] / g->classes_bg;
    const int32_t cls = midx[r] - anchor * g->classes_bg - g->label_offset;
    memcpy(boxes + (int64_t)r * 4, dec + (int64_t)anchor * 4, 4 * sizeof(float));
    classes[r] = (float)cls;
    scores[r] = msc[r];
  }
  *(float *)node->outputs[3]->data = (float)have;
}

static void dpp_eval(const ar_node_t *node) {
  dpp_geom_t g;
  dpp_geometry(node, &g);
  float *ws = node->scratch;
  float *boxes = node->outputs[0]->data, *classes = node->outputs[1]->data;
  float *scores = node->outputs[2]->data;
  memset(boxes, 0, (size_t)g.n_out * 4 * sizeof(float));
  memset(classes, 0, (size_t)g.n_out * sizeof(float));
  memset(scores, 0, (size_t)g.n_out * sizeof(float));
  float *dec = ws + g.o_decoded;
  decode_boxes(node, &g, dec);
  const ar_tview_t *cls = node->inputs[1];
  const float *pred = cls->data;
  if (cls->dtype != AR_DTYPE_FLOAT32) {
    float *deq = ws + g.o_deq_scores;
    const int64_t n = (int64_t)g.boxes * g.classes_bg;
    for (int64_t i = 0; i < n; i++) deq[i] = dpp_value(cls, i);
    pred = deq;
  }
  if (dpp_opts(node)->use_regular_nms) dpp_regular(node, &g, dec, pred, ws, boxes, classes, scores);
  else dpp_fast(node, &g, dec, pred, ws, boxes, classes, scores);
}

/* TFLite custom op TFLite_Detection_PostProcess: SSD box decoding + fast or per-class NMS. */
static const ar_kernel_form_t detection_postprocess_forms[] = {
  AR_KF(1, 1, FLOAT32, FLOAT32),
  AR_KF(1, 1, UINT8, FLOAT32),
  AR_KF(1, 1, INT8, FLOAT32),
};
const ar_kernel_t ar_kernel_detection_postprocess = { "TFLite_Detection_PostProcess", dpp_prepare,
                                                      NULL, dpp_eval,
  AR_KSUPPORT(detection_postprocess_forms, 0, -1) };
