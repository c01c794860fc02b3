# test_acl: programs written against CANN's acl / aclnn API (libattnops_acl)
# get the native API's bits; executor reuse, validation and runtime errors
# get CANN's codes and a sentence.
# tests/support/acl_bridge.c: the FlashAttention aclnn entry points called from one
# call description, or from a native argument struct (test support).
add_library(attnops_acl_bridge STATIC support/acl_bridge.c)
target_include_directories(attnops_acl_bridge PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/support)
target_link_libraries(attnops_acl_bridge PUBLIC attnops_acl attnops)
add_attnops_test(test_acl test_acl.c)
target_link_libraries(test_acl PRIVATE attnops_acl_bridge)
# tests/support/acl_fia_args.c: a FusedInferAttentionScore case as aclTensors over its memory (test support).
add_library(attnops_acl_fia_args STATIC support/acl_fia_args.c)
target_link_libraries(attnops_acl_fia_args PUBLIC attnops_acl_bridge attnops_test_support)
# FusedInferAttentionScoreV3 through aclnn: the native call's bytes, tensor lists, refusals.
add_attnops_test(test_acl_fia test_acl_fia.c)
target_link_libraries(test_acl_fia PRIVATE attnops_acl_fia_args)
# FusedInferAttentionScore V1-V5, IncreFlashAttention V1-V4, PromptFlashAttention V1-V3 through aclnn: the
# native call's bytes, each entry with each optional tensor it takes (one at a time), each entry's refusals.
add_attnops_test(test_acl_fia_versions test_acl_fia_versions.c)
target_link_libraries(test_acl_fia_versions PRIVATE attnops_acl_fia_args)
# KeyPool through aclnn: the native call's pooled_key and cache bytes, the refusals.
add_attnops_test(test_acl_key_pool test_acl_key_pool.c)
target_link_libraries(test_acl_key_pool PRIVATE attnops_acl_fia_args)

# CANN's documented sample programs, compiled unchanged (C++), run against
# libattnops_acl; each output must be the text its native-API twin prints.
# tests/acl_samples/ says where each sample comes from.  A C++ compiler is
# required (scripts/setup.sh installs g++): without one the test fails.
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  # The native twin of every sample whose output is compared (below).
  add_executable(cann_doc_sample_native ${CMAKE_CURRENT_SOURCE_DIR}/acl_samples/cann_doc_sample_native.c)
  target_link_libraries(cann_doc_sample_native PRIVATE attnops)
  # The seed's UnpaddingScoreGradV2 sample (FLOAT tensors).
  add_executable(acl_sample_unpadding_score_grad_v2 ${CMAKE_CURRENT_SOURCE_DIR}/acl_samples/unpadding_score_grad_v2.cpp)
  target_link_libraries(acl_sample_unpadding_score_grad_v2 PRIVATE attnops_acl)
  # as CANN's sample CMakeLists builds them
  set_target_properties(acl_sample_unpadding_score_grad_v2 PROPERTIES CXX_STANDARD 11 CXX_EXTENSIONS OFF)
  attnops_program(acl_sample acl_sample_unpadding_score_grad_v2)
  attnops_program(doc_sample cann_doc_sample_native)
  foreach(impl cpu reference)
    add_test(NAME acl_sample_unpadding_score_grad_v2_${impl}
             COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_acl_sample.sh ${acl_sample} ${doc_sample}
                     aclnnFlashAttentionUnpaddingScoreGradV2 f32)
    set_tests_properties(acl_sample_unpadding_score_grad_v2_${impl} PROPERTIES ENVIRONMENT ATTNOPS_ACL_IMPL=${impl})
  endforeach()
  # CANN's own sample programs, unmodified, from the user's copy: attnops
  # does not carry them (their licence allows use with Huawei processors only,
  # docs/ACL.md).
  #   -DATTNOPS_OPS_TRANSFORMER_DIR=DIR: the sample ("调用示例") of each of the
  #      eight entry points' pages in an ops-transformer checkout, extracted by
  #      tests/tools/cann_doc_samples.py into the build tree;
  #   -DATTNOPS_ACL_SAMPLES_DIR=DIR: every DIR/*.cpp (e.g. its examples/).
  # Each is built against libattnops_acl and run with both implementations;
  # each must exit 0, and the pages' samples must print what their native
  # twin prints.  Without either, acl_cann_samples says SKIPPED.
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
  # The pages' samples acl_samples/cann_doc_sample_native.c was written for
  # (ops-transformer c29bc10), by SHA-256: those are also compared with it,
  # output for output; any other program is run and must exit 0.
  set(cann_sample_sha256_aclnnFlashAttentionScore b8613247a3bb44f07dc7aa2db641818956dc5a3486efef3a78329029b35e9308)
  set(cann_sample_sha256_aclnnFlashAttentionScoreV2 77e556ae5e9bb447121d5323634b6aafcf5ae9fdb70610331d4eaf6568a9faac)
  set(cann_sample_sha256_aclnnFlashAttentionVarLenScore d656ed343df074427e68c5d07e01145bc30f6f72a674b806c9aacbbfdbcd5567)
  set(cann_sample_sha256_aclnnFlashAttentionVarLenScoreV2 ea9a6f4e7ddadd98d7bda39ccf3f34ce9525477511d4b7a76a47c44d7e0b766d)
  set(cann_sample_sha256_aclnnFlashAttentionScoreGrad ec9714ab03dbf00e57abb8671f4145c1895cceca2a11d426a72e7731e024c9f9)
  set(cann_sample_sha256_aclnnFlashAttentionScoreGradV2 e792285c8c136a76e4d49cc2dd22dbfff25265b5abaafa4c05fce3ed5a2463fe)
  set(cann_sample_sha256_aclnnFlashAttentionUnpaddingScoreGrad 44d4a6f5b39b3114210c67038ca337208bf2bef051a404e40e733eb704061c6f)
  set(cann_sample_sha256_aclnnFlashAttentionUnpaddingScoreGradV2 cae868059cc829bfe811fb28fff9f4ec51c52b64316c845edd32683a23740eee)
  # The twin's page inputs run in every build, so that it stays right where no pages are at hand.
  add_test(NAME cann_doc_sample_native
           COMMAND sh -c "for e in Score ScoreV2 VarLenScore VarLenScoreV2 ScoreGrad ScoreGradV2 UnpaddingScoreGrad UnpaddingScoreGradV2; do ${doc_sample} aclnnFlashAttention$e >/dev/null || exit 1; done")
  foreach(src ${ATTNOPS_CANN_SAMPLES})
    get_filename_component(name ${src} NAME_WE)
    add_executable(acl_cann_${name} ${src})
    target_link_libraries(acl_cann_${name} PRIVATE attnops_acl)
    set_target_properties(acl_cann_${name} PROPERTIES CXX_STANDARD 11 CXX_EXTENSIONS OFF)
    file(SHA256 ${src} sha)
    set(compared OFF)
    if(sha STREQUAL "${cann_sample_sha256_${name}}")
      set(compared ON)
    elseif(DEFINED cann_sample_sha256_${name})
      message(STATUS "${src}: not the page cann_doc_sample_native.c was written for; run, not compared")
    endif()
    attnops_program(cann_sample acl_cann_${name})
    foreach(impl cpu reference)
      if(compared)
        add_test(NAME acl_cann_${name}_${impl}
                 COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_acl_sample.sh ${cann_sample} ${doc_sample} ${name})
      else()
        add_test(NAME acl_cann_${name}_${impl} COMMAND acl_cann_${name})
      endif()
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
