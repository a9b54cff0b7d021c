/* ar_text.h - the one UTF-8 decoder of arenad and the escapes built on it.
 *
 * Model strings (tensor, operator, subgraph and metadata names, descriptions, custom op codes) come
 * from files the daemon does not trust. The loader refuses any that is not well-formed UTF-8
 * (ar_utf8_valid_prefix); everything that prints or forwards them escapes what a terminal, a log
 * line or an XML document must not see (ar_escape_text, ar_xml_write_text). One decoder serves all
 * of them, so "valid" means the same thing at load and at print time.
 *
 * UTF-8 here is RFC 3629 (Unicode 15, table 3-7): a lead byte C2..F4, continuation bytes 80..BF,
 * with E0 needing A0..BF next (no overlong three-byte forms), ED 80..9F (no UTF-16 surrogates
 * U+D800..U+DFFF), F0 90..BF (no overlong four-byte forms) and F4 80..8F (nothing above U+10FFFF).
 * C0, C1 and F5..FF never appear.
 */
#ifndef AR_TEXT_H
#define AR_TEXT_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Length in bytes (1..4) of the well-formed UTF-8 sequence that starts at s, looking at no more
 * than `avail` bytes; 0 when the bytes there are not one (a byte that cannot start a sequence, a
 * bad continuation byte, an overlong form, a surrogate, a value above U+10FFFF, or a sequence cut
 * short by `avail`). 0 when avail is 0. A NUL byte is the one-byte sequence U+0000: callers that
 * need C strings check for it themselves. */
size_t ar_utf8_seq_bytes(const unsigned char *s, size_t avail);

/* Bytes in the longest prefix of s[0..len) made of whole well-formed sequences: len when all of
 * s[0..len) is UTF-8, else the offset of the first byte of the first malformed sequence. NUL bytes
 * count as valid (see ar_utf8_seq_bytes). s may be NULL when len is 0. */
size_t ar_utf8_valid_prefix(const char *s, size_t len);

/* Copy the NUL-terminated text `in` to `out` (out_bytes, always NUL-terminated when out_bytes > 0,
 * truncated at a whole character or escape) with every byte that is a control character (below
 * 0x20, or 0x7f) or not part of well-formed UTF-8 written as the four characters \xNN.
 * For model strings and messages quoting them on their way to a terminal, a log line or a
 * protobuf `string`: a tensor name holding ESC or a newline must not recolour a terminal or forge
 * a log line. out needs 4 * strlen(in) + 1 bytes to hold any input whole. in NULL is "".
 * Returns out. */
char *ar_escape_text(const char *in, char *out, size_t out_bytes);

/* Write the NUL-terminated text `s` to `out` as XML 1.0 character data that is also safe inside
 * a quoted attribute value: & < > " ' become &amp; &lt; &gt; &quot; &apos;; bytes that XML 1.0 may
 * not hold at all, even as a character reference (control characters below 0x20 including tab
 * and newline, which attribute normalisation would turn into spaces, and 0x7f) and bytes that are
 * not well-formed UTF-8 become the four visible characters \xNN as in ar_escape_text; U+FFFE and
 * U+FFFF (not XML characters) become their three bytes in that form (\xef\xbf\xbe). Nothing is
 * truncated and nothing allocated; s NULL writes nothing. Write errors are left in ferror(out).
 * Source: XML 1.0 (fifth edition) section 2.2 "Char" and 2.4 "Character data"; SVG is XML. */
void ar_xml_write_text(FILE *out, const char *s);

#ifdef __cplusplus
}
#endif
#endif /* AR_TEXT_H */
