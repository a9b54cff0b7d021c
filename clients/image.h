/* image.h - photographs to model input tensors: decode PNG (libpng) or JPEG (libjpeg), resize, and
 * scale pixel values into a float32 NHWC tensor [1,H,W,3] (RGB), so a user can feed a camera frame
 * to `arenactl invoke NAME --image FILE` without writing tensors by hand.
 *
 * Resampling is Pillow's Image.resize(BILINEAR) (Pillow 9.4 libImaging/Resample.c semantics,
 * reimplemented): a separable triangle filter whose support widens by the shrink factor (so a
 * 512 -> 128 reduction averages 4x4 neighbourhoods instead of aliasing), horizontal pass then
 * vertical pass, each rounded to 8 bits with 22-bit fixed-point weights. It reproduces the goldens'
 * photo inputs (made with Pillow 9.4) byte for byte. Upscaling is plain bilinear with pixel centres
 * at +0.5.
 *
 * Value scaling: value = float32(pixel) * float32((hi - lo) / 255) + float32(lo), so 0 -> lo and
 * 255 -> hi; MediaPipe's models take [0,1] (pixel/255) or [-1,1] (pixel/127.5 - 1).
 *
 * Fit (MediaPipe ImageToTensorCalculator terms):
 *   stretch    the (cropped) image is resized to W x H, aspect ratio not kept.
 *   letterbox  scaled by min(W/w, H/h), keeping the aspect ratio, centred; the border is black
 *              (pixel value 0, i.e. `lo` after scaling: 0 for [0,1], -1 for [-1,1]).
 */
#ifndef AR_IMAGE_H
#define AR_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest image accepted, in pixels (guards allocations against hostile headers). */
#define AR_IMAGE_MAX_PIXELS (256u * 1024u * 1024u)

typedef enum ar_image_fit {
  AR_IMAGE_FIT_STRETCH = 0,
  AR_IMAGE_FIT_LETTERBOX = 1,
} ar_image_fit_t;

/* A decoded image: 8-bit RGB, row-major, `rgb[(y * width + x) * 3 + c]`. Owns `rgb`. */
typedef struct ar_image {
  uint32_t width, height;
  uint8_t *rgb;
} ar_image_t;

/* A rectangle in pixels: [left, right) x [top, bottom). */
typedef struct ar_image_rect {
  uint32_t left, top, right, bottom;
} ar_image_rect_t;

/* Decode the PNG or JPEG file at `path` (told apart by their signatures) into *img, RGB8: gray and
 * palette images are expanded, alpha is dropped (not composited), 16-bit samples reduced to 8.
 * Errors: AR_ENOENT/AR_EIO (file), AR_EINVAL (neither PNG nor JPEG, corrupt data, CMYK JPEG, or
 * larger than AR_IMAGE_MAX_PIXELS), AR_ENOMEM; msg names the file and the problem. On failure *img
 * is left empty. */
int ar_image_load(const char *path, ar_image_t *img, char *msg, size_t msg_bytes);

/* Free the pixels of *img (safe on an empty or failed image). */
void ar_image_free(ar_image_t *img);

/* Fill `out` (h * w * 3 floats, NHWC with N = 1) from the part `crop` of `img` (NULL: the whole
 * image), resized by `fit` and scaled to [lo, hi] as described above. `placed` (may be NULL)
 * receives where the image content lies inside the h x w tensor (the whole tensor for stretch).
 * Errors: AR_EINVAL (empty crop or one outside the image, h or w of 0 or above 16384, lo == hi),
 * AR_ENOMEM. */
int ar_image_fill_tensor(const ar_image_t *img, const ar_image_rect_t *crop, uint32_t h, uint32_t w,
                         ar_image_fit_t fit, float lo, float hi, float *out, ar_image_rect_t *placed,
                         char *msg, size_t msg_bytes);

/* Decode `path` and fill `out` ([1,h,w,3] float32) in one step: ar_image_load + ar_image_fill_tensor
 * on the whole image. Same errors. */
int ar_image_to_tensor(const char *path, int h, int w, ar_image_fit_t fit, float lo, float hi,
                       float *out, char *msg, size_t msg_bytes);

/* Resize an RGB8 image region to dw x dh RGB8 with Pillow's BILINEAR filter (as above). `dst` holds
 * dw * dh * 3 bytes. Errors: AR_EINVAL (bad sizes/crop), AR_ENOMEM. Exposed for the tests. */
int ar_image_resize_rgb8(const ar_image_t *img, const ar_image_rect_t *crop, uint32_t dw, uint32_t dh,
                         uint8_t *dst);

/* Turn img into gray in place, every pixel (L, L, L) with Pillow's convert("L") luma (ITU-R 601-2):
 * L = (R * 19595 + G * 38470 + B * 7471 + 0x8000) >> 16. Resizing the result and taking one
 * channel gives Pillow's resize of the "L" image (its channels are resampled independently). */
void ar_image_to_gray(ar_image_t *img);

/* How pixels become the codes of a uint8 or int8 image input (arenactl invoke/run --image).
 * Without a range (has_range false) the codes are the pixels: q = pixel (uint8) or pixel - 128
 * (int8), i.e. the input's whole integer range stands for the pixel range 0..255. That is the
 * coding every quantized image model here expects - whatever its scale and zero point
 * (1/255 and 0 for [0,1], 1/127.5 and 127 or 1/128 and 128 for [-1,1], int8 zero point -128) -
 * and it is how the goldens' inputs were made (golden_q/NOTES.md). With a range, each pixel is
 * first scaled to a real value as for float inputs, real = float32(pixel) * float32((hi - lo) /
 * 255) + lo, then quantized with the input's parameters, q = round(real / scale) + zero_point
 * (halves away from zero, as TFLite's QUANTIZE) - or q = round(real) when the input has none -
 * and saturated to the type's range. */
typedef struct ar_image_coding {
  bool is_signed;        /* int8 codes (else uint8) */
  bool has_range;
  float lo, hi;          /* the range, when has_range */
  bool has_quant;        /* the input's per-tensor quantization */
  float scale;
  int64_t zero_point;
} ar_image_coding_t;

/* Code n pixel values (floats holding 0..255, as ar_image_fill_tensor writes them with lo 0 and
 * hi 255) into n bytes at `out` as described above. */
void ar_image_code_pixels(const float *pixels, size_t n, const ar_image_coding_t *c, void *out);

/* Command-line values: "stretch" | "letterbox"; "0,1" | "-1,1" (any "LO,HI" with LO < HI);
 * "L,T,R,B" pixel crop. Return 0, or AR_EINVAL for anything else. */
int ar_image_parse_fit(const char *s, ar_image_fit_t *fit);
int ar_image_parse_range(const char *s, float *lo, float *hi);
int ar_image_parse_rect(const char *s, ar_image_rect_t *rect);

#endif /* AR_IMAGE_H */
