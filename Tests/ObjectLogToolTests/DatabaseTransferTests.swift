import Foundation
import ObjectLog
import ObjectLogPostgreSQL
import ObjectLogStore
import StoreTestSupport
import TestSupport
import Testing

@Suite(
    "export, import, info and dump against a PostgreSQL server",
    .enabled(if: TestServer.runs, TestServer.skipReason)
)
struct DatabaseTransferTests {
    /// The forms of `dump` compared across stores.
    static let dumpForms: [[String]] = [
        [], ["--format", "json", "--full-blobs"], ["--entity", "Item"], ["--entity", "Shelf"],
    ]

    @Test("dump prints the same bytes for a migrated store file, its export and its import")
    func dumpIdentity() throws {
        let directory = TemporaryDirectory()
        let library = try makeTransferLibrary(at: directory.file("library.olog"))
        let source = try StoreAccessForTests.openReadOnly(library.path)
        #expect(source.liveKeys(entity: nil).contains { source.location(of: $0)?.isPatch == true })
        try source.close()
        let url = try TestServer.freshDatabase()
        let exported = try runTool("export", library.path, url)
        #expect(exported.status == 0, "\(exported.standardError)")
        #expect(exported.standardError.isEmpty)
        let imported = directory.file("imported.olog")
        let back = try runTool("import", url, imported)
        #expect(back.status == 0, "\(back.standardError)")
        for form in Self.dumpForms {
            let file = try runTool(arguments: ["dump", library.path] + form)
            let database = try runTool(arguments: ["dump", url] + form)
            let again = try runTool(arguments: ["dump", imported] + form)
            #expect(file.status == 0 && database.status == 0 && again.status == 0)
            #expect(!file.standardOutput.isEmpty)
            #expect(database.standardOutput == file.standardOutput, "dump \(form)")
            #expect(again.standardOutput == file.standardOutput, "dump \(form)")
        }
        // Version 1's records read in version 2's layout everywhere, with the new default.
        let objects = try runTool("dump", url, "--entity", "Book").lines.map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:]
        }
        let pages = objects.compactMap { ($0["attributes"] as? [String: Any])?["pages"] as? Int }
        #expect(pages.sorted() == [100, 100, 100, 100, 321])
        let ratings = objects.compactMap {
            ($0["attributes"] as? [String: Any])?["rating"] as? Double
        }
        #expect(ratings.filter { $0 == 4.5 }.count == 4)
    }

    @Test("export then import keep keys, relations, blobs, metadata and both model versions")
    func roundTrip() throws {
        let directory = TemporaryDirectory()
        let library = try makeTransferLibrary(at: directory.file("library.olog"))
        let url = try TestServer.freshDatabase()
        let exported = try runTool("export", library.path, url, "--json")
        #expect(exported.status == 0, "\(exported.standardError)")
        let report = try exported.jsonObject()
        #expect(report["objects"] as? Int == 9)
        #expect(report["modelVersions"] as? Int == 2)
        #expect(report["transaction"] as? Int == 1)
        #expect((report["blobs"] as? Int ?? 0) >= 3)
        let imported = directory.file("imported.olog")
        let back = try runTool("import", url, imported, "--json")
        #expect(back.status == 0, "\(back.standardError)")
        #expect(try back.jsonObject()["objects"] as? Int == 9)
        #expect(try runTool("verify", imported).status == 0)
        // The 20 KiB cover is a blob file again (the default threshold is 16 KiB).
        let blobs = try FileManager.default.contentsOfDirectory(atPath: imported + "-blobs")
        #expect(blobs.contains(BlobID(contentsOf: library.largeCover).hex))

        // Every version's hash, in order, in both copies.
        let source = try runTool("schema", library.path, "--json").jsonObject()
        let copy = try runTool("schema", imported, "--json").jsonObject()
        let hashes = { (schema: [String: Any]) in
            (schema["versions"] as? [[String: Any]] ?? []).compactMap { $0["hash"] as? String }
        }
        #expect(hashes(source).count == 2)
        #expect(hashes(copy) == hashes(source))

        // Every version begins where the copy begins, and nothing is below the boundary.
        let metadata = try PersistentContainer.metadataForStore(at: imported)
        guard case .array(let versions)? = metadata[ModelHistory.versionsKey] else {
            Issue.record("the imported store lists no model versions")
            return
        }
        let starts = versions.map { entry -> [String] in
            guard case .dictionary(let fields) = entry else { return [] }
            return ["generation", "offset", "transaction"].map { String(describing: fields[$0]) }
        }
        #expect(Set(starts).count == 1)
        for (key, value) in library.metadata {
            #expect(metadata[key] == value, "\(key)")
        }

        for location in [imported, url] {
            let container =
                try location == url
                ? PersistentContainer(url: url, for: transferLibraryV2)
                : PersistentContainer(path: imported, for: transferLibraryV2)
            let context = container.newContext()
            let books = try context.fetch(
                FetchRequest<TransferBookV2>(sortBy: [SortDescriptor(\.title)])
            )
            #expect(books.count == 5)
            #expect(books.first { $0.pages == 321 }?.shelf?.name == "poetry")
            let fiction = try context.fetch(
                FetchRequest<TransferShelfV2>(predicate: #Predicate { $0.name == "fiction" })
            ).first
            #expect(
                fiction?.books.map(\.title) == [
                    "book 2 \u{e9}\u{301}", "book 0 \u{e9}\u{301}", "book 1 \u{e9}\u{301}",
                ]
            )
            #expect(books.first { $0.cover == library.largeCover }?.tags.count == 2)
            #expect(container.metadata["owner"] == library.metadata["owner"])
            let new = TransferBookV2(context: context)
            new.title = "new"
            try context.save()
            #expect(new.objectID.key > library.deletedKey, "\(location)")
            try container.close()
        }
    }

    @Test("info on a URI: the server without a password, the model, the counts, the metadata")
    func info() throws {
        let directory = TemporaryDirectory()
        let library = try makeTransferLibrary(at: directory.file("library.olog"))
        let url = try TestServer.freshDatabase()
        #expect(try runTool("export", library.path, url).status == 0)
        let target = try #require(ConnectionTarget(url)).description
        let text = try runTool("info", url)
        #expect(text.status == 0, "\(text.standardError)")
        #expect(text.lines.first == "store:           \(target)")
        #expect(text.lines.contains { $0.hasPrefix("server:          PostgreSQL ") })
        #expect(text.lines.contains("transactions:    1 committed"))
        #expect(text.lines.contains("live objects:    9"))
        #expect(text.lines.contains("model version:   2, since transaction 1"))
        #expect(text.lines.contains("  Item    0 (abstract)"))
        #expect(text.lines.contains("    Book  5"))
        #expect(text.lines.contains("  Shelf   2"))
        #expect(text.lines.contains("  owner (string): Ada \"A.\" Lovelace\\n"))
        #expect(!text.standardOutput.contains("bytes"))
        let json = try runTool("info", url, "--json").jsonObject()
        #expect(json["store"] as? String == target)
        #expect(json["kind"] as? String == "postgresql")
        #expect(json["liveObjects"] as? Int == 9)
        #expect((json["entities"] as? [String: Any])?["Tag"] as? Int == 2)
        #expect(json["fileBytes"] == nil)
        #expect((json["metadata"] as? [String: Any])?["zoom"] as? Double == 1.5)
    }

    @Test("export into a database that holds a store exits 73 and changes nothing")
    func exportIntoStore() throws {
        let directory = TemporaryDirectory()
        let library = try makeTransferLibrary(at: directory.file("library.olog"))
        let url = try TestServer.freshDatabase()
        #expect(try runTool("export", library.path, url).status == 0)
        let before = try runTool("dump", url).standardOutput
        let again = try runTool("export", library.path, url)
        #expect(again.status == 73)
        #expect(
            again.standardError
                == "error: the database at \(try #require(ConnectionTarget(url))) holds an "
                + "ObjectLog store already; export into an empty database\n"
        )
        #expect(try runTool("dump", url).standardOutput == before)
        #expect(try runTool("info", url).lines.contains("transactions:    1 committed"))
    }

    @Test("a failed export leaves the database empty; a killed one's tables go with the next")
    func failedExport() throws {
        let directory = TemporaryDirectory()
        // A string PostgreSQL's text cannot hold fails the copy's commit.
        let path = directory.file("nul.olog")
        let container = try PersistentContainer(path: path, for: transferLibraryV2)
        let context = container.newContext()
        let book = TransferBookV2(context: context)
        book.title = "a\u{0}b"
        try context.save()
        try container.close()
        let url = try TestServer.freshDatabase()
        let failed = try runTool("export", path, url)
        #expect(failed.status == 65, "\(failed.standardError)")
        #expect(failed.standardError.contains("NUL"))
        #expect(try PostgresStore.contents(ofDatabase: url) == .empty)
        let tables = try PostgresConnection(url: url).execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        )
        #expect(tables.rows == [["0"]])

        // A store that records no model: refused before anything is created.
        let raw = directory.file("raw.olog")
        _ = try makeFixtureStore(at: raw)
        let modelless = try runTool("export", raw, url)
        #expect(modelless.status == 65, "\(modelless.standardError)")
        #expect(modelless.standardError.contains("has no object model"))
        #expect(try PostgresStore.contents(ofDatabase: url) == .empty)

        // The tables of an export that was killed before its commit.
        let library = try makeTransferLibrary(at: directory.file("library.olog"))
        let schema = try ManagedObjectModel(transferLibraryV2).schema
        let killed = try PostgresStore(url: url, schema: schema)
        try killed.markExport(on: try PostgresConnection(url: url))
        try killed.close()
        #expect(try PostgresStore.contents(ofDatabase: url) == .unrecordedStore)
        let next = try runTool("export", library.path, url)
        #expect(next.status == 0, "\(next.standardError)")
        #expect(try PostgresStore.contents(ofDatabase: url) == .store)

        // Tables without that mark are not the export's to drop.
        let other = try TestServer.freshDatabase()
        try PostgresStore(url: other, schema: schema).close()
        let refused = try runTool("export", library.path, other)
        #expect(refused.status == 73)
        #expect(refused.standardError.contains("records no model"))
        #expect(try PostgresStore.contents(ofDatabase: other) == .unrecordedStore)
    }

    @Test("a store from before model versions were kept gets a schema record in its copies")
    func legacyStore() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("legacy.olog")
        let container = try PersistentContainer(path: path, for: transferLibraryV2)
        let context = container.newContext()
        let shelf = TransferShelfV2(context: context)
        shelf.name = "old"
        let book = TransferBookV2(context: context)
        book.title = "kept in the metadata"
        book.shelf = shelf
        try context.save()
        try container.close()
        // The model as stores kept it before versions: its description in the metadata.
        let store = try LogStore.open(path: path)
        let version = try #require(try ModelHistory.read(from: store)?.current)
        var transaction = Transaction()
        transaction.delete(key: version.key, entity: ModelHistory.schemaEntityTag)
        var metadata = store.metadata
        metadata[ModelHistory.versionsKey] = nil
        metadata[LogStore.upgradeBoundaryKey] = nil
        metadata[PersistentStoreCoordinator.modelKey] = .string(
            String(decoding: version.schema.canonicalJSON(), as: UTF8.self)
        )
        transaction.metadata = metadata
        try store.commit(transaction)
        #expect(try ModelHistory.read(from: store)?.isLegacy == true)
        try store.close()

        let url = try TestServer.freshDatabase()
        #expect(try runTool("export", path, url).status == 0)
        let imported = directory.file("imported.olog")
        #expect(try runTool("import", url, imported).status == 0)
        let dump = try runTool("dump", path).standardOutput
        #expect(try runTool("dump", url).standardOutput == dump)
        #expect(try runTool("dump", imported).standardOutput == dump)
        let copied = try PersistentContainer.metadataForStore(at: imported)
        #expect(copied[PersistentStoreCoordinator.modelKey] == nil)
        guard case .array(let versions)? = copied[ModelHistory.versionsKey],
            case .dictionary(let entry)? = versions.first
        else {
            Issue.record("the copy lists no model versions")
            return
        }
        #expect(versions.count == 1)
        #expect(entry["hash"] == .string(version.hash))
        // A key above every key the store handed out.
        #expect((entry["key"]?.integerValue ?? 0) > Int64(book.objectID.key))
        for location in [imported, url] {
            let reopened =
                try location == url
                ? PersistentContainer(url: url, for: transferLibraryV2)
                : PersistentContainer(path: imported, for: transferLibraryV2)
            let context = reopened.newContext()
            let books = try context.fetch(FetchRequest<TransferBookV2>())
            #expect(books.map(\.title) == ["kept in the metadata"])
            #expect(books.first?.shelf?.name == "old")
            try reopened.close()
        }
    }

    @Test("import: an existing destination 73, a database without a store 66, nothing written")
    func importRefusals() throws {
        let directory = TemporaryDirectory()
        let library = try makeTransferLibrary(at: directory.file("library.olog"))
        let url = try TestServer.freshDatabase()
        #expect(try runTool("export", library.path, url).status == 0)
        let taken = directory.file("taken.olog")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: taken))
        let exists = try runTool("import", url, taken)
        #expect(exists.status == 73)
        #expect(
            exists.standardError == "error: \(taken): already exists; choose a new destination\n"
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: taken)) == Data("keep me".utf8))

        let blobsOnly = directory.file("blobs.olog")
        try FileManager.default.createDirectory(
            atPath: blobsOnly + "-blobs",
            withIntermediateDirectories: false
        )
        #expect(try runTool("import", url, blobsOnly).status == 73)
        #expect(!FileManager.default.fileExists(atPath: blobsOnly))

        let empty = try TestServer.freshDatabase()
        let none = try runTool("import", empty, directory.file("none.olog"))
        #expect(none.status == 66)
        #expect(
            none.standardError
                == "error: the database at \(try #require(ConnectionTarget(empty))) holds no "
                + "ObjectLog store\n"
        )
        #expect(try runTool("dump", empty).status == 66)
        #expect(try runTool("info", empty).status == 66)

        let nowhere = directory.file("missing/dir/new.olog")
        let noDirectory = try runTool("import", url, nowhere)
        #expect(noDirectory.status == 73, "\(noDirectory.standardError)")
        let names = try fileNames(in: directory)
        #expect(
            names.filter { !$0.hasPrefix("library.olog") } == ["blobs.olog-blobs", "taken.olog"]
        )
    }

    @Test("a failed import removes everything it wrote")
    func failedImport() throws {
        let directory = TemporaryDirectory()
        let library = try makeTransferLibrary(at: directory.file("library.olog"))
        let url = try TestServer.freshDatabase()
        #expect(try runTool("export", library.path, url).status == 0)
        // A metadata value that cannot be read: the copy fails after the new store exists.
        try PostgresConnection(url: url).execute(
            "INSERT INTO objectlog_metadata VALUES ('broken', '\\x00ff'::bytea)"
        )
        let path = directory.file("copy.olog")
        let failed = try runTool("import", url, path)
        #expect(failed.status == 74, "\(failed.standardError)")
        #expect(failed.standardError.contains("'broken'"))
        var names = try fileNames(in: directory)
        #expect(!names.contains { $0.hasPrefix("copy.olog") }, "\(names)")

        // Keys past what a store file counts: refused as data, nothing written either.
        let large = try TestServer.freshDatabase()
        #expect(try runTool("export", library.path, large).status == 0)
        try PostgresConnection(url: large).execute(
            "UPDATE objectlog_store SET next_key = 4611686018427387914"
        )
        let tooLarge = try runTool("import", large, path)
        #expect(tooLarge.status == 65, "\(tooLarge.standardError)")
        #expect(tooLarge.standardError.contains("4611686018427387914"))
        names = try fileNames(in: directory)
        #expect(!names.contains { $0.hasPrefix("copy.olog") }, "\(names)")
    }

    @Test("export and import draw a progress bar on a terminal, and none in a pipe")
    func progress() throws {
        let directory = TemporaryDirectory()
        let library = try makeTransferLibrary(at: directory.file("library.olog"))
        let url = try TestServer.freshDatabase()
        let environment = ["OBJECTLOG_PROGRESS_DELAY_MS": "0"]
        let export = try runToolOnTerminal(["export", library.path, url], environment: environment)
        #expect(export.status == 0)
        #expect(export.output.contains("\r[" + String(repeating: "#", count: 40) + "] 100%"))
        #expect(export.output.contains("%\r" + String(repeating: " ", count: 47) + "\rexported "))
        let imported = try runToolOnTerminal(
            ["import", url, directory.file("back.olog")],
            environment: environment
        )
        #expect(imported.status == 0)
        #expect(imported.output.contains("] 100%"))
        let piped = try runTool(
            arguments: ["import", url, directory.file("piped.olog")],
            environment: environment
        )
        #expect(piped.status == 0)
        #expect(!piped.standardOutput.contains("\r"))
    }
}
