/* attnops_dropout_mask: the mask at every element equals the stream byte at
 * the spec's index (formula computed here), padded and TND; the bit mask
 * packs the byte mask LSB first with a zero tail; and the FlashAttention
 * operators apply exactly this mask (V = identity makes attention_out show
 * P * keep / keep_prob element by element), in both implementations; and
 * the same mask given as an explicit drop_mask (spec 5.6) reproduces the
 * generated one bit for bit, forward and backward, padded and TND; and a
 * dropout block (attnops_fa_params.dropout_*: the call is a block of a
 * larger one) drops exactly the whole call's elements at its positions -- its
 * outputs equal those of the same call given that slice of the whole call's
 * mask as drop_mask, bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/philox.h"
#include "fa_case.h"
#include "testutil.h"
#include "suite.h"

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

/* A dropout block and where it lies in the whole call.  Per batch b of the
 * block: whole lengths q_len[b] x kv_len[b] (padded: index 0 for all),
 * starts q0[b], kv0[b] (nq0 / nkv0 entries: 0, 1 or B). */
typedef struct block_case {
    const char *spec;
    int64_t heads, head0;
    int64_t q_len[4], kv_len[4];
    int64_t q0[4], kv0[4];
    int nq0, nkv0;
} block_case;

static tu_tensor i64_list(const int64_t *v, int64_t n)
{
    tu_tensor t = tu_tensor_new(ATTNOPS_DTYPE_I64, 1, &n, 0);
    memcpy(t.view.data, v, (size_t)n * sizeof *v);
    return t;
}

static void set_block(attnops_fa_params *p, const block_case *bc, const tu_tensor lists[4])
{
    p->dropout_head_num = bc->heads, p->dropout_head_start = bc->head0;
    p->dropout_seq_qlen = &lists[0].view, p->dropout_seq_kvlen = &lists[1].view;
    p->dropout_q_start = bc->nq0 ? &lists[2].view : NULL, p->dropout_kv_start = bc->nkv0 ? &lists[3].view : NULL;
}

static int64_t start_of(const int64_t *v, int n, int64_t b) { return n == 0 ? 0 : v[n == 1 ? 0 : b]; }

static void check_block(const block_case *bc, attnops_impl impl)
{
    const int before = tu_failures;
    fa_case_shape s;
    TU_CHECK(fa_case_parse(bc->spec, &s), "bad spec %s", bc->spec);
    const bool tnd = s.layout == ATTNOPS_LAYOUT_TND;
    fa_case gen, ext, local;
    fa_case_init(&gen, &s, 9);
    fa_case_init(&ext, &s, 9);
    fa_case_init(&local, &s, 9);
    const int64_t B = gen.shape.B, nb = tnd ? B : 1;
    /* the whole call's mask, by the public mask call (its stream order is checked above) */
    int64_t cum_q[4], cum_kv[4], whole_count = 0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t lq = bc->q_len[tnd ? b : 0], lkv = bc->kv_len[tnd ? b : 0];
        cum_q[b] = (b ? cum_q[b - 1] : 0) + lq, cum_kv[b] = (b ? cum_kv[b - 1] : 0) + lkv;
        whole_count += bc->heads * lq * lkv;
    }
    tu_tensor lists[4] = {i64_list(tnd ? cum_q : bc->q_len, nb), i64_list(tnd ? cum_kv : bc->kv_len, nb),
                          i64_list(bc->q0, bc->nq0 ? bc->nq0 : 1), i64_list(bc->kv0, bc->nkv0 ? bc->nkv0 : 1)};
    tu_tensor whole = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, &whole_count, 0);
    const attnops_fa_params *p = &gen.fwd.p;
    attnops_dropout_mask_args a = {.seed = p->seed, .offset = p->offset, .keep_prob = p->keep_prob,
                                   .batch = B, .head_num = bc->heads, .seq_q = bc->q_len[0], .seq_kv = bc->kv_len[0],
                                   .actual_seq_qlen = tnd ? &lists[0].view : NULL,
                                   .actual_seq_kvlen = tnd ? &lists[1].view : NULL, .byte_mask = &whole.view};
    TU_CHECK(attnops_dropout_mask(&a) == ATTNOPS_SUCCESS, "%s whole mask: %s", bc->spec, attnops_last_error());
    /* its slice, packed in the block's own drop_mask order */
    int64_t count = 0;
    for (int64_t b = 0; b < B; b++) count += s.N1 * gen.shape.seq_q[tnd ? b : 0] * gen.shape.seq_kv[tnd ? b : 0];
    if (!tnd) count = B * s.N1 * s.S1 * s.S2;
    const int64_t nbytes = (count + 7) / 8;
    tu_tensor bits = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, &nbytes, 0);
    memset(bits.view.data, 0, (size_t)nbytes);
    uint8_t *pk = bits.view.data;
    const uint8_t *wm = whole.view.data;
    int64_t e = 0, whole_base = 0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t s1 = tnd ? gen.shape.seq_q[b] : s.S1, s2 = tnd ? gen.shape.seq_kv[b] : s.S2;
        const int64_t w1 = bc->q_len[tnd ? b : 0], w2 = bc->kv_len[tnd ? b : 0];
        const int64_t i0 = start_of(bc->q0, bc->nq0, b), j0 = start_of(bc->kv0, bc->nkv0, b);
        for (int64_t h = 0; h < s.N1; h++)
            for (int64_t i = 0; i < s1; i++)
                for (int64_t j = 0; j < s2; j++, e++)
                    if (wm[whole_base + ((h + bc->head0) * w1 + i + i0) * w2 + j + j0]) pk[e / 8] |= (uint8_t)(1u << (e % 8));
        whole_base += bc->heads * w1 * w2;
    }
    set_block(&gen.fwd.p, bc, lists);
    set_block(&gen.bwd.p, bc, lists);
    ext.fwd.p.drop_mask = &bits.view, ext.bwd.p.drop_mask = &bits.view;
    ext.fwd.p.seed = ext.bwd.p.seed = 999; /* the explicit mask, not the stream, must decide */
    fa_case *cases[3] = {&gen, &ext, &local};
    for (int k = 0; k < 3; k++) {
        TU_CHECK(fa_case_forward(cases[k], impl, 2, 0) == ATTNOPS_SUCCESS, "%s fwd: %s", bc->spec, attnops_last_error());
        TU_CHECK(fa_case_backward(cases[k], impl, 2, 0) == ATTNOPS_SUCCESS, "%s bwd: %s", bc->spec, attnops_last_error());
    }
    const struct { const char *n; tu_tensor *x, *y, *z; } outs[] = {{"attention_out", &gen.out, &ext.out, &local.out},
        {"dq", &gen.dq, &ext.dq, &local.dq}, {"dk", &gen.dk, &ext.dk, &local.dk}, {"dv", &gen.dv, &ext.dv, &local.dv}};
    for (int i = 0; i < 4; i++) {
        TU_CHECK(same_bits(outs[i].x, outs[i].y), "%s impl %d: the dropout block's %s differs from the whole call's "
                 "mask sliced", bc->spec, impl, outs[i].n);
        /* the check bites: the block's own stream (no dropout block) drops other elements */
        TU_CHECK(!same_bits(outs[i].x, outs[i].z), "%s impl %d: %s is the same with and without the dropout block",
                 bc->spec, impl, outs[i].n);
    }
    for (int k = 0; k < 4; k++) tu_tensor_free(&lists[k]);
    tu_tensor_free(&whole);
    tu_tensor_free(&bits);
    fa_case_free(&gen);
    fa_case_free(&ext);
    fa_case_free(&local);
    passed += tu_failures == before;
}

/* Each refused dropout block: its status, the argument named, no output written. */
static void check_block_errors(void)
{
    const int before = tu_failures;
    fa_case_shape s;
    fa_case_parse("B=2,N1=2,N2=1,S1=12,S2=20,D=16,Dv=16,dtype=f32,layout=BNSD,keep=0.6,seed=4,offset=16", &s);
    fa_case c;
    fa_case_init(&c, &s, 3);
    const int64_t q_len[] = {40}, kv_len[] = {37}, q0[] = {5, 28}, kv0[] = {9}, bad_q0[] = {29}, huge_len[] = {INT64_C(1) << 40};
    tu_tensor lq = i64_list(q_len, 1), lkv = i64_list(kv_len, 1), sq = i64_list(q0, 2), skv = i64_list(kv0, 1),
              sbad = i64_list(bad_q0, 1), huge = i64_list(huge_len, 1);
    const int64_t nbytes = 2 * 2 * 12 * 20 / 8;
    tu_tensor bits = tu_tensor_new(ATTNOPS_DTYPE_U8, 1, &nbytes, 0);
    const struct { const char *what; attnops_status status; const char *names; } cases[] = {
        {"lists without dropout_head_num", ATTNOPS_ERR_PARAM_INVALID, "dropout_seq_qlen"},
        {"head start past the heads", ATTNOPS_ERR_PARAM_INVALID, "dropout_head_start"},
        {"no key lengths", ATTNOPS_ERR_NULLPTR, "dropout_seq_kvlen"},
        {"query rows past the whole call's", ATTNOPS_ERR_PARAM_INVALID, "dropout_q_start"},
        {"with drop_mask", ATTNOPS_ERR_PARAM_INVALID, "drop_mask"},
        {"a whole length past INT32_MAX", ATTNOPS_ERR_PARAM_INVALID, "dropout_seq_qlen[0]"},
    };
    for (int k = 0; k < 6; k++) {
        attnops_fa_params *p = &c.fwd.p;
        p->dropout_head_num = 5, p->dropout_head_start = 3;
        p->dropout_seq_qlen = &lq.view, p->dropout_seq_kvlen = &lkv.view;
        p->dropout_q_start = &sq.view, p->dropout_kv_start = &skv.view;
        p->drop_mask = NULL;
        switch (k) {
        case 0: p->dropout_head_num = 0, p->dropout_head_start = 0; break;
        case 1: p->dropout_head_start = 4; break;
        case 2: p->dropout_seq_kvlen = NULL; break;
        case 3: p->dropout_q_start = &sbad.view; break;
        case 4: p->drop_mask = &bits.view; break;
        case 5: p->dropout_seq_qlen = &huge.view; break;
        }
        tu_tensor_poison(&c.out, 0x6B);
        const attnops_status st = fa_case_forward(&c, ATTNOPS_IMPL_AUTO, 1, 0);
        TU_CHECK(st == cases[k].status && strstr(attnops_last_error(), cases[k].names) &&
                 strstr(attnops_last_error(), "FlashAttentionScore"), "%s: status %d, '%s'", cases[k].what, st,
                 attnops_last_error());
        TU_CHECK(tu_tensor_untouched(&c.out, 0x6B), "%s: a refused call wrote attention_out", cases[k].what);
    }
    c.fwd.p.drop_mask = NULL, c.fwd.p.dropout_seq_qlen = &lq.view;
    TU_CHECK(fa_case_forward(&c, ATTNOPS_IMPL_AUTO, 1, 0) == ATTNOPS_SUCCESS, "the valid block is refused: %s",
             attnops_last_error());
    tu_tensor *all[] = {&lq, &lkv, &sq, &skv, &sbad, &huge, &bits};
    for (int k = 0; k < 7; k++) tu_tensor_free(all[k]);
    fa_case_free(&c);
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
    const block_case blocks[] = {
        /* padded, per-batch query starts, one key start for both batches, unaligned whole S2 */
        {"B=2,N1=2,N2=1,S1=12,S2=20,D=16,Dv=16,dtype=f32,layout=BSND,keep=0.6,seed=4,offset=16", 5, 2, {40}, {37},
         {5, 28}, {9}, 2, 1},
        {"B=1,N1=4,N2=2,S1=16,S2=16,D=16,Dv=16,dtype=bf16,layout=BNSD,keep=0.8,seed=7,offset=0", 8, 4, {64}, {64},
         {48}, {16}, 1, 1},
        /* TND with an empty query batch; whole lengths q 30, 10, 25 and kv 33, 12, 25 */
        {"N1=2,N2=2,D=16,Dv=16,dtype=f32,layout=TND,seqs=12:0:9,kvseqs=20:5:16,keep=0.5,seed=8,offset=32", 3, 1,
         {30, 10, 25}, {33, 12, 25}, {3, 0, 16}, {4, 7, 9}, 3, 3},
    };
    for (int i = 0; i < 3; i++) {
        check_block(&blocks[i], ATTNOPS_IMPL_REFERENCE);
        check_block(&blocks[i], ATTNOPS_IMPL_CPU);
    }
    check_block_errors();
    check_errors();
    return tu_finish("test_dropout_mask", passed);
}
