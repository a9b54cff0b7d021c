# bench: rules for this layer (see top Makefile.am).
