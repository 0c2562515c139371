// CRC-32 (zlib's: reflected, polynomial 0x04C11DB7) by carry-less multiplication, for x86-64
// processors with PCLMULQDQ.
//
// The table-driven CRC in CRC32.swift waits on memory: its lookups are loads from a 16 KiB
// table that a scan streaming a log through the cache keeps evicting. Here the message is
// folded 16 bytes at a time by multiplying by constants (x^n mod P), which needs no tables at
// all, then reduced to 32 bits (Barrett): a few multiplies in registers per 16 bytes, where
// the tables take sixteen loads. The gain grows with the input's length; `objectlog-bench
// store --child crc folding`, against `slicing`, times the two (Benchmarks/README.md shows
// how to run a child). Swift has no carry-less multiply, hence C.
//
// Layout: a 16-byte load holds 128 message bits, the first byte's low bit the highest power.
// In each 64-bit lane the coefficient of x^d sits at bit 63 - d ("reflected"); every constant
// below is written that way. tools/crc32-constants.py derives them from the polynomial.

#include "CObjectLogStoreSupport.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

int objectlog_crc32_folding_is_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    // PCLMULQDQ (bit 1), SSSE3's byte shuffle (bit 9), SSE4.1's 64-bit extract (bit 19). The
    // XMM state itself is always saved on x86-64.
    return ((ecx >> 1) & 1) && ((ecx >> 9) & 1) && ((ecx >> 19) & 1);
}

#define FOLDING __attribute__((target("pclmul,ssse3,sse4.1")))

// As PSHUFB indices, a 16-byte window over `shift_masks + t` moves a register's first t bytes
// to its end and zeroes the rest; over `shift_masks + 16 + t`, it moves the bytes t places
// towards the start, zeroing the last t. (An index with its top bit set gives a zero byte.)
static const uint8_t shift_masks[48] = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
};

// A 16-byte window over `keep_masks + t` keeps the last t bytes of a register.
static const uint8_t keep_masks[32] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
};

// Moves `x` forward over the distance `k` was made for: its low lane times k's low constant
// plus its high lane times k's high constant, which the caller adds to the bytes that far on.
FOLDING static inline __m128i fold(__m128i x, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

static inline __m128i load(const uint8_t *p) { return _mm_loadu_si128((const __m128i *)p); }

FOLDING uint32_t objectlog_crc32_folding(uint32_t crc, const void *bytes, size_t count) {
    const uint8_t *p = bytes;
    const uint8_t *end = p + count;
    // Over 16 bytes: x^(128+63) and x^127 mod P; over 64 bytes: x^(512+63) and x^511 mod P.
    const __m128i by16 = _mm_set_epi64x(0x9BA54C6F00000000ULL, 0x65673B4600000000ULL);
    const __m128i by64 = _mm_set_epi64x(0xCAD38E8F00000000ULL, 0x653D982200000000ULL);

    // The running CRC (pre-inverted, as zlib's is) meets the first four bytes.
    __m128i x = _mm_xor_si128(load(p), _mm_cvtsi32_si128((int)~crc));
    p += 16;
    // Long inputs in four independent chains, so the multiplier's latency overlaps; they
    // join at the end.
    if (end - p >= 112) {
        __m128i x1 = load(p), x2 = load(p + 16), x3 = load(p + 32);
        p += 48;
        while (end - p >= 64) {
            x = _mm_xor_si128(fold(x, by64), load(p));
            x1 = _mm_xor_si128(fold(x1, by64), load(p + 16));
            x2 = _mm_xor_si128(fold(x2, by64), load(p + 32));
            x3 = _mm_xor_si128(fold(x3, by64), load(p + 48));
            p += 64;
        }
        x = _mm_xor_si128(fold(x, by16), x1);
        x = _mm_xor_si128(fold(x, by16), x2);
        x = _mm_xor_si128(fold(x, by16), x3);
    }
    while (end - p >= 16) {
        x = _mm_xor_si128(fold(x, by16), load(p));
        p += 16;
    }
    // The last 1 to 15 bytes: the accumulator moves down by t bytes, the t bytes that leave
    // it are folded over 16, and the rest is joined by the tail, read as the last 16 bytes of
    // the input (count >= 16, so that stays inside it) with what was already folded masked off.
    size_t t = (size_t)(end - p);
    if (t) {
        __m128i leaving = _mm_shuffle_epi8(x, load(shift_masks + t));
        __m128i staying = _mm_shuffle_epi8(x, load(shift_masks + 16 + t));
        __m128i tail = _mm_and_si128(load(end - 16), load(keep_masks + t));
        x = _mm_xor_si128(fold(leaving, by16), _mm_or_si128(staying, tail));
    }

    // 128 bits to 64: the low lane times x^95 mod P, the high lane moved down by 32 bits
    // (the CRC is the message times x^32 mod P).
    const __m128i by96 = _mm_set_epi64x(0, 0xCCAA009E00000000ULL);
    __m128i v = _mm_xor_si128(_mm_clmulepi64_si128(x, by96, 0x00),
                              _mm_slli_si128(_mm_srli_si128(x, 8), 4));
    // 96 bits to 64: the low lane times x^63 mod P.
    const __m128i by64bits = _mm_set_epi64x(0, 0xB8BC676500000000ULL);
    __m128i c = _mm_clmulepi64_si128(v, by64bits, 0x00);
    uint64_t w = (uint64_t)_mm_extract_epi64(c, 1) ^ (uint64_t)_mm_extract_epi64(v, 1);
    // 64 bits to 32 (Barrett): the quotient by P from mu = x^64 / P, then the remainder.
    const __m128i mu = _mm_set_epi64x(0, 0xFB808B2080000000ULL);
    const __m128i polynomial = _mm_set_epi64x(0, 0xEDB8832080000000ULL);
    __m128i q = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)(w & 0xFFFFFFFFULL)), mu, 0x00);
    uint64_t quotient = ((uint64_t)_mm_cvtsi128_si64(q) & 0x7FFFFFFF80000000ULL) << 1;
    __m128i r = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)quotient), polynomial, 0x00);
    uint32_t remainder = (uint32_t)(((uint64_t)_mm_extract_epi64(r, 1) >> 31) ^ (w >> 32));
    return ~remainder;
}

#endif
