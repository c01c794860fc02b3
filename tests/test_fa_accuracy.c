/* Fast CPU kernel vs the double reference, forward and backward, over shapes
 * that straddle the 64-wide tiles (1, 7, 63, 64, 65, 97, 128, 129, 1025),
 * odd head dims, Dv < D, GQA, all four layouts, three dtypes and
 * non-contiguous views; then every sparse mode (0-6) x mask shape x pse
 * type with S1 != S2, band tokens, prefixes, fully masked rows in both
 * behaviours.  Tolerances come from the shared rule (verify/fa_case.c),
 * never from the case.
 *
 * Usage: test_fa_accuracy [--cases N] [--masked-cases N] [--tnd-cases N] [--threads T]
 *        test_fa_accuracy --case 'B=1,N1=2,...' --seed S     (reproduce one case)
 *        --break-kernel: run with tests/support/broken_kernel.h installed (the
 *        comparisons must report a backward MISMATCH) */
#include <stdlib.h>
#include <string.h>

#include "broken_kernel.h"
#include "fa_case.h"
#include "suite.h"

static int threads = 2;

/* Runs one case; returns true when every comparison passed. */
static bool run_case(const fa_case_shape *s, uint64_t seed)
{
    char desc[384], repro[512], label[448];
    fa_case_describe(s, desc, sizeof desc);
    snprintf(repro, sizeof repro, "test_fa_accuracy --case '%s' --seed %llu", desc, (unsigned long long)seed);
    const int before = tu_failures;
    fa_case ref, fast;
    fa_case_init(&ref, s, seed);
    fa_case_init(&fast, s, seed);
    fa_output_check rows[FA_CASE_MAX_BWD_OUTPUTS];

    attnops_status st = fa_case_forward(&ref, ATTNOPS_IMPL_REFERENCE, threads, 0);
    TU_CHECK(st == ATTNOPS_SUCCESS, "%s: reference forward failed: %s", desc, attnops_last_error());
    /* FP8 has no fast forward (impl CPU refuses it; AUTO runs the reference): its backward is what is tested */
    const bool fp8 = s->dtype == ATTNOPS_DTYPE_F8_E4M3FN || s->dtype == ATTNOPS_DTYPE_F8_E5M2;
    st = fa_case_forward(&fast, fp8 ? ATTNOPS_IMPL_AUTO : ATTNOPS_IMPL_CPU, threads, 0);
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
                        &fast.dq, &fast.dk, &fast.dv, &fast.qr, &fast.kr, &fast.dqr, &fast.dkr};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]->block) TU_CHECK(tu_canaries_ok(all[i], desc), "canary %s", desc);
    fa_case_free(&ref);
    fa_case_free(&fast);
    if (tu_failures == before) printf("ok   %s\n", desc);
    return tu_failures == before;
}

/* A random shape from the tile-straddling lists, sized so the double
 * reference stays fast (long sequences get one small head). */
static fa_case_shape random_shape(tu_rng *r)
{
    static const int64_t seqs[] = {1, 7, 63, 64, 65, 97, 127, 128, 129, 257};
    static const int64_t dims[] = {16, 59, 64, 128, 177, 256};
    static const int64_t groups[] = {1, 2, 4, 8};
    static const attnops_dtype dtypes[] = {ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16};
    fa_case_shape s = {.pse_type = 1};
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

static int64_t range(tu_rng *r, int64_t lo, int64_t hi) { return lo + (int64_t)(tu_next(r) % (uint64_t)(hi - lo + 1)); }

/* A random masked / biased case: any sparse mode 0-6 with a mask shape it
 * accepts, valid band tokens (some negative), any pse form its type allows. */
static fa_case_shape random_masked_shape(tu_rng *r)
{
    static const int64_t seqs[] = {1, 7, 63, 64, 65, 97, 127, 128, 129, 200};
    static const fa_case_mask full_masks[] = {FA_CASE_MASK_SS, FA_CASE_MASK_11SS, FA_CASE_MASK_B1SS,
                                              FA_CASE_MASK_BNSS};
    static const fa_case_pse pses[] = {FA_CASE_PSE_NONE, FA_CASE_PSE_BNSS,     FA_CASE_PSE_BN1S,
                                       FA_CASE_PSE_1NSS, FA_CASE_PSE_SLOPES_N, FA_CASE_PSE_SLOPES_BN};
    fa_case_shape s = random_shape(r);
    s.S1 = tu_pick(r, seqs, 10), s.S2 = tu_pick(r, seqs, 10);
    s.sparse_mode = range(r, 0, 6);
    s.mask = s.sparse_mode <= 1 ? full_masks[tu_next(r) % 4] : FA_CASE_MASK_COMPRESSED;
    if (s.sparse_mode == 5) s.mask = full_masks[2 + tu_next(r) % 2]; /* per-batch: B1SS or BNSS */
    if (s.sparse_mode == 0 || s.sparse_mode == 4) {
        /* tokens after the mode-4 correction (p, n) must satisfy -p <= S2, -n <= S1, p + n >= 0 */
        int64_t p = range(r, -s.S2 / 2, s.S1 + 4), n = range(r, -p > -s.S1 ? -p : -s.S1, s.S2 + 4);
        if (n < -p) n = -p;
        s.pre = s.sparse_mode == 4 ? p - s.S1 + s.S2 : p;
        s.next = s.sparse_mode == 4 ? n + s.S1 - s.S2 : n;
        if (tu_next(r) % 4 == 0) s.pre = s.next = 2147483647;
    }
    s.inner_precise = tu_next(r) % 4 == 0 ? 2 : 0;
    s.pse = pses[tu_next(r) % 6];
    if (s.pse == FA_CASE_PSE_SLOPES_N || s.pse == FA_CASE_PSE_SLOPES_BN) {
        s.pse_type = range(r, 2, 3);
        s.q_start = range(r, 0, 3), s.kv_start = range(r, 0, 3);
    } else {
        s.pse_type = range(r, 0, 1);
    }
    return s;
}

/* A random TND batch: 1-6 sequences of tile-straddling lengths (some 0),
 * modes that need no per-batch token tuning, sometimes generated ALiBi. */
static fa_case_shape random_tnd_shape(tu_rng *r)
{
    static const int64_t lens[] = {0, 1, 7, 63, 64, 65, 129, 200};
    static const int64_t modes[] = {-1, 1, 2, 3, 6};
    fa_case_shape s = random_shape(r);
    s.layout = ATTNOPS_LAYOUT_TND;
    s.pad = 0;
    s.nseq = (int)range(r, 1, 6);
    for (int b = 0; b < s.nseq; b++) s.seq_q[b] = tu_pick(r, lens, 8), s.seq_kv[b] = tu_pick(r, lens, 8);
    if (s.D > 128) s.D = 64, s.Dv = s.Dv > 64 ? 64 : s.Dv;
    const int64_t mode = modes[tu_next(r) % 5];
    if (mode >= 0) {
        s.sparse_mode = mode;
        s.mask = mode == 1 ? FA_CASE_MASK_SS : FA_CASE_MASK_COMPRESSED;
    }
    bool empty = false;
    for (int b = 0; b < s.nseq; b++) empty |= s.seq_q[b] == 0 || s.seq_kv[b] == 0;
    if (!empty && tu_next(r) % 3 == 0) s.pse = FA_CASE_PSE_SLOPES_N, s.pse_type = range(r, 2, 3);
    return s;
}

/* Fixed edges first: exact tiles, one off either side, GQA, Dv < D, and
 * the mask behaviours the random draw may miss. */
static const char *const fixed_cases[] = {
    "B=1,N1=1,N2=1,S1=128,S2=64,D=64,Dv=64,dtype=f32,layout=BNSD",
    "B=1,N1=2,N2=1,S1=127,S2=65,D=59,Dv=59,dtype=f32,layout=BSND,pad=3",
    "B=2,N1=4,N2=2,S1=129,S2=63,D=177,Dv=128,dtype=bf16,layout=BSH",
    "B=1,N1=8,N2=1,S1=1,S2=129,D=16,Dv=16,dtype=f16,layout=SBH,pad=3",
    "B=1,N1=2,N2=2,S1=129,S2=1,D=256,Dv=100,dtype=bf16,layout=BNSD,scale=0.37",
    "B=1,N1=1,N2=1,S1=1025,S2=1025,D=64,Dv=64,dtype=bf16,layout=BSND",
    /* mode 3 with S1 > S2: the first rows attend to nothing -> sentinels */
    "B=2,N1=2,N2=1,S1=200,S2=70,D=32,Dv=32,dtype=f32,layout=BNSD,mode=3,mask=compressed",
    /* mode 1 with fully masked rows: uniform weights, then forced sentinels */
    "B=1,N1=2,N2=2,S1=100,S2=90,D=32,Dv=16,dtype=f32,layout=BSH,mode=1,mask=bnss",
    "B=1,N1=2,N2=2,S1=100,S2=90,D=32,Dv=16,dtype=bf16,layout=BSH,mode=1,mask=b1ss,inner_precise=2",
    /* band with a negative next_tokens, right-down origin */
    "B=1,N1=2,N2=1,S1=150,S2=260,D=64,Dv=64,dtype=f16,layout=SBH,mode=4,mask=compressed,pre=120,next=-20",
    /* prefix, compressed mask */
    "B=2,N1=2,N2=2,S1=90,S2=130,D=48,Dv=48,dtype=bf16,layout=BNSD,mode=6,mask=compressed",
    /* compressed ALiBi (last 1024 rows) under a causal mask */
    "B=1,N1=2,N2=1,S1=1100,S2=1100,D=16,Dv=16,dtype=bf16,layout=BSND,mode=3,mask=compressed,pse=bnhs,pse_type=1",
    "B=1,N1=2,N2=2,S1=1100,S2=1100,D=16,Dv=16,dtype=f32,layout=BNSD,mode=2,mask=compressed,pse=1nhs,pse_type=0",
    /* generated ALiBi with start offsets */
    "B=2,N1=4,N2=2,S1=70,S2=130,D=32,Dv=32,dtype=f32,layout=BSND,pse=slopes_bn,pse_type=3,q_start=5,kv_start=2",
    /* TND: the seed's lengths, empty batches, a single token, trailing zeros */
    "N1=4,N2=2,D=64,Dv=64,dtype=f16,layout=TND,seqs=114:132:14:287",
    "N1=2,N2=2,D=32,Dv=32,dtype=bf16,layout=TND,seqs=0:5:0:3",
    "N1=2,N2=1,D=16,Dv=16,dtype=f32,layout=TND,seqs=1",
    "N1=2,N2=1,D=16,Dv=8,dtype=f32,layout=TND,seqs=50:70:0:0",
    "N1=2,N2=2,D=32,Dv=32,dtype=f32,layout=TND,seqs=30:0:40,kvseqs=20:10:45",
    /* TND with every mode it allows */
    "N1=4,N2=4,D=64,Dv=64,dtype=f16,layout=TND,seqs=114:132:14:287,mode=3,mask=compressed",
    "N1=2,N2=1,D=32,Dv=32,dtype=bf16,layout=TND,seqs=70:130:20,kvseqs=90:130:25,mode=2,mask=compressed",
    "N1=2,N2=1,D=32,Dv=32,dtype=f32,layout=TND,seqs=70:130:20,kvseqs=90:130:25,mode=4,mask=compressed,pre=30,next=10",
    "N1=2,N2=2,D=32,Dv=32,dtype=f32,layout=TND,seqs=60:100,kvseqs=80:100,mode=0,mask=ss,pre=40,next=15",
    "N1=2,N2=2,D=32,Dv=32,dtype=bf16,layout=TND,seqs=60:100,kvseqs=80:120,mode=1,mask=ss",
    "N1=2,N2=1,D=32,Dv=32,dtype=f32,layout=TND,seqs=60:100:30,kvseqs=80:100:50,mode=6,mask=compressed",
    "N1=2,N2=1,D=32,Dv=32,dtype=f32,layout=TND,seqs=60:100:30,kvseqs=80:100:70,mode=7,mask=compressed,pre=100,next=-10",
    "N1=2,N2=2,D=32,Dv=32,dtype=bf16,layout=TND,seqs=0:40:100,kvseqs=0:60:100,mode=8,mask=compressed,pre=70,next=30",
    "N1=4,N2=2,D=32,Dv=32,dtype=f32,layout=TND,seqs=40:100:65,mode=8,mask=compressed,pre=40,next=0,pse=slopes_n,pse_type=2",
    "N1=2,N2=2,D=32,Dv=32,dtype=f32,layout=TND,seqs=40:130,kvseqs=20:130,mode=3,mask=compressed,inner_precise=2",
    /* TND with the compressed ALiBi (S1_b = S2_b), max S above and below 1024 */
    "N1=2,N2=1,D=16,Dv=16,dtype=bf16,layout=TND,seqs=300:700:1100,mode=3,mask=compressed,pse=bnhs,pse_type=1",
    "N1=2,N2=2,D=16,Dv=16,dtype=f32,layout=TND,seqs=100:300,mode=2,mask=compressed,pse=1nhs,pse_type=0",
    /* dropout: every layout, TND, with masks and pse, keep 0.9 / 0.5 / 0.1 */
    "B=2,N1=2,N2=1,S1=70,S2=90,D=32,Dv=32,dtype=f32,layout=BNSD,keep=0.9,seed=2,offset=0",
    "B=1,N1=4,N2=2,S1=129,S2=65,D=64,Dv=48,dtype=bf16,layout=BSND,keep=0.5,seed=1234,offset=32",
    "B=2,N1=2,N2=2,S1=63,S2=130,D=16,Dv=16,dtype=f16,layout=BSH,keep=0.1,seed=7,offset=5",
    "B=1,N1=2,N2=1,S1=100,S2=100,D=32,Dv=32,dtype=f32,layout=SBH,keep=0.5,seed=3,offset=16,mode=2,mask=compressed,pse=slopes_n,pse_type=2",
    "N1=4,N2=4,D=32,Dv=32,dtype=f16,layout=TND,seqs=114:132:14:287,mode=3,mask=compressed,keep=0.9,seed=2,offset=0",
    "N1=2,N2=1,D=32,Dv=32,dtype=bf16,layout=TND,seqs=0:5:0:3,keep=0.5,seed=9,offset=48",
    /* MLA rope: the seed's D = 128 + 64 / Dv = 128 in bf16, odd rope dims, with masks, pse, dropout, TND */
    "B=1,N1=4,N2=1,S1=130,S2=130,D=128,rope=64,Dv=128,dtype=bf16,layout=BSND",
    "B=2,N1=2,N2=2,S1=97,S2=65,D=32,rope=7,Dv=24,dtype=f32,layout=BSH,pad=3,mode=2,mask=compressed",
    "B=1,N1=2,N2=1,S1=70,S2=90,D=48,rope=16,Dv=48,dtype=f16,layout=SBH,keep=0.5,seed=3,offset=0,pse=slopes_n,pse_type=3",
    "N1=2,N2=2,D=64,rope=32,Dv=64,dtype=bf16,layout=TND,seqs=40:0:100,mode=3,mask=compressed",
    /* short queries (S1 x group <= 16: the split-KV kernel's few-row path, attn/attn_plan.c): decode and
     * speculative steps across its 128-key tiles and 512-key splits, causal both ways, a band, GQA to 16,
     * MLA, TND, softcap, bottom-right ALiBi; then shapes just outside it (ALiBi on another diagonal, 17 rows,
     * a row with no key) that stay on the tiled forward */
    "B=2,N1=8,N2=2,S1=1,S2=1025,D=128,Dv=128,dtype=bf16,layout=BSND",
    /* the few-row P.V's widths: a whole pass and a step (Dv 80); 3, 2, 4 steps below (48, 32, 59) */
    "B=1,N1=2,N2=1,S1=4,S2=100,D=80,Dv=80,dtype=f16,layout=BSH,mode=3,mask=compressed",
    "B=1,N1=16,N2=1,S1=1,S2=513,D=64,Dv=48,dtype=f32,layout=BSH,pad=3",
    "B=2,N1=4,N2=1,S1=4,S2=700,D=64,Dv=64,dtype=f16,layout=BNSD,mode=3,mask=compressed",
    "B=1,N1=2,N2=2,S1=7,S2=129,D=59,Dv=59,dtype=f32,layout=SBH,mode=2,mask=compressed",
    "B=2,N1=4,N2=2,S1=8,S2=300,D=32,Dv=32,dtype=bf16,layout=BSND,mode=4,mask=compressed,pre=100,next=0",
    "B=1,N1=8,N2=1,S1=2,S2=1,D=16,Dv=16,dtype=f16,layout=BNSD,mode=2,mask=compressed",
    "B=1,N1=16,N2=1,S1=1,S2=640,D=128,rope=64,Dv=128,dtype=bf16,layout=BSND",
    "N1=4,N2=1,D=64,Dv=64,dtype=bf16,layout=TND,seqs=1:4:2,kvseqs=700:4:129,mode=3,mask=compressed",
    "N1=2,N2=2,D=32,Dv=32,dtype=f32,layout=TND,seqs=3:1,kvseqs=1:512",
    "B=2,N1=4,N2=1,S1=4,S2=300,D=64,Dv=64,dtype=bf16,layout=BSND,mode=3,mask=compressed,softcap=1",
    "B=2,N1=4,N2=2,S1=2,S2=700,D=32,Dv=32,dtype=f32,layout=BNSD,pse=slopes_bn,pse_type=2,q_start=698,kv_start=0",
    "B=1,N1=8,N2=8,S1=1,S2=130,D=32,Dv=32,dtype=f16,layout=BSH,pse=slopes_n,pse_type=2,q_start=0,kv_start=0",
    "B=1,N1=17,N2=1,S1=1,S2=300,D=32,Dv=32,dtype=f32,layout=BSND",
    "B=1,N1=4,N2=1,S1=4,S2=2,D=32,Dv=32,dtype=bf16,layout=BSND,mode=3,mask=compressed",
    /* soft-capping (softcap 0.7-2: most scores in tanh's curved part): every pse order (the bias after the
     * cap), masks with fully masked rows, TND, dropout, GQA, the three dtypes, ragged tiles */
    "B=1,N1=4,N2=2,S1=129,S2=65,D=64,Dv=48,dtype=f32,layout=BSND,softcap=1",
    "B=2,N1=2,N2=1,S1=97,S2=130,D=32,Dv=32,dtype=bf16,layout=BNSD,mode=3,mask=compressed,softcap=0.7",
    "B=1,N1=2,N2=2,S1=100,S2=90,D=32,Dv=16,dtype=f16,layout=BSH,mode=1,mask=bnss,softcap=2",
    "B=1,N1=2,N2=2,S1=100,S2=90,D=32,Dv=16,dtype=f32,layout=BSND,mode=1,mask=b1ss,inner_precise=2,softcap=1",
    "B=2,N1=2,N2=1,S1=70,S2=90,D=32,Dv=32,dtype=f32,layout=SBH,pse=bnss,pse_type=1,softcap=1.5",
    "B=1,N1=2,N2=1,S1=70,S2=90,D=32,Dv=32,dtype=bf16,layout=BNSD,pse=bn1s,pse_type=0,softcap=1",
    "B=2,N1=4,N2=2,S1=70,S2=130,D=32,Dv=32,dtype=f32,layout=BSND,pse=slopes_bn,pse_type=3,q_start=5,kv_start=2,softcap=1",
    "B=1,N1=2,N2=1,S1=150,S2=260,D=64,Dv=64,dtype=f16,layout=BNSD,mode=4,mask=compressed,pre=120,next=-20,softcap=1",
    "N1=4,N2=2,D=32,Dv=32,dtype=bf16,layout=TND,seqs=114:132:14:287,mode=3,mask=compressed,softcap=1",
    "B=1,N1=4,N2=2,S1=129,S2=65,D=64,Dv=48,dtype=f32,layout=BSND,keep=0.5,seed=1234,offset=32,softcap=1",
    /* attention sinks (one logit per head in every softmax): the tiled forward and the few-row one, GQA,
     * causal with fully masked rows both ways (uniform -40000 rows and the sentinels), TND, dropout, ALiBi */
    "B=2,N1=4,N2=2,S1=129,S2=65,D=64,Dv=48,dtype=f32,layout=BSND,sink=1",
    "B=1,N1=4,N2=1,S1=97,S2=130,D=32,Dv=32,dtype=bf16,layout=BNSD,mode=3,mask=compressed,sink=1",
    "B=1,N1=2,N2=2,S1=100,S2=90,D=32,Dv=16,dtype=f16,layout=BSH,mode=1,mask=bnss,sink=1",
    "B=1,N1=2,N2=2,S1=100,S2=90,D=32,Dv=16,dtype=f32,layout=BSND,mode=1,mask=b1ss,inner_precise=2,sink=1",
    "N1=4,N2=2,D=32,Dv=32,dtype=bf16,layout=TND,seqs=114:0:14:287,mode=3,mask=compressed,sink=1",
    "B=1,N1=4,N2=2,S1=70,S2=65,D=64,Dv=48,dtype=f32,layout=BSND,keep=0.5,seed=12,offset=32,sink=1",
    "B=2,N1=8,N2=2,S1=1,S2=1025,D=128,Dv=128,dtype=bf16,layout=BSND,sink=1",
    "B=2,N1=4,N2=2,S1=2,S2=700,D=32,Dv=32,dtype=f32,layout=BNSD,pse=slopes_bn,pse_type=2,q_start=698,kv_start=0,sink=1",
    /* FP8 (spec 6): both formats and output dtypes, ragged 128-blocks, GQA, masks, pse, dropout */
    "B=1,N1=4,N2=2,S1=200,S2=150,D=64,Dv=64,dtype=f8_e4m3fn,out=f16,layout=BNSD",
    "B=2,N1=2,N2=1,S1=129,S2=257,D=128,Dv=96,dtype=f8_e5m2,out=bf16,layout=BSND,pad=3",
    "B=1,N1=2,N2=2,S1=300,S2=300,D=32,Dv=32,dtype=f8_e4m3fn,out=bf16,layout=BSH,mode=3,mask=compressed,pse=slopes_n,pse_type=2",
    "B=1,N1=2,N2=1,S1=140,S2=140,D=48,Dv=48,dtype=f8_e5m2,out=f16,layout=SBH,keep=0.5,seed=4,offset=16,pse=bnss,pse_type=1",
    "B=1,N1=2,N2=1,S1=100,S2=90,D=32,Dv=32,dtype=f8_e4m3fn,out=f16,layout=BNSD,mode=1,mask=bnss,inner_precise=2",
};

/* The fixed cases, the i-th with data seed seed + i: the count that passed,
 * or -1 when one does not parse. */
static int run_fixed_cases(uint64_t seed)
{
    int passed = 0;
    for (size_t i = 0; i < sizeof fixed_cases / sizeof fixed_cases[0]; i++) {
        fa_case_shape s;
        if (!fa_case_parse(fixed_cases[i], &s)) {
            fprintf(stderr, "bad fixed case '%s'\n", fixed_cases[i]);
            return -1;
        }
        passed += run_case(&s, seed + i);
    }
    return passed;
}

int main(int argc, char **argv)
{
    tu_require_isa();
    int ncases = 48, nmasked = 60, ntnd = 24, passed = 0;
    const char *one = NULL;
    uint64_t seed = tu_suite_seed();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cases") && i + 1 < argc) ncases = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--masked-cases") && i + 1 < argc) nmasked = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tnd-cases") && i + 1 < argc) ntnd = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--case") && i + 1 < argc) one = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--break-kernel")) broken_kernel_install();
    }
    printf("test_fa_accuracy: suite seed %llu, %d threads, isa %s\n", (unsigned long long)seed, threads,
           attnops_cpu_isa());
    if (one) {
        fa_case_shape s;
        if (!fa_case_parse(one, &s)) {
            fprintf(stderr, "bad --case '%s'\n", one);
            return 2;
        }
        passed += run_case(&s, seed);
        return tu_finish("test_fa_accuracy", passed);
    }

    const int fixed_passed = run_fixed_cases(seed);
    if (fixed_passed < 0) return 2;
    passed += fixed_passed;
    tu_rng r = tu_rng_make(seed);
    for (int i = 0; i < ncases; i++) {
        fa_case_shape s = random_shape(&r);
        passed += run_case(&s, seed + 1000 + (uint64_t)i);
    }
    for (int i = 0; i < nmasked; i++) {
        fa_case_shape s = random_masked_shape(&r);
        passed += run_case(&s, seed + 2000 + (uint64_t)i);
    }
    for (int i = 0; i < ntnd; i++) {
        fa_case_shape s = random_tnd_shape(&r);
        passed += run_case(&s, seed + 3000 + (uint64_t)i);
    }
    return tu_finish("test_fa_accuracy", passed);
}
