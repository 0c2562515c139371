import Foundation
import ObjectLog
import ObjectLogStore

/// A thread that listens on a connection of its own for the commits other processes announce,
/// reads what each changed, and hands the changes on.
///
/// A commit is announced (`NOTIFY`) with its number when it commits; the listener reads the
/// changes of every commit after the last one it handed on, so a commit
/// whose announcement was missed (the connection lost for a while) is still handed on, in
/// order, when the next one arrives or the connection is back.
final class CommitListener: @unchecked Sendable {
    // `@unchecked Sendable`: `stopped` and `lastSeen` are used only under `lock`.
    private let lock = NSLock()
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)
    /// A pipe whose reading end the thread's wait watches: a byte written to it ends the wait
    /// at once, so that stopping (and closing a store) takes no waiting period.
    private let wake: (read: Int32, write: Int32)

    /// Starts listening to the store at `url`, handing on the commits after `lastSeen` that
    /// `isOwn` does not claim.
    init(
        url: String,
        lastSeen: UInt64,
        isOwn: @escaping @Sendable (UInt64) -> Bool,
        handler: @escaping @Sendable (StoreChanges) -> Void
    ) {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) != 0 { ends = [-1, -1] }
        wake = (ends[0], ends[1])
        let thread = Thread { [self] in
            run(url: url, lastSeen: lastSeen, isOwn: isOwn, handler: handler)
            done.signal()
        }
        thread.name = "ObjectLog PostgreSQL listener"
        thread.start()
    }

    /// Stops the thread and waits for it to end (within the wait's period).
    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
        if wake.write >= 0 {
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        }
        done.wait()
        for end in [wake.read, wake.write] where end >= 0 { close(end) }
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    /// How long a wait for an announcement lasts before the thread checks whether to stop.
    private static let period: Int32 = 200

    private func run(
        url: String,
        lastSeen: UInt64,
        isOwn: @Sendable (UInt64) -> Bool,
        handler: @Sendable (StoreChanges) -> Void
    ) {
        var lastSeen = lastSeen
        var connection: PostgresConnection?
        while !isStopped {
            do {
                if connection == nil {
                    let fresh = try PostgresConnection(url: url)
                    try fresh.execute("LISTEN \(quoted(PostgresStore.commitChannel))")
                    connection = fresh
                    // Commits made while no connection listened are read now.
                    lastSeen = try Self.handOn(after: lastSeen, fresh, isOwn, handler)
                }
                guard let connection else { continue }
                let wakeEnd = wake.read >= 0 ? wake.read : nil
                if try !connection.notifications(waitingUpTo: Self.period, wake: wakeEnd).isEmpty {
                    lastSeen = try Self.handOn(after: lastSeen, connection, isOwn, handler)
                }
            } catch {
                // The server is out of reach: try again in a while, from the last commit seen.
                connection?.close()
                connection = nil
                if !isStopped { Thread.sleep(forTimeInterval: 1) }
            }
        }
        connection?.close()
    }

    /// Hands on the changes of the commits after `lastSeen`; returns the last one read.
    static func handOn(
        after lastSeen: UInt64,
        _ connection: PostgresConnection,
        _ isOwn: @Sendable (UInt64) -> Bool,
        _ handler: @Sendable (StoreChanges) -> Void
    ) throws(PostgresError) -> UInt64 {
        try connection.query(
            "SELECT commit, changes FROM \(quoted(PostgresStore.commitsTable)) "
                + "WHERE commit > $1 ORDER BY commit",
            [.text(String(lastSeen))]
        ) { rows throws(PostgresError) in
            var last = lastSeen
            for row in 0..<rows.count {
                guard let signed = rows.int64(row, 0), signed > 0 else { continue }
                let number = UInt64(signed)
                // Commits take consecutive numbers, and the newest list is always kept: a
                // first list after the next number means the lists between were dropped
                // (`PostgresStore.recordCommit`) before this process read them.
                if last == lastSeen, number > lastSeen + 1 {
                    var missed = StoreChanges(number: number - 1)
                    missed.isIncomplete = true
                    handler(missed)
                }
                last = max(last, number)
                var changes = StoreChanges(number: number)
                guard let list = rows.value(row, 1), CommitChanges.read(list, into: &changes)
                else {
                    throw PostgresError(
                        .statementFailed,
                        "commit \(number) has a damaged list of changes"
                    )
                }
                if !isOwn(number) { handler(changes) }
            }
            return last
        }
    }
}

extension PostgresStore {
    package func observeOtherProcesses(_ handler: @escaping @Sendable (StoreChanges) -> Void) {
        // From the last commit now: what came before is what this process opened.
        guard let lastSeen = try? storeRow().lastCommit else { return }
        let listener = CommitListener(
            url: url,
            lastSeen: lastSeen,
            isOwn: { [weak self] number in self?.claimOwnCommit(number) ?? true },
            handler: handler
        )
        let replaced = withListener { current in
            defer { current = listener }
            return current
        }
        replaced?.stop()
    }
}
