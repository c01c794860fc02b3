#!/usr/bin/env bash
# Goldens identical across architectures: `attnops golden` of the seed
# suites from two builds of the CLI (make test-arm64: the native x86-64 one
# and the aarch64 one under qemu-user) must write byte-identical files, .npy
# and manifests alike.  The reference computes in a fixed order without FMA
# contraction (-std=c11, -ffp-contract=off), so only libm can differ: the
# check holds where both C libraries are the same glibc version (Debian 12's
# amd64 and arm64 libc6 here); docs/ARM64.md says what is promised.
#   check_golden_arch.sh NATIVE_CLI OTHER_CLI
set -u
native=$1 other=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
suites=(fag-seed keypool-seed attnres-seed fia)
for side in native other; do
    cli=${!side}
    if ! "$cli" golden "${suites[@]}" --out "$tmp/$side" >"$tmp/$side.log" 2>&1; then
        echo "FAIL $side: $cli golden ${suites[*]} exited non-zero:"
        tail -5 "$tmp/$side.log"
        exit 1
    fi
done
files=$(cd "$tmp/native" && find . -type f | wc -l)
if ! diff -r "$tmp/native" "$tmp/other" >"$tmp/diff" 2>&1; then
    echo "FAIL the goldens differ between $native and $other:"
    head -20 "$tmp/diff"
    exit 1
fi
[ "$files" -gt 0 ] || { echo "FAIL no golden files written"; exit 1; }
echo "check_golden_arch: ${suites[*]}: all $files files byte-identical"
