#include "harness_case.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct parse_ctx {
    const char *origin, *name;
    char *err;
    size_t errlen;
} parse_ctx;

static bool fail(parse_ctx *c, const char *field, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (field) snprintf(c->err, c->errlen, "%s: case '%s': field '%s' %s.", c->origin, c->name, field, what);
    else snprintf(c->err, c->errlen, "%s: case '%s': %s.", c->origin, c->name, what);
    return false;
}

static bool get_int(parse_ctx *c, const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
    const double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(x == floor(x)) || x < (double)lo || x > (double)hi)
        return fail(c, v->string, "must be an integer in [%lld, %lld]", (long long)lo, (long long)hi);
    *out = (int64_t)x;
    return true;
}

static bool get_str(parse_ctx *c, const cJSON *v, const char **out)
{
    if (!cJSON_IsString(v)) return fail(c, v->string, "must be a string");
    *out = v->valuestring;
    return true;
}

/* A list of at most 32 non-negative integers. */
static bool get_list(parse_ctx *c, const cJSON *v, int64_t *out, int *n)
{
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > 32 || cJSON_GetArraySize(v) < 1)
        return fail(c, v->string, "must be a list of 1 to 32 integers");
    *n = 0;
    for (const cJSON *e = v->child; e; e = e->next) {
        const double x = cJSON_IsNumber(e) ? e->valuedouble : NAN;
        if (!(x == floor(x)) || x < 0 || x > 1e9) return fail(c, v->string, "must hold non-negative integers");
        out[(*n)++] = (int64_t)x;
    }
    return true;
}

/* A dtype by any of its spellings (the seed's tables write CANN's: fp16,
 * fp32, fp8_e4m3fn), and the seed's "bp16" for bf16 where allow_bp16. */
static bool get_dtype(parse_ctx *c, const cJSON *v, bool allow_bp16, attnops_dtype *out, bool *was_bp16)
{
    const char *s = NULL;
    if (!get_str(c, v, &s)) return false;
    const attnops_dtype d = attnops_dtype_from_string(s);
    if (d && attnops_dtype_traits_of(d)->is_float) return *out = d, true;
    if (allow_bp16 && !strcmp(s, "bp16")) return *out = ATTNOPS_DTYPE_BF16, *was_bp16 = true, true;
    return fail(c, v->string, "is '%s'; it must be fp16, bf16, fp32, fp8_e5m2 or fp8_e4m3fn", s);
}

/* JSON true / false (or 1 / 0, as the seed's tables write flags). */
static bool get_bool(parse_ctx *c, const cJSON *v, bool *out)
{
    if (cJSON_IsBool(v)) return *out = cJSON_IsTrue(v), true;
    if (cJSON_IsNumber(v) && (v->valuedouble == 0.0 || v->valuedouble == 1.0)) return *out = v->valuedouble != 0.0, true;
    return fail(c, v->string, "must be true or false");
}

static bool parse_rule(parse_ctx *c, const char *name, cmp_rule *rule)
{
    if (cmp_rule_parse(name, rule)) return true;
    return fail(c, "compare", "is '%s'; it must be dual, triple, isclose, allclose, thousandth or ten-thousandth", name);
}

typedef struct field_name {
    const char *name;
    int f;
} field_name;

/* The field number of key k in a table; -1 when unknown. */
static int field_in(const field_name *fields, size_t n, const char *k)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, fields[i].name)) return fields[i].f;
    return -1;
}

static bool is_fp8(attnops_dtype d) { return d == ATTNOPS_DTYPE_F8_E4M3FN || d == ATTNOPS_DTYPE_F8_E5M2; }

enum {
    F_B, F_N1, F_N2, F_S1, F_S2, F_D, F_DV, F_DTYPE, F_OUT, F_LAYOUT, F_MODE, F_PRE, F_NEXT, F_PSE_TYPE, F_PSE_SHAPE,
    F_MASK_DTYPE, F_MASK_SHAPE, F_KEEP, F_SEED, F_OFFSET, F_ROPE, F_SEQQ, F_SEQKV, F_PREFIX, F_SCALE, F_DATA_SEED,
    F_COMPARE, F_INNER, F_IGNORED, F_NAME, F_OP, F_Q_START, F_KV_START, F_SOFTCAP, F_COUNT
};

/* The raw fields of one case before they are combined. */
typedef struct raw_case {
    bool has[F_COUNT];
    int64_t B, N1, N2, S1, S2, D, Dv, sparse_mode, pre, next, pse_type, seed, offset, rope, inner_precise, data_seed;
    int64_t q_start, kv_start;
    attnops_dtype dtype, out_dtype;
    bool bp16;
    const char *layout, *pse_shape, *mask_dtype, *mask_shape, *compare;
    double keep, scale, softcap;
    int nq, nkv, nprefix;
    int64_t q[32], kv[32], prefix[32];
} raw_case;

static int field_of(const char *k)
{
    static const field_name fields[] = {
        {"B", F_B}, {"N1", F_N1}, {"N2", F_N2}, {"S1", F_S1}, {"S2", F_S2}, {"D", F_D}, {"D_V", F_DV},
        {"dtype", F_DTYPE}, {"out_dtype", F_OUT}, {"input_layout", F_LAYOUT}, {"sparse_mode", F_MODE},
        {"pre_tockens_input", F_PRE}, {"pre_tokens", F_PRE}, {"pre_tockens", F_PRE},
        {"next_tockens_input", F_NEXT}, {"next_tokens", F_NEXT}, {"next_tockens", F_NEXT},
        {"pse_type", F_PSE_TYPE}, {"pse_shape", F_PSE_SHAPE}, {"atten_mask_dtype", F_MASK_DTYPE},
        {"atten_mask_shape", F_MASK_SHAPE}, {"drop_out_possibility", F_KEEP}, {"seed", F_SEED},
        {"offset", F_OFFSET}, {"rope", F_ROPE}, {"actual_seq_qlen", F_SEQQ}, {"actual_seq_kvlen", F_SEQKV},
        {"prefix", F_PREFIX}, {"scale", F_SCALE}, {"data_seed", F_DATA_SEED}, {"compare", F_COMPARE},
        {"inner_precise", F_INNER}, {"is_deter", F_IGNORED}, {"sparse", F_IGNORED}, {"padding_mask", F_IGNORED},
        {"inner_drop", F_IGNORED}, {"name", F_NAME}, {"op", F_OP}, {"q_start_idx", F_Q_START},
        {"kv_start_idx", F_KV_START}, {"softcap", F_SOFTCAP}};
    return field_in(fields, sizeof fields / sizeof fields[0], k);
}

static bool read_fields(parse_ctx *c, const cJSON *obj, raw_case *r)
{
    const int64_t big = (int64_t)1 << 40, tok = 2147483647;
    for (const cJSON *v = obj->child; v; v = v->next) {
        const int f = field_of(v->string);
        if (f < 0) return fail(c, v->string, "is not a known case field");
        if (f == F_IGNORED || f == F_NAME || f == F_OP) continue; /* op: read by parse_one */
        if (r->has[f]) return fail(c, v->string, "is given twice (or with its alias)");
        r->has[f] = true;
        bool ok = true;
        switch (f) {
        case F_B: ok = get_int(c, v, 1, big, &r->B); break;
        case F_N1: ok = get_int(c, v, 1, big, &r->N1); break;
        case F_N2: ok = get_int(c, v, 1, big, &r->N2); break;
        case F_S1: ok = get_int(c, v, 1, big, &r->S1); break;
        case F_S2: ok = get_int(c, v, 1, big, &r->S2); break;
        case F_D: ok = get_int(c, v, 1, big, &r->D); break;
        case F_DV: ok = get_int(c, v, 1, big, &r->Dv); break;
        case F_DTYPE: ok = get_dtype(c, v, false, &r->dtype, &r->bp16); break;
        case F_OUT: ok = get_dtype(c, v, true, &r->out_dtype, &r->bp16); break;
        case F_LAYOUT: ok = get_str(c, v, &r->layout); break;
        case F_MODE: ok = get_int(c, v, 0, 8, &r->sparse_mode); break;
        case F_PRE: ok = get_int(c, v, -tok, tok, &r->pre); break;
        case F_NEXT: ok = get_int(c, v, -tok, tok, &r->next); break;
        case F_PSE_TYPE: ok = get_int(c, v, 0, 3, &r->pse_type); break;
        case F_PSE_SHAPE: ok = get_str(c, v, &r->pse_shape); break;
        case F_MASK_DTYPE: ok = get_str(c, v, &r->mask_dtype); break;
        case F_MASK_SHAPE: ok = get_str(c, v, &r->mask_shape); break;
        case F_KEEP:
            r->keep = cJSON_IsNumber(v) ? v->valuedouble : NAN;
            if (!(r->keep > 0.0 && r->keep <= 1.0)) ok = fail(c, v->string, "is the keep probability; it must lie in (0, 1]");
            break;
        case F_SEED: ok = get_int(c, v, 0, big, &r->seed); break;
        case F_OFFSET: ok = get_int(c, v, 0, big, &r->offset); break;
        case F_ROPE: ok = get_int(c, v, 0, 1, &r->rope); break;
        case F_SEQQ: ok = get_list(c, v, r->q, &r->nq); break;
        case F_SEQKV: ok = get_list(c, v, r->kv, &r->nkv); break;
        case F_PREFIX: ok = get_list(c, v, r->prefix, &r->nprefix); break;
        case F_SCALE:
            r->scale = cJSON_IsNumber(v) ? v->valuedouble : NAN;
            if (!(r->scale > 0.0 && isfinite(r->scale))) ok = fail(c, v->string, "must be a positive number");
            break;
        case F_DATA_SEED: ok = get_int(c, v, 0, big, &r->data_seed); break;
        case F_SOFTCAP: /* an attnops extension (flash-attn's softcap): the library validates the rest */
            r->softcap = cJSON_IsNumber(v) ? v->valuedouble : NAN;
            if (!(r->softcap > 0.0 && isfinite(r->softcap))) ok = fail(c, v->string, "must be a positive number");
            break;
        /* global start of an externally split chunk (pse_type 2/3 positions) */
        case F_Q_START: ok = get_int(c, v, -tok, tok, &r->q_start); break;
        case F_KV_START: ok = get_int(c, v, -tok, tok, &r->kv_start); break;
        case F_COMPARE: ok = get_str(c, v, &r->compare); break;
        case F_INNER: ok = get_int(c, v, 0, 2, &r->inner_precise); break;
        default: break;
        }
        if (!ok) return false;
    }
    return true;
}

static bool map_mask(parse_ctx *c, const raw_case *r, fa_case_shape *s)
{
    const char *shape = r->has[F_MASK_SHAPE] ? r->mask_shape : "NONE";
    if (!strcmp(shape, "NONE")) return true; /* no mask: the op computes full attention whatever the mode */
    static const struct { const char *name; fa_case_mask m; } shapes[] = {
        {"SS", FA_CASE_MASK_SS}, {"11SS", FA_CASE_MASK_11SS}, {"B1SS", FA_CASE_MASK_B1SS}, {"BNSS", FA_CASE_MASK_BNSS}};
    s->mask = FA_CASE_MASK_NONE;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!strcmp(shape, shapes[i].name)) s->mask = shapes[i].m;
    if (s->mask == FA_CASE_MASK_NONE)
        return fail(c, "atten_mask_shape", "is '%s'; it must be NONE, SS, 11SS, B1SS or BNSS", shape);
    const int64_t m = s->sparse_mode;
    if (m == 2 || m == 3 || m == 4 || m == 6 || m == 7 || m == 8) s->mask = FA_CASE_MASK_COMPRESSED; /* what the op takes */
    const char *dt = r->has[F_MASK_DTYPE] ? r->mask_dtype : "BOOL";
    if (!strcmp(dt, "BOOL") || !strcmp(dt, "bool")) s->mask_dtype = ATTNOPS_DTYPE_BOOL;
    else if (!strcmp(dt, "uint8") || !strcmp(dt, "UINT8")) s->mask_dtype = ATTNOPS_DTYPE_U8;
    else return fail(c, "atten_mask_dtype", "is '%s'; a mask must be BOOL or uint8", dt);
    return true;
}

static bool map_pse(parse_ctx *c, const raw_case *r, fa_case_shape *s)
{
    const char *shape = r->has[F_PSE_SHAPE] ? r->pse_shape : "NONE";
    s->pse_type = r->has[F_PSE_TYPE] ? r->pse_type : 1;
    if (!strcmp(shape, "NONE")) {
        if (s->pse_type != 1) return fail(c, "pse_type", "is %lld but pse_shape is NONE", (long long)s->pse_type);
        return true;
    }
    static const struct { const char *name; fa_case_pse p; bool slopes; } shapes[] = {
        {"BNSS", FA_CASE_PSE_BNSS, false}, {"BN1S", FA_CASE_PSE_BN1S, false}, {"1NSS", FA_CASE_PSE_1NSS, false},
        {"BNHS", FA_CASE_PSE_BNHS, false}, {"1NHS", FA_CASE_PSE_1NHS, false},
        {"BN", FA_CASE_PSE_SLOPES_BN, true}, {"N", FA_CASE_PSE_SLOPES_N, true}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        if (strcmp(shape, shapes[i].name)) continue;
        if (shapes[i].slopes != (s->pse_type >= 2))
            return fail(c, "pse_shape", "%s goes with pse_type %s, not %lld", shape, shapes[i].slopes ? "2 or 3" : "0 or 1",
                        (long long)s->pse_type);
        s->pse = shapes[i].p;
        return true;
    }
    return fail(c, "pse_shape", "is '%s'; it must be NONE, BNSS, BN1S, 1NSS, BNHS, 1NHS, BN or N", shape);
}

static bool parse_fa(parse_ctx *c, const cJSON *obj, harness_case *h)
{
    raw_case r;
    memset(&r, 0, sizeof r);
    if (!read_fields(c, obj, &r)) return false;
    static const int required[] = {F_N1, F_N2, F_D, F_DTYPE, F_LAYOUT};
    static const char *const required_names[] = {"N1", "N2", "D", "dtype", "input_layout"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!r.has[required[i]]) return fail(c, required_names[i], "is missing");

    fa_case_shape *s = &h->shape;
    const char *spec = "B=1"; /* fa_case_parse's defaults, then the fields */
    fa_case_parse(spec, s);
    s->N1 = r.N1, s->N2 = r.N2, s->D = r.D, s->Dv = r.has[F_DV] ? r.Dv : r.D, s->dtype = r.dtype;
    s->layout = attnops_layout_from_string(r.layout);
    if (s->layout == ATTNOPS_LAYOUT_UNSET)
        return fail(c, "input_layout", "is '%s'; it must be BNSD, BSND, BSH, SBH or TND", r.layout);
    if (is_fp8(s->dtype)) {
        if (!r.has[F_OUT] || (r.out_dtype != ATTNOPS_DTYPE_F16 && r.out_dtype != ATTNOPS_DTYPE_BF16))
            return fail(c, "out_dtype", "must be fp16 or bf16 with FP8 inputs");
        s->out_dtype = r.out_dtype;
        if (r.bp16) snprintf(h->note, sizeof h->note, "out_dtype \"bp16\" read as bf16 (the seed's typo)");
    } else if (r.has[F_OUT] && (r.out_dtype != s->dtype || r.bp16)) {
        return fail(c, "out_dtype", "must equal dtype except for FP8 inputs");
    }
    if (r.rope) {
        if (s->D <= 128) return fail(c, "rope", "is 1 but D = %lld; the golden splits D at column 128", (long long)s->D);
        s->Dr = s->D - 128, s->D = 128;
    }
    const bool tnd = s->layout == ATTNOPS_LAYOUT_TND;
    if (tnd) {
        if (!r.has[F_SEQQ]) return fail(c, "actual_seq_qlen", "is missing; layout TND takes per-batch lengths");
        if (r.has[F_SEQKV] && r.nkv != r.nq)
            return fail(c, "actual_seq_kvlen", "has %d lengths but actual_seq_qlen %d", r.nkv, r.nq);
        s->nseq = r.nq;
        int64_t m1 = 0, m2 = 0;
        for (int b = 0; b < r.nq; b++) {
            s->seq_q[b] = r.q[b], s->seq_kv[b] = r.has[F_SEQKV] ? r.kv[b] : r.q[b];
            m1 = s->seq_q[b] > m1 ? s->seq_q[b] : m1, m2 = s->seq_kv[b] > m2 ? s->seq_kv[b] : m2;
        }
        if (r.has[F_B] && r.B != r.nq) return fail(c, "B", "is %lld but actual_seq_qlen has %d batches", (long long)r.B, r.nq);
        if (r.has[F_S1] && r.S1 != m1) return fail(c, "S1", "is %lld but the longest query batch is %lld", (long long)r.S1, (long long)m1);
        if (r.has[F_S2] && r.S2 != m2) return fail(c, "S2", "is %lld but the longest key batch is %lld", (long long)r.S2, (long long)m2);
    } else {
        if (r.has[F_SEQQ] || r.has[F_SEQKV]) return fail(c, "actual_seq_qlen", "describes TND batches only");
        static const int dims[] = {F_B, F_S1, F_S2};
        static const char *const dim_names[] = {"B", "S1", "S2"};
        for (int i = 0; i < 3; i++)
            if (!r.has[dims[i]]) return fail(c, dim_names[i], "is missing");
        s->B = r.B, s->S1 = r.S1, s->S2 = r.S2;
    }
    s->sparse_mode = r.sparse_mode;
    s->pre = r.has[F_PRE] ? r.pre : 2147483647;
    s->next = r.has[F_NEXT] ? r.next : 2147483647;
    s->inner_precise = r.inner_precise;
    if (!map_mask(c, &r, s) || !map_pse(c, &r, s)) return false;
    if (r.has[F_PREFIX]) {
        s->nprefix = r.nprefix;
        memcpy(s->prefix, r.prefix, sizeof r.prefix);
    }
    s->q_start = r.q_start, s->kv_start = r.kv_start;
    if (r.has[F_KEEP] && r.keep < 1.0) {
        s->keep_prob = r.keep;
        s->seed = r.has[F_SEED] ? r.seed : 2;
        s->offset = r.offset;
    }
    s->scale = r.has[F_SCALE] ? r.scale : 0.0;
    s->softcap = r.has[F_SOFTCAP] ? r.softcap : 0.0;
    h->data_seed = r.has[F_DATA_SEED] ? (uint64_t)r.data_seed : 1;
    /* The seed's dual rule bounds an element at 0.5 % of its magnitude, finer
     * than one bf16 rounding step (up to 2^-7 relative): a correct bf16
     * kernel fails it.  bf16 cases default to PyPTO's bf16 rule instead. */
    h->rule = s->dtype == ATTNOPS_DTYPE_BF16 ? CMP_ALLCLOSE : CMP_DUAL;
    return !r.has[F_COMPARE] || parse_rule(c, r.compare, &h->rule);
}

enum {
    K_LAYOUT, K_LENS, K_STARTS, K_RATIO, K_BLOCK, K_SCRAMBLE, K_NORM, K_H, K_D, K_DTYPE, K_CAPACITY, K_DATA_SEED,
    K_COMPARE, K_SKIP, K_COUNT
};

/* A KeyPool case: the seed's precision-test parameters (spec A.6). */
static bool parse_keypool(parse_ctx *c, const cJSON *obj, harness_case *h)
{
    static const field_name fields[] = {
        {"layout", K_LAYOUT}, {"lens", K_LENS}, {"starts", K_STARTS}, {"cmp_ratio", K_RATIO},
        {"block_size", K_BLOCK}, {"scramble", K_SCRAMBLE}, {"norm", K_NORM}, {"norm_on", K_NORM}, {"H", K_H},
        {"D", K_D}, {"dtype", K_DTYPE}, {"capacity", K_CAPACITY}, {"data_seed", K_DATA_SEED},
        {"compare", K_COMPARE}, {"op", K_SKIP}, {"name", K_SKIP}};
    const int64_t big = (int64_t)1 << 40;
    kp_case_spec *s = &h->kp;
    *s = (kp_case_spec){.cmp_ratio = 4, .H = 4096, .D = 128, .dtype = ATTNOPS_DTYPE_BF16}; /* the seed's H, D, dtype */
    bool has[K_COUNT] = {false};
    const char *layout = NULL, *dtype = NULL, *capacity = NULL, *compare = NULL;
    int64_t lens[32], starts[32], data_seed = 1;
    int nlens = 0, nstarts = 0;
    for (const cJSON *v = obj->child; v; v = v->next) {
        const int f = field_in(fields, sizeof fields / sizeof fields[0], v->string);
        if (f < 0) return fail(c, v->string, "is not a known KeyPool case field");
        if (f == K_SKIP) continue;
        if (has[f]) return fail(c, v->string, "is given twice (or with its alias)");
        has[f] = true;
        bool ok = true;
        switch (f) {
        case K_LAYOUT: ok = get_str(c, v, &layout); break;
        case K_LENS: ok = get_list(c, v, lens, &nlens); break;
        case K_STARTS: ok = get_list(c, v, starts, &nstarts); break;
        case K_RATIO:
            ok = get_int(c, v, 2, 128, &s->cmp_ratio);
            if (ok && (s->cmp_ratio & (s->cmp_ratio - 1)))
                ok = fail(c, v->string, "is %lld; it must be 2, 4, 8, 16, 32, 64 or 128", (long long)s->cmp_ratio);
            break;
        case K_BLOCK: ok = get_int(c, v, 1, big, &s->block_size); break;
        case K_SCRAMBLE: ok = get_bool(c, v, &s->scramble); break;
        case K_NORM: ok = get_bool(c, v, &s->norm); break;
        case K_H: ok = get_int(c, v, 1, big, &s->H); break;
        case K_D: ok = get_int(c, v, 1, big, &s->D); break;
        case K_DTYPE: ok = get_str(c, v, &dtype); break;
        case K_CAPACITY: ok = get_str(c, v, &capacity); break;
        case K_DATA_SEED: ok = get_int(c, v, 0, big, &data_seed); break;
        case K_COMPARE: ok = get_str(c, v, &compare); break;
        default: break;
        }
        if (!ok) return false;
    }
    static const int required[] = {K_LAYOUT, K_LENS, K_BLOCK};
    static const char *const required_names[] = {"layout", "lens", "block_size"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!has[required[i]]) return fail(c, required_names[i], "is missing");
    if (strcmp(layout, "BSH") && strcmp(layout, "TH")) return fail(c, "layout", "is '%s'; it must be BSH or TH", layout);
    s->th = !strcmp(layout, "TH");
    if (has[K_STARTS] && nstarts != nlens) return fail(c, "starts", "has %d values but lens has %d", nstarts, nlens);
    s->B = nlens;
    for (int b = 0; b < nlens; b++) {
        if (!s->th && lens[b] != lens[0])
            return fail(c, "lens", "holds %lld and %lld; in layout BSH every batch has S tokens", (long long)lens[0],
                        (long long)lens[b]);
        s->len[b] = lens[b];
        s->start[b] = has[K_STARTS] ? starts[b] : 0;
    }
    if (dtype) {
        s->dtype = attnops_dtype_from_string(dtype);
        if (s->dtype != ATTNOPS_DTYPE_BF16 && s->dtype != ATTNOPS_DTYPE_F16)
            return fail(c, "dtype", "is '%s'; KeyPool takes bf16 or fp16", dtype);
    }
    if (capacity) {
        if (!strcmp(capacity, "current")) s->capacity = ATTNOPS_KEY_POOL_CAPACITY_CURRENT;
        else if (!strcmp(capacity, "fixed")) s->capacity = ATTNOPS_KEY_POOL_CAPACITY_FIXED;
        else return fail(c, "capacity", "is '%s'; it must be current or fixed", capacity);
    }
    h->data_seed = (uint64_t)data_seed;
    h->rule = CMP_ISCLOSE;
    if (compare && !parse_rule(c, compare, &h->rule)) return false;
    if (h->rule == CMP_TRIPLE) return fail(c, "compare", "is 'triple', which needs a benchmark chain; KeyPool has none");
    return true;
}

enum {
    A_B, A_T, A_N, A_D, A_DTYPE, A_PARTIAL, A_RMSNORM, A_RANDOM_GAMMA, A_SCALE, A_EPS, A_DATA_SEED, A_COMPARE, A_SKIP,
    A_COUNT
};

/* A Block Attention Residuals case: the seed's test parameters (spec B.3). */
static bool parse_attnres(parse_ctx *c, const cJSON *obj, harness_case *h)
{
    static const field_name fields[] = {
        {"B", A_B}, {"T", A_T}, {"N", A_N}, {"D", A_D}, {"dtype", A_DTYPE}, {"partial", A_PARTIAL},
        {"has_partial_block", A_PARTIAL}, {"rmsnorm", A_RMSNORM}, {"enable_rmsnorm", A_RMSNORM},
        {"random_gamma", A_RANDOM_GAMMA}, {"scale", A_SCALE}, {"eps", A_EPS}, {"data_seed", A_DATA_SEED},
        {"compare", A_COMPARE}, {"op", A_SKIP}, {"name", A_SKIP}};
    const int64_t big = (int64_t)1 << 40;
    ar_case_spec *s = &h->ar;
    *s = (ar_case_spec){.dtype = ATTNOPS_DTYPE_BF16, .partial = true, .rmsnorm = true, .scale = 1.0, .eps = 1e-6};
    bool has[A_COUNT] = {false};
    const char *dtype = NULL, *compare = NULL;
    int64_t data_seed = 1;
    for (const cJSON *v = obj->child; v; v = v->next) {
        const int f = field_in(fields, sizeof fields / sizeof fields[0], v->string);
        if (f < 0) return fail(c, v->string, "is not a known AttnRes case field");
        if (f == A_SKIP) continue;
        if (has[f]) return fail(c, v->string, "is given twice (or with its alias)");
        has[f] = true;
        const double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
        bool ok = true;
        switch (f) {
        case A_B: ok = get_int(c, v, 0, big, &s->B); break;
        case A_T: ok = get_int(c, v, 0, big, &s->T); break;
        case A_N: ok = get_int(c, v, 1, 127, &s->N); break;
        case A_D: ok = get_int(c, v, 1, big, &s->D); break;
        case A_DTYPE: ok = get_str(c, v, &dtype); break;
        case A_PARTIAL: ok = get_bool(c, v, &s->partial); break;
        case A_RMSNORM: ok = get_bool(c, v, &s->rmsnorm); break;
        case A_RANDOM_GAMMA: ok = get_bool(c, v, &s->random_gamma); break;
        case A_SCALE: /* finite as the f32 the operator multiplies by */
            if (!isfinite((float)x)) ok = fail(c, v->string, "must be a finite number");
            s->scale = x;
            break;
        case A_EPS:
            if (!((float)x > 0.0f && isfinite((float)x))) ok = fail(c, v->string, "must be a positive number");
            s->eps = x;
            break;
        case A_DATA_SEED: ok = get_int(c, v, 0, big, &data_seed); break;
        case A_COMPARE: ok = get_str(c, v, &compare); break;
        default: break;
        }
        if (!ok) return false;
    }
    static const int required[] = {A_B, A_T, A_N, A_D};
    static const char *const required_names[] = {"B", "T", "N", "D"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!has[required[i]]) return fail(c, required_names[i], "is missing");
    if (dtype) {
        s->dtype = attnops_dtype_from_string(dtype);
        if (s->dtype != ATTNOPS_DTYPE_BF16 && s->dtype != ATTNOPS_DTYPE_F16 && s->dtype != ATTNOPS_DTYPE_F32)
            return fail(c, "dtype", "is '%s'; AttnRes takes bf16, fp16 or fp32", dtype);
    }
    h->data_seed = (uint64_t)data_seed;
    h->rule = CMP_TRIPLE;
    return !compare || parse_rule(c, compare, &h->rule);
}

static const char *const OP_NAMES[HARNESS_OP_COUNT] = {"flash_attention_grad", "keypool", "attnres"};

const char *harness_op_name(harness_op op) { return OP_NAMES[op]; }

bool harness_op_parse(const char *name, harness_op *op)
{
    for (int i = 0; i < HARNESS_OP_COUNT; i++)
        if (name && !strcmp(name, OP_NAMES[i])) return *op = (harness_op)i, true;
    return false;
}

attnops_dtype harness_triple_dtype(harness_op op, attnops_dtype dtype)
{
    return op == HARNESS_OP_ATTNRES ? ATTNOPS_DTYPE_F32 : dtype;
}

const char *harness_duplicate_key(const cJSON *obj)
{
    for (const cJSON *a = obj->child; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (a->string && b->string && !strcmp(a->string, b->string)) return a->string;
    return NULL;
}

bool harness_name_is_safe(const char *name)
{
    const size_t n = strlen(name);
    if (n == 0 || n > HARNESS_NAME_MAX || name[0] == '.') return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("_-.+", name[i])) return false;
    return true;
}

/* What the case's tensors need, roughly and from above (as doubles: the
 * dims are untrusted, and their product must not overflow before it is
 * checked): every tensor the harness allocates, each also held as doubles
 * by the comparison. */
static double case_bytes(const harness_case *h)
{
    const double f64 = 8.0;
    if (h->op == HARNESS_OP_KEYPOOL) {
        const kp_case_spec *k = &h->kp;
        double tokens = 0.0, blocks = 1.0;
        for (int b = 0; b < k->B; b++) {
            tokens += (double)k->len[b];
            blocks += ceil(((double)k->start[b] + (double)k->len[b]) / (double)k->block_size) + 1.0;
        }
        return f64 * ((double)k->H * (tokens + 2.0 * (double)k->D) + blocks * (double)k->block_size * 4.0 *
                      (double)k->D + tokens * (double)k->D);
    }
    if (h->op == HARNESS_OP_ATTNRES) {
        const ar_case_spec *a = &h->ar;
        return f64 * 2.0 * ((double)a->N + 3.0) * (double)a->B * (double)a->T * (double)a->D;
    }
    const fa_case_shape *s = &h->shape;
    double rows_q = (double)s->B * (double)s->S1, rows_kv = (double)s->B * (double)s->S2;
    if (s->layout == ATTNOPS_LAYOUT_TND) {
        rows_q = rows_kv = 0.0;
        for (int b = 0; b < s->nseq; b++) rows_q += (double)s->seq_q[b], rows_kv += (double)s->seq_kv[b];
    }
    const double d = (double)(s->D > s->Dv ? s->D : s->Dv) + (double)s->Dr;
    const double scores = s->mask != FA_CASE_MASK_NONE || s->pse != FA_CASE_PSE_NONE
                              ? (double)s->B * (double)s->N1 * (double)s->S1 * (double)s->S2 : 0.0;
    return f64 * (5.0 * rows_q * (double)s->N1 * d + 5.0 * rows_kv * (double)s->N2 * d + 2.0 * scores +
                  16.0 * rows_q * (double)s->N1);
}

static bool parse_one(parse_ctx *c, const cJSON *obj, harness_case *h)
{
    if (!cJSON_IsObject(obj)) return fail(c, NULL, "is not a JSON object");
    if (!harness_name_is_safe(h->name))
        return fail(c, NULL, "has a name that is not 1 to %d letters, digits, '_', '-', '.' or '+' (not starting "
                    "with '.'); it names the export's directory", HARNESS_NAME_MAX);
    const char *dup = harness_duplicate_key(obj);
    if (dup) return fail(c, dup, "is given twice");
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(obj, "op");
    h->op = HARNESS_OP_FA_GRAD;
    if (op && !(cJSON_IsString(op) && harness_op_parse(op->valuestring, &h->op)))
        return fail(c, "op", "must be \"flash_attention_grad\" (the default), \"keypool\" or \"attnres\"");
    const bool ok = h->op == HARNESS_OP_KEYPOOL   ? parse_keypool(c, obj, h)
                    : h->op == HARNESS_OP_ATTNRES ? parse_attnres(c, obj, h)
                                                  : parse_fa(c, obj, h);
    if (!ok) return false;
    const double bytes = case_bytes(h), limit = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
    if (!(bytes <= limit))
        return fail(c, NULL, "needs about %.3g GB for its tensors, more than this machine's %.3g GB of memory",
                    bytes / 1e9, limit / 1e9);
    return true;
}

int harness_parse_cases(const char *json, const char *origin, harness_case **cases, char *err, size_t errlen)
{
    *cases = NULL;
    parse_ctx c = {origin, "", err, errlen};
    cJSON *root = cJSON_Parse(json);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        snprintf(err, errlen, "%s: not valid JSON near '%.20s'.", origin, at ? at : "");
        return -1;
    }
    /* one case, a list, or a named dictionary: an object whose members are all
     * objects is a dictionary of named cases (a case called "b" included), any
     * other object is one case */
    bool single = false;
    if (cJSON_IsObject(root))
        for (const cJSON *m = root->child; m; m = m->next) single |= !cJSON_IsObject(m);
    const int n = single ? 1 : (cJSON_IsArray(root) || cJSON_IsObject(root) ? cJSON_GetArraySize(root) : -1);
    if (n < 0) {
        snprintf(err, errlen, "%s: expected a case object, a list of cases or a dictionary of named cases.", origin);
        cJSON_Delete(root);
        return -1;
    }
    harness_case *out = calloc((size_t)(n ? n : 1), sizeof *out);
    int k = 0;
    for (const cJSON *item = single ? root : root->child; k < n; item = item->next, k++) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(item, "name");
        const char *name = cJSON_IsObject(root) && !single ? item->string : cJSON_IsString(nm) ? nm->valuestring : NULL;
        if (name && strlen(name) > HARNESS_NAME_MAX) snprintf(out[k].name, sizeof out[k].name, "%.40s...", name);
        else if (name) snprintf(out[k].name, sizeof out[k].name, "%s", name);
        else snprintf(out[k].name, sizeof out[k].name, "case%d", k);
        c.name = out[k].name;
        bool ok = parse_one(&c, item, &out[k]);
        for (int j = 0; ok && j < k; j++)
            if (!strcmp(out[j].name, out[k].name)) ok = fail(&c, NULL, "is the name of an earlier case too");
        if (!ok) {
            free(out);
            cJSON_Delete(root);
            return -1;
        }
    }
    cJSON_Delete(root);
    *cases = out;
    return n;
}

char *harness_read_text(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(err, errlen, "%s: %s.", path, strerror(errno)), NULL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return snprintf(err, errlen, "%s: not a regular file.", path), NULL;
    }
    if (st.st_size > HARNESS_TEXT_MAX_BYTES) {
        fclose(f);
        return snprintf(err, errlen, "%s: %lld bytes, above the %d MiB a case file or manifest may have.", path,
                        (long long)st.st_size, HARNESS_TEXT_MAX_BYTES >> 20), NULL;
    }
    const size_t size = (size_t)st.st_size;
    char *text = malloc(size + 1);
    const size_t got = text ? fread(text, 1, size, f) : 0;
    fclose(f);
    if (!text || got != size) {
        free(text);
        return snprintf(err, errlen, "%s: cannot read the file.", path), NULL;
    }
    text[size] = '\0';
    if (strlen(text) != size) {
        free(text);
        return snprintf(err, errlen, "%s: holds a NUL byte; it is not a JSON text file.", path), NULL;
    }
    return text;
}
