import Foundation
import ReactionDiffusion
import Testing
import Thumbnails

@Suite("rdlab browse and rdlab demo write a gallery and a contact sheet")
struct BrowseCommandTests {
    /// The thumbnails inlined in a gallery page, by configuration name.
    static func thumbnails(inGallery page: String) throws -> [String: Image] {
        var result: [String: Image] = [:]
        for card in page.components(separatedBy: "<div class=\"card\" data-name=\"").dropFirst() {
            let name = String(card.prefix { $0 != "\"" })
            guard let start = card.range(of: "src=\"data:image/png;base64,") else { continue }
            let base64 = card[start.upperBound...].prefix { $0 != "\"" }
            let bytes = try #require(Data(base64Encoded: String(base64)))
            result[name] = try Image(pngBytes: [UInt8](bytes))
        }
        return result
    }

    @Test("the gallery inlines every configuration's thumbnail and details; the sheet decodes")
    func browse() throws {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--width", "40", "--height", "20", "--steps", "5",
            "--save", "wide <&> one",
        ])
        try lab.succeed([
            "run", "--model", "belousov-zhabotinsky", "--size", "16", "--steps", "5", "--save",
            "bz",
        ])
        try lab.succeed(["settings", "set", "author", "Turing"])
        let result = try lab.succeed([
            "browse", "--html", lab.path("g.html"), "--sheet", lab.path("s.png"),
        ])
        #expect(result.lines == ["wrote \(lab.path("g.html"))", "wrote \(lab.path("s.png"))"])

        let page = try String(contentsOfFile: lab.path("g.html"), encoding: .utf8)
        #expect(page.hasPrefix("<!DOCTYPE html>"))
        #expect(page.contains("by Turing"))
        // Outside the script's JSON (where only "</" needs escaping), names are HTML-escaped.
        let markup = try #require(
            page.components(separatedBy: "<script type=\"application/json\"").first
        )
        #expect(!markup.contains("wide <&> one"))
        #expect(page.contains("wide &lt;&amp;&gt; one"))
        #expect(page.contains("f=0.057031 k=0.063672 du=0.155762 dv=0.0644"))
        #expect(page.contains("alpha=1.0 beta=1.0 gamma=1.0"))
        #expect(page.contains("5 steps"))
        // Self-contained: no file or network references.
        #expect(!page.contains("src=\"http") && !page.contains("href="))
        let thumbnails = try Self.thumbnails(inGallery: page)
        #expect(Set(thumbnails.keys) == ["autosave", "wide &lt;&amp;&gt; one", "bz"])
        // A 40 × 20 grid fits the 160-pixel square with its aspect kept.
        #expect(thumbnails["wide &lt;&amp;&gt; one"].map { [$0.width, $0.height] } == [160, 80])
        #expect(thumbnails["bz"].map { [$0.width, $0.height] } == [160, 160])

        let sheet = try Image(
            pngBytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: lab.path("s.png"))))
        )
        let expected = ContactSheet(columns: 3).size(tileCount: 3, hasCaptions: true)
        #expect(sheet.width == expected.width && sheet.height == expected.height)
    }

    @Test("browse of an empty or missing store says so and writes nothing")
    func empty() throws {
        let lab = try LabFixture()
        let missing = try lab.rdlab(["browse", "--html", lab.path("g.html")])
        #expect(missing.exitCode == 66)
        #expect(missing.errorLines.count == 1)
        #expect(!FileManager.default.fileExists(atPath: lab.path("g.html")))
    }

    @Test(
        "demo runs every preset into a fresh store, writes gallery and sheet, and replaces only its own store"
    )
    func demo() throws {
        let lab = try LabFixture()
        let arguments = [
            "demo", "--size", "16", "--steps", "4", "--html", lab.path("gallery.html"), "--sheet",
            lab.path("sheet.png"),
        ]
        let first = try lab.succeed(arguments)
        #expect(first.lines.contains("wrote \(lab.path("sheet.png"))"))
        let names = try lab.names()
        #expect(names.count == Preset.all.count)
        #expect(Set(names).count == Preset.all.count)
        #expect(
            names.contains("gs-worms") && names.contains("fhn-spiralcoral")
                && names.contains("bz-default")
        )
        let page = try String(contentsOfFile: lab.path("gallery.html"), encoding: .utf8)
        #expect(Set(try Self.thumbnails(inGallery: page).keys) == Set(names))
        let sheet = try Image(
            pngBytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: lab.path("sheet.png"))))
        )
        // Eight tiles: two rows of four.
        #expect(Preset.all.count == 8)
        let size = ContactSheet(columns: 4).size(tileCount: 8, hasCaptions: true)
        #expect(sheet.width == size.width && sheet.height == size.height)

        // A second demo starts afresh: the extra configuration is gone.
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "extra",
        ])
        try lab.succeed(arguments + ["--overwrite"])
        #expect(try lab.names() == names)

        // A store the demo did not make is never replaced.
        let other = try LabFixture()
        try other.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "mine",
        ])
        let before = other.contents()
        let refused = try other.rdlab(["demo", "--size", "8", "--steps", "1"])
        #expect(refused.exitCode == 73)
        #expect(
            refused.errorLines == [
                "error: '\(other.store)' exists and was not made by 'rdlab demo'; remove it or choose another path with --store"
            ]
        )
        #expect(other.contents() == before)
    }
}
