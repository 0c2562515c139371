import Foundation

/// Turns common predicates into closures that read attribute storage directly.
///
/// Foundation's `Predicate.evaluate` walks the expression tree generically for every object,
/// which costs far more than the comparison itself. Comparisons (`<`, `<=`, `>`, `>=`, `==`,
/// `!=`) between an entity's own attributes and constant values, combined with `&&`, `||` and
/// `!`, are compiled here; any other predicate (string methods, relationships, arithmetic)
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

    /// The compiled predicate and which properties (by payload index) it reads.
    ///
    /// `nil` if part of it is not compilable. A compiled predicate reads nothing else of its
    /// object.
    static func compileWithReads<T: ManagedObject>(
        _ predicate: Predicate<T>,
        entity: EntityDescription
    ) -> (condition: (ManagedObject) -> Bool, reads: [Bool])? {
        let compiler = PredicateCompiler(entity: entity, variable: predicate.variable.key)
        guard let expression = predicate.expression as? any CompilableCondition,
            let condition = expression.compileCondition(compiler)
        else { return nil }
        var reads = [Bool](repeating: false, count: entity.accessors.count)
        for index in compiler.reads.indices where reads.indices.contains(index) {
            reads[index] = true
        }
        return (condition, reads)
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
    func compileCondition(_ compiler: PredicateCompiler) -> ((ManagedObject) -> Bool)?
}

/// A value expression that can be compiled.
protocol CompilableValue<Output> {
    associatedtype Output
    func compileValue(_ compiler: PredicateCompiler) -> ((ManagedObject) -> Output)?
}

extension PredicateExpressions.Value: CompilableValue {
    func compileValue(_ compiler: PredicateCompiler) -> ((ManagedObject) -> Output)? {
        let constant = value
        return { _ in constant }
    }
}

extension PredicateExpressions.NilLiteral: CompilableValue {
    func compileValue(_ compiler: PredicateCompiler) -> ((ManagedObject) -> Output)? {
        { _ in nil }
    }
}

extension PredicateExpressions.KeyPath: CompilableValue {
    func compileValue(_ compiler: PredicateCompiler) -> ((ManagedObject) -> Output)? {
        guard let variable = root as? any VariableExpression,
            variable.variableID == compiler.variable
        else { return nil }
        func make<V: AttributeValue>(_: V.Type) -> ((ManagedObject) -> Output)? {
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
            return unsafeBitCast(read, to: ((ManagedObject) -> Output).self)
        }
        guard let native = Output.self as? any AttributeValue.Type else { return nil }
        return make(native)
    }
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
    func compileCondition(_ compiler: PredicateCompiler) -> ((ManagedObject) -> Bool)? {
        guard let left = lhs.compileValue(compiler), let right = rhs.compileValue(compiler) else {
            return nil
        }
        switch op {
        case .lessThan: return { left($0) < right($0) }
        case .lessThanOrEqual: return { left($0) <= right($0) }
        case .greaterThan: return { left($0) > right($0) }
        case .greaterThanOrEqual: return { left($0) >= right($0) }
        @unknown default: return nil
        }
    }
}

extension PredicateExpressions.Equal: CompilableCondition
where LHS: CompilableValue, RHS: CompilableValue, LHS.Output == RHS.Output {
    func compileCondition(_ compiler: PredicateCompiler) -> ((ManagedObject) -> Bool)? {
        guard let left = lhs.compileValue(compiler), let right = rhs.compileValue(compiler) else {
            return nil
        }
        return { left($0) == right($0) }
    }
}

extension PredicateExpressions.NotEqual: CompilableCondition
where LHS: CompilableValue, RHS: CompilableValue, LHS.Output == RHS.Output {
    func compileCondition(_ compiler: PredicateCompiler) -> ((ManagedObject) -> Bool)? {
        guard let left = lhs.compileValue(compiler), let right = rhs.compileValue(compiler) else {
            return nil
        }
        return { left($0) != right($0) }
    }
}

extension PredicateExpressions.Conjunction: CompilableCondition
where LHS: CompilableCondition, RHS: CompilableCondition {
    func compileCondition(_ compiler: PredicateCompiler) -> ((ManagedObject) -> Bool)? {
        guard let left = lhs.compileCondition(compiler), let right = rhs.compileCondition(compiler)
        else { return nil }
        return { left($0) && right($0) }
    }
}

extension PredicateExpressions.Disjunction: CompilableCondition
where LHS: CompilableCondition, RHS: CompilableCondition {
    func compileCondition(_ compiler: PredicateCompiler) -> ((ManagedObject) -> Bool)? {
        guard let left = lhs.compileCondition(compiler), let right = rhs.compileCondition(compiler)
        else { return nil }
        return { left($0) || right($0) }
    }
}

extension PredicateExpressions.Negation: CompilableCondition where Wrapped: CompilableCondition {
    func compileCondition(_ compiler: PredicateCompiler) -> ((ManagedObject) -> Bool)? {
        guard let inner = wrapped.compileCondition(compiler) else { return nil }
        return { !inner($0) }
    }
}
