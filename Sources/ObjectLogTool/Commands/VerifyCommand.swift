import ObjectLogStore

/// `objectlog verify PATH [--json]`: checks everything that can be checked, read-only.
struct VerifyCommand: ToolCommand {
    static let configuration = CommandConfiguration(
        name: "verify",
        abstract: "Check a store's header, every checksum, the commit structure, the index and the "
            + "external blobs.",
        discussion: """
            Exits 0 when the store is clean and 65 when anything is wrong, printing each problem \
            on its own line with the byte offset concerned. A torn tail (an incomplete last \
            transaction, as an interrupted save leaves) is reported as 'torn tail', apart from \
            corruption (damage followed by committed transactions). The store is not changed.
            """,
        usage: "<path> [--json]",
        arguments: [ArgumentDefinition(name: "path", help: "The store file.")],
        options: [.flag("--json", help: "Print one JSON object instead of text.")]
    )

    var path: String
    var json: Bool

    init(_ arguments: ParsedArguments, context: CommandContext) {
        path = arguments.positionals[0]
        json = arguments.flag("--json")
    }

    func run(_ context: CommandContext) throws -> ExitCode {
        let inspection = try StoreAccess.inspect(path, checkBlobs: true)
        let problems = inspection.problems
        let transactions = inspection.transactions.filter { !$0.isCompaction }.count
        if json {
            let value = JSONValue.object([
                ("path", .string(path)),
                ("clean", .bool(problems.isEmpty)),
                ("transactions", .number(transactions)),
                ("liveObjects", .number(inspection.liveObjects.count)),
                ("validBytes", .unsigned(inspection.validBytes)),
                ("fileBytes", .unsigned(inspection.fileBytes)),
                ("blobCount", .number(inspection.blobCount)),
                ("indexStatus", .string(inspection.indexStatus.rawValue)),
                ("problems", .array(problems.map(Self.json))),
            ])
            context.output.writeLine(value.rendered(pretty: true))
        } else {
            for problem in problems { context.output.writeLine(Self.line(problem)) }
            let summary =
                "\(transactions) transaction(s), \(inspection.liveObjects.count) live object(s), "
                + "\(inspection.referencedBlobs.count) referenced blob(s), index "
                + inspection.indexStatus.rawValue
            if problems.isEmpty {
                context.output.writeLine("ok: \(path): \(summary)")
            } else {
                context.output.writeLine("damaged: \(path): \(summary)")
            }
        }
        guard problems.isEmpty else {
            let kinds = Set(problems.map(Self.kind)).sorted().joined(separator: ", ")
            throw ToolError(
                .dataError,
                "\(path): \(problems.count) problem(s) found (\(kinds))"
            )
        }
        return .success
    }

    /// The problem's kind as verify names it.
    private static func kind(_ problem: StoreInspection.Problem) -> String {
        switch problem.area {
        case .tornTail: "torn tail"
        case .log, .header: "corruption"
        case .index: "index"
        case .blob: "blob"
        }
    }

    /// One line: kind, the file when it is not the store itself, the offset, what is wrong.
    private static func line(_ problem: StoreInspection.Problem) -> String {
        var text = kind(problem)
        if problem.area == .index || problem.area == .blob { text += " \(problem.path)" }
        if let offset = problem.offset { text += " at offset \(offset)" }
        return text + ": " + Formatting.singleLine(problem.message)
    }

    private static func json(_ problem: StoreInspection.Problem) -> JSONValue {
        .object([
            ("kind", .string(kind(problem))),
            ("offset", problem.offset.map { .unsigned($0) } ?? .null),
            ("path", .string(problem.path)),
            ("message", .string(problem.message)),
        ])
    }
}
