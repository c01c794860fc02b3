/* The chains the CLI runs besides the golden and the kernel (tools/chains.c). */
#ifndef ATTNOPS_TOOLS_CHAINS_H
#define ATTNOPS_TOOLS_CHAINS_H

#include <stdbool.h>

#include "harness_case.h"

/* The triple rule's benchmark chain of a FlashAttention case
 * (ATTNOPS_IMPL_BENCHMARK) into a fresh *bench (fa_case_free it, whatever
 * the status): its own forward with auto_grad, else the golden forward's
 * outputs, as the kernel chain gets them. */
attnops_status fa_bench_chain(const harness_case *hc, bool auto_grad, int threads, const fa_case *golden,
                              fa_case *bench);

#endif
