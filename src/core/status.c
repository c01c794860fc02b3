/* Status codes, the thread-local "last error" sentence and the once-per-process
 * fallback warnings. */
#include <pthread.h>
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

static void warn_to_stderr(const char *sentence, void *user)
{
    (void)user;
    fprintf(stderr, "attnops: warning: %s\n", sentence);
}

/* The handler and its argument change together under the lock; a warning
 * is rare (once per kind), so the lock costs nothing on the hot path. */
static pthread_mutex_t warning_lock = PTHREAD_MUTEX_INITIALIZER;
static attnops_warning_handler warning_handler = warn_to_stderr;
static void *warning_user;

void attnops_set_warning_handler(attnops_warning_handler handler, void *user)
{
    pthread_mutex_lock(&warning_lock);
    warning_handler = handler ? handler : warn_to_stderr;
    warning_user = handler ? user : NULL;
    pthread_mutex_unlock(&warning_lock);
}

void ao_warn_once(atomic_bool *once, const char *fmt, ...)
{
    if (atomic_exchange(once, true)) return;
    char sentence[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof sentence, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&warning_lock);
    warning_handler(sentence, warning_user);
    pthread_mutex_unlock(&warning_lock);
}

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
