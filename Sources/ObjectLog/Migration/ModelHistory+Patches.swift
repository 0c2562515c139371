import Foundation
import ObjectLogStore

extension ModelHistory {
    /// The merge of patch records into their bases (see `PatchMerge`) for the store's current
    /// file generation.
    ///
    /// A patch is read in the version that wrote it: its base, if an earlier version wrote it,
    /// is first mapped to that version, version by version, and the patch's partial value then
    /// replaces the properties it lists. The store maps the result to the newest version as it
    /// does any record at the patch's offset.
    package func patchMerge(store: LogStore) -> PatchMerge {
        let generation = store.generation
        let starts = self.starts
        // Per version, the property shapes of each entity tag.
        let shapes: [[EntityTag: MergeLayout]] = versions.map { version in
            Dictionary(
                version.schema.entities.map {
                    ($0.tag, MergeLayout(shapes: $0.properties.map(ValueShape.init)))
                },
                uniquingKeysWith: { first, _ in first }
            )
        }
        // Step i maps version i to version i + 1.
        let steps =
            versions.count > 1
            ? zip(versions, versions.dropFirst()).map { old, new in
                SchemaMapping(from: old.schema, to: new.schema)
            } : []
        // Weak: the store keeps the merge, which must not keep the store.
        let reference = StoreReference(store)
        return PatchMerge { tag, baseOffset, base, patchOffset, partial, body in
            let patchVersion = Self.version(
                writing: patchOffset,
                generation: generation,
                starts: starts
            )
            var baseVersion = Self.version(
                writing: baseOffset,
                generation: generation,
                starts: starts
            )
            guard patchVersion < shapes.count, let entityShapes = shapes[patchVersion][tag] else {
                throw StoreError(
                    .corrupt,
                    "a patch of entity tag \(tag) at offset \(patchOffset), which its model "
                        + "version does not have",
                    offset: patchOffset
                )
            }
            guard baseVersion < patchVersion else {
                // The common case: base and patch of one version.
                try Self.merge(base, partial, layout: entityShapes, at: patchOffset, body)
                return
            }
            var bytes = Array(base)
            while baseVersion < patchVersion {
                guard let transcoder = steps[baseVersion].transcoder(forOldTag: tag) else {
                    throw StoreError(
                        .corrupt,
                        "the base of a patch at offset \(patchOffset) belongs to an entity its "
                            + "model version does not continue",
                        offset: patchOffset
                    )
                }
                bytes = try bytes.withUnsafeBytes { buffer in
                    try transcoder.transcode(buffer) { id in
                        guard let store = reference.store else {
                            throw ObjectLogError(.store, "the store is closed")
                        }
                        return try store.readBlob(id)
                    }
                }
                baseVersion += 1
            }
            try bytes.withUnsafeBytes {
                try Self.merge($0, partial, layout: entityShapes, at: patchOffset, body)
            }
        }
    }

    /// Calls `body` with ``PartialValue/merge(_:_:shapes:into:)`` written into temporary
    /// memory, a failure to merge described as damage of the patch at `offset` (what `body`
    /// throws passes as it is).
    private static func merge(
        _ base: UnsafeRawBufferPointer,
        _ partial: UnsafeRawBufferPointer,
        layout: MergeLayout,
        at offset: UInt64,
        _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try withUnsafeTemporaryAllocation(byteCount: base.count + partial.count, alignment: 8) {
            buffer in
            let written: Int
            do {
                written = try PartialValue.merge(
                    base,
                    partial,
                    shapes: layout.shapes,
                    skips: layout.skips,
                    into: buffer
                )
            } catch {
                throw StoreError(
                    .corrupt,
                    "the patch at offset \(offset) does not apply to its base: \(error)",
                    offset: offset
                )
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[..<written]))
        }
    }
}

/// An entity's property shapes in one model version, and their compiled skips, for merging
/// patches (a class: a dictionary lookup hands it over with one retain).
final class MergeLayout: Sendable {
    let shapes: [ValueShape]
    let skips: [CompiledSkip]

    init(shapes: [ValueShape]) {
        self.shapes = shapes
        skips = shapes.map(CompiledSkip.init)
    }
}

extension LogStore {
    /// Installs what reading the records of a store with model versions `history` takes: the
    /// translation of records an older version wrote (`pendingBoundary`: below the end of the
    /// log, for a newest version not recorded yet) and the merge of patches.
    package func installReading(of history: ModelHistory, pendingBoundary: UInt64?) {
        installPayloadUpgrade(history.upgrade(store: self, pendingBoundary: pendingBoundary))
        installPatchMerge(history.patchMerge(store: self))
    }
}
