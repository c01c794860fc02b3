/* The mask semantics, independent of the attention arithmetic:
 *   1. the library's predicate (fa_is_masked, fa_mask_row, the tile
 *      classification, fa_rows_attend) against masks built the way the
 *      golden builds them (triu/tril offsets, spec 3.2/3.3), for every mode,
 *      S1 < S2, S1 = S2, S1 > S2 and negative tokens where allowed, and per
 *      batch in TND (modes 7/8 with their band batch);
 *   2. mode 1 with an explicit mask equal to another mode's implicit mask
 *      gives bit-identical outputs (both implementations);
 *   3. fully masked rows: the sentinels (attention_out 0, softmax_max =
 *      -FLT_MAX, softmax_sum = FLT_MAX, zero dq) under the golden's
 *      conditions and inner_precise = 2, and uniform weights otherwise;
 *   4. the device's fallback: sparse_mode 5 with a prefix out of range is
 *      mode 1 over the same mask, with one warning per process. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fa/fa_mask.h"
#include "fa/fa_pse.h"
#include "fa_case.h"
#include "suite.h"

static int passed = 0;

/* Every (i, j), random tiles and every row range of one problem. */
static void check_predicate(const fa_case *c, const fa_problem *p, const char *desc)
{
    const fa_case_shape *s = &c->shape;
    const int before = tu_failures;
    const int64_t *prefix = c->prefix.view.data;
    uint8_t *row = malloc((size_t)s->S2 + 1);
    tu_rng r = tu_rng_make(c->seed);
    for (int64_t b = 0; b < s->B; b++) {
        const fa_band band = fa_band_of(p, b, s->S1, s->S2);
        for (int64_t h = 0; h < s->N1; h++)
            for (int64_t i = 0; i < s->S1; i++) {
                fa_mask_row(p, &band, b, h, i, 0, s->S2, row);
                for (int64_t j = 0; j < s->S2; j++) {
                    bool want = fa_case_golden_masked(s->sparse_mode, s->S1, s->S2, s->pre, s->next,
                                                      prefix ? prefix[b] : 0, i, j);
                    bool got = fa_is_masked(p, &band, b, h, i, j);
                    if (got != want || row[j] != got) {
                        TU_CHECK(false, "[%s] masked(b=%lld,h=%lld,i=%lld,j=%lld): library %d, row %d, golden %d", desc,
                                 (long long)b, (long long)h, (long long)i, (long long)j, got, row[j], want);
                        goto done;
                    }
                }
            }
        for (int t = 0; t < 200; t++) { /* random rectangles: classification agrees with the elements */
            int64_t i0 = (int64_t)(tu_next(&r) % (uint64_t)s->S1), j0 = (int64_t)(tu_next(&r) % (uint64_t)s->S2);
            int64_t i1 = i0 + 1 + (int64_t)(tu_next(&r) % (uint64_t)(s->S1 - i0));
            int64_t j1 = j0 + 1 + (int64_t)(tu_next(&r) % (uint64_t)(s->S2 - j0));
            int64_t n_masked = 0;
            for (int64_t i = i0; i < i1; i++)
                for (int64_t j = j0; j < j1; j++) n_masked += fa_is_masked(p, &band, b, 0, i, j);
            fa_tile_class want = n_masked == 0 ? FA_TILE_FULL : (n_masked == (i1 - i0) * (j1 - j0) ? FA_TILE_EMPTY
                                                                                                 : FA_TILE_PARTIAL);
            fa_tile_class got = fa_classify_tile(p, &band, b, 0, i0, i1, j0, j1);
            TU_CHECK(got == want, "[%s] tile [%lld,%lld)x[%lld,%lld): class %d, elements say %d", desc, (long long)i0,
                     (long long)i1, (long long)j0, (long long)j1, got, want);
            bool attend = true;
            for (int64_t i = i0; i < i1 && attend; i++) {
                bool any = false;
                for (int64_t j = 0; j < s->S2 && !any; j++) any = !fa_is_masked(p, &band, b, 0, i, j);
                attend = any;
            }
            TU_CHECK(fa_rows_attend(p, &band, b, 0, i0, i1, s->S2) == attend, "[%s] rows [%lld,%lld) attend: %d",
                     desc, (long long)i0, (long long)i1, attend);
        }
    }
done:
    free(row);
    passed += tu_failures == before;
}

/* Builds the case of `spec` and validates it into `p`; false (and a
 * failure) when it does not validate.  The case must be freed either way. */
static bool case_problem(const char *spec, uint64_t seed, fa_case *c, fa_problem *p)
{
    fa_case_shape s;
    TU_CHECK(fa_case_parse(spec, &s), "bad spec %s", spec);
    fa_case_init(c, &s, seed);
    attnops_status st = fa_validate_fwd(&c->fwd, "FlashAttentionScore", p);
    TU_CHECK(st == ATTNOPS_SUCCESS, "[%s] %s", spec, attnops_last_error());
    return st == ATTNOPS_SUCCESS;
}

/* TND: per batch, the golden rebuilds the mask with that batch's lengths;
 * modes 7/8 use the band formula (mode 4) for the band batch, mode 3 / 2 for
 * the others.  The band batch is the last (7) / first (8) with S1_b != 0. */
static void tnd_predicate_suite(void)
{
    const char *specs[] = {
        "N1=1,N2=1,D=8,Dv=8,layout=TND,seqs=30:0:45:20:0,kvseqs=40:10:45:35:6,mode=7,mask=compressed,pre=50,next=-5",
        "N1=1,N2=1,D=8,Dv=8,layout=TND,seqs=0:30:45:20,kvseqs=5:40:45:35,mode=8,mask=compressed,pre=50,next=12",
        "N1=1,N2=1,D=8,Dv=8,layout=TND,seqs=30:45:20,kvseqs=40:45:35,mode=3,mask=compressed",
        "N1=1,N2=1,D=8,Dv=8,layout=TND,seqs=30:45:20,kvseqs=40:45:35,mode=4,mask=compressed,pre=9,next=4",
        "N1=1,N2=1,D=8,Dv=8,layout=TND,seqs=30:45:20,kvseqs=40:45:35,mode=0,mask=ss,pre=9,next=4",
        "N1=1,N2=1,D=8,Dv=8,layout=TND,seqs=30:45:20,kvseqs=40:45:35,mode=6,mask=compressed",
    };
    const int64_t band_batch[] = {3, 1, -1, -1, -1, -1};
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        const int before = tu_failures;
        fa_case c;
        fa_problem p;
        const bool ok = case_problem(specs[k], 11 + k, &c, &p);
        const fa_case_shape s = c.shape;
        if (ok) {
            if (band_batch[k] >= 0)
                TU_CHECK(p.mask.rule.band_batch == band_batch[k], "[%s] band batch %lld, want %lld", specs[k],
                         (long long)p.mask.rule.band_batch, (long long)band_batch[k]);
            const int64_t *prefix = c.prefix.view.data;
            for (int64_t b = 0; b < p.B; b++) {
                const int64_t S1 = c.shape.seq_q[b], S2 = c.shape.seq_kv[b];
                int64_t mode = s.sparse_mode;
                if (mode == 7 || mode == 8) mode = b == band_batch[k] ? 4 : (mode == 7 ? 3 : 2);
                const fa_band band = fa_band_of(&p, b, S1, S2);
                for (int64_t i = 0; i < S1; i++)
                    for (int64_t j = 0; j < S2; j++) {
                        bool want = fa_case_golden_masked(mode, S1, S2, s.pre, s.next, prefix ? prefix[b] : 0, i, j);
                        if (fa_is_masked(&p, &band, b, 0, i, j) != want) {
                            TU_CHECK(false, "[%s] batch %lld (%lld x %lld): masked(%lld,%lld) != golden %d", specs[k],
                                     (long long)b, (long long)S1, (long long)S2, (long long)i, (long long)j, want);
                            i = S1;
                            break;
                        }
                    }
            }
        }
        fa_case_free(&c);
        passed += tu_failures == before;
    }
}

static void predicate_suite(void)
{
    const int64_t lens[][2] = {{40, 70}, {70, 70}, {70, 40}, {1, 9}, {9, 1}};
    const int64_t tokens[][2] = {{2147483647, 2147483647}, {10, 5}, {0, 0}, {-5, 20}, {25, -3}, {100, 100}};
    const fa_case_mask full_masks[] = {FA_CASE_MASK_SS, FA_CASE_MASK_B1SS, FA_CASE_MASK_BNSS};
    uint64_t seed = tu_suite_seed();
    for (int64_t mode = 0; mode <= 6; mode++) {
        if (mode == 1) continue; /* mode 1 has no golden formula: checked through equivalence below */
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
            for (size_t t = 0; t < sizeof tokens / sizeof tokens[0]; t++) {
                if (mode != 0 && mode != 4 && t > 0) continue; /* tokens only matter in modes 0 and 4 */
                fa_case_shape s = {.B = 2, .N1 = 2, .N2 = 1, .S1 = lens[l][0], .S2 = lens[l][1], .D = 8, .Dv = 8,
                                   .dtype = ATTNOPS_DTYPE_F32, .layout = ATTNOPS_LAYOUT_BNSD, .sparse_mode = mode,
                                   .pre = tokens[t][0], .next = tokens[t][1], .pse_type = 1};
                s.mask = mode == 0 ? full_masks[(l + t) % 3]
                                   : (mode == 5 ? full_masks[1 + (l + t) % 2] : FA_CASE_MASK_COMPRESSED);
                fa_case c;
                fa_case_init(&c, &s, seed + (uint64_t)(mode * 100 + l * 10 + t));
                char desc[384];
                fa_case_describe(&s, desc, sizeof desc);
                fa_problem p;
                attnops_status st = fa_validate_fwd(&c.fwd, "FlashAttentionScore", &p);
                if (st == ATTNOPS_ERR_PARAM_INVALID && (mode == 0 || mode == 4)) {
                    /* tokens the spec's checks refuse: that refusal is the behaviour under test elsewhere */
                } else {
                    TU_CHECK(st == ATTNOPS_SUCCESS, "[%s] %s", desc, attnops_last_error());
                    if (st == ATTNOPS_SUCCESS) check_predicate(&c, &p, desc);
                }
                fa_case_free(&c);
            }
    }
}

/* Runs forward + backward of `c` with one implementation. */
static void run(fa_case *c, attnops_impl impl)
{
    TU_CHECK(fa_case_forward(c, impl, 2, 0) == ATTNOPS_SUCCESS, "forward: %s", attnops_last_error());
    TU_CHECK(fa_case_backward(c, impl, 2, 0) == ATTNOPS_SUCCESS, "backward: %s", attnops_last_error());
}

static bool same_bits(const tu_tensor *a, const tu_tensor *b) { return !memcmp(a->view.data, b->view.data, a->data_bytes); }

/* Forward and backward of a and of e with one implementation; the name of the first output that differs
 * in a bit, or NULL when every output is the same. */
static const char *run_both_differ(fa_case *a, fa_case *e, attnops_impl impl)
{
    run(a, impl);
    run(e, impl);
    const struct { const char *name; tu_tensor *x, *y; } outs[] = {
        {"attention_out", &a->out, &e->out}, {"softmax_max", &a->smax, &e->smax}, {"softmax_sum", &a->ssum, &e->ssum},
        {"dq", &a->dq, &e->dq}, {"dk", &a->dk, &e->dk}, {"dv", &a->dv, &e->dv}};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        if (!same_bits(outs[i].x, outs[i].y)) return outs[i].name;
    return NULL;
}

/* Mode 1 fed the golden mask of `implicit`'s mode must reproduce it bit for bit. */
static void equivalence_suite(void)
{
    const char *specs[] = {
        "B=2,N1=2,N2=1,S1=150,S2=200,D=32,Dv=32,dtype=f32,layout=BSND,mode=2,mask=compressed",
        "B=1,N1=2,N2=2,S1=200,S2=150,D=32,Dv=32,dtype=bf16,layout=BNSD,mode=3,mask=compressed,inner_precise=2",
        "B=1,N1=2,N2=1,S1=130,S2=260,D=64,Dv=32,dtype=f16,layout=BSH,mode=4,mask=compressed,pre=40,next=-10",
        "B=2,N1=2,N2=2,S1=100,S2=100,D=16,Dv=16,dtype=f32,layout=SBH,mode=0,mask=b1ss,pre=30,next=20,inner_precise=2",
    };
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        fa_case_shape s;
        TU_CHECK(fa_case_parse(specs[k], &s), "bad spec %s", specs[k]);
        fa_case_shape explicit_shape = s;
        explicit_shape.sparse_mode = 1;
        explicit_shape.mask = FA_CASE_MASK_BNSS;
        const int before = tu_failures;
        for (int impl = ATTNOPS_IMPL_REFERENCE; impl <= ATTNOPS_IMPL_CPU; impl++) {
            fa_case a, e;
            fa_case_init(&a, &s, 7);
            fa_case_init(&e, &explicit_shape, 7);
            /* mode 1's element mask := the golden mask of the implicit mode */
            uint8_t *m = e.mask.view.data;
            const int64_t *st = e.mask.view.strides;
            for (int64_t b = 0; b < s.B; b++)
                for (int64_t h = 0; h < s.N1; h++)
                    for (int64_t i = 0; i < s.S1; i++)
                        for (int64_t j = 0; j < s.S2; j++)
                            m[b * st[0] + h * st[1] + i * st[2] + j * st[3]] =
                                fa_case_golden_masked(s.sparse_mode, s.S1, s.S2, s.pre, s.next, 0, i, j);
            const char *differs = run_both_differ(&a, &e, (attnops_impl)impl);
            TU_CHECK(!differs, "[%s, impl %d] mode 1 with the explicit mask differs in %s", specs[k], impl, differs);
            fa_case_free(&a);
            fa_case_free(&e);
        }
        passed += tu_failures == before;
    }
}

static int fallback_warnings;
static char fallback_sentence[512];

static void count_warning(const char *sentence, void *user)
{
    (void)user;
    fallback_warnings++;
    snprintf(fallback_sentence, sizeof fallback_sentence, "%s", sentence);
}

/* The device's fallback (docs/NUMERICS.md): sparse_mode 5 whose prefix CANN's
 * tiling cannot take runs as mode 1 over the same mask, bit for bit in both
 * implementations, and says so once per process however many calls fall back. */
static void prefix_fallback_suite(void)
{
    const char *spec = "B=2,N1=2,N2=1,S1=40,S2=70,D=16,Dv=16,dtype=f32,layout=BSND,mode=5,mask=b1ss";
    const int64_t bad_prefix[][2] = {{71, 40}, {30, 29}}; /* above S2; below S2 - S1 = 30 */
    attnops_set_warning_handler(count_warning, NULL);
    const int before = tu_failures;
    for (int impl = ATTNOPS_IMPL_REFERENCE; impl <= ATTNOPS_IMPL_CPU; impl++)
        for (int k = 0; k < 2; k++) {
            fa_case_shape s;
            TU_CHECK(fa_case_parse(spec, &s), "bad spec %s", spec);
            fa_case_shape dense_shape = s;
            dense_shape.sparse_mode = 1;
            fa_case a, e;
            fa_case_init(&a, &s, 21);
            fa_case_init(&e, &dense_shape, 21);
            memcpy(e.mask.view.data, a.mask.view.data, a.mask.data_bytes);
            int64_t *prefix = a.prefix.view.data;
            prefix[0] = bad_prefix[k][0], prefix[1] = bad_prefix[k][1];
            const char *differs = run_both_differ(&a, &e, (attnops_impl)impl);
            TU_CHECK(!differs, "[impl %d, prefix %lld %lld] mode 5's fallback differs from mode 1 in %s", impl,
                     (long long)prefix[0], (long long)prefix[1], differs);
            fa_case_free(&a);
            fa_case_free(&e);
        }
    TU_CHECK(fallback_warnings == 1, "the prefix fallback warned %d times in 8 falling-back calls; want once per "
             "process", fallback_warnings);
    TU_CHECK(strstr(fallback_sentence, "FlashAttentionScore") && strstr(fallback_sentence, "prefix") &&
             strstr(fallback_sentence, "sparse_mode 1"), "the warning does not name the op, the argument and what "
             "runs: \"%s\"", fallback_sentence);
    attnops_set_warning_handler(NULL, NULL);
    passed += tu_failures == before;
}

/* Row i of head (b, h) from a [B,N1,S1,8] stats tensor (BNSD layout helpers). */
static float stat(const tu_tensor *t, int64_t b, int64_t h, int64_t i)
{
    const int64_t *st = t->view.strides;
    return ((const float *)t->view.data)[b * st[0] + h * st[1] + i * st[2]];
}

/* Fully masked rows in both behaviours, with exact expected values. */
static void invalid_rows_suite(void)
{
    for (int impl = ATTNOPS_IMPL_REFERENCE; impl <= ATTNOPS_IMPL_CPU; impl++) {
        const int before = tu_failures;
        /* Mode 3 with S1 > S2: rows i < S1 - S2 see no key; the golden's condition selects the sentinels. */
        fa_case_shape s;
        fa_case_parse("B=1,N1=1,N2=1,S1=150,S2=60,D=16,Dv=16,dtype=f32,layout=BNSD,mode=3,mask=compressed", &s);
        fa_case c;
        fa_case_init(&c, &s, 3);
        run(&c, (attnops_impl)impl);
        const float *out = c.out.view.data, *dq = c.dq.view.data;
        for (int64_t i = 0; i < s.S1; i++) {
            bool invalid = i < s.S1 - s.S2;
            float m = stat(&c.smax, 0, 0, i), l = stat(&c.ssum, 0, 0, i);
            if (invalid) {
                TU_CHECK(m == -FLT_MAX && l == FLT_MAX, "impl %d row %lld: stats %g %g, want the sentinels", impl,
                         (long long)i, m, l);
                for (int64_t e = 0; e < s.Dv; e++)
                    TU_CHECK(out[i * s.Dv + e] == 0.0f && dq[i * s.D + e] == 0.0f, "impl %d row %lld: nonzero output",
                             impl, (long long)i);
            } else {
                TU_CHECK(m > -1e30f && l >= 1.0f, "impl %d row %lld: valid row got stats %g %g", impl, (long long)i, m, l);
            }
        }
        fa_case_free(&c);

        /* Mode 1 (no golden condition): a fully masked row gets uniform weights,
         * m = -40000, l = S2, out = mean of V; inner_precise = 2 forces the sentinels. */
        for (int ip = 0; ip <= 2; ip += 2) {
            char spec[256];
            snprintf(spec, sizeof spec, "B=1,N1=1,N2=1,S1=20,S2=70,D=8,Dv=8,dtype=f32,layout=BNSD,mode=1,mask=ss,"
                                        "inner_precise=%d", ip);
            fa_case_parse(spec, &s);
            fa_case_init(&c, &s, 5); /* rows i % 7 == 3 are fully masked */
            run(&c, (attnops_impl)impl);
            const float *v = c.v.view.data;
            out = c.out.view.data;
            const int64_t i = 3;
            float m = stat(&c.smax, 0, 0, i), l = stat(&c.ssum, 0, 0, i);
            if (ip == 2) {
                TU_CHECK(m == -FLT_MAX && l == FLT_MAX && out[i * s.Dv] == 0.0f, "impl %d inner_precise 2: %g %g %g",
                         impl, m, l, out[i * s.Dv]);
            } else {
                double mean = 0.0;
                for (int64_t j = 0; j < s.S2; j++) mean += v[j * s.Dv];
                mean /= (double)s.S2;
                TU_CHECK(m == -40000.0f && fabsf(l - (float)s.S2) < 1e-3f && fabs(out[i * s.Dv] - mean) < 1e-5,
                         "impl %d uniform row: m %g l %g out %g (mean of V %g)", impl, m, l, out[i * s.Dv], mean);
            }
            fa_case_free(&c);
        }
        passed += tu_failures == before;
    }
}

/* TND compressed ALiBi: the kernel's diagonal reconstruction (fa_pse_value)
 * equals the golden's per-batch bottom-right slice of the full one-sided
 * ALiBi built on max(S1, 1024) x max S2, for every j <= i (S1_b = S2_b). */
static void tnd_alibi_suite(void)
{
    const char *specs[] = {
        "N1=2,N2=1,D=8,Dv=8,dtype=f32,layout=TND,seqs=300:1100:40,mode=3,mask=compressed,pse=bnhs,pse_type=1",
        "N1=3,N2=1,D=8,Dv=8,dtype=f32,layout=TND,seqs=100:300:7,mode=2,mask=compressed,pse=1nhs,pse_type=0",
    };
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        const int before = tu_failures;
        fa_case c;
        fa_problem p;
        const bool ok = case_problem(specs[k], 21 + k, &c, &p);
        const fa_case_shape s = c.shape;
        float slopes[8];
        attnops_alibi_slopes(s.N1, slopes);
        const int64_t st_rows = c.shape.S1 > 1024 ? c.shape.S1 : 1024, sk_cols = c.shape.S2;
        for (int64_t b = 0; ok && b < p.B; b++) {
            const int64_t S1 = c.shape.seq_q[b], S2 = c.shape.seq_kv[b];
            for (int64_t h = 0; h < s.N1; h++)
                for (int64_t i = 0; i < S1; i++)
                    for (int64_t j = 0; j <= i && j < S2; j++) {
                        const int64_t r = st_rows - S1 + i, col = sk_cols - S2 + j;
                        const float want = (float)((double)slopes[h] * (double)(col <= r ? col - r : 0));
                        const double got = fa_pse_value(&p, b, h, i, j, S1, S2);
                        if (got != (double)want) {
                            TU_CHECK(false, "[%s] batch %lld head %lld (%lld, %lld): %g, golden %g", specs[k],
                                     (long long)b, (long long)h, (long long)i, (long long)j, got, (double)want);
                            i = S1, h = s.N1;
                            break;
                        }
                    }
        }
        fa_case_free(&c);
        passed += tu_failures == before;
    }
}

int main(void)
{
    tu_require_isa();
    predicate_suite();
    tnd_predicate_suite();
    tnd_alibi_suite();
    equivalence_suite();
    invalid_rows_suite();
    prefix_fallback_suite();
    /* The checks bite: a golden that disagrees by one diagonal is caught. */
    TU_CHECK(fa_case_golden_masked(2, 10, 10, 0, 0, 0, 3, 4) && !fa_case_golden_masked(2, 10, 10, 0, 0, 0, 4, 4),
             "the golden causal mask itself is wrong");
    return tu_finish("test_fa_masks", passed);
}
