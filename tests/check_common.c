/* check_common.c - the common layer's text helpers: the UTF-8 decoder (RFC 3629 edge cases: code
 * point boundaries, overlong forms, surrogates, values above U+10FFFF, truncated sequences), the
 * terminal/log escape and the XML escape built on it; the directory part and last component of a
 * path (dirname(1) edge cases); the benchmark programs' sample summary (percentiles by linear
 * interpolation, population std, in-place sort).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ar_error.h"
#include "common/ar_path.h"
#include "common/ar_stats.h"
#include "common/ar_text.h"
#include "common/ar_util.h"

/* ---------------------------------------------------------------- UTF-8 */

/* One sequence at the start of s (avail bytes): its length, 0 when malformed. */
START_TEST(test_utf8_seq_bytes) {
  static const struct { const char *s; size_t avail, want; const char *what; } c[] = {
      {"", 0, 0, "nothing to read"},
      {"\0", 1, 1, "NUL is U+0000, one byte"},
      {"\x7f", 1, 1, "U+007F, last one-byte"},
      {"\xc2\x80", 2, 2, "U+0080, first two-byte"},
      {"\xdf\xbf", 2, 2, "U+07FF, last two-byte"},
      {"\xc0\xaf", 2, 0, "overlong '/' (C0)"},
      {"\xc1\xbf", 2, 0, "overlong U+007F (C1)"},
      {"\xe0\xa0\x80", 3, 3, "U+0800, first three-byte"},
      {"\xe0\x9f\xbf", 3, 0, "overlong U+07FF in three bytes"},
      {"\xe0\x80\xaf", 3, 0, "overlong '/' in three bytes"},
      {"\xed\x9f\xbf", 3, 3, "U+D7FF, last before the surrogates"},
      {"\xed\xa0\x80", 3, 0, "U+D800, first surrogate"},
      {"\xed\xbf\xbf", 3, 0, "U+DFFF, last surrogate"},
      {"\xee\x80\x80", 3, 3, "U+E000, first after the surrogates"},
      {"\xef\xbf\xbf", 3, 3, "U+FFFF"},
      {"\xf0\x90\x80\x80", 4, 4, "U+10000, first four-byte"},
      {"\xf0\x8f\xbf\xbf", 4, 0, "overlong U+FFFF in four bytes"},
      {"\xf4\x8f\xbf\xbf", 4, 4, "U+10FFFF, the last code point"},
      {"\xf4\x90\x80\x80", 4, 0, "U+110000, above the range"},
      {"\xf5\x80\x80\x80", 4, 0, "F5 never starts a sequence"},
      {"\xff", 1, 0, "FF never appears"},
      {"\x80", 1, 0, "lone continuation byte"},
      {"\xe2\x28\xa1", 3, 0, "bad second byte"},
      {"\xf0\x9f\x28\x80", 4, 0, "bad third byte"},
      {"\xf0\x9f\x98\x28", 4, 0, "bad fourth byte"},
      {"\xc3", 1, 0, "two-byte cut after the lead"},
      {"\xf0\x9f\x98", 3, 0, "four-byte cut after three"},
      {"\xe2\x82\xac", 2, 0, "U+20AC but only 2 bytes available"},
      {"\xe2\x82\xac", 3, 3, "U+20AC"},
  };
  for (size_t i = 0; i < AR_ARRAY_LEN(c); i++) {
    size_t got = ar_utf8_seq_bytes((const unsigned char *)c[i].s, c[i].avail);
    ck_assert_msg(got == c[i].want, "%s: %zu, want %zu", c[i].what, got, c[i].want);
  }
}
END_TEST

/* The length of the valid prefix: what the loader compares with a string's length. */
START_TEST(test_utf8_valid_prefix) {
  static const struct { const char *s; size_t len, valid; } c[] = {
      {"", 0, 0},
      {"conv2d/Relu6;x", 14, 14},
      {"\xc3\xa9t\xc3\xa9", 6, 6},              /* two-byte sequences */
      {"\xe2\x82\xac", 3, 3},                    /* U+20AC */
      {"\xf0\x9f\x98\x80", 4, 4},                /* U+1F600 */
      {"\xf4\x8f\xbf\xbf", 4, 4},                /* U+10FFFF, the last code point */
      {"ab\xff", 3, 2},                          /* never valid */
      {"ab\x80", 3, 2},                          /* lone continuation byte */
      {"\xc0\xaf", 2, 0},                        /* overlong '/' */
      {"a\xe0\x80\xaf", 4, 1},                   /* overlong, three bytes */
      {"\xed\xa0\x80", 3, 0},                    /* UTF-16 surrogate U+D800 */
      {"x\xed\xb2\x80y", 5, 1},                  /* low surrogate U+DC80 */
      {"\xf4\x90\x80\x80", 4, 0},                /* above U+10FFFF */
      {"ok\xf7\xbf\xbf\xbf", 6, 2},              /* would be U+1FFFFF */
      {"\xf5\x80\x80\x80", 4, 0},
      {"xy\xe2\x82", 4, 2},                      /* truncated at the end */
      {"\xe2\x82\xac", 2, 0},                    /* truncated by len, though a byte follows */
      {"\xe2\x28\xa1", 3, 0},                    /* bad continuation */
      {"a\0b", 3, 3},                            /* NUL is UTF-8: callers wanting C strings check */
  };
  for (size_t i = 0; i < AR_ARRAY_LEN(c); i++) {
    size_t got = ar_utf8_valid_prefix(c[i].s, c[i].len);
    ck_assert_msg(got == c[i].valid, "case %zu: %zu, want %zu", i, got, c[i].valid);
  }
  ck_assert_uint_eq(ar_utf8_valid_prefix(NULL, 0), 0);
}
END_TEST

/* ---------------------------------------------------------------- escapes */

/* Model strings on their way to a terminal, a log line or Status.message: control bytes and bytes
 * that are not UTF-8 become \xNN, valid UTF-8 passes, truncation keeps whole escapes. */
START_TEST(test_escape_text) {
  char out[64];
  ck_assert_str_eq(ar_escape_text("conv2d/Relu6", out, sizeof out), "conv2d/Relu6");
  ck_assert_str_eq(ar_escape_text("ev\x1b[31mRED\nFAKE\r\t\x7f", out, sizeof out),
                   "ev\\x1b[31mRED\\x0aFAKE\\x0d\\x09\\x7f");
  ck_assert_str_eq(ar_escape_text("\xc3\xa9t\xc3\xa9 \xff\xfe", out, sizeof out), "\xc3\xa9t\xc3\xa9 \\xff\\xfe");
  ck_assert_str_eq(ar_escape_text("\xe2\x82", out, sizeof out), "\\xe2\\x82");   /* truncated sequence */
  ck_assert_str_eq(ar_escape_text("\xc0\xaf", out, sizeof out), "\\xc0\\xaf");   /* overlong */
  ck_assert_str_eq(ar_escape_text("\xed\xa0\x80", out, sizeof out), "\\xed\\xa0\\x80");   /* surrogate */
  ck_assert_str_eq(ar_escape_text("\xf4\x90\x80\x80!", out, sizeof out), "\\xf4\\x90\\x80\\x80!");
  ck_assert_str_eq(ar_escape_text("<&\"'", out, sizeof out), "<&\"'");   /* a terminal needs no entities */
  ck_assert_str_eq(ar_escape_text(NULL, out, sizeof out), "");
  ck_assert_str_eq(ar_escape_text("ab\x1b", out, 6), "ab");   /* no room for the whole \x1b */
  ck_assert_str_eq(ar_escape_text("ab\x1b", out, 7), "ab\\x1b");
  ck_assert_str_eq(ar_escape_text("a\xe2\x82\xac", out, 4), "a");   /* no room for the whole U+20AC */
  ck_assert_str_eq(ar_escape_text("a\xe2\x82\xac", out, 5), "a\xe2\x82\xac");
  out[0] = 'x';
  ck_assert_ptr_eq(ar_escape_text("abc", out, 1), out);
  ck_assert_str_eq(out, "");
}
END_TEST

/* ar_xml_write_text's output for s, in a malloc'd string the caller frees. */
static char *xml_of(const char *s) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  ck_assert_ptr_nonnull(f);
  ar_xml_write_text(f, s);
  ck_assert_int_eq(ferror(f), 0);
  ck_assert_int_eq(fclose(f), 0);
  return buf;
}

/* Names in an SVG title or text: the five XML specials as entities, bytes XML cannot hold at all
 * (controls, non-characters, malformed UTF-8) as visible \xNN, everything else as it is. */
START_TEST(test_xml_write_text) {
  static const struct { const char *in, *want; } c[] = {
      {"conv2d/Relu6;x", "conv2d/Relu6;x"},
      {"a<b&c\"d'e\x1b" "f>", "a&lt;b&amp;c&quot;d&apos;e\\x1bf&gt;"},
      {"&amp;", "&amp;amp;"},                            /* an entity in a name is text, not markup */
      {"tab\there\nnl\r\x7f", "tab\\x09here\\x0anl\\x0d\\x7f"},
      {"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
      {"\xef\xbf\xbd", "\xef\xbf\xbd"},                  /* U+FFFD is a character */
      {"x\xef\xbf\xbey\xef\xbf\xbf", "x\\xef\\xbf\\xbey\\xef\\xbf\\xbf"},   /* U+FFFE, U+FFFF are not */
      {"\xff<\xc0\xaf", "\\xff&lt;\\xc0\\xaf"},
      {"\xed\xa0\x80", "\\xed\\xa0\\x80"},
      {"]]>", "]]&gt;"},                                 /* the CDATA end cannot appear */
      {"", ""},
  };
  for (size_t i = 0; i < AR_ARRAY_LEN(c); i++) {
    char *got = xml_of(c[i].in);
    ck_assert_msg(strcmp(got, c[i].want) == 0, "case %zu: '%s', want '%s'", i, got, c[i].want);
    free(got);
  }
  char *none = xml_of(NULL);
  ck_assert_str_eq(none, "");
  free(none);
}
END_TEST

/* ---------------------------------------------------------------- paths */

/* The directory part as dirname(1) prints it: every case below is what coreutils' dirname 9.1
 * printed for it ("//a" too: POSIX would allow "//" there). */
START_TEST(test_path_dir) {
  static const struct { const char *path, *dir; } c[] = {
      {"/", "/"},
      {"a", "."},
      {"/a", "/"},
      {"a/b/", "a"},
      {"//a", "/"},
      {"", "."},
      {"///", "/"},
      {"/a/b.tflite", "/a"},
      {"models/b.tflite", "models"},
      {"./b", "."},
      {"a//b", "a"},
      {"/a//b//", "/a"},
      {"a/", "."},
      {"/run/arenad/arenad.sock", "/run/arenad"},
      {"../x", ".."},
  };
  char out[64];
  for (size_t i = 0; i < AR_ARRAY_LEN(c); i++) {
    memset(out, 'z', sizeof out);
    ck_assert_int_eq(ar_path_dir(c[i].path, out, sizeof out), 0);
    ck_assert_msg(strcmp(out, c[i].dir) == 0, "'%s': '%s', want '%s'", c[i].path, out, c[i].dir);
  }
  /* The directory must fit with its NUL: "abc/d" needs 4 bytes. */
  ck_assert_int_eq(ar_path_dir("abc/d", out, 4), 0);
  ck_assert_str_eq(out, "abc");
  ck_assert_int_eq(ar_path_dir("abc/d", out, 3), AR_EOVERFLOW);
  ck_assert_str_eq(out, "");
  ck_assert_int_eq(ar_path_dir("a", out, 2), 0);
  ck_assert_str_eq(out, ".");
  ck_assert_int_eq(ar_path_dir("a", out, 1), AR_EOVERFLOW);
  ck_assert_int_eq(ar_path_dir("a", out, 0), AR_EOVERFLOW);
  ck_assert_int_eq(ar_path_dir(NULL, out, sizeof out), AR_EINVAL);
  ck_assert_int_eq(ar_path_dir("a", NULL, 8), AR_EINVAL);
}
END_TEST

/* The last component as written: a pointer into the path, "" after a trailing slash. */
START_TEST(test_path_base) {
  static const struct { const char *path, *base; } c[] = {
      {"/", ""},     {"a", "a"},      {"/a", "a"},    {"a/b/", ""},          {"//a", "a"},
      {"", ""},      {"a/b", "b"},    {"./m.tflite", "m.tflite"}, {"/x/y/z.json", "z.json"},
  };
  for (size_t i = 0; i < AR_ARRAY_LEN(c); i++) {
    const char *b = ar_path_base(c[i].path);
    ck_assert_msg(strcmp(b, c[i].base) == 0, "'%s': '%s', want '%s'", c[i].path, b, c[i].base);
    ck_assert_ptr_eq(b, c[i].path + strlen(c[i].path) - strlen(c[i].base));   /* inside path */
  }
}
END_TEST

/* ---------------------------------------------------------------- sample statistics */

/* Hand-computed: 1..10 shuffled; numpy.percentile(range(1, 11), [50, 90, 99]) = 5.5, 9.1, 9.91;
 * population std of 1..10 = sqrt(8.25). */
START_TEST(test_stats_summary_and_percentiles) {
  double x[10] = {7, 3, 10, 1, 9, 2, 8, 6, 4, 5};
  ar_stats_t s;
  ar_stats_summarize(x, 10, &s);
  ck_assert_uint_eq(s.n, 10);
  ck_assert_double_eq(s.min, 1);
  ck_assert_double_eq(s.max, 10);
  ck_assert_double_eq_tol(s.mean, 5.5, 1e-12);
  ck_assert_double_eq_tol(s.std, sqrt(8.25), 1e-12);
  ck_assert_double_eq_tol(s.median, 5.5, 1e-12);
  ck_assert_double_eq_tol(s.p90, 9.1, 1e-12);
  ck_assert_double_eq_tol(s.p99, 9.91, 1e-12);
  for (int i = 0; i < 10; i++) ck_assert_double_eq(x[i], i + 1);   /* sorted in place */
  /* One value: every figure is that value, std 0. */
  double one = 4.25;
  ar_stats_summarize(&one, 1, &s);
  ck_assert(s.min == 4.25 && s.median == 4.25 && s.p90 == 4.25 && s.p99 == 4.25 && s.max == 4.25);
  ck_assert_double_eq(s.std, 0);
  /* Ends and empty samples. */
  ck_assert_double_eq(ar_stats_percentile(x, 10, 0), 1);
  ck_assert_double_eq(ar_stats_percentile(x, 10, 100), 10);
  ck_assert_double_eq(ar_stats_percentile(x, 0, 50), 0);
  ar_stats_summarize(x, 0, &s);
  ck_assert_uint_eq(s.n, 0);
  ck_assert_double_eq(s.max, 0);
  /* The median of an even count is the mean of the middle two; odd: the middle one. */
  double e[4] = {4, 1, 3, 2}, o[3] = {9, 1, 5};
  ck_assert_double_eq(ar_stats_median(e, 4), 2.5);
  ck_assert_double_eq(ar_stats_median(o, 3), 5);
  ck_assert_double_eq(ar_stats_median(o, 0), 0);
  /* The clock moves forward. */
  uint64_t a = ar_clock_ns(CLOCK_MONOTONIC), b = ar_clock_ns(CLOCK_MONOTONIC);
  ck_assert_uint_ge(b, a);
}
END_TEST

static Suite *common_suite(void) {
  Suite *s = suite_create("common");
  TCase *text = tcase_create("text");
  tcase_add_test(text, test_utf8_seq_bytes);
  tcase_add_test(text, test_utf8_valid_prefix);
  tcase_add_test(text, test_escape_text);
  tcase_add_test(text, test_xml_write_text);
  suite_add_tcase(s, text);
  TCase *path = tcase_create("path");
  tcase_add_test(path, test_path_dir);
  tcase_add_test(path, test_path_base);
  suite_add_tcase(s, path);
  TCase *stats = tcase_create("stats");
  tcase_add_test(stats, test_stats_summary_and_percentiles);
  suite_add_tcase(s, stats);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(common_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
