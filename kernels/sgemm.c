/* sgemm.c - the one dispatch point of arenad's own float GEMM (kernels/sgemm.h): AVX-512F
 * (sgemm512.c) when the level in force has it, else AVX2 + FMA + F16C (sgemm256.c); on aarch64
 * Advanced SIMD (gemm_f32_8x8_neon.c). */
#include "kernels/sgemm.h"

#include "kernels/gemm_f32_neon.h"

#include "kernels/sgemm256.h"
#include "kernels/sgemm512.h"

bool ar_sgemm_own_available(void) {
#if defined(__aarch64__)
  return ar_sgemm_neon_available();
#else
  return ar_sgemm512_available() || ar_sgemm256_available();
#endif
}

void ar_sgemm_nt(const float *a, int64_t lda, const float *b, int64_t ldb, const float *bias,
                 float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, ar_activation_t act) {
#if defined(__aarch64__)
  ar_sgemm_neon_nt(a, lda, b, ldb, bias, c, ldc, m, n, k, act);
#else
  if (ar_sgemm512_available()) ar_sgemm512_nt(a, lda, b, ldb, bias, c, ldc, m, n, k, act);
  else ar_sgemm256_nt(a, lda, b, ldb, bias, c, ldc, m, n, k, act);
#endif
}

void ar_sgemm_nt_f16(const float *a, int64_t lda, const uint16_t *b, int64_t ldb, const float *bias,
                     float *c, int64_t ldc, int64_t m, int64_t n, int64_t k, ar_activation_t act) {
#if defined(__aarch64__)
  ar_sgemm_neon_nt_f16(a, lda, b, ldb, bias, c, ldc, m, n, k, act);
#else
  if (ar_sgemm512_available()) ar_sgemm512_nt_f16(a, lda, b, ldb, bias, c, ldc, m, n, k, act);
  else ar_sgemm256_nt_f16(a, lda, b, ldb, bias, c, ldc, m, n, k, act);
#endif
}

void ar_sgemv_nt(const float *x, const float *b, const uint16_t *b16, int64_t ldb, const float *bias,
                 float *y, int64_t n, int64_t k, ar_activation_t act) {
#if defined(__aarch64__)
  ar_sgemv_neon_nt(x, b, b16, ldb, bias, y, n, k, act);
#else
  if (ar_sgemm512_available()) ar_sgemv512_nt(x, b, b16, ldb, bias, y, n, k, act);
  else ar_sgemv256_nt(x, b, b16, ldb, bias, y, n, k, act);
#endif
}
