import CObjectLogStoreSupport

/// CRC-32 as zlib computes it (the ISO-HDLC / IEEE 802.3 polynomial, reflected,
/// initial value and final XOR `0xFFFFFFFF`); the CRC of the ASCII bytes `123456789` is
/// `0xCBF43926`.
///
/// Two ways, chosen at run time. On x86-64 processors with PCLMULQDQ (all since about 2010),
/// inputs of 16 bytes or more are folded by carry-less multiplication, in C
/// (`objectlog_crc32_folding`): no tables, so a scan that streams a log through the cache does
/// not wait for evicted table lines (`objectlog-bench store --child crc folding`, against
/// `slicing`, times the two; Benchmarks/README.md shows how to run a child). Elsewhere, and for
/// shorter inputs, by slicing-by-16 (sixteen independent table lookups per sixteen bytes).
/// Records are short (tens of bytes), where a call into zlib, across a shared library's
/// boundary and through its own checks of alignment and length, costs more than the CRC
/// itself, and a replay checks every record. For the same reason the last 1 to 15 bytes are
/// not taken one at a time, which is a chain of dependent lookups: they go in at most three
/// steps of 8, 4 and 1–3 bytes whose lookups are independent. Tests check both ways against a
/// bitwise CRC for every length up to 200 and every way of splitting it.
package enum CRC32 {
    /// Sixteen 256-entry tables: `tables[k * 256 + b]` is the CRC of byte `b` followed by `k`
    /// zero bytes.
    // Safe: written once during initialization (Swift runs it exactly once), then only read.
    nonisolated(unsafe) private static let tables: UnsafePointer<UInt32> = {
        let tables = UnsafeMutablePointer<UInt32>.allocate(capacity: 16 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            tables[byte] = crc
        }
        for byte in 0..<256 {
            var crc = tables[byte]
            for slice in 1..<16 {
                crc = (crc >> 8) ^ tables[Int(crc & 0xFF)]
                tables[slice * 256 + byte] = crc
            }
        }
        return UnsafePointer(tables)
    }()

    /// Whether this processor folds by carry-less multiplication.
    package static let foldingIsAvailable: Bool = {
        #if arch(x86_64)
        return objectlog_crc32_folding_is_available() != 0
        #else
        return false
        #endif
    }()

    /// The lookup tables and the choice of way, for a loop that computes many CRCs to fetch
    /// once: each access of a static property calls `swift_once`, which a batch update's
    /// 200,000 CRCs felt.
    package static let lookupTables = Tables(pointer: tables, folding: foldingIsAvailable)

    /// What ``checksum(_:continuing:tables:)`` computes with.
    // Safe to send: the pointer is to the tables, which are never written after they are made.
    package struct Tables: @unchecked Sendable {
        fileprivate let pointer: UnsafePointer<UInt32>
        fileprivate let folding: Bool

        /// The same tables, always used: the slicing way even where folding is available, for
        /// tests to check it on any processor.
        package var slicingOnly: Tables { Tables(pointer: pointer, folding: false) }
    }

    /// The CRC of `bytes`, continuing from `crc` (pass `0` to start).
    package static func checksum(
        _ bytes: UnsafeRawBufferPointer,
        continuing crc: UInt32 = 0
    ) -> UInt32 {
        checksum(bytes, continuing: crc, tables: lookupTables)
    }

    /// The CRC of `bytes`, continuing from `crc`, with tables fetched from ``lookupTables``.
    @inline(__always)
    package static func checksum(
        _ bytes: UnsafeRawBufferPointer,
        continuing crc: UInt32 = 0,
        tables: Tables
    ) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        #if arch(x86_64)
        if tables.folding && bytes.count >= 16 {
            return objectlog_crc32_folding(crc, base, bytes.count)
        }
        #endif
        let table = tables.pointer
        var value = ~crc
        var pointer = base
        var remaining = bytes.count
        // Table `slice`'s entry for the low byte of `value`.
        @inline(__always) func lookup(_ slice: Int, _ value: UInt32) -> UInt32 {
            // Safe: slice < 16 and the index < 256, inside the 16 × 256 tables.
            table[slice &* 256 &+ Int(truncatingIfNeeded: value & 0xFF)]
        }
        @inline(__always) func word(_ offset: Int) -> UInt32 {
            UInt32(littleEndian: pointer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        }
        // Only the first four bytes of a step meet the running value; the other lookups do
        // not wait for it. They are combined first, as a balanced tree, and the four that wait
        // are added last, so a step waits only on those four (in parallel) and three XORs.
        while remaining >= 16 {
            let second = word(4)
            let third = word(8)
            let fourth = word(12)
            let independent =
                ((lookup(11, second) ^ lookup(10, second >> 8))
                    ^ (lookup(9, second >> 16) ^ lookup(8, second >> 24)))
                ^ ((lookup(7, third) ^ lookup(6, third >> 8))
                    ^ (lookup(5, third >> 16) ^ lookup(4, third >> 24)))
                ^ ((lookup(3, fourth) ^ lookup(2, fourth >> 8))
                    ^ (lookup(1, fourth >> 16) ^ lookup(0, fourth >> 24)))
            let first = word(0) ^ value
            value =
                independent
                ^ ((lookup(15, first) ^ lookup(14, first >> 8))
                    ^ (lookup(13, first >> 16) ^ lookup(12, first >> 24)))
            pointer += 16
            remaining -= 16
        }
        if remaining >= 8 {
            let second = word(4)
            let independent =
                (lookup(3, second) ^ lookup(2, second >> 8))
                ^ (lookup(1, second >> 16) ^ lookup(0, second >> 24))
            let first = word(0) ^ value
            value =
                independent
                ^ ((lookup(7, first) ^ lookup(6, first >> 8))
                    ^ (lookup(5, first >> 16) ^ lookup(4, first >> 24)))
            pointer += 8
            remaining -= 8
        }
        if remaining >= 4 {
            let first = word(0) ^ value
            value =
                (lookup(3, first) ^ lookup(2, first >> 8))
                ^ (lookup(1, first >> 16) ^ lookup(0, first >> 24))
            pointer += 4
            remaining -= 4
        }
        // The last 1–3 bytes in one step: the bytes of `value` they meet are shifted out.
        switch remaining {
        case 3:
            let first =
                (UInt32(pointer.load(as: UInt8.self))
                    | UInt32(pointer.load(fromByteOffset: 1, as: UInt8.self)) << 8
                    | UInt32(pointer.load(fromByteOffset: 2, as: UInt8.self)) << 16) ^ value
            value =
                (value >> 24) ^ lookup(2, first) ^ lookup(1, first >> 8) ^ lookup(0, first >> 16)
        case 2:
            let first =
                (UInt32(pointer.load(as: UInt8.self))
                    | UInt32(pointer.load(fromByteOffset: 1, as: UInt8.self)) << 8) ^ value
            value = (value >> 16) ^ lookup(1, first) ^ lookup(0, first >> 8)
        case 1:
            value = (value >> 8) ^ lookup(0, UInt32(pointer.load(as: UInt8.self)) ^ value)
        default:
            break
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
