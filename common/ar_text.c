/* ar_text.c - UTF-8 decoding (RFC 3629) and the escapes for terminals, logs and XML (ar_text.h). */
#include "common/ar_text.h"

#include <stdbool.h>
#include <string.h>

size_t ar_utf8_seq_bytes(const unsigned char *s, size_t avail) {
  if (avail == 0) return 0;
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (len == 0 || len > avail) return 0;
  unsigned char lo = 0x80, hi = 0xBF;   /* the second byte's range */
  if (c == 0xE0) lo = 0xA0;             /* below: an overlong three-byte form */
  else if (c == 0xED) hi = 0x9F;        /* above: U+D800..U+DFFF, UTF-16 surrogates */
  else if (c == 0xF0) lo = 0x90;        /* below: an overlong four-byte form */
  else if (c == 0xF4) hi = 0x8F;        /* above: past U+10FFFF */
  if (s[1] < lo || s[1] > hi) return 0;
  for (size_t i = 2; i < len; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return len;
}

size_t ar_utf8_valid_prefix(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < len) {
    size_t n = ar_utf8_seq_bytes(p + i, len - i);
    if (n == 0) return i;
    i += n;
  }
  return len;
}

char *ar_escape_text(const char *in, char *out, size_t out_bytes) {
  if (!out || out_bytes == 0) return out;
  const unsigned char *s = (const unsigned char *)(in ? in : "");
  size_t left = strlen((const char *)s), o = 0;
  while (left > 0 && o + 1 < out_bytes) {
    size_t len = ar_utf8_seq_bytes(s, left);
    if (len == 0 || s[0] < 0x20 || s[0] == 0x7f) {
      if (o + 5 > out_bytes) break;
      snprintf(out + o, out_bytes - o, "\\x%02x", s[0]);
      o += 4, s++, left--;
      continue;
    }
    if (o + len + 1 > out_bytes) break;
    memcpy(out + o, s, len);
    o += len, s += len, left -= len;
  }
  out[o] = '\0';
  return out;
}

void ar_xml_write_text(FILE *out, const char *s) {
  if (s == NULL) return;
  const unsigned char *p = (const unsigned char *)s;
  size_t left = strlen(s);
  while (left > 0) {
    size_t len = ar_utf8_seq_bytes(p, left);
    /* EF BF BE / EF BF BF: U+FFFE and U+FFFF, well-formed UTF-8 but not XML characters. */
    bool non_char = len == 3 && p[0] == 0xEF && p[1] == 0xBF && p[2] >= 0xBE;
    if (len == 0 || p[0] < 0x20 || p[0] == 0x7f || non_char) {
      size_t n = non_char ? 3 : 1;
      for (size_t i = 0; i < n; i++) fprintf(out, "\\x%02x", p[i]);
      p += n, left -= n;
      continue;
    }
    switch (p[0]) {
    case '&': fputs("&amp;", out); break;
    case '<': fputs("&lt;", out); break;
    case '>': fputs("&gt;", out); break;
    case '"': fputs("&quot;", out); break;
    case '\'': fputs("&apos;", out); break;
    default: fwrite(p, 1, len, out);
    }
    p += len, left -= len;
  }
}
