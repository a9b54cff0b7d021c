/* ar_sessions.h - sessions of stateful models (issue 27): one job, the session table and the
 * state slots of a model.
 *
 * A stateful model (ar_interp_state_bytes > 0) keeps, per open session, a STATE SLOT of exactly
 * its state bytes (a multiple of 64) in the pool. Slots are packed in chunks (pool regions of kind
 * AR_REGION_STATE, owner "<model>:sessions"; 1 slot, then doubling up to 256 KiB a chunk), so a
 * slot costs its bytes and no pool region of its own: 10,000 sessions of a model with 768 state bytes hold 7.68 MB plus at most one chunk's unused
 * tail. A chunk is freed when its last slot is; all go with the model's unload.
 *
 * Threads. The table (ids, owners, counters, chunk list) is the loop thread's. An invoke's
 * session is resolved on the loop when the invoke is accepted (ar_sessions_accept: start, reset,
 * end applied in acceptance order, which is the order the group runs them in), so a worker reads
 * only the chunk of the slot its job holds (ar_sessions_slot: chunk offset, written by the loop only
 * while the model's group is parked for a compaction). A job holds its session (and so its slot)
 * until ar_sessions_done; an ended session's slot is freed then.
 *
 * Expiry is lazy: a session idle for session_idle_timeout_ms (no invoke accepted or running) is
 * expired when it is next looked up, when room is needed, or at a GetStats: its slot is freed and
 * its id kept (up to max_sessions_per_model ids), so its next invoke is ESTATE "expired". A reload
 * that replaces the model's file ends its sessions the same way (ar_sessions_replaced).
 */
#ifndef AR_SESSIONS_H
#define AR_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/ar_daemon.h"

#define AR_SESSION_ID_MAX 64   /* bytes of a session id, without the NUL */

/* ar_session_use_t (what an invoke job holds of its session) is in ar_daemon.h, with the job. */

/* Loop thread, an Invoke of `m` being accepted: resolve its `session` (may be NULL) for `to`'s
 * uid into *use (start / reset / end applied now). 0, or an AR_E* code with msg (EINVAL bad id,
 * ENOENT unknown, ESTATE expired, EPERM another uid's, EBUSY a limit, ENOSPC the pool). On 0 the
 * caller must call ar_sessions_done once the job ends (answered, failed or dropped). */
int ar_sessions_accept(ar_server_t *srv, ar_dmodel_t *m, const ar_reply_to_t *to, const Arenad__Session *session,
                       ar_session_use_t *use, char *msg, size_t msg_bytes);

/* Worker, group lock held: the slot to bind (NULL: the default slot). */
void *ar_sessions_slot(const ar_server_t *srv, const ar_session_use_t *use);

/* Worker, group lock held, before the job's invoke: bind the job's slot (and reset it when asked).
 * A stateless model costs one test. 0, or an error with msg (ESTATE: the slot is smaller than the
 * state a re-plan made; the interpreter's bind error). */
int ar_sessions_bind(const ar_server_t *srv, ar_interp_t *in, const ar_session_use_t *use, char *msg,
                     size_t msg_bytes);
/* Worker, group lock held: whether the job's session slot holds a state layout older than the
 * interpreter's (its own re-plan just changed it: the loop must carry the slots first). */
bool ar_sessions_stale(const ar_session_use_t *use, const ar_interp_t *in);
/* Loop thread, no job of m's group on a worker, after a re-plan changed m's state layout
 * (ar_interp_state_generation): every slot chunk is carried into a new pool region at the new slot
 * size (ar_interp_carry_state: pieces whose bytes are unchanged keep their state, the others start
 * again; a chunk keeps its slot indices, so jobs holding a slot find it), the old region freed. A
 * chunk the pool has no room for: its sessions end (counted evicted; their next invoke: ENOENT). */
void ar_sessions_restate(ar_server_t *srv, ar_dmodel_t *m);
/* Worker, after the invoke: back to the default slot, so that between jobs the interpreter never
 * points into a session chunk (which a compaction may move while the group is parked). */
void ar_sessions_unbind(ar_interp_t *in, const ar_session_use_t *use);

/* Loop thread: the job holding `use` ended (its invoke ran or not). */
void ar_sessions_done(ar_server_t *srv, ar_dmodel_t *m, const ar_session_use_t *use);

/* Loop thread: a ResetSessionRequest (answers it). */
void ar_sessions_reset_request(ar_server_t *srv, const ar_reply_to_t *to, const Arenad__ResetSessionRequest *r);

/* Loop thread, a reload committed `m` in place of `old` (same name, another file): every session
 * of `old` still open or expired becomes an expired id of `m` (owner kept, counted in
 * ended_by_reload), so its next invoke is ESTATE "ended when a reload replaced the model" and not
 * ENOENT nor a fresh state; the start flag opens it again on `m`. The state itself is not carried:
 * it belongs to the old weights. Jobs already accepted on `old` finish there. */
void ar_sessions_replaced(ar_server_t *srv, const ar_dmodel_t *old, ar_dmodel_t *m);

/* Loop thread, the model is destroyed: its chunks back to the pool, its table freed. */
void ar_sessions_free(ar_server_t *srv, ar_dmodel_t *m);

/* Compaction (loop thread): the model owning the state chunk at pool offset `offset` (NULL: none)
 * and, via *field, the offset field to rewrite. */
ar_dmodel_t *ar_sessions_chunk_owner(ar_server_t *srv, uint64_t offset, uint64_t **field);

/* Stats (loop thread): expire idle sessions, then the model's "sessions" object (NULL for a
 * stateless model); *key gets a value that changes whenever a figure does. */
json_t *ar_sessions_stats_json(ar_server_t *srv, ar_dmodel_t *m, uint64_t *key);

/* Figures for a bench or test: open sessions, pool bytes of the chunks, state bytes per slot. */
typedef struct ar_sessions_figures {
  uint64_t open, expired, evicted, started, ended, ended_by_reload, chunks, chunk_bytes, state_bytes;
} ar_sessions_figures_t;
void ar_sessions_figures(const ar_dmodel_t *m, ar_sessions_figures_t *f);

#endif
