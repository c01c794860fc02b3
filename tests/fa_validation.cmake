# Argument validation of FlashAttentionScore / FlashAttentionScoreGrad:
# status codes, error sentences, no partial writes (spec 8.2, attnops.h).
add_attnops_test(fa_validation test_fa_validation.c)
