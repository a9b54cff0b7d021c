/* sparse_conv.h - internal to the kernels layer: CONV_2D 1x1 and FULLY_CONNECTED with a sparse
 * filter kept as stored (kernels/sparse_conv.c). conv.c and fully_connected.c route a node whose
 * filter view carries sparsity here; the
 * interpreter asks ar_kernel_sparse_filter_check (ar_kernels.h) first. Not a public header. */
#ifndef AR_SPARSE_CONV_H
#define AR_SPARSE_CONV_H

#include "kernels/ar_kernels.h"

/* Output pixels per tile: the scratch holds one tile's input as [I][AR_SPARSE_TILE] floats. */
#define AR_SPARSE_TILE 32

/* CONV_2D prepare/eval for a sparse filter (input 1): checks as ar_kernel_sparse_filter_check,
 * scratch = I * AR_SPARSE_TILE floats per thread, or O * I floats on the expanded path; no state. */
int ar__sparse_conv_prepare(ar_node_t *node, char *msg, size_t msg_bytes);
void ar__sparse_conv_eval(const ar_node_t *node);
/* FULLY_CONNECTED with sparse weights [O,I] (input 1): called by fully_connected.c's prepare after
 * its own shape checks; scratch as CONV_2D's, no state. */
int ar__sparse_fc_prepare(ar_node_t *node, char *msg, size_t msg_bytes);
void ar__sparse_fc_eval(const ar_node_t *node);

/* Tests pick the loop: 0 portable, 1 AVX2+FMA+F16C, 2 the same with AVX-512F (the expanded path's
 * kernel; the entry-by-entry loops stay AVX2's); -1 = automatic. Returns the ISA now in force,
 * or -1 when the CPU lacks the one asked for; with -1 returns the best available. */
int ar__sparse_set_isa(int isa);
/* Tests pick the path (sparse_conv.c "expanded path"): 0 entry by entry always, 1 expanded
 * whenever the dense filter fits its scratch cap, -1 automatic (by stored share and pixel count).
 * Read at prepare (scratch) and at eval. Returns the mode now in force. */
int ar__sparse_set_dense(int mode);

#endif /* AR_SPARSE_CONV_H */
