import Foundation
import Testing

@Suite("rdlab demo never overwrites a gallery or sheet without --overwrite")
struct DemoOverwriteTests {
    @Test(
        "existing gallery.html or sheet.png stop the demo before it runs; --overwrite replaces them"
    )
    func refuseThenOverwrite() throws {
        let directory = LabFixture.makeDirectory()
        let gallery = directory.file("gallery.html")
        try "my own page".write(toFile: gallery, atomically: true, encoding: .utf8)
        let arguments = ["demo", "--size", "8", "--steps", "1"]
        let refused = try RDLabProcess.run(arguments, directory: directory.path)
        #expect(refused.exitCode == 73)
        #expect(
            refused.errorLines == [
                "error: 'gallery.html' exists; pass --overwrite to replace it, or choose another path with --html"
            ]
        )
        #expect(refused.standardOutput == "")
        #expect(try String(contentsOfFile: gallery, encoding: .utf8) == "my own page")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["gallery.html"]
        )

        try FileManager.default.removeItem(atPath: gallery)
        try "my own sheet".write(
            toFile: directory.file("sheet.png"),
            atomically: true,
            encoding: .utf8
        )
        let sheet = try RDLabProcess.run(arguments, directory: directory.path)
        #expect(sheet.exitCode == 73)
        #expect(
            sheet.errorLines == [
                "error: 'sheet.png' exists; pass --overwrite to replace it, or choose another path with --sheet"
            ]
        )

        let replaced = try RDLabProcess.run(arguments + ["--overwrite"], directory: directory.path)
        #expect(replaced.exitCode == 0, "\(replaced.standardError)")
        #expect(replaced.lines.contains("wrote sheet.png"))
        #expect(try String(contentsOfFile: gallery, encoding: .utf8).hasPrefix("<!DOCTYPE html>"))
    }
}
