import Foundation
import ObjectLog
import ObjectLogPostgreSQL
import StoreTestSupport
import TestSupport
import Testing

// The code of the "Choosing a store" article (ObjectLog.docc/ChoosingAStore.md), exactly as the
// article shows it (`articleCodeIsHere` fails when the two differ), with the article's
// `Experiment` and `Frame` (ReadmeExampleTests.swift).

enum ChoosingAStoreArticle {
    static func openLocalAndPreview(
        path: String
    ) throws -> (PersistentContainer, PersistentContainer) {
        // A file: the default, for one machine.
        let local = try PersistentContainer(path: path, for: [Experiment.self, Frame.self])

        // Memory only: nothing is written, and the objects go with the container.
        let preview = try PersistentContainer.inMemory(for: [Experiment.self, Frame.self])
        return (local, preview)
    }

    // Compiled, not run: the article's server is an example's.
    static func openShared() throws -> PersistentContainer {
        let shared = try PersistentContainer(
            url: "postgresql://lab@db.example.com/lab?sslmode=verify-full",
            for: [Experiment.self, Frame.self]
        )
        return shared
    }
}

@Suite("The choosing-a-store article's examples")
struct ChoosingAStoreArticleTests {
    @Test("the article's code is this file's")
    func articleCodeIsHere() throws {
        let (blocks, source) = try articleCodeBlocks(
            "ChoosingAStore.md",
            asIn: #filePath,
            indentation: 8
        )
        #expect(blocks.count == 2)
        for block in blocks {
            // The import of the second block is this file's own, at the top.
            let body = block.replacingOccurrences(
                of: "        import ObjectLogPostgreSQL\n\n",
                with: ""
            )
            #expect(source.contains(body), "not in this file: \(body.prefix(60))")
        }
        #expect(source.contains("\nimport ObjectLogPostgreSQL\n"))
    }

    @Test("a file and a memory store hold the same objects the same way")
    func localAndPreview() throws {
        let directory = TemporaryDirectory()
        let (local, preview) = try ChoosingAStoreArticle.openLocalAndPreview(
            path: directory.file("Lab.objectlog")
        )
        for container in [local, preview] {
            let context = container.newContext()
            let experiment = Experiment(context: context)
            experiment.name = "Spots"
            try context.save()
            #expect(try container.newContext().count(FetchRequest<Experiment>()) == 1)
            try container.close()
        }
        let reopened = try PersistentContainer(
            path: directory.file("Lab.objectlog"),
            for: [Experiment.self, Frame.self]
        )
        #expect(try reopened.newContext().count(FetchRequest<Experiment>()) == 1)
        try reopened.close()
    }

    @Test(
        "the same objects on a PostgreSQL database",
        .enabled(if: TestServer.runs, TestServer.skipReason)
    )
    func shared() throws {
        let url = try TestServer.freshDatabase()
        let shared = try PersistentContainer(url: url, for: [Experiment.self, Frame.self])
        let context = shared.newContext()
        let experiment = Experiment(context: context)
        experiment.name = "Spots"
        try context.save()
        let other = try PersistentContainer(url: url, for: [Experiment.self, Frame.self])
        #expect(try other.newContext().fetch(FetchRequest<Experiment>()).map(\.name) == ["Spots"])
        try other.close()
        try shared.close()
    }
}
