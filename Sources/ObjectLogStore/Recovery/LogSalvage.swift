/// One damaged stretch of a log that a salvage stepped over.
package struct SalvagedDamage: Sendable, Equatable {
    /// The damage, as ``LogScanner`` classified it.
    package var damage: LogDamage
    /// Where the log goes on after it, at the start of the next intact transaction.
    ///
    /// Nil when nothing after the damage could be read (a torn tail, or no valid commit after
    /// it).
    package var resumeOffset: UInt64?
    /// The numbers of the user transactions lost, when known.
    package var lostNumbers: ClosedRange<UInt64>?
    /// The damaged transaction's own commit record, when it survived.
    package var lostCommit: FoundCommit?
}

/// The outcome of ``LogScanner/salvage(from:lastNumber:visitor:)``.
package struct SalvageOutcome: Sendable {
    /// Just past the last intact commit (the start when there is none).
    package var validEnd: UInt64
    /// Every damaged stretch stepped over, in file order; empty for an undamaged log.
    package var damages: [SalvagedDamage]
    /// Number of the last user transaction kept.
    package var lastNumber: UInt64
    /// The CRC of the last commit record kept, if any.
    package var lastCommitChecksum: UInt32?
}

extension LogScanner {
    /// Scans from `start` like ``scan(from:lastNumber:visitor:)``, but steps over corruption:
    /// the damaged transaction is dropped and the scan goes on at the next intact one, so every
    /// intact committed transaction reaches `visitor`.
    ///
    /// Each record carries its own checksum and each commit names its transaction's first
    /// record, so after damage the scan resynchronises on the first valid commit record after
    /// it (found by its trailer, as ``validCommits(after:)`` does): if that commit names the
    /// damaged transaction's start, the transaction's commit survived and the scan goes on after
    /// it; if it names a later start, the damaged transaction's commit was lost and the scan
    /// goes on at that start, checking the next transaction record by record. A commit that
    /// names an earlier start or a number at or below the last kept one is not trusted.
    ///
    /// A torn tail, a transaction in flight or damage with no intact transaction after it ends
    /// the scan, as it ends ``scan(from:lastNumber:visitor:)``.
    ///
    /// - Throws: `StoreError` `.io`, or what the visitor throws.
    package mutating func salvage<Visitor: LogScanVisitor>(
        from start: UInt64,
        lastNumber: UInt64,
        visitor: inout Visitor
    ) throws -> SalvageOutcome {
        var position = start
        var number = lastNumber
        var validEnd = start
        var checksum: UInt32?
        var damages: [SalvagedDamage] = []
        while true {
            let outcome = try scan(from: position, lastNumber: number, visitor: &visitor)
            number = outcome.lastNumber
            if let last = outcome.lastCommitChecksum {
                checksum = last
                validEnd = outcome.validEnd
            }
            guard let damage = outcome.damage else { break }
            guard damage.kind == .corrupt,
                let resume = Self.resumePoint(after: damage, lastNumber: number)
            else {
                visitor.skip(to: damage.validEnd, nextKey: 0)
                damages.append(SalvagedDamage(damage: damage))
                break
            }
            visitor.skip(to: resume.offset, nextKey: resume.lostCommit?.nextKey ?? 0)
            damages.append(
                SalvagedDamage(
                    damage: damage,
                    resumeOffset: resume.offset,
                    lostNumbers: resume.lost,
                    lostCommit: resume.lostCommit
                )
            )
            position = resume.offset
            number = resume.lastNumber
        }
        return SalvageOutcome(
            validEnd: validEnd,
            damages: damages,
            lastNumber: number,
            lastCommitChecksum: checksum
        )
    }

    /// Where a salvage goes on after `damage`: the first trusted commit after it.
    private static func resumePoint(
        after damage: LogDamage,
        lastNumber: UInt64
    ) -> (offset: UInt64, lastNumber: UInt64, lost: ClosedRange<UInt64>?, lostCommit: FoundCommit?)?
    {
        for commit in damage.resumeCandidates {
            if commit.firstRecordOffset == damage.validEnd {
                // The damaged transaction's own commit: go on after it.
                if commit.isCompaction { return (commit.end, lastNumber, nil, commit) }
                guard commit.number > lastNumber else { continue }
                return (commit.end, commit.number, (lastNumber + 1)...commit.number, commit)
            }
            guard commit.firstRecordOffset > damage.offset, commit.firstRecordOffset < commit.end
            else { continue }
            // The damaged transaction's commit is gone: go on at the next transaction's start.
            if commit.isCompaction { return (commit.firstRecordOffset, lastNumber, nil, nil) }
            guard commit.number > lastNumber else { continue }
            let lost = commit.number - 1 > lastNumber ? (lastNumber + 1)...(commit.number - 1) : nil
            return (commit.firstRecordOffset, commit.number - 1, lost, nil)
        }
        return nil
    }
}

extension SalvagedDamage {
    init(damage: LogDamage) {
        self.init(damage: damage, resumeOffset: nil, lostNumbers: nil, lostCommit: nil)
    }
}
