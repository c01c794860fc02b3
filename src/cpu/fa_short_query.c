/* A FlashAttention forward with a short query on the FusedInferAttentionScore
 * kernel (fia_cpu.c).
 *
 * When a batch's query rows times the group's heads fit one few-row block
 * (S1 G <= 16: a decode step, a speculative one, flash_attn_func or SDPA
 * with a short query), the tiled forward would pack all of K and V for
 * 32-row GEMM tiles of mostly padding; the split-KV kernel reads K and V in
 * place, once per kv group, at the memory-bandwidth limit.  The problem is
 * restated as a FusedInferAttentionScore one with FlashAttention's masks
 * (modes 2, 3, 4 are the same rules in both operators) and every row's
 * (max, sum) goes to softmax_max / softmax_sum, the statistics the backward
 * reads.
 *
 * Taken only where the two operators agree on every element: no dropout or
 * FP8; no position bias but ALiBi after the scale (pse_type 2) whose start
 * indices put every batch's diagonal at the bottom-right corner, FIA's
 * alibi_slopes rule (flash_attn_func's); softcap and sinks (the same rules in both); no
 * mask, or the compressed modes 2-4; every row keeps a key (FlashAttention's
 * empty-row sentinels and uniform -40000 rows stay with its own kernel); key
 * and value rows contiguous in the head dim.
 * Masked scores: FlashAttention fills -40000, this kernel leaves them out;
 * both give them weight exp(-40000 - max) = 0 while a row keeps a key whose
 * score is above -39900, as the tiled forward's skipped empty tiles do. */
#include "cpu/fa_cpu.h"
#include "cpu/fia_cpu.h"
#include "fa/fa_mask.h"
#include "fa/fa_pse.h"

static bool mask_fits(const fa_problem *p)
{
    if (!p->mask.active) return true;
    const int64_t mode = p->mask.mode;
    if (p->mask.has_elements || (mode != 2 && mode != 3 && mode != 4)) return false;
    for (int64_t b = 0; b < p->B; b++) {
        const int64_t S1 = fa_q_len(p, b), S2 = fa_kv_len(p, b);
        const fa_band band = fa_band_of(p, b, S1, S2);
        if (band.prefix || !fa_rows_attend(p, &band, b, 0, 0, S1, S2)) return false;
    }
    return true;
}

/* FIA's ALiBi is -slope |j - i - (L2 - L1)|; FlashAttention's -slope |j - i + shift|. */
static bool bias_fits(const fa_problem *p)
{
    if (p->pse.kind == FA_PSE_NONE) return true;
    if (p->pse.kind != FA_PSE_SLOPES || p->pse.type != 2) return false;
    for (int64_t b = 0; b < p->B; b++)
        if (fa_pse_shift(p, b) != fa_q_len(p, b) - fa_kv_len(p, b)) return false;
    return true;
}

bool fa_short_query_fits(const fa_problem *p)
{
    if (p->fp8 || p->keep_prob < 1.0 || p->drop_bits || p->k.sd != 1 || p->v.sd != 1) return false;
    for (int64_t b = 0; b < p->B; b++)
        if (fa_q_len(p, b) * p->G > FIA_DIRECT_ROWS || fa_kv_len(p, b) < 1) return false;
    return bias_fits(p) && mask_fits(p);
}

/* FlashAttention's statistics of a row: 8 replicas each. */
static void write_stats(const void *ctx, int64_t b, int64_t h, int64_t i, float max, float sum)
{
    const fa_problem *p = ctx;
    float *m = fa_stat(p, &p->smax, b, h, i), *l = fa_stat(p, &p->ssum, b, h, i);
    for (int k = 0; k < 8; k++) m[k * p->smax.sd] = max, l[k * p->ssum.sd] = sum;
}

/* A view indexed by the batch's own rows: TND's views take b = 0 and the
 * global row, which the FIA view gets from the cumulative lengths. */
static fia_view view_of(const fa_problem *p, const fa_view *v)
{
    return (fia_view){v->data, v->dtype, v->esize, p->varlen ? 0 : v->sb, v->sn, v->ss, v->sd, 0, 0, 0};
}

static fia_problem restate(const fa_problem *p)
{
    fia_problem f = {0};
    f.B = p->B, f.N1 = p->N1, f.N2 = p->N2, f.G = p->G, f.S1 = p->S1, f.S2 = p->S2, f.D = p->D, f.Dv = p->Dv;
    f.layout = f.out_layout = p->varlen ? ATTNOPS_LAYOUT_TND : ATTNOPS_LAYOUT_BSND;
    f.scale = p->scale, f.softcap = p->softcap;
    if (p->pse.kind == FA_PSE_SLOPES)
        f.alibi = p->pse.slopes, f.alibi_sb = p->pse.slope_sb, f.alibi_sh = p->pse.slope_sn;
    f.mask = p->mask.active ? FIA_MASK_COMPRESSED : FIA_MASK_NONE;
    f.sparse_mode = p->mask.active ? p->mask.mode : 0;
    const fa_band tokens = fa_band_of(p, 0, 0, 0); /* mode 4's tokens clamped as the band clamps them (no shift) */
    f.pre_tokens = tokens.pre, f.next_tokens = tokens.next;
    f.q = view_of(p, &p->q), f.k = view_of(p, &p->k), f.v = view_of(p, &p->v), f.out = view_of(p, &p->o);
    if (p->varlen) {
        f.q_len = p->cu_q.data, f.q_len_dtype = p->cu_q.dtype, f.q_len_stride = p->cu_q.stride;
        f.kv_len = p->cu_kv.data, f.kv_len_dtype = p->cu_kv.dtype, f.kv_len_stride = p->cu_kv.stride;
        f.q_cumulative = f.kv_cumulative = true;
    }
    if (p->sink) f.sink = (const char *)p->sink, f.sink_dtype = ATTNOPS_DTYPE_F32, f.sink_stride = p->sink_stride;
    f.row_stats = write_stats, f.row_stats_ctx = p;
    f.impl = p->impl, f.threads = p->threads, f.team = p->team, f.deterministic = p->deterministic;
    return f;
}

size_t fa_short_query_workspace(const fa_problem *p)
{
    const fia_problem f = restate(p);
    return fia_cpu_workspace(&f);
}

void fa_short_query_fwd(const fa_problem *p, void *workspace)
{
    const fia_problem f = restate(p);
    fia_cpu_run(&f, workspace);
}
