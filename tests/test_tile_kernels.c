/* The element-wise tile kernels of every ISA against their specification:
 * bf16 rounding bit for bit equal to attnops_f32_to_bf16 over a sweep of
 * float bit patterns (NaN, inf, subnormals included), in the plain and the
 * VNNI layouts; the dropout stream bit for bit equal to ao_philox_bytes
 * (unaligned starts, odd lengths, counter carries); the AVX-512 table only
 * where the CPU has it; the f8 rounding and abs max of the FP8 backward
 * against the exact conversions (a float sweep, every f8 rounding midpoint
 * +-2 ulps, infinities, NaN). */
#include <math.h>
#include <string.h>

#include "cpu/isa.h"
#include "fa/fa_fp8.h"
#include "testutil.h"

static void check_to_bf16(const fa_tile_kernels *k, const char *name)
{
    enum { N = 4096 };
    static float in[N];
    static uint16_t plain[N], vnni[N];
    long bad = 0;
    for (uint64_t base = 0; base < (UINT64_C(1) << 32) && bad < 5; base += (uint64_t)N * 257) {
        for (int i = 0; i < N; i++) {
            uint32_t u = (uint32_t)(base + (uint64_t)i * 257);
            memcpy(&in[i], &u, 4);
        }
        k->to_bf16(in, 1, N, plain, N, false);
        k->to_bf16(in, 64, 64, vnni, 64, true); /* rows r, r+1 interleaved */
        for (int i = 0; i < N; i++) {
            const int r = i / 64, c = i % 64;
            const uint16_t want = attnops_f32_to_bf16(in[i]);
            const uint16_t got_v = vnni[((r / 2) * 64 + c) * 2 + (r & 1)];
            if (plain[i] != want || got_v != want) {
                bad++;
                TU_CHECK(false, "%s to_bf16(0x%08x) = 0x%04x / vnni 0x%04x, want 0x%04x", name,
                         (unsigned)(base + (uint64_t)i * 257), plain[i], got_v, want);
            }
        }
    }
}

static void check_philox(const fa_tile_kernels *k, const char *name)
{
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
static void check_fp8(const fa_tile_kernels *k, const char *isa, attnops_dtype fp8)
{
    enum { N = 4096 };
    static float in[N], out[N];
    const fa_fp8_format f = fa_fp8_format_of(fp8);
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
static void check_scale2(const fa_tile_kernels *k, const char *isa)
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
static void check_apply_keep(const fa_tile_kernels *k, const char *isa)
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
static void check_group_pool(const fa_tile_kernels *k, const char *isa)
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

int main(void)
{
    int passed = 0, before = tu_failures;
    check_to_bf16(&fa_tile_kernels_portable, "portable");
    check_fp8(&fa_tile_kernels_portable, "portable", ATTNOPS_DTYPE_F8_E4M3FN);
    check_fp8(&fa_tile_kernels_portable, "portable", ATTNOPS_DTYPE_F8_E5M2);
    check_scale2(&fa_tile_kernels_portable, "portable");
    check_apply_keep(&fa_tile_kernels_portable, "portable");
    check_philox(&fa_tile_kernels_portable, "portable");
    check_group_pool(&fa_tile_kernels_portable, "portable");
    passed += tu_failures == before;
    if (cpu_isa_get() == CPU_ISA_AVX512) {
        before = tu_failures;
        check_to_bf16(&fa_tile_kernels_avx512, "avx512");
        check_philox(&fa_tile_kernels_avx512, "avx512");
        check_fp8(&fa_tile_kernels_avx512, "avx512", ATTNOPS_DTYPE_F8_E4M3FN);
        check_fp8(&fa_tile_kernels_avx512, "avx512", ATTNOPS_DTYPE_F8_E5M2);
        check_scale2(&fa_tile_kernels_avx512, "avx512");
        check_apply_keep(&fa_tile_kernels_avx512, "avx512");
        check_group_pool(&fa_tile_kernels_avx512, "avx512");
        passed += tu_failures == before;
    }
    return tu_finish("test_tile_kernels", passed);
}
