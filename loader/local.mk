# loader: verified flatbuffer reader and TFLite model decoding (owner: loader work).
libarloader_la_SOURCES += loader/ar_ops.c loader/ar_ops.h loader/ar_model.h loader/ar_model.c \
  loader/ar_flatbuf.c loader/ar_flatbuf.h loader/ar_schema.h loader/ar_sha256.c loader/ar_sha256.h

# Loader tests: real models against data/MANIFEST.json (through arenactl inspect --json) and a
# malformed-model corpus built in memory from them.
check_PROGRAMS += tests/check_loader
TESTS += tests/check_loader
tests_check_loader_SOURCES = tests/check_loader.c
tests_check_loader_CFLAGS = $(TEST_CFLAGS)
tests_check_loader_LDADD = libarloader.la libarcommon.la $(TEST_LIBS) $(JANSSON_LIBS)
