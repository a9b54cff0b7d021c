# common: error list and small shared helpers (no dependencies).
libarcommon_la_SOURCES += common/ar_error.c common/ar_error.h common/ar_text.c common/ar_text.h common/ar_path.c common/ar_path.h common/ar_util.h common/ar_varint.h \
  common/ar_stats.c common/ar_stats.h
# sqrt in ar_stats.c (the benchmark programs' standard deviation).
libarcommon_la_LIBADD = -lm

# The common layer's helpers: UTF-8 decoder and escapes, path parts, sample statistics.
check_PROGRAMS += tests/check_common
TESTS += tests/check_common
tests_check_common_SOURCES = tests/check_common.c
tests_check_common_CFLAGS = $(TEST_CFLAGS)
tests_check_common_LDADD = libarcommon.la $(TEST_LIBS)

# The stats JSON as Prometheus text exposition (common/ar_prom.h): one rendering for
# `arenactl stats --prometheus` and arenad's scrape endpoint (metrics_listen); needs jansson.
noinst_LTLIBRARIES += libarprom.la
libarprom_la_SOURCES = common/ar_prom.c common/ar_prom.h
libarprom_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
libarprom_la_LIBADD = libarcommon.la $(JANSSON_LIBS)
