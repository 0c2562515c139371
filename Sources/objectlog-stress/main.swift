// objectlog-stress: the child process of the reliability tests and of tools/reliability.
//
//   objectlog-stress save-loop PATH            insert one object per durable save, forever,
//                                              printing each save's sequence number once it returned
//   objectlog-stress open-writer PATH MILLIS|stdin  open for writing and hold it (for MILLIS, or
//                                              until stdin closes); exit 0, or 75 if locked
//   objectlog-stress read-loop PATH SECONDS    open read-only again and again; exit 1 if a state is
//                                              not a committed prefix (sequences 1...n, no gaps)
//   objectlog-stress check PATH N              exit 0 if sequences 1...N (and at most N+1) are present
//   objectlog-stress soak-writer PATH          take turns with other writers, forever: wait for the
//                                              writer lock, then a few saves (each the next sequence,
//                                              printed once acknowledged), a metadata change or a
//                                              compaction, then close and let the others in

import Foundation
import ObjectLog

#if canImport(Glibc)
import Glibc
#endif

/// One object per save: its sequence number and a payload that varies in size.
final class StressItem: ManagedObject {
    @Attribute var sequence = 0
    @Attribute var payload = Data()
}

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    exit(code)
}

func sequences(in path: String) throws -> [Int] {
    var options = StoreOptions()
    options.readOnly = true
    let container = try PersistentContainer(path: path, for: [StressItem.self], options: options)
    // The context must outlive the faults it hands out.
    let context = container.newContext()
    return try context.fetch(FetchRequest<StressItem>()).map(\.sequence).sorted()
}

/// The stress item in a second model version, which keeps its sequence as text: a change that
/// needs a custom migration stage.
final class StressItemText: ManagedObject {
    @Attribute var sequence = ""
    @Attribute var payload = Data()
    override class var entityName: String { "StressItem" }
}

/// Version 1 (`StressItem`) to version 2 (`StressItemText`), converting every object.
let textPlan = MigrationPlan(
    versions: [ModelVersion("1", [StressItem.self]), ModelVersion("2", [StressItemText.self])],
    stages: [
        .custom(from: "1", to: "2") { migration in
            for old in try migration.oldObjects("StressItem") {
                guard case .int(let sequence)? = old["sequence"] else { continue }
                try migration.newObject(for: old, as: StressItemText.self)?.sequence =
                    "#\(sequence)"
            }
        }
    ]
)

/// The store opened for writing, or nil while another process holds its writer lock.
func openUnlessLocked(_ path: String) throws -> PersistentContainer? {
    do {
        return try PersistentContainer(path: path, for: [StressItem.self])
    } catch {
        if error.storeError?.code == .locked { return nil }
        throw error
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch (arguments.first, arguments.count) {
    case ("save-loop", 2):
        let container = try PersistentContainer(path: arguments[1], for: [StressItem.self])
        let context = container.newContext()
        var sequence = try context.count(FetchRequest<StressItem>())
        var generator = SystemRandomNumberGenerator()
        while true {
            sequence += 1
            let item = StressItem(context: context)
            item.sequence = sequence
            item.payload = Data(
                (0..<Int.random(in: 0..<3000, using: &generator)).map {
                    UInt8(truncatingIfNeeded: $0)
                }
            )
            try context.save()
            // Acknowledged: the save returned.
            print(sequence)
            fflush(nil)
        }
    case ("soak-writer", 2):
        var generator = SystemRandomNumberGenerator()
        while true {
            // Another writer's turn while the store is locked.
            guard let container = try openUnlessLocked(arguments[1]) else {
                usleep(UInt32.random(in: 1_000...20_000, using: &generator))
                continue
            }
            let context = container.newContext()
            // The highest sequence present: a killed writer's last save may be there, unacknowledged.
            var sequence =
                try context.fetch(FetchRequest<StressItem>()).map(\.sequence).max() ?? 0
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                switch Int.random(in: 0..<10, using: &generator) {
                case 0:
                    _ = try container.compact()
                    print("compacted")
                    fflush(nil)
                case 1:
                    try container.setMetadata(.integer(Int64(sequence)), forKey: "soak.sequence")
                    try context.save()
                    print("metadata")
                    fflush(nil)
                default:
                    sequence += 1
                    let item = StressItem(context: context)
                    item.sequence = sequence
                    item.payload = Data(
                        repeating: UInt8(truncatingIfNeeded: sequence),
                        count: Int.random(in: 0..<2000, using: &generator)
                    )
                    try context.save()
                    print(sequence)
                    fflush(nil)
                }
            }
            try container.close()
            usleep(UInt32.random(in: 0...5_000, using: &generator))
        }
    case ("migrate-prepare", 3):
        // A version 1 store of N objects, sequences 1...N.
        let container = try PersistentContainer(path: arguments[1], for: [StressItem.self])
        let context = container.newContext()
        for sequence in 1...max(1, Int(arguments[2]) ?? 1) {
            let item = StressItem(context: context)
            item.sequence = sequence
            item.payload = Data(repeating: UInt8(truncatingIfNeeded: sequence), count: 64)
        }
        try context.save()
        try container.close()
    case ("migrate", 2):
        try PersistentContainer(path: arguments[1], plan: textPlan).close()
        print("migrated")
    case ("migrate-check", 3):
        // Prints the version the store is at (1 or 2) after checking that all N objects are there
        // in that version's form.
        let count = Int(arguments[2]) ?? 0
        var options = StoreOptions()
        options.readOnly = true
        options.createIfMissing = false
        var versions = 0
        if case .array(let list)? = try PersistentContainer.metadataForStore(at: arguments[1])[
            ModelHistory.versionsKey
        ] {
            versions = list.count
        }
        if versions == 1 {
            let found = try sequences(in: arguments[1])
            guard found == Array(1...count) else {
                fail("version 1 holds \(found.count) of the \(count) objects", code: 1)
            }
        } else if versions == 2 {
            let container = try PersistentContainer(
                path: arguments[1],
                for: [StressItemText.self],
                options: options
            )
            let context = container.newContext()
            let found = try context.fetch(FetchRequest<StressItemText>()).map(\.sequence)
            guard Set(found) == Set((1...count).map { "#\($0)" }) else {
                fail("version 2 holds \(found.count) objects, not the \(count) converted", code: 1)
            }
        } else {
            fail("the store records \(versions) model versions", code: 1)
        }
        print(versions)
    case ("open-writer", 3):
        let container: PersistentContainer
        do {
            container = try PersistentContainer(path: arguments[1], for: [StressItem.self])
        } catch {
            if error.storeError?.code == .locked { exit(75) }
            throw error
        }
        if arguments[2] == "stdin" {
            // Hold the lock until the parent closes our standard input.
            print("won")
            fflush(nil)
            _ = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            usleep(UInt32((Int(arguments[2]) ?? 0) * 1000))
        }
        try container.close()
    case ("read-loop", 3):
        let deadline = Date().addingTimeInterval(Double(arguments[2]) ?? 1)
        var reads = 0
        while Date() < deadline {
            let found = try sequences(in: arguments[1])
            guard found == Array(1..<(found.count + 1)) else {
                fail("read \(found.count) objects that are not a committed prefix", code: 1)
            }
            reads += 1
        }
        print(reads)
    case ("check", 3):
        let acknowledged = Int(arguments[2]) ?? 0
        if acknowledged == 0 && !FileManager.default.fileExists(atPath: arguments[1]) {
            // Killed before the store was created: nothing was acknowledged, nothing is owed.
            print(0)
            exit(0)
        }
        let found = try sequences(in: arguments[1])
        guard found == Array(1..<(found.count + 1)) else {
            fail("sequences have gaps: \(found.prefix(10)) … \(found.suffix(3))", code: 1)
        }
        guard found.count >= acknowledged else {
            fail(
                "\(acknowledged) saves were acknowledged but only \(found.count) are present",
                code: 1
            )
        }
        guard found.count <= acknowledged + 1 else {
            fail(
                "\(found.count) objects present but only \(acknowledged) (+1 in flight) were saved",
                code: 1
            )
        }
        print(found.count)
    default:
        fail(
            "usage: objectlog-stress save-loop PATH | soak-writer PATH | open-writer PATH MILLIS | "
                + "read-loop PATH SECONDS | check PATH N",
            code: 64
        )
    }
} catch {
    fail("\(error)", code: 1)
}
