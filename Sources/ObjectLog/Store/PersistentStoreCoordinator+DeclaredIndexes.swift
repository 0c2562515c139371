import ObjectLogStore

/// The declared indexes of a log store this process alone writes (see ``DeclaredIndex``),
/// and the state of the file they were written to.
///
/// The coordinator's lock guards every access.
final class DeclaredIndexSet {
    let indexes: [DeclaredIndex]
    let byTag: [EntityTag: [DeclaredIndex]]
    /// The log's state when the coordinator opened it: the file is taken only if it describes
    /// that state, to which the deltas of the indexes not loaded yet are relative.
    let openStamp: DeclaredIndexFile.Stamp
    /// Whether the file has been read (once: what it did not give is built).
    var hasReadFile = false
    /// Whether the file on disk describes the indexes as they are now, stamped with
    /// ``fileStamp``: nothing to write at a checkpoint while the log is in that state.
    var isFileCurrent: Bool
    var fileStamp: DeclaredIndexFile.Stamp

    init?(model: ManagedObjectModel, stamp: DeclaredIndexFile.Stamp) {
        var indexes: [DeclaredIndex] = []
        for entity in model.entities where !entity.isAbstract {
            for members in entity.indexes {
                if let index = DeclaredIndex(entity: entity, members: members) {
                    indexes.append(index)
                }
            }
        }
        guard !indexes.isEmpty else { return nil }
        self.indexes = indexes
        byTag = Dictionary(grouping: indexes) { $0.entity.tag }
        openStamp = stamp
        fileStamp = stamp
        // Until the file is read, assume it may be taken: an open that commits nothing and
        // never asks the indexes leaves the file as it found it.
        isFileCurrent = true
    }
}

extension PersistentStoreCoordinator {
    /// The state of the log store's log, as a declared index file is stamped with it.
    func declaredIndexStamp() throws -> DeclaredIndexFile.Stamp {
        guard let logStore else {
            throw ObjectLogError(.unsupported, "declared index files are a log store's")
        }
        let (end, generation) = try store.endAndGeneration
        return .init(
            storeUUID: logStore.storeUUID,
            generation: generation,
            end: end,
            transactionCount: try store.transactionCount
        )
    }

    /// The declared indexes of a store this process alone writes, or nil (another kind of
    /// store, a read-only one, or a model that declares none the log store can keep).
    func makeDeclaredIndexes() -> DeclaredIndexSet? {
        guard isExclusive, logStore != nil, !store.isReadOnly,
            let stamp = try? declaredIndexStamp()
        else { return nil }
        let set = DeclaredIndexSet(model: model, stamp: stamp)
        // A model without indexes keeps no file: one left by an earlier version would be
        // stale by the time a later version that declares them again opens the store.
        if set == nil { logStore?.removeDeclaredIndexFile() }
        return set
    }

    /// Whether the attribute columns of `entity` already hold every attribute at `indices`.
    func hasColumns(of entity: EntityDescription, indices: [Int]) -> Bool {
        state.withLock { state in
            guard let columns = state.columns[entity.tag] else { return false }
            return indices.allSatisfy { columns.columns[$0] != nil }
        }
    }

    /// The keys of the saved objects of `entity` that may satisfy `condition`, through the
    /// declared index that bounds it most narrowly, or nil if none bounds it, or if it would
    /// let more than `maximumCount` objects through.
    ///
    /// Every saved object that satisfies `condition` is among them; others may be too, which
    /// the fetch leaves out when it evaluates its predicate.
    func declaredIndexCandidates(
        of entity: EntityDescription,
        condition: ColumnCondition,
        maximumCount: Int
    ) -> [ObjectKey]? {
        state.withLock { state -> [ObjectKey]? in
            guard let set = state.declaredIndexes, let indexes = set.byTag[entity.tag] else {
                return nil
            }
            var best: (index: DeclaredIndex, bounds: [ClosedRange<UInt64>?])?
            for index in indexes {
                let bounds = index.bounds(of: condition)
                guard !bounds.isEmpty else { continue }
                if best == nil || bounds.count > best!.bounds.count { best = (index, bounds) }
            }
            guard let (index, bounds) = best else { return nil }
            // Entries used in place in the file are checked page by page as the lookup reads
            // them: one that fails makes the index be built from the store, once.
            for _ in 0..<2 {
                guard loadEntries(of: index, set: set, state: &state) else { return nil }
                let fits = index.estimatedCount(in: bounds) <= maximumCount
                let keys = fits ? index.keys(in: bounds) : nil
                guard index.entries?.isDamaged == true else { return keys }
                index.invalidate()
                set.isFileCurrent = false
            }
            return nil
        }
    }

    /// Makes sure `index` has its entries: from the file if it describes the store as opened,
    /// else built from the store.
    ///
    /// - Returns: False if they can be neither read nor built (an unreadable record, which the
    ///   scan that follows reports).
    private func loadEntries(
        of index: DeclaredIndex,
        set: DeclaredIndexSet,
        state: inout State
    ) -> Bool {
        if index.entries != nil { return true }
        if !set.hasReadFile {
            set.hasReadFile = true
            if let (stamp, sections) = logStore?.openDeclaredIndexFile(),
                stamp == set.openStamp
            {
                for section in sections {
                    guard
                        let match = set.byTag[section.tag]?.first(where: {
                            $0.descriptor == section.descriptor && $0.width == section.width
                        }),
                        match.entries == nil, match.isCurrent
                    else { continue }
                    // The delta since the open applies to these entries as it stands.
                    match.entries = section.entries
                }
            }
            if set.indexes.contains(where: { $0.entries == nil }) { set.isFileCurrent = false }
        }
        if index.entries != nil { return true }
        let entity = index.entity
        let columns = state.columns[entity.tag] ?? AttributeColumns.make(for: entity, store: store)
        guard columns.add(index.members, store: store) else { return false }
        state.columns[entity.tag] = columns
        index.build(from: columns)
        set.isFileCurrent = false
        return true
    }

    /// Records a committed transaction in the deltas of the declared indexes.
    ///
    /// - Parameters:
    ///   - transaction: The committed transaction.
    ///   - setting: The payload indices a batch update set, when the transaction is one: its
    ///     puts are partial, and the objects' values are then unknown to the indexes whose
    ///     attributes it set.
    ///   - state: The coordinator's state, under its lock.
    func updateDeclaredIndexes(
        with transaction: Transaction,
        setting: Set<Int>?,
        state: inout State
    ) {
        guard let set = state.declaredIndexes else { return }
        var changed = false
        transaction.records.withUnsafeBytes { records in
            transaction.entries.withUnsafeBufferPointer { entries in
                for entry in entries.indices {
                    guard let indexes = set.byTag[entries[entry].entity] else { continue }
                    changed = true
                    let key = entries[entry].key
                    if entries[entry].isDelete {
                        for index in indexes { index.remove(key) }
                        continue
                    }
                    let end = entries[entry].recordStart + Int(entries[entry].recordLength)
                    let start = end - Int(entries[entry].valueCount)
                    let payload = UnsafeRawBufferPointer(rebasing: records[start..<end])
                    for index in indexes {
                        if let setting {
                            if !setting.isDisjoint(with: index.members) { index.putUnknown(key) }
                        } else if entries[entry].isPatch {
                            index.putUnknown(key)
                        } else {
                            index.put(key, payload: payload)
                        }
                    }
                }
            }
        }
        if changed { set.isFileCurrent = false }
    }

    /// Forgets what the declared indexes know after a commit that may or may not have
    /// happened: they are built from the store when next used.
    func invalidateDeclaredIndexes(state: inout State) {
        guard let set = state.declaredIndexes else { return }
        for index in set.indexes { index.invalidate() }
        set.isFileCurrent = false
    }

    /// Writes the declared index file, if it does not already describe the store.
    ///
    /// The checkpoint that lets the first fetch after the next open use the indexes without
    /// reading every object. Called before the store closes and after a compaction.
    ///
    /// A failure leaves the old file, which the next open finds stale and ignores: the file is
    /// a hint, never needed to read an object.
    func checkpointDeclaredIndexes() {
        guard let logStore else { return }
        state.withLock { state in
            guard let set = state.declaredIndexes, let stamp = try? declaredIndexStamp() else {
                return
            }
            if set.isFileCurrent, stamp == set.fileStamp { return }
            var sections: [DeclaredIndexFile.Section] = []
            for index in set.indexes {
                guard loadEntries(of: index, set: set, state: &state) else { return }
                let merged = try? index.mergeChanges { key in try store.readObject(key)?.payload }
                guard merged == true, let entries = index.entries else {
                    index.invalidate()
                    guard loadEntries(of: index, set: set, state: &state),
                        let entries = index.entries
                    else { return }
                    sections.append(section(of: index, entries))
                    continue
                }
                sections.append(section(of: index, entries))
            }
            // The entries were checked by the merge, or built in memory.
            guard let bytes = DeclaredIndexFile.encode(stamp: stamp, sections: sections) else {
                return
            }
            do {
                try logStore.writeDeclaredIndexFile(bytes)
                set.isFileCurrent = true
                set.fileStamp = stamp
            } catch {
                return
            }
        }
    }

    private func section(
        of index: DeclaredIndex,
        _ entries: DeclaredIndexEntries
    ) -> DeclaredIndexFile.Section {
        .init(
            tag: index.entity.tag,
            width: index.width,
            descriptor: index.descriptor,
            entries: entries
        )
    }
}
