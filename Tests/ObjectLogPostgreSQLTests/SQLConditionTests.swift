import Foundation
import ObjectLog
import StoreTestSupport
import Testing

@testable import ObjectLogPostgreSQL

/// The SQL each predicate form becomes, and its parameters, without a server.
@Suite("SQL of translated predicates")
struct SQLConditionTests {
    typealias Item = Catalog.Item

    let model: ManagedObjectModel
    let mapping: SchemaMapping

    init() throws {
        (model, mapping) = try Catalog.model()
    }

    /// The `WHERE` condition of a predicate on items, its parameters, and whether it is exact.
    func sql<T: ManagedObject>(
        _ predicate: Predicate<T>
    ) throws -> (text: String, parameters: [String?], isExact: Bool) {
        let entity = try #require(model.entity(for: T.self))
        let translation = StoreCondition.translate(predicate, entity: entity)
        let condition = try SQLCondition(
            translation.condition,
            entity: entity.name,
            schema: model.schema,
            mapping: mapping
        )
        return (condition.text, condition.parameters, translation.isExact && condition.isExact)
    }

    @Test("comparisons of numbers take their value as a parameter cast to the column's type")
    func numbers() throws {
        let count = try sql(#Predicate<Item> { $0.count > 3 })
        #expect(count.text == #"t0."count" > $1::bigint"#)
        #expect(count.parameters == ["3"])
        #expect(count.isExact)

        let least = Int8.min
        let big = try sql(
            #Predicate<Item> { $0.big <= 18_446_744_073_709_551_615 && $0.tiny == least }
        )
        #expect(
            big.text
                == #"(t0."big" <= $1::numeric(20, 0) AND t0."tiny" = $2::smallint)"#
        )
        #expect(big.parameters == ["18446744073709551615", "-128"])

        // A negative literal is a constant too.
        #expect(try sql(#Predicate<Item> { $0.count >= -2 }).parameters == ["-2"])
    }

    @Test("floating-point values keep NaN out of > and >=, and a NaN constant matches nothing")
    func floatingPoint() throws {
        let greater = try sql(#Predicate<Item> { $0.price > 2.5 })
        #expect(greater.text == #"(t0."price" > $1::double precision AND t0."price" <> 'NaN')"#)
        #expect(greater.parameters == ["2.5"])
        let less = try sql(#Predicate<Item> { $0.weight < 0.1 })
        #expect(less.text == #"t0."weight" < $1::real"#)
        #expect(less.parameters == ["0.1"])
        let nan = Double.nan
        #expect(try sql(#Predicate<Item> { $0.price == nan }).text == "FALSE")
        #expect(try sql(#Predicate<Item> { $0.price != nan }).text == "TRUE")
        // A date's <= is Comparable's !(>), true for a NaN date.
        let date = Date(timeIntervalSinceReferenceDate: 10)
        let atMost = try sql(#Predicate<Item> { $0.added <= date })
        #expect(
            atMost.text
                == #"NOT ((t0."added" > $1::double precision AND t0."added" <> 'NaN'))"#
        )
        #expect(atMost.parameters == ["10.0"])
    }

    @Test("strings compare after canonical composition in the C collation")
    func strings() throws {
        let equal = try sql(#Predicate<Item> { $0.name == "é" })
        #expect(
            equal.text == #"normalize(t0."name", NFC) COLLATE "C" = normalize($1::text, NFC)"#
        )
        #expect(equal.parameters == ["é"])
        let less = try sql(#Predicate<Item> { $0.name < "b" })
        #expect(
            less.text == #"normalize(t0."name", NFC) COLLATE "C" < normalize($1::text, NFC)"#
        )
    }

    @Test("optionals: == nil is IS NULL, != is true for nil, comparisons never NULL")
    func optionals() throws {
        let isNil = try sql(#Predicate<Item> { $0.note == nil })
        #expect(isNil.text == #"t0."note" IS NULL"#)
        #expect(isNil.parameters.isEmpty)
        let notEqual = try sql(#Predicate<Item> { $0.rank != 3 })
        #expect(notEqual.text == #"NOT ((t0."rank" IS NOT NULL AND t0."rank" = $1::bigint))"#)
        #expect(notEqual.parameters == ["3"])
        let coalesced = try sql(#Predicate<Item> { ($0.rank ?? 0) < 2 })
        #expect(
            coalesced.text
                == #"((NOT (t0."rank" IS NULL) AND (t0."rank" IS NOT NULL AND t0."rank" < $1::bigint)) OR t0."rank" IS NULL)"#
        )
        #expect(coalesced.isExact)
    }

    @Test("Booleans, UUIDs and data compare for equality")
    func equalities() throws {
        let flag = try sql(#Predicate<Item> { $0.isActive })
        #expect(flag.text == #"t0."isActive" = $1::boolean"#)
        #expect(flag.parameters == ["t"])
        let uuid = UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))
        let code = try sql(#Predicate<Item> { $0.code == uuid })
        #expect(code.text == #"t0."code" = $1::uuid"#)
        #expect(code.parameters == ["01020304-0506-0708-090a-0b0c0d0e0f10"])
        let bytes = Data([0, 255])
        let data = try sql(#Predicate<Item> { $0.bytes == bytes })
        #expect(data.text == #"t0."bytes" = $1::bytea"#)
        #expect(data.parameters == [#"\x00ff"#])
    }

    @Test("contains and starts(with:) are decided on ASCII values, others left to the engine")
    func text() throws {
        let plain =
            #"(t0."name" IS NOT NULL AND octet_length(t0."name") = char_length(t0."name") AND strpos(t0."name", chr(13)) = 0)"#
        let contains = try sql(#Predicate<Item> { $0.name.contains("a%_\\") })
        #expect(
            contains.text
                == "((\(plain) AND strpos((t0.\"name\" COLLATE \"C\"), $1::text) > 0) OR NOT (\(plain)))"
        )
        #expect(contains.parameters == ["a%_\\"])
        #expect(!contains.isExact)
        let prefix = try sql(#Predicate<Item> { !$0.name.starts(with: "Ab") })
        #expect(
            prefix.text
                == "NOT ((\(plain) AND starts_with((t0.\"name\" COLLATE \"C\"), $1::text)))"
        )
        // Non-ASCII text may match ASCII values (the Kelvin sign is a K): not translated.
        #expect(try sql(#Predicate<Item> { $0.name.contains("\u{212A}") }).text == "TRUE")
    }

    @Test("a TextMatch that ignores case folds ASCII letters alone, on both sides")
    func caseInsensitiveTextMatch() throws {
        var request = FetchRequest<Item>()
        request.textMatch = .contains(\.note, "AbC", options: .caseInsensitive)
        let select = try Catalog.select(request, model, mapping)
        let plain =
            #"(t0."note" IS NOT NULL AND octet_length(t0."note") = char_length(t0."note"))"#
        #expect(
            select.text
                == #"SELECT t0."objectlog_key" FROM "Item" AS t0 WHERE "#
                + "((\(plain) AND strpos(lower(t0.\"note\" COLLATE \"C\"), $1::text) > 0) OR "
                + "(NOT (t0.\"note\" IS NULL) AND NOT (\(plain)))) "
                + #"ORDER BY t0."objectlog_key" ASC"#
        )
        #expect(select.parameters == ["abc"])
        #expect(!select.isExact)
    }

    @Test("to-one relationships: a key column, and EXISTS on the destination for its values")
    func toOne() throws {
        let noOwner = try sql(#Predicate<Item> { $0.owner == nil })
        #expect(noOwner.text == #"NOT (t0."owner" IS NOT NULL)"#)
        let ownerName = try sql(#Predicate<Item> { $0.owner?.name == "o" })
        #expect(
            ownerName.text
                == #"EXISTS (SELECT 1 FROM "Owner" AS t1 WHERE t1."objectlog_key" = t0."owner" AND normalize(t1."name", NFC) COLLATE "C" = normalize($1::text, NFC))"#
        )
        #expect(ownerName.parameters == ["o"])
        let chain = try sql(#Predicate<Item> { $0.owner?.manager?.rating == 5 })
        #expect(
            chain.text
                == #"EXISTS (SELECT 1 FROM "Owner" AS t1 WHERE t1."objectlog_key" = t0."owner" AND EXISTS (SELECT 1 FROM "Owner" AS t2 WHERE t2."objectlog_key" = t1."manager" AND t2."rating" = $1::integer))"#
        )
        #expect(chain.isExact)
    }

    @Test("to-many relationships: counts and contains(where:) through the join table")
    func joinTable() throws {
        let count = try sql(#Predicate<Item> { $0.tags.count >= 2 })
        #expect(
            count.text
                == #"(SELECT count(*) FROM "Item_tags" AS t1 WHERE t1."source" = t0."objectlog_key") >= $1::bigint"#
        )
        #expect(count.parameters == ["2"])
        let empty = try sql(#Predicate<Item> { $0.tags.isEmpty })
        #expect(empty.text.hasSuffix(#"= $1::bigint"#))
        #expect(empty.parameters == ["0"])
        let label = try sql(#Predicate<Item> { $0.tags.contains { $0.label == "red" } })
        #expect(
            label.text
                == #"EXISTS (SELECT 1 FROM "Item_tags" AS j1 JOIN "Tag" AS t2 ON t2."objectlog_key" = j1."destination" WHERE j1."source" = t0."objectlog_key" AND normalize(t2."label", NFC) COLLATE "C" = normalize($1::text, NFC))"#
        )
        // From the other side, the same join table with its columns the other way round.
        let items = try sql(#Predicate<Catalog.Tag> { $0.items.count > 1 })
        #expect(
            items.text
                == #"(SELECT count(*) FROM "Item_tags" AS t1 WHERE t1."destination" = t0."objectlog_key") > $1::bigint"#
        )
    }

    @Test("to-many relationships whose inverse is to-one: through the inverse's column")
    func inverseColumn() throws {
        let all = try sql(#Predicate<Catalog.Owner> { $0.items.allSatisfy { $0.count > 1 } })
        #expect(
            all.text
                == #"NOT (EXISTS (SELECT 1 FROM "Item" AS t1 WHERE t1."owner" = t0."objectlog_key" AND NOT (t1."count" > $1::bigint)))"#
        )
        let count = try sql(#Predicate<Catalog.Owner> { $0.items.count == 0 })
        #expect(
            count.text
                == #"(SELECT count(*) FROM "Item" AS t1 WHERE t1."owner" = t0."objectlog_key") = $1::bigint"#
        )
    }

    /// The tag of an entity's rows.
    func tag(_ type: ManagedObject.Type) throws -> UInt32 {
        try #require(model.entity(for: type)).tag
    }

    @Test("an object ID is its key and its exact entity")
    func objectIDs() throws {
        let id = ObjectID(entityName: "Tag", key: 7)
        // A tag has no subentities: its key says it all, and the join table holds it.
        let tagged = try sql(#Predicate<Item> { $0.tags.contains { $0.objectID == id } })
        #expect(
            tagged.text
                == #"EXISTS (SELECT 1 FROM "Item_tags" AS j1 WHERE j1."source" = t0."objectlog_key" AND j1."destination" = $1::bigint)"#
        )
        #expect(tagged.parameters == ["7"])
        let owner = ObjectID(entityName: "Owner", key: 5)
        let owned = try sql(#Predicate<Item> { $0.owner?.objectID == owner })
        #expect(owned.text == #"(t0."owner" IS NOT NULL AND t0."owner" = $1::bigint)"#)
        #expect(owned.parameters == ["5"])
        // An item may be a gadget, whose ID names its own entity.
        let gadget = ObjectID(entityName: "Gadget", key: 9)
        let own = try sql(#Predicate<Item> { $0.objectID == gadget })
        // A tag's ID names no item.
        #expect(try sql(#Predicate<Item> { $0.objectID == id }).text == "FALSE")
        #expect(
            own.text
                == #"(t0."objectlog_key" = $1::bigint AND t0."objectlog_entity" = "#
                + "\(try tag(Catalog.Gadget.self)))"
        )
        let ids = [id, gadget]
        let listed = try sql(#Predicate<Item> { ids.contains($0.objectID) })
        #expect(
            listed.text
                == #"(t0."objectlog_key" = $1::bigint AND t0."objectlog_entity" = "#
                + "\(try tag(Catalog.Gadget.self)))"
        )
        #expect(listed.parameters == ["9"])
        let temporary = ObjectID(entityName: "Item", key: 0)
        #expect(try sql(#Predicate<Item> { $0.objectID == temporary }).text == "FALSE")
    }

    @Test("lists, ranges and the ternary become ORs and ANDs of comparisons")
    func listsRangesTernaries() throws {
        let list = try sql(#Predicate<Item> { ["a", "b"].contains($0.name) })
        #expect(list.text.components(separatedBy: " OR ").count == 2)
        #expect(list.parameters == ["a", "b"])
        let range = try sql(#Predicate<Item> { (1...4).contains($0.count) })
        #expect(range.text == #"(t0."count" >= $1::bigint AND t0."count" <= $2::bigint)"#)
        #expect(range.parameters == ["1", "4"])
        let halfOpen = try sql(#Predicate<Item> { (1..<4).contains($0.count) })
        #expect(halfOpen.text == #"(t0."count" >= $1::bigint AND t0."count" < $2::bigint)"#)
        let ternary = try sql(#Predicate<Item> { $0.count > 2 ? $0.isActive : $0.tiny == 1 })
        #expect(
            ternary.text
                == #"((t0."count" > $1::bigint AND t0."isActive" = $2::boolean) OR (NOT (t0."count" > $3::bigint) AND t0."tiny" = $4::smallint))"#
        )
        #expect(ternary.isExact)
    }

    @Test("what does not translate is left to the engine, keeping the part that does")
    func partialTranslations() throws {
        let and = try sql(#Predicate<Item> { $0.doubled > 3 && $0.isActive })
        #expect(and.text == #"t0."isActive" = $1::boolean"#)
        #expect(!and.isExact)
        let notOr = try sql(#Predicate<Item> { !($0.doubled > 3 || $0.isActive) })
        #expect(notOr.text == #"NOT (t0."isActive" = $1::boolean)"#)
        #expect(!notOr.isExact)
        // Under || an untranslated part leaves every row to the engine.
        let or = try sql(#Predicate<Item> { $0.count * 2 > 3 || $0.isActive })
        #expect(or.text == "TRUE")
        #expect(!or.isExact)
        // URLs compare as URLs, not as their text; a string's count is in characters.
        let url = URL(string: "https://example.com/a")!
        #expect(try sql(#Predicate<Item> { $0.link == url }).text == "TRUE")
        #expect(try sql(#Predicate<Item> { $0.name.count > 2 }).text == "TRUE")
        let uuid = UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))
        #expect(try sql(#Predicate<Item> { $0.code < uuid }).text == "TRUE")
    }

    @Test("text that holds a NUL character, which no row holds, widens its comparison")
    func nulCharacter() throws {
        let equal = try sql(#Predicate<Item> { $0.name == "a\u{0}b" })
        #expect(equal.text == "TRUE")
        #expect(!equal.isExact)
        let negated = try sql(#Predicate<Item> { !($0.name == "a\u{0}b") && $0.count > 1 })
        #expect(negated.text == #"(NOT (FALSE) AND t0."count" > $1::bigint)"#)
        #expect(negated.parameters == ["1"])
    }

    @Test("a fetch that would need more parameters than PostgreSQL takes is refused")
    func parameterLimit() throws {
        var query = try #require(StoreQuery(FetchRequest<Item>(), model: model))
        let attribute = StoreAttribute(
            entity: "Item",
            name: "count",
            index: 1,
            type: .int64,
            isOptional: false
        )
        query.translation.condition = .or(
            (0...SQLSelect.parameterLimit).map { .comparison(attribute, .equal, .int(Int64($0))) }
        )
        let error = #expect(throws: PostgresError.self) {
            try SQLSelect(query, schema: model.schema, mapping: mapping)
        }
        #expect(error?.code == .invalidParameter)
        #expect(error?.message.contains("65536 parameters") == true)
    }

    @Test("a fetch: entities, order with the engine's nil and key order, window as parameters")
    func select() throws {
        var request = FetchRequest<Item>(
            predicate: #Predicate { $0.count > 0 },
            sortBy: [SortDescriptor(\.name), SortDescriptor(\.rank, order: .reverse)],
            fetchLimit: 10,
            fetchOffset: 20
        )
        let select = try Catalog.select(request, model, mapping)
        #expect(
            select.text
                == #"SELECT t0."objectlog_key" FROM "Item" AS t0 WHERE t0."count" > $1::bigint "#
                + #"ORDER BY normalize(t0."name", NFC) COLLATE "C" ASC NULLS FIRST, "#
                + #"t0."rank" DESC NULLS LAST, t0."objectlog_key" ASC LIMIT $2::bigint "#
                + #"OFFSET $3::bigint"#
        )
        #expect(select.parameters == ["0", "10", "20"])
        #expect(select.isExact && select.isOrdered && select.appliesWindow)

        // Items alone, not gadgets; gadgets alone.
        request.includesSubentities = false
        #expect(
            try Catalog.select(request, model, mapping).text.contains(
                #"WHERE t0."objectlog_entity" IN ("# + "\(try tag(Item.self))"
                    + #") AND t0."count" > $1::bigint"#
            )
        )
        let gadgets = try #require(
            StoreQuery(
                FetchRequest<Catalog.Gadget>(predicate: #Predicate { $0.voltage < 1 }),
                model: model
            )
        )
        #expect(
            try SQLSelect(gadgets, schema: model.schema, mapping: mapping, columns: ["voltage"])
                .text
                == #"SELECT t0."voltage" FROM "Item" AS t0 WHERE t0."objectlog_entity" IN ("#
                + "\(try tag(Catalog.Gadget.self))) AND "
                + #"(t0."voltage" IS NOT NULL AND t0."voltage" < $1::double precision) "#
                + #"ORDER BY t0."objectlog_key" ASC"#
        )

        // A sort the store cannot make leaves the order and the window to the engine.
        request.sortDescriptors = [SortDescriptor(\.doubled)]
        let unordered = try Catalog.select(request, model, mapping)
        #expect(!unordered.isOrdered && !unordered.appliesWindow)
        #expect(!unordered.text.contains("ORDER BY") && !unordered.text.contains("LIMIT"))
        // So does a predicate that is not exact.
        request.sortDescriptors = [SortDescriptor(\.count)]
        request.predicate = #Predicate { $0.doubled > 1 }
        let partial = try Catalog.select(request, model, mapping)
        #expect(partial.isOrdered && !partial.appliesWindow)
        #expect(!partial.text.contains("LIMIT"))
    }
}
