"""arenad.image and arenad.detection against arenactl (offline, no daemon): the tensors
arenad.image.image_input makes are byte-equal to the ones `arenactl run MODEL --image FILE` feeds
the same input, read back through identity models (tests/mk_int_io_model image: RESHAPE of the
input), for float32 / uint8 / int8 inputs, stretch / letterbox / crop / border, value ranges,
quantized coding and a 1-channel (gray) input, on PNG and JPEG photographs; the PNG decoder used
without Pillow gives libpng's pixels; and the SSD decoding gives clients/ssd.c's best box (through
clients/demo_decode) on the face and palm detectors' real outputs."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

from arenad import detection, image
from ardaemon import ARENACTL, BUILD, MODELS, WRAP, model_path

IMAGES = "/usr/lib/python3/dist-packages/imageio/resources/images"
ASTRONAUT = os.path.join(IMAGES, "astronaut.png")
CHELSEA = os.path.join(IMAGES, "chelsea.png")
try:
    from PIL import Image
except ImportError:
    Image = None


def adam7_png(px: np.ndarray) -> bytes:
    """An interlaced (Adam7) 8-bit RGB PNG of px [H, W, 3], every row with filter 0."""
    import struct
    import zlib
    h, w = px.shape[:2]
    raw = b""
    for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)):
        sub = px[y0::dy, x0::dx]
        if sub.size:
            raw += b"".join(b"\0" + row.tobytes() for row in sub)

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 1))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


class _Tensor:
    """The TensorInfo fields image_input reads."""

    def __init__(self, shape, dtype, scale=None, zp=0):
        self.name, self.shape, self.dtype = "image", tuple(shape), np.dtype(dtype)

        class Q:
            pass
        self.quantization = None
        if scale is not None:
            self.quantization = Q()
            self.quantization.scale = np.array([scale], np.float32)
            self.quantization.zero_point = np.array([zp], np.int64)


def setUpModule():
    global TMP
    if not os.path.isfile(ASTRONAUT):
        raise unittest.SkipTest(f"{ASTRONAUT} missing (python3-imageio)")
    TMP = tempfile.mkdtemp(prefix="arenad-py-image-")


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def identity_model(dtype, h, w, c, scale=None, zp=None):
    name = f"id_{dtype}_{h}x{w}x{c}_{scale}_{zp}.tflite"
    path = os.path.join(TMP, name)
    if not os.path.exists(path):
        q = [] if scale is None else [repr(scale), str(zp)]
        subprocess.run([*WRAP, os.path.join(BUILD, "tests", "mk_int_io_model"), path, "image", dtype, str(h), str(w),
                        str(c), *q], check=True)
    return path


def arenactl_tensor(model, photo, *opts):
    """The input bytes arenactl made: output 0 of the identity model."""
    out = tempfile.mkdtemp(dir=TMP)
    r = subprocess.run([*WRAP, ARENACTL, "run", model, "--image", photo, *opts, "--output", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"arenactl run {model} --image {photo} {' '.join(opts)}: {r.stderr}")
    with open(os.path.join(out, "output_0.bin"), "rb") as f:
        return f.read()


class ImageBytes(unittest.TestCase):
    # (dtype, h, w, c, scale, zp, arenactl options, image_input keywords)
    CASES = [
        ("float32", 128, 128, 3, None, None, ["--fit", "letterbox", "--range", "-1,1"],
         dict(fit="letterbox", value_range=(-1.0, 1.0))),
        ("float32", 256, 256, 3, None, None, ["--fit", "stretch", "--range", "0,1"],
         dict(fit="stretch", value_range=(0.0, 1.0))),
        ("float32", 192, 192, 3, None, None, [], {}),   # defaults: letterbox, [0,1]
        ("float32", 224, 224, 3, None, None, ["--crop", "150,60,300,230", "--fit", "letterbox", "--border", "114"],
         dict(crop=image.Rect(150, 60, 300, 230), border=114)),
        ("float32", 160, 96, 3, None, None, ["--crop", "200,100,240,130", "--fit", "stretch"],   # upscaling
         dict(crop=image.Rect(200, 100, 240, 130), fit="stretch")),
        ("uint8", 300, 300, 3, 0.0078125, 128, ["--fit", "stretch"], dict(fit="stretch")),
        ("uint8", 224, 224, 3, 0.0078125, 128, ["--fit", "stretch", "--range", "-1,1"],
         dict(fit="stretch", value_range=(-1.0, 1.0))),
        ("int8", 416, 416, 3, 0.003921569, -128, ["--fit", "letterbox", "--border", "114"],
         dict(fit="letterbox", border=114)),
        ("int8", 224, 224, 3, 0.003921569, -128, ["--fit", "letterbox", "--range", "0,1"],
         dict(fit="letterbox", value_range=(0.0, 1.0))),
        ("uint8", 128, 128, 3, None, None, ["--fit", "stretch", "--range", "0,255"],   # range, no quantization
         dict(fit="stretch", value_range=(0.0, 255.0))),
        ("int8", 96, 96, 1, 0.0078125, -128, ["--fit", "stretch"], dict(fit="stretch")),   # gray (person_detect)
        ("float32", 64, 64, 1, None, None, ["--fit", "letterbox", "--range", "-1,1"],
         dict(fit="letterbox", value_range=(-1.0, 1.0))),
    ]

    def check(self, photo):
        n = 0
        for dtype, h, w, c, scale, zp, opts, kw in self.CASES:
            with self.subTest(photo=os.path.basename(photo), dtype=dtype, shape=(h, w, c), opts=opts):
                want = arenactl_tensor(identity_model(dtype, h, w, c, scale, zp), photo, *opts)
                got, geom = image.image_input(photo, _Tensor((1, h, w, c), dtype, scale, zp), **kw)
                self.assertEqual(got.shape, (1, h, w, c))
                self.assertEqual(got.dtype, np.dtype(dtype))
                self.assertEqual(len(got.tobytes()), len(want))
                diff = np.count_nonzero(np.frombuffer(got.tobytes(), np.uint8) != np.frombuffer(want, np.uint8))
                self.assertEqual(diff, 0, f"{diff} of {len(want)} bytes differ from arenactl's")
                n += 1
        print(f"{os.path.basename(photo)}: {n} image inputs byte-equal to arenactl's")

    def test_astronaut_png_equals_arenactl(self):
        self.check(ASTRONAUT)

    def test_chelsea_png_equals_arenactl(self):
        self.check(CHELSEA)   # 451x300: letterbox leaves a border

    @unittest.skipIf(Image is None, "Pillow (python3-pil) missing: no JPEG to write or read")
    def test_jpeg_equals_arenactl(self):
        jpeg = os.path.join(TMP, "chelsea.jpg")
        Image.open(CHELSEA).convert("RGB").save(jpeg, quality=90)
        self.check(jpeg)

    def test_png_decoder_without_pillow_equals_libpng(self):
        """arenad.image's own PNG decoder: the pixels libpng gives arenactl, on the photos and on
        gray, palette, 16-bit, alpha and interlaced files written from them."""
        files = [ASTRONAUT, CHELSEA]
        if Image is not None:
            src = Image.open(CHELSEA).convert("RGB").crop((100, 50, 261, 180))
            variants = {"gray.png": src.convert("L"), "palette.png": src.convert("P"),
                        "rgba.png": src.convert("RGBA"), "la.png": src.convert("LA"),
                        "gray16.png": src.convert("I").point(lambda v: v * 257).convert("I;16"),
                        "bilevel.png": src.convert("1")}
            for name, im in variants.items():
                p = os.path.join(TMP, name)
                im.save(p)
                files.append(p)
        # Pillow writes no Adam7 PNG: an interlaced RGB file written here (filter 0 per row).
        p = os.path.join(TMP, "interlaced.png")
        with open(p, "wb") as fh:
            fh.write(adam7_png(image.resize(image.load(CHELSEA), 61, 37)))
        files.append(p)
        model = identity_model("uint8", 64, 64, 3)
        for f in files:
            with self.subTest(file=os.path.basename(f)):
                with open(f, "rb") as fh:
                    px = image._png_decode(fh.read(), f)
                # The whole decoded image through the same resize arenactl runs (stretch to 64x64,
                # uint8: the pixels are the codes) - a decoding difference would show.
                got, _ = image.image_input(px, _Tensor((1, 64, 64, 3), np.uint8), fit="stretch")
                want = arenactl_tensor(model, f, "--fit", "stretch")
                self.assertEqual(got.tobytes(), want)
                if Image is not None:
                    np.testing.assert_array_equal(px, image.load(f))
                if f.endswith("interlaced.png"):
                    np.testing.assert_array_equal(px, image.resize(image.load(CHELSEA), 61, 37))

    def test_errors_name_the_problem(self):
        bad = os.path.join(TMP, "bad.png")
        with open(bad, "wb") as f:
            f.write(b"GIF89a not an image")
        with self.assertRaisesRegex(image.ImageError, "bad.png: not a PNG or JPEG file"):
            image.load(bad)
        with self.assertRaisesRegex(image.ImageError, "nope.png: No such file"):
            image.load(os.path.join(TMP, "nope.png"))
        with self.assertRaisesRegex(image.ImageError, r"crop 0,0,600,10: not a non-empty rectangle inside the 512x512"):
            image.image_input(ASTRONAUT, _Tensor((1, 8, 8, 3), np.float32), crop=image.Rect(0, 0, 600, 10))
        with self.assertRaisesRegex(image.ImageError, r"input 'image' is int32 \[1, 8, 8, 3\]"):
            image.image_input(ASTRONAUT, _Tensor((1, 8, 8, 3), np.int32))
        with self.assertRaisesRegex(image.ImageError, "range 1,0: need finite lo < hi"):
            image.image_input(ASTRONAUT, _Tensor((1, 8, 8, 3), np.float32), value_range=(1.0, 0.0))


class Detection(unittest.TestCase):
    def run_model(self, stem, *opts):
        out = tempfile.mkdtemp(dir=TMP)
        subprocess.run([*WRAP, ARENACTL, "run", model_path(stem), "--image", ASTRONAUT, *opts, "--output", out],
                       check=True, capture_output=True)
        return out

    def outputs(self, d, n):
        return [np.fromfile(os.path.join(d, f"output_{j}.bin"), np.float32) for j in range(n)]

    def demo_decode(self, kind, d):
        r = subprocess.run([*WRAP, os.path.join(BUILD, "clients", "demo_decode"), kind, d, "512", "512"],
                           capture_output=True, text=True, check=True)
        return r.stdout

    def test_anchor_counts_and_layout(self):
        a = detection.ssd_anchors(128, 128)
        self.assertEqual(a.shape, (896, 2))
        self.assertEqual(detection.ssd_anchors(192, 192).shape, (2016, 2))
        np.testing.assert_array_equal(a[0], [0.5 / 16, 0.5 / 16])
        np.testing.assert_array_equal(a[1], a[0])                 # 2 anchors per stride-8 cell
        np.testing.assert_array_equal(a[512], [0.5 / 8, 0.5 / 8])  # first stride-16 cell, 6 anchors
        np.testing.assert_array_equal(a[517], a[512])
        with self.assertRaisesRegex(ValueError, "multiples of 16"):
            detection.ssd_anchors(100, 128)

    @unittest.skipUnless(os.path.isfile(model_path("face_detection_short_range")), "models/ missing (./dev models)")
    def test_face_best_box_as_clients_ssd(self):
        d = self.run_model("face_detection_short_range", "--fit", "letterbox", "--range", "-1,1")
        reg, cls = self.outputs(d, 2)
        text = self.demo_decode("face", d)
        best = detection.best_ssd(reg, cls, 128, 128)
        m = re.search(r"best score ([0-9.]+) \(anchor (\d+) of 896\)", text)
        self.assertEqual(best.index, int(m.group(2)))
        self.assertAlmostEqual(best.score, float(re.search(r"score=([0-9.]+)", text).group(1)), places=6)
        # The 512x512 photo letterboxed to 128x128 fills it: box pixels = normalized * 512.
        m = re.search(r"box x (\d+)\.\.(\d+), y (\d+)\.\.(\d+) px", text)
        x0, y0, x1, y1 = (v * 512 for v in best.box)
        self.assertEqual([round(x0), round(x1), round(y0), round(y1)], [int(g) for g in m.groups()])
        found = detection.detect_ssd(reg, cls, 128, 128, min_score=0.5, iou_threshold=0.3)
        self.assertEqual(len(found), 1, [f.score for f in found])   # one face; its neighbours suppressed
        self.assertEqual(found[0].index, best.index)
        self.assertGreater(len(np.nonzero(detection.ssd_scores(cls) >= 0.5)[0]), 1)
        self.assertEqual(found[0].keypoints.shape, (6, 2))
        print(f"face: best anchor {best.index} score {best.score:.6f} as clients/ssd.c; NMS kept 1 of "
              f"{len(np.nonzero(detection.ssd_scores(cls) >= 0.5)[0])} boxes >= 0.5")

    @unittest.skipUnless(os.path.isfile(model_path("palm_detection_lite")), "models/ missing (./dev models)")
    def test_palm_best_box_as_clients_ssd(self):
        d = self.run_model("palm_detection_lite", "--fit", "letterbox", "--range", "0,1")
        reg, cls = self.outputs(d, 2)
        text = self.demo_decode("palm", d)
        best = detection.best_ssd(reg, cls, 192, 192)
        m = re.search(r"best score ([0-9.]+) \(anchor (\d+) of 2016\)", text)
        self.assertEqual(best.index, int(m.group(2)))
        self.assertAlmostEqual(best.score, float(re.search(r"score=([0-9.]+)", text).group(1)), places=6)

    def test_postprocess_unpacking_as_arenactl_detections(self):
        boxes = np.array([[[0.1, 0.2, 0.5, 0.6], [0.0, 0.0, 1.0, 1.0], [0.3, 0.3, 0.4, 0.4]]], np.float32)
        classes = np.array([[16.0, 0.0, 2.0]], np.float32)
        scores = np.array([[0.9, 0.4, 0.7]], np.float32)
        count = np.array([2.0], np.float32)   # the third row is past count
        labels = ["???", "person", "bicycle", "car"] + [f"c{i}" for i in range(4, 17)] + ["cat"]
        dets = detection.unpack_postprocess([boxes, classes, scores, count], 0.5, labels)
        self.assertEqual(len(dets), 1)
        self.assertEqual((dets[0].index, dets[0].class_id, dets[0].label), (0, 16, "cat"))
        self.assertEqual(dets[0].box, tuple(float(v) for v in (np.float32(0.2), np.float32(0.1),
                                                                np.float32(0.6), np.float32(0.5))))
        self.assertEqual([d.index for d in detection.unpack_postprocess([boxes, classes, scores, count], 0.3)], [0, 1])
        with self.assertRaisesRegex(ValueError, "not TFLite_Detection_PostProcess outputs"):
            detection.unpack_postprocess([boxes, classes[:, :2], scores, count])
        geom = image.Geometry(451, 300, image.Rect(0, 0, 451, 300), image.Rect(0, 0, 300, 300), 300, 300)
        self.assertEqual(geom.box_to_photo(*dets[0].box), image.Rect(90, 30, 271, 150))


if __name__ == "__main__":
    unittest.main()
