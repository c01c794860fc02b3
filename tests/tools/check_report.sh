#!/usr/bin/env bash
# `attnops run --report`: the page is self-contained (no network), holds the
# summary table and one histogram + strip per output, and renders in
# headless Chromium (a screenshot is taken; the rendered DOM has the summary).
# The run uses the broken backward kernel (attnops_broken,
# tests/support/broken_cli.c), so the page shows failures.
# Usage: check_report.sh ATTNOPS_BROKEN_BINARY
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL $*"; exit 1; }
"$bin" run fag-seed --filter 'GQA|TND' --log - --report "$tmp/r.html" >"$tmp/out" 2>&1
[ $? = 1 ] || fail "the broken kernel's run must exit 1"
page=$(cat "$tmp/r.html")
grep -q '<table id="summary">' <<<"$page" || fail "no summary table"
grep -q '<caption>0 of 6 outputs pass</caption>' <<<"$page" || fail "summary caption"
[ "$(grep -o '<svg' <<<"$page" | wc -l)" = 12 ] || fail "expected a histogram and a strip per output (12 svg)"
if grep -qE 'https?://|<script|<link ' <<<"$page"; then fail "the page must be self-contained"; fi
echo "ok   report structure"
browser=$(command -v chromium || command -v chromium-browser) || fail "chromium is missing (scripts/setup.sh installs it)"
flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --user-data-dir="$tmp/profile")
timeout 120 "$browser" "${flags[@]}" --window-size=1200,900 --screenshot="$tmp/shot.png" "file://$tmp/r.html" \
    >"$tmp/chromium.log" 2>&1
[ -s "$tmp/shot.png" ] && [ "$(stat -c %s "$tmp/shot.png")" -gt 10000 ] || { tail -5 "$tmp/chromium.log"; fail "no screenshot"; }
[ "$(head -c 8 "$tmp/shot.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "the screenshot is not a PNG"
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$tmp/r.html" >"$tmp/dom.html" 2>>"$tmp/chromium.log"
grep -q 'id="summary"' "$tmp/dom.html" && grep -q '0 of 6 outputs pass' "$tmp/dom.html" \
    || fail "the rendered DOM lacks the summary"
echo "ok   renders in headless chromium ($(stat -c %s "$tmp/shot.png") byte screenshot)"
echo "check_report: all passed"
