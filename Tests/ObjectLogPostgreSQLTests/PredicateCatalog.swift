import Foundation
import ObjectLog
import StoreTestSupport
import Testing

@testable import ObjectLogPostgreSQL

/// The model of the predicate translation's tests: every attribute type a store compares, an
/// optional of each kind, a subentity, and each way a relationship lies in the tables (a
/// to-one key column, a to-many through its inverse's column, a many-to-many join table).
enum Catalog {
    final class Owner: ManagedObject {
        @Attribute var name = ""
        @Attribute var rating: Int32 = 0
        @Attribute var nickname: String?
        @Relationship(inverse: \Item.owner) var items: Set<Item>
        @Relationship var manager: Owner?
    }

    class Item: ManagedObject {
        @Attribute var name = ""
        @Attribute var count = 0
        @Attribute var price = 0.0
        @Attribute var weight: Float = 0
        @Attribute var note: String?
        @Attribute var rank: Int?
        @Attribute var isActive = false
        @Attribute var added = Date(timeIntervalSinceReferenceDate: 0)
        @Attribute var code = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        @Attribute var big: UInt64 = 0
        @Attribute var tiny: Int8 = 0
        @Attribute var bytes = Data()
        @Attribute var link = URL(string: "https://example.com")!
        @Relationship var owner: Owner?
        @Relationship(inverse: \Tag.items) var tags: Set<Tag>

        /// Not an attribute: twice the count.
        var doubled: Int { count * 2 }
    }

    final class Gadget: Item {
        @Attribute var voltage = 0.0
    }

    final class Tag: ManagedObject {
        @Attribute var label = ""
        @Relationship var items: Set<Item>
    }

    static let entities: [ManagedObject.Type] = [Owner.self, Item.self, Gadget.self, Tag.self]

    /// A model of the catalog's entities, its schema and its PostgreSQL mapping.
    static func model() throws -> (ManagedObjectModel, SchemaMapping) {
        let model = try ManagedObjectModel(entities)
        return (model, try SchemaMapping(model.schema))
    }

    /// The `SELECT` of a fetch of items.
    static func select(
        _ request: FetchRequest<Item>,
        _ model: ManagedObjectModel,
        _ mapping: SchemaMapping,
        columns: [String]? = ["objectlog_key"]
    ) throws -> SQLSelect {
        let query = try #require(StoreQuery(request, model: model))
        return try SQLSelect(query, schema: model.schema, mapping: mapping, columns: columns)
    }
}
