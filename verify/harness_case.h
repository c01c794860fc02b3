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
 * A document holds one case (an object with "B" or "N1"), a list of cases,
 * or a named dictionary {name: case} like the seed's TestCases.  Unknown
 * fields and bad values are errors that name the case and the field. */
#ifndef ATTNOPS_VERIFY_HARNESS_CASE_H
#define ATTNOPS_VERIFY_HARNESS_CASE_H

#include "compare.h"
#include "fa_case.h"

typedef struct harness_case {
    char name[64];
    fa_case_shape shape;
    uint64_t data_seed;
    cmp_rule rule;
    char note[160]; /* how a seed quirk was read (e.g. "bp16"), or "" */
} harness_case;

/* Parses `json`; `origin` (a file name) prefixes messages.  Returns the
 * number of cases and a malloc'ed array in *cases (free() it), or -1 with
 * one sentence in err. */
int harness_parse_cases(const char *json, const char *origin, harness_case **cases, char *err, size_t errlen);

#endif
