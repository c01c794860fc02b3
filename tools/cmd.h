/* The attnops subcommands: each takes the arguments after its name and
 * returns the process exit status (0 ok, 1 a verdict failed, 2 bad usage). */
#ifndef ATTNOPS_TOOLS_CMD_H
#define ATTNOPS_TOOLS_CMD_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "harness_case.h"

/* The whole CLI: argv[1] names the subcommand (tools/main.c is the
 * binary's main; tests/support/broken_cli.c runs it with a faulty kernel). */
int attnops_main(int argc, char **argv);

int cmd_list(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_golden(int argc, char **argv);
int cmd_compare(int argc, char **argv);

/* The cases of built-in suites and case files, in order, those whose name
 * matches the filter (NULL: all); -1 after printing why. */
int harness_load_all(const char *const *sources, int nsources, const char *filter, harness_case **cases);
/* The triple rule's benchmark chain of a FlashAttention case
 * (ATTNOPS_IMPL_BENCHMARK) into a fresh *bench (fa_case_free it, whatever
 * the status): its own forward with auto_grad, else the golden forward's
 * outputs, as the kernel chain gets them. */
attnops_status fa_bench_chain(const harness_case *hc, bool auto_grad, int threads, const fa_case *golden,
                              fa_case *bench);
/* The .npy export of `golden` and `run --save`: per case a directory of
 * tensors (the kernel and benchmark chains' outputs too when given, else
 * NULL), one manifest.json.  Each returns 0, or -1 after a message. */
typedef struct export_set export_set;
export_set *export_open(const char *dir); /* NULL after a message */
int export_fa_case(export_set *x, const harness_case *hc, const fa_case *golden, const fa_case *kernel,
                   const fa_case *bench);
/* KeyPool: the chains after kp_case_run, with their pooled_key outputs. */
int export_kp_case(export_set *x, const harness_case *hc, const kp_case *golden, const tu_tensor *golden_pooled,
                   const kp_case *kernel, const tu_tensor *kernel_pooled);
/* AttnRes: the case's inputs and its chains after ar_case_run. */
int export_ar_case(export_set *x, const harness_case *hc, const ar_case *c, ar_chain *golden, ar_chain *kernel,
                   ar_chain *bench);
int export_close(export_set *x); /* writes manifest.json; 0 or -1 */

#endif
