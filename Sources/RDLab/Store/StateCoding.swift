import CommandLineKit
import Foundation
import ReactionDiffusion

/// How a snapshot's field is kept in bytes.
///
/// - `unorm8`: one byte k per chemical per cell, for the value k/255, which is all the solver
///   keeps in this precision (it rounds every value to a multiple of 1/255 after each step).
/// - `float32`: the values' IEEE 754 bit patterns, little-endian, so they come back exactly.
///
/// Both lay the chemicals out one after another, each row by row, as ``Field/values`` does.
enum StateCoding {
    /// Encodes `field` for `precision`.
    static func encode(_ field: Field, precision: Precision) -> Data {
        switch precision {
        case .unorm8:
            var bytes = [UInt8](repeating: 0, count: field.values.count)
            for (index, value) in field.values.enumerated() {
                // Safe: the value is clamped to [0, 1] first, so the product fits a byte.
                let clamped = value.isNaN ? 0 : min(max(value, 0), 1)
                bytes[index] = UInt8((clamped * 255).rounded())
            }
            return Data(bytes)
        case .float32:
            var data = Data(count: field.values.count * 4)
            data.withUnsafeMutableBytes { raw in
                for (index, value) in field.values.enumerated() {
                    raw.storeBytes(
                        of: value.bitPattern.littleEndian,
                        toByteOffset: index * 4,
                        as: UInt32.self
                    )
                }
            }
            return data
        }
    }

    /// Decodes a field of the given shape.
    ///
    /// - Throws: ``CommandError`` (data error) when `data` has the wrong length.
    static func decode(
        _ data: Data,
        precision: Precision,
        chemicalCount: Int,
        width: Int,
        height: Int
    ) throws(CommandError) -> Field {
        let (count, overflow) = chemicalCount.multipliedReportingOverflow(by: width * height)
        let bytesPerValue = precision == .unorm8 ? 1 : 4
        guard chemicalCount > 0, width > 0, height > 0, !overflow,
            data.count == count * bytesPerValue
        else {
            throw CommandError(
                "a snapshot's state holds \(data.count) bytes, not the \(precision.rawValue) "
                    + "state of \(chemicalCount) chemicals on \(width) × \(height) cells",
                exitCode: .dataError
            )
        }
        var values = [Float](repeating: 0, count: count)
        data.withUnsafeBytes { raw in
            switch precision {
            case .unorm8:
                for index in 0..<count {
                    values[index] = Float(raw[index]) / 255
                }
            case .float32:
                for index in 0..<count {
                    let bits = raw.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self)
                    values[index] = Float(bitPattern: UInt32(littleEndian: bits))
                }
            }
        }
        let field = Field(
            chemicalCount: chemicalCount,
            width: width,
            height: height,
            values: values
        )
        // The solver's own representation of k/255, so written files match a run's exactly.
        return precision == .unorm8 ? field.quantizedToUnorm8() : field
    }
}
