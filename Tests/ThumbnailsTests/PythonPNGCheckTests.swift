import Foundation
import Testing

@testable import Thumbnails

/// Checks our PNGs with a second, independent reader.
///
/// A Python script using only `zlib` and
/// `struct` that walks the chunks, verifies every CRC, inflates the IDAT stream, undoes the row
/// filters and writes the raw pixels back for comparison. Skipped when python3 is not installed.
@Suite("PNG validity checked by an independent Python reader")
struct PythonPNGCheckTests {
    static let python: URL? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent(
                "python3"
            )
            if FileManager.default.isExecutableFile(atPath: candidate.path) {
                return candidate
            }
        }
        return nil
    }()

    static let script = """
        import struct, sys, zlib
        data = open(sys.argv[1], 'rb').read()
        assert data[:8] == b'\\x89PNG\\r\\n\\x1a\\n', 'bad signature'
        pos, chunks, idat = 8, [], b''
        while pos < len(data):
            length, kind = struct.unpack('>I4s', data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + length]
            crc, = struct.unpack('>I', data[pos + 8 + length:pos + 12 + length])
            assert len(body) == length, 'chunk runs past the end'
            assert zlib.crc32(kind + body) & 0xffffffff == crc, 'bad CRC in ' + repr(kind)
            chunks.append(kind)
            if kind == b'IHDR':
                width, height, depth, ctype, comp, filt, inter = struct.unpack('>IIBBBBB', body)
            if kind == b'IDAT':
                idat += body
            pos += 12 + length
        assert pos == len(data), 'trailing bytes'
        assert chunks[0] == b'IHDR' and chunks[-1] == b'IEND', 'bad chunk order %r' % chunks
        assert depth == 8 and comp == 0 and filt == 0 and inter == 0, 'unexpected header'
        channels = {0: 1, 2: 3, 6: 4}[ctype]
        raw = zlib.decompress(idat)
        stride = width * channels
        assert len(raw) == height * (stride + 1), 'IDAT inflates to %d bytes' % len(raw)
        out, prev = bytearray(), bytearray(stride)
        for y in range(height):
            ftype = raw[y * (stride + 1)]
            row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
            assert ftype <= 4, 'bad filter type %d' % ftype
            for i in range(stride):
                a = row[i - channels] if i >= channels else 0
                b = prev[i]
                c = prev[i - channels] if i >= channels else 0
                if ftype == 1: row[i] = (row[i] + a) & 255
                elif ftype == 2: row[i] = (row[i] + b) & 255
                elif ftype == 3: row[i] = (row[i] + (a + b) // 2) & 255
                elif ftype == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                    row[i] = (row[i] + pred) & 255
            out += row
            prev = row
        open(sys.argv[2], 'wb').write(bytes(out))
        print('ok', width, height, channels)
        """

    /// Runs the script on `png`; returns its exit status, output and the pixels it decoded.
    static func check(_ png: [UInt8]) throws -> (status: Int32, output: String, pixels: [UInt8]) {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("thumbnails-pycheck-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("image.png")
        let output = directory.appendingPathComponent("pixels.raw")
        try Data(png).write(to: input)
        let process = Process()
        process.executableURL = python
        process.arguments = ["-c", script, input.path, output.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let pixels = (try? Data(contentsOf: output)).map { [UInt8]($0) } ?? []
        return (process.terminationStatus, text, pixels)
    }

    @Test(
        "the chunks, CRCs and zlib stream of our PNGs are valid and hold the exact pixels",
        .enabled(if: python != nil, "python3 is not installed"),
        arguments: PixelFormat.allCases
    )
    func validPNG(format: PixelFormat) throws {
        let field = makeSpotField(width: 64, height: 48)
        var image = try makeRandomImage(width: 64, height: 48, format: format, seed: 99)
        // Half noise, half smooth pattern, so several filter types are used.
        for cell in 0..<(64 * 24) {
            for channel in 0..<format.channelCount {
                image.pixels[cell * format.channelCount + channel] = UInt8(field.u[cell] * 255)
            }
        }
        for level in [0, 6, 9] {
            let result = try Self.check(image.pngBytes(compressionLevel: level))
            #expect(result.status == 0, "python check failed: \(result.output)")
            #expect(result.output.hasPrefix("ok 64 48 \(format.channelCount)"))
            #expect(result.pixels == image.pixels)
        }
    }

    @Test(
        "the Python reader is not a rubber stamp: it rejects a corrupted CRC",
        .enabled(if: python != nil, "python3 is not installed")
    )
    func rejectsBadCRC() throws {
        var bytes = try Image(width: 4, height: 4, format: .rgb, filledWith: [1, 2, 3]).pngBytes()
        bytes[8 + 8 + 13] ^= 0xFF  // the first byte of IHDR's CRC
        let result = try Self.check(bytes)
        #expect(result.status != 0)
        #expect(result.output.contains("bad CRC"))
    }
}
