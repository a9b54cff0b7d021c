/* ar_planner.h - offline memory planner: offsets for buffers with known lifetimes.
 *
 * No I/O, no model format: the caller adds buffers (size in bytes, first_use/last_use operator
 * indices, class, optional alias root), asks for a plan, then reads back offsets and figures.
 * Measure first, commit once: ar_planner_plan computes everything; nothing is allocated for the
 * arena itself (the caller places the arena where it likes, e.g. a region of the daemon's pool).
 *
 * Arena layout produced (offsets relative to the region the caller hands over):
 *
 *   activation arena (non-persistent), reused across operators and invokes
 *   +-------------------------------------------------------------------+
 *   | AR_BUF_ARENA and AR_BUF_SCRATCH buffers at planned, aligned offsets|  arena_bytes
 *   +-------------------------------------------------------------------+
 *   persistent area (separate, never reused)
 *   +----------------------------------+
 *   | AR_BUF_PERSISTENT, packed in order|  persistent_bytes
 *   +----------------------------------+
 *
 * Two buffers may share bytes only if their lifetimes [first_use, last_use] (inclusive operator
 * indices) do not intersect. An alias buffer (alias_of >= 0) takes its root's offset and extends
 * the root's lifetime; it is how in-place operators and RESHAPE are expressed.
 *
 * Lower bound: max over operators k of the bytes of all non-alias arena+scratch buffers live at k
 * (alias chains counted once, with their merged lifetime). No plan can be smaller for this order.
 * Deterministic: ties are broken by buffer index.
 */
#ifndef AR_PLANNER_H
#define AR_PLANNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ar_buf_class {
  AR_BUF_ARENA = 0,       /* ordinary activation (TFLite kTfLiteArenaRw) */
  AR_BUF_PERSISTENT = 1,  /* survives invokes (kTfLiteArenaRwPersistent): folded constants, state */
  AR_BUF_SCRATCH = 2,     /* operator temporary, lifetime [k, k] (e.g. im2col) */
} ar_buf_class_t;

typedef enum ar_strategy {
  AR_STRATEGY_LINEAR = 0,          /* each buffer its own block (SimpleMemoryArena baseline) */
  AR_STRATEGY_FIRST_FIT = 1,       /* order of birth, lowest free block that fits */
  AR_STRATEGY_GREEDY_BY_SIZE = 2,  /* TFLite ArenaPlanner: largest first, best-fit gap */
  AR_STRATEGY_BEST = 3,            /* several orderings/fit rules incl. TFLite's; smallest wins */
} ar_strategy_t;

/* "linear", "first-fit", "greedy-by-size", "best". */
const char *ar_strategy_name(ar_strategy_t s);
/* Parse a strategy name; returns 0 and sets *out, or AR_EINVAL for an unknown name. */
int ar_strategy_parse(const char *name, ar_strategy_t *out);

typedef struct ar_planner ar_planner_t;

/* Figures of a finished plan (bytes). */
typedef struct ar_plan_figures {
  uint64_t arena_bytes;          /* activation arena incl. scratch (what the caller must provide) */
  uint64_t tensor_arena_bytes;   /* the same plan restricted to AR_BUF_ARENA buffers (TFLite's figure) */
  uint64_t lower_bound_bytes;    /* bound for arena+scratch buffers */
  uint64_t tensor_lower_bound_bytes; /* bound for AR_BUF_ARENA buffers only */
  uint64_t naive_bytes;          /* sum of all arena+scratch buffer sizes, unaligned */
  uint64_t persistent_bytes;     /* persistent area, aligned */
  uint64_t scratch_bytes;        /* sum of scratch buffer sizes */
  uint64_t alignment;            /* offset alignment in bytes */
  ar_strategy_t strategy;        /* strategy asked for */
  const char *chosen;            /* with BEST: which ordering/fit rule won (static string) */
} ar_plan_figures_t;

/* New empty planner; offsets will be multiples of `alignment` (a power of two, e.g. 64).
 * Returns NULL on allocation failure or a bad alignment. */
ar_planner_t *ar_planner_new(uint64_t alignment);
void ar_planner_free(ar_planner_t *p);

/* Add a buffer. `first_use` <= `last_use` are operator indices (inclusive). `alias_of` is the
 * index of an earlier buffer whose bytes this one reuses (in-place / reshape), or -1; an alias
 * must not be larger than its root and has the root's class. `id` is an opaque caller value
 * (e.g. the tensor index) kept for reports. Returns the buffer index (>= 0), or AR_EINVAL
 * (bad lifetime, bad alias, size 0 is allowed), AR_ENOMEM. */
int ar_planner_add(ar_planner_t *p, uint64_t size_bytes, int32_t first_use, int32_t last_use,
                   ar_buf_class_t cls, int32_t alias_of, int32_t id);

/* Compute offsets with `strategy`. Can be called again with another strategy (replaces the plan).
 * Errors: AR_EOVERFLOW (sizes), AR_ENOMEM, AR_EPLAN (internal verification failed, only with
 * AR_DEBUG_VERIFY). */
int ar_planner_plan(ar_planner_t *p, ar_strategy_t strategy);

/* Offset of buffer `buf` in its area (activation arena or persistent area). Valid after plan. */
uint64_t ar_planner_offset(const ar_planner_t *p, int buf);
/* Number of buffers added. */
int ar_planner_count(const ar_planner_t *p);

/* Buffer as added, plus its planned offset. */
typedef struct ar_plan_buffer {
  uint64_t size_bytes, offset;
  int32_t first_use, last_use;   /* as added (an alias root's lifetime is extended by its aliases) */
  ar_buf_class_t cls;
  int32_t alias_of, id;
  int32_t root;                  /* buffer whose bytes this one uses (itself unless an alias) */
  int32_t live_first, live_last; /* the root's lifetime merged over its alias chain: what the
                                    plan honoured (equal to first_use/last_use without aliases) */
} ar_plan_buffer_t;
/* Copy buffer `buf`'s record into *out. Returns 0 or AR_EINVAL for a bad index. */
int ar_planner_buffer(const ar_planner_t *p, int buf, ar_plan_buffer_t *out);

/* Largest last_use over arena and scratch buffers plus one: the number of operator steps the
 * plan spans (0 when there are none). */
int32_t ar_planner_steps(const ar_planner_t *p);

/* Figures of the last plan. */
void ar_planner_figures(const ar_planner_t *p, ar_plan_figures_t *out);

/* Verify the last plan: no two buffers whose lifetimes intersect overlap in memory (aliases count
 * as their root), every offset aligned, every extent inside the arena. Returns 0 or AR_EPLAN with
 * a message naming the two buffers (ids) and their offsets/lifetimes. */
int ar_planner_verify(const ar_planner_t *p, char *msg, size_t msg_bytes);

#ifdef __cplusplus
}
#endif
#endif /* AR_PLANNER_H */
