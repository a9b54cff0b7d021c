/* check_isa.c - kernels/ar_isa.h: OpenBLAS's core choice (the constructor that replaces an
 * SSE3-era core on a CPU with AVX2 / AVX-512, the user's OPENBLAS_CORETYPE kept), sgemm / sgemv
 * values on every core this CPU can run against a naive product, the float kernels' level switch,
 * the report arenactl --version prints, and arenad's own GEMM (kernels/sgemm.h: sgemm512 on
 * AVX-512F, sgemm256 on AVX2 + FMA + F16C; on aarch64 the NEON gemm_f32_8x8_neon.c) exact against
 * scalar fmaf loops in each kernel's order and between the two x86 ones, the NEON one also within
 * the float rule of OpenBLAS (the portable path). */
#include <check.h>
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ar_isa.h"
#include "kernels/gemm_f32_neon.h"
#include "kernels/sgemm.h"
#include "kernels/sgemm256.h"
#include "kernels/sgemm512.h"

static bool cpu_skylakex(void) {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}
static bool cpu_haswell(void) {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}
static bool blas_dynamic(void) { return dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init") != NULL; }

START_TEST(blas_core_follows_the_cpu) {
  const char *core = ar_blas_corename();
  printf("OpenBLAS core %s (replaced %s), OPENBLAS_CORETYPE %s\n", core,
         ar_blas_replaced_core() ? ar_blas_replaced_core() : "nothing",
         getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "unset");
  if (getenv("OPENBLAS_CORETYPE")) {   /* the user's choice is never replaced */
    ck_assert_ptr_null(ar_blas_replaced_core());
    return;
  }
  if (!blas_dynamic()) {
    ck_assert_ptr_null(ar_blas_replaced_core());
    return;
  }
  /* Whatever OpenBLAS picked, the core now running is not older than the CPU allows. */
  static const char *const old[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                    "Sandybridge", "Unknown"};
  if (cpu_haswell())
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
      ck_assert_msg(strcasecmp(core, old[i]) != 0, "core %s on an AVX2 CPU", core);
  if (cpu_skylakex())
    ck_assert_msg(strcasecmp(core, "Haswell") != 0 && strcasecmp(core, "Zen") != 0,
                  "core %s on an AVX-512 CPU", core);
  if (ar_blas_replaced_core()) ck_assert_str_ne(ar_blas_replaced_core(), core);
  /* The environment is left as the user gave it. */
  ck_assert_ptr_null(getenv("OPENBLAS_CORETYPE"));
}
END_TEST

/* C = A[m,k] * B[n,k]^T + C (row-major, beta 1: the kernels' call) against a double product. */
static void sgemm_vs_naive(const char *core) {
  enum { M = 37, N = 29, K = 41 };
  float a[M * K], b[N * K], c[M * N], x[K], y[N];
  unsigned s = 12345;
  for (int i = 0; i < M * K; i++) { s = s * 1103515245u + 12345u; a[i] = (float)((s >> 16) % 2001) / 1000.0f - 1.0f; }
  for (int i = 0; i < N * K; i++) { s = s * 1103515245u + 12345u; b[i] = (float)((s >> 16) % 2001) / 1000.0f - 1.0f; }
  for (int i = 0; i < M * N; i++) c[i] = 0.5f;
  for (int i = 0; i < K; i++) x[i] = a[i];
  for (int i = 0; i < N; i++) y[i] = -0.25f;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 1.0f, c, N);
  cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, 1.0f, b, K, x, 1, 1.0f, y, 1);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double want = 0.5;
      for (int k = 0; k < K; k++) want += (double)a[i * K + k] * b[j * K + k];
      ck_assert_msg(fabs(c[i * N + j] - want) < 1e-4, "core %s sgemm [%d,%d] %g want %g", core, i,
                    j, (double)c[i * N + j], want);
    }
  for (int j = 0; j < N; j++) {
    double want = -0.25;
    for (int k = 0; k < K; k++) want += (double)b[j * K + k] * x[k];
    ck_assert_msg(fabs(y[j] - want) < 1e-4, "core %s sgemv [%d] %g want %g", core, j, (double)y[j], want);
  }
}

START_TEST(sgemm_right_on_every_core) {
  char start[32];
  snprintf(start, sizeof start, "%s", ar_blas_corename());
  sgemm_vs_naive(start);
  if (!blas_dynamic()) return;
  const char *cores[] = {"Haswell", "SkylakeX"};
  const bool have[] = {cpu_haswell(), cpu_skylakex()};
  for (int i = 0; i < 2; i++) {
    if (!have[i]) continue;
    ck_assert_int_eq(ar__blas_set_core(cores[i]), 0);
    ck_assert_str_eq(ar_blas_corename(), cores[i]);
    sgemm_vs_naive(cores[i]);
  }
  const char *user = getenv("OPENBLAS_CORETYPE");
  char user_s[64] = "";
  if (user) snprintf(user_s, sizeof user_s, "%s", user);
  ck_assert_int_eq(ar__blas_set_core(start), 0);
  ck_assert_str_eq(ar_blas_corename(), start);
  /* The environment is as it was (set_core puts the user's value back). */
  if (user) ck_assert_str_eq(getenv("OPENBLAS_CORETYPE"), user_s);
  else ck_assert_ptr_null(getenv("OPENBLAS_CORETYPE"));
}
END_TEST

START_TEST(float_level_switch_and_report) {
  const int best = ar__f32_set_isa(-1);
  ck_assert_int_eq(ar_isa_float_level(), best);
  ck_assert_int_ge(best, AR_ISA_PORTABLE);
  ck_assert_int_le(best, AR_ISA_AVX512);
#if defined(__x86_64__)
  if (!getenv("AR_FLOAT_ISA"))
    ck_assert_int_eq(best, cpu_haswell() ? (__builtin_cpu_supports("avx512f") ? AR_ISA_AVX512 : AR_ISA_AVX2)
                                       : AR_ISA_PORTABLE);
#endif
  for (int l = AR_ISA_PORTABLE; l <= best; l++) {
    ck_assert_int_eq(ar__f32_set_isa(l), l);
    ck_assert_int_eq(ar_isa_float_level(), l);
  }
  if (best < AR_ISA_AVX512) {
    ck_assert_int_eq(ar__f32_set_isa(best + 1), -1);
    ck_assert_int_eq(ar_isa_float_level(), best);
  }
  ck_assert_int_eq(ar__f32_set_isa(-1), best);
  ck_assert_str_eq(ar_isa_name(AR_ISA_AVX512), "avx512f");
  char buf[1024], small[16];
  int n = ar_isa_report(buf, sizeof buf);
  ck_assert_int_eq(n, (int)strlen(buf));
  ck_assert_ptr_nonnull(strstr(buf, "float kernels"));
  ck_assert_ptr_nonnull(strstr(buf, ar_blas_corename()));
  ck_assert_int_eq(ar_isa_report(small, sizeof small), n);   /* truncated, length still told */
  ck_assert_uint_eq(strlen(small), sizeof small - 1);
}
END_TEST

/* The own GEMM's kernels (x86 and NEON alike) against a scalar loop in their documented order
 * (fmaf over k ascending from 0, then + bias, then the activation): bit-identical on odd shapes, K past one 256-chunk, N not a
 * multiple of 8, 16 or 32, ldc > N, every activation, no bias, K = 0, B as float32 and as float16
 * (the same values); any split of rows or columns into separate calls gives the same bits. */
static float ref_act(float acc, ar_activation_t act);
typedef float (*gemm_ref_fn)(const float *, const float *, const float *, int64_t, int64_t,
                             ar_activation_t);

static float gemm_ref(const float *a, const float *b, const float *bias, int64_t k, int64_t n_idx,
                      ar_activation_t act) {
  float acc = 0.0f;
  for (int64_t i = 0; i < k; i++) acc = fmaf(a[i], b[i], acc);
  if (bias) acc += bias[n_idx];
  return ref_act(acc, act);
}

static float ref_act(float acc, ar_activation_t act) {
  if (act == AR_ACT_RELU) acc = acc < 0 ? 0 : acc;
  else if (act == AR_ACT_RELU6) acc = acc < 0 ? 0 : acc > 6 ? 6 : acc;
  else if (act == AR_ACT_RELU_N1_TO_1) acc = acc < -1 ? -1 : acc > 1 ? 1 : acc;
  else if (act != AR_ACT_NONE) ar_apply_activation(&acc, 1, act);
  return acc;
}

typedef void (*gemm_fn)(const float *, int64_t, const float *, int64_t, const float *, float *,
                        int64_t, int64_t, int64_t, int64_t, ar_activation_t);
typedef void (*gemm16_fn)(const float *, int64_t, const uint16_t *, int64_t, const float *, float *,
                          int64_t, int64_t, int64_t, int64_t, ar_activation_t);
typedef void (*gemv_fn)(const float *, const float *, const uint16_t *, int64_t, const float *,
                        float *, int64_t, int64_t, ar_activation_t);

/* A finite float16 (|v| in [2^-5, 2^2)) from the generator state. */
static uint16_t rand_f16(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return (uint16_t)(((*s >> 31) << 15) | ((10u + (*s >> 8) % 7u) << 10) | ((*s >> 12) & 0x3ffu));
}

/* One M x N x K case of kernel `name` (f32 / f16 entry points): C exact against `ref`, the
 * gaps past N untouched, the fp16 B the same bits, three row bands x two column bands the same
 * bits. The result is left in `out` (m * ldc floats) when out is not NULL. */
static void gemm_case(const char *name, gemm_ref_fn ref, gemm_fn f32, gemm16_fn f16, int m, int n,
                      int k, int extra, ar_activation_t act, bool with_bias, unsigned seed,
                      float *out) {
  const int ldc = n + extra, lda = k + 1, ldb = k + 2;
  unsigned s = seed;
  float *a = malloc(sizeof(float) * (size_t)(m * lda + 1)), *b = malloc(sizeof(float) * (size_t)(n * ldb + 1));
  uint16_t *b16 = malloc(sizeof(uint16_t) * (size_t)(n * ldb + 1));
  float *bias = malloc(sizeof(float) * (size_t)n), *c = malloc(sizeof(float) * (size_t)m * ldc);
  float *c2 = malloc(sizeof(float) * (size_t)m * ldc), *c3 = malloc(sizeof(float) * (size_t)m * ldc);
  for (int i = 0; i < m * lda + 1; i++) { s = s * 1103515245u + 12345u; a[i] = (float)((s >> 9) % 20001) / 5000.0f - 2.0f; }
  for (int i = 0; i < n * ldb + 1; i++) { b16[i] = rand_f16(&s); b[i] = ar_fp16_to_fp32(b16[i]); }
  for (int i = 0; i < n; i++) bias[i] = 0.25f * (float)(i % 7) - 0.5f;
  const float *bp = with_bias ? bias : NULL;
  for (int i = 0; i < m * ldc; i++) c[i] = c2[i] = c3[i] = 1234.5f;   /* the gaps past N stay */
  f32(a, lda, b, ldb, bp, c, ldc, m, n, k, act);
  for (int i = 0; i < m; i++) {
    for (int j = 0; j < n; j++) {
      const float want = ref(a + i * lda, b + j * ldb, bp, k, j, act);
      ck_assert_msg(memcmp(&c[i * ldc + j], &want, sizeof want) == 0,
                    "%s %dx%dx%d act %d bias %d: C[%d,%d] = %.9g, want %.9g", name, m, n, k, act,
                    with_bias, i, j, (double)c[i * ldc + j], (double)want);
    }
    for (int j = n; j < ldc; j++) ck_assert_float_eq(c[i * ldc + j], 1234.5f);
  }
  f16(a, lda, b16, ldb, bp, c3, ldc, m, n, k, act);
  ck_assert_msg(memcmp(c, c3, sizeof(float) * (size_t)m * ldc) == 0, "%s %dx%dx%d: fp16 B differs",
                name, m, n, k);
  /* Three row bands x two column bands, as a thread pool would split it. */
  const int r1 = m / 3, r2 = 2 * m / 3, cc = n / 2;
  const int rb[4] = {0, r1, r2, m}, cb[3] = {0, cc, n};
  for (int ri = 0; ri < 3; ri++)
    for (int cj = 0; cj < 2; cj++)
      f32(a + rb[ri] * lda, lda, b + cb[cj] * ldb, ldb, bp ? bp + cb[cj] : NULL,
          c2 + rb[ri] * ldc + cb[cj], ldc, rb[ri + 1] - rb[ri], cb[cj + 1] - cb[cj], k, act);
  ck_assert_msg(memcmp(c, c2, sizeof(float) * (size_t)m * ldc) == 0, "%s %dx%dx%d: split differs",
                name, m, n, k);
  if (out) memcpy(out, c, sizeof(float) * (size_t)m * ldc);
  free(a); free(b); free(b16); free(bias); free(c); free(c2); free(c3);
}

static const ar_activation_t all_acts[] = {AR_ACT_NONE, AR_ACT_RELU, AR_ACT_RELU6,
                                           AR_ACT_RELU_N1_TO_1, AR_ACT_TANH, AR_ACT_SIGN_BIT};
enum { N_ACTS = sizeof all_acts / sizeof all_acts[0] };

static const struct { int m, n, k, extra; ar_activation_t act; bool bias; } gemm_cases[] = {
  {1, 1, 1, 0, AR_ACT_NONE, true},      {13, 17, 5, 3, AR_ACT_RELU6, true},
  {29, 33, 24, 0, AR_ACT_RELU, false},  {12, 32, 16, 1, AR_ACT_NONE, true},
  {37, 144, 23, 5, AR_ACT_RELU6, true}, {25, 40, 300, 0, AR_ACT_RELU_N1_TO_1, true},
  {17, 9, 513, 2, AR_ACT_TANH, true},   {4, 70, 0, 0, AR_ACT_RELU6, true},
  {250, 24, 40, 0, AR_ACT_NONE, true},  {5, 1152, 19, 7, AR_ACT_RELU, true},
  /* row tails shared with the last full tile (sgemm512: 7 + 7, 8 + 7 rows; sgemm256: 4 + 3) */
  {14, 50, 33, 0, AR_ACT_RELU6, true},  {51, 20, 7, 1, AR_ACT_NONE, false},
  {13, 16, 9, 0, AR_ACT_RELU, true},    {8, 8, 300, 0, AR_ACT_SIGN_BIT, true},
  /* B packed once for every row chunk (M > 240, K <= 160), several panels, the last partial */
  {500, 70, 37, 2, AR_ACT_RELU, true},  {481, 21, 160, 0, AR_ACT_RELU6, false},
};

START_TEST(sgemm512_exact_on_odd_shapes) {
  if (!ar_sgemm512_available()) {
    printf("check_isa: sgemm512_exact_on_odd_shapes skipped: no AVX-512F at the float level in force (%s)\n",
           ar_isa_name(ar_isa_float_level()));
    return;
  }
  for (size_t ci = 0; ci < sizeof gemm_cases / sizeof gemm_cases[0]; ci++)
    gemm_case("sgemm512", gemm_ref, ar_sgemm512_nt, ar_sgemm512_nt_f16, gemm_cases[ci].m, gemm_cases[ci].n,
              gemm_cases[ci].k, gemm_cases[ci].extra, gemm_cases[ci].act, gemm_cases[ci].bias,
              777u + (unsigned)ci, NULL);
}
END_TEST

/* sgemm256 on the listed cases and on a sweep: every M in 1..50, with K in 1..300 (below, at and
 * past 8, 16, KC = 256 and the packed-once limit 160) and N in 1..70 picked per case, the
 * activation and bias cycling, plus M = 241..300 (past MC, B packed once). Where the CPU also has
 * AVX-512F, sgemm512 gives the same bits on every case (the level raised for it). */
START_TEST(sgemm256_exact_on_odd_shapes) {
  if (!ar_sgemm256_available()) {
    printf("check_isa: sgemm256_exact_on_odd_shapes skipped: no AVX2+FMA+F16C at the float level in force (%s)\n",
           ar_isa_name(ar_isa_float_level()));
    return;
  }
  static const int ks[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 159, 160, 161, 255, 256, 257, 300};
  enum { NK = sizeof ks / sizeof ks[0] };
  const bool both = ar__f32_set_isa(AR_ISA_AVX512) == AR_ISA_AVX512;
  ar__f32_set_isa(AR_ISA_AVX2);
  ck_assert(ar_sgemm256_available() && !ar_sgemm512_available());
  ck_assert(ar_sgemm_own_available());
  int runs = 0;
  for (int pass = 0; pass < 3; pass++) {
    const int ncase = pass == 0 ? (int)(sizeof gemm_cases / sizeof gemm_cases[0]) : pass == 1 ? 50 * NK : 60;
    for (int ci = 0; ci < ncase; ci++) {
      int m, n, k, extra;
      ar_activation_t act;
      bool bias;
      if (pass == 0) {
        m = gemm_cases[ci].m; n = gemm_cases[ci].n; k = gemm_cases[ci].k; extra = gemm_cases[ci].extra;
        act = gemm_cases[ci].act; bias = gemm_cases[ci].bias;
      } else if (pass == 1) {
        m = 1 + ci / NK; k = ks[ci % NK]; n = 1 + (m * 13 + (ci % NK) * 29) % 70;
        extra = ci % 3; act = all_acts[ci % N_ACTS]; bias = ci % 4 != 1;
      } else {
        m = 241 + ci; k = ks[ci % 15]; n = 1 + (ci * 37) % 70; extra = ci % 2;
        act = all_acts[(ci + 1) % N_ACTS]; bias = ci % 3 != 0;
      }
      const size_t cn = (size_t)m * (size_t)(n + extra);
      float *c256 = malloc(sizeof(float) * cn), *c512 = malloc(sizeof(float) * cn);
      const unsigned seed = 1000u * (unsigned)pass + (unsigned)ci;
      gemm_case("sgemm256", gemm_ref, ar_sgemm256_nt, ar_sgemm256_nt_f16, m, n, k, extra, act, bias, seed, c256);
      /* The dispatch point takes the AVX2 kernel at this level: the same bits. */
      gemm_case("ar_sgemm_nt [avx2]", gemm_ref, ar_sgemm_nt, ar_sgemm_nt_f16, m, n, k, extra, act, bias, seed, NULL);
      if (both) {
        ar__f32_set_isa(AR_ISA_AVX512);
        gemm_case("sgemm512", gemm_ref, ar_sgemm512_nt, ar_sgemm512_nt_f16, m, n, k, extra, act, bias, seed, c512);
        ck_assert_msg(memcmp(c256, c512, sizeof(float) * cn) == 0, "%dx%dx%d: sgemm256 and sgemm512 differ",
                      m, n, k);
        ar__f32_set_isa(AR_ISA_AVX2);
      }
      free(c256); free(c512);
      runs++;
    }
  }
  ck_assert_int_gt(runs, 1000);
  /* At the portable level the own GEMM is not there (callers take OpenBLAS). */
  ck_assert_int_eq(ar__f32_set_isa(AR_ISA_PORTABLE), AR_ISA_PORTABLE);
  ck_assert(!ar_sgemm256_available() && !ar_sgemm_own_available());
  ar__f32_set_isa(-1);
}
END_TEST

/* The one-row product against a scalar loop in its documented order (16 lane sums over k, each
 * lane one fmaf per term in k order, the partial last block adding 0 x 0; the lanes added 8 + 8,
 * 4 + 4, 2 + 2, 1 + 1; then the bias; then the activation): bit-identical for float32 and float16
 * B (the same values), K below, at and past 8 and 16 with a tail, N not a multiple of 4, any
 * split of N. */
static float s512_gemv_ref(const float *x, const float *b, const float *bias, int64_t k, int64_t j,
                           ar_activation_t act) {
  float lane[16];
  for (int l = 0; l < 16; l++) {
    lane[l] = 0.0f;
    for (int64_t i = 0; i < (k + 15) / 16; i++) {
      const int64_t kk = i * 16 + l;
      lane[l] = kk < k ? fmaf(x[kk], b[kk], lane[l]) : fmaf(0.0f, 0.0f, lane[l]);
    }
  }
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; l++) lane[l] = lane[l] + lane[l + w];
  float acc = (bias ? bias[j] : 0.0f) + lane[0];
  ar_apply_activation(&acc, 1, act);
  return acc;
}

static const struct { int n, k; ar_activation_t act; bool bias; } gemv_cases[] = {
  {1, 1, AR_ACT_NONE, true},   {3, 15, AR_ACT_RELU, false},   {4, 16, AR_ACT_RELU6, true},
  {7, 17, AR_ACT_NONE, true},  {63, 1152, AR_ACT_NONE, true}, {9, 300, AR_ACT_TANH, true},
  {130, 33, AR_ACT_RELU_N1_TO_1, false}, {5, 8, AR_ACT_SIGN_BIT, true}, {6, 9, AR_ACT_RELU, true},
  {11, 24, AR_ACT_NONE, false}, {2, 0, AR_ACT_RELU6, true}, {70, 257, AR_ACT_RELU6, true},
};

/* Kernel `name` on every gemv case, the outputs concatenated into out (NULL: not kept). */
typedef float (*gemv_ref_fn)(const float *, const float *, const float *, int64_t, int64_t,
                             ar_activation_t);
static void gemv_cases_run(const char *name, gemv_ref_fn ref, gemv_fn fn, float *out) {
  unsigned s = 4242;
  for (size_t ci = 0; ci < sizeof gemv_cases / sizeof gemv_cases[0]; ci++) {
    const int n = gemv_cases[ci].n, k = gemv_cases[ci].k, ldb = k + 3;
    float *x = malloc(sizeof(float) * (size_t)(k + 1)), *b = malloc(sizeof(float) * (size_t)n * ldb);
    uint16_t *b16 = malloc(sizeof(uint16_t) * (size_t)n * ldb);
    float *bias = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    float *y16 = malloc(sizeof(float) * (size_t)n), *ys = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < k; i++) { s = s * 1103515245u + 12345u; x[i] = (float)((s >> 9) % 20001) / 5000.0f - 2.0f; }
    for (int i = 0; i < n * ldb; i++) {   /* finite float16 values, widened */
      b16[i] = rand_f16(&s);
      b[i] = ar_fp16_to_fp32(b16[i]);
    }
    for (int i = 0; i < n; i++) bias[i] = 0.25f * (float)(i % 7) - 0.5f;
    const float *bp = gemv_cases[ci].bias ? bias : NULL;
    const ar_activation_t act = gemv_cases[ci].act;
    fn(x, b, NULL, ldb, bp, y, n, k, act);
    fn(x, NULL, b16, ldb, bp, y16, n, k, act);
    for (int j = 0; j < n; j++) {
      const float want = ref(x, b + (size_t)j * ldb, bp, k, j, act);
      ck_assert_msg(memcmp(&y[j], &want, sizeof want) == 0, "%s case %zu (%dx%d): y[%d] = %.9g, want %.9g",
                    name, ci, n, k, j, (double)y[j], (double)want);
    }
    ck_assert_msg(memcmp(y, y16, sizeof(float) * (size_t)n) == 0, "%s case %zu: fp16 B differs", name, ci);
    const int c1 = n / 3;   /* two column runs, as the pool would split them */
    fn(x, b, NULL, ldb, bp, ys, c1, k, act);
    fn(x, b + (size_t)c1 * ldb, NULL, ldb, bp ? bp + c1 : NULL, ys + c1, n - c1, k, act);
    ck_assert_msg(memcmp(y, ys, sizeof(float) * (size_t)n) == 0, "%s case %zu: split differs", name, ci);
    if (out) {
      memcpy(out, y, sizeof(float) * (size_t)n);
      out += n;
    }
    free(x); free(b); free(b16); free(bias); free(y); free(y16); free(ys);
  }
}

static size_t gemv_cases_outputs(void) {
  size_t t = 0;
  for (size_t ci = 0; ci < sizeof gemv_cases / sizeof gemv_cases[0]; ci++) t += (size_t)gemv_cases[ci].n;
  return t;
}

START_TEST(sgemv512_exact_on_odd_shapes) {
  if (!ar_sgemm512_available()) {
    printf("check_isa: sgemv512_exact_on_odd_shapes skipped: no AVX-512F at the float level in force (%s)\n",
           ar_isa_name(ar_isa_float_level()));
    return;
  }
  gemv_cases_run("sgemv512", s512_gemv_ref, ar_sgemv512_nt, NULL);
}
END_TEST

/* sgemv256 exact on the same cases, through the dispatch point too; sgemv512's bits where the CPU
 * has AVX-512F. */
START_TEST(sgemv256_exact_on_odd_shapes) {
  if (!ar_sgemm256_available()) {
    printf("check_isa: sgemv256_exact_on_odd_shapes skipped: no AVX2+FMA+F16C at the float level in force (%s)\n",
           ar_isa_name(ar_isa_float_level()));
    return;
  }
  const size_t total = gemv_cases_outputs();
  float *y256 = malloc(sizeof(float) * total), *yd = malloc(sizeof(float) * total);
  float *y512 = malloc(sizeof(float) * total);
  const bool both = ar__f32_set_isa(AR_ISA_AVX512) == AR_ISA_AVX512;
  ar__f32_set_isa(AR_ISA_AVX2);
  gemv_cases_run("sgemv256", s512_gemv_ref, ar_sgemv256_nt, y256);
  gemv_cases_run("ar_sgemv_nt [avx2]", s512_gemv_ref, ar_sgemv_nt, yd);
  ck_assert_int_eq(memcmp(y256, yd, sizeof(float) * total), 0);
  if (both) {
    ar__f32_set_isa(AR_ISA_AVX512);
    gemv_cases_run("sgemv512", s512_gemv_ref, ar_sgemv512_nt, y512);
    ck_assert_msg(memcmp(y256, y512, sizeof(float) * total) == 0, "sgemv256 and sgemv512 differ");
  }
  ar__f32_set_isa(-1);
  free(y256); free(yd); free(y512);
}
END_TEST

/* ---- aarch64: the NEON GEMM (kernels/gemm_f32_8x8_neon.c) ---- */

/* The one-row product in its documented order: 8 lane sums (lane l: k = l, l + 8, ... below K
 * rounded down to 8), h_l = l + (l + 4), (h0 + h1) + (h2 + h3), the K % 8 last terms by fmaf,
 * then the bias, then the activation. */
static float neon_gemv_ref(const float *x, const float *b, const float *bias, int64_t k, int64_t j,
                           ar_activation_t act) {
  const int64_t k8 = k / 8 * 8;
  float lane[8];
  for (int l = 0; l < 8; l++) {
    lane[l] = 0.0f;
    for (int64_t i = l; i < k8; i += 8) lane[l] = fmaf(x[i], b[i], lane[l]);
  }
  float h[4];
  for (int l = 0; l < 4; l++) h[l] = lane[l] + lane[l + 4];
  float acc = (h[0] + h[1]) + (h[2] + h[3]);
  for (int64_t i = k8; i < k; i++) acc = fmaf(x[i], b[i], acc);
  acc = acc + (bias ? bias[j] : 0.0f);
  ar_apply_activation(&acc, 1, act);
  return acc;
}

/* The NEON GEMM exact against gemm_ref (fmaf over k, then the bias, then the activation) on the
 * listed cases and a sweep: every M in 1..24 (tiles of 8 and every tail 1..7), K in 1..300 (below,
 * at and past the 4-k step and KC = 256) and N in 1..70 (panels of 8, every partial one), the
 * activation and bias cycling, plus M = 120..136 (past MC = 128); B as float16 the same bits; any
 * split of rows or columns the same bits; the dispatch point (ar_sgemm_nt) takes it at the NEON
 * level, and not at the portable one. */
START_TEST(sgemm_neon_exact_on_odd_shapes) {
  if (!ar_sgemm_neon_available()) {
    printf("check_isa: sgemm_neon_exact_on_odd_shapes skipped: not aarch64 NEON at the float level in force (%s)\n",
           ar_isa_name(ar_isa_float_level()));
    return;
  }
  ck_assert(ar_sgemm_own_available());
  ck_assert_str_eq(ar_isa_name(ar_isa_float_level()), "neon");
  static const int ks[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64, 100, 255, 256, 257, 300};
  enum { NK = sizeof ks / sizeof ks[0] };
  int runs = 0;
  for (int pass = 0; pass < 3; pass++) {
    const int ncase = pass == 0 ? (int)(sizeof gemm_cases / sizeof gemm_cases[0]) : pass == 1 ? 24 * NK : 17;
    for (int ci = 0; ci < ncase; ci++) {
      int m, n, k, extra;
      ar_activation_t act;
      bool bias;
      if (pass == 0) {
        m = gemm_cases[ci].m; n = gemm_cases[ci].n; k = gemm_cases[ci].k; extra = gemm_cases[ci].extra;
        act = gemm_cases[ci].act; bias = gemm_cases[ci].bias;
      } else if (pass == 1) {
        m = 1 + ci / NK; k = ks[ci % NK]; n = 1 + (m * 13 + (ci % NK) * 29) % 70;
        extra = ci % 3; act = all_acts[ci % N_ACTS]; bias = ci % 4 != 1;
      } else {
        m = 120 + ci; k = ks[ci % NK]; n = 1 + (ci * 37) % 70; extra = ci % 2;
        act = all_acts[(ci + 1) % N_ACTS]; bias = ci % 3 != 0;
      }
      const unsigned seed = 2000u * (unsigned)pass + (unsigned)ci;
      gemm_case("gemm_f32_neon", gemm_ref, ar_sgemm_neon_nt, ar_sgemm_neon_nt_f16, m, n, k, extra, act,
                bias, seed, NULL);
      gemm_case("ar_sgemm_nt [neon]", gemm_ref, ar_sgemm_nt, ar_sgemm_nt_f16, m, n, k, extra, act, bias,
                seed, NULL);
      runs++;
    }
  }
  ck_assert_int_gt(runs, 400);
  ck_assert_int_eq(ar__f32_set_isa(AR_ISA_PORTABLE), AR_ISA_PORTABLE);
  ck_assert(!ar_sgemm_neon_available() && !ar_sgemm_own_available());
  ar__f32_set_isa(-1);
}
END_TEST

/* The NEON one-row product exact against neon_gemv_ref on the gemv cases (float32 and float16 B,
 * K below, at and past 8 with a tail, N not a multiple of 4, a split of N). */
START_TEST(sgemv_neon_exact_on_odd_shapes) {
  if (!ar_sgemm_neon_available()) {
    printf("check_isa: sgemv_neon_exact_on_odd_shapes skipped: not aarch64 NEON at the float level in force (%s)\n",
           ar_isa_name(ar_isa_float_level()));
    return;
  }
  const size_t total = gemv_cases_outputs();
  float *yn = malloc(sizeof(float) * total), *yd = malloc(sizeof(float) * total);
  gemv_cases_run("gemv_f32_neon", neon_gemv_ref, ar_sgemv_neon_nt, yn);
  gemv_cases_run("ar_sgemv_nt [neon]", neon_gemv_ref, ar_sgemv_nt, yd);
  ck_assert_int_eq(memcmp(yn, yd, sizeof(float) * total), 0);
  free(yn); free(yd);
}
END_TEST

/* The portable path is the oracle: the NEON GEMM against OpenBLAS (cblas_sgemm, then the bias and
 * the activation as gemm.c's OpenBLAS path applies them) within the float rule, |got - want| <=
 * 1e-5 * (sum over k of |a b| + |bias|) + 1e-30, on random shapes with M, N, K of 1, odd sizes,
 * sizes past the tiles, and a 1x1-layer shape (M = 3136, N = 48, K = 16). */
START_TEST(sgemm_neon_within_float_rule_of_openblas) {
  if (!ar_sgemm_neon_available()) {
    printf("check_isa: sgemm_neon_within_float_rule_of_openblas skipped: not aarch64 NEON at the float level in force (%s)\n",
           ar_isa_name(ar_isa_float_level()));
    return;
  }
  static const int shapes[][3] = {{1, 1, 1}, {1, 37, 1}, {37, 1, 1}, {1, 1, 300}, {9, 13, 1},
                                  {7, 9, 11}, {64, 64, 64}, {129, 71, 257}, {3136, 48, 16},
                                  {49, 200, 192}};
  unsigned s = 99;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    const int m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
    float *a = malloc(sizeof(float) * (size_t)m * k), *b = malloc(sizeof(float) * (size_t)n * k);
    float *bias = malloc(sizeof(float) * (size_t)n), *got = malloc(sizeof(float) * (size_t)m * n);
    float *want = malloc(sizeof(float) * (size_t)m * n);
    for (int i = 0; i < m * k; i++) { s = s * 1103515245u + 12345u; a[i] = (float)((s >> 9) % 20001) / 10000.0f - 1.0f; }
    for (int i = 0; i < n * k; i++) { s = s * 1103515245u + 12345u; b[i] = (float)((s >> 9) % 20001) / 10000.0f - 1.0f; }
    for (int i = 0; i < n; i++) bias[i] = 0.1f * (float)(i % 11) - 0.5f;
    const ar_activation_t act = si % 2 ? AR_ACT_RELU6 : AR_ACT_NONE;
    ar_sgemm_neon_nt(a, k, b, k, bias, got, n, m, n, k, act);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, k, b, k, 0.0f, want, n);
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        float w = want[i * n + j] + bias[j];
        ar_apply_activation(&w, 1, act);
        double mag = fabs((double)bias[j]);
        for (int q = 0; q < k; q++) mag += fabs((double)a[i * k + q] * (double)b[j * k + q]);
        const double err = fabs((double)got[i * n + j] - (double)w);
        ck_assert_msg(err <= 1e-5 * mag + 1e-30, "%dx%dx%d: C[%d,%d] = %.9g, OpenBLAS %.9g (|err| %.3g, scale %.3g)",
                      m, n, k, i, j, (double)got[i * n + j], (double)w, err, mag);
      }
    }
    free(a); free(b); free(bias); free(got); free(want);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("isa");
  TCase *tc = tcase_create("isa");
  tcase_add_test(tc, blas_core_follows_the_cpu);
  tcase_add_test(tc, sgemm_right_on_every_core);
  tcase_add_test(tc, float_level_switch_and_report);
  tcase_add_test(tc, sgemm512_exact_on_odd_shapes);
  tcase_add_test(tc, sgemv512_exact_on_odd_shapes);
  tcase_add_test(tc, sgemm256_exact_on_odd_shapes);
  tcase_add_test(tc, sgemv256_exact_on_odd_shapes);
  suite_add_tcase(s, tc);
  /* The NEON sweeps run under qemu-aarch64 (./dev cross-check), 5-20x slower than a board. */
  TCase *tn = tcase_create("neon");
  tcase_set_timeout(tn, 60);
  tcase_add_test(tn, sgemm_neon_exact_on_odd_shapes);
  tcase_add_test(tn, sgemv_neon_exact_on_odd_shapes);
  tcase_add_test(tn, sgemm_neon_within_float_rule_of_openblas);
  suite_add_tcase(s, tn);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
