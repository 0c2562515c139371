import Foundation

extension StoreCondition {
    /// A predicate as a condition a store can test: every row the predicate selects, and
    /// exactly those when ``isExact``.
    package struct Translation: Sendable, Hashable {
        /// The condition a store filters its rows by.
        ///
        /// Every object the predicate selects satisfies it; `constant(true)` when the store
        /// can test none of the predicate.
        package var condition: StoreCondition
        /// Whether the condition selects exactly the objects the predicate selects; if not, the
        /// engine evaluates the predicate again on the rows the store returns.
        package var isExact: Bool
        /// A condition that only objects the predicate selects satisfy (the same as
        /// ``condition`` when exact): the rows a store knows match without the engine.
        package var certain: StoreCondition

        init(_ bounds: StoreConditionBounds) {
            condition = bounds.upper
            isExact = bounds.isExact
            certain = bounds.lower
        }
    }

    /// The largest part of `predicate` a store can test on the rows of `entity` (an entity of
    /// `T`'s class), and whether that part is the whole.
    ///
    /// Parts that are not translated (arithmetic, a string's length, key paths that are not
    /// attributes or relationships, forced unwraps, methods the translation does not know)
    /// make the result inexact: in `a && b` with only `a` translated the store filters by `a`,
    /// and the engine evaluates the whole predicate on what it returns.
    package static func translate<T: ManagedObject>(
        _ predicate: Predicate<T>,
        entity: EntityDescription
    ) -> Translation {
        let translator = StoreConditionTranslator(
            bindings: [predicate.variable.key: .object([], entity)]
        )
        return Translation(translator.condition(of: predicate.expression))
    }
}

/// Walks a predicate's expression tree into ``StoreConditionBounds``, through
/// ``StoreTranslatable``'s conformances on Foundation's `PredicateExpressions` types.
///
/// Conditions are on the rows of the entity of the predicate's input; a value reached through
/// to-one relationships carries the chain of them (its path), and conditions on it are tested
/// through that chain. A closure's variable (`flatMap`, `contains(where:)`) is bound to what
/// it stands for while its body is translated.
struct StoreConditionTranslator {
    /// What each variable in scope stands for.
    var bindings: [PredicateExpressions.VariableID: StoreOperand]

    /// The most constants a list may hold for its `contains` to be translated, so that a
    /// statement's parameters stay few.
    static let listLimit = 1000

    /// What `expression` is, if a store can tell.
    func operand(of expression: Any) -> StoreOperand? {
        (expression as? any StoreTranslatable)?.storeOperand(self)
    }

    /// The bounds of a Boolean expression.
    func condition(of expression: Any) -> StoreConditionBounds {
        operand(of: expression).map(condition(from:)) ?? .unknown
    }

    /// The bounds of a Boolean value.
    func condition(from operand: StoreOperand) -> StoreConditionBounds {
        switch operand {
        case .constant(let value):
            guard let flag = value as? Bool else { return .unknown }
            return .constant(flag)
        case .attribute(let path, let attribute):
            guard attribute.type == .bool, !attribute.isOptional else { return .unknown }
            return .exact(.comparison(attribute, .equal, .bool(true))).through(path)
        case .boolean(let isTrue, _):
            return isTrue
        case .choice(let test, let whenTrue, let whenFalse):
            return (test && condition(from: whenTrue)) || (!test && condition(from: whenFalse))
        case .object, .objectID, .toMany, .count:
            return .unknown
        }
    }

    /// The bounds of "the value is not nil".
    func presence(of operand: StoreOperand) -> StoreConditionBounds {
        switch operand {
        case .constant(let value):
            return .constant(Self.unwrapped(value) != nil)
        case .attribute(let path, let attribute):
            let present: StoreCondition =
                attribute.isOptional ? .not(.isNil(attribute)) : .constant(true)
            return .exact(present).through(path)
        case .object(let path, _), .objectID(let path, _), .toMany(let path, _, _),
            .count(let path, _):
            return .constant(true).through(path)
        case .boolean(let isTrue, let isFalse):
            return isTrue || isFalse
        case .choice(let test, let whenTrue, let whenFalse):
            return (test && presence(of: whenTrue)) || (!test && presence(of: whenFalse))
        }
    }

    /// The bounds of `operand op constant`, where `holds` compares two constants as the
    /// expression's type does (nil when they are not of it); nil when a store cannot test it.
    ///
    /// `constant` may be nil (of an optional type) for `==`: then it is "the value is nil".
    func comparison(
        _ operand: StoreOperand,
        _ op: StoreComparison,
        _ constant: Any,
        holds: (Any, Any) -> Bool?
    ) -> StoreConditionBounds? {
        if case .constant(let value) = operand {
            return holds(value, constant).map { .constant($0) }
        }
        if case .choice(let test, let whenTrue, let whenFalse) = operand {
            guard let first = comparison(whenTrue, op, constant, holds: holds),
                let second = comparison(whenFalse, op, constant, holds: holds)
            else { return nil }
            return (test && first) || (!test && second)
        }
        guard let value = Self.unwrapped(constant) else {
            return op == .equal ? !presence(of: operand) : nil
        }
        switch operand {
        case .attribute(let path, let attribute):
            guard let stored = StoredValue(constant: value, type: attribute.type),
                op == .equal || attribute.type.isOrderedByStores
            else { return nil }
            // `Date` has only `<` of its own: its `<=` and `>=` are `Comparable`'s, the
            // negations of `>` and `<`, which hold when either date is NaN.
            if attribute.type == .date, op == .lessOrEqual || op == .greaterOrEqual {
                let strict: StoreComparison = op == .lessOrEqual ? .greater : .less
                return comparison(operand, strict, constant, holds: holds).map { !$0 }
            }
            // Swift's NaN equals nothing and is ordered with nothing (and `!=`, the negation
            // of `==`, holds).
            if stored.isNaN { return .constant(false) }
            return .exact(.comparison(attribute, op, stored)).through(path)
        case .objectID(let path, let entity):
            // An ID is its key and its object's entity (a subentity's object has its own).
            guard op == .equal, let id = value as? ObjectID else { return nil }
            let family = entity.familyNames
            guard !id.isTemporary, family.contains(id.entityName) else { return .constant(false) }
            // Keys are unique in a store: with no subentity, the key says it all.
            let key = StoreCondition.key(id.key)
            return .exact(family.count == 1 ? key : .all([key, .entity(id.entityName)]))
                .through(path)
        case .count(let path, let relationship):
            guard let number = value as? Int else { return nil }
            return .exact(.count(relationship, op, number)).through(path)
        case .boolean(let isTrue, let isFalse):
            guard op == .equal, let flag = value as? Bool else { return nil }
            return flag ? isTrue : isFalse
        case .object, .toMany, .constant, .choice:
            return nil
        }
    }

    /// The bounds of `lhs == rhs`, compared as `Value` compares.
    func equality<Value: Equatable>(
        _ lhs: Any,
        _ rhs: Any,
        as _: Value.Type
    ) -> StoreConditionBounds {
        comparison(between: lhs, .equal, and: rhs) { left, right in
            guard let left = left as? Value, let right = right as? Value else { return nil }
            return left == right
        }
    }

    /// The bounds of `lhs op rhs`, two expressions one of which is a constant, compared as
    /// `holds` compares two constants.
    func comparison(
        between lhs: Any,
        _ op: StoreComparison,
        and rhs: Any,
        holds: (Any, Any) -> Bool?
    ) -> StoreConditionBounds {
        guard let left = operand(of: lhs), let right = operand(of: rhs) else { return .unknown }
        if case .constant(let value) = right {
            return comparison(left, op, value, holds: holds) ?? .unknown
        }
        if case .constant(let value) = left {
            return comparison(right, op.swapped, value) { holds($1, $0) } ?? .unknown
        }
        return .unknown
    }

    /// A condition as a Boolean value.
    static func boolean(_ bounds: StoreConditionBounds) -> StoreOperand {
        .boolean(isTrue: bounds, isFalse: !bounds)
    }

    /// A text search of `value` for the constant `text`: exact on ASCII values, the rest left
    /// to the engine (see ``StoreTextSearch``).
    func textSearch(
        _ value: Any,
        _ text: Any,
        kind: StoreTextSearch.Kind
    ) -> StoreConditionBounds {
        guard case .attribute(let path, let attribute)? = operand(of: value),
            attribute.type == .string,
            case .constant(let constant)? = operand(of: text),
            let needle = constant as? String
        else { return .unknown }
        return Self.textSearch(
            attribute,
            needle,
            kind: kind,
            ignoresCase: false,
            characterwise: true
        ).through(path)
    }

    /// A text search of a string attribute: on ASCII values (and ASCII text) the store decides
    /// it exactly; the other values may match, and the engine decides them.
    static func textSearch(
        _ attribute: StoreAttribute,
        _ text: String,
        kind: StoreTextSearch.Kind,
        ignoresCase: Bool,
        characterwise: Bool
    ) -> StoreConditionBounds {
        let present: StoreCondition =
            attribute.isOptional ? .not(.isNil(attribute)) : .constant(true)
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else {
            // Non-ASCII text may match ASCII values (the Kelvin sign is canonically a "K").
            return StoreConditionBounds(upper: present, lower: .constant(false), isExact: false)
        }
        let search = StoreCondition.text(
            StoreTextSearch(
                attribute: attribute,
                kind: kind,
                text: text,
                ignoresCase: ignoresCase,
                excludesCarriageReturn: characterwise
            )
        )
        let undecided = StoreCondition.all([
            present, .not(.isPlainText(attribute, excludesCarriageReturn: characterwise)),
        ])
        return StoreConditionBounds(
            upper: .any([search, undecided]),
            lower: search,
            isExact: false
        )
    }
}

/// A value expression as a store sees it.
indirect enum StoreOperand {
    /// A constant, of the expression's type (an `Optional` for an optional one).
    case constant(Any)
    /// An attribute of the object at the end of a chain of to-one relationships; nil when one
    /// of them has no destination or the attribute is nil.
    case attribute([StoreRelationship], StoreAttribute)
    /// The object at the end of a chain of to-one relationships (the row itself for none);
    /// nil when one of them has no destination.
    case object([StoreRelationship], EntityDescription)
    /// The ``ManagedObject/objectID`` of such an object, and the object's entity.
    case objectID([StoreRelationship], EntityDescription)
    /// A to-many relationship of the object at the end of a chain of to-one relationships, and
    /// its destination entity.
    case toMany([StoreRelationship], StoreRelationship, EntityDescription)
    /// The number of destinations of such a to-many relationship.
    case count([StoreRelationship], StoreRelationship)
    /// A Boolean value: the rows where it is true, and those where it is false (neither where
    /// it is nil).
    case boolean(isTrue: StoreConditionBounds, isFalse: StoreConditionBounds)
    /// One value where the condition holds, the other elsewhere (`??`, `? :`).
    case choice(StoreConditionBounds, StoreOperand, StoreOperand)
}

/// An expression a store may be able to test: conformed to by Foundation's
/// `PredicateExpressions` types (``StoreConditionTranslator``).
///
/// Every conformance is unconditional, and reaches its operands through dynamic casts: a
/// conjunction with an operand a store cannot test still translates its other operand.
protocol StoreTranslatable {
    /// What the expression is, or nil when a store cannot tell.
    func storeOperand(_ translator: StoreConditionTranslator) -> StoreOperand?
}

extension StoreConditionTranslator {
    /// The value inside any number of `Optional`s, or nil for none.
    static func unwrapped(_ value: Any) -> Any? {
        guard let optional = value as? any StoreOptional else { return value }
        return optional.storeWrapped.flatMap(unwrapped)
    }
}

/// Lets ``StoreConditionTranslator/unwrapped(_:)`` look inside an `Optional` of any type.
protocol StoreOptional {
    /// The value, or nil.
    var storeWrapped: Any? { get }
}

extension Optional: StoreOptional {
    var storeWrapped: Any? { map { $0 } }
}

extension StoredValue {
    /// The stored form of a constant compared with an attribute of `type`; nil for a type a
    /// store does not compare (URLs, whose equality is not their text's, and Codable values).
    init?(constant value: Any, type: AttributeType) {
        switch type {
        case .bool:
            guard let flag = value as? Bool else { return nil }
            self = .bool(flag)
        case .int8, .int16, .int32, .int64:
            guard let integer = (value as? any BinaryInteger).flatMap({ Int64(exactly: $0) })
            else { return nil }
            self = .int(integer)
        case .uint8, .uint16, .uint32, .uint64:
            guard let integer = (value as? any BinaryInteger).flatMap({ UInt64(exactly: $0) })
            else { return nil }
            self = .uint(integer)
        case .float:
            guard let number = value as? Float else { return nil }
            self = .float(number)
        case .double:
            guard let number = value as? Double else { return nil }
            self = .double(number)
        case .date:
            guard let date = value as? Date else { return nil }
            self = .date(date)
        case .string:
            guard let text = value as? String else { return nil }
            self = .string(text)
        case .uuid:
            guard let uuid = value as? UUID else { return nil }
            self = .uuid(uuid)
        case .data:
            guard let bytes = value as? Data else { return nil }
            self = .data(bytes)
        case .url, .codable:
            return nil
        }
    }

    /// Whether the value is a floating-point NaN (or a date of NaN seconds).
    var isNaN: Bool {
        switch self {
        case .double(let number): number.isNaN
        case .float(let number): number.isNaN
        case .date(let date): date.timeIntervalSinceReferenceDate.isNaN
        default: false
        }
    }
}

extension AttributeType {
    /// Whether a store orders values of the type as Swift's `<` does (numbers, dates and
    /// strings); the others it only compares for equality.
    var isOrderedByStores: Bool {
        switch self {
        case .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64, .float, .double,
            .date, .string:
            true
        case .bool, .uuid, .data, .url, .codable:
            false
        }
    }
}

extension EntityDescription {
    /// The names of the entity and of every entity that inherits from it: those of the
    /// objects it may stand for.
    var familyNames: Set<String> {
        subentities.reduce(into: [name]) { names, child in names.formUnion(child.familyNames) }
    }
}
