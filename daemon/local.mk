# daemon: arenad (libuv event loop, protocol server, the arena pool, model registry).
# The service helper's files (config reader, systemd glue) are listed with the others; keep
# arenad_SOURCES extendable with +=.
sbin_PROGRAMS += arenad
arenad_SOURCES = daemon/arenad.c \
  daemon/ar_daemon.h daemon/ar_server.c daemon/ar_server.h daemon/ar_models.c daemon/ar_models_int.h \
  daemon/ar_model_file.c daemon/ar_invoke.c daemon/ar_compact.c daemon/ar_sessions.c daemon/ar_stats.c daemon/ar_reload.c \
  daemon/ar_conn.c daemon/ar_conn.h daemon/ar_decode.c daemon/ar_decode.h \
  daemon/ar_shm.c daemon/ar_shm.h daemon/ar_pool.c daemon/ar_pool.h daemon/ar_latency.h \
  daemon/ar_alloc_count.c daemon/ar_alloc_count.h \
  daemon/ar_rss.c daemon/ar_rss.h daemon/ar_memory.c daemon/ar_metrics.c daemon/ar_metrics.h
arenad_SOURCES += daemon/ar_config.c daemon/ar_config.h daemon/ar_service.c daemon/ar_service.h
arenad_CFLAGS = $(AM_CFLAGS) $(LIBUV_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS) $(SYSTEMD_CFLAGS)
arenad_LDADD = libarproto.la libarprom.la $(AR_CORE_LIBS) $(LIBUV_LIBS) $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(SYSTEMD_LIBS)
# The generated protocol header must exist before any daemon object is compiled.
$(arenad_OBJECTS): proto/arenad.pb-c.h

# Tests: the protocol and pool (check_protocol), the daemon with real models (check_daemon).
# Both start their own arenad ($AR_BUILDDIR/arenad) on a temp socket.
check_PROGRAMS += tests/check_protocol tests/check_daemon
TESTS += tests/check_protocol tests/check_daemon
EXTRA_DIST += tests/ar_test_daemon.h
tests_check_protocol_SOURCES = tests/check_protocol.c tests/ar_test_daemon.h daemon/ar_pool.c daemon/ar_pool.h \
  daemon/ar_alloc_count.c daemon/ar_alloc_count.h
tests_check_protocol_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_check_protocol_LDADD = libarproto.la libarcommon.la $(PROTOBUF_C_LIBS) $(TEST_LIBS)
tests_check_daemon_SOURCES = tests/check_daemon.c tests/ar_test_client.h tests/ar_test_daemon.h
tests_check_daemon_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_check_daemon_LDADD = libarenaclient.la libarproto.la libarloader.la libarcommon.la $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_protocol_OBJECTS) $(tests_check_daemon_OBJECTS): proto/arenad.pb-c.h

# Signals with requests in flight (SIGHUP add/remove, SIGTERM drain) against a real arenad.
check_PROGRAMS += tests/check_signals
TESTS += tests/check_signals
tests_check_signals_SOURCES = tests/check_signals.c tests/ar_test_daemon.h
tests_check_signals_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_check_signals_LDADD = libarenaclient.la libarproto.la libarcommon.la $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_signals_OBJECTS): proto/arenad.pb-c.h

# The frame scan and budgeted decode (daemon/ar_decode.c), without a daemon.
check_PROGRAMS += tests/check_decode
TESTS += tests/check_decode
tests_check_decode_SOURCES = tests/check_decode.c daemon/ar_decode.c daemon/ar_decode.h
tests_check_decode_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_check_decode_LDADD = libarproto.la libarcommon.la $(PROTOBUF_C_LIBS) $(TEST_LIBS)
$(tests_check_decode_OBJECTS): proto/arenad.pb-c.h

# The connection layer's limits against a real arenad (memory bounds, timeouts, per-uid caps, drain).
check_PROGRAMS += tests/check_conn
TESTS += tests/check_conn
tests_check_conn_SOURCES = tests/check_conn.c tests/ar_test_daemon.h
tests_check_conn_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_check_conn_LDADD = libarproto.la libarcommon.la $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_conn_OBJECTS): proto/arenad.pb-c.h

# libFuzzer target over the connection layer + dispatch with a stub registry (not part of `make`
# or `make check`): `make fuzz_protocol` when clang is present. See tools/fuzz_protocol.c.
EXTRA_DIST += tools/fuzz_protocol.c
if HAVE_CLANG
AR_FUZZ_PROTOCOL_SRC = $(srcdir)/tools/fuzz_protocol.c $(srcdir)/daemon/ar_conn.c $(srcdir)/daemon/ar_decode.c \
  $(srcdir)/daemon/ar_server.c $(srcdir)/daemon/ar_metrics.c $(srcdir)/daemon/ar_shm.c $(srcdir)/daemon/ar_pool.c $(srcdir)/daemon/ar_config.c \
  $(srcdir)/common/ar_error.c $(srcdir)/common/ar_text.c $(srcdir)/common/ar_path.c $(srcdir)/common/ar_prom.c proto/arenad.pb-c.c
fuzz_protocol: $(AR_FUZZ_PROTOCOL_SRC) proto/arenad.pb-c.h
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -I$(top_srcdir) -I$(top_builddir) $(LIBUV_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS) -o $@ \
	  $(AR_FUZZ_PROTOCOL_SRC) $(LIBUV_LIBS) $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) -lpthread
CLEANFILES += fuzz_protocol
endif

# Model files and admin operations (rewrite/truncate after load, sparse indices, reload, non-admin
# peer, model_dirs, max_model_bytes, loads vs invoke latency) against a real arenad.
check_PROGRAMS += tests/check_files
TESTS += tests/check_files
tests_check_files_SOURCES = tests/check_files.c tests/ar_test_daemon.h
tests_check_files_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS)
tests_check_files_LDADD = libarenaclient.la libarproto.la libarloader.la libarcommon.la $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_files_OBJECTS): proto/arenad.pb-c.h
# Resizable inputs through the daemon (batch 1,4,2,8,1; pool figures; ENOSPC; ResizeInput).
check_PROGRAMS += tests/check_resize
TESTS += tests/check_resize
tests_check_resize_SOURCES = tests/check_resize.c tests/ar_test_daemon.h
tests_check_resize_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_check_resize_LDADD = libarenaclient.la libarproto.la libarcommon.la $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_resize_OBJECTS): proto/arenad.pb-c.h

# Resident-memory accounting (stats "memory": the parts add up to RSS) and memory_limit, against a
# real arenad with the four demo models.
check_PROGRAMS += tests/check_rss
TESTS += tests/check_rss
tests_check_rss_SOURCES = tests/check_rss.c tests/ar_test_daemon.h
tests_check_rss_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS)
tests_check_rss_LDADD = libarenaclient.la libarproto.la libarcommon.la $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_rss_OBJECTS): proto/arenad.pb-c.h
# Pool compaction through the daemon (a larger model loads after compaction, invokes in flight
# during a compaction, compaction after unload).
check_PROGRAMS += tests/check_compact
TESTS += tests/check_compact
tests_check_compact_SOURCES = tests/check_compact.c tests/ar_test_client.h tests/ar_test_daemon.h
tests_check_compact_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS)
tests_check_compact_LDADD = libarenaclient.la libarproto.la libarcommon.la $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_compact_OBJECTS): proto/arenad.pb-c.h

# Zero-copy invokes through registered shared-memory buffers (refusals, bounds, no fd or mapping
# left behind by a client that hangs up mid-invoke) against a real arenad.
check_PROGRAMS += tests/check_shm
TESTS += tests/check_shm
tests_check_shm_SOURCES = tests/check_shm.c tests/ar_test_client.h tests/ar_test_daemon.h
tests_check_shm_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS)
tests_check_shm_LDADD = libarenaclient.la libarproto.la libarcommon.la $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_shm_OBJECTS): proto/arenad.pb-c.h
# GetStats from the stats thread's snapshot (one walk per refresh period, counted) and the per-uid
# rate limit of GetStats / GetPlan, against a real arenad.
check_PROGRAMS += tests/check_stats
TESTS += tests/check_stats
tests_check_stats_SOURCES = tests/check_stats.c tests/ar_test_client.h tests/ar_test_daemon.h
tests_check_stats_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS)
tests_check_stats_LDADD = libarenaclient.la libarproto.la libarcommon.la $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_stats_OBJECTS): proto/arenad.pb-c.h

# Sessions of stateful models through a real arenad (issue 27): stream goldens of
# ../shared/golden_state in sessions, interleaved, reset, expired, another uid's, limits, slots
# through a compaction and an unload (each test skips with a message without ../shared).
check_PROGRAMS += tests/check_sessions
TESTS += tests/check_sessions
tests_check_sessions_SOURCES = tests/check_sessions.c tests/ar_test_daemon.h $(AR_TEST_STREAM_SOURCES)
tests_check_sessions_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_sessions_LDADD = libarenaclient.la libarproto.la libarprom.la $(AR_CORE_LIBS) $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_sessions_OBJECTS): proto/arenad.pb-c.h
