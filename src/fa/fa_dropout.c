#include "fa/fa_dropout.h"

#include <math.h>

fa_dropout fa_dropout_make(int64_t seed, int64_t offset, double keep_prob)
{
    fa_dropout d = {0};
    d.active = keep_prob < 1.0;
    d.gen = ao_philox_make((uint64_t)seed, (uint64_t)offset);
    d.stream = ao_philox_bytes;
    /* the kernel truncates the float32 product (spec 5.1) */
    d.threshold = (uint8_t)floorf((float)keep_prob * 255.0f);
    d.scale = 1.0f / (float)keep_prob;
    d.scale_f64 = 1.0 / (double)(float)keep_prob; /* keep_prob is a float32 attribute of the op */
    return d;
}

fa_dropout fa_dropout_for(const fa_problem *p)
{
    fa_dropout d = fa_dropout_make(p->seed, p->offset, p->keep_prob);
    d.bits = p->drop_bits;
    d.bit_stride = p->drop_bits_stride;
    return d;
}

static int64_t row_width(const fa_dropout *d, int64_t s2) { return d->bits ? s2 : (s2 + 15) / 16 * 16; }

static int64_t block_len(const attn_list *lengths, bool varlen, int64_t b)
{
    if (!varlen) return attn_list_at(lengths, 0);
    return attn_list_at(lengths, b) - (b ? attn_list_at(lengths, b - 1) : 0);
}

static int64_t block_start(const attn_list *starts, int64_t count, int64_t b)
{
    return count == 0 ? 0 : attn_list_at(starts, count == 1 ? 0 : b);
}

void fa_dropout_whole_lengths(const fa_problem *p, int64_t b, int64_t *s1, int64_t *s2)
{
    const fa_drop_block *blk = &p->drop_block;
    *s1 = blk->active ? block_len(&blk->seq_q, p->varlen, b) : fa_q_len(p, b);
    *s2 = blk->active ? block_len(&blk->seq_kv, p->varlen, b) : fa_kv_len(p, b);
}

fa_dropout_batch fa_dropout_batch_of(const fa_problem *p, const fa_dropout *d, int64_t b)
{
    const fa_drop_block *blk = &p->drop_block;
    const int64_t heads = blk->active ? blk->N1 : p->N1;
    int64_t s1, s2;
    fa_dropout_whole_lengths(p, b, &s1, &s2);
    fa_dropout_batch db = {.rows = s1, .width = row_width(d, s2)};
    if (blk->active) {
        db.head0 = blk->head0;
        db.row0 = block_start(&blk->q0, blk->q0_count, b), db.col0 = block_start(&blk->kv0, blk->kv0_count, b);
    }
    if (!p->varlen) { /* every batch has the same lengths */
        db.base = (uint64_t)(b * heads * s1 * db.width);
        return db;
    }
    uint64_t qk = 0;
    for (int64_t k = 0; k < b; k++) {
        fa_dropout_whole_lengths(p, k, &s1, &s2);
        qk += (uint64_t)(s1 * row_width(d, s2));
    }
    db.base = (uint64_t)heads * qk;
    return db;
}

void fa_dropout_row(const fa_dropout *d, uint64_t row_start, int64_t j0, int64_t cols, uint8_t *keep)
{
    if (d->bits) {
        for (int64_t c = 0; c < cols; c++) {
            const uint64_t e = row_start + (uint64_t)(j0 + c);
            keep[c] = (d->bits[(int64_t)(e / 8) * d->bit_stride] >> (e % 8)) & 1u;
        }
        return;
    }
    d->stream(&d->gen, row_start + (uint64_t)j0, (size_t)cols, keep);
    for (int64_t c = 0; c < cols; c++) keep[c] = keep[c] <= d->threshold;
}

/* Blocks gathered for one generator pass, and where their bytes go. */
typedef struct block_batch {
    uint64_t index[16];
    int row[16];
    int64_t col[16]; /* tile column of the block's first byte (may be < 0) */
    int n;
} block_batch;

static void emit(const fa_dropout *d, block_batch *bb, int cols, uint8_t *keep, int ld)
{
    uint8_t bytes[256];
    d->blocks(&d->gen, bb->index, bb->n, bytes);
    const uint8_t thr = d->threshold;
    for (int k = 0; k < bb->n; k++) {
        uint8_t *row = keep + (size_t)bb->row[k] * ld;
        const uint8_t *src = bytes + 16 * k;
        const int64_t c0 = bb->col[k];
        if (c0 >= 0 && c0 + 16 <= cols) { /* a whole block inside the tile: a straight (vectorised) loop */
            for (int x = 0; x < 16; x++) row[c0 + x] = src[x] <= thr;
            continue;
        }
        for (int x = 0; x < 16; x++)
            if (c0 + x >= 0 && c0 + x < cols) row[c0 + x] = src[x] <= thr;
    }
    bb->n = 0;
}

void fa_dropout_tile(const fa_dropout *d, const fa_dropout_batch *db, int64_t h, int64_t i0, int rows, int64_t j0,
                     int cols, uint8_t *keep, int ld)
{
    if (d->bits || !d->blocks) {
        for (int r = 0; r < rows; r++)
            fa_dropout_row(d, fa_dropout_row_start(db, h, i0 + r), j0, cols, keep + (size_t)r * ld);
        return;
    }
    block_batch bb = {.n = 0};
    for (int r = 0; r < rows; r++) {
        const uint64_t e0 = fa_dropout_row_start(db, h, i0 + r) + (uint64_t)j0, e1 = e0 + (uint64_t)cols;
        for (uint64_t blk = e0 / 16; blk * 16 < e1; blk++) {
            bb.index[bb.n] = blk, bb.row[bb.n] = r, bb.col[bb.n] = (int64_t)(blk * 16) - (int64_t)e0;
            if (++bb.n == 16) emit(d, &bb, cols, keep, ld);
        }
    }
    if (bb.n) emit(d, &bb, cols, keep, ld);
}
