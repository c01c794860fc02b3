/* The harness's comparison rules (verify/compare.h) on crafted data with
 * hand-computed outcomes: for every rule, data that must pass, data just
 * past each of its bounds that must fail, NaN and masking behaviour. */
#include <math.h>
#include <string.h>

#include "compare.h"
#include "testutil.h"
#include "suite.h"

enum { N = 10000 };
static double a[N], e[N], bm[N];
static uint8_t counted[N];

static cmp_verdict run(cmp_rule rule, int64_t n, const uint8_t *mask, const double *bench, attnops_dtype dtype)
{
    const cmp_options o = {.rule = rule, .counted = mask, .dtype = dtype};
    return cmp_compare(&o, a, e, bench, n);
}

/* Expect `pass`; on a surprise print the verdict line. */
static void expect(const char *what, cmp_verdict v, bool pass)
{
    if (v.pass != pass) cmp_print(stderr, what, &v, a, e, NULL, 0);
    TU_CHECK(v.pass == pass, "%s: verdict %s, expected %s", what, v.pass ? "PASS" : "FAIL", pass ? "PASS" : "FAIL");
}

static void fill(int64_t n, double golden, double actual)
{
    for (int64_t i = 0; i < n; i++) e[i] = golden, a[i] = actual;
}

static void dual(void)
{
    for (int i = 0; i < 100; i++) e[i] = 0.01 * (i + 1), a[i] = e[i] * 1.004;
    expect("dual: every element 0.4 % off", run(CMP_DUAL, 100, NULL, NULL, 0), true);
    for (int i = 0; i < 100; i++) a[i] = e[i] * 1.01;
    expect("dual: every element 1 % off", run(CMP_DUAL, 100, NULL, NULL, 0), false);
    /* 1000 elements of 1.0: 5 off by 2 % is 0.5 % of them (allowed), 6 is not */
    fill(1000, 1.0, 1.0);
    for (int i = 0; i < 5; i++) a[i] = 1.02;
    cmp_verdict v = run(CMP_DUAL, 1000, NULL, NULL, 0);
    expect("dual: 0.5 % of the elements off", v, true);
    TU_CHECK(v.n_fail == 5 && fabs(v.metric[0].value - 0.005) < 1e-15, "dual: fail count %lld, ratio %g",
             (long long)v.n_fail, v.metric[0].value);
    a[5] = 1.02;
    expect("dual: 0.6 % of the elements off", run(CMP_DUAL, 1000, NULL, NULL, 0), false);
    /* within 0.5 % relative, but an absolute diff above 0.1 */
    e[0] = 100.0, a[0] = 100.2;
    expect("dual: max abs diff 0.2", run(CMP_DUAL, 1, NULL, NULL, 0), false);
    /* the absolute floor is 2.5e-5 rounded to fp16: 419 * 2^-24 = 2.4974346160888672e-05 */
    e[0] = 0.0, a[0] = 2.4974346160888672e-05;
    TU_CHECK(run(CMP_DUAL, 1, NULL, NULL, 0).n_fail == 0, "dual: a diff at the fp16 floor must be within");
    a[0] = 2.4975e-05;
    TU_CHECK(run(CMP_DUAL, 1, NULL, NULL, 0).n_fail == 1, "dual: a diff past the fp16 floor must be off");
    /* the fail ratio is over the counted elements: of 200 counted among 1000, one off is 0.5 % (allowed),
     * two are 1 % (0.2 % of all 1000, so a ratio over every element would pass them) */
    fill(1000, 1.0, 1.0);
    for (int i = 0; i < 1000; i++) counted[i] = i >= 800;
    for (int i = 0; i < 800; i++) a[i] = 2.0; /* outside the counted rows: never counted */
    a[900] = 1.02;
    v = run(CMP_DUAL, 1000, counted, NULL, 0);
    expect("dual: 1 of 200 counted elements off", v, true);
    TU_CHECK(v.counted == 200 && v.n_fail == 1 && fabs(v.metric[0].value - 0.005) < 1e-15,
             "dual: %lld counted, %lld off, ratio %g; expected 200, 1, 0.005", (long long)v.counted,
             (long long)v.n_fail, v.metric[0].value);
    a[901] = 1.02;
    expect("dual: 2 of 200 counted elements off", run(CMP_DUAL, 1000, counted, NULL, 0), false);
    /* NaN where the golden has NaN is equal; anywhere else it fails */
    fill(10, 1.0, 1.0);
    a[3] = e[3] = NAN;
    expect("dual: NaN where the golden has NaN", run(CMP_DUAL, 10, NULL, NULL, 0), true);
    e[3] = 1.0;
    expect("dual: a NaN the golden does not have", run(CMP_DUAL, 10, NULL, NULL, 0), false);
}

static void isclose(void)
{
    /* |a - e| <= 1e-4 + |e| / 128 */
    fill(1000, 1.0, 1.0 + 0.0078);
    expect("isclose: every element inside 1/128 + 1e-4", run(CMP_ISCLOSE, 1000, NULL, NULL, 0), true);
    fill(1000, 1.0, 1.0);
    for (int i = 0; i < 5; i++) a[i] = 1.01;
    cmp_verdict v = run(CMP_ISCLOSE, 1000, NULL, NULL, 0);
    expect("isclose: 99.5 % close", v, true);
    TU_CHECK(fabs(v.metric[0].value - 0.995) < 1e-12, "isclose: share %g, expected 0.995", v.metric[0].value);
    a[5] = 1.01;
    expect("isclose: 99.4 % close", run(CMP_ISCLOSE, 1000, NULL, NULL, 0), false);
    /* only the counted elements (valid rows) count */
    for (int i = 0; i < 1000; i++) counted[i] = i >= 100;
    for (int i = 0; i < 100; i++) a[i] = 5.0;
    v = run(CMP_ISCLOSE, 1000, counted, NULL, 0);
    expect("isclose: bad elements outside the counted rows", v, true);
    TU_CHECK(v.counted == 900, "isclose: %lld counted, expected 900", (long long)v.counted);
    /* a non-finite value where the golden is finite fails even inside the share */
    fill(1000, 1.0, 1.0);
    a[7] = INFINITY;
    expect("isclose: one inf among 1000", run(CMP_ISCLOSE, 1000, NULL, NULL, 0), false);
    a[7] = e[7] = INFINITY;
    expect("isclose: inf where the golden has inf", run(CMP_ISCLOSE, 1000, NULL, NULL, 0), true);
}

static void allclose(void)
{
    /* |a - e| <= 0.02 + 0.01 |e|: at e = 2 the bound is 0.04 */
    fill(100, 2.0, 2.0390625);
    expect("allclose: inside 0.02 + 0.01|e|", run(CMP_ALLCLOSE, 100, NULL, NULL, 0), true);
    a[50] = 2.041;
    cmp_verdict v = run(CMP_ALLCLOSE, 100, NULL, NULL, 0);
    expect("allclose: one element past the bound", v, false);
    TU_CHECK(v.n_fail == 1 && v.worst == 50, "allclose: %lld off, worst at %lld (expected 1 at 50)",
             (long long)v.n_fail, (long long)v.worst);
    /* custom tolerances replace the defaults */
    const cmp_options o = {.rule = CMP_ALLCLOSE, .rtol = 0.0, .atol = 0.05};
    TU_CHECK(cmp_compare(&o, a, e, NULL, 100).pass, "allclose: atol 0.05 must pass a 0.041 diff");
}

static void thousandths(void)
{
    /* 10000 elements of 1: 10 of them 0.11 % off is 99.9 % within 1e-3 */
    fill(N, 1.0, 1.0009);
    for (int i = 0; i < 10; i++) a[i] = 1.0011;
    expect("thousandth: 99.9 % within 1e-3", run(CMP_THOUSANDTH, N, NULL, NULL, 0), true);
    a[10] = 1.0011;
    expect("thousandth: 99.89 % within 1e-3", run(CMP_THOUSANDTH, N, NULL, NULL, 0), false);
    fill(N, 1.0, 1.00009);
    a[0] = 1.00011;
    expect("ten-thousandth: 99.99 % within 1e-4", run(CMP_TEN_THOUSANDTH, N, NULL, NULL, 0), true);
    a[1] = 1.00011;
    expect("ten-thousandth: 99.98 % within 1e-4", run(CMP_TEN_THOUSANDTH, N, NULL, NULL, 0), false);
    /* a zero golden value needs an exact zero */
    fill(N, 0.0, 0.0);
    a[0] = a[1] = 1e-30;
    expect("ten-thousandth: two nonzero values against zeros", run(CMP_TEN_THOUSANDTH, N, NULL, NULL, 0), false);
}

static void triple(void)
{
    const attnops_dtype f32 = ATTNOPS_DTYPE_F32; /* small_thr 2^-14, small_err 2^-30 */
    /* golden 2: bench 0.1 % off, actual 0.2 % off -> every ratio exactly 2 */
    e[0] = 2.0, bm[0] = 2.002, a[0] = 2.004;
    cmp_verdict v = run(CMP_TRIPLE, 1, NULL, bm, f32);
    TU_CHECK(fabs(v.metric[0].value - 2.0) < 1e-9 && fabs(v.metric[1].value - 2.0) < 1e-9 &&
                 fabs(v.metric[2].value - 2.0) < 1e-9,
             "triple: ratios %g %g %g, expected 2 2 2", v.metric[0].value, v.metric[1].value, v.metric[2].value);
    TU_CHECK(fabs(v.metric[4].value - 0.004 / (2.0 + 1e-7)) < 1e-15, "triple: MARE %.17g, expected %.17g",
             v.metric[4].value, 0.004 / (2.0 + 1e-7));
    expect("triple: MERE ratio 2 (limit 1.2)", v, false);
    /* 1.1x the benchmark's errors everywhere passes */
    for (int i = 0; i < 100; i++) e[i] = 1.0 + i, bm[i] = e[i] * (1 + 1e-3), a[i] = e[i] * (1 + 1.1e-3);
    expect("triple: 1.1x the benchmark's errors", run(CMP_TRIPLE, 100, NULL, bm, f32), true);
    /* MARE alone may reach 2: one element 1.9x, the rest equal */
    for (int i = 0; i < 100; i++) a[i] = bm[i];
    a[0] = e[0] * (1 + 1.9e-3);
    expect("triple: one element at 1.9x", run(CMP_TRIPLE, 100, NULL, bm, f32), true);
    a[0] = e[0] * (1 + 2.1e-3);
    expect("triple: one element at 2.1x (MARE)", run(CMP_TRIPLE, 100, NULL, bm, f32), false);
    /* small values (|golden| < 2^-14): count errors above 2^-30; ratio <= 2 */
    for (int i = 0; i < 100; i++) a[i] = bm[i];
    for (int i = 0; i < 4; i++) e[i] = bm[i] = a[i] = 1e-6;
    bm[0] = 1e-6 + 1e-8;
    a[0] = a[1] = 1e-6 + 1e-8;
    expect("triple: 2 small-value errors against 1", run(CMP_TRIPLE, 100, NULL, bm, f32), true);
    a[2] = 1e-6 + 1e-8;
    expect("triple: 3 small-value errors against 1", run(CMP_TRIPLE, 100, NULL, bm, f32), false);
    /* a NaN in the kernel: ratio 1000 */
    for (int i = 0; i < 100; i++) a[i] = bm[i];
    a[50] = NAN;
    expect("triple: a NaN in the kernel", run(CMP_TRIPLE, 100, NULL, bm, f32), false);
    a[50] = bm[50];
    expect("triple: no benchmark chain", run(CMP_TRIPLE, 100, NULL, NULL, f32), false);
}

int main(void)
{
    int passed = 0, before;
    void (*suites[])(void) = {dual, isclose, allclose, thousandths, triple};
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
        before = tu_failures;
        suites[i]();
        passed += tu_failures == before;
    }
    cmp_rule r;
    before = tu_failures;
    for (int k = 0; k < CMP_RULE_COUNT; k++)
        TU_CHECK(cmp_rule_parse(cmp_rule_name((cmp_rule)k), &r) && r == (cmp_rule)k, "rule name %d", k);
    TU_CHECK(!cmp_rule_parse("nearly", &r), "an unknown rule name parsed");
    passed += tu_failures == before;
    return tu_finish("test_compare", passed);
}
