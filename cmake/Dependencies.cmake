# libxsmm (Debian libxsmm-dev ships static archives only, built -fPIC).
# Private: the shared library embeds it.  libxsmm 1.17 is x86-only (its
# headers refuse other CPUs), so it is used on x86-64 and left out
# elsewhere, where the tile GEMMs run our NEON kernels (AArch64) or their C
# loops (src/cpu/tile_gemm.c).
# ATTNOPS_X86_64, ATTNOPS_AARCH64: the one test of the target architecture
# (ISA folders, the GEMM library, the per-ISA tests and the bench's FMA
# loops follow them).
set(ATTNOPS_X86_64 OFF)
set(ATTNOPS_AARCH64 OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(ATTNOPS_X86_64 ON)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(ATTNOPS_AARCH64 ON)
endif()
find_library(MATH_LIBRARY m REQUIRED)
set(ATTNOPS_PRIVATE_LIBS ${MATH_LIBRARY} ${CMAKE_DL_LIBS} pthread)
# libxsmm is optional: -DATTNOPS_WITH_LIBXSMM=OFF builds an x86-64 library
# whose tile GEMMs run their C loops (slow; for a host without libxsmm-dev).
option(ATTNOPS_WITH_LIBXSMM "Tile GEMMs through libxsmm's JIT (x86-64 only)" ${ATTNOPS_X86_64})
if(ATTNOPS_WITH_LIBXSMM AND NOT ATTNOPS_X86_64)
  message(FATAL_ERROR "ATTNOPS_WITH_LIBXSMM: libxsmm 1.17 is x86-64 only; this target is ${CMAKE_SYSTEM_PROCESSOR}")
endif()
set(ATTNOPS_HAVE_LIBXSMM OFF)
if(ATTNOPS_WITH_LIBXSMM)
  find_path(LIBXSMM_INCLUDE_DIR libxsmm.h REQUIRED)
  find_library(LIBXSMM_LIBRARY NAMES libxsmm.a xsmm REQUIRED)
  find_library(LIBXSMM_NOBLAS_LIBRARY NAMES libxsmmnoblas.a xsmmnoblas REQUIRED)
  set(ATTNOPS_PRIVATE_LIBS ${LIBXSMM_LIBRARY} ${LIBXSMM_NOBLAS_LIBRARY} ${ATTNOPS_PRIVATE_LIBS})
  set(ATTNOPS_HAVE_LIBXSMM ON)
endif()
