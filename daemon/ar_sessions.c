/* ar_sessions.c - the session table and the state slots of a model (issue 27; the design is in
 * ar_sessions.h, the protocol in docs/protocol.md "Sessions"). Loop thread unless said otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_util.h"
#include "daemon/ar_models_int.h"
#include "daemon/ar_sessions.h"

/* Chunk sizing: the first chunk holds 1 slot (one session costs exactly its slot), each next one
 * as many as all before (the slots double), up to AR_STATE_CHUNK_BYTES a chunk (at least one
 * slot): at most one chunk's unused tail beyond N slots. */
#define AR_STATE_CHUNK_FIRST 1u
#define AR_STATE_CHUNK_BYTES (256u << 10)

struct ar_state_chunk {
  uint64_t offset;        /* pool offset (rewritten by a compaction while the group is parked) */
  uint64_t bytes;         /* n_slots * slot bytes (a multiple of 64) */
  uint32_t n_slots, n_used;
  uint32_t *free;         /* stack of free slot indices: free[0 .. n_slots - n_used) */
  uint32_t generation;    /* the state layout its slots hold (ar_interp_state_generation; written
                           * by the loop when no job of the model's group is on a worker) */
};

typedef enum { AR_SESS_FREE = 0, AR_SESS_OPEN, AR_SESS_EXPIRED, AR_SESS_CLOSING } ar_sess_state_t;

typedef struct ar_session {
  char id[AR_SESSION_ID_MAX + 1];
  uint8_t state;          /* ar_sess_state_t */
  uid_t uid;
  uint32_t inflight;      /* accepted invokes not yet done */
  bool reset_pending;     /* a ResetSession came: the next invoke accepted resets the slot */
  bool by_reload;         /* EXPIRED because a reload replaced the model (not for being idle) */
  uint64_t last_us;       /* last invoke accepted or done (idle clock) */
  ar_state_chunk_t *chunk;
  uint32_t slot;
  int32_t next_free;      /* free-entry list link */
} ar_session_t;

typedef struct ar_sessions {
  uint64_t slot_bytes;
  ar_session_t *e;        /* entries (indices stay valid across growth) */
  int32_t n_e, cap_e, free_e;
  int32_t *hash;          /* open addressing (linear probing) of entry indices by id, -1 = empty */
  uint32_t hash_cap;      /* a power of two, >= 2 * entries in use */
  uint32_t in_hash;
  ar_state_chunk_t **chunks;
  uint32_t n_chunks, cap_chunks;
  uint64_t slots_total;   /* slots of all chunks */
  uint64_t open, kept_expired;   /* OPEN + CLOSING entries; EXPIRED entries */
  uint64_t n_expired, n_evicted, n_started, n_ended, n_reloaded;
} ar_sessions_t;

static uint32_t id_hash(const char *id) {
  uint32_t h = 2166136261u;
  for (const unsigned char *p = (const unsigned char *)id; *p; p++) h = (h ^ *p) * 16777619u;
  return h;
}

static int32_t find(const ar_sessions_t *t, const char *id) {
  if (t->hash_cap == 0) return -1;
  for (uint32_t i = id_hash(id) & (t->hash_cap - 1);; i = (i + 1) & (t->hash_cap - 1)) {
    int32_t k = t->hash[i];
    if (k < 0) return -1;
    if (strcmp(t->e[k].id, id) == 0) return k;
  }
}

static void hash_put(ar_sessions_t *t, int32_t k) {
  uint32_t i = id_hash(t->e[k].id) & (t->hash_cap - 1);
  while (t->hash[i] >= 0) i = (i + 1) & (t->hash_cap - 1);
  t->hash[i] = k;
  t->in_hash++;
}

/* Remove entry k from the hash (backward-shift deletion keeps every probe chain whole). */
static void hash_del(ar_sessions_t *t, int32_t k) {
  uint32_t mask = t->hash_cap - 1, i = id_hash(t->e[k].id) & mask;
  while (t->hash[i] != k) i = (i + 1) & mask;
  for (uint32_t j = (i + 1) & mask; t->hash[j] >= 0; j = (j + 1) & mask) {
    uint32_t home = id_hash(t->e[t->hash[j]].id) & mask;
    /* Move j's entry into the hole i unless its home lies cyclically in (i, j]. */
    bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (stays) continue;
    t->hash[i] = t->hash[j];
    i = j;
  }
  t->hash[i] = -1;
  t->in_hash--;
}

static bool hash_grow(ar_sessions_t *t) {
  if ((uint64_t)(t->in_hash + 1) * 2 <= t->hash_cap) return true;
  uint32_t cap = t->hash_cap ? t->hash_cap * 2 : 64;
  int32_t *h = malloc((size_t)cap * sizeof(*h));
  if (h == NULL) return false;
  for (uint32_t i = 0; i < cap; i++) h[i] = -1;
  free(t->hash);
  t->hash = h;
  t->hash_cap = cap;
  t->in_hash = 0;
  for (int32_t k = 0; k < t->n_e; k++)
    if (t->e[k].state != AR_SESS_FREE && t->e[k].state != AR_SESS_CLOSING) hash_put(t, k);
  return true;
}

static int32_t entry_new(ar_sessions_t *t) {
  if (t->free_e >= 0) {
    int32_t k = t->free_e;
    t->free_e = t->e[k].next_free;
    return k;
  }
  if (t->n_e == t->cap_e) {
    int32_t cap = t->cap_e ? t->cap_e * 2 : 16;
    ar_session_t *e = realloc(t->e, (size_t)cap * sizeof(*e));
    if (e == NULL) return -1;
    t->e = e;
    t->cap_e = cap;
  }
  return t->n_e++;
}

static void entry_release(ar_sessions_t *t, int32_t k) {
  memset(&t->e[k], 0, sizeof(t->e[k]));
  t->e[k].state = AR_SESS_FREE;
  t->e[k].next_free = t->free_e;
  t->free_e = k;
}

/* ---- slots ---- */

static void chunk_free(ar_server_t *srv, ar_sessions_t *t, uint32_t c) {
  ar_state_chunk_t *ch = t->chunks[c];
  ar_pool_free(&srv->pool, ch->offset);
  t->slots_total -= ch->n_slots;
  free(ch->free);
  free(ch);
  t->chunks[c] = t->chunks[--t->n_chunks];
}

static void slot_free(ar_server_t *srv, ar_sessions_t *t, ar_state_chunk_t *ch, uint32_t slot) {
  ch->free[ch->n_slots - ch->n_used] = slot;
  ch->n_used--;
  if (ch->n_used == 0)
    for (uint32_t c = 0; c < t->n_chunks; c++)
      if (t->chunks[c] == ch) {
        chunk_free(srv, t, c);
        break;
      }
}

/* A free slot (a new chunk from the pool when every chunk is full). */
static int slot_take(ar_server_t *srv, ar_dmodel_t *m, ar_sessions_t *t, ar_state_chunk_t **ch_out, uint32_t *slot,
                     char *msg, size_t msg_bytes) {
  for (uint32_t c = 0; c < t->n_chunks; c++) {
    ar_state_chunk_t *ch = t->chunks[c];
    /* Not a chunk left in an older layout (its sessions were ended when it could not be carried). */
    if (ch->generation != m->state_generation || ch->bytes / ch->n_slots != t->slot_bytes) continue;
    if (ch->n_used < ch->n_slots) {
      *slot = ch->free[ch->n_slots - ch->n_used - 1];
      ch->n_used++;
      *ch_out = ch;
      return 0;
    }
  }
  uint64_t max_slots = AR_MAX(1, AR_STATE_CHUNK_BYTES / t->slot_bytes);
  uint64_t n = AR_MIN(AR_MAX(AR_STATE_CHUNK_FIRST, t->slots_total), max_slots);
  if (n > UINT32_MAX / 2) n = UINT32_MAX / 2;
  if (t->n_chunks == t->cap_chunks) {
    uint32_t cap = t->cap_chunks ? t->cap_chunks * 2 : 8;
    ar_state_chunk_t **cs = realloc(t->chunks, cap * sizeof(*cs));
    if (cs == NULL) return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory for the session slots of '%s'", m->name);
    t->chunks = cs;
    t->cap_chunks = cap;
  }
  ar_state_chunk_t *ch = calloc(1, sizeof(*ch));
  uint32_t *fr = calloc(n, sizeof(*fr));
  if (ch == NULL || fr == NULL) {
    free(ch);
    free(fr);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory for the session slots of '%s'", m->name);
  }
  char owner[AR_POOL_OWNER_MAX], why[AR_MSG_BYTES];
  snprintf(owner, sizeof(owner), "%.40s:sessions", m->name);
  ch->bytes = n * t->slot_bytes;
  int rc = ar_pool_alloc(&srv->pool, ch->bytes, AR_REGION_STATE, owner, &ch->offset, why, sizeof(why));
  uint64_t fit = ar_pool_largest_free_bytes(&srv->pool) / t->slot_bytes;
  if (rc == AR_ENOSPC && fit >= 1 && fit < n) {
    /* A smaller chunk where the pool still has room for one. */
    n = fit;
    ch->bytes = n * t->slot_bytes;
    rc = ar_pool_alloc(&srv->pool, ch->bytes, AR_REGION_STATE, owner, &ch->offset, why, sizeof(why));
  }
  if (rc != 0) {
    free(ch);
    free(fr);
    return ar_errf(msg, msg_bytes, rc, "model '%s': no room for another session slot of %" PRIu64 " state bytes "
                   "(the model holds %" PRIu64 " slots): a chunk of %" PRIu64 " slots (%" PRIu64 " bytes) does not fit: %s",
                   m->name, t->slot_bytes, t->slots_total, n, n * t->slot_bytes, why);
  }
  ch->n_slots = (uint32_t)n;
  ch->free = fr;
  ch->generation = m->state_generation;
  for (uint32_t i = 0; i < ch->n_slots; i++) fr[i] = ch->n_slots - 1 - i;   /* slot 0 on top */
  t->chunks[t->n_chunks++] = ch;
  t->slots_total += n;
  *slot = fr[ch->n_slots - 1];
  ch->n_used = 1;
  *ch_out = ch;
  return 0;
}

/* ---- expiry ---- */

static bool idle_past(const ar_server_t *srv, const ar_session_t *s, uint64_t now) {
  uint64_t to = (uint64_t)srv->cfg.session_idle_timeout_ms * 1000;
  return s->state == AR_SESS_OPEN && s->inflight == 0 && to != 0 && now - s->last_us >= to;
}

/* Forget the oldest expired ids while more are kept than max_sessions_per_model. */
static void evict_kept(ar_server_t *srv, ar_sessions_t *t) {
  while (t->kept_expired > 0 && t->kept_expired > srv->cfg.max_sessions_per_model) {
    int32_t old = -1;
    for (int32_t k = 0; k < t->n_e; k++)
      if (t->e[k].state == AR_SESS_EXPIRED && (old < 0 || t->e[k].last_us < t->e[old].last_us)) old = k;
    if (old < 0) return;
    hash_del(t, old);
    entry_release(t, old);
    t->kept_expired--;
    t->n_evicted++;
  }
}

static void expire(ar_server_t *srv, ar_sessions_t *t, int32_t k) {
  ar_session_t *s = &t->e[k];
  slot_free(srv, t, s->chunk, s->slot);
  s->chunk = NULL;
  s->state = AR_SESS_EXPIRED;
  t->open--;
  t->kept_expired++;
  t->n_expired++;
}

static void expire_idle(ar_server_t *srv, ar_sessions_t *t, uint64_t now) {
  for (int32_t k = 0; k < t->n_e; k++)
    if (idle_past(srv, &t->e[k], now)) expire(srv, t, k);
  evict_kept(srv, t);
}

/* ---- accept ---- */

static int check_id(const char *id, const char *model, char *msg, size_t n) {
  size_t len = strlen(id);
  if (len > AR_SESSION_ID_MAX)
    return ar_errf(msg, n, AR_EINVAL, "model '%s': session id of %zu bytes (at most %d)", model, len, AR_SESSION_ID_MAX);
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)id[i] < 0x21 || (unsigned char)id[i] > 0x7e)
      return ar_errf(msg, n, AR_EINVAL, "model '%s': session id has byte 0x%02x at %zu (printable ASCII "
                     "0x21-0x7e only)", model, (unsigned char)id[i], i);
  return 0;
}

static uid_t peer_uid(const ar_reply_to_t *to) { return to->peer.known ? to->peer.uid : (uid_t)-1; }

static int not_owner(const ar_dmodel_t *m, const ar_session_t *s, uid_t uid, char *msg, size_t n) {
  return ar_errf(msg, n, AR_EPERM, "session '%s' of model '%s' belongs to uid %u, not to uid %u", s->id, m->name,
                 (unsigned)s->uid, (unsigned)uid);
}

static int expired_error(const ar_server_t *srv, const ar_dmodel_t *m, const ar_session_t *s, char *msg, size_t n) {
  if (s->by_reload)
    return ar_errf(msg, n, AR_ESTATE, "session '%s' of model '%s' ended when a reload replaced the model (its file "
                   "changed): its state is gone; start it again (start flag)", s->id, m->name);
  return ar_errf(msg, n, AR_ESTATE, "session '%s' of model '%s' expired after %u ms idle "
                 "(session_idle_timeout_ms %u): its state is gone; start it again (start flag)", s->id, m->name,
                 srv->cfg.session_idle_timeout_ms, srv->cfg.session_idle_timeout_ms);
}

/* Find an open session `id` of `m` that `uid` may use (expiring it first if idle too long). */
static int lookup(ar_server_t *srv, ar_dmodel_t *m, const char *id, uid_t uid, uint64_t now, int32_t *k_out,
                  char *msg, size_t n) {
  ar_sessions_t *t = m->sessions;
  int32_t k = t ? find(t, id) : -1;
  if (k < 0)
    return ar_errf(msg, n, AR_ENOENT, "no session '%s' is open on model '%s' (never started, ended, or expired "
                   "long ago): start it with the start flag", id, m->name);
  ar_session_t *s = &t->e[k];
  if (s->uid != uid) return not_owner(m, s, uid, msg, n);
  if (idle_past(srv, s, now)) expire(srv, t, k);
  if (s->state == AR_SESS_EXPIRED) return expired_error(srv, m, s, msg, n);
  *k_out = k;
  return 0;
}

static int table_for(ar_dmodel_t *m, char *msg, size_t n) {
  if (m->sessions) return 0;
  m->sessions = calloc(1, sizeof(*m->sessions));
  if (m->sessions == NULL) return ar_errf(msg, n, AR_ENOMEM, "no memory for the sessions of '%s'", m->name);
  m->sessions->free_e = -1;
  m->sessions->slot_bytes = (m->state_bytes + 63) & ~(uint64_t)63;
  return 0;
}

/* Open session `id` for `uid` (a fresh slot, its state reset by the invoke that uses it first). */
static int open_session(ar_server_t *srv, ar_dmodel_t *m, const ar_reply_to_t *to, const char *id, uint64_t now,
                        int32_t *k_out, char *msg, size_t n) {
  int rc = table_for(m, msg, n);
  if (rc) return rc;
  ar_sessions_t *t = m->sessions;
  uid_t uid = peer_uid(to);
  int32_t k = find(t, id);
  if (k >= 0 && t->e[k].uid != uid) return not_owner(m, &t->e[k], uid, msg, n);
  if (k >= 0 && t->e[k].state == AR_SESS_OPEN) {   /* started again: same slot, initial state */
    *k_out = k;
    return 0;
  }
  if (t->open >= srv->cfg.max_sessions_per_model) expire_idle(srv, t, now);
  if (t->open >= srv->cfg.max_sessions_per_model)
    return ar_errf(msg, n, AR_EBUSY, "model '%s' has %" PRIu64 " sessions open (max_sessions_per_model %u): end "
                   "one or wait for idle ones to expire (session_idle_timeout_ms %u)", m->name, t->open,
                   srv->cfg.max_sessions_per_model, srv->cfg.session_idle_timeout_ms);
  if (!ar_models_peer_is_admin(srv, to)) {
    uint64_t mine = 0;
    for (int pass = 0; pass < 2; pass++) {
      mine = 0;
      for (int32_t j = 0; j < t->n_e; j++)
        if ((t->e[j].state == AR_SESS_OPEN || t->e[j].state == AR_SESS_CLOSING) && t->e[j].uid == uid) mine++;
      if (mine < srv->cfg.max_sessions_per_uid || pass == 1) break;
      expire_idle(srv, t, now);
    }
    if (mine >= srv->cfg.max_sessions_per_uid)
      return ar_errf(msg, n, AR_EBUSY, "uid %u has %" PRIu64 " sessions open on model '%s' (max_sessions_per_uid %u)",
                     (unsigned)uid, mine, m->name, srv->cfg.max_sessions_per_uid);
  }
  ar_state_chunk_t *ch = NULL;
  uint32_t slot = 0;
  if (k < 0) {
    if (!hash_grow(t)) return ar_errf(msg, n, AR_ENOMEM, "no memory for the sessions of '%s'", m->name);
    k = entry_new(t);
    if (k < 0) return ar_errf(msg, n, AR_ENOMEM, "no memory for the sessions of '%s'", m->name);
    rc = slot_take(srv, m, t, &ch, &slot, msg, n);
    if (rc) {
      entry_release(t, k);
      return rc;
    }
    ar_session_t *s = &t->e[k];
    memset(s, 0, sizeof(*s));
    snprintf(s->id, sizeof(s->id), "%s", id);
    s->uid = uid;
    hash_put(t, k);
  } else {   /* an expired id started again */
    rc = slot_take(srv, m, t, &ch, &slot, msg, n);
    if (rc) return rc;
    t->kept_expired--;
    t->e[k].by_reload = false;
  }
  ar_session_t *s = &t->e[k];
  s->state = AR_SESS_OPEN;
  s->chunk = ch;
  s->slot = slot;
  s->last_us = now;
  t->open++;
  t->n_started++;
  *k_out = k;
  return 0;
}

/* A session leaves the id table (ended): its slot is freed once no job holds it. */
static void close_session(ar_server_t *srv, ar_sessions_t *t, int32_t k) {
  ar_session_t *s = &t->e[k];
  hash_del(t, k);
  s->state = AR_SESS_CLOSING;
  t->n_ended++;
  if (s->inflight == 0) {
    slot_free(srv, t, s->chunk, s->slot);
    t->open--;
    entry_release(t, k);
  }
}

int ar_sessions_accept(ar_server_t *srv, ar_dmodel_t *m, const ar_reply_to_t *to, const Arenad__Session *session,
                       ar_session_use_t *use, char *msg, size_t msg_bytes) {
  memset(use, 0, sizeof(*use));
  use->entry = -1;
  if (m->state_bytes == 0) return 0;   /* stateless: sessions ignored */
  use->stateful = true;
  const char *id = session && session->id ? session->id : "";
  if (id[0] == '\0' && session && (session->start || session->end))
    return ar_errf(msg, msg_bytes, AR_EINVAL, "model '%s': the start and end flags need a session id (1 to %d "
                   "printable bytes); without one the invoke uses the model's default state", m->name,
                   AR_SESSION_ID_MAX);
  if (id[0] == '\0') {   /* the default state */
    use->reset = (session && session->reset) || m->default_reset;
    m->default_reset = false;
    return 0;
  }
  int rc = check_id(id, m->name, msg, msg_bytes);
  if (rc) return rc;
  uint64_t now = ar_now_us();
  int32_t k = -1;
  if (session->start)
    rc = open_session(srv, m, to, id, now, &k, msg, msg_bytes);
  else
    rc = lookup(srv, m, id, peer_uid(to), now, &k, msg, msg_bytes);
  if (rc) return rc;
  ar_sessions_t *t = m->sessions;
  ar_session_t *s = &t->e[k];
  s->inflight++;
  s->last_us = now;
  use->entry = k;
  use->chunk = s->chunk;
  use->slot = s->slot;
  use->reset = session->start || session->reset || s->reset_pending;
  s->reset_pending = false;
  if (session->end) close_session(srv, t, k);
  return 0;
}

void *ar_sessions_slot(const ar_server_t *srv, const ar_session_use_t *use) {
  if (use->chunk == NULL) return NULL;
  return srv->pool.base + use->chunk->offset + (uint64_t)use->slot * (use->chunk->bytes / use->chunk->n_slots);
}

int ar_sessions_bind(const ar_server_t *srv, ar_interp_t *in, const ar_session_use_t *use, char *msg,
                     size_t msg_bytes) {
  if (!use->stateful) return 0;
  void *slot = ar_sessions_slot(srv, use);
  /* A slot a re-plan's new layout could not be carried into (no pool room: its session ended). */
  if (slot != NULL && (ar_sessions_stale(use, in) || ar_interp_state_bytes(in) > use->chunk->bytes / use->chunk->n_slots))
    return ar_errf(msg, msg_bytes, AR_ESTATE, "new input shapes changed the model's state to %" PRIu64 " bytes and "
                   "the pool had no room to carry this session's slot into it: the session ended; start it again",
                   ar_interp_state_bytes(in));
  int rc = ar_interp_bind_state(in, slot);
  if (rc != 0) return ar_errf(msg, msg_bytes, rc, "binding the session's state slot failed");
  if (use->reset) ar_interp_reset_state(in, slot);
  return 0;
}

bool ar_sessions_stale(const ar_session_use_t *use, const ar_interp_t *in) {
  return use->stateful && use->chunk != NULL && use->chunk->generation != ar_interp_state_generation(in);
}

/* End every session whose slot is in chunk `ch` (it could not be carried into a new layout). */
static void end_chunk_sessions(ar_server_t *srv, ar_sessions_t *t, ar_state_chunk_t *ch) {
  for (int32_t k = 0; k < t->n_e; k++)
    if (t->e[k].state == AR_SESS_OPEN && t->e[k].chunk == ch) {
      t->n_evicted++;
      close_session(srv, t, k);   /* may free ch with its last slot */
    }
}

void ar_sessions_restate(ar_server_t *srv, ar_dmodel_t *m) {
  ar_sessions_t *t = m->sessions;
  if (t == NULL) return;
  const uint32_t gen = ar_interp_state_generation(m->interp);
  const uint64_t nb = (ar_interp_state_bytes(m->interp) + 63) & ~(uint64_t)63;
  char owner[AR_POOL_OWNER_MAX], why[AR_MSG_BYTES];
  snprintf(owner, sizeof(owner), "%.40s:sessions", m->name);
  t->slot_bytes = nb;
  uint64_t carried = 0, ended = t->n_evicted;
  /* Downwards: ending a chunk's sessions may free it, which moves the last chunk (done) into c. */
  for (uint32_t c = t->n_chunks; c-- > 0;) {
    ar_state_chunk_t *ch = t->chunks[c];
    if (ch->generation == gen) continue;
    const uint64_t old_slot = ch->bytes / ch->n_slots;
    uint64_t off = 0;
    if (ar_pool_alloc(&srv->pool, (uint64_t)ch->n_slots * nb, AR_REGION_STATE, owner, &off, why, sizeof(why)) != 0) {
      ar_log("model '%s': no pool room to carry %u session slot(s) into the new state layout (%s): those "
             "sessions end", m->name, ch->n_used, why);
      end_chunk_sessions(srv, t, ch);
      continue;
    }
    /* Every slot, free ones too (they get the initial state): no list of the used ones needed. */
    for (uint32_t j = 0; j < ch->n_slots; j++)
      ar_interp_carry_state(m->interp, srv->pool.base + off + j * nb, srv->pool.base + ch->offset + j * old_slot,
                            ch->generation);
    ar_pool_free(&srv->pool, ch->offset);
    ch->offset = off;
    ch->bytes = (uint64_t)ch->n_slots * nb;
    ch->generation = gen;
    carried += ch->n_used;
  }
  ar_log("model '%s': %" PRIu64 " session slot(s) carried into the new state layout (%" PRIu64 " bytes a slot), %"
         PRIu64 " session(s) ended", m->name, carried, nb, t->n_evicted - ended);
}

void ar_sessions_unbind(ar_interp_t *in, const ar_session_use_t *use) {
  if (use->stateful && use->chunk != NULL) ar_interp_bind_state(in, NULL);
}

void ar_sessions_done(ar_server_t *srv, ar_dmodel_t *m, const ar_session_use_t *use) {
  if (!use->stateful || use->entry < 0 || m->sessions == NULL) return;
  ar_sessions_t *t = m->sessions;
  ar_session_t *s = &t->e[use->entry];
  s->inflight--;
  s->last_us = ar_now_us();
  if (s->state == AR_SESS_CLOSING && s->inflight == 0) {
    slot_free(srv, t, s->chunk, s->slot);
    t->open--;
    entry_release(t, use->entry);
  }
}

void ar_sessions_reset_request(ar_server_t *srv, const ar_reply_to_t *to, const Arenad__ResetSessionRequest *r) {
  char msg[AR_MSG_BYTES];
  ar_dmodel_t *m = ar_models_find(srv, r->model);
  if (m == NULL || m->state == AR_MODEL_UNLOADING)
    return ar__answer_error(srv, to, AR_ENOENT, "no model named '%.80s'", r->model);
  if (m->state == AR_MODEL_LOADING)
    return ar__answer_error(srv, to, AR_EAGAIN, "model '%s' is loading: retry, it is served once loaded", m->name);
  Arenad__Response resp = ARENAD__RESPONSE__INIT;
  Arenad__Status st = ARENAD__STATUS__INIT;
  Arenad__ResetSessionResponse body = ARENAD__RESET_SESSION_RESPONSE__INIT;
  resp.status = &st;
  resp.body_case = ARENAD__RESPONSE__BODY_RESET_SESSION;
  resp.reset_session = &body;
  body.stateful = m->state_bytes != 0;
  const char *id = r->session ? r->session : "";
  if (m->state_bytes == 0) return srv->ops.reply(srv, to, &resp);
  if (id[0] == '\0') {
    m->default_reset = true;   /* the next invoke without a session starts from the initial state */
    return srv->ops.reply(srv, to, &resp);
  }
  int rc = check_id(id, m->name, msg, sizeof(msg));
  int32_t k = -1;
  if (rc == 0) rc = lookup(srv, m, id, peer_uid(to), ar_now_us(), &k, msg, sizeof(msg));
  if (rc) return srv->ops.reply_error(srv, to, rc, msg);
  ar_sessions_t *t = m->sessions;
  if (r->end) {
    close_session(srv, t, k);
  } else {
    /* The next invoke of the session accepted from now on starts from the initial state: those
     * accepted before run first, with the state they were sent for. */
    t->e[k].reset_pending = true;
    t->e[k].last_us = ar_now_us();
  }
  srv->ops.reply(srv, to, &resp);
}

void ar_sessions_free(ar_server_t *srv, ar_dmodel_t *m) {
  ar_sessions_t *t = m->sessions;
  if (t == NULL) return;
  while (t->n_chunks) chunk_free(srv, t, t->n_chunks - 1);
  free(t->chunks);
  free(t->e);
  free(t->hash);
  free(t);
  m->sessions = NULL;
}

ar_dmodel_t *ar_sessions_chunk_owner(ar_server_t *srv, uint64_t offset, uint64_t **field) {
  for (ar_dmodel_t *m = srv->models; m; m = m->next) {
    ar_sessions_t *t = m->sessions;
    for (uint32_t c = 0; t && c < t->n_chunks; c++)
      if (t->chunks[c]->offset == offset) {
        if (field) *field = &t->chunks[c]->offset;
        return m;
      }
  }
  return NULL;
}

void ar_sessions_replaced(ar_server_t *srv, const ar_dmodel_t *old, ar_dmodel_t *m) {
  const ar_sessions_t *o = old->sessions;
  if (o == NULL || m->state_bytes == 0) return;
  char msg[AR_MSG_BYTES];
  if (table_for(m, msg, sizeof(msg)) != 0) return;
  ar_sessions_t *t = m->sessions;
  const uint64_t now = ar_now_us();
  uint64_t carried = 0;
  for (int32_t j = 0; j < o->n_e; j++) {
    const ar_session_t *os = &o->e[j];
    if (os->state != AR_SESS_OPEN && os->state != AR_SESS_EXPIRED) continue;   /* ended ones are gone */
    if (find(t, os->id) >= 0 || !hash_grow(t)) continue;
    int32_t k = entry_new(t);
    if (k < 0) break;   /* no memory: the rest are simply unknown (ENOENT) */
    ar_session_t *s = &t->e[k];
    memset(s, 0, sizeof(*s));
    snprintf(s->id, sizeof(s->id), "%s", os->id);
    s->uid = os->uid;
    s->state = AR_SESS_EXPIRED;
    s->by_reload = true;
    s->last_us = now;
    hash_put(t, k);
    t->kept_expired++;
    t->n_reloaded++;
    carried++;
  }
  evict_kept(srv, t);
  if (carried) ar_log("reload: model '%s': %" PRIu64 " session(s) ended with the old instance; their next invokes are "
                      "told so", m->name, carried);
}

void ar_sessions_figures(const ar_dmodel_t *m, ar_sessions_figures_t *f) {
  memset(f, 0, sizeof(*f));
  f->state_bytes = m->state_bytes;
  const ar_sessions_t *t = m->sessions;
  if (t == NULL) return;
  f->open = t->open;
  f->expired = t->n_expired;
  f->evicted = t->n_evicted;
  f->started = t->n_started;
  f->ended = t->n_ended;
  f->ended_by_reload = t->n_reloaded;
  f->chunks = t->n_chunks;
  for (uint32_t c = 0; c < t->n_chunks; c++) f->chunk_bytes += t->chunks[c]->bytes;
}

json_t *ar_sessions_stats_json(ar_server_t *srv, ar_dmodel_t *m, uint64_t *key) {
  *key = 0;
  if (m->state_bytes == 0) return NULL;
  if (m->sessions) expire_idle(srv, m->sessions, ar_now_us());
  ar_sessions_figures_t f;
  ar_sessions_figures(m, &f);
  uint64_t vals[] = {f.open, f.expired, f.evicted, f.started, f.ended, f.ended_by_reload, f.chunks, f.chunk_bytes,
                     f.state_bytes};
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) h = (h ^ vals[i]) * 1099511628211ull;
  h = (h ^ m->state_generation) * 1099511628211ull;
  *key = h;
  return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s}", "state_bytes_per_slot", (json_int_t)f.state_bytes,
                   "open", (json_int_t)f.open, "expired", (json_int_t)f.expired, "evicted", (json_int_t)f.evicted,
                   "started", (json_int_t)f.started, "ended", (json_int_t)f.ended, "ended_by_reload",
                   (json_int_t)f.ended_by_reload, "slot_chunks", (json_int_t)f.chunks, "slot_bytes",
                   (json_int_t)f.chunk_bytes, "state_generation", (json_int_t)m->state_generation, "state_reset",
                   m->state_note);
}
