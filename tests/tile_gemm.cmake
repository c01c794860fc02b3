# The tile GEMMs alone, once per ISA: every kind on ragged shapes and padded
# leading dimensions against double, and the fp32 kinds on the build's GEMM
# library (libxsmm; the neon set's gemm.f32 on AArch64) wherever the ISA allows it.
add_attnops_test_per_isa(test_tile_gemm ${CMAKE_CURRENT_SOURCE_DIR}/test_tile_gemm.c)
if(ATTNOPS_HAVE_LIBXSMM OR ATTNOPS_AARCH64)
  target_compile_definitions(test_tile_gemm PRIVATE ATTNOPS_TEST_GEMM_LIBRARY=1)
endif()
