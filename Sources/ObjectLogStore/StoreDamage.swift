/// Damage found in a store's log.
public struct StoreDamage: Sendable, Equatable, CustomStringConvertible {
    /// Whether the damage is a torn tail or corruption.
    public enum Kind: String, Sendable {
        /// An incomplete or damaged last transaction, as an interrupted save leaves; dropped.
        case tornTail
        /// Damage with valid commits after it: committed data cannot be read.
        case corrupt
    }

    /// Whether the damage is a torn tail or corruption.
    public var kind: Kind
    /// The offset of the first damaged record.
    public var offset: UInt64
    /// What is wrong there.
    public var reason: String
    /// Where the valid log ends (just past the last good commit before the damage).
    public var validEnd: UInt64
    /// How many valid commits follow the damage (and are lost to a salvage).
    public var laterCommits: Int

    init(_ damage: LogDamage) {
        kind = damage.kind == .tornTail ? .tornTail : .corrupt
        offset = damage.offset
        reason = damage.reason
        validEnd = damage.validEnd
        laterCommits = damage.laterCommits
    }

    /// A one-line account: kind, offset and reason.
    public var description: String {
        "\(kind == .tornTail ? "torn tail" : "corruption") at offset \(offset): \(reason)"
    }
}
