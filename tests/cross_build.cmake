# The portable path builds with a non-x86 compiler (aarch64 cross gcc from
# scripts/setup.sh): the x86 ISA folders and builtins are x86-64 only.
add_test(NAME portable_cross_build
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_cross_build.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(portable_cross_build PROPERTIES SKIP_RETURN_CODE 77)
