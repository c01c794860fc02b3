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
  # CANN's own sample programs, unmodified, from the user's copy: attnops
  # does not carry them (their licence allows use with Huawei processors only,
  # docs/ACL.md).
  #   -DATTNOPS_OPS_TRANSFORMER_DIR=DIR: the sample ("调用示例") of each of the
  #      eight entry points' pages in an ops-transformer checkout, extracted by
  #      tests/tools/cann_doc_samples.py into the build tree;
  #   -DATTNOPS_ACL_SAMPLES_DIR=DIR: every DIR/*.cpp (e.g. its examples/).
  # Each is built against libattnops_acl and run with both implementations;
  # each must exit 0.  Without either, acl_cann_samples says SKIPPED.
  set(ATTNOPS_OPS_TRANSFORMER_DIR "" CACHE PATH "An ops-transformer checkout whose aclnn doc samples to build and run")
  set(ATTNOPS_ACL_SAMPLES_DIR "" CACHE PATH "A directory of CANN sample programs (*.cpp) to build and run unchanged")
  set(ATTNOPS_CANN_SAMPLES "")
  if(ATTNOPS_OPS_TRANSFORMER_DIR)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
    set(doc_samples_dir ${CMAKE_CURRENT_BINARY_DIR}/cann_doc_samples)
    execute_process(COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tools/cann_doc_samples.py
                            ${ATTNOPS_OPS_TRANSFORMER_DIR} ${doc_samples_dir}
                    RESULT_VARIABLE doc_samples_rc)
    if(NOT doc_samples_rc EQUAL 0)
      message(FATAL_ERROR "ATTNOPS_OPS_TRANSFORMER_DIR=${ATTNOPS_OPS_TRANSFORMER_DIR}: the doc samples could not be extracted")
    endif()
    file(GLOB doc_samples ${doc_samples_dir}/*.cpp)
    list(APPEND ATTNOPS_CANN_SAMPLES ${doc_samples})
  endif()
  if(ATTNOPS_ACL_SAMPLES_DIR)
    file(GLOB dir_samples ${ATTNOPS_ACL_SAMPLES_DIR}/*.cpp)
    if(NOT dir_samples)
      message(FATAL_ERROR "ATTNOPS_ACL_SAMPLES_DIR=${ATTNOPS_ACL_SAMPLES_DIR} holds no *.cpp sample")
    endif()
    list(APPEND ATTNOPS_CANN_SAMPLES ${dir_samples})
  endif()
  foreach(src ${ATTNOPS_CANN_SAMPLES})
    get_filename_component(name ${src} NAME_WE)
    add_executable(acl_cann_${name} ${src})
    target_link_libraries(acl_cann_${name} PRIVATE attnops_acl)
    set_target_properties(acl_cann_${name} PROPERTIES CXX_STANDARD 11 CXX_EXTENSIONS OFF)
    foreach(impl cpu reference)
      add_test(NAME acl_cann_${name}_${impl} COMMAND acl_cann_${name})
      set_tests_properties(acl_cann_${name}_${impl} PROPERTIES ENVIRONMENT ATTNOPS_ACL_IMPL=${impl})
    endforeach()
  endforeach()
  if(NOT ATTNOPS_CANN_SAMPLES)
    add_test(NAME acl_cann_samples
             COMMAND sh -c "echo 'SKIPPED: CANN sample programs need -DATTNOPS_OPS_TRANSFORMER_DIR or -DATTNOPS_ACL_SAMPLES_DIR (docs/ACL.md)'; exit 77")
    set_tests_properties(acl_cann_samples PROPERTIES SKIP_RETURN_CODE 77)
  endif()
else()
  add_test(NAME acl_samples
           COMMAND sh -c "echo 'FAIL: no C++ compiler for the CANN samples (scripts/setup.sh installs g++)'; exit 1")
endif()
