/* aclnnKeyPool (libattnops_acl) against the native call: the same pooled_key and state cache bytes for BSH
 * and TH, with LayerNorm, a scrambled table and a non-contiguous cache (stateCacheStrideDim0), the fixed
 * capacity CANN's page documents; and the refusals: a stateCacheStrideDim0 other than the cache's own stride,
 * a pooledKeyOut of the current-input capacity (the library's sentence), with nothing written. */
#include <stdlib.h>
#include <string.h>

#include "acl_fia_args.h"
#include "aclnnop/aclnn_key_pool.h"
#include "kp_case.h"
#include "suite.h"

typedef struct acl_kp {
    aclTensor *t[13], *out;
} acl_kp;

static void wrap(acl_kp *w, kp_case *c, const attnops_tensor *out)
{
    const attnops_key_pool_args a = kp_case_args(c, ATTNOPS_KEY_POOL_CAPACITY_FIXED, ATTNOPS_IMPL_AUTO);
    const attnops_tensor *in[13] = {a.hidden_states, a.wk,        a.gate_weight, a.ape,        a.state_cache,
                                    a.cache_block_table, a.start_pos, a.norm_weight, a.norm_bias, a.cos,
                                    a.sin,           a.cu_seqlens, a.seqused};
    for (int i = 0; i < 13; i++) w->t[i] = acl_fia_wrap(in[i]);
    w->out = acl_fia_wrap(out);
}

static void unwrap(acl_kp *w)
{
    for (int i = 0; i < 13; i++)
        if (w->t[i]) aclDestroyTensor(w->t[i]);
    aclDestroyTensor(w->out);
}

static aclnnStatus prepare(acl_kp *w, const kp_case *c, int64_t stride0, uint64_t *ws, aclOpExecutor **ex)
{
    return aclnnKeyPoolGetWorkspaceSize(w->t[0], w->t[1], w->t[2], w->t[3], w->t[4], w->t[5], w->t[6], w->t[7],
                                        w->t[8], w->t[9], w->t[10], w->t[11], w->t[12], c->spec.cmp_ratio, 1e-6, 1,
                                        stride0, w->out, ws, ex);
}

/* One case: the native call's pooled_key and cache, then the same through aclnn from the input cache. */
static bool run_case(const char *name, const kp_case_spec *spec, aclrtStream stream)
{
    const int before = tu_failures;
    kp_case c;
    kp_case_init(&c, spec, 17);
    tu_tensor want;
    TU_CHECK(kp_case_run(&c, ATTNOPS_KEY_POOL_CAPACITY_FIXED, ATTNOPS_IMPL_AUTO, 0, &want) == ATTNOPS_SUCCESS,
             "%s: the native call: %s", name, attnops_last_error());
    const size_t cache_bytes = (size_t)c.block_num * (size_t)c.rows_per_block * (size_t)c.row_floats * sizeof(float);
    float *want_cache = malloc(cache_bytes);
    memcpy(want_cache, c.cache.view.data, cache_bytes);
    kp_case_restore_cache(&c);

    tu_tensor got = tu_tensor_new(want.view.dtype, want.view.rank, want.view.shape, 0);
    tu_tensor_poison(&got, 0xC3);
    acl_kp w;
    wrap(&w, &c, &got.view);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    aclnnStatus st = prepare(&w, &c, c.cache_view.strides[0], &ws, &ex);
    TU_CHECK(st == ACLNN_SUCCESS, "%s: aclnnKeyPoolGetWorkspaceSize %d: %s", name, st, aclGetRecentErrMsg());
    if (st == ACLNN_SUCCESS) {
        st = acl_fia_run(aclnnKeyPool, ex, ws, stream);
        TU_CHECK(st == ACLNN_SUCCESS, "%s: aclnnKeyPool %d: %s", name, st, aclGetRecentErrMsg());
        TU_CHECK(!memcmp(got.view.data, want.view.data, got.data_bytes), "%s: pooledKeyOut differs from the native "
                 "call's bytes", name);
        TU_CHECK(!memcmp(c.cache.view.data, want_cache, cache_bytes), "%s: stateCacheRef differs from the native "
                 "call's bytes", name);
    }
    unwrap(&w);
    free(want_cache);
    tu_tensor_free(&got);
    tu_tensor_free(&want);
    kp_case_free(&c);
    printf("%s %s\n", tu_failures == before ? "ok  " : "FAIL", name);
    return tu_failures == before;
}

/* A refused phase one: 161002, a sentence starting with the entry's name and holding `needle`, no executor,
 * the output and the cache untouched. */
static bool refused(const char *what, const kp_case_spec *spec, bool current_shape, int64_t stride_delta,
                    const char *needle)
{
    const int before = tu_failures;
    kp_case c;
    kp_case_init(&c, spec, 5);
    int32_t rank = 0;
    int64_t shape[3];
    attnops_key_pool_args a = kp_case_args(&c, current_shape ? ATTNOPS_KEY_POOL_CAPACITY_CURRENT
                                                             : ATTNOPS_KEY_POOL_CAPACITY_FIXED, ATTNOPS_IMPL_AUTO);
    TU_CHECK(attnops_key_pool_output_shape(&a, &rank, shape) == ATTNOPS_SUCCESS, "%s: output shape", what);
    tu_tensor out = tu_tensor_new(spec->dtype, rank, shape, 0);
    tu_tensor_poison(&out, 0xC3);
    acl_kp w;
    wrap(&w, &c, &out.view);
    uint64_t ws = 0;
    aclOpExecutor *ex = NULL;
    const aclnnStatus st = prepare(&w, &c, c.cache_view.strides[0] + stride_delta, &ws, &ex);
    const char *msg = aclGetRecentErrMsg() ? aclGetRecentErrMsg() : "";
    TU_CHECK(st == ACLNN_ERR_PARAM_INVALID && !strncmp(msg, "aclnnKeyPool: ", 14) && strstr(msg, needle),
             "%s: status %d, \"%s\"", what, st, msg);
    TU_CHECK(ex == NULL, "%s: a refused call handed out an executor", what);
    TU_CHECK(tu_tensor_untouched(&out, 0xC3), "%s: pooledKeyOut written", what);
    unwrap(&w);
    tu_tensor_free(&out);
    kp_case_free(&c);
    return tu_failures == before;
}

int main(void)
{
    TU_CHECK(aclInit(NULL) == ACL_SUCCESS && aclrtSetDevice(0) == ACL_SUCCESS, "aclInit / aclrtSetDevice");
    aclrtStream stream = NULL;
    TU_CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS, "aclrtCreateStream");
    const kp_case_spec bsh = {.B = 2, .len = {13, 13}, .start = {0, 5}, .cmp_ratio = 4, .block_size = 8, .H = 64,
                              .D = 32, .dtype = ATTNOPS_DTYPE_BF16, .norm = true, .scramble = true, .cache_gap = 2};
    const kp_case_spec th = {.th = true, .B = 3, .len = {7, 0, 19}, .start = {3, 8, 0}, .cmp_ratio = 2,
                             .block_size = 4, .H = 48, .D = 16, .dtype = ATTNOPS_DTYPE_F16};
    int passed = run_case("BSH bf16, LayerNorm, scrambled table, strided cache", &bsh, stream);
    passed += run_case("TH f16, an empty batch", &th, stream);
    passed += refused("stateCacheStrideDim0 not the cache's", &bsh, false, 1, "stateCacheStrideDim0");
    passed += refused("a current-capacity pooledKeyOut", &th, true, 0, "pooled_key");
    TU_CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS && aclrtResetDevice(0) == ACL_SUCCESS &&
             aclFinalize() == ACL_SUCCESS, "aclFinalize");
    return tu_finish("test_acl_key_pool", passed);
}
