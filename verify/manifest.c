#include "manifest.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const ROLES[] = {"input", "forward", "output", "mask", "kernel", "bench"};

typedef struct ctx {
    const char *origin;
    char *err;
    size_t errlen;
} ctx;

static int fail(const ctx *c, const char *case_name, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (case_name) snprintf(c->err, c->errlen, "%s: case '%.64s': %s.", c->origin, case_name, what);
    else snprintf(c->err, c->errlen, "%s: %s.", c->origin, what);
    return -1;
}

bool manifest_file_is_safe(const char *rel)
{
    const size_t n = strlen(rel);
    if (n == 0 || n >= MANIFEST_PATH_MAX || rel[0] == '/') return false;
    for (const char *part = rel; *part;) {
        const char *end = strchr(part, '/');
        const size_t len = end ? (size_t)(end - part) : strlen(part);
        if (len == 0 || (len == 1 && part[0] == '.') || (len == 2 && part[0] == '.' && part[1] == '.')) return false;
        for (size_t i = 0; i < len; i++)
            if (!isalnum((unsigned char)part[i]) && !strchr("_-.+", part[i])) return false;
        if (!end) break;
        part = end + 1;
        if (!*part) return false; /* a trailing '/' */
    }
    return true;
}

int manifest_path(const char *dir, const char *rel, char *path, size_t n, char *err, size_t errlen)
{
    if (!manifest_file_is_safe(rel)) return snprintf(err, errlen, "file '%s' is not a safe relative path.", rel), -1;
    if ((size_t)snprintf(path, n, "%s/%s", dir, rel) >= n)
        return snprintf(err, errlen, "%s/%s: the path is too long.", dir, rel), -1;
    /* every component below dir, the file itself included */
    const size_t base = strlen(dir) + 1;
    for (size_t i = base; path[i - 1]; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        const char kept = path[i];
        path[i] = '\0';
        struct stat st;
        const bool link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
        if (link) snprintf(err, errlen, "%s: a symbolic link; the manifest's files must lie in the export itself.", path);
        path[i] = kept;
        if (link) return -1;
    }
    return 0;
}

static const char *string_field(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static attnops_dtype dtype_named(const char *name)
{
    for (int d = ATTNOPS_DTYPE_UNSET + 1; d < ATTNOPS_DTYPE_COUNT; d++)
        if (!strcmp(name, attnops_dtype_name((attnops_dtype)d))) return (attnops_dtype)d;
    return 0;
}

static int parse_tensor(const ctx *c, const char *case_name, const cJSON *t, manifest_tensor *out)
{
    if (!harness_name_is_safe(t->string))
        return fail(c, case_name, "tensor '%.64s' has a name that is not 1 to %d letters, digits, '_', '-', '.' or "
                    "'+'", t->string, HARNESS_NAME_MAX);
    if (!cJSON_IsObject(t)) return fail(c, case_name, "tensor '%s' is not an object", t->string);
    const char *dup = harness_duplicate_key(t);
    if (dup) return fail(c, case_name, "tensor '%s': field '%.64s' is given twice", t->string, dup);
    snprintf(out->name, sizeof out->name, "%s", t->string);
    const char *file = string_field(t, "file"), *dtype = string_field(t, "dtype"), *role = string_field(t, "role");
    if (!file || !manifest_file_is_safe(file))
        return fail(c, case_name, "tensor '%s': field 'file' must be a relative path of letters, digits, '_', '-', "
                    "'.', '+' and '/' without '.' or '..' components, under %d characters", t->string,
                    MANIFEST_PATH_MAX);
    snprintf(out->file, sizeof out->file, "%s", file);
    if (!dtype || !(out->dtype = dtype_named(dtype)))
        return fail(c, case_name, "tensor '%s': field 'dtype' must name an attnops dtype (f32, bf16, ...)", t->string);
    size_t r = 0;
    while (role && r < sizeof ROLES / sizeof ROLES[0] && strcmp(role, ROLES[r])) r++;
    if (!role || r == sizeof ROLES / sizeof ROLES[0])
        return fail(c, case_name, "tensor '%s': field 'role' must be input, forward, output, mask, kernel or bench",
                    t->string);
    snprintf(out->role, sizeof out->role, "%s", role);
    out->counted = -1;
    return 0;
}

static int parse_case(const ctx *c, const cJSON *e, int index, manifest_case *out)
{
    char fallback[32];
    snprintf(fallback, sizeof fallback, "#%d", index);
    if (!cJSON_IsObject(e)) return fail(c, fallback, "is not an object");
    const char *name = string_field(e, "name"), *op = string_field(e, "op"), *rule = string_field(e, "compare");
    const char *label = name ? name : fallback, *dup = harness_duplicate_key(e);
    if (dup) return fail(c, label, "field '%.64s' is given twice", dup);
    if (!name || !harness_name_is_safe(name))
        return fail(c, label, "field 'name' must be 1 to %d letters, digits, '_', '-', '.' or '+'", HARNESS_NAME_MAX);
    snprintf(out->name, sizeof out->name, "%s", name);
    if (!op || !harness_op_parse(op, &out->op)) {
        char names[256];
        harness_op_names(names, sizeof names);
        return fail(c, label, "field 'op' must be %s", names);
    }
    if (!rule || !cmp_rule_parse(rule, &out->rule)) return fail(c, label, "field 'compare' must name a rule");
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(e, "tensors");
    if (!cJSON_IsObject(tensors)) return fail(c, label, "field 'tensors' must be an object");
    if ((dup = harness_duplicate_key(tensors))) return fail(c, label, "tensor '%.64s' is given twice", dup);
    const int n = cJSON_GetArraySize(tensors);
    out->tensors = calloc((size_t)(n ? n : 1), sizeof *out->tensors);
    if (!out->tensors) return fail(c, label, "out of memory");
    const cJSON *t = tensors->child;
    for (int i = 0; i < n; i++, t = t->next, out->ntensors++)
        if (parse_tensor(c, label, t, &out->tensors[i]) != 0) return -1;
    t = tensors->child;
    for (int i = 0; i < n; i++, t = t->next) {
        const cJSON *counted = cJSON_GetObjectItemCaseSensitive(t, "counted");
        if (!counted) continue;
        const int by = cJSON_IsString(counted) ? manifest_tensor_index(out, counted->valuestring) : -1;
        if (by < 0 || by == i)
            return fail(c, label, "tensor '%s': field 'counted' must name another tensor of the case", t->string);
        out->tensors[i].counted = by;
    }
    return 0;
}

void manifest_free(manifest *m)
{
    for (int i = 0; m->cases && i < m->ncases; i++) free(m->cases[i].tensors);
    free(m->cases);
    m->cases = NULL, m->ncases = 0;
}

int manifest_parse(const char *json, const char *origin, manifest *m, char *err, size_t errlen)
{
    const ctx c = {origin, err, errlen};
    memset(m, 0, sizeof *m);
    cJSON *root = cJSON_Parse(json);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(root, "cases");
    if (!cJSON_IsObject(root) || !cJSON_IsArray(cases)) {
        cJSON_Delete(root);
        return fail(&c, NULL, "not a manifest written by attnops golden (a JSON object with a 'cases' list)");
    }
    const char *dup = harness_duplicate_key(root);
    const int n = cJSON_GetArraySize(cases);
    int rc = dup ? fail(&c, NULL, "field '%.64s' is given twice", dup) : 0;
    if (rc == 0 && !(m->cases = calloc((size_t)(n ? n : 1), sizeof *m->cases))) rc = fail(&c, NULL, "out of memory");
    const cJSON *e = cases->child;
    for (int i = 0; rc == 0 && i < n; i++, e = e->next) {
        m->ncases = i + 1;
        rc = parse_case(&c, e, i, &m->cases[i]);
        for (int j = 0; rc == 0 && j < i; j++)
            if (!strcmp(m->cases[j].name, m->cases[i].name))
                rc = fail(&c, m->cases[i].name, "is the name of an earlier case too");
    }
    cJSON_Delete(root);
    if (rc != 0) manifest_free(m);
    return rc;
}

int manifest_tensor_index(const manifest_case *c, const char *name)
{
    for (int i = 0; i < c->ntensors; i++)
        if (!strcmp(c->tensors[i].name, name)) return i;
    return -1;
}
