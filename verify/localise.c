#include "localise.h"

#include <math.h>
#include <stdlib.h>

const char *const loc_bin_labels[LOC_BINS] = {"<1/1024", "<1/256", "<1/64", "<1/16", "<1/4", "<=1",
                                              "<2",      "<4",     "<16",   "<64",   ">=64", "NaN"};

static int bin_of(double ratio)
{
    static const double edges[] = {0x1p-10, 0x1p-8, 0x1p-6, 0x1p-4, 0x1p-2};
    if (isnan(ratio)) return LOC_BINS - 1;
    for (int i = 0; i < 5; i++)
        if (ratio < edges[i]) return i;
    if (ratio <= 1.0) return 5;
    static const double above[] = {2, 4, 16, 64};
    for (int i = 0; i < 4; i++)
        if (ratio < above[i]) return 6 + i;
    return 10;
}

localisation loc_analyse(const cmp_options *o, const double *actual, const double *expected, int64_t n,
                         int64_t row_len)
{
    localisation l = {{0}, 0, row_len > 0 ? row_len : 1, NULL};
    l.rows = (n + l.row_len - 1) / l.row_len;
    l.row_fail = calloc((size_t)(l.rows ? l.rows : 1), sizeof *l.row_fail);
    for (int64_t i = 0; i < n; i++) {
        if (o->counted && !o->counted[i]) continue;
        const double a = actual[i], e = expected[i];
        double ratio;
        if (isnan(a) || isnan(e)) ratio = isnan(a) && isnan(e) ? 0.0 : NAN;
        else {
            const double diff = a == e ? 0.0 : fabs(a - e);
            double limit = cmp_element_limit(o, a, e);
            if (isnan(limit)) limit = 1e-3 * fmax(fabs(e), 0x1p-14);
            ratio = diff == 0.0 ? 0.0 : diff / limit;
        }
        l.hist[bin_of(ratio)]++;
        if (!(ratio <= 1.0)) l.row_fail[i / l.row_len]++;
    }
    return l;
}

void loc_free(localisation *l)
{
    free(l->row_fail);
    l->row_fail = NULL;
}

int loc_worst_rows(const localisation *l, int64_t *rows, int k)
{
    int found = 0;
    for (int64_t r = 0; r < l->rows; r++) {
        if (!l->row_fail[r]) continue;
        int pos = found < k ? found++ : k;
        if (pos == k && l->row_fail[r] <= l->row_fail[rows[k - 1]]) continue;
        if (pos == k) pos = k - 1;
        while (pos > 0 && l->row_fail[rows[pos - 1]] < l->row_fail[r]) rows[pos] = rows[pos - 1], pos--;
        rows[pos] = r;
    }
    return found;
}
