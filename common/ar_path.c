/* ar_path.c - directory part and last component of a path, as text (ar_path.h). */
#include "common/ar_path.h"

#include <string.h>

#include "common/ar_error.h"

int ar_path_dir(const char *path, char *out, size_t out_bytes) {
  if (path == NULL || out == NULL) return AR_EINVAL;
  size_t n = strlen(path);
  const char *dir = path;
  while (n > 0 && path[n - 1] == '/') n--;        /* "a/b/" names b */
  if (n == 0) {
    dir = path[0] == '/' ? "/" : ".";             /* "/", "//", or "" */
    n = 1;
  } else {
    while (n > 0 && path[n - 1] != '/') n--;      /* drop the last component */
    if (n == 0) {
      dir = ".";
      n = 1;
    } else {
      while (n > 0 && path[n - 1] == '/') n--;    /* and the slashes before it */
      if (n == 0) {
        dir = "/";
        n = 1;
      }
    }
  }
  if (n >= out_bytes) {
    if (out_bytes > 0) out[0] = '\0';
    return AR_EOVERFLOW;
  }
  memcpy(out, dir, n);
  out[n] = '\0';
  return 0;
}

const char *ar_path_base(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}
