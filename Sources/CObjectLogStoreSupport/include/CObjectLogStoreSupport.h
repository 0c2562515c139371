#ifndef C_OBJECT_LOG_STORE_SUPPORT_H
#define C_OBJECT_LOG_STORE_SUPPORT_H

// What the store needs from C that Swift does not offer.

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

#endif
