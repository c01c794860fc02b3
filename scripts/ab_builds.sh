#!/usr/bin/env bash
# scripts/ab_builds.sh — the benchmark speed of two builds side by side ("A/B"):
# BASE_REV (a git revision) against the current work tree, committed or not.
# docs/PERFORMANCE_LOG.md's "A/B against the per-ISA kernels" table (2026-12-04) is its output.
#
#   scripts/ab_builds.sh BASE_REV [--rounds N] [--threads N] [--isa LIST]
#                        [--quick] [--case SPEC]... [--out DIR]
#
# What it does:
#   1. builds the work tree into $AB_NEW_BUILD (default /tmp/ab-new-build; kept,
#      so a second run rebuilds only what changed), and BASE_REV, checked out
#      with `git worktree add --detach` into $AB_BASE_SRC (default
#      /tmp/ab-base-src; removed again on exit), into $AB_BASE_BUILD (default
#      /tmp/ab-base-build; emptied first), both with
#      `cmake -DCMAKE_BUILD_TYPE=Release` and only the bench programs: bench_fa,
#      and for KeyPool and AttnRes bench_ops, or in a revision without it
#      bench_attnres and bench_keypool (the same JSON keys, so their rows pair);
#   2. for every ISA of --isa, forced with ATTNOPS_ISA: asks both builds which
#      ISA they then run (the JSON's attnops_isa) and leaves out, as SKIPPED,
#      an ISA that either build does not run as named (the CPU lacks it, or
#      the build does not know it);
#   3. runs N rounds; in each, for each ISA: both builds' bench_fa (the cases,
#      --reps 1 --no-peak) one after the other, then both builds' KeyPool and
#      AttnRes programs, base first in odd rounds and new first in even ones;
#      every run writes its JSON to DIR/raw/r<round>.<isa>.<base|new>.<prog>.json
#      (its output to the .log beside it), and checks it ran the forced ISA;
#   4. scripts/ab_table.py reads those files and prints, per ISA and case, the
#      median over rounds of each build's time and the median (and the range)
#      of the per-round new / base ratios as a Markdown table; it writes the
#      table to DIR/ab.md and the numbers to DIR/ab.json.  Nothing is judged.
#
# Options:
#   --rounds N    rounds (default 5)
#   --threads N   --threads and OMP_NUM_THREADS of every program (default: nproc)
#   --isa LIST    comma-separated ATTNOPS_ISA names (default: avx2,avx512 on
#                 x86-64, neon on aarch64, else the CPU's default ISA)
#   --quick       the programs' --quick (bench_fa: S/8, so S=512; AttnRes
#                 T=512; KeyPool prefill S=512): a smoke run of a few minutes
#   --case SPEC   a bench_fa case (bench/README.md; repeatable) instead of the
#                 default four: B=1, N1=N2=8, S=4096, D=Dv=128, BNSD,
#                 fwd/bwd x f32/bf16
#   --out DIR     where ab.md, ab.json, raw/ and the build logs go
#                 (default /tmp/ab-out; its raw/ is emptied first)
#   -h, --help    this text
#
# Environment: AB_NEW_BUILD, AB_BASE_BUILD, AB_BASE_SRC (the paths above),
# AB_JOBS (build jobs, default nproc).  Two runs at once must not share them.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=scripts/ab_builds.sh

usage() {
    cat <<EOF
usage: $PROG BASE_REV [--rounds N] [--threads N] [--isa LIST] [--quick]
                           [--case SPEC]... [--out DIR]
  Builds BASE_REV (a git worktree under /tmp) and the current work tree, then
  times both builds' bench_fa cases and KeyPool and AttnRes (bench_ops, or
  bench_keypool and bench_attnres before it), the two builds alternating, per
  ISA forced with ATTNOPS_ISA; prints a Markdown table (per ISA and case: base
  and new median ms, median and range of the per-round new / base ratios) and
  writes it to DIR/ab.md, the raw JSON to DIR/raw/.
  --rounds N    rounds (default 5); the build that goes first alternates
  --threads N   threads of every program (default: nproc = $(nproc))
  --isa LIST    comma-separated ATTNOPS_ISA names (default avx2,avx512 on
                x86-64, neon on aarch64); an ISA the CPU lacks is SKIPPED
  --quick       the programs' --quick (FA S=512, AttnRes T=512, KeyPool S=512)
  --case SPEC   a bench_fa case instead of the default four (repeatable):
                B=1,N1=8,N2=8,S1=4096,S2=4096,D=128,Dv=128 fwd/bwd x f32/bf16
  --out DIR     output directory (default /tmp/ab-out)
  -h, --help    this text
Example (docs/PERFORMANCE.md's table):
  $PROG ed7f8d4 --rounds 6 --threads 2 --isa avx2,avx512
EOF
}
bad() {
    printf '%s: %s\n' "$PROG" "$*" >&2
    usage >&2
    exit 2
}
say() { printf 'ab_builds: %s\n' "$*"; }
die() {
    printf 'ab_builds: ERROR: %s\n' "$*" >&2
    exit 1
}

# ---- arguments -------------------------------------------------------------------
BASE_REV=
ROUNDS=5
THREADS=$(nproc)
ISA_LIST=
QUICK=0
OUT=/tmp/ab-out
CASES=()
need_val() { [[ $# -ge 2 && -n $2 ]] || bad "$1 needs a value"; }
while [[ $# -gt 0 ]]; do
    case $1 in
    -h | --help)
        usage
        exit 0
        ;;
    --rounds)
        need_val "$@"
        ROUNDS=$2
        shift 2
        ;;
    --threads)
        need_val "$@"
        THREADS=$2
        shift 2
        ;;
    --isa)
        need_val "$@"
        ISA_LIST=$2
        shift 2
        ;;
    --out)
        need_val "$@"
        OUT=$2
        shift 2
        ;;
    --case)
        need_val "$@"
        CASES+=("$2")
        shift 2
        ;;
    --quick)
        QUICK=1
        shift
        ;;
    -*) bad "unknown option: $1" ;;
    *)
        [[ -z $BASE_REV ]] || bad "one BASE_REV only (got '$BASE_REV' and '$1')"
        BASE_REV=$1
        shift
        ;;
    esac
done
[[ -n $BASE_REV ]] || bad "BASE_REV is missing"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || bad "--rounds must be a positive integer (got '$ROUNDS')"
[[ $THREADS =~ ^[1-9][0-9]*$ ]] || bad "--threads must be a positive integer (got '$THREADS')"
if [[ -z $ISA_LIST ]]; then
    case $(uname -m) in
    x86_64) ISA_LIST=avx2,avx512 ;;
    aarch64) ISA_LIST=neon ;;
    *) ISA_LIST=default ;;
    esac
fi
[[ $ISA_LIST =~ ^[a-z0-9_]+(,[a-z0-9_]+)*$ ]] || bad "--isa takes comma-separated ISA names (got '$ISA_LIST')"
IFS=, read -r -a ISAS <<<"$ISA_LIST"
BASE_SHA=$(git -C "$ROOT" rev-parse --verify --quiet "$BASE_REV^{commit}") ||
    bad "BASE_REV '$BASE_REV' is not a commit of $ROOT"

DEFAULT_CASES=0
if ((${#CASES[@]} == 0)); then
    DEFAULT_CASES=1
    for dir in fwd bwd; do
        for dt in f32 bf16; do
            CASES+=("B=1,N1=8,N2=8,S1=4096,S2=4096,D=128,Dv=128,dtype=$dt,layout=BNSD,dir=$dir")
        done
    done
fi

NEW_BUILD=${AB_NEW_BUILD:-/tmp/ab-new-build}
BASE_BUILD=${AB_BASE_BUILD:-/tmp/ab-base-build}
BASE_SRC=${AB_BASE_SRC:-/tmp/ab-base-src}
JOBS=${AB_JOBS:-$(nproc)}
PY=python3
[[ -x $ROOT/.venv/bin/python ]] && PY=$ROOT/.venv/bin/python
# as the Makefile does: CMake finds the venv's python3 first
[[ -d $ROOT/.venv/bin ]] && export PATH=$ROOT/.venv/bin:$PATH
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/raw"
mkdir -p "$OUT/raw"

BASE_SHORT=$(git -C "$ROOT" rev-parse --short "$BASE_SHA")
NEW_SHORT=$(git -C "$ROOT" rev-parse --short HEAD)
NEW_DESC=$NEW_SHORT
if [[ -n $(git -C "$ROOT" status --porcelain 2>/dev/null) ]]; then
    NEW_DESC="$NEW_SHORT + uncommitted changes"
fi

# ---- the base worktree, removed on exit --------------------------------------------
WORKTREE_ADDED=0
cleanup() {
    if ((WORKTREE_ADDED)); then
        git -C "$ROOT" worktree remove --force "$BASE_SRC" ||
            printf 'ab_builds: could not remove the worktree %s (git worktree remove --force %s)\n' \
                "$BASE_SRC" "$BASE_SRC" >&2
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if git -C "$ROOT" worktree list --porcelain | grep -qxF "worktree $BASE_SRC"; then
    say "removing the worktree $BASE_SRC a previous run left"
    git -C "$ROOT" worktree remove --force "$BASE_SRC"
elif [[ -e $BASE_SRC ]]; then
    die "$BASE_SRC exists and is not a worktree of $ROOT; remove it or set AB_BASE_SRC"
fi
say "base: $BASE_REV = $BASE_SHORT, checked out into $BASE_SRC"
git -C "$ROOT" worktree add --quiet --detach "$BASE_SRC" "$BASE_SHA"
WORKTREE_ADDED=1

# ---- the builds ----------------------------------------------------------------------
# Each source's bench programs, by tag: fa = bench_fa (required); KeyPool and
# AttnRes: ops = bench_ops where the source has it, else ar = bench_attnres and
# kp = bench_keypool (the revisions before bench_ops).  Both write the same
# keys (kp_prefill_ms_median, attnres_fwd_ms_median, ...), so the table pairs
# their rows whichever program each build has.
declare -A BIN=([fa]=bench_fa [ops]=bench_ops [ar]=bench_attnres [kp]=bench_keypool)
progs_of() { # SRC -> tags
    local src=$1 out=()
    [[ -f $src/bench/bench_fa.c ]] || die "$src has no bench/bench_fa.c"
    out+=(fa)
    if [[ -f $src/bench/bench_ops.c ]]; then
        out+=(ops)
    else
        [[ -f $src/bench/bench_attnres.c ]] && out+=(ar)
        [[ -f $src/bench/bench_keypool.c ]] && out+=(kp)
    fi
    echo "${out[*]}"
}
declare -A PROGS
PROGS[base]=$(progs_of "$BASE_SRC")
PROGS[new]=$(progs_of "$ROOT")
names_of() { # BUILD -> program names
    local p out=()
    for p in ${PROGS[$1]}; do out+=("${BIN[$p]}"); done
    echo "${out[*]}"
}

build() { # SRC DIR LABEL
    local log=$OUT/build_$3.log targets
    read -r -a targets <<<"$(names_of "$3")"
    say "building $3 ($1) into $2: ${targets[*]} (log: $log)"
    if ! { cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release &&
        cmake --build "$2" -j"$JOBS" --target "${targets[@]}"; } >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        die "the $3 build failed (log: $log)"
    fi
}
case $BASE_BUILD in
/ | "$ROOT" | "$HOME" | "$NEW_BUILD") die "AB_BASE_BUILD=$BASE_BUILD would be emptied; choose a build directory of its own" ;;
esac
rm -rf "$BASE_BUILD" # another revision's cache must not leak in
build "$BASE_SRC" "$BASE_BUILD" base
build "$ROOT" "$NEW_BUILD" new
declare -A BDIR=([base]=$BASE_BUILD/bench [new]=$NEW_BUILD/bench)

quick=()
((QUICK)) && quick=(--quick)
case_args=()
for s in "${CASES[@]}"; do case_args+=(--case "$s"); done
export OMP_NUM_THREADS=$THREADS

json_isa() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("attnops_isa", "?"))' "$1"; }

# ---- which ISA each build runs ------------------------------------------------------------
PROBE=(--threads 1 --reps 1 --no-peak --case "B=1,N1=1,N2=1,S1=64,S2=64,D=64,Dv=64,dtype=f32,dir=fwd")
probe() { # BUILD ISA|default -> the ISA the build runs
    local j=$OUT/raw/probe.$1.$2.json
    if [[ $2 == default ]]; then
        env -u ATTNOPS_ISA "${BDIR[$1]}/bench_fa" "${PROBE[@]}" --json "$j" >"${j%.json}.log" 2>&1
    else
        ATTNOPS_ISA=$2 "${BDIR[$1]}/bench_fa" "${PROBE[@]}" --json "$j" >"${j%.json}.log" 2>&1
    fi || die "bench_fa of the $1 build failed (${j%.json}.log)"
    json_isa "$j"
}
DEFAULT_ISA=$(probe new default)
CPU=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("cpu_model", "?"))' \
    "$OUT/raw/probe.new.default.json")
RUN_ISAS=()
SKIPPED=()
for isa in "${ISAS[@]}"; do
    if [[ $isa == default ]]; then
        RUN_ISAS+=("$isa")
        continue
    fi
    why=
    for b in base new; do
        got=$(probe "$b" "$isa")
        [[ $got == "$isa" ]] || why+="${why:+; }the $b build runs $got"
    done
    if [[ -n $why ]]; then
        say "SKIPPED $isa: ATTNOPS_ISA=$isa is not run as named ($why)"
        SKIPPED+=("$isa ($why)")
    else
        RUN_ISAS+=("$isa")
    fi
done
((${#RUN_ISAS[@]})) || die "no ISA of '$ISA_LIST' to run"
say "cpu: $CPU (default ISA $DEFAULT_ISA); ISAs: ${RUN_ISAS[*]}; $ROUNDS rounds, $THREADS threads$(
    ((QUICK)) && echo ', quick'
)"
say "base $BASE_SHORT, new $NEW_DESC"

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
# ---- the rounds -------------------------------------------------------------------------------
run_one() { # ROUND ISA BUILD PROG
    local j=$OUT/raw/r$1.$2.$3.$4.json args=(--threads "$THREADS" --json "$OUT/raw/r$1.$2.$3.$4.json" "${quick[@]}")
    if [[ $4 == fa ]]; then args+=(--reps 1 --no-peak "${case_args[@]}"); fi
    local t0=$SECONDS
    if [[ $2 == default ]]; then
        env -u ATTNOPS_ISA "${BDIR[$3]}/${BIN[$4]}" "${args[@]}" >"${j%.json}.log" 2>&1
    else
        ATTNOPS_ISA=$2 "${BDIR[$3]}/${BIN[$4]}" "${args[@]}" >"${j%.json}.log" 2>&1
    fi || {
        tail -n 20 "${j%.json}.log" >&2
        die "$3 ${BIN[$4]} failed in round $1, ISA $2 (${j%.json}.log)"
    }
    local got
    got=$(json_isa "$j")
    [[ $2 == default || $got == "$2" ]] || die "$3 ${BIN[$4]} ran $got, not the forced $2 ($j)"
    say "  $2 $3 ${BIN[$4]}: $((SECONDS - t0)) s"
}
for ((r = 1; r <= ROUNDS; r++)); do
    if ((r % 2)); then order=(base new); else order=(new base); fi
    say "round $r/$ROUNDS (${order[0]} first)"
    for isa in "${RUN_ISAS[@]}"; do
        # FlashAttention: base's and new's bench_fa back to back; then the
        # other operators: the one build's programs, then the other's
        for b in "${order[@]}"; do run_one "$r" "$isa" "$b" fa; done
        for b in "${order[@]}"; do
            for p in ${PROGS[$b]}; do
                [[ $p == fa ]] || run_one "$r" "$isa" "$b" "$p"
            done
        done
    done
done

# ---- the table ----------------------------------------------------------------------------------
table_args=(--raw "$OUT/raw" --md "$OUT/ab.md" --json "$OUT/ab.json"
    --base "$BASE_SHORT" --base-arg "$BASE_REV" --new "$NEW_DESC"
    --cpu "$CPU" --default-isa "$DEFAULT_ISA" --isas "$(
        IFS=,
        echo "${RUN_ISAS[*]}"
    )"
    --rounds "$ROUNDS" --threads "$THREADS"
    --programs-base "$(names_of base)" --programs-new "$(names_of new)"
    --load "$LOAD_START → $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')")
((QUICK)) && table_args+=(--quick)
for s in "${SKIPPED[@]}"; do table_args+=(--skipped "$s"); done
((DEFAULT_CASES)) || for s in "${CASES[@]}"; do table_args+=(--case "$s"); done
echo
"$PY" "$ROOT/scripts/ab_table.py" "${table_args[@]}"
echo
say "wrote $OUT/ab.md, $OUT/ab.json and the rounds' JSON in $OUT/raw/"
