/* The element-wise tile kernels of every ISA against their specification:
 * bf16 rounding bit for bit equal to attnops_f32_to_bf16 over a sweep of
 * float bit patterns (NaN, inf, subnormals included), in the plain and the
 * VNNI layouts; the dropout stream bit for bit equal to ao_philox_bytes
 * (unaligned starts, odd lengths, counter carries); the AVX-512 table only
 * where the CPU has it.  Also the fast kernel's float -> f8 rounding
 * (fa_fp8_round_f32) against the exact conversions over a float sweep and
 * every f8 rounding midpoint +-2 ulps. */
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

/* fa_fp8_round_f32(x) must equal decode(encode(x)) of the exact
 * conversion, for every finite x and the overflow / NaN cases. */
static void check_fp8_round(attnops_dtype fp8)
{
    const fa_fp8_format f = fa_fp8_format_of(fp8);
    const bool e4m3 = fp8 == ATTNOPS_DTYPE_F8_E4M3FN;
    long bad = 0;
    const char *name = attnops_dtype_name(fp8);
#define CHECK_ONE(x)                                                                                               \
    do {                                                                                                           \
        const float x_ = (x), got = fa_fp8_round_f32(x_, &f);                                                      \
        const uint8_t bits = e4m3 ? attnops_f32_to_f8_e4m3fn(x_) : attnops_f32_to_f8_e5m2(x_);                     \
        const float want = e4m3 ? attnops_f8_e4m3fn_to_f32(bits) : attnops_f8_e5m2_to_f32(bits);                   \
        if (!(got == want && signbit(got) == signbit(want)) && !(isnan(got) && isnan(want)) && bad++ < 5)           \
            TU_CHECK(false, "%s round(%a) = %a, want %a", name, (double)x_, (double)got, (double)want);           \
    } while (0)
    for (uint64_t u = 0; u < (UINT64_C(1) << 32); u += 4099) {
        float x;
        const uint32_t w = (uint32_t)u;
        memcpy(&x, &w, 4);
        CHECK_ONE(x);
    }
    for (int code = 0; code < 256; code++) { /* midpoints between neighbours, and their float neighbours */
        const float a = e4m3 ? attnops_f8_e4m3fn_to_f32((uint8_t)code) : attnops_f8_e5m2_to_f32((uint8_t)code);
        const float b = e4m3 ? attnops_f8_e4m3fn_to_f32((uint8_t)(code + 1)) : attnops_f8_e5m2_to_f32((uint8_t)(code + 1));
        if (!isfinite(a) || !isfinite(b) || code == 127 || code == 255) continue;
        float mid = (a + b) / 2;
        for (int k = 0; k < 2; k++) mid = nextafterf(mid, -INFINITY);
        for (int k = 0; k < 5; k++, mid = nextafterf(mid, INFINITY)) CHECK_ONE(mid);
    }
    CHECK_ONE(INFINITY);
    CHECK_ONE(-INFINITY);
    CHECK_ONE(NAN);
#undef CHECK_ONE
}

int main(void)
{
    int passed = 0, before = tu_failures;
    check_fp8_round(ATTNOPS_DTYPE_F8_E4M3FN);
    check_fp8_round(ATTNOPS_DTYPE_F8_E5M2);
    passed += tu_failures == before;
    before = tu_failures;
    check_to_bf16(&fa_tile_kernels_portable, "portable");
    check_philox(&fa_tile_kernels_portable, "portable");
    passed += tu_failures == before;
    if (cpu_isa_get() == CPU_ISA_AVX512) {
        before = tu_failures;
        check_to_bf16(&fa_tile_kernels_avx512, "avx512");
        check_philox(&fa_tile_kernels_avx512, "avx512");
        passed += tu_failures == before;
    }
    return tu_finish("test_tile_kernels", passed);
}
