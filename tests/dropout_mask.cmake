add_attnops_test_per_isa(test_dropout_mask ${CMAKE_CURRENT_SOURCE_DIR}/test_dropout_mask.c)
# The CLI's .npy against the independent Python stream of spec 5.
add_test(NAME dropout_mask_cli
         COMMAND ${ATTNOPS_VENV_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tools/check_dropout_npy.py
                 ${ATTNOPS_CLI} ${CMAKE_CURRENT_BINARY_DIR}/dropout_npy)
