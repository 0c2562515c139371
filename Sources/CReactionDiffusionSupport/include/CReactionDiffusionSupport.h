#ifndef C_REACTION_DIFFUSION_SUPPORT_H
#define C_REACTION_DIFFUSION_SUPPORT_H

#include "rd_levels.h"

/// Turns on flush-to-zero and denormals-are-zero for the calling thread and returns the previous
/// floating-point control state, to be handed back to `rd_restore_float_control`.
///
/// Tiny values diffusing into a zero background become denormal floats, which x86 processes
/// many times slower than normal ones; the solver flushes them while it steps.
unsigned int rd_flush_denormals(void);

/// Restores the calling thread's floating-point control state saved by `rd_flush_denormals`.
void rd_restore_float_control(unsigned int saved);

#endif
