/// CRC-32 as zlib computes it (the ISO-HDLC / IEEE 802.3 polynomial, reflected,
/// initial value and final XOR `0xFFFFFFFF`); the CRC of the ASCII bytes `123456789` is
/// `0xCBF43926`.
///
/// Computed here by slicing-by-8 (eight table lookups per eight bytes). Records are short
/// (tens of bytes), where a call into zlib cost more than the CRC itself: replaying a log spent
/// 44% of its time in `crc32_z`. Tests check the result against zlib's `crc32`.
package enum CRC32 {
    /// Eight 256-entry tables: `tables[k * 256 + b]` is the CRC of byte `b` followed by `k`
    /// zero bytes.
    // Safe: written once during initialization (Swift runs it exactly once), then only read.
    nonisolated(unsafe) private static let tables: UnsafePointer<UInt32> = {
        let tables = UnsafeMutablePointer<UInt32>.allocate(capacity: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            tables[byte] = crc
        }
        for byte in 0..<256 {
            var crc = tables[byte]
            for slice in 1..<8 {
                crc = (crc >> 8) ^ tables[Int(crc & 0xFF)]
                tables[slice * 256 + byte] = crc
            }
        }
        return UnsafePointer(tables)
    }()

    /// The CRC of `bytes`, continuing from `crc` (pass `0` to start).
    package static func checksum(
        _ bytes: UnsafeRawBufferPointer,
        continuing crc: UInt32 = 0
    ) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        let table = tables
        var value = ~crc
        var pointer = base
        var remaining = bytes.count
        while remaining >= 8 {
            let low = UInt32(littleEndian: pointer.loadUnaligned(as: UInt32.self)) ^ value
            let high = UInt32(
                littleEndian: pointer.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
            )
            value =
                table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
                ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
                ^ table[1 * 256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
            pointer += 8
            remaining -= 8
        }
        while remaining > 0 {
            value = (value >> 8) ^ table[Int((value ^ UInt32(pointer.load(as: UInt8.self))) & 0xFF)]
            pointer += 1
            remaining -= 1
        }
        return ~value
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
