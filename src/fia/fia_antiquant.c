/* FusedInferAttentionScore's int8 key/value dequantisation parameters
 * (docs/FIA.md "int8 key/value"; spec section 3.15):
 * x_hat = (x + offset) * scale, offset absent = 0.  Separate key/value
 * tensors (which win over the combined pair) by mode: 0 per channel [N2 D],
 * [N2, D], [1, N2, D], [1, N2, 1, D] or per tensor [1]; 1 per token [1, B,
 * S'] or [B, S'] (f32); 2 per tensor and head [N2]; 3 per token and head
 * [B, N2, S'] (f32); key mode 0 with value mode 1 is allowed.  The combined
 * antiquant_scale / antiquant_offset carry a leading 2 (0: key, 1: value):
 * antiquant_mode 0 [2, N2, 1, D], [2, N2, D], [2, N2 D] or [2]; 1 [2, B, S']
 * (f32).  Scales and offsets are float (query's dtype or f32); S' >= the
 * key positions (paged: the table's capacity). */
#include <string.h>

#include "core/validate.h"
#include "fia/fia_problem.h"

#define INVALID ATTNOPS_ERR_PARAM_INVALID
#define NULLPTR ATTNOPS_ERR_NULLPTR

static bool is_float(attnops_dtype d)
{
    return d == ATTNOPS_DTYPE_F32 || d == ATTNOPS_DTYPE_F16 || d == ATTNOPS_DTYPE_BF16;
}

/* The index strides of `kind` in tensor t, whose first `skip` dims (the
 * combined tensor's leading 2) are not part of it; false when t's shape is
 * none of the kind's. */
static bool strides_of(const fia_problem *p, const attnops_tensor *t, int skip, fia_quant_kind kind, int64_t D,
                       fia_quant *q)
{
    const int r = t->rank - skip;
    const int64_t *sh = t->shape + skip, *st = t->strides + skip, N2 = p->N2;
    switch (kind) {
    case FIA_QUANT_CHANNEL:
        if (r == 0 || (r == 1 && sh[0] == 1 && !skip)) return q->s0 = q->s1 = 0, true; /* per tensor */
        if (r == 1 && sh[0] == N2 * D) return q->s0 = D * st[0], q->s1 = st[0], true;
        if (r == 2 && sh[0] == N2 && sh[1] == D) return q->s0 = st[0], q->s1 = st[1], true;
        if (r == 3 && sh[0] == 1 && sh[1] == N2 && sh[2] == D && !skip) return q->s0 = st[1], q->s1 = st[2], true;
        if (r == 3 && skip && sh[0] == N2 && sh[1] == 1 && sh[2] == D) return q->s0 = st[0], q->s1 = st[2], true;
        if (r == 4 && sh[0] == 1 && sh[1] == N2 && sh[2] == 1 && sh[3] == D) return q->s0 = st[1], q->s1 = st[3], true;
        return false;
    case FIA_QUANT_TOKEN:
        if (r == 3 && sh[0] == 1 && sh[1] == p->B && sh[2] >= p->S2) return q->s0 = st[1], q->s1 = st[2], true;
        if (r == 2 && sh[0] == p->B && sh[1] >= p->S2) return q->s0 = st[0], q->s1 = st[1], true;
        return false;
    case FIA_QUANT_HEAD: return r == 1 && sh[0] == N2 ? (q->s0 = st[0], true) : false;
    default: /* token and head */
        if (r == 3 && sh[0] == p->B && sh[1] == N2 && sh[2] >= p->S2)
            return q->s0 = st[0], q->s1 = st[1], q->s2 = st[2], true;
        return false;
    }
}

static const char *const MODE_SHAPES[] = {
    "[N2 * D], [N2, D], [1, N2, D], [1, N2, 1, D] or [1] (mode 0)", "[1, B, S'] or [B, S'] (mode 1)",
    "[N2] (mode 2)", "[B, N2, S'] (mode 3)"};

/* One tensor's parameters: scale (required) and offset (optional), of `mode`. */
static attnops_status quant_of(const char *op, const fia_problem *p, const char *which, int64_t mode,
                               const attnops_tensor *scale, const attnops_tensor *offset, int skip, int64_t index,
                               fia_quant *q)
{
    static const fia_quant_kind KIND[] = {FIA_QUANT_CHANNEL, FIA_QUANT_TOKEN, FIA_QUANT_HEAD, FIA_QUANT_TOKEN_HEAD};
    const attnops_tensor *const ts[2] = {scale, offset};
    const char *const names[2] = {"scale", "offset"};
    char buf[96];
    for (int i = 0; i < 2; i++) {
        const attnops_tensor *t = ts[i];
        if (!t) continue;
        if (!is_float(t->dtype))
            return ao_fail(INVALID, "%s: %s antiquant %s must be f16, bf16 or f32; got %s.", op, which, names[i],
                           attnops_dtype_name(t->dtype));
        if (skip && (t->rank < 1 || t->shape[0] != 2))
            return ao_fail(INVALID, "%s: antiquant_%s has shape %s; the combined form leads with 2 (key, value).", op,
                           names[i], ao_shape_str(t, buf, sizeof buf));
        fia_quant got = {0};
        if (!strides_of(p, t, skip, KIND[mode], index || !strcmp(which, "value") ? p->Dv : p->D, &got))
            return ao_fail(INVALID, "%s: %s antiquant %s has shape %s; %s takes %s%s.", op, which, names[i],
                           ao_shape_str(t, buf, sizeof buf), which, skip ? "a leading 2 and " : "", MODE_SHAPES[mode]);
        const char *data = (const char *)t->data + index * (skip ? t->strides[0] : 0) *
                                                       (int64_t)attnops_dtype_size(t->dtype);
        if (i == 0) *q = got, q->scale = data, q->scale_dtype = t->dtype, q->kind = KIND[mode];
        else if (got.s0 != q->s0 || got.s1 != q->s1 || got.s2 != q->s2) return ao_fail(INVALID,
                 "%s: %s antiquant offset must have its scale's shape and strides.", op, which);
        else q->offset = data, q->offset_dtype = t->dtype;
    }
    return ATTNOPS_SUCCESS;
}

attnops_status fia_validate_antiquant(const attnops_fia_args *a, const char *op, fia_problem *p)
{
    const bool int8 = a->key->dtype == ATTNOPS_DTYPE_I8;
    const bool separate = a->key_antiquant_scale || a->value_antiquant_scale || a->key_antiquant_offset ||
                          a->value_antiquant_offset;
    const bool combined = a->antiquant_scale || a->antiquant_offset;
    if (!int8) {
        if (separate || combined)
            return ao_fail(INVALID, "%s: antiquant scales are given but key is %s; they dequantise int8 key/value.",
                           op, attnops_dtype_name(a->key->dtype));
        return ATTNOPS_SUCCESS;
    }
    if (separate) {
        if (!a->key_antiquant_scale || !a->value_antiquant_scale)
            return ao_fail(NULLPTR, "%s: int8 key/value need key_antiquant_scale and value_antiquant_scale (both).",
                           op);
        if (!a->key_antiquant_offset != !a->value_antiquant_offset)
            return ao_fail(INVALID, "%s: key_antiquant_offset and value_antiquant_offset go together.", op);
        const int64_t km = a->key_antiquant_mode, vm = a->value_antiquant_mode;
        if (km < 0 || km > 3 || vm < 0 || vm > 3 || (km != vm && !(km == 0 && vm == 1)))
            return ao_fail(INVALID, "%s: key_antiquant_mode %lld with value_antiquant_mode %lld; the modes are 0..3, "
                           "equal, or key 0 with value 1.", op, (long long)km, (long long)vm);
        AO_TRY(quant_of(op, p, "key", km, a->key_antiquant_scale, a->key_antiquant_offset, 0, 0, &p->kq));
        return quant_of(op, p, "value", vm, a->value_antiquant_scale, a->value_antiquant_offset, 0, 0, &p->vq);
    }
    if (!a->antiquant_scale)
        return ao_fail(NULLPTR, "%s: int8 key/value need antiquant scales (key_/value_antiquant_scale, or "
                       "antiquant_scale).", op);
    if (a->antiquant_mode != 0 && a->antiquant_mode != 1)
        return ao_fail(INVALID, "%s: antiquant_mode is %lld; it must be 0 (per channel) or 1 (per token).", op,
                       (long long)a->antiquant_mode);
    AO_TRY(quant_of(op, p, "key", a->antiquant_mode, a->antiquant_scale, a->antiquant_offset, 1, 0, &p->kq));
    return quant_of(op, p, "value", a->antiquant_mode, a->antiquant_scale, a->antiquant_offset, 1, 1, &p->vq);
}
