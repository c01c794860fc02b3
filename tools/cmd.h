/* The attnops subcommands: each takes the arguments after its name and
 * returns the process exit status (0 ok, 1 a verdict failed, 2 bad usage). */
#ifndef ATTNOPS_TOOLS_CMD_H
#define ATTNOPS_TOOLS_CMD_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

int cmd_list(int argc, char **argv);
int cmd_run(int argc, char **argv);

#endif
