/// Who saved a transaction, written in the padding record before its commit record.
///
/// A padding record's bytes mean nothing to a reader (FORMAT.md, section 4), so every version
/// of the format reads a store with notes as it reads one without; a reader that knows the
/// note's prefix takes the author and context name from it.
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

    /// The note a padding record's payload starts with, if it starts with one.
    init?(padding payload: UnsafeRawBufferPointer) {
        guard payload.count >= Self.prefix.count,
            payload.prefix(Self.prefix.count).elementsEqual(Self.prefix)
        else { return nil }
        var offset = Self.prefix.count
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
        self.init(author: author, contextName: contextName)
    }

    /// The note's bytes: the prefix, then the author and the context name, each a varint of
    /// its UTF-8 length plus one (0 for none) and its bytes.
    var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.append(contentsOf: Self.prefix)
        for text in [author, contextName] {
            guard let text else {
                writer.appendVarint(0)
                continue
            }
            let bytes = Array(text.utf8.prefix(Self.maximumLength))
            writer.appendVarint(UInt64(bytes.count) + 1)
            writer.append(contentsOf: bytes)
        }
        return writer.takeBytes()
    }

    /// The most bytes of an author or a context name a note keeps.
    static let maximumLength = 4096
}
