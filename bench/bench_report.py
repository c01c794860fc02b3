#!/usr/bin/env python3
"""The merge and report step of `make bench` (bench/run.sh calls it last).

    bench_report.py --out DIR --cases DIR/cases.json [--threads N] [--quick] [--git REV] [--cpu MODEL]
                    [--update-docs docs/PERFORMANCE.md]

It reads what the round programs wrote under DIR:
- rounds/attnops.R.json and rounds/torch.R.json (bench_fa, peer_torch.py);
- rounds/kp_*.R.json (KeyPool), rounds/ar_*.R.json (AttnRes) and rounds/fia_*.R.json
  (FusedInferAttentionScore);
- rss_*.json, and python.json / cp.json / transformers.json with their .md tables.

The case descriptors come from `bench_fa --list-cases --json`. bench_fa holds the one case parser;
nothing here parses a case spec.

It writes DIR/results.json and DIR/results.md:
- medians over rounds;
- ratios taken within each round (side by side), then their median;
- the ratios between cases (bench_fa.c's base_of / variant_base / dense_of rules).

With --update-docs it also replaces the table between the BENCH-RESULTS markers of that file. It
judges nothing: targets are quoted as text.

Only the standard library is used.
"""
import argparse
import datetime
import glob
import json
import os
import re
import statistics

MiB = 1024.0 * 1024.0
RSS_BUDGET_MIB = 64
SHAPE_KEYS = ("B", "N1", "N2", "S1", "S2", "D", "Dv")


# ---- rounds -------------------------------------------------------------------------------------
def load_rounds(out_dir, pattern):
    """The JSON objects of out_dir/pattern, in round order (the number before .json)."""
    paths = glob.glob(os.path.join(out_dir, pattern))
    rounds = []
    for p in sorted(paths, key=lambda p: int(re.findall(r"\.(\d+)\.json$", p)[0])):
        with open(p) as f:
            rounds.append(json.load(f))
    return rounds


def numbers(rounds, key):
    return [r[key] for r in rounds if isinstance(r.get(key), (int, float))]


def med(rounds, key):
    vals = numbers(rounds, key)
    return statistics.median(vals) if vals else None


def lo(rounds, key):
    vals = numbers(rounds, key)
    return min(vals) if vals else None


def median_of(values):
    return statistics.median(values) if values else None


def fmt(x, spec):
    return "–" if x is None else format(x, spec)


def times(sp):
    """A speedup as '1.23×' ('–' when missing)."""
    return fmt(sp, ".2f") + ("×" if sp else "")


# ---- the cases ----------------------------------------------------------------------------------
def read_cases(path, attnops_rounds):
    """bench_fa's descriptors, with each case's GFLOP (as bench_fa counted them, else the dense count)
    and its name tags (_varlen32, _causal2, _keep90, _det ...)."""
    with open(path) as f:
        cases = json.load(f)
    for c in cases:
        n = c["name"]
        gfs = numbers(attnops_rounds, f"{n}_gflop")
        if gfs:
            c["gflop"] = gfs[0]
        else:
            fl = 2.0 * c["B"] * c["N1"] * c["S1"] * c["S2"] * (c["D"] + c["Dv"])
            c["gflop"] = (2.5 * fl if c["dir"] == "bwd" else fl) * 1e-9
        vtag = (f"_varlen{c['varlen']}" if c["varlen"] else
                f"_varlen{c['varlen_dense']}dense" if c["varlen_dense"] else "")
        c["tags"] = (vtag + "".join(f"_{c[k]}" for k in ("mask", "pse") if c[k] != "none")
                     + (f"_keep{round(c['keep'] * 100)}" if c["keep"] else "") + ("_det" if c["det"] else "")
                     + (f"_softcap{round(c['softcap'])}" if c.get("softcap") else ""))
    return cases


def band_width(c):
    """A mode-4 band's total width pre + next (the descriptor's fields)."""
    return c["pre"] + c["next"] if c["sparse_mode"] == 4 else None


def same_shape(a, b):
    return all(a[k] == b[k] for k in SHAPE_KEYS + ("dtype", "layout", "dir", "varlen", "varlen_dense"))


def is_variant(c):
    return bool(c["keep"] or c["det"] or c["dtype"].startswith("f8") or c.get("softcap"))


def dense_of(c, cases):
    """A plain varlen=K case against its varlen_dense=K case (same T, heads, head dims, dtype,
    direction; bench_fa.c dense_of).  None when absent."""
    if not c["varlen"] or c["mask"] != "none" or c["pse"] != "none":
        return None
    for b in cases:
        if (b["varlen_dense"] == c["varlen"] and b["S1"] == c["S1"] and b["mask"] == "none" and b["pse"] == "none"
                and all(b[k] == c[k] for k in ("N1", "N2", "D", "Dv", "dtype", "dir"))):
            return b
    return None


def base_of(c, cases):
    """A pse case against the same case without pse (mask kept); a masked case against the same case
    without mask.  None when there is no such case."""
    if (c["mask"] == "none" and c["pse"] == "none") or is_variant(c):
        return None
    for b in cases:
        if b is c or not same_shape(c, b) or b["pse"] != "none" or is_variant(b):
            continue
        if (b["mask"] == c["mask"]) if c["pse"] != "none" else (b["mask"] == "none"):
            return b
    return None


def variant_base(c, cases):
    """A keep=P, det=1, FP8 or softcap case against the same case without that one feature (FP8 against
    bf16), as bench_fa.c variant_base: (case, kind) or (None, None)."""
    if not is_variant(c):
        return None, None
    for b in cases:
        if b is c or b["mask"] != c["mask"] or b["pse"] != c["pse"]:
            continue
        if not all(b[k] == c[k] for k in SHAPE_KEYS + ("layout", "dir", "varlen", "varlen_dense")):
            continue
        if c.get("softcap"):
            if not b.get("softcap") and b["keep"] == c["keep"] and b["det"] == c["det"] and b["dtype"] == c["dtype"]:
                return b, "ratio_vs_no_softcap"
            continue
        if b.get("softcap"):
            continue
        if c["keep"] and not b["keep"] and b["det"] == c["det"] and b["dtype"] == c["dtype"]:
            return b, "ratio_vs_no_dropout"
        if not c["keep"] and c["det"] and not b["det"] and not b["keep"] and b["dtype"] == c["dtype"]:
            return b, "ratio_vs_default"
        if (not c["keep"] and not c["det"] and c["dtype"].startswith("f8") and b["dtype"] == "bf16"
                and not b["keep"] and not b["det"]):
            return b, "ratio_vs_bf16"
    return None, None


def label(c, cases):
    """bwd_f32_causal2 when unique in the list, else the case name."""
    def short(x):
        return f"{x['dir']}_{x['dtype']}{x['tags']}"
    return short(c) if sum(short(o) == short(c) for o in cases) == 1 else c["name"]


# ---- targets, quoted (docs/PERFORMANCE.md) --------------------------------------------------------
def target(c):
    """The case's throughput target, as text."""
    if c["layout"] != "BNSD" or c["D"] != 128 or c["Dv"] != 128 or c["N1"] != c["N2"] or c["tags"]:
        return ""
    big = c["B"] * c["N1"] == 1 and c["S1"] == c["S2"] == 8192
    std = c["B"] == 1 and c["N1"] == 8 and c["S1"] == c["S2"] == 4096
    if not (big or std):
        return ""
    if c["dir"] == "fwd":
        return "≥ 70 % of f32 peak" if c["dtype"] == "f32" and std else ""
    if c["dtype"] not in ("f32", "bf16"):
        return ""
    pct = "≥ 60 % of f32 peak" if c["dtype"] == "f32" else "≥ 45 % of bf16 peak"
    return f"{pct}; ≥ {'1.8' if big else '1.5'}× torch"


def ratio_target(c, kind):
    """The ratio targets, as text, at the target shapes only."""
    if kind == "ratio_vs_dense_rate":
        return "≥ 0.8" if (c["varlen"] == 32 and c["S1"] == 16384 and c["D"] == c["Dv"] == 128
                           and c["N1"] == c["N2"]) else ""
    if kind == "ratio_vs_no_dropout":
        return "≤ 1.25" if c["keep"] == 0.9 and c["dir"] == "bwd" else ""
    if kind == "ratio_vs_default":
        return "≤ 1.10" if c["dir"] == "bwd" else ""
    if kind == "ratio_vs_bf16":
        return "reported (time ratio)"
    if kind == "ratio_vs_no_softcap":
        return "≤ 1.15" if c["dtype"] in ("f32", "bf16") else ""
    if kind == "speedup_vs_torch" and c["keep"]:
        return "≥ 2× (torch's unfused dropout path)"
    if (c["layout"] != "BNSD" or c["D"] != 128 or c["Dv"] != 128 or c["N1"] != c["N2"] or c["B"] != 1
            or c["S1"] != 4096 or c["S2"] != 4096):
        return ""
    band_w = band_width(c)
    if c["pse"] == "none" and c["N1"] == 8 and c["dir"] == "bwd":
        if kind == "ratio_vs_dense" and c["mask"] in ("causal2", "causal3"):
            return "≤ 0.55"
        if kind == "ratio_vs_proportional" and band_w in (512, 1024, 2048):
            return "≤ 1.2"
        if kind == "speedup_vs_torch" and (c["mask"] in ("causal2", "causal3") or band_w == 1024):
            return "≥ 1.5×"
    if kind == "ratio_vs_plain" and c["pse"] in ("alibi2", "bnss") and c["mask"] == "none" and c["N1"] == 2:
        return "≤ 1.15"
    return ""


def torch_call(c):
    if c["keep"] and c["mask"] == "none":
        return f"SDPA dropout_p={1 - c['keep']:g}"
    if c["mask"] == "causal2" or (c["mask"] == "causal3" and c["S1"] == c["S2"]):
        return "SDPA is_causal=True"
    return "SDPA boolean attn_mask (~mask)"


# ---- FlashAttention ------------------------------------------------------------------------------
def per_round(A, num, den):
    """num(a) / den(a) for every round a where both are there (den may be another program's round)."""
    return [n / d for n, d in ((num(a), den(a)) for a in A) if n and d]


def fa_case_rows(cases, A, T, res):
    """One table row per case; its numbers into res."""
    rows = []
    for c in cases:
        n = c["name"]
        ms = med(A, f"{n}_ms_median")
        pk = "bf16" if c["dtype"] in ("bf16", "f8_e4m3fn", "f8_e5m2") else "f32"  # FP8 runs bf16 GEMMs
        gf = c["gflop"] / (ms * 1e-3) if ms else None
        # % of peak against that round's peak, speedup against that round's torch
        pct = median_of(numbers(A, f"{n}_pct_peak"))
        tms = med(T, f"torch_{n}_ms_median")
        tgf = c["gflop"] / (tms * 1e-3) if tms else None
        sp = median_of([t[f"torch_{n}_ms_median"] / a[f"{n}_ms_median"] for a, t in zip(A, T)
                        if t.get(f"torch_{n}_ms_median") and a.get(f"{n}_ms_median")])
        res[f"{n}_gflop"] = c["gflop"]
        for key, v in ((f"{n}_ms_median", ms), (f"{n}_ms_min", lo(A, f"{n}_ms_min")), (f"{n}_gflops", gf),
                       (f"{n}_pct_peak", pct),
                       (f"{n}_workspace_bytes", A[0].get(f"{n}_workspace_bytes") if A else None),
                       (f"torch_{n}_ms_median", tms), (f"torch_{n}_ms_min", lo(T, f"torch_{n}_ms_min")),
                       (f"torch_{n}_gflops", tgf), (f"{n}_speedup_vs_torch", sp)):
            if v is not None:
                res[key] = v
        rows.append(f"| `{n}` | {fmt(ms, '.2f')} | {fmt(gf, '.1f')} | {fmt(pct, '.1f')} ({pk}) | {fmt(tms, '.2f')} "
                    f"| {fmt(tgf, '.1f')} | {times(sp)} | {target(c)} |")
    return rows


def fa_ratio_rows(cases, A, res):
    """The ratios between cases, one table row each (merge_dtypes); their numbers into res."""
    rows = []
    for c in cases:
        n, lab, b = c["name"], label(c, cases), base_of(c, cases)
        vd = dense_of(c, cases)
        if vd is not None:
            # varlen GFLOP/s / dense GFLOP/s
            dn = vd["name"]
            v = median_of([(a[f"{n}_gflop"] / a[f"{n}_ms_median"]) / (a[f"{dn}_gflop"] / a[f"{dn}_ms_median"])
                           for a in A if a.get(f"{n}_ms_median") and a.get(f"{dn}_ms_median")
                           and a.get(f"{n}_gflop") and a.get(f"{dn}_gflop")])
            if v is not None:
                res[f"{lab}_ratio_vs_dense_rate"] = v
            rows.append((c["dtype"], f"{lab}_ratio_vs_dense_rate", fmt(v, '.3f'),
                         f"GFLOP/s / GFLOP/s of `{dn}` (one sequence of the same Σ L², {c['varlen']} sequences "
                         f"in T = {c['S1']})", ratio_target(c, 'ratio_vs_dense_rate')))
        vb, vkind = variant_base(c, cases)
        if vb is not None:
            v = median_of(per_round(A, lambda a: a.get(f"{n}_ms_median"), lambda a: a.get(f"{vb['name']}_ms_median")))
            if v is not None:
                res[f"{lab}_{vkind}"] = v
            rows.append((c["dtype"], f"{lab}_{vkind}", fmt(v, '.3f'), f"time / time of `{vb['name']}`",
                         ratio_target(c, vkind)))
        fracs = numbers(A, f"{n}_unmasked_fraction")
        frac = fracs[0] if fracs else 1.0
        if c["mask"] != "none":
            res[f"{n}_unmasked_fraction"] = frac
        kinds = []
        if b is not None:
            kinds.append("ratio_vs_plain" if c["pse"] != "none" else "ratio_vs_dense")
            if c["pse"] == "none" and c["mask"].startswith("band"):
                kinds.append("ratio_vs_proportional")
        for kind in kinds:
            rs = per_round(A, lambda a: a.get(f"{n}_ms_median"), lambda a: a.get(f"{b['name']}_ms_median"))
            if kind == "ratio_vs_proportional":
                rs = [r / frac for r in rs]
            v = median_of(rs)
            if v is not None:
                res[f"{lab}_{kind}"] = v
            what = {"ratio_vs_dense": f"time / time of `{b['name']}`",
                    "ratio_vs_plain": f"time / time of `{b['name']}`",
                    "ratio_vs_proportional": f"time / (time of `{b['name']}` × {frac:.4f} unmasked)"}[kind]
            if kind != "ratio_vs_dense" or not c["mask"].startswith("band"):  # bands: the proportional row
                rows.append((c["dtype"], f"{lab}_{kind}", fmt(v, '.3f'), what, ratio_target(c, kind)))
        sp = res.get(f"{n}_speedup_vs_torch")
        if c["tags"] and sp is not None:
            res[f"{lab}_speedup_vs_torch"] = sp
            rows.append((c["dtype"], f"{lab}_speedup_vs_torch", f"{sp:.2f}×", f"torch ms / attnops ms, {torch_call(c)}",
                         ratio_target(c, "speedup_vs_torch")))
    return merge_dtypes(rows)


DTYPE_SLOT = "<dtype>"


def dtype_slot(text, dtype):
    """text with the dtype of every case name or label in it (`bwd_bf16_...`) replaced by DTYPE_SLOT."""
    return re.sub(rf"\b(fwd|bwd)_{re.escape(dtype)}_", rf"\g<1>_{DTYPE_SLOT}_", text)


def merge_dtypes(rows):
    """The ratio rows (dtype, label, median, definition, target) as table lines, where rows that differ only in
    their dtype become one: `bwd_{f32,bf16}_causal2_ratio_vs_dense` with the medians in that order."""
    groups = {}
    for dtype, lab, value, what, goal in rows:
        groups.setdefault((dtype_slot(lab, dtype), dtype_slot(what, dtype), goal), []).append((dtype, lab, value, what))
    lines = []
    for (lab, what, goal), members in groups.items():
        if len(members) == 1:
            lab, what = members[0][1], members[0][3]
        else:
            dtypes = "{" + ",".join(m[0] for m in members) + "}"
            lab, what = lab.replace(DTYPE_SLOT, dtypes), what.replace(DTYPE_SLOT, dtypes)
        lines.append(f"| `{lab}` | {', '.join(m[2] for m in members)} | {what} | {goal} |")
    return lines


# ---- KeyPool, AttnRes, peak RSS, the Python programs ------------------------------------------------
def keypool_rows(KA, KT, res):
    rows = []
    for case, what in (("prefill", "B=1, S=4096 (512 quick), H=4096, D=128, R=4, bf16, LayerNorm"),
                       ("decode", "B=32, one token each after a history of 4096")):
        ms, tms = med(KA, f"kp_{case}_ms_median"), med(KT, f"torch_kp_{case}_ms_median")
        sp = median_of([t[f"torch_kp_{case}_ms_median"] / a[f"kp_{case}_ms_median"] for a, t in zip(KA, KT)
                        if t.get(f"torch_kp_{case}_ms_median") and a.get(f"kp_{case}_ms_median")])
        for key, v in ((f"keypool_{case}_ms_median", ms), (f"keypool_{case}_ms_min", lo(KA, f"kp_{case}_ms_min")),
                       (f"torch_keypool_{case}_ms_median", tms), (f"keypool_{case}_speedup_vs_torch", sp)):
            if v is not None:
                res[key] = v
        if case == "prefill":
            pct = med(KA, "kp_prefill_pct_peak")
            res["keypool_prefill_pct_bf16_peak"] = pct
            measure, goal = f"{fmt(pct, '.1f')} % of the bf16 peak", "≥ 60 % of the bf16 peak"
        else:
            bw, calls = med(KA, "kp_decode_pct_copy_bw"), med(KA, "kp_decode_calls_per_s")
            res["keypool_decode_pct_copy_bw"], res["keypool_decode_calls_per_s"] = bw, calls
            res["copy_gbps"] = med(KA, "copy_gbps")
            measure = (f"{fmt(calls, '.0f')} calls/s, {fmt(bw, '.1f')} % of copy bandwidth "
                       f"({fmt(res['copy_gbps'], '.1f')} GB/s)")
            goal = "≥ 50 % of copy bandwidth"
        rows.append(f"| {case} | {what} | {fmt(ms, '.3f')} | {measure} | {goal} | {fmt(tms, '.3f')} "
                    f"| {times(sp)} | ≥ 3× |")
    return rows


def first_of(rounds, key):
    return next((r[key] for r in rounds if key in r), None)


def attnres_rows(RA, RT, res):
    rows = []
    if RA:
        res["attnres_copy_gbps"] = med(RA, "copy_gbps")
        case = RA[0].get("attnres_case")  # bench_ops writes the case it ran, as harness JSON
        res["attnres_T"] = json.loads(case).get("T") if case else RA[0].get("attnres_T")
    for d in ("fwd", "bwd") if RA or RT else ():
        ms, tms = med(RA, f"attnres_{d}_ms_median"), med(RT, f"torch_attnres_{d}_ms_median")
        pct = median_of(numbers(RA, f"attnres_{d}_pct_copy_bw"))
        sp = median_of([t[f"torch_attnres_{d}_ms_median"] / a[f"attnres_{d}_ms_median"] for a, t in zip(RA, RT)
                        if t.get(f"torch_attnres_{d}_ms_median") and a.get(f"attnres_{d}_ms_median")])
        ar_peak = RA[0].get(f"attnres_{d}_peak_bytes") if RA else None
        ar_tpeak = first_of(RT, f"torch_attnres_{d}_peak_bytes")
        for key, v in ((f"attnres_{d}_ms_median", ms), (f"attnres_{d}_ms_min", lo(RA, f"attnres_{d}_ms_min")),
                       (f"attnres_{d}_bytes", RA[0].get(f"attnres_{d}_bytes") if RA else None),
                       (f"attnres_{d}_pct_copy_bw", pct),
                       (f"attnres_{d}_workspace_bytes", RA[0].get(f"attnres_{d}_workspace_bytes") if RA else None),
                       (f"attnres_{d}_peak_bytes", ar_peak),
                       (f"attnres_{d}_rss_rise_bytes", med(RA, f"attnres_{d}_rss_rise_bytes")),
                       (f"torch_attnres_{d}_ms_median", tms),
                       (f"torch_attnres_{d}_ms_min", lo(RT, f"torch_attnres_{d}_ms_min")),
                       (f"torch_attnres_{d}_peak_bytes", ar_tpeak),
                       (f"torch_attnres_{d}_rss_rise_bytes", first_of(RT, f"torch_attnres_{d}_rss_rise_bytes")),
                       (f"attnres_{d}_speedup_vs_torch", sp)):
            if v is not None:
                res[key] = v
        if d == "bwd":
            g = first_of(RT, "torch_attnres_bwd_graph_bytes")
            if g is not None:
                res["torch_attnres_bwd_graph_bytes"] = g
        ws = res.get(f"attnres_{d}_workspace_bytes")
        ar_mem = f"{fmt(ar_peak and ar_peak / MiB, '.0f')} (ws {fmt(ws and ws / MiB, '.2f')})" if ar_peak else "–"
        rows.append(f"| {d} | {fmt(ms, '.2f')} | {fmt(pct, '.1f')} % of copy bandwidth "
                    f"({fmt(res.get('attnres_copy_gbps'), '.1f')} GB/s) | ≥ 60 % | {fmt(tms, '.2f')} "
                    f"| {times(sp)} | {'≥ 3×' if d == 'fwd' else '≥ 4×'} "
                    f"| {ar_mem} | {fmt(ar_tpeak and ar_tpeak / MiB, '.0f')} |")
    return rows


# FusedInferAttentionScore: each case's bytes per second against the copy bandwidth, its speed-up over SDPA, and
# the ratios between cases the targets name (numerator case, denominator case, target).
FIA_CASES = (
    ("decode_bf16", "decode B4 N32 N2=8 D128, 4096 keys, bf16", "≥ 70 % of copy, ≥ 5×"),
    ("decode_f16", "the same, f16", "≥ 70 % of copy, ≥ 5×"),
    ("decode_f32", "the same, f32", "≥ 70 % of copy, ≥ 5×"),
    ("decode_paged_bf16", "the same, paged (blocks of 128, shuffled); torch: contiguous", "≤ 1.1× contiguous"),
    ("decode_int8", "the same, int8 cache (per-channel antiquant); torch: dequantise + SDPA", "≥ 1.7× bf16 speed"),
    ("long_bf16", "decode B1 over 32768 keys, bf16", "≥ 70 % of copy, ≥ 5×"),
    ("spec4_bf16", "speculative S1=4, bottom-right causal", "≤ 1.3× S1=1"),
    ("spec16_bf16", "speculative S1=16, bottom-right causal", "≤ 1.3× S1=1"),
    ("mla_bf16", "MLA decode B1 N1=128 N2=1 D512 + rope 64", "≥ 60 % of copy"),
    ("prompt_bf16", "prompt B1 N8 S1=S2=4096 D128 bf16 (the FlashAttention forward's case)", "≤ 1.05× that forward"),
    ("chunk_paged_bf16", "chunked prefill: S1=512 after 3584 keys (S2=4096), paged (blocks of 128), bottom-right "
                         "causal, same heads; torch: contiguous", "≥ 0.95× the prompt's GFLOP/s"),
)
FIA_RATIOS = (
    ("paged_vs_contiguous", "decode_paged_bf16", "decode_bf16", "≤ 1.1"),
    ("bf16_vs_int8", "decode_bf16", "decode_int8", "≥ 1.7"),
    ("spec4_vs_decode", "spec4_bf16", "decode_bf16", "≤ 1.3"),
    ("spec16_vs_decode", "spec16_bf16", "decode_bf16", "≤ 1.3"),
)
# Ratios of rates (GFLOP/s) between cases of different shapes: (name, numerator case, denominator case, target).
FIA_RATE_RATIOS = (
    ("chunk_vs_prompt_rate", "chunk_paged_bf16", "prompt_bf16", "≥ 0.95"),
)


# The AVX2 path's rounds (bench/run.sh's part fia_avx2) run some decode cases: their rows, and this ratio.
FIA_AVX2_RATIOS = (FIA_RATIOS[0],)


def fia_rows(FA, FT, res, A=(), label="fia"):
    """FusedInferAttentionScore (bench_ops --op infer_attention, peer_fia.py): case rows, then ratio rows; with
    bench_fa's rounds A, the prompt against the FlashAttention forward of its shape.  label "fia_avx2": the
    AVX2 path's decode rounds (their cases and ratio only), reported under that name."""
    rows = []
    if not FA:
        return rows
    avx2 = label != "fia"
    res[f"{label}_copy_gbps"], res[f"{label}_read_gbps"] = med(FA, "copy_gbps"), med(FA, "read_gbps")
    for case, what, goal in FIA_CASES:
        key, name = f"fia_{case}", f"{label}_{case}"
        ms, tms = med(FA, f"{key}_ms_median"), med(FT, f"torch_{key}_ms_median")
        if avx2 and ms is None:
            continue  # a case those rounds do not run
        pct, gflops = median_of(numbers(FA, f"{key}_pct_copy_bw")), med(FA, f"{key}_gflops")
        pct_read = median_of(numbers(FA, f"{key}_pct_read_bw"))
        sp = median_of([t[f"torch_{key}_ms_median"] / a[f"{key}_ms_median"] for a, t in zip(FA, FT)
                        if t.get(f"torch_{key}_ms_median") and a.get(f"{key}_ms_median")])
        for k, v in ((f"{name}_ms_median", ms), (f"{name}_pct_copy_bw", pct), (f"{name}_pct_read_bw", pct_read),
                     (f"{name}_gflops", gflops),
                     (f"torch_{name}_ms_median", tms), (f"{name}_speedup_vs_torch", sp)):
            if v is not None:
                res[k] = v
        rows.append(f"| `{name}` | {what} | {fmt(ms, '.3f')} | {fmt(pct, '.1f')} % | {fmt(pct_read, '.1f')} % "
                    f"| {fmt(gflops, '.1f')} "
                    f"| {fmt(tms, '.3f')} | {times(sp)} | {goal} |")
    for name, num, den, goal in FIA_AVX2_RATIOS if avx2 else FIA_RATIOS:
        v = median_of([a[f"fia_{num}_ms_median"] / a[f"fia_{den}_ms_median"] for a in FA
                       if a.get(f"fia_{num}_ms_median") and a.get(f"fia_{den}_ms_median")])
        if v is not None:
            res[f"{label}_{name}"] = v
        rows.append(f"| `{label}_{name}` | time of `{label}_{num}` / time of `{label}_{den}` | {fmt(v, '.2f')} "
                    f"|  |  |  |  |  | {goal} |")
    if avx2:
        return rows
    for name, num, den, goal in FIA_RATE_RATIOS:
        v = median_of([a[f"fia_{num}_gflops"] / a[f"fia_{den}_gflops"] for a in FA
                       if a.get(f"fia_{num}_gflops") and a.get(f"fia_{den}_gflops")])
        if v is not None:
            res[f"fia_{name}"] = v
        rows.append(f"| `fia_{name}` | GFLOP/s of `fia_{num}` / GFLOP/s of `fia_{den}` | {fmt(v, '.2f')} |  |  |  |  "
                    f"|  | {goal} |")
    fwd = "fwd_bf16_B1_N8_S4096_D128"
    v = median_of([f["fia_prompt_bf16_ms_median"] / a[f"{fwd}_ms_median"] for f, a in zip(FA, A)
                   if f.get("fia_prompt_bf16_ms_median") and a.get(f"{fwd}_ms_median")])
    if v is not None:
        res["fia_prompt_vs_fa_forward"] = v
    rows.append(f"| `fia_prompt_vs_fa_forward` | time of `fia_prompt_bf16` / time of bench_fa's `{fwd}` "
                f"| {fmt(v, '.2f')} |  |  |  |  |  | ≤ 1.05 |")
    return rows


def rss_rows(out_dir, res):
    rows = []
    for p in sorted(glob.glob(os.path.join(out_dir, "rss_*.json"))):
        with open(p) as f:
            r = json.load(f)
        r.pop("threads", None)
        res.update(r)
        n = next(k[: -len("_rss_bytes")] for k in r if k.endswith("_rss_bytes"))

        def mib(k):
            return r.get(f"{n}_{k}", 0) / MiB
        rows.append(f"| `{n}` | {mib('input_bytes'):.1f} | {mib('output_bytes'):.1f} | {mib('workspace_bytes'):.1f} "
                    f"| {mib('rss_bytes'):.1f} | {mib('rss_over_io_bytes'):.1f} | {RSS_BUDGET_MIB} |")
    if rows:
        res["rss_budget_mib"] = RSS_BUDGET_MIB
    return rows


def program_tables(out_dir, res):
    """The Python programs' own tables (python: the package; cp: context parallelism; transformers: a model's
    training step; transformers_generate: its generate())."""
    tables = []
    for part in ("python", "cp", "transformers", "transformers_generate"):
        if os.path.exists(os.path.join(out_dir, f"{part}.json")):
            with open(os.path.join(out_dir, f"{part}.json")) as f:
                res.update(json.load(f))
            with open(os.path.join(out_dir, f"{part}.md")) as f:
                tables.append(f.read().rstrip("\n"))
    return tables


# ---- the whole report ---------------------------------------------------------------------------
def header(args, A, T):
    res = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": args.git,
        "cpu_model": args.cpu,
        "threads": args.threads,
        "rounds": len(A),
        "quick": int(args.quick),
    }
    if A:
        res["attnops_version"] = A[0].get("attnops_version")
        res["attnops_isa"] = A[0].get("attnops_isa")
    if T:
        res["torch_version"] = T[0].get("torch_version")
        res["torch_threads"] = T[0].get("torch_threads")
        res["torch_cpu_capability"] = T[0].get("torch_cpu_capability")
        res["torch_rounds"] = len(T)
    return res


def table(head, align, rows):
    return ["", head, align] + rows if rows else []


def markdown(res, peak, have_torch, sections, tables):
    md = [f"Run {res['date_utc']}, commit `{res['git_commit']}`, {res['cpu_model']}, "
          f"{res['threads']} threads, medians of {res['rounds']} rounds"
          + (", **quick mode (S/8): shapes are not the target shapes**" if res["quick"] else "") + ".",
          f"attnops {res.get('attnops_version', '?')} (isa {res.get('attnops_isa', '?')}); "
          + (f"torch {res['torch_version']} ({res['torch_threads']} threads, {res['torch_cpu_capability']})."
             if have_torch else "torch: not run."),
          "",
          f"Tile-GEMM peak (libxsmm 64×64×128, all threads): fp32 {fmt(peak.get('f32'), '.1f')} GFLOP/s, "
          f"bf16→fp32 {fmt(peak.get('bf16'), '.1f')} GFLOP/s.",
          "",
          "| case | attnops ms | GFLOP/s | % of peak | torch ms | torch GFLOP/s | speedup vs torch | target |",
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    md += sections["cases"]
    md += table("| ratio (`{f32,bf16}`: one per dtype) | median (in that order) | definition | target |",
                "| --- | ---: | --- | --- |", sections["ratios"])
    md += table("| KeyPool | case | attnops ms | measure | target | torch ms | speedup vs torch | target |",
                "| --- | --- | ---: | --- | --- | ---: | ---: | --- |", sections["keypool"])
    if sections["attnres"]:
        md += table("| AttnRes | attnops ms | measure | target | torch ms | speedup vs torch | target "
                    "| attnops peak MiB | torch peak MiB |",
                    "| --- | ---: | --- | --- | ---: | ---: | --- | ---: | ---: |", sections["attnres"])
        md += ["", f"AttnRes: B=1, T={res.get('attnres_T', '?')}, L=26, D=4096, bf16 (bytes as under Targets); "
               "peak = inputs + outputs + workspace (attnops), inputs + the peak-RSS rise over the call (torch, "
               "whose bwd includes its graph-building forward)."]
    if sections["fia"]:
        md += table("| FusedInferAttentionScore | case | attnops ms | bytes vs copy | bytes vs read | GFLOP/s "
                    "| torch ms | speedup vs torch | target |",
                    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |", sections["fia"])
        md += ["", f"FusedInferAttentionScore: copy bandwidth {fmt(res.get('fia_copy_gbps'), '.1f')} GB/s "
               f"(read + written), read-only bandwidth {fmt(res.get('fia_read_gbps'), '.1f')} GB/s, same rounds; "
               "torch = `scaled_dot_product_attention(enable_gqa=True)` on contiguous caches of the same dtype."]
    if sections.get("fia_avx2"):
        md += table("| FusedInferAttentionScore, AVX2 path | case | attnops ms | bytes vs copy | bytes vs read "
                    "| GFLOP/s | torch ms | speedup vs torch | target |",
                    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |", sections["fia_avx2"])
        md += ["", f"The decode cases on the AVX2 path of a CPU with AVX-512 (ATTNOPS_ISA=avx2; torch with "
               f"ATEN_CPU_CAPABILITY=avx2), in the same rounds (copy bandwidth "
               f"{fmt(res.get('fia_avx2_copy_gbps'), '.1f')} GB/s)."]
    md += table("| peak RSS case | inputs MiB | outputs MiB | workspace MiB | peak RSS MiB | RSS − (in+out) MiB "
                "| budget MiB |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |", sections["rss"])
    for t in tables:
        md += ["", t]
    md += ["", "GFLOP/s, % of peak, speedups and ratios as defined under Method (dense-equivalent FLOPs, so a masked "
           "case can pass 100 % of peak; medians of per-round ratios); targets are quoted, not judged."]
    return "\n".join(md) + "\n"


def update_docs(doc, text):
    """Replace what stands between the BENCH-RESULTS markers of doc with text; a message either way."""
    begin, end = "<!-- BENCH-RESULTS:BEGIN -->", "<!-- BENCH-RESULTS:END -->"
    try:
        with open(doc) as f:
            d = f.read()
        i, j = d.index(begin) + len(begin), d.index(end)
        with open(doc, "w") as f:
            f.write(d[:i] + "\n" + text + d[j:])
        return f"updated the results section of {doc}"
    except (OSError, ValueError) as e:
        return f"docs not updated ({e})"


def report(args):
    """results.json and results.md under args.out; returns the markdown."""
    out = args.out
    A, T = load_rounds(out, "rounds/attnops.*.json"), load_rounds(out, "rounds/torch.*.json")
    cases = read_cases(args.cases, A)
    res = header(args, A, T)
    peak = {}
    for p in ("f32", "bf16"):
        v = med(A, f"gemm_peak_{p}_gflops")
        if v is not None:
            res[f"gemm_peak_{p}_gflops"] = peak[p] = v
    sections = {"cases": fa_case_rows(cases, A, T, res), "ratios": fa_ratio_rows(cases, A, res)}
    sections["keypool"] = keypool_rows(load_rounds(out, "rounds/kp_attnops.*.json"),
                                       load_rounds(out, "rounds/kp_torch.*.json"), res)
    sections["attnres"] = attnres_rows(load_rounds(out, "rounds/ar_attnops.*.json"),
                                       load_rounds(out, "rounds/ar_torch.*.json"), res)
    sections["fia"] = fia_rows(load_rounds(out, "rounds/fia_attnops.*.json"),
                               load_rounds(out, "rounds/fia_torch.*.json"), res, A)
    sections["fia_avx2"] = fia_rows(load_rounds(out, "rounds/fia_avx2_attnops.*.json"),
                                    load_rounds(out, "rounds/fia_avx2_torch.*.json"), res, label="fia_avx2")
    sections["rss"] = rss_rows(out, res)
    tables = program_tables(out, res)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(res, f, indent=2)
        f.write("\n")
    text = markdown(res, peak, bool(T), sections, tables)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(text)
    return text


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the bench output folder (build/bench)")
    ap.add_argument("--cases", required=True, help="the JSON of bench_fa --list-cases --json")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="the run divided S by 8 (said in the report)")
    ap.add_argument("--git", default="unknown", help="the commit measured")
    ap.add_argument("--cpu", default="unknown", help="the CPU model")
    ap.add_argument("--update-docs", metavar="DOC", help="write the table into DOC between its markers")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    text = report(args)
    print()
    print(text)
    print(f"wrote {os.path.join(args.out, 'results.json')} and results.md")
    if args.update_docs:
        print(update_docs(args.update_docs, text))


if __name__ == "__main__":
    main()
