/* KeyPool reference: see kp_ref.h.  Work per call is O(T H D) for the
 * projections (double dot products) plus O(groups R D) for pooling. */
#include <math.h>
#include <string.h>

#include "ref/kp_ref.h"

static float round_to_dtype(attnops_dtype dtype, double value)
{
    return dtype == ATTNOPS_DTYPE_BF16 ? attnops_bf16_to_f32(ao_f64_to_bf16(value))
                                       : attnops_f16_to_f32(ao_f64_to_f16(value));
}

static size_t rows_bytes(const kp_problem *p) { return ao_align_up((size_t)(p->T * p->D) * sizeof(float), 64); }

size_t kp_ref_workspace(const kp_problem *p)
{
    return 2 * rows_bytes(p) + ao_align_up((size_t)p->B * sizeof(int64_t), 64);
}

static double dot_row(const kp_problem *p, const char *x, const kp_matrix *w, int64_t d)
{
    double sum = 0.0;
    for (int64_t h = 0; h < p->H; h++)
        sum += ao_load_f64(x + h * p->hidden.sc * p->hidden.esize, p->dtype) * ao_load_f64(kp_at(w, d, h), p->dtype);
    return sum;
}

/* A separate softmax over the group's R rows for each channel (the gate is
 * D-wide), max subtracted; weights rounded to the activation dtype, then the
 * weighted sum of keys.  Row r's channel d is key[r][d * stride[r]].
 * Returns the sum before its final rounding. */
static double pool_channel(const kp_problem *p, int64_t d, const float *const *key, const float *const *gate,
                           const int64_t *stride)
{
    double logit[128], m = -INFINITY, total = 0.0, out = 0.0;
    for (int64_t r = 0; r < p->R; r++) {
        logit[r] = (double)gate[r][d * stride[r]] + (double)*(const float *)kp_at(&p->ape, r, d);
        m = fmax(m, logit[r]);
    }
    for (int64_t r = 0; r < p->R; r++) total += (logit[r] = exp(logit[r] - m));
    for (int64_t r = 0; r < p->R; r++)
        out += (double)round_to_dtype(p->dtype, logit[r] / total) * key[r][d * stride[r]];
    return out;
}

void kp_ref_run(const kp_problem *p, void *workspace)
{
    /* no tokens: an empty workspace, possibly NULL (no offsets from it) */
    char *ws = workspace;
    float *key_ws = (float *)ws, *gate_ws = ws ? (float *)(ws + rows_bytes(p)) : NULL;
    int64_t *row0 = ws ? (int64_t *)(ws + 2 * rows_bytes(p)) : NULL;

#pragma omp parallel for num_threads(p->team) schedule(dynamic, 4)
    for (int64_t t = 0; t < p->T; t++) {
        const char *x = kp_hidden_row(p, t);
        for (int64_t d = 0; d < p->D; d++) {
            key_ws[t * p->D + d] = round_to_dtype(p->dtype, dot_row(p, x, &p->wk, d));
            gate_ws[t * p->D + d] = round_to_dtype(p->dtype, dot_row(p, x, &p->gate, d));
        }
        if (p->layer_norm) kp_layer_norm(p, key_ws + t * p->D);
    }

    kp_write_tails(p, key_ws, gate_ws);
    kp_zero_unused_rows(p);
    kp_out_row0(p, row0);
    for (int64_t b = 0; b < p->B; b++) {
        const int64_t first = kp_first_group(p, b), n = kp_valid_rows(p, b);
#pragma omp parallel for num_threads(p->team) schedule(dynamic)
        for (int64_t g = 0; g < n; g++) {
            const float *key[128], *gate[128];
            int64_t stride[128];
            for (int64_t r = 0; r < p->R; r++)
                stride[r] = kp_group_row(p, b, (first + g) * p->R + r, key_ws, gate_ws, &key[r], &gate[r]);
            char *out = kp_out_row(p, b, row0[b], g);
            for (int64_t d = 0; d < p->D; d++)
                ao_store_f64(out + d * p->out.sc * p->out.esize, p->dtype,
                             pool_channel(p, d, key, gate, stride));
        }
    }
}
