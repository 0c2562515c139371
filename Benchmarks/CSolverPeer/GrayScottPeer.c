// The benchmark's C peer: the plain loop anyone would write, compiled with -O3 -march=native.
#include "CSolverPeer.h"

#include <pthread.h>
#include <stdlib.h>
#include <xmmintrin.h>

static inline void csp_cell(const float *un, const float *uc, const float *us, const float *vn,
                            const float *vc, const float *vs, float *nu, float *nv, int x,
                            int width, float f, float fk, float du, float dv) {
    float uw = x > 0 ? uc[x - 1] : 0.0f, ue = x < width - 1 ? uc[x + 1] : 0.0f;
    float vw = x > 0 ? vc[x - 1] : 0.0f, ve = x < width - 1 ? vc[x + 1] : 0.0f;
    float u = uc[x], v = vc[x];
    float r = u * v * v;
    nu[x] = u + du * (un[x] + us[x] + uw + ue - 4.0f * u) - r + f * (1.0f - u);
    nv[x] = v + dv * (vn[x] + vs[x] + vw + ve - 4.0f * v) + r - fk * v;
}

void csp_gray_scott_step_rows(const float *u, const float *v, float *next_u, float *next_v,
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
        csp_cell(un, uc, us, vn, vc, vs, nu, nv, 0, width, f, fk, du, dv);
        // Interior: no bounds checks, so the compiler vectorises it.
        for (int x = 1; x < width - 1; x++) {
            float uu = uc[x], vv = vc[x];
            float r = uu * vv * vv;
            nu[x] = uu + du * (un[x] + us[x] + uc[x - 1] + uc[x + 1] - 4.0f * uu) - r
                    + f * (1.0f - uu);
            nv[x] = vv + dv * (vn[x] + vs[x] + vc[x - 1] + vc[x + 1] - 4.0f * vv) + r - fk * vv;
        }
        if (width > 1) csp_cell(un, uc, us, vn, vc, vs, nu, nv, width - 1, width, f, fk, du, dv);
    }
    free(zeros);
}

typedef struct {
    float *buffers[4];
    int width, height, steps, thread_count, index;
    float f, k, du, dv;
    pthread_barrier_t *barrier;
} csp_job;

static void *csp_worker(void *argument) {
    csp_job *job = argument;
    _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ | DAZ
    int first = job->index * job->height / job->thread_count;
    int end = (job->index + 1) * job->height / job->thread_count;
    float *u = job->buffers[0], *v = job->buffers[1], *nu = job->buffers[2], *nv = job->buffers[3];
    for (int s = 0; s < job->steps; s++) {
        csp_gray_scott_step_rows(u, v, nu, nv, job->width, job->height, first, end, job->f,
                                 job->k, job->du, job->dv);
        if (job->thread_count > 1) pthread_barrier_wait(job->barrier);
        float *t = u; u = nu; nu = t;
        t = v; v = nv; nv = t;
    }
    return NULL;
}

void csp_gray_scott_run(float *u, float *v, float *next_u, float *next_v, int width, int height,
                        int steps, int thread_count, float f, float k, float du, float dv) {
    if (thread_count < 1) thread_count = 1;
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)thread_count);
    csp_job *jobs = calloc((size_t)thread_count, sizeof(csp_job));
    pthread_t *threads = calloc((size_t)thread_count, sizeof(pthread_t));
    for (int t = 0; t < thread_count; t++) {
        jobs[t] = (csp_job){{u, v, next_u, next_v}, width, height, steps, thread_count, t,
                            f, k, du, dv, &barrier};
    }
    unsigned int saved = _mm_getcsr();
    for (int t = 1; t < thread_count; t++) pthread_create(&threads[t], NULL, csp_worker, &jobs[t]);
    csp_worker(&jobs[0]);
    for (int t = 1; t < thread_count; t++) pthread_join(threads[t], NULL);
    _mm_setcsr(saved);
    pthread_barrier_destroy(&barrier);
    free(jobs);
    free(threads);
}
