import Foundation
import ObjectLog
import TestSupport
import Testing

// The code of the article "Validating and reacting to changes"
// (ObjectLog.docc/ValidatingAndReactingToChanges.md), exactly as the article shows it, in a
// namespace so that its names do not clash with other tests'.
enum ValidationArticle {
    final class Player: ManagedObject {
        @Attribute(.unique, validation: .length(1...20)) var name = ""
        @Attribute(validation: .range(0...100)) var score = 0
        @Attribute(validation: .pattern("[A-Z]{2}")) var country = "FR"
        @Attribute var created = Date.distantPast
        @Attribute var saves = 0
        /// Not saved: derived from the saved values when they are loaded.
        var initials = ""

        override func awakeFromInsert() { created = Date() }
        override func awakeFromFetch() { initials = String(name.prefix(2)) }
        override func willSave() {
            if !isDeleted { saves += 1 }
        }
        override func validateForUpdate() throws {
            if score < 10 && saves > 5 { throw PlayerError.stuck(name) }
        }
    }

    enum PlayerError: Error {
        case stuck(String)
    }

    static func saveRejected(_ context: ManagedObjectContext) -> [String] {
        let player = Player(context: context)
        player.name = ""
        player.score = 150
        do {
            try context.save()
            return []
        } catch {
            // "Player#2.name is "", which does not satisfy the length 1...20",
            // "Player#2.score is 150, which does not satisfy the range 0...100"
            return error.errors.map(\.message)
        }
    }

    static func playersNamed(_ text: String, in context: ManagedObjectContext) throws -> [String] {
        var request = FetchRequest<Player>(predicate: #Predicate { $0.score >= 50 })
        let ignoring: TextMatchOptions = [.caseInsensitive, .diacriticInsensitive]
        request.textMatch = .contains(\.name, text, options: ignoring)
        return try context.fetch(request).map(\.name)
    }
}

@Suite("The validation article's examples")
struct ValidationArticleTests {
    typealias Player = ValidationArticle.Player

    @Test("the rejected save reports both failures as the article's comment says")
    func rejectedSave() throws {
        let container = try PersistentContainer.inMemory(for: [Player.self])
        let context = container.newContext()
        let messages = ValidationArticle.saveRejected(context)
        let id = try #require(context.insertedObjects.first).objectID
        #expect(
            messages == [
                "\(id).name is \"\", which does not satisfy the length 1...20",
                "\(id).score is 150, which does not satisfy the range 0...100",
            ]
        )
        // The article's comment shows the first key a fresh store gives.
        #expect(id.description == "Player#2")
    }

    @Test("the hooks stamp, count and derive as the article says; the search ignores accents")
    func hooksAndSearch() throws {
        let container = try PersistentContainer.inMemory(for: [Player.self])
        let context = container.newContext()
        for (name, score) in [("Zoë", 80), ("zoe", 20), ("Chloé", 90)] {
            let player = Player(context: context)
            player.name = name
            player.score = score
            #expect(player.created > Date.distantPast)
        }
        try context.save()
        let reader = container.newContext()
        #expect(try ValidationArticle.playersNamed("ZOE", in: reader) == ["Zoë"])
        let loaded = try reader.fetch(Player.self)
        // A plain property does not load a fault: read a saved one first.
        #expect(loaded.map(\.name) == ["Zoë", "zoe", "Chloé"])
        #expect(loaded.map(\.initials) == ["Zo", "zo", "Ch"])
        #expect(loaded.map(\.saves) == [1, 1, 1])
        // validateForUpdate refuses a low score after many saves, keeping the cause.
        let stuck = loaded[1]
        for _ in 0..<5 {
            stuck.score += 0
            stuck.name = stuck.name == "zoe" ? "zoé" : "zoe"
            try reader.save()
        }
        stuck.score = 5
        let error = #expect(throws: ObjectLogError.self) { try reader.save() }
        #expect(error?.underlyingError is ValidationArticle.PlayerError)
    }

    @Test("this file holds every code block of the article, as the article shows it")
    func articleMatchesThisFile() throws {
        let (blocks, source) = try articleCodeBlocks(
            "ValidatingAndReactingToChanges.md",
            asIn: #filePath
        )
        #expect(blocks.count == 3)
        for expected in blocks {
            #expect(source.contains(expected), "not in this file: \(expected.prefix(44))")
        }
    }
}
