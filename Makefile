# Thin front end; the build itself is CMake (see CMakeLists.txt).
#
#   make test      install what is missing, build, run the whole ctest suite
#   make run       install what is missing, build, run the built-in seed suites
#                  (attnops run fag-seed pypto-fag; run_log.txt in the build dir)
#   make test-sanitize  the C suite again in an ASan + UBSan build ($(SAN_DIR)); any report fails
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

.PHONY: all setup build test test-sanitize run bench install clean distclean
.NOTPARALLEL:

all: build

setup:
	bash scripts/setup.sh

build:
	$(do_build)

test:
	bash scripts/setup.sh
	$(do_build)
	ctest --test-dir $(BUILD_DIR) --output-on-failure --no-tests=error $(CTEST_ARGS)

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
	    -E '^(python_|install_pkgconfig|portable_cross_build)' $(CTEST_ARGS)

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
