import Foundation

/// Values computed over the objects a predicate selects, optionally in groups: count, sum,
/// minimum, maximum and average of attributes, without loading the objects.
///
/// Core Data asks for these with a fetch request whose result type is dictionaries, with
/// `NSExpressionDescription`s in `propertiesToFetch` and `propertiesToGroupBy`; SQL with
/// `SELECT count(*), sum(x) … GROUP BY y`.
///
/// ```swift
/// let request = AggregateRequest<Experiment>(
///     predicate: #Predicate { $0.steps > 100 },
///     groupBy: [\.model],
///     aggregates: [.count, .sum(\.steps), .average(\.feed)]
/// )
/// for group in try context.aggregate(request) {
///     print(group["model"]!, group["count"]!, group["sum(steps)"]!, group["average(feed)"]!)
/// }
/// ```
///
/// Grouping by attributes and asking for no aggregate gives their distinct values (Core Data's
/// `returnsDistinctResults`).
public struct AggregateRequest<Entity: ManagedObject> {
    /// Which objects count; `nil` for all.
    public var predicate: Predicate<Entity>?
    /// The attributes whose values form the groups, in order; empty for one group of every
    /// object that matches.
    public var groupBy: [PartialKeyPath<Entity>]
    /// What to compute for each group.
    public var aggregates: [Aggregate<Entity>]
    /// Whether the context's unsaved inserts, changes and deletes count (as for a fetch).
    public var includesPendingChanges = true
    /// Whether objects of subentities count (as for a fetch).
    public var includesSubentities = true

    /// Creates a request.
    public init(
        predicate: Predicate<Entity>? = nil,
        groupBy: [PartialKeyPath<Entity>] = [],
        aggregates: [Aggregate<Entity>]
    ) {
        self.predicate = predicate
        self.groupBy = groupBy
        self.aggregates = aggregates
    }
}

/// One value an ``AggregateRequest`` computes for each group.
public struct Aggregate<Entity: ManagedObject> {
    /// What is computed (``AggregateFunction``).
    public typealias Function = AggregateFunction

    /// What is computed.
    public var function: Function
    /// The attribute it is computed over; nil for the count of objects.
    public var keyPath: PartialKeyPath<Entity>?
    /// The name of the value in each ``AggregateResult``: given, or `count` for the count of
    /// objects and `function(attribute)` otherwise (`sum(steps)`), with the attribute's name.
    public var name: String?

    /// The number of objects in each group.
    public static var count: Aggregate { Aggregate(function: .count, keyPath: nil, name: nil) }

    /// The number of objects in each group, under another name than `count`.
    public static func count(as name: String) -> Aggregate {
        Aggregate(function: .count, keyPath: nil, name: name)
    }

    /// The number of non-nil values of an attribute.
    public static func count(
        _ keyPath: PartialKeyPath<Entity>,
        as name: String? = nil
    )
        -> Aggregate
    {
        Aggregate(function: .count, keyPath: keyPath, name: name)
    }

    /// The sum of a numeric attribute; nil values are left out.
    public static func sum(_ keyPath: PartialKeyPath<Entity>, as name: String? = nil) -> Aggregate {
        Aggregate(function: .sum, keyPath: keyPath, name: name)
    }

    /// The least value of an attribute; nil values are left out.
    public static func min(_ keyPath: PartialKeyPath<Entity>, as name: String? = nil) -> Aggregate {
        Aggregate(function: .minimum, keyPath: keyPath, name: name)
    }

    /// The greatest value of an attribute; nil values are left out.
    public static func max(_ keyPath: PartialKeyPath<Entity>, as name: String? = nil) -> Aggregate {
        Aggregate(function: .maximum, keyPath: keyPath, name: name)
    }

    /// The mean of a numeric attribute; nil values are left out.
    public static func average(
        _ keyPath: PartialKeyPath<Entity>,
        as name: String? = nil
    )
        -> Aggregate
    {
        Aggregate(function: .average, keyPath: keyPath, name: name)
    }
}

/// What an ``Aggregate`` computes.
public enum AggregateFunction: String, Sendable, Hashable {
    /// The number of objects, or of non-nil values of an attribute.
    case count
    /// The sum of a numeric attribute (0 for no values), as ``StoredValue/int(_:)`` for
    /// integers and ``StoredValue/double(_:)`` for `Float` and `Double`.
    case sum
    /// The least value of a number, string, date or Boolean attribute; `null` for no values.
    case minimum
    /// The greatest value; `null` for no values.
    case maximum
    /// The mean of a numeric attribute, as ``StoredValue/double(_:)``; `null` for no values.
    case average
}

/// One group of an ``AggregateRequest``'s result: the values that define it and the values
/// computed over its objects, by name (Core Data's result dictionary).
public struct AggregateResult: Sendable, Hashable, CustomStringConvertible {
    /// The group's values, by attribute name (empty without `groupBy`).
    public var group: [String: StoredValue]
    /// The computed values, by ``Aggregate/name``.
    public var values: [String: StoredValue]

    /// Creates a result.
    public init(group: [String: StoredValue], values: [String: StoredValue]) {
        self.group = group
        self.values = values
    }

    /// A group value or a computed value by name.
    public subscript(name: String) -> StoredValue? { values[name] ?? group[name] }

    /// `name=value` pairs, group values first, each part in name order.
    public var description: String {
        (group.sorted { $0.key < $1.key } + values.sorted { $0.key < $1.key })
            .map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }
}
