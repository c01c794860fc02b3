# The packers and unpackers alone, once per ISA (their f16/bf16 rows run the
# ISA's conversion kernels): every dtype, unit-stride and strided views.
add_attnops_test_per_isa(test_pack ${CMAKE_CURRENT_SOURCE_DIR}/test_pack.c)
