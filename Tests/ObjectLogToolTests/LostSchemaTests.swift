import Foundation
import ObjectLog
import ObjectLogStore
import TestSupport
import Testing

// Two versions of a model: version 2 adds `priority` and the entity `Label`. In the store,
// `Note` keeps tag 1 and `Label` takes 2; a new store of version 2 tags them the other way
// round (names in order), so its recorded schema has another hash than the migrated store's.

final class LostNoteV1: ManagedObject {
    @Attribute var title = ""
    override class var entityName: String { "Note" }
}

final class LostNoteV2: ManagedObject {
    @Attribute var title = ""
    @Attribute var priority = 3
    override class var entityName: String { "Note" }
}

final class LostLabel: ManagedObject {
    @Attribute var text = ""
    override class var entityName: String { "Label" }
}

let lostModelV2: [ManagedObject.Type] = [LostNoteV2.self, LostLabel.self]

@Suite("A damaged record that held a model version's schema costs only its transaction")
struct LostSchemaTests {
    /// What the damaged store holds.
    struct DamagedStore {
        var path: String
        /// The hash of version 2, whose schema record is damaged.
        var lostHash: String
        /// Every note the intact transactions hold: title → priority.
        var notes: [String: Int]
    }

    /// A store whose record of version 2's schema is damaged.
    ///
    /// Version 1 writes three notes; version 2 migrates the store, then saves two notes and a
    /// metadata value. Transaction 3 (the migration) is lost; the metadata of transaction 5
    /// still names version 2.
    func damagedStore(in directory: TemporaryDirectory) throws -> DamagedStore {
        let path = directory.file("notes.olog")
        let first = try PersistentContainer(path: path, for: [LostNoteV1.self])
        let context = first.newContext()
        for index in 1...3 { LostNoteV1(context: context).title = "old \(index)" }
        try context.save()
        try first.close()
        let second = try PersistentContainer(path: path, for: lostModelV2)
        let newer = second.newContext()
        for index in 1...2 {
            let note = LostNoteV2(context: newer)
            note.title = "new \(index)"
            note.priority = 10 + index
        }
        try newer.save()
        try second.setMetadata(.string("after"), forKey: "stage")
        try newer.save()
        try second.close()

        let store = try LogStore.open(path: path)
        let metadata = store.metadata
        try store.close()
        guard case .array(let versions)? = metadata[ModelHistory.versionsKey], versions.count == 2,
            case .dictionary(let version)? = versions.last,
            case .integer(let key)? = version["key"], case .string(let hash)? = version["hash"],
            case .integer(let transaction)? = version["transaction"], transaction == 3
        else { throw ToolTestError("unexpected model versions: \(metadata)") }
        let record = try #require(try StoreInspection(path: path).liveObjects[ObjectKey(key)])
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[Int(record.offset) + Int(record.length) - 2] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        return DamagedStore(
            path: path,
            lostHash: hash,
            notes: ["old 1": 3, "old 2": 3, "old 3": 3, "new 1": 11, "new 2": 12]
        )
    }

    /// A new, empty store of `types`.
    func emptyStore(
        _ name: String,
        of types: [ManagedObject.Type],
        in directory: TemporaryDirectory
    )
        throws -> String
    {
        let path = directory.file(name)
        try PersistentContainer(path: path, for: types).close()
        return path
    }

    /// The notes of the store at `path`, opened with version 2: title → priority.
    func notes(at path: String, options: StoreOptions = StoreOptions()) throws -> [String: Int] {
        let container = try PersistentContainer(path: path, for: lostModelV2, options: options)
        defer { try? container.close() }
        var notes: [String: Int] = [:]
        for note in try container.newContext().fetch(LostNoteV2.self) {
            notes[note.title] = note.priority
        }
        return notes
    }

    @Test("recover without --model-from refuses with exit 65, says what to supply, writes nothing")
    func refusedWithoutModel() throws {
        let directory = TemporaryDirectory()
        let damaged = try damagedStore(in: directory)
        let before = try FileState(damaged.path)
        let files = try fileNames(in: directory)
        let run = try runTool("recover", damaged.path)
        #expect(run.status == 65)
        #expect(run.standardError.contains("lost the schema of model version \(damaged.lostHash)"))
        #expect(run.standardError.contains("--model-from"))
        #expect(run.standardError.split(separator: "\n").count == 1)
        #expect(try fileNames(in: directory) == files)
        #expect(try FileState(damaged.path) == before)

        // A store that does not record that version is refused too.
        let older = try emptyStore("v1.olog", of: [LostNoteV1.self], in: directory)
        let files2 = try fileNames(in: directory)
        let wrong = try runTool("recover", damaged.path, "--model-from", older)
        #expect(wrong.status == 65)
        #expect(wrong.standardError.contains("\(older) does not record that version"))
        #expect(try fileNames(in: directory) == files2)
        #expect(try FileState(damaged.path) == before)
        // So is a --model-from that is no store at all, or none.
        let missing = try runTool("recover", damaged.path, "--model-from", directory.file("no"))
        #expect(missing.status == 66)
        #expect(try runTool("recover", damaged.path, "--model-from", "").status == 64)
        #expect(try FileState(damaged.path) == before)
    }

    @Test(
        "recover --model-from keeps every intact transaction and writes the schema back: the engine opens the result"
    )
    func recoveredWithModel() throws {
        let directory = TemporaryDirectory()
        let damaged = try damagedStore(in: directory)
        let before = try FileState(damaged.path)
        // A new store of version 2 tags its entities otherwise: its schema is the lost
        // version once tagged as the migration tagged it.
        let model = try emptyStore("model.olog", of: lostModelV2, in: directory)
        let modelHash = try runTool("info", model, "--json").jsonObject()["modelHash"] as? String
        #expect(modelHash != nil && modelHash != damaged.lostHash)
        let output = directory.file("recovered.olog")
        let run = try runTool("recover", damaged.path, "--output", output, "--model-from", model)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.lines.first == "recovered 5 live object(s) from \(damaged.path) into \(output)")
        #expect(
            run.standardOutput.contains(
                "restored: the schema of model version \(damaged.lostHash)"
            )
        )
        #expect(run.standardOutput.contains("lost: transaction 3 "))
        #expect(try FileState(damaged.path) == before)

        // The engine opens the recovered store as it is, without salvage.
        #expect(try notes(at: output) == damaged.notes)
        let verify = try runTool("verify", output, "--json")
        #expect(verify.status == 0, "\(verify.standardOutput)")
        #expect(try verify.jsonObject()["liveObjects"] as? Int == 5)
        let info = try runTool("info", output, "--json").jsonObject()
        #expect(info["modelVersion"] as? Int == 2)
        #expect(info["modelHash"] as? String == damaged.lostHash)
        #expect(info["liveObjects"] as? Int == 5)
        #expect(info["transactions"] as? Int == 5)
    }

    @Test("repair --model-from repairs in place; the engine opens the store as it is")
    func repairedWithModel() throws {
        let directory = TemporaryDirectory()
        let damaged = try damagedStore(in: directory)
        let before = try FileState(damaged.path)
        #expect(try runTool("repair", damaged.path).status == 65)
        #expect(try FileState(damaged.path) == before)
        let model = try emptyStore("model.olog", of: lostModelV2, in: directory)
        let run = try runTool("repair", damaged.path, "--model-from", model)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(
            run.lines.first?.hasPrefix("repaired \(damaged.path): 5 live object(s) kept") == true
        )
        #expect(try notes(at: damaged.path) == damaged.notes)
    }

    @Test(
        "the engine's salvaging open takes the app's model for a lost schema when it is that version, and only then"
    )
    func salvagingOpen() throws {
        let directory = TemporaryDirectory()
        let damaged = try damagedStore(in: directory)
        let before = try FileState(damaged.path)
        var options = StoreOptions()
        options.salvage = true
        #expect(try notes(at: damaged.path, options: options) == damaged.notes)
        // Version 1 is not the lost version: refused, not misread.
        let error = #expect(throws: ObjectLogError.self) {
            try PersistentContainer(path: damaged.path, for: [LostNoteV1.self], options: options)
        }
        #expect(error?.message.contains("lost the schema of model version") == true)
        #expect(error?.underlyingError is ModelHistory.LostSchema)
        #expect(try FileState(damaged.path) == before)
        // An open that does not salvage refuses the damaged store.
        #expect(throws: ObjectLogError.self) {
            try PersistentContainer(path: damaged.path, for: lostModelV2)
        }
        #expect(try FileState(damaged.path) == before)
    }

    @Test("info and verify name the lost schema")
    func readCommandsNameTheLostSchema() throws {
        let directory = TemporaryDirectory()
        let damaged = try damagedStore(in: directory)
        let info = try runTool("info", damaged.path)
        #expect(info.status == 65)
        #expect(
            info.standardOutput.contains("lost the schema of model version \(damaged.lostHash)")
        )
        #expect(info.standardOutput.contains("'objectlog recover \(damaged.path) --model-from"))
        let verify = try runTool("verify", damaged.path, "--json")
        #expect(verify.status == 65)
        let problems = try #require(try verify.jsonObject()["problems"] as? [[String: Any]])
        #expect(problems.contains { $0["kind"] as? String == "schema" })
    }
}
