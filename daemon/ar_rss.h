/* ar_rss.h - where the daemon's resident memory is: the process RSS split into the parts arenad
 * knows, each measured on its own (none is computed as a remainder), so that their sum can be held
 * against the kernel's RSS figure.
 *
 *   RSS (VmRSS of /proc/self/status)
 *   ~ pool         resident pages of the pool mapping (mincore)
 *   + models       resident pages of each model file copy (mincore), each copy counted once
 *   + blas         resident pages of the anonymous mappings OpenBLAS made (its GEMM buffers)
 *   + heap         malloc's bytes in allocated blocks (mallinfo2: uordblks + hblkhd); the free
 *                  blocks it keeps are left out: their pages are often untouched or returned
 *                  (malloc_trim), and counting them (arena + hblkhd) over-counted ~1 MB of 22 MB
 *   + rest         code and data of the executable and its libraries (file-backed mappings and a
 *                  library's .bss right after them, [vdso]), and thread stacks ([stack] and each
 *                  anonymous read-write mapping right above a PROT_NONE guard of at most 1 MiB,
 *                  glibc's thread stack layout), from /proc/self/smaps
 *   unaccounted = RSS - the sum (signed): what no part explains (e.g. malloc pages it freed and
 *                 the kernel kept, or resident pages of an anonymous mapping nobody above made)
 *
 * How OpenBLAS's buffers are found: OpenBLAS takes its GEMM buffers (blas_memory_alloc) with
 * mmap straight from the kernel, never from malloc. arenad's executable defines mmap and munmap
 * (forwarding to the system calls), so a shared library's calls bind to them; every successful
 * anonymous mapping is recorded with its caller's return address in a fixed table (no heap), and
 * at measurement time the callers inside the shared object that defines cblas_sgemm (dladdr)
 * mark OpenBLAS's mappings, whose resident pages mincore counts. glibc's own mappings (malloc
 * arenas, thread stacks) use its internal entry points and are not seen, which is what we want:
 * they are heap and rest. Available with glibc and without sanitizers (which interpose mmap
 * themselves); otherwise `blas.measured` is false and OpenBLAS's pages show as unaccounted.
 *
 * Not on the invoke path: measuring reads /proc and calls mincore, a few milliseconds; the loop
 * thread does it for the stats and for memory_limit at a load.
 */
#ifndef AR_RSS_H
#define AR_RSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kernel figures of the process (/proc/self/status), bytes. */
typedef struct ar_rss_status {
  uint64_t rss_bytes;        /* VmRSS */
  uint64_t peak_rss_bytes;   /* VmHWM: the largest RSS since the process started */
  uint64_t anon_bytes;       /* RssAnon */
  uint64_t file_bytes;       /* RssFile */
  uint64_t shmem_bytes;      /* RssShmem */
} ar_rss_status_t;

/* Read /proc/self/status. Errors: AR_EIO (file missing or a field absent) with `msg`. */
int ar_rss_read_status(ar_rss_status_t *st, char *msg, size_t msg_bytes);

/* Resident bytes of the pages overlapping [addr, addr + bytes) (mincore; page granularity, so a
 * page shared by two ranges counts in both). 0 for NULL or 0 bytes, or when mincore fails. */
uint64_t ar_rss_resident_bytes(const void *addr, uint64_t bytes);

/* OpenBLAS's anonymous mappings (see above). */
typedef struct ar_rss_blas {
  bool measured;             /* the mmap interposition is compiled in */
  uint32_t mappings;         /* live mappings OpenBLAS made */
  uint64_t mapped_bytes;     /* their size (address space) */
  uint64_t resident_bytes;   /* their resident pages */
} ar_rss_blas_t;

void ar_rss_blas(ar_rss_blas_t *out);

/* One address range [start, end). */
typedef struct ar_rss_range {
  uintptr_t start, end;
} ar_rss_range_t;

/* Up to `cap` of OpenBLAS's live mappings; returns how many there are (may exceed cap). */
size_t ar_rss_blas_ranges(ar_rss_range_t *out, size_t cap);

/* The heap as malloc sees it (mallinfo2), bytes. */
typedef struct ar_rss_heap {
  bool measured;             /* glibc >= 2.33, no ASan/TSan (their allocator is not malloc's) */
  uint64_t system_bytes;     /* arena + hblkhd: taken from the system, free blocks included */
  uint64_t in_use_bytes;     /* uordblks + hblkhd: in allocated blocks (the heap part of RSS) */
  uint64_t mmapped_bytes;    /* hblkhd: blocks with a mapping of their own */
} ar_rss_heap_t;

void ar_rss_heap(ar_rss_heap_t *out);

/* The rest, from /proc/self/smaps: every mapping that overlaps none of `skip` (the pool, model
 * copies and OpenBLAS mappings, measured by mincore) is classed by its name and neighbours. */
typedef struct ar_rss_rest {
  uint64_t code_bytes;       /* file-backed mappings, a library's .bss after them, [vdso]/[vvar] */
  uint64_t stack_bytes;      /* [stack] and thread stacks (read-write above a small PROT_NONE guard) */
  uint64_t anon_other_bytes; /* [heap] and other anonymous mappings: malloc's, compared with heap */
} ar_rss_rest_t;

/* Errors: AR_EIO (no /proc/self/smaps) with `msg`. */
int ar_rss_rest(const ar_rss_range_t *skip, size_t n_skip, ar_rss_rest_t *out, char *msg, size_t msg_bytes);

#endif /* AR_RSS_H */
