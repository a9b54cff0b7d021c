/* ar_alloc_count.h - count heap allocations made by the current thread (for the stats key
 * heap_allocs_in_invoke).
 *
 * How it is measured: arenad's executable defines malloc, calloc, realloc, aligned_alloc,
 * posix_memalign, memalign and valloc, which forward to glibc's __libc_* entry points and, while
 * the calling thread's counter is armed, add one to a thread-local count. The symbol interposition
 * covers every library in the process (libuv, jansson, OpenBLAS, the interpreter), but the count
 * is per thread, so the loop thread's allocations never leak into a worker's invoke figure.
 * Allocations made through mmap directly (e.g. OpenBLAS's own buffers) are not seen.
 * Available with glibc and without sanitizers (which interpose malloc themselves); elsewhere
 * ar_alloc_count_available() is false and the daemon reports -1.
 */
#ifndef AR_ALLOC_COUNT_H
#define AR_ALLOC_COUNT_H

#include <stdbool.h>
#include <stdint.h>

bool ar_alloc_count_available(void);
/* Arm the calling thread's counter at 0. */
void ar_alloc_count_begin(void);
/* Disarm it and return the number of allocations since begin. */
uint64_t ar_alloc_count_end(void);

#endif
