/* The parts of a KeyPool call that do no arithmetic, shared by the
 * reference and the fast kernel: cache writes of the trailing incomplete
 * groups, output row placement and the fixed capacity's zero rows. */
#include <string.h>

#include "keypool/kp_problem.h"

/* Only the current tokens of the group that stays incomplete are cached:
 * tokens of groups completed in this call are pooled and never stored (the
 * golden's oracle says so on purpose), positions before start_pos are never
 * touched.  Validation guarantees every written block is a real one. */
void kp_write_tails(const kp_problem *p, const float *key_ws, const float *gate_ws)
{
    for (int64_t b = 0; b < p->B; b++) {
        const int64_t st = kp_start(p, b), end = st + kp_len(p, b), tail = end % p->R;
        const int64_t from = end - tail > st ? end - tail : st;
        for (int64_t pos = tail ? from : end; pos < end; pos++) {
            const int64_t t = kp_token_base(p, b) + pos - st;
            float *row = kp_cache_row(p, b, pos);
            for (int64_t d = 0; d < p->D; d++) {
                row[d * p->cache_sc] = key_ws[t * p->D + d];
                row[(p->D + d) * p->cache_sc] = gate_ws[t * p->D + d];
            }
        }
    }
}

void kp_out_row0(const kp_problem *p, int64_t *row0)
{
    int64_t packed = 0;
    for (int64_t b = 0; b < p->B; b++) {
        const bool is_packed = p->th && p->capacity == ATTNOPS_KEY_POOL_CAPACITY_CURRENT;
        row0[b] = is_packed ? packed : 0;
        packed += kp_valid_rows(p, b);
    }
}

char *kp_out_row(const kp_problem *p, int64_t b, int64_t row0, int64_t g)
{
    return kp_at(&p->out, row0 + g, 0) + b * p->out_sb * p->out.esize;
}

void kp_zero_unused_rows(const kp_problem *p)
{
    if (p->capacity != ATTNOPS_KEY_POOL_CAPACITY_FIXED) return;
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t g = kp_valid_rows(p, b); g < p->out_rows; g++) {
            char *row = kp_out_row(p, b, 0, g);
            for (int64_t d = 0; d < p->D; d++) memset(row + d * p->out.sc * p->out.esize, 0, (size_t)p->out.esize);
        }
}
