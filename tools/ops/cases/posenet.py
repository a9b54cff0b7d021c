"""Coral's PosenetDecoderOp (custom op, kernels/posenet.c): no TFLite runtime has it, so the goldens
are by hand ('hand'), from how the inputs are built. One person on a 9 x 9 grid, stride 16: keypoint
k's logit peaks (5) at cell (1 + k % 7, 1 + 3 (k // 7)) with 4 at its left, lower and lower-left
neighbours (-10 elsewhere); every cell's short offset for k points at peak + (0.25, -0.5) cells
(an affine field, so bilinear samples are exact), mid-range displacements 0. Every keypoint lands
at (peak + (0.25, -0.5)) * 16 px with logit 0.75 * 4.5 + 0.25 * 4 = 4.375 there; the pose score is
the mean of the 17 sigmoids. max_detections 2: the second row and the other outputs past the count
are zero."""
import math

import flatbuffers.flexbuffers as flexbuffers

from oplib import Case, T

H = W = 9
K = 17


def _options(max_det, thr, stride, nms):
    b = flexbuffers.Builder()
    with b.Map():
        b.Int('max_detections', max_det)
        b.Float('score_threshold', thr)
        b.Int('stride', stride)
        b.Float('nms_radius', nms)
    return bytes(b.Finish())


def _target(k):
    return 1 + k % 7 + 0.25, 1 + 3 * (k // 7) - 0.5


def _inputs():
    hm = [-10.0] * (H * W * K)
    for k in range(K):
        cy, cx = 1 + k % 7, 1 + 3 * (k // 7)
        hm[(cy * W + cx) * K + k] = 5.0
        for y, x in ((cy, cx - 1), (cy + 1, cx), (cy + 1, cx - 1)):
            hm[(y * W + x) * K + k] = 4.0
    so = [0.0] * (H * W * 2 * K)
    for y in range(H):
        for x in range(W):
            for k in range(K):
                ty, tx = _target(k)
                so[(y * W + x) * 2 * K + k] = (ty - y) * 16
                so[(y * W + x) * 2 * K + K + k] = (tx - x) * 16
    return hm, so, [0.0] * (H * W * 4 * 16)


def _expect(max_det):
    s = 1 / (1 + math.exp(-4.375))
    kp, ks = [], []
    for k in range(K):
        ty, tx = _target(k)
        kp += [ty * 16, tx * 16]
        ks.append(s)
    pad = max_det - 1
    return [kp + [0.0] * (pad * K * 2), ks + [0.0] * (pad * K), [s] + [0.0] * pad, [1.0]]


hm, so, mo = _inputs()
CASES = [
    Case('posenet_decoder_one_person', 'PosenetDecoderOp',
         [T('float32', [1, H, W, K], data=hm), T('float32', [1, H, W, 2 * K], data=so),
          T('float32', [1, H, W, 64], data=mo)],
         [T('float32', [1, 2, K, 2]), T('float32', [1, 2, K]), T('float32', [1, 2]), T('float32', [1])],
         custom=True, custom_options=_options(2, 0.5, 16, 20.0), golden='hand', expect=_expect(2),
         note='no TFLite runtime has the Coral op: keypoints and scores by hand from the inputs'),
]
