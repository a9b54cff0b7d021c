/* ar_isa.h - which instruction-set paths the kernels run on this CPU, and which OpenBLAS core.
 *
 * Float kernels: the hot loops of depthwise, the direct (few input channels) convolution, the
 * im2col copy, the transpose-conv scatter and the float elementwise / activation passes are
 * compiled for the baseline ISA, for AVX2+FMA and (where it pays) for AVX-512F, and one level is
 * picked at run time for the whole process (ar__f32_isa, kernels/conv_util.h). Integer kernels
 * keep their own per-family choice (kernels/qgemm.h, ar_kernel_impl.h); the report lists both.
 *
 * OpenBLAS: Debian's libopenblas is built with DYNAMIC_ARCH and picks its kernels from the CPU
 * model; a model it does not know (e.g. this Xeon, family 6 model 207, under OpenBLAS 0.3.21)
 * falls back to the SSE3 "Prescott" kernels, about 4x slower on sgemm than its AVX-512
 * "SkylakeX" ones. So a constructor of this file (run before main, after libopenblas's own)
 * re-runs OpenBLAS's core selection with OPENBLAS_CORETYPE=SkylakeX (or Haswell on AVX2 CPUs)
 * when: OPENBLAS_CORETYPE is not set by the user (a set value is always kept: that is also how
 * to opt out, e.g. OPENBLAS_CORETYPE=Prescott), the CPU and OS support that core's instructions,
 * and OpenBLAS picked an older core than that. It uses OpenBLAS's exported
 * gotoblas_dynamic_quit / gotoblas_dynamic_init (the same selection its constructor ran, so the
 * result equals starting the process with the variable set); a library without them (no
 * DYNAMIC_ARCH) is left alone. The environment is restored afterwards. Every program that links
 * the kernels gets this (arenad, arenactl, bench/, tests).
 */
#ifndef AR_ISA_H
#define AR_ISA_H

#include <stdbool.h>
#include <stddef.h>

/* Float kernel levels (ar__f32_isa). */
#define AR_ISA_PORTABLE 0
#define AR_ISA_AVX2 1    /* AVX2 + FMA */
#define AR_ISA_AVX512 2  /* AVX-512F (+ the AVX2+FMA set) */
/* aarch64: Advanced SIMD (HWCAP_ASIMD), the first SIMD level in the slot AVX2 has on x86-64 (the
 * x86 clones are not compiled there, and every `level >= AR_ISA_AVX2` test sits behind
 * AR_HAVE_AVX2_CLONE). It picks arenad's own NEON float GEMM (kernels/gemm_f32_neon.h) instead of
 * OpenBLAS; the other float kernels' GCC-vector baseline is NEON on aarch64 already. */
#define AR_ISA_NEON 1

/* The level the float kernels run at: the best the CPU has, capped by the environment variable
 * AR_FLOAT_ISA=portable|avx2|avx512f (aarch64: portable|neon) when set (to compare paths, or to step around one), or the
 * one ar__f32_set_isa forced. */
int ar_isa_float_level(void);

/* Tests and benchmarks: force the float kernels' level (AR_ISA_*) for the whole process, or -1
 * for automatic. Returns the level now in force, or -1 (nothing changed) when this build or CPU
 * lacks `isa`. Not thread-safe against running invokes: call it between them. */
int ar__f32_set_isa(int isa);

/* Name of a float level: "portable", "avx2", "avx512f"; on aarch64 "portable", "neon". */
const char *ar_isa_name(int level);

/* OpenBLAS's active core (openblas_get_corename(), e.g. "SkylakeX"), or "unknown" when the BLAS
 * in use does not say. */
const char *ar_blas_corename(void);

/* The core OpenBLAS had picked itself when the constructor replaced it (e.g. "Prescott"), or
 * NULL when it was left as OpenBLAS chose (or as OPENBLAS_CORETYPE said). */
const char *ar_blas_replaced_core(void);

/* Benchmarks only: re-run OpenBLAS's core selection as if the process had started with
 * OPENBLAS_CORETYPE=core (NULL: unset, i.e. OpenBLAS's own pick), e.g. to time sgemm on each
 * core in one run. No BLAS call may be running. Returns 0 when the active core is now `core` (or
 * core is NULL), -1 when OpenBLAS refused it (CPU lacks it: it falls back) or cannot switch. */
int ar__blas_set_core(const char *core);

/* Human-readable report of the kernel paths in use, several lines each ending in '\n', e.g.
 *   float kernels   avx512f (depthwise, direct conv, ...)
 *   int8 kernels    gemm avx512vnni, depthwise avx512vnni, ...
 *   blas            OpenBLAS 0.3.21 ..., core SkylakeX (arenad's choice; OpenBLAS picked Prescott)
 * Writes at most `n` bytes (NUL-terminated, truncated when short); returns the length it needed
 * (snprintf semantics). Querying the integer kernels' automatic choice resets a path a test
 * forced on them (their *_set_isa(-1)); call it from clients, not between a test's forced runs. */
int ar_isa_report(char *buf, size_t n);

#endif /* AR_ISA_H */
