# test_acl: programs written against CANN's acl / aclnn API (libattnops_acl)
# get the native API's bits; executor reuse, validation and runtime errors
# get CANN's codes and a sentence.
# tests/acl_bridge.c: the FlashAttention aclnn entry points called from one
# call description, or from a native argument struct (test support).
add_library(attnops_acl_bridge STATIC acl_bridge.c)
target_include_directories(attnops_acl_bridge PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(attnops_acl_bridge PUBLIC attnops_acl attnops)
add_attnops_test(test_acl test_acl.c)
target_link_libraries(test_acl PRIVATE attnops_acl_bridge)

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
  # Samples from elsewhere, unmodified (e.g. the "调用示例" programs of
  # ops-transformer's docs, or its examples/): -DATTNOPS_ACL_SAMPLES_DIR=DIR
  # builds every DIR/*.cpp against libattnops_acl and runs it; each must exit 0.
  set(ATTNOPS_ACL_SAMPLES_DIR "" CACHE PATH "A directory of CANN sample programs (*.cpp) to build and run unchanged")
  if(ATTNOPS_ACL_SAMPLES_DIR)
    file(GLOB ATTNOPS_ACL_EXTERNAL_SAMPLES ${ATTNOPS_ACL_SAMPLES_DIR}/*.cpp)
    if(NOT ATTNOPS_ACL_EXTERNAL_SAMPLES)
      message(FATAL_ERROR "ATTNOPS_ACL_SAMPLES_DIR=${ATTNOPS_ACL_SAMPLES_DIR} holds no *.cpp sample")
    endif()
    foreach(src ${ATTNOPS_ACL_EXTERNAL_SAMPLES})
      get_filename_component(name ${src} NAME_WE)
      add_executable(acl_external_${name} ${src})
      target_link_libraries(acl_external_${name} PRIVATE attnops_acl)
      set_target_properties(acl_external_${name} PROPERTIES CXX_STANDARD 11 CXX_EXTENSIONS OFF)
      add_test(NAME acl_external_${name} COMMAND acl_external_${name})
    endforeach()
  endif()
else()
  add_test(NAME acl_samples
           COMMAND sh -c "echo 'FAIL: no C++ compiler for the CANN samples (scripts/setup.sh installs g++)'; exit 1")
endif()
