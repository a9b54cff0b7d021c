/* cli_io.h - arenactl's files: a raw input tensor read from a regular file, a character device or
 * a pipe, and the --output directory. Used by `invoke` (cmd_online.c) and `run` (cmd_run.c).
 */
#ifndef AR_CLI_IO_H
#define AR_CLI_IO_H

#include <stddef.h>
#include <stdint.h>

/* Read the raw bytes of input tensor `tensor` (its name, for messages) from `path` into a malloc'd
 * *data (caller frees) of *bytes bytes.
 *   - A regular file must hold exactly `need_bytes` bytes (the tensor's byte size), checked with
 *     fstat before anything is read (AR_ESHAPE naming both sizes otherwise); with need_bytes 0 (not
 *     known) it is read whole and the caller (or the daemon) compares its size.
 *   - Anything else that can be read (a character device such as /dev/zero or /dev/urandom, a
 *     pipe such as /dev/stdin, a socket) has no size of its own: exactly `need_bytes` bytes are
 *     read from it (the tensor's byte size) and the rest is left unread.
 * Errors: AR_ENOENT (no such file), AR_EIO (open or read failed, a directory), AR_ESHAPE (a regular file of another size than need_bytes, or a stream
 * that ends before need_bytes: the message names both sizes), AR_EINVAL
 * (a stream for a tensor whose size is not known, need_bytes 0), AR_ENOMEM; msg names the path. */
int ar_cli_read_input(const char *path, const char *tensor, uint64_t need_bytes, void **data, uint64_t *bytes,
                      char *msg, size_t msg_bytes);

/* Make sure the --output directory `dir` exists: an existing directory is used as it is, a missing
 * one is created (one level, as mkdir(1) without -p: mode 0755 less the umask). Errors: AR_EINVAL
 * (an empty name), AR_ENOENT (its parent does not exist), AR_EEXIST (it exists and is not a
 * directory), AR_EIO (mkdir failed otherwise, e.g. EACCES, or ENOENT in a /proc directory: the
 * message then gives strerror); msg names the directory and the reason. */
int ar_cli_output_dir(const char *dir, char *msg, size_t msg_bytes);

/* `s` ready to print to a terminal: control characters (below 0x20, 0x7f) and bytes that are not
 * UTF-8 written as \xNN (ar_escape_text). For model strings (tensor, subgraph and metadata names,
 * descriptions, custom op codes) and daemon messages quoting them. The result lives in one of 8
 * static buffers used in turn (so up to 8 may appear in one printf), AR_CLI_ESC_BYTES bytes each
 * (longer text is truncated); NULL prints as "". Never allocates. */
#define AR_CLI_ESC_BYTES 4096
const char *ar_cli_esc(const char *s);

#endif /* AR_CLI_IO_H */
