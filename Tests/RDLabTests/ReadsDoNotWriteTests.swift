import Foundation
import Testing

@Suite("rdlab show, list, history, browse and settings only read: nothing written, no lock needed")
struct ReadsDoNotWriteTests {
    /// Every file beside the store (store, index, lock, blobs) with its bytes and modification
    /// time: a read must leave all of them as they were.
    static func snapshot(of lab: borrowing LabFixture) throws -> [String: String] {
        var files: [String: String] = [:]
        let manager = FileManager.default
        for name in try manager.contentsOfDirectory(atPath: lab.directory.path).sorted() {
            let path = lab.path(name)
            let attributes = try manager.attributesOfItem(atPath: path)
            let date = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            let bytes =
                manager.contents(atPath: path).map { $0.base64EncodedString() } ?? "directory"
            files[name] = "\(date) \(bytes)"
        }
        return files
    }

    static func makeLab() throws -> LabFixture {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "2", "--save", "a",
        ])
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", "b",
        ])
        return lab
    }

    static let reads: [[String]] = [
        ["show", "a"], ["show", "a", "--json"], ["list"], ["list", "--json"],
        ["list", "--tag", "x"], ["settings"], ["settings", "get", "last-opened"],
        ["history", "a"], ["history", "a", "--json"], ["list", "--deleted"],
        ["list", "--deleted", "--json"],
    ]

    @Test("reads change no file beside the store and do not record last-opened")
    func noWrites() throws {
        let lab = try Self.makeLab()
        let before = try Self.snapshot(of: lab)
        Thread.sleep(forTimeInterval: 0.01)
        for arguments in Self.reads {
            try lab.succeed(arguments)
        }
        #expect(try Self.snapshot(of: lab) == before)
        #expect(try lab.succeed(["settings", "get", "last-opened"]).lines == ["b"])
        // A command that writes anyway records it.
        try lab.succeed(["edit", "a", "--tag", "seen"])
        #expect(try lab.succeed(["settings", "get", "last-opened"]).lines == ["a"])
    }

    @Test("reads work on a store whose files and directory are read-only")
    func readOnlyStore() throws {
        let lab = try Self.makeLab()
        let manager = FileManager.default
        let files = try manager.contentsOfDirectory(atPath: lab.directory.path)
        for name in files {
            try manager.setAttributes([.posixPermissions: 0o444], ofItemAtPath: lab.path(name))
        }
        try manager.setAttributes([.posixPermissions: 0o555], ofItemAtPath: lab.directory.path)
        defer {
            try? manager.setAttributes([.posixPermissions: 0o755], ofItemAtPath: lab.directory.path)
            for name in files {
                try? manager.setAttributes([.posixPermissions: 0o644], ofItemAtPath: lab.path(name))
            }
        }
        // The gallery goes where the unprivileged user may write.
        let gallery = "/tmp/rdlab-read-only-\(UUID().uuidString)"
        defer {
            try? manager.removeItem(atPath: gallery + ".html")
            try? manager.removeItem(atPath: gallery + ".png")
        }
        let browse = ["browse", "--html", gallery + ".html", "--sheet", gallery + ".png"]
        for arguments in Self.reads + [browse] {
            let result = try RDLabProcess.runUnprivileged(
                arguments + ["--store", lab.store],
                directory: "/"
            )
            #expect(result.exitCode == 0, "\(arguments): \(result.standardError)")
        }
        // A writer is refused with one line, not a crash.
        let edit = try RDLabProcess.runUnprivileged(
            ["edit", "a", "--tag", "x", "--store", lab.store],
            directory: "/"
        )
        #expect(edit.exitCode != 0)
        #expect(edit.errorLines.count == 1, "\(edit.standardError)")
        #expect(edit.errorLines.first?.hasPrefix("error: ") == true)
    }

    @Test("reads work while another process holds the store's writer lock; a writer waits for it")
    func whileLocked() throws {
        let lab = try Self.makeLab()
        // flock(1) takes the same lock a writer takes (flock(2) on the store's -lock file), and
        // its command holds it until the test says so: how long the reads take under load
        // then cannot decide whether the lock was held throughout.
        let held = lab.directory.file("lock-held")
        let release = lab.directory.file("lock-release")
        let holder = try BackgroundRun(
            URL(fileURLWithPath: "/usr/bin/flock"),
            [
                lab.store + "-lock", "/bin/sh", "-c",
                #"touch "$1"; while [ ! -e "$2" ]; do sleep 0.02; done"#, "holder", held, release,
            ],
            directory: lab.directory.path
        )
        defer {
            _ = FileManager.default.createFile(atPath: release, contents: nil)
            _ = holder.wait()
        }
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: held), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        try #require(FileManager.default.fileExists(atPath: held), "flock never took the lock")
        for arguments in Self.reads {
            try lab.succeed(arguments)
        }
        #expect(holder.isRunning, "the lock was released before the reads finished")
        // A writer waits for a short-lived lock (another process's save) rather than failing.
        let started = Date()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.7) {
            _ = FileManager.default.createFile(atPath: release, contents: nil)
        }
        try lab.succeed(["edit", "a", "--notes", "after the lock"])
        #expect(Date().timeIntervalSince(started) > 0.5)
        #expect(holder.wait().exitCode == 0)
        let shown = try lab.json(["show", "a"]) as? [String: Any] ?? [:]
        #expect(shown["notes"] as? String == "after the lock")
    }
}
