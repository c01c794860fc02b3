add_attnops_test_per_isa(test_fa_masks ${CMAKE_CURRENT_SOURCE_DIR}/test_fa_masks.c)
