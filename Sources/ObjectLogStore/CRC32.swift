import CZlib

/// CRC-32 as zlib computes it (the ISO-HDLC / IEEE 802.3 polynomial, reflected,
/// initial value and final XOR `0xFFFFFFFF`); the CRC of the ASCII bytes `123456789` is
/// `0xCBF43926`.
///
/// See: zlib.h, `crc32()`.
package enum CRC32 {
    /// The CRC of `bytes`, continuing from `crc` (pass `0` to start).
    package static func checksum(
        _ bytes: UnsafeRawBufferPointer,
        continuing crc: UInt32 = 0
    ) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        var value = UInt(crc)
        var pointer = base.assumingMemoryBound(to: UInt8.self)
        var remaining = bytes.count
        // zlib takes a 32-bit length; feed large buffers in pieces.
        while remaining > 0 {
            let piece = min(remaining, 1 << 30)
            value = CZlib.crc32(value, pointer, UInt32(piece))
            pointer += piece
            remaining -= piece
        }
        return UInt32(truncatingIfNeeded: value)
    }

    /// The CRC of `bytes`, continuing from `crc` (pass `0` to start).
    package static func checksum(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: crc) }
    }
}

/// Whether a stored checksum matches the computed one.
///
/// Every CRC check of the store goes through here. A fuzzing build
/// (`-Xswiftc -DOBJECTLOG_FUZZING`, see tools/fuzz) accepts every checksum, so the fuzzer's
/// inputs reach the decoders behind the checks instead of stopping at them. Never ship such a
/// build.
@inline(__always)
package func checksumsMatch(_ stored: UInt32, _ computed: UInt32) -> Bool {
    #if OBJECTLOG_FUZZING
    return true
    #else
    return stored == computed
    #endif
}
