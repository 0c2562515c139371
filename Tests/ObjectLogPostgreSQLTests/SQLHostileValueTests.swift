import Foundation
import ObjectLog
import StoreTestSupport
import Testing

@testable import ObjectLog
@testable import ObjectLogPostgreSQL

/// Values that would change a statement if they were spliced into its text travel only as
/// parameters, and come back unchanged.
@Suite("Hostile values in translated predicates")
struct SQLHostileValueTests {
    typealias Item = Catalog.Item

    /// Quotes, backslashes, comments, LIKE's wildcards, placeholders, dollar quotes, line
    /// breaks, Unicode that reorders or joins, and a long run of quotes (no NUL: PostgreSQL's
    /// text cannot hold one).
    static let hostile: [String] = [
        "'", "''", "\\", "\\'", "'; DROP TABLE x; --", "\"; DROP TABLE \"Item\"; --", "%", "_",
        "%_\\", "a%b_c", "$1", "$$", "$1::text", ")", "') OR TRUE --", "E'\\n'",
        "line\nbreak\r\n", "tab\there", "/* comment */", "Ünïcödé", "😀👩‍👩‍👧‍👦", "שלום",
        "\u{202E}reversed", "zero\u{200D}width", "e\u{301}", "\u{212A}", "ß", "NaN", "NULL",
        "1; SELECT pg_sleep(10)", "", String(repeating: "x'", count: 5000),
    ]

    /// Fetches that carry `value` in every form a translation sends a string.
    static func requests(_ value: String) -> [(String, FetchRequest<Item>)] {
        var textMatch = FetchRequest<Item>()
        textMatch.textMatch = .contains(\.name, value) || .equals(\.note, value)
        return [
            ("==", FetchRequest(predicate: #Predicate { $0.name == value })),
            ("<", FetchRequest(predicate: #Predicate { $0.name < value })),
            ("!= on an optional", FetchRequest(predicate: #Predicate { $0.note != value })),
            ("contains", FetchRequest(predicate: #Predicate { $0.name.contains(value) })),
            ("starts(with:)", FetchRequest(predicate: #Predicate { !$0.name.starts(with: value) })),
            ("owner's name", FetchRequest(predicate: #Predicate { $0.owner?.name == value })),
            (
                "a tag's label",
                FetchRequest(predicate: #Predicate { $0.tags.contains { $0.label >= value } })
            ),
            ("list", FetchRequest(predicate: #Predicate { [value, "b"].contains($0.name) })),
            ("text match", textMatch),
        ]
    }

    @Test("a statement's text is the same whatever the value; the value is a parameter")
    func valuesAreParameters() throws {
        let (model, mapping) = try Catalog.model()
        for value in Self.hostile {
            // A value of the same kind (ASCII or not), so that the same forms translate.
            let plain = value.utf8.allSatisfy { $0 < 0x80 } ? "x" : "é"
            for ((form, request), (_, plainRequest)) in zip(
                Self.requests(value),
                Self.requests(plain)
            ) {
                let select = try Catalog.select(request, model, mapping)
                let reference = try Catalog.select(plainRequest, model, mapping)
                let context = "\(form) of \(String(reflecting: value.prefix(40)))"
                #expect(select.text == reference.text, "\(context)")
                for word in ["DROP", "pg_sleep", "OR TRUE", "comment", "reversed"] {
                    #expect(!select.text.contains(word), "\(context)")
                }
                #expect(select.parameters.count == reference.parameters.count, "\(context)")
                if select.text != "TRUE", !reference.parameters.isEmpty {
                    #expect(
                        select.parameters.contains(value)
                            || select.parameters.contains(value.lowercased()),
                        "\(context)"
                    )
                }
            }
        }
    }

    @Test(
        "hostile values select on the server what the engine selects, and come back unchanged",
        .enabled(if: TestServer.runs, TestServer.skipReason)
    )
    func onTheServer() throws {
        let fixture = try CatalogFixture(
            seed: 3,
            itemCount: Self.hostile.count * 2,
            names: Self.hostile
        )
        defer { fixture.close() }
        // A table the values name, which must outlive them.
        try fixture.connection.execute("CREATE TABLE x (id integer)")
        let entity = try #require(fixture.model.entity(for: Item.self))
        for value in Self.hostile {
            for (form, request) in Self.requests(value) {
                var truth = try fixture.items.filter { item in
                    try request.predicate?.evaluate(item) ?? true
                }
                if let match = request.textMatch {
                    let condition = try match.condition(for: entity)
                    truth = try truth.filter { try condition($0) }
                }
                let select = try Catalog.select(request, fixture.model, fixture.mapping)
                let rows = Set(try fixture.keys(select))
                let keys = Set(truth.map(\.objectID.key))
                let context = "\(form) of \(String(reflecting: value.prefix(40)))"
                if select.isExact {
                    #expect(rows == keys, "\(context)")
                } else {
                    #expect(rows.isSuperset(of: keys), "\(context)")
                }
            }
        }
        // Every name reads back as it was written, and nothing was dropped.
        let stored = try fixture.connection.execute(
            "SELECT objectlog_key, name FROM \"Item\""
        ).rows
        let names = Dictionary(
            uniqueKeysWithValues: fixture.items.map { ($0.objectID.key, $0.name) }
        )
        #expect(stored.count == fixture.items.count)
        for row in stored {
            let key = try #require(row[0].flatMap { ObjectKey($0) })
            #expect(row[1].map { Array($0.utf8) } == names[key].map { Array($0.utf8) })
        }
        let tables = try fixture.connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1",
            [fixture.schemaName]
        )
        // Item, Owner, Tag, the two join tables and x.
        #expect(tables.rows == [["6"]])
    }
}
