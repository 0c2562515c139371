import Foundation

/// The store benchmark at several sizes in one run (`--scales 1000000,4000000,10000000`):
/// every workload's ratio at each size, so that a cost growing faster than the work shows.
///
/// Each size is a whole run of the store group on stores of its own, one after another in this
/// process (the cold workloads in children, as at one size). The table printed at the end, the
/// JSON (`--json`: the rows of every size) and the SVG (`--svg`: a panel per workload, its ratio
/// against the size on a logarithmic axis, with the goal's line where the goal is a ratio) are
/// made from the rows each size's report collected.
struct ScaleSeries {
    let scales: [Int]
    /// Each size's rows, in `scales`' order.
    private(set) var reports: [(scale: Int, rows: [BenchmarkRow])] = []

    /// The sizes of `--scales`, or nil without it; exits with a usage error for a bad list.
    static func scales(in arguments: [String]) -> [Int]? {
        guard let list = option("--scales", in: arguments) else { return nil }
        let scales = list.split(separator: ",").map {
            Int($0.replacingOccurrences(of: "_", with: ""))
        }
        guard !scales.isEmpty, scales.allSatisfy({ ($0 ?? 0) >= 100 }) else {
            print("error: --scales takes sizes of at least 100, separated by commas")
            exit(64)
        }
        return scales.compactMap { $0 }.sorted()
    }

    mutating func add(scale: Int, rows: [BenchmarkRow]) {
        reports.append((scale, rows))
    }

    /// The workloads with a ratio, in the order the first size's run measured them.
    private var workloads: [String] {
        var seen: Set<String> = []
        var names: [String] = []
        for report in reports {
            for row in report.rows where row.ratio != nil && seen.insert(row.workload).inserted {
                names.append(row.workload)
            }
        }
        return names
    }

    private func ratio(of workload: String, at index: Int) -> BenchmarkRow? {
        reports[index].rows.first { $0.workload == workload && $0.ratio != nil }
    }

    /// Prints each workload's ratio at every size.
    func printSummary() {
        print("\nRatios by size (ObjectLog / SQLite, as each row's goal reads them)")
        var header = pad("workload", 44)
        for report in reports { header += pad(Self.label(report.scale), 12) }
        print(header + "goal")
        for workload in workloads {
            var line = pad(workload, 44)
            var goal = ""
            for index in reports.indices {
                let row = ratio(of: workload, at: index)
                let mark = row?.met == false ? "*" : ""
                line += pad(row?.ratio.map { String(format: "%.2f", $0) + mark } ?? "-", 12)
                goal = row?.goal ?? goal
            }
            print(line + goal)
        }
        print("(* goal not met at that size)")
    }

    func writeJSON(to path: String) throws {
        let object: [[String: Any]] = reports.map { report in
            ["objects": report.scale, "rows": report.rows.map { $0.json() }]
        }
        let data = try JSONSerialization.data(
            withJSONObject: object,
            options: [.prettyPrinted, .sortedKeys]
        )
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// A panel per workload: its ratio at each size, joined by a line, on a logarithmic axis of
    /// sizes; a dashed line at 1.0, and points red where the goal was not met.
    func writeSVG(to path: String) throws {
        let names = workloads
        let columns = 3
        let (panelWidth, panelHeight) = (300, 150)
        let rows = (names.count + columns - 1) / columns
        let width = columns * panelWidth
        let height = 40 + rows * panelHeight
        let sizes = reports.map { log10(Double($0.scale)) }
        let (low, high) = (sizes.min() ?? 0, sizes.max() ?? 1)
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" \
            font-family="sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="22" font-size="15">ObjectLog vs SQLite: each ratio against the number \
            of objects (\(reports.map { Self.label($0.scale) }.joined(separator: ", ")))</text>

            """
        for (number, workload) in names.enumerated() {
            let originX = (number % columns) * panelWidth + 40
            let originY = 40 + (number / columns) * panelHeight
            let plotWidth = panelWidth - 70
            let plotHeight = panelHeight - 60
            let points = reports.indices.compactMap { index -> (Double, Double, Bool?)? in
                guard let row = ratio(of: workload, at: index), let value = row.ratio else {
                    return nil
                }
                return (sizes[index], value, row.met)
            }
            let top = max(2.0, (points.map(\.1).max() ?? 1) * 1.15)
            func x(_ size: Double) -> Int {
                originX + Int(high > low ? (size - low) / (high - low) * Double(plotWidth) : 0)
            }
            func y(_ value: Double) -> Int {
                originY + 30 + plotHeight - Int(value / top * Double(plotHeight))
            }
            svg += "<text x=\"\(originX - 30)\" y=\"\(originY + 14)\">\(escape(workload))</text>\n"
            svg +=
                "<line x1=\"\(originX)\" y1=\"\(y(1))\" x2=\"\(originX + plotWidth)\" "
                + "y2=\"\(y(1))\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n"
            svg +=
                "<text x=\"\(originX - 30)\" y=\"\(y(1) + 4)\" fill=\"#999\">1.0</text>\n"
            let line = points.map { "\(x($0.0)),\(y($0.1))" }.joined(separator: " ")
            svg += "<polyline points=\"\(line)\" fill=\"none\" stroke=\"#5b8fd9\"/>\n"
            for (size, value, met) in points {
                let colour = met == false ? "#d9534f" : "#5b8fd9"
                svg += "<circle cx=\"\(x(size))\" cy=\"\(y(value))\" r=\"3\" fill=\"\(colour)\"/>\n"
                svg +=
                    "<text x=\"\(x(size) - 10)\" y=\"\(y(value) - 6)\">"
                    + "\(String(format: "%.2f", value))</text>\n"
            }
            for (index, size) in sizes.enumerated() {
                svg +=
                    "<text x=\"\(x(size) - 10)\" y=\"\(originY + plotHeight + 46)\" fill=\"#555\">"
                    + "\(Self.label(reports[index].scale))</text>\n"
            }
        }
        svg += "</svg>\n"
        try svg.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// A size as the chart shows it: 1M, 4M, 10M, 100k.
    static func label(_ scale: Int) -> String {
        if scale >= 1_000_000, scale % 1_000_000 == 0 { return "\(scale / 1_000_000)M" }
        if scale >= 1_000, scale % 1_000 == 0 { return "\(scale / 1_000)k" }
        return String(scale)
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;")
            .replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
