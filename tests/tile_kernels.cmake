add_attnops_test(test_tile_kernels ${CMAKE_CURRENT_SOURCE_DIR}/test_tile_kernels.c)
