/* Harness case files (verify/harness_case.h): the seed's field names map to
 * the case a test runs, the three document forms parse, KeyPool cases
 * ("op": "keypool") and AttnRes cases ("op": "attnres") map to their specs
 * with the documented defaults, every bad field is an error that names
 * the case and the field, and the drivers' support lists are true. */
#include <stdlib.h>
#include <string.h>

#include "harness_driver.h"
#include "suite.h"

static int parse(const char *json, harness_case **cases, char *err, size_t n)
{
    return harness_parse_cases(json, "test.json", cases, err, n);
}

/* The document must fail with a message naming `field` (and the case). */
static void expect_error(const char *json, const char *field)
{
    harness_case *cases = NULL;
    char err[512] = "";
    const int n = parse(json, &cases, err, sizeof err);
    TU_CHECK(n < 0 && cases == NULL, "accepted: %s", json);
    TU_CHECK(strstr(err, field) != NULL && strncmp(err, "test.json: ", 11) == 0 && err[strlen(err) - 1] == '.',
             "message for %s does not name '%s' as one sentence: \"%s\"", json, field, err);
    free(cases);
}

#define BASE "\"N1\": 2, \"N2\": 1, \"D\": 64, \"dtype\": \"fp16\", \"input_layout\": \"BSND\""

/* Bad documents: each must fail with one sentence naming the field. */
typedef struct bad_case {
    const char *json, *words;
} bad_case;

static const bad_case BAD_FA[] = {
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"foo\": 1, " BASE "}", "'foo'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"N1\": 2, \"N2\": 1, \"D\": 64, \"dtype\": \"fp64\", "
     "\"input_layout\": \"BSND\"}",
     "'dtype'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"N2\": 1, \"D\": 64, \"dtype\": \"fp16\", \"input_layout\": \"BSND\"}", "'N1'"},
    {"{\"N1\": 2, \"S1\": 3, \"S2\": 3, \"N2\": 1, \"D\": 64, \"dtype\": \"fp16\", \"input_layout\": \"BSND\"}", "'B'"},
    {"{\"B\": 1.5, \"S1\": 3, \"S2\": 3, " BASE "}", "'B'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"rope\": 1, " BASE "}", "'rope'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"out_dtype\": \"bf16\", " BASE "}", "'out_dtype'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"pse_type\": 3, \"pse_shape\": \"BNSS\", " BASE "}", "'pse_shape'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"atten_mask_shape\": \"S1S\", " BASE "}", "'atten_mask_shape'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"atten_mask_shape\": \"SS\", \"atten_mask_dtype\": \"fp16\", "
     BASE "}",
     "'atten_mask_dtype'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"actual_seq_qlen\": [3], " BASE "}", "'actual_seq_qlen'"},
    {"{\"N1\": 2, \"N2\": 1, \"D\": 64, \"dtype\": \"fp16\", \"input_layout\": \"TND\"}", "'actual_seq_qlen'"},
    {"{\"B\": 3, \"N1\": 2, \"N2\": 1, \"D\": 64, \"dtype\": \"fp16\", \"input_layout\": \"TND\", "
     "\"actual_seq_qlen\": [3, 4]}",
     "'B'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"drop_out_possibility\": 0, " BASE "}", "'drop_out_possibility'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"compare\": \"nearly\", " BASE "}", "'compare'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"softcap\": -1, " BASE "}", "'softcap'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"pre_tokens\": 1, \"pre_tockens_input\": 2, " BASE "}", "given twice"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"input_layout\": \"NSD\", \"N1\": 2, \"N2\": 1, \"D\": 64, "
     "\"dtype\": \"fp16\"}",
     "'input_layout'"},
    {"{\"B\": 1, ", "not valid JSON"},
    {"[1, 2]", "not a JSON object"},
    {"\"just a string\"", "expected a case object"},
};

#define KP "\"op\": \"keypool\", \"layout\": \"BSH\", \"block_size\": 4"
static const bad_case BAD_KP[] = {
    {"{" KP ", \"lens\": [5], \"colour\": 1}", "'colour' is not a known KeyPool case field"},
    {"{" KP ", \"lens\": [5], \"N1\": 2}", "'N1'"},
    {"{\"B\": 1, \"S1\": 3, \"S2\": 3, \"cmp_ratio\": 4, " BASE "}", "'cmp_ratio'"},
    {"{\"op\": \"key_pool\", \"layout\": \"BSH\", \"lens\": [5], \"block_size\": 4}", "'op'"},
    {"{\"op\": \"keypool\", \"layout\": \"TND\", \"lens\": [5], \"block_size\": 4}", "'layout'"},
    {"{\"op\": \"keypool\", \"lens\": [5], \"block_size\": 4}", "'layout'"},
    {"{" KP "}", "'lens'"},
    {"{\"op\": \"keypool\", \"layout\": \"TH\", \"lens\": [5]}", "'block_size'"},
    {"{" KP ", \"lens\": [5, 6]}", "'lens'"},
    {"{" KP ", \"lens\": []}", "'lens'"},
    {"{" KP ", \"lens\": [5, 5], \"starts\": [1]}", "'starts'"},
    {"{" KP ", \"lens\": [5], \"starts\": [-1]}", "'starts'"},
    {"{" KP ", \"lens\": [5], \"cmp_ratio\": 3}", "'cmp_ratio'"},
    {"{" KP ", \"lens\": [5], \"cmp_ratio\": 256}", "'cmp_ratio'"},
    {"{\"op\": \"keypool\", \"layout\": \"BSH\", \"lens\": [5], \"block_size\": 0}", "'block_size'"},
    {"{" KP ", \"lens\": [5], \"scramble\": \"yes\"}", "'scramble'"},
    {"{" KP ", \"lens\": [5], \"norm\": true, \"norm_on\": true}", "given twice"},
    {"{" KP ", \"lens\": [5], \"H\": 0}", "'H'"},
    {"{" KP ", \"lens\": [5], \"D\": 2.5}", "'D'"},
    {"{" KP ", \"lens\": [5], \"dtype\": \"fp32\"}", "'dtype'"},
    {"{" KP ", \"lens\": [5], \"capacity\": \"full\"}", "'capacity'"},
    {"{" KP ", \"lens\": [5], \"compare\": \"triple\"}", "'compare'"},
    {"{" KP ", \"lens\": [5], \"compare\": \"nearly\"}", "'compare'"},
    {"{" KP ", \"lens\": [5], \"data_seed\": -1}", "'data_seed'"},
};
#undef KP

#define AR "\"op\": \"attnres\", \"B\": 1, \"T\": 3, \"D\": 8"
static const bad_case BAD_AR[] = {
    {"{" AR ", \"N\": 2, \"colour\": 1}", "'colour' is not a known AttnRes case field"},
    {"{" AR ", \"N\": 2, \"N1\": 2}", "'N1'"},
    {"{" AR "}", "'N'"},
    {"{\"op\": \"attnres\", \"T\": 3, \"N\": 2, \"D\": 8}", "'B'"},
    {"{\"op\": \"attnres\", \"B\": 1, \"N\": 2, \"D\": 8}", "'T'"},
    {"{\"op\": \"attnres\", \"B\": 1, \"T\": 3, \"N\": 2}", "'D'"},
    {"{" AR ", \"N\": 0}", "'N'"},
    {"{" AR ", \"N\": 128}", "'N'"},
    {"{\"op\": \"attnres\", \"B\": -1, \"T\": 3, \"N\": 2, \"D\": 8}", "'B'"},
    {"{\"op\": \"attnres\", \"B\": 1, \"T\": 3, \"N\": 2, \"D\": 0}", "'D'"},
    {"{" AR ", \"N\": 2, \"dtype\": \"fp8_e4m3fn\"}", "'dtype'"},
    {"{" AR ", \"N\": 2, \"dtype\": 16}", "'dtype'"},
    {"{" AR ", \"N\": 2, \"partial\": \"yes\"}", "'partial'"},
    {"{" AR ", \"N\": 2, \"rmsnorm\": 2}", "'rmsnorm'"},
    {"{" AR ", \"N\": 2, \"random_gamma\": null}", "'random_gamma'"},
    {"{" AR ", \"N\": 2, \"scale\": \"1\"}", "'scale'"},
    {"{" AR ", \"N\": 2, \"scale\": 1e300}", "'scale'"},
    {"{" AR ", \"N\": 2, \"eps\": 0}", "'eps'"},
    {"{" AR ", \"N\": 2, \"eps\": -1e-6}", "'eps'"},
    {"{" AR ", \"N\": 2, \"eps\": 1e-50}", "'eps'"},
    {"{" AR ", \"N\": 2, \"partial\": true, \"has_partial_block\": true}", "given twice"},
    {"{" AR ", \"N\": 2, \"compare\": \"nearly\"}", "'compare'"},
    {"{" AR ", \"N\": 2, \"data_seed\": 1.5}", "'data_seed'"},
    {"{\"op\": \"attn_res\", \"B\": 1, \"T\": 3, \"N\": 2, \"D\": 8}", "'op'"},
};
#undef AR

#define FIA "\"op\": \"infer_attention\", \"N1\": 4, \"D\": 16, \"dtype\": \"fp16\""
static const bad_case BAD_FIA[] = {
    {"{" FIA ", \"input_layout\": \"BSH\", \"B\": 1, \"S1\": 1, \"S2\": 8, \"colour\": 1}",
     "'colour' is not a known FusedInferAttentionScore case field"},
    {"{" FIA ", \"input_layout\": \"SBH\", \"B\": 1, \"S1\": 1, \"S2\": 8}", "'input_layout'"},
    {"{" FIA ", \"input_layout\": \"BSH\", \"B\": 1, \"S2\": 8}", "'S1'"},
    {"{" FIA ", \"input_layout\": \"BSH\", \"B\": 1, \"S1\": 1, \"S2\": 8, \"sparse_mode\": 5}", "'sparse_mode'"},
    {"{" FIA ", \"input_layout\": \"BSH\", \"B\": 2, \"S1\": 1, \"S2\": 8, \"actual_seq_lengths_kv\": [8]}",
     "'actual_seq_lengths_kv'"},
    {"{" FIA ", \"input_layout\": \"TND\", \"actual_seq_lengths\": [3]}", "'actual_seq_lengths'"},
    {"{" FIA ", \"input_layout\": \"TND\", \"actual_seq_lengths\": [3, 2], \"actual_seq_lengths_kv\": [4]}",
     "'actual_seq_lengths_kv'"},
    {"{\"op\": \"infer_attention\", \"N1\": 4, \"D\": 16, \"dtype\": \"int8\", \"input_layout\": \"BSH\", "
     "\"B\": 1, \"S1\": 1, \"S2\": 8}",
     "'dtype'"},
    {"{" FIA ", \"input_layout\": \"BSH\", \"B\": 1, \"S1\": 1, \"S2\": 8, \"kv_dtype\": \"fp32\"}", "'kv_dtype'"},
    {"{" FIA ", \"input_layout\": \"BSH\", \"B\": 1, \"S1\": 1, \"S2\": 8, \"key_antiquant_mode\": 1}",
     "'key_antiquant_mode'"},
    {"{" FIA ", \"input_layout\": \"BSH\", \"B\": 1, \"S1\": 1, \"S2\": 8, \"alibi_slopes\": \"N2\"}",
     "'alibi_slopes'"},
    {"{" FIA ", \"input_layout\": \"BSH\", \"B\": 1, \"S1\": 1, \"S2\": 8, \"compare\": \"triple\"}", "'compare'"},
    {"{" FIA ", \"input_layout\": \"BSH\", \"B\": 1, \"S1\": 1, \"S2\": 8, \"scale\": 0}", "'scale'"},
};
#undef FIA

/* Every row of a table refused; true when all were. */
static bool refuses_all(const bad_case *rows, size_t n)
{
    const int before = tu_failures;
    for (size_t i = 0; i < n; i++) expect_error(rows[i].json, rows[i].words);
    return tu_failures == before;
}
#define REFUSES_ALL(table) refuses_all(table, sizeof table / sizeof table[0])

/* one case; a list with names; a named dictionary */
static bool forms(void)
{
    const int before = tu_failures;
    harness_case *c = NULL;
    char err[512];
    TU_CHECK(parse("{\"B\": 2, \"S1\": 7, \"S2\": 9, " BASE "}", &c, err, sizeof err) == 1, "single: %s", err);
    TU_CHECK(c && c[0].shape.B == 2 && c[0].shape.S2 == 9 && c[0].shape.Dv == 64 && c[0].rule == CMP_DUAL &&
                 c[0].data_seed == 1 && c[0].shape.mask == FA_CASE_MASK_NONE && c[0].shape.keep_prob == 0.0,
             "single case fields");
    free(c);
    TU_CHECK(parse("[{\"name\": \"a\", \"B\": 1, \"S1\": 3, \"S2\": 3, " BASE "}, {\"B\": 1, \"S1\": 4, \"S2\": 4, "
                   "\"compare\": \"isclose\", \"pre_tokens\": 5, \"next_tokens\": 1, " BASE "}]",
                   &c, err, sizeof err) == 2, "list: %s", err);
    TU_CHECK(c && !strcmp(c[0].name, "a") && !strcmp(c[1].name, "case1") && c[1].rule == CMP_ISCLOSE &&
                 c[1].shape.pre == 5 && c[1].shape.next == 1, "list case fields");
    free(c);
    /* the default rule: dual, but allclose for bf16 (dual is finer than a bf16 rounding step) */
    TU_CHECK(parse("[{\"B\": 1, \"S1\": 3, \"S2\": 3, \"N1\": 1, \"N2\": 1, \"D\": 8, \"dtype\": \"bf16\", "
                   "\"input_layout\": \"BSND\"}, {\"B\": 1, \"S1\": 3, \"S2\": 3, \"N1\": 1, \"N2\": 1, \"D\": 8, "
                   "\"dtype\": \"bf16\", \"input_layout\": \"BSND\", \"compare\": \"dual\"}]",
                   &c, err, sizeof err) == 2 && c && c[0].rule == CMP_ALLCLOSE && c[1].rule == CMP_DUAL,
             "bf16's default rule is allclose, an explicit one is kept: %s", err);
    free(c);
    TU_CHECK(parse("{\"x\": {\"B\": 1, \"S1\": 3, \"S2\": 3, " BASE "}}", &c, err, sizeof err) == 1 && c &&
                 !strcmp(c[0].name, "x"), "dictionary: %s", err);
    free(c);
    return tu_failures == before;
}

/* the seed's quirks, read as documented */
static bool seed_quirks(void)
{
    const int before = tu_failures;
    harness_case *c = NULL;
    char err[512];
    TU_CHECK(parse("{\"M\": {\"B\": 1, \"S1\": 128, \"S2\": 128, \"N1\": 2, \"N2\": 1, \"D\": 192, \"D_V\": 128, "
                   "\"dtype\": \"fp16\", \"out_dtype\": \"fp16\", \"input_layout\": \"BNSD\", \"rope\": 1, "
                   "\"is_deter\": \"FLASE\", \"inner_drop\": 1}, "
                   "\"F\": {\"B\": 2, \"S1\": 129, \"S2\": 125, \"N1\": 2, \"N2\": 1, \"D\": 128, "
                   "\"dtype\": \"fp8_e4m3fn\", \"out_dtype\": \"bp16\", \"input_layout\": \"SBH\"}, "
                   "\"P\": {\"B\": 9, \"S1\": 80, \"S2\": 80, \"N1\": 8, \"N2\": 2, \"D\": 167, \"dtype\": \"fp32\", "
                   "\"input_layout\": \"BSND\", \"pre_tockens_input\": -26, \"pse_type\": 3, \"pse_shape\": \"BN\", "
                   "\"atten_mask_dtype\": \"uint8\", \"atten_mask_shape\": \"B1SS\"}, "
                   "\"T\": {\"B\": 4, \"S1\": 287, \"S2\": 287, \"N1\": 16, \"N2\": 16, \"D\": 128, "
                   "\"dtype\": \"fp16\", "
                   "\"input_layout\": \"TND\", \"sparse_mode\": 3, \"atten_mask_dtype\": \"BOOL\", "
                   "\"atten_mask_shape\": \"SS\", \"pse_shape\": \"1NHS\", \"drop_out_possibility\": 0.9, "
                   "\"actual_seq_qlen\": [114, 132, 14, 287], \"prefix\": [1, 2, 3, 4], \"softcap\": 30}}",
                   &c, err, sizeof err) == 4, "seed quirks: %s", err);
    if (c) {
        TU_CHECK(c[0].shape.D == 128 && c[0].shape.Dr == 64 && c[0].shape.Dv == 128, "rope 1 splits D at 128");
        TU_CHECK(c[1].shape.out_dtype == ATTNOPS_DTYPE_BF16 && strstr(c[1].note, "bp16"), "bp16 read as bf16, noted");
        TU_CHECK(c[2].shape.pse == FA_CASE_PSE_SLOPES_BN && c[2].shape.pse_type == 3 &&
                     c[2].shape.mask == FA_CASE_MASK_B1SS && c[2].shape.mask_dtype == ATTNOPS_DTYPE_U8 &&
                     c[2].shape.pre == -26 && c[2].shape.next == 2147483647, "pse BN slopes, u8 B1SS mask, tokens");
        TU_CHECK(c[3].shape.nseq == 4 && c[3].shape.seq_q[1] == 132 && c[3].shape.seq_kv[3] == 287 &&
                     c[3].shape.mask == FA_CASE_MASK_COMPRESSED && c[3].shape.keep_prob == 0.9 &&
                     c[3].shape.seed == 2 && c[3].shape.pse == FA_CASE_PSE_1NHS && c[3].shape.nprefix == 4 &&
                     c[3].shape.prefix[3] == 4 && c[3].shape.softcap == 30.0 && c[2].shape.softcap == 0.0,
                 "TND lengths, mode 3 compressed mask, keep, 1NHS, prefix, softcap");
    }
    free(c);
    return tu_failures == before;
}

/* KeyPool cases: every field, the defaults, a single object, the op tag */
static bool keypool_cases(void)
{
    const int before = tu_failures;
    harness_case *c = NULL;
    char err[512];
    TU_CHECK(parse("{\"k\": {\"op\": \"keypool\", \"layout\": \"TH\", \"lens\": [6, 3, 0], \"starts\": [5, 2, 4], "
                   "\"cmp_ratio\": 8, \"block_size\": 2, \"scramble\": true, \"norm_on\": true, \"H\": 96, \"D\": 16, "
                   "\"dtype\": \"fp16\", \"capacity\": \"fixed\", \"data_seed\": 7, \"compare\": \"allclose\"}, "
                   "\"f\": {\"op\": \"flash_attention_grad\", \"B\": 1, \"S1\": 3, \"S2\": 3, " BASE "}}",
                   &c, err, sizeof err) == 2, "keypool: %s", err);
    if (c) {
        const kp_case_spec *k = &c[0].kp;
        TU_CHECK(c[0].op == HARNESS_OP_KEYPOOL && k->th && k->B == 3 && k->len[0] == 6 && k->len[2] == 0 &&
                     k->start[0] == 5 && k->start[2] == 4 && k->cmp_ratio == 8 && k->block_size == 2 && k->scramble &&
                     k->norm && k->H == 96 && k->D == 16 && k->dtype == ATTNOPS_DTYPE_F16 &&
                     k->capacity == ATTNOPS_KEY_POOL_CAPACITY_FIXED && c[0].data_seed == 7 && c[0].rule == CMP_ALLCLOSE,
                 "keypool fields");
        TU_CHECK(c[1].op == HARNESS_OP_FA_GRAD && c[1].shape.N1 == 2 && c[1].rule == CMP_DUAL, "explicit FA op");
    }
    free(c);
    TU_CHECK(parse("{\"op\": \"keypool\", \"layout\": \"BSH\", \"lens\": [5, 5], \"block_size\": 4}", &c, err,
                   sizeof err) == 1, "single keypool object: %s", err);
    if (c) {
        const kp_case_spec *k = &c[0].kp;
        TU_CHECK(c[0].op == HARNESS_OP_KEYPOOL && !strcmp(c[0].name, "case0") && !k->th && k->B == 2 &&
                     k->start[1] == 0 && k->cmp_ratio == 4 && !k->scramble && !k->norm && k->H == 4096 && k->D == 128 &&
                     k->dtype == ATTNOPS_DTYPE_BF16 && k->capacity == ATTNOPS_KEY_POOL_CAPACITY_CURRENT &&
                     c[0].data_seed == 1 && c[0].rule == CMP_ISCLOSE,
                 "keypool defaults");
    }
    free(c);
    return tu_failures == before;
}

/* AttnRes cases: every field (and the aliases), the defaults, mixed with the other ops */
static bool attnres_cases(void)
{
    const int before = tu_failures;
    harness_case *c = NULL;
    char err[512];
    TU_CHECK(parse("{\"a\": {\"op\": \"attnres\", \"B\": 2, \"T\": 0, \"N\": 127, \"D\": 40, \"dtype\": \"fp32\", "
                   "\"partial\": false, \"rmsnorm\": 0, \"random_gamma\": true, \"scale\": -0.5, \"eps\": 1e-5, "
                   "\"data_seed\": 9, \"compare\": \"allclose\"}, "
                   "\"d\": {\"op\": \"attnres\", \"B\": 1, \"T\": 3, \"N\": 1, \"D\": 8}, "
                   "\"s\": {\"op\": \"attnres\", \"B\": 1, \"T\": 3, \"N\": 2, \"D\": 8, \"dtype\": \"fp16\", "
                   "\"has_partial_block\": true, \"enable_rmsnorm\": false}, "
                   "\"k\": {\"op\": \"keypool\", \"layout\": \"BSH\", \"lens\": [5], \"block_size\": 4}, "
                   "\"f\": {\"B\": 1, \"S1\": 3, \"S2\": 3, " BASE "}}",
                   &c, err, sizeof err) == 5, "attnres: %s", err);
    if (c) {
        const ar_case_spec *a = &c[0].ar, *d = &c[1].ar, *s = &c[2].ar;
        TU_CHECK(c[0].op == HARNESS_OP_ATTNRES && a->B == 2 && a->T == 0 && a->N == 127 && a->D == 40 &&
                     a->dtype == ATTNOPS_DTYPE_F32 && !a->partial && !a->rmsnorm && a->random_gamma &&
                     a->scale == -0.5 && a->eps == 1e-5 && !a->strided && c[0].data_seed == 9 &&
                     c[0].rule == CMP_ALLCLOSE,
                 "attnres fields");
        TU_CHECK(c[1].op == HARNESS_OP_ATTNRES && d->N == 1 && d->dtype == ATTNOPS_DTYPE_BF16 && d->partial &&
                     d->rmsnorm && !d->random_gamma && d->scale == 1.0 && d->eps == 1e-6 && c[1].data_seed == 1 &&
                     c[1].rule == CMP_TRIPLE,
                 "attnres defaults: the seed's (bf16, partial block, RMSNorm, scale 1, eps 1e-6, triple)");
        TU_CHECK(s->dtype == ATTNOPS_DTYPE_F16 && s->partial && !s->rmsnorm, "attnres aliases has_partial_block, "
                 "enable_rmsnorm");
        TU_CHECK(c[3].op == HARNESS_OP_KEYPOOL && c[3].kp.B == 1 && c[4].op == HARNESS_OP_FA_GRAD && c[4].shape.N1 == 2,
                 "attnres mixed with keypool and FA cases");
    }
    free(c);
    harness_op op = HARNESS_OP_FA_GRAD;
    TU_CHECK(harness_op_parse("attnres", &op) && op == HARNESS_OP_ATTNRES && !strcmp(harness_op_name(op), "attnres") &&
                 !harness_op_parse("attn_res", &op),
             "op names");
    TU_CHECK(harness_triple_dtype(HARNESS_OP_ATTNRES, ATTNOPS_DTYPE_BF16) == ATTNOPS_DTYPE_F32 &&
                 harness_triple_dtype(HARNESS_OP_FA_GRAD, ATTNOPS_DTYPE_BF16) == ATTNOPS_DTYPE_BF16,
             "the triple rule's thresholds: f32 for AttnRes (the seed's f32 copies), the output's own otherwise");
    return tu_failures == before;
}

/* A dtype by any of the traits table's spellings: the seed's (fp32), ours
 * (f32) and torch's (float32) name the same case; KeyPool's and AttnRes's
 * allowed sets still hold. */
static bool dtype_spellings(void)
{
    const int before = tu_failures;
    const char *names[] = {"fp32", "f32", "float32"};
    for (int i = 0; i < 3; i++) {
        char json[256], err[512];
        harness_case *c = NULL;
        snprintf(json, sizeof json,
                 "{\"B\": 1, \"S1\": 3, \"S2\": 3, \"N1\": 1, \"N2\": 1, \"D\": 8, \"dtype\": \"%s\", "
                 "\"input_layout\": \"BSND\"}", names[i]);
        TU_CHECK(parse(json, &c, err, sizeof err) == 1 && c && c[0].shape.dtype == ATTNOPS_DTYPE_F32,
                 "dtype '%s' is not f32: %s", names[i], err);
        free(c);
    }
    expect_error("{\"op\": \"keypool\", \"layout\": \"BSH\", \"block_size\": 4, \"lens\": [5], \"dtype\": \"float32\"}",
                 "'dtype'");
    expect_error("{\"op\": \"attnres\", \"B\": 1, \"T\": 3, \"D\": 8, \"N\": 2, \"dtype\": \"i32\"}", "'dtype'");
    return tu_failures == before;
}

/* The driver table's support lists (attnops list --support) are true:
 * each driver's example case runs through every implementation it lists
 * for a dtype, with every judged tensor present in the chain that ran, and
 * is refused (by the case parser or the library) for every float dtype it
 * does not list. */
static bool driver_support(void)
{
    const int before = tu_failures;
    static const attnops_dtype FLOATS[] = {ATTNOPS_DTYPE_F32,     ATTNOPS_DTYPE_F16,       ATTNOPS_DTYPE_BF16,
                                           ATTNOPS_DTYPE_F8_E5M2, ATTNOPS_DTYPE_F8_E4M3FN};
    for (int op = 0; op < HARNESS_OP_COUNT; op++) {
        const harness_driver *d = harness_drivers[op];
        TU_CHECK(!strcmp(harness_op_name((harness_op)op), d->name) && d->dtypes[ATTNOPS_IMPL_REFERENCE],
                 "driver %d: its name and a reference", op);
        for (attnops_impl impl = ATTNOPS_IMPL_REFERENCE; impl <= ATTNOPS_IMPL_BENCHMARK; impl++) {
            for (size_t k = 0; k < sizeof FLOATS / sizeof FLOATS[0]; k++) {
                bool listed = false;
                for (const attnops_dtype *t = d->dtypes[impl]; t && *t; t++) listed |= *t == FLOATS[k];
                char json[512], err[512] = "";
                d->example(FLOATS[k], json, sizeof json);
                harness_case *c = NULL;
                attnops_status st = ATTNOPS_ERR_PARAM_INVALID;
                harness_run r = {0};
                const harness_run_options o = {.kernel = impl == ATTNOPS_IMPL_CPU, .impl = impl,
                                               .bench = impl == ATTNOPS_IMPL_BENCHMARK, .threads = 2};
                if (parse(json, &c, err, sizeof err) == 1) st = harness_run_case(c, &o, &r);
                const harness_chain chain = impl == ATTNOPS_IMPL_CPU ? HARNESS_KERNEL
                                            : impl == ATTNOPS_IMPL_BENCHMARK ? HARNESS_BENCH : HARNESS_GOLDEN;
                const char *dt = attnops_dtype_name(FLOATS[k]);
                TU_CHECK((st == ATTNOPS_SUCCESS) == listed, "%s impl %d %s: %s (%s%s)", d->name, (int)impl, dt,
                         listed ? "listed but fails" : "not listed but runs", err, st ? attnops_last_error() : "");
                int judged = 0;
                for (int i = 0; st == ATTNOPS_SUCCESS && i < r.ntensors; i++) {
                    judged += r.tensors[i].judged;
                    TU_CHECK(!r.tensors[i].judged || (r.tensors[i].view[HARNESS_GOLDEN] && r.tensors[i].view[chain]),
                             "%s %s: judged tensor %s missing from the chain", d->name, dt, r.tensors[i].name);
                }
                TU_CHECK(st != ATTNOPS_SUCCESS || judged > 0, "%s %s: no judged tensor", d->name, dt);
                if (st == ATTNOPS_SUCCESS) harness_run_free(&r);
                free(c);
            }
        }
    }
    return tu_failures == before;
}

int main(void)
{
    int passed = forms() + seed_quirks() + keypool_cases() + attnres_cases();
    passed += REFUSES_ALL(BAD_FA) + REFUSES_ALL(BAD_KP) + REFUSES_ALL(BAD_AR) + REFUSES_ALL(BAD_FIA) +
              dtype_spellings() + driver_support();
    return tu_finish("test_harness_case", passed);
}
