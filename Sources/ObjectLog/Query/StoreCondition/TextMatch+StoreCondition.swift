extension TextMatch {
    /// The search as bounds of a condition on the rows of `entity`: each leaf is decided on
    /// ASCII values (see ``StoreTextSearch``) and left to the engine on others; a combined
    /// predicate is translated as any predicate is.
    func storeCondition(for entity: EntityDescription) -> StoreConditionBounds {
        Self.storeCondition(node, entity: entity)
    }

    private static func storeCondition(
        _ node: Node,
        entity: EntityDescription
    ) -> StoreConditionBounds {
        switch node {
        case .leaf(let leaf):
            let accessor = entity.attributeAccessor(for: leaf.keyPath)
            guard
                accessor is NativeAttributeAccessor<String>
                    || accessor is NativeAttributeAccessor<String?>,
                let accessor, let attribute = accessor.attribute
            else { return .unknown }
            let reference = StoreAttribute(
                entity: entity.name,
                name: accessor.name,
                index: accessor.index,
                type: attribute.type,
                isOptional: attribute.isOptional
            )
            let kind: StoreTextSearch.Kind =
                switch leaf.kind {
                case .contains: .contains
                case .prefix: .prefix
                case .equals: .equals
                }
            return StoreConditionTranslator.textSearch(
                reference,
                leaf.text,
                kind: kind,
                ignoresCase: leaf.options.contains(.caseInsensitive),
                characterwise: false
            )
        case .all(let nodes):
            return nodes.map { storeCondition($0, entity: entity) }
                .reduce(StoreConditionBounds.constant(true), &&)
        case .any(let nodes):
            return nodes.map { storeCondition($0, entity: entity) }
                .reduce(StoreConditionBounds.constant(false), ||)
        case .not(let node):
            return !storeCondition(node, entity: entity)
        case .predicate(let predicate):
            let translator = StoreConditionTranslator(
                bindings: [predicate.variable.key: .object([], entity)]
            )
            return translator.condition(of: predicate.expression)
        }
    }
}
