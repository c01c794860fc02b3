/* Hostile manifests (docs/RELIABILITY.md; verify/manifest.h): every file path
 * that could leave the export (absolute, "..", empty or "." components,
 * odd characters, too long), a path through a symbolic link, keys given
 * twice, unsafe or repeated names, a "counted" that names nothing, wrong
 * types and deep nesting are refused with a sentence naming the file, the
 * case and the field; a good manifest parses to what it says.
 *
 *   test_manifest SCRATCH_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "manifest.h"
#include "testutil.h"
#include "suite.h"

static const char GOOD_TENSOR[] = "{\"file\": \"c1/dq.npy\", \"dtype\": \"bf16\", \"role\": \"output\"}";

/* A one-case manifest around `tensors` (the object's members). */
static void one_case(char *buf, size_t n, const char *name, const char *tensors)
{
    snprintf(buf, n, "{\"attnops_version\": \"0\", \"cases\": [{\"name\": \"%s\", \"op\": \"flash_attention_grad\", "
             "\"compare\": \"dual\", \"attributes\": {}, \"tensors\": {%s}}]}", name, tensors);
}

static bool refused(const char *json, const char *expect, const char *what)
{
    manifest m;
    char err[512] = "";
    const int rc = manifest_parse(json, "m.json", &m, err, sizeof err);
    const bool ok = rc == -1 && m.cases == NULL && strstr(err, "m.json") && strstr(err, expect);
    TU_CHECK(ok, "%s: rc %d, \"%s\" (expected \"%s\")", what, rc, err, expect);
    if (rc == 0) manifest_free(&m);
    return ok;
}

static int hostile_paths(void)
{
    const int before = tu_failures;
    static const char *const bad[] = {"/etc/passwd", "../x.npy", "c1/../../x.npy", "c1/./x.npy", "c1//x.npy",
                                      "c1/", "", ".", "..", "c1/x y.npy", "c1\\\\x.npy", "c1/x.npy\\n",
                                      "c1/%2e%2e/x.npy"};
    char tensor[512], json[2048];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(tensor, sizeof tensor, "\"dq\": {\"file\": \"%s\", \"dtype\": \"bf16\", \"role\": \"output\"}", bad[i]);
        one_case(json, sizeof json, "c1", tensor);
        refused(json, "field 'file' must be a relative path", bad[i]);
    }
    char longest[MANIFEST_PATH_MAX + 8];
    memset(longest, 'a', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    TU_CHECK(!manifest_file_is_safe(longest), "a %zu-character path passed", strlen(longest));
    TU_CHECK(manifest_file_is_safe("c1/bench_dq.npy") && manifest_file_is_safe("a.b/c-d+e_f.npy"),
             "good relative paths were refused");
    return tu_failures == before;
}

static int hostile_fields(void)
{
    const int before = tu_failures;
    char tensors[1024], json[4096];
    snprintf(tensors, sizeof tensors, "\"dq\": %s, \"dq\": %s", GOOD_TENSOR, GOOD_TENSOR);
    one_case(json, sizeof json, "c1", tensors);
    refused(json, "case 'c1': tensor 'dq' is given twice", "a tensor twice");
    one_case(json, sizeof json, "c1", "\"dq\": {\"file\": \"c1/dq.npy\", \"file\": \"c1/dk.npy\", \"dtype\": \"bf16\", "
             "\"role\": \"output\"}");
    refused(json, "tensor 'dq': field 'file' is given twice", "a field twice");
    snprintf(tensors, sizeof tensors, "\"dq\": %s", GOOD_TENSOR);
    one_case(json, sizeof json, "../c1", tensors);
    refused(json, "field 'name' must be 1 to 63", "an unsafe case name");
    snprintf(tensors, sizeof tensors, "\"../dq\": %s", GOOD_TENSOR);
    one_case(json, sizeof json, "c1", tensors);
    refused(json, "tensor '../dq' has a name that is not", "an unsafe tensor name");
    one_case(json, sizeof json, "c1", "\"dq\": {\"file\": \"c1/dq.npy\", \"dtype\": \"f64\", \"role\": \"output\"}");
    refused(json, "field 'dtype' must name an attnops dtype", "an unknown dtype");
    one_case(json, sizeof json, "c1", "\"dq\": {\"file\": \"c1/dq.npy\", \"dtype\": \"bf16\", \"role\": \"result\"}");
    refused(json, "field 'role' must be", "an unknown role");
    one_case(json, sizeof json, "c1", "\"dq\": {\"file\": 7, \"dtype\": \"bf16\", \"role\": \"output\"}");
    refused(json, "field 'file' must be", "a number for a path");
    one_case(json, sizeof json, "c1", "\"dq\": {\"file\": \"c1/dq.npy\", \"dtype\": \"bf16\", \"role\": \"output\", "
             "\"counted\": \"valid_rows\"}");
    refused(json, "field 'counted' must name another tensor", "a counted tensor that is not there");
    snprintf(json, sizeof json, "{\"cases\": [{\"name\": \"c1\", \"op\": \"keypool\", \"compare\": \"isclose\", "
             "\"tensors\": {}}, {\"name\": \"c1\", \"op\": \"keypool\", \"compare\": \"isclose\", \"tensors\": {}}]}");
    refused(json, "case 'c1': is the name of an earlier case too", "two cases of one name");
    refused("{\"cases\": [{\"name\": \"c1\", \"op\": \"conv2d\", \"compare\": \"dual\", \"tensors\": {}}]}",
            "field 'op' must be", "an unknown op");
    refused("{\"cases\": [{\"name\": \"c1\", \"op\": \"keypool\", \"compare\": \"close-enough\", \"tensors\": {}}]}",
            "field 'compare' must name a rule", "an unknown rule");
    refused("{\"cases\": {}}", "not a manifest written by attnops golden", "cases not a list");
    refused("{\"cases\": [], \"cases\": []}", "field 'cases' is given twice", "cases twice");
    refused("[1, 2]", "not a manifest", "a list");
    refused("{\"cases\": [", "not a manifest", "truncated JSON");
    char *deep = malloc(200001);
    memset(deep, '[', 100000), memset(deep + 100000, ']', 100000), deep[200000] = '\0';
    refused(deep, "not a manifest", "100 000 nested lists");
    free(deep);
    return tu_failures == before;
}

static int good_manifest(void)
{
    const int before = tu_failures;
    char json[2048];
    one_case(json, sizeof json, "GQA_01",
             "\"pooled_key\": {\"file\": \"GQA_01/pooled_key.npy\", \"dtype\": \"bf16\", \"role\": \"output\", "
             "\"counted\": \"valid_rows\", \"shape\": [2, 3]}, \"valid_rows\": {\"file\": \"GQA_01/valid_rows.npy\", "
             "\"dtype\": \"i64\", \"role\": \"mask\"}");
    manifest m;
    char err[512] = "";
    const int rc = manifest_parse(json, "m.json", &m, err, sizeof err);
    TU_CHECK(rc == 0, "a good manifest: %s", err);
    if (rc == 0) {
        const manifest_case *c = &m.cases[0];
        TU_CHECK(m.ncases == 1 && !strcmp(c->name, "GQA_01") && c->rule == CMP_DUAL && c->ntensors == 2 &&
                     c->tensors[0].counted == 1 && c->tensors[1].counted == -1 &&
                     c->tensors[0].dtype == ATTNOPS_DTYPE_BF16 && !strcmp(c->tensors[1].role, "mask"),
                 "the good manifest did not parse to what it says");
        manifest_free(&m);
    }
    return tu_failures == before;
}

/* A path through a symbolic link, as a directory or as the file. */
static int symlinks(const char *scratch)
{
    const int before = tu_failures;
    char dir[1024], target[1100], link[1100], path[3400], err[1600];
    snprintf(dir, sizeof dir, "%s/manifest_links", scratch);
    snprintf(target, sizeof target, "%s/outside.npy", scratch);
    FILE *f = fopen(target, "w");
    if (f) fclose(f);
    snprintf(path, sizeof path, "mkdir -p '%s/real' && rm -f '%s/case' '%s/real/x.npy'", dir, dir, dir);
    TU_CHECK(system(path) == 0, "cannot prepare %s", dir);
    snprintf(link, sizeof link, "%s/case", dir);
    TU_CHECK(symlink(scratch, link) == 0, "cannot make the directory link %s", link);
    snprintf(link, sizeof link, "%s/real/x.npy", dir);
    TU_CHECK(symlink(target, link) == 0, "cannot make the file link %s", link);
    TU_CHECK(manifest_path(dir, "case/outside.npy", path, sizeof path, err, sizeof err) == -1 &&
                 strstr(err, "a symbolic link") && strstr(err, "/case"),
             "a linked directory: \"%s\"", err);
    TU_CHECK(manifest_path(dir, "real/x.npy", path, sizeof path, err, sizeof err) == -1 &&
                 strstr(err, "a symbolic link") && strstr(err, "real/x.npy"),
             "a linked file: \"%s\"", err);
    TU_CHECK(manifest_path(dir, "real/absent.npy", path, sizeof path, err, sizeof err) == 0 &&
                 !strcmp(path + strlen(dir), "/real/absent.npy"),
             "a plain path: \"%s\"", err);
    TU_CHECK(manifest_path(dir, "../outside.npy", path, sizeof path, err, sizeof err) == -1 &&
                 strstr(err, "not a safe relative path"),
             "'..' through manifest_path: \"%s\"", err);
    return tu_failures == before;
}

int main(int argc, char **argv)
{
    if (argc != 2) return fprintf(stderr, "usage: test_manifest SCRATCH_DIR\n"), 2;
    int passed = 0;
    passed += hostile_paths();
    passed += hostile_fields();
    passed += good_manifest();
    passed += symlinks(argv[1]);
    return tu_finish("test_manifest", passed);
}
