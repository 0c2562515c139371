import ObjectLogStore

/// How the read commands report damage in the log: a torn tail is a warning (every open drops
/// it), corruption is an error with exit code 65.
enum DamageRendering {
    /// The damage as JSON, `null` when there is none.
    static func json(_ damage: StoreDamage?) -> JSONValue {
        guard let damage else { return .null }
        return .object([
            ("kind", .string(damage.kind == .tornTail ? "torn tail" : "corruption")),
            ("offset", .unsigned(damage.offset)),
            ("reason", .string(damage.reason)),
            ("validEnd", .unsigned(damage.validEnd)),
            ("laterCommits", .number(damage.laterCommits)),
        ])
    }

    /// Warns of a torn tail, or throws for corruption, after a command has printed what it could.
    ///
    /// - Returns: ``ExitCode/success`` when the store is readable in full.
    /// - Throws: ``ToolError`` with exit code 65 for corruption.
    static func finish(
        _ damage: StoreDamage?,
        path: String,
        context: CommandContext
    ) throws(ToolError) -> ExitCode {
        guard let damage else { return .success }
        switch damage.kind {
        case .tornTail:
            context.warn(
                "\(path): \(damage); the incomplete last transaction is not part of the store "
                    + "(run 'objectlog verify' for details)"
            )
            return .success
        case .corrupt:
            throw ToolError(
                .dataError,
                "\(path): \(damage); \(damage.laterCommits) committed transaction(s) from the "
                    + "damage on cannot be read (run 'objectlog verify', then 'objectlog recover')"
            )
        }
    }
}
