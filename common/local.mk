# common: error list and small shared helpers (no dependencies).
libarcommon_la_SOURCES += common/ar_error.c common/ar_error.h common/ar_util.h common/ar_varint.h
