import Foundation
import ObjectLog

/// Random predicates on ``Catalog/Item``, built from Foundation's expression types directly:
/// leaves on every attribute type, relationship and form the translation knows (and some it
/// does not: arithmetic, a string's length, URLs), combined by `&&`, `||` and `!`, so that a
/// differential test meets exact translations, partial ones and negations of partial ones.
struct RandomPredicates {
    typealias Item = Catalog.Item
    typealias Input = PredicateExpressions.Variable<Item>
    typealias Condition = any StandardPredicateExpression<Bool>
    /// A leaf, made for the predicate's variable, and a description for failure messages.
    typealias Leaf = (make: (Input) -> Condition, text: String)

    var random: SplitMix
    /// IDs a predicate may name: the catalog's objects', and some that name no object (a key
    /// under another entity's name).
    var objectIDs: [ObjectID] = []

    /// A predicate of at most `depth` levels of `&&`, `||` and `!`, and its description.
    mutating func predicate(depth: Int) -> (Predicate<Item>, String) {
        let tree = self.tree(depth: depth)
        return (Predicate<Item> { input in tree.make(input) }, tree.text)
    }

    private mutating func tree(depth: Int) -> Leaf {
        guard depth > 0, random.chance(0.6) else { return leaf() }
        switch Int.random(in: 0..<3, using: &random) {
        case 0:
            let (a, b) = (tree(depth: depth - 1), tree(depth: depth - 1))
            return ({ Self.and(a.make($0), b.make($0)) }, "(\(a.text) && \(b.text))")
        case 1:
            let (a, b) = (tree(depth: depth - 1), tree(depth: depth - 1))
            return ({ Self.or(a.make($0), b.make($0)) }, "(\(a.text) || \(b.text))")
        default:
            let a = tree(depth: depth - 1)
            return ({ Self.not(a.make($0)) }, "!\(a.text)")
        }
    }

    // MARK: - Leaves

    enum Operator: CaseIterable {
        case equal, notEqual, less, lessOrEqual, greater, greaterOrEqual
    }

    mutating func leaf() -> Leaf {
        let op = random.pick(Operator.allCases)
        switch Int.random(in: 0..<30, using: &random) {
        case 0: return compare(\.count, "count", op, random.pick(CatalogValues.extremeIntegers))
        case 1: return compare(\.price, "price", op, random.pick(CatalogValues.doubles))
        case 2: return compare(\.weight, "weight", op, random.pick(CatalogValues.floats))
        case 3: return compare(\.name, "name", op, random.pick(CatalogValues.strings))
        case 4: return compare(\.big, "big", op, random.pick(CatalogValues.bigs))
        case 5: return compare(\.tiny, "tiny", op, random.pick(CatalogValues.tinies))
        case 6:
            let date = Date(timeIntervalSinceReferenceDate: random.pick(CatalogValues.seconds))
            return compare(\.added, "added", op, date)
        case 7:
            return equality(
                \.note,
                "note",
                random.chance(0.2) ? nil : random.pick(CatalogValues.strings)
            )
        case 8:
            return equality(
                \.rank,
                "rank",
                random.chance(0.2) ? nil : random.pick(CatalogValues.integers)
            )
        case 9: return equality(\.isActive, "isActive", random.chance(0.5))
        case 10: return equality(\.code, "code", random.pick(CatalogValues.uuids))
        case 11: return equality(\.bytes, "bytes", random.pick(CatalogValues.datas))
        case 12: return text(random.pick(CatalogValues.strings), prefix: random.chance(0.4))
        case 13: return ownerName(random.pick(CatalogValues.strings), equal: random.chance(0.6))
        case 14:
            return (
                { Self.equal(Self.key($0, \.owner), PredicateExpressions.NilLiteral()) },
                "owner == nil"
            )
        case 15: return tagCount(op, random.pick([0, 1, 2, 3]))
        case 16: return tagLabel(random.pick(CatalogValues.labels), all: random.chance(0.3))
        case 17: return rankOrZero(op, random.pick(CatalogValues.integers))
        case 18:
            return countInRange(
                random.pick(CatalogValues.integers),
                random.pick(CatalogValues.integers)
            )
        case 19:
            return nameIn([random.pick(CatalogValues.strings), random.pick(CatalogValues.strings)])
        case 20: return noteContains(random.pick(CatalogValues.strings))
        case 21: return managerRating(random.pick(CatalogValues.integers))
        case 22: return tagsEmpty()
        case 23, 24:
            return objectID(random.pick(objectIDs), form: Int.random(in: 0..<3, using: &random))
        case 25:
            return conditional(
                random.pick(CatalogValues.integers),
                random.pick(CatalogValues.strings)
            )
        case 26: return (make: { Self.key($0, \.isActive) }, text: "isActive")
        case 27: return ownerNickname(random.chance(0.5) ? nil : random.pick(CatalogValues.strings))
        default: return untranslatable(random.pick(CatalogValues.integers))
        }
    }

    static func key<T>(
        _ input: Input,
        _ path: KeyPath<Item, T> & Sendable
    )
        -> PredicateExpressions.KeyPath<Input, T>
    {
        PredicateExpressions.KeyPath(root: input, keyPath: path)
    }

    static func value<T>(_ value: T) -> PredicateExpressions.Value<T> {
        PredicateExpressions.Value(value)
    }

    static func equal<A: StandardPredicateExpression, B: StandardPredicateExpression>(
        _ a: A,
        _ b: B
    )
        -> Condition where A.Output == B.Output, A.Output: Equatable
    {
        PredicateExpressions.Equal(lhs: a, rhs: b)
    }

    func compare<T: Comparable & Codable & Sendable>(
        _ path: KeyPath<Item, T> & Sendable,
        _ name: String,
        _ op: Operator,
        _ constant: T
    ) -> Leaf {
        let make: (Input) -> Condition = { input in
            let (lhs, rhs) = (Self.key(input, path), Self.value(constant))
            switch op {
            case .equal: return PredicateExpressions.Equal(lhs: lhs, rhs: rhs)
            case .notEqual: return PredicateExpressions.NotEqual(lhs: lhs, rhs: rhs)
            case .less: return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .lessThan)
            case .lessOrEqual:
                return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .lessThanOrEqual)
            case .greater:
                return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .greaterThan)
            case .greaterOrEqual:
                return PredicateExpressions.Comparison(lhs: lhs, rhs: rhs, op: .greaterThanOrEqual)
            }
        }
        return (make, "\(name) \(op) \(Self.describe(constant))")
    }

    mutating func equality<T: Equatable & Codable & Sendable>(
        _ path: KeyPath<Item, T> & Sendable,
        _ name: String,
        _ constant: T
    ) -> Leaf {
        let flip = random.chance(0.5)
        let make: (Input) -> Condition = { input in
            let (lhs, rhs) = (Self.key(input, path), Self.value(constant))
            return flip
                ? PredicateExpressions.NotEqual(lhs: lhs, rhs: rhs)
                : PredicateExpressions.Equal(lhs: lhs, rhs: rhs)
        }
        return (make, "\(name) \(flip ? "!=" : "==") \(Self.describe(constant))")
    }

    func text(_ needle: String, prefix: Bool) -> Leaf {
        let make: (Input) -> Condition = { input in
            prefix
                ? PredicateExpressions.SequenceStartsWith(
                    base: Self.key(input, \.name),
                    prefix: Self.value(needle)
                )
                : PredicateExpressions.CollectionContainsCollection(
                    base: Self.key(input, \.name),
                    other: Self.value(needle)
                )
        }
        return (make, "name.\(prefix ? "starts(with:" : "contains(")\(String(reflecting: needle)))")
    }

    /// `$0.owner?.name == text` (or `!=`).
    func ownerName(_ text: String, equal: Bool) -> Leaf {
        let make: (Input) -> Condition = { input in
            let name = PredicateExpressions.OptionalFlatMap(Self.key(input, \.owner)) { owner in
                PredicateExpressions.KeyPath(root: owner, keyPath: \Catalog.Owner.name)
            }
            let constant = Self.value(String?.some(text))
            return equal
                ? PredicateExpressions.Equal(lhs: name, rhs: constant)
                : PredicateExpressions.NotEqual(lhs: name, rhs: constant)
        }
        return (make, "owner?.name \(equal ? "==" : "!=") \(String(reflecting: text))")
    }

    /// `$0.owner?.manager?.rating == rating`.
    func managerRating(_ rating: Int) -> Leaf {
        let make: (Input) -> Condition = { input in
            let manager = PredicateExpressions.OptionalFlatMap(Self.key(input, \.owner)) { owner in
                PredicateExpressions.KeyPath(root: owner, keyPath: \Catalog.Owner.manager)
            }
            let value = PredicateExpressions.OptionalFlatMap(manager) { manager in
                PredicateExpressions.KeyPath(root: manager, keyPath: \Catalog.Owner.rating)
            }
            return PredicateExpressions.Equal(
                lhs: value,
                rhs: Self.value(Int32?.some(Int32(rating)))
            )
        }
        return (make, "owner?.manager?.rating == \(rating)")
    }

    /// `$0.tags.count op count`.
    func tagCount(_ op: Operator, _ count: Int) -> Leaf {
        let make: (Input) -> Condition = { input in
            let tagCount = PredicateExpressions.KeyPath(
                root: Self.key(input, \.tags),
                keyPath: \Set<Catalog.Tag>.count
            )
            let constant = Self.value(count)
            switch op {
            case .equal: return PredicateExpressions.Equal(lhs: tagCount, rhs: constant)
            case .notEqual: return PredicateExpressions.NotEqual(lhs: tagCount, rhs: constant)
            case .less:
                return PredicateExpressions.Comparison(lhs: tagCount, rhs: constant, op: .lessThan)
            case .lessOrEqual:
                return PredicateExpressions.Comparison(
                    lhs: tagCount,
                    rhs: constant,
                    op: .lessThanOrEqual
                )
            case .greater:
                return PredicateExpressions.Comparison(
                    lhs: tagCount,
                    rhs: constant,
                    op: .greaterThan
                )
            case .greaterOrEqual:
                return PredicateExpressions.Comparison(
                    lhs: tagCount,
                    rhs: constant,
                    op: .greaterThanOrEqual
                )
            }
        }
        return (make, "tags.count \(op) \(count)")
    }

    /// `$0.tags.isEmpty`.
    func tagsEmpty() -> Leaf {
        let make: (Input) -> Condition = { input in
            PredicateExpressions.KeyPath(
                root: Self.key(input, \.tags),
                keyPath: \Set<Catalog.Tag>.isEmpty
            )
        }
        return (make, "tags.isEmpty")
    }

    /// `$0.tags.contains { $0.label == label }`, or `allSatisfy`.
    func tagLabel(_ label: String, all: Bool) -> Leaf {
        let make: (Input) -> Condition = { input in
            let tags = Self.key(input, \.tags)
            if all {
                return PredicateExpressions.SequenceAllSatisfy(tags) { tag in
                    PredicateExpressions.Equal(
                        lhs: PredicateExpressions.KeyPath(root: tag, keyPath: \Catalog.Tag.label),
                        rhs: Self.value(label)
                    )
                }
            }
            return PredicateExpressions.SequenceContainsWhere(tags) { tag in
                PredicateExpressions.Equal(
                    lhs: PredicateExpressions.KeyPath(root: tag, keyPath: \Catalog.Tag.label),
                    rhs: Self.value(label)
                )
            }
        }
        return (
            make,
            "tags.\(all ? "allSatisfy" : "contains") { label == \(String(reflecting: label)) }"
        )
    }

    /// `($0.rank ?? 0) op value`.
    func rankOrZero(_ op: Operator, _ value: Int) -> Leaf {
        let make: (Input) -> Condition = { input in
            let rank = PredicateExpressions.NilCoalesce(
                lhs: Self.key(input, \.rank),
                rhs: Self.value(0)
            )
            let constant = Self.value(value)
            switch op {
            case .equal: return PredicateExpressions.Equal(lhs: rank, rhs: constant)
            case .notEqual: return PredicateExpressions.NotEqual(lhs: rank, rhs: constant)
            case .less:
                return PredicateExpressions.Comparison(lhs: rank, rhs: constant, op: .lessThan)
            case .lessOrEqual:
                return PredicateExpressions.Comparison(
                    lhs: rank,
                    rhs: constant,
                    op: .lessThanOrEqual
                )
            case .greater:
                return PredicateExpressions.Comparison(lhs: rank, rhs: constant, op: .greaterThan)
            case .greaterOrEqual:
                return PredicateExpressions.Comparison(
                    lhs: rank,
                    rhs: constant,
                    op: .greaterThanOrEqual
                )
            }
        }
        return (make, "(rank ?? 0) \(op) \(value)")
    }

    /// `(low...high).contains($0.count)`, a half-open range when `low > high` would trap.
    func countInRange(_ a: Int, _ b: Int) -> Leaf {
        let (low, high) = (min(a, b), max(a, b))
        let make: (Input) -> Condition = { input in
            PredicateExpressions.RangeExpressionContains(
                range: PredicateExpressions.ClosedRange(
                    lower: Self.value(low),
                    upper: Self.value(high)
                ),
                element: Self.key(input, \.count)
            )
        }
        return (make, "(\(low)...\(high)).contains(count)")
    }

    /// `[a, b].contains($0.name)`.
    func nameIn(_ names: [String]) -> Leaf {
        let make: (Input) -> Condition = { input in
            PredicateExpressions.SequenceContains(
                sequence: Self.value(names),
                element: Self.key(input, \.name)
            )
        }
        return (make, "\(names).contains(name)")
    }

    /// `$0.note.flatMap { $0.contains(text) } == true`.
    func noteContains(_ text: String) -> Leaf {
        let make: (Input) -> Condition = { input in
            let contains = PredicateExpressions.OptionalFlatMap(Self.key(input, \.note)) { note in
                PredicateExpressions.CollectionContainsCollection(
                    base: note,
                    other: Self.value(text)
                )
            }
            return PredicateExpressions.Equal(lhs: contains, rhs: Self.value(Bool?.some(true)))
        }
        return (make, "note?.contains(\(String(reflecting: text))) == true")
    }

    /// `$0.objectID == id`, `$0.owner?.objectID == id` or `$0.tags.contains { $0.objectID == id }`.
    func objectID(_ id: ObjectID, form: Int) -> Leaf {
        let make: (Input) -> Condition = { input in
            switch form {
            case 0:
                return PredicateExpressions.Equal(
                    lhs: Self.key(input, \.objectID),
                    rhs: Self.value(id)
                )
            case 1:
                let ownerID = PredicateExpressions.OptionalFlatMap(Self.key(input, \.owner)) {
                    owner in
                    PredicateExpressions.KeyPath(root: owner, keyPath: \Catalog.Owner.objectID)
                }
                return PredicateExpressions.Equal(lhs: ownerID, rhs: Self.value(ObjectID?.some(id)))
            default:
                return PredicateExpressions.SequenceContainsWhere(Self.key(input, \.tags)) { tag in
                    PredicateExpressions.Equal(
                        lhs: PredicateExpressions.KeyPath(
                            root: tag,
                            keyPath: \Catalog.Tag.objectID
                        ),
                        rhs: Self.value(id)
                    )
                }
            }
        }
        return (
            make, ["objectID", "owner?.objectID", "tags.contains { objectID"][form] + " == \(id)"
        )
    }

    /// `$0.count > count ? $0.isActive : $0.name == name`.
    func conditional(_ count: Int, _ name: String) -> Leaf {
        let make: (Input) -> Condition = { input in
            PredicateExpressions.Conditional(
                test: PredicateExpressions.Comparison(
                    lhs: Self.key(input, \.count),
                    rhs: Self.value(count),
                    op: .greaterThan
                ),
                trueBranch: Self.key(input, \.isActive),
                falseBranch: PredicateExpressions.Equal(
                    lhs: Self.key(input, \.name),
                    rhs: Self.value(name)
                )
            )
        }
        return (make, "count > \(count) ? isActive : name == \(String(reflecting: name))")
    }

    /// `$0.owner?.nickname == nickname` (an optional attribute through an optional relationship).
    func ownerNickname(_ nickname: String?) -> Leaf {
        let make: (Input) -> Condition = { input in
            let value = PredicateExpressions.OptionalFlatMap(Self.key(input, \.owner)) { owner in
                PredicateExpressions.KeyPath(root: owner, keyPath: \Catalog.Owner.nickname)
            }
            return PredicateExpressions.Equal(lhs: value, rhs: Self.value(nickname))
        }
        return (make, "owner?.nickname == \(String(reflecting: nickname))")
    }

    /// Arithmetic, or a computed property that is no attribute: for the engine alone.
    func untranslatable(_ value: Int) -> Leaf {
        let make: (Input) -> Condition = { input in
            PredicateExpressions.Comparison(
                lhs: Self.key(input, \.doubled),
                rhs: Self.value(value),
                op: .greaterThan
            )
        }
        return (make, "doubled > \(value)")
    }

    /// A constant as Swift writes it; a date as its seconds (Foundation's description of a
    /// NaN date traps).
    static func describe(_ value: Any) -> String {
        if let date = value as? Date { return "Date(\(date.timeIntervalSinceReferenceDate))" }
        return String(reflecting: value)
    }

    // MARK: - Combinations

    static func and(_ a: Condition, _ b: Condition) -> Condition {
        func first<A: StandardPredicateExpression<Bool>>(_ a: A) -> Condition {
            func second<B: StandardPredicateExpression<Bool>>(_ b: B) -> Condition {
                PredicateExpressions.Conjunction(lhs: a, rhs: b)
            }
            return second(b)
        }
        return first(a)
    }

    static func or(_ a: Condition, _ b: Condition) -> Condition {
        func first<A: StandardPredicateExpression<Bool>>(_ a: A) -> Condition {
            func second<B: StandardPredicateExpression<Bool>>(_ b: B) -> Condition {
                PredicateExpressions.Disjunction(lhs: a, rhs: b)
            }
            return second(b)
        }
        return first(a)
    }

    static func not(_ a: Condition) -> Condition {
        func negate<A: StandardPredicateExpression<Bool>>(_ a: A) -> Condition {
            PredicateExpressions.Negation(a)
        }
        return negate(a)
    }
}
