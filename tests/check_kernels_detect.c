/* check_kernels_detect.c - TFLite_Detection_PostProcess and the FlexBuffers reader its options go
 * through (loader/ar_flexbuf.h).
 *
 * The FlexBuffers maps are built byte by byte here from the format's definition (values 4 bytes
 * wide); the reader must find every key, read ints, floats and bools, report absent keys, and
 * refuse truncated or out-of-bounds buffers. The post-process cases use anchors whose decoded
 * boxes are obvious (unit scales, zero size encodings give the anchor itself): overlapping boxes
 * suppressed or kept by the IoU threshold, the score threshold, max_detections, fewer boxes than
 * output rows (zero-filled), and both NMS modes, with every output value worked out by hand. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "kernels/ar_kernels.h"
#include "loader/ar_flexbuf.h"

/* ---- a FlexBuffers map writer (4-byte values), for the tests ---- */

enum { T_INT = 1, T_FLOAT = 3, T_BOOL = 26 };
typedef struct { const char *key; int type; double v; } kv_t;

static void put32(uint8_t *b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; i++) b[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

/* Writes the map into buf, returns its size. */
static size_t flex_map(uint8_t *buf, const kv_t *kv, int n) {
  size_t at = 0, key_pos[32];
  for (int i = 0; i < n; i++) {
    key_pos[i] = at;
    size_t l = strlen(kv[i].key) + 1;
    memcpy(buf + at, kv[i].key, l);
    at += l;
  }
  while (at % 4) buf[at++] = 0;
  put32(buf, at, (uint32_t)n); at += 4;            /* keys vector: count, then offsets */
  const size_t keys = at;
  for (int i = 0; i < n; i++, at += 4) put32(buf, at, (uint32_t)(at - key_pos[i]));
  const size_t koff_pos = at;                      /* map prefix: keys offset, width, count */
  at += 4;
  put32(buf, at, 4); at += 4;
  put32(buf, at, (uint32_t)n); at += 4;
  const size_t vals = at;
  put32(buf, koff_pos, (uint32_t)(koff_pos - keys));
  for (int i = 0; i < n; i++, at += 4) {
    if (kv[i].type == T_FLOAT) { float f = (float)kv[i].v; uint32_t u; memcpy(&u, &f, 4); put32(buf, at, u); }
    else put32(buf, at, (uint32_t)(int32_t)kv[i].v);
  }
  for (int i = 0; i < n; i++) buf[at++] = (uint8_t)(kv[i].type << 2 | 2);
  put32(buf, at, (uint32_t)(at - vals)); at += 4;  /* root: offset to the map */
  buf[at++] = 9 << 2 | 2;                          /* FBT_MAP, 4-byte values */
  buf[at++] = 4;                                   /* root width */
  return at;
}

START_TEST(flexbuf_reads_ints_floats_bools) {
  uint8_t buf[512];
  const kv_t kv[] = {{"max_detections", T_INT, 10}, {"nms_iou_threshold", T_FLOAT, 0.6},
                     {"use_regular_nms", T_BOOL, 1}, {"y_scale", T_FLOAT, 10}, {"neg", T_INT, -7}};
  size_t len = flex_map(buf, kv, 5);
  ar_flexmap_t m;
  ck_assert_int_eq(ar_flexmap_open(buf, len, &m), 0);
  double v;
  ck_assert_int_eq(ar_flexmap_number(&m, "max_detections", &v), 1); ck_assert(v == 10);
  ck_assert_int_eq(ar_flexmap_number(&m, "nms_iou_threshold", &v), 1); ck_assert(v == (double)0.6f);
  ck_assert_int_eq(ar_flexmap_number(&m, "use_regular_nms", &v), 1); ck_assert(v == 1);
  ck_assert_int_eq(ar_flexmap_number(&m, "neg", &v), 1); ck_assert(v == -7);
  ck_assert_int_eq(ar_flexmap_number(&m, "absent", &v), 0);
  /* Truncations: the root moves with the end, so the last bytes are read as a root; too short or
   * no map there is refused, and whatever opens must still read in bounds. */
  ck_assert_int_eq(ar_flexmap_open(buf, 0, &m), -1);
  ck_assert_int_eq(ar_flexmap_open(buf, 2, &m), -1);
  ck_assert_int_eq(ar_flexmap_open(buf, len - 1, &m), -1);
  for (size_t l = 0; l < len; l++)
    if (ar_flexmap_open(buf, l, &m) == 0) (void)ar_flexmap_number(&m, "y_scale", &v);
  /* A root offset pointing before the buffer. */
  uint8_t bad[512];
  memcpy(bad, buf, len);
  put32(bad, len - 6, 100000);
  ck_assert_int_eq(ar_flexmap_open(bad, len, &m), -1);
  /* Not a map at the root. */
  memcpy(bad, buf, len);
  bad[len - 2] = T_INT << 2 | 2;
  ck_assert_int_eq(ar_flexmap_open(bad, len, &m), -1);
  /* Every single-byte corruption is either refused or read within bounds (ASan/valgrind runs of
   * this suite would flag a stray read). */
  for (size_t i = 0; i < len; i++) {
    memcpy(bad, buf, len);
    bad[i] ^= 0xa5;
    if (ar_flexmap_open(bad, len, &m) == 0) (void)ar_flexmap_number(&m, "y_scale", &v);
  }
}
END_TEST

/* ---- TFLite_Detection_PostProcess ---- */

enum { MAXB = 8, MAXC = 4, MAXN = 8 };

typedef struct {
  float enc[MAXB * 4], cls[MAXB * MAXC], anc[MAXB * 4];
  float boxes[MAXN * 4], classes[MAXN], scores[MAXN], num;
  ar_tview_t t_enc, t_cls, t_anc, o_boxes, o_classes, o_scores, o_num;
  uint8_t q[3][MAXB * MAXC];      /* integer copies of enc, cls, anc (dpp_quantize) */
  ar_quant_t quant[3];
  float qscale[3];
  int64_t qzp[3];
  ar_options_t opt;
  ar_tview_t *io[7];   /* node.inputs (3), node.outputs (4) */
  ar_node_t node;
} dpp_t;

static void view(ar_tview_t *t, float *data, int rank, int d0, int d1, int d2) {
  memset(t, 0, sizeof *t);
  t->data = data; t->dtype = AR_DTYPE_FLOAT32; t->rank = rank;
  t->dims[0] = d0; t->dims[1] = d1; t->dims[2] = d2;
  uint64_t n = 1;
  for (int i = 0; i < rank; i++) n *= (uint64_t)t->dims[i];
  t->bytes = n * 4;
}

/* nb anchors (given as corner boxes ymin,xmin,ymax,xmax: encodings are 0 so they decode to
 * themselves), classes_bg columns of scores per anchor. */
static void dpp_setup(dpp_t *d, int nb, int classes_bg, const float *corners, const float *scores,
                      int num_classes, int max_det, int max_cls, bool regular) {
  memset(d, 0, sizeof *d);
  for (int i = 0; i < nb; i++) {
    const float *c = corners + 4 * i;
    d->anc[4 * i + 0] = (c[0] + c[2]) / 2; d->anc[4 * i + 1] = (c[1] + c[3]) / 2;
    d->anc[4 * i + 2] = c[2] - c[0];       d->anc[4 * i + 3] = c[3] - c[1];
  }
  memcpy(d->cls, scores, (size_t)nb * classes_bg * sizeof(float));
  view(&d->t_enc, d->enc, 3, 1, nb, 4);
  view(&d->t_cls, d->cls, 3, 1, nb, classes_bg);
  view(&d->t_anc, d->anc, 2, nb, 4, 0);
  d->t_anc.is_constant = true;
  const int n = max_det * max_cls;
  view(&d->o_boxes, d->boxes, 3, 1, n, 4);
  view(&d->o_classes, d->classes, 2, 1, n, 0);
  view(&d->o_scores, d->scores, 2, 1, n, 0);
  view(&d->o_num, &d->num, 1, 1, 0, 0);
  d->opt.detection_postprocess = (ar_detection_postprocess_options_t){
      .max_detections = max_det, .max_classes_per_detection = max_cls, .detections_per_class = 100,
      .num_classes = num_classes, .use_regular_nms = regular, .nms_score_threshold = 0.3f,
      .nms_iou_threshold = 0.5f, .y_scale = 1, .x_scale = 1, .h_scale = 1, .w_scale = 1};
  d->node.op = AR_OP_DETECTION_POSTPROCESS;
  d->node.index = 5;
  d->node.options = &d->opt;
  d->node.n_inputs = 3; d->node.n_outputs = 4;
  d->node.inputs = d->io;
  d->node.outputs = d->io + 3;
  d->node.inputs[0] = &d->t_enc; d->node.inputs[1] = &d->t_cls; d->node.inputs[2] = &d->t_anc;
  d->node.outputs[0] = &d->o_boxes; d->node.outputs[1] = &d->o_classes;
  d->node.outputs[2] = &d->o_scores; d->node.outputs[3] = &d->o_num;
}

/* Input `which` (0 box_encodings, 1 class_predictions, 2 anchors) becomes `dtype` (uint8 or int8)
 * with per-tensor (scale, zp): the codes are given, the float copy is left unused. */
static void dpp_quantize(dpp_t *d, int which, ar_dtype_t dtype, float scale, int64_t zp, const int *codes, int n) {
  ar_tview_t *t = which == 0 ? &d->t_enc : which == 1 ? &d->t_cls : &d->t_anc;
  for (int i = 0; i < n; i++) d->q[which][i] = (uint8_t)codes[i];
  d->qscale[which] = scale;
  d->qzp[which] = zp;
  d->quant[which] = (ar_quant_t){.n = 1, .scale = &d->qscale[which], .zero_point = &d->qzp[which]};
  t->data = d->q[which];
  t->dtype = dtype;
  t->quant = &d->quant[which];
  t->bytes /= 4;
}

static char g_msg[AR_MSG_BYTES];

static int dpp_run(dpp_t *d) {
  const ar_kernel_t *k = ar_kernel_for(AR_OP_DETECTION_POSTPROCESS);
  ck_assert_ptr_nonnull(k);
  int rc = k->prepare(&d->node, g_msg, sizeof g_msg);
  if (rc) return rc;
  d->node.scratch = malloc(d->node.scratch_bytes);
  memset(d->node.scratch, 0xff, d->node.scratch_bytes);   /* poison: nothing may read it unwritten */
  memset(d->boxes, 0x7f, sizeof d->boxes);                /* and stale outputs must be cleared */
  k->eval(&d->node);
  free(d->node.scratch);
  d->node.scratch = NULL;
  return 0;
}

static void expect_box(const dpp_t *d, int row, const float *c) {
  for (int j = 0; j < 4; j++)
    ck_assert_msg(fabsf(d->boxes[4 * row + j] - c[j]) < 1e-6f, "row %d coord %d: got %g want %g", row,
                  j, d->boxes[4 * row + j], c[j]);
}

/* Anchors: A [0,0,1,1], B [0,0.1,1,1.1] (IoU with A = 0.9/1.1 = 0.818), C [2,2,3,3] (disjoint),
 * D [0,0.5,1,1.5] (IoU with A 0.5/1.5 = 0.333, with B 0.6/1.4 = 0.43). */
static const float corners[16] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 2, 2, 3, 3, 0, 0.5f, 1, 1.5f};

START_TEST(fast_nms_suppresses_overlap_keeps_threshold) {
  /* One class plus background column 0. Scores A .9, B .8 (suppressed by A), C .7, D .6 (kept:
   * IoU .33 with A). max_detections 3 -> A, C, D. */
  const float sc[8] = {0, 0.9f, 0, 0.8f, 0, 0.7f, 0, 0.6f};
  dpp_t d;
  dpp_setup(&d, 4, 2, corners, sc, 1, 3, 1, false);
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 3);
  expect_box(&d, 0, corners + 0); expect_box(&d, 1, corners + 8); expect_box(&d, 2, corners + 12);
  const float ws[3] = {0.9f, 0.7f, 0.6f};
  for (int r = 0; r < 3; r++) { ck_assert_float_eq(d.scores[r], ws[r]); ck_assert_float_eq(d.classes[r], 0); }
  /* IoU threshold 0.3: D (IoU .33 with A) goes too; the row it leaves is zero. */
  d.opt.detection_postprocess.nms_iou_threshold = 0.3f;
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 2);
  const float zero[4] = {0, 0, 0, 0};
  expect_box(&d, 2, zero);
  ck_assert_float_eq(d.scores[2], 0);
  /* Score threshold 0.75 and IoU 0.9: A and B pass (B kept: IoU .818 <= .9), C and D do not. */
  d.opt.detection_postprocess.nms_iou_threshold = 0.9f;
  d.opt.detection_postprocess.nms_score_threshold = 0.75f;
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 2);
  expect_box(&d, 0, corners + 0); expect_box(&d, 1, corners + 4);
  ck_assert_float_eq(d.scores[1], 0.8f);
}
END_TEST

START_TEST(fast_nms_max_detections_and_fewer_boxes_than_rows) {
  const float sc[8] = {0, 0.9f, 0, 0.8f, 0, 0.7f, 0, 0.6f};
  dpp_t d;
  /* max_detections 1: only A. */
  dpp_setup(&d, 4, 2, corners, sc, 1, 1, 1, false);
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 1);
  expect_box(&d, 0, corners);
  /* Two anchors, eight output rows: two filled, six zero. */
  dpp_setup(&d, 2, 2, corners + 8, sc + 4, 1, 8, 1, false);
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 2);
  expect_box(&d, 0, corners + 8); expect_box(&d, 1, corners + 12);
  for (int r = 2; r < 8; r++) {
    ck_assert_float_eq(d.scores[r], 0);
    ck_assert_float_eq(d.classes[r], 0);
    ck_assert_float_eq(d.boxes[4 * r], 0);
  }
}
END_TEST

START_TEST(fast_nms_two_classes_per_detection) {
  /* Three classes, no background column; max_classes_per_detection 2: each selected anchor fills
   * two rows, its best then second-best class. A: (.1 .9 .5), C: (.8 .2 .3). */
  const float sc[6] = {0.1f, 0.9f, 0.5f, 0.8f, 0.2f, 0.3f};
  const float two[8] = {0, 0, 1, 1, 2, 2, 3, 3};
  dpp_t d;
  dpp_setup(&d, 2, 3, two, sc, 3, 2, 2, false);
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 2);
  const float wc[4] = {1, 2, 0, 2}, ws[4] = {0.9f, 0.5f, 0.8f, 0.3f};
  for (int r = 0; r < 4; r++) {
    ck_assert_float_eq(d.classes[r], wc[r]);
    ck_assert_float_eq(d.scores[r], ws[r]);
  }
  expect_box(&d, 1, two); expect_box(&d, 3, two + 4);
}
END_TEST

START_TEST(regular_nms_per_class_then_top_scores) {
  /* Two classes (+ background). Class 0: A .9, B .85 (suppressed by A), C .4, D .2 (below .3).
   * Class 1: A .1, B .95, C .35, D .7 (D IoU .43 with B: kept at .5).
   * Per class: class 0 -> A .9, C .4; class 1 -> B .95, D .7, C .35. Top 4 overall: B(1) .95,
   * A(0) .9, D(1) .7, C(0) .4. */
  const float sc[12] = {0, 0.9f, 0.1f, 0, 0.85f, 0.95f, 0, 0.4f, 0.35f, 0, 0.2f, 0.7f};
  dpp_t d;
  dpp_setup(&d, 4, 3, corners, sc, 2, 4, 1, true);
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 4);
  const float wc[4] = {1, 0, 1, 0}, ws[4] = {0.95f, 0.9f, 0.7f, 0.4f};
  const int wa[4] = {1, 0, 3, 2};
  for (int r = 0; r < 4; r++) {
    ck_assert_float_eq(d.classes[r], wc[r]);
    ck_assert_float_eq(d.scores[r], ws[r]);
    expect_box(&d, r, corners + 4 * wa[r]);
  }
  /* detections_per_class 1: class 0 -> A, class 1 -> B; two rows, the rest zero. */
  d.opt.detection_postprocess.detections_per_class = 1;
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 2);
  ck_assert_float_eq(d.scores[0], 0.95f);
  ck_assert_float_eq(d.scores[1], 0.9f);
  ck_assert_float_eq(d.scores[2], 0);
  /* max_detections 2 (outputs [1,2,...]): the top two across classes. */
  dpp_setup(&d, 4, 3, corners, sc, 2, 2, 1, true);
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 2);
  ck_assert_float_eq(d.classes[0], 1); ck_assert_float_eq(d.classes[1], 0);
}
END_TEST

START_TEST(decode_center_size_with_scales) {
  /* Anchor (yc .5, xc .5, h 1, w 2); encoding (1, -2, ln 4 * 5, 0) with scales (10, 10, 5, 5):
   * yc = .1 * 1 + .5 = .6, xc = -.2 * 2 + .5 = .1, h = exp(ln 4) * 1 = 4, w = 1 * 2 = 2
   * -> ymin -1.4, xmin -.9, ymax 2.6, xmax 1.1. */
  dpp_t d;
  const float one[4] = {0, 0, 1, 1}, sc[2] = {0, 0.9f};
  dpp_setup(&d, 1, 2, one, sc, 1, 1, 1, false);
  d.anc[0] = 0.5f; d.anc[1] = 0.5f; d.anc[2] = 1; d.anc[3] = 2;
  d.enc[0] = 1; d.enc[1] = -2; d.enc[2] = logf(4) * 5; d.enc[3] = 0;
  d.opt.detection_postprocess.y_scale = 10; d.opt.detection_postprocess.x_scale = 10;
  d.opt.detection_postprocess.h_scale = 5; d.opt.detection_postprocess.w_scale = 5;
  ck_assert_int_eq(dpp_run(&d), 0);
  const float want[4] = {-1.4f, -0.9f, 2.6f, 1.1f};
  expect_box(&d, 0, want);
}
END_TEST

START_TEST(prepare_checks_shapes) {
  const float sc[8] = {0, 0.9f, 0, 0.8f, 0, 0.7f, 0, 0.6f};
  dpp_t d;
  dpp_setup(&d, 4, 2, corners, sc, 1, 3, 1, false);
  d.o_boxes.dims[1] = 2;   /* stored [1,2,4], inferred [1,3,4] */
  ck_assert_int_eq(dpp_run(&d), AR_ESHAPE);
  ck_assert_str_eq(g_msg, "operator 5 (TFLite_Detection_PostProcess): output 0 shape [1,2,4], "
                          "inferred [1,3,4]");
  dpp_setup(&d, 4, 2, corners, sc, 1, 3, 1, false);
  d.o_num.rank = 0;        /* stored without a shape, as converters often write it */
  d.node.infer_shapes = true;   /* the interpreter prepares such a node so: prepare sizes it */
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_int_eq(d.o_num.rank, 1);
  ck_assert_int_eq(d.o_num.dims[0], 1);
  ck_assert_uint_eq(d.o_num.bytes, 4);
  dpp_setup(&d, 4, 2, corners, sc, 1, 3, 1, false);
  d.o_num.rank = 0;        /* without infer_shapes a stored [] is a mismatch like any other */
  ck_assert_int_eq(dpp_run(&d), AR_ESHAPE);
  ck_assert_str_eq(g_msg, "operator 5 (TFLite_Detection_PostProcess): output 3 shape [], inferred [1]");
  dpp_setup(&d, 4, 2, corners, sc, 3, 3, 1, false);   /* 2 columns cannot hold 3 classes */
  ck_assert_int_eq(dpp_run(&d), AR_ESHAPE);
  ck_assert_ptr_nonnull(strstr(g_msg, "num_classes is 3"));
}
END_TEST

/* Quantized anchors on a 1/16 grid: A [0,0,1,1], B [0,.125,1,1.125] (IoU with A .875/1.125 = .78),
 * C [2,2,3,3], D [0,.5,1,1.5] (IoU with A .5/1.5 = .33), as uint8 (yc, xc, h, w) / 16, zp 0. */
static const int q_anchors[16] = {8, 8, 16, 16, 8, 10, 16, 16, 40, 40, 16, 16, 8, 16, 16, 16};
static const float q_corners[16] = {0, 0, 1, 1, 0, 0.125f, 1, 1.125f, 2, 2, 3, 3, 0, 0.5f, 1, 1.5f};
static const int q_zero_enc[16] = {128, 128, 128, 128, 128, 128, 128, 128,
                                   128, 128, 128, 128, 128, 128, 128, 128};

START_TEST(uint8_inputs_dequantized_fast_nms) {
  /* SSD-like: uint8 encodings (zp 128 -> 0), uint8 anchors, uint8 scores with scale 1/256 and zp 0
   * plus a background column. Scores A 230/256 = .8984375, B 204 -> .796875 (suppressed by A),
   * C 179 -> .69921875, D 77 -> .30078125 (>= .3: kept), so A, C, D. */
  const float unused[8] = {0};
  const int sc[8] = {255, 230, 255, 204, 255, 179, 255, 77};
  dpp_t d;
  dpp_setup(&d, 4, 2, q_corners, unused, 1, 3, 1, false);
  dpp_quantize(&d, 0, AR_DTYPE_UINT8, 0.5f, 128, q_zero_enc, 16);
  dpp_quantize(&d, 1, AR_DTYPE_UINT8, 1.0f / 256, 0, sc, 8);
  dpp_quantize(&d, 2, AR_DTYPE_UINT8, 1.0f / 16, 0, q_anchors, 16);
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 3);
  expect_box(&d, 0, q_corners); expect_box(&d, 1, q_corners + 8); expect_box(&d, 2, q_corners + 12);
  ck_assert_float_eq(d.scores[0], 0.8984375f);
  ck_assert_float_eq(d.scores[1], 0.69921875f);
  ck_assert_float_eq(d.scores[2], 0.30078125f);
  /* D at 76/256 = .296875 falls under the .3 score threshold: two rows, the third zero. */
  d.q[1][7] = 76;
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 2);
  ck_assert_float_eq(d.scores[2], 0);
  ck_assert_float_eq(d.boxes[8], 0);
  /* max_detections 1 with equal codes for C and A (ties are common once quantized): the lower
   * anchor index wins, as TFLite's stable sort gives. */
  dpp_setup(&d, 4, 2, q_corners, unused, 1, 1, 1, false);
  const int tie[8] = {0, 179, 0, 100, 0, 179, 0, 10};
  dpp_quantize(&d, 0, AR_DTYPE_UINT8, 0.5f, 128, q_zero_enc, 16);
  dpp_quantize(&d, 1, AR_DTYPE_UINT8, 1.0f / 256, 0, tie, 8);
  dpp_quantize(&d, 2, AR_DTYPE_UINT8, 1.0f / 16, 0, q_anchors, 16);
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 1);
  expect_box(&d, 0, q_corners);
}
END_TEST

START_TEST(int8_scores_regular_nms_and_fewer_boxes_than_rows) {
  /* int8 scores, scale 1/256, zp -128: code c -> (c + 128) / 256. Two classes + background.
   * Class 0: A 102 (.8984375), B 76 (.796875, IoU .78 with A: suppressed), C -28 (.390625),
   * D -60 (.265625 < .3). Class 1: all -128 (0). Eight rows for three detections: A, C, then zeros.
   * Float anchors and encodings beside the int8 scores: each input follows its own dtype. */
  const float s0[12] = {0};
  const int sc[12] = {-128, 102, -128, -128, 76, -128, -128, -28, -128, -128, -60, -128};
  dpp_t d;
  dpp_setup(&d, 4, 3, q_corners, s0, 2, 8, 1, true);
  int codes[12];
  for (int i = 0; i < 12; i++) codes[i] = (uint8_t)(int8_t)sc[i];
  dpp_quantize(&d, 1, AR_DTYPE_INT8, 1.0f / 256, -128, codes, 12);
  ck_assert_int_eq(dpp_run(&d), 0);
  ck_assert_float_eq(d.num, 2);
  expect_box(&d, 0, q_corners); expect_box(&d, 1, q_corners + 8);
  ck_assert_float_eq(d.scores[0], 0.8984375f); ck_assert_float_eq(d.scores[1], 0.390625f);
  ck_assert_float_eq(d.classes[0], 0); ck_assert_float_eq(d.classes[1], 0);
  for (int r = 2; r < 8; r++) {
    ck_assert_float_eq(d.scores[r], 0);
    ck_assert_float_eq(d.boxes[4 * r + 2], 0);
  }
}
END_TEST

START_TEST(int8_encodings_decode) {
  /* int8 encodings, scale .25, zp 2: codes (6, -6, 10, 2) -> (1, -2, 2, 0); float anchor
   * (.5, .5, 1, 2), scales (10, 10, 1, 5): yc = .1 * 1 + .5 = .6, xc = -.2 * 2 + .5 = .1,
   * half_h = exp(2) / 2, half_w = 1 * 2 / 2 = 1. */
  dpp_t d;
  const float one[4] = {0, 0, 1, 1}, sc[2] = {0, 0.9f};
  dpp_setup(&d, 1, 2, one, sc, 1, 1, 1, false);
  d.anc[0] = 0.5f; d.anc[1] = 0.5f; d.anc[2] = 1; d.anc[3] = 2;
  const int enc[4] = {6, (uint8_t)(int8_t)-6, 10, 2};
  dpp_quantize(&d, 0, AR_DTYPE_INT8, 0.25f, 2, enc, 4);
  d.opt.detection_postprocess.y_scale = 10; d.opt.detection_postprocess.x_scale = 10;
  d.opt.detection_postprocess.h_scale = 1; d.opt.detection_postprocess.w_scale = 5;
  ck_assert_int_eq(dpp_run(&d), 0);
  const double hh = 0.5 * exp(2.0);
  const float want[4] = {(float)(0.6 - hh), -0.9f, (float)(0.6 + hh), 1.1f};
  expect_box(&d, 0, want);
  /* An integer input without quantization parameters is refused at prepare, naming it. */
  d.t_enc.quant = NULL;
  ck_assert_int_eq(dpp_run(&d), AR_EUNSUPPORTED);
  ck_assert_msg(strstr(g_msg, "box_encodings (input 0) is INT8 without per-tensor quantization"), "%s", g_msg);
  d.t_enc.quant = &d.quant[0];
  d.t_enc.dtype = AR_DTYPE_INT16;
  ck_assert_int_eq(dpp_run(&d), AR_EUNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(g_msg, "expected float32, uint8 or int8"));
}
END_TEST

/* Issue 28: an anchor with a negative height or width decodes inverted boxes, which TFLite refuses
 * at every invoke (ValidateBoxes); constant anchors are refused at prepare, naming the anchor and
 * its values (before: prepare accepted and eval returned boxes with ymin > ymax and their scores).
 * Anchors that are not constants cannot be judged at prepare and still run. */
START_TEST(negative_anchor_size_refused_at_prepare) {
  const float bad[16] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 3, 2, 2, 3, 0, 0.5f, 1, 1.5f};   /* anchor 2: h -1 */
  const float sc[8] = {0, 0.9f, 0, 0.8f, 0, 0.7f, 0, 0.6f};
  dpp_t d;
  dpp_setup(&d, 4, 2, bad, sc, 1, 3, 1, false);
  ck_assert_int_eq(dpp_run(&d), AR_EINVAL);
  ck_assert_str_eq(g_msg, "operator 5 (TFLite_Detection_PostProcess): anchor 2 (y 2.5, x 2.5, h -1, w 1) has "
                          "a negative height: its boxes decode inverted (ymin > ymax or xmin > xmax), which "
                          "TFLite refuses at every invoke");
  d.anc[4 * 1 + 3] = -0.5f;   /* anchor 1 too, width: the first one is named */
  ck_assert_int_eq(dpp_run(&d), AR_EINVAL);
  ck_assert_msg(strstr(g_msg, "anchor 1 (y 0.5, x 0.6, h 1, w -0.5) has a negative width") != NULL, "%s", g_msg);
  d.t_anc.is_constant = false;   /* a graph input: not known at prepare */
  ck_assert_int_eq(dpp_run(&d), 0);
  /* quantized anchors: codes (q - 128) * 0.25, anchor 3's w code 124 = -1 */
  dpp_setup(&d, 4, 2, corners, sc, 1, 3, 1, false);
  const int codes[16] = {130, 130, 132, 132, 130, 130, 132, 132, 138, 138, 132, 132, 130, 132, 132, 124};
  dpp_quantize(&d, 2, AR_DTYPE_UINT8, 0.25f, 128, codes, 16);
  ck_assert_int_eq(dpp_run(&d), AR_EINVAL);
  ck_assert_msg(strstr(g_msg, "anchor 3 (y 0.5, x 1, h 1, w -1) has a negative width") != NULL, "%s", g_msg);
  /* zero sizes are degenerate boxes, which TFLite accepts */
  dpp_setup(&d, 4, 2, corners, sc, 1, 3, 1, false);
  d.anc[2] = 0;
  ck_assert_int_eq(dpp_run(&d), 0);
}
END_TEST

/* ---- PosenetDecoderOp ---- */

/* A grid of 9 x 18 cells (stride 16). Person A's keypoint k peaks (logit hi) at cell (1 + k % 7,
 * 1 + 3 (k / 7)), its neighbours left, below and below-left at hi - 1 (not peaks: lower than a
 * neighbour); person B is A moved 9 columns right, logits 0.5 lower. Everywhere in a person's half
 * the short offsets of keypoint k point at (peak + (0.25, -0.5)) (an affine field: the bilinear
 * samples are exact), mid-range displacements 0. So every keypoint of a person lands at its peak +
 * (0.25, -0.5) cells, and its logit there is 0.75 (hi - 0.5) + 0.25 (hi - 1) = hi - 0.625. */
#define PN_H 9
#define PN_W 18
typedef struct {
  float hm[PN_H * PN_W * 17], so[PN_H * PN_W * 34], mo[PN_H * PN_W * 64];
  float kp[1 * 4 * 17 * 2], ks[4 * 17], ps[4], n[1];
  ar_tview_t in[3], out[4];
  ar_tview_t *ins[3], *outs[4];
  ar_node_t node;
  uint8_t co[256];
} pn_t;

static void pn_target(int person, int k, float *y, float *x) {
  *y = (float)(1 + k % 7) + 0.25f;
  *x = (float)(1 + 3 * (k / 7) + 9 * person) - 0.5f;
}

static void pn_setup(pn_t *p, bool two, int max_det, double thr, double nms_px) {
  memset(p, 0, sizeof *p);
  for (int i = 0; i < PN_H * PN_W * 17; i++) p->hm[i] = -10.0f;
  for (int person = 0; person < (two ? 2 : 1); person++)
    for (int k = 0; k < 17; k++) {
      const int cy = 1 + k % 7, cx = 1 + 3 * (k / 7) + 9 * person;
      const float hi = person ? 4.5f : 5.0f;
      p->hm[(cy * PN_W + cx) * 17 + k] = hi;
      p->hm[(cy * PN_W + cx - 1) * 17 + k] = hi - 1;
      p->hm[((cy + 1) * PN_W + cx) * 17 + k] = hi - 1;
      p->hm[((cy + 1) * PN_W + cx - 1) * 17 + k] = hi - 1;
    }
  for (int y = 0; y < PN_H; y++)
    for (int x = 0; x < PN_W; x++)
      for (int k = 0; k < 17; k++) {
        float ty, tx;
        pn_target(x >= 9, k, &ty, &tx);
        p->so[(y * PN_W + x) * 34 + k] = (ty - (float)y) * 16.0f;
        p->so[(y * PN_W + x) * 34 + 17 + k] = (tx - (float)x) * 16.0f;
      }
  const kv_t kv[] = {{"max_detections", T_INT, max_det}, {"nms_radius", T_FLOAT, nms_px},
                     {"score_threshold", T_FLOAT, thr}, {"stride", T_INT, 16}};
  const size_t nb = flex_map(p->co, kv, 4);
  float *in_data[3] = {p->hm, p->so, p->mo};
  const int ch[3] = {17, 34, 64};
  for (int i = 0; i < 3; i++) {
    ar_tview_t *t = &p->in[i];
    t->data = in_data[i]; t->dtype = AR_DTYPE_FLOAT32; t->rank = 4;
    t->dims[0] = 1; t->dims[1] = PN_H; t->dims[2] = PN_W; t->dims[3] = ch[i];
    t->bytes = (uint64_t)PN_H * PN_W * (uint64_t)ch[i] * 4;
    p->ins[i] = t;
  }
  float *out_data[4] = {p->kp, p->ks, p->ps, p->n};
  const int ranks[4] = {4, 3, 2, 1};
  const int32_t dims[4][4] = {{1, max_det, 17, 2}, {1, max_det, 17, 0}, {1, max_det, 0, 0}, {1, 0, 0, 0}};
  for (int o = 0; o < 4; o++) {
    ar_tview_t *t = &p->out[o];
    t->data = out_data[o]; t->dtype = AR_DTYPE_FLOAT32; t->rank = ranks[o];
    uint64_t e = 1;
    for (int d = 0; d < ranks[o]; d++) t->dims[d] = dims[o][d], e *= (uint64_t)dims[o][d];
    t->bytes = e * 4;
    p->outs[o] = t;
  }
  p->node.op = AR_OP_POSENET_DECODER; p->node.index = 5; p->node.version = 1;
  p->node.custom_options = p->co; p->node.custom_options_bytes = (uint32_t)nb;
  p->node.n_inputs = 3; p->node.inputs = p->ins;
  p->node.n_outputs = 4; p->node.outputs = p->outs;
  p->node.threads = 1;
}

static int pn_run(pn_t *p) {
  const ar_kernel_t *k = ar_kernel_for(AR_OP_POSENET_DECODER);
  ck_assert_ptr_nonnull(k);
  g_msg[0] = '\0';
  int rc = k->prepare(&p->node, g_msg, sizeof g_msg);
  if (rc) return rc;
  p->node.state = calloc(1, p->node.state_bytes);
  p->node.scratch = malloc(p->node.scratch_bytes);
  memset(p->node.scratch, 0xff, p->node.scratch_bytes);
  memset(p->kp, 0x7f, sizeof p->kp);   /* rows past the count must be cleared */
  k->init(&p->node);
  k->eval(&p->node);
  free(p->node.state);
  free(p->node.scratch);
  p->node.state = p->node.scratch = NULL;
  return 0;
}

static float pn_sig(float x) { return 1.0f / (1.0f + expf(-x)); }

static void pn_expect_person(const pn_t *p, int row, int person) {
  const float score = pn_sig((person ? 4.5f : 5.0f) - 0.625f);
  for (int k = 0; k < 17; k++) {
    float ty, tx;
    pn_target(person, k, &ty, &tx);
    const float *kp = p->kp + (row * 17 + k) * 2;
    ck_assert_msg(fabsf(kp[0] - ty * 16) < 1e-3f && fabsf(kp[1] - tx * 16) < 1e-3f,
                  "row %d keypoint %d at (%g,%g), want (%g,%g)", row, k, kp[0], kp[1], ty * 16, tx * 16);
    ck_assert_msg(fabsf(p->ks[row * 17 + k] - score) < 1e-5f, "row %d keypoint %d score %g, want %g", row, k,
                  p->ks[row * 17 + k], score);
  }
  ck_assert_msg(fabsf(p->ps[row] - score) < 1e-5f, "row %d pose score %g, want %g", row, p->ps[row], score);
}

START_TEST(posenet_one_clear_person) {
  static pn_t p;
  pn_setup(&p, false, 3, 0.5, 20);
  ck_assert_msg(pn_run(&p) == 0, "%s", g_msg);
  ck_assert_float_eq(p.n[0], 1.0f);
  pn_expect_person(&p, 0, 0);
  for (int i = 17 * 2; i < 3 * 17 * 2; i++) ck_assert_float_eq(p.kp[i], 0.0f);
  ck_assert_float_eq(p.ps[1], 0.0f);
}
END_TEST

START_TEST(posenet_two_people_and_nms) {
  static pn_t p;
  pn_setup(&p, true, 3, 0.5, 20);   /* 20 px < the 144 px between them */
  ck_assert_msg(pn_run(&p) == 0, "%s", g_msg);
  ck_assert_float_eq(p.n[0], 2.0f);
  pn_expect_person(&p, 0, 0);   /* the stronger first */
  pn_expect_person(&p, 1, 1);
  pn_setup(&p, true, 3, 0.5, 160);  /* 160 px: every root of B is within A's same keypoint */
  ck_assert_msg(pn_run(&p) == 0, "%s", g_msg);
  ck_assert_float_eq(p.n[0], 1.0f);
  pn_expect_person(&p, 0, 0);
  pn_setup(&p, true, 1, 0.5, 20);   /* max_detections 1 */
  ck_assert_msg(pn_run(&p) == 0, "%s", g_msg);
  ck_assert_float_eq(p.n[0], 1.0f);
  pn_expect_person(&p, 0, 0);
}
END_TEST

START_TEST(posenet_score_threshold_cuts) {
  static pn_t p;
  /* A scores sigmoid(4.375) = 0.98757, B sigmoid(3.875) = 0.97967 */
  pn_setup(&p, true, 3, 0.985, 20);
  ck_assert_msg(pn_run(&p) == 0, "%s", g_msg);
  ck_assert_float_eq(p.n[0], 1.0f);
  pn_expect_person(&p, 0, 0);
  pn_setup(&p, true, 3, 0.99, 20);
  ck_assert_msg(pn_run(&p) == 0, "%s", g_msg);
  ck_assert_float_eq(p.n[0], 0.0f);
  ck_assert_float_eq(p.ps[0], 0.0f);
}
END_TEST

START_TEST(posenet_refuses_malformed_options) {
  static pn_t p;
  pn_setup(&p, false, 3, 0.5, 20);
  const ar_kernel_t *k = ar_kernel_for(AR_OP_POSENET_DECODER);
  const struct { kv_t kv[4]; int n; const char *want; } bad[] = {
    {{{"max_detections", T_INT, 3}, {"nms_radius", T_FLOAT, 20}, {"score_threshold", T_FLOAT, 0.5}}, 3,
     "custom option stride is missing"},
    {{{"max_detections", T_INT, 0}, {"nms_radius", T_FLOAT, 20}, {"score_threshold", T_FLOAT, 0.5}, {"stride", T_INT, 16}}, 4,
     "max_detections = 0 is not an integer in 1..1000"},
    {{{"max_detections", T_INT, 3}, {"nms_radius", T_FLOAT, 20}, {"score_threshold", T_FLOAT, 1.5}, {"stride", T_INT, 16}}, 4,
     "score_threshold = 1.5 is not in [0, 1]"},
    {{{"max_detections", T_INT, 3}, {"nms_radius", T_FLOAT, -1}, {"score_threshold", T_FLOAT, 0.5}, {"stride", T_INT, 16}}, 4,
     "nms_radius = -1 is not in [0, 1e6)"},
    {{{"max_detections", T_INT, 3}, {"nms_radius", T_FLOAT, 20}, {"score_threshold", T_FLOAT, 0.5}, {"stride", T_INT, 0}}, 4,
     "stride = 0 is not an integer in 1..1024"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    p.node.custom_options_bytes = (uint32_t)flex_map(p.co, bad[i].kv, bad[i].n);
    ck_assert_int_eq(k->prepare(&p.node, g_msg, sizeof g_msg), AR_EINVAL);
    ck_assert_msg(strstr(g_msg, "operator 5 (PosenetDecoderOp)") && strstr(g_msg, bad[i].want), "%s", g_msg);
  }
  p.node.custom_options_bytes = 3;
  ck_assert_int_eq(k->prepare(&p.node, g_msg, sizeof g_msg), AR_EINVAL);
  ck_assert_msg(strstr(g_msg, "are not a FlexBuffers map"), "%s", g_msg);
  /* mid-range displacements with the wrong channel count */
  pn_setup(&p, false, 3, 0.5, 20);
  p.in[2].dims[3] = 32;
  ck_assert_int_eq(k->prepare(&p.node, g_msg, sizeof g_msg), AR_ESHAPE);
  ck_assert_msg(strstr(g_msg, "input 2 (mid-range displacements) must be [1,H,W,64]"), "%s", g_msg);
}
END_TEST

/* uint8 inputs (as an Edge TPU PoseNet hands them over): the same person quantized exactly
 * (heatmaps scale 0.1 zero point 100, offsets scale 4 zero point 128) decodes as the float one. */
START_TEST(posenet_uint8_inputs_dequantized) {
  static pn_t p;
  static uint8_t q[3][PN_H * PN_W * 64];
  pn_setup(&p, false, 3, 0.5, 20);
  const float scale[3] = {0.1f, 4.0f, 4.0f};
  const int64_t zp[3] = {100, 128, 128};
  static ar_quant_t qp[3];
  const float *src[3] = {p.hm, p.so, p.mo};
  for (int i = 0; i < 3; i++) {
    const int n = PN_H * PN_W * (int)p.in[i].dims[3];
    for (int e = 0; e < n; e++) {
      const float c = roundf(src[i][e] / scale[i]) + (float)zp[i];
      ck_assert_msg(c >= 0 && c <= 255 && ((c - (float)zp[i]) * scale[i]) == src[i][e], "input %d [%d] %g", i, e, src[i][e]);
      q[i][e] = (uint8_t)c;
    }
    qp[i] = (ar_quant_t){1, 0, &scale[i], &zp[i]};
    p.in[i].data = q[i]; p.in[i].dtype = AR_DTYPE_UINT8; p.in[i].bytes = (uint64_t)n; p.in[i].quant = &qp[i];
  }
  ck_assert_msg(pn_run(&p) == 0, "%s", g_msg);
  ck_assert_float_eq(p.n[0], 1.0f);
  pn_expect_person(&p, 0, 0);
  p.in[1].quant = NULL;
  ck_assert_int_eq(ar_kernel_for(AR_OP_POSENET_DECODER)->prepare(&p.node, g_msg, sizeof g_msg), AR_EINVAL);
  ck_assert_msg(strstr(g_msg, "input 1 (short offsets) is uint8 without one scale and zero point"), "%s", g_msg);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("kernels_detect");
  TCase *tc = tcase_create("flexbuf");
  tcase_add_test(tc, flexbuf_reads_ints_floats_bools);
  suite_add_tcase(s, tc);
  tc = tcase_create("postprocess");
  tcase_add_test(tc, fast_nms_suppresses_overlap_keeps_threshold);
  tcase_add_test(tc, fast_nms_max_detections_and_fewer_boxes_than_rows);
  tcase_add_test(tc, fast_nms_two_classes_per_detection);
  tcase_add_test(tc, regular_nms_per_class_then_top_scores);
  tcase_add_test(tc, decode_center_size_with_scales);
  tcase_add_test(tc, prepare_checks_shapes);
  tcase_add_test(tc, uint8_inputs_dequantized_fast_nms);
  tcase_add_test(tc, int8_scores_regular_nms_and_fewer_boxes_than_rows);
  tcase_add_test(tc, int8_encodings_decode);
  tcase_add_test(tc, negative_anchor_size_refused_at_prepare);
  tcase_add_test(tc, posenet_one_clear_person);
  tcase_add_test(tc, posenet_two_people_and_nms);
  tcase_add_test(tc, posenet_score_threshold_cuts);
  tcase_add_test(tc, posenet_refuses_malformed_options);
  tcase_add_test(tc, posenet_uint8_inputs_dequantized);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
