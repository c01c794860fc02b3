# install_pkgconfig: install this build into a temporary prefix and build a
# tiny consumer against it through pkg-config and find_package(attnops).
# Native builds only: the consumer is built and run with the host's tools.
if(CMAKE_CROSSCOMPILING)
  return()
endif()
add_test(NAME install_pkgconfig
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_install.sh
                 ${PROJECT_BINARY_DIR} ${CMAKE_COMMAND} ${CMAKE_C_COMPILER})
set_tests_properties(install_pkgconfig PROPERTIES TIMEOUT 300 LABELS install)
