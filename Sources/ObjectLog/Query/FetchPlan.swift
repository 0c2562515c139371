import Foundation

/// How a fetch of one entity reads the store and decides which objects match: decided once,
/// from the request, before the scan.
///
/// A predicate is compiled where it can be (then it reads only some properties, and may be
/// decided by attribute columns); a text match is tested on the records' bytes; anything else
/// is evaluated on each decoded object. The plan is not generic: the scan that follows it runs
/// on `ManagedObject`, as unspecialised generic code would look up type metadata for every
/// array operation of every scanned object.
struct FetchPlan {
    let entity: EntityDescription
    /// Whether a predicate is left to test besides the text match.
    let hasPredicate: Bool
    /// The predicate as a condition on attribute columns, when the columns can decide it.
    let columns: ColumnCondition?
    /// The text match, tested on each record's bytes before it is decoded.
    let text: CompiledTextMatch?
    /// The compiled condition (with the text match and-ed in), when there is one.
    private let condition: ((ManagedObject) -> Bool)?
    /// The text match to test before an uncompiled predicate.
    private let textBeforePredicate: CompiledTextMatch?
    /// The predicate, evaluated on a decoded object, when it could not be compiled.
    private let evaluatePredicate: ((ManagedObject) throws -> Bool)?
    /// The properties a compiled predicate reads, when it reads only some.
    ///
    /// Records are decoded that far first, and in full only when they match. When only the
    /// best are kept, the first sort's attribute is read too, so that a match that would not
    /// be kept is never decoded in full.
    let predicateReads: [Bool]?
    let includesPendingChanges: Bool
    /// Whether the request sorts.
    let sorts: Bool
    /// With a sort and a small window, how many of the best matches are kept.
    let keepBest: Int?
    /// The request's order, when only the best are kept.
    let less: ((ManagedObject, ManagedObject) -> Bool)?
    /// The first sort as an attribute column's order, when only the best are kept.
    let columnOrder: (index: Int, ascending: Bool)?
    /// Whether matches not yet registered are registered.
    let register: Bool
    /// Whether matches are only counted.
    let countOnly: Bool
    /// The request as a query the store may select records for itself, on `entity` alone;
    /// nil for a store that this process alone writes, where attribute columns serve instead.
    let storeQuery: StoreQuery?

    /// The plan of `request` on `entity`, whose class is `T`.
    ///
    /// - Throws: ``ObjectLogError/Code/invalidArgument`` for a text match of an attribute that
    ///   is not a string.
    init<T: ManagedObject>(
        entity: EntityDescription,
        request: FetchRequest<T>,
        register: Bool,
        countOnly: Bool,
        keepBest: Int?,
        less: @autoclosure () -> ((ManagedObject, ManagedObject) -> Bool),
        columnOrder: @autoclosure () -> (index: Int, ascending: Bool)?,
        storeQuery: @autoclosure () -> StoreQuery? = nil
    ) throws(ObjectLogError) {
        var predicate = request.predicate
        var compilation = predicate.flatMap {
            PredicateCompiler.compileWithReads($0, entity: entity)
        }
        var text: CompiledTextMatch?
        var evaluate: ((ManagedObject) throws -> Bool)? = predicate.map { predicate in
            // Safe: the scan only passes objects of `entity`, whose class is `T`.
            { object in try predicate.evaluate(unsafeDowncast(object, to: T.self)) }
        }
        if let match = request.textMatch {
            if let compiled = match.compile(for: entity) {
                text = compiled
            } else {
                // Searches combined, or of an optional string: a condition on each decoded
                // record, and-ed with the predicate.
                let condition = try match.condition(for: entity)
                let predicateCondition = compilation?.condition
                let evaluatePredicate = evaluate
                evaluate = { object in
                    if let predicateCondition {
                        guard predicateCondition(object) else { return false }
                    } else if let evaluatePredicate {
                        guard try evaluatePredicate(object) else { return false }
                    }
                    return try condition(object)
                }
                predicate = predicate ?? #Predicate<T> { _ in true }
                compilation = nil
            }
        } else if let compiled = compilation?.text {
            // A predicate that is one `contains` or `starts(with:)` on a string attribute runs
            // as the text match it is: on the records' bytes, and counted on two threads.
            text = compiled
            predicate = nil
            compilation = nil
        }

        var condition = compilation?.condition
        var reads = compilation?.reads
        // A text match is a compiled condition that reads its attribute, and-ed with the
        // predicate's (evaluated first when the predicate cannot be compiled).
        if let text {
            if predicate == nil {
                condition = text.test
                reads = [Bool](repeating: false, count: entity.accessors.count)
            } else if let predicateCondition = condition {
                condition = { text.test($0) && predicateCondition($0) }
            }
            reads?[text.accessor.index] = true
        }
        self.entity = entity
        hasPredicate = predicate != nil
        columns = compilation?.columns
        self.text = text
        self.condition = condition
        textBeforePredicate = condition == nil ? text : nil
        evaluatePredicate = evaluate
        includesPendingChanges = request.includesPendingChanges
        sorts = !request.sortDescriptors.isEmpty
        self.keepBest = keepBest
        self.less = keepBest == nil ? nil : less()
        let order = keepBest == nil ? nil : columnOrder()
        self.columnOrder = order
        if let order, reads != nil { reads?[order.index] = true }
        predicateReads = reads.flatMap { reads in reads.contains(false) ? reads : nil }
        self.register = register
        self.countOnly = countOnly
        var query = storeQuery()
        query?.entityTags = [entity.tag]
        self.storeQuery = query
    }

    /// Whether a scan reads the objects' values: to test them, register them or sort them.
    var needsValues: Bool { hasPredicate || text != nil || register || sorts }

    /// Whether the text match alone decides a count, from the records' bytes.
    var countsByTextAlone: Bool { countOnly && !hasPredicate && text != nil }

    /// Whether `object`, decoded (fully, or as far as ``predicateReads`` when there are some),
    /// matches.
    func evaluate(_ object: ManagedObject) throws(ObjectLogError) -> Bool {
        if let condition { return condition(object) }
        if let textBeforePredicate, !textBeforePredicate.test(object) { return false }
        guard let evaluatePredicate else { return true }
        do {
            return try evaluatePredicate(object)
        } catch {
            throw ObjectLogError(
                .invalidArgument,
                "cannot evaluate the predicate: \(error)",
                underlyingError: error
            )
        }
    }
}
