# loader: verified flatbuffer reader and TFLite model decoding (owner: loader work).
libarloader_la_SOURCES += loader/ar_ops.c loader/ar_ops.h loader/ar_model.h
