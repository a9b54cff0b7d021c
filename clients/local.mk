# clients: libarenaclient (C client library) and arenactl (offline tools + daemon client).
bin_PROGRAMS += arenactl
arenactl_SOURCES = clients/arenactl.c clients/arenactl.h \
  clients/cmd_inspect.c clients/cmd_plan.c clients/cmd_run.c clients/cmd_online.c
arenactl_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(PROTOBUF_C_CFLAGS) $(LIBPNG_CFLAGS)
arenactl_LDADD = $(AR_CORE_LIBS) $(PROTOBUF_C_LIBS) $(LIBPNG_LIBS) $(JPEG_LIBS)

# Image input for `arenactl invoke --image`: PNG/JPEG -> float32 NHWC tensor (clients/image.h).
noinst_LTLIBRARIES += libarimage.la
libarimage_la_SOURCES = clients/image.c clients/image.h
libarimage_la_CFLAGS = $(AM_CFLAGS) $(LIBPNG_CFLAGS)
libarimage_la_LIBADD = libarcommon.la $(LIBPNG_LIBS) $(JPEG_LIBS) -lm
arenactl_LDADD += libarimage.la

check_PROGRAMS += tests/check_image
TESTS += tests/check_image
tests_check_image_SOURCES = tests/check_image.c
tests_check_image_CFLAGS = $(TEST_CFLAGS) $(LIBPNG_CFLAGS)
tests_check_image_LDADD = libarimage.la libarcommon.la $(LIBPNG_LIBS) $(JPEG_LIBS) $(TEST_LIBS)
