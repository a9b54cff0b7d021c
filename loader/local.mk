# loader: verified flatbuffer reader and TFLite model decoding (owner: loader work).
libarloader_la_SOURCES += loader/ar_ops.c loader/ar_ops.h loader/ar_model.h loader/ar_model.c \
  loader/ar_flatbuf.c loader/ar_flatbuf.h loader/ar_schema.h loader/ar_sha256.c loader/ar_sha256.h \
  loader/ar_flexbuf.c loader/ar_flexbuf.h

# Loader tests: real models against data/MANIFEST.json (through arenactl inspect --json) and a
# malformed-model corpus built in memory from them.
check_PROGRAMS += tests/check_loader
TESTS += tests/check_loader
tests_check_loader_SOURCES = tests/check_loader.c
tests_check_loader_CFLAGS = $(TEST_CFLAGS)
tests_check_loader_LDADD = libarloader.la libarcommon.la $(TEST_LIBS) $(JANSSON_LIBS)

# libFuzzer target (not part of `make` or `make check`): `make fuzz_loader` when clang is present.
EXTRA_DIST += tools/fuzz_loader.c
if HAVE_CLANG
AR_FUZZ_LOADER_SRC = $(srcdir)/tools/fuzz_loader.c $(srcdir)/loader/ar_model.c \
  $(srcdir)/loader/ar_flatbuf.c $(srcdir)/loader/ar_flexbuf.c $(srcdir)/loader/ar_ops.c \
  $(srcdir)/loader/ar_sha256.c \
  $(srcdir)/common/ar_error.c $(srcdir)/common/ar_text.c
fuzz_loader: $(AR_FUZZ_LOADER_SRC)
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -I$(top_srcdir) -I$(top_builddir) -o $@ $(AR_FUZZ_LOADER_SRC)
CLEANFILES += fuzz_loader
endif
