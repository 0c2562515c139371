import Foundation
import TestSupport
import Testing

@testable import ObjectLog

/// An entity to search; the `note` before `title` makes the search skip a property first.
final class Dish: ManagedObject {
    @Attribute var note = ""
    @Attribute var title = ""
    @Attribute var servings = 2
}

@Suite("Text matching in fetch requests")
struct TextMatchTests {
    static let titles = [
        "Crème brûlée", "CREME caramel", "creamy soup", "Spot", "spotted dick", "Café",
        "Cafe\u{301} au lait", "\u{212A}ale", "kale", "", "Éclair", "Straße",
    ]

    /// A container holding one saved dish per title, servings its position.
    func makeDishes() throws -> (PersistentContainer, ManagedObjectContext) {
        let container = try PersistentContainer.inMemory(for: [Dish.self])
        let writer = container.newContext()
        for (index, title) in Self.titles.enumerated() {
            let dish = Dish(context: writer)
            dish.note = "note \(index)"
            dish.title = title
            dish.servings = index
        }
        try writer.save()
        return (container, container.newContext())
    }

    func titles(
        _ context: ManagedObjectContext,
        _ match: TextMatch<Dish>,
        predicate: Predicate<Dish>? = nil
    ) throws -> [String] {
        try context.fetch(FetchRequest(predicate: predicate, textMatch: match)).map(\.title)
    }

    @Test("contains, hasPrefix and equals with and without case and diacritics")
    func kinds() throws {
        let (_, context) = try makeDishes()
        #expect(try titles(context, .contains(\.title, "creme")) == ["CREME caramel"])
        #expect(
            try titles(
                context,
                .contains(\.title, "creme", options: [.caseInsensitive, .diacriticInsensitive])
            )
                == ["Crème brûlée", "CREME caramel"]
        )
        #expect(try titles(context, .contains(\.title, "Spot", options: [])) == ["Spot"])
        #expect(try titles(context, .hasPrefix(\.title, "SPOT")) == ["Spot", "spotted dick"])
        #expect(try titles(context, .equals(\.title, "spot")) == ["Spot"])
        #expect(try titles(context, .equals(\.title, "spot", options: [])).isEmpty)
        #expect(
            try titles(
                context,
                .hasPrefix(\.title, "cafe", options: [.caseInsensitive, .diacriticInsensitive])
            )
                == ["Café", "Cafe\u{301} au lait"]
        )
        #expect(try titles(context, .contains(\.title, "")).count == Self.titles.count)
        #expect(try titles(context, .equals(\.title, "")) == [""])
    }

    @Test("every title and search agrees with Foundation's range(of:options:)")
    func agreesWithFoundation() throws {
        let (_, context) = try makeDishes()
        let searches = [
            "cr", "CRE", "e", "é", "É", "k", "K", "ale", "ss", "au l", "zz", "e\u{301}",
        ]
        let optionSets: [TextMatch<Dish>.Options] = [
            [], .caseInsensitive, .diacriticInsensitive, [.caseInsensitive, .diacriticInsensitive],
        ]
        for text in searches {
            for options in optionSets {
                var foundation: String.CompareOptions = []
                if options.contains(.caseInsensitive) { foundation.insert(.caseInsensitive) }
                if options.contains(.diacriticInsensitive) {
                    foundation.insert(.diacriticInsensitive)
                }
                let expected = Self.titles.filter { $0.range(of: text, options: foundation) != nil }
                let found = try titles(context, .contains(\.title, text, options: options))
                #expect(found == expected, "contains \(text) \(options.rawValue)")
                let prefixes = Self.titles.filter {
                    $0.range(of: text, options: foundation.union(.anchored)) != nil
                }
                let foundPrefixes = try titles(context, .hasPrefix(\.title, text, options: options))
                #expect(foundPrefixes == prefixes, "hasPrefix \(text) \(options.rawValue)")
            }
        }
    }

    @Test("the word-at-a-time search agrees with Foundation on random ASCII text")
    func randomASCII() {
        // Letters of both cases and the bytes next to them ('@', '[', '`', '{'), whose bit 5
        // differs, so that case folding cannot be confused with them; lengths across several
        // eight-byte words and their tails.
        let alphabet = Array("aAbBzZ@[`{0 ~".utf8)
        let seed = UInt64(Date().timeIntervalSince1970)
        var generator = SeededGenerator(seed: seed)
        var mismatches: [String] = []
        for _ in 0..<4_000 {
            let length = Int(generator.next() % 40)
            let value = String(
                decoding: (0..<length).map { _ in alphabet[Int(generator.next() % 13)] },
                as: UTF8.self
            )
            let needleLength = 1 + Int(generator.next() % 3)
            let needle = String(
                decoding: (0..<needleLength).map { _ in alphabet[Int(generator.next() % 13)] },
                as: UTF8.self
            )
            for options in [TextMatchOptions(), .caseInsensitive] {
                let matcher = TextMatcher(text: needle, kind: .contains, options: options)
                var foundation: String.CompareOptions = []
                if options.contains(.caseInsensitive) { foundation.insert(.caseInsensitive) }
                let expected = value.range(of: needle, options: foundation) != nil
                if matcher.matches(value) != expected, mismatches.count < 5 {
                    mismatches.append("'\(value)' contains '\(needle)' \(options.rawValue)")
                }
            }
        }
        #expect(mismatches.isEmpty, "seed \(seed): \(mismatches)")
    }

    @Test("a text match is and-ed with the predicate, sorts, limits, counts and fetches IDs")
    func combinesWithTheRequest() throws {
        let (_, context) = try makeDishes()
        let match = TextMatch<Dish>.contains(\.title, "e", options: [.caseInsensitive])
        // What Foundation finds, by servings (each title's position).
        let withE = Self.titles.indices.filter {
            Self.titles[$0].range(of: "e", options: .caseInsensitive) != nil
        }
        #expect(withE.count > 4 && withE.count < Self.titles.count - 2)
        // Compiled predicate.
        #expect(
            try titles(context, match, predicate: #Predicate { $0.servings >= 2 })
                == withE.filter { $0 >= 2 }.map { Self.titles[$0] }
        )
        // A predicate Foundation evaluates (a string method).
        #expect(
            try titles(context, match, predicate: #Predicate { $0.title.contains("a") })
                == withE.map { Self.titles[$0] }.filter { $0.contains("a") }
        )
        var sorted = FetchRequest<Dish>(
            sortBy: [SortDescriptor(\.servings, order: .reverse)],
            fetchLimit: 2,
            textMatch: match
        )
        #expect(try context.fetch(sorted).map(\.servings) == Array(withE.reversed().prefix(2)))
        sorted.fetchLimit = nil
        #expect(try context.count(sorted) == withE.count)
        let startsWithC = Self.titles.filter {
            $0.range(of: "c", options: [.caseInsensitive, .anchored]) != nil
        }
        #expect(
            try context.count(FetchRequest<Dish>(textMatch: .hasPrefix(\.title, "c")))
                == startsWithC.count
        )
        let identifiers = try context.fetchIdentifiers(
            FetchRequest<Dish>(textMatch: .equals(\.title, "KALE"))
        )
        // "kale", and "\u{212A}ale", whose Kelvin sign folds to "k" as Foundation folds it.
        #expect(identifiers.count == 2)
    }

    @Test("unsaved inserts and changes count; a registered object is matched by its values")
    func pendingChanges() throws {
        let (_, context) = try makeDishes()
        let spot = try #require(
            try context.fetch(FetchRequest<Dish>(textMatch: .equals(\.title, "Spot"))).first
        )
        spot.title = "Blot"
        let added = Dish(context: context)
        added.title = "Spotlight"
        let request = FetchRequest<Dish>(textMatch: .hasPrefix(\.title, "spot"))
        #expect(try context.fetch(request).map(\.title) == ["spotted dick", "Spotlight"])
        #expect(try context.count(request) == 2)
        var saved = request
        saved.includesPendingChanges = false
        #expect(
            try context.fetch(saved).map(\.title).sorted() == ["Blot", "spotted dick"].sorted()
        )
    }

    @Test("counts on two threads agree with the fetches, registered and pending objects too")
    func parallelCounts() throws {
        let (_, context) = try makeDishes()
        // Every record counts through the parallel path (its threshold is the store's size).
        context.tuning.parallelDecodingThreshold = 2
        let matches: [TextMatch<Dish>] = [
            .contains(\.title, "cr"), .contains(\.title, "K"), .hasPrefix(\.title, "spot"),
            .contains(\.title, "e", options: .diacriticInsensitive), .equals(\.title, "kale"),
            .contains(\.title, "ss", options: [.caseInsensitive, .diacriticInsensitive]),
        ]
        func check(_ label: String) throws {
            for match in matches {
                for pending in [true, false] {
                    var request = FetchRequest<Dish>(textMatch: match)
                    request.includesPendingChanges = pending
                    let fetched = try context.fetch(request).count
                    let counted = try context.count(request)
                    #expect(
                        counted == fetched,
                        "\(label), \(match), pending \(pending): \(counted) != \(fetched)"
                    )
                }
            }
        }
        try check("saved objects only")
        // A loaded object changed, an inserted one, a deleted one.
        let spot = try #require(
            try context.fetch(FetchRequest<Dish>(textMatch: .equals(\.title, "Spot"))).first
        )
        spot.title = "Blot"
        Dish(context: context).title = "Spotlight"
        let kale = try #require(
            try context.fetch(FetchRequest<Dish>(textMatch: .equals(\.title, "kale"))).first
        )
        context.delete(kale)
        try check("with unsaved changes")
        #expect(context.statistics.parallelTextCounts > 0)
    }

    @Test("a key path that is not a String attribute is refused")
    func refusesOtherKeyPaths() throws {
        let (_, context) = try makeDishes()
        let computed = FetchRequest<Dish>(textMatch: .contains(\.title.localizedCapitalized, "x"))
        #expect(throws: ObjectLogError.self) { try context.fetch(computed) }
    }
}
