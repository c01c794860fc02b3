# Installation: the header, libattnops.so (SONAME libattnops.so.0),
# libattnops.a, a pkg-config file and a CMake package:
#
#   pkg-config --cflags --libs attnops                 # shared
#   pkg-config --static --cflags --libs attnops        # + what libattnops.a needs
#
#   find_package(attnops CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE attnops::attnops)         # shared
#   target_link_libraries(app PRIVATE attnops::attnops_static)  # static
#
# The shared library embeds libxsmm (Debian ships it as archives only) and
# needs nothing else at link time.  The static library does not: its
# consumers also link the libxsmm archives, libm, libdl, pthread and
# OpenMP.  attnops::attnops_static carries these in its
# INTERFACE_LINK_LIBRARIES as $<LINK_ONLY:...> (CMake exports the PRIVATE
# link items of a static library that way, with the absolute archive paths
# found by cmake/Dependencies.cmake); the .pc file lists them in Libs.private.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ATTNOPS_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/attnops)

install(FILES ${PROJECT_SOURCE_DIR}/include/attnops.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/acl/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attnops-acl)

install(TARGETS attnops attnops_static attnops_acl EXPORT attnopsTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# ---- CMake package -----------------------------------------------------------
install(EXPORT attnopsTargets
        NAMESPACE attnops::
        FILE attnopsTargets.cmake
        DESTINATION ${ATTNOPS_INSTALL_CMAKEDIR})
configure_package_config_file(
    ${CMAKE_CURRENT_LIST_DIR}/attnopsConfig.cmake.in
    ${PROJECT_BINARY_DIR}/attnopsConfig.cmake
    INSTALL_DESTINATION ${ATTNOPS_INSTALL_CMAKEDIR})
write_basic_package_version_file(
    ${PROJECT_BINARY_DIR}/attnopsConfigVersion.cmake
    VERSION ${PROJECT_VERSION}
    COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/attnopsConfig.cmake ${PROJECT_BINARY_DIR}/attnopsConfigVersion.cmake
        DESTINATION ${ATTNOPS_INSTALL_CMAKEDIR})

# ---- pkg-config ----------------------------------------------------------------
# Libs.private: what linking libattnops.a needs, derived from the private link
# items (absolute archive paths stay paths, shared libraries become -l flags)
# plus the OpenMP runtime.
set(_attnops_pc_private "")
foreach(item IN LISTS ATTNOPS_PRIVATE_LIBS)
  if(IS_ABSOLUTE "${item}")
    if(item MATCHES "\\.a$")
      list(APPEND _attnops_pc_private "${item}")
    else()
      get_filename_component(_dir "${item}" DIRECTORY)
      get_filename_component(_name "${item}" NAME_WE)
      string(REGEX REPLACE "^lib" "" _name "${_name}")
      if(NOT _dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
        list(APPEND _attnops_pc_private "-L${_dir}")
      endif()
      list(APPEND _attnops_pc_private "-l${_name}")
    endif()
  elseif(item MATCHES "^-")
    list(APPEND _attnops_pc_private "${item}")
  elseif(NOT item STREQUAL "")
    list(APPEND _attnops_pc_private "-l${item}")
  endif()
endforeach()
if(OpenMP_C_LIB_NAMES)
  foreach(name IN LISTS OpenMP_C_LIB_NAMES)
    list(APPEND _attnops_pc_private "-l${name}")
  endforeach()
else()
  separate_arguments(_omp_flags UNIX_COMMAND "${OpenMP_C_FLAGS}")
  list(APPEND _attnops_pc_private ${_omp_flags})
endif()
list(REMOVE_DUPLICATES _attnops_pc_private)
list(JOIN _attnops_pc_private " " ATTNOPS_PC_LIBS_PRIVATE)

# The prefix is written when installing, so `cmake --install --prefix P`
# yields a .pc file that points at P.  Step 1 (now) fills in everything but
# the prefix; step 2 (at install time) fills in the prefix.
set(ATTNOPS_PC_PREFIX "@ATTNOPS_PC_PREFIX@")
configure_file(${CMAKE_CURRENT_LIST_DIR}/attnops.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/attnops.pc.in @ONLY)
install(CODE "
  set(ATTNOPS_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/pkgconfig/attnops.pc.in\" \"${PROJECT_BINARY_DIR}/pkgconfig/attnops.pc\" @ONLY)
")
install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/attnops.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# attnops-acl.pc: the CANN compatibility layer (CANN's include layout under
# include/attnops-acl, so `#include "acl/acl.h"` works with one -I).
configure_file(${CMAKE_CURRENT_LIST_DIR}/attnops-acl.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/attnops-acl.pc.in @ONLY)
install(CODE "
  set(ATTNOPS_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/pkgconfig/attnops-acl.pc.in\" \"${PROJECT_BINARY_DIR}/pkgconfig/attnops-acl.pc\" @ONLY)
")
install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/attnops-acl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
