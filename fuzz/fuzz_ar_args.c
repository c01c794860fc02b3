/* Block Attention Residuals' argument space (issue 16, item 2): batch,
 * tokens, block counts (0 and above the 127 limit too), widths, dtypes, the
 * partial block, RMSNorm on and off, scale and eps (NaN, infinities),
 * impl, threads -- each tensor sometimes perturbed or NULL -- on tiny data;
 * the forward, then the backward on the forward's caches.  The contract of
 * fz_check_status holds for both, and a backward fed by a successful
 * forward gives finite gradients. */
#include "fuzz_input.h"

enum { MAXN = 130 };

/* The chain being checked, printed with a failure. */
static char described[256];

static void check_finite(const attnops_tensor *t, const char *what)
{
    const int64_t e = fz_first_nonfinite(t);
    if (e < 0) return;
    fprintf(stderr, "a successful chain left %s[%lld] non-finite\n  %s\n", what, (long long)e, described);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size, 0xD1B54A32D192ED03ull ^ size};
    fz_pool pool = {.n = 0};
    const int64_t B = fz_range(&f, 0, 3), T = fz_range(&f, 0, 12), D = fz_range(&f, 1, 40);
    const int64_t N = fz_one_in(&f, 30) ? fz_range(&f, 0, MAXN) : fz_range(&f, 1, 6);
    static const attnops_dtype dtypes[] = {ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_I32};
    const attnops_dtype dt = dtypes[fz_range(&f, 0, fz_one_in(&f, 10) ? 3 : 2)];
    const bool partial = fz_u8(&f) & 1, rmsnorm = fz_u8(&f) & 1;
    const int64_t L = N + partial, btd[3] = {B, T, D}, d1[1] = {D}, btl[3] = {B, T, L}, btl1[4] = {B, T, L, 1};
    static const attnops_tensor *blocks[MAXN], *grads[MAXN];
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
    /* finite inputs, |scale| <= 64 and a positive eps: a finite h and finite
     * gradients.  The logits scale * w.K are f32 in every implementation (as
     * on the device), |w.K| reaches ~10^3 for these data (|K| <= 2 sqrt(D)),
     * so a scale of -6.3e37 makes them infinite and the softmax inf - inf =
     * NaN, as IEEE arithmetic must (found by this target: an oracle bound,
     * not a library bug); the gradients are multiplied by scale again.  The
     * benchmark chain is excluded: it rounds every intermediate to the
     * dtype and so overflows f16 as a device computing in f16 would (a scale
     * of 1e23 gives NaN there, by design). */
    const bool sane = fabs(a.scale) <= 64 && a.rmsnorm_eps > 0 && isfinite(a.rmsnorm_eps) &&
                      a.impl != ATTNOPS_IMPL_BENCHMARK;
    if (st == ATTNOPS_SUCCESS && sane) check_finite(a.h, "h");
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
    if (st == ATTNOPS_SUCCESS && forward_ok && sane) {
        for (int64_t l = 0; l < N; l++) check_finite(grads[l], "grad_block");
        check_finite(g.grad_proj_weight, "grad_proj_weight");
    }
done:
    fz_pool_free(&pool);
    return 0;
}
