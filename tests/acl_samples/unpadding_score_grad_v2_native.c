/* The native-API twin of unpadding_score_grad_v2.cpp (the seed's CANN sample):
 * the same inputs through attnops_flash_attention_unpadding_score_grad, printed
 * in the sample's format, so the two outputs must be identical text.
 * Inputs (from the sample): TND, T = 256, N = 1, D = 128, q = k = v = dy =
 * attention_in = 1, a [256, 256] mask of zeros, softmax_max = softmax_sum = 3,
 * prefix {0}, lengths {256}, start indices {0}, scale 0.088388, keep_prob 1,
 * pre/next tokens 65536, sparse_mode 0, pse_type 1. */
#include <stdio.h>
#include <stdlib.h>

#include "attnops.h"

int main(void)
{
    enum { T = 256, N = 1, D = 128 };
    const int64_t qkv[3] = {T, N, D}, mask_shape[2] = {T, T}, stat[3] = {T, N, 8}, one = 1;
    float *ones = malloc(sizeof(float) * T * N * D), *stats = malloc(sizeof(float) * T * N * 8);
    float *grads[3];
    uint8_t *mask = calloc(T * T, 1);
    for (int i = 0; i < T * N * D; i++) ones[i] = 1.0f;
    for (int i = 0; i < T * N * 8; i++) stats[i] = 3.0f;
    for (int g = 0; g < 3; g++) grads[g] = calloc(T * N * D, sizeof(float));
    int64_t prefix = 0, qlen = 256, kvlen = 256, qstart = 0, kvstart = 0;
    attnops_tensor in = attnops_tensor_contiguous(ones, ATTNOPS_DTYPE_F32, 3, qkv);
    attnops_tensor m = attnops_tensor_contiguous(mask, ATTNOPS_DTYPE_U8, 2, mask_shape);
    attnops_tensor st = attnops_tensor_contiguous(stats, ATTNOPS_DTYPE_F32, 3, stat);
    attnops_tensor tp = attnops_tensor_contiguous(&prefix, ATTNOPS_DTYPE_I64, 1, &one);
    attnops_tensor tq = attnops_tensor_contiguous(&qlen, ATTNOPS_DTYPE_I64, 1, &one);
    attnops_tensor tkv = attnops_tensor_contiguous(&kvlen, ATTNOPS_DTYPE_I64, 1, &one);
    attnops_tensor tqs = attnops_tensor_contiguous(&qstart, ATTNOPS_DTYPE_I64, 1, &one);
    attnops_tensor tkvs = attnops_tensor_contiguous(&kvstart, ATTNOPS_DTYPE_I64, 1, &one);
    attnops_tensor out[3];
    for (int g = 0; g < 3; g++) out[g] = attnops_tensor_contiguous(grads[g], ATTNOPS_DTYPE_F32, 3, qkv);
    attnops_fa_bwd_args a;
    attnops_fa_bwd_args_init(&a);
    a.p.query = a.p.key = a.p.value = &in;
    a.p.atten_mask = &m, a.p.prefix = &tp, a.p.actual_seq_qlen = &tq, a.p.actual_seq_kvlen = &tkv;
    a.p.q_start_idx = &tqs, a.p.kv_start_idx = &tkvs;
    a.p.scale_value = 0.088388, a.p.keep_prob = 1, a.p.pre_tokens = 65536, a.p.next_tokens = 65536;
    a.p.head_num = 1, a.p.input_layout = ATTNOPS_LAYOUT_TND, a.p.sparse_mode = 0, a.p.pse_type = 1;
    const char *impl = getenv("ATTNOPS_ACL_IMPL"); /* the same implementation as the sample's run */
    if (impl && impl[0] == 'r') a.p.impl = ATTNOPS_IMPL_REFERENCE;
    a.dy = a.attention_in = &in, a.softmax_max = a.softmax_sum = &st;
    a.dq = &out[0], a.dk = &out[1], a.dv = &out[2];
    size_t bytes = 0;
    attnops_status s = attnops_flash_attention_unpadding_score_grad_workspace_size(&a, &bytes);
    void *ws = malloc(bytes ? bytes : 1);
    if (s == ATTNOPS_SUCCESS) s = attnops_flash_attention_unpadding_score_grad(&a, ws, bytes);
    if (s != ATTNOPS_SUCCESS) {
        fprintf(stderr, "native UnpaddingScoreGrad failed: %s\n", attnops_last_error());
        return 1;
    }
    for (int g = 0; g < 3; g++)
        for (long i = 0; i < T * N * D; i++) printf("mean result[%ld] is: %f\n", i, grads[g][i]);
    for (int g = 0; g < 3; g++) free(grads[g]);
    free(ws), free(mask), free(stats), free(ones);
    return 0;
}
