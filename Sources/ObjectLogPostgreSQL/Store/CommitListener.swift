import Foundation
import ObjectLog
import ObjectLogStore

/// A thread that listens on a connection of its own for the commits other processes announce,
/// reads what each changed, and hands the changes on.
///
/// A commit is announced (`NOTIFY`) with its number when it commits; the listener reads the
/// `objectlog_changes` rows of every commit after the last one it handed on, so a commit
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
                    lastSeen = try handOn(after: lastSeen, fresh, isOwn, handler)
                }
                guard let connection else { continue }
                let wakeEnd = wake.read >= 0 ? wake.read : nil
                if try !connection.notifications(waitingUpTo: Self.period, wake: wakeEnd).isEmpty {
                    lastSeen = try handOn(after: lastSeen, connection, isOwn, handler)
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
    private func handOn(
        after lastSeen: UInt64,
        _ connection: PostgresConnection,
        _ isOwn: @Sendable (UInt64) -> Bool,
        _ handler: @Sendable (StoreChanges) -> Void
    ) throws(PostgresError) -> UInt64 {
        let rows = try connection.execute(
            "SELECT m.commit, c.key, c.entity, c.kind FROM \(quoted(PostgresStore.commitsTable)) m "
                + "LEFT JOIN \(quoted(PostgresStore.changesTable)) c ON c.commit = m.commit "
                + "WHERE m.commit > $1 ORDER BY m.commit, c.key",
            [String(lastSeen)]
        ).rows
        var last = lastSeen
        var current: StoreChanges?
        func finish() {
            if let changes = current, !isOwn(changes.number) { handler(changes) }
            current = nil
        }
        for row in rows {
            guard let number = row[0].flatMap({ UInt64($0) }) else { continue }
            if current?.number != number {
                finish()
                current = StoreChanges(number: number)
                last = max(last, number)
            }
            guard let key = row[1].flatMap({ ObjectKey($0) }),
                let entity = row[2].flatMap({ EntityTag($0) }), let kind = row[3]
            else { continue }
            switch kind {
            case "0": current?.inserted.append((key, entity))
            case "1": current?.updated.append((key, entity))
            default: current?.deleted.append((key, entity))
            }
        }
        finish()
        return last
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
