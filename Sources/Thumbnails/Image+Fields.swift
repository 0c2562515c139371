extension Image {
    /// Draws scalar fields as an image, one pixel per cell.
    ///
    /// Each field holds `width * height` values, row by row from the top (row-major), one field
    /// per chemical in the order the rendering names them (`[u, v]` or `[a, b, c]`).
    ///
    /// ```swift
    /// let image = try Image(rendering: .twoChemical, fields: [u, v], width: 640, height: 640)
    /// ```
    ///
    /// - Parameters:
    ///   - rendering: How values become colours.
    ///   - fields: The fields, as many as `rendering.fieldCount`.
    ///   - width: Cells per row, at least 1.
    ///   - height: Rows, at least 1.
    /// - Throws: ``ThumbnailError/Code/invalidArgument`` if the number of fields, a field's
    ///   length, a dimension or a value range is wrong.
    /// - Complexity: O(`width * height`).
    public init(
        rendering: FieldRendering,
        fields: [[Float]],
        width: Int,
        height: Int
    ) throws(ThumbnailError) {
        try Self.validate(
            rendering: rendering,
            counts: fields.map(\.count),
            width: width,
            height: height
        )
        self = Self.withBuffers(of: fields[...], collected: []) { buffers in
            Self.render(rendering, buffers, width: width, height: height)
        }
    }

    /// Draws scalar fields held in raw buffers as an image, one pixel per cell.
    ///
    /// The same as ``init(rendering:fields:width:height:)`` for fields that live in buffers,
    /// for example `ContiguousArray.withUnsafeBufferPointer`; the buffers are only read during
    /// the call.
    ///
    /// - Throws: ``ThumbnailError/Code/invalidArgument`` if the number of fields, a field's
    ///   length, a dimension or a value range is wrong.
    public init(
        rendering: FieldRendering,
        fieldBuffers: [UnsafeBufferPointer<Float>],
        width: Int,
        height: Int
    ) throws(ThumbnailError) {
        try Self.validate(
            rendering: rendering,
            counts: fieldBuffers.map(\.count),
            width: width,
            height: height
        )
        self = Self.render(rendering, fieldBuffers, width: width, height: height)
    }

    // MARK: - Private

    private static func validate(
        rendering: FieldRendering,
        counts: [Int],
        width: Int,
        height: Int
    ) throws(ThumbnailError) {
        let cellCount = try byteCount(width: width, height: height, format: .gray)
        guard counts.count == rendering.fieldCount else {
            throw ThumbnailError(
                .invalidArgument,
                "this rendering draws \(rendering.fieldCount) field(s), but \(counts.count) were given"
            )
        }
        for (index, count) in counts.enumerated() where count != cellCount {
            throw ThumbnailError(
                .invalidArgument,
                "field \(index) has \(count) values, but a \(width)x\(height) grid has \(cellCount)"
            )
        }
        switch rendering {
        case .colorMap(_, let range), .gray(let range):
            guard range.lowerBound.isFinite, range.upperBound.isFinite,
                range.lowerBound < range.upperBound
            else {
                throw ThumbnailError(
                    .invalidArgument,
                    "value range \(range) must be finite and wider than a point"
                )
            }
        case .twoChemical, .threeChemical:
            break
        }
    }

    /// Calls `body` with buffers over every array, nesting `withUnsafeBufferPointer`.
    private static func withBuffers<Result>(
        of arrays: ArraySlice<[Float]>,
        collected: [UnsafeBufferPointer<Float>],
        _ body: ([UnsafeBufferPointer<Float>]) -> Result
    ) -> Result {
        guard let first = arrays.first else { return body(collected) }
        return first.withUnsafeBufferPointer { buffer in
            withBuffers(of: arrays.dropFirst(), collected: collected + [buffer], body)
        }
    }

    /// Renders validated fields.
    private static func render(
        _ rendering: FieldRendering,
        _ fields: [UnsafeBufferPointer<Float>],
        width: Int,
        height: Int
    ) -> Image {
        let cellCount = width * height
        let format = rendering.pixelFormat
        let pixels = [UInt8](unsafeUninitializedCapacity: cellCount * format.channelCount) {
            output,
            count in
            switch rendering {
            case .twoChemical:
                let u = fields[0]
                let v = fields[1]
                for cell in 0..<cellCount {
                    let red = unitByte(u[cell])
                    output[cell * 3] = red
                    output[cell * 3 + 1] = red
                    output[cell * 3 + 2] = unitByte(v[cell])
                }
            case .threeChemical:
                let a = fields[0]
                let b = fields[1]
                let c = fields[2]
                for cell in 0..<cellCount {
                    output[cell * 3] = unitByte(a[cell])
                    output[cell * 3 + 1] = unitByte(b[cell])
                    output[cell * 3 + 2] = unitByte(c[cell])
                }
            case .colorMap(let map, let range):
                let scale = Float(ColorMap.entryCount - 1) / (range.upperBound - range.lowerBound)
                map.bytes.withUnsafeBufferPointer { table in
                    let field = fields[0]
                    for cell in 0..<cellCount {
                        let entry = Int(
                            scaledByte(field[cell], from: range.lowerBound, scale: scale)
                        )
                        output[cell * 3] = table[entry * 3]
                        output[cell * 3 + 1] = table[entry * 3 + 1]
                        output[cell * 3 + 2] = table[entry * 3 + 2]
                    }
                }
            case .gray(let range):
                let scale = 255 / (range.upperBound - range.lowerBound)
                let field = fields[0]
                for cell in 0..<cellCount {
                    output[cell] = scaledByte(field[cell], from: range.lowerBound, scale: scale)
                }
            }
            count = cellCount * format.channelCount
        }
        return Image(uncheckedWidth: width, height: height, format: format, pixels: pixels)
    }
}

/// A value in [0, 1] as the nearest byte; below 0 and NaN give 0, above 1 gives 255.
@inline(__always)
private func unitByte(_ value: Float) -> UInt8 {
    scaledByte(value, from: 0, scale: 255)
}

/// `(value - lowerBound) * scale` rounded to the nearest byte and clamped to 0...255; NaN gives 0.
@inline(__always)
private func scaledByte(_ value: Float, from lowerBound: Float, scale: Float) -> UInt8 {
    let scaled = (value - lowerBound) * scale + 0.5
    // `x > 0 ? x : 0` is also 0 for NaN; both selects compile to branch-free min/max.
    let clamped = min(scaled > 0 ? scaled : 0, 255)
    return UInt8(clamped)
}
