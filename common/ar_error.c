/* ar_error.c - strings for the AR_ERRNO_MAP error list (see ar_error.h). */
#include "common/ar_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlongs, surrogates or values past
 * U+10FFFF), 0 when the bytes there are not one. s is NUL-terminated: a NUL ends any check early. */
static size_t utf8_seq(const unsigned char *s) {
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (len == 0) return 0;
  unsigned char lo = 0x80, hi = 0xBF;   /* the second byte's range */
  if (c == 0xE0) lo = 0xA0;
  else if (c == 0xED) hi = 0x9F;
  else if (c == 0xF0) lo = 0x90;
  else if (c == 0xF4) hi = 0x8F;
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return len;
}

char *ar_escape_text(const char *in, char *out, size_t out_bytes) {
  if (!out || out_bytes == 0) return out;
  const unsigned char *s = (const unsigned char *)(in ? in : "");
  size_t o = 0;
  while (*s && o + 1 < out_bytes) {
    size_t len = utf8_seq(s);
    if (len == 0 || s[0] < 0x20 || s[0] == 0x7f) {
      if (o + 5 > out_bytes) break;
      snprintf(out + o, out_bytes - o, "\\x%02x", s[0]);
      o += 4, s++;
      continue;
    }
    if (o + len + 1 > out_bytes) break;
    memcpy(out + o, s, len);
    o += len, s += len;
  }
  out[o] = '\0';
  return out;
}
