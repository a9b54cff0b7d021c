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
 * Link with `pkg-config --libs arenaclient`.
 */
#ifndef AR_CLIENT_H
#define AR_CLIENT_H

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
} ar_client_model_t;

/* Outputs of one invoke. */
typedef struct ar_client_result {
  int32_t n_outputs;
  ar_client_tensor_t outputs[AR_CLIENT_MAX_IO];
  uint64_t invoke_us;             /* time in the interpreter on the daemon's worker, µs */
  uint64_t queue_us;              /* time the request waited for its model's group, µs */
  void *priv;                     /* the decoded response that owns the output bytes */
} ar_client_result_t;

/* Connect to the daemon listening on `socket_path`. *out is freed by ar_client_close.
 * Errors: AR_CLIENT_ECONN (socket, connect), -2 (no memory), -1 (path too long). */
AR_EXPORT int ar_client_connect(const char *socket_path, ar_client_t **out, char *msg, size_t msg_bytes);
/* Close the connection and free it. NULL is a no-op. */
AR_EXPORT void ar_client_close(ar_client_t *c);

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
 * -1 in an input's shape_signature may take any size, the daemon re-plans for it). Quantized inputs
 * carry codes already quantized with the input's parameters (ar_client_model_t inputs[i].quant;
 * `quant` of a request tensor is ignored). On success `res` holds the outputs (free with
 * ar_client_result_free), each with its quantization (ar_client_tensor_value dequantizes).
 * Errors: -10 unknown model, -6 input count/dtype/shape/size mismatch. */
AR_EXPORT int ar_client_invoke(ar_client_t *c, const char *model, const ar_client_tensor_t *inputs, size_t n_inputs,
                               ar_client_result_t *res, char *msg, size_t msg_bytes);
AR_EXPORT void ar_client_result_free(ar_client_result_t *res);

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
