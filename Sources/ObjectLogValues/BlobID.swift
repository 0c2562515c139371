import Foundation

/// The content address of an external blob: the SHA-256 digest of its bytes.
///
/// A blob's file name is its digest in lowercase hexadecimal, so no name read from a store can
/// point outside the store's blob directory.
public struct BlobID: Hashable, Sendable, CustomStringConvertible {
    /// The length of a digest: 32 bytes.
    public static let byteCount = 32

    /// The 32 digest bytes.
    public let bytes: [UInt8]

    /// Creates an identifier from 32 digest bytes; nil for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == BlobID.byteCount else { return nil }
        self.bytes = bytes
    }

    /// Creates an identifier from 64 lowercase hexadecimal digits; nil otherwise.
    public init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 2 * BlobID.byteCount else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(BlobID.byteCount)
        for index in stride(from: 0, to: utf8.count, by: 2) {
            guard let high = hexValue(utf8[index]), let low = hexValue(utf8[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// The identifier of `data`'s content.
    public init(contentsOf data: some Collection<UInt8>) {
        bytes = SHA256.hash(data)
    }

    /// The digest in lowercase hexadecimal: the blob's file name.
    public var hex: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The hexadecimal digest.
    public var description: String { hex }
}

private func hexValue(_ character: UInt8) -> UInt8? {
    switch character {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
    default: nil
    }
}
