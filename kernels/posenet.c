/* posenet.c - the Coral PoseNet decoder custom operator (PosenetDecoderOp): multi-pose decoding of
 * PoseNet's heatmaps, short-range offsets and mid-range displacements into keypoints, as the
 * documented algorithm of google-coral's posenet_decoder (written from its description).
 *
 * Inputs (float32, or uint8 dequantized with their scale / zero point), batch 1, K = 17 keypoints,
 * E = 16 edges of the pose tree (32 with the backward ones):
 *   0 heatmaps [1,H,W,K]: keypoint logits;
 *   1 short offsets [1,H,W,2K] in pixels: y of keypoint k at channel k, x at K + k;
 *   2 mid-range displacements [1,H,W,4E] in pixels: [forward y | forward x | backward y | backward x].
 * Outputs (float32): 0 keypoints [1,D,K,2] (y, x in pixels), 1 keypoint scores [1,D,K] (sigmoid),
 * 2 pose scores [1,D], 3 the pose count [1] (a float, as the operator writes it); D = max_detections.
 * Options (FlexBuffers map, all required): max_detections (1..1000), score_threshold (0..1),
 * stride (1..1024), nms_radius (>= 0, pixels).
 * Decoding, on the grid (offsets and the radius divided by stride):
 *   - candidates: every (y, x, k) whose logit >= logodds(score_threshold) and is the maximum of its
 *     3x3 neighbourhood for k, moved by its short offset (clamped to the grid), by decreasing logit
 *     (equal logits in scan order);
 *   - a candidate (root) within nms_radius of the same keypoint of an accepted pose is skipped;
 *     else the pose grows from it by decreasing score: from a decoded keypoint along each tree edge
 *     to an undecoded child: the mid-range displacement at the parent (bilinear), then 5 steps of
 *     the child's short offset (bilinear), each clamped to the grid; the child's score is the
 *     bilinear heatmap logit there. Undecoded keypoints stay at (-1, -1) with logit -1e5;
 *   - a pose is accepted when the mean of its 17 sigmoid scores >= score_threshold; up to D;
 *   - then soft keypoint NMS: in decreasing pose score order, a keypoint within nms_radius of the
 *     same keypoint of a higher-scoring pose no longer counts, the pose score is the sum of the
 *     others / 17; poses below score_threshold are dropped, the rest written by decreasing score,
 *     coordinates times stride. Rows past the count are zero.
 * As the reference decoder, a backward edge is looked up at index e + 16 of the displacements only
 * for e > 16 (the first backward edge, left eye -> nose, reads the forward block).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ar_kernel_check.h"
#include "kernels/ar_kernel_impl.h"
#include "loader/ar_flexbuf.h"

#define PN_K 17
#define PN_E 16
#define PN_MAX_DET 1000
#define PN_STEPS 5

/* The pose tree: 16 forward edges (parent, child), then the same reversed. */
static const uint8_t pn_edges[2 * PN_E][2] = {
  {0, 1}, {1, 3}, {0, 2}, {2, 4}, {0, 5}, {5, 7}, {7, 9}, {5, 11}, {11, 13}, {13, 15},
  {0, 6}, {6, 8}, {8, 10}, {6, 12}, {12, 14}, {14, 16},
  {1, 0}, {3, 1}, {2, 0}, {4, 2}, {5, 0}, {7, 5}, {9, 7}, {11, 5}, {13, 11}, {15, 13},
  {6, 0}, {8, 6}, {10, 8}, {12, 6}, {14, 12}, {16, 14},
};

typedef struct { float y, x; } pn_pt_t;
typedef struct { pn_pt_t p; float score; int32_t id, order; } pn_cand_t;

typedef struct pn_state {
  int32_t max_det, stride;
  float score_threshold, nms_radius;
} pn_state_t;

static const char *const pn_keys[] = {"max_detections", "nms_radius", "score_threshold", "stride"};

static int pn_options(const ar_node_t *node, pn_state_t *st, char *msg, size_t msg_bytes) {
  ar_flexmap_t m;
  if (!node->custom_options || ar_flexmap_open(node->custom_options, node->custom_options_bytes, &m) != 0)
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "custom_options (%u bytes) are not a FlexBuffers map",
                    (unsigned)node->custom_options_bytes);
  double v[4];
  for (int i = 0; i < 4; i++) {
    const int rc = ar_flexmap_number(&m, pn_keys[i], &v[i]);
    if (rc < 0) return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "custom option %s is malformed or not a number", pn_keys[i]);
    if (rc == 0) return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "custom option %s is missing", pn_keys[i]);
  }
  if (!(v[0] >= 1 && v[0] <= PN_MAX_DET) || v[0] != floor(v[0]))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "max_detections = %g is not an integer in 1..%d", v[0], PN_MAX_DET);
  if (!(v[1] >= 0 && v[1] < 1e6))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "nms_radius = %g is not in [0, 1e6)", v[1]);
  if (!(v[2] >= 0 && v[2] <= 1))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "score_threshold = %g is not in [0, 1]", v[2]);
  if (!(v[3] >= 1 && v[3] <= 1024) || v[3] != floor(v[3]))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "stride = %g is not an integer in 1..1024", v[3]);
  st->max_det = (int32_t)v[0];
  st->nms_radius = (float)v[1];
  st->score_threshold = (float)v[2];
  st->stride = (int32_t)v[3];
  return 0;
}

static int pn_input(const ar_node_t *node, int i, const char *what, int32_t channels, const ar_tview_t *hm,
                    char *msg, size_t msg_bytes) {
  const ar_tview_t *t = node->inputs[i];
  if (t->dtype != AR_DTYPE_FLOAT32 && t->dtype != AR_DTYPE_UINT8)
    return AR_K_ERR(node, msg, msg_bytes, AR_EUNSUPPORTED, "input %d (%s) has dtype %s, expected FLOAT32 or UINT8", i,
                    what, ar_dtype_name(t->dtype));
  if (t->dtype == AR_DTYPE_UINT8 && (!t->quant || t->quant->n != 1))
    return AR_K_ERR(node, msg, msg_bytes, AR_EINVAL, "input %d (%s) is uint8 without one scale and zero point", i, what);
  if (t->rank != 4 || t->dims[0] != 1 || t->dims[3] != channels || t->dims[1] != hm->dims[1] || t->dims[2] != hm->dims[2] ||
      t->dims[1] < 1 || t->dims[2] < 1)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input %d (%s) must be [1,H,W,%d] with the heatmaps' H, W", i, what,
                    (int)channels);
  return 0;
}

static uint64_t pn_scratch_bytes(int64_t hw, int32_t max_det) {
  return (uint64_t)hw * (PN_K + 2 * PN_K + 4 * PN_E) * sizeof(float) + (uint64_t)hw * PN_K * sizeof(pn_cand_t) +
         (uint64_t)max_det * (PN_K * sizeof(pn_pt_t) + PN_K * sizeof(float) + sizeof(float) + sizeof(int32_t));
}

static int pn_prepare(ar_node_t *node, char *msg, size_t msg_bytes) {
  int rc = ar_k_check_arity(node, 3, 3, 4, 4, msg, msg_bytes);
  if (rc) return rc;
  pn_state_t st;
  if ((rc = pn_options(node, &st, msg, msg_bytes))) return rc;
  const ar_tview_t *hm = node->inputs[0];
  if (hm->rank != 4)
    return AR_K_ERR(node, msg, msg_bytes, AR_ESHAPE, "input 0 (heatmaps) has rank %d, expected 4", (int)hm->rank);
  if ((rc = pn_input(node, 0, "heatmaps", PN_K, hm, msg, msg_bytes)) ||
      (rc = pn_input(node, 1, "short offsets", 2 * PN_K, hm, msg, msg_bytes)) ||
      (rc = pn_input(node, 2, "mid-range displacements", 4 * PN_E, hm, msg, msg_bytes)))
    return rc;
  for (int o = 0; o < 4; o++)
    if ((rc = ar_k_check_dtype(node, node->outputs[o], o == 0 ? "output 0" : o == 1 ? "output 1" : o == 2 ? "output 2" : "output 3",
                               AR_DTYPE_FLOAT32, msg, msg_bytes)))
      return rc;
  const int32_t d0[4] = {1, st.max_det, PN_K, 2}, d1[3] = {1, st.max_det, PN_K}, d2[2] = {1, st.max_det}, d3[1] = {1};
  if ((rc = ar_k_check_output_shape_at(node, 0, 4, d0, msg, msg_bytes)) ||
      (rc = ar_k_check_output_shape_at(node, 1, 3, d1, msg, msg_bytes)) ||
      (rc = ar_k_check_output_shape_at(node, 2, 2, d2, msg, msg_bytes)) ||
      (rc = ar_k_check_output_shape_at(node, 3, 1, d3, msg, msg_bytes)))
    return rc;
  node->state_bytes = sizeof(pn_state_t);
  node->scratch_bytes = pn_scratch_bytes((int64_t)hm->dims[1] * hm->dims[2], st.max_det);
  return 0;
}

static void pn_init(ar_node_t *node) {
  pn_state_t st;
  char msg[8];
  if (pn_options(node, &st, msg, sizeof msg) == 0) ar_k_store_state(node, &st, sizeof st);
}

/* Float copy of input i, times `scale` (1/stride for the offsets). */
static void pn_load(const ar_tview_t *t, float *dst, float scale) {
  const int64_t n = ar_k_elements(t);
  if (t->dtype == AR_DTYPE_FLOAT32) {
    const float *s = t->data;
    for (int64_t i = 0; i < n; i++) dst[i] = s[i] * scale;
  } else {
    const uint8_t *s = t->data;
    const float zp = (float)t->quant->zero_point[0], sc = t->quant->scale[0] * scale;
    for (int64_t i = 0; i < n; i++) dst[i] = ((float)s[i] - zp) * sc;
  }
}

static float pn_clamp(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }
static float pn_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* Bilinear sample of channel c of a [h,w,nc] tensor at (y, x) (the weights from the unclamped
 * coordinate minus the clamped floor, as the reference decoder). */
static float pn_sample(const float *t, int h, int w, int nc, float y, float x, int c) {
  const float yp = pn_clamp(y, 0.0f, (float)h - 1.0f), xp = pn_clamp(x, 0.0f, (float)w - 1.0f);
  const int y0 = (int)floorf(yp), y1 = (int)ceilf(yp), x0 = (int)floorf(xp), x1 = (int)ceilf(xp);
  const float ly = y - (float)y0, lx = x - (float)x0;
  const float tl = t[(y0 * w + x0) * nc + c], tr = t[(y0 * w + x1) * nc + c];
  const float bl = t[(y1 * w + x0) * nc + c], br = t[(y1 * w + x1) * nc + c];
  return (1 - ly) * ((1 - lx) * tl + lx * tr) + ly * ((1 - lx) * bl + lx * br);
}

static float pn_d2(pn_pt_t a, pn_pt_t b) {
  const float dy = b.y - a.y, dx = b.x - a.x;
  return dy * dy + dx * dx;
}

/* a before b: larger score first, then the earlier one. */
static int pn_cand_cmp(const void *pa, const void *pb) {
  const pn_cand_t *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

/* Grow one pose from `root` (grid coordinates, logits). */
static void pn_backtrack(const float *hm, const float *so, const float *mo, int h, int w, pn_cand_t root, pn_pt_t *kp,
                         float *ks) {
  pn_cand_t q[2 * PN_E + 2];
  int nq = 0, order = 0;
  bool done[PN_K] = {false};
  root.score = pn_sample(hm, h, w, PN_K, root.p.y, root.p.x, root.id);
  root.order = order++;
  q[nq++] = root;
  while (nq > 0) {
    int best = 0;
    for (int i = 1; i < nq; i++)
      if (q[i].score > q[best].score || (q[i].score == q[best].score && q[i].order < q[best].order)) best = i;
    const pn_cand_t cur = q[best];
    q[best] = q[--nq];
    if (done[cur.id]) continue;
    done[cur.id] = true;
    kp[cur.id] = cur.p;
    ks[cur.id] = cur.score;
    for (int e = 0; e < 2 * PN_E; e++) {
      if (pn_edges[e][0] != cur.id || done[pn_edges[e][1]]) continue;
      const int child = pn_edges[e][1], ch = e > PN_E ? e + PN_E : e;
      float y = pn_clamp(cur.p.y + pn_sample(mo, h, w, 4 * PN_E, cur.p.y, cur.p.x, ch), 0.0f, (float)h - 1.0f);
      float x = pn_clamp(cur.p.x + pn_sample(mo, h, w, 4 * PN_E, cur.p.y, cur.p.x, PN_E + ch), 0.0f, (float)w - 1.0f);
      for (int s = 0; s < PN_STEPS; s++) {
        const float dy = pn_sample(so, h, w, 2 * PN_K, y, x, child), dx = pn_sample(so, h, w, 2 * PN_K, y, x, PN_K + child);
        y = pn_clamp(y + dy, 0.0f, (float)h - 1.0f);
        x = pn_clamp(x + dx, 0.0f, (float)w - 1.0f);
      }
      if (nq < (int)(sizeof q / sizeof q[0]))
        q[nq++] = (pn_cand_t){{y, x}, pn_sample(hm, h, w, PN_K, y, x, child), child, order++};
    }
  }
}

/* The sum of the 17 scores not masked (all when mask is NULL), added in decreasing order of
 * score as the reference sums its top 17, / 17. */
static float pn_mean(const float *ks, const bool *mask) {
  int idx[PN_K];
  for (int k = 0; k < PN_K; k++) idx[k] = k;
  for (int i = 1; i < PN_K; i++) {
    const int t = idx[i];
    int j = i;
    while (j > 0 && ks[idx[j - 1]] < ks[t]) { idx[j] = idx[j - 1]; j--; }
    idx[j] = t;
  }
  float s = 0;
  for (int i = 0; i < PN_K; i++)
    if (!mask || !mask[idx[i]]) s += ks[idx[i]];
  return s / PN_K;
}

static void pn_eval(const ar_node_t *node) {
  const pn_state_t *st = node->state;
  const ar_tview_t *hmt = node->inputs[0];
  const int h = hmt->dims[1], w = hmt->dims[2], hw = h * w, D = st->max_det;
  float *hm = node->scratch, *so = hm + (size_t)hw * PN_K, *mo = so + (size_t)hw * 2 * PN_K;
  pn_cand_t *cand = (pn_cand_t *)(mo + (size_t)hw * 4 * PN_E);
  pn_pt_t *poses = (pn_pt_t *)(cand + (size_t)hw * PN_K);
  float *pks = (float *)(poses + (size_t)D * PN_K), *pscore = pks + (size_t)D * PN_K;
  int32_t *rank = (int32_t *)(pscore + D);
  pn_load(hmt, hm, 1.0f);
  pn_load(node->inputs[1], so, 1.0f / (float)st->stride);
  pn_load(node->inputs[2], mo, 1.0f / (float)st->stride);
  const float min_logit = -logf(1.0f / (st->score_threshold + 1e-6f) - 1.0f);
  const float r = st->nms_radius / (float)st->stride, r2 = r * r;
  int nc = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      for (int k = 0; k < PN_K; k++) {
        const float s = hm[(y * w + x) * PN_K + k];
        if (!(s >= min_logit)) continue;
        bool peak = true;
        for (int yy = y > 0 ? y - 1 : 0; peak && yy < (y + 2 < h ? y + 2 : h); yy++)
          for (int xx = x > 0 ? x - 1 : 0; peak && xx < (x + 2 < w ? x + 2 : w); xx++)
            if (hm[(yy * w + xx) * PN_K + k] > s) peak = false;
        if (!peak) continue;
        const float dy = so[(y * w + x) * 2 * PN_K + k], dx = so[(y * w + x) * 2 * PN_K + PN_K + k];
        cand[nc] = (pn_cand_t){{pn_clamp((float)y + dy, 0.0f, (float)h - 1.0f), pn_clamp((float)x + dx, 0.0f, (float)w - 1.0f)},
                               s, k, nc};
        nc++;
      }
  qsort(cand, (size_t)nc, sizeof *cand, pn_cand_cmp);
  int np = 0;
  for (int c = 0; c < nc && np < D; c++) {
    bool near = false;
    for (int p = 0; p < np && !near; p++) near = pn_d2(cand[c].p, poses[p * PN_K + cand[c].id]) <= r2;
    if (near) continue;
    pn_pt_t *kp = poses + (size_t)np * PN_K;
    float *ks = pks + (size_t)np * PN_K;
    for (int k = 0; k < PN_K; k++) kp[k] = (pn_pt_t){-1.0f, -1.0f}, ks[k] = -1e5f;
    pn_backtrack(hm, so, mo, h, w, cand[c], kp, ks);
    for (int k = 0; k < PN_K; k++) ks[k] = pn_sigmoid(ks[k]);
    const float score = pn_mean(ks, NULL);
    if (score >= st->score_threshold) pscore[np++] = score;
  }
  /* decreasing initial score (stable), then soft keypoint NMS against the poses before */
  for (int i = 0; i < np; i++) rank[i] = i;
  for (int i = 1; i < np; i++) {
    const int t = rank[i];
    int j = i;
    while (j > 0 && pscore[rank[j - 1]] < pscore[t]) { rank[j] = rank[j - 1]; j--; }
    rank[j] = t;
  }
  float *final = pscore;   /* rewritten in place: each uses only the coordinates of the others */
  float tmp[PN_MAX_DET];
  for (int i = 0; i < np; i++) {
    bool occ[PN_K] = {false};
    const int cur = rank[i];
    for (int j = 0; j < i; j++)
      for (int k = 0; k < PN_K; k++)
        if (pn_d2(poses[cur * PN_K + k], poses[rank[j] * PN_K + k]) <= r2) occ[k] = true;
    tmp[cur] = pn_mean(pks + (size_t)cur * PN_K, occ);
  }
  for (int i = 0; i < np; i++) final[i] = tmp[i];
  for (int i = 0; i < np; i++) rank[i] = i;
  for (int i = 1; i < np; i++) {
    const int t = rank[i];
    int j = i;
    while (j > 0 && final[rank[j - 1]] < final[t]) { rank[j] = rank[j - 1]; j--; }
    rank[j] = t;
  }
  float *okp = node->outputs[0]->data, *oks = node->outputs[1]->data, *ops = node->outputs[2]->data;
  memset(okp, 0, (size_t)D * PN_K * 2 * sizeof(float));
  memset(oks, 0, (size_t)D * PN_K * sizeof(float));
  memset(ops, 0, (size_t)D * sizeof(float));
  int n = 0;
  for (int i = 0; i < np; i++) {
    const int p = rank[i];
    if (final[p] < st->score_threshold) break;
    for (int k = 0; k < PN_K; k++) {
      okp[(n * PN_K + k) * 2] = poses[p * PN_K + k].y * (float)st->stride;
      okp[(n * PN_K + k) * 2 + 1] = poses[p * PN_K + k].x * (float)st->stride;
      oks[n * PN_K + k] = pks[p * PN_K + k];
    }
    ops[n] = final[p];
    n++;
  }
  *(float *)node->outputs[3]->data = (float)n;
}

static const ar_kernel_form_t pn_forms[] = { AR_KF(1, 1, FLOAT32, FLOAT32), AR_KF(1, 1, UINT8, FLOAT32) };
/* Coral's PosenetDecoderOp (custom code "PosenetDecoderOp"). */
const ar_kernel_t ar_kernel_posenet_decoder = { "PosenetDecoderOp", pn_prepare, pn_init, pn_eval,
  AR_KSUPPORT(pn_forms, 0, -1) };
