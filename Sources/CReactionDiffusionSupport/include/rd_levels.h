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
/// With AVX-512 (the solver is built with `-target-cpu native`): `vmaxps` against 0 (which
/// returns its second operand, 0, for NaN, and +0 for ±0), ×255, `vcvtps2dq` (rounding in the
/// current mode, giving 0x80000000 beyond the `Int32` range and for +∞) and `vpmovusdb`, which
/// narrows with unsigned saturation: everything from 255.5 up, 0x80000000 included, becomes 255.
/// Four vector operations; Swift cannot ask for the saturating instructions, and what LLVM makes
/// of the same rule in Swift takes six to eight.
static inline __attribute__((always_inline)) rd_level16 rd_levels(rd_float16 values) {
    __m512 positive = _mm512_max_ps((__m512)values, _mm512_setzero_ps());
    __m512i rounded = _mm512_cvtps_epi32(_mm512_mul_ps(positive, _mm512_set1_ps(255.0f)));
    return (rd_level16)_mm512_cvtusepi32_epi8(rounded);
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

#endif
