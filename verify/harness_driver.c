/* The driver table and what every driver's run shares (harness_driver.h). */
#include "harness_driver.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

const harness_driver *const harness_drivers[HARNESS_OP_COUNT] = {
    [HARNESS_OP_FA_GRAD] = &driver_flash_attention_grad,
    [HARNESS_OP_KEYPOOL] = &driver_keypool,
    [HARNESS_OP_ATTNRES] = &driver_attnres,
    [HARNESS_OP_FIA] = &driver_fia,
};

attnops_status harness_run_case(const harness_case *hc, const harness_run_options *o, harness_run *r)
{
    memset(r, 0, sizeof *r);
    r->driver = harness_driver_of(hc->op);
    r->hc = hc;
    const attnops_status st = r->driver->run(hc, o, r);
    if (st != ATTNOPS_SUCCESS) {
        harness_run_free(r);
        return st;
    }
    cJSON_AddNumberToObject(r->attributes, "data_seed", (double)hc->data_seed);
    return st;
}

void harness_run_free(harness_run *r)
{
    if (r->state) r->driver->free(r);
    cJSON_Delete(r->attributes);
    free(r->tensors);
    memset(r, 0, sizeof *r);
}

harness_tensor *harness_add(harness_run *r, const char *name, const char *role, const attnops_tensor *golden,
                            const attnops_tensor *kernel, const attnops_tensor *bench)
{
    if (r->ntensors == r->capacity) {
        r->capacity = r->capacity ? 2 * r->capacity : 32;
        r->tensors = realloc(r->tensors, sizeof *r->tensors * (size_t)r->capacity);
        if (!r->tensors) abort(); /* the harness's own bookkeeping: a few KiB */
    }
    harness_tensor *t = &r->tensors[r->ntensors++];
    *t = (harness_tensor){.name = name, .role = role, .view = {golden, kernel, bench}};
    return t;
}
