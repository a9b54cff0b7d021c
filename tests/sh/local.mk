# tests/sh: tests written in shell, run by `make check` as they are (AR_SRCDIR, AR_BUILDDIR from
# AM_TESTS_ENVIRONMENT). check_models_q.sh: tools/models_q.sh (`./dev models --quant`) and
# data/models_q.tsv; check_quickstart.sh: README.md's quickstart, copied out and run.
EXTRA_DIST += tests/sh/check_models_q.sh tests/sh/check_quickstart.sh tools/models_q.sh
TESTS += tests/sh/check_models_q.sh tests/sh/check_quickstart.sh
