/* What every test program shares beyond verify/: the skip of a suite whose
 * ISA the CPU lacks, and the closing line with the exit status. */
#ifndef ATTNOPS_TESTS_SUITE_H
#define ATTNOPS_TESTS_SUITE_H

#include "testutil.h"

/* A suite run under ATTNOPS_ISA (tests/CMakeLists.txt, once per ISA) calls
 * this first: it exits TU_SKIP_EXIT, which ctest reports as skipped, after
 * printing SKIPPED when the CPU lacks that ISA, and fails on a name no ISA
 * of this build has; without ATTNOPS_ISA it returns. */
#define TU_SKIP_EXIT 77
void tu_require_isa(void);

/* Prints "N passed, M failed" and returns the process exit code. */
int tu_finish(const char *suite, int passed);

#endif
