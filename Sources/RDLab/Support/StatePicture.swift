import CommandLineKit
import Foundation
import ReactionDiffusion
import Thumbnails

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

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

    /// Writes `bytes` to `path` atomically: into a temporary file beside it, then renamed over
    /// it, so a failed write leaves any earlier file whole and no partial one.
    ///
    /// - Throws: ``CommandError`` (cannot create) naming the file and the system's reason in one
    ///   line (never Foundation's "NSCocoaErrorDomain error 512").
    static func write(_ bytes: Data, to path: String) throws(CommandError) {
        func failure(_ reason: String) -> CommandError {
            CommandError("cannot write '\(path)': \(reason)", exitCode: .cannotCreate)
        }
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue
        {
            throw failure("it is a directory")
        }
        let url = URL(fileURLWithPath: path)
        let temporary =
            url.deletingLastPathComponent().appendingPathComponent(
                ".\(url.lastPathComponent).\(getpid()).tmp"
            ).path
        // See: man 2 open. 0666 less the umask, as any new file.
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        guard descriptor >= 0 else {
            let code = errno
            throw failure(code == ENOENT ? "its directory does not exist" : Self.reason(code))
        }
        var code: Int32 = 0
        bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let written = posixWrite(descriptor, raw.baseAddress! + done, raw.count - done)
                if written < 0 {
                    if errno == EINTR { continue }
                    code = errno
                    return
                }
                done += written
            }
        }
        if close(descriptor) != 0 && code == 0 {
            code = errno
        }
        if code == 0 && rename(temporary, path) != 0 {
            code = errno
        }
        if code != 0 {
            unlink(temporary)
            throw failure(Self.reason(code))
        }
    }

    /// `strerror` of `code`, in lower case as the rest of the line.
    private static func reason(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }
}

/// `write(2)`, named apart from ``StatePicture/write(_:to:)``.
private func posixWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
