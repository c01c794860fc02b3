#include "suite.h"

#include <stdlib.h>
#include <string.h>

#include "cpu/isa.h"

int tu_finish(const char *suite, int passed)
{
    printf("%s: %d passed, %d failed\n", suite, passed, tu_failures);
    return tu_failures ? 1 : 0;
}

void tu_require_isa(void)
{
    const char *want = getenv("ATTNOPS_ISA");
    if (!want || !*want) return;
    for (int i = 0; i < cpu_isa_count(); i++)
        if (strcmp(want, cpu_isa_name(i)) == 0) {
            if (cpu_isa_supported(i)) return;
            printf("SKIPPED: ATTNOPS_ISA=%s: this CPU lacks it\n", want);
            exit(TU_SKIP_EXIT);
        }
    fprintf(stderr, "FAIL: ATTNOPS_ISA=%s names no ISA of this build\n", want);
    exit(1);
}
