import Foundation
import ReactionDiffusion
import Testing

@Suite("NumPy .npy files")
struct NumPyFormatTests {
    @Test("a field round-trips, with a version 1.0 header padded to 64 bytes")
    func roundTrip() throws {
        let field = TestFields.noise(chemicals: 3, width: 7, height: 5, seed: 2, in: -2..<2)
        let bytes = NumPyFormat.encode(field)
        let headerLength = Int(bytes[8]) | Int(bytes[9]) << 8
        #expect(Array(bytes[0..<8]) == [0x93] + Array("NUMPY".utf8) + [1, 0])
        #expect((10 + headerLength) % 64 == 0)
        let header = String(decoding: bytes[10..<(10 + headerLength)], as: UTF8.self)
        #expect(header.hasPrefix("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5, 7), }"))
        #expect(header.hasSuffix("\n"))
        #expect(bytes.count == 10 + headerLength + 3 * 5 * 7 * 4)
        // Little-endian float32, C order: the first value comes first.
        let first =
            UInt32(bytes[10 + headerLength]) | UInt32(bytes[11 + headerLength]) << 8
            | UInt32(bytes[12 + headerLength]) << 16 | UInt32(bytes[13 + headerLength]) << 24
        #expect(first == field.values[0].bitPattern)
        #expect(try NumPyFormat.decode(bytes) == field)
    }

    @Test("files round-trip on disk")
    func files() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("rd-npy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("state.npy").path
        let field = InitialState.make(for: .grayScott, width: 12, height: 9, seed: 1)
        try NumPyFormat.write(field, to: path)
        #expect(try NumPyFormat.read(contentsOf: path) == field)
        #expect(throws: NumPyError.self) { try NumPyFormat.read(contentsOf: path + ".missing") }
    }

    /// A hand-made `.npy` file with the given header and data bytes.
    static func file(header: String, data: [UInt8], version: UInt8 = 1) -> [UInt8] {
        var text = header
        while (10 + text.utf8.count + 1) % 16 != 0 { text += " " }
        text += "\n"
        let length = text.utf8.count
        return [0x93] + Array("NUMPY".utf8) + [
            version, 0, UInt8(length & 0xFF), UInt8(length >> 8),
        ]
            + Array(text.utf8) + data
    }

    @Test("float64, big-endian and 2-D arrays are read too")
    func otherLayouts() throws {
        var data: [UInt8] = []
        for value in [0.25, -1.5, 3.0, 8.0, 0.0, 1.0] as [Double] {
            withUnsafeBytes(of: value.bitPattern.littleEndian) { data += $0 }
        }
        let double = try NumPyFormat.decode(
            Self.file(
                header: "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
                data: data
            )
        )
        #expect(double.chemicalCount == 1 && double.height == 2 && double.width == 3)
        #expect(double.values == [0.25, -1.5, 3, 8, 0, 1])
        var big: [UInt8] = []
        for value in [1.5, -2] as [Float] {
            withUnsafeBytes(of: value.bitPattern.bigEndian) { big += $0 }
        }
        let bigEndian = try NumPyFormat.decode(
            Self.file(
                header: "{'shape': (1, 1, 2), 'fortran_order': False, 'descr': '>f4'}",
                data: big
            )
        )
        #expect(bigEndian.values == [1.5, -2])
    }

    @Test(
        "damaged or unsupported files throw a message, never trap",
        arguments: [
            ([UInt8](), "not a NumPy"),
            (Array("hello world, not numpy".utf8), "not a NumPy"),
            (
                file(
                    header: "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1, 1), }",
                    data: [0, 0, 0, 0]
                ), "'<i4'"
            ),
            (
                file(
                    header: "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1, 1), }",
                    data: [0, 0, 0, 0]
                ), "Fortran"
            ),
            (
                file(
                    header: "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), }",
                    data: [0, 0, 0, 0]
                ), "truncated"
            ),
            (
                file(
                    header: "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 0, 2), }",
                    data: []
                ), "positive"
            ),
            (
                file(
                    header: "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1), }",
                    data: []
                ), "expected"
            ),
            (
                file(
                    header:
                        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 9), }",
                    data: []
                ), "too large"
            ),
            (
                file(
                    header: "{'descr': '<f4', 'fortran_order': False, 'shape': (a, b), }",
                    data: []
                ), "shape"
            ),
            (file(header: "{'descr': '<f4', 'fortran_order': False }", data: []), "shape"),
            (file(header: "{'descr': '<f4'", data: [], version: 9), "version 9"),
            (
                Array(
                    file(
                        header: "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1), }",
                        data: []
                    )[0..<20]
                ), "truncated"
            ),
        ]
    )
    func damaged(bytes: [UInt8], expected: String) {
        do {
            _ = try NumPyFormat.decode(bytes)
            Issue.record("decoding should have failed")
        } catch {
            #expect(error.message.contains(expected), "\(error.message)")
        }
    }
}
