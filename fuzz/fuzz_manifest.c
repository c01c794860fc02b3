/* The export manifest's reader (verify/manifest.h): any bytes either parse
 * into cases whose every file path is safe and every "counted" names
 * another tensor of the case, or are refused with a sentence naming the
 * origin. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"

/* An independent statement of the path rule: relative, and no component
 * empty, "." or "..". */
static bool stays_inside(const char *rel)
{
    if (rel[0] == '/' || !rel[0]) return false;
    char copy[MANIFEST_PATH_MAX];
    snprintf(copy, sizeof copy, "%s", rel);
    for (char *save = NULL, *part = strtok_r(copy, "/", &save); part; part = strtok_r(NULL, "/", &save))
        if (!strcmp(part, ".") || !strcmp(part, "..")) return false;
    return !strstr(rel, "//") && rel[strlen(rel) - 1] != '/';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    manifest m;
    char err[512] = "";
    if (manifest_parse(text, "fuzz.json", &m, err, sizeof err) != 0) {
        if (m.cases || strncmp(err, "fuzz.json: ", 11) != 0) abort();
    } else {
        for (int c = 0; c < m.ncases; c++)
            for (int t = 0; t < m.cases[c].ntensors; t++) {
                const manifest_tensor *x = &m.cases[c].tensors[t];
                if (!manifest_file_is_safe(x->file) || !stays_inside(x->file)) abort();
                if (x->counted == t || x->counted < -1 || x->counted >= m.cases[c].ntensors) abort();
            }
        manifest_free(&m);
    }
    free(text);
    return 0;
}
