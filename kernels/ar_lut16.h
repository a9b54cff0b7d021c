/* ar_lut16.h - TFLite's 513-entry int16 lookup tables (common.h LUTPopulate<int16_t> / LUTLookup),
 * made at init for the int16 kernels that read a function through them: SOFTMAX (exp, 1 / (1 + x);
 * made in double, kernels/softmax.c) and EXP, LOG, RSQRT (made in float32, kernels/qact.c).
 *
 * A table covers the whole int16 input range [-32768, 32767] (dequantized with the input's scale
 * and zero point) in 512 steps: entry i is round(f(x_i) * inv) minus half the rounded error that
 * linear interpolation between x_i and x_{i+1} makes at the midpoint (so interpolated values sit
 * on both sides of f), inv = 65536 / (the output's dequantized range), clamped to int16; entry 512
 * is f at the top of the range. A lookup takes the top 9 bits of the code as the entry and
 * interpolates the low 7 bits towards the next, rounding half up. Both float types are TFLite's
 * choice per kernel and give different tables; every step is written in the stated type.
 */
#ifndef AR_LUT16_H
#define AR_LUT16_H

#include <math.h>
#include <stdint.h>

static inline int16_t ar_lut16_lookup(const int16_t *lut, int16_t v) {
  const int idx = 256 + (v >> 7), off = v & 0x7f;
  const int base = lut[idx], slope = lut[idx + 1] - lut[idx];
  return (int16_t)(base + ((slope * off + 64) >> 7));
}

static inline int16_t ar_lut16_clamp_d(double r) { return (int16_t)(r < -32768.0 ? -32768.0 : r > 32767.0 ? 32767.0 : r); }
static inline int16_t ar_lut16_clamp_f(float r) { return (int16_t)(r < -32768.0f ? -32768.0f : r > 32767.0f ? 32767.0f : r); }

/* The table of f in double: inputs in_scale * (q - in_zp), outputs on out_scale / out_zp. */
static inline void ar_lut16_fill_double(double (*f)(double), double in_scale, int32_t in_zp, double out_scale,
                                        int32_t out_zp, int16_t *lut) {
  const double in_min = in_scale * (double)(-32768 - in_zp), in_max = in_scale * (double)(32767 - in_zp);
  const double out_min = out_scale * (double)(-32768 - out_zp), out_max = out_scale * (double)(32767 - out_zp);
  const double step = (in_max - in_min) / 512, half_step = step / 2;
  const double inv = 65536.0 / (out_max - out_min);
  for (int i = 0; i < 512; i++) {
    const double v = f(in_min + i * step), vmid = f(in_min + i * step + half_step);
    const double vnext = f(in_min + (i + 1) * step);
    const double interp = round((vnext * inv + round(v * inv)) / 2);
    const double bias = round((interp - round(vmid * inv)) / 2);
    lut[i] = ar_lut16_clamp_d(round(v * inv) - bias);
  }
  lut[512] = ar_lut16_clamp_d(round(f(in_max) * inv));
}

/* The same in float32, f taking a parameter block. */
static inline void ar_lut16_fill_float(float (*f)(float, const void *), const void *p, float in_scale,
                                       int32_t in_zp, float out_scale, int32_t out_zp, int16_t *lut) {
  const float in_min = in_scale * (float)(-32768 - in_zp), in_max = in_scale * (float)(32767 - in_zp);
  const float out_min = out_scale * (float)(-32768 - out_zp), out_max = out_scale * (float)(32767 - out_zp);
  const float step = (in_max - in_min) / 512, half_step = step / 2;
  const float inv = 65536.0f / (out_max - out_min);
  for (int i = 0; i < 512; i++) {
    const float v = f(in_min + (float)i * step, p), vmid = f(in_min + (float)i * step + half_step, p);
    const float vnext = f(in_min + (float)(i + 1) * step, p);
    const float interp = roundf((vnext * inv + roundf(v * inv)) / 2);
    const float bias = roundf((interp - roundf(vmid * inv)) / 2);
    lut[i] = ar_lut16_clamp_f(roundf(v * inv) - bias);
  }
  lut[512] = ar_lut16_clamp_f(roundf(f(in_max, p) * inv));
}

#endif /* AR_LUT16_H */
