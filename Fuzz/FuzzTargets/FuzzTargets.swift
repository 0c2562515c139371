import Foundation
import ObjectLogStore
import Thumbnails

/// The inputs the fuzzers feed: each takes arbitrary bytes and must return normally (an error
/// is a normal outcome) — a trap, a hang or a huge allocation is a finding.
///
/// `tools/fuzz` builds these into `objectlog-fuzz` with libFuzzer; `FuzzTests` replays the
/// committed corpus in `Fuzz/corpus/` through them in `swift test`.
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// The store header parser.
    case header
    /// The record reader: the bytes are a log after its header.
    case records
    /// Opening a whole store (read-only and for writing), reading every object and inspecting it.
    case open
    /// The metadata dictionary decoder.
    case metadata
    /// The PNG decoder (chunk CRCs are repaired first, so the inputs reach libpng's decoding).
    case png

    /// Runs the target on `bytes`.
    package func run(_ bytes: [UInt8]) {
        switch self {
        case .header: fuzzHeader(bytes)
        case .records: fuzzRecords(bytes)
        case .open: fuzzOpen(bytes)
        case .metadata: _ = try? MetadataCoding.decodeDictionary(bytes)
        case .png: fuzzPNG(bytes)
        }
    }
}

private func memoryFile(_ bytes: [UInt8]) -> (MemoryFileSystem, any StoreFile)? {
    let fileSystem = MemoryFileSystem()
    guard let file = try? fileSystem.open("/f.olog", mode: .create(permissions: 0o600)) else {
        return nil
    }
    try? file.write(bytes, at: 0)
    return (fileSystem, file)
}

private func fuzzHeader(_ bytes: [UInt8]) {
    guard let (_, file) = memoryFile(bytes) else { return }
    _ = try? StoreHeader.read(from: file, path: "/f.olog", fileSize: UInt64(bytes.count))
}

private func fuzzRecords(_ bytes: [UInt8]) {
    guard let (_, file) = memoryFile(bytes) else { return }
    // The same bytes as records of every layout (format 1's fixed frames, format 2's compact
    // ones, format 3's with patches, checked against the keys the scan has seen).
    for (layout, allowsPatches) in [
        (RecordLayout.fixed, false), (.compact, false), (.compact, true),
    ] {
        var scanner = LogScanner(
            file: file,
            path: "/f.olog",
            fileSize: UInt64(bytes.count),
            layout: layout,
            allowsPatches: allowsPatches,
            windowSize: 4096
        )
        var live: [ObjectKey: RecordLocation] = [:]
        _ = try? scanner.scan(
            from: 0,
            lastNumber: 0,
            onRecord: { _, _ in },
            committed: { live[$0] },
            onTransaction: { transaction in
                for record in transaction.records {
                    switch record.type {
                    case .put, .patch: live[record.key] = record.location
                    case .delete: live[record.key] = nil
                    default: break
                    }
                }
            }
        )
    }
}

private func fuzzOpen(_ bytes: [UInt8]) {
    guard let (fileSystem, file) = memoryFile(bytes) else { return }
    file.close()
    var readOnly = StoreOptions(fileSystem: fileSystem)
    readOnly.readOnly = true
    if let store = try? LogStore.open(path: "/f.olog", options: readOnly) {
        let keys = store.liveKeys(entity: nil)
        for key in keys { _ = try? store.readObject(key) }
        // In key order the single loads go forward through the file and read ahead.
        for key in keys { _ = try? store.withObject(key) { _, _, _, _ in } }
        try? store.forEachLiveObject(entity: nil) { _, _, _ in }
        _ = store.metadata
    }
    _ = try? StoreInspection(path: "/f.olog", fileSystem: fileSystem)
    var salvage = StoreOptions(fileSystem: fileSystem)
    salvage.salvage = true
    _ = try? LogStore.open(path: "/f.olog", options: salvage)
    if let writer = try? LogStore.open(
        path: "/f.olog",
        options: StoreOptions(fileSystem: fileSystem)
    ) {
        var transaction = Transaction()
        transaction.put(
            key: writer.allocateKeys(1).lowerBound,
            entity: 1,
            payload: [1],
            isInsert: true
        )
        _ = try? writer.commit(transaction)
        _ = try? writer.compact()
        try? writer.close()
    }
}

/// Rewrites every chunk's CRC (as far as the chunk structure goes), so mutations reach the
/// decoder instead of failing libpng's checksum test.
package func repairingPNGChecksums(_ input: [UInt8]) -> [UInt8] {
    var bytes = input
    var position = 8
    while position + 12 <= bytes.count {
        let length =
            Int(bytes[position]) << 24 | Int(bytes[position + 1]) << 16 | Int(bytes[position + 2])
            << 8
            | Int(bytes[position + 3])
        let end = position + 8 + length
        guard length >= 0, end + 4 <= bytes.count else { break }
        let crc = bytes.withUnsafeBytes {
            CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[(position + 4)..<end]))
        }
        bytes[end] = UInt8(truncatingIfNeeded: crc >> 24)
        bytes[end + 1] = UInt8(truncatingIfNeeded: crc >> 16)
        bytes[end + 2] = UInt8(truncatingIfNeeded: crc >> 8)
        bytes[end + 3] = UInt8(truncatingIfNeeded: crc)
        position = end + 4
    }
    return bytes
}

private func fuzzPNG(_ bytes: [UInt8]) {
    _ = try? Image(pngBytes: repairingPNGChecksums(bytes), maximumPixelCount: 1 << 22)
}

// MARK: - Seeds

extension FuzzTarget {
    /// Valid inputs to start a corpus from: small stores, their headers and logs, metadata and
    /// PNG images.
    package func seeds() -> [[UInt8]] {
        let stores = seedStores()
        switch self {
        case .open:
            return stores
        case .header:
            return stores.map { Array($0.prefix(512)) }
        case .records:
            return stores.map { Array($0.dropFirst(512)) }
        case .metadata:
            return [
                MetadataCoding.encode([:]),
                MetadataCoding.encode(["author": .string("Ada"), "size": .integer(640)]),
                MetadataCoding.encode([
                    "a": .array([.double(1.5), .bool(true), .date(Date(timeIntervalSince1970: 0))]),
                    "d": .dictionary(["x": .data(Data([1, 2, 3]))]),
                ]),
            ]
        case .png:
            var seeds: [[UInt8]] = []
            for format in [PixelFormat.gray, .rgb, .rgba] {
                let channels = format == .gray ? 1 : (format == .rgb ? 3 : 4)
                let pixels = (0..<(7 * 5 * channels)).map { UInt8(truncatingIfNeeded: $0 &* 37) }
                if let image = try? Image(width: 7, height: 5, format: format, pixels: pixels),
                    let png = try? image.pngBytes(compressionLevel: 6)
                {
                    seeds.append(png)
                }
            }
            return seeds
        }
    }

    private func seedStores() -> [[UInt8]] {
        var stores: [[UInt8]] = []
        for variant in 0..<3 {
            let fileSystem = MemoryFileSystem()
            guard
                let store = try? LogStore.open(
                    path: "/s.olog",
                    options: StoreOptions(fileSystem: fileSystem)
                )
            else {
                continue
            }
            for round in 0..<(2 + variant * 3) {
                var transaction = Transaction()
                let key = store.allocateKeys(1).lowerBound
                transaction.put(
                    key: key,
                    entity: UInt32(round % 2 + 1),
                    payload: Array("object \(round)".utf8),
                    isInsert: true
                )
                if round % 3 == 2 {
                    transaction.delete(key: key - 1, entity: UInt32((round - 1) % 2 + 1))
                }
                if round == 1 { transaction.metadata = ["round": .integer(Int64(round))] }
                _ = try? store.commit(transaction)
            }
            if variant == 2 { _ = try? store.compact() }
            try? store.close()
            if let file = try? fileSystem.open("/s.olog", mode: .read), let size = try? file.size(),
                let bytes = try? file.read(at: 0, count: Int(size))
            {
                stores.append(bytes)
            }
        }
        return stores
    }
}
