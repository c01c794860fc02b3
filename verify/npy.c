#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    attnops_dtype dtype;
    const char *descr;
} DESCRS[] = {{ATTNOPS_DTYPE_F32, "<f4"},         {ATTNOPS_DTYPE_F16, "<f2"},     {ATTNOPS_DTYPE_U8, "|u1"},
              {ATTNOPS_DTYPE_BOOL, "|b1"},        {ATTNOPS_DTYPE_I32, "<i4"},     {ATTNOPS_DTYPE_I64, "<i8"},
              {ATTNOPS_DTYPE_BF16, "<V2"},        {ATTNOPS_DTYPE_F8_E4M3FN, "<V1"}, {ATTNOPS_DTYPE_F8_E5M2, "<V1"}};
/* (numpy saves an ml_dtypes float8_e5m2 array as '<f1' but cannot load that
 * back; both f8 types are written as '<V1', which loads as void to .view()) */

static int fail(char *err, size_t n, const char *path, const char *what)
{
    snprintf(err, n, "%s: %s.", path, what);
    return -1;
}

int npy_write(const char *path, attnops_dtype dtype, int rank, const int64_t *shape, const void *data, char *err,
              size_t errlen)
{
    const char *descr = NULL;
    for (size_t i = 0; i < sizeof DESCRS / sizeof DESCRS[0]; i++)
        if (DESCRS[i].dtype == dtype) descr = DESCRS[i].descr;
    if (!descr) return fail(err, errlen, path, "this dtype has no .npy form");
    if (rank < 0 || rank > NPY_MAX_RANK) return fail(err, errlen, path, "rank out of range");
    char dims[NPY_MAX_RANK * 24 + 4] = "";
    size_t used = 0;
    int64_t count = 1;
    for (int i = 0; i < rank; i++) {
        used += (size_t)snprintf(dims + used, sizeof dims - used, "%lld,%s", (long long)shape[i], i + 1 < rank ? " " : "");
        count *= shape[i];
    }
    if (rank > 1) dims[used - 1] = '\0'; /* "(2, 3)"; numpy keeps the comma only in "(5,)" */
    char header[512];
    int len = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
    const int prefix = 10; /* magic, version, 2-byte length */
    const int total = (prefix + len + 1 + 63) / 64 * 64;
    while (prefix + len + 1 < total) header[len++] = ' ';
    header[len++] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return fail(err, errlen, path, strerror(errno));
    const unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
    const size_t bytes = (size_t)count * attnops_dtype_size(dtype);
    const bool ok = fwrite(magic, 1, 10, f) == 10 && fwrite(header, 1, (size_t)len, f) == (size_t)len &&
                    fwrite(data, 1, bytes, f) == bytes;
    if (fclose(f) != 0 || !ok) return fail(err, errlen, path, "write failed");
    return 0;
}

/* The value text after 'key': in a header dict, or NULL. */
static const char *dict_value(const char *h, const char *key)
{
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    const char *at = strstr(h, quoted);
    if (!at) return NULL;
    at = strchr(at + strlen(quoted), ':');
    if (!at) return NULL;
    at++;
    while (*at == ' ') at++;
    return at;
}

int npy_read(const char *path, attnops_dtype hint, npy_array *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, path, strerror(errno));
    unsigned char pre[12];
    char *header = NULL;
    int rc = -1;
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        fail(err, errlen, path, "not a .npy file (bad magic)");
        goto done;
    }
    uint32_t hlen;
    if (pre[6] == 1) {
        unsigned char l[2];
        if (fread(l, 1, 2, f) != 2) { fail(err, errlen, path, "truncated header"); goto done; }
        hlen = (uint32_t)l[0] | (uint32_t)l[1] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        unsigned char l[4];
        if (fread(l, 1, 4, f) != 4) { fail(err, errlen, path, "truncated header"); goto done; }
        hlen = (uint32_t)l[0] | (uint32_t)l[1] << 8 | (uint32_t)l[2] << 16 | (uint32_t)l[3] << 24;
    } else {
        fail(err, errlen, path, "unsupported .npy format version (1.0, 2.0 and 3.0 are read)");
        goto done;
    }
    if (hlen > (1u << 20)) { fail(err, errlen, path, "header length out of range"); goto done; }
    header = malloc(hlen + 1);
    if (fread(header, 1, hlen, f) != hlen) { fail(err, errlen, path, "truncated header"); goto done; }
    header[hlen] = '\0';
    const char *descr = dict_value(header, "descr"), *order = dict_value(header, "fortran_order"),
               *shape = dict_value(header, "shape");
    if (!descr || *descr != '\'' || !order || !shape || *shape != '(') {
        fail(err, errlen, path, "header is not a numpy dict with descr, fortran_order and shape");
        goto done;
    }
    if (!strncmp(order, "True", 4)) { fail(err, errlen, path, "Fortran order is not supported (save C order)"); goto done; }
    char d[16] = "";
    sscanf(descr + 1, "%15[^']", d);
    if (d[0] == '>') { fail(err, errlen, path, "big-endian data is not supported"); goto done; }
    if (d[0] == '|' || d[0] == '=') d[0] = '<';
    out->dtype = 0;
    if (!strcmp(d, "<V2")) out->dtype = ATTNOPS_DTYPE_BF16;
    else if (!strcmp(d, "<V1") || !strcmp(d, "<f1"))
        out->dtype = hint == ATTNOPS_DTYPE_F8_E4M3FN || hint == ATTNOPS_DTYPE_F8_E5M2 ? hint
                     : d[1] == 'V'                                                   ? ATTNOPS_DTYPE_F8_E4M3FN
                                                                                     : ATTNOPS_DTYPE_F8_E5M2;
    else if (!strcmp(d, "<u2") && hint == ATTNOPS_DTYPE_BF16) out->dtype = ATTNOPS_DTYPE_BF16; /* raw bits */
    else {
        for (size_t i = 0; i < sizeof DESCRS / sizeof DESCRS[0]; i++) {
            char want[8];
            snprintf(want, sizeof want, "%s", DESCRS[i].descr);
            if (want[0] == '|') want[0] = '<';
            if (!strcmp(d, want)) out->dtype = DESCRS[i].dtype;
        }
    }
    if (!out->dtype) {
        char what[64];
        snprintf(what, sizeof what, "unsupported dtype '%s'", d);
        fail(err, errlen, path, what);
        goto done;
    }
    int64_t count = 1;
    const char *p = shape + 1;
    while (*p && *p != ')') {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ')') break;
        char *end;
        const long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || out->rank == NPY_MAX_RANK) { fail(err, errlen, path, "bad shape in the header"); goto done; }
        out->shape[out->rank++] = v;
        count *= v;
        p = end;
    }
    if (*p != ')') { fail(err, errlen, path, "bad shape in the header"); goto done; }
    out->bytes = (size_t)count * attnops_dtype_size(out->dtype);
    out->data = malloc(out->bytes ? out->bytes : 1);
    if (fread(out->data, 1, out->bytes, f) != out->bytes) {
        fail(err, errlen, path, "truncated data (fewer bytes than the shape needs)");
        free(out->data);
        out->data = NULL;
        goto done;
    }
    rc = 0;
done:
    free(header);
    fclose(f);
    return rc;
}
