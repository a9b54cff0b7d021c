/* ar_rss.c - resident-memory measurement (see ar_rss.h): /proc/self/status, mincore over known
 * ranges, OpenBLAS's mappings through an mmap/munmap interposition, mallinfo2, and a walk of
 * /proc/self/smaps for code and stacks. Knows nothing of models or the pool: ar_models.c hands
 * it the ranges and adds the parts up.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "daemon/ar_rss.h"

#if defined(__GLIBC__) && defined(SYS_mmap) && defined(SYS_munmap) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define AR_RSS_INTERPOSE 1
#endif

#define AR_RSS_TRACK_MAX 256

static uint64_t page_bytes(void) {
  /* The loop thread (memory_limit at a load) and the stats thread measure: relaxed atomics, every
   * thread computing the same value. */
  static uint64_t pg;
  uint64_t v = __atomic_load_n(&pg, __ATOMIC_RELAXED);
  if (v == 0) {
    long sv = sysconf(_SC_PAGESIZE);
    v = sv > 0 ? (uint64_t)sv : 4096;
    __atomic_store_n(&pg, v, __ATOMIC_RELAXED);
  }
  return v;
}

uint64_t ar_rss_resident_bytes(const void *addr, uint64_t bytes) {
  if (addr == NULL || bytes == 0) return 0;
  uint64_t pg = page_bytes();
  uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(pg - 1);
  uintptr_t end = ((uintptr_t)addr + bytes + pg - 1) & ~(uintptr_t)(pg - 1);
  unsigned char vec[4096];   /* one mincore call per 4096 pages: no heap */
  uint64_t resident = 0;
  for (uintptr_t p = start; p < end;) {
    uint64_t pages = (end - p) / pg;
    if (pages > sizeof(vec)) pages = sizeof(vec);
    if (mincore((void *)p, (size_t)(pages * pg), vec) != 0) return resident;
    for (uint64_t i = 0; i < pages; i++) resident += (vec[i] & 1) ? pg : 0;
    p += pages * pg;
  }
  return resident;
}

int ar_rss_read_status(ar_rss_status_t *st, char *msg, size_t msg_bytes) {
  memset(st, 0, sizeof(*st));
  FILE *f = fopen("/proc/self/status", "re");
  if (f == NULL) return ar_errf(msg, msg_bytes, AR_EIO, "/proc/self/status: %s", strerror(errno));
  char line[256];
  int found = 0;
  static const struct { const char *key; size_t off; } keys[] = {
      {"VmRSS:", offsetof(ar_rss_status_t, rss_bytes)},
      {"VmHWM:", offsetof(ar_rss_status_t, peak_rss_bytes)},
      {"RssAnon:", offsetof(ar_rss_status_t, anon_bytes)},
      {"RssFile:", offsetof(ar_rss_status_t, file_bytes)},
      {"RssShmem:", offsetof(ar_rss_status_t, shmem_bytes)},
  };
  while (fgets(line, sizeof(line), f)) {
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
      size_t n = strlen(keys[i].key);
      if (strncmp(line, keys[i].key, n) != 0) continue;
      unsigned long long kb = strtoull(line + n, NULL, 10);
      *(uint64_t *)((char *)st + keys[i].off) = (uint64_t)kb * 1024;
      found |= 1 << i;
    }
  }
  fclose(f);
  if ((found & 3) != 3) return ar_errf(msg, msg_bytes, AR_EIO, "/proc/self/status: no VmRSS/VmHWM");
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* OpenBLAS's mappings: the mmap/munmap interposition and its table                            */

#ifdef AR_RSS_INTERPOSE
typedef struct {
  uintptr_t start, end;   /* 0, 0 = free slot */
  const void *caller;
} track_t;

static track_t tracked[AR_RSS_TRACK_MAX];
static char track_lock;   /* a spin lock: mmap may run before any pthread set-up, never for long */

static void lock(void) { while (__atomic_test_and_set(&track_lock, __ATOMIC_ACQUIRE)) {} }
static void unlock(void) { __atomic_clear(&track_lock, __ATOMIC_RELEASE); }

#define AR__PUBLIC __attribute__((visibility("default")))

AR__PUBLIC void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  /* syscall() reads its arguments as longs: widen them here (fd -1 must stay -1). */
  void *p = (void *)syscall(SYS_mmap, addr, len, (long)prot, (long)flags, (long)fd, (long)off);
  if (p != MAP_FAILED && (flags & MAP_ANONYMOUS) && len > 0) {
    const void *caller = __builtin_return_address(0);
    uintptr_t s = (uintptr_t)p, e = s + len;
    lock();
    /* MAP_FIXED over a tracked range replaces it: drop what it covers first. */
    for (size_t i = 0; i < AR_RSS_TRACK_MAX; i++)
      if (tracked[i].end > s && tracked[i].start < e) tracked[i].start = tracked[i].end = 0;
    for (size_t i = 0; i < AR_RSS_TRACK_MAX; i++)
      if (tracked[i].end == 0) {
        tracked[i] = (track_t){s, e, caller};
        break;
      }
    unlock();
  }
  return p;
}

AR__PUBLIC int munmap(void *addr, size_t len) {
  int rc = (int)syscall(SYS_munmap, addr, len);
  if (rc == 0 && len > 0) {
    uintptr_t s = (uintptr_t)addr, e = s + len;
    lock();
    for (size_t i = 0; i < AR_RSS_TRACK_MAX; i++) {
      track_t *t = &tracked[i];
      if (t->end <= s || t->start >= e) continue;
      if (s <= t->start && e >= t->end) t->start = t->end = 0;   /* all of it */
      else if (s <= t->start) t->start = e;                      /* its head */
      else if (e >= t->end) t->end = s;                          /* its tail */
      /* a hole in the middle: keep the entry (over-counts the hole's pages: none are resident) */
    }
    unlock();
  }
  return rc;
}

/* The shared object holding OpenBLAS (the one that defines cblas_sgemm), or NULL. Looked up once
 * (pthread_once: the loop and the stats thread both measure). */
static const void *blas_base_found;
static void blas_base_lookup(void) {
  void *sym = dlsym(RTLD_DEFAULT, "cblas_sgemm");
  Dl_info info;
  if (sym && dladdr(sym, &info) && info.dli_fbase) blas_base_found = info.dli_fbase;
}

static const void *blas_base(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, blas_base_lookup);
  return blas_base_found;
}

size_t ar_rss_blas_ranges(ar_rss_range_t *out, size_t cap) {
  const void *base = blas_base();
  if (base == NULL) return 0;
  track_t copy[AR_RSS_TRACK_MAX];
  lock();
  memcpy(copy, tracked, sizeof(copy));
  unlock();
  size_t n = 0;
  for (size_t i = 0; i < AR_RSS_TRACK_MAX; i++) {
    if (copy[i].end == 0) continue;
    Dl_info info;
    if (!dladdr(copy[i].caller, &info) || info.dli_fbase != base) continue;
    if (n < cap) out[n] = (ar_rss_range_t){copy[i].start, copy[i].end};
    n++;
  }
  return n;
}

void ar_rss_blas(ar_rss_blas_t *out) {
  memset(out, 0, sizeof(*out));
  out->measured = true;
  ar_rss_range_t r[AR_RSS_TRACK_MAX];
  size_t n = ar_rss_blas_ranges(r, AR_RSS_TRACK_MAX);
  for (size_t i = 0; i < n && i < AR_RSS_TRACK_MAX; i++) {
    out->mappings++;
    out->mapped_bytes += r[i].end - r[i].start;
    out->resident_bytes += ar_rss_resident_bytes((const void *)r[i].start, r[i].end - r[i].start);
  }
}
#else
size_t ar_rss_blas_ranges(ar_rss_range_t *out, size_t cap) {
  (void)out;
  (void)cap;
  return 0;
}
void ar_rss_blas(ar_rss_blas_t *out) { memset(out, 0, sizeof(*out)); }
#endif

/* ------------------------------------------------------------------------------------------ */

void ar_rss_heap(ar_rss_heap_t *out) {
  memset(out, 0, sizeof(*out));
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  /* (ASan and TSan replace malloc: glibc's arenas would read as empty.) */
  struct mallinfo2 mi = mallinfo2();
  out->measured = true;
  out->system_bytes = (uint64_t)mi.arena + (uint64_t)mi.hblkhd;
  out->in_use_bytes = (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
  out->mmapped_bytes = (uint64_t)mi.hblkhd;
#endif
}

/* ------------------------------------------------------------------------------------------ */
/* /proc/self/smaps                                                                            */

typedef struct {
  uintptr_t start, end;
  char perms[5];
  bool file, named;          /* a path; a [name] */
  char name[24];             /* the [name], if any */
  uint64_t rss;
  bool valid;
} vma_t;

static bool overlaps(const ar_rss_range_t *skip, size_t n, uintptr_t s, uintptr_t e) {
  for (size_t i = 0; i < n; i++)
    if (skip[i].end > s && skip[i].start < e) return true;
  return false;
}

/* Class one mapping into `out`, knowing the one just below it (`prev`, may be invalid). */
static void classify(const vma_t *v, const vma_t *prev, const ar_rss_range_t *skip, size_t n_skip,
                     ar_rss_rest_t *out) {
  if (!v->valid || v->rss == 0 || overlaps(skip, n_skip, v->start, v->end)) return;
  if (v->file) {
    out->code_bytes += v->rss;
  } else if (v->named) {
    if (strcmp(v->name, "[stack]") == 0) out->stack_bytes += v->rss;
    else if (strcmp(v->name, "[heap]") == 0) out->anon_other_bytes += v->rss;
    else out->code_bytes += v->rss;      /* [vdso], [vvar], [vsyscall] */
  } else {
    bool adjacent = prev->valid && prev->end == v->start;
    if (adjacent && strcmp(prev->perms, "---p") == 0 && prev->end - prev->start <= (1u << 20))
      out->stack_bytes += v->rss;        /* glibc thread stack: guard below, stack above */
    else if (adjacent && prev->file)
      out->code_bytes += v->rss;         /* a library's .bss beyond its file pages */
    else
      out->anon_other_bytes += v->rss;
  }
}

int ar_rss_rest(const ar_rss_range_t *skip, size_t n_skip, ar_rss_rest_t *out, char *msg, size_t msg_bytes) {
  memset(out, 0, sizeof(*out));
  FILE *f = fopen("/proc/self/smaps", "re");
  if (f == NULL) return ar_errf(msg, msg_bytes, AR_EIO, "/proc/self/smaps: %s", strerror(errno));
  vma_t prev = {0}, cur = {0};
  char line[512];
  while (fgets(line, sizeof(line), f)) {
    size_t len = strlen(line);
    bool whole = len > 0 && line[len - 1] == '\n';
    char c = line[0];
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) {
      classify(&cur, &prev, skip, n_skip, out);
      prev = cur;
      memset(&cur, 0, sizeof(cur));
      unsigned long s = 0, e = 0;
      int pos = 0;
      char perms[5] = "";
      if (sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &s, &e, perms, &pos) >= 3) {
        cur.valid = true;
        cur.start = s;
        cur.end = e;
        memcpy(cur.perms, perms, sizeof(cur.perms));
        const char *name = pos > 0 ? line + pos : "";
        if (name[0] == '/') {
          cur.file = true;
        } else if (name[0] == '[') {
          cur.named = true;
          size_t k = strcspn(name, "\n");
          if (k >= sizeof(cur.name)) k = sizeof(cur.name) - 1;
          memcpy(cur.name, name, k);
          cur.name[k] = '\0';
        } else if (name[0] != '\0' && name[0] != '\n') {
          cur.named = true;                /* e.g. an anonymous mapping named with prctl */
        }
      }
    } else if (strncmp(line, "Rss:", 4) == 0) {
      cur.rss = (uint64_t)strtoull(line + 4, NULL, 10) * 1024;
    }
    /* A line longer than the buffer (a long path): skip its remainder. */
    while (!whole && fgets(line, sizeof(line), f)) {
      len = strlen(line);
      whole = len > 0 && line[len - 1] == '\n';
    }
  }
  classify(&cur, &prev, skip, n_skip, out);
  fclose(f);
  return 0;
}
