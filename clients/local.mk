# clients: libarenaclient (C client library) and arenactl (offline tools + daemon client).
bin_PROGRAMS += arenactl
arenactl_SOURCES = clients/arenactl.c clients/arenactl.h \
  clients/cmd_inspect.c clients/cmd_plan.c clients/cmd_run.c clients/cmd_online.c
arenactl_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(PROTOBUF_C_CFLAGS) $(LIBPNG_CFLAGS)
arenactl_LDADD = $(AR_CORE_LIBS) $(PROTOBUF_C_LIBS) $(LIBPNG_LIBS) $(JPEG_LIBS)
