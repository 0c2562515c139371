import CommandLineKit
import Foundation
import ObjectLogStore
import Testing

@testable import ObjectLogTool

@Suite("verify finds every bit flip")
struct VerifyBitFlipTests {
    @Test(
        "objectlog verify exits 65 with a located problem for a flipped bit or a 0xFF byte at every byte of a store"
    )
    func everyByte() throws {
        let directory =
            FileManager.default.temporaryDirectory.path + "/verify-flips-" + UUID().uuidString
        try FileManager.default.createDirectory(
            atPath: directory,
            withIntermediateDirectories: true
        )
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/s.olog"
        let store = try LogStore.open(path: path)
        let rounds = ProcessInfo.processInfo.environment["OBJECTLOG_LONG_TESTS"] == "1" ? 60 : 8
        for round in 0..<rounds {
            var transaction = Transaction()
            transaction.put(
                key: store.allocateKeys(1).lowerBound,
                entity: 1,
                payload: Array("object \(round) \(String(repeating: "x", count: round * 7))".utf8),
                isInsert: true
            )
            if round % 4 == 3 { transaction.metadata = ["round": .integer(Int64(round))] }
            try store.commit(transaction)
        }
        try store.close()
        try FileManager.default.removeItem(atPath: path + "-index")
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(
            ObjectLogTool.run(["verify", path], output: .memory(), errorOutput: .memory())
                == .success
        )
        var checked = 0
        for position in 0..<original.count {
            for damage in 0..<2 {
                var copy = original
                if damage == 0 {
                    copy[position] ^= 1 << UInt8(position % 8)
                } else {
                    copy[position] = 0xFF
                }
                if copy == original { continue }
                try Data(copy).write(to: URL(fileURLWithPath: path))
                let output = TextOutput.memory()
                let errors = TextOutput.memory()
                let status = ObjectLogTool.run(
                    ["verify", path],
                    output: output,
                    errorOutput: errors
                )
                #expect(status.rawValue == 65, "damage at \(position) not reported")
                let text = output.capturedText + errors.capturedText
                #expect(
                    text.contains("offset") || text.contains("not an ObjectLog store"),
                    "damage at \(position): \(text)"
                )
                checked += 1
            }
        }
        #expect(checked > 2 * original.count - 20)
        print(
            "verify: \(checked) damaged copies of a \(original.count)-byte store, every one reported with exit 65"
        )
    }
}
