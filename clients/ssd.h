/* ssd.h - reading the outputs of MediaPipe's SSD detectors (BlazeFace, BlazePalm) in C: anchor
 * generation and box/score decoding, for the demo and for users of `arenactl invoke --output`.
 *
 * Semantics follow MediaPipe's SsdAnchorsCalculator and TensorsToDetectionsCalculator with the
 * options its graphs use for these models (face_detection_short_range.pbtxt, palm_detection_cpu.pbtxt):
 *   anchors: num_layers 4, strides {8,16,16,16}, anchor_offset 0.5, aspect_ratios {1.0},
 *            interpolated_scale_aspect_ratio 1.0, fixed_anchor_size true (w = h = 1). Layers of
 *            equal stride share one feature map, so a cell gets 2 anchors per layer: 2 per cell at
 *            stride 8 and 6 per cell at stride 16. 128x128 -> 16*16*2 + 8*8*6 = 896 anchors;
 *            192x192 -> 24*24*2 + 12*12*6 = 2016.
 *   boxes:   raw regressor row [dx, dy, w, h, kx0, ky0, ...] in input pixels (reverse_output_order):
 *            x_center = dx / input_w + anchor.x, w = raw_w / input_w (anchor w = 1), same for y/h.
 *   scores:  sigmoid(clamp(raw, -100, 100)) (score_clipping_thresh 100).
 * Coordinates are normalized to the model input tensor ([0,1] across its width/height).
 */
#ifndef AR_SSD_H
#define AR_SSD_H

#include <stddef.h>

typedef struct ar_ssd_anchor {
  float x_center, y_center;   /* normalized; w = h = 1 (fixed_anchor_size) */
} ar_ssd_anchor_t;

/* Anchors for an input of input_w x input_h with MediaPipe's 4-layer {8,16,16,16} layout into
 * `out` (capacity `cap`). Returns the anchor count (896 for 128x128, 2016 for 192x192), or -1 when
 * `cap` is too small or a size is not a multiple of 16. */
int ar_ssd_anchors(int input_w, int input_h, ar_ssd_anchor_t *out, int cap);

typedef struct ar_ssd_detection {
  int index;                  /* anchor index of the best score */
  float score;                /* sigmoid of the clamped raw score */
  float x_center, y_center, w, h;   /* normalized box */
  float keypoints[2 * 8];     /* normalized (x, y) pairs, first n_keypoints */
  int n_keypoints;
} ar_ssd_detection_t;

/* The highest-scoring box: scores [n] raw logits, boxes [n][coords] regressors (coords >= 4,
 * keypoints after the 4 box values), anchors [n]. Returns 0, or -1 on bad arguments. */
int ar_ssd_best(const float *scores, const float *boxes, int n, int coords, const ar_ssd_anchor_t *anchors,
                int input_w, int input_h, ar_ssd_detection_t *best);

/* sigmoid(clamp(x, -100, 100)). */
float ar_ssd_score(float raw);

#endif /* AR_SSD_H */
