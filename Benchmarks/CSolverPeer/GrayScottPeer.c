// The benchmark's C peer: the plain loop anyone would write, compiled with -O3 for each
// instruction set the solver has a kernel for (as -march=native would for each processor), so
// each solver kernel is measured against the peer built for the same instructions.
#include "CSolverPeer.h"

#include <pthread.h>
#include <stdlib.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#define CSP_FN(name) csp_baseline_##name
#include "GrayScottPeerStep.h"
#undef CSP_FN

#if defined(__x86_64__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define CSP_FN(name) csp_avx2_##name
#include "GrayScottPeerStep.h"
#undef CSP_FN
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma"))), \
                             apply_to = function)
#define CSP_FN(name) csp_avx512_##name
#include "GrayScottPeerStep.h"
#undef CSP_FN
#pragma clang attribute pop
#endif

typedef void (*csp_step_function)(const float *, const float *, float *, float *, int, int, int,
                                  int, float, float, float, float);

static csp_step_function csp_step_for(int level) {
#if defined(__x86_64__)
    if (level == CSP_LEVEL_AVX512) return csp_avx512_step_rows;
    if (level == CSP_LEVEL_AVX2) return csp_avx2_step_rows;
#endif
    (void)level;
    return csp_baseline_step_rows;
}

typedef struct {
    csp_step_function step;
    float *buffers[4];
    int width, height, steps, thread_count, index;
    float f, k, du, dv;
    pthread_barrier_t *barrier;
} csp_job;

static void *csp_worker(void *argument) {
    csp_job *job = argument;
#if defined(__x86_64__)
    _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ | DAZ
#endif
    int first = job->index * job->height / job->thread_count;
    int end = (job->index + 1) * job->height / job->thread_count;
    float *u = job->buffers[0], *v = job->buffers[1], *nu = job->buffers[2], *nv = job->buffers[3];
    for (int s = 0; s < job->steps; s++) {
        job->step(u, v, nu, nv, job->width, job->height, first, end, job->f,
                                 job->k, job->du, job->dv);
        if (job->thread_count > 1) pthread_barrier_wait(job->barrier);
        float *t = u; u = nu; nu = t;
        t = v; v = nv; nv = t;
    }
    return NULL;
}

void csp_gray_scott_run(int level, float *u, float *v, float *next_u, float *next_v, int width, int height,
                        int steps, int thread_count, float f, float k, float du, float dv) {
    if (thread_count < 1) thread_count = 1;
    pthread_barrier_t barrier;
    pthread_barrier_init(&barrier, NULL, (unsigned)thread_count);
    csp_job *jobs = calloc((size_t)thread_count, sizeof(csp_job));
    pthread_t *threads = calloc((size_t)thread_count, sizeof(pthread_t));
    for (int t = 0; t < thread_count; t++) {
        jobs[t] = (csp_job){csp_step_for(level), {u, v, next_u, next_v}, width, height, steps, thread_count, t,
                            f, k, du, dv, &barrier};
    }
#if defined(__x86_64__)
    unsigned int saved = _mm_getcsr();
#endif
    for (int t = 1; t < thread_count; t++) pthread_create(&threads[t], NULL, csp_worker, &jobs[t]);
    csp_worker(&jobs[0]);
    for (int t = 1; t < thread_count; t++) pthread_join(threads[t], NULL);
#if defined(__x86_64__)
    _mm_setcsr(saved);
#endif
    pthread_barrier_destroy(&barrier);
    free(jobs);
    free(threads);
}
