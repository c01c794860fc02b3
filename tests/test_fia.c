/* FusedInferAttentionScore from C, per ISA: the fast split-KV kernel against
 * the golden (the shared comparator's attention tolerance) on decode and
 * prompt steps over contiguous and paged caches (verify/fia_case.h: shuffled
 * blocks), GQA, per-batch lengths, a causal prompt and int8 caches, softcap and
 * ALiBi (the attnops extensions, and their refusals); prompts of more than
 * 16 rows on bf16 caches, paged and with lengths (the bf16 tile GEMMs: odd
 * head dims, Dv != D, TND, rope); its bits for 1 and 2
 * threads; canaries around every output (fia_case_run); a refused call
 * writes nothing.  (The golden against an independent float64 oracle, every
 * rule, is python/tests/test_fia.py.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fia/fia_problem.h"
#include "fia_case.h"
#include "suite.h"

typedef struct fia_test {
    const char *name;
    fia_case_spec spec;
} fia_test;

#define BNSD .layout = ATTNOPS_LAYOUT_BNSD, .pre_tokens = 2147483647, .next_tokens = 2147483647, .lse = true
static const fia_test CASES[] = {
    {"decode bf16 GQA 4, contiguous",
     {.B = 3, .N1 = 8, .N2 = 2, .S1 = 1, .S2 = 600, .D = 64, .Dv = 64, .dtype = ATTNOPS_DTYPE_BF16, .nkv = 3,
      .kv_len = {600, 0, 129}, BNSD}},
    {"decode f16 GQA 8, paged 16",
     {.B = 2, .N1 = 8, .N2 = 1, .S1 = 1, .S2 = 1030, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_F16,
      .block_size = 16, .nkv = 2, .kv_len = {1030, 17}, BNSD}},
    {"decode f32 MHA, paged 128, mask",
     {.B = 2, .N1 = 4, .N2 = 4, .S1 = 1, .S2 = 300, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_F32,
      .block_size = 128, .nkv = 2, .kv_len = {300, 1}, .mask = true, BNSD}},
    {"prompt bf16 causal 3, paged 32",
     {.B = 2, .N1 = 4, .N2 = 2, .S1 = 7, .S2 = 200, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 32, .nkv = 2, .kv_len = {200, 9}, .sparse_mode = 3, BNSD}},
    {"prompt f32 no mask, contiguous",
     {.B = 1, .N1 = 2, .N2 = 1, .S1 = 70, .S2 = 130, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_F32, BNSD}},
    {"decode bf16 int8 per channel, paged 64",
     {.B = 2, .N1 = 8, .N2 = 2, .S1 = 1, .S2 = 300, .D = 64, .Dv = 64, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 64, .nkv = 2, .kv_len = {300, 141}, .int8_kv = true, BNSD}},
    {"prompt f16 int8 per token and head, causal",
     {.B = 2, .N1 = 8, .N2 = 2, .S1 = 5, .S2 = 300, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_F16, .int8_kv = true,
      .key_mode = 3, .value_mode = 3, .sparse_mode = 3, BNSD}},
    /* the attnops extensions: softcap (small enough to bend most scores) and ALiBi */
    {"decode bf16 GQA 4, contiguous, softcap",
     {.B = 3, .N1 = 8, .N2 = 2, .S1 = 1, .S2 = 600, .D = 64, .Dv = 64, .dtype = ATTNOPS_DTYPE_BF16, .nkv = 3,
      .kv_len = {600, 0, 129}, .softcap = 1.5, BNSD}},
    {"decode f16 GQA 8, paged 16, alibi [N1]",
     {.B = 2, .N1 = 8, .N2 = 1, .S1 = 1, .S2 = 1030, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_F16,
      .block_size = 16, .nkv = 2, .kv_len = {1030, 17}, .alibi = 1, BNSD}},
    {"decode f32 MHA, paged 128, mask, pse, softcap, alibi [B, N1]",
     {.B = 2, .N1 = 4, .N2 = 4, .S1 = 1, .S2 = 300, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_F32,
      .block_size = 128, .nkv = 2, .kv_len = {300, 1}, .mask = true, .pse = true, .softcap = 0.7, .alibi = 2, BNSD}},
    {"prompt bf16 causal 3, paged 32, softcap, alibi [B, N1]",
     {.B = 2, .N1 = 4, .N2 = 2, .S1 = 7, .S2 = 200, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 32, .nkv = 2, .kv_len = {200, 9}, .sparse_mode = 3, .softcap = 2.0, .alibi = 2, BNSD}},
    {"prompt f16 GQA 4 causal, lengths (tile GEMMs), softcap, alibi [N1]",
     {.B = 2, .N1 = 8, .N2 = 2, .S1 = 9, .S2 = 150, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_F16, .nq = 2,
      .q_len = {9, 4}, .nkv = 2, .kv_len = {150, 40}, .sparse_mode = 3, .softcap = 1.0, .alibi = 1, BNSD}},
    {"prompt f32 TND causal, softcap, alibi [B, N1]",
     {.B = 3, .N1 = 4, .N2 = 2, .S1 = 13, .S2 = 36, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_F32, .nq = 3,
      .q_len = {5, 1, 7}, .nkv = 3, .kv_len = {9, 20, 7}, .sparse_mode = 3, .softcap = 0.8, .alibi = 2,
      .layout = ATTNOPS_LAYOUT_TND, .pre_tokens = 2147483647, .next_tokens = 2147483647, .lse = true}},
    /* CANN's inner ALiBi (alibi_rule: V5's pseType 2 / 3), the start indices shifting the distance */
    {"decode bf16 GQA 4, paged 16, CANN's alibi sqrt (pseType 3)",
     {.B = 2, .N1 = 8, .N2 = 2, .S1 = 1, .S2 = 500, .D = 64, .Dv = 64, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 16, .nkv = 2, .kv_len = {500, 33}, .alibi = 1, .alibi_rule = 3, .alibi_q_start = 499, BNSD}},
    {"prompt f16 GQA 4 causal, lengths (tile GEMMs), CANN's alibi (pseType 2), shifted starts",
     {.B = 2, .N1 = 8, .N2 = 2, .S1 = 9, .S2 = 150, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_F16, .nq = 2,
      .q_len = {9, 4}, .nkv = 2, .kv_len = {150, 40}, .sparse_mode = 3, .alibi = 2, .alibi_rule = 2,
      .alibi_q_start = 20, .alibi_kv_start = 60, BNSD}},
    {"prompt bf16 dense (the FlashAttention route), CANN's alibi sqrt (pseType 3)",
     {.B = 1, .N1 = 2, .N2 = 1, .S1 = 70, .S2 = 130, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_BF16, .alibi = 1,
      .alibi_rule = 3, .alibi_q_start = 5, .alibi_kv_start = 40, BNSD}},
    {"prompt bf16 dense (the FlashAttention forward), softcap, alibi [N1]",
     {.B = 1, .N1 = 2, .N2 = 1, .S1 = 70, .S2 = 130, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_BF16,
      .softcap = 1.2, .alibi = 1, BNSD}},
    /* prompt blocks of more than 16 rows on bf16 caches the FlashAttention forward does not take (paged, or
     * per-batch lengths): the bf16 tile GEMMs where the CPU's GEMM library has them, odd head dims padded to
     * pairs (D 59, Dk = D + Dr 71), Dv != D, last tiles and blocks cut short */
    {"prompt bf16 GQA 4 causal 3, paged 128, D 59, Dv 48 (bf16 tile GEMMs, keys copied)",
     {.B = 2, .N1 = 8, .N2 = 2, .S1 = 20, .S2 = 600, .D = 59, .Dv = 48, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 128, .nkv = 2, .kv_len = {600, 333}, .sparse_mode = 3, BNSD}},
    {"prompt bf16 MHA causal 3, contiguous, lengths, S1 130 (bf16 tile GEMMs, keys in place)",
     {.B = 2, .N1 = 2, .N2 = 2, .S1 = 130, .S2 = 300, .D = 64, .Dv = 96, .dtype = ATTNOPS_DTYPE_BF16, .nq = 2,
      .q_len = {130, 67}, .nkv = 2, .kv_len = {300, 190}, .sparse_mode = 3, BNSD}},
    {"prompt bf16 GQA 2 causal 3, paged 256, BSND (bf16 tile GEMMs, keys in place)",
     {.B = 2, .N1 = 4, .N2 = 2, .S1 = 40, .S2 = 700, .D = 64, .Dv = 64, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 256, .nkv = 2, .kv_len = {700, 300}, .sparse_mode = 3, .layout = ATTNOPS_LAYOUT_BSND,
      .pre_tokens = 2147483647, .next_tokens = 2147483647, .lse = true}},
    {"prompt bf16 TND GQA 2 causal 3, paged 32, D 59, alibi (bf16 tile GEMMs)",
     {.B = 3, .N1 = 4, .N2 = 2, .S1 = 137, .S2 = 335, .D = 59, .Dv = 59, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 32, .nq = 3, .q_len = {70, 3, 64}, .nkv = 3, .kv_len = {200, 5, 130}, .sparse_mode = 3,
      .alibi = 1, .layout = ATTNOPS_LAYOUT_TND, .pre_tokens = 2147483647, .next_tokens = 2147483647, .lse = true}},
    {"prompt bf16 MHA causal 3, paged 64, rope Dr 7, 37-row blocks (bf16 tile GEMMs)",
     {.B = 2, .N1 = 4, .N2 = 4, .S1 = 37, .S2 = 400, .D = 64, .Dv = 64, .Dr = 7, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 64, .nkv = 2, .kv_len = {400, 150}, .sparse_mode = 3, BNSD}},
    /* a sparse mode's band across many tiles: a block skips the tiles none of its rows keeps, before the band
     * (mode 4's pre_tokens) and after it (modes 2 and 4), and a block of rows that keep no key at all */
    {"prompt bf16 band 4 (pre 150, next 20), paged 64, 4 splits of blocks (tiles skipped both sides)",
     {.B = 2, .N1 = 4, .N2 = 2, .S1 = 200, .S2 = 900, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 64, .nkv = 2, .kv_len = {900, 420}, .sparse_mode = 4, .pre_tokens = 150, .next_tokens = 20,
      .layout = ATTNOPS_LAYOUT_BNSD, .lse = true}},
    {"prompt f16 causal 2 (top-left), lengths, S1 150 over 700 keys (f32 tile GEMMs, tiles skipped after)",
     {.B = 2, .N1 = 2, .N2 = 2, .S1 = 150, .S2 = 700, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_F16, .nq = 2,
      .q_len = {150, 90}, .nkv = 2, .kv_len = {700, 500}, .sparse_mode = 2, BNSD}},
    {"prompt f32 band 4 (pre -77, next 100), 80 rows, 130 keys (first key a tile's last; rows keeping none)",
     {.B = 1, .N1 = 2, .N2 = 1, .S1 = 80, .S2 = 130, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_F32,
      .sparse_mode = 4, .pre_tokens = -77, .next_tokens = 100, .layout = ATTNOPS_LAYOUT_BNSD, .lse = true}},
    /* three query blocks a (b, n2): one thread takes them together (each tile prepared once), two threads
     * one by one; the same bits (check_case) */
    {"prompt f16 int8 per token and head, GQA 4 causal, lengths, 3 blocks (f32 tile GEMMs, grouped)",
     {.B = 2, .N1 = 8, .N2 = 2, .S1 = 48, .S2 = 300, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_F16, .nq = 2,
      .q_len = {48, 40}, .nkv = 2, .kv_len = {300, 200}, .int8_kv = true, .key_mode = 3, .value_mode = 3,
      .sparse_mode = 3, BNSD}},
    {"prompt bf16 MHA, paged 15, 19-row blocks (odd blocks: f32 tile GEMMs, P rounded to bf16)",
     {.B = 2, .N1 = 2, .N2 = 2, .S1 = 19, .S2 = 300, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 15, .nkv = 2, .kv_len = {300, 31}, BNSD}},
    /* 8 query blocks want 8 splits of 4500 keys: 640 each (past FIA_MIN_SPLIT), the last of 20; a batch
     * whose length ends inside the third */
    {"decode bf16 GQA 2, splits of 640, paged 64",
     {.B = 2, .N1 = 8, .N2 = 4, .S1 = 1, .S2 = 4500, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 64, .nkv = 2, .kv_len = {4500, 1300}, BNSD}},
    /* attention sinks (CANN's learnable_sink): decode contiguous and paged (split-KV merges), a batch with no
     * keys (the row is the sink's alone), prompt causal with GQA, TND, int8 */
    {"decode bf16 GQA 4, contiguous, bf16 sinks, a batch without keys",
     {.B = 3, .N1 = 8, .N2 = 2, .S1 = 1, .S2 = 600, .D = 64, .Dv = 64, .dtype = ATTNOPS_DTYPE_BF16, .nkv = 3,
      .kv_len = {600, 0, 129}, .sink = ATTNOPS_DTYPE_BF16, BNSD}},
    {"decode f16 GQA 8, paged 16, f32 sinks",
     {.B = 2, .N1 = 8, .N2 = 1, .S1 = 1, .S2 = 1030, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_F16,
      .block_size = 16, .nkv = 2, .kv_len = {1030, 17}, .sink = ATTNOPS_DTYPE_F32, BNSD}},
    {"prompt bf16 causal 3, paged 32, f16 sinks",
     {.B = 2, .N1 = 4, .N2 = 2, .S1 = 7, .S2 = 200, .D = 32, .Dv = 32, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 32, .nkv = 2, .kv_len = {200, 9}, .sparse_mode = 3, .sink = ATTNOPS_DTYPE_F16, BNSD}},
    {"decode bf16 int8 per channel, paged 64, sinks",
     {.B = 2, .N1 = 8, .N2 = 2, .S1 = 1, .S2 = 300, .D = 64, .Dv = 64, .dtype = ATTNOPS_DTYPE_BF16,
      .block_size = 64, .nkv = 2, .kv_len = {300, 141}, .int8_kv = true, .sink = ATTNOPS_DTYPE_BF16, BNSD}},
};

static double *values(const tu_tensor *t)
{
    double *x = malloc(sizeof(double) * (size_t)(tu_numel(&t->view) ? tu_numel(&t->view) : 1));
    tu_tensor_to_f64(t, x);
    return x;
}

static bool check_case(const fia_test *t, uint64_t seed)
{
    const int before = tu_failures;
    const fia_case_spec *s = &t->spec;
    fia_case c;
    fia_case_init(&c, s, seed);
    const int64_t n = tu_numel(&c.out.view), nl = tu_numel(&c.lse.view);
    TU_CHECK(fia_case_run(&c, ATTNOPS_IMPL_REFERENCE, 2) == ATTNOPS_SUCCESS, "%s: golden: %s", t->name,
             attnops_last_error());
    double *gold = values(&c.out), *gl = values(&c.lse);
    TU_CHECK(fia_case_run(&c, ATTNOPS_IMPL_CPU, 2) == ATTNOPS_SUCCESS, "%s: fast: %s", t->name, attnops_last_error());
    double *fast = values(&c.out), *fl = values(&c.lse);
    const attnops_dtype gemm = s->dtype == ATTNOPS_DTYPE_BF16 ? ATTNOPS_DTYPE_BF16 : ATTNOPS_DTYPE_F32;
    TU_CHECK(tu_compare(t->name, fast, gold, n, tu_attention_tolerance(s->dtype, gemm, s->S2, tu_max_abs(gold, n)),
                        c.out.view.shape, c.out.view.rank, NULL).pass, "%s: attention_out", t->name);
    for (int64_t i = 0; i < nl; i++) { /* lse: +inf rows alike, the rest within f32's tolerance */
        if (!isinf(gl[i]) && !isinf(fl[i])) continue;
        TU_CHECK(gl[i] == fl[i], "%s: lse[%lld] %g vs %g", t->name, (long long)i, fl[i], gl[i]);
        gl[i] = fl[i] = 0.0;
    }
    TU_CHECK(tu_compare(t->name, fl, gl, nl, tu_attention_tolerance(ATTNOPS_DTYPE_F32, gemm, s->S2, 1.0),
                        c.lse.view.shape, c.lse.view.rank, NULL).pass, "%s: softmax_lse", t->name);
    fia_case_run(&c, ATTNOPS_IMPL_CPU, 1); /* one thread: the same bits */
    double *one = values(&c.out);
    TU_CHECK(!memcmp(one, fast, sizeof(double) * (size_t)n), "%s: 1 and 2 threads differ", t->name);
    free(gold), free(gl), free(fast), free(fl), free(one);
    fia_case_free(&c);
    printf("%s %s (%s)\n", tu_failures == before ? "ok  " : "FAIL", t->name, attnops_cpu_isa());
    return tu_failures == before;
}

/* A block id outside the cache is refused, with a sentence, before anything is written. */
static bool check_refusal(void)
{
    const int before = tu_failures;
    fia_case c;
    fia_case_init(&c, &CASES[1].spec, 7);
    ((int32_t *)c.table.view.data)[1] = (int32_t)c.k.view.shape[0];
    tu_tensor_poison(&c.out, 0x5A);
    const attnops_status st = attnops_fused_infer_attention_score(&c.args, NULL, 0);
    TU_CHECK(st == ATTNOPS_ERR_PARAM_INVALID && strstr(attnops_last_error(), "block_table[0][1]"),
             "a block id past the cache: status %d, \"%s\"", (int)st, attnops_last_error());
    TU_CHECK(tu_tensor_untouched(&c.out, 0x5A), "attention_out written by a refused call");
    fia_case_free(&c);
    return tu_failures == before;
}

/* A refused extension: its status, the words its sentence holds, nothing written. */
static void refused(fia_case *c, attnops_status want, const char *what, const char *w1, const char *w2)
{
    tu_tensor_poison(&c->out, 0x5A), tu_tensor_poison(&c->lse, 0x5A);
    const attnops_status st = attnops_fused_infer_attention_score(&c->args, NULL, 0);
    const char *msg = attnops_last_error();
    TU_CHECK(st == want && strstr(msg, "FusedInferAttentionScore: ") == msg && strstr(msg, w1) && strstr(msg, w2),
             "%s: status %d, \"%s\"", what, (int)st, msg);
    TU_CHECK(tu_tensor_untouched(&c->out, 0x5A) && tu_tensor_untouched(&c->lse, 0x5A), "%s: an output written",
             what);
}

/* softcap must be 0 or positive (and finite as an f32, with scale / softcap); the slopes f32 [N1] or [B, N1]. */
static bool check_extension_refusals(void)
{
    const int before = tu_failures;
    const attnops_status INV = ATTNOPS_ERR_PARAM_INVALID, NUL = ATTNOPS_ERR_NULLPTR;
    for (int prompt = 0; prompt < 2; prompt++) { /* the decode branch, then the prompt one */
        fia_case c;
        fia_case_init(&c, &CASES[prompt ? 10 : 9].spec, 11); /* with alibi [B, N1] */
        const double caps[3] = {-1.0, NAN, 1e300};
        const char *const words[3] = {"softcap is -1", "softcap is nan", "softcap is 1e+300"};
        for (int i = 0; i < 3; i++) {
            c.args.softcap = caps[i];
            refused(&c, INV, words[i], words[i], "0 (off) or positive");
        }
        c.args.softcap = 0.5;
        const attnops_tensor good = c.slopes.view;
        attnops_tensor bad = good;
        bad.dtype = ATTNOPS_DTYPE_F16;
        c.args.alibi_slopes = &bad;
        refused(&c, INV, "f16 slopes", "'alibi_slopes' has dtype f16", "must be f32");
        bad = good, bad.shape[0] = 1; /* [1, N1] with B = 2 */
        refused(&c, INV, "slopes [1, N1]", "alibi_slopes has shape [1, 4]", "[N1 = 4] or [B = 2, N1]");
        bad = good, bad.rank = 1, bad.shape[0] = 5, bad.strides[0] = 1;
        refused(&c, INV, "slopes [5]", "alibi_slopes has shape [5]", "[N1 = 4] or [B = 2, N1]");
        c.args.alibi_slopes = &good;
        c.args.alibi_rule = 1;
        refused(&c, INV, "alibi_rule 1", "alibi_rule is 1", "0 (bottom-right), 2 or 3");
        c.args.alibi_rule = ATTNOPS_ALIBI_START_IDX, c.args.alibi_kv_start_idx = (1 << 20) + 1;
        refused(&c, INV, "start indices 2^20 + 1 apart", "alibi_kv_start_idx 1048577", "at most 2^20");
        c.args.alibi_kv_start_idx = 0, c.args.alibi_slopes = NULL;
        refused(&c, NUL, "CANN's rule, no slopes", "alibi_rule is 2 but alibi_slopes is NULL", "needs the slopes");
        c.args.alibi_slopes = &good, c.args.alibi_rule = ATTNOPS_ALIBI_BOTTOM_RIGHT;
        TU_CHECK(fia_case_run(&c, ATTNOPS_IMPL_CPU, 1) == ATTNOPS_SUCCESS, "the same case, valid: %s",
                 attnops_last_error());
        fia_case_free(&c);
    }
    printf("%s the extensions' refusals\n", tu_failures == before ? "ok  " : "FAIL");
    return tu_failures == before;
}

/* The fast kernel's band of kept keys (fia_kept_band) keeps exactly the keys fia_kept keeps, key by key, for
 * every sparse mode without a user mask, with tokens that cut the band on either side or not at all, a query
 * longer and shorter than the keys, and a decode step. */
static bool check_kept_band(void)
{
    const int before = tu_failures;
    const int64_t tokens[][2] = {{2147483647, 2147483647}, {3, 0}, {0, 2}, {5, -2}, {-3, 6}};
    const int64_t lengths[][2] = {{7, 12}, {12, 7}, {1, 9}, {5, 5}};
    for (int decode = 0; decode < 2; decode++)
        for (int mode = 0; mode <= 4; mode++)
            for (size_t t = 0; t < sizeof tokens / sizeof tokens[0]; t++)
                for (size_t n = 0; n < sizeof lengths / sizeof lengths[0]; n++) {
                    fia_problem p;
                    memset(&p, 0, sizeof p);
                    p.decode = decode;
                    p.rule = (attn_rule){.active = !decode && mode >= 2, .mode = mode, .pre = tokens[t][0],
                                         .next = tokens[t][1]};
                    p.mask = mode >= 2 ? FIA_MASK_COMPRESSED : FIA_MASK_NONE;
                    const int64_t L1 = decode ? 1 : lengths[n][0], L2 = lengths[n][1];
                    const attn_band band = attn_band_of(&p.rule, 0, L1, L2);
                    for (int64_t i = 0; i < L1; i++) {
                        int64_t lo, hi;
                        TU_CHECK(fia_kept_band(&p, 0, i, L1, L2, &lo, &hi), "mode %d: no band", mode);
                        for (int64_t j = 0; j < L2; j++)
                            TU_CHECK((lo <= j && j <= hi) == fia_kept(&p, &band, 0, i, j),
                                     "decode %d mode %d tokens (%lld, %lld) L1 %lld L2 %lld: row %lld key %lld", decode,
                                     mode, (long long)p.rule.pre, (long long)p.rule.next, (long long)L1,
                                     (long long)L2, (long long)i, (long long)j);
                    }
                }
    fia_problem user;
    memset(&user, 0, sizeof user);
    int64_t lo, hi;
    user.mask = FIA_MASK_USER;
    TU_CHECK(!fia_kept_band(&user, 0, 0, 4, 4, &lo, &hi), "a user mask given as a band");
    printf("%s the kept keys as a band\n", tu_failures == before ? "ok  " : "FAIL");
    return tu_failures == before;
}

int main(void)
{
    tu_require_isa();
    int passed = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) passed += check_case(&CASES[i], 2026120500 + i);
    passed += check_refusal();
    passed += check_extension_refusals();
    passed += check_kept_band();
    return tu_finish("test_fia", passed);
}
