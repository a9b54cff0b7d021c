#!/usr/bin/python3
"""detect_and_classify.py - a detector and a second model on one photograph through a running
arenad: the detector finds objects, the second model answers a question about each of them.

  detect_and_classify.py [--socket PATH] [--detector NAME] [--classifier NAME]
                         [--load [--models DIR]] [--labels FILE] [--detector-labels FILE] [IMAGE]

NAME is a model name in the daemon. Models already loaded are used as they are - a client that is
not an admin of the daemon needs nothing else. Only with --load does the script load a model the
daemon does not have (from --models DIR, default $AR_MODELS_DIR, else ./models; the daemon must
allow it: an admin peer, and DIR inside its model_dirs), and it unloads what it loaded at the end.

What the models are is read from their inputs and outputs (Client.models()):
  detectors    MediaPipe SSDs with raw outputs (face_detection_short_range: 896 anchors, input
               values in [-1,1]; palm_detection_lite/full: 2016 anchors, [0,1]), letterboxed,
               decoded and suppressed by arenad.detection; or a model ending in
               TFLite_Detection_PostProcess (SSD MobileNet v1 COCO, uint8: the pixels are the
               codes), stretched, its four outputs unpacked.
  second model a segmentation mask [1,H,W,1] (selfie_segmentation: "person" when the mask covers
               most of a face box); hand_landmark (presence and handedness on the hand region of
               the best palm); or a classifier [1,K] (MobileNet: top classes of each detection's
               crop, stretched).
Image input is arenad.image (the same tensors as `arenactl invoke --image`).

Defaults: --detector face --classifier selfie, the names `./dev demo` and the example config
give face_detection_short_range and selfie_segmentation (models a fresh clone has after ./dev);
IMAGE defaults to the astronaut photograph of Debian's python3-imageio. With --load the known
names take these files from DIR: face, selfie, palm, hand (palm_detection_lite,
hand_landmark_lite), ssd_q and mnv2_q (`./dev models --quant`: DIR models/quant); another NAME
loads DIR/NAME.tflite. Label files: --detector-labels / --labels, else the known ones beside the
model file (ssd_mobilenet_v1_coco_labelmap.txt, coral_imagenet_labels.txt).
"""
import argparse
import os
import sys

import numpy as np

import arenad
from arenad import detection, image

ASTRONAUT = "/usr/lib/python3/dist-packages/imageio/resources/images/astronaut.png"
KNOWN_FILES = {
    "face": "face_detection_short_range", "selfie": "selfie_segmentation",
    "palm": "palm_detection_lite", "hand": "hand_landmark_lite",
    "ssd_q": "ssd_mobilenet_v1_coco_quant_postprocess", "mnv2_q": "coral_mobilenet_v2_1.0_224_quant",
}
KNOWN_LABELS = ("ssd_mobilenet_v1_coco_labelmap.txt", "coral_imagenet_labels.txt")
FACE_KEYPOINTS = ["right eye", "left eye", "nose tip", "mouth", "right ear", "left ear"]


class UsageError(Exception):
    pass


def _shapes(ts):
    return [tuple(int(d) for d in t.shape) for t in ts]


def detector_kind(m) -> str:
    outs = _shapes(m.outputs)
    if len(outs) == 4 and len(outs[0]) == 3 and outs[0][2] == 4 and len(outs[3]) == 1:
        return "postprocess"
    if len(m.inputs) == 1 and len(outs) == 2 and len(outs[0]) == 3 and len(outs[1]) == 3:
        (n0, c0), (n1, c1) = outs[0][1:], outs[1][1:]
        if n0 == n1 and c1 == 1 and c0 >= 4:
            return "ssd"
    raise UsageError(f"model '{m.name}' ({os.path.basename(m.path)}) is not a detector this example reads: outputs "
                     f"{outs} (wants MediaPipe SSD regressors [1,n,coords] + scores [1,n,1], or "
                     f"TFLite_Detection_PostProcess's four outputs)")


def second_kind(m) -> str:
    outs = _shapes(m.outputs)
    if len(outs) >= 3 and any(s == (1, 63) for s in outs) and sum(s == (1, 1) for s in outs) >= 2:
        return "hand"
    if len(outs) == 1 and len(outs[0]) == 4 and outs[0][3] == 1:
        return "mask"
    if len(outs) == 1 and len(outs[0]) == 2 and outs[0][1] >= 2:
        return "classifier"
    raise UsageError(f"model '{m.name}' ({os.path.basename(m.path)}) is not a second model this example reads: outputs "
                     f"{outs} (wants a mask [1,H,W,1], hand_landmark's outputs, or a classifier [1,K])")


def labels_for(m, given):
    if given:
        return detection.read_labels(given)
    d = os.path.dirname(m.path)
    for f in KNOWN_LABELS:
        p = os.path.join(d, f)
        if os.path.isfile(p) and (("labelmap" in f) == (len(m.outputs) == 4)):
            return detection.read_labels(p)
    return None


# ---- detectors -> list of (Detection, photo Rect) ------------------------------------------------
def detect(c, m, img, kind, labels, min_score):
    H, W = img.shape[:2]
    x = m.inputs[0]
    if kind == "postprocess":
        t, geom = image.image_input(img, x, fit="stretch")
        out = c.invoke(m.name, t)
        found = detection.unpack_postprocess(out, min_score, labels)
        n = int(out.real(3).reshape(-1)[0])
        print(f"{m.name}: {n} detections, {len(found)} with score >= {min_score} (input {x.dtype} "
              f"{list(x.shape)}: the pixels are the codes; invoke {out.invoke_us} us)")
        res = []
        for k, d in enumerate(found, 1):
            r = geom.box_to_photo(*d.box)
            print(f"  detection {k}: {d.label or 'class %d' % d.class_id} score {d.score:.3f}, "
                  f"box x {r.left}..{r.right}, y {r.top}..{r.bottom} px")
            res.append((d, r))
        return res, None
    side_h, side_w = int(x.shape[1]), int(x.shape[2])
    n = int(m.outputs[0].shape[1])
    value_range = (-1.0, 1.0) if n == 896 else (0.0, 1.0)   # BlazeFace [-1,1]; BlazePalm [0,1]
    t, geom = image.image_input(img, x, fit="letterbox", value_range=value_range)
    out = c.invoke(m.name, t)
    found = detection.detect_ssd(out[0], out[1], side_w, side_h, min_score, 0.3)
    best = detection.best_ssd(out[0], out[1], side_w, side_h)
    what = "face" if n == 896 else "palm" if n == 2016 else "object"
    print(f"{m.name}: {len(found)} {what}(s) with score >= {min_score} (best anchor {best.index} of {n}, "
          f"score {best.score:.3f}; invoke {out.invoke_us} us)")
    res = []
    for k, d in enumerate(found, 1):
        r = geom.box_to_photo(*d.box)
        print(f"  detection {k}: {what} score {d.score:.3f}, box x {r.left}..{r.right}, y {r.top}..{r.bottom} px "
              f"({r.width} x {r.height}) in the {W}x{H} photo")
        if what == "face" and len(d.keypoints) == 6:
            kps = ", ".join(f"{name} ({px:.0f},{py:.0f})" for name, (px, py) in
                            zip(FACE_KEYPOINTS, (geom.to_photo(*k) for k in d.keypoints)))
            print(f"    keypoints: {kps}")
        res.append((d, r))
    return res, (best, geom)


# ---- second models -------------------------------------------------------------------------------
def mask_labels(c, m, img, found):
    H, W = img.shape[:2]
    t, _ = image.image_input(img, m.inputs[0], fit="stretch", value_range=(0.0, 1.0))
    out = c.invoke(m.name, t)
    mh, mw = int(m.outputs[0].shape[1]), int(m.outputs[0].shape[2])
    mask = out.real(0).reshape(mh, mw) if out.tensors[0].quantization else np.asarray(out[0]).reshape(mh, mw)
    print(f"{m.name}: person mask covers {100 * np.mean(mask > 0.5):.1f}% of the photo")
    for k, (_, r) in enumerate(found, 1):
        mx0, mx1 = r.left * mw // W, max(-(-r.right * mw // W), r.left * mw // W + 1)
        my0, my1 = r.top * mh // H, max(-(-r.bottom * mh // H), r.top * mh // H + 1)
        cover = float(np.mean(mask[my0:my1, mx0:mx1] > 0.5))
        label = "person" if cover >= 0.5 else "not a person in the foreground"
        print(f"  detection {k}: label: {label} (person mask covers {100 * cover:.0f}% of the box)")
    if not found:
        print("  label: nothing detected to label")


def classify(c, m, img, found, labels, top=3):
    for k, (_, r) in enumerate(found, 1):
        t, _ = image.image_input(img, m.inputs[0], fit="stretch", crop=r)
        out = c.invoke(m.name, t)
        probs = out.real(0).reshape(-1) if out.tensors[0].quantization else np.asarray(out[0], np.float32).reshape(-1)
        order = np.argsort(-probs, kind="stable")[:top]
        name = lambda i: labels[i] if labels is not None and i < len(labels) else f"class {i}"
        print(f"{m.name} on detection {k}'s box x {r.left}..{r.right}, y {r.top}..{r.bottom} px:")
        for i in order:
            print(f"  class {i} {name(i)}: {probs[i]:.3f}")
        print(f"  detection {k}: label: {name(int(order[0]))}")
    if not found:
        print(f"{m.name}: nothing detected to classify")


def hand_region(img, d, geom):
    """MediaPipe's palm -> hand region without the rotation: half a box towards the middle finger
    (keypoint 0 wrist -> keypoint 2), a square 2.6 times the box, clamped to the photo."""
    H, W = img.shape[:2]
    x0, y0 = geom.to_photo(d.box[0], d.box[1])
    x1, y1 = geom.to_photo(d.box[2], d.box[3])
    cx, cy, size = (x0 + x1) / 2, (y0 + y1) / 2, max(x1 - x0, y1 - y0)
    (wx, wy), (mx, my) = geom.to_photo(*d.keypoints[0]), geom.to_photo(*d.keypoints[2])
    length = float(np.hypot(mx - wx, my - wy))
    if length > 1e-6:
        cx, cy = cx + 0.5 * size * (mx - wx) / length, cy + 0.5 * size * (my - wy) / length
    side = 2.6 * size
    left, top = int(round(max(0, cx - side / 2))), int(round(max(0, cy - side / 2)))
    right, bottom = int(round(min(W, cx + side / 2))), int(round(min(H, cy + side / 2)))
    return image.Rect(left, top, max(right, left + 1), max(bottom, top + 1))


def hand(c, m, img, found, best):
    d, geom = (found[0][0], best[1]) if found else best
    r = hand_region(img, d, geom)
    t, _ = image.image_input(img, m.inputs[0], fit="letterbox", value_range=(0.0, 1.0), crop=r)
    out = c.invoke(m.name, t)
    shapes = _shapes(m.outputs)
    ones = [j for j, s in enumerate(shapes) if s == (1, 1)]
    presence, handed = float(np.asarray(out[ones[0]]).reshape(-1)[0]), float(np.asarray(out[ones[1]]).reshape(-1)[0])
    which = "the best palm" if found else "the best (sub-threshold) candidate"
    print(f"{m.name} on {which}'s hand region x {r.left}..{r.right}, y {r.top}..{r.bottom} px: presence {presence:.3f}")
    if presence >= 0.5:
        # MediaPipe labels score s "Left" for a mirrored (selfie) image: the person's right hand.
        print(f"  label: {'right' if handed >= 0.5 else 'left'} hand (handedness score {max(handed, 1 - handed):.3f})")
    else:
        print("  label: no hand (MediaPipe needs presence 0.5)")


# ---- main ----------------------------------------------------------------------------------------
def ensure(c, name, args, loaded, have):
    if name in have:
        return
    if not args.load:
        raise UsageError(f"the daemon has no model named '{name}' (loaded: {', '.join(sorted(have)) or 'none'}); "
                         f"load it (arenactl load {name} PATH) or pass --load to let this script load it from "
                         f"--models (an admin of the daemon only)")
    path = os.path.abspath(os.path.join(args.models, KNOWN_FILES.get(name, name) + ".tflite"))
    if not os.path.isfile(path):
        raise UsageError(f"--load: {path}: no such file (./dev models; ./dev models --quant for ssd_q, mnv2_q)")
    c.load(name, path, group="ex_pair")
    loaded.append(name)
    print(f"loaded {name} from {path}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("image", nargs="?", default=ASTRONAUT, help="PNG or JPEG photograph (default: astronaut.png)")
    ap.add_argument("--socket", help="arenad socket (default: $ARENAD_SOCKET, else /run/arenad/arenad.sock)")
    ap.add_argument("--detector", default="face", help="the detector's model name in the daemon (default: face)")
    ap.add_argument("--classifier", default="selfie", help="the second model's name in the daemon (default: selfie)")
    ap.add_argument("--load", action="store_true", help="load models the daemon does not have from --models")
    ap.add_argument("--models", default=os.environ.get("AR_MODELS_DIR", "models"),
                    help="with --load: folder of the .tflite files (default: $AR_MODELS_DIR, else ./models)")
    ap.add_argument("--labels", help="the classifier's label file (one label per line)")
    ap.add_argument("--detector-labels", help="a post-processed detector's label file (line = class + 1)")
    ap.add_argument("--min-score", type=float, default=0.5, help="detections below this score are dropped (0.5)")
    args = ap.parse_args(argv)

    try:
        img = image.load(args.image)
    except image.ImageError as e:
        print(f"detect_and_classify: {e}", file=sys.stderr)
        return 1
    print(f"image: {args.image} ({img.shape[1]}x{img.shape[0]})")
    try:
        with arenad.Client(args.socket, timeout=120) as c:
            have = {m.name for m in c.models()}
            loaded = []
            try:
                for name in (args.detector, args.classifier):
                    ensure(c, name, args, loaded, have)
                info = {m.name: m for m in c.models()}
                det, sec = info[args.detector], info[args.classifier]
                kind, skind = detector_kind(det), second_kind(sec)
                found, best = detect(c, det, img, kind, labels_for(det, args.detector_labels), args.min_score)
                if skind == "mask":
                    mask_labels(c, sec, img, found)
                elif skind == "classifier":
                    classify(c, sec, img, found, labels_for(sec, args.labels))
                elif best is None:
                    raise UsageError(f"'{args.classifier}' (hand_landmark) follows a palm detector, not '{args.detector}'")
                else:
                    hand(c, sec, img, found, best)
            finally:
                for name in loaded:
                    c.unload(name)
    except UsageError as e:
        print(f"detect_and_classify: {e}", file=sys.stderr)
        return 2
    except arenad.ArenadError as e:
        hint = ""
        if e.code == "ECONN":
            hint = " (is arenad running, and may this user open its socket? --socket or $ARENAD_SOCKET)"
        elif e.code == "EPERM":
            hint = " (loading needs an admin peer of the daemon and a file inside its model_dirs)"
        print(f"detect_and_classify: {e}{hint}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
