/* ar_parallel.h - the thread pool every heavy kernel of an invoke splits its work over.
 *
 * One pool of `threads - 1` helper threads (pthreads) serves any number of callers: the offline
 * tools give each interpreter a pool of its own, the daemon one pool shared by all its invoke
 * workers. A kernel calls ar_parallel_for with its node; the caller runs chunks itself and idle
 * helpers join in. Each participant starts on a contiguous run of the chunks of its own (the
 * caller the first), so that consecutive operators give a thread the same part of their tensors,
 * and takes the chunks left in the others' runs when its own is done.
 *
 * Bit-identical results for every thread count, by one of two rules the kernel picks:
 * - Fixed chunks (ar_parallel_for, _slots): the chunks depend on n and grain alone
 *     chunk c = [c * grain, min(n, (c + 1) * grain)),  c = 0 .. ceil(n / grain) - 1
 *   and fn is called exactly once per chunk, whatever the thread count, with or without a pool
 *   (without one, the chunks run in order on the caller). For work whose result depends on how it
 *   is cut (OpenBLAS bands, whose summation order may follow the block shape; per-chunk partial
 *   results). Kernels: the OpenBLAS GEMM bands, im2col tiles, transpose conv, batch matmul, the
 *   integer kernels, reduce, softmax, convert, the strided copies.
 * - Split by thread count (ar_parallel_for_split, _runs, _split_slots): one run of about n / threads
 *   per thread, cut at multiples of an alignment. For work whose every output element is computed
 *   the same way whatever range holds it: float ADD/MUL/PRELU and the unary passes (elementwise.c),
 *   PAD rows (shape_ops.c), pooling rows (pool.c), RESIZE rows (resize.c), own-GEMM
 *   rows (gemm.c), depthwise output rows or channel blocks (depthwise.c), float MEAN's channels over H, W (reduce.c),
 *   sparse 1x1 conv pixel tiles (sparse_conv.c). tests/check_threads.c holds every model's
 *   bytes equal at 1, 2 and 3 threads.
 * Which thread runs a chunk varies; what a chunk computes must depend only on its range (write
 * disjoint outputs, no shared accumulator).
 *
 * Scheduling (ar_threadpool_enter / leave around an invoke): the pool counts the threads at work -
 * invokes in progress plus helpers inside a chunk - and a helper joins a parallel_for only while
 * that count is below `threads`. So when several invokes run at once (daemon workers of different
 * share groups) the cores go to the invokes first and each splits over what is left; a lone invoke
 * gets every helper. A parallel_for never waits for a helper to become free: the caller runs every
 * chunk nobody took.
 *
 * Invoke-time calls (ar_parallel_for*, enter/leave) never allocate and never block on a lock; the
 * caller sleeps (futex) only while a helper finishes the last chunk it took. While an invoke is in
 * progress (enter .. leave) and a core is free for them, helpers spin between operators for up to
 * AR_POOL_HOT_SPIN_US, so that every operator of the invoke finds them awake (a 2-way split then
 * costs about 0.3 us over the work itself, a futex wake-up tens); otherwise they spin AR_POOL_SPIN_US after their
 * last chunk before they sleep. Nested calls (a chunk calling ar_parallel_for) and concurrent
 * callers are allowed.
 */
#ifndef AR_PARALLEL_H
#define AR_PARALLEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/ar_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most threads a pool may have (its `threads`, helpers + the caller). */
#define AR_POOL_THREADS_MAX 256
/* How long (us) an idle helper keeps looking for work before it sleeps: outside invokes (or when
 * every core is taken), and during an invoke with a core free for it (the longest stretch of an
 * invoke without a split operator it waits through awake). */
#define AR_POOL_SPIN_US 100
#define AR_POOL_HOT_SPIN_US 2000
/* A gap this long (us) between two looks of a spinning helper, or a caller's wait this long
 * (PREEMPTED_WAIT) for a helper's chunk, means a helper was preempted; the pool then spins only
 * AR_POOL_SPIN_US between jobs for AR_POOL_COLD_US (see parallel.c). */
#define AR_POOL_PREEMPTED_US 200
#define AR_POOL_PREEMPTED_WAIT_US 1000
#define AR_POOL_COLD_US 100000

/* Work over the index range [begin, end) (a sub-range of [0, n)). */
typedef void (*ar_range_fn)(void *ctx, int64_t begin, int64_t end);
/* The same, with the participant's slot in [0, max_slots): two chunks running at the same time
 * never have the same slot, so a kernel can give each slot its own part of the node's scratch. */
typedef void (*ar_slot_range_fn)(void *ctx, int32_t slot, int64_t begin, int64_t end);

/* Run fn over [0, n) in chunks of `grain` indices (the last one shorter), on the calling thread
 * plus the idle helpers of node->pool. n <= 0: nothing runs. grain < 1 counts as 1. node->pool
 * NULL (or a pool of one thread): every chunk runs inline, in order. Never allocates. */
void ar_parallel_for(const ar_node_t *node, int64_t n, int64_t grain, ar_range_fn fn, void *ctx);

/* As ar_parallel_for, with at most max_slots participants at once (max_slots < 1 counts as 1),
 * each given its slot (the caller is slot 0). Size per-slot scratch with ar_parallel_threads. */
void ar_parallel_for_slots(const ar_node_t *node, int64_t n, int64_t grain, int32_t max_slots,
                           ar_slot_range_fn fn, void *ctx);

/* For work whose every index comes out the same whatever range it is computed in (elementwise
 * passes, copies, pooling rows, GEMM rows whose each element is one FMA chain in k order): run fn
 * over [0, n) in about equal chunks whose count follows the thread count (see
 * ar_parallel_split_chunks), chunk c = [s(c), s(c + 1)) with s(c) = floor(n * c / chunks) rounded
 * down to a multiple of `align` (s(chunks) = n). Participant i starts on the i-th contiguous run of
 * chunks, so that an operator computes the same fraction of its output on the same thread as the
 * operator before it (the part a core wrote stays in its cache). The split, unlike
 * ar_parallel_for's, depends on the thread count: fn must give each index the same value whatever
 * range holds it (tests/check_threads.c compares every model's outputs across thread counts).
 * Never allocates. */
void ar_parallel_for_split(const ar_node_t *node, int64_t n, int64_t align, int64_t min_part,
                           ar_range_fn fn, void *ctx);
/* As ar_parallel_for_split, in one run per thread and no more (for work that pays a set-up per
 * call, e.g. packing a GEMM operand); so on one thread, fn is called once over [0, n). */
void ar_parallel_for_runs(const ar_node_t *node, int64_t n, int64_t align, int64_t min_part,
                          ar_range_fn fn, void *ctx);
/* The same with at most max_slots participants, each given its slot (as ar_parallel_for_slots). */
void ar_parallel_for_split_slots(const ar_node_t *node, int64_t n, int64_t align, int64_t min_part,
                                 int32_t max_slots, ar_slot_range_fn fn, void *ctx);

/* Chunks ar_parallel_for_split cuts [0, n) into: 1 without a pool of 2+ threads or when n <
 * 2 * min_part (min_part: the least work worth a hand-off to another core, about a microsecond,
 * in the caller's units); else one run per thread (at most threads, none below min_part), each
 * cut into up to AR_PARALLEL_SPLIT_PIECES pieces when it holds that many times
 * AR_PARALLEL_SPLIT_PIECES * min_part, so that a thread done early takes over part of a late
 * one's run. */
int64_t ar_parallel_split_chunks(const ar_node_t *node, int64_t n, int64_t align, int64_t min_part);
#define AR_PARALLEL_SPLIT_PIECES 4

/* Threads an eval of `node` may use at once (>= 1): node->threads as the interpreter set it at
 * prepare (a hand-built node with 0 counts as 1). Prepare sizes per-slot scratch with it; the
 * pool attached at invoke never has more. */
int32_t ar_parallel_threads(const ar_node_t *node);

/* Chunk size for `n` indices of about `cost` units of work each (e.g. multiply-adds per row):
 * the smallest multiple of `align` (>= 1) giving chunks of at least `min_cost` units, so that
 * tiny operators stay in one chunk and big ones split into many. Depends on its arguments only
 * (never on the thread count). */
int64_t ar_parallel_grain(int64_t n, int64_t cost, int64_t min_cost, int64_t align);

/* ---- The pool itself (interpreter and daemon; kernels only see node->pool). ---- */

/* New pool of `threads` (1 .. AR_POOL_THREADS_MAX) threads in all: threads - 1 helpers are
 * started now (threads = 1: none; every parallel_for then runs inline). Errors: AR_EINVAL (thread
 * count out of range), AR_ENOMEM, AR_EIO (pthread_create failed), message says which. */
int ar_threadpool_new(int32_t threads, ar_threadpool_t **out, char *msg, size_t msg_bytes);
/* Stop and join the helpers and free the pool (NULL is fine). No call may be in progress. */
void ar_threadpool_free(ar_threadpool_t *pool);
/* The pool's `threads` (helpers + 1); 1 for NULL. */
int32_t ar_threadpool_threads(const ar_threadpool_t *pool);

/* An invoke starts / ends on the calling thread: counts it as a thread at work (scheduling rule
 * above) and keeps the helpers hot until it ends; enter wakes sleeping helpers when a core is free
 * for them (one futex call). NULL is fine. Never allocates. */
void ar_threadpool_enter(ar_threadpool_t *pool);
/* ar_threadpool_enter, waking sleeping helpers only when `wake`: an invoke none of whose operators
 * split (every parallel_for one chunk, e.g. a small model) has no use for them, and waking them
 * costs the futex call and then their spin through the invoke on a core of their own. */
void ar_threadpool_enter_ex(ar_threadpool_t *pool, bool wake);
void ar_threadpool_leave(ar_threadpool_t *pool);
/* How many parallel_for calls have shared their chunks out on the pool so far (a running count,
 * all callers together; 0 for NULL): an invoke that leaves it unchanged split nothing. */
uint64_t ar_threadpool_splits(const ar_threadpool_t *pool);

/* Run fn(ctx, i) on every thread of the pool at the same time - the caller as i = 0 and each
 * helper as 1 .. threads - 1 - and return when all are done; each participant calls it again
 * until every participant has finished its first call, so that the calls overlap
 * (OpenBLAS maps one work buffer per concurrent caller: warming up every thread at once makes it
 * map all it will need at invoke time). Not for invoke time; one such call at a time per pool. */
void ar_threadpool_run_all(ar_threadpool_t *pool, void (*fn)(void *ctx, int32_t i), void *ctx);

#ifdef __cplusplus
}
#endif
#endif /* AR_PARALLEL_H */
