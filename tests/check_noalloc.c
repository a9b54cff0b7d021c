/* check_noalloc.c - Invoke makes zero heap allocations: 100 invokes of every real model with an
 * allocation counter armed around each ar_interp_invoke call.
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
 * Warm-up: ar_interp_place runs one OpenBLAS product so that OpenBLAS maps its per-process GEMM
 * buffer at place time; the first invoke after place is counted and printed (it is 0 here) but
 * not asserted; the 100 invokes after it are asserted to make zero calls.
 */
#define _GNU_SOURCE
#include <cblas.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "interp/ar_interp.h"
#include "loader/ar_model.h"
#include "tests/ar_test_util.h"

#if defined(__SANITIZE_ADDRESS__)
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

START_TEST(test_invoke_no_alloc) {
  install_counter();
  settle_openblas_threads();
  const char *stem = ar_test_models[_i];
  char path[1024], msg[AR_MSG_BYTES] = "";
  ar_model_t *m = NULL;
  int rc = ar_model_load(ar_test_model_path(path, sizeof path, stem), &m, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", stem, msg);
  ar_interp_options_t opt;
  ar_interp_options_default(&opt);
  ar_interp_t *in = NULL;
  rc = ar_interp_new(m, &opt, &in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", stem, msg);
  rc = ar_interp_place_owned(in, msg, sizeof msg);
  ck_assert_msg(rc == 0, "%s: %s", stem, msg);
  snprintf(path, sizeof path, "%s/%s/photo/input_0.bin", ar_test_golden_dir(), stem);
  size_t bytes = 0;
  void *input = ar_test_read_file(path, &bytes);
  ck_assert_ptr_nonnull(input);
  ar_tview_t *v = ar_interp_input(in, 0);
  ck_assert_uint_eq(bytes, v->bytes);

  memcpy(v->data, input, bytes);
  arm();
  rc = ar_interp_invoke(in);     /* warm-up: counted and printed, not asserted */
  unsigned long first = disarm();
  ck_assert_int_eq(rc, 0);

  __atomic_store_n(&n_other, 0, __ATOMIC_SEQ_CST);
  unsigned long total = 0, worst = 0;
  for (int r = 0; r < 100; r++) {
    memcpy(v->data, input, bytes);   /* outside the armed window: the caller's copy */
    arm();
    rc = ar_interp_invoke(in);
    unsigned long c = disarm();
    ck_assert_int_eq(rc, 0);
    total += c;
    if (c > worst) worst = c;
  }
  printf("noalloc %-34s first invoke %lu calls; 100 invokes: %lu allocation calls (%s); "
         "other threads meanwhile: %lu\n", stem, first, total,
         COUNTS_MMAP ? "malloc family + mmap" : "ASan malloc/free hooks", n_other);
  ck_assert_msg(total == 0, "%s: %lu heap allocation calls in 100 invokes (worst invoke %lu)", stem,
                total, worst);
  free(input);
  ar_interp_free(in);
  ar_model_free(m);
}
END_TEST

int main(void) {
  /* Valgrind replaces malloc and friends everywhere, our definitions included, so nothing would be
   * counted (and 1100 invokes under valgrind take too long): the suite skips itself there. The
   * normal and ASan builds run it. */
  const char *pre = getenv("LD_PRELOAD");
  if (pre && strstr(pre, "vgpreload")) {
    printf("check_noalloc: skipped under valgrind (it replaces the allocator this test counts)\n");
    return EXIT_SUCCESS;
  }
  Suite *s = suite_create("noalloc");
  TCase *tc = tcase_create("counter");
  tcase_add_test(tc, test_counter_counts);
  suite_add_tcase(s, tc);
  tc = tcase_create("invoke");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_invoke_no_alloc, 0, ar_test_n_models);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
