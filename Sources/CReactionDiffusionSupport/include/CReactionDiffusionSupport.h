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
    /// The rule of `rd_step_unorm8`: 2 for the fixed-point rule where
    /// `rd_unorm8_fixed_rule_applies` says it is defined, any other value (0 included, so that
    /// zero-initialised grids keep their results) for the float rule, 1.
    int unorm8_rule;
} rd_grid;

/// Computes rows `first_row..<end_row` of every chemical of `target` from `source`
/// (`Float` values), by the rule evaluated left to right without fused operations, so every
/// kernel gives the same bits.
void rd_step_float32(const rd_grid *grid, const float *source, float *target, int first_row,
                     int end_row);

/// The number of floats of the scratch space `rd_step_unorm8` needs for a grid of
/// `chemical_count` planes `width` values wide; the space must be 64-byte aligned.
size_t rd_unorm8_scratch_count(int chemical_count, int width);

/// Whether the fixed-point rule of `rd_step_unorm8` (rule 2) is defined for `model` with
/// `parameters`: Gray-Scott only, with du and dv in [0, 0.25], f in [0, 1], k in [0, FLT_MAX]
/// and the float32 sum f + k at most 1, every comparison as IEEE 754 decides it (−0 counts as 0;
/// NaN and ±∞ fail). In that range no 16-bit operation of the rule wraps, and the one saturation
/// it can reach is positive, above the largest level. The answer does not depend on the
/// thread's floating-point control (`rd_flush_denormals`): the comparisons are made on the bits.
int rd_unorm8_fixed_rule_applies(int model, const rd_parameters *parameters);

/// Computes rows `first_row..<end_row` of every chemical of `target` from `source` (level
/// bytes k for the values k/255), by one of two rules.
///
/// Rule 1, the float rule: each value is expanded to the correctly rounded k/255, stepped as in
/// `rd_step_float32`, then clamped to [0, 1], scaled by 255 and rounded half to even back to a
/// level (NaN gives 0).
///
/// Rule 2, the fixed-point rule, when `grid->unorm8_rule` is 2 and
/// `rd_unorm8_fixed_rule_applies(grid->model, &grid->parameters)`: Gray-Scott in unsigned
/// 16-bit words, the same bits on every kernel. Its operations, on words a, b:
/// `mulhu(a, b)` = ⌊a·b / 2¹⁶⌋; `avg(a, b)` = ⌊(a + b + 1) / 2⌋; `+` and `−` modulo 2¹⁶;
/// `adds(a, b)` = a + b as signed 16-bit words (a ≥ 2¹⁵ meaning a − 2¹⁶), clamped to
/// [−2¹⁵, 2¹⁵ − 1]; `level(x)` = x as a signed word, shifted right by 7 (rounding toward −∞) and
/// clamped to [0, 255].
///
/// The parameters, with rne(x) rounding the exact real x half to even:
/// `Dn_u = rne(du·2¹⁷)`, `Dc_u = 2¹⁵ − Dn_u`, `Dn_v = rne(dv·2¹⁷)`, `Dc_v = 2¹⁵ − Dn_v`,
/// `Fq = rne(f·2¹⁵)`, `FC = ⌊Fq·255 / 256⌋ + 64`, `FKq = rne(s·2¹⁵)` with s the float32 sum
/// f + k.
///
/// For the cell with levels U, V and neighbours N, S, W, E of each chemical (through the
/// boundary: the cell across a periodic one, 0 beyond a zero one), with X8 = 256·X:
///
///     Su = avg(avg(N8_u, S8_u), avg(W8_u, E8_u))       (= 64·(N + S + W + E) exactly)
///     Sv = avg(avg(N8_v, S8_v), avg(W8_v, E8_v))
///     Du = mulhu(Su, Dn_u) + mulhu(U8, Dc_u)
///     Dv = mulhu(Sv, Dn_v) + mulhu(V8, Dc_v)
///     R  = mulhu(mulhu(V8, V8), mulhu(U8, 33024))
///     U' = level(adds(Du − R, FC − mulhu(U8, Fq)))
///     V' = level(adds((Dv − mulhu(V8, FKq)) + 65, R))
///
/// Values are held as 128 × 255 × the value (Q7 levels): Du ≈ 128·(U + du·lap U), R ≈
/// 128·U·V²/255² (scaled by 129·255²/2²³ ≈ 0.999954), 64 and 65 are the rounding offsets.
/// Otherwise the float rule, 1.
void rd_step_unorm8(const rd_grid *grid, const unsigned char *source, unsigned char *target,
                    int first_row, int end_row, float *scratch);

/// Replaces each of `count` values by the correctly rounded k/255 for its level k, with the
/// conversions of `kernel`'s unorm8 step.
void rd_quantize(int kernel, float *values, size_t count);

#endif
