import Foundation

/// Translates the values of put records written in an older layout into the current one as
/// they are read, so that a store outlives the layout its records were written in.
///
/// The log layer does not know what a value means. The object engine writes, in the store's
/// metadata under ``LogStore/upgradeBoundaryKey``, the generation and offset below which the
/// records of that generation of the file are in an older layout, and installs a translation
/// with ``LogStore/installPayloadUpgrade(_:)``. Every read of an older record
/// (``LogStore/withObject(_:_:)``, ``LogStore/readObject(_:)``, the bulk reads) then hands its
/// caller the translated value, and compaction writes the translated value, so the compacted
/// file holds the current layout only. Records at or above the boundary, and every record of a
/// later generation, are handed over untouched, at the cost of one comparison.
public struct PayloadUpgrade: Sendable {
    /// Turns the value of the record of entity `entity` at `offset` (in the current generation)
    /// into its current layout.
    public typealias Translation =
        @Sendable (_ entity: EntityTag, _ offset: UInt64, _ value: UnsafeRawBufferPointer) throws ->
        [UInt8]

    /// The translation.
    public var translate: Translation
    /// Where the older records end when the metadata does not say it yet.
    ///
    /// A migration checks the translated records before it commits, and a read-only open translates without ever
    /// committing. The offset applies to the file generation given with it only.
    public var pendingBoundary: (generation: UInt64, offset: UInt64)?

    /// Creates an upgrade.
    public init(
        pendingBoundary: (generation: UInt64, offset: UInt64)? = nil,
        translate: @escaping Translation
    ) {
        self.pendingBoundary = pendingBoundary
        self.translate = translate
    }
}

/// Where the records in an older layout end: the records of file generation `generation` at
/// offsets below `offset`.
struct UpgradeBoundary: Equatable {
    var generation: UInt64
    var offset: UInt64

    init(generation: UInt64, offset: UInt64) {
        self.generation = generation
        self.offset = offset
    }

    /// The boundary a metadata dictionary records, if it records one for `generation`.
    init?(_ metadata: Metadata, generation: UInt64) {
        guard case .array(let values)? = metadata[LogStore.upgradeBoundaryKey], values.count == 2,
            case .integer(let recorded)? = values.first, case .integer(let offset)? = values.last,
            recorded >= 0, offset >= 0, UInt64(recorded) == generation
        else { return nil }
        self.generation = generation
        self.offset = UInt64(offset)
    }
}

extension LogStore {
    /// The metadata key of the upgrade boundary: an array of two integers.
    ///
    /// They are a file generation and an offset. The records of that generation below that offset are in an older layout
    /// of the engine's values (see ``PayloadUpgrade``). A boundary of an earlier generation than
    /// the file's means nothing: compaction rewrote every record in the current layout.
    public static let upgradeBoundaryKey = "ObjectLog.upgradeBoundary"

    /// Installs the translation of records below the upgrade boundary (nil removes it).
    ///
    /// Install it before reading objects; compaction refuses a store whose metadata records a
    /// boundary for the current generation while no translation is installed, because it would
    /// copy older records into a file where nothing marks them as older.
    public func installPayloadUpgrade(_ upgrade: PayloadUpgrade?) {
        locked {
            hasPayloadUpgrade = upgrade != nil
            installedUpgrade = nil
            // The boundary is read once here, not on every read: the engine installs the
            // translation again after each commit that moves it (a migration), and compaction
            // leaves it behind in an older generation.
            guard let upgrade,
                let boundary = upgrade.pendingBoundary.map({
                    UpgradeBoundary(generation: $0.generation, offset: $0.offset)
                }) ?? UpgradeBoundary(state.currentMetadata, generation: state.header.generation),
                boundary.offset > UInt64(state.header.length)
            else { return }
            installedUpgrade = (
                boundary.generation,
                ActiveUpgrade(boundary: boundary.offset, translate: upgrade.translate)
            )
        }
    }

    /// The installed translation and the boundary it applies below.
    ///
    /// Nil unless the current file has records in an older layout. The caller holds `lock`.
    var activeUpgrade: ActiveUpgrade? {
        guard let installedUpgrade, installedUpgrade.generation == state.header.generation else {
            return nil
        }
        return installedUpgrade.active
    }

    /// Refuses to copy the file into a later generation while it has records in an older
    /// layout and nothing to translate them: there they would pass for current ones.
    ///
    /// The caller holds `lock`.
    func checkCopyable() throws {
        // A copy takes every live record the directory names: every page of a mapped index
        // is checked first, so that a damaged one cannot drop or misplace an object.
        _ = state.live.checkAllPages()
        try checkDirectory(state.live)
        if lacksUpgrade {
            throw StoreError(
                .invalidArgument,
                "records in an older model's layout need the engine's translation to be copied",
                path: path
            )
        }
    }

    /// Whether the current file has records in an older layout and nothing to translate them.
    ///
    /// The caller holds `lock`.
    var lacksUpgrade: Bool {
        guard !hasPayloadUpgrade,
            let boundary = UpgradeBoundary(
                state.currentMetadata,
                generation: state.header.generation
            )
        else { return false }
        return boundary.offset > UInt64(state.header.length)
    }
}

/// A translation and the offset below which it applies, captured with the file it applies to.
struct ActiveUpgrade: Sendable {
    var boundary: UInt64
    var translate: PayloadUpgrade.Translation

    /// Calls `body` with the value of the record at `offset`, translated if it is older.
    @inline(__always)
    func deliver<Result>(
        _ value: UnsafeRawBufferPointer,
        entity: EntityTag,
        offset: UInt64,
        _ body: (UnsafeRawBufferPointer) throws -> Result
    ) throws -> Result {
        guard offset < boundary else { return try body(value) }
        let translated = try translate(entity, offset, value)
        return try translated.withUnsafeBytes { try body($0) }
    }
}
