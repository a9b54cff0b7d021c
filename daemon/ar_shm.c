/* ar_shm.c - registered shared-memory buffers: the checks of a client's memfd, its one mapping,
 * reference counting, and the range check every tensor naming a buffer goes through. See
 * ar_shm.h for the rules and who holds references.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* F_GET_SEALS */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "daemon/ar_shm.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010   /* Linux 5.1 */
#endif
#define AR_TMPFS_MAGIC 0x01021994u
#define AR_HUGETLBFS_MAGIC 0x958458f6u

int ar_shm_map(int fd, uint64_t max_bytes, ar_shm_buf_t **out, char *msg, size_t msg_bytes) {
  *out = NULL;
  struct stat st;
  if (fstat(fd, &st) != 0) return ar_errf(msg, msg_bytes, AR_EINVAL, "fstat of the buffer's fd: %s", strerror(errno));
  if (!S_ISREG(st.st_mode))
    return ar_errf(msg, msg_bytes, AR_EINVAL, "the buffer's fd is not a memfd (not a regular file)");
  struct statfs sf;
  if (fstatfs(fd, &sf) != 0)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "fstatfs of the buffer's fd: %s", strerror(errno));
  if ((uint32_t)sf.f_type == AR_HUGETLBFS_MAGIC)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "hugetlbfs memfds are refused (a missing huge page would fault "
                   "in the daemon); create it without MFD_HUGETLB");
  if ((uint32_t)sf.f_type != AR_TMPFS_MAGIC)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "the buffer's fd is not a memfd (filesystem type 0x%lx, not shmem)",
                   (unsigned long)sf.f_type);
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "the buffer's fd cannot carry seals (%s): create it with "
                   "memfd_create(..., MFD_ALLOW_SEALING)", strerror(errno));
  const int need = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
  /* F_SEAL_SEAL without the others: no seal can be added any more - what a memfd created without
   * MFD_ALLOW_SEALING starts with, so "add them" would be advice the client cannot follow. */
  if ((seals & need) != need && (seals & F_SEAL_SEAL))
    return ar_errf(msg, msg_bytes, AR_EINVAL, "the buffer is not sealed: seals 0x%x lack%s%s, and its F_SEAL_SEAL "
                   "forbids adding them (a memfd created without MFD_ALLOW_SEALING starts so): create it with "
                   "memfd_create(..., MFD_ALLOW_SEALING), then F_ADD_SEALS F_SEAL_SHRINK | F_SEAL_GROW | "
                   "F_SEAL_SEAL after ftruncate", (unsigned)seals, seals & F_SEAL_SHRINK ? "" : " F_SEAL_SHRINK",
                   seals & F_SEAL_GROW ? "" : " F_SEAL_GROW");
  if ((seals & need) != need)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "the buffer is not sealed: seals 0x%x lack%s%s%s (F_ADD_SEALS "
                   "F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL after ftruncate)", (unsigned)seals,
                   seals & F_SEAL_SHRINK ? "" : " F_SEAL_SHRINK", seals & F_SEAL_GROW ? "" : " F_SEAL_GROW",
                   seals & F_SEAL_SEAL ? "" : " F_SEAL_SEAL");
  if (st.st_size <= 0) return ar_errf(msg, msg_bytes, AR_EINVAL, "the buffer is empty (size 0)");
  uint64_t bytes = (uint64_t)st.st_size;
  if (bytes > max_bytes)
    return ar_errf(msg, msg_bytes, AR_ENOSPC, "the buffer's %" PRIu64 " bytes exceed the %" PRIu64
                   " bytes this connection may still map (max_buffer_bytes_per_connection)", bytes, max_bytes);
  if (bytes > SIZE_MAX) return ar_errf(msg, msg_bytes, AR_EOVERFLOW, "buffer of %" PRIu64 " bytes", bytes);
  int fl = fcntl(fd, F_GETFL);
  bool writable = !(seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) && fl >= 0 && (fl & O_ACCMODE) == O_RDWR;
  void *p = mmap(NULL, (size_t)bytes, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    return ar_errf(msg, msg_bytes, e == ENOMEM ? AR_ENOMEM : AR_EIO, "mapping the %" PRIu64 "-byte buffer: %s",
                   bytes, strerror(e));
  }
  ar_shm_buf_t *b = calloc(1, sizeof(*b));
  if (b == NULL) {
    munmap(p, (size_t)bytes);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory for the buffer's record");
  }
  b->base = p;
  b->bytes = bytes;
  b->writable = writable;
  b->dev = (uint64_t)st.st_dev;
  b->ino = (uint64_t)st.st_ino;
  b->refs = 1;
  *out = b;
  return 0;
}

void ar_shm_ref(ar_shm_buf_t *b) {
  if (b) b->refs++;
}

void ar_shm_unref(ar_shm_buf_t *b) {
  if (b == NULL || --b->refs > 0) return;
  munmap(b->base, (size_t)b->bytes);
  free(b);
}

int ar_shm_range(const ar_shm_buf_t *b, uint64_t offset, uint64_t bytes, bool write, uint8_t **out, char *msg,
                 size_t msg_bytes) {
  *out = NULL;
  if (offset > b->bytes || bytes > b->bytes - offset)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "range [%" PRIu64 ", +%" PRIu64 ") runs past the end of buffer %" PRIu32
                   " (%" PRIu64 " bytes)", offset, bytes, b->id, b->bytes);
  if (write && !b->writable)
    return ar_errf(msg, msg_bytes, AR_EINVAL, "buffer %" PRIu32 " is read-only for the daemon (write-sealed or "
                   "sent O_RDONLY): outputs cannot go there", b->id);
  *out = b->base + offset;
  return 0;
}

bool ar_shm_overlap(const ar_shm_buf_t *a, uint64_t a_offset, uint64_t a_bytes, const ar_shm_buf_t *b,
                    uint64_t b_offset, uint64_t b_bytes) {
  if (a != b && (a->dev != b->dev || a->ino != b->ino)) return false;
  if (a_bytes == 0 || b_bytes == 0) return false;
  return a_offset < b_offset + b_bytes && b_offset < a_offset + a_bytes;
}

uint64_t ar_shm_unpopulated_pages(const ar_shm_buf_t *b, uint64_t offset, uint64_t bytes, uint64_t *pages) {
  *pages = 0;
  if (bytes == 0) return 0;
  long ps = sysconf(_SC_PAGESIZE);
  uint64_t pg = ps > 0 ? (uint64_t)ps : 4096;
  uint64_t lo = offset / pg * pg, hi = (offset + bytes + pg - 1) / pg * pg;
  if (hi > (b->bytes + pg - 1) / pg * pg) hi = (b->bytes + pg - 1) / pg * pg;
  unsigned char vec[4096];
  uint64_t missing = 0;
  for (uint64_t at = lo; at < hi;) {
    uint64_t n = (hi - at) / pg;
    if (n > sizeof(vec)) n = sizeof(vec);
    if (mincore(b->base + at, (size_t)(n * pg), vec) != 0) {
      missing += n;   /* cannot tell: counted as not populated */
    } else {
      for (uint64_t i = 0; i < n; i++) missing += (vec[i] & 1) ? 0 : 1;
    }
    at += n * pg;
  }
  *pages = (hi - lo) / pg;
  return missing;
}
