#!/usr/bin/env bash
# Installs a build tree into a temporary prefix and checks that a consumer can
# use it: pkg-config (shared and static), the SONAME, and find_package().
#
#   check_install.sh BUILD_DIR [CMAKE] [CC]
#
# Run by ctest as install_pkgconfig (tests/install.cmake).  Prints one line
# per check; the first failure prints "check_install: FAIL: ..." and exits 1.
# KEEP_TMP=1 keeps the temporary directory.
set -euo pipefail
# `cmd | grep -q` would fail under pipefail whenever grep exits at its first
# match and cmd dies of SIGPIPE; match on captured output instead.
has() { grep -q -- "$2" <<<"$1"; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: check_install.sh BUILD_DIR [CMAKE] [CC]}
cmake_bin=${2:-cmake}
cc=${3:-${CC:-cc}}
src=$here/hello_attnops.c

say() { printf 'check_install: %s\n' "$*"; }
fail() { printf 'check_install: FAIL: %s\n' "$*" >&2; exit 1; }
show_log() { sed 's/^/    /' "$1" >&2; }

for tool in "$cmake_bin" "$cc" pkg-config readelf; do
    command -v "$tool" >/dev/null 2>&1 || fail "'$tool' not found (scripts/setup.sh installs it)"
done
[ -f "$build/CMakeCache.txt" ] || fail "$build is not a CMake build directory"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnops-install.XXXXXX")
if [ "${KEEP_TMP:-0}" = 1 ]; then
    trap 'say "kept $tmp"' EXIT
else
    trap 'rm -rf "$tmp"' EXIT
fi
prefix=$tmp/prefix

# ---- install -------------------------------------------------------------------
"$cmake_bin" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 \
    || { show_log "$tmp/install.log"; fail "cmake --install $build --prefix $prefix failed"; }
[ -f "$prefix/include/attnops.h" ] || fail "include/attnops.h not installed"
pc=$(find "$prefix" -path '*/pkgconfig/attnops.pc' | head -n1)
[ -n "$pc" ] || fail "no pkgconfig/attnops.pc installed under $prefix"
say "installed into the temporary prefix ($(cd "$prefix" && find . -type f | wc -l) files)"

# ---- pkg-config ------------------------------------------------------------------
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
pkg-config --exists --print-errors attnops || fail "pkg-config cannot read $pc"
[ "$(pkg-config --variable=prefix attnops)" = "$prefix" ] \
    || fail "attnops.pc has prefix '$(pkg-config --variable=prefix attnops)', expected '$prefix'"
libdir=$(pkg-config --variable=libdir attnops)
version=$(pkg-config --modversion attnops)
for f in libattnops.so libattnops.so.0 libattnops.a; do
    [ -e "$libdir/$f" ] || fail "$libdir/$f not installed"
done
say "pkg-config: attnops $version, libdir $libdir"

# SONAME
soname=$(readelf -d "$libdir/libattnops.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libattnops.so.0" ] || fail "libattnops.so has SONAME '$soname', expected 'libattnops.so.0'"
say "SONAME libattnops.so.0"

# A consumer built with nothing but pkg-config's flags (warnings are not paths).
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror -o "$tmp/hello" "$src" $(pkg-config --cflags --libs attnops) \
    >"$tmp/cc.log" 2>&1 || { show_log "$tmp/cc.log"; fail "cc hello_attnops.c \$(pkg-config --cflags --libs attnops) failed"; }
has "$(readelf -d "$tmp/hello")" 'NEEDED.*\[libattnops\.so\.0\]' \
    || fail "the pkg-config consumer does not record NEEDED libattnops.so.0"
has "$(LD_LIBRARY_PATH=$libdir ldd "$tmp/hello")" "libattnops.so.0 => $libdir/" \
    || fail "with LD_LIBRARY_PATH=$libdir the consumer does not resolve libattnops.so.0 there"
out=$(LD_LIBRARY_PATH=$libdir "$tmp/hello" 2>&1) || { echo "$out" >&2; fail "the pkg-config consumer (shared) failed"; }
say "pkg-config shared: $out"

# The same, linked statically against libattnops.a with Libs.private.
static_libs=$(pkg-config --static --libs attnops | sed 's/-lattnops\b/-l:libattnops.a/')
# shellcheck disable=SC2046,SC2086
"$cc" -std=c11 -o "$tmp/hello_static" "$src" $(pkg-config --cflags attnops) $static_libs \
    >"$tmp/cc_static.log" 2>&1 \
    || { show_log "$tmp/cc_static.log"; fail "static link with \$(pkg-config --static --libs attnops) failed: Libs.private incomplete?"; }
if has "$(readelf -d "$tmp/hello_static")" 'NEEDED.*libattnops'; then
    fail "the static consumer still needs libattnops.so"
fi
out=$(env -u LD_LIBRARY_PATH "$tmp/hello_static" 2>&1) || { echo "$out" >&2; fail "the pkg-config consumer (static) failed"; }
say "pkg-config static: $out"

# ---- the CANN compatibility layer: a host program, as C and as C++ ---------------
acl_src=$here/hello_acl.c
pkg-config --exists --print-errors attnops-acl || fail "no attnops-acl.pc"
[ -f "$prefix/include/attnops-acl/acl/acl.h" ] || fail "include/attnops-acl/acl/acl.h not installed"
cxx=${CXX:-c++}
command -v "$cxx" >/dev/null 2>&1 || fail "'$cxx' not found (scripts/setup.sh installs g++)"
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Wextra -Werror -o "$tmp/hello_acl" "$acl_src" $(pkg-config --cflags --libs attnops-acl) \
    >"$tmp/acl_cc.log" 2>&1 || { show_log "$tmp/acl_cc.log"; fail "cc hello_acl.c \$(pkg-config --cflags --libs attnops-acl) failed"; }
# shellcheck disable=SC2046
"$cxx" -std=c++11 -Wall -Wextra -Werror -x c++ -o "$tmp/hello_acl_cxx" "$acl_src" \
    $(pkg-config --cflags --libs attnops-acl) >"$tmp/acl_cxx.log" 2>&1 \
    || { show_log "$tmp/acl_cxx.log"; fail "c++ hello_acl.c \$(pkg-config --cflags --libs attnops-acl) failed"; }
out=$(LD_LIBRARY_PATH=$libdir "$tmp/hello_acl" 2>&1) || { echo "$out" >&2; fail "the acl consumer (C) failed"; }
out_cxx=$(LD_LIBRARY_PATH=$libdir "$tmp/hello_acl_cxx" 2>&1) || { echo "$out_cxx" >&2; fail "the acl consumer (C++) failed"; }
[ "$out" = "$out_cxx" ] || fail "the C and C++ acl consumers disagree: '$out' vs '$out_cxx'"
say "pkg-config attnops-acl (C and C++): $out"
# Installed to a non-system prefix, a program linked with the prefix's run path
# starts without LD_LIBRARY_PATH: libattnops_acl finds the libattnops beside it
# through its own $ORIGIN run path.
has "$(readelf -d "$libdir/libattnops_acl.so.0")" '(RUNPATH).*\[\$ORIGIN\]' \
    || fail "libattnops_acl.so.0 has no \$ORIGIN run path: $(readelf -d "$libdir/libattnops_acl.so.0" | grep -E 'RPATH|RUNPATH')"
# shellcheck disable=SC2046
"$cc" -std=c11 -o "$tmp/hello_acl_rpath" "$acl_src" $(pkg-config --cflags --libs attnops-acl) -Wl,-rpath,"$libdir" \
    >"$tmp/acl_rpath.log" 2>&1 || { show_log "$tmp/acl_rpath.log"; fail "cc hello_acl.c with -Wl,-rpath,$libdir failed"; }
out_rpath=$(env -u LD_LIBRARY_PATH "$tmp/hello_acl_rpath" 2>&1) \
    || { echo "$out_rpath" >&2; fail "the acl consumer linked with -Wl,-rpath,$libdir does not start without LD_LIBRARY_PATH"; }
[ "$out_rpath" = "$out" ] || fail "the run-path acl consumer printed '$out_rpath', not '$out'"
say "attnops-acl with -Wl,-rpath and no LD_LIBRARY_PATH: $out_rpath"

# ---- CMake package ------------------------------------------------------------------
mkdir -p "$tmp/consumer"
cat >"$tmp/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(hello_attnops C)
find_package(attnops \${WANT_VERSION} CONFIG REQUIRED)
add_executable(hello "$src")
target_link_libraries(hello attnops::attnops)
add_executable(hello_static "$src")
target_link_libraries(hello_static attnops::attnops_static)
add_executable(hello_acl "$acl_src")
target_link_libraries(hello_acl attnops::attnops_acl)
CMAKE
major=${version%%.*}
"$cmake_bin" -S "$tmp/consumer" -B "$tmp/consumer/build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" -DWANT_VERSION="$major" \
    >"$tmp/consumer.log" 2>&1 \
    || { show_log "$tmp/consumer.log"; fail "configuring a project with find_package(attnops CONFIG REQUIRED) failed"; }
found=$(sed -n 's/^attnops_DIR:[A-Z]*=//p' "$tmp/consumer/build/CMakeCache.txt")
case "$found" in
    "$prefix"/*) ;;
    *) fail "find_package(attnops) found '$found', not the temporary prefix" ;;
esac
"$cmake_bin" --build "$tmp/consumer/build" >>"$tmp/consumer.log" 2>&1 \
    || { show_log "$tmp/consumer.log"; fail "building against attnops::attnops / attnops::attnops_static failed"; }
has "$(readelf -d "$tmp/consumer/build/hello")" 'NEEDED.*\[libattnops\.so\.0\]' \
    || fail "the CMake consumer of attnops::attnops does not record NEEDED libattnops.so.0"
out=$(LD_LIBRARY_PATH=$libdir "$tmp/consumer/build/hello" 2>&1) \
    || { echo "$out" >&2; fail "the CMake consumer of attnops::attnops failed"; }
say "find_package shared: $out"
out=$(env -u LD_LIBRARY_PATH "$tmp/consumer/build/hello_static" 2>&1) \
    || { echo "$out" >&2; fail "the CMake consumer of attnops::attnops_static failed"; }
say "find_package static: $out"
out=$(LD_LIBRARY_PATH=$libdir "$tmp/consumer/build/hello_acl" 2>&1) \
    || { echo "$out" >&2; fail "the CMake consumer of attnops::attnops_acl failed"; }
say "find_package attnops_acl: $out"

say "all install checks passed"
