import CommandLineKit
import Testing

@Suite("Did you mean")
struct SuggestionTests {
    static let commands = ["run", "resume", "list", "show", "edit", "rename", "delete", "presets"]

    @Test(
        "A near miss, a swap of neighbours or a prefix is suggested, ignoring case",
        arguments: [
            ("lsit", "list"), ("shwo", "show"), ("LIST", "list"), ("presest", "presets"),
            ("renmae", "rename"), ("delet", "delete"), ("rn", "run"),
        ]
    )
    func suggested(typed: String, expected: String) {
        #expect(Suggestion.closest(to: typed, among: Self.commands) == expected)
        #expect(
            Suggestion.didYouMean(typed, among: Self.commands) == " (did you mean '\(expected)'?)"
        )
    }

    @Test("A prefix of the closest candidate is suggested even when many letters are missing")
    func prefix() {
        let models = ["gray-scott", "fitzhugh-nagumo", "belousov-zhabotinsky"]
        #expect(Suggestion.closest(to: "gray", among: models) == "gray-scott")
        #expect(Suggestion.closest(to: "fitzhugh", among: models) == "fitzhugh-nagumo")
        #expect(Suggestion.closest(to: "g", among: models) == nil, "one letter is no shorthand")
    }

    @Test("Nothing is suggested for a word far from every candidate, or for nothing typed")
    func notSuggested() {
        for typed in ["", "x", "compact", "zzzzzz"] {
            #expect(Suggestion.closest(to: typed, among: Self.commands) == nil, "\(typed)")
            #expect(Suggestion.didYouMean(typed, among: Self.commands).isEmpty)
        }
        #expect(Suggestion.closest(to: "run", among: []) == nil)
    }

    @Test("The edit distance counts insertions, deletions, substitutions and swaps")
    func distance() {
        func distance(_ a: String, _ b: String) -> Int {
            Suggestion.editDistance(Array(a), Array(b))
        }
        #expect(distance("", "abc") == 3)
        #expect(distance("abc", "") == 3)
        #expect(distance("abc", "abc") == 0)
        #expect(distance("abc", "abd") == 1)
        #expect(distance("abc", "acb") == 1)
        #expect(distance("kitten", "sitting") == 3)
    }
}
