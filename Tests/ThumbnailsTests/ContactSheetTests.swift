import Testing

@testable import Thumbnails

@Suite("Contact sheets")
struct ContactSheetTests {
    static func tiles(_ count: Int, captions: Bool) throws -> [ContactSheet.Tile] {
        try (0..<count).map { index in
            let value = UInt8(40 + index * 20)
            let image = try Image(
                width: 160,
                height: 160,
                format: .rgb,
                filledWith: [value, 255 - value, 90]
            )
            return ContactSheet.Tile(image: image, caption: captions ? "tile \(index)" : nil)
        }
    }

    @Test(
        "the sheet is margin + columns x (tile + margin) wide and tall likewise, and decodes as PNG"
    )
    func dimensions() throws {
        let sheet = ContactSheet(columns: 3, tileSide: 160, margin: 8)
        for (count, captions) in [(1, false), (3, false), (7, true), (9, true)] {
            let image = try sheet.render(Self.tiles(count, captions: captions))
            let columns = min(3, count)
            let rows = (count + 2) / 3
            let cell = 160 + (captions ? ContactSheet.captionStripHeight : 0)
            #expect(image.width == 8 + columns * 168)
            #expect(image.height == 8 + rows * (cell + 8))
            #expect(
                (image.width, image.height) == sheet.size(tileCount: count, hasCaptions: captions)
            )
            let decoded = try Image(pngBytes: image.pngBytes())
            #expect(decoded == image)
        }
    }

    @Test("each tile lands in its cell and the margins keep the background")
    func placement() throws {
        let sheet = ContactSheet(columns: 2, tileSide: 160, margin: 8)
        let tiles = try Self.tiles(4, captions: true)
        let image = try sheet.render(tiles)
        let cell = 160 + ContactSheet.captionStripHeight
        for (index, tile) in tiles.enumerated() {
            let left = 8 + (index % 2) * 168
            let top = 8 + (index / 2) * (cell + 8)
            #expect(image.pixel(x: left, y: top) == tile.image.pixel(x: 0, y: 0))
            #expect(image.pixel(x: left + 159, y: top + 159) == tile.image.pixel(x: 159, y: 159))
            #expect(image.pixel(x: left - 1, y: top) == sheet.backgroundColor)
            #expect(image.pixel(x: left, y: top - 1) == sheet.backgroundColor)
            // The caption strip has caption-coloured pixels and nothing else but background.
            var captionPixels = 0
            for y in top + 160..<top + cell {
                for x in left..<left + 160 {
                    let pixel = image.pixel(x: x, y: y)
                    #expect(pixel == sheet.captionColor || pixel == sheet.backgroundColor)
                    if pixel == sheet.captionColor { captionPixels += 1 }
                }
            }
            #expect(captionPixels > 10)
        }
    }

    @Test(
        "larger images are shrunk and centred, grey becomes RGB, and RGBA is blended over the background"
    )
    func mixedImages() throws {
        let large = try Image(width: 320, height: 160, format: .gray, filledWith: [200])
        let translucent = try Image(
            width: 40,
            height: 40,
            format: .rgba,
            filledWith: [255, 255, 255, 128]
        )
        let sheet = ContactSheet(columns: 2, tileSide: 100, margin: 4, backgroundColor: [0, 0, 0])
        let image = try sheet.render([
            ContactSheet.Tile(image: large), ContactSheet.Tile(image: translucent),
        ])
        #expect(image.height == 4 + 100 + 4)  // no captions, no strip
        // 320x160 fits 100 as 100x50, centred vertically: rows 25..<75 of the tile.
        #expect(image.pixel(x: 4, y: 4 + 24) == [0, 0, 0])
        #expect(image.pixel(x: 4, y: 4 + 25) == [200, 200, 200])
        #expect(image.pixel(x: 103, y: 4 + 74) == [200, 200, 200])
        #expect(image.pixel(x: 4, y: 4 + 75) == [0, 0, 0])
        // 40x40 is not enlarged: centred at offset 30; white at alpha 128 over black is 128.
        let left = 4 + 104
        #expect(image.pixel(x: left + 29, y: 4 + 30) == [0, 0, 0])
        #expect(image.pixel(x: left + 30, y: 4 + 30) == [128, 128, 128])
        #expect(image.pixel(x: left + 69, y: 4 + 69) == [128, 128, 128])
        #expect(image.pixel(x: left + 70, y: 4 + 69) == [0, 0, 0])
    }

    @Test("long captions are shortened to fit the tile")
    func longCaption() throws {
        let sheet = ContactSheet(columns: 1, tileSide: 60, margin: 2, backgroundColor: [0, 0, 0])
        let tile = try ContactSheet.Tile(
            image: Image(width: 60, height: 60, format: .gray, filledWith: [0]),
            caption: String(repeating: "W", count: 40)
        )
        let image = try sheet.render([tile])
        // Nothing is drawn in the side margins of the caption strip.
        for y in 62..<62 + ContactSheet.captionStripHeight {
            #expect(image.pixel(x: 0, y: y) == [0, 0, 0])
            #expect(image.pixel(x: 1, y: y) == [0, 0, 0])
            #expect(image.pixel(x: 62, y: y) == [0, 0, 0])
            #expect(image.pixel(x: 63, y: y) == [0, 0, 0])
        }
        #expect(image.pixels.contains(224))
    }

    @Test("no tiles or a bad layout are invalid arguments")
    func badLayouts() throws {
        let tile = try Self.tiles(1, captions: false)
        #expect(throws: ThumbnailError.self) { try ContactSheet().render([]) }
        #expect(throws: ThumbnailError.self) { try ContactSheet(columns: 0).render(tile) }
        #expect(throws: ThumbnailError.self) { try ContactSheet(tileSide: 0).render(tile) }
        #expect(throws: ThumbnailError.self) { try ContactSheet(margin: -1).render(tile) }
        #expect(throws: ThumbnailError.self) {
            try ContactSheet(backgroundColor: [1, 2]).render(tile)
        }
    }
}
