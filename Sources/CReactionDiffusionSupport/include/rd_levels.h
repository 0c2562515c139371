#ifndef RD_LEVELS_H
#define RD_LEVELS_H

/// Sixteen `Float` lanes; Swift imports the type as `SIMD16<Float>`.
typedef float rd_float16 __attribute__((ext_vector_type(16)));

/// Sixteen level bytes; Swift imports the type as `SIMD16<UInt8>`.
typedef unsigned char rd_level16 __attribute__((ext_vector_type(16)));

#if defined(__AVX512F__) && defined(__AVX512BW__)
#include <immintrin.h>

/// Returns the levels k in 0...255 of sixteen values: `round(clamp(value, 0, 1) × 255)`, ties to
/// even (in the default rounding mode), NaN giving 0.
///
/// With AVX-512 (the solver is built with `-target-cpu native`): a mask of the lanes whose bits,
/// as an unsigned integer, are at most those of +∞ (+0 up to +∞: every lane that is neither
/// negative nor NaN), ×255 with the other lanes zeroed, `vcvtps2dq` (rounding in the current
/// mode, giving 0x80000000 beyond the `Int32` range and for +∞) and `vpmovusdb`, which narrows
/// with unsigned saturation: everything from 255.5 up, 0x80000000 included, becomes 255. The
/// mask comes from an integer compare, which runs beside the floating-point additions that keep
/// the stencil's adders busy, where a `vmaxps` against 0 would queue with them. Four vector
/// operations; Swift cannot ask for the saturating or masked instructions, and what LLVM makes of
/// the same rule in Swift takes six to eight.
static inline __attribute__((always_inline)) rd_level16 rd_levels(rd_float16 values) {
    __mmask16 kept = _mm512_cmple_epu32_mask(_mm512_castps_si512((__m512)values),
                                             _mm512_set1_epi32(0x7F800000));
    __m512 scaled = _mm512_maskz_mul_ps(kept, (__m512)values, _mm512_set1_ps(255.0f));
    return (rd_level16)_mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(scaled));
}

#else

/// Returns the levels k in 0...255 of sixteen values: `round(clamp(value, 0, 1) × 255)`, ties to
/// even (in the default rounding mode), NaN giving 0.
///
/// Without AVX-512, lane by lane (compilers vectorise the loop): clamp, ×255, and adding 2²³,
/// which rounds a value in [0, 255] to an integer that is then the low byte of the sum's bits.
static inline __attribute__((always_inline)) rd_level16 rd_levels(rd_float16 values) {
    // A fused ×255 + 2²³ would round once instead of twice, differently for some inputs.
#pragma clang fp contract(off)
    rd_level16 levels;
    for (int lane = 0; lane < 16; lane++) {
        float value = values[lane];
        float positive = value > 0.0f ? value : 0.0f;
        float clamped = positive < 1.0f ? positive : 1.0f;
        union {
            float value;
            unsigned int bits;
        } biased = {clamped * 255.0f + 8388608.0f};
        levels[lane] = (unsigned char)biased.bits;
    }
    return levels;
}

#endif

#if defined(__AVX512F__) && defined(__AVX512VBMI__)

/// Returns k/255 correctly rounded for sixteen levels k.
///
/// With AVX-512 VBMI: `vpermb` repeats each level byte four times, making the 32-bit integer
/// k·0x01010101 (k/255 = 0.kkkk… in base 256, so this is k/255 truncated to 32 bits, times
/// 2³²); `vcvtudq2ps` rounding *up* keeps its top 24 significant bits; ×2⁻³² is exact. The bits
/// dropped are the last copy of k, whose leading bit is 1, and the true value continues beyond
/// them, so rounding to nearest would also round up: the result is the correctly rounded k/255
/// (k = 0 gives 0). Three vector operations where the portable formula below takes four; the
/// exhaustive tests check every level.
static inline __attribute__((always_inline)) rd_float16 rd_values(rd_level16 levels) {
    const __m512i repeat = _mm512_set_epi8(
        15, 15, 15, 15, 14, 14, 14, 14, 13, 13, 13, 13, 12, 12, 12, 12, 11, 11, 11, 11, 10, 10,
        10, 10, 9, 9, 9, 9, 8, 8, 8, 8, 7, 7, 7, 7, 6, 6, 6, 6, 5, 5, 5, 5, 4, 4, 4, 4, 3, 3, 3, 3,
        2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    __m512i truncated = _mm512_permutexvar_epi8(repeat, _mm512_castsi128_si512((__m128i)levels));
    __m512 rounded =
        _mm512_cvt_roundepu32_ps(truncated, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
    return (rd_float16)_mm512_mul_ps(rounded, _mm512_set1_ps(0x1p-32f));
}

#else

/// Returns k/255 correctly rounded for sixteen levels k.
///
/// Lane by lane (compilers vectorise the loop): `1/255 = c₁ + c₂`, with `c₁` the float nearest
/// 1/255 and `c₂` the float nearest the rest; `k·c₂ + k·c₁` fused is within 2⁻⁴⁰ of k/255, and
/// k/255 (whose binary digits repeat k's eight bits) is never that close to a rounding tie, so
/// the result is correctly rounded.
static inline __attribute__((always_inline)) rd_float16 rd_values(rd_level16 levels) {
#pragma clang fp contract(off)
    rd_float16 values;
    for (int lane = 0; lane < 16; lane++) {
        float k = (float)levels[lane];
        values[lane] = __builtin_fmaf(k, 0x1.010102p-8f, k * -0x1.fdfdfep-33f);
    }
    return values;
}

#endif

#endif
