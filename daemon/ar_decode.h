/* ar_decode.h - decoding one arenad.Request frame within fixed bounds of work and memory.
 *
 * Two steps, both free of libuv so they can run on any thread (and under the fuzzer):
 *
 *   ar_decode_scan    walks the protobuf wire format without allocating anything, guided by the
 *                     message descriptors: counts field occurrences (at most AR_DECODE_MAX_FIELDS
 *                     in a frame, unknown ones included, so the walk itself is bounded), counts
 *                     InvokeRequest.inputs entries and the largest Tensor.shape (packed or not),
 *                     picks the request id, body and invoke model name, and finds `string` fields
 *                     holding a NUL byte (protobuf-c would silently cut them). The caller checks the
 *                     counts against the model before anything is allocated for them.
 *   ar_decode_unpack  protobuf-c unpack with an allocator charging every allocation to a budget
 *                     of ar_decode_budget_bytes(frame) (a small multiple of the frame, at most the
 *                     configured hard cap); past it, unpack fails and AR_E2BIG is returned.
 *
 * The unpacked request is freed with arenad__request__free_unpacked(req, NULL) (plain malloc).
 */
#ifndef AR_DECODE_H
#define AR_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/arenad.pb-c.h"

/* Field occurrences (any depth, unknown fields included) a frame may hold: a legitimate Invoke
 * needs about a dozen per input tensor, so this allows over a thousand inputs. */
#define AR_DECODE_MAX_FIELDS 16384
/* Nesting a frame may have (Request > InvokeRequest > Tensor is 3). */
#define AR_DECODE_MAX_DEPTH 8

typedef struct ar_decode_scan {
  uint64_t id;                   /* Request.id (0 if absent) */
  uint32_t body_field;           /* last Request body field number seen (2..), 0 = none */
  uint32_t n_fields;             /* field occurrences walked */
  uint32_t n_unknown;            /* of which unknown to the descriptors */
  uint64_t n_inputs;             /* InvokeRequest.inputs entries (all occurrences summed) */
  uint64_t max_shape;            /* largest Tensor.shape element count of one tensor */
  const uint8_t *model;          /* InvokeRequest.model bytes (not NUL-terminated), or NULL */
  size_t model_len;
  const char *nul_field;         /* first string field holding a NUL byte, or NULL */
} ar_decode_scan_t;

/* Scan the `n` bytes at `data` as an arenad.Request. Returns 0 (result in *out, `model` points
 * into data), or AR_EPROTO with `msg` naming the problem: malformed wire format ("field 6: length
 * 100 runs past the end of the frame"), more than AR_DECODE_MAX_FIELDS fields, nesting deeper than
 * AR_DECODE_MAX_DEPTH, group wire types. Work is O(min(fields, AR_DECODE_MAX_FIELDS)) plus the
 * bytes of string fields (checked for NUL); nothing is allocated. Source of the wire format:
 * protobuf encoding spec (varint, i64, len, i32; packed repeated scalars). */
int ar_decode_scan(const uint8_t *data, size_t n, ar_decode_scan_t *out, char *msg, size_t msg_bytes);

/* Decode budget for a frame of `frame_bytes`: 2 x frame + 4 MiB, at most `hard_cap_bytes`. */
uint64_t ar_decode_budget_bytes(uint64_t frame_bytes, uint64_t hard_cap_bytes);

/* Unpack the `n` bytes at `data` charging at most `budget_bytes` of allocations. Returns 0 with
 * *out (free with arenad__request__free_unpacked(*out, NULL)); AR_E2BIG when the budget ran out
 * ("decoding the 2097152-byte frame needs more than 8388608 bytes"); AR_EPROTO when the bytes do
 * not decode. On error *out is NULL and everything allocated is freed. */
int ar_decode_unpack(const uint8_t *data, size_t n, uint64_t budget_bytes, Arenad__Request **out, char *msg,
                     size_t msg_bytes);

/* Input bytes left in the frame by ar_decode_strip_inputs: one entry per InvokeRequest.inputs
 * element, in order (NULL, 0 for an input without data). */
typedef struct ar_decode_input_ref {
  const uint8_t *data;
  size_t len;
} ar_decode_input_ref_t;

/* The bytes path without a second copy of the inputs: copy the Request frame `data` (n bytes,
 * already accepted by ar_decode_scan) into `out` (room for out_cap bytes; the result is at most n
 * bytes, a few hundred for a plain invoke whatever its tensors' sizes) leaving out the `data` field of
 * every InvokeRequest.inputs element, with the enclosing lengths rewritten, and record where each
 * input's data lies in `data` (refs, at most max_refs). Unpacking `out` then allocates and copies
 * only the small fields; the caller points the inputs at the recorded bytes (which must stay
 * alive as long as the request). Returns the length written to `out`, or 0 when the frame is not
 * an invoke of that plain form (an invoke field or an input's data repeated, more than max_refs
 * inputs, anything unexpected) or when the stripped frame needs more than out_cap bytes: decode it
 * as usual then. Allocates nothing. */
size_t ar_decode_strip_inputs(const uint8_t *data, size_t n, uint8_t *out, size_t out_cap,
                              ar_decode_input_ref_t *refs, size_t max_refs, size_t *n_refs);

/* Free a decoded request whose invoke inputs may point into `frame` (the block they were left in
 * by ar_decode_strip_inputs; NULL when the request owns all its bytes), and the frame. */
void ar_decode_request_free(Arenad__Request *req, void *frame);

/* Detach the invoke inputs of `req` from the frame they point into (data NULL, len 0), so that
 * the frame can be reused and the request later freed with ar_decode_request_free(req, NULL). */
void ar_decode_request_unborrow(Arenad__Request *req);

#endif /* AR_DECODE_H */
