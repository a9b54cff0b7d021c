# interp: rules for this layer (see top Makefile.am).
# interpreter (owner: interpreter work): prepare / place / invoke over the kernels.
libarinterp_la_SOURCES += interp/ar_interp.c interp/ar_interp.h
# lifetimes + budget table (owner: memory-planner work).
libarinterp_la_SOURCES += interp/ar_lifetimes.c interp/ar_lifetimes.h interp/ar_budget.c interp/ar_budget.h
