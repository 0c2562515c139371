/// The buffers that bulk reads read the log into, kept for the next read.
///
/// A read plan cut into parts for several threads is read part by part, and each part needs a
/// window of a megabyte or so. Allocated afresh for each part, every window would have the
/// kernel zero and map its pages again, a page fault every 4 KiB (see ``FreshMemory``), and its
/// bytes would be cold in the processor's cache. The pool hands a finished part's window to the
/// next part instead: as many windows live as there are threads reading at once.
final class ReadWindowPool: Sendable {
    /// The windows kept, each owned by the pool until handed out.
    private let spare = LockedValue<[UnsafeMutableRawBufferPointer]>([])
    /// The most windows kept between reads: a read on each processor of a large machine.
    private static let keptWindows = 8

    init() {}

    deinit {
        spare.withLock { spare in
            for window in spare { window.deallocate() }
        }
    }

    /// A window of `byteCount` bytes: a kept one, or a new one, faulted in for its first
    /// `firstRead` bytes (see ``FreshMemory``), which the caller reads next.
    func take(byteCount: Int, firstRead: Int) -> UnsafeMutableRawBufferPointer {
        let kept = spare.withLock { spare -> UnsafeMutableRawBufferPointer? in
            guard let index = spare.lastIndex(where: { $0.count == byteCount }) else { return nil }
            return spare.remove(at: index)
        }
        if let kept { return kept }
        let fresh = UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 16)
        FreshMemory.prepareForWriting(
            UnsafeMutableRawBufferPointer(rebasing: fresh[..<min(firstRead, byteCount)])
        )
        return fresh
    }

    /// The number of windows kept now.
    var keptCount: Int { spare.withLock { $0.count } }

    /// Keeps `window` for a later read, or frees it when enough are kept.
    func give(_ window: UnsafeMutableRawBufferPointer) {
        let kept = spare.withLock { spare -> Bool in
            guard spare.count < Self.keptWindows else { return false }
            spare.append(window)
            return true
        }
        if !kept { window.deallocate() }
    }
}
