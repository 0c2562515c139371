/// Many thumbnails laid out in a grid on one image, with a margin and an optional caption under
/// each, so a person can browse a store at a glance.
///
/// Tiles are placed left to right, top to bottom, each image centred in a `tileSide` square
/// (larger images are shrunk to fit by area averaging; smaller ones are not enlarged). When any
/// tile has a caption, every tile gets a caption strip below its square, drawn in the built-in
/// ``BitmapFont`` and shortened with `..` if it does not fit.
///
/// ```swift
/// let sheet = ContactSheet(columns: 4)
/// let tiles = records.map { ContactSheet.Tile(image: $0.thumbnail, caption: $0.name) }
/// let png = try sheet.render(tiles).pngBytes()
/// ```
public struct ContactSheet: Sendable {
    /// One image on the sheet with its optional caption.
    public struct Tile: Sendable {
        /// The image; grey, RGB or RGBA (RGBA is composited over the background).
        public var image: Image

        /// The caption drawn below the image, if any.
        public var caption: String?

        /// Makes a tile.
        public init(image: Image, caption: String? = nil) {
            self.image = image
            self.caption = caption
        }
    }

    /// The most tiles in a row, at least 1; fewer tiles make a narrower sheet.
    public var columns: Int

    /// The side of the square each image is centred in, at least 1.
    public var tileSide: Int

    /// The space around and between tiles in pixels, at least 0.
    public var margin: Int

    /// The background colour, red, green and blue.
    public var backgroundColor: [UInt8]

    /// The caption colour, red, green and blue.
    public var captionColor: [UInt8]

    /// The height of the caption strip under each tile when any tile has a caption: the glyph
    /// height (descenders included) plus two pixels above and below.
    public static let captionStripHeight = BitmapFont.glyphHeight + 4

    /// Makes a sheet layout.
    ///
    /// - Parameters:
    ///   - columns: The most tiles in a row; by default 6.
    ///   - tileSide: The side of each tile's square; by default 160.
    ///   - margin: The space around and between tiles; by default 8.
    ///   - backgroundColor: By default a dark grey.
    ///   - captionColor: By default a light grey.
    public init(
        columns: Int = 6,
        tileSide: Int = Image.thumbnailSide,
        margin: Int = 8,
        backgroundColor: [UInt8] = [32, 32, 32],
        captionColor: [UInt8] = [224, 224, 224]
    ) {
        self.columns = columns
        self.tileSide = tileSide
        self.margin = margin
        self.backgroundColor = backgroundColor
        self.captionColor = captionColor
    }

    /// The size of the sheet for `tileCount` tiles, with or without caption strips.
    public func size(tileCount: Int, hasCaptions: Bool) -> (width: Int, height: Int) {
        let columnCount = max(1, min(columns, tileCount))
        let rowCount = max(1, (tileCount + columnCount - 1) / columnCount)
        let cellHeight = tileSide + (hasCaptions ? Self.captionStripHeight : 0)
        return (
            margin + columnCount * (tileSide + margin),
            margin + rowCount * (cellHeight + margin)
        )
    }

    /// Draws the tiles on one RGB image.
    ///
    /// - Parameter tiles: The tiles in reading order; at least one.
    /// - Returns: An RGB image of ``size(tileCount:hasCaptions:)``.
    /// - Throws: ``ThumbnailError/Code/invalidArgument`` if there are no tiles or the layout is
    ///   invalid (columns or tile side below 1, negative margin, colours without three values).
    public func render(_ tiles: [Tile]) throws(ThumbnailError) -> Image {
        try validate(tileCount: tiles.count)
        let hasCaptions = tiles.contains { $0.caption != nil }
        let (width, height) = size(tileCount: tiles.count, hasCaptions: hasCaptions)
        var sheet = try Image(
            width: width,
            height: height,
            format: .rgb,
            filledWith: backgroundColor
        )
        let columnCount = min(columns, tiles.count)
        let cellHeight = tileSide + (hasCaptions ? Self.captionStripHeight : 0)
        for (index, tile) in tiles.enumerated() {
            let left = margin + (index % columnCount) * (tileSide + margin)
            let top = margin + (index / columnCount) * (cellHeight + margin)
            var image = tile.image
            if image.width > tileSide || image.height > tileSide {
                image = try image.resized(toFit: tileSide)
            }
            paste(
                image,
                on: &sheet,
                x: left + (tileSide - image.width) / 2,
                y: top + (tileSide - image.height) / 2
            )
            if let caption = tile.caption {
                let text = fitted(caption)
                let textLeft = left + (tileSide - BitmapFont.width(of: text)) / 2
                BitmapFont.draw(
                    text,
                    on: &sheet,
                    x: textLeft,
                    y: top + tileSide + 2,
                    color: captionColor
                )
            }
        }
        return sheet
    }

    // MARK: - Private

    private func validate(tileCount: Int) throws(ThumbnailError) {
        guard tileCount >= 1 else {
            throw ThumbnailError(.invalidArgument, "a contact sheet needs at least one tile")
        }
        guard columns >= 1, tileSide >= 1, margin >= 0 else {
            throw ThumbnailError(
                .invalidArgument,
                "contact sheet needs columns >= 1, tile side >= 1 and margin >= 0, not \(columns), \(tileSide), \(margin)"
            )
        }
        guard backgroundColor.count == 3, captionColor.count == 3 else {
            throw ThumbnailError(
                .invalidArgument,
                "contact sheet colours need three values: red, green, blue"
            )
        }
    }

    /// `caption` shortened with `..` to fit the tile width.
    private func fitted(_ caption: String) -> String {
        let limit = max(
            0,
            (tileSide + BitmapFont.advance - BitmapFont.glyphWidth) / BitmapFont.advance
        )
        let scalars = Array(caption.unicodeScalars)
        guard scalars.count > limit else { return caption }
        guard limit > 2 else { return String(String.UnicodeScalarView(scalars.prefix(limit))) }
        return String(String.UnicodeScalarView(scalars.prefix(limit - 2))) + ".."
    }

    /// Copies `image` onto the RGB `sheet` at (`x`, `y`), converting grey to RGB and blending
    /// RGBA over what is there.
    private func paste(_ image: Image, on sheet: inout Image, x: Int, y: Int) {
        let channels = image.format.channelCount
        for row in 0..<image.height {
            for column in 0..<image.width {
                let source = (row * image.width + column) * channels
                let target = ((y + row) * sheet.width + x + column) * 3
                for channel in 0..<3 {
                    let value = Int(image.pixels[source + (channels == 1 ? 0 : channel)])
                    if channels == 4 {
                        let alpha = Int(image.pixels[source + 3])
                        let below = Int(sheet.pixels[target + channel])
                        sheet.pixels[target + channel] = UInt8(
                            (value * alpha + below * (255 - alpha) + 127) / 255
                        )
                    } else {
                        sheet.pixels[target + channel] = UInt8(value)
                    }
                }
            }
        }
    }
}
