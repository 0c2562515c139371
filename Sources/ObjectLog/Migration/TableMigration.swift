import Foundation
import ObjectLogStore

/// A migration as a store that keeps values in columns of its own (a database's tables) makes
/// it: the stored and the new schema, where each property of the new one takes its values
/// from, and the engine's own translation of a record.
///
/// The log store translates a record an older version wrote when it reads it; a store of
/// tables changes its tables once, and must end with the values the log store would read. So
/// it keeps in place what the inferred mapping copies (renamed or not), and writes anew, from
/// ``translate(_:entity:blob:)``, the values the mapping converts: the results are the log
/// store's by construction.
package struct TableMigration: Sendable {
    /// Where a property of the new version takes its values from.
    package enum Source: Sendable, Equatable {
        /// The old property of this name, its values as they are (same encoding).
        case copied(String)
        /// The old property of this name, its values converted (widened, a nil given the
        /// default, moved to or from external storage, a to-one made a to-many).
        case converted(String)
        /// No old property: the new property's default (or none, for a relationship).
        case absent
    }

    /// The schema the store's tables hold.
    package let stored: ModelSchema
    /// The schema they are to hold.
    package let schema: ModelSchema
    let mapping: SchemaMapping

    /// The migration from `stored` to `schema`, as the engine infers it.
    package init(from stored: ModelSchema, to schema: ModelSchema) {
        self.init(stored: stored, schema: schema, mapping: SchemaMapping(from: stored, to: schema))
    }

    init(stored: ModelSchema, schema: ModelSchema, mapping: SchemaMapping) {
        self.stored = stored
        self.schema = schema
        self.mapping = mapping
    }

    /// The changes that cannot be inferred, one line each (a plan's custom stage may accept
    /// them: such a property starts at its default).
    package var problems: [String] { mapping.problems }

    /// The entity tags of the stored version that the new one removed: their objects are
    /// deleted.
    package var removedTags: [EntityTag] { mapping.removedTags }

    /// Where property `name` of the entity tagged `tag` takes its values from; nil for an
    /// entity that continues none of the stored version's (its objects are all new), or a
    /// property it does not have.
    package func source(of name: String, entity tag: EntityTag) -> Source? {
        guard let transcoder = mapping.transcoder(forOldTag: tag),
            let index = transcoder.new.properties.firstIndex(where: { $0.name == name })
        else { return nil }
        switch transcoder.steps[index] {
        case .copy(let old): return .copied(transcoder.old.properties[old].name)
        case .convert(let old, _, _, _): return .converted(transcoder.old.properties[old].name)
        case .constant: return .absent
        }
    }

    /// The value of a record of the entity tagged `tag` that the stored version wrote, in the
    /// new version's layout: what the log store reads; nil for an entity the new version
    /// removed.
    ///
    /// - Parameters:
    ///   - payload: The record's value, in the stored version's layout.
    ///   - tag: The record's entity tag (the same in both versions).
    ///   - blob: Reads external data, for data that moves inline.
    /// - Returns: The value in the new layout; nil for a removed entity.
    /// - Throws: ``ObjectLogError/Code/corrupt`` for a value its version cannot decode; what
    ///   `blob` throws.
    package func translate(
        _ payload: UnsafeRawBufferPointer,
        entity tag: EntityTag,
        blob: (BlobID) throws -> Data
    ) throws -> [UInt8]? {
        guard let transcoder = mapping.transcoder(forOldTag: tag) else { return nil }
        do {
            return try transcoder.transcode(payload, blob: blob)
        } catch let error as PayloadError {
            throw ObjectLogError(
                .corrupt,
                "a record of \(transcoder.old.name) cannot be read: \(error)",
                underlyingError: error
            )
        }
    }
}
