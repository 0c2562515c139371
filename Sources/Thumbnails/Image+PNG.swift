import CPNGSupport

extension Image {
    /// The largest image ``init(pngBytes:maximumPixelCount:)`` decodes unless told otherwise:
    /// 8192 x 8192 pixels.
    public static let defaultMaximumPixelCount = 8192 * 8192

    /// The default zlib compression level of ``pngBytes(compressionLevel:)``: 6, zlib's own
    /// balance of size and speed.
    public static let defaultCompressionLevel = 6

    /// Encodes the image as PNG bytes in memory, through libpng.
    ///
    /// Grey images become 8-bit greyscale PNGs, RGB and RGBA images 8-bit truecolour PNGs
    /// (with alpha), not interlaced, with libpng's adaptive row filters.
    ///
    /// ```swift
    /// let bytes = try thumbnail.pngBytes()                      // level 6
    /// let smallest = try thumbnail.pngBytes(compressionLevel: 9)
    /// ```
    ///
    /// - Parameter compressionLevel: The zlib level, 0 (store) to 9 (smallest, slowest).
    /// - Returns: A complete PNG file.
    /// - Throws: ``ThumbnailError/Code/invalidArgument`` for a level outside 0...9,
    ///   ``ThumbnailError/Code/pngEncodingFailed`` or ``ThumbnailError/Code/outOfMemory`` if
    ///   libpng fails.
    public func pngBytes(
        compressionLevel: Int = Image.defaultCompressionLevel
    ) throws(ThumbnailError) -> [UInt8] {
        guard (0...9).contains(compressionLevel) else {
            throw ThumbnailError(
                .invalidArgument,
                "PNG compression level must be between 0 and 9, not \(compressionLevel)"
            )
        }
        guard let width = UInt32(exactly: width), let height = UInt32(exactly: height) else {
            throw ThumbnailError(
                .invalidArgument,
                "image of \(self.width)x\(self.height) pixels is too large for PNG"
            )
        }
        var message = [CChar](repeating: 0, count: Int(CPNG_MESSAGE_CAPACITY))
        var output: UnsafeMutablePointer<UInt8>?
        var size = 0
        let status = pixels.withUnsafeBufferPointer { pixels in
            Int(
                cpng_encode(
                    pixels.baseAddress,
                    width,
                    height,
                    Int32(format.channelCount),
                    Int32(compressionLevel),
                    &output,
                    &size,
                    &message
                )
            )
        }
        defer { cpng_free(output) }
        guard status == CPNG_OK, let output else {
            let code: ThumbnailError.Code =
                switch status {
                case CPNG_ERROR_MEMORY: .outOfMemory
                case CPNG_ERROR_ARGUMENT: .invalidArgument
                default: .pngEncodingFailed
                }
            throw ThumbnailError(code, "PNG encoding failed: \(Self.string(message))")
        }
        return Array(UnsafeBufferPointer(start: output, count: size))
    }

    /// Decodes PNG bytes held in memory, through libpng.
    ///
    /// Every valid PNG is accepted and normalised to 8 bits per channel: greyscale becomes
    /// ``PixelFormat/gray``, truecolour and palette images ``PixelFormat/rgb``, and anything with
    /// transparency (an alpha channel or a `tRNS` chunk) ``PixelFormat/rgba``; 16-bit samples are
    /// scaled down and low bit depths expanded.
    ///
    /// Damaged input never crashes: a truncated file, garbage, a bad CRC or zlib stream all
    /// throw. Before allocating pixel memory the decoder checks that the declared dimensions
    /// could come from the bytes present (deflate cannot expand data more than about 1032
    /// times), so a tiny file cannot claim a huge image.
    ///
    /// ```swift
    /// let image = try Image(pngBytes: bytes)
    /// ```
    ///
    /// - Parameters:
    ///   - pngBytes: A complete PNG file.
    ///   - maximumPixelCount: The most pixels accepted; by default
    ///     ``defaultMaximumPixelCount``.
    /// - Throws: ``ThumbnailError/Code/notPNG`` if the signature is missing,
    ///   ``ThumbnailError/Code/imageTooLarge`` if the dimensions are implausible or over the
    ///   limit, ``ThumbnailError/Code/pngDecodingFailed`` if libpng rejects the data.
    public init(
        pngBytes: [UInt8],
        maximumPixelCount: Int = Image.defaultMaximumPixelCount
    ) throws(ThumbnailError) {
        var message = [CChar](repeating: 0, count: Int(CPNG_MESSAGE_CAPACITY))
        var output: UnsafeMutablePointer<UInt8>?
        var width: UInt32 = 0
        var height: UInt32 = 0
        var channels: Int32 = 0
        let limit = UInt64(max(0, maximumPixelCount))
        let status = pngBytes.withUnsafeBufferPointer { bytes in
            Int(
                cpng_decode(
                    bytes.baseAddress,
                    bytes.count,
                    limit,
                    &output,
                    &width,
                    &height,
                    &channels,
                    &message
                )
            )
        }
        defer { cpng_free(output) }
        guard status == CPNG_OK, let output, let format = PixelFormat(rawValue: Int(channels))
        else {
            let code: ThumbnailError.Code =
                switch status {
                case CPNG_ERROR_SIGNATURE: .notPNG
                case CPNG_ERROR_DIMENSIONS: .imageTooLarge
                case CPNG_ERROR_MEMORY: .outOfMemory
                case CPNG_ERROR_ARGUMENT: .invalidArgument
                default: .pngDecodingFailed
                }
            throw ThumbnailError(code, "cannot decode PNG: \(Self.string(message))")
        }
        let count = Int(width) * Int(height) * format.channelCount
        self.init(
            uncheckedWidth: Int(width),
            height: Int(height),
            format: format,
            pixels: Array(UnsafeBufferPointer(start: output, count: count))
        )
    }

    /// The version of libpng in use, for example `1.6.39`.
    public static var libpngVersion: String {
        guard let version = cpng_libpng_version() else { return "unknown" }
        return String(cString: version)
    }

    /// A NUL-terminated C message buffer as a String.
    private static func string(_ message: [CChar]) -> String {
        let bytes = message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.isEmpty ? "unknown error" : text
    }
}
