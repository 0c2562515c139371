import Foundation

/// One row of the comparison table: a workload measured on ObjectLog and on its peer.
struct BenchmarkRow {
    var workload: String
    var objectlog: Double
    var peer: Double?
    /// objectlog / peer, or for "lower is better" units the figure the goal names.
    var ratio: Double?
    var unit: String
    var goal: String
    var met: Bool?
    /// The peer's name when it is not the report's (the JSON key of its figure).
    var peerName: String? = nil

    func json() -> [String: Any] {
        var object: [String: Any] = [
            "workload": workload, "objectlog": objectlog, "unit": unit, "goal": goal,
        ]
        object[peerName?.lowercased() ?? "sqlite"] = peer ?? NSNull()
        object["ratio"] = ratio ?? NSNull()
        object["met"] = met ?? NSNull()
        return object
    }
}

/// Collects rows, prints them as a table, and writes JSON and an SVG chart of the ratios.
final class BenchmarkReport {
    private(set) var rows: [BenchmarkRow] = []
    let title: String
    let peerName: String

    init(title: String, peerName: String = "SQLite") {
        self.title = title
        self.peerName = peerName
    }

    func add(_ row: BenchmarkRow) {
        rows.append(row)
        print(format(row))
        fflush(nil)
    }

    func header() {
        print("\n" + title)
        print(
            pad("workload", 44) + pad("ObjectLog", 14) + pad(peerName, 14) + pad("ratio", 9)
                + pad("unit", 10) + pad("goal", 26) + "met?"
        )
        print(String(repeating: "-", count: 122))
    }

    private func format(_ row: BenchmarkRow) -> String {
        pad(row.workload, 44) + pad(number(row.objectlog), 14)
            + pad(row.peer.map(number) ?? "-", 14)
            + pad(row.ratio.map { String(format: "%.2f", $0) } ?? "-", 9) + pad(row.unit, 10)
            + pad(row.goal, 26)
            + (row.met.map { $0 ? "yes" : "NO" } ?? "-")
    }

    func writeJSON(to path: String) throws {
        let data = try JSONSerialization.data(
            withJSONObject: rows.map { $0.json() },
            options: [.prettyPrinted, .sortedKeys]
        )
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// A horizontal bar chart of the ratios, with the goal marked on each bar.
    func writeSVG(to path: String) throws {
        let rated = rows.filter { $0.ratio != nil }
        let barHeight = 26
        let left = 330
        let width = 900
        let height = 60 + rated.count * barHeight
        let maximum = max(2.5, rated.compactMap(\.ratio).max() ?? 1)
        let scale = Double(width - left - 80) / maximum
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="20" font-size="15">\(escape(title)): ratios (bars), 1.0 line in grey</text>

            """
        let one = left + Int(scale)
        svg +=
            "<line x1=\"\(one)\" y1=\"30\" x2=\"\(one)\" y2=\"\(height - 10)\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n"
        for (index, row) in rated.enumerated() {
            let y = 36 + index * barHeight
            let ratio = row.ratio ?? 0
            let colour = row.met == false ? "#d9534f" : (row.met == true ? "#5cb85c" : "#5b8fd9")
            svg += "<text x=\"10\" y=\"\(y + 15)\">\(escape(row.workload))</text>\n"
            svg +=
                "<rect x=\"\(left)\" y=\"\(y)\" width=\"\(max(1, Int(ratio * scale)))\" height=\"\(barHeight - 8)\" fill=\"\(colour)\"/>\n"
            svg +=
                "<text x=\"\(left + Int(ratio * scale) + 6)\" y=\"\(y + 14)\">\(String(format: "%.2f", ratio)) (\(escape(row.goal)))</text>\n"
        }
        svg += "</svg>\n"
        try svg.write(toFile: path, atomically: true, encoding: .utf8)
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(
            of: "<",
            with: "&lt;"
        )
        .replacingOccurrences(of: ">", with: "&gt;")
    }
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
}

func number(_ value: Double) -> String {
    if value == 0 { return "0" }
    if abs(value) >= 100_000 { return String(format: "%.3g", value) }
    if abs(value) >= 100 { return String(format: "%.0f", value) }
    if abs(value) >= 1 { return String(format: "%.2f", value) }
    return String(format: "%.4f", value)
}

/// Seconds taken by `body`.
func measure(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    let elapsed = clock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))
    return sorted[index]
}

/// The value of `--name VALUE` in `arguments`, if present.
func option(_ name: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else {
        return nil
    }
    return arguments[index + 1]
}
