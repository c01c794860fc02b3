# The output-shape queries against the operators' stated shapes, on shape-only tensors; the call accepts them.
add_attnops_test(output_shapes test_output_shapes.c)
