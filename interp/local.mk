# interp: rules for this layer (see top Makefile.am).
# interpreter (owner: interpreter work): prepare / place / invoke over the kernels.
libarinterp_la_SOURCES += interp/ar_interp.c interp/ar_interp.h interp/ar_interp_int.h
# the state slot (issue 27): layout, bind, reset of every piece of per-stream state.
libarinterp_la_SOURCES += interp/ar_state.c
# values computed at prepare for operands that set shapes (FILL dims from SHAPE of an input).
libarinterp_la_SOURCES += interp/ar_prepval.c
# lifetimes + budget table (owner: memory-planner work).
libarinterp_la_SOURCES += interp/ar_lifetimes.c interp/ar_lifetimes.h interp/ar_budget.c interp/ar_budget.h
# interpreter tests (owner: interpreter work): goldens, plan independence, zero allocation.
check_PROGRAMS += tests/check_interp tests/check_noalloc
TESTS += tests/check_interp tests/check_noalloc
tests_check_interp_SOURCES = tests/check_interp.c
tests_check_interp_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_interp_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)
tests_check_noalloc_SOURCES = tests/check_noalloc.c tests/ar_test_stream.c tests/ar_test_stream.h
tests_check_noalloc_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_noalloc_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)
# The thread pool (kernels/parallel.c) and every model's outputs bit-identical across thread counts.
check_PROGRAMS += tests/check_threads
TESTS += tests/check_threads
tests_check_threads_SOURCES = tests/check_threads.c tests/ar_test_client.h tests/ar_test_daemon.h
tests_check_threads_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_check_threads_LDADD = libarenaclient.la libarproto.la $(AR_CORE_LIBS) $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_threads_OBJECTS): proto/arenad.pb-c.h
# state slots (issue 27): layout by hand, bind / reset / re-place, golden streams on interleaved slots.
check_PROGRAMS += tests/check_state
TESTS += tests/check_state
tests_check_state_SOURCES = tests/check_state.c $(AR_TEST_STREAM_SOURCES)
tests_check_state_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_state_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)
check_PROGRAMS += tests/check_lifetimes
TESTS += tests/check_lifetimes
tests_check_lifetimes_SOURCES = tests/check_lifetimes.c
tests_check_lifetimes_CFLAGS = $(TEST_CFLAGS)
tests_check_lifetimes_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)

# models_extra (pose, face landmarks) against tests/golden_extra; skips models that are absent.
check_PROGRAMS += tests/check_extra
TESTS += tests/check_extra
tests_check_extra_SOURCES = tests/check_extra.c
tests_check_extra_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_extra_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)

# The quantized models of ../shared/models_q against ../shared/golden_q (issue 9): offline, every
# plan, a share group with a float model, and through arenad. Skips when ../shared is absent.
check_PROGRAMS += tests/check_quant_models
TESTS += tests/check_quant_models
tests_check_quant_models_SOURCES = tests/check_quant_models.c tests/ar_test_daemon.h
tests_check_quant_models_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_check_quant_models_LDADD = libarenaclient.la libarproto.la $(AR_CORE_LIBS) $(PROTOBUF_C_LIBS) $(JANSSON_LIBS) $(TEST_LIBS)
$(tests_check_quant_models_OBJECTS): proto/arenad.pb-c.h

# Streams (issue 27): the stream harness (tests/ar_test_stream.h, linked into the suites that replay
# streams) and `arenactl run --steps` on the synthetic streams of tests/golden/streams/;
# tests/mk_stream_models writes those models for tools/mk_stream_goldens.py.
check_PROGRAMS += tests/check_stream tests/mk_stream_models
TESTS += tests/check_stream
AR_TEST_STREAM_SOURCES = tests/ar_test_stream.c tests/ar_test_stream.h
tests_check_stream_SOURCES = tests/check_stream.c $(AR_TEST_STREAM_SOURCES)
tests_check_stream_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_stream_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)
# Control flow and resource variables (issue 27): WHILE, IF, CALL_ONCE, VAR_HANDLE/READ/ASSIGN on
# synthetic models of several subgraphs, and the LiteRT control-flow streams of ../shared/golden_state
# in process and through arenactl (skipped when ../shared/models_state is absent).
check_PROGRAMS += tests/check_control_flow
TESTS += tests/check_control_flow
tests_check_control_flow_SOURCES = tests/check_control_flow.c $(AR_TEST_STREAM_SOURCES)
tests_check_control_flow_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_control_flow_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)
# LSTM float (issue 27, kernels/lstm.c): the LSTM streams of ../shared/golden_state in process and
# through arenactl run --steps (skipped when ../shared/models_state is absent).
check_PROGRAMS += tests/check_lstm
TESTS += tests/check_lstm
tests_check_lstm_SOURCES = tests/check_lstm.c $(AR_TEST_STREAM_SOURCES)
tests_check_lstm_CFLAGS = $(TEST_CFLAGS) $(OPENBLAS_CFLAGS)
tests_check_lstm_LDADD = $(AR_CORE_LIBS) $(TEST_LIBS)
tests_mk_stream_models_SOURCES = tests/mk_stream_models.c
tests_mk_stream_models_CFLAGS = $(TEST_CFLAGS)
tests_mk_stream_models_LDADD = $(TEST_LIBS)
