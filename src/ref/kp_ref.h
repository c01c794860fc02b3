/* The KeyPool golden (spec A.3): the golden's scalar traversal, position by
 * position, in double between the golden's rounding points, which are kept
 * exactly: projections rounded to the activation dtype, the LayerNormed key
 * rounded to f32 (what the f32 cache holds), softmax weights rounded to the
 * activation dtype, each output rounded once. */
#ifndef ATTNOPS_KP_REF_H
#define ATTNOPS_KP_REF_H

#include "keypool/kp_problem.h"

size_t kp_ref_workspace(const kp_problem *p);
void kp_ref_run(const kp_problem *p, void *workspace);

#endif
