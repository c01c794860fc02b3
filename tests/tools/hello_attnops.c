/* The smallest attnops consumer, built by tests/tools/check_install.sh against
 * an installed tree (pkg-config and find_package): version, parameter
 * defaults, and one 1x1x4x8 f32 BNSD forward.  With K = 0 every score is 0,
 * so the softmax is uniform: attention_out = the mean of V's rows,
 * softmax_max = 0, softmax_sum = 4.  Uses no libm on purpose: the shared
 * library's link line (Libs) is all it gets. */
#include <attnops.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S 4
#define D 8

static int fail(const char *what, attnops_status st)
{
    fprintf(stderr, "hello_attnops: FAIL: %s (status %d %s: %s)\n", what, (int)st, attnops_status_string(st),
            attnops_last_error());
    return 1;
}

static int near(float a, float b) { return (a > b ? a - b : b - a) <= 1e-5f * (1.0f + (b < 0 ? -b : b)); }

int main(void)
{
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", ATTNOPS_VERSION_MAJOR, ATTNOPS_VERSION_MINOR, ATTNOPS_VERSION_PATCH);
    const char *ver = attnops_version();
    if (!ver || strcmp(ver, want) != 0) {
        fprintf(stderr, "hello_attnops: FAIL: attnops_version() is \"%s\" but the header says %s\n", ver ? ver : "(null)",
                want);
        return 1;
    }

    attnops_fa_fwd_args a;
    memset(&a, 0, sizeof a);
    attnops_fa_params_init(&a.p);
    if (a.p.scale_value != 1.0 || a.p.keep_prob != 1.0 || a.p.impl != ATTNOPS_IMPL_AUTO) {
        fprintf(stderr, "hello_attnops: FAIL: attnops_fa_params_init() did not set the CANN defaults\n");
        return 1;
    }

    float q[S * D], k[S * D], v[S * D], out[S * D], smax[S * 8], ssum[S * 8];
    for (int i = 0; i < S * D; i++) {
        q[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
        k[i] = 0.0f;
        v[i] = (float)((i * 5) % 13) / 13.0f - 0.25f;
        out[i] = -1.0f;
    }
    const int64_t shape[4] = {1, 1, S, D}, stat_shape[4] = {1, 1, S, 8};
    attnops_tensor tq = attnops_tensor_contiguous(q, ATTNOPS_DTYPE_F32, 4, shape);
    attnops_tensor tk = attnops_tensor_contiguous(k, ATTNOPS_DTYPE_F32, 4, shape);
    attnops_tensor tv = attnops_tensor_contiguous(v, ATTNOPS_DTYPE_F32, 4, shape);
    attnops_tensor to = attnops_tensor_contiguous(out, ATTNOPS_DTYPE_F32, 4, shape);
    attnops_tensor tmax = attnops_tensor_contiguous(smax, ATTNOPS_DTYPE_F32, 4, stat_shape);
    attnops_tensor tsum = attnops_tensor_contiguous(ssum, ATTNOPS_DTYPE_F32, 4, stat_shape);
    a.p.query = &tq;
    a.p.key = &tk;
    a.p.value = &tv;
    a.p.head_num = 1;
    a.p.input_layout = ATTNOPS_LAYOUT_BNSD;
    a.p.scale_value = 0.35355339059327373; /* 1/sqrt(8) */
    a.softmax_max = &tmax;
    a.softmax_sum = &tsum;
    a.attention_out = &to;

    size_t bytes = 0;
    attnops_status st = attnops_flash_attention_score_workspace_size(&a, &bytes);
    if (st != ATTNOPS_SUCCESS) return fail("attnops_flash_attention_score_workspace_size", st);
    void *ws = malloc(bytes ? bytes : 1);
    if (!ws) return fail("malloc of the workspace", ATTNOPS_ERR_OUT_OF_MEMORY);
    st = attnops_flash_attention_score(&a, ws, bytes);
    free(ws);
    if (st != ATTNOPS_SUCCESS) return fail("attnops_flash_attention_score", st);

    for (int s = 0; s < S; s++) {
        for (int d = 0; d < D; d++) {
            float mean = 0.0f;
            for (int j = 0; j < S; j++) mean += v[j * D + d];
            mean /= S;
            if (!near(out[s * D + d], mean)) {
                fprintf(stderr, "hello_attnops: FAIL: attention_out[%d][%d] = %g, expected %g\n", s, d,
                        out[s * D + d], mean);
                return 1;
            }
        }
        for (int r = 0; r < 8; r++)
            if (!near(smax[s * 8 + r], 0.0f) || !near(ssum[s * 8 + r], (float)S)) {
                fprintf(stderr, "hello_attnops: FAIL: softmax_max/sum[%d][%d] = %g/%g, expected 0/%d\n", s, r,
                        smax[s * 8 + r], ssum[s * 8 + r], S);
                return 1;
            }
    }
    printf("hello_attnops: attnops %s: 1x1x%dx%d f32 forward ok (workspace %zu bytes)\n", ver, S, D, bytes);
    return 0;
}
