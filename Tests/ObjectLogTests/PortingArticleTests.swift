import Foundation
import ObjectLog
import TestSupport
import Testing

// The code of the article "Porting from Core Data and SwiftData"
// (ObjectLog.docc/PortingFromCoreDataAndSwiftData.md), exactly as the article shows it, in a
// namespace of its own (its functions made static); keep the two the same.
enum PortingArticle {
    final class Recipe: ManagedObject {
        @Attribute(.unique) var title = ""
        @Attribute var servings = 2
        @Attribute(.externalStorage) var photo = Data()
        @Relationship(inverse: \Ingredient.recipe, deleteRule: .cascade)
        var ingredients: Set<Ingredient>
    }

    final class Ingredient: ManagedObject {
        @Attribute var name = ""
        @Relationship var recipe: Recipe?
    }

    static func coreDataStyle(path: String) throws -> [String] {
        // NSPersistentContainer(name:) and loadPersistentStores, in one throwing call.
        let container = try PersistentContainer(path: path, for: [Recipe.self, Ingredient.self])
        let context = container.newContext()

        let soup = Recipe(context: context)
        soup.title = "Soup"
        soup.servings = 4
        let leek = Ingredient(context: context)
        leek.name = "Leek"
        leek.recipe = soup  // soup.ingredients follows, as in Core Data
        try context.save()

        // NSFetchRequest with NSPredicate and NSSortDescriptor, typed and checked by the compiler.
        let request = FetchRequest<Recipe>(
            predicate: #Predicate { $0.servings >= 2 },
            sortBy: [SortDescriptor(\.title)]
        )
        let titles = try context.fetch(request).map(\.title)

        // existingObject(with:), without the cast.
        let other = container.newContext()
        let again = try other.existingObject(with: soup.objectID, as: Recipe.self)
        return titles + [again.ingredients.first?.name ?? "none"]
    }

    static func swiftDataStyle(path: String) throws -> Int {
        let container = try ModelContainer(path: path, for: [Recipe.self, Ingredient.self])
        let context = ModelContext(container: container)

        // SwiftData: let bread = Recipe(); context.insert(bread). That works too (`try`).
        let bread = Recipe()
        try context.insert(bread)
        bread.title = "Bread"
        try context.save()

        var descriptor = FetchDescriptor<Recipe>(predicate: #Predicate { $0.title == "Bread" })
        descriptor.sortBy = [SortDescriptor(\.title)]
        descriptor.fetchLimit = 1
        let found = try context.fetch(descriptor)
        return try context.fetchCount(FetchDescriptor<Recipe>()) + found.count
    }

    struct OutOfStock: Error {}

    static func savingReportsTheCause(path: String) throws -> String {
        let container = try PersistentContainer(path: path, for: [Recipe.self, Ingredient.self])
        let context = container.newContext()
        context.onWillSave { _ in throw OutOfStock() }
        _ = Recipe(context: context)
        do {
            try context.save()
            return "saved"
        } catch {
            return error.underlyingError is OutOfStock ? error.localizedDescription : "other"
        }
    }
}

@Suite("The porting article's examples")
struct PortingArticleTests {
    @Test("the Core Data example saves, fetches and looks up as the article says")
    func coreDataStyle() throws {
        let directory = TemporaryDirectory()
        let result = try PortingArticle.coreDataStyle(path: directory.file("recipes.objectlog"))
        #expect(result == ["Soup", "Leek"])
    }

    @Test("the SwiftData example reads with SwiftData's names")
    func swiftDataStyle() throws {
        let directory = TemporaryDirectory()
        #expect(try PortingArticle.swiftDataStyle(path: directory.file("recipes.objectlog")) == 2)
    }

    @Test("the error example finds the handler's error and prints the message")
    func errors() throws {
        let directory = TemporaryDirectory()
        let message = try PortingArticle.savingReportsTheCause(
            path: directory.file("recipes.objectlog")
        )
        #expect(message == "a will-save handler failed: OutOfStock()")
    }

    @Test("this file holds every code block of the article, as the article shows it")
    func articleMatchesThisFile() throws {
        let (blocks, source) = try articleCodeBlocks(
            "PortingFromCoreDataAndSwiftData.md",
            asIn: #filePath
        )
        #expect(blocks.count == 4)
        for expected in blocks {
            #expect(source.contains(expected), "not in this file: \(expected.prefix(44))")
        }
    }
}
