import Foundation
import ObjectLog
import StoreTestSupport
import TestSupport
import Testing

/// An entity with a rule of every kind on its attributes.
final class Player: ManagedObject {
    @Attribute(validation: .range(0...100)) var score = 0
    @Attribute(.unique, validation: .length(1...12)) var name = "player"
    @Attribute(validation: .pattern("[a-z]+@[a-z]+\\.[a-z]+")) var email = "a@b.cd"
    @Attribute(validation: .rule("even") { $0 % 2 == 0 }) var pairs = 0
    @Attribute(validation: .range(0.0..<1)) var ratio: Double? = nil
    @Attribute(validation: .length(...4)) var badge: Data? = nil
    @Attribute(validation: .all(.range(1...), .rule("a multiple of 5") { $0 % 5 == 0 }))
    var level = 5
    @Attribute(validation: .pattern("[A-Z]{2}")) var country: String? = nil
}

/// An entity whose `validateFor…` methods refuse what a test says.
final class Vetted: ManagedObject {
    @Attribute var minimum = 0
    @Attribute var maximum = 0
    @Attribute var locked = false

    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    override func validateForInsert() throws {
        try validateBounds()
    }
    override func validateForUpdate() throws {
        try validateBounds()
    }
    override func validateForDelete() throws {
        if locked { throw Refusal(description: "locked objects stay") }
    }

    private func validateBounds() throws {
        if minimum > maximum {
            throw Refusal(description: "minimum \(minimum) > maximum \(maximum)")
        }
    }
}

/// An entity whose rule's pattern does not compile.
final class BadPattern: ManagedObject {
    @Attribute(validation: .pattern("([a-z")) var code = ""
}

@Suite("Attribute validation rules and validateFor… methods")
struct ValidationTests {
    /// A save's error, which the test expects.
    func saveError(_ context: ManagedObjectContext) -> ObjectLogError? {
        #expect(throws: ObjectLogError.self) { try context.save() }
    }

    /// The messages of a save error's failures (one, or each of several).
    func messages(_ error: ObjectLogError?) -> [String] {
        guard let error else { return [] }
        return error.errors.isEmpty ? [error.message] : error.errors.map(\.message)
    }

    @Test("values inside every rule save", arguments: TestStoreKind.available)
    func validValuesSave(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Player.self])
        let context = container.newContext()
        let player = Player(context: context)
        player.score = 100
        player.name = String(repeating: "x", count: 12)
        player.email = "jo@example.org"
        player.pairs = -4
        player.ratio = 0.999
        player.badge = Data([1, 2, 3, 4])
        player.level = 10
        player.country = "FR"
        try context.save()
        #expect(try container.newContext().count(FetchRequest<Player>()) == 1)
        // Optionals that are nil pass every rule, as do the defaults.
        _ = Player(context: context)
        try context.save()
    }

    @Test(
        "each rule kind refuses a value outside it, naming object, property, value and rule",
        arguments: [
            ("score", "is 101, which does not satisfy the range 0...100"),
            ("score-negative", "is -1, which does not satisfy the range 0...100"),
            ("name", "is \"\", which does not satisfy the length 1...12"),
            ("name-long", "is \"abcdefghijklm\", which does not satisfy the length 1...12"),
            (
                "email",
                "is \"jo@example\", which does not satisfy the pattern '[a-z]+@[a-z]+\\.[a-z]+'"
            ),
            ("pairs", "is 3, which does not satisfy the rule 'even'"),
            ("ratio", "is 1.0, which does not satisfy the range 0.0..<1.0"),
            ("badge", "is 5 bytes, which does not satisfy the length ...4"),
            ("country", "is \"fra\", which does not satisfy the pattern '[A-Z]{2}'"),
        ]
    )
    func ruleRefuses(change: String, expected: String) throws {
        let container = try PersistentContainer.inMemory(for: [Player.self])
        let context = container.newContext()
        let player = Player(context: context)
        switch change {
        case "score": player.score = 101
        case "score-negative": player.score = -1
        case "name": player.name = ""
        case "name-long": player.name = "abcdefghijklm"
        case "email": player.email = "jo@example"
        case "pairs": player.pairs = 3
        case "ratio": player.ratio = 1
        case "badge": player.badge = Data(count: 5)
        default: player.country = "fra"
        }
        let error = saveError(context)
        let property = String(change.prefix { $0 != "-" })
        #expect(error?.code == .validation)
        #expect(error?.objectID == player.objectID)
        #expect(error?.property == property)
        #expect(error?.message == "\(player.objectID).\(property) \(expected)")
        #expect(try container.newContext().count(FetchRequest<Player>()) == 0, "nothing saved")
        #expect(player.isInserted, "the change stays, to be fixed")
    }

    @Test(
        "a rule is checked on update too, and a fixed value then saves",
        arguments: TestStoreKind.available
    )
    func ruleOnUpdate(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Player.self])
        let context = container.newContext()
        let player = Player(context: context)
        try context.save()
        player.score = 500
        #expect(saveError(context)?.property == "score")
        #expect(try container.newContext().fetch(Player.self).map(\.score) == [0])
        player.score = 50
        try context.save()
        #expect(try container.newContext().fetch(Player.self).map(\.score) == [50])
    }

    @Test(
        "a save with several failures reports all of them in one error and saves nothing",
        arguments: TestStoreKind.available
    )
    func severalFailures(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Player.self, Vetted.self])
        let context = container.newContext()
        let saved = Vetted(context: context)
        saved.locked = true
        try context.save()

        let first = Player(context: context)
        first.name = "first"
        first.score = 200
        first.pairs = 1
        let second = Player(context: context)
        second.name = "second"
        second.level = -3  // fails both parts of `.all`
        let fine = Player(context: context)
        fine.name = "fine"
        let vetted = Vetted(context: context)
        vetted.minimum = 3
        context.delete(saved)

        let error = saveError(context)
        #expect(error?.code == .validation)
        #expect(error?.message == "6 validation errors")
        #expect(messages(error).count == 6)
        #expect(
            Set(messages(error)) == [
                "\(first.objectID).score is 200, which does not satisfy the range 0...100",
                "\(first.objectID).pairs is 1, which does not satisfy the rule 'even'",
                "\(second.objectID).level is -3, which does not satisfy the range 1...",
                "\(second.objectID).level is -3, which does not satisfy the rule 'a multiple of 5'",
                "\(vetted.objectID) failed validateForInsert(): minimum 3 > maximum 0",
                "\(saved.objectID) failed validateForDelete(): locked objects stay",
            ]
        )
        #expect(!messages(error).contains { $0.contains(fine.objectID.description) })
        let reader = container.newContext()
        #expect(try reader.count(FetchRequest<Player>()) == 0)
        #expect(try reader.count(FetchRequest<Vetted>()) == 1, "the deletion was not saved")
    }

    @Test(
        "validateForUpdate refuses an update and keeps the thrown error as the cause",
        arguments: TestStoreKind.available
    )
    func validateForUpdateKeepsCause(kind: TestStoreKind) throws {
        let store = try TestStore(kind)
        let container = try store.open(for: [Vetted.self])
        let context = container.newContext()
        let object = Vetted(context: context)
        object.maximum = 10
        try context.save()
        object.minimum = 11
        let error = saveError(context)
        #expect(
            error?.message
                == "\(object.objectID) failed validateForUpdate(): minimum 11 > maximum 10"
        )
        #expect(error?.objectID == object.objectID)
        #expect(
            (error?.underlyingError as? Vetted.Refusal)?.description == "minimum 11 > maximum 10"
        )
        object.maximum = 20
        try context.save()
        #expect(try container.newContext().fetch(Vetted.self).map(\.minimum) == [11])
    }

    @Test(
        "a pattern that does not compile makes the model refuse to build",
        arguments: TestStoreKind.available
    )
    func badPatternRefusesModel(kind: TestStoreKind) throws {
        let error = #expect(throws: ObjectLogError.self) {
            try TestStore(kind).open(for: [BadPattern.self])
        }
        #expect(error?.code == .invalidModel)
        #expect(error?.property == "code")
        #expect(error?.message.contains("BadPattern.code") == true)
    }
}
