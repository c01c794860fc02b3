/* Harness cases written as JSON with the seed's field names (spec
 * flash-attention 7.1), so the seed's TestCases table can be pasted:
 *
 *   B, N1, N2, S1, S2, D, D_V, dtype (fp16 | bf16 | fp32 | fp8_e5m2 | fp8_e4m3fn),
 *   out_dtype (FP8: fp16 | bf16; the seed's "bp16" is read as bf16), input_layout,
 *   sparse_mode, pre_tockens_input / next_tockens_input (or pre_tokens / next_tokens),
 *   pse_type, pse_shape (NONE | BNSS | BN1S | 1NSS | BNHS | 1NHS | BN | N: slopes [B,N1] / [N1]),
 *   atten_mask_dtype (NONE | BOOL | uint8), atten_mask_shape (NONE | SS | 11SS | B1SS | BNSS;
 *   modes 2/3/4/6/7/8 take the compressed mask whatever the shape says),
 *   drop_out_possibility (the KEEP probability, as in the seed), seed, offset, rope (1: the
 *   golden's split of D at column 128), actual_seq_qlen / actual_seq_kvlen (TND: per-batch
 *   lengths, as in the seed, not cumulative), prefix (modes 5/6, per batch), inner_precise,
 *   scale (default 1/sqrt(D)), data_seed (the inputs' generator seed), compare (a rule of
 *   verify/compare.h, default dual).
 *   The seed's unused fields is_deter, sparse, padding_mask and inner_drop are accepted and
 *   ignored.
 *
 * A case with "op": "keypool" is a KeyPool case (spec keypool-attnres-pypto
 * A.6, the seed's precision test's names): layout (BSH | TH), lens (per
 * batch; all equal in BSH), starts (start_pos per batch, default 0),
 * cmp_ratio (default 4), block_size, scramble, norm (or norm_on; booleans,
 * default false), H (default 4096), D (default 128), dtype (bf16 | fp16,
 * default bf16), capacity (current | fixed, default current), data_seed and
 * compare (default isclose, the seed's rule).
 *
 * A case with "op": "attnres" is a Block Attention Residuals case (spec
 * keypool-attnres-pypto B.3, the seed's test parameters): B, T, N (blocks,
 * 1..127), D (all four required), dtype (bf16 | fp16 | fp32, default
 * bf16), partial (or has_partial_block; default true), rmsnorm (or
 * enable_rmsnorm; default true), random_gamma (default false: gamma ones,
 * the seed's), scale (default 1), eps (rmsnorm_eps, default 1e-6),
 * data_seed and compare (default triple, the seed's rule).
 * "op" defaults to "flash_attention_grad", the cases above.
 *
 * A document holds one case (an object with "B", "N1" or "op"), a list of
 * cases, or a named dictionary {name: case} like the seed's TestCases.
 * Unknown fields, fields given twice, bad values, unsafe or repeated case
 * names and cases whose tensors need more than the machine's memory (a
 * rough estimate from above, made before anything is allocated) are errors
 * that name the case and the field. */
#ifndef ATTNOPS_VERIFY_HARNESS_CASE_H
#define ATTNOPS_VERIFY_HARNESS_CASE_H

#include "compare.h"
#include "ar_case.h"
#include "fa_case.h"
#include "kp_case.h"

typedef enum harness_op { HARNESS_OP_FA_GRAD, HARNESS_OP_KEYPOOL, HARNESS_OP_ATTNRES, HARNESS_OP_COUNT } harness_op;

/* A case's name: 1 to HARNESS_NAME_MAX letters, digits, '_', '-', '.', '+',
 * not starting with '.' (it names the export's directory); unique in a file. */
#define HARNESS_NAME_MAX 63
bool harness_name_is_safe(const char *name);
/* A member name that occurs twice in a JSON object, or NULL (cJSON keeps both;
 * the case files and the manifest refuse them). */
struct cJSON;
const char *harness_duplicate_key(const struct cJSON *obj);

typedef struct harness_case {
    char name[HARNESS_NAME_MAX + 1];
    harness_op op;
    union {
        fa_case_shape shape; /* HARNESS_OP_FA_GRAD */
        kp_case_spec kp;     /* HARNESS_OP_KEYPOOL */
        ar_case_spec ar;     /* HARNESS_OP_ATTNRES */
    };
    uint64_t data_seed;
    cmp_rule rule;
    char note[160]; /* how a seed quirk was read (e.g. "bp16"), or "" */
} harness_case;

/* An operator's name as a case file and a manifest spell it (its driver's,
 * verify/harness_driver.h); parse: false for an unknown name.  names: all
 * of them, "a, b or c", for messages. */
const char *harness_op_name(harness_op op);
bool harness_op_parse(const char *name, harness_op *op);
void harness_op_names(char *buf, size_t n);

/* The dtype whose thresholds the triple rule applies to an output of
 * `dtype`: f32 for AttnRes, whose seed compares f32 copies of every chain
 * (spec B.3); the output's own for the other operators. */
attnops_dtype harness_triple_dtype(harness_op op, attnops_dtype dtype);

/* Parses `json`; `origin` (a file name) prefixes messages.  Returns the
 * number of cases and a malloc'ed array in *cases (free() it), or -1 with
 * one sentence in err. */
int harness_parse_cases(const char *json, const char *origin, harness_case **cases, char *err, size_t errlen);

/* A whole file as a string (free() it): a regular file of at most
 * HARNESS_TEXT_MAX_BYTES without NUL bytes; NULL with one sentence in err. */
#define HARNESS_TEXT_MAX_BYTES (64 << 20)
char *harness_read_text(const char *path, char *err, size_t errlen);

#endif
