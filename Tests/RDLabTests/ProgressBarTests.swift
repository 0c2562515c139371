import Foundation
import Testing

@Suite("the progress bar shows the time left and fits the terminal")
struct ProgressBarTests {
    /// The progress lines `rdlab run` draws on a pseudo-terminal (script(1)) `columns` wide.
    static func progressLines(columns: Int) throws -> [String] {
        guard let rdlab = RDLabProcess.executable?.path else {
            Issue.record("rdlab was not built")
            return []
        }
        let result = try RDLabProcess.runCommand(
            URL(fileURLWithPath: "/usr/bin/script"),
            [
                "-qec",
                "\(rdlab) run --model gray-scott --size 256 --steps 8000 --threads 1 --no-save",
                "/dev/null",
            ],
            // The pseudo-terminal has no size of its own here, so COLUMNS gives the width.
            environment: ["COLUMNS": String(columns)]
        )
        #expect(result.exitCode == 0, "\(result.standardError)")
        return result.standardOutput.components(separatedBy: "\r")
            .map { $0.replacingOccurrences(of: "\u{1B}[K", with: "") }
            .filter { $0.contains("ETA") }
    }

    @Test(
        "every line has the steps and an ETA, and is narrower than the terminal",
        arguments: [40, 72, 120]
    )
    func fits(columns: Int) throws {
        let lines = try Self.progressLines(columns: columns)
        #expect(!lines.isEmpty, "no progress drawn")
        for line in lines {
            #expect(line.count < columns, "\(line.count) ≥ \(columns): \(line)")
            #expect(
                line.range(of: #"\d+/8000 steps"#, options: .regularExpression) != nil,
                "\(line)"
            )
            #expect(
                line.range(of: #"ETA (\d+:)?\d+:\d\d$"#, options: .regularExpression) != nil,
                "\(line)"
            )
        }
        if columns >= 100 {
            // Wide enough for everything: the label, a 40-cell bar and the rate.
            #expect(lines.allSatisfy { $0.hasPrefix("gray-scott [") && $0.contains(" steps/s ") })
        }
    }
}
