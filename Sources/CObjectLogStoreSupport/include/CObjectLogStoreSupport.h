#ifndef C_OBJECT_LOG_STORE_SUPPORT_H
#define C_OBJECT_LOG_STORE_SUPPORT_H

// What the store needs from C that Swift does not offer.

#include <stddef.h>
#include <stdint.h>

/// Asks the processor to bring the cache line at `address` in ahead of a write to it.
///
/// A large commit updates the key directory at scattered keys, and each update would wait for
/// its slot's cache line in turn. Prefetching the slots a few updates ahead overlaps the waits.
/// A hint only: it never faults, whatever the address.
static inline void objectlog_prefetch_for_write(const void *address) {
    __builtin_prefetch(address, 1, 3);
}

/// Asks the processor to bring the cache line at `address` in ahead of a read of it.
static inline void objectlog_prefetch_for_read(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

#if defined(__x86_64__)
/// Whether this processor has what ``objectlog_crc32_folding`` needs (PCLMULQDQ, SSSE3 and
/// SSE4.1).
int objectlog_crc32_folding_is_available(void);

/// The CRC-32 of `count` bytes, continuing from `crc` (zlib's, `0` to start), by carry-less
/// multiplication. `count` must be at least 16, and the processor must have what
/// ``objectlog_crc32_folding_is_available`` checks for.
uint32_t objectlog_crc32_folding(uint32_t crc, const void *bytes, size_t count);
#endif

#endif
