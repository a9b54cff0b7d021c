/* ar_error.h - the one list of arenad error codes.
 *
 * Every fallible function in arenad returns int: 0 on success, a negative AR_E* code on failure.
 * The codes, their names and their messages come from one X-macro (AR_ERRNO_MAP), in the manner of
 * libuv's UV_ERRNO_MAP. Where a human needs context (model load, plan, config, request decode) the
 * function also fills a caller-owned, fixed-size message buffer (AR_MSG_BYTES is enough); nothing is
 * ever allocated to report an error.
 */
#ifndef AR_ERROR_H
#define AR_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Size in bytes of the message buffers that load/plan/decode functions fill. */
#define AR_MSG_BYTES 512

#define AR_ERRNO_MAP(XX)                                                   \
  XX(EINVAL,       1, "invalid argument")                                 \
  XX(ENOMEM,       2, "out of memory")                                    \
  XX(EIO,          3, "i/o error")                                        \
  XX(EMODEL,       4, "malformed model file")                             \
  XX(EUNSUPPORTED, 5, "unsupported operator, version or option")          \
  XX(ESHAPE,       6, "tensor shape, dtype or size mismatch")             \
  XX(EOVERFLOW,    7, "size arithmetic overflow")                         \
  XX(EPLAN,        8, "memory plan failed verification")                  \
  XX(ENOSPC,       9, "arena pool exhausted")                             \
  XX(ENOENT,      10, "no such model or file")                            \
  XX(EEXIST,      11, "already exists")                                   \
  XX(EPROTO,      12, "malformed request")                                \
  XX(E2BIG,       13, "frame or model file larger than the configured maximum") \
  XX(EBUSY,       14, "resource busy")                                    \
  XX(ECONFIG,     15, "invalid configuration")                            \
  XX(ECONN,       16, "connection failed or closed")                      \
  XX(ESTATE,      17, "operation not valid in the current state")         \
  XX(EINTERNAL,   18, "internal error")                                  \
  XX(EPERM,       19, "operation not permitted")                         \
  XX(ETIMEDOUT,   20, "timed out")                                       \
  XX(EAGAIN,      21, "not yet: try again")

enum {
  AR_OK = 0,
#define AR__ERR_ENUM(name, num, msg) AR_##name = -(num),
  AR_ERRNO_MAP(AR__ERR_ENUM)
#undef AR__ERR_ENUM
};

/* Message for an AR_E* code (e.g. "malformed model file"); "unknown error" for other values.
 * Never NULL, never allocates. */
const char *ar_strerror(int err);

/* Symbolic name of an AR_E* code (e.g. "EMODEL"); "EUNKNOWN" for other values. */
const char *ar_err_name(int err);

/* printf into a caller-owned message buffer `msg` of `msg_bytes` bytes (truncating, always
 * NUL-terminated when msg_bytes > 0; msg may be NULL). Returns `err` so a failure site can write
 *   return ar_errf(msg, n, AR_EMODEL, "tensor %u (%s): dim %d is %d", ...);
 */
int ar_errf(char *msg, size_t msg_bytes, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#ifdef __cplusplus
}
#endif
#endif /* AR_ERROR_H */
