# libxsmm (Debian libxsmm-dev ships static archives only, built -fPIC).
# Private: the shared library embeds it.
find_path(LIBXSMM_INCLUDE_DIR libxsmm.h REQUIRED)
find_library(LIBXSMM_LIBRARY NAMES libxsmm.a xsmm REQUIRED)
find_library(LIBXSMM_NOBLAS_LIBRARY NAMES libxsmmnoblas.a xsmmnoblas REQUIRED)
find_library(MATH_LIBRARY m REQUIRED)
set(ATTNOPS_PRIVATE_LIBS ${LIBXSMM_LIBRARY} ${LIBXSMM_NOBLAS_LIBRARY} ${MATH_LIBRARY}
    ${CMAKE_DL_LIBS} pthread)
