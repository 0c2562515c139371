import ObjectLog

@testable import RDLab

/// Drops the history of the lab store at `store` up to transaction `number`, as a store whose
/// retention no longer keeps it would have: through the engine, as any program may.
func purgeHistory(of store: String, through number: Int) throws {
    let container = try PersistentContainer(path: store, for: LabStore.entities)
    defer { try? container.close() }
    try container.purgeHistory(before: HistoryToken(transaction: UInt64(number)))
}
