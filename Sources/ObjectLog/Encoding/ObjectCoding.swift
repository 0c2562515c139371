import ObjectLogStore

/// Encodes whole objects into payloads: a varint property count, then each persistent
/// property in schema order.
enum ObjectEncoder {
    /// Appends the payload of `object` to `writer`.
    static func encode(
        _ object: ManagedObject,
        entity: EntityDescription,
        to writer: inout PayloadWriter,
        blobs: inout BlobSink
    ) throws(ObjectLogError) {
        if let layout = entity.scalarLayout {
            layout.encode(object, to: &writer)
            return
        }
        writer.write(varint: UInt64(entity.accessors.count))
        for accessor in entity.accessors {
            try accessor.encode(object, to: &writer, blobs: &blobs)
        }
    }

    /// The concatenated encodings of a uniqueness group's attributes (self-delimiting, so equal
    /// bytes mean equal values).
    static func uniqueValue(
        of object: ManagedObject,
        group: [Int],
        entity: EntityDescription
    ) -> [UInt8] {
        var writer = PayloadWriter()
        var sink = BlobSink(store: nil)
        for index in group {
            try? entity.accessors[index].encode(object, to: &writer, blobs: &sink)
        }
        return writer.bytes
    }

    /// The encoding of one property (to compare values).
    static func encodedValue(
        of object: ManagedObject,
        accessor: PropertyAccessor,
        context: ManagedObjectContext?
    ) -> [UInt8] {
        var writer = PayloadWriter()
        var sink = BlobSink(store: nil, context: context)
        try? accessor.encode(object, to: &writer, blobs: &sink)
        return writer.bytes
    }
}

/// Decodes payloads into objects.
enum ObjectDecoder {
    /// Reads a payload into `object`'s property storage.
    static func decode(
        _ reader: inout PayloadReader,
        into object: ManagedObject,
        entity: EntityDescription,
        source: RecordSource?
    ) throws(ObjectLogError) {
        try readPropertyCount(&reader, entity: entity)
        if let layout = entity.scalarLayout {
            do {
                try layout.decodeValues(&reader, into: object, only: nil)
            } catch {
                throw ObjectLogError.decoding(error)
            }
            return
        }
        for accessor in entity.accessors {
            try accessor.decode(from: &reader, into: object, source: source)
        }
    }

    /// Reads into `object` only the properties whose index `wanted` marks.
    ///
    /// The others are moved past (a property that cannot be skipped is decoded). The rest of
    /// `object`'s storage keeps whatever it held.
    static func decode(
        _ reader: inout PayloadReader,
        into object: ManagedObject,
        entity: EntityDescription,
        only wanted: [Bool],
        source: RecordSource?
    ) throws(ObjectLogError) {
        try readPropertyCount(&reader, entity: entity)
        if let layout = entity.scalarLayout {
            do {
                try layout.decodeValues(&reader, into: object, only: wanted)
            } catch {
                throw ObjectLogError.decoding(error)
            }
            return
        }
        // Stop after the last wanted property: the rest of the payload is not read at all.
        guard let last = wanted.lastIndex(of: true) else { return }
        for (index, accessor) in entity.accessors[...last].enumerated() {
            if wanted[index] {
                try accessor.decode(from: &reader, into: object, source: source)
            } else if try !accessor.skip(from: &reader) {
                try accessor.decode(from: &reader, into: object, source: source)
            }
        }
    }

    /// Reads the payload's property count and checks it against the model.
    private static func readPropertyCount(
        _ reader: inout PayloadReader,
        entity: EntityDescription
    ) throws(ObjectLogError) {
        let count = try ObjectLogError.wrapping { () throws(PayloadError) in try reader.readVarint()
        }
        guard count == UInt64(entity.accessors.count) else {
            throw ObjectLogError(
                .corrupt,
                "payload of \(entity.name) has \(count) properties, the model has \(entity.accessors.count)"
            )
        }
    }

    /// Reads a payload into type-erased values by property name.
    static func decodeValues(
        _ reader: inout PayloadReader,
        entity: EntityDescription,
        source: RecordSource?
    ) throws(ObjectLogError) -> [String: Any] {
        try readPropertyCount(&reader, entity: entity)
        var values: [String: Any] = [:]
        for accessor in entity.accessors {
            values[accessor.name] = try accessor.decodeValue(from: &reader, source: source)
        }
        return values
    }
}
