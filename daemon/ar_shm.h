/* ar_shm.h - shared-memory buffers a client registers for zero-copy invokes (arenad.proto
 * RegisterBufferRequest, Tensor.shm, InvokeRequest.outputs).
 *
 * A client sends a sealed memfd with SCM_RIGHTS together with the register_buffer frame; the
 * connection layer (ar_conn.c) receives the descriptor with recvmsg and keeps it until that frame
 * is dispatched. Here the descriptor is checked and mapped once:
 *
 *   memfd          a regular file on shmem (memfd_create; hugetlbfs refused: a missing huge page
 *                  would be a SIGBUS in the daemon), non-empty
 *   seals          F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL required: the size can never change
 *                  under the mapping (no SIGBUS from a shrink), and no seal can be added later
 *   write seals    F_SEAL_WRITE / F_SEAL_FUTURE_WRITE (or an O_RDONLY descriptor): mapped
 *                  read-only, usable for inputs only
 *   size           within what the connection may still map (max_buffer_bytes_per_connection)
 *   output ranges  at each invoke, every page of a range outputs are written to must already be
 *                  populated by the client (ar_shm_unpopulated_pages), so what the daemon writes
 *                  is charged to the buffer's owner, never faulted into the daemon's memory
 *
 * then mapped MAP_SHARED and the descriptor closed (the mapping keeps the memfd alive, the
 * daemon holds no descriptor). Since the seals fix the size for good, "checked on every use" is
 * the range check against the size recorded here (ar_shm_range), done for every tensor of every
 * invoke on the loop thread before the job is queued.
 *
 *   connection c ── bufs ──> [id 1: base, bytes, refs] ──> [id 2 ...] ──> NULL
 *   invoke job   ── shm[] ─> the buffers it reads/writes (one reference each)
 *
 * A buffer is unmapped when its last reference goes: the connection's (dropped on release or
 * close) and one per queued or running invoke job naming it (dropped when the job is answered).
 * All reference counting happens on the loop thread.
 */
#ifndef AR_SHM_H
#define AR_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ar_shm_buf {
  uint32_t id;                   /* connection-scoped id (1, 2, ...; never reused) */
  uint8_t *base;                 /* the daemon's mapping */
  uint64_t bytes;                /* the memfd's size (sealed) */
  bool writable;                 /* mapped PROT_WRITE: outputs may go here */
  uint64_t dev, ino;             /* the memfd's identity (fstat), to tell one memfd registered twice */
  int refs;
  struct ar_shm_buf *next;       /* the connection's list */
} ar_shm_buf_t;

/* Check `fd` as described above and map it (fd is not closed here). `max_bytes`: the largest size
 * accepted (what the connection may still map). Returns 0 with *out (refs 1), or AR_EINVAL with
 * `msg` naming the problem ("the buffer is not sealed against shrinking (F_SEAL_SHRINK missing)",
 * "fd is not a memfd: ..."), AR_ENOSPC ("the buffer's 8388608 bytes exceed the 4194304 bytes this
 * connection may still map (max_buffer_bytes_per_connection ...)"), AR_ENOMEM / AR_EIO (mmap). */
int ar_shm_map(int fd, uint64_t max_bytes, ar_shm_buf_t **out, char *msg, size_t msg_bytes);

/* Take / drop a reference; the last drop unmaps and frees. NULL is a no-op. */
void ar_shm_ref(ar_shm_buf_t *b);
void ar_shm_unref(ar_shm_buf_t *b);

/* The bytes [offset, offset + bytes) of `b` for reading (write false) or writing (write true):
 * 0 with *out pointing into the mapping, or AR_EINVAL when the range runs past the end of the
 * buffer (overflow-safe) or a write targets a read-only buffer; `msg` names the buffer, the range
 * and the size ("range [4096, 200704) runs past the end of buffer 1 (131072 bytes)"). */
int ar_shm_range(const ar_shm_buf_t *b, uint64_t offset, uint64_t bytes, bool write, uint8_t **out, char *msg,
                 size_t msg_bytes);

/* Pages of [offset, offset + bytes) of `b` (a range that passed ar_shm_range) that the client has
 * not populated: not in the memfd's page cache (mincore on the daemon's shared mapping reports the
 * memfd's pages, not this process's). An invoke writing its outputs there would make the daemon
 * fault the pages in, charged to the daemon's RSS and memory cgroup instead of the client's, so
 * such an output range is refused (docs/protocol.md, "Shared-memory buffers"): the client writes its
 * buffer or maps it MAP_POPULATE first (fallocate is not enough: mincore counts a fallocated shmem
 * page only once it is faulted in). Sets *pages to the range's page count.
 * No heap (a stack vector per 4096 pages); 0 for an empty range. */
uint64_t ar_shm_unpopulated_pages(const ar_shm_buf_t *b, uint64_t offset, uint64_t bytes, uint64_t *pages);

/* Whether the bytes [a_offset, a_offset + a_bytes) of `a` and [b_offset, b_offset + b_bytes) of `b`
 * are the same memory: the same buffer, or two buffers that map the same memfd (one memfd
 * registered twice: equal st_dev and st_ino), with ranges that intersect. Empty ranges share no
 * byte. The ranges must have passed ar_shm_range (no overflow). Used to refuse an invoke whose
 * outputs would overwrite each other or its inputs (docs/protocol.md, "Shared-memory buffers"). */
bool ar_shm_overlap(const ar_shm_buf_t *a, uint64_t a_offset, uint64_t a_bytes, const ar_shm_buf_t *b,
                    uint64_t b_offset, uint64_t b_bytes);

#endif /* AR_SHM_H */
