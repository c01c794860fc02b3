/* The fast KeyPool kernel (tile-GEMM projections, OpenMP); same contract
 * as the reference, kp_ref.h.  kp_cpu.c states how close it is. */
#ifndef ATTNOPS_KP_CPU_H
#define ATTNOPS_KP_CPU_H

#include "keypool/kp_problem.h"

size_t kp_cpu_workspace(const kp_problem *p);
void kp_cpu_run(const kp_problem *p, void *workspace);

#endif
