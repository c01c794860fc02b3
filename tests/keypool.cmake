# KeyPool: reference vs an independent oracle bit for bit, the fast kernel
# by the seed's rule, cache writes, capacities, decode (spec A.3-A.7); the
# built-in keypool-seed suite is the seed's four cases.
add_attnops_test_per_isa(keypool test_keypool.c ${PROJECT_SOURCE_DIR}/verify/suites/keypool_seed.json)
