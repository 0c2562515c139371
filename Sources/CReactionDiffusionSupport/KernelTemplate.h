// One kernel's step functions. Kernels.c includes this file once per kernel, inside a
// `#pragma clang attribute` region that gives every function the kernel's target features, with
// `RD_FN(name)` naming the functions and vector types of that kernel, and `RD_VECTORS` 1 (with
// `RD_LANES` lanes at a time) or 0 (lane by lane).
//
// The formulas are written once, as macros over a type, for single `float`s (edges, narrow
// grids, the scalar kernel) and for sixteen-lane vectors alike; Kernels.c turns off the
// contraction of multiplications and additions into fused operations, so each lane is computed
// exactly as a single value would be, on every kernel.

#if RD_VECTORS
// Loads and stores of vectors at any address.
#define RD_LOAD(pointer) ((RD_FN(vf)) * (const RD_FN(vf_unaligned) *)(pointer))
#define RD_STORE(pointer, value) (*(RD_FN(vf_unaligned) *)(pointer) = (value))
#define RD_LOAD_LEVELS(pointer) ((RD_FN(vb)) * (const RD_FN(vb_unaligned) *)(pointer))
#define RD_STORE_LEVELS(pointer, value) (*(RD_FN(vb_unaligned) *)(pointer) = (value))
#endif

// MARK: - Levels

/// The level k in 0...255 of `value`: round(clamp(value, 0, 1) × 255), ties to even, NaN giving
/// 0. Adding 2²³ to a value in [0, 255] rounds it to an integer (in the default rounding mode),
/// which is then the low byte of the sum's bits.
static inline __attribute__((always_inline)) unsigned char RD_FN(level)(float value) {
    float positive = value > 0.0f ? value : 0.0f;  // NaN > 0 is false
    float clamped = positive < 1.0f ? positive : 1.0f;
    union {
        float value;
        unsigned int bits;
    } biased = {clamped * 255.0f + 8388608.0f};
    return (unsigned char)biased.bits;
}

/// The correctly rounded k/255. `1/255 ≈ h + l` with h = 0x1.01p-8 (nine significant bits, so
/// k·h is exact) and l the float nearest the rest; the sum rounds to the nearest float of k/255
/// for every k, which the tests check exhaustively.
static inline __attribute__((always_inline)) float RD_FN(value)(unsigned char level) {
    float k = (float)level;
    return k * 0x1.01p-8f + k * 0x1.010102p-24f;
}

#if RD_VECTORS && !defined(RD_HAS_NATIVE_LEVELS)

/// `RD_FN(level)` lane by lane. Selections by bit masks, so NaN lanes become 0 as they do
/// singly. Kernels.c gives the x86 kernels their own, shorter sequences.
static inline __attribute__((always_inline)) RD_FN(vb) RD_FN(levels)(RD_FN(vf) values) {
    RD_FN(vi) positive_mask = values > 0.0f;
    RD_FN(vf) positive = (RD_FN(vf))((RD_FN(vi))values & positive_mask);
    RD_FN(vi) below_one = positive < 1.0f;
    RD_FN(vf) one = 1.0f;
    RD_FN(vf) clamped = (RD_FN(vf))(((RD_FN(vi))positive & below_one) | ((RD_FN(vi))one & ~below_one));
    RD_FN(vf) biased = clamped * 255.0f + 8388608.0f;
    return __builtin_convertvector((RD_FN(vu))biased, RD_FN(vb));
}

/// The levels of `RD_BLOCK` vectors, stored one after another at `out`.
static inline __attribute__((always_inline)) void RD_FN(store_levels)(
    unsigned char *out, const RD_FN(vf) values[RD_BLOCK]) {
    for (int b = 0; b < RD_BLOCK; b++) RD_STORE_LEVELS(out + b * RD_LANES, RD_FN(levels)(values[b]));
}

#endif

#if RD_VECTORS

/// `RD_FN(value)` lane by lane. With fused multiply-adds (`RD_HAS_FMA`), `fma(k, c₁, k·c₂)`
/// with `c₁` the float nearest 1/255 and `c₂` the float nearest the rest is within 2⁻⁴⁰ of
/// k/255, which is never that close to a rounding tie, so it is correctly rounded too: two
/// operations instead of three. The tests check every level on every kernel.
static inline __attribute__((always_inline)) RD_FN(vf) RD_FN(values)(RD_FN(vb) levels) {
    RD_FN(vf) k = __builtin_convertvector(levels, RD_FN(vf));
#if RD_HAS_FMA
    return __builtin_elementwise_fma(k, (RD_FN(vf))0x1.010102p-8f, k * -0x1.fdfdfep-33f);
#else
    return k * 0x1.01p-8f + k * 0x1.010102p-24f;
#endif
}

#endif

// MARK: - Rules

// Gray-Scott: `r = u·v·v`, `u' = u + Du·lap(u) − r + F·(1 − u)`,
// `v' = v + Dv·lap(v) + r − (F + K)·v`, left to right.
#define RD_GRAY_SCOTT(p, fk, uc, ul, vc, vl, next_u, next_v)                                     \
    do {                                                                                         \
        __typeof__(uc) reaction_ = ((uc) * (vc)) * (vc);                                         \
        next_u = (((uc) + (p)->du * (ul)) - reaction_) + (p)->f * (1.0f - (uc));                \
        next_v = (((vc) + (p)->dv * (vl)) + reaction_) - (fk) * (vc);                           \
    } while (0)

// FitzHugh-Nagumo: `da = k1·a − k2·a·a − a·a·a − b + lap(a)`,
// `db = ε·(k3·a − a1·b − a0) + δ·lap(b)`, `a' = a + dt·da`, `b' = b + dt·db`.
#define RD_FITZHUGH_NAGUMO(p, ac, al, bc, bl, next_a, next_b)                                    \
    do {                                                                                         \
        __typeof__(ac) da_ =                                                                     \
            (((((p)->k1 * (ac)) - ((p)->k2 * (ac)) * (ac)) - ((ac) * (ac)) * (ac)) - (bc)) + (al); \
        __typeof__(ac) db_ = (p)->epsilon * ((((p)->k3 * (ac)) - (p)->a1 * (bc)) - (p)->a0)       \
                             + (p)->delta * (bl);                                                \
        next_a = (ac) + (p)->timestep * da_;                                                     \
        next_b = (bc) + (p)->timestep * db_;                                                     \
    } while (0)

// Belousov-Zhabotinsky on the original's 3×3 means ā, b̄, c̄:
// `a' = ā + ā·(α·γ·b̄) − c̄`, `b' = b̄ + b̄·(β·c̄ − α·ā)`, `c' = c̄ + c̄·(γ·ā − β·b̄)`.
#define RD_BELOUSOV_ZHABOTINSKY(p, ag, am, bm, cm, next_a, next_b, next_c)                       \
    do {                                                                                         \
        next_a = ((am) + (am) * ((ag) * (bm))) - (cm);                                           \
        next_b = (bm) + (bm) * ((p)->beta * (cm) - (p)->alpha * (am));                           \
        next_c = (cm) + (cm) * ((p)->gamma * (am) - (p)->beta * (bm));                           \
    } while (0)

// The Laplacian `(N + S + W + E) − 4·C`.
#define RD_LAPLACIAN(n, s, w, e, c) (((((n) + (s)) + (w)) + (e)) - 4.0f * (c))

// The original's 3×3 mean: the sum starts at the centre, then adds all nine cells.
#define RD_MEAN(nw, n, ne, w, c, e, sw, s, se)                                                   \
    (((((((((((c) + (nw)) + (n)) + (ne)) + (w)) + (c)) + (e)) + (sw)) + (s)) + (se)) / 9.0f)

// MARK: - float32

/// The value at column `x` of `row`, for x from −1 to `width`, through the boundary rule.
static inline __attribute__((always_inline)) float RD_FN(read)(const float *row, int x, int width,
                                                                int wraps) {
    if (x < 0) return wraps ? row[width - 1] : 0.0f;
    if (x >= width) return wraps ? row[0] : 0.0f;
    return row[x];
}

/// The rows north and south of row `y` of a plane (a row of zeros beyond a zero boundary).
static inline __attribute__((always_inline)) void RD_FN(neighbour_rows)(
    const float *plane, int y, int width, int height, int wraps, const float *zeros,
    const float **north, const float **south) {
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

/// Steps rows of a two-chemical model in float32: the two edge columns through the boundary
/// rule, the interior in vectors, the last of which overlaps the one before rather than leaving
/// a tail (harmless: a step reads only the source).
static inline __attribute__((always_inline)) void RD_FN(step_two_float32_of)(
    const int model, const rd_grid *grid, const float *source, float *target, int first_row,
    int end_row, const float *zeros) {
    // A local copy: the compiler cannot otherwise tell that the stores to the target (bytes,
    // which may alias anything, in unorm8) leave the parameters alone, and reloads them.
    const rd_parameters parameters = grid->parameters;
    const rd_parameters *p = &parameters;
    const float fk = p->f + p->k;
    const int width = grid->width, height = grid->height, wraps = grid->wraps;
    const size_t plane = (size_t)width * height;
    for (int y = first_row; y < end_row; y++) {
        const float *uc = source + (size_t)y * width, *vc = uc + plane;
        const float *un, *us, *vn, *vs;
        RD_FN(neighbour_rows)(source, y, width, height, wraps, zeros, &un, &us);
        RD_FN(neighbour_rows)(source + plane, y, width, height, wraps, zeros, &vn, &vs);
        float *out_u = target + (size_t)y * width, *out_v = out_u + plane;

#define RD_TWO_CELL(x, w_of, e_of)                                                              \
    do {                                                                                         \
        float ul_ = RD_LAPLACIAN(un[x], us[x], w_of(uc, x), e_of(uc, x), uc[x]);                 \
        float vl_ = RD_LAPLACIAN(vn[x], vs[x], w_of(vc, x), e_of(vc, x), vc[x]);                 \
        if (model == RD_MODEL_GRAY_SCOTT) {                                                \
            RD_GRAY_SCOTT(p, fk, uc[x], ul_, vc[x], vl_, out_u[x], out_v[x]);                    \
        } else {                                                                                 \
            RD_FITZHUGH_NAGUMO(p, uc[x], ul_, vc[x], vl_, out_u[x], out_v[x]);                   \
        }                                                                                        \
    } while (0)
#define RD_EDGE_WEST(row, x) RD_FN(read)(row, (x) - 1, width, wraps)
#define RD_EDGE_EAST(row, x) RD_FN(read)(row, (x) + 1, width, wraps)
#define RD_INNER_WEST(row, x) (row)[(x) - 1]
#define RD_INNER_EAST(row, x) (row)[(x) + 1]

        RD_TWO_CELL(0, RD_EDGE_WEST, RD_EDGE_EAST);
        if (width > 1) RD_TWO_CELL(width - 1, RD_EDGE_WEST, RD_EDGE_EAST);
#if RD_VECTORS
        if (width - 2 >= RD_LANES) {
            RD_FOR_VECTORS(x, 1, width - 1, RD_LANES) {
                RD_FN(vf) u = RD_LOAD(uc + x), v = RD_LOAD(vc + x);
                RD_FN(vf) ul = RD_LAPLACIAN(RD_LOAD(un + x), RD_LOAD(us + x), RD_LOAD(uc + x - 1),
                                        RD_LOAD(uc + x + 1), u);
                RD_FN(vf) vl = RD_LAPLACIAN(RD_LOAD(vn + x), RD_LOAD(vs + x), RD_LOAD(vc + x - 1),
                                        RD_LOAD(vc + x + 1), v);
                RD_FN(vf) nu, nv;
                if (model == RD_MODEL_GRAY_SCOTT) {
                    RD_GRAY_SCOTT(p, fk, u, ul, v, vl, nu, nv);
                } else {
                    RD_FITZHUGH_NAGUMO(p, u, ul, v, vl, nu, nv);
                }
                RD_STORE(out_u + x, nu);
                RD_STORE(out_v + x, nv);
            }
            continue;
        }
#endif
        for (int x = 1; x < width - 1; x++) RD_TWO_CELL(x, RD_INNER_WEST, RD_INNER_EAST);
#undef RD_TWO_CELL
    }
}

/// Steps rows of Belousov-Zhabotinsky in float32, as `step_two_float32` does.
static void RD_FN(step_bz_float32)(const rd_grid *grid, const float *source, float *target,
                                   int first_row, int end_row, const float *zeros) {
    // A local copy: the compiler cannot otherwise tell that the stores to the target (bytes,
    // which may alias anything, in unorm8) leave the parameters alone, and reloads them.
    const rd_parameters parameters = grid->parameters;
    const rd_parameters *p = &parameters;
    const float ag = p->alpha * p->gamma;
    const int width = grid->width, height = grid->height, wraps = grid->wraps;
    const size_t plane = (size_t)width * height;
    for (int y = first_row; y < end_row; y++) {
        const float *centre[3], *north[3], *south[3];
        float *out[3];
        for (int c = 0; c < 3; c++) {
            centre[c] = source + c * plane + (size_t)y * width;
            RD_FN(neighbour_rows)(source + c * plane, y, width, height, wraps, zeros, &north[c],
                                  &south[c]);
            out[c] = target + c * plane + (size_t)y * width;
        }
#define RD_BOX_MEAN(c, x, w_of, e_of)                                                           \
    RD_MEAN(w_of(north[c], x), north[c][x], e_of(north[c], x), w_of(centre[c], x), centre[c][x], \
            e_of(centre[c], x), w_of(south[c], x), south[c][x], e_of(south[c], x))
#define RD_BZ_CELL(x, w_of, e_of)                                                               \
    do {                                                                                         \
        float am_ = RD_BOX_MEAN(0, x, w_of, e_of);                                               \
        float bm_ = RD_BOX_MEAN(1, x, w_of, e_of);                                               \
        float cm_ = RD_BOX_MEAN(2, x, w_of, e_of);                                               \
        RD_BELOUSOV_ZHABOTINSKY(p, ag, am_, bm_, cm_, out[0][x], out[1][x], out[2][x]);          \
    } while (0)

        RD_BZ_CELL(0, RD_EDGE_WEST, RD_EDGE_EAST);
        if (width > 1) RD_BZ_CELL(width - 1, RD_EDGE_WEST, RD_EDGE_EAST);
#if RD_VECTORS
        if (width - 2 >= RD_LANES) {
            RD_FOR_VECTORS(x, 1, width - 1, RD_LANES) {
                RD_FN(vf) mean[3];
                for (int c = 0; c < 3; c++) {
                    mean[c] = RD_MEAN(RD_LOAD(north[c] + x - 1), RD_LOAD(north[c] + x),
                                      RD_LOAD(north[c] + x + 1), RD_LOAD(centre[c] + x - 1),
                                      RD_LOAD(centre[c] + x), RD_LOAD(centre[c] + x + 1),
                                      RD_LOAD(south[c] + x - 1), RD_LOAD(south[c] + x),
                                      RD_LOAD(south[c] + x + 1));
                }
                RD_FN(vf) na, nb, nc;
                RD_BELOUSOV_ZHABOTINSKY(p, ag, mean[0], mean[1], mean[2], na, nb, nc);
                RD_STORE(out[0] + x, na);
                RD_STORE(out[1] + x, nb);
                RD_STORE(out[2] + x, nc);
            }
            continue;
        }
#endif
        for (int x = 1; x < width - 1; x++) RD_BZ_CELL(x, RD_INNER_WEST, RD_INNER_EAST);
#undef RD_BZ_CELL
#undef RD_BOX_MEAN
    }
#undef RD_EDGE_WEST
#undef RD_EDGE_EAST
#undef RD_INNER_WEST
#undef RD_INNER_EAST
}

// The step functions take the model as a constant, each call below compiling to a loop of its
// own: a loop for all models keeps every model's constants live and spills them to the stack.
static void RD_FN(step_float32)(const rd_grid *grid, const float *source, float *target,
                                int first_row, int end_row) {
    switch (grid->model) {
    case RD_MODEL_GRAY_SCOTT:
        RD_FN(step_two_float32_of)(RD_MODEL_GRAY_SCOTT, grid, source, target, first_row, end_row,
                                   grid->zero_row);
        break;
    case RD_MODEL_FITZHUGH_NAGUMO:
        RD_FN(step_two_float32_of)(RD_MODEL_FITZHUGH_NAGUMO, grid, source, target, first_row,
                                   end_row, grid->zero_row);
        break;
    default:
        RD_FN(step_bz_float32)(grid, source, target, first_row, end_row, grid->zero_row);
        break;
    }
}

// MARK: - unorm8

/// Expands row `y` of a plane of levels (or, beyond a zero boundary, zeros) into `row`, which
/// has room for columns −1 to `width`: the halo columns take the boundary rule's values, so the
/// stencil reads every column, edges included, with the same unconditional loads.
static inline __attribute__((always_inline)) void RD_FN(expand_row)(
    const unsigned char *levels, int y, int width, int height, int wraps, float *row) {
    if (y < 0 || y >= height) {
        if (!wraps) {
            __builtin_memset(row - 1, 0, sizeof(float) * (size_t)(width + 2));
            return;
        }
        y = (y + height) % height;
    }
    const unsigned char *source = levels + (size_t)y * width;
#if RD_VECTORS
    if (width >= RD_LANES) {
        RD_FOR_VECTORS(x, 0, width, RD_LANES) {
            RD_STORE(row + x, RD_FN(values)(RD_LOAD_LEVELS(source + x)));
        }
    } else
#endif
    {
        for (int x = 0; x < width; x++) row[x] = RD_FN(value)(source[x]);
    }
    row[-1] = wraps ? row[width - 1] : 0.0f;
    row[width] = wraps ? row[0] : 0.0f;
}

/// The distance in floats between two expanded rows: 16 floats before column 0 (the left halo
/// is the last of them), the row and the right halo, in whole 64-byte lines, so that column 0 of
/// every row starts a line.
static inline size_t RD_FN(expanded_stride)(int width) {
    return ((size_t)16 + (size_t)width + 1 + 15) / 16 * 16;
}

#if RD_VECTORS
#if RD_HAS_FMA
// The Laplacian of values k/255 with `− 4·C` fused into one operation: 4·C is exact for such C,
// so the fused result is the rounded difference, as in `RD_LAPLACIAN`. (Not in float32, where
// 4·C can overflow.)
#define RD_LEVEL_LAPLACIAN(n, s, w, e, c)                                                        \
    __builtin_elementwise_fma((RD_FN(vf))(-4.0f), (c), ((((n) + (s)) + (w)) + (e)))
#else
#define RD_LEVEL_LAPLACIAN RD_LAPLACIAN
#endif

/// The next values of the vector at column `x` of the expanded rows `n`, `m` and `s` (north,
/// centre, south) of each chemical, into `results[chemical][slot]`.
static inline __attribute__((always_inline)) void RD_FN(unorm8_vector)(
    const int model, const rd_parameters *p, float fk, float ag, const float *n[3],
    const float *m[3], const float *s[3], int x, RD_FN(vf) results[3][RD_BLOCK], int slot) {
    if (model != RD_MODEL_BELOUSOV_ZHABOTINSKY) {
        RD_FN(vf) u = RD_LOAD(m[0] + x), v = RD_LOAD(m[1] + x);
        RD_FN(vf) ul = RD_LEVEL_LAPLACIAN(RD_LOAD(n[0] + x), RD_LOAD(s[0] + x),
                                          RD_LOAD(m[0] + x - 1), RD_LOAD(m[0] + x + 1), u);
        RD_FN(vf) vl = RD_LEVEL_LAPLACIAN(RD_LOAD(n[1] + x), RD_LOAD(s[1] + x),
                                          RD_LOAD(m[1] + x - 1), RD_LOAD(m[1] + x + 1), v);
        if (model == RD_MODEL_GRAY_SCOTT) {
            RD_GRAY_SCOTT(p, fk, u, ul, v, vl, results[0][slot], results[1][slot]);
        } else {
            RD_FITZHUGH_NAGUMO(p, u, ul, v, vl, results[0][slot], results[1][slot]);
        }
    } else {
        RD_FN(vf) mean[3];
        for (int c = 0; c < 3; c++) {
            mean[c] = RD_MEAN(RD_LOAD(n[c] + x - 1), RD_LOAD(n[c] + x), RD_LOAD(n[c] + x + 1),
                              RD_LOAD(m[c] + x - 1), RD_LOAD(m[c] + x), RD_LOAD(m[c] + x + 1),
                              RD_LOAD(s[c] + x - 1), RD_LOAD(s[c] + x), RD_LOAD(s[c] + x + 1));
        }
        RD_BELOUSOV_ZHABOTINSKY(p, ag, mean[0], mean[1], mean[2], results[0][slot],
                                results[1][slot], results[2][slot]);
    }
}
#endif

/// Steps rows of levels: each thread's scratch holds three expanded rows per chemical (north,
/// centre, south), which rotate as the run moves down, so each source row is expanded once per
/// run.
static inline __attribute__((always_inline)) void RD_FN(step_unorm8_of)(
    const int model, const rd_grid *grid, const unsigned char *source, unsigned char *target,
    int first_row, int end_row, float *scratch) {
    if (first_row >= end_row) return;
    // A local copy: the compiler cannot otherwise tell that the stores to the target (bytes,
    // which may alias anything, in unorm8) leave the parameters alone, and reloads them.
    const rd_parameters parameters = grid->parameters;
    const rd_parameters *p = &parameters;
    const float fk = p->f + p->k, ag = p->alpha * p->gamma;
    const int width = grid->width, height = grid->height, wraps = grid->wraps;
    const int chemicals = model == RD_MODEL_BELOUSOV_ZHABOTINSKY ? 3 : 2;
    const size_t plane = (size_t)width * height;
    const size_t stride = RD_FN(expanded_stride)(width);
    // Row `slot` of chemical `c` starts at column 0 of its copy.
#define RD_ROW(c, slot) (scratch + ((size_t)(c) * 3 + (size_t)(slot)) * stride + 16)
    for (int c = 0; c < chemicals; c++) {
        for (int slot = 0; slot < 3; slot++) {
            RD_FN(expand_row)(source + c * plane, first_row - 1 + slot, width, height, wraps,
                              RD_ROW(c, slot));
        }
    }
    int rotation = 0;
    for (int y = first_row; y < end_row; y++) {
        if (y != first_row) {
            // The old north row's copy takes the new south row.
            for (int c = 0; c < chemicals; c++) {
                RD_FN(expand_row)(source + c * plane, y + 1, width, height, wraps,
                                  RD_ROW(c, rotation));
            }
            rotation = (rotation + 1) % 3;
        }
        const float *n[3] = {0}, *m[3] = {0}, *s[3] = {0};
        unsigned char *out[3] = {0};
        for (int c = 0; c < chemicals; c++) {
            n[c] = RD_ROW(c, rotation);
            m[c] = RD_ROW(c, (rotation + 1) % 3);
            s[c] = RD_ROW(c, (rotation + 2) % 3);
            out[c] = target + c * plane + (size_t)y * width;
        }
#if RD_VECTORS
        // In blocks of `RD_BLOCK` vectors, which the x86 kernels narrow to levels together (see
        // Kernels.c); the last block or vector overlaps the one before rather than leaving a
        // tail (harmless: a step reads only the source).
        if (width >= RD_LANES * RD_BLOCK) {
            RD_FOR_VECTORS(x, 0, width, RD_LANES * RD_BLOCK) {
                RD_FN(vf) results[3][RD_BLOCK];
                // Unrolled, so that the results stay in registers.
#pragma clang loop unroll(full)
                for (int b = 0; b < RD_BLOCK; b++) {
                    RD_FN(unorm8_vector)(model, p, fk, ag, n, m, s, x + b * RD_LANES, results, b);
                }
                for (int c = 0; c < chemicals; c++) RD_FN(store_levels)(out[c] + x, results[c]);
            }
            continue;
        }
        if (width >= RD_LANES) {
            RD_FOR_VECTORS(x, 0, width, RD_LANES) {
                RD_FN(vf) results[3][RD_BLOCK];
                RD_FN(unorm8_vector)(model, p, fk, ag, n, m, s, x, results, 0);
                for (int c = 0; c < chemicals; c++) {
                    RD_STORE_LEVELS(out[c] + x, RD_FN(levels)(results[c][0]));
                }
            }
            continue;
        }
#endif
        for (int x = 0; x < width; x++) {
            if (chemicals == 2) {
                float ul = RD_LAPLACIAN(n[0][x], s[0][x], m[0][x - 1], m[0][x + 1], m[0][x]);
                float vl = RD_LAPLACIAN(n[1][x], s[1][x], m[1][x - 1], m[1][x + 1], m[1][x]);
                float nu, nv;
                if (model == RD_MODEL_GRAY_SCOTT) {
                    RD_GRAY_SCOTT(p, fk, m[0][x], ul, m[1][x], vl, nu, nv);
                } else {
                    RD_FITZHUGH_NAGUMO(p, m[0][x], ul, m[1][x], vl, nu, nv);
                }
                out[0][x] = RD_FN(level)(nu);
                out[1][x] = RD_FN(level)(nv);
            } else {
                float mean[3];
                for (int c = 0; c < 3; c++) {
                    mean[c] = RD_MEAN(n[c][x - 1], n[c][x], n[c][x + 1], m[c][x - 1], m[c][x],
                                      m[c][x + 1], s[c][x - 1], s[c][x], s[c][x + 1]);
                }
                float na, nb, nc;
                RD_BELOUSOV_ZHABOTINSKY(p, ag, mean[0], mean[1], mean[2], na, nb, nc);
                out[0][x] = RD_FN(level)(na);
                out[1][x] = RD_FN(level)(nb);
                out[2][x] = RD_FN(level)(nc);
            }
        }
    }
#undef RD_ROW
}

static void RD_FN(step_unorm8)(const rd_grid *grid, const unsigned char *source,
                               unsigned char *target, int first_row, int end_row,
                               float *scratch) {
    switch (grid->model) {
    case RD_MODEL_GRAY_SCOTT:
        RD_FN(step_unorm8_of)(RD_MODEL_GRAY_SCOTT, grid, source, target, first_row, end_row,
                              scratch);
        break;
    case RD_MODEL_FITZHUGH_NAGUMO:
        RD_FN(step_unorm8_of)(RD_MODEL_FITZHUGH_NAGUMO, grid, source, target, first_row,
                              end_row, scratch);
        break;
    default:
        RD_FN(step_unorm8_of)(RD_MODEL_BELOUSOV_ZHABOTINSKY, grid, source, target, first_row,
                              end_row, scratch);
        break;
    }
}

// MARK: - unorm8, rule 2

#if RD_VECTORS && !defined(RD_HAS_NATIVE_FIXED)

// Rule 2's operations on eight words (sixteen level bytes) as the compiler lowers them:
// `urhadd`, `umull` + `shrn`, `sqadd`, `sshr` and `sqxtun` on AArch64. Kernels.c gives the x86
// kernels the instructions themselves.
typedef unsigned int RD_FN(qwide) __attribute__((ext_vector_type(8)));
typedef unsigned char RD_FN(qhalf) __attribute__((ext_vector_type(8)));
_Static_assert(sizeof(RD_FN(qw)) == 16, "the generic operations are written for eight words");

static inline __attribute__((always_inline)) RD_FN(qw) RD_FN(fixed_avg)(RD_FN(qw) a,
                                                                         RD_FN(qw) b) {
    RD_FN(qwide) sum = __builtin_convertvector(a, RD_FN(qwide)) +
                       __builtin_convertvector(b, RD_FN(qwide)) + 1;
    return __builtin_convertvector(sum >> 1, RD_FN(qw));
}
static inline __attribute__((always_inline)) RD_FN(qw) RD_FN(fixed_mulhu)(RD_FN(qw) a,
                                                                           RD_FN(qw) b) {
    RD_FN(qwide) product = __builtin_convertvector(a, RD_FN(qwide)) *
                           __builtin_convertvector(b, RD_FN(qwide));
    return __builtin_convertvector(product >> 16, RD_FN(qw));
}
static inline __attribute__((always_inline)) RD_FN(qw) RD_FN(fixed_adds)(RD_FN(qw) a,
                                                                          RD_FN(qw) b) {
    return (RD_FN(qw))__builtin_elementwise_add_sat((RD_FN(qs))a, (RD_FN(qs))b);
}
/// The low (`high` 0) or high half of `bytes` as words level·256.
static inline __attribute__((always_inline)) RD_FN(qw) RD_FN(fixed_words)(RD_FN(qb) bytes,
                                                                           int high) {
    RD_FN(qhalf) half = high ? __builtin_shufflevector(bytes, bytes, 8, 9, 10, 11, 12, 13, 14, 15)
                             : __builtin_shufflevector(bytes, bytes, 0, 1, 2, 3, 4, 5, 6, 7);
    return __builtin_convertvector(half, RD_FN(qw)) << 8;
}
/// `level` of each word of `low` then `high`.
static inline __attribute__((always_inline)) RD_FN(qb) RD_FN(fixed_levels)(RD_FN(qw) low,
                                                                            RD_FN(qw) high) {
    RD_FN(qs) zero = 0, top = 255;
#define RD_FIXED_LEVELS(words)                                                                  \
    __builtin_convertvector(                                                                     \
        __builtin_elementwise_min(__builtin_elementwise_max((RD_FN(qs))(words) >> 7, zero), top), \
        RD_FN(qhalf))
    RD_FN(qhalf) l = RD_FIXED_LEVELS(low), h = RD_FIXED_LEVELS(high);
#undef RD_FIXED_LEVELS
    return __builtin_shufflevector(l, h, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

#endif

/// Steps rows of Gray-Scott levels by rule 2 (see `rd_step_unorm8`): the two edge columns
/// through the boundary rule, the interior in vectors of level bytes, each split into two
/// vectors of words, the last overlapping the one before rather than leaving a tail (harmless:
/// a step reads only the source). `zeros` is a row of `width` zero levels, for a zero boundary.
static void RD_FN(step_unorm8_fixed)(const rd_grid *grid, const rd_fixed_parameters *parameters,
                                     const unsigned char *source, unsigned char *target,
                                     int first_row, int end_row, const unsigned char *zeros) {
    // Local copies, for the reason of `step_two_float32_of`.
    const rd_fixed_parameters q = *parameters;
    const int width = grid->width, height = grid->height, wraps = grid->wraps;
    const size_t plane = (size_t)width * height;
#if RD_VECTORS
    typedef struct {
        RD_FN(qw) du_n, du_c, dv_n, dv_c, f, fc, fk, c129, c65;
    } RD_FN(fixed_vectors);
    const RD_FN(fixed_vectors) qv = {(RD_FN(qw))q.du_n, (RD_FN(qw))q.du_c, (RD_FN(qw))q.dv_n,
                                     (RD_FN(qw))q.dv_c, (RD_FN(qw))q.f,    (RD_FN(qw))q.fc,
                                     (RD_FN(qw))q.fk,   (RD_FN(qw))q.c129, (RD_FN(qw))q.c65};
    const int bytes = (int)sizeof(RD_FN(qb));
#endif
    for (int y = first_row; y < end_row; y++) {
        const unsigned char *uc = source + (size_t)y * width, *vc = uc + plane;
        const unsigned char *un, *us, *vn, *vs;
        rd_fixed_neighbour_rows(source, y, width, height, wraps, zeros, &un, &us);
        rd_fixed_neighbour_rows(source + plane, y, width, height, wraps, zeros, &vn, &vs);
        unsigned char *out_u = target + (size_t)y * width, *out_v = out_u + plane;
        rd_fixed_cell(&q, un, uc, us, vn, vc, vs, out_u, out_v, 0, width, wraps);
        if (width > 1) {
            rd_fixed_cell(&q, un, uc, us, vn, vc, vs, out_u, out_v, width - 1, width, wraps);
        }
#if RD_VECTORS
        if (width - 2 >= bytes) {
#define RD_LOAD_FIXED(pointer) ((RD_FN(qb)) * (const RD_FN(qb_unaligned) *)(pointer))
            RD_FOR_VECTORS(x, 1, width - 1, bytes) {
                RD_FN(qb) bu = RD_LOAD_FIXED(uc + x), bun = RD_LOAD_FIXED(un + x),
                          bus = RD_LOAD_FIXED(us + x), buw = RD_LOAD_FIXED(uc + x - 1),
                          bue = RD_LOAD_FIXED(uc + x + 1);
                RD_FN(qb) bv = RD_LOAD_FIXED(vc + x), bvn = RD_LOAD_FIXED(vn + x),
                          bvs = RD_LOAD_FIXED(vs + x), bvw = RD_LOAD_FIXED(vc + x - 1),
                          bve = RD_LOAD_FIXED(vc + x + 1);
                RD_FN(qw) xu[2], xv[2];
#pragma clang loop unroll(full)
                for (int h = 0; h < 2; h++) {
#define RD_WORDS(b) RD_FN(fixed_words)(b, h)
                    RD_FIXED_GRAY_SCOTT(RD_FN(qw), qv, RD_FN(fixed_avg), RD_FN(fixed_mulhu),
                                        RD_FN(fixed_adds), RD_WORDS(bu), RD_WORDS(bun),
                                        RD_WORDS(bus), RD_WORDS(buw), RD_WORDS(bue),
                                        RD_WORDS(bv), RD_WORDS(bvn), RD_WORDS(bvs),
                                        RD_WORDS(bvw), RD_WORDS(bve), xu[h], xv[h]);
#undef RD_WORDS
                }
                *(RD_FN(qb_unaligned) *)(out_u + x) = RD_FN(fixed_levels)(xu[0], xu[1]);
                *(RD_FN(qb_unaligned) *)(out_v + x) = RD_FN(fixed_levels)(xv[0], xv[1]);
            }
#undef RD_LOAD_FIXED
            continue;
        }
#endif
        for (int x = 1; x < width - 1; x++) {
            rd_fixed_cell(&q, un, uc, us, vn, vc, vs, out_u, out_v, x, width, wraps);
        }
    }
}

static void RD_FN(quantize)(float *values, size_t count) {
    size_t i = 0;
#if RD_VECTORS
    for (; i + RD_LANES <= count; i += RD_LANES) {
        RD_STORE(values + i, RD_FN(values)(RD_FN(levels)(RD_LOAD(values + i))));
    }
#endif
    for (; i < count; i++) values[i] = RD_FN(value)(RD_FN(level)(values[i]));
}

#if RD_VECTORS
#undef RD_LOAD
#undef RD_STORE
#undef RD_LOAD_LEVELS
#undef RD_STORE_LEVELS
#endif
#if RD_VECTORS
#undef RD_LEVEL_LAPLACIAN
#endif
