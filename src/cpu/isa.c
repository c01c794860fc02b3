/* CPU detection and the kernel sets it selects (kernels.h, isa.h).  The
 * framework code never names an ISA; only the ISA folders and the vector
 * kernels (src/cpu/simd/) are compiled with ISA flags, and they are reached
 * only through the sets built here.  Adding an ISA with a vector vocabulary
 * is its header (src/cpu/simd/<isa>.h), its flags in CMakeLists.txt
 * (attnops_simd_kernels) and, here, its set's extern, its CPU predicate
 * and one row of `isas`. */
#include "cpu/isa.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnops.h"

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <stdint.h>
#include <sys/auxv.h>
#endif

static bool always(void) { return true; }

#if defined(__x86_64__)
#include <cpuid.h>

/* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports has no "f16c". */
static bool x86_f16c(void)
{
    unsigned eax, ebx, ecx, edx;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
}

/* AVX2 with FMA and F16C: every AVX2 CPU made has the other two, and the kernels use them. */
static bool x86_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && x86_f16c();
}

static bool x86_avx512(void)
{
    __builtin_cpu_init();
    return x86_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

/* AVX512-BF16: CPUID leaf 7 subleaf 1, EAX bit 5 (gcc 12's __builtin_cpu_supports has no name for it). */
static bool x86_avx512bf16(void)
{
    unsigned eax, ebx, ecx, edx;
    return x86_avx512() && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5));
}
#endif

/* What each ISA defines: partial sets, merged over the portable one. */
#if defined(__x86_64__)
extern const cpu_kernel_set cpu_kernels_simd__avx2;   /* src/cpu/simd/kernels_simd.c on src/cpu/simd/avx2.h */
extern const cpu_kernel_set cpu_kernels_philox__avx2; /* src/cpu/avx2/philox_avx2.c */
extern const cpu_kernel_set cpu_kernels_simd__avx512;   /* src/cpu/simd/kernels_simd.c on src/cpu/simd/avx512.h */
extern const cpu_kernel_set cpu_kernels_philox__avx512; /* src/cpu/avx512/philox_avx512.c */
extern const cpu_kernel_set cpu_kernels_fia__avx512bf16; /* src/cpu/avx512bf16/fia_bf16.c */
#elif defined(__aarch64__)
extern const cpu_kernel_set cpu_kernels_simd__neon;   /* src/cpu/simd/kernels_simd.c on src/cpu/simd/neon.h */
extern const cpu_kernel_set cpu_kernels_philox__neon; /* src/cpu/neon/philox_neon.c */
extern const cpu_kernel_set cpu_kernels_gemm__neon;   /* src/cpu/neon/gemm_neon.c */
#endif

enum { ISA_MAX_PARTS = 3 };

typedef struct isa_info {
    const char *name;
    bool (*supported)(void);
    /* its kernels: partial sets, one per source file (NULL past the last),
     * merged in order, a later one overriding an earlier one */
    const cpu_kernel_set *own[ISA_MAX_PARTS];
    const char *gemm_target; /* cpu_isa_gemm_target (isa.h) */
    cpu_tuning tuning;
} isa_info;

/* AVX2's 64-row backward tiles: alternating A/B binaries on a Zen 3, 2
 * threads, B1 N8 S4096 D128, four rounds: f32 113-139 -> 138-155 GFLOP/s,
 * bf16 (widened) 118-138 -> 128-156 against 128 rows. */
static const isa_info isas[] = {
    {"portable", always, {&cpu_kernels_portable}, NULL, {128}},
#if defined(__x86_64__)
    {"avx2", x86_avx2, {&cpu_kernels_simd__avx2, &cpu_kernels_philox__avx2}, "hsw", {64}},
    {"avx512", x86_avx512, {&cpu_kernels_simd__avx512, &cpu_kernels_philox__avx512}, "", {128}},
    /* AVX-512's kernels but FusedInferAttentionScore's few-row products on bf16 */
    {"avx512bf16", x86_avx512bf16, {&cpu_kernels_fia__avx512bf16}, "", {128}},
#elif defined(__aarch64__)
    /* ASIMD is mandatory in AArch64.  No libxsmm there: the tile GEMMs
     * are the set's gemm.f32 (src/cpu/neon/gemm_neon.c). */
    {"neon", always, {&cpu_kernels_simd__neon, &cpu_kernels_philox__neon, &cpu_kernels_gemm__neon}, "", {128}},
#endif
};
enum { ISA_COUNT = sizeof isas / sizeof isas[0] };

#define ENTRY(table, name) {#table, #name, offsetof(cpu_kernel_set, table.name)},
#define FA_ENTRY(name) ENTRY(fa, name)
#define KP_ENTRY(name) ENTRY(kp, name)
#define AR_ENTRY(name) ENTRY(ar, name)
#define FIA_ENTRY(name) ENTRY(fia, name)
#define GEMM_ENTRY(name) ENTRY(gemm, name)
#define PEAK_ENTRY(name) ENTRY(peak, name)
#define GOLDEN_ENTRY(name) ENTRY(golden, name)
const cpu_kernel_entry cpu_kernel_entries[] = {
    FA_KERNEL_NAMES(FA_ENTRY) KP_KERNEL_NAMES(KP_ENTRY) AR_KERNEL_NAMES(AR_ENTRY) FIA_KERNEL_NAMES(FIA_ENTRY)
        GEMM_KERNEL_NAMES(GEMM_ENTRY) PEAK_KERNEL_NAMES(PEAK_ENTRY) GOLDEN_KERNEL_NAMES(GOLDEN_ENTRY)};
const int cpu_kernel_entry_count = sizeof cpu_kernel_entries / sizeof cpu_kernel_entries[0];
/* a member missing from a *_KERNEL_NAMES list would go unmerged and untested */
_Static_assert(sizeof(cpu_kernel_entries) / sizeof(cpu_kernel_entries[0]) * sizeof(void (*)(void)) ==
                   sizeof(cpu_kernel_set),
               "every cpu_kernel_set member is named in its *_KERNEL_NAMES list");

static cpu_kernel_set merged[ISA_COUNT];
static int provider[ISA_COUNT][sizeof cpu_kernel_entries / sizeof cpu_kernel_entries[0]];
static bool supported[ISA_COUNT];
static int selected;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void)
{
    for (int i = 0; i < ISA_COUNT; i++) {
        supported[i] = (i == 0 || supported[i - 1]) && isas[i].supported();
        if (i > 0) merged[i] = merged[i - 1];
        for (int e = 0; e < cpu_kernel_entry_count; e++) {
            void (*f)(void) = NULL;
            for (int part = 0; part < ISA_MAX_PARTS && isas[i].own[part]; part++) {
                void (*g)(void) = cpu_kernel_at(isas[i].own[part], &cpu_kernel_entries[e]);
                if (g) f = g;
            }
            if (i > 0 && !f) {
                provider[i][e] = provider[i - 1][e];
                continue;
            }
            memcpy((char *)&merged[i] + cpu_kernel_entries[e].offset, &f, sizeof f);
            provider[i][e] = i;
        }
        if (supported[i]) selected = i;
    }
    const char *want = getenv("ATTNOPS_ISA");
    if (!want || !*want) return;
    for (int i = 0; i < ISA_COUNT; i++)
        if (strcmp(want, isas[i].name) == 0) {
            if (supported[i]) selected = i;
            else
                fprintf(stderr, "attnops: ATTNOPS_ISA=%s: this CPU lacks %s; using %s\n", want, isas[i].name,
                        isas[selected].name);
            return;
        }
    char known[64] = "";
    for (int i = 0; i < ISA_COUNT; i++) {
        strcat(known, i ? ", " : "");
        strcat(known, isas[i].name);
    }
    fprintf(stderr, "attnops: ATTNOPS_ISA=%s is not one of %s; using %s\n", want, known, isas[selected].name);
}

int cpu_isa_count(void) { return ISA_COUNT; }
const char *cpu_isa_name(int isa) { return isa >= 0 && isa < ISA_COUNT ? isas[isa].name : "?"; }

bool cpu_isa_supported(int isa)
{
    pthread_once(&once, build);
    return isa >= 0 && isa < ISA_COUNT && supported[isa];
}

int cpu_isa_selected(void)
{
    pthread_once(&once, build);
    return selected;
}

const cpu_kernel_set *cpu_kernels_of(int isa) { return cpu_isa_supported(isa) ? &merged[isa] : NULL; }

int cpu_kernel_provider(int isa, const cpu_kernel_entry *e)
{
    return cpu_isa_supported(isa) ? provider[isa][e - cpu_kernel_entries] : -1;
}

const cpu_kernel_set *cpu_kernels(void) { return &merged[cpu_isa_selected()]; }

cpu_kernel_set *cpu_kernels_for_fault_injection(void) { return &merged[cpu_isa_selected()]; }

const cpu_tuning *cpu_tuning_selected(void) { return &isas[cpu_isa_selected()].tuning; }

const char *cpu_isa_gemm_target(int isa) { return isa >= 0 && isa < ISA_COUNT ? isas[isa].gemm_target : NULL; }

const char *attnops_cpu_isa(void) { return isas[cpu_isa_selected()].name; }

const char *attnops_cpu_isa_at(int index, bool *runs_here)
{
    if (runs_here) *runs_here = cpu_isa_supported(index);
    return index >= 0 && index < ISA_COUNT ? isas[index].name : NULL;
}

static char model[64] = "unknown";
static pthread_once_t model_once = PTHREAD_ONCE_INIT;

static void read_model(void)
{
#if defined(__x86_64__)
    unsigned regs[12];
    unsigned max;
    __asm__("cpuid" : "=a"(max) : "a"(0x80000000u) : "ebx", "ecx", "edx");
    if (max < 0x80000004u) return;
    for (unsigned leaf = 0; leaf < 3; leaf++) {
        unsigned *r = regs + 4 * leaf;
        __asm__("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(0x80000002u + leaf), "c"(0));
    }
    char brand[49];
    memcpy(brand, regs, 48);
    brand[48] = '\0';
    const char *b = brand;
    while (*b == ' ') b++;
    snprintf(model, sizeof model, "%s", b);
    for (size_t n = strlen(model); n > 0 && model[n - 1] == ' '; n--) model[n - 1] = '\0';
#elif defined(__aarch64__)
    /* Linux traps and emulates an EL0 read of MIDR_EL1 where HWCAP_CPUID says so. */
    if (!(getauxval(AT_HWCAP) & HWCAP_CPUID)) return;
    uint64_t midr;
    __asm__("mrs %0, midr_el1" : "=r"(midr));
    const unsigned implementer = (unsigned)(midr >> 24) & 0xffu, part = (unsigned)(midr >> 4) & 0xfffu;
    /* the hosts this port is for (Arm's and HiSilicon's MIDR part numbers) */
    static const struct { unsigned implementer, part; const char *name; } cores[] = {
        {0x48, 0xd01, "HiSilicon TSV110, Kunpeng 920"}, {0x41, 0xd0c, "Neoverse N1"},
        {0x41, 0xd40, "Neoverse V1"}, {0x41, 0xd49, "Neoverse N2"}, {0x41, 0xd4f, "Neoverse V2"},
        {0x41, 0xd8e, "Neoverse N3"}, {0x41, 0xd84, "Neoverse V3"}, {0xc0, 0xac3, "Ampere-1"},
    };
    const char *name = NULL;
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++)
        if (cores[i].implementer == implementer && cores[i].part == part) name = cores[i].name;
    if (name) snprintf(model, sizeof model, "Arm 0x%02x part 0x%03x (%s)", implementer, part, name);
    else snprintf(model, sizeof model, "Arm 0x%02x part 0x%03x", implementer, part);
#endif
}

const char *attnops_cpu_model(void)
{
    pthread_once(&model_once, read_model);
    return model;
}
