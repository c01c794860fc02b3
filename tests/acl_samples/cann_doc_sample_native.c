/* The native-API twin of the sample program on each FlashAttention aclnn
 * entry point's page in ops-transformer ("调用示例"; the programs stay in the
 * user's checkout, tests/acl.cmake) and of the seed's UnpaddingScoreGradV2
 * sample (unpadding_score_grad_v2.cpp): the same inputs through attnops.h,
 * printed in the sample's format, so that the two outputs must be identical
 * text.  Written for the pages of ops-transformer c29bc10; acl.cmake compares
 * only pages whose SHA-256 is the one recorded for this twin.
 *
 *   cann_doc_sample_native ENTRY [f16|f32]   (ENTRY: aclnnFlashAttentionScore, ...)
 *
 * f16 (the default): the pages, whose tensors are FLOAT16 over float host
 * vectors (below); f32: the seed's sample, whose tensors are FLOAT.
 *
 * The pages' inputs: T = S = 256, N = 1, D = 128; layout SBH ([256, 1, 128])
 * for the padded entry points, TND with one sequence of 256 (lengths {256})
 * for VarLen / Unpadding; q = k = v (and dy, attention_in) are host vectors
 * of 32768 floats 1.0 declared FLOAT16, so the operator reads their bytes as
 * 65536 halves; a [256, 256] u8 mask of zeros; prefix {0}; V2 entries start
 * indices {0} and pse_type 1; scale 0.088388, keep_prob 1, pre/next tokens
 * 65536, head_num 1, inner_precise 0, sparse_mode 0.  The forward's outputs
 * are FLOAT16 views of 32768-float buffers of zeros and f32 statistics
 * ([1, 1, 256, 8], TND [256, 1, 8]) filled with 3.0; the backward takes
 * those statistics as inputs and writes FLOAT16 views of zeroed 32768-float
 * dq / dk / dv buffers.  Each output buffer is printed whole, as floats. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnops.h"

enum { S = 256, D = 128, FLOATS = S * D, STATS = S * 8 };

typedef struct entry {
    const char *name;
    bool grad, varlen, v2;
} entry;

static const entry ENTRIES[] = {
    {"aclnnFlashAttentionScore", false, false, false},
    {"aclnnFlashAttentionScoreV2", false, false, true},
    {"aclnnFlashAttentionVarLenScore", false, true, false},
    {"aclnnFlashAttentionVarLenScoreV2", false, true, true},
    {"aclnnFlashAttentionScoreGrad", true, false, false},
    {"aclnnFlashAttentionScoreGradV2", true, false, true},
    {"aclnnFlashAttentionUnpaddingScoreGrad", true, true, false},
    {"aclnnFlashAttentionUnpaddingScoreGradV2", true, true, true},
};

static void print_floats(const float *v, long n)
{
    for (long i = 0; i < n; i++) printf("mean result[%ld] is: %f\n", i, v[i]);
}

int main(int argc, char **argv)
{
    const entry *e = NULL;
    for (size_t i = 0; (argc == 2 || argc == 3) && i < sizeof ENTRIES / sizeof *ENTRIES; i++)
        if (!strcmp(argv[1], ENTRIES[i].name)) e = &ENTRIES[i];
    const bool f32 = argc == 3 && !strcmp(argv[2], "f32");
    if (!e || (argc == 3 && !f32 && strcmp(argv[2], "f16"))) {
        fprintf(stderr, "usage: %s aclnnFlashAttention<Entry> [f16|f32]\n", argv[0]);
        return 2;
    }
    /* f16: the tensors view the float buffers' bytes as halves (the pages) */
    const attnops_dtype dt = f32 ? ATTNOPS_DTYPE_F32 : ATTNOPS_DTYPE_F16;
    const int64_t shape[3] = {S, 1, D}, mask_shape[2] = {S, S}, one = 1;
    const int64_t stat_padded[4] = {1, 1, S, 8}, stat_tnd[3] = {S, 1, 8};
    float *ones = malloc(sizeof(float) * FLOATS), *smax = malloc(sizeof(float) * STATS),
          *ssum = malloc(sizeof(float) * STATS), *out[3];
    uint8_t *mask = calloc(S * S, 1);
    for (int i = 0; i < FLOATS; i++) ones[i] = 1.0f;
    for (int i = 0; i < STATS; i++) smax[i] = ssum[i] = 3.0f;
    for (int i = 0; i < 3; i++) out[i] = calloc(FLOATS, sizeof(float));
    int64_t zero = 0, length = S;
    attnops_tensor in = attnops_tensor_contiguous(ones, dt, 3, shape);
    attnops_tensor m = attnops_tensor_contiguous(mask, ATTNOPS_DTYPE_U8, 2, mask_shape);
    attnops_tensor tmax = e->varlen ? attnops_tensor_contiguous(smax, ATTNOPS_DTYPE_F32, 3, stat_tnd)
                                    : attnops_tensor_contiguous(smax, ATTNOPS_DTYPE_F32, 4, stat_padded);
    attnops_tensor tsum = e->varlen ? attnops_tensor_contiguous(ssum, ATTNOPS_DTYPE_F32, 3, stat_tnd)
                                    : attnops_tensor_contiguous(ssum, ATTNOPS_DTYPE_F32, 4, stat_padded);
    attnops_tensor tzero = attnops_tensor_contiguous(&zero, ATTNOPS_DTYPE_I64, 1, &one);
    attnops_tensor tlen = attnops_tensor_contiguous(&length, ATTNOPS_DTYPE_I64, 1, &one);
    attnops_tensor tout[3];
    for (int i = 0; i < 3; i++) tout[i] = attnops_tensor_contiguous(out[i], dt, 3, shape);

    attnops_fa_params p;
    attnops_fa_params_init(&p);
    p.query = p.key = p.value = &in;
    p.atten_mask = &m, p.prefix = &tzero;
    if (e->varlen) p.actual_seq_qlen = p.actual_seq_kvlen = &tlen;
    if (e->v2) p.q_start_idx = p.kv_start_idx = &tzero;
    p.scale_value = 0.088388, p.keep_prob = 1, p.pre_tokens = 65536, p.next_tokens = 65536;
    p.head_num = 1, p.input_layout = e->varlen ? ATTNOPS_LAYOUT_TND : ATTNOPS_LAYOUT_SBH;
    p.sparse_mode = 0, p.pse_type = 1;
    const char *impl = getenv("ATTNOPS_ACL_IMPL"); /* the same implementation as the sample's run */
    if (impl && !strcmp(impl, "reference")) p.impl = ATTNOPS_IMPL_REFERENCE;

    attnops_status s;
    size_t bytes = 0;
    void *ws = NULL;
    if (!e->grad) {
        attnops_fa_fwd_args a;
        attnops_fa_fwd_args_init(&a);
        a.p = p, a.attention_out = &tout[0], a.softmax_max = &tmax, a.softmax_sum = &tsum;
        s = attnops_flash_attention_score_workspace_size(&a, &bytes);
        if (s == ATTNOPS_SUCCESS && (ws = malloc(bytes ? bytes : 1))) s = attnops_flash_attention_score(&a, ws, bytes);
    } else {
        attnops_fa_bwd_args a;
        attnops_fa_bwd_args_init(&a);
        a.p = p, a.dy = a.attention_in = &in, a.softmax_max = &tmax, a.softmax_sum = &tsum;
        a.dq = &tout[0], a.dk = &tout[1], a.dv = &tout[2];
        s = attnops_flash_attention_score_grad_workspace_size(&a, &bytes);
        if (s == ATTNOPS_SUCCESS && (ws = malloc(bytes ? bytes : 1)))
            s = attnops_flash_attention_score_grad(&a, ws, bytes);
    }
    if (s != ATTNOPS_SUCCESS) {
        fprintf(stderr, "native %s failed: %s\n", e->name, attnops_last_error());
        return 1;
    }
    if (!e->grad) {
        print_floats(out[0], FLOATS);
        print_floats(smax, STATS);
        print_floats(ssum, STATS);
    } else {
        for (int i = 0; i < 3; i++) print_floats(out[i], FLOATS);
    }
    for (int i = 0; i < 3; i++) free(out[i]);
    free(ws), free(mask), free(smax), free(ssum), free(ones);
    return 0;
}
