import Foundation
import ObjectLog
import TestSupport

// MARK: - The rdlab-like test model

struct RenderSettings: Codable, Equatable {
    var palette = "viridis"
    var gamma = 1.0
}

final class Configuration: ManagedObject {
    @Attribute(.unique) var name = ""
    @Attribute var model = "GrayScott"
    @Attribute var feed = 0.055
    @Attribute var kill = 0.062
    @Attribute var timestep: Float = 0.02
    @Attribute var width: Int32 = 256
    @Attribute var seed: UInt64 = 0
    @Attribute var isFavorite = false
    @Attribute var created = Date(timeIntervalSinceReferenceDate: 0)
    @Attribute var identifier = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    @Attribute var homepage: URL? = nil
    @Attribute var notes: String? = nil
    @Attribute var render = RenderSettings()
    @Attribute(.externalStorage) var thumbnail: Data? = nil
    @Attribute(.transient) var scratch = 0
    @Relationship(inverse: \Snapshot.configuration, deleteRule: .cascade)
    var snapshots: Set<Snapshot>
}

final class Snapshot: ManagedObject {
    @Attribute var step = 0
    @Attribute(.externalStorage) var state = Data()
    @Attribute var timestamp = Date(timeIntervalSinceReferenceDate: 0)
    @Relationship var configuration: Configuration?
}

/// Entities for relationship-rule tests.
final class Folder: ManagedObject {
    @Attribute var title = ""
    @Relationship(inverse: \Note.folder, deleteRule: .deny) var notes: [Note]
    @Relationship(deleteRule: .nullify, minimumCount: 0, maximumCount: 2) var tags: Set<Tag>
}

final class Note: ManagedObject {
    @Attribute var text = ""
    @Relationship(isRequired: true) var folder: Folder?
}

final class Tag: ManagedObject {
    @Attribute var label = ""
}

/// An entity with a compound uniqueness constraint.
final class Cell: ManagedObject {
    @Attribute var row = 0
    @Attribute var column = 0
    @Attribute var value = 0.0
    override class var uniquenessConstraints: [[String]] { [["row", "column"]] }
}

let testEntities: [ManagedObject.Type] = [
    Configuration.self, Snapshot.self, Folder.self, Note.self, Tag.self, Cell.self,
]

func makeContainer(
    _ directory: TemporaryDirectory,
    name: String = "test.objectlog"
) throws
    -> PersistentContainer
{
    try PersistentContainer(path: directory.file(name), for: testEntities)
}

/// The package's root directory, from the path of a file in `Tests/<Target>/` (`#filePath`).
func packageRoot(of testFile: String) -> URL {
    URL(fileURLWithPath: testFile).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
}

/// The Swift code blocks of a Markdown text, each as written, up to and including the newline
/// of its last line.
func swiftCodeBlocks(in markdown: String) -> [String] {
    markdown.components(separatedBy: "```swift\n").dropFirst().map {
        $0.components(separatedBy: "```")[0]
    }
}

/// The Swift code blocks of the DocC article `name` (in ObjectLog's catalog), each as the test
/// file at `testFile` holds it: indented by `indentation` spaces (into the file's namespace,
/// by default, with functions made static).
/// - Returns: The blocks so written, and the test file's text to look for them in.
func articleCodeBlocks(
    _ name: String,
    asIn testFile: String,
    indentation: Int = 4
) throws -> (blocks: [String], source: String) {
    let article = try String(
        contentsOf: packageRoot(of: testFile)
            .appendingPathComponent("Sources/ObjectLog/ObjectLog.docc/\(name)"),
        encoding: .utf8
    )
    let indent = String(repeating: " ", count: indentation)
    let blocks = swiftCodeBlocks(in: article).map { block in
        block.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in
                if line.isEmpty { return "" }
                return indent + (line.hasPrefix("func ") ? "static " : "") + line
            }
            .joined(separator: "\n")
    }
    return (blocks, try String(contentsOf: URL(fileURLWithPath: testFile), encoding: .utf8))
}

/// A container of the log store with its files held in memory, for tests of what only the log
/// store does (its records, compaction, statistics), where ``PersistentContainer/inMemory(for:)``
/// would give the memory store.
func makeLogInMemoryContainer(for types: [ManagedObject.Type]) throws -> PersistentContainer {
    try PersistentContainer(path: ":memory:", for: types, options: .inMemory)
}
