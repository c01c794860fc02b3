/* A CANN-style host program (valid C and C++) for the install check: it
 * builds with `pkg-config --cflags --libs attnops-acl` alone and runs one
 * FlashAttentionScore through the acl / aclnn calls. */
#include <stdio.h>
#include <stdlib.h>

#include "acl/acl.h"
#include "aclnnop/aclnn_flash_attention_score.h"
/* the FusedInferAttentionScore family's headers: each compiles as C and C++ */
#include "aclnnop/aclnn_fused_infer_attention_score.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v2.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v3.h"
#include "aclnnop/aclnn_fused_infer_attention_score_v4.h"
#include "aclnnop/aclnn_incre_flash_attention.h"
#include "aclnnop/aclnn_incre_flash_attention_v2.h"
#include "aclnnop/aclnn_incre_flash_attention_v3.h"
#include "aclnnop/aclnn_incre_flash_attention_v4.h"
#include "aclnnop/aclnn_prompt_flash_attention.h"
#include "aclnnop/aclnn_prompt_flash_attention_v2.h"
#include "aclnnop/aclnn_prompt_flash_attention_v3.h"

int main(void)
{
    enum { B = 1, S = 4, N = 1, D = 8 };
    float host[B * S * N * D];
    for (int i = 0; i < B * S * N * D; i++) host[i] = (float)(i % 5) * 0.25f;
    const int64_t shape[4] = {B, S, N, D}, strides[4] = {S * N * D, N * D, D, 1}, elems = B * S * N * D;
    const int64_t stat_shape[4] = {B, N, S, 8}, stat_strides[4] = {N * S * 8, S * 8, 8, 1}, stat_elems = B * N * S * 8;
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
    aclrtStream stream = NULL;
    aclrtCreateStream(&stream);
    void *qkv = NULL, *out = NULL, *smax = NULL, *ssum = NULL;
    aclrtMalloc(&qkv, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc(&out, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc(&smax, sizeof(float) * stat_elems, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc(&ssum, sizeof(float) * stat_elems, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMemcpy(qkv, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE);
    aclTensor *t = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, &elems, 1, qkv);
    aclTensor *o = aclCreateTensor(shape, 4, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, &elems, 1, out);
    aclTensor *m = aclCreateTensor(stat_shape, 4, ACL_FLOAT, stat_strides, 0, ACL_FORMAT_ND, &stat_elems, 1, smax);
    aclTensor *l = aclCreateTensor(stat_shape, 4, ACL_FLOAT, stat_strides, 0, ACL_FORMAT_ND, &stat_elems, 1, ssum);
    char layout[] = "BSND";
    uint64_t ws_size = 0;
    aclOpExecutor *executor = NULL;
    aclnnStatus st = aclnnFlashAttentionScoreGetWorkspaceSize(t, t, t, NULL, NULL, NULL, NULL, NULL, 0.35, 1.0,
                                                              65536, 65536, N, layout, 0, 0, m, l, NULL, o, &ws_size,
                                                              &executor);
    void *ws = NULL;
    if (st == ACL_SUCCESS && ws_size > 0) aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST);
    if (st == ACL_SUCCESS) st = aclnnFlashAttentionScore(ws, ws_size, executor, stream);
    aclrtSynchronizeStream(stream);
    float result[B * S * N * D];
    aclrtMemcpy(result, sizeof result, out, sizeof result, ACL_MEMCPY_DEVICE_TO_HOST);
    if (st != ACL_SUCCESS) {
        printf("aclnnFlashAttentionScore failed: %d %s\n", (int)st, aclGetRecentErrMsg());
        return 1;
    }
    printf("acl FlashAttentionScore ok, out[0][0][0][1] = %.6f\n", result[1]);
    aclDestroyTensor(t), aclDestroyTensor(o), aclDestroyTensor(m), aclDestroyTensor(l);
    if (ws) aclrtFree(ws);
    aclrtFree(qkv), aclrtFree(out), aclrtFree(smax), aclrtFree(ssum);
    aclrtDestroyStream(stream);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
