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

/* The numerics the fast kernel shares, so that both round the same values
 * the same way: one token's LayerNorm of key[D] in place (f32 in, f32 out,
 * double in between), and one group's pooling of channel d from R rows. */
void kp_ref_layer_norm(const kp_problem *p, float *key);
double kp_ref_pool_channel(const kp_problem *p, int64_t d, const float *const *key, const float *const *gate,
                           const int64_t *stride);
/* value rounded to the activation dtype, returned widened. */
float kp_round_to_dtype(attnops_dtype dtype, double value);

#endif
