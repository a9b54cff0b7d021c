/* ar_alloc_count.c - thread-local heap allocation counter through malloc interposition (glibc).
 * See ar_alloc_count.h for what is counted and why per thread. The wrappers must be exported
 * (the build uses -fvisibility=hidden) so that shared libraries bind to them too.
 */
#include <stddef.h>

#include "daemon/ar_alloc_count.h"

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define AR_ALLOC_COUNT 1
#endif

#ifdef AR_ALLOC_COUNT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);

/* initial-exec: static TLS of the executable, no allocation or lock on first access. */
static __thread __attribute__((tls_model("initial-exec"))) uint64_t tl_allocs;
static __thread __attribute__((tls_model("initial-exec"))) int tl_armed;

#define AR__COUNT() do { if (tl_armed) tl_allocs++; } while (0)
#define AR__PUBLIC __attribute__((visibility("default")))

AR__PUBLIC void *malloc(size_t n) { AR__COUNT(); return __libc_malloc(n); }
AR__PUBLIC void *calloc(size_t n, size_t size) { AR__COUNT(); return __libc_calloc(n, size); }
AR__PUBLIC void *realloc(void *p, size_t n) { AR__COUNT(); return __libc_realloc(p, n); }
AR__PUBLIC void *memalign(size_t align, size_t n) { AR__COUNT(); return __libc_memalign(align, n); }
AR__PUBLIC void *aligned_alloc(size_t align, size_t n) { AR__COUNT(); return __libc_memalign(align, n); }
AR__PUBLIC void *valloc(size_t n) { AR__COUNT(); return __libc_valloc(n); }
AR__PUBLIC int posix_memalign(void **out, size_t align, size_t n) {
  AR__COUNT();
  if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
  void *p = __libc_memalign(align, n);
  if (p == NULL && n != 0) return ENOMEM;
  *out = p;
  return 0;
}

/* Under valgrind its own allocator replaces these wrappers (it preloads vgpreload_*.so), so nothing
 * would be counted: report "not measured" rather than a false 0. */
bool ar_alloc_count_available(void) {
  const char *pre = getenv("LD_PRELOAD");
  return !(pre != NULL && strstr(pre, "vgpreload") != NULL);
}
void ar_alloc_count_begin(void) { tl_allocs = 0; tl_armed = 1; }
uint64_t ar_alloc_count_end(void) { tl_armed = 0; return tl_allocs; }
#else
bool ar_alloc_count_available(void) { return false; }
void ar_alloc_count_begin(void) {}
uint64_t ar_alloc_count_end(void) { return 0; }
#endif
