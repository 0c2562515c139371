import Foundation

/// A fresh temporary directory for one test, removed with everything in it when the value is
/// released.
public final class TemporaryDirectory: Sendable {
    /// The directory's path.
    public let path: String

    /// Creates the directory (a test cannot go on without it, so failure stops the test run).
    public init() {
        path = FileManager.default.temporaryDirectory.path + "/objectlog-tests-" + UUID().uuidString
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            fatalError("cannot create a temporary directory: \(error)")
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The directory as a file URL.
    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// The path of `name` in the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// The names of everything below the directory, sorted.
    public func listing() -> [String] {
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? []
        return names.sorted()
    }

    /// The bytes of every file below the directory, by relative path: what a test compares to
    /// show that a refused operation wrote nothing.
    public func fileContents() -> [String: Data] {
        var files: [String: Data] = [:]
        for name in listing() {
            var isDirectory: ObjCBool = false
            let full = file(name)
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isDirectory),
                !isDirectory.boolValue
            else { continue }
            files[name] = FileManager.default.contents(atPath: full)
        }
        return files
    }
}
