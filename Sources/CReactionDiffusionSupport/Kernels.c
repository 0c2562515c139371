// The solver's kernels, one instantiation of KernelTemplate.h per instruction set, chosen at run
// time. Every instantiation is compiled into every build for its architecture: the x86-64 ones
// through `#pragma clang attribute` regions that give their functions the target features,
// with no build flags, so a binary built anywhere runs each processor's fastest kernel.
#include "CReactionDiffusionSupport.h"


// Every kernel computes each lane exactly as a single value is computed: a contracted
// multiply-add rounds once where the rule rounds twice, and would make results depend on the
// kernel.
#pragma clang fp contract(off)

// The kernels' helpers that take or return vectors are always inlined, so the calling
// convention that this warning is about never applies to them.
#pragma clang diagnostic ignored "-Wpsabi"

/// Sixteen lanes in every vector kernel: one AVX-512 register, two AVX2 registers, four SSE2 or
/// NEON registers. The independent registers of the narrower sets hide the latency of the
/// rule's long chains of dependent operations.
#define RD_LANES 16
typedef float rd_vf __attribute__((ext_vector_type(16)));
typedef int rd_vi __attribute__((ext_vector_type(16)));
typedef unsigned int rd_vu __attribute__((ext_vector_type(16)));
typedef unsigned char rd_vb __attribute__((ext_vector_type(16)));
// The same vectors at any address.
typedef float rd_vf_unaligned __attribute__((ext_vector_type(16), aligned(4)));
typedef unsigned char rd_vb_unaligned __attribute__((ext_vector_type(16), aligned(1)));

#define RD_LOAD(pointer) ((rd_vf) * (const rd_vf_unaligned *)(pointer))
#define RD_STORE(pointer, value) (*(rd_vf_unaligned *)(pointer) = (value))
#define RD_LOAD_LEVELS(pointer) ((rd_vb) * (const rd_vb_unaligned *)(pointer))
#define RD_STORE_LEVELS(pointer, value) (*(rd_vb_unaligned *)(pointer) = (value))

// MARK: - Instantiations

#define RD_VECTORS 0
#define RD_FN(name) rd_scalar_##name
#include "KernelTemplate.h"
#undef RD_FN
#undef RD_VECTORS

#define RD_VECTORS 1

#if defined(__x86_64__)

// SSE2 is part of x86-64 itself: no attribute needed.
#define RD_FN(name) rd_sse2_##name
#include "KernelTemplate.h"
#undef RD_FN

#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#define RD_FN(name) rd_avx2_##name
#include "KernelTemplate.h"
#undef RD_FN
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx2"))),     \
                             apply_to = function)
#define RD_FN(name) rd_avx512_##name
#include "KernelTemplate.h"
#undef RD_FN
#pragma clang attribute pop

#elif defined(__aarch64__)

// Advanced SIMD is part of AArch64 itself.
#define RD_FN(name) rd_neon_##name
#include "KernelTemplate.h"
#undef RD_FN

#else

#define RD_FN(name) rd_vector_##name
#include "KernelTemplate.h"
#undef RD_FN

#endif

// MARK: - Processor features

#if defined(__x86_64__)
#include <cpuid.h>

/// The x86 features the kernels need, with the operating system's consent: a processor can have
/// AVX registers that the kernel does not save across context switches (XCR0).
static int rd_x86_has(int kernel) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    int osxsave = (ecx >> 27) & 1, avx = (ecx >> 28) & 1;
    if (!osxsave || !avx) return 0;
    unsigned int xcr0_low, xcr0_high;
    __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    // XMM and YMM state (bits 1 and 2); opmask and the upper ZMM state (bits 5 to 7).
    int ymm_state = (xcr0_low & 0x6) == 0x6;
    int zmm_state = (xcr0_low & 0xE6) == 0xE6;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    int avx2 = (ebx >> 5) & 1, avx512f = (ebx >> 16) & 1, avx512bw = (ebx >> 30) & 1,
        avx512vl = (ebx >> 31) & 1;
    switch (kernel) {
    case RD_KERNEL_AVX2:
        return ymm_state && avx2;
    case RD_KERNEL_AVX512:
        return ymm_state && zmm_state && avx2 && avx512f && avx512bw && avx512vl;
    default:
        return 0;
    }
}
#endif

int rd_kernel_is_available(int kernel) {
    switch (kernel) {
    case RD_KERNEL_SCALAR:
        return 1;
#if defined(__x86_64__)
    case RD_KERNEL_SSE2:
        return 1;
    case RD_KERNEL_AVX2:
    case RD_KERNEL_AVX512: {
        // Asked once per kernel; the answer cannot change while the process runs.
        static int answers[RD_KERNEL_COUNT];  // 0 unknown, 1 no, 2 yes
        int answer = __atomic_load_n(&answers[kernel], __ATOMIC_RELAXED);
        if (answer == 0) {
            answer = rd_x86_has(kernel) ? 2 : 1;
            __atomic_store_n(&answers[kernel], answer, __ATOMIC_RELAXED);
        }
        return answer == 2;
    }
#elif defined(__aarch64__)
    case RD_KERNEL_NEON:
        return 1;
#else
    case RD_KERNEL_VECTOR:
        return 1;
#endif
    default:
        return 0;
    }
}

int rd_kernel_best(void) {
    static const int fastest_first[] = {RD_KERNEL_AVX512, RD_KERNEL_AVX2, RD_KERNEL_SSE2,
                                        RD_KERNEL_NEON, RD_KERNEL_VECTOR};
    for (size_t i = 0; i < sizeof fastest_first / sizeof fastest_first[0]; i++) {
        if (rd_kernel_is_available(fastest_first[i])) return fastest_first[i];
    }
    return RD_KERNEL_SCALAR;
}

const char *rd_kernel_name(int kernel) {
    switch (kernel) {
    case RD_KERNEL_SCALAR: return "scalar";
    case RD_KERNEL_SSE2: return "sse2";
    case RD_KERNEL_AVX2: return "avx2";
    case RD_KERNEL_AVX512: return "avx512";
    case RD_KERNEL_NEON: return "neon";
    case RD_KERNEL_VECTOR: return "vector";
    default: return "unknown";
    }
}

// MARK: - Dispatch

/// A kernel that is not available here falls back to the scalar one rather than faulting on an
/// illegal instruction.
static int rd_usable(int kernel) {
    return rd_kernel_is_available(kernel) ? kernel : RD_KERNEL_SCALAR;
}

#if defined(__x86_64__)
#define RD_DISPATCH(kernel, name, ...)                                                          \
    switch (rd_usable(kernel)) {                                                                 \
    case RD_KERNEL_AVX512: rd_avx512_##name(__VA_ARGS__); break;                                 \
    case RD_KERNEL_AVX2: rd_avx2_##name(__VA_ARGS__); break;                                     \
    case RD_KERNEL_SSE2: rd_sse2_##name(__VA_ARGS__); break;                                     \
    default: rd_scalar_##name(__VA_ARGS__); break;                                               \
    }
#elif defined(__aarch64__)
#define RD_DISPATCH(kernel, name, ...)                                                          \
    switch (rd_usable(kernel)) {                                                                 \
    case RD_KERNEL_NEON: rd_neon_##name(__VA_ARGS__); break;                                     \
    default: rd_scalar_##name(__VA_ARGS__); break;                                               \
    }
#else
#define RD_DISPATCH(kernel, name, ...)                                                          \
    switch (rd_usable(kernel)) {                                                                 \
    case RD_KERNEL_VECTOR: rd_vector_##name(__VA_ARGS__); break;                                 \
    default: rd_scalar_##name(__VA_ARGS__); break;                                               \
    }
#endif

void rd_step_float32(const rd_grid *grid, const float *source, float *target, int first_row,
                     int end_row) {
    RD_DISPATCH(grid->kernel, step_float32, grid, source, target, first_row, end_row)
}

size_t rd_unorm8_scratch_count(int chemical_count, int width) {
    return (size_t)3 * (size_t)chemical_count * rd_scalar_expanded_stride(width);
}

void rd_step_unorm8(const rd_grid *grid, const unsigned char *source, unsigned char *target,
                    int first_row, int end_row, float *scratch) {
    RD_DISPATCH(grid->kernel, step_unorm8, grid, source, target, first_row, end_row, scratch)
}

void rd_quantize(int kernel, float *values, size_t count) {
    RD_DISPATCH(kernel, quantize, values, count)
}
