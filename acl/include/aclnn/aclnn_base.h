/* attnops' CANN compatibility layer: aclnn/aclnn_base.h, with the aclnn
 * status codes (CANN's opdev/op_errno.h numbers). */
#ifndef ATTNOPS_ACL_ACLNN_BASE_H
#define ATTNOPS_ACL_ACLNN_BASE_H

#include "aclnn/acl_meta.h"

#define ACLNN_SUCCESS 0
#define ACLNN_ERR_PARAM_NULLPTR 161001
#define ACLNN_ERR_PARAM_INVALID 161002
#define ACLNN_ERR_RUNTIME_ERROR 361001
#define ACLNN_ERR_INNER 561000
#define ACLNN_ERR_INNER_NULLPTR 561103

#endif
