add_attnops_test(test_dropout_mask ${CMAKE_CURRENT_SOURCE_DIR}/test_dropout_mask.c)
