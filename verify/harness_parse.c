#include "harness_parse.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool hp_fail(harness_parse *p, const char *field, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (field) snprintf(p->err, p->errlen, "%s: case '%s': field '%s' %s.", p->origin, p->name, field, what);
    else snprintf(p->err, p->errlen, "%s: case '%s': %s.", p->origin, p->name, what);
    return false;
}

bool hp_int(harness_parse *p, const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
    const double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(x == floor(x)) || x < (double)lo || x > (double)hi)
        return hp_fail(p, v->string, "must be an integer in [%lld, %lld]", (long long)lo, (long long)hi);
    *out = (int64_t)x;
    return true;
}

bool hp_str(harness_parse *p, const cJSON *v, const char **out)
{
    if (!cJSON_IsString(v)) return hp_fail(p, v->string, "must be a string");
    *out = v->valuestring;
    return true;
}

bool hp_list(harness_parse *p, const cJSON *v, int64_t *out, int *n)
{
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > 32 || cJSON_GetArraySize(v) < 1)
        return hp_fail(p, v->string, "must be a list of 1 to 32 integers");
    *n = 0;
    for (const cJSON *e = v->child; e; e = e->next) {
        const double x = cJSON_IsNumber(e) ? e->valuedouble : NAN;
        if (!(x == floor(x)) || x < 0 || x > 1e9) return hp_fail(p, v->string, "must hold non-negative integers");
        out[(*n)++] = (int64_t)x;
    }
    return true;
}

bool hp_bool(harness_parse *p, const cJSON *v, bool *out)
{
    if (cJSON_IsBool(v)) return *out = cJSON_IsTrue(v), true;
    if (cJSON_IsNumber(v) && (v->valuedouble == 0.0 || v->valuedouble == 1.0)) return *out = v->valuedouble != 0.0, true;
    return hp_fail(p, v->string, "must be true or false");
}

bool hp_rule(harness_parse *p, const char *name, cmp_rule *rule)
{
    if (cmp_rule_parse(name, rule)) return true;
    return hp_fail(p, "compare", "is '%s'; it must be dual, triple, isclose, allclose, thousandth or ten-thousandth",
                   name);
}

bool hp_read_fields(harness_parse *p, const cJSON *obj, const harness_field *fields, size_t nfields, const char *what,
                    bool *has, hp_read_fn read, void *ctx)
{
    for (const cJSON *v = obj->child; v; v = v->next) {
        if (!strcmp(v->string, "op") || !strcmp(v->string, "name")) continue;
        int f = -1;
        for (size_t i = 0; i < nfields && f == -1; i++)
            if (!strcmp(v->string, fields[i].name)) f = fields[i].f;
        if (f == HP_IGNORED) continue;
        if (f < 0) return hp_fail(p, v->string, "is not a known %scase field", what);
        if (has[f]) return hp_fail(p, v->string, "is given twice (or with its alias)");
        has[f] = true;
        if (!read(p, v, f, ctx)) return false;
    }
    return true;
}

bool hp_require(harness_parse *p, const bool *has, const int *required, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!has[required[i]]) return hp_fail(p, names[i], "is missing");
    return true;
}
