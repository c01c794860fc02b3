# Thin front end; the build itself is CMake (see CMakeLists.txt).
#
#   make test      install what is missing, build, run the whole ctest suite
#   make run       install what is missing, build, run the built-in seed suites
#                  (attnops run fag-seed pypto-fag; run_log.txt in the build dir)
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

# The project's venv (scripts/setup.sh) comes first on PATH, so CMake and the
# tests find its python3 with numpy and ml_dtypes.
export PATH := $(CURDIR)/.venv/bin:$(PATH)

define do_build
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
	cmake --build $(BUILD_DIR) -j$(JOBS)
endef

.PHONY: all setup build test run bench install clean distclean
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
