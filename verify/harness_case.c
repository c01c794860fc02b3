#include "harness_case.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness_driver.h"

const char *harness_op_name(harness_op op) { return harness_driver_of(op)->name; }

bool harness_op_parse(const char *name, harness_op *op)
{
    for (int i = 0; i < HARNESS_OP_COUNT; i++)
        if (name && !strcmp(name, harness_drivers[i]->name)) return *op = (harness_op)i, true;
    return false;
}

attnops_dtype harness_triple_dtype(harness_op op, attnops_dtype dtype)
{
    const attnops_dtype fixed = harness_driver_of(op)->triple_dtype;
    return fixed ? fixed : dtype;
}

const char *harness_duplicate_key(const cJSON *obj)
{
    for (const cJSON *a = obj->child; a; a = a->next)
        for (const cJSON *b = a->next; b; b = b->next)
            if (a->string && b->string && !strcmp(a->string, b->string)) return a->string;
    return NULL;
}

bool harness_name_is_safe(const char *name)
{
    const size_t n = strlen(name);
    if (n == 0 || n > HARNESS_NAME_MAX || name[0] == '.') return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && !strchr("_-.+", name[i])) return false;
    return true;
}

void harness_op_names(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < HARNESS_OP_COUNT && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i == 0 ? "" : i + 1 == HARNESS_OP_COUNT ? " or " : ", ",
                                 harness_drivers[i]->name);
}

static bool parse_one(harness_parse *c, const cJSON *obj, harness_case *h)
{
    if (!cJSON_IsObject(obj)) return hp_fail(c, NULL, "is not a JSON object");
    if (!harness_name_is_safe(h->name))
        return hp_fail(c, NULL, "has a name that is not 1 to %d letters, digits, '_', '-', '.' or '+' (not starting "
                       "with '.'); it names the export's directory", HARNESS_NAME_MAX);
    const char *dup = harness_duplicate_key(obj);
    if (dup) return hp_fail(c, dup, "is given twice");
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(obj, "op");
    h->op = HARNESS_OP_FA_GRAD;
    if (op && !(cJSON_IsString(op) && harness_op_parse(op->valuestring, &h->op))) {
        char names[256];
        harness_op_names(names, sizeof names);
        return hp_fail(c, "op", "must be %s (default %s)", names, harness_op_name(HARNESS_OP_FA_GRAD));
    }
    const harness_driver *d = harness_driver_of(h->op);
    if (!d->parse(c, obj, h)) return false;
    const double bytes = d->bytes(h), limit = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGE_SIZE);
    if (!(bytes <= limit))
        return hp_fail(c, NULL, "needs about %.3g GB for its tensors, more than this machine's %.3g GB of memory",
                       bytes / 1e9, limit / 1e9);
    return true;
}

int harness_parse_cases(const char *json, const char *origin, harness_case **cases, char *err, size_t errlen)
{
    *cases = NULL;
    harness_parse c = {origin, "", err, errlen};
    cJSON *root = cJSON_Parse(json);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        snprintf(err, errlen, "%s: not valid JSON near '%.20s'.", origin, at ? at : "");
        return -1;
    }
    /* one case, a list, or a named dictionary: an object whose members are all
     * objects is a dictionary of named cases (a case called "b" included), any
     * other object is one case */
    bool single = false;
    if (cJSON_IsObject(root))
        for (const cJSON *m = root->child; m; m = m->next) single |= !cJSON_IsObject(m);
    const int n = single ? 1 : (cJSON_IsArray(root) || cJSON_IsObject(root) ? cJSON_GetArraySize(root) : -1);
    if (n < 0) {
        snprintf(err, errlen, "%s: expected a case object, a list of cases or a dictionary of named cases.", origin);
        cJSON_Delete(root);
        return -1;
    }
    harness_case *out = calloc((size_t)(n ? n : 1), sizeof *out);
    int k = 0;
    for (const cJSON *item = single ? root : root->child; k < n; item = item->next, k++) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(item, "name");
        const char *name = cJSON_IsObject(root) && !single ? item->string : cJSON_IsString(nm) ? nm->valuestring : NULL;
        if (name && strlen(name) > HARNESS_NAME_MAX) snprintf(out[k].name, sizeof out[k].name, "%.40s...", name);
        else if (name) snprintf(out[k].name, sizeof out[k].name, "%s", name);
        else snprintf(out[k].name, sizeof out[k].name, "case%d", k);
        c.name = out[k].name;
        bool ok = parse_one(&c, item, &out[k]);
        for (int j = 0; ok && j < k; j++)
            if (!strcmp(out[j].name, out[k].name)) ok = hp_fail(&c, NULL, "is the name of an earlier case too");
        if (!ok) {
            free(out);
            cJSON_Delete(root);
            return -1;
        }
    }
    cJSON_Delete(root);
    *cases = out;
    return n;
}

char *harness_read_text(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(err, errlen, "%s: %s.", path, strerror(errno)), NULL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return snprintf(err, errlen, "%s: not a regular file.", path), NULL;
    }
    if (st.st_size > HARNESS_TEXT_MAX_BYTES) {
        fclose(f);
        return snprintf(err, errlen, "%s: %lld bytes, above the %d MiB a case file or manifest may have.", path,
                        (long long)st.st_size, HARNESS_TEXT_MAX_BYTES >> 20), NULL;
    }
    const size_t size = (size_t)st.st_size;
    char *text = malloc(size + 1);
    const size_t got = text ? fread(text, 1, size, f) : 0;
    fclose(f);
    if (!text || got != size) {
        free(text);
        return snprintf(err, errlen, "%s: cannot read the file.", path), NULL;
    }
    text[size] = '\0';
    if (strlen(text) != size) {
        free(text);
        return snprintf(err, errlen, "%s: holds a NUL byte; it is not a JSON text file.", path), NULL;
    }
    return text;
}
