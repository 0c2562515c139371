#if canImport(Glibc)
import Glibc
#endif

/// Large buffers about to be written from end to end, faulted in ahead in one request.
///
/// The first write to each 4 KiB page of fresh memory traps into the kernel, which finds,
/// zeroes and maps a page and returns. A batch update writes its new records and entries this
/// way, megabytes of them, and the traps (`exc_page_fault`, `clear_page_erms` and the fault
/// handling between them, in `perf`) weigh on its framing (Benchmarks/README.md, workload 10).
/// Asking for the whole range at once (`MADV_POPULATE_WRITE`, Linux 5.14) does the same work
/// without a trap per page, on the thread that is about to write there. Elsewhere, and on older
/// kernels (which refuse the advice), the pages fault in one by one as before.
package enum FreshMemory {
    /// Buffers smaller than this are left alone: they most often come from memory the
    /// allocator already holds.
    package static let threshold = 256 << 10

    /// Faults in the whole pages of `buffer`, to be written next.
    ///
    /// A hint: the contents are untouched, and nothing is reported if the kernel declines.
    package static func prepareForWriting(_ buffer: UnsafeMutableRawBufferPointer) {
        #if os(Linux)
        guard let base = buffer.baseAddress, buffer.count >= threshold else { return }
        let page = 4_096
        let start = (Int(bitPattern: base) + page - 1) & ~(page - 1)
        let end = (Int(bitPattern: base) + buffer.count) & ~(page - 1)
        guard end > start, let first = UnsafeMutableRawPointer(bitPattern: start) else { return }
        _ = madvise(first, end - start, populateWrite)
        #endif
    }

    /// Faults in the whole pages of `buffer`'s elements, to be written next.
    package static func prepareForWriting<Element>(_ buffer: UnsafeMutableBufferPointer<Element>) {
        prepareForWriting(UnsafeMutableRawBufferPointer(buffer))
    }

    #if os(Linux)
    /// `MADV_POPULATE_WRITE` (older C headers lack the name; the value is the kernel's ABI).
    private static let populateWrite: Int32 = 23
    #endif
}
