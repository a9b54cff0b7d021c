/* cmd_run.c - arenactl run (offline). Not implemented yet: this stub says so and fails. */
#include <stdio.h>

#include "clients/arenactl.h"

int ar_cmd_run(int argc, char **argv) {
  (void)argc;
  fprintf(stderr, "arenactl %s: not implemented yet\n", argv[0]);
  return 1;
}
