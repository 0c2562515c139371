import Foundation

// What each of Foundation's predicate expressions is to a store (``StoreTranslatable``). An
// expression not listed here, or listed but with operands a store cannot test, is not
// translated, and the engine evaluates it.

extension PredicateExpressions.Variable: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        translator.bindings[key]
    }
}

extension PredicateExpressions.Value: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        .constant(value)
    }
}

extension PredicateExpressions.NilLiteral: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        let none: Wrapped? = nil
        return .constant(none as Any)
    }
}

// `$0.count > -1`: the negation of a constant is a constant (but the negation of the least
// integer overflows, and is left to the engine).
extension PredicateExpressions.UnaryMinus: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        guard case .constant(let value)? = translator.operand(of: wrapped),
            let constant = value as? Output
        else { return nil }
        if let integer = constant as? any FixedWidthInteger, Self.isLeast(integer) { return nil }
        return .constant(-constant)
    }

    private static func isLeast<Integer: FixedWidthInteger>(_ value: Integer) -> Bool {
        value == .min
    }
}

extension PredicateExpressions.KeyPath: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        switch translator.operand(of: root) {
        case .object(let path, let entity)?:
            if let attribute = entity.storeAttribute(for: keyPath) {
                return .attribute(path, attribute)
            }
            if entity.isObjectIDKeyPath(keyPath) { return .objectID(path, entity) }
            guard let (relationship, destination) = entity.storeRelationship(for: keyPath) else {
                return nil
            }
            return relationship.isToMany
                ? .toMany(path, relationship, destination)
                : .object(path + [relationship], destination)
        case .toMany(let path, let relationship, _)?:
            // `$0.items.count` and `$0.items.isEmpty`.
            guard let valueType = Root.Output.self as? any StoreToManyValue.Type else {
                return nil
            }
            if keyPath == valueType.storeCountKeyPath { return .count(path, relationship) }
            guard keyPath == valueType.storeIsEmptyKeyPath else { return nil }
            return StoreConditionTranslator.boolean(
                .exact(.count(relationship, .equal, 0)).through(path)
            )
        default:
            return nil
        }
    }
}

/// The values of to-many relationships (`Set` and `Array`), whose `count` and `isEmpty` key
/// paths a predicate may name.
protocol StoreToManyValue {
    /// `\.count` on the type.
    static var storeCountKeyPath: AnyKeyPath { get }
    /// `\.isEmpty` on the type.
    static var storeIsEmptyKeyPath: AnyKeyPath { get }
}

extension Set: StoreToManyValue {
    static var storeCountKeyPath: AnyKeyPath { \Set<Element>.count }
    static var storeIsEmptyKeyPath: AnyKeyPath { \Set<Element>.isEmpty }
}

extension Array: StoreToManyValue {
    static var storeCountKeyPath: AnyKeyPath { \[Element].count }
    static var storeIsEmptyKeyPath: AnyKeyPath { \[Element].isEmpty }
}

extension PredicateExpressions.Equal: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        StoreConditionTranslator.boolean(translator.equality(lhs, rhs, as: LHS.Output.self))
    }
}

extension PredicateExpressions.NotEqual: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        StoreConditionTranslator.boolean(!translator.equality(lhs, rhs, as: LHS.Output.self))
    }
}

extension PredicateExpressions.Comparison: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        let comparison: StoreComparison
        switch op {
        case .lessThan: comparison = .less
        case .lessThanOrEqual: comparison = .lessOrEqual
        case .greaterThan: comparison = .greater
        case .greaterThanOrEqual: comparison = .greaterOrEqual
        @unknown default: return nil
        }
        return StoreConditionTranslator.boolean(
            translator.comparison(between: lhs, comparison, and: rhs) { left, right in
                guard let left = left as? LHS.Output, let right = right as? LHS.Output else {
                    return nil
                }
                return comparison.holds(left, right)
            }
        )
    }
}

extension PredicateExpressions.Conjunction: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        StoreConditionTranslator.boolean(
            translator.condition(of: lhs) && translator.condition(of: rhs)
        )
    }
}

extension PredicateExpressions.Disjunction: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        StoreConditionTranslator.boolean(
            translator.condition(of: lhs) || translator.condition(of: rhs)
        )
    }
}

extension PredicateExpressions.Negation: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        StoreConditionTranslator.boolean(!translator.condition(of: wrapped))
    }
}

extension PredicateExpressions.CollectionContainsCollection: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        guard Base.Output.self == String.self, Other.Output.self == String.self else {
            return nil
        }
        return StoreConditionTranslator.boolean(
            translator.textSearch(base, other, kind: .contains)
        )
    }
}

extension PredicateExpressions.SequenceStartsWith: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        guard Base.Output.self == String.self, Prefix.Output.self == String.self else {
            return nil
        }
        return StoreConditionTranslator.boolean(translator.textSearch(base, prefix, kind: .prefix))
    }
}

// `$0.owner?.name == "x"`: the closure's variable stands for the owner, a row reached through
// the relationship; what the closure makes is nil where the owner is.
extension PredicateExpressions.OptionalFlatMap: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        guard let outer = translator.operand(of: wrapped) else { return nil }
        let prefix: [StoreRelationship]
        switch outer {
        case .object(let path, _) where !path.isEmpty: prefix = path
        case .attribute(let path, _): prefix = path
        default: return nil
        }
        var inner = translator
        inner.bindings[variable.key] = outer
        guard let result = inner.operand(of: transform) else { return nil }
        let present = translator.presence(of: outer)
        switch result {
        case .boolean(let isTrue, let isFalse):
            return .boolean(isTrue: present && isTrue, isFalse: present && isFalse)
        case .attribute(let path, let attribute):
            // The closure's value is nil where the outer value is, if it lies beyond it.
            if case .attribute(_, let bound) = outer {
                return bound == attribute && path == prefix ? result : nil
            }
            return path.starts(with: prefix) ? result : nil
        case .object(let path, _), .objectID(let path, _), .toMany(let path, _, _),
            .count(let path, _):
            guard case .object = outer, path.starts(with: prefix) else { return nil }
            return result
        case .constant, .choice:
            return nil
        }
    }
}

extension PredicateExpressions.NilCoalesce: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        guard let value = translator.operand(of: lhs),
            let fallback = translator.operand(of: rhs)
        else { return nil }
        return .choice(translator.presence(of: value), value, fallback)
    }
}

extension PredicateExpressions.Conditional: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        guard let whenTrue = translator.operand(of: trueBranch),
            let whenFalse = translator.operand(of: falseBranch)
        else { return nil }
        return .choice(translator.condition(of: test), whenTrue, whenFalse)
    }
}

// `["a", "b"].contains($0.name)`: the element equals one of a list of constants.
extension PredicateExpressions.SequenceContains: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        typealias Element = LHS.Output.Element
        guard case .constant(let value)? = translator.operand(of: sequence),
            let list = value as? LHS.Output, let operand = translator.operand(of: element)
        else { return nil }
        let elements = Array(list.prefix(StoreConditionTranslator.listLimit + 1))
        guard elements.count <= StoreConditionTranslator.listLimit else { return nil }
        let equalities = elements.map { constant in
            translator.comparison(operand, .equal, constant) { left, right in
                guard let left = left as? Element, let right = right as? Element else {
                    return nil
                }
                return left == right
            } ?? .unknown
        }
        return StoreConditionTranslator.boolean(
            equalities.reduce(StoreConditionBounds.constant(false), ||)
        )
    }
}

// `$0.items.contains { $0.size > 2 }`: a condition on the destinations' rows, which cannot
// refer back to the outer row (its variables are not bound in the closure's translation).
extension PredicateExpressions.SequenceContainsWhere: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        guard
            case .toMany(let path, let relationship, let destination)? =
                translator.operand(of: sequence)
        else { return nil }
        let inner = StoreConditionTranslator(bindings: [variable.key: .object([], destination)])
        return StoreConditionTranslator.boolean(
            inner.condition(of: test).anyDestination(relationship).through(path)
        )
    }
}

extension PredicateExpressions.SequenceAllSatisfy: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        guard
            case .toMany(let path, let relationship, let destination)? =
                translator.operand(of: sequence)
        else { return nil }
        let inner = StoreConditionTranslator(bindings: [variable.key: .object([], destination)])
        return StoreConditionTranslator.boolean(
            (!(!inner.condition(of: test)).anyDestination(relationship)).through(path)
        )
    }
}

// `(1...5).contains($0.size)`: comparisons with the bounds of a constant range.
extension PredicateExpressions.ClosedRange: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        guard case .constant(let low)? = translator.operand(of: lower),
            case .constant(let high)? = translator.operand(of: upper),
            let low = low as? LHS.Output, let high = high as? LHS.Output, low <= high
        else { return nil }
        return .constant(low...high)
    }
}

extension PredicateExpressions.Range: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        guard case .constant(let low)? = translator.operand(of: lower),
            case .constant(let high)? = translator.operand(of: upper),
            let low = low as? LHS.Output, let high = high as? LHS.Output, low <= high
        else { return nil }
        return .constant(low..<high)
    }
}

extension PredicateExpressions.RangeExpressionContains: StoreTranslatable {
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand? {
        typealias Bound = Element.Output
        guard case .constant(let value)? = translator.operand(of: range),
            let operand = translator.operand(of: element)
        else { return nil }
        func compare(_ op: StoreComparison, _ bound: Bound) -> StoreConditionBounds {
            translator.comparison(operand, op, bound) { left, right in
                guard let left = left as? Bound, let right = right as? Bound else { return nil }
                return op.holds(left, right)
            } ?? .unknown
        }
        let bounds: StoreConditionBounds
        if let closed = value as? Swift.ClosedRange<Bound> {
            bounds =
                compare(.greaterOrEqual, closed.lowerBound)
                && compare(.lessOrEqual, closed.upperBound)
        } else if let halfOpen = value as? Swift.Range<Bound> {
            bounds =
                compare(.greaterOrEqual, halfOpen.lowerBound) && compare(.less, halfOpen.upperBound)
        } else if let from = value as? PartialRangeFrom<Bound> {
            bounds = compare(.greaterOrEqual, from.lowerBound)
        } else if let through = value as? PartialRangeThrough<Bound> {
            bounds = compare(.lessOrEqual, through.upperBound)
        } else if let upTo = value as? PartialRangeUpTo<Bound> {
            bounds = compare(.less, upTo.upperBound)
        } else {
            return nil
        }
        return StoreConditionTranslator.boolean(bounds)
    }
}
