/* ar_error.c - strings for the AR_ERRNO_MAP error list (see ar_error.h). */
#include "common/ar_error.h"

#include <stdarg.h>
#include <stdio.h>

const char *ar_strerror(int err) {
  switch (err) {
  case AR_OK: return "success";
#define AR__ERR_STR(name, num, msg) case AR_##name: return msg;
  AR_ERRNO_MAP(AR__ERR_STR)
#undef AR__ERR_STR
  default: return "unknown error";
  }
}

const char *ar_err_name(int err) {
  switch (err) {
  case AR_OK: return "OK";
#define AR__ERR_NAME(name, num, msg) case AR_##name: return #name;
  AR_ERRNO_MAP(AR__ERR_NAME)
#undef AR__ERR_NAME
  default: return "EUNKNOWN";
  }
}

int ar_errf(char *msg, size_t msg_bytes, int err, const char *fmt, ...) {
  if (msg != NULL && msg_bytes > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_bytes, fmt, ap);
    va_end(ap);
  }
  return err;
}
