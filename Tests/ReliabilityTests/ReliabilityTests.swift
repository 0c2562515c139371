import Foundation
import Testing

#if canImport(Glibc)
import Glibc
import TestSupport
#endif

/// The long forms (RELIABILITY.md's figures) run with `OBJECTLOG_LONG_TESTS=1`.
private let longTests = ProcessInfo.processInfo.environment["OBJECTLOG_LONG_TESTS"] == "1"

/// The `objectlog-stress` executable that `swift build` / `swift test` put beside the tests.
private let stressExecutable: URL = {
    let candidates = [
        Bundle.main.bundleURL.appendingPathComponent("objectlog-stress"),
        Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent(
            "objectlog-stress"
        ),
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/objectlog-stress"),
    ]
    for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path) {
        return candidate
    }
    fatalError("the objectlog-stress executable was not built; run `swift build` first")
}()

/// Starts `objectlog-stress ARGUMENTS`, its output going to a pipe (and its error output to
/// `errors`, if given).
private func start(_ arguments: [String], errors: Pipe? = nil) throws -> (Process, Pipe) {
    let process = Process()
    process.executableURL = stressExecutable
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = errors ?? FileHandle.nullDevice
    try process.run()
    return (process, output)
}

/// Runs `objectlog-stress ARGUMENTS` to the end; returns its exit status and output.
private func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let (process, output) = try start(arguments)
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

@Suite("Reliability with real processes", .serialized)
struct ReliabilityTests {
    @Test("SIGKILL at random moments never loses a save that returned")
    func realKills() throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/kills.olog"
        var generator = SystemRandomNumberGenerator()
        let kills = longTests ? 2000 : 150
        var acknowledged = 0
        for round in 0..<kills {
            let (process, output) = try start(["save-loop", path])
            usleep(UInt32.random(in: 2_000...40_000, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let lines = String(
                decoding: output.fileHandleForReading.readDataToEndOfFile(),
                as: UTF8.self
            )
            .split(separator: "\n")
            if let last = lines.last.flatMap({ Int($0) }) { acknowledged = last }
            let check = try run(["check", path, String(acknowledged)])
            #expect(check.status == 0, "after kill \(round): \(check.output)")
            if check.status != 0 { return }
            // What is present now is the new baseline: a save in flight at the kill may be there.
            acknowledged =
                Int(check.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? acknowledged
        }
        #expect(acknowledged > 0)
        print("real kills: \(kills) SIGKILLs, \(acknowledged) saves acknowledged, 0 lost")
    }

    @Test("processes racing to open for writing: exactly one wins each race")
    func writerRaces() throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/race.olog"
        // Create the store first, so every race is about the lock, not the creation.
        #expect(try run(["open-writer", path, "0"]).status == 0)
        let races = longTests ? 1000 : 40
        var generator = SystemRandomNumberGenerator()
        for race in 0..<races {
            let contenders = Int.random(in: 2...8, using: &generator)
            // The winner holds the lock until its standard input closes, so a contender that
            // starts late on a loaded machine still meets a held lock.
            var processes: [(process: Process, input: Pipe)] = []
            for _ in 0..<contenders {
                let process = Process()
                process.executableURL = stressExecutable
                process.arguments = ["open-writer", path, "stdin"]
                let input = Pipe()
                process.standardInput = input
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                processes.append((process, input))
            }
            let deadline = Date().addingTimeInterval(30)
            while processes.filter({ $0.process.isRunning }).count > 1 && Date() < deadline {
                usleep(10_000)
            }
            for entry in processes { try entry.input.fileHandleForWriting.close() }
            var statuses: [Int32] = []
            for entry in processes {
                entry.process.waitUntilExit()
                statuses.append(entry.process.terminationStatus)
            }
            let winners = statuses.filter { $0 == 0 }.count
            let refused = statuses.filter { $0 == 75 }.count
            #expect(winners == 1 && refused == contenders - 1, "race \(race): statuses \(statuses)")
        }
        print("writer races: \(races), each exactly one winner")
    }

    @Test(
        "soak: writers take turns (saves, metadata, compactions) under random SIGKILLs while readers read"
    )
    func soak() throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/soak.olog"
        let minutes = Double(ProcessInfo.processInfo.environment["OBJECTLOG_SOAK_MINUTES"] ?? "")
        let seconds = minutes.map { $0 * 60 } ?? (longTests ? 120 : 8)
        var generator = SystemRandomNumberGenerator()
        // The store exists before the readers start: a reader of a missing store fails.
        #expect(try run(["open-writer", path, "0"]).status == 0)
        var processes: [Process] = []
        var outputs: [Pipe] = []
        for _ in 0..<3 {
            let (process, output) = try start(["soak-writer", path])
            processes.append(process)
            outputs.append(output)
        }
        let readerErrors = [Pipe(), Pipe()]
        let readers = try readerErrors.map { errors in
            try start(["read-loop", path, String(Int(seconds.rounded(.up)))], errors: errors)
        }
        let tally = SoakTally()
        var kills = 0
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            usleep(UInt32.random(in: 20_000...300_000, using: &generator))
            let victim = Int.random(in: 0..<processes.count, using: &generator)
            kill(processes[victim].processIdentifier, SIGKILL)
            processes[victim].waitUntilExit()
            tally.collect(outputs[victim])
            kills += 1
            let (process, output) = try start(["soak-writer", path])
            processes[victim] = process
            outputs[victim] = output
        }
        for (process, output) in zip(processes, outputs) {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            tally.collect(output)
        }
        var reads = 0
        var readersFailed = false
        for ((reader, output), errors) in zip(readers, readerErrors) {
            let data = output.fileHandleForReading.readDataToEndOfFile()
            reader.waitUntilExit()
            let message = String(
                decoding: errors.fileHandleForReading.readDataToEndOfFile(),
                as: UTF8.self
            )
            #expect(reader.terminationStatus == 0, "a reader failed: \(message)")
            if reader.terminationStatus != 0 { readersFailed = true }
            reads +=
                Int(
                    String(decoding: data, as: UTF8.self).trimmingCharacters(
                        in: .whitespacesAndNewlines
                    )
                ) ?? 0
        }
        // Every acknowledged save is there, with no gap, and at most one unacknowledged after it.
        let check = try run(["check", path, String(tally.acknowledged)])
        #expect(check.status == 0, "\(check.output)")
        #expect(tally.saves > 0 && kills > 0)
        print(
            "soak: \(Int(seconds)) s, 3 writers taking turns, \(kills) SIGKILLs, \(tally.saves) saves "
                + "acknowledged (up to sequence \(tally.acknowledged)), \(tally.metadataChanges) metadata changes, "
                + "\(tally.compactions) compactions, 2 readers with \(reads) reads, "
                + (check.status == 0 ? "0 lost" : "SAVES LOST") + ", "
                + (readersFailed ? "A READER FAILED" : "every read a committed prefix")
        )
    }

    @Test("SIGKILL at random moments of a staged migration leaves version 1 or version 2, whole")
    func migrationKills() throws {
        let directory = TemporaryDirectory()
        var generator = SystemRandomNumberGenerator()
        let kills = longTests ? 200 : 12
        var outcomes: [String: Int] = [:]
        for round in 0..<kills {
            let path = directory.path + "/migrate\(round).olog"
            #expect(try run(["migrate-prepare", path, "3000"]).status == 0)
            let (process, _) = try start(["migrate", path])
            usleep(UInt32.random(in: 0...400_000, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let check = try run(["migrate-check", path, "3000"])
            #expect(check.status == 0, "after kill \(round): \(check.output)")
            let version = check.output.trimmingCharacters(in: .whitespacesAndNewlines)
            outcomes[version, default: 0] += 1
            // The next open with the plan completes the migration, whatever was left.
            #expect(try run(["migrate", path]).status == 0)
            #expect(try run(["migrate-check", path, "3000"]).output.hasPrefix("2"))
        }
        print(
            "migration kills: \(kills) SIGKILLs, \(outcomes["1"] ?? 0) left version 1, "
                + "\(outcomes["2"] ?? 0) version 2, none between"
        )
    }

    @Test("readers in other processes always see a committed prefix while a writer appends")
    func readersDuringWrites() throws {
        let directory = TemporaryDirectory()
        let path = directory.path + "/readers.olog"
        // The store exists before the readers start: a reader of a missing store fails.
        #expect(try run(["open-writer", path, "0"]).status == 0)
        let (writer, _) = try start(["save-loop", path])
        defer {
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
        }
        usleep(200_000)
        let seconds = longTests ? "30" : "2"
        let readers = try (0..<2).map { _ in try start(["read-loop", path, seconds]) }
        for (reader, output) in readers {
            let data = output.fileHandleForReading.readDataToEndOfFile()
            reader.waitUntilExit()
            #expect(reader.terminationStatus == 0)
            #expect(
                (Int(
                    String(decoding: data, as: UTF8.self).trimmingCharacters(
                        in: .whitespacesAndNewlines
                    )
                ) ?? 0) > 0
            )
        }
    }
}

/// What the soak's writers reported: acknowledged sequences, metadata changes, compactions.
private final class SoakTally {
    var acknowledged = 0
    var saves = 0
    var compactions = 0
    var metadataChanges = 0

    /// Reads an ended writer's output.
    func collect(_ output: Pipe) {
        let text = String(
            decoding: output.fileHandleForReading.readDataToEndOfFile(),
            as: UTF8.self
        )
        for line in text.split(separator: "\n") {
            if let sequence = Int(line) {
                acknowledged = max(acknowledged, sequence)
                saves += 1
            } else if line == "compacted" {
                compactions += 1
            } else if line == "metadata" {
                metadataChanges += 1
            }
        }
    }
}
