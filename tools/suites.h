/* The harness's built-in suites: verify/suites/<name>.json embedded at build
 * time (cmake/embed_suites.cmake), named with '-' for '_' (fag-seed). */
#ifndef ATTNOPS_TOOLS_SUITES_H
#define ATTNOPS_TOOLS_SUITES_H

typedef struct builtin_suite {
    const char *name;
    const char *json;
} builtin_suite;

/* Terminated by an entry with name NULL. */
extern const builtin_suite builtin_suites[];

#endif
