import Foundation
import Testing

@Suite("a picture or page that cannot be written is one clear line, never a Foundation error code")
struct PictureWriteTests {
    static func makeLab() throws -> LabFixture {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "a",
        ])
        try FileManager.default.createDirectory(
            atPath: lab.path("folder"),
            withIntermediateDirectories: false
        )
        return lab
    }

    @Test("writing into a directory or a missing directory names the file and the reason")
    func refused() throws {
        let lab = try Self.makeLab()
        let folder = lab.path("folder")
        let missing = lab.path("missing/x.png")
        let cases: [([String], String)] = [
            (
                ["run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--png", folder],
                "it is a directory"
            ),
            (["show", "a", "--png", folder], "it is a directory"),
            (["browse", "--html", folder], "it is a directory"),
            (["browse", "--sheet", folder], "it is a directory"),
            (["browse", "--sheet", missing], "its directory does not exist"),
            (["browse", "--html", missing], "its directory does not exist"),
        ]
        for (arguments, reason) in cases {
            let result = try lab.rdlab(arguments)
            let path = arguments.last!
            #expect(result.exitCode == 73, "\(arguments)")
            #expect(result.errorLines.count == 1, "\(arguments): \(result.standardError)")
            #expect(!result.standardError.contains("NSCocoaErrorDomain"), "\(arguments)")
            #expect(
                result.errorLines.first?.hasPrefix("error: cannot write '\(path)'") == true,
                "\(arguments): \(result.standardError)"
            )
            #expect(result.errorLines.first?.contains(reason) == true, "\(result.standardError)")
        }
        // Nothing half-written is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == [])
    }

    @Test(
        "a directory the user may not write gives the system's reason and leaves no temporary file"
    )
    func permissionDenied() throws {
        let lab = try Self.makeLab()
        let manager = FileManager.default
        let folder = lab.path("folder")
        try manager.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder)
        defer { try? manager.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder) }
        try manager.setAttributes([.posixPermissions: 0o755], ofItemAtPath: lab.directory.path)
        for name in try manager.contentsOfDirectory(atPath: lab.directory.path)
        where name != "folder" {
            try manager.setAttributes([.posixPermissions: 0o644], ofItemAtPath: lab.path(name))
        }
        let result = try RDLabProcess.runUnprivileged(
            ["browse", "--html", folder + "/g.html", "--store", lab.store],
            directory: "/"
        )
        #expect(result.exitCode == 73)
        #expect(result.errorLines == ["error: cannot write '\(folder)/g.html': permission denied"])
        #expect(try manager.contentsOfDirectory(atPath: folder) == [])
    }
}
