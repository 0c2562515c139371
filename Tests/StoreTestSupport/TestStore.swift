import Foundation
import ObjectLog
import ObjectLogPostgreSQL
import ObjectLogStore
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

    /// A container of the store for the model of `types`, declaring the removals
    /// `removing`.
    ///
    /// Each container of a memory store is a new, empty store: tests that reopen run on
    /// ``TestStoreKind/persistent`` kinds.
    public func open(
        for types: [ManagedObject.Type],
        removing: [String] = [],
        readOnly: Bool = false,
        migratesStoreAutomatically: Bool = true
    ) throws -> PersistentContainer {
        try open(
            model: ManagedObjectModel(types, removing: removing),
            readOnly: readOnly,
            migratesStoreAutomatically: migratesStoreAutomatically
        )
    }

    /// A container of the store for `model`.
    public func open(
        model: ManagedObjectModel,
        readOnly: Bool = false,
        migratesStoreAutomatically: Bool = true
    ) throws -> PersistentContainer {
        switch kind {
        case .logFile:
            var options = StoreOptions()
            options.readOnly = readOnly
            options.createIfMissing = !readOnly
            return try PersistentContainer(
                path: location,
                model: model,
                options: options,
                migratesStoreAutomatically: migratesStoreAutomatically
            )
        case .memory:
            return try PersistentContainer.inMemory(model: model)
        case .postgreSQL:
            return try PersistentContainer(
                url: location,
                model: model,
                readOnly: readOnly,
                migratesStoreAutomatically: migratesStoreAutomatically
            )
        }
    }

    /// A container of the store with the last version of `plan`, its stages run first.
    public func open(
        plan: MigrationPlan,
        migratesStoreAutomatically: Bool = true,
        progress: ((MigrationProgress) -> Void)? = nil
    ) throws -> PersistentContainer {
        guard kind != .memory else { throw TestStoreError.notPersistent }
        return try PersistentContainer(
            url: location,
            plan: plan,
            migratesStoreAutomatically: migratesStoreAutomatically,
            progress: progress
        )
    }

    /// What opening the store with the model of `types` would do.
    public func migrationPreview(
        for types: [ManagedObject.Type],
        removing: [String] = [],
        migratesStoreAutomatically: Bool = true
    ) throws -> MigrationPreview {
        guard kind != .memory else { throw TestStoreError.notPersistent }
        return try PersistentContainer.migrationPreview(
            url: location,
            for: types,
            removing: removing,
            migratesStoreAutomatically: migratesStoreAutomatically
        )
    }

    /// Everything the store holds, as lines to compare: to show that a refused open or
    /// migration wrote nothing.
    ///
    /// A file's: each file of its directory and its bytes. A database's: its tables, columns,
    /// constraints and indexes as the catalog describes them, and every row of every table.
    public func contents() throws -> [String] {
        switch kind {
        case .logFile:
            guard let directory else { return [] }
            return directory.fileContents().sorted { $0.key < $1.key }.map { name, bytes in
                "\(name): \(bytes.base64EncodedString())"
            }
        case .memory:
            throw TestStoreError.notPersistent
        case .postgreSQL:
            let connection = try PostgresConnection(url: location)
            defer { connection.close() }
            var lines: [String] = []
            func add(_ query: String) throws {
                for row in try connection.execute(query).rows {
                    lines.append(row.map { $0 ?? "NULL" }.joined(separator: " | "))
                }
            }
            try add(
                "SELECT table_name, column_name, data_type, is_nullable, column_default FROM "
                    + "information_schema.columns WHERE table_schema = 'public' "
                    + "ORDER BY table_name, ordinal_position"
            )
            try add(
                "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM "
                    + "pg_constraint WHERE connamespace = 'public'::regnamespace ORDER BY 1, 2"
            )
            try add(
                "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = "
                    + "'public' ORDER BY 1, 2"
            )
            let tables = try connection.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                    + "ORDER BY 1"
            ).rows.compactMap { $0.first ?? nil }
            for table in tables {
                let name = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                lines.append("table \(table)")
                try add("SELECT row_to_json(t)::text FROM \(name) t ORDER BY 1")
            }
            return lines
        }
    }
}

/// What a test store throws for what its kind cannot do.
public enum TestStoreError: Error {
    /// A memory store outlives no container: it has no versions to migrate.
    case notPersistent
}
