import Foundation
import ObjectLogStore
import TestSupport
import Testing

@testable import ObjectLog

@Suite("Partial values: the merge of a patch into its base")
struct PartialValueTests {
    /// Merges through the reader path alone, or through the quick path with its fallback.
    static func merged(
        _ base: [UInt8],
        _ partial: [UInt8],
        shapes: [ValueShape],
        quick: Bool
    ) -> Result<[UInt8], PayloadError> {
        var output = [UInt8](repeating: 0, count: base.count + partial.count)
        var failure: PayloadError?
        let written = output.withUnsafeMutableBytes { output in
            base.withUnsafeBytes { base in
                partial.withUnsafeBytes { partial -> Int in
                    do {
                        return quick
                            ? try PartialValue.merge(
                                base,
                                partial,
                                shapes: shapes,
                                skips: shapes.map(CompiledSkip.init),
                                into: output
                            )
                            : try PartialValue.merge(base, partial, shapes: shapes, into: output)
                    } catch let error as PayloadError {
                        failure = error
                        return 0
                    } catch {
                        failure = .malformed(offset: -1, "\(error)")
                        return 0
                    }
                }
            }
        }
        if let failure { return .failure(failure) }
        return .success(Array(output[..<written]))
    }

    @Test(
        "the merge straight from the bytes gives the reader path's value or error, on random values"
    )
    func quickMergeAgrees() throws {
        let kinds = try RandomEncoding.plainShapes()
        var random = SeededGenerator(seed: 22)
        var compared = 0
        var failures = 0
        for _ in 0..<4_000 {
            let shapes = (0..<Int.random(in: 1...6, using: &random)).map { _ in
                kinds.randomElement(using: &random)!
            }
            var base: [UInt8] = [UInt8(shapes.count)]
            for shape in shapes { base += RandomEncoding.value(of: shape, using: &random) }
            // Changes of a random subset, in order; now and then out of order, beyond the
            // properties, or with a byte too many.
            var indices = shapes.indices.filter { _ in Bool.random(using: &random) }
            if indices.isEmpty { indices = [0] }
            var partial: [UInt8] = [UInt8(indices.count)]
            for index in indices {
                partial.append(UInt8(index))
                partial += RandomEncoding.value(of: shapes[index], using: &random)
            }
            switch Int.random(in: 0..<12, using: &random) {
            case 0 where indices.count > 1: partial.swapAt(1, 1 + 1)
            case 1: partial[1] = UInt8(shapes.count)
            case 2: partial.append(0)
            case 3: base[0] = UInt8(shapes.count + 1)
            case 4: partial[0] = 0
            case 5: base.removeLast()
            default: break
            }
            let reference = Self.merged(base, partial, shapes: shapes, quick: false)
            let quick = Self.merged(base, partial, shapes: shapes, quick: true)
            #expect(quick == reference, "base \(base) partial \(partial)")
            compared += 1
            if case .failure = reference { failures += 1 }
        }
        // Both outcomes were exercised.
        #expect(failures > 200 && failures < compared - 1_000, "\(failures) of \(compared) failed")
    }

    @Test("a merge replaces the listed properties and keeps the others")
    func replaces() throws {
        let shapes = try RandomEncoding.plainShapes()
        // A Bool, an optional Bool and an Int8; the optional one set to nil.
        let three = [shapes[0], shapes[1], shapes[2]]
        let base: [UInt8] = [3, 0x01, 0x01, 0x00, 0x05]
        for quick in [false, true] {
            let merged = Self.merged(base, [1, 1, 0], shapes: three, quick: quick)
            #expect(merged == .success([3, 0x01, 0x00, 0x05]))
        }
    }
}
