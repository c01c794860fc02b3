/* Every kernel of every inventory (src/cpu/kernels.h) on every ISA this
 * CPU has, against its contract: bitwise where the contract promises it
 * (bf16 rounding over a sweep of float bit patterns, NaN, inf and
 * subnormals included, in the plain and VNNI layouts; the dropout stream,
 * unaligned starts, odd lengths, counter carries; the f8 rounding over a
 * float sweep, every f8 rounding midpoint +-2 ulps, infinities, NaN; the
 * FP8 scales, dropout application and row scaling; the soft-capping tanh
 * and its chain rule, each ISA bit for bit vec_tanh_ref over a float sweep,
 * ragged tiles, NaN, inf and subnormals included, and vec_tanh_ref itself
 * within its ulp bounds of tanh in double), otherwise within the
 * bound its numerics allow, against the portable kernel or a statement in
 * double (softmax steps, score biases, KeyPool pooling, AttnRes rows, the
 * FusedInferAttentionScore's few-row products, the fp32 tile GEMM, the FMA
 * ceiling loop), and the golden's double block
 * products bit for bit their scalar definitions (check_ref_block.c).
 * Each (kernel, ISA) prints one line: ok, FAIL, or SKIPPED when the CPU
 * lacks the ISA; a kernel of the inventory without a check here fails.
 * A self-test then replaces each kernel, alone, by a slightly wrong one (one
 * output off by an ulp or a little more) and requires its check to fail. */
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <unistd.h>
#include <string.h>

#include "cpu/isa.h"
#include "cpu/kernels.h"
#include "cpu/vec_exp.h"
#include "cpu/vec_tanh.h"
#include "check_ref_block.h"
#include "fa/fa_fp8.h"
#include "testutil.h"
#include "suite.h"

static void check_to_bf16(const fa_kernels *k, const char *name)
{
    enum { N = 4096 };
    static float in[N];
    static uint16_t plain[N], vnni[N];
    static float widened[N];
    long bad = 0;
    for (uint64_t base = 0; base < (UINT64_C(1) << 32) && bad < 5; base += (uint64_t)N * 257) {
        for (int i = 0; i < N; i++) {
            uint32_t u = (uint32_t)(base + (uint64_t)i * 257);
            memcpy(&in[i], &u, 4);
        }
        k->to_bf16(in, 1, N, plain, N, false);
        k->to_bf16(in, 64, 64, vnni, 64, true); /* rows r, r+1 interleaved */
        memcpy(widened, in, sizeof in);
        k->round_bf16(widened, N - (int)(base % 7)); /* and a ragged tail */
        for (int i = 0; i < N; i++) {
            const int r = i / 64, c = i % 64;
            const uint16_t want = attnops_f32_to_bf16(in[i]);
            const uint16_t got_v = vnni[((r / 2) * 64 + c) * 2 + (r & 1)];
            const int n_round = N - (int)(base % 7);
            const float want_w = i < n_round ? attnops_bf16_to_f32(want) : in[i];
            if (memcmp(&widened[i], &want_w, 4) != 0 && !(isnan(widened[i]) && isnan(want_w) && i < n_round &&
                                                          attnops_f32_to_bf16(widened[i]) == want)) {
                bad++;
                TU_CHECK(false, "%s round_bf16(0x%08x) differs from to_bf16", name, (unsigned)(base + (uint64_t)i * 257));
            }
            if (plain[i] != want || got_v != want) {
                bad++;
                TU_CHECK(false, "%s to_bf16(0x%08x) = 0x%04x / vnni 0x%04x, want 0x%04x", name,
                         (unsigned)(base + (uint64_t)i * 257), plain[i], got_v, want);
            }
        }
    }
}

static void check_philox(const fa_kernels *k, const char *name)
{
    {
        tu_rng rb = tu_rng_make(37);
        for (int t = 0; t < 100; t++) { /* any block indices, 1..16 of them */
            uint64_t blocks[16];
            uint8_t gotb[256], wantb[256];
            const int n = 1 + (int)(tu_next(&rb) % 16);
            const ao_philox g = ao_philox_make(tu_next(&rb), tu_next(&rb) >> 4);
            for (int i = 0; i < n; i++) blocks[i] = tu_next(&rb) >> (t % 2 ? 30 : 1);
            k->philox_blocks(&g, blocks, n, gotb);
            for (int i = 0; i < n; i++) ao_philox_bytes(&g, blocks[i] * 16, 16, wantb + 16 * i);
            if (memcmp(gotb, wantb, (size_t)n * 16) != 0) {
                TU_CHECK(false, "%s philox_blocks (%d blocks) differs", name, n);
                break;
            }
        }
    }
    static uint8_t got[5000], want[5000];
    tu_rng r = tu_rng_make(31);
    for (int t = 0; t < 200; t++) {
        const uint64_t seed = tu_next(&r), offset = (t % 3 == 0) ? (UINT64_C(0xFFFFFFFF) * 16 - 7) : tu_next(&r) >> 8;
        const uint64_t first = tu_next(&r) % 100000;
        const size_t count = 1 + (size_t)(tu_next(&r) % 4999);
        const ao_philox g = ao_philox_make(seed, offset);
        k->philox_bytes(&g, first, count, got);
        ao_philox_bytes(&g, first, count, want);
        if (memcmp(got, want, count) != 0) {
            TU_CHECK(false, "%s philox_bytes(seed %llu, offset %llu, first %llu, count %zu) differs", name,
                     (unsigned long long)seed, (unsigned long long)offset, (unsigned long long)first, count);
            return;
        }
    }
}

/* The kernel's f8 rounding (fp8_round, scale 1) must equal decode(encode(x))
 * of the exact conversion for every value of a float sweep, every f8
 * rounding midpoint +-2 ulps, infinities and NaN; abs_max the plain max. */
static void check_fp8(const fa_kernels *k, const char *isa, attnops_dtype fp8)
{
    enum { N = 4096 };
    static float in[N], out[N];
    const ao_f8_format f = ao_f8_format_of(fp8);
    const bool e4m3 = fp8 == ATTNOPS_DTYPE_F8_E4M3FN;
    long bad = 0;
    int n = 0;
    uint64_t u = 0;
    int code = 0, special = 0;
    for (;;) { /* fill a batch: the sweep, then the midpoints, then the specials */
        n = 0;
        while (n < N && u < (UINT64_C(1) << 32)) {
            const uint32_t w = (uint32_t)u;
            memcpy(&in[n++], &w, 4);
            u += 4099;
        }
        while (n + 5 <= N && u >= (UINT64_C(1) << 32) && code < 255) {
            const float a = e4m3 ? attnops_f8_e4m3fn_to_f32((uint8_t)code) : attnops_f8_e5m2_to_f32((uint8_t)code);
            const float b = e4m3 ? attnops_f8_e4m3fn_to_f32((uint8_t)(code + 1)) : attnops_f8_e5m2_to_f32((uint8_t)(code + 1));
            code++;
            if (!isfinite(a) || !isfinite(b) || code == 128) continue; /* code 127 -> 128 crosses the sign */
            float mid = nextafterf(nextafterf((a + b) / 2, -INFINITY), -INFINITY);
            for (int t = 0; t < 5; t++, mid = nextafterf(mid, INFINITY)) in[n++] = mid;
        }
        if (n == 0 && !special) {
            const float sp[] = {INFINITY, -INFINITY, NAN, -0.0f, 0.0f, 1e30f, -1e30f, 1e-30f};
            for (size_t t = 0; t < sizeof sp / sizeof sp[0]; t++) in[n++] = sp[t];
            special = 1;
        }
        if (n == 0) break;
        memcpy(out, in, sizeof(float) * (size_t)n);
        k->fp8_round(out, n, 1.0f, &f);
        float want_max = 0.0f;
        for (int i = 0; i < n; i++) {
            const uint8_t bits = e4m3 ? attnops_f32_to_f8_e4m3fn(in[i]) : attnops_f32_to_f8_e5m2(in[i]);
            const float want = e4m3 ? attnops_f8_e4m3fn_to_f32(bits) : attnops_f8_e5m2_to_f32(bits);
            const bool same = (out[i] == want && signbit(out[i]) == signbit(want)) || (isnan(out[i]) && isnan(want));
            if (!same && bad++ < 5)
                TU_CHECK(false, "%s %s fp8_round(%a) = %a, want %a", isa, attnops_dtype_name(fp8), (double)in[i],
                         (double)out[i], (double)want);
            if (fabsf(in[i]) > want_max) want_max = fabsf(in[i]); /* NaNs ignored */
        }
        const float got_max = k->abs_max(in, n);
        TU_CHECK(got_max == want_max, "%s abs_max = %a, want %a (n %d)", isa, (double)got_max, (double)want_max, n);
    }
}

/* scale2 = (x a) b (+ y), bit for bit the plain-C statement, odd lengths. */
static void check_scale2(const fa_kernels *k, const char *isa)
{
    enum { N = 999 };
    static float x[N], y[N], got[N];
    tu_rng r = tu_rng_make(5);
    for (int i = 0; i < N; i++) x[i] = (float)tu_randn(&r), y[i] = (float)tu_randn(&r);
    for (int acc = 0; acc < 2; acc++) {
        memcpy(got, y, sizeof y);
        k->scale2(got, x, N, 0.37f, 3.1e-3f, acc);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            const float want = acc ? y[i] + x[i] * 0.37f * 3.1e-3f : x[i] * 0.37f * 3.1e-3f;
            bad += memcmp(&want, &got[i], 4) != 0;
        }
        TU_CHECK(bad == 0, "%s scale2 (accumulate %d): %d of %d values differ", isa, acc, bad, N);
    }
}

/* apply_keep, bit for bit the plain-C statement, ragged tiles. */
static void check_apply_keep(const fa_kernels *k, const char *isa)
{
    enum { R = 7, LD = 70 };
    static float x[R * LD], got[R * LD];
    static uint8_t keep[R * LD];
    tu_rng r = tu_rng_make(9);
    for (int i = 0; i < R * LD; i++) x[i] = (float)tu_randn(&r), keep[i] = (uint8_t)(tu_next(&r) & 1);
    memcpy(got, x, sizeof x);
    k->apply_keep(got, keep, R, 67, LD, 1.0f / 0.9f);
    int bad = 0;
    for (int i = 0; i < R * LD; i++) {
        const float want = i % LD < 67 ? x[i] * ((float)keep[i] * (1.0f / 0.9f)) : x[i];
        bad += memcmp(&want, &got[i], 4) != 0;
    }
    TU_CHECK(bad == 0, "%s apply_keep: %d values differ", isa, bad);
}

/* group_pool against the exact statement: per channel, the softmax weights
 * in double, each allowed to round one ulp of the weight dtype the other way
 * (f32 exp and division are that close to a midpoint now and then), the sum
 * within f32 accumulation.  R in {2, 5, 128}, ragged D, logits spread wide. */
static void check_group_pool(const kp_kernels *k, const char *isa)
{
    static const int Rs[] = {2, 5, 128}, Ds[] = {1, 17, 128};
    tu_rng r = tu_rng_make(11);
    for (int bf = 0; bf < 2; bf++)
        for (int ri = 0; ri < 3; ri++)
            for (int di = 0; di < 3; di++) {
                const int R = Rs[ri], D = Ds[di];
                static float keys[128][128], gates[128][128], ape[128 * 128], out[128];
                const float *kp[128], *gp[128];
                for (int i = 0; i < R; i++) {
                    for (int d = 0; d < D; d++)
                        keys[i][d] = (float)tu_randn(&r), gates[i][d] = (float)(8 * tu_randn(&r)),
                        ape[i * D + d] = (float)(0.1 * tu_randn(&r));
                    kp[i] = keys[i], gp[i] = gates[i];
                }
                k->group_pool(kp, gp, ape, R, D, bf, out);
                int bad = 0;
                for (int d = 0; d < D; d++) {
                    double m = -INFINITY, sum = 0, want = 0, bound = 0, e[128];
                    for (int i = 0; i < R; i++) m = fmax(m, (double)(gates[i][d] + ape[i * D + d]));
                    for (int i = 0; i < R; i++) sum += e[i] = exp((double)(gates[i][d] + ape[i * D + d]) - m);
                    for (int i = 0; i < R; i++) {
                        const double w = e[i] / sum;
                        want += w * keys[i][d];
                        bound += fabs(keys[i][d]) * (w * (bf ? 0x1p-8 : 0x1p-11) * 2 + 1e-6 * w);
                    }
                    bad += !(fabs(out[d] - want) <= bound + 1e-7);
                }
                TU_CHECK(bad == 0, "%s group_pool (R %d, D %d, %s): %d of %d channels off", isa, R, D,
                         bf ? "bf16" : "f16", bad, D);
            }
}


/* The softmax steps against the portable statement, on 64-key tiles with
 * ragged valid widths: max and the exp arguments agree to the rounding of
 * scale*s (FMA or not), each exp to 2 ulps, sums to f32 summation order. */
static void check_softmax(const fa_kernels *k, const fa_kernels *ref, const char *isa)
{
    enum { R = 5, C = 64 };
    static const int valids[] = {64, 63, 33, 17, 8, 1};
    tu_rng r = tu_rng_make(13);
    int bad = 0;
    for (int vi = 0; vi < 6; vi++) {
        const int valid = valids[vi];
        float s0[R * C], s1[R * C], s2[R * C], dp0[R * C], dp1[R * C], dp2[R * C];
        float m1[R], m2[R], l1[R], l2[R], a1[R], a2[R], mb[R], lb[R], drow[R];
        const float scale = 0.125f;
        for (int i = 0; i < R * C; i++) s0[i] = (float)(8 * tu_randn(&r)), dp0[i] = (float)tu_randn(&r);
        for (int i = 0; i < R; i++) {
            m1[i] = m2[i] = i == 0 ? -INFINITY : (float)tu_randn(&r); /* the first tile, then running stats */
            l1[i] = l2[i] = i == 0 ? 0.0f : 3.0f, drow[i] = (float)tu_randn(&r);
        }
        memcpy(s1, s0, sizeof s0), memcpy(s2, s0, sizeof s0);
        ref->softmax_fwd(s1, R, C, valid, scale, m1, l1, a1);
        k->softmax_fwd(s2, R, C, valid, scale, m2, l2, a2);
        for (int i = 0; i < R; i++) {
            bad += !(m2[i] == m1[i]) + !(fabsf(a2[i] - a1[i]) <= 0x1p-22f * a1[i] + 0x1p-22f * fabsf(m1[i]) * a1[i]);
            bad += !(fabsf(l2[i] - l1[i]) <= 0x1p-20f * l1[i] * (1 + fabsf(m1[i])));
            for (int c = 0; c < C; c++) {
                const float x = s1[i * C + c], y = s2[i * C + c], arg = fabsf(s0[i * C + c] * scale) + fabsf(m1[i]);
                bad += c >= valid ? y != 0.0f : !(fabsf(y - x) <= x * (0x1p-22f + 0x1p-23f * arg));
            }
            mb[i] = m1[i], lb[i] = l1[i];
        }
        memcpy(s1, s0, sizeof s0), memcpy(s2, s0, sizeof s0), memcpy(dp1, dp0, sizeof dp0), memcpy(dp2, dp0, sizeof dp0);
        ref->softmax_bwd(s1, dp1, R, C, valid, scale, mb, lb, drow);
        k->softmax_bwd(s2, dp2, R, C, valid, scale, mb, lb, drow);
        for (int i = 0; i < R; i++)
            for (int c = 0; c < C; c++) {
                const int at = i * C + c;
                const float arg = fabsf(s0[at] * scale) + fabsf(mb[i]), tol = 0x1p-21f + 0x1p-23f * arg;
                if (c >= valid) {
                    bad += s2[at] != 0.0f || dp2[at] != 0.0f;
                    continue;
                }
                bad += !(fabsf(s2[at] - s1[at]) <= s1[at] * tol);
                bad += !(fabsf(dp2[at] - dp1[at]) <= s1[at] * fabsf(dp0[at] - drow[i]) * (tol + 0x1p-22f));
            }
    }
    TU_CHECK(bad == 0, "%s softmax_fwd / softmax_bwd: %d values outside their bounds", isa, bad);
}

/* The one exp algorithm (cpu/vec_exp.h), seen through softmax_fwd: a row
 * [0, x1 .. x63] with scale 1 has max 0, so its outputs are exp(x) as the
 * kernel computes it.  Vector ISAs must equal vec_exp_ref bit for bit (so
 * every ISA agrees); the portable one uses libm's expf.  Both must be
 * within 1 ulp of the correctly rounded exp (double) on [-87.3, 0], and
 * give exp(0) = 1, exp(-inf) = 0.  vec_exp_ref itself is held to 1 ulp on
 * [-87.3, 88.7] (a sweep of float bit patterns). */
static void check_exp(const fa_kernels *k, const char *isa, bool portable)
{
    enum { C = 64 };
    int bad = 0, worst_shown = 0;
    float row[C], m = -INFINITY, l = 0.0f, alpha;
    for (uint32_t u = 0; u <= 0x42AE0000u; u += 9973) { /* +0 .. 87.0, as x = -value */
        float xs[C - 1];
        for (int c = 0; c < C - 1; c++) {
            uint32_t w = u + (uint32_t)c * 13;
            memcpy(&xs[c], &w, 4);
            xs[c] = -xs[c];
        }
        row[0] = 0.0f;
        memcpy(row + 1, xs, sizeof xs);
        if (u == 0) row[1] = -INFINITY;
        m = -INFINITY, l = 0.0f;
        k->softmax_fwd(row, 1, C, C, 1.0f, &m, &l, &alpha);
        bad += row[0] != 1.0f;
        for (int c = 1; c < C; c++) {
            const float x = u == 0 && c == 1 ? -INFINITY : xs[c - 1], got = row[c];
            if (x == -INFINITY) { bad += got != 0.0f; continue; }
            const float exact = (float)exp((double)x); /* correctly rounded but for double rounding */
            const double ulp = exact > 0x1p-126f ? ldexp(1.0, ilogb(exact) - 23) : 0x1p-149;
            const bool off = portable ? !(fabs(got - exact) <= ulp) : memcmp(&got, &(float){vec_exp_ref(x)}, 4) != 0 ||
                                                                          !(fabs(got - exact) <= ulp);
            if (off && worst_shown++ < 3)
                fprintf(stderr, "%s exp(%a) = %a, exact %a, vec_exp_ref %a\n", isa, (double)x, (double)got, exact,
                        (double)vec_exp_ref(x));
            bad += off;
        }
    }
    if (portable) { /* the scalar statement itself, over the range the kernels use */
        for (uint32_t u = 0; u < 0x42B17200u; u += 4099)
            for (int sign = 0; sign < 2; sign++) {
                float x;
                memcpy(&x, &u, 4);
                if (sign) x = -x;
                if (x < -87.3f) continue;
                const float exact = (float)exp((double)x);
                bad += !(fabs(vec_exp_ref(x) - exact) <= ldexp(1.0, ilogb(exact) - 23));
            }
    }
    TU_CHECK(bad == 0, "%s exp: %d values off (the vector forms must equal vec_exp_ref, all within 1 ulp)", isa, bad);
}

/* Row scaling bitwise; score biases (f32, f16, bf16 bias; both pse orders;
 * ALiBi with and without the square root) within the rounding of a fused
 * or unfused multiply-add. */
static void check_scores(const fa_kernels *k, const fa_kernels *ref, const char *isa)
{
    enum { R = 6, C = 64, LD = 70 };
    tu_rng r = tu_rng_make(17);
    float s0[R * LD], s1[R * LD], s2[R * LD], alpha[R], bias[R * LD];
    uint16_t bias16[R * LD];
    int bad = 0;
    for (int i = 0; i < R * LD; i++) s0[i] = (float)tu_randn(&r), bias[i] = (float)tu_randn(&r);
    for (int i = 0; i < R; i++) alpha[i] = (float)tu_randn(&r);
    for (int cols = 61; cols <= C; cols += 3) {
        memcpy(s1, s0, sizeof s0), memcpy(s2, s0, sizeof s0);
        ref->scale_rows(s1, R, cols, alpha);
        k->scale_rows(s2, R, cols, alpha);
        bad += memcmp(s1, s2, sizeof s1) != 0;
        for (int dt = 0; dt < 3; dt++) {
            const attnops_dtype dtype = dt == 0 ? ATTNOPS_DTYPE_F32 : dt == 1 ? ATTNOPS_DTYPE_F16 : ATTNOPS_DTYPE_BF16;
            for (int i = 0; i < R * LD; i++)
                bias16[i] = dt == 1 ? attnops_f32_to_f16(bias[i]) : attnops_f32_to_bf16(bias[i]);
            const void *b = dt == 0 ? (const void *)bias : (const void *)bias16;
            for (int order = 0; order < 2; order++)
                for (int one_row = 0; one_row < 2; one_row++) {
                    memcpy(s1, s0, sizeof s0), memcpy(s2, s0, sizeof s0);
                    const int64_t ldb = one_row ? 0 : LD;
                    ref->add_bias(s1, R, cols, LD, 0.3f, b, dtype, ldb, order);
                    k->add_bias(s2, R, cols, LD, 0.3f, b, dtype, ldb, order);
                    for (int i = 0; i < R; i++)
                        for (int c = 0; c < LD; c++) {
                            const int at = i * LD + c;
                            const double size = fabs(s0[at] * 0.3) + fabs(bias[(one_row ? 0 : i * LD) + c]) * 1.01;
                            bad += c >= cols ? s2[at] != s0[at] : !(fabs(s2[at] - s1[at]) <= 0x1p-22 * size);
                        }
                }
        }
        for (int sq = 0; sq < 2; sq++) {
            memcpy(s1, s0, sizeof s0), memcpy(s2, s0, sizeof s0);
            ref->add_alibi(s1, R, cols, LD, 0.3f, 0.0625f, -37.0f, sq);
            k->add_alibi(s2, R, cols, LD, 0.3f, 0.0625f, -37.0f, sq);
            for (int i = 0; i < R; i++)
                for (int c = 0; c < LD; c++) {
                    const int at = i * LD + c;
                    const double d = fabs(-37.0 - i + c), size = fabs(s0[at] * 0.3) + 0.0625 * (sq ? sqrt(d) : d);
                    bad += c >= cols ? s2[at] != s0[at] : !(fabs(s2[at] - s1[at]) <= 0x1p-22 * size);
                }
        }
    }
    TU_CHECK(bad == 0, "%s scale_rows / add_bias / add_alibi: %d values outside their bounds", isa, bad);
}
/* The AttnRes row kernels against their statement in double: f32 sums of
 * D terms in any order (ar_dots_f64: one f32 rounding), the pair-split forms
 * bitwise the natural ones on the split row, nothing written past D. */

static void check_ar_rows(const ar_kernels *k, const char *isa)
{
    static const int Ds[] = {1, 15, 16, 33, 100, 1536};
    static const attnops_dtype dts[3] = {ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16};
    enum { MAXD = 1536 };
    static float x[MAXD], y[MAXD], g[MAXD], acc[MAXD], acc0[MAXD], u[MAXD], u0[MAXD];
    static double vd[MAXD];
    static unsigned char v[MAXD * 4], out[MAXD * 4];
    tu_rng r = tu_rng_make(5);
    int bad = 0;
    for (int di = 0; di < 6; di++)
        for (int ti = 0; ti < 3; ti++) {
            const int D = Ds[di];
            const attnops_dtype dt = dts[ti];
            const size_t es = attnops_dtype_size(dt);
            const double ud = tu_unit_roundoff(dt);
            for (int i = 0; i < D; i++) {
                ao_store_f64(v + i * es, dt, tu_randn(&r));
                vd[i] = ao_load_f64(v + i * es, dt);
                x[i] = (float)tu_randn(&r), y[i] = (float)tu_randn(&r), g[i] = (float)tu_randn(&r);
                acc0[i] = (float)tu_randn(&r), u0[i] = (float)tu_randn(&r);
            }
            float vx, vy, vv, vy2;
            double ex = 0, ey = 0, ev = 0, sx = 0, sy = 0, sv = 0;
            k->dots(v, dt, D, x, y, &vx, &vy, NULL);
            k->dots(v, dt, D, NULL, y, &vv, &vy2, out); /* a prefetch hint changes nothing */
            for (int i = 0; i < D; i++) {
                ex += vd[i] * x[i], ey += vd[i] * y[i], ev += vd[i] * vd[i];
                sx += fabs(vd[i] * x[i]), sy += fabs(vd[i] * y[i]), sv += vd[i] * vd[i];
            }
            const double gd = 0x1p-24 * D; /* f32 sums of D terms, any order */
            bad += !(fabs(vx - ex) <= gd * sx) + !(fabs(vy - ey) <= gd * sy) + !(fabs(vv - ev) <= gd * sv) +
                   (vy2 != vy);
            if (dt == ATTNOPS_DTYPE_F32) { /* double sums: one f32 rounding, whatever D (an f32 sum fails this) */
                float fx, fy, fv, fy2;
                k->dots_f64((const float *)v, D, x, y, &fx, &fy, NULL);
                k->dots_f64((const float *)v, D, NULL, y, &fv, &fy2, out);
                const double gf = 0x1p-52 * D;
                bad += !(fabs(fx - ex) <= 0x1p-24 * fabs(ex) + gf * sx) + !(fabs(fy - ey) <= 0x1p-24 * fabs(ey) + gf * sy) +
                       !(fabs(fv - ev) <= 0x1p-24 * ev + gf * sv) + (fy2 != fy);
            }
            if (dt == ATTNOPS_DTYPE_BF16) { /* the pair-split forms (kernels.h), tails zero-padded */
                static float ys[MAXD], accs[MAXD], accs0[MAXD], vs[MAXD];
                static unsigned char outs[MAXD * 4 + 64];
                const int len = AR_SPLIT_LEN(D);
                memset(ys, 0, sizeof ys), memset(accs0, 0, sizeof accs0), memset(vs, 0, sizeof vs);
                for (int i = 0; i < D; i++)
                    ys[AR_SPLIT(i)] = y[i], accs0[AR_SPLIT(i)] = acc0[i], vs[AR_SPLIT(i)] = (float)vd[i];
                float sv2, sy2, sv3, sy3;
                k->dots_split((const uint16_t *)v, D, NULL, ys, &sv2, &sy2, v);
                k->dots(vs, ATTNOPS_DTYPE_F32, len, NULL, ys, &sv3, &sy3, NULL);
                bad += !(fabs(sv2 - ev) <= gd * sv) + !(fabs(sy2 - ey) <= gd * sy) + (sv2 != sv3) + (sy2 != sy3);
                const float c = 0.75f, e = -1.25f, div = 3.0f;
                memcpy(accs, accs0, sizeof accs);
                k->accumulate_split(accs, c, e, (const uint16_t *)v, D);
                for (int i = 0; i < D; i++) {
                    const double want = (double)c * acc0[i] + (double)e * vd[i], got = accs[AR_SPLIT(i)];
                    bad += !(fabs(got - want) <= 0x1p-23 * (fabs((double)c * acc0[i]) + fabs((double)e * vd[i])));
                }
                for (int pos = 0; pos < len; pos++) bad += accs0[pos] == 0.0f && accs[pos] != 0.0f; /* padding */
                for (int f32 = 0; f32 < 2; f32++) {
                    const attnops_dtype odt = f32 ? ATTNOPS_DTYPE_F32 : ATTNOPS_DTYPE_BF16;
                    memset(outs, 0x5A, sizeof outs);
                    k->store_div_split(outs, odt, accs0, div, D);
                    const size_t oes = attnops_dtype_size(odt);
                    for (int i = 0; i < D; i++) {
                        const double q = (double)acc0[i] / div, got = ao_load_f64(outs + i * oes, odt);
                        bad += !(fabs(got - q) <= 2 * tu_unit_roundoff(odt) * fabs(q));
                    }
                    bad += outs[D * oes] != 0x5A; /* nothing written past D */
                }
                /* the backward's forms: dots against a split x; the gradient row from bf16 and from the
                 * same row widened to f32 (strided rows), natural bf16 and f32 outputs, all the same values */
                static float xs[MAXD], gs[MAXD], us0[MAXD], us[MAXD];
                memset(xs, 0, sizeof xs), memset(gs, 0, sizeof gs), memset(us0, 0, sizeof us0);
                for (int i = 0; i < D; i++) xs[AR_SPLIT(i)] = x[i], gs[AR_SPLIT(i)] = g[i], us0[AR_SPLIT(i)] = u0[i];
                float sx2, sx3;
                k->dots_split((const uint16_t *)v, D, xs, ys, &sx2, &sy2, NULL);
                k->dots(vs, ATTNOPS_DTYPE_F32, len, xs, ys, &sx3, &sy3, NULL);
                bad += !(fabs(sx2 - ex) <= gd * sx) + (sx2 != sx3) + (sy2 != sy3);
                const float a = 0.5f, bb = 2.0f;
                for (int form = 0; form < 3; form++) { /* bf16 in -> bf16 out (streamed), f32 in -> bf16, bf16 -> f32 */
                    static float vnat[MAXD];
                    static _Alignas(64) unsigned char outg[MAXD * 4 + 64];
                    for (int i = 0; i < D; i++) vnat[i] = (float)vd[i];
                    memcpy(us, us0, sizeof us);
                    memset(outg, 0x5A, sizeof outg);
                    const attnops_dtype odt = form == 2 ? ATTNOPS_DTYPE_F32 : ATTNOPS_DTYPE_BF16;
                    k->grad_row_split(form == 1 ? (const void *)vnat : (const void *)v,
                                      form == 1 ? ATTNOPS_DTYPE_F32 : ATTNOPS_DTYPE_BF16, D, gs, ys, a, bb, e, outg,
                                      odt, us, form == 0);
                    const size_t oes = attnops_dtype_size(odt);
                    for (int i = 0; i < D; i++) {
                        const double terms[3] = {(double)a * g[i], (double)bb * y[i], (double)e * vd[i]};
                        const double want = terms[0] + terms[1] + terms[2], got = ao_load_f64(outg + i * oes, odt);
                        const double size = fabs(terms[0]) + fabs(terms[1]) + fabs(terms[2]);
                        bad += !(fabs(got - want) <= tu_unit_roundoff(odt) * fabs(want) + 0x1p-21 * size);
                        const double uw = (double)u0[i] + (double)bb * vd[i];
                        bad += !(fabs(us[AR_SPLIT(i)] - uw) <= 0x1p-23 * (fabs(u0[i]) + fabs(bb * vd[i])));
                    }
                    bad += outg[D * oes] != 0x5A;
                }
            }

            const float c = 0.75f, e = -1.25f, a = 0.5f, b = 2.0f, div = 3.0f;
            memcpy(acc, acc0, sizeof(float) * (size_t)D);
            memcpy(u, u0, sizeof(float) * (size_t)D);
            k->accumulate(acc, c, e, v, dt, D);
            k->store_div(out, dt, acc0, div, D);
            for (int i = 0; i < D; i++) {
                const double want = (double)c * acc0[i] + (double)e * vd[i];
                bad += !(fabs(acc[i] - want) <= 0x1p-23 * (fabs((double)c * acc0[i]) + fabs((double)e * vd[i])));
                const double q = (double)acc0[i] / div, got = ao_load_f64(out + i * es, dt);
                bad += !(fabs(got - q) <= 2 * ud * fabs(q));
            }
            /* streamed stores on a 64-byte aligned copy of out, plain ones on out: both bounded, the same bits */
            static _Alignas(64) unsigned char out_stream[MAXD * 4];
            static float u_stream[MAXD];
            memcpy(u_stream, u0, sizeof(float) * (size_t)D);
            k->grad_row(v, dt, D, g, y, a, b, e, out, dt, u, false);
            k->grad_row(v, dt, D, g, y, a, b, e, out_stream, dt, u_stream, true);
            bad += memcmp(out, out_stream, (size_t)D * es) != 0;
            bad += memcmp(u, u_stream, sizeof(float) * (size_t)D) != 0;
            for (int i = 0; i < D; i++) {
                const double terms[3] = {(double)a * g[i], (double)b * y[i], (double)e * vd[i]};
                const double want = terms[0] + terms[1] + terms[2], got = ao_load_f64(out + i * es, dt);
                const double size = fabs(terms[0]) + fabs(terms[1]) + fabs(terms[2]);
                bad += !(fabs(got - want) <= ud * fabs(want) + 0x1p-21 * size);
                const double uw = (double)u0[i] + (double)b * vd[i];
                bad += !(fabs(u[i] - uw) <= 0x1p-23 * (fabs(u0[i]) + fabs(b * vd[i])));
            }
        }
    TU_CHECK(bad == 0, "%s AttnRes row kernels: %d values outside their bounds", isa, bad);
}


/* The FusedInferAttentionScore few-row kernels against their statement in
 * double: sums of D (dot_rows) or cols + 1 (axpy_rows) f32 terms in any
 * order, over rows in and past the register blocks (1..9), key and value
 * rows anywhere (a shuffled pointer table into one buffer), every dtype
 * (int8 widened exactly), accumulate on and off, a bf16 query's call (q of
 * bf16 values, p that may be rounded to bf16) and another's; nothing
 * written past the rows' D or cols. */
static void check_fia_rows(const fia_kernels *k, const char *isa)
{
    static const int Ds[] = {1, 15, 16, 33, 128};
    static const int Cs[] = {1, 2, 3, 7, 37}; /* 37: past a 32-key step, odd */
    static const attnops_dtype dts[4] = {ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16, ATTNOPS_DTYPE_I8};
    enum { MAXR = 9, MAXD = 128, MAXC = 37, LD = MAXD + 3, LDS = MAXC + 2 };
    static float q[MAXR * LD], p[MAXR * LDS], s[MAXR * LDS], s0[MAXR * LDS], o[MAXR * LD], o0[MAXR * LD];
    static unsigned char rows[MAXC][MAXD * 4];
    static double x[MAXC][MAXD];
    tu_rng r = tu_rng_make(41);
    int bad = 0;
    for (int di = 0; di < 5; di++)
        for (int ci = 0; ci < 5; ci++)
            for (int ti = 0; ti < 4; ti++)
                for (int nr = 1; nr <= MAXR; nr += 2)
                    for (int bf16_q = 0; bf16_q < 2; bf16_q++) {
                        const int D = Ds[di], cols = Cs[ci];
                        const attnops_dtype dt = dts[ti];
                        if (dt == ATTNOPS_DTYPE_BF16 && !bf16_q) continue; /* bf16 keys meet bf16 values */
                        const size_t es = attnops_dtype_size(dt);
                        const void *at[MAXC];
                        for (int c = 0; c < cols; c++) {
                            const int slot = (c * 5 + 3) % MAXC; /* the table's rows out of order */
                            at[c] = rows[slot];
                            for (int d = 0; d < D; d++) {
                                if (dt == ATTNOPS_DTYPE_I8) ((int8_t *)rows[slot])[d] = (int8_t)(tu_randn(&r) * 40);
                                else ao_store_f64(rows[slot] + d * es, dt, tu_randn(&r));
                                x[c][d] = dt == ATTNOPS_DTYPE_I8 ? ((const int8_t *)rows[slot])[d]
                                                                 : ao_load_f64(rows[slot] + d * es, dt);
                            }
                        }
                        for (int i = 0; i < MAXR * LD; i++) q[i] = (float)tu_randn(&r), o0[i] = (float)tu_randn(&r);
                        if (bf16_q)
                            for (int i = 0; i < MAXR * LD; i++) q[i] = attnops_bf16_to_f32(attnops_f32_to_bf16(q[i]));
                        for (int i = 0; i < MAXR * LDS; i++) p[i] = (float)tu_randn(&r), s0[i] = (float)tu_randn(&r);
                        for (int accumulate = 0; accumulate < 2; accumulate++) {
                            memcpy(s, s0, sizeof s);
                            /* the rows asked for ahead: the table itself (prefetches change nothing) */
                            k->dot_rows(q, nr, LD, at, dt, D, cols, s, LDS, accumulate, accumulate ? at : NULL,
                                        (int)(D * es));
                            for (int i = 0; i < nr; i++)
                                for (int c = 0; c < LDS; c++) {
                                    const float got = s[i * LDS + c];
                                    if (c >= cols) {
                                        bad += got != s0[i * LDS + c];
                                        continue;
                                    }
                                    double want = accumulate ? s0[i * LDS + c] : 0.0, size = fabs(want);
                                    for (int d = 0; d < D; d++)
                                        want += q[i * LD + d] * x[c][d], size += fabs(q[i * LD + d] * x[c][d]);
                                    bad += !(fabs(got - want) <= 0x1p-24 * (D + 1) * size);
                                }
                            for (int i = nr * LDS; i < MAXR * LDS; i++) bad += s[i] != s0[i];
                        }
                        memcpy(o, o0, sizeof o);
                        k->axpy_rows(p, nr, LDS, at, dt, D, cols, o, LD, bf16_q, bf16_q ? at : NULL, (int)(D * es));
                        for (int i = 0; i < MAXR; i++)
                            for (int d = 0; d < LD; d++) {
                                if (i >= nr || d >= D) {
                                    bad += o[i * LD + d] != o0[i * LD + d];
                                    continue;
                                }
                                double want = o0[i * LD + d], size = fabs(want), terms = 0.0;
                                for (int c = 0; c < cols; c++)
                                    want += p[i * LDS + c] * x[c][d], terms += fabs(p[i * LDS + c] * x[c][d]);
                                /* a bf16 query's call: p may be rounded to bf16 first (a unit roundoff a term) */
                                const double p_round = bf16_q ? 0x1p-8 * terms : 0.0;
                                bad += !(fabs(o[i * LD + d] - want) <= 0x1p-24 * (cols + 1) * (size + terms) + p_round);
                            }
                    }
    TU_CHECK(bad == 0, "%s fia dot_rows / axpy_rows: %d values outside their bounds", isa, bad);
}

/* The f16 conversions bit for bit the library's: every f16 encoding
 * widened, and a sweep of float bit patterns (NaN, inf, subnormals, every
 * rounding boundary region) narrowed, with ragged lengths. */
static void check_f16(const fa_kernels *k, const char *isa)
{
    enum { N = 4096 };
    static uint16_t h[N], got_h[N + 8];
    static float f[N], got_f[N + 8];
    int bad = 0;
    for (uint32_t base = 0; base < 65536; base += N) {
        for (int i = 0; i < N; i++) h[i] = (uint16_t)(base + (uint32_t)i);
        const int n = N - (int)(base / N % 7);
        got_f[n] = 12345.0f;
        k->f16_to_f32(h, n, got_f);
        for (int i = 0; i < n; i++) {
            const float want = attnops_f16_to_f32(h[i]);
            bad += memcmp(&want, &got_f[i], 4) != 0;
        }
        bad += got_f[n] != 12345.0f; /* nothing written past n */
    }
    for (uint64_t base = 0; base < (UINT64_C(1) << 32); base += (uint64_t)N * 263) {
        for (int i = 0; i < N; i++) {
            const uint32_t u = (uint32_t)(base + (uint64_t)i * 263);
            memcpy(&f[i], &u, 4);
        }
        const int n = N - (int)(base % 5);
        got_h[n] = 0xBEEF;
        k->f32_to_f16(f, n, got_h);
        for (int i = 0; i < n; i++) bad += got_h[i] != attnops_f32_to_f16(f[i]);
        bad += got_h[n] != 0xBEEF;
    }
    TU_CHECK(bad == 0, "%s f16_to_f32 / f32_to_f16: %d values differ from the library's conversions", isa, bad);
}

/* Soft-capping (cpu/vec_tanh.h).  vec_tanh_ref itself, once, against tanh
 * in double over a sweep of float bit patterns of both signs (every 4099th
 * from +0 to +inf), 0.625 +-8 ulps, the first subnormals, inf and NaN:
 *  - tanh within TANH_ULPS ulps (distance along the float line) of the
 *    correctly rounded (float)tanh(x), with x's sign (tanh(-0) = -0);
 *    measured worst over every non-negative float (the negative ones are
 *    their mirror image): 1 ulp (1.36 ulps from the exact value);
 *  - the derivative against 1 - tanh(x)^2 in double, computed as
 *    1 / cosh(x)^2 (which keeps its relative precision where tanh is near
 *    1): within DTANH_ULPS * 2^-23 relative where that is >= 2^-125 (|x| <=
 *    ~43.67: u = 2 / (exp(2|x|) + 1) is then a normal float, exp far below
 *    its clamp); measured worst over every non-negative float: 1.8496, at
 *    x = 0x1.15408ap+3.  Beyond (u subnormal, relative errors up to 256
 *    ulps, then exp's clamp at 2|x| > 88.72 holding d at ~2^-126 while the
 *    exact value goes to 0): 0 <= d and |d - exact| <= DTANH_ABS; measured
 *    worst 0x1.00027cp-126 (the clamp's d, against an exact value ~0);
 *  - NaN in gives NaN for both.
 * Then each ISA's softcap, bit for bit vec_tanh_ref applied element-wise
 * (s = vec_tanh_ref(s in) out, dtanh its derivative), on ragged tiles (5
 * rows of 61..67 columns, ld 70): scores spread over 2^-4..2^12 with
 * in = 0.3 / 50, out = 50, runs that all fall on one side of the tanh split
 * (the vector forms skip the other side there), and with in = out = 1 a
 * sweep of float bit patterns (every 65537th, so every exponent, subnormals
 * and NaNs) and the specials; with dtanh and without; columns cols..ld-1 and the row past the
 * tile unchanged in s and dtanh.  softcap_grad bit for bit ds * dtanh, the
 * same tiles. */
#define TANH_ULPS 1.0
#define DTANH_ULPS 1.85
#define DTANH_ABS 0x1.01p-126

/* Signed distance of float bit patterns along the number line (+-0 the same point). */
static int64_t float_line(float x)
{
    int32_t i;
    memcpy(&i, &x, 4);
    return i < 0 ? -(int64_t)(i & 0x7fffffff) : (int64_t)i;
}

/* One input of the accuracy sweep; the worst errors seen so far updated. */
static int tanh_accuracy_one(float x, double *worst_t, double *worst_d, double *worst_abs)
{
    float d;
    const float t = vec_tanh_ref(x, &d);
    if (isnan(x)) return !(isnan(t) && isnan(d));
    const double exact_d = 1.0 / (cosh((double)x) * cosh((double)x)); /* 0 once cosh overflows */
    const double et = fabs((double)(float_line(t) - float_line((float)tanh((double)x))));
    int bad = signbit(t) != signbit(x) || !(et <= TANH_ULPS);
    if (et > *worst_t) *worst_t = et;
    if (exact_d >= 0x1p-125) {
        const double ed = fabs(d - exact_d) / exact_d * 0x1p23;
        bad += !(ed <= DTANH_ULPS);
        if (ed > *worst_d) *worst_d = ed;
    } else {
        const double ea = fabs(d - exact_d);
        bad += !(d >= 0.0f) || !(ea <= DTANH_ABS);
        if (ea > *worst_abs) *worst_abs = ea;
    }
    if (bad) fprintf(stderr, "vec_tanh_ref(%a) = %a, dtanh %a; tanh %a, 1 - tanh^2 %a\n", (double)x, (double)t,
                     (double)d, tanh((double)x), exact_d);
    return bad;
}

static void check_tanh_accuracy(void)
{
    double worst_t = 0, worst_d = 0, worst_abs = 0;
    int bad = 0;
    for (uint64_t u = 0; u <= 0x7F800000u; u += 4099)
        for (int sign = 0; sign < 2; sign++) {
            const uint32_t w = (uint32_t)u | (sign ? 0x80000000u : 0u);
            float x;
            memcpy(&x, &w, 4);
            bad += tanh_accuracy_one(x, &worst_t, &worst_d, &worst_abs);
        }
    float x = VEC_TANH_SMALL;
    for (int i = 0; i < 8; i++) x = nextafterf(x, 0.0f);
    for (int i = 0; i < 17; i++, x = nextafterf(x, INFINITY))
        bad += tanh_accuracy_one(x, &worst_t, &worst_d, &worst_abs) + tanh_accuracy_one(-x, &worst_t, &worst_d, &worst_abs);
    for (uint32_t w = 0; w < 64; w++) { /* the first subnormals */
        memcpy(&x, &w, 4);
        bad += tanh_accuracy_one(x, &worst_t, &worst_d, &worst_abs) + tanh_accuracy_one(-x, &worst_t, &worst_d, &worst_abs);
    }
    const float special[] = {INFINITY, -INFINITY, NAN, -NAN, 0x1p-126f, FLT_MAX, 44.0f, 44.5f, 9.0f, 9.1f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        bad += tanh_accuracy_one(special[i], &worst_t, &worst_d, &worst_abs);
    TU_CHECK(bad == 0,
             "vec_tanh_ref: %d values outside its bounds (worst tanh %g ulps, dtanh %g ulps relative, %a absolute)",
             bad, worst_t, worst_d, worst_abs);
}

/* The scores of the softcap tiles: the sweep of set 1 (bit patterns, every
 * 65537th, after the specials), spread values (set 0), or (set 2) runs of 64
 * that all take tanh's polynomial side (|s in| < 0.625), then 64 that all
 * take its exp side, so that the vector forms' one-side shortcuts run. */
static float softcap_input(int set, uint32_t i, tu_rng *r)
{
    static const uint32_t special[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                                       0x7F800001u, 0x7FA00000u, 0x00000001u, 0x80000001u, 0x007FFFFFu, 0x00800000u,
                                       0x3F200000u, 0xBF200000u, 0x3F1FFFFFu, 0xBF1FFFFFu, 0x3F200001u, 0xBF200001u,
                                       0x7F7FFFFFu, 0xFF7FFFFFu, 0x42300000u, 0xC2320000u, 0x41100000u, 0x3F800000u};
    enum { NSPECIAL = sizeof special / sizeof special[0] };
    float x;
    if (set == 1) {
        const uint32_t w = i < NSPECIAL ? special[i] : (uint32_t)((i - NSPECIAL) * 65537u);
        memcpy(&x, &w, 4);
        return x;
    }
    if (set == 2) {
        const double mag = (i / 64) % 2 ? 32.0 + 2000.0 * tu_uniform(r) : 31.0 * tu_uniform(r); /* in = 0.3 / 50 */
        return (float)(tu_uniform(r) < 0.5 ? -mag : mag);
    }
    if (i % 97 < 8) { /* the specials among the scores, NaNs included */
        memcpy(&x, &special[i % 97], 4);
        return x;
    }
    return (float)(tu_randn(r) * exp2(16.0 * tu_uniform(r) - 4.0));
}

static void check_softcap(const fa_kernels *k, const char *isa)
{
    enum { R = 5, LD = 70, NT = (R + 1) * LD, SWEEP = 65536 + 24 };
    static float s0[NT], s[NT], d[NT], g0[NT], g[NT], pad_d[NT];
    tu_rng r = tu_rng_make(19);
    int bad = 0, shown = 0;
    for (int i = 0; i < NT; i++) pad_d[i] = -5.0f - (float)i; /* never a derivative */
    for (int set = 0; set < 3; set++) {
        /* volatile: the reference's multiplies by 1 must not be folded away (s * 1 quietens a signalling NaN) */
        volatile float vin = set == 1 ? 1.0f : 0.3f / 50.0f, vout = set == 1 ? 1.0f : 50.0f;
        const float in = vin, out = vout;
        const uint32_t total = set == 1 ? SWEEP : 20000;
        uint32_t next = 0;
        for (int tile = 0; next < total; tile++) {
            const int cols = 61 + tile % 7;
            for (int i = 0; i < NT; i++) {
                const bool inside = i < R * LD && i % LD < cols;
                s0[i] = inside && next < total ? softcap_input(set, next++, &r) : 3.0f + (float)i;
            }
            for (int with_d = 1; with_d >= 0; with_d--) {
                memcpy(s, s0, sizeof s), memcpy(d, pad_d, sizeof d);
                k->softcap(s, R, cols, LD, in, out, with_d ? d : NULL);
                for (int i = 0; i < NT; i++) {
                    float want_s = s0[i], want_d = pad_d[i];
                    if (i < R * LD && i % LD < cols) {
                        float wd;
                        want_s = vec_tanh_ref(s0[i] * in, &wd) * out;
                        if (with_d) want_d = wd;
                    }
                    const bool off = memcmp(&s[i], &want_s, 4) != 0 || memcmp(&d[i], &want_d, 4) != 0;
                    if (off && shown++ < 3)
                        fprintf(stderr, "%s softcap(%a, in %a, out %a) at (%d, %d) of %d cols = %a, dtanh %a; want %a, %a\n",
                                isa, (double)s0[i], (double)in, (double)out, i / LD, i % LD, cols, (double)s[i],
                                (double)d[i], (double)want_s, (double)want_d);
                    bad += off;
                }
            }
        }
    }
    TU_CHECK(bad == 0, "%s softcap: %d values differ from vec_tanh_ref (or written outside the tile)", isa, bad);

    bad = 0;
    for (int cols = 61; cols <= 67; cols++)
        for (int rep = 0; rep < 2; rep++) {
            for (int i = 0; i < NT; i++) {
                g0[i] = (float)(tu_randn(&r) * exp2(8.0 * tu_uniform(&r) - 4.0));
                s0[i] = (float)tu_uniform(&r); /* a derivative in [0, 1) */
            }
            s0[3] = 0.0f, s0[LD + 5] = NAN, g0[2 * LD + 7] = NAN, g0[9] = INFINITY, s0[4 * LD + 1] = 0x1p-140f;
            g0[3 * LD + cols - 1] = -INFINITY, s0[1] = 1.0f;
            memcpy(g, g0, sizeof g);
            k->softcap_grad(g, s0, R, cols, LD);
            for (int i = 0; i < NT; i++) {
                const float want = i < R * LD && i % LD < cols ? g0[i] * s0[i] : g0[i];
                bad += memcmp(&g[i], &want, 4) != 0;
            }
        }
    TU_CHECK(bad == 0, "%s softcap_grad: %d values differ from ds * dtanh (or written outside the tile)", isa, bad);
}

/* ---- the inventory walk ---- */

typedef void (*group_check)(const cpu_kernel_set *k, const char *isa);

static void run_bf16(const cpu_kernel_set *k, const char *isa) { check_to_bf16(&k->fa, isa); }
static void run_f16(const cpu_kernel_set *k, const char *isa) { check_f16(&k->fa, isa); }
static void run_philox(const cpu_kernel_set *k, const char *isa) { check_philox(&k->fa, isa); }
static void run_fp8(const cpu_kernel_set *k, const char *isa)
{
    check_fp8(&k->fa, isa, ATTNOPS_DTYPE_F8_E4M3FN);
    check_fp8(&k->fa, isa, ATTNOPS_DTYPE_F8_E5M2);
}
static void run_scale2(const cpu_kernel_set *k, const char *isa) { check_scale2(&k->fa, isa); }
static void run_keep(const cpu_kernel_set *k, const char *isa) { check_apply_keep(&k->fa, isa); }
static void run_softmax(const cpu_kernel_set *k, const char *isa)
{
    check_softmax(&k->fa, &cpu_kernels_portable.fa, isa);
    check_exp(&k->fa, isa, k->fa.softmax_fwd == cpu_kernels_portable.fa.softmax_fwd);
}
static void run_scores(const cpu_kernel_set *k, const char *isa) { check_scores(&k->fa, &cpu_kernels_portable.fa, isa); }

/* transpose_scaled bit for bit against its statement (one product an element), on block-sized and ragged
 * shapes (rows and cols below, at and past 4, 8 and 16 lanes) in padded leading dimensions, NaN and -0
 * carried; everything past rows x cols of dst untouched. */
static void run_transpose(const cpu_kernel_set *k, const char *isa)
{
    enum { MAXR = 70, MAXC = 130, LDS = 72, LDD = 131 };
    static const int shapes[][2] = {{1, 1}, {3, 5}, {4, 4}, {8, 8}, {16, 16}, {17, 33}, {64, 128}, {70, 129}};
    static float src[MAXC * LDS], dst[MAXR * LDD];
    tu_rng r = tu_rng_make(23);
    for (int i = 0; i < MAXC * LDS; i++) src[i] = (float)tu_randn(&r);
    src[5] = NAN, src[LDS + 2] = -0.0f;
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int rows = shapes[s][0], cols = shapes[s][1];
        for (int i = 0; i < MAXR * LDD; i++) dst[i] = 1234.5f;
        k->fa.transpose_scaled(src, LDS, rows, cols, 0.37f, dst, LDD);
        for (int i = 0; i < MAXR; i++)
            for (int c = 0; c < LDD; c++) {
                const float want = i < rows && c < cols ? 0.37f * src[c * LDS + i] : 1234.5f;
                bad += memcmp(&want, &dst[i * LDD + c], sizeof want) != 0;
            }
    }
    TU_CHECK(bad == 0, "%s transpose_scaled: %d elements differ from scale * src^T (or written past the shape)", isa,
             bad);
}
static void run_softcap(const cpu_kernel_set *k, const char *isa)
{
    static bool accuracy_checked; /* vec_tanh_ref's own accuracy: once, not per ISA */
    if (!accuracy_checked) check_tanh_accuracy(), accuracy_checked = true;
    check_softcap(&k->fa, isa);
}
/* gemm_f32 against the product in double, both forms of A, with and
 * without accumulation, ragged shapes in padded leading dimensions: each
 * element within gamma(2K + 2) of the sum of the magnitudes of its terms
 * (one rounding per add and per product at most), and the columns past N
 * of each row untouched. */
static void check_gemm(const gemm_kernels *k, const char *isa)
{
    static const int shapes[][3] = {{1, 1, 1}, {4, 16, 64}, {5, 19, 33}, {64, 64, 128}, {7, 3, 130}, {17, 68, 2}};
    enum { LDA = 140, LDB = 80, LDC = 75, MAXM = 64, MAXK = 130 };
    static float a[MAXK * LDA], b[MAXK * LDB], c0[MAXM * LDC], c[MAXM * LDC];
    tu_rng r = tu_rng_make(21);
    for (int i = 0; i < MAXK * LDA; i++) a[i] = (float)tu_randn(&r);
    for (int i = 0; i < MAXK * LDB; i++) b[i] = (float)tu_randn(&r);
    for (int i = 0; i < MAXM * LDC; i++) c0[i] = (float)tu_randn(&r);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int form = 0; form < 4; form++) {
            const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            const bool trans_a = form & 1, acc = form & 2;
            memcpy(c, c0, sizeof c);
            k->f32(trans_a, M, N, K, a, LDA, b, LDB, c, LDC, acc);
            const double n = 2.0 * K + 2, u = 0x1p-24, gamma = n * u / (1 - n * u);
            int bad = 0;
            for (int i = 0; i < M; i++)
                for (int j = 0; j < LDC; j++) {
                    const float got = c[i * LDC + j];
                    if (j >= N) {
                        bad += memcmp(&got, &c0[i * LDC + j], 4) != 0;
                        continue;
                    }
                    double want = acc ? c0[i * LDC + j] : 0.0, mag = fabs(want);
                    for (int kk = 0; kk < K; kk++) {
                        const double t = (double)(trans_a ? a[kk * LDA + i] : a[i * LDA + kk]) * b[kk * LDB + j];
                        want += t, mag += fabs(t);
                    }
                    bad += !(fabs(got - want) <= gamma * mag);
                }
            TU_CHECK(bad == 0, "%s gemm_f32 M%d N%d K%d trans_a %d accumulate %d: %d values wrong", isa, M, N, K,
                     trans_a, acc, bad);
        }
}

/* fma_chains: the flop count is 2 x PEAK_CHAINS x lanes per step for a
 * lane count an ISA can have, and the sum is lanes x the sum of the chains'
 * values, each fused (fmaf) or the scalar multiply-add, within the rounding
 * of summing those PEAK_CHAINS x lanes values. */
static void check_fma_chains(const peak_kernels *k, const char *isa)
{
    static const long iters[] = {1, 7, 1000};
    for (size_t t = 0; t < sizeof iters / sizeof iters[0]; t++) {
        double fused = 0.0, plain = 0.0;
        for (int c = 0; c < PEAK_CHAINS; c++) {
            float f = PEAK_START(c), p = PEAK_START(c);
            for (long i = 0; i < iters[t]; i++) {
                f = fmaf(f, PEAK_B, PEAK_C);
                const volatile float product = p * PEAK_B; /* rounded on its own */
                p = product + PEAK_C;
            }
            fused += f, plain += p;
        }
        double flops = -1.0;
        const float got = k->fma_chains(iters[t], &flops);
        const double lanes = flops / (2.0 * PEAK_CHAINS * (double)iters[t]);
        TU_CHECK(lanes == 1 || lanes == 4 || lanes == 8 || lanes == 16, "%s fma_chains(%ld): %g flops, %g lanes",
                 isa, iters[t], flops, lanes);
        const double tol = 8 * 0x1p-24 * PEAK_CHAINS * lanes;
        const bool near_fused = fabs(got - lanes * fused) <= tol * lanes * fused;
        const bool near_plain = fabs(got - lanes * plain) <= tol * lanes * plain;
        TU_CHECK(near_fused || near_plain, "%s fma_chains(%ld): sum %.9g, %g lanes of %.9g (fused) or %.9g", isa,
                 iters[t], got, lanes, fused, plain);
    }
}

static void run_pool(const cpu_kernel_set *k, const char *isa) { check_group_pool(&k->kp, isa); }
static void run_peak(const cpu_kernel_set *k, const char *isa) { check_fma_chains(&k->peak, isa); }
static void run_golden(const cpu_kernel_set *k, const char *isa) { check_golden_blocks(&k->golden, isa); }
static void run_gemm(const cpu_kernel_set *k, const char *isa) { check_gemm(&k->gemm, isa); }
static void run_ar(const cpu_kernel_set *k, const char *isa) { check_ar_rows(&k->ar, isa); }
static void run_fia(const cpu_kernel_set *k, const char *isa) { check_fia_rows(&k->fia, isa); }

/* Each check covers the kernels it names (space-separated, "table.name"). */
static const struct {
    const char *kernels;
    group_check run;
} CHECKS[] = {
    {"fa.to_bf16 fa.round_bf16", run_bf16},
    {"fa.f16_to_f32 fa.f32_to_f16", run_f16},
    {"fa.philox_bytes fa.philox_blocks", run_philox},
    {"fa.fp8_round fa.abs_max", run_fp8},
    {"fa.scale2", run_scale2},
    {"fa.apply_keep", run_keep},
    {"fa.softmax_fwd fa.softmax_bwd", run_softmax},
    {"fa.scale_rows fa.add_bias fa.add_alibi", run_scores},
    {"fa.transpose_scaled", run_transpose},
    {"fa.softcap fa.softcap_grad", run_softcap},
    {"kp.group_pool", run_pool},
    {"ar.dots ar.dots_f64 ar.accumulate ar.store_div ar.dots_split ar.accumulate_split "
     "ar.store_div_split ar.grad_row_split ar.grad_row",
     run_ar},
    {"fia.dot_rows fia.axpy_rows", run_fia},
    {"gemm.f32", run_gemm},
    {"peak.fma_chains", run_peak},
    {"golden.ref_dot golden.ref_dot_block golden.ref_gemm_acc", run_golden},
};
enum { NCHECKS = sizeof CHECKS / sizeof CHECKS[0] };

static bool names(const char *list, const cpu_kernel_entry *e)
{
    char want[64];
    snprintf(want, sizeof want, "%s.%s", e->table, e->name);
    const size_t n = strlen(want);
    for (const char *p = strstr(list, want); p; p = strstr(p + 1, want))
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
    return false;
}

/* ---- the checks can fail: each kernel wrong in one output ---- */

static const cpu_kernel_set *P = &cpu_kernels_portable;
static float up(float x) { return nextafterf(x, INFINITY); }
static void flip(void *out) { ((unsigned char *)out)[1] ^= 0x40; } /* a high bit of element 0 in any dtype */

static void bad_softmax_fwd(float *s, int rows, int cols, int valid, float scale, float *m, float *l, float *alpha)
{
    P->fa.softmax_fwd(s, rows, cols, valid, scale, m, l, alpha);
    s[0] *= 1.0f + 0x1p-18f;
}
static void bad_softmax_bwd(float *s, float *dp, int rows, int cols, int valid, float scale, const float *m,
                            const float *l, const float *drow)
{
    P->fa.softmax_bwd(s, dp, rows, cols, valid, scale, m, l, drow);
    dp[0] *= 1.0f + 0x1p-16f;
}
static void bad_to_bf16(const float *src, int rows, int cols, uint16_t *dst, int ld, bool vnni)
{
    P->fa.to_bf16(src, rows, cols, dst, ld, vnni);
    dst[0] ^= 1;
}
static void bad_round_bf16(float *x, int n)
{
    P->fa.round_bf16(x, n);
    uint32_t u;
    memcpy(&u, x, 4), u += 0x10000, memcpy(x, &u, 4);
}
static void bad_f16_to_f32(const uint16_t *src, int n, float *dst)
{
    P->fa.f16_to_f32(src, n, dst);
    dst[n - 1] = up(dst[n - 1]);
}
static void bad_f32_to_f16(const float *src, int n, uint16_t *dst)
{
    P->fa.f32_to_f16(src, n, dst);
    dst[n - 1] ^= 1;
}
static void bad_scale_rows(float *o, int rows, int cols, const float *alpha)
{
    P->fa.scale_rows(o, rows, cols, alpha);
    o[0] = up(o[0]);
}
static void bad_transpose_scaled(const float *src, int ld_src, int rows, int cols, float scale, float *dst, int ld_dst)
{
    P->fa.transpose_scaled(src, ld_src, rows, cols, scale, dst, ld_dst);
    dst[(size_t)(rows - 1) * ld_dst + cols - 1] = up(dst[(size_t)(rows - 1) * ld_dst + cols - 1]);
}
static void bad_add_bias(float *s, int rows, int cols, int ld_s, float scale, const void *bias, attnops_dtype dt,
                         int64_t ld_b, bool add_then_scale)
{
    P->fa.add_bias(s, rows, cols, ld_s, scale, bias, dt, ld_b, add_then_scale);
    s[0] += 1e-4f * (fabsf(s[0]) + 1.0f);
}
static void bad_add_alibi(float *s, int rows, int cols, int ld_s, float scale, float slope, float d0, bool sq)
{
    P->fa.add_alibi(s, rows, cols, ld_s, scale, slope, d0, sq);
    s[0] += 1e-4f * (fabsf(s[0]) + 1.0f);
}
static void bad_philox_bytes(const ao_philox *g, uint64_t first, size_t count, uint8_t *out)
{
    P->fa.philox_bytes(g, first, count, out);
    out[count - 1] ^= 1;
}
static void bad_philox_blocks(const ao_philox *g, const uint64_t *blocks, int n, uint8_t *out)
{
    P->fa.philox_blocks(g, blocks, n, out);
    out[0] ^= 1;
}
static void bad_fp8_round(float *x, int n, float scale, const ao_f8_format *f)
{
    P->fa.fp8_round(x, n, scale, f);
    if (n > 0) x[0] = up(x[0]);
}
static float bad_abs_max(const float *x, int n) { return up(P->fa.abs_max(x, n)); }
static void bad_scale2(float *y, const float *x, int n, float a, float b, bool acc)
{
    P->fa.scale2(y, x, n, a, b, acc);
    y[0] = up(y[0]);
}
static void bad_apply_keep(float *x, const uint8_t *keep, int rows, int cols, int ld, float scale)
{
    P->fa.apply_keep(x, keep, rows, cols, ld, scale);
    x[0] = up(x[0]);
}
static void bad_softcap(float *s, int rows, int cols, int ld, float in_scale, float out_scale, float *dtanh)
{
    P->fa.softcap(s, rows, cols, ld, in_scale, out_scale, dtanh);
    s[0] = up(s[0]);
}
static void bad_softcap_grad(float *ds, const float *dtanh, int rows, int cols, int ld)
{
    P->fa.softcap_grad(ds, dtanh, rows, cols, ld);
    ds[0] = up(ds[0]);
}
static void bad_group_pool(const float *const *key, const float *const *gate, const float *ape, int R, int D, bool bf16,
                           float *out)
{
    P->kp.group_pool(key, gate, ape, R, D, bf16, out);
    out[0] += 1e-3f * (fabsf(out[0]) + 1.0f);
}
static void bad_ar_dots(const void *v, attnops_dtype dt, int D, const float *x, const float *y, float *vx, float *vy,
                        const void *next)
{
    P->ar.dots(v, dt, D, x, y, vx, vy, next);
    *vy += 1e-2f * (fabsf(*vy) + 1.0f);
}
static void bad_ar_dots_f64(const float *v, int D, const float *x, const float *y, float *vx, float *vy,
                            const void *next)
{
    P->ar.dots_f64(v, D, x, y, vx, vy, next);
    *vy *= 1.0f + 0x1p-20f;
}
static void bad_ar_accumulate(float *acc, float c, float e, const void *v, attnops_dtype dt, int D)
{
    P->ar.accumulate(acc, c, e, v, dt, D);
    acc[0] += 1e-2f * (fabsf(acc[0]) + 1.0f);
}
static void bad_ar_store_div(void *out, attnops_dtype dt, const float *src, float div, int D)
{
    P->ar.store_div(out, dt, src, div, D);
    flip(out);
}
static void bad_ar_dots_split(const uint16_t *v, int D, const float *xs, const float *ys, float *vx, float *vy,
                              const void *next)
{
    P->ar.dots_split(v, D, xs, ys, vx, vy, next);
    *vy += 1e-2f * (fabsf(*vy) + 1.0f);
}
static void bad_ar_accumulate_split(float *accs, float c, float e, const uint16_t *v, int D)
{
    P->ar.accumulate_split(accs, c, e, v, D);
    accs[0] += 1e-2f * (fabsf(accs[0]) + 1.0f);
}
static void bad_ar_store_div_split(void *out, attnops_dtype dt, const float *srcs, float div, int D)
{
    P->ar.store_div_split(out, dt, srcs, div, D);
    flip(out);
}
static void bad_ar_grad_row_split(const void *v, attnops_dtype dt, int D, const float *gs, const float *ys, float a,
                                  float b, float e, void *out, attnops_dtype out_dt, float *us, bool stream)
{
    P->ar.grad_row_split(v, dt, D, gs, ys, a, b, e, out, out_dt, us, stream);
    flip(out);
}
static void bad_ar_grad_row(const void *v, attnops_dtype dt, int D, const float *g, const float *y, float a, float b,
                            float e, void *out, attnops_dtype out_dt, float *u, bool stream)
{
    P->ar.grad_row(v, dt, D, g, y, a, b, e, out, out_dt, u, stream);
    flip(out);
}

static void bad_dot_rows(const float *q, int rows, int ld_q, const void *const *k, attnops_dtype dt, int D, int cols,
                         float *s, int ld_s, bool accumulate, const void *const *ahead, int ahead_bytes)
{
    P->fia.dot_rows(q, rows, ld_q, k, dt, D, cols, s, ld_s, accumulate, ahead, ahead_bytes);
    s[0] += 1e-4f * (fabsf(s[0]) + 1.0f);
}
static void bad_axpy_rows(const float *p, int rows, int ld_p, const void *const *v, attnops_dtype dt, int D, int cols,
                          float *o, int ld_o, bool p_bf16, const void *const *ahead, int ahead_bytes)
{
    P->fia.axpy_rows(p, rows, ld_p, v, dt, D, cols, o, ld_o, p_bf16, ahead, ahead_bytes);
    o[0] += 1e-4f * (fabsf(o[0]) + 1.0f);
}

static void bad_gemm_f32(bool trans_a, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                         float *C, int ldc, bool accumulate)
{
    P->gemm.f32(trans_a, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    C[0] += 1e-4f * (fabsf(C[0]) + 1.0f);
}

static float bad_fma_chains(long iters, double *flops) { return P->peak.fma_chains(iters, flops) * 1.001f; }

static double bad_ref_dot(const double *a, const double *b, int64_t n)
{
    return nextafter(P->golden.ref_dot(a, b, n), INFINITY);
}

static void bad_ref_dot_block(int64_t M, int64_t N, int64_t K, const double *a, int64_t lda, const double *b,
                              int64_t ldb, double *out, int64_t ldo)
{
    P->golden.ref_dot_block(M, N, K, a, lda, b, ldb, out, ldo);
    out[0] = nextafter(out[0], INFINITY);
}

static void bad_ref_gemm_acc(int64_t M, int64_t N, int64_t K, const double *a, int64_t am, int64_t ak,
                             const double *b, int64_t ldb, double *c, int64_t ldc)
{
    P->golden.ref_gemm_acc(M, N, K, a, am, ak, b, ldb, c, ldc);
    c[0] = nextafter(c[0], INFINITY);
}

static const cpu_kernel_set BROKEN = {
    .fa = {.softmax_fwd = bad_softmax_fwd, .softmax_bwd = bad_softmax_bwd, .to_bf16 = bad_to_bf16,
           .round_bf16 = bad_round_bf16, .f16_to_f32 = bad_f16_to_f32, .f32_to_f16 = bad_f32_to_f16,
           .scale_rows = bad_scale_rows, .transpose_scaled = bad_transpose_scaled, .add_bias = bad_add_bias,
           .add_alibi = bad_add_alibi, .philox_bytes = bad_philox_bytes, .philox_blocks = bad_philox_blocks,
           .fp8_round = bad_fp8_round, .abs_max = bad_abs_max, .scale2 = bad_scale2, .apply_keep = bad_apply_keep,
           .softcap = bad_softcap, .softcap_grad = bad_softcap_grad},
    .kp = {.group_pool = bad_group_pool},
    .ar = {.dots = bad_ar_dots, .dots_f64 = bad_ar_dots_f64, .accumulate = bad_ar_accumulate,
           .store_div = bad_ar_store_div, .dots_split = bad_ar_dots_split,
           .accumulate_split = bad_ar_accumulate_split, .store_div_split = bad_ar_store_div_split,
           .grad_row_split = bad_ar_grad_row_split, .grad_row = bad_ar_grad_row},
    .fia = {.dot_rows = bad_dot_rows, .axpy_rows = bad_axpy_rows},
    .gemm = {.f32 = bad_gemm_f32},
    .peak = {.fma_chains = bad_fma_chains},
    .golden = {.ref_dot = bad_ref_dot, .ref_dot_block = bad_ref_dot_block, .ref_gemm_acc = bad_ref_gemm_acc},
};

/* Each kernel alone replaced by its broken form must fail its check (the
 * checks' own FAIL lines are silenced; a check that passes is reported). */
static bool self_test(int ncheck_of[])
{
    fflush(stderr);
    const int saved_err = dup(2), devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);
    int missed = 0;
    const char *missed_name[64];
    for (int e = 0; e < cpu_kernel_entry_count; e++) {
        const cpu_kernel_entry *ent = &cpu_kernel_entries[e];
        cpu_kernel_set k = cpu_kernels_portable;
        void (*bad)(void) = cpu_kernel_at(&BROKEN, ent);
        memcpy((char *)&k + ent->offset, &bad, sizeof bad);
        const int before = tu_failures;
        CHECKS[ncheck_of[e]].run(&k, "broken");
        if (tu_failures == before && missed < 64) missed_name[missed++] = ent->name;
        tu_failures = before;
    }
    fflush(stderr);
    if (saved_err >= 0) dup2(saved_err, 2), close(saved_err);
    if (devnull >= 0) close(devnull);
    for (int i = 0; i < missed; i++) TU_CHECK(false, "self-test: a broken %s passes its check", missed_name[i]);
    printf("self-test: %d of %d broken kernels caught by their checks\n", cpu_kernel_entry_count - missed,
           cpu_kernel_entry_count);
    return missed == 0;
}

int main(void)
{
    int passed = 0, before = tu_failures;
    int check_of[sizeof(cpu_kernel_set) / sizeof(void (*)(void))] = {0};
    /* the inventory itself: every kernel checked once, the portable set complete */
    for (int e = 0; e < cpu_kernel_entry_count; e++) {
        const cpu_kernel_entry *ent = &cpu_kernel_entries[e];
        int covered = 0;
        for (int c = 0; c < NCHECKS; c++)
            if (names(CHECKS[c].kernels, ent)) covered++, check_of[e] = c;
        TU_CHECK(covered == 1, "kernel %s.%s is covered by %d checks (want 1)", ent->table, ent->name, covered);
        TU_CHECK(cpu_kernel_at(&cpu_kernels_portable, ent) != NULL, "the portable set lacks %s.%s", ent->table,
                 ent->name);
    }
    /* the public list of ISAs (attnops list --support) is the table's */
    bool runs = false;
    for (int isa = 0; isa < cpu_isa_count(); isa++)
        TU_CHECK(attnops_cpu_isa_at(isa, &runs) && !strcmp(attnops_cpu_isa_at(isa, NULL), cpu_isa_name(isa)) &&
                     runs == (cpu_kernels_of(isa) != NULL),
                 "attnops_cpu_isa_at(%d) is not isa %s as the table has it", isa, cpu_isa_name(isa));
    TU_CHECK(!attnops_cpu_isa_at(cpu_isa_count(), &runs) && !runs && !attnops_cpu_isa_at(-1, NULL),
             "attnops_cpu_isa_at past the last ISA is not NULL");
    passed += tu_failures == before;
    printf("inventory: %d kernels in %d checks; ISA in use: %s\n", cpu_kernel_entry_count, NCHECKS, attnops_cpu_isa());

    for (int isa = 0; isa < cpu_isa_count(); isa++) {
        const char *name = cpu_isa_name(isa);
        const cpu_kernel_set *k = cpu_kernels_of(isa);
        for (int c = 0; c < NCHECKS; c++) {
            if (!k) {
                for (int e = 0; e < cpu_kernel_entry_count; e++)
                    if (names(CHECKS[c].kernels, &cpu_kernel_entries[e]))
                        printf("SKIPPED %s.%s %s: CPU lacks it\n", cpu_kernel_entries[e].table,
                               cpu_kernel_entries[e].name, name);
                continue;
            }
            before = tu_failures;
            CHECKS[c].run(k, name);
            const bool ok = tu_failures == before;
            passed += ok;
            for (int e = 0; e < cpu_kernel_entry_count; e++) {
                const cpu_kernel_entry *ent = &cpu_kernel_entries[e];
                if (!names(CHECKS[c].kernels, ent)) continue;
                const int from = cpu_kernel_provider(isa, ent);
                if (from == isa) printf("%s %s.%s %s\n", ok ? "ok  " : "FAIL", ent->table, ent->name, name);
                else printf("%s %s.%s %s: inherits %s's\n", ok ? "ok  " : "FAIL", ent->table, ent->name, name,
                            cpu_isa_name(from));
            }
        }
    }
    if (tu_failures == 0) passed += self_test(check_of); /* only meaningful once the inventory is sound */
    return tu_finish("test_kernel_inventory", passed);
}
