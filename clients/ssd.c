/* ssd.c - SSD anchors and best-box decoding for MediaPipe's face and palm detectors (see ssd.h). */
#include "config.h"

#include <math.h>

#include "clients/ssd.h"

int ar_ssd_anchors(int input_w, int input_h, ar_ssd_anchor_t *out, int cap) {
  static const int strides[] = {8, 16, 16, 16};
  const int num_layers = 4;
  if (input_w <= 0 || input_h <= 0 || input_w % 16 || input_h % 16) return -1;
  int n = 0;
  int layer = 0;
  while (layer < num_layers) {
    /* Consecutive layers with the same stride share one feature map. */
    int last = layer;
    while (last < num_layers && strides[last] == strides[layer]) last++;
    /* Per layer: one anchor for aspect ratio 1.0 plus one interpolated-scale anchor. */
    int per_cell = 2 * (last - layer);
    int fm_w = (input_w + strides[layer] - 1) / strides[layer];
    int fm_h = (input_h + strides[layer] - 1) / strides[layer];
    for (int y = 0; y < fm_h; y++)
      for (int x = 0; x < fm_w; x++)
        for (int k = 0; k < per_cell; k++) {
          if (n >= cap) return -1;
          out[n].x_center = (x + 0.5f) / fm_w;
          out[n].y_center = (y + 0.5f) / fm_h;
          n++;
        }
    layer = last;
  }
  return n;
}

float ar_ssd_score(float raw) {
  if (raw < -100.f) raw = -100.f;
  if (raw > 100.f) raw = 100.f;
  return 1.f / (1.f + expf(-raw));
}

int ar_ssd_best(const float *scores, const float *boxes, int n, int coords, const ar_ssd_anchor_t *anchors,
                int input_w, int input_h, ar_ssd_detection_t *best) {
  if (n <= 0 || coords < 4 || input_w <= 0 || input_h <= 0) return -1;
  int bi = 0;
  for (int i = 1; i < n; i++)
    if (scores[i] > scores[bi]) bi = i;
  const float *r = boxes + (size_t)bi * coords;
  best->index = bi;
  best->score = ar_ssd_score(scores[bi]);
  best->x_center = r[0] / input_w + anchors[bi].x_center;
  best->y_center = r[1] / input_h + anchors[bi].y_center;
  best->w = r[2] / input_w;
  best->h = r[3] / input_h;
  int nk = (coords - 4) / 2;
  if (nk > 8) nk = 8;
  best->n_keypoints = nk;
  for (int k = 0; k < nk; k++) {
    best->keypoints[2 * k] = r[4 + 2 * k] / input_w + anchors[bi].x_center;
    best->keypoints[2 * k + 1] = r[4 + 2 * k + 1] / input_h + anchors[bi].y_center;
  }
  return 0;
}
