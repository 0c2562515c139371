import ObjectLogStore

/// A store whose read plans hold their records (``RecordsPlan``s), serving no query, batch or
/// migration itself.
///
/// The stores behind a child context and a pinned context are such stores: each supplies its
/// keys and plans, and the rest follows from them.
protocol RecordsPlanStore: PersistentStore {}

extension RecordsPlanStore {
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
