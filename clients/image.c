/* image.c - decode PNG/JPEG photographs and turn them into float32 NHWC model inputs (see image.h).
 *
 * Decoding uses libpng's classic API (no gamma or colour management: pixel values are taken as
 * stored, as Pillow and MediaPipe do) and libjpeg (libjpeg-turbo on Debian). The resampler follows
 * Pillow 9.4's Resample.c for the BILINEAR filter so that `--image` gives the same tensors as the
 * Pillow-made goldens; the code is our own.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

#include "clients/image.h"
#include "common/ar_error.h"

#define AR_IMAGE_MAX_SIDE 16384u

void ar_image_free(ar_image_t *img) {
  if (img == NULL) return;
  free(img->rgb);
  img->rgb = NULL;
  img->width = img->height = 0;
}

static int alloc_rgb(ar_image_t *img, uint32_t w, uint32_t h, const char *path, char *msg, size_t n) {
  if (w == 0 || h == 0) return ar_errf(msg, n, AR_EINVAL, "%s: image has no pixels (%ux%u)", path, w, h);
  if ((uint64_t)w * h > AR_IMAGE_MAX_PIXELS)
    return ar_errf(msg, n, AR_EINVAL, "%s: %ux%u pixels is more than the %u accepted", path, w, h,
                   AR_IMAGE_MAX_PIXELS);
  img->rgb = malloc((size_t)w * h * 3);
  if (img->rgb == NULL) return ar_errf(msg, n, AR_ENOMEM, "%s: no memory for %ux%u pixels", path, w, h);
  img->width = w;
  img->height = h;
  return 0;
}

/* ---- PNG ---- */

typedef struct {
  char text[200];
} png_err_t;

static void png_error_cb(png_structp png, png_const_charp text) {
  png_err_t *e = png_get_error_ptr(png);
  snprintf(e->text, sizeof(e->text), "%s", text);
  png_longjmp(png, 1);
}

static void png_warning_cb(png_structp png, png_const_charp text) {
  (void)png;
  (void)text; /* benign (e.g. unknown chunks): decoding goes on */
}

static int load_png(FILE *f, const char *path, ar_image_t *img, char *msg, size_t n) {
  png_err_t err = {{0}};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &err, png_error_cb, png_warning_cb);
  if (png == NULL) return ar_errf(msg, n, AR_ENOMEM, "%s: libpng could not start", path);
  png_infop info = png_create_info_struct(png);
  /* volatile: modified between setjmp and a possible longjmp. */
  png_bytep *volatile rows = NULL;
  if (info == NULL || setjmp(png_jmpbuf(png))) {
    free(rows);
    ar_image_free(img);
    png_destroy_read_struct(&png, info ? &info : NULL, NULL);
    return ar_errf(msg, n, AR_EINVAL, "%s: bad PNG: %s", path, err.text[0] ? err.text : "out of memory");
  }
  png_init_io(png, f);
  png_read_info(png, info);
  png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  int color = png_get_color_type(png, info);
  /* Everything to 8-bit RGB: expand palette/low-bit gray, drop 16 -> 8 (high byte), gray -> RGB,
   * strip alpha (dropped, not composited, as Pillow's convert("RGB") does). */
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != (size_t)w * 3) png_error(png, "unexpected row layout after conversion");
  int rc = alloc_rgb(img, w, h, path, msg, n);
  if (rc != 0) {
    png_destroy_read_struct(&png, &info, NULL);
    return rc;
  }
  rows = malloc(sizeof(png_bytep) * h);
  if (rows == NULL) png_error(png, "out of memory");
  for (png_uint_32 y = 0; y < h; y++) rows[y] = img->rgb + (size_t)y * w * 3;
  png_read_image(png, rows);
  png_read_end(png, NULL);
  free(rows);
  png_destroy_read_struct(&png, &info, NULL);
  return 0;
}

/* ---- JPEG ---- */

typedef struct {
  struct jpeg_error_mgr base;
  jmp_buf jump;
} jpeg_err_t;

static void jpeg_error_exit_cb(j_common_ptr cinfo) {
  jpeg_err_t *e = (jpeg_err_t *)cinfo->err;
  longjmp(e->jump, 1);
}

static void jpeg_output_message_cb(j_common_ptr cinfo) { (void)cinfo; /* no stderr chatter */ }

static int load_jpeg(FILE *f, const char *path, ar_image_t *img, char *msg, size_t n) {
  struct jpeg_decompress_struct cinfo;
  jpeg_err_t err;
  cinfo.err = jpeg_std_error(&err.base);
  err.base.error_exit = jpeg_error_exit_cb;
  err.base.output_message = jpeg_output_message_cb;
  if (setjmp(err.jump)) {
    char text[JMSG_LENGTH_MAX];
    err.base.format_message((j_common_ptr)&cinfo, text);
    jpeg_destroy_decompress(&cinfo);
    ar_image_free(img);
    return ar_errf(msg, n, AR_EINVAL, "%s: bad JPEG: %s", path, text);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_stdio_src(&cinfo, f);
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return ar_errf(msg, n, AR_EINVAL, "%s: CMYK JPEG is not supported (convert it to RGB)", path);
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_components != 3) {
    jpeg_destroy_decompress(&cinfo);
    return ar_errf(msg, n, AR_EINVAL, "%s: JPEG decodes to %d components, not RGB", path,
                   cinfo.output_components);
  }
  int rc = alloc_rgb(img, cinfo.output_width, cinfo.output_height, path, msg, n);
  if (rc != 0) {
    jpeg_destroy_decompress(&cinfo);
    return rc;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = img->rgb + (size_t)cinfo.output_scanline * img->width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return 0;
}

int ar_image_load(const char *path, ar_image_t *img, char *msg, size_t msg_bytes) {
  memset(img, 0, sizeof(*img));
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    int e = errno;
    return ar_errf(msg, msg_bytes, e == ENOENT ? AR_ENOENT : AR_EIO, "%s: %s", path, strerror(e));
  }
  unsigned char sig[8] = {0};
  size_t got = fread(sig, 1, sizeof(sig), f);
  rewind(f);
  int rc;
  if (got == 8 && png_sig_cmp(sig, 0, 8) == 0)
    rc = load_png(f, path, img, msg, msg_bytes);
  else if (got >= 3 && sig[0] == 0xFF && sig[1] == 0xD8 && sig[2] == 0xFF)
    rc = load_jpeg(f, path, img, msg, msg_bytes);
  else
    rc = ar_errf(msg, msg_bytes, AR_EINVAL, "%s: not a PNG or JPEG file", path);
  fclose(f);
  return rc;
}

/* ---- Resampling (Pillow BILINEAR) ---- */

#define PRECISION_BITS (32 - 8 - 2)

/* Per output index: the first input index, the tap count, and `ksize` fixed-point weights. */
typedef struct {
  int ksize;
  int *bounds;   /* [out][2] = first, count */
  int32_t *kk;   /* [out][ksize] */
} coeffs_t;

static double triangle(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

/* Weights to resample input [in0, in1) of an axis to out_size pixels. Taps never leave [in0, in1):
 * a crop behaves as if the cropped pixels were a new image (Pillow's crop() then resize()). */
static int precompute(int in0, int in1, int out_size, coeffs_t *c) {
  double scale = (double)(in1 - in0) / out_size;
  double filterscale = scale < 1.0 ? 1.0 : scale;
  double support = 1.0 * filterscale; /* triangle support 1, widened when shrinking */
  int ksize = (int)ceil(support) * 2 + 1;
  c->ksize = ksize;
  c->bounds = malloc(sizeof(int) * 2 * (size_t)out_size);
  c->kk = malloc(sizeof(int32_t) * (size_t)ksize * (size_t)out_size);
  double *k = malloc(sizeof(double) * (size_t)ksize);
  if (c->bounds == NULL || c->kk == NULL || k == NULL) {
    free(k);
    return AR_ENOMEM;
  }
  for (int xx = 0; xx < out_size; xx++) {
    /* Coordinates relative to the crop, as Pillow sees the cropped image. */
    double center = (xx + 0.5) * scale;
    double ss = 1.0 / filterscale, ww = 0.0;
    int xmin = (int)(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = (int)(center + support + 0.5);
    if (xmax > in1 - in0) xmax = in1 - in0;
    xmax -= xmin;
    int x;
    for (x = 0; x < xmax; x++) {
      k[x] = triangle((x + xmin - center + 0.5) * ss);
      ww += k[x];
    }
    for (x = 0; x < xmax; x++)
      if (ww != 0.0) k[x] /= ww;
    for (; x < ksize; x++) k[x] = 0.0;
    for (x = 0; x < ksize; x++) {
      double v = k[x] * (1 << PRECISION_BITS);
      c->kk[(size_t)xx * ksize + x] = (int32_t)(v < 0 ? -0.5 + v : 0.5 + v);
    }
    c->bounds[xx * 2] = xmin + in0;
    c->bounds[xx * 2 + 1] = xmax;
  }
  free(k);
  return 0;
}

static void coeffs_free(coeffs_t *c) {
  free(c->bounds);
  free(c->kk);
}

static uint8_t clip8(int32_t v) {
  v >>= PRECISION_BITS;
  return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v;
}

int ar_image_resize_rgb8(const ar_image_t *img, const ar_image_rect_t *crop, uint32_t dw, uint32_t dh,
                         uint8_t *dst) {
  ar_image_rect_t r = crop ? *crop : (ar_image_rect_t){0, 0, img->width, img->height};
  if (img->rgb == NULL || r.left >= r.right || r.top >= r.bottom || r.right > img->width ||
      r.bottom > img->height || dw == 0 || dh == 0 || dw > AR_IMAGE_MAX_SIDE || dh > AR_IMAGE_MAX_SIDE)
    return AR_EINVAL;
  const int iw = (int)img->width;
  coeffs_t ch = {0}, cv = {0};
  uint8_t *tmp = NULL;
  int rc = precompute((int)r.left, (int)r.right, (int)dw, &ch);
  if (rc == 0) rc = precompute((int)r.top, (int)r.bottom, (int)dh, &cv);
  if (rc != 0) goto out;
  /* Horizontal pass over the rows the vertical pass will read, into tmp (dw x rows, RGB8). */
  int y_first = cv.bounds[0];
  int y_last = cv.bounds[(dh - 1) * 2] + cv.bounds[(dh - 1) * 2 + 1];
  int rows = y_last - y_first;
  tmp = malloc((size_t)dw * (size_t)rows * 3);
  if (tmp == NULL) {
    rc = AR_ENOMEM;
    goto out;
  }
  for (int y = 0; y < rows; y++) {
    const uint8_t *src = img->rgb + (size_t)(y + y_first) * iw * 3;
    uint8_t *o = tmp + (size_t)y * dw * 3;
    for (uint32_t xx = 0; xx < dw; xx++) {
      int xmin = ch.bounds[xx * 2], xn = ch.bounds[xx * 2 + 1];
      const int32_t *k = ch.kk + (size_t)xx * ch.ksize;
      int32_t s0 = 1 << (PRECISION_BITS - 1), s1 = s0, s2 = s0;
      for (int x = 0; x < xn; x++) {
        const uint8_t *p = src + (size_t)(x + xmin) * 3;
        s0 += p[0] * k[x];
        s1 += p[1] * k[x];
        s2 += p[2] * k[x];
      }
      o[xx * 3] = clip8(s0);
      o[xx * 3 + 1] = clip8(s1);
      o[xx * 3 + 2] = clip8(s2);
    }
  }
  /* Vertical pass from tmp into dst. */
  for (uint32_t yy = 0; yy < dh; yy++) {
    int ymin = cv.bounds[yy * 2] - y_first, yn = cv.bounds[yy * 2 + 1];
    const int32_t *k = cv.kk + (size_t)yy * cv.ksize;
    for (uint32_t xx = 0; xx < dw; xx++) {
      int32_t s0 = 1 << (PRECISION_BITS - 1), s1 = s0, s2 = s0;
      for (int y = 0; y < yn; y++) {
        const uint8_t *p = tmp + ((size_t)(y + ymin) * dw + xx) * 3;
        s0 += p[0] * k[y];
        s1 += p[1] * k[y];
        s2 += p[2] * k[y];
      }
      uint8_t *o = dst + ((size_t)yy * dw + xx) * 3;
      o[0] = clip8(s0);
      o[1] = clip8(s1);
      o[2] = clip8(s2);
    }
  }
out:
  free(tmp);
  coeffs_free(&ch);
  coeffs_free(&cv);
  return rc;
}

int ar_image_fill_tensor(const ar_image_t *img, const ar_image_rect_t *crop, uint32_t h, uint32_t w,
                         ar_image_fit_t fit, float lo, float hi, float *out, ar_image_rect_t *placed,
                         char *msg, size_t msg_bytes) {
  ar_image_rect_t r = crop ? *crop : (ar_image_rect_t){0, 0, img->width, img->height};
  if (h == 0 || w == 0 || h > AR_IMAGE_MAX_SIDE || w > AR_IMAGE_MAX_SIDE)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "tensor size %ux%u: must be 1..%u per side", w, h,
                   AR_IMAGE_MAX_SIDE);
  if (r.left >= r.right || r.top >= r.bottom || r.right > img->width || r.bottom > img->height)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "crop %u,%u,%u,%u: not a non-empty rectangle inside the %ux%u image",
                   r.left, r.top, r.right, r.bottom, img->width, img->height);
  if (!(lo < hi) || !isfinite(lo) || !isfinite(hi))
    return ar_errf(msg, msg_bytes, AR_EINVAL, "range %g,%g: need finite lo < hi", lo, hi);
  if (fit != AR_IMAGE_FIT_STRETCH && fit != AR_IMAGE_FIT_LETTERBOX)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "fit %d: must be stretch or letterbox", (int)fit);

  uint32_t cw = r.right - r.left, chh = r.bottom - r.top;
  ar_image_rect_t at = {0, 0, w, h};
  if (fit == AR_IMAGE_FIT_LETTERBOX) {
    double s = fmin((double)w / cw, (double)h / chh);
    uint32_t pw = (uint32_t)lround(cw * s), ph = (uint32_t)lround(chh * s);
    if (pw < 1) pw = 1;
    if (ph < 1) ph = 1;
    if (pw > w) pw = w;
    if (ph > h) ph = h;
    at.left = (w - pw) / 2;
    at.top = (h - ph) / 2;
    at.right = at.left + pw;
    at.bottom = at.top + ph;
  }
  uint32_t pw = at.right - at.left, ph = at.bottom - at.top;
  uint8_t *px = malloc((size_t)pw * ph * 3);
  if (px == NULL) return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory for a %ux%u resize", pw, ph);
  int rc = ar_image_resize_rgb8(img, &r, pw, ph, px);
  if (rc != 0) {
    free(px);
    return ar_errf(msg, msg_bytes, rc, "resize to %ux%u failed", pw, ph);
  }
  /* float32 arithmetic in two steps, as the goldens were made: pixel * scale + lo. */
  const float scale = (float)(((double)hi - (double)lo) / 255.0);
  float lut[256];
  for (int v = 0; v < 256; v++) {
    volatile float prod = (float)v * scale; /* no fused multiply-add: keep the rounding of the goldens */
    lut[v] = prod + lo;
  }
  for (uint32_t y = 0; y < h; y++)
    for (uint32_t x = 0; x < w; x++) {
      float *o = out + ((size_t)y * w + x) * 3;
      if (y < at.top || y >= at.bottom || x < at.left || x >= at.right) {
        o[0] = o[1] = o[2] = lut[0]; /* black border */
      } else {
        const uint8_t *p = px + ((size_t)(y - at.top) * pw + (x - at.left)) * 3;
        o[0] = lut[p[0]];
        o[1] = lut[p[1]];
        o[2] = lut[p[2]];
      }
    }
  free(px);
  if (placed) *placed = at;
  return 0;
}

int ar_image_to_tensor(const char *path, int h, int w, ar_image_fit_t fit, float lo, float hi,
                       float *out, char *msg, size_t msg_bytes) {
  if (h <= 0 || w <= 0) return ar_errf(msg, msg_bytes, AR_EINVAL, "tensor size %dx%d: must be positive", w, h);
  ar_image_t img;
  int rc = ar_image_load(path, &img, msg, msg_bytes);
  if (rc != 0) return rc;
  rc = ar_image_fill_tensor(&img, NULL, (uint32_t)h, (uint32_t)w, fit, lo, hi, out, NULL, msg, msg_bytes);
  ar_image_free(&img);
  return rc;
}

int ar_image_parse_fit(const char *s, ar_image_fit_t *fit) {
  if (strcmp(s, "stretch") == 0) {
    *fit = AR_IMAGE_FIT_STRETCH;
    return 0;
  }
  if (strcmp(s, "letterbox") == 0) {
    *fit = AR_IMAGE_FIT_LETTERBOX;
    return 0;
  }
  return AR_EINVAL;
}

int ar_image_parse_range(const char *s, float *lo, float *hi) {
  char *end;
  errno = 0;
  double a = strtod(s, &end);
  if (end == s || *end != ',') return AR_EINVAL;
  const char *t = end + 1;
  double b = strtod(t, &end);
  if (end == t || *end != '\0' || errno != 0 || !isfinite(a) || !isfinite(b) || !(a < b)) return AR_EINVAL;
  *lo = (float)a;
  *hi = (float)b;
  return 0;
}

int ar_image_parse_rect(const char *s, ar_image_rect_t *rect) {
  unsigned long v[4];
  const char *p = s;
  for (int i = 0; i < 4; i++) {
    char *end;
    if (*p < '0' || *p > '9') return AR_EINVAL;
    errno = 0;
    v[i] = strtoul(p, &end, 10);
    if (errno != 0 || v[i] > AR_IMAGE_MAX_PIXELS) return AR_EINVAL;
    if (i < 3 && *end != ',') return AR_EINVAL;
    if (i == 3 && *end != '\0') return AR_EINVAL;
    p = end + 1;
  }
  if (v[0] >= v[2] || v[1] >= v[3]) return AR_EINVAL;
  *rect = (ar_image_rect_t){(uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2], (uint32_t)v[3]};
  return 0;
}

void ar_image_code_pixels(const float *pixels, size_t n, const ar_image_coding_t *c, void *out) {
  const int32_t qmin = c->is_signed ? -128 : 0, qmax = c->is_signed ? 127 : 255;
  const float step = c->has_range ? (float)(((double)c->hi - (double)c->lo) / 255.0) : 0.0f;
  uint8_t *o = out;
  for (size_t i = 0; i < n; i++) {
    const int32_t px = (int32_t)pixels[i];
    int64_t q;
    if (!c->has_range) {
      q = px + qmin;
    } else {
      volatile float prod = (float)px * step; /* the float inputs' rounding, no fused multiply-add */
      const float real = prod + c->lo;
      double v = c->has_quant ? (double)real / (double)c->scale : (double)real;
      v = v < -1e9 ? -1e9 : v > 1e9 ? 1e9 : v;   /* saturates below anyway; keeps the cast defined */
      q = (int64_t)round(v) + (c->has_quant ? c->zero_point : 0);
    }
    q = q < qmin ? qmin : q > qmax ? qmax : q;
    o[i] = c->is_signed ? (uint8_t)(int8_t)q : (uint8_t)q;
  }
}

void ar_image_to_gray(ar_image_t *img) {
  const size_t n = (size_t)img->width * img->height;
  for (size_t i = 0; i < n; i++) {
    uint8_t *p = img->rgb + 3 * i;
    const uint32_t l = ((uint32_t)p[0] * 19595u + (uint32_t)p[1] * 38470u + (uint32_t)p[2] * 7471u + 0x8000u) >> 16;
    p[0] = p[1] = p[2] = (uint8_t)l;
  }
}
