import Foundation
import Testing

@testable import FuzzTargets

private let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus")

@Suite("Fuzz corpus replay")
struct FuzzCorpusTests {
    @Test(
        "every committed corpus input of every fuzz target runs to completion",
        arguments: FuzzTarget.allCases
    )
    func replay(_ target: FuzzTarget) throws {
        let directory = corpus.appendingPathComponent(target.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(!names.isEmpty, "no corpus for \(target.rawValue)")
        for name in names {
            let data = try #require(
                FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
            )
            target.run([UInt8](data))
        }
    }

    @Test("the seeds are valid inputs of their targets")
    func seeds() {
        for target in FuzzTarget.allCases {
            #expect(!target.seeds().isEmpty, "\(target.rawValue) has no seeds")
        }
    }
}
