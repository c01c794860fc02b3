# Thin front end; the build itself is CMake (see CMakeLists.txt).
#
#   make test      install what is missing, build, run the whole ctest suite
#   make run       install what is missing, build, run the built-in seed suites
#                  (attnops run fag-seed pypto-fag; run_log.txt in the build dir)
#   make test-sanitize  the C suite again in an ASan + UBSan build ($(SAN_DIR)); any report fails
#   make test-large  the scale tests (label large: T = 2^20, S = 131072, a 2^31-element mask)
#   make test-arm64  an aarch64 cross build, its C suite under qemu-user, goldens diffed with x86-64
#   make fuzz      the libFuzzer targets, FUZZ_SECONDS (60) each (clang build in $(FUZZ_DIR))
#   make bench     ... plus the Python package in .venv, then bench/run.sh
#   make build     configure + build into $(BUILD_DIR) (nothing installed)
#   make install   build, then install into $(PREFIX) (default /usr/local)
#   make clean     remove $(BUILD_DIR); make distclean also removes .venv
#
# Variables: PREFIX, BUILD_DIR (build), BUILD_TYPE (Release), JOBS (nproc),
# CTEST_ARGS (extra ctest arguments, e.g. CTEST_ARGS='-R fa_ -j2').

PREFIX     ?= /usr/local
BUILD_DIR  ?= build
BUILD_TYPE ?= Release
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_ARGS ?=
SAN_DIR    ?= build-sanitize

# The project's venv (scripts/setup.sh) comes first on PATH, so CMake and the
# tests find its python3 with numpy and ml_dtypes.
export PATH := $(CURDIR)/.venv/bin:$(PATH)

define do_build
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build $(BUILD_DIR) -j$(JOBS)
endef

.PHONY: all setup build test test-large test-sanitize test-arm64 test-arm64-native fuzz run bench install clean distclean
.NOTPARALLEL:

all: build

setup:
	bash scripts/setup.sh

build:
	$(do_build)

test:
	bash scripts/setup.sh
	$(do_build)
	ctest --test-dir $(BUILD_DIR) --output-on-failure --no-tests=error -LE large $(CTEST_ARGS)

# The scale tests (docs/RELIABILITY.md "Scale"): minutes and ~2 GB of memory (2.1 GB peak RSS measured).
test-large:
	bash scripts/setup.sh
	$(do_build)
	ctest --test-dir $(BUILD_DIR) --output-on-failure --no-tests=error -L large -V $(CTEST_ARGS)

# The sanitizer run (docs/RELIABILITY.md): every C test, in the same ctest
# entries, under AddressSanitizer (with leak checks) and UBSan, halting on
# the first report.  Left out, each for a reason: the Python tests (the venv's
# interpreter is not built with ASan, which must come first in a process),
# install_pkgconfig (it links uninstrumented consumers against the
# instrumented library) and portable_cross_build (an aarch64 compile, it runs
# nothing).
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
test-sanitize:
	bash scripts/setup.sh
	cmake -S . -B $(SAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="$(SAN_FLAGS)" \
	    -DCMAKE_CXX_FLAGS="$(SAN_FLAGS)" -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined \
	    -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined
	cmake --build $(SAN_DIR) -j$(JOBS)
	ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    ctest --test-dir $(SAN_DIR) --output-on-failure --no-tests=error -j$(JOBS) \
	    -E '^(python_|install_pkgconfig|portable_cross_build)' -LE large $(CTEST_ARGS)

# Arm64 (docs/ARM64.md): a cross build for aarch64 ($(ARM64_DIR), Debian's
# cross gcc and arm64 multiarch packages, scripts/setup-arm64.sh), its C
# suite under qemu-user, and the goldens of the native and the aarch64 CLI
# diffed byte for byte.  Left out: suite_fag_matrix (222 cases, 6 min
# emulated; the native run keeps it) and, by the test fragments themselves,
# the host's Python package and the install check.
ARM64_DIR ?= build-arm64
test-arm64:
	bash scripts/setup.sh
	bash scripts/setup-arm64.sh
	$(do_build)
	cmake -S . -B $(ARM64_DIR) -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
	    -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build $(ARM64_DIR) -j$(JOBS)
	ctest --test-dir $(ARM64_DIR) --output-on-failure --no-tests=error -j$(JOBS) -LE large \
	    -E '^suite_fag_matrix$$' $(CTEST_ARGS)
	bash tests/tools/check_golden_arch.sh $(BUILD_DIR)/tools/attnops $(ARM64_DIR)/emulated/attnops_cli

# The native Arm64 build in an emulated Debian arm64 root (docs/ARM64.md,
# "Native build"): setup.sh, CMake, the Python package and make test's whole
# suite as on an Arm host (ARM64_NATIVE_TESTS=REGEX for a subset), every
# program under qemu-user.  About an hour and a half; not in CI.
test-arm64-native:
	bash scripts/arm64-native.sh

# libFuzzer (docs/RELIABILITY.md, "Fuzzing"): the targets of fuzz/ in a clang
# build with ASan + UBSan ($(FUZZ_DIR)), each run for FUZZ_SECONDS on a
# scratch copy of its committed corpus (fuzz/corpus/<target>/); a crash
# fails the run, prints the sanitizer's report (its head: a plain tail showed
# only ASan's shadow legend) and leaves its input in $(FUZZ_DIR)/artifacts/.  Passive
# OpenMP waiting: the inputs that ask for 2 threads otherwise left a worker
# spinning between calls, taking a core from the run beside it.
FUZZ_DIR     ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := fuzz_case_json fuzz_npy fuzz_manifest fuzz_compare fuzz_fa_args fuzz_kp_args fuzz_ar_args fuzz_fia_args
FUZZ_FLAGS   := -fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize=fuzzer-no-link \
                -fno-omit-frame-pointer -Wno-psabi
fuzz:
	bash scripts/setup.sh
	cmake -S . -B $(FUZZ_DIR) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNOPS_FUZZ=ON \
	    -DCMAKE_C_FLAGS="$(FUZZ_FLAGS)" -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined
	cmake --build $(FUZZ_DIR) -j$(JOBS)
	@mkdir -p $(FUZZ_DIR)/artifacts
	@set -e; for t in $(FUZZ_TARGETS); do \
	    rm -rf $(FUZZ_DIR)/corpus/$$t && mkdir -p $(FUZZ_DIR)/corpus/$$t && cp fuzz/corpus/$$t/* $(FUZZ_DIR)/corpus/$$t/; \
	    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 $(FUZZ_DIR)/fuzz/$$t \
	        -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_DIR)/artifacts/$$t- $(FUZZ_DIR)/corpus/$$t >$(FUZZ_DIR)/$$t.log 2>&1 \
	        || { grep -m1 -A30 -E 'ERROR: |runtime error|deadly signal' $(FUZZ_DIR)/$$t.log; \
	             tail -8 $(FUZZ_DIR)/$$t.log; echo "fuzz: $$t FAILED (input in $(FUZZ_DIR)/artifacts/)"; exit 1; }; \
	    echo "fuzz: $$t $$(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' $(FUZZ_DIR)/$$t.log | \
	        grep -o '[0-9]*$$') executions in $(FUZZ_SECONDS) s, no crash"; \
	done

run:
	bash scripts/setup.sh
	$(do_build)
	cd $(BUILD_DIR) && ./tools/attnops run fag-seed pypto-fag

bench:
	bash scripts/setup.sh --bench
	$(do_build)
	.venv/bin/python -m pip install --quiet --no-build-isolation --no-deps --disable-pip-version-check .
	bash bench/run.sh

install:
	$(do_build)
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD_DIR)

distclean: clean
	rm -rf .venv
