import Foundation
import Testing
import Thumbnails

/// The gallery in a real browser: headless Chromium loads the page with `?selftest`, which uses
/// every control and reports script errors and failed checks into `<html data-selftest>`.
@Suite("the gallery works in headless Chromium, self-contained and without script errors")
struct GalleryBrowserTests {
    /// Chromium from Debian's packages (`apt-get install chromium`; .ci/run installs it).
    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// The DOM after the page's scripts ran, as Chromium serialises it.
    static func dumpDOM(_ page: String, query: String = "?selftest") throws -> String {
        guard let chromium else {
            Issue.record("chromium is not installed (apt-get install chromium)")
            return ""
        }
        let profile = TemporaryDirectoryPath()
        let result = try RDLabProcess.runCommand(
            URL(fileURLWithPath: chromium),
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--user-data-dir=\(profile.path)", "--virtual-time-budget=5000", "--dump-dom",
                "file://\(page)\(query)",
            ]
        )
        #expect(result.exitCode == 0, "\(result.standardError)")
        return result.standardOutput
    }

    /// The value of an attribute of the `<html>` element in a dumped DOM.
    static func rootAttribute(_ name: String, in dom: String) -> String? {
        guard let start = dom.range(of: "<html"), let end = dom[start.upperBound...].range(of: ">")
        else { return nil }
        let tag = dom[start.upperBound..<end.lowerBound]
        guard let attribute = tag.range(of: " \(name)=\"") else { return nil }
        return String(tag[attribute.upperBound...].prefix { $0 != "\"" })
    }

    /// The page's embedded JSON.
    static func data(inGallery page: String) throws -> [String: Any] {
        let opening = "<script type=\"application/json\" id=\"gallery-data\">"
        let start = try #require(page.range(of: opening))
        let end = try #require(page[start.upperBound...].range(of: "</script>"))
        let text = String(page[start.upperBound..<end.lowerBound])
        return try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] ?? [:]
    }

    static func makeGallery(_ lab: borrowing LabFixture) throws -> String {
        try lab.succeed([
            "run", "--model", "gray-scott", "--preset", "Spots", "--width", "24", "--height", "16",
            "--steps", "30", "--save", "spots </script> & 'quotes'",
        ])
        try lab.succeed(["resume", "spots </script> & 'quotes'", "--steps", "20"])
        try lab.succeed(["resume", "spots </script> & 'quotes'", "--steps", "20"])
        try lab.succeed([
            "run", "--model", "belousov-zhabotinsky", "--size", "12", "--steps", "4",
            "--boundary", "periodic", "--save", "bz",
        ])
        try lab.succeed(["edit", "bz", "--tag", "spirals", "--notes", "<b>not bold</b>"])
        let page = lab.path("gallery.html")
        try lab.succeed(["browse", "--html", page, "--sheet", lab.path("sheet.png")])
        return page
    }

    @Test("every control works and no script fails; a page with a broken script is caught")
    func selfTest() throws {
        let lab = try LabFixture()
        let page = try Self.makeGallery(lab)
        let dom = try Self.dumpDOM(page)
        #expect(Self.rootAttribute("data-selftest", in: dom) == "ok", "\(dom.prefix(300))")
        #expect(Self.rootAttribute("data-errors", in: dom) == "0")
        // The script laid the page out: the count and the filters' options.
        #expect(dom.contains("3 of 3 shown"))
        #expect(dom.contains("<option value=\"spirals\">spirals</option>"))
        #expect(
            dom.contains("<option value=\"belousov-zhabotinsky\">Belousov-Zhabotinsky</option>")
        )

        // The same check fails on a page whose script throws: the test can fail.
        let html = try String(contentsOfFile: page, encoding: .utf8)
        let broken = lab.path("broken.html")
        try html.replacingOccurrences(
            of: "var grid = document.getElementById(\"grid\");",
            with: "var grid = document.getElementById(\"grid\"); undefinedFunction();"
        ).write(toFile: broken, atomically: true, encoding: .utf8)
        let brokenDOM = try Self.dumpDOM(broken)
        #expect(Self.rootAttribute("data-errors", in: brokenDOM) == "1")
        #expect(Self.rootAttribute("data-selftest", in: brokenDOM) != "ok")
    }

    @Test("opening a configuration by its address shows its pictures, timeline, plots and command")
    func detailPage() throws {
        let lab = try LabFixture()
        let page = try Self.makeGallery(lab)
        let dom = try Self.dumpDOM(page, query: "#bz")
        #expect(Self.rootAttribute("data-errors", in: dom) == "0")
        #expect(dom.contains("<h2 id=\"detail-title\">bz</h2>"))
        #expect(dom.components(separatedBy: "class=\"colorbar\"").count - 1 == 3)
        #expect(dom.components(separatedBy: "<svg class=\"plot\"").count - 1 == 3)
        #expect(dom.contains("&lt;b&gt;not bold&lt;/b&gt;"))
        #expect(
            dom.contains(
                "rdlab run --model belousov-zhabotinsky --size 12 --steps 4 --boundary periodic --save bz"
            )
        )
    }

    @Test(
        "the page is self-contained, its pictures are full resolution, its statistics per snapshot"
    )
    func content() throws {
        let lab = try LabFixture()
        let page = try Self.makeGallery(lab)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        // Nothing is fetched: no links, no remote sources, no imports.
        for reference in [
            "href=", "src=\"http", "src=\"//", "url(", "@import", "fetch(", "XMLHttpRequest",
        ] {
            #expect(!html.contains(reference), "\(reference)")
        }
        // The name with "</script>" cannot end the data early.
        let data = try Self.data(inGallery: html)
        let configurations = data["configurations"] as? [[String: Any]] ?? []
        let spots = try #require(
            configurations.first { $0["name"] as? String == "spots </script> & 'quotes'" }
        )
        let picture = try #require(
            (spots["picture"] as? String)?.dropFirst("data:image/png;base64,".count)
        )
        let image = try Image(pngBytes: [UInt8](try #require(Data(base64Encoded: String(picture)))))
        #expect(image.width == 24 && image.height == 16)
        let chemicals = spots["chemicals"] as? [[String: Any]] ?? []
        #expect(chemicals.map { $0["map"] as? String } == ["viridis", "magma"])
        let snapshots = spots["snapshots"] as? [[String: Any]] ?? []
        #expect(snapshots.map { $0["step"] as? Int } == [30, 50, 70])
        for snapshot in snapshots {
            let stats = snapshot["stats"] as? [[Double]] ?? []
            #expect(stats.count == 2)
            #expect(stats.allSatisfy { $0.count == 3 && $0[0] <= $0[1] && $0[1] <= $0[2] })
        }
    }

    @Test("each configuration's command reproduces its latest state exactly")
    func reproduce() throws {
        let lab = try LabFixture()
        let page = try Self.makeGallery(lab)
        let html = try String(contentsOfFile: page, encoding: .utf8)
        let configurations =
            try Self.data(inGallery: html)["configurations"] as? [[String: Any]] ?? []
        for configuration in configurations where configuration["autoSaved"] as? Bool == false {
            let name = try #require(configuration["name"] as? String)
            let command = try #require(configuration["command"] as? String)
            // The command is for a shell; run it through one, into a fresh store.
            let other = try LabFixture()
            let shell = try RDLabProcess.runCommand(
                URL(fileURLWithPath: "/bin/sh"),
                [
                    "-c",
                    command.replacingOccurrences(
                        of: "rdlab ",
                        with: "\"$RDLAB\" ",
                        options: .anchored
                    ),
                ],
                environment: [
                    "RDLAB": RDLabProcess.executable?.path ?? "rdlab", "RDLAB_STORE": other.store,
                ]
            )
            #expect(shell.exitCode == 0, "\(command): \(shell.standardError)")
            try lab.succeed(["show", name, "--npy", lab.path("original.npy")])
            try other.succeed(["show", name, "--npy", other.path("again.npy")])
            #expect(
                FileManager.default.contents(atPath: lab.path("original.npy"))
                    == FileManager.default.contents(atPath: other.path("again.npy")),
                "\(command)"
            )
        }
    }
}

/// A temporary directory for Chromium's profile, removed afterwards.
private struct TemporaryDirectoryPath: ~Copyable {
    let path = FileManager.default.temporaryDirectory.path + "/rdlab-chromium-" + UUID().uuidString
    deinit { try? FileManager.default.removeItem(atPath: path) }
}
