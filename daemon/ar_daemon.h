/* ar_daemon.h - arenad's internal structures: server, connections, models, share groups, jobs.
 *
 * Threads. One libuv loop thread owns everything below: the pool's region list, the model
 * registry, the share groups, the connections. Worker threads (the libuv threadpool, sized by the
 * config's `workers`) run group jobs only (placing models into their regions, invokes). Preparing a
 * model (open, read the file into memory the daemon owns, sha256, verify, plan; no pool access)
 * runs on one load thread of its own (ar_models.c), so loads queue behind each other and never
 * take a worker from invokes; its completions come back to the loop through a uv_async_t.
 *
 * Serialization. Every model belongs to a group: the named share group it was loaded with, or a
 * private group of its own. A group runs at most one job at a time: the loop thread keeps a FIFO
 * of jobs per group and hands the head to the threadpool only when the group is idle, and the
 * worker holds the group's mutex while it copies inputs in, invokes and copies outputs out. So a
 * model's interpreter never runs on two threads at once, models sharing an activation region
 * never overlap, and no worker thread ever blocks waiting for another group.
 *
 * Pool layout per model:
 *   persistent region   one per model, ar_interp_persistent_bytes (folded constants, state)
 *   activation region   one per group, sized to the largest member's ar_interp_arena_bytes
 * When a member larger than the group's region joins, a new larger region is allocated at once
 * (so ENOSPC is reported at load time and nothing is disturbed), and a PLACE job queued behind
 * the group's in-flight invokes moves every member into it; the old region is freed after. The
 * region never shrinks while the group has members; it is freed with the last member.
 *
 * Compaction (ar_models_compact; after an unload; when a load would fail with ENOSPC although
 * enough bytes are free). The loop thread queues a MOVE job in every group that owns a region
 * above the pool's first free block. A MOVE job reaching the head of its group does not run: the
 * group parks (busy, nothing else starts) once the invokes it had accepted are done; loads that
 * finish preparing meanwhile wait. When every such group is parked the loop applies the compact
 * layout to the region list and the offsets at once, then each parked group's MOVE job runs on a
 * worker and re-places the members whose regions moved (ar_interp_place at the new addresses:
 * constants folded again, kernel init rebuilds node state, so no pointer into an old place
 * survives); nothing is read from the old places, so the groups move in parallel and in any order,
 * and the regions outside the moved groups (groups below the first hole) keep serving throughout.
 * After the layout is applied the free bytes are one block at the end of the pool, so loads and
 * growth allocate there without touching a place still being vacated.
 */
#ifndef AR_DAEMON_H
#define AR_DAEMON_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <uv.h>

#include "common/ar_error.h"
#include "daemon/ar_config.h"
#include "daemon/ar_conn.h"
#include "daemon/ar_decode.h"
#include "daemon/ar_latency.h"
#include "daemon/ar_pool.h"
#include "daemon/ar_rss.h"
#include "interp/ar_interp.h"
#include "kernels/ar_parallel.h"
#include "proto/arenad.pb-c.h"

typedef struct ar_group ar_group_t;
typedef struct ar_dmodel ar_dmodel_t;
typedef struct ar_job ar_job_t;

/* A verified model: the daemon's private, read-only copy of a model file (never the file itself,
 * so rewriting or truncating the file changes nothing), shared by every loaded model with the same
 * sha256 whatever its path (refcounted; `refs` and the list are guarded by the server's cache
 * mutex because the load thread inserts while the loop thread releases and reads stats). */
typedef struct ar_cached_model {
  uint8_t sha256[32];
  ar_model_t *model;
  int refs;
  struct ar_cached_model *next;
} ar_cached_model_t;

struct ar_group {
  char name[AR_NAME_MAX];        /* "" for the private group of an ungrouped model */
  char owner[AR_POOL_OWNER_MAX]; /* pool owner label: "group:<name>" or the model's name */
  bool has_region;
  uint64_t act_offset, act_bytes;
  int refs;                      /* models attached (placing, ready or unloading) */
  bool busy;                     /* a job of this group is on a worker (or the group is parked) */
  ar_job_t *parked;              /* its MOVE job, waiting for the compaction's layout */
  bool move_queued;              /* a MOVE job is queued, parked or running */
  bool relocated;                /* the compaction being applied moved its activation region */
  ar_job_t *head, *tail;         /* FIFO of jobs waiting for the group */
  pthread_mutex_t lock;          /* held by the worker around a job */
  ar_group_t *next;
};

typedef enum { AR_MODEL_LOADING, AR_MODEL_READY, AR_MODEL_UNLOADING } ar_model_state_t;

/* A reply target: a connection + request id, or an internal request (config / reload). */
typedef struct ar_reply_to {
  ar_conn_t *conn;               /* NULL for internal requests (errors go to the log) */
  uint64_t id;
  ar_peer_t peer;                /* the connection's peer credentials (known = false: internal) */
  const char *request;           /* the request's name for the audit log ("load_model"; a static
                                    string), NULL for a frame refused before it was dispatched */
  bool audit;                    /* an admin request (load_model, unload_model, reload, compact,
                                    resize_input, a configuration load): every failed answer is
                                    logged as an audit line (ar_server.c); EPERM always is */
  char model[AR_NAME_MAX];       /* the model the request names, for the audit line ("" = none) */
  bool internal_config;          /* counts toward the startup/reload READY notification */
  bool reload;                   /* a load of a reload transaction (see ar_models_apply_config) */
  uint32_t reload_index;         /* its models[] index in the new configuration */
  void *frame;                   /* request only: the frame block an invoke's input data points into
                                    (ar_decode_strip_inputs); handed back to the connection when
                                    the worker is done (ar_conn_frame_release) or freed with the
                                    request (ar_decode_request_free); NULL elsewhere */
  uint64_t frame_bytes;          /* its capacity */
  int fd;                        /* request only: the descriptor a register_buffer frame came with,
                                    owned by the request (ar_conn_register_buffer closes it); -1
                                    for every request a connection delivers without one */
  void *keep;                    /* reply only: a malloc'd block the reply's data points into, handed
                                    over with it (ar_conn_send_owned); NULL elsewhere */
  uint64_t keep_bytes;
  uint64_t reply_reserved;       /* request only: the bytes its reply holds of the daemon-wide budget
                                    of unwritten replies until it is answered (ar_conn_reserve_reply;
                                    given back by ar_conn_reply_reserved_release) */
} ar_reply_to_t;

typedef struct ar_waiter {
  ar_reply_to_t to;
  struct ar_waiter *next;
} ar_waiter_t;

struct ar_dmodel {
  char name[AR_NAME_MAX];
  char path[4096];               /* as requested */
  char realpath[PATH_MAX];       /* what `path` resolved to at load (reported, never reopened) */
  bool only_if_changed;          /* a reload's re-read of an unchanged entry: dropped when the
                                    file's sha256 is the one served */
  char group_name[AR_NAME_MAX];
  ar_strategy_t strategy;
  ar_weights_t weights;          /* how its constant weights are held (ar_interp_options_t) */
  ar_weight_figures_t wfig;      /* weights / folded / packed / widened bytes, taken at load */
  ar_model_state_t state;
  ar_cached_model_t *cm;         /* the shared mapping */
  ar_interp_t *interp;
  ar_group_t *group;             /* set once its regions are allocated */
  bool placed;
  uint64_t placed_act_offset;    /* activation region the interpreter currently points into */
  bool relocated;                /* the compaction being applied moved its persistent region */
  bool has_persistent;
  uint64_t persistent_offset, persistent_region_bytes;
  uint64_t arena_bytes, persistent_bytes;
  /* Its plan's figures (lower bound, scratch) as of its load or last re-plan, copied on the loop
   * thread while no job of its group ran: the stats read these, never the interpreter, which a
   * worker may be re-planning. */
  ar_plan_figures_t plan_fig;
  uint64_t inflight;             /* accepted invokes not yet answered */
  ar_waiter_t *unload_waiters;   /* unload requests waiting for inflight == 0 */
  bool from_config;              /* loaded from the configuration: a reload may unload it */
  bool shadow;                   /* loaded by a reload in progress: invisible until it commits */
  bool retired;                  /* replaced by a reload: finishes accepted invokes, then goes */
  uint64_t serial;               /* unique per load (srv->model_serial), never reused */
  uint64_t rereads;              /* a reload's re-read of a run-time load: that instance's serial
                                    (0 = none); dropped if that instance is gone or going */
  /* statistics (loop thread) */
  uint64_t invokes, errors, heap_allocs_in_invoke;
  uint64_t dropped;              /* invokes not run: their client had disconnected */
  ar_latency_t latency;
  uint64_t last_invoke_us;       /* the previous invoke's run time (inline_invoke_us rule); 0 = none */
  /* The connection (identity only, never dereferenced) of a peer that is not an admin whose input
   * shapes the model's current plan is for (the last re-plan was its request's); when that
   * connection closes the model goes back to its stored shapes (ar_models_conn_gone), so a region
   * it grew (up to max_resize_activation_bytes) is given back. NULL: stored shapes, or an admin's. */
  const void *shaped_by;
  /* One entry per graph input (rank, then dims), allocated at load: where apply_shapes keeps the
   * shapes of the current plan while it tries a request's, so a plan that does not fit goes back
   * to them without allocating. */
  int32_t (*saved_shapes)[1 + AR_MAX_RANK];
  /* The shapes of its graph inputs, then outputs (rank, then dims), as of its load or last re-plan,
   * copied on the loop thread while no job of its group ran (with plan_fig): what model
   * descriptions (ListModels, load replies) show, never read from the interpreter, which a worker
   * may be re-planning. Allocated at load. */
  int32_t (*io_shapes)[1 + AR_MAX_RANK];
  /* Sessions (ar_sessions.c): bytes of one state slot (ar_interp_state_bytes, taken with the plan's
   * figures; 0 = stateless, sessions ignored), the table (NULL until the first session), and a
   * reset of the default state asked for by a ResetSession, applied by the next invoke without a
   * session. */
  uint64_t state_bytes;
  struct ar_sessions *sessions;
  bool default_reset;
  /* The state layout the loop thread knows (ar_interp_state_generation after the last re-plan it
   * took the figures of; the session slots are in it) and what that re-plan reset ("" none). */
  uint32_t state_generation;
  char state_note[256];
  /* Its entry of the stats JSON as last printed, and the key of what it showed (ar_stats.c). */
  char *stats_text;
  uint64_t stats_text_key;
  ar_dmodel_t *next;
};

/* What an invoke job holds of its session (daemon/ar_sessions.h; filled on the loop at accept). */
typedef struct ar_state_chunk ar_state_chunk_t;
typedef struct ar_session_use {
  bool stateful;                 /* the model has state: bind a slot before the invoke */
  bool reset;                    /* write the slot's initial state before the invoke */
  int32_t entry;                 /* the session's entry in the model's table, -1 = the default state */
  ar_state_chunk_t *chunk;       /* where its slot lives (NULL = the interpreter's default slot) */
  uint32_t slot;                 /* index in the chunk */
} ar_session_use_t;

typedef enum { AR_JOB_PREPARE, AR_JOB_PLACE, AR_JOB_INVOKE, AR_JOB_MOVE } ar_job_kind_t;

struct ar_job {
  uv_work_t work;
  ar_job_kind_t kind;
  ar_server_t *srv;
  ar_reply_to_t to;
  ar_dmodel_t *model;            /* NULL for MOVE */
  ar_group_t *group;             /* MOVE: the group it moves (holds a reference) */
  int rc;
  char msg[AR_MSG_BYTES];
  /* PREPARE (runs on the load thread; inputs copied so it never reads srv->cfg) */
  char realpath[PATH_MAX];
  uint64_t max_model_bytes;
  uint32_t n_dirs;               /* model_dirs to confine the path to; 0 = no confinement (config) */
  char (*dirs)[AR_CONFIG_DIR_MAX];  /* malloc'd copy of the n_dirs entries */
  /* PLACE: members to move into the group's current region, the region, and regions to free */
  ar_dmodel_t **moves;
  int n_moves;
  uint8_t *act_base;
  uint64_t act_bytes;
  uint64_t free_after[2];
  int n_free_after;
  bool after_compact;            /* PREPARE, INVOKE: a compaction already ran for this load's (region growth's) ENOSPC */
  /* MOVE: `moves` are re-placed into act_base; placed_act_offset becomes move_act_offset */
  uint64_t move_act_offset;
  bool move_counted;             /* part of the compaction in progress (not a stale MOVE) */
  /* INVOKE */
  Arenad__Request *req;          /* owns the decoded request; inputs point into it */
  uint8_t *out;                  /* the outputs the reply carries, back to back, allocated at accept */
  uint64_t out_bytes;
  /* INVOKE, zero-copy (ar_shm.h): per input where its bytes are (the request's data or a range of
   * a registered buffer, checked at accept) and how many; per output the range of a registered
   * buffer it is written to (NULL: into `out`, sent in the reply) and that range's bytes; the
   * buffers named, one reference each (dropped when the job is answered). One allocation: io. */
  void *io;
  const uint8_t **in_src;
  uint64_t *in_len;
  uint8_t **out_dst;
  uint64_t *out_cap;
  ar_shm_buf_t **shm;
  uint32_t n_shm;
  uint64_t t_accept_us, t_start_us, t_end_us, heap_allocs;
  ar_session_use_t sess;          /* INVOKE: its session (ar_sessions.c); stateful false otherwise */
  /* INVOKE / ResizeInput: new input shapes (see apply_shapes in ar_invoke.c) */
  bool resize_only;              /* a ResizeInput request: re-plan, no run */
  bool may_restate;              /* its new shapes may change the state's layout, which every
                                    session shares: an admin's request, or a restore */
  bool restore;                  /* resize_only, internal: back to the stored input shapes (its
                                    shaper disconnected); never grows the region (req is NULL) */
  bool regrow;                   /* re-queued after the group region grew: move members first */
  bool replanned;                /* the worker re-planned the model (new_* hold its figures) */
  uint64_t grow_pers_to;         /* the new plan needs this many persistent bytes: a larger
                                    persistent region first (grow_persistent in ar_invoke.c) */
  bool restate;                  /* its session's slot is in the state layout before the re-plan:
                                    the loop carries the model's slots, then runs it again */
  bool restated;                 /* ... done once already */
  char state_note[256];          /* what the re-plan of this job reset (the reply's state_reset) */
  uint64_t grow_to;              /* the new plan needs this many activation bytes: grow first */
  bool on_loop;                  /* runs on the loop thread (inline_invoke_us), not a worker */
  bool on_worker;                /* handed to the threadpool (counted in jobs_on_workers) */
  uint64_t new_arena, new_persistent;
  ar_job_t *next;                /* group FIFO link */
};


/* What one compaction did (CompactResponse; bytes, µs). */
typedef struct ar_compact_figures {
  uint32_t regions_moved, models_replaced, free_blocks_before, free_blocks_after;
  uint64_t bytes_moved, free_before, largest_before, free_after, largest_after, released;
  uint64_t t_start_us, t_end_us;
} ar_compact_figures_t;

/* ---- ar_memory.c: resident memory by part (daemon/ar_rss.h), memory_limit ---- */
typedef struct ar_memory {
  ar_rss_status_t status;          /* the kernel's RSS and peak */
  uint64_t pool_resident_bytes;    /* resident pages of the pool mapping */
  uint64_t models_resident_bytes;  /* resident pages of the model file copies, each copy once */
  uint32_t model_mappings;         /* copies in the cache */
  ar_rss_blas_t blas;              /* OpenBLAS's buffers */
  ar_rss_heap_t heap;              /* malloc (heap part: heap.in_use_bytes) */
  ar_rss_rest_t rest;              /* code + stacks (rest part), and other anonymous pages */
  uint64_t shm_bytes;              /* shared-memory buffers clients registered (mapped bytes) */
  uint64_t shm_resident_bytes;     /* their resident pages (mincore: the memfds' pages, which the
                                      clients populate and their cgroups are charged for) */
  uint64_t accounted_bytes;        /* pool + models + blas + heap + code + stacks + shm */
  int64_t unaccounted_bytes;       /* rss - accounted */
} ar_memory_t;

/* The clients' shared-memory mappings a measurement counts: [start, end) address pairs and their
 * mapped bytes, listed by the loop thread (ar_conn_shm_mappings walks the connections, which only
 * the loop may read) and handed to the stats thread with the walk it asks for. mincore on a range
 * the loop has unmapped since only finds it not resident. */
typedef struct ar_memory_shm {
  size_t n;
  uintptr_t (*ranges)[2];
  uint64_t bytes;
} ar_memory_shm_t;

/* The stats snapshot (ar_stats.c): the figures that cost a walk (mincore over the pool's regions
 * and the model copies, /proc/self/status and smaps), measured by the stats thread off the event
 * loop. The loop fills `key`, `taken_us` and the regions' offsets and bytes when it asks for a walk;
 * the thread fills the rest; the loop then owns it again and answers GetStats from it. */
typedef struct ar_snap_region {
  uint64_t offset, bytes, resident_bytes;
} ar_snap_region_t;

typedef struct ar_snap_copy {
  const ar_cached_model_t *cm;     /* compared, never dereferenced (the copy may be gone) */
  uint64_t resident_bytes;
} ar_snap_copy_t;

typedef struct ar_snapshot {
  uint64_t key;                    /* the layout and models it was taken for (ar_stats.c, stats_key) */
  uint64_t taken_us;               /* when the walk was asked for (monotonic, µs) */
  uint64_t walk_us;                /* how long the walk took on the stats thread */
  int rc;                          /* 0, or why `mem` is missing (msg) */
  char msg[AR_MSG_BYTES];
  ar_memory_t mem;
  size_t n_regions;
  ar_snap_region_t *regions;       /* n_regions, in the pool's order at `taken_us` */
  size_t n_copies;
  ar_snap_copy_t *copies;          /* the model copies of the cache at the walk */
  ar_memory_shm_t shm;             /* the clients' shared-memory mappings, listed by the loop */
  struct ar_snapshot *next;        /* thread hand-over link */
} ar_snapshot_t;

/* One peer uid's token bucket for GetStats / GetPlan (ar_stats.c). */
typedef struct ar_rate_bucket {
  bool used;
  uid_t uid;
  uint64_t tokens;                 /* millionths of a request */
  uint64_t last_us;
} ar_rate_bucket_t;

#define AR_RATE_BUCKETS 64         /* uids tracked at once; the longest unused makes room */

/* How the layers call each other without naming each other's files: the connection layer calls
 * admit/dispatch upward, ar_models.c answers through reply/reply_error and reports job_done and
 * status_changed; ar_server.c fills these at start (ar_server_init_ops), a test or fuzzer may
 * fill its own. */
typedef struct ar_server_ops {
  /* A scanned frame, before anything is allocated for it: 0 or an AR_E* code with `msg`. */
  int (*admit)(ar_server_t *srv, const ar_decode_scan_t *scan, char *msg, size_t msg_bytes);
  /* A decoded request; takes ownership of `req`; answers exactly once through reply*. */
  void (*dispatch)(ar_server_t *srv, const ar_reply_to_t *to, Arenad__Request *req);
  /* Send `resp` (id set here) to `to` and release the reference its request took. */
  void (*reply)(ar_server_t *srv, const ar_reply_to_t *to, Arenad__Response *resp);
  /* Error reply: status code from an AR_E* value and a message. */
  void (*reply_error)(ar_server_t *srv, const ar_reply_to_t *to, int err, const char *msg);
  /* A job finished / a connection closed: a draining server may stop now. */
  void (*job_done)(ar_server_t *srv);
  void (*conn_closed)(ar_server_t *srv);
  /* The set of loaded models changed (STATUS= for the service manager). */
  void (*status_changed)(ar_server_t *srv);
  /* A reload committed or rolled back (a SIGHUP that came during it runs now); may be NULL. */
  void (*reload_done)(ar_server_t *srv);
  /* A connection closed (`conn`: its identity, not to be dereferenced); may be NULL. */
  void (*conn_gone)(ar_server_t *srv, const void *conn);
} ar_server_ops_t;

struct ar_server {
  ar_server_ops_t ops;
  uv_loop_t *loop;
  ar_config_t cfg;
  const char *config_path;       /* NULL when started without --config */
  uv_pipe_t listener;
  bool listening, socket_activated, unlink_socket;
  struct ar_metrics *metrics;    /* the scrape endpoint (metrics_listen; daemon/ar_metrics.h), NULL = off */
  uv_signal_t sig_term, sig_int, sig_hup;
  uv_timer_t watchdog;
  bool watchdog_on;
  ar_pool_t pool;
  ar_threadpool_t *tpool;        /* the intra-operator thread pool every invoke shares (config
                                  * `threads`), started with the server, freed at stop */
  ar_dmodel_t *models;
  ar_group_t *groups;
  ar_cached_model_t *cache;
  pthread_mutex_t cache_lock;
  /* The load thread: PREPARE jobs queued by the loop (load_head), finished ones handed back
   * (load_done) and picked up by the loop on load_async. Guarded by load_lock. */
  pthread_t load_thread;
  pthread_mutex_t load_lock;
  pthread_cond_t load_cond;
  ar_job_t *load_head, *load_tail, *load_done;
  bool load_quit, load_started;
  uv_async_t load_async;
  /* Extra model_dirs from --model-dir (kept across reloads). */
  uint32_t n_cmdline_dirs;
  const char *const *cmdline_dirs;
  ar_conn_t *conns;
  uint64_t n_conns, requests, start_us;
  uint64_t jobs_outstanding;     /* PREPARE + group jobs not finished */
  int config_loads_pending;      /* config/reload loads not answered yet */
  /* Reload transaction: the new configuration, its loads not answered yet, the first error. */
  ar_config_t *reload_cfg;
  int reload_pending;
  int reload_rc;
  char reload_msg[AR_MSG_BYTES];
  bool reload_has_waiter;        /* a Reload request waits for the transaction's outcome */
  ar_reply_to_t reload_to;
  uint32_t reload_unchanged;     /* entries re-read and found unchanged */
  bool reload_again;             /* a SIGHUP came during a reload: one more when it is done */
  uint64_t model_serial;         /* the last ar_dmodel_t.serial given */
  const char *test_reload_gate;  /* test hook (env ARENAD_TEST_RELOAD_GATE, read once at start): the
                                    load thread reads one byte from this FIFO before each reload
                                    load, so a test can act while a reload is in progress */
  const char *test_load_gate;    /* test hook (env ARENAD_TEST_LOAD_GATE): the same before each load
                                    of the configuration at start (the daemon is not ready meanwhile) */
  _Atomic bool load_abort;       /* drain_timeout_ms passed: the load thread answers its queued loads
                                    and the one in progress (at its next step) with ESTATE */
  int listen_fd;                 /* the adopted socket's fd when socket-activated, else -1 */
  bool draining;
  int cancel_invokes;            /* set (atomically) when the drain deadline passes: a WHILE in an
                                    invoke still running stops (ar_interp_options_t.cancel) */
  uv_timer_t drain_timer;        /* drain_timeout_ms deadline */
  bool drain_timer_on;
  uv_timer_t sweep;              /* connection timeouts (ar_conn.c) */
  bool sweep_on;
  bool trim_pending;             /* a large frame was freed: malloc_trim at the next sweep */
  uint32_t decode_inline_bytes;  /* 0 = AR_DECODE_INLINE_BYTES (the fuzzer lowers it) */
  /* Connection-layer counters (stats "daemon"): connections refused at accept, frames not
   * completed within request_timeout_ms, connections closed by send_timeout_ms / idle_timeout_ms,
   * frames refused by the scan or the decode budget. */
  uint64_t conns_refused, frames_timed_out, closed_send_timeout, closed_idle, frames_refused;
  /* The daemon-wide budget of pending frame bytes (ar_conn.h, "pending"): the bytes the frames
   * being received now hold (what arrived plus at most one step each), and the frames refused because they did not fit. */
  uint64_t pending_frame_bytes, frames_over_budget;
  /* Times a connection's read buffer was allocated or grown (ar_conn.c, conn_alloc): a frame of
   * len bytes grows it about log2(len / AR_CONN_FRAME_STEP_BYTES) + 2 times, not once per read. */
  uint64_t read_buffer_grows;
  /* Bytes of the blocks all connections keep for reuse (ar_conn.h, "blocks"), at most
   * AR_CONN_SPARE_DAEMON_BYTES. */
  uint64_t spare_block_bytes;
  /* The daemon-wide budget of unwritten replies (max_unwritten_reply_bytes; ar_conn.h, "read"):
   * reply bytes queued on all connections and not yet written, the bytes reserved for the replies
   * of invokes accepted and not yet answered, and the connections held back by it (a list through
   * ar_conn_t.held_prev/held_next) that the write or answer taking the total below it resumes. */
  uint64_t unwritten_reply_bytes, reserved_reply_bytes;
  ar_conn_t *held_conns;
  /* Per peer uid (ar_conn.h, "shares"): each uid's use of the budgets; the uids with a connection
   * (entries with refs > 0: the budgets are shared among them); the connections closed to make
   * room for another (the longest idle non-admin one), refused because their uid was throttled,
   * and frames refused by their uid's share; the shared-memory bytes registered on all
   * connections; the most reply bytes (queued + reserved) one connection ever held. */
  ar_uid_use_t *uids;
  uint32_t peer_uids;
  uint64_t closed_for_room, conns_throttled, frames_over_uid_share, shm_bytes, conn_reply_peak;
  int exit_code;
  /* Pool compaction (ar_compact.c; drawn above). `compacting` from the start until every MOVE job
   * ended; `compact_committed` once the layout is applied. Compact requests arriving before that
   * join this compaction's waiters, later ones the next compaction's (compact_again). */
  bool compacting, compact_committed, compact_again;
  int compact_moving;            /* MOVE jobs of the applied layout still running */
  int compact_rc;                /* 0, or why the compaction gave up (answered to its waiters) */
  char compact_msg[AR_MSG_BYTES];
  ar_waiter_t *compact_waiters, *compact_next_waiters;
  ar_job_t *compact_deferred, *compact_deferred_tail;   /* finished PREPAREs, INVOKEs to regrow: wait for the layout */
  ar_compact_figures_t compact_fig;
  uint64_t compactions, compact_bytes_moved;   /* totals for the stats */
  /* Times the free pool blocks' pages were given back to the system (madvise MADV_DONTNEED):
   * after each compaction and after each unload no compaction followed (ar__compact_after_free). */
  uint64_t pool_releases;
  /* Busy polling (ar_server.c): while active, the loop polls without sleeping; it stops itself
   * busy_poll_us after the last activity (ar_server_activity). */
  uv_idle_t busy_poll;
  bool busy_poll_init;
  uint64_t last_activity_us;
  /* Invokes run on the loop thread (ar_invoke.c, inline_invoke_us): queued by group_kick, run by
   * the inline handle at the loop's next idle phase (never from inside group_kick, so no caller
   * sees a job finish under it). jobs_on_workers counts group jobs handed to the threadpool. */
  uv_idle_t inline_run;
  bool inline_init;
  ar_job_t *inline_head, *inline_tail;
  uint64_t jobs_on_workers, invokes_inline;
  /* Stats (ar_stats.c): the stats thread walks (ar_snapshot_t) asked for by the loop (stats_todo)
   * and handed back (stats_done) under stats_lock; the loop keeps the last one (stats_snap) and the
   * GetStats requests waiting for the walk in flight (stats_walking). stats_walks counts the walks
   * started, stats_refused the GetStats/GetPlan refused by the rate limit. */
  pthread_t stats_thread;
  pthread_mutex_t stats_lock;
  pthread_cond_t stats_cond;
  uv_async_t stats_async;
  bool stats_started, stats_quit, stats_walking;
  ar_snapshot_t *stats_todo, *stats_done, *stats_snap;
  ar_waiter_t *stats_waiters, *stats_waiters_tail;
  uint64_t stats_walks, stats_refused;
  ar_rate_bucket_t rate_buckets[AR_RATE_BUCKETS];
  /* Admin peers' GetStats past their uid's bucket wait here (FIFO) for a token instead of being
   * refused; the timer answers them as tokens come (stats_paced counts them). */
  uv_timer_t stats_pace;
  bool stats_pace_init;
  ar_waiter_t *paced_head, *paced_tail;
  uint64_t stats_paced;
};

/* Monotonic clock, microseconds. */
uint64_t ar_now_us(void);

/* Loop thread: something arrived or was answered. With busy_poll_us > 0 the loop keeps polling
 * without sleeping until busy_poll_us have passed with no further activity (ar_server.c). */
void ar_server_activity(ar_server_t *srv);

/* ---- ar_models.c (registry, loads), ar_model_file.c, ar_invoke.c (group jobs), ar_compact.c,
 * ar_stats.c, ar_reload.c; their shared internals: ar_models_int.h ---- */
/* Cache lock, load thread and its async handle (the loop must be set). 0 or AR_EINTERNAL. */
int ar_models_init(ar_server_t *srv);
/* The drain deadline passed: loads queued or in progress give up (ESTATE "daemon is shutting down")
 * at their next step (before reading the file, before planning it, or in a test gate), so that
 * SIGTERM is not held up by a load beyond drain_timeout_ms plus one such step. */
void ar_models_abort_loads(ar_server_t *srv);
/* Close the load thread's async handle (drain finished: no load is queued). */
void ar_models_close_handles(ar_server_t *srv);
/* Unload everything (after the loop stopped: no job is running). */
void ar_models_shutdown(ar_server_t *srv);
ar_dmodel_t *ar_models_find(ar_server_t *srv, const char *name);
/* Start a load; the reply goes to `to` when it finishes (or at once on a validation error). */
/* `weights` "" = the configuration's "weights" (or the interpreter's default). */
void ar_models_load(ar_server_t *srv, const ar_reply_to_t *to, const char *name, const char *path,
                    const char *group, const char *strategy, const char *weights);
void ar_models_unload(ar_server_t *srv, const ar_reply_to_t *to, const char *name);
/* Compact the pool (see above); answers `to` with a CompactResponse when the moved models serve
 * from their new places, or at once when nothing needs to move. */
void ar_models_compact(ar_server_t *srv, const ar_reply_to_t *to);
/* A connection closed: the models whose plan is for its (non-admin) input shapes go back to their
 * stored shapes, and their groups' regions shrink to what the members need then (ar_invoke.c). */
void ar_models_conn_gone(ar_server_t *srv, const void *conn);
/* Validate an Invoke request (takes ownership of `req`) and queue it. */
void ar_models_invoke(ar_server_t *srv, const ar_reply_to_t *to, Arenad__Request *req);
/* GetStats: answer `to` with the stats JSON, now from the last snapshot when it is younger than
 * stats_refresh_ms and was taken for the current pool layout and models, else when the walk it
 * starts (or the one in flight) is done (ar_stats.c). */
void ar_models_get_stats(ar_server_t *srv, const ar_reply_to_t *to);
/* The stats JSON from `snap` and the live counters (malloc'd string, caller frees) or NULL. */
char *ar_models_stats_json(ar_server_t *srv, const ar_snapshot_t *snap);

/* The stats snapshot GetStats would answer from now (loop thread): *snap = srv->stats_snap when it
 * is fresh (same layout and models, younger than stats_refresh_ms, no walk under way), else NULL
 * and a walk is started unless one is under way; its end calls ar_metrics_snapshot_ready. 0, or
 * AR_ENOMEM (the walk could not start). */
int ar_stats_fresh_snapshot(ar_server_t *srv, const ar_snapshot_t **snap);
/* The per-uid rate limit of GetStats and GetPlan (`what`: "get_stats", "get_plan"): false when the
 * request may go on; true when it was taken care of: refused (answered EBUSY naming the limit and
 * when to retry) for a peer that is not an admin, or, for an admin's GetStats, queued until its
 * uid's bucket has a token (then answered). Admins' GetPlan and internal requests go on. */
bool ar_models_rate_limited(ar_server_t *srv, const ar_reply_to_t *to, const char *what);
/* Start / stop the stats thread (ar_models_init, ar_models_shutdown) and close its handle. */
int ar_stats_init(ar_server_t *srv);
void ar_stats_close_handles(ar_server_t *srv);
void ar_stats_shutdown(ar_server_t *srv);
/* Fill a ModelInfo (strings point into `m`; inputs/outputs arrays malloc'd: free with
 * ar_models_info_clear). */
void ar_models_info(ar_server_t *srv, const ar_dmodel_t *m, Arenad__ModelInfo *info);
void ar_models_info_clear(Arenad__ModelInfo *info);
/* "3 models, 12345678 of 67108864 pool bytes used" for STATUS=. */
void ar_models_status(ar_server_t *srv, char *buf, size_t n);
/* Start-up: load every model of srv->cfg (already validated by ar_models_check_config). */
void ar_models_load_initial(ar_server_t *srv);
/* Reload: make the loaded set match `cfg`'s models and re-read every loaded model's file, as one
 * transaction (`waiter`, may be NULL: a Reload request answered with the changes or the error). Takes ownership of
 * `cfg` (malloc'd). New and changed models are loaded, planned and placed in the pool next to the
 * running ones, invisible to clients; when every load succeeded the reload commits: each changed
 * model's new instance replaces the old one (which finishes the invokes it accepted, then is
 * unloaded), the new ones appear, and the models that came from the previous configuration and
 * are no longer listed are unloaded. Models loaded at run time (LoadModel) are left alone unless
 * the new configuration names them. If any load fails, everything it loaded is dropped, the
 * running configuration stays in effect and the error (naming the model) is logged. Returns false
 * (and frees `cfg`) when a reload is already in progress. */
bool ar_models_apply_config(ar_server_t *srv, ar_config_t *cfg, const ar_reply_to_t *waiter);
/* Whether the peer of a request may load, unload and reload (admin_uids / admin_gids; internal
 * requests always may). */
bool ar_models_peer_is_admin(const ar_server_t *srv, const ar_reply_to_t *to);
/* The reply hook's answer for the answer to a reload-transaction load. */
void ar_models_reload_answered(ar_server_t *srv, const ar_reply_to_t *to, int code, const char *message);
/* arenad --check-config (out = stdout) and start-up (out = NULL): load, plan and lay out every
 * model of `cfg` in a layout-only pool; print the layout to `out` when non-NULL. Returns 0 or the
 * first error, the message naming the model ("models[1] 'palm': ..."). */
int ar_models_check_config(const ar_config_t *cfg, FILE *out, char *msg, size_t msg_bytes);

/* ---- ar_memory.c (ar_memory_t above) ---- */
/* A pool region a load has just allocated (offset, bytes, kind). */
typedef struct ar_memory_region {
  uint64_t offset, bytes;
  ar_region_kind_t kind;
} ar_memory_region_t;

/* Measure every part now (loop thread, or the stats thread: it reads only the pool's mapping, which
 * never moves, the cache under its lock, and `shm` as the loop listed it; NULL: none). With `copies`
 * non-NULL also each model copy's resident bytes (up to `cap`; *n_copies = how many were recorded).
 * Errors: AR_EIO (/proc unreadable) with `msg`. */
int ar_memory_measure(ar_server_t *srv, const ar_memory_shm_t *shm, ar_memory_t *mem, ar_snap_copy_t *copies,
                      size_t cap, size_t *n_copies, char *msg, size_t msg_bytes);

/* The clients' shared-memory mappings now (loop thread only): fills `shm` (ranges allocated, up to
 * AR_MEMORY_MAX_SHM; free them with ar_memory_shm_free). 0, or AR_ENOMEM. */
#define AR_MEMORY_MAX_SHM 1024
int ar_memory_shm_list(const ar_server_t *srv, ar_memory_shm_t *shm);
void ar_memory_shm_free(ar_memory_shm_t *shm);
/* The stats "memory" object from a snapshot (jansson json_t *; {"error": msg} when /proc was
 * unreadable), with its age in ms at `now_us`. */
struct json_t *ar_memory_json(ar_server_t *srv, const ar_snapshot_t *snap, uint64_t now_us);
/* Resident bytes of one model file copy (mincore). */
uint64_t ar_memory_mapping_resident(const ar_cached_model_t *cm);
/* memory_limit at a load, after its file copy is read and its pool regions (`regions`) are
 * allocated: 0 when memory_limit is 0 or the accounted total plus the regions' bytes not resident
 * yet stays within it, else AR_ENOSPC with `msg` naming the figures (the caller frees the
 * regions and drops the model; nothing else changes). */
int ar_memory_admit_load(ar_server_t *srv, const char *name, const ar_memory_region_t *regions, int n_regions,
                         char *msg, size_t msg_bytes);

/* ---- ar_server.c ---- */
/* Fill srv->ops with the daemon's dispatch and reply functions (ar_server_start does it). */
void ar_server_init_ops(ar_server_t *srv);
/* Log one line: to stderr with an "arenad: " prefix (foreground, systemd's journal), or to
 * syslog (LOG_DAEMON, LOG_INFO, ident "arenad") after ar_log_use_syslog. Never fails. */
void ar_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From now on ar_log writes to syslog: for a daemon that detached from its terminal (arenad.c
 * points its standard streams at /dev/null then). */
void ar_log_use_syslog(void);
/* --log-file PATH: from now on ar_log appends its lines to PATH (made absolute, created mode 0640),
 * each "2026-12-07T17:30:01.123Z arenad[PID]: LINE" in one write, ahead of syslog and stderr (a
 * line the file refuses, e.g. the disk is full, goes there instead). Errors: AR_EIO (msg names the
 * file and the system error), AR_EINVAL (path too long). */
int ar_log_open_file(const char *path, char *msg, size_t msg_bytes);
/* Reopen the --log-file path in place (SIGHUP, after logrotate renamed the file); no-op without
 * one. On failure logging goes on to the old file (logged), AR_EIO. */
int ar_log_reopen(void);
/* Close the --log-file (at exit); ar_log writes to stderr or syslog again. */
void ar_log_close_file(void);

#endif /* AR_DAEMON_H */
