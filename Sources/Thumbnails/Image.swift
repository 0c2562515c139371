/// An 8-bit raster image: grey, RGB or RGBA pixels, rows packed top to bottom.
///
/// Images are values. Make one from scalar fields with ``init(rendering:fields:width:height:)``,
/// shrink it with ``resized(toFit:)``, and turn it into PNG bytes with
/// ``pngBytes(compressionLevel:)``:
///
/// ```swift
/// let image = try Image(rendering: .twoChemical, fields: [u, v], width: 640, height: 640)
/// let png = try image.resized(toFit: 160).pngBytes()
/// ```
public struct Image: Sendable, Equatable {
    /// The width in pixels, at least 1.
    public let width: Int

    /// The height in pixels, at least 1.
    public let height: Int

    /// The channel layout.
    public let format: PixelFormat

    /// The samples: `width * height * format.channelCount` bytes, row by row from the top, each
    /// pixel's channels together.
    public internal(set) var pixels: [UInt8]

    /// The side of the bounding square of a thumbnail, as the lab has always used: 160.
    public static let thumbnailSide = 160

    /// Makes an image from its pixels.
    ///
    /// - Parameters:
    ///   - width: The width in pixels, at least 1.
    ///   - height: The height in pixels, at least 1.
    ///   - format: The channel layout.
    ///   - pixels: `width * height * format.channelCount` bytes, row by row from the top.
    /// - Throws: ``ThumbnailError/Code/invalidArgument`` if a dimension is less than 1 or the
    ///   pixel count does not match.
    public init(
        width: Int,
        height: Int,
        format: PixelFormat,
        pixels: [UInt8]
    ) throws(ThumbnailError) {
        let expected = try Self.byteCount(width: width, height: height, format: format)
        guard pixels.count == expected else {
            throw ThumbnailError(
                .invalidArgument,
                "a \(width)x\(height) \(format) image needs \(expected) bytes, not \(pixels.count)"
            )
        }
        self.width = width
        self.height = height
        self.format = format
        self.pixels = pixels
    }

    /// Makes an image of one colour.
    ///
    /// - Parameters:
    ///   - width: The width in pixels, at least 1.
    ///   - height: The height in pixels, at least 1.
    ///   - format: The channel layout.
    ///   - color: One value per channel of `format`.
    /// - Throws: ``ThumbnailError/Code/invalidArgument`` if a dimension is less than 1 or
    ///   `color` does not have one value per channel.
    public init(
        width: Int,
        height: Int,
        format: PixelFormat,
        filledWith color: [UInt8]
    ) throws(ThumbnailError) {
        let count = try Self.byteCount(width: width, height: height, format: format)
        guard color.count == format.channelCount else {
            throw ThumbnailError(
                .invalidArgument,
                "a \(format) colour needs \(format.channelCount) values, not \(color.count)"
            )
        }
        var pixels = [UInt8](repeating: 0, count: count)
        for offset in stride(from: 0, to: count, by: color.count) {
            for channel in 0..<color.count {
                pixels[offset + channel] = color[channel]
            }
        }
        self.width = width
        self.height = height
        self.format = format
        self.pixels = pixels
    }

    /// Makes an image from pixels already checked by the caller.
    init(uncheckedWidth width: Int, height: Int, format: PixelFormat, pixels: [UInt8]) {
        assert(pixels.count == width * height * format.channelCount)
        self.width = width
        self.height = height
        self.format = format
        self.pixels = pixels
    }

    /// The bytes of one row of pixels.
    public var bytesPerRow: Int { width * format.channelCount }

    /// The channel values of the pixel at column `x`, row `y`.
    ///
    /// - Precondition: `0 <= x < width` and `0 <= y < height`.
    public func pixel(x: Int, y: Int) -> [UInt8] {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel (\(x), \(y)) is outside")
        let start = (y * width + x) * format.channelCount
        return Array(pixels[start..<start + format.channelCount])
    }

    /// The number of bytes of a `width` by `height` image, or an error if either is below 1
    /// or the count overflows.
    static func byteCount(
        width: Int,
        height: Int,
        format: PixelFormat
    ) throws(ThumbnailError) -> Int {
        guard width >= 1, height >= 1 else {
            throw ThumbnailError(
                .invalidArgument,
                "image dimensions must be at least 1x1, not \(width)x\(height)"
            )
        }
        let (area, areaOverflow) = width.multipliedReportingOverflow(by: height)
        let (count, countOverflow) = area.multipliedReportingOverflow(by: format.channelCount)
        guard !areaOverflow, !countOverflow else {
            throw ThumbnailError(
                .invalidArgument,
                "image dimensions \(width)x\(height) are too large"
            )
        }
        return count
    }
}
