#ifndef C_SOLVER_PEER_H
#define C_SOLVER_PEER_H

/// The benchmark's peer: a straightforward C implementation of one Gray-Scott step in float32
/// with zero boundary, the same formula as the Swift solver. Steps rows [first_row, end_row) of
/// `next_u`/`next_v` from `u`/`v`, each `height` rows of `width` floats.
void csp_gray_scott_step_rows(const float *u, const float *v, float *next_u, float *next_v,
                              int width, int height, int first_row, int end_row, float f,
                              float k, float du, float dv);

/// Steps `steps` times on `thread_count` POSIX threads (1 = on the caller), swapping the buffers
/// after each step, with denormals flushed on every thread. The final state is in (u, v) if
/// `steps` is even, else in (next_u, next_v).
void csp_gray_scott_run(float *u, float *v, float *next_u, float *next_v, int width, int height,
                        int steps, int thread_count, float f, float k, float du, float dv);

#endif
