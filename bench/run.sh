#!/usr/bin/env bash
# bench/run.sh — attnops against the libxsmm tile-GEMM peak and against
# PyTorch SDPA on the CPU, measured side by side.  `make bench` builds
# build/bench/bench_fa and then runs this script; it builds nothing itself.
#
# What it does (docs/PERFORMANCE.md has the method):
#   1. takes the case list from `bench_fa --list-cases` (so both programs time
#      the same shapes under the same names);
#   2. runs R rounds; each round runs bench_fa (GEMM peaks + every case, once)
#      and peer_torch.py (every case, once), alternating which goes first,
#      with the same thread count;
#   3. runs the peak-RSS cases (S=32768, N1=1, D=128, fp32, fwd and bwd), one
#      fresh process each;
#   3b. each round also runs bench_keypool and peer_keypool.py (KeyPool
#      prefill and decode), in the same alternating order;
#   3c. each round also runs bench_attnres and peer_attnres.py (Block
#      Attention Residuals forward and backward), in the same alternating
#      order; the peer measures torch's peak memory in round 1 only (--mem);
#   3d. runs bench/bench_python.py once (the Python package's per-call
#      overhead and a training step through autograd vs SDPA, R rounds of its
#      own, alternating), and with 2+ threads bench/bench_distributed.py
#      (ring attention on THREADS ranks x 1 thread vs 1 rank x THREADS threads);
#   4. merges everything into build/bench/results.json (medians over rounds,
#      GFLOP/s, % of peak, speedups vs torch, and the ratios between cases:
#      masked vs dense, band vs proportional, pse vs plain, varlen vs the
#      dense sequence of the same total work, dropout vs none, deterministic
#      vs default, FP8 vs bf16), prints two
#      markdown tables (cases; ratios with their targets) and writes them to
#      build/bench/results.md.  It checks nothing: no pass/fail.
#
# Environment:
#   OMP_NUM_THREADS   threads for attnops, the GEMM peak and torch (default: nproc)
#   BENCH_REPS        rounds (default 5)
#   BENCH_QUICK=1     divide every S (a varlen case's total T, band width) by 8
#                     (smoke run; also the RSS cases)
#   BENCH_CASES       case specs NAME:B,N1,N2,S1,S2,D,Dv,dtype,layout,dir[,mask=M]
#                     [,pse=P][,peer=no][,varlen=K|,varlen_dense=K] separated by
#                     spaces (default: bench_fa's built-in target cases;
#                     `bench_fa --help` lists M and P).  Cases with varlen= or
#                     varlen_dense= are not passed to the torch peer.
#   BENCH_RSS=0       skip the RSS runs
#   BENCH_TORCH=0     skip the PyTorch peer
#   BENCH_UPDATE_DOCS 1 = write the table into docs/PERFORMANCE.md between its
#                     BENCH-RESULTS markers; default 1 for full runs, 0 for quick
#   BUILD_DIR         build tree holding bench/bench_fa (default: build)
#   BENCH_PYTHON      python with torch (default: .venv/bin/python)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR=$ROOT/$BUILD_DIR ;; esac
BENCH=$BUILD_DIR/bench/bench_fa
PY=${BENCH_PYTHON:-$ROOT/.venv/bin/python}
THREADS=${OMP_NUM_THREADS:-$(nproc)}
REPS=${BENCH_REPS:-5}
QUICK=${BENCH_QUICK:-0}
OUT=$BUILD_DIR/bench
export OMP_NUM_THREADS=$THREADS

if [[ ! -x $BENCH ]]; then
    echo "bench/run.sh: $BENCH is missing; build it first (make bench)" >&2
    exit 1
fi
mkdir -p "$OUT/rounds"
rm -f "$OUT"/rounds/*.json "$OUT"/rss_*.json

quick_flag=()
[[ $QUICK == 1 ]] && quick_flag=(--quick)
UPDATE_DOCS=${BENCH_UPDATE_DOCS:-$([[ $QUICK == 1 ]] && echo 0 || echo 1)}

# ---- the case list (canonical names, --quick applied) -----------------------
given=()
for s in ${BENCH_CASES:-}; do given+=(--case "$s"); done
mapfile -t CASES < <("$BENCH" --list-cases "${quick_flag[@]}" "${given[@]}")
case_args=()
torch_args=() # the peer has no varlen call (and does not parse varlen=/varlen_dense=)
for s in "${CASES[@]}"; do
    case_args+=(--case "$s")
    [[ ,$s, == *,varlen=* || ,$s, == *,varlen_dense=* ]] || torch_args+=(--case "$s")
done
printf 'bench/run.sh: %d threads, %d rounds%s, cases:\n' "$THREADS" "$REPS" "$([[ $QUICK == 1 ]] && echo ', quick (S/8)')"
printf '  %s\n' "${CASES[@]}"

# ---- the peer ---------------------------------------------------------------
have_torch=0
if [[ ${BENCH_TORCH:-1} != 0 ]]; then
    if [[ -x $PY ]] && "$PY" -c 'import torch' 2>/dev/null; then
        have_torch=1
    else
        echo "bench/run.sh: no torch in $PY (scripts/setup.sh --bench installs it); the peer is skipped" >&2
    fi
fi

run_kp_attnops() {
    "$BUILD_DIR/bench/bench_keypool" --threads "$THREADS" --json "$OUT/rounds/kp_attnops.$1.json" "${quick_flag[@]}"
}
run_kp_torch() {
    "$PY" -u "$ROOT/bench/peer_keypool.py" --threads "$THREADS" --json "$OUT/rounds/kp_torch.$1.json" \
        "${quick_flag[@]}"
}
run_ar_attnops() {
    "$BUILD_DIR/bench/bench_attnres" --threads "$THREADS" --json "$OUT/rounds/ar_attnops.$1.json" "${quick_flag[@]}"
}
run_ar_torch() {
    local mem=()
    (($1 == 1)) && mem=(--mem) # torch's peak memory: fresh subprocesses, once
    "$PY" -u "$ROOT/bench/peer_attnres.py" --threads "$THREADS" --json "$OUT/rounds/ar_torch.$1.json" \
        "${quick_flag[@]}" "${mem[@]}"
}
run_attnops() {
    "$BENCH" --threads "$THREADS" --reps 1 --json "$OUT/rounds/attnops.$1.json" "${case_args[@]}"
}
run_torch() {
    # unbuffered so the two programs' outputs interleave in order
    "$PY" -u "$ROOT/bench/peer_torch.py" --threads "$THREADS" --reps 1 --json "$OUT/rounds/torch.$1.json" \
        "${torch_args[@]}"
}

# ---- rounds, alternating ------------------------------------------------------
for ((r = 1; r <= REPS; r++)); do
    echo "== round $r/$REPS"
    if ((r % 2 == 1)) || ((have_torch == 0)); then
        run_attnops "$r"
        ((have_torch)) && run_torch "$r"
        run_kp_attnops "$r"
        ((have_torch)) && run_kp_torch "$r"
        run_ar_attnops "$r"
        ((have_torch)) && run_ar_torch "$r"
    else
        run_torch "$r"
        run_attnops "$r"
        run_kp_torch "$r"
        run_kp_attnops "$r"
        run_ar_torch "$r"
        run_ar_attnops "$r"
    fi
done

# ---- the Python package ---------------------------------------------------------
rm -f "$OUT/python.json" "$OUT/python.md" "$OUT/cp.json" "$OUT/cp.md"
if ((have_torch)) && "$PY" -c 'import attnops' 2>/dev/null; then
    echo "== Python package: per-call overhead, training step vs SDPA"
    "$PY" -u "$ROOT/bench/bench_python.py" --threads "$THREADS" --reps "$REPS" "${quick_flag[@]}" \
        --json "$OUT/python.json" --md "$OUT/python.md"
    if ((THREADS >= 2)); then
        echo "== context parallelism: $THREADS ranks x 1 thread vs 1 rank x $THREADS threads"
        "$PY" -u "$ROOT/bench/bench_distributed.py" --ranks "$THREADS" --reps "$REPS" \
            --seq "$([[ $QUICK == 1 ]] && echo 1024 || echo 8192)" --json "$OUT/cp.json" --md "$OUT/cp.md"
    fi
else
    echo "bench/run.sh: the attnops Python package is not installed in $PY (make test installs it); skipped" >&2
fi

# ---- peak RSS: one fresh process per case -------------------------------------
if [[ ${BENCH_RSS:-1} != 0 ]]; then
    for dir in fwd bwd; do
        echo "== peak RSS: $dir f32, B=1, N1=1, S=32768 (S/8 when quick), D=128"
        "$BENCH" --threads "$THREADS" --json "$OUT/rss_$dir.json" "${quick_flag[@]}" \
            --rss ":1,1,1,32768,32768,128,128,f32,BNSD,$dir"
    done
fi

# ---- merge, table -----------------------------------------------------------------
export BENCH_OUT=$OUT BENCH_ROOT=$ROOT BENCH_THREADS=$THREADS BENCH_REPS_N=$REPS BENCH_QUICK_N=$QUICK \
    BENCH_HAVE_TORCH=$have_torch BENCH_UPDATE_DOCS_N=$UPDATE_DOCS
BENCH_CASE_LIST=$(printf '%s\n' "${CASES[@]}")
export BENCH_CASE_LIST
BENCH_GIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
BENCH_CPU=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || echo unknown)
export BENCH_GIT BENCH_CPU
python3 - <<'EOF'
import datetime, glob, json, os, re, statistics

out_dir = os.environ["BENCH_OUT"]
root = os.environ["BENCH_ROOT"]
quick = os.environ["BENCH_QUICK_N"] == "1"
MiB = 1024.0 * 1024.0
RSS_BUDGET_MIB = 64


def load(pattern):
    rounds = []
    paths = glob.glob(os.path.join(out_dir, pattern))
    for p in sorted(paths, key=lambda p: int(re.findall(r"\.(\d+)\.json$", p)[0])):
        with open(p) as f:
            rounds.append(json.load(f))
    return rounds


def med(rounds, key):
    vals = [r[key] for r in rounds if isinstance(r.get(key), (int, float))]
    return statistics.median(vals) if vals else None


def lo(rounds, key):
    vals = [r[key] for r in rounds if isinstance(r.get(key), (int, float))]
    return min(vals) if vals else None


A, T = load("rounds/attnops.*.json"), load("rounds/torch.*.json")
cases = []
for line in os.environ["BENCH_CASE_LIST"].splitlines():
    if not line.strip():
        continue
    name, _, body = line.partition(":")
    f = body.split(",")
    c = dict(zip(("B", "N1", "N2", "S1", "S2", "D", "Dv"), map(int, f[:7])))
    c.update(name=name, dtype=f[7], layout=f[8], dir=f[9], mask="none", pse="none", peer=True, varlen=0,
             varlen_dense=0, keep=0.0, det=0)
    # optional fields, as `bench_fa --list-cases` prints them (already checked by it)
    for o in f[10:]:
        k, _, v = o.partition("=")
        if k == "peer":
            c["peer"] = v != "no"
        elif k in ("mask", "pse"):
            c[k] = v
        elif k in ("varlen", "varlen_dense", "det"):
            c[k] = int(v)
        elif k == "keep":
            c[k] = float(v)
    # FLOPs as bench_fa counts them (it writes them): a varlen case's real work
    # sum_i L_i^2, a varlen_dense case's L_eq^2 (its S1, S2 here are T)
    gfs = [a[f"{name}_gflop"] for a in A if isinstance(a.get(f"{name}_gflop"), (int, float))]
    if gfs:
        c["gflop"] = gfs[0]
    else:
        fl = 2.0 * c["B"] * c["N1"] * c["S1"] * c["S2"] * (c["D"] + c["Dv"])
        c["gflop"] = (2.5 * fl if c["dir"] == "bwd" else fl) * 1e-9
    vtag = (f"_varlen{c['varlen']}" if c["varlen"] else
            f"_varlen{c['varlen_dense']}dense" if c["varlen_dense"] else "")
    c["tags"] = (vtag + "".join(f"_{c[k]}" for k in ("mask", "pse") if c[k] != "none")
                 + (f"_keep{round(c['keep'] * 100)}" if c["keep"] else "") + ("_det" if c["det"] else ""))
    cases.append(c)

res = {
    "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "git_commit": os.environ.get("BENCH_GIT", "unknown"),
    "cpu_model": os.environ.get("BENCH_CPU", "unknown"),
    "threads": int(os.environ["BENCH_THREADS"]),
    "rounds": len(A),
    "quick": int(quick),
}
if A:
    res["attnops_version"] = A[0].get("attnops_version")
    res["attnops_isa"] = A[0].get("attnops_isa")
if T:
    res["torch_version"] = T[0].get("torch_version")
    res["torch_threads"] = T[0].get("torch_threads")
    res["torch_cpu_capability"] = T[0].get("torch_cpu_capability")
    res["torch_rounds"] = len(T)
peak = {}
for p in ("f32", "bf16"):
    v = med(A, f"gemm_peak_{p}_gflops")
    if v is not None:
        res[f"gemm_peak_{p}_gflops"] = v
        peak[p] = v


def target(c):
    """The issue's targets, as text (this script judges nothing)."""
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


def fmt(x, spec):
    return "–" if x is None else format(x, spec)


rows = []
for c in cases:
    n = c["name"]
    ms = med(A, f"{n}_ms_median")
    pk = "bf16" if c["dtype"] in ("bf16", "f8_e4m3fn", "f8_e5m2") else "f32"  # FP8 runs bf16 GEMMs
    gf = c["gflop"] / (ms * 1e-3) if ms else None
    # Ratios are taken within each round (side by side), then the median:
    # % of peak against that round's peak, speedup against that round's torch.
    pcts = [r[f"{n}_pct_peak"] for r in A if isinstance(r.get(f"{n}_pct_peak"), (int, float))]
    pct = statistics.median(pcts) if pcts else None
    tms = med(T, f"torch_{n}_ms_median")
    tgf = c["gflop"] / (tms * 1e-3) if tms else None
    sps = [t[f"torch_{n}_ms_median"] / a[f"{n}_ms_median"] for a, t in zip(A, T)
           if t.get(f"torch_{n}_ms_median") and a.get(f"{n}_ms_median")]
    sp = statistics.median(sps) if sps else None
    res[f"{n}_gflop"] = c["gflop"]
    for key, v in ((f"{n}_ms_median", ms), (f"{n}_ms_min", lo(A, f"{n}_ms_min")), (f"{n}_gflops", gf),
                   (f"{n}_pct_peak", pct), (f"{n}_workspace_bytes", A[0].get(f"{n}_workspace_bytes") if A else None),
                   (f"torch_{n}_ms_median", tms), (f"torch_{n}_ms_min", lo(T, f"torch_{n}_ms_min")),
                   (f"torch_{n}_gflops", tgf), (f"{n}_speedup_vs_torch", sp)):
        if v is not None:
            res[key] = v
    rows.append(f"| `{n}` | {fmt(ms, '.2f')} | {fmt(gf, '.1f')} | {fmt(pct, '.1f')} ({pk}) | {fmt(tms, '.2f')} "
                f"| {fmt(tgf, '.1f')} | {fmt(sp, '.2f') + ('×' if sp else '')} | {target(c)} |")

# ---- ratios between cases (same rules as bench_fa.c base_of / ratio_label) ----
def same_shape(a, b):
    return all(a[k] == b[k] for k in ("B", "N1", "N2", "S1", "S2", "D", "Dv", "dtype", "layout", "dir", "varlen",
                                      "varlen_dense"))


def dense_of(c):
    """A plain varlen=K case against its varlen_dense=K case (same T, heads,
    head dims, dtype, direction; bench_fa.c dense_of).  None when absent."""
    if not c["varlen"] or c["mask"] != "none" or c["pse"] != "none":
        return None
    for b in cases:
        if (b["varlen_dense"] == c["varlen"] and b["S1"] == c["S1"] and b["mask"] == "none" and b["pse"] == "none"
                and all(b[k] == c[k] for k in ("N1", "N2", "D", "Dv", "dtype", "dir"))):
            return b
    return None


def is_variant(c):
    return bool(c["keep"] or c["det"] or c["dtype"].startswith("f8"))


def base_of(c):
    """A pse case against the same case without pse (mask kept); a masked case
    against the same case without mask.  None when there is no such case."""
    if (c["mask"] == "none" and c["pse"] == "none") or is_variant(c):
        return None
    for b in cases:
        if b is c or not same_shape(c, b) or b["pse"] != "none" or is_variant(b):
            continue
        if (b["mask"] == c["mask"]) if c["pse"] != "none" else (b["mask"] == "none"):
            return b
    return None


def variant_base(c):
    """A keep=P, det=1 or FP8 case against the same case without that one
    feature (FP8 against bf16), as bench_fa.c variant_base: (case, kind) or
    (None, None)."""
    if not is_variant(c):
        return None, None
    for b in cases:
        if b is c or b["mask"] != c["mask"] or b["pse"] != c["pse"]:
            continue
        if not all(b[k] == c[k] for k in ("B", "N1", "N2", "S1", "S2", "D", "Dv", "layout", "dir", "varlen",
                                          "varlen_dense")):
            continue
        if c["keep"] and not b["keep"] and b["det"] == c["det"] and b["dtype"] == c["dtype"]:
            return b, "ratio_vs_no_dropout"
        if not c["keep"] and c["det"] and not b["det"] and not b["keep"] and b["dtype"] == c["dtype"]:
            return b, "ratio_vs_default"
        if (not c["keep"] and not c["det"] and c["dtype"].startswith("f8") and b["dtype"] == "bf16"
                and not b["keep"] and not b["det"]):
            return b, "ratio_vs_bf16"
    return None, None


def short(c):
    return f"{c['dir']}_{c['dtype']}{c['tags']}"


def label(c):
    """bwd_f32_causal2 when unique in the list, else the case name."""
    return short(c) if sum(short(o) == short(c) for o in cases) == 1 else c["name"]


def ratio_target(c, kind):
    """The issue's ratio targets, as text, at the target shapes only."""
    if kind == "ratio_vs_dense_rate":
        return "≥ 0.8" if (c["varlen"] == 32 and c["S1"] == 16384 and c["D"] == c["Dv"] == 128
                           and c["N1"] == c["N2"]) else ""
    if kind == "ratio_vs_no_dropout":
        return "≤ 1.25" if c["keep"] == 0.9 and c["dir"] == "bwd" else ""
    if kind == "ratio_vs_default":
        return "≤ 1.10" if c["dir"] == "bwd" else ""
    if kind == "ratio_vs_bf16":
        return "reported (time ratio)"
    if kind == "speedup_vs_torch" and c["keep"]:
        return "≥ 2× (torch's unfused dropout path)"
    if (c["layout"] != "BNSD" or c["D"] != 128 or c["Dv"] != 128 or c["N1"] != c["N2"] or c["B"] != 1
            or c["S1"] != 4096 or c["S2"] != 4096):
        return ""
    band_w = int(c["mask"][4:]) if c["mask"].startswith("band") else None
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


ratio_rows = []
for c in cases:
    n, lab, b = c["name"], label(c), base_of(c)
    vd = dense_of(c)
    if vd is not None:
        # varlen GFLOP/s / dense GFLOP/s, within each round, then the median
        dn = vd["name"]
        rs = [(a[f"{n}_gflop"] / a[f"{n}_ms_median"]) / (a[f"{dn}_gflop"] / a[f"{dn}_ms_median"]) for a in A
              if a.get(f"{n}_ms_median") and a.get(f"{dn}_ms_median") and a.get(f"{n}_gflop")
              and a.get(f"{dn}_gflop")]
        v = statistics.median(rs) if rs else None
        if v is not None:
            res[f"{lab}_ratio_vs_dense_rate"] = v
        ratio_rows.append(f"| `{lab}_ratio_vs_dense_rate` | {fmt(v, '.3f')} | GFLOP/s / GFLOP/s of `{dn}` "
                          f"(one sequence of the same Σ L², {c['varlen']} sequences in T = {c['S1']}) "
                          f"| {ratio_target(c, 'ratio_vs_dense_rate')} |")
    vb, vkind = variant_base(c)
    if vb is not None:
        rs = [a[f"{n}_ms_median"] / a[f"{vb['name']}_ms_median"] for a in A
              if a.get(f"{n}_ms_median") and a.get(f"{vb['name']}_ms_median")]
        v = statistics.median(rs) if rs else None
        if v is not None:
            res[f"{lab}_{vkind}"] = v
        ratio_rows.append(f"| `{lab}_{vkind}` | {fmt(v, '.3f')} | time / time of `{vb['name']}` "
                          f"| {ratio_target(c, vkind)} |")
    fracs = [a[f"{n}_unmasked_fraction"] for a in A if isinstance(a.get(f"{n}_unmasked_fraction"), (int, float))]
    frac = fracs[0] if fracs else 1.0
    if c["mask"] != "none":
        res[f"{n}_unmasked_fraction"] = frac
    kinds = []
    if b is not None:
        kinds.append("ratio_vs_plain" if c["pse"] != "none" else "ratio_vs_dense")
        if c["pse"] == "none" and c["mask"].startswith("band"):
            kinds.append("ratio_vs_proportional")
    for kind in kinds:
        # within each round, then the median (as the speedups)
        rs = [a[f"{n}_ms_median"] / a[f"{b['name']}_ms_median"] for a in A
              if a.get(f"{n}_ms_median") and a.get(f"{b['name']}_ms_median")]
        if kind == "ratio_vs_proportional":
            rs = [r / frac for r in rs]
        v = statistics.median(rs) if rs else None
        if v is not None:
            res[f"{lab}_{kind}"] = v
        what = {"ratio_vs_dense": f"time / time of `{b['name']}`",
                "ratio_vs_plain": f"time / time of `{b['name']}`",
                "ratio_vs_proportional": f"time / (time of `{b['name']}` × {frac:.4f} unmasked)"}[kind]
        if kind != "ratio_vs_dense" or not c["mask"].startswith("band"):  # bands: the proportional row
            ratio_rows.append(f"| `{lab}_{kind}` | {fmt(v, '.3f')} | {what} | {ratio_target(c, kind)} |")
    sp = res.get(f"{n}_speedup_vs_torch")
    if c["tags"] and sp is not None:
        res[f"{lab}_speedup_vs_torch"] = sp
        ratio_rows.append(f"| `{lab}_speedup_vs_torch` | {sp:.2f}× | torch ms / attnops ms, {torch_call(c)} "
                          f"| {ratio_target(c, 'speedup_vs_torch')} |")

# ---- KeyPool (bench_keypool / peer_keypool.py), per-round ratios then medians ----
KA, KT = load("rounds/kp_attnops.*.json"), load("rounds/kp_torch.*.json")
kp_rows = []
for case, what in (("prefill", "B=1, S=4096 (512 quick), H=4096, D=128, R=4, bf16, LayerNorm"),
                   ("decode", "B=32, one token each after a history of 4096")):
    ms, tms = med(KA, f"kp_{case}_ms_median"), med(KT, f"torch_kp_{case}_ms_median")
    sps = [t[f"torch_kp_{case}_ms_median"] / a[f"kp_{case}_ms_median"] for a, t in zip(KA, KT)
           if t.get(f"torch_kp_{case}_ms_median") and a.get(f"kp_{case}_ms_median")]
    sp = statistics.median(sps) if sps else None
    for key, v in ((f"keypool_{case}_ms_median", ms), (f"keypool_{case}_ms_min", lo(KA, f"kp_{case}_ms_min")),
                   (f"torch_keypool_{case}_ms_median", tms), (f"keypool_{case}_speedup_vs_torch", sp)):
        if v is not None:
            res[key] = v
    if case == "prefill":
        pct = med(KA, "kp_prefill_pct_peak")
        res["keypool_prefill_pct_bf16_peak"] = pct
        measure, target = f"{fmt(pct, '.1f')} % of the bf16 peak", "≥ 60 % of the bf16 peak"
    else:
        bw, calls = med(KA, "kp_decode_pct_copy_bw"), med(KA, "kp_decode_calls_per_s")
        res["keypool_decode_pct_copy_bw"], res["keypool_decode_calls_per_s"] = bw, calls
        res["copy_gbps"] = med(KA, "copy_gbps")
        measure = f"{fmt(calls, '.0f')} calls/s, {fmt(bw, '.1f')} % of copy bandwidth ({fmt(res['copy_gbps'], '.1f')} GB/s)"
        target = "≥ 50 % of copy bandwidth"
    kp_rows.append(f"| {case} | {what} | {fmt(ms, '.3f')} | {measure} | {target} | {fmt(tms, '.3f')} "
                   f"| {fmt(sp, '.2f') + ('×' if sp else '')} | ≥ 3× |")

# ---- AttnRes (bench_attnres / peer_attnres.py), per-round ratios then medians ----
RA, RT = load("rounds/ar_attnops.*.json"), load("rounds/ar_torch.*.json")
ar_rows = []
if RA:
    res["attnres_copy_gbps"] = med(RA, "copy_gbps")
    res["attnres_T"] = RA[0].get("attnres_T")
for d in ("fwd", "bwd") if RA or RT else ():
    ms, tms = med(RA, f"attnres_{d}_ms_median"), med(RT, f"torch_attnres_{d}_ms_median")
    pcts = [a[f"attnres_{d}_pct_copy_bw"] for a in RA if isinstance(a.get(f"attnres_{d}_pct_copy_bw"), (int, float))]
    pct = statistics.median(pcts) if pcts else None
    sps = [t[f"torch_attnres_{d}_ms_median"] / a[f"attnres_{d}_ms_median"] for a, t in zip(RA, RT)
           if t.get(f"torch_attnres_{d}_ms_median") and a.get(f"attnres_{d}_ms_median")]
    sp = statistics.median(sps) if sps else None
    ar_peak = RA[0].get(f"attnres_{d}_peak_bytes") if RA else None
    ar_tpeak = next((t[f"torch_attnres_{d}_peak_bytes"] for t in RT if f"torch_attnres_{d}_peak_bytes" in t), None)
    for key, v in ((f"attnres_{d}_ms_median", ms), (f"attnres_{d}_ms_min", lo(RA, f"attnres_{d}_ms_min")),
                   (f"attnres_{d}_bytes", RA[0].get(f"attnres_{d}_bytes") if RA else None),
                   (f"attnres_{d}_pct_copy_bw", pct),
                   (f"attnres_{d}_workspace_bytes", RA[0].get(f"attnres_{d}_workspace_bytes") if RA else None),
                   (f"attnres_{d}_peak_bytes", ar_peak),
                   (f"attnres_{d}_rss_rise_bytes", med(RA, f"attnres_{d}_rss_rise_bytes")),
                   (f"torch_attnres_{d}_ms_median", tms), (f"torch_attnres_{d}_ms_min", lo(RT, f"torch_attnres_{d}_ms_min")),
                   (f"torch_attnres_{d}_peak_bytes", ar_tpeak),
                   (f"torch_attnres_{d}_rss_rise_bytes",
                    next((t[f"torch_attnres_{d}_rss_rise_bytes"] for t in RT
                          if f"torch_attnres_{d}_rss_rise_bytes" in t), None)),
                   (f"attnres_{d}_speedup_vs_torch", sp)):
        if v is not None:
            res[key] = v
    if d == "bwd":
        g = next((t["torch_attnres_bwd_graph_bytes"] for t in RT if "torch_attnres_bwd_graph_bytes" in t), None)
        if g is not None:
            res["torch_attnres_bwd_graph_bytes"] = g
    ws = res.get(f"attnres_{d}_workspace_bytes")
    ar_mem = (f"{fmt(ar_peak and ar_peak / MiB, '.0f')} (ws {fmt(ws and ws / MiB, '.2f')})" if ar_peak else "–")
    ar_rows.append(f"| {d} | {fmt(ms, '.2f')} | {fmt(pct, '.1f')} % of copy bandwidth "
                   f"({fmt(res.get('attnres_copy_gbps'), '.1f')} GB/s) | ≥ 60 % | {fmt(tms, '.2f')} "
                   f"| {fmt(sp, '.2f') + ('×' if sp else '')} | {'≥ 3×' if d == 'fwd' else '≥ 4×'} "
                   f"| {ar_mem} | {fmt(ar_tpeak and ar_tpeak / MiB, '.0f')} |")

rss_rows = []
for p in sorted(glob.glob(os.path.join(out_dir, "rss_*.json"))):
    with open(p) as f:
        r = json.load(f)
    r.pop("threads", None)
    res.update(r)
    n = next(k[: -len("_rss_bytes")] for k in r if k.endswith("_rss_bytes"))
    g = lambda k: r.get(f"{n}_{k}", 0) / MiB
    rss_rows.append(f"| `{n}` | {g('input_bytes'):.1f} | {g('output_bytes'):.1f} | {g('workspace_bytes'):.1f} "
                    f"| {g('rss_bytes'):.1f} | {g('rss_over_io_bytes'):.1f} | {RSS_BUDGET_MIB} |")
if rss_rows:
    res["rss_budget_mib"] = RSS_BUDGET_MIB

extra_md = []  # the Python programs' own tables (python: the package; cp: context parallelism)
for part in ("python", "cp"):
    if os.path.exists(os.path.join(out_dir, f"{part}.json")):
        with open(os.path.join(out_dir, f"{part}.json")) as f:
            res.update(json.load(f))
        with open(os.path.join(out_dir, f"{part}.md")) as f:
            extra_md.append(f.read().rstrip("\n"))

with open(os.path.join(out_dir, "results.json"), "w") as f:
    json.dump(res, f, indent=2)
    f.write("\n")

md = []
md.append(f"Run {res['date_utc']}, commit `{res['git_commit']}`, {res['cpu_model']}, "
          f"{res['threads']} threads, medians of {res['rounds']} rounds"
          + (", **quick mode (S/8): shapes are not the target shapes**" if quick else "") + ".")
md.append(f"attnops {res.get('attnops_version', '?')} (isa {res.get('attnops_isa', '?')}); "
          + (f"torch {res['torch_version']} ({res['torch_threads']} threads, {res['torch_cpu_capability']})."
             if T else "torch: not run."))
md.append("")
md.append(f"Tile-GEMM peak (libxsmm 64×64×128, all threads): fp32 {fmt(peak.get('f32'), '.1f')} GFLOP/s, "
          f"bf16→fp32 {fmt(peak.get('bf16'), '.1f')} GFLOP/s.")
md.append("")
md.append("| case | attnops ms | GFLOP/s | % of peak | torch ms | torch GFLOP/s | speedup vs torch | target |")
md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
md += rows
if ratio_rows:
    md.append("")
    md.append("| ratio | median | definition | target |")
    md.append("| --- | ---: | --- | --- |")
    md += ratio_rows
if kp_rows:
    md.append("")
    md.append("| KeyPool | case | attnops ms | measure | target | torch ms | speedup vs torch | target |")
    md.append("| --- | --- | ---: | --- | --- | ---: | ---: | --- |")
    md += kp_rows
if ar_rows:
    md.append("")
    md.append("| AttnRes | attnops ms | measure | target | torch ms | speedup vs torch | target "
              "| attnops peak MiB | torch peak MiB |")
    md.append("| --- | ---: | --- | --- | ---: | ---: | --- | ---: | ---: |")
    md += ar_rows
    md.append("")
    md.append(f"AttnRes: B=1, T={res.get('attnres_T', '?')}, N=25 blocks + partial (L=26), D=4096, bf16, RMSNorm, "
              "scale 1; bytes a call must move (fwd (L+1)·BTD·2 + 2·BTL·4 + 2·D·2, bwd (2L+1)·BTD·2 + 2·BTL·4 + "
              "4·D·2) per second vs the copy bandwidth of the same round; torch = the seed's reference composed "
              "in bf16 (autograd for bwd); peak = inputs + outputs + workspace (attnops) and inputs + the "
              "process's peak-RSS rise over the call (torch; bwd includes its graph-building forward).")
if rss_rows:
    md.append("")
    md.append("| peak RSS case | inputs MiB | outputs MiB | workspace MiB | peak RSS MiB | RSS − (in+out) MiB | budget MiB |")
    md.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    md += rss_rows
for part_md in extra_md:
    md.append("")
    md.append(part_md)
md.append("")
md.append("GFLOP/s are dense-equivalent (forward 2·B·N1·S1·S2·(D+Dv), backward 2.5×) at the median time, "
          "also for masked cases (whose % of peak can pass 100); varlen cases count their real work "
          "(Σ_i 2·N1·L_i²·(D+Dv)); "
          "% of peak, speedup (torch ms / attnops ms) and the ratios between cases are medians of the per-round ratios; "
          "targets are quoted, not judged.")
text = "\n".join(md) + "\n"
with open(os.path.join(out_dir, "results.md"), "w") as f:
    f.write(text)
print()
print(text)
print(f"wrote {os.path.join(out_dir, 'results.json')} and results.md")

if os.environ.get("BENCH_UPDATE_DOCS_N") == "1":
    doc = os.path.join(root, "docs", "PERFORMANCE.md")
    begin, end = "<!-- BENCH-RESULTS:BEGIN -->", "<!-- BENCH-RESULTS:END -->"
    try:
        with open(doc) as f:
            d = f.read()
        i, j = d.index(begin) + len(begin), d.index(end)
        with open(doc, "w") as f:
            f.write(d[:i] + "\n" + text + d[j:])
        print(f"updated the results section of {doc}")
    except (OSError, ValueError) as e:
        print(f"docs not updated ({e})")
EOF
