import Foundation
import ObjectLogStore

/// A fresh temporary directory, removed when the value is released.
final class TemporaryDirectory: @unchecked Sendable {
    let path: String

    init() {
        path =
            FileManager.default.temporaryDirectory.path + "/objectlog-tool-tests-"
            + UUID().uuidString
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            fatalError("cannot create a temporary directory: \(error)")
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    /// The names in the directory (and in the blob directories beside stores), sorted.
    func listing() -> [String] {
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? []
        return names.sorted()
    }
}

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
func runTool(arguments: [String], in directory: TemporaryDirectory? = nil) throws -> ToolRun {
    let process = Process()
    process.executableURL = toolExecutable
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory.path) }
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Both pipes are drained while the tool runs, so a large dump cannot fill a pipe and stall.
    let errorData = LockedData()
    let errorReader = Thread {
        errorData.set(error.fileHandleForReading.readDataToEndOfFile())
    }
    errorReader.start()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    while !errorData.isSet { usleep(1000) }
    return ToolRun(
        status: process.terminationStatus,
        standardOutput: String(decoding: outputData, as: UTF8.self),
        standardError: String(decoding: errorData.value, as: UTF8.self)
    )
}

/// Data handed from a reader thread.
final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data: Data?

    func set(_ value: Data) { lock.withLock { data = value } }
    var isSet: Bool { lock.withLock { data != nil } }
    var value: Data { lock.withLock { data ?? Data() } }
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
/// - Returns: The offset where the torn transaction begins.
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
    return start
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
    let target = Int(first.offset) + 30
    bytes[target] ^= 0xFF
    try bytes.write(to: URL(fileURLWithPath: path))
    try? FileManager.default.removeItem(atPath: path + "-index")
    return first.offset
}
