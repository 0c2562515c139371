import Foundation
import Testing

@testable import ObjectLogStore

/// A transaction's author and context name, in the padding record before its commit.
@Suite("Transaction notes")
struct TransactionNoteTests {
    @Test(
        "a note comes back from its bytes; padding without the prefix has none",
        arguments: [
            TransactionNote(author: "ada", contextName: "editor"),
            TransactionNote(author: nil, contextName: "é 😀"),
            TransactionNote(author: "", contextName: nil),
        ]
    )
    func roundTrip(note: TransactionNote) {
        let bytes = note.encoded + [0, 0, 0]
        #expect(bytes.withUnsafeBytes { TransactionNote(padding: $0) } == note)
        // A padding record the note fills exactly.
        #expect(note.encoded.withUnsafeBytes { TransactionNote(padding: $0) } == note)
        let zeros = [UInt8](repeating: 0, count: 40)
        #expect(zeros.withUnsafeBytes { TransactionNote(padding: $0) } == nil)
        let cut = Array(note.encoded.dropLast())
        if note.contextName != nil && !(note.contextName!.isEmpty) {
            #expect(cut.withUnsafeBytes { TransactionNote(padding: $0) } == nil)
        }
    }

    @Test(
        "a durable mark after the names comes back, leaves the names as they were, and alone is no note"
    )
    func durableMark() {
        let note = TransactionNote(author: "ada", contextName: "editor")
        let marked = TransactionNote.encode(note, durableThrough: 300) + [0, 0]
        #expect(marked.withUnsafeBytes { TransactionNote(padding: $0) } == note)
        #expect(marked.withUnsafeBytes { TransactionNote.durableThrough(padding: $0) } == 300)
        // A reader that knows only the names reads them as before: they come first.
        #expect(Array(marked.prefix(note.encoded.count)) == note.encoded)
        let alone = TransactionNote.encode(nil, durableThrough: 0) + [0]
        #expect(alone.withUnsafeBytes { TransactionNote(padding: $0) } == nil)
        #expect(alone.withUnsafeBytes { TransactionNote.durableThrough(padding: $0) } == 0)
        let unmarked = note.encoded + [0, 0, 0]
        #expect(unmarked.withUnsafeBytes { TransactionNote.durableThrough(padding: $0) } == nil)
    }

    @Test("every commit with a note stays aligned, replays, and inspects clean")
    func aligned() throws {
        let fileSystem = MemoryFileSystem()
        let store = try LogStore.open(
            path: "/n.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        // Puts of many sizes, so that some commits would end on a boundary without the note.
        for size in 0..<40 {
            var transaction = Transaction()
            let key = store.allocateKeys(1).lowerBound
            transaction.put(
                key: key,
                entity: 1,
                payload: [UInt8](repeating: 7, count: size * 13),
                isInsert: true
            )
            transaction.author = size % 2 == 0 ? "ada" : nil
            transaction.contextName = "context \(size)"
            try store.commit(transaction)
        }
        let history = try store.history(after: 0)
        #expect(history.transactions.count == 40)
        for (index, transaction) in history.transactions.enumerated() {
            #expect(transaction.note?.author == (index % 2 == 0 ? "ada" : nil))
            #expect(transaction.note?.contextName == "context \(index)")
        }
        try store.close()
        let file = try fileSystem.open("/n.olog", mode: .read)
        #expect(try file.size() % UInt64(LogFormat.sectorSize) == 0)
        file.close()
        let reopened = try LogStore.open(
            path: "/n.olog",
            options: StoreOptions(fileSystem: fileSystem)
        )
        #expect(reopened.liveCount(entity: nil) == 40)
        try reopened.close()
        let inspection = try StoreInspection(path: "/n.olog", fileSystem: fileSystem)
        #expect(inspection.problems.isEmpty)
        #expect(inspection.transactions.count == 40)
    }
}
