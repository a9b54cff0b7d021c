/* ar_budget.c - the budget table of a prepared interpreter: text, JSON and a swim-lane SVG.
 *
 * Reads the plan back from the interpreter (planner buffers, the tensor -> buffer map, the model
 * for names); writes nothing but the report. One row per planner buffer: its tensor (or the
 * operator owning a scratch buffer), class, bytes, offset, lifetime as the tensor sees it and the
 * tensor whose bytes it reuses. The SVG draws each buffer as a bar over its operators at its
 * offset; an in-place chain is drawn as the merged bar of its root.
 */
#include "interp/ar_budget.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "common/ar_text.h"
#include "common/ar_util.h"

static const char *class_name(ar_buf_class_t c) {
  switch (c) {
  case AR_BUF_ARENA: return "arena";
  case AR_BUF_PERSISTENT: return "persistent";
  case AR_BUF_SCRATCH: return "scratch";
  }
  return "unknown";
}

/* The lifetime convention the interpreter planned with. */
static ar_lifetimes_t plan_convention(const ar_interp_t *in) {
  return ar_interp_options(in)->lifetimes;
}

/* Tensor id of a buffer's alias target, or -1. */
static int32_t alias_tensor(const ar_planner_t *p, const ar_plan_buffer_t *b) {
  if (b->alias_of < 0) return -1;
  ar_plan_buffer_t a;
  if (ar_planner_buffer(p, b->alias_of, &a) != 0) return -1;
  return a.id;
}

/* Name of a buffer for reports: the tensor's name, or "scratch of operator k (OP)". */
static const char *buffer_name(const ar_interp_t *in, const ar_plan_buffer_t *b, char *tmp,
                               size_t n) {
  const ar_subgraph_t *sg = &ar_interp_model(in)->subgraphs[ar_interp_subgraph(in)];
  if (b->cls == AR_BUF_SCRATCH) {
    const char *op = b->id >= 0 && (uint32_t)b->id < sg->n_operators
                         ? ar_op_name(sg->operators[b->id].op)
                         : "?";
    snprintf(tmp, n, "scratch of operator %d (%s)", b->id, op);
    return tmp;
  }
  if (b->id >= 0 && (uint32_t)b->id < sg->n_tensors) return sg->tensors[b->id].name;
  return "";
}

static double ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 1.0; }

/* ---- tensors without a buffer ----
 * Every tensor of subgraph 0 is either a planner buffer's (a row of the table) or accounted for
 * here: a constant (its bytes stay in the model mapping), a tensor some fusion or stored-weights
 * rule made unnecessary (its producing operator never runs: which rule, and which operator does its
 * work or reads around it), or one nothing reads or writes. */
typedef struct unbuffered {
  const char *kind;     /* "constant", "elided", "unused", "state" (a variable: in the state slot) */
  const char *fusion;   /* elided: "inverted-residual", "pad-fold", "sparse-as-stored", "fp16-as-stored"; else "" */
  int32_t producer;     /* the operator that writes the tensor in the model, -1 */
  int32_t by;           /* elided: the operator doing its work (fusions) or reading around it; -1 */
  char reason[224];
} unbuffered_t;

/* Producer and first reader of every tensor (n_tensors entries each, -1 = none); 0 or AR_ENOMEM. */
static int producers_readers(const ar_subgraph_t *sg, int32_t **producer, int32_t **reader) {
  const uint32_t nt = sg->n_tensors;
  *producer = malloc((nt ? nt : 1) * sizeof(int32_t));
  *reader = malloc((nt ? nt : 1) * sizeof(int32_t));
  if (*producer == NULL || *reader == NULL) {
    free(*producer);
    free(*reader);
    *producer = *reader = NULL;
    return AR_ENOMEM;
  }
  for (uint32_t t = 0; t < nt; t++) (*producer)[t] = (*reader)[t] = -1;
  for (uint32_t k = 0; k < sg->n_operators; k++) {
    const ar_operator_t *op = &sg->operators[k];
    for (int32_t i = 0; i < op->n_inputs; i++) {
      const int32_t t = op->inputs[i];
      if (t >= 0 && (uint32_t)t < nt && (*reader)[t] < 0) (*reader)[t] = (int32_t)k;
    }
    for (int32_t o = 0; o < op->n_outputs; o++) {
      const int32_t t = op->outputs[o];
      if (t >= 0 && (uint32_t)t < nt && (*producer)[t] < 0) (*producer)[t] = (int32_t)k;
    }
  }
  return 0;
}

static const char *op_name_at(const ar_subgraph_t *sg, int32_t k) {
  return k >= 0 && (uint32_t)k < sg->n_operators ? ar_op_name(sg->operators[k].op) : "?";
}

/* Does tensor t have a row of its own in the table? */
static bool has_buffer(const ar_interp_t *in, int32_t t) {
  const ar_tensor_plan_t *tp = &ar_interp_tensor_plan(in)[t];
  return (tp->home == AR_HOME_ARENA || tp->home == AR_HOME_PERSISTENT) && tp->buffer >= 0;
}

/* Why tensor t (without a buffer) has none. */
static void classify(const ar_interp_t *in, int32_t t, const int32_t *producer, const int32_t *reader,
                     unbuffered_t *u) {
  const ar_subgraph_t *sg = &ar_interp_model(in)->subgraphs[0];
  const int32_t p = producer[t];
  *u = (unbuffered_t){.kind = "unused", .fusion = "", .producer = p, .by = -1};
  int32_t d;
  if (ar_interp_reads_in_place(in, t)) {
    *u = (unbuffered_t){.kind = "state", .fusion = "", .producer = p, .by = -1};
    snprintf(u->reason, sizeof u->reason, "READ_VARIABLE op %d reads the variable in place (its bytes in the state "
             "slot; nothing assigns it before this tensor's last reader)", (int)p);
  } else if (p < 0) {
    if (ar_interp_tensor_plan(in)[t].home == AR_HOME_CONSTANT) {
      u->kind = "constant";
      snprintf(u->reason, sizeof u->reason, "constant: read in place from the model mapping");
    } else if (ar_interp_tensor_plan(in)[t].home == AR_HOME_STATE) {
      u->kind = "state";
      snprintf(u->reason, sizeof u->reason, "variable: a piece of the state slot (state bytes per slot)");
    } else {
      snprintf(u->reason, sizeof u->reason, "no operator reads or writes it, nor is it a graph input or output");
    }
  } else if ((d = ar_interp_op_fused(in, p)) >= 0) {
    *u = (unbuffered_t){.kind = "elided", .fusion = "inverted-residual", .producer = p, .by = d};
    snprintf(u->reason, sizeof u->reason, "inverted-residual fusion: CONV_2D op %d runs inside DEPTHWISE_CONV_2D op %d "
             "band by band, so its output is never stored whole", (int)p, (int)d);
  } else if ((d = ar_interp_op_pad_folded(in, p)) >= 0) {
    *u = (unbuffered_t){.kind = "elided", .fusion = "pad-fold", .producer = p, .by = d};
    const bool add = sg->operators[d].op == AR_OP_ADD;
    snprintf(u->reason, sizeof u->reason, "PAD folding: PAD op %d does not run; %s op %d reads the PAD's input and "
             "supplies the zero %s itself", (int)p, op_name_at(sg, d), (int)d, add ? "channels" : "rows and columns");
  } else if (ar_interp_op_elided(in, p)) {
    /* The stored-weights chain: follow the readers past the elided links to the operator that
     * reads the constant as stored. */
    int32_t r = reader[t], guard = 0;
    while (r >= 0 && ar_interp_op_elided(in, r) && sg->operators[r].n_outputs > 0 && guard++ < 4) {
      const int32_t o = sg->operators[r].outputs[0];
      r = o >= 0 && (uint32_t)o < sg->n_tensors ? reader[o] : -1;
    }
    bool sparse = sg->operators[p].op == AR_OP_DENSIFY;
    for (int32_t i = 0; i < sg->operators[p].n_inputs && !sparse; i++) {
      const int32_t x = sg->operators[p].inputs[i];
      sparse = x >= 0 && (uint32_t)x < sg->n_tensors && producer[x] >= 0 &&
               sg->operators[producer[x]].op == AR_OP_DENSIFY;
    }
    *u = (unbuffered_t){.kind = "elided", .fusion = sparse ? "sparse-as-stored" : "fp16-as-stored", .producer = p,
                        .by = r};
    snprintf(u->reason, sizeof u->reason, "%s weights read as stored: %s op %d does not run; %s op %d reads the %s "
             "constant itself", sparse ? "sparse" : "fp16", op_name_at(sg, p), (int)p, op_name_at(sg, r), (int)r,
             sparse ? "sparse" : "float16");
  } else {
    snprintf(u->reason, sizeof u->reason, "%s op %d never runs: nothing reads its output", op_name_at(sg, p), (int)p);
  }
}

static bool has_control_flow(const ar_interp_t *in);
static uint64_t hierarchical_bound(const ar_interp_t *in);
static uint64_t separate_arenas(const ar_interp_t *in, bool *seen, int32_t n_sub);

static const char *const cf_roles[3][2] = {{"cond", "body"}, {"then", "else"}, {"init", ""}};

/* The control-flow operators of `in` as JSON, each with its children (and theirs). */
static json_t *control_flow_json(const ar_interp_t *in) {
  json_t *a = json_array();
  for (int32_t k = 0; a && k < ar_interp_n_operators(in); k++) {
    ar_cf_info_t info;
    if (ar_interp_control_flow(in, k, &info) != 0) continue;
    const int kind = info.op == AR_OP_WHILE ? 0 : info.op == AR_OP_IF ? 1 : 2;
    json_t *kids = json_array();
    for (int32_t j = 0; kids && j < info.n_children; j++) {
      json_t *c = json_pack("{s:s, s:i, s:I, s:I, s:o}", "role", cf_roles[kind][j], "subgraph", (int)info.subgraph[j],
                            "arena_bytes", (json_int_t)info.child_arena_bytes[j], "persistent_bytes",
                            (json_int_t)info.child_persistent_bytes[j], "control_flow",
                            control_flow_json(info.child[j]));
      if (!c || json_array_append_new(kids, c) != 0) {
        json_decref(kids);
        kids = NULL;
      }
    }
    json_t *o = kids ? json_pack("{s:i, s:i, s:s, s:I, s:I, s:I, s:I, s:o}", "subgraph", (int)ar_interp_subgraph(in),
                                 "operator", (int)k, "op", ar_op_name(info.op), "scratch_bytes",
                                 (json_int_t)(info.arena_bytes + info.loop_bytes), "loop_value_bytes",
                                 (json_int_t)info.loop_bytes, "state_bytes", (json_int_t)info.state_bytes,
                                 info.op == AR_OP_WHILE ? "copy_bytes_per_iteration" : "copy_bytes_per_invoke",
                                 (json_int_t)info.copy_bytes_per_iteration, "children", kids)
                     : NULL;
    if (!o || json_array_append_new(a, o) != 0) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

json_t *ar_budget_json(const ar_interp_t *in) {
  if (in == NULL) return NULL;
  const ar_planner_t *p = ar_interp_planner(in);
  const ar_subgraph_t *sg = &ar_interp_model(in)->subgraphs[ar_interp_subgraph(in)];
  ar_plan_figures_t f;
  ar_planner_figures(p, &f);
  json_t *root = json_object();
  json_t *bufs = json_array();
  if (root == NULL || bufs == NULL) {
    json_decref(root);
    json_decref(bufs);
    return NULL;
  }
  int bad = 0;
  bad |= json_object_set_new(root, "arena_bytes", json_integer((json_int_t)f.arena_bytes));
  bad |= json_object_set_new(root, "tensor_arena_bytes",
                             json_integer((json_int_t)f.tensor_arena_bytes));
  bad |= json_object_set_new(root, "lower_bound_bytes",
                             json_integer((json_int_t)f.lower_bound_bytes));
  bad |= json_object_set_new(root, "tensor_lower_bound_bytes",
                             json_integer((json_int_t)f.tensor_lower_bound_bytes));
  bad |= json_object_set_new(root, "naive_bytes", json_integer((json_int_t)f.naive_bytes));
  bad |= json_object_set_new(root, "persistent_bytes",
                             json_integer((json_int_t)ar_interp_persistent_bytes(in)));
  bad |= json_object_set_new(root, "persistent_tensor_bytes",
                             json_integer((json_int_t)f.persistent_bytes));
  bad |= json_object_set_new(root, "scratch_bytes", json_integer((json_int_t)f.scratch_bytes));
  bad |= json_object_set_new(root, "region_bytes",
                             json_integer((json_int_t)ar_interp_arena_bytes(in)));
  bad |= json_object_set_new(root, "alignment", json_integer((json_int_t)f.alignment));
  bad |= json_object_set_new(root, "strategy", json_string(ar_strategy_name(f.strategy)));
  bad |= json_object_set_new(root, "chosen", json_string(f.chosen ? f.chosen : ""));
  bad |= json_object_set_new(root, "lifetimes",
                             json_string(ar_lifetimes_name(plan_convention(in))));
  bad |= json_object_set_new(root, "ratio_to_bound",
                             json_real(ratio(f.arena_bytes, f.lower_bound_bytes)));
  bad |= json_object_set_new(root, "tensor_ratio_to_bound",
                             json_real(ratio(f.tensor_arena_bytes, f.tensor_lower_bound_bytes)));
  bad |= json_object_set_new(root, "operators", json_integer((json_int_t)sg->n_operators));
  ar_weight_figures_t wf;
  ar_interp_weight_figures(in, &wf);
  bad |= json_object_set_new(root, "weights", json_string(ar_weights_name(ar_interp_options(in)->weights)));
  bad |= json_object_set_new(root, "weights_bytes", json_integer((json_int_t)wf.weights_bytes));
  bad |= json_object_set_new(root, "folded_bytes", json_integer((json_int_t)wf.folded_bytes));
  bad |= json_object_set_new(root, "packed_bytes", json_integer((json_int_t)wf.packed_bytes));
  bad |= json_object_set_new(root, "widened_bytes", json_integer((json_int_t)wf.widened_bytes));
  uint64_t fused_bytes = 0;
  json_t *fused = json_array();
  for (int32_t k = 0; fused && k < (int32_t)sg->n_operators; k++) {
    const int32_t d = ar_interp_op_fused(in, k);
    if (d < 0) continue;
    const ar_tview_t *t = ar_interp_node(in, k)->outputs[0];
    fused_bytes += t->bytes;
    json_t *o = json_pack("{s:i, s:i, s:i, s:I}", "conv", (int)k, "depthwise", (int)d, "tensor",
                          (int)sg->operators[k].outputs[0], "bytes", (json_int_t)t->bytes);
    if (o == NULL || json_array_append_new(fused, o) != 0) bad = 1;
  }
  bad |= json_object_set_new(root, "fused", fused ? fused : json_null());
  if (has_control_flow(in)) {
    json_t *cf = control_flow_json(in);
    bad |= json_object_set_new(root, "control_flow", cf ? cf : json_null());
    bad |= json_object_set_new(root, "hierarchical_lower_bound_bytes", json_integer((json_int_t)hierarchical_bound(in)));
    const int32_t n_sub = (int32_t)ar_interp_model(in)->n_subgraphs;
    bool seen[256] = {false};
    bad |= json_object_set_new(root, "separate_arenas_bytes",
                               json_integer((json_int_t)(n_sub <= 256 ? separate_arenas(in, seen, n_sub) : 0)));
  }
  const int32_t nv = ar_interp_n_resource_vars(in);
  if (nv > 0) {
    json_t *vars = json_array();
    for (int32_t i = 0; vars && i < nv; i++) {
      const char *c = NULL, *name = NULL;
      uint64_t vb = 0, off = 0;
      ar_interp_resource_var(in, i, &c, &name, &vb, &off);
      json_t *o = json_pack("{s:s, s:s, s:I, s:I}", "container", c, "shared_name", name, "bytes", (json_int_t)vb,
                            "persistent_offset", (json_int_t)off);
      if (!o || json_array_append_new(vars, o) != 0) bad = 1;
    }
    bad |= json_object_set_new(root, "resource_variables", vars ? vars : json_null());
  }
  /* The state slot: bytes of one slot (a session's), and its pieces. */
  const int32_t np = ar_interp_n_state_pieces(in);
  if (np > 0) {
    json_t *pieces = json_array();
    for (int32_t i = 0; pieces && i < np; i++) {
      const char *name = NULL;
      int32_t sgi = 0;
      uint64_t off = 0, pbytes = 0;
      ar_interp_state_piece(in, i, &name, &sgi, &off, &pbytes);
      json_t *o = json_pack("{s:s, s:i, s:I, s:I}", "name", name, "subgraph", (int)sgi, "offset", (json_int_t)off,
                            "bytes", (json_int_t)pbytes);
      if (!o || json_array_append_new(pieces, o) != 0) bad = 1;
    }
    json_t *st = json_pack("{s:I, s:I, s:o}", "bytes_per_slot", (json_int_t)ar_interp_state_bytes(in),
                           "default_slot_persistent_offset", (json_int_t)ar_interp_default_state_offset(in), "pieces",
                           pieces ? pieces : json_null());
    bad |= json_object_set_new(root, "state", st ? st : json_null());
  }
  bad |= json_object_set_new(root, "fused_bytes", json_integer((json_int_t)fused_bytes));
  /* Every tensor without a row, with why (the table accounts for every tensor of subgraph 0). */
  int32_t *producer = NULL, *reader = NULL;
  json_t *nob = json_array();
  if (nob == NULL || producers_readers(sg, &producer, &reader) != 0) bad = 1;
  uint64_t counts[4] = {0, 0, 0, 0}, elided_bytes = 0, constant_bytes = 0;
  for (int32_t t = 0; !bad && t < (int32_t)sg->n_tensors; t++) {
    if (has_buffer(in, t)) continue;
    unbuffered_t u;
    classify(in, t, producer, reader, &u);
    const uint64_t bytes = sg->tensors[t].bytes;
    const int kind = u.kind[0] == 'c' ? 0 : u.kind[0] == 'e' ? 1 : u.kind[0] == 's' ? 3 : 2;
    counts[kind]++;
    if (kind == 0) constant_bytes += sg->tensors[t].data_bytes;
    if (kind == 1) elided_bytes += bytes;
    json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:s, s:s, s:i, s:s, s:i, s:s}", "tensor", (int)t, "name",
                          sg->tensors[t].name, "kind", u.kind, "bytes", (json_int_t)bytes, "fusion", u.fusion,
                          "reason", u.reason, "operator", (int)u.producer, "op",
                          u.producer >= 0 ? op_name_at(sg, u.producer) : "", "by_operator", (int)u.by, "by_op",
                          u.by >= 0 ? op_name_at(sg, u.by) : "");
    if (o == NULL || json_array_append_new(nob, o) != 0) bad = 1;
  }
  free(producer);
  free(reader);
  bad |= json_object_set_new(root, "no_buffer", nob ? nob : json_null());
  json_t *cnt = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "constant", (json_int_t)counts[0], "elided",
                          (json_int_t)counts[1], "unused", (json_int_t)counts[2], "state", (json_int_t)counts[3],
                          "constant_bytes",
                          (json_int_t)constant_bytes, "elided_bytes", (json_int_t)elided_bytes);
  bad |= json_object_set_new(root, "no_buffer_counts", cnt ? cnt : json_null());
  bad |= json_object_set_new(root, "tensors", json_integer((json_int_t)sg->n_tensors));
  int n = ar_planner_count(p);
  for (int i = 0; i < n && !bad; i++) {
    ar_plan_buffer_t b;
    char tmp[96];
    if (ar_planner_buffer(p, i, &b) != 0) continue;
    json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:I, s:i, s:i, s:i, s:i}",
                          "tensor", b.cls == AR_BUF_SCRATCH ? -1 : (int)b.id,
                          "name", buffer_name(in, &b, tmp, sizeof tmp),
                          "class", class_name(b.cls),
                          "size", (json_int_t)b.size_bytes,
                          "offset", (json_int_t)b.offset,
                          "first_use", (int)b.first_use,
                          "last_use", (int)b.last_use,
                          "alias_of", (int)alias_tensor(p, &b),
                          "operator", b.cls == AR_BUF_SCRATCH ? (int)b.id : -1);
    if (o == NULL || json_array_append_new(bufs, o) != 0) bad = 1;
  }
  bad |= json_object_set_new(root, "buffers", bufs);
  if (bad) {
    json_decref(root);
    return NULL;
  }
  return root;
}

static bool has_control_flow(const ar_interp_t *in) {
  ar_cf_info_t info;
  for (int32_t k = 0; k < ar_interp_n_operators(in); k++)
    if (ar_interp_control_flow(in, k, &info) == 0) return true;
  return false;
}

/* The hierarchical lower bound of `in`'s arena: at each step, the bytes of the arena and scratch
 * buffers live there (alias chains once), where a control-flow operator's scratch (its children's
 * plans) counts as the largest of its children's own bounds instead. 0 on a bad plan. */
static uint64_t hierarchical_bound(const ar_interp_t *in) {
  const ar_planner_t *p = ar_interp_planner(in);
  const int32_t steps = ar_planner_steps(p);
  if (steps <= 0) return 0;
  uint64_t best = 0;
  for (int32_t k = 0; k < steps; k++) {
    uint64_t live = 0;
    for (int b = 0; b < ar_planner_count(p); b++) {
      ar_plan_buffer_t pb;
      if (ar_planner_buffer(p, b, &pb) != 0 || pb.cls == AR_BUF_PERSISTENT || pb.root != b) continue;
      if (k < pb.live_first || k > pb.live_last) continue;
      ar_cf_info_t info;
      if (pb.cls == AR_BUF_SCRATCH && ar_interp_control_flow(in, pb.id, &info) == 0) {
        uint64_t c = 0;
        for (int32_t j = 0; j < info.n_children; j++) {
          const uint64_t h = hierarchical_bound(info.child[j]);
          if (h > c) c = h;
        }
        live += c;
      } else {
        live += pb.size_bytes;
      }
    }
    if (live > best) best = live;
  }
  return best;
}

/* TFLite's arenas for the same model: every subgraph its own tensor arena (the plan restricted to
 * tensors), all allocated at once; each subgraph counted once. `seen` marks subgraphs counted. */
static uint64_t separate_arenas(const ar_interp_t *in, bool *seen, int32_t n_sub) {
  const int32_t s = ar_interp_subgraph(in);
  uint64_t total = 0;
  if (s >= 0 && s < n_sub && !seen[s]) {
    seen[s] = true;
    ar_plan_figures_t f;
    ar_planner_figures(ar_interp_planner(in), &f);
    total += f.tensor_arena_bytes;
  }
  for (int32_t k = 0; k < ar_interp_n_operators(in); k++) {
    ar_cf_info_t info;
    if (ar_interp_control_flow(in, k, &info) != 0) continue;
    for (int32_t j = 0; j < info.n_children; j++) total += separate_arenas(info.child[j], seen, n_sub);
  }
  return total;
}

/* One line per control-flow operator of `in`, its children's below it, indented by depth. */
static void print_control_flow(FILE *out, const ar_interp_t *in, int depth) {
  const ar_planner_t *p = ar_interp_planner(in);
  for (int32_t k = 0; k < ar_interp_n_operators(in); k++) {
    ar_cf_info_t info;
    if (ar_interp_control_flow(in, k, &info) != 0) continue;
    const int kind = info.op == AR_OP_WHILE ? 0 : info.op == AR_OP_IF ? 1 : 2;
    uint64_t offset = 0;
    for (int b = 0; b < ar_planner_count(p); b++) {
      ar_plan_buffer_t pb;
      if (ar_planner_buffer(p, b, &pb) == 0 && pb.cls == AR_BUF_SCRATCH && pb.id == k) offset = pb.offset;
    }
    fprintf(out, "%*s", 2 * depth, "");
    if (ar_interp_subgraph(in) != 0) fprintf(out, "subgraph %d ", (int)ar_interp_subgraph(in));
    fprintf(out, "op %d %s:", (int)k, ar_op_name(info.op));
    for (int32_t j = 0; j < info.n_children; j++)
      fprintf(out, "%s %s subgraph %d (arena %" PRIu64 ", persistent %" PRIu64 ")", j ? "," : "", cf_roles[kind][j],
              (int)info.subgraph[j], info.child_arena_bytes[j], info.child_persistent_bytes[j]);
    fprintf(out, "; scratch %" PRIu64 " bytes at arena offset %" PRIu64 ", state %" PRIu64 " bytes",
            info.arena_bytes + info.loop_bytes, offset, info.state_bytes);
    if (info.op == AR_OP_WHILE)
      fprintf(out, "; loop values swapped with %" PRIu64 " bytes of it; copied per iteration %" PRIu64 " bytes",
              info.loop_bytes, info.copy_bytes_per_iteration);
    if (info.op == AR_OP_IF) fprintf(out, "; copied per invoke %" PRIu64 " bytes", info.copy_bytes_per_iteration);
    fputc('\n', out);
    for (int32_t j = 0; j < info.n_children; j++) print_control_flow(out, info.child[j], depth + 1);
  }
}

int ar_budget_print(FILE *out, const ar_interp_t *in) {
  if (out == NULL || in == NULL) return AR_EINVAL;
  const ar_planner_t *p = ar_interp_planner(in);
  const ar_subgraph_t *sg = &ar_interp_model(in)->subgraphs[ar_interp_subgraph(in)];
  ar_plan_figures_t f;
  ar_planner_figures(p, &f);
  fprintf(out, "%6s  %-44s %-10s %10s %10s %5s %5s %6s\n", "tensor", "name", "class", "bytes",
          "offset", "first", "last", "alias");
  int n = ar_planner_count(p);
  for (int i = 0; i < n; i++) {
    ar_plan_buffer_t b;
    char tmp[96], alias[16] = "-";
    if (ar_planner_buffer(p, i, &b) != 0) continue;
    int32_t a = alias_tensor(p, &b);
    if (a >= 0) snprintf(alias, sizeof alias, "%d", a);
    char id[16];
    if (b.cls == AR_BUF_SCRATCH) snprintf(id, sizeof id, "op%d", b.id);
    else snprintf(id, sizeof id, "%d", b.id);
    const char *name = buffer_name(in, &b, tmp, sizeof tmp);
    size_t len = strlen(name);
    /* Long TFLite names keep their informative tail. */
    const char *shown = len > 44 ? name + len - 44 : name;
    char esc[4 * 44 + 1];   /* model strings reach a terminal: control bytes as \xNN */
    shown = ar_escape_text(shown, esc, sizeof esc);
    fprintf(out, "%6s  %-44s %-10s %10" PRIu64 " %10" PRIu64 " %5d %5d %6s\n", id, shown,
            class_name(b.cls), b.size_bytes, b.offset, b.first_use, b.last_use, alias);
  }
  fprintf(out, "\nstrategy %s (%s), lifetimes %s, alignment %" PRIu64 ", %u operators\n",
          ar_strategy_name(f.strategy), f.chosen ? f.chosen : "-",
          ar_lifetimes_name(plan_convention(in)), f.alignment, sg->n_operators);
  fprintf(out, "arena            %12" PRIu64 " bytes (lower bound %" PRIu64 ", ratio %.4f)\n",
          f.arena_bytes, f.lower_bound_bytes, ratio(f.arena_bytes, f.lower_bound_bytes));
  fprintf(out, "tensor arena     %12" PRIu64 " bytes (lower bound %" PRIu64 ", ratio %.4f)\n",
          f.tensor_arena_bytes, f.tensor_lower_bound_bytes,
          ratio(f.tensor_arena_bytes, f.tensor_lower_bound_bytes));
  fprintf(out, "scratch          %12" PRIu64 " bytes (sum of scratch buffers)\n", f.scratch_bytes);
  fprintf(out, "naive            %12" PRIu64 " bytes (every buffer its own, reuse x%.2f)\n",
          f.naive_bytes, ratio(f.naive_bytes, f.arena_bytes));
  fprintf(out, "persistent       %12" PRIu64 " bytes (folded constants %" PRIu64
          " + kernel state)\n", ar_interp_persistent_bytes(in), f.persistent_bytes);
  ar_weight_figures_t wf;
  ar_interp_weight_figures(in, &wf);
  fprintf(out, "weights          %12" PRIu64 " bytes in the model mapping (%s weights); folded %" PRIu64
          " B + packed %" PRIu64 " B persistent; widened at use %" PRIu64 " B\n", wf.weights_bytes,
          ar_weights_name(ar_interp_options(in)->weights), wf.folded_bytes, wf.packed_bytes,
          wf.widened_bytes);
  uint64_t fused_bytes = 0;
  int32_t n_fused = 0;
  for (int32_t k = 0; k < (int32_t)sg->n_operators; k++)
    if (ar_interp_op_fused(in, k) >= 0) {
      n_fused++;
      fused_bytes += ar_interp_node(in, k)->outputs[0]->bytes;
    }
  fprintf(out, "fused            %12" PRIu64 " bytes of expansion-conv outputs without a buffer (%d "
          "CONV_2D run inside their DEPTHWISE_CONV_2D%s", fused_bytes, (int)n_fused, n_fused ? ":" : ")\n");
  for (int32_t k = 0, i = 0; k < (int32_t)sg->n_operators; k++) {
    const int32_t d = ar_interp_op_fused(in, k);
    if (d < 0) continue;
    fprintf(out, " %d->%d%s", (int)k, (int)d, ++i == n_fused ? ")\n" : ",");
  }
  /* The tensors without a row: constants and unused ones counted, elided ones one per line with
   * the rule and the operator that made them unnecessary. */
  int32_t *producer = NULL, *reader = NULL;
  if (producers_readers(sg, &producer, &reader) != 0) return AR_ENOMEM;
  uint64_t n_const = 0, const_bytes = 0, n_unused = 0, n_elided = 0, elided_bytes = 0;
  for (int32_t t = 0; t < (int32_t)sg->n_tensors; t++) {
    if (has_buffer(in, t)) continue;
    unbuffered_t u;
    classify(in, t, producer, reader, &u);
    if (u.kind[0] == 'c') n_const++, const_bytes += sg->tensors[t].data_bytes;
    else if (u.kind[0] == 'u') n_unused++;
    else n_elided++, elided_bytes += sg->tensors[t].bytes;
  }
  fprintf(out, "no buffer        %12" PRIu64 " bytes never stored: %" PRIu64 " tensor(s) elided%s %" PRIu64
          " constant(s) (%" PRIu64 " bytes in the model mapping), %" PRIu64 " unused, of %u tensors\n",
          elided_bytes, n_elided, n_elided ? " (below)," : ",", n_const, const_bytes, n_unused, sg->n_tensors);
  for (int32_t t = 0; t < (int32_t)sg->n_tensors; t++) {
    if (has_buffer(in, t)) continue;
    unbuffered_t u;
    classify(in, t, producer, reader, &u);
    if (u.kind[0] != 'e' && u.kind[0] != 'u') continue;
    const char *name = sg->tensors[t].name;
    size_t len = strlen(name);
    char esc[4 * 40 + 1];
    fprintf(out, "%6d  %-40s %-9s %10" PRIu64 "  %s\n", (int)t,
            ar_escape_text(len > 40 ? name + len - 40 : name, esc, sizeof esc), u.kind, sg->tensors[t].bytes,
            u.reason);
  }
  free(producer);
  free(reader);
  if (has_control_flow(in)) {
    fprintf(out, "control flow     each child subgraph's plan is its operator's scratch (live only at that "
            "step; children of one operator share it)\n");
    print_control_flow(out, in, 1);
    const uint64_t hb = hierarchical_bound(in);
    fprintf(out, "hierarchical     %12" PRIu64 " bytes lower bound over the subgraphs (a control-flow step "
            "counts its largest child's bound), arena ratio %.4f\n", hb, ratio(f.arena_bytes, hb));
    const int32_t n_sub = (int32_t)ar_interp_model(in)->n_subgraphs;
    bool seen_small[256] = {false};
    const uint64_t sep = n_sub <= 256 ? separate_arenas(in, seen_small, n_sub) : 0;
    fprintf(out, "separate arenas  %12" PRIu64 " bytes (TFLite: each subgraph its own tensor arena, all at "
            "once)\n", sep);
  }
  const int32_t np = ar_interp_n_state_pieces(in);
  if (np > 0)
    fprintf(out, "state slot       %12" PRIu64 " bytes per slot (each session's; the default one at persistent "
            "offset %" PRIu64 "), %d pieces:\n", ar_interp_state_bytes(in), ar_interp_default_state_offset(in),
            (int)np);
  for (int32_t i = 0; i < np; i++) {
    const char *name = NULL;
    int32_t sgi = 0;
    uint64_t off = 0, pbytes = 0;
    ar_interp_state_piece(in, i, &name, &sgi, &off, &pbytes);
    if (i == 12 && np > 13) {
      fprintf(out, "                 ... and %d more pieces (arenactl plan --json lists them)\n", (int)(np - 12));
      break;
    }
    size_t len = strlen(name);
    char esc[4 * 48 + 1];
    fprintf(out, "                 %8" PRIu64 " bytes at %8" PRIu64 "  subgraph %d  %s\n", pbytes, off, (int)sgi,
            ar_escape_text(len > 48 ? name + len - 48 : name, esc, sizeof esc));
  }
  const int32_t nv = ar_interp_n_resource_vars(in);
  for (int32_t i = 0; i < nv; i++) {
    const char *c = NULL, *name = NULL;
    uint64_t b = 0, off = 0;
    ar_interp_resource_var(in, i, &c, &name, &b, &off);
    fprintf(out, "%s '%s%s%s' %" PRIu64 " bytes at persistent offset %" PRIu64 "\n",
            i == 0 ? "resource vars   " : "                ", c, c[0] ? "/" : "", name, b, off);
  }
  return ferror(out) ? AR_EIO : 0;
}

/* ---- swim-lane SVG ---- */

/* A "nice" tick step near raw (1, 2 or 5 times a power of ten). */
static double nice_step(double raw) {
  double p = 1;
  while (p * 10 <= raw) p *= 10;
  while (p > raw && p > 1e-9) p /= 10;
  if (raw <= p) return p;
  if (raw <= 2 * p) return 2 * p;
  if (raw <= 5 * p) return 5 * p;
  return 10 * p;
}

int ar_budget_svg(FILE *out, const ar_interp_t *in, const char *title) {
  if (out == NULL || in == NULL) return AR_EINVAL;
  const ar_planner_t *p = ar_interp_planner(in);
  const ar_subgraph_t *sg = &ar_interp_model(in)->subgraphs[ar_interp_subgraph(in)];
  ar_plan_figures_t f;
  ar_planner_figures(p, &f);
  int32_t steps = (int32_t)sg->n_operators;
  if (ar_planner_steps(p) > steps) steps = ar_planner_steps(p);
  if (steps < 1) steps = 1;
  /* Plot box: about 3 px per operator (1200..2400 px), 720 px of offsets. */
  double plot_w = steps * 3.0;
  if (plot_w < 1200) plot_w = 1200;
  if (plot_w > 2400) plot_w = 2400;
  const double plot_h = 720, left = 90, top = 70, right = 250, bottom = 60;
  double sx = plot_w / steps;
  uint64_t ymax = AR_MAX(f.arena_bytes, f.lower_bound_bytes);
  if (ymax == 0) ymax = 1;
  double sy = plot_h / ((double)ymax * 1.04);
  double W = left + plot_w + right, H = top + plot_h + bottom;
  fprintf(out,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
          "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
          W, H, W, H);
  fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(out, "<text x=\"%.0f\" y=\"24\" font-size=\"16\" font-weight=\"bold\">", left);
  ar_xml_write_text(out, title ? title : "memory plan");
  fprintf(out, "</text>\n<text x=\"%.0f\" y=\"44\">strategy %s (%s), lifetimes %s: arena %.3f MiB, "
          "lower bound %.3f MiB (ratio %.4f), persistent %.3f MiB, %d operators</text>\n",
          left, ar_strategy_name(f.strategy), f.chosen ? f.chosen : "-",
          ar_lifetimes_name(plan_convention(in)), f.arena_bytes / 1048576.0,
          f.lower_bound_bytes / 1048576.0, ratio(f.arena_bytes, f.lower_bound_bytes),
          ar_interp_persistent_bytes(in) / 1048576.0, (int)sg->n_operators);
  double y0 = top + plot_h;   /* offset 0 */
  /* grid and axes */
  double ystep = nice_step((double)ymax / 8.0 / 1048576.0) * 1048576.0;  /* MiB ticks */
  for (double v = 0; v <= (double)ymax * 1.04; v += ystep) {
    double y = y0 - v * sy;
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
            left, y, left + plot_w, y);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.2f MiB</text>\n", left - 6,
            y + 4, v / 1048576.0);
  }
  double xstep = nice_step(steps / 12.0);
  if (xstep < 1) xstep = 1;
  for (double v = 0; v <= steps; v += xstep) {
    double x = left + v * sx;
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
            x, top, x, y0);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", x, y0 + 18,
            v);
  }
  fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">operator index "
          "(lifetime)</text>\n", left + plot_w / 2, y0 + 40);
  fprintf(out, "<text transform=\"translate(18,%.1f) rotate(-90)\" text-anchor=\"middle\">"
          "offset in the activation arena</text>\n", top + plot_h / 2);
  /* bars: roots with their merged lifetime; aliases add a darker band where they live */
  int n = ar_planner_count(p);
  for (int i = 0; i < n; i++) {
    ar_plan_buffer_t b;
    if (ar_planner_buffer(p, i, &b) != 0 || b.cls == AR_BUF_PERSISTENT || b.size_bytes == 0)
      continue;
    bool alias = b.root != i;
    int32_t first = alias ? b.first_use : b.live_first, last = alias ? b.last_use : b.live_last;
    double x = left + first * sx, w = (last - first + 1) * sx;
    double h = b.size_bytes * sy, y = y0 - (b.offset + b.size_bytes) * sy;
    if (h < 1) h = 1;
    const char *fill = b.cls == AR_BUF_SCRATCH ? "#f28e2b" : alias ? "#59a14f" : "#4e79a7";
    char tmp[96];
    fprintf(out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
            "fill-opacity=\"%s\" stroke=\"white\" stroke-width=\"0.5\"><title>",
            x, y, w, h, fill, alias ? "0.85" : "0.9");
    if (b.cls == AR_BUF_SCRATCH) fprintf(out, "op%d ", b.id);
    else fprintf(out, "tensor %d ", b.id);
    ar_xml_write_text(out, buffer_name(in, &b, tmp, sizeof tmp));
    fprintf(out, ": %" PRIu64 " bytes at %" PRIu64 ", operators %d..%d%s</title></rect>\n",
            b.size_bytes, b.offset, first, last, alias ? " (in-place alias)" : "");
  }
  /* arena and lower-bound lines */
  double ya = y0 - f.arena_bytes * sy, yb = y0 - f.lower_bound_bytes * sy;
  fprintf(out, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#d62728\" "
          "stroke-width=\"2\"/>\n", left, ya, left + plot_w, ya);
  fprintf(out, "<line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" stroke=\"#000000\" "
          "stroke-width=\"1.5\" stroke-dasharray=\"8 5\"/>\n", left, yb, left + plot_w, yb);
  fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
          "stroke=\"#444\"/>\n", left, top, plot_w, plot_h);
  /* legend */
  double lx = left + plot_w + 20, ly = top + 10;
  static const struct { const char *color, *label; } items[] = {
    {"#4e79a7", "arena tensor (merged lifetime)"},
    {"#59a14f", "in-place alias of the tensor below"},
    {"#f28e2b", "scratch buffer [k, k]"},
  };
  for (size_t i = 0; i < AR_ARRAY_LEN(items); i++, ly += 22) {
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"%s\"/>\n", lx,
            ly, items[i].color);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx + 20, ly + 11, items[i].label);
  }
  fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
          "stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\">arena %" PRIu64 " B</text>\n",
          lx, ly + 7, lx + 14, ly + 7, lx + 20, ly + 11, f.arena_bytes);
  ly += 22;
  fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" "
          "stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/><text x=\"%.1f\" y=\"%.1f\">"
          "lower bound %" PRIu64 " B</text>\n",
          lx, ly + 7, lx + 14, ly + 7, lx + 20, ly + 11, f.lower_bound_bytes);
  ly += 30;
  fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">persistent area (not drawn):</text>\n", lx, ly);
  fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%" PRIu64 " B</text>\n", lx, ly + 16,
          ar_interp_persistent_bytes(in));
  fprintf(out, "</svg>\n");
  return ferror(out) ? AR_EIO : 0;
}
