import Foundation
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
