/* ar_interp_int.h - the interpreter's structures, shared by the files of interp/ that implement
 * it (ar_interp.c: prepare, place, invoke, control flow; ar_state.c: the state slot). Not for
 * callers: they use ar_interp.h.
 */
#ifndef AR_INTERP_INT_H
#define AR_INTERP_INT_H

#include "interp/ar_interp.h"

typedef struct cf_op cf_op_t;
typedef struct rvar rvar_t;

/* One piece of the state slot (ar_state.c). */
typedef enum ar_state_kind {
  AR_STATE_TENSOR = 0, AR_STATE_RESOURCE = 1, AR_STATE_CALL_ONCE = 2, AR_STATE_KERNEL = 3
} ar_state_kind_t;
typedef struct ar_state_piece {
  char name[128];                 /* tensor name, container/shared_name, "CALL_ONCE op K ran" or
                                   * "operator K (OP) state" (ar_node_t.stream_bytes) */
  ar_state_kind_t kind;
  int32_t subgraph;
  uint64_t offset, bytes;         /* in the slot */
  uint8_t fill;                   /* its initial byte: 0, or an int8/uint8 tensor's zero point */
} ar_state_piece_t;
/* A pointer that points into the bound slot: a view's data, a resource variable's data, a
 * CALL_ONCE flag, a node's stream state. */
typedef struct ar_state_bind {
  void **vp;                      /* or */
  uint8_t **bp;
  uint64_t offset;
} ar_state_bind_t;

struct ar_interp {
  const ar_model_t *model;
  const ar_subgraph_t *sg;
  int32_t subgraph;               /* index of sg in the model (0: the main graph) */
  ar_interp_t *root;              /* the main graph's interpreter (itself there) */
  cf_op_t **cf;                   /* n_ops: a WHILE / IF / CALL_ONCE's children, NULL elsewhere */
  int32_t *res_var;               /* n_tensors: the resource variable a RESOURCE tensor names, or -1 */
  int32_t *alias_var;             /* n_tensors: the variable a READ_VARIABLE output reads in place
                                   * (find_read_aliases), or -1 */
  bool *state_alias;              /* n_tensors: alias_var >= 0 (for ar_lifetimes_build) */
  /* The main graph's interpreter only: resource variables (one per (container, shared_name) in
   * the whole model, their bytes in the state slot), the last invoke's error, and the state slot
   * (ar_state.c): its pieces, the view pointers binding rebinds, the default slot at the end of
   * the persistent region. */
  rvar_t *vars;
  int32_t n_vars;
  char err[256];
  ar_state_piece_t *pieces;
  int32_t n_pieces;
  ar_state_bind_t *binds;
  int32_t n_binds;
  uint64_t state_bytes;           /* one slot, a multiple of 64 */
  uint64_t slot_offset;           /* the default slot's offset in the persistent region */
  uint8_t *default_slot;          /* set at place */
  void *bound;                    /* the slot bound by ar_interp_bind_state, NULL: the default */
  bool state_fresh;               /* the default slot is reset at the next place (first place, or
                                   * a prepare changed a piece) */
  uint32_t state_generation;      /* +1 at each place that applies a changed layout */
  char state_note[256];           /* what the last place after a prepare reset ("" when nothing) */
  /* Carrying state across a re-plan (ar_state.c). `pieces` is the layout of the last prepare; the
   * default slot's bytes are in `slot_pieces` (the layout of the last place; NULL before the first);
   * `prev_pieces` is the layout before the last change (generation prev_generation), which
   * ar_interp_carry_state reads external slots in. The three may share one list. `carry` holds the
   * default slot's bytes from the first prepare after a place until the next place, which puts them
   * back piece by piece (the slot's offset may change, the place rewrites the region). */
  ar_state_piece_t *slot_pieces, *prev_pieces;
  int32_t n_slot_pieces, n_prev_pieces;
  uint64_t slot_state_bytes;
  uint32_t prev_generation;
  uint8_t *carry;
  ar_interp_options_t opt;
  int32_t n_tensors, n_ops;

  ar_tview_t *views;              /* n_tensors */
  ar_tview_t **node_io;           /* every node's input then output view pointers, one block sized
                                   * from the operators' counts at ar_interp_new */
  ar_node_t *nodes;               /* n_ops */
  const ar_kernel_t **kernels;    /* n_ops */
  bool *op_folded;                /* n_ops */
  ar_op_mode_t *op_mode;          /* n_ops: at invoke, folded, or at use (ar_lifetimes_op_modes) */
  int32_t *op_step;               /* n_ops: the step each operator runs at */
  int32_t *at_use_op;             /* n_tensors: the at-use DEQUANTIZE writing the tensor, or -1 */
  int32_t *fused_into;            /* n_ops: the DEPTHWISE_CONV_2D an expansion conv runs inside, or -1 */
  int32_t *extra_input;           /* n_ops: the input of the conv fused into it (lifetimes), or -1 */
  int32_t *pad_into;              /* n_ops: the DEPTHWISE_CONV_2D a PAD is folded into, or -1 */
  ar_options_t *own_options;      /* n_ops or NULL: options of a producer a RELU is folded into */
  bool *has_own_options;          /* n_ops or NULL: own_options[k] is operator k's (find_act_folds) */
  bool *elided;                   /* n_ops: a sparse filter's DENSIFY (-> DEQUANTIZE), not run: its
                                   * CONV_2D reads the sparse constant (find_sparse_filters) */
  uint64_t *scratch_bytes;        /* n_ops, 0 for folded operators */
  int32_t *scratch_buf;           /* n_ops, planner buffer or -1 */
  uint64_t *state_offset;         /* n_ops, offset of node state in the persistent region */
  int32_t *run_ops;               /* indices of the operators executed at invoke */
  int32_t n_run;

  ar_planner_t *planner;
  ar_planner_t *old_planner;      /* the plan before the last ar_interp_prepare, freed at the next:
                                   * a reader on another thread (stats) never sees it freed under it */
  ar_tensor_plan_t *tensor_plan;  /* n_tensors */
  uint64_t arena_bytes;
  uint64_t planner_persistent_bytes;  /* aligned; node state starts here */
  uint64_t persistent_bytes;
  uint64_t macs;

  bool placed;
  void *owned_activation, *owned_persistent;   /* from ar_interp_place_owned */
  ar_threadpool_t *pool;          /* the pool the nodes use: opt.pool, or own_pool */
  bool pool_split_seen;           /* an invoke of this interpreter shared work on the pool: later
                                   * invokes wake its helpers at the start (ar_interp_invoke) */
  bool invoked;                   /* at least one invoke has run */
  ar_threadpool_t *own_pool;      /* started at the first place when opt.threads > 1 */

  /* Resizing (ar_interp_resize_input, ar_interp_set_shape_input, ar_interp_prepare). */
  ar_tensor_t *cur;               /* n_tensors: the stored tensors with the current dims and bytes */
  bool dirty;                     /* shapes or shape values changed since the last prepare */
  uint8_t **snap;                 /* per graph input: value of an input that sets a shape, or NULL */
  bool *snap_valid;               /* per graph input: snap holds a value given by the caller */
  /* Values computed at prepare for operands that set shapes (ar_prepval.c). */
  bool *want_value;               /* n_tensors: feeds (maybe through a chain) such an operand */
  uint8_t **prep_val;             /* n_tensors: the prepare-time value's buffer, or NULL */
  void **prep_placed;             /* n_tensors: the placed data while kernel inits read prep_val */
};

struct rvar {
  const char *container, *shared_name;
  int32_t sg, op;                 /* the first VAR_HANDLE naming it, for messages */
  const ar_tensor_t *value;       /* the first ASSIGN_VARIABLE value writing it (dtype, shape) */
  int32_t value_sg, value_op;
  uint64_t bytes, offset;         /* offset in the state slot */
  uint8_t *data;                  /* set at place */
};

struct cf_op {
  ar_interp_t *parent;
  ar_op_t op;
  int32_t k, n_child;
  int32_t sub[2];
  ar_interp_t *child[2];
  uint64_t arena_bytes, state_bytes;
  uint64_t child_state_off[2];
  uint64_t copy_bytes;            /* per WHILE iteration (the loop values of kind CF_LOOP_COPY) /
                                   * per IF */
  /* WHILE's loop values (cf_check, cf_run): value i lives in the WHILE's output i (buffer A, the
   * parent's arena) or in its second buffer (B: loop_off[i] past the children's arena in the
   * operator's scratch); cond and body read it where it is, the body writes the next one in the
   * other buffer, and the two swap (never a copy) - unless the body's output cannot be pointed
   * elsewhere (CF_LOOP_COPY: one copy into the other buffer per iteration) or is its input
   * (CF_LOOP_PASS: the value stays in A). */
  int32_t n_loop;
  uint8_t *loop_kind;             /* n_loop: cf_loop_kind_t */
  uint64_t *loop_off;             /* n_loop: B's offset from the end of the children's arena */
  uint64_t loop_bytes;            /* the B buffers, 64-byte aligned each */
  uint8_t **cur, **next;          /* n_loop: where value i is / is written by this iteration */
  int64_t last_iterations;
  uint8_t *armed;                 /* CALL_ONCE: 0 until its init subgraph ran (in the state slot) */
};


/* ar_state.c: lay out the state slot of the model (root: the main graph's interpreter, its
 * children built), once after ar_interp_new and again after ar_interp_prepare. Allocates (the
 * piece and binding lists); returns 0 or AR_ENOMEM / AR_EOVERFLOW with a message. */
int ar__state_layout(ar_interp_t *root, char *msg, size_t msg_bytes);
/* ar_state.c: at the end of the root's place: a first place or a changed layout resets the
 * default slot; then the bound slot (or the default) is bound again. */
void ar__state_place(ar_interp_t *root, uint8_t *persistent);
void ar__state_free(ar_interp_t *root);

/* ar_prepval.c: values known at prepare (SHAPE of an input and what is computed from it and from
 * constants) for the operands whose values decide output shapes. init marks the wanted tensors
 * (AR_ENOMEM); eval, after operator k's prepare, computes k's outputs on buffers of their own and
 * sets their value_known when k feeds such an operand and every input it reads is known (else
 * clears value_known; AR_ENOMEM); free releases the buffers. */
int ar__prepval_init(ar_interp_t *in);
int ar__prepval_eval(ar_interp_t *in, int32_t k);
void ar__prepval_free(ar_interp_t *in);
/* At place, around the kernels' inits (which read operand values as prepare did, like the
 * snapshots of inputs that set shapes): at_values true points every computed tensor's view at its
 * prepare-time value, false puts the placed address back. */
void ar__prepval_point(ar_interp_t *in, bool at_values);

#endif /* AR_INTERP_INT_H */
