import Foundation
import TestSupport
import Testing

@testable import ObjectLog

@Suite("An object inserted, deleted and inserted again before a save")
struct ReinsertTests {
    @Test("is saved once, and its unique values do not clash with themselves")
    func savedOnce() throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        defer { try? container.close() }
        let context = container.newContext()
        let configuration = Configuration(context: context)
        configuration.name = "spots"
        context.delete(configuration)
        try context.insert(configuration)
        #expect(context.insertedObjects.count == 1)
        try context.save()
        let fresh = container.newContext()
        let saved = try fresh.fetch(FetchRequest<Configuration>())
        #expect(saved.map(\.name) == ["spots"])
        let history = try fresh.history()
        #expect(history.last?.changes.count == 1)
    }
}
