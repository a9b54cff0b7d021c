/* ar_models_int.h - declarations the daemon's model files share (ar_models.c, ar_model_file.c,
 * ar_invoke.c, ar_compact.c, ar_stats.c, ar_reload.c) and nothing else includes. The `ar__`
 * prefix marks them internal; the daemon's API is ar_daemon.h. All run on the loop thread
 * unless said otherwise.
 */
#ifndef AR_MODELS_INT_H
#define AR_MODELS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon/ar_daemon.h"

/* ar_models.c: the registry, loads and unloads. */

/* Reply an error whose message is formatted like printf (at most AR_MSG_BYTES). */
void ar__answer_error(ar_server_t *srv, const ar_reply_to_t *to, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* `sha` as 64 lower-case hex digits and a NUL. */
void ar__sha_hex(const uint8_t sha[32], char out[65]);
void ar__registry_remove(ar_server_t *srv, ar_dmodel_t *m);
/* A reload's re-read of a run-time load whose instance a client unloaded since the reload began. */
bool ar__rereads_gone(ar_server_t *srv, const ar_dmodel_t *m);
/* Free a model that never became visible (failed load) or was finalized: interpreter, persistent
 * region, group reference, cache reference. */
void ar__model_destroy(ar_server_t *srv, ar_dmodel_t *m);
/* Unload now (no invoke in flight): out of the registry, freed, waiters answered. */
void ar__finalize_unload(ar_server_t *srv, ar_dmodel_t *m);
/* Unload without a waiter (reload): new invokes no longer find it; accepted ones finish first. */
void ar__retire(ar_server_t *srv, ar_dmodel_t *m);
/* Start a load (see its definition for `shadow`, `from_config`, `only_if_changed`, `rereads`). */
void ar__load_model(ar_server_t *srv, const ar_reply_to_t *to, const char *name, const char *path,
                    const char *group, const char *strategy, const char *weights, bool shadow, bool from_config,
                    bool only_if_changed, uint64_t rereads);
/* Loop thread, after the load thread prepared the model (or after a compaction it waited for). */
void ar__prepare_after(ar_job_t *job);
/* The input (outputs false) or output tensors of `in` described for a reply: one allocation
 * (free() it); NULL with *n_out 0 on no memory. */
Arenad__Tensor **ar__tensor_descs(ar_interp_t *in, bool outputs, size_t *n_out);
/* Loop thread, no job of m's group running: copy its graph inputs' and outputs' shapes into
 * m->io_shapes (what ar_models_info shows). */
void ar__io_snapshot(ar_dmodel_t *m);
/* Answer a LoadModel with the model's info. */
void ar__answer_loaded(ar_server_t *srv, const ar_reply_to_t *to, ar_dmodel_t *m);

/* ar_model_file.c: model files and the cache of verified models. */

/* Open (confined to `dirs` when n_dirs > 0), copy, verify and plan one model file; with `srv`
 * the model goes through the cache (*cm_out), without (--check-config) it is *model_out. */
int ar__prepare_model(ar_server_t *srv, const char *path, uint64_t max_bytes, uint32_t n_dirs,
                      const char (*dirs)[AR_CONFIG_DIR_MAX], ar_strategy_t strategy, ar_weights_t weights,
                      uint32_t threads, char *realpath_out, ar_cached_model_t **cm_out, ar_model_t **model_out,
                      ar_interp_t **interp_out, char *msg, size_t msg_bytes);
/* Models sharing `cm` (read under the cache lock). */
int ar__cache_refs(ar_server_t *srv, ar_cached_model_t *cm);
/* Drop one reference to `cm` (NULL is a no-op); the last frees the model. */
void ar__cache_release(ar_server_t *srv, ar_cached_model_t *cm);

/* ar_invoke.c: share groups, their job queues, invokes. */

/* The share group of `m` (created with its first member); NULL on no memory. */
ar_group_t *ar__group_attach(ar_server_t *srv, ar_dmodel_t *m);
/* Drop a reference to `g`; the last frees its activation region and `g`. */
void ar__group_detach(ar_server_t *srv, ar_group_t *g);
/* Append `job` to the group's queue (ar__group_kick runs it when the group is idle). */
void ar__group_push(ar_group_t *g, ar_job_t *job);
void ar__group_kick(ar_server_t *srv, ar_group_t *g);
/* Hand a group job to the threadpool; the uv_queue_work error, or 0. */
int ar__queue_work(ar_server_t *srv, ar_job_t *job);
/* Loop thread: a group job ended (also called directly for a job that could not be queued). */
void ar__group_after(uv_work_t *w, int status);
/* Drop an invoke job's references on registered buffers and its io arrays (NULL is a no-op). */
void ar__job_free_io(ar_job_t *job);
/* Regions were freed: compact when compact_after_unload says so, else re-check a compaction. */
void ar__compact_after_free(ar_server_t *srv);

/* ar_compact.c: pool compaction. */

/* Start a compaction, or join the one in progress (`to` NULL: no reply wanted). */
void ar__compact_start(ar_server_t *srv, const ar_reply_to_t *to);
/* Whenever a group may have parked or the pool changed: queue MOVE jobs, apply when all parked. */
void ar__compact_check(ar_server_t *srv);
/* Hold `job` (a load's regions, or a region growth) until the compaction's layout is applied. */
void ar__compact_defer(ar_server_t *srv, ar_job_t *job);
/* The last MOVE job ended: answer the waiters, start the next compaction if one was asked for. */
void ar__compact_finish(ar_server_t *srv);

#endif
