# planner: offline memory planner (no I/O, no model format). Owner: memory-planner work.
libarplanner_la_SOURCES += planner/ar_planner.c planner/ar_planner.h

check_PROGRAMS += tests/check_planner
TESTS += tests/check_planner
tests_check_planner_SOURCES = tests/check_planner.c
tests_check_planner_CFLAGS = $(TEST_CFLAGS)
tests_check_planner_LDADD = libarplanner.la libarcommon.la $(TEST_LIBS)
