#include "CReactionDiffusionSupport.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>

// MXCSR bit 15 is flush-to-zero (FTZ) and bit 6 is denormals-are-zero (DAZ).
// See: Intel 64 and IA-32 Architectures Software Developer's Manual, vol. 1, 10.2.3.
#define RD_FTZ_DAZ 0x8040u

unsigned int rd_flush_denormals(void) {
    unsigned int saved = _mm_getcsr();
    _mm_setcsr(saved | RD_FTZ_DAZ);
    return saved;
}

void rd_restore_float_control(unsigned int saved) {
    _mm_setcsr(saved);
}

#elif defined(__aarch64__)

// FPCR bit 24 is flush-to-zero on AArch64; it covers both inputs and outputs.
unsigned int rd_flush_denormals(void) {
    unsigned long saved;
    __asm__ volatile("mrs %0, fpcr" : "=r"(saved));
    __asm__ volatile("msr fpcr, %0" : : "r"(saved | (1ul << 24)));
    return (unsigned int)saved;
}

void rd_restore_float_control(unsigned int saved) {
    unsigned long value = saved;
    __asm__ volatile("msr fpcr, %0" : : "r"(value));
}

#else

unsigned int rd_flush_denormals(void) { return 0; }
void rd_restore_float_control(unsigned int saved) { (void)saved; }

#endif
