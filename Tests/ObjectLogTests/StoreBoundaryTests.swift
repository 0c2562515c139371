import Foundation
import ObjectLog
import ObjectLogStore
import Testing

private final class BoundaryNote: ManagedObject {
    @Attribute var text = ""
}

@Suite("Engine at the store's boundary")
struct StoreBoundaryTests {
    private func temporaryPath(_ name: String) throws -> (String, () -> Void) {
        let directory =
            FileManager.default.temporaryDirectory.path + "/boundary-" + UUID().uuidString
        try FileManager.default.createDirectory(
            atPath: directory,
            withIntermediateDirectories: true
        )
        return (directory + "/" + name, { try? FileManager.default.removeItem(atPath: directory) })
    }

    @Test("a damaged record met by a fetch keeps the store's error (code and offset)")
    func fetchKeepsStoreError() throws {
        let (path, cleanup) = try temporaryPath("damaged.olog")
        defer { cleanup() }
        do {
            let container = try PersistentContainer(path: path, for: [BoundaryNote.self])
            let context = container.newContext()
            for text in ["first", "second"] {
                BoundaryNote(context: context).text = text
                try context.save()
            }
            try container.close()
        }
        // Flip a byte inside the first note's record; the index checkpoint lets the open skip it.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let position = try #require(bytes.firstRange(of: Array("first".utf8))?.lowerBound)
        bytes[position] ^= 0x20
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let container = try PersistentContainer(path: path, for: [BoundaryNote.self])
        let context = container.newContext()
        let error = #expect(throws: ObjectLogError.self) {
            _ = try context.fetch(
                FetchRequest<BoundaryNote>(predicate: #Predicate { $0.text != "" })
            )
        }
        #expect(error?.storeError?.code == .corrupt)
        #expect(error?.storeError?.offset != nil)
    }

    @Test("a store of objects without an ObjectLog model is refused and left unchanged")
    func foreignStoreRefused() throws {
        let (path, cleanup) = try temporaryPath("foreign.olog")
        defer { cleanup() }
        let store = try LogStore.open(path: path)
        var transaction = Transaction()
        transaction.put(
            key: store.allocateKeys(1).lowerBound,
            entity: 1,
            payload: [1, 2, 3],
            isInsert: true
        )
        try store.commit(transaction)
        try store.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let error = #expect(throws: ObjectLogError.self) {
            _ = try PersistentContainer(path: path, for: [BoundaryNote.self])
        }
        #expect(error?.code == .modelMismatch)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        // An empty store without a model is adopted as before.
        let (empty, cleanupEmpty) = try temporaryPath("empty.olog")
        defer { cleanupEmpty() }
        try LogStore.open(path: empty).close()
        let container = try PersistentContainer(path: empty, for: [BoundaryNote.self])
        try container.close()
    }
}
