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

# Units: @sbindir@ and @sysconfdir@ are filled in at build time (make expands ${prefix} there).
EXTRA_DIST += systemd/arenad.service.in systemd/arenad.socket systemd/sysusers/arenad.conf \
  systemd/verify-units
CLEANFILES += systemd/arenad.service
systemd/arenad.service: $(top_srcdir)/systemd/arenad.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && \
	  sed -e 's|[@]sbindir[@]|$(sbindir)|g' -e 's|[@]sysconfdir[@]|$(sysconfdir)|g' \
	    $(top_srcdir)/systemd/arenad.service.in > $@.tmp && mv -f $@.tmp $@

# The generator that bounds the service's memory from the config's memory_limit (MemoryHigh=,
# MemoryMax=; it runs `arenad --memory-dropin`).
EXTRA_DIST += systemd/arenad-generator.in
CLEANFILES += systemd/arenad-generator
systemd/arenad-generator: $(top_srcdir)/systemd/arenad-generator.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && \
	  sed -e 's|[@]sbindir[@]|$(sbindir)|g' -e 's|[@]sysconfdir[@]|$(sysconfdir)|g' \
	    $(top_srcdir)/systemd/arenad-generator.in > $@.tmp && chmod +x $@.tmp && mv -f $@.tmp $@

# Metrics for Prometheus: a timer runs `arenactl stats --prometheus --output` into node_exporter's
# textfile-collector directory (see the unit's comments for another directory).
EXTRA_DIST += systemd/arenad-metrics.service.in systemd/arenad-metrics.timer
CLEANFILES += systemd/arenad-metrics.service
systemd/arenad-metrics.service: $(top_srcdir)/systemd/arenad-metrics.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) systemd && \
	  sed -e 's|[@]bindir[@]|$(bindir)|g' -e 's|[@]sysconfdir[@]|$(sysconfdir)|g' \
	    $(top_srcdir)/systemd/arenad-metrics.service.in > $@.tmp && mv -f $@.tmp $@

if WITH_SYSTEMD
systemdunitdir = $(SYSTEMD_UNITDIR)
systemdunit_DATA = systemd/arenad.service systemd/arenad.socket systemd/arenad-metrics.service \
  systemd/arenad-metrics.timer
systemdgeneratordir = $(SYSTEMD_GENERATORDIR)
systemdgenerator_SCRIPTS = systemd/arenad-generator
sysusersdir = $(SYSUSERS_DIR)
sysusers_DATA = systemd/sysusers/arenad.conf
noinst_DATA = systemd/arenad.service systemd/arenad-metrics.service systemd/arenad-generator
endif

# The example config goes next to where the unit looks for the real one; the real one is created
# from it on first install only, never overwritten.
arenadconfdir = $(sysconfdir)/arenad
arenadconf_DATA = systemd/arenad.json.example
install-data-hook: install-arenad-config
install-arenad-config:
	@if test ! -f "$(DESTDIR)$(arenadconfdir)/arenad.json"; then \
	  echo " install example as $(arenadconfdir)/arenad.json"; \
	  $(INSTALL_DATA) $(top_srcdir)/systemd/arenad.json.example "$(DESTDIR)$(arenadconfdir)/arenad.json"; \
	fi
.PHONY: install-arenad-config

# systemd-analyze verify must accept the units (skips when the tool is absent).
TESTS += systemd/verify-units

# arenad under a simulated service manager: NOTIFY_SOCKET messages and socket activation
# (skipped without --with-systemd, where the service calls are no-ops).
check_PROGRAMS += tests/check_service
TESTS += tests/check_service
tests_check_service_SOURCES = tests/check_service.c
tests_check_service_CFLAGS = $(TEST_CFLAGS) $(PROTOBUF_C_CFLAGS)
tests_check_service_LDADD = libarproto.la $(TEST_LIBS)
EXTRA_tests_check_service_DEPENDENCIES = arenad
