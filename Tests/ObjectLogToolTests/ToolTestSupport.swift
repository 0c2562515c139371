import Foundation
import ObjectLogStore
import TestSupport

/// What one run of the `objectlog` executable did.
struct ToolRun: Sendable {
    var status: Int32
    var standardOutput: String
    var standardError: String

    /// The standard output's lines, without the final empty one.
    var lines: [String] {
        standardOutput.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(
            String.init
        )
    }

    /// The standard output parsed as JSON.
    func json() throws -> Any {
        try JSONSerialization.jsonObject(
            with: Data(standardOutput.utf8),
            options: [.fragmentsAllowed]
        )
    }

    /// The standard output parsed as one JSON object.
    func jsonObject() throws -> [String: Any] {
        guard let object = try json() as? [String: Any] else {
            throw ToolTestError("standard output is not a JSON object: \(standardOutput)")
        }
        return object
    }
}

struct ToolTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The `objectlog` executable `swift build` / `swift test` put beside the test bundle.
let toolExecutable: URL = {
    let candidates = [
        // The test runner is an executable in the build products directory.
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("objectlog"),
        Bundle.main.bundleURL.appendingPathComponent("objectlog"),
        Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("objectlog"),
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/objectlog"),
    ]
    for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path) {
        return candidate
    }
    fatalError("the objectlog executable was not built; run `swift build` first")
}()

/// Runs `objectlog` with `arguments` and returns its status and output.
func runTool(_ arguments: String..., in directory: TemporaryDirectory? = nil) throws -> ToolRun {
    try runTool(arguments: arguments, in: directory)
}

/// Runs `objectlog` with `arguments` and returns its status and output.
func runTool(
    arguments: [String],
    in directory: TemporaryDirectory? = nil,
    environment: [String: String] = [:]
) throws -> ToolRun {
    try ToolLauncher.shared.run(
        arguments: arguments,
        directory: directory?.path,
        environment: environment,
        outputPath: nil
    )
}

/// Starts `objectlog` processes from a helper shell rather than from the test process.
///
/// A process spawned from the test process shares, until its `exec`, every open file
/// description of the test process, including the writer locks of stores other tests have
/// open: a test that closes a store and reopens it at that moment finds it locked. The helper
/// shell is started once and holds no stores, so the children it starts take nothing with them.
final class ToolLauncher: @unchecked Sendable {
    static let shared = ToolLauncher()

    // Safe: `counter` and writes to `input` happen only while holding `lock`.
    private let lock = NSLock()
    private let shell = Process()
    private let input: FileHandle
    private let scratch: String
    private var counter = 0

    private init() {
        scratch =
            FileManager.default.temporaryDirectory.path + "/objectlog-launcher-"
            + UUID().uuidString
        let pipe = Pipe()
        input = pipe.fileHandleForWriting
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.standardInput = pipe
        shell.standardOutput = FileHandle.nullDevice
        shell.standardError = FileHandle.nullDevice
        do {
            try FileManager.default.createDirectory(
                atPath: scratch,
                withIntermediateDirectories: true
            )
            try shell.run()
        } catch {
            fatalError("cannot start the helper shell: \(error)")
        }
    }

    /// Runs the tool and waits for it.
    ///
    /// - Parameters:
    ///   - arguments: The tool's arguments.
    ///   - directory: The working directory, if not the test process's.
    ///   - environment: Variables to set for the tool.
    ///   - outputPath: Where standard output goes (a terminal's device), instead of being
    ///     captured.
    /// - Returns: The exit status and what the tool wrote.
    /// - Throws: ``ToolTestError`` if the tool does not finish within two minutes.
    func run(
        arguments: [String],
        directory: String?,
        environment: [String: String],
        outputPath: String?
    ) throws -> ToolRun {
        let id = lock.withLock {
            counter += 1
            return counter
        }
        let base = scratch + "/\(id)"
        let (output, error, status) = (base + ".out", base + ".err", base + ".status")
        var command = ""
        if let directory { command += "cd \(quoted(directory)) && " }
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) {
            command += "export \(name)=\(quoted(value)) && "
        }
        command += "exec " + ([toolExecutable.path] + arguments).map(quoted).joined(separator: " ")
        command += " </dev/null >\(quoted(outputPath ?? output)) 2>\(quoted(error))"
        let line =
            "{ ( \(command) ); echo $? >\(quoted(status + ".tmp")); "
            + "mv \(quoted(status + ".tmp")) \(quoted(status)); } &\n"
        try lock.withLock { try input.write(contentsOf: Data(line.utf8)) }

        let deadline = Date().addingTimeInterval(120)
        while !FileManager.default.fileExists(atPath: status) {
            guard Date() < deadline else {
                throw ToolTestError("objectlog did not finish: \(line)")
            }
            usleep(1000)
        }
        defer {
            for path in [output, error, status] {
                try? FileManager.default.removeItem(atPath: path)
            }
        }
        let statusText = String(
            decoding: FileManager.default.contents(atPath: status) ?? Data(),
            as: UTF8.self
        )
        guard let code = Int32(statusText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw ToolTestError("no exit status from: \(line)")
        }
        return ToolRun(
            status: code,
            standardOutput: String(
                decoding: FileManager.default.contents(atPath: output) ?? Data(),
                as: UTF8.self
            ),
            standardError: String(
                decoding: FileManager.default.contents(atPath: error) ?? Data(),
                as: UTF8.self
            )
        )
    }

    /// `text` in single quotes for the shell.
    private func quoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// A file's bytes and modification time, to prove a command left it alone.
struct FileState: Equatable {
    var bytes: Data
    var modification: Date

    init(_ path: String) throws {
        bytes = FileManager.default.contents(atPath: path) ?? Data()
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        modification = attributes[.modificationDate] as? Date ?? .distantPast
    }
}

// MARK: - Fixtures

/// Opens a store for writing, waiting out the moment a child process that another test is
/// spawning still shares a just-closed lock descriptor (until its `exec`).
func openWriter(_ path: String, durable: Bool = true) throws -> LogStore {
    var options = StoreOptions()
    options.durable = durable
    let deadline = Date().addingTimeInterval(2)
    while true {
        do {
            return try LogStore.open(path: path, options: options)
        } catch let error as StoreError where error.code == .locked && Date() < deadline {
            usleep(5000)
        }
    }
}

/// What a fixture store holds, for comparing with the tool's output.
struct FixtureStore {
    var path: String
    /// The live objects: key → (entity tag, payload).
    var objects: [ObjectKey: (entity: EntityTag, payload: [UInt8])]
    /// Committed transactions: (inserted, updated, deleted).
    var transactions: [(inserted: Int, updated: Int, deleted: Int)]
    var metadata: Metadata
    /// The blob written, referenced by object `blobOwner`.
    var blob: (id: BlobID, bytes: Data)?
    var blobOwner: ObjectKey?
}

/// Makes a store with a few transactions: inserts in two entities, updates, a delete, metadata
/// and (optionally) one external blob.
func makeFixtureStore(
    at path: String,
    objectCount: Int = 6,
    withBlob: Bool = false
) throws
    -> FixtureStore
{
    let store = try openWriter(path, durable: false)
    var objects: [ObjectKey: (entity: EntityTag, payload: [UInt8])] = [:]
    var transactions: [(inserted: Int, updated: Int, deleted: Int)] = []

    var first = Transaction()
    let keys = store.allocateKeys(objectCount)
    for (index, key) in keys.enumerated() {
        let entity: EntityTag = index % 3 == 0 ? 2 : 1
        let payload = Array("object \(key) version 1".utf8)
        first.put(key: key, entity: entity, payload: payload, isInsert: true)
        objects[key] = (entity, payload)
    }
    first.metadata = ["author": .string("Ada"), "gridSize": .integer(640)]
    try store.commit(first)
    transactions.append((objectCount, 0, 0))

    var second = Transaction()
    let updatedKey = keys.lowerBound
    let updated = Array("object \(updatedKey) version 2 with a longer payload".utf8)
    second.put(
        key: updatedKey,
        entity: objects[updatedKey]!.entity,
        payload: updated,
        isInsert: false
    )
    objects[updatedKey]!.payload = updated
    let deletedKey = keys.lowerBound + 1
    second.delete(key: deletedKey, entity: objects[deletedKey]!.entity)
    objects[deletedKey] = nil
    try store.commit(second)
    transactions.append((0, 1, 1))

    var blob: (id: BlobID, bytes: Data)?
    var blobOwner: ObjectKey?
    if withBlob {
        let bytes = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let id = try store.writeBlob(bytes)
        let key = store.allocateKeys(1).lowerBound
        var third = Transaction()
        let payload = Array("object with a blob".utf8)
        third.put(key: key, entity: 3, payload: payload, blobs: [id], isInsert: true)
        try store.commit(third)
        objects[key] = (3, payload)
        transactions.append((1, 0, 0))
        blob = (id, bytes)
        blobOwner = key
    }
    let metadata = store.metadata
    try store.close()
    return FixtureStore(
        path: path,
        objects: objects,
        transactions: transactions,
        metadata: metadata,
        blob: blob,
        blobOwner: blobOwner
    )
}

/// Appends a transaction and cuts it in half, as a crash during a save leaves the file.
///
/// - Returns: The offset of the first damaged record of the torn transaction.
func appendTornTail(to path: String) throws -> UInt64 {
    let store = try openWriter(path, durable: false)
    let start = store.fileBytes
    var transaction = Transaction()
    let key = store.allocateKeys(1).lowerBound
    transaction.put(
        key: key,
        entity: 1,
        payload: Array(repeating: 0x41, count: 200),
        isInsert: true
    )
    try store.commit(transaction)
    let end = store.fileBytes
    try store.close()
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    try handle.truncate(atOffset: start + (end - start) / 2)
    try handle.close()
    // The index now covers a commit that is gone; remove it so the damage is all there is.
    try? FileManager.default.removeItem(atPath: path + "-index")
    // The store must see a torn tail that begins where the last whole commit ended.
    guard let damage = try StoreInspection(path: path).damage, damage.kind == .tornTail,
        damage.validEnd == start, damage.offset >= start
    else { throw ToolTestError("cutting the last transaction did not leave a torn tail") }
    return damage.offset
}

/// Flips one byte inside the first transaction's first record (later commits stay valid).
///
/// - Returns: The offset of the damaged record.
func corruptFirstRecord(of path: String) throws -> UInt64 {
    let inspection = try StoreInspection(path: path)
    guard let first = inspection.transactions.first else {
        throw ToolTestError("the store has no transaction to corrupt")
    }
    var bytes = FileManager.default.contents(atPath: path)!
    // A byte of the first record's stored checksum: the record no longer matches it, whatever
    // the record's layout.
    let target = Int(first.offset) + 1
    bytes[target] ^= 0xFF
    try bytes.write(to: URL(fileURLWithPath: path))
    try? FileManager.default.removeItem(atPath: path + "-index")
    return first.offset
}

/// Copies the committed format fixture `name` (`v2.0.olog`, `v3.0.olog`) into `directory`.
///
/// - Returns: The copy's path.
func copyFormatFixture(_ name: String, to directory: TemporaryDirectory) throws -> String {
    let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("ObjectLogStoreTests/Fixtures/\(name)")
    let path = directory.file(name)
    try FileManager.default.copyItem(atPath: fixture.path, toPath: path)
    return path
}

/// The names of the files in `directory`, sorted.
func fileNames(in directory: TemporaryDirectory) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
}
