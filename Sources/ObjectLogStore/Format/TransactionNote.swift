/// Who saved a transaction, written in the padding record before its commit record.
///
/// A padding record's bytes mean nothing to a reader (FORMAT.md, section 4), so every version
/// of the format reads a store with notes as it reads one without; a reader that knows the
/// note's prefix takes the author and context name from it.
///
/// The note of a transaction written while an earlier one's flush had not completed also says
/// how far the log was durable then (``durableThrough(padding:)``): what tells a torn group of
/// such transactions from damage to acknowledged ones (FORMAT.md, section 5).
package struct TransactionNote: Sendable, Equatable {
    package var author: String?
    package var contextName: String?

    static let prefix: [UInt8] = Array("OLNOTE".utf8) + [1]

    package init(author: String?, contextName: String?) {
        self.author = author
        self.contextName = contextName
    }

    /// The note of `transaction`; nil when it names no author and no context.
    init?(_ transaction: Transaction) {
        guard transaction.author != nil || transaction.contextName != nil else { return nil }
        self.init(author: transaction.author, contextName: transaction.contextName)
    }

    /// The note a padding record's payload starts with, if it starts with one that names an
    /// author or a context.
    init?(padding payload: UnsafeRawBufferPointer) {
        guard let (note, _) = Self.decode(payload), note.author != nil || note.contextName != nil
        else { return nil }
        self = note
    }

    /// The number of the last transaction that was durable when the transaction whose padding
    /// this is was written, if its note says so: it says so when an earlier transaction was
    /// not durable yet.
    static func durableThrough(padding payload: UnsafeRawBufferPointer) -> UInt64? {
        guard let (_, end) = decode(payload), end < payload.count,
            payload[end] == durableMarkTag,
            case .value(let number, _) = decodeVarint(payload, at: end + 1)
        else { return nil }
        return number
    }

    /// The note at the start of `payload` and the offset just past its names.
    private static func decode(
        _ payload: UnsafeRawBufferPointer
    ) -> (note: TransactionNote, end: Int)? {
        guard payload.count >= prefix.count,
            payload.prefix(prefix.count).elementsEqual(prefix)
        else { return nil }
        var offset = prefix.count
        func string() -> String?? {
            // The length is the byte count plus one (0 for none).
            guard case .value(let length, let count) = decodeVarint(payload, at: offset),
                length == 0 || length - 1 <= UInt64(payload.count - offset - count)
            else { return nil }
            offset += count
            guard length > 0 else { return .some(nil) }
            let bytes = UnsafeRawBufferPointer(
                rebasing: payload[offset..<(offset + Int(length) - 1)]
            )
            offset += Int(length) - 1
            return .some(String(decoding: bytes, as: UTF8.self))
        }
        guard let author = string(), let contextName = string() else { return nil }
        return (TransactionNote(author: author, contextName: contextName), offset)
    }

    /// The note's bytes: the prefix, then the author and the context name, each a varint of
    /// its UTF-8 length plus one (0 for none) and its bytes.
    var encoded: [UInt8] { Self.encode(self, durableThrough: nil) }

    /// The bytes a padding record starts with for `note` (an empty one when nil).
    ///
    /// When `durableThrough` is given, the durable mark follows the names: the byte 1 and a
    /// varint of that transaction number. The filler's zeros after the names mean no mark.
    static func encode(_ note: TransactionNote?, durableThrough: UInt64?) -> [UInt8] {
        var writer = ByteWriter()
        writer.append(contentsOf: prefix)
        for text in [note?.author, note?.contextName] {
            guard let text else {
                writer.appendVarint(0)
                continue
            }
            let bytes = Array(text.utf8.prefix(maximumLength))
            writer.appendVarint(UInt64(bytes.count) + 1)
            writer.append(contentsOf: bytes)
        }
        if let durableThrough {
            writer.append(durableMarkTag)
            writer.appendVarint(durableThrough)
        }
        return writer.takeBytes()
    }

    /// The byte that starts the durable mark after a note's names.
    private static let durableMarkTag: UInt8 = 1

    /// The most bytes of an author or a context name a note keeps.
    static let maximumLength = 4096
}
