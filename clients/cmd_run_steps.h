/* cmd_run_steps.h - the stream mode of `arenactl run` (clients/cmd_run_steps.c). */
#ifndef AR_CMD_RUN_STEPS_H
#define AR_CMD_RUN_STEPS_H

#include <stdint.h>

#include "interp/ar_interp.h"

/* Most --reset-at steps one run takes. */
#define AR_CLI_MAX_RESETS 256

/* Number of steps in a stream directory: k such that DIR/0 .. DIR/<k-1> are all directories. */
int32_t ar_cli_count_steps(const char *dir);

/* Append the step numbers of `arg` ("K" or "K1,K2,...", each in [0, 10^8]) to reset_at[*n_reset..];
 * returns 0, or -1 for garbage, a negative number or more than `max` entries in all. */
int ar_cli_parse_reset_list(const char *arg, int32_t *reset_at, int *n_reset, int max);

/* Replay the stream in `steps_dir` on placed interpreter `in` (its state carries across invokes,
 * TFLite's one-interpreter stream): invoke k reads steps_dir/<k>/input_<i>.bin (exactly each input's
 * byte size, model input order), writes outdir/<k>/output_<j>.bin when outdir is not NULL, and the
 * state is reset (TFLite ResetVariableTensors) before every k in reset_at. Prints one summary line.
 * Returns the exit code: 0, 1 (a missing / wrong-size input file, unwritable output, a failed
 * invoke, each message on stderr naming the step and file), 2 (no step 0, a reset step beyond the
 * stream). */
int ar_cli_run_steps(ar_interp_t *in, const char *steps_dir, const char *outdir, const int32_t *reset_at,
                     int n_reset);

#endif
