/* attnops' CANN compatibility layer: acl/acl.h as host programs include it. */
#ifndef ATTNOPS_ACL_ACL_H
#define ATTNOPS_ACL_ACL_H

#include "acl_base.h"
#include "acl_rt.h"

#endif
