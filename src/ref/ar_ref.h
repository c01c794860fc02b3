/* The Block Attention Residuals golden (spec B.1 forward, B.2 analytic
 * backward) in double, each output rounded once; and, with
 * p->chain_round (impl BENCHMARK), the triple rule's benchmark chain: the
 * same computation as the unfused small operators of the seed's PyTorch
 * reference run in the activation dtype, every operator's result rounded.
 * ar_ref.c lists the rounding points. */
#ifndef ATTNOPS_AR_REF_H
#define ATTNOPS_AR_REF_H

#include "attnres/ar_problem.h"

/* Forward or backward by p->backward. */
size_t ar_ref_workspace(const ar_problem *p);
void ar_ref_run(const ar_problem *p, void *workspace);

/* One token's forward (B.1) with p's L, D, rmsnorm, eps, scale and
 * chain_round: V [L][D], w and gamma [D] (gamma unread without RMSNorm)
 * -> h [D] before its rounding, r [L] (1 without RMSNorm) and alpha [L].
 * The run's own forward; the gradient test differentiates it. */
void ar_ref_token_forward(const ar_problem *p, const double *w, const double *gamma, const double *V, double *h,
                          double *r, double *alpha);

#endif
