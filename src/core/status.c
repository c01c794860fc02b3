/* Status codes and the thread-local "last error" sentence. */
#include <stdarg.h>
#include <stdio.h>

#include "core.h"

static _Thread_local char last_error[512];

attnops_status ao_fail(attnops_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void ao_clear_error(void) { last_error[0] = '\0'; }

const char *attnops_last_error(void) { return last_error; }

const char *attnops_status_string(attnops_status status)
{
    switch (status) {
    case ATTNOPS_SUCCESS: return "ATTNOPS_SUCCESS";
    case ATTNOPS_ERR_NULLPTR: return "ATTNOPS_ERR_NULLPTR";
    case ATTNOPS_ERR_PARAM_INVALID: return "ATTNOPS_ERR_PARAM_INVALID";
    case ATTNOPS_ERR_UNSUPPORTED: return "ATTNOPS_ERR_UNSUPPORTED";
    case ATTNOPS_ERR_OUT_OF_MEMORY: return "ATTNOPS_ERR_OUT_OF_MEMORY";
    case ATTNOPS_ERR_INTERNAL: return "ATTNOPS_ERR_INTERNAL";
    }
    return "ATTNOPS_UNKNOWN_STATUS";
}

#define AO_STR2(x) #x
#define AO_STR(x) AO_STR2(x)
const char *attnops_version(void)
{
    return AO_STR(ATTNOPS_VERSION_MAJOR) "." AO_STR(ATTNOPS_VERSION_MINOR) "." AO_STR(ATTNOPS_VERSION_PATCH);
}
