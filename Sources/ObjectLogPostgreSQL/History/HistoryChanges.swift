import ObjectLog
import ObjectLogStore

/// The changes of one transaction as the `changes` column of `objectlog_history` keeps them:
/// for each changed object, its key and entity tag (varints), its kind (a byte: 0 inserted,
/// 1 updated, 2 deleted), then its payload before and after the transaction, each a varint of
/// its length plus one (0 for none) and its bytes.
///
/// Payloads are the engine's own encoding, in the model version the transaction's row names:
/// the history reads them as it reads a log's records, and a pinned context reads them as
/// objects.
enum HistoryChanges {
    /// The bytes of `changes`, in their order.
    static func encode(_ changes: [StoreHistory.Change]) -> [UInt8] {
        var writer = PayloadWriter()
        for change in changes {
            writer.write(varint: change.key)
            writer.write(varint: UInt64(change.entity))
            writer.write(byte: kindByte(change.kind))
            for payload in [change.before, change.after] {
                guard let payload else {
                    writer.write(varint: 0)
                    continue
                }
                writer.write(varint: UInt64(payload.count) + 1)
                writer.write(raw: payload)
            }
        }
        return writer.bytes
    }

    /// The changes `bytes` holds; nil when they are not a whole list of changes.
    static func decode(_ bytes: UnsafeRawBufferPointer) -> [StoreHistory.Change]? {
        var reader = PayloadReader(bytes)
        var changes: [StoreHistory.Change] = []
        do {
            while !reader.isAtEnd {
                let key = try reader.readVarint()
                let entity = try reader.readVarint()
                guard entity <= UInt64(UInt32.max), let kind = kind(try reader.readByte()) else {
                    return nil
                }
                var payloads: [[UInt8]?] = []
                for _ in 0..<2 {
                    let length = try reader.readVarint()
                    guard length > 0 else {
                        payloads.append(nil)
                        continue
                    }
                    guard length - 1 <= UInt64(bytes.count) else { return nil }
                    payloads.append(Array(try reader.readRaw(count: Int(length - 1))))
                }
                changes.append(
                    StoreHistory.Change(
                        key: key,
                        entity: EntityTag(entity),
                        kind: kind,
                        before: payloads[0],
                        after: payloads[1]
                    )
                )
            }
        } catch {
            return nil
        }
        return changes
    }

    private static func kindByte(_ kind: StoreHistory.Change.Kind) -> UInt8 {
        switch kind {
        case .insert: 0
        case .update: 1
        case .delete: 2
        }
    }

    private static func kind(_ byte: UInt8) -> StoreHistory.Change.Kind? {
        switch byte {
        case 0: .insert
        case 1: .update
        case 2: .delete
        default: nil
        }
    }
}
