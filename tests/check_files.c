/* check_files.c - model files and admin operations against a real arenad:
 *   - a loaded model's file rewritten in place (cp new over old) or truncated to 0: answers and the
 *     reported sha256 unchanged, the daemon alive, a group growth (re-placement) reads only the
 *     daemon's copy; a Reload picks the new file up and reports old and new sha256;
 *   - the sparse model's index bytes rewritten on disk after load: nothing changes, even across a
 *     re-placement, and a reload of the corrupt file fails without touching the running model;
 *   - a peer that is not an admin (a second uid; needs root, else skipped) invokes but gets EPERM on
 *     load, unload and reload;
 *   - a load outside model_dirs, through a symlink pointing out of it, or through a symlinked
 *     directory gets EPERM; file content (an /etc/shadow-like line) is never echoed;
 *   - a relative load path is looked up in model_dirs in order, never in the daemon's working
 *     directory; a symlink loop inside model_dirs (or a model_dirs entry that loops) is named as
 *     one (ELOOP), a loop reached through a link leading out is plain EPERM;
 *   - admin_gids counts the peer's supplementary groups (SO_PEERGROUPS): a non-admin uid with the
 *     admin gid only as a supplementary group loads and unloads, without it EPERM (needs root);
 *   - every refused or failed admin request is one audit line in the daemon's log (peer uid, gid
 *     and pid or the configuration, request, model, code, the message answered): a malformed file
 *     (EMODEL), a file outside model_dirs (EPERM), an unknown model's unload, a reload's failed
 *     configuration load, a non-admin's load and compact (EPERM); served requests are none;
 *   - a model with a 1 GiB sparse tail is refused by max_model_bytes before it is read;
 *   - two big loads leave another model's invokes alone: invokes complete while each load is in
 *     progress (the daemon holds the file open, /proc/<pid>/fd, before and after the invoke; loads
 *     run on their own low-priority thread). Latencies are printed, not held to a bound.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clients/ar_client.h"
#include "common/ar_error.h"
#include "loader/ar_model.h"
#include "tests/ar_test_daemon.h"
#include "tests/ar_test_util.h"

static ar_test_daemon_t dmn;

static char *model_path(const char *stem) {
  static __thread char buf[4][1024];
  static __thread int k;
  k = (k + 1) % 4;
  return ar_test_model_path(buf[k], sizeof(buf[k]), stem);
}

static ar_client_t *client(void) {
  ar_client_t *c = NULL;
  char msg[AR_MSG_BYTES];
  ck_assert_msg(ar_client_connect(dmn.socket, &c, msg, sizeof(msg)) == 0, "connect: %s", msg);
  return c;
}

static void write_bytes(const char *path, const void *data, size_t n) {
  /* Like cp over an existing file: same inode, truncated, rewritten. */
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ck_assert_int_ge(fd, 0);
  const uint8_t *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    ck_assert_int_gt(w, 0);
    p += w;
    n -= (size_t)w;
  }
  ck_assert_int_eq(close(fd), 0);
}

/* The golden photo input of a model ([1,H,W,3] float32). */
typedef struct {
  void *input;
  size_t input_bytes;
  int64_t shape[4];
} input_t;

static void input_load(input_t *in, const char *stem, int64_t h, int64_t w) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s/photo/input_0.bin", ar_test_golden_dir(), stem);
  in->input = ar_test_read_file(path, &in->input_bytes);
  ck_assert_msg(in->input != NULL, "cannot read %s", path);
  in->shape[0] = 1;
  in->shape[1] = h;
  in->shape[2] = w;
  in->shape[3] = 3;
}

/* Invoke and return output 0 (malloc'd, *bytes). */
static void *invoke_out0(ar_client_t *c, const char *model, const input_t *in, size_t *bytes) {
  ar_client_tensor_t t = {.dtype = AR_CLIENT_FLOAT32, .rank = 4, .data = in->input, .bytes = in->input_bytes};
  for (int i = 0; i < 4; i++) t.dims[i] = in->shape[i];
  ar_client_result_t res;
  char msg[AR_MSG_BYTES];
  int rc = ar_client_invoke(c, model, &t, 1, &res, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "invoke %s: %d %s", model, rc, msg);
  ck_assert_int_ge(res.n_outputs, 1);
  *bytes = res.outputs[0].bytes;
  void *out = malloc(*bytes);
  memcpy(out, res.outputs[0].data, *bytes);
  ar_client_result_free(&res);
  return out;
}

static void sha_of(ar_client_t *c, const char *name, char hex[65]) {
  ar_client_model_t *ms = NULL;
  size_t n = 0;
  char msg[AR_MSG_BYTES];
  ck_assert_msg(ar_client_list(c, &ms, &n, msg, sizeof(msg)) == 0, "list: %s", msg);
  hex[0] = '\0';
  for (size_t i = 0; i < n; i++)
    if (strcmp(ms[i].name, name) == 0) snprintf(hex, 65, "%s", ms[i].sha256);
  free(ms);
  ck_assert_msg(hex[0], "model %s not listed", name);
}

/* The sha256 the stats report for `name` (must equal the list's). */
static void stats_sha(ar_client_t *c, const char *name, char hex[65]) {
  char *js = NULL, msg[AR_MSG_BYTES];
  ck_assert_msg(ar_client_stats_json(c, &js, msg, sizeof(msg)) == 0, "stats: %s", msg);
  json_t *root = json_loads(js, 0, NULL);
  free(js);
  ck_assert_ptr_nonnull(root);
  hex[0] = '\0';
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(root, "models"), i, m)
    if (strcmp(json_string_value(json_object_get(m, "name")), name) == 0)
      snprintf(hex, 65, "%s", json_string_value(json_object_get(m, "sha256")));
  json_decref(root);
  ck_assert_msg(hex[0], "model %s not in the stats", name);
}

static void load_ok(ar_client_t *c, const char *name, const char *path, const char *group) {
  char msg[AR_MSG_BYTES];
  int rc = ar_client_load(c, name, path, group, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "load %s (%s): %d %s", name, path, rc, msg);
}

/* A copy of `bytes` with every value of the largest FLOAT32 or FLOAT16 constant doubled (float16:
 * exponent + 1): the same model with other weights (another sha256, other answers). */
static uint8_t *perturbed_copy(const uint8_t *bytes, size_t n) {
  uint8_t *copy = malloc(n);
  memcpy(copy, bytes, n);
  ar_model_t *m = NULL;
  char msg[AR_MSG_BYTES];
  ck_assert_msg(ar_model_load_buffer(copy, n, &m, msg, sizeof(msg)) == 0, "%s", msg);
  const ar_subgraph_t *sg = &m->subgraphs[0];
  const ar_tensor_t *best = NULL;
  for (uint32_t t = 0; t < sg->n_tensors; t++)
    if (sg->tensors[t].data && !sg->tensors[t].sparsity &&
        (sg->tensors[t].dtype == AR_DTYPE_FLOAT32 || sg->tensors[t].dtype == AR_DTYPE_FLOAT16) &&
        (!best || sg->tensors[t].data_bytes > best->data_bytes))
      best = &sg->tensors[t];
  ck_assert_ptr_nonnull(best);
  bool f16 = best->dtype == AR_DTYPE_FLOAT16;
  size_t off = (size_t)(best->data - m->file), count = (size_t)best->data_bytes / (f16 ? 2 : 4);
  ar_model_free(m);
  for (size_t i = 0; i < count; i++) {
    if (f16) {
      uint16_t h;
      memcpy(&h, copy + off + 2 * i, 2);
      uint16_t e = h & 0x7c00;
      if (e != 0 && e < 0x7800) h = (uint16_t)(h + 0x0400);
      memcpy(copy + off + 2 * i, &h, 2);
    } else {
      float f;
      memcpy(&f, copy + off + 4 * i, 4);
      f *= 2.0f;
      memcpy(copy + off + 4 * i, &f, 4);
    }
  }
  return copy;
}

/* ---- rewrite and truncate -------------------------------------------------------------------- */

START_TEST(rewritten_and_truncated_file_changes_nothing_until_reload) {
  ck_assert_msg(ar_td_start(&dmn, "64M", NULL) == 0, "arenad did not start (log %s)", dmn.log);
  ar_client_t *c = client();
  size_t n = 0;
  uint8_t *orig = ar_test_read_file(model_path("face_detection_short_range"), &n);
  ck_assert_ptr_nonnull(orig);
  uint8_t *changed = perturbed_copy(orig, n);
  char path[512];
  snprintf(path, sizeof(path), "%s/face.tflite", dmn.dir);
  write_bytes(path, orig, n);
  load_ok(c, "face", path, "g");
  input_t in;
  input_load(&in, "face_detection_short_range", 128, 128);
  size_t ob = 0, b = 0;
  void *out0 = invoke_out0(c, "face", &in, &ob);
  char sha0[65], sha[65];
  sha_of(c, "face", sha0);

  /* cp new.tflite face.tflite */
  write_bytes(path, changed, n);
  void *out = invoke_out0(c, "face", &in, &b);
  ck_assert_uint_eq(b, ob);
  ck_assert_msg(memcmp(out, out0, ob) == 0, "answers changed after the file was rewritten");
  free(out);
  sha_of(c, "face", sha);
  ck_assert_str_eq(sha, sha0);
  stats_sha(c, "face", sha);
  ck_assert_str_eq(sha, sha0);

  /* truncate -s 0, then a larger member joins the group: the re-placement reads the copy. */
  ck_assert_int_eq(truncate(path, 0), 0);
  out = invoke_out0(c, "face", &in, &b);
  ck_assert_msg(memcmp(out, out0, ob) == 0, "answers changed after the file was truncated");
  free(out);
  load_ok(c, "selfie", model_path("selfie_segmentation"), "g");   /* larger arena: group grows */
  out = invoke_out0(c, "face", &in, &b);
  ck_assert_msg(memcmp(out, out0, ob) == 0, "answers changed after a re-placement of the truncated file");
  free(out);
  stats_sha(c, "face", sha);
  ck_assert_str_eq(sha, sha0);

  /* A reload while the file is empty fails (EMODEL) and changes nothing. */
  ar_client_reloaded_t *ch = NULL;
  size_t n_ch = 0;
  uint32_t same = 0;
  char msg[AR_MSG_BYTES];
  int rc = ar_client_reload(c, &ch, &n_ch, &same, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EMODEL, "reload of an empty file: %d %s", rc, msg);
  ck_assert_ptr_nonnull(strstr(msg, "face.tflite"));
  ck_assert_msg(strstr(msg, "(EMODEL)") == NULL, "the code is the reply's, not the text's: %s", msg);
  out = invoke_out0(c, "face", &in, &b);
  ck_assert_msg(memcmp(out, out0, ob) == 0, "a failed reload changed the answers");
  free(out);

  /* The new file in place: a reload picks it up and says so. */
  write_bytes(path, changed, n);
  rc = ar_client_reload(c, &ch, &n_ch, &same, msg, sizeof(msg));
  ck_assert_msg(rc == 0, "reload: %d %s", rc, msg);
  ck_assert_uint_eq(n_ch, 1);
  ck_assert_str_eq(ch[0].name, "face");
  ck_assert_str_eq(ch[0].old_sha256, sha0);
  ck_assert_str_ne(ch[0].new_sha256, sha0);
  ck_assert_uint_eq(same, 1);   /* selfie: re-read, unchanged */
  sha_of(c, "face", sha);
  ck_assert_str_eq(sha, ch[0].new_sha256);
  free(ch);
  out = invoke_out0(c, "face", &in, &b);
  ck_assert_msg(memcmp(out, out0, ob) != 0, "the reloaded model still answers like the old file");
  free(out);
  /* Nothing changed since: a second reload changes nothing. */
  rc = ar_client_reload(c, &ch, &n_ch, &same, msg, sizeof(msg));
  ck_assert_msg(rc == 0 && n_ch == 0 && same == 2, "second reload: %d %s, %zu changed, %u same", rc, msg, n_ch,
                same);
  free(ch);

  free(out0);
  free(in.input);
  free(orig);
  free(changed);
  ar_client_close(c);
  unlink(path);
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
}
END_TEST

/* ---- sparse indices -------------------------------------------------------------------------- */

START_TEST(sparse_index_bytes_rewritten_on_disk_change_nothing) {
  ck_assert_msg(ar_td_start(&dmn, "64M", NULL) == 0, "arenad did not start (log %s)", dmn.log);
  ar_client_t *c = client();
  size_t n = 0;
  uint8_t *orig = ar_test_read_file(model_path("face_detection_full_range_sparse"), &n);
  ck_assert_ptr_nonnull(orig);
  char path[512];
  snprintf(path, sizeof(path), "%s/sparse.tflite", dmn.dir);
  write_bytes(path, orig, n);
  load_ok(c, "sparse", path, "g");
  input_t in;
  input_load(&in, "face_detection_full_range_sparse", 192, 192);
  size_t ob = 0, b = 0;
  void *out0 = invoke_out0(c, "sparse", &in, &ob);

  /* Every index vector of every sparse constant: 0xff bytes (indices far out of range). */
  uint8_t *bad = malloc(n);
  memcpy(bad, orig, n);
  ar_model_t *m = NULL;
  char msg[AR_MSG_BYTES];
  ck_assert_msg(ar_model_load_buffer(orig, n, &m, msg, sizeof(msg)) == 0, "%s", msg);
  int vectors = 0;
  const ar_subgraph_t *sg = &m->subgraphs[0];
  for (uint32_t t = 0; t < sg->n_tensors; t++) {
    const ar_sparsity_t *sp = sg->tensors[t].sparsity;
    for (int32_t d = 0; sp && d < sp->n_dim_metadata; d++) {
      const ar_index_vector_t *iv[2] = {&sp->dim_metadata[d].array_segments, &sp->dim_metadata[d].array_indices};
      for (int k = 0; k < 2; k++) {
        if (iv[k]->data == NULL || iv[k]->length == 0) continue;
        size_t esz = iv[k]->type == AR_IDX_INT32 ? 4 : iv[k]->type == AR_IDX_UINT16 ? 2 : 1;
        memset(bad + ((const uint8_t *)iv[k]->data - m->file), 0xff, esz * iv[k]->length);
        vectors++;
      }
    }
  }
  ar_model_free(m);
  ck_assert_int_gt(vectors, 0);
  write_bytes(path, bad, n);

  void *out = invoke_out0(c, "sparse", &in, &b);
  ck_assert_msg(memcmp(out, out0, ob) == 0, "answers changed after the indices were rewritten");
  free(out);
  /* A larger member joins: the group's region grows and the sparse model is placed again
   * (DENSIFY runs again, on the daemon's copy). */
  load_ok(c, "hand", model_path("hand_landmark_full"), "g");
  out = invoke_out0(c, "sparse", &in, &b);
  ck_assert_msg(memcmp(out, out0, ob) == 0, "answers changed after a re-placement");
  free(out);
  /* A reload reads the corrupt file: refused as malformed, the running model untouched. */
  int rc = ar_client_reload(c, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EMODEL, "reload of corrupt indices: %d %s", rc, msg);
  out = invoke_out0(c, "sparse", &in, &b);
  ck_assert_msg(memcmp(out, out0, ob) == 0, "answers changed after a failed reload");
  free(out);

  free(out0);
  free(bad);
  free(orig);
  free(in.input);
  ar_client_close(c);
  unlink(path);
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
}
END_TEST

/* ---- access control -------------------------------------------------------------------------- */

START_TEST(non_admin_peer_invokes_but_cannot_load_unload_or_reload) {
  if (geteuid() != 0) {
    fprintf(stderr, "check_files: not root, skipping the second-uid test (needs setuid)\n");
    return;
  }
  char cfg[300];
  char tmpl[] = "/tmp/check_files_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(tmpl));
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", tmpl);
  FILE *f = fopen(cfg, "w");
  fprintf(f, "{\"socket_mode\": \"0666\", \"models\": []}\n");
  fclose(f);
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&dmn, "64M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  ck_assert_int_eq(chmod(dmn.dir, 0711), 0);   /* the other uid must reach the socket */
  ar_client_t *c = client();
  load_ok(c, "face", model_path("face_detection_short_range"), NULL);
  input_t in;
  input_load(&in, "face_detection_short_range", 128, 128);

  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    /* nobody:nogroup */
    if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
    ar_client_t *o = NULL;
    char msg[AR_MSG_BYTES];
    if (ar_client_connect(dmn.socket, &o, msg, sizeof(msg)) != 0) _exit(11);
    ar_client_tensor_t t = {.dtype = 0, .rank = 4, .dims = {1, 128, 128, 3}, .data = in.input,
                            .bytes = in.input_bytes};
    ar_client_result_t res;
    if (ar_client_invoke(o, "face", &t, 1, &res, msg, sizeof(msg)) != 0) _exit(12);
    ar_client_result_free(&res);
    if (ar_client_ping(o, NULL, 0, msg, sizeof(msg)) != 0) _exit(13);
    char *js = NULL;
    if (ar_client_stats_json(o, &js, msg, sizeof(msg)) != 0) _exit(14);
    free(js);
    if (ar_client_load(o, "x", model_path("palm_detection_lite"), NULL, NULL, NULL, msg, sizeof(msg)) != AR_EPERM)
      _exit(15);
    if (strstr(msg, "not permitted for uid 65534") == NULL) _exit(16);
    if (ar_client_unload(o, "face", msg, sizeof(msg)) != AR_EPERM) _exit(17);
    if (ar_client_reload(o, NULL, NULL, NULL, msg, sizeof(msg)) != AR_EPERM) _exit(18);
    ar_client_close(o);
    /* The parent's client and input came along with fork(): release this copy (valgrind leak check). */
    ar_client_close(c);
    free(in.input);
    _exit(0);
  }
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "non-admin child failed at step %d (see check_files.c)",
                WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  /* The model is still there, and the admin can still unload it. */
  char msg[AR_MSG_BYTES];
  ck_assert_int_eq(ar_client_unload(c, "face", msg, sizeof(msg)), 0);
  free(in.input);
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
  unlink(cfg);
  rmdir(tmpl);
}
END_TEST

/* admin_gids through a supplementary group: a peer whose uid and primary gid are not admins, with
 * the admin gid among its supplementary groups only (as `adduser USER arenad` makes it), loads and
 * unloads; the same peer without that group gets EPERM. Before SO_PEERGROUPS was read the first
 * child got EPERM too (only the primary gid was checked). */
static int child_load_unload(const gid_t *groups, int n_groups) {
  /* uid 4245, primary gid 4244: neither is an admin. */
  if (setgroups((size_t)n_groups, groups) != 0 || setresgid(4244, 4244, 4244) != 0 || setresuid(4245, 4245, 4245) != 0)
    return 10;
  ar_client_t *o = NULL;
  char msg[AR_MSG_BYTES];
  if (ar_client_connect(dmn.socket, &o, msg, sizeof(msg)) != 0) return 11;
  int rc = ar_client_load(o, "sup", model_path("palm_detection_lite"), NULL, NULL, NULL, msg, sizeof(msg));
  if (rc == AR_EPERM) {
    ar_client_close(o);
    return strstr(msg, "not permitted for uid 4245 gid 4244") ? 20 : 21;
  }
  if (rc != 0) return 12;
  if (ar_client_unload(o, "sup", msg, sizeof(msg)) != 0) return 13;
  ar_client_close(o);
  return 0;
}

START_TEST(admin_gids_honour_supplementary_groups) {
  if (geteuid() != 0) {
    fprintf(stderr, "check_files: not root, skipping the supplementary-group test (needs setgroups)\n");
    return;
  }
  char cfg[300];
  char tmpl[] = "/tmp/check_files_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(tmpl));
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", tmpl);
  FILE *f = fopen(cfg, "w");
  fprintf(f, "{\"socket_mode\": \"0666\", \"admin_gids\": [4243], \"models\": []}\n");
  fclose(f);
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&dmn, "64M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  ck_assert_int_eq(chmod(dmn.dir, 0711), 0);
  static const gid_t with_admin[] = {100, 4243, 4246}, without[] = {100, 4246};
  const struct {
    const gid_t *groups;
    int n, want;
  } cases[] = {{with_admin, 3, 0}, {without, 2, 20}, {NULL, 0, 20}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) _exit(child_load_unload(cases[i].groups, cases[i].n));
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == cases[i].want,
                  "case %zu: the child ended with %d, expected %d (0 = admin: loaded and unloaded; 20 = EPERM)", i,
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1, cases[i].want);
  }
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
  unlink(cfg);
  rmdir(tmpl);
}
END_TEST

/* ---- audit log -------------------------------------------------------------------------------- */

/* The audit lines of the daemon's log (stderr, captured in dmn.log) that begin with `prefix` (after
 * "arenad: audit: "): how many, the first one's rest (after the prefix) in rest[rest_bytes]. */
static int audit_lines(const char *prefix, char *rest, size_t rest_bytes) {
  size_t n = 0;
  char *raw = ar_test_read_file(dmn.log, &n);
  ck_assert_ptr_nonnull(raw);
  char *log = realloc(raw, n + 1);   /* the file's bytes, not a string: terminate them */
  ck_assert_ptr_nonnull(log);
  log[n] = '\0';
  int count = 0;
  const char *head = "arenad: audit: ";
  for (char *line = log; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    if (strncmp(line, head, strlen(head)) == 0 && strncmp(line + strlen(head), prefix, strlen(prefix)) == 0) {
      if (count++ == 0 && rest) snprintf(rest, rest_bytes, "%s", line + strlen(head) + strlen(prefix));
    }
    line = nl ? nl + 1 : NULL;
  }
  free(log);
  return count;
}

/* The held-back counts of uid `uid` summed over the log's "N lines of uid U held back" lines (a
 * flood slower than the refill has several), and how many such lines there are. */
static int audit_held_back(unsigned uid, int *n_lines) {
  size_t n = 0;
  char *raw = ar_test_read_file(dmn.log, &n);
  ck_assert_ptr_nonnull(raw);
  char *log = realloc(raw, n + 1);
  ck_assert_ptr_nonnull(log);
  log[n] = '\0';
  int total = 0;
  *n_lines = 0;
  for (char *line = log; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    int k = 0;
    unsigned u = 0;
    if (sscanf(line, "arenad: audit: %d lines of uid %u held back", &k, &u) == 2 && u == uid) {
      total += k;
      (*n_lines)++;
    }
    line = nl ? nl + 1 : NULL;
  }
  free(log);
  return total;
}

START_TEST(refused_and_failed_admin_requests_are_audit_lines) {
  char tmpl[] = "/tmp/check_files_audit_XXXXXX", cfg[300], bad[400], outside[400], msg[AR_MSG_BYTES];
  char want[700], rest[2048];
  ck_assert_ptr_nonnull(mkdtemp(tmpl));
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", tmpl);
  snprintf(outside, sizeof(outside), "%s/outside.tflite", tmpl);
  FILE *f = fopen(cfg, "w");
  fprintf(f, "{\"socket_mode\": \"0666\", \"models\": []}\n");
  fclose(f);
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&dmn, "64M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  ck_assert_int_eq(chmod(dmn.dir, 0711), 0);
  snprintf(bad, sizeof(bad), "%s/bad.tflite", dmn.dir);
  write_bytes(bad, "not a flatbuffer at all, only text", 34);
  write_bytes(outside, "x", 1);
  ar_client_t *c = client();
  unsigned me = (unsigned)geteuid(), my_gid = (unsigned)getegid();
  int pid = (int)getpid();
  /* A served request is no audit line. */
  load_ok(c, "face", model_path("face_detection_short_range"), NULL);

  /* A malformed model file inside model_dirs: EMODEL, the line carries the message answered. */
  ck_assert_int_eq(ar_client_load(c, "bad", bad, NULL, NULL, NULL, msg, sizeof(msg)), AR_EMODEL);
  snprintf(want, sizeof(want), "request=load_model model=bad uid=%u gid=%u pid=%d code=EMODEL: ", me, my_gid, pid);
  ck_assert_int_eq(audit_lines(want, rest, sizeof(rest)), 1);
  ck_assert_str_eq(rest, msg);
  /* A file outside model_dirs: EPERM. */
  ck_assert_int_eq(ar_client_load(c, "out", outside, NULL, NULL, NULL, msg, sizeof(msg)), AR_EPERM);
  snprintf(want, sizeof(want), "request=load_model model=out uid=%u gid=%u pid=%d code=EPERM: ", me, my_gid, pid);
  ck_assert_int_eq(audit_lines(want, rest, sizeof(rest)), 1);
  ck_assert_str_eq(rest, msg);
  ck_assert_ptr_nonnull(strstr(rest, "model_dirs"));
  /* Unloading a model that is not there: ENOENT. */
  ck_assert_int_eq(ar_client_unload(c, "nothere", msg, sizeof(msg)), AR_ENOENT);
  snprintf(want, sizeof(want), "request=unload_model model=nothere uid=%u gid=%u pid=%d code=ENOENT: ", me, my_gid,
           pid);
  ck_assert_int_eq(audit_lines(want, rest, sizeof(rest)), 1);
  ck_assert_str_eq(rest, msg);
  /* A name that is not a model name cannot forge the fields after it. */
  ck_assert_int_eq(ar_client_load(c, "a b code=OK", bad, NULL, NULL, NULL, msg, sizeof(msg)), AR_EINVAL);
  snprintf(want, sizeof(want), "request=load_model model=a\\x20b\\x20code\\x3dOK uid=%u gid=%u pid=%d code=EINVAL: ", me,
           my_gid, pid);
  ck_assert_int_eq(audit_lines(want, NULL, 0), 1);

  /* A reload whose configuration names the malformed file: the configuration's load and the
   * Reload request are both lines, the load's peer the reload. */
  f = fopen(cfg, "w");
  fprintf(f, "{\"socket_mode\": \"0666\", \"models\": [{\"name\": \"cfgbad\", \"path\": \"%s\"}]}\n", bad);
  fclose(f);
  ck_assert_int_eq(ar_client_reload(c, NULL, NULL, NULL, msg, sizeof(msg)), AR_EMODEL);
  ck_assert_int_eq(audit_lines("request=load_model model=cfgbad peer=reload code=EMODEL: ", rest, sizeof(rest)), 1);
  ck_assert_ptr_nonnull(strstr(rest, "bad.tflite"));
  snprintf(want, sizeof(want), "request=reload model=- uid=%u gid=%u pid=%d code=EMODEL: ", me, my_gid, pid);
  ck_assert_int_eq(audit_lines(want, rest, sizeof(rest)), 1);
  ck_assert_str_eq(rest, msg);

  /* A peer that is not an admin (a second uid: needs root). */
  int n_expected = 6;
  if (geteuid() == 0) {
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
      close(fds[0]);
      if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
      ar_client_t *o = NULL;
      if (ar_client_connect(dmn.socket, &o, msg, sizeof(msg)) != 0) _exit(11);
      if (ar_client_load(o, "x", model_path("palm_detection_lite"), NULL, NULL, NULL, msg, sizeof(msg)) != AR_EPERM)
        _exit(12);
      if (ar_client_compact(o, NULL, msg, sizeof(msg)) != AR_EPERM) _exit(13);
      if (write(fds[1], msg, strlen(msg)) < 0) _exit(14);
      ar_client_close(o);
      ar_client_close(c);
      _exit(0);
    }
    close(fds[1]);
    char child_msg[AR_MSG_BYTES] = "";
    ssize_t r = read(fds[0], child_msg, sizeof(child_msg) - 1);
    close(fds[0]);
    child_msg[r > 0 ? r : 0] = '\0';
    int st = 0;
    ck_assert_int_eq(waitpid(child, &st, 0), child);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "non-admin child failed at step %d",
                  WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    snprintf(want, sizeof(want), "request=load_model model=x uid=65534 gid=65534 pid=%d code=EPERM: load_model: not "
             "permitted for uid 65534", (int)child);
    ck_assert_int_eq(audit_lines(want, NULL, 0), 1);
    snprintf(want, sizeof(want), "request=compact model=- uid=65534 gid=65534 pid=%d code=EPERM: ", (int)child);
    ck_assert_int_eq(audit_lines(want, rest, sizeof(rest)), 1);
    ck_assert_str_eq(rest, child_msg);
    n_expected += 2;
  }
  /* Nothing else: the served load, the pings and the connections are no audit lines. */
  ck_assert_int_eq(audit_lines("", NULL, 0), n_expected);

  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
  unlink(cfg);
  unlink(outside);
  rmdir(tmpl);
}
END_TEST

/* A flood of refused requests from one uid: the first AR_AUDIT_BURST (20) are lines, then about 5
 * a second; every one held back is counted in the line that comes before the uid's next line, so
 * lines + held back = requests. Before, each was a line: a local user filled the disk at ~4.7 MB/s
 * (the session's attacker pass: 97,590 lines in 5 s). */
START_TEST(audit_lines_of_a_flood_are_counted_not_written) {
  char msg[AR_MSG_BYTES], rest[512];
  ck_assert_msg(ar_td_start(&dmn, "16M", NULL) == 0, "arenad did not start (log %s)", dmn.log);
  ar_client_t *c = client();
  const int flood = 300;
  for (int i = 0; i < flood; i++) ck_assert_int_eq(ar_client_unload(c, "flood", msg, sizeof(msg)), AR_ENOENT);
  int written = audit_lines("request=unload_model model=flood ", NULL, 0);
  ck_assert_int_ge(written, 20);    /* the burst */
  ck_assert_int_lt(written, flood);
  struct timespec ts = {1, 300 * 1000 * 1000};   /* a token again */
  nanosleep(&ts, NULL);
  ck_assert_int_eq(ar_client_unload(c, "flood", msg, sizeof(msg)), AR_ENOENT);
  /* Counted once every line is in the file (the first count may be read while the log is still
   * being written on a loaded machine): the flood's lines and the one after the pause. */
  struct timespec settle = {0, 200 * 1000 * 1000};
  nanosleep(&settle, NULL);
  const int lines = audit_lines("request=unload_model model=flood ", NULL, 0) - 1;
  ck_assert_int_ge(lines, written);
  ck_assert_int_lt(lines, flood);
  /* Every request is a line or counted in a held-back line (several when the flood outlasted a
   * refill on a loaded machine). */
  int n_held_lines = 0;
  const int held = audit_held_back((unsigned)geteuid(), &n_held_lines);
  ck_assert_msg(lines + held == flood, "%d lines + %d held back (in %d lines) != %d requests", lines, held,
                n_held_lines, flood);
  ck_assert_int_ge(n_held_lines, 1);
  char want[64];
  snprintf(want, sizeof(want), "%d lines of uid %u held back", held, (unsigned)geteuid());
  if (n_held_lines == 1) {
    ck_assert_int_eq(audit_lines(want, rest, sizeof(rest)), 1);
    ck_assert_str_eq(rest, " (at most 5 a second after a burst of 20)");
  }
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
}
END_TEST

static void assert_no_secret(const char *msg, const char *outside) {
  ck_assert_msg(strstr(msg, "root:") == NULL && strstr(msg, "$6$") == NULL && strstr(msg, "19000") == NULL &&
                    strstr(msg, ":*:") == NULL,
                "file content echoed: %s", msg);
  if (outside) ck_assert_msg(strstr(msg, outside) == NULL, "symlink target echoed: %s", msg);
}

START_TEST(loads_outside_model_dirs_are_refused_without_echo) {
  ck_assert_msg(ar_td_start(&dmn, "64M", NULL) == 0, "arenad did not start (log %s)", dmn.log);
  ar_client_t *c = client();
  char outside[] = "/tmp/check_files_outside_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(outside));
  const char shadow[] = "root:$6$secretsalt$hash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n";
  char secret[512], link1[512], link2[512], link3[512], inside[640], msg[AR_MSG_BYTES];
  snprintf(secret, sizeof(secret), "%s/shadow", outside);
  write_bytes(secret, shadow, sizeof(shadow) - 1);
  /* The file itself, outside. */
  int rc = ar_client_load(c, "s", secret, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EPERM, "outside: %d %s", rc, msg);
  ck_assert_ptr_nonnull(strstr(msg, "model_dirs"));
  assert_no_secret(msg, NULL);
  /* A missing file outside: the same answer (no ENOENT to probe with). */
  snprintf(link1, sizeof(link1), "%s/nothing-here", outside);
  rc = ar_client_load(c, "s", link1, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EPERM, "missing outside: %d %s", rc, msg);
  /* A symlink in model_dirs pointing out of it, and one to a missing file outside. */
  snprintf(link1, sizeof(link1), "%s/link.tflite", dmn.dir);
  ck_assert_int_eq(symlink(secret, link1), 0);
  rc = ar_client_load(c, "s", link1, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EPERM, "symlink out: %d %s", rc, msg);
  assert_no_secret(msg, outside);
  snprintf(link2, sizeof(link2), "%s/dangling.tflite", dmn.dir);
  char missing[512];
  snprintf(missing, sizeof(missing), "%s/missing", outside);
  ck_assert_int_eq(symlink(missing, link2), 0);
  rc = ar_client_load(c, "s", link2, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EPERM, "dangling symlink out: %d %s", rc, msg);
  assert_no_secret(msg, outside);
  /* A symlinked directory inside model_dirs that leads out. */
  snprintf(link3, sizeof(link3), "%s/subdir", dmn.dir);
  ck_assert_int_eq(symlink(outside, link3), 0);
  snprintf(inside, sizeof(inside), "%s/shadow", link3);
  rc = ar_client_load(c, "s", inside, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EPERM, "through a symlinked dir: %d %s", rc, msg);
  assert_no_secret(msg, outside);
  /* /proc paths (the daemon's own fds, its PID) are outside too; the PID is never echoed. */
  rc = ar_client_load(c, "s", "/proc/self/exe", NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EPERM, "/proc/self/exe: %d %s", rc, msg);
  char pid[32];
  snprintf(pid, sizeof(pid), "/%d", (int)dmn.pid);
  ck_assert_msg(strstr(msg, pid) == NULL, "daemon pid echoed: %s", msg);
  /* The same content inside model_dirs: a malformed model, and still no byte of it echoed. */
  snprintf(inside, sizeof(inside), "%s/shadow.tflite", dmn.dir);
  write_bytes(inside, shadow, sizeof(shadow) - 1);
  rc = ar_client_load(c, "s", inside, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EMODEL, "shadow-like file inside: %d %s", rc, msg);
  assert_no_secret(msg, NULL);
  /* A real model reached through a symlink that stays inside model_dirs is fine. */
  unlink(link1);
  ck_assert_int_eq(symlink(model_path("face_detection_short_range"), link1), 0);
  load_ok(c, "face", link1, NULL);
  /* Nothing was loaded by the refused requests. */
  ar_client_model_t *ms = NULL;
  size_t n = 0;
  ck_assert_int_eq(ar_client_list(c, &ms, &n, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(n, 1);
  free(ms);
  unlink(link1);
  unlink(link2);
  unlink(link3);
  unlink(inside);
  unlink(secret);
  rmdir(outside);
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
}
END_TEST

/* A relative LoadModel path is looked up in model_dirs in order (never in the daemon's working
 * directory); a symlink loop inside model_dirs, or a model_dirs entry that is one, is named as a
 * loop (ELOOP); a loop reached through a link that leaves model_dirs is still plain EPERM. */
START_TEST(relative_paths_use_model_dirs_and_symlink_loops_say_so) {
  char tmpl[] = "/tmp/check_files_loop_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(tmpl));
  char cfg[300], loopdir[300];
  snprintf(loopdir, sizeof(loopdir), "%s/loopdir", tmpl);
  ck_assert_int_eq(symlink(loopdir, loopdir), 0);
  snprintf(cfg, sizeof(cfg), "%s/arenad.json", tmpl);
  FILE *f = fopen(cfg, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "{\"model_dirs\": [\"%s\"], \"models\": []}\n", loopdir);
  fclose(f);
  /* model_dirs: the loop (first), then the models' directory and the daemon's temp dir. */
  const char *extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&dmn, "64M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  ar_client_t *c = client();
  char msg[AR_MSG_BYTES], a[512], b[512], path[640], want[1024];
  /* Relative: found in the models' directory (the loop entry is passed over). */
  load_ok(c, "rel", "face_detection_short_range.tflite", NULL);
  ar_client_model_t *ms = NULL;
  size_t n = 0;
  ck_assert_int_eq(ar_client_list(c, &ms, &n, msg, sizeof(msg)), 0);
  ck_assert_uint_eq(n, 1);
  char rp[PATH_MAX];
  ck_assert_ptr_nonnull(realpath(model_path("face_detection_short_range"), rp));
  ck_assert_str_eq(ms[0].path, rp);
  free(ms);
  /* Relative, in the second directory only (a symlink there to a model, inside model_dirs). */
  snprintf(a, sizeof(a), "%s/second.tflite", dmn.dir);
  ck_assert_int_eq(symlink(model_path("palm_detection_lite"), a), 0);
  load_ok(c, "rel2", "second.tflite", NULL);
  /* Relative, in none of them, even though the daemon's working directory holds it. */
  const char *here = "check_files_cwd.tflite";
  unlink(here);
  ck_assert_int_eq(symlink(model_path("face_detection_short_range"), here), 0);
  int rc = ar_client_load(c, "cwd", here, NULL, NULL, NULL, msg, sizeof(msg));
  unlink(here);
  ck_assert_msg(rc == AR_ENOENT, "relative, in the cwd only: %d %s", rc, msg);
  ck_assert_str_eq(msg, "model file 'check_files_cwd.tflite': a relative path is looked up in the daemon's "
                        "model_dirs (3 entries), and none holds it");
  /* Relative with .. leading out: EPERM as for an absolute path outside. */
  rc = ar_client_load(c, "up", "../../../../../../../../etc/passwd", NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EPERM, "relative ..: %d %s", rc, msg);
  /* Loops inside model_dirs: two links, one link to itself, a looping directory on the way. */
  snprintf(a, sizeof(a), "%s/loop_a.tflite", dmn.dir);
  snprintf(b, sizeof(b), "%s/loop_b.tflite", dmn.dir);
  ck_assert_int_eq(symlink("loop_b.tflite", a), 0);
  ck_assert_int_eq(symlink(a, b), 0);
  const char *loops[] = {a, b, NULL};
  for (int i = 0; loops[i]; i++) {
    rc = ar_client_load(c, "loop", loops[i], NULL, NULL, NULL, msg, sizeof(msg));
    snprintf(want, sizeof(want), "model file '%s': symlink loop (ELOOP: too many levels of symbolic links)", loops[i]);
    ck_assert_msg(rc == AR_EIO && strcmp(msg, want) == 0, "loop %s: %d %s", loops[i], rc, msg);
  }
  unlink(a);
  unlink(b);
  ck_assert_int_eq(symlink("self.tflite", a), 0);   /* a -> self.tflite -> self.tflite */
  snprintf(b, sizeof(b), "%s/self.tflite", dmn.dir);
  ck_assert_int_eq(symlink("self.tflite", b), 0);
  rc = ar_client_load(c, "loop", "loop_a.tflite", NULL, NULL, NULL, msg, sizeof(msg));   /* relative too */
  ck_assert_msg(rc == AR_EIO && strstr(msg, "symlink loop (ELOOP") != NULL, "self loop: %d %s", rc, msg);
  unlink(a);
  unlink(b);
  snprintf(a, sizeof(a), "%s/ldir", dmn.dir);
  ck_assert_int_eq(symlink("ldir", a), 0);
  snprintf(path, sizeof(path), "%s/model.tflite", a);
  rc = ar_client_load(c, "loop", path, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_EIO && strstr(msg, "symlink loop (ELOOP") != NULL, "looping directory: %d %s", rc, msg);
  unlink(a);
  /* A loop outside, reached through a link in model_dirs: EPERM, and nothing said about a loop.
   * The model_dirs entry that loops is named (it is the configuration's). */
  char outside[] = "/tmp/check_files_oloop_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(outside));
  char ox[400], oy[400];
  snprintf(ox, sizeof(ox), "%s/x", outside);
  snprintf(oy, sizeof(oy), "%s/y", outside);
  ck_assert_int_eq(symlink(oy, ox), 0);
  ck_assert_int_eq(symlink(ox, oy), 0);
  snprintf(a, sizeof(a), "%s/out.tflite", dmn.dir);
  ck_assert_int_eq(symlink(ox, a), 0);
  rc = ar_client_load(c, "loop", a, NULL, NULL, NULL, msg, sizeof(msg));
  snprintf(want, sizeof(want), "model file '%s': not inside the daemon's model_dirs (model_dirs entry '%s' is a "
           "symlink loop, ELOOP)", a, loopdir);
  ck_assert_msg(rc == AR_EPERM && strcmp(msg, want) == 0, "loop outside: %d %s", rc, msg);
  ck_assert_ptr_null(strstr(msg, outside));
  unlink(a);
  unlink(ox);
  unlink(oy);
  rmdir(outside);
  snprintf(a, sizeof(a), "%s/second.tflite", dmn.dir);
  unlink(a);
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
  unlink(cfg);
  unlink(loopdir);
  rmdir(tmpl);
}
END_TEST

/* ---- size limit and load thread -------------------------------------------------------------- */

/* A real model followed by a sparse tail up to `total` bytes; `tag` written at the end makes the
 * sha256 differ between files. */
static void write_with_tail(const char *path, const char *stem, uint64_t total, char tag) {
  size_t n = 0;
  void *bytes = ar_test_read_file(model_path(stem), &n);
  ck_assert_ptr_nonnull(bytes);
  write_bytes(path, bytes, n);
  free(bytes);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pwrite(fd, &tag, 1, (off_t)total - 1), 1);
  close(fd);
}

START_TEST(model_above_max_model_bytes_is_refused_before_reading) {
  ck_assert_msg(ar_td_start(&dmn, "64M", NULL) == 0, "arenad did not start (log %s)", dmn.log);
  ar_client_t *c = client();
  char path[512], msg[AR_MSG_BYTES];
  snprintf(path, sizeof(path), "%s/huge.tflite", dmn.dir);
  write_with_tail(path, "face_detection_short_range", (1ull << 30) + 4096, 'x');
  int rc = ar_client_load(c, "huge", path, NULL, NULL, NULL, msg, sizeof(msg));
  ck_assert_msg(rc == AR_E2BIG, "1 GiB tail: %d %s", rc, msg);
  ck_assert_ptr_nonnull(strstr(msg, "max_model_bytes"));
  ck_assert_ptr_nonnull(strstr(msg, "268435456"));   /* the default limit, 256 MiB */
  /* The daemon is fine and loads the same model without the tail. */
  load_ok(c, "face", model_path("face_detection_short_range"), NULL);
  unlink(path);
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
}
END_TEST

typedef struct {
  const char *socket, *name, *path;
  int rc;
  char msg[AR_MSG_BYTES];
} bg_load_t;

static void *bg_load(void *arg) {
  bg_load_t *l = arg;
  ar_client_t *c = NULL;
  l->rc = ar_client_connect(l->socket, &c, l->msg, sizeof(l->msg));
  if (l->rc == 0) l->rc = ar_client_load(c, l->name, l->path, NULL, NULL, NULL, l->msg, sizeof(l->msg));
  ar_client_close(c);
  return NULL;
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint64_t p99(uint64_t *v, size_t n) {
  qsort(v, n, sizeof(*v), cmp_u64);
  return v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
}

/* Which of the files `paths` (resolved, as /proc shows them) process `pid` holds open now: bit i
 * for paths[i]. A load holds its model file open from its start until the file has been read,
 * verified and hashed (daemon/ar_model_file.c prepare_model), and opens it once: a bit set before and
 * after an invoke means that load was in progress for the whole invoke. */
typedef struct files_open {
  const char *const *paths;
  int n;
  unsigned bits;
} files_open_t;

static void files_open_fd(void *ctx, const char *target) {
  files_open_t *f = ctx;
  for (int i = 0; i < f->n; i++)
    if (strcmp(target, f->paths[i]) == 0) f->bits |= 1u << i;
}

static unsigned files_open_in(pid_t pid, const char *const *paths, int n) {
  files_open_t f = {.paths = paths, .n = n, .bits = 0};
  ck_assert_int_ge(ar_test_proc_fds(pid, files_open_fd, &f), 0);
  return f.bits;
}

START_TEST(big_loads_leave_invokes_alone) {
  /* inline_invoke_us 0: every invoke runs on a worker, as it would beside the loads. */
  char cfg[] = "/tmp/arenad-files-cfg-XXXXXX";
  const int cfd = mkstemp(cfg);
  ck_assert_int_ge(cfd, 0);
  const char body[] = "{\"models\": [], \"inline_invoke_us\": 0}\n";
  ck_assert_int_eq(write(cfd, body, sizeof body - 1), (ssize_t)(sizeof body - 1));
  close(cfd);
  const char *const extra[] = {"--config", cfg, NULL};
  ck_assert_msg(ar_td_start(&dmn, "64M", extra) == 0, "arenad did not start (log %s)", dmn.log);
  unlink(cfg);
  ar_client_t *c = client();
  load_ok(c, "face", model_path("face_detection_short_range"), NULL);
  input_t in;
  input_load(&in, "face_detection_short_range", 128, 128);
  char p1[512], p2[512], r1[PATH_MAX], r2[PATH_MAX];
  snprintf(p1, sizeof(p1), "%s/big1.tflite", dmn.dir);
  snprintf(p2, sizeof(p2), "%s/big2.tflite", dmn.dir);
  /* Under the 256 MiB limit: each load reads and hashes 200 MiB. */
  write_with_tail(p1, "palm_detection_lite", 200ull << 20, 'a');
  write_with_tail(p2, "hand_landmark_lite", 200ull << 20, 'b');
  ck_assert_ptr_nonnull(realpath(p1, r1));
  ck_assert_ptr_nonnull(realpath(p2, r2));
  const char *const files[2] = {r1, r2};
  ar_client_tensor_t t = {.dtype = 0, .rank = 4, .dims = {1, 128, 128, 3}, .data = in.input, .bytes = in.input_bytes};
  enum { IDLE = 150, MAXLOADED = 4000 };
  uint64_t idle[IDLE], *loaded = calloc(MAXLOADED, sizeof(uint64_t));
  char msg[AR_MSG_BYTES];
  ar_client_result_t res, ref;
  ck_assert_int_eq(ar_client_invoke(c, "face", &t, 1, &ref, msg, sizeof(msg)), 0);
  for (int i = 0; i < IDLE; i++) {
    uint64_t t0 = now_us();
    ck_assert_int_eq(ar_client_invoke(c, "face", &t, 1, &res, msg, sizeof(msg)), 0);
    idle[i] = now_us() - t0;
    ar_client_result_free(&res);
  }
  bg_load_t l1 = {.socket = dmn.socket, .name = "big1", .path = p1, .rc = 1};
  bg_load_t l2 = {.socket = dmn.socket, .name = "big2", .path = p2, .rc = 1};
  pthread_t th1, th2;
  pthread_create(&th1, NULL, bg_load, &l1);
  pthread_create(&th2, NULL, bg_load, &l2);
  /* Invoke until both loads are answered (the list shows both models; the loads run one after the
   * other on the load thread); count, per load, the
   * invokes that started and ended while it held its file open. Were a load to hold up invokes
   * (the loop or the workers busy with it), no invoke would end while its file is open. */
  size_t n = 0, invokes = 0, during[2] = {0, 0};
  for (;;) {
    unsigned before = files_open_in(dmn.pid, files, 2);
    uint64_t t0 = now_us();
    ck_assert_int_eq(ar_client_invoke(c, "face", &t, 1, &res, msg, sizeof(msg)), 0);
    if (n < MAXLOADED) loaded[n++] = now_us() - t0;
    invokes++;
    unsigned both = before & files_open_in(dmn.pid, files, 2);
    for (int i = 0; i < 2; i++)
      if (both & (1u << i)) during[i]++;
    /* The answers are the idle ones, bit for bit. */
    ck_assert_int_eq(res.n_outputs, ref.n_outputs);
    for (int32_t j = 0; j < ref.n_outputs; j++) {
      ck_assert_uint_eq(res.outputs[j].bytes, ref.outputs[j].bytes);
      ck_assert_int_eq(memcmp(res.outputs[j].data, ref.outputs[j].data, ref.outputs[j].bytes), 0);
    }
    ar_client_result_free(&res);
    ar_client_model_t *ms = NULL;
    size_t nm = 0;
    ck_assert_int_eq(ar_client_list(c, &ms, &nm, msg, sizeof(msg)), 0);
    free(ms);
    if (nm == 3) break;
    /* Paced: the loads run on a low-priority thread, which a client invoking back to back on a
     * busy two-core machine would starve (the loads then outlast any number of invokes). */
    struct timespec pause = {0, 5 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  pthread_join(th1, NULL);
  pthread_join(th2, NULL);
  ck_assert_msg(l1.rc == 0 && l2.rc == 0, "big loads: %d %s / %d %s", l1.rc, l1.msg, l2.rc, l2.msg);
  fprintf(stderr, "check_files: %zu face invokes during two 200 MiB loads, %zu of them while big1 was being read "
          "and hashed, %zu while big2 was; p99 idle %llu us, during the loads %llu us (printed, not asserted)\n",
          invokes, during[0], during[1], (unsigned long long)p99(idle, IDLE), (unsigned long long)p99(loaded, n));
  ck_assert_uint_ge(during[0], 1);
  ck_assert_uint_ge(during[1], 1);
  ck_assert_int_eq(files_open_in(dmn.pid, files, 2), 0);   /* both read: the daemon keeps its own copies */
  ck_assert_int_eq(ar_client_unload(c, "big1", msg, sizeof(msg)), 0);
  ck_assert_int_eq(ar_client_unload(c, "big2", msg, sizeof(msg)), 0);
  unlink(p1);
  unlink(p2);
  free(loaded);
  free(in.input);
  ar_client_result_free(&ref);
  ar_client_close(c);
  ck_assert_int_eq(ar_td_stop(&dmn), 0);
}
END_TEST

static Suite *files_suite(void) {
  Suite *s = suite_create("files");
  TCase *tc = tcase_create("files");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, rewritten_and_truncated_file_changes_nothing_until_reload);
  tcase_add_test(tc, sparse_index_bytes_rewritten_on_disk_change_nothing);
  tcase_add_test(tc, non_admin_peer_invokes_but_cannot_load_unload_or_reload);
  tcase_add_test(tc, loads_outside_model_dirs_are_refused_without_echo);
  tcase_add_test(tc, refused_and_failed_admin_requests_are_audit_lines);
  tcase_add_test(tc, audit_lines_of_a_flood_are_counted_not_written);
  tcase_add_test(tc, admin_gids_honour_supplementary_groups);
  tcase_add_test(tc, relative_paths_use_model_dirs_and_symlink_loops_say_so);
  tcase_add_test(tc, model_above_max_model_bytes_is_refused_before_reading);
  tcase_add_test(tc, big_loads_leave_invokes_alone);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(files_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
