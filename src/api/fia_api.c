/* Public FusedInferAttentionScore entry points: validate once, size the
 * chosen implementation's workspace, run it.  No output is written before
 * every check has passed.
 * REFERENCE is the golden; AUTO and CPU the split-KV kernel, except a prompt
 * the FlashAttention forward computes as it is (route_prompt), which runs
 * there: its tiled bf16/f16 GEMMs, not the split-KV kernel's f32 tiles. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/validate.h"
#include "cpu/fia_cpu.h"
#include "fia/fia_problem.h"
#include "ref/fia_ref.h"

static const char *const OP = "FusedInferAttentionScore";

void attnops_fia_args_init(attnops_fia_args *a)
{
    memset(a, 0, sizeof *a);
    a->num_heads = 1;
    a->scale_value = 1.0;
    a->pre_tokens = INT32_MAX;
    a->next_tokens = INT32_MAX;
    a->input_layout = ATTNOPS_LAYOUT_BSH;
}

/* The FlashAttention forward for a prompt: a dense or causal one (no mask,
 * or sparse modes 2, and 3 with S2 >= S1, on the compressed tile: rows that
 * always keep a key, so FA's statistics give FIA's lse and its output FIA's)
 * over a contiguous float cache in BSH / BSND / BNSD, without per-batch
 * lengths, pse_shift, rope or int8, and more rows than one query block of
 * the split-KV kernel (and a batch at least: an empty problem's workspace
 * may be NULL).  FA packs the whole K and V first, which pays where several
 * blocks share it: measured (Zen 4, 2 threads, bf16, GQA 4, 4096 keys,
 * causal) a 16-row step (one block) runs 1.8x faster on the split-KV
 * kernel's tiles, keys in place, 64 rows tie, 1024 rows and more are ~15 %
 * faster on FA.
 * softcap and alibi_slopes go with it: FA's softcap is the same cap before
 * the bias, and its pse_type 2 with q_start_idx = max(S2 - S1, 0),
 * kv_start_idx = max(S1 - S2, 0) is -slope |j - i - (S2 - S1)|, FIA's
 * bottom-right distance when every batch has the tensors' lengths; CANN's
 * rule (alibi_rule 2 / 3) is FA's pse_type 2 / 3 with the caller's start
 * indices.  A cap FA refuses keeps the prompt on the split-KV kernel.
 * The workspace is FA's statistics ([B, N1, S1, 8] f32, max then sum), then
 * FA's own. */
typedef struct fa_route {
    bool on;
    attnops_fa_fwd_args fa;
    attnops_tensor max, sum, q_start, kv_start;
    int64_t starts[2];
    size_t stats_bytes, fa_bytes;
} fa_route;

static void route_prompt(const attnops_fia_args *a, const fia_problem *p, fa_route *r)
{
    memset(r, 0, sizeof *r);
    const bool float_cache = !p->kq.kind && !p->vq.kind && !p->paged && !p->Dr && !p->pse;
    const bool compressed_ok = p->mask == FIA_MASK_COMPRESSED &&
                               (p->sparse_mode == 2 || (p->sparse_mode == 3 && p->S2 >= p->S1));
    if (p->impl == ATTNOPS_IMPL_REFERENCE || p->decode || p->S1 * p->G <= FIA_MQ || !float_cache || p->S2 < 1 || p->B < 1 ||
        a->actual_seq_lengths || a->actual_seq_lengths_kv || p->layout == ATTNOPS_LAYOUT_TND ||
        p->out_layout != p->layout || !(p->mask == FIA_MASK_NONE || compressed_ok))
        return;
    attnops_fa_fwd_args_init(&r->fa);
    attnops_fa_params *f = &r->fa.p;
    f->query = a->query, f->key = a->key, f->value = a->value;
    f->atten_mask = p->mask == FIA_MASK_COMPRESSED ? a->atten_mask : NULL;
    f->sparse_mode = p->mask == FIA_MASK_COMPRESSED ? p->sparse_mode : 0;
    f->scale_value = p->scale, f->head_num = p->N1, f->input_layout = p->layout;
    f->impl = p->impl, f->num_threads = p->threads, f->deterministic = p->deterministic;
    f->softcap = p->softcap;
    if (p->alibi) { /* CANN's rule is FA's pse_type 2 / 3 with the same start indices */
        const int64_t one = 1;
        r->starts[0] = p->S2 > p->S1 ? p->S2 - p->S1 : 0, r->starts[1] = p->S1 > p->S2 ? p->S1 - p->S2 : 0;
        if (p->alibi_from_starts) r->starts[0] = a->alibi_q_start_idx, r->starts[1] = a->alibi_kv_start_idx;
        r->q_start = attnops_tensor_contiguous(&r->starts[0], ATTNOPS_DTYPE_I64, 1, &one);
        r->kv_start = attnops_tensor_contiguous(&r->starts[1], ATTNOPS_DTYPE_I64, 1, &one);
        f->pse = a->alibi_slopes, f->pse_type = p->alibi_sqrt ? 3 : 2;
        f->q_start_idx = &r->q_start, f->kv_start_idx = &r->kv_start;
    }
    const int64_t shape[4] = {p->B, p->N1, p->S1, 8};
    r->stats_bytes = ao_align_up((size_t)(p->B * p->N1 * p->S1 * 8) * sizeof(float), 64);
    /* The statistics live in the workspace, which the size query does not have: there they are two
     * address ranges no buffer can overlap (past 2^62, outside any 64-bit process's user space), which FA's
     * size query only compares with the other tensors' and never dereferences. */
    const uintptr_t nowhere = (uintptr_t)1 << 62;
    r->max = attnops_tensor_contiguous((void *)nowhere, ATTNOPS_DTYPE_F32, 4, shape);
    r->sum = attnops_tensor_contiguous((void *)(nowhere + r->stats_bytes), ATTNOPS_DTYPE_F32, 4, shape);
    r->fa.softmax_max = &r->max, r->fa.softmax_sum = &r->sum, r->fa.attention_out = a->attention_out;
    r->on = attnops_flash_attention_score_workspace_size(&r->fa, &r->fa_bytes) == ATTNOPS_SUCCESS;
    ao_clear_error(); /* a shape FA refuses stays on the split-KV kernel */
}

static size_t route_workspace(const fa_route *r) { return 2 * r->stats_bytes + r->fa_bytes; }

/* FA's statistics as FIA's lse: max + ln sum per row (every row keeps a key). */
static attnops_status run_route(const fia_problem *p, fa_route *r, void *workspace)
{
    char *ws = workspace;
    r->max.data = ws, r->sum.data = ws + r->stats_bytes;
    AO_TRY(attnops_flash_attention_score(&r->fa, ws + 2 * r->stats_bytes, r->fa_bytes));
    const float *mx = r->max.data, *sm = r->sum.data;
    for (int64_t b = 0; b < p->B && p->lse_flag; b++)
        for (int64_t h = 0; h < p->N1; h++)
            for (int64_t i = 0; i < p->S1; i++) {
                const int64_t at = ((b * p->N1 + h) * p->S1 + i) * 8;
                fia_write_lse(p, b, h, i, (double)mx[at] + log((double)sm[at]));
            }
    return ATTNOPS_SUCCESS;
}

typedef struct fia_impl_ops {
    size_t (*workspace)(const fia_problem *);
    void (*run)(const fia_problem *, void *);
} fia_impl_ops;

static fia_impl_ops pick(const fia_problem *p)
{
    if (p->impl == ATTNOPS_IMPL_REFERENCE) return (fia_impl_ops){fia_ref_workspace, fia_ref_run};
    return (fia_impl_ops){fia_cpu_workspace, fia_cpu_run};
}

attnops_status attnops_fused_infer_attention_score_workspace_size(const attnops_fia_args *args,
                                                                 size_t *workspace_bytes)
{
    ao_clear_error();
    if (!workspace_bytes) return ao_fail(ATTNOPS_ERR_NULLPTR, "%s: workspace_bytes is NULL.", OP);
    fia_problem p;
    AO_TRY(fia_validate(args, OP, &p));
    fa_route route;
    route_prompt(args, &p, &route);
    *workspace_bytes = route.on ? route_workspace(&route) : pick(&p).workspace(&p);
    return ATTNOPS_SUCCESS;
}

/* Without softmax_lse_flag a given softmax_lse is written 0 (CANN's
 * documented value; spec gap G7). */
static void zero_lse(const attnops_tensor *t)
{
    int64_t idx[ATTNOPS_MAX_RANK] = {0};
    const int64_t n = ao_tensor_numel(t);
    for (int64_t e = 0; e < n; e++) {
        int64_t at = 0;
        for (int d = 0; d < t->rank; d++) at += idx[d] * t->strides[d];
        ((float *)t->data)[at] = 0.0f;
        for (int d = t->rank - 1; d >= 0 && ++idx[d] == t->shape[d]; d--) idx[d] = 0;
    }
}

attnops_status attnops_fused_infer_attention_score(const attnops_fia_args *args, void *workspace,
                                                  size_t workspace_bytes)
{
    ao_clear_error();
    fia_problem p;
    AO_TRY(fia_validate(args, OP, &p));
    fa_route route;
    route_prompt(args, &p, &route);
    if (route.on) {
        AO_TRY(ao_check_workspace(OP, workspace, workspace_bytes, route_workspace(&route)));
        AO_TRY(run_route(&p, &route, workspace));
        if (p.lse && !p.lse_flag) zero_lse(p.lse); /* after FA's call: a refusal there leaves every output as it was */
        return ATTNOPS_SUCCESS;
    }
    const fia_impl_ops ops = pick(&p);
    AO_TRY(ao_check_workspace(OP, workspace, workspace_bytes, ops.workspace(&p)));
    if (p.lse && !p.lse_flag) zero_lse(p.lse);
    p.team = ao_team_acquire(p.threads);
    ops.run(&p, workspace);
    ao_team_release(p.team);
    return ATTNOPS_SUCCESS;
}
