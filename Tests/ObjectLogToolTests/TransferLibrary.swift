import Foundation
import ObjectLog
import ObjectLogStore

// A library in two model versions, for the tests of `export`, `import` and of `dump` across
// stores: an abstract `Item` with a subentity `Book` (external data, a date, an optional
// string), ordered to-many `Shelf.books` with its to-one inverse, many-to-many `Book.tags`, a
// unique `Shelf.name`. Version 2 adds `Book.pages`.

class TransferItemV1: ManagedObject {
    @Attribute var title = ""
    @Attribute var rating = 0.0
    override class var entityName: String { "Item" }
    override class var isAbstract: Bool { self == TransferItemV1.self }
}

final class TransferBookV1: TransferItemV1 {
    @Attribute(.externalStorage) var cover = Data()
    @Attribute var published = Date(timeIntervalSince1970: 0)
    @Attribute var note: String? = nil
    @Relationship var shelf: TransferShelfV1?
    @Relationship(inverse: \TransferTagV1.books) var tags: Set<TransferTagV1>
    override class var entityName: String { "Book" }
}

final class TransferShelfV1: ManagedObject {
    @Attribute(.unique) var name = ""
    @Relationship(inverse: \TransferBookV1.shelf, deleteRule: .cascade) var books: [TransferBookV1]
    override class var entityName: String { "Shelf" }
}

final class TransferTagV1: ManagedObject {
    @Attribute var label = ""
    @Relationship var books: Set<TransferBookV1>
    override class var entityName: String { "Tag" }
}

class TransferItemV2: ManagedObject {
    @Attribute var title = ""
    @Attribute var rating = 0.0
    override class var entityName: String { "Item" }
    override class var isAbstract: Bool { self == TransferItemV2.self }
}

final class TransferBookV2: TransferItemV2 {
    @Attribute(.externalStorage) var cover = Data()
    @Attribute var published = Date(timeIntervalSince1970: 0)
    @Attribute var note: String? = nil
    @Attribute var pages = 100
    @Relationship var shelf: TransferShelfV2?
    @Relationship(inverse: \TransferTagV2.books) var tags: Set<TransferTagV2>
    override class var entityName: String { "Book" }
}

final class TransferShelfV2: ManagedObject {
    @Attribute(.unique) var name = ""
    @Relationship(inverse: \TransferBookV2.shelf, deleteRule: .cascade) var books: [TransferBookV2]
    override class var entityName: String { "Shelf" }
}

final class TransferTagV2: ManagedObject {
    @Attribute var label = ""
    @Relationship var books: Set<TransferBookV2>
    override class var entityName: String { "Tag" }
}

/// The classes of version 2 of the library's model.
let transferLibraryV2: [ManagedObject.Type] = [
    TransferBookV2.self, TransferShelfV2.self, TransferTagV2.self,
]

/// What ``makeTransferLibrary(at:)`` wrote.
struct TransferLibrary {
    var path: String
    /// The key of a book deleted after the migration, the highest key handed out.
    var deletedKey: ObjectKey
    /// The cover kept as a blob file at every threshold (20 KiB).
    var largeCover: Data
    /// The metadata the library sets besides the engine's.
    var metadata: Metadata
}

/// A library store written by version 1 (external data from 1 KiB, so a 2 KiB cover is a blob
/// file here and inline in a database), then migrated to version 2, which adds a book, deletes
/// one and patches the rating of version 1's books: records of both versions, patches, two
/// model versions, blobs, metadata and every kind of relationship.
func makeTransferLibrary(at path: String) throws -> TransferLibrary {
    var options = StoreOptions()
    options.externalStorageMinimumByteCount = 1024
    let largeCover = Data((0..<20_480).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    let metadata: Metadata = [
        "owner": .string("Ada \"A.\" Lovelace\n"),
        "shelves": .integer(2),
        "zoom": .double(1.5),
        "settings": .dictionary(["theme": .string("dark"), "sizes": .array([.integer(1)])]),
    ]

    let first = try PersistentContainer(
        path: path,
        for: [TransferBookV1.self, TransferShelfV1.self, TransferTagV1.self],
        options: options
    )
    let context = first.newContext()
    let fiction = TransferShelfV1(context: context)
    fiction.name = "fiction"
    let poetry = TransferShelfV1(context: context)
    poetry.name = "poetry"
    let classic = TransferTagV1(context: context)
    classic.label = "classic"
    let short = TransferTagV1(context: context)
    short.label = "short"
    let covers = [largeCover, Data(repeating: 0xAB, count: 2048), Data([1, 2, 3]), Data()]
    var books: [TransferBookV1] = []
    for (index, cover) in covers.enumerated() {
        let book = TransferBookV1(context: context)
        book.title = "book \(index) \u{e9}\u{301}"
        book.rating = Double(index) / 3
        book.cover = cover
        book.published = Date(timeIntervalSinceReferenceDate: 123_456.789 * Double(index + 1))
        book.note = index.isMultiple(of: 2) ? "note \(index)" : nil
        books.append(book)
    }
    // Ordered: not in key order.
    fiction.books = [books[2], books[0], books[1]]
    poetry.books = [books[3]]
    books[0].tags = [classic, short]
    books[2].tags = [short]
    for (key, value) in metadata { try first.setMetadata(value, forKey: key) }
    try context.save()
    try first.close()

    let second = try PersistentContainer(path: path, for: transferLibraryV2, options: options)
    let later = second.newContext()
    let shelf = try later.fetch(
        FetchRequest<TransferShelfV2>(predicate: #Predicate { $0.name == "poetry" })
    ).first!
    let added = TransferBookV2(context: later)
    added.title = "added by version 2"
    added.pages = 321
    added.cover = Data(repeating: 0x5C, count: 1500)
    added.shelf = shelf
    let doomed = TransferBookV2(context: later)
    doomed.title = "deleted"
    try later.save()
    let deletedKey = doomed.objectID.key
    later.delete(doomed)
    try later.save()
    // Patches, of records version 1 wrote.
    _ = try later.execute(
        BatchUpdateRequest<TransferBookV2>(
            predicate: #Predicate { $0.pages == 100 },
            updates: [.set(\.rating, to: 4.5)]
        )
    )
    try second.close()
    return TransferLibrary(
        path: path,
        deletedKey: deletedKey,
        largeCover: largeCover,
        metadata: metadata
    )
}
