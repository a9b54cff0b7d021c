/* check_isa.c - kernels/ar_isa.h: OpenBLAS's core choice (the constructor that replaces an
 * SSE3-era core on a CPU with AVX2 / AVX-512, the user's OPENBLAS_CORETYPE kept), sgemm / sgemv
 * values on every core this CPU can run against a naive product, the float kernels' level switch
 * and the report arenactl --version prints. */
#include <check.h>
#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ar_isa.h"

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

int main(void) {
  Suite *s = suite_create("isa");
  TCase *tc = tcase_create("isa");
  tcase_add_test(tc, blas_core_follows_the_cpu);
  tcase_add_test(tc, sgemm_right_on_every_core);
  tcase_add_test(tc, float_level_switch_and_report);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
