# The golden's block products (src/ref/ref_block.c) against their scalar
# definitions, bit for bit, in three builds: the ISA clones (the loader picks
# this CPU's), AVX2 only, and baseline x86-64 -- the golden's bits must not
# depend on the CPU.
set(REF_BLOCK_VARIANTS clones)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64" AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  list(APPEND REF_BLOCK_VARIANTS avx2 baseline)
endif()
foreach(variant ${REF_BLOCK_VARIANTS})
  add_executable(test_ref_block_${variant} test_ref_block.c ${PROJECT_SOURCE_DIR}/src/ref/ref_block.c)
  target_include_directories(test_ref_block_${variant} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(test_ref_block_${variant} PRIVATE -O3 -ffp-contract=off)
  add_test(NAME ref_block_${variant} COMMAND test_ref_block_${variant})
endforeach()
if(TARGET test_ref_block_avx2)
  target_compile_definitions(test_ref_block_avx2 PRIVATE REF_BLOCK_NO_CLONES)
  target_compile_options(test_ref_block_avx2 PRIVATE -mavx2)
  target_compile_definitions(test_ref_block_baseline PRIVATE REF_BLOCK_NO_CLONES)
endif()
foreach(variant ${REF_BLOCK_VARIANTS})
  set_tests_properties(ref_block_${variant} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
