import Testing

@testable import Thumbnails

@Suite("Built-in bitmap font")
struct BitmapFontTests {
    static let printable = (0x20...0x7E).compactMap(Unicode.Scalar.init)

    @Test("every printable ASCII glyph is 7 rows of 5 columns, and all but space have ink")
    func shapes() {
        for scalar in Self.printable {
            let rows = BitmapFont.rows(of: scalar)
            #expect(rows.count == BitmapFont.glyphHeight)
            #expect(rows.allSatisfy { $0 < 1 << BitmapFont.glyphWidth }, "glyph \(scalar)")
            #expect(rows.contains { $0 != 0 } == (scalar != " "), "glyph \(scalar)")
        }
    }

    @Test("no two printable characters share a glyph")
    func distinct() {
        var seen: [[UInt8]: Unicode.Scalar] = [:]
        for scalar in Self.printable {
            let rows = BitmapFont.rows(of: scalar)
            #expect(seen[rows] == nil, "\(scalar) looks like \(seen[rows].map(String.init) ?? "")")
            seen[rows] = scalar
        }
    }

    @Test("characters outside ASCII draw as a question mark")
    func fallback() {
        #expect(BitmapFont.rows(of: "é") == BitmapFont.rows(of: "?"))
        #expect(BitmapFont.rows(of: "\u{7}") == BitmapFont.rows(of: "?"))
    }

    @Test("drawing paints exactly the glyph's pixels, clipped to the image")
    func drawing() throws {
        var image = try Image(width: 13, height: 9, format: .rgb, filledWith: [0, 0, 0])
        BitmapFont.draw("A1", on: &image, x: 1, y: 1, color: [255, 0, 0])
        for (index, scalar) in ["A", "1"].enumerated() {
            let rows = BitmapFont.rows(of: Unicode.Scalar(scalar)!)
            for row in 0..<7 {
                for column in 0..<5 {
                    let isSet = rows[row] & (0b10000 >> column) != 0
                    let pixel = image.pixel(x: 1 + index * BitmapFont.advance + column, y: 1 + row)
                    #expect(pixel == (isSet ? [255, 0, 0] : [0, 0, 0]))
                }
            }
        }
        #expect(BitmapFont.width(of: "A1") == 11)
        // Drawing off the edges does not trap.
        BitmapFont.draw("WWWW", on: &image, x: -3, y: -4, color: [1, 2, 3])
        BitmapFont.draw("WWWW", on: &image, x: 10, y: 6, color: [1, 2, 3])
    }
}
