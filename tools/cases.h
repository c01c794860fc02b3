/* Case loading for the CLI (tools/cases.c). */
#ifndef ATTNOPS_TOOLS_CASES_H
#define ATTNOPS_TOOLS_CASES_H

#include "harness_case.h"

/* The cases of built-in suites and case files, in order, those whose name
 * matches the filter (NULL: all); -1 after printing why. */
int harness_load_all(const char *const *sources, int nsources, const char *filter, harness_case **cases);

#endif
