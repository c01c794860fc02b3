/* FlashAttentionScore(Grad)'s argument space (docs/RELIABILITY.md, "Fuzzing"): random
 * layouts, shapes, GQA ratios, dtypes (FP8 with its scales), masks and
 * sparse modes, pse types and shapes, dropout, prefix and TND lengths, MLA
 * rope, start indices, dropout blocks, attributes (softcap included), impl, threads -- mostly valid, each
 * tensor sometimes perturbed (rank, a dim, the dtype, a stride) or left
 * NULL -- on tiny data.  Every call must keep the contract (fz_check_status:
 * a documented status, a sentence exactly on failure, no output written on
 * failure), a successful call with |scale_value| <= 64 and keep_prob >=
 * 1/1024 (the data are below 2 in magnitude, so the scores and the
 * dropout's 1/keep_prob scaling stay far inside f32) must give an
 * attention_out / dq / dk / dv without NaN, and with an infinity only where
 * the reference's answer to the same call has it too (a gradient may
 * overflow f16 as the true value does), and no access may leave a view
 * (AddressSanitizer: every tensor and the workspace are allocated to their
 * exact size). */
#include "fuzz_input.h"

enum { MAXB = 4 };

/* Shape of a q-like tensor (heads n, rows s per batch, head dim d) in the layout. */
static int layout_shape(attnops_layout l, int64_t b, int64_t s, int64_t n, int64_t d, int64_t t, int64_t *shape)
{
    switch (l) {
    case ATTNOPS_LAYOUT_BNSD: shape[0] = b, shape[1] = n, shape[2] = s, shape[3] = d; return 4;
    case ATTNOPS_LAYOUT_BSND: shape[0] = b, shape[1] = s, shape[2] = n, shape[3] = d; return 4;
    case ATTNOPS_LAYOUT_BSH: shape[0] = b, shape[1] = s, shape[2] = n * d; return 3;
    case ATTNOPS_LAYOUT_SBH: shape[0] = s, shape[1] = b, shape[2] = n * d; return 3;
    default: shape[0] = t, shape[1] = n, shape[2] = d; return 3;
    }
}

typedef struct problem {
    attnops_layout layout;
    int64_t B, N1, N2, S1, S2, D, Dv, Dr, T1, T2;
    attnops_dtype dtype, out;
    bool fp8;
} problem;

static void draw_problem(fz *f, problem *p)
{
    p->layout = (attnops_layout)fz_range(f, 1, 5);
    if (fz_one_in(f, 40)) p->layout = (attnops_layout)fz_range(f, -1, 8);
    p->B = fz_range(f, 0, MAXB), p->N2 = fz_range(f, 1, 3), p->N1 = p->N2 * fz_range(f, 1, 3);
    if (fz_one_in(f, 16)) p->N1 = fz_range(f, 0, 7); /* not a multiple of N2 */
    p->S1 = fz_range(f, 0, 40), p->S2 = fz_range(f, 0, 40);
    p->D = fz_range(f, 1, 24), p->Dv = fz_one_in(f, 4) ? fz_range(f, 1, 24) : p->D;
    if (fz_one_in(f, 32)) p->D = 0;
    p->Dr = fz_one_in(f, 10) ? fz_range(f, 1, 16) : 0;
    static const attnops_dtype dtypes[] = {ATTNOPS_DTYPE_F32, ATTNOPS_DTYPE_F16, ATTNOPS_DTYPE_BF16,
                                           ATTNOPS_DTYPE_F8_E4M3FN, ATTNOPS_DTYPE_F8_E5M2, ATTNOPS_DTYPE_I32};
    p->dtype = dtypes[fz_range(f, 0, fz_one_in(f, 6) ? 5 : 2)];
    p->fp8 = p->dtype == ATTNOPS_DTYPE_F8_E4M3FN || p->dtype == ATTNOPS_DTYPE_F8_E5M2;
    p->out = p->fp8 ? (fz_one_in(f, 2) ? ATTNOPS_DTYPE_BF16 : ATTNOPS_DTYPE_F16) : p->dtype;
    p->T1 = p->B * p->S1, p->T2 = p->B * p->S2;
}

/* The 2048 x 2048 compressed mask (the causal pattern), allocated once to
 * its exact size: building 4 MiB anew for every input that takes it made
 * those inputs the most expensive part of a run.  Read only, so sharing it
 * changes nothing (a perturbed one still comes from fz_tensor_new). */
static const attnops_tensor *compressed_mask(attnops_dtype dtype)
{
    static attnops_tensor views[2];
    static uint8_t *data[2];
    const int k = dtype == ATTNOPS_DTYPE_U8;
    if (!data[k]) {
        data[k] = malloc(2048 * 2048);
        for (int64_t i = 0; i < 2048; i++)
            for (int64_t j = 0; j < 2048; j++) data[k][i * 2048 + j] = j > i;
        const int64_t shape[2] = {2048, 2048};
        views[k] = attnops_tensor_contiguous(data[k], dtype, 2, shape);
    }
    return &views[k];
}

/* The optional inputs and attributes of the params. */
static void draw_params(fz *f, fz_pool *pool, const problem *pr, attnops_fa_params *p)
{
    static const int64_t modes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1};
    static const int64_t tokens[] = {INT32_MAX, 0, 1, 3, 7, -2, 16, 65536};
    static const double keeps[] = {1.0, 1.0, 1.0, 0.5, 0.9, 0.0, 1.5};
    static const double scales[] = {0.125, 1.0, 0.5, 2.0};
    p->sparse_mode = fz_pick_i64(f, modes, 11);
    p->pre_tokens = fz_pick_i64(f, tokens, 8), p->next_tokens = fz_pick_i64(f, tokens, 8);
    p->keep_prob = fz_pick_f64(f, keeps, 7), p->scale_value = fz_pick_f64(f, scales, 4);
    p->seed = fz_range(f, 0, 5), p->offset = fz_range(f, 0, 3) * 16;
    static const double caps[] = {1.0, 50.0, 0.01, -1.0, NAN, INFINITY, 1e-300, 1e300};
    p->softcap = fz_one_in(f, 4) ? fz_pick_f64(f, caps, 8) : 0.0;
    if (fz_one_in(f, 6)) { /* attention sinks: f32 [N1] (sometimes another dtype or length) */
        const int64_t n1 = fz_one_in(f, 20) ? fz_range(f, 0, 9) : pr->N1;
        p->sink = fz_tensor_new(f, pool, fz_one_in(f, 20) ? ATTNOPS_DTYPE_F16 : ATTNOPS_DTYPE_F32, 1, &n1, true);
    }
    static const int64_t small[] = {0, 1, 2};
    p->inner_precise = fz_pick_i64(f, small, 3);
    p->impl = (attnops_impl)fz_range(f, 0, fz_one_in(f, 20) ? 6 : 3);
    const int64_t fewest = fz_one_in(f, 20) ? -2 : 0, most = fz_one_in(f, 8) ? 2 : 1;
    p->num_threads = (int32_t)fz_range(f, fewest, most);
    p->deterministic = fz_u8(f) & 1;
    if (fz_one_in(f, 40)) p->head_num = fz_range(f, -1, 9);
    if (pr->fp8) p->out_dtype = pr->out == ATTNOPS_DTYPE_BF16 ? 1 : 0;

    const int64_t B = pr->B, N1 = pr->N1, S1 = pr->S1, S2 = pr->S2;
    int64_t shape[4];
    if (fz_one_in(f, 3)) { /* atten_mask */
        static const attnops_dtype mdt[] = {ATTNOPS_DTYPE_BOOL, ATTNOPS_DTYPE_U8};
        int rank = 2;
        switch (fz_u8(f) % 5) {
        case 0: shape[0] = S1, shape[1] = S2; break;
        case 1: rank = 4, shape[0] = 1, shape[1] = 1, shape[2] = S1, shape[3] = S2; break;
        case 2: rank = 4, shape[0] = B, shape[1] = 1, shape[2] = S1, shape[3] = S2; break;
        case 3: rank = 4, shape[0] = B, shape[1] = N1, shape[2] = S1, shape[3] = S2; break;
        default: shape[0] = 2048, shape[1] = 2048; break; /* the compressed mask of modes 2-4, 6-8 */
        }
        const attnops_dtype dt = mdt[fz_u8(f) & 1];
        p->atten_mask = shape[0] == 2048 && !fz_one_in(f, 8) ? compressed_mask(dt)
                                                             : fz_tensor_new(f, pool, dt, rank, shape, true);
    }
    if (fz_one_in(f, 4)) { /* pse */
        p->pse_type = fz_range(f, 0, fz_one_in(f, 10) ? 5 : 3);
        int rank = 4;
        switch (fz_u8(f) % 6) {
        case 0: shape[0] = B, shape[1] = N1, shape[2] = S1, shape[3] = S2; break;
        case 1: shape[0] = B, shape[1] = N1, shape[2] = 1, shape[3] = S2; break;
        case 2: shape[0] = 1, shape[1] = N1, shape[2] = S1, shape[3] = S2; break;
        case 3: rank = 1, shape[0] = N1; break;
        case 4: rank = 2, shape[0] = B, shape[1] = N1; break;
        default: shape[0] = B, shape[1] = N1, shape[2] = 1024, shape[3] = S2; break;
        }
        const attnops_dtype pdt = p->pse_type >= 2 ? ATTNOPS_DTYPE_F32 : pr->fp8 ? pr->out : pr->dtype;
        p->pse = fz_tensor_new(f, pool, pdt, rank, shape, true);
    }
    int64_t values[MAXB + 1];
    if (pr->layout == ATTNOPS_LAYOUT_TND || fz_one_in(f, 30)) { /* cumulative lengths, mostly valid */
        int64_t q = 0, kv = 0;
        for (int64_t b = 0; b < B; b++) values[b] = q += fz_range(f, 0, S1);
        p->actual_seq_qlen = fz_ints(f, pool, values, B);
        for (int64_t b = 0; b < B; b++) values[b] = kv += fz_one_in(f, 12) ? fz_range(f, -3, 50) : fz_range(f, 0, S2);
        p->actual_seq_kvlen = fz_ints(f, pool, values, B);
    }
    if (fz_one_in(f, 6)) { /* prefix for modes 5/6 */
        for (int64_t b = 0; b < B; b++) values[b] = fz_range(f, -1, S2 + 1);
        p->prefix = fz_ints(f, pool, values, B);
    }
    if (fz_one_in(f, 8)) {
        values[0] = fz_range(f, -20, 20);
        p->q_start_idx = fz_ints(f, pool, values, fz_range(f, 0, 2));
        values[0] = fz_range(f, -20, 20);
        p->kv_start_idx = fz_ints(f, pool, values, fz_range(f, 0, 2));
    }
    if (fz_one_in(f, 12) && p->keep_prob < 1.0) { /* an explicit packed keep mask */
        shape[0] = (B * N1 * S1 * S2 + 7) / 8 + fz_range(f, -1, 1);
        p->drop_mask = fz_tensor_new(f, pool, ATTNOPS_DTYPE_U8, 1, shape, true);
    }
    if (fz_one_in(f, 8)) { /* a dropout block of a larger call: lengths and starts mostly fitting */
        p->dropout_head_num = N1 + fz_range(f, fz_one_in(f, 10) ? -1 : 0, 3);
        const int64_t spare = p->dropout_head_num - N1 + fz_one_in(f, 10); /* may be -1 */
        p->dropout_head_start = fz_range(f, fz_one_in(f, 10) ? -1 : 0, spare < 0 ? 0 : spare);
        const bool tnd = pr->layout == ATTNOPS_LAYOUT_TND;
        const int64_t n = tnd ? B : 1;
        int64_t lens[2][MAXB + 1];
        for (int k = 0; k < 2; k++) {
            int64_t total = 0;
            for (int64_t b = 0; b < n; b++) lens[k][b] = total += (k ? S2 : S1) + fz_range(f, fz_one_in(f, 10) ? -9 : 0, 8);
            if (!tnd) lens[k][0] = total;
        }
        if (!fz_one_in(f, 20)) p->dropout_seq_qlen = fz_ints(f, pool, lens[0], n);
        if (!fz_one_in(f, 20)) p->dropout_seq_kvlen = fz_ints(f, pool, lens[1], n);
        for (int k = 0; k < 2 && !fz_one_in(f, 4); k++) {
            const int64_t count = fz_one_in(f, 2) ? 1 : B;
            for (int64_t b = 0; b < count; b++) values[b] = fz_range(f, fz_one_in(f, 10) ? -2 : 0, 8);
            *(k ? &p->dropout_kv_start : &p->dropout_q_start) = fz_ints(f, pool, values, count);
        }
    }
}

/* Attributes under which the intermediates cannot overflow (above). */
static bool in_range(const attnops_fa_params *p) { return fabs(p->scale_value) <= 64 && p->keep_prob >= 1.0 / 1024; }

/* The call being checked, printed with a failure. */
static char described[512];

static void describe(const problem *pr, const attnops_fa_params *p, bool backward)
{
    snprintf(described, sizeof described,
             "%s layout %d B %lld N1 %lld N2 %lld S1 %lld S2 %lld D %lld Dv %lld Dr %lld dtype %d | mode %lld "
             "pre %lld next %lld keep %g scale %g softcap %g pse %s type %lld mask %s prefix %s seqlens %s impl %d threads %d "
             "det %d inner %lld", backward ? "bwd" : "fwd", (int)pr->layout, (long long)pr->B, (long long)pr->N1,
             (long long)pr->N2, (long long)pr->S1, (long long)pr->S2, (long long)pr->D, (long long)pr->Dv,
             (long long)pr->Dr, (int)pr->dtype, (long long)p->sparse_mode, (long long)p->pre_tokens,
             (long long)p->next_tokens, p->keep_prob, p->scale_value, p->softcap, p->pse ? "yes" : "no", (long long)p->pse_type,
             p->atten_mask ? "yes" : "no", p->prefix ? "yes" : "no", p->actual_seq_qlen ? "yes" : "no", (int)p->impl,
             (int)p->num_threads, (int)p->deterministic, (long long)p->inner_precise);
    const attnops_tensor *m = p->atten_mask;
    if (m) {
        size_t used = strlen(described);
        used += (size_t)snprintf(described + used, sizeof described - used, " | mask dtype %d rank %d", (int)m->dtype,
                                 (int)m->rank);
        for (int i = 0; i < m->rank && i < ATTNOPS_MAX_RANK && used < sizeof described; i++)
            used += (size_t)snprintf(described + used, sizeof described - used, " %lld/%lld", (long long)m->shape[i],
                                     (long long)m->strides[i]);
    }
}

static fz_pool *current_pool;

static void dump_views(void)
{
    for (int i = 0; i < current_pool->n; i++) {
        const attnops_tensor *v = &current_pool->t[i].view;
        fprintf(stderr, "  tensor %d dtype %d rank %d:", i, (int)v->dtype, (int)v->rank);
        for (int d = 0; d < v->rank && d < ATTNOPS_MAX_RANK; d++)
            fprintf(stderr, " %lld/%lld", (long long)v->shape[d], (long long)v->strides[d]);
        fprintf(stderr, "\n");
    }
}

/* Aborts when `t` has a NaN or an infinity that the reference's answer
 * `golden` does not explain; for impl REFERENCE itself, golden is NULL and
 * infinities are overflows of the true value (it computes in double and
 * rounds once). */
static void check_finite(const attnops_tensor *t, const attnops_tensor *golden, attnops_impl impl, const char *what)
{
    if (!fz_unexplained_nonfinite(t, golden, impl == ATTNOPS_IMPL_REFERENCE, what, described)) return;
    if (getenv("FUZZ_DUMP")) dump_views();
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz f = {data, size, 0x9E3779B97F4A7C15ull ^ size};
    fz_pool pool = {.n = 0}, golden = {.n = 0}; /* golden: the reference's answers, when an output is not finite */
    current_pool = &pool;
    problem pr;
    draw_problem(&f, &pr);
    const bool backward = fz_u8(&f) & 1;
    attnops_fa_params p;
    attnops_fa_params_init(&p);
    p.head_num = pr.N1, p.input_layout = pr.layout;
    int64_t shape[4];
    int rank = layout_shape(pr.layout, pr.B, pr.S1, pr.N1, pr.D, pr.T1, shape);
    p.query = fz_tensor_new(&f, &pool, pr.dtype, rank, shape, true);
    rank = layout_shape(pr.layout, pr.B, pr.S2, pr.N2, pr.D, pr.T2, shape);
    p.key = fz_tensor_new(&f, &pool, pr.dtype, rank, shape, true);
    layout_shape(pr.layout, pr.B, pr.S2, pr.N2, pr.Dv, pr.T2, shape);
    p.value = fz_tensor_new(&f, &pool, pr.dtype, rank, shape, true);
    if (pr.Dr) {
        layout_shape(pr.layout, pr.B, pr.S1, pr.N1, pr.Dr, pr.T1, shape);
        p.query_rope = fz_tensor_new(&f, &pool, pr.dtype, rank, shape, true);
        layout_shape(pr.layout, pr.B, pr.S2, pr.N2, pr.Dr, pr.T2, shape);
        p.key_rope = fz_tensor_new(&f, &pool, pr.dtype, rank, shape, true);
    }
    if (pr.fp8) {
        const int64_t sq[4] = {pr.B, pr.N1, (pr.S1 + 127) / 128, 1}, skv[4] = {pr.B, pr.N2, (pr.S2 + 127) / 128, 1};
        p.d_scale_q = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 4, sq, true);
        p.d_scale_k = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 4, skv, true);
        p.d_scale_v = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 4, skv, true);
        if (backward) p.d_scale_dy = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 4, sq, true);
        if (backward) p.d_scale_o = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 4, sq, true);
    }
    draw_params(&f, &pool, &pr, &p);
    describe(&pr, &p, backward);
    const bool tnd = pr.layout == ATTNOPS_LAYOUT_TND;
    const int64_t stat[4] = {tnd ? pr.T1 : pr.B, pr.N1, tnd ? 8 : pr.S1, 8};
    const int stat_rank = tnd ? 3 : 4;
    const int64_t stat_tnd[3] = {pr.T1, pr.N1, 8};
    const int64_t *stat_shape = tnd ? stat_tnd : stat;
    const int qr = layout_shape(pr.layout, pr.B, pr.S1, pr.N1, pr.Dv, pr.T1, shape);
    attnops_status st;
    bool skipped = false;
    if (!backward) {
        attnops_fa_fwd_args a = {.p = p};
        const int first_output = pool.n;
        a.softmax_max = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, stat_rank, stat_shape, true);
        a.softmax_sum = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, stat_rank, stat_shape, true);
        a.attention_out = fz_tensor_new(&f, &pool, pr.out, qr, shape, true);
        if (pool.too_big) goto done;
        fz_poison(&pool, first_output);
        FZ_TWO_PHASE(attnops_flash_attention_score_workspace_size, attnops_flash_attention_score, &a, st, skipped);
        if (!skipped) fz_check_status("FlashAttention", st, &pool, first_output);
        if (st == ATTNOPS_SUCCESS) {
            attnops_output_shape out, stats;
            const attnops_status shapes = attnops_flash_attention_score_output_shapes(&a, &out, &stats);
            fz_check_output_shape("FlashAttention", "attention_out", shapes, &out, a.attention_out, a.p.query);
            fz_check_output_shape("FlashAttention", "softmax_max", shapes, &stats, a.softmax_max, a.p.query);
        }
        if (st == ATTNOPS_SUCCESS && !skipped && in_range(&p) && fz_any_nonfinite(&a.attention_out, 1)) {
            const attnops_tensor *answer = NULL;
            if (p.impl != ATTNOPS_IMPL_REFERENCE) {
                attnops_fa_fwd_args r = a;
                r.p.impl = ATTNOPS_IMPL_REFERENCE;
                r.softmax_max = fz_tensor_like(&golden, &pool, a.softmax_max);
                r.softmax_sum = fz_tensor_like(&golden, &pool, a.softmax_sum);
                r.attention_out = answer = fz_tensor_like(&golden, &pool, a.attention_out);
                FZ_TWO_PHASE(attnops_flash_attention_score_workspace_size, attnops_flash_attention_score, &r, st,
                             skipped);
                if (st != ATTNOPS_SUCCESS) fz_reference_refused(described);
                if (skipped) goto done;
            }
            check_finite(a.attention_out, answer, p.impl, "attention_out");
        }
    } else {
        /* The backward consumes a forward's outputs: run that forward first
         * (into the backward's inputs) so that, when it succeeds, the
         * softmax statistics are real and the gradients must be finite. */
        attnops_fa_bwd_args a = {.p = p};
        a.dy = fz_tensor_new(&f, &pool, pr.fp8 ? pr.dtype : pr.out, qr, shape, true);
        a.attention_in = fz_tensor_new(&f, &pool, pr.out, qr, shape, true);
        a.softmax_max = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, stat_rank, stat_shape, true);
        a.softmax_sum = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, stat_rank, stat_shape, true);
        const int first_output = pool.n;
        for (int i = 0; i < 3; i++) {
            const attnops_tensor *like = i == 0 ? p.query : i == 1 ? p.key : p.value;
            const attnops_tensor *g = like ? fz_tensor_new(&f, &pool, pr.out, like->rank < 0 ? 0 : like->rank,
                                                           like->shape, true) : NULL;
            if (i == 0) a.dq = g;
            else if (i == 1) a.dk = g;
            else a.dv = g;
        }
        if (p.query_rope) a.dq_rope = fz_tensor_new(&f, &pool, pr.out, p.query_rope->rank, p.query_rope->shape, true);
        if (p.key_rope) a.dk_rope = fz_tensor_new(&f, &pool, pr.out, p.key_rope->rank, p.key_rope->shape, true);
        if ((p.sink && fz_one_in(&f, 2)) || fz_one_in(&f, 40)) { /* dsink: with the sink, or (refused) without */
            const int64_t n1 = pr.N1;
            a.dsink = fz_tensor_new(&f, &pool, ATTNOPS_DTYPE_F32, 1, &n1, true);
        }
        if (pool.too_big) goto done;
        attnops_fa_fwd_args fw = {.p = p, .softmax_max = a.softmax_max, .softmax_sum = a.softmax_sum,
                                  .attention_out = a.attention_in};
        FZ_TWO_PHASE(attnops_flash_attention_score_workspace_size, attnops_flash_attention_score, &fw, st, skipped);
        const bool real_stats = st == ATTNOPS_SUCCESS && !skipped;
        fz_poison(&pool, first_output);
        FZ_TWO_PHASE(attnops_flash_attention_score_grad_workspace_size, attnops_flash_attention_score_grad, &a, st,
                     skipped);
        if (!skipped) fz_check_status("FlashAttention", st, &pool, first_output);
        const attnops_tensor *grads[5] = {a.dq, a.dk, a.dv, a.dq_rope, a.dk_rope}, *answers[5] = {NULL};
        if (st == ATTNOPS_SUCCESS && !skipped && real_stats && !pr.fp8 && in_range(&p) && fz_any_nonfinite(grads, 5)) {
            if (p.impl != ATTNOPS_IMPL_REFERENCE) {
                attnops_fa_bwd_args r = a;
                r.p.impl = ATTNOPS_IMPL_REFERENCE;
                for (int i = 0; i < 5; i++) answers[i] = fz_tensor_like(&golden, &pool, grads[i]);
                r.dq = answers[0], r.dk = answers[1], r.dv = answers[2], r.dq_rope = answers[3], r.dk_rope = answers[4];
                FZ_TWO_PHASE(attnops_flash_attention_score_grad_workspace_size, attnops_flash_attention_score_grad,
                             &r, st, skipped);
                if (st != ATTNOPS_SUCCESS) fz_reference_refused(described);
                if (skipped) goto done;
            }
            static const char *const names[5] = {"dq", "dk", "dv", "dq_rope", "dk_rope"};
            for (int i = 0; i < 5; i++) check_finite(grads[i], answers[i], p.impl, names[i]);
        }
    }
done:
    fz_pool_free(&golden);
    fz_pool_free(&pool);
    return 0;
}
