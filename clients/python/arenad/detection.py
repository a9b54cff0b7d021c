"""arenad.detection: reading detector outputs, as arenactl and its C helpers do.

Two kinds of detector:

* MediaPipe's SSD detectors with raw outputs (BlazeFace: face_detection_short_range, BlazePalm:
  palm_detection_lite/full): `ssd_anchors`, `decode_ssd` and `best_ssd` follow clients/ssd.c
  (MediaPipe's SsdAnchorsCalculator and TensorsToDetectionsCalculator with the options of its graphs
  for these models):
    anchors  num_layers 4, strides {8, 16, 16, 16}, anchor_offset 0.5, aspect_ratios {1.0},
             interpolated_scale_aspect_ratio 1.0, fixed_anchor_size (w = h = 1); layers of equal
             stride share one feature map: 2 anchors per cell at stride 8, 6 at stride 16 (128x128 ->
             896 anchors, 192x192 -> 2016).
    boxes    a regressor row [dx, dy, w, h, kx0, ky0, ...] in input pixels: x_center = dx / input_w
             + anchor.x, w = raw_w / input_w, the same for y / h and each keypoint.
    scores   sigmoid(clamp(raw, -100, 100)) in float32 (score_clipping_thresh 100).
  `non_max_suppression` keeps boxes best first and drops those that overlap a kept one by more
  than an intersection-over-union threshold (MediaPipe's NonMaxSuppressionCalculator with
  overlap_type INTERSECTION_OVER_UNION and algorithm DEFAULT; its face graphs use the WEIGHTED
  variant, which also averages the suppressed boxes into the kept one - not done here).

* Models ending in TFLite_Detection_PostProcess (the SSD MobileNet v1 COCO model): four outputs,
  boxes [1, N, 4] as (ymin, xmin, ymax, xmax) normalized, classes [1, N], scores [1, N], count [1].
  `unpack_postprocess` reads them the way `arenactl invoke --detections` does (rows 0..count-1 with
  score >= min_score, labels at class + label_offset, 1 by default for the COCO labelmap's leading
  "???" line).

Coordinates are normalized to the model input ([0, 1] across its width / height); an
arenad.image.Geometry maps them to photo pixels.
"""
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np


@dataclass(frozen=True)
class Detection:
    """One detected object. box = (xmin, ymin, xmax, ymax), normalized to the model input (note: x
    first, whatever order the model writes); keypoints [K, 2] normalized (x, y) or an empty array;
    index: the anchor (raw SSD) or output row (post-processed); class_id and label: the class of a
    post-processed detection (-1 and "" for single-class detectors)."""

    index: int
    score: float
    box: tuple
    keypoints: np.ndarray
    class_id: int = -1
    label: str = ""

    @property
    def center(self):
        return ((self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2)


def ssd_anchors(input_w: int, input_h: int) -> np.ndarray:
    """Anchor centres [n, 2] (x, y; normalized; float32) of MediaPipe's 4-layer {8, 16, 16, 16}
    layout for an input_w x input_h input, in clients/ssd.c's order (per stride group: rows, then
    columns, then the cell's anchors). Raises ValueError unless both sizes are positive multiples of 16."""
    if input_w <= 0 or input_h <= 0 or input_w % 16 or input_h % 16:
        raise ValueError(f"SSD anchors need an input whose sides are multiples of 16, not {input_w}x{input_h}")
    out = []
    for stride, per_cell in ((8, 2), (16, 6)):
        fw, fh = (input_w + stride - 1) // stride, (input_h + stride - 1) // stride
        y, x = np.mgrid[0:fh, 0:fw]
        c = np.stack([(x.astype(np.float32) + np.float32(0.5)) / np.float32(fw),
                      (y.astype(np.float32) + np.float32(0.5)) / np.float32(fh)], axis=-1).reshape(-1, 1, 2)
        out.append(np.repeat(c, per_cell, axis=1).reshape(-1, 2))
    return np.concatenate(out).astype(np.float32)


def ssd_scores(raw: np.ndarray) -> np.ndarray:
    """sigmoid(clamp(raw, -100, 100)) in float32 (clients/ssd.c ar_ssd_score)."""
    r = np.clip(np.asarray(raw, np.float32).reshape(-1), np.float32(-100), np.float32(100))
    with np.errstate(over="ignore"):
        return (np.float32(1) / (np.float32(1) + np.exp(-r))).astype(np.float32)


def decode_ssd(regressors: np.ndarray, classificators: np.ndarray, input_w: int, input_h: int,
               anchors: Optional[np.ndarray] = None):
    """All anchors' boxes: regressors [1, n, coords] (coords >= 4; keypoints after the box),
    classificators [1, n, 1] raw logits -> (scores [n], boxes [n, 4] as (xmin, ymin, xmax, ymax),
    keypoints [n, K, 2]), all float32 and normalized. Raises ValueError when the sizes disagree."""
    a = ssd_anchors(input_w, input_h) if anchors is None else np.asarray(anchors, np.float32)
    n = len(a)
    r = np.asarray(regressors, np.float32).reshape(-1)
    if r.size % n or r.size // n < 4:
        raise ValueError(f"regressors of {r.size} values do not hold {n} anchors of at least 4 coordinates")
    r = r.reshape(n, -1)
    s = ssd_scores(classificators)
    if s.size != n:
        raise ValueError(f"{s.size} scores for {n} anchors")
    fw, fh = np.float32(input_w), np.float32(input_h)
    cx, cy = r[:, 0] / fw + a[:, 0], r[:, 1] / fh + a[:, 1]
    w, h = r[:, 2] / fw, r[:, 3] / fh
    half = np.float32(0.5)
    boxes = np.stack([cx - w * half, cy - h * half, cx + w * half, cy + h * half], axis=1).astype(np.float32)
    nk = (r.shape[1] - 4) // 2
    kp = r[:, 4:4 + 2 * nk].reshape(n, nk, 2) / np.array([fw, fh], np.float32) + a[:, None, :]
    return s, boxes, kp.astype(np.float32)


def best_ssd(regressors, classificators, input_w: int, input_h: int) -> Detection:
    """The highest-scoring anchor's detection (the first of equal scores), as ar_ssd_best."""
    s, boxes, kp = decode_ssd(regressors, classificators, input_w, input_h)
    raw = np.asarray(classificators, np.float32).reshape(-1)
    i = int(np.argmax(raw))
    return Detection(i, float(s[i]), tuple(float(v) for v in boxes[i]), kp[i])


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two (xmin, ymin, xmax, ymax) boxes (0 when the union is empty)."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def non_max_suppression(dets: Sequence[Detection], iou_threshold: float = 0.3,
                        max_detections: Optional[int] = None) -> List[Detection]:
    """Detections best first (stable for equal scores), each dropped when its IoU with one already
    kept exceeds iou_threshold; at most max_detections (None: no bound)."""
    kept: List[Detection] = []
    for d in sorted(dets, key=lambda d: -d.score):
        if max_detections is not None and len(kept) >= max_detections:
            break
        if all(iou(d.box, k.box) <= iou_threshold for k in kept):
            kept.append(d)
    return kept


def detect_ssd(regressors, classificators, input_w: int, input_h: int, min_score: float = 0.5,
               iou_threshold: float = 0.3) -> List[Detection]:
    """decode_ssd, the anchors with score >= min_score, non_max_suppression: best first."""
    s, boxes, kp = decode_ssd(regressors, classificators, input_w, input_h)
    cand = [Detection(int(i), float(s[i]), tuple(float(v) for v in boxes[i]), kp[i])
            for i in np.nonzero(s >= np.float32(min_score))[0]]
    return non_max_suppression(cand, iou_threshold)


def _values(out, key: int) -> np.ndarray:
    """Output `key` of an InvokeResult (dequantized when quantized) or of a sequence of arrays."""
    real = getattr(out, "real", None)
    if real is not None:
        return np.asarray(real(key), np.float32).reshape(-1)
    return np.asarray(out[key], np.float32).reshape(-1)


def unpack_postprocess(out, min_score: float = 0.5, labels: Optional[Sequence[str]] = None,
                       label_offset: int = 1) -> List[Detection]:
    """TFLite_Detection_PostProcess outputs (an InvokeResult, or four arrays: boxes [1, N, 4] as
    ymin, xmin, ymax, xmax; classes [1, N]; scores [1, N]; count [1]) -> the rows 0..count-1 with
    score >= min_score, in the model's order, as `arenactl invoke --detections` lists them: box
    reordered to (xmin, ymin, xmax, ymax), class_id = rint(class), label = labels[class_id +
    label_offset] ("" beyond the file). Raises ValueError when the four outputs do not fit together."""
    boxes, classes, scores, count = (_values(out, k) for k in range(4))
    rows = scores.size
    if rows == 0 or boxes.size != 4 * rows or classes.size != rows or count.size < 1:
        raise ValueError(f"not TFLite_Detection_PostProcess outputs: {boxes.size} box values, {classes.size} "
                         f"classes, {scores.size} scores, {count.size} counts")
    c = float(count[0])
    n = min(int(c), rows) if np.isfinite(c) and c > 0 else 0
    dets = []
    for r in range(n):
        s = float(scores[r])
        if not s >= min_score:
            continue
        y0, x0, y1, x1 = (float(v) for v in boxes[4 * r:4 * r + 4])
        cid = int(np.rint(classes[r]))
        li = cid + label_offset
        label = labels[li] if labels is not None and 0 <= li < len(labels) else ""
        dets.append(Detection(r, s, (x0, y0, x1, y1), np.zeros((0, 2), np.float32), cid, label))
    return dets


def read_labels(path) -> List[str]:
    """A label file's lines (a trailing \\r dropped), as arenactl --labels reads it."""
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
