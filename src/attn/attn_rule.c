/* The kept-key band of every sparse mode (attn_problem.h), the one copy both
 * operators' goldens and fast kernels read. */
#include "attn/attn_problem.h"
#include "core/validate.h"

attn_band attn_band_of(const attn_rule *r, int64_t b, int64_t L1, int64_t L2)
{
    attn_band band = {ATTN_TOKENS_INF, ATTN_TOKENS_INF, 0};
    if (!r->active) return band;
    const int64_t pre = ao_clamp_tokens(r->pre), next = ao_clamp_tokens(r->next);
    const bool band_batch = (r->mode == 7 || r->mode == 8) && b == r->band_batch;
    switch (r->mode) {
    case 0: band.pre = pre, band.next = next; break;
    case 2: band.next = 0; break;
    case 3: band.next = L2 - L1; break;
    case 4: band.pre = pre + L1 - L2, band.next = next - L1 + L2; break;
    case 5:
    case 6: band.next = L2 - L1, band.prefix = attn_list_at(&r->prefix, b); break;
    case 7:
    case 8:
        if (band_batch) band.pre = pre + L1 - L2, band.next = next - L1 + L2;
        else band.next = r->mode == 7 ? L2 - L1 : 0;
        break;
    default: break; /* mode 1 */
    }
    return band;
}
