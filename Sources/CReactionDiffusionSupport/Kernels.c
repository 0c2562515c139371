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

/// The vector types of a kernel with `lanes` lanes, named `prefix` + `vf` (floats), `vi` and
/// `vu` (their bits, as the masks of comparisons and for conversions), `vb` (level bytes), and
/// `vf_unaligned` and `vb_unaligned` for loads and stores at any address.
#define RD_VECTOR_TYPES(prefix, lanes)                                                          \
    typedef float prefix##vf __attribute__((ext_vector_type(lanes)));                            \
    typedef int prefix##vi __attribute__((ext_vector_type(lanes)));                              \
    typedef unsigned int prefix##vu __attribute__((ext_vector_type(lanes)));                     \
    typedef unsigned char prefix##vb __attribute__((ext_vector_type(lanes)));                    \
    typedef float prefix##vf_unaligned __attribute__((ext_vector_type(lanes), aligned(4)));      \
    typedef unsigned char prefix##vb_unaligned __attribute__((ext_vector_type(lanes), aligned(1)));

/// Runs the statement that follows for the vectors of `lanes` lanes starting at `x` = `start`,
/// `start + lanes`, … in a run of columns that ends at `end` (and holds at least one vector).
/// The last vector starts at `end − lanes`, overlapping the one before rather than leaving a
/// tail: a step reads only the source, so computing a column twice is harmless. Written as one
/// `for` with the test in the body, which the compiler turns into the tightest loop (a helper
/// returning the next column made the unorm8 step 15% slower).
#define RD_FOR_VECTORS(x, start, end, lanes)                                                    \
    for (int x = (start);; x += (lanes))                                                         \
        if (x + (lanes) > (end) && (x == (end) || ((x = (end) - (lanes)), 0))) {                 \
            break;                                                                               \
        } else

// MARK: - Instantiations

#define RD_VECTORS 0
#define RD_FN(name) rd_scalar_##name
#include "KernelTemplate.h"
#undef RD_FN
#undef RD_VECTORS

#define RD_VECTORS 1

#if defined(__x86_64__)
#include <immintrin.h>

// The x86 kernels narrow values to levels with the processor's own clamp and conversion:
// `minps` of 1 and the value (which returns its second operand, the NaN, when either is NaN),
// ×255, and `cvtps2dq`, which rounds half to even in the default rounding mode, as adding 2²³
// does in the portable sequence. Negative values, NaN (which converts to INT32_MIN) and −∞ then
// become 0 in the signed-to-unsigned saturating pack, so no `maxps` against 0 is needed. The
// packs narrow whole blocks of vectors at once: a third of the shuffles of narrowing each vector
// alone, which are what the unorm8 step waits on.
#define RD_HAS_NATIVE_LEVELS 1

/// Sixteen level bytes as one SSE register.
typedef unsigned char rd_sse2_vb16 __attribute__((ext_vector_type(16)));

/// Four values scaled and rounded to 32-bit integers: 0...255 for values from 0 to +∞, negative
/// or INT32_MIN for the rest (and NaN), which the packs turn into 0.
static inline __attribute__((always_inline)) __m128i rd_sse2_rounded(__m128 values) {
    return _mm_cvtps_epi32(_mm_mul_ps(_mm_min_ps(_mm_set1_ps(1.0f), values), _mm_set1_ps(255.0f)));
}

// SSE2 is part of x86-64 itself: no attribute needed. Eight lanes, two registers, narrowed two
// vectors at a time (one 16-byte store).
#define RD_FN(name) rd_sse2_##name
#define RD_LANES 8
#define RD_BLOCK 2
RD_VECTOR_TYPES(rd_sse2_, 8)
static inline __attribute__((always_inline)) rd_sse2_vb rd_sse2_levels(rd_sse2_vf values) {
    __m128i words = _mm_packs_epi32(rd_sse2_rounded((__m128)values.lo),
                                    rd_sse2_rounded((__m128)values.hi));
    __m128i bytes = _mm_packus_epi16(words, words);
    return __builtin_shufflevector((rd_sse2_vb16)bytes, (rd_sse2_vb16)bytes, 0, 1, 2, 3, 4, 5, 6,
                                   7);
}
static inline __attribute__((always_inline)) void rd_sse2_store_levels(
    unsigned char *out, const rd_sse2_vf values[2]) {
    __m128i low = _mm_packs_epi32(rd_sse2_rounded((__m128)values[0].lo),
                                  rd_sse2_rounded((__m128)values[0].hi));
    __m128i high = _mm_packs_epi32(rd_sse2_rounded((__m128)values[1].lo),
                                   rd_sse2_rounded((__m128)values[1].hi));
    _mm_storeu_si128((__m128i *)out, _mm_packus_epi16(low, high));
}
#include "KernelTemplate.h"
#undef RD_BLOCK
#undef RD_LANES
#undef RD_FN

// AVX2 (with FMA, which every AVX2 processor has): eight lanes, one register, narrowed four
// vectors at a time (one 32-byte store). Sixteen lanes made the rule's working set spill out of
// the sixteen registers.
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define RD_FN(name) rd_avx2_##name
#define RD_LANES 8
#define RD_BLOCK 4
#define RD_HAS_FMA 1
RD_VECTOR_TYPES(rd_avx2_, 8)
static inline __attribute__((always_inline)) __m256i rd_avx2_rounded(rd_avx2_vf values) {
    return _mm256_cvtps_epi32(
        _mm256_mul_ps(_mm256_min_ps(_mm256_set1_ps(1.0f), (__m256)values), _mm256_set1_ps(255.0f)));
}
static inline __attribute__((always_inline)) rd_avx2_vb rd_avx2_levels(rd_avx2_vf values) {
    __m256i levels = rd_avx2_rounded(values);
    // Packs work within 128-bit halves: pack the two halves as SSE registers.
    __m128i words =
        _mm_packs_epi32(_mm256_castsi256_si128(levels), _mm256_extracti128_si256(levels, 1));
    __m128i bytes = _mm_packus_epi16(words, words);
    return __builtin_shufflevector((rd_sse2_vb16)bytes, (rd_sse2_vb16)bytes, 0, 1, 2, 3, 4, 5, 6,
                                   7);
}
static inline __attribute__((always_inline)) void rd_avx2_store_levels(
    unsigned char *out, const rd_avx2_vf values[4]) {
    // Within each 128-bit half the packs leave the groups of four bytes of the four vectors in
    // turn (a₀ b₀ c₀ d₀ | a₁ b₁ c₁ d₁); one permutation of 32-bit groups puts them in order.
    __m256i ab = _mm256_packs_epi32(rd_avx2_rounded(values[0]), rd_avx2_rounded(values[1]));
    __m256i cd = _mm256_packs_epi32(rd_avx2_rounded(values[2]), rd_avx2_rounded(values[3]));
    __m256i bytes = _mm256_packus_epi16(ab, cd);
    bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)out, bytes);
}
#include "KernelTemplate.h"
#undef RD_HAS_FMA
#undef RD_BLOCK
#undef RD_LANES
#undef RD_FN
#pragma clang attribute pop

// AVX-512: sixteen lanes, one of its thirty-two registers; `vpmovusdb` narrows a vector alone.
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))),     \
                             apply_to = function)
#define RD_FN(name) rd_avx512_##name
#define RD_LANES 16
#define RD_BLOCK 1
#define RD_HAS_FMA 1
RD_VECTOR_TYPES(rd_avx512_, 16)
static inline __attribute__((always_inline)) rd_avx512_vb rd_avx512_levels(rd_avx512_vf values) {
    // A mask of the lanes whose bits, as unsigned integers, are at most those of +∞ (every lane
    // from +0 to +∞: neither negative nor NaN), ×255 with the other lanes zeroed, `vcvtps2dq`
    // (INT32_MIN beyond the Int32 range and for +∞) and `vpmovusdb`, which narrows with unsigned
    // saturation: everything from 255.5 up, INT32_MIN included, becomes 255. Four operations;
    // the mask comes from an integer compare, off the floating-point units the rule keeps busy.
    __mmask16 kept = _mm512_cmple_epu32_mask(_mm512_castps_si512((__m512)values),
                                             _mm512_set1_epi32(0x7F800000));
    __m512 scaled = _mm512_maskz_mul_ps(kept, (__m512)values, _mm512_set1_ps(255.0f));
    return (rd_avx512_vb)_mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(scaled));
}
static inline __attribute__((always_inline)) void rd_avx512_store_levels(
    unsigned char *out, const rd_avx512_vf values[1]) {
    _mm_storeu_si128((__m128i *)out, (__m128i)rd_avx512_levels(values[0]));
}
#include "KernelTemplate.h"
#undef RD_HAS_FMA
#undef RD_BLOCK
#undef RD_LANES
#undef RD_FN
#pragma clang attribute pop

#undef RD_HAS_NATIVE_LEVELS

#elif defined(__aarch64__)

// Advanced SIMD is part of AArch64 itself: sixteen lanes, four of its thirty-two registers.
#define RD_FN(name) rd_neon_##name
#define RD_LANES 16
#define RD_BLOCK 1
RD_VECTOR_TYPES(rd_neon_, 16)
#include "KernelTemplate.h"
#undef RD_BLOCK
#undef RD_LANES
#undef RD_FN

#else

#define RD_FN(name) rd_vector_##name
#define RD_LANES 16
#define RD_BLOCK 1
RD_VECTOR_TYPES(rd_vector_, 16)
#include "KernelTemplate.h"
#undef RD_BLOCK
#undef RD_LANES
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
    int fma = (ecx >> 12) & 1, osxsave = (ecx >> 27) & 1, avx = (ecx >> 28) & 1;
    if (!osxsave || !avx || !fma) return 0;
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
