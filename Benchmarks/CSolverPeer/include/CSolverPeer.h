#ifndef C_SOLVER_PEER_H
#define C_SOLVER_PEER_H

/// The instruction sets the peer is compiled for: the architecture's baseline (SSE2 on x86-64),
/// and on x86-64 AVX2 with FMA and AVX-512. The caller runs only a level its processor has.
enum {
    CSP_LEVEL_BASELINE = 0,
    CSP_LEVEL_AVX2 = 1,
    CSP_LEVEL_AVX512 = 2,
};

/// The benchmark's peer: a straightforward C implementation of Gray-Scott in float32 with zero
/// boundary, the same formula as the solver's. Steps `steps` times on `thread_count` POSIX
/// threads (1 = on the caller) with the loop compiled for `level`, swapping the buffers after
/// each step, with denormals flushed on every thread. The final state is in (u, v) if `steps`
/// is even, else in (next_u, next_v).
void csp_gray_scott_run(int level, float *u, float *v, float *next_u, float *next_v, int width,
                        int height, int steps, int thread_count, float f, float k, float du,
                        float dv);

#endif
