"""arenad.image: photographs to model input tensors, exactly as `arenactl invoke --image` makes them.

The same steps and the same bytes as arenactl's clients/image.c and clients/cli_tensor.c, written
again in numpy (the tests compare this module's tensors with arenactl's byte for byte):

  load(path)        PNG or JPEG -> uint8 [H, W, 3] RGB. Decoded by Pillow (Debian: python3-pil)
                    when it is importable - libpng / libjpeg-turbo underneath, as arenactl; without
                    Pillow PNG files are decoded here (zlib; every bit depth and colour type,
                    interlaced too) and JPEG files need Pillow (ImageError says so). Alpha is
                    dropped (not composited), 16-bit samples keep their high byte, gray and
                    palette images become RGB.
  resize(...)       Pillow's Image.resize(BILINEAR) (Pillow 9.4 Resample.c semantics): a separable
                    triangle filter whose support widens by the shrink factor, horizontal pass then
                    vertical, each rounded to 8 bits with 22-bit fixed-point weights; a crop is
                    resized as if its pixels were a new image (crop() then resize()).
  fill(...)         stretch or letterbox into an h x w tensor (MediaPipe ImageToTensorCalculator
                    terms; letterbox scales by min(w/cw, h/ch), centred, border pixel `border`),
                    then float32 values pixel * float32((hi - lo) / 255) + lo, in two float32
                    steps (no fused multiply-add).
  code_pixels(...)  integer inputs: without a range the pixels are the codes (uint8: q = pixel,
                    int8: q = pixel - 128); with a range each pixel is scaled as for float inputs
                    and quantized with the input's scale and zero point, q = round(real / scale) +
                    zero_point (halves away from zero, as TFLite's QUANTIZE), saturated.
  image_input(...)  all of it for one model input (a TensorInfo of Client.models()): the tensor
                    [1, H, W, C] in the input's dtype (C = 1: Pillow's convert("L") luma first) and
                    the Geometry that maps the model's normalized coordinates back to photo pixels.
"""
import math
import struct
import zlib
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

MAX_PIXELS = 256 * 1024 * 1024   # as AR_IMAGE_MAX_PIXELS: larger images are refused
MAX_SIDE = 16384                 # tensor sides 1..16384
_PRECISION_BITS = 32 - 8 - 2


class ImageError(ValueError):
    """A photograph that cannot be read or turned into the tensor asked for; the message names the
    file (or argument) and what is wrong."""


@dataclass(frozen=True)
class Rect:
    """A rectangle in pixels: [left, right) x [top, bottom)."""

    left: int
    top: int
    right: int
    bottom: int

    @property
    def width(self) -> int:
        return self.right - self.left

    @property
    def height(self) -> int:
        return self.bottom - self.top


@dataclass(frozen=True)
class Geometry:
    """Where a photo went in a model input: the photo's size, the crop taken from it, where the
    (cropped) photo lies inside the tensor (`placed`; the whole tensor for stretch) and the tensor's
    size. to_photo maps normalized tensor coordinates ([0,1] across the input's width / height, the
    unit detectors report boxes in) to photo pixels, as arenactl --detections does."""

    img_w: int
    img_h: int
    crop: Rect
    placed: Rect
    tensor_w: int
    tensor_h: int

    def to_photo(self, xn: float, yn: float) -> Tuple[float, float]:
        def axis(v, tensor, p0, p1, c0, c1):
            frac = (v * tensor - p0) / float(p1 - p0)
            return c0 + frac * float(c1 - c0)
        return (axis(xn, self.tensor_w, self.placed.left, self.placed.right, self.crop.left, self.crop.right),
                axis(yn, self.tensor_h, self.placed.top, self.placed.bottom, self.crop.top, self.crop.bottom))

    def box_to_photo(self, x0: float, y0: float, x1: float, y1: float) -> Rect:
        """A normalized box -> integer photo pixels clamped to the photo, at least 1 x 1: the
        `crop L,T,R,B` arenactl --detections prints (usable as crop= for a second model)."""
        L, T = self.to_photo(x0, y0)
        R, B = self.to_photo(x1, y1)
        li, ri = _lround(max(0.0, min(L, self.img_w))), _lround(max(0.0, min(R, self.img_w)))
        ti, bi = _lround(max(0.0, min(T, self.img_h))), _lround(max(0.0, min(B, self.img_h)))
        if ri <= li:
            ri = li + 1 if li + 1 <= self.img_w else li
            li = ri - 1
        if bi <= ti:
            bi = ti + 1 if ti + 1 <= self.img_h else ti
            ti = bi - 1
        return Rect(li, ti, ri, bi)


def _lround(v: float) -> int:
    """C lround: halves away from zero."""
    return int(math.floor(v + 0.5)) if v >= 0 else -int(math.floor(-v + 0.5))


# ---- decoding ------------------------------------------------------------------------------------

def load(path) -> np.ndarray:
    """Decode the PNG or JPEG file at `path` (told apart by their signatures) -> uint8 [H, W, 3].
    Raises ImageError naming the file (missing, neither PNG nor JPEG, corrupt, CMYK JPEG, larger
    than MAX_PIXELS, JPEG without Pillow)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise ImageError(f"{path}: {e.strerror}") from e
    is_png = head == b"\x89PNG\r\n\x1a\n"
    is_jpeg = head[:3] == b"\xff\xd8\xff"
    if not (is_png or is_jpeg):
        raise ImageError(f"{path}: not a PNG or JPEG file")
    try:
        from PIL import Image
    except ImportError:
        Image = None
    if Image is None:
        if is_jpeg:
            raise ImageError(f"{path}: JPEG needs Pillow (apt-get install python3-pil); PNG is read without it")
        with open(path, "rb") as f:
            return _png_decode(f.read(), path)
    try:
        with Image.open(path) as im:
            if im.mode in ("CMYK",):
                raise ImageError(f"{path}: CMYK JPEG is not supported (convert it to RGB)")
            _check_size(im.width, im.height, path)
            return _pil_rgb(im, path)
    except ImageError:
        raise
    except Exception as e:   # Pillow raises several types on corrupt data
        raise ImageError(f"{path}: bad {'PNG' if is_png else 'JPEG'}: {e}") from e


def _check_size(w: int, h: int, path) -> None:
    if w == 0 or h == 0:
        raise ImageError(f"{path}: image has no pixels ({w}x{h})")
    if w * h > MAX_PIXELS:
        raise ImageError(f"{path}: {w}x{h} pixels is more than the {MAX_PIXELS} accepted")


def _pil_rgb(im, path) -> np.ndarray:
    """Pillow image -> uint8 [H, W, 3] the way libpng's expand / strip_16 / strip_alpha /
    gray_to_rgb does it (Pillow's convert("RGB") on I;16 or I modes would clip, not strip)."""
    mode = im.mode
    if mode in ("RGB", "RGBA", "RGBX", "L", "LA", "P", "PA", "1"):
        if mode in ("P", "PA"):
            im = im.convert("RGBA" if "transparency" in im.info or mode == "PA" else "RGB")
        elif mode == "1":
            im = im.convert("L")
        a = np.asarray(im)
        if a.ndim == 2:
            a = a[:, :, None]
        if a.shape[2] in (1, 2):            # L, LA: gray (alpha dropped) to RGB
            a = np.repeat(a[:, :, :1], 3, axis=2)
        return np.ascontiguousarray(a[:, :, :3], dtype=np.uint8)
    if mode.startswith("I;16") or mode == "I":
        # 16-bit gray PNG: libpng's strip_16 keeps the high byte.
        a = np.asarray(im).astype(np.uint32)
        a = (a >> 8).astype(np.uint8)
        return np.ascontiguousarray(np.repeat(a[:, :, None], 3, axis=2))
    if mode == "YCbCr":
        return np.ascontiguousarray(np.asarray(im.convert("RGB")), dtype=np.uint8)
    raise ImageError(f"{path}: image mode {mode} is not supported")


def _png_decode(data: bytes, path) -> np.ndarray:
    """A PNG file's bytes -> uint8 [H, W, 3]: every colour type and bit depth, Adam7 too; as
    libpng with expand + strip_16 + strip_alpha + gray_to_rgb (no gamma)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ImageError(f"{path}: not a PNG file")
    p, ihdr, plte, trns, idat = 8, None, None, None, []
    while p + 8 <= len(data):
        n, kind = struct.unpack(">I4s", data[p:p + 8])
        body = data[p + 8:p + 8 + n]
        if len(body) != n:
            raise ImageError(f"{path}: bad PNG: truncated {kind.decode('latin-1')} chunk")
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            plte = np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            trns = body
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        p += 12 + n
    if ihdr is None or not idat:
        raise ImageError(f"{path}: bad PNG: no IHDR or no IDAT")
    w, h, depth, color, _, _, interlace = ihdr
    _check_size(w, h, path)
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(color)
    if channels is None or depth not in (1, 2, 4, 8, 16):
        raise ImageError(f"{path}: bad PNG: colour type {color}, bit depth {depth}")
    try:
        raw = zlib.decompress(b"".join(idat))
    except zlib.error as e:
        raise ImageError(f"{path}: bad PNG: {e}") from e
    bpp = max(1, channels * depth // 8)   # filter unit, bytes

    def unfilter(buf, pos, pw, ph):
        stride = (pw * channels * depth + 7) // 8
        out = np.zeros((ph, stride), np.uint8)
        prev = np.zeros(stride, np.int32)
        for y in range(ph):
            if pos + 1 + stride > len(buf):
                raise ImageError(f"{path}: bad PNG: image data too short")
            ft = buf[pos]
            line = np.frombuffer(buf, np.uint8, stride, pos + 1).astype(np.int32)
            pos += 1 + stride
            if ft == 0:
                cur = line
            elif ft == 1:
                cur = line.copy()
                for i in range(bpp, stride):
                    cur[i] = (cur[i] + cur[i - bpp]) & 0xFF
            elif ft == 2:
                cur = (line + prev) & 0xFF
            elif ft == 3:
                cur = line.copy()
                for i in range(stride):
                    left = cur[i - bpp] if i >= bpp else 0
                    cur[i] = (cur[i] + ((left + prev[i]) >> 1)) & 0xFF
            elif ft == 4:
                cur = line.copy()
                for i in range(stride):
                    a = cur[i - bpp] if i >= bpp else 0
                    b = prev[i]
                    c = prev[i - bpp] if i >= bpp else 0
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    cur[i] = (cur[i] + pr) & 0xFF
            else:
                raise ImageError(f"{path}: bad PNG: filter type {ft}")
            out[y] = cur
            prev = cur
        return out, pos

    def samples(rows, pw):
        if depth == 16:
            s = rows.reshape(rows.shape[0], -1, 2)[:, :, 0]        # strip_16: the high byte
        elif depth == 8:
            s = rows
        else:
            bits = np.unpackbits(rows, axis=1).reshape(rows.shape[0], -1, depth)
            s = np.zeros(bits.shape[:2], np.uint16)
            for k in range(depth):
                s = (s << 1) | bits[:, :, k]
            s = s[:, :pw * channels].astype(np.uint8)
            if color == 0:   # expand low-bit gray to 8 bits
                s = (s.astype(np.uint16) * (255 // ((1 << depth) - 1))).astype(np.uint8)
        return s[:, :pw * channels].reshape(rows.shape[0], pw, channels)

    if interlace == 0:
        rows, _ = unfilter(raw, 0, w, h)
        px = samples(rows, w)
    else:
        px = np.zeros((h, w, channels), np.uint8)
        pos = 0
        for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
                               (1, 0, 2, 2), (0, 1, 1, 2)):
            pw, ph = (w - x0 + dx - 1) // dx, (h - y0 + dy - 1) // dy
            if pw == 0 or ph == 0:
                continue
            rows, pos = unfilter(raw, pos, pw, ph)
            px[y0::dy, x0::dx] = samples(rows, pw)
    if color == 3:
        if plte is None:
            raise ImageError(f"{path}: bad PNG: palette image without PLTE")
        idx = px[:, :, 0]
        if int(idx.max()) >= len(plte):
            raise ImageError(f"{path}: bad PNG: palette index out of range")
        return np.ascontiguousarray(plte[idx])
    if channels in (1, 2):
        return np.ascontiguousarray(np.repeat(px[:, :, :1], 3, axis=2))
    return np.ascontiguousarray(px[:, :, :3])


def to_gray(img: np.ndarray) -> np.ndarray:
    """Pillow's convert("L") luma (ITU-R 601-2) in every channel: L = (R * 19595 + G * 38470 +
    B * 7471 + 0x8000) >> 16, uint8 [H, W, 3] (as arenactl does before a 1-channel input)."""
    a = np.asarray(img, np.uint32)
    lum = ((a[:, :, 0] * 19595 + a[:, :, 1] * 38470 + a[:, :, 2] * 7471 + 0x8000) >> 16).astype(np.uint8)
    return np.repeat(lum[:, :, None], 3, axis=2)


# ---- resampling (Pillow BILINEAR) ------------------------------------------------------------------

def _coeffs(in0: int, in1: int, out_size: int):
    """Per output index: first input index, tap count, fixed-point weights [out, ksize]."""
    scale = (in1 - in0) / out_size
    filterscale = 1.0 if scale < 1.0 else scale
    support = 1.0 * filterscale
    ksize = int(math.ceil(support)) * 2 + 1
    first = np.zeros(out_size, np.int64)
    count = np.zeros(out_size, np.int64)
    kk = np.zeros((out_size, ksize), np.int64)
    n = in1 - in0
    ss = 1.0 / filterscale
    for xx in range(out_size):
        center = (xx + 0.5) * scale
        xmin = int(center - support + 0.5)
        if xmin < 0:
            xmin = 0
        xmax = int(center + support + 0.5)
        if xmax > n:
            xmax = n
        xmax -= xmin
        k = []
        ww = 0.0
        for x in range(xmax):
            t = abs((x + xmin - center + 0.5) * ss)
            v = 1.0 - t if t < 1.0 else 0.0
            k.append(v)
            ww += v
        for x in range(xmax):
            if ww != 0.0:
                k[x] /= ww
        for x in range(xmax):
            v = k[x] * (1 << _PRECISION_BITS)
            kk[xx, x] = int(-0.5 + v if v < 0 else 0.5 + v)
        first[xx] = xmin + in0
        count[xx] = xmax
    return first, count, kk


def _clip8(acc: np.ndarray) -> np.ndarray:
    return np.clip(acc >> _PRECISION_BITS, 0, 255).astype(np.uint8)


def resize(img: np.ndarray, width: int, height: int, crop: Optional[Rect] = None) -> np.ndarray:
    """uint8 [H, W, 3] (or the part `crop` of it) -> uint8 [height, width, 3] with Pillow's BILINEAR
    filter (see the module text); the same bytes as clients/image.c's ar_image_resize_rgb8."""
    img = np.asarray(img)
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        raise ImageError(f"resize wants uint8 [H, W, 3] pixels, not {img.dtype} {list(img.shape)}")
    H, W = img.shape[:2]
    r = crop or Rect(0, 0, W, H)
    if (r.left >= r.right or r.top >= r.bottom or r.right > W or r.bottom > H or not 0 < width <= MAX_SIDE
            or not 0 < height <= MAX_SIDE):
        raise ImageError(f"resize of crop {r.left},{r.top},{r.right},{r.bottom} of a {W}x{H} image "
                         f"to {width}x{height}: not a non-empty crop inside the image, or a size outside 1..{MAX_SIDE}")
    hx0, hn, hk = _coeffs(r.left, r.right, width)
    vy0, vn, vk = _coeffs(r.top, r.bottom, height)
    y_first = int(vy0[0])
    y_last = int(vy0[-1] + vn[-1])
    src = img[y_first:y_last].astype(np.int64)
    # Horizontal pass: tap k of every output column at once (weights beyond a column's count are 0).
    acc = np.full((y_last - y_first, width, 3), 1 << (_PRECISION_BITS - 1), np.int64)
    for k in range(hk.shape[1]):
        idx = np.minimum(hx0 + k, W - 1)
        acc += src[:, idx, :] * hk[:, k][None, :, None]
    tmp = _clip8(acc).astype(np.int64)
    # Vertical pass.
    acc = np.full((height, width, 3), 1 << (_PRECISION_BITS - 1), np.int64)
    for k in range(vk.shape[1]):
        idx = np.minimum(vy0 - y_first + k, tmp.shape[0] - 1)
        acc += tmp[idx, :, :] * vk[:, k][:, None, None]
    return _clip8(acc)


# ---- tensors ---------------------------------------------------------------------------------------

def _placement(crop: Rect, h: int, w: int, fit: str) -> Rect:
    if fit == "stretch":
        return Rect(0, 0, w, h)
    s = min(w / crop.width, h / crop.height)
    pw, ph = _lround(crop.width * s), _lround(crop.height * s)
    pw, ph = min(max(pw, 1), w), min(max(ph, 1), h)
    left, top = (w - pw) // 2, (h - ph) // 2
    return Rect(left, top, left + pw, top + ph)


def _lut(lo: float, hi: float) -> np.ndarray:
    """float32 value of each pixel 0..255: float32(pixel) * float32((hi - lo) / 255) + float32(lo)."""
    scale = np.float32((float(hi) - float(lo)) / 255.0)
    prod = np.arange(256, dtype=np.float32) * scale
    return (prod + np.float32(lo)).astype(np.float32)


def fill(img: np.ndarray, height: int, width: int, fit: str = "letterbox", lo: float = 0.0, hi: float = 1.0,
         crop: Optional[Rect] = None, border: int = 0) -> Tuple[np.ndarray, Rect]:
    """float32 [height, width, 3] from the part `crop` of img (None: all of it) resized by `fit`
    ("stretch" | "letterbox") and scaled to [lo, hi]; the letterbox border is the pixel value
    `border` (0..255) scaled the same way. Returns (values, placed): where the photo lies in the
    tensor. Raises ImageError on a bad size, crop, range, fit or border (arenactl's checks)."""
    img = np.asarray(img)
    H, W = img.shape[:2]
    if not (0 < height <= MAX_SIDE and 0 < width <= MAX_SIDE):
        raise ImageError(f"tensor size {width}x{height}: must be 1..{MAX_SIDE} per side")
    r = crop or Rect(0, 0, W, H)
    if r.left >= r.right or r.top >= r.bottom or r.right > W or r.bottom > H or r.left < 0 or r.top < 0:
        raise ImageError(f"crop {r.left},{r.top},{r.right},{r.bottom}: not a non-empty rectangle inside the {W}x{H} image")
    lo, hi = float(np.float32(lo)), float(np.float32(hi))
    if not (lo < hi) or not (math.isfinite(lo) and math.isfinite(hi)):
        raise ImageError(f"range {lo:g},{hi:g}: need finite lo < hi")
    if fit not in ("stretch", "letterbox"):
        raise ImageError(f"fit {fit!r}: must be stretch or letterbox")
    if not (isinstance(border, (int, np.integer)) and 0 <= border <= 255):
        raise ImageError(f"border {border!r}: wants a pixel value from 0 to 255")
    at = _placement(r, height, width, fit)
    px = resize(img, at.width, at.height, r)
    lut = _lut(lo, hi)
    out = np.empty((height, width, 3), np.float32)
    if fit == "letterbox":
        out[:] = lut[border] if border else lut[0]
    out[at.top:at.bottom, at.left:at.right] = lut[px]
    return out, at


def code_pixels(pixels: np.ndarray, dtype, value_range: Optional[Tuple[float, float]] = None,
                scale: Optional[float] = None, zero_point: int = 0) -> np.ndarray:
    """Codes of an integer image input (numpy `dtype` uint8 or int8) from pixel values 0..255 (any
    numeric array): without value_range q = pixel (+ -128 for int8); with it real = float32(pixel) *
    float32((hi - lo) / 255) + lo, then q = round(real / scale) + zero_point (round(real) without a
    scale), halves away from zero, saturated. arenactl's ar_image_code_pixels."""
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.uint8), np.dtype(np.int8)):
        raise ImageError(f"image codes are uint8 or int8, not {dtype}")
    qmin, qmax = (-128, 127) if dtype == np.int8 else (0, 255)
    px = np.asarray(pixels).astype(np.int64)
    if value_range is None:
        q = px + qmin
    else:
        lo, hi = np.float32(value_range[0]), np.float32(value_range[1])
        step = np.float32((float(hi) - float(lo)) / 255.0)
        real = (px.astype(np.float32) * step + lo).astype(np.float32)
        v = real.astype(np.float64)
        if scale is not None:
            v = v / float(np.float32(scale))
        v = np.clip(v, -1e9, 1e9)
        t = np.trunc(v)
        q = (t + np.where(np.abs(v - t) >= 0.5, np.sign(v), 0.0)).astype(np.int64)
        if scale is not None:
            q = q + int(zero_point)
    return np.clip(q, qmin, qmax).astype(dtype)


def image_input(image, tensor, fit: str = "letterbox", value_range: Optional[Tuple[float, float]] = None,
                crop: Optional[Rect] = None, border: int = 0) -> Tuple[np.ndarray, Geometry]:
    """The input tensor for model input `tensor` (a TensorInfo: shape [1, H, W, 3] or [1, H, W, 1],
    dtype float32, uint8 or int8) from `image` (a path, or uint8 [H, W, 3] pixels), as `arenactl
    invoke NAME --image FILE [--fit F] [--range LO,HI] [--crop L,T,R,B] [--border P]` makes it:
    float inputs take values in value_range (default (0, 1)); integer inputs are coded by
    code_pixels with the input's per-tensor scale and zero point. Returns (array [1, H, W, C] in the
    input's dtype, Geometry). Raises ImageError on an input that is not an image input, or on what
    load and fill refuse."""
    shape = tuple(int(d) for d in tensor.shape)
    dtype = np.dtype(tensor.dtype)
    if (len(shape) != 4 or shape[0] != 1 or shape[3] not in (1, 3) or not 1 <= shape[1] <= MAX_SIDE
            or not 1 <= shape[2] <= MAX_SIDE or dtype not in (np.dtype(np.float32), np.dtype(np.uint8), np.dtype(np.int8))):
        raise ImageError(f"an image needs an input of shape [1,H,W,3] or [1,H,W,1] and dtype float32, uint8 or "
                         f"int8 (input '{tensor.name}' is {dtype} {list(shape)})")
    img = load(image) if isinstance(image, (str, bytes)) or hasattr(image, "__fspath__") else np.asarray(image)
    h, w, c = shape[1], shape[2], shape[3]
    if c == 1:
        img = to_gray(img)
    is_float = dtype == np.float32
    lo, hi = (value_range if is_float and value_range is not None else (0.0, 1.0 if is_float else 255.0))
    vals, placed = fill(img, h, w, fit, lo, hi, crop, border if fit == "letterbox" else 0)
    if c == 1:
        vals = vals[:, :, :1]
    geom = Geometry(img.shape[1], img.shape[0], crop or Rect(0, 0, img.shape[1], img.shape[0]), placed, w, h)
    if is_float:
        return np.ascontiguousarray(vals[None]), geom
    q = getattr(tensor, "quantization", None)
    scale = zp = None
    if q is not None and np.size(q.scale) >= 1:
        scale, zp = float(np.asarray(q.scale).reshape(-1)[0]), int(np.asarray(q.zero_point).reshape(-1)[0])
    codes = code_pixels(vals, dtype, value_range, scale, zp if zp is not None else 0)
    return np.ascontiguousarray(codes[None]), geom
