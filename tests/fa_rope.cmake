# MLA rope inputs are concatenation on the head dim, bit for bit in both
# implementations (spec 1.3).
add_attnops_test(test_fa_rope ${CMAKE_CURRENT_SOURCE_DIR}/test_fa_rope.c)
