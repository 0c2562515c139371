import Foundation
import ObjectLogStore

/// A read-only store of a past state, pinned to one transaction: what a pinned context reads
/// (``PinnedStore`` over a log, `StateSnapshotStore` over a store without one).
///
/// Nothing changes under it and nothing is saved through it, so the refusals and the writing
/// half of the seam are the same for every such store; each supplies its objects.
protocol PinnedStateStore: RecordsPlanStore {
    /// The transaction the state is as of.
    var pinnedTransaction: UInt64 { get }
}

extension PinnedStateStore {
    var capabilities: StoreCapabilities { [] }
    var isReadOnly: Bool { true }
    var allowsPatches: Bool { false }
    var transactionCount: UInt64 { pinnedTransaction }

    func close() throws {}

    func snapshot(asOf number: UInt64) -> (any PersistentStore)? { nil }

    func allocateKeys(_ count: Int) throws -> ClosedRange<ObjectKey> { throw pinnedRefusal() }

    // Nothing changes under a pinned context.
    func observeOtherProcesses(_ handler: @escaping @Sendable (StoreChanges) -> Void) {}

    func execute(_ batch: StoreBatch) throws -> StoreBatchCommit? { throw pinnedRefusal() }

    func writeBlob(_ bytes: Data) throws -> BlobID { throw pinnedRefusal() }

    func commitSave(
        _ transaction: Transaction,
        checking locks: [StoreLockCheck]
    ) throws -> StoreCommit {
        throw pinnedRefusal()
    }

    func finishCommit() {}

    /// The error of every write through a pinned store.
    func pinnedRefusal() -> ObjectLogError {
        ObjectLogError(
            .unsupported,
            "a context pinned to transaction \(pinnedTransaction) reads the store as it was "
                + "then; it cannot save"
        )
    }
}
