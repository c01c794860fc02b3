/* The .npy export of `attnops golden` and `attnops run --save` (export.h). */
#include "export.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npy.h"

/* A case tensor's elements in C order (its view may have row padding):
 * innermost rows copied whole when they are contiguous. */
static void *contiguous(const attnops_tensor *v)
{
    const size_t es = attnops_dtype_size(v->dtype);
    const int64_t n = tu_numel(v), inner = v->rank ? v->shape[v->rank - 1] : 1;
    const bool rows = v->rank == 0 || v->strides[v->rank - 1] == 1;
    char *out = malloc((size_t)(n ? n : 1) * es);
    for (int64_t i = 0; i < n; i += rows ? inner : 1) {
        int64_t rem = i, off = 0;
        for (int d = v->rank - 1; d >= 0; d--) off += (rem % v->shape[d]) * v->strides[d], rem /= v->shape[d];
        memcpy(out + (size_t)i * es, (const char *)v->data + off * (int64_t)es, (rows ? (size_t)inner : 1) * es);
    }
    return out;
}

/* mkdir -p: an output directory's parents are created as well. */
static int make_dir(const char *path)
{
    char partial[1024];
    const size_t n = strlen(path);
    if (n >= sizeof partial) {
        fprintf(stderr, "attnops: directory path too long: %s\n", path);
        return -1;
    }
    memcpy(partial, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (partial[i] != '/' && partial[i] != '\0') continue;
        const char kept = partial[i];
        partial[i] = '\0';
        if (mkdir(partial, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "attnops: cannot create directory %s: %s\n", partial, strerror(errno));
            return -1;
        }
        partial[i] = kept;
    }
    return 0;
}

struct export_set {
    char dir[1024];
    cJSON *manifest, *cases;
};

export_set *export_open(const char *dir)
{
    if (make_dir(dir) != 0) return NULL;
    export_set *x = calloc(1, sizeof *x);
    snprintf(x->dir, sizeof x->dir, "%s", dir);
    x->manifest = cJSON_CreateObject();
    cJSON_AddStringToObject(x->manifest, "attnops_version", attnops_version());
    x->cases = cJSON_AddArrayToObject(x->manifest, "cases");
    return x;
}

/* What the export writes of a chain other than the golden: the kernel
 * chain's computed tensors (its forward's too, which it may run itself),
 * the benchmark chain's outputs (what compare judges). */
static bool exported(harness_chain chain, const char *role)
{
    return !strcmp(role, "output") || (chain == HARNESS_KERNEL && !strcmp(role, "forward"));
}

/* Writes the tensors one chain has: the golden's as files <case>/<name>.npy,
 * the kernel's and the benchmark's that `exported` takes as
 * <case>/<chain>_<name>.npy with that chain as their role. */
static int export_chain(export_set *x, const harness_run *r, harness_chain chain, cJSON *tensors)
{
    static const char *const CHAIN_NAME[HARNESS_CHAIN_COUNT] = {NULL, "kernel", "bench"};
    const char *name = CHAIN_NAME[chain];
    char prefix[16] = "", rel[600], path[1700], err[1800];
    if (name) snprintf(prefix, sizeof prefix, "%s_", name);
    for (int i = 0; i < r->ntensors; i++) {
        const harness_tensor *t = &r->tensors[i];
        const attnops_tensor *v = t->view[chain];
        if (!v || (name && !exported(chain, t->role))) continue;
        snprintf(rel, sizeof rel, "%s/%s%s.npy", r->hc->name, prefix, t->name);
        snprintf(path, sizeof path, "%s/%s", x->dir, rel);
        char *data = contiguous(v);
        const size_t es = attnops_dtype_size(v->dtype);
        const int64_t numel = tu_numel(v);
        for (int64_t e = 0; t->counted && e < numel; e++)
            if (!t->counted[e]) memset(data + (size_t)e * es, 0, es);
        const int rc = npy_write(path, v->dtype, v->rank, v->shape, data, err, sizeof err);
        free(data);
        if (rc != 0) return fprintf(stderr, "attnops: %s\n", err), -1;
        char key[64];
        snprintf(key, sizeof key, "%s%s", prefix, t->name);
        cJSON *e = cJSON_AddObjectToObject(tensors, key);
        cJSON_AddStringToObject(e, "file", rel);
        cJSON_AddStringToObject(e, "dtype", attnops_dtype_name(v->dtype));
        cJSON_AddStringToObject(e, "role", name ? name : t->role);
        double dims[ATTNOPS_MAX_RANK];
        for (int d = 0; d < v->rank; d++) dims[d] = (double)v->shape[d];
        cJSON_AddItemToObject(e, "shape", cJSON_CreateDoubleArray(dims, v->rank));
        if (t->counted_by && !name) cJSON_AddStringToObject(e, "counted", t->counted_by);
    }
    return 0;
}

int export_case(export_set *x, const harness_run *r)
{
    const harness_case *hc = r->hc;
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/%s", x->dir, hc->name);
    if (make_dir(dir) != 0) return -1;
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddItemToArray(x->cases, entry);
    cJSON_AddStringToObject(entry, "name", hc->name);
    cJSON_AddStringToObject(entry, "op", harness_op_name(hc->op));
    cJSON_AddStringToObject(entry, "compare", cmp_rule_name(hc->rule));
    cJSON_AddItemToObject(entry, "attributes", cJSON_Duplicate(r->attributes, true));
    cJSON *tensors = cJSON_AddObjectToObject(entry, "tensors");
    for (int c = 0; c < HARNESS_CHAIN_COUNT; c++)
        if (export_chain(x, r, (harness_chain)c, tensors) != 0) return -1;
    return 0;
}

int export_close(export_set *x)

{
    char path[1100];
    snprintf(path, sizeof path, "%s/manifest.json", x->dir);
    char *text = cJSON_Print(x->manifest);
    FILE *f = fopen(path, "w");
    const bool ok = f && fputs(text, f) >= 0 && fclose(f) == 0;
    if (!ok) fprintf(stderr, "attnops: cannot write %s\n", path);
    free(text);
    cJSON_Delete(x->manifest);
    free(x);
    return ok ? 0 : -1;
}
