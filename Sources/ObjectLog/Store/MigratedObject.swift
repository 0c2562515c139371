import Foundation
import ObjectLogStore

/// An object as an older model version stored it, read property by property: what a rewriting
/// migration stage (``MigrationStage/rewrite(from:to:entities:)``) sees of each old object.
///
/// A property is decoded when it is read, so a stage pays only for the properties it reads.
public struct StoredObject: Sendable {
    /// The object's key.
    public let key: ObjectKey
    let layout: EntityLayout
    /// The record's value, in the old version's layout.
    let bytes: [UInt8]

    init(key: ObjectKey, layout: EntityLayout, bytes: [UInt8]) {
        self.key = key
        self.layout = layout
        self.bytes = bytes
    }

    /// The entity's name in the old version.
    public var entity: String { layout.name }

    /// The names of the old version's properties, in payload order.
    public var propertyNames: [String] { layout.names }

    /// The value of the property `name`, or nil if the old version has no such property.
    public subscript(name: String) -> StoredValue? {
        guard let index = layout.index(of: name) else { return nil }
        return try? value(at: index)
    }

    /// Every property's value, in payload order.
    public var values: [(name: String, value: StoredValue)] {
        layout.names.indices.compactMap { index in
            (try? value(at: index)).map { (layout.names[index], $0) }
        }
    }

    /// Decodes the property at `index`.
    func value(at index: Int) throws -> StoredValue {
        try bytes.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            _ = try reader.readVarint()
            for shape in layout.shapes[..<index] { try shape.skip(&reader) }
            return try StoredValue.decode(layout.shapes[index], from: &reader)
        }
    }
}

/// An object of the new model version as a rewriting migration stage makes it (see
/// ``MigrationStage/rewrite(from:to:entities:)``): its values by property name, starting as the
/// inferred migration gives them.
///
/// Setting a property replaces its value; only the properties set are encoded anew, the
/// others are translated from the old record's bytes as the inferred migration translates them.
public struct MigratedObject: Sendable {
    /// The object's key, the same as the old object's.
    public let key: ObjectKey
    let entry: RewriteEntry
    /// The old object, whose bytes the properties not set come from.
    let old: StoredObject
    /// Properties set by the stage, by index in the new version's properties.
    private(set) var changes: [(index: Int, value: StoredValue)]
    /// Names set that the entity does not have (reported once the stage returns).
    private(set) var unknownNames: [String] = []

    init(
        key: ObjectKey,
        entry: RewriteEntry,
        old: StoredObject,
        changes: [(index: Int, value: StoredValue)]
    ) {
        self.key = key
        self.entry = entry
        self.old = old
        self.changes = changes
    }

    /// The entity's name in the new version.
    public var entity: String { entry.new.name }

    /// The names of the new version's properties, in payload order.
    public var propertyNames: [String] { entry.new.names }

    /// The value of the property `name`: the one set, else the inferred one.
    ///
    /// Nil for a name the entity does not have. Setting nil stores `.null`; setting a name the
    /// entity does not have fails the stage, naming it.
    public subscript(name: String) -> StoredValue? {
        get {
            guard let index = entry.new.index(of: name) else { return nil }
            if let change = changes.first(where: { $0.index == index }) { return change.value }
            return try? inferredValue(at: index)
        }
        set {
            guard let index = entry.new.index(of: name) else {
                unknownNames.append(name)
                return
            }
            if let slot = changes.firstIndex(where: { $0.index == index }) {
                changes[slot].value = newValue ?? .null
            } else {
                changes.append((index, newValue ?? .null))
            }
        }
    }

    /// The value the inferred migration gives the property at `index`.
    func inferredValue(at index: Int) throws -> StoredValue {
        var writer = PayloadWriter()
        try old.bytes.withUnsafeBytes { value in
            var ranges: [Range<Int>] = []
            try entry.transcoder.findRanges(in: value, into: &ranges)
            try entry.transcoder.write(
                step: index,
                of: value,
                ranges: ranges,
                blob: entry.blob,
                into: &writer
            )
        }
        return try writer.withUnsafeBytes { buffer in
            var reader = PayloadReader(buffer)
            return try StoredValue.decode(entry.new.shapes[index], from: &reader)
        }
    }

    /// Hands the storage of the changes back for the next object, leaving none.
    mutating func takeChanges() -> [(index: Int, value: StoredValue)] {
        defer { changes = [] }
        return changes
    }
}

/// The names and value shapes of one entity's properties in one version, shared by every
/// object a rewriting stage visits.
final class EntityLayout: Sendable {
    let name: String
    let names: [String]
    let shapes: [ValueShape]

    init(_ entity: ModelSchema.Entity) {
        name = entity.name
        names = entity.properties.map(\.name)
        shapes = entity.properties.map(ValueShape.init)
    }

    /// The index of the property `name`.
    func index(of name: String) -> Int? {
        names.firstIndex(of: name)
    }
}

/// What a rewriting stage knows of one entity: its layouts in both versions, the inferred
/// translation between them and the stage's closure.
final class RewriteEntry: Sendable {
    let tag: EntityTag
    let old: EntityLayout
    let new: EntityLayout
    let transcoder: EntityTranscoder
    let closure: MigrationStage.ObjectRewrite
    /// Reads an external blob of the store, for data the inferred migration moves inline.
    let blob: @Sendable (BlobID) throws -> Data

    init(
        tag: EntityTag,
        old: ModelSchema.Entity,
        new: ModelSchema.Entity,
        transcoder: EntityTranscoder,
        closure: @escaping MigrationStage.ObjectRewrite,
        blob: @escaping @Sendable (BlobID) throws -> Data
    ) {
        self.tag = tag
        self.old = EntityLayout(old)
        self.new = EntityLayout(new)
        self.transcoder = transcoder
        self.closure = closure
        self.blob = blob
    }
}
