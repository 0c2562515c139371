import Foundation
import Thumbnails

/// The collection view of the original editor, as files: a self-contained HTML page with every
/// configuration's thumbnail inline, and a contact-sheet PNG of the thumbnails.
enum Gallery {
    /// The page: one card per configuration with its thumbnail (as a `data:` URL), name, model,
    /// parameters, steps and date.
    static func html(_ configurations: [Configuration], store: String, author: String?) -> String {
        var page = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <title>rdlab gallery: \(escaped(store))</title>
            <style>
            body { font-family: sans-serif; background: #202020; color: #e0e0e0; margin: 2em; }
            .grid { display: flex; flex-wrap: wrap; gap: 1.5em; }
            .card { width: 180px; }
            .card img { width: 160px; height: 160px; object-fit: contain; background: #000;
              image-rendering: pixelated; display: block; }
            .name { font-weight: bold; margin-top: 0.4em; word-wrap: break-word; }
            .meta { font-size: 0.8em; color: #b0b0b0; word-wrap: break-word; }
            </style>
            </head>
            <body>
            <h1>rdlab gallery</h1>
            <p>\(configurations.count) configuration\(configurations.count == 1 ? "" : "s") in \
            <code>\(escaped(store))</code>\(author.map { " by " + escaped($0) } ?? "").</p>
            <div class="grid">

            """
        for configuration in configurations {
            let image =
                configuration.thumbnail.map {
                    "<img alt=\"\(escaped(configuration.name))\" src=\"data:image/png;base64,"
                        + $0.base64EncodedString() + "\">"
                } ?? "<div>(no thumbnail)</div>"
            let model = configuration.modelValue
            let steps = configuration.latestSnapshot?.step ?? 0
            let preset = configuration.preset.map { " · " + escaped($0) } ?? ""
            page += """
                <div class="card" data-name="\(escaped(configuration.name))">
                \(image)
                <div class="name">\(escaped(configuration.name))\
                \(configuration.autoSaved ? " <em>(last run)</em>" : "")</div>
                <div class="meta">\(escaped(model?.displayName ?? configuration.model))\(preset)</div>
                <div class="meta">\(configuration.width) × \(configuration.height), \
                \(escaped(configuration.precision)), \(escaped(configuration.boundary)), \
                \(steps) steps</div>
                <div class="meta">\(escaped(LabFormat.parameters(configuration.parameters, model: model)))</div>
                <div class="meta">\(LabFormat.date(configuration.modified))</div>
                </div>

                """
        }
        page += "</div>\n</body>\n</html>\n"
        return page
    }

    /// The contact sheet: the thumbnails in rows of up to six, captioned with their names.
    ///
    /// - Throws: ``CommandError`` (data error) when a stored thumbnail cannot be decoded.
    static func sheet(_ configurations: [Configuration]) throws(CommandError) -> Data {
        var tiles: [ContactSheet.Tile] = []
        for configuration in configurations {
            guard let png = configuration.thumbnail else { continue }
            do {
                tiles.append(
                    ContactSheet.Tile(
                        image: try Image(pngBytes: [UInt8](png)),
                        caption: configuration.name
                    )
                )
            } catch {
                throw CommandError(
                    "the thumbnail of '\(configuration.name)' is damaged: \(error)",
                    exitCode: .dataError
                )
            }
        }
        do {
            // Roughly twice as wide as tall, at most six across: 8 tiles make two rows of 4.
            let columns = max(1, min(6, Int((Double(tiles.count) * 2).squareRoot().rounded(.up))))
            let sheet = try ContactSheet(columns: columns, tileSide: Image.thumbnailSide, margin: 8)
                .render(tiles)
            return Data(try sheet.pngBytes())
        } catch {
            throw CommandError("cannot draw the contact sheet: \(error)", exitCode: .dataError)
        }
    }

    /// Writes the page and the sheet where asked, printing what was written.
    static func write(
        _ configurations: [Configuration],
        store: String,
        author: String?,
        htmlPath: String?,
        sheetPath: String?,
        output: CommandOutput
    ) throws(CommandError) {
        if let htmlPath {
            let page = html(configurations, store: store, author: author)
            try StatePicture.write(Data(page.utf8), to: htmlPath)
            output.print("wrote \(htmlPath)")
        }
        if let sheetPath {
            try StatePicture.write(try sheet(configurations), to: sheetPath)
            output.print("wrote \(sheetPath)")
        }
    }

    /// `text` with HTML's special characters escaped.
    static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }
}
