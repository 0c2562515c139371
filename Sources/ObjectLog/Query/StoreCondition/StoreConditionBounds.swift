/// What a translation knows of a Boolean expression: a condition every row that satisfies the
/// expression satisfies (``upper``), and one that only such rows satisfy (``lower``).
///
/// An expression a store cannot test becomes "every row may, none surely" (``unknown``).
/// Bounds combine by the rules of logic, so that the largest part of a predicate a store can
/// test survives: `a && x`, with `x` unknown, may select the rows of `a`; `!(a || x)` those
/// of `!a`; `a || x` every row. A negation swaps the bounds, which is why both are kept.
struct StoreConditionBounds: Hashable {
    /// Every row that satisfies the expression satisfies it.
    var upper: StoreCondition
    /// Only rows that satisfy the expression satisfy it.
    var lower: StoreCondition
    /// Whether the two are the same condition, the expression's exact translation.
    var isExact: Bool

    /// The bounds of an expression a store decides exactly as `condition`.
    static func exact(_ condition: StoreCondition) -> StoreConditionBounds {
        StoreConditionBounds(upper: condition, lower: condition, isExact: true)
    }

    /// The bounds of a constant.
    static func constant(_ value: Bool) -> StoreConditionBounds {
        exact(.constant(value))
    }

    /// The bounds of an expression a store cannot test: every row may satisfy it, none surely.
    static let unknown = StoreConditionBounds(
        upper: .constant(true),
        lower: .constant(false),
        isExact: false
    )

    /// Both expressions.
    static func && (lhs: StoreConditionBounds, rhs: StoreConditionBounds) -> StoreConditionBounds {
        StoreConditionBounds(
            upper: .all([lhs.upper, rhs.upper]),
            lower: .all([lhs.lower, rhs.lower]),
            isExact: lhs.isExact && rhs.isExact
        )
    }

    /// Either expression.
    static func || (lhs: StoreConditionBounds, rhs: StoreConditionBounds) -> StoreConditionBounds {
        StoreConditionBounds(
            upper: .any([lhs.upper, rhs.upper]),
            lower: .any([lhs.lower, rhs.lower]),
            isExact: lhs.isExact && rhs.isExact
        )
    }

    /// The opposite expression: the rows that surely satisfy an expression are the ones that
    /// cannot satisfy its negation.
    static prefix func ! (operand: StoreConditionBounds) -> StoreConditionBounds {
        StoreConditionBounds(
            upper: .negation(operand.lower),
            lower: .negation(operand.upper),
            isExact: operand.isExact
        )
    }

    /// The expression tested at the end of a chain of to-one relationships (false when one of
    /// them has no destination).
    func through(_ path: [StoreRelationship]) -> StoreConditionBounds {
        guard !path.isEmpty else { return self }
        return StoreConditionBounds(
            upper: .through(path, upper),
            lower: .through(path, lower),
            isExact: isExact
        )
    }

    /// Whether some destination of a to-many relationship satisfies the expression.
    func anyDestination(_ relationship: StoreRelationship) -> StoreConditionBounds {
        func some(_ condition: StoreCondition) -> StoreCondition {
            if case .constant(false) = condition { return condition }
            return .anyDestination(relationship, condition)
        }
        return StoreConditionBounds(upper: some(upper), lower: some(lower), isExact: isExact)
    }
}
