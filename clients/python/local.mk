# clients/python: the pure-Python client package `arenad` (clients/python/arenad/) and its tests.
# The protobuf classes (arenad_pb2.py) are generated from proto/arenad.proto by protoc into the
# BUILD tree (clients/python/arenad/arenad_pb2.py); the package's __init__ extends its __path__
# so that the sources in the source tree and the generated module in the build tree form one
# package (PYTHONPATH=<srcdir>/clients/python:<builddir>/clients/python). `make install` puts
# both in $(pythondir)/arenad (configure: --with-python, PYTHON=, pythondir=).
EXTRA_DIST += clients/python/arenad/__init__.py clients/python/arenad/client.py \
  clients/python/arenad/image.py clients/python/arenad/detection.py \
  clients/python/pyproject.toml clients/python/setup.py clients/python/README.md \
  examples/detect_and_classify.py
if WITH_PYTHON
arenadpydir = $(pythondir)/arenad
arenadpy_PYTHON = clients/python/arenad/__init__.py clients/python/arenad/client.py \
  clients/python/arenad/image.py clients/python/arenad/detection.py
nodist_arenadpy_PYTHON = clients/python/arenad/arenad_pb2.py
BUILT_SOURCES += clients/python/arenad/arenad_pb2.py
CLEANFILES += clients/python/arenad/arenad_pb2.py
clients/python/arenad/arenad_pb2.py: $(top_srcdir)/proto/arenad.proto
	@$(MKDIR_P) clients/python/arenad
	$(AM_V_GEN)$(PROTOC) --proto_path=$(top_srcdir)/proto --python_out=clients/python/arenad \
	  $(top_srcdir)/proto/arenad.proto

# The example, installed with the documentation.
pyexamplesdir = $(docdir)/examples
pyexamples_DATA = examples/detect_and_classify.py
endif

# The client's and the Prometheus exposition's tests against a real daemon (pytest when
# python3-pytest is installed, else unittest; a skip without --with-python).
EXTRA_DIST += tests/python/run-tests tests/python/ardaemon.py tests/python/promparse.py \
  tests/python/test_client.py tests/python/test_prometheus.py \
  tests/python/test_image.py tests/python/test_install.py tests/python/test_sessions.py
TESTS += tests/python/run-tests
AM_TESTS_ENVIRONMENT += AR_PYTHON='$(PYTHON)'; export AR_PYTHON;
# The integer-I/O test model (uint8/int8 with quantization, int32, int64, bool) and the resize model
# (a batch input) for test_client.py,
# written by a small program from tests/ar_test_model.c (the C suites build the same model).
check_PROGRAMS += tests/mk_int_io_model
tests_mk_int_io_model_SOURCES = tests/mk_int_io_model.c
tests_mk_int_io_model_CFLAGS = $(TEST_CFLAGS)
tests_mk_int_io_model_LDADD = $(TEST_LIBS)
