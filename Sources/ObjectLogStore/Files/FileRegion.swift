#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes of a whole file in memory: mapped (`mmap`), so that only the pages read are
/// brought in, or, for a file that cannot be mapped, read into memory of its own.
///
/// A mapped file must not shrink while it is mapped: reading a page past its new end would
/// end the process (`SIGBUS`). The store maps only files it replaces by renaming a new copy
/// over them, never by writing or truncating them in place, and the mapping keeps the old
/// file's pages until it goes.
package final class FileRegion: @unchecked Sendable {
    /// The file's first byte; `count` bytes follow.
    package let bytes: UnsafeRawPointer
    package let count: Int
    private let isMapped: Bool

    /// The bytes of `file`, whose size is `size`; nil if it can be neither mapped nor read
    /// whole.
    package init?(file: any StoreFile, size: UInt64) {
        guard size > 0, size <= UInt64(Int.max) / 2 else { return nil }
        count = Int(size)
        // See: man 2 mmap
        if let descriptor = file.mappableDescriptor,
            let mapped = mmap(nil, count, PROT_READ, MAP_PRIVATE, descriptor, 0),
            mapped != UnsafeMutableRawPointer(bitPattern: -1)  // MAP_FAILED
        {
            bytes = UnsafeRawPointer(mapped)
            isMapped = true
            return
        }
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
        var done = 0
        while done < count {
            guard
                let read = try? file.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: memory[done...]),
                    at: UInt64(done)
                ), read > 0
            else { break }
            done += read
        }
        guard done == count else {
            memory.deallocate()
            return nil
        }
        bytes = UnsafeRawPointer(memory.baseAddress!)
        isMapped = false
    }

    /// A copy of `contents` in memory of its own (for files read another way, and tests).
    package init(copying contents: [UInt8]) {
        count = contents.count
        let memory = UnsafeMutableRawBufferPointer.allocate(
            byteCount: max(count, 1),
            alignment: 16
        )
        contents.withUnsafeBytes { memory.copyMemory(from: $0) }
        bytes = UnsafeRawPointer(memory.baseAddress!)
        isMapped = false
    }

    deinit {
        if isMapped {
            munmap(UnsafeMutableRawPointer(mutating: bytes), count)
        } else {
            UnsafeMutableRawPointer(mutating: bytes).deallocate()
        }
    }
}
