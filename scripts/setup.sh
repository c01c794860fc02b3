#!/usr/bin/env bash
# Installs everything building, testing and benchmarking attnops needs.
#
#   scripts/setup.sh           Debian packages + <repo>/.venv with numpy, ml_dtypes, pytest,
#                              flake8, scikit-build-core (builds the Python package) and PyTorch
#                              (the Python package's tests and bench/'s peer)
#   scripts/setup.sh --bench   the same (kept for `make bench`; torch is no longer optional)
#
# Idempotent and fast when everything is there: each step checks first and
# prints one line saying what it did or skipped.  Environment:
#   ATTNOPS_VENV   venv location (default <repo>/.venv)
#   PYTHON         interpreter that creates the venv (default /usr/bin/python3,
#                  else python3 on PATH)
set -euo pipefail

for arg in "$@"; do
    case "$arg" in
        --bench) ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) echo "setup: unknown option '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${ATTNOPS_VENV:-$root/.venv}
t_start=$SECONDS
say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }

# One setup at a time per checkout (make -j, two terminals, ...).
if command -v flock >/dev/null 2>&1; then
    lock="/tmp/attnops-setup.$(printf '%s' "$root" | cksum | cut -d' ' -f1).lock"
    exec 9>"$lock"
    flock 9
fi

# ---- (a) Debian packages ----------------------------------------------------
# libc6-dev is listed because gcc only *recommends* it and we install without
# recommends; binutils (readelf) comes with gcc.  chromium renders the
# harness's HTML report in a test (headless screenshot), with a font so the
# page's text shows.
# g++: the CANN compatibility headers are checked from C++ too (CANN's
# host programs are C++).
# python3-dev: Python.h for the package's small C module (attnops._native).
# clang with libFuzzer (libclang-rt-14-dev) and its OpenMP (libomp-14-dev):
# `make fuzz`.
# gcc-aarch64-linux-gnu and its libc headers: a test compiles the portable
# path for aarch64 (the x86 ISA folders must stay x86-only).
# libxsmm-dev and the aarch64 cross compiler are amd64 packages: an Arm64
# host (docs/ARM64.md) builds without libxsmm (its GEMMs are our NEON
# kernels there) and is itself the aarch64 build.
apt_packages=(cmake make gcc g++ libc6-dev python3-dev pkg-config libcjson-dev python3-venv chromium fonts-dejavu-core
              clang libclang-rt-14-dev libomp-14-dev ninja-build)
if [ "$(dpkg --print-architecture 2>/dev/null || uname -m)" != arm64 ]; then
    apt_packages+=(libxsmm-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
fi
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    say "apt: all ${#apt_packages[@]} packages already installed"
else
    command -v apt-get >/dev/null 2>&1 || die "missing packages (${missing[*]}) and no apt-get: install them by hand"
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || die "missing packages (${missing[*]}): run as root or install sudo"
        sudo=(sudo)
    fi
    t=$SECONDS
    say "apt: installing ${missing[*]} (apt-get update first)"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq >/dev/null || die "apt-get update failed"
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || die "apt-get install ${missing[*]} failed"
    say "apt: installed ${#missing[@]} package(s) in $((SECONDS - t))s"
fi

# ---- (b) Python venv with the test packages ----------------------------------
vpy="$venv/bin/python"
if [ -x "$vpy" ] && "$vpy" -c 'import sys' >/dev/null 2>&1; then
    say "venv: $venv exists"
else
    py=${PYTHON:-}
    if [ -z "$py" ]; then
        if [ -x /usr/bin/python3 ]; then py=/usr/bin/python3; else py=python3; fi
    fi
    command -v "$py" >/dev/null 2>&1 || die "no python interpreter '$py'"
    rm -rf "$venv"
    t=$SECONDS
    "$py" -m venv "$venv" || die "'$py -m venv $venv' failed (is python3-venv installed?)"
    say "venv: created $venv with $("$vpy" -c 'import sys; print(sys.version.split()[0])') in $((SECONDS - t))s"
fi

pip_install() {  # pip_install LABEL PACKAGE...
    local label=$1; shift
    local t=$SECONDS
    # --no-cache-dir: torch's wheels (~3 GB) would otherwise be kept a second
    # time in pip's cache, and a CI disk does not hold both.
    "$vpy" -m pip install --quiet --disable-pip-version-check --no-input --no-cache-dir "$@" \
        || die "pip install $* failed"
    say "pip: installed $label in $((SECONDS - t))s"
}

if "$vpy" -c 'import numpy, ml_dtypes, pytest, scikit_build_core, flake8' >/dev/null 2>&1; then
    say "pip: numpy, ml_dtypes, pytest, scikit-build-core, flake8 already importable"
else
    pip_install "numpy ml_dtypes pytest scikit-build-core flake8" numpy ml_dtypes pytest 'scikit-build-core>=0.10' flake8
fi

# ---- (c) PyTorch: the Python package's tests and the peer benchmark -----------
# PyPI has no CPU-only build of torch (the +cpu wheels live only on PyTorch's
# own index, which is not reachable here), so this is the plain PyPI wheel;
# it pulls the CUDA runtime wheels (~5 GB in the venv, about a minute on a
# fast link) but runs fine on a machine without a GPU.
# find_spec + metadata, not 'import torch' (which takes seconds).
if v=$("$vpy" -c 'import importlib.util as u, importlib.metadata as m
assert u.find_spec("torch"); print(m.version("torch"))' 2>/dev/null); then
    say "pip: torch $v already installed"
else
    say "pip: installing torch 2.x from PyPI (large download, takes a minute or more)"
    # pip unpacks into TMPDIR and installs into the venv: ~5 GB in the venv, as
    # much again while unpacking.  Say so before pip fails half-way with ENOSPC.
    need_kb=$((8 * 1024 * 1024))
    for d in "$venv" "${TMPDIR:-/tmp}"; do
        free_kb=$(df -Pk "$d" 2>/dev/null | awk 'NR == 2 { print $4 }')
        if [ -n "$free_kb" ] && [ "$free_kb" -lt "$need_kb" ]; then
            die "installing torch needs about 8 GB free; $d has $((free_kb / 1024)) MB (free space or set TMPDIR)"
        fi
    done
    pip_install torch 'torch>=2.4,<3'
    v=$("$vpy" -c 'import torch; torch.ones(1); print(torch.__version__)' 2>/dev/null) \
        || die "torch installed but does not import"
    say "pip: torch $v imports"
fi

# ---- (d) transformers: attnops.transformers' tests (python/tests/test_transformers.py)
# Pinned: the tests exercise its attention and mask interfaces.  It does not
# depend on torch, so this never replaces the torch above.
TRANSFORMERS_VERSION=5.25.0
if v=$("$vpy" -c 'import importlib.metadata as m; print(m.version("transformers"))' 2>/dev/null) \
        && [ "$v" = "$TRANSFORMERS_VERSION" ]; then
    say "pip: transformers $v already installed"
else
    pip_install "transformers $TRANSFORMERS_VERSION" "transformers==$TRANSFORMERS_VERSION"
fi

say "done in $((SECONDS - t_start))s"
