/* attnops_dropout_mask: the mask at every element equals the stream byte at
 * the spec's index (formula computed here), padded and TND; the bit mask
 * packs the byte mask LSB first with a zero tail; and the FlashAttention
 * operators apply exactly this mask (V = identity makes attention_out show
 * P * keep / keep_prob element by element), in both implementations; and
 * the same mask given as an explicit drop_mask (spec 5.6) reproduces the
 * generated one bit for bit, forward and backward, padded and TND. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "fa_case.h"
#include "testutil.h"

static int passed = 0;

static uint8_t expected_keep(uint64_t seed, uint64_t offset, double kp, uint64_t idx)
{
    const ao_philox g = ao_philox_make(seed, offset);
    uint8_t u;
    ao_philox_bytes(&g, idx, 1, &u);
    return u <= (uint8_t)floorf((float)kp * 255.0f);
}

static void check_masks(attnops_dropout_mask_args *a, int64_t B, int64_t N1, const int64_t *s1, const int64_t *s2,
                        bool tnd, const char *what)
{
    const int before = tu_failures;
    int64_t count = 0;
    for (int64_t b = 0; b < B; b++) count += N1 * s1[b] * s2[b];
    const int64_t nbits = (count + 7) / 8 + 3; /* a device buffer may be longer */
    tu_tensor bytes = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, &count, 0), bits = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, &nbits, 0);
    tu_tensor_poison(&bits, 0xEE);
    a->byte_mask = &bytes.view, a->bit_mask = &bits.view;
    TU_CHECK(attnops_dropout_mask(a) == ATTNOPS_SUCCESS, "%s: %s", what, attnops_last_error());
    const uint8_t *m = bytes.view.data, *pk = bits.view.data;
    int64_t e = 0;
    uint64_t qk = 0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t s2a = (s2[b] + 15) / 16 * 16;
        for (int64_t h = 0; h < N1; h++)
            for (int64_t i = 0; i < s1[b]; i++)
                for (int64_t j = 0; j < s2[b]; j++, e++) {
                    const uint64_t idx = tnd ? (uint64_t)N1 * qk + (uint64_t)((h * s1[b] + i) * s2a + j)
                                             : (uint64_t)(((b * N1 + h) * s1[b] + i) * s2a + j);
                    const uint8_t want = expected_keep((uint64_t)a->seed, (uint64_t)a->offset, a->keep_prob, idx);
                    if (m[e] != want || ((pk[e / 8] >> (e % 8)) & 1) != want) {
                        TU_CHECK(false, "%s: element %lld (b %lld h %lld i %lld j %lld): byte %u bit %u, want %u", what,
                                 (long long)e, (long long)b, (long long)h, (long long)i, (long long)j, m[e],
                                 (pk[e / 8] >> (e % 8)) & 1, want);
                        goto done;
                    }
                }
        qk += (uint64_t)(s1[b] * s2a);
    }
    if (count % 8) TU_CHECK((pk[count / 8] >> (count % 8)) == 0, "%s: bits past the last element are set", what);
    for (int64_t i = (count + 7) / 8; i < nbits; i++) TU_CHECK(pk[i] == 0, "%s: tail byte %lld not zeroed", what, (long long)i);
done:
    tu_tensor_free(&bytes);
    tu_tensor_free(&bits);
    passed += tu_failures == before;
}

/* V = identity (Dv = S2): attention_out[i][j] = P[i][j] * keep / keep_prob. */
static void check_applied(attnops_impl impl)
{
    const int before = tu_failures;
    fa_case_shape s, s0;
    fa_case_parse("B=2,N1=2,N2=1,S1=9,S2=40,D=48,Dv=40,dtype=f32,layout=BNSD,keep=0.5,seed=21,offset=48", &s);
    s0 = s;
    s0.keep_prob = 0.0; /* no dropout */
    fa_case c, c0;
    fa_case_init(&c, &s, 4);
    fa_case_init(&c0, &s0, 4);
    for (fa_case *x = &c; x; x = x == &c ? &c0 : NULL) {
        float *v = x->v.view.data;
        for (int64_t k = 0; k < s.B * s.N2 * s.S2; k++)
            for (int64_t e = 0; e < s.Dv; e++) v[k * s.Dv + e] = (float)(k % s.S2 == e);
        TU_CHECK(fa_case_forward(x, impl, 2, 0) == ATTNOPS_SUCCESS, "forward: %s", attnops_last_error());
    }
    const int64_t count = s.B * s.N1 * s.S1 * s.S2;
    tu_tensor bytes = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, &count, 0);
    attnops_dropout_mask_args a = {.seed = 21, .offset = 48, .keep_prob = 0.5, .batch = s.B, .head_num = s.N1,
                                   .seq_q = s.S1, .seq_kv = s.S2, .byte_mask = &bytes.view};
    TU_CHECK(attnops_dropout_mask(&a) == ATTNOPS_SUCCESS, "mask: %s", attnops_last_error());
    const float *o = c.out.view.data, *o0 = c0.out.view.data;
    const uint8_t *keep = bytes.view.data;
    for (int64_t e = 0; e < count; e++) {
        const float want = keep[e] ? o0[e] / 0.5f : 0.0f;
        if (fabsf(o[e] - want) > 1e-6f * fabsf(want) + 1e-12f) {
            TU_CHECK(false, "impl %d element %lld: out %g, keep %u, undropped %g", impl, (long long)e, o[e], keep[e], o0[e]);
            break;
        }
    }
    tu_tensor_free(&bytes);
    fa_case_free(&c);
    fa_case_free(&c0);
    passed += tu_failures == before;
}

static bool same_bits(const tu_tensor *a, const tu_tensor *b) { return !memcmp(a->view.data, b->view.data, a->data_bytes); }

static void check_explicit(const char *spec, attnops_impl impl)
{
    const int before = tu_failures;
    fa_case_shape s;
    fa_case_parse(spec, &s);
    fa_case gen, ext;
    fa_case_init(&gen, &s, 6);
    fa_case_init(&ext, &s, 6);
    /* the generated mask as packed bits */
    const attnops_fa_params *p = &gen.fwd.p;
    int64_t count = 0;
    for (int64_t b = 0; b < gen.shape.B; b++)
        count += s.N1 * (s.layout == ATTNOPS_LAYOUT_TND ? gen.shape.seq_q[b] * gen.shape.seq_kv[b] : s.S1 * s.S2);
    const int64_t nbytes = (count + 7) / 8;
    tu_tensor bits = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, &nbytes, 0);
    attnops_dropout_mask_args a = {.seed = p->seed, .offset = p->offset, .keep_prob = p->keep_prob,
                                   .batch = s.B, .head_num = s.N1, .seq_q = s.S1, .seq_kv = s.S2,
                                   .actual_seq_qlen = p->actual_seq_qlen, .actual_seq_kvlen = p->actual_seq_kvlen,
                                   .bit_mask = &bits.view};
    TU_CHECK(attnops_dropout_mask(&a) == ATTNOPS_SUCCESS, "%s: %s", spec, attnops_last_error());
    ext.fwd.p.drop_mask = &bits.view, ext.bwd.p.drop_mask = &bits.view;
    ext.fwd.p.seed = ext.bwd.p.seed = 999; /* the explicit mask, not the stream, must decide */
    fa_case *cases[2] = {&gen, &ext};
    for (int k = 0; k < 2; k++) {
        TU_CHECK(fa_case_forward(cases[k], impl, 2, 0) == ATTNOPS_SUCCESS, "%s fwd: %s", spec, attnops_last_error());
        TU_CHECK(fa_case_backward(cases[k], impl, 2, 0) == ATTNOPS_SUCCESS, "%s bwd: %s", spec, attnops_last_error());
    }
    const struct { const char *n; tu_tensor *x, *y; } outs[] = {
        {"attention_out", &gen.out, &ext.out}, {"dq", &gen.dq, &ext.dq}, {"dk", &gen.dk, &ext.dk}, {"dv", &gen.dv, &ext.dv}};
    for (int i = 0; i < 4; i++)
        TU_CHECK(same_bits(outs[i].x, outs[i].y), "%s impl %d: explicit drop_mask differs in %s", spec, impl, outs[i].n);
    tu_tensor_free(&bits);
    fa_case_free(&gen);
    fa_case_free(&ext);
    passed += tu_failures == before;
}

static void check_errors(void)
{
    const int before = tu_failures;
    int64_t n = 10;
    tu_tensor bytes = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, &n, 0);
    tu_tensor_poison(&bytes, 0x5A);
    attnops_dropout_mask_args a = {.seed = 2, .keep_prob = 0.9, .batch = 1, .head_num = 1, .seq_q = 2, .seq_kv = 5};
    TU_CHECK(attnops_dropout_mask(NULL) == ATTNOPS_ERR_NULLPTR, "NULL args");
    TU_CHECK(attnops_dropout_mask(&a) == ATTNOPS_ERR_NULLPTR && strstr(attnops_last_error(), "byte_mask"),
             "no outputs: %s", attnops_last_error());
    a.byte_mask = &bytes.view;
    a.keep_prob = 0.0;
    TU_CHECK(attnops_dropout_mask(&a) == ATTNOPS_ERR_PARAM_INVALID && strstr(attnops_last_error(), "keep_prob"),
             "keep_prob 0: %s", attnops_last_error());
    a.keep_prob = 0.9, a.seq_kv = 6; /* needs 12 elements */
    TU_CHECK(attnops_dropout_mask(&a) == ATTNOPS_ERR_PARAM_INVALID && strstr(attnops_last_error(), "byte_mask"),
             "wrong size: %s", attnops_last_error());
    TU_CHECK(tu_tensor_untouched(&bytes, 0x5A), "a failed call wrote the mask");
    a.seq_kv = 5;
    TU_CHECK(attnops_dropout_mask(&a) == ATTNOPS_SUCCESS, "valid call: %s", attnops_last_error());
    TU_CHECK(!tu_tensor_untouched(&bytes, 0x5A), "the checker bites: a success wrote nothing");
    tu_tensor_free(&bytes);
    passed += tu_failures == before;
}

int main(void)
{
    tu_require_isa();
    const int64_t s1[] = {5, 5}, s2[] = {37, 37};
    attnops_dropout_mask_args a = {.seed = 11, .offset = 20, .keep_prob = 0.5, .batch = 2, .head_num = 3,
                                   .seq_q = 5, .seq_kv = 37};
    check_masks(&a, 2, 3, s1, s2, false, "padded");
    /* TND: real lengths q [7, 0, 33, 20], kv [5, 9, 17, 40] */
    const int64_t cq[] = {7, 7, 40, 60}, ckv[] = {5, 14, 31, 71}, t1[] = {7, 0, 33, 20}, t2[] = {5, 9, 17, 40};
    int64_t four = 4;
    tu_tensor lq = tu_tensor_new(ATTNOPS_DTYPE_I64, 1, &four, 0), lkv = tu_tensor_new(ATTNOPS_DTYPE_I64, 1, &four, 0);
    memcpy(lq.view.data, cq, sizeof cq);
    memcpy(lkv.view.data, ckv, sizeof ckv);
    attnops_dropout_mask_args t = {.seed = 5, .offset = 3, .keep_prob = 0.9, .head_num = 3,
                                   .actual_seq_qlen = &lq.view, .actual_seq_kvlen = &lkv.view};
    check_masks(&t, 4, 3, t1, t2, true, "TND");
    tu_tensor_free(&lq);
    tu_tensor_free(&lkv);
    check_applied(ATTNOPS_IMPL_REFERENCE);
    check_applied(ATTNOPS_IMPL_CPU);
    const char *explicit_specs[] = {
        "B=2,N1=2,N2=1,S1=33,S2=70,D=32,Dv=32,dtype=f32,layout=BSND,keep=0.7,seed=4,offset=16",
        "N1=2,N2=2,D=16,Dv=16,dtype=bf16,layout=TND,seqs=20:0:45,kvseqs=30:7:33,keep=0.5,seed=8,offset=0",
    };
    for (int i = 0; i < 2; i++) {
        check_explicit(explicit_specs[i], ATTNOPS_IMPL_REFERENCE);
        check_explicit(explicit_specs[i], ATTNOPS_IMPL_CPU);
    }
    check_errors();
    return tu_finish("test_dropout_mask", passed);
}
