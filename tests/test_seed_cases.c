/* The six FlashAttentionScoreGrad cases of the seed (spec 7.1), read from
 * the built-in suite file verify/suites/fag_seed.json (the seed's field
 * names and values), run as the seed runs them (only_grad: the backward
 * consumes the reference forward's outputs) with the fast kernel against
 * the reference, judged by both the seed's criterion (made a real verdict)
 * and our dtype-derived tolerance. */
#include <stdlib.h>
#include <string.h>

#include "harness_case.h"
#include "suite.h"

static bool dual_check(const char *label, const tu_tensor *a, const tu_tensor *e)
{
    const int64_t n = tu_numel(&e->view);
    double *x = malloc(sizeof(double) * (size_t)(n ? n : 1)), *y = malloc(sizeof(double) * (size_t)(n ? n : 1));
    tu_tensor_to_f64(a, x);
    tu_tensor_to_f64(e, y);
    const bool ok = tu_compare_dual(label, x, y, n).pass;
    free(x);
    free(y);
    return ok;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)len + 1);
    const size_t got = fread(text, 1, (size_t)len, f);
    fclose(f);
    text[got] = '\0';
    return text;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_seed_cases SUITE.json\n");
        return 2;
    }
    char *text = read_text(argv[1]), err[512] = "cannot read the suite file";
    harness_case *cases = NULL;
    const int ncases = text ? harness_parse_cases(text, argv[1], &cases, err, sizeof err) : -1;
    free(text);
    if (ncases < 0) {
        fprintf(stderr, "test_seed_cases: %s\n", err);
        return 2;
    }
    TU_CHECK(ncases == 6, "the seed's suite holds %d cases, expected 6", ncases);
    int passed = 0;
    for (int k = 0; k < ncases; k++) {
        const harness_case *c = &cases[k];
        if (c->note[0]) printf("note %s: %s\n", c->name, c->note);
        const int before = tu_failures;
        fa_case ref, fast;
        fa_case_init(&ref, &c->shape, c->data_seed);
        fa_case_init(&fast, &c->shape, c->data_seed);
        TU_CHECK(fa_case_forward(&ref, ATTNOPS_IMPL_REFERENCE, 2, 0) == ATTNOPS_SUCCESS, "%s fwd: %s", c->name,
                 attnops_last_error());
        fa_case_copy_forward(&fast, &ref);
        TU_CHECK(fa_case_backward(&ref, ATTNOPS_IMPL_REFERENCE, 2, 0) == ATTNOPS_SUCCESS, "%s ref bwd: %s", c->name,
                 attnops_last_error());
        TU_CHECK(fa_case_backward(&fast, ATTNOPS_IMPL_CPU, 2, 0) == ATTNOPS_SUCCESS, "%s cpu bwd: %s", c->name,
                 attnops_last_error());
        fa_output_check rows[FA_CASE_MAX_BWD_OUTPUTS];
        char label[128];
        snprintf(label, sizeof label, "%s backward", c->name);
        TU_CHECK(fa_case_check_backward(&fast, &ref, label, NULL, rows), "%s: dtype-derived tolerance", c->name);
        const struct { const char *n; tu_tensor *a, *e; } grads[] = {
            {"dq", &fast.dq, &ref.dq}, {"dk", &fast.dk, &ref.dk}, {"dv", &fast.dv, &ref.dv},
            {"dq_rope", &fast.dqr, &ref.dqr}, {"dk_rope", &fast.dkr, &ref.dkr}};
        for (int g = 0; g < fa_case_backward_outputs(&ref); g++) {
            snprintf(label, sizeof label, "%s %s", c->name, grads[g].n);
            TU_CHECK(dual_check(label, grads[g].a, grads[g].e), "%s: the seed's criterion", label);
        }
        if (tu_failures == before) printf("ok   %s\n", c->name);
        passed += tu_failures == before;
        fa_case_free(&ref);
        fa_case_free(&fast);
    }
    free(cases);
    /* The seed's criterion bites: a 1 % error on every element fails it. */
    double e[100], a[100];
    for (int i = 0; i < 100; i++) e[i] = 1.0 + i, a[i] = e[i] * 1.01;
    TU_CHECK(!tu_compare_dual("self-test (expected failure)", a, e, 100).pass, "the seed's criterion passed a 1%% error");
    return tu_finish("test_seed_cases", passed);
}
