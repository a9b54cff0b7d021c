/* ar_budget.h - the budget table of a plan: text, JSON (jansson) and a swim-lane SVG.
 *
 * The budget table is the contract of a model's memory layout: one row per planner buffer
 * (tensor id, name, class, bytes, offset, first_use, last_use, alias) then the totals. The JSON
 * keys are shared by `arenactl plan --json` and the daemon's GetPlan reply:
 *   arena_bytes, tensor_arena_bytes, lower_bound_bytes, naive_bytes, persistent_bytes,
 *   scratch_bytes, alignment, strategy, lifetimes, ratio_to_bound, operators,
 *   weights ("stored"|"fp32"), weights_bytes, folded_bytes, packed_bytes, widened_bytes
 *   (ar_weight_figures_t), fused: [{conv, depthwise, tensor, bytes}] (expansion convs run inside
 *   their depthwise, ar_interp_op_fused; the tensor has no buffer), fused_bytes,
 *   buffers: [{tensor, name, class, size, offset, first_use, last_use, alias_of}]
 */
#ifndef AR_BUDGET_H
#define AR_BUDGET_H

#include <stdio.h>
#include <jansson.h>

#include "interp/ar_interp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Budget table of a prepared interpreter as a new JSON object (caller owns the reference), or
 * NULL on allocation failure. */
json_t *ar_budget_json(const ar_interp_t *in);

/* Human budget table to `out`. Returns 0 or AR_EIO. */
int ar_budget_print(FILE *out, const ar_interp_t *in);

/* Swim-lane chart: one bar per buffer, x = operator index, y = offset, coloured by class, with
 * the arena line, the lower-bound line and a legend. Returns 0 or AR_EIO. */
int ar_budget_svg(FILE *out, const ar_interp_t *in, const char *title);

#ifdef __cplusplus
}
#endif
#endif /* AR_BUDGET_H */
