#include "fa/fa_mask.h"

fa_band fa_band_of(const fa_problem *p, int64_t b, int64_t S1, int64_t S2)
{
    const attn_band band = attn_band_of(&p->mask.rule, b, S1, S2);
    return (fa_band){band.pre, band.next, band.prefix, p->mask.rule.active && p->mask.has_elements};
}

static bool element_masked(const fa_problem *p, int64_t b, int64_t h, int64_t i, int64_t j)
{
    return *(const uint8_t *)fa_at(&p->mask.elements, b, h, i, j) != 0;
}

static bool band_masked(const fa_band *band, int64_t i, int64_t j)
{
    return (j - i > band->next || i - j > band->pre) && !(j < band->prefix);
}

bool fa_is_masked(const fa_problem *p, const fa_band *band, int64_t b, int64_t h, int64_t i, int64_t j)
{
    return band_masked(band, i, j) || (band->elements && element_masked(p, b, h, i, j));
}

/* The band alone over the tile. */
static fa_tile_class band_class(const fa_band *band, int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
    if (j1 <= band->prefix) return FA_TILE_FULL;
    /* Diagonals d = j - i present in the tile form [dmin, dmax]; the band
     * keeps -pre <= d <= next. */
    const int64_t dmin = j0 - (i1 - 1), dmax = (j1 - 1) - i0;
    fa_tile_class c = FA_TILE_PARTIAL;
    if (dmin >= -band->pre && dmax <= band->next) c = FA_TILE_FULL;
    else if (dmax < -band->pre || dmin > band->next) c = FA_TILE_EMPTY;
    if (c == FA_TILE_EMPTY && j0 < band->prefix) c = FA_TILE_PARTIAL; /* prefix columns survive */
    return c;
}

fa_tile_class fa_classify_tile(const fa_problem *p, const fa_band *band, int64_t b, int64_t h, int64_t i0,
                               int64_t i1, int64_t j0, int64_t j1)
{
    fa_tile_class c = band_class(band, i0, i1, j0, j1);
    if (c == FA_TILE_EMPTY || !band->elements) return c;
    /* Row by row through fa_mask_row, whose loops vectorise: this runs once
     * per tile visit, so it must cost far less than the tile's GEMMs. */
    uint8_t row[256];
    bool any_masked = false, any_kept = false;
    for (int64_t i = i0; i < i1 && !(any_masked && any_kept); i++)
        for (int64_t c0 = j0; c0 < j1; c0 += 256) {
            const int64_t n = j1 - c0 < 256 ? j1 - c0 : 256;
            fa_mask_row(p, band, b, h, i, c0, n, row);
            uint8_t all = 1, any = 0;
            for (int64_t x = 0; x < n; x++) all &= row[x], any |= row[x];
            any_masked |= any != 0;
            any_kept |= all == 0;
        }
    return !any_kept ? FA_TILE_EMPTY : (any_masked ? FA_TILE_PARTIAL : FA_TILE_FULL);
}

bool fa_rows_attend(const fa_problem *p, const fa_band *band, int64_t b, int64_t h, int64_t i0, int64_t i1,
                    int64_t S2)
{
    for (int64_t i = i0; i < i1; i++) {
        bool attends = false;
        if (!band->elements) {
            /* kept columns: [i - pre, i + next] and [0, prefix), within [0, S2) */
            int64_t lo = i - band->pre < 0 ? 0 : i - band->pre, hi = i + band->next;
            attends = (band->prefix > 0 && S2 > 0) || (lo <= hi && lo < S2 && hi >= 0);
        } else {
            uint8_t row[256];
            for (int64_t c0 = 0; c0 < S2 && !attends; c0 += 256) {
                const int64_t n = S2 - c0 < 256 ? S2 - c0 : 256;
                fa_mask_row(p, band, b, h, i, c0, n, row);
                uint8_t all = 1;
                for (int64_t x = 0; x < n; x++) all &= row[x];
                attends = all == 0;
            }
        }
        if (!attends) return false;
    }
    return true;
}

void fa_mask_row(const fa_problem *p, const fa_band *band, int64_t b, int64_t h, int64_t i, int64_t j0, int64_t cols,
                 uint8_t *out)
{
    /* The band keeps j in [i - pre, i + next] and j < prefix. */
    int64_t lo = i - band->pre - j0, hi = i + band->next - j0, keep = band->prefix - j0;
    for (int64_t c = 0; c < cols; c++) out[c] = (c < lo || c > hi) && !(c < keep);
    if (!band->elements) return;
    const fa_view *e = &p->mask.elements;
    const uint8_t *row = (const uint8_t *)fa_at(e, b, h, i, j0);
    if (e->sd == 1) for (int64_t c = 0; c < cols; c++) out[c] |= row[c] != 0;
    else for (int64_t c = 0; c < cols; c++) out[c] |= row[c * e->sd] != 0;
}
