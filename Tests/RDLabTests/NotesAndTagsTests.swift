import Foundation
import Testing

@Suite("rdlab edit sets notes and tags; list and show print them; list --tag filters")
struct NotesAndTagsTests {
    static func makeLab() throws -> LabFixture {
        let lab = try LabFixture()
        for name in ["spots", "worms"] {
            try lab.succeed([
                "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", name,
            ])
        }
        return lab
    }

    @Test("a new configuration has no notes and no tags")
    func defaults() throws {
        let lab = try Self.makeLab()
        let shown = try lab.json(["show", "spots"]) as? [String: Any] ?? [:]
        #expect(shown["notes"] as? String == "")
        #expect(shown["tags"] as? [String] == [])
        let text = try lab.succeed(["show", "spots"]).lines
        #expect(text.contains("tags:        (none)"))
        #expect(text.contains("notes:       (none)"))
    }

    @Test("--notes replaces the notes, --tag adds (once, ignoring case), --untag removes")
    func editing() throws {
        let lab = try Self.makeLab()
        let edited = try lab.succeed([
            "edit", "spots", "--notes", "round spots\nstable after 5000 steps", "--tag", "paper",
            "--tag", "Stable", "--tag", "PAPER",
        ])
        #expect(edited.lines == ["edited 'spots': notes set, +paper, +Stable"])
        var shown = try lab.json(["show", "spots"]) as? [String: Any] ?? [:]
        #expect(shown["notes"] as? String == "round spots\nstable after 5000 steps")
        #expect(shown["tags"] as? [String] == ["paper", "Stable"])
        let text = try lab.succeed(["show", "spots"]).lines
        #expect(text.contains("tags:        paper, Stable"))
        #expect(text.contains("notes:       round spots"))
        #expect(text.contains("             stable after 5000 steps"))

        let removed = try lab.succeed(["edit", "spots", "--untag", "STABLE", "--untag", "gone"])
        #expect(removed.lines == ["edited 'spots': -Stable"])
        #expect(removed.errorLines == ["warning: 'spots' has no tag 'gone'"])
        try lab.succeed(["edit", "spots", "--notes", ""])
        shown = try lab.json(["show", "spots"]) as? [String: Any] ?? [:]
        #expect(shown["tags"] as? [String] == ["paper"])
        #expect(shown["notes"] as? String == "")
        // Notes and tags are stored attributes of the configuration.
        let stored = try lab.objects("Configuration").compactMap {
            $0["attributes"] as? [String: Any]
        }.first { $0["name"] as? String == "spots" }
        #expect(stored?["tags"] as? [String] == ["paper"])
        #expect(stored?["notes"] as? String == "")
    }

    @Test("list shows the tags and --tag keeps only configurations with every tag given")
    func filtering() throws {
        let lab = try Self.makeLab()
        try lab.succeed(["edit", "spots", "--tag", "paper", "--tag", "round"])
        try lab.succeed(["edit", "worms", "--tag", "Paper"])
        let all = try lab.succeed(["list"]).lines
        #expect(all[0].contains("TAGS"))
        #expect(all.contains { $0.hasPrefix("spots ") && $0.contains("paper,round") })
        func names(_ tags: [String]) throws -> [String] {
            let list =
                try lab.json(["list"] + tags.flatMap { ["--tag", $0] }) as? [[String: Any]] ?? []
            return list.compactMap { $0["name"] as? String }
        }
        #expect(try names(["paper"]) == ["spots", "worms"])
        #expect(try names(["PAPER", "round"]) == ["spots"])
        #expect(try names(["nothing"]) == [])
        let none = try lab.succeed(["list", "--tag", "nothing"])
        #expect(
            none.lines == [
                "no configurations in \(lab.store) are tagged 'nothing'; its tags are paper, round"
            ]
        )
    }

    @Test(
        "bad notes and tags are refused with one line and change nothing",
        arguments: [
            (
                ["edit", "spots"],
                "error: nothing to change; give '--set <name=value>', '--notes <text>', '--tag <tag>' or '--untag <tag>'"
            ),
            (["edit", "spots", "--tag", ""], "error: a tag cannot be empty"),
            (
                ["edit", "spots", "--tag", "two words"],
                "error: a tag is one word, without spaces or commas, not 'two words'"
            ),
            (
                ["edit", "spots", "--tag", "a,b"],
                "error: a tag is one word, without spaces or commas, not 'a,b'"
            ),
            (
                ["edit", "spots", "--tag", "x", "--untag", "X"],
                "error: 'x' is both added (--tag) and removed (--untag); give one"
            ),
            (
                ["edit", "spots", "--notes", "a", "--notes", "b"],
                "error: '--notes' is given more than once"
            ),
        ]
    )
    func refused(arguments: [String], message: String) throws {
        let lab = try Self.makeLab()
        let before = lab.contents()
        let result = try lab.rdlab(arguments)
        #expect(result.exitCode == 64)
        #expect(result.errorLines == [message])
        #expect(lab.contents() == before)
    }
}
