# Argument validation of Block Attention Residuals, forward and backward:
# status codes, error sentences, outputs untouched and inputs unchanged on
# failure, the valid variants (spec B.1 / B.2, attnops.h).
add_attnops_test(attnres_validation test_attnres_validation.c)
