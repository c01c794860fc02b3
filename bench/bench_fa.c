/* bench_fa — throughput of attnops FlashAttentionScore / FlashAttentionScoreGrad
 * against the machine's own tile-GEMM limit, measured in the same run.
 *
 *   bench_fa [--threads N] [--reps R] [--json PATH] [--quick] [--ref] [--case SPEC]...
 *   bench_fa --list-cases [--quick] [--json PATH] [--case SPEC]...
 *       (the resolved specs, one a line; --json also writes them as JSON
 *       descriptors, which the Python peers and the report read)
 *   bench_fa --rss SPEC [--threads N] [--json PATH] [--quick]
 *
 * A case is verify's case descriptor (verify/fa_case_shape.h, the text form
 * the tests and the CLI use) plus the benchmark's own keys:
 *
 *   [NAME:]B=1,N1=8,N2=8,S1=4096,S2=4096,D=128,Dv=128,dtype=bf16,layout=BNSD,dir=bwd[,...]
 *
 * Of the descriptor the bench runs (anything else is refused by name):
 *   masks         none; mode=1,mask=ss (an explicit [S1,S2] bool mask holding
 *                 the causal pattern j > i: mode 2's pattern, read element by
 *                 element); mode=2 / mode=3,mask=compressed (the 2048x2048
 *                 compressed mask); mode=4,mask=compressed,pre=H,next=H (a
 *                 band of total width 2H around the right-down diagonal)
 *   pse           pse=slopes_n,pse_type=2 (generated ALiBi from f32 slopes
 *                 [N1], attnops_alibi_slopes); pse=bnss,pse_type=1 (an
 *                 external [B,N1,S1,S2] tensor of q's dtype, uniform in [-1, 1))
 *   keep=P        dropout with keep probability P in (0, 1), seed=, offset=
 *                 (the in-kernel Philox mask); the peer runs SDPA with
 *                 dropout_p = 1 - P (PyTorch's unfused path)
 *   dtype=f8_e4m3fn / f8_e5m2 with out=bf16 (or f16): FP8 inputs
 *                 (block-quantised, d_scales 1); backward only, its statistics
 *                 synthetic (the FP8 forward is the reference only), like --rss
 *   layout=TND    variable length with B = 1, S1 = S2 = T and varlen=K: K <= 32
 *                 sequences whose lengths are drawn once from a fixed seed,
 *                 uniform in [128, 896), and scaled (cumulative sums rounded)
 *                 to sum to T exactly; or seqs=L0:L1:... given (the listing
 *                 writes them so); kv lengths = q lengths; called through
 *                 attnops_flash_attention_varlen_score /
 *                 attnops_flash_attention_unpadding_score_grad.  A mask
 *                 applies per sequence (mode 1: one [max L, max L] mask); no pse.
 * The bench's keys:
 *   dir=fwd|bwd   the direction (required)
 *   peer=no       bench/peer_torch.py skips the case (bench_fa ignores it)
 *   det=1         deterministic = 1 (bitwise identical for any thread count)
 *   softcap=C     soft-capped scores, C tanh(scale q.k / C) (flash-attn's softcap)
 *   varlen=K      see layout=TND
 *   varlen_dense=K  the "same total work" dense reference of varlen=K at the
 *                 same T: one sequence (B = 1, S1 = S2 = T in the spec) that
 *                 runs at L_eq = round(sqrt(sum L_i^2)); any padded layout
 *                 (BSND is TND's memory layout at B = 1); no mask, no pse.
 * --quick divides S1, S2 (T before the lengths are drawn) and a band's
 * pre/next by 8.  Canonical names get _causal2, _band1024, _mask1, _alibi2,
 * _bnss, _varlen32, _varlen32dense appended (a varlen_dense case is named by
 * its L_eq: fwd_f32_B1_N8_S3156_D128_BSND_varlen32dense).
 *
 * Ratios: a case with a mask and no pse is compared with its "base", the
 * case of the same fields without mask and pse (ratio_vs_dense = time /
 * base time; a band also gets ratio_vs_proportional = time / (base time *
 * unmasked fraction), the fraction counted exactly from the mask's rule); a
 * case with a pse is compared with the same case without pse (ratio_vs_plain).
 * A keep=P case is compared with the same case without dropout
 * (ratio_vs_no_dropout), a det=1 case with the same case without it
 * (ratio_vs_default), an FP8 case with the same case in bf16 (ratio_vs_bf16),
 * a softcap=C case with the same case uncapped (ratio_vs_no_softcap); all
 * time ratios.
 * A plain varlen=K case is compared with its varlen_dense=K case (same T,
 * heads, head dims, dtype, direction): ratio_vs_dense_rate = varlen GFLOP/s /
 * dense GFLOP/s (both at their own real FLOPs; the dense case's are within
 * rounding of the varlen's, so this is about dense time / varlen time).
 * Each ratio is taken within a round, then the median over rounds.  Ratios
 * are named <dir>_<dtype>_<tags> (e.g. bwd_f32_band1024_ratio_vs_proportional)
 * when that label is unique in the case list, else by the case name.
 *
 * What one run does (see docs/PERFORMANCE.md):
 *   - the tile-GEMM peak: libxsmm JIT GEMMs of 64x64x128 (m = n = 64, k = 128),
 *     fp32 (smm) and bf16 x bf16 -> fp32 with VNNI-2 packed A (bsmm), run
 *     concurrently on every thread, each thread on its own buffers;
 *   - every case through the public two-phase API (impl CPU; --ref adds the
 *     reference);
 *   - R rounds, each round runs the two peaks and then every case once, so
 *     the peaks and the kernels alternate; medians over the rounds.
 * FLOPs are dense-equivalent: forward 2*B*N1*S1*S2*(D+Dv), backward 2.5x that,
 * also for masked cases (whose % of peak can then pass 100); a varlen case
 * counts its real work, sum_i 2*N1*L_i^2*(D+Dv) (2.5x for the backward).
 * A case is compared with the fp32 peak when its dtype is f32 or f16 (f16 is
 * widened to fp32 GEMMs) and with the bf16 peak when it is bf16.
 *
 * --rss runs one case once in this process (no warm-up, no forward for the
 * backward's inputs: its softmax statistics are synthetic but valid) and
 * reports ru_maxrss next to the bytes it allocated for inputs, outputs and
 * the workspace.  Run it in a fresh process per case. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <omp.h>

#include <libxsmm.h>

#include "attnops.h"
#include "bench_common.h"
#include "fa_case_shape.h"
#include "fma_ceiling.h"

#define MAX_CASES 64
#define NAME_LEN 96

/* ------------------------------------------------------------------------ */
/* small helpers                                                             */
/* ------------------------------------------------------------------------ */
static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "bench_fa: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(2);
}

/* xorshift64*, uniform in [-1, 1) */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float urand(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t r = rng_state * 0x2545F4914F6CDD1Dull;
    return (float)((double)(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

/* ------------------------------------------------------------------------ */
/* cases                                                                     */
/* ------------------------------------------------------------------------ */
enum { MASK_NONE = 0, MASK_CAUSAL2, MASK_CAUSAL3, MASK_BAND, MASK_FULL1 };
enum { PSE_NONE = 0, PSE_ALIBI2, PSE_BNSS };

/* One benchmark case: verify's case descriptor (fa_case_shape.h, the text
 * form the tests and the CLI use) plus what only a benchmark asks.  In
 * layout TND the bench keeps s.B = 1 and s.S1 = s.S2 = T, the total rows,
 * with the K sequence lengths in s.seq_q (s.nseq = K). */
typedef struct bench_case {
    char name[NAME_LEN];
    fa_case_shape s;
    int bwd;          /* dir=bwd */
    int det;          /* det=1: deterministic = 1 */
    int no_peer;      /* peer=no: only read by bench/peer_torch.py */
    int64_t vl_dense; /* varlen_dense=K: one dense sequence of L_eq(K, T) (S1 = S2 = L_eq) */
    int64_t T;        /* TND and varlen_dense: the total length */
} bench_case;

static int is_fp8(attnops_dtype d) { return d == ATTNOPS_DTYPE_F8_E4M3FN || d == ATTNOPS_DTYPE_F8_E5M2; }

/* The dtype of outputs (and of a pse tensor): out= for FP8 inputs. */
static attnops_dtype out_dtype_of(const bench_case *c) { return is_fp8(c->s.dtype) ? c->s.out_dtype : c->s.dtype; }

/* K sequences of a TND case, 0 otherwise. */
static int64_t varlen_of(const bench_case *c) { return c->s.layout == ATTNOPS_LAYOUT_TND ? c->s.nseq : 0; }

/* The mask kinds the bench runs (parse_case admits no other). */
static int mask_kind(const bench_case *c)
{
    switch (c->s.sparse_mode) {
    case 1: return MASK_FULL1;
    case 2: return MASK_CAUSAL2;
    case 3: return MASK_CAUSAL3;
    case 4: return MASK_BAND;
    default: return MASK_NONE;
    }
}

static int pse_kind(const bench_case *c)
{
    return c->s.pse == FA_CASE_PSE_SLOPES_N ? PSE_ALIBI2 : c->s.pse == FA_CASE_PSE_BNSS ? PSE_BNSS : PSE_NONE;
}

/* ------------------------------------------------------------------------ */
/* variable-length draws                                                     */
/* ------------------------------------------------------------------------ */
/* The K sequence lengths of a varlen case of total T: raw lengths uniform in
 * [128, 896) from a fixed-seed generator (independent of everything else),
 * scaled so they sum to T exactly (the cumulative sums are rounded, so each
 * length is its scaled raw length rounded up or down).  Writes K lengths;
 * returns -1 when one would be < 1 (T too small for K). */
enum { VARLEN_LO = 128, VARLEN_HI = 896 };
static int varlen_lengths(int64_t K, int64_t T, int64_t *len)
{
    uint64_t s = 0xC0FFEE1234567ull;
    double *raw = malloc((size_t)K * sizeof *raw), total = 0;
    if (!raw) return -1;
    for (int64_t i = 0; i < K; i++) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        double u = (double)((s * 0x2545F4914F6CDD1Dull) >> 11) * (1.0 / 9007199254740992.0);
        raw[i] = VARLEN_LO + (VARLEN_HI - VARLEN_LO) * u;
        total += raw[i];
    }
    double acc = 0;
    int64_t prev = 0, bad = 0;
    for (int64_t i = 0; i < K; i++) {
        acc += raw[i];
        int64_t cum = i == K - 1 ? T : (int64_t)llround((double)T * acc / total);
        len[i] = cum - prev;
        bad |= len[i] < 1;
        prev = cum;
    }
    free(raw);
    return bad ? -1 : 0;
}

/* sum of L_i^2 over K lengths; also min, max. */
static double sum_sq(const int64_t *len, int64_t K, int64_t *lmin, int64_t *lmax)
{
    double ss = 0;
    int64_t lo = INT64_MAX, hi = 0;
    for (int64_t i = 0; i < K; i++) {
        ss += (double)len[i] * (double)len[i];
        lo = len[i] < lo ? len[i] : lo;
        hi = len[i] > hi ? len[i] : hi;
    }
    if (lmin) *lmin = lo;
    if (lmax) *lmax = hi;
    return ss;
}

/* ------------------------------------------------------------------------ */
/* names and masks                                                           */
/* ------------------------------------------------------------------------ */
/* "causal2", "band1024", ... ("" for MASK_NONE) */
static void mask_tag(const bench_case *c, char *out, size_t n)
{
    switch (mask_kind(c)) {
    case MASK_CAUSAL2: snprintf(out, n, "causal2"); break;
    case MASK_CAUSAL3: snprintf(out, n, "causal3"); break;
    case MASK_BAND: snprintf(out, n, "band%lld", (long long)(c->s.pre + c->s.next)); break;
    case MASK_FULL1: snprintf(out, n, "mask1"); break;
    default: snprintf(out, n, "%s", ""); break;
    }
}

static const char *pse_tag(const bench_case *c)
{
    return pse_kind(c) == PSE_ALIBI2 ? "alibi2" : pse_kind(c) == PSE_BNSS ? "bnss" : "";
}

/* "_causal2_alibi2", "_band1024", "_varlen32", "_varlen32_causal3",
 * "_varlen32dense", "" ... */
static void tags_suffix(const bench_case *c, char *out, size_t n)
{
    char m[32], v[40] = "", k[24] = "", o[16] = "", cap[32] = "";
    mask_tag(c, m, sizeof m);
    if (varlen_of(c)) snprintf(v, sizeof v, "_varlen%lld", (long long)varlen_of(c));
    else if (c->vl_dense) snprintf(v, sizeof v, "_varlen%llddense", (long long)c->vl_dense);
    if (c->s.keep_prob > 0) snprintf(k, sizeof k, "_keep%d", (int)lround(c->s.keep_prob * 100)); /* names hold no '.' */
    if (is_fp8(c->s.dtype) && c->s.out_dtype != ATTNOPS_DTYPE_BF16)
        snprintf(o, sizeof o, "_out%s", attnops_dtype_name(c->s.out_dtype));
    if (c->s.softcap > 0) snprintf(cap, sizeof cap, "_softcap%lld", (long long)llround(c->s.softcap));
    snprintf(out, n, "%s%s%s%s%s%s%s%s%s", v, m[0] ? "_" : "", m, pse_kind(c) ? "_" : "", pse_tag(c), k,
             c->det ? "_det" : "", o, cap);
}

/* The band the case's mask keeps on an S1 x S2 block (one batch, or one
 * sequence of a varlen case), as attnops applies it: key j takes part in
 * query row i when -pre <= j - i <= next.  Returns 0 for "no mask". */
#define TOKENS_INF ((int64_t)1 << 60)
static int band_of(const bench_case *c, int64_t S1, int64_t S2, int64_t *pre, int64_t *next)
{
    switch (mask_kind(c)) {
    case MASK_CAUSAL2:
    case MASK_FULL1: *pre = TOKENS_INF, *next = 0; return 1;         /* j > i masked */
    case MASK_CAUSAL3: *pre = TOKENS_INF, *next = S2 - S1; return 1;
    case MASK_BAND: /* sparse_mode 4: right-down origin */
        *pre = c->s.pre + S1 - S2, *next = c->s.next - S1 + S2;
        return 1;
    default: *pre = *next = TOKENS_INF; return 0;
    }
}

/* Unmasked (i, j) pairs of one S1 x S2 block, counted exactly row by row. */
static double kept_pairs(const bench_case *c, int64_t S1, int64_t S2)
{
    int64_t pre, next;
    if (!band_of(c, S1, S2, &pre, &next)) return (double)S1 * (double)S2;
    double kept = 0;
    for (int64_t i = 0; i < S1; i++) {
        int64_t lo = i - pre, hi = i + next;
        if (lo < 0) lo = 0;
        if (hi > S2 - 1) hi = S2 - 1;
        if (hi >= lo) kept += (double)(hi - lo + 1);
    }
    return kept;
}

/* (unmasked (i, j) pairs) / (S1 * S2); for a varlen case summed over the
 * sequences, over sum L_i^2. */
static double unmasked_fraction(const bench_case *c)
{
    if (!mask_kind(c)) return 1.0;
    if (!varlen_of(c)) return kept_pairs(c, c->s.S1, c->s.S2) / ((double)c->s.S1 * (double)c->s.S2);
    double kept = 0;
    for (int64_t i = 0; i < varlen_of(c); i++) kept += kept_pairs(c, c->s.seq_q[i], c->s.seq_q[i]);
    return kept / sum_sq(c->s.seq_q, varlen_of(c), NULL, NULL);
}

/* fwd_f32_B1_N8_S4096_D128, with _G<N2>, x<S2>, _Dv<Dv>, _<layout>, _<mask>,
 * _<pse> only when they differ from the plain case. */
static void canonical_name(const bench_case *c, char *out, size_t n)
{
    const fa_case_shape *s = &c->s;
    char g[24] = "", s2[24] = "", dv[24] = "", lay[16] = "", tags[64];
    if (s->N2 != s->N1) snprintf(g, sizeof g, "_G%lld", (long long)s->N2);
    if (s->S2 != s->S1) snprintf(s2, sizeof s2, "x%lld", (long long)s->S2);
    if (s->Dv != s->D) snprintf(dv, sizeof dv, "_Dv%lld", (long long)s->Dv);
    if (s->layout != ATTNOPS_LAYOUT_BNSD) snprintf(lay, sizeof lay, "_%s", attnops_layout_name(s->layout));
    tags_suffix(c, tags, sizeof tags);
    snprintf(out, n, "%s_%s_B%lld_N%lld%s_S%lld%s_D%lld%s%s%s", c->bwd ? "bwd" : "fwd", attnops_dtype_name(s->dtype),
             (long long)s->B, (long long)s->N1, g, (long long)s->S1, s2, (long long)s->D, dv, lay, tags);
}

/* ------------------------------------------------------------------------ */
/* the case spec: [NAME:]<fa_case_parse form>,dir=fwd|bwd[,bench keys]       */
/* ------------------------------------------------------------------------ */
static int64_t positive_knob(const char *v, const char *spec)
{
    char *end;
    errno = 0;
    long long k = strtoll(v, &end, 10);
    if (errno || *end || !*v || k <= 0 || k > 1000000)
        die("varlen=K / varlen_dense=K need a positive integer K in '%s'", spec);
    return k;
}

/* What the descriptor may say that the bench does not run: dies naming it. */
static void check_supported(const bench_case *c, const char *spec)
{
    const fa_case_shape *s = &c->s;
    const int64_t dims[7] = {s->B, s->N1, s->N2, s->S1, s->S2, s->D, s->Dv};
    for (int i = 0; i < 7; i++)
        if (dims[i] <= 0) die("B, N1, N2, S1, S2, D and Dv must be positive in case '%s'", spec);
    if (s->pad || s->Dr || s->inner_precise || s->q_start || s->kv_start || s->seq_kv[0] >= 0)
        die("the bench runs no pad=, rope=, inner_precise=, q_start=, kv_start= or kvseqs= (case '%s')", spec);
    static const fa_case_mask mask_of_mode[5] = {FA_CASE_MASK_NONE, FA_CASE_MASK_SS, FA_CASE_MASK_COMPRESSED,
                                                 FA_CASE_MASK_COMPRESSED, FA_CASE_MASK_COMPRESSED};
    if (s->sparse_mode < 0 || s->sparse_mode > 4 || s->mask != mask_of_mode[s->sparse_mode])
        die("the bench's masks: none (mode 0), mode=1,mask=ss (the causal pattern), mode=2|3|4,mask=compressed; "
            "got '%s'", spec);
    if (s->sparse_mode == 4 && (s->pre != s->next || s->pre < 0))
        die("the bench's bands are symmetric: mode=4 takes pre = next >= 0 in '%s'", spec);
    if (!(s->pse == FA_CASE_PSE_NONE || (s->pse == FA_CASE_PSE_SLOPES_N && s->pse_type == 2) ||
          (s->pse == FA_CASE_PSE_BNSS && s->pse_type == 1)))
        die("the bench's pse: none, pse=slopes_n,pse_type=2 (ALiBi) or pse=bnss,pse_type=1 in '%s'", spec);
    if (!(s->keep_prob >= 0.0 && s->keep_prob < 1.0)) die("keep=P needs 0 < P < 1 in '%s'", spec);
    if (is_fp8(s->dtype) && s->out_dtype != ATTNOPS_DTYPE_BF16 && s->out_dtype != ATTNOPS_DTYPE_F16)
        die("FP8 cases take out=bf16 or out=f16 in '%s'", spec);
    if (is_fp8(s->dtype) && (s->layout == ATTNOPS_LAYOUT_TND || c->vl_dense || !c->bwd))
        die("FP8 cases are backward cases in a padded layout (no fast FP8 forward, no FP8 TND) in '%s'", spec);
}

/* A TND case's lengths (drawn for varlen=K, or the seqs= given) with
 * B = 1, S1 = S2 = T; a varlen_dense=K case's L_eq drawn the same way, with
 * T kept.  Dies on what the bench cannot run. */
static void resolve_lengths(bench_case *c, int64_t varlen, const char *spec)
{
    fa_case_shape *s = &c->s;
    const int tnd = s->layout == ATTNOPS_LAYOUT_TND;
    if (tnd != (varlen || s->nseq) || (varlen && s->nseq))
        die("layout TND takes varlen=K (drawn lengths) or seqs= (given ones), and only TND does, in case '%s'", spec);
    if (tnd || c->vl_dense) {
        if (c->vl_dense && tnd) die("varlen_dense= is a padded-layout case in '%s'", spec);
        if (pse_kind(c)) die("TND and varlen_dense= cases take no pse in '%s'", spec);
        if (c->vl_dense && mask_kind(c)) die("a varlen_dense= case takes no mask in '%s'", spec);
        if (!s->nseq && (s->B != 1 || s->S1 != s->S2))
            die("varlen= and varlen_dense= cases take B = 1 and S1 = S2 = T (the total length) in '%s'", spec);
        const int64_t K = varlen ? varlen : c->vl_dense;
        int64_t drawn[32];
        if (!s->nseq) {
            if (K > 32) die("at most 32 sequences (varlen= / varlen_dense=) in case '%s'", spec);
            if (K > s->S1 || varlen_lengths(K, s->S1, drawn) != 0)
                die("varlen: T = S1 is too small for K sequences of length >= 1 in case '%s'", spec);
        }
        if (tnd) {
            if (!s->nseq) memcpy(s->seq_q, drawn, (size_t)K * sizeof *drawn), s->nseq = (int)K;
            c->T = 0;
            for (int i = 0; i < s->nseq; i++) {
                if (s->seq_q[i] < 1) die("seqs= lengths must be positive in case '%s'", spec);
                c->T += s->seq_q[i];
            }
            s->B = 1, s->S1 = s->S2 = c->T;
        } else {
            c->T = s->S1;
            s->S1 = s->S2 = (int64_t)llround(sqrt(sum_sq(drawn, K, NULL, NULL))); /* L_eq */
        }
    }
}

/* A given NAME: letters, digits and '_' only. */
static void set_name(bench_case *c, const char *name)
{
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
            die("case names may hold only letters, digits and '_': '%s'", name);
    strcpy(c->name, name);
}

/* Parses a spec; --quick then divides S1, S2 (T for varlen=K) and a band's
 * pre/next by 8 (explicit seqs= are taken as given); the TND lengths and a
 * varlen_dense case's L_eq are resolved; an unnamed case gets its
 * canonical name. */
static void parse_case(const char *spec, int quick, bench_case *c)
{
    char buf[1024], rest[1024] = "", name[NAME_LEN] = "";
    if (strlen(spec) >= sizeof buf) die("case spec too long: %s", spec);
    strcpy(buf, spec);
    memset(c, 0, sizeof *c);
    char *body = buf, *colon = strchr(buf, ':');
    if (colon && !memchr(buf, '=', (size_t)(colon - buf))) { /* a NAME, not a seqs=a:b list */
        *colon = 0;
        if (strlen(buf) >= NAME_LEN) die("case name too long: %s", spec);
        strcpy(name, buf);
        body = colon + 1;
    }
    int have_dir = 0;
    int64_t varlen = 0;
    for (char *save = NULL, *tok = strtok_r(body, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const char *v = strchr(tok, '=') ? strchr(tok, '=') + 1 : "";
        if (!strncmp(tok, "dir=", 4)) {
            if (strcmp(v, "fwd") && strcmp(v, "bwd")) die("dir must be fwd or bwd in case '%s'", spec);
            c->bwd = !strcmp(v, "bwd"), have_dir = 1;
        } else if (!strncmp(tok, "peer=", 5)) {
            if (strcmp(v, "no") && strcmp(v, "yes")) die("peer must be yes or no in case '%s'", spec);
            c->no_peer = !strcmp(v, "no");
        } else if (!strncmp(tok, "det=", 4)) {
            if (strcmp(v, "0") && strcmp(v, "1")) die("det must be 0 or 1 in case '%s'", spec);
            c->det = !strcmp(v, "1");
        } else if (!strncmp(tok, "varlen=", 7)) varlen = positive_knob(v, spec);
        else if (!strncmp(tok, "varlen_dense=", 13)) c->vl_dense = positive_knob(v, spec);
        else {
            size_t used = strlen(rest);
            snprintf(rest + used, sizeof rest - used, "%s%s", used ? "," : "", tok);
        }
    }
    if (!fa_case_parse(rest, &c->s))
        die("a case is key=value fields (verify/fa_case_shape.h: B=,N1=,...,dtype=,layout=,mode=,...) plus "
            "dir=fwd|bwd[,peer=][,det=][,varlen=][,varlen_dense=]; cannot read '%s'", spec);
    if (!have_dir) die("a case needs dir=fwd or dir=bwd: '%s'", spec);
    check_supported(c, spec);
    fa_case_shape *s = &c->s;
    if (quick) {
        s->S1 = s->S1 / 8 > 0 ? s->S1 / 8 : 1;
        s->S2 = s->S2 / 8 > 0 ? s->S2 / 8 : 1;
        s->pre /= 8, s->next /= 8;
    }
    resolve_lengths(c, varlen, spec);
    if (name[0]) set_name(c, name);
    else canonical_name(c, c->name, sizeof c->name);
}

/* The spec that re-parses (without --quick) to this case: the descriptor's
 * text form (a TND case with its lengths as seqs=; a varlen_dense case with
 * S1 = S2 = T) and the bench's keys. */
static void case_spec(const bench_case *c, char *out, size_t n)
{
    fa_case_shape s = c->s;
    if (c->vl_dense) s.S1 = s.S2 = c->T;
    char desc[768], dense[40] = "";
    fa_case_describe(&s, desc, sizeof desc);
    if (c->vl_dense) snprintf(dense, sizeof dense, ",varlen_dense=%lld", (long long)c->vl_dense);
    snprintf(out, n, "%s:%s,dir=%s%s%s%s", c->name, desc, c->bwd ? "bwd" : "fwd", c->det ? ",det=1" : "",
             c->no_peer ? ",peer=no" : "", dense);
}

/* The case list as JSON, one object per case: the descriptors the Python
 * programs (bench/peer_torch.py, bench/bench_report.py) read instead of
 * parsing specs themselves.  S1, S2 as in the spec (T for varlen and
 * varlen_dense); mask and pse are the tags of the names ("none" without);
 * sparse_mode, pre, next are the descriptor's; spec its text form. */
static void write_case_list_json(const char *path, const bench_case *cases, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) die("cannot write %s", path);
    fputs("[\n", f);
    for (int i = 0; i < n; i++) {
        const bench_case *c = &cases[i];
        const fa_case_shape *s = &c->s;
        char m[32], spec[1024];
        mask_tag(c, m, sizeof m);
        case_spec(c, spec, sizeof spec);
        const int64_t S1 = c->vl_dense ? c->T : s->S1, S2 = c->vl_dense ? c->T : s->S2;
        fprintf(f, "  {\"name\": \"%s\", \"B\": %lld, \"N1\": %lld, \"N2\": %lld, \"S1\": %lld, \"S2\": %lld, "
                   "\"D\": %lld, \"Dv\": %lld, \"dtype\": \"%s\", \"layout\": \"%s\", \"dir\": \"%s\", "
                   "\"mask\": \"%s\", \"pse\": \"%s\", \"peer\": %s, \"varlen\": %lld, \"varlen_dense\": %lld, "
                   "\"keep\": %.17g, \"softcap\": %.17g, \"det\": %d, \"sparse_mode\": %lld, \"pre\": %lld, \"next\": %lld, "
                   "\"spec\": \"%s\"}%s\n",
                c->name, (long long)s->B, (long long)s->N1, (long long)s->N2, (long long)S1, (long long)S2,
                (long long)s->D, (long long)s->Dv, attnops_dtype_name(s->dtype), attnops_layout_name(s->layout),
                c->bwd ? "bwd" : "fwd", mask_kind(c) ? m : "none", pse_kind(c) ? pse_tag(c) : "none",
                c->no_peer ? "false" : "true", (long long)varlen_of(c), (long long)c->vl_dense, s->keep_prob,
                s->softcap, c->det, (long long)s->sparse_mode, (long long)s->pre, (long long)s->next, spec, i + 1 < n ? "," : "");
    }
    fputs("]\n", f);
    if (fclose(f) != 0) die("cannot write %s", path);
}

/* The targets of docs/PERFORMANCE.md: the one case list (run.sh passes it
 * to the peers as the JSON of --list-cases --json). */
#define HEADS8 "B=1,N1=8,N2=8,S1=4096,S2=4096,D=128,Dv=128,layout=BNSD"
#define HEADS1 "B=1,N1=1,N2=1,S1=8192,S2=8192,D=128,Dv=128,layout=BNSD"
#define HEADS2 "B=1,N1=2,N2=2,S1=4096,S2=4096,D=128,Dv=128,layout=BNSD"
#define TOTAL16K "B=1,N1=8,N2=8,S1=16384,S2=16384,D=128,Dv=128"
#define CAUSAL(mode) ",mode=" #mode ",mask=compressed"
#define BAND(half) ",mode=4,mask=compressed,pre=" #half ",next=" #half /* total width 2 * half */
#define ALIBI2 ",pse=slopes_n,pse_type=2"
#define PSE_BNSS_F32 ",pse=bnss,pse_type=1"
static const char *const default_cases[] = {
    HEADS8 ",dtype=f32,dir=fwd",
    HEADS8 ",dtype=f32,dir=bwd",
    HEADS8 ",dtype=bf16,dir=bwd",
    HEADS1 ",dtype=f32,dir=bwd",
    HEADS1 ",dtype=bf16,dir=bwd",
    /* causal, against the dense backward above; torch (is_causal=True) for mode 2
     * only: at S1 = S2 mode 3 is the same pattern, so its torch time would be too */
    HEADS8 ",dtype=f32,dir=bwd" CAUSAL(2),
    HEADS8 ",dtype=f32,dir=bwd" CAUSAL(3) ",peer=no",
    HEADS8 ",dtype=bf16,dir=bwd" CAUSAL(2),
    HEADS8 ",dtype=bf16,dir=bwd" CAUSAL(3) ",peer=no",
    /* bands, against the dense backward scaled by the unmasked fraction;
     * torch (boolean attn_mask) only for width 1024 */
    HEADS8 ",dtype=f32,dir=bwd" BAND(256) ",peer=no",
    HEADS8 ",dtype=f32,dir=bwd" BAND(512),
    HEADS8 ",dtype=f32,dir=bwd" BAND(1024) ",peer=no",
    HEADS8 ",dtype=bf16,dir=bwd" BAND(256) ",peer=no",
    HEADS8 ",dtype=bf16,dir=bwd" BAND(512),
    HEADS8 ",dtype=bf16,dir=bwd" BAND(1024) ",peer=no",
    /* position bias, against the plain kernel of the same shape; N1 = 2
     * keeps the f32 BNSS pse at 128 MiB (torch has no equivalent call) */
    HEADS2 ",dtype=f32,dir=fwd,peer=no",
    HEADS2 ",dtype=f32,dir=fwd" ALIBI2,
    HEADS2 ",dtype=f32,dir=fwd" PSE_BNSS_F32,
    HEADS2 ",dtype=f32,dir=bwd,peer=no",
    HEADS2 ",dtype=f32,dir=bwd" ALIBI2,
    HEADS2 ",dtype=f32,dir=bwd" PSE_BNSS_F32,
    HEADS2 ",dtype=bf16,dir=bwd,peer=no",
    HEADS2 ",dtype=bf16,dir=bwd" ALIBI2,
    HEADS2 ",dtype=bf16,dir=bwd" PSE_BNSS_F32,
    /* variable length: 32 sequences (lengths uniform in [128, 896], scaled to
     * T = 16384) in layout TND, against one dense sequence of the same total
     * work (L_eq = round(sqrt(sum L_i^2)), BSND = TND's memory layout at B = 1);
     * ratio_vs_dense_rate = varlen GFLOP/s / dense GFLOP/s.  No torch peer. */
    TOTAL16K ",dtype=f32,layout=TND,dir=fwd,varlen=32,peer=no",
    TOTAL16K ",dtype=f32,layout=BSND,dir=fwd,varlen_dense=32,peer=no",
    TOTAL16K ",dtype=f32,layout=TND,dir=bwd,varlen=32,peer=no",
    TOTAL16K ",dtype=f32,layout=BSND,dir=bwd,varlen_dense=32,peer=no",
    TOTAL16K ",dtype=bf16,layout=TND,dir=fwd,varlen=32,peer=no",
    TOTAL16K ",dtype=bf16,layout=BSND,dir=fwd,varlen_dense=32,peer=no",
    TOTAL16K ",dtype=bf16,layout=TND,dir=bwd,varlen=32,peer=no",
    TOTAL16K ",dtype=bf16,layout=BSND,dir=bwd,varlen_dense=32,peer=no",
    /* dropout (keep 0.9, seed 2) against the same backward without it; torch
     * runs SDPA with dropout_p = 0.1 (its unfused path) */
    HEADS8 ",dtype=f32,dir=bwd,keep=0.9,seed=2",
    HEADS8 ",dtype=bf16,dir=bwd,keep=0.9,seed=2",
    /* deterministic against default: N1 = 8 and B*N1 = 1 (key-range splits) */
    HEADS8 ",dtype=bf16,dir=bwd,det=1,peer=no",
    HEADS1 ",dtype=bf16,dir=bwd,det=1,peer=no",
    /* FP8 backward (bf16 outputs) against bf16 on the same shape */
    HEADS8 ",dtype=f8_e4m3fn,out=bf16,dir=bwd,peer=no",
    /* soft-capping (Gemma 2's cap of 50) against the same uncapped forward and
     * backward; SDPA has no cap */
    HEADS8 ",dtype=bf16,dir=fwd",
    HEADS8 ",dtype=f32,dir=fwd,softcap=50,peer=no",
    HEADS8 ",dtype=bf16,dir=fwd,softcap=50,peer=no",
    HEADS8 ",dtype=f32,dir=bwd,softcap=50,peer=no",
    HEADS8 ",dtype=bf16,dir=bwd,softcap=50,peer=no",
    /* a short query: one row per head against 4096 keys, GQA 4 (a decode step through the forward, which
     * runs it on the split-KV kernel's few-row path) */
    "B=4,N1=32,N2=8,S1=1,S2=4096,D=128,Dv=128,layout=BSND,dtype=bf16,dir=fwd",
};

/* Dense-equivalent FLOPs: forward 2*B*N1*S1*S2*(D+Dv); a varlen case counts
 * its real work, sum_i 2*N1*L_i^2*(D+Dv); backward 2.5x. */
static double case_flop(const bench_case *c)
{
    const fa_case_shape *s = &c->s;
    double pairs = varlen_of(c) ? sum_sq(s->seq_q, varlen_of(c), NULL, NULL) : (double)s->B * (double)s->S1 * (double)s->S2;
    double f = 2.0 * (double)s->N1 * pairs * (double)(s->D + s->Dv);
    return c->bwd ? 2.5 * f : f;
}

/* ------------------------------------------------------------------------ */
/* tensors of one case                                                       */
/* ------------------------------------------------------------------------ */
/* A q-like tensor (S rows of N heads of dim d; TND: B = 1, S = T) in layout lay. */
static attnops_tensor make_tensor(void *data, attnops_dtype dt, attnops_layout lay, int64_t B, int64_t S, int64_t N,
                                  int64_t d)
{
    int64_t shape[4];
    const int rank = fa_case_tensor_shape(&(fa_case_shape){.layout = lay}, B, S, N, d, shape);
    return attnops_tensor_contiguous(data, dt, rank, shape);
}

typedef struct case_data {
    bench_case c;
    size_t es, oes; /* element sizes of the inputs and of the outputs (they differ under FP8) */
    /* tensors */
    attnops_tensor q, k, v, o, smax, ssum, dy, dq, dk, dv;
    attnops_tensor mask, pse; /* data NULL when the case has none */
    attnops_tensor cumlen;    /* varlen: i64 [K] cumulative lengths (q and kv alike) */
    attnops_tensor dsq, dsk, dsv, dsdy; /* FP8: f32 de-quantisation scales, all 1 */
    void *ws;
    size_t ws_bytes;
    size_t in_bytes, out_bytes;
    attnops_fa_fwd_args fa;
    attnops_fa_bwd_args ba;
    double flop;
    double ms[256], ref_ms[256];
    int nrep, nref;
} case_data;

static void fill_random(void *p, attnops_dtype dt, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float x = urand();
        if (dt == ATTNOPS_DTYPE_F32) ((float *)p)[i] = x;
        else if (dt == ATTNOPS_DTYPE_BF16) ((uint16_t *)p)[i] = attnops_f32_to_bf16(x);
        else if (dt == ATTNOPS_DTYPE_F8_E4M3FN) ((uint8_t *)p)[i] = attnops_f32_to_f8_e4m3fn(x);
        else if (dt == ATTNOPS_DTYPE_F8_E5M2) ((uint8_t *)p)[i] = attnops_f32_to_f8_e5m2(x);
        else ((uint16_t *)p)[i] = attnops_f32_to_f16(x);
    }
}

static int64_t numel(const attnops_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->shape[i];
    return n;
}

static void check_status(attnops_status st, const char *what, const bench_case *c)
{
    if (st == ATTNOPS_SUCCESS) return;
    fprintf(stderr, "bench_fa: %s failed for case %s: %s (%s)\n", what, c->name, attnops_status_string(st),
            attnops_last_error());
    exit(1);
}

static void fill_params(attnops_fa_params *p, const case_data *d, attnops_impl impl, int threads)
{
    p->query = &d->q;
    p->key = &d->k;
    p->value = &d->v;
    const fa_case_shape *s = &d->c.s;
    p->head_num = s->N1;
    p->input_layout = s->layout;
    p->scale_value = s->scale > 0 ? s->scale : 1.0 / sqrt((double)s->D);
    p->impl = impl;
    p->num_threads = threads;
    if (d->mask.data) {
        p->atten_mask = &d->mask;
        p->sparse_mode = s->sparse_mode;
        if (mask_kind(&d->c) == MASK_BAND) p->pre_tokens = s->pre, p->next_tokens = s->next;
    }
    if (d->pse.data) {
        p->pse = &d->pse;
        p->pse_type = s->pse_type;
    }
    if (d->cumlen.data) p->actual_seq_qlen = p->actual_seq_kvlen = &d->cumlen;
    if (s->keep_prob > 0) p->keep_prob = s->keep_prob, p->seed = s->seed, p->offset = s->offset;
    p->deterministic = d->c.det;
    p->softcap = s->softcap;
    if (is_fp8(s->dtype)) {
        p->d_scale_q = &d->dsq, p->d_scale_k = &d->dsk, p->d_scale_v = &d->dsv;
        p->d_scale_dy = p->d_scale_o = &d->dsdy;
        p->out_dtype = s->out_dtype == ATTNOPS_DTYPE_BF16; /* 0: f16, 1: bf16 */
    }
}

/* The calls: TND goes through the varlen entry points
 * (aclnnFlashAttentionVarLenScore / UnpaddingScoreGradV2), the rest through
 * the plain ones. */
static attnops_status fwd_ws(const case_data *d, size_t *b)
{
    return varlen_of(&d->c) ? attnops_flash_attention_varlen_score_workspace_size(&d->fa, b)
                       : attnops_flash_attention_score_workspace_size(&d->fa, b);
}
static attnops_status fwd_call(const case_data *d, void *ws, size_t b)
{
    return varlen_of(&d->c) ? attnops_flash_attention_varlen_score(&d->fa, ws, b)
                       : attnops_flash_attention_score(&d->fa, ws, b);
}
static attnops_status bwd_ws(const case_data *d, size_t *b)
{
    return varlen_of(&d->c) ? attnops_flash_attention_unpadding_score_grad_workspace_size(&d->ba, b)
                       : attnops_flash_attention_score_grad_workspace_size(&d->ba, b);
}
static attnops_status bwd_call(const case_data *d, void *ws, size_t b)
{
    return varlen_of(&d->c) ? attnops_flash_attention_unpadding_score_grad(&d->ba, ws, b)
                       : attnops_flash_attention_score_grad(&d->ba, ws, b);
}

/* The case's atten_mask (CANN polarity, 1 = masked out) and pse, if any.
 * Returns the bytes allocated. */
static size_t make_mask_pse(case_data *d)
{
    const bench_case *c = &d->c;
    const fa_case_shape *s = &c->s;
    size_t bytes = 0;
    if (mask_kind(c) != MASK_NONE) {
        /* mode 1: the full [S1,S2] causal pattern; modes 2/3/4: the
         * compressed 2048x2048 one (upper triangle j > i set). */
        int64_t full = s->S1, fullc = s->S2;
        if (varlen_of(c)) { /* TND mode 1: one [max L, max L] mask, read per sequence */
            full = 0;
            for (int64_t i = 0; i < varlen_of(c); i++) full = s->seq_q[i] > full ? s->seq_q[i] : full;
            fullc = full;
        }
        const int full1 = mask_kind(c) == MASK_FULL1;
        const int64_t rows = full1 ? full : 2048, cols = full1 ? fullc : 2048;
        const int64_t shape[2] = {rows, cols};
        uint8_t *m = xmalloc((size_t)(rows * cols));
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) m[i * cols + j] = j > i;
        d->mask = attnops_tensor_contiguous(m, ATTNOPS_DTYPE_BOOL, 2, shape);
        bytes += (size_t)(rows * cols);
    }
    if (pse_kind(c) == PSE_ALIBI2) {
        const int64_t shape[1] = {s->N1};
        float *sl = xmalloc((size_t)s->N1 * sizeof(float));
        check_status(attnops_alibi_slopes(s->N1, sl), "attnops_alibi_slopes", c);
        d->pse = attnops_tensor_contiguous(sl, ATTNOPS_DTYPE_F32, 1, shape);
        bytes += (size_t)s->N1 * sizeof(float);
    } else if (pse_kind(c) == PSE_BNSS) {
        const int64_t shape[4] = {s->B, s->N1, s->S1, s->S2};
        const size_t n = (size_t)(s->B * s->N1 * s->S1 * s->S2);
        void *b = xmalloc(n * d->oes);
        fill_random(b, out_dtype_of(c), (int64_t)n);
        d->pse = attnops_tensor_contiguous(b, out_dtype_of(c), 4, shape);
        bytes += n * d->oes;
    }
    return bytes;
}

/* Element counts of one case's tensors: q, k, v, the output (and dy), and
 * each softmax statistic (8 floats a row). */
typedef struct case_sizes {
    size_t nq, nk, nv, no, ns;
} case_sizes;

static case_sizes sizes_of(const fa_case_shape *s)
{
    const int64_t B = s->B, N1 = s->N1, N2 = s->N2, S1 = s->S1, S2 = s->S2, D = s->D, Dv = s->Dv;
    return (case_sizes){.nq = (size_t)(B * N1 * S1 * D), .nk = (size_t)(B * N2 * S2 * D),
                        .nv = (size_t)(B * N2 * S2 * Dv), .no = (size_t)(B * N1 * S1 * Dv),
                        .ns = (size_t)(B * N1 * S1 * 8)};
}

/* varlen: the i64 [K] cumulative lengths (q and kv alike).  Returns their bytes. */
static size_t make_cumlen(case_data *d)
{
    const int64_t K = varlen_of(&d->c), kshape[1] = {K};
    if (!K) return 0;
    int64_t *cum = xmalloc((size_t)K * sizeof *cum), acc = 0;
    for (int64_t i = 0; i < K; i++) cum[i] = acc += d->c.s.seq_q[i];
    d->cumlen = attnops_tensor_contiguous(cum, ATTNOPS_DTYPE_I64, 1, kshape);
    return (size_t)K * sizeof *cum;
}

/* FP8: the f32 de-quantisation scales of q, k, v and dy, one per 128-row block, all 1. */
static void make_fp8_scales(case_data *d)
{
    const fa_case_shape *s = &d->c.s;
    const int64_t qs[4] = {s->B, s->N1, (s->S1 + 127) / 128, 1}, ks[4] = {s->B, s->N2, (s->S2 + 127) / 128, 1};
    const size_t nqs = (size_t)(qs[0] * qs[1] * qs[2]), nks = (size_t)(ks[0] * ks[1] * ks[2]);
    float *a = xmalloc(nqs * 4), *b = xmalloc(nks * 4), *e = xmalloc(nks * 4), *g = xmalloc(nqs * 4);
    for (size_t i = 0; i < nqs; i++) a[i] = g[i] = 1.0f;
    for (size_t i = 0; i < nks; i++) b[i] = e[i] = 1.0f;
    d->dsq = attnops_tensor_contiguous(a, ATTNOPS_DTYPE_F32, 4, qs);
    d->dsk = attnops_tensor_contiguous(b, ATTNOPS_DTYPE_F32, 4, ks);
    d->dsv = attnops_tensor_contiguous(e, ATTNOPS_DTYPE_F32, 4, ks);
    d->dsdy = attnops_tensor_contiguous(g, ATTNOPS_DTYPE_F32, 4, qs);
}

/* softmax_max and softmax_sum: [B, N1, S1, 8], or in TND declared [T, N1, 8]. */
static void make_stats(case_data *d, size_t ns)
{
    const fa_case_shape *s = &d->c.s;
    const int64_t sshape[4] = {s->B, s->N1, s->S1, 8}, tshape[3] = {s->S1, s->N1, 8};
    const int srank = varlen_of(&d->c) ? 3 : 4;
    const int64_t *sdims = varlen_of(&d->c) ? tshape : sshape;
    d->smax = attnops_tensor_contiguous(xmalloc(ns * 4), ATTNOPS_DTYPE_F32, srank, sdims);
    d->ssum = attnops_tensor_contiguous(xmalloc(ns * 4), ATTNOPS_DTYPE_F32, srank, sdims);
}

/* The backward's forward outputs made up instead of computed (--rss, FP8):
 * |q.k| * scale <= sqrt(D) for entries in [-1,1], so max = sqrt(D) keeps
 * every exp(s - max) in (0, 1]; sum = S2 (varlen: L_i in each sequence's
 * [N1, L_i, 8] block) keeps P a valid-looking distribution; attention_in
 * random. */
static void fill_synthetic_stats(case_data *d, const case_sizes *n)
{
    const fa_case_shape *s = &d->c.s;
    fill_random(d->o.data, out_dtype_of(&d->c), (int64_t)n->no);
    float mx = (float)sqrt((double)s->D), sm = (float)s->S2;
    for (size_t i = 0; i < n->ns; i++) {
        ((float *)d->smax.data)[i] = mx;
        ((float *)d->ssum.data)[i] = sm;
    }
    for (int64_t b = 0, off = 0; b < varlen_of(&d->c); off += s->seq_q[b] * s->N1 * 8, b++)
        for (int64_t i = 0; i < s->seq_q[b] * s->N1 * 8; i++) ((float *)d->ssum.data)[off + i] = (float)s->seq_q[b];
}

/* The backward's tensors and arguments; its attention_in and statistics from
 * a forward run of impl CPU (workspace fws) unless synthetic_stats. */
static void setup_backward(case_data *d, const case_sizes *n, int threads, int synthetic_stats, size_t fws,
                           size_t extra_in)
{
    const bench_case *c = &d->c;
    const fa_case_shape *s = &c->s;
    const attnops_dtype dt = s->dtype, odt = out_dtype_of(c);
    d->dy = make_tensor(xmalloc(n->no * d->es), dt, s->layout, s->B, s->S1, s->N1, s->Dv);
    d->dq = make_tensor(xmalloc(n->nq * d->oes), odt, s->layout, s->B, s->S1, s->N1, s->D);
    d->dk = make_tensor(xmalloc(n->nk * d->oes), odt, s->layout, s->B, s->S2, s->N2, s->D);
    d->dv = make_tensor(xmalloc(n->nv * d->oes), odt, s->layout, s->B, s->S2, s->N2, s->Dv);
    fill_random(d->dy.data, dt, (int64_t)n->no);

    if (synthetic_stats) fill_synthetic_stats(d, n);
    else {
        void *fw = xmalloc(fws);
        check_status(fwd_call(d, fw, fws), "forward (for the backward's inputs)", c);
        free(fw);
    }

    attnops_fa_bwd_args_init(&d->ba);
    fill_params(&d->ba.p, d, ATTNOPS_IMPL_CPU, threads);
    d->ba.dy = &d->dy;
    d->ba.attention_in = &d->o;
    d->ba.softmax_max = &d->smax;
    d->ba.softmax_sum = &d->ssum;
    d->ba.dq = &d->dq;
    d->ba.dk = &d->dk;
    d->ba.dv = &d->dv;
    check_status(bwd_ws(d, &d->ws_bytes), "backward workspace query", c);
    d->ws = xmalloc(d->ws_bytes);
    d->in_bytes = (n->nq + n->nk + n->nv + n->no) * d->es + n->no * d->oes + 2 * n->ns * 4 + extra_in;
    d->out_bytes = (n->nq + n->nk + n->nv) * d->oes;
}

/* Allocate and fill a case.  synthetic_stats: the backward's attention_in and
 * softmax statistics are made up (no forward run, used by --rss); otherwise
 * they come from a forward run of impl CPU. */
static void case_setup(case_data *d, const bench_case *c, int threads, int synthetic_stats)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    const fa_case_shape *s = &c->s;
    d->es = attnops_dtype_size(s->dtype);
    d->oes = attnops_dtype_size(out_dtype_of(c));
    d->flop = case_flop(c);
    const attnops_dtype dt = s->dtype, odt = out_dtype_of(c);
    if (is_fp8(dt)) synthetic_stats = 1; /* no fast FP8 forward to produce them */
    const case_sizes n = sizes_of(s);
    const size_t extra_len = make_cumlen(d);

    d->q = make_tensor(xmalloc(n.nq * d->es), dt, s->layout, s->B, s->S1, s->N1, s->D);
    d->k = make_tensor(xmalloc(n.nk * d->es), dt, s->layout, s->B, s->S2, s->N2, s->D);
    d->v = make_tensor(xmalloc(n.nv * d->es), dt, s->layout, s->B, s->S2, s->N2, s->Dv);
    d->o = make_tensor(xmalloc(n.no * d->oes), odt, s->layout, s->B, s->S1, s->N1, s->Dv);
    if (is_fp8(dt)) make_fp8_scales(d);
    make_stats(d, n.ns);
    /* Small values keep scores ~N(0, 1/9): a realistic softmax. */
    fill_random(d->q.data, dt, (int64_t)n.nq);
    fill_random(d->k.data, dt, (int64_t)n.nk);
    fill_random(d->v.data, dt, (int64_t)n.nv);
    const size_t extra_in = make_mask_pse(d) + extra_len;

    attnops_fa_fwd_args_init(&d->fa);
    fill_params(&d->fa.p, d, ATTNOPS_IMPL_CPU, threads);
    d->fa.softmax_max = &d->smax;
    d->fa.softmax_sum = &d->ssum;
    d->fa.attention_out = &d->o;

    size_t fws = 0;
    if (!c->bwd || !synthetic_stats)
        check_status(fwd_ws(d, &fws), "forward workspace query", c);
    if (c->bwd) {
        setup_backward(d, &n, threads, synthetic_stats, fws, extra_in);
        return;
    }
    d->ws_bytes = fws;
    d->ws = xmalloc(fws);
    d->in_bytes = (n.nq + n.nk + n.nv) * d->es + extra_in;
    d->out_bytes = n.no * d->oes + 2 * n.ns * 4;
}

static void case_free(case_data *d)
{
    void *ps[] = {d->q.data, d->k.data, d->v.data, d->o.data, d->smax.data, d->ssum.data,
                  d->dy.data, d->dq.data, d->dk.data, d->dv.data, d->mask.data, d->pse.data, d->ws,
                  d->cumlen.data, d->dsq.data, d->dsk.data, d->dsv.data, d->dsdy.data};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) free(ps[i]);
}

/* One timed call, in milliseconds.  impl REFERENCE re-queries its own
 * workspace (allocated outside the timed region). */
static double case_run(case_data *d, attnops_impl impl)
{
    void *ws = d->ws;
    size_t wsb = d->ws_bytes;
    attnops_status st;
    if (impl != ATTNOPS_IMPL_CPU) {
        d->fa.p.impl = d->ba.p.impl = impl;
        st = d->c.bwd ? bwd_ws(d, &wsb) : fwd_ws(d, &wsb);
        check_status(st, "reference workspace query", &d->c);
        ws = xmalloc(wsb);
    }
    double t0 = now_s();
    st = d->c.bwd ? bwd_call(d, ws, wsb) : fwd_call(d, ws, wsb);
    double t1 = now_s();
    check_status(st,
                 varlen_of(&d->c) ? (d->c.bwd ? "FlashAttentionUnpaddingScoreGrad" : "FlashAttentionVarLenScore")
                             : (d->c.bwd ? "FlashAttentionScoreGrad" : "FlashAttentionScore"),
                 &d->c);
    if (impl != ATTNOPS_IMPL_CPU) {
        free(ws);
        d->fa.p.impl = d->ba.p.impl = ATTNOPS_IMPL_CPU;
    }
    return (t1 - t0) * 1e3;
}

/* Count non-finite values in the case's outputs (a broken kernel benchmarks
 * nothing); prints a warning, never fails. */
static void case_sanity(const case_data *d)
{
    const attnops_tensor *outs[3];
    int n = 0;
    if (d->c.bwd) outs[n++] = &d->dq, outs[n++] = &d->dk, outs[n++] = &d->dv;
    else outs[n++] = &d->o;
    int64_t bad = 0;
    for (int i = 0; i < n; i++) {
        int64_t m = numel(outs[i]);
        for (int64_t j = 0; j < m; j++) {
            const attnops_dtype odt = out_dtype_of(&d->c);
            float x = odt == ATTNOPS_DTYPE_F32    ? ((const float *)outs[i]->data)[j]
                      : odt == ATTNOPS_DTYPE_BF16 ? attnops_bf16_to_f32(((const uint16_t *)outs[i]->data)[j])
                                                  : attnops_f16_to_f32(((const uint16_t *)outs[i]->data)[j]);
            bad += !isfinite(x);
        }
    }
    if (bad) fprintf(stderr, "bench_fa: WARNING: case %s produced %lld non-finite outputs\n", d->c.name, (long long)bad);
}

/* ------------------------------------------------------------------------ */
/* ratios between cases                                                      */
/* ------------------------------------------------------------------------ */
static int same_shape(const bench_case *a, const bench_case *b)
{
    const fa_case_shape *x = &a->s, *y = &b->s;
    return x->B == y->B && x->N1 == y->N1 && x->N2 == y->N2 && x->S1 == y->S1 && x->S2 == y->S2 && x->D == y->D &&
           x->Dv == y->Dv && x->dtype == y->dtype && x->layout == y->layout && a->bwd == b->bwd &&
           varlen_of(a) == varlen_of(b) && a->vl_dense == b->vl_dense && a->T == b->T;
}

/* The same mask (a band of the same width) and the same pse. */
static int same_mask_pse(const bench_case *a, const bench_case *b)
{
    return mask_kind(a) == mask_kind(b) && (mask_kind(a) != MASK_BAND || a->s.pre == b->s.pre) &&
           pse_kind(a) == pse_kind(b);
}

/* The dense reference of a plain varlen case (no mask, no pse): the
 * varlen_dense case of the same K, T, heads, head dims, dtype and direction;
 * -1 when there is none. */
static int dense_of(const bench_case *cases, int n, int i)
{
    const bench_case *c = &cases[i];
    if (!varlen_of(c) || mask_kind(c) || pse_kind(c)) return -1;
    for (int k = 0; k < n; k++) {
        const bench_case *b = &cases[k];
        if (b->vl_dense == varlen_of(c) && b->T == c->T && b->s.N1 == c->s.N1 && b->s.N2 == c->s.N2 &&
            b->s.D == c->s.D && b->s.Dv == c->s.Dv && b->s.dtype == c->s.dtype && b->bwd == c->bwd &&
            !mask_kind(b) && !pse_kind(b))
            return k;
    }
    return -1;
}

/* The case cases[i] is compared with: for a pse case the same case without
 * pse (mask kept), for a masked case the same case without mask; -1 when
 * there is none (or cases[i] is plain). */
static int is_variant(const bench_case *c)
{
    return c->s.keep_prob > 0 || c->det || is_fp8(c->s.dtype) || c->s.softcap > 0;
}

static int base_of(const bench_case *cases, int n, int i)
{
    const bench_case *c = &cases[i];
    if ((!mask_kind(c) && !pse_kind(c)) || is_variant(c)) return -1;
    for (int k = 0; k < n; k++) {
        const bench_case *b = &cases[k];
        if (k == i || !same_shape(c, b) || pse_kind(b) || is_variant(b)) continue;
        if (pse_kind(c) ? mask_kind(b) == mask_kind(c) && (mask_kind(b) != MASK_BAND || b->s.pre == c->s.pre)
                        : !mask_kind(b))
            return k;
    }
    return -1;
}

/* A keep=P, det=1, FP8 or softcap case against the same case without that
 * one feature (an FP8 case against bf16); -1 when absent.  *kind names the
 * ratio. */
static int variant_base(const bench_case *cases, int n, int i, const char **kind)
{
    const bench_case *c = &cases[i];
    const double keep = c->s.keep_prob;
    if (!is_variant(c)) return -1;
    for (int k = 0; k < n; k++) {
        bench_case b = cases[k];
        const double bkeep = b.s.keep_prob;
        if (k == i || !same_mask_pse(&b, c)) continue;
        if (c->s.softcap > 0) {
            if (b.s.softcap > 0 || bkeep != keep || b.det != c->det || b.s.dtype != c->s.dtype) continue;
            *kind = "ratio_vs_no_softcap";
        } else if (b.s.softcap > 0) continue;
        else if (keep > 0 && bkeep == 0 && b.det == c->det && b.s.dtype == c->s.dtype) *kind = "ratio_vs_no_dropout";
        else if (keep == 0 && c->det && !b.det && bkeep == 0 && b.s.dtype == c->s.dtype) *kind = "ratio_vs_default";
        else if (keep == 0 && !c->det && is_fp8(c->s.dtype) && b.s.dtype == ATTNOPS_DTYPE_BF16 && bkeep == 0 && !b.det)
            *kind = "ratio_vs_bf16", b.s.dtype = c->s.dtype;
        else continue;
        if (same_shape(c, &b)) return k;
    }
    return -1;
}

/* <dir>_<dtype>_<tags> ("bwd_f32_band1024") when no other case of the list
 * has the same one, else the case name. */
static void ratio_label(const bench_case *cases, int n, int i, char *out, size_t len)
{
    char t[48], u[48], mine[NAME_LEN + 48], other[NAME_LEN + 48];
    tags_suffix(&cases[i], t, sizeof t);
    snprintf(mine, sizeof mine, "%s_%s%s", cases[i].bwd ? "bwd" : "fwd", attnops_dtype_name(cases[i].s.dtype), t);
    int k;
    for (k = 0; k < n; k++) {
        if (k == i) continue;
        tags_suffix(&cases[k], u, sizeof u);
        snprintf(other, sizeof other, "%s_%s%s", cases[k].bwd ? "bwd" : "fwd", attnops_dtype_name(cases[k].s.dtype), u);
        if (!strcmp(mine, other)) break;
    }
    const char *src = k < n ? cases[i].name : mine;
    size_t m = strlen(src) < len ? strlen(src) : len - 1;
    memcpy(out, src, m);
    out[m] = 0;
}

/* ------------------------------------------------------------------------ */
/* modes                                                                     */
/* ------------------------------------------------------------------------ */
static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_fa [--threads N] [--reps R] [--json PATH] [--quick] [--ref] [--case SPEC]...\n"
            "       bench_fa --list-cases [--quick] [--json PATH] [--case SPEC]...\n"
            "       bench_fa --rss SPEC [--threads N] [--json PATH] [--quick]\n"
            "  SPEC: [NAME:]FIELDS,dir=fwd|bwd[,peer=no][,det=1][,varlen=K|,varlen_dense=K]\n"
            "  FIELDS: the case descriptor's key=value form (verify/fa_case_shape.h), e.g.\n"
            "         B=1,N1=8,N2=8,S1=4096,S2=4096,D=128,Dv=128,dtype=bf16,layout=BNSD\n"
            "  masks: mode=1,mask=ss (explicit [S1,S2] bool mask, j > i masked) | mode=2|3,mask=compressed\n"
            "         | mode=4,mask=compressed,pre=H,next=H (a band of width 2H)\n"
            "  pse:   pse=slopes_n,pse_type=2 (ALiBi, f32 slopes [N1]) | pse=bnss,pse_type=1 ([B,N1,S1,S2])\n"
            "  keep=P[,seed=S,offset=O]: dropout (ratio_vs_no_dropout); det=1: deterministic (ratio_vs_default)\n"
            "  dtype=f8_e4m3fn|f8_e5m2,out=bf16|f16: FP8 backward (ratio_vs_bf16)\n"
            "  softcap=C: soft-capped scores (ratio_vs_no_softcap)\n"
            "  layout=TND with varlen=K: B=1, S1=S2=T, K <= 32 sequences, lengths uniform in [128,896)\n"
            "         (fixed seed) scaled to sum to T; or seqs=L0:L1:... given; FLOPs sum_i 2*N1*L_i^2*(D+Dv)\n"
            "  varlen_dense=K: S1=S2=T, runs one dense sequence of L_eq = round(sqrt(sum L_i^2)) of\n"
            "         varlen=K at that T; a plain varlen case gets ratio_vs_dense_rate = its GFLOP/s / this one's\n"
            "  peer=no: bench/peer_torch.py skips the case\n"
            "  no NAME gets a canonical name such as fwd_f32_B1_N8_S4096_D128\n"
            "  (masks and pse append _causal2, _band1024, _mask1, _alibi2, _bnss)\n"
            "  ratios: a masked case against the same case unmasked (ratio_vs_dense; bands also\n"
            "  ratio_vs_proportional = time / (dense time * unmasked fraction)); a pse case against\n"
            "  the same case without pse (ratio_vs_plain); per round, then the median\n"
            "  --threads   OpenMP threads for the GEMM peak and the kernels (default: OMP_NUM_THREADS)\n"
            "  --reps      rounds; each round runs both peaks and every case once (default 5)\n"
            "  --quick     divide S1, S2 (T), pre and next by 8 (smoke runs)\n"
            "  --ref       also time impl REFERENCE on every case (slow: tiny shapes only)\n"
            "  --gemm-seconds T   duration of one peak measurement (default 0.2)\n"
            "  --no-peak   skip the GEMM peak (percentages are then not reported)\n");
}

static void rss_mode(const char *spec, int quick, int threads, const char *json_path)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long base_kib = ru.ru_maxrss;
    bench_case c;
    parse_case(spec, quick, &c);
    case_data d;
    case_setup(&d, &c, threads, 1);
    double ms = case_run(&d, ATTNOPS_IMPL_CPU);
    getrusage(RUSAGE_SELF, &ru);
    const double mib = 1024.0 * 1024.0;
    double rss = (double)ru.ru_maxrss * 1024.0;
    double io = (double)(d.in_bytes + d.out_bytes);
    double over = rss - io;
    printf("rss %s threads=%d\n", c.name, threads);
    printf("  inputs     %10.2f MiB\n", d.in_bytes / mib);
    printf("  outputs    %10.2f MiB\n", d.out_bytes / mib);
    printf("  workspace  %10.2f MiB\n", d.ws_bytes / mib);
    printf("  rss before %10.2f MiB (process baseline before any tensor)\n", base_kib * 1024.0 / mib);
    printf("  peak rss   %10.2f MiB\n", rss / mib);
    printf("  rss - (inputs+outputs) = %.2f MiB (budget 64 MiB)\n", over / mib);
    printf("  run time   %10.1f ms\n", ms);
    json_out j;
    json_open(&j, json_path);
    json_numf(&j, rss, "%s_rss_bytes", c.name, "");
    json_numf(&j, (double)d.in_bytes, "%s_input_bytes", c.name, "");
    json_numf(&j, (double)d.out_bytes, "%s_output_bytes", c.name, "");
    json_numf(&j, (double)d.ws_bytes, "%s_workspace_bytes", c.name, "");
    json_numf(&j, base_kib * 1024.0, "%s_baseline_rss_bytes", c.name, "");
    json_numf(&j, over, "%s_rss_over_io_bytes", c.name, "");
    json_numf(&j, over / mib, "%s_rss_over_io_mib", c.name, "");
    json_numf(&j, ms, "%s_ms", c.name, "");
    json_num(&j, "threads", threads);
    json_close(&j);
    case_free(&d);
}

/* ------------------------------------------------------------------------ */
/* the timed run: options, peaks, rounds, report                             */
/* ------------------------------------------------------------------------ */
typedef struct options {
    int threads, reps, quick, with_ref, list, no_peak;
    double gemm_seconds;
    const char *json_path, *rss_spec;
    const char *specs[MAX_CASES];
    int nspecs;
} options;

/* The command line into o.  --help prints the usage and exits 0; anything
 * unknown or out of range exits 2. */
static void parse_options(int argc, char **argv, options *o)
{
    *o = (options){.threads = omp_get_max_threads(), .reps = 5, .gemm_seconds = 0.2};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--threads") && val) o->threads = atoi(val), i++;
        else if (!strcmp(a, "--reps") && val) o->reps = atoi(val), i++;
        else if (!strcmp(a, "--json") && val) o->json_path = val, i++;
        else if (!strcmp(a, "--case") && val) {
            if (o->nspecs == MAX_CASES) die("at most %s cases", "64");
            o->specs[o->nspecs++] = val, i++;
        } else if (!strcmp(a, "--rss") && val) o->rss_spec = val, i++;
        else if (!strcmp(a, "--gemm-seconds") && val) o->gemm_seconds = atof(val), i++;
        else if (!strcmp(a, "--quick")) o->quick = 1;
        else if (!strcmp(a, "--ref")) o->with_ref = 1;
        else if (!strcmp(a, "--no-peak")) o->no_peak = 1;
        else if (!strcmp(a, "--list-cases")) o->list = 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else {
            usage(stderr);
            die("unknown or incomplete argument '%s'", a);
        }
    }
    if (o->threads < 1) die("--threads must be >= 1 (got %s)", "< 1");
    if (o->reps < 1 || o->reps > 256) die("--reps must be 1..256%s", "");
    if (!(o->gemm_seconds > 0)) die("--gemm-seconds must be positive%s", "");
}

/* The case list: the --case specs, else the built-in one; --quick divides S
 * by 8.  Two cases of one name are refused. */
static int load_cases(const options *o, bench_case *cases)
{
    const int n = o->nspecs ? o->nspecs : (int)(sizeof default_cases / sizeof default_cases[0]);
    for (int i = 0; i < n; i++) parse_case(o->nspecs ? o->specs[i] : default_cases[i], o->quick, &cases[i]);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(cases[i].name, cases[j].name)) die("two cases are named %s", cases[i].name);
    return n;
}

/* --list-cases: the resolved specs, one a line, and with --json the descriptors. */
static void list_cases(const bench_case *cases, int n, const char *json_path)
{
    for (int i = 0; i < n; i++) {
        char spec[1024];
        case_spec(&cases[i], spec, sizeof spec);
        puts(spec);
    }
    if (json_path) write_case_list_json(json_path, cases, n);
}

/* The machine's limits, measured in the same run: the FMA ceiling of the ISA
 * in use, and the two tile-GEMM peaks (0: fp32, 1: bf16) sampled once a round. */
typedef struct peaks {
    double ceiling; /* GFLOP/s; NaN with --no-peak */
    gemm_bench gb[2];
    int have[2];
    double gflops[2][256]; /* [peak][round] */
} peaks;

static const char *const peak_name[2] = {"f32", "bf16"};

/* The ceiling, then the GEMMs JIT-ed, checked and calibrated (libxsmm set up
 * by the library first, so a forced ATTNOPS_ISA targets the probe too). */
static void peaks_setup(peaks *p, const options *o)
{
    p->ceiling = o->no_peak ? NAN : fma_ceiling_gflops(o->threads, 5);
    (void)attnops_gemm_backend(ATTNOPS_DTYPE_F32);
    p->have[0] = p->have[1] = 0;
    if (o->no_peak) return;
    libxsmm_init();
    for (int b = 0; b < 2; b++) {
        if (gemm_setup(&p->gb[b], b, o->threads) != 0) {
            fprintf(stderr, "bench_fa: libxsmm could not JIT the %s 64x64x128 GEMM on this CPU; no %s peak\n",
                    b ? "bf16" : "fp32", b ? "bf16" : "fp32");
            continue;
        }
        if (gemm_check(&p->gb[b]) != 0)
            fprintf(stderr, "bench_fa: WARNING: the %s tile GEMM computed a wrong product\n", b ? "bf16" : "fp32");
        gemm_calibrate(&p->gb[b], o->gemm_seconds);
        p->have[b] = 1;
    }
}

static void peaks_sample(peaks *p, int round, int threads)
{
    for (int b = 0; b < 2; b++)
        if (p->have[b]) {
            double t = gemm_run(&p->gb[b], p->gb[b].iters);
            p->gflops[b][round] = GEMM_FLOP * (double)p->gb[b].iters * threads / t * 1e-9;
        }
}

static void peaks_free(peaks *p)
{
    for (int b = 0; b < 2; b++)
        if (p->have[b]) gemm_free(&p->gb[b]);
}

/* One line per varlen case: the drawn lengths' spread and L_eq. */
static void print_varlen_draws(const bench_case *cases, int n)
{
    for (int i = 0; i < n; i++)
        if (varlen_of(&cases[i])) {
            const int64_t K = varlen_of(&cases[i]);
            int64_t lo, hi;
            double ss = sum_sq(cases[i].s.seq_q, K, &lo, &hi);
            printf("varlen %s: K=%lld sequences, T=%lld, lengths %lld..%lld, sum L^2 = %.0f, L_eq = %lld\n",
                   cases[i].name, (long long)K, (long long)cases[i].T, (long long)lo, (long long)hi, ss,
                   (long long)llround(sqrt(ss)));
        }
    fflush(stdout);
}

/* Every case allocated, filled and warmed up once (its outputs checked). */
static case_data *setup_cases(const bench_case *cases, int n, int threads)
{
    case_data *cd = calloc((size_t)n, sizeof *cd);
    if (!cd) die("out of memory%s", "");
    for (int i = 0; i < n; i++) {
        case_setup(&cd[i], &cases[i], threads, 0);
        case_run(&cd[i], ATTNOPS_IMPL_CPU);
        case_sanity(&cd[i]);
    }
    return cd;
}

/* R rounds, each the two peaks and then every case once: peaks and kernels alternate. */
static void run_rounds(peaks *p, case_data *cd, int n, const options *o)
{
    for (int r = 0; r < o->reps; r++) {
        peaks_sample(p, r, o->threads);
        for (int i = 0; i < n; i++) {
            cd[i].ms[cd[i].nrep++] = case_run(&cd[i], ATTNOPS_IMPL_CPU);
            if (o->with_ref) cd[i].ref_ms[cd[i].nref++] = case_run(&cd[i], ATTNOPS_IMPL_REFERENCE);
        }
        fprintf(stderr, "bench_fa: round %d/%d done\n", r + 1, o->reps);
    }
}

/* The peaks' medians into peak[] (NaN where not measured) and their lines. */
static void report_peaks(json_out *j, const peaks *p, int threads, int reps, double peak[2])
{
    printf("\n%-34s %12s %12s\n", "tile GEMM 64x64x128 (libxsmm)", "GFLOP/s", "min..max");
    for (int b = 0; b < 2; b++) {
        peak[b] = NAN;
        if (!p->have[b]) continue;
        peak[b] = median(p->gflops[b], reps);
        double lo = vmin(p->gflops[b], reps), hi = vmax(p->gflops[b], reps);
        char label[64];
        snprintf(label, sizeof label, "peak %s (%d threads)", b ? "bf16 VNNI-A -> f32" : "f32", threads);
        printf("%-34s %12.1f %6.0f..%.0f\n", label, peak[b], lo, hi);
        json_numf(j, peak[b], "gemm_peak_%s_gflops", peak_name[b], "");
        json_numf(j, peak[b] / threads, "gemm_peak_%s_gflops_per_thread", peak_name[b], "");
    }
    if (isfinite(p->ceiling)) {
        char label[64];
        snprintf(label, sizeof label, "FMA ceiling %s (%d threads)", attnops_cpu_isa(), threads);
        printf("%-34s %12.1f   register-only loop, median of 5\n", label, p->ceiling);
        json_num(j, "fma_ceiling_gflops", p->ceiling);
    }
}

/* The varlen draws of a case, as JSON. */
static void json_varlen(json_out *j, const bench_case *c)
{
    int64_t lo, hi;
    double ss = sum_sq(c->s.seq_q, varlen_of(c), &lo, &hi);
    json_numf(j, (double)varlen_of(c), "%s_varlen_sequences", c->name, "");
    json_numf(j, (double)lo, "%s_varlen_len_min", c->name, "");
    json_numf(j, (double)hi, "%s_varlen_len_max", c->name, "");
    json_numf(j, ss, "%s_varlen_sum_len_sq", c->name, "");
}

/* One case's line (and its reference's with --ref), and its JSON keys. */
static void report_case(json_out *j, const case_data *d, const double peak[2], double ceiling, int with_ref)
{
    const char *name = d->c.name;
    double ms = median(d->ms, d->nrep);
    double gf = d->flop / (ms * 1e-3) * 1e-9;
    int pk = d->c.s.dtype == ATTNOPS_DTYPE_BF16 || is_fp8(d->c.s.dtype); /* FP8 runs bf16 GEMMs */
    double pct = 100.0 * gf / peak[pk];
    printf("%-44s %10.2f %10.2f %10.1f %9.1f %10s %9.1f\n", name, ms, vmin(d->ms, d->nrep), gf, pct, peak_name[pk],
           100.0 * gf / ceiling);
    if (isfinite(ceiling)) json_numf(j, 100.0 * gf / ceiling, "%s_pct_ceiling", name, "");
    json_numf(j, ms, "%s_ms_median", name, "");
    json_numf(j, vmin(d->ms, d->nrep), "%s_ms_min", name, "");
    json_numf(j, gf, "%s_gflops", name, "");
    json_numf(j, d->flop * 1e-9, "%s_gflop", name, "");
    if (isfinite(pct)) json_numf(j, pct, "%s_pct_peak", name, "");
    json_numf(j, (double)d->ws_bytes, "%s_workspace_bytes", name, "");
    if (mask_kind(&d->c)) json_numf(j, unmasked_fraction(&d->c), "%s_unmasked_fraction", name, "");
    if (varlen_of(&d->c)) json_varlen(j, &d->c);
    if (with_ref) {
        double rms = median(d->ref_ms, d->nref);
        char label[NAME_LEN + 8];
        snprintf(label, sizeof label, "%s (ref)", name);
        printf("%-44s %10.2f %10.2f %10.1f %9s %10s\n", label, rms, vmin(d->ref_ms, d->nref),
               d->flop / (rms * 1e-3) * 1e-9, "", "");
        json_numf(j, rms, "%s_ref_ms_median", name, "");
        json_numf(j, d->flop / (rms * 1e-3) * 1e-9, "%s_ref_gflops", name, "");
    }
}

/* One ratio: its JSON key <label>_<kind> and its line. */
static void ratio_line(json_out *j, const char *label, const char *kind, double value, double frac, const char *base)
{
    char key[NAME_LEN + 96];
    snprintf(key, sizeof key, "%s_%s", label, kind);
    json_num(j, key, value);
    printf("%-30s %-24s %10.3f %10.4f %s\n", label, kind, value, frac, base);
}

/* The rounds both cases ran. */
static int rounds_of(const case_data *d, const case_data *e) { return d->nrep < e->nrep ? d->nrep : e->nrep; }

/* varlen GFLOP/s / dense GFLOP/s of the same total work, per round. */
static void ratio_dense_rate(json_out *j, const char *label, const case_data *d, const case_data *e)
{
    double rr[256];
    int n = rounds_of(d, e);
    for (int r = 0; r < n; r++) rr[r] = (d->flop / d->ms[r]) / (e->flop / e->ms[r]);
    ratio_line(j, label, "ratio_vs_dense_rate", median(rr, n), 1.0, e->c.name);
}

/* time / time of the same case without the variant's feature, per round. */
static void ratio_variant(json_out *j, const char *label, const char *kind, const case_data *d, const case_data *e)
{
    double rr[256];
    int n = rounds_of(d, e);
    for (int r = 0; r < n; r++) rr[r] = d->ms[r] / e->ms[r];
    ratio_line(j, label, kind, median(rr, n), 1.0, e->c.name);
}

/* A masked case against its dense base (a band also against the base scaled
 * by the unmasked fraction), a pse case against the plain one, per round. */
static void ratio_mask_pse(json_out *j, const char *label, const case_data *d, const case_data *e)
{
    const double frac = unmasked_fraction(&d->c);
    double r_base[256], r_prop[256];
    int n = rounds_of(d, e);
    for (int r = 0; r < n; r++) {
        r_base[r] = d->ms[r] / e->ms[r];
        r_prop[r] = r_base[r] / frac;
    }
    ratio_line(j, label, pse_kind(&d->c) ? "ratio_vs_plain" : "ratio_vs_dense", median(r_base, n), frac, e->c.name);
    if (mask_kind(&d->c) == MASK_BAND && !pse_kind(&d->c))
        ratio_line(j, label, "ratio_vs_proportional", median(r_prop, n), frac, e->c.name);
}

/* The ratios between cases (dense_of, variant_base, base_of), each taken
 * within a round, then the median. */
static void report_ratios(json_out *j, const bench_case *cases, const case_data *cd, int n)
{
    int header = 0;
    for (int i = 0; i < n; i++) {
        const char *vkind = NULL;
        int b = base_of(cases, n, i), vd = dense_of(cases, n, i), vb = variant_base(cases, n, i, &vkind);
        if (b < 0 && vd < 0 && vb < 0) continue;
        if (!header) {
            printf("\n%-30s %-24s %10s %10s %s\n", "ratio", "kind", "median", "unmasked", "base case");
            header = 1;
        }
        char label[NAME_LEN + 48];
        ratio_label(cases, n, i, label, sizeof label);
        if (vd >= 0) ratio_dense_rate(j, label, &cd[i], &cd[vd]);
        else if (vb >= 0) ratio_variant(j, label, vkind, &cd[i], &cd[vb]);
        else ratio_mask_pse(j, label, &cd[i], &cd[b]);
    }
}

/* The tables on stdout and, with --json, the same numbers as JSON keys. */
static void report(const options *o, const peaks *p, const bench_case *cases, const case_data *cd, int n)
{
    json_out j;
    json_open(&j, o->json_path);
    json_num(&j, "threads", o->threads);
    json_num(&j, "reps", o->reps);
    json_num(&j, "quick", o->quick);
    json_machine(&j);
    json_str(&j, "attnops_version", attnops_version());
    double peak[2];
    report_peaks(&j, p, o->threads, o->reps, peak);
    printf("\n%-44s %10s %10s %10s %9s %10s %9s\n", "case (dense-equivalent FLOPs)", "ms median", "ms min", "GFLOP/s",
           "% peak", "peak", "% ceiling");
    for (int i = 0; i < n; i++) report_case(&j, &cd[i], peak, p->ceiling, o->with_ref);
    report_ratios(&j, cases, cd, n);
    json_close(&j);
    if (o->json_path) printf("\nwrote %s\n", o->json_path);
}

int main(int argc, char **argv)
{
    options o;
    parse_options(argc, argv, &o);
    omp_set_num_threads(o.threads);
    if (o.rss_spec) {
        rss_mode(o.rss_spec, o.quick, o.threads, o.json_path);
        return 0;
    }
    bench_case cases[MAX_CASES];
    const int ncases = load_cases(&o, cases);
    if (o.list) {
        list_cases(cases, ncases, o.json_path);
        return 0;
    }

    print_machine("bench_fa");
    printf("bench_fa: libxsmm %s, %d threads, %d rounds%s\n", LIBXSMM_VERSION, o.threads, o.reps,
           o.quick ? ", quick (S/8)" : "");
    fflush(stdout);
    peaks p;
    peaks_setup(&p, &o);
    print_varlen_draws(cases, ncases);
    case_data *cd = setup_cases(cases, ncases, o.threads);
    run_rounds(&p, cd, ncases, &o);
    report(&o, &p, cases, cd, ncases);

    for (int i = 0; i < ncases; i++) case_free(&cd[i]);
    free(cd);
    peaks_free(&p);
    return 0;
}
