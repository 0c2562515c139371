// The peer's step, included by GrayScottPeer.c once per instruction set with `CSP_FN(name)`
// naming its functions: the plain loop anyone would write, which the compiler vectorises for the
// target of each inclusion.

static inline void CSP_FN(cell)(const float *un, const float *uc, const float *us, const float *vn,
                            const float *vc, const float *vs, float *nu, float *nv, int x,
                            int width, float f, float fk, float du, float dv) {
    float uw = x > 0 ? uc[x - 1] : 0.0f, ue = x < width - 1 ? uc[x + 1] : 0.0f;
    float vw = x > 0 ? vc[x - 1] : 0.0f, ve = x < width - 1 ? vc[x + 1] : 0.0f;
    float u = uc[x], v = vc[x];
    float r = u * v * v;
    nu[x] = u + du * (un[x] + us[x] + uw + ue - 4.0f * u) - r + f * (1.0f - u);
    nv[x] = v + dv * (vn[x] + vs[x] + vw + ve - 4.0f * v) + r - fk * v;
}

static void CSP_FN(step_rows)(const float *u, const float *v, float *next_u, float *next_v,
                              int width, int height, int first_row, int end_row, float f,
                              float k, float du, float dv) {
    // Rows beyond the edges read as zeros.
    float *zeros = calloc((size_t)width, sizeof(float));
    float fk = f + k;
    for (int y = first_row; y < end_row; y++) {
        const float *uc = u + (size_t)y * width, *vc = v + (size_t)y * width;
        const float *un = y > 0 ? uc - width : zeros, *vn = y > 0 ? vc - width : zeros;
        const float *us = y < height - 1 ? uc + width : zeros;
        const float *vs = y < height - 1 ? vc + width : zeros;
        float *restrict nu = next_u + (size_t)y * width;
        float *restrict nv = next_v + (size_t)y * width;
        CSP_FN(cell)(un, uc, us, vn, vc, vs, nu, nv, 0, width, f, fk, du, dv);
        // Interior: no bounds checks, so the compiler vectorises it.
        for (int x = 1; x < width - 1; x++) {
            float uu = uc[x], vv = vc[x];
            float r = uu * vv * vv;
            nu[x] = uu + du * (un[x] + us[x] + uc[x - 1] + uc[x + 1] - 4.0f * uu) - r
                    + f * (1.0f - uu);
            nv[x] = vv + dv * (vn[x] + vs[x] + vc[x - 1] + vc[x + 1] - 4.0f * vv) + r - fk * vv;
        }
        if (width > 1) CSP_FN(cell)(un, uc, us, vn, vc, vs, nu, nv, width - 1, width, f, fk, du, dv);
    }
    free(zeros);
}
