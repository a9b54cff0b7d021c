# systemd: the daemon's service glue (config file, sd_notify / socket activation) as a convenience
# library, the unit files, the sysusers entry and the example config, and their tests.

# Config file reader and service-manager calls; arenad links it (see the end of this file).
noinst_LTLIBRARIES += libarservice.la
libarservice_la_SOURCES = daemon/ar_config.c daemon/ar_config.h daemon/ar_service.c daemon/ar_service.h
libarservice_la_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) $(SYSTEMD_CFLAGS)
libarservice_la_LIBADD = libarcommon.la $(JANSSON_LIBS) $(SYSTEMD_LIBS)

check_PROGRAMS += tests/check_config
TESTS += tests/check_config
tests_check_config_SOURCES = tests/check_config.c
tests_check_config_CFLAGS = $(TEST_CFLAGS)
tests_check_config_LDADD = libarservice.la libarcommon.la $(TEST_LIBS)

EXTRA_DIST += systemd/arenad.json.example
