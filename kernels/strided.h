/* strided.h - internal to the kernels layer: one strided-copy engine shared by the data-movement
 * kernels (STRIDED_SLICE, SLICE, TRANSPOSE, TILE, BROADCAST_TO, SPACE_TO_DEPTH).
 *
 * Each of these ops writes its output in row-major order, and output element (i_0, ..., i_k) reads
 * input element base + sum_d i_d * stride[d], with per-dim strides in elements that may be
 * negative (reversed slices) or zero (broadcast, tiling). prepare describes the op in those terms
 * with ar__strided_init, which drops size-1 dims and merges dims that are contiguous in both
 * tensors; eval calls ar__strided_copy, which copies whole runs with memcpy when the innermost
 * stride is 1 and element by element otherwise. No allocation, no checks at eval.
 */
#ifndef AR_STRIDED_H
#define AR_STRIDED_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/ar_kernels.h"

/* TILE views rank r as 2r dims; AR_MAX_RANK is 8. */
#define AR_STRIDED_MAX_DIMS 16

typedef struct ar__strided {
  int32_t rank;                        /* >= 1 after init */
  uint32_t esize;                      /* bytes per element */
  int64_t n;                           /* output elements (0: nothing to copy) */
  int64_t base;                        /* input element index of output element 0 */
  int64_t dims[AR_STRIDED_MAX_DIMS];   /* output dims after merging */
  int64_t stride[AR_STRIDED_MAX_DIMS]; /* input elements per step along each output dim */
} ar__strided_t;

/* Describe a copy of `rank` (<= AR_STRIDED_MAX_DIMS) output dims; see the file comment. */
void ar__strided_init(ar__strided_t *s, int32_t rank, const int64_t *dims, const int64_t *stride,
                      int64_t base, size_t esize);

/* Run the copy described by `s` from `in` to `out` (which must not overlap). */
void ar__strided_copy(const ar__strided_t *s, const void *in, void *out);

/* ar__strided_copy for an eval of `node`, over its thread pool (whole runs or pieces of one; same
 * bytes for every thread count). */
void ar__strided_copy_node(const ar_node_t *node, const ar__strided_t *s, const void *in, void *out);

#endif /* AR_STRIDED_H */
