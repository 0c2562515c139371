import Foundation
import Testing

@testable import ObjectLogStore

/// The compactor alone: a copy of a store's live records into another file, which the store
/// neither reads from nor switches to.
@Suite("Compactor: copies of the live records")
struct CompactorTests {
    /// A store in memory with objects put, replaced and deleted over several transactions, and
    /// metadata set; its live objects by key.
    private static func churnedStore(
        on fileSystem: MemoryFileSystem
    ) throws -> (LogStore, [ObjectKey: [UInt8]]) {
        let store = try LogStore.open(
            path: "/s.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        let keys = Array(store.allocateKeys(60))
        var first = Transaction()
        for key in keys {
            first.put(
                key: key,
                entity: 1 + EntityTag(key % 3),
                payload: [UInt8(key)],
                isInsert: true
            )
        }
        try store.commit(first)
        var second = Transaction()
        for key in keys where key % 4 == 0 {
            second.put(key: key, entity: 1, payload: [UInt8(key), 2, 2], isInsert: false)
        }
        for key in keys where key % 5 == 0 { second.delete(key: key, entity: 1) }
        second.metadata = ["owner": .string("lab")]
        try store.commit(second)
        return (store, try snapshot(store))
    }

    @Test(
        "a copy holds the live objects and metadata in the next generation, and the store is unchanged"
    )
    func copyHoldsLiveObjects() throws {
        let fileSystem = MemoryFileSystem()
        let (store, live) = try Self.churnedStore(on: fileSystem)
        let storeBytes = try fileSystem.open("/s.olog", mode: .read).read(at: 0, count: 1 << 20)
        let copy = try store.locked {
            try Compactor(copying: store).writeCopy(
                to: "/copy.olog",
                generation: store.state.header.generation + 1,
                progress: nil,
                mappingOffsets: true
            )
        }
        #expect(copy.live.count == live.count)
        #expect(
            try fileSystem.open("/s.olog", mode: .read).read(at: 0, count: 1 << 20) == storeBytes
        )
        #expect(try snapshot(store) == live)

        // Every copied record's old and new offsets, in log order, and its new location.
        #expect(copy.oldOffsets.count == live.count)
        #expect(copy.oldOffsets == copy.oldOffsets.sorted())
        #expect(copy.newOffsets == copy.newOffsets.sorted())
        let oldLocations = store.locked { store.state.live.sortedEntries() }
        for (old, new) in zip(copy.oldOffsets, copy.newOffsets) {
            let key = try #require(oldLocations.first { $0.location.offset == old }?.key)
            #expect(copy.live[key]?.offset == new)
        }

        var options = StoreOptions(fileSystem: fileSystem)
        options.usesIndex = false
        let reopened = try LogStore.open(path: "/copy.olog", options: options)
        #expect(try snapshot(reopened) == live)
        #expect(reopened.metadata == ["owner": .string("lab")])
        #expect(reopened.generation == store.generation + 1)
        #expect(reopened.locked { reopened.state.endOffset } == copy.end)
        #expect(reopened.locked { reopened.state.liveRecordBytes } == copy.recordBytes)
    }

    @Test("a folded transaction's deletes, replacements, puts and metadata are the copy's")
    func foldedTransaction() throws {
        let fileSystem = MemoryFileSystem()
        let (store, live) = try Self.churnedStore(on: fileSystem)
        var expected = live
        var folded = Transaction()
        let replaced = try #require(live.keys.min())
        let deleted = try #require(live.keys.max())
        folded.put(key: replaced, entity: 1, payload: [42], isInsert: false)
        folded.delete(key: deleted, entity: 1)
        let added = store.allocateKeys(1).lowerBound
        folded.put(key: added, entity: 2, payload: [43, 43], isInsert: true)
        folded.metadata = ["owner": .string("copy")]
        expected[replaced] = [42]
        expected[deleted] = nil
        expected[added] = [43, 43]
        let copy = try store.locked {
            try Compactor(copying: store).writeCopy(
                to: "/folded.olog",
                generation: store.state.header.generation + 1,
                progress: nil,
                folding: folded
            )
        }
        #expect(copy.oldOffsets.isEmpty && copy.newOffsets.isEmpty)
        #expect(try snapshot(store) == live)
        let reopened = try LogStore.open(
            path: "/folded.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        #expect(try snapshot(reopened) == expected)
        #expect(reopened.metadata == ["owner": .string("copy")])
        // The folded transaction counts as one more.
        #expect(reopened.transactionCount == store.transactionCount + 1)
    }

    @Test("a damaged record stops the copy, and the target is removed")
    func damagedRecordRemovesTarget() throws {
        let fileSystem = MemoryFileSystem()
        let (store, _) = try Self.churnedStore(on: fileSystem)
        let location = try #require(
            store.locked { store.state.live.sortedEntries().first?.location }
        )
        // Flip a byte of the first live record's payload.
        let file = try fileSystem.open("/s.olog", mode: .readWrite)
        let byte = try file.read(at: location.offset + UInt64(location.length) - 1, count: 1)
        try file.write([byte[0] ^ 0xFF], at: location.offset + UInt64(location.length) - 1)
        let failure = #expect(throws: StoreError.self) {
            _ = try store.locked {
                try Compactor(copying: store).writeCopy(
                    to: "/damaged-copy.olog",
                    generation: store.state.header.generation + 1,
                    progress: nil
                )
            }
        }
        #expect(failure?.code == .corrupt)
        #expect(fileSystem.kind(of: "/damaged-copy.olog") == .missing)
    }
}
