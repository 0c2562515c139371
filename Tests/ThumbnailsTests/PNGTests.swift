import TestSupport
import Testing

@testable import Thumbnails

@Suite("PNG encoding and decoding through libpng")
struct PNGTests {
    @Test(
        "encode then decode gives back the same pixels",
        arguments: PixelFormat.allCases,
        [(1, 1), (7, 3), (160, 160), (161, 97)]
    )
    func roundTrip(format: PixelFormat, size: (Int, Int)) throws {
        let image = try makeRandomImage(
            width: size.0,
            height: size.1,
            format: format,
            seed: UInt64(size.0 * 31 + size.1)
        )
        let decoded = try Image(pngBytes: image.pngBytes())
        #expect(decoded == image)
    }

    @Test("every compression level round-trips and higher levels are not larger on a smooth image")
    func compressionLevels() throws {
        let field = makeSpotField(width: 160, height: 160)
        let image = try Image(
            rendering: .twoChemical,
            fields: [field.u, field.v],
            width: 160,
            height: 160
        )
        var sizes: [Int] = []
        for level in 0...9 {
            let bytes = try image.pngBytes(compressionLevel: level)
            #expect(try Image(pngBytes: bytes) == image)
            sizes.append(bytes.count)
        }
        // Level 0 stores the data: at least the raw size; level 9 compresses it.
        #expect(sizes[0] >= 160 * (160 * 3 + 1))
        #expect(sizes[9] < sizes[0] / 4)
        #expect(sizes[9] <= sizes[1])
    }

    @Test("a compression level outside 0...9 is an invalid argument")
    func badCompressionLevel() throws {
        let image = try Image(width: 2, height: 2, format: .gray, filledWith: [9])
        for level in [-1, 10] {
            #expect(throws: ThumbnailError.self) { try image.pngBytes(compressionLevel: level) }
            do {
                _ = try image.pngBytes(compressionLevel: level)
            } catch {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains("between 0 and 9"))
            }
        }
    }

    @Test("empty input and garbage are not PNG")
    func garbage() {
        var generator = SeededGenerator(seed: 7)
        let inputs: [[UInt8]] = [
            [],
            Array("hello".utf8),
            (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) },
        ]
        for input in inputs {
            #expect(
                throws: ThumbnailError(
                    .notPNG,
                    "cannot decode PNG: data does not start with the PNG signature"
                )
            ) {
                try Image(pngBytes: input)
            }
        }
    }

    @Test("every truncation of a valid PNG throws a decoding error instead of crashing")
    func truncated() throws {
        let image = try makeRandomImage(width: 12, height: 9, format: .rgba, seed: 3)
        let bytes = try image.pngBytes()
        for length in 0..<bytes.count {
            do {
                _ = try Image(pngBytes: Array(bytes[..<length]))
                Issue.record("a PNG cut to \(length) of \(bytes.count) bytes decoded")
            } catch {
                #expect(length < 8 ? error.code == .notPNG : error.code == .pngDecodingFailed)
                #expect(!error.message.isEmpty)
            }
        }
    }

    @Test(
        "garbage after a valid signature, and a flipped bit in the image data, are decoding errors"
    )
    func corrupt() throws {
        let bytes = try makeRandomImage(width: 20, height: 20, format: .rgb, seed: 5).pngBytes()
        var generator = SeededGenerator(seed: 11)
        let noise =
            HandmadePNG.signature
            + (0..<500).map { _ in UInt8.random(in: 0...255, using: &generator) }
        #expect(throws: ThumbnailError.self) { try Image(pngBytes: noise) }

        // The IDAT chunk's data starts after the signature (8), IHDR (25) and the IDAT length and type (8).
        var flippedData = bytes
        flippedData[8 + 25 + 8 + 10] ^= 0x10
        // IHDR's data starts after the signature (8) and its length and type (8): flip a bit of the width.
        var flippedHeader = bytes
        flippedHeader[8 + 8 + 3] ^= 0x01
        for (corrupted, expectedText) in [(flippedData, "idat"), (flippedHeader, "crc")] {
            do {
                _ = try Image(pngBytes: corrupted)
                Issue.record("a corrupted PNG decoded")
            } catch {
                #expect(error.code == .pngDecodingFailed)
                #expect(error.message.lowercased().contains(expectedText), "\(error.message)")
            }
        }
    }

    @Test("a header claiming more pixels than the data can hold is rejected before allocating")
    func absurdDimensions() throws {
        let rows = [[UInt8]](repeating: [0, 0, 0], count: 1)
        for (width, height) in [(1_000_000, 1_000_000), (100_000, 1_000), (30_000, 30_000)] {
            let bytes = HandmadePNG.file(
                width: UInt32(width),
                height: UInt32(height),
                bitDepth: 8,
                colorType: 2,
                rows: rows
            )
            do {
                _ = try Image(pngBytes: bytes)
                Issue.record("a \(width)x\(height) header on \(bytes.count) bytes decoded")
            } catch {
                // libpng itself refuses widths above 1,000,000; everything else is our bound.
                #expect(error.code == .imageTooLarge || error.code == .pngDecodingFailed)
                if width < 1_000_000 {
                    #expect(error.code == .imageTooLarge)
                    #expect(error.message.contains("\(width)x\(height)"))
                }
            }
        }
    }

    @Test("the caller's pixel limit is enforced")
    func pixelLimit() throws {
        let bytes = try Image(width: 100, height: 100, format: .gray, filledWith: [1]).pngBytes()
        #expect(try Image(pngBytes: bytes, maximumPixelCount: 10_000).width == 100)
        #expect(throws: ThumbnailError.self) {
            try Image(pngBytes: bytes, maximumPixelCount: 9_999)
        }
    }

    @Test(
        "palette, low bit depth, 16-bit, grey-alpha and tRNS files decode to 8-bit grey, RGB or RGBA"
    )
    func otherFlavours() throws {
        // 2x2 palette image, 8-bit indices.
        let palette = HandmadePNG.chunk("PLTE", [255, 0, 0, 0, 255, 0, 0, 0, 255])
        let indexed = HandmadePNG.file(
            width: 2,
            height: 2,
            bitDepth: 8,
            colorType: 3,
            rows: [[0, 1], [2, 0]],
            extraChunks: [palette]
        )
        let rgb = try Image(pngBytes: indexed)
        #expect(rgb.format == .rgb)
        #expect(rgb.pixels == [255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 0, 0])

        // The same with index 1 transparent: RGBA.
        let transparent = HandmadePNG.file(
            width: 2,
            height: 2,
            bitDepth: 8,
            colorType: 3,
            rows: [[0, 1], [2, 0]],
            extraChunks: [palette, HandmadePNG.chunk("tRNS", [255, 0])]
        )
        let rgba = try Image(pngBytes: transparent)
        #expect(rgba.format == .rgba)
        #expect(rgba.pixel(x: 1, y: 0) == [0, 255, 0, 0])
        #expect(rgba.pixel(x: 0, y: 1) == [0, 0, 255, 255])

        // 1-bit grey, 8 pixels wide: 0b10100000 -> 255, 0, 255, 0, 0, 0, 0, 0.
        let bits = try Image(
            pngBytes: HandmadePNG.file(
                width: 8,
                height: 1,
                bitDepth: 1,
                colorType: 0,
                rows: [[0b1010_0000]]
            )
        )
        #expect(bits.format == .gray)
        #expect(bits.pixels == [255, 0, 255, 0, 0, 0, 0, 0])

        // 16-bit RGB: 0xFFFF, 0x0000, 0x8080 scale to 255, 0, 128.
        let deep = try Image(
            pngBytes: HandmadePNG.file(
                width: 1,
                height: 1,
                bitDepth: 16,
                colorType: 2,
                rows: [[255, 255, 0, 0, 128, 128]]
            )
        )
        #expect(deep.format == .rgb)
        #expect(deep.pixels == [255, 0, 128])

        // Grey with alpha becomes RGBA.
        let greyAlpha = try Image(
            pngBytes: HandmadePNG.file(
                width: 1,
                height: 1,
                bitDepth: 8,
                colorType: 4,
                rows: [[77, 200]]
            )
        )
        #expect(greyAlpha.format == .rgba)
        #expect(greyAlpha.pixels == [77, 77, 77, 200])
    }

    @Test("a file written by the independent handmade writer decodes to its pixels")
    func handmadeRGB() throws {
        let image = try makeRandomImage(width: 5, height: 4, format: .rgb, seed: 17)
        let rows = (0..<4).map { Array(image.pixels[$0 * 15..<($0 + 1) * 15]) }
        let bytes = HandmadePNG.file(width: 5, height: 4, bitDepth: 8, colorType: 2, rows: rows)
        #expect(try Image(pngBytes: bytes) == image)
    }

    @Test("an Adam7-interlaced file decodes to its pixels", arguments: PixelFormat.allCases)
    func interlaced(format: PixelFormat) throws {
        let image = try makeRandomImage(width: 11, height: 9, format: format, seed: 23)
        #expect(try Image(pngBytes: HandmadePNG.interlacedFile(image)) == image)
    }

    @Test("encoding and decoding from many tasks at once give the same results")
    func concurrent() async throws {
        let images = try (0..<8).map {
            try makeRandomImage(width: 64, height: 64, format: .rgba, seed: UInt64($0))
        }
        let matches = try await withThrowingTaskGroup(of: Bool.self) { group in
            for image in images {
                group.addTask {
                    var same = true
                    for _ in 0..<10 {
                        same = try same && Image(pngBytes: image.pngBytes()) == image
                    }
                    return same
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(matches == images.count)
    }

    @Test("libpng's version is reported")
    func version() {
        #expect(Image.libpngVersion.hasPrefix("1."))
    }
}
