/* The dropout generator against known-answer vectors written by an
 * independent implementation of spec 5.1 (tests/tools/philox_kat.py).
 * argv[1]: the vector file. */
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "testutil.h"

int main(int argc, char **argv)
{
    FILE *f = argc > 1 ? fopen(argv[1], "r") : NULL;
    if (!f) {
        fprintf(stderr, "test_philox: cannot open the vector file '%s'\n", argc > 1 ? argv[1] : "(none)");
        return 2;
    }
    int passed = 0, vectors = 0;
    unsigned long long seed, offset, first, count;
    char hex[4096];
    while (fscanf(f, "%llu %llu %llu %llu %4095s", &seed, &offset, &first, &count, hex) == 5) {
        vectors++;
        uint8_t got[2048], want[2048];
        for (unsigned long long i = 0; i < count; i++) {
            unsigned v;
            sscanf(hex + 2 * i, "%2x", &v);
            want[i] = (uint8_t)v;
        }
        const ao_philox g = ao_philox_make(seed, offset);
        ao_philox_bytes(&g, first, count, got);
        const int before = tu_failures;
        for (unsigned long long i = 0; i < count; i++)
            if (got[i] != want[i]) {
                TU_CHECK(false, "seed %llu offset %llu element %llu: 0x%02x, want 0x%02x", seed, offset, first + i,
                         got[i], want[i]);
                break;
            }
        passed += tu_failures == before;
        /* the check bites: a generator off by one block disagrees */
        ao_philox_bytes(&g, first + 16, count, got);
        TU_CHECK(memcmp(got, want, count) != 0, "a shifted stream matched vector %d", vectors);
    }
    fclose(f);
    TU_CHECK(vectors >= 6, "only %d vectors read", vectors);
    return tu_finish("test_philox", passed);
}
