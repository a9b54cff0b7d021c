# clients: libarenaclient (C client library) and arenactl (offline tools + daemon client).
bin_PROGRAMS += arenactl
arenactl_SOURCES = clients/arenactl.c clients/arenactl.h \
  clients/cmd_inspect.c clients/cmd_ops.c clients/cmd_plan.c clients/cmd_run.c clients/cmd_bench.c clients/cmd_run_steps.c clients/cmd_run_steps.h clients/cmd_online.c \
  clients/cli_tensor.c clients/cli_tensor.h clients/cli_io.c clients/cli_io.h clients/cli_stats.c clients/cli_stats.h
arenactl_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(PROTOBUF_C_CFLAGS) $(LIBPNG_CFLAGS)
arenactl_LDADD = libarprom.la $(AR_CORE_LIBS) $(PROTOBUF_C_LIBS) $(LIBPNG_LIBS) $(JPEG_LIBS)

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

# libarenaclient: the public C client library (clients/ar_client.h), exported symbols only
# (AR_EXPORT; the build uses -fvisibility=hidden), pkg-config file arenaclient.pc. The header is
# installed as $(includedir)/arenad/client.h (`#include <arenad/client.h>`), a name of the
# project's own rather than a bare ar_client.h in /usr/include: a copy under that name is made in
# the build tree and installed from there.
lib_LTLIBRARIES += libarenaclient.la
arenadincludedir = $(includedir)/arenad
nodist_arenadinclude_HEADERS = clients/arenad/client.h
EXTRA_DIST += clients/ar_client.h
BUILT_SOURCES += clients/arenad/client.h
CLEANFILES += clients/arenad/client.h
clients/arenad/client.h: $(top_srcdir)/clients/ar_client.h
	$(AM_V_GEN)$(MKDIR_P) clients/arenad && cp $(top_srcdir)/clients/ar_client.h $@
pkgconfig_DATA += clients/arenaclient.pc
libarenaclient_la_SOURCES = clients/ar_client.c clients/ar_client.h
libarenaclient_la_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
libarenaclient_la_LIBADD = libarproto.la libarcommon.la $(PROTOBUF_C_LIBS)
libarenaclient_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0
$(libarenaclient_la_OBJECTS): proto/arenad.pb-c.h
arenactl_LDADD += libarenaclient.la $(JANSSON_LIBS)
$(arenactl_OBJECTS): proto/arenad.pb-c.h

# The demo's output decoding: MediaPipe SSD anchors/boxes (clients/ssd.h) and demo_decode.
noinst_LTLIBRARIES += libarssd.la
libarssd_la_SOURCES = clients/ssd.c clients/ssd.h
libarssd_la_LIBADD = -lm
noinst_PROGRAMS += clients/demo_decode
clients_demo_decode_SOURCES = clients/demo_decode.c
clients_demo_decode_LDADD = libarssd.la libarimage.la libarcommon.la $(LIBPNG_LIBS) $(JPEG_LIBS) -lm

check_PROGRAMS += tests/check_ssd
TESTS += tests/check_ssd
tests_check_ssd_SOURCES = tests/check_ssd.c
tests_check_ssd_CFLAGS = $(TEST_CFLAGS)
tests_check_ssd_LDADD = libarssd.la $(TEST_LIBS)

# arenactl's result printing and image inputs (clients/cli_tensor.c), its input files and output
# directory (clients/cli_io.c), and the arenactl program itself (--help, invoke and run against
# a real arenad: the tests run $(AR_BUILDDIR)/arenactl and arenad).
check_PROGRAMS += tests/check_cli
TESTS += tests/check_cli
tests_check_cli_SOURCES = tests/check_cli.c clients/cli_tensor.c clients/cli_tensor.h clients/cli_io.c clients/cli_io.h \
  clients/cli_stats.c clients/cli_stats.h
tests_check_cli_CFLAGS = $(TEST_CFLAGS) $(LIBPNG_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS)
tests_check_cli_LDADD = libarimage.la libarcommon.la $(LIBPNG_LIBS) $(JPEG_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_cli_OBJECTS): proto/arenad.pb-c.h
