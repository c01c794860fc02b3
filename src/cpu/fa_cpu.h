/* The fast FlashAttention kernels (flash algorithm, fp32 accumulation, tile
 * GEMMs, OpenMP).  Same contract as the reference: fa_ref.h. */
#ifndef ATTNOPS_FA_CPU_H
#define ATTNOPS_FA_CPU_H

#include "fa/fa_problem.h"

size_t fa_cpu_fwd_workspace(const fa_problem *p);
void fa_cpu_fwd(const fa_problem *p, void *workspace);
size_t fa_cpu_bwd_workspace(const fa_problem *p);
void fa_cpu_bwd(const fa_problem *p, void *workspace);

/* The forward of a short query on the split-KV kernel (fa_short_query.c):
 * where it fits, the same contract with K and V read in place. */
bool fa_short_query_fits(const fa_problem *p);
size_t fa_short_query_workspace(const fa_problem *p);
void fa_short_query_fwd(const fa_problem *p, void *workspace);

#endif
