# The golden's plain element loops (no mask, pse, FP8, chain rounding)
# against its general ones, bit for bit on the double cores.
add_attnops_test(fa_ref_paths test_fa_ref_paths.c)
