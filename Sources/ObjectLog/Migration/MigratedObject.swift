import Foundation
import ObjectLogStore

/// An object as an older model version stored it, read property by property: what a rewriting
/// migration stage (``MigrationStage/rewrite(from:to:entities:)``) sees of each old object.
///
/// A property is decoded when it is read, so a stage pays only for the properties it reads.
public struct StoredObject: Sendable {
    /// The object's key.
    public let key: ObjectKey
    /// The record's layout, bytes and the ranges of its values, in one reference: a stage
    /// makes one stored object for every record it visits.
    let record: StoredRecord
    var layout: EntityLayout { record.layout }
    /// The record's value, in the old version's layout.
    var bytes: [UInt8] { record.bytes }
    /// Where each property's value lies in `bytes` (found once per record: every read and the
    /// new record's encoding use them).
    var ranges: [Range<Int>] { record.ranges }

    init(key: ObjectKey, record: StoredRecord) {
        self.key = key
        self.record = record
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
        try record.bytes.withUnsafeBytes { buffer in
            var reader = PayloadReader(
                UnsafeRawBufferPointer(rebasing: buffer[record.ranges[index]])
            )
            return try StoredValue.decode(record.layout.shapes[index], from: &reader)
        }
    }
}

/// One old record as a rewriting stage reads it.
///
/// Immutable once a ``StoredObject`` refers to it: the stage's rewriter refills one only while
/// it holds the only reference (a stage that keeps an object gets a fresh record next time),
/// and each rewriter is used by one thread at a time.
final class StoredRecord: @unchecked Sendable {
    // Without the run-time exclusivity checks of a class's stored properties: only the
    // rewriter that holds the only reference writes them.
    @exclusivity(unchecked) var layout: EntityLayout
    @exclusivity(unchecked) var bytes: [UInt8] = []
    @exclusivity(unchecked) var ranges: [Range<Int>] = []

    init(layout: EntityLayout) {
        self.layout = layout
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
    /// The value the stage set for each of the new version's properties, nil where it set
    /// none (indexed, so that a set and the encoding's lookup cost no search).
    private(set) var changes: [StoredValue?]
    /// Names set that the entity does not have (reported once the stage returns).
    private(set) var unknownNames: [String] = []
    /// Bit `i` set when the stage set the property at index `i` (below 64): the rewriter
    /// asks whether a run of properties was set without looking at each of their changes.
    private(set) var changedBits: UInt64 = 0

    init(
        key: ObjectKey,
        entry: RewriteEntry,
        old: StoredObject,
        changes: [StoredValue?]
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
            if let change = changes[index] { return change }
            return try? inferredValue(at: index)
        }
        set {
            guard let index = entry.new.index(of: name) else {
                unknownNames.append(name)
                return
            }
            changes[index] = newValue ?? .null
            if index < 64 { changedBits |= 1 << UInt64(index) }
        }
    }

    /// Whether the stage may have set a property at `indices`: false only when it set none of
    /// them (properties from index 64 on are not tracked, so they may always have been).
    func mayHaveChanges(in indices: Range<Int>) -> Bool {
        guard indices.upperBound <= 64 else { return true }
        let count = UInt64(indices.count)
        let ones: UInt64 = count == 64 ? ~0 : (1 << count) - 1
        let run = ones << UInt64(indices.lowerBound)
        return changedBits & run != 0
    }

    /// The value the inferred migration gives the property at `index`.
    func inferredValue(at index: Int) throws -> StoredValue {
        var writer = PayloadWriter()
        try old.record.bytes.withUnsafeBytes { value in
            try entry.transcoder.write(
                step: index,
                of: value,
                ranges: old.record.ranges,
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
    mutating func takeChanges() -> [StoredValue?] {
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
    /// The UTF-8 length of each name.
    private let lengths: [Int]

    init(_ entity: ModelSchema.Entity) {
        name = entity.name
        names = entity.properties.map(\.name)
        shapes = entity.properties.map(ValueShape.init)
        lengths = names.map(\.utf8.count)
    }

    /// The index of the property `name`.
    ///
    /// A linear search: an entity has a few properties, and comparing a name with an equal
    /// one (the same small string) is cheaper than hashing it, which a stage would pay for
    /// every object it visits.
    func index(of name: String) -> Int? {
        // A stage names properties with literals, and a literal short enough to be stored
        // inline (15 UTF-8 bytes) is bit for bit the name the model holds: two words compared
        // per property, where even a comparison of unequal names of one length costs several
        // times that.
        for index in names.indices where names[index]._isIdentical(to: name) { return index }
        // Lengths first (kept, not recomputed): most names differ in length, which is cheaper
        // to see than a mismatch of their characters.
        let length = name.utf8.count
        for index in lengths.indices where lengths[index] == length && names[index] == name {
            return index
        }
        return nil
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
    /// How to skip each old property, decided once (the rewriter finds every record's ranges
    /// with them).
    let oldSkips: [CompiledSkip]
    /// Where each new property's run of unchanged copies starts in the old version and ends.
    ///
    /// For a property the inferred mapping copies unchanged: the old property it comes from,
    /// and the index after the last new property of the run of copies of the old properties
    /// that follow it (its own index + 1 or less: no run). The rewriter writes such a run's
    /// bytes at once.
    let copies: [(source: Int, end: Int)]
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
        oldSkips = self.old.shapes.map(CompiledSkip.init)
        let steps = transcoder.steps
        var copies = [(source: Int, end: Int)](repeating: (0, 0), count: steps.count)
        for index in steps.indices.reversed() {
            guard case .copy(let source) = steps[index] else { continue }
            let continues =
                index + 1 < steps.count && steps[index + 1] == .copy(source + 1)
            copies[index] = (source, continues ? copies[index + 1].end : index + 1)
        }
        self.copies = copies
    }
}
