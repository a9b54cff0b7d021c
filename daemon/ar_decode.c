/* ar_decode.c - bounded decoding of arenad.Request frames: a descriptor-guided wire scan that
 * allocates nothing, then a protobuf-c unpack whose allocator charges a budget. See ar_decode.h.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "common/ar_varint.h"
#include "common/ar_util.h"
#include "daemon/ar_decode.h"

/* Shape entries counted per tensor before the scan stops counting (the limit the caller
 * applies, AR_MAX_RANK, is far below; counting further would only cost time). */
#define SHAPE_COUNT_STOP 4096

typedef struct {
  ar_decode_scan_t *out;
  char *msg;
  size_t msg_bytes;
} scan_ctx_t;

/* Number of varints in a packed payload, stopping at `stop`. */
static uint64_t count_varints(const uint8_t *p, const uint8_t *end, uint64_t stop) {
  uint64_t n = 0;
  for (; p < end && n < stop; p++)
    if (!(*p & 0x80)) n++;
  return n;
}

static int scan_msg(scan_ctx_t *s, const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                    int depth) {
  ar_decode_scan_t *o = s->out;
  const bool is_request = d == &arenad__request__descriptor;
  const bool is_invoke = d == &arenad__invoke_request__descriptor;
  const bool is_tensor = d == &arenad__tensor__descriptor;
  uint64_t shape = 0;
  if (depth > AR_DECODE_MAX_DEPTH)
    return ar_errf(s->msg, s->msg_bytes, AR_EPROTO, "messages nested deeper than %d levels", AR_DECODE_MAX_DEPTH);
  while (p < end) {
    if (++o->n_fields > AR_DECODE_MAX_FIELDS)
      return ar_errf(s->msg, s->msg_bytes, AR_EPROTO,
                     "frame holds more than %d fields (refused before decoding)", AR_DECODE_MAX_FIELDS);
    uint64_t key, v;
    if (!ar_varint_read(&p, end, &key))
      return ar_errf(s->msg, s->msg_bytes, AR_EPROTO, "truncated field key at depth %d", depth);
    uint64_t num = key >> 3;
    unsigned wt = (unsigned)(key & 7);
    if (num == 0 || num > 536870911u)
      return ar_errf(s->msg, s->msg_bytes, AR_EPROTO, "field number %" PRIu64 " is out of range", num);
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)num);
    if (f == NULL) o->n_unknown++;
    switch (wt) {
      case 0:
        if (!ar_varint_read(&p, end, &v))
          return ar_errf(s->msg, s->msg_bytes, AR_EPROTO, "field %" PRIu64 ": truncated varint", num);
        if (is_request && num == 1 && f) o->id = v;
        if (is_tensor && num == 3 && f) shape++;
        break;
      case 1:
      case 5: {
        size_t w = wt == 1 ? 8 : 4;
        if ((size_t)(end - p) < w)
          return ar_errf(s->msg, s->msg_bytes, AR_EPROTO, "field %" PRIu64 ": truncated fixed-width value", num);
        p += w;
        break;
      }
      case 2: {
        if (!ar_varint_read(&p, end, &v))
          return ar_errf(s->msg, s->msg_bytes, AR_EPROTO, "field %" PRIu64 ": truncated length", num);
        if (v > (uint64_t)(end - p))
          return ar_errf(s->msg, s->msg_bytes, AR_EPROTO,
                         "field %" PRIu64 ": length %" PRIu64 " runs past the end of the frame", num, v);
        const uint8_t *sub = p;
        p += v;
        if (f == NULL) break;
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
          if (is_request) o->body_field = (uint32_t)num;
          if (is_invoke && num == 2) o->n_inputs++;
          int rc = scan_msg(s, f->descriptor, sub, p, depth + 1);
          if (rc) return rc;
        } else if (f->type == PROTOBUF_C_TYPE_STRING) {
          if (o->nul_field == NULL && memchr(sub, 0, (size_t)v) != NULL) o->nul_field = f->name;
          if (is_invoke && num == 1) {
            o->model = sub;
            o->model_len = (size_t)v;
          }
        } else if (is_tensor && num == 3) {
          shape += count_varints(sub, p, SHAPE_COUNT_STOP);   /* packed repeated int64 */
        }
        break;
      }
      default:
        return ar_errf(s->msg, s->msg_bytes, AR_EPROTO, "field %" PRIu64 ": wire type %u is not accepted", num, wt);
    }
    if (shape > SHAPE_COUNT_STOP) shape = SHAPE_COUNT_STOP;
  }
  if (is_tensor && shape > o->max_shape) o->max_shape = shape;
  return 0;
}

int ar_decode_scan(const uint8_t *data, size_t n, ar_decode_scan_t *out, char *msg, size_t msg_bytes) {
  memset(out, 0, sizeof(*out));
  char why[AR_MSG_BYTES - 96];
  scan_ctx_t s = {.out = out, .msg = why, .msg_bytes = sizeof(why)};
  int rc = scan_msg(&s, &arenad__request__descriptor, data, data + n, 0);
  if (rc != 0)
    ar_errf(msg, msg_bytes, rc, "frame of %zu bytes does not decode as an arenad.Request: %s", n, why);
  return rc;
}

uint64_t ar_decode_budget_bytes(uint64_t frame_bytes, uint64_t hard_cap_bytes) {
  uint64_t b = 2 * frame_bytes + (4u << 20);
  return b < hard_cap_bytes ? b : hard_cap_bytes;
}

typedef struct {
  uint64_t used, limit;
  bool over;
} budget_t;

/* Charges every allocation, never credits frees: the sum is an upper bound of the peak. */
static void *budget_alloc(void *data, size_t n) {
  budget_t *b = data;
  if (n > b->limit - b->used) {
    b->over = true;
    return NULL;
  }
  b->used += n;
  return malloc(n ? n : 1);
}

static void budget_free(void *data, void *p) {
  (void)data;
  free(p);
}

int ar_decode_unpack(const uint8_t *data, size_t n, uint64_t budget_bytes, Arenad__Request **out, char *msg,
                     size_t msg_bytes) {
  budget_t b = {.used = 0, .limit = budget_bytes};
  ProtobufCAllocator a = {.alloc = budget_alloc, .free = budget_free, .allocator_data = &b};
  *out = arenad__request__unpack(&a, n, data);
  if (*out != NULL) return 0;
  if (b.over)
    return ar_errf(msg, msg_bytes, AR_E2BIG, "decoding the %zu-byte frame needs more than %" PRIu64 " bytes", n,
                   budget_bytes);
  return ar_errf(msg, msg_bytes, AR_EPROTO, "frame of %zu bytes does not decode as an arenad.Request", n);
}

/* ---- ar_decode_strip_inputs ---------------------------------------------------------------- */

/* Levels of the walk: Request > InvokeRequest (Request field 6) > Tensor (InvokeRequest field 2),
 * whose field 4 (data) is left out. */
enum { STRIP_REQUEST, STRIP_INVOKE, STRIP_TENSOR };

typedef struct {
  ar_decode_input_ref_t *refs;
  size_t max_refs, n_refs;
  int invokes;                   /* Request.invoke occurrences */
  bool bad;
} strip_t;

/* One pass over a message at `level`: with out == NULL returns the stripped size; else writes
 * the stripped message at out and returns the bytes written. Records the input refs on the
 * writing pass only. */
static size_t strip_msg(strip_t *s, int level, const uint8_t *p, const uint8_t *end, uint8_t *out) {
  size_t total = 0;
  bool had_data = false;
  while (p < end && !s->bad) {
    const uint8_t *field = p;
    uint64_t key, v;
    if (!ar_varint_read(&p, end, &key)) {
      s->bad = true;
      break;
    }
    uint64_t num = key >> 3;
    unsigned wt = (unsigned)(key & 7);
    if (wt == 0) {
      if (!ar_varint_read(&p, end, &v)) s->bad = true;
    } else if (wt == 1 || wt == 5) {
      size_t w = wt == 1 ? 8 : 4;
      if ((size_t)(end - p) < w) s->bad = true;
      else p += w;
    } else if (wt == 2) {
      if (!ar_varint_read(&p, end, &v) || v > (uint64_t)(end - p)) {
        s->bad = true;
        break;
      }
      const uint8_t *sub = p;
      p += v;
      size_t key_bytes = ar_varint_len(key);
      int next = level == STRIP_REQUEST && num == 6 ? STRIP_INVOKE : level == STRIP_INVOKE && num == 2 ? STRIP_TENSOR : -1;
      if (level == STRIP_TENSOR && num == 4) {
        if (had_data) s->bad = true;   /* repeated data: last-wins semantics, not stripped */
        had_data = true;
        if (out && s->n_refs > 0) {
          s->refs[s->n_refs - 1].data = sub;
          s->refs[s->n_refs - 1].len = (size_t)v;
        }
        continue;
      }
      if (next >= 0) {
        if (next == STRIP_INVOKE && ++s->invokes > 1) {   /* merged invokes: not this path */
          s->bad = true;
          break;
        }
        if (next == STRIP_TENSOR && out) {
          if (s->n_refs == s->max_refs) {
            s->bad = true;
            break;
          }
          s->refs[s->n_refs].data = NULL;
          s->refs[s->n_refs].len = 0;
          s->n_refs++;
        }
        size_t inner = strip_msg(s, next, sub, p, NULL);   /* nested levels never count invokes */
        size_t here = key_bytes + ar_varint_len(inner) + inner;
        if (out) {
          uint8_t *o = ar_varint_put(out + total, key);
          o = ar_varint_put(o, inner);
          strip_msg(s, next, sub, p, o);
        }
        total += here;
        continue;
      }
    } else {
      s->bad = true;
    }
    if (s->bad) break;
    if (out) memcpy(out + total, field, (size_t)(p - field));
    total += (size_t)(p - field);
  }
  return total;
}

size_t ar_decode_strip_inputs(const uint8_t *data, size_t n, uint8_t *out, size_t out_cap,
                              ar_decode_input_ref_t *refs, size_t max_refs, size_t *n_refs) {
  strip_t s = {.refs = refs, .max_refs = max_refs};
  *n_refs = 0;
  size_t len = strip_msg(&s, STRIP_REQUEST, data, data + n, NULL);
  if (s.bad || len > n || len > out_cap || s.invokes != 1) return 0;
  s.invokes = 0;
  size_t w = strip_msg(&s, STRIP_REQUEST, data, data + n, out);
  if (s.bad || w != len || s.invokes != 1) return 0;
  *n_refs = s.n_refs;
  return w;
}

void ar_decode_request_unborrow(Arenad__Request *req) {
  if (req == NULL || req->body_case != ARENAD__REQUEST__BODY_INVOKE || req->invoke == NULL) return;
  for (size_t i = 0; i < req->invoke->n_inputs; i++) {
    req->invoke->inputs[i]->data.data = NULL;
    req->invoke->inputs[i]->data.len = 0;
  }
}

void ar_decode_request_free(Arenad__Request *req, void *frame) {
  if (frame) ar_decode_request_unborrow(req);   /* borrowed from the frame: not protobuf-c's to free */
  if (req) arenad__request__free_unpacked(req, NULL);
  free(frame);
}
