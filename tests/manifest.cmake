# Hostile manifests for attnops compare: unsafe paths, symbolic links,
# duplicate keys, bad names and fields (verify/manifest.h).
add_attnops_test(test_manifest ${CMAKE_CURRENT_SOURCE_DIR}/test_manifest.c ${CMAKE_CURRENT_BINARY_DIR})
