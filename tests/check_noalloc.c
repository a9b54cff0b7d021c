/* check_noalloc.c - Invoke makes zero heap allocations: 100 invokes of every real model with an
 * allocation counter armed around each ar_interp_invoke call (and each ar_interp_invoke_profiled
 * call with the caller's profile buffer), and 10 evals of each kernel no
 * shipped model uses yet (shape/index ops, BATCH_MATMUL, TRANSPOSE_CONV, the SSD post-process).
 *
 * The counter: this binary defines malloc, calloc, realloc, free, posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc and mmap/mmap64 itself (exported, so libc, OpenBLAS and our static
 * layers all bind to them; glibc-internal mmap calls inside malloc are covered by counting malloc).
 * They count while the calling thread is armed and forward to glibc's __libc_* entry points (and
 * to the mmap system call). The invoking thread is what is asserted: with one BLAS thread (the
 * default) every kernel runs on it; other threads' calls in the window are printed.
 *
 * Under AddressSanitizer the allocator belongs to ASan and defining malloc here would replace it,
 * so the ASan build counts through ASan's own malloc/free hooks
 * (__sanitizer_install_malloc_and_free_hooks) instead; mmap is not counted there.
 *
 * The same 11 models with threads = 2 (the interpreter's own pool of one helper): the helper's
 * calls, counted as other threads', must be 0 too.
 *
 * The single-operator models of tests/golden/ops (every kernel, every dtype form the INDEX lists)
 * get the same treatment: one warm-up invoke, then 5 counted invokes each.
 *
 * Warm-up: ar_interp_place runs one OpenBLAS product so that OpenBLAS maps its per-process GEMM
 * buffer at place time; the first invoke after place is counted and printed (it is 0 here) but
 * not asserted; the 100 invokes after it are asserted to make zero calls.
 *
 * The quantized models of ../shared/models_q (issue 9), when that folder exists and a model can be
 * built: 20 counted invokes each (5 for the two large ones) on its golden_q input, at threads = 1 and
 * again at threads = 2 (the pool helper's calls must be 0 too).
 *
 * Resizing (built models, tests/ar_test_model.h): a model whose input shape_signature is
 * [-1,4,4,3] invoked with batch 1, 4, 2, 8, 1 - outputs equal to the hand-computed ones per item,
 * the arena follows the batch (and is the first figure again at batch 1), zero allocations in the
 * invokes between resizes; a resizable expansion-conv -> depthwise pair fused (inverted-residual
 * fusion) re-prepared at five shapes, byte for byte the unfused outputs and within 1e-4 of a
 * computation by hand, with no allocation; and PAD / RESHAPE whose paddings / shape are graph inputs (dynamic
 * shapes), re-derived when the value changes, never otherwise.
 */
#define _GNU_SOURCE
#include <cblas.h>
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "interp/ar_interp.h"
#include "kernels/ar_kernels.h"
#include "kernels/sgemm.h"
#include "loader/ar_model.h"
#include "tests/ar_test_model.h"
#include "tests/ar_test_rnn_models.h"
#include "tests/ar_test_stream.h"
#include "tests/ar_test_util.h"

/* ThreadSanitizer, like ASan, owns malloc: count through its allocator hooks there too. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AR_NOALLOC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AR_NOALLOC_ASAN 1
#endif
#endif

/* Armed per thread: the invoking thread's calls are what is asserted. Calls made meanwhile by
 * other threads are counted apart and printed: in a forked Check child OpenBLAS re-creates its
 * (idle, with one BLAS thread) server threads, which map their own buffer whenever they get
 * scheduled, a race with the armed window that has nothing to do with invoke. */
static __thread int armed_here;
static int armed_any;             /* read/written with __atomic builtins */
static unsigned long n_alloc;     /* allocation-family calls on the armed thread */
static unsigned long n_free;
static unsigned long n_mmap;
static unsigned long n_other;     /* any of those, on other threads, while armed */

static inline __attribute__((always_inline)) void bump(unsigned long *c) {
  if (armed_here)
    __atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
  else if (__atomic_load_n(&armed_any, __ATOMIC_RELAXED))
    __atomic_add_fetch(&n_other, 1, __ATOMIC_RELAXED);
}
static void arm(void) {
  __atomic_store_n(&n_alloc, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&n_free, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&n_mmap, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&armed_any, 1, __ATOMIC_SEQ_CST);
  armed_here = 1;
}
static unsigned long disarm(void) {
  armed_here = 0;
  __atomic_store_n(&armed_any, 0, __ATOMIC_SEQ_CST);
  return __atomic_load_n(&n_alloc, __ATOMIC_SEQ_CST) + __atomic_load_n(&n_free, __ATOMIC_SEQ_CST) +
         __atomic_load_n(&n_mmap, __ATOMIC_SEQ_CST);
}

#ifdef AR_NOALLOC_ASAN
/* Declared here rather than through <sanitizer/allocator_interface.h>, which gcc's Debian packages
 * do not ship; the symbol is part of the sanitizer runtimes' stable interface. */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));
static void asan_malloc_hook(const volatile void *ptr, size_t size) { (void)ptr; (void)size; bump(&n_alloc); }
static void asan_free_hook(const volatile void *ptr) { (void)ptr; bump(&n_free); }
static void install_counter(void) {
  static int done;
  if (!done) __sanitizer_install_malloc_and_free_hooks(asan_malloc_hook, asan_free_hook);
  done = 1;
}
#define COUNTS_MMAP 0
#else
/* Default visibility: the build uses -fvisibility=hidden, and these must be exported from the
 * executable for shared libraries (libc, OpenBLAS) to bind to them. */
#define AR_INTERPOSE __attribute__((visibility("default")))
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

AR_INTERPOSE void *malloc(size_t n) { bump(&n_alloc); return __libc_malloc(n); }
AR_INTERPOSE void *calloc(size_t a, size_t b) { bump(&n_alloc); return __libc_calloc(a, b); }
AR_INTERPOSE void *realloc(void *p, size_t n) { bump(&n_alloc); return __libc_realloc(p, n); }
AR_INTERPOSE void free(void *p) { if (p) bump(&n_free); __libc_free(p); }
AR_INTERPOSE void *memalign(size_t al, size_t n) { bump(&n_alloc); return __libc_memalign(al, n); }
AR_INTERPOSE void *aligned_alloc(size_t al, size_t n) { bump(&n_alloc); return __libc_memalign(al, n); }
AR_INTERPOSE void *valloc(size_t n) { bump(&n_alloc); return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), n); }
AR_INTERPOSE void *pvalloc(size_t n) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  bump(&n_alloc);
  return __libc_memalign(pg, (n + pg - 1) / pg * pg);
}
AR_INTERPOSE int posix_memalign(void **out, size_t al, size_t n) {
  bump(&n_alloc);
  if (al % sizeof(void *) != 0 || (al & (al - 1)) != 0) return 22; /* EINVAL */
  void *p = __libc_memalign(al, n);
  if (!p && n) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
AR_INTERPOSE void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  bump(&n_mmap);
  return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
AR_INTERPOSE void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  bump(&n_mmap);
  return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
static void install_counter(void) {}
#define COUNTS_MMAP 1
#endif

/* The counter itself works: a deliberate allocation while armed is seen, none when disarmed. */
START_TEST(test_counter_counts) {
  install_counter();
  void *(*volatile do_malloc)(size_t) = malloc;   /* volatile: the compiler may not elide it */
  void (*volatile do_free)(void *) = free;
  arm();
  void *p = do_malloc(100);
  do_free(p);
  unsigned long c = disarm();
  ck_assert_uint_eq(n_alloc, 1);
  ck_assert_uint_eq(n_free, 1);
  ck_assert_uint_eq(c, 2);
  p = do_malloc(100);
  do_free(p);
  arm();
  ck_assert_uint_eq(disarm(), 0);
  if (COUNTS_MMAP) {
    arm();
    void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned long cm = disarm();
    ck_assert(m != MAP_FAILED);
    munmap(m, 1 << 20);
    ck_assert_uint_eq(cm, 1);
  }
}
END_TEST

/* OpenBLAS starts its server threads in its library constructor (and again in every forked Check
 * child), and each maps a work buffer when it first gets scheduled; if that happens after
 * ar_interp_place warmed the invoking thread's buffer slot, it can take that slot and make the
 * invoking thread map another one inside an armed window. One product split over every thread
 * makes them all start (exec_blas waits for them) before anything is armed. The daemon's threads
 * have long started by the time it places a model. */
static void settle_openblas_threads(void) {
  enum { N = 256 };
  float *a = calloc(3 * (size_t)N * N, sizeof(float));
  ck_assert_ptr_nonnull(a);
  int procs = openblas_get_num_procs();
  openblas_set_num_threads(procs > 1 ? procs : 1);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, a + N * N, N, 0.0f,
              a + 2 * N * N, N);
  openblas_set_num_threads(1);
  free(a);
}

/* Load `stem`, plan with the default options (and `threads`), copy in the photo input from
 * `golden_dir`, one warm-up invoke, then the counted ones: none may allocate. With more than one
 * thread the interpreter's pool helpers run kernels too: the calls of every other thread in the
 * counted windows (n_other) must be 0 as well. */
static void invoke_no_alloc_how(const char *stem, const char *golden_dir, int32_t threads, bool profiled) {
  install_counter();
  settle_openblas_threads();
  char path[1024], msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  int rc = ar_model_load(ar_test_model_path(path, sizeof path, stem), &m, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", stem, msg);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  opt.threads = threads;
  ar_interp_t *in = NULL;
  rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", stem, msg);
  rc = ar_interp_place_owned(in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", stem, msg);
  snprintf(path, sizeof path, "%s/%s/photo/input_0.bin", golden_dir, stem);
  size_t bytes = 0;
  void *input = ar_test_read_file(path, &bytes);
  ck_assert_ptr_nonnull(input);
  ar_tview_t *v = ar_interp_input(in, 0);
  ck_assert_uint_eq(bytes, v->bytes);
  /* The profile buffer is the caller's, allocated before anything is counted. */
  uint64_t *op_ns = profiled ? calloc((size_t)ar_interp_n_operators(in), sizeof(*op_ns)) : NULL;
  ck_assert(!profiled || op_ns != NULL);

  memcpy(v->data, input, bytes);
  arm();
  rc = profiled ? ar_interp_invoke_profiled(in, op_ns) : ar_interp_invoke(in);   /* warm-up: counted and printed, not asserted */
  unsigned long first = disarm();
  ck_assert_int_eq(rc, 0);

  __atomic_store_n(&n_other, 0, __ATOMIC_SEQ_CST);
  unsigned long total = 0, worst = 0;
  /* 100 counted invokes natively; 3 under an emulator (AR_EXEC_WRAPPER: qemu-aarch64 runs the
   * heavy models 20-50x slower; 10 took an hour for the suite), where the same zero is asserted. */
  const int runs = ar_test_emulated() ? 3 : 100;
  for (int r = 0; r < runs; r++) {
    memcpy(v->data, input, bytes);   /* outside the armed window: the caller's copy */
    arm();
    rc = profiled ? ar_interp_invoke_profiled(in, op_ns) : ar_interp_invoke(in);
    unsigned long c = disarm();
    ck_assert_int_eq(rc, 0);
    total += c;
    if (c > worst) worst = c;
  }
  const unsigned long other = __atomic_load_n(&n_other, __ATOMIC_SEQ_CST);
  printf("noalloc %-34s %d thread(s)%s: first invoke %lu calls; %d invokes: %lu allocation calls (%s); "
         "other threads meanwhile: %lu\n", stem, (int)threads, profiled ? " profiled" : "", first, runs, total,
         COUNTS_MMAP ? "malloc family + mmap" : "ASan malloc/free hooks", other);
  ck_assert_msg(total == 0, "%s: %lu heap allocation calls in %d invokes (worst invoke %lu)", stem,
                total, runs, worst);
  if (threads > 1)
    ck_assert_msg(other == 0, "%s, %d threads: %lu allocation calls on other threads in %d invokes", stem,
                  (int)threads, other, runs);
  if (profiled) {   /* the times went into the caller's buffer: every operator that runs has some */
    uint64_t sum = 0;
    for (int32_t k = 0; k < ar_interp_n_operators(in); k++) sum += op_ns[k];
    ck_assert_uint_gt(sum, 0);
  }
  free(op_ns);
  free(input);
  ar_interp_free(in);
  ar_model_free(m);
}

static void invoke_no_alloc(const char *stem, const char *golden_dir, int32_t threads) {
  invoke_no_alloc_how(stem, golden_dir, threads, false);
}

/* Streams (issue 27): every synthetic stream of tests/golden/streams (the SVDF's state in a
 * variable tensor) replayed by the stream harness, each invoke counted through its hooks; the
 * outputs must match the golden too (a stream that allocates nothing but computes garbage fails). */
static void stream_arm(void *ctx, ar_interp_t *in, int32_t step) {
  (void)ctx, (void)in, (void)step;
  arm();
}
static void stream_disarm(void *ctx, ar_interp_t *in, int32_t step) {
  (void)in, (void)step;
  *(unsigned long *)ctx += disarm();
}

START_TEST(test_stream_no_alloc) {
  for (int m = 0; m < ar_trm_n_models; m++) {
    char model[256], dir[512], msg[AR_MSG_BYTES] = "";
    snprintf(model, sizeof model, "/tmp/check_noalloc_%s_%d.tflite", ar_trm_models[m].name, (int)getpid());
    snprintf(dir, sizeof dir, "%s/tests/golden/streams/%s", AR_SRCDIR, ar_trm_models[m].name);
    size_t n = 0;
    uint8_t *b = ar_trm_models[m].build(&n);
    FILE *f = fopen(model, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(b, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
    free(b);
    unsigned long calls = 0;
    ar_ts_hooks_t hooks = {.ctx = &calls, .before_invoke = stream_arm, .after_invoke = stream_disarm};
    ar_ts_report_t rep;
    int rc = ar_ts_run_model(model, dir, NULL, &hooks, &rep, msg, sizeof msg);
    unlink(model);
    ck_assert_msg(rc == 0, "%s: %s", ar_trm_models[m].name, msg);
    ck_assert_msg(rep.bad_steps == 0, "%s: %s", ar_trm_models[m].name, rep.first_bad);
    printf("noalloc stream %-20s %d invokes: %lu allocation calls (%s)\n", ar_trm_models[m].name, rep.steps, calls,
           COUNTS_MMAP ? "malloc family + mmap" : "ASan malloc/free hooks");
    ck_assert_msg(calls == 0, "%s: %lu heap allocation calls in %d stream invokes", ar_trm_models[m].name, calls,
                  rep.steps);
  }
}
END_TEST

/* Streams of ../shared/golden_state, one interpreter each (tests/ar_test_stream.h: resets where
 * the golden's meta says, by the interpreter's own ar_interp_reset_state - 0 / the zero point):
 * every invoke allocates nothing and every output matches its golden. */
static void golden_streams_no_alloc(const char *const *names, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char model[512], dir[512], msg[AR_MSG_BYTES] = "";
    snprintf(model, sizeof model, "%s/%s.tflite", ar_ts_models_dir(), names[i]);
    snprintf(dir, sizeof dir, "%s/%s", ar_ts_golden_dir(), names[i]);
    unsigned long calls = 0;
    ar_ts_hooks_t hooks = {.ctx = &calls, .before_invoke = stream_arm, .after_invoke = stream_disarm};
    ar_ts_report_t rep;
    int rc = ar_ts_run_model(model, dir, NULL, &hooks, &rep, msg, sizeof msg);
    ck_assert_msg(rc == 0, "%s: %s", names[i], msg);
    ck_assert_msg(rep.bad_steps == 0, "%s: %s", names[i], rep.first_bad);
    printf("noalloc stream %-32s %d invokes: %lu allocation calls (%s)\n", names[i], rep.steps, calls,
           COUNTS_MMAP ? "malloc family + mmap" : "ASan malloc/free hooks");
    ck_assert_msg(calls == 0, "%s: %lu heap allocation calls in %d stream invokes", names[i], calls, rep.steps);
  }
}

/* The integer LSTM streams (kernels/lstm_int.c, issue 27; coral's int8 output state resets to its
 * zero point -1). Skips when ../shared/models_state is absent. */
START_TEST(test_integer_lstm_streams_no_alloc) {
  if (!ar_ts_have_state_models("integer LSTM streams without allocation")) return;
  static const char *const names[] = {"tflm_mnist_lstm_int8", "coral_keras_lstm_mnist_ptq"};
  golden_streams_no_alloc(names, sizeof names / sizeof names[0]);
}
END_TEST

/* The control-flow and resource-variable streams (issue 27; the microWakeWord models keep their
 * ring buffers in resource variables): CALL_ONCE's init run and every WHILE iteration (nested too)
 * included. Skips when ../shared/models_state is absent. */
START_TEST(test_control_flow_streams_no_alloc) {
  if (!ar_ts_have_state_models("control-flow streams without allocation")) return;
  static const char *const names[] = {"litert_call_once_mul", "litert_resource_vars_calibrated",
                                      "litert_multi_subgraphs_while", "litert_nested_while", "mww_v1_alexa",
                                      "mww_v2_hey_jarvis"};
  golden_streams_no_alloc(names, sizeof names / sizeof names[0]);
}
END_TEST

/* The audio front ends of ../shared/models_more (issue 28; skipped when absent): YAMNet on a raw
 * waveform (RFFT2D, COMPLEX_ABS) over its 2-step golden stream, and micro_speech's preprocessor
 * (TFLM's Signal ops, the spectral subtraction's estimate in the state slot) over 20 frames of a
 * tone, each invoke counted. */
START_TEST(test_audio_front_ends_no_alloc) {
  const char *more = getenv("AR_MODELS_MORE_DIR"), *gmore = getenv("AR_GOLDEN_MORE_DIR");
  char model[512], dir[512], msg[AR_MSG_BYTES] = "";
  snprintf(model, sizeof model, "%s/tfsup_yamnet_wavin_quantized_mel_relu6.tflite",
           more ? more : AR_SRCDIR "/../shared/models_more");
  snprintf(dir, sizeof dir, "%s/tfsup_yamnet_wavin_quantized_mel_relu6", gmore ? gmore : AR_SRCDIR "/../shared/golden_more");
  if (access(model, R_OK) != 0 || access(dir, R_OK) != 0) {
    printf("SKIP audio front ends without allocation: %s or %s is absent\n", model, dir);
    return;
  }
  unsigned long calls = 0;
  ar_ts_hooks_t hooks = {.ctx = &calls, .before_invoke = stream_arm, .after_invoke = stream_disarm};
  ar_ts_report_t rep;
  int rc = ar_ts_run_model(model, dir, NULL, &hooks, &rep, msg, sizeof msg);
  ck_assert_msg(rc == 0, "yamnet: %s", msg);
  ck_assert_int_eq(rep.steps, 2);
  printf("noalloc stream %-32s %d invokes: %lu allocation calls\n", "yamnet_wavin", rep.steps, calls);
  ck_assert_msg(calls == 0, "yamnet: %lu heap allocation calls in %d invokes", calls, rep.steps);

  snprintf(model, sizeof model, "%s/tflm_audio_preprocessor_float.tflite", more ? more : AR_SRCDIR "/../shared/models_more");
  ar_model_t *m = NULL;
  ar_interp_t *in = NULL;
  ck_assert_msg(ar_model_load(model, &m, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0, "%s", msg);
  ck_assert_msg(ar_interp_place_owned(in, msg, sizeof msg) == 0, "%s", msg);
  int16_t *x = ar_interp_input(in, 0)->data;
  for (int i = 0; i < 480; i++) x[i] = (int16_t)(8000 * sin(2 * 3.14159265358979 * 1000 * i / 16000.0));
  calls = 0;
  for (int k = 0; k < 20; k++) {
    arm();
    const int irc = ar_interp_invoke(in);
    calls += disarm();   /* before the assertion: Check's own bookkeeping allocates */
    ck_assert_int_eq(irc, 0);
  }
  printf("noalloc %-40s 20 invokes: %lu allocation calls\n", "tflm_audio_preprocessor_float", calls);
  ck_assert_msg(calls == 0, "audio preprocessor: %lu heap allocation calls in 20 invokes", calls);
  ar_interp_free(in);
  ar_model_free(m);
}
END_TEST

/* The same stateful streams on two state slots, a switch between every invoke (A, B, A, B, ...):
 * the bind (ar_interp_bind_state) and the invoke after it allocate nothing, and each slot
 * reproduces its own golden stream. */
START_TEST(test_state_slot_switch_no_alloc) {
  if (!ar_ts_have_state_models("state-slot switches without allocation")) return;
  static const char *const names[] = {"litert_call_once_mul", "litert_resource_vars_calibrated", "mww_v1_alexa"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char model[512], dir[512], msg[AR_MSG_BYTES] = "", plan[128];
    snprintf(model, sizeof model, "%s/%s.tflite", ar_ts_models_dir(), names[i]);
    snprintf(dir, sizeof dir, "%s/%s", ar_ts_golden_dir(), names[i]);
    ar_ts_meta_t meta;
    ck_assert_msg(ar_ts_read_meta(dir, &meta, msg, sizeof msg) == 0, "%s", msg);
    ck_assert_int_le(2 * meta.steps, (int)sizeof plan - 1);
    for (int32_t k = 0; k < 2 * meta.steps; k++) plan[k] = (char)('A' + k % 2);
    plan[2 * meta.steps] = '\0';
    ar_model_t *m = NULL;
    ar_interp_t *in = NULL;
    ck_assert_msg(ar_model_load(model, &m, msg, sizeof msg) == 0 && ar_interp_new(m, NULL, &in, msg, sizeof msg) == 0 &&
                      ar_interp_place_owned(in, msg, sizeof msg) == 0,
                  "%s: %s", names[i], msg);
    unsigned long calls = 0;
    ar_ts_hooks_t hooks = {.ctx = &calls, .before_invoke = stream_arm, .after_invoke = stream_disarm};
    ar_ts_report_t rep;
    int rc = ar_ts_replay_slots(in, dir, &meta, plan, &hooks, &rep, msg, sizeof msg);
    ck_assert_msg(rc == 0, "%s: %s", names[i], msg);
    ck_assert_msg(rep.bad_steps == 0, "%s: %s", names[i], rep.first_bad);
    printf("noalloc slot switch %-27s %d invokes, a switch before each: %lu allocation calls\n", names[i], rep.steps,
           calls);
    ck_assert_msg(calls == 0, "%s: %lu heap allocation calls in %d invokes with switches", names[i], calls, rep.steps);
    ar_interp_free(in);
    ar_model_free(m);
  }
}
END_TEST

/* The float LSTM streams of ../shared/golden_state (issue 27, kernels/lstm.c: gates in planned
 * scratch, the states variable tensors updated in place): no invoke allocates, outputs match. */
START_TEST(test_lstm_streams_no_alloc) {
  if (!ar_ts_have_state_models("LSTM streams without allocation")) return;
  static const char *const names[] = {"tflm_mnist_lstm_float", "litert_lstm", "litert_unidirectional_sequence_lstm"};
  golden_streams_no_alloc(names, sizeof names / sizeof names[0]);
}
END_TEST

START_TEST(test_invoke_no_alloc) {
  invoke_no_alloc(ar_test_models[_i], ar_test_golden_dir(), 1);
}
END_TEST

/* The profiling path (arenactl bench --profile): a clock pair around each operator into the
 * caller's buffer, nothing allocated either. */
START_TEST(test_invoke_profiled_no_alloc) {
  invoke_no_alloc_how(ar_test_models[_i], ar_test_golden_dir(), 1, true);
}
END_TEST

/* The same with threads = 2: the pool's helper runs kernels (GEMM bands with OpenBLAS, im2col,
 * depthwise rows) and allocates nothing either. */
START_TEST(test_invoke_no_alloc_threads) {
  invoke_no_alloc(ar_test_models[_i], ar_test_golden_dir(), 2);
}
END_TEST

/* pose_detection (models_extra): its 38 sparse 1x1 filters are multiplied as stored
 * (kernels/sparse_conv.c: tiles in planned scratch, float16 widened on the stack). */
START_TEST(test_sparse_invoke_no_alloc) {
  char path[1024];
  if (access(ar_test_model_path(path, sizeof path, "pose_detection"), R_OK) != 0) {
    printf("noalloc pose_detection: skipped (%s absent)\n", path);
    return;
  }
  invoke_no_alloc("pose_detection", ar_test_golden_extra_dir(), 1);
}
END_TEST


/* The quantized models of ../shared/models_q (when present): the golden_q input of their first case
 * (photo, else random), 20 counted invokes (5 for YOLOv8n and DeepLab, the large ones) after one
 * warm-up. A model whose kernels have not landed yet cannot be built: printed, not failed here
 * (check_quant_models holds each model to its golden). */
static void quant_invoke_no_alloc(const char *stem, int32_t threads) {
  if (!ar_test_have_qmodels()) {
    printf("noalloc %s: skipped (%s absent)\n", stem, ar_test_models_q_dir());
    return;
  }
  install_counter();
  settle_openblas_threads();
  char path[1024], msg[AR_MSG_BYTES] = "";
  snprintf(path, sizeof path, "%s/%s.tflite", ar_test_models_q_dir(), stem);
  ar_model_t *m = NULL;
  ar_interp_t *in = NULL;
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  opt.threads = threads;
  int rc = ar_model_load(path, &m, msg, sizeof msg);
  if (rc == 0) rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
  if (rc != 0) {
    printf("noalloc %s: not runnable yet (%.200s)\n", stem, msg);
    ar_model_free(m);
    return;
  }
  rc = ar_interp_place_owned(in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", stem, msg);
  void *inputs[16] = {0};
  size_t bytes[16] = {0};
  int32_t n_in = ar_interp_n_inputs(in);
  ck_assert_int_le(n_in, 16);
  for (int32_t i = 0; i < n_in; i++) {
    snprintf(path, sizeof path, "%s/%s/photo/input_%d.bin", ar_test_golden_q_dir(), stem, i);
    inputs[i] = ar_test_read_file(path, &bytes[i]);
    if (!inputs[i]) {
      snprintf(path, sizeof path, "%s/%s/random/input_%d.bin", ar_test_golden_q_dir(), stem, i);
      inputs[i] = ar_test_read_file(path, &bytes[i]);
    }
    ck_assert_msg(inputs[i] != NULL, "cannot read %s", path);
    ck_assert_uint_eq(bytes[i], ar_interp_input(in, i)->bytes);
  }
  const int runs = strstr(stem, "yolo") || strstr(stem, "deeplab") ? 5 : 20;
  unsigned long first = 0, total = 0, worst = 0;
  __atomic_store_n(&n_other, 0, __ATOMIC_SEQ_CST);
  for (int r = -1; r < runs; r++) {
    for (int32_t i = 0; i < n_in; i++) memcpy(ar_interp_input(in, i)->data, inputs[i], bytes[i]);
    arm();
    rc = ar_interp_invoke(in);
    unsigned long c = disarm();
    ck_assert_int_eq(rc, 0);
    if (r < 0) {
      first = c;   /* warm-up: printed, not asserted */
      continue;
    }
    total += c;
    if (c > worst) worst = c;
  }
  const unsigned long other = __atomic_load_n(&n_other, __ATOMIC_SEQ_CST);
  printf("noalloc %-52s %d thread(s): first invoke %lu calls; %d invokes: %lu allocation calls (%s); "
         "other threads meanwhile: %lu\n", stem, (int)threads, first, runs, total,
         COUNTS_MMAP ? "malloc family + mmap" : "ASan malloc/free hooks", other);
  ck_assert_msg(total == 0, "%s: %lu heap allocation calls in %d invokes (worst invoke %lu)", stem, total, runs,
                worst);
  if (threads > 1)
    ck_assert_msg(other == 0, "%s, %d threads: %lu allocation calls on other threads in %d invokes", stem,
                  (int)threads, other, runs);
  for (int32_t i = 0; i < n_in; i++) free(inputs[i]);
  ar_interp_free(in);
  ar_model_free(m);
}

START_TEST(test_quant_invoke_no_alloc) {
  quant_invoke_no_alloc(ar_test_qmodels[_i], 1);
}
END_TEST

/* The same with threads = 2: the pool's helper runs the integer kernels' chunks (GEMM row blocks
 * and tiles, depthwise rows, elementwise pieces, per-thread scratch slots) and allocates nothing. */
START_TEST(test_quant_invoke_no_alloc_threads) {
  quant_invoke_no_alloc(ar_test_qmodels[_i], 2);
}
END_TEST

/* ---- the shape/index kernels, BATCH_MATMUL, builtin TRANSPOSE_CONV and the SSD post-process,
 * which no shipped model uses yet: prepare + init outside the window, then 10 evals armed. ---- */

static ar_tview_t nv(ar_dtype_t dt, void *data, bool is_const, int rank, const int32_t *dims) {
  ar_tview_t t;
  memset(&t, 0, sizeof t);
  t.dtype = dt; t.data = data; t.rank = rank; t.is_constant = is_const;
  uint64_t n = 1;
  for (int i = 0; i < rank; i++) { t.dims[i] = dims[i]; n *= (uint64_t)dims[i]; }
  t.bytes = n * ar_dtype_size(dt);
  return t;
}

/* Prepare and init `nd` (must succeed), then count the calls of 10 evals. */
static unsigned long evals_allocs(ar_node_t *nd) {
  const ar_kernel_t *k = ar_kernel_for(nd->op);
  char msg[AR_MSG_BYTES] = "";
  ck_assert_ptr_nonnull(k);
  int rc = k->prepare(nd, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", k->name, msg);
  nd->scratch = nd->scratch_bytes ? malloc(nd->scratch_bytes) : NULL;
  nd->state = nd->state_bytes ? malloc(nd->state_bytes) : NULL;
  if (k->init) k->init(nd);
  arm();
  for (int r = 0; r < 10; r++) k->eval(nd);
  unsigned long c = disarm();
  printf("noalloc kernel %-30s 10 evals: %lu allocation calls\n", k->name, c);
  free(nd->scratch);
  free(nd->state);
  nd->scratch = nd->state = NULL;
  return c;
}

static ar_node_t nnode(ar_op_t op, const ar_options_t *o, int n_in, ar_tview_t **in, int n_out,
                       ar_tview_t **out) {
  ar_node_t nd;
  memset(&nd, 0, sizeof nd);
  nd.op = op; nd.options = o; nd.n_inputs = n_in; nd.n_outputs = n_out; nd.threads = 1;
  nd.inputs = in;   /* the caller's arrays, which outlive the node */
  nd.outputs = out;
  return nd;
}

START_TEST(test_new_kernels_no_alloc) {
  install_counter();
  settle_openblas_threads();
  static float x[4 * 6 * 8 * 3], y[4096], z[4096], w[4096];
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = (float)i * 0.01f;
  const int32_t dx[4] = {4, 6, 8, 3};
  ar_tview_t tx = nv(AR_DTYPE_FLOAT32, x, false, 4, dx);
  unsigned long total = 0;
  ar_options_t o;

  { /* STRIDED_SLICE x[1:, ::-2, 1:7:3, :] */
    int32_t b[4] = {1, 0, 1, 0}, e[4] = {4, 0, 7, 3}, st[4] = {1, -2, 3, 1}, d1[1] = {4};
    int32_t dout[4] = {3, 3, 2, 3};
    ar_tview_t tb = nv(AR_DTYPE_INT32, b, true, 1, d1), te = nv(AR_DTYPE_INT32, e, true, 1, d1);
    ar_tview_t ts = nv(AR_DTYPE_INT32, st, true, 1, d1), to = nv(AR_DTYPE_FLOAT32, y, false, 4, dout);
    memset(&o, 0, sizeof o);
    o.strided_slice.begin_mask = 2; o.strided_slice.end_mask = 2;
    ar_tview_t *in[] = {&tx, &tb, &te, &ts}, *out[] = {&to};
    ar_node_t nd = nnode(AR_OP_STRIDED_SLICE, &o, 4, in, 1, out);
    total += evals_allocs(&nd);
  }
  { /* TRANSPOSE NHWC -> NCHW, TILE (2,1,1,1) */
    int32_t p[4] = {0, 3, 1, 2}, m[4] = {2, 1, 1, 1}, d1[1] = {4}, dt[4] = {4, 3, 6, 8}, dti[4] = {8, 6, 8, 3};
    ar_tview_t tp = nv(AR_DTYPE_INT32, p, true, 1, d1), to = nv(AR_DTYPE_FLOAT32, y, false, 4, dt);
    ar_tview_t *in[] = {&tx, &tp}, *out[] = {&to};
    ar_node_t nd = nnode(AR_OP_TRANSPOSE, NULL, 2, in, 1, out);
    total += evals_allocs(&nd);
    ar_tview_t tm = nv(AR_DTYPE_INT32, m, true, 1, d1), to2 = nv(AR_DTYPE_FLOAT32, y, false, 4, dti);
    ar_tview_t *in2[] = {&tx, &tm}, *out2[] = {&to2};
    nd = nnode(AR_OP_TILE, NULL, 2, in2, 1, out2);
    total += evals_allocs(&nd);
  }
  { /* GATHER axis 2 with int64 indices, GATHER_ND depth 2, SPLIT axis 1 in 3, PACK of 2 */
    int64_t gi[3] = {7, 0, 3};
    int32_t d3[1] = {3}, dg[4] = {4, 6, 3, 3};
    ar_tview_t ti = nv(AR_DTYPE_INT64, gi, false, 1, d3), to = nv(AR_DTYPE_FLOAT32, y, false, 4, dg);
    memset(&o, 0, sizeof o);
    o.gather.axis = 2;
    ar_tview_t *in[] = {&tx, &ti}, *out[] = {&to};
    ar_node_t nd = nnode(AR_OP_GATHER, &o, 2, in, 1, out);
    total += evals_allocs(&nd);
    int32_t ni[4] = {3, 5, 0, 1}, dn[2] = {2, 2}, dno[3] = {2, 8, 3};
    ar_tview_t tn = nv(AR_DTYPE_INT32, ni, false, 2, dn), tno = nv(AR_DTYPE_FLOAT32, y, false, 3, dno);
    ar_tview_t *in2[] = {&tx, &tn}, *out2[] = {&tno};
    nd = nnode(AR_OP_GATHER_ND, NULL, 2, in2, 1, out2);
    total += evals_allocs(&nd);
    int32_t ax[1] = {1}, ds[4] = {4, 2, 8, 3};
    ar_tview_t ta = nv(AR_DTYPE_INT32, ax, true, 0, NULL);
    ar_tview_t s0 = nv(AR_DTYPE_FLOAT32, y, false, 4, ds), s1 = nv(AR_DTYPE_FLOAT32, z, false, 4, ds);
    ar_tview_t s2 = nv(AR_DTYPE_FLOAT32, w, false, 4, ds);
    memset(&o, 0, sizeof o);
    o.split.num_splits = 3;
    ar_tview_t *in3[] = {&ta, &tx}, *out3[] = {&s0, &s1, &s2};
    nd = nnode(AR_OP_SPLIT, &o, 2, in3, 3, out3);
    total += evals_allocs(&nd);
    static float pk[2 * 4 * 2 * 8 * 3];
    int32_t dp[5] = {4, 2, 2, 8, 3};
    ar_tview_t tpk = nv(AR_DTYPE_FLOAT32, pk, false, 5, dp);
    memset(&o, 0, sizeof o);
    o.pack.count = 2; o.pack.axis = 1;
    ar_tview_t *in4[] = {&s0, &s1}, *out4[] = {&tpk};
    nd = nnode(AR_OP_PACK, &o, 2, in4, 1, out4);
    total += evals_allocs(&nd);
  }
  { /* RESIZE_NEAREST_NEIGHBOR 6x8 -> 9x5, BATCH_MATMUL [4,6,24] x [24,5] */
    int32_t sz[2] = {9, 5}, d2[1] = {2}, dr[4] = {4, 9, 5, 3};
    ar_tview_t ts = nv(AR_DTYPE_INT32, sz, true, 1, d2), to = nv(AR_DTYPE_FLOAT32, y, false, 4, dr);
    memset(&o, 0, sizeof o);
    o.resize_nearest.half_pixel_centers = true;
    ar_tview_t *in[] = {&tx, &ts}, *out[] = {&to};
    ar_node_t nd = nnode(AR_OP_RESIZE_NEAREST_NEIGHBOR, &o, 2, in, 1, out);
    total += evals_allocs(&nd);
    int32_t da[3] = {4, 6, 24}, db[2] = {24, 5}, dc[3] = {4, 6, 5};
    ar_tview_t ta = nv(AR_DTYPE_FLOAT32, x, false, 3, da), tb = nv(AR_DTYPE_FLOAT32, z, true, 2, db);
    ar_tview_t tc = nv(AR_DTYPE_FLOAT32, y, false, 3, dc);
    memset(&o, 0, sizeof o);
    ar_tview_t *in2[] = {&ta, &tb}, *out2[] = {&tc};
    nd = nnode(AR_OP_BATCH_MATMUL, &o, 2, in2, 1, out2);
    total += evals_allocs(&nd);
  }
  { /* TRANSPOSE_CONV 6x8x3 -> 12x16x5, 3x3 stride 2 SAME, bias, RELU */
    int32_t os[4] = {4, 12, 16, 5}, d4[1] = {4}, dw[4] = {5, 3, 3, 3}, db[1] = {5};
    static float out[4 * 12 * 16 * 5];
    ar_tview_t tos = nv(AR_DTYPE_INT32, os, true, 1, d4), tw = nv(AR_DTYPE_FLOAT32, z, true, 4, dw);
    ar_tview_t tb = nv(AR_DTYPE_FLOAT32, w, true, 1, db), to = nv(AR_DTYPE_FLOAT32, out, false, 4, os);
    memset(&o, 0, sizeof o);
    o.transpose_conv = (ar_transpose_conv_options_t){AR_PADDING_SAME, 2, 2, AR_ACT_RELU};
    ar_tview_t *in[] = {&tos, &tw, &tx, &tb}, *outs[] = {&to};
    ar_node_t nd = nnode(AR_OP_TRANSPOSE_CONV, &o, 4, in, 1, outs);
    total += evals_allocs(&nd);
  }
  { /* TFLite_Detection_PostProcess, 64 anchors, 3 classes + background, both NMS modes */
    enum { B = 64 };
    static float enc[B * 4], cls[B * 4], anc[B * 4], ob[20 * 4], oc[20], osc[20], on[1];
    for (int i = 0; i < B; i++) {
      anc[4 * i] = (float)(i % 8) * 0.1f; anc[4 * i + 1] = (float)(i / 8) * 0.1f;
      anc[4 * i + 2] = anc[4 * i + 3] = 0.2f;
      for (int c = 0; c < 4; c++) cls[4 * i + c] = (float)((i * 7 + c * 13) % 17) / 17.0f;
      enc[4 * i] = enc[4 * i + 1] = 0.1f;
    }
    int32_t de[3] = {1, B, 4}, da[2] = {B, 4}, d0[3] = {1, 20, 4}, d1[2] = {1, 20}, d3[1] = {1};
    ar_tview_t te = nv(AR_DTYPE_FLOAT32, enc, false, 3, de), tc = nv(AR_DTYPE_FLOAT32, cls, false, 3, de);
    ar_tview_t ta = nv(AR_DTYPE_FLOAT32, anc, true, 2, da);
    ar_tview_t t0 = nv(AR_DTYPE_FLOAT32, ob, false, 3, d0), t1 = nv(AR_DTYPE_FLOAT32, oc, false, 2, d1);
    ar_tview_t t2 = nv(AR_DTYPE_FLOAT32, osc, false, 2, d1), t3 = nv(AR_DTYPE_FLOAT32, on, false, 1, d3);
    memset(&o, 0, sizeof o);
    o.detection_postprocess = (ar_detection_postprocess_options_t){
        .max_detections = 10, .max_classes_per_detection = 2, .detections_per_class = 5,
        .num_classes = 3, .nms_score_threshold = 0.2f, .nms_iou_threshold = 0.5f,
        .y_scale = 10, .x_scale = 10, .h_scale = 5, .w_scale = 5};
    ar_tview_t *in[] = {&te, &tc, &ta}, *outs[] = {&t0, &t1, &t2, &t3};
    ar_node_t nd = nnode(AR_OP_DETECTION_POSTPROCESS, &o, 3, in, 4, outs);
    total += evals_allocs(&nd);
    o.detection_postprocess.use_regular_nms = true;
    total += evals_allocs(&nd);
  }
  ck_assert_msg(total == 0, "%lu heap allocation calls in the kernels' evals", total);
}
END_TEST

/* ---------------------------------------------------------------- resizing */

START_TEST(test_resize_batch) {
  install_counter();
  settle_openblas_threads();
  size_t bytes = 0;
  uint8_t *file = ar_tm_batch_model(&bytes);
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  int rc = ar_model_load_buffer(file, bytes, &m, msg, sizeof msg);
  ck_assert_msg(rc == 0, "built model: %s", msg);
  ar_interp_t *in = NULL;
  rc = ar_interp_new(m, NULL, &in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert(ar_interp_input_resizable(in, 0));
  ck_assert(!ar_interp_needs_prepare(in));
  ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
  uint64_t first_arena = ar_interp_arena_bytes(in);

  enum { MAXB = 8 };
  static float items[MAXB][AR_TM_BATCH_H * AR_TM_BATCH_W * AR_TM_BATCH_C], want[MAXB][AR_TM_BATCH_OUT];
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int b = 0; b < MAXB; b++) {
    for (int i = 0; i < AR_TM_BATCH_H * AR_TM_BATCH_W * AR_TM_BATCH_C; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      items[b][i] = (float)((int)(seed >> 40) % 2001 - 1000) / 500.0f;
    }
    ar_tm_batch_by_hand(items[b], want[b]);
  }
  static const int batches[] = {1, 4, 2, 8, 1};
  uint64_t arena_at[5];
  for (int s = 0; s < 5; s++) {
    int nb = batches[s];
    const int32_t dims[4] = {nb, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C};
    rc = ar_interp_resize_input(in, 0, 4, dims, msg, sizeof msg);
    ck_assert_msg(rc == 0, "resize to batch %d: %s", nb, msg);
    if (ar_interp_needs_prepare(in)) {
      ck_assert_int_eq(ar_interp_invoke(in), AR_ESTATE);   /* not before the re-plan */
      rc = ar_interp_prepare(in, msg, sizeof msg);
      ck_assert_msg(rc == 0, "prepare at batch %d: %s", nb, msg);
      ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
    }
    ck_assert_int_eq(ar_planner_verify(ar_interp_planner(in), msg, sizeof msg), 0);
    arena_at[s] = ar_interp_arena_bytes(in);
    const ar_tview_t *y = ar_interp_output(in, 0);
    ck_assert_int_eq(y->rank, 2);
    ck_assert_int_eq(y->dims[0], nb);
    ck_assert_int_eq(y->dims[1], AR_TM_BATCH_OUT);
    ck_assert_uint_eq(y->bytes, (uint64_t)nb * AR_TM_BATCH_OUT * sizeof(float));
    ar_tview_t *x = ar_interp_input(in, 0);
    ck_assert_uint_eq(x->bytes, (uint64_t)nb * sizeof items[0]);
    unsigned long allocs = 0;
    for (int r = 0; r < 5; r++) {
      /* Items rotate with r so that every output row is checked against a different item. */
      for (int b = 0; b < nb; b++) memcpy((float *)x->data + b * AR_TM_BATCH_H * AR_TM_BATCH_W * AR_TM_BATCH_C, items[(b + r) % MAXB], sizeof items[0]);
      arm();
      rc = ar_interp_invoke(in);
      allocs += disarm();
      ck_assert_int_eq(rc, 0);
      const float *got = y->data;
      for (int b = 0; b < nb; b++)
        for (int j = 0; j < AR_TM_BATCH_OUT; j++) {
          float w = want[(b + r) % MAXB][j];
          ck_assert_msg(fabsf(got[b * AR_TM_BATCH_OUT + j] - w) <= 1e-5f * (1.0f + fabsf(w)),
                        "batch %d item %d y[%d] = %g, by hand %g", nb, b, j, got[b * AR_TM_BATCH_OUT + j], w);
        }
    }
    printf("resize batch %d: arena %llu B, persistent %llu B, 5 invokes: %lu allocation calls\n", nb,
           (unsigned long long)arena_at[s], (unsigned long long)ar_interp_persistent_bytes(in), allocs);
    ck_assert_msg(allocs == 0, "batch %d: %lu allocation calls in 5 invokes", nb, allocs);
  }
  /* The arena follows the batch: the plan is for the current shapes, not the largest seen. */
  ck_assert_uint_eq(arena_at[0], first_arena);
  ck_assert_uint_gt(arena_at[1], arena_at[0]);
  ck_assert_uint_lt(arena_at[2], arena_at[1]);
  ck_assert_uint_gt(arena_at[2], arena_at[0]);
  ck_assert_uint_gt(arena_at[3], arena_at[1]);
  ck_assert_uint_eq(arena_at[4], first_arena);
  ck_assert_uint_ge(arena_at[3], 8 * (uint64_t)(AR_TM_BATCH_H * AR_TM_BATCH_W * AR_TM_BATCH_C) * sizeof(float));

  /* Dims the signature fixes cannot change, nor the rank; errors leave the plan as it is. */
  const int32_t bad_hw[4] = {1, 5, AR_TM_BATCH_W, AR_TM_BATCH_C}, bad_neg[4] = {0, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C};
  ck_assert_int_eq(ar_interp_resize_input(in, 0, 4, bad_hw, msg, sizeof msg), AR_ESHAPE);
  ck_assert_ptr_nonnull(strstr(msg, "dim 1 is 5, but the model fixes it at 4"));
  ck_assert_int_eq(ar_interp_resize_input(in, 0, 3, bad_hw, msg, sizeof msg), AR_ESHAPE);
  ck_assert_int_eq(ar_interp_resize_input(in, 0, 4, bad_neg, msg, sizeof msg), AR_ESHAPE);
  const int32_t huge[4] = {INT32_MAX / 16, AR_TM_BATCH_H, AR_TM_BATCH_W, AR_TM_BATCH_C};
  ck_assert_int_eq(ar_interp_resize_input(in, 0, 4, huge, msg, sizeof msg), AR_EOVERFLOW);
  ck_assert(!ar_interp_needs_prepare(in));
  ck_assert_int_eq(ar_interp_invoke(in), 0);
  ar_interp_free(in);
  ar_model_free(m);
  free(file);
}
END_TEST

/* A one-operator model whose graph input 1 sets the output shape (tensors t[0..2], graph inputs 0
 * and 1, output 2), loaded and placed; its first invoke must refuse with AR_ESTATE because the value
 * is not known yet. *file and *m are the caller's to free. */
static ar_interp_t *shape_input_model(ar_tm_tensor_t *t, const ar_tm_op_t *op, uint8_t **file,
                                      ar_model_t **m) {
  const int32_t gin[] = {0, 1}, gout[] = {2};
  size_t bytes = 0;
  *file = ar_tm_build(t, 3, op, 1, gin, 2, gout, 1, &bytes);
  char msg[AR_MSG_BYTES] = "";
  int rc = ar_model_load_buffer(*file, bytes, m, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s", msg);
  ar_interp_t *in = NULL;
  rc = ar_interp_new(*m, NULL, &in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert(ar_interp_input_sets_shape(in, 1));
  ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
  ck_assert_int_eq(ar_interp_invoke(in), AR_ESTATE);   /* the value is not known yet */
  return in;
}

/* Give input 1 a new value (vb bytes): the interpreter must re-derive the shapes, re-prepare and be
 * placed again. */
static void set_new_shape_value(ar_interp_t *in, const void *val, uint64_t vb) {
  char msg[AR_MSG_BYTES] = "";
  int rc = ar_interp_set_shape_input(in, 1, val, vb, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert(ar_interp_needs_prepare(in));   /* every step changes the value */
  rc = ar_interp_prepare(in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s", msg);
  ck_assert_int_eq(ar_interp_place_owned(in, msg, sizeof msg), 0);
}

/* Three invokes at the same value of input 1 (nothing to re-derive), input 0 = x (xb bytes);
 * returns the allocation calls counted inside them. */
static unsigned long invoke_at_same_value(ar_interp_t *in, const float *x, size_t xb, const void *val,
                                          uint64_t vb) {
  char msg[AR_MSG_BYTES] = "";
  unsigned long allocs = 0;
  for (int r = 0; r < 3; r++) {
    ck_assert_int_eq(ar_interp_set_shape_input(in, 1, val, vb, msg, sizeof msg), 0);
    ck_assert(!ar_interp_needs_prepare(in));   /* same value: nothing to re-derive */
    memcpy(ar_interp_input(in, 0)->data, x, xb);
    memcpy(ar_interp_input(in, 1)->data, val, vb);
    arm();
    int rc = ar_interp_invoke(in);
    allocs += disarm();
    ck_assert_int_eq(rc, 0);
  }
  return allocs;
}

/* PAD whose paddings are graph input 1, and RESHAPE whose shape is graph input 1: the output
 * shape is re-derived before the invoke that needs a new value, and only then. */
/* A resizable inverted-residual pair: x [1,96,96,16] (shape_signature [-1,-1,-1,16]) -> CONV_2D
 * 1x1 16->64 with bias and fused RELU6 -> DEPTHWISE_CONV_2D 3x3 SAME stride 2 (multiplier 1, bias)
 * -> y. At 96x96 the expansion output is 2.25 MiB, so with fusion on (AVX-512F) the conv runs
 * inside the depthwise at 2 threads. Resized to smaller, larger and batched shapes, the fused
 * interpreter re-prepares the conv inside the depthwise: its outputs are byte for byte those of an
 * unfused one, match a double-precision computation by hand, and its invokes allocate nothing. */
enum { IRF_C = 16, IRF_E = 64, IRF_HW = 96 };
static float irf_w1[IRF_E * IRF_C], irf_b1[IRF_E], irf_wd[9 * IRF_E], irf_bd[IRF_E];

static void irf_by_hand(const float *x, int32_t n, int32_t h, int32_t w, float *y, int32_t oh, int32_t ow) {
  const int32_t pt = AR_MAX(0, ((oh - 1) * 2 + 3 - h) / 2), pl = AR_MAX(0, ((ow - 1) * 2 + 3 - w) / 2);
  for (int32_t b = 0; b < n; b++)
    for (int32_t oy = 0; oy < oh; oy++)
      for (int32_t ox = 0; ox < ow; ox++)
        for (int32_t e = 0; e < IRF_E; e++) {
          double acc = irf_bd[e];
          for (int32_t ky = 0; ky < 3; ky++)
            for (int32_t kx = 0; kx < 3; kx++) {
              const int32_t iy = oy * 2 + ky - pt, ix = ox * 2 + kx - pl;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              const float *px = x + (((int64_t)b * h + iy) * w + ix) * IRF_C;
              double c = irf_b1[e];
              for (int32_t i = 0; i < IRF_C; i++) c += (double)px[i] * irf_w1[e * IRF_C + i];
              c = c < 0 ? 0 : c > 6 ? 6 : c;
              acc += c * irf_wd[(ky * 3 + kx) * IRF_E + e];
            }
          y[(((int64_t)b * oh + oy) * ow + ox) * IRF_E + e] = (float)acc;
        }
}

START_TEST(test_resize_fused_pair) {
  install_counter();
  settle_openblas_threads();
  uint64_t seed = 0x243f6a8885a308d3ull;
#define IRF_RND() (seed = seed * 6364136223846793005ull + 1442695040888963407ull, (float)((int)(seed >> 40) % 2001 - 1000) / 1000.0f)
  for (int i = 0; i < IRF_E * IRF_C; i++) irf_w1[i] = IRF_RND() * 0.5f;
  for (int i = 0; i < IRF_E; i++) irf_b1[i] = IRF_RND(), irf_bd[i] = IRF_RND() * 0.25f;
  for (int i = 0; i < 9 * IRF_E; i++) irf_wd[i] = IRF_RND() * 0.5f;
  ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_FLOAT32, 4, {1, IRF_HW, IRF_HW, IRF_C}, true, {-1, -1, -1, IRF_C}, NULL},
    {"w1", AR_DTYPE_FLOAT32, 4, {IRF_E, 1, 1, IRF_C}, false, {0}, irf_w1},
    {"b1", AR_DTYPE_FLOAT32, 1, {IRF_E}, false, {0}, irf_b1},
    {"e", AR_DTYPE_FLOAT32, 4, {1, IRF_HW, IRF_HW, IRF_E}, false, {0}, NULL},
    {"wd", AR_DTYPE_FLOAT32, 4, {1, 3, 3, IRF_E}, false, {0}, irf_wd},
    {"bd", AR_DTYPE_FLOAT32, 1, {IRF_E}, false, {0}, irf_bd},
    {"y", AR_DTYPE_FLOAT32, 4, {1, IRF_HW / 2, IRF_HW / 2, IRF_E}, false, {0}, NULL},
  };
  ar_tm_op_t ops[] = {
    /* CONV_2D 1x1 SAME stride 1, RELU6 */
    {3, 3, 1, {0, 1, 2}, {3}, 1, 6, {{0, 1, 0}, {1, 4, 1}, {2, 4, 1}, {3, 1, 3}, {4, 4, 1}, {5, 4, 1}}},
    /* DEPTHWISE_CONV_2D 3x3 SAME stride 2, multiplier 1 */
    {4, 3, 1, {3, 4, 5}, {6}, 2, 6, {{0, 1, 0}, {1, 4, 2}, {2, 4, 2}, {3, 4, 1}, {5, 4, 1}, {6, 4, 1}}},
  };
  const int32_t gin[] = {0}, gout[] = {6};
  size_t bytes = 0;
  uint8_t *file = ar_tm_build(t, 7, ops, 2, gin, 1, gout, 1, &bytes);
  char msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  ck_assert_msg(ar_model_load_buffer(file, bytes, &m, msg, sizeof msg) == 0, "built model: %s", msg);
  ar_interp_t *in[2] = {NULL, NULL};   /* [0] fusion off, [1] on */
  for (int f = 0; f < 2; f++) {
    ar_interp_options_t opt;
    ar_interp_options_default(&opt);
    opt.threads = 2;
    opt.fuse = f == 1;
    ck_assert_msg(ar_interp_new(m, &opt, &in[f], msg, sizeof msg) == 0, "%s", msg);
    ck_assert_int_eq(ar_interp_place_owned(in[f], msg, sizeof msg), 0);
  }
  ck_assert_int_eq(ar_interp_op_fused(in[0], 0), -1);
  const bool fuses = ar_sgemm_own_available();
  ck_assert_int_eq(ar_interp_op_fused(in[1], 0), fuses ? 1 : -1);
  static const int32_t shapes[][3] = {{1, 96, 96}, {1, 57, 71}, {2, 40, 33}, {1, 130, 121}, {1, 3, 2}, {1, 96, 96}};
  enum { NS = sizeof shapes / sizeof shapes[0] };
  static float xs[2 * 130 * 130 * IRF_C], want[2 * 65 * 65 * IRF_E];
  for (int s = 0; s < NS; s++) {
    const int32_t n = shapes[s][0], h = shapes[s][1], w = shapes[s][2], oh = (h + 1) / 2, ow = (w + 1) / 2;
    const int32_t dims[4] = {n, h, w, IRF_C};
    const int64_t nx = (int64_t)n * h * w * IRF_C, ny = (int64_t)n * oh * ow * IRF_E;
    for (int64_t i = 0; i < nx; i++) xs[i] = IRF_RND() * 2.0f;
    irf_by_hand(xs, n, h, w, want, oh, ow);
    const float *got[2];
    unsigned long allocs = 0;
    for (int f = 0; f < 2; f++) {
      ck_assert_int_eq(ar_interp_resize_input(in[f], 0, 4, dims, msg, sizeof msg), 0);
      if (ar_interp_needs_prepare(in[f])) {
        ck_assert_msg(ar_interp_prepare(in[f], msg, sizeof msg) == 0, "prepare %dx%dx%d: %s", n, h, w, msg);
        ck_assert_int_eq(ar_interp_place_owned(in[f], msg, sizeof msg), 0);
      }
      ck_assert_int_eq(ar_planner_verify(ar_interp_planner(in[f]), msg, sizeof msg), 0);
      ar_tview_t *x = ar_interp_input(in[f], 0);
      ck_assert_uint_eq(x->bytes, (uint64_t)nx * sizeof(float));
      const ar_tview_t *y = ar_interp_output(in[f], 0);
      ck_assert_uint_eq(y->bytes, (uint64_t)ny * sizeof(float));
      for (int r = 0; r < 3; r++) {
        memcpy(x->data, xs, (size_t)nx * sizeof(float));
        arm();
        const int rc = ar_interp_invoke(in[f]);
        const unsigned long c = disarm();
        ck_assert_int_eq(rc, 0);
        if (r > 0) allocs += c;   /* the first after a re-plan is counted, not asserted */
      }
      got[f] = y->data;
    }
    ck_assert_int_eq(ar_interp_op_fused(in[1], 0), fuses ? 1 : -1);
    ck_assert_msg(memcmp(got[0], got[1], (size_t)ny * sizeof(float)) == 0,
                  "%dx%dx%d: fused and unfused outputs differ", n, h, w);
    double worst = 0;
    for (int64_t i = 0; i < ny; i++) {
      const double d = fabs((double)got[1][i] - want[i]);
      if (d > worst) worst = d;
      ck_assert_msg(d <= 1e-4 * (1.0 + fabs(want[i])), "%dx%dx%d: y[%lld] = %g, by hand %g", n, h, w,
                    (long long)i, got[1][i], want[i]);
    }
    printf("resize fused pair %dx%dx%d -> %dx%dx%d: fusion %s, outputs equal byte for byte, max |got - by hand| "
           "%.2g, arena %llu B fused / %llu B unfused, %lu allocation calls\n", n, h, w, oh, ow, IRF_E,
           fuses ? "on" : "off (no AVX-512F)", worst, (unsigned long long)ar_interp_arena_bytes(in[1]),
           (unsigned long long)ar_interp_arena_bytes(in[0]), allocs);
    ck_assert_msg(allocs == 0, "%lu allocation calls", allocs);
  }
#undef IRF_RND
  for (int f = 0; f < 2; f++) ar_interp_free(in[f]);
  ar_model_free(m);
  free(file);
}
END_TEST

START_TEST(test_dynamic_shapes) {
  install_counter();
  for (int which = 0; which < 2; which++) {
    bool pad = which == 0;
    ar_tm_tensor_t t[] = {
      {"x", AR_DTYPE_FLOAT32, 2, {2, 3}, false, {0}, NULL},
      {pad ? "paddings" : "shape", AR_DTYPE_INT32, pad ? 2 : 1, {2, 2}, false, {0}, NULL},
      {"y", AR_DTYPE_FLOAT32, 2, {2, 3}, false, {0}, NULL},
    };
    if (!pad) t[1].dims[0] = 2;
    ar_tm_op_t op = {pad ? 34 : 22, 2, 1, {0, 1}, {2}, 0, 0, {{0}}};
    uint8_t *file = NULL;
    ar_model_t *m = NULL;
    ar_interp_t *in = shape_input_model(t, &op, &file, &m);
    ck_assert(!ar_interp_input_sets_shape(in, 0));
    const float x[6] = {1, 2, 3, 4, 5, 6};
    /* PAD: [[0,1],[2,0]] -> [3,5]; [[0,0],[0,0]] -> [2,3]; [[1,0],[0,1]] -> [3,4].
     * RESHAPE: [3,2]; [6,1]; [-1,2] -> [3,2]. */
    static const int32_t pads[3][4] = {{0, 1, 2, 0}, {0, 0, 0, 0}, {1, 0, 0, 1}};
    static const int32_t shapes[3][2] = {{3, 2}, {6, 1}, {-1, 2}};
    static const int32_t want_pad[3][2] = {{3, 5}, {2, 3}, {3, 4}};
    uint64_t arena_first = 0;
    for (int v = 0; v < 4; v++) {
      int k = v % 3;
      const void *val = pad ? (const void *)pads[k] : (const void *)shapes[k];
      uint64_t vb = pad ? sizeof pads[k] : sizeof shapes[k];
      set_new_shape_value(in, val, vb);
      if (v == 0) arena_first = ar_interp_arena_bytes(in);
      if (v == 3) ck_assert_uint_eq(ar_interp_arena_bytes(in), arena_first);
      unsigned long allocs = invoke_at_same_value(in, x, sizeof x, val, vb);
      ck_assert_uint_eq(allocs, 0);
      const ar_tview_t *y = ar_interp_output(in, 0);
      const float *g = y->data;
      ck_assert_int_eq(y->rank, 2);
      if (pad) {
        ck_assert_int_eq(y->dims[0], want_pad[k][0]);
        ck_assert_int_eq(y->dims[1], want_pad[k][1]);
        for (int i = 0; i < y->dims[0]; i++)
          for (int j = 0; j < y->dims[1]; j++) {
            int si = i - pads[k][0], sj = j - pads[k][2];
            float w = si >= 0 && si < 2 && sj >= 0 && sj < 3 ? x[si * 3 + sj] : 0.0f;
            ck_assert_msg(g[i * y->dims[1] + j] == w, "pad %d: y[%d][%d] = %g, want %g", k, i, j,
                          g[i * y->dims[1] + j], w);
          }
      } else {
        ck_assert_int_eq(y->dims[0], k == 1 ? 6 : 3);
        ck_assert_int_eq(y->dims[1], k == 1 ? 1 : 2);
        for (int i = 0; i < 6; i++) ck_assert(g[i] == x[i]);
      }
      printf("dynamic %s value %d: output [%d,%d], arena %llu B, 3 invokes: %lu allocation calls\n",
             pad ? "PAD" : "RESHAPE", k, y->dims[0], y->dims[1],
             (unsigned long long)ar_interp_arena_bytes(in), allocs);
    }
    /* A value that does not fit refuses at prepare and leaves the interpreter unplaced. */
    char msg[AR_MSG_BYTES] = "";
    const int32_t bad_pad[4] = {0, 0, -1, 0}, bad_shape[2] = {4, 2};
    ck_assert_int_eq(ar_interp_set_shape_input(in, 1, pad ? (const void *)bad_pad : (const void *)bad_shape,
                                               pad ? sizeof bad_pad : sizeof bad_shape, msg, sizeof msg), 0);
    int rc = ar_interp_prepare(in, msg, sizeof msg);
    ck_assert_msg(rc == (pad ? AR_EINVAL : AR_ESHAPE), "%s: %s", ar_err_name(rc), msg);
    ck_assert_int_eq(ar_interp_invoke(in), AR_ESTATE);
    ar_interp_free(in);
    ar_model_free(m);
    free(file);
  }
}
END_TEST

/* TILE whose multiples are graph input 1 (a value-dependent shape operand like PAD's paddings):
 * the kernel is prepared once the value is given, the output follows each new value, and invokes
 * at an unchanged value allocate nothing. x [2,3]; multiples [1,1] -> [2,3], [2,1] -> [4,3],
 * [1,2] -> [2,6], then [1,1] again: the arena returns to its first figure. */
START_TEST(test_dynamic_tile) {
  install_counter();
  ar_tm_tensor_t t[] = {
    {"x", AR_DTYPE_FLOAT32, 2, {2, 3}, false, {0}, NULL},
    {"multiples", AR_DTYPE_INT32, 1, {2}, false, {0}, NULL},
    {"y", AR_DTYPE_FLOAT32, 2, {2, 3}, false, {0}, NULL},
  };
  ar_tm_op_t op = {69, 2, 1, {0, 1}, {2}, 0, 0, {{0}}};
  uint8_t *file = NULL;
  ar_model_t *m = NULL;
  ar_interp_t *in = shape_input_model(t, &op, &file, &m);
  const float x[6] = {1, 2, 3, 4, 5, 6};
  static const int32_t mult[4][2] = {{1, 1}, {2, 1}, {1, 2}, {1, 1}};
  uint64_t arena_first = 0;
  for (int v = 0; v < 4; v++) {
    set_new_shape_value(in, mult[v], sizeof mult[v]);
    if (v == 0) arena_first = ar_interp_arena_bytes(in);
    if (v == 3) ck_assert_uint_eq(ar_interp_arena_bytes(in), arena_first);
    unsigned long allocs = invoke_at_same_value(in, x, sizeof x, mult[v], sizeof mult[v]);
    ck_assert_uint_eq(allocs, 0);
    const ar_tview_t *y = ar_interp_output(in, 0);
    const float *g = y->data;
    ck_assert_int_eq(y->rank, 2);
    ck_assert_int_eq(y->dims[0], 2 * mult[v][0]);
    ck_assert_int_eq(y->dims[1], 3 * mult[v][1]);
    for (int i = 0; i < y->dims[0]; i++)
      for (int j = 0; j < y->dims[1]; j++)
        ck_assert_msg(g[i * y->dims[1] + j] == x[(i % 2) * 3 + j % 3], "multiples %d: y[%d][%d] = %g", v,
                      i, j, g[i * y->dims[1] + j]);
    printf("dynamic TILE multiples [%d,%d]: output [%d,%d], arena %llu B, 3 invokes: %lu allocation "
           "calls\n", mult[v][0], mult[v][1], y->dims[0], y->dims[1],
           (unsigned long long)ar_interp_arena_bytes(in), allocs);
  }
  ar_interp_free(in);
  ar_model_free(m);
  free(file);
}
END_TEST

/* Every case of tests/golden/ops/INDEX.tsv: load, place, feed its inputs, 1 warm-up + 5 counted
 * invokes. */
START_TEST(test_ops_no_alloc) {
  install_counter();
  settle_openblas_threads();
  char path[2048], line[8192], name[256], msg[AR_MSG_BYTES] = "";
  snprintf(path, sizeof path, "%s/ops/INDEX.tsv", ar_test_golden_dir());
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "cannot read %s", path);
  unsigned long total = 0;
  int cases = 0;
  while (fgets(line, sizeof line, f)) {
    if (line[0] == '#' || line[0] == '\n') continue;
    snprintf(name, sizeof name, "%.*s", (int)strcspn(line, "\t\n"), line);
    snprintf(path, sizeof path, "%s/ops/%s/model.tflite", ar_test_golden_dir(), name);
    ar_model_t *m = NULL;
    int rc = ar_model_load(path, &m, msg, sizeof msg);
    ck_assert_msg(rc == 0, "%s: %s", name, msg);
    ar_interp_t *in = NULL;
    rc = ar_interp_new(m, NULL, &in, msg, sizeof msg);
    ck_assert_msg(rc == 0, "%s: %s", name, msg);
    rc = ar_interp_place_owned(in, msg, sizeof msg);
    ck_assert_msg(rc == 0, "%s: %s", name, msg);
    for (int32_t i = 0; i < ar_interp_n_inputs(in); i++) {
      snprintf(path, sizeof path, "%s/ops/%s/input_%d.bin", ar_test_golden_dir(), name, i);
      size_t bytes = 0;
      void *data = ar_test_read_file(path, &bytes);
      ar_tview_t *v = ar_interp_input(in, i);
      ck_assert_msg(data != NULL && bytes == v->bytes, "%s: input %d", name, i);
      if (bytes) memcpy(v->data, data, bytes);
      free(data);
    }
    ck_assert_int_eq(ar_interp_invoke(in), 0);
    unsigned long c = 0;
    for (int r = 0; r < 5; r++) {
      arm();
      rc = ar_interp_invoke(in);
      c += disarm();
      ck_assert_int_eq(rc, 0);
    }
    ck_assert_msg(c == 0, "%s: %lu heap allocation calls in 5 invokes", name, c);
    total += c;
    cases++;
    ar_interp_free(in);
    ar_model_free(m);
  }
  fclose(f);
  printf("noalloc single-operator models: %d cases, 5 invokes each: %lu allocation calls\n", cases, total);
  ck_assert_int_gt(cases, 0);
}
END_TEST

int main(void) {
  /* Valgrind replaces malloc and friends everywhere, our definitions included, so nothing would be
   * counted (and 1100 invokes under valgrind take too long): the suite skips itself there. The
   * normal and ASan builds run it. */
  if (ar_test_under_valgrind()) {
    printf("check_noalloc: skipped under valgrind (it replaces the allocator this test counts)\n");
    return EXIT_SUCCESS;
  }
  Suite *s = suite_create("noalloc");
  TCase *tc = tcase_create("counter");
  tcase_add_test(tc, test_counter_counts);
  tcase_add_test(tc, test_stream_no_alloc);
  tcase_add_test(tc, test_control_flow_streams_no_alloc);
  tcase_add_test(tc, test_state_slot_switch_no_alloc);
  tcase_add_test(tc, test_lstm_streams_no_alloc);
  tcase_add_test(tc, test_integer_lstm_streams_no_alloc);
  suite_add_tcase(s, tc);
  tc = tcase_create("new_kernels");
  tcase_add_test(tc, test_new_kernels_no_alloc);
  suite_add_tcase(s, tc);
  tc = tcase_create("invoke");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_invoke_no_alloc, 0, ar_test_n_models);
  tcase_add_loop_test(tc, test_invoke_no_alloc_threads, 0, ar_test_n_models);
  tcase_add_loop_test(tc, test_invoke_profiled_no_alloc, 0, ar_test_n_models);
  tcase_add_test(tc, test_sparse_invoke_no_alloc);
  tcase_add_loop_test(tc, test_quant_invoke_no_alloc, 0, ar_test_n_qmodels);
  tcase_add_loop_test(tc, test_quant_invoke_no_alloc_threads, 0, ar_test_n_qmodels);
  tcase_add_test(tc, test_ops_no_alloc);
  tcase_add_test(tc, test_audio_front_ends_no_alloc);
  suite_add_tcase(s, tc);
  tc = tcase_create("resize");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_resize_batch);
  tcase_add_test(tc, test_resize_fused_pair);
  tcase_add_test(tc, test_dynamic_shapes);
  tcase_add_test(tc, test_dynamic_tile);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
