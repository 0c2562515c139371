import Foundation
import ObjectLog
import TestSupport
import Testing

// The classes of the "Migrating your model" article (ObjectLog.docc/MigratingYourModel.md),
// exactly as the article shows them: `articleCodeIsHere` fails when the two differ.

enum ArticleVersion1 {
    final class Recipe: ManagedObject {
        @Attribute var title = ""
        @Attribute var servings: Int8 = 2
        @Attribute var rating: Float = 0
        @Attribute var notes: String? = nil
        @Attribute var source = ""
        @Attribute var photo = Data()
        override class var entityName: String { "Recipe" }
    }
}

enum ArticleVersion2 {
    final class Dish: ManagedObject {
        // A renamed property: declare its earlier name.
        @Attribute(originalName: "title") var name = ""
        // Numeric widening: Int8 to Int64, Float to Double.
        @Attribute var servings: Int64 = 2
        @Attribute var rating: Double = 0
        // Optional to required: earlier nils take the default.
        @Attribute var notes = ""
        // Required to optional.
        @Attribute var source: String? = nil
        // External storage turned on.
        @Attribute(.externalStorage) var photo = Data()
        // A new attribute: earlier objects take its default.
        @Attribute var isFavorite = false
        // A new relationship: earlier objects have no destinations.
        @Relationship var variants: Set<Dish>
        // A renamed entity: declare its earlier name.
        override class var entityName: String { "Dish" }
        override class var originalEntityName: String? { "Recipe" }
    }
}

/// An entity of version 1 that the article's later version removes.
final class ArticleIngredient: ManagedObject {
    @Attribute var name = ""
    override class var entityName: String { "Ingredient" }
}

@Suite("The migration article's example")
struct MigrationArticleTests {
    @Test("what migration will never do: the article's removal, preview and manual-only blocks")
    func neverDoes() throws {
        typealias Dish = ArticleVersion2.Dish
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        try writeStore(at: path, for: [ArticleVersion1.Recipe.self, ArticleIngredient.self]) {
            context in
            ArticleVersion1.Recipe(context: context).title = "Soup"
            for name in ["salt", "leek", "water"] {
                ArticleIngredient(context: context).name = name
            }
        }
        let before = directory.fileContents()
        #expect {
            _ = try PersistentContainer(path: path, for: [Dish.self])
        } throws: { error in
            (error as? ObjectLogError)?.message.hasSuffix(
                "entity 'Ingredient' was removed: deletes its 3 object(s); declare the removal "
                    + "(removing: [\"Ingredient\"]) to delete them, or keep it in the model"
            ) == true
        }
        #expect(directory.fileContents() == before)
        // As in the article:
        let preview = try PersistentContainer.migrationPreview(at: path, for: [Dish.self])
        // One line each: "entity 'Dish' was renamed from 'Recipe': 40 object(s) keep their values"
        for change in preview.changes { print(change) }
        if preview.outcome == .refused {
            print(preview.refusals.joined(separator: "\n"))
        }
        #expect(preview.outcome == .refused)
        #expect(
            preview.changes.contains {
                $0.description
                    == "entity 'Dish' was renamed from 'Recipe': 1 object(s) keep their values"
            }
        )
        #expect(directory.fileContents() == before)
        // As in the article:
        let container = try PersistentContainer(
            path: path,
            for: [Dish.self],
            removing: ["Ingredient", "Dish.calories"]
        )
        #expect(try container.newContext().fetch(Dish.self).map(\.name) == ["Soup"])
        try container.close()
        try manualOnly(path: path)
    }

    /// The article's open that migrates only through a plan, of a store at the plan's version.
    func manualOnly(path: String) throws {
        let plan = MigrationPlan(
            versions: [ModelVersion("2", [ArticleVersion2.Dish.self])],
            stages: []
        )
        // As in the article:
        let container = try PersistentContainer(
            path: path,
            plan: plan,
            migratesStoreAutomatically: false
        )
        try container.close()
    }

    @Test("version 1's store opens with version 2 as the article says")
    func articleExample() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        try writeStore(at: path, for: [ArticleVersion1.Recipe.self]) { context in
            let recipe = ArticleVersion1.Recipe(context: context)
            recipe.title = "Soup"
            recipe.servings = 4
            recipe.rating = 4.5
            recipe.source = "grandmother"
            recipe.photo = Data([1, 2, 3])
        }
        let container = try PersistentContainer(path: path, for: [ArticleVersion2.Dish.self])
        let dish = try #require(try container.newContext().fetch(ArticleVersion2.Dish.self).first)
        #expect(dish.name == "Soup")
        #expect(dish.servings == 4)
        #expect(dish.rating == 4.5)
        #expect(dish.notes == "")
        #expect(dish.source == "grandmother")
        #expect(dish.photo == Data([1, 2, 3]))
        #expect(dish.isFavorite == false)
        #expect(dish.variants.isEmpty)
        try container.close()
    }

    @Test("every Swift block of the article is in this file as written")
    func articleCodeIsHere() throws {
        // The classes sit in the version enums; the plans in the test functions below.
        let classes = try articleCodeBlocks("MigratingYourModel.md", asIn: #filePath)
        let plans = try articleCodeBlocks(
            "MigratingYourModel.md",
            asIn: #filePath,
            indentation: 8
        )
        #expect(classes.blocks.count == 7)
        let expected = Array(classes.blocks.prefix(2)) + plans.blocks.dropFirst(2)
        for block in expected {
            #expect(classes.source.contains(block), "not in this file: \(block.prefix(44))")
        }
    }
}

// The migration plan examples of the same article (checked by `articleCodeIsHere` above).

final class RecipeV1: ManagedObject {
    @Attribute var servings = ""
    override class var entityName: String { "Recipe" }
}

final class RecipeV2: ManagedObject {
    @Attribute var servings = 0
    override class var entityName: String { "Recipe" }
}

@Suite("The migration article's plan example")
struct MigrationArticlePlanTests {
    /// Writes a store of version 1 at `path`: a recipe for each of `servings`, in order.
    func writeVersion1(at path: String, servings: [String]) throws {
        try writeStore(at: path, for: [RecipeV1.self]) { context in
            for text in servings {
                RecipeV1(context: context).servings = text
            }
        }
    }

    @Test("servings kept as text become a number through the article's custom stage")
    func planExample() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        try writeVersion1(at: path, servings: ["4 people"])
        // As in the article:
        let plan = MigrationPlan(
            versions: [ModelVersion("1", [RecipeV1.self]), ModelVersion("2", [RecipeV2.self])],
            stages: [
                .custom(from: "1", to: "2") { migration in
                    // Version 1 kept servings as text ("4 people"); version 2 keeps a number.
                    for old in try migration.oldObjects("Recipe") {
                        guard case .string(let text)? = old["servings"] else { continue }
                        let number = Int(text.prefix { $0.isNumber }) ?? 1
                        try migration.newObject(for: old, as: RecipeV2.self)?.servings = number
                    }
                }
            ]
        )
        let container = try PersistentContainer(path: path, plan: plan)
        #expect(try container.newContext().fetch(RecipeV2.self).map(\.servings) == [4])
        try container.close()
    }

    @Test("the article's rewriting stage makes the same change")
    func rewriteExample() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        try writeVersion1(at: path, servings: ["4 people", "a dozen"])
        // As in the article:
        let plan = MigrationPlan(
            versions: [ModelVersion("1", [RecipeV1.self]), ModelVersion("2", [RecipeV2.self])],
            stages: [
                .rewrite(
                    from: "1",
                    to: "2",
                    entities: [
                        "Recipe": { old, new in
                            guard case .string(let text)? = old["servings"] else { return }
                            new["servings"] = .int(Int64(text.prefix { $0.isNumber }) ?? 1)
                        }
                    ]
                )
            ]
        )
        let container = try PersistentContainer(path: path, plan: plan)
        #expect(try container.newContext().fetch(RecipeV2.self).map(\.servings).sorted() == [1, 4])
        try container.close()
    }
}
