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
        // The partial value's encodings, in index order.
        var changes: [(index: Int, bytes: Range<Int>)] = []
        var reader = PayloadReader(partial)
        let count = try reader.readVarint()
        guard count > 0, count <= UInt64(shapes.count) else {
            throw PayloadError.malformed(offset: 0, "partial value count \(count)")
        }
        changes.reserveCapacity(Int(count))
        for _ in 0..<count {
            let at = reader.offset
            let index = try reader.readVarint()
            guard index < UInt64(shapes.count), Int(index) > (changes.last?.index ?? -1) else {
                throw PayloadError.malformed(offset: at, "partial value property index \(index)")
            }
            let start = reader.offset
            try shapes[Int(index)].skip(&reader)
            changes.append((Int(index), start..<reader.offset))
        }
        guard reader.offset == partial.count else {
            throw PayloadError.malformed(offset: reader.offset, "bytes after a partial value")
        }
        var output = PayloadWriter()
        var source = PayloadReader(base)
        let propertyCount = try source.readVarint()
        guard propertyCount == UInt64(shapes.count) else {
            throw PayloadError.malformed(
                offset: 0,
                "property count \(propertyCount) where the entity has \(shapes.count)"
            )
        }
        output.write(varint: propertyCount)
        var next = 0
        for (index, shape) in shapes.enumerated() {
            let start = source.offset
            try shape.skip(&source)
            if next < changes.count, changes[next].index == index {
                output.write(bytes: UnsafeRawBufferPointer(rebasing: partial[changes[next].bytes]))
                next += 1
            } else {
                output.write(bytes: UnsafeRawBufferPointer(rebasing: base[start..<source.offset]))
            }
        }
        return output.bytes
    }
}
