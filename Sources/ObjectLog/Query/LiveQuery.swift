import Foundation
import ObjectLogStore
import Synchronization

extension ManagedObjectContext {
    /// The results of `request`, now and again each time a save or a merge changes them: the
    /// role of Core Data's `NSFetchedResultsController` and SwiftData's `@Query`.
    ///
    /// ```swift
    /// let spots = FetchRequest<Configuration>(
    ///     predicate: #Predicate { $0.feed > 0.03 },
    ///     sortBy: [SortDescriptor(\.name)]
    /// )
    /// for try await results in context.observe(spots) {
    ///     show(results.objects)      // first all of them, then after each change
    ///     print(results.inserted, results.deleted, results.moved, results.updated)
    /// }
    /// ```
    ///
    /// Iterate it where the context is used (the main actor for
    /// ``PersistentContainer/mainContext``): its elements hold the context's objects. The first
    /// element holds the results of the fetch, all of them inserted; each later one follows a
    /// save of this context or a merge into it (the main context merges the saves of other
    /// contexts, and of other processes, by itself) that changed the results: which objects,
    /// their order, or the values of one of them. Changes that arrive while no one waits for
    /// an element are folded into the next one, whose differences are from the last element
    /// delivered.
    ///
    /// Keeping it up to date is cheap: a change of no object of the request's entity costs a
    /// look at the changed objects' entities, and otherwise only the changed objects are
    /// tested against the predicate and put in their place in the results. A request with a
    /// ``FetchRequest/fetchLimit``, a ``FetchRequest/fetchOffset``, a
    /// ``FetchRequest/textMatch`` or without ``FetchRequest/includesPendingChanges`` is
    /// fetched again when an object of its entity changed.
    ///
    /// Each iterator registers with the context when it is made and leaves it when it is
    /// released; end a loop with `break` or by cancelling its task.
    ///
    /// - Parameter request: What to fetch.
    /// - Returns: The results as an asynchronous sequence; iterating throws the fetch's error.
    public func observe<T: ManagedObject>(_ request: FetchRequest<T>) -> LiveQuery<T> {
        LiveQuery(context: self, request: request)
    }
}

/// The results of a fetch request as they change: an asynchronous sequence of
/// ``LiveQueryResults``, made by ``ManagedObjectContext/observe(_:)``.
public struct LiveQuery<T: ManagedObject>: AsyncSequence {
    /// The results, and how they differ from the element before.
    public typealias Element = LiveQueryResults<T>
    /// A failed fetch.
    public typealias Failure = ObjectLogError

    /// The context whose objects the results are.
    public let context: ManagedObjectContext
    /// The request.
    public let request: FetchRequest<T>

    /// Registers with the context and fetches the first results.
    public func makeAsyncIterator() -> Iterator {
        Iterator(observer: LiveQueryObserver(context: context, request: request))
    }

    /// Hands out the results as they change.
    public struct Iterator: AsyncIteratorProtocol {
        let observer: LiveQueryObserver<T>

        /// The next results: at once the first time, then once they have changed; nil once
        /// the task is cancelled.
        /// - Throws: The error of a fetch the results needed.
        public mutating func next(
            isolation actor: isolated (any Actor)? = #isolation
        ) async throws(ObjectLogError) -> LiveQueryResults<T>? {
            try await observer.next(isolation: actor)
        }

        /// The next results; see ``next(isolation:)``, which a call without arguments picks
        /// (this one would take the iterator off the caller's actor).
        @_disfavoredOverload
        public mutating func next() async throws(ObjectLogError) -> LiveQueryResults<T>? {
            try await observer.next(isolation: nil)
        }
    }
}

/// A live query's results, and how they differ from the results it handed out before.
///
/// Apply the differences to a list on screen as with `NSFetchedResultsController`'s changes:
/// remove the ``deleted`` rows (indices in the previous results), insert the ``inserted`` ones
/// (indices in ``objects``), move the ``moved`` ones, reload the ``updated`` ones.
public struct LiveQueryResults<T: ManagedObject> {
    /// An object that stayed in the results at another place than the objects around it.
    public struct Move: Hashable, Sendable {
        /// Its index in the previous results.
        public var from: Int
        /// Its index in ``LiveQueryResults/objects``.
        public var to: Int
    }

    /// The objects that match the request now, in its order.
    public let objects: [T]
    /// The indices in ``objects`` of the objects that joined the results (every index, in
    /// the first element).
    public let inserted: [Int]
    /// The indices in the previous results of the objects that left them.
    public let deleted: [Int]
    /// The objects that stayed but changed places: the fewest that explain the new order.
    public let moved: [Move]
    /// The indices in ``objects`` of the objects that stayed and were changed by a save.
    public let updated: [Int]
    /// Whether these are the first results, from the fetch.
    public let isInitial: Bool
}

/// One iterator's state: the results as the context's changes leave them, and the results it
/// handed out last.
final class LiveQueryObserver<T: ManagedObject> {
    private let context: ManagedObjectContext
    private let request: FetchRequest<T>
    /// The names of the entities whose objects can be among the results.
    private let entityNames: Set<String>
    /// Whether a change can be put into the results without fetching again.
    private let patches: Bool
    private let ordering: (ManagedObject, ManagedObject) -> Bool
    private var token: ObserverToken?

    /// The results as of the last change.
    private var current: [T] = []
    private var members: Set<ObjectKey> = []
    /// The results handed out last; nil before the first.
    private var delivered: [T]?
    /// Members updated since the results were handed out.
    private var updatedSince: Set<ObjectKey> = []
    private var hasChanges = false
    private var failure: ObjectLogError?
    private let waiter = LiveQueryWaiter()

    init(context: ManagedObjectContext, request: FetchRequest<T>) {
        self.context = context
        self.request = request
        let model = context.model
        var names: Set<String> = []
        if let entity = model.entity(for: T.self) {
            if request.includesSubentities {
                for member in model.entities where member.isKind(of: entity) {
                    names.insert(member.name)
                }
            } else {
                names.insert(entity.name)
            }
        }
        entityNames = names
        patches =
            request.fetchLimit == nil && request.fetchOffset == 0 && request.textMatch == nil
            && request.includesPendingChanges
        ordering = context.ordering(request)
        do {
            current = try context.fetch(request)
            members = Set(current.map(\.key))
        } catch {
            failure = error
        }
        let token = ObserverToken.make()
        context.liveQueryHandlers.append(
            (token.number, { [weak self] changes in self?.receive(changes) })
        )
        self.token = token
    }

    deinit {
        if let token { context.removeObserver(token) }
    }

    // MARK: Changes

    private func receive(_ changes: ObjectChanges) {
        guard failure == nil else { return }
        func relevant(_ ids: [ObjectID]) -> [ObjectID] {
            // Saves are mostly runs of one entity: its name is looked up once a run.
            var result: [ObjectID] = []
            var lastName: String?
            var lastRelevant = false
            for id in ids {
                if id.entityName != lastName {
                    lastName = id.entityName
                    lastRelevant = entityNames.contains(id.entityName)
                }
                if lastRelevant { result.append(id) }
            }
            return result
        }
        let deleted = relevant(changes.deleted)
        let inserted = relevant(changes.inserted)
        let updated = relevant(changes.updated)
        if changes.isIncomplete {
            // What changed is unknown: the results are fetched anew, every member updated.
            refetch(updated: current.map(\.objectID))
            if hasChanges { waiter.resume() }
            return
        }
        if deleted.isEmpty && inserted.isEmpty && updated.isEmpty { return }
        if patches {
            patch(inserted: inserted, updated: updated, deleted: deleted)
        } else {
            refetch(updated: updated)
        }
        if hasChanges { waiter.resume() }
    }

    /// Puts each changed object in its place in the results, or takes it out.
    private func patch(inserted: [ObjectID], updated: [ObjectID], deleted: [ObjectID]) {
        var removed: Set<ObjectKey> = []
        for id in deleted where members.contains(id.key) {
            members.remove(id.key)
            removed.insert(id.key)
        }
        var seen: Set<ObjectKey> = []
        var placed: [T] = []
        let wasUpdated = Set(updated.map(\.key))
        for id in inserted + updated where seen.insert(id.key).inserted {
            let wasMember = members.contains(id.key)
            let object = context.registeredObject(forKey: id.key, as: T.self)
            var matches = false
            if let object, object.managedObjectContext === context, !object.isDeleted {
                do {
                    matches = try request.predicate?.evaluate(object) ?? true
                } catch {
                    matches = false
                }
            }
            if wasMember {
                removed.insert(id.key)
                if matches, wasUpdated.contains(id.key) { updatedSince.insert(id.key) }
            }
            if matches, let object {
                placed.append(object)
                members.insert(id.key)
            } else if wasMember {
                members.remove(id.key)
            }
        }
        guard !removed.isEmpty || !placed.isEmpty else { return }
        if !removed.isEmpty { current.removeAll { removed.contains($0.key) } }
        for object in placed {
            // The first index whose object comes after `object`.
            var low = 0
            var high = current.count
            while low < high {
                let middle = (low + high) / 2
                if ordering(object, current[middle]) {
                    high = middle
                } else {
                    low = middle + 1
                }
            }
            current.insert(object, at: low)
        }
        hasChanges = true
    }

    /// Fetches the results again (for requests whose window or text search a change can move).
    private func refetch(updated: [ObjectID]) {
        do {
            current = try context.fetch(request)
        } catch {
            failure = error
            hasChanges = true
            return
        }
        members = Set(current.map(\.key))
        for id in updated where members.contains(id.key) { updatedSince.insert(id.key) }
        hasChanges = true
    }

    // MARK: Handing out

    func next(
        isolation actor: isolated (any Actor)?
    ) async throws(ObjectLogError)
        -> LiveQueryResults<T>?
    {
        while true {
            if let failure { throw failure }
            if Task.isCancelled { return nil }
            if let results = takeResults() { return results }
            await waiter.wait(isolation: actor)
        }
    }

    /// The results with their differences from those handed out last; nil if they are the
    /// same.
    private func takeResults() -> LiveQueryResults<T>? {
        guard let previous = delivered else {
            delivered = current
            hasChanges = false
            updatedSince = []
            return LiveQueryResults(
                objects: current,
                inserted: Array(current.indices),
                deleted: [],
                moved: [],
                updated: [],
                isInitial: true
            )
        }
        guard hasChanges else { return nil }
        hasChanges = false
        let updatedKeys = updatedSince
        updatedSince = []
        let difference = LiveQueryDifference(
            from: previous.map(\.key),
            to: current.map(\.key),
            updated: updatedKeys
        )
        guard !difference.isEmpty else { return nil }
        delivered = current
        return LiveQueryResults(
            objects: current,
            inserted: difference.inserted,
            deleted: difference.deleted,
            moved: difference.moved.map { LiveQueryResults.Move(from: $0.from, to: $0.to) },
            updated: difference.updated,
            isInitial: false
        )
    }
}

/// Where an iterator waits for its results to change: resumed by a change, or by the
/// cancellation of its task, from any thread.
final class LiveQueryWaiter: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<Void, Never>?, woken: Bool)>(
        (nil, false)
    )

    /// Returns after the next ``resume()`` (at once if one came since the last wait), or when
    /// the task is cancelled.
    func wait(isolation actor: isolated (any Actor)?) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation(isolation: actor) { continuation in
                let resumeNow = state.withLock { state in
                    if state.woken || Task.isCancelled {
                        state.woken = false
                        return true
                    }
                    state.continuation = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            resume()
        }
    }

    /// Wakes the waiting iterator, or the next wait.
    func resume() {
        let continuation = state.withLock { state in
            guard let continuation = state.continuation else {
                state.woken = true
                return nil as CheckedContinuation<Void, Never>?
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume()
    }
}

/// The differences between two lists of distinct keys.
struct LiveQueryDifference: Equatable {
    var inserted: [Int] = []
    var deleted: [Int] = []
    var moved: [(from: Int, to: Int)] = []
    var updated: [Int] = []

    var isEmpty: Bool {
        inserted.isEmpty && deleted.isEmpty && moved.isEmpty && updated.isEmpty
    }

    static func == (lhs: LiveQueryDifference, rhs: LiveQueryDifference) -> Bool {
        lhs.inserted == rhs.inserted && lhs.deleted == rhs.deleted
            && lhs.moved.elementsEqual(rhs.moved, by: { $0 == $1 }) && lhs.updated == rhs.updated
    }

    /// The differences from `old` to `new`; `updated` names the keys whose objects changed.
    ///
    /// The moves are the objects in both lists outside a longest run that keeps its order:
    /// the fewest moves that turn one order into the other.
    ///
    /// - Complexity: O(*n* log *n*) in the lists' lengths.
    init(from old: [ObjectKey], to new: [ObjectKey], updated: Set<ObjectKey>) {
        var oldIndex: [ObjectKey: Int] = [:]
        oldIndex.reserveCapacity(old.count)
        for (index, key) in old.enumerated() { oldIndex[key] = index }
        let newKeys = Set(new)
        for (index, key) in old.enumerated() where !newKeys.contains(key) { deleted.append(index) }
        // The kept objects' ranks among the kept ones in the old order, in the new order.
        var rankOfOld: [Int: Int] = [:]
        var rank = 0
        for (index, key) in old.enumerated() where newKeys.contains(key) {
            rankOfOld[index] = rank
            rank += 1
        }
        var kept: [(rank: Int, from: Int, to: Int)] = []
        for (index, key) in new.enumerated() {
            guard let from = oldIndex[key] else {
                inserted.append(index)
                continue
            }
            kept.append((rankOfOld[from] ?? 0, from, index))
            if updated.contains(key) { self.updated.append(index) }
        }
        // A longest increasing run of ranks (patience sorting); the others moved.
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: kept.count)
        for (position, element) in kept.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if kept[tails[middle]].rank < element.rank {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            if low > 0 { previous[position] = tails[low - 1] }
            if low == tails.count { tails.append(position) } else { tails[low] = position }
        }
        var staying = Set<Int>()
        var position = tails.last ?? -1
        while position >= 0 {
            staying.insert(position)
            position = previous[position]
        }
        for (position, element) in kept.enumerated() where !staying.contains(position) {
            moved.append((element.from, element.to))
        }
    }
}
