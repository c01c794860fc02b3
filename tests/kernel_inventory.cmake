add_attnops_test(test_kernel_inventory ${CMAKE_CURRENT_SOURCE_DIR}/test_kernel_inventory.c)
target_sources(test_kernel_inventory PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/check_ref_block.c)
# the golden blocks' scalar definitions: no FMA contraction, as in the library
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/check_ref_block.c PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
