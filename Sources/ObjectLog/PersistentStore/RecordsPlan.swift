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

    private enum Storage: Sendable {
        case records([Record])
        /// The records of `range`, packed.
        case packed(PackedRecords, Range<Int>)
    }

    private let storage: Storage

    /// A plan of `records`.
    package init(_ records: [Record]) { storage = .records(records) }

    /// A plan of every record of `packed`.
    package init(packed: PackedRecords) {
        storage = .packed(packed, 0..<packed.keys.count)
    }

    package var count: Int {
        switch storage {
        case .records(let records): records.count
        case .packed(_, let range): range.count
        }
    }

    package var recordBytes: Int {
        switch storage {
        case .records(let records): records.reduce(0) { $0 + $1.payload.count }
        case .packed(let packed, let range):
            range.isEmpty
                ? 0 : packed.ends[range.upperBound - 1] - packed.start(of: range.lowerBound)
        }
    }

    // Versions of such stores never move: there is one generation.
    package var generation: UInt64 { 1 }

    package var keys: [ObjectKey] {
        switch storage {
        case .records(let records): records.map(\.key)
        case .packed(let packed, let range): Array(packed.keys[range])
        }
    }

    package var keysAndOffsets: [(key: ObjectKey, offset: UInt64)] {
        switch storage {
        case .records(let records): records.map { ($0.key, $0.version) }
        case .packed(let packed, let range): range.map { (packed.keys[$0], packed.versions[$0]) }
        }
    }

    /// The plan as up to `parts` plans of about as many records, together in its order.
    package func split(parts: Int) -> [any StoreReadPlan] {
        let total = count
        let parts = max(1, min(parts, total))
        return (0..<parts).map { part in
            let range = (total * part / parts)..<(total * (part + 1) / parts)
            switch storage {
            case .records(let records):
                return RecordsPlan(Array(records[range]))
            case .packed(let packed, let whole):
                let start = whole.lowerBound
                return RecordsPlan(
                    storage: .packed(
                        packed,
                        (start + range.lowerBound)..<(start + range.upperBound)
                    )
                )
            }
        }
    }

    private init(storage: Storage) { self.storage = storage }

    /// Calls `body` with each record, in order.
    package func forEach(
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        switch storage {
        case .records(let records):
            for record in records {
                try record.payload.withUnsafeBytes { try body(record.key, record.entity, $0) }
            }
        case .packed(let packed, let range):
            try packed.bytes.withUnsafeBytes { bytes in
                for index in range {
                    let payload = UnsafeRawBufferPointer(
                        rebasing: bytes[packed.start(of: index)..<packed.ends[index]]
                    )
                    try body(packed.keys[index], packed.entities[index], payload)
                }
            }
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

/// Records side by side: their payloads in one buffer, each ending where ``ends`` says, so that
/// many records read at once take a few allocations rather than one each.
package struct PackedRecords: Sendable {
    package var keys: [ObjectKey] = []
    package var entities: [EntityTag] = []
    package var versions: [UInt64] = []
    /// Where each record's payload ends in ``bytes`` (and the next one starts).
    package var ends: [Int] = []
    package var bytes: [UInt8] = []

    package init() {}

    /// Adds a record after the others.
    package mutating func append(_ record: RecordsPlan.Record) {
        keys.append(record.key)
        entities.append(record.entity)
        versions.append(record.version)
        bytes += record.payload
        ends.append(bytes.count)
    }

    /// Where record `index`'s payload starts in ``bytes``.
    package func start(of index: Int) -> Int { index == 0 ? 0 : ends[index - 1] }
}
