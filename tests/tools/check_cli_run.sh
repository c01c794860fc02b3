#!/usr/bin/env bash
# The harness CLI's exit codes and messages: `attnops run` of the built-in
# suites passes (0) and writes the seed's run_log lines; a failing verdict
# gives 1 with FAIL lines and coordinates (a too-strict rule, and the
# broken backward kernel: attnops_broken, tests/support/broken_cli.c); bad
# arguments and files give 2 and one line.
# KeyPool: keypool-seed is listed with 4 cases and passes, alone and mixed
# with FlashAttention cases; its outputs reach run_log.txt, --save, --report.
# AttnRes: attnres-seed is listed with 2 cases and passes by the triple rule
# (the seed's outputs a line each, the other blocks' gradients judged one by
# one and summarised, every one in run_log.txt); AttnRes cases mix with the
# other ops, reach --save (all three chains), --report and --rows; a rule the
# kernel cannot meet fails on every block it fails on.  list --support
# prints the drivers' table; demo names a bad option's value.
# Usage: check_cli_run.sh ATTNOPS_BINARY ATTNOPS_BROKEN_BINARY
set -u
bin=$1 broken=$2
# Run once per ISA by ctest (ATTNOPS_ISA): skipped (exit 77) where the CPU lacks it.
if [ -n "${ATTNOPS_ISA:-}" ] && ! "$bin" version 2>/dev/null | grep -qx "isa: $ATTNOPS_ISA"; then
    echo "SKIPPED: ATTNOPS_ISA=$ATTNOPS_ISA: this CPU lacks it"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # check NAME EXPECTED_RC PATTERN -- command...
    local name=$1 want=$2 pattern=$3
    shift 4
    "$@" >"$tmp/out" 2>&1
    local rc=$?
    if [ "$rc" != "$want" ] || ! grep -qE -- "$pattern" "$tmp/out"; then
        echo "FAIL $name: exit $rc (expected $want), output lacks /$pattern/:"
        head -5 "$tmp/out"
        fails=$((fails + 1))
    else
        echo "ok   $name"
    fi
}

check "built-in suites pass" 0 "^9 of 9 cases passed" -- "$bin" run fag-seed pypto-fag --log "$tmp/run_log.txt"
grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+  GQA_01 dq diff_max : [0-9.]+$' "$tmp/run_log.txt" \
    && echo "ok   run_log.txt in the seed's format" || { echo "FAIL run_log.txt lines"; fails=$((fails + 1)); }
check "list" 0 "^fag-matrix +222 cases" -- "$bin" list
check "list shows keypool-seed" 0 "^keypool-seed +4 cases: bsh_norm_off_history th_norm_on_zero_batch" -- "$bin" list
check "keypool-seed passes" 0 "^4 of 4 cases passed" -- "$bin" run keypool-seed --log "$tmp/kp_log.txt"
grep -qE '^[0-9]{4}-[0-9-]+ [0-9:.]+  th_norm_on_zero_batch pooled_key ratio : 1\.000000 pass$' "$tmp/kp_log.txt" \
    && grep -q 'bsh_norm_off_history state_cache_out diff_max' "$tmp/kp_log.txt" \
    && echo "ok   KeyPool run_log.txt lines" || { echo "FAIL KeyPool run_log.txt lines"; fails=$((fails + 1)); }
check "keypool verdict lines" 0 "^PASS th_norm_on_zero_batch pooled_key \[isclose\].* 0 of 128 counted elements" -- \
    "$bin" run keypool-seed --filter zero_batch --log -
check "mixed FlashAttention and KeyPool" 0 "^3 of 3 cases passed" -- \
    "$bin" run keypool-seed fag-seed --filter 'GQA|history' --log - --report "$tmp/mixed.html"
grep -q '<caption>7 of 7 outputs pass</caption>' "$tmp/mixed.html" && grep -q 'state_cache_out' "$tmp/mixed.html" \
    && echo "ok   --report holds KeyPool outputs" || { echo "FAIL --report of a mixed run"; fails=$((fails + 1)); }
check "list shows attnres-seed" 0 "^attnres-seed +2 cases: b2_t4096_n25_d512_bf16 b1_t1023_n32_d512_bf16$" -- "$bin" list
check "attnres-seed passes" 0 "^2 of 2 cases passed" -- "$bin" run attnres-seed --log "$tmp/ar_log.txt"
grep -qE '^PASS b2_t4096_n25_d512_bf16 grad_block_00 \[triple\] mare_ratio [0-9.e-]+ \(<= 2\) mere_ratio' "$tmp/out" \
    && grep -qE '^PASS b2_t4096_n25_d512_bf16 grad_block_01\.\.grad_block_24 \[triple\] 24 of 24 pass; worst mare_ratio' "$tmp/out" \
    && grep -qE '^PASS b1_t1023_n32_d512_bf16 grad_block_01\.\.grad_block_31 \[triple\] 31 of 31 pass' "$tmp/out" \
    && [ "$(grep -c '^PASS b1_t1023_n32_d512_bf16 ' "$tmp/out")" = 8 ] \
    && echo "ok   AttnRes verdict lines: the seed's outputs, the other blocks summarised" \
    || { echo "FAIL AttnRes verdict lines"; fails=$((fails + 1)); }
[ "$(grep -cE '  b1_t1023_n32_d512_bf16 grad_block_[0-9]+ ratio : 1\.000000 pass$' "$tmp/ar_log.txt")" = 32 ] \
    && grep -q 'b2_t4096_n25_d512_bf16 grad_rmsnorm_gamma diff_max' "$tmp/ar_log.txt" \
    && echo "ok   AttnRes run_log.txt lines, every block's gradient" || { echo "FAIL AttnRes run_log.txt"; fails=$((fails + 1)); }
cat >"$tmp/ar.json" <<'JSON'
{"ar_fp16": {"op": "attnres", "B": 2, "T": 33, "N": 5, "D": 96, "dtype": "fp16", "scale": 0.8, "random_gamma": true},
 "ar_plain": {"op": "attnres", "B": 1, "T": 17, "N": 3, "D": 40, "dtype": "fp32", "partial": false, "rmsnorm": false}}
JSON
check "mixed AttnRes, KeyPool and FlashAttention" 0 "^5 of 5 cases passed" -- \
    "$bin" run "$tmp/ar.json" keypool-seed fag-seed --filter 'GQA|history|ar_' --log - --report "$tmp/ar_mixed.html" \
    --save "$tmp/ar_saved"
grep -q '<caption>24 of 24 outputs pass</caption>' "$tmp/ar_mixed.html" && grep -q 'grad_block_04' "$tmp/ar_mixed.html" \
    && echo "ok   --report holds AttnRes outputs" || { echo "FAIL --report of a mixed AttnRes run"; fails=$((fails + 1)); }
[ -s "$tmp/ar_saved/ar_fp16/block_04.npy" ] && [ -s "$tmp/ar_saved/ar_fp16/grad_block_04.npy" ] \
    && [ -s "$tmp/ar_saved/ar_fp16/kernel_grad_block_04.npy" ] && [ -s "$tmp/ar_saved/ar_fp16/bench_rms.npy" ] \
    && [ ! -e "$tmp/ar_saved/ar_plain/rms.npy" ] && [ ! -e "$tmp/ar_saved/ar_plain/partial_block.npy" ] \
    && grep -q '"op":[[:space:]]*"attnres"' "$tmp/ar_saved/manifest.json" \
    && grep -q '"role":[[:space:]]*"bench"' "$tmp/ar_saved/manifest.json" \
    && echo "ok   --save writes AttnRes's three chains and a manifest" || { echo "FAIL AttnRes --save files"; fails=$((fails + 1)); }
printf '{"ar_strict": {"op": "attnres", "B": 2, "T": 64, "N": 4, "D": 256, "dtype": "fp16", "compare": "ten-thousandth"}}' \
    >"$tmp/ar_strict.json"
check "AttnRes: a rule the kernel cannot meet fails per block" 1 \
    "^FAIL ar_strict grad_block_01\.\.grad_block_03 \[ten-thousandth\] 0 of 3 pass" -- "$bin" run "$tmp/ar_strict.json" --log -
grep -q '^FAIL ar_strict grad_block_02 \[ten-thousandth\].*worst at \[' "$tmp/out" \
    && echo "ok   a failing AttnRes block gets its own verdict line" || { echo "FAIL AttnRes block line"; fails=$((fails + 1)); }
check "AttnRes --rows" 1 "rows with most failures \(of 128 rows of 256\)" -- "$bin" run "$tmp/ar_strict.json" --log - --rows
printf '{"op": "attnres", "B": 1, "T": 3, "N": 2, "D": 8, "rms": true}' >"$tmp/ar_field.json"
check "unknown AttnRes field" 2 "field 'rms' is not a known AttnRes case field" -- "$bin" run "$tmp/ar_field.json"
printf '{"op": "keypool", "layout": "BSH", "lens": [5], "block_size": 4, "colour": 1}' >"$tmp/kp_field.json"
check "unknown KeyPool field" 2 "field 'colour' is not a known KeyPool case field" -- "$bin" run "$tmp/kp_field.json"
check "keypool save" 0 "^1 of 1 cases passed" -- "$bin" run keypool-seed --filter zero_batch --log - --save "$tmp/kp_saved"
[ -s "$tmp/kp_saved/th_norm_on_zero_batch/kernel_pooled_key.npy" ] \
    && [ -s "$tmp/kp_saved/th_norm_on_zero_batch/kernel_state_cache_out.npy" ] \
    && [ -s "$tmp/kp_saved/th_norm_on_zero_batch/valid_rows.npy" ] \
    && grep -q '"op":[[:space:]]*"keypool"' "$tmp/kp_saved/manifest.json" \
    && echo "ok   --save writes KeyPool's chains and a manifest" || { echo "FAIL KeyPool --save files"; fails=$((fails + 1)); }
check "filter" 0 "^1 of 1 cases passed" -- "$bin" run fag-seed --filter '^GQA' --log -
# bf16 without "compare": PyPTO's bf16 rule (the dual rule is finer than a bf16 rounding step), and the
# fast forward's outputs judged by it in auto_grad.
cat >"$tmp/bf16.json" <<'JSON'
{"bf": {"B": 1, "N1": 2, "N2": 1, "S1": 200, "S2": 300, "D": 64, "dtype": "bf16", "input_layout": "BSND"}}
JSON
check "a bf16 case's default rule, auto_grad" 0 "^PASS bf attention_out \[allclose\]" -- \
    "$bin" run "$tmp/bf16.json" --mode auto_grad --log -
cat >"$tmp/strict.json" <<'JSON'
{"strict": {"B": 1, "N1": 2, "N2": 1, "S1": 130, "S2": 70, "D": 64, "dtype": "bf16", "input_layout": "BSND",
            "compare": "ten-thousandth"}}
JSON
cat >"$tmp/named_b.json" <<'JSON'
{"b": {"B": 1, "N1": 2, "N2": 1, "S1": 16, "S2": 16, "D": 16, "dtype": "fp16", "input_layout": "BSND"}}
JSON
check "a case named like a field (\"b\") is a named case" 0 "^1 of 1 cases passed" -- "$bin" run "$tmp/named_b.json" --log -
cat >"$tmp/refused.json" <<'JSON'
{"refused": {"B": 1, "N1": 3, "N2": 2, "S1": 16, "S2": 16, "D": 16, "dtype": "fp16", "input_layout": "BSND"}}
JSON
check "a refused case names its status and CANN's number" 1 \
    "^FAIL refused: FlashAttentionScore: .*\(ATTNOPS_ERR_PARAM_INVALID 161002\)$" -- "$bin" run "$tmp/refused.json" --log -
cat >"$tmp/mixed_refused.json" <<'JSON'
{"refused": {"B": 1, "N1": 3, "N2": 2, "S1": 16, "S2": 16, "D": 16, "dtype": "fp16", "input_layout": "BSND"},
 "fine": {"B": 1, "N1": 2, "N2": 1, "S1": 16, "S2": 16, "D": 16, "dtype": "fp16", "input_layout": "BSND"}}
JSON
check "golden reports a refused case and exports the others" 1 "^golden fine: " -- \
    "$bin" golden "$tmp/mixed_refused.json" --out "$tmp/golden_mixed"
grep -q "case refused: .*(ATTNOPS_ERR_PARAM_INVALID 161002)$" "$tmp/out" && [ -d "$tmp/golden_mixed/fine" ] && [ ! -e "$tmp/golden_mixed/refused" ] \
    && echo "ok   the refused case is named with its status and number, the good one exported" \
    || { echo "FAIL golden with a refused case"; head -5 "$tmp/out"; fails=$((fails + 1)); }
cat >"$tmp/shifted.json" <<'JSON'
{"shifted": {"B": 1, "N1": 2, "N2": 2, "S1": 24, "S2": 24, "D": 16, "dtype": "fp16", "input_layout": "BSND",
             "pse_type": 2, "pse_shape": "N", "q_start_idx": 5, "kv_start_idx": 2},
 "plain": {"B": 1, "N1": 2, "N2": 2, "S1": 24, "S2": 24, "D": 16, "dtype": "fp16", "input_layout": "BSND",
           "pse_type": 2, "pse_shape": "N"}}
JSON
check "q_start_idx / kv_start_idx from a case file" 0 "^2 of 2 cases passed" -- "$bin" run "$tmp/shifted.json" --log -
"$bin" golden "$tmp/shifted.json" --out "$tmp/golden_shifted" >/dev/null 2>&1
[ -f "$tmp/golden_shifted/shifted/q_start_idx.npy" ] && [ ! -e "$tmp/golden_shifted/plain/q_start_idx.npy" ] \
    && ! cmp -s "$tmp/golden_shifted/shifted/dq.npy" "$tmp/golden_shifted/plain/dq.npy" \
    && cmp -s "$tmp/golden_shifted/shifted/query.npy" "$tmp/golden_shifted/plain/query.npy" \
    && echo "ok   the start indices reach the golden (same inputs, different dq)" \
    || { echo "FAIL q_start_idx / kv_start_idx do not reach the golden"; fails=$((fails + 1)); }
check "a rule the kernel cannot meet fails" 1 "^FAIL strict dq \[ten-thousandth\].*worst at \[" -- \
    "$bin" run "$tmp/strict.json" --log -
check "the broken kernel fails with coordinates" 1 "^FAIL GQA_01 dq \[dual\].*worst at \[0,[0-9]+,[0-9]+,[0-9]+\]" -- \
    "$broken" run fag-seed --filter GQA --log -
cat >"$tmp/triple.json" <<'JSON'
{"t16": {"B": 1, "N1": 2, "N2": 1, "S1": 130, "S2": 97, "D": 64, "dtype": "fp16", "input_layout": "BSND",
         "compare": "triple", "sparse_mode": 2, "atten_mask_shape": "SS", "atten_mask_dtype": "BOOL"},
 "tbf": {"B": 2, "N1": 2, "N2": 2, "S1": 64, "S2": 128, "D": 32, "dtype": "bf16", "input_layout": "BNSD",
         "compare": "triple", "drop_out_possibility": 0.9}}
JSON
check "triple against the benchmark chain" 0 "^2 of 2 cases passed" -- "$bin" run "$tmp/triple.json" --log -
check "triple sees the broken kernel" 1 "^FAIL t16 dq \[triple\] mare_ratio" -- \
    "$broken" run "$tmp/triple.json" --log -
check "missing file" 2 "is not a built-in suite .*, and as a file: .*none.json: No such file" -- "$bin" run "$tmp/none.json"
printf '{"B": 1,' >"$tmp/bad.json"
check "bad JSON" 2 "not valid JSON" -- "$bin" run "$tmp/bad.json"
printf '{"B": 1, "S1": 3, "S2": 3, "N1": 1, "N2": 1, "D": 8, "dtype": "fp16", "input_layout": "BSND", "colour": 1}' \
    >"$tmp/field.json"
check "unknown field" 2 "field 'colour' is not a known case field" -- "$bin" run "$tmp/field.json"
# Hostile case files (docs/RELIABILITY.md): each refused with the file, the case and the field, nothing allocated or written.
small='"B": 1, "S1": 3, "S2": 3, "N1": 1, "N2": 1, "D": 8, "dtype": "fp16", "input_layout": "BSND"'
printf '{"../../escape": {%s}}' "$small" >"$tmp/evil_name.json"
check "a case name that leaves the export directory" 2 "case '../../escape': has a name that is not 1 to 63" -- \
    "$bin" golden "$tmp/evil_name.json" --out "$tmp/evil_out"
[ ! -e "$tmp/escape" ] && [ ! -e "$tmp/evil_out/../escape" ] && echo "ok   nothing written outside" \
    || { echo "FAIL a hostile case name wrote outside the export"; fails=$((fails + 1)); }
printf '[{"name": "twin", %s}, {"name": "twin", %s}]' "$small" "$small" >"$tmp/twins.json"
check "two cases with one name" 2 "case 'twin': is the name of an earlier case too" -- "$bin" run "$tmp/twins.json"
printf '{"B": 1, "B": 2, "S1": 3, "S2": 3, "N1": 1, "N2": 1, "D": 8, "dtype": "fp16", "input_layout": "BSND"}' \
    >"$tmp/dup_key.json"
check "a key given twice" 2 "dup_key.json: case 'case0': field 'B' is given twice" -- "$bin" run "$tmp/dup_key.json"
printf '{"B": 1e300, "S1": 3, "S2": 3, "N1": 1, "N2": 1, "D": 8, "dtype": "fp16", "input_layout": "BSND"}' \
    >"$tmp/huge_number.json"
check "a huge number" 2 "field 'B' must be an integer in \\[1, " -- "$bin" run "$tmp/huge_number.json"
printf '{"B": 1048576, "S1": 1048576, "S2": 1048576, "N1": 64, "N2": 64, "D": 128, "dtype": "fp16", "input_layout": "BSND"}' \
    >"$tmp/huge_case.json"
check "a case larger than memory" 2 "needs about .* GB for its tensors, more than this machine's" -- \
    "$bin" run "$tmp/huge_case.json"
python3 -c 'print("[" * 100000 + "]" * 100000)' >"$tmp/deep.json"
check "deep nesting" 2 "deep.json: not valid JSON" -- "$bin" run "$tmp/deep.json"
printf '{"B": 1,\0 "S1": 3}' >"$tmp/nul.json"
check "a NUL byte" 2 "nul.json: holds a NUL byte" -- "$bin" run "$tmp/nul.json"
check "a directory as a case file" 2 "as a file: .*: not a regular file" -- "$bin" run "$tmp"
check "save" 0 "^1 of 1 cases passed" -- "$bin" run fag-seed --filter '^GQA' --log - --save "$tmp/saved"
[ -s "$tmp/saved/GQA_01/kernel_dq.npy" ] && grep -q '"role":[[:space:]]*"kernel"' "$tmp/saved/manifest.json" \
    && echo "ok   --save writes both chains and a manifest" || { echo "FAIL --save files"; fails=$((fails + 1)); }
check "help" 0 "attnops run SUITE" -- "$bin" help
check "version" 0 "^attnops [0-9]+\.[0-9]+\.[0-9]+" -- "$bin" --version
check "version names the ISA, CPU and GEMM backends" 0 "^gemm bf16: (libxsmm JIT|C loops|fp32 .* on widened bf16)" -- "$bin" version
check "version names a known ISA" 0 "^isa: (portable|avx2|avx512|avx512bf16|neon)$" -- "$bin" version
# A forced ISA's GEMMs are that ISA's: libxsmm's AVX2 target under
# ATTNOPS_ISA=avx2 also on an AVX-512 CPU (it once kept AVX-512, "cpx").
case "${ATTNOPS_ISA:-}" in
avx2) check "ATTNOPS_ISA=avx2 JITs AVX2 GEMMs" 0 "^gemm f32: (libxsmm JIT \(hsw\)|C loops)$" -- "$bin" version ;;
portable) check "ATTNOPS_ISA=portable runs C-loop GEMMs" 0 "^gemm f32: C loops$" -- "$bin" version ;;
neon) check "ATTNOPS_ISA=neon runs the NEON GEMMs" 0 "^gemm f32: neon kernels$" -- "$bin" version ;;
esac
if [ "${ATTNOPS_BENCH_BUILT:-ON}" = ON ]; then
    check "bench wrapper" 0 "bwd_f32_B1" -- "$bin" bench --list-cases
else
    check "bench wrapper without bench_fa" 2 "cannot run .*bench_fa" -- "$bin" bench --list-cases
fi
check "no source" 2 "give a suite" -- "$bin" run
check "bad impl" 2 "--impl is 'gpu'" -- "$bin" run fag-seed --impl gpu
# list --support: one row per operator x implementation (x ISA for cpu), the
# ISA that runs here marked (the table's truth: test_harness_case)
check "list --support" 0 "^attnres +cpu +portable +bf16 fp16 fp32" -- "$bin" list --support
isa_here=$("$bin" version | sed -n 's/^isa: //p')
check "list --support marks this CPU's ISA" 0 "^flash_attention_grad +cpu +$isa_here +.*\(runs here\)$" -- "$bin" list --support
check "list --support: no FP8 benchmark" 0 "^flash_attention_grad +benchmark +any +fp16 bf16 fp32$" -- "$bin" list --support
check "list with an argument" 2 "takes no arguments but --support" -- "$bin" list fag-seed
check "demo: a dtype it lacks" 2 "^attnops demo: --dtype is 'f8_e5m2'; it must be f32, f16 or bf16$" -- \
    "$bin" demo --dtype f8_e5m2
check "demo: an unknown layout" 2 "^attnops demo: --layout is 'XYZ'; it must be BNSD, BSND, BSH or SBH$" -- \
    "$bin" demo --layout XYZ
check "demo: an unknown option" 2 "^attnops demo: unknown option '--heads'" -- "$bin" demo --heads 3
[ "$fails" = 0 ] && echo "check_cli_run: all passed" || echo "check_cli_run: $fails failed"
exit $((fails > 0))
