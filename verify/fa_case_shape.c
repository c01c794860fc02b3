#include "fa_case_shape.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fa_case_tensor_shape(const fa_case_shape *s, int64_t b, int64_t sq, int64_t n, int64_t d, int64_t *shape)
{
    switch (s->layout) {
    case ATTNOPS_LAYOUT_TND: shape[0] = sq, shape[1] = n, shape[2] = d; return 3; /* sq = T */
    case ATTNOPS_LAYOUT_BNSD: shape[0] = b, shape[1] = n, shape[2] = sq, shape[3] = d; return 4;
    case ATTNOPS_LAYOUT_BSND: shape[0] = b, shape[1] = sq, shape[2] = n, shape[3] = d; return 4;
    case ATTNOPS_LAYOUT_BSH: shape[0] = b, shape[1] = sq, shape[2] = n * d; return 3;
    default: shape[0] = sq, shape[1] = b, shape[2] = n * d; return 3;
    }
}

static bool is_fp8(attnops_dtype d) { return d == ATTNOPS_DTYPE_F8_E4M3FN || d == ATTNOPS_DTYPE_F8_E5M2; }

static const char *const mask_names[] = {"none", "ss", "11ss", "b1ss", "bnss", "compressed"};
static const char *const pse_names[] = {"none", "bnss", "bn1s", "1nss", "bnhs", "1nhs", "slopes_n", "slopes_bn"};

void fa_case_describe(const fa_case_shape *s, char *buf, size_t n)
{
    int used = s->layout == ATTNOPS_LAYOUT_TND /* B and S come from seqs */
                   ? snprintf(buf, n, "N1=%lld,N2=%lld,D=%lld,Dv=%lld,dtype=%s,layout=TND,pad=%lld", (long long)s->N1,
                              (long long)s->N2, (long long)s->D, (long long)s->Dv, attnops_dtype_name(s->dtype),
                              (long long)s->pad)
                   : snprintf(buf, n, "B=%lld,N1=%lld,N2=%lld,S1=%lld,S2=%lld,D=%lld,Dv=%lld,dtype=%s,layout=%s,pad=%lld",
                              (long long)s->B, (long long)s->N1, (long long)s->N2, (long long)s->S1, (long long)s->S2,
                              (long long)s->D, (long long)s->Dv, attnops_dtype_name(s->dtype),
                              attnops_layout_name(s->layout), (long long)s->pad);
    if (is_fp8(s->dtype) && used > 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, ",out=%s", attnops_dtype_name(s->out_dtype));
    if (s->Dr > 0 && used > 0 && (size_t)used < n) used += snprintf(buf + used, n - (size_t)used, ",rope=%lld", (long long)s->Dr);
    if (s->scale > 0 && used > 0 && (size_t)used < n) used += snprintf(buf + used, n - (size_t)used, ",scale=%.17g", s->scale);
    if (s->mask != FA_CASE_MASK_NONE && used > 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, ",mode=%lld,mask=%s,pre=%lld,next=%lld", (long long)s->sparse_mode,
                         mask_names[s->mask], (long long)s->pre, (long long)s->next);
    if (s->keep_prob > 0.0 && used > 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, ",keep=%.17g,seed=%lld,offset=%lld", s->keep_prob,
                         (long long)s->seed, (long long)s->offset);
    if (s->softcap > 0 && used > 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, ",softcap=%.17g", s->softcap);
    if (s->sink && used > 0 && (size_t)used < n) used += snprintf(buf + used, n - (size_t)used, ",sink=1");
    if (s->inner_precise && used > 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, ",inner_precise=%lld", (long long)s->inner_precise);
    if (s->pse != FA_CASE_PSE_NONE && used > 0 && (size_t)used < n)
        used += snprintf(buf + used, n - (size_t)used, ",pse=%s,pse_type=%lld,q_start=%lld,kv_start=%lld",
                         pse_names[s->pse], (long long)s->pse_type, (long long)s->q_start, (long long)s->kv_start);
    bool kv_given = false;
    for (int b = 0; b < s->nseq; b++) kv_given |= s->seq_kv[b] >= 0 && s->seq_kv[b] != s->seq_q[b];
    for (int k = 0; k < (kv_given ? 2 : 1) && s->nseq > 0; k++) {
        const int64_t *l = k ? s->seq_kv : s->seq_q;
        if (used > 0 && (size_t)used < n) used += snprintf(buf + used, n - (size_t)used, k ? ",kvseqs=" : ",seqs=");
        for (int b = 0; b < s->nseq && used > 0 && (size_t)used < n; b++)
            used += snprintf(buf + used, n - (size_t)used, b ? ":%lld" : "%lld", (long long)l[b]);
    }
}

static int name_index(const char *const *names, int count, const char *v)
{
    for (int i = 0; i < count; i++)
        if (!strcmp(names[i], v)) return i;
    return -1;
}

/* A whole decimal integer, nothing after it. */
static bool parse_i64(const char *v, int64_t *x)
{
    char *end;
    errno = 0;
    long long r = strtoll(v, &end, 10);
    if (errno || end == v || *end) return false;
    *x = r;
    return true;
}

static bool parse_f64(const char *v, double *x)
{
    char *end;
    errno = 0;
    double r = strtod(v, &end);
    if (errno || end == v || *end) return false;
    *x = r;
    return true;
}

/* "l0:l1:...": at most 32 lengths. */
static bool parse_lengths(const char *v, int64_t *l, int *count)
{
    char buf[512];
    if (snprintf(buf, sizeof buf, "%s", v) >= (int)sizeof buf) return false;
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
        if (n == 32 || !parse_i64(tok, &l[n])) return false;
        n++;
    }
    *count = n;
    return n > 0;
}

/* The FlashAttention cases take the floating-point dtypes, by any spelling. */
static bool parse_dtype(const char *v, attnops_dtype *dst)
{
    const attnops_dtype d = attnops_dtype_from_string(v);
    if (!d || !attnops_dtype_traits_of(d)->is_float) return false;
    *dst = d;
    return true;
}

bool fa_case_parse(const char *spec, fa_case_shape *s)
{
    *s = (fa_case_shape){.B = 1, .N1 = 1, .N2 = 1, .S1 = 1, .S2 = 1, .D = 16, .Dv = 16, .dtype = ATTNOPS_DTYPE_F32,
                         .out_dtype = ATTNOPS_DTYPE_F16, .layout = ATTNOPS_LAYOUT_BNSD, .pse_type = 1};
    for (int b = 0; b < 32; b++) s->seq_kv[b] = -1; /* default: the query lengths */
    const struct { const char *key; int64_t *field; } ints[] = {
        {"B", &s->B}, {"N1", &s->N1}, {"N2", &s->N2}, {"S1", &s->S1}, {"S2", &s->S2}, {"D", &s->D}, {"Dv", &s->Dv},
        {"pad", &s->pad}, {"rope", &s->Dr}, {"seed", &s->seed}, {"offset", &s->offset}, {"mode", &s->sparse_mode},
        {"pre", &s->pre}, {"next", &s->next}, {"inner_precise", &s->inner_precise}, {"pse_type", &s->pse_type},
        {"q_start", &s->q_start}, {"kv_start", &s->kv_start}};
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf) return false;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) return false;
        *eq = '\0';
        const char *k = tok, *v = eq + 1;
        size_t i = 0;
        while (i < sizeof ints / sizeof ints[0] && strcmp(k, ints[i].key)) i++;
        bool ok;
        int kv_count;
        if (i < sizeof ints / sizeof ints[0]) ok = parse_i64(v, ints[i].field);
        else if (!strcmp(k, "scale")) ok = parse_f64(v, &s->scale);
        else if (!strcmp(k, "keep")) ok = parse_f64(v, &s->keep_prob);
        else if (!strcmp(k, "softcap")) ok = parse_f64(v, &s->softcap);
        else if (!strcmp(k, "sink")) ok = (!strcmp(v, "0") || !strcmp(v, "1")) && ((s->sink = v[0] == '1'), true);
        else if (!strcmp(k, "seqs")) ok = parse_lengths(v, s->seq_q, &s->nseq);
        else if (!strcmp(k, "kvseqs")) ok = parse_lengths(v, s->seq_kv, &kv_count);
        else if (!strcmp(k, "layout")) ok = (s->layout = attnops_layout_from_string(v)) != ATTNOPS_LAYOUT_UNSET;
        else if (!strcmp(k, "dtype")) ok = parse_dtype(v, &s->dtype);
        else if (!strcmp(k, "out")) ok = parse_dtype(v, &s->out_dtype);
        else if (!strcmp(k, "mask")) {
            const int m = name_index(mask_names, 6, v);
            ok = m >= 0;
            if (ok) s->mask = (fa_case_mask)m;
        } else if (!strcmp(k, "pse")) {
            const int p = name_index(pse_names, 8, v);
            ok = p >= 0;
            if (ok) s->pse = (fa_case_pse)p;
        } else ok = false;
        if (!ok) return false;
    }
    return true;
}
