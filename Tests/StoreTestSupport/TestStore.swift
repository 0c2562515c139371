import Foundation
import ObjectLog
import ObjectLogPostgreSQL
import TestSupport
import Testing

/// A kind of store the engine's suites run on: the same tests, from one source, on each.
public enum TestStoreKind: String, Sendable, CaseIterable, CustomTestStringConvertible {
    /// The log store, in a file of a temporary directory.
    case logFile
    /// The memory store (``PersistentContainer/inMemory(for:)``).
    case memory
    /// The PostgreSQL store, in a new database of the test server.
    case postgreSQL

    public var testDescription: String { rawValue }

    /// Every kind the tests can run on here: PostgreSQL only when a server runs (the suite
    /// "PostgreSQL is available to the store suites" reports why not, as skipped).
    public static var available: [TestStoreKind] {
        [.logFile, .memory] + (TestServer.runs ? [.postgreSQL] : [])
    }

    /// The kinds whose data outlives a container, for tests that reopen a store.
    public static var persistent: [TestStoreKind] {
        available.filter { $0 != .memory }
    }
}

/// A store of one kind for one test: where it is, and containers of it.
///
/// ```swift
/// @Test(arguments: TestStoreKind.persistent)
/// func survivesReopen(kind: TestStoreKind) throws {
///     let store = try TestStore(kind)
///     let container = try store.open(for: testEntities)
///     …
///     let reopened = try store.open(for: testEntities)
/// }
/// ```
public final class TestStore: Sendable {
    public let kind: TestStoreKind
    /// The file's path or the database's URL; empty for memory.
    public let location: String
    private let directory: TemporaryDirectory?

    /// A new, empty store of `kind`.
    public init(_ kind: TestStoreKind) throws {
        self.kind = kind
        switch kind {
        case .logFile:
            let directory = TemporaryDirectory()
            self.directory = directory
            location = directory.file("test.objectlog")
        case .memory:
            directory = nil
            location = ""
        case .postgreSQL:
            directory = nil
            location = try TestServer.freshDatabase()
        }
    }

    /// A container of the store for the model of `types`.
    ///
    /// Each container of a memory store is a new, empty store: tests that reopen run on
    /// ``TestStoreKind/persistent`` kinds.
    public func open(for types: [ManagedObject.Type]) throws -> PersistentContainer {
        try open(model: ManagedObjectModel(types))
    }

    /// A container of the store for `model`.
    public func open(model: ManagedObjectModel) throws -> PersistentContainer {
        switch kind {
        case .logFile: try PersistentContainer(path: location, model: model)
        case .memory: try PersistentContainer.inMemory(model: model)
        case .postgreSQL: try PersistentContainer(url: location, model: model)
        }
    }
}
