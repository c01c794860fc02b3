#!/usr/bin/env bash
# The library compiles with a non-x86 compiler: every library source
# outside the x86 ISA folders (src/cpu/avx2, src/cpu/avx512, src/cpu/avx512bf16), NEON's included
# (the vocabulary kernels and the golden's blocks as CMake's
# attnops_simd_kernels(neon) builds them), compiled for aarch64 with the cross gcc, as CMake would on an Arm64 host
# (x86 folders left out, no x86 flags, no libxsmm: 1.17 is x86-only, so
# such a build has ATTNOPS_HAVE_LIBXSMM unset).  Compile only.  SKIPPED
# (exit 77) without the compiler.
#   check_cross_build.sh SOURCE_DIR
set -u
src=$1
cc=aarch64-linux-gnu-gcc
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "SKIPPED: no $cc (Debian gcc-aarch64-linux-gnu)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 n=0
# compile SOURCE [extra flags...]
compile() {
    local f=$1
    shift
    n=$((n + 1))
    if ! "$cc" -std=c11 -O2 -Wall -Wextra -Wno-unused-parameter -Werror -fopenmp -D_GNU_SOURCE -fno-math-errno \
            -I"$src/include" -I"$src/src" "$@" -c "$f" -o "$tmp/$(basename "$f")$n.o" \
            2>"$tmp/err"; then
        echo "FAIL $f $*:"
        head -5 "$tmp/err"
        fails=$((fails + 1))
    fi
}
for f in "$src"/src/core/*.c "$src"/src/fa/*.c "$src"/src/keypool/*.c "$src"/src/attnres/*.c "$src"/src/ref/*.c \
         "$src"/src/fia/*.c "$src"/src/cpu/*.c "$src"/src/cpu/portable/*.c "$src"/src/cpu/neon/*.c "$src"/src/api/*.c; do
    compile "$f"
done
for f in "$src"/src/cpu/simd/kernels_simd.c "$src"/src/ref/ref_block.c; do
    compile "$f" -DATTNOPS_SIMD_VOCABULARY='"cpu/simd/neon.h"' -DATTNOPS_KERNEL_ISA=neon
done
# and the x86 ISA folders really are x86-only: an aarch64 object of isa.c names no x86 kernel set
if aarch64-linux-gnu-nm "$tmp"/isa.c[0-9]*.o 2>/dev/null | grep -q '__avx'; then
    echo "FAIL isa.c references an x86 kernel set on aarch64"
    fails=$((fails + 1))
fi
echo "check_cross_build: $((n - fails)) of $n sources compile for aarch64"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
