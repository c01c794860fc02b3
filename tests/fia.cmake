# FusedInferAttentionScore from C, per ISA: the fast kernel against the
# golden, its bits across thread counts, canaries, a refusal (the golden
# against an independent oracle is python/tests/test_fia.py).
add_attnops_test_per_isa(test_fia test_fia.c)
