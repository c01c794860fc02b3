/* KeyPool's LayerNorm of one projected key, shared by the reference and the
 * fast kernel so that both round the same values the same way (spec A.3:
 * f32 in, double in between, f32 out, which is what the cache holds). */
#include <math.h>

#include "keypool/kp_problem.h"

/* Two-pass biased variance, as the golden's mean((K - mu)^2). */
void kp_layer_norm(const kp_problem *p, float *key)
{
    double mu = 0.0, var = 0.0;
    for (int64_t d = 0; d < p->D; d++) mu += key[d];
    mu /= (double)p->D;
    for (int64_t d = 0; d < p->D; d++) var += ((double)key[d] - mu) * ((double)key[d] - mu);
    const double sd = sqrt(var / (double)p->D + p->eps);
    for (int64_t d = 0; d < p->D; d++) {
        const double w = *(const float *)(p->norm_w + d * p->norm_ws * 4);
        const double b = *(const float *)(p->norm_b + d * p->norm_bs * 4);
        key[d] = (float)(((double)key[d] - mu) / sd * w + b);
    }
}
