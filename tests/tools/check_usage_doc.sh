#!/usr/bin/env bash
# The CLI's usage text has one source, usage_to() in tools/attnops.c:
# docs/HARNESS.md quotes `attnops help` between its USAGE markers, and this
# check fails when the quote and the program's output differ.
#   check_usage_doc.sh ATTNOPS HARNESS_MD
set -u
cli=$1 doc=$2
got=$("$cli" help) || { echo "FAIL: $cli help exits $?"; exit 1; }
quoted=$(sed -n '/<!-- USAGE:BEGIN -->/,/<!-- USAGE:END -->/p' "$doc" | sed '1,2d;$d' | sed '$d')
if [ -z "$quoted" ]; then
    echo "FAIL: $doc has no usage block between <!-- USAGE:BEGIN --> and <!-- USAGE:END -->"
    exit 1
fi
if [ "$got" != "$quoted" ]; then
    echo "FAIL: $doc's usage block is not what \`attnops help\` prints (update the doc from it):"
    diff <(echo "$quoted") <(echo "$got")
    exit 1
fi
# self-test: the same comparison catches a quote one character off
if [ "$got" == "${quoted/usage:/usage;}" ]; then
    echo "FAIL: self-test: a changed quote went unnoticed"
    exit 1
fi
echo "2 passed, 0 failed"
