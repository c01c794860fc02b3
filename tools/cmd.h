/* The attnops subcommands: each takes the arguments after its name and
 * returns the process exit status (0 ok, 1 a verdict failed, 2 bad usage). */
#ifndef ATTNOPS_TOOLS_CMD_H
#define ATTNOPS_TOOLS_CMD_H

/* The whole CLI: argv[1] names the subcommand (tools/main.c is the
 * binary's main; tests/support/broken_cli.c runs it with a faulty kernel). */
int attnops_main(int argc, char **argv);

int cmd_list(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_golden(int argc, char **argv);
int cmd_compare(int argc, char **argv);

#endif
