import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Errors: localized descriptions and underlying causes")
struct ErrorReportingTests {
    @Test("localizedDescription is the message, not Foundation's generic sentence")
    func localizedDescription() throws {
        let error = ObjectLogError(
            .validation,
            "save failed",
            errors: [ObjectLogError(.validation, "Note#3.folder is required")]
        )
        #expect(error.localizedDescription == "save failed\n  - Note#3.folder is required")
        #expect(error.errorDescription == error.description)
        // The same through `any Error`, as logging code sees it.
        let erased: any Error = ObjectLogError(.notFound, "no object Cell#9")
        #expect(erased.localizedDescription == "no object Cell#9")
        #expect("\(erased)" == "no object Cell#9")
    }

    @Test("an error a will-save handler throws is kept as the underlying error")
    func willSaveHandlerErrorIsKept() throws {
        struct QuotaExceeded: Error, Equatable { var limit: Int }
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        context.onWillSave { _ in throw QuotaExceeded(limit: 3) }
        _ = Cell(context: context)
        let error = try #require(throws: ObjectLogError.self) { try context.save() }
        #expect(error.code == .callbackFailed)
        #expect(error.underlyingError as? QuotaExceeded == QuotaExceeded(limit: 3))
        #expect(error.message == "a will-save handler failed: QuotaExceeded(limit: 3)")
        // Nothing was saved, and the change is still there.
        #expect(context.hasChanges)
        #expect(try container.newContext().count(FetchRequest<Cell>()) == 0)
    }

    @Test("an ObjectLogError a will-save handler throws passes through unchanged")
    func willSaveHandlerObjectLogError() throws {
        let container = try PersistentContainer.inMemory(for: testEntities)
        let context = container.newContext()
        context.onWillSave { context in
            try context.coordinator.setMetadata(.integer(1), forKey: "ObjectLog.mine")
        }
        _ = Cell(context: context)
        let error = try #require(throws: ObjectLogError.self) { try context.save() }
        #expect(error.code == .invalidArgument)
        #expect(error.message.hasPrefix("metadata key 'ObjectLog.mine' is reserved"))
        #expect(error.underlyingError == nil)
    }

    /// A new store in `directory`, closed, then opened read-only: every save is refused.
    private func openReadOnly(
        _ directory: TemporaryDirectory
    ) throws -> (path: String, container: PersistentContainer) {
        let path = directory.file("test.objectlog")
        try makeContainer(directory).close()
        return (
            path, try PersistentContainer(path: path, for: testEntities, options: .readOnlyExisting)
        )
    }

    @Test("a commit the store refuses keeps the store's error")
    func commitKeepsStoreError() throws {
        let directory = TemporaryDirectory()
        let (path, container) = try openReadOnly(directory)
        let context = container.newContext()
        _ = Cell(context: context)
        let error = try #require(throws: ObjectLogError.self) { try context.save() }
        #expect(error.code == .store)
        #expect(error.storeError?.code == .readOnly)
        #expect(error.storeError?.path == path)
        #expect(error.message == "cannot commit the save: \(path): the store is open read-only")
    }

    @Test("external data the store cannot write keeps the store's error")
    func externalDataKeepsStoreError() throws {
        let directory = TemporaryDirectory()
        let (_, container) = try openReadOnly(directory)
        let context = container.newContext()
        let snapshot = Snapshot(context: context)
        snapshot.state = Data(count: StoreOptions().externalStorageMinimumByteCount)
        let error = try #require(throws: ObjectLogError.self) { try context.save() }
        #expect(error.code == .store)
        #expect(error.storeError?.code == .readOnly)
        #expect(error.message.hasPrefix("cannot write external data of 'state': "))
    }

    @Test("a damaged record met by a bulk fault load keeps the store's error")
    func bulkFaultLoadKeepsStoreError() throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        let writer = container.newContext()
        // Enough faults left after the single loads for the context to load the rest at once.
        let count =
            ManagedObjectContext.faultsForBulkLoad + ManagedObjectContext.faultsBeforeBulkLoad
        for row in 0..<count { Cell(context: writer).row = row }
        try writer.save()
        // Damage the last record (its checksum no longer matches), which the single loads
        // before the bulk load do not read.
        let ids = try container.newContext().fetchIdentifiers(FetchRequest<Cell>())
        let last = try #require(ids.max { $0.key < $1.key })
        let location = try #require(container.coordinator.logStore!.location(of: last.key))
        let handle = try #require(FileHandle(forUpdatingAtPath: directory.file("test.objectlog")))
        let offset = location.offset + UInt64(location.length) - 1
        try handle.seek(toOffset: offset)
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: Data([byte ^ 0xFF]))
        try handle.close()

        let context = container.newContext()
        context.tracer = ContextTracer()
        let cells = try ids.sorted { $0.key < $1.key }.map {
            try context.object(with: $0, as: Cell.self)
        }
        for cell in cells.prefix(ManagedObjectContext.faultsBeforeBulkLoad) { _ = cell.row }
        #expect(context.statistics.bulkFaultLoads == 1)
        let error = try #require(context.faultError)
        #expect(error.code == .store)
        #expect(error.storeError?.code == .corrupt)
        #expect(error.storeError?.offset != nil)
    }

    @Test("a Codable attribute's encoding error is kept as the underlying error")
    func codableErrorIsKept() throws {
        let container = try PersistentContainer.inMemory(for: [Gadget.self])
        let context = container.newContext()
        let gadget = Gadget(context: context)
        gadget.part = Part(refuses: true)
        let error = try #require(throws: ObjectLogError.self) { try context.save() }
        #expect(error.code == .invalidValue)
        #expect(error.underlyingError is Part.Refusal)
    }

    @Test("a schema that cannot be decoded keeps the decoder's error")
    func schemaDecodingErrorIsKept() throws {
        let error = try #require(throws: ObjectLogError.self) {
            try ModelSchema.decode(json: Data(#"{"entities": 3}"#.utf8))
        }
        #expect(error.code == .corrupt)
        #expect(error.underlyingError is DecodingError)
    }

    @Test("a payload the store inspector cannot decode keeps the payload error")
    func payloadErrorIsKept() throws {
        let model = try ManagedObjectModel(testEntities)
        let entity = try #require(model.schema.entity(named: "Configuration"))
        // No property count at all, then a count followed by a string cut short.
        for bytes: [UInt8] in [[], [UInt8(entity.properties.count), 0x05, 0x41]] {
            let error = try bytes.withUnsafeBytes { buffer in
                try #require(throws: ObjectLogError.self) {
                    try StoreInspector.decode(payload: buffer, entity: entity)
                }
            }
            #expect(error.code == .corrupt)
            #expect(error.underlyingError is PayloadError, "\(bytes)")
        }
    }

    @Test("a stored payload that cannot be decoded fails a fetch with corrupt, the cause kept")
    func undecodablePayloadKeepsCause() throws {
        let directory = TemporaryDirectory()
        let container = try makeContainer(directory)
        let tag = try #require(container.coordinator.model.entity(for: Cell.self)?.tag)
        // A record whose checksum holds but whose value stops after the property count.
        let store = container.coordinator.logStore!
        var transaction = Transaction()
        let count = UInt8(
            try #require(container.coordinator.model.entity(for: Cell.self))
                .accessors.count
        )
        transaction.put(
            key: store.allocateKeys(1).lowerBound,
            entity: tag,
            payload: [count],
            isInsert: true
        )
        try store.commit(transaction)
        let context = container.newContext()
        let error = try #require(throws: ObjectLogError.self) {
            try context.fetch(FetchRequest<Cell>(predicate: #Predicate { $0.row >= 0 }))
        }
        #expect(error.code == .corrupt)
        #expect(error.underlyingError is PayloadError)
        try container.close()
    }
}

/// A `Codable` value whose encoding can be made to fail.
struct Part: Codable {
    struct Refusal: Error {}
    var refuses = false

    init(refuses: Bool = false) { self.refuses = refuses }

    init(from decoder: any Decoder) throws {
        refuses = try decoder.singleValueContainer().decode(Bool.self)
    }

    func encode(to encoder: any Encoder) throws {
        if refuses { throw Refusal() }
        var container = encoder.singleValueContainer()
        try container.encode(refuses)
    }
}

final class Gadget: ManagedObject {
    @Attribute var part = Part()
}
