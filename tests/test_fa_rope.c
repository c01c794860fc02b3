/* MLA rope inputs (spec 1.3) mean concatenation on the head dim: a call with
 * query_rope / key_rope must give, bit for bit and in both implementations,
 * what the same call without them gives on Q = [query | query_rope] and
 * K = [key | key_rope]; dq_rope / dk_rope must be the trailing columns of that
 * call's dq / dk.  Every layout (TND included), padded views, GQA, a mask,
 * pse and dropout.  (Fast vs reference with rope runs in test_fa_accuracy
 * and test_seed_cases, MLA_02.) */
#include <math.h>
#include <string.h>

#include "fa_case.h"
#include "suite.h"

/* Element (b, n, row, d) of a case tensor with head dim `hd`; row is the
 * global token in TND (b ignored there). */
static char *elem(const fa_case_shape *s, const tu_tensor *t, int64_t b, int64_t n, int64_t row, int64_t d, int64_t hd)
{
    const int64_t *st = t->view.strides;
    int64_t off;
    switch (s->layout) {
    case ATTNOPS_LAYOUT_TND: off = row * st[0] + n * st[1] + d * st[2]; break;
    case ATTNOPS_LAYOUT_BNSD: off = b * st[0] + n * st[1] + row * st[2] + d * st[3]; break;
    case ATTNOPS_LAYOUT_BSND: off = b * st[0] + row * st[1] + n * st[2] + d * st[3]; break;
    case ATTNOPS_LAYOUT_BSH: off = b * st[0] + row * st[1] + (n * hd + d) * st[2]; break;
    default: off = row * st[0] + b * st[1] + (n * hd + d) * st[2]; break; /* SBH */
    }
    return (char *)t->view.data + off * (int64_t)attnops_dtype_size(t->view.dtype);
}

/* Walks every element of the rope case's (part, rope part) pair against the
 * joined tensor: copy (part -> joined) or compare (joined vs part).
 * Returns the number of differing elements when comparing. */
static int64_t walk(const fa_case *rope, const tu_tensor *part, const tu_tensor *rope_part, const fa_case *joined,
                    const tu_tensor *whole, int64_t heads, int64_t rows, bool copy)
{
    const fa_case_shape *s = &rope->shape;
    const int64_t batches = s->layout == ATTNOPS_LAYOUT_TND ? 1 : s->B, D = s->D, Dr = s->Dr;
    const size_t es = attnops_dtype_size(s->dtype);
    int64_t differ = 0;
    for (int64_t b = 0; b < batches; b++)
        for (int64_t n = 0; n < heads; n++)
            for (int64_t i = 0; i < rows; i++)
                for (int64_t d = 0; d < D + Dr; d++) {
                    char *src = d < D ? elem(s, part, b, n, i, d, D) : elem(s, rope_part, b, n, i, d - D, Dr);
                    char *dst = elem(&joined->shape, whole, b, n, i, d, D + Dr);
                    if (copy) memcpy(dst, src, es);
                    else differ += memcmp(dst, src, es) != 0;
                }
    return differ;
}

static bool same_bits(const fa_case *a, const tu_tensor *x, const tu_tensor *y, int64_t heads, int64_t rows,
                      int64_t hd)
{
    const fa_case_shape *s = &a->shape;
    const int64_t batches = s->layout == ATTNOPS_LAYOUT_TND ? 1 : s->B;
    const size_t es = attnops_dtype_size(x->view.dtype);
    for (int64_t b = 0; b < batches; b++)
        for (int64_t n = 0; n < heads; n++)
            for (int64_t i = 0; i < rows; i++)
                for (int64_t d = 0; d < hd; d++)
                    if (memcmp(elem(s, x, b, n, i, d, hd), elem(s, y, b, n, i, d, hd), es)) return false;
    return true;
}

static bool run_pair(const char *spec, attnops_impl impl)
{
    const int before = tu_failures;
    fa_case_shape s;
    TU_CHECK(fa_case_parse(spec, &s), "bad spec %s", spec);
    fa_case_shape js = s;
    js.D = s.D + s.Dr, js.Dr = 0;
    if (js.scale <= 0) js.scale = 1.0 / sqrt((double)js.D); /* the rope case's default */
    fa_case rope, joined;
    fa_case_init(&rope, &s, 11);
    fa_case_init(&joined, &js, 11);
    const bool tnd = s.layout == ATTNOPS_LAYOUT_TND;
    const int64_t rq = tnd ? rope.T1 : s.S1, rkv = tnd ? rope.T2 : s.S2;
    /* the joined case gets exactly the rope case's inputs */
    walk(&rope, &rope.q, &rope.qr, &joined, &joined.q, s.N1, rq, true);
    walk(&rope, &rope.k, &rope.kr, &joined, &joined.k, s.N2, rkv, true);
    memcpy(joined.v.view.data, rope.v.view.data, rope.v.data_bytes);
    memcpy(joined.dy.view.data, rope.dy.view.data, rope.dy.data_bytes);

    const char *which = impl == ATTNOPS_IMPL_REFERENCE ? "reference" : "cpu";
    TU_CHECK(fa_case_forward(&rope, impl, 2, 0) == ATTNOPS_SUCCESS, "%s %s rope fwd: %s", spec, which,
             attnops_last_error());
    TU_CHECK(fa_case_forward(&joined, impl, 2, 0) == ATTNOPS_SUCCESS, "%s %s joined fwd: %s", spec, which,
             attnops_last_error());
    TU_CHECK(same_bits(&rope, &rope.out, &joined.out, s.N1, rq, s.Dv), "[%s, %s] attention_out differs", spec, which);
    TU_CHECK(!memcmp(rope.smax.view.data, joined.smax.view.data, rope.smax.data_bytes) &&
                 !memcmp(rope.ssum.view.data, joined.ssum.view.data, rope.ssum.data_bytes),
             "[%s, %s] softmax statistics differ", spec, which);

    TU_CHECK(fa_case_backward(&rope, impl, 2, 0) == ATTNOPS_SUCCESS, "%s %s rope bwd: %s", spec, which,
             attnops_last_error());
    TU_CHECK(fa_case_backward(&joined, impl, 2, 0) == ATTNOPS_SUCCESS, "%s %s joined bwd: %s", spec, which,
             attnops_last_error());
    TU_CHECK(walk(&rope, &rope.dq, &rope.dqr, &joined, &joined.dq, s.N1, rq, false) == 0,
             "[%s, %s] dq | dq_rope differ from the joined call's dq", spec, which);
    TU_CHECK(walk(&rope, &rope.dk, &rope.dkr, &joined, &joined.dk, s.N2, rkv, false) == 0,
             "[%s, %s] dk | dk_rope differ from the joined call's dk", spec, which);
    TU_CHECK(same_bits(&rope, &rope.dv, &joined.dv, s.N2, rkv, s.Dv), "[%s, %s] dv differs", spec, which);
    tu_tensor *guarded[] = {&rope.dq, &rope.dk, &rope.dv, &rope.dqr, &rope.dkr, &rope.out};
    for (size_t i = 0; i < sizeof guarded / sizeof guarded[0]; i++)
        TU_CHECK(tu_canaries_ok(guarded[i], spec), "canary %s", spec);
    fa_case_free(&rope);
    fa_case_free(&joined);
    if (tu_failures == before) printf("ok   %s (%s)\n", spec, which);
    return tu_failures == before;
}

int main(void)
{
    const char *specs[] = {
        /* the seed's MLA shape: D = 192 split at 128 */
        "B=1,N1=2,N2=1,S1=128,S2=128,D=128,rope=64,Dv=128,dtype=f16,layout=BNSD",
        "B=2,N1=4,N2=2,S1=97,S2=65,D=32,rope=16,Dv=32,dtype=f32,layout=BSND,pad=3,mode=2,mask=compressed",
        "B=1,N1=2,N2=2,S1=70,S2=130,D=48,rope=9,Dv=40,dtype=bf16,layout=BSH,keep=0.9,seed=2,offset=0",
        "B=2,N1=2,N2=1,S1=65,S2=65,D=24,rope=24,Dv=24,dtype=f16,layout=SBH,pad=2,pse=slopes_n,pse_type=2",
        "N1=2,N2=1,D=64,rope=32,Dv=64,dtype=bf16,layout=TND,seqs=40:0:100,mode=3,mask=compressed",
    };
    int passed = 0;
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
        passed += run_pair(specs[k], ATTNOPS_IMPL_REFERENCE);
        passed += run_pair(specs[k], ATTNOPS_IMPL_CPU);
    }
    return tu_finish("test_fa_rope", passed);
}
