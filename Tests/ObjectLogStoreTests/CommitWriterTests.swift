import Foundation
import Testing

@testable import ObjectLogStore

/// The commit writer's steps one at a time: framing reads the live state and changes nothing,
/// and the state a commit applies is the state a replay of the file finds.
@Suite("Commit writer: frame, write, flush, apply")
struct CommitWriterTests {
    /// A store in memory with `count` objects of entity 1, each a 3-byte payload.
    private static func store(
        objects count: Int,
        on fileSystem: MemoryFileSystem = MemoryFileSystem()
    ) throws -> (LogStore, [ObjectKey]) {
        let store = try LogStore.open(
            path: "/c.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        let keys = Array(store.allocateKeys(count))
        var transaction = Transaction()
        for key in keys {
            transaction.put(key: key, entity: 1, payload: [1, 2, UInt8(key % 256)], isInsert: true)
        }
        try store.commit(transaction)
        return (store, keys)
    }

    /// What a state holds that a replay must agree on.
    private static func summary(_ state: LiveState) -> String {
        let entries = state.live.sortedEntries().map {
            "\($0.key):\($0.location.entity)@\($0.location.offset)+\($0.location.length)"
        }
        return [
            entries.joined(separator: ","),
            "bytes \(state.liveRecordBytes)", "metadata \(state.metadataOffset)",
            "number \(state.lastNumber)", "end \(state.endOffset)",
            "checksum \(String(describing: state.lastCommitChecksum))",
            "current \(state.currentMetadata)",
        ].joined(separator: "\n")
    }

    @Test(
        "framing counts the changes, skips a delete of a key that is not live, and changes nothing"
    )
    func framingChangesNothing() throws {
        let (store, keys) = try Self.store(objects: 4)
        let fresh = store.allocateKeys(1).lowerBound
        var transaction = Transaction()
        transaction.put(key: keys[0], entity: 1, payload: [9], isInsert: false)
        transaction.put(key: fresh, entity: 2, payload: [7, 7], isInsert: true)
        transaction.delete(key: keys[1], entity: 1)
        transaction.delete(key: keys[1], entity: 1)  // no longer live: skipped
        transaction.metadata = ["theme": .string("dark")]
        let before = store.locked { Self.summary(store.state) }
        let fileBefore = try store.locked { try store.file.size() }
        let commit = try store.locked {
            try CommitWriter(framing: transaction, after: store.state, path: store.path)
        }
        #expect((commit.inserted, commit.updated, commit.deleted) == (1, 1, 1))
        #expect(commit.start == fileBefore)
        #expect(commit.commit.firstRecordOffset == fileBefore)
        #expect(commit.highestKey == fresh)
        #expect(commit.metadataOffset > commit.start)
        #expect(commit.metadataOffset < commit.start + UInt64(commit.length))
        #expect(store.locked { Self.summary(store.state) } == before)
        #expect(try store.locked { try store.file.size() } == fileBefore)
    }

    @Test("a key never allocated, and a payload over the limit, are refused while framing")
    func framingRefuses() throws {
        let (store, _) = try Self.store(objects: 1)
        var unallocated = Transaction()
        unallocated.put(key: 1_000, entity: 1, payload: [1], isInsert: true)
        let refused = #expect(throws: StoreError.self) {
            _ = try store.locked {
                try CommitWriter(framing: unallocated, after: store.state, path: store.path)
            }
        }
        #expect(refused?.code == .invalidArgument)
        var metadata = Transaction()
        metadata.metadata = ["big": .data(Data(count: LogFormat.maximumMetadataLength + 1))]
        let tooLarge = #expect(throws: StoreError.self) {
            _ = try store.locked {
                try CommitWriter(framing: metadata, after: store.state, path: store.path)
            }
        }
        #expect(tooLarge?.code == .tooLarge)
    }

    @Test(
        "the state a commit applies is the state a replay of the file finds",
        arguments: [10, CommitWriter.overlappedSyncChanges + 10]
    )
    func appliedStateMatchesReplay(objects: Int) throws {
        let fileSystem = MemoryFileSystem()
        let (store, keys) = try Self.store(objects: objects, on: fileSystem)
        var transaction = Transaction()
        for key in keys.prefix(objects / 2) {
            transaction.put(key: key, entity: 2, payload: [5, 5, 5, 5], isInsert: false)
        }
        for key in keys.suffix(objects / 4) { transaction.delete(key: key, entity: 1) }
        for key in store.allocateKeys(3) {
            transaction.put(key: key, entity: 3, payload: [6], isInsert: true)
        }
        transaction.metadata = ["version": .integer(2)]
        let applied = try store.locked { () -> String in
            let commit = try CommitWriter(
                framing: transaction,
                after: store.state,
                path: store.path
            )
            try commit.write(to: store.file, state: &store.state)
            let flush = try commit.flush(store.file, state: &store.state)
            #expect((flush != nil) == (transaction.count >= CommitWriter.overlappedSyncChanges))
            let info = try commit.apply(to: &store.state, flushing: flush)
            #expect(info.number == 2)
            #expect(
                info.inserted == 3 && info.updated == objects / 2 && info.deleted == objects / 4
            )
            return Self.summary(store.state)
        }
        try store.close()
        var options = StoreOptions(fileSystem: fileSystem)
        options.usesIndex = false
        let replayed = try LogStore.open(path: "/c.olog", options: options)
        #expect(replayed.indexState == .rebuilt)
        #expect(replayed.locked { Self.summary(replayed.state) } == applied)
    }
}
