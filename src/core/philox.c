#include "core/philox.h"

#include <string.h>

enum { PHILOX_ROUNDS = 7 };
#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9)
#define PHILOX_W1 UINT32_C(0xBB67AE85)

ao_philox ao_philox_make(uint64_t seed, uint64_t offset)
{
    const uint64_t c0 = offset / 16 + (offset % 16 != 0);
    return (ao_philox){{(uint32_t)seed, (uint32_t)(seed >> 32)}, {(uint32_t)c0, (uint32_t)(c0 >> 32), 0, 0}};
}

/* `rounds` Philox rounds of counter base + n (the carry running through all
 * four words) under key. */
static void philox(const uint32_t key[2], const uint32_t base[4], uint64_t n, int rounds, uint32_t out[4])
{
    uint32_t c[4];
    uint64_t sum = (uint64_t)base[0] + (uint32_t)n;
    c[0] = (uint32_t)sum;
    sum = (uint64_t)base[1] + (uint32_t)(n >> 32) + (sum >> 32);
    c[1] = (uint32_t)sum;
    sum = (uint64_t)base[2] + (sum >> 32);
    c[2] = (uint32_t)sum;
    c[3] = base[3] + (uint32_t)(sum >> 32);
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < rounds; r++) {
        const uint64_t p0 = (uint64_t)PHILOX_M0 * c[0], p1 = (uint64_t)PHILOX_M1 * c[2];
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[0] = n0, c[1] = (uint32_t)p1, c[2] = n2, c[3] = (uint32_t)p0;
        k0 += PHILOX_W0, k1 += PHILOX_W1;
    }
    memcpy(out, c, sizeof c);
}

void ao_philox_block(const ao_philox *g, uint64_t n, uint32_t out[4]) { philox(g->key, g->base, n, PHILOX_ROUNDS, out); }

void ao_philox10_block(const uint32_t key[2], const uint32_t counter[4], uint64_t n, uint32_t out[4])
{
    philox(key, counter, n, 10, out);
}

void ao_philox_bytes(const ao_philox *g, uint64_t first, size_t count, uint8_t *out)
{
    uint64_t e = first;
    while (count > 0) {
        uint32_t w[4];
        ao_philox_block(g, e / 16, w);
        uint8_t bytes[16];
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 4; k++) bytes[4 * i + k] = (uint8_t)(w[i] >> (8 * k)); /* little-endian words */
        const size_t from = (size_t)(e % 16), take = 16 - from < count ? 16 - from : count;
        memcpy(out, bytes + from, take);
        out += take, e += take, count -= take;
    }
}
