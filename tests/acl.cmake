# test_acl: programs written against CANN's acl / aclnn API (libattnops_acl)
# get the native API's bits; executor reuse, validation and runtime errors
# get CANN's codes and a sentence.
add_attnops_test(test_acl test_acl.c)
target_link_libraries(test_acl PRIVATE attnops_acl)
