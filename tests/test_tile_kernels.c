/* The element-wise tile kernels of every ISA against their specification:
 * bf16 rounding bit for bit equal to attnops_f32_to_bf16 over a sweep of
 * float bit patterns (NaN, inf, subnormals included), in the plain and the
 * VNNI layouts; the dropout stream bit for bit equal to ao_philox_bytes
 * (unaligned starts, odd lengths, counter carries); the AVX-512 table only
 * where the CPU has it. */
#include <string.h>

#include "cpu/isa.h"
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

int main(void)
{
    int passed = 0, before = tu_failures;
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
