/* ar_client.c - libarenaclient: blocking request/response calls over arenad's Unix socket.
 *
 * Each call packs one arenad.Request with a fresh id, writes it as one length-prefixed frame and
 * reads frames until the response with that id arrives (a synchronous client has only one
 * outstanding request, so any other id is a protocol error). Replies are read into a buffer the
 * connection keeps; a large invoke reply whose outputs start 16-byte aligned in it is decoded
 * without copying its outputs' bytes (results point into that buffer, which then goes with the
 * result), other replies own their bytes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* memfd_create, F_ADD_SEALS */
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clients/ar_client.h"
#include "common/ar_error.h"
#include "common/ar_util.h"
#include "common/ar_varint.h"
#include "proto/arenad.pb-c.h"

#define AR_CLIENT_MAX_FRAME (1u << 30)
#define AR_CLIENT_HIST 5

struct ar_client {
  int fd;
  uint32_t busy_poll_us;      /* ar_client_set_busy_poll */
  /* The model of the previous invokes and their timing (µs), to place the busy polling around the
   * time the next reply is due (busy_wait_readable): the daemon's invoke_us of the last
   * AR_CLIENT_HIST invokes, and what each round trip took beyond the daemon's invoke and queue
   * times (its smallest recent value is the socket path's own cost; a larger one had a wake-up). */
  char last_model[128];
  uint32_t inv_us[AR_CLIENT_HIST], extra_us[AR_CLIENT_HIST];
  uint32_t n_hist, next_hist;
  uint32_t wake_late_us;      /* how late a timed sleep has been ending (running estimate) */
  uint64_t last_queue_us;     /* the previous invoke's wait in the daemon's queue (its reply's queue_us) */
  uint64_t next_id;
  ar_client_buffer_t *bufs;   /* registered with ar_client_buffer_register */
  /* Replies are read into this buffer, kept for the connection's next call: the first read takes
   * the header and as much of the frame as has arrived (one system call for a small reply), and
   * bytes past the frame (none with one request at a time) stay for the next. */
  uint8_t *rbuf;
  size_t rcap, rstart, rlen;  /* rbuf[rstart, rstart + rlen) read, not yet handed out */
  size_t rhint;               /* the last reply's frame size: a new buffer starts that large */
};

/* Reply buffers up to this size stay with the connection; a larger one goes after its reply. */
#define AR_CLIENT_KEEP_RBUF (1u << 20)
#define AR_CLIENT_RBUF_MIN 4096u
/* Requests whose copied part (all but the large bytes fields, which are sent from the caller's
 * memory) fits are framed on the stack. */
#define AR_CLIENT_STACK_FRAME 2048u

AR_EXPORT const char *ar_client_strerror(int code) { return ar_strerror(code); }

AR_EXPORT size_t ar_client_dtype_size(int32_t dtype) {
  switch (dtype) {
    case 0: case 2: return 4;            /* FLOAT32, INT32 */
    case 1: case 7: return 2;            /* FLOAT16, INT16 */
    case 3: case 6: case 9: return 1;    /* UINT8, BOOL, INT8 */
    case 4: case 8: case 10: return 8;   /* INT64, COMPLEX64, FLOAT64 */
    default: return 0;
  }
}

AR_EXPORT int ar_client_connect(const char *socket_path, ar_client_t **out, char *msg, size_t msg_bytes) {
  *out = NULL;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (socket_path == NULL || strlen(socket_path) >= sizeof(sa.sun_path))
    return ar_errf(msg, msg_bytes, AR_EINVAL, "socket path too long (max %zu bytes)", sizeof(sa.sun_path) - 1);
  memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ar_errf(msg, msg_bytes, AR_ECONN, "socket: %s", strerror(errno));
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
    int e = errno;
    close(fd);
    ar_errf(msg, msg_bytes, AR_ECONN, "connect %s: %s", socket_path, strerror(e));
    errno = e;   /* for the caller's hint: ENOENT, ECONNREFUSED (nobody listens), EACCES */
    return AR_ECONN;
  }
  ar_client_t *c = calloc(1, sizeof(*c));
  if (c == NULL) {
    close(fd);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory");
  }
  c->fd = fd;
  c->next_id = 1;
  c->busy_poll_us = AR_CLIENT_BUSY_POLL_DEFAULT;
  const char *bp = getenv("ARENAD_BUSY_POLL_US");
  if (bp && *bp) {
    char *end;
    unsigned long v = strtoul(bp, &end, 10);
    if (*end == '\0') ar_client_set_busy_poll(c, v > AR_CLIENT_BUSY_POLL_MAX ? AR_CLIENT_BUSY_POLL_MAX : (uint32_t)v);
  }
  *out = c;
  return 0;
}

AR_EXPORT void ar_client_set_busy_poll(ar_client_t *c, uint32_t us) {
  c->busy_poll_us = us > AR_CLIENT_BUSY_POLL_MAX ? AR_CLIENT_BUSY_POLL_MAX : us;
}

AR_EXPORT uint32_t ar_client_busy_poll(const ar_client_t *c) { return c->busy_poll_us; }

static uint64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* A timed sleep ends late: by the thread's timer slack (50 µs by default, lifted for the sleep
 * below) and, on a virtual machine whose idle vCPU halted, its wake-up (50-130 us measured here).
 * The first sleeps assume this much; then the client's running estimate of what it saw. */
#define AR_CLIENT_TIMER_SLACK_US 60

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* When the reply to an invoke of the previous invokes' model is due, µs after its send: the median
 * of their invoke times plus the smallest of their socket costs (0: no history). */
static uint64_t expected_rt_us(const ar_client_t *c) {
  if (c->n_hist == 0) return 0;
  uint32_t v[AR_CLIENT_HIST], extra = UINT32_MAX;
  memcpy(v, c->inv_us, c->n_hist * sizeof(uint32_t));
  qsort(v, c->n_hist, sizeof(uint32_t), cmp_u32);
  for (uint32_t i = 0; i < c->n_hist; i++)
    if (c->extra_us[i] < extra) extra = c->extra_us[i];
  return (uint64_t)v[c->n_hist / 2] + extra;
}

/* Record an invoke of `model` whose reply came `rt_us` after its send and took the daemon
 * `invoke_us` (and last_queue_us in its queue). A new model starts a new history. */
static void note_invoke(ar_client_t *c, const char *model, bool same_model, uint64_t rt_us, uint64_t invoke_us) {
  if (!same_model) {
    snprintf(c->last_model, sizeof(c->last_model), "%s", model);
    c->n_hist = c->next_hist = 0;
  }
  uint64_t other = invoke_us + c->last_queue_us, extra = rt_us > other ? rt_us - other : 0;
  c->inv_us[c->next_hist] = invoke_us > UINT32_MAX ? UINT32_MAX : (uint32_t)invoke_us;
  c->extra_us[c->next_hist] = extra > UINT32_MAX ? UINT32_MAX : (uint32_t)extra;
  c->next_hist = (c->next_hist + 1) % AR_CLIENT_HIST;
  if (c->n_hist < AR_CLIENT_HIST) c->n_hist++;
}

/* Before a blocking read of a reply: poll the socket without sleeping for up to busy_poll_us
 * (yielding the CPU each pass), so that a reply arriving meanwhile costs no wake-up of a sleeping
 * thread. When the reply is expected later than that (`expect_us` after `sent_us`, from the
 * previous invokes of the same model), first sleep (ppoll: the reply still ends it at once) so
 * that the polling starts half of busy_poll_us before the reply is due: it brackets the expected
 * reply instead of taking a CPU for the whole invoke, which on a small machine would slow the
 * invoke's own threads. The sleep runs without the thread's timer slack and ends early by the
 * estimate of how late such sleeps end (the vCPU's wake-up). Returns 1 when the polling saw the socket
 * readable (the reply, a hang-up or an error the read reports), 2 when it became readable during
 * the sleep, 0 when neither (the read that follows blocks as usual). */
static int busy_wait_readable(ar_client_t *c, uint64_t sent_us, uint64_t expect_us) {
  if (c->busy_poll_us == 0) return 0;
  /* The previous invoke of the model waited in the daemon's queue behind other clients' work for
   * longer than the polling lasts: its reply time says little about this one's, and the cores are
   * busy; polling would mostly spin in vain and take CPU from the invokes, so block at once. */
  if (expect_us > 0 && c->last_queue_us > c->busy_poll_us) return 0;
  struct pollfd p = {.fd = c->fd, .events = POLLIN};
  uint64_t before = c->busy_poll_us / 2, late = c->n_hist ? c->wake_late_us : AR_CLIENT_TIMER_SLACK_US;
  if (expect_us > before + late) {
    uint64_t now = mono_us(), wake = sent_us + expect_us - before - late;
    if (wake > now) {
      uint64_t d = wake - now;
      struct timespec ts = {.tv_sec = (time_t)(d / 1000000u), .tv_nsec = (long)(d % 1000000u) * 1000};
      /* Without the thread's timer slack (50 us by default, a lateness that varies) for this one
       * sleep; the caller's slack is restored after. */
      int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
      if (slack > 1) prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
      int pr = ppoll(&p, 1, &ts, NULL);
      if (slack > 1) prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
      if (pr != 0) return 2;   /* readable (or an error the read reports) */
      /* Timed out: how late (a running average, at most the polling time). */
      uint64_t woke = mono_us(), seen = woke > wake ? woke - wake : 0;
      if (seen > c->busy_poll_us) seen = c->busy_poll_us;
      c->wake_late_us = c->n_hist ? (uint32_t)((3 * (uint64_t)c->wake_late_us + seen) / 4) : (uint32_t)seen;
    }
  }
  uint64_t end = mono_us() + c->busy_poll_us;
  do {
    if (poll(&p, 1, 0) != 0) return 1;   /* readable, hung up, or an error the read reports */
    sched_yield();
  } while (mono_us() < end);
  return 0;
}

AR_EXPORT void ar_client_close(ar_client_t *c) {
  if (c == NULL) return;
  close(c->fd);   /* the daemon releases the connection's buffers */
  free(c->rbuf);
  ar_client_buffer_t *next;
  for (ar_client_buffer_t *b = c->bufs; b; b = next) {
    next = b->next;
    munmap(b->data, (size_t)b->bytes);
    free(b);
  }
  free(c);
}

/* Packing a request in pieces: bytes fields of at least 4 KiB are referenced where they are
 * (the caller's tensors, valid during the call), the rest copied back to back. */
#define AR_CLIENT_MAX_REFS 16

typedef struct {
  ProtobufCBuffer base;
  uint8_t *copy;
  size_t copy_len;
  int n_refs;
  size_t cut[AR_CLIENT_MAX_REFS];   /* copy_len where each referenced piece goes */
  const uint8_t *ref[AR_CLIENT_MAX_REFS];
  size_t ref_len[AR_CLIENT_MAX_REFS];
} piece_buf_t;

static void piece_append(ProtobufCBuffer *b, size_t len, const uint8_t *data) {
  piece_buf_t *p = (piece_buf_t *)b;
  if (len >= 4096 && p->n_refs < AR_CLIENT_MAX_REFS) {
    p->cut[p->n_refs] = p->copy_len;
    p->ref[p->n_refs] = data;
    p->ref_len[p->n_refs] = len;
    p->n_refs++;
    return;
  }
  if (p->copy) ar_copy_bytes(p->copy + p->copy_len, data, len);   /* NULL: the sizing pass */
  p->copy_len += len;
}

/* sendmsg the pieces until all are written; descriptor `pass` (when >= 0) goes with the first
 * bytes (SCM_RIGHTS). The iovecs are consumed. */
static int send_iov(int fd, struct iovec *iov, int n, int pass) {
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int))];
  } ctl;
  while (n > 0 && iov->iov_len == 0) iov++, n--;
  while (n > 0) {
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    if (pass >= 0) {
      memset(&ctl, 0, sizeof(ctl));
      mh.msg_control = ctl.buf;
      mh.msg_controllen = sizeof(ctl.buf);
      struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(cm), &pass, sizeof(int));
    }
    ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    pass = -1;   /* the descriptor went with the first bytes */
    while (n > 0 && (size_t)w >= iov->iov_len) {
      w -= (ssize_t)iov->iov_len;
      iov++, n--;
    }
    if (n > 0) {
      iov->iov_base = (uint8_t *)iov->iov_base + w;
      iov->iov_len -= (size_t)w;
    }
  }
  return 0;
}

/* Read at least `need` bytes (more when they have arrived, up to `room`) into p; returns the count
 * read, or -1 (errno set; ECONNRESET at end of stream). */
static ssize_t read_some(int fd, uint8_t *p, size_t need, size_t room) {
  size_t got = 0;
  while (got < need) {
    ssize_t r = read(fd, p + got, room - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) {
      errno = ECONNRESET;
      return -1;
    }
    got += (size_t)r;
  }
  return (ssize_t)got;
}

/* Make room in c->rbuf for `bytes` from rstart (moving what is buffered to the front). */
static int rbuf_reserve(ar_client_t *c, size_t bytes) {
  if (c->rstart > 0) {
    memmove(c->rbuf, c->rbuf + c->rstart, c->rlen);
    c->rstart = 0;
  }
  if (bytes <= c->rcap) return 0;
  size_t cap = bytes < AR_CLIENT_RBUF_MIN ? AR_CLIENT_RBUF_MIN : bytes;
  uint8_t *nb = realloc(c->rbuf, cap);
  if (nb == NULL) return -1;
  c->rbuf = nb;
  c->rcap = cap;
  return 0;
}

/* The next frame's body: *body (len bytes) points into c->rbuf, valid until the next call on the
 * connection. Reads the header and whatever else has arrived in one go. Returns 0, or -1 with
 * errno (ENOMEM, or the read's), or -2 when the frame is longer than the client accepts (*len set). */
static int read_frame(ar_client_t *c, const uint8_t **body, uint32_t *len) {
  if (c->rlen < 4) {
    if (rbuf_reserve(c, c->rhint > AR_CLIENT_RBUF_MIN ? c->rhint : AR_CLIENT_RBUF_MIN) != 0) return -1;
    ssize_t r = read_some(c->fd, c->rbuf + c->rlen, 4 - c->rlen, c->rcap - c->rlen);
    if (r < 0) return -1;
    c->rlen += (size_t)r;
  }
  const uint8_t *h = c->rbuf + c->rstart;
  *len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
  if (*len > AR_CLIENT_MAX_FRAME) return -2;
  size_t want = 4 + (size_t)*len;
  if (c->rlen < want) {
    if (rbuf_reserve(c, want) != 0) {
      errno = ENOMEM;
      return -1;
    }
    ssize_t r = read_some(c->fd, c->rbuf + c->rlen, want - c->rlen, c->rcap - c->rlen);
    if (r < 0) return -1;
    c->rlen += (size_t)r;
  }
  *body = c->rbuf + c->rstart + 4;
  c->rhint = want <= AR_CLIENT_KEEP_RBUF ? want : 0;
  c->rstart += want;
  c->rlen -= want;
  return 0;
}

/* After a frame was handed out: a large buffer is not kept once nothing is buffered. */
static void rbuf_trim(ar_client_t *c) {
  if (c->rlen == 0) {
    c->rstart = 0;
    if (c->rcap > AR_CLIENT_KEEP_RBUF) {
      free(c->rbuf);
      c->rbuf = NULL;
      c->rcap = 0;
    }
  }
}

/* Invoke replies of at least this many bytes are decoded without copying their output bytes,
 * when every output's bytes start at a multiple of AR_CLIENT_BORROW_ALIGN in the read buffer (a
 * caller reads them as float or int64 arrays; an output at an odd place in the frame is copied
 * into memory of malloc's alignment, as smaller replies are). */
#define AR_CLIENT_BORROW_BYTES (16u * 1024)
#define AR_CLIENT_BORROW_ALIGN 16u

/* An invoke result's private part: the decoded reply and, when its outputs' bytes were left in the
 * frame they arrived in (borrowed), that frame. */
typedef struct {
  Arenad__Response *resp;
  uint8_t *frame;
} reply_t;

/* The output bytes a stripped reply left in its frame: one entry per InvokeResponse.outputs
 * element, in order. */
typedef struct {
  const uint8_t *data[AR_CLIENT_MAX_IO];
  size_t len[AR_CLIENT_MAX_IO];
  size_t n;
  bool bad;
} borrow_t;

/* One message of a Response at `level` (0 Response, 1 InvokeResponse = Response field 7, 2 Tensor
 * = InvokeResponse field 1): the message without the Tensors' field 4 (data), written at out (NULL:
 * only sized). Returns its size; b->bad on anything unexpected. Records the data on the writing
 * pass. */
static size_t strip_reply(borrow_t *b, int level, const uint8_t *p, const uint8_t *end, uint8_t *out) {
  size_t n = 0;
  if (level == 2 && out) {
    if (b->n == AR_CLIENT_MAX_IO) {
      b->bad = true;
      return 0;
    }
    b->data[b->n] = NULL;
    b->len[b->n] = 0;
    b->n++;
  }
  while (p < end && !b->bad) {
    const uint8_t *start = p;
    uint64_t tag, v;
    if (!ar_varint_read(&p, end, &tag)) break;
    uint32_t field = (uint32_t)(tag >> 3), wt = (uint32_t)(tag & 7);
    if (wt == 0) {
      if (!ar_varint_read(&p, end, &v)) break;
    } else if (wt == 1 || wt == 5) {
      size_t k = wt == 1 ? 8 : 4;
      if ((size_t)(end - p) < k) break;
      p += k;
    } else if (wt == 2) {
      if (!ar_varint_read(&p, end, &v) || v > (uint64_t)(end - p)) break;
      const uint8_t *q = p;
      p += v;
      if ((level == 0 && field == 7) || (level == 1 && field == 1)) {
        size_t inner = strip_reply(b, level + 1, q, p, NULL);
        size_t head = ar_varint_len(tag) + ar_varint_len(inner);
        if (out) {
          uint8_t *o = ar_varint_put(ar_varint_put(out + n, tag), inner);
          strip_reply(b, level + 1, q, p, o);
        }
        n += head + inner;
        continue;
      }
      if (level == 2 && field == 4) {
        if (out) {
          b->data[b->n - 1] = q;
          b->len[b->n - 1] = (size_t)v;
        }
        continue;
      }
    } else {
      break;   /* groups: not in arenad.proto */
    }
    if (out) memcpy(out + n, start, (size_t)(p - start));
    n += (size_t)(p - start);
    continue;
  }
  if (p != end) b->bad = true;
  return n;
}

/* Decode an invoke reply without copying its outputs' bytes: they stay in `body` (which must then
 * outlive the result). NULL when the reply does not take this path, among others when an output's
 * bytes are not AR_CLIENT_BORROW_ALIGN-aligned in `body` (the caller decodes it as usual). */
static Arenad__Response *unpack_borrowing(const uint8_t *body, size_t len) {
  borrow_t b = {.n = 0};
  size_t n = strip_reply(&b, 0, body, body + len, NULL);
  if (b.bad || n > len) return NULL;
  uint8_t small[4096];
  uint8_t *buf = n <= sizeof(small) ? small : malloc(n ? n : 1);
  if (buf == NULL) return NULL;
  b.n = 0;
  strip_reply(&b, 0, body, body + len, buf);
  for (size_t j = 0; !b.bad && j < b.n; j++)
    if ((uintptr_t)b.data[j] % AR_CLIENT_BORROW_ALIGN != 0) b.bad = true;
  Arenad__Response *resp = b.bad ? NULL : arenad__response__unpack(NULL, n, buf);
  if (buf != small) free(buf);
  if (resp == NULL) return NULL;
  bool ok = resp->body_case == ARENAD__RESPONSE__BODY_INVOKE && resp->invoke && resp->invoke->n_outputs == b.n;
  for (size_t j = 0; ok && j < b.n; j++) ok = resp->invoke->outputs[j]->data.len == 0;
  if (!ok) {
    arenad__response__free_unpacked(resp, NULL);
    return NULL;
  }
  for (size_t j = 0; j < b.n; j++) {
    resp->invoke->outputs[j]->data.data = (uint8_t *)b.data[j];
    resp->invoke->outputs[j]->data.len = b.len[j];
  }
  return resp;
}

/* Free a reply whose outputs may be borrowed from `frame`, and the frame. */
static void reply_free(Arenad__Response *resp, uint8_t *frame) {
  if (resp && frame && resp->body_case == ARENAD__RESPONSE__BODY_INVOKE && resp->invoke)
    for (size_t j = 0; j < resp->invoke->n_outputs; j++) {
      resp->invoke->outputs[j]->data.data = NULL;
      resp->invoke->outputs[j]->data.len = 0;
    }
  if (resp) arenad__response__free_unpacked(resp, NULL);
  free(frame);
}

/* Send `req` (its id is set here) and wait for the matching response. On success *out is the
 * decoded response with an OK status; on a daemon error its status is turned into the return
 * code and message. */
static int call_fd(ar_client_t *c, Arenad__Request *req, int pass, Arenad__Response **out, uint8_t **frame_out,
                   char *msg, size_t msg_bytes) {
  *out = NULL;
  if (frame_out) *frame_out = NULL;
  req->id = c->next_id++;
  size_t n = arenad__request__get_packed_size(req);
  if (n > UINT32_MAX) return ar_errf(msg, msg_bytes, AR_EINVAL, "request of %zu bytes is too large", n);
  /* Large bytes fields (input tensors) are sent from the caller's memory, not copied into the
   * frame: one sendmsg of several pieces. The copied rest is framed on the stack when it fits (a
   * sizing pass first when the request is large). */
  piece_buf_t pb = {.base = {.append = piece_append}};
  size_t copied = n;
  if (n > AR_CLIENT_STACK_FRAME - 4) {
    arenad__request__pack_to_buffer(req, &pb.base);
    copied = pb.copy_len;
    pb.copy_len = 0;
    pb.n_refs = 0;
  }
  uint8_t stack_frame[AR_CLIENT_STACK_FRAME];
  uint8_t *buf = 4 + copied <= sizeof(stack_frame) ? stack_frame : malloc(4 + copied);
  if (buf == NULL) return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory for a %zu-byte request", n);
  buf[0] = (uint8_t)n, buf[1] = (uint8_t)(n >> 8), buf[2] = (uint8_t)(n >> 16), buf[3] = (uint8_t)(n >> 24);
  pb.copy = buf + 4;
  arenad__request__pack_to_buffer(req, &pb.base);
  struct iovec iov[2 * AR_CLIENT_MAX_REFS + 1];
  int niov = 0;
  size_t from = 0;
  for (int i = 0; i < pb.n_refs; i++) {
    size_t upto = 4 + pb.cut[i];
    if (upto > from) iov[niov++] = (struct iovec){.iov_base = buf + from, .iov_len = upto - from};
    iov[niov++] = (struct iovec){.iov_base = (void *)pb.ref[i], .iov_len = pb.ref_len[i]};
    from = upto;
  }
  if (4 + pb.copy_len > from) iov[niov++] = (struct iovec){.iov_base = buf + from, .iov_len = 4 + pb.copy_len - from};
  uint64_t sent_us = c->busy_poll_us ? mono_us() : 0, expect_us = 0;
  const char *inv_model =
      req->body_case == ARENAD__REQUEST__BODY_INVOKE && req->invoke->model ? req->invoke->model : NULL;
  bool same_model = inv_model && strcmp(inv_model, c->last_model) == 0;
  if (same_model) expect_us = expected_rt_us(c);
  int rc = send_iov(c->fd, iov, niov, pass);
  if (buf != stack_frame) free(buf);
  if (rc != 0) return ar_errf(msg, msg_bytes, AR_ECONN, "send: %s", strerror(errno));
  /* When the reply came: as soon as the polling saw it, else after the read (a wake-up later). */
  int seen = busy_wait_readable(c, sent_us, expect_us);
  uint64_t reply_us = seen ? mono_us() : 0;
  const uint8_t *body = NULL;
  uint32_t len = 0;
  int r = read_frame(c, &body, &len);
  if (reply_us == 0 && c->busy_poll_us) reply_us = mono_us();
  if (r == -2)
    return ar_errf(msg, msg_bytes, AR_EPROTO, "response frame of %u bytes is larger than the client accepts", len);
  if (r != 0)
    return ar_errf(msg, msg_bytes, errno == ENOMEM ? AR_ENOMEM : AR_ECONN, "receive: %s", strerror(errno));
  /* A large invoke reply, alone in the read buffer: its outputs stay where they were read, and the
   * buffer goes with the result (the connection reads the next reply into a new one). */
  Arenad__Response *resp = NULL;
  uint8_t *frame = NULL;
  if (frame_out && len >= AR_CLIENT_BORROW_BYTES && c->rlen == 0 && (resp = unpack_borrowing(body, len)) != NULL) {
    frame = c->rbuf;
    c->rbuf = NULL;
    c->rcap = 0;
  }
  if (resp == NULL) resp = arenad__response__unpack(NULL, len, body);
  rbuf_trim(c);
  if (resp == NULL) return ar_errf(msg, msg_bytes, AR_EPROTO, "response of %u bytes does not decode", len);
  int code = resp->status ? (int)resp->status->code : 0;
  if (code != 0) {
    rc = ar_errf(msg, msg_bytes, -code, "%s", resp->status->message);
    reply_free(resp, frame);
    return rc;
  }
  if (inv_model && resp->body_case == ARENAD__RESPONSE__BODY_INVOKE && resp->invoke) {
    c->last_queue_us = resp->invoke->queue_us;
    if (c->busy_poll_us) note_invoke(c, inv_model, same_model, reply_us - sent_us, resp->invoke->invoke_us);
  }
  if (resp->id != req->id) {
    rc = ar_errf(msg, msg_bytes, AR_EPROTO, "response id %llu, expected %llu", (unsigned long long)resp->id,
                 (unsigned long long)req->id);
    reply_free(resp, frame);
    return rc;
  }
  *out = resp;
  if (frame_out) *frame_out = frame;
  if (msg && msg_bytes) msg[0] = '\0';
  return 0;
}

static int call(ar_client_t *c, Arenad__Request *req, Arenad__Response **out, char *msg, size_t msg_bytes) {
  return call_fd(c, req, -1, out, NULL, msg, msg_bytes);
}

AR_EXPORT int ar_client_ping(ar_client_t *c, char *version, size_t version_bytes, char *msg, size_t msg_bytes) {
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__PingRequest body = ARENAD__PING_REQUEST__INIT;
  req.body_case = ARENAD__REQUEST__BODY_PING;
  req.ping = &body;
  Arenad__Response *resp;
  int rc = call(c, &req, &resp, msg, msg_bytes);
  if (rc) return rc;
  if (resp->body_case != ARENAD__RESPONSE__BODY_PING) rc = ar_errf(msg, msg_bytes, AR_EPROTO, "reply is not a ping");
  else if (version && version_bytes) snprintf(version, version_bytes, "%s", resp->ping->version);
  arenad__response__free_unpacked(resp, NULL);
  return rc;
}

/* `with_arrays`: point quant.scales/zero_points into the decoded message (results only). */
static void copy_tensor(ar_client_tensor_t *dst, const Arenad__Tensor *t, bool with_arrays) {
  memset(dst, 0, sizeof(*dst));
  snprintf(dst->name, sizeof(dst->name), "%s", t->name ? t->name : "");
  dst->dtype = (int32_t)t->dtype;
  dst->rank = (int32_t)(t->n_shape < AR_CLIENT_MAX_RANK ? t->n_shape : AR_CLIENT_MAX_RANK);
  for (int32_t d = 0; d < dst->rank; d++) dst->dims[d] = t->shape[d];
  dst->data = t->data.data;
  dst->bytes = t->data.len;
  const Arenad__Quantization *q = t->quantization;
  /* A reply whose arrays disagree in length is taken as unquantized rather than half-read. */
  if (q && q->n_scale > 0 && q->n_scale <= INT32_MAX && q->n_zero_point == q->n_scale) {
    dst->quant.n = (int32_t)q->n_scale;
    dst->quant.quantized_dimension = q->quantized_dimension;
    dst->quant.scale = q->scale[0];
    dst->quant.zero_point = q->zero_point[0];
    if (with_arrays) {
      dst->quant.scales = q->scale;
      dst->quant.zero_points = q->zero_point;
    }
  }
}

AR_EXPORT float ar_client_tensor_value(const ar_client_tensor_t *t, uint64_t i) {
  if (t == NULL || t->data == NULL) return NAN;
  size_t es = ar_client_dtype_size(t->dtype);
  if (es == 0 || i >= t->bytes / es) return NAN;
  const uint8_t *p = (const uint8_t *)t->data + i * es;
  int64_t q;
  switch (t->dtype) {
    case AR_CLIENT_FLOAT32: { float f; memcpy(&f, p, 4); return f; }
    case AR_CLIENT_UINT8: q = *p; break;
    case AR_CLIENT_INT8: q = (int8_t)*p; break;
    case AR_CLIENT_BOOL: return *p ? 1.0f : 0.0f;
    case AR_CLIENT_INT32: { int32_t v; memcpy(&v, p, 4); q = v; break; }
    case AR_CLIENT_INT64: { int64_t v; memcpy(&v, p, 8); q = v; break; }
    default: return NAN;
  }
  const ar_client_quant_t *qt = &t->quant;
  if (qt->n <= 0) return (float)q;
  float scale = qt->scale;
  int64_t zp = qt->zero_point;
  if (qt->n > 1 && qt->scales && qt->zero_points && qt->quantized_dimension >= 0 &&
      qt->quantized_dimension < t->rank) {
    /* Index along the quantized dimension: strip the dims after it, then take the remainder. */
    uint64_t inner = 1;
    for (int32_t d = qt->quantized_dimension + 1; d < t->rank; d++) inner *= (uint64_t)(t->dims[d] > 0 ? t->dims[d] : 1);
    uint64_t k = (i / inner) % (uint64_t)(t->dims[qt->quantized_dimension] > 0 ? t->dims[qt->quantized_dimension] : 1);
    if (k < (uint64_t)qt->n) {
      scale = qt->scales[k];
      zp = qt->zero_points[k];
    }
  }
  return ((float)q - (float)zp) * scale;
}

static void copy_info(ar_client_model_t *dst, const Arenad__ModelInfo *m) {
  memset(dst, 0, sizeof(*dst));
  snprintf(dst->name, sizeof(dst->name), "%s", m->name);
  snprintf(dst->path, sizeof(dst->path), "%s", m->path);
  snprintf(dst->sha256, sizeof(dst->sha256), "%s", m->sha256);
  snprintf(dst->group, sizeof(dst->group), "%s", m->group);
  snprintf(dst->strategy, sizeof(dst->strategy), "%s", m->strategy);
  dst->arena_bytes = m->arena_bytes;
  dst->persistent_bytes = m->persistent_bytes;
  dst->weights_bytes = m->weights_bytes;
  dst->activation_offset = m->activation_offset;
  dst->activation_bytes = m->activation_bytes;
  dst->persistent_offset = m->persistent_offset;
  dst->invokes = m->invokes;
  dst->n_inputs = (int32_t)m->n_inputs;
  dst->n_outputs = (int32_t)m->n_outputs;
  for (size_t i = 0; i < m->n_inputs && i < AR_CLIENT_MAX_IO; i++) {
    copy_tensor(&dst->inputs[i], m->inputs[i], false);
    dst->inputs[i].data = NULL;
  }
  for (size_t i = 0; i < m->n_outputs && i < AR_CLIENT_MAX_IO; i++) {
    copy_tensor(&dst->outputs[i], m->outputs[i], false);
    dst->outputs[i].data = NULL;
  }
}

AR_EXPORT int ar_client_load(ar_client_t *c, const char *name, const char *path, const char *group,
                             const char *strategy, ar_client_model_t *info, char *msg, size_t msg_bytes) {
  return ar_client_load_weights(c, name, path, group, strategy, NULL, info, msg, msg_bytes);
}

AR_EXPORT int ar_client_load_weights(ar_client_t *c, const char *name, const char *path, const char *group,
                                     const char *strategy, const char *weights, ar_client_model_t *info,
                                     char *msg, size_t msg_bytes) {
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__LoadModelRequest body = ARENAD__LOAD_MODEL_REQUEST__INIT;
  body.name = (char *)(name ? name : "");
  body.path = (char *)(path ? path : "");
  body.group = (char *)(group ? group : "");
  body.strategy = (char *)(strategy ? strategy : "");
  body.weights = (char *)(weights ? weights : "");
  req.body_case = ARENAD__REQUEST__BODY_LOAD_MODEL;
  req.load_model = &body;
  Arenad__Response *resp;
  int rc = call(c, &req, &resp, msg, msg_bytes);
  if (rc) return rc;
  if (resp->body_case != ARENAD__RESPONSE__BODY_LOAD_MODEL || resp->load_model->model == NULL)
    rc = ar_errf(msg, msg_bytes, AR_EPROTO, "reply is not a load_model");
  else if (info)
    copy_info(info, resp->load_model->model);
  arenad__response__free_unpacked(resp, NULL);
  return rc;
}

AR_EXPORT int ar_client_unload(ar_client_t *c, const char *name, char *msg, size_t msg_bytes) {
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__UnloadModelRequest body = ARENAD__UNLOAD_MODEL_REQUEST__INIT;
  body.name = (char *)(name ? name : "");
  req.body_case = ARENAD__REQUEST__BODY_UNLOAD_MODEL;
  req.unload_model = &body;
  Arenad__Response *resp;
  int rc = call(c, &req, &resp, msg, msg_bytes);
  if (rc) return rc;
  arenad__response__free_unpacked(resp, NULL);
  return 0;
}

AR_EXPORT int ar_client_compact(ar_client_t *c, ar_client_compact_t *out, char *msg, size_t msg_bytes) {
  if (out) memset(out, 0, sizeof(*out));
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__CompactRequest body = ARENAD__COMPACT_REQUEST__INIT;
  req.body_case = ARENAD__REQUEST__BODY_COMPACT;
  req.compact = &body;
  Arenad__Response *resp;
  int rc = call(c, &req, &resp, msg, msg_bytes);
  if (rc) return rc;
  if (resp->body_case != ARENAD__RESPONSE__BODY_COMPACT) {
    arenad__response__free_unpacked(resp, NULL);
    return ar_errf(msg, msg_bytes, AR_EPROTO, "reply is not a compact");
  }
  const Arenad__CompactResponse *r = resp->compact;
  if (out) {
    out->regions_moved = r->regions_moved;
    out->bytes_moved = r->bytes_moved;
    out->models_replaced = r->models_replaced;
    out->free_bytes_before = r->free_bytes_before;
    out->largest_free_bytes_before = r->largest_free_bytes_before;
    out->free_blocks_before = r->free_blocks_before;
    out->free_bytes_after = r->free_bytes_after;
    out->largest_free_bytes_after = r->largest_free_bytes_after;
    out->free_blocks_after = r->free_blocks_after;
    out->duration_us = r->duration_us;
    out->released_bytes = r->released_bytes;
  }
  arenad__response__free_unpacked(resp, NULL);
  return 0;
}

AR_EXPORT int ar_client_reload(ar_client_t *c, ar_client_reloaded_t **changed, size_t *n_changed,
                               uint32_t *unchanged, char *msg, size_t msg_bytes) {
  if (changed) *changed = NULL;
  if (n_changed) *n_changed = 0;
  if (unchanged) *unchanged = 0;
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__ReloadRequest body = ARENAD__RELOAD_REQUEST__INIT;
  req.body_case = ARENAD__REQUEST__BODY_RELOAD;
  req.reload = &body;
  Arenad__Response *resp;
  int rc = call(c, &req, &resp, msg, msg_bytes);
  if (rc) return rc;
  if (resp->body_case != ARENAD__RESPONSE__BODY_RELOAD) {
    arenad__response__free_unpacked(resp, NULL);
    return ar_errf(msg, msg_bytes, AR_EPROTO, "reply is not a reload");
  }
  const Arenad__ReloadResponse *r = resp->reload;
  if (unchanged) *unchanged = r->unchanged;
  if (changed && r->n_changed > 0) {
    ar_client_reloaded_t *v = calloc(r->n_changed, sizeof(*v));
    if (v == NULL) {
      arenad__response__free_unpacked(resp, NULL);
      return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory for the reload reply");
    }
    for (size_t i = 0; i < r->n_changed; i++) {
      snprintf(v[i].name, sizeof(v[i].name), "%s", r->changed[i]->name);
      snprintf(v[i].old_sha256, sizeof(v[i].old_sha256), "%s", r->changed[i]->old_sha256);
      snprintf(v[i].new_sha256, sizeof(v[i].new_sha256), "%s", r->changed[i]->new_sha256);
    }
    *changed = v;
    if (n_changed) *n_changed = r->n_changed;
  }
  arenad__response__free_unpacked(resp, NULL);
  return 0;
}

AR_EXPORT int ar_client_list(ar_client_t *c, ar_client_model_t **models, size_t *n, char *msg, size_t msg_bytes) {
  *models = NULL;
  *n = 0;
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__ListModelsRequest body = ARENAD__LIST_MODELS_REQUEST__INIT;
  req.body_case = ARENAD__REQUEST__BODY_LIST_MODELS;
  req.list_models = &body;
  Arenad__Response *resp;
  int rc = call(c, &req, &resp, msg, msg_bytes);
  if (rc) return rc;
  if (resp->body_case != ARENAD__RESPONSE__BODY_LIST_MODELS) {
    arenad__response__free_unpacked(resp, NULL);
    return ar_errf(msg, msg_bytes, AR_EPROTO, "reply is not a list_models");
  }
  size_t k = resp->list_models->n_models;
  ar_client_model_t *arr = calloc(k ? k : 1, sizeof(*arr));
  if (arr == NULL) {
    arenad__response__free_unpacked(resp, NULL);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory for %zu models", k);
  }
  for (size_t i = 0; i < k; i++) copy_info(&arr[i], resp->list_models->models[i]);
  arenad__response__free_unpacked(resp, NULL);
  *models = arr;
  *n = k;
  return 0;
}

/* The registered buffer holding [p, p + bytes), or NULL. */
static const ar_client_buffer_t *buffer_of(const ar_client_t *c, const void *p, uint64_t bytes) {
  for (const ar_client_buffer_t *b = c->bufs; b; b = b->next) {
    uintptr_t lo = (uintptr_t)b->data, at = (uintptr_t)p;
    if (at >= lo && at - lo <= b->bytes && bytes <= b->bytes - (at - lo)) return b;
  }
  return NULL;
}

/* ar_client_invoke_ranges with a session (NULL: none). */
static int invoke_session_ranges(ar_client_t *c, const char *model, const ar_client_session_t *session,
                                 const ar_client_tensor_t *inputs, const ar_client_range_t *input_ranges,
                                 size_t n_inputs, const ar_client_range_t *output_ranges, size_t n_outputs,
                                 ar_client_result_t *res, char *msg, size_t msg_bytes) {
  memset(res, 0, sizeof(*res));
  if (n_outputs > 0 && output_ranges == NULL) return ar_errf(msg, msg_bytes, AR_EINVAL, "output_ranges is NULL");
  /* The request's pieces: on the stack for up to AR_CLIENT_MAX_IO inputs and outputs. */
  Arenad__Tensor ts_s[AR_CLIENT_MAX_IO], *ptrs_s[AR_CLIENT_MAX_IO];
  int64_t shapes_s[AR_CLIENT_MAX_IO * AR_CLIENT_MAX_RANK];
  Arenad__BufferRange rs_s[2 * AR_CLIENT_MAX_IO], *optrs_s[AR_CLIENT_MAX_IO];
  bool heap = n_inputs > AR_CLIENT_MAX_IO || n_outputs > AR_CLIENT_MAX_IO;
  Arenad__Tensor *ts = heap ? calloc(n_inputs + 1, sizeof(*ts)) : ts_s;
  Arenad__Tensor **ptrs = heap ? calloc(n_inputs + 1, sizeof(*ptrs)) : ptrs_s;
  int64_t *shapes = heap ? calloc((n_inputs + 1) * AR_CLIENT_MAX_RANK, sizeof(int64_t)) : shapes_s;
  Arenad__BufferRange *rs = heap ? calloc(n_inputs + n_outputs + 1, sizeof(*rs)) : rs_s;
  Arenad__BufferRange **optrs = heap ? calloc(n_outputs + 1, sizeof(*optrs)) : optrs_s;
  if (ts == NULL || ptrs == NULL || shapes == NULL || rs == NULL || optrs == NULL) {
    if (heap) free(ts), free(ptrs), free(shapes), free(rs), free(optrs);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory");
  }
  for (size_t i = 0; i < n_inputs; i++) {
    arenad__tensor__init(&ts[i]);
    ts[i].name = (char *)inputs[i].name;
    ts[i].dtype = (Arenad__DType)inputs[i].dtype;
    int32_t rank = inputs[i].rank < 0 ? 0 : inputs[i].rank > AR_CLIENT_MAX_RANK ? AR_CLIENT_MAX_RANK : inputs[i].rank;
    memcpy(&shapes[i * AR_CLIENT_MAX_RANK], inputs[i].dims, (size_t)rank * sizeof(int64_t));
    ts[i].shape = &shapes[i * AR_CLIENT_MAX_RANK];
    ts[i].n_shape = (size_t)rank;
    const ar_client_buffer_t *b = NULL;
    if (input_ranges && input_ranges[i].buffer != 0) {
      arenad__buffer_range__init(&rs[i]);
      rs[i].buffer = input_ranges[i].buffer;
      rs[i].offset = input_ranges[i].offset;
      rs[i].bytes = input_ranges[i].bytes;
      ts[i].shm = &rs[i];
    } else if (inputs[i].data && inputs[i].bytes && (b = buffer_of(c, inputs[i].data, inputs[i].bytes)) != NULL) {
      arenad__buffer_range__init(&rs[i]);
      rs[i].buffer = b->id;
      rs[i].offset = (uint64_t)((const uint8_t *)inputs[i].data - (const uint8_t *)b->data);
      rs[i].bytes = inputs[i].bytes;
      ts[i].shm = &rs[i];
    } else {
      ts[i].data.data = (uint8_t *)inputs[i].data;
      ts[i].data.len = (size_t)inputs[i].bytes;
    }
    ptrs[i] = &ts[i];
  }
  for (size_t j = 0; j < n_outputs; j++) {
    Arenad__BufferRange *r = &rs[n_inputs + j];
    arenad__buffer_range__init(r);
    r->buffer = output_ranges[j].buffer;
    r->offset = output_ranges[j].offset;
    r->bytes = output_ranges[j].bytes;
    optrs[j] = r;
  }
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__InvokeRequest body = ARENAD__INVOKE_REQUEST__INIT;
  body.model = (char *)(model ? model : "");
  body.n_inputs = n_inputs;
  body.inputs = ptrs;
  body.n_outputs = n_outputs;
  body.outputs = optrs;
  Arenad__Session sess = ARENAD__SESSION__INIT;
  if (session != NULL) {
    sess.id = (char *)(session->id ? session->id : "");
    sess.start = session->start;
    sess.end = session->end;
    sess.reset = session->reset;
    body.session = &sess;
  }
  req.body_case = ARENAD__REQUEST__BODY_INVOKE;
  req.invoke = &body;
  Arenad__Response *resp;
  uint8_t *frame = NULL;
  int rc = call_fd(c, &req, -1, &resp, &frame, msg, msg_bytes);
  if (heap) free(ts), free(ptrs), free(shapes), free(rs), free(optrs);
  if (rc) return rc;
  if (resp->body_case != ARENAD__RESPONSE__BODY_INVOKE) {
    reply_free(resp, frame);
    return ar_errf(msg, msg_bytes, AR_EPROTO, "reply is not an invoke");
  }
  reply_t *keep = malloc(sizeof(*keep));
  if (keep == NULL) {
    reply_free(resp, frame);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory");
  }
  keep->resp = resp;
  keep->frame = frame;
  const Arenad__InvokeResponse *ir = resp->invoke;
  res->n_outputs = (int32_t)ir->n_outputs;
  for (size_t j = 0; j < ir->n_outputs && j < AR_CLIENT_MAX_IO; j++) {
    copy_tensor(&res->outputs[j], ir->outputs[j], true);
    const Arenad__BufferRange *r = ir->outputs[j]->shm;
    if (r == NULL || r->buffer == 0) continue;
    /* Written into a buffer: point into this client's mapping of it when the library has one. */
    res->outputs[j].data = NULL;
    res->outputs[j].bytes = r->bytes;
    for (const ar_client_buffer_t *b = c->bufs; b; b = b->next)
      if (b->id == r->buffer && r->offset <= b->bytes && r->bytes <= b->bytes - r->offset)
        res->outputs[j].data = (const uint8_t *)b->data + r->offset;
  }
  res->invoke_us = ir->invoke_us;
  res->queue_us = ir->queue_us;
  snprintf(res->state_reset, sizeof(res->state_reset), "%s", ir->state_reset ? ir->state_reset : "");
  res->priv = keep;
  return 0;
}

AR_EXPORT int ar_client_invoke_ranges(ar_client_t *c, const char *model, const ar_client_tensor_t *inputs,
                                      const ar_client_range_t *input_ranges, size_t n_inputs,
                                      const ar_client_range_t *output_ranges, size_t n_outputs,
                                      ar_client_result_t *res, char *msg, size_t msg_bytes) {
  return invoke_session_ranges(c, model, NULL, inputs, input_ranges, n_inputs, output_ranges, n_outputs, res, msg,
                               msg_bytes);
}

AR_EXPORT int ar_client_invoke(ar_client_t *c, const char *model, const ar_client_tensor_t *inputs, size_t n_inputs,
                               ar_client_result_t *res, char *msg, size_t msg_bytes) {
  return invoke_session_ranges(c, model, NULL, inputs, NULL, n_inputs, NULL, 0, res, msg, msg_bytes);
}

AR_EXPORT int ar_client_invoke_session(ar_client_t *c, const char *model, const ar_client_session_t *session,
                                       const ar_client_tensor_t *inputs, size_t n_inputs, ar_client_result_t *res,
                                       char *msg, size_t msg_bytes) {
  return invoke_session_ranges(c, model, session, inputs, NULL, n_inputs, NULL, 0, res, msg, msg_bytes);
}

AR_EXPORT int ar_client_reset_session(ar_client_t *c, const char *model, const char *session, bool end,
                                      bool *stateful, char *msg, size_t msg_bytes) {
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__ResetSessionRequest body = ARENAD__RESET_SESSION_REQUEST__INIT;
  body.model = (char *)(model ? model : "");
  body.session = (char *)(session ? session : "");
  body.end = end;
  req.body_case = ARENAD__REQUEST__BODY_RESET_SESSION;
  req.reset_session = &body;
  Arenad__Response *resp;
  int rc = call(c, &req, &resp, msg, msg_bytes);
  if (rc) return rc;
  if (resp->body_case != ARENAD__RESPONSE__BODY_RESET_SESSION || resp->reset_session == NULL)
    rc = ar_errf(msg, msg_bytes, AR_EPROTO, "reply is not a reset_session");
  else if (stateful)
    *stateful = resp->reset_session->stateful;
  arenad__response__free_unpacked(resp, NULL);
  return rc;
}

AR_EXPORT int ar_client_invoke_into(ar_client_t *c, const char *model, const ar_client_tensor_t *inputs,
                                    size_t n_inputs, void *const *outputs, const uint64_t *output_bytes,
                                    size_t n_outputs, ar_client_result_t *res, char *msg, size_t msg_bytes) {
  memset(res, 0, sizeof(*res));
  ar_client_range_t rs_s[AR_CLIENT_MAX_IO];
  ar_client_range_t *rs = n_outputs <= AR_CLIENT_MAX_IO ? memset(rs_s, 0, sizeof(rs_s)) : calloc(n_outputs + 1, sizeof(*rs));
  if (rs == NULL) return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory");
  for (size_t j = 0; j < n_outputs; j++) {
    if (outputs[j] == NULL) continue;
    const ar_client_buffer_t *b = buffer_of(c, outputs[j], output_bytes[j]);
    if (b == NULL) {
      if (rs != rs_s) free(rs);
      return ar_errf(msg, msg_bytes, AR_EINVAL, "output %zu: %llu bytes at %p are not inside a buffer registered on "
                     "this connection", j, (unsigned long long)output_bytes[j], outputs[j]);
    }
    rs[j].buffer = b->id;
    rs[j].offset = (uint64_t)((const uint8_t *)outputs[j] - (const uint8_t *)b->data);
    rs[j].bytes = output_bytes[j];
  }
  int rc = ar_client_invoke_ranges(c, model, inputs, NULL, n_inputs, rs, n_outputs, res, msg, msg_bytes);
  if (rs != rs_s) free(rs);
  return rc;
}

/* One register_buffer round trip: with descriptor `fd` attached, or releasing `release`. */
static int buffer_call(ar_client_t *c, int fd, uint32_t release, uint32_t *id, uint64_t *bytes, int *writable,
                       char *msg, size_t msg_bytes) {
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__RegisterBufferRequest body = ARENAD__REGISTER_BUFFER_REQUEST__INIT;
  body.release = release;
  req.body_case = ARENAD__REQUEST__BODY_REGISTER_BUFFER;
  req.register_buffer = &body;
  Arenad__Response *resp;
  int rc = call_fd(c, &req, fd, &resp, NULL, msg, msg_bytes);
  if (rc) return rc;
  if (resp->body_case != ARENAD__RESPONSE__BODY_REGISTER_BUFFER) {
    rc = ar_errf(msg, msg_bytes, AR_EPROTO, "reply is not a register_buffer");
  } else {
    if (id) *id = resp->register_buffer->buffer;
    if (bytes) *bytes = resp->register_buffer->bytes;
    if (writable) *writable = resp->register_buffer->writable;
  }
  arenad__response__free_unpacked(resp, NULL);
  return rc;
}

AR_EXPORT int ar_client_buffer_register_fd(ar_client_t *c, int fd, uint32_t *id, uint64_t *bytes, int *writable,
                                           char *msg, size_t msg_bytes) {
  if (fd < 0) return ar_errf(msg, msg_bytes, AR_EINVAL, "fd %d", fd);
  return buffer_call(c, fd, 0, id, bytes, writable, msg, msg_bytes);
}

AR_EXPORT int ar_client_buffer_unregister(ar_client_t *c, uint32_t id, char *msg, size_t msg_bytes) {
  if (id == 0) return ar_errf(msg, msg_bytes, AR_EINVAL, "buffer id 0");
  return buffer_call(c, -1, id, NULL, NULL, NULL, msg, msg_bytes);
}

AR_EXPORT int ar_client_buffer_register(ar_client_t *c, uint64_t bytes, ar_client_buffer_t **out, char *msg,
                                        size_t msg_bytes) {
  *out = NULL;
  if (bytes == 0 || bytes > (uint64_t)SIZE_MAX / 2) return ar_errf(msg, msg_bytes, AR_EINVAL, "buffer size %llu",
                                                                   (unsigned long long)bytes);
  int fd = memfd_create("arenad-buffer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return ar_errf(msg, msg_bytes, AR_EINVAL, "memfd_create: %s", strerror(errno));
  const char *what = NULL;
  void *p = MAP_FAILED;
  if (ftruncate(fd, (off_t)bytes) != 0) what = "ftruncate";
  else if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) what = "F_ADD_SEALS";
  /* MAP_POPULATE: the pages are this process's (charged to it), so the daemon may write outputs
   * there (it refuses output ranges whose pages nobody populated). */
  else if ((p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)) == MAP_FAILED)
    what = "mmap";
  if (what) {
    int e = errno;
    close(fd);
    return ar_errf(msg, msg_bytes, AR_EINVAL, "%s of a %llu-byte memfd: %s", what, (unsigned long long)bytes,
                   strerror(e));
  }
  ar_client_buffer_t *b = calloc(1, sizeof(*b));
  int rc = b ? buffer_call(c, fd, 0, &b->id, NULL, NULL, msg, msg_bytes) : ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory");
  close(fd);   /* both mappings keep the memfd alive */
  if (rc != 0) {
    munmap(p, (size_t)bytes);
    free(b);
    return rc;
  }
  b->data = p;
  b->bytes = bytes;
  b->next = c->bufs;
  c->bufs = b;
  *out = b;
  return 0;
}

AR_EXPORT int ar_client_buffer_release(ar_client_t *c, ar_client_buffer_t *buf, char *msg, size_t msg_bytes) {
  if (buf == NULL) return 0;
  ar_client_buffer_t **pp = &c->bufs;
  while (*pp && *pp != buf) pp = &(*pp)->next;
  if (*pp) *pp = buf->next;
  int rc = ar_client_buffer_unregister(c, buf->id, msg, msg_bytes);
  munmap(buf->data, (size_t)buf->bytes);
  free(buf);
  return rc;
}

AR_EXPORT int ar_client_resize_input(ar_client_t *c, const char *model, uint32_t input, const int64_t *dims,
                                     int32_t rank, ar_client_model_t *info, char *msg, size_t msg_bytes) {
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__ResizeInputRequest body = ARENAD__RESIZE_INPUT_REQUEST__INIT;
  int64_t shape[AR_CLIENT_MAX_RANK];
  if (rank < 0 || rank > AR_CLIENT_MAX_RANK) return ar_errf(msg, msg_bytes, AR_EINVAL, "rank %d", (int)rank);
  memcpy(shape, dims, (size_t)rank * sizeof(int64_t));
  body.model = (char *)(model ? model : "");
  body.input = input;
  body.shape = shape;
  body.n_shape = (size_t)rank;
  req.body_case = ARENAD__REQUEST__BODY_RESIZE_INPUT;
  req.resize_input = &body;
  Arenad__Response *resp;
  int rc = call(c, &req, &resp, msg, msg_bytes);
  if (rc) return rc;
  if (resp->body_case != ARENAD__RESPONSE__BODY_RESIZE_INPUT || resp->resize_input->model == NULL)
    rc = ar_errf(msg, msg_bytes, AR_EPROTO, "reply is not a resize_input");
  else if (info) {
    copy_info(info, resp->resize_input->model);
    snprintf(info->state_reset, sizeof(info->state_reset), "%s",
             resp->resize_input->state_reset ? resp->resize_input->state_reset : "");
  }
  arenad__response__free_unpacked(resp, NULL);
  return rc;
}

AR_EXPORT void ar_client_result_free(ar_client_result_t *res) {
  if (res == NULL) return;
  reply_t *keep = res->priv;
  if (keep) reply_free(keep->resp, keep->frame);
  free(keep);
  memset(res, 0, sizeof(*res));
}

static int json_call(ar_client_t *c, Arenad__Request *req, char **json, char *msg, size_t msg_bytes) {
  *json = NULL;
  Arenad__Response *resp;
  int rc = call(c, req, &resp, msg, msg_bytes);
  if (rc) return rc;
  const char *s = resp->body_case == ARENAD__RESPONSE__BODY_GET_STATS  ? resp->get_stats->json
                  : resp->body_case == ARENAD__RESPONSE__BODY_GET_PLAN ? resp->get_plan->json
                                                                        : NULL;
  if (s == NULL) rc = ar_errf(msg, msg_bytes, AR_EPROTO, "reply carries no JSON");
  else if ((*json = strdup(s)) == NULL) rc = ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory");
  arenad__response__free_unpacked(resp, NULL);
  return rc;
}

AR_EXPORT int ar_client_stats_json(ar_client_t *c, char **json, char *msg, size_t msg_bytes) {
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__GetStatsRequest body = ARENAD__GET_STATS_REQUEST__INIT;
  req.body_case = ARENAD__REQUEST__BODY_GET_STATS;
  req.get_stats = &body;
  return json_call(c, &req, json, msg, msg_bytes);
}

AR_EXPORT int ar_client_plan_json(ar_client_t *c, const char *model, char **json, char *msg, size_t msg_bytes) {
  Arenad__Request req = ARENAD__REQUEST__INIT;
  Arenad__GetPlanRequest body = ARENAD__GET_PLAN_REQUEST__INIT;
  body.model = (char *)(model ? model : "");
  req.body_case = ARENAD__REQUEST__BODY_GET_PLAN;
  req.get_plan = &body;
  return json_call(c, &req, json, msg, msg_bytes);
}
