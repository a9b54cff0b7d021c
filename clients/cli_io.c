/* cli_io.c - arenactl's input files and output directory (see cli_io.h).
 *
 * st_size is only a size for regular files: a character device (/dev/zero) or a pipe reports 0,
 * so a stream is read up to the tensor's byte size instead of up to st_size.
 */
#include "clients/cli_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ar_error.h"
#include "common/ar_text.h"

/* Read up to n bytes (fewer only at end of file); returns the count, or -1 with errno set. */
static int64_t read_full(int fd, uint8_t *p, uint64_t n) {
  uint64_t got = 0;
  while (got < n) {
    size_t chunk = n - got < (1u << 30) ? (size_t)(n - got) : (1u << 30);
    ssize_t k = read(fd, p + got, chunk);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    if (k == 0) break;
    got += (uint64_t)k;
  }
  return (int64_t)got;
}

int ar_cli_read_input(const char *path, const char *tensor, uint64_t need_bytes, void **data, uint64_t *bytes,
                      char *msg, size_t msg_bytes) {
  *data = NULL;
  *bytes = 0;
  if (tensor == NULL) tensor = "";
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    return ar_errf(msg, msg_bytes, e == ENOENT ? AR_ENOENT : AR_EIO, "cannot read %s: %s", path, strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    int e = S_ISDIR(st.st_mode) ? EISDIR : errno;
    close(fd);
    return ar_errf(msg, msg_bytes, AR_EIO, "cannot read %s: %s", path, strerror(e));
  }
  const bool regular = S_ISREG(st.st_mode);
  /* A regular file must hold the tensor's bytes exactly: refused here before anything is read, so
   * a wrong file of gigabytes is not read into memory only to be refused by size afterwards. */
  if (regular && need_bytes != 0 && (uint64_t)st.st_size != need_bytes) {
    close(fd);
    return ar_errf(msg, msg_bytes, AR_ESHAPE, "%s holds %" PRIu64 " bytes; input '%s' needs %" PRIu64 " bytes",
                   path, (uint64_t)st.st_size, tensor, need_bytes);
  }
  if (!regular && need_bytes == 0) {
    close(fd);
    return ar_errf(msg, msg_bytes, AR_EINVAL, "%s is not a regular file and the size of input '%s' is not known: "
                   "give a file", path, tensor);
  }
  const uint64_t want = regular ? (uint64_t)st.st_size : need_bytes;
  uint8_t *buf = malloc(want ? want : 1);
  if (buf == NULL) {
    close(fd);
    return ar_errf(msg, msg_bytes, AR_ENOMEM, "no memory for the %" PRIu64 " bytes of %s", want, path);
  }
  int64_t got = read_full(fd, buf, want);
  int e = errno;
  close(fd);
  if (got < 0) {
    free(buf);
    return ar_errf(msg, msg_bytes, AR_EIO, "cannot read %s: %s", path, strerror(e));
  }
  if ((uint64_t)got < want) {
    free(buf);
    if (regular)   /* it shrank while being read */
      return ar_errf(msg, msg_bytes, AR_EIO, "cannot read %s: it ended after %" PRId64 " of its %" PRIu64 " bytes",
                     path, got, want);
    return ar_errf(msg, msg_bytes, AR_ESHAPE, "%s ended after %" PRId64 " bytes; input '%s' needs %" PRIu64 " bytes",
                   path, got, tensor, want);
  }
  *data = buf;
  *bytes = want;
  return 0;
}

/* Whether the directory `dir` would be created in exists (mkdir's ENOENT also comes from file
 * systems that take no new entries, such as /proc). */
static bool parent_is_dir(const char *dir) {
  char parent[4096];
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;          /* "a/b/" names b */
  while (n > 0 && dir[n - 1] != '/') n--;          /* drop the last component */
  if (n == 0) return true;                         /* relative, in the working directory */
  if (n >= sizeof(parent)) return false;
  memcpy(parent, dir, n);
  parent[n] = '\0';
  struct stat st;
  return stat(parent, &st) == 0 && S_ISDIR(st.st_mode);
}

int ar_cli_output_dir(const char *dir, char *msg, size_t msg_bytes) {
  if (dir[0] == '\0') return ar_errf(msg, msg_bytes, AR_EINVAL, "the output directory name is empty");
  if (mkdir(dir, 0755) == 0) return 0;
  int e = errno;
  struct stat st;
  if (e == EEXIST) {
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
    return ar_errf(msg, msg_bytes, AR_EEXIST, "output directory %s: exists and is not a directory", dir);
  }
  if (e == ENOENT && !parent_is_dir(dir))
    return ar_errf(msg, msg_bytes, AR_ENOENT, "cannot create output directory %s: its parent directory does not "
                   "exist (one level is created)", dir);
  return ar_errf(msg, msg_bytes, AR_EIO, "cannot create output directory %s: %s", dir, strerror(e));
}

const char *ar_cli_esc(const char *s) {
  static char bufs[8][AR_CLI_ESC_BYTES];
  static unsigned next;
  char *out = bufs[next++ % 8];
  return ar_escape_text(s ? s : "", out, AR_CLI_ESC_BYTES);
}
