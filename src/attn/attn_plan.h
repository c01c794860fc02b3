/* The one forward-attention planner below both CANN operators' APIs
 * (attn_plan.c): FlashAttentionScore's forward (fa_api.c) and
 * FusedInferAttentionScore (fia_api.c) hand it their validated problem; it
 * picks the golden, the tiled kernel (cpu/fa_fwd.c: K and V packed once for
 * GEMM tiles of many query rows) or the split-KV kernel (cpu/fia_cpu.c: the
 * cache read in place, a few query rows at a time) by shape, restates the
 * problem for that kernel, sizes the workspace and runs it.  No public entry
 * point calls another, and no kernel knows the other operator.
 *
 * Layering: attn_problem.h (the shared pieces) < fa/, fia/ (each operator's
 * contract) < ref/, cpu/ (the implementations) < attn_plan.c < api/. */
#ifndef ATTNOPS_ATTN_PLAN_H
#define ATTNOPS_ATTN_PLAN_H

#include "fa/fa_problem.h"
#include "fia/fia_problem.h"

typedef enum attn_kernel {
    ATTN_FA_GOLDEN,  /* ref/fa_ref.c over plan.fa */
    ATTN_FIA_GOLDEN, /* ref/fia_ref.c over plan.fia */
    ATTN_TILED,      /* cpu/fa_fwd.c over plan.fa */
    ATTN_SPLIT_KV    /* cpu/fia_cpu.c over plan.fia */
} attn_kernel;

typedef struct attn_plan {
    attn_kernel kernel;
    fa_problem fa;   /* the problem the FA golden or the tiled kernel runs */
    fia_problem fia; /* the problem the FIA golden or the split-KV kernel runs */
    /* A FusedInferAttentionScore prompt on the tiled kernel: its (max, sum)
     * statistics [B][N1][S1][8] f32 each lie at the workspace's start and
     * give the lse of `lse_to` (NULL otherwise). */
    const fia_problem *lse_to;
    size_t stats_bytes;
} attn_plan;

/* A FlashAttention forward (MLA inputs already joined, not empty); p must
 * outlive the run (the split-KV kernel writes its statistics through it). */
void attn_plan_fa_fwd(const fa_problem *p, attn_plan *plan);
/* A FusedInferAttentionScore call; p must outlive the run. */
void attn_plan_fia(const fia_problem *p, attn_plan *plan);

size_t attn_plan_workspace(const attn_plan *plan);
void attn_plan_run(attn_plan *plan, void *workspace);

#endif
