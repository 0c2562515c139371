import Foundation
import TestSupport

@testable import Thumbnails

/// A random image of the given size and format.
func makeRandomImage(width: Int, height: Int, format: PixelFormat, seed: UInt64) throws -> Image {
    var generator = SeededGenerator(seed: seed)
    let count = width * height * format.channelCount
    let pixels = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    return try Image(width: width, height: height, format: format, pixels: pixels)
}

/// A smooth synthetic pattern (spots on a background), like a reaction-diffusion field.
func makeSpotField(width: Int, height: Int, period: Double = 24) -> (u: [Float], v: [Float]) {
    var u = [Float](repeating: 0, count: width * height)
    var v = [Float](repeating: 0, count: width * height)
    for y in 0..<height {
        for x in 0..<width {
            let s = (sin(Double(x) * 2 * .pi / period) * sin(Double(y) * 2 * .pi / period) + 1) / 2
            let spot = Float(s * s * s)
            u[y * width + x] = 1 - 0.6 * spot
            v[y * width + x] = 0.35 * spot
        }
    }
    return (u, v)
}

/// A builder of PNG files from raw parts, independent of libpng.
///
/// Chunks with CRC-32, and zlib streams made of stored (uncompressed) deflate blocks with
/// Adler-32. Lets tests craft palette, 16-bit and other flavours, and headers that lie.
enum HandmadePNG {
    static let signature: [UInt8] = [137, 80, 78, 71, 13, 10, 26, 10]

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 {
                crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0)
            }
        }
        return ~crc
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [
            UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF),
            UInt8(value & 0xFF),
        ]
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return bigEndian(UInt32(data.count)) + typeBytes + data + bigEndian(crc32(typeBytes + data))
    }

    static func header(
        width: UInt32,
        height: UInt32,
        bitDepth: UInt8,
        colorType: UInt8,
        interlaced: Bool = false
    ) -> [UInt8] {
        chunk(
            "IHDR",
            bigEndian(width) + bigEndian(height) + [bitDepth, colorType, 0, 0, interlaced ? 1 : 0]
        )
    }

    /// An Adam7-interlaced 8-bit PNG of `image`: the seven passes' sub-images one after another,
    /// each row with filter type 0.
    static func interlacedFile(_ image: Image) -> [UInt8] {
        let passes = [
            (0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
            (0, 1, 1, 2),
        ]
        var raw: [UInt8] = []
        for (startX, startY, stepX, stepY) in passes
        where startX < image.width && startY < image.height {
            for y in stride(from: startY, to: image.height, by: stepY) {
                raw.append(0)
                for x in stride(from: startX, to: image.width, by: stepX) {
                    raw += image.pixel(x: x, y: y)
                }
            }
        }
        let colorTypes: [PixelFormat: UInt8] = [.gray: 0, .rgb: 2, .rgba: 6]
        let ihdr = header(
            width: UInt32(image.width),
            height: UInt32(image.height),
            bitDepth: 8,
            colorType: colorTypes[image.format] ?? 0,
            interlaced: true
        )
        return signature + ihdr + chunk("IDAT", storedZlib(raw)) + chunk("IEND", [])
    }

    /// A zlib stream holding `data` in stored blocks.
    static func storedZlib(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let length = min(65_535, data.count - offset)
            let isFinal = offset + length == data.count
            out.append(isFinal ? 1 : 0)
            out += [
                UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF),
                UInt8((~length >> 8) & 0xFF),
            ]
            out += data[offset..<offset + length]
            offset += length
        } while offset < data.count
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return out + bigEndian(b << 16 | a)
    }

    /// A whole PNG: rows are given already packed, each gets filter type 0.
    static func file(
        width: UInt32,
        height: UInt32,
        bitDepth: UInt8,
        colorType: UInt8,
        rows: [[UInt8]],
        extraChunks: [[UInt8]] = []
    ) -> [UInt8] {
        var raw: [UInt8] = []
        for row in rows {
            raw.append(0)  // filter type None
            raw += row
        }
        return signature
            + header(width: width, height: height, bitDepth: bitDepth, colorType: colorType)
            + extraChunks.flatMap { $0 } + chunk("IDAT", storedZlib(raw)) + chunk("IEND", [])
    }
}
