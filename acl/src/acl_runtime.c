/* The acl runtime on the CPU: one device (id 0), host memory, synchronous
 * streams, contexts that carry the deterministic option, the thread's last
 * error sentence (docs/ACL.md). */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl_internal.h"

static _Thread_local char recent_error[512];
static atomic_bool initialised;
static atomic_llong deterministic_mode; /* the process's (aclrtSetSysParamOpt) */

/* A context holds its own deterministic option (-1: the process's).  The
 * default context (the device's, used while a thread has set none) is not a
 * handle: it cannot be destroyed. */
typedef struct acl_context {
    atomic_llong deterministic;
} acl_context;
static acl_context default_context = {-1};
static _Thread_local acl_context *current_context; /* NULL: the default context */

static acl_context *context_now(void)
{
    acl_context *c = current_context;
    /* a context destroyed while current here (CANN leaves that undefined) counts as none */
    return c && acl_handle_live(ACL_HANDLE_CONTEXT, (uintptr_t)c) ? c : &default_context;
}

void acl_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(recent_error, sizeof recent_error, fmt, ap);
    va_end(ap);
}

aclnnStatus acl_status_from(attnops_status status)
{
    if (status == ATTNOPS_SUCCESS) return ACLNN_SUCCESS;
    acl_set_error("%s", attnops_last_error());
    switch (status) {
    case ATTNOPS_ERR_NULLPTR: return ACLNN_ERR_PARAM_NULLPTR;
    case ATTNOPS_ERR_PARAM_INVALID:
    case ATTNOPS_ERR_UNSUPPORTED: return ACLNN_ERR_PARAM_INVALID;
    case ATTNOPS_ERR_OUT_OF_MEMORY: return ACLNN_ERR_RUNTIME_ERROR;
    default: return ACLNN_ERR_INNER;
    }
}

int64_t acl_deterministic(void)
{
    const long long own = atomic_load(&context_now()->deterministic);
    return own >= 0 ? own : atomic_load(&deterministic_mode);
}

/* ---- live handles: an open-addressing set of (kind, pointer), doubled when half full */
typedef struct handle {
    uintptr_t p; /* 0: empty; TOMBSTONE: removed */
    acl_handle_kind kind;
} handle;

static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static handle *handles;
static size_t handles_cap, handles_used; /* cap a power of two; used counts tombstones too */
#define TOMBSTONE ((uintptr_t)1) /* no allocation has an odd address */

static size_t slot_of(uintptr_t p, size_t cap) { return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1); }

static handle *find(acl_handle_kind kind, uintptr_t p)
{
    if (!handles_cap) return NULL;
    for (size_t i = slot_of(p, handles_cap);; i = (i + 1) & (handles_cap - 1)) {
        if (!handles[i].p) return NULL;
        if (handles[i].p == p && handles[i].kind == kind) return &handles[i];
    }
}

/* Rehash without tombstones, doubling only when live handles fill a quarter
 * (so alloc / free churn does not grow the table). */
static bool grow(void)
{
    size_t live = 0;
    for (size_t i = 0; i < handles_cap; i++) live += handles[i].p && handles[i].p != TOMBSTONE;
    const size_t cap = !handles_cap ? 256 : live * 4 >= handles_cap ? handles_cap * 2 : handles_cap;
    handle *h = calloc(cap, sizeof *h);
    if (!h) return false;
    size_t used = 0;
    for (size_t i = 0; i < handles_cap; i++)
        if (handles[i].p && handles[i].p != TOMBSTONE) {
            size_t j = slot_of(handles[i].p, cap);
            while (h[j].p) j = (j + 1) & (cap - 1);
            h[j] = handles[i], used++;
        }
    free(handles);
    handles = h, handles_cap = cap, handles_used = used;
    return true;
}

bool acl_handle_add(acl_handle_kind kind, uintptr_t p)
{
    pthread_mutex_lock(&handles_lock);
    bool ok = (handles_used + 1) * 2 <= handles_cap || grow();
    if (ok) {
        size_t i = slot_of(p, handles_cap);
        while (handles[i].p && handles[i].p != TOMBSTONE) i = (i + 1) & (handles_cap - 1);
        if (!handles[i].p) handles_used++;
        handles[i] = (handle){p, kind};
    }
    pthread_mutex_unlock(&handles_lock);
    return ok;
}

bool acl_handle_take(acl_handle_kind kind, uintptr_t p)
{
    pthread_mutex_lock(&handles_lock);
    handle *h = find(kind, p);
    if (h) h->p = TOMBSTONE;
    pthread_mutex_unlock(&handles_lock);
    return h != NULL;
}

bool acl_handle_live(acl_handle_kind kind, uintptr_t p)
{
    pthread_mutex_lock(&handles_lock);
    const bool live = find(kind, p) != NULL;
    pthread_mutex_unlock(&handles_lock);
    return live;
}

const char *aclGetRecentErrMsg(void) { return recent_error[0] ? recent_error : NULL; }

aclError aclInit(const char *configPath)
{
    (void)configPath; /* no configuration items are emulated */
    if (atomic_exchange(&initialised, true)) {
        acl_set_error("aclInit: already initialised (call aclFinalize first).");
        return ACL_ERROR_REPEAT_INITIALIZE;
    }
    return ACL_SUCCESS;
}

aclError aclFinalize(void)
{
    if (!atomic_exchange(&initialised, false)) {
        acl_set_error("aclFinalize: aclInit was not called.");
        return ACL_ERROR_UNINITIALIZE;
    }
    return ACL_SUCCESS;
}

static aclError check_device(const char *fn, int32_t device)
{
    if (device == 0) return ACL_SUCCESS;
    acl_set_error("%s: deviceId %d does not exist; the CPU is the only device, id 0.", fn, device);
    return ACL_ERROR_RT_INVALID_DEVICEID;
}

aclError aclrtSetDevice(int32_t deviceId) { return check_device("aclrtSetDevice", deviceId); }
aclError aclrtResetDevice(int32_t deviceId) { return check_device("aclrtResetDevice", deviceId); }
aclError aclrtSynchronizeDevice(void) { return ACL_SUCCESS; } /* work runs synchronously */

aclError aclrtGetDevice(int32_t *deviceId)
{
    if (!deviceId) {
        acl_set_error("aclrtGetDevice: deviceId is NULL.");
        return ACL_ERROR_INVALID_PARAM;
    }
    *deviceId = 0;
    return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t *count)
{
    if (!count) {
        acl_set_error("aclrtGetDeviceCount: count is NULL.");
        return ACL_ERROR_INVALID_PARAM;
    }
    *count = 1;
    return ACL_SUCCESS;
}

/* The one option there is; false (with the sentence) for any other. */
static bool known_opt(const char *fn, aclSysParamOpt opt)
{
    if (opt == ACL_OPT_DETERMINISTIC) return true;
    acl_set_error("%s: option %d is not supported (only ACL_OPT_DETERMINISTIC).", fn, (int)opt);
    return false;
}

static aclError set_opt(const char *fn, aclSysParamOpt opt, int64_t value, atomic_llong *where)
{
    if (!known_opt(fn, opt)) return ACL_ERROR_API_NOT_SUPPORT;
    if (value != 0 && value != 1) {
        acl_set_error("%s: ACL_OPT_DETERMINISTIC value %lld must be 0 or 1.", fn, (long long)value);
        return ACL_ERROR_INVALID_PARAM;
    }
    atomic_store(where, value);
    return ACL_SUCCESS;
}

static aclError get_opt(const char *fn, aclSysParamOpt opt, int64_t *value, int64_t now)
{
    if (!value) {
        acl_set_error("%s: value is NULL.", fn);
        return ACL_ERROR_INVALID_PARAM;
    }
    if (!known_opt(fn, opt)) return ACL_ERROR_API_NOT_SUPPORT;
    *value = now;
    return ACL_SUCCESS;
}

/* The context's option wins over the process's while it is set. */
aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value)
{
    return set_opt("aclrtCtxSetSysParamOpt", opt, value, &context_now()->deterministic);
}
aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value)
{
    return set_opt("aclrtSetSysParamOpt", opt, value, &deterministic_mode);
}
aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value)
{
    return get_opt("aclrtCtxGetSysParamOpt", opt, value, acl_deterministic());
}
aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t *value)
{
    return get_opt("aclrtGetSysParamOpt", opt, value, atomic_load(&deterministic_mode));
}

/* ---- contexts ---------------------------------------------------------------- */
aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId)
{
    if (!context) {
        acl_set_error("aclrtCreateContext: context is NULL.");
        return ACL_ERROR_INVALID_PARAM;
    }
    const aclError st = check_device("aclrtCreateContext", deviceId);
    if (st != ACL_SUCCESS) return st;
    acl_context *c = malloc(sizeof *c);
    if (!c || !acl_handle_add(ACL_HANDLE_CONTEXT, (uintptr_t)c)) {
        free(c);
        acl_set_error("aclrtCreateContext: out of memory.");
        return ACL_ERROR_BAD_ALLOC;
    }
    atomic_init(&c->deterministic, -1);
    current_context = c; /* as on the device, a new context is the creating thread's current one */
    *context = c;
    return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context)
{
    if (!context || !acl_handle_take(ACL_HANDLE_CONTEXT, (uintptr_t)context)) {
        acl_set_error("aclrtDestroyContext: context %p is not a live context from aclrtCreateContext.", context);
        return ACL_ERROR_INVALID_PARAM;
    }
    if (current_context == context) current_context = NULL;
    free(context);
    return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context)
{
    if (!context || !acl_handle_live(ACL_HANDLE_CONTEXT, (uintptr_t)context)) {
        acl_set_error("aclrtSetCurrentContext: context %p is not a live context from aclrtCreateContext.", context);
        return ACL_ERROR_INVALID_PARAM;
    }
    current_context = context;
    return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context)
{
    if (!context) {
        acl_set_error("aclrtGetCurrentContext: context is NULL.");
        return ACL_ERROR_INVALID_PARAM;
    }
    *context = context_now();
    return ACL_SUCCESS;
}

/* ---- streams: the work of an aclnn call runs inside the call ---------------- */
typedef struct acl_stream {
    char unused; /* a distinct address per stream */
} acl_stream;

static bool stream_ok(const char *fn, aclrtStream stream)
{
    if (!stream || acl_handle_live(ACL_HANDLE_STREAM, (uintptr_t)stream)) return true; /* NULL: the default stream */
    acl_set_error("%s: stream %p is not a stream from aclrtCreateStream (or was destroyed).", fn, stream);
    return false;
}

aclError aclrtCreateStream(aclrtStream *stream)
{
    if (!stream) {
        acl_set_error("aclrtCreateStream: stream is NULL.");
        return ACL_ERROR_INVALID_PARAM;
    }
    acl_stream *s = malloc(sizeof *s);
    if (!s || !acl_handle_add(ACL_HANDLE_STREAM, (uintptr_t)s)) {
        free(s);
        acl_set_error("aclrtCreateStream: out of memory.");
        return ACL_ERROR_BAD_ALLOC;
    }
    *stream = s;
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream)
{
    if (!stream || !acl_handle_take(ACL_HANDLE_STREAM, (uintptr_t)stream)) {
        acl_set_error("aclrtDestroyStream: stream %p is not a live stream from aclrtCreateStream.", stream);
        return ACL_ERROR_INVALID_PARAM;
    }
    free(stream);
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream)
{
    return stream_ok("aclrtSynchronizeStream", stream) ? ACL_SUCCESS : ACL_ERROR_INVALID_PARAM;
}

/* ---- memory: "device" memory is host memory ----------------------------------- */
static aclError host_alloc(const char *fn, void **ptr, size_t size)
{
    if (!ptr || size == 0) {
        acl_set_error("%s: %s.", fn, !ptr ? "the pointer argument is NULL" : "size is 0");
        return ACL_ERROR_INVALID_PARAM;
    }
    /* 64-byte aligned like the device's allocations (32 B at least there) */
    void *p = aligned_alloc(64, (size + 63) / 64 * 64);
    if (p && !acl_handle_add(ACL_HANDLE_MEMORY, (uintptr_t)p)) free(p), p = NULL;
    if (!p) {
        acl_set_error("%s: out of memory for %zu bytes.", fn, size);
        return ACL_ERROR_BAD_ALLOC;
    }
    *ptr = p;
    return ACL_SUCCESS;
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy)
{
    if ((int)policy < ACL_MEM_MALLOC_HUGE_FIRST || (int)policy > ACL_MEM_MALLOC_NORMAL_ONLY_P2P) {
        acl_set_error("aclrtMalloc: policy %d is not an aclrtMemMallocPolicy.", (int)policy);
        return ACL_ERROR_INVALID_PARAM;
    }
    return host_alloc("aclrtMalloc", devPtr, size);
}

aclError aclrtMallocHost(void **hostPtr, size_t size) { return host_alloc("aclrtMallocHost", hostPtr, size); }

static aclError host_free(const char *fn, void *ptr)
{
    if (!ptr || !acl_handle_take(ACL_HANDLE_MEMORY, (uintptr_t)ptr)) {
        acl_set_error("%s: %p is not memory from aclrtMalloc / aclrtMallocHost (or was freed already).", fn, ptr);
        return ACL_ERROR_INVALID_PARAM;
    }
    free(ptr);
    return ACL_SUCCESS;
}

aclError aclrtFree(void *devPtr) { return host_free("aclrtFree", devPtr); }
aclError aclrtFreeHost(void *hostPtr) { return host_free("aclrtFreeHost", hostPtr); }

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind)
{
    if ((int)kind < ACL_MEMCPY_HOST_TO_HOST || (int)kind > ACL_MEMCPY_DEFAULT) {
        acl_set_error("aclrtMemcpy: kind %d is not an aclrtMemcpyKind.", (int)kind);
        return ACL_ERROR_INVALID_PARAM;
    }
    if (!dst || !src) {
        acl_set_error("aclrtMemcpy: %s is NULL.", !dst ? "dst" : "src");
        return ACL_ERROR_INVALID_PARAM;
    }
    if (count > destMax) {
        acl_set_error("aclrtMemcpy: count %zu exceeds destMax %zu.", count, destMax);
        return ACL_ERROR_INVALID_PARAM;
    }
    memmove(dst, src, count); /* every kind is a host copy */
    return ACL_SUCCESS;
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count)
{
    if (!devPtr) {
        acl_set_error("aclrtMemset: devPtr is NULL.");
        return ACL_ERROR_INVALID_PARAM;
    }
    if (count > maxCount) {
        acl_set_error("aclrtMemset: count %zu exceeds maxCount %zu.", count, maxCount);
        return ACL_ERROR_INVALID_PARAM;
    }
    memset(devPtr, value, count);
    return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream)
{
    if (!stream_ok("aclrtMemcpyAsync", stream)) return ACL_ERROR_INVALID_PARAM;
    return aclrtMemcpy(dst, destMax, src, count, kind);
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream)
{
    if (!stream_ok("aclrtMemsetAsync", stream)) return ACL_ERROR_INVALID_PARAM;
    return aclrtMemset(devPtr, maxCount, value, count);
}

/* ---- dtypes --------------------------------------------------------------------- */
size_t aclDataTypeSize(aclDataType dataType)
{
    switch (dataType) {
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: case ACL_HIFLOAT8: case ACL_FLOAT8_E5M2: case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0: return 1;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: case ACL_COMPLEX32: return 4;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0; /* strings, sub-byte types */
    }
}

float aclFloat16ToFloat(aclFloat16 value) { return attnops_f16_to_f32(value); }
aclFloat16 aclFloatToFloat16(float value) { return attnops_f32_to_f16(value); }
