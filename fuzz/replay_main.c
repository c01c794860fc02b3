/* Replays fuzz inputs without libFuzzer: every file named (or in each
 * directory named) through the target's LLVMFuzzerTestOneInput, once.
 * Built with the ordinary compiler for ctest (fuzz_replay_<target>, also
 * under `make test-sanitize`), so every committed corpus input -- the
 * crashes found among them -- is a regression test on every CI run. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "replay: cannot open %s\n", path), 1;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(n > 0 ? (size_t)n : 1);
    const size_t got = fread(data, 1, (size_t)(n > 0 ? n : 0), f);
    fclose(f);
    LLVMFuzzerTestOneInput(data, got);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    int inputs = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) return fprintf(stderr, "replay: no such input %s\n", argv[i]), 1;
        if (!S_ISDIR(st.st_mode)) {
            bad |= replay_file(argv[i]), inputs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_name[0] == '.') continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            bad |= replay_file(path), inputs++;
        }
        if (d) closedir(d);
    }
    if (inputs == 0) return fprintf(stderr, "replay: no inputs\n"), 1;
    printf("replayed %d inputs\n", inputs);
    return bad;
}
