import Foundation
import ObjectLogStore

/// A patch record's payload (FORMAT.md, section 10): new encodings of some of an object's
/// properties, by property index, which replace those of its base's value.
///
/// A batch update writes one for each object it changes, the same bytes for all of them,
/// instead of reading and rewriting every object's whole record.
enum PartialValue {
    /// The partial value that sets the properties of `replacements` (property index → the
    /// new value's encoding), in ascending index order.
    ///
    /// - Precondition: `replacements` is not empty.
    static func encode(_ replacements: [Int: [UInt8]]) -> [UInt8] {
        precondition(!replacements.isEmpty, "a partial value changes at least one property")
        var writer = PayloadWriter()
        writer.write(varint: UInt64(replacements.count))
        for index in replacements.keys.sorted() {
            writer.write(varint: UInt64(index))
            writer.write(raw: replacements[index]!)
        }
        return writer.bytes
    }

    /// `base`, a whole value of an entity whose properties have `shapes`, with the properties
    /// `partial` lists replaced by its encodings.
    ///
    /// - Throws: ``PayloadError`` for a partial value that lists no property, lists them out
    ///   of order or beyond the entity's, or has bytes after its last value, and for a base
    ///   that does not hold every property.
    static func merge(
        _ base: UnsafeRawBufferPointer,
        _ partial: UnsafeRawBufferPointer,
        shapes: [ValueShape]
    ) throws(PayloadError) -> [UInt8] {
        var failure: PayloadError?
        let merged = [UInt8](unsafeUninitializedCapacity: base.count + partial.count) {
            buffer,
            initialized in
            initialized = 0
            do {
                initialized = try merge(
                    base,
                    partial,
                    shapes: shapes,
                    into: UnsafeMutableRawBufferPointer(buffer)
                )
            } catch let error as PayloadError {
                failure = error
            } catch {
                failure = .malformed(offset: 0, "\(error)")
            }
        }
        if let failure { throw failure }
        return merged
    }

    /// Writes the merge of ``merge(_:_:shapes:)`` into `output`, which has room for
    /// `base.count + partial.count` bytes (the merged value is never longer); returns the
    /// bytes written.
    ///
    /// The partial value is checked whole first, then read again beside the base: no list of
    /// its changes is kept (a read of many patched objects merges each).
    static func merge(
        _ base: UnsafeRawBufferPointer,
        _ partial: UnsafeRawBufferPointer,
        shapes: [ValueShape],
        into output: UnsafeMutableRawBufferPointer
    ) throws(PayloadError) -> Int {
        precondition(output.count >= base.count + partial.count, "no room for a merged value")
        var reader = PayloadReader(partial)
        let count = try reader.readVarint()
        guard count > 0, count <= UInt64(shapes.count) else {
            throw PayloadError.malformed(offset: 0, "partial value count \(count)")
        }
        let changesStart = reader.offset
        var previous = -1
        for _ in 0..<count {
            let at = reader.offset
            let index = try reader.readVarint()
            guard index < UInt64(shapes.count), Int(index) > previous else {
                throw PayloadError.malformed(offset: at, "partial value property index \(index)")
            }
            previous = Int(index)
            try shapes[Int(index)].skip(&reader)
        }
        guard reader.offset == partial.count else {
            throw PayloadError.malformed(offset: reader.offset, "bytes after a partial value")
        }
        return try write(base, partial[changesStart...], shapes: shapes, into: output)
    }

    /// ``merge(_:_:shapes:into:)`` straight from the bytes where `skips` (the shapes' compiled
    /// skips) can move past every value at once, through the payload reader otherwise (which
    /// then also says what is wrong): the merge of every patched object a read meets.
    static func merge(
        _ base: UnsafeRawBufferPointer,
        _ partial: UnsafeRawBufferPointer,
        shapes: [ValueShape],
        skips: [CompiledSkip],
        into output: UnsafeMutableRawBufferPointer
    ) throws(PayloadError) -> Int {
        if let written = quickMerge(base, partial, skips: skips, into: output) { return written }
        return try merge(base, partial, shapes: shapes, into: output)
    }

    /// The merge straight from the bytes; nil where a value cannot be moved past at once or
    /// anything is not as ``merge(_:_:shapes:into:)`` requires (which then says what).
    @inline(__always)
    private static func quickMerge(
        _ base: UnsafeRawBufferPointer,
        _ partial: UnsafeRawBufferPointer,
        skips: [CompiledSkip],
        into output: UnsafeMutableRawBufferPointer
    ) -> Int? {
        guard let source = base.baseAddress, let changes = partial.baseAddress,
            let target = output.baseAddress, output.count >= base.count + partial.count
        else { return nil }
        let (baseEnd, partialEnd) = (base.count, partial.count)
        var (at, from) = (0, 0)
        guard let count = PayloadReader.varint(changes, partialEnd, &from), count > 0,
            let propertyCount = PayloadReader.varint(source, baseEnd, &at),
            propertyCount == UInt64(skips.count), count <= propertyCount
        else { return nil }
        var written = ByteWriter.storeVarint(propertyCount, at: 0, in: output)
        var left = count
        // The next change's property index (past the last property when none is left).
        var next = Int.max
        func readIndex() -> Bool {
            guard left > 0 else {
                next = Int.max
                return true
            }
            left -= 1
            let previous = next == Int.max ? -1 : next
            guard let index = PayloadReader.varint(changes, partialEnd, &from),
                index < propertyCount, Int(index) > previous
            else { return false }
            next = Int(index)
            return true
        }
        next = -1
        guard readIndex() else { return nil }
        return skips.withUnsafeBufferPointer { skips -> Int? in
            for index in skips.indices {
                let start = at
                guard skips[index].skip(source, baseEnd, &at) else { return nil }
                if index == next {
                    let valueStart = from
                    guard skips[index].skip(changes, partialEnd, &from) else { return nil }
                    (target + written).copyMemory(
                        from: changes + valueStart,
                        byteCount: from - valueStart
                    )
                    written += from - valueStart
                    guard readIndex() else { return nil }
                } else {
                    (target + written).copyMemory(from: source + start, byteCount: at - start)
                    written += at - start
                }
            }
            // Every change used, and nothing after the partial value's last.
            guard next == Int.max, from == partialEnd else { return nil }
            return written
        }
    }

    /// Writes `base` with the changes of `changes` (a checked partial value's list, after its
    /// count) in place of its values into `output`; returns the bytes written.
    private static func write(
        _ base: UnsafeRawBufferPointer,
        _ changes: Slice<UnsafeRawBufferPointer>,
        shapes: [ValueShape],
        into output: UnsafeMutableRawBufferPointer
    ) throws(PayloadError) -> Int {
        var source = PayloadReader(base)
        let propertyCount = try source.readVarint()
        guard propertyCount == UInt64(shapes.count) else {
            throw PayloadError.malformed(
                offset: 0,
                "property count \(propertyCount) where the entity has \(shapes.count)"
            )
        }
        var written = ByteWriter.storeVarint(propertyCount, at: 0, in: output)
        func copy(_ bytes: Slice<UnsafeRawBufferPointer>) {
            UnsafeMutableRawBufferPointer(rebasing: output[written..<(written + bytes.count)])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes))
            written += bytes.count
        }
        let partial = UnsafeRawBufferPointer(rebasing: changes)
        var reader = PayloadReader(partial)
        var next = reader.offset < partial.count ? Int(try reader.readVarint()) : Int.max
        for (index, shape) in shapes.enumerated() {
            let start = source.offset
            try shape.skip(&source)
            if index == next {
                let from = reader.offset
                try shape.skip(&reader)
                copy(partial[from..<reader.offset])
                next = reader.offset < partial.count ? Int(try reader.readVarint()) : Int.max
            } else {
                copy(base[start..<source.offset])
            }
        }
        return written
    }
}
