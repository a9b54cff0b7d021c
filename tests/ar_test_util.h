/* ar_test_util.h - helpers shared by the Check suites: where the real models and goldens are,
 * reading raw tensors, and the golden acceptance rule. */
#ifndef AR_TEST_UTIL_H
#define AR_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The 11 shipped MediaPipe models, by stem (file = <stem>.tflite, goldens in <stem>/). */
extern const char *const ar_test_models[];
extern const int ar_test_n_models;

/* The 12 quantized models of ../shared/models_q (issue 9; never committed), by stem (file =
 * <stem>.tflite, goldens in <golden_q>/<stem>/), smallest first. */
extern const char *const ar_test_qmodels[];
extern const int ar_test_n_qmodels;
/* $AR_MODELS_Q_DIR, else <srcdir>/../shared/models_q (else <srcdir>/models/quant when only that exists); $AR_GOLDEN_Q_DIR, else <srcdir>/../shared/golden_q. */
const char *ar_test_models_q_dir(void);
const char *ar_test_golden_q_dir(void);
/* Whether both exist (a fresh clone has no ../shared: the quantized tests print a skip). */
int ar_test_have_qmodels(void);

/* Directory of the real models: $AR_MODELS_DIR, else <srcdir>/models. */
const char *ar_test_models_dir(void);
/* Directory of the goldens: $AR_GOLDEN_DIR, else <srcdir>/tests/golden. */
const char *ar_test_golden_dir(void);
/* Directory of the models_extra goldens: $AR_GOLDEN_EXTRA_DIR, else <srcdir>/tests/golden_extra. */
const char *ar_test_golden_extra_dir(void);
/* Path of model `stem` into buf (returns buf). */
char *ar_test_model_path(char *buf, size_t n, const char *stem);

/* Whether the per-model test loops run `stem`: all models, unless $AR_TEST_MODELS lists some
 * (comma-separated stems; `./dev cross-check --ci` keeps the smallest ones under qemu). */
int ar_test_model_selected(const char *stem);

/* Exec a program of the build (arenad, arenactl) at `path` with `argv` (argv[0] its name), through
 * $AR_EXEC_WRAPPER when that is set: the cross build's suites run under qemu-user without binfmt,
 * so the aarch64 programs they spawn must be started by tools/cross-run as well. For a forked
 * child; returns only on failure (-1, errno set). */
int ar_test_execv(const char *path, char *const argv[]);

/* The same for popen()/system() command lines: "'<$AR_EXEC_WRAPPER>' " to put before the quoted
 * program path, or "" when unset. */
const char *ar_test_exec_prefix(void);

/* 1 when the suites run under an emulator (AR_EXEC_WRAPPER set, e.g. tools/cross-run: qemu-aarch64),
 * where timing and latency bounds are printed, not held. */
int ar_test_emulated(void);

/* Run the shell command `cmd` (popen) and keep up to out_bytes - 1 bytes of its standard output,
 * NUL-terminated, in out. Returns its exit status, or 128 + the signal that ended it. */
int ar_test_popen(const char *cmd, char *out, size_t out_bytes);

/* ar_test_popen of the command printf would write for `fmt` (at most 8191 bytes of command). */
int ar_test_sh(char *out, size_t out_bytes, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The build tree the suite tests: $AR_BUILDDIR, else the one it was built in. */
const char *ar_test_builddir(void);

/* 1 when this test process runs under valgrind (its preload library is in LD_PRELOAD): every
 * thread of the process is serialised and 20-50x slower, so latency bounds are printed, not held,
 * and the per-model loops keep a few models. */
int ar_test_under_valgrind(void);

/* Visit the open file descriptors of process `pid` (/proc/<pid>/fd): fn(ctx, target) for each,
 * `target` what its link names (a path as /proc shows it, or "socket:[N]", "anon_inode:..."; a
 * descriptor closed meanwhile is skipped). fn may be NULL. Returns how many were visited, or -1 when
 * the directory cannot be read (no such process). */
int ar_test_proc_fds(pid_t pid, void (*fn)(void *ctx, const char *target), void *ctx);

/* Read a whole file; returns a malloc'd buffer (caller frees) and its size, or NULL. */
void *ar_test_read_file(const char *path, size_t *bytes);

/* Golden acceptance: |got - want| <= 1e-4 * max|want| + 1e-5 elementwise. Returns the number of
 * elements out of tolerance and writes the worst absolute error to *worst (may be NULL). */
size_t ar_test_golden_mismatches(const float *got, const float *want, size_t n, double *worst);

/* Sigmoid acceptance for ill-conditioned logit maps (golden_extra/NOTES.md: pose_landmark's
 * Identity_2): |sigmoid(got) - sigmoid(want)| <= tol elementwise. Same returns as above, worst
 * measured after the sigmoid. */
size_t ar_test_sigmoid_mismatches(const float *got, const float *want, size_t n, double tol,
                                  double *worst);

#endif
