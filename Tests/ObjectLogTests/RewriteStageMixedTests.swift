import Foundation
import ObjectLog
import ObjectLogStore
import TestSupport
import Testing

// Two entities saved interleaved, so every worker's share of a run holds both: the stage
// rewrites one, and the other's records, which no closure rewrites, are brought to the new
// version by the inferred mapping alone (an attribute added with a default).

enum MixedV1 {
    final class Recipe: ManagedObject {
        @Attribute var title = ""
        @Attribute var servings = ""
        override class var entityName: String { "Recipe" }
    }
    final class Cook: ManagedObject {
        @Attribute var name = ""
        override class var entityName: String { "Cook" }
    }
    static let version = ModelVersion("1", [Recipe.self, Cook.self])
}

enum MixedV2 {
    final class Recipe: ManagedObject {
        @Attribute var title = ""
        @Attribute var servings = 0
        override class var entityName: String { "Recipe" }
    }
    final class Cook: ManagedObject {
        @Attribute var name = ""
        @Attribute var stars = 3
        override class var entityName: String { "Cook" }
    }
    static let version = ModelVersion("2", [Recipe.self, Cook.self])
}

@Suite("Rewriting stages over entities the stage does not name")
struct RewriteStageMixedTests {
    @Test("records the stage declines take the new version's layout beside rewritten ones")
    func declinedRecordsFollowTheInferredMapping() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("kitchen.objectlog")
        // Enough records that both workers take a share of the run.
        let count = 4_000
        try writeStore(at: path, for: MixedV1.version.entities) { context in
            for index in 0..<count {
                let recipe = MixedV1.Recipe(context: context)
                recipe.title = "recipe \(index)"
                recipe.servings = "\(index) people"
                let cook = MixedV1.Cook(context: context)
                cook.name = "cook \(index)"
            }
        }
        let plan = MigrationPlan(
            versions: [MixedV1.version, MixedV2.version],
            stages: [
                .rewrite(
                    from: "1",
                    to: "2",
                    entities: [
                        "Recipe": { RewriteStageTests.servingsAsNumber($0, &$1, fallback: -1) }
                    ]
                )
            ]
        )
        let container = try PersistentContainer(path: path, plan: plan)
        let context = container.newContext()
        let recipes = try context.fetch(MixedV2.Recipe.self)
        let cooks = try context.fetch(MixedV2.Cook.self)
        #expect(recipes.count == count)
        #expect(cooks.count == count)
        let wrongRecipes = recipes.filter { recipe in
            recipe.title != "recipe \(recipe.servings)"
        }
        #expect(wrongRecipes.isEmpty)
        let missingCooks = Set((0..<count).map { "cook \($0)" }).subtracting(cooks.map(\.name))
        #expect(missingCooks.count == 0)
        let wrongStars = cooks.filter { $0.stars != 3 }.count
        #expect(wrongStars == 0)
        try container.close()
        // The store reopens with the new version as it is, and a later save lands.
        let reopened = try PersistentContainer(path: path, for: MixedV2.version.entities)
        let again = reopened.newContext()
        let cook = MixedV2.Cook(context: again)
        cook.name = "late"
        try again.save()
        #expect(try reopened.newContext().count(FetchRequest<MixedV2.Cook>()) == count + 1)
        try reopened.close()
    }
}
