/* The FusedInferAttentionScore golden (fia_ref.c): double accumulation,
 * every output rounded once. */
#ifndef ATTNOPS_FIA_REF_H
#define ATTNOPS_FIA_REF_H

#include "fia/fia_problem.h"

size_t fia_ref_workspace(const fia_problem *p);
void fia_ref_run(const fia_problem *p, void *workspace);

#endif
