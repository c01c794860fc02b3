/* Bitwise reproducibility of the fast kernel: the same call twice gives the
 * same bits; the forward, and the backward with `deterministic` set, give
 * the same bits for any thread count.  Shapes include B*N2 = 1 so the
 * backward splits kv ranges across threads. */
#include <stdlib.h>
#include <string.h>

#include "fa_case.h"
#include "suite.h"

static bool same_bits(const tu_tensor *a, const tu_tensor *b) { return memcmp(a->view.data, b->view.data, a->data_bytes) == 0; }

/* Forward then backward of `c` with the given thread count and flag. */
static void run(fa_case *c, int threads, int deterministic)
{
    /* AUTO is the fast kernel, except for the FP8 forward (reference only) */
    TU_CHECK(fa_case_forward(c, ATTNOPS_IMPL_AUTO, threads, deterministic) == ATTNOPS_SUCCESS, "forward: %s",
             attnops_last_error());
    TU_CHECK(fa_case_backward(c, ATTNOPS_IMPL_CPU, threads, deterministic) == ATTNOPS_SUCCESS, "backward: %s",
             attnops_last_error());
}

static void compare_outputs(fa_case *a, fa_case *b, const char *what, const char *desc)
{
    const struct { const char *name; tu_tensor *x, *y; } outs[] = {
        {"attention_out", &a->out, &b->out}, {"softmax_max", &a->smax, &b->smax}, {"softmax_sum", &a->ssum, &b->ssum},
        {"dq", &a->dq, &b->dq}, {"dk", &a->dk, &b->dk}, {"dv", &a->dv, &b->dv}};
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
        TU_CHECK(same_bits(outs[i].x, outs[i].y), "%s differs (%s) [%s]", outs[i].name, what, desc);
}

static bool check(const fa_case_shape *s, uint64_t seed)
{
    const int before = tu_failures;
    char desc[384];
    fa_case_describe(s, desc, sizeof desc);
    fa_case base, other;
    fa_case_init(&base, s, seed);
    fa_case_init(&other, s, seed);

    run(&base, 2, 0);
    run(&other, 2, 0);
    compare_outputs(&base, &other, "same call twice, 2 threads", desc);

    run(&base, 1, 1);
    const int thread_counts[] = {2, 3};
    for (int i = 0; i < 2; i++) {
        char what[64];
        snprintf(what, sizeof what, "deterministic, 1 vs %d threads", thread_counts[i]);
        run(&other, thread_counts[i], 1);
        compare_outputs(&base, &other, what, desc);
    }

    /* The checker bites: a one-bit change is seen. */
    ((unsigned char *)other.dq.view.data)[0] ^= 1;
    TU_CHECK(!same_bits(&base.dq, &other.dq), "a flipped bit went unnoticed");
    fa_case_free(&base);
    fa_case_free(&other);
    if (tu_failures == before) printf("ok   %s\n", desc);
    return tu_failures == before;
}

int main(void)
{
    const char *specs[] = {
        "B=1,N1=1,N2=1,S1=200,S2=700,D=64,Dv=64,dtype=f32,layout=BNSD",
        "B=1,N1=2,N2=1,S1=130,S2=515,D=59,Dv=32,dtype=bf16,layout=BSH",
        "B=2,N1=4,N2=2,S1=97,S2=129,D=128,Dv=128,dtype=f16,layout=SBH,pad=3",
        /* causal: kv splits are cut by work, not by tile count */
        "B=1,N1=1,N2=1,S1=600,S2=600,D=64,Dv=64,dtype=f32,layout=BNSD,mode=2,mask=compressed,pse=slopes_n,pse_type=2",
        /* dropout: the mask depends on element positions only */
        "B=1,N1=2,N2=1,S1=300,S2=400,D=32,Dv=32,dtype=bf16,layout=BSND,keep=0.5,seed=3,offset=16",
        "B=1,N1=2,N2=1,S1=300,S2=400,D=64,Dv=64,dtype=f8_e4m3fn,out=bf16,layout=BSND,keep=0.9,seed=2,offset=0",
        /* a short query: the forward on the split-KV kernel, keys split in 512s */
        "B=1,N1=8,N2=2,S1=2,S2=1300,D=64,Dv=64,dtype=bf16,layout=BSND,mode=3,mask=compressed",
    };
    int passed = 0;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        fa_case_shape s;
        TU_CHECK(fa_case_parse(specs[i], &s), "bad spec %s", specs[i]);
        passed += check(&s, tu_suite_seed() + i);
    }
    return tu_finish("test_fa_determinism", passed);
}
