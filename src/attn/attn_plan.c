/* The forward-attention planner (attn_plan.h): which kernel runs a
 * FlashAttention forward or a FusedInferAttentionScore call, and the
 * problem restated for it.
 *
 * The two fast kernels split by the rows a kv head's query block holds:
 *   - split-KV (fia_cpu.c) reads K and V in place, once per kv group, at the
 *     memory-bandwidth limit: a decode step, a speculative one, a short
 *     query (S1 G <= 16 rows: one few-row block);
 *   - tiled (fa_fwd.c) packs all of K and V first for GEMM tiles of many
 *     rows, which pays where several blocks share it: measured (Zen 4, 2
 *     threads, bf16, GQA 4, 4096 keys, causal) a 16-row step runs 1.8x
 *     faster split-KV, 64 rows tie, 1024 rows and more are ~15 % faster
 *     tiled.
 * A problem goes to the other operator's kernel only where the two agree on
 * every element (the conditions below); everything else stays on its own. */
#include "attn/attn_plan.h"

#include <math.h>
#include <string.h>

#include "cpu/fa_cpu.h"
#include "cpu/fia_cpu.h"
#include "fa/fa_mask.h"
#include "fa/fa_pse.h"
#include "ref/fa_ref.h"
#include "ref/fia_ref.h"

/* ---- a FlashAttention forward on the split-KV kernel ---------------------
 * Where every batch's query rows times the group's heads fit one few-row
 * block, without dropout or FP8; no position bias but ALiBi after the scale
 * (pse_type 2) whose start indices put every batch's diagonal at the
 * bottom-right corner (FusedInferAttentionScore's alibi_slopes rule); no
 * mask, or the compressed modes 2-4 (the same attn_rule in both); every row
 * keeping a key (FlashAttention's empty-row sentinels and uniform -40000
 * rows stay with its own kernel); key and value rows contiguous in the head
 * dim.  Softcap and sinks are the same rules in both.  Masked scores:
 * FlashAttention fills -40000, the split-KV kernel leaves them out; both
 * give them weight exp(-40000 - max) = 0 while a row keeps a key whose score
 * is above -39900, as the tiled forward's skipped empty tiles do. */
static bool fa_mask_fits_split_kv(const fa_problem *p)
{
    const attn_rule *r = &p->mask.rule;
    if (!r->active) return true;
    if (p->mask.has_elements || (r->mode != 2 && r->mode != 3 && r->mode != 4)) return false;
    for (int64_t b = 0; b < p->B; b++) {
        const int64_t S1 = fa_q_len(p, b), S2 = fa_kv_len(p, b);
        const fa_band band = fa_band_of(p, b, S1, S2);
        if (band.prefix || !fa_rows_attend(p, &band, b, 0, 0, S1, S2)) return false;
    }
    return true;
}

/* FusedInferAttentionScore's ALiBi is -slope |j - i - (L2 - L1)|; FlashAttention's -slope |j - i + shift|. */
static bool fa_bias_fits_split_kv(const fa_problem *p)
{
    if (p->pse.kind == FA_PSE_NONE) return true;
    if (p->pse.kind != FA_PSE_SLOPES || p->pse.type != 2) return false;
    for (int64_t b = 0; b < p->B; b++)
        if (fa_pse_shift(p, b) != fa_q_len(p, b) - fa_kv_len(p, b)) return false;
    return true;
}

static bool fa_fits_split_kv(const fa_problem *p)
{
    if (p->fp8 || p->keep_prob < 1.0 || p->drop_bits || p->k.sd != 1 || p->v.sd != 1) return false;
    for (int64_t b = 0; b < p->B; b++)
        if (fa_q_len(p, b) * p->G > FIA_DIRECT_ROWS || fa_kv_len(p, b) < 1) return false;
    return fa_bias_fits_split_kv(p) && fa_mask_fits_split_kv(p);
}

/* FlashAttention's statistics of a row: 8 replicas each. */
static void write_fa_stats(const void *ctx, int64_t b, int64_t h, int64_t i, float max, float sum)
{
    const fa_problem *p = ctx;
    float *m = fa_stat(p, &p->smax, b, h, i), *l = fa_stat(p, &p->ssum, b, h, i);
    for (int k = 0; k < 8; k++) m[k * p->smax.sd] = max, l[k * p->ssum.sd] = sum;
}

/* A view indexed by the batch's own rows: TND's views take b = 0 and the
 * global row, which the split-KV view gets from the cumulative lengths. */
static fia_view split_kv_view(const fa_problem *p, const fa_view *v)
{
    return (fia_view){v->data, v->dtype, v->esize, p->varlen ? 0 : v->sb, v->sn, v->ss, v->sd, 0, 0, 0};
}

static fia_problem split_kv_of_fa(const fa_problem *p)
{
    fia_problem f = {0};
    f.B = p->B, f.N1 = p->N1, f.N2 = p->N2, f.G = p->G, f.S1 = p->S1, f.S2 = p->S2, f.D = p->D, f.Dv = p->Dv;
    f.layout = f.out_layout = p->varlen ? ATTNOPS_LAYOUT_TND : ATTNOPS_LAYOUT_BSND;
    f.scale = p->scale, f.softcap = p->softcap;
    if (p->pse.kind == FA_PSE_SLOPES)
        f.alibi = p->pse.slopes, f.alibi_sb = p->pse.slope_sb, f.alibi_sh = p->pse.slope_sn;
    f.mask = p->mask.rule.active ? FIA_MASK_COMPRESSED : FIA_MASK_NONE;
    f.rule = p->mask.rule;
    f.q = split_kv_view(p, &p->q), f.k = split_kv_view(p, &p->k), f.v = split_kv_view(p, &p->v);
    f.out = split_kv_view(p, &p->o);
    if (p->varlen) {
        f.q_len = p->cu_q.data, f.q_len_dtype = p->cu_q.dtype, f.q_len_stride = p->cu_q.stride;
        f.kv_len = p->cu_kv.data, f.kv_len_dtype = p->cu_kv.dtype, f.kv_len_stride = p->cu_kv.stride;
        f.q_cumulative = f.kv_cumulative = true;
    }
    f.sink = p->sink;
    f.row_stats = write_fa_stats, f.row_stats_ctx = p;
    f.impl = p->impl, f.threads = p->threads, f.team = p->team, f.deterministic = p->deterministic;
    return f;
}

void attn_plan_fa_fwd(const fa_problem *p, attn_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->fa = *p;
    /* The FP8 forward exists in the golden only (the online softmax cannot quantise the final P the golden
     * quantises); AUTO takes it there. */
    if (p->impl == ATTNOPS_IMPL_REFERENCE || p->impl == ATTNOPS_IMPL_BENCHMARK || p->fp8) plan->kernel = ATTN_FA_GOLDEN;
    else if (fa_fits_split_kv(p)) plan->kernel = ATTN_SPLIT_KV, plan->fia = split_kv_of_fa(p);
    else plan->kernel = ATTN_TILED;
}

/* ---- a FusedInferAttentionScore prompt on the tiled kernel ---------------
 * A dense or causal prompt (no mask, or sparse mode 2, and 3 with S2 >= S1:
 * rows that always keep a key, so the tiled forward's statistics give the
 * lse and its output this operator's) over a contiguous float cache in
 * BSH / BSND / BNSD, without per-batch lengths, pse_shift, rope or int8, and
 * more rows than one query block of the split-KV kernel.  Softcap, sinks and
 * ALiBi (either rule: FlashAttention's pse_type 2 / 3 with the distance's
 * shift as q_start_idx) are the same rules in both; a cap the tiled kernel's
 * f32 factors cannot hold keeps the prompt on the split-KV kernel. */
static bool fia_fits_tiled(const fia_problem *p)
{
    const bool float_cache = !p->kq.kind && !p->vq.kind && !p->paged && !p->Dr && !p->pse;
    const bool mask_ok = p->mask == FIA_MASK_NONE ||
                         (p->mask == FIA_MASK_COMPRESSED &&
                          (p->rule.mode == 2 || (p->rule.mode == 3 && p->S2 >= p->S1)));
    const bool cap_ok = p->softcap == 0.0 || p->scale == 0.0 || isfinite((float)(p->softcap / p->scale));
    return !p->decode && p->S1 * p->G > FIA_MQ && float_cache && p->S2 >= 1 && p->B >= 1 && !p->q_len &&
           !p->kv_len && p->layout != ATTNOPS_LAYOUT_TND && p->out_layout == p->layout && mask_ok && cap_ok;
}

static fa_view tiled_view(const fia_view *v)
{
    return (fa_view){(char *)v->data, v->dtype, v->es, v->sb, v->sn, v->ss, v->sd};
}

static fa_problem tiled_of_fia(const fia_problem *p)
{
    fa_problem f;
    memset(&f, 0, sizeof f);
    f.op = "FusedInferAttentionScore";
    f.B = p->B, f.N1 = p->N1, f.N2 = p->N2, f.G = p->G, f.S1 = p->S1, f.S2 = p->S2, f.D = p->D, f.Dv = p->Dv;
    f.dtype = p->q.dtype, f.out_dtype = p->out.dtype;
    f.scale = p->scale, f.softcap = p->scale != 0.0 ? p->softcap : 0.0; /* scale 0: the capped term is 0 */
    f.q = tiled_view(&p->q), f.k = tiled_view(&p->k), f.v = tiled_view(&p->v), f.o = tiled_view(&p->out);
    const fa_view stats = {NULL, ATTNOPS_DTYPE_F32, 4, p->N1 * p->S1 * 8, p->S1 * 8, 8, 1};
    f.smax = f.ssum = stats; /* their data: the workspace (attn_plan_run) */
    f.mask.rule = p->rule;
    if (p->alibi) {
        f.pse.kind = FA_PSE_SLOPES, f.pse.type = p->alibi_sqrt ? 3 : 2;
        f.pse.slopes = p->alibi, f.pse.slope_sb = p->alibi_sb, f.pse.slope_sn = p->alibi_sh;
        f.pse.q_start = fia_alibi_shift(p, p->S1, p->S2); /* |j - i - shift| = |i - j + shift| */
    }
    f.keep_prob = 1.0;
    f.sink = p->sink;
    f.impl = p->impl, f.threads = p->threads, f.team = p->team, f.deterministic = p->deterministic;
    return f;
}

void attn_plan_fia(const fia_problem *p, attn_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->fia = *p;
    if (p->impl == ATTNOPS_IMPL_REFERENCE) plan->kernel = ATTN_FIA_GOLDEN;
    else if (!fia_fits_tiled(p)) plan->kernel = ATTN_SPLIT_KV;
    else {
        plan->kernel = ATTN_TILED, plan->fa = tiled_of_fia(p), plan->lse_to = p;
        plan->stats_bytes = ao_align_up((size_t)(p->B * p->N1 * p->S1 * 8) * sizeof(float), 64);
    }
}

/* ---- sizes and runs -------------------------------------------------------- */

static size_t kernel_workspace(const attn_plan *plan)
{
    switch (plan->kernel) {
    case ATTN_FA_GOLDEN: return fa_ref_fwd_workspace(&plan->fa);
    case ATTN_FIA_GOLDEN: return fia_ref_workspace(&plan->fia);
    case ATTN_TILED: return fa_cpu_fwd_workspace(&plan->fa);
    default: return fia_cpu_workspace(&plan->fia);
    }
}

size_t attn_plan_workspace(const attn_plan *plan) { return 2 * plan->stats_bytes + kernel_workspace(plan); }

/* The tiled forward's statistics as the lse: max + ln sum per row (every row keeps a key). */
static void lse_from_stats(const fia_problem *p, const fa_problem *f)
{
    const float *mx = (const float *)(const void *)f->smax.data, *sm = (const float *)(const void *)f->ssum.data;
    for (int64_t b = 0; b < p->B && p->lse_flag; b++)
        for (int64_t h = 0; h < p->N1; h++)
            for (int64_t i = 0; i < p->S1; i++) {
                const int64_t at = ((b * p->N1 + h) * p->S1 + i) * 8;
                fia_write_lse(p, b, h, i, (double)mx[at] + log((double)sm[at]));
            }
}

void attn_plan_run(attn_plan *plan, void *workspace)
{
    char *ws = workspace;
    if (plan->lse_to) plan->fa.smax.data = ws, plan->fa.ssum.data = ws + plan->stats_bytes, ws += 2 * plan->stats_bytes;
    switch (plan->kernel) {
    case ATTN_FA_GOLDEN: fa_ref_fwd(&plan->fa, ws); break;
    case ATTN_FIA_GOLDEN: fia_ref_run(&plan->fia, ws); break;
    case ATTN_TILED: fa_cpu_fwd(&plan->fa, ws); break;
    default: fia_cpu_run(&plan->fia, ws); break;
    }
    if (plan->lse_to) lse_from_stats(plan->lse_to, &plan->fa);
}
