/* Reading one case's JSON fields: what every operator's driver parser
 * shares (verify/driver_*.c), each refusal one sentence naming the file,
 * the case and the field. */
#ifndef ATTNOPS_VERIFY_HARNESS_PARSE_H
#define ATTNOPS_VERIFY_HARNESS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compare.h"

struct cJSON;

typedef struct harness_parse {
    const char *origin, *name; /* the file (or suite) and the case */
    char *err;
    size_t errlen;
} harness_parse;

/* Writes "<origin>: case '<name>': field '<field>' <what>." (no field: the
 * case's own fault) into p->err; returns false. */
bool hp_fail(harness_parse *p, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* An integer in [lo, hi]. */
bool hp_int(harness_parse *p, const struct cJSON *v, int64_t lo, int64_t hi, int64_t *out);
bool hp_str(harness_parse *p, const struct cJSON *v, const char **out);
/* A list of 1 to 32 non-negative integers; *n of them. */
bool hp_list(harness_parse *p, const struct cJSON *v, int64_t *out, int *n);
/* JSON true / false (or 1 / 0, as the seed's tables write flags). */
bool hp_bool(harness_parse *p, const struct cJSON *v, bool *out);
/* A comparison rule's name (verify/compare.h), for field "compare". */
bool hp_rule(harness_parse *p, const char *name, cmp_rule *rule);

/* A field's name and its number in a driver's field list; several names
 * may share a number (aliases).  HP_IGNORED: accepted and not read (the
 * seed's fields that mean nothing here). */
enum { HP_IGNORED = -2 };
typedef struct harness_field {
    const char *name;
    int f;
} harness_field;

/* The common loop of every parser: for each member of obj, its number f
 * (unknown: refused as "not a known <what>case field"; "op" and "name" are
 * read by the case parser and skipped; given twice, or with an alias:
 * refused), has[f] set, then read(p, v, f, ctx).  False after a message. */
typedef bool (*hp_read_fn)(harness_parse *p, const struct cJSON *v, int f, void *ctx);
bool hp_read_fields(harness_parse *p, const struct cJSON *obj, const harness_field *fields, size_t nfields,
                    const char *what, bool *has, hp_read_fn read, void *ctx);

/* The first of `required` (field numbers, with their names) missing from has. */
bool hp_require(harness_parse *p, const bool *has, const int *required, const char *const *names, size_t n);

#endif
