/* Case loading for the CLI: built-in suite names and case files. */
#include "cases.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

/* The cases of a built-in suite name or a file; -1 with a message. */
static int load(const char *what, harness_case **cases)
{
    char err[512];
    for (const builtin_suite *s = builtin_suites; s->name; s++)
        if (!strcmp(what, s->name)) {
            const int n = harness_parse_cases(s->json, s->name, cases, err, sizeof err);
            if (n < 0) fprintf(stderr, "attnops: %s\n", err);
            return n;
        }
    char *text = harness_read_text(what, err, sizeof err);
    if (!text) {
        fprintf(stderr, "attnops: '%s' is not a built-in suite (attnops list), and as a file: %s\n", what, err);
        return -1;
    }
    const int n = harness_parse_cases(text, what, cases, err, sizeof err);
    free(text);
    if (n < 0) fprintf(stderr, "attnops: %s\n", err);
    return n;
}

int harness_load_all(const char *const *sources, int nsources, const char *filter, harness_case **out)
{
    *out = NULL;
    regex_t re;
    if (filter && regcomp(&re, filter, REG_EXTENDED | REG_NOSUB) != 0) {
        fprintf(stderr, "attnops: --filter '%s' is not a valid regular expression\n", filter);
        return -1;
    }
    harness_case *all = NULL;
    int total = 0;
    for (int s = 0; s < nsources; s++) {
        harness_case *cases = NULL;
        const int n = load(sources[s], &cases);
        if (n < 0) {
            free(all);
            total = -1;
            break;
        }
        all = realloc(all, sizeof *all * (size_t)(total + n + 1));
        for (int i = 0; i < n; i++)
            if (!filter || regexec(&re, cases[i].name, 0, NULL, 0) == 0) all[total++] = cases[i];
        free(cases);
    }
    if (filter) regfree(&re);
    *out = all;
    return total;
}
