import ObjectLogStore

/// A read plan that holds its records rather than where they are: what a store hands out whose
/// records have no place in a file to read later (memory, a database's rows read at once).
///
/// Arrays share their storage, so a snapshot of a memory store's records copies no bytes.
package struct RecordsPlan: StoreReadPlan {
    /// One record: the object's key, entity, version and payload.
    package typealias Record = (
        key: ObjectKey, entity: EntityTag, version: UInt64, payload: [UInt8]
    )

    /// The records, in the plan's order.
    package var records: [Record]

    /// A plan of `records`.
    package init(_ records: [Record]) { self.records = records }

    package var count: Int { records.count }
    package var recordBytes: Int { records.reduce(0) { $0 + $1.payload.count } }
    // Versions of such stores never move: there is one generation.
    package var generation: UInt64 { 1 }
    package var keys: [ObjectKey] { records.map(\.key) }
    package var keysAndOffsets: [(key: ObjectKey, offset: UInt64)] {
        records.map { ($0.key, $0.version) }
    }

    /// The plan as up to `parts` plans of about as many records, together in its order.
    package func split(parts: Int) -> [any StoreReadPlan] {
        let parts = max(1, min(parts, records.count))
        return (0..<parts).map { part in
            let range = (records.count * part / parts)..<(records.count * (part + 1) / parts)
            return RecordsPlan(Array(records[range]))
        }
    }

    /// Calls `body` with each record, in order.
    package func forEach(
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        for record in records {
            try record.payload.withUnsafeBytes { try body(record.key, record.entity, $0) }
        }
    }

    /// `plan` as a plan of records: a store gets back only the plans it made.
    package static func of(_ plan: any StoreReadPlan, store: String) -> RecordsPlan {
        guard let plan = plan as? RecordsPlan else {
            preconditionFailure("a read plan of another kind of store was given to \(store)")
        }
        return plan
    }
}
