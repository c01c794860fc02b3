/* attnops' CANN compatibility layer: the base types of CANN's acl/acl_base.h
 * (the subset host programs of the attention operators use), with CANN's
 * names and numeric values, so that such programs build unchanged against
 * libattnops_acl (docs/ACL.md).  Usable from C and C++. */
#ifndef ATTNOPS_ACL_ACL_BASE_H
#define ATTNOPS_ACL_ACL_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ACL_FUNC_VISIBILITY
#else
#define ACL_FUNC_VISIBILITY __attribute__((visibility("default")))
#endif

typedef void *aclrtStream;
typedef void *aclrtContext;
typedef int aclError;
typedef uint16_t aclFloat16;

/* aclError values (CANN's numbers). */
static const int ACL_SUCCESS = 0;
static const int ACL_ERROR_NONE = 0;
static const int ACL_ERROR_INVALID_PARAM = 100000;
static const int ACL_ERROR_UNINITIALIZE = 100001;
static const int ACL_ERROR_REPEAT_INITIALIZE = 100002;
static const int ACL_ERROR_UNSUPPORTED_DATA_TYPE = 100026;
static const int ACL_ERROR_BAD_ALLOC = 200000;
static const int ACL_ERROR_API_NOT_SUPPORT = 200001;
static const int ACL_ERROR_INVALID_DEVICE = 200002;
static const int ACL_ERROR_STORAGE_OVER_LIMIT = 300000;
static const int ACL_ERROR_INTERNAL_ERROR = 500000;
static const int ACL_ERROR_FAILURE = 500001;
static const int ACL_ERROR_RT_PARAM_INVALID = 107000;
static const int ACL_ERROR_RT_INVALID_DEVICEID = 107001;
static const int ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000;
static const int ACL_ERROR_RT_MEMORY_ALLOCATION = 207001;

typedef enum {
    ACL_DT_UNDEFINED = -1,
    ACL_FLOAT = 0,
    ACL_FLOAT16 = 1,
    ACL_INT8 = 2,
    ACL_INT32 = 3,
    ACL_UINT8 = 4,
    ACL_INT16 = 6,
    ACL_UINT16 = 7,
    ACL_UINT32 = 8,
    ACL_INT64 = 9,
    ACL_UINT64 = 10,
    ACL_DOUBLE = 11,
    ACL_BOOL = 12,
    ACL_STRING = 13,
    ACL_COMPLEX64 = 16,
    ACL_COMPLEX128 = 17,
    ACL_BF16 = 27,
    ACL_INT4 = 29,
    ACL_UINT1 = 30,
    ACL_COMPLEX32 = 33,
    ACL_HIFLOAT8 = 34,
    ACL_FLOAT8_E5M2 = 35,
    ACL_FLOAT8_E4M3FN = 36,
    ACL_FLOAT8_E8M0 = 37,
    ACL_FLOAT6_E3M2 = 38,
    ACL_FLOAT6_E2M3 = 39,
    ACL_FLOAT4_E2M1 = 40,
    ACL_FLOAT4_E1M2 = 41
} aclDataType;

typedef enum {
    ACL_FORMAT_UNDEFINED = -1,
    ACL_FORMAT_NCHW = 0,
    ACL_FORMAT_NHWC = 1,
    ACL_FORMAT_ND = 2,
    ACL_FORMAT_NC1HWC0 = 3,
    ACL_FORMAT_FRACTAL_Z = 4,
    ACL_FORMAT_NC1HWC0_C04 = 12,
    ACL_FORMAT_HWCN = 16,
    ACL_FORMAT_NDHWC = 27,
    ACL_FORMAT_FRACTAL_NZ = 29,
    ACL_FORMAT_NCDHW = 30,
    ACL_FORMAT_NDC1HWC0 = 32,
    ACL_FRACTAL_Z_3D = 33,
    ACL_FORMAT_NC = 35,
    ACL_FORMAT_NCL = 47
} aclFormat;

typedef enum {
    ACL_OPT_DETERMINISTIC = 0, /* 0: off (default), 1: deterministic results */
    ACL_OPT_ENABLE_DEBUG_KERNEL = 1
} aclSysParamOpt;

/* Bytes per element of a dtype; 0 for types without a whole-byte size. */
ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType);
ACL_FUNC_VISIBILITY float aclFloat16ToFloat(aclFloat16 value);
ACL_FUNC_VISIBILITY aclFloat16 aclFloatToFloat16(float value);

#ifdef __cplusplus
}
#endif
#endif
