import Testing

@testable import Thumbnails

@Suite("Built-in bitmap font")
struct BitmapFontTests {
    static let printable = (0x20...0x7E).compactMap(Unicode.Scalar.init)

    @Test(
        "every printable ASCII glyph is 9 rows (7 above the baseline) of 5 columns, and all but space have ink"
    )
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

    @Test(
        "g, j, p, q, y, comma, semicolon and underscore reach below the baseline, and nothing else does"
    )
    func descenders() {
        let descending: Set<Unicode.Scalar> = ["g", "j", "p", "q", "y", ",", ";", "_"]
        for scalar in Self.printable {
            let below = BitmapFont.rows(of: scalar).dropFirst(BitmapFont.ascent)
            #expect(below.count == BitmapFont.descent)
            #expect(below.contains { $0 != 0 } == descending.contains(scalar), "glyph \(scalar)")
        }
    }

    @Test("g does not look like 9: lower case, with its tail below the baseline")
    func gIsNotNine() {
        let g = BitmapFont.rows(of: "g")
        let nine = BitmapFont.rows(of: "9")
        // 9 starts at the cap height and ends on the baseline; g starts at the x-height.
        #expect(nine[0] != 0 && g[0] == 0 && g[1] == 0)
        #expect(nine[BitmapFont.ascent...].allSatisfy { $0 == 0 })
        #expect(g[BitmapFont.ascent...].contains { $0 != 0 })
        // Its bowl and tail differ from every digit's shape shifted down by two rows.
        for digit in "0123456789".unicodeScalars {
            let shifted = [0, 0] + BitmapFont.rows(of: digit).prefix(BitmapFont.ascent)
            #expect(Array(shifted) != g, "g looks like \(digit)")
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
