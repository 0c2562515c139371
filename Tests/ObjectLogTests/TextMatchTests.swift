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

/// An entity whose searched `title` follows attributes of many kinds, each skipped first.
final class Menu: ManagedObject {
    @Attribute var rating: Int?
    @Attribute var price = 0.0
    @Attribute var served: Date?
    @Attribute var isOpen = false
    @Attribute var identifier: UUID?
    @Attribute var picture = Data()
    @Attribute var note: String?
    @Attribute var small: Int8 = 0
    @Attribute var weight: Float = 0
    @Attribute var title = ""
    @Attribute var courses = 1
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
        context.tracer = ContextTracer()
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

    @Test(
        "with a predicate the columns decide, a text match reads only their candidates and finds what a filter of every object finds",
        arguments: [false, true]
    )
    func narrowedByColumns(withChanges: Bool) throws {
        let container = try PersistentContainer.inMemory(for: [Dish.self])
        let words = [
            "Crème", "brûlée", "creamy", "soup", "Spot", "kale", "Straße", "Café", "salad",
        ]
        var generator = SeededGenerator(seed: 11)
        // What the context should see, by note (each dish's own).
        var model: [String: (title: String, servings: Int)] = [:]
        let writer = container.newContext()
        for index in 0..<1_200 {
            let first = words[Int(generator.next() % UInt64(words.count))]
            let second = words[Int(generator.next() % UInt64(words.count))]
            let dish = Dish(context: writer)
            dish.note = "n" + String(1_000_000 + index).dropFirst()
            dish.title = index % 2 == 0 ? first : first + " " + second
            dish.servings = Int(generator.next() % 60)
            model[dish.note] = (dish.title, dish.servings)
        }
        try writer.save()
        // Each about a tenth of the dishes, so that a combination's fetches register few.
        let predicates: [(Predicate<Dish>, (Int) -> Bool)] = [
            (#Predicate { $0.servings < 6 }, { $0 < 6 }),
            (#Predicate { $0.servings >= 20 && $0.servings < 26 }, { $0 >= 20 && $0 < 26 }),
            (#Predicate { !($0.servings < 54) }, { !($0 < 54) }),
        ]
        let matches: [(TextMatch<Dish>, (String) -> Bool)] = [
            (.contains(\.title, "re"), { $0.range(of: "re", options: .caseInsensitive) != nil }),
            (
                .hasPrefix(\.title, "s"),
                { $0.range(of: "s", options: [.caseInsensitive, .anchored]) != nil }
            ),
            (
                .contains(\.title, "e", options: .diacriticInsensitive),
                { $0.range(of: "e", options: .diacriticInsensitive) != nil }
            ),
            (
                .equals(\.title, "KALE"),
                { $0.compare("KALE", options: .caseInsensitive) == .orderedSame }
            ),
        ]
        for (number, (predicate, selects)) in predicates.enumerated() {
            for (textNumber, (match, finds)) in matches.enumerated() {
                let label = "predicate \(number), text match \(textNumber), changes \(withChanges)"
                let context = container.newContext()
                context.tracer = ContextTracer()
                var seen = model
                if withChanges {
                    // Registered objects changed into and out of the predicates, deleted ones
                    // that match them, and inserted ones: the columns leave all to the scan.
                    let changed = try context.fetch(
                        FetchRequest<Dish>(predicate: #Predicate { $0.servings == 30 })
                    )
                    #expect(changed.count > 3)
                    for (index, dish) in changed.enumerated() {
                        dish.title = index % 2 == 0 ? "Spot soup" : "creamy kale"
                        dish.servings = [3, 22, 57][index % 3]
                        seen[dish.note] = (dish.title, dish.servings)
                    }
                    for servings in [4, 23, 58] {
                        let saved = try context.fetch(
                            FetchRequest<Dish>(predicate: #Predicate { $0.servings == servings })
                        )
                        #expect(saved.count > 3)
                        for (index, dish) in saved.prefix(4).enumerated() {
                            if index % 2 == 0 {
                                context.delete(dish)
                                seen[dish.note] = nil
                            } else {
                                dish.servings = 40
                                seen[dish.note] = (dish.title, 40)
                            }
                        }
                    }
                    for (index, title) in ["salad crème", "kale"].enumerated() {
                        let dish = Dish(context: context)
                        dish.note = "p\(index)"
                        dish.title = title
                        dish.servings = [2, 55][index]
                        seen[dish.note] = (title, dish.servings)
                    }
                }
                let expected = seen.filter { selects($0.value.servings) && finds($0.value.title) }
                    .sorted { ($0.value.servings, $1.key) > ($1.value.servings, $0.key) }
                #expect(expected.count >= 3 && expected.count < 200, "\(label): \(expected.count)")
                let before = context.statistics.columnScans
                // The windows first, while few objects are registered (the columns leave
                // registered objects to the scan, so they would hide a candidate missed).
                // Unique values: the best four by the column alone are seldom the best four that
                // also match the text.
                var request = FetchRequest<Dish>(
                    predicate: predicate,
                    sortBy: [SortDescriptor(\.note, order: .reverse)],
                    fetchLimit: 4,
                    textMatch: match
                )
                #expect(
                    try context.fetch(request).map(\.note)
                        == Array(expected.map(\.key).sorted(by: >).prefix(4)),
                    "\(label)"
                )
                request.sortDescriptors = [
                    SortDescriptor(\.servings, order: .reverse), SortDescriptor(\.note),
                ]
                request.fetchLimit = 5
                request.fetchOffset = 2
                #expect(
                    try context.fetch(request).map(\.note)
                        == expected.dropFirst(2).prefix(5).map(\.key),
                    "\(label)"
                )
                #expect(try context.count(request) == min(5, expected.count - 2), "\(label)")
                request.sortDescriptors = [SortDescriptor(\.servings)]
                request.fetchOffset = 0
                request.fetchLimit = 3
                #expect(
                    try context.fetch(request).map(\.servings)
                        == expected.reversed().prefix(3).map(\.value.servings),
                    "\(label)"
                )
                request = FetchRequest<Dish>(predicate: predicate, textMatch: match)
                #expect(try context.count(request) == expected.count, "\(label)")
                #expect(try context.fetchIdentifiers(request).count == expected.count, "\(label)")
                #expect(
                    try context.fetch(request).map(\.note).sorted() == expected.map(\.key).sorted(),
                    "\(label)"
                )
                #expect(context.statistics.columnScans - before == 7, "\(label)")
                // Without a predicate the columns are not used: they would pick the best
                // servings without the text match.
                let unfiltered = seen.filter { finds($0.value.title) }.map(\.value.servings)
                let scans = context.statistics.columnScans
                let best = try context.fetch(
                    FetchRequest<Dish>(
                        sortBy: [SortDescriptor(\.servings)],
                        fetchLimit: 3,
                        textMatch: match
                    )
                )
                #expect(best.map(\.servings) == Array(unfiltered.sorted().prefix(3)), "\(label)")
                #expect(context.statistics.columnScans == scans, "\(label)")
            }
        }
    }

    @Test("a record's bytes read directly give the reader's answer, damaged bytes too")
    func bytesReadDirectlyMatchAlike() throws {
        let model = try ManagedObjectModel([Menu.self])
        let entity = try #require(model.entity(for: Menu.self))
        let titleIndex = try #require(entity.schema.properties.firstIndex { $0.name == "title" })
        let shapes = entity.schema.properties.map(ValueShape.init)
        var random = SeededGenerator(seed: 0x7E47)
        let alphabet = Array("aAbB@[".utf8)
        var compared = 0
        var matched = 0
        var undecided = 0
        let kinds: [(KeyPath<Menu, String>, String, TextMatchOptions) -> TextMatch<Menu>] = [
            TextMatch.contains, TextMatch.hasPrefix, TextMatch.equals,
        ]
        for kind in kinds {
            for options in [TextMatchOptions(), .caseInsensitive] {
                let search = try #require(kind(\Menu.title, "aB", options).compile(for: entity))
                #expect(search.quickSkips?.count == titleIndex)
                let throughReader = CompiledTextMatch(
                    accessor: search.accessor,
                    matcher: search.matcher,
                    propertyCount: search.propertyCount,
                    quickSkips: nil
                )
                for _ in 0..<1_000 {
                    var bytes = [UInt8(shapes.count)]
                    for shape in shapes[..<titleIndex] {
                        bytes += RandomEncoding.value(of: shape, using: &random)
                    }
                    // Letters of both cases and their neighbours; not ASCII now and then.
                    var title = (0..<Int.random(in: 0...6, using: &random)).map { _ in
                        alphabet[Int.random(in: 0..<alphabet.count, using: &random)]
                    }
                    if Int.random(in: 0..<10, using: &random) == 0 { title += Array("é".utf8) }
                    bytes += [UInt8(title.count)] + title
                    for shape in shapes[(titleIndex + 1)...] {
                        bytes += RandomEncoding.value(of: shape, using: &random)
                    }
                    // Cut short, a wrong property count, or a title longer than the bytes.
                    switch Int.random(in: 0..<8, using: &random) {
                    case 0: bytes.removeLast(Int.random(in: 0...bytes.count, using: &random))
                    case 1: bytes[0] += 1
                    case 2: bytes = Array(bytes.prefix(bytes.count - title.count))
                    default: break
                    }
                    let expected = bytes.withUnsafeBytes {
                        throughReader.test(payload: $0, entity: entity)
                    }
                    let direct = bytes.withUnsafeBytes { search.test(payload: $0, entity: entity) }
                    #expect(direct == expected, "\(bytes)")
                    compared += 1
                    if expected == true { matched += 1 }
                    if expected == nil { undecided += 1 }
                }
            }
        }
        #expect(compared == 6_000)
        // Every outcome occurs often: matches, misses and bytes that cannot tell.
        #expect(matched > 100 && undecided > 1_000 && compared - matched - undecided > 1_000)
    }

    @Test("#Predicate's contains and starts(with:) compiled agree with Foundation's, by character")
    func predicateTextAgreesWithFoundation() throws {
        // Pieces that make ASCII and non-ASCII text, a CR LF (one character of two bytes) and
        // an "e" that a combining accent joins.
        let pieces = ["a", "b", "A", "\r", "\n", "\r\n", "e", "\u{301}", "é", " "]
        let seed = UInt64(Date().timeIntervalSince1970)
        var random = SeededGenerator(seed: seed)
        func text(_ count: ClosedRange<Int>) -> String {
            (0..<Int.random(in: count, using: &random)).map { _ in
                pieces[Int.random(in: 0..<pieces.count, using: &random)]
            }.joined()
        }
        let dish = Dish()
        var mismatches: [String] = []
        var matched = 0
        for _ in 0..<2_000 {
            dish.title = text(0...8)
            let needle = text(1...3)
            let contains = #Predicate<Dish> { $0.title.contains(needle) }
            let starts = #Predicate<Dish> { $0.title.starts(with: needle) }
            for (kind, predicate) in [(TextMatchKind.contains, contains), (.prefix, starts)] {
                let expected = try predicate.evaluate(dish)
                let matcher = TextMatcher(
                    text: needle,
                    kind: kind,
                    options: [],
                    characterwise: true
                )
                if matcher.matches(dish.title) != expected, mismatches.count < 5 {
                    mismatches.append(
                        "\(dish.title.debugDescription) \(kind) \(needle.debugDescription)"
                    )
                }
                if expected { matched += 1 }
            }
        }
        #expect(mismatches.isEmpty, "seed \(seed): \(mismatches)")
        #expect(matched > 200)
    }

    @Test("a predicate of one contains or starts(with:) runs as a text match, alone or in parts")
    func predicateRunsAsTextMatch() throws {
        let (container, context) = try makeDishes()
        let entity = try #require(container.model.entity(for: Dish.self))
        let needle = "e"
        let predicates: [Predicate<Dish>] = [
            #Predicate { $0.title.contains("re") }, #Predicate { $0.title.contains(needle) },
            #Predicate { $0.title.starts(with: "Caf") },
            // Every value contains "" to a predicate (to `String.contains`, none does).
            #Predicate { $0.title.contains("") },
        ]
        /// The titles of the dishes `predicate` holds for, as Foundation evaluates it on
        /// unsaved objects.
        func expected(_ predicate: Predicate<Dish>) throws -> [String] {
            try Self.titles.enumerated().filter { index, title in
                let dish = Dish()
                (dish.note, dish.title, dish.servings) = ("note \(index)", title, index)
                return try predicate.evaluate(dish)
            }.map(\.element)
        }
        // Every record goes through the counts on two threads (their threshold is the store's
        // size).
        context.tracer = ContextTracer()
        context.tuning.parallelDecodingThreshold = 2
        for predicate in predicates {
            #expect(PredicateCompiler.compileWithReads(predicate, entity: entity)?.text != nil)
            let request = FetchRequest(predicate: predicate)
            #expect(try context.fetch(request).map(\.title) == expected(predicate))
            #expect(try context.count(request) == expected(predicate).count)
        }
        #expect(context.statistics.parallelTextCounts == predicates.count)
        // Unsaved changes count, as with any predicate: an insert, and a saved dish changed.
        let pending = Dish(context: context)
        pending.title = "pending crepe"
        let spot = try #require(
            try context.fetch(FetchRequest<Dish>(predicate: #Predicate { $0.title == "Spot" }))
                .first
        )
        spot.title = "Spot, fresh"
        let re = FetchRequest<Dish>(predicate: #Predicate { $0.title.contains("re") })
        let found = try context.fetch(re).map(\.title)
        #expect(found.contains("pending crepe") && found.contains("Spot, fresh"))
        #expect(try context.count(re) == found.count)
        #expect(found.count == (try expected(predicates[0]).count) + 2)
        context.rollback()
        // Combined with a comparison, or between two attributes, it is a condition like any
        // other; the second is not a text match (there is no constant to search for).
        let combined = #Predicate<Dish> { $0.servings > 3 && $0.title.contains("e") }
        #expect(
            try context.fetch(FetchRequest(predicate: combined)).map(\.title) == expected(combined)
        )
        let between = #Predicate<Dish> { $0.note.contains($0.title) }
        let compiled = try #require(PredicateCompiler.compileWithReads(between, entity: entity))
        #expect(compiled.text == nil)
        #expect(
            try context.fetch(FetchRequest(predicate: between)).map(\.title) == expected(between)
        )
        #expect(try expected(between) == [""])
    }

    @Test("batch requests find their objects by a #Predicate contains through the text match")
    func batchRequestsByTextPredicate() throws {
        let (container, context) = try makeDishes()
        let withE = #Predicate<Dish> { $0.title.contains("e") }
        let caf = #Predicate<Dish> { $0.title.starts(with: "Caf") }
        /// The titles `predicate` holds for, as Foundation evaluates it.
        func titles(_ predicate: Predicate<Dish>) throws -> Set<String> {
            Set(
                try Self.titles.filter { title in
                    let dish = Dish()
                    dish.title = title
                    return try predicate.evaluate(dish)
                }
            )
        }
        let updated = try context.execute(
            BatchUpdateRequest(predicate: withE, updates: [.set(\.servings, to: 100)])
        )
        #expect(updated.updated.count == (try titles(withE)).count)
        let deleted = try context.execute(BatchDeleteRequest(predicate: caf))
        // "Café" and "Cafe\u{301} au lait": by character, both start with "Caf".
        #expect(deleted.deleted.count == 2)
        let left = try container.newContext().fetch(FetchRequest<Dish>())
        #expect(Set(left.map(\.title)) == Set(Self.titles).subtracting(try titles(caf)))
        #expect(
            Set(left.filter { $0.servings == 100 }.map(\.title))
                == (try titles(withE)).subtracting(try titles(caf))
        )
    }

    @Test("a key path that is not a String attribute is refused")
    func refusesOtherKeyPaths() throws {
        let (_, context) = try makeDishes()
        let computed = FetchRequest<Dish>(textMatch: .contains(\.title.localizedCapitalized, "x"))
        #expect(throws: ObjectLogError.self) { try context.fetch(computed) }
    }
}
