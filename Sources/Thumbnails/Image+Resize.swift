extension Image {
    /// Scales the image so that it fits a `side` by `side` square, keeping its aspect ratio.
    ///
    /// The longer side becomes `side` pixels and the shorter one is scaled in proportion
    /// (rounded, at least 1). Resampling is by area averaging, see ``resized(width:height:)``.
    ///
    /// ```swift
    /// let thumbnail = try image.resized(toFit: Image.thumbnailSide)  // 640x480 -> 160x120
    /// ```
    ///
    /// - Parameter side: The side of the bounding square, at least 1; by default 160.
    /// - Returns: The scaled image, in the same pixel format.
    /// - Throws: ``ThumbnailError/Code/invalidArgument`` if `side` is less than 1.
    public func resized(toFit side: Int = Image.thumbnailSide) throws(ThumbnailError) -> Image {
        guard side >= 1 else {
            throw ThumbnailError(
                .invalidArgument,
                "the bounding square side must be at least 1, not \(side)"
            )
        }
        let (width, height) = Self.fittingSize(width: self.width, height: self.height, side: side)
        return try resized(width: width, height: height)
    }

    /// Scales the image to exactly `width` by `height` pixels by area averaging.
    ///
    /// Every destination pixel is the average of the source area it covers, each source pixel
    /// weighted by the exact fraction of it inside that area, so nothing aliases and a ratio
    /// that is not a whole number is handled without rounding the geometry. The arithmetic is
    /// exact integer arithmetic on the 8-bit values, rounded once at the end (halves up): for
    /// a whole-number ratio such as 640 to 160 each result is exactly the rounded mean of its
    /// 4 by 4 source block. Channels are averaged independently (alpha is not premultiplied).
    /// Enlarging works too, as area sampling.
    ///
    /// - Parameters:
    ///   - width: The new width, at least 1.
    ///   - height: The new height, at least 1.
    /// - Returns: The scaled image, in the same pixel format.
    /// - Throws: ``ThumbnailError/Code/invalidArgument`` if a dimension is less than 1.
    /// - Complexity: O(source pixels + destination pixels) times the channel count.
    public func resized(width: Int, height: Int) throws(ThumbnailError) -> Image {
        let byteCount = try Self.byteCount(width: width, height: height, format: format)
        if width == self.width && height == self.height {
            return self
        }
        let columns = AreaWeights(source: self.width, destination: width)
        let rows = AreaWeights(source: self.height, destination: height)
        let pixels = [UInt8](unsafeUninitializedCapacity: byteCount) { output, count in
            self.pixels.withUnsafeBufferPointer { input in
                Self.resample(
                    input,
                    into: output,
                    sourceWidth: self.width,
                    channels: format.channelCount,
                    columns: columns,
                    rows: rows
                )
            }
            count = byteCount
        }
        return Image(uncheckedWidth: width, height: height, format: format, pixels: pixels)
    }

    /// The size that fits a `side` square with the aspect ratio of `width` by `height`.
    static func fittingSize(width: Int, height: Int, side: Int) -> (width: Int, height: Int) {
        if width >= height {
            return (side, max(1, (height * side + width / 2) / width))
        } else {
            return (max(1, (width * side + height / 2) / height), side)
        }
    }

    /// Area-averages `input` into `output`: weighted horizontal sums of each contributing source
    /// row, accumulated with the row's weight, then divided once.
    private static func resample(
        _ input: UnsafeBufferPointer<UInt8>,
        into output: UnsafeMutableBufferPointer<UInt8>,
        sourceWidth: Int,
        channels: Int,
        columns: AreaWeights,
        rows: AreaWeights
    ) {
        guard let input = input.baseAddress, let output = output.baseAddress else { return }
        let rowLength = columns.destinationCount * channels
        let sourceRowLength = sourceWidth * channels
        // Safe: the weights of one destination pixel multiply to `columns.total * rows.total`,
        // which times 255 is far below Int.max for any image that fits in memory, so the
        // wrapping `&+` and `&*` below never wrap.
        let denominator = columns.total * rows.total
        let half = denominator / 2
        let horizontal = UnsafeMutablePointer<Int>.allocate(capacity: rowLength)
        let accumulated = UnsafeMutablePointer<Int>.allocate(capacity: rowLength)
        defer {
            horizontal.deallocate()
            accumulated.deallocate()
        }
        columns.table.withUnsafeBufferPointer { columnTable in
            rows.table.withUnsafeBufferPointer { rowTable in
                var cursor = 0
                for destinationRow in 0..<rows.destinationCount {
                    let firstRow = rowTable[cursor]
                    let rowCount = rowTable[cursor + 1]
                    accumulated.update(repeating: 0, count: rowLength)
                    for step in 0..<rowCount {
                        let rowWeight = rowTable[cursor + 2 + step]
                        let source = input + (firstRow + step) * sourceRowLength
                        // Constant channel counts let the compiler unroll the channel loops.
                        switch channels {
                        case 1:
                            sumColumns(
                                source,
                                columnTable,
                                into: horizontal,
                                columns.destinationCount,
                                channels: 1
                            )
                        case 3:
                            sumColumns(
                                source,
                                columnTable,
                                into: horizontal,
                                columns.destinationCount,
                                channels: 3
                            )
                        default:
                            sumColumns(
                                source,
                                columnTable,
                                into: horizontal,
                                columns.destinationCount,
                                channels: 4
                            )
                        }
                        for index in 0..<rowLength {
                            accumulated[index] =
                                accumulated[index] &+ horizontal[index] &* rowWeight
                        }
                    }
                    cursor += 2 + rowCount
                    let target = output + destinationRow * rowLength
                    for index in 0..<rowLength {
                        target[index] = UInt8(
                            truncatingIfNeeded: (accumulated[index] &+ half) / denominator
                        )
                    }
                }
            }
        }
    }

    /// Weighted sums of one source row into one value per destination column and channel.
    @inline(__always)
    private static func sumColumns(
        _ row: UnsafePointer<UInt8>,
        _ table: UnsafeBufferPointer<Int>,
        into sums: UnsafeMutablePointer<Int>,
        _ destinationCount: Int,
        channels: Int
    ) {
        var cursor = 0
        for column in 0..<destinationCount {
            let count = table[cursor + 1]
            var source = row + table[cursor] * channels
            let target = sums + column * channels
            for channel in 0..<channels {
                target[channel] = 0
            }
            for step in 0..<count {
                let weight = table[cursor + 2 + step]
                for channel in 0..<channels {
                    target[channel] = target[channel] &+ Int(source[channel]) &* weight
                }
                source += channels
            }
            cursor += 2 + count
        }
    }
}

/// Exact area-averaging weights along one axis.
///
/// Put both axes on a common grid of `source * destination` units: source pixel `j` covers
/// `[j * destination, (j + 1) * destination)` and destination pixel `i` covers
/// `[i * source, (i + 1) * source)`. The overlap of the two intervals is a whole number of units,
/// so the weights are exact integers summing to `source` for every destination pixel. All are
/// divided by gcd(source, destination) to keep them small.
struct AreaWeights: Sendable {
    /// The number of destination pixels.
    let destinationCount: Int
    /// For each destination pixel in order: its first contributing source pixel, the number of
    /// contributing source pixels, then their weights.
    let table: [Int]
    /// The sum of the weights of any destination pixel.
    let total: Int

    init(source: Int, destination: Int) {
        precondition(source >= 1 && destination >= 1)
        let divisor = greatestCommonDivisor(source, destination)
        var table: [Int] = []
        table.reserveCapacity(destination * (2 + source / destination + 2))
        for index in 0..<destination {
            let start = index * source
            let end = start + source
            let first = start / destination
            let last = (end - 1) / destination
            table.append(first)
            table.append(last - first + 1)
            for sourceIndex in first...last {
                let overlap =
                    min(end, (sourceIndex + 1) * destination)
                    - max(start, sourceIndex * destination)
                table.append(overlap / divisor)
            }
        }
        self.destinationCount = destination
        self.table = table
        self.total = source / divisor
    }
}

private func greatestCommonDivisor(_ a: Int, _ b: Int) -> Int {
    var (a, b) = (a, b)
    while b != 0 {
        (a, b) = (b, a % b)
    }
    return a
}
