/* demo_decode.c - turns the raw outputs that `arenactl invoke NAME --output DIR` writes
 * (DIR/output_<j>.bin, float32) into human-meaningful results for `./dev demo`:
 *
 *   demo_decode face   DIR IMG_W IMG_H   best face: score and box in image pixels (BlazeFace SSD)
 *   demo_decode selfie DIR               person-mask coverage (fraction of mask > 0.5)
 *   demo_decode palm   DIR IMG_W IMG_H   best palm: score, box, and the hand crop for hand_landmark
 *   demo_decode hand   DIR               hand presence and handedness (hand_landmark_lite)
 *   demo_decode size   IMAGE             "W H" of a PNG/JPEG photograph
 *
 * The detectors' inputs are letterboxed squares (clients/image.h), so boxes are mapped back to the
 * photograph through the same centred letterbox. Lines starting with "crop=" are for the script.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/image.h"
#include "clients/ssd.h"
#include "common/ar_error.h"

/* Read DIR/output_<j>.bin, expecting exactly n floats. */
static float *read_output(const char *dir, int j, size_t n) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/output_%d.bin", dir, j);
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "demo_decode: cannot open %s\n", path);
    return NULL;
  }
  float *v = malloc(n * sizeof(float) + 1);
  size_t got = v ? fread(v, sizeof(float), n + 1, f) : 0;
  fclose(f);
  if (got != n) {
    fprintf(stderr, "demo_decode: %s holds %zu floats, expected %zu\n", path, got, n);
    free(v);
    return NULL;
  }
  return v;
}

/* Letterbox geometry of an img_w x img_h photo in a side x side tensor (as clients/image.c). */
typedef struct {
  double scale, left, top;
} letterbox_t;

static letterbox_t letterbox(int img_w, int img_h, int side) {
  letterbox_t lb;
  lb.scale = fmin((double)side / img_w, (double)side / img_h);
  long pw = lround(img_w * lb.scale), ph = lround(img_h * lb.scale);
  lb.left = (double)((side - pw) / 2);
  lb.top = (double)((side - ph) / 2);
  return lb;
}

static double to_img_x(const letterbox_t *lb, int side, double xn) { return (xn * side - lb->left) / lb->scale; }
static double to_img_y(const letterbox_t *lb, int side, double yn) { return (yn * side - lb->top) / lb->scale; }

static int detect(const char *dir, int side, int n, int coords, int img_w, int img_h, ar_ssd_detection_t *d,
                  letterbox_t *lb) {
  ar_ssd_anchor_t *anchors = malloc(sizeof(*anchors) * (size_t)n);
  float *boxes = read_output(dir, 0, (size_t)n * coords);
  float *scores = read_output(dir, 1, (size_t)n);
  int rc = -1;
  if (anchors && boxes && scores && ar_ssd_anchors(side, side, anchors, n) == n)
    rc = ar_ssd_best(scores, boxes, n, coords, anchors, side, side, d);
  free(anchors);
  free(boxes);
  free(scores);
  *lb = letterbox(img_w, img_h, side);
  return rc;
}

static int cmd_face(const char *dir, int img_w, int img_h) {
  ar_ssd_detection_t d;
  letterbox_t lb;
  if (detect(dir, 128, 896, 16, img_w, img_h, &d, &lb) != 0) return 1;
  double x0 = to_img_x(&lb, 128, d.x_center - d.w / 2), y0 = to_img_y(&lb, 128, d.y_center - d.h / 2);
  double x1 = to_img_x(&lb, 128, d.x_center + d.w / 2), y1 = to_img_y(&lb, 128, d.y_center + d.h / 2);
  printf("face: best score %.3f (anchor %d of 896) %s\n", d.score, d.index,
         d.score >= 0.5f ? "- a face" : "- below MediaPipe's 0.5 threshold");
  printf("face: box x %.0f..%.0f, y %.0f..%.0f px (%.0f x %.0f) in the %dx%d photo\n", x0, x1, y0, y1, x1 - x0,
         y1 - y0, img_w, img_h);
  static const char *const kp[] = {"right eye", "left eye", "nose tip", "mouth", "right ear", "left ear"};
  printf("face: keypoints");
  for (int k = 0; k < d.n_keypoints && k < 6; k++)
    printf("%s %s (%.0f,%.0f)", k ? "," : "", kp[k], to_img_x(&lb, 128, d.keypoints[2 * k]),
           to_img_y(&lb, 128, d.keypoints[2 * k + 1]));
  printf("\nscore=%.6f\n", d.score);
  return 0;
}

static int cmd_selfie(const char *dir) {
  const size_t n = 256 * 256;
  float *m = read_output(dir, 0, n);
  if (m == NULL) return 1;
  size_t on = 0;
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    on += m[i] > 0.5f;
    sum += m[i];
  }
  printf("selfie: person mask covers %.1f%% of the picture (%zu of %zu mask pixels > 0.5, mean %.3f)\n",
         100.0 * on / n, on, n, sum / n);
  free(m);
  return 0;
}

static int cmd_palm(const char *dir, int img_w, int img_h) {
  ar_ssd_detection_t d;
  letterbox_t lb;
  if (detect(dir, 192, 2016, 18, img_w, img_h, &d, &lb) != 0) return 1;
  double cx = to_img_x(&lb, 192, d.x_center), cy = to_img_y(&lb, 192, d.y_center);
  double bw = d.w * 192 / lb.scale, bh = d.h * 192 / lb.scale;
  printf("palm: best score %.3f (anchor %d of 2016) %s\n", d.score, d.index,
         d.score >= 0.5f ? "- a palm" : "- below MediaPipe's 0.5 threshold: no palm found");
  printf("palm: best box centre (%.0f,%.0f) px, %.0f x %.0f px\n", cx, cy, bw, bh);
  /* Hand region for the landmark model: MediaPipe's palm -> hand ROI without the rotation: move
   * the centre half a box towards the fingers (wrist keypoint 0 -> middle-finger keypoint 2) and
   * take a square 2.6 times the box, clamped to the photo. */
  double wx = to_img_x(&lb, 192, d.keypoints[0]), wy = to_img_y(&lb, 192, d.keypoints[1]);
  double mx = to_img_x(&lb, 192, d.keypoints[4]), my = to_img_y(&lb, 192, d.keypoints[5]);
  double dx = mx - wx, dy = my - wy, len = sqrt(dx * dx + dy * dy);
  double side = 2.6 * fmax(bw, bh);
  if (len > 1e-6) {
    cx += 0.5 * fmax(bw, bh) * dx / len;
    cy += 0.5 * fmax(bw, bh) * dy / len;
  }
  long l = lround(fmax(0, cx - side / 2)), t = lround(fmax(0, cy - side / 2));
  long r = lround(fmin(img_w, cx + side / 2)), b = lround(fmin(img_h, cy + side / 2));
  if (r <= l) r = l + 1;
  if (b <= t) b = t + 1;
  printf("crop=%ld,%ld,%ld,%ld\nscore=%.6f\n", l, t, r, b, d.score);
  return 0;
}

static int cmd_hand(const char *dir) {
  /* hand_landmark_lite outputs: 0 landmarks [1,63], 1 hand presence [1,1], 2 handedness [1,1],
   * 3 world landmarks [1,63]. Presence and handedness are already sigmoid probabilities. */
  float *presence = read_output(dir, 1, 1), *handed = read_output(dir, 2, 1);
  if (presence == NULL || handed == NULL) {
    free(presence);
    free(handed);
    return 1;
  }
  printf("hand: presence %.3f %s\n", presence[0],
         presence[0] >= 0.5f ? "- a hand in the crop" : "- no hand in the crop (MediaPipe needs 0.5)");
  /* MediaPipe: score s labels "Left" and 1 - s "Right", for a mirrored (selfie) image. */
  float s = handed[0];
  printf("hand: handedness %s %.3f (MediaPipe label for a mirrored selfie image; %s hand in this photo)\n",
         s >= 0.5f ? "Left" : "Right", s >= 0.5f ? s : 1 - s, s >= 0.5f ? "right" : "left");
  free(presence);
  free(handed);
  return 0;
}

static int cmd_size(const char *path) {
  ar_image_t img;
  char msg[AR_MSG_BYTES];
  if (ar_image_load(path, &img, msg, sizeof(msg)) != 0) {
    fprintf(stderr, "demo_decode: %s\n", msg);
    return 1;
  }
  printf("%u %u\n", img.width, img.height);
  ar_image_free(&img);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "size") == 0) return cmd_size(argv[2]);
  if (argc == 3 && strcmp(argv[1], "selfie") == 0) return cmd_selfie(argv[2]);
  if (argc == 3 && strcmp(argv[1], "hand") == 0) return cmd_hand(argv[2]);
  if (argc == 5 && (strcmp(argv[1], "face") == 0 || strcmp(argv[1], "palm") == 0)) {
    int w = atoi(argv[3]), h = atoi(argv[4]);
    if (w <= 0 || h <= 0) {
      fprintf(stderr, "demo_decode: bad image size %s x %s\n", argv[3], argv[4]);
      return 2;
    }
    return strcmp(argv[1], "face") == 0 ? cmd_face(argv[2], w, h) : cmd_palm(argv[2], w, h);
  }
  fprintf(stderr,
          "usage: demo_decode face|palm DIR IMG_W IMG_H\n"
          "       demo_decode selfie|hand DIR\n"
          "       demo_decode size IMAGE\n"
          "DIR holds output_<j>.bin from `arenactl invoke NAME --output DIR`.\n");
  return 2;
}
