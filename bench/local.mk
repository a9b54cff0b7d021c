# bench: rules for this layer (see top Makefile.am).
# bench/invoke (owner: interpreter work): arenad vs LiteRT per model; bench/invoke.sh runs it
# with the LiteRT reference runner set up from ../shared/ref.
noinst_PROGRAMS += bench/invoke
bench_invoke_SOURCES = bench/invoke.c
bench_invoke_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(OPENBLAS_CFLAGS)
bench_invoke_LDADD = $(AR_CORE_LIBS)
EXTRA_DIST += bench/invoke.sh
# bench/planner (owner: memory-planner work): every strategy's arena, the bound and planning time
# per real model and on generated 500/2000/5000-operator graphs.
noinst_PROGRAMS += bench/planner
bench_planner_SOURCES = bench/planner.c
bench_planner_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(OPENBLAS_CFLAGS)
bench_planner_LDADD = $(AR_CORE_LIBS)

# bench/ipc (owner: daemon work): Ping round trips/s (1 and 8 clients), Invoke overhead over in
# process (median, p99) on the bytes path and the shared-memory path (face_detection_short_range,
# selfie_segmentation); --throughput: 8 clients x 4 models in 2 share groups per `threads` value;
# --json. Starts its own arenad unless --socket is given.
noinst_PROGRAMS += bench/ipc
bench_ipc_SOURCES = bench/ipc.c
bench_ipc_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(OPENBLAS_CFLAGS) $(JANSSON_CFLAGS)
bench_ipc_LDADD = libarenaclient.la libarproto.la libartest.la $(AR_CORE_LIBS) $(PROTOBUF_C_LIBS) $(JANSSON_LIBS)
$(bench_ipc_OBJECTS): proto/arenad.pb-c.h

# bench/stats: a client's Ping and Invoke p50/p99 quiet and under 16 GetStats pollers against a daemon
# with 50 models, with the pollers as admins (no rate limit) and as another uid (rate-limited).
noinst_PROGRAMS += bench/stats
bench_stats_SOURCES = bench/stats.c
bench_stats_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(JANSSON_CFLAGS)
bench_stats_LDADD = libarenaclient.la libarproto.la libartest.la $(AR_CORE_LIBS) $(PROTOBUF_C_LIBS) $(JANSSON_LIBS)
$(bench_stats_OBJECTS): proto/arenad.pb-c.h

# bench/py_invoke.py (owner: Python client work): the Python client's invokes/s and overhead per
# invoke (bytes path with views, with copy=True, shm path) next to bench/ipc's C client figures on
# the same daemon. Run by hand: PYTHONPATH=clients/python:build/clients/python bench/py_invoke.py
EXTRA_DIST += bench/py_invoke.py

# bench/sessions (issue 27): per stateful model of ../shared/models_state, the in-process bind
# cost and, through arenad with N = 1, 100, 10,000 open sessions, state bytes per slot, pool bytes
# of the slots, invoke latency with the same session and with a switch before every invoke.
noinst_PROGRAMS += bench/sessions
bench_sessions_SOURCES = bench/sessions.c
bench_sessions_CFLAGS = $(AM_CFLAGS) $(PROTOBUF_C_CFLAGS) $(OPENBLAS_CFLAGS) $(JANSSON_CFLAGS)
bench_sessions_LDADD = libarenaclient.la libarproto.la libartest.la $(AR_CORE_LIBS) $(PROTOBUF_C_LIBS) $(JANSSON_LIBS)
$(bench_sessions_OBJECTS): proto/arenad.pb-c.h

# bench/fixed (issue 29): the fixed costs per invoke and per operator on generated chains of 1, 10,
# 100 tiny operators (float ADD, int8 ADD, int8 FULLY_CONNECTED), arenad at one and two threads,
# input/output copies, and native TFLite (builtin, XNNPACK: ../shared/ref/native/tflite_run) in one run.
noinst_PROGRAMS += bench/fixed
bench_fixed_SOURCES = bench/fixed.c
bench_fixed_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(OPENBLAS_CFLAGS)
bench_fixed_LDADD = libartest.la $(AR_CORE_LIBS) $(JANSSON_LIBS)
