# proto: the wire protocol (proto/arenad.proto), compiled with protoc-c at build time.
# The generated proto/arenad.pb-c.[ch] land in the BUILD dir (VPATH builds work: the daemon and
# the client library include "proto/arenad.pb-c.h", found through -I$(top_builddir)).
# libarproto.la is a convenience library linked into both arenad and libarenaclient.
EXTRA_DIST += proto/arenad.proto
BUILT_SOURCES += proto/arenad.pb-c.c proto/arenad.pb-c.h
CLEANFILES += proto/arenad.pb-c.c proto/arenad.pb-c.h proto/arenad.pb-c.stamp
noinst_LTLIBRARIES += libarproto.la
nodist_libarproto_la_SOURCES = proto/arenad.pb-c.c proto/arenad.pb-c.h
libarproto_la_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS)
libarproto_la_LIBADD = $(PROTOBUF_C_LIBS)

# One stamp so that a parallel make runs protoc-c once for both outputs.
proto/arenad.pb-c.stamp: $(top_srcdir)/proto/arenad.proto
	@$(MKDIR_P) proto
	$(AM_V_GEN)$(PROTOC_C) --proto_path=$(top_srcdir) --c_out=$(top_builddir) $(top_srcdir)/proto/arenad.proto
	@touch $@
proto/arenad.pb-c.c proto/arenad.pb-c.h: proto/arenad.pb-c.stamp
	@test -f $@ || { rm -f proto/arenad.pb-c.stamp; $(MAKE) $(AM_MAKEFLAGS) proto/arenad.pb-c.stamp; }
