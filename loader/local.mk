# loader: verified flatbuffer reader and TFLite model decoding (owner: loader work).
libarloader_la_SOURCES += loader/ar_ops.c loader/ar_ops.h loader/ar_model.h loader/ar_model.c \
  loader/ar_flatbuf.c loader/ar_flatbuf.h loader/ar_schema.h loader/ar_sha256.c loader/ar_sha256.h
