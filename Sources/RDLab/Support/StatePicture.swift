import Foundation
import ReactionDiffusion
import Thumbnails

/// Pictures of a state, drawn as the original drew its texture: RGB = (u, u, v) for the
/// two-chemical models and (a, b, c) for Belousov-Zhabotinsky.
enum StatePicture {
    /// The state at one pixel per cell.
    static func image(of field: Field, model: Model) throws(CommandError) -> Image {
        do {
            let planes = (0..<field.chemicalCount).map { Array(field.plane($0)) }
            let rendering: FieldRendering = model.chemicalCount == 3 ? .threeChemical : .twoChemical
            return try Image(
                rendering: rendering,
                fields: planes,
                width: field.width,
                height: field.height
            )
        } catch {
            throw CommandError("cannot draw the state: \(error)", exitCode: .dataError)
        }
    }

    /// A PNG of the state within the 160-pixel thumbnail square.
    static func thumbnailPNG(of field: Field, model: Model) throws(CommandError) -> Data {
        let picture = try image(of: field, model: model)
        do {
            return Data(try picture.resized(toFit: Image.thumbnailSide).pngBytes())
        } catch {
            throw CommandError("cannot draw the thumbnail: \(error)", exitCode: .dataError)
        }
    }

    /// Writes `bytes` to `path` atomically.
    ///
    /// - Throws: ``CommandError`` (cannot create) naming the file.
    static func write(_ bytes: Data, to path: String) throws(CommandError) {
        do {
            try bytes.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw CommandError(
                "cannot write '\(path)': \(error.localizedDescription)",
                exitCode: .cannotCreate
            )
        }
    }
}
