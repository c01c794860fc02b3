/* Harness cases written as JSON, with the field names of each operator's
 * origin tests so their tables can be pasted.  "op" names the operator
 * (its driver, verify/harness_driver.h; default "flash_attention_grad"),
 * and that driver's file lists the other fields: verify/driver_fa.c
 * (FlashAttention, the seed's TestCases fields), verify/driver_kp.c
 * (KeyPool), verify/driver_ar.c (AttnRes), verify/driver_fia.c
 * (FusedInferAttentionScore).
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
#include "fia_case.h"
#include "kp_case.h"

typedef enum harness_op {
    HARNESS_OP_FA_GRAD,
    HARNESS_OP_KEYPOOL,
    HARNESS_OP_ATTNRES,
    HARNESS_OP_INFER_ATTENTION,
    HARNESS_OP_COUNT
} harness_op;

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
        fia_case_spec fia;   /* HARNESS_OP_INFER_ATTENTION */
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
