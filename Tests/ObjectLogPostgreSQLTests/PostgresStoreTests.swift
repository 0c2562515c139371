import Foundation
import ObjectLogStore
import StoreTestSupport
import Synchronization
import Testing

@testable import ObjectLog
@testable import ObjectLogPostgreSQL

final class Lab: ManagedObject {
    @Attribute(.unique) var name = ""
    @Attribute var feed = 0.055
    @Attribute var steps: Int32 = 0
    @Attribute var notes: String? = nil
    @Attribute var created = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute(.externalStorage) var thumbnail: Data? = nil
    @Relationship(inverse: \Run.lab, deleteRule: .cascade) var runs: [Run]
    @Relationship(inverse: \Label.labs) var labels: Set<Label>
}

final class Run: ManagedObject {
    @Attribute var step = 0
    @Relationship var lab: Lab?
}

final class Label: ManagedObject {
    @Attribute var text = ""
    @Relationship var labs: Set<Lab>
}

final class Sample: ManagedObject {
    @Attribute var number = 0
    @Attribute var name = ""
    @Attribute var value = 0.0
}

let labEntities: [ManagedObject.Type] = [Lab.self, Run.self, Label.self]

@Suite("The PostgreSQL store", .enabled(if: TestServer.runs, TestServer.skipReason))
struct PostgresStoreTests {
    @Test(
        "objects, relationships, external data and metadata saved by one container are what another reads"
    )
    func roundTrip() throws {
        let url = try TestServer.freshDatabase()
        let big = Data((0..<40_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        do {
            let container = try PersistentContainer(url: url, for: labEntities)
            let context = container.newContext()
            let lab = Lab(context: context)
            lab.name = "Gray-Scott 'spots'; DROP TABLE \"Lab\"; --"
            lab.feed = 0.0367
            lab.notes = "ünïcødé 🧪"
            lab.thumbnail = big
            for step in [3, 1, 2] {
                let run = Run(context: context)
                run.step = step
                lab.runs.append(run)
            }
            let label = Label(context: context)
            label.text = "favourite"
            lab.labels.insert(label)
            try container.setMetadata(.string("viridis"), forKey: "palette")
            try context.save()
            try container.close()
        }
        let container = try PersistentContainer(url: url, for: labEntities)
        let context = container.newContext()
        let labs = try context.fetch(FetchRequest<Lab>())
        #expect(labs.count == 1)
        let lab = try #require(labs.first)
        #expect(lab.name == "Gray-Scott 'spots'; DROP TABLE \"Lab\"; --")
        #expect(lab.feed == 0.0367)
        #expect(lab.notes == "ünïcødé 🧪")
        #expect(lab.thumbnail == big)
        #expect(lab.runs.map(\.step) == [3, 1, 2], "an ordered to-many keeps its order")
        #expect(lab.runs.allSatisfy { $0.lab === lab })
        #expect(lab.labels.map(\.text) == ["favourite"])
        #expect(lab.labels.first?.labs == [lab])
        #expect(container.metadata["palette"] == .string("viridis"))
        #expect(try context.count(FetchRequest<Run>()) == 3)
        context.delete(lab)
        try context.save()
        #expect(try container.newContext().count(FetchRequest<Run>()) == 0, "cascade")
        try container.close()
    }

    @Test("new objects are copied in (COPY): values with COPY's own characters come back unchanged")
    func copiedValues() throws {
        let url = try TestServer.freshDatabase()
        let names = [
            "tab\there", "line\nbreak", "carriage\rreturn", "back\\slash", "\\N", "\\.",
            "end\\", "\t\n\r\\", "", "'; DROP TABLE \"Lab\"; --", "ünïcødé 🧪",
        ]
        do {
            let container = try PersistentContainer(url: url, for: labEntities)
            let context = container.newContext()
            for (index, name) in names.enumerated() {
                let lab = Lab(context: context)
                lab.name = name
                lab.notes = index.isMultiple(of: 2) ? nil : name
            }
            try context.save()
            try container.close()
        }
        let container = try PersistentContainer(url: url, for: labEntities)
        defer { try? container.close() }
        let labs = try container.newContext().fetch(FetchRequest<Lab>())
        #expect(labs.map(\.name) == names)
        #expect(labs.map(\.notes) == names.indices.map { $0.isMultiple(of: 2) ? nil : names[$0] })
    }

    @Test("faults read one by one switch to one query after a few, each single read a round trip")
    func faultsSwitchToOneQuery() throws {
        let url = try TestServer.freshDatabase()
        let container = try PersistentContainer(url: url, for: labEntities)
        defer { try? container.close() }
        let writer = container.newContext()
        let labels = (0..<200).map { index in
            let label = Label(context: writer)
            label.text = "label \(index)"
            return label
        }
        try writer.save()
        let reader = container.newContext()
        reader.tracer = ContextTracer()
        let faults = try labels.map { try reader.object(with: $0.objectID, as: Label.self) }
        #expect(faults.allSatisfy { $0.isFault })
        #expect(faults.map(\.text) == labels.map(\.text))
        #expect(reader.statistics.bulkFaultLoads == 1)
    }

    @Test(
        "a fetch of every object reads its rows once and loads them on two threads, in key order, with the context's pending changes"
    )
    func wholeEntityFetch() throws {
        let url = try TestServer.freshDatabase()
        let container = try PersistentContainer(url: url, for: [Sample.self])
        defer { try? container.close() }
        let writer = container.newContext()
        let saved = (0..<300).map { number in
            let sample = Sample(context: writer)
            sample.number = number
            sample.name = "sample \(number)"
            sample.value = Double(number) / 4
            return sample
        }
        try writer.save()
        // Rewritten rows move to the table's end: the server finds them out of key order.
        for sample in saved where sample.number.isMultiple(of: 7) { sample.value += 1000 }
        try writer.save()
        func expectedValue(_ number: Int) -> Double {
            Double(number) / 4 + (number.isMultiple(of: 7) ? 1000 : 0)
        }

        let reader = container.newContext()
        reader.tuning.parallelDecodingThreshold = 2
        reader.tracer = ContextTracer()
        let changed = try reader.object(with: saved[5].objectID, as: Sample.self)
        changed.name = "changed"
        let deleted = try reader.object(with: saved[6].objectID, as: Sample.self)
        reader.delete(deleted)
        let inserted = Sample(context: reader)
        inserted.number = 1000
        let queries = reader.statistics.storeQueries
        let fetched = try reader.fetch(FetchRequest<Sample>())
        #expect(reader.statistics.storeQueries == queries + 1, "one statement reads every row")
        let twoThreads = ProcessInfo.processInfo.activeProcessorCount >= 2
        #expect(reader.statistics.parallelDecodings == (twoThreads ? 1 : 0))
        #expect(fetched.count == 300, "299 saved objects and one inserted")
        #expect(fetched.map(\.key) == fetched.map(\.key).sorted())
        #expect(fetched.contains { $0 === inserted })
        #expect(!fetched.contains { $0 === deleted })
        #expect(fetched.contains { $0 === changed } && changed.name == "changed")
        #expect(fetched.allSatisfy { !$0.isFault })
        for sample in fetched where sample !== inserted && sample !== changed {
            #expect(sample.name == "sample \(sample.number)")
            #expect(sample.value == expectedValue(sample.number))
        }
        // A window is cut from the same order.
        var window = FetchRequest<Sample>()
        window.fetchOffset = 10
        window.includesPendingChanges = false
        let tail = try container.newContext().fetch(window)
        #expect(tail.map(\.number) == Array(10..<300))
    }

    @Test("two containers saving the same object meet the conflict error")
    func conflict() throws {
        let url = try TestServer.freshDatabase()
        let first = try PersistentContainer(url: url, for: labEntities)
        let second = try PersistentContainer(url: url, for: labEntities)
        defer {
            try? first.close()
            try? second.close()
        }
        let writer = first.newContext()
        let lab = Lab(context: writer)
        lab.name = "shared"
        try writer.save()
        let other = second.newContext()
        let seen = try #require(try other.fetch(FetchRequest<Lab>()).first)
        seen.feed = 0.05
        lab.feed = 0.06
        try writer.save()
        #expect(throws: ObjectLogError.self) { try other.save() }
        do {
            try other.save()
        } catch {
            #expect(error.code == .conflict)
            #expect(other.hasChanges, "the losing context keeps its changes")
        }
    }

    @Test("a uniqueness violation between two containers is the engine's uniqueness error")
    func uniqueness() throws {
        let url = try TestServer.freshDatabase()
        let first = try PersistentContainer(url: url, for: labEntities)
        let second = try PersistentContainer(url: url, for: labEntities)
        defer {
            try? first.close()
            try? second.close()
        }
        let a = first.newContext()
        Lab(context: a).name = "same"
        try a.save()
        let b = second.newContext()
        Lab(context: b).name = "same"
        do {
            try b.save()
            Issue.record("the second save succeeded")
        } catch {
            #expect(error.code == .uniqueness)
        }
    }

    @Test(
        "commits drop the change lists that outlived the retention; a listener that missed them hands on incomplete changes"
    )
    func commitListsArePruned() throws {
        let url = try TestServer.freshDatabase()
        let container = try PersistentContainer(url: url, for: [Sample.self])
        defer { try? container.close() }
        let store = try #require(container.coordinator.store as? PostgresStore)
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        func lastCommit() throws -> UInt64 {
            let text = try connection.execute("SELECT last_commit FROM objectlog_store").rows
            return try #require(text.first?.first.flatMap { $0 }.flatMap { UInt64($0) })
        }
        func listed() throws -> [UInt64] {
            try connection.execute("SELECT commit FROM objectlog_commits ORDER BY commit").rows
                .compactMap { $0[0].flatMap { UInt64($0) } }
        }
        let context = container.newContext()
        for number in 0..<3 {
            Sample(context: context).number = number
            try context.save()
        }
        let before = try lastCommit()
        let kept = try listed()
        #expect(kept.suffix(3) == [before - 2, before - 1, before], "minutes of lists: \(kept)")

        // Every commit now drops every list older than itself.
        store.commitRetention = (seconds: 0, everyCommits: 1)
        for number in 3..<6 {
            Sample(context: context).number = number
            try context.save()
        }
        let last = try lastCommit()
        #expect(try listed() == [last], "each commit dropped the lists before its own")

        // A listener that last saw `before` finds the lists after it gone but the last one.
        let received = Mutex<[StoreChanges]>([])
        let seen = try CommitListener.handOn(
            after: before,
            connection,
            { _ in false },
            { changes in received.withLock { $0.append(changes) } }
        )
        #expect(seen == last)
        let handed = received.withLock { $0 }
        #expect(handed.count == 2)
        #expect(handed.first?.isIncomplete == true)
        #expect(handed.first?.number == last - 1)
        #expect(handed.last?.isIncomplete == false)
        #expect(handed.last?.inserted.count == 1)
        // One that saw every commit up to the last list misses nothing.
        let none = try CommitListener.handOn(
            after: last - 1,
            connection,
            { _ in false },
            { changes in #expect(!changes.isIncomplete) }
        )
        #expect(none == last)
    }

    @Test(
        "incomplete changes make a context check every object it holds: updated ones refreshed, deleted ones gone"
    )
    func incompleteChangesMerge() throws {
        let url = try TestServer.freshDatabase()
        let mine = try PersistentContainer(url: url, for: [Sample.self])
        let theirs = try PersistentContainer(url: url, for: [Sample.self])
        defer {
            try? mine.close()
            try? theirs.close()
        }
        let writer = theirs.newContext()
        for number in 0..<3 {
            let sample = Sample(context: writer)
            sample.number = number
            sample.value = Double(number)
        }
        try writer.save()
        let reader = mine.newContext()
        let held = try reader.fetch(FetchRequest<Sample>(sortBy: [SortDescriptor(\.number)]))
        #expect(held.map(\.value) == [0, 1, 2])
        let unsaved = Sample(context: reader)
        unsaved.number = 10

        // The other process updates one object and deletes another.
        let changing = try writer.fetch(FetchRequest<Sample>(sortBy: [SortDescriptor(\.number)]))
        changing[0].value = 99
        writer.delete(changing[1])
        try writer.save()
        #expect(held[0].value == 0, "not merged yet")

        var told: [ObjectChanges] = []
        let token = reader.onObjectsDidChange { told.append($0) }
        defer { reader.removeObserver(token) }
        reader.mergeChanges(from: ObjectChanges(isIncomplete: true))
        #expect(held[0].value == 99, "refreshed from the store")
        #expect(held[2].value == 2)
        #expect(held[1].managedObjectContext == nil, "deleted elsewhere: it left the context")
        #expect(unsaved.isInserted && unsaved.managedObjectContext === reader)
        #expect(try reader.fetch(FetchRequest<Sample>()).count == 3, "two saved and one unsaved")
        #expect(told.count == 1)
        #expect(Set(told.first?.deleted ?? []) == [changing[1].objectID])
        #expect(Set(told.first?.updated ?? []) == [held[0].objectID, held[2].objectID])
    }

    @Test("a URI that cannot connect names the host and database, never the password")
    func unreachable() {
        do {
            _ = try PersistentContainer(
                url: "postgresql://lab:s3cret@/nowhere?host=/nonexistent/socket",
                for: labEntities
            )
            Issue.record("opened")
        } catch {
            #expect(error.code == .store)
            #expect(error.message.contains("nowhere"))
            #expect(!error.message.contains("s3cret"))
        }
    }
}

/// Changes a save observer received, shared with the test's thread.
final class ReceivedChanges: @unchecked Sendable {
    private let lock = NSLock()
    private var changes: [ObjectChanges] = []

    func append(_ change: ObjectChanges) {
        lock.lock()
        changes.append(change)
        lock.unlock()
    }

    /// The changes received, once `count` have arrived (waiting up to `seconds`).
    func wait(for count: Int, seconds: Double = 10) -> [ObjectChanges] {
        for _ in 0..<Int(seconds * 100) {
            lock.lock()
            let received = changes
            lock.unlock()
            if received.count >= count { return received }
            Thread.sleep(forTimeInterval: 0.01)
        }
        lock.lock()
        defer { lock.unlock() }
        return changes
    }
}

@Suite(
    "The PostgreSQL store across processes",
    .enabled(if: TestServer.runs, TestServer.skipReason)
)
struct PostgresNotificationTests {
    @Test("what one process saves reaches another's contexts through LISTEN/NOTIFY, and merges")
    func otherProcessesSaves() throws {
        let url = try TestServer.freshDatabase()
        // Two containers of one database, each with its own connections: as two processes.
        let writer = try PersistentContainer(url: url, for: labEntities)
        let reader = try PersistentContainer(url: url, for: labEntities)
        defer {
            try? writer.close()
            try? reader.close()
        }
        let received = ReceivedChanges()
        reader.coordinator.addSaveObserver { received.append($0) }
        let writing = writer.newContext()
        let lab = Lab(context: writing)
        lab.name = "shared"
        lab.feed = 0.01
        try writing.save()
        let inserted = received.wait(for: 1)
        #expect(inserted.count == 1)
        #expect(inserted.first?.inserted == [lab.objectID])

        let reading = reader.newContext()
        let seen = try #require(try reading.existingObject(with: lab.objectID) as? Lab)
        #expect(seen.feed == 0.01)
        lab.feed = 0.02
        try writing.save()
        let updated = received.wait(for: 2)
        #expect(updated.count == 2)
        #expect(updated.last?.updated == [lab.objectID])
        if let change = updated.last { reading.mergeChanges(from: change) }
        #expect(seen.feed == 0.02, "the merge refreshed the reader's object")

        writing.delete(lab)
        try writing.save()
        let deleted = received.wait(for: 3)
        #expect(deleted.last?.deleted == [lab.objectID])
        // The reader's own save reaches its observers once, from the save, not again from the
        // server's announcement.
        let label = Label(context: reading)
        label.text = "mine"
        try reading.save()
        let all = received.wait(for: 5, seconds: 1)
        #expect(all.count == 4)
        #expect(all.last?.inserted == [label.objectID])
    }
}

@Suite(
    "The PostgreSQL store on a hot standby",
    .enabled(if: TestServer.standbyRuns, TestServer.skipReason)
)
struct PostgresStandbyTests {
    @Test(
        "a read-only container on the standby sees what the primary saved; a write there names the standby"
    )
    func standby() throws {
        let url = try TestServer.freshDatabase()
        let standbyURL = try #require(TestServer.standbyURL(of: url))
        let primary = try PersistentContainer(url: url, for: labEntities)
        defer { try? primary.close() }
        let context = primary.newContext()
        let lab = Lab(context: context)
        lab.name = "replicated"
        try context.save()

        // Replication takes a moment: the standby's container opens once the tables are there,
        // and sees the object once its row is.
        var replica: PersistentContainer?
        var names: [String] = []
        for _ in 0..<500 where names.isEmpty {
            if replica == nil {
                replica = try? PersistentContainer(
                    url: standbyURL,
                    for: labEntities,
                    readOnly: true
                )
            }
            names = (try? replica?.newContext().fetch(FetchRequest<Lab>()).map(\.name)) ?? []
            if names.isEmpty { Thread.sleep(forTimeInterval: 0.02) }
        }
        defer { try? replica?.close() }
        #expect(names == ["replicated"])

        let reading = try #require(replica).newContext()
        Lab(context: reading).name = "refused"
        #expect(throws: ObjectLogError.self) { try reading.save() }

        // A container that would write, opened on the standby: the server refuses (the new
        // object's key, which a save would take, already), and says which server it is.
        let writer = try PersistentContainer(url: standbyURL, for: labEntities)
        defer { try? writer.close() }
        let writing = writer.newContext()
        Lab(context: writing).name = "also refused"
        do {
            try writing.save()
            Issue.record("the standby accepted a write")
        } catch {
            #expect(error.code == .store)
            #expect(error.message.contains("accepts no writes"))
            #expect(error.message.contains("standby"))
        }
    }
}

@Suite(
    "The PostgreSQL store when the server is lost",
    .enabled(if: TestServer.runs, TestServer.skipReason)
)
struct PostgresLostServerTests {
    @Test(
        "a server lost in the middle of a save: the save throws, nothing is written, the context keeps its changes"
    )
    func lostMidSave() throws {
        let url = try TestServer.freshDatabase()
        let container = try PersistentContainer(url: url, for: labEntities)
        defer { try? container.close() }
        let store = try #require(container.coordinator.store as? PostgresStore)
        let pid = try #require(
            try store.connection.execute("SELECT pg_backend_pid()").rows.first?.first ?? nil
        )
        // Each row of the save takes a while, so that the connection is cut while it runs.
        let admin = try PostgresConnection(url: url)
        defer { admin.close() }
        try admin.execute(
            "CREATE FUNCTION slow() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(0.05); "
                + "RETURN NEW; END $$ LANGUAGE plpgsql"
        )
        try admin.execute(
            "CREATE TRIGGER slow BEFORE INSERT ON \"Run\" FOR EACH ROW EXECUTE FUNCTION slow()"
        )
        let context = container.newContext()
        let lab = Lab(context: context)
        lab.name = "cut short"
        for step in 0..<100 {
            let run = Run(context: context)
            run.step = step
            lab.runs.append(run)
        }
        let killer = Thread {
            Thread.sleep(forTimeInterval: 0.5)
            _ = try? PostgresConnection(url: url).execute(
                "SELECT pg_terminate_backend($1)",
                [pid]
            )
        }
        killer.start()
        #expect(throws: ObjectLogError.self) { try context.save() }
        #expect(context.hasChanges, "the context keeps its changes")
        #expect(lab.runs.count == 100)
        let counts = try admin.execute(
            "SELECT (SELECT count(*) FROM \"Lab\"), (SELECT count(*) FROM \"Run\")"
        ).rows.first
        #expect(counts == ["0", "0"], "nothing of the save was written")
    }
}

/// `Lab` of a later model version: one attribute more.
enum LaterModel {
    final class Lab: ManagedObject {
        @Attribute(.unique) var name = ""
        @Attribute var feed = 0.055
        @Attribute var steps: Int32 = 0
        @Attribute var notes: String? = nil
        @Attribute var created = Date(timeIntervalSinceReferenceDate: 0)
        @Attribute(.externalStorage) var thumbnail: Data? = nil
        @Attribute var kill = 0.062
        @Relationship(inverse: \Run.lab, deleteRule: .cascade) var runs: [Run]
        @Relationship(inverse: \Label.labs) var labels: Set<Label>
    }

    final class Run: ManagedObject {
        @Attribute var step = 0
        @Relationship var lab: Lab?
    }

    final class Label: ManagedObject {
        @Attribute var text = ""
        @Relationship var labs: Set<Lab>
    }

    static let entities: [ManagedObject.Type] = [Lab.self, Run.self, Label.self]
}

/// `Lab` with a renamed attribute.
enum RenamingModel {
    final class Lab: ManagedObject {
        @Attribute(.unique) var name = ""
        @Attribute(originalName: "feed") var feedRate = 0.055
        @Attribute var steps: Int32 = 0
        @Attribute var notes: String? = nil
        @Attribute var created = Date(timeIntervalSinceReferenceDate: 0)
        @Attribute(.externalStorage) var thumbnail: Data? = nil
        @Relationship(inverse: \Run.lab, deleteRule: .cascade) var runs: [Run]
        @Relationship(inverse: \Label.labs) var labels: Set<Label>
    }

    final class Run: ManagedObject {
        @Attribute var step = 0
        @Relationship var lab: Lab?
    }

    final class Label: ManagedObject {
        @Attribute var text = ""
        @Relationship var labs: Set<Lab>
    }

    static let entities: [ManagedObject.Type] = [Lab.self, Run.self, Label.self]
}

/// Every entity, and every property of `Lab`, renamed; `steps` widened.
enum RenamedEverything {
    final class Study: ManagedObject {
        @Attribute(.unique, originalName: "name") var title = ""
        @Attribute var feed = 0.055
        @Attribute var steps: Int64 = 0
        @Attribute var notes: String? = nil
        @Attribute var created = Date(timeIntervalSinceReferenceDate: 0)
        @Attribute(.externalStorage) var thumbnail: Data? = nil
        @Relationship(inverse: \Trial.study, deleteRule: .cascade) var trials: [Trial]
        @Relationship(inverse: \Keyword.studies) var keywords: Set<Keyword>
        override class var entityName: String { "Study" }
        override class var originalEntityName: String? { "Lab" }
        override class var originalPropertyNames: [String: String] {
            ["trials": "runs", "keywords": "labels"]
        }
    }

    final class Trial: ManagedObject {
        @Attribute var step = 0
        @Relationship var study: Study?
        override class var entityName: String { "Trial" }
        override class var originalEntityName: String? { "Run" }
        override class var originalPropertyNames: [String: String] { ["study": "lab"] }
    }

    final class Keyword: ManagedObject {
        @Attribute var text = ""
        @Relationship var studies: Set<Study>
        override class var entityName: String { "Keyword" }
        override class var originalEntityName: String? { "Label" }
        override class var originalPropertyNames: [String: String] { ["studies": "labs"] }
    }

    static let entities: [ManagedObject.Type] = [Study.self, Trial.self, Keyword.self]
}

/// `RenamedEverything` with `steps` kept as it was: renames only.
enum RenamedOnly {
    final class Study: ManagedObject {
        @Attribute(.unique, originalName: "name") var title = ""
        @Attribute var feed = 0.055
        @Attribute var steps: Int32 = 0
        @Attribute var notes: String? = nil
        @Attribute var created = Date(timeIntervalSinceReferenceDate: 0)
        @Attribute(.externalStorage) var thumbnail: Data? = nil
        @Relationship(inverse: \Trial.study, deleteRule: .cascade) var trials: [Trial]
        @Relationship(inverse: \Keyword.studies) var keywords: Set<Keyword>
        override class var entityName: String { "Study" }
        override class var originalEntityName: String? { "Lab" }
        override class var originalPropertyNames: [String: String] {
            ["trials": "runs", "keywords": "labels"]
        }
    }

    final class Trial: ManagedObject {
        @Attribute var step = 0
        @Relationship var study: Study?
        override class var entityName: String { "Trial" }
        override class var originalEntityName: String? { "Run" }
        override class var originalPropertyNames: [String: String] { ["study": "lab"] }
    }

    final class Keyword: ManagedObject {
        @Attribute var text = ""
        @Relationship var studies: Set<Study>
        override class var entityName: String { "Keyword" }
        override class var originalEntityName: String? { "Label" }
        override class var originalPropertyNames: [String: String] { ["studies": "labs"] }
    }

    static let entities: [ManagedObject.Type] = [Study.self, Trial.self, Keyword.self]
}

@Suite(
    "The PostgreSQL store and other model versions",
    .enabled(if: TestServer.runs, TestServer.skipReason)
)
struct PostgresModelVersionTests {
    /// A database of the first model version, with one `Lab` saved, and a connection to it.
    private func firstVersion() throws -> (url: String, connection: PostgresConnection) {
        let url = try TestServer.freshDatabase()
        let container = try PersistentContainer(url: url, for: labEntities)
        let context = container.newContext()
        let lab = Lab(context: context)
        lab.name = "kept"
        lab.feed = 0.03
        let run = Run(context: context)
        run.step = 7
        lab.runs.append(run)
        try context.save()
        try container.close()
        return (url, try PostgresConnection(url: url))
    }

    private func state(_ connection: PostgresConnection) throws -> [[String?]] {
        try connection.execute(
            "SELECT (SELECT count(*) FROM objectlog_model_versions), "
                + "(SELECT last_commit FROM objectlog_store), (SELECT count(*) FROM \"Lab\")"
        ).rows
    }

    @Test("an attribute added is ALTER TABLE in one transaction: saved objects take its default")
    func addedAttribute() throws {
        let (url, connection) = try firstVersion()
        defer { connection.close() }
        let container = try PersistentContainer(url: url, for: LaterModel.entities)
        let context = container.newContext()
        let lab = try #require(try context.fetch(FetchRequest<LaterModel.Lab>()).first)
        #expect(lab.name == "kept")
        #expect(lab.feed == 0.03)
        #expect(lab.kill == 0.062, "the default of the added attribute")
        #expect(lab.runs.map(\.step) == [7])
        lab.kill = 0.065
        try context.save()
        try container.close()
        let column = try connection.execute(
            "SELECT is_nullable FROM information_schema.columns WHERE table_name = 'Lab' "
                + "AND column_name = 'kill'"
        ).rows
        #expect(column == [["NO"]], "a required attribute's column is NOT NULL")
        #expect(try state(connection).first?.first == "2", "the new version is recorded")
        let reopened = try PersistentContainer(url: url, for: LaterModel.entities)
        #expect(
            try reopened.newContext().fetch(FetchRequest<LaterModel.Lab>()).map(\.kill) == [0.065]
        )
        try reopened.close()
        // The earlier model may no longer open it: the store is newer.
        let error = #expect(throws: ObjectLogError.self) {
            try PersistentContainer(url: url, for: labEntities)
        }
        #expect(error?.code == .modelMismatch)
    }

    @Test("a renamed attribute is ALTER TABLE … RENAME COLUMN: the rows keep their values")
    func migratesRename() throws {
        let (url, connection) = try firstVersion()
        defer { connection.close() }
        let versions = try connection.execute(
            "SELECT objectlog_key, objectlog_version FROM \"Lab\" ORDER BY 1"
        ).rows
        let container = try PersistentContainer(url: url, for: RenamingModel.entities)
        let context = container.newContext()
        let lab = try #require(try context.fetch(FetchRequest<RenamingModel.Lab>()).first)
        #expect(lab.name == "kept")
        #expect(lab.feedRate == 0.03, "the renamed attribute's value")
        #expect(lab.runs.map(\.step) == [7])
        try container.close()
        let columns = try connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'Lab' "
                + "AND column_name IN ('feed', 'feedRate')"
        ).rows
        #expect(columns == [["feedRate"]])
        // Renamed in place: the rows were not written again.
        #expect(
            try connection.execute(
                "SELECT objectlog_key, objectlog_version FROM \"Lab\" ORDER BY 1"
            ).rows == versions
        )
        #expect(try state(connection).first?.first == "2", "the new version is recorded")
        // The model that wrote it may no longer open it: the store is newer.
        let error = #expect(throws: ObjectLogError.self) {
            try PersistentContainer(url: url, for: labEntities)
        }
        #expect(error?.code == .modelMismatch)
        let reopened = try PersistentContainer(url: url, for: RenamingModel.entities)
        #expect(
            try reopened.newContext().fetch(FetchRequest<RenamingModel.Lab>()).map(\.feedRate)
                == [0.03]
        )
        try reopened.close()
    }

    /// Two labs with runs in order and labels, saved in `store`'s database.
    private func labsWithRuns(_ store: TestStore) throws {
        let container = try store.open(for: labEntities)
        let context = container.newContext()
        let labels = ["gray", "scott"].map { text in
            let label = Label(context: context)
            label.text = text
            return label
        }
        for (index, name) in ["alpha", "beta"].enumerated() {
            let lab = Lab(context: context)
            lab.name = name
            lab.steps = Int32(1000 * (index + 1))
            lab.thumbnail = Data(repeating: UInt8(index), count: 20_000)
            for step in [3, 1, 2] {
                let run = Run(context: context)
                run.step = step + 10 * index
                lab.runs.append(run)
            }
            lab.labels = index == 0 ? Set(labels) : [labels[1]]
        }
        try context.save()
        try container.close()
    }

    /// The key and version of every row of `table`.
    private func versions(_ table: String, _ connection: PostgresConnection) throws -> [[String?]] {
        try connection.execute(
            "SELECT objectlog_key, objectlog_version FROM \"\(table)\" ORDER BY 1"
        ).rows
    }

    @Test(
        "renames are ALTER TABLE … RENAME: tables, columns, join tables and constraints keep their rows"
    )
    func renamesInPlace() throws {
        let store = try TestStore(.postgreSQL)
        try labsWithRuns(store)
        let connection = try PostgresConnection(url: store.location)
        defer { connection.close() }
        let rows = try ["Lab", "Run", "Label"].map { try versions($0, connection) }
        let pairs = try connection.execute(
            "SELECT source, destination FROM \"Lab_labels\" ORDER BY 1, 2"
        ).rows
        let container = try store.open(for: RenamedOnly.entities)
        let context = container.newContext()
        let studies = try context.fetch(RenamedOnly.Study.self).sorted { $0.title < $1.title }
        #expect(studies.map(\.title) == ["alpha", "beta"])
        #expect(studies.map { $0.trials.map(\.step) } == [[3, 1, 2], [13, 11, 12]])
        #expect(
            studies.map { $0.keywords.map(\.text).sorted() } == [["gray", "scott"], ["scott"]]
        )
        #expect(studies.map { $0.thumbnail?.count } == [20_000, 20_000])
        try container.close()
        let tables = try connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                + "AND table_name NOT LIKE 'objectlog%' ORDER BY 1"
        ).rows
        #expect(tables == [["Keyword"], ["Keyword_studies"], ["Study"], ["Trial"]])
        let columns = try connection.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE "
                + "table_name IN ('Study', 'Trial') AND column_name NOT LIKE 'objectlog%' "
                + "ORDER BY 1, 2"
        ).rows.map { "\($0[0] ?? "").\($0[1] ?? "")" }
        #expect(
            columns == [
                "Study.created", "Study.feed", "Study.notes", "Study.steps", "Study.thumbnail",
                "Study.title", "Trial.step", "Trial.study", "Trial.study_position",
            ]
        )
        let constraints = try connection.execute(
            "SELECT conname FROM pg_constraint WHERE contype = 'x' ORDER BY 1"
        ).rows
        #expect(constraints == [["Study_unique_1"]])
        // The names the server gave keys and indexes follow the tables' and columns' names,
        // as if the tables had been created so.
        let keys = try connection.execute(
            "SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) "
                + "FROM pg_constraint WHERE contype IN ('p', 'f') AND connamespace = "
                + "'public'::regnamespace AND conrelid::regclass::text NOT LIKE '%objectlog%' "
                + "ORDER BY 1"
        ).rows.compactMap { $0.first ?? nil }.map { $0.prefix { $0 != "(" } }
        #expect(
            keys == [
                "\"Keyword\" Keyword_pkey PRIMARY KEY ",
                "\"Keyword_studies\" Keyword_studies_destination_fkey FOREIGN KEY ",
                "\"Keyword_studies\" Keyword_studies_pkey PRIMARY KEY ",
                "\"Keyword_studies\" Keyword_studies_source_fkey FOREIGN KEY ",
                "\"Study\" Study_pkey PRIMARY KEY ", "\"Trial\" Trial_pkey PRIMARY KEY ",
                "\"Trial\" Trial_study_fkey FOREIGN KEY ",
            ]
        )
        let references = try connection.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f' "
                + "AND conname LIKE 'Keyword_studies%' ORDER BY 1"
        ).rows.map { "\($0[0] ?? "") \($0[1]?.prefix { $0 != ")" } ?? "")" }
        #expect(
            references == [
                "Keyword_studies_destination_fkey FOREIGN KEY (destination",
                "Keyword_studies_source_fkey FOREIGN KEY (source",
            ]
        )
        let indexes = try connection.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename "
                + "NOT LIKE 'objectlog%' ORDER BY 1"
        ).rows.compactMap { $0.first ?? nil }
        #expect(
            indexes == [
                "Keyword_pkey", "Keyword_studies_destination_idx", "Keyword_studies_pkey",
                "Keyword_studies_source_idx", "Study_pkey", "Study_sha256_idx", "Study_unique_1",
                "Trial_pkey", "Trial_study_idx",
            ]
        )
        // No row was written again: every version is the one saved.
        #expect(try ["Study", "Trial", "Keyword"].map { try versions($0, connection) } == rows)
        // The join table's sides swapped with its name: `Lab_labels` named labs first,
        // `Keyword_studies` names keywords first.
        #expect(
            try connection.execute(
                "SELECT destination, source FROM \"Keyword_studies\" ORDER BY 1, 2"
            ).rows == pairs
        )
    }

    @Test("a failure inside the migration's transaction leaves the old version, tables and rows")
    func failureInsideMigration() throws {
        let store = try TestStore(.postgreSQL)
        try labsWithRuns(store)
        let connection = try PostgresConnection(url: store.location)
        defer { connection.close() }
        // The last statement of a migration records its commit: refused there, after every
        // table has changed and every row been written.
        try connection.execute(
            "CREATE FUNCTION refuse_commit() RETURNS trigger LANGUAGE plpgsql AS "
                + "$$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$"
        )
        try connection.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON objectlog_commits FOR EACH ROW "
                + "EXECUTE FUNCTION refuse_commit()"
        )
        let before = try store.contents()
        let error = #expect(throws: ObjectLogError.self) {
            try store.open(for: RenamedEverything.entities)
        }
        #expect(error?.code == .store)
        #expect(error?.message.contains("refused by the test") == true)
        #expect(error?.message.contains("nothing was written") == true)
        #expect(try store.contents() == before)
        // The old model reads it as it was.
        let old = try store.open(for: labEntities)
        let context = old.newContext()
        let labs = try context.fetch(Lab.self).sorted { $0.name < $1.name }
        #expect(labs.map(\.steps) == [1000, 2000])
        #expect(labs.map { $0.runs.map(\.step) } == [[3, 1, 2], [13, 11, 12]])
        try old.close()
        // Without the trigger, the same migration goes through.
        try connection.execute("DROP TRIGGER refuse ON objectlog_commits")
        let container = try store.open(for: RenamedEverything.entities)
        let migrated = container.newContext()
        let studies = try migrated.fetch(RenamedEverything.Study.self).sorted {
            $0.title < $1.title
        }
        #expect(studies.map(\.steps) == [1000, 2000])
        #expect(studies.map { $0.trials.map(\.step) } == [[3, 1, 2], [13, 11, 12]])
        #expect(
            studies.map { $0.keywords.map(\.text).sorted() } == [["gray", "scott"], ["scott"]]
        )
        try container.close()
    }

    @Test("a uniqueness constraint the rows break, met in SQL, refuses the migration unwritten")
    func constraintMetInSQL() throws {
        let store = try TestStore(.postgreSQL)
        try labsWithRuns(store)
        let connection = try PostgresConnection(url: store.location)
        defer { connection.close() }
        let database = try PostgresStore(url: store.location, schema: ModelSchema(entities: []))
        defer { try? database.close() }
        // The engine checks a new constraint before it asks the store; asked directly, the
        // store's own constraint refuses it, in the transaction.
        let stored = database.tables.schema
        var schema = stored
        let label = try #require(schema.entities.firstIndex { $0.name == "Label" })
        schema.entities[label].uniquenessConstraints = [["text"]]
        try connection.execute("UPDATE \"Label\" SET text = 'same'")
        let before = try store.contents()
        let error = #expect(throws: ObjectLogError.self) {
            try database.migrateTables(TableMigration(from: stored, to: schema)) {
                var transaction = Transaction()
                transaction.put(
                    key: try database.allocateKeys(1).lowerBound,
                    entity: ModelHistory.schemaEntityTag,
                    payload: Array(schema.canonicalJSON()),
                    isInsert: true
                )
                return transaction
            }
        }
        #expect(error?.code == .uniqueness)
        #expect(error?.message.contains("'Label' on 'text'") == true)
        #expect(try store.contents() == before)
    }

    @Test("a migration planned from a version another process has migrated since is refused")
    func migratedMeanwhile() throws {
        let store = try TestStore(.postgreSQL)
        try labsWithRuns(store)
        let stale = try PostgresStore(url: store.location, schema: ModelSchema(entities: []))
        defer { try? stale.close() }
        let stored = stale.tables.schema
        try store.open(for: RenamedOnly.entities).close()
        let before = try store.contents()
        let renamed = try ManagedObjectModel(RenamedOnly.entities).schema
        let error = #expect(throws: PostgresError.self) {
            try stale.migrateTables(TableMigration(from: stored, to: renamed)) { Transaction() }
        }
        #expect(error?.message.contains("another process migrated it meanwhile") == true)
        #expect(try store.contents() == before)
    }

    @Test(
        "a staged migration is refused, the database unchanged, when another process saves meanwhile"
    )
    func savedDuringStages() throws {
        let store = try TestStore(.postgreSQL)
        try labsWithRuns(store)
        let url = store.location
        let plan = MigrationPlan(
            versions: [
                ModelVersion("1", labEntities), ModelVersion("2", RenamedEverything.entities),
            ],
            stages: [
                .custom(from: "1", to: "2") { migration in
                    // Another process, on the old model, saves while the stage runs.
                    let other = try PersistentContainer(url: url, for: labEntities)
                    let context = other.newContext()
                    Lab(context: context).name = "gamma"
                    try context.save()
                    try other.close()
                    for study in try migration.context.fetch(RenamedEverything.Study.self) {
                        study.notes = "staged"
                    }
                }
            ]
        )
        let error = #expect(throws: ObjectLogError.self) { try store.open(plan: plan) }
        #expect(error?.message.contains("changed while its migration stages ran") == true)
        // At version 1, with the other process's save and without the stage's.
        let old = try store.open(for: labEntities)
        let reading = old.newContext()
        let labs = try reading.fetch(Lab.self)
        #expect(labs.map(\.name).sorted() == ["alpha", "beta", "gamma"])
        #expect(labs.allSatisfy { $0.notes == nil })
        try old.close()
        // Run again, with no one saving, the stage goes through.
        let quiet = MigrationPlan(
            versions: plan.versions,
            stages: [
                .custom(from: "1", to: "2") { migration in
                    for study in try migration.context.fetch(RenamedEverything.Study.self) {
                        study.notes = "staged"
                    }
                }
            ]
        )
        let container = try store.open(plan: quiet)
        let migrated = container.newContext()
        let studies = try migrated.fetch(RenamedEverything.Study.self)
        #expect(studies.map(\.title).sorted() == ["alpha", "beta", "gamma"])
        #expect(studies.allSatisfy { $0.notes == "staged" })
        try container.close()
    }
}
