/* ar_test_stream.h - the stream harness of the Check suites (issue 27): run a model over a golden
 * stream directory on ONE interpreter and compare every step's outputs.
 *
 * A stream directory is the layout of ../shared/golden_state (its NOTES.md) and of
 * ../shared/ref/native/tflite_run --steps:
 *   STREAM/meta.json                 "steps": N, "reset_at": [K, ...] (others ignored here)
 *   STREAM/steps/<k>/input_<i>.bin   input i of invoke k (exactly the tensor's bytes)
 *   STREAM/steps/<k>/output_<j>.bin  native TFLite's output j of invoke k
 * The state is reset (TFLite ResetVariableTensors) right before each step of reset_at.
 *
 * Rule (golden_state/NOTES.md): integer (and bool) outputs byte for byte; float32 outputs
 * |got - golden| <= 1e-4 * max|golden| + 1e-5 elementwise, max over that output of that step.
 *
 * Link tests/ar_test_stream.c into the suite (it needs the interpreter and jansson).
 */
#ifndef AR_TEST_STREAM_H
#define AR_TEST_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "interp/ar_interp.h"

#define AR_TS_MAX_RESETS 64

/* $AR_MODELS_STATE_DIR, else <srcdir>/../shared/models_state; $AR_GOLDEN_STATE_DIR, else
 * <srcdir>/../shared/golden_state. */
const char *ar_ts_models_dir(void);
const char *ar_ts_golden_dir(void);
/* 1 when both folders exist. Otherwise prints "SKIP <what>: <dir> is absent (...)" on stdout and
 * returns 0: the caller's test then passes without asserting (the files are never committed). */
int ar_ts_have_state_models(const char *what);

/* What a stream's meta.json says. */
typedef struct ar_ts_meta {
  int32_t steps;                        /* invokes in the stream */
  int32_t n_reset;
  int32_t reset_at[AR_TS_MAX_RESETS];   /* reset before these steps */
} ar_ts_meta_t;

/* Read STREAM/meta.json. Errors (negative ar_error codes, msg names the file and key): AR_ENOENT,
 * AR_EINVAL (not JSON, steps missing or < 1, reset_at not a list of steps in [0, steps)). */
int ar_ts_read_meta(const char *stream_dir, ar_ts_meta_t *meta, char *msg, size_t msg_bytes);

/* Hooks the caller may set (any may be NULL), e.g. to count allocations around each invoke
 * (tests/check_noalloc.c) or to reset a bound state slot. */
typedef struct ar_ts_hooks {
  void *ctx;
  /* Reset the state before a step of reset_at; returns 0 or an ar_error code with msg set. NULL:
   * the default reset (ar_ts_reset_default). */
  int (*reset)(void *ctx, ar_interp_t *in, int32_t step, char *msg, size_t msg_bytes);
  void (*before_invoke)(void *ctx, ar_interp_t *in, int32_t step);   /* inputs already written */
  void (*after_invoke)(void *ctx, ar_interp_t *in, int32_t step);    /* before the comparison */
} ar_ts_hooks_t;

/* The interpreter's default state slot back to its initial value (variable tensors at 0 / their
 * zero point, CALL_ONCE re-armed: ar_interp_reset_state). Returns 0. */
int ar_ts_reset_default(ar_interp_t *in, char *msg, size_t msg_bytes);

/* How a stream compared. */
typedef struct ar_ts_report {
  int32_t steps;              /* steps run */
  int32_t bad_steps;          /* steps with at least one output out of the rule */
  int32_t first_bad_step;     /* -1 when none */
  double worst_ratio;         /* float outputs: worst |got - golden| / (1e-4*max|golden| + 1e-5) over
                               * all steps (<= 1 passes); 0 with integer outputs only */
  int64_t bytes_differing;    /* integer outputs: bytes that differ, all steps */
  char first_bad[512];        /* "step 3 output 0 (name): element 7 got 0.5 want 0.25 (...)" */
} ar_ts_report_t;

/* Compare one output of `bytes` bytes (dtype as the tensor's): float32 by the rule, any other
 * dtype byte for byte. Returns the number of elements (float) or bytes (others) out of the rule;
 * *ratio (may be NULL) gets the worst float ratio as above; `why` (may be NULL) describes the first
 * bad element. */
int64_t ar_ts_compare(ar_dtype_t dtype, const void *got, const void *want, uint64_t bytes, double *ratio,
                      char *why, size_t why_bytes);

/* Replay the stream in stream_dir on placed interpreter `in` (whose state the caller has left in
 * its initial value: a fresh place does that): for k in 0..meta->steps-1, reset if k is in
 * reset_at, write the inputs, invoke, compare every output to the golden one. Fills *rep.
 * Returns 0 when the stream ran (rep says whether it matched), or a negative ar_error code with msg
 * naming the step and file: AR_ENOENT / AR_ESHAPE (a missing or wrong-size file), an invoke or
 * reset error. No allocation between before_invoke and after_invoke. */
int ar_ts_replay(ar_interp_t *in, const char *stream_dir, const ar_ts_meta_t *meta, const ar_ts_hooks_t *hooks,
                 ar_ts_report_t *rep, char *msg, size_t msg_bytes);

/* Replay the stream on several state slots of one placed interpreter, interleaved by `plan`, one
 * character per action: an upper-case letter ('A' + s) binds slot s (ar_interp_bind_state), writes
 * that slot's next step's inputs and invokes (each slot runs the stream from step 0 on, with its
 * own resets of reset_at); a lower-case letter resets slot s (ar_interp_reset_state: its stream
 * starts again at step 0); '*' places the interpreter again (ar_interp_place_owned, new regions).
 * Slot 0 ('A') is the interpreter's default slot, the others are allocated here (64-byte
 * aligned) and reset before the first action. A slot past the stream's last step is an error.
 * before_invoke runs before the bind, after_invoke after the invoke: the switch is counted with
 * the invoke. `rep` counts invokes (steps) and mismatches; first_bad names the action index.
 * Same returns as ar_ts_replay. */
int ar_ts_replay_slots(ar_interp_t *in, const char *stream_dir, const ar_ts_meta_t *meta, const char *plan,
                       const ar_ts_hooks_t *hooks, ar_ts_report_t *rep, char *msg, size_t msg_bytes);

/* Load `model_path`, prepare it with `opt` (NULL: ar_interp_options_default), place it in regions
 * of its own, read stream_dir/meta.json and replay (ar_ts_replay); frees everything. Same returns,
 * plus the load and prepare errors (msg: "MODEL: ..."). */
int ar_ts_run_model(const char *model_path, const char *stream_dir, const ar_interp_options_t *opt,
                    const ar_ts_hooks_t *hooks, ar_ts_report_t *rep, char *msg, size_t msg_bytes);

#endif
