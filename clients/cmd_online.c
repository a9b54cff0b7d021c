/* cmd_online.c - arenactl commands that talk to the daemon. Not implemented yet: stubs fail. */
#include <stdio.h>

#include "clients/arenactl.h"

#define AR__STUB(fn) \
  int fn(int argc, char **argv) { (void)argc; fprintf(stderr, "arenactl %s: not implemented yet\n", argv[0]); return 1; }
AR__STUB(ar_cmd_ping)
AR__STUB(ar_cmd_stats)
AR__STUB(ar_cmd_models)
AR__STUB(ar_cmd_load)
AR__STUB(ar_cmd_unload)
AR__STUB(ar_cmd_invoke)
AR__STUB(ar_cmd_plan_remote)
