#!/usr/bin/env bash
# The harness CLI's exit codes and messages: `attnops run` of the built-in
# suites passes (0) and writes the seed's run_log lines; a failing verdict
# gives 1 with FAIL lines and coordinates (a too-strict rule, and the
# test-only broken kernel); bad arguments and files give 2 and one line.
# Usage: check_cli_run.sh ATTNOPS_BINARY
set -u
bin=$1
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
check "filter" 0 "^1 of 1 cases passed" -- "$bin" run fag-seed --filter '^GQA' --log -
cat >"$tmp/strict.json" <<'JSON'
{"strict": {"B": 1, "N1": 2, "N2": 1, "S1": 130, "S2": 70, "D": 64, "dtype": "bf16", "input_layout": "BSND",
            "compare": "ten-thousandth"}}
JSON
check "a rule the kernel cannot meet fails" 1 "^FAIL strict dq \[ten-thousandth\].*worst at \[" -- \
    "$bin" run "$tmp/strict.json" --log -
check "the broken kernel fails with coordinates" 1 "^FAIL GQA_01 dq \[dual\].*worst at \[0,[0-9]+,[0-9]+,[0-9]+\]" -- \
    env ATTNOPS_TEST_BREAK_KERNEL=1 "$bin" run fag-seed --filter GQA --log -
cat >"$tmp/triple.json" <<'JSON'
{"t16": {"B": 1, "N1": 2, "N2": 1, "S1": 130, "S2": 97, "D": 64, "dtype": "fp16", "input_layout": "BSND",
         "compare": "triple", "sparse_mode": 2, "atten_mask_shape": "SS", "atten_mask_dtype": "BOOL"},
 "tbf": {"B": 2, "N1": 2, "N2": 2, "S1": 64, "S2": 128, "D": 32, "dtype": "bf16", "input_layout": "BNSD",
         "compare": "triple", "drop_out_possibility": 0.9}}
JSON
check "triple against the benchmark chain" 0 "^2 of 2 cases passed" -- "$bin" run "$tmp/triple.json" --log -
check "triple sees the broken kernel" 1 "^FAIL t16 dq \[triple\] mare_ratio" -- \
    env ATTNOPS_TEST_BREAK_KERNEL=1 "$bin" run "$tmp/triple.json" --log -
check "missing file" 2 "neither a built-in suite .* nor a readable file" -- "$bin" run "$tmp/none.json"
printf '{"B": 1,' >"$tmp/bad.json"
check "bad JSON" 2 "not valid JSON" -- "$bin" run "$tmp/bad.json"
printf '{"B": 1, "S1": 3, "S2": 3, "N1": 1, "N2": 1, "D": 8, "dtype": "fp16", "input_layout": "BSND", "colour": 1}' \
    >"$tmp/field.json"
check "unknown field" 2 "field 'colour' is not a known case field" -- "$bin" run "$tmp/field.json"
check "save" 0 "^1 of 1 cases passed" -- "$bin" run fag-seed --filter '^GQA' --log - --save "$tmp/saved"
[ -s "$tmp/saved/GQA_01/kernel_dq.npy" ] && grep -q '"role":[[:space:]]*"kernel"' "$tmp/saved/manifest.json" \
    && echo "ok   --save writes both chains and a manifest" || { echo "FAIL --save files"; fails=$((fails + 1)); }
check "help" 0 "attnops run SUITE" -- "$bin" help
check "version" 0 "^attnops [0-9]+\.[0-9]+\.[0-9]+" -- "$bin" --version
check "bench wrapper" 0 "bench_fa: layout TND|bwd_f32_B1" -- "$bin" bench --list-cases
check "no source" 2 "give a suite" -- "$bin" run
check "bad impl" 2 "--impl is 'gpu'" -- "$bin" run fag-seed --impl gpu
[ "$fails" = 0 ] && echo "check_cli_run: all passed" || echo "check_cli_run: $fails failed"
exit $((fails > 0))
