# Argument validation of FlashAttentionScore / FlashAttentionScoreGrad:
# status codes, error sentences, no partial writes (spec 8.2, attnops.h),
# through the native entry points and (fa_validation_acl) through CANN's
# aclnn ones (libattnops_acl, by way of tests/support/acl_bridge.c).
add_attnops_test(fa_validation test_fa_validation.c)
target_link_libraries(fa_validation PRIVATE attnops_acl_bridge)
add_test(NAME fa_validation_acl COMMAND fa_validation --through-acl)
