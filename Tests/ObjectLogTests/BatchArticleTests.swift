import Foundation
import ObjectLog
import TestSupport
import Testing

/// The entity of the batch requests article.
final class Item: ManagedObject {
    @Attribute var name = ""
    @Attribute var value = 0.0
    @Attribute var category = ""
    @Attribute var isArchived = false
}

@Suite("The batch requests article's example")
struct BatchArticleTests {
    @Test("the article's three requests, as it shows them")
    func articleExample() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(
            path: directory.file("items.objectlog"),
            for: [Item.self]
        )
        let setup = container.newContext()
        for index in 0..<300 {
            let item = Item(context: setup)
            item.value = Double(index)
            item.category = index % 3 == 0 ? "old" : "new"
        }
        try setup.save()

        // As in the article:
        let context = container.newContext()

        // Delete the items whose value is below 100.
        let deleted = try context.execute(
            BatchDeleteRequest<Item>(predicate: #Predicate { $0.value < 100 })
        )

        // Archive every item of a category.
        let updated = try context.execute(
            BatchUpdateRequest<Item>(
                predicate: #Predicate { $0.category == "old" },
                updates: [.set(\.isArchived, to: true)]
            )
        )

        // Insert a thousand items from plain values.
        let inserted = try context.execute(
            BatchInsertRequest<Item>(count: 1_000) { index, item in
                item.name = "item \(index)"
                item.value = Double(index)
            }
        )
        print(deleted.deleted.count, updated.updated.count, inserted.inserted.count)

        #expect(deleted.deleted.count == 100)
        // Of the 200 left, those with an index divisible by three: 100...299.
        let archived = (100..<300).filter { $0 % 3 == 0 }.count
        #expect(updated.updated.count == archived)
        #expect(inserted.inserted.count == 1_000)
        let check = container.newContext()
        #expect(try check.count(FetchRequest<Item>()) == 1_200)
        #expect(
            try check.count(FetchRequest<Item>(predicate: #Predicate { $0.isArchived })) == archived
        )
        try container.close()
    }

    @Test("this file holds the article's code exactly")
    func articleCodeIsHere() throws {
        let (blocks, source) = try articleCodeBlocks(
            "BatchRequests.md",
            asIn: #filePath,
            indentation: 8
        )
        #expect(blocks.count == 1)
        for expected in blocks {
            #expect(source.contains(expected), "not in this file: \(expected.prefix(44))")
        }
    }
}
