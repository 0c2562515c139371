import Foundation

extension LogStore {
    /// How many keys to make room for before replaying from `start`; nil unless the file ends
    /// with a valid commit.
    ///
    /// The keys ever handed out (the last commit's next key, less one) bound the keys the
    /// keydir can hold. That count comes from the file, so it is trusted only as far as the
    /// bytes to replay could hold puts of 32 bytes (an object record's frame is 11): a crafted
    /// file cannot make an open reserve more than about its own size in keydir. A log of
    /// smaller records still replays, growing the keydir as it goes.
    static func keyCountHint(
        scanner: LogScanner,
        fileSize: UInt64,
        start: UInt64,
        liveCount: Int
    ) throws -> Int? {
        guard fileSize > start, let last = try scanner.commitRecord(endingAt: fileSize) else {
            return nil
        }
        let byRecords = UInt64(liveCount) + (fileSize - start) / 32
        return Int(min(last.nextKey &- 1, byRecords))
    }

    func readMetadataRecord(at offset: UInt64) throws -> Metadata {
        let (frame, payload) = try readRecord(at: offset, file: file)
        guard frame.type == .metadata else {
            throw StoreError(
                .corrupt,
                "the latest metadata offset does not point at a metadata record",
                path: path,
                offset: offset
            )
        }
        do {
            return try MetadataCoding.decodeDictionary(payload)
        } catch {
            throw StoreError(
                .corrupt,
                "metadata record: \(error.reason)",
                path: path,
                offset: offset + UInt64(frame.frameLength + error.position)
            )
        }
    }

    /// Reads and checks one whole record; returns its frame and payload.
    private func readRecord(at offset: UInt64, file: any StoreFile) throws -> (RecordFrame, [UInt8])
    {
        let (frame, record) = try Self.readRecord(
            at: offset,
            file: file,
            path: path,
            layout: state.header.layout
        ).get()
        return (frame, Array(record[frame.frameLength...]))
    }

    /// Reads and checks the record at `offset`: its frame, bounds and checksum.
    ///
    /// Returns the frame and the whole record's bytes, or the reason it is damaged.
    package static func readRecord(
        at offset: UInt64,
        file: any StoreFile,
        path: String,
        layout: RecordLayout,
        limit: UInt64? = nil
    ) throws -> Result<(RecordFrame, [UInt8]), StoreError> {
        func damaged(_ reason: String) -> Result<(RecordFrame, [UInt8]), StoreError> {
            .failure(StoreError(.corrupt, reason, path: path, offset: offset))
        }
        let head = try file.read(at: offset, count: layout.maximumAnyFrameLength)
        let frame: RecordFrame
        switch head.withUnsafeBytes({ RecordFrame.decode($0, layout: layout) }) {
        case .frame(let found): frame = found
        case .incomplete: return damaged("record frame runs past the end of the file")
        case .invalid(let reason): return damaged(reason)
        }
        if let limit, offset + UInt64(frame.totalLength) > limit {
            return damaged("record runs past the end of its transaction")
        }
        var record = head
        if record.count >= frame.totalLength {
            record.removeLast(record.count - frame.totalLength)
        } else {
            let rest = try file.read(
                at: offset + UInt64(record.count),
                count: frame.totalLength - record.count
            )
            record += rest
            guard record.count == frame.totalLength else {
                return damaged("record runs past the end of the file")
            }
        }
        let computed = record.withUnsafeBytes { RecordFrame.checksum(of: $0) }
        guard checksumsMatch(frame.checksum, computed) else {
            let mismatch = RecordFrame.checksumMismatch(stored: frame.checksum, computed: computed)
            return damaged(mismatch)
        }
        return .success((frame, record))
    }
}
