import Foundation

/// Reads and writes fields as NumPy `.npy` arrays: float32 little-endian, C order, shape
/// `(chemicals, height, width)`.
///
/// Writing always produces format version 1.0 with `'<f4'` data and a header padded to a multiple
/// of 64 bytes, as NumPy itself writes. Reading accepts versions 1.0 to 3.0, little- or
/// big-endian `f4` and `f8` data (converted to `Float`), and shapes `(chemicals, height, width)`
/// or `(height, width)` (one chemical). Damaged or unsupported files throw; they never trap.
///
/// ```swift
/// let bytes = NumPyFormat.encode(field)
/// let copy = try NumPyFormat.decode(bytes)
/// ```
///
/// See: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
public enum NumPyFormat {
    private static let magic: [UInt8] = [0x93] + Array("NUMPY".utf8)

    /// Returns the `.npy` bytes of `field`.
    public static func encode(_ field: Field) -> [UInt8] {
        let shape = "(\(field.chemicalCount), \(field.height), \(field.width))"
        var header = "{'descr': '<f4', 'fortran_order': False, 'shape': \(shape), }"
        // Magic (6) + version (2) + length (2) + header + "\n" must be a multiple of 64.
        let unpadded = 10 + header.utf8.count + 1
        header += String(repeating: " ", count: (64 - unpadded % 64) % 64) + "\n"
        var bytes = magic + [1, 0]
        let length = UInt16(header.utf8.count)
        bytes += [UInt8(length & 0xFF), UInt8(length >> 8)]
        bytes += Array(header.utf8)
        bytes.reserveCapacity(bytes.count + field.values.count * 4)
        for value in field.values {
            let bits = value.bitPattern.littleEndian
            withUnsafeBytes(of: bits) { bytes += $0 }
        }
        return bytes
    }

    /// Returns the field held by `.npy` bytes.
    ///
    /// - Throws: ``NumPyError`` when the bytes are not a C-ordered float array of two or three
    ///   positive dimensions, or are truncated.
    public static func decode(_ bytes: [UInt8]) throws(NumPyError) -> Field {
        guard bytes.count >= 10, Array(bytes[0..<6]) == magic else {
            throw NumPyError("not a NumPy .npy file (the magic string \\x93NUMPY is missing)")
        }
        let major = bytes[6]
        let headerLength: Int
        let headerStart: Int
        switch major {
        case 1:
            headerLength = Int(bytes[8]) | Int(bytes[9]) << 8
            headerStart = 10
        case 2, 3:
            guard bytes.count >= 12 else { throw NumPyError("the .npy header is truncated") }
            headerLength = (0..<4).reduce(0) { $0 | Int(bytes[8 + $1]) << (8 * $1) }
            headerStart = 12
        default:
            throw NumPyError("unsupported .npy format version \(major).\(bytes[7])")
        }
        guard bytes.count >= headerStart + headerLength else {
            throw NumPyError("the .npy header is truncated")
        }
        let header = String(
            decoding: bytes[headerStart..<(headerStart + headerLength)],
            as: UTF8.self
        )
        let description = try HeaderDescription(parsing: header)

        let dimensions = description.shape
        let (chemicals, height, width): (Int, Int, Int)
        switch dimensions.count {
        case 3: (chemicals, height, width) = (dimensions[0], dimensions[1], dimensions[2])
        case 2: (chemicals, height, width) = (1, dimensions[0], dimensions[1])
        default:
            throw NumPyError(
                "the array has shape \(description.shapeText); expected (chemicals, height, width)"
            )
        }
        guard chemicals > 0, height > 0, width > 0 else {
            throw NumPyError(
                "the array has shape \(description.shapeText); every dimension must be positive"
            )
        }
        let (count, overflow) = chemicals.multipliedReportingOverflow(by: height * width)
        guard !overflow, height <= Int(Int32.max), width <= Int(Int32.max), count <= 1 << 34 else {
            throw NumPyError("the array has shape \(description.shapeText), which is too large")
        }
        let dataStart = headerStart + headerLength
        let expected = count * description.scalarSize
        guard bytes.count - dataStart >= expected else {
            throw NumPyError(
                "the data is truncated: shape \(description.shapeText) needs \(expected) bytes, "
                    + "the file has \(bytes.count - dataStart)"
            )
        }
        var values = [Float](repeating: 0, count: count)
        bytes.withUnsafeBytes { raw in
            let data = UnsafeRawBufferPointer(rebasing: raw[dataStart..<(dataStart + expected)])
            for i in 0..<count {
                if description.scalarSize == 4 {
                    let bits = data.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)
                    values[i] = Float(
                        bitPattern: description.isLittleEndian
                            ? UInt32(littleEndian: bits) : UInt32(bigEndian: bits)
                    )
                } else {
                    let bits = data.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)
                    values[i] = Float(
                        Double(
                            bitPattern: description.isLittleEndian
                                ? UInt64(littleEndian: bits) : UInt64(bigEndian: bits)
                        )
                    )
                }
            }
        }
        return Field(chemicalCount: chemicals, width: width, height: height, values: values)
    }

    /// Reads the field in the `.npy` file at `path`.
    ///
    /// - Throws: ``NumPyError`` naming the file when it cannot be read or decoded.
    public static func read(contentsOf path: String) throws(NumPyError) -> Field {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw NumPyError("cannot read '\(path)': \(Self.reason(error))")
        }
        do {
            return try decode([UInt8](data))
        } catch {
            throw NumPyError("'\(path)': \(error.message)")
        }
    }

    /// Writes `field` as a `.npy` file at `path`, replacing any file there.
    ///
    /// - Throws: ``NumPyError`` naming the file when it cannot be written.
    public static func write(_ field: Field, to path: String) throws(NumPyError) {
        do {
            try Data(encode(field)).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw NumPyError("cannot write '\(path)': \(Self.reason(error))")
        }
    }

    private static func reason(_ error: any Error) -> String {
        if let cocoa = error as? CocoaError, let posix = cocoa.underlying as? POSIXError {
            return String(cString: strerror(posix.code.rawValue))
        }
        if let cocoa = error as? CocoaError {
            switch cocoa.code {
            case .fileReadNoSuchFile, .fileNoSuchFile: return "no such file"
            case .fileReadNoPermission, .fileWriteNoPermission: return "permission denied"
            default: break
            }
        }
        return "\(error.localizedDescription)"
    }
}

/// The fields of a `.npy` header dictionary that matter here.
private struct HeaderDescription {
    var scalarSize: Int
    var isLittleEndian: Bool
    var shape: [Int]
    var shapeText: String

    init(parsing header: String) throws(NumPyError) {
        guard let descr = Self.value(of: "descr", in: header) else {
            throw NumPyError("the .npy header has no 'descr'")
        }
        let type = descr.trimmingCharacters(in: CharacterSet(charactersIn: "'\""))
        switch type {
        case "<f4": (scalarSize, isLittleEndian) = (4, true)
        case ">f4": (scalarSize, isLittleEndian) = (4, false)
        case "<f8": (scalarSize, isLittleEndian) = (8, true)
        case ">f8": (scalarSize, isLittleEndian) = (8, false)
        default:
            throw NumPyError("unsupported element type '\(type)'; expected float32 ('<f4')")
        }
        guard let order = Self.value(of: "fortran_order", in: header) else {
            throw NumPyError("the .npy header has no 'fortran_order'")
        }
        guard order == "False" else {
            throw NumPyError("Fortran-ordered arrays are not supported; save with C order")
        }
        guard let shapeValue = Self.value(of: "shape", in: header),
            shapeValue.hasPrefix("("), shapeValue.hasSuffix(")")
        else {
            throw NumPyError("the .npy header has no readable 'shape'")
        }
        shapeText = shapeValue
        var dimensions: [Int] = []
        for part in shapeValue.dropFirst().dropLast().split(separator: ",") {
            let text = part.trimmingCharacters(in: .whitespaces)
            guard let dimension = Int(text), dimension >= 0 else {
                throw NumPyError("the .npy header's shape \(shapeValue) is not a tuple of sizes")
            }
            dimensions.append(dimension)
        }
        shape = dimensions
    }

    /// The text of the value after `'key':`, up to the next top-level comma or closing brace.
    private static func value(of key: String, in header: String) -> String? {
        guard let keyRange = header.range(of: "'\(key)'") ?? header.range(of: "\"\(key)\"") else {
            return nil
        }
        var rest = header[keyRange.upperBound...].drop { $0 == " " }
        guard rest.first == ":" else { return nil }
        rest = rest.dropFirst().drop { $0 == " " }
        var depth = 0
        var end = rest.startIndex
        while end < rest.endIndex {
            let character = rest[end]
            if character == "(" { depth += 1 }
            if character == ")" { depth -= 1 }
            if depth == 0 && (character == "," || character == "}") { break }
            end = rest.index(after: end)
            if depth == 0 && character == ")" { break }
        }
        return String(rest[rest.startIndex..<end]).trimmingCharacters(in: .whitespaces)
    }
}
