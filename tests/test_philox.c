/* The dropout generator against known-answer vectors written by an
 * independent implementation of spec 5.1 (tests/tools/philox_kat.py); the
 * element order of spec 5.2/5.3 at random positions, padded and TND; the
 * kept fraction within binomial bounds.  argv[1]: the vector file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "fa/fa_dropout.h"
#include "fa_case.h"
#include "testutil.h"
#include "suite.h"

/* fa_dropout_row against the stream byte at the spec's index, computed here
 * from the formula: padded ((b*N1 + h)*S1 + i)*S2a + j; TND
 * N1*qk[b] + (h*S1_b + i)*S2a_b + j. */
static bool check_order(const char *spec)
{
    const int before = tu_failures;
    fa_case_shape shape;
    TU_CHECK(fa_case_parse(spec, &shape), "bad spec %s", spec);
    fa_case c;
    fa_case_init(&c, &shape, 1);
    fa_problem p;
    TU_CHECK(fa_validate_fwd(&c.fwd, "FlashAttentionScore", &p) == ATTNOPS_SUCCESS, "%s: %s", spec,
             attnops_last_error());
    const fa_dropout d = fa_dropout_make(p.seed, p.offset, p.keep_prob);
    tu_rng r = tu_rng_make(77);
    for (int t = 0; t < 2000; t++) {
        const int64_t b = (int64_t)(tu_next(&r) % (uint64_t)p.B), h = (int64_t)(tu_next(&r) % (uint64_t)p.N1);
        const int64_t s1 = fa_q_len(&p, b), s2 = fa_kv_len(&p, b);
        if (s1 == 0 || s2 == 0) continue;
        const int64_t i = (int64_t)(tu_next(&r) % (uint64_t)s1), j = (int64_t)(tu_next(&r) % (uint64_t)s2);
        uint64_t idx;
        if (!p.varlen) {
            idx = (uint64_t)(((b * p.N1 + h) * p.S1 + i) * ((p.S2 + 15) / 16 * 16) + j);
        } else {
            uint64_t qk = 0;
            for (int64_t k = 0; k < b; k++) qk += (uint64_t)(fa_q_len(&p, k) * ((fa_kv_len(&p, k) + 15) / 16 * 16));
            idx = (uint64_t)p.N1 * qk + (uint64_t)((h * s1 + i) * ((s2 + 15) / 16 * 16) + j);
        }
        uint8_t byte, keep;
        ao_philox_bytes(&d.gen, idx, 1, &byte);
        const fa_dropout_batch at = fa_dropout_batch_of(&p, &d, b);
        fa_dropout_row(&d, fa_dropout_row_start(&at, h, i), j, 1, &keep);
        if (keep != (byte <= d.threshold)) {
            TU_CHECK(false, "%s: element (%lld,%lld,%lld,%lld) keep %d, stream byte %u at %llu", spec, (long long)b,
                     (long long)h, (long long)i, (long long)j, keep, byte, (unsigned long long)idx);
            break;
        }
    }
    fa_case_free(&c);
    return tu_failures == before;
}

/* The kept fraction of 2^20 elements is P(keep) = (threshold + 1) / 256 within 5 sigma. */
static bool check_fraction(double keep_prob)
{
    const fa_dropout d = fa_dropout_make(2, 0, keep_prob);
    enum { N = 1 << 20 };
    static uint8_t keep[N];
    fa_dropout_row(&d, 0, 0, N, keep);
    double kept = 0;
    for (int i = 0; i < N; i++) kept += keep[i];
    const double pk = (d.threshold + 1) / 256.0, sigma = sqrt(pk * (1 - pk) / N), frac = kept / N;
    TU_CHECK(fabs(frac - pk) < 5 * sigma, "keep_prob %g: kept %.5f, expected %.5f +- %.5f", keep_prob, frac, pk,
             5 * sigma);
    TU_CHECK(d.threshold == (uint8_t)floorf((float)keep_prob * 255.0f), "threshold %u", d.threshold);
    return fabs(frac - pk) < 5 * sigma;
}

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
    passed += check_order("B=2,N1=3,N2=1,S1=5,S2=37,D=8,Dv=8,layout=BNSD,keep=0.5,seed=11,offset=20");
    passed += check_order("N1=3,N2=3,D=8,Dv=8,layout=TND,seqs=7:0:33:20,kvseqs=5:9:17:40,keep=0.5,seed=5,offset=3");
    passed += check_fraction(0.9) + check_fraction(0.5) + check_fraction(0.1);
    return tu_finish("test_philox", passed);
}
