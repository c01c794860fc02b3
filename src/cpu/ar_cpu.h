/* The fast Block Attention Residuals kernel (f32, vectorised rows, OpenMP
 * over token tiles); same contract as the reference, ar_ref.h.  ar_cpu.c
 * states how close it is. */
#ifndef ATTNOPS_AR_CPU_H
#define ATTNOPS_AR_CPU_H

#include "attnres/ar_problem.h"

/* Forward or backward by p->backward. */
size_t ar_cpu_workspace(const ar_problem *p);
void ar_cpu_run(const ar_problem *p, void *workspace);

#endif
