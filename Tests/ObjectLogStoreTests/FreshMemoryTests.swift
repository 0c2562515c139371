import Testing

@testable import ObjectLogStore

#if canImport(Glibc)
import Glibc
#endif

@Suite("Fresh memory faulted in ahead of its writes")
struct FreshMemoryTests {
    #if os(Linux)
    /// Whether each page of the `pages` from `base` is resident, as `mincore` reports it.
    private static func residency(_ base: UnsafeMutableRawPointer, pages: Int) -> [Bool] {
        var vector = [UInt8](repeating: 0, count: pages)
        let status = mincore(base, pages * 4_096, &vector)
        #expect(status == 0)
        return vector.map { $0 & 1 == 1 }
    }

    @Test("every whole page of a large buffer is mapped before it is written, from any start")
    func largeBufferIsResident() throws {
        let pages = 256
        let mapped = try #require(
            mmap(nil, pages * 4_096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        )
        #expect(mapped != MAP_FAILED)
        defer { munmap(mapped, pages * 4_096) }
        #expect(Self.residency(mapped, pages: pages).allSatisfy { !$0 })
        // Starts 100 bytes into the first page and ends 100 bytes into the last: the pages it
        // covers only in part are left to fault in as they are written.
        let buffer = UnsafeMutableRawBufferPointer(
            start: mapped + 100,
            count: (pages - 1) * 4_096
        )
        FreshMemory.prepareForWriting(buffer)
        let resident = Self.residency(mapped, pages: pages)
        #expect(!resident[0])
        #expect(!resident[pages - 1])
        #expect(resident[1..<(pages - 1)].allSatisfy { $0 })
    }

    @Test("a buffer below the threshold is left alone, and contents are never changed")
    func smallBufferUntouchedAndContentsKept() throws {
        let pages = 32
        #expect(pages * 4_096 < FreshMemory.threshold)
        let mapped = try #require(
            mmap(nil, pages * 4_096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        )
        defer { munmap(mapped, pages * 4_096) }
        FreshMemory.prepareForWriting(
            UnsafeMutableRawBufferPointer(start: mapped, count: pages * 4_096)
        )
        #expect(Self.residency(mapped, pages: pages).allSatisfy { !$0 })

        let written = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { written.deallocate() }
        for index in written.indices { written[index] = UInt8(truncatingIfNeeded: index &* 31) }
        FreshMemory.prepareForWriting(written)
        #expect(written.indices.allSatisfy { written[$0] == UInt8(truncatingIfNeeded: $0 &* 31) })
        FreshMemory.prepareForWriting(UnsafeMutableRawBufferPointer(start: nil, count: 0))
    }
    #endif
}
