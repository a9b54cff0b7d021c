/* ar_planner.c - offsets for buffers with known lifetimes (see ar_planner.h).
 *
 * The caller adds buffers; ar_planner_plan folds alias chains into their roots (one item per root,
 * lifetime merged over the chain), computes the lower bound with a sweep over operator steps, and
 * packs the items in the activation arena with the strategy asked for. Packing places items one
 * at a time in some order; an item may not overlap in memory any already placed item whose
 * lifetime intersects its own. Those "conflicts" are found without scanning every placed item:
 * each step keeps the list of placed items live at it, and an item [f, l] conflicts exactly with
 * the items live at f plus the items born in (f, l]. The conflicts, sorted by offset, give the
 * free gaps; a fit rule picks one (TFLite's best fit, or the lowest that fits).
 *
 * BEST runs several orderings x fit rules (TFLite ArenaPlanner's exact rule first), keeps the
 * smallest arena, and stops as soon as a plan reaches the lower bound. Persistent buffers are
 * packed in a separate area, in order, never reused. Everything is deterministic: every sort
 * ends its key with the buffer index.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"   /* AR_DEBUG_VERIFY (--enable-debug-verify) */
#endif
#include "planner/ar_planner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "common/ar_util.h"

/* BEST's work budget, in conflicts examined plus lifetime steps registered while packing (a
 * deterministic measure of time). TFLite's candidate always runs; the other orderings and the
 * local search stop when the budget is spent. The 11 MediaPipe models need at most ~70k (about
 * 0.2 ms) to reach their bound; a 5000-operator graph spends it in ~3 ms. */
#define AR_PLAN_BEST_WORK 240000

/* Sizes above this are refused so that offset + size + alignment never wraps. */
#define AR_PLAN_MAX_BYTES (UINT64_C(1) << 60)

typedef struct pbuf {
  uint64_t size, offset;
  int32_t first, last;     /* as added */
  int32_t alias_of, id, root;
  ar_buf_class_t cls;
} pbuf_t;

struct ar_planner {
  uint64_t alignment;
  pbuf_t *b;
  int32_t *gfirst, *glast;   /* per buffer: for roots the lifetime merged over the alias chain */
  int n, cap;
  bool planned;
  int32_t steps;
  ar_plan_figures_t fig;
};

/* ---- names ---- */

const char *ar_strategy_name(ar_strategy_t s) {
  switch (s) {
  case AR_STRATEGY_LINEAR: return "linear";
  case AR_STRATEGY_FIRST_FIT: return "first-fit";
  case AR_STRATEGY_GREEDY_BY_SIZE: return "greedy-by-size";
  case AR_STRATEGY_BEST: return "best";
  }
  return "unknown";
}

int ar_strategy_parse(const char *name, ar_strategy_t *out) {
  static const ar_strategy_t all[] = {AR_STRATEGY_LINEAR, AR_STRATEGY_FIRST_FIT,
                                      AR_STRATEGY_GREEDY_BY_SIZE, AR_STRATEGY_BEST};
  if (name == NULL) return AR_EINVAL;
  for (size_t i = 0; i < AR_ARRAY_LEN(all); i++) {
    if (strcmp(name, ar_strategy_name(all[i])) == 0) {
      *out = all[i];
      return 0;
    }
  }
  return AR_EINVAL;
}

/* ---- life cycle ---- */

ar_planner_t *ar_planner_new(uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > (UINT64_C(1) << 20))
    return NULL;
  ar_planner_t *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  p->alignment = alignment;
  return p;
}

void ar_planner_free(ar_planner_t *p) {
  if (p == NULL) return;
  free(p->b);
  free(p->gfirst);
  free(p->glast);
  free(p);
}

int ar_planner_add(ar_planner_t *p, uint64_t size_bytes, int32_t first_use, int32_t last_use,
                   ar_buf_class_t cls, int32_t alias_of, int32_t id) {
  if (p == NULL || first_use < 0 || last_use < first_use) return AR_EINVAL;
  if (cls != AR_BUF_ARENA && cls != AR_BUF_PERSISTENT && cls != AR_BUF_SCRATCH) return AR_EINVAL;
  if (size_bytes > AR_PLAN_MAX_BYTES) return AR_EOVERFLOW;
  int32_t root = p->n;
  if (alias_of >= 0) {
    if (alias_of >= p->n) return AR_EINVAL;
    root = p->b[alias_of].root;
    /* An alias reuses its root's bytes: it can be neither larger nor of another class. */
    if (size_bytes > p->b[root].size || cls != p->b[root].cls) return AR_EINVAL;
  } else if (alias_of != -1) {
    return AR_EINVAL;
  }
  if (p->n == INT32_MAX) return AR_EOVERFLOW;
  if (p->n == p->cap) {
    int ncap = p->cap ? p->cap * 2 : 64;
    if (ncap < p->cap) return AR_EOVERFLOW;
    pbuf_t *nb = realloc(p->b, (size_t)ncap * sizeof *nb);
    if (nb == NULL) return AR_ENOMEM;
    p->b = nb;
    int32_t *nf = realloc(p->gfirst, (size_t)ncap * sizeof *nf);
    if (nf == NULL) return AR_ENOMEM;
    p->gfirst = nf;
    int32_t *nl = realloc(p->glast, (size_t)ncap * sizeof *nl);
    if (nl == NULL) return AR_ENOMEM;
    p->glast = nl;
    p->cap = ncap;
  }
  int i = p->n++;
  p->b[i] = (pbuf_t){.size = size_bytes, .offset = 0, .first = first_use, .last = last_use,
                     .alias_of = alias_of, .id = id, .root = root, .cls = cls};
  p->gfirst[i] = first_use;
  p->glast[i] = last_use;
  /* An alias extends its root's lifetime: the root's bytes must hold until the alias dies. */
  if (root != i) {
    p->gfirst[root] = AR_MIN(p->gfirst[root], first_use);
    p->glast[root] = AR_MAX(p->glast[root], last_use);
  }
  p->planned = false;
  return i;
}

int ar_planner_count(const ar_planner_t *p) { return p ? p->n : 0; }

uint64_t ar_planner_offset(const ar_planner_t *p, int buf) {
  if (p == NULL || buf < 0 || buf >= p->n) return 0;
  return p->b[buf].offset;
}

int ar_planner_buffer(const ar_planner_t *p, int buf, ar_plan_buffer_t *out) {
  if (p == NULL || out == NULL || buf < 0 || buf >= p->n) return AR_EINVAL;
  const pbuf_t *b = &p->b[buf];
  *out = (ar_plan_buffer_t){.size_bytes = b->size, .offset = b->offset, .first_use = b->first,
                            .last_use = b->last, .cls = b->cls, .alias_of = b->alias_of,
                            .id = b->id, .root = b->root, .live_first = p->gfirst[b->root],
                            .live_last = p->glast[b->root]};
  return 0;
}

int32_t ar_planner_steps(const ar_planner_t *p) { return p ? p->steps : 0; }

void ar_planner_figures(const ar_planner_t *p, ar_plan_figures_t *out) {
  if (p == NULL || out == NULL) return;
  *out = p->fig;
}

/* ---- sorting (own quicksort: qsort's indirect comparator costs too much per candidate) ---- */

typedef struct skey { uint64_t a, b, c; int32_t i; } skey_t;

static inline bool skey_lt(const skey_t *x, const skey_t *y) {
  if (x->a != y->a) return x->a < y->a;
  if (x->b != y->b) return x->b < y->b;
  if (x->c != y->c) return x->c < y->c;
  return x->i < y->i;
}

static void skey_sort(skey_t *v, int n) {
  while (n > 16) {
    /* median of three as pivot */
    int m = n / 2;
    if (skey_lt(&v[m], &v[0])) { skey_t t = v[m]; v[m] = v[0]; v[0] = t; }
    if (skey_lt(&v[n - 1], &v[0])) { skey_t t = v[n - 1]; v[n - 1] = v[0]; v[0] = t; }
    if (skey_lt(&v[n - 1], &v[m])) { skey_t t = v[n - 1]; v[n - 1] = v[m]; v[m] = t; }
    skey_t piv = v[m];
    int i = 0, j = n - 1;
    for (;;) {
      while (skey_lt(&v[i], &piv)) i++;
      while (skey_lt(&piv, &v[j])) j--;
      if (i >= j) break;
      skey_t t = v[i]; v[i] = v[j]; v[j] = t;
      i++;
      j--;
    }
    /* recurse into the smaller half, loop on the larger (bounded stack) */
    int left = j + 1;
    if (left < n - left) {
      skey_sort(v, left);
      v += left;
      n -= left;
    } else {
      skey_sort(v + left, n - left);
      n = left;
    }
  }
  for (int i = 1; i < n; i++) {
    skey_t x = v[i];
    int j = i - 1;
    while (j >= 0 && skey_lt(&x, &v[j])) { v[j + 1] = v[j]; j--; }
    v[j + 1] = x;
  }
}

/* A placed item as seen by a new one: [off, end) in bytes. */
typedef struct span { uint64_t off, end; } span_t;

static void span_sort(span_t *v, int n) {
  while (n > 16) {
    int m = n / 2;
    if (v[m].off < v[0].off) { span_t t = v[m]; v[m] = v[0]; v[0] = t; }
    if (v[n - 1].off < v[0].off) { span_t t = v[n - 1]; v[n - 1] = v[0]; v[0] = t; }
    if (v[n - 1].off < v[m].off) { span_t t = v[n - 1]; v[n - 1] = v[m]; v[m] = t; }
    uint64_t piv = v[m].off;
    int i = 0, j = n - 1;
    for (;;) {
      while (v[i].off < piv) i++;
      while (piv < v[j].off) j--;
      if (i >= j) break;
      span_t t = v[i]; v[i] = v[j]; v[j] = t;
      i++;
      j--;
    }
    int left = j + 1;
    if (left < n - left) {
      span_sort(v, left);
      v += left;
      n -= left;
    } else {
      span_sort(v + left, n - left);
      n = left;
    }
  }
  for (int i = 1; i < n; i++) {
    span_t x = v[i];
    int j = i - 1;
    while (j >= 0 && x.off < v[j].off) { v[j + 1] = v[j]; j--; }
    v[j + 1] = x;
  }
}

/* ---- packing workspace ---- */

typedef struct item {
  uint64_t size;
  int32_t first, last;   /* merged lifetime, on the (possibly compressed) step axis */
  int32_t buf;           /* root buffer index */
  bool scratch;
  bool whole;            /* born at step 0 and alive to the last step (TFLite sorts these first) */
} item_t;

typedef enum fit_rule {
  FIT_TFLITE = 0,  /* SimpleMemoryArena: smallest gap that fits, as TFLite measures it */
  FIT_FIRST = 1,   /* lowest gap that fits */
} fit_rule_t;

typedef struct ws {
  int n;                  /* items */
  item_t *it;
  int32_t T;              /* steps on the packing axis */
  int64_t *live_base;     /* per step: start of its slice in `live` */
  int32_t *live_cnt;
  int32_t *live;          /* items live at each step (placed so far) */
  int64_t *start_base;
  int32_t *start_cnt;
  int32_t *starts;        /* items born at each step (placed so far) */
  uint64_t *live_bytes;   /* per step: bytes of all items live there (for the bound/breadth) */
  uint64_t *off;          /* offsets of the candidate being packed */
  uint64_t *best_off;     /* offsets of the best candidate so far */
  span_t *conf;
  skey_t *keys;
  int32_t *order;
  int32_t *order2;
  int32_t max_last;
} ws_t;

static void ws_free(ws_t *w) {
  free(w->it); free(w->live_base); free(w->live_cnt); free(w->live);
  free(w->start_base); free(w->start_cnt); free(w->starts); free(w->live_bytes);
  free(w->off); free(w->best_off); free(w->conf); free(w->keys); free(w->order); free(w->order2);
}

/* Pack items in `order` with `fit`; offsets into w->off. Returns the arena end; *tensor_end gets
 * the end restricted to non-scratch items. */
static uint64_t pack(ws_t *w, const int32_t *order, fit_rule_t fit, uint64_t align,
                     uint64_t *tensor_end, int64_t *work) {
  memset(w->live_cnt, 0, (size_t)w->T * sizeof *w->live_cnt);
  memset(w->start_cnt, 0, (size_t)w->T * sizeof *w->start_cnt);
  uint64_t top = 0, ttop = 0;
  for (int oi = 0; oi < w->n; oi++) {
    int32_t i = order[oi];
    const item_t *x = &w->it[i];
    int k = 0;
    /* Conflicts: live at `first`, plus born strictly inside (first, last]. */
    const int32_t *lv = w->live + w->live_base[x->first];
    for (int32_t j = 0, c = w->live_cnt[x->first]; j < c; j++) {
      int32_t o = lv[j];
      w->conf[k++] = (span_t){w->off[o], w->off[o] + w->it[o].size};
    }
    for (int32_t t = x->first + 1; t <= x->last; t++) {
      const int32_t *st = w->starts + w->start_base[t];
      for (int32_t j = 0, c = w->start_cnt[t]; j < c; j++) {
        int32_t o = st[j];
        w->conf[k++] = (span_t){w->off[o], w->off[o] + w->it[o].size};
      }
    }
    span_sort(w->conf, k);
    *work += 1 + k + (x->last - x->first);
    uint64_t size = x->size, cur = 0, best = UINT64_MAX, best_fit = UINT64_MAX;
    for (int j = 0; j < k; j++) {
      const span_t *s = &w->conf[j];
      uint64_t a = ar_align_up(cur, align);
      if (fit == FIT_TFLITE) {
        /* TFLite SimpleMemoryArena::Allocate: the test uses the aligned gap, the recorded fit
         * the unaligned one; a zero fit ends the search. */
        if (a + size <= s->off && s->off - a < best_fit) {
          best = a;
          best_fit = s->off - cur;
        }
        cur = AR_MAX(cur, s->end);
        if (best_fit == 0) break;
      } else {
        if (a + size <= s->off) {
          best = a;
          break;
        }
        cur = AR_MAX(cur, s->end);
      }
    }
    if (best == UINT64_MAX) best = ar_align_up(cur, align);
    w->off[i] = best;
    uint64_t end = best + size;
    if (end > top) top = end;
    if (!x->scratch && end > ttop) ttop = end;
    for (int32_t t = x->first; t <= x->last; t++) w->live[w->live_base[t] + w->live_cnt[t]++] = i;
    w->starts[w->start_base[x->first] + w->start_cnt[x->first]++] = i;
  }
  *tensor_end = ttop;
  return top;
}

/* ---- orderings ---- */

enum {
  ORD_TFLITE = 0,   /* whole-invoke buffers first (by index), then size desc, birth asc */
  ORD_SIZE,         /* size desc, birth asc */
  ORD_SIZE_LEN,     /* size desc, lifetime length desc */
  ORD_BREADTH,      /* peak live bytes over the lifetime desc, size desc */
  ORD_LEN_SIZE,     /* lifetime length desc, size desc */
  ORD_AREA,         /* size x length desc */
  ORD_BIRTH_SIZE,   /* birth asc, size desc */
  ORD_DEATH_SIZE,   /* death desc, size desc */
  ORD_BIRTH,        /* birth asc, index (the first-fit strategy's order) */
  ORD_COUNT
};

#define CAND_NAMES(o)                                                                     \
  {{{o "/tflite-best-fit", o "/tflite-best-fit/peak-first"},                            \
    {o "/tflite-best-fit/tensors-first", o "/tflite-best-fit/tensors-first/peak-first"}}, \
   {{o "/first-fit", o "/first-fit/peak-first"},                                          \
    {o "/first-fit/tensors-first", o "/first-fit/tensors-first/peak-first"}}}
/* [ordering][fit][tensors_first][peak_first] */
static const char *const cand_names[ORD_COUNT][2][2][2] = {
  CAND_NAMES("tflite-order"), CAND_NAMES("size"), CAND_NAMES("size-length"),
  CAND_NAMES("breadth"), CAND_NAMES("length-size"), CAND_NAMES("area"),
  CAND_NAMES("birth-size"), CAND_NAMES("death-size"), CAND_NAMES("birth"),
};

/* Fill w->order with ordering `ord`; with tensors_first, scratch items go after all tensors
 * (tensors are then packed as if scratch did not exist, scratch fills the holes). */
static void make_order(ws_t *w, int ord, bool tensors_first) {
  for (int i = 0; i < w->n; i++) {
    const item_t *x = &w->it[i];
    uint64_t len = (uint64_t)(x->last - x->first + 1);
    uint64_t a = 0, b = 0, c = 0;
    switch (ord) {
    case ORD_TFLITE: {
      /* TFLite CreateTensorAllocationVector: buffers alive for the whole invoke first, by index;
       * the others by size desc, then allocation step asc (then index: std::sort leaves that
       * tie unspecified, we make it deterministic). */
      bool whole = x->whole;
      a = whole ? 0 : 1;
      b = whole ? 0 : ~x->size;
      c = whole ? 0 : (uint64_t)x->first;
      break;
    }
    case ORD_SIZE: a = ~x->size; b = (uint64_t)x->first; break;
    case ORD_SIZE_LEN: a = ~x->size; b = ~len; break;
    case ORD_BREADTH: {
      uint64_t br = 0;
      for (int32_t t = x->first; t <= x->last; t++) br = AR_MAX(br, w->live_bytes[t]);
      a = ~br;
      b = ~x->size;
      c = (uint64_t)x->first;
      break;
    }
    case ORD_LEN_SIZE: a = ~len; b = ~x->size; break;
    case ORD_AREA: {
      uint64_t area;
      if (__builtin_mul_overflow(x->size, len, &area)) area = UINT64_MAX;
      a = ~area;
      b = ~x->size;
      break;
    }
    case ORD_BIRTH_SIZE: a = (uint64_t)x->first; b = ~x->size; break;
    case ORD_DEATH_SIZE: a = ~(uint64_t)x->last; b = ~x->size; break;
    case ORD_BIRTH: default: a = (uint64_t)x->first; break;
    }
    w->keys[i] = (skey_t){a, b, c, i};
  }
  skey_sort(w->keys, w->n);
  for (int i = 0; i < w->n; i++) w->order[i] = w->keys[i].i;
  if (tensors_first) {
    int k = 0;
    for (int i = 0; i < w->n; i++)
      if (!w->it[w->order[i]].scratch) w->order2[k++] = w->order[i];
    for (int i = 0; i < w->n; i++)
      if (w->it[w->order[i]].scratch) w->order2[k++] = w->order[i];
    memcpy(w->order, w->order2, (size_t)w->n * sizeof *w->order);
  }
}

/* ---- planning ---- */

typedef struct cand {
  int ord;
  fit_rule_t fit;
  bool tensors_first;
} cand_t;

/* Keep the candidate in w->off if it beats the best so far: smaller arena, then smaller tensor
 * part (the figure comparable with TFLite's), then the earlier candidate. */
static bool keep_if_better(ws_t *w, uint64_t top, uint64_t ttop, uint64_t *best_top,
                           uint64_t *best_ttop) {
  if (top < *best_top || (top == *best_top && ttop < *best_ttop)) {
    *best_top = top;
    *best_ttop = ttop;
    memcpy(w->best_off, w->off, (size_t)w->n * sizeof *w->off);
    return true;
  }
  return false;
}

static int build_ws(ar_planner_t *p, ws_t *w, uint64_t *lb, uint64_t *tlb) {
  memset(w, 0, sizeof *w);
  int n = 0;
  int32_t max_last = -1;
  for (int i = 0; i < p->n; i++) {
    const pbuf_t *b = &p->b[i];
    if (b->root != i || b->cls == AR_BUF_PERSISTENT) continue;
    max_last = AR_MAX(max_last, p->glast[i]);
    if (b->size > 0) n++;
  }
  p->steps = max_last + 1;
  w->n = n;
  size_t nn = (size_t)(n > 0 ? n : 1);
  w->it = malloc(nn * sizeof *w->it);
  w->off = malloc(nn * sizeof *w->off);
  w->best_off = malloc(nn * sizeof *w->best_off);
  w->conf = malloc(nn * sizeof *w->conf);
  w->keys = malloc(nn * sizeof *w->keys);
  w->order = malloc(nn * sizeof *w->order);
  w->order2 = malloc(nn * sizeof *w->order2);
  if (!w->it || !w->off || !w->best_off || !w->conf || !w->keys || !w->order || !w->order2)
    return AR_ENOMEM;
  int k = 0;
  int32_t item_last = -1;
  for (int i = 0; i < p->n; i++) {
    const pbuf_t *b = &p->b[i];
    if (b->root != i || b->cls == AR_BUF_PERSISTENT || b->size == 0) continue;
    item_last = AR_MAX(item_last, p->glast[i]);
  }
  for (int i = 0; i < p->n; i++) {
    const pbuf_t *b = &p->b[i];
    if (b->root != i || b->cls == AR_BUF_PERSISTENT || b->size == 0) continue;
    w->it[k++] = (item_t){.size = b->size, .first = p->gfirst[i], .last = p->glast[i], .buf = i,
                          .scratch = b->cls == AR_BUF_SCRATCH,
                          .whole = p->gfirst[i] == 0 && p->glast[i] == item_last};
  }
  /* The step axis: operator indices, or (when they are sparse, e.g. a caller numbering steps
   * in microseconds) the ranks of the distinct birth steps. Two lifetimes intersect iff
   * max(first) <= min(last), and max(first) is a birth step, so mapping each last to the rank of
   * the latest birth <= last keeps every intersection and the bound. */
  int64_t span = (int64_t)max_last + 1;
  if (span > 4 * (int64_t)n + 64) {
    for (int i = 0; i < n; i++) w->keys[i] = (skey_t){(uint64_t)w->it[i].first, 0, 0, i};
    skey_sort(w->keys, n);
    int d = 0;
    for (int i = 0; i < n; i++)
      if (d == 0 || w->keys[d - 1].a != w->keys[i].a) w->keys[d++].a = w->keys[i].a;
    for (int i = 0; i < n; i++) {
      item_t *x = &w->it[i];
      int lo = 0, hi = d;   /* first index with key > v */
      uint64_t v = (uint64_t)x->last;
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (w->keys[mid].a <= v) lo = mid + 1; else hi = mid;
      }
      int32_t nl = lo - 1;
      lo = 0, hi = d;
      v = (uint64_t)x->first;
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (w->keys[mid].a < v) lo = mid + 1; else hi = mid;
      }
      x->first = lo;
      x->last = nl;
    }
    span = d;
  }
  w->T = (int32_t)(span > 0 ? span : 1);
  size_t T = (size_t)w->T;
  w->live_base = calloc(T + 1, sizeof *w->live_base);
  w->live_cnt = calloc(T, sizeof *w->live_cnt);
  w->start_base = calloc(T + 1, sizeof *w->start_base);
  w->start_cnt = calloc(T, sizeof *w->start_cnt);
  w->live_bytes = calloc(T + 1, sizeof *w->live_bytes);
  uint64_t *tdiff = calloc(T + 1, sizeof *tdiff);
  if (!w->live_base || !w->live_cnt || !w->start_base || !w->start_cnt || !w->live_bytes ||
      !tdiff) {
    free(tdiff);
    return AR_ENOMEM;
  }
  /* Counts per step (as difference arrays), then prefix sums give each step's slice. */
  w->max_last = 0;
  for (int i = 0; i < n; i++) {
    const item_t *x = &w->it[i];
    w->live_base[x->first + 1]++;    /* temporarily: +1 at first, -1 after last (shifted) */
    if ((size_t)x->last + 2 <= T) w->live_base[x->last + 2]--;
    w->start_cnt[x->first]++;
    w->live_bytes[x->first] += x->size;
    w->live_bytes[x->last + 1] -= x->size;
    if (!x->scratch) {
      tdiff[x->first] += x->size;
      tdiff[x->last + 1] -= x->size;
    }
    w->max_last = AR_MAX(w->max_last, x->last);
  }
  /* live count per step = prefix sum of the shifted difference array */
  int64_t run = 0, total = 0;
  uint64_t bytes = 0, tbytes = 0;
  *lb = 0;
  *tlb = 0;
  for (size_t t = 0; t < T; t++) {
    run += w->live_base[t + 1];
    int64_t cnt = run;
    w->live_base[t] = total;
    total += cnt;
    bytes += w->live_bytes[t];
    tbytes += tdiff[t];
    w->live_bytes[t] = bytes;
    *lb = AR_MAX(*lb, bytes);
    *tlb = AR_MAX(*tlb, tbytes);
  }
  w->live_base[T] = total;
  free(tdiff);
  int64_t stotal = 0;
  for (size_t t = 0; t < T; t++) {
    w->start_base[t] = stotal;
    stotal += w->start_cnt[t];
  }
  w->start_base[T] = stotal;
  w->live = malloc((size_t)(total > 0 ? total : 1) * sizeof *w->live);
  w->starts = malloc((size_t)(stotal > 0 ? stotal : 1) * sizeof *w->starts);
  if (!w->live || !w->starts) return AR_ENOMEM;
  return 0;
}

/* Move the items that reach the arena top to the front of the order (keeping their relative
 * order): they were pushed up by earlier items, so placing them first often closes the gap to
 * the bound. Returns false when nothing would change. */
static bool promote_peak(ws_t *w, const int32_t *order, uint64_t top) {
  int k = 0;
  for (int i = 0; i < w->n; i++)
    if (w->best_off[order[i]] + w->it[order[i]].size == top) w->order2[k++] = order[i];
  if (k == 0 || k == w->n) return false;
  bool same = true;
  for (int i = 0; i < k; i++) same = same && w->order2[i] == order[i];
  if (same) return false;
  for (int i = 0; i < w->n; i++)
    if (w->best_off[order[i]] + w->it[order[i]].size != top) w->order2[k++] = order[i];
  return true;
}

int ar_planner_plan(ar_planner_t *p, ar_strategy_t strategy) {
  if (p == NULL) return AR_EINVAL;
  if (strategy != AR_STRATEGY_LINEAR && strategy != AR_STRATEGY_FIRST_FIT &&
      strategy != AR_STRATEGY_GREEDY_BY_SIZE && strategy != AR_STRATEGY_BEST)
    return AR_EINVAL;
  p->planned = false;
  ws_t w;
  uint64_t lb = 0, tlb = 0;
  int rc = build_ws(p, &w, &lb, &tlb);
  if (rc != 0) {
    ws_free(&w);
    return rc;
  }
  const uint64_t align = p->alignment;
  bool any_scratch = false;
  for (int i = 0; i < w.n; i++) any_scratch = any_scratch || w.it[i].scratch;
  const char *chosen = ar_strategy_name(strategy);
  uint64_t best_top = UINT64_MAX, best_ttop = UINT64_MAX;

  if (strategy == AR_STRATEGY_LINEAR) {
    /* SimpleMemoryArena with no reuse: each buffer its own aligned block, in buffer order. */
    uint64_t cur = 0, ttop = 0;
    for (int i = 0; i < w.n; i++) {
      w.best_off[i] = ar_align_up(cur, align);
      cur = w.best_off[i] + w.it[i].size;
      if (!w.it[i].scratch) ttop = cur;
    }
    best_top = cur;
    best_ttop = ttop;
  } else if (strategy == AR_STRATEGY_FIRST_FIT) {
    make_order(&w, ORD_BIRTH, false);
    int64_t work = 0;
    uint64_t ttop, top = pack(&w, w.order, FIT_FIRST, align, &ttop, &work);
    keep_if_better(&w, top, ttop, &best_top, &best_ttop);
  } else if (strategy == AR_STRATEGY_GREEDY_BY_SIZE) {
    make_order(&w, ORD_TFLITE, false);
    int64_t work = 0;
    uint64_t ttop, top = pack(&w, w.order, FIT_TFLITE, align, &ttop, &work);
    keep_if_better(&w, top, ttop, &best_top, &best_ttop);
  } else {
    /* The no-reuse layout can beat a greedy one by a few bytes of alignment padding (the
     * greedy top buffer sits on an aligned offset; linear ends on an unaligned size). */
    {
      uint64_t cur = 0, ttop = 0;
      for (int i = 0; i < w.n; i++) {
        w.off[i] = ar_align_up(cur, align);
        cur = w.off[i] + w.it[i].size;
        if (!w.it[i].scratch) ttop = cur;
      }
      keep_if_better(&w, cur, ttop, &best_top, &best_ttop);
    }
    /* TFLite's exact rule first: BEST is never worse than TFLite's ArenaPlanner. */
    static const int ords[] = {ORD_TFLITE, ORD_SIZE_LEN, ORD_BREADTH, ORD_SIZE, ORD_LEN_SIZE,
                               ORD_AREA, ORD_BIRTH_SIZE, ORD_DEATH_SIZE, ORD_BIRTH};
    int32_t *win_order = malloc((size_t)(w.n > 0 ? w.n : 1) * sizeof *win_order);
    if (win_order == NULL) {
      ws_free(&w);
      return AR_ENOMEM;
    }
    cand_t win = {ORD_TFLITE, FIT_TFLITE, false};
    bool at_bound = false, linear_won = best_top != UINT64_MAX;
    /* Work (conflicts looked at + steps registered) is the deterministic stand-in for time: the
     * first candidate always runs, the others and the search only within the budget. */
    int64_t work = 0;
    for (int tf = 0; tf < (any_scratch ? 2 : 1) && !at_bound && work < AR_PLAN_BEST_WORK; tf++) {
      for (size_t oi = 0; oi < AR_ARRAY_LEN(ords) && !at_bound && work < AR_PLAN_BEST_WORK; oi++) {
        make_order(&w, ords[oi], tf == 1);
        for (int fit = 0; fit < 2 && !at_bound && work < AR_PLAN_BEST_WORK; fit++) {
          uint64_t ttop, top = pack(&w, w.order, (fit_rule_t)fit, align, &ttop, &work);
          if (keep_if_better(&w, top, ttop, &best_top, &best_ttop)) {
            linear_won = false;
            win = (cand_t){ords[oi], (fit_rule_t)fit, tf == 1};
            memcpy(win_order, w.order, (size_t)w.n * sizeof *win_order);
          }
          at_bound = best_top <= lb && best_ttop <= tlb;
        }
      }
    }
    chosen = linear_won ? "linear" : cand_names[win.ord][win.fit][win.tensors_first][0];
    /* Not at the bound: a few rounds of moving the items at the top to the front. */
    for (int round = 0; round < 8 && !at_bound && !linear_won && work < AR_PLAN_BEST_WORK;
         round++) {
      if (!promote_peak(&w, win_order, best_top)) break;
      uint64_t ttop, top = pack(&w, w.order2, win.fit, align, &ttop, &work);
      if (!keep_if_better(&w, top, ttop, &best_top, &best_ttop)) break;
      memcpy(win_order, w.order2, (size_t)w.n * sizeof *win_order);
      chosen = cand_names[win.ord][win.fit][win.tensors_first][1];
      at_bound = best_top <= lb && best_ttop <= tlb;
    }
    /* Still not there: a bounded local search. Move one buffer that touches the top to an
     * earlier, pseudo-random place in the order and repack; keep the move if the arena does
     * not grow (equal moves let the search walk across plateaus). The generator is seeded by
     * a constant, so the plan stays deterministic. */
    uint64_t rng = UINT64_C(0x9E3779B97F4A7C15);
    while (!at_bound && !linear_won && w.n > 1 && work < AR_PLAN_BEST_WORK) {
      int n_top = 0;
      for (int i = 0; i < w.n; i++)
        if (i > 0 && w.best_off[win_order[i]] + w.it[win_order[i]].size == best_top) n_top++;
      if (n_top == 0) break;
      rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
      int pick = (int)(rng % (uint64_t)n_top), pos = -1;
      for (int i = 1; i < w.n && pos < 0; i++)
        if (w.best_off[win_order[i]] + w.it[win_order[i]].size == best_top && pick-- == 0) pos = i;
      rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
      int to = (int)(rng % (uint64_t)pos);
      memcpy(w.order2, win_order, (size_t)to * sizeof *win_order);
      w.order2[to] = win_order[pos];
      memcpy(w.order2 + to + 1, win_order + to, (size_t)(pos - to) * sizeof *win_order);
      memcpy(w.order2 + pos + 1, win_order + pos + 1, (size_t)(w.n - pos - 1) * sizeof *win_order);
      uint64_t ttop, top = pack(&w, w.order2, win.fit, align, &ttop, &work);
      if (top < best_top || (top == best_top && ttop <= best_ttop)) {
        if (top < best_top || ttop < best_ttop) chosen = cand_names[win.ord][win.fit][win.tensors_first][1];
        best_top = top;
        best_ttop = ttop;
        memcpy(w.best_off, w.off, (size_t)w.n * sizeof *w.off);
        memcpy(win_order, w.order2, (size_t)w.n * sizeof *win_order);
        at_bound = best_top <= lb && best_ttop <= tlb;
      }
    }
    free(win_order);
  }
  if (w.n == 0) best_top = best_ttop = 0;

  /* Offsets: items, zero-size roots at 0 (as TFLite), aliases at their root's offset,
   * persistent buffers packed in order. */
  for (int i = 0; i < p->n; i++) p->b[i].offset = 0;
  for (int i = 0; i < w.n; i++) p->b[w.it[i].buf].offset = w.best_off[i];
  uint64_t pcur = 0, naive = 0, scratch = 0;
  for (int i = 0; i < p->n; i++) {
    pbuf_t *b = &p->b[i];
    if (b->root != i) {
      b->offset = p->b[b->root].offset;
    } else if (b->cls == AR_BUF_PERSISTENT && b->size > 0) {
      b->offset = ar_align_up(pcur, align);
      pcur = b->offset + b->size;
    }
    if (b->cls != AR_BUF_PERSISTENT) naive += b->size;
    if (b->cls == AR_BUF_SCRATCH && b->root == i) scratch += b->size;
  }
  p->fig = (ar_plan_figures_t){
      .arena_bytes = best_top,
      .tensor_arena_bytes = best_ttop,
      .lower_bound_bytes = lb,
      .tensor_lower_bound_bytes = tlb,
      .naive_bytes = naive,
      .persistent_bytes = ar_align_up(pcur, align),
      .scratch_bytes = scratch,
      .alignment = align,
      .strategy = strategy,
      .chosen = chosen,
  };
  ws_free(&w);
  p->planned = true;
#ifdef AR_DEBUG_VERIFY
  if (ar_planner_verify(p, NULL, 0) != 0) return AR_EPLAN;
#endif
  return 0;
}

/* ---- verifier ---- */

int ar_planner_verify(const ar_planner_t *p, char *msg, size_t msg_bytes) {
  if (p == NULL) return ar_errf(msg, msg_bytes, AR_EINVAL, "no planner");
  if (!p->planned) return ar_errf(msg, msg_bytes, AR_EPLAN, "no plan to verify");
  const ar_plan_figures_t *f = &p->fig;
  int n_arena = 0, n_pers = 0;
  for (int i = 0; i < p->n; i++) {
    const pbuf_t *b = &p->b[i];
    if (b->offset % p->alignment != 0)
      return ar_errf(msg, msg_bytes, AR_EPLAN, "buffer %d (id %d): offset %llu not %llu-aligned",
                     i, b->id, (unsigned long long)b->offset, (unsigned long long)p->alignment);
    const pbuf_t *r = &p->b[b->root];
    if (b->root != i && (b->offset != r->offset || b->size > r->size || b->cls != r->cls))
      return ar_errf(msg, msg_bytes, AR_EPLAN,
                     "buffer %d (id %d): alias of buffer %d (id %d) at offset %llu, root at %llu",
                     i, b->id, b->root, r->id, (unsigned long long)b->offset,
                     (unsigned long long)r->offset);
    uint64_t limit = b->cls == AR_BUF_PERSISTENT ? f->persistent_bytes : f->arena_bytes;
    if (b->size > 0 && b->offset + b->size > limit)
      return ar_errf(msg, msg_bytes, AR_EPLAN,
                     "buffer %d (id %d): [%llu, %llu) exceeds its area of %llu bytes", i, b->id,
                     (unsigned long long)b->offset, (unsigned long long)(b->offset + b->size),
                     (unsigned long long)limit);
    if (b->root == i && b->size > 0) {
      if (b->cls == AR_BUF_PERSISTENT) n_pers++; else n_arena++;
    }
  }
  /* Pairwise check of roots in the same area whose lifetimes intersect (persistent ones live
   * forever), sweeping in order of birth with the set of still-live roots. */
  skey_t *ks = malloc((size_t)(p->n > 0 ? p->n : 1) * sizeof *ks);
  int32_t *act = malloc((size_t)(p->n > 0 ? p->n : 1) * sizeof *act);
  if (ks == NULL || act == NULL) {
    free(ks);
    free(act);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "verifier: out of memory");
  }
  int rc = 0;
  for (int pass = 0; pass < 2 && rc == 0; pass++) {
    bool pers = pass == 1;
    int k = 0;
    for (int i = 0; i < p->n; i++) {
      const pbuf_t *b = &p->b[i];
      if (b->root != i || b->size == 0 || (b->cls == AR_BUF_PERSISTENT) != pers) continue;
      ks[k++] = (skey_t){pers ? 0 : (uint64_t)p->gfirst[i], 0, 0, i};
    }
    skey_sort(ks, k);
    int na = 0;
    for (int q = 0; q < k && rc == 0; q++) {
      int i = ks[q].i;
      const pbuf_t *b = &p->b[i];
      int keep = 0;
      for (int a = 0; a < na; a++) {
        int j = act[a];
        if (!pers && p->glast[j] < p->gfirst[i]) continue;   /* dead before i is born */
        act[keep++] = j;
        const pbuf_t *c = &p->b[j];
        if (b->offset < c->offset + c->size && c->offset < b->offset + b->size) {
          rc = ar_errf(msg, msg_bytes, AR_EPLAN,
                       "buffers %d (id %d, [%llu,+%llu), ops %d..%d) and %d (id %d, [%llu,+%llu), "
                       "ops %d..%d) overlap while both live",
                       i, b->id, (unsigned long long)b->offset, (unsigned long long)b->size,
                       p->gfirst[i], p->glast[i], j, c->id, (unsigned long long)c->offset,
                       (unsigned long long)c->size, p->gfirst[j], p->glast[j]);
          break;
        }
      }
      if (rc == 0) {
        na = keep;
        act[na++] = i;
      }
    }
  }
  free(ks);
  free(act);
  (void)n_arena;
  (void)n_pers;
  return rc;
}
