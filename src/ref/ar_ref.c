/* Block Attention Residuals reference, written to read like spec B.1 / B.2.
 * Per token (b, t), V [L][D] the token's rows, g = grad_h [D]:
 *
 *   r_l   = sqrt(sum_d V[l][d]^2 / D + eps)       (RMSNorm; else r_l = 1, K = V)
 *   K[l]  = V[l] / r_l * gamma
 *   z_l   = scale * sum_d w[d] K[l][d]
 *   alpha = softmax_l(z);   h = sum_l alpha_l V[l]
 *
 *   dA_l  = g . V[l];   dz_l = alpha_l (dA_l - sum_l' alpha_l' dA_l');   s_l = scale dz_l
 *   dK[l] = s_l w;      dw += s_l K[l]
 *   RMSNorm:  dgamma += dK[l] V[l] / r_l
 *             dV[l] = alpha_l g + gamma dK[l] / r_l - V[l] c_l / (D r_l^3),  c_l = sum_d gamma dK V
 *   else      dV[l] = alpha_l g + dK[l]
 *
 * The backward reads alpha and r from the caches it is given (never
 * recomputing the softmax) and recomputes K from V, r and gamma.  dw and
 * dgamma are summed per token, per fixed chunk of tokens and then over the
 * chunks in order (ar_problem.h), so they do not depend on the thread count.
 *
 * The golden computes in double and rounds each output once (h and the
 * gradients to the activation dtype, the caches to f32).
 *
 * impl BENCHMARK (p->chain_round) is the benchmark chain of the seed's
 * triple rule: the seed's PyTorch reference (torch.stack, v ** 2, mean,
 * + eps, sqrt, v / rms, * gamma, matmul with proj_weight, * scale, softmax,
 * matmul with alpha) and its autograd, run in the activation dtype as
 * unfused operators.  R() rounds each operator's result to the dtype;
 * reductions (the mean's sum, the two matmuls, softmax, the broadcast sums
 * of the backward) are exact in double from rounded inputs and rounded
 * once, as fp32-accumulating operators give them.  Rounded, in order:
 *   forward:  V^2 (per element), mean, mean + eps, r = sqrt(.), V / r,
 *             K = (V / r) * gamma, z = K . w, z * scale, alpha, h
 *   backward: alpha and r as read (already dtype values when they are the
 *             chain's own caches), dA = g . V, dz = alpha (dA - sum alpha dA),
 *             s = dz * scale, dK = s w, K as in the forward, dw (once, at the
 *             end, as the matmul's weight gradient), alpha g;
 *             RMSNorm: dK gamma, dK (V/r) (each term of dgamma, which is
 *             rounded once at the end), (dK gamma) / r, (V/r) / r,
 *             (dK gamma) ((V/r)/r), drms = -sum_d of those, drms / (2 r),
 *             / D (mean backward), * 2V (pow backward);
 *             dV accumulated as autograd does, in the order its three uses
 *             of V are reached: (alpha g + (dK gamma)/r) + pow term
 *             (without RMSNorm: alpha g + dK).
 * Fed with the chain's own forward caches this is autograd through the
 * reference, since autograd saves exactly those rounded alpha and rms.  R()
 * is the identity for the golden, whose bits therefore do not depend on it.
 * Without RMSNorm, L = N (no partial block) and f32 activations the chain
 * follows the same operators (the seed never runs those paths: spec B.3). */
#include <math.h>
#include <string.h>

#include "ref/ar_ref.h"

/* x rounded to nearest even to `sig` significant bits with normal exponents
 * from emin (below: the subnormal quantum) and overflow to inf from
 * 2^(emax+1) -- bf16 or f16 in one rounding from the double, inline
 * because the benchmark chain rounds ~15 times per element.  x / q is
 * rounded to an integer by adding and subtracting 1.5 2^52 (|x / q| <
 * 2^(sig+1), and the default rounding mode is to nearest even); q is a
 * power of two, so the scalings are exact. */
static inline double round_sig(double x, int sig, int emin, int emax)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int e = (int)((u >> 52) & 0x7ff) - 1023;
    if (e == 1024) return x; /* inf, NaN */
    if (e < emin) e = emin;
    const uint64_t q_bits = (uint64_t)(e - sig + 1 + 1023) << 52, inv_bits = (uint64_t)(1023 - (e - sig + 1)) << 52;
    double q, inv;
    memcpy(&q, &q_bits, sizeof q);
    memcpy(&inv, &inv_bits, sizeof inv);
    const double magic = 0x1.8p52, r = ((x * inv + magic) - magic) * q;
    if (fabs(r) >= ldexp(1.0, emax + 1)) return copysign(INFINITY, x);
    return copysign(r, x); /* keeps the sign of a zero */
}

/* An intermediate of the benchmark chain rounded to the activation dtype;
 * the golden keeps it exact. */
static inline double R(const ar_problem *p, double x)
{
    switch (p->chain_round) {
    case ATTNOPS_DTYPE_BF16: return round_sig(x, 8, -126, 127);
    case ATTNOPS_DTYPE_F16: return round_sig(x, 11, -14, 15);
    case ATTNOPS_DTYPE_F32: return (float)x;
    default: return x;
    }
}

/* Activation loads and stores (exact widening, one rounding), inline for
 * bf16 and without the general store's round-to-odd step: these, with R(),
 * are where the reference spends its time.  Same bits as ao_load_f64 /
 * ao_store_f64. */
static inline double load_elem(const char *e, attnops_dtype dt)
{
    switch (dt) {
    case ATTNOPS_DTYPE_BF16: return ao_bf16_to_f32(*(const uint16_t *)e);
    case ATTNOPS_DTYPE_F16: return attnops_f16_to_f32(*(const uint16_t *)e);
    default: return *(const float *)e;
    }
}

static inline void store_elem(char *e, attnops_dtype dt, double x)
{
    switch (dt) {
    case ATTNOPS_DTYPE_BF16: { /* the rounded value is a float whose low 16 bits are 0 */
        const float f = (float)round_sig(x, 8, -126, 127);
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        *(uint16_t *)e = isnan(x) ? 0x7fc0u : (uint16_t)(u >> 16);
        break;
    }
    case ATTNOPS_DTYPE_F16: *(uint16_t *)e = attnops_f32_to_f16((float)round_sig(x, 11, -14, 15)); break;
    default: *(float *)e = (float)x; break;
    }
}

static void load_row(const ar_problem *p, const ar_rows *r, int64_t b, int64_t t, double *out)
{
    const char *row = ar_row(p, r, b, t);
    const int64_t step = r->sd * p->esize;
    for (int64_t d = 0; d < p->D; d++) out[d] = load_elem(row + d * step, p->dtype);
}

static void store_row(const ar_problem *p, const ar_rows *r, int64_t b, int64_t t, const double *in)
{
    char *row = ar_row(p, r, b, t);
    const int64_t step = r->sd * p->esize;
    for (int64_t d = 0; d < p->D; d++) store_elem(row + d * step, p->dtype, in[d]);
}

void ar_ref_token_forward(const ar_problem *p, const double *w, const double *gamma, const double *V, double *h,
                          double *r, double *alpha)
{
    const int64_t L = p->L, D = p->D;
    double z[AR_MAX_L], m = -INFINITY, sum = 0.0;
    for (int64_t l = 0; l < L; l++) {
        const double *v = V + l * D;
        double logit = 0.0;
        r[l] = 1.0;
        if (p->rmsnorm) {
            double ss = 0.0;
            for (int64_t d = 0; d < D; d++) ss += R(p, v[d] * v[d]);
            r[l] = R(p, sqrt(R(p, R(p, ss / (double)D) + p->eps)));
            for (int64_t d = 0; d < D; d++) logit += R(p, R(p, v[d] / r[l]) * gamma[d]) * w[d];
        } else {
            for (int64_t d = 0; d < D; d++) logit += v[d] * w[d];
        }
        z[l] = R(p, R(p, logit) * p->scale);
        m = fmax(m, z[l]);
    }
    for (int64_t l = 0; l < L; l++) sum += alpha[l] = exp(z[l] - m);
    for (int64_t l = 0; l < L; l++) alpha[l] = R(p, alpha[l] / sum);
    for (int64_t d = 0; d < D; d++) h[d] = 0.0;
    for (int64_t l = 0; l < L; l++)
        for (int64_t d = 0; d < D; d++) h[d] += alpha[l] * V[l * D + d];
}

/* One token's backward (B.2): V [L][D], g [D], the cached alpha and r [L]
 * -> dV written to grad_blocks / grad_partial_block; this token's terms of
 * dw and dgamma added to dw, dg [D].  tmp [D] is scratch. */
static void token_backward(const ar_problem *p, const double *w, const double *gamma, int64_t b, int64_t t,
                           const double *V, const double *g, double *tmp, double *dw, double *dg)
{
    const int64_t L = p->L, D = p->D;
    double alpha[AR_MAX_L], r[AR_MAX_L], dA[AR_MAX_L], s[AR_MAX_L], sum = 0.0;
    for (int64_t l = 0; l < L; l++) {
        const double *v = V + l * D;
        alpha[l] = R(p, *ar_cache_at(&p->alpha, b, t, l));
        r[l] = p->rmsnorm ? R(p, *ar_cache_at(&p->rms, b, t, l)) : 1.0;
        double dot = 0.0;
        for (int64_t d = 0; d < D; d++) dot += g[d] * v[d];
        dA[l] = R(p, dot);
        sum += alpha[l] * dA[l];
    }
    for (int64_t l = 0; l < L; l++) s[l] = R(p, R(p, alpha[l] * (dA[l] - sum)) * p->scale);

    for (int64_t l = 0; l < L; l++) {
        const double *v = V + l * D;
        if (!p->rmsnorm) {
            for (int64_t d = 0; d < D; d++) {
                dw[d] += s[l] * v[d];
                tmp[d] = R(p, R(p, alpha[l] * g[d]) + R(p, s[l] * w[d]));
            }
            store_row(p, &p->dv[l], b, t, tmp);
            continue;
        }
        double c = 0.0; /* sum_d gamma dK V / r^2 */
        for (int64_t d = 0; d < D; d++) {
            const double k0 = R(p, v[d] / r[l]), dK = R(p, s[l] * w[d]), dk0 = R(p, dK * gamma[d]);
            dw[d] += s[l] * R(p, k0 * gamma[d]);
            dg[d] += R(p, dK * k0);
            c += R(p, dk0 * R(p, k0 / r[l]));
            tmp[d] = R(p, R(p, alpha[l] * g[d]) + R(p, dk0 / r[l]));
        }
        /* through r = sqrt(mean(V^2) + eps): drms = -c, then sqrt and mean backward */
        const double dm = R(p, R(p, R(p, -c) / (2.0 * r[l])) / (double)D);
        for (int64_t d = 0; d < D; d++) tmp[d] = R(p, tmp[d] + R(p, dm * 2.0 * v[d]));
        store_row(p, &p->dv[l], b, t, tmp);
    }
}

/* Workspace: w and gamma widened [2][D], the backward's chunk sums of dw and
 * dgamma [2][chunks][D], then per thread V [L][D] and four rows [D]. */
static size_t params_bytes(const ar_problem *p) { return ao_align_up((size_t)(2 * p->D) * sizeof(double), 64); }
static size_t chunk_bytes(const ar_problem *p)
{
    return p->backward ? ao_align_up((size_t)(2 * ar_chunks(p) * p->D) * sizeof(double), 64) : 0;
}
static size_t thread_bytes(const ar_problem *p)
{
    return ao_align_up((size_t)((p->L + 4) * p->D) * sizeof(double), 64);
}

size_t ar_ref_workspace(const ar_problem *p)
{
    return params_bytes(p) + chunk_bytes(p) + (size_t)p->threads * thread_bytes(p);
}

static void run_forward(const ar_problem *p, const double *w, const double *gamma, char *scratch)
{
    const int64_t tokens = p->B * p->T;
#pragma omp parallel for num_threads(p->team) schedule(static)
    for (int64_t tok = 0; tok < tokens; tok++) {
        const int64_t b = tok / p->T, t = tok % p->T;
        double *V = (double *)(scratch + (size_t)ao_thread_id() * thread_bytes(p)), *h = V + p->L * p->D;
        double r[AR_MAX_L], alpha[AR_MAX_L];
        for (int64_t l = 0; l < p->L; l++) load_row(p, &p->v[l], b, t, V + l * p->D);
        ar_ref_token_forward(p, w, gamma, V, h, r, alpha);
        store_row(p, &p->h, b, t, h);
        for (int64_t l = 0; l < p->L; l++) {
            if (p->rms.data) *ar_cache_at(&p->rms, b, t, l) = (float)r[l];
            if (p->alpha.data) *ar_cache_at(&p->alpha, b, t, l) = (float)alpha[l];
        }
    }
}

static void run_backward(const ar_problem *p, const double *w, const double *gamma, double *chunk_sums,
                         char *scratch)
{
    const int64_t D = p->D, chunks = ar_chunks(p), per = ar_chunk_tokens(p), tokens = p->B * p->T;
    double *chunk_dw = chunk_sums, *chunk_dg = chunk_sums + chunks * D;
#pragma omp parallel for num_threads(p->team) schedule(dynamic)
    for (int64_t c = 0; c < chunks; c++) {
        double *V = (double *)(scratch + (size_t)ao_thread_id() * thread_bytes(p));
        double *g = V + p->L * D, *tmp = g + D, *dw = tmp + D, *dg = dw + D;
        double *cw = chunk_dw + c * D, *cg = chunk_dg + c * D;
        memset(cw, 0, (size_t)D * sizeof(double));
        memset(cg, 0, (size_t)D * sizeof(double));
        for (int64_t tok = c * per; tok < tokens && tok < (c + 1) * per; tok++) {
            const int64_t b = tok / p->T, t = tok % p->T;
            for (int64_t l = 0; l < p->L; l++) load_row(p, &p->v[l], b, t, V + l * D);
            load_row(p, &p->g, b, t, g);
            memset(dw, 0, (size_t)D * sizeof(double));
            memset(dg, 0, (size_t)D * sizeof(double));
            token_backward(p, w, gamma, b, t, V, g, tmp, dw, dg);
            for (int64_t d = 0; d < D; d++) cw[d] += dw[d], cg[d] += dg[d];
        }
    }
    for (int64_t d = 0; d < D; d++) {
        double sw = 0.0, sg = 0.0;
        for (int64_t c = 0; c < chunks; c++) sw += chunk_dw[c * D + d], sg += chunk_dg[c * D + d];
        store_elem(ar_vec_at(p, &p->dw, d), p->dtype, sw);
        if (p->rmsnorm) store_elem(ar_vec_at(p, &p->dgamma, d), p->dtype, sg);
    }
}

void ar_ref_run(const ar_problem *p, void *workspace)
{
    char *ws = workspace;
    double *w = (double *)ws, *gamma = w + p->D;
    for (int64_t d = 0; d < p->D; d++) {
        w[d] = load_elem(ar_vec_at(p, &p->w, d), p->dtype);
        gamma[d] = p->rmsnorm ? load_elem(ar_vec_at(p, &p->gamma, d), p->dtype) : 1.0;
    }
    char *scratch = ws + params_bytes(p) + chunk_bytes(p);
    if (p->backward) run_backward(p, w, gamma, (double *)(ws + params_bytes(p)), scratch);
    else run_forward(p, w, gamma, scratch);
}
