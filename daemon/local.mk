# daemon: arenad (libuv event loop, protocol server, the arena pool, model registry).
# The service helper's files (config reader, systemd glue) are listed with the others; keep
# arenad_SOURCES extendable with +=.
sbin_PROGRAMS += arenad
arenad_SOURCES = daemon/arenad.c \
  daemon/ar_daemon.h daemon/ar_server.c daemon/ar_server.h daemon/ar_models.c \
  daemon/ar_pool.c daemon/ar_pool.h daemon/ar_latency.h \
  daemon/ar_alloc_count.c daemon/ar_alloc_count.h
arenad_SOURCES += daemon/ar_config.c daemon/ar_config.h daemon/ar_service.c daemon/ar_service.h
arenad_CFLAGS = $(AM_CFLAGS) $(LIBUV_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS) $(SYSTEMD_CFLAGS)
arenad_LDADD = libarproto.la $(AR_CORE_LIBS) $(LIBUV_LIBS) $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(SYSTEMD_LIBS)
# The generated protocol header must exist before any daemon object is compiled.
$(arenad_OBJECTS): proto/arenad.pb-c.h
