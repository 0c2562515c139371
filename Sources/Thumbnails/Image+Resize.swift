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

    /// Area-averages `input` into `output`: rows of horizontal sums, then weighted rows.
    private static func resample(
        _ input: UnsafeBufferPointer<UInt8>,
        into output: UnsafeMutableBufferPointer<UInt8>,
        sourceWidth: Int,
        channels: Int,
        columns: AreaWeights,
        rows: AreaWeights
    ) {
        let destinationWidth = columns.destinationCount
        let rowLength = destinationWidth * channels
        // Safe: the weights of one destination pixel sum to `columns.total * rows.total`, which
        // times 255 is far below Int.max for any image that fits in memory, so `&+` and `&*`
        // below cannot overflow.
        let denominator = columns.total * rows.total
        let half = denominator / 2
        var horizontal = [Int](repeating: 0, count: rowLength)
        var accumulated = [Int](repeating: 0, count: rowLength)
        horizontal.withUnsafeMutableBufferPointer { horizontal in
            accumulated.withUnsafeMutableBufferPointer { accumulated in
                for destinationRow in 0..<rows.destinationCount {
                    accumulated.update(repeating: 0)
                    for (sourceRow, rowWeight) in rows.contributions(to: destinationRow) {
                        sumColumns(
                            of: UnsafeBufferPointer(
                                rebasing: input[(sourceRow * sourceWidth * channels)...]
                            ),
                            into: horizontal,
                            channels: channels,
                            columns: columns
                        )
                        for index in 0..<rowLength {
                            accumulated[index] =
                                accumulated[index] &+ horizontal[index] &* rowWeight
                        }
                    }
                    let base = destinationRow * rowLength
                    for index in 0..<rowLength {
                        output[base + index] = UInt8(
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
        of row: UnsafeBufferPointer<UInt8>,
        into sums: UnsafeMutableBufferPointer<Int>,
        channels: Int,
        columns: AreaWeights
    ) {
        for column in 0..<columns.destinationCount {
            let first = columns.firstSource[column]
            let weights = columns.weightStart[column]..<columns.weightStart[column + 1]
            for channel in 0..<channels {
                var sum = 0
                var source = first * channels + channel
                for weightIndex in weights {
                    sum = sum &+ Int(row[source]) &* columns.weights[weightIndex]
                    source = source &+ channels
                }
                sums[column * channels + channel] = sum
            }
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
    /// The first source pixel contributing to each destination pixel.
    let firstSource: [Int]
    /// Where each destination pixel's weights start in `weights`; one extra entry at the end.
    let weightStart: [Int]
    /// The weights of consecutive source pixels, destination pixel after destination pixel.
    let weights: [Int]
    /// The sum of the weights of any destination pixel.
    let total: Int

    init(source: Int, destination: Int) {
        precondition(source >= 1 && destination >= 1)
        let divisor = greatestCommonDivisor(source, destination)
        var firstSource: [Int] = []
        var weightStart: [Int] = [0]
        var weights: [Int] = []
        firstSource.reserveCapacity(destination)
        weightStart.reserveCapacity(destination + 1)
        for index in 0..<destination {
            let start = index * source
            let end = start + source
            let first = start / destination
            let last = (end - 1) / destination
            firstSource.append(first)
            for sourceIndex in first...last {
                let overlap =
                    min(end, (sourceIndex + 1) * destination)
                    - max(start, sourceIndex * destination)
                weights.append(overlap / divisor)
            }
            weightStart.append(weights.count)
        }
        self.destinationCount = destination
        self.firstSource = firstSource
        self.weightStart = weightStart
        self.weights = weights
        self.total = source / divisor
    }

    /// The contributing source pixels of destination pixel `index` with their weights.
    func contributions(to index: Int) -> [(source: Int, weight: Int)] {
        let range = weightStart[index]..<weightStart[index + 1]
        return range.map { (firstSource[index] + $0 - range.lowerBound, weights[$0]) }
    }
}

private func greatestCommonDivisor(_ a: Int, _ b: Int) -> Int {
    var (a, b) = (a, b)
    while b != 0 {
        (a, b) = (b, a % b)
    }
    return a
}
