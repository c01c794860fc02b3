# test_acl: programs written against CANN's acl / aclnn API (libattnops_acl)
# get the native API's bits; executor reuse, validation and runtime errors
# get CANN's codes and a sentence.
add_attnops_test(test_acl test_acl.c)
target_link_libraries(test_acl PRIVATE attnops_acl)

# CANN's documented sample programs, compiled unchanged (C++), run against
# libattnops_acl; each output must be the text its native-API twin prints.
# tests/acl_samples/ says where each sample comes from.  A C++ compiler is
# required (scripts/setup.sh installs g++): without one the test fails.
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  foreach(sample unpadding_score_grad_v2)
    add_executable(acl_sample_${sample} ${CMAKE_CURRENT_SOURCE_DIR}/acl_samples/${sample}.cpp)
    target_link_libraries(acl_sample_${sample} PRIVATE attnops_acl)
    # as CANN's sample CMakeLists builds them
    set_target_properties(acl_sample_${sample} PROPERTIES CXX_STANDARD 11 CXX_EXTENSIONS OFF)
    add_executable(acl_sample_${sample}_native ${CMAKE_CURRENT_SOURCE_DIR}/acl_samples/${sample}_native.c)
    target_link_libraries(acl_sample_${sample}_native PRIVATE attnops)
    foreach(impl cpu reference)
      add_test(NAME acl_sample_${sample}_${impl}
               COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_acl_sample.sh
                       $<TARGET_FILE:acl_sample_${sample}> $<TARGET_FILE:acl_sample_${sample}_native>)
      set_tests_properties(acl_sample_${sample}_${impl} PROPERTIES ENVIRONMENT ATTNOPS_ACL_IMPL=${impl})
    endforeach()
  endforeach()
else()
  add_test(NAME acl_samples
           COMMAND sh -c "echo 'FAIL: no C++ compiler for the CANN samples (scripts/setup.sh installs g++)'; exit 1")
endif()
