/* Fast CPU kernel vs the double reference, forward and backward, over shapes
 * that straddle the 64-wide tiles (1, 7, 63, 64, 65, 97, 128, 129, 1025),
 * odd head dims, Dv < D, GQA, all four layouts, three dtypes and
 * non-contiguous views.  Tolerances come from tu_attention_tolerance (dtype
 * and reduction length), never from the case.
 *
 * Usage: test_fa_accuracy [--cases N] [--threads T]
 *        test_fa_accuracy --case B,N1,N2,S1,S2,D,Dv,dtype,layout,pad --seed S   (reproduce one case) */
#include <stdlib.h>
#include <string.h>

#include "fa_case.h"

static int threads = 2;

/* Runs one case; returns true when every comparison passed. */
static bool run_case(const fa_case_shape *s, uint64_t seed)
{
    char desc[256], repro[512], label[320];
    fa_case_describe(s, desc, sizeof desc);
    snprintf(repro, sizeof repro, "test_fa_accuracy --case %lld,%lld,%lld,%lld,%lld,%lld,%lld,%s,%s,%lld --seed %llu",
             (long long)s->B, (long long)s->N1, (long long)s->N2, (long long)s->S1, (long long)s->S2,
             (long long)s->D, (long long)s->Dv, attnops_dtype_name(s->dtype), attnops_layout_name(s->layout),
             (long long)s->pad, (unsigned long long)seed);
    const int before = tu_failures;
    fa_case ref, fast;
    fa_case_init(&ref, s, seed);
    fa_case_init(&fast, s, seed);
    fa_output_check rows[3];

    attnops_status st = fa_case_forward(&ref, ATTNOPS_IMPL_REFERENCE, threads, 0);
    TU_CHECK(st == ATTNOPS_SUCCESS, "%s: reference forward failed: %s", desc, attnops_last_error());
    st = fa_case_forward(&fast, ATTNOPS_IMPL_CPU, threads, 0);
    TU_CHECK(st == ATTNOPS_SUCCESS, "%s: cpu forward failed: %s", desc, attnops_last_error());
    snprintf(label, sizeof label, "forward [%s]", desc);
    TU_CHECK(fa_case_check_forward(&fast, &ref, label, repro, rows), "%s", label);

    /* The backward of both chains consumes the reference forward's outputs. */
    fa_case_copy_forward(&fast, &ref);
    st = fa_case_backward(&ref, ATTNOPS_IMPL_REFERENCE, threads, 0);
    TU_CHECK(st == ATTNOPS_SUCCESS, "%s: reference backward failed: %s", desc, attnops_last_error());
    st = fa_case_backward(&fast, ATTNOPS_IMPL_CPU, threads, 0);
    TU_CHECK(st == ATTNOPS_SUCCESS, "%s: cpu backward failed: %s", desc, attnops_last_error());
    snprintf(label, sizeof label, "backward [%s]", desc);
    TU_CHECK(fa_case_check_backward(&fast, &ref, label, repro, rows), "%s", label);

    tu_tensor *all[] = {&fast.q, &fast.k, &fast.v, &fast.dy, &fast.out, &fast.smax, &fast.ssum,
                        &fast.dq, &fast.dk, &fast.dv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) TU_CHECK(tu_canaries_ok(all[i], desc), "canary %s", desc);
    fa_case_free(&ref);
    fa_case_free(&fast);
    if (tu_failures == before) printf("ok   %s\n", desc);
    return tu_failures == before;
}

static attnops_dtype dtype_from(const char *s)
{
    if (!strcmp(s, "f16")) return ATTNOPS_DTYPE_F16;
    if (!strcmp(s, "bf16")) return ATTNOPS_DTYPE_BF16;
    return ATTNOPS_DTYPE_F32;
}

static bool parse_case(const char *spec, fa_case_shape *s)
{
    char dt[16], lay[16];
    long long v[8];
    memset(s, 0, sizeof *s);
    if (sscanf(spec, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%15[^,],%15[^,],%lld", &v[0], &v[1], &v[2], &v[3], &v[4],
               &v[5], &v[6], dt, lay, &v[7]) != 10)
        return false;
    *s = (fa_case_shape){v[0], v[1], v[2], v[3], v[4], v[5], v[6], dtype_from(dt), attnops_layout_from_string(lay),
                         v[7], 0.0};
    return s->layout != ATTNOPS_LAYOUT_UNSET;
}

/* A random shape from the tile-straddling lists, sized so the double
 * reference stays fast (long sequences get one small head). */
static fa_case_shape random_shape(tu_rng *r)
{
    static const int64_t seqs[] = {1, 7, 63, 64, 65, 97, 127, 128, 129, 257};
    static const int64_t dims[] = {16, 59, 64, 128, 177, 256};
    static const int64_t groups[] = {1, 2, 4, 8};
    static const attnops_dtype dtypes[] = {ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16};
    fa_case_shape s;
    s.S1 = tu_pick(r, seqs, 10);
    s.S2 = tu_pick(r, seqs, 10);
    s.D = tu_pick(r, dims, 6);
    s.Dv = (tu_next(r) % 3 == 0) ? 1 + (int64_t)(tu_next(r) % (uint64_t)s.D) : s.D;
    s.N2 = 1 + (int64_t)(tu_next(r) % 2);
    s.N1 = s.N2 * tu_pick(r, groups, 4);
    s.B = 1 + (int64_t)(tu_next(r) % 2);
    s.dtype = dtypes[tu_next(r) % 3];
    s.layout = (attnops_layout)(ATTNOPS_LAYOUT_BNSD + (int)(tu_next(r) % 4));
    s.pad = (tu_next(r) % 2) ? 3 : 0;
    s.scale = 0.0;
    if (tu_next(r) % 8 == 0) { /* one long sequence */
        s.S1 = 1025, s.S2 = (tu_next(r) % 2) ? 1025 : 97, s.B = 1, s.N2 = 1, s.N1 = 2, s.D = s.D > 64 ? 64 : s.D;
        if (s.Dv > s.D) s.Dv = s.D;
    }
    return s;
}

int main(int argc, char **argv)
{
    int ncases = 48, passed = 0;
    const char *one = NULL;
    uint64_t seed = tu_suite_seed();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cases") && i + 1 < argc) ncases = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) one = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
    }
    printf("test_fa_accuracy: suite seed %llu, %d threads, isa %s\n", (unsigned long long)seed, threads,
           attnops_cpu_isa());
    if (one) {
        fa_case_shape s;
        if (!parse_case(one, &s)) {
            fprintf(stderr, "bad --case '%s'\n", one);
            return 2;
        }
        passed += run_case(&s, seed);
        return tu_finish("test_fa_accuracy", passed);
    }

    /* Fixed edges first: exact tiles, one off either side, GQA, Dv < D. */
    const fa_case_shape fixed[] = {
        {1, 1, 1, 64, 64, 64, 64, ATTNOPS_DTYPE_F32, ATTNOPS_LAYOUT_BNSD, 0, 0},
        {1, 2, 1, 63, 65, 59, 59, ATTNOPS_DTYPE_F32, ATTNOPS_LAYOUT_BSND, 3, 0},
        {2, 4, 2, 65, 63, 177, 128, ATTNOPS_DTYPE_BF16, ATTNOPS_LAYOUT_BSH, 0, 0},
        {1, 8, 1, 1, 129, 16, 16, ATTNOPS_DTYPE_F16, ATTNOPS_LAYOUT_SBH, 3, 0},
        {1, 2, 2, 129, 1, 256, 100, ATTNOPS_DTYPE_BF16, ATTNOPS_LAYOUT_BNSD, 0, 0.37},
        {1, 1, 1, 1025, 1025, 64, 64, ATTNOPS_DTYPE_BF16, ATTNOPS_LAYOUT_BSND, 0, 0},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) passed += run_case(&fixed[i], seed + i);
    tu_rng r = tu_rng_make(seed);
    for (int i = 0; i < ncases; i++) {
        fa_case_shape s = random_shape(&r);
        passed += run_case(&s, seed + 1000 + (uint64_t)i);
    }
    return tu_finish("test_fa_accuracy", passed);
}
