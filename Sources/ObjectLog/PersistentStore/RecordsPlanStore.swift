import ObjectLogStore

/// A store whose read plans hold their records (``RecordsPlan``s), serving no query, batch or
/// migration itself, and whose records all stand at one position of one generation.
///
/// The stores behind a child context and a pinned context are such stores: each supplies its
/// keys and plans, and the rest follows from them. With every record at position 1, an
/// optimistic check holds for any object the store still has and fails for one it no longer
/// has.
protocol RecordsPlanStore: PersistentStore {}

extension RecordsPlanStore {
    /// The position of every record.
    static var recordPosition: UInt64 { 1 }

    var endAndGeneration: (end: UInt64, generation: UInt64) { (Self.recordPosition + 1, 1) }
    var generation: UInt64 { 1 }

    func locationAndGeneration(
        of key: ObjectKey
    ) throws -> (location: RecordLocation?, generation: UInt64) {
        (try location(of: key), 1)
    }

    func recordOffsetsAndGeneration(
        of keys: [ObjectKey]
    ) throws -> (offsets: [UInt64?], generation: UInt64) {
        (try keys.map { try location(of: $0) == nil ? nil : Self.recordPosition }, 1)
    }

    func translateOffset(_ offset: UInt64, from generation: UInt64, exact: Bool) -> UInt64? {
        generation == 1 ? offset : nil
    }

    func readPlan(keyParts: [[ObjectKey]]) throws -> any StoreReadPlan {
        try readPlan(keys: keyParts.flatMap { $0 })
    }

    func liveObjectPlans(entity: EntityTag?, parts: Int) throws -> [any StoreReadPlan] {
        split(try readPlan(keys: liveKeys(entity: entity)), parts: parts)
    }

    func split(_ plan: any StoreReadPlan, parts: Int) -> [any StoreReadPlan] {
        RecordsPlan.of(plan, store: displayName).split(parts: parts)
    }

    func forEachObject(
        in plan: any StoreReadPlan,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try RecordsPlan.of(plan, store: displayName).forEach(body)
    }

    func forEachLiveObject(
        entity: EntityTag?,
        _ body: (ObjectKey, EntityTag, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try forEachObject(in: readPlan(keys: liveKeys(entity: entity)), body)
    }

    func migrateTables(
        _ migration: TableMigration,
        recording: () throws -> Transaction
    ) throws -> Bool {
        false
    }

    func installReading(of history: ModelHistory, pendingBoundary: UInt64?) {}

    func candidates(
        for query: StoreQuery,
        adding keys: [ObjectKey]
    ) throws -> (any StoreReadPlan)? {
        nil
    }
}
