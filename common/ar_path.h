/* ar_path.h - the directory part and the last component of a path, as text.
 *
 * Pure string functions: nothing is resolved, followed or looked up (callers that need the real
 * directory call realpath(3) on the result). They never allocate and never modify `path`, unlike
 * POSIX dirname(3)/basename(3), which may write into their argument and return static storage.
 */
#ifndef AR_PATH_H
#define AR_PATH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The directory that holds what `path` names, written to out (out_bytes), as dirname(1) prints it
 * (POSIX XCU dirname, with "//" taken as "/"): slashes at the end of path are ignored; then the
 * last component and the slashes before it are dropped; "." when no slash is left before the last
 * component, "/" when only slashes are. So "/a/b.tflite" -> "/a", "b.tflite" -> ".", "/b" -> "/",
 * "a/b/" -> "a", "a//b" -> "a", "//a" -> "/", "/" -> "/", "" -> ".".
 * Returns 0, AR_EINVAL when path or out is NULL, or AR_EOVERFLOW when the directory needs more than
 * out_bytes - 1 bytes (out is then "" when out_bytes > 0). */
int ar_path_dir(const char *path, char *out, size_t out_bytes);

/* The last component of `path` as written: a pointer into path just past its last '/' (path itself
 * when it has none). Unlike basename(1), a trailing slash is not skipped: "a/b/" gives "", because
 * the callers name a file and a path ending in '/' names none. "/a" -> "a", "a" -> "a", "/" -> "". */
const char *ar_path_base(const char *path);

#ifdef __cplusplus
}
#endif
#endif /* AR_PATH_H */
