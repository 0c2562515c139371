import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

/// One change of the model history the salvage tests write.
private enum Change {
    case put(ObjectKey, EntityTag, String, insert: Bool)
    case delete(ObjectKey, EntityTag)
    case metadata(Metadata)
}

/// A store's state as the tests compare it: every live object and the metadata.
private struct State: Equatable, CustomStringConvertible {
    var objects: [ObjectKey: [UInt8]] = [:]
    var metadata: Metadata = [:]

    var description: String {
        let keys = objects.keys.sorted().map {
            "#\($0)=\(String(decoding: objects[$0]!, as: UTF8.self))"
        }
        return "objects [\(keys.joined(separator: ", "))], metadata \(metadata)"
    }

    mutating func apply(_ changes: [Change]) {
        for change in changes {
            switch change {
            case .put(let key, _, let value, _): objects[key] = Array(value.utf8)
            case .delete(let key, _): objects[key] = nil
            case .metadata(let dictionary): metadata = dictionary
            }
        }
    }

    init() {}

    init(_ store: LogStore) throws {
        for key in store.liveKeys(entity: nil) { objects[key] = try store.readObject(key)!.payload }
        metadata = store.metadata
    }
}

/// Seven transactions of configuration-like objects (entity 1) and their snapshots (entity 2):
/// inserts, updates, a delete, and three metadata changes.
private let history: [[Change]] = [
    [
        .put(1, 1, "configuration spots, f=0.035", insert: true),
        .put(2, 1, "configuration stripes, f=0.022", insert: true),
        .put(3, 1, "configuration waves, f=0.014", insert: true),
        .metadata(["author": .string("Ada")]),
    ],
    [
        .put(1, 1, "configuration spots, f=0.037", insert: false),
        .put(4, 2, "snapshot of #1 step 100", insert: true),
    ],
    [.delete(2, 1), .metadata(["author": .string("Ada"), "size": .integer(64)])],
    [
        .put(3, 1, "configuration waves, f=0.016", insert: false),
        .put(5, 1, "configuration maze", insert: true),
    ],
    [
        .put(1, 1, "configuration spots, f=0.040", insert: false),
        .put(4, 2, "snapshot of #1 step 200", insert: false),
    ],
    [.put(6, 2, "snapshot of #5 step 50", insert: true), .delete(5, 1)],
    [
        .metadata(["author": .string("Bob"), "size": .integer(64)]),
        .put(6, 2, "snapshot of #5 step 60", insert: false),
    ],
]

/// Writes `history` to `path`; returns each transaction's byte range.
private func writeHistory(_ path: String, options: StoreOptions) throws -> [Range<UInt64>] {
    let store = try LogStore.open(path: path, options: options)
    _ = store.allocateKeys(6)
    var ranges: [Range<UInt64>] = []
    for changes in history {
        let start = store.fileBytes
        var transaction = Transaction()
        for change in changes {
            switch change {
            case .put(let key, let entity, let value, let insert):
                transaction.put(
                    key: key,
                    entity: entity,
                    payload: Array(value.utf8),
                    isInsert: insert
                )
            case .delete(let key, let entity): transaction.delete(key: key, entity: entity)
            case .metadata(let dictionary): transaction.metadata = dictionary
            }
        }
        try store.commit(transaction)
        ranges.append(start..<store.fileBytes)
    }
    try store.close()
    return ranges
}

/// The state of `history` without transaction `dropped` (an index into it).
private func state(without dropped: Int?) -> State {
    var state = State()
    for (index, changes) in history.enumerated() where index != dropped { state.apply(changes) }
    return state
}

@Suite("Salvage")
struct SalvageTests {
    @Test(
        "damage at every byte of every transaction costs that transaction only; repaired, the store verifies clean and takes new saves"
    )
    func damageAtEveryByte() throws {
        let path = "/lab.olog"
        let fileSystem = MemoryFileSystem()
        let ranges = try writeHistory(path, options: StoreOptions(fileSystem: fileSystem))
        let original = try fileSystem.open(path, mode: .read).read(at: 0, count: 1 << 20)
        #expect(UInt64(original.count) == ranges.last!.upperBound)
        var checked = 0
        for offset in Int(ranges[0].lowerBound)..<original.count {
            let dropped = ranges.firstIndex { $0.contains(UInt64(offset)) }!
            let expected = state(without: dropped)
            for damage: UInt8 in longTests ? [0xFF, 0x01, 0x80] : [0xFF] {
                var bytes = original
                bytes[offset] ^= damage
                let copy = MemoryFileSystem()
                let file = try copy.open(path, mode: .create(permissions: 0o600))
                try file.write(bytes, at: 0)
                file.close()
                var options = StoreOptions(fileSystem: copy)
                options.salvage = true
                let salvaged = try LogStore.open(path: path, options: options)
                let found = try State(salvaged)
                #expect(found == expected, "damage \(damage) at offset \(offset): \(found)")
                let report = try #require(salvaged.salvageReport)
                #expect(report.losses.count == 1, "offset \(offset)")
                if dropped == history.count - 1 {
                    // Damage in the last transaction cannot be told from a torn write.
                    #expect(report.losses.first?.damage.kind == .tornTail, "offset \(offset)")
                } else {
                    #expect(
                        report.lostTransactionNumbers == [UInt64(dropped + 1)],
                        "offset \(offset)"
                    )
                    #expect(report.losses.first?.damage.kind == .corrupt, "offset \(offset)")
                }
                try salvaged.close()

                // Reading the metadata without replay finds the same dictionary: the last
                // transaction whose records are all intact, never one damaged anywhere.
                #expect(
                    try LogStore.readMetadata(path: path, fileSystem: copy) == expected.metadata,
                    "offset \(offset)"
                )
                // The inspection sees the same state and the same loss.
                let inspection = try StoreInspection(path: path, fileSystem: copy)
                #expect(inspection.salvageReport == report, "offset \(offset)")
                #expect(inspection.liveObjects.count == expected.objects.count, "offset \(offset)")
                #expect(inspection.metadata == expected.metadata, "offset \(offset)")

                let result = try LogStore.repair(
                    path: path,
                    options: StoreOptions(fileSystem: copy)
                )
                #expect(result.report == report)
                #expect(result.damagedCopyPath == path + ".damaged")
                #expect(
                    try copy.open(path + ".damaged", mode: .read).read(at: 0, count: 1 << 20)
                        == bytes
                )
                let repaired = try StoreInspection(path: path, fileSystem: copy)
                #expect(repaired.isClean, "offset \(offset): \(repaired.problems)")
                let store = try LogStore.open(path: path, options: StoreOptions(fileSystem: copy))
                #expect(try State(store) == expected, "offset \(offset)")
                let key = store.allocateKeys(1).lowerBound
                #expect(key == 7, "offset \(offset)")
                var transaction = Transaction()
                transaction.put(key: key, entity: 1, payload: Array("new".utf8), isInsert: true)
                try store.commit(transaction)
                try store.close()
                let reopened = try LogStore.open(
                    path: path,
                    options: StoreOptions(fileSystem: copy)
                )
                var withSave = expected
                withSave.objects[key] = Array("new".utf8)
                #expect(try State(reopened) == withSave, "offset \(offset)")
                try reopened.close()
                checked += 1
            }
        }
        #expect(checked >= original.count - 512)
    }
}
