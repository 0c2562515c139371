import Foundation

/// A fetch request as a store other than the log can run it: which rows (entities and a
/// ``StoreCondition``), in what order, and which window of them.
///
/// What the store cannot do exactly as the engine does is left to the engine, which then
/// evaluates, sorts or cuts the window itself on the rows the store returns:
///
/// - ``translation``: the predicate and the text match together; when it is not exact the
///   engine evaluates the request's predicate and text match again.
/// - ``sortKeys``: nil when a sort descriptor is not on an attribute the store orders as the
///   engine does; the engine then sorts.
/// - ``appliesWindow``: whether the store may apply the limit and offset, which it can only
///   when it both selects and orders exactly.
///
/// The PostgreSQL store's `SQLSelect` lists the predicate forms a store tests, those it only
/// narrows down, and those the engine evaluates after the fetch.
package struct StoreQuery: Sendable, Hashable {
    /// The requested entity's name.
    package var entity: String
    /// The tags of the entities whose rows qualify: the entity's own and its subentities'
    /// (not abstract ones), or the entity's alone when the request leaves subentities out.
    package var entityTags: [UInt32]
    /// The condition the rows must satisfy.
    package var translation: StoreCondition.Translation
    /// The order of the rows, before their keys (ties are in key order, as the engine orders
    /// them); nil when the store cannot order them as the engine does.
    package var sortKeys: [StoreSortKey]?
    /// The most rows to return, when ``appliesWindow``.
    package var fetchLimit: Int?
    /// How many leading rows to skip, when ``appliesWindow``.
    package var fetchOffset: Int

    /// Whether the store selects and orders exactly as the engine, so that it may apply the
    /// request's limit and offset itself.
    package var appliesWindow: Bool { translation.isExact && sortKeys != nil }

    /// The query of `request`, or nil when `T` is not an entity of `model`.
    package init?<T: ManagedObject>(_ request: FetchRequest<T>, model: ManagedObjectModel) {
        guard let entity = model.entity(for: T.self) else { return nil }
        self.entity = entity.name
        let entities =
            request.includesSubentities
            ? entity.concreteEntities : entity.isAbstract ? [] : [entity]
        entityTags = entities.map(\.tag)
        var bounds = StoreConditionBounds.constant(true)
        if let predicate = request.predicate {
            let translator = StoreConditionTranslator(
                bindings: [predicate.variable.key: .object([], entity)]
            )
            bounds = translator.condition(of: predicate.expression)
        }
        if let textMatch = request.textMatch {
            bounds = bounds && textMatch.storeCondition(for: entity)
        }
        translation = StoreCondition.Translation(bounds)
        var keys: [StoreSortKey]? = []
        for descriptor in request.sortDescriptors {
            guard let key = StoreSortKey(descriptor, entity: entity) else {
                keys = nil
                break
            }
            keys?.append(key)
        }
        sortKeys = keys
        fetchLimit = request.fetchLimit
        fetchOffset = max(0, request.fetchOffset)
    }
}

/// One attribute a store orders rows by.
///
/// In ascending order, as the engine sorts: numbers and dates by value, with NaN after every
/// number; strings by their Unicode scalars after canonical composition (NFC), which is
/// `String`'s `<` and the `.lexical` comparator's order; nil before every value. Descending
/// is the reverse (nil last). Ties are in key order.
package struct StoreSortKey: Sendable, Hashable {
    /// The attribute.
    package var attribute: StoreAttribute
    /// Whether smaller values come first.
    package var ascending: Bool

    /// Creates a sort key.
    package init(attribute: StoreAttribute, ascending: Bool) {
        self.attribute = attribute
        self.ascending = ascending
    }

    /// The key of `descriptor`, or nil when a store cannot order as the engine does by it: a
    /// key path that is not an attribute of a number, date or string; an optional number or
    /// date (Foundation orders NaN with nothing there, so the engine's order is not a store's);
    /// a string compared other than by `<`.
    init?<T>(_ descriptor: SortDescriptor<T>, entity: EntityDescription) {
        guard let keyPath = descriptor.keyPath,
            let accessor = entity.attributeAccessor(for: keyPath),
            let attribute = accessor.attribute,
            attribute.type.isOrderedByStores
        else { return nil }
        if attribute.type == .string {
            if var comparator = descriptor.stringComparator {
                comparator.order = .forward
                guard comparator == .lexical else { return nil }
            }
        } else if attribute.isOptional, [.float, .double, .date].contains(attribute.type) {
            return nil
        }
        self.attribute = StoreAttribute(
            entity: entity.name,
            name: accessor.name,
            index: accessor.index,
            type: attribute.type,
            isOptional: attribute.isOptional
        )
        ascending = descriptor.order == .forward
    }
}
