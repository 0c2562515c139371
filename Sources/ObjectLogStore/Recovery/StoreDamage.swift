/// Damage found in a store's log.
public struct StoreDamage: Sendable, Equatable, CustomStringConvertible {
    /// Whether the damage is a torn tail or corruption.
    public enum Kind: String, Sendable {
        /// An incomplete or damaged last transaction, or group of transactions written before
        /// one flush, as interrupted saves leave, in a store nobody is writing; dropped.
        case tornTail
        /// An incomplete last transaction while another process holds the writer lock: a save
        /// in progress, not damage. Readers see the store without it.
        case inFlight
        /// Damage with a valid commit after it that shows the damaged transaction was
        /// acknowledged, or in a transaction the index checkpoint shows was committed:
        /// committed data cannot be read.
        case corrupt
    }

    /// Whether the damage is a torn tail, a save in flight or corruption.
    public var kind: Kind
    /// The offset of the first damaged record.
    public var offset: UInt64
    /// What is wrong there.
    public var reason: String
    /// Where the damaged transaction begins (just past the last good commit before the
    /// damage).
    public var validEnd: UInt64
    /// How many valid commits follow the damage (a salvage keeps their intact transactions).
    public var laterCommits: Int

    init(_ damage: LogDamage) {
        switch damage.kind {
        case .tornTail: kind = .tornTail
        case .inFlight: kind = .inFlight
        case .corrupt: kind = .corrupt
        }
        offset = damage.offset
        reason = damage.reason
        validEnd = damage.validEnd
        laterCommits = damage.laterCommits
    }

    /// Whether this is damage to committed or unacknowledged data, rather than a save another
    /// process has in progress.
    public var isDamage: Bool { kind != .inFlight }

    /// The kind in words: `torn tail`, `transaction in flight` or `corruption`.
    public var kindName: String {
        switch kind {
        case .tornTail: "torn tail"
        case .inFlight: "transaction in flight"
        case .corrupt: "corruption"
        }
    }

    /// A one-line account: kind, offset and reason.
    public var description: String {
        "\(kindName) at offset \(offset): \(reason)"
    }
}
