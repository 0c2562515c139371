import CommandLineKit
import Foundation
import ReactionDiffusion
import Thumbnails

/// The collection view of the original editor, as files: a self-contained HTML page and a
/// contact-sheet PNG of the thumbnails.
///
/// The page needs nothing but itself (no network, no other file): every picture is inline as a
/// `data:` URL. It shows one card per configuration (thumbnail, name, model, tags, parameters,
/// steps, date), sorted and filtered by model, tag and date; a card opens the configuration's
/// page: the latest state at full resolution in the original's look and each chemical in a
/// perceptual colour map with its colour bar, the snapshots as a timeline that plays as an
/// animation, an SVG plot of each chemical's mean and range over the snapshots, the parameters,
/// notes and tags, and the `rdlab run` command that reproduces the state. The cards are plain
/// HTML, so the page reads without scripts too. See ``page(_:)`` for the layout.
enum Gallery {
    /// The largest side of a picture drawn at full resolution; larger grids are shrunk to it
    /// (by area averaging) so that the page stays a reasonable size.
    static let largestPictureSide = 1_024

    /// The colour maps the chemicals are drawn in, in turn.
    static let chemicalMaps: [ColorMap] = [.viridis, .magma]

    /// The page for `configurations` (in the order given, which the page's "as saved" sort
    /// keeps).
    ///
    /// - Throws: ``CommandError`` (data error) when a snapshot's state cannot be decoded or
    ///   drawn.
    static func html(
        _ configurations: [Configuration],
        store: String,
        author: String?
    ) throws(CommandError) -> String {
        var cards: [String] = []
        var details: [JSONValue] = []
        for (index, configuration) in configurations.enumerated() {
            cards.append(card(configuration, index: index))
            details.append(try detail(configuration))
        }
        let data = JSONValue.object([
            ("configurations", .array(details)),
            (
                "colorMaps",
                .object(
                    chemicalMaps.map { map in
                        (
                            map.name,
                            .array(
                                stride(from: 0, through: 255, by: 17).map { index in
                                    .string(hexColor(map.rgbBytes(at: index)))
                                }
                            )
                        )
                    }
                )
            ),
        ])
        return page(
            title: "rdlab gallery: \(store)",
            summary: "\(configurations.count) configuration\(configurations.count == 1 ? "" : "s") "
                + "in <code>\(escaped(store))</code>\(author.map { " by " + escaped($0) } ?? "")",
            cards: cards.joined(separator: "\n"),
            // "</" never appears inside the script element: JSON allows "\/" for "/".
            json: data.labText.replacingOccurrences(of: "</", with: "<\\/")
        )
    }

    // MARK: - Cards

    /// One card: the thumbnail and the facts the page sorts and filters by, as data attributes.
    static func card(_ configuration: Configuration, index: Int) -> String {
        let model = configuration.modelValue
        let name = escaped(configuration.name)
        let image =
            configuration.thumbnail.map {
                "<img alt=\"\(name)\" src=\"data:image/png;base64,\($0.base64EncodedString())\">"
            } ?? "<div class=\"nothumb\">(no thumbnail)</div>"
        let steps = configuration.latestSnapshot?.step ?? 0
        let preset = configuration.preset.map { " · " + escaped($0) } ?? ""
        let tags = configuration.tags.map { "<span class=\"tag\">\(escaped($0))</span>" }
        let attributes = [
            "data-name=\"\(name)\"",
            "data-index=\"\(index)\"",
            "data-model=\"\(escaped(configuration.model))\"",
            "data-tags=\"\(escaped(configuration.tags.joined(separator: " ")))\"",
            "data-modified=\"\(LabFormat.date(configuration.modified))\"",
            "data-created=\"\(LabFormat.date(configuration.created))\"",
            "data-steps=\"\(steps)\"",
        ]
        return """
            <div class="card" \(attributes.joined(separator: " ")) tabindex="0">
            <div class="thumb">\(image)</div>
            <div class="name">\(name)\(configuration.autoSaved ? " <em>(last run)</em>" : "")</div>
            <div class="meta"><span class="model">\(escaped(model?.displayName ?? configuration.model))</span>\(preset)</div>
            <div class="meta">\(configuration.width) × \(configuration.height), \
            \(escaped(configuration.precision)), \(escaped(configuration.boundary)), \
            \(steps) steps</div>
            <div class="meta params">\(escaped(LabFormat.parameters(configuration.parameters, model: model)))</div>
            <div class="meta">\(tags.joined(separator: " "))</div>
            <div class="meta date">\(LabFormat.date(configuration.modified))</div>
            </div>
            """
    }

    // MARK: - Details

    /// What a configuration's page shows, as JSON for the page's script.
    static func detail(_ configuration: Configuration) throws(CommandError) -> JSONValue {
        let model = configuration.modelValue
        let snapshots = configuration.snapshots.sorted {
            ($0.step, $0.savedAt) < ($1.step, $1.savedAt)
        }
        let chemicalNames =
            model?.chemicalNames
            ?? (0..<(snapshots.last?.chemicalCount ?? 0)).map { "chemical \($0 + 1)" }
        var frames: [JSONValue] = []
        for snapshot in snapshots {
            let field = try snapshot.field()
            frames.append(
                .object([
                    ("step", .number(snapshot.step)),
                    ("timestamp", .date(snapshot.savedAt)),
                    ("thumb", snapshot.thumbnail.map { .string(dataURL($0)) } ?? .null),
                    (
                        "stats",
                        .array((0..<field.chemicalCount).map { statistics(field.plane($0)) })
                    ),
                ])
            )
        }
        var pictures: [(String, JSONValue)] = []
        if let latest = snapshots.last, let model {
            let field = try latest.field()
            pictures = try self.pictures(of: field, model: model, names: chemicalNames)
        }
        let parameters = configuration.parameters
        return .object(
            [
                ("name", .string(configuration.name)),
                ("model", .string(configuration.model)),
                ("modelName", .string(model?.displayName ?? configuration.model)),
                ("preset", configuration.preset.map { .string($0) } ?? .null),
                ("width", .number(configuration.width)),
                ("height", .number(configuration.height)),
                ("precision", .string(configuration.precision)),
                ("boundary", .string(configuration.boundary)),
                ("autoSaved", .bool(configuration.autoSaved)),
                ("created", .date(configuration.created)),
                ("modified", .date(configuration.modified)),
                (
                    "parameters",
                    .array(
                        LabFormat.parameterNames(of: configuration).map {
                            .array([.string($0), .float(parameters.value(forName: $0)!)])
                        }
                    )
                ),
                ("notes", .string(configuration.notes)),
                ("tags", .array(configuration.tags.map { .string($0) })),
                ("command", command(for: configuration).map { .string($0) } ?? .null),
                ("chemicalNames", .array(chemicalNames.map { .string($0) })),
                ("snapshots", .array(frames)),
            ] + pictures
        )
    }

    /// The latest state at full resolution (within ``largestPictureSide``): in the original's
    /// look, and each chemical in a colour map over its range, with that range.
    static func pictures(
        of field: Field,
        model: Model,
        names: [String]
    ) throws(CommandError) -> [(String, JSONValue)] {
        let original = try StatePicture.image(of: field, model: model)
        var chemicals: [JSONValue] = []
        for chemical in 0..<field.chemicalCount {
            let plane = Array(field.plane(chemical))
            let finite = plane.filter(\.isFinite)
            var low = finite.min() ?? 0
            var high = finite.max() ?? 1
            if !(low < high) {
                // A uniform chemical: a range around its value, so the bar still reads.
                low -= 0.5
                high += 0.5
            }
            let map = chemicalMaps[chemical % chemicalMaps.count]
            let image: Image
            do {
                image = try Image(
                    rendering: .colorMap(map, range: low...high),
                    fields: [plane],
                    width: field.width,
                    height: field.height
                )
            } catch {
                throw CommandError("cannot draw \(names[chemical]): \(error)", exitCode: .dataError)
            }
            chemicals.append(
                .object([
                    ("name", .string(names[chemical])),
                    ("map", .string(map.name)),
                    ("low", .float(low)),
                    ("high", .float(high)),
                    ("image", .string(try pngDataURL(image))),
                ])
            )
        }
        let shrunk = max(field.width, field.height) > largestPictureSide
        return [
            ("picture", .string(try pngDataURL(original))),
            ("pictureShrunk", .bool(shrunk)),
            ("chemicals", .array(chemicals)),
        ]
    }

    /// A chemical's minimum, mean and maximum over its finite values (`null`s when none are).
    static func statistics(_ values: ArraySlice<Float>) -> JSONValue {
        var low = Float.infinity
        var high = -Float.infinity
        var sum = 0.0
        var count = 0
        for value in values where value.isFinite {
            low = min(low, value)
            high = max(high, value)
            sum += Double(value)
            count += 1
        }
        guard count > 0 else { return .array([.null, .null, .null]) }
        return .array([.float(low), .float(Float(sum / Double(count))), .float(high)])
    }

    /// The `rdlab run` command that computes the configuration's latest state from the seed.
    ///
    /// A run is deterministic and resuming is bit-identical, so the latest snapshot's step
    /// count with the current parameters gives that state again (unless the parameters were
    /// edited between snapshots, or the run started from an `--init` file). A `unorm8` state
    /// computed by a rule other than ``ReactionDiffusion/Unorm8Rule/current`` names its rule,
    /// since a run without it computes a different state. `nil` for a model or rule this
    /// version does not know.
    static func command(for configuration: Configuration) -> String? {
        guard let model = configuration.modelValue else { return nil }
        let latest = configuration.latestSnapshot
        var rule = Unorm8Rule.current
        if configuration.precisionValue == .unorm8, let latest {
            guard let stored = Unorm8Rule(rawValue: latest.unorm8Rule) else { return nil }
            rule = stored
        }
        var words = ["rdlab", "run", "--model", model.name]
        let preset = configuration.preset.flatMap { Preset.named($0, for: model) }
        if let preset {
            words += ["--preset", shellQuoted(preset.name)]
        }
        let base = preset?.parameters ?? model.defaultParameters
        let parameters = configuration.parameters
        for name in model.parameterNames {
            let value = parameters.value(forName: name)!
            if value != base.value(forName: name)! {
                words += ["--set", "\(name)=\(value)"]
            }
        }
        if configuration.width == configuration.height {
            words += ["--size", String(configuration.width)]
        } else {
            words += [
                "--width", String(configuration.width), "--height", String(configuration.height),
            ]
        }
        words += ["--steps", String(latest?.step ?? 0)]
        if configuration.precisionValue != .unorm8 {
            words += ["--precision", configuration.precisionValue.rawValue]
        }
        if rule != .current {
            words += ["--unorm8-rule", String(rule.rawValue)]
        }
        if configuration.boundaryValue != .zero {
            words += ["--boundary", configuration.boundaryValue.rawValue]
        }
        if !parameters.stabilityProblems(for: model).isEmpty {
            words.append("--force")
        }
        if !configuration.autoSaved {
            words += ["--save", shellQuoted(configuration.name)]
        }
        return words.joined(separator: " ")
    }

    /// `text` quoted for a POSIX shell when it needs quoting.
    static func shellQuoted(_ text: String) -> String {
        let plain = text.unicodeScalars.allSatisfy {
            CharacterSet.alphanumerics.contains($0) && $0.isASCII
                || "-_.,:+=/@%".unicodeScalars.contains($0)
        }
        if plain && !text.isEmpty && !text.hasPrefix("-") { return text }
        return "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    // MARK: - Contact sheet

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
            let page = try html(configurations, store: store, author: author)
            try StatePicture.write(Data(page.utf8), to: htmlPath)
            output.print("wrote \(htmlPath)")
        }
        if let sheetPath {
            try StatePicture.write(try sheet(configurations), to: sheetPath)
            output.print("wrote \(sheetPath)")
        }
    }

    // MARK: - Encoding

    /// `image` as a PNG `data:` URL, shrunk to ``largestPictureSide`` if larger.
    static func pngDataURL(_ image: Image) throws(CommandError) -> String {
        do {
            var picture = image
            if max(image.width, image.height) > largestPictureSide {
                picture = try image.resized(toFit: largestPictureSide)
            }
            return dataURL(Data(try picture.pngBytes()))
        } catch {
            throw CommandError(
                "cannot draw a picture for the gallery: \(error)",
                exitCode: .dataError
            )
        }
    }

    /// PNG bytes as a `data:` URL.
    static func dataURL(_ png: Data) -> String {
        "data:image/png;base64," + png.base64EncodedString()
    }

    /// `#rrggbb`.
    static func hexColor(_ color: (red: UInt8, green: UInt8, blue: UInt8)) -> String {
        String(format: "#%02x%02x%02x", color.red, color.green, color.blue)
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
