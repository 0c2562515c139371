import Foundation
import ObjectLogStore
import TestSupport
import Testing

@Suite("dump, compact, meta and recover")
struct WritingCommandTests {
    @Test("dump prints every live object once, in ascending id order, with its entity and payload")
    func dumpNDJSON() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"), objectCount: 9)
        let run = try runTool("dump", fixture.path)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardError.isEmpty)
        #expect(run.lines.count == fixture.objects.count)
        var ids: [ObjectKey] = []
        for line in run.lines {
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            )
            let id = try #require(object["id"] as? Int)
            ids.append(ObjectKey(id))
            let expected = try #require(fixture.objects[ObjectKey(id)])
            #expect(object["entity"] as? String == "entity \(expected.entity)")
            let attributes = try #require(object["attributes"] as? [String: Any])
            let payload = try #require(attributes["payload"] as? String)
            #expect(Data(base64Encoded: payload).map(Array.init) == expected.payload)
            #expect((object["relationships"] as? [String: Any])?.isEmpty == true)
        }
        #expect(ids == fixture.objects.keys.sorted())
    }

    @Test("dump --entity keeps one entity; --format json is one array of the same objects")
    func dumpFilterAndArray() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"), objectCount: 9)
        let filtered = try runTool("dump", fixture.path, "--entity", "entity 2")
        #expect(filtered.status == 0)
        #expect(filtered.lines.count == fixture.objects.values.filter { $0.entity == 2 }.count)
        #expect(filtered.lines.allSatisfy { $0.contains("\"entity\":\"entity 2\"") })
        #expect(
            try runTool("dump", fixture.path, "--entity", "2").standardOutput
                == filtered.standardOutput
        )

        let array = try runTool("dump", fixture.path, "--format", "json")
        #expect(array.status == 0)
        let objects = try #require(try array.json() as? [[String: Any]])
        let lines = try runTool("dump", fixture.path).lines
        #expect(objects.count == lines.count)
        for (object, line) in zip(objects, lines) {
            let fromLine = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? NSDictionary
            #expect(fromLine == object as NSDictionary)
        }

        let unknown = try runTool("dump", fixture.path, "--entity", "Nope")
        #expect(unknown.status == 64)
        #expect(unknown.standardError.hasPrefix("error: no entity named 'Nope' in "))

        let empty = directory.file("empty.olog")
        try openWriter(empty).close()
        let none = try runTool("dump", empty, "--format", "json")
        #expect(none.standardOutput == "[]\n")
    }

    @Test("dump shows external blobs by SHA-256 and length, and their content with --full-blobs")
    func dumpBlobs() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"), withBlob: true)
        let blob = fixture.blob!
        let line = try #require(
            try runTool("dump", fixture.path).lines.first { $0.contains("\"blobs\"") }
        )
        #expect(line.contains("\"id\":\(fixture.blobOwner!)"))
        #expect(line.contains("{\"length\":\(blob.bytes.count),\"sha256\":\"\(blob.id.hex)\"}"))
        #expect(!line.contains("base64"))
        let full = try #require(
            try runTool("dump", fixture.path, "--full-blobs").lines.first {
                $0.contains("\"blobs\"")
            }
        )
        #expect(full.contains("\"base64\":\"\(blob.bytes.base64EncodedString())\""))
    }

    @Test("compact reclaims the dead bytes, keeps dump output identical and removes orphan blobs")
    func compact() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"), withBlob: true)
        // An orphan blob: written but never committed.
        let writer = try openWriter(fixture.path)
        let orphan = try writer.writeBlob(Data(repeating: 9, count: 3000))
        try writer.close()
        let dumpBefore = try runTool("dump", fixture.path)
        let sizeBefore = try FileState(fixture.path).bytes.count

        let run = try runTool("compact", fixture.path)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(run.standardError.isEmpty)
        let sizeAfter = try FileState(fixture.path).bytes.count
        #expect(sizeAfter < sizeBefore)
        #expect(run.lines[0] == "compacted \(fixture.path) (generation 1 -> 2)")
        #expect(run.lines.contains { $0.hasPrefix("  bytes before:  \(sizeBefore) bytes") })
        #expect(run.lines.contains { $0.hasPrefix("  bytes after:   \(sizeAfter) bytes") })
        #expect(
            run.lines.contains { $0.hasPrefix("  reclaimed:     \(sizeBefore - sizeAfter) bytes") }
        )
        #expect(run.lines.contains("  live objects:  \(fixture.objects.count)"))
        #expect(run.lines.contains("  blobs removed: 1 (3000 bytes (2.9 KiB))"))
        #expect(!run.standardOutput.contains("\r"), "no progress bar when stdout is not a terminal")
        #expect(!FileManager.default.fileExists(atPath: fixture.path + "-blobs/" + orphan.hex))

        #expect(try runTool("dump", fixture.path).standardOutput == dumpBefore.standardOutput)
        #expect(try runTool("verify", fixture.path).status == 0)

        let again = try runTool("compact", fixture.path, "--json").jsonObject()
        #expect(again["generation"] as? Int == 3)
        #expect(again["bytesBefore"] as? Int == sizeAfter)
        #expect(again["objects"] as? Int == fixture.objects.count)
        #expect(again["blobsRemoved"] as? Int == 0)
    }

    @Test("compact --discard-torn-tail drops an interrupted save and keeps every commit")
    func compactTornTail() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let dumpBefore = try runTool("dump", fixture.path).standardOutput
        _ = try appendTornTail(to: fixture.path)
        let run = try runTool("compact", fixture.path, "--discard-torn-tail")
        #expect(run.status == 0, "\(run.standardError)")
        #expect(try runTool("verify", fixture.path).status == 0)
        #expect(try runTool("dump", fixture.path).standardOutput == dumpBefore)
    }

    @Test("meta prints, gets, sets each type and deletes entries")
    func meta() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let path = fixture.path
        #expect(try runTool("meta", path).lines == ["author (string): Ada", "gridSize (int): 640"])
        #expect(try runTool("meta", path, "get", "gridSize").standardOutput == "640\n")

        let set = try runTool("meta", path, "set", "rate", "-0.25", "--type", "double")
        #expect(set.status == 0, "\(set.standardError)")
        #expect(set.standardOutput == "set rate (double) = -0.25\n")
        #expect(try runTool("meta", path, "set", "count", "-12", "--type=int").status == 0)
        #expect(try runTool("meta", path, "set", "enabled", "true", "--type", "bool").status == 0)
        #expect(try runTool("meta", path, "set", "author", "Grace Hopper").status == 0)

        let store = try StoreAccessForTests.openReadOnly(path)
        #expect(
            store.metadata == [
                "author": .string("Grace Hopper"), "gridSize": .integer(640),
                "rate": .double(-0.25), "count": .integer(-12), "enabled": .bool(true),
            ]
        )
        try store.close()
        let json = try runTool("meta", path, "--json").jsonObject()
        #expect(json["rate"] as? Double == -0.25)
        #expect(json["enabled"] as? Bool == true)
        #expect(
            try runTool("meta", path, "get", "author", "--json").standardOutput
                == "\"Grace Hopper\"\n"
        )

        let delete = try runTool("meta", path, "delete", "count")
        #expect(delete.status == 0)
        #expect(delete.standardOutput == "deleted count\n")
        #expect(try LogStore.readMetadata(path: path)["count"] == nil)
        #expect(try runTool("verify", path).status == 0)
    }

    @Test("meta get and delete of an absent key exit 1 without writing")
    func metaAbsentKey() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let before = try FileState(fixture.path)
        for action in ["get", "delete"] {
            let run = try runTool("meta", fixture.path, action, "nope")
            #expect(run.status == 1)
            #expect(run.standardOutput.isEmpty)
            #expect(run.standardError == "error: \(fixture.path): no metadata key 'nope'\n")
        }
        #expect(try FileState(fixture.path).bytes == before.bytes)
    }

    @Test("meta refuses to set or delete the engine's reserved keys", arguments: ["set", "delete"])
    func metaReserved(_ action: String) throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let before = try FileState(fixture.path)
        var arguments = ["meta", fixture.path, action, "ObjectLog.model"]
        if action == "set" { arguments.append("{}") }
        let run = try runTool(arguments: arguments)
        #expect(run.status == 64)
        #expect(
            run.standardError
                == "error: cannot \(action) 'ObjectLog.model': keys starting with 'ObjectLog.' are "
                + "reserved for the ObjectLog engine (its model schema); they change only when an "
                + "app opens the store with a new model\n"
        )
        #expect(try FileState(fixture.path) == before)
    }

    @Test(
        "recover keeps every intact transaction of a corrupted store, drops only the damaged one and names what it held"
    )
    func recoverCorrupt() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"), withBlob: true)
        // Damage a transaction while a later commit stays valid.
        let writer = try openWriter(fixture.path)
        var extra = Transaction()
        let extraKey = writer.allocateKeys(1).lowerBound
        extra.put(key: extraKey, entity: 1, payload: Array("late".utf8), isInsert: true)
        let damaged = try writer.commit(extra)
        var later = Transaction()
        var laterMetadata = writer.metadata
        laterMetadata["after"] = .bool(true)
        later.metadata = laterMetadata
        let kept = try writer.commit(later)
        try writer.close()
        var bytes = FileManager.default.contents(atPath: fixture.path)!
        bytes[Int(damaged.offset) + 1] ^= 0x55  // the first record's stored checksum
        try bytes.write(to: URL(fileURLWithPath: fixture.path))
        let before = try FileState(fixture.path)

        let output = directory.file("saved.olog")
        let run = try runTool("recover", fixture.path, "--output", output)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(
            run.lines[0]
                == "recovered \(fixture.objects.count) live object(s) from \(fixture.path) into \(output)"
        )
        // Lost: only the damaged transaction; the one after it is kept.
        #expect(
            run.lines[1].hasPrefix(
                "lost: transaction \(damaged.number) (bytes \(damaged.offset)–\(kept.offset)): "
                    + "corruption at offset \(damaged.offset): record checksum mismatch"
            ),
            "\(run.lines)"
        )
        #expect(
            run.lines[2]
                == "  damaged record at offset \(damaged.offset), apparently object #\(extraKey) "
                + "(entity 1): what it changed is unknown"
        )
        #expect(run.lines.count == 3)
        #expect(try FileState(fixture.path) == before)

        #expect(try runTool("verify", output).status == 0)
        let recovered = try runTool("dump", output).standardOutput
        #expect(recovered.split(separator: "\n").count == fixture.objects.count)
        #expect(try LogStore.readMetadata(path: output) == laterMetadata)
        #expect(FileManager.default.fileExists(atPath: output + "-blobs/" + fixture.blob!.id.hex))

        let exists = try runTool("recover", fixture.path, "--output", output)
        #expect(exists.status == 73)
        #expect(
            exists.standardError
                == "error: \(output): already exists; choose a new path with --output\n"
        )

        let noDirectory = try runTool(
            "recover",
            fixture.path,
            "-o",
            directory.file("no/such/dir.olog")
        )
        #expect(noDirectory.status == 73)
        // One line naming the output, never the temporary file beside it.
        #expect(
            noDirectory.standardError
                == "error: \(directory.file("no/such/dir.olog")): cannot create: the directory "
                + "\(directory.file("no/such")) does not exist\n"
        )
        #expect(!noDirectory.standardError.contains("-new"))
    }

    @Test(
        "repair replaces a corrupted store by its intact transactions in place, keeps the original as .damaged, and the store then verifies clean and takes saves"
    )
    func repairInPlace() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let path = fixture.path
        let first = try StoreInspection(path: path).transactions[0]
        var bytes = FileManager.default.contents(atPath: path)!
        bytes[Int(first.offset) + 1] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(try runTool("verify", path).status == 65)

        let run = try runTool("repair", path)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(
            run.lines[0]
                == "repaired \(path): 1 live object(s) kept; the damaged original is \(path).damaged"
        )
        #expect(run.lines[1].hasPrefix("lost: transaction 1 (bytes \(first.offset)–"))
        #expect(
            run.lines[2]
                == "  damaged record at offset \(first.offset), apparently object #1 (entity 2): "
                + "what it changed is unknown"
        )
        // The rest of transaction 1's records, each with what the store holds now.
        #expect(
            run.lines.contains(
                "  object #3 (entity 1): insert lost: the object is not in the store"
            )
        )
        #expect(run.lines.last == "  metadata change lost: the metadata is the store header's")
        #expect(FileManager.default.contents(atPath: path + ".damaged") == bytes)
        #expect(try runTool("verify", path).status == 0)
        #expect(try runTool("meta", path, "set", "author", "Bob").status == 0)
        #expect(try runTool("meta", path, "get", "author").standardOutput == "Bob\n")
        #expect(try runTool("dump", path).lines.count == 1)

        let again = try runTool("repair", path)
        #expect(again.status == 0)
        #expect(again.lines == ["\(path): not damaged; nothing to repair"])
    }

    @Test("repair refuses while another process writes the store, and when a .damaged copy exists")
    func repairRefusals() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let path = fixture.path
        _ = try corruptFirstRecord(of: path)
        let before = try FileState(path)
        try Data().write(to: URL(fileURLWithPath: path + ".damaged"))
        let exists = try runTool("repair", path)
        #expect(exists.status == 73)
        #expect(
            exists.standardError
                == "error: \(path).damaged: already exists (an earlier or interrupted repair's copy "
                + "of the damaged store); move it away and repair again\n"
        )
        try FileManager.default.removeItem(atPath: path + ".damaged")
        // Another process's writer lock (held here, through the store's own lock file).
        let lock = try PosixFileSystem().open(path + "-lock", mode: .create(permissions: 0o600))
        try lock.lockExclusive()
        let locked = try runTool("repair", path)
        lock.close()
        #expect(locked.status == 74)
        #expect(locked.standardError.contains("being written by another process"))
        #expect(!FileManager.default.fileExists(atPath: path + ".damaged"))
        #expect(try FileState(path) == before)
    }

    @Test("recover of a clean store copies it and says nothing was lost; default output name")
    func recoverClean() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"))
        let run = try runTool("recover", "a.olog", in: directory)
        #expect(run.status == 0)
        #expect(
            run.lines == [
                "recovered \(fixture.objects.count) live object(s) from a.olog into a.olog.recovered",
                "nothing was lost: the store is not damaged",
            ]
        )
        #expect(
            try runTool("dump", fixture.path).standardOutput
                == (try runTool("dump", directory.file("a.olog.recovered")).standardOutput)
        )
    }

    @Test("recover names an external blob it could not copy")
    func recoverMissingBlob() throws {
        let directory = TemporaryDirectory()
        let fixture = try makeFixtureStore(at: directory.file("a.olog"), withBlob: true)
        let blobPath = fixture.path + "-blobs/" + fixture.blob!.id.hex
        try FileManager.default.removeItem(atPath: blobPath)
        let output = directory.file("saved.olog")
        let run = try runTool("recover", fixture.path, "-o", output)
        #expect(run.status == 0, "\(run.standardError)")
        #expect(
            run.lines == [
                "recovered \(fixture.objects.count) live object(s) from \(fixture.path) into \(output)",
                "lost: external blob \(blobPath): referenced by a live object, but missing or damaged",
            ]
        )
    }
}
