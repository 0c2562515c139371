import Foundation

/// Turns common predicates into closures that read attribute storage directly.
///
/// Foundation's `Predicate.evaluate` walks the expression tree generically for every object,
/// which costs far more than the comparison itself. Comparisons (`<`, `<=`, `>`, `>=`, `==`,
/// `!=`) between an entity's own attributes and constant values, a string's `contains` and
/// `starts(with:)` (see `PredicateCompiler+Text.swift`), combined with `&&`, `||` and `!`, are
/// compiled here; any other predicate (other string methods, relationships, arithmetic)
/// returns `nil` and is evaluated by Foundation as written.
struct PredicateCompiler {
    let entity: EntityDescription
    /// The predicate's input variable.
    let variable: PredicateExpressions.VariableID
    /// The payload indices of the attributes the compiled predicate reads.
    private let reads = ReadIndices()

    private final class ReadIndices {
        var indices: Set<Int> = []
    }

    /// The compiled predicate, or `nil` if part of it is not compilable.
    static func compile<T: ManagedObject>(
        _ predicate: Predicate<T>,
        entity: EntityDescription
    ) -> ((ManagedObject) -> Bool)? {
        compileWithReads(predicate, entity: entity)?.condition
    }

    /// A compiled predicate: its condition, which properties (by payload index) it reads, and
    /// the same condition on attribute columns and as a text match, where it can be one.
    typealias Compilation = (
        condition: (ManagedObject) -> Bool, reads: [Bool], columns: ColumnCondition?,
        text: CompiledTextMatch?
    )

    /// The compiled predicate and which properties (by payload index) it reads.
    ///
    /// `nil` if part of it is not compilable. A compiled predicate reads nothing else of its
    /// object.
    static func compileWithReads<T: ManagedObject>(
        _ predicate: Predicate<T>,
        entity: EntityDescription
    ) -> Compilation? {
        let compiler = PredicateCompiler(entity: entity, variable: predicate.variable.key)
        guard let expression = predicate.expression as? any CompilableCondition,
            let compiled = expression.compileCondition(compiler)
        else { return nil }
        var reads = [Bool](repeating: false, count: entity.accessors.count)
        for index in compiler.reads.indices where reads.indices.contains(index) {
            reads[index] = true
        }
        return (compiled.test, reads, compiled.columns, compiled.text)
    }

    /// The accessor of the attribute a key path on the input is, if it is one (see
    /// ``EntityDescription/attributeAccessor(for:)``).
    func attribute<Root, Output>(
        _ keyPath: KeyPath<Root, Output>,
        as: Output.Type
    ) -> NativeAttributeAccessor<Output>? where Output: AttributeValue {
        guard
            let accessor = entity.attributeAccessor(for: keyPath)
                as? NativeAttributeAccessor<Output>
        else { return nil }
        reads.indices.insert(accessor.index)
        return accessor
    }
}

/// A Boolean expression that can be compiled.
protocol CompilableCondition {
    func compileCondition(_ compiler: PredicateCompiler) -> CompiledCondition?
}

/// A compiled Boolean expression.
struct CompiledCondition {
    /// Evaluates it on an object.
    var test: (ManagedObject) -> Bool
    /// The same condition on attribute columns (see ``AttributeColumns``), if they can decide
    /// it.
    var columns: ColumnCondition?
    /// The same condition as a text match, if it is one (a string attribute's `contains` or
    /// `starts(with:)` of a constant), which a scan can test on a record's bytes.
    var text: CompiledTextMatch?
}

/// A value expression that can be compiled.
protocol CompilableValue<Output> {
    associatedtype Output
    func compileValue(_ compiler: PredicateCompiler) -> CompiledValue<Output>?
}

/// A compiled value expression: how to read it, and what comparisons can know about it.
struct CompiledValue<Output> {
    /// Reads the value of an object.
    var read: (ManagedObject) -> Output
    /// The value, if the expression is a constant.
    var constant: Output?
    /// For a ``ScalarKind`` attribute: the offset of its value in an object's memory.
    var scalarOffset: Int?
    /// For a ``ScalarKind`` attribute: its payload index.
    var scalarIndex: Int?
    /// For any attribute of the input: its payload index.
    var attributeIndex: Int?
}

extension PredicateExpressions.Value: CompilableValue {
    func compileValue(_ compiler: PredicateCompiler) -> CompiledValue<Output>? {
        let constant = value
        return CompiledValue(read: { _ in constant }, constant: constant)
    }
}

// A negative literal (`$0.count > -1`) is the negation of a positive one in a predicate: a
// constant, so that comparisons with it can go through the attribute columns too.
extension PredicateExpressions.UnaryMinus: CompilableValue
where Wrapped: CompilableValue, Wrapped.Output == Output {
    func compileValue(_ compiler: PredicateCompiler) -> CompiledValue<Output>? {
        // Anything else, and the negation of the least integer (which overflows), is left to
        // Foundation.
        guard let constant = wrapped.compileValue(compiler)?.constant,
            !Self.isLeastInteger(constant)
        else { return nil }
        let negated = -constant
        return CompiledValue(read: { _ in negated }, constant: negated)
    }

    private static func isLeastInteger(_ value: Output) -> Bool {
        func isLeast<Integer: FixedWidthInteger>(_ value: Integer) -> Bool { value == .min }
        guard let integer = value as? any FixedWidthInteger else { return false }
        return isLeast(integer)
    }
}

extension PredicateExpressions.NilLiteral: CompilableValue {
    func compileValue(_ compiler: PredicateCompiler) -> CompiledValue<Output>? {
        CompiledValue(read: { _ in nil }, constant: .some(nil))
    }
}

extension PredicateExpressions.KeyPath: CompilableValue {
    func compileValue(_ compiler: PredicateCompiler) -> CompiledValue<Output>? {
        guard let variable = root as? any VariableExpression,
            variable.variableID == compiler.variable
        else { return nil }
        func make<V: AttributeValue>(_: V.Type) -> CompiledValue<Output>? {
            guard V.self == Output.self,
                let typed = keyPath as? KeyPath<Root.Output, V>,
                let accessor = compiler.attribute(typed, as: V.self)
            else { return nil }
            let read: (ManagedObject) -> V = { object in
                if object.isFault { object.fireFault() }
                return accessor.storedValue(of: object)
            }
            // Safe: `V` and `Output` are the same type (checked above), so the two function
            // types are identical; the cast only tells the compiler so.
            return CompiledValue(
                read: unsafeBitCast(read, to: ((ManagedObject) -> Output).self),
                scalarOffset: accessor.scalarField?.offset,
                scalarIndex: accessor.scalarField.map { _ in accessor.index },
                attributeIndex: accessor.index
            )
        }
        guard let native = Output.self as? any AttributeValue.Type else { return nil }
        return make(native)
    }
}

/// The comparisons a predicate can make.
enum ComparisonOperator {
    case less, lessOrEqual, greater, greaterOrEqual, equal, notEqual

    /// The operator with its operands swapped (`a < b` is `b > a`).
    var swapped: ComparisonOperator {
        switch self {
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        case .equal: .equal
        case .notEqual: .notEqual
        }
    }

    init?(_ op: PredicateExpressions.ComparisonOperator) {
        switch op {
        case .lessThan: self = .less
        case .lessThanOrEqual: self = .lessOrEqual
        case .greaterThan: self = .greater
        case .greaterThanOrEqual: self = .greaterOrEqual
        @unknown default: return nil
        }
    }
}

/// A comparison of a ``ScalarKind`` attribute with a constant that reads the attribute's value
/// straight from the object's memory, with no generic code or closures per object (a predicate
/// compiled into generic closures makes an indirect call per node and moves each value through
/// its type's value witnesses, for every object a scan tests).
func scalarComparison<Output>(
    _ left: CompiledValue<Output>,
    _ op: ComparisonOperator,
    _ right: CompiledValue<Output>
) -> CompiledCondition? {
    if let offset = left.scalarOffset, let constant = right.constant {
        return scalarComparison(offset: offset, op, constant).map {
            CompiledCondition(test: $0, columns: columnComparison(left.scalarIndex, op, constant))
        }
    }
    if let offset = right.scalarOffset, let constant = left.constant {
        return scalarComparison(offset: offset, op.swapped, constant).map {
            CompiledCondition(
                test: $0,
                columns: columnComparison(right.scalarIndex, op.swapped, constant)
            )
        }
    }
    return nil
}

/// The comparison of attribute `index` with `constant` on columns, for the kinds whose column
/// holds the whole value (all but strings).
private func columnComparison<Output>(
    _ index: Int?,
    _ op: ComparisonOperator,
    _ constant: Output
) -> ColumnCondition? {
    guard let index else { return nil }
    let bits: UInt64
    if Output.self == Double.self, let value = constant as? Double {
        bits = value.bitPattern
    } else if Output.self == Int.self, let value = constant as? Int {
        bits = UInt64(bitPattern: Int64(value))
    } else if Output.self == Int64.self, let value = constant as? Int64 {
        bits = UInt64(bitPattern: value)
    } else if Output.self == Date.self, let value = constant as? Date {
        bits = value.timeIntervalSinceReferenceDate.bitPattern
    } else if Output.self == Bool.self, let value = constant as? Bool,
        op == .equal || op == .notEqual
    {
        bits = value ? 1 : 0
    } else {
        return nil
    }
    return .compare(index: index, op, bits)
}

private func scalarComparison<Output>(
    offset: Int,
    _ op: ComparisonOperator,
    _ constant: Output
) -> ((ManagedObject) -> Bool)? {
    // `Output` is the attribute's own type (the key path's value type): exact type tests, so
    // that no dynamic cast converts or unwraps the constant.
    if Output.self == Double.self, let value = constant as? Double {
        return compare(offset, op, value)
    }
    if Output.self == Int.self, let value = constant as? Int { return compare(offset, op, value) }
    if Output.self == Int64.self, let value = constant as? Int64 {
        return compare(offset, op, value)
    }
    if Output.self == Date.self, let value = constant as? Date { return compare(offset, op, value) }
    if Output.self == String.self, let value = constant as? String {
        return compare(offset, op, value)
    }
    if Output.self == Bool.self, let value = constant as? Bool {
        switch op {
        case .equal: return equals(offset, value, negated: false)
        case .notEqual: return equals(offset, value, negated: true)
        default: return nil
        }
    }
    return nil
}

/// The value of type `Value` at `offset` in a loaded object.
@inline(__always)
private func load<Value>(_ object: ManagedObject, _ offset: Int, as: Value.Type) -> Value {
    if object.isFault { object.fireFault() }
    // Safe: `offset` is the runtime-reported offset of the attribute's stored value, of type
    // `Value` (the attribute's `ScalarKind`), in the entity's class, and the predicate only
    // runs on objects of that entity.
    return UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        .advanced(by: offset).assumingMemoryBound(to: Value.self).pointee
}

private func compare<Value: Comparable>(
    _ offset: Int,
    _ op: ComparisonOperator,
    _ constant: Value
) -> (ManagedObject) -> Bool {
    switch op {
    case .less: { load($0, offset, as: Value.self) < constant }
    case .lessOrEqual: { load($0, offset, as: Value.self) <= constant }
    case .greater: { load($0, offset, as: Value.self) > constant }
    case .greaterOrEqual: { load($0, offset, as: Value.self) >= constant }
    case .equal: { load($0, offset, as: Value.self) == constant }
    case .notEqual: { load($0, offset, as: Value.self) != constant }
    }
}

private func equals<Value: Equatable>(
    _ offset: Int,
    _ constant: Value,
    negated: Bool
) -> (ManagedObject) -> Bool {
    negated
        ? { load($0, offset, as: Value.self) != constant }
        : { load($0, offset, as: Value.self) == constant }
}

/// Lets the compiler recognise the predicate's own variable.
protocol VariableExpression {
    var variableID: PredicateExpressions.VariableID { get }
}

extension PredicateExpressions.Variable: VariableExpression {
    var variableID: PredicateExpressions.VariableID { key }
}

extension PredicateExpressions.Comparison: CompilableCondition
where LHS: CompilableValue, RHS: CompilableValue, LHS.Output == RHS.Output {
    func compileCondition(_ compiler: PredicateCompiler) -> CompiledCondition? {
        guard let left = lhs.compileValue(compiler), let right = rhs.compileValue(compiler),
            let comparison = ComparisonOperator(op)
        else { return nil }
        if let fast = scalarComparison(left, comparison, right) { return fast }
        let (readLeft, readRight) = (left.read, right.read)
        let test: (ManagedObject) -> Bool
        switch comparison {
        case .less: test = { readLeft($0) < readRight($0) }
        case .lessOrEqual: test = { readLeft($0) <= readRight($0) }
        case .greater: test = { readLeft($0) > readRight($0) }
        case .greaterOrEqual: test = { readLeft($0) >= readRight($0) }
        case .equal, .notEqual: return nil
        }
        return CompiledCondition(test: test)
    }
}

extension PredicateExpressions.Equal: CompilableCondition
where LHS: CompilableValue, RHS: CompilableValue, LHS.Output == RHS.Output {
    func compileCondition(_ compiler: PredicateCompiler) -> CompiledCondition? {
        guard let left = lhs.compileValue(compiler), let right = rhs.compileValue(compiler) else {
            return nil
        }
        if let fast = scalarComparison(left, .equal, right) { return fast }
        let (readLeft, readRight) = (left.read, right.read)
        return CompiledCondition(test: { readLeft($0) == readRight($0) })
    }
}

extension PredicateExpressions.NotEqual: CompilableCondition
where LHS: CompilableValue, RHS: CompilableValue, LHS.Output == RHS.Output {
    func compileCondition(_ compiler: PredicateCompiler) -> CompiledCondition? {
        guard let left = lhs.compileValue(compiler), let right = rhs.compileValue(compiler) else {
            return nil
        }
        if let fast = scalarComparison(left, .notEqual, right) { return fast }
        let (readLeft, readRight) = (left.read, right.read)
        return CompiledCondition(test: { readLeft($0) != readRight($0) })
    }
}

extension PredicateExpressions.Conjunction: CompilableCondition
where LHS: CompilableCondition, RHS: CompilableCondition {
    func compileCondition(_ compiler: PredicateCompiler) -> CompiledCondition? {
        guard let left = lhs.compileCondition(compiler), let right = rhs.compileCondition(compiler)
        else { return nil }
        let (testLeft, testRight) = (left.test, right.test)
        return CompiledCondition(
            test: { testLeft($0) && testRight($0) },
            columns: left.columns.flatMap { l in right.columns.map { .and(l, $0) } }
        )
    }
}

extension PredicateExpressions.Disjunction: CompilableCondition
where LHS: CompilableCondition, RHS: CompilableCondition {
    func compileCondition(_ compiler: PredicateCompiler) -> CompiledCondition? {
        guard let left = lhs.compileCondition(compiler), let right = rhs.compileCondition(compiler)
        else { return nil }
        let (testLeft, testRight) = (left.test, right.test)
        return CompiledCondition(
            test: { testLeft($0) || testRight($0) },
            columns: left.columns.flatMap { l in right.columns.map { .or(l, $0) } }
        )
    }
}

extension PredicateExpressions.Negation: CompilableCondition where Wrapped: CompilableCondition {
    func compileCondition(_ compiler: PredicateCompiler) -> CompiledCondition? {
        guard let inner = wrapped.compileCondition(compiler) else { return nil }
        let test = inner.test
        return CompiledCondition(test: { !test($0) }, columns: inner.columns.map { .not($0) })
    }
}
