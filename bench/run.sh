#!/usr/bin/env bash
# bench/run.sh — attnops against the libxsmm tile-GEMM peak and against
# PyTorch SDPA on the CPU, measured side by side.  `make bench` builds
# build/bench/bench_fa and then runs this script; it builds nothing itself.
#
# What it does (docs/PERFORMANCE.md has the method):
#   1. takes the case list from `bench_fa --list-cases --json` (so both
#      programs time the same shapes under the same names);
#   2. runs R rounds; each round runs bench_fa (GEMM peaks + every case, once)
#      and peer_torch.py (every case, once), alternating which goes first,
#      with the same thread count;
#   3. runs the peak-RSS cases (S=32768, N1=1, D=128, fp32, fwd and bwd), one
#      fresh process each;
#   3b. each round also runs bench_ops --op keypool and peer_keypool.py (KeyPool
#      prefill and decode), in the same alternating order;
#   3c. each round also runs bench_ops --op attnres and peer_attnres.py (Block
#      Attention Residuals forward and backward), in the same alternating
#      order; the peer measures torch's peak memory in round 1 only (--mem);
#   3d. each round also runs bench_ops --op fia and peer_fia.py
#      (FusedInferAttentionScore decode, paged, int8, speculative and MLA
#      steps against torch SDPA), in the same alternating order; on a CPU
#      with AVX-512, the decode cases again on the AVX2 path (ATTNOPS_ISA=avx2,
#      torch held to it by ATEN_CPU_CAPABILITY=avx2: part fia_avx2);
#   3e. runs bench/bench_python.py once (the Python package's per-call
#      overhead and a training step through autograd vs SDPA, R rounds of its
#      own, alternating), and with 2+ threads bench/bench_distributed.py
#      (ring attention on THREADS ranks x 1 thread vs 1 rank x THREADS threads),
#      and bench/bench_transformers.py (a small Llama's training step, and its
#      generate() of 512 tokens after a 2048-token prompt, with
#      attn_implementation "attnops" vs "sdpa", alternating rounds);
#   4. bench/bench_report.py merges everything into build/bench/results.json
#      (medians over rounds, GFLOP/s, % of peak, speedups vs torch, and the
#      ratios between cases: masked vs dense, band vs proportional, pse vs
#      plain, varlen vs the dense sequence of the same total work, dropout vs
#      none, deterministic vs default, FP8 vs bf16), prints the markdown
#      tables (cases; ratios with their targets) and writes them to
#      build/bench/results.md.  It checks nothing: no pass/fail.
#
# Environment:
#   OMP_NUM_THREADS   threads for attnops, the GEMM peak and torch (default: nproc)
#   BENCH_REPS        rounds (default 5)
#   BENCH_QUICK=1     divide every S (a varlen case's total T, band width) by 8
#                     (smoke run; also the RSS cases)
#   BENCH_CASES       case specs [NAME:]FIELDS,dir=fwd|bwd[,peer=no][,det=1]
#                     [,varlen=K|,varlen_dense=K], FIELDS the case descriptor's
#                     key=value form (verify/fa_case_shape.h), separated by
#                     spaces (default: bench_fa's built-in target cases;
#                     `bench_fa --help` lists what the bench runs).  Cases with varlen= or
#                     varlen_dense= are not passed to the torch peer.
#   BENCH_RSS=0       skip the RSS runs
#   BENCH_PARTS       what to run, of: fa kp ar fia fia_avx2 python rss (default all);
#                     a partial run does not update the docs
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
PARTS=" ${BENCH_PARTS:-fa kp ar fia fia_avx2 python rss} "
part() { [[ $PARTS == *" $1 "* ]]; }
UPDATE_DOCS=${BENCH_UPDATE_DOCS:-$([[ $QUICK == 1 || -n ${BENCH_PARTS:-} ]] && echo 0 || echo 1)}

# ---- the case list (canonical names, --quick applied) -----------------------
# bench_fa parses the specs, the one parser: the lines for its own runs, and
# cases.json (descriptors) for the torch peer and the report.
given=()
for s in ${BENCH_CASES:-}; do given+=(--case "$s"); done
mapfile -t CASES < <("$BENCH" --list-cases --json "$OUT/cases.json" "${quick_flag[@]}" "${given[@]}")
case_args=()
for s in "${CASES[@]}"; do case_args+=(--case "$s"); done
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
    "$BUILD_DIR/bench/bench_ops" --op keypool --threads "$THREADS" --json "$OUT/rounds/kp_attnops.$1.json" \
        "${quick_flag[@]}"
}
run_kp_torch() {
    "$PY" -u "$ROOT/bench/peer_keypool.py" --threads "$THREADS" --json "$OUT/rounds/kp_torch.$1.json" \
        "${quick_flag[@]}"
}
run_ar_attnops() {
    "$BUILD_DIR/bench/bench_ops" --op attnres --threads "$THREADS" --json "$OUT/rounds/ar_attnops.$1.json" \
        "${quick_flag[@]}"
}
run_ar_torch() {
    local mem=()
    (($1 == 1)) && mem=(--mem) # torch's peak memory: fresh subprocesses, once
    "$PY" -u "$ROOT/bench/peer_attnres.py" --threads "$THREADS" --json "$OUT/rounds/ar_torch.$1.json" \
        "${quick_flag[@]}" "${mem[@]}"
}
run_fia_attnops() {
    "$BUILD_DIR/bench/bench_ops" --op fia --threads "$THREADS" \
        --json "$OUT/rounds/fia_attnops.$1.json" "${quick_flag[@]}"
}
run_fia_torch() {
    "$PY" -u "$ROOT/bench/peer_fia.py" --threads "$THREADS" --json "$OUT/rounds/fia_torch.$1.json" "${quick_flag[@]}"
}
# The AVX2 path's decode cases, where the CPU has more (on an AVX2-only CPU part fia measures that path).
FIA_AVX2_CASES=(decode_bf16 decode_f16 decode_f32 decode_paged_bf16 long_bf16)
grep -qw avx512f /proc/cpuinfo 2>/dev/null || PARTS=${PARTS/ fia_avx2 / }
run_fia_avx2_attnops() {
    local only=() c
    for c in "${FIA_AVX2_CASES[@]}"; do only+=(--case "fia_$c"); done
    ATTNOPS_ISA=avx2 "$BUILD_DIR/bench/bench_ops" --op fia --threads "$THREADS" "${only[@]}" \
        --json "$OUT/rounds/fia_avx2_attnops.$1.json" "${quick_flag[@]}"
}
run_fia_avx2_torch() {
    local IFS=,
    ATEN_CPU_CAPABILITY=avx2 "$PY" -u "$ROOT/bench/peer_fia.py" --threads "$THREADS" --cases "${FIA_AVX2_CASES[*]}" \
        --json "$OUT/rounds/fia_avx2_torch.$1.json" "${quick_flag[@]}"
}
run_attnops() {
    "$BENCH" --threads "$THREADS" --reps 1 --json "$OUT/rounds/attnops.$1.json" "${case_args[@]}"
}
run_torch() {
    # unbuffered so the two programs' outputs interleave in order
    "$PY" -u "$ROOT/bench/peer_torch.py" --threads "$THREADS" --reps 1 --json "$OUT/rounds/torch.$1.json" \
        --cases "$OUT/cases.json"
}

# ---- rounds, alternating ------------------------------------------------------
# each part's two programs, attnops first in odd rounds (torch second), the reverse in even ones
pair() { # pair ROUND ATTNOPS_FN TORCH_FN
    if (($1 % 2 == 1)) || ((have_torch == 0)); then
        "$2" "$1"
        ((have_torch)) && "$3" "$1"
    else
        "$3" "$1"
        "$2" "$1"
    fi
    return 0
}
for ((r = 1; r <= REPS; r++)); do
    echo "== round $r/$REPS"
    part fa && pair "$r" run_attnops run_torch
    part kp && pair "$r" run_kp_attnops run_kp_torch
    part ar && pair "$r" run_ar_attnops run_ar_torch
    part fia && pair "$r" run_fia_attnops run_fia_torch
    part fia_avx2 && pair "$r" run_fia_avx2_attnops run_fia_avx2_torch
done

# ---- the Python package ---------------------------------------------------------
rm -f "$OUT/python.json" "$OUT/python.md" "$OUT/cp.json" "$OUT/cp.md" "$OUT/transformers.json" "$OUT/transformers.md" \
    "$OUT/transformers_generate.json" "$OUT/transformers_generate.md"
if ! part python; then
    :
elif ((have_torch)) && "$PY" -c 'import attnops' 2>/dev/null; then
    echo "== Python package: per-call overhead, training step vs SDPA"
    "$PY" -u "$ROOT/bench/bench_python.py" --threads "$THREADS" --reps "$REPS" "${quick_flag[@]}" \
        --floor-build-dir "$OUT/torch_floor" --json "$OUT/python.json" --md "$OUT/python.md"
    echo "== transformers: a Llama training step, attn_implementation attnops vs sdpa"
    "$PY" -u "$ROOT/bench/bench_transformers.py" --threads "$THREADS" --reps "$REPS" \
        --seq "$([[ $QUICK == 1 ]] && echo 256 || echo 2048)" --json "$OUT/transformers.json" --md "$OUT/transformers.md"
    echo "== transformers: generate(), attn_implementation attnops vs sdpa"
    "$PY" -u "$ROOT/bench/bench_transformers.py" --threads "$THREADS" --reps "$REPS" \
        --seq "$([[ $QUICK == 1 ]] && echo 256 || echo 2048)" --generate "$([[ $QUICK == 1 ]] && echo 32 || echo 512)" \
        --json "$OUT/transformers_generate.json" --md "$OUT/transformers_generate.md"
    if ((THREADS >= 2)); then
        echo "== context parallelism: $THREADS ranks x 1 thread vs 1 rank x $THREADS threads"
        "$PY" -u "$ROOT/bench/bench_distributed.py" --ranks "$THREADS" --reps "$REPS" \
            --seq "$([[ $QUICK == 1 ]] && echo 1024 || echo 8192)" --json "$OUT/cp.json" --md "$OUT/cp.md"
    fi
else
    echo "bench/run.sh: the attnops Python package is not installed in $PY (make test installs it); skipped" >&2
fi

# ---- peak RSS: one fresh process per case -------------------------------------
if [[ ${BENCH_RSS:-1} != 0 ]] && part rss; then
    for dir in fwd bwd; do
        echo "== peak RSS: $dir f32, B=1, N1=1, S=32768 (S/8 when quick), D=128"
        "$BENCH" --threads "$THREADS" --json "$OUT/rss_$dir.json" "${quick_flag[@]}" \
            --rss "B=1,N1=1,N2=1,S1=32768,S2=32768,D=128,Dv=128,dtype=f32,layout=BNSD,dir=$dir"
    done
fi

# ---- merge, table (bench/bench_report.py) ------------------------------------------
report_args=(--out "$OUT" --cases "$OUT/cases.json" --threads "$THREADS"
    --git "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    --cpu "$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || echo unknown)")
[[ $QUICK == 1 ]] && report_args+=(--quick)
[[ $UPDATE_DOCS == 1 ]] && report_args+=(--update-docs "$ROOT/docs/PERFORMANCE.md")
python3 "$ROOT/bench/bench_report.py" "${report_args[@]}"
