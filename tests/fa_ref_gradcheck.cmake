# The reference backward (fa_ref_backward_f64) against central finite
# differences of the reference forward, in double.
add_attnops_test(fa_ref_gradcheck test_fa_ref_gradcheck.c)
