/* Block Attention Residuals' argument space (docs/RELIABILITY.md, "Fuzzing"): batch,
 * tokens, block counts (0 and above the 127 limit too), widths, dtypes, the
 * partial block, RMSNorm on and off, scale and eps (NaN, infinities),
 * impl, threads -- each tensor sometimes perturbed or NULL -- on tiny data;
 * the forward, then the backward on the forward's caches.  The contract of
 * fz_check_status holds for both, and for sane attributes (below) the
 * outputs are finite wherever the true values fit the dtype: a NaN always
 * fails, and an infinity from the fast kernel must be the reference's
 * answer to the same call too (a gradient through RMSNorm at a zero row is
 * ~1/sqrt(eps), which with eps = 1.4e-23 overflows f16 as it must). */
#include "fuzz_input.h"

enum { MAXN = 130 };

/* The chain being checked, printed with a failure. */
static char described[256];

/* Aborts when `t` has a NaN or an infinity that the reference's answer
 * `golden` does not explain; for impl REFERENCE itself, golden is NULL and
 * infinities are overflows of the true value. */
static void check_finite(const attnops_tensor *t, const attnops_tensor *golden, attnops_impl impl, const char *what)
{
    if (fz_unexplained_nonfinite(t, golden, impl == ATTNOPS_IMPL_REFERENCE, what, described)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size, 0xD1B54A32D192ED03ull ^ size};
    fz_pool pool = {.n = 0}, golden = {.n = 0}; /* golden: the reference's answers, when an output is not finite */
    const int64_t B = fz_range(&f, 0, 3), T = fz_range(&f, 0, 12), D = fz_range(&f, 1, 40);
    const int64_t N = fz_one_in(&f, 30) ? fz_range(&f, 0, MAXN) : fz_range(&f, 1, 6);
    static const attnops_dtype dtypes[] = {ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_I32};
    const attnops_dtype dt = dtypes[fz_range(&f, 0, fz_one_in(&f, 10) ? 3 : 2)];
    const bool partial = fz_u8(&f) & 1, rmsnorm = fz_u8(&f) & 1;
    const int64_t L = N + partial, btd[3] = {B, T, D}, d1[1] = {D}, btl[3] = {B, T, L}, btl1[4] = {B, T, L, 1};
    /* Per input and NULL past N: a num_blocks larger than N (up to the 127
     * the library accepts) must read NULLs the library refuses, never the
     * pointers an earlier input freed (a static list did: CI found it). */
    const attnops_tensor *blocks[MAXN] = {NULL}, *grads[MAXN] = {NULL};
    for (int64_t l = 0; l < N; l++) blocks[l] = fz_tensor_new(&f, &pool, dt, 3, btd, true);
    attnops_attn_res_fwd_args a;
    attnops_attn_res_fwd_args_init(&a);
    a.blocks = fz_one_in(&f, 60) ? NULL : blocks, a.num_blocks = fz_one_in(&f, 60) ? fz_range(&f, -1, 140) : N;
    a.partial_block = partial ? fz_tensor_new(&f, &pool, dt, 3, btd, true) : NULL;
    a.proj_weight = fz_tensor_new(&f, &pool, dt, 1, d1, true);
    a.rmsnorm_gamma = rmsnorm || fz_one_in(&f, 4) ? fz_tensor_new(&f, &pool, dt, 1, d1, true) : NULL;
    static const double scales[] = {1.0, 0.5, 0.0625, -1.0}, eps[] = {1e-6, 1e-5, 1.0};
    a.scale = fz_pick_f64(&f, scales, 4), a.rmsnorm_eps = fz_pick_f64(&f, eps, 3);
    a.enable_rmsnorm = rmsnorm ? 1 : fz_one_in(&f, 30) ? 7 : 0;
    a.impl = (attnops_impl)fz_range(&f, 0, fz_one_in(&f, 20) ? 5 : 3);
    const int64_t fewest = fz_one_in(&f, 20) ? -1 : 0, most = fz_one_in(&f, 8) ? 2 : 1;
    a.num_threads = (int32_t)fz_range(&f, fewest, most);
    const int forward_outputs = pool.n;
    a.h = fz_tensor_new(&f, &pool, dt, 3, btd, true);
    a.rms = rmsnorm ? fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 4, btl1, true) : NULL;
    a.alpha = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 3, btl, true);
    snprintf(described, sizeof described, "B %lld T %lld N %lld D %lld dtype %d partial %d rmsnorm %d scale %g eps %g "
             "impl %d", (long long)B, (long long)T, (long long)N, (long long)D, (int)dt, partial, rmsnorm, a.scale,
             a.rmsnorm_eps, (int)a.impl);
    if (pool.too_big) goto done;
    fz_poison(&pool, forward_outputs);
    attnops_status st;
    bool skipped;
    FZ_TWO_PHASE(attnops_attn_res_workspace_size, attnops_attn_res, &a, st, skipped);
    if (skipped) goto done;
    fz_check_status("AttnRes", st, &pool, forward_outputs);
    /* Sane: |scale| <= 64 and a positive eps.  The fast kernel's logits
     * scale * w.K are f32, as on the device, and |w.K| reaches ~10^3 for
     * these data (|K| <= 2 sqrt(D)), so a scale of -6.3e37 makes them
     * infinite and the softmax NaN (found by this target; the reference's
     * are double and stay finite).  The benchmark chain is left out: it
     * rounds every intermediate to the dtype and so overflows f16 as a
     * device computing in f16 would (a scale of 1e23 gives NaN there, by
     * design). */
    const bool sane = fabs(a.scale) <= 64 && a.rmsnorm_eps > 0 && isfinite(a.rmsnorm_eps) &&
                      a.impl != ATTNOPS_IMPL_BENCHMARK;
    if (st == ATTNOPS_SUCCESS && sane && fz_any_nonfinite(&a.h, 1)) {
        const attnops_tensor *h = NULL;
        if (a.impl != ATTNOPS_IMPL_REFERENCE) {
            attnops_attn_res_fwd_args r = a;
            r.impl = ATTNOPS_IMPL_REFERENCE;
            r.h = h = fz_tensor_like(&golden, &pool, a.h);
            r.rms = fz_tensor_like(&golden, &pool, a.rms), r.alpha = fz_tensor_like(&golden, &pool, a.alpha);
            FZ_TWO_PHASE(attnops_attn_res_workspace_size, attnops_attn_res, &r, st, skipped);
            if (st != ATTNOPS_SUCCESS) fz_reference_refused(described);
            if (skipped) goto done;
        }
        check_finite(a.h, h, a.impl, "h");
    }
    const bool forward_ok = st == ATTNOPS_SUCCESS;

    attnops_attn_res_bwd_args g;
    attnops_attn_res_bwd_args_init(&g);
    g.grad_h = fz_tensor_new(&f, &pool, dt, 3, btd, true);
    g.blocks = a.blocks, g.num_blocks = a.num_blocks, g.partial_block = a.partial_block;
    g.proj_weight = a.proj_weight, g.rmsnorm_gamma = a.rmsnorm_gamma, g.alpha = a.alpha, g.rms = a.rms;
    g.scale = a.scale, g.enable_rmsnorm = a.enable_rmsnorm, g.impl = a.impl, g.num_threads = a.num_threads;
    const int backward_outputs = pool.n;
    for (int64_t l = 0; l < N; l++) grads[l] = fz_tensor_new(&f, &pool, dt, 3, btd, true);
    g.grad_blocks = grads;
    g.grad_partial_block = partial ? fz_tensor_new(&f, &pool, dt, 3, btd, true) : NULL;
    g.grad_proj_weight = fz_tensor_new(&f, &pool, dt, 1, d1, true);
    g.grad_rmsnorm_gamma = rmsnorm ? fz_tensor_new(&f, &pool, dt, 1, d1, true) : NULL;
    if (pool.too_big) goto done;
    fz_poison(&pool, backward_outputs);
    FZ_TWO_PHASE(attnops_attn_res_grad_workspace_size, attnops_attn_res_grad, &g, st, skipped);
    if (skipped) goto done;
    fz_check_status("AttnRes", st, &pool, backward_outputs);
    const attnops_tensor *outputs[MAXN + 3], *answers[MAXN + 3] = {NULL};
    int64_t n = 0;
    for (int64_t l = 0; l < N; l++) outputs[n++] = grads[l];
    outputs[n++] = g.grad_partial_block, outputs[n++] = g.grad_proj_weight, outputs[n++] = g.grad_rmsnorm_gamma;
    if (st == ATTNOPS_SUCCESS && forward_ok && sane && fz_any_nonfinite(outputs, n)) {
        if (g.impl != ATTNOPS_IMPL_REFERENCE) {
            attnops_attn_res_bwd_args r = g;
            const attnops_tensor *reference_grads[MAXN] = {NULL};
            for (int64_t i = 0; i < n; i++) answers[i] = fz_tensor_like(&golden, &pool, outputs[i]);
            for (int64_t l = 0; l < N; l++) reference_grads[l] = answers[l];
            r.impl = ATTNOPS_IMPL_REFERENCE, r.grad_blocks = reference_grads;
            r.grad_partial_block = answers[N], r.grad_proj_weight = answers[N + 1];
            r.grad_rmsnorm_gamma = answers[N + 2];
            FZ_TWO_PHASE(attnops_attn_res_grad_workspace_size, attnops_attn_res_grad, &r, st, skipped);
            if (st != ATTNOPS_SUCCESS) fz_reference_refused(described);
            if (skipped) goto done;
        }
        static const char *const names[] = {"grad_partial_block", "grad_proj_weight", "grad_rmsnorm_gamma"};
        for (int64_t i = 0; i < n; i++) check_finite(outputs[i], answers[i], g.impl, i < N ? "grad_block" : names[i - N]);
    }
done:
    fz_pool_free(&golden);
    fz_pool_free(&pool);
    return 0;
}
