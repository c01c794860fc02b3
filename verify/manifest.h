/* The manifest.json of an `attnops golden` export, read back by `attnops
 * compare` from files that travel between machines and teams, so every
 * field is checked before it is used (docs/RELIABILITY.md, "Hostile
 * files"):
 *
 *   {"attnops_version": "...", "cases": [
 *     {"name": CASE, "op": "flash_attention_grad" | "keypool" | "attnres", "compare": RULE,
 *      "attributes": {...},            (not read back)
 *      "tensors": {TENSOR: {"file": "CASE/TENSOR.npy", "dtype": DTYPE, "role": ROLE,
 *                           "shape": [...], "counted": MASK_TENSOR (optional)}, ...}}, ...]}
 *
 * Refused, with the file, the case and the field named: a missing or
 * mistyped field, a key given twice, a case or tensor name that is not 1 to
 * 63 of letters, digits, '_', '-', '.', '+' (not starting with '.'), a
 * file path that is absolute, has an empty, "." or ".." component or other
 * characters (it could leave the export's directory), an unknown dtype,
 * role, op or rule, a "counted" that names no tensor of the case.  Opening
 * a file refuses symbolic links on the way (manifest_path). */
#ifndef ATTNOPS_VERIFY_MANIFEST_H
#define ATTNOPS_VERIFY_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#include "compare.h"
#include "harness_case.h"

#define MANIFEST_PATH_MAX 256

typedef struct manifest_tensor {
    char name[HARNESS_NAME_MAX + 1];
    char file[MANIFEST_PATH_MAX]; /* relative to the export's directory; checked safe */
    char role[16];                /* input | forward | output | mask | kernel | bench */
    attnops_dtype dtype;
    int counted;                  /* index of the mask tensor that says which elements count, or -1 */
} manifest_tensor;

typedef struct manifest_case {
    char name[HARNESS_NAME_MAX + 1];
    harness_op op;
    cmp_rule rule;
    int ntensors;
    manifest_tensor *tensors;
} manifest_case;

typedef struct manifest {
    int ncases;
    manifest_case *cases;
} manifest;

/* Parses `json` (origin names it in err).  0, or -1 with one sentence in
 * err and *m empty.  manifest_free releases a parsed one. */
int manifest_parse(const char *json, const char *origin, manifest *m, char *err, size_t errlen);
void manifest_free(manifest *m);

/* The tensor of the case called `name`, or -1. */
int manifest_tensor_index(const manifest_case *c, const char *name);

/* True for a relative path of safe components (the rule above). */
bool manifest_file_is_safe(const char *rel);

/* dir/rel into path, after checking that no component of rel under dir is a
 * symbolic link (a file that is absent is left to its reader to report).
 * 0, or -1 with one sentence in err. */
int manifest_path(const char *dir, const char *rel, char *path, size_t n, char *err, size_t errlen);

#endif
