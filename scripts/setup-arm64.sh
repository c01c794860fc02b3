#!/usr/bin/env bash
# Installs what the Arm64 cross build and its emulated tests need (make
# test-arm64), beside the native set-up and without touching it: Debian's
# arm64 architecture for the multiarch -dev packages, the cross compiler
# and its C++ (the CANN samples are C++) and qemu-user to run the test programs.
# Idempotent: each step checks first and prints one line.
set -euo pipefail
say() { printf 'setup-arm64: %s\n' "$*"; }
die() { printf 'setup-arm64: ERROR: %s\n' "$*" >&2; exit 1; }

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "run as root or install sudo"
    sudo=(sudo)
fi
# arm64 packages of the libraries the programs link (cJSON for the harness,
# libgomp, libstdc++ for the C++ samples).  They bring Debian's arm64 C
# library too, and the tests run on it (qemu-aarch64 without -L: the loader
# /lib/ld-linux-aarch64.so.1 and libc from one package; the cross
# toolchain's own copy under /usr/aarch64-linux-gnu is another glibc build,
# and its loader with this libc hangs in pthread_create).
host_packages=(gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
arm64_packages=(libcjson-dev:arm64 libgomp1:arm64 libstdc++6:arm64)
missing=()
for p in "${host_packages[@]}" "${arm64_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    say "apt: all $((${#host_packages[@]} + ${#arm64_packages[@]})) packages already installed"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    "${sudo[@]}" dpkg --add-architecture arm64
    say "dpkg: added the arm64 architecture"
fi
t=$SECONDS
say "apt: installing ${missing[*]} (apt-get update first)"
"${sudo[@]}" apt-get update -qq >/dev/null || die "apt-get update failed"
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
say "apt: installed ${#missing[@]} package(s) in $((SECONDS - t))s"
