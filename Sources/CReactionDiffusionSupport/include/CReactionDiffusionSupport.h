#ifndef C_REACTION_DIFFUSION_SUPPORT_H
#define C_REACTION_DIFFUSION_SUPPORT_H

#include <stddef.h>

/// Turns on flush-to-zero and denormals-are-zero for the calling thread and returns the previous
/// floating-point control state, to be handed back to `rd_restore_float_control`.
///
/// Tiny values diffusing into a zero background become denormal floats, which x86 processes
/// many times slower than normal ones; the solver flushes them while it steps.
unsigned int rd_flush_denormals(void);

/// Restores the calling thread's floating-point control state saved by `rd_flush_denormals`.
void rd_restore_float_control(unsigned int saved);

// MARK: - Kernels

/// The kernels this file knows. Each is compiled into every build for its architecture (with
/// `__attribute__((target(...)))` on x86-64), and `rd_kernel_is_available` tells at run time
/// whether the processor and the operating system can run it, so one binary runs at full speed
/// on every CPU of its architecture.
enum {
    /// Lane by lane, no vectors: the portable fallback, and the reference for the others.
    RD_KERNEL_SCALAR = 0,
    /// x86-64 baseline: 128-bit SSE2, on every x86-64 processor.
    RD_KERNEL_SSE2 = 1,
    /// x86-64 with AVX2 and FMA (256-bit).
    RD_KERNEL_AVX2 = 2,
    /// x86-64 with AVX-512 F, BW and VL (512-bit).
    RD_KERNEL_AVX512 = 3,
    /// AArch64's Advanced SIMD (128-bit), part of every AArch64 processor.
    RD_KERNEL_NEON = 4,
    /// Vectors as the compiler lowers them for another architecture.
    RD_KERNEL_VECTOR = 5,
    /// The number of kernel identifiers.
    RD_KERNEL_COUNT = 6,
};

/// Whether this processor and operating system can run `kernel` (0 for an unknown identifier).
int rd_kernel_is_available(int kernel);

/// The fastest kernel available here.
int rd_kernel_best(void);

/// The kernel's short name (`"avx2"`, …), or `"unknown"`.
const char *rd_kernel_name(int kernel);

/// The models, in the order of their chemicals' planes.
enum {
    RD_MODEL_GRAY_SCOTT = 0,
    RD_MODEL_FITZHUGH_NAGUMO = 1,
    RD_MODEL_BELOUSOV_ZHABOTINSKY = 2,
};

/// Every model's parameters; each model reads its own.
typedef struct {
    float a0, a1, epsilon, delta, k1, k2, k3;
    float f, k, du, dv;
    float alpha, beta, gamma;
    float timestep;
} rd_parameters;

/// What a step needs besides the planes: the kernel, the rule and the grid.
///
/// The planes of a state are stored one after another, chemical by chemical, each `width` ×
/// `height` values row by row.
typedef struct {
    int kernel;
    int model;
    rd_parameters parameters;
    int width;
    int height;
    /// Non-zero for a periodic boundary; zero reads cells outside the grid as 0.
    int wraps;
    /// `width` zeros: the rows beyond a zero boundary, for `rd_step_float32`.
    const float *zero_row;
} rd_grid;

/// Computes rows `first_row..<end_row` of every chemical of `target` from `source`
/// (`Float` values), by the rule evaluated left to right without fused operations, so every
/// kernel gives the same bits.
void rd_step_float32(const rd_grid *grid, const float *source, float *target, int first_row,
                     int end_row);

/// The number of floats of the scratch space `rd_step_unorm8` needs for a grid of
/// `chemical_count` planes `width` values wide; the space must be 64-byte aligned.
size_t rd_unorm8_scratch_count(int chemical_count, int width);

/// Computes rows `first_row..<end_row` of every chemical of `target` from `source` (level
/// bytes k for the values k/255): each value is expanded to the correctly rounded k/255, stepped
/// as in `rd_step_float32`, then clamped to [0, 1], scaled by 255 and rounded half to even back
/// to a level (NaN gives 0).
void rd_step_unorm8(const rd_grid *grid, const unsigned char *source, unsigned char *target,
                    int first_row, int end_row, float *scratch);

/// Replaces each of `count` values by the correctly rounded k/255 for its level k, with the
/// conversions of `kernel`'s unorm8 step.
void rd_quantize(int kernel, float *values, size_t count);

#endif
