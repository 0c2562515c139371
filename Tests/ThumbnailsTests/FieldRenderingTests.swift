import Testing

@testable import Thumbnails

@Suite("Images from scalar fields")
struct FieldRenderingTests {
    @Test("two chemicals draw as RGB = (u, u, v), row-major")
    func twoChemical() throws {
        let u: [Float] = [1, 0, 0.5, 0.25, 1, 1]
        let v: [Float] = [0, 1, 0.5, 0.75, 0, 0.2]
        let image = try Image(rendering: .twoChemical, fields: [u, v], width: 3, height: 2)
        #expect(image.format == .rgb)
        #expect(image.width == 3 && image.height == 2)
        for cell in 0..<6 {
            let expectedU = UInt8(u[cell] * 255 + 0.5)
            let expectedV = UInt8(v[cell] * 255 + 0.5)
            #expect(image.pixel(x: cell % 3, y: cell / 3) == [expectedU, expectedU, expectedV])
        }
        // The original's look: a resting Gray-Scott field (u = 1, v = 0) is yellow.
        #expect(image.pixel(x: 0, y: 0) == [255, 255, 0])
    }

    @Test("three chemicals draw as RGB = (a, b, c)")
    func threeChemical() throws {
        let image = try Image(
            rendering: .threeChemical,
            fields: [[1, 0], [0, 1], [0.5, 0]],
            width: 2,
            height: 1
        )
        #expect(image.pixels == [255, 0, 128, 0, 255, 0])
    }

    @Test("values outside [0, 1] are clamped and NaN draws as 0")
    func clamping() throws {
        let field: [Float] = [-3, 2, .nan, .infinity, -.infinity, 0.5]
        let image = try Image(rendering: .gray(), fields: [field], width: 6, height: 1)
        #expect(image.format == .gray)
        #expect(image.pixels == [0, 255, 0, 255, 0, 128])
    }

    @Test("a colour map maps the range ends to its first and last entries", arguments: ColorMap.all)
    func colorMap(map: ColorMap) throws {
        let field: [Float] = [0.25, 0.75, 0.5, -1, 5]
        let image = try Image(
            rendering: .colorMap(map, range: 0.25...0.75),
            fields: [field],
            width: 5,
            height: 1
        )
        let first = map.rgbBytes(at: 0)
        let last = map.rgbBytes(at: 255)
        let middle = map.rgbBytes(at: 128)  // 127.5 (exact in binary) rounds up
        #expect(image.pixel(x: 0, y: 0) == [first.red, first.green, first.blue])
        #expect(image.pixel(x: 1, y: 0) == [last.red, last.green, last.blue])
        #expect(image.pixel(x: 2, y: 0) == [middle.red, middle.green, middle.blue])
        #expect(image.pixel(x: 3, y: 0) == [first.red, first.green, first.blue])
        #expect(image.pixel(x: 4, y: 0) == [last.red, last.green, last.blue])
    }

    @Test("buffers and arrays draw the same image")
    func buffers() throws {
        let field = makeSpotField(width: 32, height: 16)
        let fromArrays = try Image(
            rendering: .twoChemical,
            fields: [field.u, field.v],
            width: 32,
            height: 16
        )
        let fromBuffers = try field.u.withUnsafeBufferPointer { u in
            try field.v.withUnsafeBufferPointer { v in
                try Image(rendering: .twoChemical, fieldBuffers: [u, v], width: 32, height: 16)
            }
        }
        #expect(fromArrays == fromBuffers)
    }

    @Test("wrong field counts, lengths, sizes and ranges are invalid arguments")
    func badArguments() {
        let four: [Float] = [0, 0, 0, 0]
        let cases: [(FieldRendering, [[Float]], Int, Int, String)] = [
            (.twoChemical, [four], 2, 2, "draws 2 field(s), but 1 were given"),
            (.threeChemical, [four, four], 2, 2, "draws 3 field(s), but 2 were given"),
            (.twoChemical, [four, [0, 0, 0]], 2, 2, "field 1 has 3 values, but a 2x2 grid has 4"),
            (.gray(), [four], 0, 4, "at least 1x1"),
            (.colorMap(.viridis, range: 1...1), [four], 2, 2, "wider than a point"),
            (.gray(range: 0...Float.infinity), [four], 2, 2, "must be finite"),
        ]
        for (rendering, fields, width, height, text) in cases {
            do {
                _ = try Image(rendering: rendering, fields: fields, width: width, height: height)
                Issue.record("\(rendering) with \(fields.count) fields drew an image")
            } catch {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains(text), "\(error.message)")
            }
        }
    }

    @Test("images from pixels check their byte count")
    func pixelCount() {
        #expect(throws: ThumbnailError.self) {
            try Image(width: 2, height: 2, format: .rgb, pixels: [0, 0, 0])
        }
        #expect(throws: ThumbnailError.self) {
            try Image(width: 2, height: 2, format: .rgb, filledWith: [0])
        }
        #expect(throws: ThumbnailError.self) {
            try Image(width: Int.max, height: 2, format: .gray, filledWith: [0])
        }
    }
}
