# daemon: rules for this layer (see top Makefile.am).
sbin_PROGRAMS += arenad
arenad_SOURCES = daemon/arenad.c
