/* ar_state.c - the state slot: every piece of a model's per-stream state in one block.
 *
 * A model's state is what one invoke leaves for the next: the variable tensors of every subgraph
 * (is_variable: LSTM / SVDF state), the resource variables (VAR_HANDLE ... ASSIGN_VARIABLE),
 * each CALL_ONCE's "ran" flag, and the state a kernel keeps outside tensors (ar_node_t.stream_bytes:
 * TFLM's spectral subtraction noise estimate). ar__state_layout lays them out once (after ar_interp_new and after
 * each ar_interp_prepare), walking the main graph's interpreter and its control-flow children in
 * operator order, each piece at its natural alignment (its element size: kernels read state with
 * unaligned loads), the total rounded up to 64. It also lists every pointer that points into the
 * slot (the views of the variable tensors, of the RESOURCE tensors naming a variable, the
 * variables' data, the CALL_ONCE flags): binding another slot rewrites those pointers and nothing
 * else, so a switch copies no state byte and allocates nothing.
 *
 * The default slot sits at the end of the main graph's persistent region. A place resets it only
 * the first time; a place into a moved persistent region finds it where the caller moved it (the
 * daemon's compaction slides the slot's bytes; ar_interp_place_owned copies them). A slot the
 * caller bound stays bound across places, never written by them.
 *
 * A re-plan (ar_interp_prepare after a resize) may change pieces: a recurrent op's state follows
 * its input's batch (ar_k_state_follows_batch). The prepare copies the default slot's bytes aside;
 * the place after it writes the new layout's initial state and copies back every piece the old
 * layout held with the same bytes (same name, kind and subgraph; its offset may differ), so only
 * the changed pieces start again, and the note names them. A changed layout counts a generation;
 * the layout before it is kept, so that a caller's slots written in it (the daemon's sessions)
 * are carried the same way (ar_interp_carry_state).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "common/ar_util.h"
#include "interp/ar_interp_int.h"

/* The walk below runs twice: counting (lists NULL), then filling. */
typedef struct walk {
  ar_state_piece_t *pieces;
  ar_state_bind_t *binds;
  int32_t n_pieces, n_binds;
  uint64_t at;                    /* the next free byte of the slot */
  const uint64_t *var_offset;     /* resource variable i's piece offset (fill pass) */
} walk_t;

static uint64_t natural_align(size_t elem) {
  uint64_t a = 1;
  while (a < elem && a < 8) a <<= 1;
  return a;
}

static void add_piece(walk_t *w, ar_state_kind_t kind, int32_t subgraph, uint64_t bytes, size_t elem, uint8_t fill,
                      const char *name) {
  const uint64_t align = natural_align(elem);
  w->at = (w->at + align - 1) / align * align;
  if (w->pieces) {
    ar_state_piece_t *p = &w->pieces[w->n_pieces];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->kind = kind;
    p->subgraph = subgraph;
    p->offset = w->at;
    p->bytes = bytes;
    p->fill = fill;
  }
  w->n_pieces++;
  w->at += bytes;
}

static void add_bind(walk_t *w, void **vp, uint8_t **bp, uint64_t offset) {
  if (w->binds) w->binds[w->n_binds] = (ar_state_bind_t){vp, bp, offset};
  w->n_binds++;
}

/* Interpreter x's pieces (its variable tensors, its CALL_ONCE flags) and its bindings, then its
 * children's. */
static void walk_interp(walk_t *w, ar_interp_t *x) {
  for (int32_t t = 0; t < x->n_tensors; t++) {
    if (x->alias_var[t] >= 0) {   /* a READ_VARIABLE output reading its variable in place */
      add_bind(w, &x->views[t].data, NULL, w->var_offset ? w->var_offset[x->alias_var[t]] : 0);
    } else if (x->tensor_plan[t].home == AR_HOME_STATE) {
      const ar_tview_t *v = &x->views[t];
      const ar_tensor_t *ten = &x->sg->tensors[t];
      /* TFLite's ResetVariableTensor: an int8 variable starts at its zero point, others at 0. */
      const uint8_t fill = ten->dtype == AR_DTYPE_INT8 && ten->has_quantization ? (uint8_t)(int8_t)ten->zero_point : 0;
      const int32_t i = w->n_pieces;
      add_piece(w, AR_STATE_TENSOR, x->subgraph, v->bytes, ar_dtype_size(v->dtype), fill,
                ten->name[0] ? ten->name : "(unnamed variable)");
      if (w->pieces) add_bind(w, &x->views[t].data, NULL, w->pieces[i].offset);
      else add_bind(w, NULL, NULL, 0);
    } else if (x->res_var[t] >= 0) {
      add_bind(w, &x->views[t].data, NULL, w->var_offset ? w->var_offset[x->res_var[t]] : 0);
    }
  }
  for (int32_t k = 0; k < x->n_ops; k++) {
    ar_node_t *nd = &x->nodes[k];
    if (nd->stream_bytes > 0) {   /* zero at a reset (TFLM's Reset of the op) */
      char what[128];
      snprintf(what, sizeof what, "operator %d (%s) state", (int)k, ar_op_name(nd->op));
      const int32_t i = w->n_pieces;
      add_piece(w, AR_STATE_KERNEL, x->subgraph, nd->stream_bytes, 8, 0, what);
      add_bind(w, &nd->stream, NULL, w->pieces ? w->pieces[i].offset : 0);
    }
    cf_op_t *cf = x->cf[k];
    if (!cf) continue;
    if (cf->op == AR_OP_CALL_ONCE) {
      char what[64];
      snprintf(what, sizeof what, "CALL_ONCE op %d ran", (int)k);
      const int32_t i = w->n_pieces;
      add_piece(w, AR_STATE_CALL_ONCE, x->subgraph, 1, 1, 0, what);
      add_bind(w, NULL, &cf->armed, w->pieces ? w->pieces[i].offset : 0);
    }
    for (int32_t j = 0; j < cf->n_child; j++) walk_interp(w, cf->child[j]);
  }
}

static void walk_model(walk_t *w, ar_interp_t *root, uint64_t *var_offset) {
  w->at = 0;
  w->n_pieces = w->n_binds = 0;
  for (int32_t i = 0; i < root->n_vars; i++) {
    rvar_t *v = &root->vars[i];
    const int32_t p = w->n_pieces;
    char name[sizeof w->pieces->name];
    snprintf(name, sizeof name, "%s%s%s", v->container, v->container[0] ? "/" : "", v->shared_name);
    add_piece(w, AR_STATE_RESOURCE, v->sg, v->bytes, ar_dtype_size(v->value->dtype), 0, name);
    if (w->pieces) {
      ar_state_piece_t *pc = &w->pieces[p];
      v->offset = pc->offset;
      if (var_offset) var_offset[i] = pc->offset;
    }
    add_bind(w, NULL, &v->data, w->pieces ? w->pieces[p].offset : 0);
  }
  w->var_offset = var_offset;
  walk_interp(w, root);
}

int ar__state_layout(ar_interp_t *root, char *msg, size_t msg_bytes) {
  walk_t w = {0};
  walk_model(&w, root, NULL);
  const int32_t np = w.n_pieces, nb = w.n_binds;
  ar_state_piece_t *pieces = calloc((size_t)(np > 0 ? np : 1), sizeof *pieces);
  ar_state_bind_t *binds = calloc((size_t)(nb > 0 ? nb : 1), sizeof *binds);
  uint64_t *var_offset = calloc((size_t)(root->n_vars > 0 ? root->n_vars : 1), sizeof *var_offset);
  if (!pieces || !binds || !var_offset) {
    free(pieces);
    free(binds);
    free(var_offset);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
  }
  w.pieces = pieces;
  w.binds = binds;
  walk_model(&w, root, var_offset);
  free(var_offset);
  const uint64_t bytes = ar_align_up(w.at, AR_ARENA_ALIGNMENT);
  uint64_t total;
  if (bytes < w.at || ar_add_overflow_u64(root->slot_offset, bytes, &total)) {
    free(pieces);
    free(binds);
    return ar_errf(msg, msg_bytes, AR_EOVERFLOW, "interp: state bytes overflow");
  }
  /* The default slot's bytes, kept for the next place (its offset may move and the place rewrites
   * the persistent region): once per place, in the layout they were written in (slot_pieces). A
   * second prepare before the place (a resize undone) keeps the first copy. */
  root->state_note[0] = '\0';
  if (!root->slot_pieces) root->state_fresh = true;   /* never placed: the first place resets it */
  if (root->slot_pieces && root->default_slot && !root->state_fresh && !root->carry && root->slot_state_bytes > 0) {
    root->carry = malloc((size_t)root->slot_state_bytes);
    if (!root->carry) {
      free(pieces);
      free(binds);
      return ar_errf(msg, msg_bytes, AR_ENOMEM, "interp: out of memory");
    }
    memcpy(root->carry, root->default_slot, (size_t)root->slot_state_bytes);
  }
  ar_state_piece_t *old = root->pieces;
  root->pieces = pieces;
  if (old && old != root->slot_pieces && old != root->prev_pieces) free(old);
  free(root->binds);
  root->n_pieces = np;
  root->binds = binds;
  root->n_binds = nb;
  root->state_bytes = bytes;
  root->persistent_bytes = total;
  return 0;
}

static void drop_list(ar_interp_t *root, ar_state_piece_t *p) {
  if (p && p != root->pieces && p != root->slot_pieces && p != root->prev_pieces) free(p);
}

void ar__state_free(ar_interp_t *root) {
  ar_state_piece_t *a = root->pieces, *b = root->slot_pieces, *c = root->prev_pieces;
  root->pieces = root->slot_pieces = root->prev_pieces = NULL;
  free(a);
  if (b != a) free(b);
  if (c != a && c != b) free(c);
  free(root->binds);
  free(root->carry);
  root->binds = NULL;
  root->carry = NULL;
}

/* Piece `to` of the current layout is piece j of layout `from` when both are the same state with
 * the same bytes (its offset may differ): a piece that keeps its bytes across a re-plan. -1: none. */
static int32_t same_piece(const ar_state_piece_t *to, const ar_state_piece_t *from, int32_t n_from) {
  for (int32_t j = 0; j < n_from; j++)
    if (from[j].kind == to->kind && from[j].subgraph == to->subgraph && from[j].bytes == to->bytes &&
        strcmp(from[j].name, to->name) == 0)
      return j;
  return -1;
}

static bool same_layout(const ar_state_piece_t *a, int32_t na, uint64_t abytes, const ar_state_piece_t *b, int32_t nb,
                        uint64_t bbytes) {
  if (na != nb || abytes != bbytes) return false;
  for (int32_t i = 0; i < na; i++)
    if (a[i].offset != b[i].offset || a[i].bytes != b[i].bytes || a[i].kind != b[i].kind ||
        a[i].subgraph != b[i].subgraph || strcmp(a[i].name, b[i].name) != 0)
      return false;
  return true;
}

static void bind(ar_interp_t *root, uint8_t *base) {
  for (int32_t i = 0, n = root->n_binds; i < n; i++) {
    const ar_state_bind_t *b = &root->binds[i];
    if (b->vp) *b->vp = base ? base + b->offset : NULL;
    else if (b->bp) *b->bp = base ? base + b->offset : NULL;
  }
}

static void reset(const ar_interp_t *root, uint8_t *base) {
  if (!base) return;
  for (int32_t i = 0; i < root->n_pieces; i++) {
    const ar_state_piece_t *p = &root->pieces[i];
    memset(base + p->offset, p->fill, (size_t)p->bytes);
  }
}

/* Write slot `dst` (current layout) from `src` in layout `from`: the initial state, then every
 * piece `from` holds with the same bytes copied from its old offset. dst and src do not overlap. */
static void carry_pieces(const ar_interp_t *root, uint8_t *dst, const uint8_t *src, const ar_state_piece_t *from,
                         int32_t n_from) {
  memset(dst, 0, (size_t)root->state_bytes);
  reset(root, dst);
  for (int32_t i = 0; i < root->n_pieces; i++) {
    const ar_state_piece_t *p = &root->pieces[i];
    const int32_t j = same_piece(p, from, n_from);
    if (j >= 0) memcpy(dst + p->offset, src + from[j].offset, (size_t)p->bytes);
  }
}

void ar__state_place(ar_interp_t *root, uint8_t *persistent) {
  root->default_slot = root->state_bytes > 0 && persistent ? persistent + root->slot_offset : NULL;
  const bool changed = root->slot_pieces &&
                       !same_layout(root->slot_pieces, root->n_slot_pieces, root->slot_state_bytes, root->pieces,
                                    root->n_pieces, root->state_bytes);
  if (changed) {
    /* The note names the pieces that start again: those the old layout did not hold with these bytes. */
    size_t at = 0;
    for (int32_t i = 0; i < root->n_pieces; i++) {
      const ar_state_piece_t *p = &root->pieces[i];
      if (same_piece(p, root->slot_pieces, root->n_slot_pieces) >= 0 || at >= sizeof root->state_note) continue;
      uint64_t was = 0;
      for (int32_t j = 0; j < root->n_slot_pieces; j++)
        if (root->slot_pieces[j].kind == p->kind && strcmp(root->slot_pieces[j].name, p->name) == 0)
          was = root->slot_pieces[j].bytes;
      at += (size_t)snprintf(root->state_note + at, sizeof root->state_note - at, "%s%s (%llu -> %llu bytes)",
                             at ? ", " : "state reset: ", p->name, (unsigned long long)was,
                             (unsigned long long)p->bytes);
    }
    root->bound = NULL;   /* a slot of the old layout cannot hold the new one */
  }
  if (root->default_slot) {
    if (root->state_fresh) {
      /* The gaps between pieces too: a slot is fully defined bytes. */
      memset(root->default_slot, 0, (size_t)root->state_bytes);
      reset(root, root->default_slot);
    } else if (root->carry) {
      carry_pieces(root, root->default_slot, root->carry, root->slot_pieces, root->n_slot_pieces);
    }
  }
  root->state_fresh = false;
  free(root->carry);
  root->carry = NULL;
  if (changed) {
    ar_state_piece_t *prev = root->prev_pieces;
    root->prev_pieces = root->slot_pieces;
    root->n_prev_pieces = root->n_slot_pieces;
    root->prev_generation = root->state_generation;
    root->state_generation++;
    drop_list(root, prev);
  }
  ar_state_piece_t *was = root->slot_pieces;
  root->slot_pieces = root->pieces;
  root->n_slot_pieces = root->n_pieces;
  root->slot_state_bytes = root->state_bytes;
  drop_list(root, was);
  bind(root, root->bound ? root->bound : root->default_slot);
}

/* ---- The API (ar_interp.h). */

uint64_t ar_interp_state_bytes(const ar_interp_t *in) { return in->root->state_bytes; }

int ar_interp_bind_state(ar_interp_t *in, void *slot) {
  ar_interp_t *root = in->root;
  if (slot && ((uintptr_t)slot % AR_ARENA_ALIGNMENT) != 0) return AR_EINVAL;
  if (root->state_bytes == 0) return 0;
  root->bound = slot;
  uint8_t *base = slot ? slot : root->default_slot;
  if (base) bind(root, base);   /* not placed yet: the place binds */
  return 0;
}

void ar_interp_reset_state(ar_interp_t *in, void *slot) {
  ar_interp_t *root = in->root;
  if (root->state_bytes == 0) return;
  if (!slot) {
    if (!root->default_slot || root->carry) {   /* not placed (or re-planned): the next place resets it */
      root->state_fresh = true;
      free(root->carry);
      root->carry = NULL;
      if (!root->default_slot) return;
    }
    slot = root->default_slot;
  }
  memset(slot, 0, (size_t)root->state_bytes);
  reset(root, slot);
}

int32_t ar_interp_n_state_pieces(const ar_interp_t *in) { return in->root->n_pieces; }

int ar_interp_state_piece(const ar_interp_t *in, int32_t i, const char **name, int32_t *subgraph, uint64_t *offset,
                          uint64_t *bytes) {
  const ar_interp_t *root = in->root;
  if (i < 0 || i >= root->n_pieces) return AR_EINVAL;
  const ar_state_piece_t *p = &root->pieces[i];
  if (name) *name = p->name;
  if (subgraph) *subgraph = p->subgraph;
  if (offset) *offset = p->offset;
  if (bytes) *bytes = p->bytes;
  return 0;
}

uint64_t ar_interp_default_state_offset(const ar_interp_t *in) { return in->root->slot_offset; }
void *ar_interp_default_state(const ar_interp_t *in) { return in->root->default_slot; }
uint32_t ar_interp_state_generation(const ar_interp_t *in) { return in->root->state_generation; }
bool ar_interp_state_layout_pending(const ar_interp_t *in) {
  const ar_interp_t *root = in->root;
  return root->slot_pieces && !same_layout(root->slot_pieces, root->n_slot_pieces, root->slot_state_bytes,
                                           root->pieces, root->n_pieces, root->state_bytes);
}
const char *ar_interp_state_note(const ar_interp_t *in) { return in->root->state_note; }

int ar_interp_carry_state(ar_interp_t *in, void *dst, const void *src, uint32_t src_generation) {
  ar_interp_t *root = in->root;
  if (root->state_bytes == 0) return 0;
  if (src_generation == root->state_generation) {
    if (dst != src) memcpy(dst, src, (size_t)root->state_bytes);
    return 0;
  }
  if (root->prev_pieces && src_generation == root->prev_generation) {
    carry_pieces(root, dst, src, root->prev_pieces, root->n_prev_pieces);
    return 0;
  }
  memset(dst, 0, (size_t)root->state_bytes);
  reset(root, dst);
  return AR_ESTATE;
}
