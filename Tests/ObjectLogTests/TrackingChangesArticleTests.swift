import Foundation
import ObjectLog
import ObjectLogPostgreSQL
import Observation
import StoreTestSupport
import TestSupport
import Testing

// The code of the article "Tracking changes" (ObjectLog.docc/TrackingChanges.md), exactly as
// the article shows it, in a namespace so that its names do not clash with other tests'.
enum TrackingChangesArticle {
    final class Recipe: ManagedObject {
        @Attribute var title = ""
        @Relationship(inverse: \Step.recipe, deleteRule: .cascade) var steps: [Step]
    }

    final class Step: ManagedObject {
        @Attribute var text = ""
        @Relationship var recipe: Recipe?
    }

    static func renameAndUndo(_ recipe: Recipe, in context: ManagedObjectContext) -> [String] {
        context.undoManager = ContextUndoManager(levelsOfUndo: 20)
        let before = recipe.title
        recipe.title = "Soup"
        context.processPendingChanges()  // the end of a user action: one level of undo
        context.undo()  // recipe.title is back
        let undone = recipe.title
        context.redo()  // "Soup" again
        return [before, undone, recipe.title]
    }

    static func addStep(_ text: String, to recipe: Recipe, in context: ManagedObjectContext) {
        let manager = context.undoManager
        manager?.beginUndoGrouping()
        let step = Step(context: context)
        step.text = text
        step.recipe = recipe
        recipe.title += " (\(recipe.steps.count) steps)"
        manager?.endUndoGrouping()  // one undo takes back all three changes
    }

    static func deleteAndUndo(_ recipe: Recipe, in context: ManagedObjectContext) -> Int {
        context.delete(recipe)  // cascades to its steps
        context.undo()
        return recipe.steps.count  // the steps are back, each with its recipe
    }

    static func editInChild(_ recipe: Recipe, in context: ManagedObjectContext) throws -> String {
        let editor = context.newChildContext()
        let draft = try editor.object(with: recipe.objectID, as: Recipe.self)
        draft.title = "Tomato soup"
        let step = Step(context: editor)
        step.text = "Peel the tomatoes"
        step.recipe = draft
        try editor.save()  // into `context`, unsaved there
        try context.save()  // now in the store
        return recipe.title  // "Tomato soup"
    }

    static func recipeTitlesSaved(
        by reader: PersistentContainer,
        count: Int
    ) async throws -> [String] {
        var titles: [String] = []
        for try await transaction in reader.transactions() {
            for change in transaction.changes where change.objectID.entityName == "Recipe" {
                if case .string(let title)? = change.newValues["title"] { titles.append(title) }
            }
            if titles.count >= count { break }
        }
        return titles
    }

    @MainActor
    static func titlesBeforeAndAfter(
        _ change: () throws -> Void,
        in context: ManagedObjectContext
    ) async throws -> [[String]] {
        var lists: [[String]] = []
        let request = FetchRequest<Recipe>(sortBy: [SortDescriptor(\.title)])
        for try await results in context.observe(request) {
            lists.append(results.objects.map(\.title))
            if lists.count == 2 { break }
            try change()  // a save in this context, or one merged into it
        }
        return lists
    }
}

extension TrackingChangesArticle {
    @MainActor
    final class RecipeView {
        let recipe: Recipe
        private(set) var draws = 0

        init(recipe: Recipe) {
            self.recipe = recipe
            draw()
        }

        func draw() {
            draws += 1
            withObservationTracking {
                _ = (recipe.title, recipe.steps.count)  // what the view shows
            } onChange: { [weak self] in
                // Called as a property is about to change; draw once it has.
                Task { @MainActor in self?.draw() }
            }
        }
    }

    @MainActor
    static func showRecipe(_ id: ObjectID, in container: PersistentContainer) throws -> RecipeView {
        let context = container.mainContext
        context.objectsAreObservable = true
        return RecipeView(recipe: try context.object(with: id, as: Recipe.self))
    }

    @MainActor
    static func titles(of recipe: Recipe) -> Observations<String, Never> {
        Observations { recipe.title }
    }
}

extension TrackingChangesArticle {
    static func describeEdits(
        after token: HistoryToken?,
        in context: ManagedObjectContext
    ) throws -> (edits: [String], next: HistoryToken) {
        var edits: [String] = []
        for transaction in try context.history(after: token, entities: ["Recipe"]) {
            for change in transaction.changes where change.kind == .update {
                for name in change.changedProperties {
                    let old = change.oldValues[name] ?? .null
                    let new = change.newValues[name] ?? .null
                    edits.append("\(transaction.token) \(name): \(old) → \(new)")
                }
            }
        }
        return (edits, try context.currentHistoryToken)
    }
}

extension TrackingChangesArticle {
    static func stepsThen(
        of title: String,
        asOf token: HistoryToken,
        in container: PersistentContainer
    ) throws -> [String]? {
        let then = try container.newContext(asOf: token)
        let request = FetchRequest<Recipe>(predicate: #Predicate { $0.title == title })
        return try then.fetch(request).first?.steps.map(\.text)
    }

    static func keepAMonthOfHistory(_ container: PersistentContainer) throws {
        try container.setHistoryRetention(.duration(30 * 24 * 3600))
    }

    static func keepAWeekOfHistory(_ database: PersistentContainer) throws {
        try database.setHistoryRetention(.duration(7 * 24 * 3600))
    }
}

@Suite("The tracking changes article's examples")
struct TrackingChangesArticleTests {
    typealias Recipe = TrackingChangesArticle.Recipe
    typealias Step = TrackingChangesArticle.Step

    private func makeContext() throws -> (PersistentContainer, ManagedObjectContext) {
        let container = try PersistentContainer.inMemory(for: [Recipe.self, Step.self])
        return (container, container.newContext())
    }

    @Test("undo and redo of a rename, grouping and a cascade as the article says")
    func undoExamples() throws {
        let (_, context) = try makeContext()
        let recipe = Recipe(context: context)
        recipe.title = "Broth"
        try context.save()
        let titles = TrackingChangesArticle.renameAndUndo(recipe, in: context)
        #expect(titles == ["Broth", "Broth", "Soup"])

        TrackingChangesArticle.addStep("Boil", to: recipe, in: context)
        #expect(recipe.title == "Soup (1 steps)")
        context.undo()
        #expect(recipe.title == "Soup")
        #expect(recipe.steps.isEmpty)

        TrackingChangesArticle.addStep("Boil", to: recipe, in: context)
        TrackingChangesArticle.addStep("Serve", to: recipe, in: context)
        try context.save()
        #expect(TrackingChangesArticle.deleteAndUndo(recipe, in: context) == 2)
        #expect(recipe.steps.allSatisfy { $0.recipe === recipe })
        #expect(!context.hasChanges)
    }

    @Test("the child's edit reaches the parent, then the store")
    func childExample() throws {
        let (container, context) = try makeContext()
        let recipe = Recipe(context: context)
        recipe.title = "Soup"
        try context.save()
        #expect(try TrackingChangesArticle.editInChild(recipe, in: context) == "Tomato soup")
        let fresh = container.newContext()
        let stored = try fresh.object(with: recipe.objectID, as: Recipe.self)
        #expect(stored.title == "Tomato soup")
        #expect(stored.steps.map(\.text) == ["Peel the tomatoes"])
    }

    @Test("the history lists each edit with its old and new value, after a token")
    func historyExample() throws {
        let directory = TemporaryDirectory()
        let container = try PersistentContainer(
            path: directory.file("recipes.objectlog"),
            for: [Recipe.self, Step.self]
        )
        defer { try? container.close() }
        let context = container.newContext()
        let recipe = Recipe(context: context)
        recipe.title = "Broth"
        try context.save()
        let (none, start) = try TrackingChangesArticle.describeEdits(after: nil, in: context)
        #expect(none.isEmpty)
        recipe.title = "Soup"
        try context.save()
        recipe.title = "Tomato soup"
        try context.save()
        let (edits, next) = try TrackingChangesArticle.describeEdits(after: start, in: context)
        #expect(
            edits == [
                "#\(start.transaction + 1) title: \"Broth\" → \"Soup\"",
                "#\(start.transaction + 2) title: \"Soup\" → \"Tomato soup\"",
            ]
        )
        #expect(next.transaction == start.transaction + 2)
        #expect(try TrackingChangesArticle.describeEdits(after: next, in: context).edits.isEmpty)

        try TrackingChangesArticle.keepAMonthOfHistory(container)
        #expect(container.historyRetention == .duration(30 * 24 * 3600))
        _ = try container.compact()
        let kept = try TrackingChangesArticle.describeEdits(after: start, in: context).edits
        #expect(kept == edits)

        let step = Step(context: context)
        step.text = "Peel"
        step.recipe = recipe
        try context.save()
        let withStep = try context.currentHistoryToken
        context.delete(step)
        try context.save()
        let steps = { (token: HistoryToken) in
            try TrackingChangesArticle.stepsThen(of: "Tomato soup", asOf: token, in: container)
        }
        #expect(try steps(withStep) == ["Peel"])
        #expect(try steps(context.currentHistoryToken) == [])
        #expect(try steps(start) == nil)
    }

    @Test("a reader follows the writer's saves, and a live query hands out its results twice")
    @MainActor
    func followingAndLiveQueryExamples() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("recipes.objectlog")
        let writer = try PersistentContainer(path: path, for: [Recipe.self, Step.self])
        defer { try? writer.close() }
        var options = StoreOptions()
        options.readOnly = true
        options.followsWriter = true
        let reader = try PersistentContainer(
            path: path,
            for: [Recipe.self, Step.self],
            options: options
        )
        defer { try? reader.close() }
        try await withTimeout {
            let following = Task {
                try await TrackingChangesArticle.recipeTitlesSaved(by: reader, count: 2)
            }
            try await Task.sleep(for: .milliseconds(50))
            let context = writer.newContext()
            let broth = Recipe(context: context)
            broth.title = "Broth"
            try context.save()
            broth.title = "Soup"
            try context.save()
            #expect(try await following.value == ["Broth", "Soup"])

            let main = reader.mainContext
            let lists = try await TrackingChangesArticle.titlesBeforeAndAfter(
                {
                    let bread = Recipe(context: context)
                    bread.title = "Bread"
                    try context.save()
                },
                in: main
            )
            #expect(lists == [["Soup"], ["Bread", "Soup"]])
        }
    }

    @Test(
        "a database keeps no history until a retention asks for one",
        .enabled(if: TestServer.runs, TestServer.skipReason)
    )
    func databaseHistoryExample() throws {
        let database = try PersistentContainer(
            url: try TestServer.freshDatabase(),
            for: [Recipe.self, Step.self]
        )
        defer { try? database.close() }
        let context = database.newContext()
        let start = try context.currentHistoryToken
        Recipe(context: context).title = "Soup"
        try context.save()
        #expect(throws: ObjectLogError.self) { try context.history(after: start) }
        try TrackingChangesArticle.keepAWeekOfHistory(database)
        let kept = try context.currentHistoryToken
        let soup = try #require(try context.fetch(FetchRequest<Recipe>()).first)
        soup.title = "Broth"
        try context.save()
        let history = try context.history(after: kept)
        #expect(history.first?.changes.first?.oldValues == ["title": .string("Soup")])
        #expect(history.first?.changes.first?.newValues == ["title": .string("Broth")])
    }

    @Test("a view draws again when what it shows changes, here or in a merged save, only then")
    @MainActor
    func observationExample() async throws {
        let container = try PersistentContainer.inMemory(for: [Recipe.self, Step.self])
        let setup = container.newContext()
        let broth = Recipe(context: setup)
        broth.title = "Broth"
        let bread = Recipe(context: setup)
        bread.title = "Bread"
        try setup.save()
        let id = broth.objectID
        let view = try TrackingChangesArticle.showRecipe(id, in: container)
        let context = container.mainContext
        let recipe = view.recipe
        #expect(view.draws == 1)

        recipe.title = "Soup"
        try await waitUntil { view.draws == 2 }
        #expect(view.draws == 2)
        try context.object(with: bread.objectID, as: Recipe.self).title = "Rye"
        try await Task.sleep(for: .milliseconds(50))
        #expect(view.draws == 2, "another recipe's title")

        let step = Step(context: context)
        step.recipe = recipe
        try await waitUntil { view.draws == 3 }
        #expect(view.draws == 3, "a step whose recipe was set: the inverse side changed")

        try context.save()  // else the merge keeps the main context's unsaved title
        try await container.performBackgroundTask { background in
            try background.object(with: id, as: Recipe.self).title = "Tomato soup"
            try background.save()
        }
        try await waitUntil { view.draws == 4 }
        #expect(view.draws == 4, "a save of another context, merged into the main context")
        #expect(recipe.title == "Tomato soup")

        let seen = ObservedValues<String>()
        let titles = TrackingChangesArticle.titles(of: recipe)
        let consumer = Task { @MainActor in
            for await title in titles { seen.values.append(title) }
        }
        defer { consumer.cancel() }
        try await waitUntil { !seen.values.isEmpty }
        recipe.title = "Gazpacho"
        try await waitUntil { seen.values.count > 1 }
        #expect(seen.values == ["Tomato soup", "Gazpacho"])
    }

    @Test("this file holds every code block of the article, as the article shows it")
    func articleMatchesThisFile() throws {
        let (blocks, source) = try articleCodeBlocks("TrackingChanges.md", asIn: #filePath)
        #expect(blocks.count == 13)
        for expected in blocks {
            #expect(source.contains(expected), "not in this file: \(expected.prefix(44))")
        }
    }
}
