import CommandLineKit
import ObjectLogStore

/// How the read commands report damage in the log: a torn tail is a warning (every open drops
/// it), corruption is an error with exit code 65, and a save another process has in flight is
/// not mentioned (it is not damage).
enum DamageRendering {
    /// The damage a command reports: nil for none, and for a save another process has in
    /// flight, of which a reader says nothing (FORMAT.md, section 5).
    static func reported(_ damage: StoreDamage?) -> StoreDamage? {
        damage?.isDamage == true ? damage : nil
    }

    /// The damage as JSON, `null` when there is none (or only a save in flight).
    static func json(_ damage: StoreDamage?) -> JSONValue {
        guard let damage = reported(damage) else { return .null }
        return .object([
            ("kind", .string(damage.kindName)),
            ("offset", .unsigned(damage.offset)),
            ("reason", .string(damage.reason)),
            ("validEnd", .unsigned(damage.validEnd)),
            ("laterCommits", .number(damage.laterCommits)),
        ])
    }

    /// Warns of a torn tail, or throws for corruption, after a command has printed what it could.
    ///
    /// - Returns: ``ExitCode/success`` when the store is readable in full.
    /// - Throws: ``CommandError`` with exit code 65 for corruption.
    static func finish(
        _ damage: StoreDamage?,
        path: String,
        context: CommandContext
    ) throws(CommandError) -> ExitCode {
        guard let damage else { return .success }
        switch damage.kind {
        case .inFlight:
            return .success
        case .tornTail:
            context.warn(
                "\(path): \(damage); the incomplete last transaction is not part of the store "
                    + "(run 'objectlog verify' for details)"
            )
            return .success
        case .corrupt:
            throw CommandError(
                "\(path): \(damage); committed data is damaged: what was shown is the store "
                    + "without the damaged transaction(s) (run 'objectlog verify' for details, "
                    + "then 'objectlog repair')",
                exitCode: .dataError
            )
        }
    }

    /// The lines that say what a salvage dropped, each without a prefix.
    static func lossLines(_ report: SalvageReport, names: EntityNames) -> [String] {
        var lines: [String] = []
        for loss in report.losses {
            let which: String
            if let numbers = loss.transactions {
                which =
                    numbers.count == 1
                    ? "transaction \(numbers.lowerBound)"
                    : "transactions \(numbers.lowerBound)–\(numbers.upperBound)"
            } else if loss.isCompaction {
                which = "the compaction's copy of the live state"
            } else if loss.damage.kind == .tornTail {
                which = "the incomplete last transaction"
            } else {
                which = "a damaged transaction"
            }
            lines.append(
                "\(which) (bytes \(loss.byteRange.lowerBound)–\(loss.byteRange.upperBound)): "
                    + Formatting.singleLine(loss.damage.description)
            )
            for record in loss.records {
                lines.append("  " + recordLine(record, names: names))
            }
            if let count = loss.undelimitedRecords {
                lines.append("  \(count) more record(s) after the damage, unreadable")
            }
        }
        return lines
    }

    private static func recordLine(_ record: SalvageReport.LostRecord, names: EntityNames) -> String
    {
        let object = "object #\(record.key) (\(names.name(of: record.entity)))"
        func version(_ number: UInt64?) -> String {
            guard let number, number != 0 else { return "as of the store's last compaction" }
            return "of transaction \(number)"
        }
        switch (record.kind, record.outcome) {
        case (.unreadable, _):
            return record.key == 0
                ? "damaged record at offset \(record.offset): what it changed is unknown"
                : "damaged record at offset \(record.offset), apparently \(object): what it "
                    + "changed is unknown"
        case (.metadata, .earlierVersion(let number)):
            return number == nil
                ? "metadata change lost: the metadata is the store header's"
                : "metadata change lost: the metadata is back to its version \(version(number))"
        case (.metadata, .laterVersion(let number)):
            return "metadata change lost, but transaction \(number) replaced the metadata since"
        case (_, .laterVersion(let number)):
            return "\(object): \(record.kind.rawValue) lost, but transaction \(number) changed "
                + "it again since"
        case (.delete, .earlierVersion(let number)):
            return "\(object): delete lost: the object is back, with its version \(version(number))"
        case (_, .earlierVersion(let number)):
            return "\(object): \(record.kind.rawValue) lost: back to its version \(version(number))"
        case (.delete, _):
            return "\(object): delete lost"
        case (_, .absent):
            return "\(object): \(record.kind.rawValue) lost: the object is not in the store"
        case (_, .unknown):
            return "\(object): \(record.kind.rawValue) lost"
        }
    }
}
