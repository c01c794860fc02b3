/* The case descriptor's text form (verify/fa_case_shape.h): every field
 * fa_case_describe writes reads back to the same descriptor, and
 * fa_case_parse refuses what is not one (unknown keys and names, numbers
 * with junk, too many lengths, an overlong spec) instead of reading 0. */
#include <string.h>

#include "fa_case_shape.h"
#include "suite.h"
#include "testutil.h"

static bool same(const fa_case_shape *a, const fa_case_shape *b)
{
    bool eq = a->N1 == b->N1 && a->N2 == b->N2 && a->D == b->D && a->Dv == b->Dv && a->dtype == b->dtype &&
              a->layout == b->layout && a->pad == b->pad && a->Dr == b->Dr && a->scale == b->scale &&
              a->sparse_mode == b->sparse_mode && a->mask == b->mask && a->pre == b->pre && a->next == b->next &&
              a->inner_precise == b->inner_precise && a->pse == b->pse && a->keep_prob == b->keep_prob &&
              a->seed == b->seed && a->offset == b->offset && a->nseq == b->nseq;
    if (a->layout != ATTNOPS_LAYOUT_TND) eq &= a->B == b->B && a->S1 == b->S1 && a->S2 == b->S2;
    if (a->pse != FA_CASE_PSE_NONE)
        eq &= a->pse_type == b->pse_type && a->q_start == b->q_start && a->kv_start == b->kv_start;
    if (a->dtype == ATTNOPS_DTYPE_F8_E4M3FN || a->dtype == ATTNOPS_DTYPE_F8_E5M2) eq &= a->out_dtype == b->out_dtype;
    for (int i = 0; i < a->nseq && eq; i++) eq &= a->seq_q[i] == b->seq_q[i];
    return eq;
}

static int round_trips(void)
{
    static const char *const specs[] = {
        "B=2,N1=4,N2=2,S1=7,S2=9,D=16,Dv=8,dtype=bf16,layout=BSH,pad=3",
        "B=1,N1=1,N2=1,S1=130,S2=70,D=64,Dv=64,dtype=f16,layout=SBH,mode=4,mask=compressed,pre=-3,next=12",
        "B=2,N1=2,N2=2,S1=5,S2=5,D=16,Dv=16,dtype=f32,layout=BNSD,rope=8,scale=0.125,keep=0.75,seed=7,offset=64",
        "B=1,N1=2,N2=1,S1=8,S2=8,D=32,Dv=32,dtype=f8_e5m2,out=bf16,layout=BSND,pse=slopes_bn,pse_type=3,q_start=2,"
        "kv_start=1,inner_precise=2",
        "N1=2,N2=2,D=16,Dv=16,dtype=f32,layout=TND,mode=1,mask=ss,seqs=3:0:4:0",
    };
    int passed = 0;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        fa_case_shape a, b;
        char text[1024];
        const bool parsed = fa_case_parse(specs[i], &a);
        fa_case_describe(&a, text, sizeof text);
        const bool ok = parsed && fa_case_parse(text, &b) && same(&a, &b);
        TU_CHECK(ok, "'%s' does not read back from its description '%s'", specs[i], text);
        passed += ok;
    }
    return passed;
}

static int refusals(void)
{
    char overlong[1100];
    memset(overlong, 0, sizeof overlong);
    for (size_t n = 0; n + 5 < sizeof overlong - 1; n += 4) memcpy(overlong + n, "B=1,", 4);
    char many[256] = "seqs=1";
    for (int i = 1; i < 33; i++) strcat(many, ":1");
    const char *const bad[] = {"B=x", "B=1x", "S1=", "D=16.5", "scale=0.1x", "dtype=f64", "out=int8",
                               "layout=NSD", "mask=band", "pse=alibi", "seqs=1:a", "seqs=", many, "bogus=1",
                               "B", overlong};
    int passed = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fa_case_shape s;
        const bool refused = !fa_case_parse(bad[i], &s);
        TU_CHECK(refused, "fa_case_parse accepted '%.60s'", bad[i]);
        passed += refused;
    }
    /* the defaults, and an empty spec is the default case */
    fa_case_shape s;
    const bool defaults = fa_case_parse("", &s) && s.B == 1 && s.S1 == 1 && s.D == 16 &&
                          s.dtype == ATTNOPS_DTYPE_F32 && s.layout == ATTNOPS_LAYOUT_BNSD && s.pse_type == 1;
    TU_CHECK(defaults, "the empty spec is not the default case");
    return passed + defaults;
}

int main(void)
{
    const int passed = round_trips() + refusals();
    return tu_finish("fa_case_shape", passed);
}
