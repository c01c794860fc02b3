/* The fast FlashAttention kernels (flash algorithm, fp32 accumulation, tile
 * GEMMs, OpenMP).  Same contract as the reference: fa_ref.h. */
#ifndef ATTNOPS_FA_CPU_H
#define ATTNOPS_FA_CPU_H

#include "fa/fa_problem.h"

size_t fa_cpu_fwd_workspace(const fa_problem *p);
void fa_cpu_fwd(const fa_problem *p, void *workspace);
size_t fa_cpu_bwd_workspace(const fa_problem *p);
void fa_cpu_bwd(const fa_problem *p, void *workspace);

#endif
