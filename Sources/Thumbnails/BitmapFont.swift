/// A small built-in bitmap font: 5-pixel-wide glyphs for printable ASCII, for captions.
///
/// Each glyph is 9 rows: 7 above the baseline (capitals and digits fill them, lower case is 5
/// high) and 2 below it, where the descenders of `g`, `j`, `p`, `q`, `y`, the tails of `,` and `;`
/// and the underscore go. Glyphs advance 6 pixels (one blank column between letters).
/// Characters outside printable ASCII draw as `?`.
///
/// ```swift
/// var image = try Image(width: 64, height: 9, format: .rgb, filledWith: [0, 0, 0])
/// BitmapFont.draw("f=0.037", on: &image, x: 1, y: 1, color: [255, 255, 255])
/// ```
public enum BitmapFont {
    /// The width of a glyph in pixels.
    public static let glyphWidth = 5

    /// The height of a glyph in pixels, descenders included: ``ascent`` plus ``descent``.
    public static let glyphHeight = 9

    /// The rows above the baseline: the height of capitals and digits.
    public static let ascent = 7

    /// The rows below the baseline, for descenders.
    public static let descent = 2

    /// The horizontal distance from one glyph to the next in pixels.
    public static let advance = 6

    /// The width in pixels of `text` drawn on one line (no trailing blank column).
    public static func width(of text: String) -> Int {
        let count = text.unicodeScalars.count
        return count == 0 ? 0 : count * advance - (advance - glyphWidth)
    }

    /// The ``glyphHeight`` rows of the glyph of `character`, top to bottom; bit 4 is the
    /// leftmost column, and the last ``descent`` rows are below the baseline.
    ///
    /// Characters outside printable ASCII (U+0020 to U+007E) get the glyph of `?`.
    public static func rows(of character: Unicode.Scalar) -> [UInt8] {
        var value = Int(character.value)
        if value < 0x20 || value > 0x7E {
            value = Int(("?" as Unicode.Scalar).value)
        }
        if let glyph = descenderGlyphs[Unicode.Scalar(UInt8(value))] {
            return glyph
        }
        return glyphs[value - 0x20] + [0, 0]
    }

    /// The glyphs that reach below the baseline, all nine rows.
    private static let descenderGlyphs: [Unicode.Scalar: [UInt8]] = [
        ",": [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b01100, 0b00100, 0b01000],
        ";": [0b00000, 0b00000, 0b01100, 0b01100, 0b00000, 0b01100, 0b01100, 0b00100, 0b01000],
        "_": [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b11111],
        "g": [0b00000, 0b00000, 0b01111, 0b10001, 0b10001, 0b10011, 0b01101, 0b00001, 0b01110],
        "j": [0b00010, 0b00000, 0b00110, 0b00010, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100],
        "p": [0b00000, 0b00000, 0b10110, 0b11001, 0b10001, 0b11001, 0b10110, 0b10000, 0b10000],
        "q": [0b00000, 0b00000, 0b01101, 0b10011, 0b10001, 0b10011, 0b01101, 0b00001, 0b00001],
        "y": [0b00000, 0b00000, 0b10001, 0b10001, 0b10001, 0b10011, 0b01101, 0b00001, 0b01110],
    ]

    /// Draws `text` on one line with its top-left corner at (`x`, `y`), clipped to the image.
    ///
    /// Only the glyphs' set pixels are painted; the rest of the image is untouched.
    ///
    /// - Parameters:
    ///   - text: The text; characters outside printable ASCII draw as `?`.
    ///   - image: The image to draw on.
    ///   - x: The left edge of the first glyph; may be negative.
    ///   - y: The top edge of the glyphs; may be negative.
    ///   - color: The colour, one value per channel of the image; missing channels are 255.
    public static func draw(_ text: String, on image: inout Image, x: Int, y: Int, color: [UInt8]) {
        let channels = image.format.channelCount
        let width = image.width
        let height = image.height
        var left = x
        for scalar in text.unicodeScalars {
            let rows = rows(of: scalar)
            for (rowIndex, bits) in rows.enumerated() {
                let pixelY = y + rowIndex
                guard pixelY >= 0 && pixelY < height else { continue }
                for column in 0..<glyphWidth where bits & (0b10000 >> column) != 0 {
                    let pixelX = left + column
                    guard pixelX >= 0 && pixelX < width else { continue }
                    let offset = (pixelY * width + pixelX) * channels
                    for channel in 0..<channels {
                        image.pixels[offset + channel] =
                            channel < color.count ? color[channel] : 255
                    }
                }
            }
            left += advance
        }
    }

    /// The glyphs of U+0020 to U+007E in order, the seven rows above the baseline each (those
    /// in ``descenderGlyphs`` are drawn from there instead).
    private static let glyphs: [[UInt8]] = [
        [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000],  // space
        [0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00000, 0b00100],  // !
        [0b01010, 0b01010, 0b01010, 0b00000, 0b00000, 0b00000, 0b00000],  // "
        [0b01010, 0b01010, 0b11111, 0b01010, 0b11111, 0b01010, 0b01010],  // #
        [0b00100, 0b01111, 0b10100, 0b01110, 0b00101, 0b11110, 0b00100],  // $
        [0b11000, 0b11001, 0b00010, 0b00100, 0b01000, 0b10011, 0b00011],  // %
        [0b01100, 0b10010, 0b10100, 0b01000, 0b10101, 0b10010, 0b01101],  // &
        [0b00100, 0b00100, 0b01000, 0b00000, 0b00000, 0b00000, 0b00000],  // '
        [0b00010, 0b00100, 0b01000, 0b01000, 0b01000, 0b00100, 0b00010],  // (
        [0b01000, 0b00100, 0b00010, 0b00010, 0b00010, 0b00100, 0b01000],  // )
        [0b00000, 0b00100, 0b10101, 0b01110, 0b10101, 0b00100, 0b00000],  // *
        [0b00000, 0b00100, 0b00100, 0b11111, 0b00100, 0b00100, 0b00000],  // +
        [0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b00100, 0b01000],  // ,
        [0b00000, 0b00000, 0b00000, 0b11111, 0b00000, 0b00000, 0b00000],  // -
        [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b01100, 0b01100],  // .
        [0b00000, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b00000],  // /
        [0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110],  // 0
        [0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],  // 1
        [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111],  // 2
        [0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110],  // 3
        [0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010],  // 4
        [0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110],  // 5
        [0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110],  // 6
        [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000],  // 7
        [0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110],  // 8
        [0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100],  // 9
        [0b00000, 0b01100, 0b01100, 0b00000, 0b01100, 0b01100, 0b00000],  // :
        [0b00000, 0b01100, 0b01100, 0b00000, 0b01100, 0b00100, 0b01000],  // ;
        [0b00010, 0b00100, 0b01000, 0b10000, 0b01000, 0b00100, 0b00010],  // <
        [0b00000, 0b00000, 0b11111, 0b00000, 0b11111, 0b00000, 0b00000],  // =
        [0b01000, 0b00100, 0b00010, 0b00001, 0b00010, 0b00100, 0b01000],  // >
        [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b00000, 0b00100],  // ?
        [0b01110, 0b10001, 0b00001, 0b01101, 0b10101, 0b10101, 0b01110],  // @
        [0b01110, 0b10001, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001],  // A
        [0b11110, 0b10001, 0b10001, 0b11110, 0b10001, 0b10001, 0b11110],  // B
        [0b01110, 0b10001, 0b10000, 0b10000, 0b10000, 0b10001, 0b01110],  // C
        [0b11100, 0b10010, 0b10001, 0b10001, 0b10001, 0b10010, 0b11100],  // D
        [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b11111],  // E
        [0b11111, 0b10000, 0b10000, 0b11110, 0b10000, 0b10000, 0b10000],  // F
        [0b01110, 0b10001, 0b10000, 0b10111, 0b10001, 0b10001, 0b01111],  // G
        [0b10001, 0b10001, 0b10001, 0b11111, 0b10001, 0b10001, 0b10001],  // H
        [0b01110, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],  // I
        [0b00111, 0b00010, 0b00010, 0b00010, 0b00010, 0b10010, 0b01100],  // J
        [0b10001, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010, 0b10001],  // K
        [0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b10000, 0b11111],  // L
        [0b10001, 0b11011, 0b10101, 0b10101, 0b10001, 0b10001, 0b10001],  // M
        [0b10001, 0b10001, 0b11001, 0b10101, 0b10011, 0b10001, 0b10001],  // N
        [0b01110, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110],  // O
        [0b11110, 0b10001, 0b10001, 0b11110, 0b10000, 0b10000, 0b10000],  // P
        [0b01110, 0b10001, 0b10001, 0b10001, 0b10101, 0b10010, 0b01101],  // Q
        [0b11110, 0b10001, 0b10001, 0b11110, 0b10100, 0b10010, 0b10001],  // R
        [0b01111, 0b10000, 0b10000, 0b01110, 0b00001, 0b00001, 0b11110],  // S
        [0b11111, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100],  // T
        [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01110],  // U
        [0b10001, 0b10001, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100],  // V
        [0b10001, 0b10001, 0b10001, 0b10101, 0b10101, 0b10101, 0b01010],  // W
        [0b10001, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001, 0b10001],  // X
        [0b10001, 0b10001, 0b10001, 0b01010, 0b00100, 0b00100, 0b00100],  // Y
        [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b10000, 0b11111],  // Z
        [0b01110, 0b01000, 0b01000, 0b01000, 0b01000, 0b01000, 0b01110],  // [
        [0b00000, 0b10000, 0b01000, 0b00100, 0b00010, 0b00001, 0b00000],  // backslash
        [0b01110, 0b00010, 0b00010, 0b00010, 0b00010, 0b00010, 0b01110],  // ]
        [0b00100, 0b01010, 0b10001, 0b00000, 0b00000, 0b00000, 0b00000],  // ^
        [0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b00000, 0b11111],  // _
        [0b01000, 0b00100, 0b00010, 0b00000, 0b00000, 0b00000, 0b00000],  // `
        [0b00000, 0b00000, 0b01110, 0b00001, 0b01111, 0b10001, 0b01111],  // a
        [0b10000, 0b10000, 0b10110, 0b11001, 0b10001, 0b10001, 0b11110],  // b
        [0b00000, 0b00000, 0b01110, 0b10000, 0b10000, 0b10001, 0b01110],  // c
        [0b00001, 0b00001, 0b01101, 0b10011, 0b10001, 0b10001, 0b01111],  // d
        [0b00000, 0b00000, 0b01110, 0b10001, 0b11111, 0b10000, 0b01110],  // e
        [0b00110, 0b01001, 0b01000, 0b11100, 0b01000, 0b01000, 0b01000],  // f
        [0b00000, 0b01111, 0b10001, 0b10001, 0b01111, 0b00001, 0b01110],  // g
        [0b10000, 0b10000, 0b10110, 0b11001, 0b10001, 0b10001, 0b10001],  // h
        [0b00100, 0b00000, 0b01100, 0b00100, 0b00100, 0b00100, 0b01110],  // i
        [0b00010, 0b00000, 0b00110, 0b00010, 0b00010, 0b10010, 0b01100],  // j
        [0b10000, 0b10000, 0b10010, 0b10100, 0b11000, 0b10100, 0b10010],  // k
        [0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],  // l
        [0b00000, 0b00000, 0b11010, 0b10101, 0b10101, 0b10001, 0b10001],  // m
        [0b00000, 0b00000, 0b10110, 0b11001, 0b10001, 0b10001, 0b10001],  // n
        [0b00000, 0b00000, 0b01110, 0b10001, 0b10001, 0b10001, 0b01110],  // o
        [0b00000, 0b00000, 0b11110, 0b10001, 0b11110, 0b10000, 0b10000],  // p
        [0b00000, 0b00000, 0b01101, 0b10011, 0b01111, 0b00001, 0b00001],  // q
        [0b00000, 0b00000, 0b10110, 0b11001, 0b10000, 0b10000, 0b10000],  // r
        [0b00000, 0b00000, 0b01110, 0b10000, 0b01110, 0b00001, 0b11110],  // s
        [0b01000, 0b01000, 0b11100, 0b01000, 0b01000, 0b01001, 0b00110],  // t
        [0b00000, 0b00000, 0b10001, 0b10001, 0b10001, 0b10011, 0b01101],  // u
        [0b00000, 0b00000, 0b10001, 0b10001, 0b10001, 0b01010, 0b00100],  // v
        [0b00000, 0b00000, 0b10001, 0b10001, 0b10101, 0b10101, 0b01010],  // w
        [0b00000, 0b00000, 0b10001, 0b01010, 0b00100, 0b01010, 0b10001],  // x
        [0b00000, 0b00000, 0b10001, 0b10001, 0b01111, 0b00001, 0b01110],  // y
        [0b00000, 0b00000, 0b11111, 0b00010, 0b00100, 0b01000, 0b11111],  // z
        [0b00010, 0b00100, 0b00100, 0b01000, 0b00100, 0b00100, 0b00010],  // {
        [0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100],  // |
        [0b01000, 0b00100, 0b00100, 0b00010, 0b00100, 0b00100, 0b01000],  // }
        [0b00000, 0b00000, 0b01000, 0b10101, 0b00010, 0b00000, 0b00000],  // ~
    ]
}
