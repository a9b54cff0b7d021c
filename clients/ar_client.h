/* ar_client.h - libarenaclient: a small blocking C client for the arenad inference daemon.
 *
 * One ar_client_t is one Unix-socket connection to arenad. Calls are synchronous: each sends one
 * request (proto/arenad.proto, 4-byte little-endian length framing) and waits for its response.
 * A connection is not thread-safe; use one per thread (the daemon serves many at once).
 *
 * Errors: every fallible call returns 0 or a negative code. Codes from the daemon are its status
 * codes negated (arenad.proto `Code`, the same numbers as arenad's common/ar_error.h: -6 shape
 * mismatch, -9 pool exhausted, -10 no such model, ...), and `msg` (msg_bytes, may be NULL)
 * receives the daemon's message, e.g. "input 0 (input_1): shape [1,192,192] does not match the
 * model's [1,192,192,3]". Transport failures return AR_CLIENT_ECONN (-16) with the system error.
 * ar_client_strerror() gives a short text for a code. Nothing here aborts.
 *
 * Installed as <arenad/client.h>: `#include <arenad/client.h>`, build with
 * `pkg-config --cflags --libs arenaclient`.
 */
#ifndef AR_CLIENT_H
#define AR_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef AR_EXPORT
#define AR_EXPORT __attribute__((visibility("default")))
#endif

#define AR_CLIENT_ECONN (-16)       /* connection failed or closed */
#define AR_CLIENT_EPROTO (-12)      /* malformed frame / response */
#define AR_CLIENT_MAX_RANK 8
#define AR_CLIENT_MAX_IO 16         /* inputs/outputs described per model */

/* TFLite TensorType values (arenad.proto DType). Invokes take and return any of these the model's
 * input/output tensor has; the daemon checks the dtype and byte size. */
#define AR_CLIENT_FLOAT32 0
#define AR_CLIENT_INT32 2
#define AR_CLIENT_UINT8 3
#define AR_CLIENT_INT64 4
#define AR_CLIENT_BOOL 6                /* one byte per element, 0 or 1 */
#define AR_CLIENT_INT8 9

/* A tensor's affine quantization (TFLite QuantizationParameters): real = scale * (q - zero_point).
 * `n` 0: none (float tensors, integer tensors without parameters); 1: per-tensor; > 1: per-axis,
 * one (scale, zero_point) per index of dimension `quantized_dimension`. `scale` and `zero_point`
 * hold the first pair in every case. The full arrays `scales` / `zero_points` (n entries) are set in
 * invoke results, where they point into the result (valid until ar_client_result_free); in model
 * descriptions (ar_client_list, ar_client_load, ar_client_resize_input) they are NULL, so that those
 * structs can be copied freely: a per-axis model input or output is described by its first pair
 * and n there. */
typedef struct ar_client_quant {
  int32_t n;
  int32_t quantized_dimension;
  float scale;
  int64_t zero_point;
  const float *scales;
  const int64_t *zero_points;
} ar_client_quant_t;

typedef struct ar_client ar_client_t;

/* A tensor: raw little-endian elements in C order (NHWC for images). For requests the caller
 * owns `data`; in results `data` points into the result and lives until ar_client_result_free. */
typedef struct ar_client_tensor {
  char name[128];                 /* tensor name (ignored in requests) */
  int32_t dtype;                  /* TFLite TensorType, AR_CLIENT_FLOAT32 = 0 */
  int32_t rank;
  int64_t dims[AR_CLIENT_MAX_RANK];
  const void *data;
  uint64_t bytes;                 /* exactly product(dims) * element size */
  ar_client_quant_t quant;        /* the model's quantization of this tensor (ignored in requests) */
} ar_client_tensor_t;

/* A model as the daemon holds it (sizes in bytes, offsets into the daemon's pool). */
typedef struct ar_client_model {
  char name[64];
  char path[4096];                /* resolved path of the model file */
  char sha256[65];                /* hex */
  char group[64];                 /* share group, "" if none */
  char strategy[32];              /* planner strategy */
  uint64_t arena_bytes, persistent_bytes, weights_bytes;
  uint64_t activation_offset, activation_bytes, persistent_offset;
  uint64_t invokes;
  int32_t n_inputs, n_outputs;    /* may exceed AR_CLIENT_MAX_IO; only that many are described */
  ar_client_tensor_t inputs[AR_CLIENT_MAX_IO], outputs[AR_CLIENT_MAX_IO];   /* no data */
  char state_reset[256];          /* ar_client_resize_input only: the state pieces the re-plan reset,
                                   * "state reset: NAME (A -> B bytes), ..."; "" none */
} ar_client_model_t;

/* Outputs of one invoke. */
typedef struct ar_client_result {
  int32_t n_outputs;
  ar_client_tensor_t outputs[AR_CLIENT_MAX_IO];
  uint64_t invoke_us;             /* time in the interpreter on the daemon's worker, µs */
  uint64_t queue_us;              /* time the request waited for its model's group, µs */
  void *priv;                     /* the decoded response and the frame that own the output bytes */
  char state_reset[256];          /* "" unless this invoke's input shapes re-planned the model and
                                   * that reset state pieces (as ar_client_model_t.state_reset) */
} ar_client_result_t;

/* Connect to the daemon listening on `socket_path`. *out is freed by ar_client_close.
 * Errors: AR_CLIENT_ECONN (socket, connect; errno is left as connect(2) set it), -2 (no memory),
 * -1 (path too long). */
AR_EXPORT int ar_client_connect(const char *socket_path, ar_client_t **out, char *msg, size_t msg_bytes);
/* Close the connection and free it. NULL is a no-op. */
AR_EXPORT void ar_client_close(ar_client_t *c);

/* Busy polling: wait for a reply by polling the socket without sleeping for up to `us`
 * microseconds (at most AR_CLIENT_BUSY_POLL_MAX, default AR_CLIENT_BUSY_POLL_DEFAULT = 300; 0 =
 * block at once), yielding the CPU on each pass; a reply that arrives within that time costs no
 * wake-up of a sleeping thread (60-130 us measured on this project's 2-vCPU VM, whose idle vCPUs
 * halt). For an invoke of the same model as the
 * connection's previous invokes, whose reply is due later than that, the client first sleeps (the
 * reply still wakes it at once) and polls from half of `us` before the reply is due: due = the
 * median of the daemon's invoke_us over the model's last 5 invokes plus the smallest of their
 * round trips' remainders (round trip - invoke_us - queue_us); the sleep runs without the thread's
 * timer slack (restored after) and ends early by a running estimate of how late the connection's
 * timed sleeps have ended (the vCPU's wake-up, 50-130 us here). The polling brackets the expected reply instead of taking a CPU for
 * the whole invoke, which on a small machine would slow the invoke's own threads. Other requests
 * poll from the send. The price: up to `us` of one CPU per call (the default: at most 0.3 ms per
 * invoke, about 1 % of one core for 30 invokes a second); a few hundred microseconds suit most
 * uses. The environment variable ARENAD_BUSY_POLL_US, when set to a
 * number, gives the value ar_client_connect starts a connection with. The daemon's side is its
 * busy_poll_us setting (arenad.json(5)). */
#define AR_CLIENT_BUSY_POLL_MAX 1000000u
#define AR_CLIENT_BUSY_POLL_DEFAULT 300u
AR_EXPORT void ar_client_set_busy_poll(ar_client_t *c, uint32_t us);
/* The connection's busy-poll time, µs. */
AR_EXPORT uint32_t ar_client_busy_poll(const ar_client_t *c);

/* Round trip. `version` (may be NULL) receives the daemon's version string. */
AR_EXPORT int ar_client_ping(ar_client_t *c, char *version, size_t version_bytes, char *msg, size_t msg_bytes);

/* Load the model file `path` (opened by the daemon) as `name`. `group` (NULL or "" = none) names a
 * share group: its members never run at the same time and share one activation region sized to
 * the largest. `strategy` (NULL or "" = "best"): "linear", "first-fit", "greedy-by-size", "best".
 * `info` (may be NULL) receives the loaded model. Errors from the daemon: -11 name taken,
 * -10/-3 file, -4 malformed model, -5 unsupported op, -9 does not fit the pool (the message
 * gives the bytes needed and the largest free block), -13 file larger than max_model_bytes,
 * -19 not permitted (the peer is not an admin, or `path` is not inside the daemon's model_dirs). */
AR_EXPORT int ar_client_load(ar_client_t *c, const char *name, const char *path, const char *group,
                             const char *strategy, ar_client_model_t *info, char *msg, size_t msg_bytes);
/* ar_client_load with `weights` (NULL or "" = the daemon's configured default): "stored" keeps fp16
 * weights as stored in the file mapping (persistent region: packed/state data only), "fp32" widens
 * them once at load into the persistent region. An unknown mode is -1 (EINVAL). */
AR_EXPORT int ar_client_load_weights(ar_client_t *c, const char *name, const char *path, const char *group,
                                     const char *strategy, const char *weights, ar_client_model_t *info,
                                     char *msg, size_t msg_bytes);

/* Unload `name`; returns after the daemon finished the invokes already accepted for it. */
AR_EXPORT int ar_client_unload(ar_client_t *c, const char *name, char *msg, size_t msg_bytes);

/* One model a reload changed (hex sha256 strings; old empty = added, new empty = removed). */
typedef struct ar_client_reloaded {
  char name[64];
  char old_sha256[65], new_sha256[65];
} ar_client_reloaded_t;

/* Reload (admin peers only): the daemon re-reads its configuration and every loaded model's file as
 * one transaction. On success *changed (malloc'd array of *n_changed entries, free() it; may be
 * NULL when nothing changed) lists the models added, replaced or removed and *unchanged (may be
 * NULL) counts the others. Errors: -19 not an admin, -17 a reload or load of a configured name is
 * in progress, any load error of the transaction (nothing changed then; the message names the
 * model). */
AR_EXPORT int ar_client_reload(ar_client_t *c, ar_client_reloaded_t **changed, size_t *n_changed,
                               uint32_t *unchanged, char *msg, size_t msg_bytes);

/* What a compaction did (bytes; figures taken when the new layout was applied). */
typedef struct ar_client_compact {
  uint32_t regions_moved;         /* pool regions given a new offset */
  uint64_t bytes_moved;           /* their bytes */
  uint32_t models_replaced;       /* models re-placed at their new addresses */
  uint64_t free_bytes_before, largest_free_bytes_before;
  uint32_t free_blocks_before;
  uint64_t free_bytes_after, largest_free_bytes_after;   /* equal: one free block */
  uint32_t free_blocks_after;     /* 1, or 0 when the pool is full */
  uint64_t duration_us;           /* request to the last model serving from its new place, µs */
  uint64_t released_bytes;        /* free pages given back to the system at the end (DONTNEED) */
} ar_client_compact_t;

/* Compact the daemon's pool (admin peers only): regions above a free block move down so that the
 * free bytes are one block; the models whose regions move are re-placed behind the invokes their
 * share group had accepted (outputs stay bit-identical; invokes of other groups keep running).
 * Returns when they serve from their new places; `out` (may be NULL) receives the figures.
 * Errors: -19 not an admin, -2 no memory in the daemon. */
AR_EXPORT int ar_client_compact(ar_client_t *c, ar_client_compact_t *out, char *msg, size_t msg_bytes);

/* Loaded models: *models (malloc'd array of *n entries) is freed by the caller with free(). */
AR_EXPORT int ar_client_list(ar_client_t *c, ar_client_model_t **models, size_t *n, char *msg, size_t msg_bytes);

/* Run `model` on `inputs` (n_inputs tensors in the model's input order, each matching the model's
 * input dtype - float32, uint8, int8, int32, int64, bool, ... -, shape and byte size; dims that are
 * -1 in an input's shape_signature may take any size, the daemon re-plans for it). An input whose
 * `data` lies inside a buffer registered with ar_client_buffer_register is sent as a range of that
 * buffer (no bytes copied into the request). Quantized inputs
 * carry codes already quantized with the input's parameters (ar_client_model_t inputs[i].quant;
 * `quant` of a request tensor is ignored). On success `res` holds the outputs (free with
 * ar_client_result_free), each with its quantization (ar_client_tensor_value dequantizes).
 * Errors: -10 unknown model, -6 input count/dtype/shape/size mismatch. */
AR_EXPORT int ar_client_invoke(ar_client_t *c, const char *model, const ar_client_tensor_t *inputs, size_t n_inputs,
                               ar_client_result_t *res, char *msg, size_t msg_bytes);
AR_EXPORT void ar_client_result_free(ar_client_result_t *res);

/* ---- Sessions (stateful models; arenad.proto InvokeRequest.session, docs/protocol.md) ----
 * A session keeps its own state of a stateful model in the daemon: invokes naming it read and
 * write that state only. `id`: 1 to 64 printable ASCII bytes, per model, owned by this
 * connection's uid. `start` opens it (again) from the initial state, `reset` resets it before this
 * invoke, `end` closes it after. A stateless model ignores sessions. */
typedef struct ar_client_session {
  const char *id;
  bool start, end, reset;
} ar_client_session_t;

/* ar_client_invoke in `session` (NULL: the model's default state). Errors, besides those of
 * ar_client_invoke: -10 ENOENT no such open session, -17 ESTATE it expired
 * (session_idle_timeout_ms), -19 EPERM another uid's, -14 EBUSY max_sessions_per_model /
 * max_sessions_per_uid, -9 ENOSPC no pool room for its slot, -1 a bad id. */
AR_EXPORT int ar_client_invoke_session(ar_client_t *c, const char *model, const ar_client_session_t *session,
                                       const ar_client_tensor_t *inputs, size_t n_inputs, ar_client_result_t *res,
                                       char *msg, size_t msg_bytes);
/* Reset session `session` of `model` to its initial state (`end`: close it instead), in order with
 * the invokes already sent; "" or NULL = the model's default state. *stateful (may be NULL): false
 * when the model keeps no state. Errors as ar_client_invoke_session's. */
AR_EXPORT int ar_client_reset_session(ar_client_t *c, const char *model, const char *session, bool end,
                                      bool *stateful, char *msg, size_t msg_bytes);

/* ---- Zero-copy invokes: shared-memory buffers (arenad.proto RegisterBufferRequest) ----
 *
 * A buffer is a memfd the library creates, sizes, seals (F_SEAL_SHRINK | F_SEAL_GROW |
 * F_SEAL_SEAL) and maps read-write, then sends to the daemon over the connection (SCM_RIGHTS); the
 * daemon maps it too. Inputs whose `data` points into a registered buffer of the connection travel
 * as a (buffer, offset, bytes) range instead of bytes (ar_client_invoke does this by itself), and
 * ar_client_invoke_into has the daemon write outputs straight into the buffer. Buffers belong to
 * the connection: ar_client_close releases them. The daemon bounds them per connection
 * (max_buffers_per_connection, max_buffer_bytes_per_connection: -9 ENOSPC past either). */
typedef struct ar_client_buffer {
  uint32_t id;                    /* the daemon's id of the buffer on this connection */
  void *data;                     /* the client's mapping, `bytes` long, read-write */
  uint64_t bytes;
  struct ar_client_buffer *next;  /* the connection's list (library-owned) */
} ar_client_buffer_t;

/* A byte range of a registered buffer: [offset, offset + bytes) of buffer `buffer` (0 = none). */
typedef struct ar_client_range {
  uint32_t buffer;
  uint64_t offset, bytes;
} ar_client_range_t;

/* Create a `bytes`-byte sealed memfd, map it and register it with the daemon. *out (freed by
 * ar_client_buffer_release or ar_client_close) holds the id and the mapping. Errors: -1 (bytes 0,
 * memfd_create/ftruncate/seal/mmap failed: the message names the call), AR_CLIENT_ECONN, and the
 * daemon's refusals (-9 over the connection's bounds, -1 its checks of the descriptor). */
AR_EXPORT int ar_client_buffer_register(ar_client_t *c, uint64_t bytes, ar_client_buffer_t **out, char *msg,
                                        size_t msg_bytes);
/* Register the descriptor `fd` as it is (the caller keeps it and any mapping; the library does not
 * track the buffer): for clients that manage their own memfd, and for tests of the daemon's checks.
 * *id and *bytes (may be NULL) receive the daemon's id and the size it mapped; *writable (may be
 * NULL) whether it may write outputs there. Errors as ar_client_buffer_register. */
AR_EXPORT int ar_client_buffer_register_fd(ar_client_t *c, int fd, uint32_t *id, uint64_t *bytes, int *writable,
                                           char *msg, size_t msg_bytes);
/* Unregister buffer `id` (the daemon unmaps it once the invokes using it are done). -1 when no
 * such buffer is registered on the connection. */
AR_EXPORT int ar_client_buffer_unregister(ar_client_t *c, uint32_t id, char *msg, size_t msg_bytes);
/* Unregister `buf`, unmap it and free it (NULL is a no-op). Returns the unregister's code. */
AR_EXPORT int ar_client_buffer_release(ar_client_t *c, ar_client_buffer_t *buf, char *msg, size_t msg_bytes);

/* Invoke with explicit ranges: input i comes from input_ranges[i] when input_ranges is non-NULL
 * and input_ranges[i].buffer != 0 (then inputs[i].data is ignored; dtype and dims still count),
 * else from inputs[i].data. output_ranges (NULL when n_outputs is 0; else one per model output)
 * asks the daemon to write output j into output_ranges[j] (buffer 0: sent in the reply). In `res`
 * an output written to a buffer registered with ar_client_buffer_register points into the
 * client's mapping (data, bytes = the output's size); one written to a buffer registered with
 * ar_client_buffer_register_fd has data NULL and bytes set. Errors: those of ar_client_invoke,
 * -1 when a range lies outside its buffer or names no registered buffer, -6 when a range does not
 * hold exactly the input's bytes or is too small for the output. */
AR_EXPORT int ar_client_invoke_ranges(ar_client_t *c, const char *model, const ar_client_tensor_t *inputs,
                                      const ar_client_range_t *input_ranges, size_t n_inputs,
                                      const ar_client_range_t *output_ranges, size_t n_outputs,
                                      ar_client_result_t *res, char *msg, size_t msg_bytes);
/* ar_client_invoke with outputs written into registered buffers: outputs[j] (n_outputs entries,
 * one per model output; NULL = sent in the reply) points into a buffer registered with
 * ar_client_buffer_register, with output_bytes[j] bytes of room there; res->outputs[j].data is
 * then outputs[j]. Inputs pointing into registered buffers go by reference, as in
 * ar_client_invoke. Errors: -1 when a pointer is not inside a registered buffer of `c`, plus
 * those of ar_client_invoke_ranges. */
AR_EXPORT int ar_client_invoke_into(ar_client_t *c, const char *model, const ar_client_tensor_t *inputs,
                                    size_t n_inputs, void *const *outputs, const uint64_t *output_bytes,
                                    size_t n_outputs, ar_client_result_t *res, char *msg, size_t msg_bytes);

/* Resize input `input` of `model` to `dims` (rank entries): only dims that are -1 in the input's
 * shape_signature may differ from the stored shape. The daemon re-plans the model and grows (or
 * shrinks) its activation region now; `info` (may be NULL) receives the model as it is then.
 * Invokes may also simply send another shape: this is the explicit form (TFLite
 * ResizeInputTensor). Errors: -10 unknown model, -6 fixed dim / rank, -9 the pool has no room
 * (the message gives the bytes needed). */
AR_EXPORT int ar_client_resize_input(ar_client_t *c, const char *model, uint32_t input, const int64_t *dims,
                                     int32_t rank, ar_client_model_t *info, char *msg, size_t msg_bytes);

/* The daemon's stats JSON (pool, models, groups, daemon); *json is malloc'd, caller frees. */
AR_EXPORT int ar_client_stats_json(ar_client_t *c, char **json, char *msg, size_t msg_bytes);

/* The budget table JSON of a loaded model (same keys as `arenactl plan --json`); caller frees. */
AR_EXPORT int ar_client_plan_json(ar_client_t *c, const char *model, char **json, char *msg, size_t msg_bytes);

/* Short text for a code returned above ("shape mismatch", "connection failed or closed", ...). */
AR_EXPORT const char *ar_client_strerror(int code);

/* Bytes per element of a TFLite TensorType, 0 if unknown. */
AR_EXPORT size_t ar_client_dtype_size(int32_t dtype);

/* Element `i` (flat C-order index) of `t` as a real number: float32 as is; uint8/int8/int32/int64
 * with quantization dequantized, (q - zero_point) * scale in float32 (per-axis: the pair of i's
 * index along quantized_dimension; a per-axis tensor without its arrays uses the first pair);
 * integers and bool without quantization converted. NAN when i is out of range or the dtype has no
 * real value here (float16, string, ...). */
AR_EXPORT float ar_client_tensor_value(const ar_client_tensor_t *t, uint64_t i);

#ifdef __cplusplus
}
#endif
#endif /* AR_CLIENT_H */
