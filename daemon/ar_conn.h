/* ar_conn.h - arenad's connection layer, below request dispatch: accepting clients, framing,
 * decoding within a budget, per-connection read/write budgets, timeouts, peer credentials.
 *
 * Every limit that keeps one client from starving the daemon or the others lives here:
 *
 *   accept       max_connections (whole daemon) and max_connections_per_uid (per peer uid):
 *                past either, the new connection gets one EBUSY Response and is closed. Admin
 *                peers (admin_uids / admin_gids) are exempt from the per-uid cap, not from
 *                max_connections: idle connections of their uid never lock them out.
 *                admin_reserved_connections of the slots are for admins only: non-admins hold at
 *                most max_connections - that. A non-admin finding no slot it may take makes the
 *                connection idle the longest (nothing in flight, nothing being read) of a
 *                non-admin uid holding more connections than its own uid will once in go
 *                (uids even out, they never swap slots back and forth); an admin taking one of
 *                the reserved slots makes the longest idle non-admin connection of any uid go, so
 *                the reserve stays for the next admin. The one closed gets an EBUSY Response
 *                saying why, and a log line names both uids and pids.
 *                SO_PEERCRED is read once at accept (ar_conn_t.peer, ar_conn_t.admin).
 *   read         recvmsg on a duplicate of the socket's descriptor watched by a uv_poll_t (libuv's
 *                own reads would drop the file descriptors a register_buffer frame carries). The
 *                descriptors belong to the frame they arrived with: the kernel hands a sendmsg's
 *                descriptors to the read that takes its first bytes and ends that read within
 *                them, so they are tagged with the stream offset of the read's last byte and go
 *                to the frame holding that byte (through an async decode too). A register_buffer
 *                frame takes exactly one, any other frame none: a frame with another count is
 *                refused (EPROTO) and its descriptors closed. At most AR_CONN_MAX_PENDING_FDS wait
 *                for an incomplete frame; beyond that the connection is refused with EPROTO and
 *                closed. Writes stay on the
 *                uv_pipe_t. A connection is read only while it has fewer than max_inflight_per_connection
 *                requests unanswered-or-unwritten, at most max_pending_reply_bytes of replies
 *                queued for writing and reserved for its invokes not yet answered (reply_reserved,
 *                so a client that never reads holds at most that plus one reply), and no frame on
 *                a decode worker; otherwise reading stops
 *                until the client drains its replies (backpressure, nothing buffered in between).
 *                Daemon-wide, max_unwritten_reply_bytes (B): it counts the reply bytes queued
 *                on all connections (srv->unwritten_reply_bytes) and, for each invoke accepted
 *                and not yet answered, an upper bound of its reply at the model's current output
 *                shapes (srv->reserved_reply_bytes; ar_conn_reserve_reply). While the two reach B,
 *                a connection with any request outstanding (unanswered, or its reply not all
 *                written) takes no further frame: it is not read and the frames already in its
 *                read buffer wait (nothing is refused); it is put on srv->held_conns, and the
 *                write or answer that takes the total below B resumes the held ones (O(held)).
 *                Connections with nothing outstanding are still served, one request at a time.
 *                The bound: a frame is taken only while the total is below B or its connection
 *                has nothing outstanding, so unwritten_reply_bytes stays below B plus one reply
 *                per connection (the one whose frame crossed B, and one request of each
 *                connection that had nothing outstanding then), as long as each reply is within
 *                its reservation (it is, but for an invoke that changes the model's input shapes:
 *                its outputs are reserved at the shapes before it, and requests other than
 *                invokes reserve nothing: they are answered at once, or by a load, unload,
 *                reload or compaction, a few hundred bytes).
 *   frame        4-byte little-endian length + that many bytes of arenad.Request; a length of 0
 *                or above max_frame_bytes is refused (the latter closes the connection).
 *   pending      max_pending_frame_bytes (whole daemon): a frame whose bytes have not all arrived
 *                holds of one daemon-wide budget (srv->pending_frame_bytes) the room the read buffer
 *                is given for it, charged before the buffer grows and grown as its bytes arrive:
 *                nothing while fewer than AR_CONN_FRAME_FREE_BYTES of it (header included) have
 *                arrived, then min(announced length, R + max(R, AR_CONN_FRAME_STEP_BYTES)), R its bytes
 *                received. So a frame holds at most twice what it received, or that plus 1 MiB: a header
 *                with nothing behind it holds nothing. It is held until the frame leaves the read
 *                buffer (handled, handed over with its request, decoded, timed out, truncated) or
 *                the connection closes. A frame whose next step does not fit is refused with EBUSY
 *                naming the budget and the connection is closed; the others and their invokes go
 *                on. The first AR_CONN_FRAME_FREE_BYTES fit in the read buffer every connection
 *                has (max_connections bounds those).
 *   shares       per peer uid (ar_uid_use_t, shared by its connections): the frames it is
 *                receiving hold at most max_pending_frame_bytes_per_uid, the replies queued and
 *                reserved on its connections at most max_unwritten_reply_bytes_per_uid (past it
 *                its connections with something outstanding are held, as for the daemon-wide
 *                budget below), its shared-memory buffers at most max_buffer_bytes_per_uid;
 *                admins are exempt from these caps. Fair share: with U uids connected, a uid
 *                holding more than budget / U of the frame or reply budget takes more only while
 *                budget / U stays free for another uid. A uid whose frames are cut by
 *                request_timeout_ms AR_CONN_THROTTLE_AFTER times (forgotten after
 *                AR_CONN_THROTTLE_FORGET_MS without one) is throttled: its new connections are
 *                refused EBUSY for AR_CONN_THROTTLE_FIRST_MS, doubled at each further timeout up
 *                to AR_CONN_THROTTLE_MAX_MS (admins never).
 *   decode       ar_decode.h: the wire is scanned first (counts of repeated fields, NUL bytes in
 *                strings), then unpacked with an allocator charging a budget of a small multiple
 *                of the frame (hard cap max_decode_bytes); frames above AR_DECODE_INLINE_BYTES are
 *                decoded on a worker thread so the loop keeps answering other clients.
 *   write        replies are packed at once and queued (an invoke reply's output bytes placed at
 *                multiples of 16 from the frame's start with `pad` fields, docs/protocol.md); a
 *                request counts toward the in-flight cap until its reply has been written. A connection whose queued replies make no
 *                progress for send_timeout_ms is closed; replies to a closed connection are freed
 *                at once.
 *   timeouts     request_timeout_ms: a frame that started and did not finish (slowloris);
 *                idle_timeout_ms: nothing in flight, nothing read. One sweep timer checks all
 *                connections (a few times per the smallest timeout).
 *
 *   blocks       the read buffer, a bytes-path frame handed over with its invoke, and the block
 *                an invoke's outputs are written from come back to the connection when done and
 *                are reused for its next frame and reply (AR_CONN_SPARES blocks of at most
 *                AR_CONN_KEEP_BYTES in all besides the read buffer; the blocks that came back
 *                longest ago make room for a newer one), so a client sending frames above
 *                glibc's mmap threshold causes no mmap, munmap or page fault per frame, also
 *                after frames of other sizes;
 *                they are freed AR_CONN_KEEP_IDLE_MS after the connection's last read, and the
 *                daemon keeps at most AR_CONN_SPARE_DAEMON_BYTES of them over all connections
 *                (srv->spare_block_bytes; past it a block handed back is freed).
 *   buffers      shared-memory buffers registered on the connection (ar_shm.h): at most
 *                max_buffers_per_connection of them holding max_buffer_bytes_per_connection bytes
 *                in all (ENOSPC past either); released with the connection.
 *
 * Ownership: a connection is freed when its refcount drops to 0: 1 for the open handle, 1 per
 * request not yet answered (held by the ar_reply_to_t of that request), 1 per queued write,
 * 1 while its frame is on a decode worker, 1 for the read poll handle until it is closed.
 */
#ifndef AR_CONN_H
#define AR_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "daemon/ar_shm.h"
#include "proto/arenad.pb-c.h"

typedef struct ar_server ar_server_t;
typedef struct ar_reply_to ar_reply_to_t;
typedef struct ar_conn ar_conn_t;

/* Frames up to this many bytes are decoded on the loop thread; larger ones on a worker. */
#define AR_DECODE_INLINE_BYTES (1u << 20)
/* Frames up to this many bytes (the 4-byte header included) take nothing from the daemon-wide
 * budget of pending frame bytes: they fit in the read chunk every connection reads into. */
#define AR_CONN_FRAME_FREE_BYTES (64u * 1024)
/* Past AR_CONN_FRAME_FREE_BYTES, a frame being received holds of the budget what of it has arrived
 * plus a step of as much again, at least this many bytes (the read buffer grows by that step). */
#define AR_CONN_FRAME_STEP_BYTES (1u << 20)
/* File descriptors received and waiting for the rest of the frame they came with. */
#define AR_CONN_MAX_PENDING_FDS 4
/* Blocks a connection keeps for reuse (ar_conn_block_get): at most this many, of at most
 * AR_CONN_KEEP_BYTES in all (a read buffer larger than that is freed once it is empty), freed
 * when nothing was read for AR_CONN_KEEP_IDLE_MS. */
#define AR_CONN_SPARES 4
#define AR_CONN_KEEP_BYTES (8u << 20)
#define AR_CONN_KEEP_IDLE_MS 2000
/* The blocks all connections keep for reuse, in all: past it a block handed back is freed instead
 * of kept (256 connections x AR_CONN_KEEP_BYTES would be 2 GiB held by idle clients). */
#define AR_CONN_SPARE_DAEMON_BYTES (64u << 20)

/* The peer's credentials, read with SO_PEERCRED when the connection was accepted (the process
 * that called connect(2); fixed for the connection's life). known is false when the kernel did
 * not tell (the connection is then treated as an unprivileged peer). `groups`: its supplementary
 * groups (SO_PEERGROUPS, Linux 4.13), a malloc'd array the connection owns (freed with it; a copy
 * of the peer in a request's reply target is valid while the request holds the connection);
 * NULL / 0 where the kernel does not tell them (admin_gids then sees the primary gid only). */
typedef struct ar_peer {
  bool known;
  uid_t uid;
  gid_t gid;
  pid_t pid;
  const gid_t *groups;
  uint32_t n_groups;
} ar_peer_t;

/* A uid's frames cut by request_timeout_ms before its new connections are refused for a while
 * (ar_conn.h, "shares"): the first refusal period, doubled at each further timeout up to the
 * last; the count is forgotten after AR_CONN_THROTTLE_FORGET_MS without a timeout. */
#define AR_CONN_THROTTLE_AFTER 2
#define AR_CONN_THROTTLE_FIRST_MS 1000u
#define AR_CONN_THROTTLE_MAX_MS 60000u
#define AR_CONN_THROTTLE_FORGET_MS 300000u

/* One peer uid's use of the daemon-wide budgets, shared by its connections (srv->uids; one entry
 * for the peers whose credentials are unknown). Freed when no connection refers to it and it
 * holds no throttle (the sweep). Loop thread only. */
typedef struct ar_uid_use {
  bool known;
  uid_t uid;
  int refs;                      /* connections (ar_conn_t.uidu) not yet freed */
  uint32_t live;                 /* its connections not on their way out (counted at each accept) */
  uint64_t pending_frame_bytes;  /* of srv->pending_frame_bytes, by its frames being received */
  uint64_t reply_bytes;          /* replies queued and reserved on its connections (ar_conn_t.wbytes
                                    + reply_reserved) */
  uint64_t buffer_bytes;         /* shared-memory buffers registered on its connections */
  uint32_t timeouts;             /* frames cut by request_timeout_ms, recent ones */
  uint64_t last_timeout_us, throttle_until_us;
  struct ar_uid_use *next;
} ar_uid_use_t;

struct ar_conn {
  uv_pipe_t pipe;                /* writes, shutdown, close */
  uv_poll_t rpoll;               /* reads: readable events on rfd */
  int rfd;                       /* dup of the socket's descriptor (closed with rpoll) */
  ar_server_t *srv;
  ar_peer_t peer;
  uint8_t *rbuf;                 /* bytes read, not yet parsed */
  size_t rlen, rcap;
  int refs;                      /* see the ownership note above */
  uint32_t jobs;                 /* requests taken, reply not yet written */
  uint64_t wbytes;               /* reply bytes queued for writing, not yet written */
  uint64_t last_read_us;         /* last bytes read (idle timeout) */
  uint64_t frame_start_us;       /* when the first byte of the unfinished frame arrived, 0 = none */
  uint64_t write_progress_us;    /* last write completion, or when wbytes became > 0 */
  bool reading, eof, closing, closed;   /* eof: nothing more is read (peer EOF or drain) */
  bool peer_eof;                 /* the peer half-closed its side */
  bool parsing;                  /* inside conn_parse: replies must not re-enter it */
  bool decoding;                 /* a frame of rbuf is on a decode worker */
  uint64_t rx_bytes;             /* bytes read since accept; rbuf holds the last rlen of them */
  /* The daemon-wide budget of pending frame bytes (srv->pending_frame_bytes): the bytes (at most
   * the announced length) this connection holds for the frame at the head of rbuf, and that frame's stream offset
   * (of its 4-byte header); 0 = none held. */
  uint64_t frame_reserved_bytes, frame_reserved_at;
  int pending_fds[AR_CONN_MAX_PENDING_FDS];   /* received, their frame not yet complete */
  uint64_t pending_fd_at[AR_CONN_MAX_PENDING_FDS];   /* stream offset of the byte each came with */
  uint32_t n_pending_fds;
  ar_shm_buf_t *bufs;            /* registered buffers (the list holds one reference each) */
  uint32_t n_bufs, next_buf_id;
  uint64_t buf_bytes;            /* their bytes */
  void *spare[AR_CONN_SPARES];   /* blocks kept for reuse (ar_conn_block_put), malloc'd */
  size_t spare_cap[AR_CONN_SPARES];
  uint32_t n_spares;
  ar_conn_t *prev, *next;
  ar_uid_use_t *uidu;            /* its peer uid's use of the budgets (one reference) */
  bool admin;                    /* the peer is an admin (admin_uids / admin_gids), read at accept */
  uint64_t reply_reserved;       /* bytes reserved for the replies of its invokes not yet answered */
  bool held;                     /* on srv->held_conns: waits for the budget of unwritten replies */
  ar_conn_t *held_prev, *held_next;
};

/* The server's listener accepted a connection (libuv connection callback status). Reads peer
 * credentials, applies max_connections / max_connections_per_uid / draining (refusing with one
 * EBUSY or ESTATE Response), then starts reading. */
void ar_conn_accept(ar_server_t *srv, uv_stream_t *listener, int status);

/* Queue `resp` (packed here, framed) for writing to `c`; the request it answers stays counted in
 * the connection's in-flight cap until the bytes are written. Dropped (and freed) at once if the
 * connection is closed or closing. */
void ar_conn_send(ar_conn_t *c, const Arenad__Response *resp);
/* ar_conn_send, taking ownership of `keep` (malloc'd, keep_bytes; freed when written or dropped):
 * the reply's bytes fields of at least 2 KiB that lie inside it are written from there (uv_write
 * of several buffers) instead of being copied into the packed frame. */
void ar_conn_send_owned(ar_conn_t *c, const Arenad__Response *resp, void *keep, size_t keep_bytes);

/* A request of `c` was answered (after ar_conn_send): release its reference; resumes reading
 * when the connection is below its limits. */
void ar_conn_request_done(ar_conn_t *c);

/* Reserve `bytes` of the daemon-wide budget of unwritten replies (ar_conn.h "read") for the reply
 * to request `to` (an invoke just accepted): counted in srv->reserved_reply_bytes and in
 * to->reply_reserved until it is answered (ar_conn_reply_unreserve). No-op for internal requests. */
void ar_conn_reserve_reply(ar_reply_to_t *to, uint64_t bytes);
/* The request of `c` that reserved `bytes` is being answered: give them back (its reply is counted
 * as queued from now on; the held connections are resumed by ar_conn_request_done). */
void ar_conn_reply_unreserve(ar_conn_t *c, uint64_t bytes);

/* A register_buffer request of `c` (`to` holds its reference): the descriptor that came with its
 * frame (to->fd, owned by the request: closed here on every path), check and map it (ar_shm_map) within the connection's bounds, and answer with
 * the buffer's id; or release buffer r->release. Answers exactly once through srv->ops. */
void ar_conn_register_buffer(ar_conn_t *c, const ar_reply_to_t *to, const Arenad__RegisterBufferRequest *r);

/* A malloc'd block of at least `bytes` for a request of `c` (an invoke's output block): one the
 * connection kept (the smallest large enough) or a new one; its capacity in *cap. NULL when out of
 * memory. c may be NULL (a plain malloc). */
void *ar_conn_block_get(ar_conn_t *c, size_t bytes, size_t *cap);
/* Hand a block back to `c` (from ar_conn_block_get, or a frame handed over with a request):
 * kept for reuse within AR_CONN_SPARES / AR_CONN_KEEP_BYTES (the spares that came back longest
 * ago are freed to make room for it); freed when c is NULL or closing, or when `cap` is below
 * 16 KiB or above AR_CONN_KEEP_BYTES. */
void ar_conn_block_put(ar_conn_t *c, void *block, size_t cap);
/* The worker is done with the invoke inputs of `req` that point into to->frame (the bytes path):
 * detach them and hand the frame back to to->conn (ar_conn_block_put); to->frame becomes NULL.
 * Call it while the request still holds its connection reference (before replying). */
void ar_conn_frame_release(ar_reply_to_t *to, Arenad__Request *req);

/* The buffer `id` registered on `c`, or NULL. */
ar_shm_buf_t *ar_conn_buffer(const ar_conn_t *c, uint32_t id);

/* Close after the queued writes are flushed / close now (queued replies dropped and freed). */
void ar_conn_shutdown(ar_conn_t *c);
void ar_conn_close(ar_conn_t *c);

/* True when nothing can be written to `c` any more. */
bool ar_conn_is_gone(const ar_conn_t *c);

/* Start the sweep timer (timeouts) for srv's connections; stop it (drain end). */
void ar_conn_timers_start(ar_server_t *srv);
void ar_conn_timers_stop(ar_server_t *srv);

/* Add the connection layer's per-uid and per-connection figures to the stats "daemon" object
 * (a jansson json_t *; docs/protocol.md, "GetStats"). */
struct json_t;
void ar_conn_stats_json(ar_server_t *srv, struct json_t *daemon);

/* The shared-memory buffers registered on all connections: their mappings into out[] (up to
 * `cap`, as {start, end} address pairs), their bytes in *bytes; returns how many there are (may
 * exceed cap). Loop thread (the connections' buffer lists are the loop's). */
size_t ar_conn_shm_mappings(const ar_server_t *srv, uintptr_t (*out)[2], size_t cap, uint64_t *bytes);

/* Free the per-uid entries (server stop: no connection is left). */
void ar_conn_free_uids(ar_server_t *srv);

/* Drain: stop reading every connection; idle ones are shut down, the others when their last
 * reply is written. */
void ar_conn_drain(ar_server_t *srv);

/* Drain deadline passed: close every connection now, dropping unwritten replies. */
void ar_conn_close_all(ar_server_t *srv);

#endif /* AR_CONN_H */
