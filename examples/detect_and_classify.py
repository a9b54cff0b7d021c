#!/usr/bin/python3
"""detect_and_classify.py - a detector and a second model on one photograph, through arenad's
Python client: the first model finds objects, the second one answers a question about them.

  --pair people (default): face_detection_short_range finds faces (BlazeFace SSD: 896 anchors,
      scores >= 0.5, non-maximum suppression); selfie_segmentation then labels each face "person"
      when its person mask covers most of the face box (a foreground person, not a picture or a
      reflection in the background).
  --pair hands: palm_detection_lite finds palms (2016 anchors); hand_landmark_lite, run on the hand
      region of the best palm (MediaPipe's palm -> hand crop without rotation), answers hand
      presence and handedness.
  --pair quant (with --models pointing at the quantized models, e.g. ../shared/models_q): the uint8
      SSD MobileNet v1 (its TFLite_Detection_PostProcess gives boxes, classes, scores, count) finds
      objects; the uint8 MobileNet v2 classifier names the best one, cropped from the photo. Both
      take the photo's pixels as their uint8 codes (their input quantization maps 0..255 onto their
      real range), and the classifier's uint8 probabilities are dequantized with the output's
      scale and zero point as the daemon reports them.

Decoding follows clients/ssd.h (MediaPipe's SsdAnchorsCalculator and
TensorsToDetectionsCalculator options for these models), image input clients/image.h (letterbox
or stretch, Pillow-style triangle-filter resize, values in [0,1] or [-1,1]).

Usage: detect_and_classify.py [--socket PATH] [--models DIR] [--pair people|hands] [IMAGE]
The models are loaded (as one share group) unless the daemon already has them under the same
names; models this script loaded are unloaded at the end. IMAGE defaults to the astronaut
photograph shipped by Debian's python3-imageio.
"""
import argparse
import os
import sys

import numpy as np

import arenad

ASTRONAUT = "/usr/lib/python3/dist-packages/imageio/resources/images/astronaut.png"
PAIRS = {
    "people": [("ex_face", "face_detection_short_range"), ("ex_selfie", "selfie_segmentation")],
    "hands": [("ex_palm", "palm_detection_lite"), ("ex_hand", "hand_landmark_lite")],
    "quant": [("ex_ssd_q", "ssd_mobilenet_v1_coco_quant_postprocess"), ("ex_mnv2_q", "coral_mobilenet_v2_1.0_224_quant")],
}
QUANT_LABELS = ("ssd_mobilenet_v1_coco_labelmap.txt", "coral_imagenet_labels.txt")
FACE_KEYPOINTS = ["right eye", "left eye", "nose tip", "mouth", "right ear", "left ear"]


# ---- image input -------------------------------------------------------------------------------
def _weights(n_in: int, n_out: int) -> np.ndarray:
    """[n_out, n_in] triangle-filter weights whose support widens with the shrink factor."""
    scale = n_in / n_out
    fs = max(scale, 1.0)
    w = np.zeros((n_out, n_in))
    for i in range(n_out):
        c = (i + 0.5) * scale
        lo, hi = max(int(c - fs + 0.5), 0), min(int(c + fs + 0.5), n_in)
        x = np.arange(lo, hi)
        k = np.maximum(0.0, 1.0 - np.abs((x + 0.5 - c) / fs))
        w[i, lo:hi] = k / k.sum() if k.sum() > 0 else 0
    return w


def resize(img: np.ndarray, w: int, h: int) -> np.ndarray:
    """uint8 [H, W, 3] -> uint8 [h, w, 3]."""
    wy, wx = _weights(img.shape[0], h), _weights(img.shape[1], w)
    rows = np.tensordot(wy, img.astype(np.float64), axes=(1, 0))       # [h, W, 3]
    out = np.tensordot(rows, wx, axes=(1, 1)).transpose(0, 2, 1)          # [h, w, 3]
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


class Letterbox:
    """An image scaled into a side x side square keeping its aspect ratio, centred, black border."""

    def __init__(self, img_w: int, img_h: int, side: int):
        self.side = side
        self.scale = min(side / img_w, side / img_h)
        self.pw, self.ph = round(img_w * self.scale), round(img_h * self.scale)
        self.left, self.top = (side - self.pw) // 2, (side - self.ph) // 2

    def tensor(self, img: np.ndarray, lo: float, hi: float) -> np.ndarray:
        canvas = np.zeros((self.side, self.side, 3), np.uint8)
        canvas[self.top:self.top + self.ph, self.left:self.left + self.pw] = resize(img, self.pw, self.ph)
        return to_tensor(canvas, lo, hi)

    def to_image(self, xn: float, yn: float):
        """Normalized model coordinates -> photo pixels."""
        return (xn * self.side - self.left) / self.scale, (yn * self.side - self.top) / self.scale


def to_tensor(pixels: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """uint8 [H, W, 3] -> float32 [1, H, W, 3] with 0 -> lo and 255 -> hi."""
    return (pixels.astype(np.float32) * np.float32((hi - lo) / 255) + np.float32(lo))[None]


# ---- SSD decoding (clients/ssd.h) ---------------------------------------------------------------
def anchors(side: int) -> np.ndarray:
    """[n, 2] anchor centres of MediaPipe's 4-layer {8,16,16,16} layout (896 for 128, 2016 for 192)."""
    out = []
    for stride, per_cell in ((8, 2), (16, 6)):
        fm = (side + stride - 1) // stride
        y, x = np.mgrid[0:fm, 0:fm]
        c = np.stack([(x + 0.5) / fm, (y + 0.5) / fm], axis=-1).reshape(-1, 1, 2)
        out.append(np.repeat(c, per_cell, axis=1).reshape(-1, 2))
    return np.concatenate(out)


def detections(boxes: np.ndarray, scores: np.ndarray, side: int, threshold: float = 0.5, iou: float = 0.3):
    """Boxes [1, n, coords], raw scores [1, n, 1] -> list of dicts (score, box and keypoints
    normalized to the input), best first, overlapping boxes suppressed; also the best score."""
    a = anchors(side)
    r = boxes.reshape(len(a), -1).astype(np.float64)
    s = 1.0 / (1.0 + np.exp(-np.clip(scores.reshape(-1).astype(np.float64), -100, 100)))
    cx, cy = r[:, 0] / side + a[:, 0], r[:, 1] / side + a[:, 1]
    w, h = r[:, 2] / side, r[:, 3] / side
    kp = r[:, 4:].reshape(len(a), -1, 2) / side + a[:, None, :]
    kept = []
    for i in np.argsort(-s):
        if s[i] < threshold:
            break
        box = (cx[i] - w[i] / 2, cy[i] - h[i] / 2, cx[i] + w[i] / 2, cy[i] + h[i] / 2)
        if all(_iou(box, k["box"]) <= iou for k in kept):
            kept.append({"index": int(i), "score": float(s[i]), "box": box, "keypoints": kp[i]})
    best = int(np.argmax(s))
    return kept, {"index": best, "score": float(s[best]),
                  "box": (cx[best] - w[best] / 2, cy[best] - h[best] / 2, cx[best] + w[best] / 2, cy[best] + h[best] / 2),
                  "keypoints": kp[best]}


def _iou(a, b) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


# ---- the two pairs ------------------------------------------------------------------------------
def people(c: arenad.Client, names, img: np.ndarray) -> None:
    face, selfie = names
    H, W = img.shape[:2]
    lb = Letterbox(W, H, 128)
    out = c.invoke(face, {"input": lb.tensor(img, -1.0, 1.0)})
    found, best = detections(out["regressors"], out["classificators"], 128)
    print(f"face_detection_short_range: {len(found)} face(s) with score >= 0.5 "
          f"(best anchor {best['index']} of 896, score {best['score']:.3f}; invoke {out.invoke_us} us)")
    boxes = []
    for n, d in enumerate(found, 1):
        x0, y0 = lb.to_image(d["box"][0], d["box"][1])
        x1, y1 = lb.to_image(d["box"][2], d["box"][3])
        boxes.append((x0, y0, x1, y1))
        kps = ", ".join(f"{name} ({x:.0f},{y:.0f})" for name, (x, y) in
                        zip(FACE_KEYPOINTS, (lb.to_image(*k) for k in d["keypoints"])))
        print(f"  detection {n}: face score {d['score']:.3f}, box x {x0:.0f}..{x1:.0f}, y {y0:.0f}..{y1:.0f} px "
              f"({x1 - x0:.0f} x {y1 - y0:.0f}) in the {W}x{H} photo")
        print(f"    keypoints: {kps}")
    mask_out = c.invoke(selfie, to_tensor(resize(img, 256, 256), 0.0, 1.0))   # stretch to 256x256
    mask = mask_out[0].reshape(256, 256)
    print(f"selfie_segmentation: person mask covers {100 * np.mean(mask > 0.5):.1f}% of the photo")
    for n, (x0, y0, x1, y1) in enumerate(boxes, 1):
        mx0, mx1 = int(max(0, x0) * 256 / W), int(np.ceil(min(W, x1) * 256 / W))
        my0, my1 = int(max(0, y0) * 256 / H), int(np.ceil(min(H, y1) * 256 / H))
        inside = mask[my0:max(my1, my0 + 1), mx0:max(mx1, mx0 + 1)]
        cover = float(np.mean(inside > 0.5))
        label = "person" if cover >= 0.5 else "not a person in the foreground"
        print(f"  detection {n}: label: {label} (person mask covers {100 * cover:.0f}% of the face box)")
    if not boxes:
        print("  label: no face to classify")


def hands(c: arenad.Client, names, img: np.ndarray) -> None:
    palm, hand = names
    H, W = img.shape[:2]
    lb = Letterbox(W, H, 192)
    out = c.invoke(palm, lb.tensor(img, 0.0, 1.0))
    found, best = detections(out[0], out[1], 192)
    print(f"palm_detection_lite: {len(found)} palm(s) with score >= 0.5 "
          f"(best anchor {best['index']} of 2016, score {best['score']:.3f})")
    d = found[0] if found else best
    for n, f in enumerate(found, 1):
        x0, y0 = lb.to_image(f["box"][0], f["box"][1])
        x1, y1 = lb.to_image(f["box"][2], f["box"][3])
        print(f"  detection {n}: palm score {f['score']:.3f}, box x {x0:.0f}..{x1:.0f}, y {y0:.0f}..{y1:.0f} px")
    # MediaPipe's palm -> hand region, without the rotation: half a box towards the middle finger
    # (keypoint 0 wrist -> keypoint 2), a square 2.6 times the box, clamped to the photo.
    cx, cy = lb.to_image((d["box"][0] + d["box"][2]) / 2, (d["box"][1] + d["box"][3]) / 2)
    size = max(d["box"][2] - d["box"][0], d["box"][3] - d["box"][1]) * 192 / lb.scale
    (wx, wy), (mx, my) = lb.to_image(*d["keypoints"][0]), lb.to_image(*d["keypoints"][2])
    length = np.hypot(mx - wx, my - wy)
    if length > 1e-6:
        cx, cy = cx + 0.5 * size * (mx - wx) / length, cy + 0.5 * size * (my - wy) / length
    side = 2.6 * size
    left, top = int(round(max(0, cx - side / 2))), int(round(max(0, cy - side / 2)))
    right, bottom = int(round(min(W, cx + side / 2))), int(round(min(H, cy + side / 2)))
    crop = img[top:max(bottom, top + 1), left:max(right, left + 1)]
    hb = Letterbox(crop.shape[1], crop.shape[0], 224)
    r = c.invoke(hand, hb.tensor(crop, 0.0, 1.0))
    presence, handed = float(r[1].reshape(-1)[0]), float(r[2].reshape(-1)[0])
    which = "the best palm" if found else "the best (sub-threshold) candidate"
    print(f"hand_landmark_lite on {which}'s hand region x {left}..{right}, y {top}..{bottom} px: "
          f"presence {presence:.3f}")
    if presence >= 0.5:
        # MediaPipe labels score s "Left" for a mirrored (selfie) image: the person's right hand.
        print(f"  label: {'right' if handed >= 0.5 else 'left'} hand (handedness score {max(handed, 1 - handed):.3f})")
    else:
        print("  label: no hand (MediaPipe needs presence 0.5)")


def quant(c: arenad.Client, names, img: np.ndarray, models: str) -> None:
    ssd, mnv2 = names
    H, W = img.shape[:2]
    labelmap, imagenet = ([line.rstrip("\r\n") for line in open(os.path.join(models, f))] for f in QUANT_LABELS)
    info = {m.name: m for m in c.models()}
    qin = info[ssd].inputs[0]
    print(f"ssd_mobilenet_v1_coco_quant: input {qin.dtype} {list(qin.shape)}, scale {qin.quantization.scale[0]:.6g} "
          f"zero point {qin.quantization.zero_point[0]} (the pixels are the codes)")
    out = c.invoke(ssd, resize(img, 300, 300)[None])                      # stretch, uint8 [1,300,300,3]
    boxes, classes, scores = out[0].reshape(-1, 4), out[1].reshape(-1), out[2].reshape(-1)
    count = int(out[3].reshape(-1)[0])
    found = [i for i in range(count) if scores[i] >= 0.5]
    print(f"  {count} detections, {len(found)} with score >= 0.5 (invoke {out.invoke_us} us)")
    for i in found:
        y0, x0, y1, x1 = boxes[i]
        label = labelmap[int(classes[i]) + 1] if int(classes[i]) + 1 < len(labelmap) else "?"
        print(f"  detection {i + 1}: {label} score {scores[i]:.3f}, box x {max(0, x0) * W:.0f}..{min(1, x1) * W:.0f}, "
              f"y {max(0, y0) * H:.0f}..{min(1, y1) * H:.0f} px")
    if not found:
        print("  label: nothing to classify")
        return
    y0, x0, y1, x1 = boxes[found[0]]
    left, top = int(max(0.0, x0) * W), int(max(0.0, y0) * H)
    right, bottom = max(int(np.ceil(min(1.0, x1) * W)), left + 1), max(int(np.ceil(min(1.0, y1) * H)), top + 1)
    r = c.invoke(mnv2, resize(img[top:bottom, left:right], 224, 224)[None])   # uint8 [1,224,224,3]
    q = r.quantization(0)
    probs = r.real(0).reshape(-1)                                          # dequantized uint8 softmax
    best = np.argsort(-probs, kind="stable")[:3]
    print(f"coral_mobilenet_v2_1.0_224_quant on detection 1's box x {left}..{right}, y {top}..{bottom} px "
          f"(output {r[0].dtype}, scale {q.scale[0]:.6g}, zero point {q.zero_point[0]}):")
    for k in best:
        print(f"  class {k} {imagenet[k] if k < len(imagenet) else '?'}: {probs[k]:.3f} (q {int(r[0].reshape(-1)[k])})")
    print(f"  detection 1: label: {imagenet[best[0]]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("image", nargs="?", default=ASTRONAUT, help="PNG or JPEG photograph (default: astronaut.png)")
    ap.add_argument("--socket", help="arenad socket (default: $ARENAD_SOCKET, else /run/arenad/arenad.sock)")
    ap.add_argument("--models", default=os.environ.get("AR_MODELS_DIR", "models"),
                    help="folder of the .tflite files (default: $AR_MODELS_DIR, else ./models)")
    ap.add_argument("--pair", choices=sorted(PAIRS), default="people")
    args = ap.parse_args(argv)

    import imageio   # Debian's python3-imageio (it also ships the astronaut photograph)
    img = np.asarray(imageio.imread(args.image))
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    img = img[:, :, :3].astype(np.uint8)
    print(f"image: {args.image} ({img.shape[1]}x{img.shape[0]})")

    try:
        with arenad.Client(args.socket, timeout=120) as c:
            have = {m.name for m in c.models()}
            loaded = []
            try:
                for name, stem in PAIRS[args.pair]:
                    if name not in have:
                        c.load(name, os.path.join(args.models, stem + ".tflite"), group="ex_" + args.pair)
                        loaded.append(name)
                names = [n for n, _ in PAIRS[args.pair]]
                if args.pair == "quant":
                    quant(c, names, img, args.models)
                else:
                    (people if args.pair == "people" else hands)(c, names, img)
            finally:
                for name in loaded:
                    c.unload(name)
    except arenad.ArenadError as e:
        print(f"detect_and_classify: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
