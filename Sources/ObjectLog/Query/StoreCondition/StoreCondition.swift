import Foundation

/// A condition on the saved rows of an entity that a store can test itself, where its rows are,
/// before any object is made: what a fetch's predicate becomes for a store other than the log
/// (the PostgreSQL store turns it into a `WHERE` clause).
///
/// Every case is two-valued and means exactly what the engine's own evaluation of the
/// predicate means on the saved values, so that a store may negate any of them:
///
/// - A condition is on a row of one entity. ``toOne(_:_:)`` and ``anyDestination(_:_:)`` test
///   their inner condition on the rows of the relationship's destination, and nothing inside
///   them refers back to the outer row.
/// - ``comparison(_:_:_:)`` is false when the attribute is nil: a Swift comparison of an
///   optional with a value is false for nil (and `!=` is the negation of `==`, so `!=` is true
///   for nil). Floating-point values (and dates) compare as IEEE 754 says: NaN is equal to
///   nothing and ordered with nothing, and -0 equals 0 (a date's `<=` and `>=`, which are
///   `Comparable`'s negations of `>` and `<`, are translated as those negations). Strings
///   compare as Swift's `==` and `<` do: by their Unicode scalars after canonical composition
///   (NFC), so canonically equivalent strings are equal.
/// - ``text(_:)`` decides only values that are ASCII (see ``StoreTextSearch``); the translation
///   leaves the others to the engine with ``isPlainText(_:excludesCarriageReturn:)``.
///
/// Made by ``translate(_:entity:)`` from a `#Predicate` (and by ``StoreQuery`` from a fetch
/// request), which says whether the condition is exact or selects a superset that the engine
/// must evaluate again.
package indirect enum StoreCondition: Sendable, Hashable {
    /// Every row (`true`) or none (`false`).
    case constant(Bool)
    /// The attribute is not nil and its value compares so with the value (of the attribute's
    /// type, never ``StoredValue/null``).
    case comparison(StoreAttribute, StoreComparison, StoredValue)
    /// The attribute's value is nil.
    case isNil(StoreAttribute)
    /// The attribute is a string that is not nil and is ASCII (with no carriage return when
    /// `excludesCarriageReturn`): a value whose text search the engine decides byte by byte,
    /// as ``text(_:)`` does.
    case isPlainText(StoreAttribute, excludesCarriageReturn: Bool)
    /// A text search on a string attribute that is not nil and is plain (see
    /// ``isPlainText(_:excludesCarriageReturn:)``).
    case text(StoreTextSearch)
    /// All of the conditions (every row when there are none).
    case and([StoreCondition])
    /// Any of the conditions (no row when there are none).
    case or([StoreCondition])
    /// The opposite of the condition.
    case not(StoreCondition)
    /// The to-one relationship has a destination, and its row satisfies the condition.
    case toOne(StoreRelationship, StoreCondition)
    /// Some destination of the to-many relationship satisfies the condition.
    case anyDestination(StoreRelationship, StoreCondition)
    /// The number of destinations of the to-many relationship compares so with the number.
    case count(StoreRelationship, StoreComparison, Int)
    /// The row is the object with this key.
    case key(ObjectKey)
    /// The row's entity is this one (not one of its subentities).
    case entity(String)
}

/// How a value compares with a constant in a ``StoreCondition``; "not equal" is the negation
/// of ``equal``.
package enum StoreComparison: Sendable, Hashable {
    /// Less than (`<`).
    case less
    /// Less than or equal (`<=`).
    case lessOrEqual
    /// Greater than (`>`).
    case greater
    /// Greater than or equal (`>=`).
    case greaterOrEqual
    /// Equal (`==`).
    case equal

    /// The comparison with its operands swapped: `a < b` is `b > a`.
    var swapped: StoreComparison {
        switch self {
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        case .equal: .equal
        }
    }

    /// Whether the two values compare so.
    func holds<Value: Comparable>(_ left: Value, _ right: Value) -> Bool {
        switch self {
        case .less: left < right
        case .lessOrEqual: left <= right
        case .greater: left > right
        case .greaterOrEqual: left >= right
        case .equal: left == right
        }
    }
}

/// An attribute of an entity, as a ``StoreCondition`` names it.
package struct StoreAttribute: Sendable, Hashable {
    /// The entity of the rows the condition tests (the attribute may be inherited).
    package var entity: String
    /// The attribute's name, which is its column's in a table store.
    package var name: String
    /// Its position in the entity's payload.
    package var index: Int
    /// Its stored type.
    package var type: AttributeType
    /// Whether nil is one of its values.
    package var isOptional: Bool

    /// Creates an attribute reference.
    package init(entity: String, name: String, index: Int, type: AttributeType, isOptional: Bool) {
        self.entity = entity
        self.name = name
        self.index = index
        self.type = type
        self.isOptional = isOptional
    }
}

/// A relationship of an entity, as a ``StoreCondition`` names it.
package struct StoreRelationship: Sendable, Hashable {
    /// The entity of the rows the condition tests (the relationship may be inherited).
    package var entity: String
    /// The relationship's name.
    package var name: String
    /// Its position in the entity's payload.
    package var index: Int
    /// The destination entity.
    package var destination: String
    /// Whether it holds many objects.
    package var isToMany: Bool

    /// Creates a relationship reference.
    package init(entity: String, name: String, index: Int, destination: String, isToMany: Bool) {
        self.entity = entity
        self.name = name
        self.index = index
        self.destination = destination
        self.isToMany = isToMany
    }
}

/// A text search a store decides on ASCII values, as the engine does byte by byte.
///
/// It holds when the attribute's value is not nil, is ASCII (with no carriage return when
/// ``excludesCarriageReturn``: a `#Predicate` compares by `Character`, and CR LF is one), and
/// contains, starts with or equals ``text`` (which is ASCII), with ASCII letters of either
/// case equal when ``ignoresCase``. On such values that is exactly the engine's answer, for
/// `#Predicate`'s `contains` and `starts(with:)` and for a ``TextMatch`` with any options
/// (ASCII has no diacritics). Other values are the engine's to decide: Foundation folds case
/// and diacritics beyond ASCII ("straße" contains "SS", the Kelvin sign is a "k").
package struct StoreTextSearch: Sendable, Hashable {
    /// Where the text must be.
    package enum Kind: Sendable, Hashable {
        /// Anywhere in the value (every value contains "").
        case contains
        /// At its start.
        case prefix
        /// The whole value.
        case equals
    }

    /// The string attribute searched.
    package var attribute: StoreAttribute
    /// Where the text must be.
    package var kind: Kind
    /// The text, all ASCII.
    package var text: String
    /// Whether ASCII letters of either case are equal.
    package var ignoresCase: Bool
    /// Whether values with a carriage return are left undecided, as a `#Predicate`'s
    /// comparison by `Character` requires.
    package var excludesCarriageReturn: Bool

    /// Creates a search.
    package init(
        attribute: StoreAttribute,
        kind: Kind,
        text: String,
        ignoresCase: Bool,
        excludesCarriageReturn: Bool
    ) {
        self.attribute = attribute
        self.kind = kind
        self.text = text
        self.ignoresCase = ignoresCase
        self.excludesCarriageReturn = excludesCarriageReturn
    }

    /// The text with ASCII capitals lowercased, as a search that ignores case compares it.
    package var foldedText: String {
        String(decoding: text.utf8.map(TextMatcher.lowercased), as: UTF8.self)
    }
}

extension StoreCondition {
    /// The conjunction of `conditions`, with constants folded away.
    static func all(_ conditions: [StoreCondition]) -> StoreCondition {
        var parts: [StoreCondition] = []
        for condition in conditions {
            switch condition {
            case .constant(true): continue
            case .constant(false): return .constant(false)
            case .and(let inner): parts += inner
            default: parts.append(condition)
            }
        }
        return parts.count == 1 ? parts[0] : parts.isEmpty ? .constant(true) : .and(parts)
    }

    /// The disjunction of `conditions`, with constants folded away.
    static func any(_ conditions: [StoreCondition]) -> StoreCondition {
        var parts: [StoreCondition] = []
        for condition in conditions {
            switch condition {
            case .constant(false): continue
            case .constant(true): return .constant(true)
            case .or(let inner): parts += inner
            default: parts.append(condition)
            }
        }
        return parts.count == 1 ? parts[0] : parts.isEmpty ? .constant(false) : .or(parts)
    }

    /// The negation of `condition`, with constants and double negations folded away.
    static func negation(_ condition: StoreCondition) -> StoreCondition {
        switch condition {
        case .constant(let value): .constant(!value)
        case .not(let inner): inner
        default: .not(condition)
        }
    }

    /// `condition` on the destination of a to-one relationship, folded for constants: a
    /// relationship to a row that satisfies nothing is false.
    static func through(
        _ relationship: StoreRelationship,
        _ condition: StoreCondition
    ) -> StoreCondition {
        if case .constant(false) = condition { return condition }
        return .toOne(relationship, condition)
    }

    /// `condition` at the end of a chain of to-one relationships from the row.
    static func through(
        _ path: [StoreRelationship],
        _ condition: StoreCondition
    ) -> StoreCondition {
        path.reversed().reduce(condition) { inner, relationship in through(relationship, inner) }
    }
}
