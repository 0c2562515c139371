import Foundation
import TestSupport
import Testing

@testable import ObjectLogStore

@Suite("Security")
struct SecurityTests {
    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test(
        "store, index, lock and blob files are created with mode 0600 by default, and as configured"
    )
    func fileModes() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("modes.olog")
        let store = try LogStore.open(path: path)
        let blob = try store.writeBlob(Data([1, 2, 3]))
        var transaction = Transaction()
        transaction.put(
            key: store.allocateKeys(1).lowerBound,
            entity: 1,
            payload: [1],
            blobs: [blob],
            isInsert: true
        )
        try store.commit(transaction)
        try store.close()
        for file in [path, path + "-index", path + "-lock", path + "-blobs/" + blob.hex] {
            #expect(try mode(file) == 0o600, "\(file)")
        }
        #expect(try mode(path + "-blobs") == 0o700)
        var options = StoreOptions()
        options.fileMode = 0o640
        let shared = directory.file("shared.olog")
        try LogStore.open(path: shared, options: options).close()
        #expect(try mode(shared) == 0o640)
    }

    @Test(
        "blob names come only from digests: nothing in a store can name a path outside its blob folder"
    )
    func blobNames() {
        #expect(BlobID(hex: "../../../../etc/passwd") == nil)
        // Upper case is not a digest name.
        #expect(BlobID(hex: String(repeating: "A", count: 64)) == nil)
        #expect(BlobID(hex: String(repeating: "0", count: 63) + "/") == nil)
        #expect(BlobID(bytes: [UInt8](repeating: 0x2F, count: 31)) == nil)
        // Whatever 32 bytes a crafted record holds, the name is 64 hex digits.
        let crafted = BlobID(bytes: Array("../../../../../../etc/passwd\0\0\0\0".utf8))!
        #expect(crafted.hex.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(crafted.hex.count == 64)
    }

    @Test(
        "a symbolic link to a store is followed: compaction keeps the link and the store beside its target"
    )
    func symbolicLinks() throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(
            atPath: directory.file("real"),
            withIntermediateDirectories: true
        )
        let target = directory.file("real/store.olog")
        let link = directory.file("link.olog")
        try LogStore.open(path: target).close()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let store = try LogStore.open(path: link)
        #expect(store.path.hasSuffix("real/store.olog"))
        var transaction = Transaction()
        transaction.put(
            key: store.allocateKeys(1).lowerBound,
            entity: 1,
            payload: [5],
            isInsert: true
        )
        try store.commit(transaction)
        try store.compact()
        try store.close()
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link) == target)
        #expect(FileManager.default.fileExists(atPath: target + "-index"))
        #expect(!FileManager.default.fileExists(atPath: link + "-index"))
        let reopened = try LogStore.open(path: link)
        #expect(try reopened.readObject(1)?.payload == [5])
    }

    @Test(
        "counts and lengths read from a file are checked against the bytes present before allocating"
    )
    func boundedAllocations() throws {
        // A metadata dictionary claiming four billion entries in a handful of bytes.
        let dictionary: [UInt8] = [8, 0xFF, 0xFF, 0xFF, 0xFF, 1, 0, 0, 0]
        #expect(throws: MetadataCoding.DecodingError.self) {
            try MetadataCoding.decodeDictionary(dictionary)
        }
        let array: [UInt8] = [8, 1, 0, 0, 0, 1, 0, 0, 0, 0x61, 7, 0xFF, 0xFF, 0xFF, 0x7F]
        #expect(throws: MetadataCoding.DecodingError.self) {
            try MetadataCoding.decodeDictionary(array)
        }
        let string: [UInt8] = [8, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]
        #expect(throws: MetadataCoding.DecodingError.self) {
            try MetadataCoding.decodeDictionary(string)
        }
        // A record frame claiming 60 MiB in a small file: the scan stops without reading it.
        let fileSystem = MemoryFileSystem()
        let path = "/big.olog"
        try LogStore.open(path: path, options: StoreOptions(fileSystem: fileSystem)).close()
        let file = try fileSystem.open(path, mode: .readWrite)
        var frame = ByteWriter()
        frame.append(UInt32(0))
        frame.append(RecordType.put.rawValue)
        frame.append(UInt8(0))
        frame.appendVarint(1)  // entity
        frame.appendVarint(1)  // key
        frame.appendVarint(60 << 20)  // payload length
        try file.write(frame.bytes, at: try file.size())
        file.close()
        var readOnly = StoreOptions(fileSystem: fileSystem)
        readOnly.readOnly = true
        let store = try LogStore.open(path: path, options: readOnly)
        #expect(store.damageAtOpen?.kind == .tornTail)
        #expect(store.damageAtOpen?.reason.contains("runs past the end of the file") == true)
        // And a length beyond the format's limit is refused as such.
        let index = StoreIndex.decode([UInt8](repeating: 0, count: 200))
        #expect(index == nil)
    }

    @Test(
        "counters read from a file are bounded, so none can overflow: a crafted generation of 2^64-1 is refused, not compacted"
    )
    func countersAreBounded() throws {
        // Found by fuzzing the whole-store open: compaction added 1 to a header generation of
        // 2^64 - 1 and trapped.
        let directory = TemporaryDirectory()
        for (offset, name) in [(32, "generation"), (40, "next key"), (48, "transaction count")] {
            let path = directory.file("\(offset).olog")
            try LogStore.open(path: path).close()
            var bytes = readBytes(path)
            for index in offset..<(offset + 8) { bytes[index] = 0xFF }
            let length = Int(UInt32(bytes[12]) | UInt32(bytes[13]) << 8 | UInt32(bytes[14]) << 16)
            let crc = bytes.withUnsafeBytes {
                CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<(length - 4)]))
            }
            for index in 0..<4 {
                bytes[length - 4 + index] = UInt8(truncatingIfNeeded: crc >> (8 * index))
            }
            writeBytes(bytes, to: path)
            #expect {
                try LogStore.open(path: path)
            } throws: { error in
                (error as? StoreError)?.code == .corrupt
                    && (error as? StoreError)?.message.contains(name) == true
            }
        }
    }

    @Test(
        "text from a store is data, never a format: a metadata string with printf directives round-trips literally"
    )
    func noFormatStrings() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("format.olog")
        let store = try LogStore.open(path: path)
        var transaction = Transaction()
        transaction.metadata = ["author": .string("%s%n%x%@ \\(0)")]
        try store.commit(transaction)
        try store.close()
        #expect(try LogStore.readMetadata(path: path)["author"] == .string("%s%n%x%@ \\(0)"))
        let error = StoreError(.corrupt, "bad %s%n", path: "/tmp/%n.olog", offset: 3)
        #expect(error.description == "/tmp/%n.olog, offset 3: bad %s%n")
    }
}
