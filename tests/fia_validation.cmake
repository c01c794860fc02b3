# Argument validation of FusedInferAttentionScore: one failure case per
# refusal site of src/fia/fia_validate.c, src/fia/fia_antiquant.c and
# src/api/fia_api.c (status codes, error sentences, no partial writes;
# docs/INFER_ATTENTION.md "Validation").  The argument is the source root:
# the test counts the sites there, so a new rule without a row fails it.
add_attnops_test(fia_validation test_fia_validation.c ${PROJECT_SOURCE_DIR})
