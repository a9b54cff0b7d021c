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
 *   buffers: [{tensor, name, class, size, offset, first_use, last_use, alias_of}],
 *   tensors (subgraph 0's count), no_buffer: [{tensor, name, kind, bytes, fusion, reason, operator,
 *   op, by_operator, by_op}] and no_buffer_counts {constant, elided, unused, constant_bytes,
 *   elided_bytes}.
 * Every tensor of subgraph 0 appears exactly once: a buffers row, or a no_buffer entry whose kind
 * says why it has none - "constant" (read in place from the model mapping), "elided" (its
 * producer `operator` never runs: `fusion` "inverted-residual" (an expansion CONV_2D run inside
 * the DEPTHWISE_CONV_2D `by_operator`), "pad-fold" (a PAD whose zeros the DEPTHWISE_CONV_2D or ADD
 * `by_operator` supplies, e.g. the face detectors' channel_padding), "sparse-as-stored" or
 * "fp16-as-stored" (a DENSIFY/DEQUANTIZE whose reader `by_operator` reads the constant as stored)),
 * or "unused" (nothing reads it, or its producer never runs for want of readers). The text table
 * counts them and lists the elided and unused ones with the reason.
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
