#!/usr/bin/env bash
# The native Arm64 build without an Arm machine (make test-arm64-native;
# docs/ARM64.md "Native build"): a Debian 12 arm64 root file system, made by
# debootstrap, whose programs run under qemu-user through binfmt_misc, so that
# inside it everything is an aarch64 host: Debian's own arm64 gcc, CMake and
# Python, scripts/setup.sh's Arm64 branch (apt packages, the venv, PyPI's
# aarch64 torch wheel), the CMake configuration of an aarch64 host (no
# libxsmm, the neon ISA), the Python package built by pip as a user builds
# it, and then the tests.  make test-arm64 cross-compiles instead, which is
# faster but cannot show any of that.  Slow (everything, the compiler
# included, is emulated), so CI leaves it out.
#
#   scripts/arm64-native.sh            make test's whole suite (ctest -LE large)
#   ARM64_NATIVE_TESTS=REGEX ...       only the ctest entries REGEX matches
#   ATTNOPS_ARM64_ROOT=DIR ...         where the root lives (kept between runs)
#   ARM64_NATIVE_CPU=MODEL ...         the CPU qemu emulates (default neoverse-n1:
#                                      ARMv8.2 without SVE, as Kunpeng 920 and
#                                      Graviton 2; max,sve-default-vector-length=32
#                                      is an SVE2 CPU with 256-bit vectors, as
#                                      Graviton 3 or Neoverse V1)
#
# Needs root (debootstrap, chroot, mounts) on an x86-64 Debian host whose
# kernel lets it register binfmt_misc handlers; where it cannot, it says
# SKIPPED and exits 77.  The checkout is copied in (tracked and untracked,
# not ignored, files); the build and the venv stay in the root.
set -euo pipefail
say() { printf 'arm64-native: %s\n' "$*"; }
die() { printf 'arm64-native: ERROR: %s\n' "$*" >&2; exit 1; }
skip() { printf 'arm64-native: SKIPPED: %s\n' "$*"; exit 77; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=${ATTNOPS_ARM64_ROOT:-/var/tmp/attnops-arm64-root}
cpu=${ARM64_NATIVE_CPU:-neoverse-n1}
tests=${ARM64_NATIVE_TESTS:-}
t_start=$SECONDS

[ "$(uname -m)" = x86_64 ] || skip "this host is $(uname -m): on an Arm64 host run make test itself"
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot and mounts)"

# ---- qemu-user-static, debootstrap, and the binfmt_misc handler ------------
missing=()
for p in qemu-user-static debootstrap; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    say "apt: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || die "apt-get install ${missing[*]} failed"
fi
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e $binfmt/register ]; then
    mount -t binfmt_misc binfmt_misc $binfmt 2>/dev/null || skip "cannot mount binfmt_misc on $binfmt"
fi
# The F flag (Debian's qemu-aarch64.conf has it) opens the static emulator
# once, here, so that it runs inside the chroot too.
if [ ! -e $binfmt/qemu-aarch64 ]; then
    conf=/usr/lib/binfmt.d/qemu-aarch64.conf
    [ -r $conf ] || die "qemu-user-static installed but $conf is missing"
    cat $conf >$binfmt/register 2>/dev/null || skip "the kernel refused the binfmt_misc handler for aarch64"
    say "binfmt: registered qemu-aarch64 ($(sed -n 's/^flags: //p' $binfmt/qemu-aarch64))"
fi

# ---- the arm64 root --------------------------------------------------------
if [ ! -x "$root/usr/bin/cmake" ]; then
    t=$SECONDS
    rm -rf "$root"
    mkdir -p "$root"
    say "debootstrap: Debian 12 arm64 into $root (several minutes)"
    debootstrap --arch=arm64 --variant=minbase --include=ca-certificates,python3,python3-venv \
        bookworm "$root" http://deb.debian.org/debian >"$root.debootstrap.log" 2>&1 \
        || die "debootstrap failed (its log: $root.debootstrap.log)"
    say "debootstrap: done in $((SECONDS - t))s"
fi
[ "$(chroot "$root" uname -m)" = aarch64 ] || die "programs in $root do not run as aarch64"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# This host's own certificate authorities (a TLS-inspecting proxy's, say):
# pip inside must trust what pip outside trusts.
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed in $root"
fi
# pip's settings of this host (certificates, timeouts), not its wheel cache
[ -r /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"

mounted=()
cleanup() {
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
for fs in proc sys dev dev/pts; do
    mountpoint -q "$root/$fs" && continue
    mkdir -p "$root/$fs"
    mount --bind "/$fs" "$root/$fs"
    mounted+=("$root/$fs")
    # Where the host's mounts are shared (systemd's default), a bind joins
    # their peer group: what is mounted on it below would show on the host.
    mount --make-private "$root/$fs"
done
# PyPI's aarch64 torch (its oneDNN, through xbyak_aarch64) reads each CPU's
# MIDR_EL1 from sysfs at import; an x86-64 kernel has no such entry, and torch
# then dies with SIGSEGV ("Can't open MIDR_EL1 sysfs entry").  So the root
# gets its own CPU directory: the host's CPU numbering, and for each CPU the
# MIDR of a Neoverse N1 (0x414fd0c1: implementer 0x41, part 0xd0c), the
# core qemu's neoverse-n1 model reports to the MRS instruction too.
cpus=$root/sys/devices/system/cpu
if [ ! -e "$cpus/cpu0/regs/identification/midr_el1" ]; then
    mount -t tmpfs -o size=1m attnops-cpus "$cpus"
    mounted+=("$cpus")
    for f in online possible present; do cat "/sys/devices/system/cpu/$f" >"$cpus/$f"; done
    for c in /sys/devices/system/cpu/cpu[0-9]*; do
        mkdir -p "$cpus/${c##*/}/regs/identification"
        echo 0x00000000414fd0c1 >"$cpus/${c##*/}/regs/identification/midr_el1"
    done
fi

# Chromium (the harness report's test renders a page with it) cannot start
# its GPU process under qemu-user ("GPU process isn't usable. Goodbye.", with
# --disable-gpu too); in one process it renders.  Debian's launcher reads
# flags from /etc/chromium.d, so the root's own copy gets them; the test and
# a real Arm host keep Chromium's ordinary processes.
mkdir -p "$root/etc/chromium.d"
cat >"$root/etc/chromium.d/attnops-qemu-user" <<'EOF_FLAGS'
# scripts/arm64-native.sh: this root's programs run under qemu-user
export CHROMIUM_FLAGS="$CHROMIUM_FLAGS --single-process --no-zygote"
EOF_FLAGS

# ---- the checkout, then set-up, build and tests inside ---------------------
src=/src/attnops
mkdir -p "$root$src"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -C "$root$src" -xf -
say "copied the checkout to $root$src"
# QEMU_CPU: qemu-user's default CPU, max, runs SVE with 512-bit vectors, and
# torch.compile's kernels, which Inductor built with -msve-vector-bits=256
# there, crashed (SIGSEGV); with 256-bit vectors they ran and matched eager.
# TORCHINDUCTOR_CACHE_DIR, one per emulated CPU: the root's /tmp outlives a
# run, and Inductor's cache, whose key leaves out the vector width its loops
# step by, served graphs generated under one CPU to the other: wrong losses and
# gradients (docs/ARM64.md, "torch.compile's cache across CPUs").
inside() {
    chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LANG=C.UTF-8 PIP_DEFAULT_TIMEOUT=180 PIP_DISABLE_PIP_VERSION_CHECK=1 QEMU_CPU="$cpu" \
        TORCHINDUCTOR_CACHE_DIR="/tmp/torchinductor-${cpu//[^A-Za-z0-9]/_}" \
        /bin/bash -c "cd $src && $1"
}
inside "uname -m; . /etc/os-release; echo \"\$PRETTY_NAME\"; echo \"CPU: qemu's $cpu\"" | sed 's/^/arm64-native: host: /'
t=$SECONDS
inside "bash scripts/setup.sh"
say "setup.sh done in $((SECONDS - t))s"
t=$SECONDS
inside "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >build.configure.log && grep -E 'attnops|GEMM' build.configure.log; \
        cmake --build build -j$(nproc) >build.log 2>&1 || { tail -30 build.log; exit 1; }"
say "native build done in $((SECONDS - t))s"
t=$SECONDS
# make test's ctest line, on both cores (its entries that must run alone say so)
inside "build/tools/attnops version && ctest --test-dir build --output-on-failure --no-tests=error -j$(nproc) \
        -LE large ${tests:+-R '$tests'}"
say "tests done in $((SECONDS - t))s; all in $((SECONDS - t_start))s"
