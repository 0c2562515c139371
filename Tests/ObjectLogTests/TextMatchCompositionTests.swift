import Foundation
import TestSupport
import Testing

@testable import ObjectLog

/// An entity with an optional string to search beside a plain one.
final class Recipe: ManagedObject {
    @Attribute var title = ""
    @Attribute var notes: String? = nil
    @Attribute var servings = 2
}

@Suite("Text matches on optional strings, combined with each other and with predicates")
struct TextMatchCompositionTests {
    static let texts: [String?] = [
        nil, "Crème brûlée", "spotted", "SPOT on", "", "kale", "Café au lait", nil, "spot",
    ]

    /// Saved recipes for every pair of texts, and a few unsaved changes.
    func makeRecipes() throws -> (PersistentContainer, ManagedObjectContext) {
        let container = try PersistentContainer.inMemory(for: [Recipe.self])
        let context = container.newContext()
        for (index, title) in Self.texts.enumerated() {
            for (other, notes) in Self.texts.enumerated() {
                let recipe = Recipe(context: context)
                recipe.title = title ?? "none"
                recipe.notes = notes
                recipe.servings = (index + other) % 5
            }
        }
        try context.save()
        // Unsaved: an insert, a change into a match and one out of it, a delete.
        let inserted = Recipe(context: context)
        inserted.notes = "new spot"
        let recipes = try context.fetch(Recipe.self)
        recipes[3].notes = "spot"
        recipes[10].title = "nothing"
        context.delete(recipes[12])
        return (container, context)
    }

    func contains(_ value: String?, _ text: String) -> Bool {
        guard let value else { return false }
        return value.range(of: text, options: [.caseInsensitive]) != nil
    }

    @Test("each combination selects what the same test in Swift selects, in fetch, count and IDs")
    func combinations() throws {
        let (_, context) = try makeRecipes()
        let all = try context.fetch(Recipe.self)
        let cases: [(TextMatch<Recipe>, (Recipe) -> Bool, String)] = [
            (.contains(\.notes, "spot"), { self.contains($0.notes, "spot") }, "optional"),
            (
                .hasPrefix(\.notes, "cr", options: [.caseInsensitive, .diacriticInsensitive]),
                {
                    $0.notes?.range(
                        of: "cr",
                        options: [.caseInsensitive, .diacriticInsensitive, .anchored]
                    ) != nil
                },
                "optional prefix"
            ),
            (.equals(\.notes, "KALE"), { $0.notes?.lowercased() == "kale" }, "optional equals"),
            (
                .contains(\.title, "spot") || .contains(\.notes, "spot"),
                { self.contains($0.title, "spot") || self.contains($0.notes, "spot") },
                "or"
            ),
            (
                .contains(\.title, "spot") && .contains(\.notes, "caf"),
                { self.contains($0.title, "spot") && self.contains($0.notes, "caf") },
                "and"
            ),
            (!.contains(\.notes, "spot"), { !self.contains($0.notes, "spot") }, "not"),
            (
                .contains(\.notes, "kale") || .matching(#Predicate { $0.servings == 4 }),
                { self.contains($0.notes, "kale") || $0.servings == 4 },
                "or a predicate"
            ),
            (
                .any([
                    .contains(\.title, "lait"),
                    .all([.contains(\.notes, "spot"), .matching(#Predicate { $0.servings < 2 })]),
                ]),
                {
                    self.contains($0.title, "lait")
                        || (self.contains($0.notes, "spot") && $0.servings < 2)
                },
                "nested"
            ),
        ]
        for (match, test, name) in cases {
            for predicate in [nil, #Predicate<Recipe> { $0.servings != 1 }] {
                let expected = all.filter { test($0) && (predicate == nil || $0.servings != 1) }
                var request = FetchRequest<Recipe>(predicate: predicate, textMatch: match)
                request.sortDescriptors = [SortDescriptor(\.servings)]
                let sorted = expected.sorted {
                    ($0.servings, $0.objectID.key) < ($1.servings, $1.objectID.key)
                }
                #expect(try context.fetch(request) == sorted, "\(name)")
                #expect(try context.count(request) == expected.count, "\(name)")
                #expect(
                    try context.fetchIdentifiers(request) == sorted.map(\.objectID),
                    "\(name)"
                )
                #expect(expected.count > 0 && expected.count < all.count, "\(name) decides")
            }
        }
    }

    @Test("a fresh context and a saved store give the same answers as the writing context")
    func savedAnswers() throws {
        let (container, context) = try makeRecipes()
        try context.save()
        let match: TextMatch<Recipe> = .contains(\.title, "spot") || .contains(\.notes, "spot")
        let request = FetchRequest<Recipe>(textMatch: match)
        let fresh = container.newContext()
        #expect(try fresh.count(request) == context.count(request))
        #expect(try fresh.fetchIdentifiers(request) == context.fetchIdentifiers(request))
    }

    @Test("a key path that is not a string attribute is refused")
    func notAString() throws {
        let (_, context) = try makeRecipes()
        let request = FetchRequest<Recipe>(
            textMatch: .contains(\.title, "a") || .contains(\.title.capitalized, "b")
        )
        #expect {
            _ = try context.fetch(request)
        } throws: { error in
            (error as? ObjectLogError)?.code == .invalidArgument
        }
    }
}
