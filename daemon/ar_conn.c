/* ar_conn.c - the connection layer: accept (connection limits, peer credentials), reading and
 * framing, bounded decoding (ar_decode.h; large frames on a worker), the write queue with its
 * byte budget, and the timeouts. Decoded requests go up to dispatch through srv->ops; replies
 * come back down through ar_conn_reply. The limits are described in ar_conn.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* struct ucred (SO_PEERCRED) */
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "common/ar_util.h"
#include "daemon/ar_conn.h"
#include "daemon/ar_daemon.h"
#include "daemon/ar_decode.h"

#define AR_READ_CHUNK (64 * 1024)
/* A frame that needs no share of the pending-frame budget must fit in the read chunk. */
_Static_assert(AR_CONN_FRAME_FREE_BYTES <= AR_READ_CHUNK, "AR_CONN_FRAME_FREE_BYTES beyond the read chunk");
/* After a frame this large was handled, give freed heap back to the system at the next sweep. */
#define AR_TRIM_AFTER_BYTES (1u << 20)
/* Blocks smaller than this are not worth keeping (the heap has them at hand). */
#define AR_CONN_SPARE_MIN_BYTES (16u * 1024)
/* The stripped form of a bytes-path invoke frame (ar_decode_strip_inputs) is decoded from a buffer
 * on the stack: a few hundred bytes for a plain invoke (names, shapes, output ranges). */
#define AR_STRIPPED_BYTES 4096

static void conn_parse(ar_conn_t *c);
static void held_remove(ar_conn_t *c);
static void on_readable(uv_poll_t *p, int status, int events);
static void on_read(ar_conn_t *c, ssize_t nread);

/* ------------------------------------------------------------------------------------------ */
/* Per-uid shares (ar_conn.h, "shares")                                                        */

/* The entry of `peer`'s uid (one for every peer whose credentials are unknown), created on first
 * use with no reference; NULL when out of memory. */
static ar_uid_use_t *uid_use_find(ar_server_t *srv, const ar_peer_t *peer) {
  for (ar_uid_use_t *u = srv->uids; u; u = u->next)
    if (u->known == peer->known && (!peer->known || u->uid == peer->uid)) return u;
  ar_uid_use_t *u = calloc(1, sizeof(*u));
  if (u == NULL) return NULL;
  u->known = peer->known;
  u->uid = peer->known ? peer->uid : (uid_t)-1;
  u->next = srv->uids;
  srv->uids = u;
  return u;
}

/* The uid's timeouts are forgotten AR_CONN_THROTTLE_FORGET_MS after the last one. */
static void uid_forget_timeouts(ar_uid_use_t *u, uint64_t now) {
  if (u->timeouts && now - u->last_timeout_us > AR_CONN_THROTTLE_FORGET_MS * 1000ull) {
    u->timeouts = 0;
    u->throttle_until_us = 0;
  }
}

/* Free the entries no connection refers to and that hold no throttle (the sweep, server stop). */
static void uid_use_sweep(ar_server_t *srv, uint64_t now) {
  for (ar_uid_use_t **pp = &srv->uids; *pp;) {
    ar_uid_use_t *u = *pp;
    uid_forget_timeouts(u, now);
    if (u->refs == 0 && u->timeouts == 0) {
      *pp = u->next;
      free(u);
    } else {
      pp = &u->next;
    }
  }
}

/* Peer uids with a connection (the number the budgets are shared among; at least 1). */
static uint32_t uid_count(const ar_server_t *srv) { return srv->peer_uids ? srv->peer_uids : 1; }

/* The reply bytes (queued + reserved) of `c` changed by `delta`: its uid's figure and the peaks. */
static void reply_bytes_add(ar_conn_t *c, int64_t delta) {
  c->uidu->reply_bytes = (uint64_t)((int64_t)c->uidu->reply_bytes + delta);
  uint64_t now = c->wbytes + c->reply_reserved;
  if (now > c->srv->conn_reply_peak) c->srv->conn_reply_peak = now;
}

/* ------------------------------------------------------------------------------------------ */
/* The daemon-wide budget of pending frame bytes (ar_conn.h, "pending")                        */

/* Give back what `c` holds of the budget. */
static void frame_budget_release(ar_conn_t *c) {
  if (c->frame_reserved_bytes == 0) return;
  c->srv->pending_frame_bytes -= c->frame_reserved_bytes;
  c->uidu->pending_frame_bytes -= c->frame_reserved_bytes;
  c->frame_reserved_bytes = 0;
  c->frame_reserved_at = 0;
}

/* True when `c` holds the budget for the frame at the head of rbuf. */
static bool frame_budget_holds_head(const ar_conn_t *c) {
  return c->frame_reserved_bytes != 0 && c->frame_reserved_at == c->rx_bytes - c->rlen;
}

/* rbuf changed (frames consumed, the buffer handed over or emptied): release the budget when the
 * frame it was held for is no longer in rbuf (its stream offset is before rbuf's first byte). */
static void frame_budget_sync(ar_conn_t *c) {
  if (c->frame_reserved_bytes != 0 && c->frame_reserved_at < c->rx_bytes - c->rlen) frame_budget_release(c);
}

/* The frame of `len` bytes whose header is at rbuf + pos is incomplete and rbuf holds `have` of its
 * bytes (header included): hold of the budget the room rbuf is given for it, grown as its bytes
 * arrive (ar_conn.h, "pending"): nothing while fewer than AR_CONN_FRAME_FREE_BYTES of it have
 * arrived (rbuf grows by read chunks then, as for any frame), then min(len, body received +
 * max(its body received, AR_CONN_FRAME_STEP_BYTES)). A header with nothing behind it thus holds nothing: charging the
 * announced length at the header let four 5-byte sends hold the whole default budget. 0, or
 * AR_EBUSY with `msg` when the next step does not fit beside what the other frames hold. */
static int frame_budget_reserve(ar_conn_t *c, size_t pos, uint32_t len, size_t have, char *msg, size_t msg_bytes) {
  uint64_t at = c->rx_bytes - c->rlen + pos;
  if (c->frame_reserved_bytes != 0 && c->frame_reserved_at != at) frame_budget_release(c);   /* an earlier frame's */
  if (have < AR_CONN_FRAME_FREE_BYTES) return 0;   /* also every frame of at most that many bytes */
  /* The step doubles the room with the bytes received (at least AR_CONN_FRAME_STEP_BYTES); this
   * hold grows at every read, rbuf only when the room it gave was filled (conn_alloc). */
  uint64_t body = have - 4, step = AR_MAX(body, (uint64_t)AR_CONN_FRAME_STEP_BYTES);
  uint64_t want = AR_MIN((uint64_t)len, body + step);
  uint64_t own = c->frame_reserved_bytes;
  if (want <= own) return 0;
  ar_server_t *srv = c->srv;
  uint64_t max = srv->cfg.max_pending_frame_bytes, held = srv->pending_frame_bytes, more = want - own;
  if (held > max || more > max - held)   /* held > max: a reload lowered the budget */
    return ar_errf(msg, msg_bytes, AR_EBUSY, "daemon-wide budget of pending frame bytes exhausted: frame of %" PRIu32
                   " bytes refused, %" PRIu64 " of max_pending_frame_bytes %" PRIu64 " held by frames being "
                   "received (%zu bytes of this one received); closing", len, held, max, have - 4);
  /* The uid's share: at most max_pending_frame_bytes_per_uid (admins exempt), and beyond
   * max / (uids connected) only while that much stays free for another uid's frames. */
  ar_uid_use_t *u = c->uidu;
  uint64_t cap = srv->cfg.max_pending_frame_bytes_per_uid, mine = u->pending_frame_bytes + more;
  uint32_t uids = uid_count(srv);
  uint64_t share = max / uids, left = max - held - more;
  bool over_cap = !c->admin && mine > cap, over_share = mine > share && left < share;
  if (over_cap || over_share) {
    srv->frames_over_uid_share++;
    if (over_cap)
      return ar_errf(msg, msg_bytes, AR_EBUSY, "uid %u's share of pending frame bytes exhausted: frame of %" PRIu32
                     " bytes refused, %" PRIu64 " bytes held by this uid's frames being received and %" PRIu64
                     " more wanted, over max_pending_frame_bytes_per_uid %" PRIu64 "; closing", (unsigned)u->uid,
                     len, u->pending_frame_bytes, more, cap);
    return ar_errf(msg, msg_bytes, AR_EBUSY, "uid %u's share of pending frame bytes exhausted: frame of %" PRIu32
                   " bytes refused, %" PRIu64 " bytes held by this uid's frames being received and %" PRIu64
                   " more wanted, over its share %" PRIu64 " (max_pending_frame_bytes %" PRIu64 " / %" PRIu32
                   " uids connected) with %" PRIu64 " held in all; closing", (unsigned)u->uid, len,
                   u->pending_frame_bytes, more, share, max, uids, held);
  }
  srv->pending_frame_bytes += more;
  u->pending_frame_bytes += more;
  c->frame_reserved_bytes = want;
  c->frame_reserved_at = at;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Lifetime                                                                                    */

/* Free the blocks kept for reuse. */
static void conn_drop_spares(ar_conn_t *c) {
  for (uint32_t i = 0; i < c->n_spares; i++) {
    c->srv->spare_block_bytes -= c->spare_cap[i];
    free(c->spare[i]);
  }
  c->n_spares = 0;
}

static void conn_unref(ar_conn_t *c) {
  if (--c->refs == 0) {
    frame_budget_release(c);
    if (c->uidu && --c->uidu->refs == 0) c->srv->peer_uids--;   /* the entry goes at the sweep */
    conn_drop_spares(c);
    free(c->rbuf);
    free((void *)c->peer.groups);
    free(c);
  }
}

/* Take spare i out, keeping the others in the order they came back (oldest first). */
static void *conn_spare_take(ar_conn_t *c, uint32_t i, size_t *cap) {
  void *p = c->spare[i];
  if (cap) *cap = c->spare_cap[i];
  c->srv->spare_block_bytes -= c->spare_cap[i];
  c->n_spares--;
  memmove(c->spare + i, c->spare + i + 1, (c->n_spares - i) * sizeof(c->spare[0]));
  memmove(c->spare_cap + i, c->spare_cap + i + 1, (c->n_spares - i) * sizeof(c->spare_cap[0]));
  return p;
}

void *ar_conn_block_get(ar_conn_t *c, size_t bytes, size_t *cap) {
  if (bytes == 0) bytes = 1;
  uint32_t best = UINT32_MAX;
  for (uint32_t i = 0; c && bytes >= AR_CONN_SPARE_MIN_BYTES && i < c->n_spares; i++)
    if (c->spare_cap[i] >= bytes && (best == UINT32_MAX || c->spare_cap[i] < c->spare_cap[best])) best = i;
  if (best == UINT32_MAX) {
    *cap = bytes;
    return malloc(bytes);
  }
  return conn_spare_take(c, best, cap);
}

void ar_conn_block_put(ar_conn_t *c, void *block, size_t cap) {
  if (block == NULL) return;
  if (c == NULL || c->closing || ar_conn_is_gone(c) || cap < AR_CONN_SPARE_MIN_BYTES || cap > AR_CONN_KEEP_BYTES) {
    free(block);
    return;
  }
  /* The block handed back now is kept; to make room, the ones that came back longest ago go. A
   * connection's next frames look like its last ones: blocks left by earlier requests of another
   * size (a smaller model's frames) must not hold the slots, else every larger frame after them
   * was mapped, faulted in and unmapped anew (selfie_segmentation's bytes path after
   * face_detection_short_range's: ~1 MB and ~260 page faults per invoke). */
  size_t kept = 0;
  for (uint32_t i = 0; i < c->n_spares; i++) kept += c->spare_cap[i];
  while (c->n_spares > 0 && (c->n_spares == AR_CONN_SPARES || kept > AR_CONN_KEEP_BYTES - cap)) {
    size_t old_cap;
    free(conn_spare_take(c, 0, &old_cap));
    kept -= old_cap;
  }
  /* Over all connections too: idle clients must not hold AR_CONN_KEEP_BYTES each. */
  if (c->srv->spare_block_bytes + cap > AR_CONN_SPARE_DAEMON_BYTES) {
    free(block);
    return;
  }
  c->srv->spare_block_bytes += cap;
  c->spare[c->n_spares] = block;
  c->spare_cap[c->n_spares] = cap;
  c->n_spares++;
}

void ar_conn_frame_release(ar_reply_to_t *to, Arenad__Request *req) {
  if (to->frame == NULL) return;
  ar_decode_request_unborrow(req);
  ar_conn_block_put(to->conn, to->frame, (size_t)to->frame_bytes);
  to->frame = NULL;
  to->frame_bytes = 0;
}

/* Descriptors not taken by a register_buffer, and the connection's references on its buffers
 * (a buffer an invoke still uses stays mapped until that invoke is answered). */
static void conn_release_shm(ar_conn_t *c) {
  for (uint32_t i = 0; i < c->n_pending_fds; i++) close(c->pending_fds[i]);
  c->n_pending_fds = 0;
  ar_shm_buf_t *next;
  for (ar_shm_buf_t *b = c->bufs; b; b = next) {
    next = b->next;
    ar_shm_unref(b);
  }
  c->bufs = NULL;
  c->n_bufs = 0;
  c->uidu->buffer_bytes -= c->buf_bytes;
  c->srv->shm_bytes -= c->buf_bytes;
  c->buf_bytes = 0;
}

/* Take the descriptors waiting for the frame that ends before stream offset `end` (the bytes the
 * connection read before it): up to `max` into fds[] (the rest closed). Returns how many came. */
static uint32_t conn_take_fds(ar_conn_t *c, uint64_t end, int *fds, uint32_t max) {
  uint32_t n = 0;
  while (n < c->n_pending_fds && n < AR_CONN_MAX_PENDING_FDS && c->pending_fd_at[n] < end) n++;
  for (uint32_t i = 0; i < n; i++) {
    if (i < max)
      fds[i] = c->pending_fds[i];
    else
      close(c->pending_fds[i]);
  }
  c->n_pending_fds -= n;
  memmove(c->pending_fds, c->pending_fds + n, c->n_pending_fds * sizeof(int));
  memmove(c->pending_fd_at, c->pending_fd_at + n, c->n_pending_fds * sizeof(uint64_t));
  return n;
}

static void close_fds(const int *fds, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) close(fds[i]);
}

static void on_rpoll_closed(uv_handle_t *h) {
  ar_conn_t *c = h->data;
  close(c->rfd);
  c->rfd = -1;
  conn_unref(c);
}

static void on_conn_closed(uv_handle_t *h) {
  ar_conn_t *c = h->data;
  ar_server_t *srv = c->srv;
  c->closed = true;
  if (c->prev)
    c->prev->next = c->next;
  else
    srv->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  srv->n_conns--;
  held_remove(c);
  srv->trim_pending = true;   /* what it held goes back to the system at the next sweep */
  if (srv->ops.conn_gone) srv->ops.conn_gone(srv, c);
  conn_unref(c);
  srv->ops.conn_closed(srv);
}

bool ar_conn_is_gone(const ar_conn_t *c) { return c->closed || uv_is_closing((const uv_handle_t *)&c->pipe); }

void ar_conn_close(ar_conn_t *c) {
  if (ar_conn_is_gone(c)) return;
  c->closing = true;
  c->reading = false;
  frame_budget_release(c);   /* its unfinished frame will never complete */
  conn_release_shm(c);
  conn_drop_spares(c);
  if (!uv_is_closing((uv_handle_t *)&c->rpoll)) uv_close((uv_handle_t *)&c->rpoll, on_rpoll_closed);
  /* Queued writes are cancelled: their on_write frees the reply buffers right away. */
  uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  (void)status;
  ar_conn_t *c = req->data;
  free(req);
  ar_conn_close(c);
  conn_unref(c);
}

void ar_conn_shutdown(ar_conn_t *c) {
  if (ar_conn_is_gone(c)) return;
  bool was_closing = c->closing;
  c->closing = true;
  if (c->reading) uv_poll_stop(&c->rpoll);
  c->reading = false;
  if (was_closing && c->eof) return;   /* a shutdown is already on its way */
  c->eof = true;
  uv_shutdown_t *req = malloc(sizeof(*req));
  if (req == NULL || uv_shutdown(req, (uv_stream_t *)&c->pipe, on_shutdown) != 0) {
    free(req);
    ar_conn_close(c);
    return;
  }
  req->data = c;
  c->refs++;
}

/* ------------------------------------------------------------------------------------------ */
/* Writing                                                                                     */

typedef struct {
  uv_write_t req;
  ar_conn_t *conn;
  uint8_t *buf;                  /* the frame header and every piece that was copied */
  void *keep;                    /* the caller's block the other pieces are written from */
  size_t keep_bytes;
  size_t bytes;
} write_req_t;

/* Packing a reply in pieces: a bytes or string field of at least AR_SEND_REF_BYTES that lies in
 * the block the caller hands over (an invoke's outputs) is not copied; the write sends it from
 * there (one uv_write of several buffers) and frees the block when done. At most
 * AR_SEND_MAX_REFS pieces are sent that way, the rest is copied. */
#define AR_SEND_REF_BYTES 2048
#define AR_SEND_MAX_REFS 14

typedef struct {
  ProtobufCBuffer base;
  uint8_t *copy;                 /* copied pieces, back to back (after the 4-byte header) */
  size_t copy_len;
  size_t pos;                    /* bytes of the message so far, copied or referenced */
  const uint8_t *const *watch;   /* data pointers whose place in the message is wanted, in order */
  size_t n_watch, n_seen;
  size_t *seen_at;               /* where each of them went (pos) */
  const uint8_t *keep;
  size_t keep_bytes;
  int n_refs;
  size_t cut[AR_SEND_MAX_REFS];  /* copy_len where each referenced piece goes */
  const uint8_t *ref[AR_SEND_MAX_REFS];
  size_t ref_len[AR_SEND_MAX_REFS];
} piece_buf_t;

/* With p->copy NULL (the sizing pass) only copy_len and n_refs advance. */
static void piece_append(ProtobufCBuffer *b, size_t len, const uint8_t *data) {
  piece_buf_t *p = (piece_buf_t *)b;
  if (p->n_seen < p->n_watch && data == p->watch[p->n_seen]) p->seen_at[p->n_seen++] = p->pos;
  p->pos += len;
  uintptr_t at = (uintptr_t)data, lo = (uintptr_t)p->keep;
  if (len >= AR_SEND_REF_BYTES && p->n_refs < AR_SEND_MAX_REFS && p->keep && at >= lo &&
      at - lo <= p->keep_bytes && len <= p->keep_bytes - (at - lo)) {
    p->cut[p->n_refs] = p->copy_len;
    p->ref[p->n_refs] = data;
    p->ref_len[p->n_refs] = len;
    p->n_refs++;
    return;
  }
  if (p->copy) memcpy(p->copy + p->copy_len, data, len);
  p->copy_len += len;
}

/* An invoke reply's outputs: each one's data starts at a multiple of AR_SEND_ALIGN bytes from the
 * start of the frame (its 4-byte length included), so that a client reading the frame into memory
 * of malloc's alignment can use them in place (libarenaclient's borrowing decode). The filler is
 * a `pad` field (arenad.proto: Status.pad before the first output, Tensor.pad of the output before
 * each next one) of 3 to 18 bytes: tag, length, zero bytes (proto3 writes no empty bytes field). */
#define AR_SEND_ALIGN 16
#define AR_SEND_ALIGN_MAX 16   /* outputs aligned per reply (a reply with more is sent as it is) */

typedef struct {
  Arenad__Response resp;
  Arenad__Status status;
  Arenad__InvokeResponse invoke;
  Arenad__Tensor t[AR_SEND_ALIGN_MAX];
  Arenad__Tensor *tp[AR_SEND_ALIGN_MAX];
} aligned_reply_t;

static const uint8_t zero_pad[AR_SEND_ALIGN];

/* Bytes of a varint holding v. */
static size_t varint_bytes(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) v >>= 7, n++;
  return n;
}

/* Where output k's data lands (from the frame's start) with pad fields of f[] bytes: its place
 * without pads (at[k]), the pads before it, and the bytes the varint length prefixes before it
 * grow by (Status's, InvokeResponse's, and those of the Tensors holding pads up to its own). */
static size_t pad_landing(size_t k, size_t nw, const size_t *f, const size_t *at, const size_t *idx,
                          const size_t *host, size_t len_status, size_t len_invoke, const size_t *len_host) {
  size_t before = 0, grow_status = 0, grow_host = 0, pads_invoke = 0;
  for (size_t m = 0; m < nw; m++) {
    if (m <= k) before += f[m];
    if (idx[m] == 0) {
      grow_status = varint_bytes(len_status + f[m]) - varint_bytes(len_status);
      continue;
    }
    size_t g = varint_bytes(len_host[m] + f[m]) - varint_bytes(len_host[m]);
    pads_invoke += f[m] + g;
    if (host[m] <= idx[k]) grow_host += g;
  }
  size_t grow_invoke = varint_bytes(len_invoke + pads_invoke) - varint_bytes(len_invoke);
  return 4 + at[k] + before + grow_status + grow_invoke + grow_host;
}

/* `resp`, or for an invoke reply a shallow copy of it in *a with the pad fields set. One sizing
 * pass finds where each output's data lands without pads (at[k]); the pads' effect is then
 * computed, not packed again: a pad of f bytes (tag, one-byte length, f - 2 zeros; field 15 is the
 * last of Status and of Tensor) moves every later output by f, and grows by f the length of the
 * message holding it - Status (before every output), the Tensor of the output before the one it
 * aligns (whose length prefix precedes that output's data, and its own when it is the same one)
 * and InvokeResponse (before every output) - whose varint prefix may then take a byte more
 * (pad_landing). The rounds that packed the reply up to 4 times are run on those figures, so the
 * pads chosen are the ones the packing passes chose, and the packer walks the reply once here. */
static const Arenad__Response *align_outputs(const Arenad__Response *resp, aligned_reply_t *a) {
  if (resp->body_case != ARENAD__RESPONSE__BODY_INVOKE || resp->invoke == NULL || resp->status == NULL ||
      resp->invoke->n_outputs == 0 || resp->invoke->n_outputs > AR_SEND_ALIGN_MAX)
    return resp;
  size_t n = resp->invoke->n_outputs, nw = 0;
  const uint8_t *watch[AR_SEND_ALIGN_MAX];
  ProtobufCBinaryData *pad[AR_SEND_ALIGN_MAX];
  size_t idx[AR_SEND_ALIGN_MAX];    /* the output the k-th watched data belongs to */
  size_t host[AR_SEND_ALIGN_MAX];   /* the Tensor holding its pad (idx[k] - 1; Status when idx[k] is 0) */
  a->resp = *resp;
  a->status = *resp->status;
  a->invoke = *resp->invoke;
  a->resp.status = &a->status;
  a->resp.invoke = &a->invoke;
  a->invoke.outputs = a->tp;
  for (size_t j = 0; j < n; j++) {
    a->t[j] = *resp->invoke->outputs[j];
    a->tp[j] = &a->t[j];
    if (a->t[j].data.len == 0) continue;
    watch[nw] = a->t[j].data.data;
    pad[nw] = j == 0 ? &a->status.pad : &a->t[j - 1].pad;
    pad[nw]->len = 0;
    idx[nw] = j;
    host[nw] = j == 0 ? 0 : j - 1;
    nw++;
  }
  if (nw == 0) return resp;
  size_t at[AR_SEND_ALIGN_MAX];
  piece_buf_t p = {.base = {.append = piece_append}, .watch = watch, .n_watch = nw, .seen_at = at};
  arenad__response__pack_to_buffer(&a->resp, &p.base);
  if (p.n_seen != nw) return resp;   /* not where expected: sent as it is (readers copy it) */
  /* Lengths without pads: Status, InvokeResponse, and the Tensor holding each pad k >= 1. */
  size_t len_status = arenad__status__get_packed_size(&a->status);
  size_t len_invoke = arenad__invoke_response__get_packed_size(&a->invoke);
  size_t len_host[AR_SEND_ALIGN_MAX] = {0};
  for (size_t k = idx[0] == 0 ? 1 : 0; k < nw; k++) len_host[k] = arenad__tensor__get_packed_size(&a->t[host[k]]);
  size_t f[AR_SEND_ALIGN_MAX] = {0};   /* each pad field's bytes, 0 = none */
  bool settled = false;
  /* The rounds of the 4 packing passes this replaces: each pad takes what its output misses, the pads
   * before it counted, the prefixes that grow with them caught by the next round. */
  for (int round = 0; round < 4 && !settled; round++) {
    size_t land[AR_SEND_ALIGN_MAX];
    for (size_t k = 0; k < nw; k++) land[k] = pad_landing(k, nw, f, at, idx, host, len_status, len_invoke, len_host);
    int64_t moved = 0;
    settled = true;
    for (size_t k = 0; k < nw; k++) {
      size_t mis = (size_t)((int64_t)land[k] + moved) % AR_SEND_ALIGN;
      if (mis == 0) continue;
      settled = false;
      size_t nf = f[k] + AR_SEND_ALIGN - mis;
      if (nf < 3) nf += AR_SEND_ALIGN;
      else if (nf > AR_SEND_ALIGN + 2) nf -= AR_SEND_ALIGN;
      moved += (int64_t)nf - (int64_t)f[k];
      f[k] = nf;
    }
  }
  /* Unsettled after 4 rounds (a prefix crossing a varint boundary back and forth; 13 of 583,184
   * outputs in random layouts of 1-6 outputs, as with the 4 packing passes this replaces): sent
   * with the last round's pads, readers copy an output that is not aligned. */
  for (size_t k = 0; k < nw; k++) {
    pad[k]->data = f[k] ? (uint8_t *)zero_pad : NULL;
    pad[k]->len = f[k] ? f[k] - 2 : 0;
  }
  return &a->resp;
}

/* ------------------------------------------------------------------------------------------ */
/* The daemon-wide budget of unwritten replies (ar_conn.h, "read")                             */

/* The replies queued and the replies reserved for the invokes accepted reach the budget. */
static bool reply_budget_over(const ar_server_t *srv) {
  uint64_t max = srv->cfg.max_unwritten_reply_bytes, queued = srv->unwritten_reply_bytes;
  return queued >= max || srv->reserved_reply_bytes >= max - queued;
}

static void held_add(ar_conn_t *c) {
  ar_server_t *srv = c->srv;
  if (c->held || ar_conn_is_gone(c)) return;
  c->held = true;
  c->held_prev = NULL;
  c->held_next = srv->held_conns;
  if (srv->held_conns) srv->held_conns->held_prev = c;
  srv->held_conns = c;
}

static void held_remove(ar_conn_t *c) {
  if (!c->held) return;
  if (c->held_prev)
    c->held_prev->held_next = c->held_next;
  else
    c->srv->held_conns = c->held_next;
  if (c->held_next) c->held_next->held_prev = c->held_prev;
  c->held = false;
  c->held_prev = c->held_next = NULL;
}

/* The uid of `c` holds its share of the budget of unwritten replies (ar_conn.h, "shares"): at
 * least max_unwritten_reply_bytes_per_uid (admins exempt), or at least B / (uids connected) while
 * less than that is left for the others. */
static bool reply_uid_over(const ar_conn_t *c) {
  const ar_server_t *srv = c->srv;
  uint64_t max = srv->cfg.max_unwritten_reply_bytes, mine = c->uidu->reply_bytes;
  if (!c->admin && mine >= srv->cfg.max_unwritten_reply_bytes_per_uid) return true;
  uint64_t total = srv->unwritten_reply_bytes + srv->reserved_reply_bytes, share = max / uid_count(srv);
  return mine >= share && (total >= max || max - total < share);
}

/* Besides its own limits, a connection with a request outstanding (unanswered, or answered and
 * not all written) takes no further frame while the budget is reached: it is held (neither read
 * nor parsed) until the total falls below it. Connections with nothing outstanding are still
 * served, one request at a time. */
static bool conn_may_read(ar_conn_t *c) {
  const ar_config_t *cfg = &c->srv->cfg;
  bool outstanding = c->wbytes > 0 || c->jobs > 0;
  if (outstanding && (reply_budget_over(c->srv) || reply_uid_over(c))) {
    held_add(c);
    return false;
  }
  /* Its own bound counts the replies of the invokes it has accepted before they exist
   * (reply_reserved), so what it can hold is max_pending_reply_bytes plus one reply. */
  return !c->decoding && c->jobs < cfg->max_inflight_per_connection &&
         c->wbytes + c->reply_reserved <= cfg->max_pending_reply_bytes;
}

static void conn_kick(ar_conn_t *c);

/* A write or an answer took the total below the budget: the held connections are kicked, O(held)
 * (each kick may dispatch, reply and close, or take the total back to the budget: the rest are
 * then held again without a kick). The list is taken whole first, so a connection held again by
 * its own kick waits for the next resume. */
static void reply_budget_resume(ar_server_t *srv) {
  if (srv->held_conns == NULL || reply_budget_over(srv)) return;
  ar_conn_t *o = srv->held_conns, *next;
  srv->held_conns = NULL;
  /* Unlinked one by one as they are reached; on_conn_closed (which unlinks a held connection) is
   * a deferred callback, so no connection of the taken list is freed meanwhile. */
  for (; o; o = next) {
    next = o->held_next;
    o->held = false;
    o->held_prev = o->held_next = NULL;
    if (next) next->held_prev = NULL;
    if (reply_budget_over(srv) || ((o->wbytes > 0 || o->jobs > 0) && reply_uid_over(o))) {
      held_add(o);
      continue;
    }
    if (!o->reading && !o->closing && !ar_conn_is_gone(o) && !o->parsing) {
      o->refs++;
      conn_kick(o);
      conn_unref(o);
    }
  }
}

void ar_conn_reserve_reply(ar_reply_to_t *to, uint64_t bytes) {
  ar_conn_t *c = to->conn;
  if (c == NULL) return;
  c->srv->reserved_reply_bytes += bytes;
  c->reply_reserved += bytes;
  reply_bytes_add(c, (int64_t)bytes);
  to->reply_reserved += bytes;
}

void ar_conn_reply_unreserve(ar_conn_t *c, uint64_t bytes) {
  c->srv->reserved_reply_bytes -= bytes;
  c->reply_reserved -= bytes;
  reply_bytes_add(c, -(int64_t)bytes);
}

static void conn_error(ar_conn_t *c, uint64_t id, int err, const char *msg);

static uint32_t frame_len(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static bool has_complete_frame(const ar_conn_t *c) {
  return c->rlen >= 4 && c->rlen - 4 >= frame_len(c->rbuf);
}

/* Something changed (a reply written, a decode finished, end of input): handle the frames that
 * are buffered and resume reading when the connection is below its limits. Once nothing more is
 * read (peer EOF, drain), the frames received before are still answered, then the connection is
 * shut down when its last reply is written. */
static void conn_kick(ar_conn_t *c) {
  if (c->parsing || ar_conn_is_gone(c)) return;
  if (!c->eof) {
    if (!c->reading) conn_parse(c);
    return;
  }
  if (!c->decoding) conn_parse(c);
  if (c->decoding || c->closing || ar_conn_is_gone(c) || has_complete_frame(c)) return;
  if (c->rlen > 0 && c->peer_eof) {
    /* The peer half-closed inside a frame: say so, then close. */
    char msg[AR_MSG_BYTES];
    if (c->rlen >= 4)
      snprintf(msg, sizeof(msg), "truncated frame: header announces %" PRIu32 " bytes, the stream ended after %zu",
               frame_len(c->rbuf), c->rlen - 4);
    else
      snprintf(msg, sizeof(msg), "truncated frame: the stream ended inside the 4-byte length (%zu bytes)", c->rlen);
    c->rlen = 0;
    c->frame_start_us = 0;
    frame_budget_sync(c);
    conn_error(c, 0, AR_EPROTO, msg);
    return;   /* its reply's kick closes the connection */
  }
  if (c->jobs == 0) ar_conn_shutdown(c);
}

/* One request's reply is written (or dropped): it stops counting toward the in-flight cap. */
static void request_finished(ar_conn_t *c) {
  if (c->jobs > 0) c->jobs--;
}

static void on_write(uv_write_t *req, int status) {
  write_req_t *w = (write_req_t *)req;
  ar_conn_t *c = w->conn;
  free(w->buf);
  ar_conn_block_put(c, w->keep, w->keep_bytes);   /* an invoke's output block: reused for the next */
  c->wbytes -= w->bytes;
  c->srv->unwritten_reply_bytes -= w->bytes;
  reply_bytes_add(c, -(int64_t)w->bytes);
  free(w);
  c->write_progress_us = ar_now_us();
  request_finished(c);
  if (status < 0)
    ar_conn_close(c);
  else
    conn_kick(c);   /* the write's reference keeps c alive meanwhile */
  ar_server_t *srv = c->srv;
  conn_unref(c);
  reply_budget_resume(srv);
}

void ar_conn_send(ar_conn_t *c, const Arenad__Response *resp) { ar_conn_send_owned(c, resp, NULL, 0); }

void ar_conn_send_owned(ar_conn_t *c, const Arenad__Response *resp, void *keep, size_t keep_bytes) {
  if (ar_conn_is_gone(c)) {
    free(keep);
    request_finished(c);   /* nobody will read it: nothing is kept */
    return;
  }
  aligned_reply_t aligned;
  resp = align_outputs(resp, &aligned);
  size_t n = arenad__response__get_packed_size(resp);
  write_req_t *w = n <= UINT32_MAX - 4 ? malloc(sizeof(*w)) : NULL;
  piece_buf_t p = {.base = {.append = piece_append}, .keep = keep, .keep_bytes = keep ? keep_bytes : 0};
  /* Room for the header and the copied pieces only (a sizing pass first when pieces may be
   * referenced): an invoke's reply frame is then a few hundred bytes, not its outputs' size. */
  size_t copied = n;
  if (keep && n >= AR_SEND_REF_BYTES) {
    arenad__response__pack_to_buffer(resp, &p.base);
    copied = p.copy_len;
    p.copy_len = 0;
    p.n_refs = 0;
  }
  uint8_t *buf = w ? malloc(4 + copied) : NULL;
  if (buf == NULL) {
    free(w);
    free(keep);
    request_finished(c);
    ar_conn_close(c);
    return;
  }
  buf[0] = (uint8_t)n;
  buf[1] = (uint8_t)(n >> 8);
  buf[2] = (uint8_t)(n >> 16);
  buf[3] = (uint8_t)(n >> 24);
  p.copy = buf + 4;
  arenad__response__pack_to_buffer(resp, &p.base);
  w->conn = c;
  w->buf = buf;
  w->keep = keep;
  w->keep_bytes = keep_bytes;
  w->bytes = 4 + n;
  /* header + copied pieces interleaved with the referenced ones, in stream order */
  uv_buf_t bufs[2 * AR_SEND_MAX_REFS + 1];
  unsigned nb = 0;
  size_t from = 0;
  for (int i = 0; i < p.n_refs; i++) {
    size_t upto = 4 + p.cut[i];
    if (upto > from) bufs[nb++] = uv_buf_init((char *)buf + from, (unsigned)(upto - from));
    bufs[nb++] = uv_buf_init((char *)p.ref[i], (unsigned)p.ref_len[i]);
    from = upto;
  }
  if (4 + p.copy_len > from) bufs[nb++] = uv_buf_init((char *)buf + from, (unsigned)(4 + p.copy_len - from));
  if (c->wbytes == 0) c->write_progress_us = ar_now_us();
  c->refs++;
  c->wbytes += w->bytes;
  c->srv->unwritten_reply_bytes += w->bytes;
  reply_bytes_add(c, (int64_t)w->bytes);
  if (uv_write(&w->req, (uv_stream_t *)&c->pipe, bufs, nb, on_write) != 0) {
    c->refs--;
    c->wbytes -= w->bytes;
    c->srv->unwritten_reply_bytes -= w->bytes;
    reply_bytes_add(c, -(int64_t)w->bytes);
    free(buf);
    free(keep);
    free(w);
    request_finished(c);
    ar_conn_close(c);
  }
}

void ar_conn_request_done(ar_conn_t *c) {
  ar_server_t *srv = c->srv;
  conn_kick(c);
  conn_unref(c);
  reply_budget_resume(srv);   /* its reservation was given back */
}

/* Take a request of `c`: counted in the server's total and the connection's in-flight cap,
 * and holding a reference until it is answered. */
static void conn_take(ar_conn_t *c, ar_reply_to_t *to, uint64_t id) {
  c->srv->requests++;
  c->refs++;
  c->jobs++;
  memset(to, 0, sizeof(*to));
  to->fd = -1;
  to->conn = c;
  to->id = id;
  to->peer = c->peer;
}

/* Answer a request the connection layer refuses itself (framing, decoding, limits). */
static void conn_error(ar_conn_t *c, uint64_t id, int err, const char *msg) {
  ar_reply_to_t to;
  conn_take(c, &to, id);
  c->srv->ops.reply_error(c->srv, &to, err, msg);
}

static void conn_resume(ar_conn_t *c) {
  if (c->reading || c->closing || c->eof || c->srv->draining) return;
  if (uv_poll_start(&c->rpoll, UV_READABLE, on_readable) == 0) {
    c->reading = true;
    c->last_read_us = ar_now_us();
  }
}

static void conn_pause(ar_conn_t *c) {
  if (c->reading) uv_poll_stop(&c->rpoll);
  c->reading = false;
}

/* ------------------------------------------------------------------------------------------ */
/* Decoding                                                                                    */

typedef struct {
  uv_work_t work;
  ar_conn_t *conn;
  uint32_t len;
  uint64_t budget;
  uint64_t id;
  int rc;
  Arenad__Request *req;
  int fds[AR_CONN_MAX_PENDING_FDS];   /* the descriptors the frame came with */
  uint32_t n_fds;
  char msg[AR_MSG_BYTES];
} decode_job_t;

/* The refusal of a frame that came with n_fds descriptors it does not take (reg: a
 * register_buffer frame; release: one that releases). */
static void fds_refusal(char *msg, size_t cap, uint64_t id, uint32_t n_fds, bool reg, bool release) {
  if (reg && !release)
    snprintf(msg, cap, "register_buffer: %" PRIu32 " file descriptors came with the frame; it takes exactly one "
             "(all closed, nothing registered)", n_fds);
  else
    snprintf(msg, cap, "request %" PRIu64 ": %" PRIu32 " file descriptor%s came with %s frame; only a "
             "register_buffer that registers takes one, sent with its frame's bytes (closed, the request not run)",
             id, n_fds, n_fds == 1 ? "" : "s", reg ? "a register_buffer release" : "its");
}

/* Hand a decoded request to dispatch (which takes ownership of `req`, of `frame`, the block its
 * invoke inputs point into, or NULL, and of the n_fds descriptors its frame came with). A
 * register_buffer that registers takes exactly one descriptor, every other request none: a
 * request with another count is refused here (its descriptors closed, the connection usable). */
static void conn_deliver(ar_conn_t *c, uint64_t id, Arenad__Request *req, void *frame, size_t frame_bytes,
                         const int *fds, uint32_t n_fds) {
  bool reg = req->body_case == ARENAD__REQUEST__BODY_REGISTER_BUFFER;
  uint32_t want = reg && req->register_buffer->release == 0 ? 1 : 0;
  if (n_fds != want && !(reg && want == 1 && n_fds == 0)) {
    /* (a register_buffer without one is answered by ar_conn_register_buffer, as it always was) */
    char msg[AR_MSG_BYTES];
    close_fds(fds, n_fds);
    fds_refusal(msg, sizeof(msg), id, n_fds, reg, want == 0);
    c->srv->frames_refused++;
    if (frame) ar_decode_request_unborrow(req);   /* its inputs point into the frame */
    arenad__request__free_unpacked(req, NULL);
    ar_conn_block_put(c, frame, frame_bytes);
    conn_error(c, id, AR_EPROTO, msg);
    return;
  }
  ar_reply_to_t to;
  conn_take(c, &to, id);
  to.frame = frame;
  to.frame_bytes = frame_bytes;
  if (n_fds == 1) to.fd = fds[0];
  c->srv->ops.dispatch(c->srv, &to, req);
}

/* Invoke frames at least this large are decoded without copying their input bytes. */
#define AR_STRIP_MIN_BYTES (16u * 1024)
#define AR_STRIP_MAX_INPUTS 16

/* The bytes path's one copy: decode the invoke frame at c->rbuf + pos + 4 without its inputs'
 * bytes (ar_decode_strip_inputs), point the inputs at them in place, and hand the whole read
 * buffer over with the request (the connection continues in a new buffer holding the bytes that
 * followed the frame). The worker's copy into the arena is then the only copy of the inputs.
 * Returns false (nothing changed) when the frame does not take this path; the caller decodes it
 * as usual, which also words any error. */
static bool deliver_stripped(ar_conn_t *c, size_t pos, uint32_t len, uint64_t budget, uint64_t id) {
  const uint8_t *data = c->rbuf + pos + 4;
  ar_decode_input_ref_t refs[AR_STRIP_MAX_INPUTS];
  size_t n_refs = 0;
  uint8_t small[AR_STRIPPED_BYTES];
  size_t n = ar_decode_strip_inputs(data, len, small, sizeof(small), refs, AR_STRIP_MAX_INPUTS, &n_refs);
  Arenad__Request *req = NULL;
  char msg[AR_MSG_BYTES];
  int rc = n > 0 ? ar_decode_unpack(small, n, budget, &req, msg, sizeof(msg)) : AR_EINVAL;
  if (rc != 0) return false;
  bool ok = req->body_case == ARENAD__REQUEST__BODY_INVOKE && req->invoke->n_inputs == n_refs;
  for (size_t i = 0; ok && i < n_refs; i++) ok = req->invoke->inputs[i]->data.len == 0;
  size_t after = pos + 4 + (size_t)len, rest = c->rlen - after;
  /* The new buffer as large as the old one (up to the bound on kept blocks), so that the next
   * frame of the same size is read without a realloc copying its first chunk: the frame a
   * previous invoke handed back when there is one (ar_conn_frame_release), so no page is mapped
   * or faulted in anew. */
  size_t cap = c->rcap <= AR_CONN_KEEP_BYTES ? c->rcap : AR_READ_CHUNK;
  if (cap < rest) cap = rest;
  if (cap < AR_READ_CHUNK) cap = AR_READ_CHUNK;
  uint8_t *nb = ok ? ar_conn_block_get(c, cap, &cap) : NULL;
  if (nb == NULL) {
    arenad__request__free_unpacked(req, NULL);
    return false;
  }
  for (size_t i = 0; i < n_refs; i++) {
    req->invoke->inputs[i]->data.data = (uint8_t *)refs[i].data;
    req->invoke->inputs[i]->data.len = refs[i].len;
  }
  memcpy(nb, c->rbuf + after, rest);
  void *frame = c->rbuf;
  size_t frame_bytes = c->rcap;
  c->rbuf = nb;
  c->rlen = rest;
  c->rcap = cap;
  conn_deliver(c, id, req, frame, frame_bytes, NULL, 0);
  return true;
}

static void decode_work(uv_work_t *w) {
  decode_job_t *j = w->data;
  j->rc = ar_decode_unpack(j->conn->rbuf + 4, j->len, j->budget, &j->req, j->msg, sizeof(j->msg));
}

static void decode_after(uv_work_t *w, int status) {
  decode_job_t *j = w->data;
  ar_conn_t *c = j->conn;
  ar_server_t *srv = c->srv;
  srv->jobs_outstanding--;
  c->decoding = false;
  size_t used = 4 + (size_t)j->len;
  memmove(c->rbuf, c->rbuf + used, c->rlen - used);
  c->rlen -= used;
  frame_budget_sync(c);   /* the decoded frame has left rbuf */
  srv->trim_pending = true;
  if (status != 0 && j->rc == 0) {
    arenad__request__free_unpacked(j->req, NULL);
    j->req = NULL;
    j->rc = ar_errf(j->msg, sizeof(j->msg), AR_EINTERNAL, "decode cancelled");
  }
  if (ar_conn_is_gone(c)) {
    if (j->req) arenad__request__free_unpacked(j->req, NULL);   /* nobody to answer */
    close_fds(j->fds, j->n_fds);
  } else if (j->rc != 0) {
    close_fds(j->fds, j->n_fds);
    srv->frames_refused++;
    conn_error(c, j->id, j->rc, j->msg);
  } else {
    conn_deliver(c, j->id, j->req, NULL, 0, j->fds, j->n_fds);
  }
  free(j);
  conn_kick(c);
  conn_unref(c);   /* the job's */
  srv->ops.conn_closed(srv);   /* a draining server may be waiting for this job */
}

enum { FRAME_DONE, FRAME_ASYNC, FRAME_DETACHED };

/* One complete frame at c->rbuf + pos + 4. Returns FRAME_DONE when it was handled (the caller
 * moves past it), FRAME_ASYNC when it went to a decode worker (the frame is then moved to the
 * start of rbuf and stays there until the worker is done), FRAME_DETACHED when rbuf went with the
 * request (deliver_stripped: rbuf now starts with the bytes after the frame). */
static int handle_frame(ar_conn_t *c, size_t pos, uint32_t len) {
  ar_server_t *srv = c->srv;
  const uint8_t *data = c->rbuf + pos + 4;
  char msg[AR_MSG_BYTES];
  /* The descriptors this frame came with: those tagged with one of its bytes. */
  int fds[AR_CONN_MAX_PENDING_FDS];
  uint32_t n_fds = conn_take_fds(c, c->rx_bytes - c->rlen + pos + 4 + len, fds, AR_CONN_MAX_PENDING_FDS);
  ar_decode_scan_t scan;
  int rc = ar_decode_scan(data, len, &scan, msg, sizeof(msg));
  if (rc == 0 && scan.nul_field) {
    rc = ar_errf(msg, sizeof(msg), AR_EPROTO, "request %" PRIu64 ": string field '%s' contains a NUL byte", scan.id,
                 scan.nul_field);
  }
  if (rc == 0 && n_fds > 0 && scan.body_field != ARENAD__REQUEST__BODY_REGISTER_BUFFER) {
    fds_refusal(msg, sizeof(msg), scan.id, n_fds, false, false);
    rc = AR_EPROTO;
  }
  if (rc == 0) rc = srv->ops.admit(srv, &scan, msg, sizeof(msg));
  if (rc != 0) {
    close_fds(fds, n_fds);
    srv->frames_refused++;
    if (len > AR_TRIM_AFTER_BYTES) srv->trim_pending = true;
    conn_error(c, scan.id, rc, msg);
    return FRAME_DONE;
  }
  uint64_t budget = ar_decode_budget_bytes(len, srv->cfg.max_decode_bytes);
  if (len <= (srv->decode_inline_bytes ? srv->decode_inline_bytes : AR_DECODE_INLINE_BYTES)) {
    if (scan.body_field == ARENAD__REQUEST__BODY_INVOKE && len >= AR_STRIP_MIN_BYTES &&
        deliver_stripped(c, pos, len, budget, scan.id))
      return FRAME_DETACHED;
    Arenad__Request *req = NULL;
    rc = ar_decode_unpack(data, len, budget, &req, msg, sizeof(msg));
    if (rc != 0) {
      close_fds(fds, n_fds);
      srv->frames_refused++;
      conn_error(c, scan.id, rc, msg);
    }
    else
      conn_deliver(c, scan.id, req, NULL, 0, fds, n_fds);
    return FRAME_DONE;
  }
  decode_job_t *j = calloc(1, sizeof(*j));
  if (j == NULL) {
    close_fds(fds, n_fds);
    conn_error(c, scan.id, AR_ENOMEM, "no memory to decode the frame");
    return FRAME_DONE;
  }
  memcpy(j->fds, fds, n_fds * sizeof(int));
  j->n_fds = n_fds;
  if (pos > 0) {
    memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
    c->rlen -= pos;
  }
  j->conn = c;
  j->len = len;
  j->budget = budget;
  j->id = scan.id;
  j->work.data = j;
  c->refs++;
  c->decoding = true;
  srv->jobs_outstanding++;
  conn_pause(c);
  if (uv_queue_work(srv->loop, &j->work, decode_work, decode_after) != 0) {
    j->rc = ar_errf(j->msg, sizeof(j->msg), AR_EINTERNAL, "cannot queue the decode");
    j->len = len;
    decode_after(&j->work, 0);
  }
  return FRAME_ASYNC;
}

/* ------------------------------------------------------------------------------------------ */
/* Reading and framing                                                                         */

/* Handle every complete frame in the read buffer, within the connection's limits. */
static void conn_parse(ar_conn_t *c) {
  ar_server_t *srv = c->srv;
  size_t pos = 0;
  bool async = false, consumed = false;
  if (c->parsing || c->decoding) return;
  c->parsing = true;
  c->refs++;   /* a reply below may close the connection */
  while (!c->closing && !ar_conn_is_gone(c)) {
    if (!conn_may_read(c)) {
      conn_pause(c);
      break;
    }
    if (c->rlen - pos < 4) break;
    uint32_t len = frame_len(c->rbuf + pos);
    char msg[AR_MSG_BYTES];
    if (len == 0) {
      int fds[AR_CONN_MAX_PENDING_FDS];
      close_fds(fds, conn_take_fds(c, c->rx_bytes - c->rlen + pos + 4, fds, AR_CONN_MAX_PENDING_FDS));
      conn_error(c, 0, AR_EPROTO, "empty frame (length 0): a frame holds one arenad.Request");
      pos += 4;
      continue;
    }
    if (len > srv->cfg.max_frame_bytes) {
      snprintf(msg, sizeof(msg), "frame of %" PRIu32 " bytes exceeds max_frame_bytes %" PRIu64 "; closing", len,
               srv->cfg.max_frame_bytes);
      conn_error(c, 0, AR_E2BIG, msg);
      ar_conn_shutdown(c);
      pos = c->rlen;
      break;
    }
    if (c->rlen - pos - 4 < len) {
      /* Not all there: the frame takes its share of the daemon-wide budget before rbuf grows. */
      int rc = frame_budget_reserve(c, pos, len, c->rlen - pos, msg, sizeof(msg));
      if (rc != 0) {
        srv->frames_over_budget++;
        conn_error(c, 0, rc, msg);
        ar_conn_shutdown(c);
        pos = c->rlen;
      }
      break;
    }
    int h = handle_frame(c, pos, len);
    if (h == FRAME_ASYNC) {
      async = true;   /* rbuf now starts with that frame; it is consumed when decoded */
      break;
    }
    consumed = true;
    if (h == FRAME_DETACHED) pos = 0;   /* the frame left with rbuf; the rest starts the new one */
    else pos += 4 + (size_t)len;
  }
  if (!async && !ar_conn_is_gone(c)) {
    if (pos > 0) {
      memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
      c->rlen -= pos;
    }
    /* A frame's clock starts with its first byte (the slowloris timeout). */
    if (c->rlen == 0)
      c->frame_start_us = 0;
    else if (consumed || pos > 0 || c->frame_start_us == 0)
      c->frame_start_us = ar_now_us();
    if (c->rlen == 0 && c->rcap > AR_CONN_KEEP_BYTES) {
      /* Do not keep a very large frame's buffer (smaller ones go at the sweep once idle). */
      free(c->rbuf);
      c->rbuf = NULL;
      c->rcap = 0;
      srv->trim_pending = true;
    }
  }
  frame_budget_sync(c);   /* the frames handled have left rbuf */
  c->parsing = false;
  if (!c->reading && conn_may_read(c) && !ar_conn_is_gone(c)) conn_resume(c);
  conn_unref(c);
}

/* Room in rbuf for the next read: *buf empty when there is no memory. rbuf grows when less than a
 * read chunk is left (or, for a frame holding the budget, less than the rest of it): to a chunk
 * more, or for that frame to all the room it holds (ar_conn.h, "pending"). Its hold grows at every
 * read (frame_budget_reserve), but rbuf follows only once what it gave was filled, so a frame's
 * buffer doubles about log2(len / AR_CONN_FRAME_STEP_BYTES) times: growing it at every read made
 * a copy per read where realloc cannot remap in place (ASan, TSan, a fragmented heap) - quadratic,
 * ~4 s of copies for a 60 MB frame under ASan, past request_timeout_ms on a busy machine. */
static void conn_alloc(ar_conn_t *c, uv_buf_t *buf) {
  size_t want = c->rlen + AR_READ_CHUNK;
  if (c->rlen >= 4) {
    uint64_t len = frame_len(c->rbuf);
    if (len <= c->srv->cfg.max_frame_bytes && frame_budget_holds_head(c)) {
      uint64_t rest = 4 + len > c->rlen ? 4 + len - c->rlen : 0, room = c->rcap - c->rlen;
      if (room >= AR_READ_CHUNK || (rest > 0 && room >= rest))
        want = c->rcap;   /* enough room: read into it */
      else if (4 + c->frame_reserved_bytes > want)
        want = (size_t)(4 + c->frame_reserved_bytes);
    }
  }
  if (want > c->rcap) {
    uint8_t *nb = realloc(c->rbuf, want);
    if (nb == NULL) {
      *buf = uv_buf_init(NULL, 0);   /* libuv reports UV_ENOBUFS */
      return;
    }
    c->rbuf = nb;
    c->rcap = want;
    c->srv->read_buffer_grows++;
  }
  *buf = uv_buf_init((char *)c->rbuf + c->rlen, (unsigned)AR_MIN(c->rcap - c->rlen, (size_t)UINT32_MAX));
}

/* The socket is readable: one recvmsg into rbuf, with room for the descriptors a client may
 * attach to a register_buffer frame. The kernel gives a sendmsg's descriptors to the read that
 * takes its first bytes and ends that read within that sendmsg's bytes (it never joins bytes sent
 * after them), so they are tagged with the stream offset of the read's last byte: they belong to
 * the frame holding it (handle_frame). Descriptors beyond what may wait are closed at once and
 * the connection refused (a client cannot make the daemon hold descriptors it does not use). */
static void on_readable(uv_poll_t *p, int status, int events) {
  (void)events;
  ar_conn_t *c = p->data;
  /* status < 0: POLLERR, e.g. the peer closed with replies unread (ECONNRESET pending); libuv has
   * stopped the watcher. The frames it sent before are still queued: read them first (recvmsg
   * returns queued bytes before the error), re-arming the watcher, until the error or EOF. */
  uv_buf_t b;
  conn_alloc(c, &b);
  if (b.len == 0) {
    on_read(c, UV_ENOBUFS);
    return;
  }
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int) * AR_CONN_MAX_PENDING_FDS)];
  } ctl;
  struct iovec iov = {.iov_base = b.base, .iov_len = b.len};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
  ssize_t n = recvmsg(c->rfd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (n < 0) {
    if ((errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) && status == 0) return;
    on_read(c, status < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? status : -errno);
    return;
  }
  bool too_many = (mh.msg_flags & MSG_CTRUNC) != 0;
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
      if (c->n_pending_fds < AR_CONN_MAX_PENDING_FDS && !c->closing && n > 0) {
        c->pending_fds[c->n_pending_fds] = fd;
        c->pending_fd_at[c->n_pending_fds] = c->rx_bytes + (uint64_t)n - 1;
        c->n_pending_fds++;
      } else {
        close(fd);
        too_many = true;
      }
    }
  }
  if (too_many && !c->closing) {
    char msg[AR_MSG_BYTES];
    snprintf(msg, sizeof(msg), "more than %d file descriptors sent ahead of the end of the frames they came with "
             "(a register_buffer frame takes one, sent with its bytes); closing", AR_CONN_MAX_PENDING_FDS);
    c->srv->frames_refused++;
    conn_pause(c);
    conn_error(c, 0, AR_EPROTO, msg);
    ar_conn_shutdown(c);
    return;
  }
  on_read(c, n == 0 ? UV_EOF : n);
  if (status < 0 && n > 0 && c->reading && !c->closing && !ar_conn_is_gone(c))
    uv_poll_start(&c->rpoll, UV_READABLE, on_readable);
}

static void on_read(ar_conn_t *c, ssize_t nread) {
  if (nread > 0) {
    ar_server_activity(c->srv);
    c->rlen += (size_t)nread;
    c->rx_bytes += (uint64_t)nread;
    c->last_read_us = ar_now_us();
    if (c->frame_start_us == 0) c->frame_start_us = c->last_read_us;
    conn_parse(c);
    return;
  }
  if (nread == 0) return;
  conn_pause(c);
  if (nread != UV_EOF) {
    ar_conn_close(c);
    return;
  }
  c->eof = true;
  c->peer_eof = true;
  conn_kick(c);
  if (!ar_conn_is_gone(c) && !c->closing && (c->jobs > 0 || c->decoding)) {
    /* EOF alone is a half-close: the client still reads its replies. POLLHUP means it closed
     * both directions: nobody will read them, so close now and let queued invokes be dropped. */
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0) {
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP)) ar_conn_close(c);
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Accepting                                                                                   */

static void free_unlinked(uv_handle_t *h) {
  ar_conn_t *c = h->data;
  free((void *)c->peer.groups);
  free(c);
}

/* The peer's supplementary groups into p->groups (see ar_peer_t); none where the kernel has no
 * SO_PEERGROUPS or memory is short (admin_gids then checks the primary gid only). */
static void peer_groups(int fd, ar_peer_t *p) {
#ifdef SO_PEERGROUPS
  gid_t some[64];
  socklen_t len = sizeof(some);
  gid_t *g = NULL;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, some, &len) == 0) {
    if (len == 0 || (g = malloc(len)) == NULL) return;
    memcpy(g, some, len);
  } else {
    /* ERANGE: len is now the size the list needs (at most NGROUPS_MAX entries). */
    if (errno != ERANGE || len == 0 || len > 65536 * sizeof(gid_t) || (g = malloc(len)) == NULL) return;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) != 0) {
      free(g);
      return;
    }
  }
  p->groups = g;
  p->n_groups = (uint32_t)(len / sizeof(gid_t));
#else
  (void)fd;
  (void)p;
#endif
}

/* Admin peers (admin_uids / admin_gids) are exempt from max_connections_per_uid: a non-admin
 * process of the same uid must not lock root out of its own ping, stats and reload. */
static bool peer_is_admin(ar_server_t *srv, ar_conn_t *c) {
  ar_reply_to_t to = {.conn = c, .peer = c->peer};
  return ar_models_peer_is_admin(srv, &to);
}

/* Idle: nothing in flight (no request unanswered, no reply unwritten), nothing being read. */
static bool conn_idle(const ar_conn_t *c) {
  return !c->closing && !ar_conn_is_gone(c) && c->jobs == 0 && c->wbytes == 0 && c->reply_reserved == 0 &&
         c->rlen == 0 && !c->decoding;
}

/* The connection to close to make room (ar_conn.h, "accept"): the one of a non-admin peer idle the
 * longest, among the uids holding more than `more_than` live connections (0: any); NULL if none. */
static ar_conn_t *room_victim(ar_server_t *srv, const ar_conn_t *except, uint32_t more_than) {
  ar_conn_t *best = NULL;
  for (ar_conn_t *o = srv->conns; o; o = o->next)
    if (o != except && !o->admin && conn_idle(o) && o->uidu->live > more_than &&
        (best == NULL || o->last_read_us < best->last_read_us))
      best = o;
  return best;
}

/* Close idle connection `o` so that `c` gets its slot: one EBUSY Response naming why, a log line. */
static void evict_for(ar_conn_t *o, const ar_conn_t *c, const char *why) {
  ar_server_t *srv = c->srv;
  double idle_s = (double)(ar_now_us() - o->last_read_us) / 1e6;
  ar_log("closing an idle connection (uid %u pid %d, idle %.1f s) to make room for uid %u pid %d: %s",
         (unsigned)o->peer.uid, (int)o->peer.pid, idle_s, (unsigned)c->peer.uid, (int)c->peer.pid, why);
  char msg[AR_MSG_BYTES];
  snprintf(msg, sizeof(msg), "connection closed after %.1f s idle to make room for another peer (%s)", idle_s, why);
  srv->closed_for_room++;
  o->uidu->live--;
  conn_error(o, 0, AR_EBUSY, msg);
  ar_conn_shutdown(o);
}

void ar_conn_accept(ar_server_t *srv, uv_stream_t *listener, int status) {
  if (status < 0) {
    ar_log("accept: %s", uv_strerror(status));
    return;
  }
  ar_conn_t *c = calloc(1, sizeof(*c));
  if (c == NULL) return;
  c->srv = srv;
  c->refs = 1;
  c->rfd = -1;
  uv_pipe_init(srv->loop, &c->pipe, 0);
  c->pipe.data = c;
  uv_os_fd_t fd;
  struct ucred cred;
  socklen_t cl = sizeof(cred);
  bool ok = uv_accept(listener, (uv_stream_t *)&c->pipe) == 0 && uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0;
  if (ok && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 && cl == sizeof(cred)) {
    c->peer.known = true;
    c->peer.uid = cred.uid;
    c->peer.gid = cred.gid;
    c->peer.pid = cred.pid;
    peer_groups(fd, &c->peer);
  }
  if (ok) c->uidu = uid_use_find(srv, &c->peer);
  if (!ok || c->uidu == NULL || (c->rfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0 ||
      uv_poll_init(srv->loop, &c->rpoll, c->rfd) != 0) {
    /* Not linked yet: close the bare handle, free c when it is closed. */
    if (c->rfd >= 0) close(c->rfd);
    c->closed = true;
    uv_close((uv_handle_t *)&c->pipe, free_unlinked);
    return;
  }
  if (c->uidu->refs++ == 0) srv->peer_uids++;
  c->rpoll.data = c;
  c->refs++;   /* the poll handle's, dropped when it is closed */
  c->admin = peer_is_admin(srv, c);
  /* Connections on their way out (refused, shut down) do not count against the limits. */
  uint32_t live = 0, others = 0;
  for (ar_uid_use_t *u = srv->uids; u; u = u->next) u->live = 0;
  for (const ar_conn_t *o = srv->conns; o; o = o->next)
    if (!o->closing) {
      live++;
      o->uidu->live++;
      if (!o->admin) others++;
    }
  uint32_t same_uid = c->peer.known ? c->uidu->live : 0;
  c->next = srv->conns;
  if (srv->conns) srv->conns->prev = c;
  srv->conns = c;
  srv->n_conns++;
  c->last_read_us = ar_now_us();
  const ar_config_t *cfg = &srv->cfg;
  uint32_t max = cfg->max_connections, reserved = AR_MIN(cfg->admin_reserved_connections, max - 1);
  char msg[AR_MSG_BYTES], why[160];
  int err = 0;
  uint64_t now = c->last_read_us;
  uid_forget_timeouts(c->uidu, now);
  if (srv->draining) {
    err = ar_errf(msg, sizeof(msg), AR_ESTATE, "daemon is shutting down");
  } else if (!c->admin && c->uidu->throttle_until_us > now) {
    srv->conns_throttled++;
    err = ar_errf(msg, sizeof(msg), AR_EBUSY, "uid %u is throttled for another %" PRIu64 " ms: %" PRIu32 " of its frames "
                  "were not completed within request_timeout_ms %u; try again later", (unsigned)c->peer.uid,
                  (c->uidu->throttle_until_us - now + 999) / 1000, c->uidu->timeouts, cfg->request_timeout_ms);
  } else if (c->peer.known && same_uid >= cfg->max_connections_per_uid && !c->admin) {
    err = ar_errf(msg, sizeof(msg), AR_EBUSY, "too many connections from uid %u (max_connections_per_uid %u)",
                  (unsigned)c->peer.uid, cfg->max_connections_per_uid);
  } else if (c->admin) {
    /* An admin taking one of the reserved slots: an idle non-admin connection goes, so the reserve
     * is there for the next admin too (and the admin gets in even when every slot is taken). */
    if (live >= max - reserved) {
      ar_conn_t *o = room_victim(srv, c, 0);
      snprintf(why, sizeof(why), "an admin peer took one of the admin_reserved_connections %u of max_connections %u",
               reserved, max);
      if (o) evict_for(o, c, why), live--;
    }
    if (live >= max)
      err = ar_errf(msg, sizeof(msg), AR_EBUSY, "too many connections (max_connections %u, none of them idle and "
                    "held by a non-admin peer); try again later", max);
  } else if (live >= max || others >= max - reserved) {
    /* Slots of non-admins all taken: the idle connection of a uid holding more than this uid will
     * once it is in (so that uids even out rather than swap slots) goes, the longest idle first. */
    ar_conn_t *o = room_victim(srv, c, same_uid + 1);
    snprintf(why, sizeof(why), "max_connections %u, %u of them reserved for admin peers, uid %u holds %u", max,
             reserved, o ? (unsigned)o->peer.uid : 0u, o ? o->uidu->live : 0u);
    if (o)
      evict_for(o, c, why);
    else
      err = ar_errf(msg, sizeof(msg), AR_EBUSY, "too many connections (max_connections %u, %u of them reserved for "
                    "admin peers); try again later", max, reserved);
  }
  if (err) {
    srv->conns_refused++;
    conn_error(c, 0, err, msg);
    ar_conn_shutdown(c);
    return;
  }
  conn_resume(c);
}

/* ------------------------------------------------------------------------------------------ */
/* Timeouts, drain                                                                             */

/* A frame of `c` was cut by request_timeout_ms: from the AR_CONN_THROTTLE_AFTER-th such frame of
 * its uid on, new connections of that uid are refused for a period doubling at each further one
 * (admins are never throttled). */
static void uid_timed_out(ar_conn_t *c, uint64_t now) {
  ar_uid_use_t *u = c->uidu;
  if (c->admin) return;
  uid_forget_timeouts(u, now);
  u->timeouts++;
  u->last_timeout_us = now;
  if (u->timeouts < AR_CONN_THROTTLE_AFTER) return;
  uint32_t k = AR_MIN(u->timeouts - AR_CONN_THROTTLE_AFTER, 16u);
  uint64_t ms = AR_MIN((uint64_t)AR_CONN_THROTTLE_FIRST_MS << k, (uint64_t)AR_CONN_THROTTLE_MAX_MS);
  u->throttle_until_us = now + ms * 1000;
  ar_log("throttling uid %u (pid %d): %" PRIu32 " of its frames not completed within request_timeout_ms %u; its new "
         "connections are refused for %" PRIu64 " ms", (unsigned)u->uid, (int)c->peer.pid, u->timeouts,
         c->srv->cfg.request_timeout_ms, ms);
}

static void on_sweep(uv_timer_t *t) {
  ar_server_t *srv = t->data;
  const ar_config_t *cfg = &srv->cfg;
  uint64_t now = ar_now_us();
  ar_conn_t *next;
  for (ar_conn_t *c = srv->conns; c; c = next) {
    next = c->next;
    if (ar_conn_is_gone(c)) continue;
    if (cfg->send_timeout_ms && c->wbytes > 0 && now - c->write_progress_us > cfg->send_timeout_ms * 1000ull) {
      ar_log("closing a connection (uid %u pid %d): %" PRIu64 " reply bytes unread for send_timeout_ms %u",
             (unsigned)c->peer.uid, (int)c->peer.pid, c->wbytes, cfg->send_timeout_ms);
      srv->closed_send_timeout++;
      ar_conn_close(c);
      continue;
    }
    if (c->closing) continue;
    if (cfg->request_timeout_ms && c->reading && c->rlen > 0 && c->frame_start_us &&
        now - c->frame_start_us > cfg->request_timeout_ms * 1000ull) {
      char msg[AR_MSG_BYTES];
      snprintf(msg, sizeof(msg),
               "frame not completed within request_timeout_ms %u (%zu bytes received); closing",
               cfg->request_timeout_ms, c->rlen);
      c->rlen = 0;
      c->frame_start_us = 0;
      frame_budget_sync(c);
      srv->frames_timed_out++;
      conn_error(c, 0, AR_ETIMEDOUT, msg);
      ar_conn_shutdown(c);
      uid_timed_out(c, now);
      continue;
    }
    if (c->rlen == 0 && !c->decoding && (c->n_spares > 0 || c->rcap > AR_READ_CHUNK) &&
        now - c->last_read_us > AR_CONN_KEEP_IDLE_MS * 1000ull) {
      /* Quiet for a while: the blocks kept for its next frame go back to the system. */
      conn_drop_spares(c);
      free(c->rbuf);
      c->rbuf = NULL;
      c->rcap = 0;
      srv->trim_pending = true;
    }
    if (cfg->idle_timeout_ms && c->reading && c->rlen == 0 && c->jobs == 0 && c->wbytes == 0 &&
        now - c->last_read_us > cfg->idle_timeout_ms * 1000ull) {
      srv->closed_idle++;
      ar_conn_shutdown(c);
    }
  }
  uid_use_sweep(srv, now);
  if (srv->trim_pending) {
    srv->trim_pending = false;
    malloc_trim(0);
  }
}

void ar_conn_timers_start(ar_server_t *srv) {
  const ar_config_t *cfg = &srv->cfg;
  uint64_t every = 1000;
  uint32_t t[3] = {cfg->request_timeout_ms, cfg->idle_timeout_ms, cfg->send_timeout_ms};
  for (int i = 0; i < 3; i++)
    if (t[i] && t[i] / 4 < every) every = t[i] / 4;
  if (every < 10) every = 10;
  uv_timer_init(srv->loop, &srv->sweep);
  srv->sweep.data = srv;
  uv_timer_start(&srv->sweep, on_sweep, every, every);
  uv_unref((uv_handle_t *)&srv->sweep);   /* the sweep alone never keeps the loop running */
  srv->sweep_on = true;
}

static void on_timer_closed(uv_handle_t *h) { (void)h; }

void ar_conn_timers_stop(ar_server_t *srv) {
  if (!srv->sweep_on) return;
  srv->sweep_on = false;
  uv_close((uv_handle_t *)&srv->sweep, on_timer_closed);
}

void ar_conn_stats_json(ar_server_t *srv, json_t *d) {
  const ar_config_t *cfg = &srv->cfg;
  uint64_t now = ar_now_us(), most = 0;
  for (const ar_conn_t *c = srv->conns; c; c = c->next) most = AR_MAX(most, c->wbytes + c->reply_reserved);
#define SET(k, v) json_object_set_new(d, k, json_integer((json_int_t)(v)))
  SET("admin_reserved_connections", cfg->admin_reserved_connections);
  SET("closed_for_room", srv->closed_for_room);
  SET("connections_throttled", srv->conns_throttled);
  SET("max_pending_frame_bytes_per_uid", cfg->max_pending_frame_bytes_per_uid);
  SET("frames_over_uid_share", srv->frames_over_uid_share);
  SET("max_unwritten_reply_bytes_per_uid", cfg->max_unwritten_reply_bytes_per_uid);
  SET("max_pending_reply_bytes", cfg->max_pending_reply_bytes);
  SET("connection_reply_bytes", most);
  SET("connection_reply_bytes_peak", srv->conn_reply_peak);
  SET("buffer_bytes", srv->shm_bytes);
  SET("max_buffer_bytes_per_uid", cfg->max_buffer_bytes_per_uid);
#undef SET
  json_t *uids = json_array();
  for (ar_uid_use_t *u = srv->uids; u; u = u->next) u->live = 0;   /* a scratch count (accept's too) */
  for (const ar_conn_t *c = srv->conns; c; c = c->next)
    if (!c->closing) c->uidu->live++;
  for (const ar_uid_use_t *u = srv->uids; u; u = u->next) {
    uint32_t live = u->live;
    uint64_t throttled_ms = u->throttle_until_us > now ? (u->throttle_until_us - now + 999) / 1000 : 0;
    json_array_append_new(uids, json_pack("{s:o,s:I,s:I,s:I,s:I,s:I,s:I}", "uid",
                                          u->known ? json_integer((json_int_t)u->uid) : json_null(), "connections",
                                          (json_int_t)live, "pending_frame_bytes", (json_int_t)u->pending_frame_bytes,
                                          "reply_bytes", (json_int_t)u->reply_bytes, "buffer_bytes",
                                          (json_int_t)u->buffer_bytes, "frame_timeouts", (json_int_t)u->timeouts,
                                          "throttled_ms", (json_int_t)throttled_ms));
  }
  json_object_set_new(d, "uids", uids);
}

size_t ar_conn_shm_mappings(const ar_server_t *srv, uintptr_t (*out)[2], size_t cap, uint64_t *bytes) {
  size_t n = 0;
  *bytes = 0;
  for (const ar_conn_t *c = srv->conns; c; c = c->next)
    for (const ar_shm_buf_t *b = c->bufs; b; b = b->next) {
      if (n < cap) {
        out[n][0] = (uintptr_t)b->base;
        out[n][1] = (uintptr_t)b->base + b->bytes;
      }
      n++;
      *bytes += b->bytes;
    }
  return n;
}

void ar_conn_free_uids(ar_server_t *srv) {
  ar_uid_use_t *next;
  for (ar_uid_use_t *u = srv->uids; u; u = next) {
    next = u->next;
    free(u);
  }
  srv->uids = NULL;
}

void ar_conn_drain(ar_server_t *srv) {
  ar_conn_t *next;
  for (ar_conn_t *c = srv->conns; c; c = next) {
    next = c->next;
    conn_pause(c);
    c->eof = true;   /* nothing more is read; what was received is answered, then it closes */
    conn_kick(c);
  }
}

void ar_conn_close_all(ar_server_t *srv) {
  ar_conn_t *next;
  for (ar_conn_t *c = srv->conns; c; c = next) {
    next = c->next;
    ar_conn_close(c);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Shared-memory buffers                                                                       */

ar_shm_buf_t *ar_conn_buffer(const ar_conn_t *c, uint32_t id) {
  for (ar_shm_buf_t *b = c->bufs; b; b = b->next)
    if (b->id == id) return b;
  return NULL;
}

static void reply_buffer(ar_conn_t *c, const ar_reply_to_t *to, uint32_t id, uint64_t bytes, bool writable) {
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__RegisterBufferResponse body = ARENAD__REGISTER_BUFFER_RESPONSE__INIT;
  body.buffer = id;
  body.bytes = bytes;
  body.writable = writable;
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_REGISTER_BUFFER;
  resp.register_buffer = &body;
  c->srv->ops.reply(c->srv, to, &resp);
}

void ar_conn_register_buffer(ar_conn_t *c, const ar_reply_to_t *to, const Arenad__RegisterBufferRequest *r) {
  ar_server_t *srv = c->srv;
  const ar_config_t *cfg = &srv->cfg;
  char msg[AR_MSG_BYTES];
  int fd = to->fd;   /* conn_deliver let one through only with a register that is not a release */
  if (r->release != 0) {
    if (fd >= 0) close(fd);
    ar_shm_buf_t **pp = &c->bufs;
    while (*pp && (*pp)->id != r->release) pp = &(*pp)->next;
    if (*pp == NULL) {
      snprintf(msg, sizeof(msg), "release: no buffer %" PRIu32 " is registered on this connection", r->release);
      return srv->ops.reply_error(srv, to, AR_EINVAL, msg);
    }
    ar_shm_buf_t *b = *pp;
    *pp = b->next;
    uint64_t bytes = b->bytes;
    bool writable = b->writable;
    c->n_bufs--;
    c->buf_bytes -= bytes;
    c->uidu->buffer_bytes -= bytes;
    srv->shm_bytes -= bytes;
    ar_shm_unref(b);   /* unmapped now, or when the last invoke using it is answered */
    return reply_buffer(c, to, r->release, bytes, writable);
  }
  if (fd < 0)
    return srv->ops.reply_error(srv, to, AR_EINVAL, "register_buffer: no file descriptor came with the frame (send "
                                "the memfd with SCM_RIGHTS in the sendmsg that carries the frame's bytes)");
  int rc = 0;
  ar_shm_buf_t *b = NULL;
  if (c->n_bufs >= cfg->max_buffers_per_connection)
    rc = ar_errf(msg, sizeof(msg), AR_ENOSPC, "this connection has %" PRIu32 " buffers registered "
                 "(max_buffers_per_connection %" PRIu32 "); release one first", c->n_bufs,
                 cfg->max_buffers_per_connection);
  else
    rc = ar_shm_map(fd, cfg->max_buffer_bytes_per_connection - AR_MIN(c->buf_bytes, cfg->max_buffer_bytes_per_connection),
                    &b, msg, sizeof(msg));
  close(fd);   /* the mapping keeps the memfd alive; the daemon holds no descriptor */
  ar_uid_use_t *u = c->uidu;
  uint64_t uid_max = cfg->max_buffer_bytes_per_uid;
  if (rc == 0 && !c->admin && (u->buffer_bytes > uid_max || b->bytes > uid_max - u->buffer_bytes)) {
    rc = ar_errf(msg, sizeof(msg), AR_ENOSPC, "the buffer's %" PRIu64 " bytes exceed the %" PRIu64 " bytes uid %u may "
                 "still map (max_buffer_bytes_per_uid %" PRIu64 ", %" PRIu64 " registered on its connections)", b->bytes,
                 uid_max - AR_MIN(u->buffer_bytes, uid_max), (unsigned)u->uid, uid_max, u->buffer_bytes);
    ar_shm_unref(b);
    b = NULL;
  }
  if (rc != 0) {
    char text[AR_MSG_BYTES + 32];
    snprintf(text, sizeof(text), "register_buffer: %s", msg);
    return srv->ops.reply_error(srv, to, rc, text);
  }
  b->id = ++c->next_buf_id;
  b->next = c->bufs;
  c->bufs = b;
  c->n_bufs++;
  c->buf_bytes += b->bytes;
  u->buffer_bytes += b->bytes;
  srv->shm_bytes += b->bytes;
  reply_buffer(c, to, b->id, b->bytes, b->writable);
}
