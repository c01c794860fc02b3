# Argument validation of KeyPool: status codes, error sentences, the state
# cache and the output untouched on failure (spec A.2, attnops.h).
add_attnops_test(keypool_validation test_keypool_validation.c)
