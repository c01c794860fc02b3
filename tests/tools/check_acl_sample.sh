#!/usr/bin/env bash
# Runs a CANN sample program built against libattnops_acl and its native-API
# twin; their outputs must be the same text (and both must succeed).
#   check_acl_sample.sh SAMPLE NATIVE [NATIVE_ARGS...]
set -euo pipefail
sample=${1:?usage: check_acl_sample.sh SAMPLE NATIVE}
native=${2:?usage: check_acl_sample.sh SAMPLE NATIVE}
shift 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/acl-sample.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$sample" >"$tmp/sample.txt" 2>&1 || { tail -5 "$tmp/sample.txt" >&2; echo "FAIL: $sample exited $?" >&2; exit 1; }
"$native" "$@" >"$tmp/native.txt" 2>&1 || { tail -5 "$tmp/native.txt" >&2; echo "FAIL: $native exited $?" >&2; exit 1; }
lines=$(wc -l <"$tmp/native.txt")
[ "$lines" -gt 0 ] || { echo "FAIL: the native twin printed nothing" >&2; exit 1; }
if ! cmp -s "$tmp/sample.txt" "$tmp/native.txt"; then
    echo "FAIL: $(basename "$sample") and its native twin differ:" >&2
    diff "$tmp/sample.txt" "$tmp/native.txt" | head -5 >&2
    exit 1
fi
echo "$(basename "$sample"): $lines output lines identical to the native API's"
