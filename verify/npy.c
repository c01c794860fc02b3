#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct {
    attnops_dtype dtype;
    const char *descr;
} DESCRS[] = {{ATTNOPS_DTYPE_F32, "<f4"},         {ATTNOPS_DTYPE_F16, "<f2"},     {ATTNOPS_DTYPE_U8, "|u1"},
              {ATTNOPS_DTYPE_BOOL, "|b1"},        {ATTNOPS_DTYPE_I32, "<i4"},     {ATTNOPS_DTYPE_I64, "<i8"},
              {ATTNOPS_DTYPE_I8, "|i1"},
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

enum { PREAMBLE_MAX = 12, HEADER_MAX = 1 << 20 };

/* The header's length from the preamble (magic, version, length): 0 with
 * *hlen and *start (where the header text begins), or -1 with err. */
static int read_preamble(const unsigned char *b, size_t n, const char *origin, uint32_t *hlen, size_t *start,
                         char *err, size_t errlen)
{
    if (n < 8 || memcmp(b, "\x93NUMPY", 6) != 0) return fail(err, errlen, origin, "not a .npy file (bad magic)");
    if (b[6] == 1) {
        if (n < 10) return fail(err, errlen, origin, "truncated header");
        *hlen = (uint32_t)b[8] | (uint32_t)b[9] << 8, *start = 10;
    } else if (b[6] == 2 || b[6] == 3) {
        if (n < 12) return fail(err, errlen, origin, "truncated header");
        *hlen = (uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24, *start = 12;
    } else {
        return fail(err, errlen, origin, "unsupported .npy format version (1.0, 2.0 and 3.0 are read)");
    }
    if (*hlen > HEADER_MAX) return fail(err, errlen, origin, "header length out of range (above 1 MiB)");
    return 0;
}

static attnops_dtype dtype_of_descr(const char *descr, attnops_dtype hint)
{
    char d[16] = "";
    sscanf(descr, "%15[^']", d);
    if (d[0] == '|' || d[0] == '=') d[0] = '<';
    if (!strcmp(d, "<V2")) return ATTNOPS_DTYPE_BF16;
    if (!strcmp(d, "<V1") || !strcmp(d, "<f1"))
        return hint == ATTNOPS_DTYPE_F8_E4M3FN || hint == ATTNOPS_DTYPE_F8_E5M2 ? hint
               : d[1] == 'V'                                                   ? ATTNOPS_DTYPE_F8_E4M3FN
                                                                               : ATTNOPS_DTYPE_F8_E5M2;
    if (!strcmp(d, "<u2") && hint == ATTNOPS_DTYPE_BF16) return ATTNOPS_DTYPE_BF16; /* raw bits */
    for (size_t i = 0; i < sizeof DESCRS / sizeof DESCRS[0]; i++) {
        char want[8];
        snprintf(want, sizeof want, "%s", DESCRS[i].descr);
        if (want[0] == '|') want[0] = '<';
        if (!strcmp(d, want)) return DESCRS[i].dtype;
    }
    return 0;
}

/* The header text (NUL-terminated, hlen bytes) into out's dtype, rank,
 * shape and bytes; the element count and the byte size are checked for
 * overflow before anything is sized by them. */
static int parse_header(const char *header, const char *origin, attnops_dtype hint, npy_array *out, char *err,
                        size_t errlen)
{
    const char *descr = dict_value(header, "descr"), *order = dict_value(header, "fortran_order"),
               *shape = dict_value(header, "shape");
    if (!descr || *descr != '\'' || !order || !shape || *shape != '(')
        return fail(err, errlen, origin, "header is not a numpy dict with descr, fortran_order and shape");
    if (!strncmp(order, "True", 4)) return fail(err, errlen, origin, "Fortran order is not supported (save C order)");
    if (descr[1] == '>') return fail(err, errlen, origin, "big-endian data is not supported");
    out->dtype = dtype_of_descr(descr + 1, hint);
    if (!out->dtype) {
        char d[16] = "", what[64];
        sscanf(descr + 1, "%15[^']", d);
        snprintf(what, sizeof what, "unsupported dtype '%s'", d);
        return fail(err, errlen, origin, what);
    }
    uint64_t count = 1;
    const char *p = shape + 1;
    while (*p && *p != ')') {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ')') break;
        char *end;
        errno = 0;
        const long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || errno == ERANGE || out->rank == NPY_MAX_RANK)
            return fail(err, errlen, origin, "bad shape in the header");
        if (v && count > UINT64_MAX / (uint64_t)v)
            return fail(err, errlen, origin, "the shape's element count overflows 64 bits");
        out->shape[out->rank++] = v;
        count *= (uint64_t)v;
        p = end;
    }
    if (*p != ')') return fail(err, errlen, origin, "bad shape in the header");
    const size_t es = attnops_dtype_size(out->dtype);
    if (count > SIZE_MAX / es) return fail(err, errlen, origin, "the shape's byte size overflows");
    out->bytes = (size_t)count * es;
    return 0;
}

/* The data must fill the file exactly: fewer bytes is a truncated file,
 * more is not a .npy numpy wrote (and the size to trust is the header's). */
static int check_data_size(size_t have, const npy_array *a, const char *origin, char *err, size_t errlen)
{
    if (have == a->bytes) return 0;
    char what[160];
    snprintf(what, sizeof what, "%s data (%zu bytes after the header; the shape needs %zu)",
             have < a->bytes ? "truncated" : "trailing bytes after the", have, a->bytes);
    return fail(err, errlen, origin, what);
}

int npy_parse(const void *buf, size_t n, const char *origin, attnops_dtype hint, npy_array *out, char *err,
              size_t errlen)
{
    memset(out, 0, sizeof *out);
    const unsigned char *b = buf;
    uint32_t hlen;
    size_t start;
    if (read_preamble(b, n, origin, &hlen, &start, err, errlen) != 0) return -1;
    if (n - start < hlen) return fail(err, errlen, origin, "truncated header");
    char *header = malloc((size_t)hlen + 1);
    if (!header) return fail(err, errlen, origin, "out of memory for the header");
    memcpy(header, b + start, hlen);
    header[hlen] = '\0';
    int rc = parse_header(header, origin, hint, out, err, errlen);
    free(header);
    const size_t at = start + hlen;
    if (rc == 0) rc = check_data_size(n - at, out, origin, err, errlen);
    if (rc == 0 && !(out->data = malloc(out->bytes ? out->bytes : 1))) rc = fail(err, errlen, origin, "out of memory");
    if (rc != 0) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    memcpy(out->data, b + at, out->bytes);
    return 0;
}

int npy_read(const char *path, attnops_dtype hint, npy_array *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, path, strerror(errno));
    struct stat st;
    int rc = -1;
    unsigned char pre[PREAMBLE_MAX];
    char *header = NULL;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fail(err, errlen, path, "not a regular file");
        goto done;
    }
    /* The preamble and header from the file, then the data's size against
     * the file's before the data is allocated. */
    const size_t size = (size_t)st.st_size, got = fread(pre, 1, size < PREAMBLE_MAX ? size : PREAMBLE_MAX, f);
    uint32_t hlen;
    size_t start;
    if (read_preamble(pre, got, path, &hlen, &start, err, errlen) != 0) goto done;
    if (size - start < hlen) {
        fail(err, errlen, path, "truncated header");
        goto done;
    }
    header = malloc((size_t)hlen + 1);
    if (!header || fseek(f, (long)start, SEEK_SET) != 0 || fread(header, 1, hlen, f) != hlen) {
        fail(err, errlen, path, "cannot read the header");
        goto done;
    }
    header[hlen] = '\0';
    if (parse_header(header, path, hint, out, err, errlen) != 0 ||
        check_data_size(size - start - hlen, out, path, err, errlen) != 0)
        goto done;
    out->data = malloc(out->bytes ? out->bytes : 1);
    if (!out->data) {
        fail(err, errlen, path, "out of memory for the data");
        goto done;
    }
    if (fread(out->data, 1, out->bytes, f) != out->bytes) {
        fail(err, errlen, path, "truncated data (the file shrank while read)");
        goto done;
    }
    rc = 0;
done:
    if (rc != 0) {
        free(out->data);
        memset(out, 0, sizeof *out);
    }
    free(header);
    fclose(f);
    return rc;
}
