/* ar_isa.c - the float kernels' ISA level, OpenBLAS's core choice, and the report of both
 * (kernels/ar_isa.h explains the why). */
#include "kernels/ar_isa.h"

#include <dlfcn.h>
#include <stdio.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "kernels/ar_kernel_impl.h"
#include "kernels/conv_util.h"
#include "kernels/qgemm.h"

/* ---------- float kernels' level ---------- */

int ar__f32_level = -1;   /* conv_util.h reads it; -1 until first asked */

static int f32_best(void) {
#if AR_HAVE_AVX2_CLONE
  __builtin_cpu_init();
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return AR_ISA_PORTABLE;
  if (__builtin_cpu_supports("avx512f")) return AR_ISA_AVX512;
  return AR_ISA_AVX2;
#elif defined(__aarch64__) && defined(__linux__)
  /* HWCAP_ASIMD (bit 1 of AT_HWCAP; every Cortex-A53/A72/A76 has it, the kernel says so). */
  return (getauxval(AT_HWCAP) & (1ul << 1)) ? AR_ISA_NEON : AR_ISA_PORTABLE;
#else
  return AR_ISA_PORTABLE;
#endif
}

/* The highest level this build can name (AR_FLOAT_ISA's values run up to it). */
static int f32_top(void) {
#if defined(__aarch64__)
  return AR_ISA_NEON;
#else
  return AR_ISA_AVX512;
#endif
}

/* AR_FLOAT_ISA=portable|avx2|avx512f (aarch64: portable|neon) caps the automatic level (a level
 * the CPU lacks is ignored). */
static int f32_auto(void) {
  int l = f32_best();
  const char *e = getenv("AR_FLOAT_ISA");
  if (e) {
    for (int k = AR_ISA_PORTABLE; k <= f32_top(); k++)
      if (strcmp(e, ar_isa_name(k)) == 0 && k < l) l = k;
  }
  return l;
}

int ar__f32_isa_init(void) {
  int l = f32_auto();
  __atomic_store_n(&ar__f32_level, l, __ATOMIC_RELAXED);
  return l;
}

int ar_isa_float_level(void) { return ar__f32_isa(); }

int ar__f32_set_isa(int isa) {
  if (isa < 0) return ar__f32_isa_init();
  if (isa > f32_best()) return -1;
  __atomic_store_n(&ar__f32_level, isa, __ATOMIC_RELAXED);
  return isa;
}

const char *ar_isa_name(int level) {
#if defined(__aarch64__)
  if (level == AR_ISA_NEON) return "neon";
#endif
  switch (level) {
  case AR_ISA_PORTABLE: return "portable";
  case AR_ISA_AVX2: return "avx2";
  case AR_ISA_AVX512: return "avx512f";
  default: return "?";
  }
}

/* ---------- OpenBLAS core ---------- */

typedef char *(*blas_name_fn)(void);
typedef void (*blas_void_fn)(void);

static char blas_replaced[32];   /* the core OpenBLAS picked itself, when replaced */

const char *ar_blas_corename(void) {
  blas_name_fn name = (blas_name_fn)(void (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_corename");
  const char *s = name ? name() : NULL;
  return s && *s ? s : "unknown";
}

const char *ar_blas_replaced_core(void) { return blas_replaced[0] ? blas_replaced : NULL; }

#if defined(__x86_64__) && defined(__GNUC__)
/* OpenBLAS x86-64 cores (its corename strings) that run neither AVX2 nor AVX-512 kernels; "Haswell"
 * and "Zen" are the AVX2 ones. Anything else (SkylakeX, Cooperlake, SapphireRapids, names newer
 * than this list) is kept. */
static const char *const blas_pre_avx2[] = {
  "Unknown", "Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom", "Core2", "Penryn",
  "Dunnington", "Nehalem", "Athlon", "Opteron", "Opteron_SSE3", "Barcelona", "Nano", "Bobcat",
  "Bulldozer", "Piledriver", "Steamroller", "Excavator", "Sandybridge",
};

static bool blas_core_in(const char *core, bool with_avx2) {
  for (size_t i = 0; i < sizeof blas_pre_avx2 / sizeof blas_pre_avx2[0]; i++)
    if (strcasecmp(core, blas_pre_avx2[i]) == 0) return true;
  return with_avx2 && (strcasecmp(core, "Haswell") == 0 || strcasecmp(core, "Zen") == 0);
}
#endif

/* Runs after libopenblas's constructor (a library's initialisers run before those of the program
 * that links it) and before main, while no BLAS call can be in flight. */
__attribute__((constructor)) static void ar_blas_pick_core(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (getenv("OPENBLAS_CORETYPE")) return;   /* the user's choice */
  blas_name_fn name = (blas_name_fn)(void (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_corename");
  blas_void_fn quit = (blas_void_fn)dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
  blas_void_fn init = (blas_void_fn)dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
  if (!name || !quit || !init) return;   /* not a DYNAMIC_ARCH OpenBLAS */
  const char *now = name();
  if (!now) return;
  __builtin_cpu_init();
  const char *want = NULL;
  /* OpenBLAS's SkylakeX kernels use AVX-512 F/CD/BW/DQ/VL; GCC's checks include the OS (XCR0). */
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma"))
    want = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    want = "Haswell";
  if (!want || !blas_core_in(now, strcmp(want, "SkylakeX") == 0)) return;
  snprintf(blas_replaced, sizeof blas_replaced, "%s", now);
  if (setenv("OPENBLAS_CORETYPE", want, 1) != 0) { blas_replaced[0] = '\0'; return; }
  quit();   /* forget the core picked at load time (the tables are static: nothing is freed) */
  init();   /* pick again: reads OPENBLAS_CORETYPE, checks the CPU, runs that core's init */
  unsetenv("OPENBLAS_CORETYPE");
#endif
}

int ar__blas_set_core(const char *core) {
  blas_void_fn quit = (blas_void_fn)dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit");
  blas_void_fn init = (blas_void_fn)dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init");
  if (!quit || !init) return -1;
  const char *user = getenv("OPENBLAS_CORETYPE");
  char saved[64] = "";
  if (user) snprintf(saved, sizeof saved, "%s", user);
  if (core ? setenv("OPENBLAS_CORETYPE", core, 1) : unsetenv("OPENBLAS_CORETYPE")) return -1;
  quit();
  init();
  if (user) setenv("OPENBLAS_CORETYPE", saved, 1);
  else unsetenv("OPENBLAS_CORETYPE");
  return !core || strcasecmp(ar_blas_corename(), core) == 0 ? 0 : -1;
}

/* ---------- report ---------- */

/* The float kernel families with run-time picked clones, and the highest level each has. */
static const struct { const char *name; int top; } f32_families[] = {
#if defined(__aarch64__)
  /* aarch64: the own NEON GEMM (kernels/gemm_f32_neon.h) under CONV_2D / FULLY_CONNECTED; the
   * rest runs its GCC-vector baseline (NEON code, but not picked at run time). */
  {"conv/fc gemm", AR_ISA_NEON},
#else
  {"depthwise", AR_ISA_AVX512},
  {"direct conv", AR_ISA_AVX512},
  {"im2col copy", AR_ISA_PORTABLE},
  {"conv gemm", AR_ISA_AVX512},
  {"elementwise/activations", AR_ISA_AVX512},
  {"transpose conv", AR_ISA_AVX512},
#endif
};

static const char *int_level(int l, const char *top) {
#if defined(__aarch64__)
  (void)top;
  return l <= 0 ? "portable" : "neon";   /* arm64's integer loops have one SIMD level */
#else
  return l <= 0 ? "portable" : l == 1 ? "avx2" : top;
#endif
}

int ar_isa_report(char *buf, size_t n) {
  char tmp[1024];
  size_t used = 0;
#define ADD(...)                                                                        \
  do {                                                                                  \
    int k_ = snprintf(tmp + used, sizeof tmp - used, __VA_ARGS__);                      \
    if (k_ > 0) used = used + (size_t)k_ < sizeof tmp ? used + (size_t)k_ : sizeof tmp - 1; \
  } while (0)
  const int f = ar_isa_float_level();
  ADD("float kernels  ");
  for (size_t i = 0; i < sizeof f32_families / sizeof f32_families[0]; i++)
    ADD("%s %s %s", i ? "," : "", f32_families[i].name,
        ar_isa_name(f < f32_families[i].top ? f : f32_families[i].top));
  ADD("\n");
  ADD("int8 kernels    gemm %s, depthwise %s, add/sub/mul %s, byte tables %s, quantize %s\n",
      ar_qgemm_path_name(ar_qgemm_best_path()), int_level(ar__qdw_set_isa(-1), "avx512vnni"),
      int_level(ar__q8_set_isa(-1), "avx512bw"),
      ar__lut8_set_isa(-1) > 0 ? "avx512vbmi" : "portable",
      int_level(ar__quantize_set_isa(-1), "avx512"));
  bool f16c = ar_fp16_force_portable(0);
  ADD("fp16 weights    %s\n", f16c ? "f16c" : "portable");
  typedef char *(*cfg_fn)(void);
  cfg_fn cfg = (cfg_fn)(void (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_config");
  const char *rep = ar_blas_replaced_core();
  char why[96] = "";
  if (rep) snprintf(why, sizeof why, " (arenad's choice; OpenBLAS picked %s)", rep);
  else if (getenv("OPENBLAS_CORETYPE")) snprintf(why, sizeof why, " (OPENBLAS_CORETYPE)");
  ADD("blas            %s, core %s%s\n", cfg ? cfg() : "cblas", ar_blas_corename(), why);
#undef ADD
  return snprintf(buf, n, "%s", tmp);
}
