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
 * the first time (or when a prepare changed the layout); a place into a moved persistent region
 * finds it where the caller moved it (the daemon's compaction slides the slot's bytes;
 * ar_interp_place_owned copies them). A slot the caller bound stays bound across places, never
 * written by them.
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
  /* A layout that differs from the one before (a prepare changed a piece): the default slot
   * starts again, and the note names the pieces that changed. */
  root->state_note[0] = '\0';
  if (root->pieces) {
    bool changed = np != root->n_pieces || bytes != root->state_bytes;
    size_t at = 0;
    for (int32_t i = 0; i < np; i++) {
      const ar_state_piece_t *o = i < root->n_pieces ? &root->pieces[i] : NULL;
      if (o && o->bytes == pieces[i].bytes && o->offset == pieces[i].offset) continue;
      changed = true;
      if (at < sizeof root->state_note)
        at += (size_t)snprintf(root->state_note + at, sizeof root->state_note - at, "%s%s (%llu -> %llu bytes)",
                               at ? ", " : "state reset: ", pieces[i].name,
                               (unsigned long long)(o ? o->bytes : 0), (unsigned long long)pieces[i].bytes);
    }
    if (changed) {
      root->state_fresh = true;
      root->state_generation++;
      root->bound = NULL;   /* a slot of the old size cannot hold the new layout */
      if (!root->state_note[0]) snprintf(root->state_note, sizeof root->state_note, "state reset: the layout changed");
    }
  } else {
    root->state_fresh = true;
  }
  free(root->pieces);
  free(root->binds);
  root->pieces = pieces;
  root->n_pieces = np;
  root->binds = binds;
  root->n_binds = nb;
  root->state_bytes = bytes;
  root->persistent_bytes = total;
  return 0;
}

void ar__state_free(ar_interp_t *root) {
  free(root->pieces);
  free(root->binds);
  root->pieces = NULL;
  root->binds = NULL;
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

void ar__state_place(ar_interp_t *root, uint8_t *persistent) {
  root->default_slot = root->state_bytes > 0 && persistent ? persistent + root->slot_offset : NULL;
  if (root->state_fresh) {
    /* The gaps between pieces too: a slot is fully defined bytes. */
    if (root->default_slot) memset(root->default_slot, 0, (size_t)root->state_bytes);
    reset(root, root->default_slot);
    root->state_fresh = false;
  }
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
    if (!root->default_slot) {   /* not placed: the first place resets it */
      root->state_fresh = true;
      return;
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
const char *ar_interp_state_note(const ar_interp_t *in) { return in->root->state_note; }
