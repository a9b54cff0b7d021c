/* ar_config.h - the daemon's configuration file (JSON, read with jansson).
 *
 * Example (/etc/arenad/arenad.json):
 *   {
 *     "socket": "/run/arenad/arenad.sock", "socket_mode": "0660", "socket_group": "arenad",
 *     "metrics_listen": "127.0.0.1:9464",
 *     "pool_bytes": 67108864, "workers": 2, "threads": 2, "max_frame_bytes": 67108864,
 *     "max_pending_frame_bytes": "256M",
 *     "max_pending_frame_bytes_per_uid": "64M", "admin_reserved_connections": 4,
 *     "max_connections": 256, "max_connections_per_uid": 64, "max_inflight_per_connection": 64,
 *     "max_pending_reply_bytes": "16M", "max_unwritten_reply_bytes_per_uid": "64M",
 *     "max_decode_bytes": "132M", "max_queue_per_model": 256,
 *     "max_buffers_per_connection": 16, "max_buffer_bytes_per_connection": "256M",
 *     "max_buffer_bytes_per_uid": "1G",
 *     "request_timeout_ms": 10000, "idle_timeout_ms": 300000, "send_timeout_ms": 30000,
 *     "drain_timeout_ms": 5000, "busy_poll_us": 200, "inline_invoke_us": 5000,
 *     "max_connections": 256, "max_model_bytes": "256M", "weights": "stored",
 *     "memory_limit": "448M",
 *     "admin_uids": [0], "admin_gids": [], "model_dirs": ["/var/lib/arenad/models"],
 *     "models": [
 *       {"name": "palm", "path": "/var/lib/arenad/models/palm_detection_lite.tflite",
 *        "group": "hands", "strategy": "best", "weights": "stored"},
 *       ...
 *     ]
 *   }
 * Every key but "models" is optional (defaults below); unknown keys are errors. Sizes are bytes
 * (integers, or strings with a K/M/G suffix such as "64M").
 */
#ifndef AR_CONFIG_H
#define AR_CONFIG_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define AR_NAME_MAX 64          /* model / group name length limit, bytes incl. NUL */
#define AR_CONFIG_MAX_MODELS 64
#define AR_CONFIG_POOL_MIN (64ull * 1024)   /* pool_bytes range, inclusive */
#define AR_CONFIG_POOL_MAX (1ull << 40)     /* 1 TiB: larger is a typo, not a gateway */
#define AR_CONFIG_BUSY_POLL_MAX 100000u    /* busy_poll_us, inline_invoke_us: at most 100 ms */
#define AR_CONFIG_BUSY_POLL_DEFAULT 200u   /* busy_poll_us when the file says nothing */
#define AR_CONFIG_INLINE_INVOKE_DEFAULT 5000u   /* inline_invoke_us when the file says nothing */
#define AR_CONFIG_THREADS_MAX 256               /* threads range 1..this (0 = online CPUs) */
#define AR_CONFIG_STATS_REFRESH_MAX 3600000u  /* stats_refresh_ms: at most an hour */
#define AR_CONFIG_STATS_RATE_MAX 100000u      /* stats_rate_per_s, stats_burst */
#define AR_CONFIG_WHILE_DEFAULT (1u << 20)    /* max_while_iterations (AR_INTERP_MAX_WHILE_ITERATIONS) */
#define AR_CONFIG_WHILE_MAX (1u << 31)        /* max_while_iterations, at most */
#define AR_CONFIG_SESSIONS_MAX 1000000u       /* max_sessions_per_model, max_sessions_per_uid */
#define AR_CONFIG_SESSION_IDLE_MAX 604800000u /* session_idle_timeout_ms: 7 days */
#define AR_CONFIG_MAX_IDS 32                /* entries of admin_uids, admin_gids */
#define AR_CONFIG_MAX_DIRS 16               /* entries of model_dirs */
#define AR_CONFIG_DIR_MAX 1024              /* bytes of a model_dirs entry, incl. NUL */
/* model_dirs when the file names none and configures no model (the unit's StateDirectory). */
#define AR_CONFIG_DEFAULT_MODEL_DIR "/var/lib/arenad/models"

typedef struct ar_config_model {
  char name[AR_NAME_MAX];       /* [A-Za-z0-9_.-]+ */
  char path[4096];
  char group[AR_NAME_MAX];      /* "" = its own activation region */
  char strategy[32];            /* planner strategy name, default "best" */
  char weights[8];              /* "stored" | "fp32"; "" = the file's top-level "weights" */
} ar_config_model_t;

typedef struct ar_config {
  char socket_path[108];        /* default /run/arenad/arenad.sock */
  uint32_t socket_mode;         /* default 0660 */
  char socket_group[AR_NAME_MAX]; /* "" = leave the group as created */
  /* The built-in Prometheus scrape endpoint (daemon/ar_metrics.h): "" (the default) = off, else an
   * IPv4 address and port ("127.0.0.1:9464"), an IPv6 one ("[::1]:9464") or an absolute Unix
   * socket path; checked by ar_config_parse_listen. */
  char metrics_listen[108];
  uint64_t pool_bytes;          /* default 64 MiB */
  uint32_t workers;             /* invoke worker threads, default 2 */
  uint32_t threads;             /* threads of the intra-operator pool (kernels/ar_parallel.h) that
                                 * every invoke shares: 1..256, 0 (the default) = the online CPUs
                                 * (ar_config_threads) */
  uint64_t max_frame_bytes;     /* default 64 MiB */
  /* Daemon-wide budget of the bytes held by frames being received, what of each arrived plus a
   * step (daemon/ar_conn.h, "pending"): a frame whose next step does not fit is refused (EBUSY)
   * and its connection closed. At least max_frame_bytes; default 4 x max_frame_bytes (256 MiB with
   * the default max_frame_bytes). */
  uint64_t max_pending_frame_bytes;
  /* One peer uid's share of max_pending_frame_bytes (daemon/ar_conn.h, "shares"): its frames being
   * received hold at most this many bytes, and while frames of other uids are being received too,
   * at most max_pending_frame_bytes / (uids with frames being received). Admin peers are held only
   * to the latter. In [max_frame_bytes, max_pending_frame_bytes]; default the larger of
   * max_frame_bytes and max_pending_frame_bytes / 4 (64 MiB with the defaults). */
  uint64_t max_pending_frame_bytes_per_uid;
  uint32_t max_connections;     /* default 256 */
  /* Slots of max_connections only admin peers may take (daemon/ar_conn.h, "accept"): non-admins
   * hold at most max_connections - admin_reserved_connections. Below max_connections; default 4. */
  uint32_t admin_reserved_connections;
  /* Connection limits (daemon/ar_conn.h); timeouts in milliseconds, 0 disables one. */
  uint32_t max_connections_per_uid;   /* default 64: one peer uid's share of max_connections */
  uint32_t max_inflight_per_connection; /* default 64: requests taken, reply not yet written */
  uint64_t max_pending_reply_bytes;   /* default 16 MiB: unwritten reply bytes before reads stop */
  uint64_t max_unwritten_reply_bytes; /* default 64 MiB: the same over all connections (ar_conn.h) */
  /* One peer uid's share of max_unwritten_reply_bytes (ar_conn.h, "shares"): at most this, and
   * while other uids have replies outstanding too, at most max_unwritten_reply_bytes / (uids with
   * replies outstanding). Admin peers are held only to the latter. At most
   * max_unwritten_reply_bytes (the default). */
  uint64_t max_unwritten_reply_bytes_per_uid;
  uint64_t max_decode_bytes;          /* default 132 MiB: hard cap of one frame's decode budget */
  uint32_t max_queue_per_model;       /* default 256: invokes queued or running per model (EBUSY) */
  /* Shared-memory buffers (RegisterBuffer, daemon/ar_shm.h) per connection: how many, and their
   * bytes in all (mapped address space); 0 buffers disables registration. */
  uint32_t max_buffers_per_connection;       /* default 16 */
  uint64_t max_buffer_bytes_per_connection;  /* default 256 MiB */
  /* ... and over all connections of one peer uid (admin peers exempt); default 1 GiB. */
  uint64_t max_buffer_bytes_per_uid;
  uint32_t request_timeout_ms;        /* default 10000: a started frame must complete within */
  uint32_t idle_timeout_ms;           /* default 300000: nothing in flight and nothing read */
  uint32_t send_timeout_ms;           /* default 30000: queued replies making no progress */
  uint32_t drain_timeout_ms;          /* default 5000: SIGTERM drain deadline */
  /* Latency against CPU (daemon/ar_server.h, "Busy polling"): after the last socket activity
   * the event loop keeps polling without sleeping for busy_poll_us, so a request that follows
   * within that time is taken without a wake-up (about 20 us each on a virtual machine's idle
   * CPU). 0 = always sleep. At most AR_CONFIG_BUSY_POLL_MAX. */
  uint32_t busy_poll_us;              /* default AR_CONFIG_BUSY_POLL_DEFAULT (200) */
  /* A lone invoke (no other job queued or on a worker) whose model's previous invoke took at most
   * inline_invoke_us runs on the event loop thread instead of a worker: two thread hand-offs
   * fewer, at the price of the loop answering nothing else meanwhile (bounded by this value).
   * 0 = never. */
  uint32_t inline_invoke_us;          /* default AR_CONFIG_INLINE_INVOKE_DEFAULT (5000) */
  uint64_t max_model_bytes;     /* largest model file a load reads, default 256 MiB */
  /* New input shapes (ResizeInput, or an Invoke carrying other shapes) from a peer that is not an
   * admin may grow a share group's activation region up to this many bytes, no further (EPERM);
   * admin peers up to the pool. 0 = only admins may grow a region. Default 32 MiB. */
  uint64_t max_resize_activation_bytes;
  /* How constant weights are held ("stored" | "fp32", ar_weights_t) for models and Load requests
   * that do not say; "" = the interpreter's default (ar_interp_options_default: stored). */
  char weights[8];
  /* Bound of the daemon's accounted resident memory (daemon/ar_rss.h: pool, model copies,
   * OpenBLAS, heap, code and stacks): a load that would bring it over is refused (ENOSPC).
   * 0 (the default) = no bound. */
  uint64_t memory_limit_bytes;
  /* Stats (daemon/ar_stats.c): the expensive figures (mincore over the pool and the model copies,
   * /proc/self/smaps) are measured off the event loop, at most once per stats_refresh_ms while the
   * pool's layout and the models stay the same (0 = at each GetStats, still off the loop); GetStats
   * is answered from that snapshot with the live counters. GetStats and GetPlan from peers that are
   * not admins are limited per uid: stats_rate_per_s on average, bursts of stats_burst (EBUSY past
   * them); stats_rate_per_s 0 = no limit. */
  uint32_t stats_refresh_ms;    /* default 1000, at most AR_CONFIG_STATS_REFRESH_MAX */
  uint32_t stats_rate_per_s;    /* default 10, at most AR_CONFIG_STATS_RATE_MAX */
  uint32_t stats_burst;         /* default 20, 1..AR_CONFIG_STATS_RATE_MAX */
  /* Sessions of stateful models (daemon/ar_sessions.c): open sessions per model (0 = sessions
   * refused), per model for one uid that is not an admin, and the idle time after which a session
   * expires (its slot reused, its next invoke answered ESTATE "expired"; 0 = never). */
  uint32_t max_sessions_per_model;    /* default 1024, 0..AR_CONFIG_SESSIONS_MAX */
  uint32_t max_sessions_per_uid;      /* default 256, 1..AR_CONFIG_SESSIONS_MAX */
  uint32_t session_idle_timeout_ms;   /* default 600000, 0..AR_CONFIG_SESSION_IDLE_MAX */
  bool compact_after_unload;    /* compact the pool after each unload and group growth, default true */
  uint32_t max_while_iterations;  /* a WHILE still going after this many iterations ends its invoke
                                   * (ar_interp_options_t), 1..AR_CONFIG_WHILE_MAX, default
                                   * AR_CONFIG_WHILE_DEFAULT; for models loaded after it is set */
  uint32_t max_while_ms;        /* a WHILE still going after this many ms ends its invoke
                                 * (ETIMEDOUT), 0 = no time bound, default 10000, at most
                                 * AR_CFG_TIMEOUT_MAX; for models loaded after it is set */
  /* Peers allowed to load, unload and reload (SO_PEERCRED uid, or a gid: the primary one or any of
   * the peer's supplementary groups, SO_PEERGROUPS). Default: uids 0 and the daemon's own effective
   * uid, no gids. */
  uint32_t n_admin_uids, n_admin_gids;
  uid_t admin_uids[AR_CONFIG_MAX_IDS];
  gid_t admin_gids[AR_CONFIG_MAX_IDS];
  /* Directories a LoadModel path must resolve into (realpath, so no symlink leads out). Default:
   * the directories of the configured models' paths, or AR_CONFIG_DEFAULT_MODEL_DIR when the file
   * configures no model. `model_dirs_default` tells which. */
  uint32_t n_model_dirs;
  bool model_dirs_default;
  char model_dirs[AR_CONFIG_MAX_DIRS][AR_CONFIG_DIR_MAX];
  uint32_t n_models;
  ar_config_model_t models[AR_CONFIG_MAX_MODELS];
} ar_config_t;

/* Defaults, no models (admin_uids 0 and geteuid(), model_dirs AR_CONFIG_DEFAULT_MODEL_DIR). */
void ar_config_defaults(ar_config_t *cfg);

/* Read and validate the JSON file at `path` into *cfg (caller-owned). A relative models[i].path
 * is made absolute against the directory of `path` (realpath: symlinks followed), so it names the
 * same file at start-up, at --check-config and at a reload. Errors: AR_ENOENT/AR_EIO
 * (file), AR_ECONFIG with `msg` naming the key and the problem, e.g.
 * "/etc/arenad/arenad.json: models[1].group: must be a string of [A-Za-z0-9_.-], at most 63 bytes";
 * every message begins with `path` and ": " (callers print it as it is, without naming the file
 * again). */
int ar_config_load(const char *path, ar_config_t *cfg, char *msg, size_t msg_bytes);

/* The top-level keys ar_config_load accepts, in the order an unknown key's message lists them:
 * sets *keys to the static table and returns its length. */
size_t ar_config_root_keys(const char *const **keys);

/* Add `dir` to cfg->model_dirs unless present (the --model-dir option). AR_ECONFIG when the list
 * is full or the path is empty or too long. */
int ar_config_add_model_dir(ar_config_t *cfg, const char *dir, char *msg, size_t msg_bytes);

/* Parse a size string ("123", "64K", "64M", "1G"; powers of 1024, suffix case-insensitive) within
 * [lo, hi] bytes, as the file's size keys are parsed (used for --pool-bytes). Errors: AR_ECONFIG,
 * `msg` naming `key`, e.g. "--pool-bytes: 1024 bytes is out of range [65536, 1099511627776]". */
int ar_config_parse_size(const char *key, const char *s, uint64_t lo, uint64_t hi, uint64_t *out, char *msg,
                         size_t msg_bytes);

/* A parsed metrics_listen: a TCP address (IPv4/IPv6 literal and port, in `sa`) or a Unix socket
 * path. */
typedef struct ar_listen_addr {
  bool is_unix;
  char path[108];
  struct sockaddr_storage sa;   /* sockaddr_in or sockaddr_in6, port in network order */
} ar_listen_addr_t;

/* Parse a listen address for `key`: "A.B.C.D:PORT", "[IPV6]:PORT" (PORT 1..65535; addresses only,
 * host names are not resolved) or an absolute Unix socket path shorter than 108 bytes. Errors:
 * AR_ECONFIG with `msg` naming `key`, e.g. "metrics_listen: \"localhost:9464\": the host must be an
 * IPv4 address (127.0.0.1) or an IPv6 address in brackets ([::1]); names are not resolved". */
int ar_config_parse_listen(const char *key, const char *s, ar_listen_addr_t *out, char *msg, size_t msg_bytes);

/* A hard bound for the whole process from memory_limit (systemd's MemoryMax=): the limit plus a
 * quarter for what the accounted total leaves out by design (request frames and replies in flight,
 * the page cache of model files being read), rounded up to a MiB; 0 when memory_limit is 0. */
uint64_t ar_config_memory_max(const ar_config_t *cfg);

/* The thread count of the daemon's pool: `threads`, or when it is 0 the online CPUs
 * (sysconf(_SC_NPROCESSORS_ONLN)), within 1..AR_CONFIG_THREADS_MAX. */
uint32_t ar_config_threads(const ar_config_t *cfg);

#endif /* AR_CONFIG_H */
