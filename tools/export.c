/* The .npy export of `attnops golden` and `attnops run --save` (export.h). */
#include "export.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npy.h"

typedef struct export_tensor {
    const char *name, *role; /* role: input | forward | output | mask */
    attnops_tensor view;
    const uint8_t *defined;  /* optional [numel]: elements outside are undefined, written as 0 */
    const char *counted_by;  /* optional: the mask tensor that says which rows compare judges */
} export_tensor;

/* What the export writes of a chain other than the golden: the kernel
 * chain's computed tensors (its forward's too, which it may run itself),
 * the benchmark chain's outputs (what compare judges). */
static bool exported(const char *chain, const char *role)
{
    return !strcmp(role, "output") || (!strcmp(chain, "kernel") && !strcmp(role, "forward"));
}

/* The tensors of a FlashAttention case the manifest lists, present ones only. */
static int fa_tensors(const fa_case *c, export_tensor *out)
{
    const struct { const char *name, *role; const tu_tensor *t; } all[] = {
        {"query", "input", &c->q},           {"key", "input", &c->k},
        {"value", "input", &c->v},           {"dy", "input", &c->dy},
        {"query_rope", "input", &c->qr},     {"key_rope", "input", &c->kr},
        {"atten_mask", "input", &c->mask},   {"pse", "input", &c->pse},
        {"prefix", "input", &c->prefix},     {"q_start_idx", "input", &c->q_start},
        {"kv_start_idx", "input", &c->kv_start}, {"actual_seq_qlen", "input", &c->cu_q},
        {"actual_seq_kvlen", "input", &c->cu_kv}, {"d_scale_q", "input", &c->dsq},
        {"d_scale_k", "input", &c->dsk},     {"d_scale_v", "input", &c->dsv},
        {"d_scale_dy", "input", &c->dsdy},   {"d_scale_o", "input", &c->dso},
        {"attention_in", "forward", &c->out}, {"softmax_max", "forward", &c->smax},
        {"softmax_sum", "forward", &c->ssum}, {"dq", "output", &c->dq},
        {"dk", "output", &c->dk},            {"dv", "output", &c->dv},
        {"dq_rope", "output", &c->dqr},      {"dk_rope", "output", &c->dkr}};
    int n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i].t->block) out[n++] = (export_tensor){all[i].name, all[i].role, all[i].t->view, NULL, NULL};
    return n;
}

/* The tensors of a KeyPool case after kp_case_run: the inputs (the cache as
 * it was before the call), pooled_key (valid: its valid-row mask) and the
 * cache after the call, and valid_rows (i64 [B]), which compare masks
 * pooled_key with. */
static int kp_tensors(const kp_case *c, const tu_tensor *pooled, const uint8_t *valid, const attnops_tensor *valid_rows,
                      export_tensor *out)
{
    const attnops_tensor input_cache = kp_case_input_cache(c);
    const struct { const char *name; const attnops_tensor *v; bool present; } inputs[] = {
        {"hidden_states", &c->hidden.view, true}, {"wk", &c->wk.view, true},
        {"gate_weight", &c->gate.view, true},     {"ape", &c->ape.view, true},
        {"state_cache", &input_cache, true},      {"cache_block_table", &c->table.view, true},
        {"start_pos", &c->start.view, true},      {"cu_seqlens", &c->cu.view, c->spec.th},
        {"norm_weight", &c->norm_w.view, c->spec.norm}, {"norm_bias", &c->norm_b.view, c->spec.norm}};
    int n = 0;
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
        if (inputs[i].present) out[n++] = (export_tensor){inputs[i].name, "input", *inputs[i].v, NULL, NULL};
    out[n++] = (export_tensor){"pooled_key", "output", pooled->view, valid, "valid_rows"};
    out[n++] = (export_tensor){"state_cache_out", "output", c->cache_view, NULL, NULL};
    out[n++] = (export_tensor){"valid_rows", "mask", *valid_rows, NULL, NULL};
    return n;
}

/* The names an AttnRes chain's tensors point into while they are exported. */
typedef struct ar_names {
    char block[AR_CASE_MAX_L][16]; /* block_00 ... */
    ar_output outputs[AR_CASE_MAX_OUTPUTS];
} ar_names;

/* The tensors of an AttnRes case: its inputs -- block_00 ..., partial_block,
 * proj_weight, rmsnorm_gamma (with RMSNorm), grad_h -- and chain r's
 * outputs (ar_chain_outputs: the seed's first, then every other block's
 * gradient). */
static int ar_tensors(const ar_case *c, ar_chain *r, ar_names *names, export_tensor *out)
{
    const ar_case_spec *s = &c->spec;
    int n = 0;
    for (int64_t l = 0; l < s->N; l++) {
        snprintf(names->block[l], sizeof names->block[l], "block_%02d", (int)l);
        out[n++] = (export_tensor){names->block[l], "input", c->v[l].view, NULL, NULL};
    }
    if (s->partial) out[n++] = (export_tensor){"partial_block", "input", c->v[s->N].view, NULL, NULL};
    out[n++] = (export_tensor){"proj_weight", "input", c->w.view, NULL, NULL};
    if (s->rmsnorm) out[n++] = (export_tensor){"rmsnorm_gamma", "input", c->gamma.view, NULL, NULL};
    out[n++] = (export_tensor){"grad_h", "input", c->grad_h.view, NULL, NULL};
    int seed_n;
    const int no = ar_chain_outputs(c, r, names->outputs, &seed_n);
    for (int i = 0; i < no; i++)
        out[n++] = (export_tensor){names->outputs[i].name, "output", names->outputs[i].t->view, NULL, NULL};
    return n;
}

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

static cJSON *fa_attributes(const harness_case *hc, const fa_case *c)
{
    const attnops_fa_params *p = &c->bwd.p;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "input_layout", attnops_layout_name(p->input_layout));
    cJSON_AddNumberToObject(a, "head_num", (double)p->head_num);
    cJSON_AddNumberToObject(a, "scale_value", p->scale_value);
    cJSON_AddNumberToObject(a, "keep_prob", p->keep_prob);
    if (p->softcap > 0) cJSON_AddNumberToObject(a, "softcap", p->softcap); /* an attnops extension: no CANN attribute */
    cJSON_AddNumberToObject(a, "seed", (double)p->seed);
    cJSON_AddNumberToObject(a, "offset", (double)p->offset);
    cJSON_AddNumberToObject(a, "pre_tokens", (double)p->pre_tokens);
    cJSON_AddNumberToObject(a, "next_tokens", (double)p->next_tokens);
    cJSON_AddNumberToObject(a, "sparse_mode", (double)p->sparse_mode);
    cJSON_AddNumberToObject(a, "pse_type", (double)p->pse_type);
    cJSON_AddNumberToObject(a, "inner_precise", (double)p->inner_precise);
    cJSON_AddNumberToObject(a, "out_dtype", (double)p->out_dtype);
    cJSON_AddNumberToObject(a, "data_seed", (double)hc->data_seed);
    return a;
}

static cJSON *kp_attributes(const harness_case *hc, const kp_case *c)
{
    const attnops_key_pool_args p = kp_case_args(c, hc->kp.capacity, ATTNOPS_IMPL_REFERENCE);
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "layout", c->spec.th ? "TH" : "BSH");
    cJSON_AddNumberToObject(a, "cmp_ratio", (double)p.cmp_ratio);
    cJSON_AddNumberToObject(a, "norm_eps", p.norm_eps);
    cJSON_AddNumberToObject(a, "rotary_mode", (double)p.rotary_mode);
    cJSON_AddStringToObject(a, "capacity", p.capacity == ATTNOPS_KEY_POOL_CAPACITY_FIXED ? "fixed" : "current");
    cJSON_AddNumberToObject(a, "data_seed", (double)hc->data_seed);
    return a;
}

static cJSON *ar_attributes(const harness_case *hc)
{
    const ar_case_spec *s = &hc->ar;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "num_blocks", (double)s->N);
    cJSON_AddBoolToObject(a, "partial_block", s->partial);
    cJSON_AddBoolToObject(a, "enable_rmsnorm", s->rmsnorm);
    cJSON_AddNumberToObject(a, "scale", s->scale);
    cJSON_AddNumberToObject(a, "rmsnorm_eps", s->eps);
    cJSON_AddNumberToObject(a, "data_seed", (double)hc->data_seed);
    return a;
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

/* Writes the tensors of one chain: the golden's (chain NULL) as files
 * <case>/<name>.npy, or those of chain "kernel" or "bench" the export
 * takes as <case>/<chain>_<name>.npy with that chain as their role. */
static int export_tensors(export_set *x, const harness_case *hc, const export_tensor *ts, int nt, const char *chain,
                          cJSON *tensors)
{
    char prefix[16] = "", rel[600], path[1700], err[1800];
    if (chain) snprintf(prefix, sizeof prefix, "%s_", chain);
    for (int i = 0; i < nt; i++) {
        if (chain && !exported(chain, ts[i].role)) continue;
        const attnops_tensor *v = &ts[i].view;
        snprintf(rel, sizeof rel, "%s/%s%s.npy", hc->name, prefix, ts[i].name);
        snprintf(path, sizeof path, "%s/%s", x->dir, rel);
        char *data = contiguous(v);
        const size_t es = attnops_dtype_size(v->dtype);
        const int64_t numel = tu_numel(v);
        for (int64_t e = 0; ts[i].defined && e < numel; e++)
            if (!ts[i].defined[e]) memset(data + (size_t)e * es, 0, es);
        const int rc = npy_write(path, v->dtype, v->rank, v->shape, data, err, sizeof err);
        free(data);
        if (rc != 0) return fprintf(stderr, "attnops: %s\n", err), -1;
        char key[64];
        snprintf(key, sizeof key, "%s%s", prefix, ts[i].name);
        cJSON *t = cJSON_AddObjectToObject(tensors, key);
        cJSON_AddStringToObject(t, "file", rel);
        cJSON_AddStringToObject(t, "dtype", attnops_dtype_name(v->dtype));
        cJSON_AddStringToObject(t, "role", chain ? chain : ts[i].role);
        double dims[ATTNOPS_MAX_RANK];
        for (int d = 0; d < v->rank; d++) dims[d] = (double)v->shape[d];
        cJSON_AddItemToObject(t, "shape", cJSON_CreateDoubleArray(dims, v->rank));
        if (ts[i].counted_by && !chain) cJSON_AddStringToObject(t, "counted", ts[i].counted_by);
    }
    return 0;
}

/* One chain's tensors for the export. */
typedef struct export_chain {
    const export_tensor *ts;
    int n; /* 0: the chain is not exported */
} export_chain;

/* One manifest entry and its directory: the golden chain's tensors, the
 * kernel and benchmark chains' computed ones when given. */
static int export_entry(export_set *x, const harness_case *hc, cJSON *attributes, export_chain golden,
                        export_chain kernel, export_chain bench)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/%s", x->dir, hc->name);
    if (make_dir(dir) != 0) return cJSON_Delete(attributes), -1;
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddItemToArray(x->cases, entry);
    cJSON_AddStringToObject(entry, "name", hc->name);
    cJSON_AddStringToObject(entry, "op", harness_op_name(hc->op));
    cJSON_AddStringToObject(entry, "compare", cmp_rule_name(hc->rule));
    cJSON_AddItemToObject(entry, "attributes", attributes);
    cJSON *tensors = cJSON_AddObjectToObject(entry, "tensors");
    if (export_tensors(x, hc, golden.ts, golden.n, NULL, tensors) != 0) return -1;
    if (export_tensors(x, hc, kernel.ts, kernel.n, "kernel", tensors) != 0) return -1;
    return export_tensors(x, hc, bench.ts, bench.n, "bench", tensors);
}

int export_fa_case(export_set *x, const harness_case *hc, const fa_case *golden, const fa_case *kernel,
                   const fa_case *bench)
{
    export_tensor g[32], k[32], b[32];
    const export_chain gc = {g, fa_tensors(golden, g)}, kc = {k, kernel ? fa_tensors(kernel, k) : 0},
                       bc = {b, bench ? fa_tensors(bench, b) : 0};
    return export_entry(x, hc, fa_attributes(hc, golden), gc, kc, bc);
}

int export_ar_case(export_set *x, const harness_case *hc, const ar_case *c, ar_chain *golden, ar_chain *kernel,
                   ar_chain *bench)
{
    export_tensor g[2 * AR_CASE_MAX_OUTPUTS], k[2 * AR_CASE_MAX_OUTPUTS], b[2 * AR_CASE_MAX_OUTPUTS];
    ar_names gn, kn, bn;
    const export_chain gc = {g, ar_tensors(c, golden, &gn, g)}, kc = {k, kernel ? ar_tensors(c, kernel, &kn, k) : 0},
                       bc = {b, bench ? ar_tensors(c, bench, &bn, b) : 0};
    return export_entry(x, hc, ar_attributes(hc), gc, kc, bc);
}

int export_kp_case(export_set *x, const harness_case *hc, const kp_case *golden, const tu_tensor *golden_pooled,
                   const kp_case *kernel, const tu_tensor *kernel_pooled)
{
    const int64_t B = hc->kp.B;
    const attnops_tensor rows = attnops_tensor_contiguous((void *)golden->valid_rows, ATTNOPS_DTYPE_I64, 1, &B);
    uint8_t *valid = kp_valid_mask(golden->valid_rows, B, golden_pooled->view.rank, golden_pooled->view.shape);
    export_tensor g[16], k[16];
    const export_chain gc = {g, kp_tensors(golden, golden_pooled, valid, &rows, g)},
                       kc = {k, kernel ? kp_tensors(kernel, kernel_pooled, valid, &rows, k) : 0}, none = {NULL, 0};
    const int rc = export_entry(x, hc, kp_attributes(hc, golden), gc, kc, none);
    free(valid);
    return rc;
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
