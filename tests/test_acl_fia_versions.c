/* The FusedInferAttentionScore family's aclnn entry points
 * (libattnops_acl): aclnnFusedInferAttentionScore, ...V2, ...V3, ...V4, ...V5,
 * aclnnIncreFlashAttention V1..V4 and aclnnPromptFlashAttention V1..V3.
 * Each case (verify/fia_case.h) runs through every entry whose parameter
 * list can carry it and must give the bytes of the native
 * attnops_fused_infer_attention_score call on the same memory -- the native
 * call without softmax_lse where the entry has none, and without pse_shift
 * where the entry's pseShift is reserved (IncreFlashAttention and
 * PromptFlashAttention V1, V2: CANN passes NULL on).  Every entry runs at
 * least one case.  Then the optional-tensor rows: every entry given, one at
 * a time, each optional tensor its parameter list carries (a mask with
 * content, per-batch query / key lengths, pseShift, a block table, the
 * separate and the combined antiquant pairs varying per channel or per
 * token, rope, learnable sinks, V5's ALiBi slopes with start indices, the
 * softmaxLse output), on a decode and / or a prompt problem the entry runs;
 * each row must give the native call's bytes, and the native call without
 * that optional must give other bytes (or be refused), so an entry that
 * drops or misroutes it fails its row.  Then the refusals: a key list of two tensors, a quantised
 * output, V4's dequantScaleQuery / queryQuantMode, a learnableSink of the wrong shape,
 * V5's pseType 2 without the slopes and pseType 1,
 * IncreFlashAttentionV4's kvPaddingSize, a longer query or a TND layout
 * through IncreFlashAttention, a one-row query with a mask or a batch of
 * no rows through PromptFlashAttention: each gives 161002 and a sentence that starts with
 * the entry's name and names the argument, hands out no executor and writes
 * no output byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_fia_args.h"
#include "aclnnop/aclnn_fused_infer_attention_score.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v5.h"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "aclnnop/aclnn_prompt_flash_attention.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"
#include "suite.h"

typedef enum { FIA1, FIA2, FIA3, FIA4, FIA5, IFA1, IFA2, IFA3, IFA4, PFA1, PFA2, PFA3, ENTRIES } entry;

/* What an entry's parameter list carries. */
enum {
    HAS_LSE = 1,       /* softmaxLse (else the native call runs without one) */
    HAS_PSE = 2,       /* pseShift read (else reserved: the native call runs without one) */
    HAS_Q_LENS = 4,    /* the query lengths */
    HAS_KV_LENS = 8,   /* the key/value lengths */
    HAS_PAGED = 16,    /* blockTable and blockSize */
    HAS_INT8 = 32,     /* the separate key/value antiquant pairs */
    HAS_ROPE = 64,     /* queryRope, keyRope */
    HAS_SPARSE = 128,  /* sparseMode */
    HAS_QUANT = 256,   /* quantScale2 */
    DECODE = 512,      /* one query row per batch, padded layouts, no output layout */
    PROMPT = 1024,     /* more than one query row */
    TENSOR_KV = 2048,  /* key and value are tensors, not lists */
    HAS_SINK = 4096,   /* learnableSink */
    HAS_ALIBI = 8192,  /* pseType 2 / 3: the slopes in pseShift, qStartIdx, kvStartIdx */
    HAS_MASK = 16384,  /* attenMask */
    HAS_COMBINED = 32768, /* the combined antiquantScale / antiquantOffset (leading 2: key, value) */
    HAS_AQ_MODE = 65536,  /* antiquantMode (else the combined pair is per channel, mode 0) */
};

#define FIA_ALL                                                                                                      \
    (HAS_LSE | HAS_PSE | HAS_Q_LENS | HAS_KV_LENS | HAS_PAGED | HAS_SPARSE | HAS_QUANT | DECODE | PROMPT | HAS_MASK | \
     HAS_COMBINED | HAS_AQ_MODE)
static const struct {
    const char *name;
    acl_fia_run_fn run;
    unsigned has;
} ENTRY[ENTRIES] = {
    [FIA1] = {"aclnnFusedInferAttentionScore", aclnnFusedInferAttentionScore, FIA_ALL},
    [FIA2] = {"aclnnFusedInferAttentionScoreV2", aclnnFusedInferAttentionScoreV2, FIA_ALL | HAS_INT8},
    [FIA3] = {"aclnnFusedInferAttentionScoreV3", aclnnFusedInferAttentionScoreV3, FIA_ALL | HAS_INT8 | HAS_ROPE},
    [FIA4] = {"aclnnFusedInferAttentionScoreV4", aclnnFusedInferAttentionScoreV4,
              FIA_ALL | HAS_INT8 | HAS_ROPE | HAS_SINK},
    [FIA5] = {"aclnnFusedInferAttentionScoreV5", aclnnFusedInferAttentionScoreV5,
              FIA_ALL | HAS_INT8 | HAS_ROPE | HAS_SINK | HAS_ALIBI},
    [IFA1] = {"aclnnIncreFlashAttention", aclnnIncreFlashAttention, HAS_KV_LENS | DECODE | HAS_MASK},
    [IFA2] = {"aclnnIncreFlashAttentionV2", aclnnIncreFlashAttentionV2, HAS_KV_LENS | HAS_QUANT | DECODE | HAS_MASK},
    [IFA3] = {"aclnnIncreFlashAttentionV3", aclnnIncreFlashAttentionV3,
              HAS_PSE | HAS_KV_LENS | HAS_PAGED | HAS_QUANT | DECODE | HAS_MASK | HAS_COMBINED},
    [IFA4] = {"aclnnIncreFlashAttentionV4", aclnnIncreFlashAttentionV4,
              HAS_PSE | HAS_KV_LENS | HAS_PAGED | HAS_QUANT | DECODE | HAS_MASK | HAS_COMBINED},
    [PFA1] = {"aclnnPromptFlashAttention", aclnnPromptFlashAttention, HAS_Q_LENS | PROMPT | TENSOR_KV | HAS_MASK},
    [PFA2] = {"aclnnPromptFlashAttentionV2", aclnnPromptFlashAttentionV2,
              HAS_Q_LENS | HAS_KV_LENS | HAS_SPARSE | HAS_QUANT | PROMPT | TENSOR_KV | HAS_MASK},
    [PFA3] = {"aclnnPromptFlashAttentionV3", aclnnPromptFlashAttentionV3,
              HAS_PSE | HAS_Q_LENS | HAS_KV_LENS | HAS_SPARSE | HAS_QUANT | PROMPT | TENSOR_KV | HAS_MASK},
};

/* Arguments a refusal case (or a row's combined antiquant pair) passes beyond the case's own. */
typedef struct extra {
    const aclTensor *quant_scale2, *kv_padding_size, *dequant_scale_query, *learnable_sink;
    const aclTensor *antiquant_scale, *antiquant_offset; /* the combined pair */
    int64_t query_quant_mode, pse_type;
    const aclIntArray *q_start_idx; /* V5's, in place of the case's (unread at pseType 0) */
} extra;

/* Phase one of entry e on the case's arguments, in e's parameter order. */
static aclnnStatus prepare(entry e, const acl_fia_args *c, const attnops_fia_args *a, const extra *x, uint64_t *ws,
                           aclOpExecutor **ex)
{
    char layout[16];
    memcpy(layout, c->layout, sizeof layout);
    const aclTensor *qs2 = x->quant_scale2, *as = x->antiquant_scale, *ao = x->antiquant_offset;
    switch (e) {
    case FIA1:
        return aclnnFusedInferAttentionScoreGetWorkspaceSize(
            c->q, c->key, c->value, c->pse, c->mask, c->qlen, c->kvlen, NULL, NULL, NULL, qs2, NULL, as, ao, c->table,
            NULL, NULL, a->num_heads, a->scale_value, a->pre_tokens, a->next_tokens, layout, a->num_key_value_heads,
            a->sparse_mode, a->inner_precise, a->block_size, a->antiquant_mode, a->softmax_lse_flag, c->out, c->lse,
            ws, ex);
    case FIA2:
        return aclnnFusedInferAttentionScoreV2GetWorkspaceSize(
            c->q, c->key, c->value, c->pse, c->mask, c->qlen, c->kvlen, NULL, NULL, NULL, qs2, NULL, as, ao, c->table,
            NULL, NULL, c->ks, c->ko, c->vs, c->vo, NULL, NULL, NULL, a->num_heads, a->scale_value, a->pre_tokens,
            a->next_tokens, layout, a->num_key_value_heads, a->sparse_mode, a->inner_precise, a->block_size,
            a->antiquant_mode, a->softmax_lse_flag, a->key_antiquant_mode, a->value_antiquant_mode, c->out, c->lse, ws,
            ex);
    case FIA3:
        return aclnnFusedInferAttentionScoreV3GetWorkspaceSize(
            c->q, c->key, c->value, c->pse, c->mask, c->qlen, c->kvlen, NULL, NULL, NULL, qs2, NULL, as, ao, c->table,
            NULL, NULL, c->ks, c->ko, c->vs, c->vo, NULL, NULL, NULL, c->qr, c->kr, NULL, a->num_heads,
            a->scale_value, a->pre_tokens, a->next_tokens, layout, a->num_key_value_heads, a->sparse_mode,
            a->inner_precise, a->block_size, a->antiquant_mode, a->softmax_lse_flag, a->key_antiquant_mode,
            a->value_antiquant_mode, c->out, c->lse, ws, ex);
    case FIA4:
        return aclnnFusedInferAttentionScoreV4GetWorkspaceSize(
            c->q, c->key, c->value, c->pse, c->mask, c->qlen, c->kvlen, NULL, NULL, NULL, qs2, NULL, as, ao, c->table,
            NULL, NULL, c->ks, c->ko, c->vs, c->vo, NULL, NULL, NULL, c->qr, c->kr, NULL, x->dequant_scale_query,
            x->learnable_sink ? x->learnable_sink : c->sink, a->num_heads, a->scale_value, a->pre_tokens,
            a->next_tokens, layout, a->num_key_value_heads, a->sparse_mode, a->inner_precise, a->block_size,
            a->antiquant_mode, a->softmax_lse_flag, a->key_antiquant_mode, a->value_antiquant_mode,
            x->query_quant_mode, c->out, c->lse, ws, ex);
    case FIA5:
        return aclnnFusedInferAttentionScoreV5GetWorkspaceSize(
            c->q, c->key, c->value, c->pse, c->mask, c->qlen, c->kvlen, NULL, NULL, NULL, qs2, NULL, as, ao, c->table,
            NULL, NULL, c->ks, c->ko, c->vs, c->vo, NULL, NULL, NULL, c->qr, c->kr, NULL, x->dequant_scale_query,
            x->learnable_sink ? x->learnable_sink : c->sink, x->q_start_idx ? x->q_start_idx : c->q_start,
            c->kv_start, a->num_heads, a->scale_value, a->pre_tokens, a->next_tokens, layout,
            a->num_key_value_heads, a->sparse_mode, a->inner_precise, a->block_size, a->antiquant_mode,
            a->softmax_lse_flag, a->key_antiquant_mode, a->value_antiquant_mode, x->query_quant_mode,
            x->pse_type ? x->pse_type : a->alibi_rule, c->out, c->lse, ws, ex);
    case IFA1:
        return aclnnIncreFlashAttentionGetWorkspaceSize(c->q, c->key, c->value, c->pse, c->mask, c->kvlen,
                                                        a->num_heads, a->scale_value, layout, a->num_key_value_heads,
                                                        c->out, ws, ex);
    case IFA2:
        return aclnnIncreFlashAttentionV2GetWorkspaceSize(c->q, c->key, c->value, c->pse, c->mask, c->kvlen, NULL,
                                                          NULL, NULL, qs2, NULL, a->num_heads, a->scale_value, layout,
                                                          a->num_key_value_heads, c->out, ws, ex);
    case IFA3:
        return aclnnIncreFlashAttentionV3GetWorkspaceSize(
            c->q, c->key, c->value, c->pse, c->mask, c->kvlen, NULL, NULL, NULL, qs2, NULL, as, ao, c->table,
            a->num_heads, a->scale_value, layout, a->num_key_value_heads, a->block_size, a->inner_precise, c->out, ws,
            ex);
    case IFA4:
        return aclnnIncreFlashAttentionV4GetWorkspaceSize(
            c->q, c->key, c->value, c->pse, c->mask, c->kvlen, NULL, NULL, NULL, qs2, NULL, as, ao, c->table,
            x->kv_padding_size, a->num_heads, a->scale_value, layout, a->num_key_value_heads, a->block_size,
            a->inner_precise, c->out, ws, ex);
    case PFA1:
        return aclnnPromptFlashAttentionGetWorkspaceSize(c->q, c->key_tensor, c->value_tensor, c->pse, c->mask,
                                                         c->qlen, a->num_heads, a->scale_value, a->pre_tokens,
                                                         a->next_tokens, layout, a->num_key_value_heads, c->out, ws,
                                                         ex);
    case PFA2:
        return aclnnPromptFlashAttentionV2GetWorkspaceSize(
            c->q, c->key_tensor, c->value_tensor, c->pse, c->mask, c->qlen, c->kvlen, NULL, NULL, NULL, qs2, NULL,
            a->num_heads, a->scale_value, a->pre_tokens, a->next_tokens, layout, a->num_key_value_heads,
            a->sparse_mode, c->out, ws, ex);
    case PFA3:
        return aclnnPromptFlashAttentionV3GetWorkspaceSize(
            c->q, c->key_tensor, c->value_tensor, c->pse, c->mask, c->qlen, c->kvlen, NULL, NULL, NULL, qs2, NULL,
            a->num_heads, a->scale_value, a->pre_tokens, a->next_tokens, layout, a->num_key_value_heads,
            a->sparse_mode, a->inner_precise, c->out, ws, ex);
    default: return ACLNN_ERR_INNER;
    }
}

static const named_spec CASES[] = {
    {"decode bf16 GQA 4, paged 16", {.B = 2, .N1 = 8, .N2 = 2, .S1 = 1, .S2 = 300, .D = 64, .Dv = 64,
                                     .dtype = ATTNOPS_DTYPE_BF16, .layout = ATTNOPS_LAYOUT_BNSD, .block_size = 16,
                                     .nkv = 2, .kv_len = {300, 17}, TOKENS}},
    {"decode f16 BSH, mask, pse, kv lengths", {.B = 2, .N1 = 4, .N2 = 2, .S1 = 1, .S2 = 50, .D = 32, .Dv = 32,
                                               .dtype = ATTNOPS_DTYPE_F16, .layout = ATTNOPS_LAYOUT_BSH, .nkv = 2,
                                               .kv_len = {50, 21}, .mask = true, .pse = true, TOKENS}},
    {"prompt f16 causal, BNSD_BSND", {.B = 2, .N1 = 4, .N2 = 2, .S1 = 9, .S2 = 40, .D = 32, .Dv = 32,
                                      .dtype = ATTNOPS_DTYPE_F16, .layout = ATTNOPS_LAYOUT_BNSD,
                                      .out_layout = ATTNOPS_LAYOUT_BSND, .nq = 2, .q_len = {9, 4}, .nkv = 2,
                                      .kv_len = {40, 20}, .sparse_mode = 3, TOKENS}},
    {"prompt bf16 BSND, mask, band 4/0, pse", {.B = 2, .N1 = 4, .N2 = 4, .S1 = 12, .S2 = 12, .D = 16, .Dv = 16,
                                              .dtype = ATTNOPS_DTYPE_BF16, .layout = ATTNOPS_LAYOUT_BSND,
                                              .mask = true, .pse = true, .pre_tokens = 4, .next_tokens = 0,
                                              .lse = true}},
    {"decode bf16 int8 per token, BSH paged 32", {.B = 2, .N1 = 4, .N2 = 2, .S1 = 1, .S2 = 100, .D = 16, .Dv = 16,
                                                  .dtype = ATTNOPS_DTYPE_BF16, .layout = ATTNOPS_LAYOUT_BSH,
                                                  .block_size = 32, .nkv = 2, .kv_len = {100, 33}, .int8_kv = true,
                                                  .key_mode = 1, .value_mode = 1, TOKENS}},
    {"decode bf16 MLA rope", {.B = 1, .N1 = 8, .N2 = 1, .S1 = 1, .S2 = 70, .D = 64, .Dv = 64, .Dr = 16,
                              .dtype = ATTNOPS_DTYPE_BF16, .layout = ATTNOPS_LAYOUT_BNSD, TOKENS}},
    {"TND f32 paged 8, causal", {.B = 2, .N1 = 4, .N2 = 1, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_F32,
                                 .layout = ATTNOPS_LAYOUT_TND, .block_size = 8, .nq = 2, .q_len = {3, 5}, .nkv = 2,
                                 .kv_len = {30, 5}, .S1 = 5, .S2 = 30, .sparse_mode = 3, TOKENS}},
    {"decode bf16 GQA 4, paged 16, learnable sinks", {.B = 2, .N1 = 8, .N2 = 2, .S1 = 1, .S2 = 300, .D = 64,
                                                      .Dv = 64, .dtype = ATTNOPS_DTYPE_BF16,
                                                      .layout = ATTNOPS_LAYOUT_BNSD, .block_size = 16, .nkv = 2,
                                                      .kv_len = {300, 17}, .sink = ATTNOPS_DTYPE_BF16, TOKENS}},
    {"decode bf16 GQA 4, paged 16, inner ALiBi (pseType 2)",
     {.B = 2, .N1 = 8, .N2 = 2, .S1 = 1, .S2 = 300, .D = 64, .Dv = 64, .dtype = ATTNOPS_DTYPE_BF16,
      .layout = ATTNOPS_LAYOUT_BNSD, .block_size = 16, .nkv = 2, .kv_len = {300, 17}, .alibi = 1, .alibi_rule = 2,
      .alibi_q_start = 299, TOKENS}},
    {"prompt f16 causal BSND, inner ALiBi sqrt (pseType 3), shifted starts",
     {.B = 2, .N1 = 4, .N2 = 2, .S1 = 9, .S2 = 40, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_F16,
      .layout = ATTNOPS_LAYOUT_BSND, .nq = 2, .q_len = {9, 4}, .nkv = 2, .kv_len = {40, 20}, .sparse_mode = 3,
      .alibi = 1, .alibi_rule = 3, .alibi_q_start = 31, .alibi_kv_start = -2, TOKENS}},
    {"TND f32 contiguous, causal", {.B = 2, .N1 = 4, .N2 = 2, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_F32,
                                    .layout = ATTNOPS_LAYOUT_TND, .nq = 2, .q_len = {7, 4}, .nkv = 2,
                                    .kv_len = {9, 20}, .S1 = 7, .S2 = 20, .sparse_mode = 3, TOKENS}},
};

/* What the case needs of an entry's parameter list. */
static unsigned needs(const fia_case_spec *s)
{
    const bool tnd = s->layout == ATTNOPS_LAYOUT_TND;
    const bool decode = tnd ? fia_case_rows(s) == 1 : s->S1 == 1;
    unsigned n = decode ? DECODE : PROMPT;
    if (tnd || (s->out_layout && s->out_layout != s->layout)) n |= PROMPT; /* IncreFlashAttention has neither */
    if (s->nq) n |= HAS_Q_LENS;
    if (s->nkv || s->block_size) n |= HAS_KV_LENS;
    if (s->block_size) n |= HAS_PAGED;
    if (s->int8_kv) n |= HAS_INT8;
    if (s->Dr) n |= HAS_ROPE;
    if (s->sparse_mode) n |= HAS_SPARSE;
    if (s->sink) n |= HAS_SINK;
    if (s->alibi_rule) n |= HAS_ALIBI;
    return n;
}

/* An optional tensor of the family: what it needs of an entry's parameter list, the branches it means something
 * on, the problem given it (on a base problem without it) and the native call left without it. */
typedef struct optional {
    const char *name;
    unsigned has, branches;
    void (*give)(fia_case_spec *s);
    void (*leave_out)(attnops_fia_args *a);
    bool combined; /* the case's separate antiquant pairs are handed over as the combined pair */
} optional;

static void give_mask(fia_case_spec *s) { s->mask = true; }
static void give_pse(fia_case_spec *s) { s->pse = true; }
static void give_q_lens(fia_case_spec *s) { s->nq = 2, s->q_len[0] = s->S1, s->q_len[1] = s->S1 / 2; }
static void give_kv_lens(fia_case_spec *s) { s->nkv = 2, s->kv_len[0] = s->S2, s->kv_len[1] = s->S2 / 3; }
static void give_table(fia_case_spec *s) { s->block_size = 16; }
static void give_rope(fia_case_spec *s) { s->Dr = 8; }
static void give_sink(fia_case_spec *s) { s->sink = s->dtype; }
static void give_lse(fia_case_spec *s) { s->lse = true; }
static void give_alibi(fia_case_spec *s)
{
    s->alibi = 1, s->alibi_rule = 2, s->alibi_q_start = 7, s->alibi_kv_start = 2;
}
/* int8 key/value, the key's parameters per channel and the value's per token (the two modes told apart) */
static void give_int8(fia_case_spec *s) { s->int8_kv = true, s->key_mode = 0, s->value_mode = 1; }
static void give_int8_channel(fia_case_spec *s) { s->int8_kv = true, s->key_mode = s->value_mode = 0; }
static void give_int8_token(fia_case_spec *s) { s->int8_kv = true, s->key_mode = s->value_mode = 1; }

static void leave_mask(attnops_fia_args *a) { a->atten_mask = NULL; }
static void leave_pse(attnops_fia_args *a) { a->pse_shift = NULL; }
static void leave_q_lens(attnops_fia_args *a) { a->actual_seq_lengths = NULL; }
static void leave_kv_lens(attnops_fia_args *a) { a->actual_seq_lengths_kv = NULL; }
static void leave_table(attnops_fia_args *a) { a->block_table = NULL; }
static void leave_rope(attnops_fia_args *a) { a->query_rope = a->key_rope = NULL; }
static void leave_sink(attnops_fia_args *a) { a->learnable_sink = NULL; }
static void leave_lse(attnops_fia_args *a) { a->softmax_lse_flag = false; }
static void leave_alibi(attnops_fia_args *a) { a->alibi_slopes = NULL, a->alibi_rule = 0; }
/* the scales cannot be left out (int8 needs them): the offsets, which shift every key and value */
static void leave_offsets(attnops_fia_args *a) { a->key_antiquant_offset = a->value_antiquant_offset = NULL; }
static void leave_combined_offset(attnops_fia_args *a) { a->antiquant_offset = NULL; }

static const optional OPTIONALS[] = {
    {"attenMask (30 % masked)", HAS_MASK, DECODE | PROMPT, give_mask, leave_mask, false},
    {"pseShift", HAS_PSE, DECODE | PROMPT, give_pse, leave_pse, false},
    {"actualSeqLengths {S1, S1 / 2}", HAS_Q_LENS, PROMPT, give_q_lens, leave_q_lens, false},
    {"actualSeqLengthsKv {S2, S2 / 3}", HAS_KV_LENS, DECODE | PROMPT, give_kv_lens, leave_kv_lens, false},
    {"blockTable (paged 16)", HAS_PAGED, DECODE | PROMPT, give_table, leave_table, false},
    {"key / value antiquant scale and offset (key per channel, value per token)", HAS_INT8, DECODE | PROMPT,
     give_int8, leave_offsets, false},
    {"antiquantScale / antiquantOffset combined, per channel", HAS_COMBINED, DECODE | PROMPT, give_int8_channel,
     leave_combined_offset, true},
    {"antiquantScale / antiquantOffset combined, per token (antiquantMode 1)", HAS_AQ_MODE, DECODE | PROMPT,
     give_int8_token, leave_combined_offset, true},
    {"queryRope / keyRope", HAS_ROPE, DECODE | PROMPT, give_rope, leave_rope, false},
    {"learnableSink", HAS_SINK, DECODE | PROMPT, give_sink, leave_sink, false},
    {"pseShift as ALiBi slopes (pseType 2), qStartIdx 7, kvStartIdx 2", HAS_ALIBI, DECODE | PROMPT, give_alibi,
     leave_alibi, false},
    {"softmaxLse", HAS_LSE, DECODE | PROMPT, give_lse, leave_lse, false},
};

/* The base problems of the rows (no optional tensor): a decode step and a prompt. */
static const fia_case_spec ROW_BASE_DECODE = {.B = 2, .N1 = 4, .N2 = 2, .S1 = 1, .S2 = 48, .D = 16, .Dv = 16,
                                              .dtype = ATTNOPS_DTYPE_F16, .layout = ATTNOPS_LAYOUT_BSH,
                                              .pre_tokens = 2147483647, .next_tokens = 2147483647};
static const fia_case_spec ROW_BASE_PROMPT = {.B = 2, .N1 = 4, .N2 = 2, .S1 = 6, .S2 = 48, .D = 16, .Dv = 16,
                                              .dtype = ATTNOPS_DTYPE_BF16, .layout = ATTNOPS_LAYOUT_BNSD,
                                              .pre_tokens = 2147483647, .next_tokens = 2147483647};

/* The separate key and value parameters (each [1, ...]) as the combined pair: f32 [2, ...], key then value. */
static tu_tensor combine(const tu_tensor *key, const tu_tensor *value)
{
    int64_t shape[ATTNOPS_MAX_RANK];
    memcpy(shape, key->view.shape, sizeof(int64_t) * (size_t)key->view.rank);
    shape[0] = 2;
    tu_tensor t = tu_tensor_new(ATTNOPS_DTYPE_F32, key->view.rank, shape, 0);
    const int64_t n = tu_numel(&key->view);
    double *x = malloc(sizeof(double) * (size_t)(2 * n));
    TU_CHECK(x != NULL, "out of memory");
    tu_tensor_to_f64(key, x), tu_tensor_to_f64(value, x + n);
    tu_tensor_from_f64(&t, x);
    free(x);
    return t;
}

/* One case through entry e against the native call: true when they agree byte for byte.  With an optional o,
 * the native call without it must not give those bytes (it may be refused): the row sees o dropped. */
static bool run_one(entry e, const named_spec *ns, uint64_t seed, const optional *o, aclrtStream stream)
{
    const int before = tu_failures;
    fia_case c;
    fia_case_init(&c, &ns->spec, seed);
    tu_tensor aq_scale = {0}, aq_offset = {0};
    if (o && o->combined) {
        aq_scale = combine(&c.k_scale, &c.v_scale), aq_offset = combine(&c.k_offset, &c.v_offset);
        c.args.key_antiquant_scale = c.args.key_antiquant_offset = NULL;
        c.args.value_antiquant_scale = c.args.value_antiquant_offset = NULL;
        c.args.antiquant_scale = &aq_scale.view, c.args.antiquant_offset = &aq_offset.view;
        c.args.antiquant_mode = ns->spec.key_mode, c.args.key_antiquant_mode = c.args.value_antiquant_mode = 0;
    }
    const attnops_fia_args full = c.args;
    acl_fia_args a;
    acl_fia_args_make(&a, &full, false);
    aclTensor *as = acl_fia_wrap(full.antiquant_scale), *ao = acl_fia_wrap(full.antiquant_offset);
    if (!(ENTRY[e].has & HAS_LSE)) c.args.softmax_lse = NULL, c.args.softmax_lse_flag = false;
    if (!(ENTRY[e].has & HAS_PSE)) c.args.pse_shift = NULL;
    TU_CHECK(fia_case_run(&c, ATTNOPS_IMPL_AUTO, 0) == ATTNOPS_SUCCESS, "%s: the native call: %s", ns->name,
             attnops_last_error());
    unsigned char *want = acl_fia_outputs_copy(&c);
    if (o) {
        const attnops_fia_args given = c.args;
        o->leave_out(&c.args);
        const bool same = fia_case_run(&c, ATTNOPS_IMPL_AUTO, 0) == ATTNOPS_SUCCESS && acl_fia_outputs_equal(&c, want);
        TU_CHECK(!same, "%s: the native call without %s gives the same bytes, so dropping it could not be seen",
                 ns->name, o->name);
        c.args = given;
    }
    tu_tensor_poison(&c.out, 0xC3), tu_tensor_poison(&c.lse, 0xC3);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    /* V5 with a qStartIdx at pseType 0: not read, the bytes stay the native call's */
    const int64_t start = 5;
    aclIntArray *q_start = e == FIA5 && !ns->spec.alibi_rule ? aclCreateIntArray(&start, 1) : NULL;
    aclnnStatus st = prepare(e, &a, &full, &(extra){.q_start_idx = q_start, .antiquant_scale = as,
                                                   .antiquant_offset = ao}, &ws, &ex);
    TU_CHECK(st == ACLNN_SUCCESS, "%s through %s: GetWorkspaceSize %d: %s", ns->name, ENTRY[e].name, st,
             aclGetRecentErrMsg());
    if (st == ACLNN_SUCCESS) {
        st = acl_fia_run(ENTRY[e].run, ex, ws, stream);
        TU_CHECK(st == ACLNN_SUCCESS, "%s through %s: run %d: %s", ns->name, ENTRY[e].name, st, aclGetRecentErrMsg());
        TU_CHECK(acl_fia_outputs_equal(&c, want), "%s through %s: the outputs are not the native call's bytes",
                 ns->name, ENTRY[e].name);
    }
    if (q_start) aclDestroyIntArray(q_start);
    aclDestroyTensor(as), aclDestroyTensor(ao);
    acl_fia_args_free(&a);
    free(want);
    tu_tensor_free(&aq_scale), tu_tensor_free(&aq_offset);
    fia_case_free(&c);
    return tu_failures == before;
}

static int run_cases(aclrtStream stream)
{
    int passed = 0, runs[ENTRIES] = {0};
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const unsigned n = needs(&CASES[i].spec);
        for (int e = 0; e < ENTRIES; e++) {
            const unsigned branch = ENTRY[e].has & (DECODE | PROMPT);
            if ((n & ~(DECODE | PROMPT) & ~ENTRY[e].has) || (n & (DECODE | PROMPT) & ~branch)) continue;
            passed += run_one((entry)e, &CASES[i], 70 + i, NULL, stream);
            runs[e]++;
        }
    }
    for (int e = 0; e < ENTRIES; e++) TU_CHECK(runs[e] > 0, "%s ran no case", ENTRY[e].name);
    return passed;
}

/* The rows: each entry with each optional tensor its parameter list carries, on each branch the entry runs and
 * the optional means something on. */
static int run_rows(aclrtStream stream)
{
    enum { N_OPTIONALS = sizeof OPTIONALS / sizeof OPTIONALS[0] };
    int passed = 0, rows[N_OPTIONALS] = {0};
    for (int e = 0; e < ENTRIES; e++)
        for (size_t i = 0; i < N_OPTIONALS; i++) {
            const optional *o = &OPTIONALS[i];
            if ((ENTRY[e].has & o->has) != o->has) continue;
            for (unsigned branch = DECODE; branch <= PROMPT; branch <<= 1) {
                if (!(o->branches & ENTRY[e].has & branch)) continue;
                named_spec row = {o->name, branch == DECODE ? ROW_BASE_DECODE : ROW_BASE_PROMPT};
                o->give(&row.spec);
                char name[160];
                snprintf(name, sizeof name, "%s row, %s", branch == DECODE ? "decode" : "prompt", o->name);
                row.name = name;
                passed += run_one((entry)e, &row, 200 + (uint64_t)(e * 32 + (int)i), o, stream);
                rows[i]++;
            }
        }
    for (size_t i = 0; i < N_OPTIONALS; i++) TU_CHECK(rows[i] > 0, "no entry ran the row of %s", OPTIONALS[i].name);
    return passed;
}

/* Entry e refuses the call (case `spec`, with x's arguments and `layout` when not NULL, a key list of two with
 * two_keys): status 161002, a sentence that starts with the entry's name and holds `needle`, no executor, no
 * output byte written. */
static bool refused(entry e, const fia_case_spec *spec, const extra *x, bool two_keys, const char *layout,
                    const char *needle)
{
    const int before = tu_failures;
    fia_case c;
    fia_case_init(&c, spec, 90);
    tu_tensor_poison(&c.out, 0xC3), tu_tensor_poison(&c.lse, 0xC3);
    unsigned char *poisoned = acl_fia_outputs_copy(&c);
    acl_fia_args a;
    acl_fia_args_make(&a, &c.args, two_keys);
    if (layout) snprintf(a.layout, sizeof a.layout, "%s", layout);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const aclnnStatus st = prepare(e, &a, &c.args, x, &ws, &ex);
    const char *msg = aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "";
    const size_t n = strlen(ENTRY[e].name);
    TU_CHECK(st == ACLNN_ERR_PARAM_INVALID && !strncmp(msg, ENTRY[e].name, n) && msg[n] == ':' && strstr(msg, needle),
             "%s, %s: status %d, sentence \"%s\"", ENTRY[e].name, needle, st, msg);
    TU_CHECK(ex == NULL, "%s, %s: a refused call handed out an executor", ENTRY[e].name, needle);
    if (ex) aclDestroyAclOpExecutor(ex);
    TU_CHECK(acl_fia_outputs_equal(&c, poisoned), "%s, %s: a refused call wrote its outputs", ENTRY[e].name, needle);
    acl_fia_args_free(&a);
    free(poisoned);
    fia_case_free(&c);
    return tu_failures == before;
}

static int run_refusals(void)
{
    const fia_case_spec *decode = &CASES[1].spec, *prompt = &CASES[3].spec;
    const int64_t one = 1;
    const float unit = 1.0f;
    aclTensor *t = aclCreateTensor(&one, 1, ACL_FLOAT, &one, 0, ACL_FORMAT_ND, &one, 1, (void *)&unit);
    const extra none = {0}, quant = {.quant_scale2 = t};
    int passed = 0;
    for (int e = 0; e < ENTRIES; e++) {
        const fia_case_spec *s = ENTRY[e].has & PROMPT ? prompt : decode;
        if (!(ENTRY[e].has & TENSOR_KV)) passed += refused((entry)e, s, &none, true, NULL, "key holds 2 tensors");
        if (ENTRY[e].has & HAS_QUANT) passed += refused((entry)e, s, &quant, false, NULL, "quant_scale2 is given");
    }
    passed += refused(FIA4, decode, &(extra){.dequant_scale_query = t}, false, NULL, "dequantScaleQueryOptional");
    /* a sink of one value for 8 heads: the library's refusal, through the entry (the sink itself is run above) */
    passed += refused(FIA4, decode, &(extra){.learnable_sink = t}, false, NULL, "'learnable_sink' has shape [1]");
    passed += refused(FIA4, decode, &(extra){.query_quant_mode = 3}, false, NULL, "queryQuantMode is 3");
    passed += refused(FIA5, &CASES[0].spec, &(extra){.pse_type = 2}, false, NULL,
                      "pseType is 2 but pseShiftOptional is NULL");
    passed += refused(FIA5, decode, &(extra){.pse_type = 1}, false, NULL, "pseType is 1");
    passed += refused(FIA5, decode, &(extra){.query_quant_mode = 3}, false, NULL, "queryQuantMode is 3");
    passed += refused(IFA4, decode, &(extra){.kv_padding_size = t}, false, NULL, "kv_padding_size is given");
    for (entry e = IFA1; e <= IFA4; e++) passed += refused(e, prompt, &none, false, NULL, "query's S is 12");
    passed += refused(IFA1, decode, &none, false, "TND", "inputLayout is \"TND\"");
    for (entry e = PFA1; e <= PFA3; e++) passed += refused(e, decode, &none, false, NULL, "attenMask is given");
    fia_case_spec lengths = *decode; /* one row, no mask, a batch of no query rows */
    lengths.mask = false, lengths.nq = 2, lengths.q_len[0] = 1, lengths.q_len[1] = 0;
    passed += refused(PFA3, &lengths, &none, false, NULL, "actualSeqLengths[1] is 0");
    aclDestroyTensor(t);
    return passed;
}

int main(void)
{
    TU_CHECK(aclInit(NULL) == ACL_SUCCESS && aclrtSetDevice(0) == ACL_SUCCESS, "aclInit / aclrtSetDevice");
    aclrtStream stream = NULL;
    TU_CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS, "aclrtCreateStream");
    int passed = run_cases(stream);
    passed += run_rows(stream);
    passed += run_refusals();
    TU_CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS, "aclrtDestroyStream");
    TU_CHECK(aclrtResetDevice(0) == ACL_SUCCESS && aclFinalize() == ACL_SUCCESS, "aclFinalize");
    return tu_finish("test_acl_fia_versions", passed);
}
