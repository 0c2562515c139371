import Foundation

// `$0.title.contains("creme")` and `$0.title.starts(with: "Cr")` in a `#Predicate`: Foundation
// evaluates them character by character on every object, each decoded first, where a text
// match searches the records' bytes (Benchmarks/README.md, workload 3b, compares the two).
// With a string attribute of the input and a constant, they compile to a text match with the
// predicate's own semantics (``TextMatcher/isCharacterwise``).

extension PredicateExpressions.CollectionContainsCollection: CompilableCondition
where Base: CompilableValue, Other: CompilableValue, Base.Output == String, Other.Output == String {
    func compileCondition(_ compiler: PredicateCompiler) -> CompiledCondition? {
        guard let haystack = base.compileValue(compiler), let needle = other.compileValue(compiler)
        else { return nil }
        return compiler.textCondition(haystack, needle, kind: .contains)
    }
}

extension PredicateExpressions.SequenceStartsWith: CompilableCondition
where Base: CompilableValue, Prefix: CompilableValue, Base.Output == String, Prefix.Output == String
{
    func compileCondition(_ compiler: PredicateCompiler) -> CompiledCondition? {
        guard let value = base.compileValue(compiler), let prefix = prefix.compileValue(compiler)
        else { return nil }
        return compiler.textCondition(value, prefix, kind: .prefix)
    }
}

extension PredicateCompiler {
    /// `value.contains(text)` or `value.starts(with: text)`: a text match when `value` is a
    /// string attribute of the input and `text` a constant, else the same call on both values.
    func textCondition(
        _ value: CompiledValue<String>,
        _ text: CompiledValue<String>,
        kind: TextMatchKind
    ) -> CompiledCondition {
        if let index = value.attributeIndex, let constant = text.constant,
            let accessor = entity.accessors[index] as? NativeAttributeAccessor<String>
        {
            let match = CompiledTextMatch(
                accessor: accessor,
                matcher: TextMatcher(text: constant, kind: kind, options: [], characterwise: true),
                entity: entity
            )
            return CompiledCondition(test: match.test, text: match)
        }
        let (readValue, readText) = (value.read, text.read)
        return CompiledCondition(test: { object in
            TextMatcher.characterwiseMatch(readValue(object), readText(object), kind: kind)
        })
    }
}
