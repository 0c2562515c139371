import Foundation

// Text matches combined with each other and with predicates: Core Data's
// `title CONTAINS[c] $x OR notes CONTAINS[c] $x`, which `#Predicate` on Linux cannot say.

extension TextMatch {
    /// Objects that every one of `matches` selects (all of them, for none).
    public static func all(_ matches: [TextMatch]) -> TextMatch {
        TextMatch(node: .all(matches.map(\.node)))
    }

    /// Objects that any of `matches` selects (none, for none).
    ///
    /// ```swift
    /// request.textMatch = .any([.contains(\.title, "spot"), .contains(\.notes, "spot")])
    /// ```
    public static func any(_ matches: [TextMatch]) -> TextMatch {
        TextMatch(node: .any(matches.map(\.node)))
    }

    /// Objects that a predicate selects, to combine with text matches: `.contains(\.title,
    /// "spot") || .matching(#Predicate { $0.isFavorite })`.
    public static func matching(_ predicate: Predicate<Root>) -> TextMatch {
        TextMatch(node: .predicate(predicate))
    }

    /// Objects that both select.
    public static func && (lhs: TextMatch, rhs: TextMatch) -> TextMatch { .all([lhs, rhs]) }

    /// Objects that either selects.
    public static func || (lhs: TextMatch, rhs: TextMatch) -> TextMatch { .any([lhs, rhs]) }

    /// Objects that `match` does not select.
    public static prefix func ! (match: TextMatch) -> TextMatch {
        TextMatch(node: .not(match.node))
    }

    /// The match as a condition on loaded objects of `entity`, whatever it combines: for a
    /// scan that decodes each record and evaluates it (``compile(for:)`` runs one search of
    /// a `String` on the stored bytes instead).
    /// - Throws: ``ObjectLogError/Code/invalidArgument`` for a key path that is not a string
    ///   attribute of the entity.
    func condition(
        for entity: EntityDescription
    ) throws(ObjectLogError) -> (ManagedObject) throws -> Bool {
        try Self.condition(node, entity: entity)
    }

    private static func condition(
        _ node: Node,
        entity: EntityDescription
    ) throws(ObjectLogError) -> (ManagedObject) throws -> Bool {
        switch node {
        case .leaf(let leaf):
            let matcher = TextMatcher(text: leaf.text, kind: leaf.kind, options: leaf.options)
            let accessor = entity.attributeAccessor(for: leaf.keyPath)
            if let strings = accessor as? NativeAttributeAccessor<String> {
                return { object in
                    if object.isFault { object.fireFault() }
                    return matcher.matches(strings.storedValue(of: object))
                }
            }
            if let optionals = accessor as? NativeAttributeAccessor<String?> {
                return { object in
                    if object.isFault { object.fireFault() }
                    return optionals.storedValue(of: object).map(matcher.matches) ?? false
                }
            }
            throw ObjectLogError(
                .invalidArgument,
                "the text match's key path is not a String attribute of \(entity.name)"
            )
        case .all(let nodes):
            var conditions: [(ManagedObject) throws -> Bool] = []
            for node in nodes { conditions.append(try condition(node, entity: entity)) }
            return { object in try conditions.allSatisfy { try $0(object) } }
        case .any(let nodes):
            var conditions: [(ManagedObject) throws -> Bool] = []
            for node in nodes { conditions.append(try condition(node, entity: entity)) }
            return { object in try conditions.contains { try $0(object) } }
        case .not(let node):
            let inner = try condition(node, entity: entity)
            return { object in try !inner(object) }
        case .predicate(let predicate):
            if let compiled = PredicateCompiler.compile(predicate, entity: entity) {
                return compiled
            }
            return { object in
                // Safe: the scan only passes objects of `entity`, whose class is `Root`.
                try predicate.evaluate(unsafeDowncast(object, to: Root.self))
            }
        }
    }
}
