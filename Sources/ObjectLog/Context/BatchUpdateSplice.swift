import Foundation
import ObjectLogStore

/// How a batch update makes the new value of each stored object: the property count and every
/// property's bytes as the record has them, but for the properties the update sets, whose new
/// encodings take their places.
///
/// Each value is read once to find where its properties end (checking that it holds every
/// property of the entity); the new value is then written straight into the transaction's
/// record, the kept bytes copied in as few pieces as there are runs between set properties.
/// Bytes after the last property, which a well-formed value does not have, are dropped.
struct BatchUpdateSplice {
    /// One property: how to skip it, and what becomes of it.
    private struct Step {
        var skip: CompiledSkip
        /// Whether a kept value may refer to a blob, which the new record must list again.
        var keptExternal: Bool
        /// The new encoding's place in ``BatchUpdateSplice/replacementBytes``, or nil when
        /// the value is kept.
        var replacement: Range<Int>?
    }

    /// One property for ``quickPlan(_:into:)``.
    private struct QuickStep {
        var skip: CompiledSkip
        /// The new encoding's place in ``BatchUpdateSplice/replacementBytes``; a start of -1
        /// when the value is kept.
        var replacementStart: Int32
        var replacementEnd: Int32
    }

    /// The entity's property shapes, in property order.
    private let shapes: [ValueShape]
    private let steps: [Step]
    /// The steps again, for values read straight from their bytes; empty unless every
    /// property is a plain attribute (see ``CompiledSkip/isPlain``).
    private let quickSteps: [QuickStep]
    /// Every new encoding, back to back in property order.
    private let replacementBytes: [UInt8]
    /// The number of properties the update sets.
    private let replacementCount: Int

    /// - Parameters:
    ///   - shapes: The entity's property shapes.
    ///   - replacements: The new encodings, by property index.
    ///   - readsBytesDirectly: Whether values of plain attributes alone are read straight from
    ///     their bytes (see ``quickPlan(_:into:)``); false only for the tests that hold that
    ///     path to the other.
    init(shapes: [ValueShape], replacements: [Int: [UInt8]], readsBytesDirectly: Bool = true) {
        self.shapes = shapes
        var bytes: [UInt8] = []
        var steps: [Step] = []
        for (index, shape) in shapes.enumerated() {
            var step = Step(
                skip: CompiledSkip(shape),
                keptExternal: shape.isExternal && replacements[index] == nil,
                replacement: nil
            )
            if let replacement = replacements[index] {
                step.replacement = bytes.count..<(bytes.count + replacement.count)
                bytes += replacement
            }
            steps.append(step)
        }
        self.steps = steps
        quickSteps =
            readsBytesDirectly && steps.allSatisfy(\.skip.isPlain) && bytes.count <= Int(Int32.max)
            ? steps.map {
                QuickStep(
                    skip: $0.skip,
                    replacementStart: Int32($0.replacement?.lowerBound ?? -1),
                    replacementEnd: Int32($0.replacement?.upperBound ?? -1)
                )
            } : []
        replacementBytes = bytes
        replacementCount = replacements.keys.filter { shapes.indices.contains($0) }.count
    }

    /// Where the pieces of one new value come from: runs of the old value, and replacements.
    ///
    /// Reused from value to value (it keeps its storage).
    struct Pieces {
        /// The old value's property count, as a number.
        fileprivate var propertyCount: UInt64 = 0
        /// The pieces, `count` of them: ranges of the old value (`isReplacement` false) or of
        /// ``BatchUpdateSplice/replacementBytes``.
        fileprivate var ranges: [(start: Int, end: Int, isReplacement: Bool)] = []
        fileprivate var count = 0
        /// The new value's length.
        fileprivate var length = 0
        /// The blobs the kept properties refer to.
        fileprivate var blobs: [BlobID] = []

        init() {}

        fileprivate mutating func add(_ start: Int, _ end: Int, isReplacement: Bool) {
            ranges[count] = (start, end, isReplacement)
            count += 1
            length += end - start
        }
    }

    /// Finds the pieces of `value`'s new value.
    ///
    /// - Throws: ``PayloadError`` for a value that does not hold every property.
    func plan(_ value: UnsafeRawBufferPointer, into pieces: inout Pieces) throws(PayloadError) {
        // At most one run of kept bytes before each replacement, and one after the last.
        let most = 2 * replacementCount + 1
        if pieces.ranges.count < most {
            pieces.ranges = Array(repeating: (0, 0, false), count: most)
        }
        if !pieces.blobs.isEmpty { pieces.blobs = [] }
        if !quickSteps.isEmpty, quickPlan(value, into: &pieces) { return }
        pieces.count = 0
        var reader = PayloadReader(value)
        pieces.propertyCount = try reader.readVarint()
        pieces.length = ByteWriter.varintLength(pieces.propertyCount)
        // The start of the run of kept bytes not yet added.
        var runStart = reader.offset
        try steps.withUnsafeBufferPointer { steps throws(PayloadError) in
            for index in steps.indices {
                let step = steps[index]
                let start = reader.offset
                try step.skip.skip(&reader)
                if let replacement = step.replacement {
                    if runStart < start { pieces.add(runStart, start, isReplacement: false) }
                    pieces.add(
                        replacement.lowerBound,
                        replacement.upperBound,
                        isReplacement: true
                    )
                    runStart = reader.offset
                } else if step.keptExternal,
                    let blob = Self.blobReference(
                        in: UnsafeRawBufferPointer(rebasing: value[start..<reader.offset]),
                        shapes[index]
                    )
                {
                    pieces.blobs.append(blob)
                }
            }
        }
        if runStart < reader.offset { pieces.add(runStart, reader.offset, isReplacement: false) }
    }

    /// Finds the pieces of `value`'s new value as ``plan(_:into:)`` does, straight from the
    /// bytes (the steps through a `PayloadReader` cost several times more); false where a
    /// property cannot be moved past at once (see ``CompiledSkip/skip(_:_:_:)``), and the
    /// pieces are then found through the reader.
    ///
    /// For an entity without relationships and external-storage attributes, so no blobs.
    /// `pieces.ranges` must have room for every piece.
    @inline(__always)
    private func quickPlan(_ value: UnsafeRawBufferPointer, into pieces: inout Pieces) -> Bool {
        guard let base = value.baseAddress else { return false }
        let end = value.count
        var offset = 0
        guard let propertyCount = PayloadReader.varint(base, end, &offset) else { return false }
        var length = ByteWriter.varintLength(propertyCount)
        var count = 0
        let found = quickSteps.withUnsafeBufferPointer { steps in
            pieces.ranges.withUnsafeMutableBufferPointer { ranges in
                // The start of the run of kept bytes not yet added.
                var runStart = offset
                for index in steps.indices {
                    let start = offset
                    guard steps[index].skip.skip(base, end, &offset) else { return false }
                    guard steps[index].replacementStart >= 0 else { continue }
                    let replacement =
                        Int(steps[index].replacementStart)..<Int(steps[index].replacementEnd)
                    if runStart < start {
                        ranges[count] = (runStart, start, false)
                        count += 1
                        length += start - runStart
                    }
                    ranges[count] = (replacement.lowerBound, replacement.upperBound, true)
                    count += 1
                    length += replacement.count
                    runStart = offset
                }
                if runStart < offset {
                    ranges[count] = (runStart, offset, false)
                    count += 1
                    length += offset - runStart
                }
                return true
            }
        }
        guard found else { return false }
        pieces.propertyCount = propertyCount
        pieces.count = count
        pieces.length = length
        return true
    }

    /// Writes the new value `pieces` describe (found by ``plan(_:into:)`` in `value`) to
    /// `target`, which is `pieces.length` bytes long.
    func write(
        _ value: UnsafeRawBufferPointer,
        _ pieces: Pieces,
        into target: UnsafeMutableRawBufferPointer
    ) {
        guard let base = target.baseAddress, let source = value.baseAddress else { return }
        var offset = ByteWriter.storeVarint(pieces.propertyCount, at: 0, in: target)
        replacementBytes.withUnsafeBytes { replacements in
            pieces.ranges.withUnsafeBufferPointer { ranges in
                for piece in ranges[..<pieces.count] {
                    let count = piece.end - piece.start
                    let from = piece.isReplacement ? replacements.baseAddress : source
                    guard let from else { continue }
                    (base + offset).copyMemory(from: from + piece.start, byteCount: count)
                    offset += count
                }
            }
        }
    }

    /// Adds the put of `value`'s new value to `transaction`.
    ///
    /// - Throws: ``PayloadError`` for a value that does not hold every property (nothing is
    ///   added).
    func put(
        _ value: UnsafeRawBufferPointer,
        key: ObjectKey,
        entity: EntityTag,
        pieces: inout Pieces,
        into transaction: inout some FilledPutSink
    ) throws(PayloadError) {
        try plan(value, into: &pieces)
        let found = pieces
        transaction.put(
            key: key,
            entity: entity,
            valueCount: found.length,
            blobs: found.blobs,
            isInsert: false
        ) { target in
            write(value, found, into: target)
        }
    }

    /// The new value of `value` as one array, the way a batch update wrote it before splicing
    /// (every property read and written in turn): the reference the tests hold splices to.
    func reference(_ value: UnsafeRawBufferPointer) throws(PayloadError) -> [UInt8] {
        var writer = PayloadWriter()
        var reader = PayloadReader(value)
        writer.write(varint: try reader.readVarint())
        for (index, shape) in shapes.enumerated() {
            let start = reader.offset
            try shape.skip(&reader)
            if let replacement = steps[index].replacement {
                writer.write(raw: replacementBytes[replacement])
                continue
            }
            writer.write(bytes: UnsafeRawBufferPointer(rebasing: value[start..<reader.offset]))
        }
        return writer.bytes
    }

    /// The blob an external-storage value refers to, if it is stored in one.
    static func blobReference(
        in bytes: UnsafeRawBufferPointer,
        _ shape: ValueShape
    ) -> BlobID? {
        var reader = PayloadReader(bytes)
        if shape.isOptional, (try? reader.readByte()) != 1 { return nil }
        guard (try? reader.readByte()) == 1,
            let raw = try? reader.readRaw(count: LogFormat.blobIDLength)
        else { return nil }
        return BlobID(bytes: Array(raw))
    }
}
