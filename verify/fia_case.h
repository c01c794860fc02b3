/* One FusedInferAttentionScore test problem: its tensors (with canaries)
 * filled from a seed, contiguous or paged key/value (the blocks shuffled),
 * and the argument struct over them.  Shared by the harness driver
 * (verify/driver_fia.c) and the benchmarks' perf mode. */
#ifndef ATTNOPS_VERIFY_FIA_CASE_H
#define ATTNOPS_VERIFY_FIA_CASE_H

#include "testutil.h"

#define FIA_CASE_MAX_B 32

typedef struct fia_case_spec {
    int B;                       /* batches (TND: the length lists' count) */
    int64_t N1, N2, S1, S2, D, Dv, Dr; /* S1, S2: the tensors' (padded layouts), Dr > 0: MLA rope */
    attnops_dtype dtype;         /* f16, bf16 or f32 */
    attnops_layout layout, out_layout; /* out_layout BSND with BNSD: CANN's BNSD_BSND */
    int64_t block_size;          /* 0: contiguous key/value; else a paged cache of shuffled blocks */
    int nq, nkv;                 /* per-batch lengths given (0: none; TND needs both) */
    int64_t q_len[FIA_CASE_MAX_B], kv_len[FIA_CASE_MAX_B];
    int64_t sparse_mode, pre_tokens, next_tokens;
    bool mask;                   /* modes 0/1: a random mask (30 % masked); 2-4: the compressed tile */
    bool pse;                    /* pse_shift [B, N1, S1, S2] */
    bool lse;                    /* softmax_lse_flag */
    double scale;                /* 0: 1/sqrt(D + Dr) */
    bool int8_kv;                /* int8 key/value with antiquant scales and offsets of these modes: */
    int64_t key_mode, value_mode; /* 0 per channel, 1 per token, 2 per head, 3 per token and head */
    double softcap;              /* 0: off (an attnops extension, as alibi) */
    int alibi;                   /* ALiBi slopes: 0 none, 1 [N1] (attnops_alibi_slopes), 2 [B, N1] */
    int alibi_rule;              /* their distance: 0 flash-attn's, 2 / 3 CANN's pseType (attnops_alibi_rule) */
    int64_t alibi_q_start, alibi_kv_start; /* CANN's rule: qStartIdx, kvStartIdx */
    attnops_dtype sink;          /* attention sinks: 0 none, else learnable_sink [N1] of this dtype ~ 2 N(0, 1) */
                                 /* (batch b's those times 1 + b / 2) */
} fia_case_spec;

typedef struct fia_case {
    fia_case_spec spec;
    tu_tensor q, k, v, qr, kr, table, q_len, kv_len, mask, pse, out, lse; /* absent: block NULL */
    tu_tensor slopes, sink;
    tu_tensor k_scale, k_offset, v_scale, v_offset;                       /* int8 key/value */
    attnops_fia_args args;
} fia_case;

void fia_case_init(fia_case *c, const fia_case_spec *spec, uint64_t seed);
void fia_case_free(fia_case *c);

/* One call with `impl` into the case's outputs (poisoned first), through
 * the two-phase API with a canary-guarded workspace. */
attnops_status fia_case_run(fia_case *c, attnops_impl impl, int threads);

/* The longest query and key lengths of the batches. */
int64_t fia_case_rows(const fia_case_spec *s);
int64_t fia_case_keys(const fia_case_spec *s);

#endif
