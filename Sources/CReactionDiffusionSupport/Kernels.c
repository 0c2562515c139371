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
/// `for` with the test in the body, which the compiler turns into the tightest loop: the usual
/// iteration is one add and one compare, the move back for the last vector off that path (a
/// helper returning the next column does not compile to as tight a loop).
#define RD_FOR_VECTORS(x, start, end, lanes)                                                    \
    for (int x = (start);; x += (lanes))                                                         \
        if (x + (lanes) > (end) && (x == (end) || ((x = (end) - (lanes)), 0))) {                 \
            break;                                                                               \
        } else

// MARK: - Rule 2

/// The parameters of the fixed-point rule (`rd_step_unorm8`'s rule 2) as words, with its two
/// constants, so that one formula serves single words and vectors of them alike.
typedef struct {
    unsigned short du_n, du_c, dv_n, dv_c, f, fc, fk;
    /// 33024 = 129·2⁸: mulhu(U8, 33024) = ⌊129·U / 2⌋ (U8 = 256·U).
    unsigned short c129;
    /// The rounding offset of V′ (64, and 1 for the mean of the floors).
    unsigned short c65;
} rd_fixed_parameters;

// Rule 2 for a cell, or a vector of cells, on words of type `T` (unsigned 16-bit, or vectors of
// them, where + and − wrap) with the operations `avg`, `mulhu` and `adds`: the formulas of
// `rd_step_unorm8`, written once. `q` holds the parameters as `T`s; the inputs are the levels
// ×256 (X8 = X << 8); `xu` and `xv` take the Q7 values, before `level`.
#define RD_FIXED_GRAY_SCOTT(T, q, avg, mulhu, adds, u8, un8, us8, uw8, ue8, v8, vn8, vs8, vw8, \
                            ve8, xu, xv)                                                         \
    do {                                                                                         \
        T su_ = avg(avg(un8, us8), avg(uw8, ue8));                                               \
        T sv_ = avg(avg(vn8, vs8), avg(vw8, ve8));                                               \
        T du_ = (T)(mulhu(su_, (q).du_n) + mulhu(u8, (q).du_c));                                 \
        T dv_ = (T)(mulhu(sv_, (q).dv_n) + mulhu(v8, (q).dv_c));                                 \
        T r_ = mulhu(mulhu(v8, v8), mulhu(u8, (q).c129));                                        \
        xu = adds((T)(du_ - r_), (T)((q).fc - mulhu(u8, (q).f)));                                \
        xv = adds((T)((T)(dv_ - mulhu(v8, (q).fk)) + (q).c65), r_);                              \
    } while (0)

// The operations on single words, exactly as the SSE2 instructions of the same names compute
// each lane (`pavgw`, `pmulhuw`, `paddsw`; `psraw` 7 and `packuswb` for `level`).
static inline __attribute__((always_inline)) unsigned short rd_fixed_avg(unsigned short a,
                                                                         unsigned short b) {
    return (unsigned short)(((unsigned int)a + b + 1) >> 1);
}
static inline __attribute__((always_inline)) unsigned short rd_fixed_mulhu(unsigned short a,
                                                                           unsigned short b) {
    return (unsigned short)(((unsigned int)a * b) >> 16);
}
static inline __attribute__((always_inline)) unsigned short rd_fixed_adds(unsigned short a,
                                                                          unsigned short b) {
    int sum = (int)(short)a + (int)(short)b;
    return (unsigned short)(sum > 32767 ? 32767 : sum < -32768 ? -32768 : sum);
}
static inline __attribute__((always_inline)) unsigned char rd_fixed_level(unsigned short x) {
    int level = (int)(short)x >> 7;  // arithmetic: rounds toward −∞
    return (unsigned char)(level < 0 ? 0 : level > 255 ? 255 : level);
}

/// The level at column `x` of `row`, for x from −1 to `width`, through the boundary rule.
static inline __attribute__((always_inline)) unsigned int rd_fixed_read(const unsigned char *row,
                                                                        int x, int width,
                                                                        int wraps) {
    if (x < 0) return wraps ? row[width - 1] : 0;
    if (x >= width) return wraps ? row[0] : 0;
    return row[x];
}

/// Rule 2 for the cell at column `x` of the rows `un`, `uc`, `us` (north, centre, south) of u
/// and `vn`, `vc`, `vs` of v, into column `x` of `out_u` and `out_v`: the reference every
/// kernel's vectors agree with, and their edge columns.
static inline __attribute__((always_inline)) void rd_fixed_cell(
    const rd_fixed_parameters *q, const unsigned char *un, const unsigned char *uc,
    const unsigned char *us, const unsigned char *vn, const unsigned char *vc,
    const unsigned char *vs, unsigned char *out_u, unsigned char *out_v, int x, int width,
    int wraps) {
#define RD_W8(value) ((unsigned short)((value) << 8))
    unsigned short xu, xv;
    RD_FIXED_GRAY_SCOTT(unsigned short, *q, rd_fixed_avg, rd_fixed_mulhu, rd_fixed_adds,
                        RD_W8(uc[x]), RD_W8(un[x]), RD_W8(us[x]),
                        RD_W8(rd_fixed_read(uc, x - 1, width, wraps)),
                        RD_W8(rd_fixed_read(uc, x + 1, width, wraps)), RD_W8(vc[x]), RD_W8(vn[x]),
                        RD_W8(vs[x]), RD_W8(rd_fixed_read(vc, x - 1, width, wraps)),
                        RD_W8(rd_fixed_read(vc, x + 1, width, wraps)), xu, xv);
#undef RD_W8
    out_u[x] = rd_fixed_level(xu);
    out_v[x] = rd_fixed_level(xv);
}

/// The rows north and south of row `y` of a plane of levels (`zeros` beyond a zero boundary).
static inline __attribute__((always_inline)) void rd_fixed_neighbour_rows(
    const unsigned char *plane, int y, int width, int height, int wraps,
    const unsigned char *zeros, const unsigned char **north, const unsigned char **south) {
    if (y > 0) {
        *north = plane + (size_t)(y - 1) * width;
    } else {
        *north = wraps ? plane + (size_t)(height - 1) * width : zeros;
    }
    if (y < height - 1) {
        *south = plane + (size_t)(y + 1) * width;
    } else {
        *south = wraps ? plane : zeros;
    }
}

/// The vector types of rule 2 for a kernel of `words` 16-bit lanes: `prefix` + `qw` (words),
/// `qs` (the same as signed words), `qb` (the `2 × words` level bytes of two word vectors) and
/// `qb_unaligned` for loads and stores at any address.
#define RD_FIXED_TYPES(prefix, words)                                                           \
    typedef unsigned short prefix##qw __attribute__((ext_vector_type(words)));                   \
    typedef short prefix##qs __attribute__((ext_vector_type(words)));                            \
    typedef unsigned char prefix##qb __attribute__((ext_vector_type(2 * (words))));              \
    typedef unsigned char prefix##qb_unaligned                                                   \
        __attribute__((ext_vector_type(2 * (words)), aligned(1)));

// MARK: - Instantiations

#define RD_VECTORS 0
#define RD_FN(name) rd_scalar_##name
#include "KernelTemplate.h"
#undef RD_FN
#undef RD_VECTORS

#define RD_VECTORS 1

#if defined(__x86_64__)
#include <immintrin.h>

/// Rule 2's operations for an x86 kernel whose registers are `type` (`__m128i`, …) and whose
/// intrinsics start `_mm` + `bits` (empty, 256 or 512): one instruction each. The words of a
/// level vector are unpacked within 128-bit lanes (with a zero low byte, so each is level·256),
/// which the final `packuswb` undoes, putting the cells back in order.
#define RD_X86_FIXED_OPERATIONS(prefix, type, bits, zero)                                       \
    RD_FIXED_TYPES(prefix, sizeof(type) / 2)                                                     \
    static inline __attribute__((always_inline)) prefix##qw prefix##fixed_avg(prefix##qw a,      \
                                                                              prefix##qw b) {    \
        return (prefix##qw)_mm##bits##_avg_epu16((type)a, (type)b);                              \
    }                                                                                            \
    static inline __attribute__((always_inline)) prefix##qw prefix##fixed_mulhu(prefix##qw a,    \
                                                                                prefix##qw b) {  \
        return (prefix##qw)_mm##bits##_mulhi_epu16((type)a, (type)b);                            \
    }                                                                                            \
    static inline __attribute__((always_inline)) prefix##qw prefix##fixed_adds(prefix##qw a,     \
                                                                               prefix##qw b) {   \
        return (prefix##qw)_mm##bits##_adds_epi16((type)a, (type)b);                             \
    }                                                                                            \
    static inline __attribute__((always_inline)) prefix##qw prefix##fixed_words(prefix##qb bytes, \
                                                                                int high) {      \
        return (prefix##qw)(high ? _mm##bits##_unpackhi_epi8(zero(), (type)bytes)                \
                                 : _mm##bits##_unpacklo_epi8(zero(), (type)bytes));              \
    }                                                                                            \
    static inline __attribute__((always_inline)) prefix##qb prefix##fixed_levels(               \
        prefix##qw low, prefix##qw high) {                                                       \
        return (prefix##qb)_mm##bits##_packus_epi16(_mm##bits##_srai_epi16((type)low, 7),        \
                                                    _mm##bits##_srai_epi16((type)high, 7));      \
    }
#define RD_HAS_NATIVE_FIXED 1

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
RD_X86_FIXED_OPERATIONS(rd_sse2_, __m128i, , _mm_setzero_si128)
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
RD_X86_FIXED_OPERATIONS(rd_avx2_, __m256i, 256, _mm256_setzero_si256)
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
RD_X86_FIXED_OPERATIONS(rd_avx512_, __m512i, 512, _mm512_setzero_si512)
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

#undef RD_HAS_NATIVE_FIXED
#undef RD_HAS_NATIVE_LEVELS

#elif defined(__aarch64__)

// Advanced SIMD is part of AArch64 itself: sixteen lanes, four of its thirty-two registers.
#define RD_FN(name) rd_neon_##name
#define RD_LANES 16
#define RD_BLOCK 1
RD_VECTOR_TYPES(rd_neon_, 16)
RD_FIXED_TYPES(rd_neon_, 8)
#include "KernelTemplate.h"
#undef RD_BLOCK
#undef RD_LANES
#undef RD_FN

#else

#define RD_FN(name) rd_vector_##name
#define RD_LANES 16
#define RD_BLOCK 1
RD_VECTOR_TYPES(rd_vector_, 16)
RD_FIXED_TYPES(rd_vector_, 8)
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

/// The bits of `value`.
static unsigned int rd_float_bits(float value) {
    union {
        float value;
        unsigned int bits;
    } word = {value};
    return word.bits;
}

/// Whether 0 ≤ `value` ≤ `upper` (for a positive `upper`) as IEEE 754 compares them, on the
/// bits: −0 is 0, every other value with the sign bit is below 0, NaN is unordered, and the bits
/// of positive floats order as their values. With denormals treated as zero (the solver's
/// float control) a comparison would let a negative denormal pass.
static int rd_float_within(float value, float upper) {
    unsigned int bits = rd_float_bits(value);
    return bits == 0x80000000u || bits <= rd_float_bits(upper);
}

/// rne(`value`) for a `value` in [0, 2¹⁵] that is an exact product (a float times a power of
/// two): adding 2²³ rounds it half to even in the default rounding mode, as `level` does.
static unsigned short rd_fixed_round(float value) {
    return (unsigned short)(rd_float_bits(value + 8388608.0f) & 0x7FFFFF);
}

/// Rule 2's parameters for `model` and `p` into `q`; 0 where the rule is not defined.
static int rd_fixed_quantize(int model, const rd_parameters *p, rd_fixed_parameters *q) {
    const float fk = p->f + p->k;  // the float32 sum, as the float rule computes it
    if (model != RD_MODEL_GRAY_SCOTT || !rd_float_within(p->du, 0.25f) ||
        !rd_float_within(p->dv, 0.25f) || !rd_float_within(p->f, 1.0f) ||
        !rd_float_within(p->k, 0x1.fffffep127f) || !rd_float_within(fk, 1.0f)) {
        return 0;
    }
    q->du_n = rd_fixed_round(p->du * 131072.0f);
    q->du_c = (unsigned short)(32768 - q->du_n);
    q->dv_n = rd_fixed_round(p->dv * 131072.0f);
    q->dv_c = (unsigned short)(32768 - q->dv_n);
    q->f = rd_fixed_round(p->f * 32768.0f);
    q->fc = (unsigned short)((q->f * 255u >> 8) + 64);
    q->fk = rd_fixed_round(fk * 32768.0f);
    q->c129 = 33024;
    q->c65 = 65;
    return 1;
}

int rd_unorm8_fixed_rule_applies(int model, const rd_parameters *parameters) {
    rd_fixed_parameters q;
    return rd_fixed_quantize(model, parameters, &q);
}

void rd_step_unorm8(const rd_grid *grid, const unsigned char *source, unsigned char *target,
                    int first_row, int end_row, float *scratch) {
    rd_fixed_parameters q;
    if (grid->unorm8_rule == 2 && rd_fixed_quantize(grid->model, &grid->parameters, &q)) {
        // Rule 2 reads bytes and needs no expanded rows: the scratch holds the row of zero
        // levels beyond a zero boundary (it has room for far more than `width` bytes).
        unsigned char *zeros = (unsigned char *)scratch;
        if (!grid->wraps && (first_row == 0 || end_row >= grid->height)) {
            __builtin_memset(zeros, 0, (size_t)grid->width);
        }
        RD_DISPATCH(grid->kernel, step_unorm8_fixed, grid, &q, source, target, first_row,
                    end_row, zeros)
        return;
    }
    RD_DISPATCH(grid->kernel, step_unorm8, grid, source, target, first_row, end_row, scratch)
}

void rd_quantize(int kernel, float *values, size_t count) {
    RD_DISPATCH(kernel, quantize, values, count)
}
