import CommandLineKit
import Foundation
import Testing

@Suite("JSON values and their rendering")
struct JSONValueTests {
    @Test("JSON output keeps key order, escapes strings and marks doubles as such")
    func json() throws {
        let value = JSONValue.object([
            ("z", .integer(-3)), ("a", .string("line\n\"quoted\"\t\u{01}é")), ("d", .double(2)),
            ("e", .double(0.1)), ("n", .null), ("list", .array([.bool(true), .unsigned(7)])),
            ("empty", .object([])), ("nan", .double(.nan)),
        ])
        let text = value.rendered()
        #expect(
            text
                == #"{"z":-3,"a":"line\n\"quoted\"\t\u0001é","d":2.0,"e":0.1,"n":null,"list":[true,7],"empty":{},"nan":"NaN"}"#
        )
        let parsed = try #require(
            try JSONSerialization.jsonObject(with: Data(value.rendered(pretty: true).utf8))
                as? [String: Any]
        )
        #expect(parsed["a"] as? String == "line\n\"quoted\"\t\u{01}é")
        let list = try #require(parsed["list"] as? [Any])
        #expect(list.count == 2)
        #expect(list[0] as? Bool == true)
        #expect(list[1] as? Int == 7)
    }

    @Test("Pretty output indents by two spaces and keeps empty containers on one line")
    func pretty() {
        let value = JSONValue.object([
            ("name", .string("spots")), ("sizes", .array([.number(1), .number(2)])),
            ("none", .array([])), ("nested", .object([("k", .null)])), ("empty", .object([])),
        ])
        #expect(
            value.rendered(pretty: true) == """
                {
                  "name": "spots",
                  "sizes": [
                    1,
                    2
                  ],
                  "none": [],
                  "nested": {
                    "k": null
                  },
                  "empty": {}
                }
                """
        )
        #expect(JSONValue.array([]).rendered(pretty: true) == "[]")
    }

    @Test("Every control character is escaped, in either style, and the text decodes back")
    func escaping() throws {
        let text = "\u{08}\u{0C}\n\r\t\u{00}\u{1F}\"\\/\u{7F}é\u{2028}😀"
        let value = JSONValue.string(text)
        #expect(
            value.rendered()
                == #""\b\f\n\r\t\u0000\u001f\"\\/"# + "\u{7F}é\u{2028}😀\""
        )
        #expect(
            value.rendered(escaping: .shortFormsForLineBreaksAndTabs)
                == #""\u0008\u000c\n\r\t\u0000\u001f\"\\/"# + "\u{7F}é\u{2028}😀\""
        )
        for escaping in [JSONValue.StringEscaping.allShortForms, .shortFormsForLineBreaksAndTabs] {
            let array = "[" + value.rendered(escaping: escaping) + "]"
            let decoded = try JSONSerialization.jsonObject(with: Data(array.utf8)) as? [String]
            #expect(decoded == [text])
        }
        // Keys are strings too.
        #expect(JSONValue.object([("a\"b", .null)]).rendered() == #"{"a\"b":null}"#)
    }

    @Test(
        "Numbers: doubles always read back as doubles, integers span both ranges, raw is as given"
    )
    func numbers() {
        #expect(JSONValue.double(1e20).rendered() == "1e+20")
        #expect(JSONValue.double(-0.5).rendered() == "-0.5")
        #expect(JSONValue.double(3).rendered() == "3.0")
        #expect(JSONValue.double(.infinity).rendered() == #""Infinity""#)
        #expect(JSONValue.double(-.infinity).rendered() == #""-Infinity""#)
        #expect(JSONValue.integer(.min).rendered() == "-9223372036854775808")
        #expect(JSONValue.unsigned(.max).rendered() == "18446744073709551615")
        #expect(JSONValue.raw("0.049023").rendered() == "0.049023")
        #expect(JSONValue.number(42) == .integer(42))
        #expect(JSONValue.optional(nil) == .null)
        #expect(JSONValue.optional(.bool(false)).rendered() == "false")
    }
}
