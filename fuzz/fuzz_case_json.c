/* The harness's case-file parser, every op (verify/harness_case.h): any
 * bytes either parse into cases whose names are safe and whose fields are in
 * range, or are refused with a sentence naming the origin. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness_case.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    harness_case *cases = NULL;
    char err[512] = "";
    const int n = harness_parse_cases(text, "fuzz.json", &cases, err, sizeof err);
    if (n < 0 && strncmp(err, "fuzz.json: ", 11) != 0) abort(); /* a refusal names the file */
    for (int i = 0; i < n; i++) {
        char desc[512];
        if (!cases[i].name[0] || cases[i].name[0] == '.' || strchr(cases[i].name, '/')) abort();
        if (cases[i].op == HARNESS_OP_FA_GRAD) fa_case_describe(&cases[i].shape, desc, sizeof desc);
    }
    free(cases);
    free(text);
    return 0;
}
