import Foundation
import Testing
import Thumbnails

@Suite("the contact sheet's captions draw descenders below the baseline")
struct ContactSheetFontTests {
    /// The rows of caption colour in the descender rows (the two below the baseline) of a
    /// one-tile sheet captioned `name`.
    static func descenderInk(caption name: String) throws -> Int {
        let lab = try LabFixture()
        try lab.succeed([
            "run", "--model", "gray-scott", "--size", "8", "--steps", "1", "--save", name,
        ])
        try lab.succeed(["delete", "autosave"])
        try lab.succeed(["browse", "--sheet", lab.path("sheet.png")])
        let sheet = try Image(
            pngBytes: [UInt8](try Data(contentsOf: URL(fileURLWithPath: lab.path("sheet.png"))))
        )
        let layout = ContactSheet(columns: 1)
        #expect(sheet.width == layout.size(tileCount: 1, hasCaptions: true).width)
        // Captions start two pixels below the tile; the baseline is `ascent` rows further.
        let captionTop = layout.margin + layout.tileSide + 2
        var ink = 0
        for y in captionTop + BitmapFont.ascent..<captionTop + BitmapFont.glyphHeight {
            for x in 0..<sheet.width where sheet.pixel(x: x, y: y) == layout.captionColor {
                ink += 1
            }
        }
        return ink
    }

    @Test("'gjpqy,_' reaches below the baseline; 'abc' does not")
    func descenders() throws {
        #expect(try Self.descenderInk(caption: "gjpqy,_") > 10)
        #expect(try Self.descenderInk(caption: "abc") == 0)
    }
}
