import CommandLineKit
import Foundation
import ObjectLog

/// One transaction of a configuration's history, as `rdlab history` shows it: when, and which
/// of its values changed from what to what.
struct ConfigurationEdit {
    /// What the transaction did to the configuration.
    enum Kind: String {
        /// Saved it for the first time (a run's `--save`, or `undelete`).
        case created
        /// Changed its values or its snapshots.
        case edited
    }

    /// One property's values before and after: the old value is `nil` when the transaction
    /// created the configuration.
    struct Change {
        var property: String
        var old: StoredValue?
        var new: StoredValue
    }

    /// The number of the transaction, as `objectlog history` and `rdlab revert --to` name it.
    var transaction: UInt64
    /// When it was committed.
    var date: Date
    /// Created or edited.
    var kind: Kind
    /// The properties that changed (or, for ``Kind/created``, the name, model, the model's
    /// parameters, tags and notes), in the model's order.
    var changes: [Change]
    /// Snapshots the transaction added to the configuration.
    var snapshotsAdded = 0
    /// Snapshots it deleted.
    var snapshotsRemoved = 0
    /// Whether it replaced the configuration's thumbnail.
    var thumbnailChanged = false

    /// The properties history does not list as changes: bookkeeping (`modified`, `created`),
    /// the snapshots (counted instead) and the thumbnail (flagged instead).
    static let unlisted: Set<String> = ["modified", "created", "snapshots", "thumbnail"]

    /// The edit on one line, after its transaction number and date.
    var text: String {
        var parts: [String] = []
        switch kind {
        case .created:
            let values = Dictionary(changes.map { ($0.property, $0.new) }) { first, _ in first }
            let name = values["name"]?.stringValue ?? "?"
            let model = values["model"]?.stringValue ?? "?"
            parts.append("saved as '\(name)': \(model)")
            let rest = changes.filter { $0.property != "name" && $0.property != "model" }
            parts.append(contentsOf: rest.map { "\($0.property) \($0.new.labText)" })
        case .edited:
            for change in changes {
                if change.property == "name", let old = change.old?.stringValue,
                    let new = change.new.stringValue
                {
                    parts.append("renamed '\(old)' → '\(new)'")
                } else {
                    parts.append(
                        "\(change.property) \(change.old?.labText ?? "nil") → \(change.new.labText)"
                    )
                }
            }
        }
        if snapshotsAdded > 0 {
            parts.append("+\(snapshotsAdded) snapshot\(snapshotsAdded == 1 ? "" : "s")")
        }
        if snapshotsRemoved > 0 {
            parts.append("-\(snapshotsRemoved) snapshot\(snapshotsRemoved == 1 ? "" : "s")")
        }
        if thumbnailChanged && kind == .edited { parts.append("new thumbnail") }
        return parts.joined(separator: "; ")
    }

    /// The edit as an object of `rdlab history --json`.
    var json: JSONValue {
        .object([
            ("transaction", .unsigned(transaction)),
            ("date", .date(date)),
            ("kind", .string(kind.rawValue)),
            (
                "changes",
                .array(
                    changes.map { change in
                        .object([
                            ("property", .string(change.property)),
                            ("old", change.old?.labJSON ?? .null),
                            ("new", change.new.labJSON),
                        ])
                    }
                )
            ),
            ("snapshotsAdded", .number(snapshotsAdded)),
            ("snapshotsRemoved", .number(snapshotsRemoved)),
            ("thumbnailChanged", .bool(thumbnailChanged)),
        ])
    }
}
